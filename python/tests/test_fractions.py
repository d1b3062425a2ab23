"""Fractions reach the library exactly, whichever way they are given: as an
override, through Deployment.set or Options.set, or as an Options field.

The xllm profile keeps trunc(device_memory_total x (1 - u)) bytes of the
device back, in double arithmetic, and plans the rest of
device_memory_free; Capacity.memory_per_rank reports that budget. With
2**60 bytes on the device, one unit in the last place of u moves the
budget by hundreds of bytes, so each budget below tells whether u arrived
as the very double given."""

from __future__ import annotations

import math
from typing import Any, Dict, Iterator

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import Status

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
DEVICE = 2**60
XLLM: Dict[str, Any] = dict(
    world_size=4, engine="xllm", device_memory_total=DEVICE, device_memory_free=DEVICE
)
VALID = [2 / 3, 1e-5, 0.9, 1.0, 0.123456789012345, 0.1 + 0.2]


def budget(u: float) -> int:
    """The xllm budget, as the profile computes it (floats are C doubles)."""
    held = math.trunc(float(DEVICE) * (1.0 - u))
    return int(float(DEVICE) - held)


def test_the_figures_tell_two_thirds_from_its_15_digit_rounding() -> None:
    # 2/3 = 0.6666666666666666 needs 16 digits; the library's fraction text
    # holds 15, and 0.666666666666667 is another double with another budget.
    assert budget(2 / 3) == 768614336404564608
    assert budget(0.666666666666667) == 768614336404564992


def planned_budget(dep: kvshard.Deployment) -> int:
    with dep.plan() as plan:
        figure = plan.capacity.memory_per_rank
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
        assert dep.options.max_memory_utilization == u
        assert planned_budget(dep) == want
        with dep.compare() as cmp:
            assert cmp.rows[0].ok
    with kvshard.load(QWEN35, **XLLM) as dep:
        dep.set("max_memory_utilization", u)
        assert dep.options.max_memory_utilization == u
        assert planned_budget(dep) == want
    with kvshard.plan(model, max_memory_utilization=u, **XLLM) as plan:
        assert plan.options.max_memory_utilization == u
        assert plan.capacity.memory_per_rank == want
    opts = kvshard.Options(**{**XLLM, "engine": kvshard.Engine.XLLM})
    opts.set("max_memory_utilization", u)
    assert opts.max_memory_utilization == u
    with kvshard.plan(model, opts) as plan:
        assert plan.capacity.memory_per_rank == want


def test_a_fraction_the_text_carries_goes_as_that_text() -> None:
    # As text, the library reads exactly what the binding sends, so
    # Options.set (text) and the field (a double) agree.
    for u in (1e-5, 0.9, 1.0, 0.123456789012345, 0.5, 0.25):
        o = kvshard.Options()
        o.set("max_memory_utilization", u)
        assert o.max_memory_utilization == u == kvshard.Options(max_memory_utilization=u).max_memory_utilization


@pytest.mark.parametrize("u", [0, 0.0, -0.25, 1.0000001, 2, math.nan, math.inf, -math.inf])
def test_fractions_out_of_range_raise_value_error(u: float, monkeypatch: pytest.MonkeyPatch) -> None:
    with kvshard.load(SEED) as dep:
        monkeypatch.setattr(kvshard._lib, "library", lambda: pytest.fail("a C call was made"))
        for call in (
            lambda: kvshard.load(SEED, max_memory_utilization=u),
            lambda: dep.set("max_memory_utilization", u),
            lambda: kvshard.Options(max_memory_utilization=u),
            lambda: kvshard.Options().set("max_memory_utilization", u),
        ):
            with pytest.raises(ValueError, match="max_memory_utilization"):
                call()
        monkeypatch.undo()


def test_a_fraction_as_text_is_the_library_s_to_read() -> None:
    with kvshard.load(SEED, max_memory_utilization="0.75") as dep:
        assert dep.options.max_memory_utilization == 0.75
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.load(SEED, max_memory_utilization="2/3")
    assert (info.value.code, info.value.source) == (Status.ETYPE, "python")


def test_a_held_double_gives_way_to_a_later_value() -> None:
    with kvshard.load(QWEN35, max_memory_utilization=2 / 3, **XLLM) as dep:
        dep.apply_args(["--max_seqs=64"])  # another option: the double stays
        assert dep.options.max_memory_utilization == 2 / 3
        assert planned_budget(dep) == budget(2 / 3)
        dep.apply_args(["--max_memory_utilization=0.5"])
        assert dep.options.max_memory_utilization == 0.5
        assert planned_budget(dep) == budget(0.5)
        dep.set("max_memory_utilization", 2 / 3)
        dep.set("max_memory_utilization", ".666666666666667")  # text: the library's value
        assert dep.options.max_memory_utilization == 0.666666666666667
        assert planned_budget(dep) == budget(0.666666666666667)


def test_errors_keep_their_place_beside_a_held_double() -> None:
    with kvshard.load(QWEN35, max_memory_utilization=2 / 3, **XLLM) as dep:
        dep.set("layerwise_split_size", 3, origin="command line --layerwise_split_size")
        dep.set("enable_layerwise_split", True)
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert info.value.code is Status.ESPLIT
    assert info.value.source == "command line --layerwise_split_size"


def test_an_error_about_a_held_double_has_its_figures_and_its_place() -> None:
    # 1e-16 needs 16 digits after the point. Its budget, 128 bytes, holds no
    # two state slots; the stand-in the library holds (1e-15) would give
    # 1152 bytes.
    assert (budget(1e-16), budget(1e-15)) == (128, 1152)
    with kvshard.load(QWEN35, max_memory_utilization=1e-16, **XLLM) as dep:
        assert dep.options.max_memory_utilization == 1e-16
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert info.value.code is Status.ENOBLOCK
    assert "budget of 128 bytes" in info.value.message
    assert info.value.source == "python"
