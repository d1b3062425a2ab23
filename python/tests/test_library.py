"""Finding and checking the library. Each case runs in a fresh interpreter,
since a process loads the library once."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, Optional

import pytest

import kvshard


def run(code: str, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.pop("KVSHARD_LIBRARY", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=60
    )


def test_version_matches_the_package() -> None:
    assert kvshard.__version__ == "0.4.0"
    assert kvshard.library_version().split(".")[:2] == ["0", "4"]


def test_environment_variable_comes_first() -> None:
    where = kvshard.library_path()
    done = run(
        "import kvshard; print(kvshard.library_path())",
        {"KVSHARD_LIBRARY": os.path.abspath(where) if os.sep in where else where},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (os.path.abspath(where) if os.sep in where else where)


def test_a_bad_environment_variable_is_an_error_not_a_fallback() -> None:
    done = run("import kvshard", {"KVSHARD_LIBRARY": "/nonexistent/libkvshard.so"})
    assert done.returncode != 0
    assert "LibraryNotFoundError" in done.stderr
    assert "KVSHARD_LIBRARY is set to '/nonexistent/libkvshard.so'" in done.stderr


def test_import_loads_the_library() -> None:
    # The enums and the option checks are made from the library's tables,
    # so a missing library fails the import itself, with the loader's
    # message (an ImportError, never a ctypes error).
    done = run(
        "from kvshard._lib import LibraryNotFoundError\n",
        {"KVSHARD_LIBRARY": "/nonexistent/libkvshard.so"},
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("kvshard._lib.LibraryNotFoundError: kvshard: KVSHARD_LIBRARY is set to "
                           "'/nonexistent/libkvshard.so', which cannot be loaded"), done.stderr
    done = run(
        "try:\n"
        "    import kvshard\n"
        "except ImportError as exc:\n"
        "    print(type(exc).__name__)\n",
        {"KVSHARD_LIBRARY": "/nonexistent/libkvshard.so"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "LibraryNotFoundError"


# The cases below import the package with the library found as usual, then
# look for it again from scratch (_lib._load) with the places changed.
RELOAD = "_lib._loaded = None\n"


def test_recorded_path_is_used() -> None:
    try:
        from kvshard import _build_config
    except ImportError:
        pytest.skip("the package was installed without a recorded library path")
    if not _build_config.LIBRARY_PATH:
        pytest.skip("the package was installed without a recorded library path")
    done = run("import kvshard; print(kvshard.library_path())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == _build_config.LIBRARY_PATH


def test_nothing_found_names_all_three_places() -> None:
    done = run(
        "import ctypes.util, os, kvshard\n"
        "from kvshard import _lib\n"
        "del os.environ['KVSHARD_LIBRARY']\n"
        "_lib._recorded_path = lambda: None\n"
        "ctypes.util.find_library = lambda name: None\n"
        "_lib._SYSTEM_NAMES = ('libkvshard-absent.so.0',)\n" + RELOAD +
        "kvshard.library_version()\n",
        {"KVSHARD_LIBRARY": kvshard.library_path()},
    )
    assert done.returncode != 0
    err = done.stderr
    assert "LibraryNotFoundError" in err
    assert "1. the environment variable KVSHARD_LIBRARY: not set" in err
    assert "2. the path recorded at install time: none" in err
    assert "3. the system's library search path" in err


def test_another_minor_version_is_refused() -> None:
    done = run(
        "import kvshard\n"
        "from kvshard import _lib\n"
        "_lib.__version__ = '0.5.0'\n" + RELOAD +
        "kvshard.library_version()\n",
        {"KVSHARD_LIBRARY": kvshard.library_path()},
    )
    assert done.returncode != 0
    assert "LibraryVersionError" in done.stderr
    assert f"is libkvshard {kvshard.library_version()}, but this package (0.5.0) needs 0.5.x" in done.stderr


def test_system_search_path_finds_the_versioned_soname() -> None:
    where = kvshard.library_path()
    if os.sep not in where:
        pytest.skip("the library was loaded by soname already")
    folder = os.path.dirname(os.path.realpath(where))
    soname = "libkvshard.so.{}.{}".format(*kvshard.__version__.split(".")[:2])
    if not os.path.exists(os.path.join(folder, soname)):
        pytest.skip(f"no {soname} beside {where}")
    done = run(
        "import os, kvshard\n"
        "from kvshard import _lib\n"
        "_lib._recorded_path = lambda: None\n"
        "del os.environ['KVSHARD_LIBRARY']\n" + RELOAD +
        "print(kvshard.library_path(), kvshard.library_version())\n",
        {"LD_LIBRARY_PATH": folder, "KVSHARD_LIBRARY": where},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [soname, kvshard.library_version()]
