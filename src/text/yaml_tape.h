/* The tape of a parsed document and its reading: a compact read-only tree
 * that yaml_doc.c builds from YAML (libyaml) and json_doc.c from JSON, both
 * through the builder of yaml_build.h.
 *
 * Nodes sit on a tape in document order, 12 bytes each: a collection knows
 * where its subtree ends, so siblings are found by skipping, and a list of
 * scalars is an array. Scalar text points into the source text whenever the
 * value is the text as written, so the source must outlive the tree. Only
 * byte offsets are kept; line and column are worked out when an error needs
 * them (yaml_marks.h). */
#ifndef KVSHARD_TEXT_YAML_TAPE_H
#define KVSHARD_TEXT_YAML_TAPE_H

#include "base/alloc.h"
#include "base/hash.h"
#include "text/scalar.h"

typedef enum kvshard__node_kind {
    KVSHARD__NODE_SCALAR,
    KVSHARD__NODE_SEQUENCE,
    KVSHARD__NODE_MAPPING
} kvshard__node_kind;

/* The core tag written on a scalar, if any. From 2, so that a tape entry
 * keeps a scalar's tag and its quoting in one field of 3 bits (0 and 1 are
 * an untagged plain and an untagged quoted scalar there). */
typedef enum kvshard__tag {
    KVSHARD__TAG_NONE = 0,
    KVSHARD__TAG_STR = 2,
    KVSHARD__TAG_INT,
    KVSHARD__TAG_BOOL,
    KVSHARD__TAG_NULL,
    KVSHARD__TAG_FLOAT
} kvshard__tag;

/* A node as readers see it: a small value, not a pointer into the tree. */
typedef struct kvshard__node {
    uint32_t id;     /* tape position of its content (an alias's target) */
    uint32_t offset; /* byte offset where it stands (an alias's own place) */
    uint32_t count;  /* scalar: bytes of text; sequence: items; mapping: pairs */
    kvshard__node_kind kind;
    /* Scalars: plain reads as a number or boolean, quoted as a string. A core
     * tag decides over the quoting: !!int "4" is plain, !!str 4 quoted. */
    kvshard__value_style style;
    kvshard__tag tag;
    const char *text; /* scalars: `count` bytes, not NUL-terminated */
} kvshard__node;

/* One node in 12 bytes (yaml_entry.h says how its words are packed). */
typedef struct kvshard__tape_entry {
    uint32_t word;
    uint32_t count;
    uint32_t ref;
} kvshard__tape_entry;

/* Tape entries per chunk, and the chunk pointers a doc holds before it
 * allocates a table of them. */
#define KVSHARD__CHUNK_SHIFT 6
#define KVSHARD__CHUNK_ENTRIES (1u << KVSHARD__CHUNK_SHIFT)
#define KVSHARD__FIRST_CHUNKS 8u
/* Bytes of the key index a doc keeps in itself: the first mapping of 33 to
 * 64 keys (a config.json's top level) indexes its keys without an
 * allocation. */
#define KVSHARD__FIRST_INDEX_BYTES 1072u

typedef struct kvshard__arena_chunk kvshard__arena_chunk;
typedef struct kvshard__map_index kvshard__map_index;

typedef struct kvshard__doc {
    kvshard_allocator alloc;
    const char *text; /* the source text, borrowed */
    size_t len;
    size_t start;                 /* bytes of a UTF-8 byte order mark */
    bool json;                    /* read as JSON: lines end at LF, CR and CRLF only */
    const char *source;           /* names the text in errors; borrowed */
    kvshard__tape_entry **chunks; /* fixed-size chunks: growth never copies */
    size_t chunk_count;
    uint32_t size;               /* tape entries in use */
    kvshard__arena_chunk *arena; /* copied scalar text, anchor names */
    const char **strings;        /* copied scalar text by number */
    uint32_t string_count;
    uint32_t string_cap;
    kvshard__map_index *indexes; /* key indexes of large mappings */
    kvshard__hash_key hash_key;  /* drawn per document, before the first index or anchor */
    bool keyed;
    bool first_index_used;
    /* A config's few dozen nodes need no allocation for the tape: its first
     * chunk and the first chunk pointers are here, and its first index. */
    kvshard__tape_entry *first_chunks[KVSHARD__FIRST_CHUNKS];
    kvshard__tape_entry first_chunk[KVSHARD__CHUNK_ENTRIES];
    _Alignas(8) unsigned char first_index[KVSHARD__FIRST_INDEX_BYTES];
} kvshard__doc;

