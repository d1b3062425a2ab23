/* The builder: a front-end's nodes onto the tape, under kvshard's reading
 * limits, with the key checks and the tag policy. */
#include "text/yaml_build.h"

#include "text/yaml_keys.h"
#include "text/yaml_marks.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

typedef struct frame {
    uint32_t id;        /* the open collection's tape position */
    uint32_t children;  /* nodes attached so far (keys and values) */
    bool mapping;       /* a mapping, not a sequence */
    uint64_t weight_at; /* b->weight before the collection began */
    const char *anchor; /* arena copy, NULL when none */
} frame;

typedef struct anchor_def {
    const char *name;
    uint64_t weight; /* nodes its subtree stands for, aliases expanded */
    uint32_t id;
    uint32_t name_hash;
    uint32_t key_hash; /* of a scalar's text, once an alias uses it as a key */
    bool key_hashed;
} anchor_def;

/* Anchors are found by the hash of their name in a table of twice as many
 * slots as there can be anchors, each the anchor's number plus one: an
 * alias costs a hash of its name and a probe or two, however many anchors
 * there are. */
#define ANCHOR_SLOTS (2u * KVSHARD_MAX_ANCHORS)
_Static_assert((ANCHOR_SLOTS & (ANCHOR_SLOTS - 1)) == 0 && KVSHARD_MAX_ANCHORS < UINT16_MAX,
               "anchor slots are a power of two and hold an anchor's number");

struct kvshard__doc_builder {
    kvshard__doc *doc;
    kvshard_error *err;
    frame frames[KVSHARD_MAX_DEPTH];
    size_t depth;
    anchor_def *anchors;    /* KVSHARD_MAX_ANCHORS of them, allocated at the first */
    uint16_t *anchor_slots; /* ANCHOR_SLOTS, in the same allocation */
    size_t anchor_count;
    const uint64_t *seed; /* the hash key's seed, when the caller gives one */
    uint64_t weight;      /* nodes so far, aliases expanded */
    bool root_done;
};
typedef kvshard__doc_builder builder;

static int fail_at(builder *b, int code, size_t offset, const char *fmt, ...) KVSHARD__PRINTF(4, 5);

static int vfail_at(builder *b, int code, size_t offset, const char *fmt, va_list ap)
{
    if (!b->err || b->err->code != KVSHARD_OK)
        return code;
    kvshard__mark m = kvshard_marks__mark(b->doc, offset);
    return kvshard_error__vfail(b->err, code, b->doc->source, m, fmt, ap);
}

static int fail_at(builder *b, int code, size_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(b, code, offset, fmt, ap);
    va_end(ap);
    return rc;
}

static int fail_nomem(builder *b)
{
    return kvshard_error__fail(b->err, KVSHARD_ENOMEM, b->doc->source, kvshard_error__no_mark,
                         "out of memory building the tree");
}

/* A new chunk for entry `id`, the first of its chunk. */
static int add_chunk(builder *b, uint32_t id)
{
    kvshard__doc *d = b->doc;
    size_t c = id >> CHUNK_SHIFT;
    if (c == d->chunk_count) {
        /* The table of chunk pointers doubles; the chunks never move. */
        size_t cap = d->chunk_count * 2;
        kvshard__tape_entry **grown = kvshard_alloc__bytes(&d->alloc, cap, sizeof *grown);
        if (!grown)
            return fail_nomem(b);
        memcpy(grown, d->chunks, d->chunk_count * sizeof *grown);
        for (size_t k = d->chunk_count; k < cap; k++)
            grown[k] = NULL;
        if (d->chunks != d->first_chunks)
            kvshard_alloc__free(&d->alloc, d->chunks);
        d->chunks = grown;
        d->chunk_count = cap;
    }
    if (!d->chunks[c] &&
        !(d->chunks[c] = kvshard_alloc__bytes(&d->alloc, CHUNK_ENTRIES, sizeof(entry))))
        return fail_nomem(b);
    return KVSHARD_OK;
}

static inline int append(builder *b, uint32_t *out_id, size_t offset, unsigned kind, unsigned form,
                         uint32_t count, uint32_t ref)
{
    kvshard__doc *d = b->doc;
    uint32_t id = d->size;
    int rc;
    if ((id & (CHUNK_ENTRIES - 1)) == 0 && (rc = add_chunk(b, id)) != 0)
        return rc;
    entry *e = &d->chunks[id >> CHUNK_SHIFT][id & (CHUNK_ENTRIES - 1)];
    e->word = (uint32_t)offset | kind << KIND_SHIFT | form << FORM_SHIFT;
    e->count = count;
    e->ref = ref;
    d->size++;
    *out_id = id;
    return KVSHARD_OK;
}

