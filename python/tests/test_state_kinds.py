"""One small model per recurrent state kind, written as text, planned at
T = 2 (world_size 2). Each expected figure is worked out by hand from the
per-kind state formulas kvshard documents: "conv" is the convolution state in the
model dtype (bfloat16, 2 bytes), "temporal" the recurrent state in the state
dtype (float32 for GDN, KDA and lightning; the model dtype for Mamba).
"""

from __future__ import annotations

import pytest

import kvshard
from kvshard import Dtype, LayerKind, StateKind

L = LayerKind.LINEAR_ATTENTION
F = LayerKind.FULL_ATTENTION
N = LayerKind.NO_CACHE

# Attention keys shared by every model: 4 heads, 2 KV heads of 64 dims.
ATTN = """
hidden_size: 256
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 64
dtype: bfloat16
"""

GDN = (
    """
model_type: qwen3_next
num_hidden_layers: 4
full_attention_interval: 4
linear_num_key_heads: 4
linear_num_value_heads: 8
linear_key_head_dim: 32
linear_value_head_dim: 32
linear_conv_kernel_dim: 4
"""
    + ATTN
)

KDA = (
    """
model_type: kimi_linear
num_hidden_layers: 4
linear_attn_config:
  full_attn_layers: [4]
  kda_layers: [1, 2, 3]
  num_heads: 4
  head_dim: 32
  short_conv_kernel_size: 4
"""
    + ATTN
)

# JSON is read as YAML too.
LIGHTNING = """{
  "model_type": "minimax", "num_hidden_layers": 4, "attn_type_list": [0, 0, 0, 1],
  "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
  "head_dim": 64, "dtype": "bfloat16"
}"""

MAMBA1 = """
model_type: jamba
num_hidden_layers: 4
attn_layer_period: 4
attn_layer_offset: 3
hidden_size: 64
num_attention_heads: 4
num_key_value_heads: 2
mamba_d_state: 16
mamba_expand: 2
mamba_d_conv: 4
dtype: bfloat16
"""

MAMBA2 = """
model_type: nemotron_h
num_hidden_layers: 4
hybrid_override_pattern: "M-M*"
hidden_size: 64
num_attention_heads: 4
num_key_value_heads: 2
head_dim: 16
mamba_num_heads: 8
mamba_head_dim: 16
ssm_state_size: 32
n_groups: 2
conv_kernel: 4
dtype: bfloat16
"""

SHORT_CONV = """
model_type: lfm2
num_hidden_layers: 4
full_attn_idxs: [1, 3]
hidden_size: 64
num_attention_heads: 4
num_key_value_heads: 2
conv_L_cache: 3
dtype: bfloat16
"""

CASES = [
    # GDN: Hk 4, Hv 8, dk = dv = 32, K 4.
    # conv 2 * (2*32*4/2 + 32*8/2) * 3 = 1536; temporal 4 * 8/2 * 32 * 32 = 16384.
    pytest.param(GDN, StateKind.GDN, Dtype.FP32, [L, L, L, F], 1536 + 16384, id="gdn"),
    # KDA: H 4, d 32, K 4. conv 2 * 3 * 4/2 * 32 * 3 = 1152;
    # temporal 4 * 4/2 * 32 * 32 = 8192.
    pytest.param(KDA, StateKind.KDA, Dtype.FP32, [L, L, L, F], 1152 + 8192, id="kda"),
    # Lightning: H 4, d 64, no conv. temporal 4 * 4/2 * 64 * 64 = 32768.
    pytest.param(LIGHTNING, StateKind.LIGHTNING, Dtype.FP32, [L, L, L, F], 32768, id="lightning"),
    # Mamba1: d_inner 2 * 64 = 128, N 16, K 4. conv 2 * 128/2 * 3 = 384;
    # temporal 2 * 128/2 * 16 = 2048.
    pytest.param(MAMBA1, StateKind.MAMBA1, Dtype.BF16, [L, L, L, F], 384 + 2048, id="mamba1"),
    # Mamba2: H 8, P 16, N 32, G 2 (G % T == 0: 2 groups), K 4, d_inner 128.
    # conv 2 * (128 + 2*2*32)/2 * 3 = 768; temporal 2 * 8/2 * 16 * 32 = 4096.
    pytest.param(MAMBA2, StateKind.MAMBA2, Dtype.BF16, [L, N, L, F], 768 + 4096, id="mamba2"),
    # Short convolution: hidden 64, L_cache 3. conv 2 * 64/2 * 2 = 128; no temporal.
    pytest.param(SHORT_CONV, StateKind.SHORT_CONV, Dtype.AUTO, [L, F, L, F], 128, id="short_conv"),
]


