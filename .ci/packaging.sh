#!/usr/bin/env bash
# Packaging checks: build and install kvshard into a temporary prefix, then
# build and run what a downstream user would, against that prefix only:
#   - tests/consumers/cmake      find_package(kvshard) -> kvshard::kvshard(_static)
#   - tests/consumers/pkgconfig  pkg-config --cflags --libs kvshard
#   - examples/engine_init       every rank of the seed deployment
#   - examples/mpi_init          mpirun -np 4: agreeing and mismatching plans
#
# Needs (Debian 12): cmake gcc g++ make pkg-config libyaml-dev libopenmpi-dev
# openmpi-bin (binutils for nm/readelf comes with gcc).
#
# Environment: JOBS (default 2), KVSHARD_WERROR (default ON), KEEP_WORK=1 to
# keep the temporary directory, MPIRUN (default mpirun).
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${JOBS:-2}"
MPIRUN="${MPIRUN:-mpirun}"
SEED="$SRC/examples/qwen3_5_35b_a3b_tp4.yaml"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/kvshard-packaging.XXXXXX")"
PREFIX="$WORK/prefix"

cleanup() {
    local rc=$?
    if [[ $rc -ne 0 || "${KEEP_WORK:-0}" == 1 ]]; then
        echo "packaging: work directory kept at $WORK" >&2
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT

step() { printf '\n=== %s\n' "$*"; }
fail() { echo "packaging: FAIL: $*" >&2; exit 1; }

# ---- build and install --------------------------------------------------------
step "configure, build and install kvshard into $PREFIX"
cmake -S "$SRC" -B "$WORK/build" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKVSHARD_WERROR="${KVSHARD_WERROR:-ON}" \
    -DKVSHARD_BUILD_TESTS=OFF -DKVSHARD_BUILD_EXAMPLES=OFF -DKVSHARD_BUILD_BENCH=OFF \
    -DCMAKE_INSTALL_PREFIX=/nonexistent/configure-time-prefix
cmake --build "$WORK/build" -j "$JOBS"
# --prefix differs from the configure-time prefix on purpose: kvshard.pc and
# the CMake package must follow the prefix given at install time.
cmake --install "$WORK/build" --prefix "$PREFIX"

step "installed files"
LIBDIR="$PREFIX/lib"
[[ -d "$LIBDIR/cmake/kvshard" ]] || LIBDIR="$(dirname "$(find "$PREFIX" -name libkvshard.a | head -n1)")"
VERSION="$(sed -n 's/^#define KVSHARD_VERSION_STRING "\(.*\)"$/\1/p' \
    "$PREFIX/include/kvshard/kvshard_version.h")"
MAJOR="${VERSION%%.*}"
for f in \
    "$LIBDIR/libkvshard.so" "$LIBDIR/libkvshard.so.$MAJOR" "$LIBDIR/libkvshard.so.$VERSION" \
    "$LIBDIR/libkvshard.a" \
    "$PREFIX/include/kvshard/kvshard.h" "$PREFIX/include/kvshard/kvshard_export.h" \
    "$PREFIX/include/kvshard/kvshard_version.h" \
    "$PREFIX/bin/kvshard" "$LIBDIR/pkgconfig/kvshard.pc" \
    "$LIBDIR/cmake/kvshard/kvshardConfig.cmake" \
    "$LIBDIR/cmake/kvshard/kvshardConfigVersion.cmake" \
    "$LIBDIR/cmake/kvshard/kvshardTargets.cmake"; do
    [[ -e "$f" ]] || fail "not installed: $f"
    echo "ok  ${f#"$PREFIX"/}"
done
soname="$(readelf -d "$LIBDIR/libkvshard.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[[ "$soname" == "libkvshard.so.$MAJOR" ]] || fail "SONAME is '$soname'"
echo "ok  SONAME $soname"
grep -q "prefix=$PREFIX\$" "$LIBDIR/pkgconfig/kvshard.pc" || fail "kvshard.pc does not carry $PREFIX"
cmake -DLIBRARY="$LIBDIR/libkvshard.so.$VERSION" -DHEADER="$PREFIX/include/kvshard/kvshard.h" \
    -P "$SRC/tests/abi/check_exports.cmake"

step "installed CLI"
"$PREFIX/bin/kvshard" --version | tee "$WORK/cli-version.txt"
grep -qx "kvshard $VERSION" "$WORK/cli-version.txt" || fail "kvshard --version"
"$PREFIX/bin/kvshard" plan "$SEED" --format=json > "$WORK/plan.json"
grep -q '"digest"' "$WORK/plan.json" || fail "kvshard plan --format=json"

# ---- CMake consumer -------------------------------------------------------------
step "CMake consumer (find_package(kvshard), kvshard::kvshard and kvshard::kvshard_static)"
cmake -S "$SRC/tests/consumers/cmake" -B "$WORK/consumer-cmake" \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DKVSHARD_SEED="$SEED"
cmake --build "$WORK/consumer-cmake" -j "$JOBS"
ctest --test-dir "$WORK/consumer-cmake" --output-on-failure

step "CMake package version: SameMajorVersion rejects a different major version"
if cmake -S "$SRC/tests/consumers/cmake" -B "$WORK/consumer-cmake-major" \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DKVSHARD_REQUIRED_VERSION="$((MAJOR + 1)).0" \
    > "$WORK/consumer-cmake-major.log" 2>&1; then
    fail "find_package(kvshard $((MAJOR + 1)).0) accepted version $VERSION"
fi
grep -q "compatible with requested version" "$WORK/consumer-cmake-major.log" ||
    fail "unexpected error from find_package(kvshard $((MAJOR + 1)).0), see $WORK/consumer-cmake-major.log"
echo "ok  find_package(kvshard $((MAJOR + 1)).0) is refused"

# ---- pkg-config consumer ----------------------------------------------------------
step "pkg-config consumer"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[[ "$(pkg-config --modversion kvshard)" == "$VERSION" ]] || fail "pkg-config --modversion"
echo "cflags: $(pkg-config --cflags kvshard)"
echo "libs:   $(pkg-config --libs kvshard)"
echo "static: $(pkg-config --static --libs kvshard)"
pkg-config --static --libs kvshard | grep -q -- '-lyaml' || fail "Requires.private: yaml-0.1 missing"
mkdir -p "$WORK/consumer-pc"
make -C "$SRC/tests/consumers/pkgconfig" BUILD="$WORK/consumer-pc" SEED="$SEED" check

# ---- examples against the installed package -------------------------------------------
step "examples built against the installed package"
cmake -S "$SRC/examples" -B "$WORK/examples" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_C_FLAGS="-Werror"
cmake --build "$WORK/examples" -j "$JOBS"

step "engine_init, every rank of the seed deployment"
for rank in 0 1 2 3; do
    "$WORK/examples/engine_init" "$SEED" "$rank" | tee "$WORK/engine_init.$rank.txt"
done
grep -q "stores the KV of 5 full-attention layer(s): 3 11 19 27 35$" "$WORK/engine_init.0.txt" ||
    fail "engine_init rank 0 does not store layers 3 11 19 27 35"
grep -q "^rank 0: allocated " "$WORK/engine_init.0.txt" || fail "engine_init rank 0 allocated nothing"

step "mpi_init, 4 ranks that agree"
[[ -x "$WORK/examples/mpi_init" ]] || fail "mpi_init was not built (is libopenmpi-dev installed?)"
MPIRUN_ARGS=(-np 4 --oversubscribe)
[[ "$(id -u)" == 0 ]] && MPIRUN_ARGS+=(--allow-run-as-root)
"$MPIRUN" "${MPIRUN_ARGS[@]}" "$WORK/examples/mpi_init" "$SEED" | tee "$WORK/mpi-agree.txt"
grep -q "all 4 ranks agree on plan" "$WORK/mpi-agree.txt" || fail "mpi_init: no agreement reported"
grep -q "^\[rank 0\] tp_rank 0, .*: 3 11 19 27 35$" "$WORK/mpi-agree.txt" ||
    fail "mpi_init: rank 0 does not store layers 3 11 19 27 35"

step "mpi_init, rank 2 given ownership=global: must be detected and fail"
set +e
"$MPIRUN" "${MPIRUN_ARGS[@]}" "$WORK/examples/mpi_init" "$SEED" --mismatch-rank=2 \
    > "$WORK/mpi-mismatch.txt" 2> "$WORK/mpi-mismatch.err"
rc=$?
set -e
cat "$WORK/mpi-mismatch.txt"
[[ $rc -ne 0 ]] || fail "mpi_init --mismatch-rank=2 exited 0"
grep -q "plans differ" "$WORK/mpi-mismatch.txt" || fail "mpi_init: the disagreement was not reported"
echo "ok  mismatch detected, mpirun exit status $rc"

printf '\npackaging: all checks passed (kvshard %s)\n' "$VERSION"
