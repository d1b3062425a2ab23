"""fit under an engine profile: Qwen3.5-35B-A3B on 4 GPUs of 32 GiB at
32,768 tokens, ranked by vLLM 0.28.0's own sequences.

vLLM requests ceil(34,359,738,368 x 0.92) = 31,610,959,299 B; at T = 2, D = 2
a rank's weights 18,554,484,288 B and the reserve 1,717,986,918 B leave a
budget of 11,338,488,093 B. One KV head a rank and a GDN state of 1,073,152
B make the attention block 1,056 tokens and the page 1,081,344 B; 4 groups
of 10 layers: floor(floor(11,338,488,093 / 1,081,344) / 10) = 1,048 blocks,
1,047 usable; a request of 32,768 tokens takes 32 + 3 x 2 = 38: 27 a
replica, and the engine logs int(1,048 / 38 x 32,768) = 903,706 tokens.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any, Dict, Iterator

import pytest
from conftest import EXAMPLES

import kvshard

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
QWEN_WEIGHTS: Dict[str, Any] = dict(weights_total=69321223296, weights_experts=64424509440)
QWEN_DEVICE: Dict[str, Any] = dict(device_memory="32GiB", context_length=32768, **QWEN_WEIGHTS)
VLLM_LINE = [
    "--tensor-parallel-size=2",
    "--data-parallel-size=2",
    "--gpu-memory-utilization=0.92",
    "--max-model-len=32768",
    "--max-num-seqs=27",
]


@pytest.fixture
def vllm_fit() -> Iterator[kvshard.Fit]:
    with kvshard.fit(QWEN35, gpus=4, engine="vllm", **QWEN_DEVICE) as fit:
        yield fit


def test_rows_are_the_engine_s(vllm_fit: kvshard.Fit) -> None:
    rows = [
        (r.tp_size, r.pp_size, r.dp_size, r.seqs_per_replica, r.seqs_total, r.num_blocks,
         r.tokens_per_replica)
        for r in vllm_fit.fitting
    ]
    assert rows == [
        (2, 1, 2, 27, 54, 1048, 903706),
        (1, 1, 4, 10, 40, 411, 354411),
        (4, 1, 1, 33, 33, 2323, 1103189),
    ]
    first = vllm_fit.recommendation
    assert first.weights_per_rank == 18554484288
    assert first.budget == 11338488093
    assert first.max_seqs == 27


def test_flags_are_the_engine_s(vllm_fit: kvshard.Fit) -> None:
    assert vllm_fit.flags("vllm") == VLLM_LINE
    assert vllm_fit.flags("vllm", env=True) == []
    assert vllm_fit.flags("kvshard") == ["--engine=vllm", "--engine_version=0.28.0", *VLLM_LINE]
    assert vllm_fit.flags("sglang") is None
    d = vllm_fit.to_dict()
    assert d["engine"] == {"name": "vllm", "version": "0.28.0"}
    assert d["memory_utilization"] == 0.92
    assert d["usable"] is None
    assert d["recommendation"]["flags"] == {
        "kvshard": vllm_fit.flags("kvshard"),
        "vllm": VLLM_LINE,
    }


def test_the_engine_s_length_and_fraction() -> None:
    with kvshard.fit(QWEN35, gpus=4, engine="vllm", device_memory="32GiB",
                     max_model_len=32768, gpu_memory_utilization=0.9, **QWEN_WEIGHTS) as fit:
        # ceil(34,359,738,368 x 0.9) - 18,554,484,288 - 1,717,986,918
        assert fit.recommendation.budget == 10651293326
        assert "--gpu-memory-utilization=0.9" in fit.flags("vllm")
        assert "--max-model-len=32768" in fit.flags("vllm")


def test_the_kvshard_line_replans_the_row(vllm_fit: kvshard.Fit, cli: str) -> None:
    args = [cli, "plan", str(QWEN35), *vllm_fit.flags("kvshard"), "--device_memory=32GiB",
            "--weights_total=69321223296", "--weights_experts=64424509440",
            "--context_length=32768", "--format=json"]
    doc = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    text = json.dumps(doc)
    for figure in ('"num_gpu_blocks": 1048', '"gpu_kv_cache_tokens": 903706',
                   '"max_num_seqs": 27', '"balanced_max_seqs": 27'):
        assert figure in text


def test_sglang_rows_and_line() -> None:
    # The fraction fit assumes, 0.9, is written and stated; D the
    # DP-attention workers; 179 state slots a worker at T = 2, D = 2.
    with kvshard.fit(QWEN35, gpus=4, engine="sglang", **QWEN_DEVICE) as fit:
        assert [(r.tp_size, r.dp_size, r.seqs_per_replica) for r in fit.fitting] == [
            (2, 2, 19), (1, 4, 7), (4, 1, 21)]
        assert fit.flags("sglang") == [
            "--tp-size=4", "--dp-size=2", "--enable-dp-attention", "--mem-fraction-static=0.9",
            "--context-length=32768", "--max-running-requests=38", "--max-mamba-cache-size=358"]
        assert fit.flags("vllm") is None
        assert fit.to_dict()["engine"] == {"name": "sglang", "version": "0.5.21"}


def test_stages_under_an_engine_without_them_are_refused() -> None:
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.fit(QWEN35, gpus=4, engine="xllm", max_pp_size=2, **QWEN_DEVICE)
    assert "xllm profile: pp_engine: max_pp_size 2" in info.value.message
