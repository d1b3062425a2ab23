/* The one parser and range check of typed values, for files, flags and the
 * values a caller's struct holds alike. */
#include "text/value.h"

#include "text/json_doc.h"
#include "text/yaml_doc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* Longest piece of a value quoted back in a message. */
#define SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

/* A number out of range as the message shows it: its text as written (cut
 * short), or the double when it came without one. */
static void shown_number(char *out, size_t cap, const char *text, size_t len, double d)
{
    if (text)
        snprintf(out, cap, "%.*s", SHOWN(len), text);
    else
        snprintf(out, cap, "%g", d);
}

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

/* A decimal's range: above 0 and at most the def's bound. */
/* Above 0; a decimal that may be left unset may also be 0 (a link's
 * latency: its site says whether it was given). */
static bool decimal_ok(const kvshard_value__def *d, double value)
{
    return (d->unset_ok ? value >= 0.0 : value > 0.0) && value <= (double)d->max;
}

bool kvshard_value__is_word(const kvshard_value__def *def, kvshard_value v)
{
    return (def->type == KVSHARD__VT_U32 || def->type == KVSHARD__VT_BYTES) && def->words &&
           (int64_t)v.u < 0 &&
           kvshard_value__word_of(def->words, (int)(int64_t)v.u) != NULL;
}

/* A size written out of its key's range. A number that is how a caller's
 * struct holds a word (activation_reserve's auto) says so: the word, not
 * the number, sets that. */
static int size_range_error(const kvshard_value__def *d, kvshard_value v, const char *text,
                            size_t len, const char *source, kvshard__mark mark, kvshard_error *err)
{
    const kvshard_value__word *w =
        kvshard_value__is_word(d, v) ? kvshard_value__word_of(d->words, (int)(int64_t)v.u) : NULL;
    char hint[96] = "";
    if (w)
        snprintf(hint, sizeof hint, " (kvshard_options holds %s as %llu)", w->text,
                 (unsigned long long)v.u);
    return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                         "%s: %.*s is out of range; expected a size from %llu to %llu bytes%s",
                         d->name, SHOWN(len), text, (unsigned long long)d->min,
                         (unsigned long long)d->max, hint);
}

/* Whether `v` is allowed for `d`; the error names the key. `text` is the
 * value as written, or NULL for a value from a caller's struct. */
static int check(const kvshard_value__def *d, kvshard_value v, const char *text, size_t len,
                 const char *source, kvshard__mark mark, kvshard_error *err)
{
    switch (d->type) {
    case KVSHARD__VT_U32:
    case KVSHARD__VT_BYTES:
    case KVSHARD__VT_SIZES:
        if (!text && v.u == 0 && d->unset_ok)
            return KVSHARD_OK;
        /* A text here is a number: its words were told apart by their text
         * before. Only a caller's struct stores a word as its value. */
        if (!text && kvshard_value__is_word(d, v))
            return KVSHARD_OK;
        if (v.u < d->min && d->below_min == KVSHARD_EPARALLEL) {
            if (!text)
                return kvshard_error__fail(err, KVSHARD_EPARALLEL, source, mark,
                                     "%s is %llu; it must be at least %llu", d->name,
                                     (unsigned long long)v.u, (unsigned long long)d->min);
            return kvshard_error__fail(err, KVSHARD_EPARALLEL, source, mark,
                                 "%s is %.*s; it must be at least %llu", d->name, SHOWN(len), text,
                                 (unsigned long long)d->min);
        }
        if (v.u < d->min || v.u > d->max) {
            if (d->type == KVSHARD__VT_BYTES && text)
                return size_range_error(d, v, text, len, source, mark, err);
            return kvshard_scalar__range_error(err, d->name, text, len, v.u, d->min, d->max, source,
                                        mark);
        }
        return KVSHARD_OK;
    case KVSHARD__VT_FRACTION:
        if (!text && v.d == 0.0 && d->unset_ok)
            return KVSHARD_OK;
        if (!fraction_ok(v.d)) {
            char shown[48];
            shown_number(shown, sizeof shown, text, len, v.d);
            return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: %s is out of range; expected a fraction above 0 and at "
                                 "most 1",
                                 d->name, shown);
        }
        return KVSHARD_OK;
    case KVSHARD__VT_DECIMAL:
        if (!decimal_ok(d, v.d)) {
            char shown[48];
            shown_number(shown, sizeof shown, text, len, v.d);
            return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: %s is out of range; expected a decimal %s 0 and at "
                                 "most %llu",
                                 d->name, shown, d->unset_ok ? "from" : "above",
                                 (unsigned long long)d->max);
        }
        return KVSHARD_OK;
    case KVSHARD__VT_BOOL:
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT: return KVSHARD_OK;
    case KVSHARD__VT_WORD:
    default: {
        int value = (int)(int64_t)v.u;
        if (!kvshard_value__word_of(d->words, value) && !(d->unset_ok && !text && value == -1))
            return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
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
    case KVSHARD__VT_BOOL:
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT: return KVSHARD_OK;
    case KVSHARD__VT_U32:
    case KVSHARD__VT_BYTES:
    case KVSHARD__VT_SIZES:
        if ((v.u == 0 && def->unset_ok) || (v.u >= def->min && v.u <= def->max) ||
            kvshard_value__is_word(def, v))
            return KVSHARD_OK;
        break;
    case KVSHARD__VT_FRACTION:
        if (fraction_ok(v.d))
            return KVSHARD_OK;
        break;
    case KVSHARD__VT_DECIMAL:
        if (decimal_ok(def, v.d))
            return KVSHARD_OK;
        break;
    case KVSHARD__VT_WORD: {
        int value = (int)(int64_t)v.u;
        if ((def->unset_ok && value == -1) || kvshard_value__word_of(def->words, value))
            return KVSHARD_OK;
        break;
    }
    }
    return check(def, v, NULL, 0, "", kvshard_error__no_mark, err);
}

