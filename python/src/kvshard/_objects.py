"""Model, Deployment, Plan and Comparison: Python owners of the C handles.

Ownership: each object owns one C handle and frees it exactly once, with the
matching ``kvshard_*_free``: when ``close()`` is called, when a ``with`` block
ends, or when the object is garbage collected (``weakref.finalize``),
whichever comes first. A handle is wrapped the moment the C call returns it,
so no Python exception can leak it. Methods of a closed object raise
``ValueError``. Everything the objects return (lists, dataclasses, strings)
is a Python copy that outlives them.

Threads: every call into a handle passes the handle's gate (``_Gate``, in
``_handles``). Queries share it, so any number of threads may query one
object at once (ctypes releases the GIL during each call); a Deployment's
``set`` and ``apply_args`` wait for the queries inside and run alone.
``close()`` may come from any thread at any time: calls that start
afterwards raise ValueError, and the handle is freed once the calls already
inside the library have returned, never under one. The model of a
deployment passes its deployment's gate; a call given an Options passes the
gate of its settings too.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import os
import warnings
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_size_t, c_uint32, c_void_p
from dataclasses import asdict, dataclass, replace
from typing import (
    Any,
    Callable,
    Dict,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from . import _lib
from ._enums import (
    ALL_RANKS,
    Attention,
    Dtype,
    Engine,
    FigureType,
    LayerHolding,
    LayerKind,
    Ownership,
    StateKind,
    Status,
    WarningCode,
)
from ._errors import KvshardError, make_error
from ._fitrows import Fit, FitComm, comm_of, deployment_fit, fit_options, rank_code
from ._handles import _Handle, _new_handle, _write, copy_rows, encode, raise_error
from ._options import DEFAULT_ORIGIN, OptionValue, Options, check_uint, parse_bytes
from ._optiontable import U64_MAX, byte_size
from ._settings import SettingInfo, get_text, info_for, value_of, value_text

__all__ = [
    "Model",
    "Deployment",
    "Plan",
    "Comparison",
    "ComparisonRow",
    "LayerStorage",
    "RankMemory",
    "StageInfo",
    "RankPosition",
    "Capacity",
    "Uniform",
    "Blocks",
    "KvGeometry",
    "StateTensor",
    "load",
    "loads",
    "load_model",
    "create_model",
    "plan",
    "compare",
]

PathLike = Union[str, "os.PathLike[str]"]


def _check(rc: int, err: Optional[_lib.CError] = None) -> None:
    if rc != 0:
        raise_error(rc, err)


def _index(name: str, value: Any) -> int:
    return check_uint(name, value, 32)


_Method = TypeVar("_Method", bound=Callable[..., Any])


def _takes_plan_rank(method: _Method) -> _Method:
    """Lets a query take its plan rank under 0.3's keyword ``tp_rank=``,
    with a DeprecationWarning, for 0.4 only: the name said TP rank, yet
    the value was always a plan rank."""

    @functools.wraps(method)
    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        if "tp_rank" in kwargs:
            name = method.__name__
            if "plan_rank" in kwargs:
                raise TypeError(f"{name}() takes plan_rank or tp_rank, not both")
            warnings.warn(
                f"{name}(tp_rank=...) is {name}(plan_rank=...): the rank is a plan rank",
                DeprecationWarning,
                stacklevel=2,
            )
            kwargs["plan_rank"] = kwargs.pop("tp_rank")
        return method(self, *args, **kwargs)

    return query  # type: ignore[return-value]


def _opt(present: bool, value: int) -> Optional[int]:
    return int(value) if present else None


def _enum_or_int(enum_type: Any, value: int) -> Any:
    """A C enum's value as its member, or as an int for a value of a later
    library this package does not know."""
    try:
        return enum_type(value)
    except ValueError:
        return int(value)


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
        """Attention type of the KV layers (GQA, MLA or COMPRESSED)."""
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
    "v_head_dim",
    "sliding_kv_heads",
    "sliding_head_dim",
    "sliding_v_head_dim",
    "attention_chunk_size",
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
    state_value_dim, state_size, state_groups, conv_kernel, conv_channels,
    and the geometry of layers whose K and V, or whose sliding layers,
    differ: v_head_dim (0: head_dim), sliding_kv_heads (0: num_kv_heads),
    sliding_head_dim (0: head_dim), sliding_v_head_dim (0: the sliding head
    dim), attention_chunk_size (tokens, needed with chunked-attention
    layers). The caller owns the returned Model. Missing or impossible
    figures raise a ConfigError naming the field. Compressed and shared-KV
    layers read other layers' caches, which a description cannot hold: the
    library refuses those kinds (ConfigError, ELAYERTYPE), and compressed
    attention (ConfigError, ERANGE); load the model's config instead.
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
    """A model plus its options and settings: a deployment file, a bare
    model config, or a model directory, changed by overrides.

    Owns a ``kvshard_deployment`` and, through it, its model and its
    settings (freed with kvshard_deployment_free). Queries (``options``,
    ``model``, ``plan``, ``compare``, ``fit``) may run from many threads at once;
    ``set`` and ``apply_args`` wait for them and run alone.
    """

    _free_name = "kvshard_deployment_free"
    _kind = "deployment"

    @classmethod
    def create(cls, model: Model, options: Optional[Options] = None) -> "Deployment":
        """A deployment of a model built by ``create_model`` or
        ``load_model`` (kvshard_deployment_create). The deployment takes
        ownership of the model's handle on success: ``model`` is closed
        afterwards (use ``deployment.model``). On failure the model is
        untouched. The deployment copies the options and their settings."""
        if not isinstance(model, Model):
            raise TypeError(f"model must be a kvshard.Model, not {type(model).__name__}")
        if model._parent is not None:
            raise ValueError("the model belongs to a deployment; load or create a model of its own")
        opts = _options_arg(options)
        # The model changes hands with no call inside it.
        model._gate.enter(True, model._kind)
        try:
            with opts._passed() as c:
                rc, out, err = _new_handle(
                    _lib.library().kvshard_deployment_create, model._ptr, byref(c)
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

    @property
    def options(self) -> Options:
        """A copy of the options and settings: file values over defaults,
        then overrides."""
        out = _lib.sized(_lib.COptions)
        with self._use() as h:
            _check(_lib.library().kvshard_deployment_options(byref(out), h))
            return Options._from_c(out, settings_at=out.settings)

    def setting(self, key: str) -> Any:
        """The value of setting `key` in the deployment (set, else its
        default), read from the deployment's own settings."""
        info = _setting_row(key)
        out = _lib.sized(_lib.COptions)
        with self._use() as h:
            _check(_lib.library().kvshard_deployment_options(byref(out), h))
            text, _ = get_text(out.settings, info.key)
        return value_of(info.type, text)

    def set(self, key: str, value: OptionValue, origin: str = DEFAULT_ORIGIN) -> None:
        """Override one option or setting (kvshard_deployment_set), as a
        flag would: ``set("memory_per_rank", "24GiB")``,
        ``set("world_size", 8)``, ``set("max_memory_utilization", 2/3)``. A
        native value is checked in Python first (TypeError, ValueError) with
        the library's ranges for text and sent as text the library reads as
        exactly that value; a str goes as it is. Later plan errors about
        this key name ``origin`` as their source. On failure the deployment
        is unchanged."""
        if not isinstance(key, str):
            raise TypeError(f"the option name must be a str, not {type(key).__name__}")
        key_b, text_b = _override(key, value)
        origin_b = encode(origin, "origin")
        with self._use(exclusive=True) as h:
            _set(h, key_b, text_b, origin_b)

    def apply_args(self, args: Sequence[str], ignore_unknown: bool = False) -> None:
        """Apply an engine's arguments as its command line holds them
        (kvshard_deployment_apply_args), every argument passed on as it is:
        the library settles ``--engine`` first, wherever it stands, and
        reads the rest as that engine writes them. Under kvshard and xllm
        they are gflags-style (``--key=value``, ``--key`` and ``--nokey``
        for booleans); under vllm and sglang argparse-style (also
        ``--key value``, one dash or two, '-' and '_' alike, ``--no-key``
        for false: ``["--engine=vllm", "--max-model-len", "4096",
        "-tp", "2"]``); ``--flagfile=FILE`` under all. Two spellings of one
        input with different values are a ReadError (EDUPKEY).
        ``ignore_unknown`` skips flags kvshard does not know (with the
        argument after one without ``=``, unless it starts with '-'). On
        failure the deployment is unchanged and the error names the
        argument (or the flag file's line and column)."""
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence):
            raise TypeError("args must be a list of str, such as ['--world_size=8']")
        if not isinstance(ignore_unknown, bool):
            raise TypeError("ignore_unknown must be a bool")
        encoded = [encode(a, f"args[{i}]") for i, a in enumerate(args)]
        argv = (c_char_p * max(1, len(encoded)))(*encoded)
        err = _lib.CError()
        with self._use(exclusive=True) as h:
            rc = _lib.library().kvshard_deployment_apply_args(
                h, len(encoded), argv, 1 if ignore_unknown else 0, byref(err)
            )
        _check(rc, err)

    def ignored_flags(self) -> List[str]:
        """What ``apply_args(..., ignore_unknown=True)`` (or
        ``--ignore_unknown_flags``) skipped over every call, each once in the
        order first seen: unknown flags as written without their values,
        positional arguments as they are (kvshard_deployment_ignored_flags).
        The deployment's plans carry the ``FLAGS_IGNORED`` warning naming
        them."""
        lib = _lib.library()
        with self._use() as h:
            count = int(lib.kvshard_deployment_ignored_flags(None, 0, h))
            names = (c_char_p * max(1, count))()
            lib.kvshard_deployment_ignored_flags(names, count, h)
            return [names[i].decode("utf-8", "replace") for i in range(count)]

    def plan(self) -> "Plan":
        """The plan of this deployment (kvshard_deployment_plan). Errors about
        an option or setting point at its key in the deployment file, or its
        override."""
        lib = _lib.library()
        with self._use() as h:
            rc, out, err = _new_handle(lib.kvshard_deployment_plan, h)
            _check(rc, err)
            # What the plan was made from, for Plan.options: the
            # deployment's settings, which no change can touch while this
            # query holds the gate.
            now = _lib.sized(_lib.COptions)
            rc = lib.kvshard_deployment_options(byref(now), h)
            return _plan_with_settings(
                out, now.settings if rc == 0 else None, rc, _weights_of(now) if rc == 0 else None
            )

    def compare(self, *, rank: str = "auto") -> "Comparison":
        """Plans for every split size dividing T under each ownership rule
        (kvshard_deployment_compare_with). ``rank``: "auto" (by throughput
        when the comm inputs give an accelerator, a link, a context length
        and a decode batch, else by capacity), "capacity" or "throughput"
        (PlanError, EMISSING, comm_input_missing without those inputs)."""
        co = _lib.sized(_lib.CCompareOptions)
        co.rank_by = rank_code(rank)
        with self._use() as h:
            rc, out, err = _new_handle(
                _lib.library().kvshard_deployment_compare_with, h, byref(co))
            _check(rc, err)
            return Comparison(out)

    def fit(
        self,
        gpus: int,
        *,
        max_tp_size: int = 0,
        max_pp_size: int = 0,
        pp_size: int = 0,
        dp_size: int = 0,
        unsplit: bool = False,
        rank: str = "auto",
    ) -> "Fit":
        """Search the layouts of `gpus` GPUs for this deployment
        (kvshard_deployment_fit), as :func:`kvshard.fit` does for a model:
        the deployment's options give the device and the weights. Its
        pp_size and dp_size, when an override (``set``, ``apply_args``)
        gave them, pin those sizes as the arguments of the same names do,
        and enable_layerwise_split overridden to false pins the split to 1;
        the file's other parallel keys do not apply; ``rank`` as
        :func:`kvshard.fit`'s. Errors point at the option responsible, as
        ``plan``'s do."""
        fo = fit_options(gpus, max_tp_size, max_pp_size, pp_size, dp_size, unsplit, rank)
        with self._use() as h:
            return deployment_fit(h, fo)

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


