"""fit under the xllm and trtllm profiles, ranked by each engine's own
sequences (the figures by hand are in tests/test_fit_engine2.c).

xLLM 0.11.0, Qwen3.5-35B-A3B on 4 GPUs of 32 GiB at 32,768 tokens: at
T = 2, D = 2 the budget is 15,805,254,080 - trunc(34,359,738,368 x 0.2) =
8,933,306,407 B; 131 state slots of 32,194,560 B leave 3,597 blocks of
1,310,720 B, 3,596 usable, 256 a request: 14 a replica. TensorRT-LLM 1.1.0,
Llama 3.1 8B on 2 GPUs of 24 GiB: at T = 2 int(16,451,052,340 x
0.8999999761581421) = 14,805,946,713 B at 65,536 B a token is 225,920
tokens, 7,060 blocks of 32, 1,024 a request: 6.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest
from conftest import EXAMPLES

import kvshard

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
LLAMA = EXAMPLES / "models" / "llama3_1_8b.json"
QWEN_DEVICE: Dict[str, Any] = dict(
    device_memory="32GiB", context_length=32768, weights_total=69321223296,
    weights_experts=64424509440)
LLAMA_DEVICE: Dict[str, Any] = dict(
    device_memory="24GiB", context_length=32768, weights_total=16060522496)


def test_xllm_rows_and_line() -> None:
    with kvshard.fit(QWEN35, gpus=4, engine="xllm", **QWEN_DEVICE) as fit:
        assert [
            (r.tp_size, r.dp_size, r.layerwise_split_size, r.seqs_per_replica, r.num_blocks)
            for r in fit.fitting
        ] == [(2, 2, 1, 14, 3597), (1, 4, 1, 5, 1319), (4, 1, 1, 15, 4089),
              (4, 1, 2, 14, 3717)]
        assert fit.rows[0].budget == 8933306407
        assert fit.flags("xllm") == [
            "--max_seqs_per_batch=14", "--max_memory_utilization=0.8", "--dp_size=2"]
        assert fit.flags("kvshard") == [
            "--engine=xllm", "--engine_version=0.11.0", "--max_seqs_per_batch=14",
            "--max_memory_utilization=0.8", "--dp_size=2"]
        assert fit.flags("xllm", env=True) == []
        assert fit.flags("vllm") is None
        assert fit.to_dict()["engine"] == {"name": "xllm", "version": "0.11.0"}


def test_xllm_prefix_cache_off() -> None:
    # The state pool follows the limit: 24 a replica, 26 slots, 6,176 blocks.
    with kvshard.fit(QWEN35, gpus=4, engine="xllm", enable_prefix_cache=False,
                     **QWEN_DEVICE) as fit:
        row = fit.rows[0]
        assert (row.tp_size, row.dp_size, row.seqs_per_replica, row.num_blocks) == (
            2, 2, 24, 6176)
        assert fit.flags("xllm")[-1] == "--enable_prefix_cache=false"


def test_trtllm_refuses_the_gdn_hybrid() -> None:
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.fit(QWEN35, gpus=4, engine="trtllm", **QWEN_DEVICE)
    assert "trtllm profile: engine_unsupported: a model with gdn state layers" in (
        info.value.message)


def test_trtllm_dense() -> None:
    with kvshard.fit(LLAMA, gpus=2, engine="trtllm", **LLAMA_DEVICE) as fit:
        assert [
            (r.tp_size, r.dp_size, r.seqs_per_replica, r.seqs_total, r.tokens_per_replica)
            for r in fit.fitting
        ] == [(2, 1, 6, 6, 225920), (1, 2, 1, 2, 57824)]
        assert fit.flags("trtllm") == [
            "--tp_size=2", "--max_seq_len=32768", "--max_batch_size=6",
            "--kv_cache_free_gpu_memory_fraction=0.9"]
    # Without an engine, TensorRT-LLM's line is its own fit of row 1.
    with kvshard.fit(LLAMA, gpus=2, **LLAMA_DEVICE) as fit:
        assert fit.flags("trtllm") == [
            "--tp_size=2", "--max_seq_len=32768", "--max_batch_size=6",
            "--kv_cache_free_gpu_memory_fraction=0.9"]
        assert fit.to_dict()["recommendation"]["engine_reasons"]["trtllm"] is None
