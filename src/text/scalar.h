/* Scalar text: integers, byte sizes and words, as files and flags write them. */
#ifndef KVSHARD_TEXT_SCALAR_H
#define KVSHARD_TEXT_SCALAR_H

#include "base/error.h"

/* How the value text was written: a plain YAML scalar (or a flag) may be a
 * number or boolean; a quoted one is always a string. */
typedef enum kvshard__value_style {
    KVSHARD__VALUE_PLAIN,  /* a plain YAML scalar */
    KVSHARD__VALUE_QUOTED, /* a quoted YAML scalar: always a string */
    KVSHARD__VALUE_FLAG    /* command-line text, read as gflags reads it */
} kvshard__value_style;

/* `len` bytes of `text` are exactly the NUL-terminated `word`. */
bool kvshard_text__is(const char *text, size_t len, const char *word);

/* Text of one or more ASCII digits and nothing else. */
bool kvshard_scalar__all_digits(const char *text, size_t len);

typedef enum kvshard__int_scan {
    KVSHARD__INT_OK,
    KVSHARD__INT_NOT_INTEGER, /* not a decimal integer at all */
    KVSHARD__INT_NEGATIVE,    /* "-3": an integer below zero */
    KVSHARD__INT_TOO_LARGE    /* past 2^64 - 1 */
} kvshard__int_scan;

/* Read a decimal integer with an optional '+'; nothing is reported. */
kvshard__int_scan kvshard_scalar__scan_uint(uint64_t *out, const char *text, size_t len);

/* The one message for a number outside [min, max]: "what: TEXT is out of
 * range; expected an integer from MIN to MAX" ("is negative" below zero).
 * `text` is the value as written; NULL formats `value` instead. */
int kvshard_scalar__range_error(kvshard_error *err, const char *what, const char *text, size_t len,
                         uint64_t value, uint64_t min, uint64_t max, const char *source,
                         kvshard__mark mark);

/* Parse a decimal integer in [min, max]; ETYPE or ERANGE with `what` named. */
int kvshard_scalar__parse_uint(uint64_t *out, const char *text, size_t len, uint64_t min,
                               uint64_t max, const char *what, const char *source,
                               kvshard__mark mark, kvshard_error *err);

/* A size: digits, an optional "." and digits, optional spaces and a unit (B,
 * KB, MB, GB, TB in powers of 1000; KiB, MiB, GiB, TiB in powers of 1024),
 * at most 64 characters: 1073741824, 20GiB, 512 MiB, 72.5GiB, 141GB. The
 * value is exact, rounded down to a byte (0.1KiB is 102), and at least `min`.
 * ETYPE for any other text (a unit in the wrong case gets a hint), ERANGE
 * below `min`, for a negative size and past 2^64 - 1. `what` names the key. */
int kvshard_scalar__parse_size(uint64_t *out, const char *text, size_t len, uint64_t min,
                               const char *what, const char *source, kvshard__mark mark,
                               kvshard_error *err);

/* Longest decimal text kvshard_scalar__scan_decimal() reads. */
#define KVSHARD__DECIMAL_MAX 64

/* A decimal fraction as written: digits with an optional '.' and digits
 * ("0.9", "1", ".85", "0.6666666666666666"), at most KVSHARD__DECIMAL_MAX
 * characters, no sign or exponent; false for anything else. The nearest
 * double, correctly rounded, so the shortest decimal that reads back as a
 * double gives that double. */
bool kvshard_scalar__scan_decimal(double *out, const char *text, size_t len);

#endif /* KVSHARD_TEXT_SCALAR_H */