def _setting_row(key: Any) -> SettingInfo:
    if not isinstance(key, str):
        raise TypeError(f"the setting's key must be a str, not {type(key).__name__}")
    info = info_for(key)
    if info is None:
        raise make_error(Status.EUNKNOWNKEY, f'unknown setting "{key}"')
    return info


def _override(key: str, value: Any) -> Tuple[bytes, bytes]:
    """An override's key and value as C strings, checked before any C call:
    TypeError or ValueError for a value of the wrong type or range."""
    text = value_text(key, value)
    return encode(key, "the option name"), encode(text, f"the value of {key}")


def _set(h: int, key: bytes, text: bytes, origin: bytes) -> None:
    # Inside the deployment's exclusive gate.
    err = _lib.CError()
    rc = _lib.library().kvshard_deployment_set(h, key, text, origin, byref(err))
    _check(rc, err)


_Override = Tuple[bytes, bytes]


def _check_overrides(overrides: Dict[str, Any]) -> List[_Override]:
    """Every override as (key, text), checked before any C call."""
    return [_override(key, value) for key, value in overrides.items()]


def _apply_overrides(dep: Deployment, overrides: List[_Override]) -> Deployment:
    origin = DEFAULT_ORIGIN.encode("utf-8")
    try:
        with dep._use(exclusive=True) as h:
            for key, text in overrides:
                _set(h, key, text, origin)
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
    """How one plan rank stores one layer, a decoder layer or a draft layer
    (kvshard_layer_storage)."""

    kind: LayerKind
    #: The rank stores the layer's paged KV.
    stores_kv: bool
    #: Index into ``rank_layers(plan_rank)``; -1 when the rank stores no KV.
    kv_slot: int
    #: Position among the state (linear and hybrid) layers; -1 for others.
    state_slot: int
    #: First GQA KV head the rank holds for the layer, and how many (0, 0:
    #: none, and for MLA).
    kv_head_first: int
    kv_head_count: int
    #: Bytes per token of this layer's KV (or window) on this rank.
    kv_bytes_per_token: int
    #: Plan rank of the split group that stores the layer's KV (the rank to
    #: receive it from; a split group lies inside one stage); -1 for layers
    #: without a paged KV cache.
    owner_plan_rank: int
    #: Bytes per sequence: a linear or hybrid layer's state, a sliding or
    #: chunked layer's window, a compressed layer's window and compressor
    #: state on its owner.
    state_bytes_per_seq: int
    #: The layer whose cache this one reads (a shared-KV layer, or a
    #: compressed layer that reads another's stream); -1 for none.
    kv_source: int
    #: A compressed layer's compression ratio (0: a window only); 0 for
    #: other kinds.
    compress_ratio: int
    #: The layer keeps an indexer key (DSA, a GQA sparse index, a
    #: compressed layer's index keys).
    index_key: bool
    #: What the rank holds of the layer (NOT_ON_STAGE for a layer of
    #: another stage: then only kind, stage and the layer's own figures
    #: are set).
    holding: LayerHolding
    #: The pipeline stage the layer is on (the last for draft layers).
    stage: int


