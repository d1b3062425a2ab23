/* The one parser and range check of typed values, for files, flags and the
 * values a caller's struct holds alike. */
#include "text/value.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Longest piece of a value quoted back in a message. */
#define SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

const kvshard_value__word *kvshard_value__word_of(const kvshard_value__word *words, int value)
{
    for (const kvshard_value__word *w = words; w && w->text; w++) {
        if (w->value == value)
            return w;
    }
    return NULL;
}

void kvshard_value__list_words(char *buf, size_t cap, const kvshard_value__word *words)
{
    size_t used = 0, count = 0;
    for (const kvshard_value__word *w = words; w->text; w++)
        count++;
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < count && used < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == count ? " or " : ", ";
        int n = snprintf(buf + used, cap - used, "%s%s", sep, words[i].text);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* A fraction's range: above 0 and at most 1 (NaN is neither). */
static bool fraction_ok(double value)
{
    return value > 0.0 && value <= 1.0;
}

/* Whether `v` is allowed for `d`; the error names the key. `text` is the
 * value as written, or NULL for a value from a caller's struct. */
static int check(const kvshard_value__def *d, kvshard_value v, const char *text, size_t len,
                 const char *source, kvshard__mark mark, kvshard_error *err)
{
    switch (d->type) {
    case KVSHARD__VT_U32:
    case KVSHARD__VT_BYTES:
        if (!text && v.u == 0 && d->unset_ok)
            return KVSHARD_OK;
        if (v.u < d->min && d->below_min == KVSHARD_EPARALLEL) {
            if (!text)
                return kvshard__fail(err, KVSHARD_EPARALLEL, source, mark,
                                     "%s is %llu; it must be at least %llu", d->name,
                                     (unsigned long long)v.u, (unsigned long long)d->min);
            return kvshard__fail(err, KVSHARD_EPARALLEL, source, mark,
                                 "%s is %.*s; it must be at least %llu", d->name, SHOWN(len), text,
                                 (unsigned long long)d->min);
        }
        if (v.u < d->min || v.u > d->max)
            return kvshard__range_error(err, d->name, text, len, v.u, d->min, d->max, source,
                                        mark);
        return KVSHARD_OK;
    case KVSHARD__VT_FRACTION:
        if (!fraction_ok(v.d)) {
            char shown[48];
            if (text)
                snprintf(shown, sizeof shown, "%.*s", SHOWN(len), text);
            else
                snprintf(shown, sizeof shown, "%g", v.d);
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: %s is out of range; expected a fraction above 0 and at "
                                 "most 1",
                                 d->name, shown);
        }
        return KVSHARD_OK;
    case KVSHARD__VT_BOOL: return KVSHARD_OK;
    case KVSHARD__VT_WORD:
    default: {
        int value = (int)(int64_t)v.u;
        if (!kvshard_value__word_of(d->words, value) && !(d->unset_ok && !text && value == -1))
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s %lld is not one of its values", d->name,
                                 (long long)(int64_t)v.u);
        return KVSHARD_OK;
    }
    }
}

int kvshard_value__check(const kvshard_value__def *def, kvshard_value v, kvshard_error *err)
{
    /* Values in range pass without the general path: a plan checks every
     * option it is given. */
    switch (def->type) {
    case KVSHARD__VT_BOOL: return KVSHARD_OK;
    case KVSHARD__VT_U32:
    case KVSHARD__VT_BYTES:
        if ((v.u == 0 && def->unset_ok) || (v.u >= def->min && v.u <= def->max))
            return KVSHARD_OK;
        break;
    case KVSHARD__VT_FRACTION:
        if (fraction_ok(v.d))
            return KVSHARD_OK;
        break;
    case KVSHARD__VT_WORD: break;
    }
    return check(def, v, NULL, 0, "", kvshard__no_mark, err);
}

static bool equal_nocase(const char *text, size_t len, const char *expected)
{
    if (strlen(expected) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (tolower((unsigned char)text[i]) != expected[i])
            return false;
    }
    return true;
}

