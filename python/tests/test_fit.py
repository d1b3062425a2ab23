"""Device inputs and fit, with figures worked out by hand.

Qwen3.5-35B-A3B (examples/models/qwen3_5_35b_a3b.json) on GPUs of 32 GiB at
32,768 tokens, its checkpoint 69,321,223,296 bytes of which 64,424,509,440
are experts:

- usable floor(34,359,738,368 x 0.9) = 30,923,764,531 B; the reserve
  max(1 GiB, 34,359,738,368 / 20) = 1,717,986,918 B;
- at T = 2, D = 2 a rank holds ceil(4,896,713,856 / 2) + ceil(64,424,509,440
  / 4) = 2,448,356,928 + 16,106,127,360 = 18,554,484,288 B of weights, which
  leave 30,923,764,531 - 18,554,484,288 - 1,717,986,918 = 10,651,293,325 B;
- there a rank keeps one KV head of 10 layers, 10 x 2 x 256 x 2 = 10,240
  B/token (163,840 B a block of 16), and GDN state 30 x (2 x (2 x 128 x 16
  / 2 + 128 x 32 / 2) x 3 + 4 x 16 x 128 x 128) = 32,194,560 B a sequence;
  a sequence of 32,768 tokens is 2,048 blocks, 32,194,560 + 2,048 x 163,840
  = 367,738,880 B: floor(10,651,293,325 / 367,738,880) = 28 a replica, 56
  in all; at max_seqs 28, (10,651,293,325 - 28 x 32,194,560) / 163,840 =
  59,508 blocks, 952,128 tokens a replica, 1,904,256 in all;
- at T = 4, D = 1: 4,896,713,856 / 4 + 64,424,509,440 / 4 = 17,330,305,824
  B, a budget of 11,875,471,789; split 2, a rank owns 5 KV layers and
  computes one from scratch, 6 x 1,024 = 6,144 B/token (98,304 a block),
  state 16,097,280 B a sequence: 16,097,280 + 2,048 x 98,304 = 217,423,872
  B a sequence, 54 of them;
- 4 GPUs on one node allow one stage: of the 6 pairs (T, P) with T x P
  dividing 4, (1, 2), (1, 4) and (2, 2) are left out; the other three give
  T = 1 (1 row), T = 2 (1 + 3) and T = 4 (1 + 3 + 3): 12 rows.
"""

from __future__ import annotations

import copy
import json
import pickle
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest
from conftest import EXAMPLES

import kvshard
from kvshard import Ownership, Status, WarningCode

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
DEEPSEEK = EXAMPLES / "models" / "deepseek_v3_2.json"
NEMOTRON = EXAMPLES / "models" / "nemotron_3_nano_30b_a3b.json"

GIB = 2**30
QWEN_WEIGHTS: Dict[str, Any] = dict(weights_total=69321223296, weights_experts=64424509440)
QWEN_DEVICE: Dict[str, Any] = dict(device_memory="32GiB", context_length=32768, **QWEN_WEIGHTS)


@pytest.fixture
def qwen() -> Iterator[kvshard.Model]:
    with kvshard.load_model(QWEN35) as model:
        yield model


@pytest.fixture
def qwen_fit() -> Iterator[kvshard.Fit]:
    with kvshard.fit(QWEN35, gpus=4, **QWEN_DEVICE) as fit:
        yield fit


# --- Qwen3.5-35B-A3B on 4 GPUs of 32 GiB ------------------------------------------


