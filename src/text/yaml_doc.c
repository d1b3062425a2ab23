/* libyaml events -> a small tree with marks, under kvshard's reading limits. */
#include "text/yaml_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* ---- arena -------------------------------------------------------------- */

struct kvshard__arena_chunk {
    kvshard__arena_chunk *next;
    size_t used;
    size_t cap;
    max_align_t data[]; /* aligned storage follows */
};

#define ARENA_CHUNK_BYTES ((size_t)64 * 1024)

static void *arena_alloc(kvshard__doc *doc, size_t size)
{
    size = (size + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    kvshard__arena_chunk *c = doc->chunks;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > ARENA_CHUNK_BYTES ? size : ARENA_CHUNK_BYTES;
        c = kvshard__alloc(&doc->alloc, 1, sizeof *c + cap);
        if (!c)
            return NULL;
        c->next = doc->chunks;
        c->used = 0;
        c->cap = cap;
        doc->chunks = c;
    }
    void *p = (char *)c->data + c->used;
    c->used += size;
    return p;
}

void kvshard__doc_free(kvshard__doc *doc)
{
    if (!doc)
        return;
    kvshard__arena_chunk *c = doc->chunks;
    while (c) {
        kvshard__arena_chunk *next = c->next;
        kvshard__free(&doc->alloc, c);
        c = next;
    }
    doc->chunks = NULL;
    doc->root = NULL;
}

/* ---- builder ------------------------------------------------------------ */

typedef struct frame {
    kvshard__node *node;
    size_t first_child; /* index into the pending stack */
    const char *anchor; /* arena copy, NULL when none */
} frame;

typedef struct anchor_entry {
    const char *name;
    const kvshard__node *node;
} anchor_entry;

typedef struct builder {
    kvshard__doc *doc;
    const char *text;
    size_t len;
    kvshard_error *err;
    frame frames[KVSHARD_MAX_DEPTH];
    size_t depth;
    kvshard__node **pending; /* children of the open collections, in order */
    size_t pending_len;
    size_t pending_cap;
    anchor_entry anchors[KVSHARD_MAX_ANCHORS];
    size_t anchor_count;
    uint64_t weight; /* nodes so far, aliases expanded */
    int documents;
    size_t start;     /* bytes of a UTF-8 byte order mark, which libyaml skips */
    size_t cur_index; /* libyaml's character index ... */
    size_t cur_byte;  /* ... and the byte offset it stands for */
} builder;

static bool is_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

/* libyaml counts characters after the byte order mark; kvshard reports byte
 * offsets. Marks arrive mostly in order, so a cursor keeps this linear. */
static size_t byte_offset(builder *b, size_t index)
{
    if (index < b->cur_index) {
        b->cur_index = 0;
        b->cur_byte = b->start;
    }
    while (b->cur_index < index && b->cur_byte < b->len) {
        b->cur_byte++;
        while (b->cur_byte < b->len && is_continuation((unsigned char)b->text[b->cur_byte]))
            b->cur_byte++;
        b->cur_index++;
    }
    return b->cur_byte;
}

static kvshard__mark mark_of(builder *b, yaml_mark_t m)
{
    kvshard__mark k = {(int)(m.line + 1), (int)(m.column + 1), byte_offset(b, m.index)};
    return k;
}

/* Line and column (in characters) of a byte offset, for reader errors, which
 * libyaml reports by offset alone. CR, LF and CRLF each end a line. */
static kvshard__mark mark_at_offset(const builder *b, size_t offset)
{
    kvshard__mark m = {1, 1, offset};
    for (size_t i = b->start; i < offset && i < b->len; i++) {
        unsigned char c = (unsigned char)b->text[i];
        if (c == '\n' || (c == '\r' && !(i + 1 < b->len && b->text[i + 1] == '\n'))) {
            m.line++;
            m.column = 1;
        } else if (c != '\r' && !is_continuation(c)) {
            m.column++;
        }
    }
    return m;
}

static int fail_nomem(builder *b)
{
    kvshard__mark none = {0, 0, 0};
    return kvshard__fail(b->err, KVSHARD_ENOMEM, b->doc->source, none,
                         "out of memory building the tree");
}

