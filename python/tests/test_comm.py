"""The seed deployment priced on BI-V100 (docs/comm.md): the comm inputs
are a deployment's, and the estimate is the plan document's `comm` object.

By hand: 10 GQA layers of 1,024 bytes a token at the owner, 96 sequences;
owner attention moves 10 x (196,608 + 393,216) = 5,898,240 bytes in 20
collectives over PCIe 4 (24 GB/s, 15 us each): 300 + 245.76 = 545.76 us.
"""

from __future__ import annotations

from conftest import SEED

import kvshard

SEED_ARGS = [
    "--context_length=32768",
    "--weights_total=69321223296",
    "--weights_experts=64424509440",
]


def test_seed_priced_on_bi_v100() -> None:
    with kvshard.load(SEED) as dep:
        dep.apply_args(SEED_ARGS + ["--comm_accelerator=bi_v100"])
        with dep.plan() as plan:
            comm = plan.to_dict()["comm"]
    assert comm["decode_mechanism"] == "owner_attention"
    assert comm["link"]["name"] == "pcie4x16"
    decode = comm["decode"]
    assert (decode["batch"], decode["collectives"], decode["link_bytes"]) == (96, 20, 5898240)
    assert decode["comm_us"] == 545.76
    assert decode["unsplit"]["batch"] == 57
    assert round(decode["throughput_gain"], 4) == 1.2102


def test_no_comm_input_no_comm_object() -> None:
    with kvshard.load(SEED) as dep:
        dep.apply_args(SEED_ARGS)
        with dep.plan() as plan:
            assert "comm" not in plan.to_dict()


def test_full_layer_verdicts_in_the_document() -> None:
    """full_layer on PCIe 4: 1,348.37 ms of communication a step against a
    43.86 ms base step, and 71.2 tokens/s against the unsplit 1,786.3: the
    estimate's two warnings, in the document's list after the plan's own
    (plan.warnings holds the plan's alone)."""
    with kvshard.load(SEED) as dep:
        dep.apply_args(SEED_ARGS + ["--comm_accelerator=bi_v100", "--comm_decode=full_layer"])
        with dep.plan() as plan:
            codes = [w["code"] for w in plan.to_dict()["warnings"]]
            own = [code for code, _ in plan.warnings]
    assert codes[-2:] == ["split_comm_dominates", "split_loses_throughput"]
    assert kvshard.Warning.SPLIT_COMM_DOMINATES not in own
