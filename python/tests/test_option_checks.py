"""Option and setting values are checked in Python, before any C call, with
the library's own ranges: every place that takes a value refuses a wrong
type with TypeError and a value out of range with ValueError, and accepts
exactly what the library accepts. The options' ranges are the rows the
library reports (kvshard_option_info_at), and so are the settings'
(kvshard_setting_info_at)."""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, Iterator, List, Tuple

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import Dtype, Engine, Ownership, SettingType, Status
from kvshard._optiontable import EXPLORE_KEYS, OPTIONS, engine_flags, U64_MAX, Kind, key_name

# The library was loaded when the session started (conftest).
SETTINGS = kvshard.settings()

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
TEXT = "model: models/qwen3_5_35b_a3b.json\nparallel: {world_size: 4}\n"

# Values of the wrong type (TypeError) and out of range (ValueError) for
# the text path: overrides, Deployment.set, Options.set.
BAD: List[Tuple[str, Any, type]] = [
    ("world_size", True, TypeError),
    ("world_size", 4.0, TypeError),
    ("world_size", -1, ValueError),
    ("world_size", 2**200, ValueError),
    ("world_size", 0, ValueError),
    ("world_size", 65537, ValueError),
    ("world_size", Engine.XLLM, TypeError),
    ("world_size", None, TypeError),
    ("world_size", [4], TypeError),
    ("dp_size", 0, ValueError),
    ("cp_size", 65537, ValueError),
    ("layerwise_split_size", 0, ValueError),
    ("block_size", 0, ValueError),  # "0" is not a block size as text
    ("block_size", 2**20 + 1, ValueError),
    ("max_seqs", 2**24 + 1, ValueError),
    ("max_seqs_per_batch", 2**24 + 1, ValueError),  # the xllm name of max_seqs
    ("num_speculative_tokens", 1025, ValueError),
    ("scratch_layers", 1025, ValueError),
    ("context_length", 2**30 + 1, ValueError),
    ("max_linear_state_cache_slots", 2**24 + 1, ValueError),
    ("memory_per_rank", 0, ValueError),
    ("memory_per_rank", -1, ValueError),
    ("memory_per_rank", 2**64, ValueError),
    ("memory_per_rank", 0.5, ValueError),  # 0 bytes, rounded down: "0" is refused
    ("memory_per_rank", -1.5, ValueError),
    ("memory_per_rank", 2.0**64, ValueError),
    ("memory_per_rank", float("nan"), ValueError),
    ("memory_per_rank", float("inf"), ValueError),
    ("memory_per_rank", True, TypeError),
    ("device_memory_total", -2.0, ValueError),
    ("device_memory_free", float("-inf"), ValueError),
    ("non_kv_memory", float("nan"), ValueError),
    ("max_cache_size", 2**64, ValueError),
    # vLLM's name of memory_per_rank, in both spellings.
    ("kv_cache_memory_bytes", -1.0, ValueError),
    ("kv-cache-memory-bytes", float("inf"), ValueError),
    ("max_num_seqs", 2**24 + 1, ValueError),  # vLLM's name of max_seqs
    ("page_size", 0, ValueError),  # SGLang's name of block_size
    ("engine_version", 0.5, TypeError),  # a text: a str only
    ("speculative_config", [1], TypeError),  # a JSON object: a dict or a str
    ("speculative_config", {"n": float("nan")}, ValueError),  # JSON has no NaN
    ("mamba_full_memory_ratio", 0, ValueError),  # a decimal above 0 ...
    ("mamba_full_memory_ratio", 100.5, ValueError),  # ... and at most its max, 100
    ("mamba_full_memory_ratio", True, TypeError),
    ("mamba_cache_mode", 1, TypeError),  # a word: a str only
    ("enable_layerwise_split", 1, TypeError),
    ("is_draft", 0.0, TypeError),
    ("enable_prefix_cache", None, TypeError),
    ("ownership", 7, ValueError),
    ("ownership", Ownership.DEFAULT, ValueError),  # no word names it
    ("ownership", Dtype.BF16, TypeError),
    ("ownership", 1.0, TypeError),
    ("engine", 5, ValueError),
    ("engine", True, TypeError),
    ("kv_cache_dtype", Dtype.FP32, ValueError),  # a state dtype only
    ("state_dtype", Dtype.FP8, ValueError),  # a KV dtype only
    ("state_dtype", Dtype.INT8, ValueError),
    ("max_memory_utilization", 0, ValueError),
    ("max_memory_utilization", 0.0, ValueError),
    ("max_memory_utilization", -0.5, ValueError),
    ("max_memory_utilization", 1.0000001, ValueError),
    ("max_memory_utilization", 2, ValueError),
    ("max_memory_utilization", float("nan"), ValueError),
    ("max_memory_utilization", float("inf"), ValueError),
    ("max_memory_utilization", True, TypeError),
    ("max_memory_utilization", None, TypeError),
    # The device inputs.
    ("device_memory", 0, ValueError),  # "0" is no device as text
    ("device_memory", -1.0, ValueError),
    ("device_memory", 2**64, ValueError),
    ("memory_utilization", 1.5, ValueError),
    ("memory_utilization", float("nan"), ValueError),
    ("memory_utilization", True, TypeError),
    ("memory_utilization", "0.9".encode(), TypeError),
    ("activation_reserve", 2**64, ValueError),
    ("activation_reserve", -1, ValueError),
    ("weights_total", 0, ValueError),
    ("weights_experts", -1, ValueError),
    ("weights_per_rank", [-1], ValueError),
    ("weights_per_rank", [float("inf")], ValueError),
    ("weights_per_rank", [2**64], ValueError),
    ("weights_per_rank", [True], TypeError),
    ("weights_per_rank", {}, TypeError),
    ("weights_per_rank", [1] * 257, ValueError),
    ("expert_parallel", 1, TypeError),
    ("gpus_per_node", 0, ValueError),
    ("gpus_per_node", 65537, ValueError),
]

