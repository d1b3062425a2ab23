"""The deployment options, one row each, read from the loaded library's
option table (``kvshard_option_info_at``: names, kinds, ranges, defaults and
words) in the field order of ``struct kvshard_options``.

Everything the binding does with an option follows these rows: the ctypes
layout of kvshard_options (each row's kind gives its C type, its offset its
place) and its defaults (KVSHARD_OPTIONS_INIT), the attributes of
``Options``, and the checks every value passes before any C call. An option
the library adds is a row here with no change; a new kind of value is one
``Kind`` and its case in the functions below. One field of the struct is no
option: the pointer to the engine profiles' settings (the library's own
table, read at run time: ``_settings``), which fills the one gap the rows'
offsets leave. The explicit pp_partition and weights_per_rank are options
held in two fields each, a borrowed array and its length. Compare's and
fit's own inputs (``EXPLORE_KEYS``) are options no field holds. Importing
this module gives ``_lib.COptions`` its fields.
"""

from __future__ import annotations

import ctypes
import enum
import math
import operator
from ctypes import POINTER, c_bool, c_double, c_int, c_size_t, c_uint32, c_uint64, c_void_p
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Dict, List, Optional, Tuple, Type

from . import _lib
from ._enums import (
    MAX_PP_PARTITION,
    Dtype,
    Engine,
    Ownership,
    PpRule,
    RankLayout,
    SettingType,
)

__all__ = [
    "Kind",
    "Spec",
    "OPTIONS",
    "c_fields",
    "BY_NAME",
    "engine_flags",
    "spec_for_key",
    "key_name",
    "byte_size",
    "native",
    "text_of",
    "override_text",
    "whole_number",
    "byte_count",
    "check_range",
    "type_name",
    "layer_counts",
    "byte_sizes",
    "fraction",
    "fraction_text",
    "FRACTION_CHARS",
    "LISTS",
    "EXPLORE_KEYS",
    "struct_fields",
    "options_init",
]


class Kind(enum.Enum):
    """How the library reads an option; the value is the C field's type."""

    INTEGER = c_uint32  # a count or a length: an int, never a bool or a float
    BYTES = c_uint64  # a byte count: an int, a float (rounded down) or text with a unit
    BOOL = c_bool  # a bool, never an int
    ENUM = c_int  # a C enum: its member, its value or one of its words
    #: Layer counts, one a stage: a list of ints, or text "31,30". Two C
    #: fields: a borrowed ``const uint32_t *`` and its length.
    COUNTS = POINTER(c_uint32)
    #: A share above 0 and at most 1: a float (an int 1), or text "0.9".
    FRACTION = c_double
    #: Byte sizes, one or one a stage: a list of sizes (each an int, a float
    #: or text with a unit), one size, or text "17GiB,16.5GiB". Two C
    #: fields: a borrowed ``const uint64_t *`` and its length.
    SIZES = POINTER(c_uint64)


#: The kinds held as a borrowed array and its length.
LISTS = (Kind.COUNTS, Kind.SIZES)

#: The kind of each type the option table gives (kvshard_setting_type).
_KINDS = {
    SettingType.INTEGER: Kind.INTEGER,
    SettingType.BYTES: Kind.BYTES,
    SettingType.BOOL: Kind.BOOL,
    SettingType.WORD: Kind.ENUM,
    SettingType.FRACTION: Kind.FRACTION,
    SettingType.COUNTS: Kind.COUNTS,
    SettingType.SIZES: Kind.SIZES,
}


@dataclass(frozen=True)
class Spec:
    """One option. ``low``..``high`` is the range the library accepts as
    text (a flag, an override, a deployment file); a caller's struct may
    also hold 0 when ``unset_ok`` ("unset", or "none"), and an enum the
    ``unset`` value no word names (ownership DEFAULT). ``words`` are the
    enum's words as the library reads them (for a byte count, the words
    that stand for a value no number gives: activation_reserve's "auto");
    the first word of a value is the one the binding sends. ``offset`` is
    where its field lies in kvshard_options, None for an option no field
    holds (``EXPLORE_KEYS``)."""

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
    offset: Optional[int] = None


