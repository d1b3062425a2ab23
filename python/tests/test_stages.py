"""Pipeline stages from Python: the options that cut the layers into stages,
the stage records, plan ranks and global ranks, and the comparison across
pp_size. Every figure is worked out below from the model configs.

DeepSeek-V3.2 (61 MLA layers with the DSA indexer, one MTP layer) with an
fp8 cache keeps, per layer and token, the latent's 512 fp8 NoPE elements,
their 4 fp32 scales (one per 128) and the 64 RoPE elements in bf16,
512 + 16 + 128 = 656 bytes, and an indexer key of 128 + 4 = 132 bytes:
788 bytes. MLA has no heads to divide, so every rank of a stage stores the
whole latent of each of its layers. 60 GiB is 64,424,509,440 bytes, and
there is no state to reserve.

Qwen3-Next-80B-A3B: 48 layers, every fourth full attention (3, 7, ..., 47),
the rest Gated DeltaNet. At T = 2 a full layer keeps its one KV head of
256, K and V in bf16: 2 x 256 x 2 = 1,024 bytes a token. A GDN layer keeps
conv 2 x (2 x 128 x 16/2 + 128 x 32/2) x 3 = 24,576 bytes and a float32
state 4 x 16 x 128 x 128 = 1,048,576: 1,073,152 bytes a sequence. 40 GiB is
42,949,672,960 bytes; the block is 16 tokens.
"""

from __future__ import annotations

import copy
import gc
import json
import pickle
from pathlib import Path
from typing import Iterator

import pytest
from conftest import EXAMPLES

import kvshard
from kvshard import LayerHolding, PpRule, RankLayout, Status, WarningCode

DEEPSEEK = EXAMPLES / "models" / "deepseek_v3_2.json"
QWEN3_NEXT = EXAMPLES / "models" / "qwen3_next_80b_a3b.json"

GIB60 = 60 * 2**30
GIB40 = 40 * 2**30
LAYER = 788  # DeepSeek-V3.2 fp8 bytes per layer and token
GDN = 24_576 + 1_048_576  # Qwen3-Next at T = 2, per linear layer and sequence


@pytest.fixture(scope="module")
def deepseek() -> Iterator[kvshard.Model]:
    with kvshard.load_model(DEEPSEEK) as model:
        yield model


@pytest.fixture(scope="module")
def qwen() -> Iterator[kvshard.Model]:
    with kvshard.load_model(QWEN3_NEXT) as model:
        yield model


def deepseek_plan(model: kvshard.Model, **more: object) -> kvshard.Plan:
    return kvshard.plan(
        model,
        world_size=16,
        pp_size=2,
        kv_cache_dtype="fp8",
        memory_per_rank="60GiB",
        block_size=64,
        **more,
    )


# --- DeepSeek-V3.2 on 16 ranks in two stages -------------------------------------


def test_vllm_rule_puts_the_odd_layer_on_the_first_stage(deepseek: kvshard.Model) -> None:
    # 61 = 2 x 30 + 1: vLLM gives the extra layer to the second-to-last
    # stage, stage 0: "31,30".
    with deepseek_plan(deepseek, pp_partition_rule="vllm") as plan:
        assert (plan.pp_size, plan.attn_tp_size, plan.num_ranks) == (2, 8, 16)
        assert plan.pp_partition() == "31,30"
        first, second = plan.stages()
        assert (first.layer_first, first.layer_count, first.num_kv_layers) == (0, 31, 31)
        assert (second.layer_first, second.layer_count, second.num_kv_layers) == (31, 30, 30)
        # 31 x 788 = 24,428 bytes a token, x 64 = 1,563,392 a block;
        # 64,424,509,440 // 1,563,392 = 41,208 (41,208 x 1,563,392 =
        # 64,424,257,536, leaving 251,904 bytes, less than a block).
        assert first.bytes_per_token == 31 * LAYER == 24_428
        assert plan.rank_memory(0).bytes_per_block == 64 * 24_428 == 1_563_392
        assert first.num_blocks == GIB60 // 1_563_392 == 41_208
        # 30 x 788 = 23,640, x 64 = 1,512,960; // gives 42,581.
        assert second.bytes_per_token == 30 * LAYER == 23_640
        assert plan.rank_memory(8).bytes_per_block == 64 * 23_640 == 1_512_960
        assert second.num_blocks == GIB60 // 1_512_960 == 42_581
        # Every rank allocates the fewest: stage 0 binds, at its TP rank 0.
        cap = plan.capacity
        assert cap.num_blocks == 41_208 and cap.max_tokens == 41_208 * 64
        assert (cap.binding_stage, cap.binding_tp_rank) == (0, 0)
        assert (first.binds, second.binds) == (True, False)
        assert (first.state_bytes_per_seq, first.num_state_layers) == (0, 0)
        # No speculation: no draft layer counted, and no warning.
        assert (first.num_draft_layers, second.num_draft_layers) == (0, 0)
        assert plan.warnings == []
        assert plan.stage(1) == second and first.layers == range(0, 31)