static int push_pending(builder *b, kvshard__node *node)
{
    if (b->pending_len == b->pending_cap) {
        size_t cap = b->pending_cap ? b->pending_cap * 2 : 64;
        kvshard__node **grown = kvshard__alloc(&b->doc->alloc, cap, sizeof *grown);
        if (!grown)
            return fail_nomem(b);
        if (b->pending_len)
            memcpy(grown, b->pending, b->pending_len * sizeof *grown);
        kvshard__free(&b->doc->alloc, b->pending);
        b->pending = grown;
        b->pending_cap = cap;
    }
    b->pending[b->pending_len++] = node;
    return KVSHARD_OK;
}

static int add_weight(builder *b, uint64_t w, kvshard__mark mark)
{
    b->weight += w;
    if (b->weight > KVSHARD_MAX_NODES)
        return kvshard__fail(b->err, KVSHARD_ELIMIT, b->doc->source, mark,
                             "document has more than %u nodes (aliases counted as what they "
                             "stand for; KVSHARD_MAX_NODES)",
                             KVSHARD_MAX_NODES);
    return KVSHARD_OK;
}

/* Attach a finished node to its parent, or make it the root. */
static int attach(builder *b, kvshard__node *node)
{
    if (b->depth == 0) {
        b->doc->root = node;
        return KVSHARD_OK;
    }
    return push_pending(b, node);
}

static int register_anchor(builder *b, const char *name, const kvshard__node *node)
{
    if (!name)
        return KVSHARD_OK;
    for (size_t i = 0; i < b->anchor_count; i++) {
        if (strcmp(b->anchors[i].name, name) == 0) {
            b->anchors[i].node = node; /* YAML lets a later anchor shadow an earlier one */
            return KVSHARD_OK;
        }
    }
    if (b->anchor_count == KVSHARD_MAX_ANCHORS)
        return kvshard__fail(b->err, KVSHARD_ELIMIT, b->doc->source, node->mark,
                             "more than %u anchors (KVSHARD_MAX_ANCHORS)", KVSHARD_MAX_ANCHORS);
    b->anchors[b->anchor_count].name = name;
    b->anchors[b->anchor_count].node = node;
    b->anchor_count++;
    return KVSHARD_OK;
}

