/* safetensors headers -> the list of a model directory's tensors.
 *
 *   file   = N (u64, little-endian) | N bytes of JSON | tensor data (never read)
 *   header = { "__metadata__": {...}, NAME: {"dtype": S, "shape": [n...],
 *                                            "data_offsets": [begin, end]}, ... }
 *   index  = { "metadata": {"total_size": n}, "weight_map": {NAME: FILE, ...} }
 *
 * The JSON goes through kvshard's strict JSON front-end (json_doc.c) to the
 * loader's tree, which brings its limits and its duplicate-key check, and
 * refuses what JSON does not allow as the text is read. The checks of each
 * node's form (json_form) stay: they say what the reader accepts whichever
 * front-end built the tree. */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC, fstat, opendir */
#include "text/safetensors.h"

#include "base/checked.h"
#include "base/hash.h"
#include "text/file.h"
#include "text/json_doc.h"
#include "text/yaml_marks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char INDEX_NAME[] = "model.safetensors.index.json";
static const char SINGLE_NAME[] = "model.safetensors";
static const char SUFFIX[] = ".safetensors";

/* Bytes of a dtype's element, for the dtypes whose byte count is checked. */
static const struct {
    const char *name;
    uint32_t bits;
} dtypes[] = {
    {"BF16", 16}, {"F32", 32},    {"F16", 16},    {"F8_E4M3", 8}, {"U8", 8},
    {"I32", 32},  {"I8", 8},      {"F8_E5M2", 8}, {"I64", 64},    {"F64", 64},
    {"BOOL", 8},  {"I16", 16},    {"U16", 16},    {"U32", 32},    {"U64", 64},
    {"F4", 4},    {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"F8_E8M0", 8}, {"E8M0", 8},
};

uint32_t kvshard_safetensors__dtype_bits(const char *dtype, size_t len)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (kvshard_text__is(dtype, len, dtypes[i].name))
            return dtypes[i].bits;
    }
    return 0;
}

/* ---- storage ---------------------------------------------------------------------- */

/* Names, dtypes and shapes in chunks that never move, 8-byte aligned. */
struct kvshard__st_arena {
    kvshard__st_arena *next;
    size_t used; /* words */
    size_t cap;
    uint64_t data[];
};

#define ARENA_WORDS ((size_t)32 * 1024)

static void *arena_take(kvshard__safetensors *s, size_t bytes)
{
    size_t words = bytes / 8 + 1;
    kvshard__st_arena *c = s->arena;
    if (!c || c->cap - c->used < words) {
        size_t cap = words > ARENA_WORDS ? words : ARENA_WORDS;
        if (cap > (SIZE_MAX - sizeof *c) / 8 ||
            !(c = kvshard_alloc__bytes(&s->alloc, 1, sizeof *c + cap * 8)))
            return NULL;
        c->next = s->arena;
        c->used = 0;
        c->cap = cap;
        s->arena = c;
    }
    void *p = c->data + c->used;
    c->used += words;
    return p;
}

static const char *arena_string(kvshard__safetensors *s, const char *text, size_t len)
{
    char *p = arena_take(s, len + 1);
    if (p) {
        memcpy(p, text, len);
        p[len] = '\0';
    }
    return p;
}

void kvshard_safetensors__free(kvshard__safetensors *s)
{
    if (!s)
        return;
    kvshard_allocator a = s->alloc;
    for (kvshard__st_arena *c = s->arena; c;) {
        kvshard__st_arena *next = c->next;
        kvshard_alloc__free(&a, c);
        c = next;
    }
    kvshard_alloc__free(&a, s->tensors);
    kvshard_alloc__free(&a, s->shards);
    kvshard_alloc__free(&a, s);
}

static int new_set(kvshard__safetensors **out, const kvshard_allocator *alloc, size_t max_tensors,
                   uint64_t max_json, const char *source, kvshard_error *err)
{
    kvshard_allocator a = kvshard_alloc__allocator_or_default(alloc);
    kvshard__safetensors *s = kvshard_alloc__calloc(&a, 1, sizeof *s);
    if (!s)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, source, kvshard_error__no_mark,
                             "safetensors: out of memory");
    s->alloc = a;
    s->max_tensors = max_tensors ? max_tensors : KVSHARD__ST_MAX_TENSORS;
    s->max_json = max_json ? max_json : KVSHARD__ST_MAX_JSON_TOTAL;
    *out = s;
    return KVSHARD_OK;
}

/* Room for `more` tensors: the array doubles, so a directory costs a few
 * copies of its final size at most. */
static bool reserve_tensors(kvshard__safetensors *s, size_t more)
{
    if (s->tensor_cap - s->count >= more)
        return true;
    size_t cap = s->tensor_cap ? s->tensor_cap : 64;
    while (cap - s->count < more)
        cap *= 2;
    kvshard__tensor *grown = kvshard_alloc__bytes(&s->alloc, cap, sizeof *grown);
    if (!grown)
        return false;
    if (s->count)
        memcpy(grown, s->tensors, s->count * sizeof *grown);
    kvshard_alloc__free(&s->alloc, s->tensors);
    s->tensors = grown;
    s->tensor_cap = cap;
    return true;
}

static int add_shard(kvshard__safetensors *s, const char *name, size_t len, const char *source,
                     kvshard_error *err)
{
    if (s->shard_count == KVSHARD__ST_MAX_SHARDS)
        return kvshard_error__fail(err, KVSHARD_ELIMIT, source, kvshard_error__no_mark,
                             "safetensors: more than %u shard files (the limit)",
                             KVSHARD__ST_MAX_SHARDS);
    if (s->shard_count == s->shard_cap) {
        uint32_t cap = s->shard_cap ? s->shard_cap * 2 : 8;
        const char **grown = kvshard_alloc__bytes(&s->alloc, cap, sizeof *grown);
        if (!grown)
            return kvshard_error__fail(err, KVSHARD_ENOMEM, source, kvshard_error__no_mark,
                                 "safetensors: out of memory");
        if (s->shard_count)
            memcpy(grown, s->shards, s->shard_count * sizeof *grown);
        kvshard_alloc__free(&s->alloc, s->shards);
        s->shards = grown;
        s->shard_cap = cap;
    }
    const char *copy = arena_string(s, name, len);
    if (!copy)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, source, kvshard_error__no_mark,
                             "safetensors: out of memory");
    s->shards[s->shard_count++] = copy;
    return KVSHARD_OK;
}

/* ---- a table of names ---------------------------------------------------------------- */

/* Open addressing over indexes into a list of names (shards of an index,
 * tensors of several shards): slot = index + 1, 0 empty. The names are the
 * checkpoint's, so the hash is keyed per table (base/hash.h). */
typedef struct name_table {
    uint32_t *slots;
    size_t mask;
    kvshard__hash_key key;
} name_table;

