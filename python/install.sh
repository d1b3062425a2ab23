#!/bin/sh
# Build libkvshard with CMake and install it and the kvshard Python package
# into a new virtual environment, offline, with Debian packages only.
#
#   python/install.sh [VENV_DIR]        (default: ./kvshard-venv)
#
# Needs (Debian 12):
#   apt-get install gcc make cmake pkg-config libyaml-dev \
#                   python3 python3-venv python3-pytest
# Any CPython 3.9 or later with venv and ensurepip will do (PYTHON=...):
# the package is pure Python and is installed without setuptools or wheel,
# which pyenv's and conda's interpreters and venvs of 3.12 and later may lack.
#
# What it does:
#   1. configures and builds the C library and the CLI in BUILD_DIR
#      (default: build-python at the repository root), without tests;
#   2. makes VENV_DIR with `python3 -m venv --system-site-packages`, so that
#      Debian's python3-pytest is visible inside it;
#   3. installs the library, headers and the `kvshard` CLI into VENV_DIR
#      (cmake --install: VENV_DIR/lib/libkvshard.so, VENV_DIR/bin/kvshard);
#   4. copies the package into VENV_DIR's site-packages with its dist-info
#      (build_backend/kvshard_install.py: no wheel is built, so pip's
#      setuptools and wheel are not needed; pip lists and uninstalls it),
#      recording VENV_DIR/lib/libkvshard.so as the library's path (so the
#      environment needs no KVSHARD_LIBRARY);
#   5. checks that the package loads the library;
#   6. prints the command that runs the package's tests when pytest can be
#      imported in VENV_DIR, and how to get it (Debian's python3-pytest)
#      when it cannot.
#
# Environment: PYTHON (default /usr/bin/python3, Debian's), BUILD_DIR, and
# CMAKE_ARGS (more arguments for the CMake configure step, split on spaces).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
venv=${1:-kvshard-venv}
build=${BUILD_DIR:-$repo/build-python}
if [ -z "${PYTHON:-}" ]; then
    if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi

need="apt-get install gcc make cmake pkg-config libyaml-dev python3 python3-venv python3-pytest"
missing=""
for tool in cmake cc pkg-config; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if command -v pkg-config >/dev/null 2>&1 && ! pkg-config --exists yaml-0.1; then
    missing="$missing libyaml-dev"
fi
"$PYTHON" -c "import sys; assert sys.version_info >= (3, 9)" >/dev/null 2>&1 ||
    missing="$missing $PYTHON(Python 3.9 or later)"
"$PYTHON" -c "import venv, ensurepip" >/dev/null 2>&1 ||
    missing="$missing $PYTHON(venv, ensurepip)"
if [ -n "$missing" ]; then
    echo "install.sh: missing:$missing" >&2
    echo "install.sh: on Debian 12, as root: $need" >&2
    exit 1
fi

case $venv in /*) ;; *) venv=$(pwd)/$venv ;; esac

echo "== building libkvshard in $build"
cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DKVSHARD_BUILD_TESTS=OFF -DKVSHARD_BUILD_EXAMPLES=OFF -DKVSHARD_BUILD_BENCH=OFF \
    -DCMAKE_INSTALL_PREFIX="$venv" -DCMAKE_INSTALL_LIBDIR=lib ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j2

echo "== making the virtual environment $venv"
"$PYTHON" -m venv --system-site-packages "$venv"

echo "== installing the library and the CLI into $venv"
cmake --install "$build" >/dev/null

echo "== installing the kvshard package"
"$venv/bin/python" "$here/build_backend/kvshard_install.py" --library "$venv/lib/libkvshard.so" "$here"

"$venv/bin/python" -c 'import kvshard; print("kvshard", kvshard.__version__, "uses", kvshard.library_path(), "(libkvshard " + kvshard.library_version() + ")")'
echo "done: . $venv/bin/activate, then python -c 'import kvshard'"
# The environment sees the system's site-packages, so Debian's pytest
# serves it; without it there is no test command to give.
if "$venv/bin/python" -c "import pytest" >/dev/null 2>&1; then
    echo "tests: (cd $here && $venv/bin/python -m pytest -q tests)"
else
    echo "tests: pytest is not installed for $PYTHON; on Debian 12, as root:" \
        "apt-get install python3-pytest (the environment sees it), then:" \
        "(cd $here && $venv/bin/python -m pytest -q tests)"
fi
