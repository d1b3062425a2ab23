"""Model, Deployment, Plan and Comparison: Python owners of the C handles.

Ownership: each object owns one C handle and frees it exactly once, with the
matching ``kvshard_*_free``: when ``close()`` is called, when a ``with`` block
ends, or when the object is garbage collected (``weakref.finalize``),
whichever comes first. A handle is wrapped the moment the C call returns it,
so no Python exception can leak it. Methods of a closed object raise
``ValueError``. Everything the objects return (lists, dataclasses, strings)
is a Python copy that outlives them.

Threads: every call into a handle passes the handle's gate (``_Gate``).
Queries share it, so any number of threads may query one object at once
(ctypes releases the GIL during each call); a Deployment's ``set`` and
``apply_args`` wait for the queries inside and run alone. ``close()`` may
come from any thread at any time: calls that start afterwards raise
ValueError, and the handle is freed once the calls already inside the
library have returned, never under one. The model of a deployment passes
its deployment's gate.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import math
import os
import threading
import weakref
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_void_p
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._enums import (
    ALL_RANKS,
    Attention,
    Dtype,
    Engine,
    LayerKind,
    Ownership,
    StateKind,
    Status,
    WarningCode,
)
from ._errors import KvshardError, make_error
from ._optiontable import override_text, spec_for_key
from ._options import (
    DEFAULT_ORIGIN,
    OptionValue,
    Options,
    check_uint,
    encode,
    parse_bytes,
    raise_error,
)

__all__ = [
    "Model",
    "Deployment",
    "Plan",
    "Comparison",
    "ComparisonRow",
    "LayerStorage",
    "RankMemory",
    "Capacity",
    "Uniform",
    "Blocks",
    "load",
    "loads",
    "load_model",
    "create_model",
    "plan",
    "compare",
]

PathLike = Union[str, "os.PathLike[str]"]


# ---------------------------------------------------------------------------
# Handles
# ---------------------------------------------------------------------------


class _Gate:
    """Who is inside one C handle. Queries share it; a change (Deployment's
    set and apply_args, giving a model to a deployment) has it alone; close
    shuts it: calls that start afterwards raise ValueError, and close waits
    for the ones already inside, so the C object is freed only when no call
    is in it. A change waiting for its turn holds off new queries, so it
    is not starved; nothing in the binding enters a gate it already holds.

    A query that finds the gate open takes one lock twice and nothing else;
    the condition to sleep on is made when a thread first has to wait.
    """

    __slots__ = ("_lock", "_cond", "_readers", "_writing", "_waiting", "_sleepers", "closed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond: Optional[threading.Condition] = None
        self._readers = 0
        self._writing = False
        self._waiting = 0  # changes waiting for their turn
        self._sleepers = 0  # threads asleep on _cond
        self.closed = False

    def _sleep(self) -> None:
        # With _lock held.
        if self._cond is None:
            self._cond = threading.Condition(self._lock)
        self._sleepers += 1
        try:
            self._cond.wait()
        finally:
            self._sleepers -= 1

    def _wake(self) -> None:
        # With _lock held.
        if self._sleepers:
            assert self._cond is not None
            self._cond.notify_all()

    def enter(self, exclusive: bool, kind: str) -> None:
        with self._lock:
            if exclusive:
                self._waiting += 1
                try:
                    while not self.closed and (self._writing or self._readers):
                        self._sleep()
                finally:
                    self._waiting -= 1
                    if not self._waiting:
                        self._wake()  # queries held off for this change
            else:
                while not self.closed and (self._writing or self._waiting):
                    self._sleep()
            if self.closed:
                raise ValueError(f"this kvshard {kind} is closed")
            if exclusive:
                self._writing = True
            else:
                self._readers += 1

    def leave(self, exclusive: bool) -> None:
        with self._lock:
            if exclusive:
                self._writing = False
            else:
                self._readers -= 1
            if not self._readers:
                self._wake()

    def shut(self) -> None:
        """Refuse new calls, then wait until none is inside."""
        with self._lock:
            self.closed = True
            self._wake()  # waiting calls raise instead of entering
            while self._readers or self._writing:
                self._sleep()

    def retire(self) -> None:
        """Mark the handle closed from inside an exclusive use, whose end
        leaves it empty (a model given to a deployment)."""
        with self._lock:
            self.closed = True


class _Inside:
    """One call's passage through a handle's gate (``with handle._use()``):
    the C pointer inside the block, ValueError when the object is closed. A
    borrowed object passes its owner's gate, whose C object holds it."""

    __slots__ = ("_gate", "_owner", "_exclusive", "_handle")

    def __init__(self, handle: "_Handle", exclusive: bool) -> None:
        self._handle = handle
        self._exclusive = exclusive
        owner = handle._parent
        self._gate = handle._gate if owner is None else owner._gate
        self._owner = owner

    def __enter__(self) -> int:
        handle = self._handle
        if self._owner is not None and handle._gate.closed:
            raise ValueError(f"this kvshard {handle._kind} is closed")
        self._gate.enter(self._exclusive, handle._kind)
        return handle._ptr

    def __exit__(self, *exc: Any) -> None:
        self._gate.leave(self._exclusive)


def _free_when_idle(gate: _Gate, free: Callable[[int], None], ptr: int) -> None:
    # The finalizer: run by close(), or by the garbage collector, when no
    # call can be inside (a call holds a reference to its object).
    gate.shut()
    free(ptr)


