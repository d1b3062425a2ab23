/* libyaml events (or another front-end's nodes) -> a compact tape of nodes,
 * under kvshard's reading limits. */
#include "text/yaml_doc.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- tape ------------------------------------------------------------------ */

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

static kvshard__node view(const kvshard__doc *doc, uint32_t id)
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

/* ---- arena for copied text ---------------------------------------------------- */

struct kvshard__arena_chunk {
    kvshard__arena_chunk *next;
    size_t used;
    size_t cap;
    char data[];
};

#define ARENA_CHUNK_BYTES ((size_t)16 * 1024)

static char *arena_copy(kvshard__doc *doc, const char *s, size_t len)
{
    kvshard__arena_chunk *c = doc->arena;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > ARENA_CHUNK_BYTES ? len + 1 : ARENA_CHUNK_BYTES;
        c = kvshard__alloc(&doc->alloc, 1, sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = doc->arena;
        c->used = 0;
        c->cap = cap;
        doc->arena = c;
    }
    char *p = c->data + c->used;
    memcpy(p, s, len);
    p[len] = '\0';
    c->used += len + 1;
    return p;
}

/* ---- key indexes ------------------------------------------------------------------ */

/* Mappings of more than 32 keys get an index of their keys, built while
 * checking for duplicates and kept for lookups: a lookup that misses then
 * costs one hash and a probe or two. Smaller ones are walked: the model
 * reader looks at each of a config's keys once, in one pass (model.c), and a
 * walk of a few dozen keys costs no more than a hash.
 *
 * The index is an open-addressing table under the doc's keyed hash: a slot
 * holds a key's 32-bit hash above its tape position plus one (0 is empty),
 * and a probe reads a key's text only when the whole hash matches. Building
 * it may pass at most PROBE_BUDGET occupied slots in all. Keys that crowd
 * the table past that (by chance, or written by someone who knows the hash
 * key) get a sorted index instead: their hashes and positions ordered by
 * hash, length and text, so that a duplicate sits beside its twin, and a
 * lookup is a binary search. The order is a radix sort by hash, then a
 * merge sort of the texts of keys whose hashes are equal. Either way a
 * mapping of n keys costs at most O(n log n) compares. */
#define INDEX_MIN_PAIRS 33u
#define PROBE_BUDGET(pairs) (4u * (uint64_t)(pairs) + 64u)

struct kvshard__map_index {
    kvshard__map_index *next;
    kvshard__map_index **sorted; /* the directory only */
    uint64_t present;            /* bit key_sig() of every key */
    uint32_t map;                /* tape position of the mapping */
    uint32_t mask;               /* slots - 1; sorted: keys; the directory: indexes */
    bool by_sort;                /* slots[] holds hash << 32 | position, in order */
    uint64_t slots[];
};

_Static_assert(sizeof(kvshard__map_index) + 128 * sizeof(uint64_t) <= KVSHARD__FIRST_INDEX_BYTES,
               "the doc's own index holds a table of 128 slots");

/* An index of `slots` words: the doc's own memory for the first that fits,
 * an allocation for the others. */
static kvshard__map_index *index_alloc(kvshard__doc *doc, size_t slots)
{
    size_t bytes = sizeof(kvshard__map_index) + slots * sizeof(uint64_t);
    if (!doc->first_index_used && bytes <= KVSHARD__FIRST_INDEX_BYTES) {
        doc->first_index_used = true;
        return (kvshard__map_index *)(void *)doc->first_index;
    }
    return kvshard__alloc(&doc->alloc, 1, bytes);
}

static void index_free(kvshard__doc *doc, kvshard__map_index *x)
{
    if ((void *)x == (void *)doc->first_index)
        doc->first_index_used = false;
    else
        kvshard__free(&doc->alloc, x);
}

/* One of 64 bits from a key's length and its first and last bytes. A lookup
 * whose bit no key of the mapping sets misses without hashing: most lookups
 * of a model are for keys the config does not have. */
static inline unsigned key_sig(const char *s, size_t len)
{
    unsigned first = len ? (unsigned char)s[0] : 0, last = len ? (unsigned char)s[len - 1] : 0;
    return ((unsigned)len * 5u + first * 3u + last) & 63u;
}

/* With more than DIRECTORY_MIN indexes, a directory at the head of the list
 * holds them sorted by mapping position, so that finding one is a binary
 * search rather than a walk of the list. */
#define DIRECTORY_MAP UINT32_MAX
#define DIRECTORY_MIN 8u

/* The hash of the key at tape position `pos`, a scalar or an alias of one.
 * An alias used as a key had its target's hash stored when it was read,
 * once per anchor: a key of a few bytes never costs the hash of a long text. */
static inline uint32_t key_hash_at(const kvshard__doc *doc, uint32_t pos)
{
    const entry *e = at(doc, pos);
    if (kind_of(e) == KIND_ALIAS)
        return e->count;
    return kvshard_hash__of(&doc->hash_key, scalar_text(doc, e), e->count);
}

/* Two keys (scalar entries) of the same text. */
static inline bool same_key(const kvshard__doc *doc, const entry *a, const entry *b)
{
    return a->count == b->count && memcmp(scalar_text(doc, a), scalar_text(doc, b), a->count) == 0;
}

/* Order of a sorted index: hash, length, text, and for equal text the
 * position, so that the first of equal keys comes first. */
