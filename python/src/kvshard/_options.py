"""``Options``: the deployment options of kvshard_options, and the engine
profiles' settings beside them, from Python.

Defaults are KVSHARD_OPTIONS_INIT's: values the engine profile decides are
"unset" (block_size 0, max_seqs 0, ownership DEFAULT, rank_layout DEFAULT)
and a plan settles them (``Plan.options`` returns the settled values). The fields, their C types,
defaults and ranges come from the library's option table (``_optiontable``); the
settings, their types, bounds and defaults from the library's own table
(``_settings``).
"""

from __future__ import annotations

import contextlib
import ctypes
import operator
import threading
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union

from . import _lib
from ._enums import PpRule
from ._handles import _new_handle, encode, raise_error
from ._optiontable import (
    BY_NAME,
    EXPLORE_KEYS,
    LISTS,
    OPTIONS,
    U64_MAX,
    Kind,
    Spec,
    byte_size,
    byte_sizes,
    native,
    options_init,
    override_text,
    spec_for_key,
)
from ._settings import Settings, SettingInfo, info_for, setting_text, settings, value_of

if TYPE_CHECKING:
    from ._enums import Dtype, Engine, Ownership, RankLayout

__all__ = ["Options", "DEFAULT_ORIGIN"]

#: The ``origin`` the binding passes to kvshard_options_set,
#: kvshard_settings_set and kvshard_deployment_set: errors about such a
#: value name it as their source.
DEFAULT_ORIGIN = "python"

#: A value for an option or a setting: a str the library reads, or a
#: native value (a mapping for a JSON setting).
OptionValue = Union[str, int, float, bool, Mapping[str, Any]]


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


def parse_bytes(name: str, value: Union[int, float, str]) -> int:
    """A byte count: an int, a float of bytes (its exact value rounded down;
    negative, NaN and infinite floats are a ValueError), or text read by the
    library's own size grammar, as memory_per_rank reads it ("80GiB",
    "72.5GiB", "141GB")."""
    if isinstance(value, str):
        scratch = options_init()
        set_text(scratch, "memory_per_rank", value, name)
        return int(scratch.memory_per_rank)
    return byte_size(name, value, 0, U64_MAX)


def read_list(key: str, text: str, origin: str) -> Tuple[int, ...]:
    """A list option written as text: layer counts ("31,30") or sizes
    ("17GiB,16.5GiB"), read by the library's own grammar for them.
    kvshard_options_set takes no list, so a scratch deployment of a
    one-layer model takes the text as kvshard_deployment_set takes a
    deployment's, and gives the entries back through its options: the
    library's errors, with `origin` as their source (ConfigError for an
    entry that is no number or out of range; PlanError for more entries
    than it reads, EPARTITION, and for sizes WeightsError, EWEIGHTS)."""
    with _scratch_set(key, text, origin) as dep:
        out = _lib.sized(_lib.COptions)
        rc = _lib.library().kvshard_deployment_options(ctypes.byref(out), dep)
        if rc != 0:
            raise_error(rc, None)
        spec = spec_for_key(key)
        assert spec is not None and spec.kind in (Kind.COUNTS, Kind.SIZES)
        array = getattr(out, spec.name)
        return tuple(int(array[i]) for i in range(getattr(out, spec.name + "_count")))


def explore_value(key: str, text: str, origin: str) -> Any:
    """An option of EXPLORE_KEYS written as text, which kvshard_options_set
    does not take: checked by the library as kvshard_deployment_set reads
    the key (ConfigError), then read as the value it stands for."""
    with _scratch_set(key, text, origin):
        pass
    word = text.strip()
    if spec_for_key(key) is not None and spec_for_key(key).kind is Kind.BOOL:  # type: ignore[union-attr]
        return word.lower() in ("true", "1", "yes", "t", "y")
    return int(word, 10)