static entry *entry_mut(builder *b, uint32_t id)
{
    return &b->doc->chunks[id >> CHUNK_SHIFT][id & (CHUNK_ENTRIES - 1)];
}

static int add_weight(builder *b, uint64_t w, size_t offset)
{
    b->weight += w;
    if (b->weight > KVSHARD_MAX_NODES)
        return fail_at(b, KVSHARD_ELIMIT, offset,
                       "document has more than %u nodes (aliases counted as what they stand "
                       "for; KVSHARD_MAX_NODES)",
                       KVSHARD_MAX_NODES);
    return KVSHARD_OK;
}

/* Count a finished node as a child of the open collection. */
static void attach(builder *b)
{
    if (b->depth > 0)
        b->frames[b->depth - 1].children++;
    else
        b->root_done = true;
}

/* Whether the next node of the open collection is a mapping key. */
static bool at_key(const builder *b)
{
    if (b->depth == 0)
        return false;
    const frame *f = &b->frames[b->depth - 1];
    return f->mapping && f->children % 2 == 0;
}

/* The doc's hash key, drawn at the first index or anchor. */
static void ensure_keyed(builder *b)
{
    kvshard_yaml_keys__draw(b->doc, b->seed);
}

static anchor_def *find_anchor(const builder *b, const char *name, uint32_t hash)
{
    if (!b->anchors)
        return NULL;
    for (uint32_t s = hash & (ANCHOR_SLOTS - 1); b->anchor_slots[s];
         s = (s + 1) & (ANCHOR_SLOTS - 1)) {
        anchor_def *a = &b->anchors[b->anchor_slots[s] - 1];
        if (a->name_hash == hash && strcmp(a->name, name) == 0)
            return a;
    }
    return NULL;
}

static uint32_t name_hash(builder *b, const char *name)
{
    ensure_keyed(b);
    return kvshard_hash__of(&b->doc->hash_key, name, strlen(name));
}

static int register_anchor(builder *b, const char *name, uint32_t id, uint64_t weight,
                           size_t offset)
{
    if (!name)
        return KVSHARD_OK;
    uint32_t hash = name_hash(b, name);
    anchor_def *old = find_anchor(b, name, hash);
    if (old) {
        /* YAML lets a later anchor shadow an earlier one. */
        old->id = id;
        old->weight = weight;
        old->key_hashed = false;
        return KVSHARD_OK;
    }
    if (b->anchor_count == KVSHARD_MAX_ANCHORS)
        return fail_at(b, KVSHARD_ELIMIT, offset, "more than %u anchors (KVSHARD_MAX_ANCHORS)",
                       KVSHARD_MAX_ANCHORS);
    if (!b->anchors) {
        size_t bytes = KVSHARD_MAX_ANCHORS * sizeof *b->anchors + ANCHOR_SLOTS * sizeof(uint16_t);
        if (!(b->anchors = kvshard_alloc__bytes(&b->doc->alloc, 1, bytes)))
            return fail_nomem(b);
        b->anchor_slots = (uint16_t *)(void *)(b->anchors + KVSHARD_MAX_ANCHORS);
        memset(b->anchor_slots, 0, ANCHOR_SLOTS * sizeof(uint16_t));
    }
    anchor_def a = {name, weight, id, hash, 0, false};
    b->anchors[b->anchor_count++] = a;
    uint32_t s = hash & (ANCHOR_SLOTS - 1);
    while (b->anchor_slots[s])
        s = (s + 1) & (ANCHOR_SLOTS - 1);
    b->anchor_slots[s] = (uint16_t)b->anchor_count;
    return KVSHARD_OK;
}

static int copy_anchor(builder *b, const char *anchor, const char **out)
{
    *out = NULL;
    if (!anchor)
        return KVSHARD_OK;
    *out = kvshard_yaml_tape__copy(b->doc, anchor, strlen(anchor));
    return *out ? KVSHARD_OK : fail_nomem(b);
}

/* What a node of `kind` is called in messages. */
static const char *kind_name(unsigned kind)
{
    return kind == KIND_MAPPING ? "a mapping" : kind == KIND_SEQUENCE ? "a list" : "a scalar";
}

/* The core tag a tag names: a scalar's !!str, !!int, !!bool, !!null and
 * !!float, and the non-specific "!" (a string); a list's !!seq and a
 * mapping's !!map. A core tag on the other kind of node is a type error, as
 * a scalar tag that does not fit its text is (check_tag_fits): `!!seq` on a
 * mapping says the text is something it is not. Any other tag is one
 * kvshard does not read. `text` is a scalar's value, for the message. */
