"""Blocks.state_slots: the rows each state layer allocates on a rank, one
answer under every profile (kvshard_blocks.state_slots).

Qwen3.5-35B-A3B at TP 4 under xllm: lin = 16097280 B of GDN state a
sequence on a rank, slots = trunc(B x 9 / 19 / lin): 19 GiB -> 600,
20 GiB -> 631, 21 GiB -> 663. The seed under kvshard reserves its
max_seqs 128, whatever the budget.
"""

from __future__ import annotations

from conftest import EXAMPLES, SEED

import kvshard

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
NANO = EXAMPLES / "models" / "nemotron_3_nano_30b_a3b.json"
GIB = 2**30


def test_kvshard_profile_rows_are_max_seqs() -> None:
    with kvshard.load(SEED) as dep, dep.plan() as plan:
        assert plan.blocks_for("20GiB").state_slots == 128
        assert plan.blocks_for("19GiB", plan_rank=1).state_slots == 128
        # The JSON figure stays null under kvshard.
        assert plan.blocks_figure("state_slots", "20GiB") is None


def test_xllm_rows_per_rank_and_the_least() -> None:
    with kvshard.load(QWEN35, world_size=4, engine="xllm", memory_per_rank="20GiB") as dep:
        with dep.plan() as plan:
            measured = (20, 19, 20, 21)
            rows = [
                plan.blocks_for(gib * GIB, plan_rank=r).state_slots
                for r, gib in enumerate(measured)
            ]
            assert rows == [631, 600, 631, 663]
            assert min(rows) == plan.blocks_for("19GiB").state_slots == 600


def test_vllm_has_no_rows_of_its_own() -> None:
    with kvshard.load(NANO, engine="vllm") as dep:
        dep.set("max-model-len", 4096)
        with dep.plan() as plan:
            assert plan.blocks_for("20GiB").state_slots is None
