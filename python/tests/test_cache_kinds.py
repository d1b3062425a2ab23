"""The cache kinds of the 0.3 models, through Python: compressed layers
(DeepSeek-V4-Flash), shared-KV layers (Gemma 4 E2B), chunked layers and the
per-kind geometry of a description, and the configs kvshard refuses.

Figures worked out by hand from the shipped configs (examples/models/) and
the rules kvshard documents, block size 16 throughout:

DeepSeek-V4-Flash: 43 compressed layers, compress_ratios 0 at layers 0-1, 4
at the even layers 2-42 (21 layers, with index keys), 128 at the odd layers
3-41 (20); one K=V latent of head_dim 512, bf16, so E = 1024 bytes per
entry, replicated on every TP rank; an index key is X = 128 + 4 = 132 bytes;
sliding_window 128.
- per token: ratio 4: ceil(1024/4) + ceil(132/4) = 256 + 33 = 289;
  ratio 128: ceil(1024/128) = 8; ratio 0: nothing.
  21 x 289 + 20 x 8 = 6069 + 160 = 6229;
- window, every layer: 1024 x 16 x (ceil(128/16) + 1) = 147456;
- float32 compressor state: ratio 4 (two overlapping windows, coff 2,
  8 slots): 8 x 2x2 x 512 x 4 = 65536, plus the index keys' 8 x 2x2 x 128
  x 4 = 16384; ratio 128 (coff 1, 128 slots): 128 x 2 x 512 x 4 = 524288;
- per sequence: a ratio-4 layer 147456 + 81920 = 229376, a ratio-128 layer
  147456 + 524288 = 671744; all 43: 43 x 147456 + 21 x 81920 + 20 x 524288
  = 6340608 + 1720320 + 10485760 = 18546688;
- fp8 KV: E = 448 nope + 2 x 64 RoPE + 7 scales = 583, rounded up to 584;
  per token 21 x (146 + 33) + 20 x 5 = 3859; per sequence 43 x 584 x 16 x 9
  + 1720320 + 10485760 = 15822208.

Gemma 4 E2B: 35 layers, [4 sliding, 1 full] x 7; num_kv_shared_layers 20
turns layers 15-34 into shared-KV layers reading the last layer of their
kind before 15: 13 (sliding) or 14 (full). That leaves 3 full layers (4, 9,
14) of 1 KV head x (512 + 512) x 2 = 2048 B/token, 6144 in all, and 12
sliding layers of 1 x (256 + 256) x 2 = 1024 B/token whose window of 512
is 1024 x 16 x (32 + 1) = 540672 per sequence, 6488064 in all.
"""

from __future__ import annotations

from typing import Iterator

import pytest
from conftest import EXAMPLES

import kvshard
from kvshard import Attention, LayerKind, Status

MODELS = EXAMPLES / "models"
V4_FLASH = MODELS / "deepseek_v4_flash.json"
GIB = 1024**3

RATIO_4 = list(range(2, 43, 2))
RATIO_128 = list(range(3, 42, 2))
WINDOW = 147456
SEQ_RATIO_4 = 229376
SEQ_RATIO_128 = 671744


# --- DeepSeek-V4-Flash: compressed layers -----------------------------------------


@pytest.fixture(scope="module")
def v4_tp8() -> Iterator[kvshard.Plan]:
    with kvshard.load_model(V4_FLASH) as model:
        assert model.attention is Attention.COMPRESSED
        assert model.count(LayerKind.COMPRESSED) == 43
        plan = kvshard.plan(model, world_size=8)
    with plan:  # a plan outlives its model
        yield plan


def test_v4_flash_per_rank_figures_at_tp8(v4_tp8: kvshard.Plan) -> None:
    assert v4_tp8.effective_split_size == 1
    assert v4_tp8.replication_factor == 8  # the latent is on every rank
    for rank in range(8):
        mem = v4_tp8.rank_memory(rank)
        assert (mem.kv_bytes_per_token, mem.state_bytes_per_seq) == (6229, 18546688)
        # Unsplit: no scratch; spec 0: no draft share.
        assert (mem.scratch_bytes_per_token, mem.scratch_bytes_per_seq) == (0, 0)
        assert mem.draft_bytes_per_seq == 0
        assert mem.bytes_per_block == 16 * 6229
        assert v4_tp8.rank_layers(rank) == list(range(43))


