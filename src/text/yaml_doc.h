/* A small read-only YAML tree with source marks, built with libyaml.
 *
 * Every limit of kvshard.h (size, depth, nodes, aliases, anchors) is enforced
 * while the tree is built, duplicate keys are rejected, and aliases share the
 * anchored node instead of copying it. */
#ifndef KVSHARD_YAML_DOC_H
#define KVSHARD_YAML_DOC_H

#include "base/alloc.h"
#include "text/scalar.h"

typedef enum kvshard__node_kind {
    KVSHARD__NODE_SCALAR,
    KVSHARD__NODE_SEQUENCE,
    KVSHARD__NODE_MAPPING
} kvshard__node_kind;

typedef struct kvshard__node kvshard__node;
struct kvshard__node {
    kvshard__node_kind kind;
    kvshard__value_style style; /* scalars: plain or quoted */
    kvshard__mark mark;
    /* Scalar: text length. Sequence: items. Mapping: key/value pairs. */
    size_t count;
    /* Nodes the subtree stands for, aliases expanded: bounds alias bombs. */
    uint64_t weight;
    union {
        const char *text;      /* NUL-terminated; may hold escaped NULs */
        kvshard__node **items; /* mapping: items[2i] key, items[2i + 1] value */
    } u;
};

typedef struct kvshard__arena_chunk kvshard__arena_chunk;

typedef struct kvshard__doc {
    kvshard_allocator alloc;
    kvshard__arena_chunk *chunks;
    const kvshard__node *root;
    const char *source; /* borrowed from the caller */
} kvshard__doc;

/* Parse exactly one document from text. `source` names the text in errors
 * and must outlive the doc. On failure nothing is allocated. */
int kvshard__doc_parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, kvshard_error *err);
void kvshard__doc_free(kvshard__doc *doc);

/* Value of `key` in a mapping, NULL when absent or `map` is not a mapping. */
const kvshard__node *kvshard__map_get(const kvshard__node *map, const char *key);
/* A plain null: null, Null, NULL, ~ or nothing. */
bool kvshard__node_is_null(const kvshard__node *node);
/* A scalar whose text is exactly `s`. */
bool kvshard__scalar_is(const kvshard__node *node, const char *s);
/* Short description of a node for messages: "a mapping", "the string \"x\"". */
void kvshard__node_describe(char *buf, size_t cap, const kvshard__node *node);

/* A plain scalar integer in [min, max]. `what` names the value in errors. */
int kvshard__node_uint(uint64_t *out, const kvshard__doc *doc, const kvshard__node *node,
                       const char *what, uint64_t min, uint64_t max, kvshard_error *err);
/* A scalar string (plain or quoted). */
int kvshard__node_string(const char **out, size_t *out_len, const kvshard__doc *doc,
                         const kvshard__node *node, const char *what, kvshard_error *err);
/* A mapping; ETYPE otherwise. */
int kvshard__node_expect_mapping(const kvshard__doc *doc, const kvshard__node *node,
                                 const char *what, kvshard_error *err);
/* A sequence; ETYPE otherwise. */
int kvshard__node_expect_sequence(const kvshard__doc *doc, const kvshard__node *node,
                                  const char *what, kvshard_error *err);

#endif /* KVSHARD_YAML_DOC_H */