U64_MAX = (1 << 64) - 1
U32_MAX = (1 << 32) - 1

#: The enums an option's words may name, each of whose members the library
#: names (``label``).
_ENUMS: Tuple[Type[Any], ...] = (Ownership, Engine, Dtype, PpRule, RankLayout)


def _enum_of(row: _lib.OptionRow) -> Type[enum.IntEnum]:
    """The enum a word option's field holds: the one whose own name of each
    value the option's words include (kv_cache_dtype's "bf16" and
    "bfloat16" are Dtype.BF16, whose name is "bfloat16")."""
    fits = []
    for candidate in _ENUMS:
        members = {int(m): m for m in candidate}
        values = {value for _, value in row.words}
        if all(v in members and (members[v].label, v) in row.words for v in values):
            fits.append(candidate)
    if len(fits) != 1:
        raise _lib.LibraryVersionError(
            f"kvshard: the words of option {row.name!r} name "
            f"{'no enum' if not fits else 'more than one enum'} of this package"
        )
    return fits[0]


def _words_sent_first(
    row: _lib.OptionRow, enum_type: Optional[Type[Any]], engines_read: List[set]
) -> Tuple[Tuple[str, int], ...]:
    """The option's words, each value's first the one the binding sends: a
    word every engine reads for it (the engines' flags may take fewer words
    than the option: vLLM's state dtypes lack "bf16", SGLang's KV dtypes
    "fp8"), and of those the enum's own name of the value."""
    words = [(word, value if enum_type is None else enum_type(value)) for word, value in row.words]
    if row.kind == SettingType.BYTES:  # a stand-in such as "auto" is -1: the field's all ones
        words = [(word, value % (1 << 64)) for word, value in words]
    order = {value: at for at, (_, value) in reversed(list(enumerate(words)))}

    def rank(item: Tuple[str, int]) -> Tuple[int, bool, bool]:
        word, value = item
        everywhere = all(word in read for read in engines_read)
        own = enum_type is not None and word == value.label  # type: ignore[attr-defined]
        return (order[value], not everywhere, not own)

    return tuple(sorted(words, key=rank))


def _default(row: _lib.OptionRow, kind: Kind, enum_type: Optional[Type[Any]],
             words: Tuple[Tuple[str, int], ...]) -> Any:
    """KVSHARD_OPTIONS_INIT's value of the option, from its text."""
    text = row.default
    if kind in LISTS:
        return None
    if text == "none":  # the plan settles it: 0, or a word option's -1
        if kind is Kind.ENUM:
            assert enum_type is not None
            return enum_type(-1)
        return 0.0 if kind is Kind.FRACTION else 0
    if kind is Kind.BOOL:
        return text == "true"
    word = next((value for w, value in words if w == text), None)
    if word is not None:
        return word
    return float(text) if kind is Kind.FRACTION else int(text, 10)


def _spec(row: _lib.OptionRow, engines_read: List[set]) -> Spec:
    try:
        kind = _KINDS[SettingType(row.kind)]
    except (ValueError, KeyError):
        raise _lib.LibraryVersionError(
            f"kvshard: option {row.name!r} has a kind this package does not know ({row.kind})"
        ) from None
    enum_type = _enum_of(row) if kind is Kind.ENUM else None
    words = _words_sent_first(row, enum_type, engines_read)
    # A struct may hold the values the words stand for (RESERVE_AUTO) too.
    high = max([row.max] + [int(value) for _, value in words]) if kind is Kind.BYTES else row.max
    return Spec(
        name=row.name,
        kind=kind,
        default=_default(row, kind, enum_type, words),
        doc=f"{row.doc[:1].upper()}{row.doc[1:]}; default {row.default}.",
        low=row.min,
        high=high,
        unset_ok=row.unset_ok,
        enum=enum_type,
        words=words,
        unset=-1 if kind is Kind.ENUM and row.unset_ok else None,
        offset=row.offset,
    )


