#!/bin/sh
# Engine facts live in src/profile/: no other source file names an engine,
# by its word or by an enum constant, outside the option table's words (the
# rows {"word", KVSHARD_...} of src/deploy/options.c). The engines are the
# words of the engine, pp_partition_rule and rank_layout tables, besides
# kvshard itself and the even rule. Usage: engine_names.sh SOURCE_DIR DIR...
set -eu
root=$1
shift
cd "$root"
words=$(grep -ohE '\{"[a-z0-9_]+", KVSHARD_(ENGINE|PP_RULE|RANK_LAYOUT)_[A-Z0-9_]+\}' \
            src/profile/profiles.c src/deploy/options.c |
        sed 's/^{"\([a-z0-9_]*\)".*/\1/' | grep -vxE 'kvshard|even' | sort -u)
if [ -z "$words" ]; then
    echo "no engine words found in the engine and option tables" >&2
    exit 1
fi
names=$(printf '%s|' $words tensorrt)
names=${names%|}
upper=$(printf '%s' "$names" | tr a-z A-Z)
found=$(find "$@" -name '*.[ch]' ! -path 'src/profile/*' | sort |
        xargs grep -nHiE "$names|KVSHARD_(ENGINE|PP_RULE|RANK_LAYOUT)_($upper|KVSHARD)" |
        grep -vE '^src/deploy/options\.c:[0-9]+: *(\{"[a-z0-9_]+", KVSHARD_[A-Z0-9_]+\},? *)+$' ||
        true)
if [ -n "$found" ]; then
    echo "engine names outside src/profile/ (engine facts belong to the profiles):"
    printf '%s\n' "$found"
    exit 1
fi
echo "no engine named outside src/profile/ in $*"
