/* The tape's storage (copied text, freeing) and its reading: nodes, walks
 * of collections, key lookups, and scalars read as what a config needs. */
#include "text/yaml_keys.h"
#include "text/yaml_marks.h"
#include "text/yaml_tape.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- copied text ------------------------------------------------------------ */

struct kvshard__arena_chunk {
    kvshard__arena_chunk *next;
    size_t used;
    size_t cap;
    char data[];
};

#define ARENA_CHUNK_BYTES ((size_t)16 * 1024)

char *kvshard_yaml_tape__copy(kvshard__doc *doc, const char *s, size_t len)
{
    kvshard__arena_chunk *c = doc->arena;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > ARENA_CHUNK_BYTES ? len + 1 : ARENA_CHUNK_BYTES;
        c = kvshard_alloc__bytes(&doc->alloc, 1, sizeof *c + cap);
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

void kvshard_tape__doc_free(kvshard__doc *doc)
{
    if (!doc)
        return;
    /* The first chunk and chunk pointers are the doc's own. */
    for (size_t i = 1; i < doc->chunk_count; i++)
        kvshard_alloc__free(&doc->alloc, doc->chunks[i]);
    if (doc->chunks != doc->first_chunks)
        kvshard_alloc__free(&doc->alloc, doc->chunks);
    for (kvshard__arena_chunk *c = doc->arena; c;) {
        kvshard__arena_chunk *next = c->next;
        kvshard_alloc__free(&doc->alloc, c);
        c = next;
    }
    for (kvshard__map_index *x = doc->indexes; x;) {
        kvshard__map_index *next = x->next;
        kvshard_yaml_keys__free(doc, x);
        x = next;
    }
    kvshard_alloc__free(&doc->alloc, doc->strings);
    memset(doc, 0, offsetof(kvshard__doc, first_chunks));
}

/* A null scalar: tagged !!null, or plain, untagged and null text. Both a
 * node and a tape entry are tested with it. */
static bool is_null_scalar(unsigned tag, bool plain_untagged, const char *text, size_t len)
{
    return tag == KVSHARD__TAG_NULL || (plain_untagged && is_null_text(text, len));
}

/* ---- reading ------------------------------------------------------------------------------ */

kvshard__node kvshard_tape__doc_root(const kvshard__doc *doc)
{
    return view(doc, 0);
}

kvshard__iter kvshard_tape__iter_begin(const kvshard__doc *doc, const kvshard__node *parent)
{
    (void)doc;
    kvshard__iter it = {parent->id + 1, 0};
    if (parent->kind == KVSHARD__NODE_SEQUENCE)
        it.left = parent->count;
    else if (parent->kind == KVSHARD__NODE_MAPPING)
        it.left = 2 * parent->count;
    return it;
}

bool kvshard_tape__iter_next(const kvshard__doc *doc, kvshard__iter *it, kvshard__node *out)
{
    if (it->left == 0)
        return false;
    *out = view(doc, it->next);
    it->next = skip(doc, it->next);
    it->left--;
    return true;
}

uint32_t kvshard_tape__map_keys(const kvshard__doc *doc, const kvshard__node *map,
                                kvshard__key_ref *out, uint32_t cap)
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

bool kvshard_tape__doc_value(kvshard__node *out, const kvshard__doc *doc, uint32_t at_id)
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

kvshard__node kvshard_tape__seq_item(const kvshard__doc *doc, const kvshard__node *seq,
                                     uint32_t index)
{
    const entry *e = at(doc, seq->id);
    /* A list whose children are one entry each is an array. */
    if (e->ref - seq->id - 1 == seq->count)
        return view(doc, seq->id + 1 + index);
    kvshard__iter it = kvshard_tape__iter_begin(doc, seq);
    kvshard__node item = *seq;
    for (uint32_t i = 0; i <= index; i++)
        kvshard_tape__iter_next(doc, &it, &item);
    return item;
}

bool kvshard_tape__map_get(const kvshard__doc *doc, const kvshard__node *map, const char *key,
                      kvshard__node *out)
{
    if (map->kind != KVSHARD__NODE_MAPPING)
        return false;
    size_t klen = strlen(key);
    if (at(doc, map->id)->word & INDEXED_FLAG) {
        const kvshard__map_index *x = kvshard_yaml_keys__index_of(doc, map->id);
        if (!(x->present >> key_sig(key, klen) & 1u))
            return false;
        uint32_t pos = kvshard_yaml_keys__find(doc, x, key, klen);
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

bool kvshard_tape__map_sorted(const kvshard__doc *doc, const kvshard__node *map)
{
    return map->kind == KVSHARD__NODE_MAPPING && (at(doc, map->id)->word & INDEXED_FLAG) &&
           kvshard_yaml_keys__index_of(doc, map->id)->by_sort;
}

bool kvshard_tape__scalar_is(const kvshard__node *node, const char *s)
{
    return node->kind == KVSHARD__NODE_SCALAR && kvshard_text__is(node->text, node->count, s);
}

bool kvshard_tape__node_is_null(const kvshard__node *node)
{
    return node->kind == KVSHARD__NODE_SCALAR &&
           is_null_scalar(node->tag,
                          node->style == KVSHARD__VALUE_PLAIN && node->tag == KVSHARD__TAG_NONE,
                          node->text, node->count);
}

void kvshard_tape__node_describe(char *buf, size_t cap, const kvshard__node *node)
{
    if (node->kind == KVSHARD__NODE_MAPPING) {
        snprintf(buf, cap, "a mapping");
    } else if (node->kind == KVSHARD__NODE_SEQUENCE) {
        snprintf(buf, cap, "a list");
    } else if (kvshard_tape__node_is_null(node)) {
        snprintf(buf, cap, "null");
    } else {
        char shown[128];
        kvshard_error__excerpt(shown, sizeof shown, node->text, node->count, 32);
        snprintf(buf, cap, "%s\"%s\"", node->style == KVSHARD__VALUE_QUOTED ? "the string " : "",
                 shown);
    }
}

int kvshard_tape__node_uint(uint64_t *out, const kvshard__doc *doc, const kvshard__node *node,
                       const char *what, uint64_t min, uint64_t max, kvshard_error *err)
{
    char desc[160];
    if (node->kind != KVSHARD__NODE_SCALAR || node->style != KVSHARD__VALUE_PLAIN ||
        node->tag == KVSHARD__TAG_FLOAT || node->tag == KVSHARD__TAG_BOOL ||
        node->tag == KVSHARD__TAG_NULL) {
        kvshard_tape__node_describe(desc, sizeof desc, node);
        return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, node,
                                 "%s: expected an integer, found %s%s", what,
                                 node->tag == KVSHARD__TAG_FLOAT ? "!!float " : "", desc);
    }
    /* YAML 1.1 reads 010 as octal 8 and YAML 1.2 as 10: refuse to guess. */
    size_t sign = node->count > 0 && (node->text[0] == '+' || node->text[0] == '-') ? 1 : 0;
    if (node->count > sign + 1 && node->text[sign] == '0' &&
        kvshard_scalar__all_digits(node->text + sign, node->count - sign)) {
        kvshard_tape__node_describe(desc, sizeof desc, node);
        return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, node,
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
    kvshard__mark m = kvshard_error__no_mark;
    int rc = kvshard_scalar__parse_uint(out, node->text, node->count, min, max, what, doc->source,
                                        m, NULL);
    if (rc && err && err->code == KVSHARD_OK) {
        kvshard_error local;
        kvshard_error__reset(&local);
        uint64_t ignored;
        (void)kvshard_scalar__parse_uint(&ignored, node->text, node->count, min, max, what,
                                         doc->source, m, &local);
        *err = local;
        kvshard_error__locate(err, doc->source, kvshard_marks__mark(doc, node->offset));
    }
    return rc;
}

int kvshard_tape__node_string(const char **out, size_t *out_len, const kvshard__doc *doc,
                         const kvshard__node *node, const char *what, kvshard_error *err)
{
    if (node->kind != KVSHARD__NODE_SCALAR || kvshard_tape__node_is_null(node)) {
        char desc[160];
        kvshard_tape__node_describe(desc, sizeof desc, node);
        return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, node, "%s: expected a string, found %s",
                                 what, desc);
    }
    *out = node->text;
    *out_len = node->count;
    return KVSHARD_OK;
}

int kvshard_tape__node_expect(const kvshard__doc *doc, const kvshard__node *node,
                         kvshard__node_kind kind, const char *what, kvshard_error *err)
{
    if (node->kind == kind)
        return KVSHARD_OK;
    char desc[160];
    kvshard_tape__node_describe(desc, sizeof desc, node);
    return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, node, "%s: expected %s, found %s", what,
                             kind == KVSHARD__NODE_MAPPING ? "a mapping" : "a list", desc);
}