static const char *arena_strdup(builder *b, const char *s, size_t len)
{
    char *copy = arena_alloc(b->doc, len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

static int copy_anchor(builder *b, const yaml_char_t *anchor, const char **out)
{
    *out = NULL;
    if (!anchor)
        return KVSHARD_OK;
    *out = arena_strdup(b, (const char *)anchor, strlen((const char *)anchor));
    return *out ? KVSHARD_OK : fail_nomem(b);
}

static kvshard__node *new_node(builder *b, kvshard__node_kind kind, yaml_mark_t start)
{
    kvshard__node *n = arena_alloc(b->doc, sizeof *n);
    if (!n)
        return NULL;
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->style = KVSHARD__VALUE_PLAIN;
    n->mark = mark_of(b, start);
    n->weight = 1;
    return n;
}

static int on_scalar(builder *b, const yaml_event_t *ev)
{
    kvshard__node *n = new_node(b, KVSHARD__NODE_SCALAR, ev->start_mark);
    if (!n)
        return fail_nomem(b);
    int rc = add_weight(b, 1, n->mark);
    if (rc)
        return rc;
    /* An explicit core tag decides how the scalar reads: !!int "4" is a
     * number and !!str 4 a string. Otherwise quoting does. */
    const char *tag = (const char *)ev->data.scalar.tag;
    bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
    if (tag && strcmp(tag, YAML_STR_TAG) == 0)
        plain = false;
    else if (tag && (strcmp(tag, YAML_INT_TAG) == 0 || strcmp(tag, YAML_BOOL_TAG) == 0 ||
                     strcmp(tag, YAML_NULL_TAG) == 0 || strcmp(tag, YAML_FLOAT_TAG) == 0))
        plain = true;
    n->style = plain ? KVSHARD__VALUE_PLAIN : KVSHARD__VALUE_QUOTED;
    n->count = ev->data.scalar.length;
    if (memchr(ev->data.scalar.value, '\0', n->count))
        return kvshard__fail(b->err, KVSHARD_ETYPE, b->doc->source, n->mark,
                             "a string holds a NUL character (\\0), which no config value may");
    n->u.text = arena_strdup(b, (const char *)ev->data.scalar.value, ev->data.scalar.length);
    if (!n->u.text)
        return fail_nomem(b);
    const char *anchor;
    if ((rc = copy_anchor(b, ev->data.scalar.anchor, &anchor)) != 0)
        return rc;
    if ((rc = register_anchor(b, anchor, n)) != 0)
        return rc;
    return attach(b, n);
}

static int on_start(builder *b, const yaml_event_t *ev, kvshard__node_kind kind)
{
    kvshard__node *n = new_node(b, kind, ev->start_mark);
    if (!n)
        return fail_nomem(b);
    int rc = add_weight(b, 1, n->mark);
    if (rc)
        return rc;
    if (b->depth == KVSHARD_MAX_DEPTH)
        return kvshard__fail(b->err, KVSHARD_ELIMIT, b->doc->source, n->mark,
                             "nesting deeper than %u levels (KVSHARD_MAX_DEPTH)",
                             KVSHARD_MAX_DEPTH);
    const yaml_char_t *anchor = kind == KVSHARD__NODE_MAPPING ? ev->data.mapping_start.anchor
                                                              : ev->data.sequence_start.anchor;
    frame *f = &b->frames[b->depth];
    f->node = n;
    f->first_child = b->pending_len;
    if ((rc = copy_anchor(b, anchor, &f->anchor)) != 0)
        return rc;
    b->depth++;
    return KVSHARD_OK;
}

static int key_compare(const kvshard__node *a, const kvshard__node *b)
{
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    int c = memcmp(a->u.text, b->u.text, a->count);
    if (c)
        return c;
    return a->mark.offset < b->mark.offset ? -1 : a->mark.offset > b->mark.offset;
}

static int key_compare_qsort(const void *pa, const void *pb)
{
    return key_compare(*(const kvshard__node *const *)pa, *(const kvshard__node *const *)pb);
}

static bool same_key(const kvshard__node *a, const kvshard__node *b)
{
    return a->count == b->count && memcmp(a->u.text, b->u.text, a->count) == 0;
}

/* Keys must be scalars and distinct; report the earliest repeated key. */
static int check_keys(builder *b, const kvshard__node *map)
{
    size_t n = map->count;
    for (size_t i = 0; i < n; i++) {
        const kvshard__node *k = map->u.items[2 * i];
        if (k->kind != KVSHARD__NODE_SCALAR)
            return kvshard__fail(b->err, KVSHARD_ETYPE, b->doc->source, k->mark,
                                 "mapping keys must be scalars");
    }
    const kvshard__node *dup = NULL;
    const kvshard__node *first = NULL;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            const kvshard__node *ki = map->u.items[2 * i];
            for (size_t j = 0; j < i && !dup; j++) {
                if (same_key(map->u.items[2 * j], ki)) {
                    dup = ki;
                    first = map->u.items[2 * j];
                }
            }
            if (dup)
                break;
        }
    } else {
        const kvshard__node **keys = kvshard__alloc(&b->doc->alloc, n, sizeof *keys);
        if (!keys)
            return fail_nomem(b);
        for (size_t i = 0; i < n; i++)
            keys[i] = map->u.items[2 * i];
        qsort(keys, n, sizeof *keys, key_compare_qsort);
        for (size_t i = 1; i < n; i++) {
            /* Equal keys sort by offset, so keys[i] is a later occurrence. */
            if (same_key(keys[i - 1], keys[i]) &&
                (!dup || keys[i]->mark.offset < dup->mark.offset) &&
                (i < 2 || !same_key(keys[i - 2], keys[i]))) {
                dup = keys[i];
                first = keys[i - 1];
            }
        }
        kvshard__free(&b->doc->alloc, keys);
    }
    if (dup)
        return kvshard__fail(b->err, KVSHARD_EDUPKEY, b->doc->source, dup->mark,
                             "duplicate key \"%s\" (first at line %d, column %d)", dup->u.text,
                             first->mark.line, first->mark.column);
    return KVSHARD_OK;
}

static int on_end(builder *b)
{
    frame *f = &b->frames[--b->depth];
    kvshard__node *n = f->node;
    size_t children = b->pending_len - f->first_child;
    kvshard__node **items = arena_alloc(b->doc, (children ? children : 1) * sizeof *items);
    if (!items)
        return fail_nomem(b);
    if (children)
        memcpy(items, b->pending + f->first_child, children * sizeof *items);
    b->pending_len = f->first_child;
    n->u.items = items;
    n->count = n->kind == KVSHARD__NODE_MAPPING ? children / 2 : children;
    for (size_t i = 0; i < children; i++)
        n->weight += items[i]->weight;
    int rc;
    if (n->kind == KVSHARD__NODE_MAPPING && (rc = check_keys(b, n)) != 0)
        return rc;
    if ((rc = register_anchor(b, f->anchor, n)) != 0)
        return rc;
    return attach(b, n);
}

