/* JSON text -> the tape of yaml_tape.h, through the builder of yaml_build.h. */
#include "text/json_doc.h"

#include "text/yaml_build.h"
#include "text/yaml_marks.h"

#include <stdio.h>
#include <string.h>

/* What the scanner expects next. */
typedef enum {
    WANT_VALUE,     /* a value: the top one, an item, or after a key's ':' */
    WANT_FIRST_KEY, /* just after '{': a key or '}' (whitespace skipped) */
    WANT_KEY,       /* after ',' in an object: a key */
    WANT_AFTER      /* a value ended: ',' or the bracket that closes it */
} want;

typedef struct scan {
    kvshard__doc_builder *b;
    const kvshard__doc *doc;
    const unsigned char *t;
    size_t len;
    const kvshard_allocator *alloc;
    char *buf; /* a string's decoded text, when it holds escapes */
    size_t cap;
    size_t depth;
    /* 1 for an object, 0 for an array, per open collection. The builder
     * refuses to open one past KVSHARD_MAX_DEPTH, so this never fills. */
    unsigned char object[KVSHARD_MAX_DEPTH];
} scan;

/* Bytes that end a run of plain string bytes: the closing quote, a
 * backslash, control characters, and the first byte of a UTF-8 sequence,
 * which is checked. */
static const unsigned char STOP[256] = {
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

#define VALUE_WORDS "a JSON value (an object, an array, a string, a number, true, false or null)"

static inline bool is_digit(unsigned c)
{
    return c - '0' < 10u;
}

/* JSON's four whitespace characters. */
static inline size_t skip_space(const scan *s, size_t i)
{
    while (i < s->len) {
        unsigned char c = s->t[i];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
            break;
        i++;
    }
    return i;
}

/* Bytes of the well-formed UTF-8 sequence at `i` (no overlong forms, no
 * surrogates, nothing above U+10FFFF) and its code point; 0 when it is not
 * one. */
static size_t utf8_at(const scan *s, size_t i, uint32_t *cp)
{
    unsigned c = s->t[i];
    unsigned lo = 0x80, hi = 0xBF;
    size_t n;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2) {
        return 0;
    } else if (c < 0xE0) {
        n = 2;
        v = c & 0x1Fu;
    } else if (c < 0xF0) {
        n = 3;
        v = c & 0x0Fu;
        lo = c == 0xE0 ? 0xA0 : 0x80; /* overlong below */
        hi = c == 0xED ? 0x9F : 0xBF; /* surrogates above */
    } else if (c < 0xF5) {
        n = 4;
        v = c & 0x07u;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF; /* past U+10FFFF above */
    } else {
        return 0;
    }
    if (s->len - i < n)
        return 0;
    for (size_t k = 1; k < n; k++) {
        unsigned d = s->t[i + k];
        if (d < lo || d > hi)
            return 0;
        lo = 0x80;
        hi = 0xBF;
        v = v << 6 | (d & 0x3Fu);
    }
    *cp = v;
    return n;
}

static int bad_utf8(const scan *s, size_t i)
{
    return kvshard_build__fail(s->b, KVSHARD_EUTF8, i,
                                   "invalid UTF-8 (a sequence that starts with the byte 0x%02X, "
                                   "at byte offset %zu); JSON text is UTF-8",
                                   s->t[i], i);
}

/* What stands at `i`, for "found ..." (a byte above 0x7F there begins a
 * well-formed sequence). */