def test_v4_flash_layer_storage_by_ratio(v4_tp8: kvshard.Plan) -> None:
    assert v4_tp8.layer_storage(0, 2) == kvshard.LayerStorage(
        kind=LayerKind.COMPRESSED,
        stores_kv=True,
        kv_slot=2,
        state_slot=-1,
        kv_head_first=0,  # one latent, no heads
        kv_head_count=0,
        kv_bytes_per_token=289,
        owner_plan_rank=0,
        state_bytes_per_seq=SEQ_RATIO_4,
        kv_source=-1,
        compress_ratio=4,
        index_key=True,
        holding=kvshard.LayerHolding.KV,  # unsplit: every rank owns it
        stage=0,
    )
    ratio_128 = v4_tp8.layer_storage(5, 3)
    assert (ratio_128.compress_ratio, ratio_128.index_key) == (128, False)
    assert (ratio_128.kv_bytes_per_token, ratio_128.state_bytes_per_seq) == (8, SEQ_RATIO_128)
    window_only = v4_tp8.layer_storage(7, 0)
    assert window_only.kind is LayerKind.COMPRESSED
    assert (window_only.compress_ratio, window_only.index_key) == (0, False)
    assert (window_only.kv_bytes_per_token, window_only.state_bytes_per_seq) == (0, WINDOW)
    ratios = [v4_tp8.layer_storage(0, i).compress_ratio for i in range(43)]
    assert ratios == [0, 0] + [4, 128] * 20 + [4]
    assert [i for i in range(43) if v4_tp8.layer_storage(0, i).index_key] == RATIO_4


def test_v4_flash_json_carries_the_layer_fields(v4_tp8: kvshard.Plan) -> None:
    doc = v4_tp8.to_dict()
    assert doc["model"]["attention"] == Attention.COMPRESSED.label == "compressed"
    layer = doc["layers"][2]
    assert (layer["kind"], layer["compress_ratio"], layer["kv_source"], layer["index_key"]) == (
        "compressed", 4, None, True
    )
    assert doc["layers"][3]["compress_ratio"] == 128 and doc["layers"][3]["index_key"] is False
    assert doc["layers"][0]["compress_ratio"] == 0
    assert all(r["scratch_bytes_per_seq"] == 0 for r in doc["ranks"])


def test_v4_flash_fp8_cache() -> None:
    with kvshard.load_model(V4_FLASH) as model:
        with kvshard.plan(model, world_size=8, kv_cache_dtype="fp8") as plan:
            mem = plan.rank_memory(3)
            assert (mem.kv_bytes_per_token, mem.state_bytes_per_seq) == (3859, 15822208)
            # Ratio 4 at fp8: ceil(584/4) + 33 = 179; window 584 x 16 x 9 = 84096.
            layer = plan.layer_storage(3, 2)
            assert (layer.kv_bytes_per_token, layer.state_bytes_per_seq) == (179, 84096 + 81920)


def test_v4_flash_draft_layer_with_speculation() -> None:
    # spec 1: the compressor rings grow to the next power of two at or above
    # coff x r + 1: 16 slots at ratio 4 (16 x 4 x 512 x 4 + 16 x 4 x 128 x 4
    # = 163840) and 256 at ratio 128 (256 x 2 x 512 x 4 = 1048576). The one
    # draft layer has compress_ratios[43] = 0: a window only, 147456 B/seq
    # and nothing per token. 43 x 147456 + 21 x 163840 + 20 x 1048576 +
    # 147456 = 30900224.
    with kvshard.load_model(V4_FLASH) as model:
        assert model.num_draft_layers == 1
        with kvshard.plan(model, world_size=8, num_speculative_tokens=1) as plan:
            mem = plan.rank_memory(6)
            assert (mem.draft_bytes_per_token, mem.draft_bytes_per_seq) == (0, WINDOW)
            assert (mem.kv_bytes_per_token, mem.state_bytes_per_seq) == (6229, 30900224)
            assert plan.layer_storage(6, 2).state_bytes_per_seq == WINDOW + 163840
            assert plan.layer_storage(6, 3).state_bytes_per_seq == WINDOW + 1048576


