#!/bin/sh
# No cycle between the objects of the library, and no call up the stage
# order: for each object, the objects whose symbols it uses (nm: U in one,
# defined in another) must never lead back to it, and must belong to its
# own stage or one before it in
#   base < text < model < profile < deploy < plan < explore < output
# (src/README.md). Usage: check_cycles.sh NM OBJECT_DIR, where OBJECT_DIR
# holds the library's objects as src/ holds its sources (STAGE/FILE.c.o).
set -eu
nm_tool=$1
objects_dir=$2
cd "$objects_dir"
find . -name '*.o' | sort | sed 's|^\./||' | xargs "$nm_tool" -A | awk '
BEGIN {
    n_stages = split("base text model profile deploy plan explore output", order, " ")
    for (i = 1; i <= n_stages; i++) rank[order[i]] = i
}
{
    # "stage/object.c.o:0000 T name" or "stage/object.c.o:         U name"
    split($1, where, ":")
    obj = where[1]
    type = $(NF - 1)
    sym = $NF
    if (obj == "") next
    objects[obj] = 1
    if (type == "U") { uses[obj, sym] = 1; used[++n] = obj SUBSEP sym }
    else if (type ~ /^[TDBRVWC]$/) defined[sym] = obj
}
function stage_of(o,    parts) {
    split(o, parts, "/")
    return parts[1]
}
END {
    bad = 0
    for (o in objects) {
        if (!(stage_of(o) in rank)) {
            printf "stage order: %s is in no stage of the order\n", o
            bad = 1
        }
    }
    for (i = 1; i <= n; i++) {
        split(used[i], pair, SUBSEP)
        from = pair[1]; to = defined[pair[2]]
        if (to != "" && to != from && rank[stage_of(to)] > rank[stage_of(from)]) {
            printf "stage order: %s uses %s of %s, a later stage\n", from, pair[2], to
            bad = 1
        }
        if (to != "" && to != from && !((from, to) in edge)) {
            edge[from, to] = 1
            adj[from] = adj[from] " " to
        }
    }
    for (o in objects) state[o] = 0
    for (o in objects) if (state[o] == 0) visit(o, o)
    if (bad) exit 1
    printf "no cycle between the %d objects of the library, and no call up the stage order\n",
        length(objects)
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
