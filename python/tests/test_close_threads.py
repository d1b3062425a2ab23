"""close() from one thread while others query the same object: the C
object is freed only when no call is inside it, and a query that comes
after close raises ValueError ("... is closed"), never reaches freed memory.

Two kinds of test. The first puts a recorder between the binding and the
library: every call into a watched handle sleeps inside, so queries are in
flight when close() comes, and the recorder notes a free while a call is
inside and any call after the free (instead of making them, so a broken
binding fails here rather than crashing). The second hammers the real
library with no recorder, for many rounds."""

from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Set, Tuple

import pytest
from conftest import EXAMPLES, SEED

import kvshard

QWEN35 = EXAMPLES / "models" / "qwen3_5_35b_a3b.json"
WRITERS = {"kvshard_deployment_set", "kvshard_deployment_apply_args", "kvshard_settings_set"}


class Recorder:
    """Stands for the library: passes every call through, and for calls
    that name a watched handle, counts who is inside and notes misuse."""

    def __init__(self, real: Any, delay: float) -> None:
        self.real = real
        self.delay = delay
        self.lock = threading.Lock()
        self.owner: Dict[int, int] = {}  # pointer -> the handle that frees it
        self.inside: Dict[int, int] = collections.Counter()
        self.writing: Set[int] = set()
        self.freed: Set[int] = set()
        self.misuse: List[str] = []
        self.calls = 0

    def watch(self, ptr: int, owner: int = 0) -> None:
        self.owner[ptr] = owner or ptr

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self.real, name)
        wrapped = self._free(fn, name) if name.endswith("_free") else self._call(fn, name)
        setattr(self, name, wrapped)
        return wrapped

    def _keys(self, args: Tuple[Any, ...]) -> Set[int]:
        # Handles passed as pointers, and the settings a kvshard_options
        # passed by reference points to.
        ptrs = [a for a in args if isinstance(a, int)]
        ptrs += [
            a._obj.settings
            for a in args
            if isinstance(getattr(a, "_obj", None), kvshard._lib.COptions) and a._obj.settings
        ]
        return {self.owner[p] for p in ptrs if p in self.owner}

    def _call(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            keys = self._keys(args)
            if not keys:
                return fn(*args)
            with self.lock:
                for k in keys:
                    if k in self.freed:
                        self.misuse.append(f"{name} after the handle was freed")
                        return -2  # EINVAL, and no call into freed memory
                    if k in self.writing or (name in WRITERS and self.inside[k]):
                        self.misuse.append(f"{name} beside a change of the same handle")
                    self.inside[k] += 1
                    if name in WRITERS:
                        self.writing.add(k)
                self.calls += 1
            try:
                time.sleep(self.delay)
                return fn(*args)
            finally:
                with self.lock:
                    for k in keys:
                        self.inside[k] -= 1
                        self.writing.discard(k)

        return call

    def _free(self, fn: Callable[[int], None], name: str) -> Callable[[int], None]:
        def free(ptr: int) -> None:
            key = self.owner.get(ptr)
            if key is not None:
                with self.lock:
                    if key in self.freed:
                        self.misuse.append(f"{name} twice")
                        return
                    self.freed.add(key)
                    if self.inside[key]:
                        self.misuse.append(f"{name} with {self.inside[key]} call(s) inside")
                # A watched handle's memory is kept: its address never comes
                # back for a new handle while the recorder runs, and a call
                # that should not be made cannot reach freed memory.
                return
            fn(ptr)

        return free


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    rec = Recorder(kvshard._lib.library(), delay=0.002)
    monkeypatch.setattr(kvshard._lib, "library", lambda: rec)
    yield rec


def plan_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    with kvshard.load(SEED) as dep:
        plan = dep.plan()
    rec.watch(plan._ptr)
    return plan, lambda p: p.rank_layers(1) == [7, 15, 23, 31, 39], plan.close


def model_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    model = kvshard.load_model(QWEN35)
    rec.watch(model._ptr)
    return model, lambda m: m.layer_kind(3) is kvshard.LayerKind.FULL_ATTENTION, model.close


def deployment_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    dep = kvshard.load(SEED)
    rec.watch(dep._ptr)

    def query(d: kvshard.Deployment) -> bool:
        with d.plan() as p:
            return d.options.world_size == 4 and p.attn_tp_size == 4

    return dep, query, dep.close


def borrowed_model_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    dep = kvshard.load(SEED)
    rec.watch(dep._ptr)
    model = dep.model
    rec.watch(model._ptr, owner=dep._ptr)  # freed with the deployment
    return model, lambda m: m.num_layers == 40, dep.close


def comparison_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    with kvshard.load(SEED) as dep:
        cmp = dep.compare()
    rec.watch(cmp._ptr)
    return cmp, lambda c: '"rows"' in c.to_json(), cmp.close


def settings_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    # The settings object an Options holds beside its struct.
    opts = kvshard.Options(max_memory_utilization=0.5)
    held = opts._settings
    rec.watch(held._ptr)
    return held, lambda s: s.get("max_memory_utilization") == ("0.5", True), held.close


def plan_settings_case(rec: Recorder) -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
    # A plan and the copy of the settings it was made from, freed together.
    with kvshard.load(SEED, max_memory_utilization=0.5) as dep:
        plan = dep.plan()
    rec.watch(plan._ptr)
    rec.watch(plan._settings_ptr)
    return plan, lambda p: p.options.max_memory_utilization == 0.5, plan.close


CASES = {
    "plan": plan_case,
    "model": model_case,
    "deployment": deployment_case,
    "borrowed model": borrowed_model_case,
    "comparison": comparison_case,
    "settings": settings_case,
    "plan settings": plan_settings_case,
}


def hammer(
    obj: Any, query: Callable[[Any], Any], close: Callable[[], None], threads: int,
    after: Callable[[], None],
) -> Tuple[int, List[BaseException]]:
    """Run `query` from `threads` threads until the object is closed; close
    it from this thread once `after` returns. Returns (answers, errors
    other than the closed object's ValueError)."""
    answers: List[bool] = []
    unexpected: List[BaseException] = []
    started = threading.Barrier(threads + 1)

    def work() -> None:
        started.wait()
        while True:
            try:
                answers.append(bool(query(obj)))
            except ValueError as exc:
                if "closed" in str(exc):
                    return
                unexpected.append(exc)
                return
            except BaseException as exc:
                unexpected.append(exc)
                return

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    started.wait()
    after()
    close()
    for t in pool:
        t.join(timeout=30)
        assert not t.is_alive(), "a query did not return after close"
    assert all(answers), "a query answered wrong"
    return len(answers), unexpected


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_close_waits_for_the_calls_inside(case: str, recorder: Recorder) -> None:
    for _ in range(10):
        obj, query, close = CASES[case](recorder)
        calls = recorder.calls
        answers, unexpected = hammer(
            obj, query, close, threads=3, after=lambda: time.sleep(0.006)
        )
        assert unexpected == []
        assert recorder.calls > calls  # the queries reached the library
        assert obj.closed
        with pytest.raises(ValueError, match="closed"):
            query(obj)
    assert recorder.misuse == []


def test_changes_of_a_deployment_run_alone(recorder: Recorder) -> None:
    dep = kvshard.load(SEED)
    recorder.watch(dep._ptr)
    stop = threading.Event()
    errors: List[BaseException] = []

    def change(i: int) -> None:
        try:
            while not stop.is_set():
                dep.set("max_seqs", 64 + i)
                dep.apply_args([f"--context_length={4096 * (i + 1)}"])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            while not stop.is_set():
                o = dep.options
                assert o.max_seqs in (64, 65, 128) and o.world_size == 4
                dep.plan().close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    pool = [threading.Thread(target=change, args=(i,)) for i in range(2)]
    pool += [threading.Thread(target=read) for _ in range(2)]
    for t in pool:
        t.start()
    time.sleep(0.3)
    stop.set()
    for t in pool:
        t.join(timeout=30)
    dep.close()
    assert errors == []
    assert recorder.misuse == []
    assert recorder.calls > 20


def test_settings_change_alone_while_others_plan_with_them(recorder: Recorder) -> None:
    # Options.set on a setting waits for the calls that read the Options'
    # settings (plans, comparisons, copies), and they wait for it.
    model = kvshard.load_model(QWEN35)
    opts = kvshard.Options(world_size=4, max_memory_utilization=0.5)
    recorder.watch(opts._settings._ptr)
    stop = threading.Event()
    errors: List[BaseException] = []

    def change(i: int) -> None:
        try:
            while not stop.is_set():
                opts.set("max_memory_utilization", 0.25 + 0.25 * i)
                opts.enable_prefix_cache = bool(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def read() -> None:
        try:
            while not stop.is_set():
                with kvshard.plan(model, opts) as p:
                    assert p.options.max_memory_utilization in (0.25, 0.5)
                kvshard.compare(model, opts).close()
                assert opts.copy().max_memory_utilization in (0.25, 0.5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    pool = [threading.Thread(target=change, args=(i,)) for i in range(2)]
    pool += [threading.Thread(target=read) for _ in range(2)]
    for t in pool:
        t.start()
    time.sleep(0.3)
    stop.set()
    for t in pool:
        t.join(timeout=30)
    model.close()
    assert errors == []
    assert recorder.misuse == []
    assert recorder.calls > 20


def test_a_model_given_to_a_deployment_while_queried(recorder: Recorder) -> None:
    for _ in range(10):
        model = kvshard.create_model(4, num_attention_heads=4, num_kv_heads=2, head_dim=64)
        recorder.watch(model._ptr)
        made: List[kvshard.Deployment] = []
        answers, unexpected = hammer(
            model,
            lambda m: m.num_layers == 4,
            lambda: made.append(kvshard.Deployment.create(model)),
            threads=3,
            after=lambda: time.sleep(0.006),
        )
        assert unexpected == [] and model.closed
        with made[0] as dep:
            assert dep.model.num_layers == 4
    assert recorder.misuse == []


# --- the real library, many rounds --------------------------------------------


def real_cases() -> Dict[str, Callable[[], Tuple[Any, Callable[[Any], Any], Callable[[], None]]]]:
    def plan() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        p = seed.plan()

        def query(x: kvshard.Plan) -> bool:
            return (
                x.rank_layers(0) == [3, 11, 19, 27, 35]
                and x.capacity.num_blocks == 197493
                and "tp_rank 0/4" in x.describe_rank(0)
                and x.warnings == []
            )

        return p, query, p.close

    def model() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        m = kvshard.load_model(QWEN35)
        return m, lambda x: x.layer_kinds[3] is kvshard.LayerKind.FULL_ATTENTION, m.close

    def deployment() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        d = kvshard.load(SEED)

        def query(x: kvshard.Deployment) -> bool:
            with x.plan() as p:
                return x.options.max_seqs == 128 and p.capacity.num_blocks == 197493

        return d, query, d.close

    def borrowed() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        d = kvshard.load(SEED)
        return d.model, lambda x: x.count(kvshard.LayerKind.FULL_ATTENTION) == 10, d.close

    def comparison() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        c = seed.compare()
        return c, lambda x: len(x.to_text()) > 0 and x.to_dict()["rows"] != [], c.close

    def settings() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        held = kvshard.Options(max_memory_utilization=2 / 3)._settings
        return held, lambda s: s.values()["max_memory_utilization"] == 2 / 3, held.close

    def plan_settings() -> Tuple[Any, Callable[[Any], Any], Callable[[], None]]:
        p = xllm.plan()

        def query(x: kvshard.Plan) -> bool:
            return x.options.max_memory_utilization == 2 / 3 and x.capacity.state_slots == 202

        return p, query, p.close

    seed = kvshard.load(SEED)
    xllm = kvshard.load(
        QWEN35, world_size=4, engine="xllm", memory_per_rank="20GiB",
        enable_prefix_cache=False, max_memory_utilization=2 / 3,
    )
    return {
        "plan": plan,
        "model": model,
        "deployment": deployment,
        "borrowed model": borrowed,
        "comparison": comparison,
        "settings": settings,
        "plan settings": plan_settings,
    }


def test_hammering_queries_while_closing_never_touches_freed_memory() -> None:
    rng = random.Random(20240611)
    cases = real_cases()
    rounds = {name: 0 for name in cases}
    for i in range(70 * len(cases)):
        name = list(cases)[i % len(cases)]
        obj, query, close = cases[name]()
        pause = rng.choice([0.0, 0.0001, 0.0005, 0.002])
        answers, unexpected = hammer(obj, query, close, threads=3, after=lambda: time.sleep(pause))
        assert unexpected == [], (name, unexpected)
        assert obj.closed
        rounds[name] += 1
    assert rounds == {name: 70 for name in cases}
