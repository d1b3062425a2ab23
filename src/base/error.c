/* Error records and status names. Everything an error carries is escaped, so
 * a crafted key or path cannot reach a terminal as control characters. */
#include "base/error.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

const kvshard__mark kvshard_error__no_mark = {0, 0, 0};

const char *kvshard_strerror(int code)
{
    switch (code) {
    case KVSHARD_OK: return "success";
    case KVSHARD_ENOMEM: return "out of memory";
    case KVSHARD_EINVAL: return "invalid argument";
    case KVSHARD_EIO: return "cannot read file";
    case KVSHARD_ESYNTAX: return "syntax error";
    case KVSHARD_EUTF8: return "invalid UTF-8";
    case KVSHARD_ELIMIT: return "input exceeds a limit";
    case KVSHARD_EDUPKEY: return "duplicate key";
    case KVSHARD_EUNKNOWNKEY: return "unknown key";
    case KVSHARD_ETYPE: return "wrong type";
    case KVSHARD_ERANGE: return "value out of range";
    case KVSHARD_EMISSING: return "missing key";
    case KVSHARD_ELAYERTYPE: return "unknown layer type";
    case KVSHARD_ELAYERCOUNT: return "wrong number of layers";
    case KVSHARD_ELAYERLIST: return "inconsistent layer lists";
    case KVSHARD_EPARALLEL: return "parallel size below 1";
    case KVSHARD_EWORLD: return "world size not divisible by dp_size * cp_size";
    case KVSHARD_ESPLIT: return "attention TP size not divisible by split size";
    case KVSHARD_ESPLITCP: return "layerwise split with context parallelism";
    case KVSHARD_EKVHEADS: return "KV heads and attention TP size do not divide";
    case KVSHARD_ELINEARHEADS: return "state dimension not divisible by TP size";
    case KVSHARD_ERANK: return "a plan rank outside 0..P\u00b7T\u22121";
    case KVSHARD_ELAYER: return "layer index out of range";
    case KVSHARD_ENOBLOCK: return "no memory for one block";
    case KVSHARD_EOVERFLOW: return "arithmetic overflow";
    case KVSHARD_EWRITE: return "write failed";
    case KVSHARD_EPROFILE: return "not supported by the engine profile";
    case KVSHARD_EUNSUPPORTED: return "unsupported YAML feature";
    case KVSHARD_EUNMODELED: return "a cache kvshard does not model";
    case KVSHARD_EPPLAYERS: return "more pipeline stages than layers";
    case KVSHARD_EPARTITION: return "layers cannot be cut into these stages";
    case KVSHARD_EPPSOURCE: return "a layer and its cache source on different stages";
    case KVSHARD_ESTAGE: return "stage out of range";
    case KVSHARD_EGLOBALRANK: return "global rank out of range";
    case KVSHARD_EWEIGHTS: return "no weights for the device memory";
    case KVSHARD_EDOESNOTFIT: return "the weights do not fit the device";
    case KVSHARD_EFITLIMITS: return "no layout within the node limits";
    case KVSHARD_EQHEADS: return "query heads not divisible by TP size";
    case KVSHARD_ECOMM: return "the split's communication cannot be priced as asked";
    default: return "unknown error";
    }
}