def test_qwen_rows(qwen_fit: kvshard.Fit) -> None:
    assert len(qwen_fit) == len(qwen_fit.rows) == 12
    assert len(qwen_fit.fitting) == 12 and all(r.fits for r in qwen_fit)
    assert qwen_fit.limited_layouts == 3
    assert qwen_fit.not_admitted == ()
    assert [r.rank for r in qwen_fit] == list(range(1, 13))
    assert sorted((r.tp_size, r.layerwise_split_size) for r in qwen_fit) == [
        (1, 1), (2, 1), (2, 2), (2, 2), (2, 2),
        (4, 1), (4, 2), (4, 2), (4, 2), (4, 4), (4, 4), (4, 4),
    ]
    best = qwen_fit.recommendation
    assert best is qwen_fit.rows[0] and best == qwen_fit[0]
    assert best == kvshard.FitRow(
        rank=1,
        tp_size=2,
        pp_size=1,
        dp_size=2,
        layerwise_split_size=1,
        ownership=Ownership.DEFAULT,
        fits=True,
        reason=Status.OK,
        no_sequence=False,
        weights_per_rank=18_554_484_288,
        budget=10_651_293_325,
        binding_stage=0,
        num_blocks=59_508,
        max_seqs=28,
        seqs_per_replica=28,
        seqs_total=56,
        tokens_per_replica=952_128,
        tokens_total=1_904_256,
        pp_partition=(40,),
        warnings=(),
    )
    second = qwen_fit[1]
    assert (second.tp_size, second.dp_size, second.layerwise_split_size) == (4, 1, 2)
    assert second.ownership is Ownership.ORDINAL
    assert (second.weights_per_rank, second.budget) == (17_330_305_824, 11_875_471_789)
    assert (second.seqs_per_replica, second.seqs_total) == (54, 54)
    # The rows are frozen.
    with pytest.raises(AttributeError):
        best.budget = 0  # type: ignore[misc]


def test_qwen_flags(qwen_fit: kvshard.Fit) -> None:
    assert qwen_fit.flags() == ["--world_size=4", "--dp_size=2", "--max_seqs=28"]
    assert qwen_fit.flags(kvshard.Engine.KVSHARD) == qwen_fit.flags("kvshard")
    assert qwen_fit.flags("vllm") == [
        "--tensor-parallel-size=2",
        "--data-parallel-size=2",
        "--gpu-memory-utilization=0.92",
        "--max-model-len=32768",
        "--max-num-seqs=27",
    ]
    # Each engine's line is its own profile's for row 1's layout: SGLang's
    # TP size counts every GPU of the attention-DP group, 19 requests and
    # 179 state slots a worker.
    assert qwen_fit.flags("sglang") == [
        "--tp-size=4",
        "--dp-size=2",
        "--enable-dp-attention",
        "--mem-fraction-static=0.9",
        "--context-length=32768",
        "--max-running-requests=38",
        "--max-mamba-cache-size=358",
    ]
    # One stage: no partition in the environment.
    assert qwen_fit.flags("vllm", env=True) == []
    assert qwen_fit.flags("sglang", env=True) == []
    # xLLM's own fit of T = 2, D = 2: 14 a replica (test_fit_engine2).
    assert qwen_fit.flags("xllm") == [
        "--max_seqs_per_batch=14", "--max_memory_utilization=0.8", "--dp_size=2"]
    # TensorRT-LLM covers no GDN hybrid.
    assert qwen_fit.flags("trtllm") is None
    with pytest.raises(kvshard.ConfigError) as info:
        qwen_fit.flags("nope")
    assert info.value.code is Status.EUNKNOWNKEY
    with pytest.raises(TypeError):
        qwen_fit.flags(2)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        qwen_fit.flags("vllm", env=1)  # type: ignore[arg-type]


def test_qwen_documents(qwen_fit: kvshard.Fit) -> None:
    d = qwen_fit.to_dict()
    assert json.loads(qwen_fit.to_json()) == d
    assert (d["gpus"], d["limited_layouts"], d["usable"], d["activation_reserve"]) == (
        4, 3, 30_923_764_531, 1_717_986_918
    )
    assert [r.to_dict() for r in qwen_fit] == d["rows"]
    assert d["not_admitted"] == []
    for engine in ("kvshard", "vllm", "sglang"):
        assert d["recommendation"]["flags"][engine] == qwen_fit.flags(engine)
    text = qwen_fit.to_text()
    assert "... 2 more layouts fit" in text
    assert "recommended: kvshard plan " in text
    assert "... 11 more layouts fit" in qwen_fit.to_text(1)
    assert "more layouts fit" not in qwen_fit.to_text(12)
    with pytest.raises(ValueError):
        qwen_fit.to_text(-1)