def _read_options() -> Tuple[Spec, ...]:
    rows = _lib.options()
    flags = [_lib.flags(engine.value) for engine in _lib.engines()]
    specs = []
    for row in rows:
        # The comm: section prices a deployment's plan: a deployment takes
        # it (its file or flags), and a plan's to_dict() has the estimate;
        # no kvshard_options field or Options attribute holds it.
        if row.section == "comm":
            continue
        # The words each engine reads for the option: its flag's.
        read = [
            {word for word, _ in flag.words}
            for engine_flags in flags
            for flag in engine_flags
            if flag.key == row.name and not flag.is_setting and flag.words
        ]
        specs.append(_spec(row, read))
    return tuple(specs)


#: Every option, in the order of the library's table (kvshard_options').
OPTIONS: Tuple[Spec, ...] = _read_options()

#: Options that are no fields of kvshard_options: compare's and fit's own
#: inputs (kvshard_compare_options.sweep_pp, kvshard_fit_options.gpus_per_node).
#: A deployment keeps them by their keys; an Options holds them beside its struct.
EXPLORE_KEYS: Tuple[str, ...] = tuple(spec.name for spec in OPTIONS if spec.offset is None)


def c_fields(spec: Spec) -> List[Tuple[str, Any]]:
    """The C fields of kvshard_options that hold one option: one field,
    or for a list (pp_partition, weights_per_rank) its array and its
    length."""
    if spec.kind in LISTS:
        return [(spec.name, spec.kind.value), (spec.name + "_count", c_uint32)]
    return [(spec.name, spec.kind.value)]


#: The one field of kvshard_options that holds no option.
_SETTINGS_FIELD = ("settings", c_void_p)


def _offset_in(fields: List[Tuple[str, Any]], field: Tuple[str, Any]) -> int:
    """Where ctypes puts `field` after `fields`."""
    trial = type("_Trial", (ctypes.Structure,), {"_fields_": fields + [field]})
    return int(getattr(trial, field[0]).offset)


def struct_fields() -> List[Tuple[str, Any]]:
    """Every field of kvshard_options after `size`, in the header's order:
    the options' fields at the offsets the library gives, and the settings
    pointer in the one gap they leave."""
    fields: List[Tuple[str, Any]] = [("size", c_size_t)]
    placed = sorted(((s.offset, s) for s in OPTIONS if s.offset is not None), key=lambda p: p[0])
    for offset, spec in placed:
        held = c_fields(spec)
        if _offset_in(fields, held[0]) < offset and _SETTINGS_FIELD not in fields:
            fields.append(_SETTINGS_FIELD)
        if _offset_in(fields, held[0]) != offset:
            raise _lib.LibraryVersionError(
                f"kvshard: the library's kvshard_options holds {spec.name} at offset "
                f"{offset}, where this package cannot lay it out"
            )
        fields += held
    if _SETTINGS_FIELD not in fields:
        fields.append(_SETTINGS_FIELD)
    return fields[1:]


BY_NAME: Dict[str, Spec] = {spec.name: spec for spec in OPTIONS}

_engine_flags: Optional[Dict[str, Tuple[Tuple[Engine, ...], str]]] = None


def engine_flags() -> Dict[str, Tuple[Tuple[Engine, ...], str]]:
    """Flag names an engine profile accepts for an option, read from the
    library's flag tables (kvshard_flag_info_at) on first use: name -> (the
    engines under which the library takes it, the option it sets). Names
    are as ``key_name`` reads them ('-' as '_', as the argparse profiles
    do). The names of the engines' own settings are the settings table's;
    only the names that set one of kvshard's options (and no engine's
    setting) are here, so that their values are checked as that option's."""
    global _engine_flags
    if _engine_flags is None:
        rows = [(engine, flag) for engine in _lib.engines() for flag in _lib.flags(engine.value)]
        # A name one engine gives a setting is that setting's (vLLM's dp is
        # data_parallel_size), whatever another engine means by it.
        of_settings = {
            key_name(spelling)
            for _, flag in rows
            if flag.is_setting
            for spelling in (flag.name,) + flag.also
        }
        found: Dict[str, Tuple[Tuple[Engine, ...], str]] = {}
        for engine, flag in rows:
            if flag.is_setting:
                continue
            for spelling in (flag.name,) + flag.also:
                name = key_name(spelling)
                if name == flag.key or name in of_settings:
                    continue
                under, _ = found.get(name, ((), flag.key))
                found[name] = (under + (Engine(engine.value),), flag.key)
        _engine_flags = found
    return _engine_flags


