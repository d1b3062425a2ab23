"""The vllm and sglang engine profiles through the binding: the figures each
engine logs (Plan.engine_figure and engine_figures), the capacity under
them, their warnings, the engines' own flags and settings, and the models
they refuse.

Every figure is worked out by hand from docs/engines.md's rules.

Nemotron-3-Nano-30B-A3B under vLLM 0.20.1rc1.dev91, one GPU, budget
B = 3,994,319,585 bytes, --max-model-len 256000, fp8 KV, float32 temporal
state: 6 attention, 23 Mamba2 and 23 no-cache layers; a1 = 2 x 2 KV heads x
128 x 1 byte = 512 B a token. The state page is conv 2 x (64 x 64 + 2 x 8 x
128) x 3 = 36,864 (bfloat16) plus temporal 4 x 64 x 64 x 128 = 2,097,152:
2,134,016 B. Prefix caching is off (a state model before 0.27.0), mode
none. The block is 16 x ceil(2,134,016 / (16 x 512)) = 16 x 261 = 4,176
tokens, the page 4,176 x 512 = 2,138,112 B, padded by 100 x 4,096 /
2,134,016 = 0.19%. 23 >= 1.5 x 6, so groups of 6: one attention group and
ceil(23 / 6) = 4 state groups with 4 x 6 - 23 = 1 padding layer, 5 groups.
floor(B / page) = 1,868 pages, floor(1,868 / 6) = 311 blocks of 6 pages
(12,828,672 B), 310 usable. A request of 256,000 tokens holds ceil(256,000
/ 4,176) = 62 attention blocks and one in each state group: 66; the
concurrency is 311 / 66 = 4.71 and the token line int(311 / 66 x 256,000) =
1,206,303.

Qwen3.5-9B under SGLang 0.5.11 on two GPUs, R = 10,153,205,760 bytes left
after the static fraction, --context-length 262144: 8 full-attention and 24
GDN layers, 2 of its 4 KV heads of 256 a rank. A token's cell is 2 x (256 +
256) x 8 x 2 = 16,384 B; a state slot conv 2 x (2 x 128 x 16 + 128 x 32) /
2 x 3 = 24,576 and temporal 4 x 16 x 128 x 128 = 1,048,576 a layer, over 24
layers 589,824 + 25,165,824 = 25,755,648 B. `auto` before 0.5.14 is
no_buffer, 3 slots a running request; K = floor(R x 0.9 / 1.9 / slot) =
186, 187 pool slots; the rest less 186 slots is 5,362,655,232 B, 327,310
tokens (K and V each 327,311 x 2 x 256 x 8 x 2 = 2,681,331,712 B). The
request limit: the estimate int(327,310 / 262,144 x 512) = 639 is raised
to 2,048, min(2,048, 327,310 // 2) = 2,048, capped at 186 // 3 = 62.
"""

from __future__ import annotations

import json
import math
import subprocess
from typing import Any, Dict, Iterator, List

import pytest
from conftest import EXAMPLES

import kvshard
from kvshard import Dtype, Engine, FigureType, Status, WarningCode

NANO = EXAMPLES / "models" / "nemotron_3_nano_30b_a3b.json"
NANO_VLLM = EXAMPLES / "nemotron_3_nano_30b_a3b_vllm.yaml"
QWEN9 = EXAMPLES / "models" / "qwen3_5_9b.json"
QWEN9_SGLANG = EXAMPLES / "qwen3_5_9b_sglang_tp2.yaml"

B = 3_994_319_585
PAGE = 4176 * 512
MAMBA_PAGE = 2 * (64 * 64 + 2 * 8 * 128) * 3 + 4 * 64 * 64 * 128

