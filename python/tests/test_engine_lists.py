"""The engine object's lists through the binding: pp_partition a list of
ints, stages and TensorRT-LLM's windows lists of dicts, each the same as
the JSON plan's.

DeepSeek-V3.2 under vLLM 0.19.0 on -tp 8 -pp 2 with fp8 KV and 60 GiB a
worker: stages of 31 and 30 layers, a layer's page 64 x 656 + 64 x 132 =
50,432 bytes; stage 0 has 31 x 50,432 = 1,563,392 bytes a block and
floor(60 GiB / that) = 41,208 blocks, stage 1 1,512,960 and 42,581; a
request of 163,840 tokens holds 2,560 blocks.
"""

from __future__ import annotations

from typing import Iterator, List

import pytest
from conftest import EXAMPLES, REPO

import kvshard
from kvshard import FigureType

DSA = EXAMPLES / "models" / "deepseek_v3_2.json"
B = 60 * 2**30


@pytest.fixture
def dsa_two_stages() -> Iterator[kvshard.Plan]:
    with kvshard.load(DSA) as dep:
        dep.apply_args(["--engine=vllm", "--engine_version=0.19.0", "-tp", "8", "-pp", "2",
                        "--kv-cache-dtype", "fp8", "--kv-cache-memory-bytes", str(B)])
        with dep.plan() as plan:
            yield plan


def stage(index: int, first: int, count: int) -> dict:
    bytes_per_block = count * 50_432
    blocks = B // bytes_per_block
    return {
        "stage": index, "layer_first": first, "layer_count": count,
        "cache_layers": 2 * count, "group_size": 2 * count,
        "bytes_per_block": bytes_per_block, "budget": B, "num_gpu_blocks": blocks,
        "gpu_kv_cache_tokens": blocks * 64, "max_concurrency": blocks / 2_560,
        "check_need": 2_560 * bytes_per_block,
    }


def test_vllm_stages_decode_to_dicts(dsa_two_stages: kvshard.Plan) -> None:
    plan = dsa_two_stages
    assert FigureType.JSON.label == "json" and int(FigureType.JSON) == 6
    assert plan.engine_figure("pp_partition") == [31, 30]
    stages: List[dict] = plan.engine_figure("stages")
    assert stages == [stage(0, 0, 31), stage(1, 31, 30)]
    assert [s["num_gpu_blocks"] for s in stages] == [41_208, 42_581]
    assert stages[0]["check_need"] == 4_002_283_520
    engine = plan.engine_figures()
    assert engine["stages"] == stages
    assert list(engine.items()) == list(plan.to_dict()["engine"].items())


def test_trtllm_windows_decode_to_dicts() -> None:
    """gpt-oss-120b with the windows [128,131072] at 20 GiB: 568 and
    291,271 tokens (the second capped by M), 18 and 9,103 blocks."""
    model = REPO / "tests" / "data" / "trtllm" / "gpt_oss_120b.json"
    with kvshard.load(model) as dep:
        dep.apply_args(["--engine=trtllm", "--kv_cache_config.max_attention_window=[128,131072]",
                        "--memory_per_rank=20GiB"])
        with dep.plan() as plan:
            assert plan.engine_figure("windows") == [
                {"window": 128, "layers": 18, "bytes_per_token": 36_864, "max_tokens": 568,
                 "primary_blocks": 18, "adjusted_window": 128},
                {"window": 131_072, "layers": 18, "bytes_per_token": 36_864,
                 "max_tokens": 291_271, "primary_blocks": 9_103, "adjusted_window": 131_072},
            ]
            assert plan.engine_figure("pp_partition") == [36]
            assert plan.engine_figures() == plan.to_dict()["engine"]