# The subset that is also wrong in a caller's struct (Options fields):
# there 0 is "unset" for block_size and memory_per_rank, and
# Ownership.DEFAULT is the profile's choice.
# A float below one byte rounds down to 0, "unset" there too. Engine flag
# names are no Options keywords.
STRUCT_OK = [
    ("block_size", 0),
    ("memory_per_rank", 0),
    ("memory_per_rank", 0.5),
    ("ownership", Ownership.DEFAULT),
    ("device_memory", 0),
    ("weights_total", 0),
    ("gpus_per_node", 0),
]
BAD_STRUCT = [
    b for b in BAD if (b[0], b[1]) not in STRUCT_OK and key_name(b[0]) not in engine_flags()
]


def ids(cases: List[Tuple[str, Any, type]]) -> List[str]:
    return [f"{key}={value!r}" for key, value, _ in cases]


@pytest.fixture
def no_c_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> ctypes.CDLL:
        raise AssertionError("a C call was made")

    monkeypatch.setattr(kvshard._lib, "library", refuse)


@pytest.fixture
def seed() -> Iterator[kvshard.Deployment]:
    with kvshard.load(SEED) as dep:
        yield dep


@pytest.fixture
def qwen() -> Iterator[kvshard.Model]:
    with kvshard.load_model(QWEN35) as model:
        yield model


@pytest.mark.parametrize("key, value, exc", BAD, ids=ids(BAD))
def test_overrides_are_checked_before_any_c_call(
    key: str, value: Any, exc: type, seed: kvshard.Deployment, no_c_calls: None
) -> None:
    before = kvshard.Options()
    with pytest.raises(exc, match=key):
        kvshard.load(SEED, **{key: value})
    with pytest.raises(exc, match=key):
        kvshard.loads(TEXT, base_dir=EXAMPLES, **{key: value})
    with pytest.raises(exc, match=key):
        seed.set(key, value)
    with pytest.raises(exc, match=key):
        before.set(key, value)


@pytest.mark.parametrize("key, value, exc", BAD_STRUCT, ids=ids(BAD_STRUCT))
def test_option_fields_are_checked_before_any_c_call(
    key: str, value: Any, exc: type, qwen: kvshard.Model, no_c_calls: None
) -> None:
    with pytest.raises(exc, match=key):
        kvshard.Options(**{key: value})
    opts = kvshard.Options()
    with pytest.raises(exc, match=key):
        setattr(opts, key, value)
    assert opts == kvshard.Options()  # unchanged
    with pytest.raises(exc, match=key):
        kvshard.plan(qwen, **{key: value})
    with pytest.raises(exc, match=key):
        kvshard.compare(qwen, kvshard.Options(), **{key: value})