int kvshard_value__bool_text(const char *text, size_t len, kvshard__value_style style)
{
    static const char *const yes[] = {"true", "1", "yes", "t", "y"};
    static const char *const no[] = {"false", "0", "no", "f", "n"};
    if (style == KVSHARD__VALUE_QUOTED)
        return -1;
    if (style == KVSHARD__VALUE_PLAIN)
        return kvshard__text_is(text, len, "true")    ? 1
               : kvshard__text_is(text, len, "false") ? 0
                                                      : -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (equal_nocase(text, len, yes[i]))
            return 1;
        if (equal_nocase(text, len, no[i]))
            return 0;
    }
    return -1;
}

int kvshard_value__parse(kvshard_value *out, const kvshard_value__def *d, const char *text,
                         size_t len, kvshard__value_style style, const char *source,
                         kvshard__mark mark, kvshard_error *err)
{
    kvshard_value v = {0, 0.0};
    switch (d->type) {
    case KVSHARD__VT_U32:
        if (style == KVSHARD__VALUE_QUOTED)
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found the string \"%.*s\"", d->name,
                                 SHOWN(len), text);
        /* In YAML, 010 is octal to some readers and decimal to others. */
        if (style == KVSHARD__VALUE_PLAIN && len > 1 && text[0] == '0' &&
            kvshard__all_digits(text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" has a leading zero, which YAML readers take for "
                                 "octal; write the number without it",
                                 d->name, SHOWN(len), text);
        switch (kvshard__scan_uint(&v.u, text, len)) {
        case KVSHARD__INT_NOT_INTEGER:
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found \"%.*s\"", d->name, SHOWN(len),
                                 text);
        case KVSHARD__INT_NEGATIVE:
            if (d->below_min == KVSHARD_EPARALLEL) /* "is -3; it must be at least 1" */
                return check(d, v, text, len, source, mark, err);
            return kvshard__range_error(err, d->name, text, len, 0, d->min, d->max, source, mark);
        case KVSHARD__INT_TOO_LARGE: v.u = UINT64_MAX; break;
        case KVSHARD__INT_OK: break;
        }
        break;
    case KVSHARD__VT_BOOL: {
        int b = kvshard_value__bool_text(text, len, style);
        if (b < 0)
            return kvshard__fail(
                err, KVSHARD_ETYPE, source, mark, "%s: expected %s, found %s\"%.*s\"", d->name,
                style == KVSHARD__VALUE_FLAG ? "true or false (or 1, 0, yes, no)" : "true or false",
                style == KVSHARD__VALUE_QUOTED ? "the string " : "", SHOWN(len), text);
        v.u = (uint64_t)b;
        break;
    }
    case KVSHARD__VT_BYTES: {
        if (style == KVSHARD__VALUE_QUOTED && kvshard__all_digits(text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected a number of bytes, found the string \"%.*s\"",
                                 d->name, SHOWN(len), text);
        if (style == KVSHARD__VALUE_PLAIN && len > 1 && text[0] == '0' && text[1] >= '0' &&
            text[1] <= '9')
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" has a leading zero, which YAML readers take for "
                                 "octal; write the number without it",
                                 d->name, SHOWN(len), text);
        int rc = kvshard__parse_size(&v.u, text, len, d->min, d->name, source, mark, err);
        if (rc)
            return rc;
        break;
    }
    case KVSHARD__VT_FRACTION:
        if (style == KVSHARD__VALUE_QUOTED || !kvshard__scan_decimal(&v.d, text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected a fraction such as 0.9, found %s\"%.*s\"", d->name,
                                 style == KVSHARD__VALUE_QUOTED ? "the string " : "", SHOWN(len),
                                 text);
        break;
    case KVSHARD__VT_WORD:
    default: {
        const kvshard_value__word *w = d->words;
        while (w->text && !kvshard__text_is(text, len, w->text))
            w++;
        if (!w->text) {
            char expected[160];
            kvshard_value__list_words(expected, sizeof expected, d->words);
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: expected %s, found \"%.*s\"", d->name, expected, SHOWN(len),
                                 text);
        }
        v.u = (uint64_t)(int64_t)w->value;
        break;
    }
    }
    int rc = check(d, v, text, len, source, mark, err);
    if (rc == KVSHARD_OK)
        *out = v;
    return rc;
}

bool kvshard_value__equal(const kvshard_value__def *def, kvshard_value a, kvshard_value b)
{
    if (def->type == KVSHARD__VT_FRACTION)
        return !(a.d < b.d) && !(a.d > b.d);
    return a.u == b.u;
}