def test_vllm_numbers_the_stages_outside_the_tp_ranks(deepseek: kvshard.Model) -> None:
    # Under vLLM's layout (dp, pp, cp, tp) global rank g is stage g // 8,
    # TP rank g % 8, and so plan rank g itself.
    with deepseek_plan(deepseek) as plan:
        assert plan.options.rank_layout is RankLayout.VLLM  # the kvshard profile's
        assert plan.options.pp_partition_rule is PpRule.VLLM  # DEFAULT settled
        stage1 = plan.stage(1)
        assert (stage1.global_rank_first, stage1.global_rank_stride) == (8, 1)
        at = plan.locate(13)
        assert (at.stage, at.tp_rank, at.plan_rank, at.dp_rank, at.cp_rank) == (1, 5, 13, 0, 0)
        # Rank queries take the plan rank: 13 is stage 1's TP rank 5, which
        # stores layers 31 to 60 and nothing of stage 0's.
        assert plan.rank_layers(13) == list(range(31, 61))
        assert plan.rank_layers(5) == list(range(0, 31))
        assert plan.owns(13, 31) and not plan.owns(13, 30) and not plan.stores_kv(5, 31)
        storage = plan.layer_storage(13, 30)
        assert (storage.holding, storage.stage, storage.stores_kv) == (
            LayerHolding.NOT_ON_STAGE, 0, False
        )
        assert plan.layer_storage(13, 31).holding is LayerHolding.KV
        assert plan.layer_stage(30) == 0 and plan.layer_stage(31) == 1
        assert plan.split_position(13) == (0, 5)  # unsplit: every TP rank its own group
        with pytest.raises(kvshard.QueryError) as info:
            plan.rank_memory(16)  # 2 x 8 plan ranks
        assert info.value.code is Status.ERANK and "0..15" in info.value.message


def test_queries_take_plan_rank_and_warn_on_tp_rank(deepseek: kvshard.Model) -> None:
    # The rank keyword is plan_rank; 0.3's tp_rank= still works in 0.4, with a
    # DeprecationWarning, and means the same plan rank.
    with deepseek_plan(deepseek) as plan:
        assert plan.layer_storage(plan_rank=13, layer=31).owner_plan_rank == 13
        assert plan.rank_memory(plan_rank=13).plan_rank == 13
        calls = [
            ("owns", lambda **k: plan.owns(layer=31, **k)),
            ("stores_kv", lambda **k: plan.stores_kv(layer=31, **k)),
            ("split_position", lambda **k: plan.split_position(**k)),
            ("rank_layers", lambda **k: plan.rank_layers(**k)),
            ("layer_storage", lambda **k: plan.layer_storage(layer=31, **k)),
            ("rank_memory", lambda **k: plan.rank_memory(**k)),
            ("blocks_for", lambda **k: plan.blocks_for("20GiB", **k)),
            ("blocks_figure", lambda **k: plan.blocks_figure("num_blocks", "20GiB", **k)),
            ("describe_rank", lambda **k: plan.describe_rank(**k)),
            ("layer_kv_geometry", lambda **k: plan.layer_kv_geometry(layer=31, **k)),
            ("layer_state_shapes", lambda **k: plan.layer_state_shapes(layer=31, **k)),
        ]
        for name, call in calls:
            with pytest.warns(DeprecationWarning, match=rf"{name}\(plan_rank=\.\.\.\)"):
                old = call(tp_rank=13)
            assert old == call(plan_rank=13)
            with pytest.raises(TypeError, match="not both"):
                call(plan_rank=13, tp_rank=13)


