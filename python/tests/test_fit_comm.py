"""fit priced by the communication estimate and ranked by throughput:
DeepSeek-V3.2 on 16 GPUs of 80 GiB (H100), the figures worked out by hand
in tests/test_comm_fit.c (docs/comm.md has the formulas).

Row 1 is T = 2, D = 8, S = 2 ordinal: 26 sequences a replica, a step of
(50,860,236,384 + 26 x 345,800,704) / 3.35e12 s = 17,865.99 us plus
1,331.81 us of owner attention, 10,834.58 tokens/s over 8 replicas, 1.61x
its unsplit row. By capacity T = 8, S = 8 leads (7,848.04 tokens/s).
"""

from __future__ import annotations

import json

import pytest
from conftest import EXAMPLES

import kvshard

DEEPSEEK = str(EXAMPLES / "models" / "deepseek_v3_2.json")
DEVICE = dict(
    device_memory="80GiB",
    context_length=32768,
    kv_cache_dtype="fp8",
    weights_total=674030337216,
    weights_experts=654068416512,
)


def test_ranked_by_throughput() -> None:
    with kvshard.fit(DEEPSEEK, gpus=16, comm_accelerator="h100", **DEVICE) as fit:
        assert fit.rank_by == "throughput"
        best = fit.recommendation
        assert (best.tp_size, best.pp_size, best.dp_size) == (2, 1, 8)
        assert best.layerwise_split_size == 2
        assert best.comm is not None and best.priced
        assert (best.comm.batch, best.comm.collectives) == (26, 122)
        assert best.comm.link_bytes == 324_812_800
        assert best.comm.comm_us == pytest.approx(1331.81, abs=0.005)
        assert best.comm.base_us == pytest.approx(59_851_054_688 / 3.35e6)
        assert best.comm.throughput_total == pytest.approx(10834.58, abs=0.005)
        assert best.comm.throughput_gain == pytest.approx(1.61, abs=0.005)
        # The dict of a row is its JSON row.
        doc = json.loads(fit.to_json())
        assert doc["rank_by"] == "throughput"
        assert [r.to_dict() for r in fit.rows] == doc["rows"]
        ranks = {(r.tp_size, r.pp_size, r.layerwise_split_size): r.rank for r in fit.rows
                 if r.layerwise_split_size > 1 and r.ownership.label == "ordinal"}
        assert (ranks[(2, 1, 2)], ranks[(4, 1, 4)], ranks[(8, 1, 8)], ranks[(2, 2, 2)]) == (
            1, 4, 7, 10)


def test_ranked_by_capacity() -> None:
    with kvshard.fit(DEEPSEEK, gpus=16, comm_accelerator="h100", rank="capacity",
                     **DEVICE) as fit:
        assert fit.rank_by == "capacity"
        best = fit.recommendation
        assert (best.tp_size, best.layerwise_split_size) == (8, 8)
        assert best.comm is not None
        assert best.comm.throughput_total == pytest.approx(7848.04, abs=0.005)
    with kvshard.fit(DEEPSEEK, gpus=16, **DEVICE) as fit:
        assert fit.rank_by == "capacity"
        assert all(r.comm is None and not r.priced for r in fit.rows)
        assert '"comm"' not in fit.to_json() and "comm_inputs" not in fit.to_json()


def test_rank_refused() -> None:
    with pytest.raises(ValueError, match="comm_value"):
        kvshard.fit(DEEPSEEK, gpus=16, rank="fastest", **DEVICE)
    with pytest.raises(kvshard.KvshardError, match="comm_input_missing"):
        kvshard.fit(DEEPSEEK, gpus=16, rank="throughput", **DEVICE)