class _Handle:
    """Owns one C handle (or borrows one from a parent that owns it) and the
    gate every call into it passes."""

    _free_name = ""
    _kind = "object"

    def __init__(self, ptr: int, parent: Optional["_Handle"] = None) -> None:
        self._ptr = ptr
        self._parent = parent
        self._gate = _Gate()
        if parent is None:
            free = getattr(_lib.library(), self._free_name)
            try:
                finalizer = weakref.finalize(self, _free_when_idle, self._gate, free, ptr)
            except BaseException:  # not even a finalizer: free it now
                free(ptr)
                raise
            # At interpreter exit a daemon thread may still be inside the
            # handle; the process's end frees it, never while in use.
            finalizer.atexit = False
            self._finalizer: Optional[weakref.finalize] = finalizer
        else:
            self._finalizer = None

    def _use(self, exclusive: bool = False) -> _Inside:
        """``with self._use() as h:`` -- `h` is the C pointer for calls made
        inside the block; ValueError when the object is closed."""
        return _Inside(self, exclusive)

    @property
    def closed(self) -> bool:
        """Whether the handle was released (or its owner was)."""
        return self._gate.closed or (self._parent is not None and self._parent._gate.closed)

    def close(self) -> None:
        """Release the C handle. Idempotent and safe from any thread: calls
        that start afterwards raise ValueError, and close returns once the
        calls already inside the library have returned and the handle is
        freed. A borrowed object (the model of a deployment) only stops
        answering; its owner frees it."""
        if self._parent is not None:
            self._gate.retire()
            return
        self._gate.shut()
        if self._finalizer is not None:
            self._finalizer()

    def _query(self, function: str, *args: Any) -> Any:
        """The library's `function(handle, *args)`, called inside the gate."""
        with self._use() as h:
            return getattr(_lib.library(), function)(h, *args)

    def __enter__(self):  # type: ignore[no-untyped-def]
        if self.closed:
            raise ValueError(f"this kvshard {self._kind} is closed")
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _new_handle(create: Callable[..., int], *args: Any) -> Tuple[int, int, _lib.CError]:
    """Call a constructor `create(&out, *args, &err)`. Returns (rc, out, err)."""
    out = c_void_p()
    err = _lib.CError()
    rc = create(byref(out), *args, byref(err))
    return rc, out.value or 0, err


def _check(rc: int, err: Optional[_lib.CError] = None) -> None:
    if rc != 0:
        raise_error(rc, err)


def _index(name: str, value: Any) -> int:
    return check_uint(name, value, 32)


# Output: one module-level writer callback; `user` is the key of the list
# that collects one call's output.
_sinks: Dict[int, List[Any]] = {}
_sink_keys = itertools.count(1)


def _sink(user: Optional[int], data: Optional[int], length: int) -> int:
    try:
        chunks = _sinks[user or 0]
        if length:
            chunks.append(ctypes.string_at(data, length))
        return 0
    except BaseException:  # never let an exception cross the C frames
        return 1


_SINK = _lib.WRITE_FN(_sink)


def _write(function: str, *handles: Optional[int]) -> str:
    key = next(_sink_keys)
    _sinks[key] = chunks = []
    try:
        rc = getattr(_lib.library(), function)(*handles, _SINK, c_void_p(key))
    finally:
        del _sinks[key]
    _check(rc)
    return b"".join(chunks).decode("utf-8")


def _opt(present: bool, value: int) -> Optional[int]:
    return int(value) if present else None


# ---------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------


class Model(_Handle):
    """A model: its layer kinds and the figures memory needs, read from a
    config.json (or the same keys in YAML), or described by ``create_model``.

    Owns a ``kvshard_model`` (freed with kvshard_model_free), except the
    model of a Deployment, which is borrowed from it and lives as long as the
    deployment is open. Plans made from a model stay valid after it is
    closed.
    """

    _free_name = "kvshard_model_free"
    _kind = "model"

    @property
    def model_type(self) -> Optional[str]:
        """``model_type`` of the config; None when it has none."""
        raw = self._query("kvshard_model_type")
        return raw.decode("utf-8", "replace") if raw else None

    @property
    def num_layers(self) -> int:
        """L: the decoder layers, without draft layers."""
        return int(self._query("kvshard_model_num_layers"))

    @property
    def num_draft_layers(self) -> int:
        """Draft (MTP) layers the model declares."""
        return int(self._query("kvshard_model_num_draft_layers"))

    @property
    def attention(self) -> Attention:
        """Attention type of the KV layers (GQA or MLA)."""
        return Attention(self._query("kvshard_model_attention"))

    @property
    def state_kind(self) -> StateKind:
        """State kind of the linear and hybrid layers (NONE without any)."""
        return StateKind(self._query("kvshard_model_state_kind"))

    @property
    def state_dtype(self) -> Dtype:
        """The state dtype the model asks for before any state_dtype option;
        AUTO when it has no temporal state."""
        return Dtype(self._query("kvshard_model_state_dtype"))

    def count(self, kind: Union[LayerKind, int]) -> int:
        """Number of decoder layers of one kind."""
        k = _enum_arg("kind", kind, LayerKind)
        return int(self._query("kvshard_model_count", k))

    def layer_kind(self, layer: int) -> LayerKind:
        """Kind of decoder layer `layer` (0-based); QueryError when out of range."""
        index = _index("layer", layer)
        out = c_int()
        with self._use() as h:
            _check(_lib.library().kvshard_model_layer_kind(byref(out), h, index))
        return LayerKind(out.value)

    @property
    def layer_kinds(self) -> List[LayerKind]:
        """The kind of every decoder layer, in order."""
        return [self.layer_kind(i) for i in range(self.num_layers)]

    def __repr__(self) -> str:
        if self.closed:
            return "<kvshard.Model closed>"
        return (
            f"<kvshard.Model {self.model_type or '?'}: {self.num_layers} layers, "
            f"{self.attention.name}, state {self.state_kind.name.lower()}>"
        )


def _enum_arg(name: str, value: Any, enum_type: Any) -> int:
    if isinstance(value, str):
        try:
            return int(enum_type[value.upper()])
        except KeyError:
            raise ValueError(f"{value!r} is not a {enum_type.__name__}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a {enum_type.__name__}, not {type(value).__name__}")
    try:
        return int(enum_type(value))
    except ValueError:
        raise ValueError(f"{value!r} is not a {enum_type.__name__}") from None


def _path_bytes(path: Any, what: str) -> bytes:
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be a str or os.PathLike, not {type(path).__name__}")
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise ValueError(f"{what} must not contain a NUL character")
    return raw


def _text_bytes(text: Any, what: str) -> bytes:
    if isinstance(text, str):
        return text.encode("utf-8", "surrogateescape")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise TypeError(f"{what} must be a str or bytes, not {type(text).__name__}")


def _maybe_path_note(exc: KvshardError, text: str) -> None:
    if "\n" not in text and len(text) < 4096 and hasattr(exc, "add_note"):
        exc.add_note(f"no file {text!r} exists, so the string was read as the config's text")