static int resolve_tag(builder *b, const char *t, unsigned kind, const char *text, size_t len,
                       size_t offset, kvshard__tag *out)
{
    static const struct {
        const char *tag;
        kvshard__tag core;
        unsigned kind;
    } core[] = {
        {YAML_STR_TAG, KVSHARD__TAG_STR, KIND_SCALAR},
        {"!", KVSHARD__TAG_STR, KIND_SCALAR},
        {YAML_INT_TAG, KVSHARD__TAG_INT, KIND_SCALAR},
        {YAML_BOOL_TAG, KVSHARD__TAG_BOOL, KIND_SCALAR},
        {YAML_NULL_TAG, KVSHARD__TAG_NULL, KIND_SCALAR},
        {YAML_FLOAT_TAG, KVSHARD__TAG_FLOAT, KIND_SCALAR},
        {YAML_SEQ_TAG, KVSHARD__TAG_NONE, KIND_SEQUENCE},
        {YAML_MAP_TAG, KVSHARD__TAG_NONE, KIND_MAPPING},
    };
    *out = KVSHARD__TAG_NONE;
    if (!t)
        return KVSHARD_OK;
    const char *yaml = "tag:yaml.org,2002:";
    size_t skip_prefix = strncmp(t, yaml, strlen(yaml)) == 0 ? strlen(yaml) : 0;
    char shown[64];
    kvshard_error__excerpt(shown, sizeof shown, t + skip_prefix, strlen(t + skip_prefix), 40);
    const char *bang = skip_prefix ? "!!" : "";
    for (size_t i = 0; i < sizeof core / sizeof core[0]; i++) {
        if (strcmp(t, core[i].tag) != 0)
            continue;
        if (core[i].kind == kind) {
            *out = core[i].core;
            return KVSHARD_OK;
        }
        if (!skip_prefix)
            break; /* the non-specific "!" on a collection: not read */
        if (kind == KIND_SCALAR) {
            char value[64];
            kvshard_error__excerpt(value, sizeof value, text, len, 32);
            return fail_at(b, KVSHARD_ETYPE, offset,
                           "the tag %s%s does not fit the value \"%s\": it tags %s", bang, shown,
                           value, kind_name(core[i].kind));
        }
        return fail_at(b, KVSHARD_ETYPE, offset,
                       "the tag %s%s does not fit %s: it tags %s, and %s takes %s", bang, shown,
                       kind_name(kind), kind_name(core[i].kind), kind_name(kind),
                       kind == KIND_MAPPING ? "!!map" : "!!seq");
    }
    return fail_at(b, KVSHARD_EUNSUPPORTED, offset,
                   "the tag %s%s is not one kvshard reads on %s (only YAML's core tags: !!str, "
                   "!!int, !!bool, !!null, !!float and ! on scalars, !!seq on lists, !!map on "
                   "mappings)",
                   bang, shown, kind_name(kind));
}

static bool is_bool_text(const char *s, size_t len)
{
    return kvshard_text__is(s, len, "true") || kvshard_text__is(s, len, "false") ||
           kvshard_text__is(s, len, "True") || kvshard_text__is(s, len, "False") ||
           kvshard_text__is(s, len, "TRUE") || kvshard_text__is(s, len, "FALSE");
}

/* A decimal number as YAML's !!float reads it: [-+]digits[.digits][e[-+]digits],
 * or .inf / .nan forms. */
static bool is_float_text(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    if (kvshard_text__is(s + i, len - i, ".inf") || kvshard_text__is(s + i, len - i, ".Inf") ||
        kvshard_text__is(s + i, len - i, ".INF"))
        return true;
    if (i == 0 && (kvshard_text__is(s, len, ".nan") || kvshard_text__is(s, len, ".NaN") ||
                   kvshard_text__is(s, len, ".NAN")))
        return true;
    size_t digits = 0;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
        i++;
        digits++;
    }
    if (i < len && s[i] == '.') {
        i++;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            i++;
            digits++;
        }
    }
    if (digits == 0)
        return false;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+'))
            i++;
        if (!kvshard_scalar__all_digits(s + i, len - i))
            return false;
        return true;
    }
    return i == len;
}

/* A core tag must fit its scalar: `!!null 4` or `!!int abc` would otherwise
 * be read as something the text does not say. */
