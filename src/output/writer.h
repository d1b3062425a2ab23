/* Buffered output through a kvshard_write_fn, shared by every writer: JSON,
 * text, SVG and HTML. The first failed write stops all further output, and
 * writers check `failed` in their loops so a closed reader costs no work. */
#ifndef KVSHARD_OUTPUT_WRITER_H
#define KVSHARD_OUTPUT_WRITER_H

#include "base/error.h"
#include "base/format.h"
#include "kvshard/output.h"

typedef struct kvshard__out {
    kvshard_write_fn write;
    void *user;
    bool failed;
    size_t len;
    char buf[16384];
} kvshard__out;

void kvshard_writer__out_init(kvshard__out *o, kvshard_write_fn write, void *user);
/* Start writing `object` (a plan or a comparison) through `write`; false,
 * for KVSHARD_EINVAL, when either is NULL. */
bool kvshard_writer__out_open(kvshard__out *o, const void *object, kvshard_write_fn write,
                              void *user);
void kvshard_writer__out_put(kvshard__out *o, const char *s, size_t n);
/* A NUL-terminated string as it is. */
void kvshard_writer__out_raw(kvshard__out *o, const char *s);
/* Decimal integers, without printf. */
void kvshard_writer__out_u64(kvshard__out *o, uint64_t v);
void kvshard_writer__out_i64(kvshard__out *o, int64_t v);
/* 3159888 -> "3,159,888". */
void kvshard_writer__out_grouped(kvshard__out *o, uint64_t v);
/* 16097280 -> "15.35 MiB", padded with spaces to `width` characters. */
void kvshard_writer__out_human(kvshard__out *o, uint64_t bytes, int width);
/* 16 lowercase hex digits. */
void kvshard_writer__out_hex64(kvshard__out *o, uint64_t v);
/* The TP ranks of split rank `s` of a stage's T ranks split by S: all of
 * them up to four ("1, 5, 9, 13"), else "1, 5, ... 29 (8)". */
void kvshard_writer__split_members(char *out, size_t cap, uint32_t T, uint32_t S, uint32_t s);

/* Formatted text, for the few figures that are not integers. */
void kvshard_writer__out_printf(kvshard__out *o, const char *fmt, ...) KVSHARD__PRINTF(2, 3);
/* A quoted JSON string: control characters as \u00XX, and bytes that are
 * not valid UTF-8 as U+FFFD, so the document is always valid UTF-8. */
void kvshard_writer__out_json_string(kvshard__out *o, const char *s, size_t len);

/* A JSON document's field: `"name": ` and its value (a number; a number or
 * null; a string or null). */
void kvshard_writer__json_key(kvshard__out *o, const char *name);
void kvshard_writer__json_u64(kvshard__out *o, const char *name, uint64_t v);
void kvshard_writer__json_u64_or_null(kvshard__out *o, const char *name, bool has, uint64_t v);
void kvshard_writer__json_word(kvshard__out *o, const char *name, const char *word);
/* Text for a terminal: control characters and invalid bytes as \xNN. */
void kvshard_writer__out_safe(kvshard__out *o, const char *s, size_t len);
/* Text for HTML and XML: & < > " ' as entities, after kvshard_writer__out_safe's
 * escaping; U+FFFE and U+FFFF, which XML does not allow, as \xNN too. */
void kvshard_writer__out_xml(kvshard__out *o, const char *s, size_t len);
/* A printer onto `o` for text (our own wording, written as it is), and for
 * HTML (escaped, code as <code>, rows as table rows). */
kvshard__printer kvshard_writer__out_text_printer(kvshard__out *o);
kvshard__printer kvshard_writer__out_html_printer(kvshard__out *o);
/* Flush; KVSHARD_OK, or KVSHARD_EWRITE when any write failed. */
int kvshard_writer__out_finish(kvshard__out *o);

/* The model's layer counts by kind, as the text and the report's summary
 * give them: "10 full attention, 30 linear attention, 0 sliding window"
 * (each kind the table always counts, and the others the model has). */
struct kvshard__model_info;
void kvshard_writer__out_kind_counts(kvshard__out *o, const struct kvshard__model_info *m);

#endif /* KVSHARD_OUTPUT_WRITER_H */
