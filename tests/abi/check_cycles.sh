#!/bin/sh
# No cycle between the objects of the library: for each object of the
# archive, the objects whose symbols it uses (nm: U in one, defined in
# another) must never lead back to it. Usage: check_cycles.sh NM ARCHIVE
set -eu
nm_tool=$1
archive=$2
"$nm_tool" -A "$archive" | awk '
{
    # "archive:object.o:0000 T name" or "archive:object.o:         U name"
    split($1, where, ":")
    obj = where[2]
    type = $(NF - 1)
    sym = $NF
    if (obj == "") next
    objects[obj] = 1
    if (type == "U") { uses[obj, sym] = 1; used[++n] = obj SUBSEP sym }
    else if (type ~ /^[TDBRVWC]$/) defined[sym] = obj
}
END {
    for (i = 1; i <= n; i++) {
        split(used[i], pair, SUBSEP)
        from = pair[1]; to = defined[pair[2]]
        if (to != "" && to != from && !((from, to) in edge)) {
            edge[from, to] = 1
            adj[from] = adj[from] " " to
        }
    }
    bad = 0
    for (o in objects) state[o] = 0
    for (o in objects) if (state[o] == 0) visit(o, o)
    if (bad) exit 1
    printf "no cycle between the %d objects of the archive\n", length(objects)
}
function visit(o, path,    k, parts, next_obj) {
    state[o] = 1
    split(adj[o], parts, " ")
    for (k in parts) {
        next_obj = parts[k]
        if (next_obj == "") continue
        if (state[next_obj] == 1) { printf "cycle: %s -> %s\n", path, next_obj; bad = 1 }
        else if (state[next_obj] == 0) visit(next_obj, path " -> " next_obj)
    }
    state[o] = 2
}'