static int check_tag_fits(builder *b, kvshard__tag tag, const char *s, size_t len, size_t offset)
{
    bool fits = true;
    const char *name = "";
    switch (tag) {
    case KVSHARD__TAG_NULL:
        fits = is_null_text(s, len);
        name = "!!null";
        break;
    case KVSHARD__TAG_BOOL:
        fits = is_bool_text(s, len);
        name = "!!bool";
        break;
    case KVSHARD__TAG_INT: {
        uint64_t v;
        fits = kvshard_scalar__scan_uint(&v, s, len) != KVSHARD__INT_NOT_INTEGER;
        name = "!!int";
        break;
    }
    case KVSHARD__TAG_FLOAT:
        fits = is_float_text(s, len);
        name = "!!float";
        break;
    case KVSHARD__TAG_NONE:
    case KVSHARD__TAG_STR:
    default: break;
    }
    if (fits)
        return KVSHARD_OK;
    char shown[64];
    kvshard_error__excerpt(shown, sizeof shown, s, len, 32);
    return fail_at(b, KVSHARD_ETYPE, offset, "the tag %s does not fit the value \"%s\"", name,
                   shown);
}

static int add_string(builder *b, const char *s, size_t len, uint32_t *out_ref)
{
    kvshard__doc *d = b->doc;
    if (d->string_count == d->string_cap) {
        uint32_t cap = d->string_cap ? d->string_cap * 2 : 16;
        const char **grown = kvshard_alloc__bytes(&d->alloc, cap, sizeof *grown);
        if (!grown)
            return fail_nomem(b);
        if (d->string_count)
            memcpy(grown, d->strings, d->string_count * sizeof *grown);
        kvshard_alloc__free(&d->alloc, d->strings);
        d->strings = grown;
        d->string_cap = cap;
    }
    const char *copy = kvshard_yaml_tape__copy(d, s, len);
    if (!copy)
        return fail_nomem(b);
    d->strings[d->string_count] = copy;
    *out_ref = COPIED_TEXT | d->string_count++;
    return KVSHARD_OK;
}

/* Whether `len` bytes at `a` and `b` are the same. Most config scalars are
 * short: up to 16 bytes are compared byte by byte or with two overlapping
 * 8-byte reads of each, which costs less than a call to memcmp. No read
 * passes either end. */
static inline bool same_bytes(const char *a, const char *b, size_t len)
{
    if (len < 8) {
        for (size_t i = 0; i < len; i++) {
            if (a[i] != b[i])
                return false;
        }
        return true;
    }
    if (len <= 16) {
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, a, 8);
        memcpy(&b0, b, 8);
        memcpy(&a1, a + len - 8, 8);
        memcpy(&b1, b + len - 8, 8);
        return ((a0 ^ b0) | (a1 ^ b1)) == 0;
    }
    return memcmp(a, b, len) == 0;
}

/* The tape entry of a scalar whose weight is counted: its text the span of
 * the source at `ref`, or, when `copy` is given, a copy of `copy` (a value
 * that escapes or folding made differ from the text as written). */
static int store_scalar(builder *b, uint32_t *id, size_t start, unsigned form, const char *copy,
                        size_t len, uint32_t ref)
{
    int rc;
    if (copy) {
        if (memchr(copy, '\0', len))
            return fail_at(b, KVSHARD_ETYPE, start,
                           "a string holds a NUL character (\\0), which no config value may");
        if ((rc = add_string(b, copy, len, &ref)) != 0)
            return rc;
    }
    return append(b, id, start, KIND_SCALAR, form, (uint32_t)len, ref);
}

