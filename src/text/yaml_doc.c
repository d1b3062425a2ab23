/* The front-end: libyaml's events, one document of them, through the builder
 * of yaml_build.h onto the tape. */
#include "text/yaml_doc.h"

#include "text/yaml_build.h"

#include <stdint.h>
#include <string.h>
#include <yaml.h>

/* What the front-end keeps while libyaml reads. */
typedef struct events {
    kvshard__doc_builder *b;
    const kvshard__doc *doc;
    kvshard_error *err;
    int documents;
    bool ascii;       /* no byte above 0x7F after the BOM: offsets are indexes */
    size_t cur_index; /* libyaml's character index ... */
    size_t cur_byte;  /* ... and the byte offset it stands for */
} events;

/* libyaml counts characters after the byte order mark; kvshard keeps byte
 * offsets. Marks arrive mostly in order, so a cursor that moves either way
 * keeps this linear: a mark behind it is walked back to, not counted again
 * from the start. */
static size_t byte_offset_utf8(events *b, size_t index)
{
    const kvshard__doc *d = b->doc;
    while (b->cur_index > index && b->cur_byte > d->start) {
        do
            b->cur_byte--;
        while (b->cur_byte > d->start &&
               kvshard_yaml_marks__continuation((unsigned char)d->text[b->cur_byte]));
        b->cur_index--;
    }
    while (b->cur_index < index && b->cur_byte < d->len) {
        b->cur_byte++;
        while (b->cur_byte < d->len &&
               kvshard_yaml_marks__continuation((unsigned char)d->text[b->cur_byte]))
            b->cur_byte++;
        b->cur_index++;
    }
    return b->cur_byte;
}

static inline size_t byte_offset(events *b, size_t index)
{
    const kvshard__doc *d = b->doc;
    if (b->ascii)
        return d->start + index < d->len ? d->start + index : d->len;
    return byte_offset_utf8(b, index);
}

static int on_scalar(events *y, const yaml_event_t *ev)
{
    yaml_scalar_style_t style = ev->data.scalar.style;
    kvshard_yaml_build__scalar_at s = {
        .start = byte_offset(y, ev->start_mark.index),
        .end = byte_offset(y, ev->end_mark.index),
        .value = (const char *)ev->data.scalar.value,
        .len = ev->data.scalar.length,
        .tag = (const char *)ev->data.scalar.tag,
        .anchor = (const char *)ev->data.scalar.anchor,
        .plain = style == YAML_PLAIN_SCALAR_STYLE,
        .quoted =
            style == YAML_SINGLE_QUOTED_SCALAR_STYLE || style == YAML_DOUBLE_QUOTED_SCALAR_STYLE,
        .one_line = ev->start_mark.line == ev->end_mark.line,
    };
    return kvshard_yaml_build__scalar(y->b, &s);
}

static int on_start(events *y, const yaml_event_t *ev, bool mapping)
{
    size_t start = byte_offset(y, ev->start_mark.index);
    if (mapping)
        return kvshard_yaml_build__open(y->b, start, true, (const char *)ev->data.mapping_start.tag,
                                        (const char *)ev->data.mapping_start.anchor);
    return kvshard_yaml_build__open(y->b, start, false, (const char *)ev->data.sequence_start.tag,
                                    (const char *)ev->data.sequence_start.anchor);
}

static int parser_error(events *y, const yaml_parser_t *p)
{
    const kvshard__doc *d = y->doc;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_MEMORY_ERROR)
        return kvshard_yaml_build__nomem(y->b);
    if (p->error == YAML_READER_ERROR) {
        size_t offset = p->problem_offset;
        /* libyaml gives the offset of the byte that breaks a multi-byte
         * sequence; report the sequence's first byte, which is the bad text. */
        if (strcmp(problem, "invalid trailing UTF-8 octet") == 0 && offset <= d->len) {
            while (offset > 0 &&
                   kvshard_yaml_marks__continuation((unsigned char)d->text[offset - 1]))
                offset--;
            if (offset > 0)
                offset--;
        }
        bool utf8 = strstr(problem, "UTF-8") || strstr(problem, "Unicode");
        return kvshard_build__fail(y->b, utf8 ? KVSHARD_EUTF8 : KVSHARD_ESYNTAX, offset,
                                       "%s at byte offset %zu", problem, offset);
    }
    kvshard__mark m = {(int)(p->problem_mark.line + 1), (int)(p->problem_mark.column + 1),
                       byte_offset(y, p->problem_mark.index)};
    if (p->context)
        return kvshard_error__fail(y->err, KVSHARD_ESYNTAX, d->source, m, "%s %s", problem,
                                   p->context);
    return kvshard_error__fail(y->err, KVSHARD_ESYNTAX, d->source, m, "%s", problem);
}

static int on_event(events *y, const yaml_event_t *ev)
{
    /* Most events are scalars: a branch the processor predicts, ahead of
     * the jump table, which it mispredicts as the event types alternate. */
    if (ev->type == YAML_SCALAR_EVENT)
        return on_scalar(y, ev);
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++y->documents > 1)
            return kvshard_build__fail(y->b, KVSHARD_ESYNTAX,
                                           byte_offset(y, ev->start_mark.index),
                                           "a second document; kvshard reads one document per "
                                           "file");
        return KVSHARD_OK;
    case YAML_SCALAR_EVENT: return on_scalar(y, ev);
    case YAML_SEQUENCE_START_EVENT: return on_start(y, ev, false);
    case YAML_MAPPING_START_EVENT: return on_start(y, ev, true);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT: return kvshard_build__close(y->b);
    case YAML_ALIAS_EVENT:
        return kvshard_yaml_build__alias(y->b, (const char *)ev->data.alias.anchor,
                                         byte_offset(y, ev->start_mark.index));
    default: return KVSHARD_OK;
    }
}

#define HIGHS 0x8080808080808080ull

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

/* libyaml's events, one document of them, onto the tape. `ctx` is the
 * events record, its error set. */
static int yaml_front(kvshard__doc_builder *b, const kvshard__doc *doc, void *ctx)
{
    events *y = ctx;
    y->b = b;
    y->doc = doc;
    y->documents = 0;
    y->ascii = all_ascii(doc->text + doc->start, doc->len - doc->start);
    y->cur_index = 0;
    y->cur_byte = doc->start;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return kvshard_yaml_build__nomem(b);
    yaml_parser_set_input_string(&parser, (const unsigned char *)doc->text, doc->len);
    int rc = KVSHARD_OK;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = parser_error(y, &parser);
            break;
        }
        rc = on_event(y, &ev);
        bool done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (rc || done)
            break;
    }
    yaml_parser_delete(&parser);
    return rc;
}

static int parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                 const kvshard_allocator *alloc, const uint64_t *seed, kvshard_error *err)
{
    events y = {.err = err};
    return kvshard_build__doc(out, text, len, source, alloc, seed, false, yaml_front, &y, err);
}

int kvshard_doc__parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                       const kvshard_allocator *alloc, kvshard_error *err)
{
    return parse(out, text, len, source, alloc, NULL, err);
}

int kvshard_doc__parse_seeded(kvshard__doc *out, const char *text, size_t len, const char *source,
                              const kvshard_allocator *alloc, uint64_t seed, kvshard_error *err)
{
    return parse(out, text, len, source, alloc, &seed, err);
}