@pytest.mark.parametrize("text, kind, state_dtype, kinds, per_layer", CASES)
def test_state_kind(
    text: str, kind: StateKind, state_dtype: Dtype, kinds: list, per_layer: int
) -> None:
    with kvshard.load_model(text) as model:
        assert model.state_kind is kind
        assert model.state_dtype is state_dtype
        assert model.layer_kinds == kinds
        assert model.num_layers == 4
        with kvshard.plan(model, world_size=2) as plan:
            assert plan.state_kind is kind
            linear = [i for i, k in enumerate(kinds) if k is L]
            for rank in (0, 1):
                for i in linear:
                    assert plan.layer_storage(rank, i).state_bytes_per_seq == per_layer
                assert plan.rank_memory(rank).state_bytes_per_seq == per_layer * len(linear)
            assert plan.to_dict()["model"]["state_kind"] == kind.label


def test_speculative_tokens_grow_gdn_state() -> None:
    # spec 1: conv 2 * 256 * (3 + 1) = 2048; temporal 16384 * (1 + 1) = 32768.
    with kvshard.load_model(GDN) as model:
        with kvshard.plan(model, world_size=2, num_speculative_tokens=1) as plan:
            assert plan.layer_storage(0, 0).state_bytes_per_seq == 2048 + 32768


def test_state_dtype_option_overrides_the_model() -> None:
    # Mamba2 temporal in fp32: 4 * 8/2 * 16 * 32 = 8192, conv unchanged 768.
    with kvshard.load_model(MAMBA2) as model:
        with kvshard.plan(model, world_size=2, state_dtype="fp32") as plan:
            assert plan.state_dtype is Dtype.FP32
            assert plan.layer_storage(1, 2).state_bytes_per_seq == 768 + 8192


def test_mamba2_heads_must_divide() -> None:
    # 16 query heads, which T = 16 divides (4 would be refused first, as
    # query heads every rank cannot share evenly), and 2 KV heads, which it
    # replicates: only the 8 Mamba heads on 16 ranks are wrong.
    text = MAMBA2.replace("num_attention_heads: 4", "num_attention_heads: 16")
    with kvshard.load_model(text) as model:
        with pytest.raises(kvshard.PlanError) as info:
            kvshard.plan(model, world_size=16)  # 8 heads on 16 ranks
        e = info.value
        assert e.code is kvshard.Status.ELINEARHEADS
        # The error points at mamba_num_heads in the text: line 9, after the key.
        assert (e.source, e.line, e.column) == ("<string>", 9, len("mamba_num_heads: ") + 1)


def test_query_heads_the_tp_size_does_not_divide() -> None:
    # The text as the cases above plan it, at T = 16: 4 query heads.
    with kvshard.load_model(MAMBA2) as model:
        with pytest.raises(kvshard.PlanError) as info:
            kvshard.plan(model, world_size=16)
        e = info.value
        assert e.code is kvshard.Status.EQHEADS
        assert e.message.startswith("num_attention_heads 4 is not divisible by the attention TP")
        # num_attention_heads is line 6 of the text, its value after the key.
        assert (e.line, e.column) == (6, len("num_attention_heads: ") + 1)
