"""fp8_e5m2 through the binding: its own Dtype, sized as fp8 (one byte and
the same per-head fp32 scales under kvshard's profile), named as given.

Llama 3.1 8B at T = 2: 4 KV heads of 128 a rank on 32 layers, so
32 x 4 x (2 x 128 + 8) = 33,792 B a token at either fp8."""

from __future__ import annotations

from conftest import REPO

import kvshard
from kvshard import Dtype

MODEL = str(REPO / "examples" / "models" / "llama3_1_8b.json")


def test_label_and_size() -> None:
    assert Dtype.FP8_E5M2.label == "fp8_e5m2"
    assert Dtype(6) is Dtype.FP8_E5M2
    assert kvshard.Options(kv_cache_dtype="fp8_e5m2").kv_cache_dtype is Dtype.FP8_E5M2
    assert kvshard.Options(kv_cache_dtype="fp8_e4m3").kv_cache_dtype is Dtype.FP8


def test_plan_names_the_format() -> None:
    with kvshard.load_model(MODEL) as model:
        for word, dtype in (("fp8_e5m2", Dtype.FP8_E5M2), ("fp8", Dtype.FP8)):
            with kvshard.plan(model, world_size=2, kv_cache_dtype=word) as plan:
                assert plan.kv_cache_dtype is dtype
                geometry = plan.layer_kv_geometry(0, 0)
                assert geometry.element_bytes == 1
                assert geometry.scale_bytes_per_token == 4 * 8
                assert plan.rank_memory(0).kv_bytes_per_token == 33792
