"""Comparison rows and recommendation, warnings, and the JSON and text
documents against the CLI's."""

from __future__ import annotations

import json
import math
import subprocess
from typing import List

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import Ownership, Status, WarningCode

GIB20 = 20 * 1024**3
STATE = 128 * 16097280  # max_seqs x state bytes per sequence (seed)
BLOCKS_PER_SEQ = 32768 // 16


def blocks(kv_per_token: int, scratch: int) -> int:
    return (GIB20 - STATE) // (16 * (kv_per_token + scratch))


def balanced(kv_per_token: int, scratch: int) -> int:
    return GIB20 // (16097280 + BLOCKS_PER_SEQ * 16 * (kv_per_token + scratch))


def run_cli(cli: str, *args: str) -> str:
    done = subprocess.run([cli, *args], check=True, capture_output=True, text=True)
    return done.stdout


# --- comparison -----------------------------------------------------------------


def test_compare_rows_and_recommendation() -> None:
    with kvshard.load(SEED, context_length=32768) as dep, dep.compare() as cmp:
        rows = cmp.rows
        assert [(r.layerwise_split_size, r.ownership) for r in rows] == [
            (s, o)
            for s in (1, 2, 4)
            for o in (Ownership.ORDINAL, Ownership.GLOBAL, Ownership.CONTIGUOUS)
        ]
        assert all(r.ok and r.error is Status.OK and r.error_message == "" for r in rows)

        # S = 1: every rank stores all 10 layers at 1024 B/token, no scratch.
        s1 = rows[0]
        assert (s1.min_owned_layers, s1.max_owned_layers) == (10, 10)
        assert s1.max_kv_bytes_per_token == 10240
        assert s1.num_blocks == blocks(10240, 0) == 118496
        assert s1.concurrency == min(128, 118496 // BLOCKS_PER_SEQ) == 57
        assert s1.balanced_max_seqs == balanced(10240, 0) == 61
        assert s1.gain == 1.0

        # S = 2 ordinal: five layers each, one layer of scratch.
        s2 = rows[3]
        assert (s2.min_owned_layers, s2.max_owned_layers) == (5, 5)
        assert s2.max_bytes_per_block == 16 * (5120 + 1024)
        assert s2.num_blocks == blocks(5120, 1024) == 197493
        assert s2.max_tokens == 197493 * 16
        assert (s2.concurrency, s2.balanced_max_seqs) == (96, 98)
        assert s2.gain == pytest.approx(197493 / 118496)
        assert s2.warnings == (WarningCode.MAX_SEQS_UNREACHABLE,)

        # S = 2 global: every full layer has an odd index, so split rank 1
        # owns all ten (10240 B/token + 1024 scratch) and rank 0 none.
        g2 = rows[4]
        assert (g2.min_owned_layers, g2.max_owned_layers) == (0, 10)
        assert g2.num_blocks == blocks(10240, 1024) == 107723
        assert WarningCode.RANK_OWNS_NOTHING in g2.warnings
        assert WarningCode.IMBALANCED in g2.warnings

        # S = 4 ordinal: 3, 3, 2, 2 layers; an owner holds both KV heads of
        # its group: 2048 B/token per layer.
        s4 = rows[6]
        assert (s4.min_owned_layers, s4.max_owned_layers) == (2, 3)
        assert s4.max_kv_bytes_per_token == 3 * 2048
        assert s4.num_blocks == blocks(6144, 2048) == 148120
        assert WarningCode.EXCEEDS_REPLICATION in s4.warnings

        # Most balanced_max_seqs wins; the tie with contiguous goes to ordinal.
        assert cmp.recommended_index == 3
        assert cmp.recommended == s2
        assert len(cmp) == 9 and list(cmp) == list(rows) and cmp[3] == s2

        d = cmp.to_dict()
        # The recommendation names its stages too (one, without sweep_pp),
        # the balanced max_seqs it recommends, the budget, the fullest
        # rank's KV a token (five layers of one head of 256, K and V in
        # bf16) and its flags.
        assert d["recommendation"] == {
            "world_size": 4,
            "pp_size": 1,
            "attn_tp_size": 4,
            "enable_layerwise_split": True,
            "layerwise_split_size": 2,
            "ownership": "ordinal",
            "max_seqs": 98,
            "memory_per_rank": 20 * 2**30,
            "max_kv_bytes_per_token": 5 * 256 * 2 * 2,
            "flags": "--enable_layerwise_split=true --layerwise_split_size=2 "
            "--ownership=ordinal --max_seqs=98",
        }
        assert [r["num_blocks"] for r in d["rows"]] == [r.num_blocks for r in rows]
        assert s2.to_dict()["warnings"] == ["max_seqs_unreachable"]
    # The rows are Python copies: still readable after close().
    assert cmp.closed and rows[3].num_blocks == 197493


def test_compare_from_a_model_and_options() -> None:
    with kvshard.load_model(EXAMPLES / "models" / "qwen3_5_35b_a3b.json") as model:
        opts = kvshard.Options(world_size=4, memory_per_rank="20GiB", max_seqs=128, block_size=16)
        with kvshard.compare(model, opts) as cmp:
            # Without a context length the most blocks win: S = 2 ordinal.
            assert (cmp.recommended.layerwise_split_size, cmp.recommended.ownership) == (
                2,
                Ownership.ORDINAL,
            )
            assert cmp.recommended.concurrency is None


def test_compare_split_sizes_divide_t() -> None:
    with kvshard.load(SEED, world_size=8) as dep, dep.compare() as cmp:
        assert [r.layerwise_split_size for r in cmp] == [1] * 3 + [2] * 3 + [4] * 3 + [8] * 3


def test_compare_rows_without_a_valid_plan() -> None:
    # Memory for the state plus one block of 16 x 6144 bytes (and 1 byte):
    # only the splits whose bytes per block are at most 98305 fit a block.
    with kvshard.load(SEED, memory_per_rank=STATE + 16 * 6144 + 1) as dep, dep.compare() as cmp:
        s1 = cmp.rows[0]
        assert not s1.ok and s1.error is Status.ENOBLOCK
        assert "no memory for one block" in s1.error_message
        assert (s1.num_blocks, s1.max_bytes_per_block, s1.gain) == (None, 0, 0.0)
        ok = [(r.layerwise_split_size, r.ownership) for r in cmp if r.ok]
        assert ok == [(2, Ownership.ORDINAL), (2, Ownership.CONTIGUOUS)]
        s2 = cmp.rows[3]
        assert (s2.num_blocks, s2.max_tokens) == (1, 16)
        assert math.isinf(s2.gain)  # the unsplit plan fits no block
        assert s2.to_dict()["gain"] is None
        assert cmp.recommended == s2


# --- warnings -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({"enable_layerwise_split": False}, [WarningCode.SPLIT_DISABLED]),
        ({"layerwise_split_size": 1}, [WarningCode.SPLIT_SIZE_ONE]),
        ({"ownership": "global"}, [WarningCode.RANK_OWNS_NOTHING, WarningCode.IMBALANCED]),
        ({"layerwise_split_size": 4}, [WarningCode.EXCEEDS_REPLICATION]),
        ({"is_draft": True}, [WarningCode.DRAFT_UNSPLIT]),
        ({"context_length": 32768}, [WarningCode.MAX_SEQS_UNREACHABLE]),
        ({"context_length": 32768, "max_seqs": 98}, []),
        # A setting only the xllm profile reads, away from its default.
        ({"max_memory_utilization": 0.5}, [WarningCode.PROFILE_INPUTS_IGNORED]),
        ({"max_memory_utilization": 0.8}, []),
    ],
)
def test_warnings(overrides: dict, expected: List[WarningCode]) -> None:
    with kvshard.load(SEED, **overrides) as dep, dep.plan() as plan:
        codes = [code for code, _ in plan.warnings]
        assert codes == expected
        assert all(isinstance(m, str) and m for _, m in plan.warnings)
        for code in WarningCode:
            assert plan.has_warning(code) == (code in expected)
        assert [w["code"] for w in plan.to_dict()["warnings"]] == [c.label for c in expected]


