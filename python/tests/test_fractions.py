"""Fractions reach the library exactly, whichever way they are given: as an
override, through Deployment.set, Options.set or an Options attribute, as a
flag, or in the settings a deployment is created with.

max_memory_utilization is a setting of the xllm profile. Every native
value goes to the library as text: the shortest decimal that reads back as
the double, in positional notation, which the library rounds to the
nearest double, so to that double itself. The binding holds no double of
its own.

The xllm profile keeps trunc(device_memory_total x (1 - u)) bytes of the
device back, in double arithmetic, and plans the rest of
device_memory_free; the capacity's memory_per_rank and budget figures
report that budget. With 2**60 bytes on the device, one unit in the last
place of u moves the budget by hundreds of bytes, so each budget below
tells whether u arrived as the very double given."""

from __future__ import annotations

import math
import random
from typing import Any, Dict, Iterator, List

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import Status
from kvshard._settings import FRACTION_CHARS, fraction_text

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
DEVICE = 2**60
XLLM: Dict[str, Any] = dict(
    world_size=4, engine="xllm", device_memory_total=DEVICE, device_memory_free=DEVICE
)
KEY = "max_memory_utilization"
# 2/3 and 0.1 + 0.2 need 16 and 17 digits, the largest double below 1
# needs 16.
VALID = [2 / 3, 1e-5, 0.9, 1.0, 0.123456789012345, 0.1 + 0.2, math.nextafter(1.0, 0.0)]


def budget(u: float) -> int:
    """The xllm budget, as the profile computes it (floats are C doubles)."""
    held = math.trunc(float(DEVICE) * (1.0 - u))
    return int(float(DEVICE) - held)


def test_the_figures_tell_two_thirds_from_its_15_digit_rounding() -> None:
    # 2/3 = 0.6666666666666666 needs 16 digits; 0.666666666666667 is
    # another double with another budget.
    assert budget(2 / 3) == 768614336404564608
    assert budget(0.666666666666667) == 768614336404564992
    assert budget(math.nextafter(2 / 3, 1.0)) != budget(2 / 3)


def planned_budget(dep: kvshard.Deployment) -> int:
    with dep.plan() as plan:
        figure = plan.capacity.memory_per_rank
        assert plan.capacity_figure("budget") == figure
    assert figure is not None
    return figure


@pytest.fixture
def model() -> Iterator[kvshard.Model]:
    with kvshard.load_model(QWEN35) as m:
        yield m


@pytest.mark.parametrize("u", VALID, ids=repr)
def test_every_path_gives_the_library_the_same_double(u: float, model: kvshard.Model) -> None:
    want = budget(u)
    with kvshard.load(QWEN35, max_memory_utilization=u, **XLLM) as dep:
        # Read back from the deployment's own settings in C.
        assert dep.setting(KEY) == u
        assert dep.options.max_memory_utilization == u
        assert planned_budget(dep) == want
        with dep.compare() as cmp:
            assert cmp.rows[0].ok
    with kvshard.load(QWEN35, **XLLM) as dep:
        dep.set(KEY, u)
        assert dep.setting(KEY) == u
        assert planned_budget(dep) == want
    with kvshard.load(QWEN35, **XLLM) as dep:
        # As a flag, with the text the binding sends.
        dep.apply_args([f"--{KEY}={fraction_text(u)}"])
        assert dep.setting(KEY) == u
        assert planned_budget(dep) == want
    with kvshard.plan(model, max_memory_utilization=u, **XLLM) as plan:
        assert plan.options.max_memory_utilization == u
        assert plan.capacity.memory_per_rank == want
    opts = kvshard.Options(**{**XLLM, "engine": kvshard.Engine.XLLM})
    opts.set(KEY, u)
    assert opts.max_memory_utilization == u
    with kvshard.plan(model, opts) as plan:
        assert plan.capacity.memory_per_rank == want
    opts.max_memory_utilization = 0.5
    opts.max_memory_utilization = u  # the attribute
    with kvshard.compare(model, opts) as cmp:
        assert cmp.rows[0].ok
    described = kvshard.create_model(
        4, num_attention_heads=4, num_kv_heads=2, head_dim=64, model_type="tiny"
    )
    with kvshard.Deployment.create(described, opts) as dep:
        assert dep.setting(KEY) == u
        assert planned_budget(dep) == budget(u)


@pytest.mark.parametrize(
    "u, text",
    [
        (1e-5, "0.00001"),
        (2 / 3, "0.6666666666666666"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1.0, "1.0"),
        (0.9, "0.9"),
        (1e-16, "0.0000000000000001"),
        # 64 characters with the leading zero, then only without it.
        (1e-62, "0." + "0" * 61 + "1"),
        (1e-63, "." + "0" * 62 + "1"),
    ],
    ids=repr,
)
def test_the_text_sent_is_the_shortest_positional_decimal(u: float, text: str) -> None:
    assert fraction_text(u) == text
    assert len(text) <= FRACTION_CHARS
    o = kvshard.Options()
    o.set(KEY, text)  # the library reads the text ...
    assert o.max_memory_utilization == u  # ... as the double