def test_sglang_rule_puts_the_odd_layer_on_the_last_stage(deepseek: kvshard.Model) -> None:
    # SGLang gives the extra layer to the last stage: "30,31", and the 31
    # layers there bind at the same 41,208 blocks.
    with deepseek_plan(deepseek, pp_partition_rule=PpRule.SGLANG) as plan:
        assert plan.pp_partition() == "30,31"
        first, second = plan.stages()
        assert (first.layer_count, first.num_blocks) == (30, 42_581)
        assert (second.layer_first, second.layer_count, second.num_blocks) == (30, 31, 41_208)
        assert plan.capacity.num_blocks == 41_208
        assert (plan.capacity.binding_stage, first.binds, second.binds) == (1, False, True)
        assert plan.options.pp_partition_rule is PpRule.SGLANG
        assert not plan.has_warning(WarningCode.PP_DRAFT_REFUSED)


def test_a_draft_layer_on_the_last_stage(deepseek: kvshard.Model) -> None:
    # One speculative token counts the MTP layer, a full MLA layer with its
    # own indexer key (788 bytes), on the last stage: under SGLang's rule
    # stage 1 holds 31 + 1 = 32 layers, 32 x 788 x 64 = 1,613,824 bytes a
    # block, and 64,424,509,440 // 1,613,824 = 39,920 (39,920 x 1,613,824
    # = 64,423,854,080, leaving 655,360).
    with deepseek_plan(deepseek, pp_partition_rule="sglang", num_speculative_tokens=1) as plan:
        last = plan.stage(1)
        assert last.num_draft_layers == 1
        assert last.bytes_per_token == 32 * LAYER == 25_216
        assert plan.rank_memory(8).bytes_per_block == 64 * 25_216 == 1_613_824
        assert plan.rank_memory(8).draft_bytes_per_token == LAYER
        assert last.num_blocks == GIB60 // 1_613_824 == 39_920
        assert plan.capacity.num_blocks == 39_920 and plan.capacity.binding_stage == 1
        assert plan.stage(0).num_blocks == 42_581  # 30 layers, as without a draft
        # SGLang serves no pipeline stages with speculation: said, not refused.
        assert plan.has_warning(WarningCode.PP_DRAFT_REFUSED)
        assert [code for code, _ in plan.warnings] == [WarningCode.PP_DRAFT_REFUSED]
        assert WarningCode.PP_DRAFT_REFUSED.label == "pp_draft_refused"
        # The draft layer is layer 61, after the decoder layers.
        assert plan.layer_stage(61) == 1
        draft = plan.layer_storage(8, 61)
        assert (draft.holding, draft.stage, draft.kv_bytes_per_token) == (
            LayerHolding.DRAFT, 1, LAYER
        )
        assert plan.layer_storage(0, 61).holding is LayerHolding.NOT_ON_STAGE
        with pytest.raises(kvshard.QueryError) as info:
            plan.layer_storage(0, 62)
        assert info.value.code is Status.ELAYER and "0..61" in info.value.message
    # Under vLLM's rule stage 1 holds 30 + 1 = 31 layers: both stages fit
    # 41,208 blocks, the first binds, and there is no warning.
    with deepseek_plan(deepseek, num_speculative_tokens=1) as plan:
        assert [s.num_blocks for s in plan.stages()] == [41_208, 41_208]
        assert plan.capacity.binding_stage == 0
        assert plan.warnings == []


def test_the_even_rule_needs_pp_size_to_divide_the_layers(deepseek: kvshard.Model) -> None:
    with pytest.raises(kvshard.PlanError) as info:
        deepseek_plan(deepseek, pp_partition_rule="even")
    assert info.value.code is Status.EPARTITION
    assert "61" in info.value.message and "even" in info.value.message


# --- Qwen3-Next on 8 ranks in four stages ----------------------------------------


def qwen_plan(model: kvshard.Model, **more: object) -> kvshard.Plan:
    return kvshard.plan(
        model,
        world_size=8,
        pp_size=4,
        memory_per_rank="40GiB",
        max_seqs=256,
        context_length=32768,
        **more,
    )


