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
exit "$status"