# The shipped deployment: TP 8, split 8, ordinal, 60 GiB per rank, max_seqs 64,
# scratch_layers 1. Every layer is a KV layer, so layer k is owned by split
# rank k % 8: ranks 0-2 own 6 layers, ranks 3-7 own 5.
# - rank 0: 0 (ratio 0), 8, 16, 24, 32, 40 (ratio 4): 5 x 289 = 1445 B/token,
#   147456 + 5 x 229376 = 1294336 B/seq;
# - rank 2: 2, 10, 18, 26, 34, 42, all ratio 4: 6 x 289 = 1734 B/token,
#   6 x 229376 = 1376256 B/seq;
# - scratch, every rank: one layer at its largest, 289 B/token (ratio 4) and
#   671744 B/seq (ratio 128);
# - rank 2: block 16 x (1734 + 289) = 32368 B; reserved 64 x (1376256 +
#   671744) = 131072000; blocks (64424509440 - 131072000) // 32368 = 1986327;
# - rank 0: block 16 x (1445 + 289) = 27744 B; reserved 64 x (1294336 +
#   671744) = 125829120; blocks 64298680320 // 27744 = 2317570.
# Rank 2 has the most bytes per block and so the fewest blocks: the plan's.


@pytest.fixture(scope="module")
def v4_split() -> Iterator[kvshard.Plan]:
    with kvshard.load(EXAMPLES / "deepseek_v4_flash_tp8.yaml") as dep, dep.plan() as plan:
        yield plan


def test_v4_flash_split_scratch_per_sequence(v4_split: kvshard.Plan) -> None:
    assert v4_split.effective_split_size == 8
    assert v4_split.rank_memory(0).scratch_bytes_per_seq == SEQ_RATIO_128
    for rank in range(8):
        mem = v4_split.rank_memory(rank)
        assert (mem.scratch_bytes_per_token, mem.scratch_bytes_per_seq) == (289, SEQ_RATIO_128)
    assert [r["scratch_bytes_per_seq"] for r in v4_split.to_dict()["ranks"]] == [SEQ_RATIO_128] * 8


def test_v4_flash_split_rank_2_has_the_fewest_blocks(v4_split: kvshard.Plan) -> None:
    assert v4_split.rank_layers(2) == [2, 10, 18, 26, 34, 42]
    assert v4_split.rank_memory(2) == kvshard.RankMemory(
        plan_rank=2,
        kv_bytes_per_token=1734,
        scratch_bytes_per_token=289,
        draft_bytes_per_token=0,
        bytes_per_block=32368,
        state_bytes_per_seq=1376256,
        num_blocks=1986327,
        scratch_bytes_per_seq=671744,
        draft_bytes_per_seq=0,
        budget=60 * 2**30,  # memory_per_rank: no device inputs
        weights_bytes=None,
        activation_reserve=None,
    )
    rank0 = v4_split.rank_memory(0)
    assert v4_split.rank_layers(0) == [0, 8, 16, 24, 32, 40]
    assert (rank0.kv_bytes_per_token, rank0.bytes_per_block) == (1445, 27744)
    assert (rank0.state_bytes_per_seq, rank0.num_blocks) == (1294336, 2317570)
    blocks = [v4_split.rank_memory(r).num_blocks for r in range(8)]
    assert [r for r, n in enumerate(blocks) if n == 1986327] == [2]
    assert min(blocks) == v4_split.capacity.num_blocks == 1986327
    assert v4_split.capacity.memory_per_rank == 60 * GIB