def test_four_stages_of_twelve_layers(qwen: kvshard.Model) -> None:
    # 48 / 4 = 12 layers a stage, 3 full and 9 linear in each. A rank keeps
    # 3 x 1,024 = 3,072 bytes a token (49,152 a block) and 9 x 1,073,152 =
    # 9,658,368 a sequence; 256 sequences reserve 2,472,542,208, leaving
    # 40,477,130,752 = 823,509 blocks and 16,384 bytes.
    with qwen_plan(qwen) as plan:
        assert (plan.attn_tp_size, plan.num_ranks) == (2, 8)
        assert plan.pp_partition() == "12,12,12,12"
        for s, stage in enumerate(plan.stages()):
            assert (stage.stage, stage.layer_first, stage.layer_count) == (s, 12 * s, 12)
            assert (stage.num_kv_layers, stage.num_state_layers) == (3, 9)
            assert (stage.bytes_per_token, stage.state_bytes_per_seq) == (3_072, 9 * GDN)
            assert stage.num_blocks == 823_509
        assert 9 * GDN == 9_658_368
        assert (GIB40 - 256 * 9_658_368) // (16 * 3_072) == 823_509
        cap = plan.capacity
        assert cap.num_blocks == 823_509
        # 2,048 blocks a sequence of 32,768 tokens: 402 would fit, max_seqs
        # is 256. Balanced: 42,949,672,960 // (9,658,368 + 2,048 x 49,152)
        # = 42,949,672,960 // 110,321,664 = 389.
        assert cap.concurrency == 256
        assert cap.balanced_max_seqs == GIB40 // (9_658_368 + 2048 * 49_152) == 389
        # Every stage fits the same count: the first rank binds.
        assert (cap.binding_stage, cap.binding_tp_rank) == (0, 0)
        assert plan.layer_stage(47) == 3 and plan.layer_stage(12) == 1
        assert plan.rank_layers(6) == [39, 43, 47]  # stage 3, TP rank 0
        assert plan.layer_storage(7, 47).owner_plan_rank == 7  # unsplit: itself
        assert plan.layer_storage(7, 46).holding is LayerHolding.STATE
        with pytest.raises(kvshard.QueryError) as info:
            plan.layer_stage(48)  # no draft layers
        assert info.value.code is Status.ELAYER


def test_locate_and_global_rank(qwen: kvshard.Model) -> None:
    # vLLM's layout with one replica and no context parallelism:
    # g = p x 2 + t.
    with qwen_plan(qwen) as plan:
        for g in range(8):
            at = plan.locate(g)
            assert at == kvshard.RankPosition(
                global_rank=g,
                dp_rank=0,
                stage=g // 2,
                cp_rank=0,
                tp_rank=g % 2,
                plan_rank=g,  # stage x 2 + TP rank
                split_group=g % 2,  # S_eff 1: a group a rank
                split_rank=0,
            )
            assert plan.global_rank(at.dp_rank, at.stage, at.cp_rank, at.tp_rank) == g
        with pytest.raises(kvshard.QueryError) as info:
            plan.locate(8)
        assert info.value.code is Status.EGLOBALRANK and "0..7" in info.value.message
        assert isinstance(info.value, IndexError)
        with pytest.raises(kvshard.QueryError) as info:
            plan.stage(4)
        assert info.value.code is Status.ESTAGE and "0..3" in info.value.message
        with pytest.raises(kvshard.QueryError) as info:
            plan.global_rank(0, 4, 0, 0)
        assert info.value.code is Status.ESTAGE
        with pytest.raises(kvshard.QueryError) as info:
            plan.global_rank(0, 0, 0, 2)  # T is 2
        assert info.value.code is Status.ERANK and "tp_rank 2" in info.value.message
        with pytest.raises(kvshard.QueryError) as info:
            plan.global_rank(1, 0, 0, 0)  # one replica
        assert info.value.code is Status.ERANK and "dp_rank 1" in info.value.message
        with pytest.raises(ValueError):
            plan.locate(-1)


