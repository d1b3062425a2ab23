"""Handles: freed once, deterministically; borrowed objects follow their
owner; ownership passes to a deployment; concurrent readers."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
from conftest import EXAMPLES, SEED

import kvshard
from kvshard import LayerKind


def test_with_closes_and_garbage_collection_frees() -> None:
    with kvshard.load(SEED) as dep:
        plan = dep.plan()
    assert dep.closed
    # A plan does not depend on its deployment.
    assert plan.rank_layers(1) == [7, 15, 23, 31, 39]
    finalizer = plan._finalizer
    assert finalizer is not None and finalizer.alive
    del plan
    assert not finalizer.alive  # freed as soon as the last reference went


def test_plan_outlives_its_model() -> None:
    model = kvshard.load_model(EXAMPLES / "models" / "qwen3_5_35b_a3b.json")
    plan = kvshard.plan(model, world_size=4)
    model.close()
    assert plan.num_layers == 40
    with pytest.raises(ValueError, match="closed"):
        model.num_layers
    plan.close()


def test_borrowed_model_closes_with_its_deployment() -> None:
    dep = kvshard.load(SEED)
    model = dep.model
    assert model.num_layers == 40 and model.model_type == "qwen3_5_moe"
    assert model._finalizer is None  # borrowed: never freed from Python
    model.close()  # only forgets the pointer
    assert dep.model.num_layers == 40
    other = dep.model
    dep.close()
    assert other.closed
    with pytest.raises(ValueError, match="closed"):
        other.layer_kind(0)


def test_deployment_takes_the_model() -> None:
    model = kvshard.create_model(
        4,
        [LayerKind.LINEAR_ATTENTION] * 3 + [LayerKind.FULL_ATTENTION],
        model_type="described",
        num_attention_heads=4,
        num_kv_heads=2,
        head_dim=64,
        state_kind=kvshard.StateKind.GDN,
        state_heads=8,
        state_key_heads=4,
        state_head_dim=32,
        state_value_dim=32,
        conv_kernel=4,
    )
    opts = kvshard.Options(world_size=2)
    dep = kvshard.Deployment.create(model, opts)
    assert model.closed  # the deployment owns it now
    with dep, dep.plan() as plan:
        assert dep.model.model_type == "described"
        # The GDN figures of test_state_kinds: 1536 + 16384 per layer.
        assert plan.layer_storage(0, 0).state_bytes_per_seq == 17920
        assert plan.rank_layers(1) == [3]


def test_create_model_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="num_layers"):
        kvshard.create_model(4, [LayerKind.FULL_ATTENTION] * 3)
    with pytest.raises(TypeError):
        kvshard.create_model(4, num_heads=4)  # not a description field
    with pytest.raises(kvshard.ConfigError) as info:
        kvshard.create_model(4, head_dim=64)  # no heads
    assert info.value.code is kvshard.Status.EMISSING


def test_a_failed_create_leaves_the_model_alone() -> None:
    model = kvshard.create_model(4, num_attention_heads=4, num_kv_heads=2, head_dim=64)
    with pytest.raises(ValueError, match="world_size"):
        kvshard.Deployment.create(model, kvshard.Options(world_size=0))  # refused in Python
    # The library's own refusal, of a struct written past the Python checks.
    bad = kvshard.Options()
    bad._c.world_size = 0
    with pytest.raises(kvshard.PlanError) as info:
        kvshard.Deployment.create(model, bad)
    assert info.value.code is kvshard.Status.EPARALLEL
    assert not model.closed and model.num_layers == 4
    with kvshard.Deployment.create(model, kvshard.Options(world_size=2)) as dep:
        assert model.closed
        with pytest.raises(ValueError, match="closed"):
            kvshard.Deployment.create(model)  # already given away
        assert dep.plan().attn_tp_size == 2


def live_finalizers() -> int:
    registry = getattr(weakref.finalize, "_registry", None)
    if registry is None:  # pragma: no cover - not CPython
        pytest.skip("weakref.finalize keeps no registry here")
    return len(registry)


def test_errors_leave_no_handle_behind() -> None:
    gc.collect()
    before = live_finalizers()
    for _ in range(200):
        with pytest.raises(kvshard.ConfigError):
            kvshard.load(SEED, bogus=1)  # the deployment loads, the override fails
        with pytest.raises(kvshard.PlanError):
            kvshard.load(SEED, layerwise_split_size=3).plan()
        with pytest.raises(kvshard.ReadError):
            kvshard.load_model("a: [")
    assert live_finalizers() == before


def test_concurrent_readers() -> None:
    with kvshard.load(SEED, context_length=32768) as dep, dep.plan() as plan:
        expected = plan.to_json()
        errors = []

        def read() -> None:
            try:
                for i in range(200):
                    assert plan.rank_layers(i % 4) == ([3, 11, 19, 27, 35] if i % 2 == 0 else [7, 15, 23, 31, 39])
                    assert plan.capacity.balanced_max_seqs == 98
                    if i % 50 == 0:
                        assert plan.to_json() == expected
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=read) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