static int on_alias(builder *b, const yaml_event_t *ev)
{
    const char *name = (const char *)ev->data.alias.anchor;
    kvshard__mark mark = mark_of(b, ev->start_mark);
    for (size_t i = b->anchor_count; i-- > 0;) {
        if (strcmp(b->anchors[i].name, name) == 0) {
            const kvshard__node *target = b->anchors[i].node;
            int rc = add_weight(b, target->weight, mark);
            if (rc)
                return rc;
            /* The tree is read-only, so an alias shares its target's content;
             * a node of its own keeps the alias's position for errors. */
            kvshard__node *n = arena_alloc(b->doc, sizeof *n);
            if (!n)
                return fail_nomem(b);
            *n = *target;
            n->mark = mark;
            return attach(b, n);
        }
    }
    return kvshard__fail(b->err, KVSHARD_ESYNTAX, b->doc->source, mark,
                         "alias *%s names no anchor defined before it", name);
}

static int parser_error(builder *b, const yaml_parser_t *p)
{
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_MEMORY_ERROR)
        return fail_nomem(b);
    if (p->error == YAML_READER_ERROR) {
        size_t offset = p->problem_offset;
        /* libyaml gives the offset of the byte that breaks a multi-byte
         * sequence; report the sequence's first byte, which is the bad text. */
        if (strcmp(problem, "invalid trailing UTF-8 octet") == 0 && offset <= b->len) {
            while (offset > 0 && ((unsigned char)b->text[offset - 1] & 0xC0) == 0x80)
                offset--;
            if (offset > 0)
                offset--;
        }
        kvshard__mark m = mark_at_offset(b, offset);
        bool utf8 = strstr(problem, "UTF-8") || strstr(problem, "Unicode");
        return kvshard__fail(b->err, utf8 ? KVSHARD_EUTF8 : KVSHARD_ESYNTAX, b->doc->source, m,
                             "%s at byte offset %zu", problem, offset);
    }
    kvshard__mark m = mark_of(b, p->problem_mark);
    if (p->context)
        return kvshard__fail(b->err, KVSHARD_ESYNTAX, b->doc->source, m, "%s %s", problem,
                             p->context);
    return kvshard__fail(b->err, KVSHARD_ESYNTAX, b->doc->source, m, "%s", problem);
}

static int on_event(builder *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1)
            return kvshard__fail(b->err, KVSHARD_ESYNTAX, b->doc->source,
                                 mark_of(b, ev->start_mark),
                                 "a second document; kvshard reads one document per file");
        return KVSHARD_OK;
    case YAML_SCALAR_EVENT: return on_scalar(b, ev);
    case YAML_SEQUENCE_START_EVENT: return on_start(b, ev, KVSHARD__NODE_SEQUENCE);
    case YAML_MAPPING_START_EVENT: return on_start(b, ev, KVSHARD__NODE_MAPPING);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return on_end(b);
    case YAML_ALIAS_EVENT: return on_alias(b, ev);
    default: return KVSHARD_OK;
    }
}

int kvshard__doc_parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, kvshard_error *err)
{
    kvshard__mark start = {1, 1, 0};
    if (len > KVSHARD_MAX_DOCUMENT_BYTES)
        return kvshard__fail(
            err, KVSHARD_ELIMIT, source, start,
            "text is %zu bytes; the limit is %u bytes (KVSHARD_MAX_DOCUMENT_BYTES)", len,
            KVSHARD_MAX_DOCUMENT_BYTES);
    const unsigned char *u = (const unsigned char *)text;
    if (len >= 2 && ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE)))
        return kvshard__fail(
            err, KVSHARD_EUTF8, source, start,
            "the text is UTF-16 (it starts with a UTF-16 byte order mark); kvshard "
            "reads UTF-8");
    kvshard__doc doc = {*alloc, NULL, NULL, source};
    builder *b = kvshard__calloc(alloc, 1, sizeof *b);
    if (!b)
        return kvshard__fail(err, KVSHARD_ENOMEM, source, start, "out of memory");
    b->doc = &doc;
    b->text = text;
    b->len = len;
    b->err = err;
    b->start = len >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF ? 3 : 0;
    b->cur_byte = b->start;

    int rc = KVSHARD_OK;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        kvshard__free(alloc, b);
        return kvshard__fail(err, KVSHARD_ENOMEM, source, start, "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
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
    kvshard__free(alloc, b->pending);
    kvshard__free(alloc, b);
    if (rc == KVSHARD_OK && !doc.root)
        rc = kvshard__fail(err, KVSHARD_ETYPE, source, start, "the document is empty");
    if (rc != KVSHARD_OK) {
        kvshard__doc_free(&doc);
        return rc;
    }
    *out = doc;
    return KVSHARD_OK;
}

