"""blocks_for with memory alone counts its concurrency figures at the plan's
context length, the length its max_seqs is counted at."""

from __future__ import annotations

from conftest import SEED

import kvshard


def test_blocks_for_at_the_plans_context_length() -> None:
    # The seed at 32,768 tokens, 19 GiB measured: 98,304 B a block, 128 x
    # 16,097,280 = 2,060,451,840 B of state; (20,401,094,656 -
    # 2,060,451,840) // 98,304 = 186,570 blocks; 2,048 blocks a sequence:
    # 91 at once; balanced 20,401,094,656 // (16,097,280 + 2,048 x 98,304)
    # = 93.
    with kvshard.load(SEED, context_length=32768) as dep, dep.plan() as plan:
        blocks = plan.blocks_for("19GiB")
        assert (blocks.num_blocks, blocks.concurrency, blocks.balanced_max_seqs,
                blocks.max_seqs) == (186570, 91, 93, 91)
        assert plan.blocks_figure("concurrency", "19GiB") == 91
        # A length given is used as given: 4,096 blocks a sequence, 45.
        assert plan.blocks_for("19GiB", context_length=65536).concurrency == 45
    with kvshard.load(SEED) as dep, dep.plan() as plan:
        blocks = plan.blocks_for("19GiB")
        assert blocks.concurrency is None and blocks.max_seqs is None


def test_flags_fit_reads() -> None:
    # The flag table says which flags kvshard fit reads: not the sizes it
    # searches, nor the budget and weights it works out.
    from kvshard import _lib

    unread = {f.name for f in _lib.flags(0) if not f.fit_reads}
    assert unread == {"world_size", "cp_size", "layerwise_split_size", "ownership",
                      "memory_per_rank", "pp_partition", "sweep_pp", "weights_per_rank"}