int kvshard_yaml_build__scalar(kvshard__doc_builder *b, const kvshard_yaml_build__scalar_at *s)
{
    const kvshard__doc *d = b->doc;
    size_t start = s->start, end = s->end;
    const char *value = s->value;
    /* At most 3/2 of the text (an escape of 2 bytes gives a character of 3):
     * below 2^27, as every length on the tape. */
    size_t len = s->len;
    int rc = add_weight(b, 1, start);
    if (rc)
        return rc;
    kvshard__tag tag = KVSHARD__TAG_NONE;
    if (s->tag && (rc = resolve_tag(b, s->tag, KIND_SCALAR, value, len, start, &tag)) != 0)
        return rc;
    bool plain_style = s->plain;
    if (len == 2 && value[0] == '<' && value[1] == '<' && plain_style && tag == KVSHARD__TAG_NONE &&
        at_key(b))
        return fail_at(b, KVSHARD_EUNSUPPORTED, start,
                       "merge keys (<<) are not read by kvshard: write the merged keys out");
    if (tag != KVSHARD__TAG_NONE && (rc = check_tag_fits(b, tag, value, len, start)) != 0)
        return rc;
    /* A core tag decides how the scalar reads: !!int "4" is a number and
     * !!str 4 a string. Otherwise quoting does. The form says which. */
    unsigned form = tag != KVSHARD__TAG_NONE ? (unsigned)tag
                    : plain_style            ? FORM_PLAIN
                                             : FORM_QUOTED;
    /* Point at the source when the value is the text as written (nearly all
     * of JSON and plain YAML); copy escaped and folded scalars. */
    uint32_t ref = 0;
    const char *copy = NULL;
    const char *raw = d->text + start;
    size_t raw_len = end >= start ? end - start : 0;
    bool quoted_span = s->quoted && raw_len == len + 2 && same_bytes(raw + 1, value, len);
    /* A plain scalar on one line is its text as written: only folding
     * across lines changes a plain scalar. libyaml refuses a NUL byte in the
     * text itself, so a value that is a span of the text holds none; only
     * an escape (\0) in a copy can. */
    if (plain_style && raw_len == len && (s->one_line || same_bytes(raw, value, len))) {
        ref = (uint32_t)start;
    } else if (quoted_span) {
        ref = (uint32_t)start + 1;
    } else {
        copy = value;
    }
    uint32_t id = 0; /* set by store_scalar on success */
    if ((rc = store_scalar(b, &id, start, form, copy, len, ref)) != 0)
        return rc;
    if (s->anchor) {
        const char *anchor;
        if ((rc = copy_anchor(b, s->anchor, &anchor)) != 0 ||
            (rc = register_anchor(b, anchor, id, 1, start)) != 0)
            return rc;
    }
    attach(b);
    return KVSHARD_OK;
}

static int check_depth(builder *b, size_t start)
{
    if (b->depth == KVSHARD_MAX_DEPTH)
        return fail_at(b, KVSHARD_ELIMIT, start,
                       "nesting deeper than %u levels (KVSHARD_MAX_DEPTH)", KVSHARD_MAX_DEPTH);
    return KVSHARD_OK;
}

/* Open a collection of `kind` at `start` (its depth checked), with no
 * anchor as yet. */
static int open_frame(builder *b, size_t start, unsigned kind)
{
    frame *f = &b->frames[b->depth];
    f->weight_at = b->weight;
    f->children = 0;
    f->mapping = kind == KIND_MAPPING;
    f->anchor = NULL;
    int rc;
    if ((rc = add_weight(b, 1, start)) != 0 || (rc = append(b, &f->id, start, kind, 0, 0, 0)) != 0)
        return rc;
    b->depth++;
    return KVSHARD_OK;
}

int kvshard_yaml_build__open(kvshard__doc_builder *b, size_t offset, bool mapping, const char *tag,
                             const char *anchor)
{
    unsigned kind = mapping ? KIND_MAPPING : KIND_SEQUENCE;
    int rc;
    if ((rc = check_depth(b, offset)) != 0)
        return rc;
    kvshard__tag resolved;
    if (tag && (rc = resolve_tag(b, tag, kind, NULL, 0, offset, &resolved)) != 0)
        return rc;
    if ((rc = open_frame(b, offset, kind)) != 0)
        return rc;
    return copy_anchor(b, anchor, &b->frames[b->depth - 1].anchor);
}

/* The key at `pos` repeats the one at `first_pos`. */
static int duplicate_key(builder *b, uint32_t pos, uint32_t first_pos)
{
    kvshard__node dup = view(b->doc, pos), first = view(b->doc, first_pos);
    kvshard__mark m = kvshard_marks__mark(b->doc, first.offset);
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, dup.text, dup.count, 64);
    return fail_at(b, KVSHARD_EDUPKEY, dup.offset,
                   "duplicate key \"%s\" (first at line %d, column %d)", shown, m.line, m.column);
}

static int key_not_scalar(builder *b, uint32_t pos)
{
    kvshard__node key = view(b->doc, pos);
    return fail_at(b, KVSHARD_ETYPE, key.offset, "mapping keys must be scalars");
}

/* A walk of a small mapping gives up, for an index, past SMALL_STEPS
 * earlier keys looked at; keys longer than SHORT_KEY bytes are compared by
 * their hashes first. A walk then reads a few hundred bytes at most, and
 * each key's own text once. */
#define SMALL_STEPS 64u
#define SHORT_KEY 32u
#define NEEDS_INDEX 1