def key_name(key: str) -> str:
    """A key as the binding looks it up: '-' read as '_', as the argparse
    profiles read flag names. The key the library gets is the one written;
    the library decides whether the profile in force knows it."""
    return key.replace("-", "_")


def spec_for_key(key: str) -> Optional[Spec]:
    """The option a deployment key names (an engine's flag name too, and
    its '-' spelling); None for a key the table does not hold, which the
    library then reads as a setting or refuses."""
    name = key_name(key)
    spec = BY_NAME.get(name)
    if spec is None and name in engine_flags():
        spec = BY_NAME[engine_flags()[name][1]]
    return spec


# ---------------------------------------------------------------------------
# Checks: TypeError for a value of the wrong type, ValueError for one out of
# range, both before any C call.
# ---------------------------------------------------------------------------


def type_name(value: Any) -> str:
    return type(value).__name__


def whole_number(name: str, value: Any, what: str) -> int:
    """An int (or anything with __index__), never a bool, a float or an
    enum member: TypeError naming `what` otherwise."""
    if isinstance(value, (bool, float, enum.Enum)):
        raise TypeError(f"{name} must be {what}, not {type_name(value)}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be {what}, not {type_name(value)}") from None


def check_range(name: str, v: int, low: int, high: int, unit: str, unset_ok: bool = False) -> int:
    """`v` when it lies in low..high (or is 0 and `unset_ok`), else
    ValueError naming the range."""
    if unset_ok and v == 0:
        return v
    if low <= v <= high:
        return v
    unset = " (or 0 for unset)" if unset_ok else ""
    raise ValueError(f"{name} must be {unit} from {low} to {high}{unset}, not {v}")


def byte_count(name: str, value: Any) -> int:
    """A byte count given natively: an int, or a float of bytes, taken as
    its exact value rounded down to a whole byte (a float is a binary
    fraction, so int() of it is exact: 1.2345678901234567e19 is
    12345678901234567168 bytes, not the 12345678901234567000 its shortest
    decimal reads as). A negative, NaN or infinite float is a ValueError
    naming the key; anything else but an int a TypeError."""
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or value < 0:
            raise ValueError(f"{name} must be a byte count of 0 or more, not {value!r}")
        return int(value)  # exact: truncation of a finite float at or above 0 is its floor
    return whole_number(name, value, "an int, a float or a str such as '80GiB'")


def byte_size(name: str, value: Any, low: int, high: int, unset_ok: bool = False) -> int:
    """A native byte count (``byte_count``) in low..high, or ValueError
    naming the key and, for a float, the value given."""
    v = byte_count(name, value)
    try:
        return check_range(name, v, low, high, "a byte count", unset_ok)
    except ValueError as exc:
        if isinstance(value, float):
            raise ValueError(f"{exc} ({value!r} rounded down)") from None
        raise


def _enum_value(spec: Spec, name: str, value: Any, in_struct: bool) -> int:
    assert spec.enum is not None
    kind = spec.enum.__name__
    a_kind = ("an " if kind[0] in "AEIOU" else "a ") + kind
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {a_kind} or one of its words, not {type_name(value)}")
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


