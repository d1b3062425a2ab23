"""Options: defaults, native values, text parsed by the library, and the
options a deployment and a plan report."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import Dtype, Engine, Ownership

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"


def test_defaults_are_the_c_init_values() -> None:
    d = kvshard.Options().to_dict()
    fields = {k: d[k] for k in kvshard.Options.FIELDS}
    assert fields == {
        "world_size": 1,
        "dp_size": 1,
        "cp_size": 1,
        "enable_layerwise_split": False,
        "layerwise_split_size": 1,
        "ownership": Ownership.DEFAULT,
        "is_draft": False,
        "engine": Engine.KVSHARD,
        "kv_cache_dtype": Dtype.AUTO,
        "state_dtype": Dtype.AUTO,
        "block_size": 0,
        "memory_per_rank": 0,
        "max_seqs": 0,
        "num_speculative_tokens": 0,
        "scratch_layers": 1,
        "context_length": 0,
        # One stage, cut by vLLM's rule, the ranks numbered as the profile
        # numbers them.
        "pp_size": 1,
        "pp_partition_rule": kvshard.PpRule.DEFAULT,
        "pp_partition": None,
        "rank_layout": kvshard.RankLayout.DEFAULT,
        "sweep_pp": False,
        # No device inputs: the reserve left to the profile.
        "device_memory": 0,
        "memory_utilization": 0.0,
        "activation_reserve": kvshard.RESERVE_AUTO,
        "weights_per_rank": None,
        "weights_total": 0,
        "weights_experts": 0,
        "expert_parallel": False,
        "gpus_per_node": 0,
    }
    # Then every setting at its default, in the library's order.
    rest = {k: v for k, v in d.items() if k not in fields}
    assert rest == {row.key: row.default for row in kvshard.settings()}
    assert {k: rest[k] for k in ("enable_prefix_cache", "max_memory_utilization",
                                 "max_cache_size", "max_num_batched_tokens",
                                 "mamba_full_memory_ratio", "enforce_eager")} == {
        "enable_prefix_cache": True,
        "max_memory_utilization": 0.8,
        "max_cache_size": 0,
        "max_num_batched_tokens": 8192,
        "mamba_full_memory_ratio": 0.9,
        "enforce_eager": False,
    }
    # A default the profile works out reads as the library's words for it.
    assert (rest["tensor_parallel_size"], rest["tp_size"], rest["multimodal"]) == (
        "world_size / dp_size",
        "world_size",
        "whether the config has vision_config",
    )


def test_native_and_text_values() -> None:
    o = kvshard.Options(
        world_size=8,
        enable_layerwise_split=True,
        layerwise_split_size="2",
        memory_per_rank="20GiB",
        ownership="contiguous",
        kv_cache_dtype="fp8",
        state_dtype=Dtype.FP32,
        engine=Engine.XLLM,
        enable_prefix_cache="no",
        max_memory_utilization=0.9,
        device_memory_total=2**40,
    )
    assert o.world_size == 8 and o.layerwise_split_size == 2
    assert o.memory_per_rank == 21474836480
    assert o.ownership is Ownership.CONTIGUOUS
    assert o.kv_cache_dtype is Dtype.FP8 and o.state_dtype is Dtype.FP32
    assert o.engine is Engine.XLLM
    assert o.enable_prefix_cache is False
    assert o.max_memory_utilization == 0.9
    assert o.device_memory_total == 2**40


def test_set_goes_through_the_library() -> None:
    o = kvshard.Options()
    o.set("memory_per_rank", "512MiB")
    o.set("world_size", 4)
    o.set("enable_layerwise_split", True)
    o.set("kv_cache_dtype", Dtype.BF16)
    o.set("ownership", Ownership.GLOBAL)
    assert (o.memory_per_rank, o.world_size) == (512 * 2**20, 4)
    assert o.enable_layerwise_split is True
    assert o.kv_cache_dtype is Dtype.BF16 and o.ownership is Ownership.GLOBAL
    before = o.copy()
    with pytest.raises(kvshard.ConfigError):
        o.set("world_size", "four")
    assert o == before  # unchanged on failure


def test_copy_equality_and_slots() -> None:
    a = kvshard.Options(world_size=4)
    b = a.copy()
    assert a == b
    b.world_size = 8
    assert a != b and a.world_size == 4
    with pytest.raises(AttributeError):
        a.wrold_size = 4  # type: ignore[attr-defined]
    assert repr(kvshard.Options(world_size=4)) == "Options(world_size=4)"


def test_plan_settles_the_profile_defaults() -> None:
    with kvshard.load_model(QWEN35) as model:
        with kvshard.plan(model, world_size=4) as plan:
            o = plan.options
            assert (o.block_size, o.max_seqs, o.ownership) == (16, 256, Ownership.ORDINAL)
        with kvshard.plan(model, world_size=4, engine="xllm", memory_per_rank="20GiB") as plan:
            o = plan.options
            assert (o.block_size, o.max_seqs, o.ownership) == (128, 200, Ownership.GLOBAL)


def test_xllm_profile_worked_example() -> None:
    # Qwen3.5-35B-A3B at TP 4 under the xllm profile, budget 20 GiB, defaults
    # (block 128, max_seqs 200, prefix cache on): lin = 16097280 bytes,
    # blk = 128 x 10240 = 1310720; slots = trunc(B * (0.9 / 1.9) / lin) = 631
    # (bound 1233); blocks = (B - 631 * lin) // blk = 8634.
    with kvshard.load(QWEN35, world_size=4, engine="xllm", memory_per_rank="20GiB") as dep:
        with dep.plan() as plan:
            cap = plan.capacity
            assert cap.engine is Engine.XLLM
            assert (cap.state_slots, cap.num_blocks, cap.max_tokens) == (631, 8634, 8634 * 128)
            assert (cap.usable_blocks, cap.usable_state_slots) == (8633, 630)
            assert cap.balanced_max_seqs is None


def test_plan_with_options_and_fields() -> None:
    base = kvshard.Options(world_size=4, memory_per_rank="20GiB", block_size=16, max_seqs=128)
    with kvshard.load_model(QWEN35) as model:
        with kvshard.plan(model, base, enable_layerwise_split=True, layerwise_split_size=2) as plan:
            assert plan.rank_layers(0) == [3, 11, 19, 27, 35]
            assert plan.capacity.num_blocks == 197493
    assert base.enable_layerwise_split is False  # the caller's options are not changed


def test_deployment_options_and_overrides() -> None:
    with kvshard.load(SEED) as dep:
        o = dep.options
        assert (o.world_size, o.layerwise_split_size, o.max_seqs) == (4, 2, 128)
        assert o.memory_per_rank == 20 * 2**30
        dep.set("max_seqs", 98)
        dep.apply_args(["--context_length=32768", "--noenable_layerwise_split"])
        o = dep.options
        assert (o.max_seqs, o.context_length, o.enable_layerwise_split) == (98, 32768, False)
        with dep.plan() as plan:
            assert plan.effective_split_size == 1
    with kvshard.load(SEED, max_seqs="98", enable_layerwise_split=False) as dep:
        assert dep.options.max_seqs == 98


def test_loads_takes_text_and_a_base_dir() -> None:
    text = (
        "model: models/qwen3_5_35b_a3b.json\n"
        "parallel: {world_size: 4, enable_layerwise_split: true, layerwise_split_size: 2}\n"
        "cache: {memory_per_rank: 20GiB, max_seqs: 128}\n"
    )
    with kvshard.loads(text, base_dir=EXAMPLES, name="inline.yaml") as dep, dep.plan() as plan:
        assert plan.capacity.num_blocks == 197493
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.loads(text.replace("max_seqs", "max_seq"), base_dir=EXAMPLES, name="inline.yaml")
    assert (info.value.source, info.value.line) == ("inline.yaml", 3)
