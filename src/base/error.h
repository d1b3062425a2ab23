/* Error records: where and why a call failed. */
#ifndef KVSHARD_BASE_ERROR_H
#define KVSHARD_BASE_ERROR_H

#include "kvshard/kvshard.h"

#include <stdarg.h>

#if defined(__GNUC__) || defined(__clang__)
#define KVSHARD__PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KVSHARD__PRINTF(fmt, args)
#endif

/* Position of a piece of text: 1-based line and column, 0-based offset. */
typedef struct kvshard__mark {
    int line;
    int column;
    size_t offset;
} kvshard__mark;

/* No position: the error is about a value, not a place in a text. */
extern const kvshard__mark kvshard_error__no_mark;

/* Length of the valid UTF-8 character at `p` (at most `left` bytes), or 0
 * when the bytes there are not one (overlong forms and surrogates count as
 * invalid). */
size_t kvshard_error__utf8_char(const unsigned char *p, size_t left);

/* Copy `len` bytes of text into `out` (NUL-terminated, at most `cap` bytes),
 * safe to print: the one escape every message of the library and the CLI
 * goes through. Control characters (C0 with NUL, DEL, C1) and bytes that are
 * not valid UTF-8 become \xNN per byte; characters a terminal shows as
 * nothing or as a blank other than the space, or that reorder text (no-break
 * and other-width spaces, soft hyphen, zero-width space and joiners, the
 * bidirectional marks, embeddings, overrides and isolates U+202A..U+202E and
 * U+2066..U+2069, word joiner and invisible operators U+2060..U+2064, the
 * byte order mark U+FEFF, variation selectors, fillers, tags: the table in
 * error.c) become \u{XXXX}. Escaped text escapes to itself. The text is cut
 * only between characters. Returns the bytes written. */
size_t kvshard_error__escape(char *out, size_t cap, const char *text, size_t len);

/* The bytes kvshard_error__escape would write for the whole text. */
size_t kvshard_error__escaped_width(const char *text, size_t len);

/* `text` (NUL-terminated) escaped into `out`; when it does not fit in `cap`
 * bytes, "..." and the longest tail that does, cut before a whole character:
 * a path's tail names the file. The form of kvshard_error.source. */
void kvshard_error__shorten(char *out, size_t cap, const char *text);

/* An escaped excerpt of at most `max` input bytes for a message, with "..."
 * when the text is longer. */
void kvshard_error__excerpt(char *out, size_t cap, const char *text, size_t len, size_t max);

/* Record an error unless `err` is NULL or already holds one; the message and
 * source are escaped as kvshard_error__escape does. Returns code. */
int kvshard_error__fail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                  const char *fmt, ...) KVSHARD__PRINTF(5, 6);
/* kvshard_error__fail with a va_list. */
int kvshard_error__vfail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                   const char *fmt, va_list ap) KVSHARD__PRINTF(5, 0);
/* Clear an error before a call writes into it. */
void kvshard_error__reset(kvshard_error *err);
/* Point an existing error at another place (its code and message stay). */
void kvshard_error__locate(kvshard_error *err, const char *source, kvshard__mark mark);

#endif /* KVSHARD_BASE_ERROR_H */
