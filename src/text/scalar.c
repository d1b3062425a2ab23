/* Integers and byte sizes as written in config files and on command lines. */
#include "text/scalar.h"

#include "base/checked.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest piece of a value quoted back in a message. */
#define SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

bool kvshard_text__is(const char *text, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(text, word, len) == 0;
}

bool kvshard_scalar__all_digits(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9')
            return false;
    }
    return len > 0;
}

kvshard__int_scan kvshard_scalar__scan_uint(uint64_t *out, const char *text, size_t len)
{
    size_t i = 0;
    if (len > 1 && text[0] == '-')
        return kvshard_scalar__all_digits(text + 1, len - 1) ? KVSHARD__INT_NEGATIVE
                                                      : KVSHARD__INT_NOT_INTEGER;
    if (len > 0 && text[0] == '+')
        i++;
    if (!kvshard_scalar__all_digits(text + i, len - i))
        return KVSHARD__INT_NOT_INTEGER;
    uint64_t v = 0;
    for (; i < len; i++) {
        if (!kvshard__mul(&v, v, 10) || !kvshard__add(&v, v, (uint64_t)(text[i] - '0')))
            return KVSHARD__INT_TOO_LARGE;
    }
    *out = v;
    return KVSHARD__INT_OK;
}

int kvshard_scalar__range_error(kvshard_error *err, const char *what, const char *text, size_t len,
                         uint64_t value, uint64_t min, uint64_t max, const char *source,
                         kvshard__mark mark)
{
    char number[24];
    if (!text) {
        len = (size_t)snprintf(number, sizeof number, "%llu", (unsigned long long)value);
        text = number;
    }
    bool negative = len > 0 && text[0] == '-';
    return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                         "%s: %.*s is %s; expected an integer from %llu to %llu", what, SHOWN(len),
                         text, negative ? "negative" : "out of range", (unsigned long long)min,
                         (unsigned long long)max);
}

int kvshard_scalar__parse_uint(uint64_t *out, const char *text, size_t len, uint64_t min,
                               uint64_t max, const char *what, const char *source,
                               kvshard__mark mark, kvshard_error *err)
{
    uint64_t v = 0;
    switch (kvshard_scalar__scan_uint(&v, text, len)) {
    case KVSHARD__INT_NOT_INTEGER:
        return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                             "%s: expected an integer, found \"%.*s\"", what, SHOWN(len), text);
    case KVSHARD__INT_NEGATIVE:
    case KVSHARD__INT_TOO_LARGE:
        return kvshard_scalar__range_error(err, what, text, len, 0, min, max, source, mark);
    case KVSHARD__INT_OK:
    default: break;
    }
    if (v < min || v > max)
        return kvshard_scalar__range_error(err, what, text, len, v, min, max, source, mark);
    *out = v;
    return KVSHARD_OK;
}

/* ---- sizes ------------------------------------------------------------------------
 *
 *   size = digits [ "." digits ] [ spaces ] [ unit ]      at most 64 characters
 *   unit = B | KB | MB | GB | TB  (powers of 1000) | KiB | MiB | GiB | TiB (of 1024)
 *
 * Units are case-sensitive, a fraction needs a unit, spaces stand only between
 * the number and its unit, and the value is exact, rounded down to a byte. */

#define SIZE_MAX_CHARS 64u

static const struct size_unit {
    const char *name;
    uint64_t bytes;
} size_units[] = {
    {"B", 1},
    {"KB", UINT64_C(1000)},
    {"MB", UINT64_C(1000000)},
    {"GB", UINT64_C(1000000000)},
    {"TB", UINT64_C(1000000000000)},
    {"KiB", UINT64_C(1) << 10},
    {"MiB", UINT64_C(1) << 20},
    {"GiB", UINT64_C(1) << 30},
    {"TiB", UINT64_C(1) << 40},
};

#define SIZE_FORMS                                                                                 \
    "a size is bytes, or a number and a unit (80GiB, 512 MiB, 72.5GiB, 141GB): B, KB, MB, GB, TB " \
    "are powers of 1000, KiB, MiB, GiB, TiB of 1024"

/* The pieces of a text that has the form of a size: the number's integer and
 * fraction digits, the spaces after it, and what follows. */
typedef struct size_parts {
    size_t int_digits;  /* from 0 */
    size_t frac_digits; /* after int_digits + 1, when `point` */
    bool point;
    size_t unit_at; /* after the spaces */
    size_t spaces;
} size_parts;

static void split_size(size_parts *p, const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    p->int_digits = i;
    p->point = false;
    p->frac_digits = 0;
    if (i < len && text[i] == '.') {
        p->point = true;
        size_t f = ++i;
        while (i < len && text[i] >= '0' && text[i] <= '9')
            i++;
        p->frac_digits = i - f;
    }
    size_t s = i;
    while (i < len && text[i] == ' ')
        i++;
    p->spaces = i - s;
    p->unit_at = i;
}

static const struct size_unit *find_unit(const char *text, size_t len)
{
    for (size_t u = 0; u < sizeof size_units / sizeof size_units[0]; u++) {
        if (kvshard_text__is(text, len, size_units[u].name))
            return &size_units[u];
    }
    return NULL;
}