def load_model(
    path_or_text: Union[str, bytes, "os.PathLike[str]"], *, name: Optional[str] = None
) -> Model:
    """Read a model config (config.json, or the same keys in YAML).

    ``path_or_text``: an ``os.PathLike`` is a path (a file, or a directory
    holding config.json); a ``str`` naming an existing file or directory is
    read from there, any other ``str`` is the config's text; ``bytes`` are
    the text. ``name`` is the source errors name for text ("<string>" when
    None). The caller owns the returned Model. Raises a
    :class:`~kvshard.KvshardError` with line and column on a bad config.
    """
    as_text: Optional[bytes] = None
    if isinstance(path_or_text, str) and not os.path.exists(path_or_text):
        as_text = path_or_text.encode("utf-8", "surrogateescape")
    elif isinstance(path_or_text, (bytes, bytearray, memoryview)):
        as_text = bytes(path_or_text)
    name_b = None if name is None else encode(name, "name")
    if as_text is None:
        if name is not None:
            raise TypeError("name is for text, not for a path")
        path = _path_bytes(path_or_text, "path_or_text")
    lib = _lib.library()
    if as_text is not None:
        rc, out, err = _new_handle(
            lib.kvshard_model_load_string, as_text, len(as_text), name_b, None
        )
    else:
        rc, out, err = _new_handle(lib.kvshard_model_load_file, path, None)
    if rc != 0:
        try:
            raise_error(rc, err)
        except KvshardError as exc:
            if isinstance(path_or_text, str) and as_text is not None:
                _maybe_path_note(exc, path_or_text)
            raise
    return Model(out)


_DESC_UINTS = (
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "sliding_window",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "index_head_dim",
    "num_draft_layers",
    "state_heads",
    "state_key_heads",
    "state_head_dim",
    "state_value_dim",
    "state_size",
    "state_groups",
    "conv_kernel",
    "conv_channels",
)


def create_model(
    num_layers: int,
    layer_kinds: Optional[Sequence[Union[LayerKind, int]]] = None,
    *,
    model_type: Optional[str] = None,
    dtype: Union[Dtype, int] = Dtype.AUTO,
    attention: Union[Attention, int] = Attention.GQA,
    state_kind: Union[StateKind, int] = StateKind.NONE,
    state_dtype: Union[Dtype, int] = Dtype.AUTO,
    **figures: int,
) -> Model:
    """A model from a description (kvshard_model_create), as an engine that
    already holds its arguments would build it.

    ``layer_kinds``: exactly ``num_layers`` kinds (None: all full
    attention). ``figures``: the kvshard_model_desc counts (heads, dims,
    tokens), 0 meaning absent: num_attention_heads, num_kv_heads, head_dim,
    sliding_window (tokens), kv_lora_rank, qk_rope_head_dim, index_head_dim,
    num_draft_layers, state_heads, state_key_heads, state_head_dim,
    state_value_dim, state_size, state_groups, conv_kernel, conv_channels.
    The caller owns the returned Model. Missing or impossible figures raise
    a ConfigError naming the field.
    """
    desc = _lib.sized(_lib.CModelDesc)
    desc.num_layers = _index("num_layers", num_layers)
    kinds_array = None
    if layer_kinds is not None:
        if isinstance(layer_kinds, (str, bytes)):
            raise TypeError("layer_kinds must be a sequence of LayerKind")
        kinds = [_enum_arg("layer_kinds[]", k, LayerKind) for k in layer_kinds]
        if len(kinds) != desc.num_layers:
            raise ValueError(
                f"layer_kinds has {len(kinds)} entries; num_layers is {desc.num_layers}"
            )
        kinds_array = (c_int * max(1, len(kinds)))(*kinds)
        desc.layer_kinds = ctypes.cast(kinds_array, POINTER(c_int))
    model_type_b = None if model_type is None else encode(model_type, "model_type")
    desc.model_type = model_type_b
    desc.dtype = _enum_arg("dtype", dtype, Dtype)
    desc.attention = _enum_arg("attention", attention, Attention)
    desc.state_kind = _enum_arg("state_kind", state_kind, StateKind)
    desc.state_dtype = _enum_arg("state_dtype", state_dtype, Dtype)
    unknown = [k for k in figures if k not in _DESC_UINTS]
    if unknown:
        raise TypeError(f"create_model() got unknown figures {', '.join(map(repr, unknown))}")
    for key, value in figures.items():
        setattr(desc, key, _index(key, value))
    rc, out, err = _new_handle(_lib.library().kvshard_model_create, byref(desc), None)
    _check(rc, err)
    return Model(out)


# ---------------------------------------------------------------------------
# Deployment
# ---------------------------------------------------------------------------