static void describe_at(const scan *s, size_t i, char *buf, size_t cap)
{
    if (i >= s->len) {
        snprintf(buf, cap, "the end of the text");
        return;
    }
    unsigned c = s->t[i];
    uint32_t cp = c;
    if (c == '\'')
        snprintf(buf, cap, "a single quote (JSON strings take double quotes)");
    else if (c == '/')
        snprintf(buf, cap, "'/' (JSON has no comments)");
    else if (c == ' ')
        snprintf(buf, cap, "a space");
    else if ((c | 0x20u) - 'a' < 26u) {
        /* A word, shown whole: `True`, `F16`, `tru`. */
        size_t n = 1;
        while (n < 24 && i + n < s->len &&
               ((s->t[i + n] | 0x20u) - 'a' < 26u || is_digit(s->t[i + n]) || s->t[i + n] == '_'))
            n++;
        snprintf(buf, cap, "'%.*s'", (int)n, (const char *)s->t + i);
    } else if (c > 0x20 && c < 0x7F)
        snprintf(buf, cap, "'%c'", (char)c);
    else if (c < 0x80)
        snprintf(buf, cap, "the control character U+%04X", (unsigned)c);
    else if (utf8_at(s, i, &cp))
        snprintf(buf, cap, "the character U+%04X", (unsigned)cp);
    else
        snprintf(buf, cap, "a byte that begins no UTF-8 sequence");
}

static int unexpected(const scan *s, size_t i, const char *expected)
{
    uint32_t cp;
    if (i < s->len && s->t[i] >= 0x80 && !utf8_at(s, i, &cp))
        return bad_utf8(s, i);
    char found[80];
    describe_at(s, i, found, sizeof found);
    return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i, "expected %s, found %s", expected,
                                   found);
}

static bool starts_with(const scan *s, size_t i, const char *word, size_t n)
{
    return s->len - i >= n && memcmp(s->t + i, word, n) == 0;
}

/* Where a value cannot begin with what stands at `i`. */
static int not_a_value(const scan *s, size_t i)
{
    if (starts_with(s, i, "NaN", 3) || starts_with(s, i, "Infinity", 8) ||
        starts_with(s, i, "-Infinity", 9))
        return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                       "expected %s, found %s: JSON has no NaN or Infinity",
                                       VALUE_WORDS, s->t[i] == 'N' ? "NaN" : "Infinity");
    return unexpected(s, i, VALUE_WORDS);
}

/* Room for `more` bytes after the first `used` of the buffer. */
static int reserve(scan *s, size_t used, size_t more, size_t at)
{
    if (s->cap - used >= more)
        return KVSHARD_OK;
    size_t cap = s->cap ? s->cap : 256;
    while (cap - used < more)
        cap *= 2;
    char *grown = kvshard_alloc__bytes(s->alloc, cap, 1);
    if (!grown)
        return kvshard_build__fail(s->b, KVSHARD_ENOMEM, at, "out of memory reading a string");
    if (used)
        memcpy(grown, s->buf, used);
    kvshard_alloc__free(s->alloc, s->buf);
    s->buf = grown;
    s->cap = cap;
    return KVSHARD_OK;
}

static int unclosed(const scan *s, size_t quote, size_t end)
{
    kvshard__mark m = kvshard_marks__mark(s->doc, quote);
    return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, end,
                                   "expected '\"' to close the string that begins at line %d, "
                                   "column %d, found the end of the text",
                                   m.line, m.column);
}

/* U+0085 (NEL), U+2028 and U+2029 are line breaks to YAML, which folds
 * them inside a quoted string as it folds a newline; JSON would keep them
 * as written. So that both readings of a text agree, a JSON string holds
 * them as it holds a newline: only escaped. */
static bool yaml_line_break(uint32_t cp)
{
    return cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

static int line_break_in_string(const scan *s, size_t i, uint32_t cp)
{
    return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                   "the line break U+%04X inside a string: YAML reads it as a "
                                   "line break, so a JSON string here writes it as an escape "
                                   "(\\u%04X)",
                                   (unsigned)cp, (unsigned)cp);
}

static int control_in_string(const scan *s, size_t i)
{
    unsigned c = s->t[i];
    if (c == '\n' || c == '\r')
        return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                       "expected '\"' before the end of the line: a JSON string "
                                       "holds no line break (it writes one as \\n)");
    return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                   "the control character U+%04X inside a string: JSON writes "
                                   "it as an escape (\\u%04X%s)",
                                   c, c, c == '\t' ? " or \\t" : "");
}

