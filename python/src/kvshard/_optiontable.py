"""The deployment options, one row each: the binding's copy of the option
table of the C library (src/deploy/options.c: names, kinds, ranges and enum
words) in the field order of ``struct kvshard_options`` (kvshard.h).

Everything the binding does with an option is read from this table: the
ctypes layout of kvshard_options and its defaults (KVSHARD_OPTIONS_INIT), the
attributes of ``Options``, and the checks every value passes before any C
call. A field added to, removed from or moved in the C struct is one row
here; a new kind of value is one ``Kind`` and its case in the functions
below. This module needs neither the library nor ctypes' loader.
"""

from __future__ import annotations

import enum
import math
import numbers
import operator
from ctypes import c_bool, c_double, c_int, c_uint32, c_uint64
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Dict, Optional, Tuple, Type

from ._enums import Dtype, Engine, Ownership

__all__ = [
    "Kind",
    "Spec",
    "OPTIONS",
    "BY_NAME",
    "ENGINE_FLAGS",
    "spec_for_key",
    "native",
    "text_of",
    "override_text",
    "fraction_text",
    "fraction_stand_in",
]


class Kind(enum.Enum):
    """How the library reads an option; the value is the C field's type."""

    INTEGER = c_uint32  # a count or a length: an int, never a bool or a float
    BYTES = c_uint64  # a byte count: an int, a whole float or text with a unit
    BOOL = c_bool  # a bool, never an int
    ENUM = c_int  # a C enum: its member, its value or one of its words
    FRACTION = c_double  # a share above `low` and at most `high`


@dataclass(frozen=True)
class Spec:
    """One option. ``low``..``high`` is the range the library accepts as
    text (a flag, an override, a deployment file); a caller's struct may
    also hold 0 when ``unset_ok`` ("unset", or "none"), and an enum the
    ``unset`` value no word names (ownership DEFAULT). ``words`` are the
    enum's words as the library reads them; the first word of a value is
    the one the binding sends."""

    name: str
    kind: Kind
    default: Any
    doc: str
    low: int = 0
    high: int = 0
    unset_ok: bool = False
    enum: Optional[Type[enum.IntEnum]] = None
    words: Tuple[Tuple[str, int], ...] = ()
    unset: Optional[int] = None


MAX_RANKS = 65536  # KVSHARD_MAX_RANKS
MAX_BLOCK_SIZE = 1 << 20  # KVSHARD_MAX_BLOCK_SIZE
MAX_CONTEXT_LENGTH = 1 << 30  # KVSHARD_MAX_CONTEXT_LENGTH
U64_MAX = (1 << 64) - 1

_OWNERSHIP_WORDS = (
    ("ordinal", Ownership.ORDINAL),
    ("global", Ownership.GLOBAL),
    ("contiguous", Ownership.CONTIGUOUS),
)
_ENGINE_WORDS = (("kvshard", Engine.KVSHARD), ("xllm", Engine.XLLM))
_KV_DTYPE_WORDS = (
    ("auto", Dtype.AUTO),
    ("bf16", Dtype.BF16),
    ("bfloat16", Dtype.BF16),
    ("fp16", Dtype.FP16),
    ("float16", Dtype.FP16),
    ("fp8", Dtype.FP8),
    ("fp8_e4m3", Dtype.FP8),
    ("fp8_e5m2", Dtype.FP8),
    ("int8", Dtype.INT8),
)
_STATE_DTYPE_WORDS = (
    ("auto", Dtype.AUTO),
    ("bf16", Dtype.BF16),
    ("bfloat16", Dtype.BF16),
    ("fp16", Dtype.FP16),
    ("float16", Dtype.FP16),
    ("fp32", Dtype.FP32),
    ("float32", Dtype.FP32),
)

I, B, F, E, Q = Kind.INTEGER, Kind.BYTES, Kind.BOOL, Kind.ENUM, Kind.FRACTION