class Deployment(_Handle):
    """A model plus its options: a deployment file, a bare model config, or
    a model directory, changed by overrides.

    Owns a ``kvshard_deployment`` and, through it, its model (freed with
    kvshard_deployment_free). Queries (``options``, ``model``, ``plan``,
    ``compare``) may run from many threads at once; ``set`` and
    ``apply_args`` wait for them and run alone.

    Fractions: the library reads a fraction's text with at most 15 digits,
    so a double such as 2/3 has no text it reads exactly. The deployment
    sends the nearest such text (the library records the override) and
    keeps the double, which it gives the library when it plans: ``plan()``
    and ``compare()`` then go through kvshard_plan_create and
    kvshard_comparison_create with the deployment's options and the double.
    The double stays until ``set`` gives the option another value, or
    ``apply_args`` changes the value the library holds.
    """

    _free_name = "kvshard_deployment_free"
    _kind = "deployment"

    def __init__(self, ptr: int) -> None:
        super().__init__(ptr)
        # Option name -> (the double, the value the library holds for it).
        self._held: Dict[str, Tuple[float, float]] = {}

    @classmethod
    def create(cls, model: Model, options: Optional[Options] = None) -> "Deployment":
        """A deployment of a model built by ``create_model`` or
        ``load_model`` (kvshard_deployment_create). The deployment takes
        ownership of the model's handle on success: ``model`` is closed
        afterwards (use ``deployment.model``). On failure the model is
        untouched. The options go to the library as a struct, so every
        value, fractions included, arrives exactly."""
        if not isinstance(model, Model):
            raise TypeError(f"model must be a kvshard.Model, not {type(model).__name__}")
        if model._parent is not None:
            raise ValueError("the model belongs to a deployment; load or create a model of its own")
        opts = _options_arg(options)
        # The model changes hands with no call inside it.
        model._gate.enter(True, model._kind)
        try:
            rc, out, err = _new_handle(
                _lib.library().kvshard_deployment_create, model._ptr, byref(opts._c)
            )
            if rc == 0:  # the deployment frees the model now
                model._gate.retire()
                if model._finalizer is not None:
                    model._finalizer.detach()
        finally:
            model._gate.leave(True)
        if rc != 0:
            raise_error(rc, err)
        return cls(out)

    @property
    def model(self) -> Model:
        """The deployment's model, borrowed: valid while the deployment is
        open (closing the deployment closes it too)."""
        ptr = self._query("kvshard_deployment_model")
        return Model(ptr, parent=self)

    def _options_in(self, h: int) -> _lib.COptions:
        """The options the deployment plans with: the library's, with the
        doubles it holds."""
        out = _lib.sized(_lib.COptions)
        _check(_lib.library().kvshard_deployment_options(byref(out), h))
        for name, (exact, _) in self._held.items():
            setattr(out, name, exact)
        return out

    @property
    def options(self) -> Options:
        """A copy of the options: file values over defaults, then overrides."""
        with self._use() as h:
            return Options._from_c(self._options_in(h))

    def _set(self, h: int, key: str, text: str, exact: Optional[float], origin: bytes) -> None:
        # Inside the exclusive gate; `text` and `exact` from override_text.
        err = _lib.CError()
        lib = _lib.library()
        key_b = key.encode("utf-8")
        rc = lib.kvshard_deployment_set(h, key_b, text.encode("utf-8"), origin, byref(err))
        _check(rc, err)
        spec = spec_for_key(key)
        if spec is not None:
            self._held.pop(spec.name, None)
            if exact is not None:
                held = _lib.sized(_lib.COptions)
                _check(lib.kvshard_deployment_options(byref(held), h))
                self._held[spec.name] = (exact, getattr(held, spec.name))

    def set(self, key: str, value: OptionValue, origin: str = DEFAULT_ORIGIN) -> None:
        """Override one option (kvshard_deployment_set), as a flag would:
        ``set("memory_per_rank", "24GiB")``, ``set("world_size", 8)``. A
        native value is checked in Python first (TypeError, ValueError) with
        the library's ranges for text and sent as text the library reads as
        exactly that value; a str goes as it is. Later plan errors about
        this key name ``origin`` as their source. On failure the deployment
        is unchanged."""
        if not isinstance(key, str):
            raise TypeError(f"the option name must be a str, not {type(key).__name__}")
        encode(key, "the option name")
        text, exact = override_text(key, value)
        encode(text, f"the value of {key}")
        origin_b = encode(origin, "origin")
        with self._use(exclusive=True) as h:
            self._set(h, key, text, exact, origin_b)

    def apply_args(self, args: Sequence[str], ignore_unknown: bool = False) -> None:
        """Apply gflags-style arguments as an engine's command line holds
        them: ``--key=value``, ``--key`` and ``--nokey`` for booleans,
        ``--flagfile=FILE``. ``ignore_unknown`` skips flags kvshard does not
        know. On failure the deployment is unchanged and the error names the
        argument (or the flag file's line and column)."""
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
            raise TypeError("args must be a list of str, such as ['--world_size=8']")
        if not isinstance(ignore_unknown, bool):
            raise TypeError("ignore_unknown must be a bool")
        encoded = [encode(a, f"args[{i}]") for i, a in enumerate(args)]
        argv = (c_char_p * max(1, len(encoded)))(*encoded)
        err = _lib.CError()
        with self._use(exclusive=True) as h:
            lib = _lib.library()
            rc = lib.kvshard_deployment_apply_args(
                h, len(encoded), argv, 1 if ignore_unknown else 0, byref(err)
            )
            _check(rc, err)
            if self._held:  # a flag that set a held option replaces the double
                now = _lib.sized(_lib.COptions)
                _check(lib.kvshard_deployment_options(byref(now), h))
                for name, (_, stand_in) in list(self._held.items()):
                    if getattr(now, name) != stand_in:
                        del self._held[name]

    def _planned(self, h: int, create: str, from_deployment: str, free: str) -> int:
        """A plan or comparison of the deployment (inside its gate)."""
        lib = _lib.library()
        if not self._held:
            rc, out, err = _new_handle(getattr(lib, from_deployment), h)
            _check(rc, err)
            return out
        opts = self._options_in(h)
        model = lib.kvshard_deployment_model(h)
        rc, out, err = _new_handle(getattr(lib, create), model, byref(opts), None)
        if rc == 0:
            return out
        if not err.source:
            # Where the deployment points this error (the line or override
            # that set the option): its own call, with the stand-in, says.
            rc2, out2, err2 = _new_handle(getattr(lib, from_deployment), h)
            if rc2 == 0:
                getattr(lib, free)(out2)
            elif rc2 == rc:
                err.source, err.line, err.column, err.offset = (
                    err2.source,
                    err2.line,
                    err2.column,
                    err2.offset,
                )
        raise_error(rc, err)

    def plan(self) -> "Plan":
        """The plan of this deployment (kvshard_deployment_plan). Errors about
        an option point at its key in the deployment file, or its override."""
        with self._use() as h:
            return Plan(
                self._planned(h, "kvshard_plan_create", "kvshard_deployment_plan", "kvshard_plan_free")
            )

    def compare(self) -> "Comparison":
        """Plans for every split size dividing T under each ownership rule
        (kvshard_deployment_compare)."""
        with self._use() as h:
            out = self._planned(
                h,
                "kvshard_comparison_create",
                "kvshard_deployment_compare",
                "kvshard_comparison_free",
            )
            return Comparison(out)

    def report_html(self) -> str:
        """The HTML page ``kvshard report`` writes: the plan, and the
        comparison of split sizes when one can be made."""
        with self.plan() as p:
            try:
                cmp: Optional[Comparison] = self.compare()
            except KvshardError:
                cmp = None
            try:
                return p.report_html(cmp)
            finally:
                if cmp is not None:
                    cmp.close()

    def __repr__(self) -> str:
        if self.closed:
            return "<kvshard.Deployment closed>"
        o = self.options
        return (
            f"<kvshard.Deployment {self.model.model_type or '?'} world_size={o.world_size} "
            f"split={o.layerwise_split_size if o.enable_layerwise_split else 1}>"
        )


_Override = Tuple[str, str, Optional[float]]


def _check_overrides(overrides: Dict[str, Any]) -> List[_Override]:
    """Every override as (key, text, exact), checked before any C call:
    TypeError or ValueError for a value of the wrong type or range."""
    prepared = []
    for key, value in overrides.items():
        text, exact = override_text(key, value)
        encode(key, "the option name")
        encode(text, f"the value of {key}")
        prepared.append((key, text, exact))
    return prepared


