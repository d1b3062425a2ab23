#!/usr/bin/env bash
# CI for the Python package: given a build directory that holds the shared
# library (and the CLI), make a virtual environment that sees Debian's
# python3-pytest, pip install ./python offline with the library's path
# recorded, and run the package's tests.
#
#   .ci/python.sh BUILD_DIR
#
# The caller installs the Debian packages first: python3 python3-pip
# python3-setuptools python3-venv python3-pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$#" -ne 1 ]; then
    echo "usage: .ci/python.sh BUILD_DIR (a build with libkvshard.so)" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
lib="$build/libkvshard.so"
if [ ! -e "$lib" ]; then
    echo ".ci/python.sh: no $lib; build it with: cmake --build $1 --target kvshard kvshard_cli" >&2
    exit 1
fi
# Debian's interpreter: its python3-pytest is what the tests run under.
python=${PYTHON:-/usr/bin/python3}

venv="$build/python-venv"
rm -rf "$venv"
"$python" -m venv --system-site-packages "$venv"
KVSHARD_LIBRARY="$lib" "$venv/bin/python" -m pip install --quiet --no-index --no-build-isolation ./python

# Without KVSHARD_LIBRARY the package finds the library through the path
# recorded at install time; the CLI is the one built beside the library.
cd python
set +e
env -u KVSHARD_LIBRARY KVSHARD_CLI="$build/kvshard" \
    "$venv/bin/python" -m pytest -p no:cacheprovider -rs tests
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo ".ci/python.sh: pytest collected no tests" >&2
fi
[ "$status" -eq 0 ] || exit "$status"
cd ..

# python/install.sh from an interpreter with neither setuptools nor wheel,
# as a venv of Python 3.12 or later is (pyenv's and conda's interpreters may
# lack wheel too): a plain venv of Debian's Python, its setuptools removed
# offline. The install must need neither.
bare="$build/python-no-wheel"
rm -rf "$bare" "$build/install-sh-venv"
"$python" -m venv "$bare"
"$bare/bin/python" -m pip uninstall --quiet -y setuptools wheel > /dev/null 2>&1 || true
if "$bare/bin/python" -c "import setuptools" >/dev/null 2>&1 ||
    "$bare/bin/python" -c "import wheel" >/dev/null 2>&1; then
    echo ".ci/python.sh: setuptools or wheel stays in a plain venv; install.sh without them is not checked"
else
    PYTHON="$bare/bin/python" BUILD_DIR="$build/install-sh-build" \
        python/install.sh "$build/install-sh-venv" > "$build/install-sh.log" 2>&1 ||
        { cat "$build/install-sh.log" >&2; echo ".ci/python.sh: install.sh failed without setuptools and wheel" >&2; exit 1; }
    grep -q "^kvshard [0-9.]* uses $build/install-sh-venv/lib/libkvshard.so " "$build/install-sh.log" ||
        { cat "$build/install-sh.log" >&2; echo ".ci/python.sh: install.sh's package does not load its library" >&2; exit 1; }
    "$build/install-sh-venv/bin/python" -m pip show kvshard > /dev/null ||
        { echo ".ci/python.sh: pip does not list the package install.sh installed" >&2; exit 1; }
    echo ".ci/python.sh: install.sh works without setuptools and wheel"
fi