/* Four hex digits at `i` (bounds checked), or false. */
static bool hex4(const scan *s, size_t i, uint32_t *out)
{
    if (i > s->len || s->len - i < 4)
        return false;
    uint32_t v = 0;
    for (size_t k = 0; k < 4; k++) {
        unsigned c = s->t[i + k], d;
        if (is_digit(c))
            d = c - '0';
        else if ((c | 0x20u) - 'a' < 6u)
            d = (c | 0x20u) - 'a' + 10;
        else
            return false;
        v = v << 4 | d;
    }
    *out = v;
    return true;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The escape at `i` (a backslash) into out[0..4): its bytes in *n, the
 * position after it in *next. */
static int escape_at(const scan *s, size_t quote, size_t i, char *out, size_t *n, size_t *next)
{
    if (i + 1 >= s->len)
        return unclosed(s, quote, s->len);
    static const char simple_in[] = "\"\\/bfnrt", simple_out[] = "\"\\/\b\f\n\r\t";
    unsigned c = s->t[i + 1];
    const char *hit = c && c != 'u' ? strchr(simple_in, (int)c) : NULL;
    if (hit) {
        out[0] = simple_out[hit - simple_in];
        *n = 1;
        *next = i + 2;
        return KVSHARD_OK;
    }
    if (c != 'u') {
        char found[80];
        describe_at(s, i + 1, found, sizeof found);
        return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                       "expected an escape (\\\", \\\\, \\/, \\b, \\f, \\n, \\r, "
                                       "\\t or \\u and four hex digits) after the backslash, "
                                       "found %s",
                                       found);
    }
    uint32_t cp, low;
    if (!hex4(s, i + 2, &cp))
        return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                       "expected four hex digits after \\u");
    *next = i + 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                       "\\u%04X is a low surrogate with no high surrogate before "
                                       "it: a character above U+FFFF is a pair \\uD800-\\uDBFF "
                                       "then \\uDC00-\\uDFFF",
                                       (unsigned)cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (!starts_with(s, i + 6, "\\u", 2) || !hex4(s, i + 8, &low) || low < 0xDC00 ||
            low > 0xDFFF)
            return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, i,
                                           "\\u%04X is a high surrogate not followed by a low "
                                           "one (\\uDC00-\\uDFFF): a character above U+FFFF is "
                                           "a pair of them",
                                           (unsigned)cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        *next = i + 12;
    }
    *n = put_utf8(out, cp);
    return KVSHARD_OK;
}

/* The rest of a string from its first escape at `i`, decoded into the
 * buffer: a copy the tree keeps. */
static int escaped_string(scan *s, size_t quote, size_t i, size_t *end)
{
    const unsigned char *t = s->t;
    size_t o = i - quote - 1;
    int rc;
    if ((rc = reserve(s, 0, o + 64, quote)) != 0)
        return rc;
    memcpy(s->buf, t + quote + 1, o);
    for (;;) {
        size_t run = i;
        while (i < s->len && !STOP[t[i]])
            i++;
        if ((rc = reserve(s, o, i - run + 4, quote)) != 0)
            return rc;
        memcpy(s->buf + o, t + run, i - run);
        o += i - run;
        if (i >= s->len)
            return unclosed(s, quote, i);
        unsigned c = t[i];
        if (c == '"') {
            *end = i + 1;
            return kvshard_build__scalar(s->b, quote, true, s->buf, o);
        }
        if (c == '\\') {
            size_t n = 0;
            if ((rc = escape_at(s, quote, i, s->buf + o, &n, &i)) != 0)
                return rc;
            o += n;
            continue;
        }
        if (c < 0x20)
            return control_in_string(s, i);
        uint32_t cp;
        size_t n = utf8_at(s, i, &cp);
        if (!n)
            return bad_utf8(s, i);
        if (yaml_line_break(cp))
            return line_break_in_string(s, i, cp);
        memcpy(s->buf + o, t + i, n);
        o += n;
        i += n;
    }
}

