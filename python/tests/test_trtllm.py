"""The trtllm profile through the binding: the engine is one the library
names, its flags are taken as trtllm-serve writes them, and the SmolLM2-135M
start-up log's figures come back.

SmolLM2-135M: 30 layers, 3 KV heads x 64, bfloat16: c = 2 x 3 x 64 x 30 x 2
= 23,040 B a token. With 9,723,600,000 bytes for the KV cache, M =
floor(9,723,600,000 / 23,040) = 422,031 tokens, ceil(422,031 / 32) = 13,189
blocks of 32, 422,048 tokens, 9,723,985,920 B allocated.
"""

from __future__ import annotations

import pytest
from conftest import REPO

import kvshard
from kvshard import Engine, Status, WarningCode

SMOLLM = REPO / "tests" / "data" / "trtllm" / "smollm2_135m.json"


def test_the_engine_is_the_librarys() -> None:
    assert Engine.TRTLLM.label == "trtllm"
    assert Engine.TRTLLM.value == 4
    assert WarningCode.ENGINE_WINDOW_REDUCED.label == "engine_window_reduced"


def test_smollm2_blocks() -> None:
    with kvshard.load(SMOLLM) as dep:
        dep.apply_args(
            ["--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000"]
        )
        assert dep.options.engine is Engine.TRTLLM
        with dep.plan() as plan:
            assert plan.engine_figure("kv_bytes_per_token") == 23_040
            assert plan.engine_figure("max_tokens") == 422_031
            assert plan.engine_figure("num_blocks") == 13_189
            assert plan.engine_figure("pool_tokens") == 422_048
            assert plan.engine_figure("allocated_bytes") == 9_723_985_920
            assert plan.engine_figure("version") == "1.1.0"
            assert plan.capacity.engine is Engine.TRTLLM
            assert plan.capacity.num_blocks == 13_189


def test_versions_outside_are_refused() -> None:
    with kvshard.load(SMOLLM) as dep:
        dep.apply_args(["--engine=trtllm", "--engine_version=1.1.0rc2"])
        with pytest.raises(kvshard.KvshardError) as e:
            dep.plan()
        assert e.value.code is Status.EPROFILE
        assert "engine_version_unsupported" in e.value.message
