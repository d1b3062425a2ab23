"""compare priced by the communication estimate: the seed deployment on
BI-V100, the figures worked out by hand in tests/test_comm_compare.c
(docs/comm.md has the formulas).

S = 2 ordinal: 96 sequences, a step of (17,330,305,824 + 96 x 367,738,880)
/ 1.2e12 s = 43,861.03 us plus 545.76 us of owner attention, 2,161.83
tokens/s; the S = 1 row (57 sequences) 1,786.30, so the split gives 1.21x.
Under full_layer the split decodes 71.2 tokens/s: S = 1 leads by
throughput, S = 2 by capacity.
"""

from __future__ import annotations

import json

import pytest
from conftest import SEED

import kvshard

SEED_ARGS = [
    "--context_length=32768",
    "--weights_total=69321223296",
    "--weights_experts=64424509440",
    "--comm_accelerator=bi_v100",
]


def test_seed_ranked_by_throughput() -> None:
    with kvshard.load(SEED) as dep:
        dep.apply_args(SEED_ARGS)
        with kvshard.compare(dep) as cmp:
            assert cmp.rank_by == "throughput"
            best = cmp.recommended
            assert (best.layerwise_split_size, best.ownership.label) == (2, "ordinal")
            assert best.comm is not None and best.priced
            assert (best.comm.batch, best.comm.collectives) == (96, 20)
            assert best.comm.link_bytes == 5_898_240
            assert best.comm.comm_us == pytest.approx(545.76)
            assert best.comm.step_us == pytest.approx(44406.79, abs=0.005)
            assert best.comm.throughput == pytest.approx(2161.83, abs=0.005)
            assert best.comm.throughput_gain == pytest.approx(1.21, abs=0.005)
            # A row's comm is its JSON row's.
            doc = json.loads(cmp.to_json())
            assert doc["rank_by"] == "throughput"
            assert doc["recommendation"]["rank_by"] == "throughput"
            assert [r.to_dict()["comm"] for r in cmp.rows] == [r["comm"] for r in doc["rows"]]


def test_full_layer_orders_differ() -> None:
    with kvshard.load(SEED) as dep:
        dep.apply_args(SEED_ARGS + ["--comm_decode=full_layer", "--comm_prefill=full_layer"])
        with dep.compare(rank="throughput") as cmp:
            assert cmp.recommended.layerwise_split_size == 1
            split = [r for r in cmp.rows if r.layerwise_split_size == 2][0]
            assert split.comm is not None
            assert split.comm.throughput == pytest.approx(71.2, abs=0.05)
        with dep.compare(rank="capacity") as cmp:
            assert cmp.rank_by == "capacity"
            assert cmp.recommended.layerwise_split_size == 2


def test_rank_refused_and_unpriced() -> None:
    with kvshard.load(SEED) as dep:
        dep.apply_args(SEED_ARGS[:3])
        with pytest.raises(kvshard.KvshardError, match="comm_input_missing"):
            dep.compare(rank="throughput")
        with pytest.raises(ValueError, match="comm_value"):
            dep.compare(rank="bogus")
        with dep.compare() as cmp:
            assert cmp.rank_by == "capacity"
            assert all(r.comm is None and not r.priced for r in cmp.rows)
            assert "comm" not in cmp.rows[0].to_dict()