@contextlib.contextmanager
def _scratch_set(key: str, text: str, origin: str) -> Iterator[int]:
    """A scratch deployment of a one-layer model with `key` set to `text`
    as kvshard_deployment_set sets a deployment's: the library's errors,
    with `origin` as their source."""
    key_b = encode(key, "the option name")
    text_b = encode(text, f"the value of {key}")
    origin_b = encode(origin, "origin")
    lib = _lib.library()
    desc = _lib.sized(_lib.CModelDesc)
    desc.num_layers, desc.num_attention_heads, desc.head_dim = 1, 1, 1
    rc, model, err = _new_handle(lib.kvshard_model_create, ctypes.byref(desc), None)
    if rc != 0:
        raise_error(rc, err)
    rc, dep, err = _new_handle(lib.kvshard_deployment_create, model, None)
    if rc != 0:
        lib.kvshard_model_free(model)  # the deployment took it on success only
        raise_error(rc, err)
    try:
        err = _lib.CError()
        rc = lib.kvshard_deployment_set(dep, key_b, text_b, origin_b, ctypes.byref(err))
        if rc != 0:
            raise_error(rc, err)
        yield dep
    finally:
        lib.kvshard_deployment_free(dep)


def read_counts(key: str, text: str, origin: str) -> Tuple[int, ...]:
    """Layer counts written as text ("31,30", "31, 30"): ``read_list``."""
    return read_list(key, text, origin)


def _size_text(what: str, text: str) -> int:
    """One size of weights_per_rank given as text ("17GiB"): the
    library's grammar, as memory_per_rank reads it."""
    if "," in text:
        raise ValueError(f"{what} is one size; {text!r} holds a comma")
    return parse_bytes(what, text)


def sizes_of(name: str, value: Any, in_struct: bool) -> Optional[Tuple[int, ...]]:
    """weights_per_rank given as a Python value: text for the whole list
    ("17GiB,16.5GiB", read by the library), or one size or a list of them
    (``byte_sizes``; an entry as text read by the library's size
    grammar)."""
    if isinstance(value, str):
        return read_list(name, value, DEFAULT_ORIGIN)
    return byte_sizes(name, value, in_struct, parse=_size_text)


def setting_named(name: str) -> Optional[SettingInfo]:
    """The setting an attribute name names, None for none. AttributeError
    (not ImportError) when the library, which holds the table, cannot be
    loaded, so that hasattr() and getattr() with a default keep working."""
    try:
        return info_for(name)
    except ImportError as exc:
        raise AttributeError(
            f"Options has no field {name!r}, and the library that knows the settings cannot "
            f"be loaded: {exc}"
        ) from exc


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
        kind = self.spec.kind
        if kind is Kind.COUNTS:
            held = obj._partition
            return None if held is None else list(held)
        if kind is Kind.SIZES:
            held = obj._weights
            return None if held is None else list(held)
        if self.name in EXPLORE_KEYS:
            return obj._explore[self.name]
        raw = getattr(obj._c, self.name)
        if kind is Kind.BOOL:
            return bool(raw)
        if kind is Kind.FRACTION:
            return float(raw)
        if kind is Kind.ENUM:
            assert self.spec.enum is not None
            return self.spec.enum(raw)
        return int(raw)

    def __set__(self, obj: "Options", value: Any) -> None:
        if self.spec.kind is Kind.COUNTS:
            counts = (
                read_counts(self.name, value, DEFAULT_ORIGIN)
                if isinstance(value, str)
                else self.check(value)
            )
            obj._hold_partition(counts)
        elif self.spec.kind is Kind.SIZES:
            obj._hold_weights(sizes_of(self.name, value, in_struct=True))
        elif self.name in EXPLORE_KEYS:
            obj._explore[self.name] = (
                explore_value(self.name, value, DEFAULT_ORIGIN)
                if isinstance(value, str)
                else self.check(value)
            )
        elif isinstance(value, str):
            set_text(obj._c, self.name, value, DEFAULT_ORIGIN)
        else:
            setattr(obj._c, self.name, self.check(value))

    def check(self, value: Any) -> Any:
        """A native value as the C field holds it; TypeError or ValueError
        outside the range a caller's struct may hold."""
        if self.spec.kind is Kind.SIZES:
            # An entry as text is the library's to read: checked when set.
            if isinstance(value, (list, tuple)) and any(isinstance(v, str) for v in value):
                return byte_sizes(self.name, value, True, parse=lambda what, text: 0)
            return byte_sizes(self.name, value, True)
        return native(self.spec, value, in_struct=True)