static size_t slot_of(const name_table *t, const char *s, size_t len)
{
    return (size_t)kvshard_hash__of(&t->key, s, len) & t->mask;
}

static bool table_init(name_table *t, const kvshard_allocator *a, size_t entries)
{
    size_t slots = 16;
    while (slots < 2 * entries)
        slots *= 2;
    t->slots = kvshard_alloc__calloc(a, slots, sizeof *t->slots);
    t->mask = slots - 1;
    t->key = kvshard_hash__key(kvshard_hash__seed(t, (uint64_t)(uintptr_t)t->slots));
    return t->slots != NULL;
}

/* The slot of `name` among names[], or the empty slot where it belongs. */
static uint32_t *table_find(const name_table *t, const char *const *names, const uint32_t *lens,
                            size_t stride, const char *name, size_t len)
{
    size_t s = slot_of(t, name, len);
    for (;; s = (s + 1) & t->mask) {
        uint32_t v = t->slots[s];
        if (v == 0)
            return &t->slots[s];
        kvshard_hash__probes++;
        const char *other = *(const char *const *)((const char *)names + (v - 1) * stride);
        uint32_t other_len = *(const uint32_t *)((const char *)lens + (v - 1) * stride);
        if (other_len == len && memcmp(other, name, len) == 0)
            return &t->slots[s];
    }
}

/* ---- errors ------------------------------------------------------------------------- */

/* The file a message is about: its path (the error's source), the name the
 * message gives it, and the file offset of its JSON text. */
typedef struct st_file {
    kvshard__safetensors *set;
    const char *path;
    const char *name;
    size_t base;
    const kvshard__doc *doc; /* while its JSON is parsed */
    kvshard_error *err;
} st_file;

static int st_fail(const st_file *f, int code, const kvshard__node *at, const char *fmt, ...)
    KVSHARD__PRINTF(4, 5);