@pytest.mark.parametrize("layout", ["vllm", "sglang", "trtllm"])
def test_rank_layouts_with_two_replicas(qwen: kvshard.Model, layout: str) -> None:
    # world 8 = 2 replicas x 2 stages x T 2. vLLM numbers (dp, pp, tp):
    # g = (d x 2 + p) x 2 + t; SGLang (pp, dp, tp): g = (p x 2 + d) x 2 + t;
    # TensorRT-LLM (pp, dp, tp, cp) with one context rank is SGLang's.
    with kvshard.plan(qwen, world_size=8, dp_size=2, pp_size=2, rank_layout=layout) as plan:
        assert plan.options.rank_layout is RankLayout[layout.upper()]
        for d in range(2):
            for p in range(2):
                for t in range(2):
                    g = (d * 2 + p) * 2 + t if layout == "vllm" else (p * 2 + d) * 2 + t
                    at = plan.locate(g)
                    assert (at.dp_rank, at.stage, at.tp_rank, at.plan_rank) == (d, p, t, 2 * p + t)
                    assert plan.global_rank(d, p, 0, t) == g
        # A stage's first global rank is its replica 0's TP rank 0.
        assert plan.stage(1).global_rank_first == (2 if layout == "vllm" else 4)


def test_an_explicit_partition_with_a_draft_layer(tmp_path: Path) -> None:
    # One MTP layer (full attention, its own KV head at T 2: 1,024 bytes a
    # token) counted with one speculative token, which also widens every
    # GDN state: conv 2 x 4,096 x (3 + 1) = 32,768 and state 4 x 16 x 128 x
    # 128 x 2 = 2,097,152, so 2,129,920 bytes a linear layer. Layers 0-11,
    # 12-23, 24-38 and 39-47 hold 3 full layers each, and 9, 9, 12 and 6
    # linear ones; the draft layer goes to the last stage:
    #   stage 0, 1: (M - 256 x 9 x 2,129,920) // (16 x 3,072) = 773,973
    #   stage 2:    (M - 256 x 12 x 2,129,920) // 49,152      = 740,693
    #   stage 3:    (M - 256 x 6 x 2,129,920) // (16 x 4,096) = 605,440
    # (39,678,115,840 bytes, exactly 605,440 blocks of 65,536).
    config = json.loads(QWEN3_NEXT.read_text())
    config["mtp_num_hidden_layers"] = 1
    path = tmp_path / "qwen3_next_mtp.json"
    path.write_text(json.dumps(config))
    line = 2_129_920
    assert (GIB40 - 256 * 6 * line) // (16 * 4096) == 605_440
    with kvshard.load_model(path) as model:
        assert model.num_draft_layers == 1
        opts = kvshard.Options(
            world_size=8,
            pp_size=4,
            memory_per_rank="40GiB",
            max_seqs=256,
            context_length=32768,
            num_speculative_tokens=1,
            pp_partition=[12, 12, 15, 9],
        )
        with kvshard.plan(model, opts) as plan:
            assert plan.pp_partition() == "12,12,15,9"
            stages = plan.stages()
            assert [s.num_state_layers for s in stages] == [9, 9, 12, 6]
            assert [s.num_kv_layers for s in stages] == [3, 3, 3, 3]
            assert [s.num_draft_layers for s in stages] == [0, 0, 0, 1]
            assert [s.state_bytes_per_seq for s in stages] == [9 * line, 9 * line, 12 * line,
                                                                6 * line]
            assert [s.bytes_per_token for s in stages] == [3072, 3072, 3072, 4096]
            assert [s.num_blocks for s in stages] == [773_973, 773_973, 740_693, 605_440]
            assert plan.capacity.num_blocks == 605_440
            assert plan.capacity.binding_stage == 3 and stages[3].binds
            assert plan.layer_stage(48) == 3  # the draft layer
            assert plan.layer_storage(6, 48).holding is LayerHolding.DRAFT
            # The plan reports the counts and the rule EXPLICIT, and its
            # options plan the same plan again.
            back = plan.options
            assert back.pp_partition == [12, 12, 15, 9]
            assert back.pp_partition_rule is PpRule.EXPLICIT
            with kvshard.plan(model, back) as again:
                assert again.digest == plan.digest
        # The same partition as text, and as a deployment's override.
        with kvshard.plan(model, opts, pp_partition="12, 12, 15, 9") as plan:
            assert plan.capacity.num_blocks == 605_440
    with kvshard.load(path, world_size=8, pp_size=4, memory_per_rank="40GiB", max_seqs=256,
                      num_speculative_tokens=1, pp_partition=[12, 12, 15, 9]) as dep:
        assert dep.options.pp_partition == [12, 12, 15, 9]
        with dep.plan() as plan:
            assert plan.capacity.num_blocks == 605_440
        dep.set("pp_partition", "12,12,12,12")
        assert dep.options.pp_partition == [12, 12, 12, 12]


