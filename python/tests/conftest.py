"""Shared fixtures of the kvshard package tests.

The tests import the installed package (pip install ./python) and use the
library it finds (KVSHARD_LIBRARY, the recorded path, or the system's).
The CLI, for the JSON comparisons, is KVSHARD_CLI when set, else the
`kvshard` next to the loaded library, else the one on PATH.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator, Optional

import pytest

# Importing the package loads the library: keep its error for the message
# below, rather than one traceback a test module.
try:
    import kvshard
except ImportError as exc:  # LibraryNotFoundError, LibraryVersionError
    NOT_LOADED: Optional[ImportError] = exc
else:
    NOT_LOADED = None

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SEED = EXAMPLES / "qwen3_5_35b_a3b_tp4.yaml"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop at once, with the loader's own message, when the library cannot
    be found or has the wrong version: every test would fail the same way."""
    if NOT_LOADED is not None:
        pytest.exit(f"cannot load libkvshard:\n{NOT_LOADED}", returncode=1)


def find_cli() -> Optional[str]:
    given = os.environ.get("KVSHARD_CLI")
    if given:
        return given
    where = kvshard.library_path()
    if os.sep in where:
        folder = Path(where).resolve().parent
        for candidate in (folder / "kvshard", folder.parent / "bin" / "kvshard"):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    return shutil.which("kvshard")


@pytest.fixture(scope="session")
def cli() -> str:
    path = find_cli()
    if path is None:
        pytest.skip("no kvshard CLI found (set KVSHARD_CLI)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"KVSHARD_CLI={path!r} is not an executable")
    return path


@pytest.fixture
def seed() -> Iterator[kvshard.Deployment]:
    with kvshard.load(SEED) as dep:
        yield dep


@pytest.fixture
def seed_plan(seed: kvshard.Deployment) -> Iterator[kvshard.Plan]:
    with seed.plan() as plan:
        yield plan