/* The string whose opening quote is at `quote`; *end is one past its
 * closing quote. Without escapes its text is a span of the source. */
static int string_at(scan *s, size_t quote, size_t *end)
{
    const unsigned char *t = s->t;
    size_t i = quote + 1;
    for (;;) {
        while (i < s->len && !STOP[t[i]])
            i++;
        if (i >= s->len)
            return unclosed(s, quote, i);
        unsigned c = t[i];
        if (c == '"') {
            *end = i + 1;
            return kvshard_build__scalar(s->b, quote, true, NULL, i - quote - 1);
        }
        if (c == '\\')
            return escaped_string(s, quote, i, end);
        if (c < 0x20)
            return control_in_string(s, i);
        uint32_t cp;
        size_t n = utf8_at(s, i, &cp);
        if (!n)
            return bad_utf8(s, i);
        if (yaml_line_break(cp))
            return line_break_in_string(s, i, cp);
        i += n;
    }
}

/* A number as JSON writes it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][-+]?[0-9]+)?,
 * kept as a plain scalar of its text. */
static int number_at(const scan *s, size_t start, size_t *end)
{
    const unsigned char *t = s->t;
    size_t i = start;
    if (t[i] == '-') {
        i++;
        if (i >= s->len || !is_digit(t[i]))
            return starts_with(s, i, "Infinity", 8) ? not_a_value(s, start)
                                                    : unexpected(s, i, "a digit after '-'");
    }
    if (t[i] == '0') {
        i++;
        if (i < s->len && is_digit(t[i]))
            return kvshard_build__fail(s->b, KVSHARD_ESYNTAX, start,
                                           "a number with a leading zero: JSON writes 0 alone "
                                           "before its fraction or exponent, and has no octal");
    } else {
        while (i < s->len && is_digit(t[i]))
            i++;
    }
    if (i < s->len && t[i] == '.') {
        i++;
        if (i >= s->len || !is_digit(t[i]))
            return unexpected(s, i, "a digit after the decimal point");
        while (i < s->len && is_digit(t[i]))
            i++;
    }
    if (i < s->len && (t[i] == 'e' || t[i] == 'E')) {
        i++;
        if (i < s->len && (t[i] == '+' || t[i] == '-'))
            i++;
        if (i >= s->len || !is_digit(t[i]))
            return unexpected(s, i, "a digit of the exponent");
        while (i < s->len && is_digit(t[i]))
            i++;
    }
    *end = i;
    return kvshard_build__scalar(s->b, start, false, NULL, i - start);
}

/* One value at `i` (whitespace skipped): a scalar whole, or the opening of
 * a collection, after which *next says what comes. */
static int value_at(scan *s, size_t i, size_t *end, want *next)
{
    int rc;
    *next = WANT_AFTER;
    if (i >= s->len)
        return unexpected(s, i, VALUE_WORDS);
    switch (s->t[i]) {
    case '"': return string_at(s, i, end);
    case '{':
    case '[': {
        bool object = s->t[i] == '{';
        if ((rc = kvshard_build__open(s->b, i, object)) != 0)
            return rc;
        s->object[s->depth++] = object;
        size_t j = skip_space(s, i + 1);
        if (j < s->len && s->t[j] == (object ? '}' : ']')) {
            s->depth--;
            *end = j + 1;
            return kvshard_build__close(s->b);
        }
        *end = j;
        *next = object ? WANT_FIRST_KEY : WANT_VALUE;
        return KVSHARD_OK;
    }
    case 't':
    case 'f':
    case 'n': {
        const char *word = s->t[i] == 't' ? "true" : s->t[i] == 'f' ? "false" : "null";
        size_t n = strlen(word);
        if (!starts_with(s, i, word, n))
            return not_a_value(s, i);
        *end = i + n;
        return kvshard_build__scalar(s->b, i, false, NULL, n);
    }
    default:
        if (s->t[i] == '-' || is_digit(s->t[i]))
            return number_at(s, i, end);
        return not_a_value(s, i);
    }
}