def test_a_later_bad_override_stops_the_load_before_the_file_is_read(
    no_c_calls: None,
) -> None:
    with pytest.raises(ValueError, match="max_memory_utilization"):
        kvshard.load(SEED, world_size=8, memory_per_rank="24GiB", max_memory_utilization=0)


def test_values_at_the_ends_of_the_ranges_are_taken() -> None:
    edges: Dict[str, Any] = dict(
        world_size=65536,
        dp_size=65536,
        block_size=2**20,
        max_seqs=2**24,
        num_speculative_tokens=1024,
        scratch_layers=0,
        context_length=2**30,
        max_linear_state_cache_slots=2**24,
        memory_per_rank=U64_MAX,
        device_memory_total=1,
        max_cache_size=0,
        max_memory_utilization=1,
    )
    with kvshard.load(SEED, **edges) as dep:
        o = dep.options
    assert {k: getattr(o, k) for k in edges} == {**edges, "max_memory_utilization": 1.0}
    assert kvshard.Options(**edges).to_dict() == {**kvshard.Options().to_dict(), **edges}


def test_byte_sizes_take_whole_floats_and_text() -> None:
    with kvshard.load(SEED, memory_per_rank=2e10, device_memory_total=2.0**40) as dep:
        o = dep.options
        assert (o.memory_per_rank, o.device_memory_total) == (20_000_000_000, 2**40)
        dep.set("max_cache_size", 12.0)
        dep.set("device_memory_free", "3GiB")
        assert (dep.options.max_cache_size, dep.options.device_memory_free) == (12, 3 * 2**30)
    # The largest float below 2**64 is a whole number of bytes.
    big = float.fromhex("0x1.fffffffffffffp+63")
    assert kvshard.Options(memory_per_rank=big).memory_per_rank == int(big)
    # Text is the library's to read, units and all.
    assert kvshard.Options(memory_per_rank="512MiB").memory_per_rank == 512 * 2**20
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(SEED, memory_per_rank="24 gigs")
    assert info.value.source == "python"


def test_enums_take_members_values_and_words() -> None:
    o = kvshard.Options(ownership=1, engine=Engine.XLLM, kv_cache_dtype="fp8_e4m3")
    assert (o.ownership, o.engine, o.kv_cache_dtype) == (Ownership.GLOBAL, Engine.XLLM, Dtype.FP8)
    with kvshard.load(SEED, ownership=Ownership.CONTIGUOUS, kv_cache_dtype=Dtype.INT8,
                      state_dtype=Dtype.FP32) as dep:
        o = dep.options
        assert (o.ownership, o.kv_cache_dtype, o.state_dtype) == (
            Ownership.CONTIGUOUS,
            Dtype.INT8,
            Dtype.FP32,
        )


def test_the_xllm_flag_name_is_checked_as_max_seqs() -> None:
    with kvshard.load(SEED, engine="xllm", max_seqs_per_batch=64) as dep:
        assert dep.options.max_seqs == 64
    with pytest.raises(kvshard.ConfigError) as info:  # a key of the xllm profile only
        kvshard.load(SEED, max_seqs_per_batch=64)
    assert info.value.code is Status.EUNKNOWNKEY


# --- the Python checks agree with the library's ---------------------------------


# Layer counts around the ends of their ranges: one count, a count past
# 32 bits, and the most entries the library reads and one more.
COUNT_PROBES = [[31, 30], [0], [2**32 - 1], [2**32], [1] * 256, [1] * 257]
# Sizes the same way, around 64 bits.
SIZE_PROBES = [[17 * 2**30, 16 * 2**30], [0], [2**64 - 1], [2**64], [1] * 256, [1] * 257]
# Shares: the ends, past them, and 0, which text does not take.
FRACTION_PROBES = [(0.5, "0.5"), (1.0, "1"), (1e-09, "0.000000001"), (1.5, "1.5"),
                   (0.0, "0"), (2, "2")]