static int st_fail(const st_file *f, int code, const kvshard__node *at, const char *fmt, ...)
{
    if (!f->err || f->err->code != KVSHARD_OK)
        return code;
    char why[KVSHARD_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    kvshard__mark m = kvshard_error__no_mark;
    if (at && f->doc) {
        m = kvshard_marks__mark(f->doc, at->offset);
        m.offset += f->base;
    }
    return kvshard_error__fail(f->err, code, f->path, m, "safetensors: %s: %s", f->name, why);
}

/* The loader's error, under the reader's name and at the file's offset. */
static int doc_error(const st_file *f, const kvshard_error *local)
{
    if (!f->err || f->err->code != KVSHARD_OK)
        return local->code;
    kvshard__mark m = {local->line, local->column, local->offset + f->base};
    if (local->line == 0)
        m = kvshard_error__no_mark;
    bool syntax = local->code == KVSHARD_ESYNTAX || local->code == KVSHARD_EUTF8;
    const char *what =
        f->name == INDEX_NAME ? "the index is not JSON: " : "the header is not JSON: ";
    return kvshard_error__fail(f->err, local->code, f->path, m, "safetensors: %s: %s%s", f->name,
                         syntax ? what : "", local->message);
}

static int out_of_memory(const st_file *f)
{
    return st_fail(f, KVSHARD_ENOMEM, NULL, "out of memory");
}

/* ---- JSON values --------------------------------------------------------------------- */

/* A node as JSON writes it: a collection opened by its bracket, a string in
 * double quotes, a number or word as plain text of its own (not an alias, a
 * tag, or folded across lines). */
static bool json_form(const kvshard__doc *doc, const kvshard__node *n)
{
    char c = doc->text[n->offset];
    switch (n->kind) {
    case KVSHARD__NODE_MAPPING: return c == '{';
    case KVSHARD__NODE_SEQUENCE: return c == '[';
    case KVSHARD__NODE_SCALAR:
    default:
        return n->style == KVSHARD__VALUE_QUOTED
                   ? c == '"'
                   : n->tag == KVSHARD__TAG_NONE && n->text == doc->text + n->offset;
    }
}

static bool json_string(const kvshard__doc *doc, const kvshard__node *n)
{
    return n->kind == KVSHARD__NODE_SCALAR && n->style == KVSHARD__VALUE_QUOTED &&
           json_form(doc, n);
}

typedef enum { UINT_OK, UINT_NOT, UINT_LARGE } uint_read;

/* A JSON integer >= 0: digits without a leading zero. */
static uint_read json_uint(uint64_t *out, const kvshard__doc *doc, const kvshard__node *n)
{
    if (n->kind != KVSHARD__NODE_SCALAR || n->style != KVSHARD__VALUE_PLAIN || n->count == 0 ||
        !json_form(doc, n) || (n->count > 1 && n->text[0] == '0'))
        return UINT_NOT;
    uint64_t v = 0;
    bool large = false;
    for (uint32_t i = 0; i < n->count; i++) {
        unsigned d = (unsigned)(unsigned char)n->text[i] - '0';
        if (d > 9)
            return UINT_NOT;
        if (!large && (!kvshard__mul(&v, v, 10) || !kvshard__add(&v, v, d)))
            large = true;
    }
    if (large)
        return UINT_LARGE;
    *out = v;
    return UINT_OK;
}

static void describe(char *buf, size_t cap, const kvshard__node *n)
{
    kvshard_tape__node_describe(buf, cap, n);
}

/* "[16, 32]", cut with "..." past a few dimensions. */
static void format_shape(char *buf, size_t cap, const uint64_t *dims, uint32_t ndim)
{
    size_t o = 0;
    o += (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < ndim && o < cap; i++) {
        if (i == 6) {
            snprintf(buf + o, cap - o, ", ...");
            o += 5;
            break;
        }
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "",
                              (unsigned long long)dims[i]);
    }
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

/* ---- one header ----------------------------------------------------------------------- */

/* A tensor's name, dtype and shape as messages show them: made only for a
 * message, since a header of 100,000 entries needs none of them. */
static const char *tensor_name(char *buf, size_t cap, const kvshard__node *key)
{
    kvshard_error__excerpt(buf, cap, key->text, key->count, 64);
    return buf;
}

static const char *node_excerpt(char *buf, size_t cap, const kvshard__node *n, size_t max)
{
    kvshard_error__excerpt(buf, cap, n->text, n->count, max);
    return buf;
}

static const char *shape_text(char *buf, size_t cap, const uint64_t *dims, uint32_t ndim)
{
    format_shape(buf, cap, dims, ndim);
    return buf;
}

/* ceil(elements x bits / 8) without forming the bit count: a tensor of
 * 2^63 one-byte elements is a size, though its bits pass 2^64. With
 * elements = 8q + r that is q x bits + ceil(r x bits / 8). */
static bool dtype_bytes(uint64_t *out, uint64_t elements, uint32_t bits)
{
    uint64_t whole;
    return kvshard__mul(&whole, elements / 8, bits) &&
           kvshard__add(out, whole, kvshard__ceil_div(elements % 8 * bits, 8));
}

/* One tensor's entry into *t; its first byte in *begin, and where its
 * data_offsets stand in the JSON in *offsets_at (for the overlap check). */
static int read_entry(st_file *f, const kvshard__node *key, const kvshard__node *value,
                      kvshard__tensor *t, uint64_t *begin_out, uint32_t *offsets_at)
{
    const kvshard__doc *doc = f->doc;
    char name[100], desc[160];
    if (value->kind != KVSHARD__NODE_MAPPING || !json_form(doc, value)) {
        describe(desc, sizeof desc, value);
        return st_fail(f, KVSHARD_ETYPE, value,
                       "tensor \"%s\": expected an object of dtype, shape and data_offsets, "
                       "found %s",
                       tensor_name(name, sizeof name, key), desc);
    }
    kvshard__node dtype = {0}, shape = {0}, offsets = {0};
    bool has_dtype = false, has_shape = false, has_offsets = false;
    kvshard__iter it = kvshard_tape__iter_begin(doc, value);
    kvshard__node k, v;
    while (kvshard_tape__iter_next(doc, &it, &k) && kvshard_tape__iter_next(doc, &it, &v)) {
        if (kvshard_text__is(k.text, k.count, "dtype")) {
            dtype = v;
            has_dtype = true;
        } else if (kvshard_text__is(k.text, k.count, "shape")) {
            shape = v;
            has_shape = true;
        } else if (kvshard_text__is(k.text, k.count, "data_offsets")) {
            offsets = v;
            has_offsets = true;
        }
    }
    if (!has_dtype || !has_shape || !has_offsets)
        return st_fail(f, KVSHARD_EMISSING, value,
                       "tensor \"%s\" has no %s (an entry holds dtype, shape and data_offsets)",
                       tensor_name(name, sizeof name, key),
                       !has_dtype   ? "dtype"
                       : !has_shape ? "shape"
                                    : "data_offsets");
    if (!json_string(doc, &dtype)) {
        describe(desc, sizeof desc, &dtype);
        return st_fail(f, KVSHARD_ETYPE, &dtype, "tensor \"%s\": dtype must be a string, found %s",
                       tensor_name(name, sizeof name, key), desc);
    }
    if (shape.kind != KVSHARD__NODE_SEQUENCE || !json_form(doc, &shape)) {
        describe(desc, sizeof desc, &shape);
        return st_fail(f, KVSHARD_ETYPE, &shape,
                       "tensor \"%s\": shape must be a list of integers, found %s",
                       tensor_name(name, sizeof name, key), desc);
    }
    uint64_t *dims = arena_take(f->set, (size_t)shape.count * sizeof *dims);
    if (!dims)
        return out_of_memory(f);
    uint64_t elements = 1;
    bool too_many = false;
    it = kvshard_tape__iter_begin(doc, &shape);
    for (uint32_t i = 0; kvshard_tape__iter_next(doc, &it, &v); i++) {
        uint_read r = json_uint(&dims[i], doc, &v);
        if (r != UINT_OK) {
            describe(desc, sizeof desc, &v);
            return st_fail(f, r == UINT_LARGE ? KVSHARD_EOVERFLOW : KVSHARD_ETYPE, &v,
                           "tensor \"%s\": shape must be a list of integers from 0 to 2^64 - 1, "
                           "found %s",
                           tensor_name(name, sizeof name, key), desc);
        }
        if (!too_many && !kvshard__mul(&elements, elements, dims[i]))
            too_many = true;
    }
    char shown_shape[96];
    /* A zero dimension makes the product 0 whatever the others are. */
    for (uint32_t i = 0; too_many && i < shape.count; i++) {
        if (dims[i] == 0) {
            too_many = false;
            elements = 0;
        }
    }
    if (too_many)
        return st_fail(f, KVSHARD_EOVERFLOW, &shape,
                       "tensor \"%s\": shape %s has more than 2^64 - 1 elements",
                       tensor_name(name, sizeof name, key),
                       shape_text(shown_shape, sizeof shown_shape, dims, shape.count));
    uint64_t begin = 0, end = 0;
    bool offsets_ok =
        offsets.kind == KVSHARD__NODE_SEQUENCE && offsets.count == 2 && json_form(doc, &offsets);
    uint_read r = UINT_NOT;
    if (offsets_ok) {
        kvshard__node b = kvshard_tape__seq_item(doc, &offsets, 0),
                      e = kvshard_tape__seq_item(doc, &offsets, 1);
        r = json_uint(&begin, doc, &b);
        if (r == UINT_OK)
            r = json_uint(&end, doc, &e);
    }
    if (r != UINT_OK) {
        describe(desc, sizeof desc, &offsets);
        return st_fail(f, r == UINT_LARGE ? KVSHARD_EOVERFLOW : KVSHARD_ETYPE, &offsets,
                       "tensor \"%s\": data_offsets must be two integers [begin, end] from 0 to "
                       "2^64 - 1, found %s",
                       tensor_name(name, sizeof name, key), desc);
    }
    if (begin > end)
        return st_fail(f, KVSHARD_ERANGE, &offsets,
                       "tensor \"%s\": data_offsets [%llu, %llu] begin after they end",
                       tensor_name(name, sizeof name, key), (unsigned long long)begin,
                       (unsigned long long)end);
    uint32_t bits = kvshard_safetensors__dtype_bits(dtype.text, dtype.count);
    char shown_dtype[48];
    if (bits) {
        uint64_t need;
        if (!dtype_bytes(&need, elements, bits))
            return st_fail(f, KVSHARD_EOVERFLOW, &shape,
                           "tensor \"%s\": %s %s takes more than 2^64 - 1 bytes",
                           tensor_name(name, sizeof name, key),
                           node_excerpt(shown_dtype, sizeof shown_dtype, &dtype, 24),
                           shape_text(shown_shape, sizeof shown_shape, dims, shape.count));
        if (end - begin != need)
            return st_fail(f, KVSHARD_ERANGE, &offsets,
                           "tensor \"%s\": %s %s takes %llu bytes, but data_offsets [%llu, %llu] "
                           "hold %llu",
                           tensor_name(name, sizeof name, key),
                           node_excerpt(shown_dtype, sizeof shown_dtype, &dtype, 24),
                           shape_text(shown_shape, sizeof shown_shape, dims, shape.count),
                           (unsigned long long)need, (unsigned long long)begin,
                           (unsigned long long)end, (unsigned long long)(end - begin));
    }
    const char *dtype_text = NULL;
    for (size_t i = 0; bits && i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (kvshard_text__is(dtype.text, dtype.count, dtypes[i].name))
            dtype_text = dtypes[i].name;
    }
    if (!dtype_text && !(dtype_text = arena_string(f->set, dtype.text, dtype.count)))
        return out_of_memory(f);
    const char *copy = arena_string(f->set, key->text, key->count);
    if (!copy)
        return out_of_memory(f);
    t->name = copy;
    t->name_len = key->count;
    t->dtype = dtype_text;
    t->shape = dims;
    t->ndim = shape.count;
    t->elements = elements;
    t->bytes = end - begin;
    t->bits = bits;
    *begin_out = begin;
    *offsets_at = offsets.offset;
    return KVSHARD_OK;
}

/* A tensor's bytes in its file, for the overlap check. */
typedef struct st_range {
    uint64_t begin, end;
    size_t tensor;       /* index into the set's tensors */
    uint32_t offsets_at; /* its data_offsets in the JSON */
} st_range;

static int by_begin(const void *pa, const void *pb)
{
    const st_range *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    if (a->end != b->end)
        return a->end < b->end ? -1 : 1;
    return a->tensor < b->tensor ? -1 : a->tensor > b->tensor;
}

/* The format stores every byte of a file once: two tensors whose [begin,
 * end) share a byte would count it twice. Empty ranges share none. Headers
 * list their tensors in file order as a rule, so the sort is rarely made. */
static int check_overlaps(st_file *f, st_range *r, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (by_begin(&r[i - 1], &r[i]) > 0) {
            qsort(r, n, sizeof *r, by_begin);
            break;
        }
    }
    size_t widest = 0; /* the range reaching furthest among those before i */
    for (size_t i = 1; i < n; i++) {
        if (r[i].begin < r[widest].end) {
            /* Blame the one the header lists later, naming the other. */
            const st_range *later = r[i].tensor > r[widest].tensor ? &r[i] : &r[widest];
            const st_range *other = later == &r[i] ? &r[widest] : &r[i];
            const kvshard__tensor *a = &f->set->tensors[later->tensor];
            const kvshard__tensor *b = &f->set->tensors[other->tensor];
            char name_a[100], name_b[100];
            kvshard_error__excerpt(name_a, sizeof name_a, a->name, a->name_len, 64);
            kvshard_error__excerpt(name_b, sizeof name_b, b->name, b->name_len, 64);
            kvshard__node at = {0};
            at.offset = later->offsets_at;
            return st_fail(f, KVSHARD_ERANGE, &at,
                           "tensor \"%s\": data_offsets [%llu, %llu] overlap those of tensor "
                           "\"%s\", [%llu, %llu]; a safetensors file stores each byte once",
                           name_a, (unsigned long long)later->begin, (unsigned long long)later->end,
                           name_b, (unsigned long long)other->begin,
                           (unsigned long long)other->end);
        }
        if (r[i].end > r[widest].end)
            widest = i;
    }
    return KVSHARD_OK;
}