static int json_front(kvshard__doc_builder *b, const kvshard__doc *doc, void *ctx)
{
    scan *s = ctx;
    s->b = b;
    s->doc = doc;
    s->t = (const unsigned char *)doc->text;
    s->len = doc->len;
    s->depth = 0;
    size_t i = skip_space(s, doc->start);
    if (i >= s->len)
        return kvshard_build__fail(b, KVSHARD_ESYNTAX, i,
                                       "expected %s, found the end of the text (the text is %s)",
                                       VALUE_WORDS, i > doc->start ? "only whitespace" : "empty");
    want w = WANT_VALUE;
    int rc;
    for (;;) {
        switch (w) {
        case WANT_VALUE:
            if ((rc = value_at(s, i, &i, &w)) != 0)
                return rc;
            if (w == WANT_AFTER)
                i = skip_space(s, i);
            break;
        case WANT_FIRST_KEY:
        case WANT_KEY:
            if (i >= s->len || s->t[i] != '"')
                return unexpected(s, i,
                                  w == WANT_FIRST_KEY ? "a key in double quotes or '}'"
                                                      : "a key in double quotes after ','");
            if ((rc = string_at(s, i, &i)) != 0)
                return rc;
            i = skip_space(s, i);
            if (i >= s->len || s->t[i] != ':')
                return unexpected(s, i, "':' after the key");
            i = skip_space(s, i + 1);
            w = WANT_VALUE;
            break;
        case WANT_AFTER:
        default: {
            if (s->depth == 0) {
                if (i < s->len)
                    return unexpected(s, i, "the end of the text after the JSON value");
                return KVSHARD_OK;
            }
            bool object = s->object[s->depth - 1];
            char close = object ? '}' : ']';
            if (i < s->len && s->t[i] == ',') {
                size_t comma = i;
                i = skip_space(s, i + 1);
                if (i < s->len && s->t[i] == close)
                    return kvshard_build__fail(b, KVSHARD_ESYNTAX, comma,
                                                   "expected %s after ',', found '%c': JSON "
                                                   "allows no trailing comma",
                                                   object ? "a key" : "a value", close);
                w = object ? WANT_KEY : WANT_VALUE;
            } else if (i < s->len && s->t[i] == close) {
                s->depth--;
                if ((rc = kvshard_build__close(b)) != 0)
                    return rc;
                i = skip_space(s, i + 1);
            } else {
                return unexpected(s, i,
                                  object ? "',' or '}' after a value in an object"
                                         : "',' or ']' after a value in an array");
            }
            break;
        }
        }
    }
}

static int parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                 const kvshard_allocator *alloc, const uint64_t *seed, kvshard_error *err)
{
    scan s;
    s.alloc = alloc;
    s.buf = NULL;
    s.cap = 0;
    int rc = kvshard_build__doc(out, text, len, source, alloc, seed, true, json_front, &s, err);
    kvshard_alloc__free(alloc, s.buf);
    return rc;
}

int kvshard_json_doc__parse(kvshard__doc *out, const char *text, size_t len, const char *source,
                            const kvshard_allocator *alloc, kvshard_error *err)
{
    return parse(out, text, len, source, alloc, NULL, err);
}

int kvshard_json_doc__parse_seeded(kvshard__doc *out, const char *text, size_t len,
                                   const char *source, const kvshard_allocator *alloc,
                                   uint64_t seed, kvshard_error *err)
{
    return parse(out, text, len, source, alloc, &seed, err);
}
