#!/usr/bin/env bash
# Packaging checks: build and install kvshard into a temporary prefix, then
# build and run what a downstream user would, against that prefix only:
#   - tests/consumers/cmake      find_package(kvshard) -> kvshard::kvshard(_static),
#                                C and C++, next to the project's own YAML_*
#                                variables, PkgConfig::YAML and kvs_* functions
#   - tests/consumers/pkgconfig  pkg-config kvshard / kvshard-static, C and C++
#   - .ci/packaging_docs.sh      every find_package(kvshard ...) line of the docs'
#                                cmake blocks, their pkg-config range and SONAME
#   - tools/                     the CLI's sources against the install and
#                                libkvshard.so alone print the same seed plan
#   - examples/engine_init       every rank of the seed deployment (C and C++)
#   - examples/mpi_init          mpirun -np 4: ranks with their own measured memory
#                                agree on the layout digest; a mismatch is caught;
#                                2 stages x 2 TP ranks and 4 x 2 on 8 processes
#                                locate their stage and share one block count
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
MINOR="${VERSION#*.}"
MINOR="${MINOR%%.*}"
# Version policy: while the major version is 0 each minor release is its own
# ABI (SONAME libkvshard.so.0.MINOR, find_package accepts the same 0.MINOR
# only); from 1.0 on, SONAME libkvshard.so.MAJOR and the same major version.
if [[ "$MAJOR" == 0 ]]; then SOVERSION="$MAJOR.$MINOR"; else SOVERSION="$MAJOR"; fi
for f in \
    "$LIBDIR/libkvshard.so" "$LIBDIR/libkvshard.so.$SOVERSION" "$LIBDIR/libkvshard.so.$VERSION" \
    "$LIBDIR/libkvshard.a" \
    "$PREFIX/include/kvshard/kvshard.h" "$PREFIX/include/kvshard/kvshard.hpp" \
    "$PREFIX/include/kvshard/explore.h" "$PREFIX/include/kvshard/output.h" \
    "$PREFIX/include/kvshard/explore.hpp" \
    "$PREFIX/include/kvshard/kvshard_export.h" "$PREFIX/include/kvshard/kvshard_version.h" \
    "$PREFIX/bin/kvshard" "$LIBDIR/pkgconfig/kvshard.pc" "$LIBDIR/pkgconfig/kvshard-static.pc" \
    "$LIBDIR/cmake/kvshard/kvshardConfig.cmake" \
    "$LIBDIR/cmake/kvshard/kvshardConfigVersion.cmake" \
    "$LIBDIR/cmake/kvshard/kvshardTargets.cmake"; do
    [[ -e "$f" ]] || fail "not installed: $f"
    echo "ok  ${f#"$PREFIX"/}"
done
soname="$(readelf -d "$LIBDIR/libkvshard.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
[[ "$soname" == "libkvshard.so.$SOVERSION" ]] || fail "SONAME is '$soname', not libkvshard.so.$SOVERSION"
echo "ok  SONAME $soname"
for pc in kvshard kvshard-static; do
    grep -q "prefix=$PREFIX\$" "$LIBDIR/pkgconfig/$pc.pc" || fail "$pc.pc does not carry $PREFIX"
done
headers="$PREFIX/include/kvshard/kvshard.h,$PREFIX/include/kvshard/explore.h"
headers+=",$PREFIX/include/kvshard/output.h"
cmake -DLIBRARY="$LIBDIR/libkvshard.so.$VERSION" -DHEADERS="$headers" \
    -P "$SRC/tests/abi/check_exports.cmake"
cmake -DARCHIVE="$LIBDIR/libkvshard.a" -P "$SRC/tests/abi/check_archive.cmake"

step "the docs' packaging lines against this install"
bash "$SRC/.ci/packaging_docs.sh" "$PREFIX" "$LIBDIR" "$WORK"

step "libdir: fixed at configure time"
# GNUInstallDirs picks CMAKE_INSTALL_LIBDIR from the prefix given when
# configuring (a multiarch lib/<triplet> on Debian for /usr only);
# cmake --install --prefix moves the prefix and keeps that libdir.
cmake -S "$SRC" -B "$WORK/build-usr" -DCMAKE_INSTALL_PREFIX=/usr \
    -DKVSHARD_BUILD_TESTS=OFF -DKVSHARD_BUILD_EXAMPLES=OFF -DKVSHARD_BUILD_BENCH=OFF > /dev/null
usr_libdir="$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$WORK/build-usr/CMakeCache.txt")"
echo "ok  configured for /nonexistent/...: libdir ${LIBDIR#"$PREFIX"/}; configured for /usr: libdir $usr_libdir"

