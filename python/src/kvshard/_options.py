"""``Options``: the deployment options of kvshard_options, from Python.

Defaults are KVSHARD_OPTIONS_INIT's: values the engine profile decides are
"unset" (block_size 0, max_seqs 0, ownership DEFAULT) and a plan settles them
(``Plan.options`` returns the settled values). The fields, their C types,
defaults and ranges come from the option table (``_optiontable``).
"""

from __future__ import annotations

import ctypes
import operator
from typing import TYPE_CHECKING, Any, Dict, Iterator, NoReturn, Optional, Tuple, Union

from . import _lib
from ._errors import make_error
from ._optiontable import OPTIONS, Kind, Spec, native, override_text, spec_for_key

if TYPE_CHECKING:
    from ._enums import Dtype, Engine, Ownership

__all__ = ["Options", "DEFAULT_ORIGIN"]

#: The ``origin`` the binding passes to kvshard_options_set and
#: kvshard_deployment_set: errors about such a value name it as their source.
DEFAULT_ORIGIN = "python"

OptionValue = Union[str, int, float, bool]


def check_uint(name: str, value: Any, bits: int) -> int:
    """`value` as a Python int in 0..2**bits-1; TypeError for a non-integer
    (bool included), ValueError when out of range."""
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, not {type(value).__name__}") from None
    if v < 0 or v >= 1 << bits:
        raise ValueError(f"{name} must be between 0 and {(1 << bits) - 1}, not {v}")
    return v


def encode(value: str, name: str) -> bytes:
    """UTF-8 bytes of a str passed as a C string; ValueError on a NUL."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {type(value).__name__}")
    data = value.encode("utf-8")
    if b"\0" in data:
        raise ValueError(f"{name} must not contain a NUL character")
    return data


def raise_error(rc: int, err: Optional[_lib.CError]) -> NoReturn:
    """Raise the exception of a failed call from its kvshard_error."""
    if err is not None and err.code != 0:
        raise make_error(
            err.code,
            err.message.decode("utf-8", "replace"),
            err.source.decode("utf-8", "replace"),
            err.line,
            err.column,
            err.offset,
        )
    raise make_error(rc)


def set_text(options: _lib.COptions, key: str, text: str, origin: str) -> None:
    """kvshard_options_set on a COptions: the library parses the text."""
    key_b = encode(key, "the option name")
    value_b = encode(text, f"the value of {key}")
    origin_b = encode(origin, "origin")
    err = _lib.CError()
    lib = _lib.library()
    rc = lib.kvshard_options_set(ctypes.byref(options), key_b, value_b, origin_b, ctypes.byref(err))
    if rc != 0:
        raise_error(rc, err)


def parse_bytes(name: str, value: Union[int, str]) -> int:
    """A byte count: an int, or text with an optional KiB/MiB/GiB/TiB suffix
    read by the library's own size parser (as memory_per_rank)."""
    if isinstance(value, str):
        scratch = _lib.options_init()
        set_text(scratch, "memory_per_rank", value, name)
        return int(scratch.memory_per_rank)
    return check_uint(name, value, 64)


class _Field:
    """A descriptor over one field of the COptions an Options holds, made
    from the option's row of the table."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.name = spec.name
        self.__doc__ = spec.doc

    def __get__(self, obj: Optional["Options"], objtype: Any = None) -> Any:
        if obj is None:
            return self
        raw = getattr(obj._c, self.name)
        kind = self.spec.kind
        if kind is Kind.BOOL:
            return bool(raw)
        if kind is Kind.ENUM:
            assert self.spec.enum is not None
            return self.spec.enum(raw)
        if kind is Kind.FRACTION:
            return float(raw)
        return int(raw)

    def __set__(self, obj: "Options", value: Any) -> None:
        if isinstance(value, str):
            set_text(obj._c, self.name, value, DEFAULT_ORIGIN)
        else:
            setattr(obj._c, self.name, self.check(value))

    def check(self, value: Any) -> Any:
        """A native value as the C field holds it; TypeError or ValueError
        outside the range a caller's struct may hold."""
        return native(self.spec, value, in_struct=True)