#: Every option, in the order of the fields of struct kvshard_options.
OPTIONS: Tuple[Spec, ...] = (
    Spec("world_size", I, 1, "All ranks; default 1.", 1, MAX_RANKS),
    Spec("dp_size", I, 1, "Data-parallel size; default 1.", 1, MAX_RANKS),
    Spec("cp_size", I, 1, "Context-parallel size; default 1.", 1, MAX_RANKS),
    Spec("enable_layerwise_split", F, False, "Whether layerwise split is on; default False."),
    Spec("layerwise_split_size", I, 1, "S, the split size; default 1.", 1, MAX_RANKS),
    Spec(
        "ownership",
        E,
        Ownership.DEFAULT,
        "How a split group shares the KV layers; default: the profile's.",
        enum=Ownership,
        words=_OWNERSHIP_WORDS,
        unset=Ownership.DEFAULT,
    ),
    Spec("is_draft", F, False, "The plan is for a draft model (never split); default False."),
    Spec(
        "engine",
        E,
        Engine.KVSHARD,
        "Whose capacity model sizes blocks and state; default KVSHARD.",
        enum=Engine,
        words=_ENGINE_WORDS,
    ),
    Spec(
        "kv_cache_dtype",
        E,
        Dtype.AUTO,
        "KV cache element type; AUTO follows the model.",
        enum=Dtype,
        words=_KV_DTYPE_WORDS,
    ),
    Spec(
        "state_dtype",
        E,
        Dtype.AUTO,
        "Recurrent state element type; AUTO: the model's.",
        enum=Dtype,
        words=_STATE_DTYPE_WORDS,
    ),
    Spec(
        "block_size",
        I,
        0,
        "Tokens per KV block; 0: the profile's (16, xllm 128).",
        1,
        MAX_BLOCK_SIZE,
        unset_ok=True,
    ),
    Spec(
        "memory_per_rank",
        B,
        0,
        "Bytes per rank for KV cache and state; 0: no capacity.",
        1,
        U64_MAX,
        unset_ok=True,
    ),
    Spec(
        "max_seqs",
        I,
        0,
        "Sequences the engine runs at once; 0: the profile's (256, xllm 200).",
        1,
        1 << 24,
        unset_ok=True,
    ),
    Spec("num_speculative_tokens", I, 0, "Draft tokens per step; default 0.", 0, 1024),
    Spec("scratch_layers", I, 1, "KV layers of scratch while split; default 1.", 0, 1024),
    Spec(
        "context_length",
        I,
        0,
        "Tokens per sequence for the concurrency figures; 0: none.",
        1,
        MAX_CONTEXT_LENGTH,
        unset_ok=True,
    ),
    Spec("enable_prefix_cache", F, True, "xllm profile: prefix cache on; default True."),
    Spec(
        "max_linear_state_cache_slots",
        I,
        0,
        "xllm profile: state slots; 0: automatic.",
        0,
        1 << 24,
    ),
    Spec(
        "device_memory_total", B, 0, "xllm profile: bytes per device.", 1, U64_MAX, unset_ok=True
    ),
    Spec(
        "device_memory_free",
        B,
        0,
        "xllm profile: bytes free after the weights.",
        1,
        U64_MAX,
        unset_ok=True,
    ),
    Spec(
        "max_memory_utilization",
        Q,
        0.8,
        "xllm profile: share of the device in (0, 1]; default 0.8.",
        0,
        1,
    ),
    Spec(
        "max_cache_size",
        B,
        0,
        "xllm profile: cap on the budget in bytes; 0: none.",
        0,
        U64_MAX,
        unset_ok=True,
    ),
)

del I, B, F, E, Q

BY_NAME: Dict[str, Spec] = {spec.name: spec for spec in OPTIONS}

#: Flag names an engine profile accepts for an option: name -> (the engine
#: under which the library takes it, the option it sets).
ENGINE_FLAGS: Dict[str, Tuple[Engine, str]] = {
    "max_seqs_per_batch": (Engine.XLLM, "max_seqs"),
}


def spec_for_key(key: str) -> Optional[Spec]:
    """The option a deployment key names (an engine's flag name too); None
    for a key the table does not hold, which the library then refuses."""
    spec = BY_NAME.get(key)
    if spec is None and key in ENGINE_FLAGS:
        spec = BY_NAME[ENGINE_FLAGS[key][1]]
    return spec


# ---------------------------------------------------------------------------
# Checks: TypeError for a value of the wrong type, ValueError for one out of
# range, both before any C call.
# ---------------------------------------------------------------------------


def _type_name(value: Any) -> str:
    return type(value).__name__


def _integer(name: str, value: Any, what: str) -> int:
    if isinstance(value, (bool, float, enum.Enum)):
        raise TypeError(f"{name} must be {what}, not {_type_name(value)}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {what}, not {_type_name(value)}") from None


def _in_range(spec: Spec, name: str, v: int, in_struct: bool, unit: str) -> int:
    if in_struct and spec.unset_ok and v == 0:
        return v
    if spec.low <= v <= spec.high:
        return v
    unset = " (or 0 for unset)" if in_struct and spec.unset_ok else ""
    raise ValueError(
        f"{name} must be {unit} from {spec.low} to {spec.high}{unset}, not {v}"
    )


def _bytes(name: str, value: Any) -> int:
    # A float counts whole bytes only: 20e9 is 20000000000, 1.5 is refused
    # rather than rounded, so a byte figure never changes on the way in.
    if isinstance(value, float):
        if not math.isfinite(value) or value != math.floor(value):
            raise ValueError(f"{name} must be a whole number of bytes, not {value!r}")
        return int(value)
    return _integer(name, value, "an int, a whole float or a str such as '24GiB'")