def layer_counts(name: str, value: Any, in_struct: bool) -> Optional[Tuple[int, ...]]:
    """An explicit pp_partition given natively: a list or tuple of ints,
    each 0 to 2**32 - 1 (the library's plan refuses 0, naming the stage),
    at most MAX_PP_PARTITION of them. None, or an empty list in a struct,
    gives none (the rule cuts the layers); text has no way to say that,
    so there they are a ValueError."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        if in_struct:
            return None
        raise ValueError(
            f"{name} as text needs at least one layer count; to let the rule cut the layers, "
            f"leave it out"
        )
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{name} must be a list of ints (layer counts) or a str such as '31,30', "
            f"not {type_name(value)}"
        )
    if len(value) > MAX_PP_PARTITION:
        raise ValueError(
            f"{name} has {len(value)} entries; at most {MAX_PP_PARTITION} are read "
            f"(KVSHARD_MAX_PP_PARTITION)"
        )
    counts = []
    for index, entry in enumerate(value):
        what = f"{name}[{index}]"
        v = whole_number(what, entry, "an int")
        counts.append(check_range(what, v, 0, U32_MAX, "a layer count"))
    return tuple(counts)


def byte_sizes(
    name: str, value: Any, in_struct: bool, parse: Optional[Any] = None
) -> Optional[Tuple[int, ...]]:
    """weights_per_rank given natively: a list or tuple of sizes, or one
    size alone, each an int or a float of bytes (rounded down) from 0 to
    2**64 - 1, at most MAX_PP_PARTITION of them. An entry given as text
    ("17GiB") goes to `parse` (the library's size grammar); without one it
    is a TypeError. None, or an empty list in a struct, gives none; text
    has no way to say that, so there they are a ValueError."""
    if value is None or (isinstance(value, (list, tuple)) and not value):
        if in_struct:
            return None
        raise ValueError(
            f"{name} as text needs at least one size; to give no weights per rank, leave it out"
        )
    if isinstance(value, (int, float)) and not isinstance(value, (bool, enum.Enum)):
        value = (value,)
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{name} must be a size (an int, a float of bytes), a list of sizes or a str such "
            f"as '17GiB,16.5GiB', not {type_name(value)}"
        )
    if len(value) > MAX_PP_PARTITION:
        raise ValueError(
            f"{name} has {len(value)} entries; at most {MAX_PP_PARTITION} are read "
            f"(KVSHARD_MAX_PP_PARTITION)"
        )
    sizes = []
    for index, entry in enumerate(value):
        what = f"{name}[{index}]"
        if isinstance(entry, str):
            if parse is None:
                raise TypeError(f"{what} is text; give the list as one str or every size natively")
            sizes.append(parse(what, entry))
        else:
            sizes.append(byte_size(what, entry, 0, U64_MAX))
    return tuple(sizes)


#: The longest decimal the library's fraction grammar reads, in characters
#: (digits and the point; no sign, no exponent).
FRACTION_CHARS = 64


def fraction_text(x: float) -> Optional[str]:
    """The text the library reads as exactly the double `x`: the shortest
    decimal that reads back as `x` (Python's repr) in positional notation
    (1e-05 is "0.00001"), without its leading zero when that brings it
    within the library's 64 characters. The library rounds a decimal to the
    nearest double, so that text gives `x` itself. None when even that is
    too long (below about 1e-63)."""
    plain = format(Decimal(repr(x)), "f")
    if len(plain) <= FRACTION_CHARS:
        return plain
    if plain.startswith("0.") and len(plain) - 1 <= FRACTION_CHARS:
        return plain[1:]
    return None


def fraction(name: str, value: Any, in_struct: bool, unset_ok: bool = False) -> float:
    """A share given natively: a float or an int (not a bool) above 0 and at
    most 1 (NaN and the infinities out of range), or 0 in a struct where it
    means "unset"; TypeError for another type, ValueError out of range or
    too small for the library's decimals."""
    if isinstance(value, (bool, enum.Enum)) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a float, not {type_name(value)}")
    v = float(value)
    if in_struct and unset_ok and v == 0.0:
        return 0.0
    if not 0.0 < v <= 1.0:  # NaN fails both comparisons
        unset = " (or 0 for unset)" if in_struct and unset_ok else ""
        raise ValueError(f"{name} must be above 0 and at most 1{unset}, not {value!r}")
    if fraction_text(v) is None:
        raise ValueError(
            f"{name} {v!r} needs more than the {FRACTION_CHARS} characters of a decimal the "
            f"library reads"
        )
    return v


def native(spec: Spec, value: Any, in_struct: bool, name: Optional[str] = None) -> Any:
    """Check a value given as a Python object (not a str) for `spec` and
    return what the C field holds: an int, a bool or an enum's int (a
    tuple of counts, or None, for the explicit pp_partition).
    ``in_struct``: the range of a caller's kvshard_options (which may hold
    "unset"); otherwise the range of text. (weights_per_rank here takes no
    entry as text: ``Options`` reads those with the library's grammar.) ``name``: the key the caller
    wrote, for messages (an engine's flag name; default the option's)."""
    name = name or spec.name
    if spec.kind is Kind.COUNTS:
        return layer_counts(name, value, in_struct)
    if spec.kind is Kind.SIZES:
        return byte_sizes(name, value, in_struct)
    if spec.kind is Kind.FRACTION:
        return fraction(name, value, in_struct, spec.unset_ok)
    unset_ok = in_struct and spec.unset_ok
    if spec.kind is Kind.INTEGER:
        v = whole_number(name, value, "an int")
        return check_range(name, v, spec.low, spec.high, "an integer", unset_ok)
    if spec.kind is Kind.BYTES:
        return byte_size(name, value, spec.low, spec.high, unset_ok)
    if spec.kind is Kind.BOOL:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, not {type_name(value)}")
        return value
    return _enum_value(spec, name, value, in_struct)


# ---------------------------------------------------------------------------
# Text: what the binding sends to kvshard_options_set / kvshard_deployment_set.
# ---------------------------------------------------------------------------


def _size_entry(what: str, text: str) -> str:
    if "," in text:
        raise ValueError(f"{what} is one size; {text!r} holds a comma")
    return text


def text_of(spec: Spec, v: Any) -> str:
    """The text the library reads as exactly the checked value `v` (from
    ``native``)."""
    if spec.kind is Kind.BOOL:
        return "true" if v else "false"
    if spec.kind is Kind.ENUM:
        return next(word for word, value in spec.words if value == v)
    if spec.kind in LISTS:
        return ",".join(map(str, v))
    if spec.kind is Kind.FRACTION:
        text = fraction_text(v)
        assert text is not None  # fraction() refused what has none
        return text
    word = next((w for w, value in spec.words if value == v), None)
    return word if word is not None else str(v)


def override_text(key: str, value: Any) -> str:
    """A value for the option ``key`` as the library's text, checked first.
    A str goes to the library as it is, which checks it. A key the table
    does not hold (a setting, or a key the library refuses) gets plain
    text for its value's type."""
    if isinstance(value, str):
        return value
    spec = spec_for_key(key)
    if spec is not None and spec.kind is Kind.SIZES:
        # An entry given as text goes to the library as it is, which reads
        # it as a size; only a comma would make it two.
        sizes = byte_sizes(key, value, in_struct=False, parse=_size_entry)
        assert sizes is not None
        return ",".join(map(str, sizes))
    if spec is None:  # the library refuses the key; the value still has a type
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int) and not isinstance(value, enum.Enum):
            return str(value)
        if isinstance(value, float) and math.isfinite(value):
            return format(Decimal(repr(value)), "f")
        raise TypeError(
            f"the value of {key} must be a str, int, float or bool, not {type_name(value)}"
        )
    return text_of(spec, native(spec, value, in_struct=False, name=key))


_lib.COptions._fields_ = [("size", c_size_t)] + struct_fields()


def options_init() -> _lib.COptions:
    """A COptions holding KVSHARD_OPTIONS_INIT (the table's defaults, no
    settings: every one at its default, and no lists)."""
    o = _lib.COptions()
    o.size = ctypes.sizeof(_lib.COptions)
    for spec in OPTIONS:
        if spec.offset is None:
            continue
        if spec.kind in LISTS:
            setattr(o, spec.name, None)
            setattr(o, spec.name + "_count", 0)
        else:
            setattr(o, spec.name, spec.default)
    o.settings = None
    return o