def text_probes(spec: Any) -> List[Tuple[Any, str]]:
    """(native value, the same value as text) pairs around a spec's range."""
    if spec.kind is Kind.COUNTS:
        return [(v, ",".join(map(str, v))) for v in COUNT_PROBES]
    if spec.kind is Kind.SIZES:
        return [(v, ",".join(map(str, v))) for v in SIZE_PROBES]
    if spec.kind is Kind.FRACTION:
        return FRACTION_PROBES
    if spec.kind in (Kind.INTEGER, Kind.BYTES):
        values = [spec.low, spec.high, spec.high + 1] + ([spec.low - 1] if spec.low else [])
        # A native value that is how the struct holds a word (RESERVE_AUTO)
        # is that word; as text, the same number is a number.
        words = {value: word for word, value in spec.words}
        return [(v, words.get(v, str(v))) for v in values]
    if spec.kind is Kind.ENUM:
        # The library's own name of every member, as the text.
        beyond = max(spec.enum) + 1  # no member, no word
        return [(member, member.label) for member in spec.enum] + [(beyond, str(beyond))]
    return [(True, "true"), (False, "false")]


def python_takes(call: Callable[[], Any]) -> bool:
    try:
        call()
    except (TypeError, ValueError):
        return False
    return True


def library_takes(call: Callable[[], Any]) -> bool:
    try:
        call()
    except kvshard.KvshardError as exc:
        # A bad rule word, and too many layer counts, are EPARTITION; too
        # many sizes of weights_per_rank EWEIGHTS.
        assert exc.code in (Status.ERANGE, Status.EPARALLEL, Status.EPARTITION,
                            Status.EWEIGHTS), exc
        return False
    return True


@pytest.mark.parametrize("spec", OPTIONS, ids=[s.name for s in OPTIONS])
def test_python_takes_as_text_what_the_library_takes(spec: Any) -> None:
    seen = set()
    for value, text in text_probes(spec):
        in_c = library_takes(lambda: kvshard.Options().set(spec.name, text))
        assert python_takes(lambda: kvshard.Options().set(spec.name, value)) == in_c, (
            spec.name,
            value,
            text,
        )
        seen.add(in_c)
    assert seen == ({True} if spec.kind is Kind.BOOL else {True, False})


def tiny_model() -> kvshard.Model:
    return kvshard.create_model(4, num_attention_heads=4, num_kv_heads=2, head_dim=64)


# The options of the struct: compare's and fit's own inputs (EXPLORE_KEYS)
# are no fields of kvshard_options.
IN_STRUCT = [s for s in OPTIONS if s.name not in EXPLORE_KEYS]


@pytest.mark.parametrize("spec", IN_STRUCT, ids=[s.name for s in IN_STRUCT])
def test_python_takes_in_a_struct_what_the_library_takes(spec: Any) -> None:
    # kvshard_deployment_create checks a caller's struct and nothing else.
    bits = 64 if spec.kind is Kind.BYTES else 32
    probes = [v for v, _ in text_probes(spec) if spec.kind is not Kind.ENUM]
    if spec.kind in (Kind.INTEGER, Kind.BYTES):
        probes = [v for v in probes + [0] if 0 <= v < 2**bits]
    if spec.kind is Kind.ENUM:
        probes = list(spec.enum) + [max(spec.enum) + 1]
    if spec.kind is Kind.COUNTS:  # a uint32_t array holds any 32-bit count
        probes = [v for v in COUNT_PROBES if max(v) < 2**32] + [[]]
    if spec.kind is Kind.SIZES:  # a uint64_t array holds any 64-bit size
        probes = [v for v in SIZE_PROBES if max(v) < 2**64] + [[]]
    if spec.kind is Kind.FRACTION:  # a struct holds 0 for unset
        probes = [v for v, _ in FRACTION_PROBES]
    seen = set()
    for value in probes:
        raw = kvshard.Options()
        if spec.kind is Kind.COUNTS:
            raw._hold_partition(tuple(value))  # past the Python checks
        elif spec.kind is Kind.SIZES:
            raw._hold_weights(tuple(value))
        else:
            setattr(raw._c, spec.name, value)  # past the Python checks
        model = tiny_model()
        try:
            in_c = library_takes(lambda: kvshard.Deployment.create(model, raw).close())
        finally:
            model.close()
        assert python_takes(lambda: kvshard.Options(**{spec.name: value})) == in_c, (
            spec.name,
            value,
        )
        seen.add(in_c)
    # A struct may hold any 64-bit byte count (0: unset), any bool, and up
    # to 256 sizes of weights_per_rank.
    always = (Kind.BOOL, Kind.BYTES)
    assert seen == ({True} if spec.kind in always else {True, False})