def _apply_overrides(dep: Deployment, overrides: List[_Override]) -> Deployment:
    origin = DEFAULT_ORIGIN.encode("utf-8")
    try:
        with dep._use(exclusive=True) as h:
            for key, text, exact in overrides:
                dep._set(h, key, text, exact, origin)
    except BaseException:
        dep.close()
        raise
    return dep


def load(path: PathLike, /, **overrides: OptionValue) -> Deployment:
    """Read a deployment: a deployment YAML, a bare model config
    (config.json) or a model directory. A relative ``model:`` path is taken
    from the file's directory. Each keyword overrides one option through
    kvshard_deployment_set with origin "python" (``memory_per_rank="24GiB"``,
    ``world_size=8``); every one is checked, as ``Deployment.set`` checks
    it, before the file is read. The caller owns the returned Deployment."""
    raw = _path_bytes(path, "path")
    prepared = _check_overrides(overrides)
    rc, out, err = _new_handle(_lib.library().kvshard_deployment_load_file, raw, None)
    _check(rc, err)
    return _apply_overrides(Deployment(out), prepared)


def loads(
    text: Union[str, bytes],
    /,
    *,
    name: Optional[str] = None,
    base_dir: Optional[PathLike] = None,
    **overrides: OptionValue,
) -> Deployment:
    """As :func:`load` for the text of a deployment file (or a model
    config). ``name`` is the source errors name ("<string>" when None);
    a relative ``model:`` path is taken from ``base_dir`` (None: the current
    directory)."""
    data = _text_bytes(text, "text")
    name_b = None if name is None else encode(name, "name")
    base_b = None if base_dir is None else _path_bytes(base_dir, "base_dir")
    prepared = _check_overrides(overrides)
    rc, out, err = _new_handle(
        _lib.library().kvshard_deployment_load_string, data, len(data), name_b, base_b, None
    )
    _check(rc, err)
    return _apply_overrides(Deployment(out), prepared)


def _options_arg(options: Optional[Options], **fields: Any) -> Options:
    if options is None:
        return Options(**fields)
    if not isinstance(options, Options):
        raise TypeError(f"options must be a kvshard.Options, not {type(options).__name__}")
    if not fields:
        return options
    Options(**fields)  # checks names and values first
    merged = options.copy()
    for key, value in fields.items():
        setattr(merged, key, value)
    return merged


# ---------------------------------------------------------------------------
# Plan
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LayerStorage:
    """How one TP rank stores one decoder layer (kvshard_layer_storage)."""

    kind: LayerKind
    #: The rank stores the layer's paged KV.
    stores_kv: bool
    #: Index into ``rank_layers(tp_rank)``; -1 when the rank stores no KV.
    kv_slot: int
    #: Position among the state (linear and hybrid) layers; -1 for others.
    state_slot: int
    #: First GQA KV head the rank holds for the layer, and how many (0, 0:
    #: none, and for MLA).
    kv_head_first: int
    kv_head_count: int
    #: Bytes per token of this layer's KV (or window) on this rank.
    kv_bytes_per_token: int
    #: TP rank of the split group that stores the layer's KV; -1 for layers
    #: without a paged KV cache.
    owner_tp_rank: int
    #: Bytes per sequence: a linear or hybrid layer's state, a sliding
    #: layer's window.
    state_bytes_per_seq: int


@dataclass(frozen=True)
class RankMemory:
    """Memory figures of one TP rank, in bytes (kvshard_rank_memory)."""

    tp_rank: int
    kv_bytes_per_token: int
    scratch_bytes_per_token: int
    draft_bytes_per_token: int
    #: block_size tokens x the three per-token figures.
    bytes_per_block: int
    #: States and sliding windows of one sequence.
    state_bytes_per_seq: int
    #: KV blocks that fit the rank; None without memory or KV bytes.
    num_blocks: Optional[int]


@dataclass(frozen=True)
class Capacity:
    """Capacity common to all ranks (kvshard_capacity). Byte figures in
    bytes, lengths in tokens; None where the C struct's ``has_*`` is false."""

    engine: Engine
    #: Tokens per block.
    block_size: int
    #: Bytes per rank for cache and state (xllm: the budget); None when none.
    memory_per_rank: Optional[int]
    max_seqs: int
    num_blocks: Optional[int]
    #: num_blocks x block_size tokens.
    max_tokens: Optional[int]
    #: Tokens per sequence for the two figures below; None when none.
    context_length: Optional[int]
    #: Sequences of context_length tokens that run at once.
    concurrency: Optional[int]
    #: The max_seqs at which state and KV blocks run out together.
    balanced_max_seqs: Optional[int]
    #: xllm profile: state slots and the counts usable after padding.
    state_slots: Optional[int]
    usable_blocks: Optional[int]
    usable_state_slots: Optional[int]


@dataclass(frozen=True)
class Uniform:
    """The same model and options without the split (S_eff = 1): the largest
    per-rank figures, in bytes."""

    kv_bytes_per_token: int
    bytes_per_block: int
    num_blocks: Optional[int]


@dataclass(frozen=True)
class Blocks:
    """Blocks that fit a measured budget (kvshard_blocks)."""

    num_blocks: int
    #: num_blocks x block_size tokens.
    max_tokens: int
    concurrency: Optional[int]
    balanced_max_seqs: Optional[int]
    state_slots: Optional[int]
    usable_blocks: Optional[int]
    usable_state_slots: Optional[int]


