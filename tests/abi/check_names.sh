#!/bin/sh
# Every global the library defines is either public (kvshard_name, no
# double underscore) or internal and named kvshard_<module>__name, where
# <module> is its file's name, a word of that name (report for
# report_chart.c) or its folder: a name says where it is defined.
# Usage: check_names.sh NM ARCHIVE SOURCE_DIR
set -eu
nm_tool=$1
archive=$2
src=$3
# "base folder" for every source file, then the archive's defined globals.
{
    for f in "$src"/src/*/*.c; do
        base=$(basename "$f" .c)
        echo "file $base $(basename "$(dirname "$f")")"
    done
    "$nm_tool" -A --defined-only -g "$archive"
} | awk '
$1 == "file" { folder[$2] = $3; next }
{
    # "archive:object.c.o:0000 T name"
    split($1, where, ":")
    obj = where[2]; sym = $NF
    if (obj == "") next
    # AddressSanitizer adds an ODR indicator (__odr_asan.NAME) beside each
    # global; NAME is checked on its own line.
    if (sym ~ /^__odr_asan/) next
    base = obj; sub(/\.c\.o$/, "", base)
    if (!(base in folder)) { printf "%s: no source file src/*/%s.c\n", obj, base; bad++; next }
    if (sym !~ /^kvshard_/) { printf "%s/%s.c: %s is not named kvshard_...\n", folder[base], base, sym; bad++; next }
    rest = substr(sym, 8)            # after "kvshard"
    if (index(rest, "__") == 0) next # public: kvshard_name
    module = substr(rest, 2, index(rest, "__") - 2)
    ok = (module == base || module == folder[base])
    n = split(base, words, "_")
    for (i = 1; i <= n; i++) if (module == words[i]) ok = 1
    if (!ok) {
        printf "%s/%s.c: %s: the module is not %s, a word of it, or %s\n", folder[base], base, sym, base, folder[base]
        bad++
    }
}
END {
    if (bad) { printf "%d misnamed globals\n", bad; exit 1 }
    print "every internal global is named by its file or folder"
}'
