"""The shipped seed deployment: Qwen3.5-35B-A3B, TP 4, split 2, ordinal.

Figures worked out from the model (10 full-attention layers of 2 KV heads x
256 dims in bfloat16, 30 GDN layers) and the deployment (20 GiB per rank,
block 16, max_seqs 128):
- one full layer stores 2 x 256 x 2 = 1024 bytes per token per KV head; with
  T = 4 and 2 KV heads each rank holds one head (replication 2), and an owner
  holds its split group's union of 1 head: 1024 B/token per owned layer;
  5 owned layers = 5120 B/token, scratch one layer = 1024;
- bytes_per_block = 16 x (5120 + 1024) = 98304;
- GDN state per layer at T = 4: conv 2 x (2x128x16/4 + 128x32/4) x 3 = 12288,
  temporal 4 x 8 x 128 x 128 = 524288; x 30 layers = 16097280 per sequence;
- blocks = (21474836480 - 128 x 16097280) // 98304 = 197493; tokens x 16;
- uniform: 10 layers x 1024 = 10240 B/token, 163840 per block,
  (21474836480 - 2060451840) // 163840 = 118496 blocks;
- at 32768 tokens: 2048 blocks per sequence; concurrency
  min(128, 197493 // 2048) = 96; balanced 21474836480 //
  (16097280 + 2048 x 98304) = 98.
"""

from __future__ import annotations

from conftest import SEED

import kvshard
from kvshard import LayerKind, Ownership, WarningCode

RANK0 = [3, 11, 19, 27, 35]
RANK1 = [7, 15, 23, 31, 39]
MEMORY = 20 * 1024**3