/* Most decimals a link latency may have: it is read to the nanosecond, so a
 * longer one would be rounded rather than taken as given. */
#define LATENCY_DECIMALS_MAX 9

/* What a decimal's text says before it is read: a sign makes it negative,
 * which is out of range rather than a wrong type. A decimal that may be 0
 * is a link's latency (decimal_ok), whose decimals are at most
 * LATENCY_DECIMALS_MAX; an engine's decimals keep the engine's reading. */
static int decimal_form(const kvshard_value__def *d, const char *text, size_t len,
                        const char *source, kvshard__mark mark, kvshard_error *err)
{
    double unused;
    if (len > 1 && text[0] == '-' && kvshard_scalar__scan_decimal(&unused, text + 1, len - 1))
        return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                   "%s: %.*s is negative; expected a decimal %s 0 and at most "
                                   "%llu",
                                   d->name, SHOWN(len), text, d->unset_ok ? "from" : "above",
                                   (unsigned long long)d->max);
    const char *point = memchr(text, '.', len);
    if (d->unset_ok && point && (size_t)(text + len - point - 1) > LATENCY_DECIMALS_MAX)
        return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                   "%s: %.*s has more than %d decimals; expected a decimal from "
                                   "0 and at most %llu with at most %d decimals",
                                   d->name, SHOWN(len), text, LATENCY_DECIMALS_MAX,
                                   (unsigned long long)d->max, LATENCY_DECIMALS_MAX);
    return KVSHARD_OK;
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
        return kvshard_text__is(text, len, "true")    ? 1
               : kvshard_text__is(text, len, "false") ? 0
                                                      : -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (equal_nocase(text, len, yes[i]))
            return 1;
        if (equal_nocase(text, len, no[i]))
            return 0;
    }
    return -1;
}

/* Text values are shown back in messages and written into documents: no
 * control characters, and shorter than `room` (its NUL included). */
static int printable(const kvshard_value__def *d, const char *text, size_t len, size_t room,
                     const char *source, kvshard__mark mark, kvshard_error *err)
{
    if (len == 0)
        return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                   "%s: expected a value, found none", d->name);
    if (len >= room)
        return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                             "%s: \"%.*s...\" is longer than the %zu characters it may have",
                             d->name, SHOWN(len), text, room - 1);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c == 0x7f)
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" holds a control character", d->name, SHOWN(len),
                                 text);
    }
    return KVSHARD_OK;
}