def test_the_fit_s_json_is_the_cli_s(qwen_fit: kvshard.Fit, cli: str) -> None:
    args = [f"--{k}={v}" for k, v in QWEN_DEVICE.items()]
    done = subprocess.run([cli, "fit", str(QWEN35), "--gpus=4", "--format=json", *args],
                          capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == qwen_fit.to_dict()


def test_a_model_a_deployment_and_a_path_fit_alike(qwen: kvshard.Model,
                                                   qwen_fit: kvshard.Fit) -> None:
    with kvshard.fit(qwen, gpus=4, **QWEN_DEVICE) as by_model:
        assert by_model.rows == qwen_fit.rows
    opts = kvshard.Options(**QWEN_DEVICE)
    with kvshard.fit(qwen, opts, gpus=4) as by_options:
        assert by_options.rows == qwen_fit.rows
    with kvshard.load(QWEN35, **QWEN_DEVICE) as dep:
        with dep.fit(4) as by_deployment, kvshard.fit(dep, gpus=4) as again:
            assert by_deployment.rows == again.rows == qwen_fit.rows
        with pytest.raises(TypeError):
            kvshard.fit(dep, gpus=4, context_length=1024)
    with pytest.raises(TypeError):
        kvshard.fit(QWEN35, opts, gpus=4)
    with pytest.raises(TypeError):
        kvshard.fit(42, gpus=4)


def test_pins_and_limits(qwen: kvshard.Model) -> None:
    # D = 2 leaves T = 2: unsplit, and split 2 under three rules.
    with kvshard.fit(qwen, gpus=4, dp_size=2, **QWEN_DEVICE) as fit:
        assert [(r.tp_size, r.dp_size, r.layerwise_split_size) for r in fit] == [
            (2, 2, 1), (2, 2, 2), (2, 2, 2), (2, 2, 2)
        ]
    # No split: one row for each T, by sequences (56, 11 x 4 = 44, 33).
    with kvshard.fit(qwen, gpus=4, unsplit=True, **QWEN_DEVICE) as fit:
        assert [(r.tp_size, r.seqs_total) for r in fit] == [(2, 56), (1, 44), (4, 33)]
    # A deployment pins what an override set.
    with kvshard.load(QWEN35, **QWEN_DEVICE) as dep:
        dep.set("dp_size", 4)
        with dep.fit(4) as fit:
            assert [(r.tp_size, r.dp_size) for r in fit] == [(1, 4)]
        with dep.fit(4, dp_size=2) as fit:  # the argument wins
            assert {r.dp_size for r in fit} == {2}
    # Two stages allowed: (1, 2), (1, 4), (2, 2) come in, and nothing is left out.
    with kvshard.fit(qwen, gpus=4, max_pp_size=4, **QWEN_DEVICE) as fit:
        assert fit.limited_layouts == 0
        assert {r.pp_size for r in fit} == {1, 2, 4}


def test_rows_that_do_not_fit(qwen: kvshard.Model) -> None:
    # 20 GiB: usable 19,327,352,832 B, the reserve 1 GiB exactly. T = 2 needs
    # 18,554,484,288 + 1,073,741,824 = 19,628,226,112 B, and T = 1
    # 4,896,713,856 + 16,106,127,360 + 1 GiB more: neither fits. T = 4 keeps
    # 19,327,352,832 - 17,330,305,824 - 1,073,741,824 = 923,305,184 B: split
    # 2, floor(923,305,184 / 217,423,872) = 4 sequences.
    with kvshard.fit(qwen, gpus=4, device_memory="20GiB", context_length=32768,
                     **QWEN_WEIGHTS) as fit:
        assert (len(fit), len(fit.fitting)) == (12, 7)
        assert all(r.tp_size == 4 for r in fit.fitting)
        assert fit.recommendation.budget == 923_305_184
        assert fit.recommendation.seqs_total == 4
        short = fit.rows[7:]
        assert [(r.tp_size, r.layerwise_split_size) for r in short] == [
            (1, 1), (2, 1), (2, 2), (2, 2), (2, 2)
        ]
        assert [r.rank for r in short] == [8, 9, 10, 11, 12]
        for r in short:
            assert (r.fits, r.reason, r.no_sequence) == (False, Status.EDOESNOTFIT, False)
            assert (r.weights_per_rank, r.budget, r.num_blocks, r.pp_partition) == (
                None, None, None, None
            )
            assert r.to_dict()["reason"] == "does_not_fit"
        assert fit.flags("vllm") is None  # the best splits: vLLM cannot run it
        assert fit.to_dict()["recommendation"]["engine_reasons"] == {
            "xllm": "engine_split_unsupported",
            "vllm": "engine_split_unsupported",
            "sglang": "engine_split_unsupported",
            "trtllm": "engine_split_unsupported",
        }
        assert "5 layouts do not fit: 5 weights, 0 state" in fit.to_text()


# --- DeepSeek-V3.2 on 16 GPUs of 80 GiB -----------------------------------------------


def test_deepseek_splits_eight_ways() -> None:
    # T = 8, D = 2: 19,961,920,704 / 8 + 654,068,416,512 / 16 = 2,495,240,088 +
    # 40,879,276,032 = 43,374,516,120 B; usable 77,309,411,328 less the reserve
    # 85,899,345,920 / 20 = 4,294,967,296: 29,639,927,912 B. Split 8 over 61
    # layers: at most 8 owned and one from scratch, 9 x (656 + 132) = 7,092
    # B/token, 113,472 B a block: 261,209 blocks, 127 sequences of 2,048.
    # Of the 15 pairs (T, P) of 16 GPUs, 2 nodes of 8: T at most 8 and P at
    # most 2 leave (1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (2, 2), (4, 2),
    # (8, 2); 7 are left out.
    with kvshard.fit(DEEPSEEK, gpus=16, device_memory="80GiB", context_length=32768,
                     kv_cache_dtype="fp8", weights_total=674030337216,
                     weights_experts=654068416512) as fit:
        assert (len(fit), len(fit.fitting), fit.limited_layouts) == (44, 44, 7)
        best = fit.recommendation
        assert (best.tp_size, best.pp_size, best.dp_size) == (8, 1, 2)
        assert (best.layerwise_split_size, best.ownership) == (8, Ownership.ORDINAL)
        assert (best.weights_per_rank, best.budget) == (43_374_516_120, 29_639_927_912)
        assert (best.num_blocks, best.seqs_per_replica, best.seqs_total) == (261_209, 127, 254)
        assert best.pp_partition == (61,)
        assert fit.flags("kvshard") == [
            "--world_size=16",
            "--dp_size=2",
            "--enable_layerwise_split=true",
            "--layerwise_split_size=8",
            "--ownership=ordinal",
            "--max_seqs=127",
        ]
        for engine in ("vllm", "sglang"):
            assert fit.flags(engine) is None
            assert fit.flags(engine, env=True) is None
        assert fit.to_dict()["recommendation"]["flags"]["vllm"] is None


# --- errors ------------------------------------------------------------------------


def test_no_weights_is_a_weights_error(tmp_path: Path) -> None:
    # A config alone in its folder: no safetensors files to read.
    config = tmp_path / "config.json"
    shutil.copy(QWEN35, config)
    with kvshard.load_model(config) as model:
        with pytest.raises(kvshard.WeightsError) as info:
            kvshard.plan(model, world_size=4, device_memory="32GiB")
        assert info.value.code is Status.EWEIGHTS
        assert str(tmp_path) in info.value.message
        assert isinstance(info.value, kvshard.PlanError)
        with pytest.raises(kvshard.WeightsError):
            kvshard.fit(model, gpus=4, device_memory="32GiB")
    with pytest.raises(kvshard.WeightsError) as info:
        kvshard.fit(config, gpus=4, device_memory="32GiB")
    assert info.value.source == "python"  # the override that asked for the device


def test_a_model_that_does_not_fit() -> None:
    # Nemotron-3-Nano in bf16 on 2 GPUs of 24 GiB: the closest, T = 2, holds
    # 4,406,279,168 / 2 + 58,749,616,128 / 2 = 31,577,947,648 B a rank, and
    # 23,192,823,398 usable less 1,288,490,188 reserved = 21,904,333,210: it
    # is 9,673,614,438 B short.
    with pytest.raises(kvshard.DoesNotFitError) as info:
        kvshard.fit(NEMOTRON, gpus=2, device_memory="24GiB", context_length=32768,
                    weights_total=63155895296, weights_experts=58749616128)
    assert info.value.code is Status.EDOESNOTFIT
    assert "-9673614438" in info.value.message
    assert isinstance(info.value, kvshard.PlanError)


def test_the_fit_s_other_errors(qwen: kvshard.Model) -> None:
    with pytest.raises(kvshard.FitLimitsError) as info:
        kvshard.fit(qwen, gpus=3, max_tp_size=1, max_pp_size=1, pp_size=2, **QWEN_DEVICE)
    assert info.value.code is Status.EFITLIMITS
    with pytest.raises(kvshard.WeightsError) as weights:
        kvshard.fit(qwen, gpus=4, weights_per_rank=18554484288, **QWEN_DEVICE)
    assert "weights_per_rank" in weights.value.message
    with pytest.raises(kvshard.ConfigError) as missing:
        kvshard.fit(qwen, gpus=4, **QWEN_WEIGHTS)
    assert missing.value.code is Status.EMISSING
    with pytest.raises(kvshard.PlanError) as zero:
        kvshard.fit(qwen, gpus=0, **QWEN_DEVICE)
    assert zero.value.code is Status.EPARALLEL
    with pytest.raises(kvshard.PlanError) as profile:
        kvshard.fit(qwen, gpus=2, engine="xllm", max_pp_size=2, **QWEN_DEVICE)
    assert profile.value.code is Status.EPROFILE
    assert "pp_engine" in profile.value.message
    # Python's own checks, before any C call.
    with pytest.raises(ValueError):
        kvshard.fit(qwen, gpus=-1, **QWEN_DEVICE)
    with pytest.raises(TypeError):
        kvshard.fit(qwen, gpus="4", **QWEN_DEVICE)
    with pytest.raises(TypeError):
        kvshard.fit(qwen, gpus=4, unsplit=1, **QWEN_DEVICE)
    with pytest.raises(ValueError):
        kvshard.fit(qwen, gpus=4, max_tp_size=2**32, **QWEN_DEVICE)


def test_a_closed_fit_keeps_its_rows() -> None:
    fit = kvshard.fit(QWEN35, gpus=4, **QWEN_DEVICE)
    fit.close()
    assert fit.closed and fit.recommendation.seqs_total == 56
    with pytest.raises(ValueError, match="fit is closed"):
        fit.flags("vllm")
    with pytest.raises(ValueError):
        fit.to_json()


# --- plans from device inputs --------------------------------------------------------


def test_a_plan_from_the_device(qwen: kvshard.Model) -> None:
    with kvshard.plan(qwen, world_size=4, dp_size=2, max_seqs=28, **QWEN_DEVICE) as plan:
        for rank in range(2):
            mem = plan.rank_memory(rank)
            assert (mem.budget, mem.weights_bytes, mem.activation_reserve) == (
                10_651_293_325, 18_554_484_288, 1_717_986_918
            )
            assert mem.num_blocks == 59_508
        assert plan.capacity.num_blocks == 59_508
        assert not plan.warnings
    # memory_per_rank is the budget: the device is not read.
    with kvshard.plan(qwen, world_size=4, dp_size=2, memory_per_rank="20GiB",
                      **QWEN_DEVICE) as plan:
        assert plan.has_warning(WarningCode.DEVICE_MEMORY_IGNORED)
        mem = plan.rank_memory(0)
        assert (mem.budget, mem.weights_bytes, mem.activation_reserve) == (20 * GIB, None, None)
    # Without either, no budget.
    with kvshard.plan(qwen, world_size=4) as plan:
        assert plan.rank_memory(0).budget is None


def test_utilization_and_reserve(qwen: kvshard.Model) -> None:
    # 0.95 of 32 GiB: floor(32,641,751,449.6) = 32,641,751,449 B, less the
    # weights and a reserve of 2 GiB: 32,641,751,449 - 18,554,484,288 -
    # 2,147,483,648 = 11,939,783,513 B; (11,939,783,513 - 28 x 32,194,560) /
    # 163,840 = 67,372 blocks.
    opts = kvshard.Options(world_size=4, dp_size=2, max_seqs=28, memory_utilization=0.95,
                           activation_reserve="2GiB", **QWEN_DEVICE)
    assert (opts.memory_utilization, opts.activation_reserve) == (0.95, 2 * GIB)
    with kvshard.plan(qwen, opts) as plan:
        mem = plan.rank_memory(0)
        assert (mem.budget, mem.activation_reserve, mem.num_blocks) == (
            11_939_783_513, 2 * GIB, 67_372
        )
        back = plan.options
        assert (back.memory_utilization, back.activation_reserve) == (0.95, 2 * GIB)
    # The word "auto" and the constant are one value.
    opts.activation_reserve = "auto"
    assert opts.activation_reserve == kvshard.RESERVE_AUTO
    opts.set("activation_reserve", kvshard.RESERVE_AUTO)
    assert opts.activation_reserve == kvshard.RESERVE_AUTO
    # The same number as text is a number, and kvshard_options cannot hold
    # it apart from auto: refused, never read as auto.
    opts.activation_reserve = 1024
    with pytest.raises(kvshard.ConfigError) as info:
        opts.set("activation_reserve", "18446744073709551615")
    assert info.value.code is Status.ERANGE
    assert "expected a size from 0 to 18446744073709551614 bytes" in str(info.value)
    assert opts.activation_reserve == 1024
    # Read to the billionth, and no further.
    opts.memory_utilization = 0.9000000001
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.plan(qwen, opts)
    assert info.value.code is Status.ERANGE
    for bad in (0, 1.5, float("nan")):
        with pytest.raises(ValueError, match="memory_utilization"):
            kvshard.Options().set("memory_utilization", bad)
    with pytest.raises(TypeError):
        kvshard.Options(memory_utilization=True)
    assert kvshard.Options(memory_utilization=0).memory_utilization == 0.0  # unset


def test_weights_per_rank_in_every_form(qwen: kvshard.Model) -> None:
    # Two stages of 20 layers at T = 2, the weights given a stage each:
    # 30,923,764,531 - 18,253,611,008 - 1,717,986,918 = 10,952,166,605 B on
    # stage 0, and - 17,716,740,096 (16.5 GiB) = 11,489,037,517 B on stage 1.
    sizes = [17 * GIB, 16.5 * GIB]
    want = [18_253_611_008, 17_716_740_096]
    forms = [sizes, ("17GiB", "16.5GiB"), "17GiB,16.5GiB", [17 * GIB, "16.5GiB"]]
    for form in forms:
        opts = kvshard.Options(world_size=4, pp_size=2, device_memory="32GiB",
                               weights_per_rank=form)
        assert opts.weights_per_rank == want, form
        with kvshard.plan(qwen, opts) as plan:
            budgets = [plan.rank_memory(r).budget for r in (0, 2)]
            weights = [plan.rank_memory(r).weights_bytes for r in (0, 2)]
            assert budgets == [10_952_166_605, 11_489_037_517]
            assert weights == want
            assert plan.options.weights_per_rank == want
    # The Options keeps its array: copies, pickles and the struct agree.
    opts = kvshard.Options(weights_per_rank=sizes)
    for other in (opts.copy(), copy.deepcopy(opts), pickle.loads(pickle.dumps(opts))):
        assert other.weights_per_rank == want and other == opts
    # One size for every stage.
    one = kvshard.Options(world_size=4, pp_size=2, device_memory="32GiB", weights_per_rank=17e9)
    assert one.weights_per_rank == [17_000_000_000]
    with kvshard.plan(qwen, one) as plan:
        assert {plan.rank_memory(r).weights_bytes for r in range(4)} == {17_000_000_000}
    # Neither one nor one a stage.
    with pytest.raises(kvshard.WeightsError):
        kvshard.plan(qwen, world_size=4, pp_size=2, device_memory="32GiB",
                     weights_per_rank=[1, 2, 3])
    # Wrong values before any C call, and None for none.
    with pytest.raises(ValueError, match=r"weights_per_rank\[1\]"):
        kvshard.Options(weights_per_rank=[1, -2])
    with pytest.raises(TypeError):
        kvshard.Options(weights_per_rank=[True])
    with pytest.raises(ValueError):
        kvshard.Options(weights_per_rank=[1] * 257)
    with pytest.raises(ValueError, match="comma"):
        kvshard.Options(weights_per_rank=["1GiB,2GiB"])
    with pytest.raises(kvshard.ConfigError):
        kvshard.Options(weights_per_rank="17 gigs")
    cleared = kvshard.Options(weights_per_rank=sizes)
    cleared.weights_per_rank = None
    assert cleared.weights_per_rank is None and cleared == kvshard.Options()


def test_device_inputs_of_a_deployment() -> None:
    with kvshard.load(QWEN35, world_size=4, pp_size=2, device_memory="32GiB",
                      weights_per_rank=[17 * GIB, "16.5GiB"], expert_parallel=True,
                      gpus_per_node=4) as dep:
        o = dep.options
        assert o.weights_per_rank == [18_253_611_008, 17_716_740_096]
        assert (o.device_memory, o.expert_parallel) == (32 * GIB, True)
        # gpus_per_node is fit's input, which a deployment keeps beside its
        # options (kvshard_fit_options), not in them.
        assert o.gpus_per_node == 0
        with dep.plan() as plan:
            assert plan.rank_memory(2).budget == 11_489_037_517
            assert plan.options.weights_per_rank == [18_253_611_008, 17_716_740_096]
        dep.set("weights_per_rank", "16GiB")
        assert dep.options.weights_per_rank == [16 * GIB]
        with pytest.raises(ValueError):
            dep.set("weights_per_rank", [])


def test_the_new_codes_have_names() -> None:
    assert (Status.EWEIGHTS, Status.EDOESNOTFIT, Status.EFITLIMITS) == (-34, -35, -36)
    assert [s.short_name for s in (Status.OK, Status.EWEIGHTS, Status.EDOESNOTFIT,
                                   Status.EFITLIMITS, Status.EKVHEADS)] == [
        "ok", "weights", "does_not_fit", "fit_limits", "kv_heads"
    ]
    assert all(s.short_name != "unknown" for s in Status)
    assert [w.label for w in (WarningCode.DEVICE_MEMORY_IGNORED,
                              WarningCode.WEIGHTS_TOTAL_SIZE_MISMATCH,
                              WarningCode.WEIGHTS_UNKNOWN_TENSORS)] == [
        "device_memory_ignored", "weights_total_size_mismatch", "weights_unknown_tensors"
    ]
    assert (WarningCode.DEVICE_MEMORY_IGNORED, WarningCode.WEIGHTS_UNKNOWN_TENSORS) == (18, 20)