/* The hash of key i of a walk, worked out once. */
static uint32_t walk_hash(const kvshard__doc *d, uint32_t *hashes, uint32_t *hashed,
                          const uint32_t *positions, unsigned i)
{
    if (!(*hashed >> i & 1u)) {
        hashes[i] = key_hash_at(d, positions[i]);
        *hashed |= 1u << i;
    }
    return hashes[i];
}

/* Keys chained by key_sig(): a key's text is compared only with the earlier
 * keys of its signature. last[sig] is the latest key of a signature whose
 * bit `seen` has, and before[i] the one before key i (none: NO_KEY).
 * KVSHARD_OK, an error, or NEEDS_INDEX. */
static int walk_small(builder *b, uint32_t map_id, uint32_t pairs)
{
    kvshard__doc *d = b->doc;
    enum { NO_KEY = 0xFF };
    uint64_t seen = 0;
    uint32_t hashed = 0; /* bit i: hashes[i] is known */
    uint8_t last[64], before[INDEX_MIN_PAIRS - 1];
    uint32_t positions[INDEX_MIN_PAIRS - 1], hashes[INDEX_MIN_PAIRS - 1];
    uint32_t key_pos = map_id + 1, steps = 0;
    for (uint32_t i = 0; i < pairs; i++) {
        const entry *k = key_entry(d, key_pos);
        if (kind_of(k) != KIND_SCALAR)
            return key_not_scalar(b, key_pos);
        const char *text = scalar_text(d, k);
        unsigned sig = key_sig(text, k->count);
        uint8_t j = seen >> sig & 1u ? last[sig] : (uint8_t)NO_KEY;
        before[i] = j;
        positions[i] = key_pos;
        for (; j != NO_KEY; j = before[j]) {
            if (++steps > SMALL_STEPS)
                return NEEDS_INDEX;
            const entry *o = key_entry(d, positions[j]);
            if (o->count != k->count)
                continue;
            if (k->count > SHORT_KEY) {
                ensure_keyed(b);
                if (walk_hash(d, hashes, &hashed, positions, i) !=
                    walk_hash(d, hashes, &hashed, positions, j))
                    continue;
            }
            if (same_bytes(scalar_text(d, o), text, k->count))
                return duplicate_key(b, key_pos, positions[j]);
        }
        seen |= (uint64_t)1 << sig;
        last[sig] = (uint8_t)i;
        key_pos = skip(d, key_pos + 1);
    }
    return KVSHARD_OK;
}

static void keep_index(builder *b, kvshard__map_index *x, uint32_t map_id)
{
    x->next = b->doc->indexes;
    b->doc->indexes = x;
    entry_mut(b, map_id)->word |= INDEXED_FLAG;
}

/* The sorted index, for keys that crowded the table: records of every key
 * up to the first that is not a scalar, sorted, and the earliest key that
 * repeats one before it found among neighbours. Errors come out as the
 * table's would: the first key in order that repeats one or is not a
 * scalar. The table `x`, of at least twice as many slots as keys, holds
 * the records and the sort's scratch space: memory already paged in. */
static int sort_keys(builder *b, kvshard__map_index *x, uint32_t map_id, uint32_t pairs)
{
    kvshard__doc *d = b->doc;
    uint64_t *tmp = x->slots + pairs;
    x->map = map_id;
    x->present = 0;
    x->by_sort = true;
    uint32_t n = 0, key_pos = map_id + 1, bad = UINT32_MAX;
    for (; n < pairs; n++) {
        const entry *k = key_entry(d, key_pos);
        if (kind_of(k) != KIND_SCALAR) {
            bad = key_pos;
            break;
        }
        x->present |= (uint64_t)1 << key_sig(scalar_text(d, k), k->count);
        x->slots[n] = (uint64_t)key_hash_at(d, key_pos) << 32 | key_pos;
        key_pos = skip(d, key_pos + 1);
    }
    kvshard_yaml_keys__sort(d, x->slots, tmp, n);
    /* Equal keys sit together, the first of them first: the earliest
     * repeat is the least second key of a neighbouring equal pair. */
    uint32_t dup = UINT32_MAX, first = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t p = x->slots[i - 1], q = x->slots[i];
        if (p >> 32 == q >> 32 && (uint32_t)q < dup &&
            same_key(d, key_entry(d, (uint32_t)p), key_entry(d, (uint32_t)q))) {
            dup = (uint32_t)q;
            first = (uint32_t)p;
        }
    }
    int rc = dup != UINT32_MAX   ? duplicate_key(b, dup, first)
             : bad != UINT32_MAX ? key_not_scalar(b, bad)
                                 : KVSHARD_OK;
    if (rc) {
        kvshard_yaml_keys__free(d, x);
        return rc;
    }
    x->mask = n;
    keep_index(b, x, map_id);
    return KVSHARD_OK;
}

