/* Integers and byte sizes as written in config files and on command lines. */
#include "text/scalar.h"

#include "base/checked.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest piece of a value quoted back in a message. */
#define SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

bool kvshard__text_is(const char *text, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(text, word, len) == 0;
}

bool kvshard__all_digits(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return false;
    }
    return len > 0;
}

kvshard__int_scan kvshard__scan_uint(uint64_t *out, const char *text, size_t len)
{
    size_t i = 0;
    if (len > 1 && text[0] == '-')
        return kvshard__all_digits(text + 1, len - 1) ? KVSHARD__INT_NEGATIVE
                                                      : KVSHARD__INT_NOT_INTEGER;
    if (len > 0 && text[0] == '+')
        i++;
    if (!kvshard__all_digits(text + i, len - i))
        return KVSHARD__INT_NOT_INTEGER;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (!kvshard__mul(&v, v, 10) || !kvshard__add(&v, v, (uint64_t)(text[i] - '0')))
            return KVSHARD__INT_TOO_LARGE;
    }
    *out = v;
    return KVSHARD__INT_OK;
}

int kvshard__range_error(kvshard_error *err, const char *what, const char *text, size_t len,
                         uint64_t value, uint64_t min, uint64_t max, const char *source,
                         kvshard__mark mark)
{
    char number[24];
    if (!text) {
        len = (size_t)snprintf(number, sizeof number, "%llu", (unsigned long long)value);
        text = number;
    }
    bool negative = len > 0 && text[0] == '-';
    return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                         "%s: %.*s is %s; expected an integer from %llu to %llu", what, SHOWN(len),
                         text, negative ? "negative" : "out of range", (unsigned long long)min,
                         (unsigned long long)max);
}

int kvshard__parse_uint(uint64_t *out, const char *text, size_t len, uint64_t min, uint64_t max,
                        const char *what, const char *source, kvshard__mark mark,
                        kvshard_error *err)
{
    uint64_t v = 0;
    switch (kvshard__scan_uint(&v, text, len)) {
    case KVSHARD__INT_NOT_INTEGER:
        return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                             "%s: expected an integer, found \"%.*s\"", what, SHOWN(len), text);
    case KVSHARD__INT_NEGATIVE:
    case KVSHARD__INT_TOO_LARGE:
        return kvshard__range_error(err, what, text, len, 0, min, max, source, mark);
    case KVSHARD__INT_OK:
    default: break;
    }
    if (v < min || v > max)
        return kvshard__range_error(err, what, text, len, v, min, max, source, mark);
    *out = v;
    return KVSHARD_OK;
}

int kvshard__parse_size(uint64_t *out, const char *text, size_t len, uint64_t min, const char *what,
                        const char *source, kvshard__mark mark, kvshard_error *err)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}};
    size_t digits = 0;
    while (digits < len && text[digits] >= '0' && text[digits] <= '9')
        digits++;
    size_t rest = digits;
    while (rest < len && text[rest] == ' ')
        rest++;
    unsigned shift = 0;
    if (rest < len) {
        size_t u = 0;
        while (u < sizeof units / sizeof units[0] &&
               !kvshard__text_is(text + rest, len - rest, units[u].suffix))
            u++;
        if (u == sizeof units / sizeof units[0] || digits == 0) {
            if (len > 0 && text[0] == '-')
                return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                     "%s: \"%.*s\" is negative; expected a size in bytes", what,
                                     SHOWN(len), text);
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected bytes or a size with KiB, MiB, GiB or TiB, found "
                                 "\"%.*s\"",
                                 what, SHOWN(len), text);
        }
        shift = units[u].shift;
    }
    uint64_t n;
    int rc = kvshard__parse_uint(&n, text, digits, min, UINT64_MAX, what, source, mark, err);
    if (rc)
        return rc;
    if (shift && n > (UINT64_MAX >> shift))
        return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                             "%s: %.*s does not fit in 64 bits of bytes", what, SHOWN(len), text);
    *out = n << shift;
    return KVSHARD_OK;
}

bool kvshard__scan_decimal(double *out, const char *text, size_t len)
{
    /* The grammar is checked here; the C library's strtod then gives the
     * nearest double, correctly rounded, with the locale's decimal point
     * in place of '.', so that an engine's setlocale() changes nothing. */
    char buf[KVSHARD__DECIMAL_MAX + 1];
    size_t digits = 0;
    bool point = false;
    if (len == 0 || len > KVSHARD__DECIMAL_MAX)
        return false;
    const char *dp = localeconv()->decimal_point;
    size_t dp_len = dp && dp[0] ? strlen(dp) : 0;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '.' && !point) {
            point = true;
            if (dp_len != 1)
                return false; /* a locale whose point is not one byte: refuse, never misread */
            buf[n++] = dp[0];
            continue;
        }
        if (c < '0' || c > '9')
            return false;
        digits++;
        buf[n++] = c;
    }
    if (digits == 0)
        return false;
    buf[n] = '\0';
    *out = strtod(buf, NULL);
    return true;
}