/* A JSON object given as one value (an engine's --speculative-config): its text
 * field, which must stand in the text as written so that the value can
 * point at it, and its whole-number field. The engine reads the value with
 * json.loads, so it is read as strict JSON: what only YAML allows (trailing
 * commas, comments, single quotes, tags, bare words) is refused, never
 * planned as something the engine would reject. */
static int parse_object(kvshard_value *v, const kvshard_value__def *d, const char *text, size_t len,
                        const char *source, kvshard__mark mark, kvshard_error *err)
{
    const kvshard_value__fields *f = d->more ? d->more->fields : NULL;
    kvshard_allocator a = kvshard_alloc__allocator_or_default(NULL);
    kvshard__doc doc;
    kvshard_error doc_err;
    kvshard_error__reset(&doc_err);
    if (kvshard_json_doc__parse(&doc, text, len, d->name, &a, &doc_err) != KVSHARD_OK) {
        if (doc_err.code == KVSHARD_ENOMEM)
            return kvshard_error__fail(err, KVSHARD_ENOMEM, source, mark, "out of memory");
        return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                             "%s: expected a JSON object, found \"%.*s\" (%s)", d->name,
                             SHOWN(len), text, doc_err.message);
    }
    kvshard__node root = kvshard_tape__doc_root(&doc), node;
    int rc = KVSHARD_OK;
    if (root.kind != KVSHARD__NODE_MAPPING) {
        rc = kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                           "%s: expected a JSON object such as {\"%s\": 1}, found \"%.*s\"",
                           d->name, f && f->integer ? f->integer : "key", SHOWN(len), text);
    } else if (f && f->text && kvshard_tape__map_get(&doc, &root, f->text, &node) &&
               !kvshard_tape__node_is_null(&node)) {
        bool inside = node.kind == KVSHARD__NODE_SCALAR && node.text >= text &&
                      node.text + node.count <= text + len;
        if (node.kind != KVSHARD__NODE_SCALAR || node.style != KVSHARD__VALUE_QUOTED)
            rc = kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                               "%s: \"%s\" must be a string in \"%.*s\"", d->name, f->text,
                               SHOWN(len), text);
        else if (!inside || node.count >= KVSHARD__VALUE_TEXT_MAX || node.count == 0)
            rc = kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                               "%s: \"%s\" must be a name of 1 to %d characters without "
                               "escapes in \"%.*s\"",
                               d->name, f->text, KVSHARD__VALUE_TEXT_MAX - 1, SHOWN(len), text);
        else
            rc = printable(d, node.text, node.count, KVSHARD__VALUE_TEXT_MAX, source, mark, err);
        if (rc == KVSHARD_OK) {
            v->text = node.text;
            v->text_len = node.count;
        }
    }
    if (rc == KVSHARD_OK && f && f->integer) {
        if (!kvshard_tape__map_get(&doc, &root, f->integer, &node) ||
            kvshard_tape__node_is_null(&node)) {
            rc = kvshard_error__fail(err, KVSHARD_EMISSING, source, mark,
                                     "%s: \"%.*s\" has no \"%s\"", d->name, SHOWN(len), text,
                                     f->integer);
        } else {
            kvshard_error int_err;
            kvshard_error__reset(&int_err);
            char what[96];
            snprintf(what, sizeof what, "%s.%s", d->name, f->integer);
            rc = kvshard_tape__node_uint(&v->u, &doc, &node, what, 0, f->integer_max, &int_err);
            if (rc)
                rc = kvshard_error__fail(err, rc, source, mark, "%s", int_err.message);
        }
    }
    kvshard_tape__doc_free(&doc);
    return rc;
}

/* The next comma-separated item of text[*at..len), spaces around it cut. */
static void next_item(size_t *start, size_t *end, const char *text, size_t len, size_t *at)
{
    size_t b = *at, e = b;
    while (e < len && text[e] != ',')
        e++;
    *at = e < len ? e + 1 : len + 1;
    while (b < e && text[b] == ' ')
        b++;
    while (e > b && text[e - 1] == ' ')
        e--;
    *start = b;
    *end = e;
}

/* One size, or a comma list of them, each a byte count of the def's range.
 * A list keeps its text (one size a stage, up to a plan's most stages) and
 * its largest size. */