def test_the_struct_and_the_options_class_follow_the_table() -> None:
    import ast
    import inspect

    from kvshard import _lib, _options

    names = [spec.name for spec in OPTIONS]
    # The fields, the pointer to the engine profiles' settings after
    # context_length, and pp_partition as its array and its length; the
    # options of EXPLORE_KEYS are no fields.
    in_struct = [name for name in names if name not in EXPLORE_KEYS]
    at = in_struct.index("context_length") + 1
    fields = ["size", *in_struct[:at], "settings", *in_struct[at:]]
    fields.insert(fields.index("pp_partition") + 1, "pp_partition_count")
    fields.insert(fields.index("weights_per_rank") + 1, "weights_per_rank_count")
    assert [f[0] for f in _lib.COptions._fields_] == fields
    assert list(kvshard.Options.FIELDS) == names
    # The annotations Options declares for type checkers name options, in
    # the table's order: today every one; an option the library adds works
    # before it has its line there.
    tree = ast.parse(inspect.getsource(_options.Options))
    block = next(n for n in ast.walk(tree) if isinstance(n, ast.If))
    declared = [a.target.id for a in block.body if isinstance(a, ast.AnnAssign)]
    assert declared == [name for name in names if name in declared]
    assert len(declared) == 29


# --- settings: the library's rows -------------------------------------------------


# Every setting's type is one the binding checks (a new type fails here).
CHECKED = (SettingType.INTEGER, SettingType.BYTES, SettingType.SIZES, SettingType.FRACTION,
           SettingType.DECIMAL, SettingType.BOOL)
TEXT_ONLY = (SettingType.WORD, SettingType.TEXT)
NUMERIC = [s for s in SETTINGS if s.type in CHECKED]


def test_every_setting_has_a_type_the_binding_knows() -> None:
    options_only = {SettingType.COUNTS}
    assert {s.type for s in SETTINGS} == set(SettingType) - options_only
    assert all(s.type in CHECKED + TEXT_ONLY + (SettingType.JSON,) for s in SETTINGS)


def setting_probes(info: kvshard.SettingInfo) -> List[Tuple[Any, str]]:
    """(native value, the same value as text) pairs around a setting's range."""
    if info.type in (SettingType.INTEGER, SettingType.BYTES, SettingType.SIZES):
        values = [info.min, info.max, info.max + 1] + ([info.min - 1] if info.min else [])
        return [(v, str(v)) for v in values]
    if info.type is SettingType.FRACTION:
        return [(0, "0"), (1e-15, ".000000000000001"), (0.5, "0.5"), (1, "1"), (1.5, "1.5")]
    if info.type is SettingType.DECIMAL:
        top = info.max
        return [(0, "0"), (1e-15, ".000000000000001"), (0.5, "0.5"), (top, str(top)),
                (top + 0.5, f"{top}.5")]
    assert info.type is SettingType.BOOL, info
    return [(True, "true"), (False, "false")]


@pytest.mark.parametrize("info", NUMERIC, ids=[s.key for s in NUMERIC])
def test_python_takes_for_a_setting_what_the_library_takes(info: kvshard.SettingInfo) -> None:
    seen = set()
    for value, text in setting_probes(info):
        in_c = library_takes(lambda: kvshard.Options().set(info.key, text))
        for python in (
            lambda: kvshard.Options().set(info.key, value),
            lambda: kvshard.Options(**{info.key: value}),
            lambda: setattr(kvshard.Options(), info.key, value),
        ):
            assert python_takes(python) == in_c, (info.key, value, text)
        seen.add(in_c)
    assert seen == ({True} if info.type is SettingType.BOOL else {True, False})


WORDS = [s for s in SETTINGS if s.type in TEXT_ONLY]


@pytest.mark.parametrize("info", WORDS, ids=[s.key for s in WORDS])
def test_a_word_or_a_text_is_the_library_s_to_check(info: kvshard.SettingInfo) -> None:
    # The binding knows no words and no version grammar: a native value is a
    # TypeError before any C call, and any str goes to the library as it is.
    for value in (1, True, 0.5, None):
        with pytest.raises(TypeError, match=info.key):
            kvshard.Options().set(info.key, value)
        with pytest.raises(TypeError, match=info.key):
            kvshard.Options(**{info.key: value})
    with pytest.raises(kvshard.ConfigError) as caught:
        kvshard.Options().set(info.key, "no such value")
    assert (caught.value.code, caught.value.source) == (Status.ERANGE, "python")


