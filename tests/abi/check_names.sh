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
"$nm_tool" -A --defined-only -g "$archive" | while IFS= read -r line; do
    member=${line#*:}
    member=${member%%:*}
    sym=${line##* }
    base=${member%.c.o}
    file=$(ls "$src"/src/*/"$base".c 2>/dev/null | head -n 1)
    if [ -z "$file" ]; then
        echo "$member: no source file src/*/$base.c"; echo bad; continue
    fi
    folder=$(basename "$(dirname "$file")")
    case $sym in
        kvshard__*) module= ;;
        kvshard_*__*) module=${sym#kvshard_}; module=${module%%__*} ;;
        kvshard_*) continue ;;
        *) echo "$folder/$base.c: $sym is not named kvshard_..."; echo bad; continue ;;
    esac
    ok=no
    for word in "$base" "$folder" $(echo "$base" | tr '_' ' '); do
        [ "$module" = "$word" ] && ok=yes
    done
    if [ $ok = no ]; then
        echo "$folder/$base.c: $sym: the module is not $base, a word of it, or $folder"; echo bad
    fi
done | awk '/^bad$/ { n++; next } { print } END { if (n) { printf "%d misnamed globals\n", n; exit 1 } print "every internal global is named by its file or folder" }'
