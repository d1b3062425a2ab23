/* The builder of a doc's tape. A front-end reports each node in document
 * order, by the byte offset where it stands: libyaml's events (yaml_doc.c)
 * and the JSON scanner (json_doc.c) build the same tree through it. The
 * builder holds what every front-end shares: the limits of kvshard.h (size,
 * depth, nodes, aliases, anchors) enforced exactly while the tree is built
 * (a document at a limit loads, one past it fails where it goes past), the
 * key checks (duplicate keys, keys that are not scalars; merge keys are
 * refused), and the tag policy (YAML's core tags only, each on its kind of
 * node and fitting its text). Aliases share the anchored subtree. The work
 * is linear in the text, or n log n for the keys of a mapping whose hash
 * index a crafted text fills unevenly: nothing an input holds makes it
 * quadratic. */
#ifndef KVSHARD_TEXT_YAML_BUILD_H
#define KVSHARD_TEXT_YAML_BUILD_H

#include "base/error.h"
#include "text/yaml_tape.h"

typedef struct kvshard__doc_builder kvshard__doc_builder;
/* Reads the whole of doc->text (from doc->start) into the builder. */
typedef int (*kvshard__doc_front)(kvshard__doc_builder *b, const kvshard__doc *doc, void *ctx);
/* Set up *out over the text, run `front`, and finish the tree (an empty
 * document fails); `seed` as kvshard_doc__parse_seeded's, or NULL. `json`
 * makes line breaks JSON's for every mark of the doc. */
int kvshard_build__doc(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, const uint64_t *seed, bool json,
                       kvshard__doc_front front, void *ctx, kvshard_error *err);
/* A scalar at `offset`: plain, its text the `len` bytes there, or quoted,
 * its text the `len` bytes after the quote; or, when `copy` is given, those
 * `len` bytes instead (a value that escapes made differ from the text). */
int kvshard_build__scalar(kvshard__doc_builder *b, size_t offset, bool quoted, const char *copy,
                              size_t len);
/* A mapping or a sequence opening at `offset`, and the end of the open one
 * (its keys checked). */
int kvshard_build__open(kvshard__doc_builder *b, size_t offset, bool mapping);
int kvshard_build__close(kvshard__doc_builder *b);
/* An error at a byte offset of the text, its line and column worked out. */
int kvshard_build__fail(kvshard__doc_builder *b, int code, size_t offset, const char *fmt, ...)
    KVSHARD__PRINTF(4, 5);

/* The nodes only YAML has: tags, anchors and aliases, and scalars whose
 * text a style changed. */
typedef struct kvshard_yaml_build__scalar_at {
    size_t start, end; /* the bytes the scalar spans in the text, quotes included */
    const char *value; /* its value, `len` bytes (escapes and folding applied) */
    size_t len;
    const char *tag;    /* as written, NULL when none */
    const char *anchor; /* NULL when none */
    bool plain;         /* plain style, not quoted or a block */
    bool quoted;        /* single- or double-quoted */
    bool one_line;      /* it starts and ends on one line */
} kvshard_yaml_build__scalar_at;

int kvshard_yaml_build__scalar(kvshard__doc_builder *b, const kvshard_yaml_build__scalar_at *s);
/* A mapping or a sequence opening at `offset`, its tag and anchor as
 * written or NULL. */
int kvshard_yaml_build__open(kvshard__doc_builder *b, size_t offset, bool mapping, const char *tag,
                             const char *anchor);
/* An alias of the anchor `name` at `offset`. */
int kvshard_yaml_build__alias(kvshard__doc_builder *b, const char *name, size_t offset);
/* The error of a front-end that ran out of memory. */
int kvshard_yaml_build__nomem(kvshard__doc_builder *b);

#endif /* KVSHARD_TEXT_YAML_BUILD_H */