def test_a_json_object_is_sent_as_its_text() -> None:
    # vLLM's --speculative-config: the library reads "method" and
    # "num_speculative_tokens" (0 to 1024) from the object; a dict reaches
    # it as json.dumps writes it, so a dict and its text fare alike.
    import json

    key = "speculative_config"
    for value, code in (
        ({"method": "mtp", "num_speculative_tokens": 2}, None),
        ({"num_speculative_tokens": 1024, "model": "draft"}, None),
        ({"num_speculative_tokens": 1025}, Status.ERANGE),
        ({"method": "mtp"}, Status.EMISSING),
        ({"method": 3, "num_speculative_tokens": 1}, Status.ETYPE),
    ):
        for given in (value, json.dumps(value)):
            o = kvshard.Options()
            if code is None:
                o.set(key, given)
                assert o.speculative_config == {k: v for k, v in value.items()
                                                if k in ("method", "num_speculative_tokens")}
            else:
                with pytest.raises(kvshard.ConfigError) as caught:
                    o.set(key, given)
                assert caught.value.code is code, (given, caught.value)
    with pytest.raises(kvshard.ConfigError) as caught:
        kvshard.Options(speculative_config="[1, 2]")  # text: the library's to refuse
    assert caught.value.code is Status.ETYPE


def test_the_setting_rows_are_the_library_s() -> None:
    # Each profile's inputs, in the order of its table (docs/engines.md
    # lists them); a key two profiles read is the first one's row. A
    # default the profile works out is the library's words for it. The
    # pipeline stages are no setting: vLLM's pipeline_parallel_size and
    # SGLang's pp_size are the option pp_size.
    I, B, F, W, R, T, J, D = (SettingType.INTEGER, SettingType.BYTES, SettingType.BOOL,
                              SettingType.WORD, SettingType.FRACTION, SettingType.TEXT,
                              SettingType.JSON, SettingType.DECIMAL)
    S = SettingType.SIZES
    x, v, s, t = Engine.XLLM, Engine.VLLM, Engine.SGLANG, Engine.TRTLLM
    ranks, by_version = 65536, "by model and version"
    assert [tuple(row) for row in SETTINGS] == [
        ("enable_prefix_cache", F, 0, 1, True, "true", x),
        ("max_linear_state_cache_slots", I, 0, 2**24, 0, "0", x),
        ("device_memory_total", B, 1, U64_MAX, 0, "0", x),
        ("device_memory_free", B, 1, U64_MAX, 0, "0", x),
        ("max_memory_utilization", R, 0, 1, 0.8, "0.8", x),
        ("max_cache_size", B, 0, U64_MAX, 0, "0", x),
        ("engine_version", T, 0, 0, *["the newest the profile covers"] * 2, x),
        ("max_concurrent_requests", I, 1, 2**24, 200, "200", x),
        ("tensor_parallel_size", I, 1, ranks, *["world_size / dp_size"] * 2, v),
        ("data_parallel_size", I, 1, ranks, "dp_size", "dp_size", v),
        ("max_model_len", I, 1, 2**30, *["max_position_embeddings"] * 2, v),
        ("max_num_batched_tokens", I, 1, 2**30, 8192, "8192", v),
        ("gpu_memory_utilization", R, 0, 1, *["0.92 (0.9 before 0.20.0)"] * 2, v),
        ("num_gpu_blocks_override", I, 1, 2**31, "none", "none", v),
        ("dtype", W, 0, 0, "auto", "auto", v),
        ("mamba_cache_dtype", W, 0, 0, "auto", "auto", v),
        ("enable_prefix_caching", F, 0, 1, by_version, by_version, v),
        ("mamba_cache_mode", W, 0, 0, by_version, by_version, v),
        ("mamba_block_size", I, 1, 2**24, *["the model's chunk size"] * 2, v),
        ("enforce_eager", F, 0, 1, False, "false", v),
        ("speculative_config", J, 0, 0, "none", "none", v),
        ("draft_attention_layers", I, 0, 1024, "by method", "by method", v),
        # 2^64 - 1 stands for "none" (not given): a number stops below it.
        ("non_kv_memory", S, 0, U64_MAX - 1, "none", "none", v),
        ("decode_context_parallel_size", I, 1, ranks, 1, "1", v),
        ("prefill_context_parallel_size", I, 1, ranks, 1, "1", v),
        ("tp_size", I, 1, ranks, "world_size", "world_size", s),
        ("enable_dp_attention", F, 0, 1, False, "false", s),
        ("attn_cp_size", I, 1, ranks, 1, "1", s),
        ("mem_fraction_static", R, 0, 1, "none", "none", s),
        ("max_total_tokens", I, 1, 2**32 - 1, "none", "none", s),
        ("max_mamba_cache_size", I, 1, 2**30, "none", "none", s),
        ("mamba_full_memory_ratio", D, 0, 100, 0.9, "0.9", s),
        ("mamba_radix_cache_strategy", W, 0, 0, "auto", "auto", s),
        ("mamba_scheduler_strategy", W, 0, 0, "auto", "auto", s),
        ("disable_radix_cache", F, 0, 1, False, "false", s),
        ("disable_overlap_schedule", F, 0, 1, False, "false", s),
        ("chunked_prefill_size", I, 1, 2**32 - 1, "none", "none", s),
        ("speculative_num_draft_tokens", I, 0, 1024, 0, "0", s),
        ("enable_dsa_cache_layer_split", F, 0, 1, False, "false", s),
        # The C row keeps 31 bytes of this one; the binding reads it whole.
        ("multimodal", F, 0, 1, *["whether the config has vision_config"] * 2, s),
        ("enable_unified_memory", F, 0, 1, False, "false", s),
        ("enable_hierarchical_cache", F, 0, 1, False, "false", s),
        ("device_compute_capability", D, 0, 100, "none", "none", s),
        ("ep_size", I, 1, ranks, "none", "none", t),
        ("enable_attention_dp", F, 0, 1, False, "false", t),
        ("max_num_tokens", I, 1, 2**32 - 1, 8192, "8192", t),
        ("max_seq_len", I, 1, 2**32 - 1, *["the config's max_position_embeddings"] * 2, t),
        ("max_beam_width", I, 1, 1024, 1, "1", t),
        ("kv_cache_free_gpu_memory_fraction", R, 0, 1, 0.9, "0.9", t),
        ("kv_cache_config.max_tokens", I, 1, 2**32 - 1, "none", "none", t),
        ("kv_cache_config.max_gpu_total_bytes", B, 0, U64_MAX - 1, "none", "none", t),
        ("kv_cache_config.max_attention_window", T, 0, 0, "none", "none", t),
        ("disable_overlap_scheduler", F, 0, 1, False, "false", t),
        ("backend", W, 0, 0, "pytorch", "pytorch", t),
        ("extra_llm_api_options", T, 0, 0, "none", "none", t),
        ("peak_memory", S, 1, U64_MAX, "none", "none", t),
    ]
    # kvshard_setting_find answers each key with the row kvshard_setting_info_at gave.
    assert [kvshard.setting_info(s.key) for s in SETTINGS] == list(SETTINGS)
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.setting_info("world_size")  # an option, not a setting
    assert info.value.code is Status.EUNKNOWNKEY
    with pytest.raises(TypeError):
        kvshard.setting_info(4)  # type: ignore[arg-type]