def test_the_library_reads_64_characters_and_refuses_65() -> None:
    longest = "." + "0" * 62 + "1"
    assert len(longest) == FRACTION_CHARS == 64
    o = kvshard.Options()
    o.set(KEY, longest)
    assert o.max_memory_utilization == 1e-63
    with pytest.raises(kvshard.ConfigError) as info:
        o.set(KEY, "0" + longest)
    assert info.value.code is Status.ETYPE
    assert o.max_memory_utilization == 1e-63  # unchanged on failure


def test_random_doubles_read_back_exactly() -> None:
    # Doubles of every magnitude down to 1e-46 (17 significant digits after
    # 45 zeros still fit 64 characters), and doubles next to short decimals:
    # each goes as its text and reads back from the library (its own
    # "%.17g") as the very same double.
    rng = random.Random(20250301)
    values: List[float] = []
    for _ in range(1500):
        values.append(rng.uniform(0.1, 1.0) * 10.0 ** -rng.randrange(0, 46))
    for short in (0.1, 0.2, 0.3, 0.7, 0.8, 0.95, 0.999):
        values += [math.nextafter(short, 0.0), short, math.nextafter(short, 1.0)]
    o = kvshard.Options()
    for u in values:
        assert fraction_text(u) is not None, u
        o.set(KEY, u)
        assert o.max_memory_utilization == u, (u, fraction_text(u))


@pytest.mark.parametrize("u", [0, 0.0, -0.25, 1.0000001, 2, math.nan, math.inf, -math.inf])
def test_fractions_out_of_range_raise_value_error(u: float, monkeypatch: pytest.MonkeyPatch) -> None:
    with kvshard.load(SEED) as dep:
        monkeypatch.setattr(kvshard._lib, "library", lambda: pytest.fail("a C call was made"))
        for call in (
            lambda: kvshard.load(SEED, max_memory_utilization=u),
            lambda: dep.set(KEY, u),
            lambda: kvshard.Options(max_memory_utilization=u),
            lambda: kvshard.Options().set(KEY, u),
            lambda: setattr(kvshard.Options(), KEY, u),
        ):
            with pytest.raises(ValueError, match=KEY):
                call()
        monkeypatch.undo()


@pytest.mark.parametrize("u", [1e-64, 2.2250738585072014e-308, 5e-324], ids=repr)
def test_fractions_too_small_for_the_grammar_raise_value_error(
    u: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In range, but their shortest positional decimal is longer than the
    # 64 characters the library reads: refused, never rounded.
    assert fraction_text(u) is None
    with kvshard.load(SEED) as dep:
        monkeypatch.setattr(kvshard._lib, "library", lambda: pytest.fail("a C call was made"))
        for call in (
            lambda: dep.set(KEY, u),
            lambda: kvshard.Options(max_memory_utilization=u),
        ):
            with pytest.raises(ValueError, match="64 characters"):
                call()
        monkeypatch.undo()


def test_a_fraction_as_text_is_the_library_s_to_read() -> None:
    with kvshard.load(SEED, max_memory_utilization="0.75") as dep:
        assert dep.options.max_memory_utilization == 0.75
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(SEED, max_memory_utilization="2/3")
    assert (info.value.code, info.value.source) == (Status.ETYPE, "python")
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(SEED, max_memory_utilization="1e-5")  # no exponent in the grammar
    assert info.value.code is Status.ETYPE


def test_a_later_value_replaces_an_earlier_one() -> None:
    with kvshard.load(QWEN35, max_memory_utilization=2 / 3, **XLLM) as dep:
        dep.apply_args(["--max_seqs=64"])  # another option: the setting stays
        assert dep.setting(KEY) == 2 / 3
        assert planned_budget(dep) == budget(2 / 3)
        dep.apply_args([f"--{KEY}=0.5"])
        assert dep.setting(KEY) == 0.5
        assert planned_budget(dep) == budget(0.5)
        dep.set(KEY, 2 / 3)
        dep.set(KEY, ".666666666666667")  # text: the library's value
        assert dep.setting(KEY) == 0.666666666666667
        assert planned_budget(dep) == budget(0.666666666666667)


def test_errors_keep_their_place_beside_a_fraction() -> None:
    with kvshard.load(QWEN35, max_memory_utilization=2 / 3, **XLLM) as dep:
        dep.set("layerwise_split_size", 3, origin="command line --layerwise_split_size")
        dep.set("enable_layerwise_split", True)
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert info.value.code is Status.ESPLIT
    assert info.value.source == "command line --layerwise_split_size"


def test_an_error_about_a_fraction_has_its_figures_and_its_place() -> None:
    # 1e-16 needs 16 digits after the point. Its budget, 128 bytes, holds no
    # two state slots; its 15-digit rounding (1e-15) would give 1152 bytes.
    assert (budget(1e-16), budget(1e-15)) == (128, 1152)
    with kvshard.load(QWEN35, max_memory_utilization=1e-16, **XLLM) as dep:
        assert dep.setting(KEY) == 1e-16
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert info.value.code is Status.ENOBLOCK
    assert "budget of 128 bytes" in info.value.message
    assert info.value.source == "python"
