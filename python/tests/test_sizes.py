"""Byte sizes by every path that takes one: memory_per_rank (an Options
field, an attribute, Options.set, an override, Deployment.set), the
engine profiles' byte settings, vLLM's --kv-cache-memory-bytes, and the
measured memory of Plan.blocks_for.

Each takes an int; a str the library's size grammar reads (a whole number
of bytes, or a number, a fraction allowed, and a unit: B, KB, MB, GB, TB
in powers of 1000, KiB, MiB, GiB, TiB in powers of 1024, the value rounded
down to a byte); and a float of bytes, taken as its exact binary value
rounded down. A float's shortest decimal is a rounding of its own:
1.2345678901234567e19 holds 12,345,678,901,234,567,168 bytes, not the
12,345,678,901,234,567,000 its repr reads as. A negative, NaN or infinite
float is a ValueError naming the key, before any C call.
"""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Iterator, List, Tuple

import pytest
from conftest import EXAMPLES, SEED

import kvshard

NANO_VLLM = EXAMPLES / "nemotron_3_nano_30b_a3b_vllm.yaml"
QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"

GIB = 2**30
#: (what is given, the bytes it is), worked out by hand.
FORMS: List[Tuple[Any, int]] = [
    (80 * GIB, 85_899_345_920),
    ("80GiB", 85_899_345_920),
    ("72.5GiB", 72 * GIB + GIB // 2),  # 77,846,282,240
    ("141GB", 141_000_000_000),
    ("512 MiB", 536_870_912),
    ("3.72GiB", 3_994_319_585),  # 3,994,319,585.28, rounded down
    (77_846_282_240.0, 77_846_282_240),
    (2.5e9, 2_500_000_000),
    (1_000_000_000.75, 1_000_000_000),  # a binary fraction: .75 is exact
    (4096.999, 4096),
    (1.2345678901234567e19, 12_345_678_901_234_567_168),
    (float.fromhex("0x1.fffffffffffffp+63"), 2**64 - 2**11),  # the largest below 2**64
]
assert 72 * GIB + GIB // 2 == 77_846_282_240
assert int(1.2345678901234567e19) == 12_345_678_901_234_567_168 != int(
    __import__("decimal").Decimal(repr(1.2345678901234567e19))
)

#: Floats that are no byte count, and the other types that are none.
NOT_FLOATS = [-1.0, -0.5, float("nan"), float("inf"), float("-inf")]
NOT_SIZES = [(True, TypeError), (None, TypeError), ([1], TypeError), (1 + 2j, TypeError)]


def ids(forms: List[Tuple[Any, int]]) -> List[str]:
    return [repr(given) for given, _ in forms]


@pytest.fixture
def no_c_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> ctypes.CDLL:
        raise AssertionError("a C call was made")

    monkeypatch.setattr(kvshard._lib, "library", refuse)


# --- memory_per_rank ----------------------------------------------------------------


@pytest.mark.parametrize("given, want", FORMS, ids=ids(FORMS))
def test_memory_per_rank_by_every_path(given: Any, want: int) -> None:
    assert kvshard.Options(memory_per_rank=given).memory_per_rank == want
    o = kvshard.Options()
    o.memory_per_rank = given
    assert o.memory_per_rank == want
    o = kvshard.Options()
    o.set("memory_per_rank", given)
    assert o.memory_per_rank == want
    with kvshard.load(SEED, memory_per_rank=given) as dep:
        assert dep.options.memory_per_rank == want
        dep.set("memory_per_rank", 1)
        dep.set("memory_per_rank", given)
        assert dep.options.memory_per_rank == want


@pytest.mark.parametrize("given", NOT_FLOATS, ids=repr)
def test_memory_per_rank_refuses_floats_that_are_no_size(given: float, no_c_calls: None) -> None:
    calls: List[Callable[[], Any]] = [
        lambda: kvshard.Options(memory_per_rank=given),
        lambda: setattr(kvshard.Options(), "memory_per_rank", given),
        lambda: kvshard.Options().set("memory_per_rank", given),
        lambda: kvshard.load(SEED, memory_per_rank=given),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="memory_per_rank must be a byte count of 0 or more"):
            call()


def test_memory_per_rank_refuses_other_types(no_c_calls: None) -> None:
    for given, exc in NOT_SIZES:
        with pytest.raises(exc, match="memory_per_rank"):
            kvshard.Options(memory_per_rank=given)
        with pytest.raises(exc, match="memory_per_rank"):
            kvshard.load(SEED, memory_per_rank=given)


def test_below_one_byte_is_zero() -> None:
    # 0.5 bytes round down to 0: "unset" in a caller's struct, and refused
    # as text, as the library refuses "0" for the key.
    assert kvshard.Options(memory_per_rank=0.5).memory_per_rank == 0
    with pytest.raises(ValueError, match=r"memory_per_rank must be a byte count from 1 .*not 0 "
                                         r"\(0\.5 rounded down\)"):
        kvshard.Options().set("memory_per_rank", 0.5)
    with pytest.raises(ValueError, match="memory_per_rank"):
        kvshard.Options(memory_per_rank=2.0**64)  # past 64 bits


def test_the_library_refuses_text_it_cannot_read() -> None:
    # A str is the library's grammar: a fraction needs a unit, units are
    # case-sensitive.
    for text in ("1.5", "80gib", "80 G", "-1GiB"):
        with pytest.raises(kvshard.ConfigError) as info:
            kvshard.Options(memory_per_rank=text)
        assert info.value.source == "python", text


# --- the engine profiles' byte settings ---------------------------------------------------

# non_kv_memory takes one size a stage too; one size by every path as these.
BYTE_SETTINGS = [s.key for s in kvshard.settings()
                 if s.type in (kvshard.SettingType.BYTES, kvshard.SettingType.SIZES)]


def test_the_byte_settings() -> None:
    assert BYTE_SETTINGS == ["device_memory_total", "device_memory_free", "max_cache_size",
                             "non_kv_memory", "kv_cache_config.max_gpu_total_bytes",
                             "peak_memory"]


@pytest.mark.parametrize("key", BYTE_SETTINGS)
def test_a_byte_setting_by_every_path(key: str) -> None:
    # A deployment takes a setting under a profile that reads it.
    engine = kvshard.setting_info(key).engine.label
    for given, want in FORMS:
        assert kvshard.Options(**{key: given}).setting(key) == want, given
        o = kvshard.Options()
        setattr(o, key, given)
        assert getattr(o, key) == want
        o = kvshard.Options()
        o.set(key, given)
        assert o.setting(key) == want
        with kvshard.load(SEED, engine=engine, **{key: given}) as dep:
            assert dep.setting(key) == want
            dep.set(key, 1)
            dep.set(key, given)
            assert dep.setting(key) == want


@pytest.mark.parametrize("key", BYTE_SETTINGS)
def test_a_byte_setting_refuses_floats_that_are_no_size(key: str, no_c_calls: None) -> None:
    for given in NOT_FLOATS:
        for call in (
            lambda: kvshard.Options(**{key: given}),
            lambda: kvshard.Options().set(key, given),
            lambda: kvshard.load(SEED, **{key: given}),
        ):
            with pytest.raises(ValueError, match=f"{key} must be a byte count of 0 or more"):
                call()


@pytest.mark.parametrize("given, want", FORMS[:10], ids=ids(FORMS[:10]))
def test_vllm_s_kv_cache_memory_bytes(given: Any, want: int) -> None:
    # vLLM's name of memory_per_rank, in both of its spellings.
    with kvshard.load(NANO_VLLM) as dep:
        for key in ("kv_cache_memory_bytes", "kv-cache-memory-bytes"):
            dep.set("memory_per_rank", 1)
            dep.set(key, given)
            assert dep.options.memory_per_rank == want
        for bad in NOT_FLOATS:
            with pytest.raises(ValueError, match="kv-cache-memory-bytes must be a byte count"):
                dep.set("kv-cache-memory-bytes", bad)
        assert dep.options.memory_per_rank == want  # unchanged


def test_a_float_budget_gives_the_engine_s_blocks() -> None:
    # 3,994,319,585.9 bytes hold the 3,994,319,585 of the worked example:
    # 311 blocks (test_engines).
    for given in (3_994_319_585.9, "3.72GiB", 3_994_319_585):
        with kvshard.load(NANO_VLLM, memory_per_rank=given) as dep, dep.plan() as plan:
            assert plan.engine_figure("budget") == 3_994_319_585
            assert plan.engine_figure("num_gpu_blocks") == 311


# --- measured memory --------------------------------------------------------------------


@pytest.fixture
def xllm() -> Iterator[kvshard.Plan]:
    with kvshard.load(QWEN35, world_size=4, engine="xllm", memory_per_rank="20GiB") as dep:
        with dep.plan() as plan:
            yield plan


def test_blocks_for_takes_every_form(seed_plan: kvshard.Plan, xllm: kvshard.Plan) -> None:
    # The seed's 20 GiB hold 197,493 blocks (test_seed); half a byte more
    # is no byte more.
    for given in (20 * GIB, "20GiB", 20 * GIB + 0.5, float(20 * GIB), "21.474836480GB"):
        assert seed_plan.blocks_for(given).num_blocks == 197_493, given
    for given, want in FORMS:
        if 20 * GIB <= want < 2**40:  # room for a block, and for the seed's figures
            assert seed_plan.blocks_for(given) == seed_plan.blocks_for(want), given
    # The budget is what is left after the reserved bytes (both sizes).
    for memory, reserved in ((10 * GIB, GIB), ("10GiB", "1GiB"), (10 * GIB + 0.5, GIB + 0.99),
                             (10.0 * GIB, "1073741824")):
        assert xllm.blocks_figure("budget", memory, reserved_bytes=reserved) == 9 * GIB
    assert seed_plan.blocks_for(20 * GIB, extra_bytes_per_block=2.75) == seed_plan.blocks_for(
        20 * GIB, extra_bytes_per_block=2
    )


def test_blocks_for_refuses_floats_that_are_no_size(
    seed_plan: kvshard.Plan, no_c_calls: None
) -> None:
    for given in NOT_FLOATS:
        with pytest.raises(ValueError, match="memory must be a byte count of 0 or more"):
            seed_plan.blocks_for(given)
        with pytest.raises(ValueError, match="reserved_bytes must be a byte count"):
            seed_plan.blocks_for(20 * GIB, reserved_bytes=given)
        with pytest.raises(ValueError, match="extra_bytes_per_block must be a byte count"):
            seed_plan.blocks_for(20 * GIB, extra_bytes_per_block=given)
    with pytest.raises(TypeError, match="memory"):
        seed_plan.blocks_for(True)
    with pytest.raises(TypeError, match="extra_bytes_per_block"):
        seed_plan.blocks_for(20 * GIB, extra_bytes_per_block="2")  # type: ignore[arg-type]