def test_a_setting_s_default_that_text_cannot_give_is_refused_as_a_value() -> None:
    # device_memory_total defaults to 0 ("none"), but as text it takes 1
    # byte and up: 0 is a ValueError by every path, as the library
    # refuses "0".
    for call in (
        lambda: kvshard.Options(device_memory_total=0),
        lambda: kvshard.Options().set("device_memory_total", 0),
        lambda: kvshard.load(SEED, device_memory_total=0),
    ):
        with pytest.raises(ValueError, match="device_memory_total must be a byte count from 1"):
            call()
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.Options(device_memory_total="0")
    assert (info.value.code, info.value.source) == (Status.ERANGE, "python")


def test_an_unknown_type_takes_text_only() -> None:
    # The binding knows no words of its own, nor a type of a later library:
    # a native value for one is a TypeError and a str goes to the library.
    from kvshard import _settings

    word = SETTINGS[0]._replace(type=SettingType.WORD)
    with pytest.raises(TypeError, match="must be a str"):
        _settings.setting_text(word, 1)
    assert _settings.setting_text(word, "anything") == "anything"
    later = SETTINGS[0]._replace(type=9)  # a type of a later library
    with pytest.raises(TypeError, match="must be a str"):
        _settings.setting_text(later, True)
    assert _settings.value_of(9, "as written") == "as written"