static int cmp_records(const kvshard__doc *doc, uint64_t x, uint64_t y)
{
    if (x >> 32 != y >> 32)
        return x >> 32 < y >> 32 ? -1 : 1;
    const entry *a = key_entry(doc, (uint32_t)x), *b = key_entry(doc, (uint32_t)y);
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    int c = memcmp(scalar_text(doc, a), scalar_text(doc, b), a->count);
    if (c)
        return c;
    return (uint32_t)x < (uint32_t)y ? -1 : (uint32_t)x > (uint32_t)y;
}

/* Bottom-up merge sort of `n` records through `tmp`: n log n compares
 * whatever the order, with the doc to compare by. */
static void sort_records(const kvshard__doc *doc, uint64_t *a, uint64_t *tmp, size_t n)
{
    uint64_t *src = a, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = n - lo > width ? lo + width : n;
            size_t hi = n - mid > width ? mid + width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = cmp_records(doc, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* Records (hash << 32 | position, made in key order) ordered as
 * cmp_records() orders them: a stable radix sort by hash, 8 bits a pass,
 * keeps equal hashes in key order, and only a run of equal hashes (a
 * repeated key, or keys that collide) is sorted by comparing texts. */
static void sort_by_hash(const kvshard__doc *doc, uint64_t *a, uint64_t *tmp, size_t n)
{
    uint64_t *src = a, *dst = tmp;
    for (unsigned shift = 32; shift < 64; shift += 8) {
        size_t at_digit[257] = {0};
        for (size_t i = 0; i < n; i++)
            at_digit[(src[i] >> shift & 0xFFu) + 1]++;
        for (size_t d = 0; d < 256; d++)
            at_digit[d + 1] += at_digit[d];
        for (size_t i = 0; i < n; i++)
            dst[at_digit[src[i] >> shift & 0xFFu]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    /* Four passes: the records are back in `a`. */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j] >> 32 == a[i] >> 32)
            j++;
        if (j - i > 1)
            sort_records(doc, a + i, tmp, j - i);
        i = j;
    }
}

/* A record against a key looked up: <0, 0 or >0. */
static int cmp_lookup(const kvshard__doc *doc, uint64_t record, uint32_t hash, const char *key,
                      size_t klen)
{
    if ((uint32_t)(record >> 32) != hash)
        return (uint32_t)(record >> 32) < hash ? -1 : 1;
    const entry *e = key_entry(doc, (uint32_t)record);
    if (e->count != klen)
        return e->count < klen ? -1 : 1;
    return memcmp(scalar_text(doc, e), key, klen);
}

/* The tape position of `key` in an index, or UINT32_MAX. */
static uint32_t index_find(const kvshard__doc *doc, const kvshard__map_index *x, const char *key,
                           size_t klen)
{
    uint32_t h = kvshard_hash__of(&doc->hash_key, key, klen);
    if (x->by_sort) {
        size_t lo = 0, hi = x->mask;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_lookup(doc, x->slots[mid], h, key, klen) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < x->mask && cmp_lookup(doc, x->slots[lo], h, key, klen) == 0
                   ? (uint32_t)x->slots[lo]
                   : UINT32_MAX;
    }
    for (uint32_t s = h & x->mask; x->slots[s] != 0; s = (s + 1) & x->mask) {
        if ((uint32_t)(x->slots[s] >> 32) != h)
            continue;
        uint32_t pos = (uint32_t)x->slots[s] - 1;
        const entry *k = key_entry(doc, pos);
        if (k->count == klen && memcmp(scalar_text(doc, k), key, klen) == 0)
            return pos;
    }
    return UINT32_MAX;
}

static const kvshard__map_index *find_index(const kvshard__doc *doc, uint32_t map)
{
    const kvshard__map_index *x = doc->indexes;
    if (x && x->map == DIRECTORY_MAP) {
        size_t lo = 0, hi = x->mask;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (x->sorted[mid]->map < map)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < x->mask && x->sorted[lo]->map == map ? x->sorted[lo] : NULL;
    }
    for (; x; x = x->next) {
        if (x->map == map)
            return x;
    }
    return NULL;
}

static int cmp_index(const void *a, const void *b)
{
    uint32_t x = (*(const kvshard__map_index *const *)a)->map;
    uint32_t y = (*(const kvshard__map_index *const *)b)->map;
    return (x > y) - (x < y);
}

/* Put a directory at the head of the index list. Without memory for it the
 * list is walked instead: nothing fails. */
static void add_directory(kvshard__doc *doc)
{
    size_t n = 0;
    for (const kvshard__map_index *x = doc->indexes; x; x = x->next)
        n++;
    if (n <= DIRECTORY_MIN || n > UINT32_MAX)
        return;
    kvshard__map_index *dir =
        kvshard__alloc(&doc->alloc, 1, sizeof *dir + n * sizeof(kvshard__map_index *));
    if (!dir)
        return;
    dir->sorted = (kvshard__map_index **)(void *)((char *)dir + sizeof *dir);
    size_t k = 0;
    for (kvshard__map_index *x = doc->indexes; x; x = x->next)
        dir->sorted[k++] = x;
    qsort(dir->sorted, n, sizeof *dir->sorted, cmp_index);
    dir->map = DIRECTORY_MAP;
    dir->mask = (uint32_t)n;
    dir->by_sort = false;
    dir->next = doc->indexes;
    doc->indexes = dir;
}

void kvshard__doc_free(kvshard__doc *doc)
{
    if (!doc)
        return;
    /* The first chunk and chunk pointers are the doc's own. */
    for (size_t i = 1; i < doc->chunk_count; i++)
        kvshard__free(&doc->alloc, doc->chunks[i]);
    if (doc->chunks != doc->first_chunks)
        kvshard__free(&doc->alloc, doc->chunks);
    for (kvshard__arena_chunk *c = doc->arena; c;) {
        kvshard__arena_chunk *next = c->next;
        kvshard__free(&doc->alloc, c);
        c = next;
    }
    for (kvshard__map_index *x = doc->indexes; x;) {
        kvshard__map_index *next = x->next;
        index_free(doc, x);
        x = next;
    }
    kvshard__free(&doc->alloc, doc->strings);
    memset(doc, 0, offsetof(kvshard__doc, first_chunks));
}

/* ---- marks ------------------------------------------------------------------------ */

static bool is_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* Bytes of the line break at `i`, as libyaml counts them: LF, CR, CRLF, and
 * NEL, LS and PS; 0 when there is none. JSON ends lines at LF, CR and CRLF
 * alone: the other three are characters of a string there. */
static size_t line_break(const char *t, size_t i, size_t len, bool json)
{
    unsigned char c = (unsigned char)t[i];
    if (c == '\n')
        return 1;
    if (c == '\r')
        return i + 1 < len && t[i + 1] == '\n' ? 2 : 1;
    if (json)
        return 0;
    if (c == 0xC2 && i + 1 < len && (unsigned char)t[i + 1] == 0x85)
        return 2;
    if (c == 0xE2 && i + 2 < len && (unsigned char)t[i + 1] == 0x80 &&
        ((unsigned char)t[i + 2] == 0xA8 || (unsigned char)t[i + 2] == 0xA9))
        return 3;
    return 0;
}

#define HIGHS 0x8080808080808080ull

/* Walk from `i` towards `stop` a block at a time while a block holds only
 * ASCII characters other than CR: there each LF starts a line and every other
 * byte is one character, so a block is a count of LFs, which compilers do
 * with vector compares. Columns are worked out once at the end, back from
 * the last LF. Stops at the first block with a CR or a byte above 0x7F, or
 * within a block of `stop`, for the byte-wise walk to finish. */
#define PLAIN_BLOCK 32u

static size_t skip_plain_blocks(const char *t, size_t i, size_t stop, int *line, int *column)
{
    size_t from = i;
    size_t lines = 0;
    while (i < stop && stop - i >= PLAIN_BLOCK) {
        const unsigned char *p = (const unsigned char *)t + i;
        unsigned char lf = 0, other = 0;
        for (unsigned k = 0; k < PLAIN_BLOCK; k++) {
            lf = (unsigned char)(lf + (p[k] == '\n'));
            other |= (unsigned char)((p[k] == '\r') | (p[k] >> 7));
        }
        if (other)
            break;
        lines += lf;
        i += PLAIN_BLOCK;
    }
    if (lines == 0) {
        *column += (int)(i - from);
        return i;
    }
    size_t after_lf = i; /* one past the last LF, which lies in [from, i) */
    while (t[after_lf - 1] != '\n')
        after_lf--;
    *line += (int)lines; /* marks are at most 2^26 bytes in */
    *column = 1 + (int)(i - after_lf);
    return i;
}

void kvshard__doc_marks(const kvshard__doc *doc, const size_t *offsets, kvshard__mark *marks,
                        size_t count)
{
    /* A longer list is marked a bounded slice at a time, one pass each:
     * the callers' lists fit one slice, so nothing is allocated. */
    while (count > KVSHARD__DOC_MARKS_MAX) {
        kvshard__doc_marks(doc, offsets, marks, KVSHARD__DOC_MARKS_MAX);
        offsets += KVSHARD__DOC_MARKS_MAX;
        marks += KVSHARD__DOC_MARKS_MAX;
        count -= KVSHARD__DOC_MARKS_MAX;
    }
    /* One pass for all: at most a handful of offsets, so a selection per
     * step is cheaper than sorting. */
    int line = 1, column = 1;
    size_t i = doc->start;
    size_t done = 0;
    bool ready[KVSHARD__DOC_MARKS_MAX] = {false};
    while (done < count) {
        size_t target = SIZE_MAX, which = 0;
        for (size_t k = 0; k < count; k++) {
            if (!ready[k] && offsets[k] < target) {
                target = offsets[k];
                which = k;
            }
        }
        size_t stop = target < doc->len ? target : doc->len;
        i = skip_plain_blocks(doc->text, i, stop, &line, &column);
        while (i < target && i < doc->len) {
            unsigned char c = (unsigned char)doc->text[i];
            if (c >= 0x20 && c < 0x80) { /* a printable ASCII character */
                column++;
                i++;
                continue;
            }
            size_t br = line_break(doc->text, i, doc->len, doc->json);
            if (br) {
                if (i + br > target) /* the offset is inside the break */
                    break;
                line++;
                column = 1;
                i += br;
                continue;
            }
            if (!is_continuation((unsigned char)doc->text[i]))
                column++;
            i++;
        }
        kvshard__mark m = {line, column, offsets[which]};
        marks[which] = m;
        ready[which] = true;
        done++;
    }
}

kvshard__mark kvshard__doc_mark(const kvshard__doc *doc, size_t offset)
{
    kvshard__mark m;
    kvshard__doc_marks(doc, &offset, &m, 1);
    return m;
}

int kvshard__doc_fail(const kvshard__doc *doc, kvshard_error *err, int code,
                      const kvshard__node *at_node, const char *fmt, ...)
{
    if (!err || err->code != KVSHARD_OK)
        return code;
    kvshard__mark m = at_node ? kvshard__doc_mark(doc, at_node->offset) : kvshard__no_mark;
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard__vfail(err, code, doc->source, m, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- builder ------------------------------------------------------------------------ */

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
    int documents;
    bool root_done;
    bool ascii;       /* no byte above 0x7F after the BOM: offsets are indexes */
    size_t cur_index; /* libyaml's character index ... */
    size_t cur_byte;  /* ... and the byte offset it stands for */
};
typedef kvshard__doc_builder builder;

/* libyaml counts characters after the byte order mark; kvshard keeps byte
 * offsets. Marks arrive mostly in order, so a cursor that moves either way
 * keeps this linear: a mark behind it is walked back to, not counted again
 * from the start. */
static size_t byte_offset_utf8(builder *b, size_t index)
{
    const kvshard__doc *d = b->doc;
    while (b->cur_index > index && b->cur_byte > d->start) {
        do
            b->cur_byte--;
        while (b->cur_byte > d->start && is_continuation((unsigned char)d->text[b->cur_byte]));
        b->cur_index--;
    }
    while (b->cur_index < index && b->cur_byte < d->len) {
        b->cur_byte++;
        while (b->cur_byte < d->len && is_continuation((unsigned char)d->text[b->cur_byte]))
            b->cur_byte++;
        b->cur_index++;
    }
    return b->cur_byte;
}

static inline size_t byte_offset(builder *b, size_t index)
{
    const kvshard__doc *d = b->doc;
    if (b->ascii)
        return d->start + index < d->len ? d->start + index : d->len;
    return byte_offset_utf8(b, index);
}

static int fail_at(builder *b, int code, size_t offset, const char *fmt, ...) KVSHARD__PRINTF(4, 5);

static int vfail_at(builder *b, int code, size_t offset, const char *fmt, va_list ap)
{
    if (!b->err || b->err->code != KVSHARD_OK)
        return code;
    kvshard__mark m = kvshard__doc_mark(b->doc, offset);
    return kvshard__vfail(b->err, code, b->doc->source, m, fmt, ap);
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
    return kvshard__fail(b->err, KVSHARD_ENOMEM, b->doc->source, kvshard__no_mark,
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
        kvshard__tape_entry **grown = kvshard__alloc(&d->alloc, cap, sizeof *grown);
        if (!grown)
            return fail_nomem(b);
        memcpy(grown, d->chunks, d->chunk_count * sizeof *grown);
        for (size_t k = d->chunk_count; k < cap; k++)
            grown[k] = NULL;
        if (d->chunks != d->first_chunks)
            kvshard__free(&d->alloc, d->chunks);
        d->chunks = grown;
        d->chunk_count = cap;
    }
    if (!d->chunks[c] && !(d->chunks[c] = kvshard__alloc(&d->alloc, CHUNK_ENTRIES, sizeof(entry))))
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

/* The doc's hash key, drawn at the first index or anchor: a config without
 * either never reads the clock. */
static void ensure_keyed(builder *b)
{
    kvshard__doc *d = b->doc;
    if (!d->keyed) {
        uint64_t text = (uint64_t)(uintptr_t)d->text;
        d->hash_key = kvshard_hash__key(
            b->seed ? *b->seed : kvshard_hash__seed(d, (text << 32 | text >> 32) ^ d->len));
        d->keyed = true;
    }
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
        if (!(b->anchors = kvshard__alloc(&b->doc->alloc, 1, bytes)))
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

static int copy_anchor(builder *b, const yaml_char_t *anchor, const char **out)
{
    *out = NULL;
    if (!anchor)
        return KVSHARD_OK;
    *out = arena_copy(b->doc, (const char *)anchor, strlen((const char *)anchor));
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
static int resolve_tag(builder *b, const yaml_char_t *tag_text, unsigned kind, const char *text,
                       size_t len, size_t offset, kvshard__tag *out)
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
    if (!tag_text)
        return KVSHARD_OK;
    const char *t = (const char *)tag_text;
    const char *yaml = "tag:yaml.org,2002:";
    size_t skip_prefix = strncmp(t, yaml, strlen(yaml)) == 0 ? strlen(yaml) : 0;
    char shown[64];
    kvshard__excerpt(shown, sizeof shown, t + skip_prefix, strlen(t + skip_prefix), 40);
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
            kvshard__excerpt(value, sizeof value, text, len, 32);
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

/* Nothing, ~, null, Null or NULL: by length first, since every value a
 * model is read from passes through here. */
static bool is_null_text(const char *s, size_t len)
{
    switch (len) {
    case 0: return true;
    case 1: return s[0] == '~';
    case 4:
        return memcmp(s, "null", 4) == 0 || memcmp(s, "Null", 4) == 0 || memcmp(s, "NULL", 4) == 0;
    default: return false;
    }
}

/* A null scalar: tagged !!null, or plain, untagged and null text. Both a
 * node and a tape entry are tested with it. */
static bool is_null_scalar(unsigned tag, bool plain_untagged, const char *text, size_t len)
{
    return tag == KVSHARD__TAG_NULL || (plain_untagged && is_null_text(text, len));
}

static bool is_bool_text(const char *s, size_t len)
{
    return kvshard__text_is(s, len, "true") || kvshard__text_is(s, len, "false") ||
           kvshard__text_is(s, len, "True") || kvshard__text_is(s, len, "False") ||
           kvshard__text_is(s, len, "TRUE") || kvshard__text_is(s, len, "FALSE");
}

/* A decimal number as YAML's !!float reads it: [-+]digits[.digits][e[-+]digits],
 * or .inf / .nan forms. */
static bool is_float_text(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    if (kvshard__text_is(s + i, len - i, ".inf") || kvshard__text_is(s + i, len - i, ".Inf") ||
        kvshard__text_is(s + i, len - i, ".INF"))
        return true;
    if (i == 0 && (kvshard__text_is(s, len, ".nan") || kvshard__text_is(s, len, ".NaN") ||
                   kvshard__text_is(s, len, ".NAN")))
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
        if (!kvshard__all_digits(s + i, len - i))
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
        fits = kvshard__scan_uint(&v, s, len) != KVSHARD__INT_NOT_INTEGER;
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
    kvshard__excerpt(shown, sizeof shown, s, len, 32);
    return fail_at(b, KVSHARD_ETYPE, offset, "the tag %s does not fit the value \"%s\"", name,
                   shown);
}

static int add_string(builder *b, const char *s, size_t len, uint32_t *out_ref)
{
    kvshard__doc *d = b->doc;
    if (d->string_count == d->string_cap) {
        uint32_t cap = d->string_cap ? d->string_cap * 2 : 16;
        const char **grown = kvshard__alloc(&d->alloc, cap, sizeof *grown);
        if (!grown)
            return fail_nomem(b);
        if (d->string_count)
            memcpy(grown, d->strings, d->string_count * sizeof *grown);
        kvshard__free(&d->alloc, d->strings);
        d->strings = grown;
        d->string_cap = cap;
    }
    const char *copy = arena_copy(d, s, len);
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

static int on_scalar(builder *b, const yaml_event_t *ev)
{
    const kvshard__doc *d = b->doc;
    size_t start = byte_offset(b, ev->start_mark.index);
    size_t end = byte_offset(b, ev->end_mark.index);
    const char *value = (const char *)ev->data.scalar.value;
    /* At most 3/2 of the text (an escape of 2 bytes gives a character of 3):
     * below 2^27, as every length on the tape. */
    size_t len = ev->data.scalar.length;
    int rc = add_weight(b, 1, start);
    if (rc)
        return rc;
    kvshard__tag tag = KVSHARD__TAG_NONE;
    if (ev->data.scalar.tag &&
        (rc = resolve_tag(b, ev->data.scalar.tag, KIND_SCALAR, value, len, start, &tag)) != 0)
        return rc;
    yaml_scalar_style_t ystyle = ev->data.scalar.style;
    bool plain_style = ystyle == YAML_PLAIN_SCALAR_STYLE;
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
    bool quoted_span =
        (ystyle == YAML_SINGLE_QUOTED_SCALAR_STYLE || ystyle == YAML_DOUBLE_QUOTED_SCALAR_STYLE) &&
        raw_len == len + 2 && same_bytes(raw + 1, value, len);
    /* A plain scalar on one line is its text as written: only folding
     * across lines changes a plain scalar. libyaml refuses a NUL byte in the
     * text itself, so a value that is a span of the text holds none; only
     * an escape (\0) in a copy can. */
    bool one_line = ev->start_mark.line == ev->end_mark.line;
    if (plain_style && raw_len == len && (one_line || same_bytes(raw, value, len))) {
        ref = (uint32_t)start;
    } else if (quoted_span) {
        ref = (uint32_t)start + 1;
    } else {
        copy = value;
    }
    uint32_t id = 0; /* set by store_scalar on success */
    if ((rc = store_scalar(b, &id, start, form, copy, len, ref)) != 0)
        return rc;
    if (ev->data.scalar.anchor) {
        const char *anchor;
        if ((rc = copy_anchor(b, ev->data.scalar.anchor, &anchor)) != 0 ||
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
    if ((rc = add_weight(b, 1, start)) != 0 ||
        (rc = append(b, &f->id, start, kind, 0, 0, 0)) != 0)
        return rc;
    b->depth++;
    return KVSHARD_OK;
}

static int on_start(builder *b, const yaml_event_t *ev, unsigned kind)
{
    size_t start = byte_offset(b, ev->start_mark.index);
    int rc;
    if ((rc = check_depth(b, start)) != 0)
        return rc;
    const yaml_char_t *tag_text, *anchor_text;
    if (kind == KIND_MAPPING) {
        tag_text = ev->data.mapping_start.tag;
        anchor_text = ev->data.mapping_start.anchor;
    } else {
        tag_text = ev->data.sequence_start.tag;
        anchor_text = ev->data.sequence_start.anchor;
    }
    kvshard__tag tag;
    if (tag_text && (rc = resolve_tag(b, tag_text, kind, NULL, 0, start, &tag)) != 0)
        return rc;
    if ((rc = open_frame(b, start, kind)) != 0)
        return rc;
    return copy_anchor(b, anchor_text, &b->frames[b->depth - 1].anchor);
}

/* The key at `pos` repeats the one at `first_pos`. */
static int duplicate_key(builder *b, uint32_t pos, uint32_t first_pos)
{
    kvshard__node dup = view(b->doc, pos), first = view(b->doc, first_pos);
    kvshard__mark m = kvshard__doc_mark(b->doc, first.offset);
    char shown[96];
    kvshard__excerpt(shown, sizeof shown, dup.text, dup.count, 64);
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
    sort_by_hash(d, x->slots, tmp, n);
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
        index_free(d, x);
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
    kvshard__map_index *x = index_alloc(d, slots);
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
            index_free(d, x);
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
            index_free(d, x);
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

static int on_alias(builder *b, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    size_t start = byte_offset(b, ev->start_mark.index);
    anchor_def *a = b->anchors ? find_anchor(b, name, name_hash(b, name)) : NULL;
    if (!a) {
        char shown[64];
        kvshard__excerpt(shown, sizeof shown, name, strlen(name), 40);
        return fail_at(b, KVSHARD_ESYNTAX, start, "alias *%s names no anchor defined before it",
                       shown);
    }
    int rc = add_weight(b, a->weight, start);
    if (rc)
        return rc;
    const entry *t = at(b->doc, a->id);
    uint32_t key_hash = 0;
    if (kind_of(t) == KIND_SCALAR && at_key(b)) {
        if (form_of(t) == FORM_PLAIN && kvshard__text_is(scalar_text(b->doc, t), t->count, "<<"))
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

static int parser_error(builder *b, const yaml_parser_t *p)
{
    const kvshard__doc *d = b->doc;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_MEMORY_ERROR)
        return fail_nomem(b);
    if (p->error == YAML_READER_ERROR) {
        size_t offset = p->problem_offset;
        /* libyaml gives the offset of the byte that breaks a multi-byte
         * sequence; report the sequence's first byte, which is the bad text. */
        if (strcmp(problem, "invalid trailing UTF-8 octet") == 0 && offset <= d->len) {
            while (offset > 0 && is_continuation((unsigned char)d->text[offset - 1]))
                offset--;
            if (offset > 0)
                offset--;
        }
        bool utf8 = strstr(problem, "UTF-8") || strstr(problem, "Unicode");
        return fail_at(b, utf8 ? KVSHARD_EUTF8 : KVSHARD_ESYNTAX, offset, "%s at byte offset %zu",
                       problem, offset);
    }
    kvshard__mark m = {(int)(p->problem_mark.line + 1), (int)(p->problem_mark.column + 1),
                       byte_offset(b, p->problem_mark.index)};
    if (p->context)
        return kvshard__fail(b->err, KVSHARD_ESYNTAX, d->source, m, "%s %s", problem, p->context);
    return kvshard__fail(b->err, KVSHARD_ESYNTAX, d->source, m, "%s", problem);
}

static int on_event(builder *b, const yaml_event_t *ev)
{
    /* Most events are scalars: a branch the processor predicts, ahead of
     * the jump table, which it mispredicts as the event types alternate. */
    if (ev->type == YAML_SCALAR_EVENT)
        return on_scalar(b, ev);
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1)
            return fail_at(b, KVSHARD_ESYNTAX, byte_offset(b, ev->start_mark.index),
                           "a second document; kvshard reads one document per file");
        return KVSHARD_OK;
    case YAML_SCALAR_EVENT: return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT: return on_start(b, ev, KIND_SEQUENCE);
    case YAML_MAPPING_START_EVENT: return on_start(b, ev, KIND_MAPPING);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return on_end(b);
    case YAML_ALIAS_EVENT: return on_alias(b, ev);
    default: return KVSHARD_OK;
    }
}

/* Eight bytes at a time, 64 between checks. */
static bool all_ascii(const char *text, size_t len)
{
    size_t i = 0;
    while (i + 64 <= len) {
        uint64_t acc = 0;
        for (size_t k = 0; k < 64; k += 8) {
            uint64_t w;
            memcpy(&w, text + i + k, 8);
            acc |= w;
        }
        if (acc & HIGHS)
            return false;
        i += 64;
    }
    for (; i < len; i++) {
        if ((unsigned char)text[i] & 0x80)
            return false;
    }
    return true;
}

/* libyaml's events, one document of them, onto the tape. */
static int yaml_front(builder *b, const kvshard__doc *doc, void *ctx)
{
    (void)ctx;
    b->ascii = all_ascii(doc->text + doc->start, doc->len - doc->start);
    b->cur_byte = doc->start;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return fail_nomem(b);
    yaml_parser_set_input_string(&parser, (const unsigned char *)doc->text, doc->len);
    int rc = KVSHARD_OK;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(b, &parser);
            break;
        }
        rc = on_event(b, &ev);
        bool done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (rc || done)
            break;
    }
    yaml_parser_delete(&parser);
    return rc;
}

int kvshard__doc_build(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, const uint64_t *seed, bool json,
                       kvshard__doc_front front, void *ctx, kvshard_error *err)
{
    kvshard__mark first = {1, 1, 0};
    if (len > KVSHARD_MAX_DOCUMENT_BYTES) {
        /* Located at the first byte past the limit. */
        kvshard__mark m = kvshard__no_mark;
        if (err && err->code == KVSHARD_OK) {
            memset(out, 0, offsetof(kvshard__doc, first_chunks));
            out->text = text;
            out->len = len;
            out->json = json;
            out->start = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
            m = kvshard__doc_mark(out, KVSHARD_MAX_DOCUMENT_BYTES);
            memset(out, 0, offsetof(kvshard__doc, first_chunks));
        }
        return kvshard__fail(err, KVSHARD_ELIMIT, source, m,
                             "text is %zu bytes; the limit is %u bytes "
                             "(KVSHARD_MAX_DOCUMENT_BYTES), and this is the first byte past it",
                             len, KVSHARD_MAX_DOCUMENT_BYTES);
    }
    const unsigned char *u = (const unsigned char *)text;
    if (len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE)))
        return kvshard__fail(err, KVSHARD_EUTF8, source, first,
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
    b->documents = 0;
    b->root_done = false;
    b->cur_index = 0;
    b->ascii = false;
    b->cur_byte = doc->start;

    int rc = front(b, doc, ctx);
    kvshard__free(alloc, b->anchors);
    if (rc == KVSHARD_OK && !b->root_done)
        rc = kvshard__fail(err, KVSHARD_ETYPE, source, first, "the document is empty");
    if (rc != KVSHARD_OK) {
        kvshard__doc_free(doc);
        return rc;
    }
    add_directory(doc);
    return KVSHARD_OK;
}

int kvshard__doc_parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, kvshard_error *err)
{
    return kvshard__doc_build(out, text, len, source, alloc, NULL, false, yaml_front, NULL, err);
}

int kvshard__doc_parse_seeded(kvshard__doc *out, const char *text, size_t len, const char *source,
                              const kvshard_allocator *alloc, uint64_t seed, kvshard_error *err)
{
    return kvshard__doc_build(out, text, len, source, alloc, &seed, false, yaml_front, NULL, err);
}

/* ---- the builder for other front-ends ------------------------------------------------ */

int kvshard__doc_build_scalar(kvshard__doc_builder *b, size_t offset, bool quoted,
                              const char *copy, size_t len)
{
    int rc = add_weight(b, 1, offset);
    if (rc)
        return rc;
    uint32_t id;
    uint32_t ref = (uint32_t)offset + (quoted ? 1u : 0u);
    if ((rc = store_scalar(b, &id, offset, quoted ? FORM_QUOTED : FORM_PLAIN, copy, len, ref)) !=
        0)
        return rc;
    attach(b);
    return KVSHARD_OK;
}

int kvshard__doc_build_open(kvshard__doc_builder *b, size_t offset, bool mapping)
{
    int rc = check_depth(b, offset);
    return rc ? rc : open_frame(b, offset, mapping ? KIND_MAPPING : KIND_SEQUENCE);
}

int kvshard__doc_build_close(kvshard__doc_builder *b)
{
    return on_end(b);
}

int kvshard__doc_build_fail(kvshard__doc_builder *b, int code, size_t offset, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = vfail_at(b, code, offset, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------------ */

kvshard__node kvshard__doc_root(const kvshard__doc *doc)
{
    return view(doc, 0);
}

kvshard__iter kvshard__iter_begin(const kvshard__doc *doc, const kvshard__node *parent)
{
    (void)doc;
    kvshard__iter it = {parent->id + 1, 0};
    if (parent->kind == KVSHARD__NODE_SEQUENCE)
        it.left = parent->count;
    else if (parent->kind == KVSHARD__NODE_MAPPING)
        it.left = 2 * parent->count;
    return it;
}

bool kvshard__iter_next(const kvshard__doc *doc, kvshard__iter *it, kvshard__node *out)
{
    if (it->left == 0)
        return false;
    *out = view(doc, it->next);
    it->next = skip(doc, it->next);
    it->left--;
    return true;
}

uint32_t kvshard__map_keys(const kvshard__doc *doc, const kvshard__node *map, kvshard__key_ref *out,
                           uint32_t cap)
{
    uint32_t n = map->kind != KVSHARD__NODE_MAPPING ? 0 : map->count < cap ? map->count : cap;
    uint32_t pos = map->id + 1;
    for (uint32_t i = 0; i < n; i++) {
        const entry *k = key_entry(doc, pos);
        out[i].text = scalar_text(doc, k);
        out[i].len = k->count;
        out[i].value_at = pos + 1;
        pos = skip(doc, pos + 1);
    }
    return n;
}

bool kvshard__doc_value(kvshard__node *out, const kvshard__doc *doc, uint32_t at_id)
{
    /* The null test on the tape entry's one word: testing the node's style
     * and tag just after storing them one by one would have the compiler
     * load both at once and wait for the stores. */
    const entry *e = at(doc, at_id);
    if (kind_of(e) == KIND_ALIAS)
        e = at(doc, e->ref);
    *out = view(doc, at_id);
    unsigned form = form_of(e);
    return kind_of(e) != KIND_SCALAR ||
           !is_null_scalar(form, form == FORM_PLAIN, scalar_text(doc, e), e->count);
}

kvshard__node kvshard__seq_item(const kvshard__doc *doc, const kvshard__node *seq, uint32_t index)
{
    const entry *e = at(doc, seq->id);
    /* A list whose children are one entry each is an array. */
    if (e->ref - seq->id - 1 == seq->count)
        return view(doc, seq->id + 1 + index);
    kvshard__iter it = kvshard__iter_begin(doc, seq);
    kvshard__node item = *seq;
    for (uint32_t i = 0; i <= index; i++)
        kvshard__iter_next(doc, &it, &item);
    return item;
}

bool kvshard__map_get(const kvshard__doc *doc, const kvshard__node *map, const char *key,
                      kvshard__node *out)
{
    if (map->kind != KVSHARD__NODE_MAPPING)
        return false;
    size_t klen = strlen(key);
    if (at(doc, map->id)->word & INDEXED_FLAG) {
        const kvshard__map_index *x = find_index(doc, map->id);
        if (!(x->present >> key_sig(key, klen) & 1u))
            return false;
        uint32_t pos = index_find(doc, x, key, klen);
        if (pos == UINT32_MAX)
            return false;
        *out = view(doc, pos + 1);
        return true;
    }
    /* Keys are scalars (or aliases of scalars), one tape entry each; only a
     * key of the right length has its text compared. */
    uint32_t pos = map->id + 1;
    for (uint32_t i = 0; i < map->count; i++) {
        const entry *k = key_entry(doc, pos);
        if (k->count == klen && memcmp(scalar_text(doc, k), key, klen) == 0) {
            *out = view(doc, pos + 1);
            return true;
        }
        pos = skip(doc, pos + 1);
    }
    return false;
}

bool kvshard__map_sorted(const kvshard__doc *doc, const kvshard__node *map)
{
    return map->kind == KVSHARD__NODE_MAPPING && (at(doc, map->id)->word & INDEXED_FLAG) &&
           find_index(doc, map->id)->by_sort;
}

bool kvshard__scalar_is(const kvshard__node *node, const char *s)
{
    return node->kind == KVSHARD__NODE_SCALAR && kvshard__text_is(node->text, node->count, s);
}

bool kvshard__node_is_null(const kvshard__node *node)
{
    return node->kind == KVSHARD__NODE_SCALAR &&
           is_null_scalar(node->tag,
                          node->style == KVSHARD__VALUE_PLAIN && node->tag == KVSHARD__TAG_NONE,
                          node->text, node->count);
}

void kvshard__node_describe(char *buf, size_t cap, const kvshard__node *node)
{
    if (node->kind == KVSHARD__NODE_MAPPING) {
        snprintf(buf, cap, "a mapping");
    } else if (node->kind == KVSHARD__NODE_SEQUENCE) {
        snprintf(buf, cap, "a list");
    } else if (kvshard__node_is_null(node)) {
        snprintf(buf, cap, "null");
    } else {
        char shown[128];
        kvshard__excerpt(shown, sizeof shown, node->text, node->count, 32);
        snprintf(buf, cap, "%s\"%s\"", node->style == KVSHARD__VALUE_QUOTED ? "the string " : "",
                 shown);
    }
}

int kvshard__node_uint(uint64_t *out, const kvshard__doc *doc, const kvshard__node *node,
                       const char *what, uint64_t min, uint64_t max, kvshard_error *err)
{
    char desc[160];
    if (node->kind != KVSHARD__NODE_SCALAR || node->style != KVSHARD__VALUE_PLAIN ||
        node->tag == KVSHARD__TAG_FLOAT || node->tag == KVSHARD__TAG_BOOL ||
        node->tag == KVSHARD__TAG_NULL) {
        kvshard__node_describe(desc, sizeof desc, node);
        return kvshard__doc_fail(doc, err, KVSHARD_ETYPE, node,
                                 "%s: expected an integer, found %s%s", what,
                                 node->tag == KVSHARD__TAG_FLOAT ? "!!float " : "", desc);
    }
    /* YAML 1.1 reads 010 as octal 8 and YAML 1.2 as 10: refuse to guess. */
    size_t sign = node->count > 0 && (node->text[0] == '+' || node->text[0] == '-') ? 1 : 0;
    if (node->count > sign + 1 && node->text[sign] == '0' &&
        kvshard__all_digits(node->text + sign, node->count - sign)) {
        kvshard__node_describe(desc, sizeof desc, node);
        return kvshard__doc_fail(doc, err, KVSHARD_ETYPE, node,
                                 "%s: %s has a leading zero, which YAML readers take for octal; "
                                 "write the number without it",
                                 what, desc);
    }
    /* The common case, up to 9 digits in range, without the general parser
     * (which reads them the same). */
    if (node->count >= 1 && node->count <= 9) {
        uint64_t v = 0;
        size_t i = 0;
        for (; i < node->count; i++) {
            unsigned d = (unsigned)(unsigned char)node->text[i] - '0';
            if (d > 9)
                break;
            v = v * 10 + d;
        }
        if (i == node->count && v >= min && v <= max) {
            *out = v;
            return KVSHARD_OK;
        }
    }
    /* Parsed without an error record first: clearing one costs more than
     * parsing a number. A failure is parsed again for its message. */
    kvshard__mark m = kvshard__no_mark;
    int rc =
        kvshard__parse_uint(out, node->text, node->count, min, max, what, doc->source, m, NULL);
    if (rc && err && err->code == KVSHARD_OK) {
        kvshard_error local;
        kvshard__error_reset(&local);
        uint64_t ignored;
        (void)kvshard__parse_uint(&ignored, node->text, node->count, min, max, what, doc->source, m,
                                  &local);
        *err = local;
        kvshard__error_locate(err, doc->source, kvshard__doc_mark(doc, node->offset));
    }
    return rc;
}

int kvshard__node_string(const char **out, size_t *out_len, const kvshard__doc *doc,
                         const kvshard__node *node, const char *what, kvshard_error *err)
{
    if (node->kind != KVSHARD__NODE_SCALAR || kvshard__node_is_null(node)) {
        char desc[160];
        kvshard__node_describe(desc, sizeof desc, node);
        return kvshard__doc_fail(doc, err, KVSHARD_ETYPE, node, "%s: expected a string, found %s",
                                 what, desc);
    }
    *out = node->text;
    *out_len = node->count;
    return KVSHARD_OK;
}

int kvshard__node_expect(const kvshard__doc *doc, const kvshard__node *node,
                         kvshard__node_kind kind, const char *what, kvshard_error *err)
{
    if (node->kind == kind)
        return KVSHARD_OK;
    char desc[160];
    kvshard__node_describe(desc, sizeof desc, node);
    return kvshard__doc_fail(doc, err, KVSHARD_ETYPE, node, "%s: expected %s, found %s", what,
                             kind == KVSHARD__NODE_MAPPING ? "a mapping" : "a list", desc);
}