def test_no_kv_layers_warning() -> None:
    text = """
model_type: lfm2
num_hidden_layers: 2
layer_types: [conv, conv]
hidden_size: 64
conv_L_cache: 3
"""
    with kvshard.load_model(text) as model, kvshard.plan(model) as plan:
        assert [c for c, _ in plan.warnings] == [WarningCode.NO_KV_LAYERS]


# --- documents against the CLI ----------------------------------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"context_length": 32768},
        {"ownership": "contiguous", "layerwise_split_size": 4, "kv_cache_dtype": "fp8"},
        {"engine": "xllm", "block_size": 128},
        {"engine": "xllm", "block_size": 128, "enable_prefix_cache": "false",
         "max_cache_size": "10GiB"},
        {"max_memory_utilization": 0.5, "device_memory_total": "80GiB"},
    ],
    ids=["seed", "context", "contiguous-fp8", "xllm", "xllm-settings", "ignored-settings"],
)
def test_plan_json_equals_the_cli(cli: str, overrides: dict) -> None:
    flags = [f"--{k}={v}" for k, v in overrides.items()]
    text = run_cli(cli, "plan", str(SEED), "--format=json", *flags)
    from_cli = json.loads(text)
    with kvshard.load(SEED, **overrides) as dep, dep.plan() as plan:
        assert plan.to_dict() == from_cli
        assert plan.to_json() == text
        assert from_cli["digest"] == f"{plan.digest:016x}"
        assert plan.to_text() == run_cli(cli, "plan", str(SEED), *flags)