/* The tensors of one header's JSON, appended to the set as shard `shard`. */
static int read_header(st_file *f, uint32_t shard, const char *json, size_t len)
{
    kvshard__safetensors *s = f->set;
    kvshard__doc doc;
    kvshard_error local;
    kvshard_error__reset(&local);
    int rc = kvshard_json_doc__parse(&doc, json, len, f->path, &s->alloc, &local);
    if (rc)
        return doc_error(f, &local);
    f->doc = &doc;
    kvshard__node root = kvshard_tape__doc_root(&doc);
    char desc[160];
    st_range *ranges = NULL;
    size_t nranges = 0;
    if (root.kind != KVSHARD__NODE_MAPPING || !json_form(&doc, &root)) {
        describe(desc, sizeof desc, &root);
        rc = st_fail(f, KVSHARD_ETYPE, &root, "the header is not a JSON object (found %s)", desc);
        goto done;
    }
    if (root.count > s->max_tensors - s->count + 1) { /* + 1: __metadata__ */
        rc =
            st_fail(f, KVSHARD_ELIMIT, &root,
                    "more than %zu tensors in the directory's headers (the limit)", s->max_tensors);
        goto done;
    }
    if (!reserve_tensors(s, root.count) ||
        (root.count && !(ranges = kvshard_alloc__bytes(&s->alloc, root.count, sizeof *ranges)))) {
        rc = out_of_memory(f);
        goto done;
    }
    kvshard__iter it = kvshard_tape__iter_begin(&doc, &root);
    kvshard__node key, value;
    while (kvshard_tape__iter_next(&doc, &it, &key) && kvshard_tape__iter_next(&doc, &it, &value)) {
        if (!json_string(&doc, &key)) {
            describe(desc, sizeof desc, &key);
            rc = st_fail(f, KVSHARD_ETYPE, &key,
                         "tensor names must be JSON strings in double quotes, found %s", desc);
            goto done;
        }
        if (kvshard_text__is(key.text, key.count, "__metadata__"))
            continue;
        if (s->count == s->max_tensors) {
            rc = st_fail(f, KVSHARD_ELIMIT, &key,
                         "more than %zu tensors in the directory's headers (the limit)",
                         s->max_tensors);
            goto done;
        }
        kvshard__tensor *t = &s->tensors[s->count];
        st_range *range = &ranges[nranges];
        if ((rc = read_entry(f, &key, &value, t, &range->begin, &range->offsets_at)) != 0)
            goto done;
        t->shard = shard;
        range->end = range->begin + t->bytes;
        range->tensor = s->count;
        nranges += t->bytes > 0;
        if (!kvshard__add(&s->total_bytes, s->total_bytes, t->bytes)) {
            rc = st_fail(f, KVSHARD_EOVERFLOW, &key,
                         "the tensors' bytes pass 2^64 - 1 at tensor \"%s\"", t->name);
            goto done;
        }
        s->count++;
    }
    rc = check_overlaps(f, ranges, nranges);
done:
    f->doc = NULL;
    kvshard_alloc__free(&s->alloc, ranges);
    kvshard_tape__doc_free(&doc);
    return rc;
}

/* A shard's image: checks of the 8-byte length, then the header. `have` is
 * how many bytes the file holds (for the message when it ends early). */
