/* A small read-only YAML tree with source marks, built with libyaml.
 *
 * Every limit of kvshard.h (size, depth, nodes, aliases, anchors) is enforced
 * while the tree is built, duplicate keys are rejected, and aliases share the
 * anchored node instead of copying it. */
#ifndef KVSHARD_YAML_DOC_H
#define KVSHARD_YAML_DOC_H

#include "internal.h"

typedef enum kvs_node_kind { KVS_NODE_SCALAR, KVS_NODE_SEQUENCE, KVS_NODE_MAPPING } kvs_node_kind;

typedef struct kvs_node kvs_node;
struct kvs_node {
    kvs_node_kind kind;
    kvs_value_style style; /* scalars: plain or quoted */
    kvs_mark mark;
    /* Scalar: text length. Sequence: items. Mapping: key/value pairs. */
    size_t count;
    /* Nodes the subtree stands for, aliases expanded: bounds alias bombs. */
    uint64_t weight;
    union {
        const char *text;  /* NUL-terminated; may hold escaped NULs */
        kvs_node **items;  /* mapping: items[2i] key, items[2i + 1] value */
    } u;
};

typedef struct kvs_arena_chunk kvs_arena_chunk;

typedef struct kvs_doc {
    kvshard_allocator alloc;
    kvs_arena_chunk *chunks;
    const kvs_node *root;
    const char *source; /* borrowed from the caller */
} kvs_doc;

/* Parse exactly one document from text. `source` names the text in errors
 * and must outlive the doc. On failure nothing is allocated. */
int kvs_doc_parse(kvs_doc *out, const char *text, size_t len, const char *source,
                  const kvshard_allocator *alloc, kvshard_error *err);
void kvs_doc_free(kvs_doc *doc);

/* Value of `key` in a mapping, NULL when absent or `map` is not a mapping. */
const kvs_node *kvs_map_get(const kvs_node *map, const char *key);
/* A plain null: null, Null, NULL, ~ or nothing. */
bool kvs_node_is_null(const kvs_node *node);
/* A scalar whose text is exactly `s`. */
bool kvs_scalar_is(const kvs_node *node, const char *s);
/* Short description of a node for messages: "a mapping", "the string \"x\"". */
void kvs_node_describe(char *buf, size_t cap, const kvs_node *node);

/* A plain scalar integer in [min, max]. `what` names the value in errors. */
int kvs_node_uint(uint64_t *out, const kvs_doc *doc, const kvs_node *node, const char *what,
                  uint64_t min, uint64_t max, kvshard_error *err);
/* A scalar string (plain or quoted). */
int kvs_node_string(const char **out, size_t *out_len, const kvs_doc *doc, const kvs_node *node,
                    const char *what, kvshard_error *err);
/* A mapping; ETYPE otherwise. */
int kvs_node_expect_mapping(const kvs_doc *doc, const kvs_node *node, const char *what,
                            kvshard_error *err);
/* A sequence; ETYPE otherwise. */
int kvs_node_expect_sequence(const kvs_doc *doc, const kvs_node *node, const char *what,
                             kvshard_error *err);

#endif /* KVSHARD_YAML_DOC_H */