def test_a_stage_of_linear_layers_only(qwen: kvshard.Model) -> None:
    # Layers 0-2 are all linear: a first stage of three holds no KV, its
    # ranks keep only state and give no block count.
    with kvshard.plan(qwen, world_size=2, pp_size=2, pp_partition=[3, 45],
                      memory_per_rank="40GiB") as plan:
        first, second = plan.stages()
        assert (first.num_kv_layers, first.num_state_layers, first.num_blocks) == (0, 3, None)
        assert (second.num_kv_layers, second.num_state_layers) == (12, 33)
        assert plan.has_warning(WarningCode.STAGE_WITHOUT_KV)
        message = dict(plan.warnings)[WarningCode.STAGE_WITHOUT_KV]
        assert "stage 0" in message and "0-2" in message
        assert plan.capacity.binding_stage == 1


def test_partition_errors(qwen: kvshard.Model) -> None:
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.plan(qwen, world_size=3, pp_size=3, pp_partition=[3, 1])
    assert info.value.code is Status.EPARTITION
    assert info.value.message == "pp_partition has 2 entries; pp_size is 3"
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.plan(qwen, world_size=2, pp_size=2, pp_partition=[24, 25])
    assert info.value.code is Status.EPARTITION and "49" in info.value.message
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.plan(qwen, world_size=2, pp_size=2, pp_partition=[48, 0])
    assert info.value.code is Status.EPARTITION and "pp_partition[1]" in info.value.message
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.plan(qwen, world_size=64, pp_size=64)  # more stages than layers
    assert info.value.code is Status.EPPLAYERS


# --- options ---------------------------------------------------------------------


def test_stage_options_by_every_path() -> None:
    o = kvshard.Options(pp_size=2, pp_partition_rule="trtllm", rank_layout=RankLayout.SGLANG,
                        sweep_pp=True)
    assert (o.pp_size, o.pp_partition_rule, o.rank_layout, o.sweep_pp) == (
        2, PpRule.TRTLLM, RankLayout.SGLANG, True
    )
    o.set("pp_partition", "31,30")
    assert o.pp_partition == [31, 30]
    o.pp_partition = (20, 41)
    assert o.pp_partition == [20, 41]
    o.set("pp_partition", [1, 60])
    assert o.pp_partition == [1, 60]
    o.pp_partition = None  # the rule cuts the layers again
    assert o.pp_partition is None
    o.pp_partition = [31, 30]
    assert "pp_partition=[31, 30]" in repr(o)
    assert o.to_dict()["pp_partition"] == [31, 30]
    # A copy, a pickle and an Options made again hold counts of their own.
    twin = o.copy()
    twin.pp_partition = [30, 31]
    assert o.pp_partition == [31, 30]
    assert pickle.loads(pickle.dumps(o)) == o and copy.deepcopy(o) == o
    # SGLang's and vLLM's names for the stages set pp_size.
    v = kvshard.Options(engine="vllm")
    v.set("pipeline-parallel-size", 4)
    v.set("pp", 2)
    assert v.pp_size == 2
    with pytest.raises(ValueError, match="pipeline_parallel_size"):
        kvshard.Options(engine="sglang").set("pipeline_parallel_size", 0)
    # The stages are an option now, no setting of any profile.
    assert kvshard.settings() and all(
        s.key not in ("pp_size", "pipeline_parallel_size") for s in kvshard.settings()
    )


