#!/usr/bin/env bash
# CI: kvshard built with KVSHARD_BUILD_EXPLORE=OFF, as an engine that wants
# the core alone builds it. Its tests pass; its install exports no compare,
# fit or writer symbol and holds neither explore header nor explore.hpp;
# and kvshard.hpp (the C++ engine example) compiles against that install.
#
#   .ci/core.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: .ci/core.sh BUILD_DIR}

# Debug: no optimiser, so the step stays short.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DKVSHARD_WERROR=ON -DKVSHARD_BUILD_EXPLORE=OFF >/dev/null
cmake --build "$build" -j2
ctest --test-dir "$build" -j2 --output-on-failure

prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(find "$prefix" -name 'libkvshard.so.*.*.*' | head -n 1)
[ -n "$lib" ] || { echo "core: no libkvshard.so installed under $prefix" >&2; exit 1; }
explore_symbols=' kvshard_(comparison_|deployment_compare$|fit_|deployment_fit$|status_name$|plan_write_|report_)'
if nm -D --defined-only "$lib" | grep -E "$explore_symbols"; then
    echo "core: $lib exports the compare, fit or writer symbols above" >&2
    exit 1
fi
echo "ok  $(nm -D --defined-only "$lib" | grep -c ' kvshard_') symbols, none of compare, fit or the writers"
for header in explore.h output.h explore.hpp; do
    if [ -e "$prefix/include/kvshard/$header" ]; then
        echo "core: kvshard/$header is installed without explore" >&2
        exit 1
    fi
done
echo "ok  neither explore header installed"
"${CXX:-c++}" -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I"$prefix/include" \
    examples/engine_init.cpp
echo "ok  kvshard.hpp compiles against the core install (examples/engine_init.cpp)"
