"""Settings: the inputs one engine profile alone reads (the xllm profile's
device figures, utilization, prefix cache, ...), set by key on an opaque
``kvshard_settings`` rather than held in ``kvshard_options``.

The binding keeps no copy of the settings table. It reads the library's
rows (``kvshard_setting_info_at``: key, type, bounds, default, engine) once,
when the library is loaded, and checks every native value against them, so
a setting the library adds is taken, checked and reported with no change
here. A setting's value always reaches the library as text
(``kvshard_settings_set``, ``kvshard_deployment_set``), the text the
library reads as exactly the value given.
"""

from __future__ import annotations

import json
import locale
import numbers
import re
from collections.abc import Mapping
from ctypes import byref, c_bool, create_string_buffer
from typing import Any, Dict, NamedTuple, Optional, Tuple, Union

from . import _lib
from ._enums import Engine, SettingType, Status
from ._errors import make_error
from ._handles import _Handle, _new_handle, encode, raise_error
from ._optiontable import (
    FRACTION_CHARS,
    byte_size,
    fraction_text,
    check_range,
    key_name,
    override_text,
    spec_for_key,
    type_name,
    whole_number,
)

__all__ = ["SettingInfo", "settings", "setting_info"]

#: Room for any value's text from kvshard_settings_get: 20 digits of a
#: 64-bit count, 17 significant digits of a fraction with its exponent, a
#: word, or a list of sizes, one a stage (at most 8,191 characters).
_VALUE_TEXT_MAX = 8192


class SettingInfo(NamedTuple):
    """What a setting takes, as the library describes it
    (``kvshard_setting_info``)."""

    #: The key: a deployment file's ``cache:`` key, a flag, an ``Options``
    #: attribute and keyword.
    key: str
    #: INTEGER, BYTES, BOOL, WORD, FRACTION, TEXT, JSON or DECIMAL (an int
    #: for a type this package does not know).
    type: Union[SettingType, int]
    #: Integers and byte counts: the bounds of the value as text; a
    #: decimal's upper bound (a fraction's is 1).
    min: int
    max: int
    #: The value when the setting is not set, as Python reads it (an int,
    #: a bool, a float or a str; for a default the profile works out, by
    #: release or model or from other inputs, the library's words for it,
    #: a str such as "world_size / dp_size") ...
    default: Any
    #: ... and as the library writes it ("0.8", "true", "by model and
    #: version"), whole (kvshard_settings_get; the C row's 32 bytes may cut
    #: a long one short).
    default_text: str
    #: The engine profile that reads the setting (an int for an engine this
    #: package does not know).
    engine: Union[Engine, int]


def _enum_or_int(enum_type: Any, value: int) -> Any:
    try:
        return enum_type(value)
    except ValueError:
        return int(value)


_WHOLE = re.compile(r"[0-9]+")
_DECIMAL = re.compile(r"[0-9]*\.?[0-9]+|[0-9]+\.")