def test_pp_partition_values_are_checked_before_any_c_call() -> None:
    for value, exc, word in (
        ([31, True], TypeError, r"pp_partition\[1\]"),
        ([31.0], TypeError, r"pp_partition\[0\]"),
        (["31"], TypeError, r"pp_partition\[0\]"),
        ([-1], ValueError, r"pp_partition\[0\]"),
        ([2**32], ValueError, r"pp_partition\[0\]"),
        ([1] * 257, ValueError, "257"),
        (31, TypeError, "pp_partition"),
        ({31: 1}, TypeError, "pp_partition"),
    ):
        with pytest.raises(exc, match=word):
            kvshard.Options(pp_partition=value)
        with pytest.raises(exc, match=word):
            kvshard.Options().set("pp_partition", value)
    # As text, an empty list has no spelling: leave the option out instead.
    with pytest.raises(ValueError, match="at least one"):
        kvshard.Options().set("pp_partition", [])
    # PpRule.EXPLICIT is what a plan reports; the counts are the input.
    with pytest.raises(ValueError, match="pp_partition_rule"):
        kvshard.Options(pp_partition_rule=PpRule.EXPLICIT)


@pytest.mark.parametrize(
    "text", ["31,30", " 31 ,\t30 ", "+31,30", "31,x", "31,-1", "31,", "", "99999999999", "31;30"]
)
def test_pp_partition_text_is_read_as_a_deployment_reads_it(text: str) -> None:
    # Options.set and Deployment.set give the library the same text and get
    # the same counts, or the same error with the same source.
    o = kvshard.Options()
    with kvshard.load(QWEN3_NEXT) as dep:
        try:
            dep.set("pp_partition", text)
        except kvshard.KvshardError as exc:
            with pytest.raises(kvshard.KvshardError) as info:
                o.set("pp_partition", text)
            assert (info.value.code, info.value.message, info.value.source) == (
                exc.code, exc.message, exc.source
            )
            # An empty text is a list of 0 entries: the error of its length.
            want = (Status.EPARTITION,) if not text.strip() else (Status.ETYPE, Status.ERANGE)
            assert exc.code in want and exc.source == "python"
            assert o.pp_partition is None  # unchanged on failure
            return
        o.set("pp_partition", text)
        assert o.pp_partition == dep.options.pp_partition == [31, 30]


def test_the_options_keep_their_counts_alive(qwen: kvshard.Model) -> None:
    # The C struct borrows the counts: the Options owns the array, so a
    # list given and dropped, and garbage collected, is no dangling pointer.
    opts = kvshard.Options(world_size=2, pp_size=2)
    opts.pp_partition = [24] * 2  # a list no one else holds
    gc.collect()
    with kvshard.plan(qwen, opts) as plan:
        assert plan.pp_partition() == "24,24"
    # A deployment copies them; its options give them back.
    with kvshard.Deployment.create(kvshard.load_model(QWEN3_NEXT), opts) as dep:
        del opts
        gc.collect()
        assert dep.options.pp_partition == [24, 24]
        with dep.plan() as plan:
            assert plan.stage(1).layer_first == 24


# --- comparisons -----------------------------------------------------------------


def test_compare_at_a_pp_size(qwen: kvshard.Model) -> None:
    # T = 2 at four stages: split sizes 1 and 2. S = 2 ordinal splits each
    # stage's 3 KV layers 2 and 1; an owner holds both KV heads of its
    # group (2,048 bytes a layer): 2 x 2,048 + 2,048 scratch = 6,144 bytes
    # a token, 98,304 a block: 40,477,130,752 // 98,304 = 411,754.
    with kvshard.compare(qwen, world_size=8, pp_size=4, memory_per_rank="40GiB",
                         max_seqs=256) as cmp:
        assert {(r.pp_size, r.attn_tp_size) for r in cmp} == {(4, 2)}
        assert [r.layerwise_split_size for r in cmp] == [1, 1, 1, 2, 2, 2]
        assert [r.num_blocks for r in cmp][::3] == [823_509, 411_754]
        assert cmp.recommended == cmp[0]
        # No context length: no max_seqs; S = 1 stores a stage's 3 KV
        # layers of 1,024 bytes a token.
        assert cmp.to_dict()["recommendation"] == {
            "world_size": 8, "pp_size": 4, "attn_tp_size": 2,
            "enable_layerwise_split": False, "layerwise_split_size": 1,
            "ownership": "ordinal", "max_seqs": None, "memory_per_rank": 40 * 2**30,
            "max_kv_bytes_per_token": 3 * 1024,
            "flags": "--pp_size=4 --enable_layerwise_split=false --layerwise_split_size=1 "
            "--ownership=ordinal",
        }
        assert cmp[0].to_dict()["pp_size"] == 4 and cmp[0].to_dict()["attn_tp_size"] == 2