class Options:
    """The options of one plan: parallel sizes, cache settings and the
    engine profile's inputs (a mirror of ``kvshard_options``).

    Every field is a keyword argument and an attribute. A value is either
    native or a str. A native value is checked in Python with the library's
    own ranges, before any C call: an integer option takes an int (not a
    bool, not a float), a byte size an int or a whole float, a boolean a
    bool, an enum its member or value, a fraction a float above 0 and at
    most 1; a wrong type is a ``TypeError``, a value out of range a
    ``ValueError``. 0 is accepted where the C struct reads it as "unset"
    (block_size, max_seqs, context_length, the byte sizes), and
    ``Ownership.DEFAULT`` for ownership. A str is parsed by the library as a
    command-line flag would be (``memory_per_rank="20GiB"``,
    ``ownership="global"``, ``kv_cache_dtype="fp8"``,
    ``enable_layerwise_split="true"``); a str it refuses raises a
    :class:`~kvshard.ConfigError` whose source is "python".

    Units: sizes in bytes (``memory_per_rank``, ``device_memory_total``,
    ``device_memory_free``, ``max_cache_size``), lengths in tokens
    (``block_size``, ``context_length``). 0 means "unset" where the C struct
    says so (block_size, max_seqs: the profile's default; memory_per_rank:
    no capacity; context_length: no concurrency figures).

    An Options owns its data (a plain C struct inside, no library handle);
    the functions it is passed to copy it. It has no lock: do not change one
    while another thread passes it to a call.
    """

    __slots__ = ("_c",)

    #: The option names, in the C struct's order.
    FIELDS: Tuple[str, ...] = tuple(spec.name for spec in OPTIONS)

    if TYPE_CHECKING:  # for type checkers; the attributes are the table's _Field
        world_size: int
        dp_size: int
        cp_size: int
        enable_layerwise_split: bool
        layerwise_split_size: int
        ownership: Ownership
        is_draft: bool
        engine: Engine
        kv_cache_dtype: Dtype
        state_dtype: Dtype
        block_size: int
        memory_per_rank: int
        max_seqs: int
        num_speculative_tokens: int
        scratch_layers: int
        context_length: int
        enable_prefix_cache: bool
        max_linear_state_cache_slots: int
        device_memory_total: int
        device_memory_free: int
        max_memory_utilization: float
        max_cache_size: int

    def __init__(self, **fields: Any) -> None:
        self._c = _lib.options_init()
        unknown = [k for k in fields if k not in self.FIELDS]
        if unknown:
            raise TypeError(
                f"Options() got unknown option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; known: {', '.join(self.FIELDS)}"
            )
        # Check every native value before the first library call.
        for key, value in fields.items():
            if not isinstance(value, str):
                getattr(type(self), key).check(value)
        for key, value in fields.items():
            setattr(self, key, value)

    @classmethod
    def _from_c(cls, c: _lib.COptions) -> "Options":
        o = cls.__new__(cls)
        o._c = _lib.options_init()
        ctypes.memmove(ctypes.byref(o._c), ctypes.byref(c), ctypes.sizeof(_lib.COptions))
        o._c.size = ctypes.sizeof(_lib.COptions)
        return o

    def set(self, key: str, value: OptionValue, origin: str = DEFAULT_ORIGIN) -> None:
        """Set one option by its deployment key name as a flag would,
        through kvshard_options_set: booleans take true/false/1/0/yes/no,
        sizes take bytes or a KiB/MiB/GiB/TiB suffix, and an engine's flag
        name (max_seqs_per_batch under xllm) is a key too. A native value is
        checked in Python with the range of text (so 0 is refused where the
        library refuses "0", ``ValueError``), then sent as the text the
        library reads as exactly that value (True -> "true", 4 -> "4",
        Dtype.BF16 -> "bf16", 1e-05 -> "0.00001"); a fraction that no text
        the library reads carries exactly (2/3) is stored as the double.
        ``origin`` names the value's source in errors. On failure the
        options are unchanged and a :class:`~kvshard.KvshardError` is raised
        (ConfigError for an unknown key or text the library refuses)."""
        if not isinstance(key, str):
            raise TypeError(f"the option name must be a str, not {type(key).__name__}")
        text, exact = override_text(key, value)
        encode(origin, "origin")
        spec = spec_for_key(key)
        if exact is not None and spec is not None and spec.name == key:
            # Whatever the engine, the key names the field itself.
            setattr(self._c, spec.name, exact)
            return
        set_text(self._c, key, text, origin)

    def copy(self) -> "Options":
        """An independent copy."""
        return Options._from_c(self._c)

    def to_dict(self) -> Dict[str, Any]:
        """Every field and its value, in the C struct's order."""
        return {name: getattr(self, name) for name in self.FIELDS}

    def __iter__(self) -> Iterator[Tuple[str, Any]]:
        return iter(self.to_dict().items())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Options):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        default = Options()
        changed = [
            f"{name}={value!r}" for name, value in self if getattr(default, name) != value
        ]
        return f"Options({', '.join(changed)})"


for _spec in OPTIONS:
    setattr(Options, _spec.name, _Field(_spec))
del _spec