def value_of(kind: Union[SettingType, int], text: str) -> Any:
    """A setting's text, as kvshard_settings_get and the default give it,
    as a Python value: an int for integers and byte counts, a bool, a
    float for fractions and decimals, a dict for a JSON object, and the
    text itself for anything else (a word; an engine version; an integer
    setting's word such as max_model_len's "auto"; the words a default the
    profile works out is described by, such as "by model and version"; a
    type this package does not know)."""
    if kind in (SettingType.INTEGER, SettingType.BYTES, SettingType.SIZES):
        return int(text) if _WHOLE.fullmatch(text) else text
    if kind is SettingType.BOOL:
        return {"true": True, "false": False}.get(text, text)
    if kind in (SettingType.FRACTION, SettingType.DECIMAL):
        # The library writes a decimal with at most 17 significant digits,
        # positionally, so float() reads it exactly; its point is '.' in
        # any locale, and the locale's point is read too.
        point = locale.localeconv().get("decimal_point", ".")
        plain = text.replace(point, ".") if point and point != "." else text
        return float(plain) if _DECIMAL.fullmatch(plain) else text
    if kind is SettingType.JSON and text.startswith("{"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _info(c: _lib.CSettingInfo) -> SettingInfo:
    kind = _enum_or_int(SettingType, c.type)
    key = (c.key or b"").decode("utf-8", "replace")
    # The row holds at most 31 bytes of the default; kvshard_settings_get
    # on no settings gives every default whole ("whether the config has
    # vision_config"), so the default reads as an unset setting does.
    text = get_text(None, key)[0] if key else c.default_value.decode("utf-8", "replace")
    return SettingInfo(
        key=key,
        type=kind,
        min=int(c.min),
        max=int(c.max),
        default=value_of(kind, text),
        default_text=text,
        engine=_enum_or_int(Engine, c.engine),
    )


_table: Optional[Tuple[Tuple[SettingInfo, ...], Dict[str, SettingInfo]]] = None


def _rows() -> Tuple[Tuple[SettingInfo, ...], Dict[str, SettingInfo]]:
    # Built once from the rows the loader read; a race builds it twice, alike.
    global _table
    table = _table
    if table is None:
        rows = tuple(_info(c) for c in _lib.setting_rows())
        table = _table = (rows, {row.key: row for row in rows})
    return table


def settings() -> Tuple[SettingInfo, ...]:
    """Every setting the library knows, in the order of its engine
    profiles' tables."""
    return _rows()[0]


def info_for(key: str) -> Optional[SettingInfo]:
    """The setting `key`, None when it is no setting. No C call once the
    library is loaded."""
    return _rows()[1].get(key)


def setting_info(key: str) -> SettingInfo:
    """The setting `key` as the library describes it
    (``kvshard_setting_find``); ConfigError (EUNKNOWNKEY) for another key."""
    key_b = encode(key, "the setting's key")
    c = _lib.sized(_lib.CSettingInfo)
    rc = _lib.library().kvshard_setting_find(byref(c), key_b)
    if rc == Status.EUNKNOWNKEY:
        raise make_error(rc, f'unknown setting "{key}"')
    if rc != 0:
        raise_error(rc, None)
    return _info(c)


# ---------------------------------------------------------------------------
# Checks and text: TypeError for a value of the wrong type, ValueError for one
# out of range, both before any C call; then the text the library reads as
# exactly the value.
# ---------------------------------------------------------------------------


def _fraction(name: str, value: Any, top: float = 1.0) -> str:
    """A fraction (top 1) or a decimal (top the setting's max) above 0 and
    at most `top`, as the text the library reads as exactly that double."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a float, not {type_name(value)}")
    v = float(value)
    if not 0.0 < v <= top:  # NaN fails both comparisons
        shown = "1" if top == 1.0 else f"{top:g}"
        raise ValueError(f"{name} must be above 0 and at most {shown}, not {value!r}")
    text = fraction_text(v)
    if text is None:
        raise ValueError(
            f"{name} {v!r} needs more than the {FRACTION_CHARS} characters of a decimal "
            f"the library reads"
        )
    return text


def _json_text(name: str, value: Any) -> str:
    """A JSON object given as a mapping, as JSON text: the library reads
    the fields it knows from it (and refuses what it cannot read)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict (a JSON object) or a str, not {type_name(value)}")
    try:
        return json.dumps(dict(value), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} is no JSON object: {exc}") from None


def setting_text(info: SettingInfo, value: Any, name: Optional[str] = None) -> str:
    """A value for setting `info` as the library's text, checked first. A
    str goes to the library as it is, which checks it; a native value is
    checked against the library's row."""
    if isinstance(value, str):
        return value
    name = name or info.key
    kind = info.type
    if kind is SettingType.BOOL:
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, not {type_name(value)}")
        return "true" if value else "false"
    if kind is SettingType.INTEGER:
        v = whole_number(name, value, "an int")
        return str(check_range(name, v, info.min, info.max, "an integer"))
    if kind is SettingType.BYTES:
        return str(byte_size(name, value, info.min, info.max))
    if kind is SettingType.SIZES:  # one size, or one a stage
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError(f"{name} has no sizes; give one, or one a stage")
            return ",".join(str(byte_size(f"{name}[{i}]", v, info.min, info.max))
                            for i, v in enumerate(value))
        return str(byte_size(name, value, info.min, info.max))
    if kind is SettingType.FRACTION:
        return _fraction(name, value)
    if kind is SettingType.DECIMAL:
        return _fraction(name, value, float(info.max))
    if kind is SettingType.JSON:
        return _json_text(name, value)
    if kind is SettingType.TEXT:
        raise TypeError(f"{name} must be a str, not {type_name(value)}")
    # A word, or a type this package does not know: only the library knows
    # its text.
    raise TypeError(f"{name} must be a str (one of its words), not {type_name(value)}")


def value_text(key: str, value: Any) -> str:
    """A value for any deployment key, an option or a setting, as the text
    the library reads as exactly that value; checked first (TypeError,
    ValueError). A key that is neither goes to the library, which refuses
    it."""
    if not isinstance(value, str) and spec_for_key(key) is None:
        info = info_for(key_name(key))
        if info is not None:
            return setting_text(info, value, key)
    return override_text(key, value)


# ---------------------------------------------------------------------------
# The handle
# ---------------------------------------------------------------------------


class Settings(_Handle):
    """Owns a ``kvshard_settings`` (freed with kvshard_settings_free). An
    ``Options`` holds one beside its struct; a Plan holds a copy of the
    settings it was made with. Queries (``get``, ``values``, ``copy``, and
    passing it to a call) share its gate; ``set`` runs alone."""

    _free_name = "kvshard_settings_free"
    _kind = "settings"

    @classmethod
    def new(cls, source: Optional[int] = None) -> "Settings":
        """An empty settings object, or a copy of the C settings at
        `source` (the caller holds the gate of whatever owns it)."""
        lib = _lib.library()
        if source is None:
            rc, out, err = _new_handle(lib.kvshard_settings_create, None)
        else:
            rc, out, err = _new_handle(lib.kvshard_settings_copy, source, None)
        if rc != 0:
            raise_error(rc, err)
        return cls(out)

    def copy(self) -> "Settings":
        """An independent copy."""
        with self._use() as h:
            return Settings.new(h)

    def set(self, key: str, text: str, origin: str) -> None:
        """kvshard_settings_set: the library parses `text`; on failure the
        settings are unchanged and ConfigError names `origin`."""
        key_b = encode(key, "the setting's key")
        text_b = encode(text, f"the value of {key}")
        origin_b = encode(origin, "origin")
        err = _lib.CError()
        with self._use(exclusive=True) as h:
            rc = _lib.library().kvshard_settings_set(h, key_b, text_b, origin_b, byref(err))
        if rc != 0:
            raise_error(rc, err)

    def get(self, key: str) -> Tuple[str, bool]:
        """(the value's text, whether it was set) of setting `key`."""
        with self._use() as h:
            return get_text(h, key)

    def values(self) -> Dict[str, Any]:
        """Every setting's value (set, else its default), in the library's
        order."""
        rows = settings()
        with self._use() as h:
            return {row.key: value_of(row.type, get_text(h, row.key)[0]) for row in rows}


def get_text(ptr: Optional[int], key: str) -> Tuple[str, bool]:
    """kvshard_settings_get on C settings (NULL: every default), inside
    the gate of whatever owns them."""
    buf = create_string_buffer(_VALUE_TEXT_MAX)
    was_set = c_bool()
    key_b = encode(key, "the setting's key")
    rc = _lib.library().kvshard_settings_get(buf, len(buf), byref(was_set), ptr, key_b)
    if rc == Status.EUNKNOWNKEY:
        raise make_error(rc, f'unknown setting "{key}"')
    if rc != 0:
        raise_error(rc, None)
    return buf.value.decode("utf-8", "replace"), bool(was_set.value)
