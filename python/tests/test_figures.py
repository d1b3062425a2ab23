"""Capacity figures by name: Plan.capacity_figure and capacity_figures
(kvshard_plan_capacity_figure), Plan.blocks_figure at a measured budget
(kvshard_plan_blocks_figure), and the three profile figures Capacity and
Blocks read through them.

Seed figures as test_seed works them out (20 GiB, block 16, max_seqs 128:
197493 blocks; at 32768 tokens concurrency 96, balanced 98). The xllm
figures as test_options and test_settings work them out: B the budget,
lin = 16097280, blk = 1310720; slots = trunc(B x 0.9/1.9 / lin), blocks
(B - slots x lin) // blk, and one block and one slot less usable.
"""

from __future__ import annotations

import ctypes
from typing import Any, Iterator

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import FigureType, Status, _lib
from kvshard._objects import _figure_value

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
LIN = 16097280
BLK = 1310720


@pytest.fixture
def xllm() -> Iterator[kvshard.Plan]:
    with kvshard.load(QWEN35, world_size=4, engine="xllm", memory_per_rank="20GiB") as dep:
        with dep.plan() as plan:
            yield plan


def test_the_seed_s_figures(seed_plan: kvshard.Plan) -> None:
    figures = seed_plan.capacity_figures()
    assert figures == {
        "block_size": 16,
        "memory_per_rank": 20 * 2**30,
        "max_seqs": 128,
        "num_blocks": 197493,
        "max_tokens": 197493 * 16,
        "context_length": None,
        "concurrency": None,
        "balanced_max_seqs": None,
        "engine": "kvshard",
        "budget": None,  # the kvshard profile gives none of its own
        "state_slots": None,
        "usable_blocks": None,
        "usable_state_slots": None,
        # All four ranks fit 197,493 blocks: the first, TP rank 0 of the one
        # stage, binds.
        "binding_stage": 0,
        "binding_tp_rank": 0,
    }
    # The JSON plan's capacity object, name for name and in its order.
    assert list(figures.items()) == list(seed_plan.to_dict()["capacity"].items())
    assert seed_plan.capacity_figure("num_blocks") == 197493
    assert type(seed_plan.capacity_figure("num_blocks")) is int
    assert seed_plan.capacity_figure("engine") == "kvshard"
    cap = seed_plan.capacity
    assert (cap.binding_stage, cap.binding_tp_rank) == (0, 0)


def test_figures_with_a_context_length() -> None:
    with kvshard.load(SEED, context_length=32768) as dep, dep.plan() as plan:
        assert plan.capacity_figure("context_length") == 32768
        assert (plan.capacity_figure("concurrency"), plan.capacity_figure("balanced_max_seqs")) == (
            96,
            98,
        )
        assert plan.capacity_figures() == plan.to_dict()["capacity"]


def test_the_xllm_profile_s_figures(xllm: kvshard.Plan) -> None:
    B = 20 * 2**30
    assert int(B * (0.9 / 1.9) / LIN) == 631 and (B - 631 * LIN) // BLK == 8634
    figures = xllm.capacity_figures()
    assert {k: figures[k] for k in ("engine", "budget", "state_slots", "num_blocks")} == {
        "engine": "xllm",
        "budget": B,
        "state_slots": 631,
        "num_blocks": 8634,
    }
    assert (figures["usable_blocks"], figures["usable_state_slots"]) == (8633, 630)
    cap = xllm.capacity
    assert (cap.state_slots, cap.usable_blocks, cap.usable_state_slots) == (631, 8633, 630)
    assert figures == xllm.to_dict()["capacity"]


def test_figures_at_a_measured_budget(xllm: kvshard.Plan, seed_plan: kvshard.Plan) -> None:
    # 10 GiB: slots trunc(10737418240 x 9/19 / lin) = 315, blocks
    # (10737418240 - 315 lin) // blk = 4323.
    B = 10 * 2**30
    assert int(B * (0.9 / 1.9) / LIN) == 315 and (B - 315 * LIN) // BLK == 4323
    assert xllm.blocks_for("10GiB", plan_rank=1) == kvshard.Blocks(
        num_blocks=4323,
        max_tokens=4323 * 128,
        concurrency=None,
        balanced_max_seqs=None,
        state_slots=315,
        usable_blocks=4322,
        usable_state_slots=314,
    )
    assert xllm.blocks_figure("state_slots", "10GiB") == 315
    assert xllm.blocks_figure("num_blocks", B, plan_rank=2) == 4323
    assert xllm.blocks_figure("engine", B) == "xllm"
    # The budget is what is left after the reserved bytes.
    assert xllm.blocks_figure("budget", B, reserved_bytes="1GiB") == 9 * 2**30
    assert seed_plan.blocks_figure("state_slots", "20GiB") is None
    assert seed_plan.blocks_figure("concurrency", "20GiB", context_length=32768) == 96
    with pytest.raises(kvshard.PlanError) as info:
        xllm.blocks_figure("num_blocks", 1000)
    assert info.value.code is Status.ENOBLOCK
    with pytest.raises(kvshard.QueryError):
        xllm.blocks_figure("num_blocks", B, plan_rank=4)


def test_an_unknown_name(seed_plan: kvshard.Plan) -> None:
    for call in (
        lambda: seed_plan.capacity_figure("state_slot"),
        lambda: seed_plan.blocks_figure("state_slot", "20GiB"),
    ):
        with pytest.raises(kvshard.ConfigError) as info:
            call()
        assert info.value.code is Status.EUNKNOWNKEY
        assert info.value.message == 'unknown capacity figure "state_slot"'


def test_a_wrong_name_fails_in_python(seed_plan: kvshard.Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kvshard._lib, "library", lambda: pytest.fail("a C call was made"))
    with pytest.raises(TypeError):
        seed_plan.capacity_figure(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        seed_plan.capacity_figure("num\0blocks")
    with pytest.raises(TypeError):
        seed_plan.blocks_figure(b"num_blocks", "20GiB")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        seed_plan.blocks_figure("num_blocks", -1)


def test_a_closed_plan(seed: kvshard.Deployment) -> None:
    plan = seed.plan()
    plan.close()
    with pytest.raises(ValueError, match="closed"):
        plan.capacity_figure("num_blocks")
    with pytest.raises(ValueError, match="closed"):
        plan.blocks_figure("num_blocks", "20GiB")


def figure(kind: int, **values: Any) -> _lib.CFigure:
    f = _lib.sized(_lib.CFigure)
    f.type = kind
    for key, value in values.items():
        setattr(f, key, value)
    return f


def test_every_figure_type_reads_as_python() -> None:
    # The library gives UINT, TEXT and NULL figures today; a later one may
    # give DOUBLE or BOOL, which read as float and bool.
    assert _figure_value(figure(FigureType.NULL, uint_value=5), "x") is None
    assert _figure_value(figure(FigureType.UINT, uint_value=2**64 - 1), "x") == 2**64 - 1
    assert _figure_value(figure(FigureType.DOUBLE, double_value=0.25), "x") == 0.25
    assert _figure_value(figure(FigureType.BOOL, bool_value=True), "x") is True
    text = ctypes.c_char_p(b"xllm")
    assert _figure_value(figure(FigureType.TEXT, text_value=text.value), "x") == "xllm"
    with pytest.raises(kvshard.InvalidArgumentError, match='figure "x" has type 9'):
        _figure_value(figure(9), "x")
