/* How the words of a tape entry are packed, and reading them. For the files
 * of the tape (yaml_tape.c, yaml_keys.c, yaml_build.c) only: its short
 * names stay out of the readers of the tree. */
#ifndef KVSHARD_TEXT_YAML_ENTRY_H
#define KVSHARD_TEXT_YAML_ENTRY_H

#include "text/yaml_tape.h"

#include <string.h>

/* One node in 12 bytes. `word` packs the byte offset where the node stands,
 * the kind and, for a scalar, its form. A document has at most 2^26 bytes
 * and an empty value at its very end stands at offset 2^26 itself, so the
 * offset takes 27 bits; the kind 2, and the form 3: an untagged plain or
 * quoted scalar, or one of the five core tags (kvshard__tag), which decide
 * how the scalar reads. A mapping keeps a flag there instead. `count` is a
 * scalar's bytes of text, or a collection's items or pairs; for an alias
 * used as a key, the hash of the key it names (aliases have no count of
 * their own). `ref` is where a scalar's text is, one past a collection's
 * subtree, or an alias's anchored node. */
typedef kvshard__tape_entry entry;

enum { KIND_SCALAR, KIND_SEQUENCE, KIND_MAPPING, KIND_ALIAS };

#define OFFSET_BITS 27
#define OFFSET_MASK ((1u << OFFSET_BITS) - 1u)
#define KIND_SHIFT 27
#define FORM_SHIFT 29
#define INDEXED_FLAG (1u << FORM_SHIFT) /* a mapping with a key index */
/* The forms of an untagged scalar; a tagged one's form is its tag. */
enum { FORM_PLAIN = 0, FORM_QUOTED = 1 };
/* Scalar text copied into the doc, rather than a span of the source. */
#define COPIED_TEXT 0x80000000u

/* Room for every value a legal document gives: offsets up to its length,
 * spans of its text, and copied strings and tape positions, of which there
 * are fewer than nodes. */
_Static_assert(KVSHARD_MAX_DOCUMENT_BYTES <= OFFSET_MASK, "offsets fit the tape word");
_Static_assert((uint64_t)KVSHARD_MAX_DOCUMENT_BYTES + 1 < COPIED_TEXT, "spans fit `ref`");
_Static_assert(KVSHARD_MAX_NODES < COPIED_TEXT, "copied strings and positions fit `ref`");
_Static_assert(KVSHARD__TAG_FLOAT <= 7, "a tag fits the form's 3 bits");
_Static_assert(KVSHARD__TAG_STR == 2, "tags leave forms 0 and 1 to untagged scalars");

/* 64 entries (768 bytes) a chunk. glibc's malloc first merges its lists of
 * small free blocks, which libyaml keeps filling while it parses, before it
 * serves a request of 1 KiB or more; smaller chunks skip that. 10^6 nodes
 * take some 16,000 chunks. */
#define CHUNK_SHIFT KVSHARD__CHUNK_SHIFT
#define CHUNK_ENTRIES KVSHARD__CHUNK_ENTRIES

static inline const entry *at(const kvshard__doc *doc, uint32_t id)
{
    return &doc->chunks[id >> CHUNK_SHIFT][id & (CHUNK_ENTRIES - 1)];
}

static inline unsigned kind_of(const entry *e)
{
    return (e->word >> KIND_SHIFT) & 3u;
}

static inline unsigned form_of(const entry *e)
{
    return e->word >> FORM_SHIFT;
}

static inline kvshard__tag tag_of_form(unsigned form)
{
    return form <= FORM_QUOTED ? KVSHARD__TAG_NONE : (kvshard__tag)form;
}

/* Quoted, or tagged !!str: a string whatever its text. */
static inline kvshard__value_style style_of_form(unsigned form)
{
    return form == FORM_QUOTED || form == KVSHARD__TAG_STR ? KVSHARD__VALUE_QUOTED
                                                           : KVSHARD__VALUE_PLAIN;
}

/* The text of a scalar entry: a span of the source, or a copy. */
static inline const char *scalar_text(const kvshard__doc *doc, const entry *e)
{
    return e->ref & COPIED_TEXT ? doc->strings[e->ref & ~COPIED_TEXT] : doc->text + e->ref;
}

/* The entry a key at `id` stands for: itself, or the scalar an alias names. */
static inline const entry *key_entry(const kvshard__doc *doc, uint32_t id)
{
    const entry *e = at(doc, id);
    return kind_of(e) == KIND_ALIAS ? at(doc, e->ref) : e;
}

/* Tape position just past the subtree that starts at `id`. */
static inline uint32_t skip(const kvshard__doc *doc, uint32_t id)
{
    const entry *e = at(doc, id);
    unsigned k = kind_of(e);
    return k == KIND_SEQUENCE || k == KIND_MAPPING ? e->ref : id + 1;
}

static inline kvshard__node view(const kvshard__doc *doc, uint32_t id)
{
    const entry *e = at(doc, id);
    kvshard__node n;
    n.offset = e->word & OFFSET_MASK;
    if (kind_of(e) == KIND_ALIAS) {
        id = e->ref;
        e = at(doc, id);
    }
    n.id = id;
    n.count = e->count;
    n.kind = (kvshard__node_kind)kind_of(e);
    n.style = KVSHARD__VALUE_PLAIN;
    n.tag = KVSHARD__TAG_NONE;
    n.text = NULL;
    if (n.kind == KVSHARD__NODE_SCALAR) {
        unsigned form = form_of(e);
        n.style = style_of_form(form);
        n.tag = tag_of_form(form);
        n.text = scalar_text(doc, e);
    }
    return n;
}

/* Nothing, ~, null, Null or NULL: by length first, since every value a
 * model is read from passes through here. */
static inline bool is_null_text(const char *s, size_t len)
{
    switch (len) {
    case 0: return true;
    case 1: return s[0] == '~';
    case 4:
        return memcmp(s, "null", 4) == 0 || memcmp(s, "Null", 4) == 0 || memcmp(s, "NULL", 4) == 0;
    default: return false;
    }
}

#endif /* KVSHARD_TEXT_YAML_ENTRY_H */