step "installed CLI"
"$PREFIX/bin/kvshard" --version | tee "$WORK/cli-version.txt"
grep -qx "kvshard $VERSION" "$WORK/cli-version.txt" || fail "kvshard --version"
"$PREFIX/bin/kvshard" plan "$SEED" --format=json > "$WORK/plan.json"
grep -q '"digest"' "$WORK/plan.json" || fail "kvshard plan --format=json"

# ---- CMake consumer -------------------------------------------------------------
step "the CLI's sources against the installed headers and libkvshard.so alone"
# tools/ includes only <kvshard/*.h>: built from the install, with no source
# tree on the include path, it prints the seed plan the installed CLI prints.
# Every source of tools/, so that a new file of the CLI is built here too.
cc -std=c11 -Wall -Wextra -Werror -I"$PREFIX/include" -o "$WORK/kvshard-from-install" \
    "$SRC"/tools/*.c -L"$LIBDIR" -lkvshard -Wl,-rpath,"$LIBDIR"
readelf -d "$WORK/kvshard-from-install" | grep -q "NEEDED.*libkvshard\.so" ||
    fail "the CLI built from the install does not load libkvshard.so"
for fmt in text json; do
    "$PREFIX/bin/kvshard" plan "$SEED" --format=$fmt > "$WORK/plan-installed.$fmt"
    "$WORK/kvshard-from-install" plan "$SEED" --format=$fmt > "$WORK/plan-from-install.$fmt"
    cmp "$WORK/plan-installed.$fmt" "$WORK/plan-from-install.$fmt" ||
        fail "the CLI built against libkvshard.so prints another $fmt seed plan"
done
echo "tools/ built against the install: the same seed plan, text and JSON"

step "CMake consumer (find_package(kvshard), kvshard::kvshard and kvshard::kvshard_static)"
cmake -S "$SRC/tests/consumers/cmake" -B "$WORK/consumer-cmake" \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DKVSHARD_SEED="$SEED"
cmake --build "$WORK/consumer-cmake" -j "$JOBS"
ctest --test-dir "$WORK/consumer-cmake" --output-on-failure

step "CMake package version: other versions are refused"
refused=("$((MAJOR + 1)).0")
if [[ "$MAJOR" == 0 ]]; then
    # SameMinorVersion while the major version is 0.
    refused+=("0.$((MINOR + 1))")
    if [[ "$MINOR" -gt 0 ]]; then refused+=("0.$((MINOR - 1))"); fi
fi
for want in "${refused[@]}"; do
    log="$WORK/consumer-cmake-$want.log"
    if cmake -S "$SRC/tests/consumers/cmake" -B "$WORK/consumer-cmake-$want" \
        -DCMAKE_PREFIX_PATH="$PREFIX" -DKVSHARD_REQUIRED_VERSION="$want" > "$log" 2>&1; then
        fail "find_package(kvshard $want) accepted version $VERSION"
    fi
    grep -q "compatible with requested version" "$log" ||
        fail "unexpected error from find_package(kvshard $want), see $log"
    echo "ok  find_package(kvshard $want) is refused"
done

# ---- pkg-config consumer ----------------------------------------------------------
step "pkg-config consumer"
export PKG_CONFIG_PATH="$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
[[ "$(pkg-config --modversion kvshard)" == "$VERSION" ]] || fail "pkg-config --modversion"
echo "cflags: $(pkg-config --cflags kvshard)"
echo "libs:   $(pkg-config --libs kvshard)"
echo "static: $(pkg-config --cflags --libs kvshard-static)"
[[ "$(pkg-config --modversion kvshard-static)" == "$VERSION" ]] || fail "pkg-config --modversion kvshard-static"
pkg-config --static --libs kvshard | grep -q -- '-lyaml' || fail "kvshard.pc: Requires.private: yaml-0.1 missing"
pkg-config --libs kvshard-static | grep -q -- "$LIBDIR/libkvshard.a .*-lyaml" ||
    fail "kvshard-static.pc: the archive by path, then libyaml"
pkg-config --cflags kvshard-static | grep -q -- '-DKVSHARD_STATIC_DEFINE' ||
    fail "kvshard-static.pc: KVSHARD_STATIC_DEFINE missing"
mkdir -p "$WORK/consumer-pc"
make -C "$SRC/tests/consumers/pkgconfig" BUILD="$WORK/consumer-pc" SEED="$SEED" check

# ---- examples against the installed package -------------------------------------------
step "examples built against the installed package"
cmake -S "$SRC/examples" -B "$WORK/examples" -DCMAKE_PREFIX_PATH="$PREFIX" \
    -DCMAKE_C_FLAGS="-Werror" -DCMAKE_CXX_FLAGS="-Werror"
cmake --build "$WORK/examples" -j "$JOBS"

for prog in engine_init engine_init_cxx; do
    step "$prog, every rank of the seed deployment"
    [[ -x "$WORK/examples/$prog" ]] || fail "$prog was not built (is g++ installed?)"
    for rank in 0 1 2 3; do
        "$WORK/examples/$prog" "$SEED" "$rank" | tee "$WORK/$prog.$rank.txt"
    done
    # The rank's log line (kvshard_plan_describe_rank) names its KV layers.
    grep -q "^rank 0: .* KV of 5 layers \[3 11 19 27 35\]" "$WORK/$prog.0.txt" ||
        fail "$prog rank 0 does not store layers 3 11 19 27 35"
    grep -q "^rank 1: .* KV of 5 layers \[7 15 23 31 39\]" "$WORK/$prog.1.txt" ||
        fail "$prog rank 1 does not store layers 7 15 23 31 39"
    grep -q "^rank 0: allocated " "$WORK/$prog.0.txt" || fail "$prog rank 0 allocated nothing"
done

step "mpi_init, 4 ranks with their own memory that agree on the layout"
[[ -x "$WORK/examples/mpi_init" ]] || fail "mpi_init was not built (is libopenmpi-dev installed?)"
MPIRUN_ARGS=(-np 4 --oversubscribe)
[[ "$(id -u)" == 0 ]] && MPIRUN_ARGS+=(--allow-run-as-root)
"$MPIRUN" "${MPIRUN_ARGS[@]}" "$WORK/examples/mpi_init" "$SEED" | tee "$WORK/mpi-agree.txt"
# Each rank measures 256 MiB less than the one before: 197493, 194762,
# 192032 and 189301 blocks; all allocate the fewest.
grep -q "all 4 ranks agree on layout [0-9a-f]\{16\}; each allocates 189301 blocks" \
    "$WORK/mpi-agree.txt" || fail "mpi_init: no agreement on the layout reported"
grep -q "^\[rank 0\] kvshard .*tp_rank 0/4 .*KV of 5 layers \[3 11 19 27 35\]" "$WORK/mpi-agree.txt" ||
    fail "mpi_init: rank 0 does not store layers 3 11 19 27 35"

step "mpi_init, rank 2 given ownership=global: must be detected and fail"
set +e
"$MPIRUN" "${MPIRUN_ARGS[@]}" "$WORK/examples/mpi_init" "$SEED" --mismatch-rank=2 \
    > "$WORK/mpi-mismatch.txt" 2> "$WORK/mpi-mismatch.err"
rc=$?
set -e
cat "$WORK/mpi-mismatch.txt"
[[ $rc -ne 0 ]] || fail "mpi_init --mismatch-rank=2 exited 0"
grep -q "layouts differ" "$WORK/mpi-mismatch.txt" || fail "mpi_init: the disagreement was not reported"
echo "ok  mismatch detected, mpirun exit status $rc"

# Every rank prints "global rank G: stage S/P, tp_rank T/TP, layers A-B, KV
# layers [..], ...; common block count N". Checks that rank G printed that
# line with the given stage, layers and count, and that every rank printed
# the same count.
check_mpi_ranks() {
    local file="$1" common="$2" nranks="$3"
    shift 3
    local expect
    for expect in "$@"; do
        grep -q "^\[rank ${expect%%:*}\] global rank ${expect%%:*}: ${expect#*: }.*; common block count $common\$" \
            "$file" || fail "mpi_init: no line '${expect}' with common block count $common"
    done
    local counts
    counts="$(grep -c "; common block count $common\$" "$file")"
    [[ "$counts" == "$nranks" ]] || fail "mpi_init: $counts of $nranks ranks report $common blocks"
    [[ "$(grep -c '; common block count' "$file")" == "$nranks" ]] ||
        fail "mpi_init: the ranks report different block counts"
    echo "ok  $nranks ranks agree on $common blocks"
}

PP2="$SRC/examples/nemotron_h_8b_pp2.yaml"
step "mpi_init, 2 stages x 2 TP ranks, each with its own memory"
"$MPIRUN" "${MPIRUN_ARGS[@]}" "$WORK/examples/mpi_init" "$PP2" | tee "$WORK/mpi-pp2.txt"
# Nemotron-H 8B at T = 2: per attention layer and token 8 / 2 = 4 KV heads x
# 128 x 2 (K, V) x 2 bytes = 2,048; per Mamba2 layer and sequence the fp32 SSM
# state 128 / 2 heads x 64 x 128 x 4 = 2,097,152 plus the bf16 convolution
# window 3 x (8,192 + 2 x 8 x 128) / 2 x 2 = 30,720: 2,127,872. Rule vllm,
# 52 layers on 2 stages: 26 | 26; stage 0 = layers 0-25 (attention 7, 18;
# 12 Mamba), stage 1 = layers 26-51 (attention 29, 40; 12 Mamba). Layout
# vllm: g = stage x 2 + tp.
# Every rank: 2 x 2,048 = 4,096 bytes per token, x 16 = 65,536 per block;
# reserved 128 seqs x 12 x 2,127,872 = 3,268,411,392 bytes.
# Rank g measures 14 GiB - g x 256 MiB = 15,032,385,536 - g x 268,435,456:
# g = 0: (15,032,385,536 - 3,268,411,392) / 65,536 = 179,504 (exactly);
# 256 MiB is 268,435,456 / 65,536 = 4,096 blocks, so g = 1, 2, 3 fit 175,408,
# 171,312, 167,216. Common: 167,216, set by g = 3 (stage 1, TP rank 1).
check_mpi_ranks "$WORK/mpi-pp2.txt" 167216 4 \
    "0: stage 0/2, tp_rank 0/2, layers 0-25, KV layers \[7 18\], fits 179504 blocks" \
    "1: stage 0/2, tp_rank 1/2, layers 0-25, KV layers \[7 18\], fits 175408 blocks" \
    "2: stage 1/2, tp_rank 0/2, layers 26-51, KV layers \[29 40\], fits 171312 blocks" \
    "3: stage 1/2, tp_rank 1/2, layers 26-51, KV layers \[29 40\], fits 167216 blocks"
grep -q "^\[rank 0\] all 4 ranks agree on layout [0-9a-f]\{16\}; each allocates 167216 blocks" \
    "$WORK/mpi-pp2.txt" || fail "mpi_init: the 2-stage ranks do not agree"
grep -q "^\[rank 0\] pp partition 26,26 (2 stages)$" "$WORK/mpi-pp2.txt" ||
    fail "mpi_init: rank 0 does not print the partition 26,26"

step "mpi_init, 4 stages x 2 TP ranks on 8 processes, stage 0 without KV"
MPIRUN_ARGS_8=(-np 8 "${MPIRUN_ARGS[@]:2}") # the same options on 8 processes
"$MPIRUN" "${MPIRUN_ARGS_8[@]}" "$WORK/examples/mpi_init" "$PP2" \
    --world_size=8 --pp_size=4 --pp_partition=6,20,13,13 | tee "$WORK/mpi-pp4.txt"
# Explicit partition 6 | 20 | 13 | 13: stage 0 = layers 0-5 (Mamba 0, 2, 4,
# no attention), stage 1 = 6-25 (attention 7, 18; 9 Mamba), stage 2 = 26-38
# (attention 29; 6 Mamba), stage 3 = 39-51 (attention 40; 6 Mamba). g =
# stage x 2 + tp; rank g measures 15,032,385,536 - g x 268,435,456.
# Stage 0 (g = 0, 1) stores no per-token bytes and does not bound the count.
# Stage 1: 65,536 bytes per block, reserved 128 x 9 x 2,127,872 =
# 2,451,308,544; at 14 GiB (15,032,385,536 - 2,451,308,544) / 65,536 =
# 191,972 (exactly), less 4,096 per rank: g = 2 183,780, g = 3 179,684.
# Stages 2 and 3: 32,768 bytes per block, reserved 128 x 6 x 2,127,872 =
# 1,634,205,696; at 14 GiB 408,880 (exactly), less 8,192 per rank: g = 4
# 376,112, g = 5 367,920, g = 6 359,728, g = 7 351,536.
# Common: 179,684, set by g = 3 (stage 1, TP rank 1).
check_mpi_ranks "$WORK/mpi-pp4.txt" 179684 8 \
    "0: stage 0/4, tp_rank 0/2, layers 0-5, KV layers \[\], state only" \
    "1: stage 0/4, tp_rank 1/2, layers 0-5, KV layers \[\], state only" \
    "2: stage 1/4, tp_rank 0/2, layers 6-25, KV layers \[7 18\], fits 183780 blocks" \
    "3: stage 1/4, tp_rank 1/2, layers 6-25, KV layers \[7 18\], fits 179684 blocks" \
    "4: stage 2/4, tp_rank 0/2, layers 26-38, KV layers \[29\], fits 376112 blocks" \
    "5: stage 2/4, tp_rank 1/2, layers 26-38, KV layers \[29\], fits 367920 blocks" \
    "6: stage 3/4, tp_rank 0/2, layers 39-51, KV layers \[40\], fits 359728 blocks" \
    "7: stage 3/4, tp_rank 1/2, layers 39-51, KV layers \[40\], fits 351536 blocks"
grep -q "^\[rank 0\] pp partition 6,20,13,13 (4 stages)$" "$WORK/mpi-pp4.txt" ||
    fail "mpi_init: rank 0 does not print the partition 6,20,13,13"
grep -q "^\[rank 0\] warning stage_without_kv: " "$WORK/mpi-pp4.txt" ||
    fail "mpi_init: no stage_without_kv warning"

printf '\npackaging: all checks passed (kvshard %s)\n' "$VERSION"