def test_v4_flash_split_owner_keeps_the_whole_layer(v4_split: kvshard.Plan) -> None:
    owner = v4_split.layer_storage(2, 2)
    assert (owner.stores_kv, owner.kv_bytes_per_token, owner.state_bytes_per_seq) == (
        True, 289, SEQ_RATIO_4
    )
    # Rank 0 computes layer 2 from rank 2's cache and keeps none of it.
    other = v4_split.layer_storage(0, 2)
    assert (other.stores_kv, other.kv_slot, other.owner_plan_rank) == (False, -1, 2)
    assert (other.kv_bytes_per_token, other.state_bytes_per_seq) == (0, 0)
    assert (other.compress_ratio, other.index_key) == (4, True)
    assert v4_split.layer_owner(2) == 2


# --- Gemma 4 E2B: shared-KV layers -------------------------------------------------


@pytest.fixture(scope="module")
def e2b() -> Iterator[kvshard.Plan]:
    with kvshard.load(EXAMPLES / "gemma_4_e2b_tp1.yaml") as dep, dep.plan() as plan:
        yield plan


def test_e2b_shared_layers_read_layers_13_and_14(e2b: kvshard.Plan) -> None:
    shared = e2b.layer_storage(0, 15)
    assert shared == kvshard.LayerStorage(
        kind=LayerKind.SHARED_KV,
        stores_kv=False,
        kv_slot=-1,
        state_slot=-1,
        kv_head_first=0,
        kv_head_count=0,
        kv_bytes_per_token=0,
        owner_plan_rank=-1,
        state_bytes_per_seq=0,
        kv_source=13,
        compress_ratio=0,
        index_key=False,
        holding=kvshard.LayerHolding.SHARED,  # it reads 13's cache
        stage=0,
    )
    assert e2b.layer_storage(0, 19).kind is LayerKind.SHARED_KV
    assert e2b.layer_storage(0, 19).kv_source == 14
    # Every layer from 15 on reads 14 when full (index 4 mod 5), else 13.
    sources = [e2b.layer_storage(0, i).kv_source for i in range(35)]
    assert sources == [-1] * 15 + [14 if i % 5 == 4 else 13 for i in range(15, 35)]
    assert not e2b.owns(0, 15) and not e2b.stores_kv(0, 19)
    doc = e2b.to_dict()["layers"]
    assert (doc[15]["kind"], doc[15]["kv_source"]) == ("shared_kv", 13)
    assert doc[19]["kv_source"] == 14 and doc[14]["kv_source"] is None


def test_e2b_memory(e2b: kvshard.Plan) -> None:
    assert e2b.rank_layers(0) == [4, 9, 14]
    kinds = [e2b.layer_kind(i) for i in range(35)]
    assert kinds.count(LayerKind.FULL_ATTENTION) == 3
    assert kinds.count(LayerKind.SLIDING_ATTENTION) == 12
    assert kinds.count(LayerKind.SHARED_KV) == 20
    # 8 GiB, max_seqs 32: (8589934592 - 32 x 6488064) // 98304 = 85269.
    assert e2b.rank_memory(0) == kvshard.RankMemory(
        plan_rank=0,
        kv_bytes_per_token=6144,
        scratch_bytes_per_token=0,
        draft_bytes_per_token=0,
        bytes_per_block=98304,
        state_bytes_per_seq=6488064,
        num_blocks=85269,
        scratch_bytes_per_seq=0,
        draft_bytes_per_seq=0,
        budget=8 * 2**30,
        weights_bytes=None,
        activation_reserve=None,
    )
    sliding = e2b.layer_storage(0, 13)
    assert (sliding.kv_bytes_per_token, sliding.state_bytes_per_seq) == (1024, 540672)
    assert e2b.layer_storage(0, 14).kv_bytes_per_token == 2048