@dataclass(frozen=True)
class RankMemory:
    """Memory figures of one plan rank, in bytes (kvshard_rank_memory)."""

    #: The plan rank: stage x T + TP rank (the TP rank with one stage).
    plan_rank: int
    kv_bytes_per_token: int
    scratch_bytes_per_token: int
    draft_bytes_per_token: int
    #: block_size tokens x the three per-token figures.
    bytes_per_block: int
    #: States, windows and compressor state of one sequence.
    state_bytes_per_seq: int
    #: KV blocks that fit the rank; None without memory or KV bytes.
    num_blocks: Optional[int]
    #: Per-sequence scratch while split: the window and state of the largest
    #: KV layer the rank computes without owning it (compressed layers).
    scratch_bytes_per_seq: int
    #: The draft layers' share of state_bytes_per_seq (their windows and
    #: compressor state), with speculation.
    draft_bytes_per_seq: int
    #: The rank's budget for cache and state: memory_per_rank, or from the
    #: device inputs (the usable share of device_memory less its stage's
    #: weights and the activation reserve); None without either.
    budget: Optional[int]
    #: With device inputs: the weights the rank holds and the activation
    #: reserve its budget leaves out; None without them.
    weights_bytes: Optional[int]
    activation_reserve: Optional[int]


@dataclass(frozen=True)
class Capacity:
    """Capacity common to all ranks (kvshard_capacity, and three of the
    plan's figures by name). Byte figures in bytes, lengths in tokens; None
    where the C struct's ``has_*`` is false or the figure is null. Under an
    engine profile the figures are the engine's: its block (vLLM's raised
    attention block, SGLang's page), its blocks and its token count."""

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
    #: The profile's figures (kvshard_plan_capacity_figure): the state
    #: slots (xllm, sglang) and the blocks (xllm, vllm) and slots (xllm,
    #: sglang) usable after the engine's padding; None where the profile
    #: gives none. What the engine itself logs is Plan.engine_figures().
    state_slots: Optional[int]
    usable_blocks: Optional[int]
    usable_state_slots: Optional[int]
    #: The binding rank, the first whose blocks are the common count: its
    #: stage and its TP rank in that stage; None without a block count.
    binding_stage: Optional[int]
    binding_tp_rank: Optional[int]


@dataclass(frozen=True)
class Uniform:
    """The same model and options without the split (S_eff = 1): the largest
    per-rank figures, in bytes."""

    kv_bytes_per_token: int
    bytes_per_block: int
    num_blocks: Optional[int]


@dataclass(frozen=True)
class Blocks:
    """Blocks that fit a measured budget (kvshard_blocks, and the profile's
    figures at that budget, kvshard_plan_blocks_figure; None where null)."""

    num_blocks: int
    #: num_blocks x block_size tokens.
    max_tokens: int
    concurrency: Optional[int]
    balanced_max_seqs: Optional[int]
    #: The rows each state layer allocates on the rank (kvshard_blocks
    #: state_slots): the plan's max_seqs under kvshard, the engine's own
    #: slots under xllm, sglang and trtllm; None under vllm, whose state
    #: pages sit in the KV pool. Ranks agree on the minimum.
    state_slots: Optional[int]
    usable_blocks: Optional[int]
    usable_state_slots: Optional[int]
    #: The sequences these blocks serve at once at the plan's own
    #: context_length, at most the plan's max_seqs: the request limit to
    #: give the engine. None when the plan has no context_length.
    max_seqs: Optional[int] = None


@dataclass(frozen=True)
class KvGeometry:
    """The elements of one token of a layer's KV on one rank
    (kvshard_layer_kv_geometry): what an engine shapes the layer's KV
    buffer by. Figures a layer or attention type does not have are 0."""

    kind: LayerKind
    attention: Attention
    #: The layer keeps KV of its own (paged or a window).
    has_kv: bool
    #: The KV cache dtype ``auto`` resolved to, and its bytes per element.
    dtype: Dtype
    element_bytes: int
    #: GQA: this rank's KV heads, kv_head_first .. + kv_heads - 1 (one
    #: shared head when the layer has fewer KV heads than ranks).
    kv_head_first: int
    kv_heads: int
    total_kv_heads: int
    k_head_dim: int
    v_head_dim: int
    #: MLA: the latent and its RoPE part; compressed: latent_dim and RoPE.
    kv_lora_rank: int
    qk_rope_head_dim: int
    latent_dim: int
    #: The indexer key's dim where the layer keeps one (DSA), else 0.
    index_head_dim: int
    #: The scales stored beside one token's elements, so the parts add up
    #: to the layer's kv_bytes_per_token: at fp8 8 bytes a GQA head (fp32
    #: for K and for V), an MLA latent's and an indexer key's fp32 scales,
    #: a compressed latent's scale bytes; ``Dtype.AUTO`` and 0 without.
    scale_dtype: Dtype
    scale_bytes_per_token: int
    #: Bytes of an element of the RoPE part beside a latent (2 when bf16
    #: beside an fp8 NoPE part) and of the indexer key; 0 without.
    rope_element_bytes: int
    index_element_bytes: int


@dataclass(frozen=True)
class StateTensor:
    """One tensor a layer keeps for one sequence on one rank
    (kvshard_state_tensor): its recurrent state, ``"conv"`` (channels,
    columns) in the model dtype and ``"ssm"`` (heads, then the state's own
    dims) in the state dtype; or its window, ``"window_k"`` and
    ``"window_v"`` (tokens, heads, head dim) in the KV dtype with, at fp8,
    ``"window_k_scale"`` and ``"window_v_scale"`` (tokens, heads) in
    float32, or a compressed layer's ``"window_latent"`` (tokens, the
    latent's elements or at fp8 its packed bytes) and
    ``"compressor_state"`` (slots, rows, dims) in float32. ``bytes`` is the
    dims' product times the dtype's size."""

    name: str
    dtype: Dtype
    dims: Tuple[int, ...]
    bytes: int


@dataclass(frozen=True)
class StageInfo:
    """One pipeline stage (kvshard_stage_info). Byte figures in bytes."""

    stage: int
    #: Its decoder layers: layer_first .. layer_first + layer_count - 1.
    layer_first: int
    layer_count: int
    #: Full-attention, hybrid and compressed layers among them.
    num_kv_layers: int
    #: Linear and hybrid layers among them.
    num_state_layers: int
    #: Draft layers speculation counts on it (the last stage only).
    num_draft_layers: int
    #: Global rank of its TP rank 0 (data-parallel replica 0, context rank
    #: 0), and the step between the global ranks of consecutive TP ranks.
    global_rank_first: int
    global_rank_stride: int
    #: The most any of its ranks keeps per token (KV + scratch + draft) and
    #: per sequence (state).
    bytes_per_token: int
    state_bytes_per_seq: int
    #: The fewest blocks of its ranks that store KV; None when none does,
    #: or without memory.
    num_blocks: Optional[int]
    #: The binding rank, the first whose blocks are the plan's common
    #: count, is on this stage.
    binds: bool

    @property
    def layers(self) -> range:
        """Its decoder layers, in order."""
        return range(self.layer_first, self.layer_first + self.layer_count)


@dataclass(frozen=True)
class RankPosition:
    """Where a global rank sits under the plan's rank layout
    (kvshard_rank_position)."""

    global_rank: int
    #: Data-parallel replica, pipeline stage, context-parallel rank.
    dp_rank: int
    stage: int
    cp_rank: int
    #: Attention-TP rank inside its stage.
    tp_rank: int
    #: stage x T + tp_rank: the rank the plan's rank queries take.
    plan_rank: int
    #: tp_rank // S_eff and tp_rank % S_eff.
    split_group: int
    split_rank: int


