#!/usr/bin/env bash
# The packaging lines the docs tell users to copy, against a fresh install:
#   - every `find_package(kvshard ...)` line of a cmake code block in
#     README.md and docs/*.md configures a project of its own;
#   - every `PKG_CHECK_MODULES(..., [kvshard ...])` range accepts the
#     installed version;
#   - the install listing's libkvshard.so links are the installed ones, and
#     the version policy names the installed SONAME.
# So the docs cannot name a version the release refuses.
#
#   .ci/packaging_docs.sh PREFIX LIBDIR WORK
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PREFIX="$1"
LIBDIR="$2"
WORK="$3"
fail() { echo "packaging docs: FAIL: $*" >&2; exit 1; }

VERSION="$(sed -n 's/^#define KVSHARD_VERSION_STRING "\(.*\)"$/\1/p' \
    "$PREFIX/include/kvshard/kvshard_version.h")"
soname="$(readelf -d "$LIBDIR/libkvshard.so.$VERSION" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')"
docs=("$SRC/README.md" "$SRC"/docs/*.md)

# The lines of ```cmake blocks, as "file:line:text".
cmake_lines() {
    awk '/^```/ { inblock = ($0 ~ /^```cmake[[:space:]]*$/); next }
         inblock { print FILENAME ":" FNR ":" $0 }' "${docs[@]}"
}

checked=0
while IFS= read -r entry; do
    where="${entry%%:*}:$(cut -d: -f2 <<<"$entry")"
    line="$(cut -d: -f3- <<<"$entry")"
    call="${line%%#*}"
    call="${call%"${call##*[![:space:]]}"}"
    dir="$WORK/docs-find-package-$checked"
    mkdir -p "$dir"
    printf 'cmake_minimum_required(VERSION 3.16)\nproject(docs_line LANGUAGES C)\n%s\n' \
        "$call" > "$dir/CMakeLists.txt"
    cmake -S "$dir" -B "$dir/build" -DCMAKE_PREFIX_PATH="$PREFIX" > "$dir/log" 2>&1 ||
        fail "${where#"$SRC"/}: '$call' does not configure against kvshard $VERSION; see $dir/log"
    echo "ok  ${where#"$SRC"/}: $call"
    checked=$((checked + 1))
done < <(cmake_lines | grep -E ':[[:space:]]*find_package\(kvshard[[:space:])]')
[[ $checked -gt 0 ]] || fail "no find_package(kvshard ...) line found in the docs' cmake blocks"

export PKG_CONFIG_PATH="$LIBDIR/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
ranges=0
while IFS= read -r range; do
    # "kvshard >= 0.4 kvshard < 0.5" -> one pkg-config argument per condition.
    conditions=()
    while read -r cond; do conditions+=("$cond"); done < <(
        sed 's/ *kvshard */\n&/g' <<<"$range" | sed 's/^ *//; s/ *$//' | grep -v '^$')
    pkg-config --exists "${conditions[@]}" ||
        fail "the docs' PKG_CHECK_MODULES range '$range' refuses kvshard $VERSION"
    echo "ok  PKG_CHECK_MODULES [$range]"
    ranges=$((ranges + 1))
done < <(grep -ho 'PKG_CHECK_MODULES(\[[A-Z_]*\], \[[^]]*\])' "${docs[@]}" |
    sed 's/.*, \[\(.*\)\])/\1/')
[[ $ranges -gt 0 ]] || fail "no PKG_CHECK_MODULES range found in the docs"

# The install listing names the SONAME the release installs.
listing="$(grep -h '^PREFIX/LIBDIR/libkvshard.so ->' "${docs[@]}")" ||
    fail "no install listing of libkvshard.so in the docs"
[[ "$listing" == "PREFIX/LIBDIR/libkvshard.so -> $soname -> libkvshard.so.$VERSION" ]] ||
    fail "the docs' install listing '$listing' is not $soname -> libkvshard.so.$VERSION"
echo "ok  install listing: $listing"
# The version policy's SONAME sentence names this release's.
policy="$(grep -h -A1 "SONAME carries the major" "${docs[@]}")" ||
    fail "no version policy (\"SONAME carries the major ...\") in the docs"
grep -qF "\`$soname\`" <<<"$policy" || fail "the version policy does not name $soname: $policy"
echo "ok  the version policy names $soname"
echo "packaging docs: $checked find_package lines and $ranges pkg-config ranges hold for kvshard $VERSION"
