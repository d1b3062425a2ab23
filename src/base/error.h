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
extern const kvshard__mark kvshard__no_mark;

/* Record an error unless `err` is NULL or already holds one. Returns code. */
int kvshard__fail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                  const char *fmt, ...) KVSHARD__PRINTF(5, 6);
/* Clear an error before a call writes into it. */
void kvshard__error_reset(kvshard_error *err);
/* Point an existing error at another place (its code and message stay). */
void kvshard__error_locate(kvshard_error *err, const char *source, kvshard__mark mark);

#endif /* KVSHARD_BASE_ERROR_H */