# Made once per Options, the first time one of its settings is set.
_settings_made = threading.Lock()


class Options:
    """The options of one plan: parallel sizes and cache settings (a mirror
    of ``kvshard_options``), and the engine profiles' own inputs (settings
    by key, a ``kvshard_settings`` beside the struct).

    Every field and every setting is a keyword argument and an attribute.
    A value is either native or a str. A native value is checked in Python
    before any C call: a field with the library's ranges for its struct, a
    setting with the library's own row for it (``kvshard.settings()``). An
    integer takes an int (not a bool, not a float), a byte size an int or a
    float of bytes (its exact value rounded down; a negative, NaN or
    infinite float is a ``ValueError``), a boolean a bool, an enum its
    member or value, a fraction a float above 0 and at most 1, a decimal a
    float above 0 and at most the setting's max, a JSON object a dict, a
    text (the engine version) or a word a str only; a wrong type is a
    ``TypeError``, a value out of range a ``ValueError``. 0 is accepted where the C struct reads it
    as "unset" (block_size, max_seqs, context_length, memory_per_rank), and
    ``Ownership.DEFAULT`` for ownership. A str is parsed by the library as a
    command-line flag would be (``memory_per_rank="20GiB"``,
    ``memory_per_rank="72.5GiB"``, ``ownership="global"``,
    ``kv_cache_dtype="fp8"``, ``enable_prefix_cache="no"``,
    ``engine_version="0.5.11"``); a str it refuses raises a
    :class:`~kvshard.ConfigError` whose source is "python".

    Device inputs plan without memory_per_rank: ``device_memory`` (bytes
    of one GPU), ``memory_utilization`` (a float; 0: the profile's 0.9),
    ``activation_reserve`` (bytes, or "auto", ``RESERVE_AUTO``, the
    default), the weights as ``weights_per_rank`` (one size, or a list of
    one a stage: ints, floats or text such as "17GiB", or text
    "17GiB,16.5GiB"; the Options keeps the array the struct points to) or
    ``weights_total`` with ``weights_experts``, ``expert_parallel``, and
    ``gpus_per_node`` for a fit.

    Units: sizes in bytes (``memory_per_rank``, the device inputs, and the
    settings of type BYTES: ``device_memory_total``, ``device_memory_free``,
    ``max_cache_size``; and of type SIZES, one size or a list of one a
    stage: ``non_kv_memory``), lengths in tokens
    (``block_size``, ``context_length``). 0 means "unset" where the C struct
    says so (block_size, max_seqs: the profile's default; memory_per_rank:
    no capacity; context_length: no concurrency figures).

    An Options owns its data: a plain C struct, and its settings once one
    is set (a ``kvshard_settings`` freed with the Options, with a gate like
    every handle's). The functions it is passed to copy both. Its struct
    fields have no lock: do not change a field while another thread passes
    the Options to a call. Its settings pass their gate: a setting changed
    while another thread plans with the Options waits for that call.
    """

    __slots__ = ("_c", "_settings", "_partition", "_weights", "_explore")

    #: The option names (the struct's fields), in the C struct's order.
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
        pp_size: int
        pp_partition_rule: PpRule
        pp_partition: Optional[List[int]]
        rank_layout: RankLayout
        sweep_pp: bool
        device_memory: int
        memory_utilization: float
        activation_reserve: int
        weights_per_rank: Optional[List[int]]
        weights_total: int
        weights_experts: int
        expert_parallel: bool
        gpus_per_node: int

    def __init__(self, **fields: Any) -> None:
        object.__setattr__(self, "_c", options_init())
        object.__setattr__(self, "_explore", _explore_defaults())
        object.__setattr__(self, "_settings", None)
        object.__setattr__(self, "_partition", None)
        object.__setattr__(self, "_weights", None)
        unknown = [k for k in fields if k not in self.FIELDS and info_for(k) is None]
        if unknown:
            known = ", ".join(self.FIELDS + tuple(s.key for s in settings()))
            raise TypeError(
                f"Options() got unknown option{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(map(repr, unknown))}; known: {known}"
            )
        # Check every native value before the first library call.
        for key, value in fields.items():
            if isinstance(value, str):
                continue
            if key in self.FIELDS:
                getattr(type(self), key).check(value)
            else:
                info = info_for(key)
                assert info is not None
                setting_text(info, value)
        for key, value in fields.items():
            setattr(self, key, value)

    @classmethod
    def _from_c(
        cls,
        c: _lib.COptions,
        settings_at: Optional[int] = None,
        held: Optional[Settings] = None,
        partition: Optional[Tuple[int, ...]] = None,
        weights: Optional[Tuple[int, ...]] = None,
        read_weights: bool = True,
        explore: Optional[Dict[str, Any]] = None,
    ) -> "Options":
        """An Options holding a copy of `c`, of its settings and of its
        lists: the C settings at `settings_at` (the caller is inside
        the gate of their owner), or a Settings the binding holds; the
        counts `partition`, else those `c` points to (borrowed from its
        owner as the settings are); the sizes `weights`, else, with
        `read_weights`, those `c` points to; the EXPLORE_KEYS `explore`,
        else their defaults (no C struct carries them)."""
        o = cls.__new__(cls)
        struct = options_init()
        ctypes.memmove(ctypes.byref(struct), ctypes.byref(c), ctypes.sizeof(_lib.COptions))
        struct.size = ctypes.sizeof(_lib.COptions)
        struct.settings = None  # borrowed from the owner: never kept
        object.__setattr__(o, "_c", struct)
        object.__setattr__(o, "_explore", dict(explore) if explore else _explore_defaults())
        object.__setattr__(o, "_partition", None)
        object.__setattr__(o, "_weights", None)
        if partition is None and c.pp_partition_count and c.pp_partition:
            partition = tuple(int(c.pp_partition[i]) for i in range(c.pp_partition_count))
        o._hold_partition(partition, keep_rule=True)
        if weights is None and read_weights and c.weights_per_rank_count and c.weights_per_rank:
            weights = tuple(int(c.weights_per_rank[i]) for i in range(c.weights_per_rank_count))
        o._hold_weights(weights)
        copied = None
        if settings_at:
            copied = Settings.new(settings_at)
        elif held is not None:
            copied = held.copy()
        object.__setattr__(o, "_settings", copied)
        return o

    # --- the explicit pp_partition ---------------------------------------------
    def _hold_partition(self, counts: Optional[Tuple[int, ...]], keep_rule: bool = False) -> None:
        """Point the struct at an array of `counts` this Options owns, kept
        as long as it (or at none). Without counts, a rule the plan
        reported as EXPLICIT goes back to DEFAULT: nothing is explicit any
        more."""
        if counts:
            array = (ctypes.c_uint32 * len(counts))(*counts)
            self._c.pp_partition = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint32))
            self._c.pp_partition_count = len(counts)
            object.__setattr__(self, "_partition", array)
            return
        self._c.pp_partition = None
        self._c.pp_partition_count = 0
        object.__setattr__(self, "_partition", None)
        if not keep_rule and self._c.pp_partition_rule == PpRule.EXPLICIT:
            self._c.pp_partition_rule = PpRule.DEFAULT

    def _hold_weights(self, sizes: Optional[Tuple[int, ...]]) -> None:
        """Point the struct at an array of `sizes` (weights_per_rank) this
        Options owns, kept as long as it (or at none)."""
        if sizes:
            array = (ctypes.c_uint64 * len(sizes))(*sizes)
            self._c.weights_per_rank = ctypes.cast(array, ctypes.POINTER(ctypes.c_uint64))
            self._c.weights_per_rank_count = len(sizes)
            object.__setattr__(self, "_weights", array)
            return
        self._c.weights_per_rank = None
        self._c.weights_per_rank_count = 0
        object.__setattr__(self, "_weights", None)

    # --- settings -----------------------------------------------------------
    def _own_settings(self) -> Settings:
        made = self._settings
        if made is None:
            with _settings_made:
                made = self._settings
                if made is None:
                    made = Settings.new()
                    object.__setattr__(self, "_settings", made)
        return made

    def _set_setting(self, info: SettingInfo, value: Any, origin: str) -> None:
        text = setting_text(info, value)
        self._own_settings().set(info.key, text, origin)

    def setting(self, key: str) -> Any:
        """The value of setting `key`: the one set, else its default.
        AttributeError for a key that names no setting."""
        info = setting_named(key)
        if info is None:
            raise AttributeError(f"{key!r} is no setting; kvshard.settings() lists them")
        held = self._settings
        if held is None:
            return info.default
        return value_of(info.type, held.get(key)[0])

    def is_set(self, key: str) -> bool:
        """Whether setting `key` was given a value (even its default)."""
        if setting_named(key) is None:
            raise AttributeError(f"{key!r} is no setting; kvshard.settings() lists them")
        held = self._settings
        return held is not None and held.get(key)[1]

    @contextlib.contextmanager
    def _passed(self) -> Iterator[_lib.COptions]:
        """``with opts._passed() as c:`` -- a copy of the struct whose
        `settings` points to this Options' settings while the block runs
        (inside their gate), for one C call that reads them, and whose
        `pp_partition` and `weights_per_rank` point to its lists."""
        # The arrays are taken first and held by this frame until the call
        # returns, and the copy points to them, whatever the struct's
        # pointers say by then.
        counts, sizes = self._partition, self._weights
        c = options_init()
        ctypes.memmove(ctypes.byref(c), ctypes.byref(self._c), ctypes.sizeof(_lib.COptions))
        c.pp_partition = None if counts is None else ctypes.cast(
            counts, ctypes.POINTER(ctypes.c_uint32)
        )
        c.pp_partition_count = 0 if counts is None else len(counts)
        c.weights_per_rank = None if sizes is None else ctypes.cast(
            sizes, ctypes.POINTER(ctypes.c_uint64)
        )
        c.weights_per_rank_count = 0 if sizes is None else len(sizes)
        # A plan reports the rule of such counts as EXPLICIT, which is no
        # input: the library settles DEFAULT to it when counts are given,
        # so a plan's options plan again as they are.
        if c.pp_partition_rule == PpRule.EXPLICIT and c.pp_partition_count:
            c.pp_partition_rule = PpRule.DEFAULT
        held = self._settings
        if held is None:
            c.settings = None
            yield c
            return
        with held._use() as ptr:
            c.settings = ptr
            yield c

    # --- attributes -----------------------------------------------------------
    def __getattr__(self, name: str) -> Any:
        # Only for names that are no field: a setting's value.
        if name.startswith("_"):
            raise AttributeError(name)
        if setting_named(name) is None:
            raise AttributeError(f"'Options' object has no attribute {name!r}")
        return self.setting(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self.FIELDS:
            object.__setattr__(self, name, value)
            return
        info = None if name.startswith("_") else setting_named(name)
        if info is None:
            raise AttributeError(f"'Options' object has no attribute {name!r}")
        self._set_setting(info, value, DEFAULT_ORIGIN)

    def set(self, key: str, value: OptionValue, origin: str = DEFAULT_ORIGIN) -> None:
        """Set one option or setting by its deployment key name as a flag
        would, through kvshard_options_set or kvshard_settings_set: booleans
        take true/false/1/0/yes/no, sizes take bytes or a number and a unit
        ("80GiB", "72.5GiB", "141GB"), and an engine's flag name for an
        option is a key too under its engine (max_seqs_per_batch under
        xllm, max_num_seqs or max-num-seqs under vllm). A native value is
        checked in Python with the range of text (so 0 is refused where the
        library refuses "0", ``ValueError``), then sent as the text the
        library reads as exactly that value (True -> "true", 4 -> "4",
        Dtype.BF16 -> "bfloat16", 2.5e9 -> "2500000000", 1e-05 ->
        "0.00001", 2/3 -> "0.6666666666666666", {"num_speculative_tokens":
        2} -> '{"num_speculative_tokens": 2}'). ``origin`` names the value's
        source in errors. On failure the options are unchanged and a
        :class:`~kvshard.KvshardError` is raised (ConfigError for an unknown
        key or text the library refuses)."""
        if not isinstance(key, str):
            raise TypeError(f"the option name must be a str, not {type(key).__name__}")
        info = info_for(key) if spec_for_key(key) is None else None
        if info is not None:
            text = setting_text(info, value, key)
            encode(origin, "origin")
            self._own_settings().set(key, text, origin)
            return
        text = override_text(key, value)
        encode(origin, "origin")
        spec = spec_for_key(key)
        if spec is not None and spec.kind is Kind.COUNTS:
            # kvshard_options_set takes no list: the library reads the
            # text as a deployment's, and the counts are held here.
            self._hold_partition(read_counts(key, text, origin))
            return
        if spec is not None and spec.kind is Kind.SIZES:
            self._hold_weights(read_list(key, text, origin))
            return
        if spec is not None and spec.name in EXPLORE_KEYS:
            self._explore[spec.name] = explore_value(key, text, origin)
            return
        set_text(self._c, key, text, origin)

    def copy(self) -> "Options":
        """An independent copy, settings and lists and all."""
        counts, sizes = self._partition, self._weights
        return Options._from_c(
            self._c,
            held=self._settings,
            partition=None if counts is None else tuple(counts),
            weights=None if sizes is None else tuple(sizes),
            read_weights=False,
            explore=self._explore,
        )

    # copy.copy and copy.deepcopy give an independent copy too: a copy never
    # shares the settings object, whose changes it would see.
    def __copy__(self) -> "Options":
        return self.copy()

    def __deepcopy__(self, memo: Dict[int, Any]) -> "Options":
        return self.copy()

    def __reduce__(self) -> Tuple[Any, Tuple[Dict[str, Any], Dict[str, Any]]]:
        # Pickled as the struct's values, as the C fields hold them (the
        # lists as their entries), and the settings that were set, as
        # Python values.
        fields: Dict[str, Any] = {
            spec.name: (float if spec.kind is Kind.FRACTION else int)(getattr(self._c, spec.name))
            for spec in OPTIONS
            if spec.kind not in LISTS and spec.name not in EXPLORE_KEYS
        }
        fields.update(self._explore)
        fields.update((spec.name, getattr(self, spec.name)) for spec in OPTIONS if spec.kind in LISTS)
        held = self._settings
        given: Dict[str, Any] = {}
        if held is not None:
            for row in settings():
                text, was_set = held.get(row.key)
                if was_set:
                    given[row.key] = value_of(row.type, text)
        return (_rebuild, (fields, given))

    def to_dict(self) -> Dict[str, Any]:
        """Every field, in the C struct's order, then every setting, in the
        library's order, with its value (set, else its default)."""
        fields = {name: getattr(self, name) for name in self.FIELDS}
        held = self._settings
        if held is None:
            fields.update((row.key, row.default) for row in settings())
        else:
            fields.update(held.values())
        return fields

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
            f"{name}={getattr(self, name)!r}"
            for name in self.FIELDS
            if getattr(default, name) != getattr(self, name)
        ]
        held = self._settings
        if held is not None:  # no settings object: every setting at its default
            defaults = {row.key: row.default for row in settings()}
            changed += [f"{k}={v!r}" for k, v in held.values().items() if defaults[k] != v]
        return f"Options({', '.join(changed)})"


def _rebuild(fields: Dict[str, Any], given: Dict[str, Any]) -> Options:
    """An Options from what ``Options.__reduce__`` pickled."""
    o = Options()
    # The lists first: holding none sets a rule reported EXPLICIT back to
    # DEFAULT, which the rule pickled then overrides.
    for spec in OPTIONS:
        held = fields.get(spec.name)
        if spec.kind is Kind.COUNTS:
            o._hold_partition(tuple(held) if held else None)
        elif spec.kind is Kind.SIZES:
            o._hold_weights(tuple(held) if held else None)
    for name, raw in fields.items():
        if name in EXPLORE_KEYS:
            o._explore[name] = raw
        elif BY_NAME[name].kind not in LISTS:
            setattr(o._c, name, raw)
    for key, value in given.items():
        o.set(key, value)
    return o


def _explore_defaults() -> Dict[str, Any]:
    return {spec.name: spec.default for spec in OPTIONS if spec.name in EXPLORE_KEYS}


for _spec in OPTIONS:
    setattr(Options, _spec.name, _Field(_spec))
del _spec