/* The hash table of a mapping's keys, checking each against those before
 * it; past PROBE_BUDGET, the sorted index instead. */
static int index_keys(builder *b, uint32_t map_id, uint32_t pairs)
{
    kvshard__doc *d = b->doc;
    ensure_keyed(b);
    /* At least twice as many slots as keys (a small mapping here has long
     * or look-alike keys), which also leaves sort_keys() its room. */
    uint32_t slots = 4;
    while (slots < 2u * pairs)
        slots *= 2;
    kvshard__map_index *x = kvshard_yaml_keys__alloc(d, slots);
    if (!x)
        return fail_nomem(b);
    x->map = map_id;
    x->mask = slots - 1;
    x->present = 0;
    x->by_sort = false;
    memset(x->slots, 0, (size_t)slots * sizeof(uint64_t));
    /* Keys are one tape entry each (a scalar, or an alias of one), read
     * straight from the tape; nodes are made only for a message. */
    uint64_t probes = 0, budget = PROBE_BUDGET(pairs);
    uint32_t key_pos = map_id + 1;
    for (uint32_t i = 0; i < pairs; i++) {
        const entry *written = at(d, key_pos);
        bool alias = kind_of(written) == KIND_ALIAS;
        const entry *k = alias ? at(d, written->ref) : written;
        int rc = KVSHARD_OK;
        if (kind_of(k) != KIND_SCALAR) {
            kvshard_yaml_keys__free(d, x);
            return key_not_scalar(b, key_pos);
        }
        const char *text = scalar_text(d, k);
        x->present |= (uint64_t)1 << key_sig(text, k->count);
        /* An alias's hash was stored when it was read (key_hash_at). */
        uint32_t h = alias ? written->count : kvshard_hash__of(&d->hash_key, text, k->count);
        uint32_t s = h & x->mask;
        for (; x->slots[s] != 0; s = (s + 1) & x->mask) {
            if (++probes > budget)
                return sort_keys(b, x, map_id, pairs);
            uint32_t other = (uint32_t)x->slots[s] - 1;
            if ((uint32_t)(x->slots[s] >> 32) == h && same_key(d, key_entry(d, other), k)) {
                rc = duplicate_key(b, key_pos, other);
                break;
            }
        }
        if (rc) {
            kvshard_yaml_keys__free(d, x);
            return rc;
        }
        x->slots[s] = (uint64_t)h << 32 | (key_pos + 1);
        key_pos = skip(d, key_pos + 1);
    }
    keep_index(b, x, map_id);
    return KVSHARD_OK;
}

/* Keys must be scalars and distinct; report the first repeated key. Large
 * mappings keep their index. */
static int check_keys(builder *b, uint32_t map_id, uint32_t pairs)
{
    if (pairs < INDEX_MIN_PAIRS) {
        int rc = walk_small(b, map_id, pairs);
        if (rc != NEEDS_INDEX)
            return rc;
    }
    return index_keys(b, map_id, pairs);
}

static int on_end(builder *b)
{
    frame *f = &b->frames[--b->depth];
    entry *e = entry_mut(b, f->id);
    bool mapping = kind_of(e) == KIND_MAPPING;
    e->count = mapping ? f->children / 2 : f->children;
    e->ref = b->doc->size;
    int rc;
    if (mapping && (rc = check_keys(b, f->id, e->count)) != 0)
        return rc;
    if ((rc = register_anchor(b, f->anchor, f->id, b->weight - f->weight_at,
                              e->word & OFFSET_MASK)) != 0)
        return rc;
    attach(b);
    return KVSHARD_OK;
}

int kvshard_yaml_build__alias(kvshard__doc_builder *b, const char *name, size_t start)
{
    anchor_def *a = b->anchors ? find_anchor(b, name, name_hash(b, name)) : NULL;
    if (!a) {
        char shown[64];
        kvshard_error__excerpt(shown, sizeof shown, name, strlen(name), 40);
        return fail_at(b, KVSHARD_ESYNTAX, start, "alias *%s names no anchor defined before it",
                       shown);
    }
    int rc = add_weight(b, a->weight, start);
    if (rc)
        return rc;
    const entry *t = at(b->doc, a->id);
    uint32_t key_hash = 0;
    if (kind_of(t) == KIND_SCALAR && at_key(b)) {
        if (form_of(t) == FORM_PLAIN && kvshard_text__is(scalar_text(b->doc, t), t->count, "<<"))
            return fail_at(b, KVSHARD_EUNSUPPORTED, start,
                           "merge keys (<<) are not read by kvshard: write the merged keys out");
        if (!a->key_hashed) {
            a->key_hash = kvshard_hash__of(&b->doc->hash_key, scalar_text(b->doc, t), t->count);
            a->key_hashed = true;
        }
        key_hash = a->key_hash;
    }
    uint32_t id;
    if ((rc = append(b, &id, start, KIND_ALIAS, FORM_PLAIN, key_hash, a->id)) != 0)
        return rc;
    attach(b);
    return KVSHARD_OK;
}

