"""The buffer-shape getters through the binding: the KV cache dtype auto
resolves to, a layer's KV geometry, its state tensors, the log line with
measured blocks and the max_seqs of blocks_for. Figures worked by hand
from the models' configs, as tests/test_getters.c works them."""

from __future__ import annotations

import pytest
from conftest import REPO

import kvshard

MODELS = REPO / "examples" / "models"
GiB = 1 << 30


def plan_of(name: str, world_size: int, **options: object) -> kvshard.Plan:
    with kvshard.load_model(str(MODELS / name)) as model:
        return kvshard.plan(model, world_size=world_size, **options)


def test_kv_cache_dtype_and_gqa_heads() -> None:
    # Qwen3.5-35B-A3B: bfloat16, 2 KV heads of 256. At T = 4 rank r holds
    # head r * 2 // 4, one head shared by two ranks.
    with plan_of("qwen3_5_35b_a3b.json", 4) as plan:
        assert plan.kv_cache_dtype is kvshard.Dtype.BF16
        heads = [plan.layer_kv_geometry(r, 3) for r in range(4)]
        assert [g.kv_head_first for g in heads] == [0, 0, 1, 1]
        g = heads[0]
        assert (g.kv_heads, g.total_kv_heads, g.k_head_dim, g.v_head_dim) == (1, 2, 256, 256)
        assert g.has_kv and g.element_bytes == 2 and g.attention is kvshard.Attention.GQA
        assert not plan.layer_kv_geometry(0, 0).has_kv  # a linear layer
    with plan_of("qwen3_5_35b_a3b.json", 4, kv_cache_dtype="fp8") as plan:
        assert plan.kv_cache_dtype is kvshard.Dtype.FP8
        assert plan.layer_kv_geometry(1, 3).element_bytes == 1


def test_mla_geometry() -> None:
    # DeepSeek-V3.2: latent 512 + RoPE 64 and an indexer key of 128.
    with plan_of("deepseek_v3_2.json", 8) as plan:
        g = plan.layer_kv_geometry(7, 0)
        assert (g.kv_lora_rank, g.qk_rope_head_dim, g.index_head_dim) == (512, 64, 128)
        assert g.kv_heads == 0 and g.attention is kvshard.Attention.MLA


def test_gdn_and_mamba2_state_tensors() -> None:
    # Qwen3.5 GDN at T = 4: 2 x 128 x 4 + 128 x 8 = 2,048 conv channels by 3
    # columns in bf16; 8 x 128 x 128 of float32.
    with plan_of("qwen3_5_35b_a3b.json", 4) as plan:
        conv, ssm = plan.layer_state_shapes(2, 0)
        assert (conv.name, conv.dtype, conv.dims, conv.bytes) == (
            "conv", kvshard.Dtype.BF16, (2048, 3), 12288)
        assert (ssm.name, ssm.dtype, ssm.dims, ssm.bytes) == (
            "ssm", kvshard.Dtype.FP32, (8, 128, 128), 524288)
        assert conv.bytes + ssm.bytes == plan.layer_storage(2, 0).state_bytes_per_seq
        assert plan.layer_state_shapes(0, 3) == []
    # Bamba-9B Mamba2 at T = 4: 8,192 / 4 + 2 x 128 = 2,304 channels by 3;
    # 32 x 64 x 128 in bf16.
    with plan_of("bamba_9b.json", 4) as plan:
        conv, ssm = plan.layer_state_shapes(0, 0)
        assert conv.dims == (2304, 3) and conv.bytes == 13824
        assert ssm.dims == (32, 64, 128) and ssm.bytes == 524288
        assert ssm.dtype is kvshard.Dtype.BF16


def test_measured_blocks_and_max_seqs() -> None:
    # 10,240 B/token, 163,840 a block; 256 x 16,097,280 bytes of state
    # reserved. 20 GiB measured: 105,920 blocks, 51 sequences of 32,768
    # tokens, balanced 21,474,836,480 // (16,097,280 + 2,048 x 163,840) =
    # 61, both at the plan's context length; the plan's own 40 GiB: 236,992
    # blocks.
    with plan_of("qwen3_5_35b_a3b.json", 4, context_length=32768,
                 memory_per_rank="40GiB") as plan:
        blocks = plan.blocks_for("20GiB")
        assert blocks.num_blocks == 105920
        assert blocks.max_seqs == 51
        assert blocks.concurrency == 51
        assert blocks.balanced_max_seqs == 61
        assert ", 236992 blocks of 16, " in plan.describe_rank(1)
        line = plan.describe_rank(1, num_blocks=blocks.num_blocks)
        assert ", 105920 blocks of 16, " in line and "236992" not in line
        with pytest.raises(ValueError):
            plan.describe_rank(1, num_blocks=-1)
    with plan_of("qwen3_5_35b_a3b.json", 4) as plan:
        assert plan.blocks_for("20GiB").max_seqs is None


def test_errors() -> None:
    with plan_of("qwen3_5_35b_a3b.json", 4) as plan:
        with pytest.raises(kvshard.KvshardError):
            plan.layer_kv_geometry(4, 0)
        with pytest.raises(kvshard.KvshardError):
            plan.layer_state_shapes(0, 99)