size_t kvshard_error__utf8_char(const unsigned char *p, size_t left)
{
    unsigned char c = p[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (left < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

/* Characters that a terminal shows as nothing, as a blank that is not the
 * ASCII space, or that reorder the text around them: in a message they make
 * "world<U+200B>_size" look like a key that exists. Rows of first..last code
 * point; each is shown as \u{XXXX}. */
static const struct {
    uint32_t first, last;
} hidden_chars[] = {
    {0x00A0, 0x00A0},   /* no-break space */
    {0x00AD, 0x00AD},   /* soft hyphen */
    {0x034F, 0x034F},   /* combining grapheme joiner */
    {0x061C, 0x061C},   /* Arabic letter mark (bidirectional) */
    {0x115F, 0x1160},   /* Hangul choseong and jungseong fillers */
    {0x1680, 0x1680},   /* Ogham space mark */
    {0x17B4, 0x17B5},   /* Khmer inherent vowels */
    {0x180B, 0x180F},   /* Mongolian variation selectors and vowel separator */
    {0x2000, 0x200F},   /* spaces of other widths, zero-width space, joiners, LRM, RLM */
    {0x2028, 0x202F},   /* line and paragraph separators, bidi embeddings and overrides */
    {0x205F, 0x206F},   /* word joiner, invisible operators, bidi isolates, old format marks */
    {0x3000, 0x3000},   /* ideographic space */
    {0x3164, 0x3164},   /* Hangul filler */
    {0xFE00, 0xFE0F},   /* variation selectors */
    {0xFEFF, 0xFEFF},   /* byte order mark (zero-width no-break space) */
    {0xFFA0, 0xFFA0},   /* halfwidth Hangul filler */
    {0xFFF0, 0xFFFB},   /* unassigned specials, interlinear annotation marks */
    {0x1BCA0, 0x1BCA3}, /* shorthand format controls */
    {0x1D173, 0x1D17A}, /* musical symbol format controls */
    {0xE0000, 0xE0FFF}, /* tags, variation selectors supplement */
};

static uint32_t code_point(const unsigned char *p, size_t n)
{
    static const unsigned char lead_bits[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    uint32_t cp = p[0] & lead_bits[n];
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (p[i] & 0x3Fu);
    return cp;
}

static bool is_hidden(uint32_t cp)
{
    for (size_t i = 0; i < sizeof hidden_chars / sizeof hidden_chars[0]; i++) {
        if (cp >= hidden_chars[i].first && cp <= hidden_chars[i].last)
            return true;
    }
    return false;
}

/* How kvshard_error__escape shows the text at `p`: sets *bytes to the input bytes
 * of the next character and returns the width it takes in the output; the
 * escape goes to `esc` (at least KVSHARD__ESCAPE_WIDEST + 1 bytes), or
 * esc[0] is '\0' when the character is copied as it is. */
#define KVSHARD__ESCAPE_WIDEST 9 /* \u{E0001} */
static size_t show_char(char *esc, const unsigned char *p, size_t left, size_t *bytes)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = kvshard_error__utf8_char(p, left);
    /* C0 controls, DEL, and the C1 controls U+0080..U+009F (C2 80..9F). */
    bool control = n == 1 ? (p[0] < 0x20 || p[0] == 0x7F) : (n == 2 && p[0] == 0xC2 && p[1] < 0xA0);
    esc[0] = '\0';
    if (n == 0 || control) {
        /* A byte that starts no character, or one control character: \xNN
         * per byte. The C1 controls keep this form, as they always had. */
        size_t escaped = n > 1 ? n : 1;
        for (size_t k = 0; k < escaped; k++) {
            esc[4 * k] = '\\';
            esc[4 * k + 1] = 'x';
            esc[4 * k + 2] = hex[p[k] >> 4];
            esc[4 * k + 3] = hex[p[k] & 0xF];
        }
        esc[4 * escaped] = '\0';
        *bytes = escaped;
        return 4 * escaped;
    }
    *bytes = n;
    if (n == 1)
        return 1;
    uint32_t cp = code_point(p, n);
    if (!is_hidden(cp))
        return n;
    int w = snprintf(esc, KVSHARD__ESCAPE_WIDEST + 1, "\\u{%04X}", (unsigned)cp);
    return (size_t)w;
}

size_t kvshard_error__escape(char *out, size_t cap, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < len;) {
        char esc[KVSHARD__ESCAPE_WIDEST + 1];
        size_t n;
        size_t w = show_char(esc, p + i, len - i, &n);
        if (o + w >= cap)
            break; /* never cut a character or an escape in half */
        if (esc[0])
            memcpy(out + o, esc, w);
        else
            memcpy(out + o, p + i, n);
        o += w;
        i += n;
    }
    out[o] = '\0';
    return o;
}

size_t kvshard_error__escaped_width(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t width = 0;
    for (size_t i = 0; i < len;) {
        char esc[KVSHARD__ESCAPE_WIDEST + 1];
        size_t n;
        width += show_char(esc, p + i, len - i, &n);
        i += n;
    }
    return width;
}

void kvshard_error__excerpt(char *out, size_t cap, const char *text, size_t len, size_t max)
{
    size_t take = len;
    if (take > max) {
        take = max;
        /* back off to the start of a character */
        while (take > 0 && ((unsigned char)text[take] & 0xC0) == 0x80)
            take--;
    }
    size_t o = kvshard_error__escape(out, cap > 3 ? cap - 3 : cap, text, take);
    if (take < len && o + 4 <= cap)
        memcpy(out + o, "...", 4);
}

void kvshard_error__reset(kvshard_error *err)
{
    /* The fields and two empty strings, not the whole struct: every call
     * clears it, and the strings are read only up to their end. */
    if (!err)
        return;
    err->code = KVSHARD_OK;
    err->line = 0;
    err->column = 0;
    err->offset = 0;
    err->source[0] = '\0';
    err->message[0] = '\0';
}

void kvshard_error__shorten(char *out, size_t cap, const char *text)
{
    if (cap == 0)
        return;
    size_t len = strlen(text);
    size_t total = kvshard_error__escaped_width(text, len);
    if (total < cap || cap < 8) {
        kvshard_error__escape(out, cap, text, len);
        return;
    }
    /* Keep the tail of a long path: it names the file; the head is context.
     * The tail starts at a character the escape would show whole, so no
     * escape sequence or UTF-8 character is cut in half. */
    size_t room = cap - 4, shown = total, i = 0;
    const unsigned char *p = (const unsigned char *)text;
    while (i < len && shown > room) {
        char esc[KVSHARD__ESCAPE_WIDEST + 1];
        size_t n;
        shown -= show_char(esc, p + i, len - i, &n);
        i += n;
    }
    memcpy(out, "...", 3);
    kvshard_error__escape(out + 3, cap - 3, text + i, len - i);
}

void kvshard_error__locate(kvshard_error *err, const char *source, kvshard__mark mark)
{
    if (!err)
        return;
    err->line = mark.line;
    err->column = mark.column;
    err->offset = mark.offset;
    kvshard_error__shorten(err->source, sizeof err->source, source ? source : "");
}

int kvshard_error__fail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard_error__vfail(err, code, source, mark, fmt, ap);
    va_end(ap);
    return rc;
}

int kvshard_error__vfail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                   const char *fmt, va_list ap)
{
    if (!err || err->code != KVSHARD_OK)
        return code;
    err->code = code;
    kvshard_error__locate(err, source, mark);
    char raw[KVSHARD_ERROR_MESSAGE_MAX];
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    if (n >= 0 && (size_t)n >= sizeof raw) {
        /* vsnprintf cut the text: drop a character it cut in half. */
        size_t start = len;
        while (start > 0 && len - start < 4 && ((unsigned char)raw[start - 1] & 0xC0) == 0x80)
            start--;
        if (start > 0 && (unsigned char)raw[start - 1] >= 0xC0 &&
            kvshard_error__utf8_char((const unsigned char *)raw + start - 1, len - start + 1) == 0)
            len = start - 1;
    }
    kvshard_error__escape(err->message, sizeof err->message, raw, len);
    return code;
}