int kvshard_build__doc(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, const uint64_t *seed, bool json,
                       kvshard__doc_front front, void *ctx, kvshard_error *err)
{
    kvshard__mark first = {1, 1, 0};
    if (len > KVSHARD_MAX_DOCUMENT_BYTES) {
        /* Located at the first byte past the limit. */
        kvshard__mark m = kvshard_error__no_mark;
        if (err && err->code == KVSHARD_OK) {
            memset(out, 0, offsetof(kvshard__doc, first_chunks));
            out->text = text;
            out->len = len;
            out->json = json;
            out->start = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
            m = kvshard_marks__mark(out, KVSHARD_MAX_DOCUMENT_BYTES);
            memset(out, 0, offsetof(kvshard__doc, first_chunks));
        }
        return kvshard_error__fail(err, KVSHARD_ELIMIT, source, m,
                             "text is %zu bytes; the limit is %u bytes "
                             "(KVSHARD_MAX_DOCUMENT_BYTES), and this is the first byte past it",
                             len, KVSHARD_MAX_DOCUMENT_BYTES);
    }
    const unsigned char *u = (const unsigned char *)text;
    if (len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE)))
        return kvshard_error__fail(err, KVSHARD_EUTF8, source, first,
                             "the text is UTF-16 (it starts with a UTF-16 byte order mark); "
                             "kvshard reads UTF-8");
    kvshard__doc *doc = out;
    memset(doc, 0, offsetof(kvshard__doc, first_chunks));
    doc->alloc = *alloc;
    doc->text = text;
    doc->len = len;
    doc->json = json;
    doc->source = source;
    doc->start = len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF ? 3 : 0;
    doc->chunks = doc->first_chunks;
    doc->chunk_count = KVSHARD__FIRST_CHUNKS;
    doc->first_chunks[0] = doc->first_chunk;
    for (size_t k = 1; k < KVSHARD__FIRST_CHUNKS; k++)
        doc->first_chunks[k] = NULL;
    /* On the stack (about 1.7 KiB); the frames are written before they are
     * read, and the anchors are allocated at the first one. */
    builder bs;
    builder *b = &bs;
    b->doc = doc;
    b->err = err;
    b->depth = 0;
    b->anchors = NULL;
    b->anchor_slots = NULL;
    b->anchor_count = 0;
    b->seed = seed;
    b->weight = 0;
    b->root_done = false;

    int rc = front(b, doc, ctx);
    kvshard_alloc__free(alloc, b->anchors);
    if (rc == KVSHARD_OK && !b->root_done)
        rc = kvshard_error__fail(err, KVSHARD_ETYPE, source, first, "the document is empty");
    if (rc != KVSHARD_OK) {
        kvshard_tape__doc_free(doc);
        return rc;
    }
    kvshard_yaml_keys__add_directory(doc);
    return KVSHARD_OK;
}

/* ---- the builder for other front-ends ------------------------------------------------ */

int kvshard_build__scalar(kvshard__doc_builder *b, size_t offset, bool quoted, const char *copy,
                              size_t len)
{
    int rc = add_weight(b, 1, offset);
    if (rc)
        return rc;
    uint32_t id;
    uint32_t ref = (uint32_t)offset + (quoted ? 1u : 0u);
    if ((rc = store_scalar(b, &id, offset, quoted ? FORM_QUOTED : FORM_PLAIN, copy, len, ref)) != 0)
        return rc;
    attach(b);
    return KVSHARD_OK;
}

int kvshard_build__open(kvshard__doc_builder *b, size_t offset, bool mapping)
{
    return kvshard_yaml_build__open(b, offset, mapping, NULL, NULL);
}

int kvshard_build__close(kvshard__doc_builder *b)
{
    return on_end(b);
}

int kvshard_yaml_build__nomem(kvshard__doc_builder *b)
{
    return fail_nomem(b);
}

int kvshard_build__fail(kvshard__doc_builder *b, int code, size_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(b, code, offset, fmt, ap);
    va_end(ap);
    return rc;
}