/* ---- queries ------------------------------------------------------------ */

const kvshard__node *kvshard__map_get(const kvshard__node *map, const char *key)
{
    if (!map || map->kind != KVSHARD__NODE_MAPPING)
        return NULL;
    size_t klen = strlen(key);
    for (size_t i = 0; i < map->count; i++) {
        const kvshard__node *k = map->u.items[2 * i];
        if (k->count == klen && memcmp(k->u.text, key, klen) == 0)
            return map->u.items[2 * i + 1];
    }
    return NULL;
}

bool kvshard__scalar_is(const kvshard__node *node, const char *s)
{
    return node && node->kind == KVSHARD__NODE_SCALAR && node->count == strlen(s) &&
           memcmp(node->u.text, s, node->count) == 0;
}

bool kvshard__node_is_null(const kvshard__node *node)
{
    if (!node || node->kind != KVSHARD__NODE_SCALAR || node->style != KVSHARD__VALUE_PLAIN)
        return false;
    return node->count == 0 || kvshard__scalar_is(node, "~") || kvshard__scalar_is(node, "null") ||
           kvshard__scalar_is(node, "Null") || kvshard__scalar_is(node, "NULL");
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
        int shown = node->count > 40 ? 40 : (int)node->count;
        snprintf(buf, cap, "%s\"%.*s%s\"",
                 node->style == KVSHARD__VALUE_QUOTED ? "the string " : "", shown, node->u.text,
                 node->count > 40 ? "..." : "");
    }
}

int kvshard__node_uint(uint64_t *out, const kvshard__doc *doc, const kvshard__node *node,
                       const char *what, uint64_t min, uint64_t max, kvshard_error *err)
{
    if (node->kind != KVSHARD__NODE_SCALAR || node->style != KVSHARD__VALUE_PLAIN) {
        char desc[64];
        kvshard__node_describe(desc, sizeof desc, node);
        return kvshard__fail(err, KVSHARD_ETYPE, doc->source, node->mark,
                             "%s: expected an integer, found %s", what, desc);
    }
    return kvshard__parse_uint(out, node->u.text, node->count, min, max, what, doc->source,
                               node->mark, err);
}

int kvshard__node_string(const char **out, size_t *out_len, const kvshard__doc *doc,
                         const kvshard__node *node, const char *what, kvshard_error *err)
{
    if (node->kind != KVSHARD__NODE_SCALAR || kvshard__node_is_null(node)) {
        char desc[64];
        kvshard__node_describe(desc, sizeof desc, node);
        return kvshard__fail(err, KVSHARD_ETYPE, doc->source, node->mark,
                             "%s: expected a string, found %s", what, desc);
    }
    *out = node->u.text;
    *out_len = node->count;
    return KVSHARD_OK;
}

static int expect_kind(const kvshard__doc *doc, const kvshard__node *node, kvshard__node_kind kind,
                       const char *what, kvshard_error *err)
{
    if (node->kind == kind)
        return KVSHARD_OK;
    char desc[64];
    kvshard__node_describe(desc, sizeof desc, node);
    return kvshard__fail(err, KVSHARD_ETYPE, doc->source, node->mark, "%s: expected %s, found %s",
                         what, kind == KVSHARD__NODE_MAPPING ? "a mapping" : "a list", desc);
}

int kvshard__node_expect_mapping(const kvshard__doc *doc, const kvshard__node *node,
                                 const char *what, kvshard_error *err)
{
    return expect_kind(doc, node, KVSHARD__NODE_MAPPING, what, err);
}

int kvshard__node_expect_sequence(const kvshard__doc *doc, const kvshard__node *node,
                                  const char *what, kvshard_error *err)
{
    return expect_kind(doc, node, KVSHARD__NODE_SEQUENCE, what, err);
}