class Plan(_Handle):
    """A validated ownership map with per-rank memory and capacity.

    Owns a ``kvshard_plan`` (freed with kvshard_plan_free); independent of
    the model or deployment it was made from. TP ranks are 0..attn_tp_size-1
    and layers 0..num_layers-1; an index outside raises QueryError (an
    IndexError), a negative or non-int one ValueError/TypeError.
    """

    _free_name = "kvshard_plan_free"
    _kind = "plan"

    def __init__(self, ptr: int) -> None:
        super().__init__(ptr)
        # A plan never changes: T and L, for the range checks, read once
        # while no other thread has the plan.
        lib = _lib.library()
        self._sizes = (
            int(lib.kvshard_plan_attn_tp_size(ptr)),
            int(lib.kvshard_plan_num_layers(ptr)),
        )

    # --- sizes --------------------------------------------------------------
    @property
    def options(self) -> Options:
        """The options the plan was built with, the profile's defaults
        settled (block_size, max_seqs and ownership set)."""
        out = _lib.sized(_lib.COptions)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_options(byref(out), h))
        return Options._from_c(out)

    @property
    def attn_tp_size(self) -> int:
        """T = world_size / (dp_size * cp_size)."""
        return int(self._query("kvshard_plan_attn_tp_size"))

    @property
    def effective_split_size(self) -> int:
        """S_eff: the split in force (1 when layerwise split does not apply)."""
        return int(self._query("kvshard_plan_effective_split_size"))

    @property
    def replication_factor(self) -> int:
        """R: TP ranks that hold a copy of each KV head without the split."""
        return int(self._query("kvshard_plan_replication_factor"))

    @property
    def num_layers(self) -> int:
        """L: decoder layers."""
        return int(self._query("kvshard_plan_num_layers"))

    @property
    def state_kind(self) -> StateKind:
        """State kind of the model's linear and hybrid layers."""
        return StateKind(self._query("kvshard_plan_state_kind"))

    @property
    def state_dtype(self) -> Dtype:
        """The state dtype in force; AUTO when there is no temporal state."""
        return Dtype(self._query("kvshard_plan_state_dtype"))

    # --- layers -------------------------------------------------------------
    # Arguments are type-checked in Python first, then against the plan's
    # range, so that the error names the range.
    def _rank(self, tp_rank: Any) -> int:
        return self._rank_in_range(_index("tp_rank", tp_rank))

    def _layer(self, layer: Any) -> int:
        return self._layer_in_range(_index("layer", layer))

    def _rank_layer(self, tp_rank: Any, layer: Any) -> Tuple[int, int]:
        r, i = _index("tp_rank", tp_rank), _index("layer", layer)
        return self._rank_in_range(r), self._layer_in_range(i)

    def _rank_in_range(self, r: int) -> int:
        if self._gate.closed:  # a closed plan says so before any range
            raise ValueError("this kvshard plan is closed")
        t = self._sizes[0]
        if r >= t:
            raise make_error(Status.ERANK, f"TP rank {r} is outside 0..{t - 1}")
        return r

    def _layer_in_range(self, i: int) -> int:
        if self._gate.closed:
            raise ValueError("this kvshard plan is closed")
        n = self._sizes[1]
        if i >= n:
            raise make_error(Status.ELAYER, f"layer {i} is outside 0..{n - 1}")
        return i

    def layer_kind(self, layer: int) -> LayerKind:
        """Kind of decoder layer `layer`."""
        i = self._layer(layer)
        out = c_int()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_kind(byref(out), h, i))
        return LayerKind(out.value)

    def layer_owner(self, layer: int) -> int:
        """Split rank that stores a KV layer's KV when S_eff > 1;
        ``kvshard.OWNER_ALL`` (-1) when every rank stores the layer's cache;
        ``kvshard.OWNER_NONE`` (-2) for a no-cache layer."""
        i = self._layer(layer)
        out = c_int32()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_owner(byref(out), h, i))
        return int(out.value)

    def owns(self, tp_rank: int, layer: int) -> bool:
        """Whether TP rank `tp_rank` stores any cache of `layer` (its KV, its
        state or its window)."""
        r, i = self._rank_layer(tp_rank, layer)
        return bool(self._query("kvshard_plan_owns", r, i))

    def stores_kv(self, tp_rank: int, layer: int) -> bool:
        """Whether TP rank `tp_rank` stores the paged KV cache of `layer`."""
        r, i = self._rank_layer(tp_rank, layer)
        return bool(self._query("kvshard_plan_stores_kv", r, i))

    def split_position(self, tp_rank: int) -> Tuple[int, int]:
        """(split rank, split group) of a TP rank: (r % S_eff, r // S_eff)."""
        r = self._rank(tp_rank)
        rank, group = c_uint32(), c_uint32()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_split_position(byref(rank), byref(group), h, r))
        return int(rank.value), int(group.value)

    def rank_layers(self, tp_rank: int) -> List[int]:
        """The KV layers (full attention and hybrid) whose KV TP rank
        `tp_rank` stores, ascending. A copy."""
        r = self._rank(tp_rank)
        arr = POINTER(c_uint32)()
        count = c_size_t()
        with self._use() as h:  # the list points into the plan: copy it inside
            _check(_lib.library().kvshard_plan_rank_layers(byref(arr), byref(count), h, r))
            return list(arr[: count.value]) if count.value else []

    def layer_storage(self, tp_rank: int, layer: int) -> LayerStorage:
        """How TP rank `tp_rank` stores `layer`: what an engine allocates."""
        r, i = self._rank_layer(tp_rank, layer)
        out = _lib.sized(_lib.CLayerStorage)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_storage(byref(out), h, r, i))
        return LayerStorage(
            kind=LayerKind(out.kind),
            stores_kv=bool(out.stores_kv),
            kv_slot=int(out.kv_slot),
            state_slot=int(out.state_slot),
            kv_head_first=int(out.kv_head_first),
            kv_head_count=int(out.kv_head_count),
            kv_bytes_per_token=int(out.kv_bytes_per_token),
            owner_tp_rank=int(out.owner_tp_rank),
            state_bytes_per_seq=int(out.state_bytes_per_seq),
        )

    # --- memory -------------------------------------------------------------
    def rank_memory(self, tp_rank: int) -> RankMemory:
        """Memory figures of TP rank `tp_rank`, in bytes."""
        r = self._rank(tp_rank)
        out = _lib.sized(_lib.CRankMemory)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_rank_memory(byref(out), h, r))
        return RankMemory(
            tp_rank=r,
            kv_bytes_per_token=int(out.kv_bytes_per_token),
            scratch_bytes_per_token=int(out.scratch_bytes_per_token),
            draft_bytes_per_token=int(out.draft_bytes_per_token),
            bytes_per_block=int(out.bytes_per_block),
            state_bytes_per_seq=int(out.state_bytes_per_seq),
            num_blocks=_opt(out.has_num_blocks, out.num_blocks),
        )

    @property
    def capacity(self) -> Capacity:
        """Capacity common to all ranks (the minimum over ranks)."""
        c = _lib.sized(_lib.CCapacity)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_capacity(byref(c), h))
        return Capacity(
            engine=Engine(c.engine),
            block_size=int(c.block_size),
            memory_per_rank=int(c.memory_per_rank) or None,
            max_seqs=int(c.max_seqs),
            num_blocks=_opt(c.has_num_blocks, c.num_blocks),
            max_tokens=_opt(c.has_num_blocks, c.max_tokens),
            context_length=int(c.context_length) or None,
            concurrency=_opt(c.has_concurrency, c.concurrency),
            balanced_max_seqs=_opt(c.has_balanced_max_seqs, c.balanced_max_seqs),
            state_slots=_opt(c.has_state_slots, c.state_slots),
            usable_blocks=_opt(c.has_state_slots, c.usable_blocks),
            usable_state_slots=_opt(c.has_state_slots, c.usable_state_slots),
        )

    @property
    def uniform(self) -> Uniform:
        """The S_eff = 1 figures, for comparison."""
        u = _lib.sized(_lib.CUniform)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_uniform(byref(u), h))
        return Uniform(
            kv_bytes_per_token=int(u.kv_bytes_per_token),
            bytes_per_block=int(u.bytes_per_block),
            num_blocks=_opt(u.has_num_blocks, u.num_blocks),
        )

    def blocks_for(
        self,
        memory: Union[int, str],
        tp_rank: Optional[int] = None,
        context_length: int = 0,
        reserved_bytes: Union[int, str] = 0,
        extra_bytes_per_block: int = 0,
    ) -> Blocks:
        """Blocks that fit memory an engine measured, without rebuilding the
        plan (kvshard_plan_blocks_for).

        ``memory``: bytes the rank gives to cache and state (an int, or text
        such as "20GiB"); ``tp_rank``: that rank, or None for every rank
        (the minimum, what all ranks allocate); ``context_length``: tokens
        per sequence for the concurrency figures (0: none);
        ``reserved_bytes``: bytes taken off first for the engine's own
        buffers; ``extra_bytes_per_block``: bytes the engine adds to every
        block. Raises PlanError (ENOBLOCK) when not one block fits.
        """
        for name, value in (("memory", memory), ("reserved_bytes", reserved_bytes)):
            if not isinstance(value, str):
                check_uint(name, value, 64)
        budget = _lib.sized(_lib.CBudget)
        budget.extra_bytes_per_block = check_uint(
            "extra_bytes_per_block", extra_bytes_per_block, 64
        )
        budget.context_length = _index("context_length", context_length)
        rank = ALL_RANKS if tp_rank is None else _index("tp_rank", tp_rank)
        if tp_rank is not None:
            self._rank_in_range(rank)
        budget.memory_per_rank = parse_bytes("memory", memory)
        budget.reserved_bytes = parse_bytes("reserved_bytes", reserved_bytes)
        out = _lib.sized(_lib.CBlocks)
        err = _lib.CError()
        lib = _lib.library()
        with self._use() as h:
            rc = lib.kvshard_plan_blocks_for(byref(out), h, rank, byref(budget), byref(err))
        _check(rc, err)
        return Blocks(
            num_blocks=int(out.num_blocks),
            max_tokens=int(out.max_tokens),
            concurrency=_opt(out.has_concurrency, out.concurrency),
            balanced_max_seqs=_opt(out.has_balanced_max_seqs, out.balanced_max_seqs),
            state_slots=_opt(out.has_state_slots, out.state_slots),
            usable_blocks=_opt(out.has_state_slots, out.usable_blocks),
            usable_state_slots=_opt(out.has_state_slots, out.usable_state_slots),
        )

    # --- warnings and digests ---------------------------------------------------
    @property
    def warnings(self) -> List[Tuple[WarningCode, str]]:
        """The plan's warnings as (code, message), in the library's order."""
        result = []
        with self._use() as h:  # the messages point into the plan: copy them inside
            lib = _lib.library()
            for index in range(lib.kvshard_plan_warning_count(h)):
                code, message = c_int(), c_char_p()
                _check(lib.kvshard_plan_warning(byref(code), byref(message), h, index))
                text = (message.value or b"").decode("utf-8", "replace")
                result.append((WarningCode(code.value), text))
        return result

    def has_warning(self, code: Union[WarningCode, int]) -> bool:
        """Whether the plan carries a warning with this code."""
        c = _enum_arg("code", code, WarningCode)
        return bool(self._query("kvshard_plan_has_warning", c))

    @property
    def digest(self) -> int:
        """64-bit digest of the whole plan: equal plans, equal digests."""
        return int(self._query("kvshard_plan_digest"))

    @property
    def layout_digest(self) -> int:
        """64-bit digest of the layout only (no memory or capacity)."""
        return int(self._query("kvshard_plan_layout_digest"))

    def describe_rank(self, tp_rank: int) -> str:
        """One line for an engine's log about TP rank `tp_rank`."""
        r = self._rank(tp_rank)
        with self._use() as h:
            lib = _lib.library()
            need = lib.kvshard_plan_describe_rank(None, 0, h, r)
            _check(min(need, 0))
            buf = ctypes.create_string_buffer(need + 1)
            got = lib.kvshard_plan_describe_rank(buf, len(buf), h, r)
            _check(min(got, 0))
        return buf.value.decode("utf-8", "replace")

    # --- output -----------------------------------------------------------------
    def to_json(self) -> str:
        """The plan's JSON document, as ``kvshard plan --format=json`` writes it."""
        with self._use() as h:
            return _write("kvshard_plan_write_json", h)

    def to_dict(self) -> Dict[str, Any]:
        """The plan's JSON document, parsed."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def to_text(self) -> str:
        """The text ``kvshard plan`` prints."""
        with self._use() as h:
            return _write("kvshard_plan_write_text", h)

    def to_svg(self) -> str:
        """The layer map as a standalone SVG image."""
        with self._use() as h:
            return _write("kvshard_plan_write_svg", h)

    def report_html(self, comparison: Optional["Comparison"] = None) -> str:
        """One self-contained HTML page: the layer map, each rank's memory,
        the capacity, the comparison (when given), the warnings and the
        digest."""
        if comparison is not None and not isinstance(comparison, Comparison):
            raise TypeError(
                f"comparison must be a kvshard.Comparison or None, not {type(comparison).__name__}"
            )
        if comparison is None:
            with self._use() as h:
                return _write("kvshard_report_write_html", h, None)
        with self._use() as h, comparison._use() as cmp_h:
            return _write("kvshard_report_write_html", h, cmp_h)

    def __repr__(self) -> str:
        if self.closed:
            return "<kvshard.Plan closed>"
        return (
            f"<kvshard.Plan T={self.attn_tp_size} S_eff={self.effective_split_size} "
            f"layers={self.num_layers} digest={self.digest:016x}>"
        )


def plan(
    model: Union[Model, Deployment], options: Optional[Options] = None, /, **fields: Any
) -> Plan:
    """Build a plan (kvshard_plan_create) from a Model and Options; keyword
    fields set options on top (``plan(model, world_size=4)``). A Deployment
    is planned with its own options (kvshard_deployment_plan). The caller
    owns the returned Plan; the model may be closed afterwards."""
    if isinstance(model, Deployment):
        if options is not None or fields:
            raise TypeError("a Deployment plans with its own options: use deployment.set()")
        return model.plan()
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kvshard.Model or Deployment, not {type(model).__name__}")
    opts = _options_arg(options, **fields)
    with model._use() as h:
        rc, out, err = _new_handle(_lib.library().kvshard_plan_create, h, byref(opts._c), None)
    _check(rc, err)
    return Plan(out)


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ComparisonRow:
    """One split size under one ownership rule (kvshard_comparison_row).
    Byte figures in bytes; None where the C row's ``has_*`` is false."""

    layerwise_split_size: int
    ownership: Ownership
    #: Status.OK, or why this size gives no valid plan (then the figures are
    #: 0 and ``error_message`` says why).
    error: Status
    error_message: str
    #: Fewest and most KV layers a split rank owns.
    min_owned_layers: int
    max_owned_layers: int
    max_kv_bytes_per_token: int
    max_bytes_per_block: int
    num_blocks: Optional[int]
    max_tokens: Optional[int]
    #: num_blocks over the uniform num_blocks (math.inf when the uniform
    #: plan fits no block); without capacity, the uniform bytes per block
    #: over this row's.
    gain: float
    #: The warnings this row's plan carries.
    warnings: Tuple[WarningCode, ...]
    concurrency: Optional[int]
    balanced_max_seqs: Optional[int]

    @property
    def ok(self) -> bool:
        """Whether this split size gives a valid plan."""
        return self.error == Status.OK

    def to_dict(self) -> Dict[str, Any]:
        """The row's fields; enums by their library names, inf as None."""
        d = asdict(self)
        d["ownership"] = self.ownership.label
        d["error"] = None if self.ok else self.error.name
        d["warnings"] = [w.label for w in self.warnings]
        d["gain"] = self.gain if math.isfinite(self.gain) else None
        return d