def test_e2b_shared_layers_answer_their_source_s_owner() -> None:
    # Split 2 on two ranks: the full layers 4, 9, 14 are KV ordinals 0, 1, 2,
    # owned by split ranks 0, 1, 0. Layer 19 reads 14, so its cache lives on
    # split rank 0; layer 15 reads the sliding layer 13, kept on every rank.
    with kvshard.load(
        EXAMPLES / "gemma_4_e2b_tp1.yaml",
        world_size=2, enable_layerwise_split=True, layerwise_split_size=2,
    ) as dep, dep.plan() as plan:
        assert plan.effective_split_size == 2
        assert [plan.layer_owner(i) for i in (4, 9, 14)] == [0, 1, 0]
        assert plan.layer_owner(19) == 0
        assert plan.layer_owner(15) == kvshard.OWNER_ALL
        for rank in (0, 1):
            shared = plan.layer_storage(rank, 19)
            assert (shared.kv_source, shared.stores_kv, shared.owner_plan_rank) == (14, False, -1)
        assert [plan.to_dict()["layers"][i]["owner"] for i in (15, 19)] == [None, 0]


# --- configs kvshard refuses --------------------------------------------------------

BLOCK_CONFIGS = """model_type: decilm
num_hidden_layers: 2
num_attention_heads: 8
num_key_value_heads: 8
head_dim: 128
block_configs: [{attention: {n_heads_in_group: 8}}, {attention: {no_op: true}}]
"""


def test_block_configs_is_refused_by_name() -> None:
    with pytest.raises(kvshard.UnmodeledError) as info:
        kvshard.load_model(BLOCK_CONFIGS)
    e = info.value
    assert e.code is Status.EUNMODELED
    assert isinstance(e, kvshard.ConfigError)
    # The value of block_configs: line 6, after "block_configs: ".
    assert (e.source, e.line, e.column) == ("<string>", 6, len("block_configs: ") + 1)
    assert e.offset == BLOCK_CONFIGS.index("[{attention")
    assert e.message.startswith("block_configs: kvshard does not model the cache")
    assert str(e).startswith("<string>:6:16: block_configs:")


def test_cross_attention_layers_in_a_deployment_is_refused() -> None:
    text = "model:\n  num_hidden_layers: 2\n  head_dim: 128\n  cross_attention_layers: [1]\n"
    with pytest.raises(kvshard.UnmodeledError) as info:
        kvshard.loads(text, name="vision.yaml")
    e = info.value
    assert (e.code, e.source, e.line) == (Status.EUNMODELED, "vision.yaml", 4)
    assert e.column == len("  cross_attention_layers: ") + 1
    assert "cross_attention_layers" in e.message


@pytest.mark.parametrize(
    "kinds, index, name",
    [
        ([LayerKind.COMPRESSED, LayerKind.FULL_ATTENTION], 0, "compressed"),
        ([LayerKind.FULL_ATTENTION, LayerKind.SHARED_KV], 1, "shared_kv"),
    ],
    ids=["compressed", "shared_kv"],
)
def test_a_description_cannot_hold_layers_that_read_others(
    kinds: list, index: int, name: str
) -> None:
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.create_model(2, kinds, num_attention_heads=8, num_kv_heads=2, head_dim=64)
    e = info.value
    assert e.code is Status.ELAYERTYPE and not isinstance(e, kvshard.UnmodeledError)
    assert e.message.startswith(f"layer_kinds[{index}]: a {name} layer cannot be described")


def test_a_description_cannot_have_compressed_attention() -> None:
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.create_model(
            2, attention=Attention.COMPRESSED, num_kv_heads=1, head_dim=512, sliding_window=128
        )
    assert info.value.code is Status.ERANGE
    assert info.value.message.startswith("attention: compressed attention cannot be described")


# --- the description's new figures ----------------------------------------------------

C, F, S = LayerKind.CHUNKED_ATTENTION, LayerKind.FULL_ATTENTION, LayerKind.SLIDING_ATTENTION


