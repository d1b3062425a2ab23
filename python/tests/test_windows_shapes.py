"""Windows as tensors and the scales of one token's KV entry through the
binding, with the figures tests/test_windows_shapes.c works by hand."""

from __future__ import annotations

from conftest import REPO

import kvshard

MODELS = REPO / "examples" / "models"


def plan_of(name: str, world_size: int, **options: object) -> kvshard.Plan:
    with kvshard.load_model(str(MODELS / name)) as model:
        return kvshard.plan(model, world_size=world_size, **options)


def test_gemma3_sliding_window_tensors() -> None:
    # 4 of 16 KV heads of 128 a rank; 16 x (1024 / 16 + 1) = 1,040 tokens.
    with plan_of("gemma_3_27b.json", 4, block_size=16) as plan:
        k, v = plan.layer_state_shapes(1, 0)
        assert (k.name, k.dtype, k.dims, k.bytes) == (
            "window_k", kvshard.Dtype.BF16, (1040, 4, 128), 1064960)
        assert (v.name, v.dims, v.bytes) == ("window_v", (1040, 4, 128), 1064960)
        assert k.bytes + v.bytes == 2129920 == plan.layer_storage(1, 0).state_bytes_per_seq
    with plan_of("gemma_3_27b.json", 4, block_size=16, kv_cache_dtype="fp8") as plan:
        names = [(t.name, t.dtype, t.dims, t.bytes) for t in plan.layer_state_shapes(0, 0)]
        assert names[2:] == [
            ("window_k_scale", kvshard.Dtype.FP32, (1040, 4), 16640),
            ("window_v_scale", kvshard.Dtype.FP32, (1040, 4), 16640),
        ]


def test_kv_geometry_scales() -> None:
    # One KV head of 256 + 256 at fp8: 512 B and 8 B of fp32 scales.
    with plan_of("qwen3_5_35b_a3b.json", 4, kv_cache_dtype="fp8") as plan:
        g = plan.layer_kv_geometry(0, 3)
        assert (g.scale_dtype, g.scale_bytes_per_token) == (kvshard.Dtype.FP32, 8)
        assert g.kv_heads * (g.k_head_dim + g.v_head_dim) * g.element_bytes \
            + g.scale_bytes_per_token == 520
    with plan_of("qwen3_5_35b_a3b.json", 4) as plan:
        g = plan.layer_kv_geometry(0, 3)
        assert (g.scale_dtype, g.scale_bytes_per_token) == (kvshard.Dtype.AUTO, 0)
    # DeepSeek-V3.2 at fp8: 512 + 64 x 2 + 16 = 656 B of latent, 128 + 4 =
    # 132 B of index key.
    with plan_of("deepseek_v3_2.json", 8, kv_cache_dtype="fp8") as plan:
        g = plan.layer_kv_geometry(0, 0)
        assert (g.rope_element_bytes, g.index_element_bytes) == (2, 1)
        assert g.scale_bytes_per_token == 20
        assert g.kv_lora_rank * g.element_bytes + g.qk_rope_head_dim * g.rope_element_bytes \
            + g.index_head_dim * g.index_element_bytes + g.scale_bytes_per_token == 656 + 132
        assert plan.layer_storage(0, 0).kv_bytes_per_token == 788