def test_parallel_layout(seed_plan: kvshard.Plan) -> None:
    assert seed_plan.attn_tp_size == 4
    assert seed_plan.effective_split_size == 2
    assert seed_plan.replication_factor == 2
    assert seed_plan.num_layers == 40
    assert seed_plan.options.ownership is Ownership.ORDINAL
    assert [seed_plan.split_position(r) for r in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_owned_layers(seed_plan: kvshard.Plan) -> None:
    assert seed_plan.rank_layers(0) == RANK0
    assert seed_plan.rank_layers(1) == RANK1
    assert seed_plan.rank_layers(2) == RANK0
    assert seed_plan.rank_layers(3) == RANK1
    for layer in RANK0:
        assert seed_plan.layer_owner(layer) == 0
        assert seed_plan.stores_kv(0, layer) and not seed_plan.stores_kv(1, layer)
    for layer in RANK1:
        assert seed_plan.layer_owner(layer) == 1
        assert seed_plan.owns(3, layer) and not seed_plan.owns(2, layer)
    # Linear layers: state on every rank, no paged KV.
    assert seed_plan.layer_kind(0) is LayerKind.LINEAR_ATTENTION
    assert seed_plan.layer_owner(0) == kvshard.OWNER_ALL
    assert all(seed_plan.owns(r, 0) for r in range(4))
    assert not any(seed_plan.stores_kv(r, 0) for r in range(4))


def test_layer_storage(seed_plan: kvshard.Plan) -> None:
    owner = seed_plan.layer_storage(2, 11)  # split rank 0 of group 1
    assert owner == kvshard.LayerStorage(
        kind=LayerKind.FULL_ATTENTION,
        stores_kv=True,
        kv_slot=1,  # 11 is the second layer in rank 2's list
        state_slot=-1,
        kv_head_first=1,  # group 1 (ranks 2, 3) holds KV head 1
        kv_head_count=1,
        kv_bytes_per_token=1024,
        owner_plan_rank=2,
        state_bytes_per_seq=0,
        kv_source=-1,  # GQA layers read no other layer's cache
        compress_ratio=0,
        index_key=False,
        holding=kvshard.LayerHolding.KV,  # it owns the layer
        stage=0,  # one stage
    )
    other = seed_plan.layer_storage(3, 11)
    assert not other.stores_kv and other.kv_slot == -1 and other.owner_plan_rank == 2
    assert other.holding is kvshard.LayerHolding.SCRATCH  # rank 2 owns it: computed from scratch
    linear = seed_plan.layer_storage(0, 4)  # the fourth linear layer
    assert linear.kind is LayerKind.LINEAR_ATTENTION
    assert linear.state_slot == 3
    assert linear.holding is kvshard.LayerHolding.STATE
    assert linear.state_bytes_per_seq == 12288 + 524288


def test_rank_memory(seed_plan: kvshard.Plan) -> None:
    for rank in range(4):
        assert seed_plan.rank_memory(rank) == kvshard.RankMemory(
            plan_rank=rank,
            kv_bytes_per_token=5120,
            scratch_bytes_per_token=1024,
            draft_bytes_per_token=0,
            bytes_per_block=98304,
            state_bytes_per_seq=16097280,
            num_blocks=197493,
            # Split, but a GQA layer has no per-sequence bytes to compute
            # without owning it; no draft layers at spec 0.
            scratch_bytes_per_seq=0,
            draft_bytes_per_seq=0,
            # The seed's memory_per_rank is the budget; no device inputs.
            budget=20 * 2**30,
            weights_bytes=None,
            activation_reserve=None,
        )


def test_capacity_and_uniform(seed_plan: kvshard.Plan) -> None:
    cap = seed_plan.capacity
    assert cap.engine is kvshard.Engine.KVSHARD
    assert (cap.block_size, cap.memory_per_rank, cap.max_seqs) == (16, MEMORY, 128)
    assert (cap.num_blocks, cap.max_tokens) == (197493, 3159888)
    assert cap.context_length is None and cap.concurrency is None
    assert cap.balanced_max_seqs is None and cap.state_slots is None
    assert seed_plan.uniform == kvshard.Uniform(
        kv_bytes_per_token=10240, bytes_per_block=163840, num_blocks=118496
    )
    assert seed_plan.warnings == []


def test_context_length_figures() -> None:
    with kvshard.load(SEED, context_length=32768) as dep, dep.plan() as plan:
        cap = plan.capacity
        assert cap.context_length == 32768
        assert cap.concurrency == 96
        assert cap.balanced_max_seqs == 98
        assert [code for code, _ in plan.warnings] == [WarningCode.MAX_SEQS_UNREACHABLE]
        message = plan.warnings[0][1]
        assert "96" in message and "98" in message
        assert plan.has_warning(kvshard.Warning.MAX_SEQS_UNREACHABLE)
        assert not plan.has_warning(WarningCode.IMBALANCED)


def test_blocks_for(seed_plan: kvshard.Plan) -> None:
    every = seed_plan.blocks_for(MEMORY, context_length=32768)
    assert (every.num_blocks, every.max_tokens) == (197493, 3159888)
    assert (every.concurrency, every.balanced_max_seqs) == (96, 98)
    assert seed_plan.blocks_for("20GiB", plan_rank=3) == kvshard.Blocks(
        num_blocks=197493,
        max_tokens=3159888,
        concurrency=None,
        balanced_max_seqs=None,
        state_slots=128,
        usable_blocks=None,
        usable_state_slots=None,
    )
    # 1 GiB held back and 4096 bytes of metadata per block:
    # (21474836480 - 1073741824 - 2060451840) // (98304 + 4096) = 179107.
    less = seed_plan.blocks_for(MEMORY, reserved_bytes="1GiB", extra_bytes_per_block=4096)
    assert less.num_blocks == 179107


def test_digests_and_describe(seed_plan: kvshard.Plan) -> None:
    with kvshard.load(SEED) as again, again.plan() as same:
        assert same.digest == seed_plan.digest
    with kvshard.load(SEED, memory_per_rank="24GiB") as more, more.plan() as bigger:
        assert bigger.digest != seed_plan.digest
        assert bigger.layout_digest == seed_plan.layout_digest
    assert 0 <= seed_plan.digest < 2**64
    line = seed_plan.describe_rank(1)
    assert "7 15 23 31 39" in line
    assert f"{seed_plan.layout_digest:016x}" in line