#: The profile's figures Capacity and Blocks carry, read by name.
_PROFILE_FIGURES = ("state_slots", "usable_blocks", "usable_state_slots")
#: And the binding rank's place, which Capacity carries too.
_BINDING_FIGURES = ("binding_stage", "binding_tp_rank")


def _figure_value(f: _lib.CFigure, name: str) -> Any:
    """A kvshard_figure as Python (inside the plan's gate: text is borrowed)."""
    kind = f.type
    if kind == FigureType.NULL:
        return None
    if kind == FigureType.UINT:
        return int(f.uint_value)
    if kind == FigureType.DOUBLE:
        return float(f.double_value)
    if kind == FigureType.BOOL:
        return bool(f.bool_value)
    if kind == FigureType.TEXT:
        return (f.text_value or b"").decode("utf-8", "replace")
    if kind == FigureType.TEXT_LIST:
        return _text_list(f)
    if kind == FigureType.JSON:
        return json.loads((f.text_value or b"null").decode("utf-8"))
    raise make_error(
        Status.EINVAL, f'figure "{name}" has type {kind}, which this package does not know'
    )


def _text_list(f: _lib.CFigure) -> List[str]:
    """A TEXT_LIST figure's words: uint_value texts, each ended by a NUL,
    one after the other from text_value (borrowed: inside the plan's
    gate)."""
    # The field's own pointer: ctypes reads a c_char_p field as bytes up to
    # the first NUL, which would keep the first word only.
    at = ctypes.c_void_p.from_buffer(f, _lib.CFigure.text_value.offset).value
    words: List[str] = []
    for _ in range(int(f.uint_value)):
        if not at:
            break
        raw = ctypes.string_at(at)
        words.append(raw.decode("utf-8", "replace"))
        at += len(raw) + 1
    if len(words) != f.uint_value:
        raise make_error(
            Status.EINVAL, f'figure "{(f.name or b"").decode()}" holds {f.uint_value} texts '
            f"and no text to read them from"
        )
    return words


def _capacity_figure(h: int, name: str, name_b: Optional[bytes] = None) -> Any:
    f = _lib.sized(_lib.CFigure)
    rc = _lib.library().kvshard_plan_capacity_figure(byref(f), h, name_b or name.encode())
    if rc == Status.EUNKNOWNKEY:
        raise make_error(rc, f'unknown capacity figure "{name}"')
    _check(rc)
    return _figure_value(f, name)


def _blocks_figure(
    h: int, rank: int, budget: _lib.CBudget, name: str, name_b: Optional[bytes] = None
) -> Any:
    f = _lib.sized(_lib.CFigure)
    err = _lib.CError()
    rc = _lib.library().kvshard_plan_blocks_figure(
        byref(f), h, rank, byref(budget), name_b or name.encode(), byref(err)
    )
    _check(rc, err)
    return _figure_value(f, name)


# The capacity figures' names are the library's: the fields of the JSON
# plan's capacity object, which it writes from the same table. Read once.
_figure_names: Optional[Tuple[str, ...]] = None


def _capacity_names(plan: "Plan") -> Tuple[str, ...]:
    global _figure_names
    names = _figure_names
    if names is None:
        names = _figure_names = tuple(plan.to_dict()["capacity"])
    return names


def _stage_info(lib: ctypes.CDLL, h: int, stage: int) -> StageInfo:
    """kvshard_plan_stage as a StageInfo (inside the plan's gate)."""
    out = _lib.sized(_lib.CStageInfo)
    _check(lib.kvshard_plan_stage(byref(out), h, stage))
    return StageInfo(
        stage=int(out.stage),
        layer_first=int(out.layer_first),
        layer_count=int(out.layer_count),
        num_kv_layers=int(out.num_kv_layers),
        num_state_layers=int(out.num_state_layers),
        num_draft_layers=int(out.num_draft_layers),
        global_rank_first=int(out.global_rank_first),
        global_rank_stride=int(out.global_rank_stride),
        bytes_per_token=int(out.bytes_per_token),
        state_bytes_per_seq=int(out.state_bytes_per_seq),
        num_blocks=_opt(out.has_num_blocks, out.num_blocks),
        binds=bool(out.binds),
    )


def _world_size(h: int) -> int:
    """The plan's world_size (inside its gate), for a message."""
    o = _lib.sized(_lib.COptions)
    _check(_lib.library().kvshard_plan_options(byref(o), h))
    return int(o.world_size)


def _weights_of(c: _lib.COptions) -> Optional[Tuple[int, ...]]:
    """The weights_per_rank sizes a C options struct points to (inside the
    gate of their owner), copied."""
    if not c.weights_per_rank_count or not c.weights_per_rank:
        return None
    return tuple(int(c.weights_per_rank[i]) for i in range(c.weights_per_rank_count))


def _plan_with_settings(
    plan: int,
    settings: Optional[int],
    rc: int = 0,
    weights: Optional[Tuple[int, ...]] = None,
) -> "Plan":
    """Wrap a new C plan with a copy of the C settings it was made from (the
    caller holds the gate of their owner) and the weights_per_rank it was
    given. `rc` is the status of reading the settings' pointer; when it, or
    the copy, fails, the plan is freed."""
    lib = _lib.library()
    copied, err = 0, None
    if rc == 0 and settings:
        rc, copied, err = _new_handle(lib.kvshard_settings_copy, settings, None)
    if rc != 0:
        lib.kvshard_plan_free(plan)
        raise_error(rc, err)
    return Plan(plan, copied, weights)  # owns both from here, even if it fails