def _row(c: _lib.CComparisonRow) -> ComparisonRow:
    try:
        error = Status(c.error)
    except ValueError:
        error = c.error  # type: ignore[assignment]
    return ComparisonRow(
        layerwise_split_size=int(c.layerwise_split_size),
        ownership=Ownership(c.ownership),
        error=error,
        error_message=(c.error_message or b"").decode("utf-8", "replace"),
        min_owned_layers=int(c.min_owned_layers),
        max_owned_layers=int(c.max_owned_layers),
        max_kv_bytes_per_token=int(c.max_kv_bytes_per_token),
        max_bytes_per_block=int(c.max_bytes_per_block),
        num_blocks=_opt(c.has_num_blocks, c.num_blocks),
        max_tokens=_opt(c.has_num_blocks, c.max_tokens),
        gain=float(c.gain),
        warnings=tuple(w for w in WarningCode if c.warnings & (1 << int(w))),
        concurrency=_opt(c.has_concurrency, c.concurrency),
        balanced_max_seqs=_opt(c.has_balanced_max_seqs, c.balanced_max_seqs),
    )


class Comparison(_Handle):
    """Plans for every split size dividing T, under each ownership rule.

    Owns a ``kvshard_comparison`` (freed with kvshard_comparison_free). The
    rows are copied into Python when the comparison is made and stay valid
    after ``close()``; the writers need it open.
    """

    _free_name = "kvshard_comparison_free"
    _kind = "comparison"

    def __init__(self, ptr: int) -> None:
        super().__init__(ptr)
        try:
            lib = _lib.library()
            rows = []
            for index in range(lib.kvshard_comparison_row_count(ptr)):
                row = lib.kvshard_comparison_row_at(ptr, index)
                if not row:
                    raise make_error(Status.EINVAL, f"comparison row {index} is missing")
                rows.append(_row(row.contents))
            self._rows: Tuple[ComparisonRow, ...] = tuple(rows)
            self._recommended = int(lib.kvshard_comparison_recommended(ptr))
        except BaseException:
            self.close()
            raise

    @property
    def rows(self) -> Tuple[ComparisonRow, ...]:
        """Rows by split size, then ordinal, global, contiguous."""
        return self._rows

    @property
    def recommended_index(self) -> int:
        """Index of the recommended row in ``rows``."""
        return self._recommended

    @property
    def recommended(self) -> ComparisonRow:
        """The recommended row: with a context length and memory the most
        balanced_max_seqs, then the most blocks; otherwise the most blocks
        (without memory, the fewest bytes per block); ties to the smaller
        split size, then ordinal, global, contiguous."""
        return self._rows[self._recommended]

    def __len__(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Iterator[ComparisonRow]:
        return iter(self._rows)

    def __getitem__(self, index: int) -> ComparisonRow:
        return self._rows[index]

    def to_json(self) -> str:
        """The comparison's JSON document (``kvshard compare --format=json``)."""
        with self._use() as h:
            return _write("kvshard_comparison_write_json", h)

    def to_dict(self) -> Dict[str, Any]:
        """The comparison's JSON document, parsed."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def to_text(self) -> str:
        """The table ``kvshard compare`` prints."""
        with self._use() as h:
            return _write("kvshard_comparison_write_text", h)

    def __repr__(self) -> str:
        r = self.recommended if self._rows else None
        rec = f" recommended S={r.layerwise_split_size} {r.ownership.name.lower()}" if r else ""
        return f"<kvshard.Comparison {len(self._rows)} rows{rec}>"


def compare(
    model: Union[Model, Deployment], options: Optional[Options] = None, /, **fields: Any
) -> Comparison:
    """Compare every split size dividing T under each ownership rule
    (kvshard_comparison_create; the split fields of the options are
    ignored). A Deployment compares with its own options. The caller owns
    the returned Comparison."""
    if isinstance(model, Deployment):
        if options is not None or fields:
            raise TypeError("a Deployment compares with its own options: use deployment.set()")
        return model.compare()
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kvshard.Model or Deployment, not {type(model).__name__}")
    opts = _options_arg(options, **fields)
    with model._use() as h:
        rc, out, err = _new_handle(_lib.library().kvshard_comparison_create, h, byref(opts._c), None)
    _check(rc, err)
    return Comparison(out)