def test_compare_sweeps_pp_size(qwen: kvshard.Model) -> None:
    # Every pp_size dividing 8 cuts the 48 layers. The rows at S = 1, and
    # ordinal, each with the state of 256 sequences reserved:
    # - P 1, T 8: 12 layers of one replicated head, 12,288 bytes a token;
    #   36 GDN layers of 268,288 = 9,658,368 a sequence, as at T 2 and 4:
    #   40,477,130,752 left, // 196,608 = 205,877.
    # - P 2, T 4: 6 layers of 1,024, 98,304 a block: 411,754. S 2: 3 layers
    #   of one head (S divides the replication 2) + scratch, 65,536 a
    #   block: 617,632; S 4: 2 layers of both heads + scratch, 98,304 again.
    # - P 4, T 2: 823,509 and, at S 2, 411,754 (above).
    # - P 8, T 1: six layers a stage, alternately 1 and 2 full; at T 1 a
    #   full layer is 2,048 a token and a GDN layer 2 x 8,192 x 3 + 4 x 32 x
    #   16,384 = 2,146,304 a sequence. The stages of 2 full and 4 linear
    #   bind: (M - 256 x 4 x 2,146,304) // (16 x 4,096) = 621,824.
    # - P 1 splits: S 2 holds 6 layers of one head + scratch, 114,688 a
    #   block: 352,932; S 4 3 layers: 617,632; S 8 at most 2 layers of both
    #   heads + scratch: 411,754.
    # Global ownership never does better: every full layer has an odd index
    # (4k + 3), so its split ranks share the layers no more evenly.
    with kvshard.compare(qwen, world_size=8, memory_per_rank="40GiB", max_seqs=256,
                         sweep_pp=True) as cmp:
        ordinal = [(r.pp_size, r.attn_tp_size, r.layerwise_split_size, r.num_blocks)
                   for r in cmp if r.ownership is kvshard.Ownership.ORDINAL]
        assert ordinal == [
            (1, 8, 1, 205_877), (1, 8, 2, 352_932), (1, 8, 4, 617_632), (1, 8, 8, 411_754),
            (2, 4, 1, 411_754), (2, 4, 2, 617_632), (2, 4, 4, 411_754),
            (4, 2, 1, 823_509), (4, 2, 2, 411_754),
            (8, 1, 1, 621_824),
        ]
        assert max(r.num_blocks or 0 for r in cmp) == 823_509
        best = cmp.recommended
        assert (best.pp_size, best.attn_tp_size, best.layerwise_split_size) == (4, 2, 1)
        assert best.ownership is kvshard.Ownership.ORDINAL and best.num_blocks == 823_509
        assert "P=4" in repr(cmp)
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.compare(qwen, world_size=8, pp_size=2, pp_partition=[24, 24], sweep_pp=True)
    assert info.value.code is Status.EPARTITION


def test_ignored_flags_are_listed_and_warned() -> None:
    """An engine's whole command line under ignore_unknown: the flags the
    kvshard profile does not read are kept, each once and without its
    value, and the plan warns FLAGS_IGNORED (code 15, before the stage
    warnings 16 and 17)."""
    with kvshard.load(EXAMPLES / "qwen3_5_35b_a3b_tp4.yaml") as dep:
        dep.apply_args(
            ["--tensor-parallel-size", "4", "--max-model-len=4096", "--world_size=4"],
            ignore_unknown=True,
        )
        dep.apply_args(["--max-model-len=8192"], ignore_unknown=True)
        assert dep.ignored_flags() == ["--tensor-parallel-size", "--max-model-len"]
        with dep.plan() as plan:
            assert plan.has_warning(WarningCode.FLAGS_IGNORED)
            assert WarningCode.FLAGS_IGNORED.label == "flags_ignored"
    assert int(WarningCode.FLAGS_IGNORED) == 15
    assert int(WarningCode.PP_DRAFT_REFUSED) == 16
    assert int(WarningCode.STAGE_WITHOUT_KV) == 17