def test_chunked_layers_need_and_use_attention_chunk_size() -> None:
    figures = dict(num_attention_heads=8, num_kv_heads=2, head_dim=64)
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.create_model(4, [C, C, C, F], **figures)
    assert info.value.code is Status.EMISSING
    assert "attention_chunk_size" in info.value.message
    # T = 2: one KV head per rank, 1 x (64 + 64) x 2 = 256 B/token. A chunk
    # of 1000 tokens: 256 x 16 x (ceil(1000/16) + 1) = 256 x 16 x 64 = 262144.
    with kvshard.create_model(4, [C, C, C, F], attention_chunk_size=1000, **figures) as model:
        assert model.count(C) == 3
        with kvshard.plan(model, world_size=2) as plan:
            chunked = plan.layer_storage(1, 0)
            assert chunked.kind is C and not chunked.stores_kv
            assert (chunked.kv_head_first, chunked.kv_head_count) == (1, 1)
            assert chunked.state_bytes_per_seq == 262144
            assert plan.rank_layers(1) == [3]
            mem = plan.rank_memory(1)
            assert (mem.kv_bytes_per_token, mem.state_bytes_per_seq) == (256, 3 * 262144)


def test_per_kind_geometry_of_a_description() -> None:
    # A MiMo-like model at T = 2: full layers of 2 KV heads with K 192 and V
    # 128 (one head per rank: 1 x (192 + 128) x 2 = 640 B/token); sliding
    # layers of 4 KV heads with K 64 and V 32 (two per rank: 2 x (64 + 32) x
    # 2 = 384 B/token), window 128: 384 x 16 x 9 = 55296 per sequence.
    figures = dict(
        num_attention_heads=8, num_kv_heads=2, head_dim=192, sliding_kv_heads=4,
        sliding_head_dim=64, sliding_window=128,
    )
    with kvshard.create_model(
        6, [F, S, S, S, S, S], v_head_dim=128, sliding_v_head_dim=32, **figures
    ) as model, kvshard.plan(model, world_size=2) as plan:
        full, sliding = plan.layer_storage(1, 0), plan.layer_storage(1, 1)
        assert (full.kv_head_first, full.kv_head_count, full.kv_bytes_per_token) == (1, 1, 640)
        assert (sliding.kv_head_first, sliding.kv_head_count) == (2, 2)
        assert (sliding.kv_bytes_per_token, sliding.state_bytes_per_seq) == (384, 55296)
        assert plan.rank_memory(1).state_bytes_per_seq == 5 * 55296
    # 0 means "the same": V as wide as K, 1 x 384 x 2 = 768 full, and
    # 2 x 128 x 2 = 512 sliding, 512 x 16 x 9 = 73728.
    with kvshard.create_model(6, [F, S, S, S, S, S], **figures) as model:
        with kvshard.plan(model, world_size=2) as plan:
            assert plan.layer_storage(0, 0).kv_bytes_per_token == 768
            assert plan.layer_storage(0, 1).state_bytes_per_seq == 73728
    # Each sliding KV head must serve the same number of query heads.
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.create_model(2, [F, S], **{**figures, "sliding_kv_heads": 3})
    assert info.value.code is Status.ERANGE and "sliding_kv_heads 3" in info.value.message


def test_new_figures_are_checked_in_python() -> None:
    with pytest.raises(ValueError):
        kvshard.create_model(2, [F, C], attention_chunk_size=-1)
    with pytest.raises(ValueError):
        kvshard.create_model(2, v_head_dim=2**32)
    with pytest.raises(TypeError):
        kvshard.create_model(2, sliding_head_dim="64")


# --- names ---------------------------------------------------------------------------------


def test_names_of_the_new_members_come_from_the_library() -> None:
    assert [a.label for a in Attention] == ["gqa", "mla", "compressed"]
    assert [k.label for k in LayerKind][5:] == ["compressed", "shared_kv", "chunked_attention"]
    assert all(k.label != "unknown" for k in LayerKind)
    assert Status.EUNMODELED.label == "a cache kvshard does not model"
    assert kvshard.UnmodeledError in kvshard.ConfigError.__subclasses__()
