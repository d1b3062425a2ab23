/* Whether two docs hold the same tree: every node's kind, count, offset,
 * style and tag, and every scalar's text bytes. Written once for the tests
 * and the fuzz target that hold the JSON front-end against libyaml's path.
 * Recursion is bounded by KVSHARD_MAX_DEPTH. On a difference, `why` says
 * where. */
#ifndef KVSHARD_TESTS_SAME_TREE_H
#define KVSHARD_TESTS_SAME_TREE_H

#include <stdio.h>
#include <string.h>

#include "text/yaml_doc.h"

static bool same_tree_node(const kvshard__doc *a, const kvshard__node *x, const kvshard__doc *b,
                           const kvshard__node *y, char *why, size_t cap)
{
    if (x->kind != y->kind || x->count != y->count || x->offset != y->offset ||
        x->style != y->style || x->tag != y->tag ||
        (x->kind == KVSHARD__NODE_SCALAR && memcmp(x->text, y->text, x->count) != 0)) {
        snprintf(why, cap,
                 "nodes at offsets %u and %u differ: kind %d / %d, count %u / %u, style %d / %d, "
                 "tag %d / %d",
                 x->offset, y->offset, (int)x->kind, (int)y->kind, x->count, y->count,
                 (int)x->style, (int)y->style, (int)x->tag, (int)y->tag);
        return false;
    }
    if (x->kind == KVSHARD__NODE_SCALAR)
        return true;
    kvshard__iter i = kvshard_tape__iter_begin(a, x), j = kvshard_tape__iter_begin(b, y);
    kvshard__node cx, cy;
    while (kvshard_tape__iter_next(a, &i, &cx)) {
        if (!kvshard_tape__iter_next(b, &j, &cy)) {
            snprintf(why, cap, "the collection at offset %u has fewer children", y->offset);
            return false;
        }
        if (!same_tree_node(a, &cx, b, &cy, why, cap))
            return false;
    }
    if (kvshard_tape__iter_next(b, &j, &cy)) {
        snprintf(why, cap, "the collection at offset %u has more children", y->offset);
        return false;
    }
    return true;
}

static inline bool same_tree(const kvshard__doc *a, const kvshard__doc *b, char *why, size_t cap)
{
    kvshard__node x = kvshard_tape__doc_root(a), y = kvshard_tape__doc_root(b);
    if (a->size != b->size) {
        snprintf(why, cap, "the tapes hold %u and %u entries", a->size, b->size);
        return false;
    }
    return same_tree_node(a, &x, b, &y, why, cap);
}

#endif /* KVSHARD_TESTS_SAME_TREE_H */