def _enum_value(spec: Spec, name: str, value: Any, in_struct: bool) -> int:
    assert spec.enum is not None
    kind = spec.enum.__name__
    a_kind = ("an " if kind[0] in "AEIOU" else "a ") + kind
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {a_kind} or one of its words, not {_type_name(value)}")
    if isinstance(value, enum.Enum) and not isinstance(value, spec.enum):
        raise TypeError(f"{name} must be {a_kind}, not {type(value).__name__}.{value.name}")
    allowed = {int(v) for _, v in spec.words}
    if in_struct and spec.unset is not None:
        allowed.add(int(spec.unset))
    if int(value) not in allowed:
        names = ", ".join(dict.fromkeys(spec.enum(v).name for v in sorted(allowed)))
        shown = f"{kind}.{value.name}" if isinstance(value, enum.Enum) else repr(value)
        raise ValueError(f"{name} must be one of {kind}.{{{names}}}, not {shown}")
    return int(spec.enum(int(value)))


def _fraction(spec: Spec, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float, not {_type_name(value)}")
    v = float(value)
    if not spec.low < v <= spec.high:  # NaN fails both comparisons
        raise ValueError(
            f"{name} must be above {spec.low} and at most {spec.high}, not {value!r}"
        )
    return v


def native(spec: Spec, value: Any, in_struct: bool, name: Optional[str] = None) -> Any:
    """Check a value given as a Python object (not a str) for `spec` and
    return what the C field holds: an int, a bool, an enum's int or a float.
    ``in_struct``: the range of a caller's kvshard_options (which may hold
    "unset"); otherwise the range of text. ``name``: the key the caller
    wrote, for messages (an engine's flag name; default the option's)."""
    name = name or spec.name
    if spec.kind is Kind.INTEGER:
        return _in_range(spec, name, _integer(name, value, "an int"), in_struct, "an integer")
    if spec.kind is Kind.BYTES:
        return _in_range(spec, name, _bytes(name, value), in_struct, "a byte count")
    if spec.kind is Kind.BOOL:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, not {_type_name(value)}")
        return value
    if spec.kind is Kind.ENUM:
        return _enum_value(spec, name, value, in_struct)
    return _fraction(spec, name, value)


# ---------------------------------------------------------------------------
# Text: what the binding sends to kvshard_options_set / kvshard_deployment_set.
# ---------------------------------------------------------------------------

#: The library's fraction grammar (kvshard__scan_decimal): digits with at
#: most one point, no sign, no exponent, at most this many digits in all.
FRACTION_DIGITS = 15


def _scanned(text: str) -> Optional[float]:
    """The double the library reads from `text`: its digits as one integer
    over a power of ten, one correctly rounded division (both exact below
    16 digits, so Python's int division gives the same double)."""
    digits = text.replace(".", "", 1)
    if not digits.isdigit() or not digits.isascii() or len(digits) > FRACTION_DIGITS:
        return None
    scale = 10 ** (len(text) - 1 - text.index(".")) if "." in text else 1
    return int(digits) / scale


def fraction_text(x: float) -> Optional[str]:
    """The shortest plain decimal the library reads as exactly `x`: the
    shortest round-trip digits in positional notation (1e-05 is "0.00001"),
    without the leading zero when that saves the fifteenth digit. None when
    it needs more digits than the library reads (2/3 needs 16)."""
    plain = format(Decimal(repr(x)), "f")
    for text in (plain, plain[1:] if plain.startswith("0.") else None):
        if text is not None and _scanned(text) == x:
            return text
    return None


def fraction_stand_in(x: float) -> str:
    """For a fraction the library cannot read exactly: the nearest decimal
    it reads, above 0 and at most 1. The binding sends it so the library
    records the override, and keeps `x` itself (see Deployment)."""
    step = Decimal(1).scaleb(-FRACTION_DIGITS)
    q = Decimal(x).quantize(step, rounding=ROUND_HALF_EVEN)
    if q >= 1:
        return "1"
    return "." + format(max(q, step), "f").split(".")[1]


def text_of(spec: Spec, v: Any) -> Optional[str]:
    """The text the library reads as exactly the checked value `v` (from
    ``native``); None for a fraction its grammar cannot carry."""
    if spec.kind is Kind.BOOL:
        return "true" if v else "false"
    if spec.kind is Kind.ENUM:
        return next(word for word, value in spec.words if value == v)
    if spec.kind is Kind.FRACTION:
        return fraction_text(v)
    return str(v)


def override_text(key: str, value: Any) -> Tuple[str, Optional[float]]:
    """A value for ``key`` as the library's text, checked first: returns
    (text, exact). A str goes to the library as it is, which checks it.
    `exact` is None unless the value is a fraction the library's text
    cannot carry; then `text` is its stand-in and `exact` the double."""
    if isinstance(value, str):
        return value, None
    spec = spec_for_key(key)
    if spec is None:  # the library refuses the key; the value still has a type
        if isinstance(value, bool):
            return ("true" if value else "false"), None
        if isinstance(value, int) and not isinstance(value, enum.Enum):
            return str(value), None
        if isinstance(value, float) and math.isfinite(value):
            return format(Decimal(repr(value)), "f"), None
        raise TypeError(
            f"the value of {key} must be a str, int, float or bool, not {_type_name(value)}"
        )
    v = native(spec, value, in_struct=False, name=key)
    text = text_of(spec, v)
    if text is None:
        return fraction_stand_in(v), v
    return text, None