class Plan(_Handle):
    """A validated ownership map with per-rank memory and capacity.

    Owns a ``kvshard_plan`` (freed with kvshard_plan_free); independent of
    the model or deployment it was made from. A plan of P pipeline stages
    has P x T plan ranks: every query that takes a rank (its ``plan_rank``
    argument) takes a plan rank, ``stage * attn_tp_size + TP rank``, 0 to
    num_ranks - 1; with one stage that is the TP rank. ``locate()`` gives
    a global rank's plan rank. Layers are 0..num_layers-1 (``layer_storage``
    and ``layer_stage`` also take the draft layers after them). An index
    outside raises QueryError (an IndexError), a negative or non-int one
    ValueError/TypeError.
    """

    _free_name = "kvshard_plan_free"
    _kind = "plan"

    def __init__(
        self, ptr: int, settings: int = 0, weights: Optional[Tuple[int, ...]] = None
    ) -> None:
        # `settings`: a copy of the C settings the plan was made from (0:
        # none, every setting at its default), for ``options``; the library
        # resolves them into the plan and keeps none. The plan owns the copy:
        # it is reached through the plan's gate and freed with the plan.
        # `weights`: the weights_per_rank it was given, for ``options``: the
        # plan's own options still point to the caller's array, which the
        # binding never reads after the call.
        lib = _lib.library()
        then = (lib.kvshard_settings_free, settings) if settings else None
        super().__init__(ptr, then=then)
        self._settings_ptr = settings
        self._weights = weights
        # A plan never changes: T, L, P x T and P for the range checks,
        # read once while no other thread has the plan, and L + d, the
        # decoder and draft layers layer_storage takes.
        num_layers = int(lib.kvshard_plan_num_layers(ptr))
        facts = _lib.sized(_lib.CPlanModelInfo)
        _check(lib.kvshard_plan_model(byref(facts), ptr))
        self._sizes = (
            int(lib.kvshard_plan_attn_tp_size(ptr)),
            num_layers,
            int(lib.kvshard_plan_num_ranks(ptr)),
            int(lib.kvshard_plan_pp_size(ptr)),
            num_layers + int(facts.num_draft_layers),
        )

    # --- sizes --------------------------------------------------------------
    @property
    def options(self) -> Options:
        """The options the plan was built with, the profile's defaults
        settled (block_size, max_seqs, ownership, pp_size, the rule and
        rank_layout set), and the settings it was made from. An explicit
        pp_partition reads back as its counts, with the rule EXPLICIT, and
        weights_per_rank as the sizes given."""
        out = _lib.sized(_lib.COptions)
        lib = _lib.library()
        with self._use() as h:
            _check(lib.kvshard_plan_options(byref(out), h))
            # The plan keeps the counts in its stages, not in its options.
            counts = None
            if out.pp_partition_count:
                counts = tuple(_stage_info(lib, h, s).layer_count for s in range(self._sizes[3]))
            return Options._from_c(
                out,
                settings_at=self._settings_ptr or None,
                partition=counts,
                weights=self._weights,
                read_weights=False,
            )

    @property
    def attn_tp_size(self) -> int:
        """T = world_size / (pp_size * dp_size * cp_size): the TP ranks of
        one stage."""
        return int(self._query("kvshard_plan_attn_tp_size"))

    @property
    def pp_size(self) -> int:
        """P: pipeline stages (1 without pp_size)."""
        return int(self._query("kvshard_plan_pp_size"))

    @property
    def num_ranks(self) -> int:
        """P x T: the plan ranks the rank queries take."""
        return int(self._query("kvshard_plan_num_ranks"))

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
        return StateKind(self._model_info().state_kind)

    @property
    def state_dtype(self) -> Dtype:
        """The state dtype in force; AUTO when there is no temporal state."""
        return Dtype(self._model_info().state_dtype)

    def _model_info(self) -> Any:
        facts = _lib.sized(_lib.CPlanModelInfo)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_model(byref(facts), h))
        return facts

    # --- layers -------------------------------------------------------------
    # Arguments are type-checked in Python first, then against the plan's
    # range, so that the error names the range.
    def _rank(self, plan_rank: Any) -> int:
        return self._rank_in_range(_index("plan_rank", plan_rank))

    def _layer(self, layer: Any) -> int:
        return self._layer_in_range(_index("layer", layer))

    def _rank_layer(self, plan_rank: Any, layer: Any) -> Tuple[int, int]:
        r, i = _index("plan_rank", plan_rank), _index("layer", layer)
        return self._rank_in_range(r), self._layer_in_range(i)

    def _rank_in_range(self, r: int) -> int:
        if self._gate.closed:  # a closed plan says so before any range
            raise ValueError("this kvshard plan is closed")
        t, _, n, p, _ = self._sizes
        if r >= n:
            if p == 1:
                raise make_error(Status.ERANK, f"plan rank {r} is outside 0..{t - 1}")
            raise make_error(
                Status.ERANK,
                f"plan rank {r} is outside 0..{n - 1} (stage x {t} + TP rank, {p} stages)",
            )
        return r

    def _layer_in_range(self, i: int, drafts: bool = False) -> int:
        if self._gate.closed:
            raise ValueError("this kvshard plan is closed")
        n, with_drafts = self._sizes[1], self._sizes[4]
        if drafts and i >= with_drafts:
            shown = f"0..{with_drafts - 1}" if with_drafts > n else f"0..{n - 1}"
            extra = f" (draft layers {n}..{with_drafts - 1})" if with_drafts > n else ""
            raise make_error(Status.ELAYER, f"layer {i} is outside {shown}{extra}")
        if not drafts and i >= n:
            raise make_error(Status.ELAYER, f"layer {i} is outside 0..{n - 1}")
        return i

    def _stage_in_range(self, stage: Any) -> int:
        s = _index("stage", stage)
        if self._gate.closed:
            raise ValueError("this kvshard plan is closed")
        p = self._sizes[3]
        if s >= p:
            raise make_error(Status.ESTAGE, f"stage {s} is outside 0..{p - 1}")
        return s

    def layer_kind(self, layer: int) -> LayerKind:
        """Kind of decoder layer `layer`."""
        i = self._layer(layer)
        out = _lib.sized(_lib.CLayerStorage)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_storage(byref(out), h, 0, i))
        return LayerKind(out.kind)

    def layer_owner(self, layer: int) -> int:
        """Split rank that stores a KV layer's KV when S_eff > 1;
        ``kvshard.OWNER_ALL`` (-1) when every rank stores the layer's cache;
        ``kvshard.OWNER_NONE`` (-2) for a no-cache layer. A shared-KV layer
        keeps nothing and answers its source's owner: where the cache it
        reads lives."""
        i = self._layer(layer)
        out = c_int32()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_owner(byref(out), h, i))
        return int(out.value)

    @_takes_plan_rank
    def owns(self, plan_rank: int, layer: int) -> bool:
        """Whether plan rank `plan_rank` stores any cache of `layer` (its KV,
        its state or its window); false for a layer of another stage."""
        r, i = self._rank_layer(plan_rank, layer)
        return bool(self._query("kvshard_plan_owns", r, i))

    @_takes_plan_rank
    def stores_kv(self, plan_rank: int, layer: int) -> bool:
        """Whether plan rank `plan_rank` stores the paged KV cache of `layer`."""
        r, i = self._rank_layer(plan_rank, layer)
        return bool(self._query("kvshard_plan_stores_kv", r, i))

    @_takes_plan_rank
    def split_position(self, plan_rank: int) -> Tuple[int, int]:
        """(split rank, split group) of a plan rank: (t % S_eff, t // S_eff)
        of its TP rank t = plan_rank % T (a split group lies inside a stage)."""
        r = self._rank(plan_rank)
        rank, group = c_uint32(), c_uint32()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_split_position(byref(rank), byref(group), h, r))
        return int(rank.value), int(group.value)

    @_takes_plan_rank
    def rank_layers(self, plan_rank: int) -> List[int]:
        """The KV layers (full attention, hybrid and compressed) whose KV
        plan rank `plan_rank` stores, ascending: layers of its stage only. A
        copy."""
        r = self._rank(plan_rank)
        arr = POINTER(c_uint32)()
        count = c_size_t()
        with self._use() as h:  # the list points into the plan: copy it inside
            _check(_lib.library().kvshard_plan_rank_layers(byref(arr), byref(count), h, r))
            return list(arr[: count.value]) if count.value else []

    @_takes_plan_rank
    def layer_storage(self, plan_rank: int, layer: int) -> LayerStorage:
        """How plan rank `plan_rank` stores `layer`, what an engine allocates:
        decoder layers 0..L-1, then the model's draft layers L..L+d-1. A
        layer of another stage is ``LayerHolding.NOT_ON_STAGE``, not an
        error."""
        r, i = _index("plan_rank", plan_rank), _index("layer", layer)
        r, i = self._rank_in_range(r), self._layer_in_range(i, drafts=True)
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
            owner_plan_rank=int(out.owner_plan_rank),
            state_bytes_per_seq=int(out.state_bytes_per_seq),
            kv_source=int(out.kv_source),
            compress_ratio=int(out.compress_ratio),
            index_key=bool(out.index_key),
            holding=_enum_or_int(LayerHolding, out.holding),
            stage=int(out.stage),
        )

    # --- stages and global ranks ----------------------------------------------
    def stage(self, stage: int) -> StageInfo:
        """Pipeline stage `stage` (0..pp_size-1): its layers, its ranks'
        largest figures, its blocks, and whether the plan's block count is
        bound there. QueryError (ESTAGE) when out of range."""
        s = self._stage_in_range(stage)
        lib = _lib.library()
        with self._use() as h:
            return _stage_info(lib, h, s)

    def stages(self) -> List[StageInfo]:
        """Every stage, in order."""
        lib = _lib.library()
        with self._use() as h:
            return [_stage_info(lib, h, s) for s in range(self._sizes[3])]

    def layer_stage(self, layer: int) -> int:
        """The stage layer `layer` is on: decoder layers 0..L-1, then the
        draft layers after them, on the last stage."""
        i = self._layer_in_range(_index("layer", layer), drafts=True)
        out = c_uint32()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_stage(byref(out), h, i))
        return int(out.value)

    def pp_partition(self) -> str:
        """The stages' layer counts as the engines take them ("31,30": the
        value of VLLM_PP_LAYER_PARTITION and SGLANG_PP_LAYER_PARTITION)."""
        lib = _lib.library()
        with self._use() as h:
            need = lib.kvshard_plan_pp_partition(None, 0, h)
            _check(min(need, 0))
            buf = ctypes.create_string_buffer(need + 1)
            got = lib.kvshard_plan_pp_partition(buf, len(buf), h)
            _check(min(got, 0))
        return buf.value.decode("ascii")

    def locate(self, global_rank: int) -> RankPosition:
        """Where global rank `global_rank` (0..world_size-1) sits under the
        plan's rank layout: its data-parallel replica, stage, context rank,
        TP rank and the plan rank the rank queries take. Every rank can
        locate every other: no collective. QueryError (EGLOBALRANK) outside
        the world."""
        g = _index("global_rank", global_rank)
        out = _lib.sized(_lib.CRankPosition)
        with self._use() as h:
            rc = _lib.library().kvshard_plan_locate(byref(out), h, g)
            if rc == Status.EGLOBALRANK:
                world = _world_size(h)
                raise make_error(rc, f"global rank {g} is outside 0..{world - 1}")
            _check(rc)
        return RankPosition(
            global_rank=int(out.global_rank),
            dp_rank=int(out.dp_rank),
            stage=int(out.stage),
            cp_rank=int(out.cp_rank),
            tp_rank=int(out.tp_rank),
            plan_rank=int(out.plan_rank),
            split_group=int(out.split_group),
            split_rank=int(out.split_rank),
        )

    def global_rank(self, dp_rank: int, stage: int, cp_rank: int, tp_rank: int) -> int:
        """The global rank of a rank's coordinates under the plan's rank
        layout; ``tp_rank`` is the TP rank inside the stage (0..T-1).
        QueryError: ESTAGE for a stage out of range, ERANK for another
        coordinate out of range."""
        coords = [
            _index(name, value)
            for name, value in (
                ("dp_rank", dp_rank),
                ("stage", stage),
                ("cp_rank", cp_rank),
                ("tp_rank", tp_rank),
            )
        ]
        d, s, c, t = coords
        out = c_uint32()
        with self._use() as h:
            rc = _lib.library().kvshard_plan_global_rank(byref(out), h, d, s, c, t)
            if rc == Status.ESTAGE:
                raise make_error(rc, f"stage {s} is outside 0..{self._sizes[3] - 1}")
            if rc == Status.ERANK:
                o = _lib.sized(_lib.COptions)
                _check(_lib.library().kvshard_plan_options(byref(o), h))
                sizes = (("dp_rank", d, o.dp_size), ("cp_rank", c, o.cp_size),
                         ("tp_rank", t, self._sizes[0]))
                bad = next((x for x in sizes if x[1] >= x[2]), None)
                if bad is not None:
                    raise make_error(rc, f"{bad[0]} {bad[1]} is outside 0..{bad[2] - 1}")
            _check(rc)
        return int(out.value)

    # --- memory -------------------------------------------------------------
    @_takes_plan_rank
    def rank_memory(self, plan_rank: int) -> RankMemory:
        """Memory figures of plan rank `plan_rank`, in bytes."""
        r = self._rank(plan_rank)
        out = _lib.sized(_lib.CRankMemory)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_rank_memory(byref(out), h, r))
        return RankMemory(
            plan_rank=r,
            kv_bytes_per_token=int(out.kv_bytes_per_token),
            scratch_bytes_per_token=int(out.scratch_bytes_per_token),
            draft_bytes_per_token=int(out.draft_bytes_per_token),
            bytes_per_block=int(out.bytes_per_block),
            state_bytes_per_seq=int(out.state_bytes_per_seq),
            num_blocks=_opt(out.has_num_blocks, out.num_blocks),
            scratch_bytes_per_seq=int(out.scratch_bytes_per_seq),
            draft_bytes_per_seq=int(out.draft_bytes_per_seq),
            budget=_opt(out.has_budget, out.budget),
            weights_bytes=_opt(out.has_device, out.weights_bytes),
            activation_reserve=_opt(out.has_device, out.activation_reserve),
        )

    @property
    def capacity(self) -> Capacity:
        """Capacity common to all ranks (the minimum over ranks)."""
        c = _lib.sized(_lib.CCapacity)
        with self._use() as h:
            _check(_lib.library().kvshard_plan_capacity(byref(c), h))
            names = _PROFILE_FIGURES + _BINDING_FIGURES
            extra = {name: _capacity_figure(h, name) for name in names}
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
            **extra,
        )

    def capacity_figure(self, name: str) -> Any:
        """A figure of the capacity by the name of its field in the JSON
        plan's ``capacity`` object (kvshard_plan_capacity_figure):
        "num_blocks", "concurrency", "engine", "budget", "state_slots",
        "usable_blocks", ... An int, float, bool or str; None where the
        figure has no value (JSON null). ConfigError (EUNKNOWNKEY) for a
        name the library does not know."""
        name_b = encode(name, "the figure's name")
        with self._use() as h:
            return _capacity_figure(h, name, name_b)

    def capacity_figures(self) -> Dict[str, Any]:
        """Every capacity figure by name, in the order of the JSON plan's
        ``capacity`` object, as ``capacity_figure`` reads each."""
        names = _capacity_names(self)
        with self._use() as h:
            return {name: _capacity_figure(h, name) for name in names}

    # --- engine figures ---------------------------------------------------------
    def engine_figure(self, name: str) -> Any:
        """A figure the plan's engine profile predicts the engine logs, by
        the name of its field in the JSON plan's ``engine`` object
        (kvshard_plan_engine_figure): "num_gpu_blocks", "max_concurrency",
        "state_dtypes", "max_total_num_tokens", ... An int, float, bool,
        str or list of str by the figure's type; None where it is null.
        ConfigError (EUNKNOWNKEY) for a name the profile has no figure of,
        and for every name under the kvshard profile, which has none."""
        name_b = encode(name, "the figure's name")
        f = _lib.sized(_lib.CFigure)
        lib = _lib.library()
        with self._use() as h:
            rc = lib.kvshard_plan_engine_figure(byref(f), h, name_b)
            if rc == Status.EUNKNOWNKEY:
                c = _lib.sized(_lib.CCapacity)
                _check(lib.kvshard_plan_capacity(byref(c), h))
                engine = _enum_or_int(Engine, c.engine)
                profile = engine.label if isinstance(engine, Engine) else f"engine {engine}"
                raise make_error(rc, f'the {profile} profile has no engine figure "{name}"')
            _check(rc)
            return _figure_value(f, name)

    def engine_figures(self) -> Dict[str, Any]:
        """Every engine figure by name, in the order of the JSON plan's
        ``engine`` object ("name" and "version" first), as
        ``engine_figure`` reads each (kvshard_plan_engine_figure_count and
        kvshard_plan_engine_figure_at); {} under the kvshard profile, whose
        JSON ``engine`` is null."""
        lib = _lib.library()
        figures: Dict[str, Any] = {}
        with self._use() as h:
            for index in range(lib.kvshard_plan_engine_figure_count(h)):
                f = _lib.sized(_lib.CFigure)
                _check(lib.kvshard_plan_engine_figure_at(byref(f), h, index))
                name = (f.name or b"").decode("utf-8", "replace")
                figures[name] = _figure_value(f, name)
        return figures

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

    def _budget(
        self,
        memory: Union[int, float, str],
        plan_rank: Optional[int],
        context_length: int,
        reserved_bytes: Union[int, float, str],
        extra_bytes_per_block: Union[int, float],
    ) -> Tuple[int, _lib.CBudget]:
        """The plan rank (or ALL_RANKS) and the kvshard_budget of a measured
        budget, every argument checked in Python first. Byte sizes take an
        int, a float of bytes (rounded down) or, for the memory and the
        reserved bytes, text with a unit ("20GiB")."""
        for name, value in (("memory", memory), ("reserved_bytes", reserved_bytes)):
            if not isinstance(value, str):
                byte_size(name, value, 0, U64_MAX)
        budget = _lib.sized(_lib.CBudget)
        budget.extra_bytes_per_block = byte_size(
            "extra_bytes_per_block", extra_bytes_per_block, 0, U64_MAX
        )
        budget.context_length = _index("context_length", context_length)
        rank = ALL_RANKS if plan_rank is None else _index("plan_rank", plan_rank)
        if plan_rank is not None:
            self._rank_in_range(rank)
        budget.memory_per_rank = parse_bytes("memory", memory)
        budget.reserved_bytes = parse_bytes("reserved_bytes", reserved_bytes)
        return rank, budget

    @_takes_plan_rank
    def blocks_for(
        self,
        memory: Union[int, float, str],
        plan_rank: Optional[int] = None,
        context_length: int = 0,
        reserved_bytes: Union[int, float, str] = 0,
        extra_bytes_per_block: Union[int, float] = 0,
    ) -> Blocks:
        """Blocks that fit memory an engine measured, without rebuilding the
        plan (kvshard_plan_blocks_for, and the profile's figures at that
        budget, kvshard_plan_blocks_figure).

        ``memory``: bytes the rank gives to cache and state (an int, a
        float of bytes rounded down, or text such as "20GiB" or
        "72.5GiB"); ``plan_rank``: that rank, or None for every rank
        (the minimum, what all ranks allocate); ``context_length``: tokens
        per sequence for the concurrency figures (0: the plan's own
        context_length);
        ``reserved_bytes``: bytes taken off first for the engine's own
        buffers; ``extra_bytes_per_block``: bytes the engine adds to every
        block. Raises PlanError (ENOBLOCK) when not one block fits.
        """
        rank, budget = self._budget(
            memory, plan_rank, context_length, reserved_bytes, extra_bytes_per_block
        )
        out = _lib.sized(_lib.CBlocks)
        err = _lib.CError()
        lib = _lib.library()
        with self._use() as h:
            rc = lib.kvshard_plan_blocks_for(byref(out), h, rank, byref(budget), byref(err))
            _check(rc, err)
            extra = {
                name: _blocks_figure(h, rank, budget, name)
                for name in _PROFILE_FIGURES
                if name != "state_slots"
            }
        return Blocks(
            num_blocks=int(out.num_blocks),
            max_tokens=int(out.max_tokens),
            concurrency=_opt(out.has_concurrency, out.concurrency),
            balanced_max_seqs=_opt(out.has_balanced_max_seqs, out.balanced_max_seqs),
            state_slots=_opt(out.has_state_slots, out.state_slots),
            **extra,
            max_seqs=_opt(out.has_max_seqs, out.max_seqs),
        )

    @_takes_plan_rank
    def blocks_figure(
        self,
        name: str,
        memory: Union[int, float, str],
        plan_rank: Optional[int] = None,
        context_length: int = 0,
        reserved_bytes: Union[int, float, str] = 0,
        extra_bytes_per_block: Union[int, float] = 0,
    ) -> Any:
        """A capacity figure by name, as ``capacity_figure`` names them, at
        a measured budget (kvshard_plan_blocks_figure; the arguments as
        ``blocks_for`` takes them). Errors as ``blocks_for``, and
        ConfigError (EUNKNOWNKEY) for an unknown name."""
        name_b = encode(name, "the figure's name")
        rank, budget = self._budget(
            memory, plan_rank, context_length, reserved_bytes, extra_bytes_per_block
        )
        with self._use() as h:
            return _blocks_figure(h, rank, budget, name, name_b)

    # --- warnings and digests ---------------------------------------------------
    @property
    def warnings(self) -> List[Tuple[WarningCode, str]]:
        """The plan's warnings as (code, message), in the library's order
        (a code this package does not know as an int)."""
        result = []
        with self._use() as h:  # the messages point into the plan: copy them inside
            lib = _lib.library()
            for index in range(lib.kvshard_plan_warning_count(h)):
                code, message = c_int(), c_char_p()
                _check(lib.kvshard_plan_warning(byref(code), byref(message), h, index))
                text = (message.value or b"").decode("utf-8", "replace")
                result.append((_enum_or_int(WarningCode, code.value), text))
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

    @_takes_plan_rank
    def describe_rank(self, plan_rank: int, num_blocks: Optional[int] = None) -> str:
        """One line for an engine's log about plan rank `plan_rank`; with
        ``num_blocks`` (the count agreed over ranks from measured memory)
        the line names those blocks instead of the plan's
        (kvshard_plan_describe_rank_blocks)."""
        r = self._rank(plan_rank)
        if num_blocks is not None:
            blocks = check_uint("num_blocks", num_blocks, 64)
        with self._use() as h:
            lib = _lib.library()
            if num_blocks is None:
                call = lambda buf, cap: lib.kvshard_plan_describe_rank(buf, cap, h, r)  # noqa: E731
            else:
                call = lambda buf, cap: lib.kvshard_plan_describe_rank_blocks(  # noqa: E731
                    buf, cap, h, r, blocks
                )
            need = call(None, 0)
            _check(min(need, 0))
            buf = ctypes.create_string_buffer(need + 1)
            got = call(buf, len(buf))
            _check(min(got, 0))
        return buf.value.decode("utf-8", "replace")

    # --- buffer shapes ------------------------------------------------------------
    @property
    def kv_cache_dtype(self) -> Dtype:
        """The dtype the KV cache is sized in: the kv_cache_dtype option, or
        for ``auto`` the model's (kvshard_plan_kv_cache_dtype)."""
        return Dtype(self._query("kvshard_plan_kv_cache_dtype"))

    @_takes_plan_rank
    def layer_kv_geometry(self, plan_rank: int, layer: int) -> KvGeometry:
        """The KV geometry of `layer` (decoder layers, then draft layers) on
        plan rank `plan_rank`: heads, head dims, latent and index dims, dtype
        (kvshard_plan_layer_kv_geometry)."""
        r, i = _index("plan_rank", plan_rank), _index("layer", layer)
        r, i = self._rank_in_range(r), self._layer_in_range(i, drafts=True)
        out = _lib.sized(_lib.CLayerKvGeometry)
        err = _lib.CError()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_kv_geometry(byref(out), h, r, i, byref(err)),
                   err)
        return KvGeometry(
            kind=LayerKind(out.kind),
            attention=Attention(out.attention),
            has_kv=bool(out.has_kv),
            dtype=Dtype(out.dtype),
            element_bytes=int(out.element_bytes),
            kv_head_first=int(out.kv_head_first),
            kv_heads=int(out.kv_heads),
            total_kv_heads=int(out.total_kv_heads),
            k_head_dim=int(out.k_head_dim),
            v_head_dim=int(out.v_head_dim),
            kv_lora_rank=int(out.kv_lora_rank),
            qk_rope_head_dim=int(out.qk_rope_head_dim),
            latent_dim=int(out.latent_dim),
            index_head_dim=int(out.index_head_dim),
            scale_dtype=Dtype(out.scale_dtype),
            scale_bytes_per_token=int(out.scale_bytes_per_token),
            rope_element_bytes=int(out.rope_element_bytes),
            index_element_bytes=int(out.index_element_bytes),
        )

    @_takes_plan_rank
    def layer_state_shapes(self, plan_rank: int, layer: int) -> List[StateTensor]:
        """The tensors `layer` keeps for one sequence on plan rank
        `plan_rank`: its recurrent state and its window; their bytes add up
        to the layer's ``state_bytes_per_seq``. Empty for a layer that keeps
        nothing a sequence or of another stage
        (kvshard_plan_layer_state_shapes)."""
        r, i = _index("plan_rank", plan_rank), _index("layer", layer)
        r, i = self._rank_in_range(r), self._layer_in_range(i, drafts=True)
        cap = _lib.MAX_STATE_TENSORS
        out = (_lib.CStateTensor * cap)()
        for t in out:
            t.size = ctypes.sizeof(_lib.CStateTensor)
        count = c_size_t()
        err = _lib.CError()
        with self._use() as h:
            _check(_lib.library().kvshard_plan_layer_state_shapes(
                out, cap, byref(count), h, r, i, byref(err)), err)
        return [
            StateTensor(
                name=(t.name or b"").decode("ascii"),
                dtype=Dtype(t.dtype),
                dims=tuple(int(d) for d in t.dims[: t.ndim]),
                bytes=int(t.bytes),
            )
            for t in out[: min(count.value, cap)]
        ]

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
                return _write("kvshard_report_write_html", h, None, None)
        with self._use() as h, comparison._use() as cmp_h:
            return _write("kvshard_report_write_html", h, cmp_h, None)

    def __repr__(self) -> str:
        if self.closed:
            return "<kvshard.Plan closed>"
        stages = f"P={self.pp_size} " if self._sizes[3] > 1 else ""
        return (
            f"<kvshard.Plan {stages}T={self.attn_tp_size} S_eff={self.effective_split_size} "
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
    with model._use() as h, opts._passed() as c:
        rc, out, err = _new_handle(_lib.library().kvshard_plan_create, h, byref(c), None)
        _check(rc, err)
        # A copy of the settings the plan read, for Plan.options, made
        # while their gate still holds off any change.
        return _plan_with_settings(out, c.settings, weights=_weights_of(c))


# ---------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ComparisonRow:
    """One split size under one ownership rule, at one pp_size
    (kvshard_comparison_row). Byte figures in bytes; None where the C row's
    ``has_*`` is false."""

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
    #: The row's pipeline stages, and its attention TP size T (several of
    #: each when the options sweep pp_size).
    pp_size: int
    attn_tp_size: int
    #: Its plan's communication estimate when the deployment has comm
    #: inputs and the row is not an error; its gain is against the S = 1
    #: row of its pp_size.
    comm: Optional[FitComm] = None
    #: Whether the comparison was given comm inputs (then its JSON rows
    #: carry ``comm``, null for an error row).
    priced: bool = False

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
        del d["priced"]
        if not self.priced:
            del d["comm"]
        return d


def _row(c: _lib.CComparisonRow, priced: bool = False) -> ComparisonRow:
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
        pp_size=int(c.pp_size),
        attn_tp_size=int(c.attn_tp_size),
        comm=comm_of(ctypes.cast(c.comm, POINTER(_lib.CCommEstimate)).contents),
        priced=priced,
    )