static int check_length(st_file *f, uint64_t n, uint64_t have)
{
    if (n > KVSHARD__ST_MAX_HEADER)
        return st_fail(f, KVSHARD_ELIMIT, NULL,
                       "the header length is %llu bytes, above the format's limit of 100,000,000",
                       (unsigned long long)n);
    if (n > KVSHARD_MAX_DOCUMENT_BYTES)
        return st_fail(f, KVSHARD_ELIMIT, NULL,
                       "the header is %llu bytes; kvshard parses at most %u bytes of JSON "
                       "(KVSHARD_MAX_DOCUMENT_BYTES)",
                       (unsigned long long)n, KVSHARD_MAX_DOCUMENT_BYTES);
    if (have - 8 < n)
        return st_fail(f, KVSHARD_ESYNTAX, NULL,
                       "the file ends inside its header: 8 + %llu bytes announced, %llu present",
                       (unsigned long long)n, (unsigned long long)have);
    return KVSHARD_OK;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int too_short(st_file *f, uint64_t have)
{
    return st_fail(f, KVSHARD_ESYNTAX, NULL,
                   "the file is %llu bytes, shorter than the 8 that give its header's length",
                   (unsigned long long)have);
}

int kvshard_safetensors__read_bytes(kvshard__safetensors **out, const void *bytes, size_t len,
                                    const char *name, const kvshard_allocator *alloc,
                                    size_t max_tensors, kvshard_error *err)
{
    kvshard_error__reset(err);
    if (!out || (!bytes && len) || !name)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "safetensors: NULL argument");
    kvshard__safetensors *s = NULL; /* new_set sets it on success */
    int rc = new_set(&s, alloc, max_tensors, 0, name, err);
    if (rc)
        return rc;
    st_file f = {s, name, name, 8, NULL, err};
    s->files = KVSHARD__ST_SINGLE;
    const unsigned char *p = bytes;
    if (len < 8)
        rc = too_short(&f, len);
    else if ((rc = check_length(&f, le64(p), len)) == 0 &&
             (rc = add_shard(s, name, strlen(name), name, err)) == 0)
        rc = read_header(&f, 0, (const char *)p + 8, (size_t)le64(p));
    if (rc) {
        kvshard_safetensors__free(s);
        return rc;
    }
    *out = s;
    return KVSHARD_OK;
}

/* ---- files ----------------------------------------------------------------------------- */

static char *join(const kvshard_allocator *a, const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    bool slash = dl > 0 && dir[dl - 1] != '/';
    char *p = kvshard_alloc__bytes(a, dl + slash + nl + 1, 1);
    if (p) {
        memcpy(p, dir, dl);
        if (slash)
            p[dl] = '/';
        memcpy(p + dl + slash, name, nl + 1);
    }
    return p;
}

/* Read exactly `want` bytes unless the file ends first; -1 with errno on a
 * read error, else the bytes read. */