#: The engine's arguments of the Nemotron example, as vLLM is started with
#: them (argparse: '-' spellings, values as the next argument).
NANO_ARGS = [
    "--engine=vllm",
    "--engine-version", "0.20.1rc1.dev91",
    "--max-model-len", "256000",
    "--kv-cache-dtype", "fp8_e4m3",
    "--mamba-ssm-cache-dtype", "float32",
    "--max-num-seqs", "128",
    "--kv-cache-memory-bytes", "3994319585",
]


@pytest.fixture
def nano() -> Iterator[kvshard.Plan]:
    with kvshard.load(NANO_VLLM) as dep, dep.plan() as plan:
        yield plan


@pytest.fixture
def qwen9() -> Iterator[kvshard.Plan]:
    with kvshard.load(QWEN9_SGLANG) as dep, dep.plan() as plan:
        yield plan


# --- vllm -----------------------------------------------------------------------


def test_the_nemotron_vllm_example_by_hand(nano: kvshard.Plan) -> None:
    assert MAMBA_PAGE == 2_134_016 and 16 * math.ceil(MAMBA_PAGE / (16 * 512)) == 4176
    assert PAGE == 2_138_112 and B // PAGE == 1868 and 1868 // 6 == 311
    assert math.ceil(256_000 / 4176) + 4 == 66 and int(311 / 66 * 256_000) == 1_206_303
    assert nano.engine_figures() == {
        "name": "vllm",
        "version": "0.20.1rc1.dev91",
        "budget": B,
        "attention_block_size": 4176,
        "block_size_line": True,  # raised above the 16 asked for
        "page_bytes": PAGE,
        "mamba_page_bytes": MAMBA_PAGE,
        "mamba_padding_percent": 100 * (PAGE - MAMBA_PAGE) / MAMBA_PAGE,
        "mamba_cache_mode": "none",
        "mamba_block_size": 256_000,  # mode none: the whole length
        "prefix_caching": False,
        "state_dtypes": ["bfloat16", "float32"],
        "kv_cache_groups": 5,
        "group_size": 6,
        "padding_layers": 1,
        "bytes_per_block": 6 * PAGE,
        "num_gpu_blocks": 311,
        "usable_blocks": 310,
        "max_model_len": 256_000,
        "blocks_per_request": 66,
        "max_concurrency": 311 / 66,
        "gpu_kv_cache_tokens": 1_206_303,
        "max_num_seqs": 128,
        "pp_size": 1,
        "pp_partition": [52],
        "binding_stage": 0,
        "memory_check": "worker_groups",  # from 0.18.0: each worker, every group
        "memory_check_budget": B,
        "memory_check_need": 66 * 6 * PAGE,  # a request of 256,000 tokens
        # One stage: the whole model's 6 attention and 23 Mamba layers.
        "stages": [{
            "stage": 0, "layer_first": 0, "layer_count": 52, "cache_layers": 6 + 23,
            "group_size": 6, "bytes_per_block": 6 * PAGE, "budget": B,
            "num_gpu_blocks": 311, "gpu_kv_cache_tokens": 1_206_303,
            "max_concurrency": 311 / 66, "check_need": 66 * 6 * PAGE,
        }],
    }
    assert 6 * PAGE == 12_828_672
    assert f"{nano.engine_figure('mamba_padding_percent'):.2f}" == "0.19"
    assert f"{nano.engine_figure('max_concurrency'):.2f}" == "4.71"
    # The JSON plan's engine object, field for field and in its order.
    assert list(nano.engine_figures().items()) == list(nano.to_dict()["engine"].items())
    cap = nano.capacity
    assert (cap.engine, cap.block_size, cap.memory_per_rank, cap.max_seqs) == (
        Engine.VLLM, 4176, B, 128
    )
    assert (cap.num_blocks, cap.max_tokens, cap.usable_blocks, cap.state_slots) == (
        311, 1_206_303, 310, None  # state shares the pool: no slots of its own
    )
    assert nano.capacity_figure("budget") == B
    # One padded type, one warning: 1 layer in 23 is 4.35%.
    [(code, message)] = nano.warnings
    assert code is WarningCode.ENGINE_PADDING_LAYERS
    assert code.label == "engine_padding_layers"
    assert message.startswith("Add 1 padding layers, may waste at most 4.35% KV cache memory")


