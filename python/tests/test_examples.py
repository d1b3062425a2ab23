"""The scripts in examples/python run and print what they promise."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO, SEED

import kvshard

SCRIPTS = REPO / "examples" / "python"


def run(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.setdefault("KVSHARD_LIBRARY", kvshard.library_path())
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=120
    )


def test_launch_flags() -> None:
    done = run(str(SCRIPTS / "launch_flags.py"), str(SEED), "20GiB", "32768")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # The balanced figure at 20 GiB and 32768 tokens is 98; with max_seqs 98
    # the blocks are (21474836480 - 98 x 16097280) // 98304 = 202405.
    assert lines[1] == (
        "--enable_layerwise_split=true --layerwise_split_size=2 --ownership=ordinal --max_seqs=98"
    )
    assert "202405 blocks of 16 tokens" in lines[2]
    assert "98 sequences run at once" in lines[2]


def test_launch_flags_reports_errors() -> None:
    done = run(str(SCRIPTS / "launch_flags.py"), str(SEED), "lots", "32768")
    assert done.returncode == 1
    assert done.stderr.startswith("kvshard: python: ")


def test_sweep_split() -> None:
    done = run(str(SCRIPTS / "sweep_split.py"), str(SEED), "32768")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "recommended: split 2, ordinal rule, max_seqs 98" in out
    rows = [line.split() for line in out.splitlines() if line[:3].strip().isdigit()]
    # S = 1 once, then three rules for S = 2 and S = 4.
    assert [(r[0], r[1]) for r in rows] == [
        ("1", "ordinal"),
        ("2", "ordinal"),
        ("2", "global"),
        ("2", "contiguous"),
        ("4", "ordinal"),
        ("4", "global"),
        ("4", "contiguous"),
    ]
    assert rows[1][5] == "197493"  # blocks of S = 2, ordinal