def test_plan_json_of_a_bare_model_config(cli: str) -> None:
    model = EXAMPLES / "models" / "qwen3_next_80b_a3b.json"
    from_cli = json.loads(run_cli(cli, "plan", str(model), "--format=json", "--world_size=8"))
    with kvshard.load(model, world_size=8) as dep, dep.plan() as plan:
        assert plan.to_dict() == from_cli


def test_compare_documents_equal_the_cli(cli: str) -> None:
    with kvshard.load(SEED, context_length=32768) as dep, dep.compare() as cmp:
        args = ["compare", str(SEED), "--context_length=32768"]
        assert cmp.to_dict() == json.loads(run_cli(cli, *args, "--format=json"))
        assert cmp.to_text() == run_cli(cli, *args)


def test_every_shipped_example_plans_as_the_cli_does(cli: str) -> None:
    for path in sorted(EXAMPLES.glob("*.yaml")):
        from_cli = json.loads(run_cli(cli, "plan", str(path), "--format=json"))
        with kvshard.load(path) as dep, dep.plan() as plan:
            assert plan.to_dict() == from_cli, path.name


def cli_output(cli: str, what: str, *args: str) -> str:
    """The CLI's output, which the binding's must equal."""
    done = subprocess.run([cli, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"`kvshard {' '.join(args[:1])}` cannot write the {what}: {done.stderr.strip()}"
    return done.stdout


def test_svg_equals_the_cli(cli: str, seed_plan: kvshard.Plan) -> None:
    expected = cli_output(cli, "SVG", "plan", str(SEED), "--format=svg")
    svg = seed_plan.to_svg()
    assert svg.lstrip().startswith(("<svg", "<?xml"))
    assert svg == expected


def test_report_equals_the_cli(cli: str, seed: kvshard.Deployment) -> None:
    from_cli = cli_output(cli, "HTML report", "report", str(SEED))
    # The CLI names its input file and its command line under the title;
    # the library's call knows neither. The rest is the same page.
    made_by = f'<p class="sub origin">made by <code>kvshard report {SEED}</code></p>\n'
    assert made_by in from_cli
    expected = from_cli.replace(made_by, "").replace(f"input <code>{SEED}</code>; ", "")
    html = seed.report_html()
    assert "<html" in html.lower()
    assert html == expected
    with seed.plan() as plan:
        assert plan.report_html() != html  # without the comparison