def test_the_nemotron_example_at_a_context_length() -> None:
    # At 32,768 tokens a request holds 8 + 4 = 12 blocks: floor(310 / 12) =
    # 25 sequences, below the 128 asked for.
    assert math.ceil(32768 / 4176) + 4 == 12 and 310 // 12 == 25
    with kvshard.load(NANO_VLLM, context_length=32768) as dep, dep.plan() as plan:
        cap = plan.capacity
        assert (cap.concurrency, cap.balanced_max_seqs) == (25, 25)
        assert plan.has_warning(WarningCode.MAX_SEQS_UNREACHABLE)
        # The engine's own line stays at --max-model-len.
        assert plan.engine_figure("blocks_per_request") == 66


def test_figures_by_name_and_their_types(nano: kvshard.Plan) -> None:
    assert nano.engine_figure("num_gpu_blocks") == 311
    assert type(nano.engine_figure("num_gpu_blocks")) is int
    assert nano.engine_figure("state_dtypes") == ["bfloat16", "float32"]  # a TEXT_LIST
    assert nano.engine_figure("prefix_caching") is False
    assert nano.engine_figure("version") == "0.20.1rc1.dev91"
    for call in (lambda: nano.engine_figure("num_blocks"), lambda: nano.engine_figure("")):
        with pytest.raises(kvshard.ConfigError) as info:
            call()
        assert info.value.code is Status.EUNKNOWNKEY
        assert info.value.message.startswith('the vllm profile has no engine figure "')
    with pytest.raises(TypeError):
        nano.engine_figure(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        nano.engine_figure("num\0blocks")


def test_the_kvshard_profile_has_no_engine_figures(seed_plan: kvshard.Plan) -> None:
    assert seed_plan.engine_figures() == {}
    assert seed_plan.to_dict()["engine"] is None
    with pytest.raises(kvshard.ConfigError) as info:
        seed_plan.engine_figure("name")
    assert info.value.message == 'the kvshard profile has no engine figure "name"'


def test_a_closed_plan_has_no_figures(nano: kvshard.Plan) -> None:
    nano.close()
    with pytest.raises(ValueError, match="closed"):
        nano.engine_figures()
    with pytest.raises(ValueError, match="closed"):
        nano.engine_figure("num_gpu_blocks")


def test_apply_args_passes_the_engine_s_flags_on_unchanged(cli: str) -> None:
    # The bare model config and vLLM's own command line give the example's
    # plan: the library reads the argparse forms, the binding passes them.
    with kvshard.load(NANO_VLLM) as dep, dep.plan() as plan:
        want = plan.engine_figures()
    with kvshard.load(NANO) as dep:
        dep.apply_args(NANO_ARGS)
        assert dep.options.engine is Engine.VLLM
        assert dep.options.max_seqs == 128 and dep.options.memory_per_rank == B
        assert dep.setting("max_model_len") == 256_000
        with dep.plan() as plan:
            assert plan.engine_figures() == want
            ours = plan.to_json()
    done = subprocess.run(
        [cli, "plan", str(NANO), *NANO_ARGS, "--format=json"],
        capture_output=True, text=True, check=True,
    )
    assert ours == done.stdout


def test_argparse_forms_under_vllm() -> None:
    with kvshard.load(NANO) as dep:
        # -tp with one dash, a value after the flag, '_' and '-' alike,
        # --no-name for false, and --engine settled first wherever it stands.
        dep.apply_args(["-tp", "1", "--max_model_len", "4096", "--enforce-eager",
                        "--engine", "vllm"])
        assert dep.setting("tensor_parallel_size") == 1
        assert (dep.setting("max_model_len"), dep.setting("enforce_eager")) == (4096, True)
        dep.apply_args(["--no-enforce-eager", "--max-model-len=8192"])
        assert (dep.setting("max_model_len"), dep.setting("enforce_eager")) == (8192, False)
        # Two spellings of one input with different values.
        for args in (["--max-num-seqs", "16", "--max_seqs=8"],
                     ["--enforce-eager", "--no-enforce-eager"]):
            with pytest.raises(kvshard.ReadError) as info:
                dep.apply_args(args)
            assert info.value.code is Status.EDUPKEY
        assert dep.options.max_seqs == 0  # unchanged on failure
        # A whole engine command line, with flags kvshard does not read.
        dep.apply_args(["--port", "8000", "--trust-remote-code", "--max-num-seqs", "16"],
                       ignore_unknown=True)
        assert dep.options.max_seqs == 16
        with pytest.raises(kvshard.ConfigError) as info:
            dep.apply_args(["--port", "8000"])
        assert info.value.code is Status.EUNKNOWNKEY


def test_engine_flags_are_keys_under_their_engine() -> None:
    with kvshard.load(NANO, engine="vllm") as dep:
        dep.set("max-num-seqs", 64)  # vLLM's name of max_seqs
        dep.set("kv_cache_memory_bytes", "3.72GiB")  # of memory_per_rank
        assert (dep.options.max_seqs, dep.options.memory_per_rank) == (64, B)  # 3.72 GiB, down
        dep.set("gpu-memory-utilization", 0.5)  # a setting, '-' spelled
        assert dep.setting("gpu_memory_utilization") == 0.5
    with kvshard.load(NANO) as dep, pytest.raises(kvshard.ConfigError) as info:
        dep.set("max-num-seqs", 64)  # kvshard's profile has no such flag
    assert info.value.code is Status.EUNKNOWNKEY


def test_a_dtype_member_is_sent_as_a_word_the_engine_reads() -> None:
    # vLLM's state dtypes have no "bf16": Dtype.BF16 goes as "bfloat16".
    # Temporal state in bfloat16: 2 x 64 x 64 x 128 = 1,048,576, the page
    # 36,864 + 1,048,576 = 1,085,440 B, the block 16 x ceil(1,085,440 /
    # 8,192) = 2,128 tokens.
    page = 36_864 + 2 * 64 * 64 * 128
    assert page == 1_085_440 and 16 * math.ceil(page / 8192) == 2128
    with kvshard.load(NANO_VLLM) as dep:
        dep.set("mamba-ssm-cache-dtype", Dtype.BF16)
        with dep.plan() as plan:
            assert plan.engine_figure("state_dtypes") == ["bfloat16", "bfloat16"]
            assert plan.engine_figure("mamba_page_bytes") == page
            assert plan.engine_figure("attention_block_size") == 2128
    # SGLang's KV dtypes have no "fp8": Dtype.FP8 goes as "fp8_e4m3", one
    # byte a value, so a token's cell is 2 x (256 + 256) x 8 x 1 = 8,192 B.
    with kvshard.load(QWEN9_SGLANG, kv_cache_dtype=Dtype.FP8) as dep, dep.plan() as plan:
        assert plan.engine_figure("cell_bytes") == 8192


def test_a_json_setting_reaches_the_plan() -> None:
    # ngram adds no attention layer; with s = 2 the conv state keeps 2 more
    # columns: 2 x 6,144 x 5 = 61,440, the state page 2,158,592 B, the block
    # 16 x ceil(2,158,592 / 8,192) = 4,224 tokens and the page 2,162,688 B.
    # floor(B / page) = 1,846 pages, 307 blocks; a request of 256,000
    # tokens holds ceil(256,000 / 4,224) = 61 + 4 x (1 + 2) = 73.
    state = 2 * (64 * 64 + 2 * 8 * 128) * (3 + 2) + 4 * 64 * 64 * 128
    block = 16 * math.ceil(state / 8192)
    assert (state, block, B // (block * 512) // 6) == (2_158_592, 4224, 307)
    assert math.ceil(256_000 / 4224) + 4 * 3 == 73
    spec = {"method": "ngram", "num_speculative_tokens": 2}
    with kvshard.load(NANO_VLLM, speculative_config=spec) as dep:
        assert dep.setting("speculative_config") == spec
        with dep.plan() as plan:
            f = plan.engine_figures()
            assert (f["mamba_page_bytes"], f["attention_block_size"]) == (2_158_592, 4224)
            assert (f["num_gpu_blocks"], f["blocks_per_request"]) == (307, 73)
            assert f["gpu_kv_cache_tokens"] == int(307 / 73 * 256_000) == 1_076_602
        # The same object as text.
        dep.set("speculative_config", json.dumps(spec))
        assert dep.setting("speculative_config") == spec


def test_a_text_setting_names_the_release() -> None:
    with kvshard.load(NANO_VLLM) as dep:
        dep.set("engine_version", "0.27.0")
        with dep.plan() as plan:
            # From 0.27.0 prefix caching is on for state models, mode align.
            assert (plan.engine_figure("prefix_caching"), plan.engine_figure("mamba_cache_mode")) == (
                True, "align"
            )
            assert plan.engine_figure("version") == "0.27.0"
        with pytest.raises(kvshard.ConfigError) as info:
            dep.set("engine_version", "0.20")
        assert info.value.code is Status.ERANGE and "engine_version_invalid" in info.value.message
        dep.set("engine_version", "0.8.5")
        with pytest.raises(kvshard.PlanError) as plan_info:
            dep.plan()
        assert plan_info.value.code is Status.EPROFILE
        assert "engine_version_unsupported" in plan_info.value.message
        with pytest.raises(TypeError, match="engine_version must be a str"):
            dep.set("engine_version", 0.27)


# --- sglang ---------------------------------------------------------------------


SLOT = 24 * (2 * (2 * 128 * 16 + 128 * 32) // 2 * 3 + 4 * 16 * 128 * 128)
CELL = 2 * (256 + 256) * 8 * 2
REST = 10_153_205_760


def sglang_pools(rest_bytes: float, ratio: float, per_request: int, pad: int) -> Dict[str, int]:
    """The state and token pools by docs/engines.md's formulas, in doubles
    as the engine works them: K from mb = rest x r / (1 + r), the rest less
    the state slots charged, tokens of a cell each, and the request limit
    without --max-running-requests (min(estimate, tokens / 2) from 0.5.17,
    the estimate before it, so with pad 0), at most K // per_request."""
    rest = rest_bytes / 2**30
    mb = rest * ratio / (1 + ratio) * 2**30
    k = math.floor(mb / SLOT) if pad == 0 else math.floor((mb - SLOT) / SLOT)
    rest -= (k + pad) * SLOT / 2**30
    available = int(rest * 2**30)
    tokens = available // CELL
    estimate = max(2048, min(4096, int(tokens / 262_144 * 512)))
    limit = min(estimate, tokens // 2) if pad else estimate
    return {"K": k, "available": available, "tokens": tokens,
            "requests": min(limit, k // per_request)}


def test_the_qwen3_5_9b_sglang_example_by_hand(qwen9: kvshard.Plan) -> None:
    assert (SLOT, CELL) == (25_755_648, 16_384)
    pools = sglang_pools(REST, 0.9, 3, 0)
    assert pools == {"K": 186, "available": 5_362_655_232, "tokens": 327_310, "requests": 62}
    assert qwen9.engine_figures() == {
        "name": "sglang",
        "version": "0.5.11",
        "budget": REST,
        "mamba_radix_cache_strategy": "no_buffer",
        "mamba_ratio": 3,
        "max_mamba_cache_size": 186,
        "mamba_pool_slots": 187,
        "mamba_bytes_per_slot": SLOT,
        "conv_state_bytes": 187 * 24 * 24_576,
        "ssm_state_bytes": 187 * 24 * 1_048_576,
        "ssm_dtype": "float32",
        "cell_bytes": CELL,
        "page_size": 1,
        "max_total_num_tokens": 327_310,
        "k_cache_bytes": 327_311 * 2 * 256 * 8 * 2,
        "v_cache_bytes": 327_311 * 2 * 256 * 8 * 2,
        "kv_cache_bytes": None,  # an MLA model's
        "max_running_requests": 62,
        "context_len": 262_144,
        "layer_split": False,
        "split_layers_per_rank": None,
        "kv_cache_dtype": "bfloat16",
        "indexer_bytes": None,  # a DSA model's
        "pp_size": 1,
        "pp_partition": [32],
        # One stage: its 8 full-attention layers' cell and pools.
        "stages": [{
            "stage": 0, "layer_first": 0, "layer_count": 32, "kv_layers": 8,
            "cell_bytes": CELL, "max_total_num_tokens": 327_310,
            "k_cache_bytes": 327_311 * 2 * 256 * 8 * 2,
            "v_cache_bytes": 327_311 * 2 * 256 * 8 * 2, "kv_cache_bytes": None,
        }],
    }
    assert 187 * 24 * 24_576 == 110_297_088 and 187 * 24 * 1_048_576 == 4_706_009_088
    assert 327_311 * 2 * 256 * 8 * 2 == 2_681_331_712
    assert qwen9.engine_figures() == qwen9.to_dict()["engine"]
    cap = qwen9.capacity
    assert (cap.engine, cap.block_size, cap.num_blocks, cap.max_tokens, cap.max_seqs) == (
        Engine.SGLANG, 1, 327_310, 327_310, 62
    )
    assert (cap.state_slots, cap.usable_state_slots, cap.usable_blocks) == (187, 186, None)
    # At 262,144 tokens: min(62, 327,310 // 262,144) = 1 sequence.
    assert (cap.context_length, cap.concurrency, cap.balanced_max_seqs) == (262_144, 1, None)
    codes = [code for code, _ in qwen9.warnings]
    assert codes == [WarningCode.MAX_SEQS_UNREACHABLE,
                     WarningCode.ENGINE_MAX_RUNNING_REQUESTS_CAPPED]
    assert qwen9.warnings[1][1].startswith("max_running_requests 2048 is capped at 62")
    assert codes[1].label == "engine_max_running_requests_capped"


def test_sglang_0_5_21_keeps_100_mib_and_buffers_more() -> None:
    # From 0.5.17 a multimodal model keeps 100 MiB and the pool charges K + 1
    # slots; from 0.5.14 `auto` is extra_buffer for Qwen3.5 with the
    # overlap schedule on, 3 + 2 = 5 slots a running request.
    pools = sglang_pools(REST - 100 * 2**20, 0.9, 5, 1)
    assert pools == {"K": 183, "available": 5_309_308_928, "tokens": 324_054, "requests": 36}
    with kvshard.load(QWEN9_SGLANG, engine_version="0.5.21", multimodal=True) as dep:
        with dep.plan() as plan:
            f = plan.engine_figures()
    assert (f["mamba_radix_cache_strategy"], f["mamba_ratio"]) == ("extra_buffer", 5)
    assert (f["max_mamba_cache_size"], f["mamba_pool_slots"]) == (183, 184)
    assert (f["max_total_num_tokens"], f["max_running_requests"]) == (324_054, 36)


def test_a_decimal_setting_reaches_the_plan() -> None:
    # --mamba-full-memory-ratio 1.9: mb = R x 1.9 / 2.9, K = 258, the rest
    # 3,508,248,576 B, 214,126 tokens; the request limit 2,048 capped at
    # 258 // 3 = 86.
    pools = sglang_pools(REST, 1.9, 3, 0)
    assert pools == {"K": 258, "available": 3_508_248_576, "tokens": 214_126, "requests": 86}
    for given in (1.9, "1.9"):
        with kvshard.load(QWEN9_SGLANG, mamba_full_memory_ratio=given) as dep:
            assert dep.setting("mamba_full_memory_ratio") == 1.9
            with dep.plan() as plan:
                f = plan.engine_figures()
        assert (f["max_mamba_cache_size"], f["max_total_num_tokens"]) == (258, 214_126)
        assert f["max_running_requests"] == 86
    with pytest.raises(ValueError, match="mamba_full_memory_ratio must be above 0 and at most 100"):
        kvshard.load(QWEN9_SGLANG, mamba_full_memory_ratio=101)


def test_sglang_flag_names() -> None:
    with kvshard.load(QWEN9) as dep:
        dep.apply_args(["--engine", "sglang", "--engine-version", "0.5.11", "--tp", "2",
                        "--mem-fraction-static", "0.8", "--context-length", "262144",
                        "--memory_per_rank=10153205760"])
        with dep.plan() as plan:
            assert plan.engine_figure("max_total_num_tokens") == 327_310
        dep.set("page-size", 16)  # SGLang's name of block_size
        assert dep.options.block_size == 16
        with pytest.raises(ValueError, match="page-size must be an integer from 1"):
            dep.set("page-size", 0)


# --- what the profiles refuse -------------------------------------------------------

REFUSED: List[Any] = [
    ("deepseek_v4_flash", 8, "vllm", "compressed layers (43 of 43)"),
    ("deepseek_v4_flash", 8, "sglang", "compressed layers (43 of 43)"),
    ("gemma_4_e2b", 1, "vllm", "shared_kv layers (20 of 35)"),
    ("llama4_scout", 8, "vllm", "chunked_attention layers (36 of 48)"),
    ("llama4_scout", 8, "sglang", "chunked_attention layers (36 of 48)"),
]


@pytest.mark.parametrize("model, world, engine, kinds", REFUSED,
                         ids=[f"{m}-{e}" for m, _, e, _ in REFUSED])
def test_the_new_layer_kinds_are_refused_by_name(
    model: str, world: int, engine: str, kinds: str
) -> None:
    # DeepSeek-V4-Flash: 43 compressed layers. Gemma 4 E2B: 35 layers, the
    # last 20 read an earlier layer's KV. Llama 4 Scout: 48 layers, every
    # fourth full attention, 36 chunked.
    want = f"{engine} profile: engine_unsupported: {kinds} are not covered yet"
    path = EXAMPLES / "models" / f"{model}.json"
    with kvshard.load(path, engine=engine, world_size=world) as dep:
        with pytest.raises(kvshard.PlanError) as info:
            dep.plan()
    assert (info.value.code, info.value.message) == (Status.EPROFILE, want)
    assert info.value.source == "python"  # the engine was an override from here
    with kvshard.load_model(path) as m, pytest.raises(kvshard.PlanError) as info:
        kvshard.plan(m, engine=Engine[engine.upper()], world_size=world)
    assert info.value.message == want


def test_every_figure_type_reads_as_python() -> None:
    from kvshard import _lib
    from kvshard._objects import _figure_value

    import ctypes

    f = _lib.sized(_lib.CFigure)
    words = ctypes.create_string_buffer(b"bfloat16\0float32\0")
    f.type, f.uint_value = FigureType.TEXT_LIST, 2
    ctypes.c_void_p.from_buffer(f, _lib.CFigure.text_value.offset).value = ctypes.addressof(words)
    assert _figure_value(f, "state_dtypes") == ["bfloat16", "float32"]
    f.uint_value = 0
    assert _figure_value(f, "state_dtypes") == []
    f.uint_value = 1
    ctypes.c_void_p.from_buffer(f, _lib.CFigure.text_value.offset).value = None
    with pytest.raises(kvshard.InvalidArgumentError, match="holds 1 texts"):
        _figure_value(f, "state_dtypes")
