"""``Options``: the deployment options of kvshard_options, from Python.

Defaults are KVSHARD_OPTIONS_INIT's: values the engine profile decides are
"unset" (block_size 0, max_seqs 0, ownership DEFAULT) and a plan settles them
(``Plan.options`` returns the settled values).
"""

from __future__ import annotations

import ctypes
import math
import operator
from typing import Any, Dict, Generic, Iterator, Optional, Tuple, Type, TypeVar, Union, overload

from . import _lib
from ._enums import Dtype, Engine, Ownership
from ._errors import make_error

__all__ = ["Options", "DEFAULT_ORIGIN"]

#: The ``origin`` the binding passes to kvshard_options_set and
#: kvshard_deployment_set: errors about such a value name it as their source.
DEFAULT_ORIGIN = "python"

OptionValue = Union[str, int, float, bool]

T = TypeVar("T")


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


def option_text(key: str, value: Any) -> str:
    """The text form of an option value, as a command-line flag holds it.
    bool: "true"/"false"; an enum member: the library's name for it (the
    dtype names the option parser takes: bf16, fp16, ...); int: decimal;
    float: repr; str: itself."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Dtype):
        return _DTYPE_OPTION_TEXT[value]
    if isinstance(value, (Ownership, Engine)):
        return value.label
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{key} must be a finite number, not {value!r}")
        return repr(value)
    if isinstance(value, int):
        return str(value)
    raise TypeError(
        f"the value of {key} must be a str, int, float or bool, not {type(value).__name__}"
    )


_DTYPE_OPTION_TEXT = {
    Dtype.AUTO: "auto",
    Dtype.BF16: "bf16",
    Dtype.FP16: "fp16",
    Dtype.FP8: "fp8",
    Dtype.FP32: "fp32",
    Dtype.INT8: "int8",
}


def raise_error(rc: int, err: Optional[_lib.CError]) -> None:
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


def set_text(options: _lib.COptions, key: str, value: Any, origin: str) -> None:
    """kvshard_options_set on a COptions: the library parses the text."""
    key_b = encode(key, "the option name")
    value_b = encode(option_text(key, value), f"the value of {key}")
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


class _Field(Generic[T]):
    """A descriptor over one field of the COptions an Options holds."""

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, objtype: Any = None) -> "_Field[T]": ...
    @overload
    def __get__(self, obj: "Options", objtype: Any = None) -> T: ...

    def __get__(self, obj: Optional["Options"], objtype: Any = None) -> Any:
        if obj is None:
            return self
        return self.read(getattr(obj._c, self.name))

    def __set__(self, obj: "Options", value: Any) -> None:
        if isinstance(value, str):
            set_text(obj._c, self.name, value, DEFAULT_ORIGIN)
        else:
            setattr(obj._c, self.name, self.check(value))

    def read(self, raw: Any) -> T:
        return raw  # type: ignore[no-any-return]

    def check(self, value: Any) -> Any:
        raise NotImplementedError


class _UInt(_Field[int]):
    def __init__(self, doc: str, bits: int = 32) -> None:
        super().__init__(doc)
        self.bits = bits

    def read(self, raw: Any) -> int:
        return int(raw)

    def check(self, value: Any) -> int:
        return check_uint(self.name, value, self.bits)


class _Bool(_Field[bool]):
    def read(self, raw: Any) -> bool:
        return bool(raw)

    def check(self, value: Any) -> bool:
        if not isinstance(value, bool):
            raise TypeError(f"{self.name} must be a bool, not {type(value).__name__}")
        return value


class _Float(_Field[float]):
    def read(self, raw: Any) -> float:
        return float(raw)

    def check(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{self.name} must be a float, not {type(value).__name__}")
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"{self.name} must be a finite number, not {value!r}")
        return v


E = TypeVar("E", Ownership, Engine, Dtype)


class _Enum(_Field[E]):
    def __init__(self, doc: str, enum_type: Type[E]) -> None:
        super().__init__(doc)
        self.enum_type = enum_type

    def read(self, raw: Any) -> E:
        return self.enum_type(raw)

    def check(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"{self.name} must be a {self.enum_type.__name__} or its name, "
                f"not {type(value).__name__}"
            )
        try:
            return int(self.enum_type(value))
        except ValueError:
            raise ValueError(f"{value!r} is not a {self.enum_type.__name__}") from None


class Options:
    """The options of one plan: parallel sizes, cache settings and the
    engine profile's inputs (a mirror of ``kvshard_options``).

    Every field is a keyword argument and an attribute. A value is either
    native (int, bool, float or the enum member; checked in Python, so a
    wrong type is a ``TypeError`` and a negative or too large number a
    ``ValueError``) or a str, which the library parses as a command-line
    flag would (``memory_per_rank="20GiB"``, ``ownership="global"``,
    ``kv_cache_dtype="fp8"``, ``enable_layerwise_split="true"``); a str it
    refuses raises a :class:`~kvshard.ConfigError` whose source is
    "python".

    Units: sizes in bytes (``memory_per_rank``, ``device_memory_total``,
    ``device_memory_free``, ``max_cache_size``), lengths in tokens
    (``block_size``, ``context_length``). 0 means "unset" where the C struct
    says so (block_size, max_seqs: the profile's default; memory_per_rank:
    no capacity; context_length: no concurrency figures).

    An Options owns its data (a plain C struct inside, no library handle);
    the functions it is passed to copy it.
    """

    __slots__ = ("_c",)

    world_size = _UInt("All ranks; default 1.")
    dp_size = _UInt("Data-parallel size; default 1.")
    cp_size = _UInt("Context-parallel size; default 1.")
    enable_layerwise_split = _Bool("Whether layerwise split is on; default False.")
    layerwise_split_size = _UInt("S, the split size; default 1.")
    ownership = _Enum("How a split group shares the KV layers; default: the profile's.", Ownership)
    is_draft = _Bool("The plan is for a draft model (never split); default False.")
    engine = _Enum("Whose capacity model sizes blocks and state; default KVSHARD.", Engine)
    kv_cache_dtype = _Enum("KV cache element type; AUTO follows the model.", Dtype)
    state_dtype = _Enum("Recurrent state element type; AUTO: the model's.", Dtype)
    block_size = _UInt("Tokens per KV block; 0: the profile's (16, xllm 128).")
    memory_per_rank = _UInt("Bytes per rank for KV cache and state; 0: no capacity.", 64)
    max_seqs = _UInt("Sequences the engine runs at once; 0: the profile's (256, xllm 200).")
    num_speculative_tokens = _UInt("Draft tokens per step; default 0.")
    scratch_layers = _UInt("KV layers of scratch while split; default 1.")
    context_length = _UInt("Tokens per sequence for the concurrency figures; 0: none.")
    enable_prefix_cache = _Bool("xllm profile: prefix cache on; default True.")
    max_linear_state_cache_slots = _UInt("xllm profile: state slots; 0: automatic.")
    device_memory_total = _UInt("xllm profile: bytes per device.", 64)
    device_memory_free = _UInt("xllm profile: bytes free after the weights.", 64)
    max_memory_utilization = _Float("xllm profile: share of the device in (0, 1]; default 0.8.")
    max_cache_size = _UInt("xllm profile: cap on the budget in bytes; 0: none.", 64)

    FIELDS: Tuple[str, ...] = (
        "world_size",
        "dp_size",
        "cp_size",
        "enable_layerwise_split",
        "layerwise_split_size",
        "ownership",
        "is_draft",
        "engine",
        "kv_cache_dtype",
        "state_dtype",
        "block_size",
        "memory_per_rank",
        "max_seqs",
        "num_speculative_tokens",
        "scratch_layers",
        "context_length",
        "enable_prefix_cache",
        "max_linear_state_cache_slots",
        "device_memory_total",
        "device_memory_free",
        "max_memory_utilization",
        "max_cache_size",
    )

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
        """Set one option by its deployment key name from text, through
        kvshard_options_set: booleans take true/false/1/0/yes/no, sizes take
        bytes or a KiB/MiB/GiB/TiB suffix. A non-str value is turned into
        text first (True -> "true", 4 -> "4", Dtype.BF16 -> "bf16").
        ``origin`` names the value's source in errors. On failure the
        options are unchanged and a :class:`~kvshard.KvshardError` is raised
        (ConfigError for an unknown key, a wrong type or a value out of
        range)."""
        if not isinstance(key, str):
            raise TypeError(f"the option name must be a str, not {type(key).__name__}")
        set_text(self._c, key, value, origin)

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