/* A copy of `len` bytes of `s`, NUL-terminated, kept by the doc until
 * kvshard_tape__doc_free(): text a scalar holds that differs from the source,
 * and anchor names. NULL without memory. */
char *kvshard_yaml_tape__copy(kvshard__doc *doc, const char *s, size_t len);
/* Everything the doc holds; the text and the source stay the caller's. */
void kvshard_tape__doc_free(kvshard__doc *doc);

/* The root node. */
kvshard__node kvshard_tape__doc_root(const kvshard__doc *doc);

/* Children of a sequence, or keys and values of a mapping alternately. */
typedef struct kvshard__iter {
    uint32_t next; /* tape position of the next child */
    uint32_t left; /* children still to come */
} kvshard__iter;

kvshard__iter kvshard_tape__iter_begin(const kvshard__doc *doc, const kvshard__node *parent);
bool kvshard_tape__iter_next(const kvshard__doc *doc, kvshard__iter *it, kvshard__node *out);
/* A key of a mapping (keys are scalars) and where its value stands. */
typedef struct kvshard__key_ref {
    const char *text;
    uint32_t len;
    uint32_t value_at; /* for kvshard__doc_node() */
} kvshard__key_ref;

/* The first `cap` keys of a mapping in order, without making a node for any
 * value: a reader that wants a few of many values looks at every key in one
 * pass. Returns how many were written. */
uint32_t kvshard_tape__map_keys(const kvshard__doc *doc, const kvshard__node *map,
                                kvshard__key_ref *out, uint32_t cap);
/* The value at a place kvshard_tape__map_keys() gave, into *out; false, with
 * *out unspecified, when it is null (kvshard_tape__node_is_null). */
bool kvshard_tape__doc_value(kvshard__node *out, const kvshard__doc *doc, uint32_t at);
/* Item `index` of a sequence: O(1) for a list of scalars, else O(index). */
kvshard__node kvshard_tape__seq_item(const kvshard__doc *doc, const kvshard__node *seq,
                                     uint32_t index);

/* The value of `key` in a mapping; false when absent or `map` is not one. */
bool kvshard_tape__map_get(const kvshard__doc *doc, const kvshard__node *map, const char *key,
                      kvshard__node *out);
/* Whether a mapping's keys crowded its hash table, so that it has a sorted
 * index instead (for tests). */
bool kvshard_tape__map_sorted(const kvshard__doc *doc, const kvshard__node *map);

/* A plain null (null, Null, NULL, ~ or nothing) or a !!null. */
bool kvshard_tape__node_is_null(const kvshard__node *node);
/* A scalar whose text is exactly `s`. */
bool kvshard_tape__scalar_is(const kvshard__node *node, const char *s);
/* Short, escaped description of a node for messages: "a mapping", "the
 * string \"x\"", "1.5". */
void kvshard_tape__node_describe(char *buf, size_t cap, const kvshard__node *node);

/* A plain integer in [min, max] (no leading zeros, no !!float or !!str).
 * `what` names the value in errors. */
int kvshard_tape__node_uint(uint64_t *out, const kvshard__doc *doc, const kvshard__node *node,
                       const char *what, uint64_t min, uint64_t max, kvshard_error *err);
/* A scalar string (plain or quoted), not null. */
int kvshard_tape__node_string(const char **out, size_t *out_len, const kvshard__doc *doc,
                         const kvshard__node *node, const char *what, kvshard_error *err);
/* A mapping or a sequence; ETYPE otherwise. */
int kvshard_tape__node_expect(const kvshard__doc *doc, const kvshard__node *node,
                         kvshard__node_kind kind, const char *what, kvshard_error *err);

#endif /* KVSHARD_TEXT_YAML_TAPE_H */