static int parse_sizes(kvshard_value *v, const kvshard_value__def *d, const char *text, size_t len,
                       kvshard__value_style style, const char *source, kvshard__mark mark,
                       kvshard_error *err)
{
    kvshard_value__def one = *d;
    one.type = KVSHARD__VT_BYTES;
    if (!memchr(text, ',', len))
        return kvshard_value__parse(v, &one, text, len, style, source, mark, err);
    int rc = printable(d, text, len, KVSHARD__SIZES_TEXT_MAX, source, mark, err);
    if (rc)
        return rc;
    uint64_t largest = 0;
    uint32_t n = 0;
    for (size_t at = 0; at <= len; n++) {
        if (n == KVSHARD_MAX_PP_PARTITION)
            return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                                       "%s: \"%.*s...\" has more than %u sizes, one a stage of "
                                       "the %u stages a plan may have",
                                       d->name, SHOWN(len), text, KVSHARD_MAX_PP_PARTITION,
                                       KVSHARD_MAX_PP_PARTITION);
        size_t b, e;
        next_item(&b, &e, text, len, &at);
        if (b == e)
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                       "%s: \"%.*s\" has an empty entry %u; give one size, or "
                                       "one a stage such as 40GiB,38GiB",
                                       d->name, SHOWN(len), text, n);
        kvshard_value item;
        /* A list's items are plain sizes, wherever the list was written. */
        rc = kvshard_value__parse(&item, &one, text + b, e - b, KVSHARD__VALUE_PLAIN, source, mark,
                                  err);
        if (rc)
            return rc;
        largest = item.u > largest ? item.u : largest;
    }
    v->u = largest;
    v->text = text;
    v->text_len = len;
    return KVSHARD_OK;
}

uint32_t kvshard_value__sizes(uint64_t *out, uint32_t cap, kvshard_value v)
{
    if (!v.text) {
        if (cap)
            out[0] = v.u;
        return 1;
    }
    uint32_t n = 0;
    for (size_t at = 0; at <= v.text_len; n++) {
        size_t b, e;
        next_item(&b, &e, v.text, v.text_len, &at);
        uint64_t size = 0;
        kvshard_error ignored;
        /* Parsed once already: it cannot fail here. */
        (void)kvshard_scalar__parse_size(&size, v.text + b, e - b, 0, "", "",
                                         kvshard_error__no_mark, &ignored);
        if (n < cap)
            out[n] = size;
    }
    return n;
}

