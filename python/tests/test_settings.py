"""Settings: the engine profiles' own inputs, by key, beside the options.

They are not fields of kvshard_options: Options keeps a kvshard_settings
beside its struct, a deployment owns its own, and a plan copies what it
reads. Each test reads the value back from the library (the settings
object's kvshard_settings_get, or the figures the value gives), never from
a copy the binding keeps.

The xllm worked example (Qwen3.5-35B-A3B, TP 4): the state of one sequence
is lin = 16097280 bytes and a block of 128 tokens blk = 1310720 bytes. With
the prefix cache on, the state slots are trunc(B x 0.9/1.9 / lin), with it
off max_seqs + 2 = 202 (two of them padding); the blocks are
(B - slots x lin) // blk.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import Engine, Status, WarningCode

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
LIN = 16097280
BLK = 128 * 10240
GIB20 = 20 * 2**30
XLLM: Dict[str, Any] = dict(world_size=4, engine="xllm", memory_per_rank="20GiB")


@pytest.fixture
def model() -> Iterator[kvshard.Model]:
    with kvshard.load_model(QWEN35) as m:
        yield m


def test_options_keep_settings_beside_the_struct() -> None:
    o = kvshard.Options(world_size=4, enable_prefix_cache=False, max_cache_size="1GiB")
    assert o._settings is not None  # one settings object, made for the first setting
    assert (o.enable_prefix_cache, o.max_cache_size) == (False, 2**30)
    assert o.is_set("enable_prefix_cache") and not o.is_set("device_memory_free")
    assert o.setting("max_memory_utilization") == 0.8  # the library's default
    # The struct holds no pointer of its own; a call gets one while it runs.
    assert o._c.settings is None
    # Settings are in to_dict, after the fields, in the library's order.
    d = o.to_dict()
    assert list(d)[len(kvshard.Options.FIELDS):] == [s.key for s in kvshard.settings()]
    assert repr(o) == "Options(world_size=4, enable_prefix_cache=False, max_cache_size=1073741824)"
    # Set to its default, a setting compares equal to one never set.
    assert kvshard.Options(max_memory_utilization=0.8) == kvshard.Options()
    assert kvshard.Options(max_memory_utilization=0.5) != kvshard.Options()


def test_an_options_without_settings_makes_no_settings_object() -> None:
    o = kvshard.Options(world_size=2)
    assert o._settings is None
    assert o.max_memory_utilization == 0.8 and not o.is_set("max_memory_utilization")


def test_copies_are_independent() -> None:
    a = kvshard.Options(max_memory_utilization=0.5)
    b = a.copy()
    b.max_memory_utilization = 0.25
    assert (a.max_memory_utilization, b.max_memory_utilization) == (0.5, 0.25)
    assert a._settings is not b._settings


def test_copy_deepcopy_and_pickle_give_settings_of_their_own() -> None:
    import copy
    import pickle

    o = kvshard.Options(world_size=4, max_memory_utilization=1e-5, enable_prefix_cache=True)
    for other in (copy.copy(o), copy.deepcopy(o), pickle.loads(pickle.dumps(o))):
        assert other == o and other.world_size == 4
        assert other.max_memory_utilization == 1e-5
        # What was set stays set, even at its default; nothing else is.
        assert other.is_set("enable_prefix_cache") and not other.is_set("max_cache_size")
        assert other._settings is not o._settings
        other.max_memory_utilization = 0.5
        assert o.max_memory_utilization == 1e-5
    plain = pickle.loads(pickle.dumps(kvshard.Options(block_size=0, max_seqs=64)))
    assert plain._settings is None and plain == kvshard.Options(max_seqs=64)


def test_unknown_names() -> None:
    with pytest.raises(TypeError, match="unknown option 'max_memory_utilisation'"):
        kvshard.Options(max_memory_utilisation=0.5)
    o = kvshard.Options()
    with pytest.raises(AttributeError):
        o.max_memory_utilisation = 0.5  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        o.max_memory_utilisation  # type: ignore[attr-defined]
    assert not hasattr(o, "no_such_setting")
    with pytest.raises(AttributeError, match="is no setting"):
        o.setting("world_size")
    with pytest.raises(kvshard.ConfigError) as info:
        o.set("max_memory_utilisation", "0.5")
    assert info.value.code is Status.EUNKNOWNKEY


def test_a_setting_as_text_is_the_library_s_to_read() -> None:
    o = kvshard.Options(enable_prefix_cache="no", device_memory_free="3GiB")
    assert (o.enable_prefix_cache, o.device_memory_free) == (False, 3 * 2**30)
    before = o.copy()
    with pytest.raises(kvshard.ConfigError) as info:
        o.set("enable_prefix_cache", "maybe", origin="engine flags")
    assert (info.value.code, info.value.source) == (Status.ETYPE, "engine flags")
    assert "enable_prefix_cache" in info.value.message
    assert o == before  # unchanged on failure


def test_settings_reach_the_plan(model: kvshard.Model) -> None:
    # Prefix cache off: slots = max_seqs + 2 = 202; blocks =
    # (21474836480 - 202 x 16097280) // 1310720 = 13903.
    assert (GIB20 - 202 * LIN) // BLK == 13903
    with kvshard.plan(model, enable_prefix_cache=False, **XLLM) as plan:
        cap = plan.capacity
        assert (cap.state_slots, cap.num_blocks) == (202, 13903)
        assert (cap.usable_blocks, cap.usable_state_slots) == (13902, 201)
        assert plan.options.enable_prefix_cache is False
    with kvshard.load(QWEN35, enable_prefix_cache=False, **XLLM) as dep, dep.plan() as plan:
        assert (plan.capacity.state_slots, plan.capacity.num_blocks) == (202, 13903)
    # Slots asked for: 100 and the two padding slots, (B - 102 lin) // blk.
    with kvshard.plan(model, max_linear_state_cache_slots=100, **XLLM) as plan:
        assert plan.capacity.state_slots == 102
        assert plan.capacity.num_blocks == (GIB20 - 102 * LIN) // BLK == 15131


def test_the_device_figures_give_the_budget(model: kvshard.Model) -> None:
    # No memory_per_rank: B = free - trunc(total x (1 - 0.8)) in doubles,
    # capped by max_cache_size. 1 - 0.8 is 0.19999999999999996, so 80 GiB
    # total keep back trunc(17179869183.999996) = 17179869183 bytes, one
    # byte short of 16 GiB; 60 GiB free leave 47244640257 bytes.
    device = dict(world_size=4, engine="xllm", device_memory_total="80GiB",
                  device_memory_free="60GiB")
    with kvshard.plan(model, **device) as plan:
        assert plan.capacity_figure("budget") == 60 * 2**30 - 17179869183 == 47244640257
        assert plan.capacity.memory_per_rank == 47244640257
    with kvshard.plan(model, max_cache_size="30GiB", **device) as plan:
        assert plan.capacity_figure("budget") == 30 * 2**30


def test_a_deployment_owns_its_settings() -> None:
    text = (
        "model: models/qwen3_5_35b_a3b.json\n"
        "parallel: {world_size: 4}\n"
        "cache: {engine: xllm, memory_per_rank: 20GiB, enable_prefix_cache: false}\n"
    )
    with kvshard.loads(text, base_dir=EXAMPLES) as dep:
        assert dep.setting("enable_prefix_cache") is False  # from the file
        opts = dep.options
        assert opts.enable_prefix_cache is False
        opts.enable_prefix_cache = True  # a copy: the deployment keeps its own
        assert dep.setting("enable_prefix_cache") is False
        dep.set("enable_prefix_cache", True)
        assert dep.setting("enable_prefix_cache") is True
        dep.apply_args(["--noenable_prefix_cache"])
        assert dep.setting("enable_prefix_cache") is False
        with dep.plan() as plan:
            assert plan.capacity.state_slots == 202
        with pytest.raises(kvshard.ConfigError) as info:
            dep.setting("world_size")
        assert info.value.code is Status.EUNKNOWNKEY


def test_a_plan_keeps_the_settings_it_was_made_from(model: kvshard.Model) -> None:
    opts = kvshard.Options(max_memory_utilization=0.5, **XLLM)
    plan = kvshard.plan(model, opts)
    opts.max_memory_utilization = 0.25  # after the plan: it is not changed
    assert plan.options.max_memory_utilization == 0.5
    with kvshard.load(QWEN35, max_memory_utilization=0.5, **XLLM) as dep:
        from_dep = dep.plan()
        dep.set("max_memory_utilization", 0.75)
        assert from_dep.options.max_memory_utilization == 0.5
    # The plan owns its copy, freed with it (test_close_threads watches the
    # free), and reached only through the plan's gate.
    assert plan._settings_ptr and from_dep._settings_ptr
    plan.close()
    with pytest.raises(ValueError, match="plan is closed"):
        plan.options
    from_dep.close()
    with kvshard.plan(model, world_size=4) as bare:
        assert bare._settings_ptr == 0  # no settings given: none kept
        assert bare.options.max_memory_utilization == 0.8


def test_deployment_create_copies_the_settings() -> None:
    described = kvshard.create_model(4, num_attention_heads=4, num_kv_heads=2, head_dim=64)
    opts = kvshard.Options(world_size=2, engine=Engine.XLLM, max_cache_size=12345)
    with kvshard.Deployment.create(described, opts) as dep:
        opts.max_cache_size = 1
        assert dep.setting("max_cache_size") == 12345


# --- the warning ------------------------------------------------------------------


def test_settings_another_profile_reads_are_named_when_they_differ() -> None:
    # The seed plans under the kvshard profile, which reads no setting.
    one = "max_memory_utilization applies only under engine xllm: the kvshard profile ignores it"
    two = (
        "enable_prefix_cache, max_memory_utilization apply only under engine xllm: the kvshard "
        "profile ignores them"
    )
    cases = [
        ({"max_memory_utilization": 0.5}, [one]),
        # In the order of the profiles' tables, not the order given.
        ({"max_memory_utilization": 0.5, "enable_prefix_cache": False}, [two]),
        # At their defaults they change nothing, so nothing is said.
        ({"max_memory_utilization": 0.8, "enable_prefix_cache": True, "max_cache_size": 0}, []),
    ]
    for overrides, messages in cases:
        with kvshard.load(SEED, **overrides) as dep, dep.plan() as plan:
            assert plan.warnings == [(WarningCode.PROFILE_INPUTS_IGNORED, m) for m in messages]
            assert plan.has_warning(WarningCode.PROFILE_INPUTS_IGNORED) == bool(messages)
            with dep.compare() as cmp:
                flagged = WarningCode.PROFILE_INPUTS_IGNORED in cmp.recommended.warnings
                assert flagged == bool(messages)
    # Under the profile that reads them, they are inputs, not a warning.
    with kvshard.load(SEED, engine="xllm", block_size=128, max_memory_utilization=0.5,
                      enable_prefix_cache=False) as dep, dep.plan() as plan:
        assert not plan.has_warning(WarningCode.PROFILE_INPUTS_IGNORED)


def test_the_warning_from_a_model_and_options(model: kvshard.Model) -> None:
    with kvshard.plan(model, world_size=4, device_memory_free="1GiB") as plan:
        assert plan.warnings == [
            (
                WarningCode.PROFILE_INPUTS_IGNORED,
                # Every engine profile but kvshard's reads the free memory.
                "device_memory_free applies only under engines xllm, vllm and sglang: the "
                "kvshard profile ignores it",
            )
        ]