class Comparison(_Handle):
    """Plans for every split size dividing T, under each ownership rule, at
    the options' pp_size or, with ``sweep_pp``, at every pp_size that
    divides world_size / (dp_size x cp_size) and can cut the layers.

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
            rows: Tuple[ComparisonRow, ...] = copy_rows(
                ptr, lib.kvshard_comparison_row_count, lib.kvshard_comparison_row_at, _row,
                "comparison")
            # A priced comparison's error rows have no estimate, like
            # every row of an unpriced one: any priced row says which.
            priced = any(r.comm is not None for r in rows)
            self._rows = tuple(replace(r, priced=priced) for r in rows) if priced else rows
            self._recommended = int(lib.kvshard_comparison_recommended(ptr))
            self._rank_by = (
                "throughput" if lib.kvshard_comparison_rank_by(ptr) == 2 else "capacity")
        except BaseException:
            self.close()
            raise

    @property
    def rows(self) -> Tuple[ComparisonRow, ...]:
        """Rows by split size, then ordinal, global, contiguous (by
        pp_size first when the options sweep it)."""
        return self._rows

    @property
    def rank_by(self) -> str:
        """How the recommended row was chosen: "capacity", or "throughput"
        (the communication estimate's, when the deployment's comm inputs
        give one)."""
        return self._rank_by

    @property
    def recommended_index(self) -> int:
        """Index of the recommended row in ``rows``."""
        return self._recommended

    @property
    def recommended(self) -> ComparisonRow:
        """The recommended row: with a context length and memory the most
        balanced_max_seqs, then the most blocks; otherwise the most blocks
        (without memory, the fewest bytes per block); ties to the smaller
        split size, then ordinal, global, contiguous. Its ``pp_size`` and
        ``attn_tp_size`` say at which stages it is (the sweep's choice
        with ``sweep_pp``)."""
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
        stages = f"P={r.pp_size} " if r and any(x.pp_size > 1 for x in self._rows) else ""
        rec = (
            f" recommended {stages}S={r.layerwise_split_size} {r.ownership.name.lower()}"
            if r
            else ""
        )
        return f"<kvshard.Comparison {len(self._rows)} rows{rec}>"


def compare(
    model: Union[Model, Deployment],
    options: Optional[Options] = None,
    /,
    *,
    rank: str = "auto",
    **fields: Any,
) -> Comparison:
    """Compare every split size dividing T under each ownership rule
    (kvshard_comparison_create; the split fields of the options are
    ignored), at the options' pp_size, or with ``sweep_pp=True`` at every
    pp_size that divides world_size / (dp_size x cp_size) and can cut the
    layers (PlanError, EPARTITION, with a pp_partition, which fixes
    pp_size). A Deployment compares with its own options, ``rank`` as
    :meth:`Deployment.compare`'s; a Model has no comm inputs, so it ranks
    by capacity ("throughput" is refused). The caller owns the returned
    Comparison."""
    if isinstance(model, Deployment):
        if options is not None or fields:
            raise TypeError("a Deployment compares with its own options: use deployment.set()")
        return model.compare(rank=rank)
    if not isinstance(model, Model):
        raise TypeError(f"model must be a kvshard.Model or Deployment, not {type(model).__name__}")
    opts = _options_arg(options, **fields)
    co = _lib.sized(_lib.CCompareOptions)
    co.sweep_pp = opts.sweep_pp
    co.rank_by = rank_code(rank)
    with model._use() as h, opts._passed() as c:
        rc, out, err = _new_handle(
            _lib.library().kvshard_comparison_create, h, byref(c), byref(co), None
        )
    _check(rc, err)
    return Comparison(out)