int kvshard_value__parse(kvshard_value *out, const kvshard_value__def *d, const char *text,
                         size_t len, kvshard__value_style style, const char *source,
                         kvshard__mark mark, kvshard_error *err)
{
    kvshard_value v = {0, 0.0, NULL, 0};
    switch (d->type) {
    case KVSHARD__VT_U32:
        for (const kvshard_value__word *w = d->words; w && w->text; w++) {
            if (kvshard_text__is(text, len, w->text)) {
                v.u = (uint64_t)(int64_t)w->value;
                *out = v;
                return KVSHARD_OK;
            }
        }
        if (style == KVSHARD__VALUE_QUOTED)
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found the string \"%.*s\"", d->name,
                                 SHOWN(len), text);
        /* In YAML, 010 is octal to some readers and decimal to others. */
        if (style == KVSHARD__VALUE_PLAIN && len > 1 && text[0] == '0' &&
            kvshard_scalar__all_digits(text, len))
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" has a leading zero, which YAML readers take for "
                                 "octal; write the number without it",
                                 d->name, SHOWN(len), text);
        switch (kvshard_scalar__scan_uint(&v.u, text, len)) {
        case KVSHARD__INT_NOT_INTEGER:
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found \"%.*s\"", d->name, SHOWN(len),
                                 text);
        case KVSHARD__INT_NEGATIVE:
            if (d->below_min == KVSHARD_EPARALLEL) /* "is -3; it must be at least 1" */
                return check(d, v, text, len, source, mark, err);
            return kvshard_scalar__range_error(err, d->name, text, len, 0, d->min, d->max, source,
                                               mark);
        /* Past 2^64 - 1 is out of every range, and never a value that a
         * word stands for. */
        case KVSHARD__INT_TOO_LARGE:
            return kvshard_scalar__range_error(err, d->name, text, len, 0, d->min, d->max, source,
                                               mark);
        case KVSHARD__INT_OK: break;
        }
        break;
    case KVSHARD__VT_BOOL: {
        int b = kvshard_value__bool_text(text, len, style);
        if (b < 0)
            return kvshard_error__fail(
                err, KVSHARD_ETYPE, source, mark, "%s: expected %s, found %s\"%.*s\"", d->name,
                style == KVSHARD__VALUE_FLAG ? "true or false (or 1, 0, yes, no)" : "true or false",
                style == KVSHARD__VALUE_QUOTED ? "the string " : "", SHOWN(len), text);
        v.u = (uint64_t)b;
        break;
    }
    case KVSHARD__VT_BYTES: {
        for (const kvshard_value__word *w = d->words; w && w->text; w++) {
            if (kvshard_text__is(text, len, w->text)) {
                v.u = (uint64_t)(int64_t)w->value;
                *out = v;
                return KVSHARD_OK;
            }
        }
        if (style == KVSHARD__VALUE_QUOTED && kvshard_scalar__all_digits(text, len))
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected a number of bytes, found the string \"%.*s\"",
                                 d->name, SHOWN(len), text);
        if (style == KVSHARD__VALUE_PLAIN && len > 1 && text[0] == '0' && text[1] >= '0' &&
            text[1] <= '9')
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" has a leading zero, which YAML readers take for "
                                 "octal; write the number without it",
                                 d->name, SHOWN(len), text);
        int rc = kvshard_scalar__parse_size(&v.u, text, len, d->min, d->name, source, mark, err);
        if (rc)
            return rc;
        break;
    }
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL:
        if (d->type == KVSHARD__VT_DECIMAL && style != KVSHARD__VALUE_QUOTED) {
            int rc = decimal_form(d, text, len, source, mark, err);
            if (rc)
                return rc;
        }
        if (style == KVSHARD__VALUE_QUOTED || !kvshard_scalar__scan_decimal(&v.d, text, len))
            return kvshard_error__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected %s, found %s\"%.*s\"", d->name,
                                 d->type == KVSHARD__VT_FRACTION ? "a fraction such as 0.9"
                                                                 : "a decimal such as 1.5",
                                 style == KVSHARD__VALUE_QUOTED ? "the string " : "", SHOWN(len),
                                 text);
        break;
    case KVSHARD__VT_TEXT: {
        int rc = printable(d, text, len, KVSHARD__VALUE_TEXT_MAX, source, mark, err);
        if (rc == KVSHARD_OK && d->more && d->more->check)
            rc = d->more->check(d, text, len, source, mark, err);
        if (rc)
            return rc;
        v.text = text;
        v.text_len = len;
        v.u = len;
        break;
    }
    case KVSHARD__VT_SIZES: {
        int rc = parse_sizes(&v, d, text, len, style, source, mark, err);
        if (rc)
            return rc;
        break;
    }
    case KVSHARD__VT_OBJECT: {
        int rc = parse_object(&v, d, text, len, source, mark, err);
        if (rc)
            return rc;
        break;
    }
    case KVSHARD__VT_WORD:
    default: {
        const kvshard_value__word *w = d->words;
        while (w->text && !kvshard_text__is(text, len, w->text))
            w++;
        if (!w->text) {
            char expected[160];
            kvshard_value__list_words(expected, sizeof expected, d->words);
            return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
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

static bool same_text(kvshard_value a, kvshard_value b)
{
    size_t la = a.text ? a.text_len : 0, lb = b.text ? b.text_len : 0;
    return la == lb && (la == 0 || memcmp(a.text, b.text, la) == 0);
}

bool kvshard_value__equal(const kvshard_value__def *def, kvshard_value a, kvshard_value b)
{
    switch (def->type) {
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL: return !(a.d < b.d) && !(a.d > b.d);
    case KVSHARD__VT_TEXT: return same_text(a, b);
    case KVSHARD__VT_OBJECT:
    case KVSHARD__VT_SIZES: return a.u == b.u && same_text(a, b);
    default: return a.u == b.u;
    }
}
