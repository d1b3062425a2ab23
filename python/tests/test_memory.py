"""Creating and dropping plans keeps memory flat: 10^5 plans, RSS measured
from /proc/self/status before and after.

A leak of even 40 bytes per plan would pass the 4 MiB slack (10^5 x 40 =
4 MB); a plan itself takes a few KiB with its Python wrapper (the control
below keeps 2000 alive and sees them), so a leaked handle fails the test by
hundreds of MiB.
"""

from __future__ import annotations

import gc
import sys

import pytest
from conftest import SEED

import kvshard

SLACK = 4 * 1024 * 1024
COUNT = 100_000


def rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_measurement_sees_plans_kept_alive() -> None:
    with kvshard.load(SEED) as dep:
        gc.collect()
        start = rss()
        kept = [dep.plan() for _ in range(2000)]
        grown = rss() - start
        for plan in kept:
            plan.close()
    assert grown > 2000 * 1024, f"2000 live plans grew RSS by only {grown} bytes"


def test_100k_plans_keep_memory_flat(record_property) -> None:  # type: ignore[no-untyped-def]
    with kvshard.load(SEED, context_length=32768) as dep:
        # Warm up: allocator arenas, ctypes caches, the writer callback.
        for _ in range(2000):
            with dep.plan() as plan:
                plan.rank_layers(0)
        gc.collect()
        before = rss()
        for i in range(COUNT):
            if i % 3 == 0:
                with dep.plan() as plan:  # closed by the with block
                    plan.digest
            elif i % 3 == 1:
                plan = dep.plan()  # freed when the name is rebound
                plan.rank_layers(i % 4)
            else:
                dep.plan().capacity  # a temporary, freed at once
        del plan
        gc.collect()
        after = rss()
    record_property("rss_before", before)
    record_property("rss_after", after)
    print(f"\nRSS before {before} bytes, after {COUNT} plans {after} bytes, "
          f"growth {after - before} bytes (slack {SLACK})")
    assert after - before < SLACK


def test_failed_calls_keep_memory_flat() -> None:
    with kvshard.load(SEED) as dep:
        def fail_once() -> None:
            with pytest.raises(kvshard.ConfigError):
                dep.set("world_size", "x")
            with pytest.raises(kvshard.QueryError):
                dep.plan().rank_layers(9)

        for _ in range(1000):
            fail_once()
        gc.collect()
        before = rss()
        for _ in range(20_000):
            fail_once()
        gc.collect()
        after = rss()
    print(f"\nRSS before {before} bytes, after 20000 failed calls {after} bytes")
    assert after - before < SLACK