static long long read_full(int fd, void *buf, size_t want)
{
    size_t got = 0;
    while (got < want) {
        ssize_t n = read(fd, (char *)buf + got, want - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (long long)got;
}

/* A directory as it is read. One file reached by two names (a hard link, a
 * symbolic link) is one file: the files opened so far are kept by device
 * and inode, so that it is read once. */
typedef struct dir_read {
    kvshard__safetensors *set;
    const char *dir;
    const char *index_path; /* the index that names the shards, or NULL */
    const kvshard__st_options *options;
    kvshard__file_id *ids; /* per shard, once opened */
    size_t *first;         /* per shard, its first tensor; [shard_count]: the end */
    uint32_t *slots;       /* open addressing over ids: shard + 1, 0 empty */
    size_t mask;
} dir_read;

static void tell(const dir_read *r, const char *path, kvshard__file_id id)
{
    if (r->options->on_file)
        r->options->on_file(r->options->user, path, id);
}

/* The earlier shard that is file `id`, or UINT32_MAX; `shard` is noted as
 * that file when it is the first. */
static uint32_t same_file(dir_read *r, uint32_t shard, kvshard__file_id id)
{
    /* Unkeyed: device and inode numbers come from the file system, not from
     * the input's text as names do, so no input can pick colliding ones. */
    uint64_t h = id.ino * 0x9E3779B97F4A7C15ull ^ id.dev * 0xC2B2AE3D27D4EB4Full;
    size_t slot = (size_t)(h ^ h >> 32) & r->mask;
    for (;; slot = (slot + 1) & r->mask) {
        uint32_t v = r->slots[slot];
        if (v == 0)
            break;
        if (r->ids[v - 1].dev == id.dev && r->ids[v - 1].ino == id.ino)
            return v - 1;
    }
    r->ids[shard] = id;
    r->slots[slot] = shard + 1;
    return UINT32_MAX;
}

/* A shard that is the same file as an earlier one: nothing more to count
 * when that one held no tensor, else each of its tensors twice. */
static int read_twice(const dir_read *r, uint32_t shard, uint32_t twin, const char *path,
                      kvshard_error *err)
{
    const kvshard__safetensors *s = r->set;
    if (r->first[twin + 1] == r->first[twin])
        return KVSHARD_OK;
    const kvshard__tensor *t = &s->tensors[r->first[twin]];
    char name[100];
    kvshard_error__excerpt(name, sizeof name, t->name, t->name_len, 64);
    return kvshard_error__fail(err, KVSHARD_EDUPKEY, path, kvshard_error__no_mark,
                         "safetensors: %s: it is the same file as %s (a link), so tensor \"%s\" "
                         "and every other of it would count twice",
                         s->shards[shard], s->shards[twin], name);
}

/* The index and the headers of a directory are bounded together. */
static int check_total(st_file *f, uint64_t n, const char *what)
{
    kvshard__safetensors *s = f->set;
    if (n > s->max_json - s->json_bytes)
        return st_fail(f, KVSHARD_ELIMIT, NULL,
                       "%s of %llu bytes brings the directory's JSON to %llu bytes, past the "
                       "%llu kvshard reads for one checkpoint (its index and headers together)",
                       what, (unsigned long long)n, (unsigned long long)(s->json_bytes + n),
                       (unsigned long long)s->max_json);
    s->json_bytes += n;
    return KVSHARD_OK;
}

/* Read shard `shard` of the set from `path`: its first 8 bytes, then its
 * header, never the data. */
static int read_shard_file(dir_read *r, uint32_t shard, const char *path, kvshard_error *err)
{
    kvshard__safetensors *s = r->set;
    const char *index_path = r->index_path;
    const char *name = s->shards[shard];
    st_file f = {s, path, name, 8, NULL, err};
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (index_path && (e == ENOENT || e == ENOTDIR))
            return kvshard_error__fail(err, KVSHARD_EIO, index_path, kvshard_error__no_mark,
                                 "safetensors: %s: its weight_map names %s, which the directory "
                                 "does not hold",
                                 INDEX_NAME, name);
        return st_fail(&f, KVSHARD_EIO, NULL, "cannot open: %s", strerror(e));
    }
    struct stat st;
    int rc = KVSHARD_OK;
    char *json = NULL;
    unsigned char head[8];
    long long got;
    kvshard__file_id id = {0, 0};
    uint32_t twin = UINT32_MAX;
    bool known = fstat(fd, &st) == 0;
    int stat_errno = errno;
    if (known) {
        id.dev = (uint64_t)st.st_dev;
        id.ino = (uint64_t)st.st_ino;
        tell(r, path, id);
    }
    if (!known) {
        rc = st_fail(&f, KVSHARD_EIO, NULL, "cannot read: %s", strerror(stat_errno));
    } else if (!S_ISREG(st.st_mode)) {
        rc = st_fail(&f, KVSHARD_EIO, NULL, "cannot read: %s; kvshard reads regular files only",
                     S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
    } else if ((twin = same_file(r, shard, id)) != UINT32_MAX) {
        rc = read_twice(r, shard, twin, path, err);
    } else if ((got = read_full(fd, head, 8)) < 0) {
        rc = st_fail(&f, KVSHARD_EIO, NULL, "cannot read: %s", strerror(errno));
    } else if (got < 8) {
        rc = too_short(&f, (uint64_t)got);
    } else {
        uint64_t n = le64(head);
        uint64_t have = (uint64_t)st.st_size;
        if ((rc = check_length(&f, n, have > 8 ? have : 8 + n)) == 0 &&
            (rc = check_total(&f, n, "its header")) == 0) {
            if (!(json = kvshard_alloc__bytes(&s->alloc, (size_t)n + 1, 1)))
                rc = out_of_memory(&f);
            else if ((got = read_full(fd, json, (size_t)n)) < 0)
                rc = st_fail(&f, KVSHARD_EIO, NULL, "cannot read: %s", strerror(errno));
            else if ((uint64_t)got < n)
                rc = check_length(&f, n, 8 + (uint64_t)got);
        }
        close(fd);
        fd = -1;
        if (rc == KVSHARD_OK) {
            json[n] = '\0';
            rc = read_header(&f, shard, json, (size_t)n);
        }
    }
    if (fd >= 0)
        close(fd);
    kvshard_alloc__free(&s->alloc, json);
    return rc;
}

/* A weight_map value names a file of the directory itself. */
static bool plain_file_name(const char *s, size_t len)
{
    return len > 0 && !memchr(s, '/', len) && !memchr(s, '\\', len) &&
           !kvshard_text__is(s, len, ".") && !kvshard_text__is(s, len, "..");
}

static int exists(const char *path, const char *dir, kvshard_error *err);

/* Whether the directory holds none of the index's shards: 1 none, 0 some
 * (each is then read, and a missing one named), or an error. */
static int no_shard_at_hand(const dir_read *dr, kvshard_error *err)
{
    kvshard__safetensors *s = dr->set;
    for (uint32_t i = 0; i < s->shard_count; i++) {
        char *path = join(&s->alloc, dr->dir, s->shards[i]);
        if (!path)
            return kvshard_error__fail(err, KVSHARD_ENOMEM, dr->dir, kvshard_error__no_mark,
                                       "safetensors: out of memory");
        int found = exists(path, dr->dir, err);
        kvshard_alloc__free(&s->alloc, path);
        if (found != 0)
            return found < 0 ? found : 0;
    }
    return 1;
}

/* The tensors of an index whose shards are absent: their names alone. */
static int keep_index_names(st_file *f, const kvshard__doc *doc, const kvshard__node *map)
{
    kvshard__safetensors *s = f->set;
    if (!reserve_tensors(s, map->count))
        return out_of_memory(f);
    kvshard__iter it = kvshard_tape__iter_begin(doc, map);
    kvshard__node key, value;
    while (kvshard_tape__iter_next(doc, &it, &key) && kvshard_tape__iter_next(doc, &it, &value)) {
        if (s->count >= s->max_tensors)
            return st_fail(f, KVSHARD_ELIMIT, &key, "more than %llu tensors",
                           (unsigned long long)s->max_tensors);
        const char *copy = arena_string(s, key.text, key.count);
        if (!copy)
            return out_of_memory(f);
        kvshard__tensor *t = &s->tensors[s->count++];
        memset(t, 0, sizeof *t);
        t->name = copy;
        t->name_len = (uint32_t)key.count;
        t->dtype = "";
    }
    s->files = KVSHARD__ST_INDEX_ONLY;
    return KVSHARD_OK;
}

/* The index: metadata.total_size, and the distinct shards of weight_map in
 * the order they first appear; with none of them at hand, the tensor names. */
static int read_index(const dir_read *dr, const char *index_path, kvshard_error *err)
{
    kvshard__safetensors *s = dr->set;
    char *text = NULL;
    size_t len = 0;
    kvshard_error local;
    kvshard_error__reset(&local);
    kvshard__file_id id;
    int rc = kvshard_file__read_file_id(&text, &len, &id, &s->alloc, index_path, &local);
    if (rc)
        return kvshard_error__fail(err, rc, index_path, kvshard_error__no_mark,
                                   "safetensors: %s: %s", INDEX_NAME, local.message);
    tell(dr, index_path, id);
    st_file f = {s, index_path, INDEX_NAME, 0, NULL, err};
    kvshard__doc doc;
    if ((rc = check_total(&f, len, "the index")) != 0) {
        kvshard_alloc__free(&s->alloc, text);
        return rc;
    }
    if ((rc = kvshard_json_doc__parse(&doc, text, len, index_path, &s->alloc, &local)) != 0) {
        rc = doc_error(&f, &local);
        kvshard_alloc__free(&s->alloc, text);
        return rc;
    }
    f.doc = &doc;
    name_table seen = {NULL, 0, {{0, 0, 0, 0}}};
    char desc[160], name[100];
    kvshard__node root = kvshard_tape__doc_root(&doc), map, meta, total;
    if (root.kind != KVSHARD__NODE_MAPPING || !json_form(&doc, &root)) {
        describe(desc, sizeof desc, &root);
        rc = st_fail(&f, KVSHARD_ETYPE, &root, "the index is not a JSON object (found %s)", desc);
        goto done;
    }
    if (kvshard_tape__map_get(&doc, &root, "metadata", &meta)) {
        if (meta.kind != KVSHARD__NODE_MAPPING || !json_form(&doc, &meta)) {
            describe(desc, sizeof desc, &meta);
            rc = st_fail(&f, KVSHARD_ETYPE, &meta, "metadata must be an object, found %s", desc);
            goto done;
        }
        if (kvshard_tape__map_get(&doc, &meta, "total_size", &total)) {
            uint_read r = json_uint(&s->total_size, &doc, &total);
            if (r != UINT_OK) {
                describe(desc, sizeof desc, &total);
                rc = st_fail(&f, r == UINT_LARGE ? KVSHARD_EOVERFLOW : KVSHARD_ETYPE, &total,
                             "metadata.total_size must be an integer from 0 to 2^64 - 1, found %s",
                             desc);
                goto done;
            }
            s->has_total_size = true;
        }
    }
    if (!kvshard_tape__map_get(&doc, &root, "weight_map", &map)) {
        rc = st_fail(&f, KVSHARD_EMISSING, &root,
                     "the index has no weight_map (an object from tensor names to shard files)");
        goto done;
    }
    if (map.kind != KVSHARD__NODE_MAPPING || !json_form(&doc, &map)) {
        describe(desc, sizeof desc, &map);
        rc = st_fail(&f, KVSHARD_ETYPE, &map,
                     "weight_map must be an object from tensor names to shard files, found %s",
                     desc);
        goto done;
    }
    if (map.count == 0) {
        /* No checkpoint holds 0 bytes of weights: an empty map is a broken
         * index, not a model without weights. */
        rc = st_fail(&f, KVSHARD_EWEIGHTS, &map,
                     "weight_map is empty: the index names no tensor, so the checkpoint has no "
                     "weights to count");
        goto done;
    }
    if (!table_init(&seen, &s->alloc, 64)) {
        rc = out_of_memory(&f);
        goto done;
    }
    kvshard__iter it = kvshard_tape__iter_begin(&doc, &map);
    kvshard__node key, value;
    const char *last = NULL;
    size_t last_len = 0;
    while (kvshard_tape__iter_next(&doc, &it, &key) && kvshard_tape__iter_next(&doc, &it, &value)) {
        if (!json_string(&doc, &key) || !json_string(&doc, &value)) {
            const kvshard__node *bad = json_string(&doc, &key) ? &value : &key;
            describe(desc, sizeof desc, bad);
            rc = st_fail(&f, KVSHARD_ETYPE, bad,
                         "weight_map: expected tensor names mapped to file names, as JSON "
                         "strings; found %s",
                         desc);
            goto done;
        }
        if (last && value.count == last_len && memcmp(value.text, last, last_len) == 0)
            continue; /* shards are listed in runs */
        if (!plain_file_name(value.text, value.count)) {
            kvshard_error__excerpt(name, sizeof name, key.text, key.count, 64);
            describe(desc, sizeof desc, &value);
            rc = st_fail(&f, KVSHARD_ERANGE, &value,
                         "weight_map: tensor \"%s\" names %s, which is not a plain file name "
                         "(no / or \\, not . or ..)",
                         name, desc);
            goto done;
        }
        last = value.text;
        last_len = value.count;
        /* The table holds shard indexes; a name's length is its strlen. */
        size_t slot = slot_of(&seen, value.text, value.count);
        bool found = false;
        for (;; slot = (slot + 1) & seen.mask) {
            uint32_t v = seen.slots[slot];
            if (v == 0)
                break;
            kvshard_hash__probes++;
            const char *other = s->shards[v - 1];
            if (strlen(other) == value.count && memcmp(other, value.text, value.count) == 0) {
                found = true;
                break;
            }
        }
        if (found)
            continue;
        if ((rc = add_shard(s, value.text, value.count, index_path, err)) != 0)
            goto done;
        seen.slots[slot] = s->shard_count;
        if (2 * (size_t)s->shard_count > seen.mask) {
            /* Grow: insert every shard again into a table twice the size. */
            name_table bigger;
            if (!table_init(&bigger, &s->alloc, 2 * (size_t)s->shard_count)) {
                rc = out_of_memory(&f);
                goto done;
            }
            for (uint32_t i = 0; i < s->shard_count; i++) {
                size_t b = slot_of(&bigger, s->shards[i], strlen(s->shards[i]));
                for (; bigger.slots[b]; b = (b + 1) & bigger.mask)
                    kvshard_hash__probes++;
                bigger.slots[b] = i + 1;
            }
            kvshard_alloc__free(&s->alloc, seen.slots);
            seen = bigger;
        }
    }
    if ((rc = no_shard_at_hand(dr, err)) == 1)
        rc = keep_index_names(&f, &doc, &map);
done:
    kvshard_alloc__free(&s->alloc, seen.slots);
    kvshard_tape__doc_free(&doc);
    kvshard_alloc__free(&s->alloc, text);
    return rc;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every *.safetensors entry of the directory that is not a directory. */
static int list_shards(kvshard__safetensors *s, const char *dir, kvshard_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return kvshard_error__fail(err, KVSHARD_EIO, dir, kvshard_error__no_mark,
                             "safetensors: cannot list the directory: %s", strerror(errno));
    int rc = KVSHARD_OK;
    size_t suffix = sizeof SUFFIX - 1;
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(d);
        if (!e) {
            if (errno)
                rc = kvshard_error__fail(err, KVSHARD_EIO, dir, kvshard_error__no_mark,
                                   "safetensors: cannot list the directory: %s", strerror(errno));
            break;
        }
        size_t len = strlen(e->d_name);
        if (len < suffix || memcmp(e->d_name + len - suffix, SUFFIX, suffix) != 0)
            continue;
        char *path = join(&s->alloc, dir, e->d_name);
        if (!path) {
            rc = kvshard_error__fail(err, KVSHARD_ENOMEM, dir, kvshard_error__no_mark,
                               "safetensors: out of memory");
            break;
        }
        struct stat st;
        bool is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
        kvshard_alloc__free(&s->alloc, path);
        if (!is_dir && (rc = add_shard(s, e->d_name, len, dir, err)) != 0)
            break;
    }
    closedir(d);
    if (rc == KVSHARD_OK && s->shard_count > 1)
        qsort(s->shards, s->shard_count, sizeof *s->shards, compare_names);
    return rc;
}

/* Whether `path` exists: 1, 0, or a negative status for another error. */
static int exists(const char *path, const char *dir, kvshard_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0)
        return 1;
    if (errno == ENOENT || errno == ENOTDIR)
        return 0;
    return kvshard_error__fail(
        err, KVSHARD_EIO, path, kvshard_error__no_mark, "safetensors: %s: cannot read: %s",
        path + strlen(dir) + (dir[0] && dir[strlen(dir) - 1] != '/'), strerror(errno));
}

/* A tensor in two shards would be counted twice: the second is an error. */
static int check_unique(kvshard__safetensors *s, const char *dir, kvshard_error *err)
{
    if (s->shard_count < 2 || s->count < 2)
        return KVSHARD_OK;
    name_table t;
    if (!table_init(&t, &s->alloc, s->count))
        return kvshard_error__fail(err, KVSHARD_ENOMEM, dir, kvshard_error__no_mark,
                             "safetensors: out of memory");
    int rc = KVSHARD_OK;
    const size_t stride = sizeof(kvshard__tensor);
    for (size_t i = 0; i < s->count; i++) {
        const kvshard__tensor *x = &s->tensors[i];
        uint32_t *slot = table_find(&t, &s->tensors[0].name, &s->tensors[0].name_len, stride,
                                    x->name, x->name_len);
        if (*slot == 0) {
            *slot = (uint32_t)(i + 1);
            continue;
        }
        const kvshard__tensor *first = &s->tensors[*slot - 1];
        char name[100];
        kvshard_error__excerpt(name, sizeof name, x->name, x->name_len, 64);
        char *path = join(&s->alloc, dir, s->shards[x->shard]);
        rc = kvshard_error__fail(err, KVSHARD_EDUPKEY, path ? path : dir, kvshard_error__no_mark,
                           "safetensors: %s: tensor \"%s\" is also in %s", s->shards[x->shard],
                           name, s->shards[first->shard]);
        kvshard_alloc__free(&s->alloc, path);
        break;
    }
    kvshard_alloc__free(&s->alloc, t.slots);
    return rc;
}

/* A checkpoint whose headers hold no tensor (every one `{}` or metadata
 * only) has no weights to count: 0 bytes would be a budget of the whole
 * device, silently. */
static int check_some_tensor(const kvshard__safetensors *s, const char *dir, kvshard_error *err)
{
    if (s->files == KVSHARD__ST_NONE || s->count > 0)
        return KVSHARD_OK;
    if (s->shard_count == 1) {
        char *path = join(&s->alloc, dir, s->shards[0]);
        int rc =
            kvshard_error__fail(err, KVSHARD_EWEIGHTS, path ? path : dir, kvshard_error__no_mark,
                                "safetensors: %s: the header holds no tensor, so the checkpoint "
                                "has no weights to count",
                                s->shards[0]);
        kvshard_alloc__free(&s->alloc, path);
        return rc;
    }
    return kvshard_error__fail(err, KVSHARD_EWEIGHTS, dir, kvshard_error__no_mark,
                         "safetensors: the headers of the %u shard files hold no tensor, so the "
                         "checkpoint has no weights to count",
                         s->shard_count);
}

static int read_shards(dir_read *r, kvshard_error *err)
{
    kvshard__safetensors *s = r->set;
    size_t slots = 16;
    while (slots < 2 * (size_t)s->shard_count)
        slots *= 2;
    r->mask = slots - 1;
    r->ids = kvshard_alloc__bytes(&s->alloc, (size_t)s->shard_count + 1, sizeof *r->ids);
    r->first = kvshard_alloc__bytes(&s->alloc, (size_t)s->shard_count + 1, sizeof *r->first);
    r->slots = kvshard_alloc__calloc(&s->alloc, slots, sizeof *r->slots);
    int rc = KVSHARD_OK;
    if (!r->ids || !r->first || !r->slots)
        rc = kvshard_error__fail(err, KVSHARD_ENOMEM, r->dir, kvshard_error__no_mark,
                           "safetensors: out of memory");
    for (uint32_t i = 0; rc == KVSHARD_OK && i < s->shard_count; i++) {
        r->first[i] = s->count;
        char *path = join(&s->alloc, r->dir, s->shards[i]);
        if (!path)
            rc = kvshard_error__fail(err, KVSHARD_ENOMEM, r->dir, kvshard_error__no_mark,
                               "safetensors: out of memory");
        else
            rc = read_shard_file(r, i, path, err);
        kvshard_alloc__free(&s->alloc, path);
    }
    if (rc == KVSHARD_OK)
        r->first[s->shard_count] = s->count;
    kvshard_alloc__free(&s->alloc, r->ids);
    kvshard_alloc__free(&s->alloc, r->first);
    kvshard_alloc__free(&s->alloc, r->slots);
    return rc;
}

static int read_dir(kvshard__safetensors *s, const char *dir, const kvshard__st_options *options,
                    kvshard_error *err)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return kvshard_error__fail(err, KVSHARD_EIO, dir, kvshard_error__no_mark,
                             "safetensors: cannot open the model directory: %s", strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return kvshard_error__fail(err, KVSHARD_EIO, dir, kvshard_error__no_mark,
                             "safetensors: not a directory (the weights are read from the model "
                             "directory)");
    char *index_path = join(&s->alloc, dir, INDEX_NAME);
    char *single_path = join(&s->alloc, dir, SINGLE_NAME);
    dir_read r = {s, dir, NULL, options, NULL, NULL, NULL, 0};
    int rc = KVSHARD_OK, found;
    if (!index_path || !single_path) {
        rc = kvshard_error__fail(err, KVSHARD_ENOMEM, dir, kvshard_error__no_mark,
                                 "safetensors: out of memory");
    } else if ((found = exists(index_path, dir, err)) < 0) {
        rc = found;
    } else if (found) {
        s->files = KVSHARD__ST_INDEX;
        r.index_path = index_path;
        rc = read_index(&r, index_path, err);
    } else if ((found = exists(single_path, dir, err)) < 0) {
        rc = found;
    } else if (found) {
        s->files = KVSHARD__ST_SINGLE;
        rc = add_shard(s, SINGLE_NAME, sizeof SINGLE_NAME - 1, dir, err);
    } else {
        rc = list_shards(s, dir, err);
        s->files = s->shard_count ? KVSHARD__ST_GLOB : KVSHARD__ST_NONE;
    }
    if (rc == KVSHARD_OK && s->shard_count && s->files != KVSHARD__ST_INDEX_ONLY)
        rc = read_shards(&r, err);
    if (rc == KVSHARD_OK)
        rc = check_unique(s, dir, err);
    if (rc == KVSHARD_OK)
        rc = check_some_tensor(s, dir, err);
    kvshard_alloc__free(&s->alloc, index_path);
    kvshard_alloc__free(&s->alloc, single_path);
    return rc;
}

int kvshard_safetensors__read_dir(kvshard__safetensors **out, const char *dir,
                                  const kvshard_allocator *alloc, size_t max_tensors,
                                  kvshard_error *err)
{
    kvshard__st_options o = {max_tensors, 0, NULL, NULL};
    return kvshard_safetensors__read_dir_with(out, dir, alloc, &o, err);
}

int kvshard_safetensors__read_dir_with(kvshard__safetensors **out, const char *dir,
                                       const kvshard_allocator *alloc,
                                       const kvshard__st_options *options, kvshard_error *err)
{
    kvshard_error__reset(err);
    if (!out || !dir)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "safetensors: NULL argument");
    static const kvshard__st_options defaults = {0, 0, NULL, NULL};
    if (!options)
        options = &defaults;
    kvshard__safetensors *s = NULL; /* new_set sets it on success */
    int rc = new_set(&s, alloc, options->max_tensors, options->max_json, dir, err);
    if (rc)
        return rc;
    if ((rc = read_dir(s, dir, options, err)) != 0) {
        kvshard_safetensors__free(s);
        return rc;
    }
    s->total_size_mismatch = s->has_total_size && s->files != KVSHARD__ST_INDEX_ONLY &&
                             s->total_size != s->total_bytes;
    *out = s;
    return KVSHARD_OK;
}