/* value = (integer + fraction) x unit, rounded down; false past 2^64 - 1.
 * The fraction's share is worked from its last digit to its first: with
 * w < unit, floor((d x unit + w) / 10) is the exact floor of 0.d... x unit. */
static bool size_value(uint64_t *out, const char *text, const size_parts *p, uint64_t unit)
{
    uint64_t whole = 0;
    for (size_t i = 0; i < p->int_digits; i++) {
        if (!kvshard__mul(&whole, whole, 10) ||
            !kvshard__add(&whole, whole, (uint64_t)(text[i] - '0')))
            return false;
    }
    uint64_t part = 0;
    const char *frac = text + p->int_digits + 1;
    for (size_t i = p->frac_digits; i-- > 0;)
        part = ((uint64_t)(frac[i] - '0') * unit + part) / 10;
    return kvshard__mul(&whole, whole, unit) && kvshard__add(out, whole, part);
}

/* For a unit written in the wrong case or cut short ("80G", "80gb",
 * "80gib"), the sizes the writer most likely meant; empty when none. */
static void unit_hint(char *out, size_t cap, const char *number, size_t number_len,
                      const char *unit, size_t unit_len)
{
    out[0] = '\0';
    if (unit_len == 0 || unit_len > 3)
        return;
    char lower[4] = {0};
    for (size_t i = 0; i < unit_len; i++)
        lower[i] = (char)(unit[i] >= 'A' && unit[i] <= 'Z' ? unit[i] - 'A' + 'a' : unit[i]);
    int n = (int)number_len;
    if (kvshard_text__is(lower, unit_len, "b")) {
        snprintf(out, cap, "; did you mean %.*sB?", n, number);
        return;
    }
    char prefix = lower[0] == 'k'   ? 'K'
                  : lower[0] == 'm' ? 'M'
                  : lower[0] == 'g' ? 'G'
                  : lower[0] == 't' ? 'T'
                                    : '\0';
    if (!prefix)
        return;
    if ((unit_len == 3 && lower[1] == 'i' && lower[2] == 'b') || (unit_len == 2 && lower[1] == 'i'))
        snprintf(out, cap, "; did you mean %.*s%ciB?", n, number, prefix);
    else if (unit_len == 1 || (unit_len == 2 && lower[1] == 'b'))
        snprintf(out, cap, "; did you mean %.*s%cB or %.*s%ciB?", n, number, prefix, n, number,
                 prefix);
}

int kvshard_scalar__parse_size(uint64_t *out, const char *text, size_t len, uint64_t min,
                               const char *what, const char *source, kvshard__mark mark,
                               kvshard_error *err)
{
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, text, len, SIZE_MAX_CHARS);
    if (len > SIZE_MAX_CHARS)
        return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                             "%s: \"%s\" is not a size: it has %zu characters, and a size has at "
                             "most %u",
                             what, shown, len, SIZE_MAX_CHARS);
    bool negative = len > 0 && text[0] == '-';
    size_t skip = negative || (len > 0 && text[0] == '+') ? 1 : 0;
    size_parts p;
    split_size(&p, text + skip, len - skip);
    size_t end = skip + p.unit_at;
    const struct size_unit *unit = find_unit(text + end, len - end);
    bool number_ok = p.int_digits > 0 && (!p.point || p.frac_digits > 0);
    /* The form: a whole number alone, or a number, optional spaces and a unit. */
    bool form_ok = number_ok && (unit || (end == len && p.spaces == 0 && !p.point));
    if (form_ok && skip)
        return negative
                   ? kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                   "%s: \"%s\" is negative; expected a size in bytes", what, shown)
                   : kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                   "%s: \"%s\" is not a size: a size has no sign; %s", what, shown,
                                   SIZE_FORMS);
    if (!form_ok) {
        /* Blanks around the whole, or a tab anywhere: what a shell or a
         * quoted YAML string let through. */
        if (len > 0 && (text[0] == ' ' || text[len - 1] == ' ' || memchr(text, '\t', len)))
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%s\" is not a size: spaces may stand only between the "
                                 "number and its unit (512 MiB), and no other blank",
                                 what, shown);
        size_t number_len = skip + p.int_digits + (p.point ? 1 + p.frac_digits : 0);
        if (number_ok && !skip && end == len)
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                       "%s: \"%s\" is not a size: %s", what, shown,
                                       "a number with a fraction needs a unit (1.5GiB, 1.5GB); a "
                                       "number of bytes alone is whole");
        char hint[96] = "";
        if (number_ok && !skip)
            unit_hint(hint, sizeof hint, text, number_len, text + end, len - end);
        return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                   "%s: \"%s\" is not a size%s; %s", what, shown, hint, SIZE_FORMS);
    }
    uint64_t v;
    if (!size_value(&v, text, &p, unit ? unit->bytes : 1))
        return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                             "%s: %s is more than 18446744073709551615 bytes (2^64 - 1)", what,
                             shown);
    if (v < min)
        return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                             "%s: %s is %llu bytes; the least is %llu byte%s", what, shown,
                             (unsigned long long)v, (unsigned long long)min, min == 1 ? "" : "s");
    *out = v;
    return KVSHARD_OK;
}

bool kvshard_scalar__scan_decimal(double *out, const char *text, size_t len)
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
