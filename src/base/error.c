/* Error records and status names. Everything an error carries is escaped, so
 * a crafted key or path cannot reach a terminal as control characters. */
#include "base/error.h"

#include <stdio.h>
#include <string.h>

const kvshard__mark kvshard__no_mark = {0, 0, 0};

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
    case KVSHARD_ERANK: return "TP rank out of range";
    case KVSHARD_ELAYER: return "layer index out of range";
    case KVSHARD_ENOBLOCK: return "no memory for one block";
    case KVSHARD_EOVERFLOW: return "arithmetic overflow";
    case KVSHARD_EWRITE: return "write failed";
    case KVSHARD_EPROFILE: return "not supported by the engine profile";
    case KVSHARD_EUNSUPPORTED: return "unsupported YAML feature";
    default: return "unknown error";
    }
}

size_t kvshard__utf8_char(const unsigned char *p, size_t left)
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

size_t kvshard__escape(char *out, size_t cap, const char *text, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < len;) {
        size_t n = kvshard__utf8_char(p + i, len - i);
        /* C0 controls, DEL, and the C1 controls U+0080..U+009F (C2 80..9F). */
        bool control =
            n == 1 ? (p[i] < 0x20 || p[i] == 0x7F) : (n == 2 && p[i] == 0xC2 && p[i + 1] < 0xA0);
        if (n == 0 || control) {
            size_t escaped = n > 1 ? n : 1;
            if (o + 4 * escaped >= cap)
                break;
            for (size_t k = 0; k < escaped; k++) {
                out[o++] = '\\';
                out[o++] = 'x';
                out[o++] = hex[p[i + k] >> 4];
                out[o++] = hex[p[i + k] & 0xF];
            }
            i += escaped;
            continue;
        }
        if (o + n >= cap)
            break; /* never cut a character in half */
        memcpy(out + o, p + i, n);
        o += n;
        i += n;
    }
    out[o] = '\0';
    return o;
}

void kvshard__excerpt(char *out, size_t cap, const char *text, size_t len, size_t max)
{
    size_t take = len;
    if (take > max) {
        take = max;
        /* back off to the start of a character */
        while (take > 0 && ((unsigned char)text[take] & 0xC0) == 0x80)
            take--;
    }
    size_t o = kvshard__escape(out, cap > 3 ? cap - 3 : cap, text, take);
    if (take < len && o + 4 <= cap)
        memcpy(out + o, "...", 4);
}

void kvshard__error_reset(kvshard_error *err)
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

/* Keep the tail of a long path: it names the file; the head is context. */
static void copy_source(char *dst, size_t cap, const char *src)
{
    char escaped[4 * KVSHARD_ERROR_SOURCE_MAX + 1];
    size_t len = strlen(src);
    bool cut = false;
    if (len >= cap) {
        src += len - (cap - 1);
        while (((unsigned char)*src & 0xC0) == 0x80)
            src++;
        len = strlen(src);
        cut = true;
    }
    size_t n = kvshard__escape(escaped, sizeof escaped, src, len);
    if (!cut && n < cap) {
        memcpy(dst, escaped, n + 1);
        return;
    }
    size_t keep = cap - 4;
    size_t from = n > keep ? n - keep : 0;
    while (from < n && ((unsigned char)escaped[from] & 0xC0) == 0x80)
        from++;
    memcpy(dst, "...", 3);
    memcpy(dst + 3, escaped + from, n - from + 1);
}

void kvshard__error_locate(kvshard_error *err, const char *source, kvshard__mark mark)
{
    if (!err)
        return;
    err->line = mark.line;
    err->column = mark.column;
    err->offset = mark.offset;
    copy_source(err->source, sizeof err->source, source ? source : "");
}

int kvshard__fail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard__vfail(err, code, source, mark, fmt, ap);
    va_end(ap);
    return rc;
}

int kvshard__vfail(kvshard_error *err, int code, const char *source, kvshard__mark mark,
                   const char *fmt, va_list ap)
{
    if (!err || err->code != KVSHARD_OK)
        return code;
    err->code = code;
    kvshard__error_locate(err, source, mark);
    char raw[KVSHARD_ERROR_MESSAGE_MAX];
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    if (n >= 0 && (size_t)n >= sizeof raw) {
        /* vsnprintf cut the text: drop a character it cut in half. */
        size_t start = len;
        while (start > 0 && len - start < 4 && ((unsigned char)raw[start - 1] & 0xC0) == 0x80)
            start--;
        if (start > 0 && (unsigned char)raw[start - 1] >= 0xC0 &&
            kvshard__utf8_char((const unsigned char *)raw + start - 1, len - start + 1) == 0)
            len = start - 1;
    }
    kvshard__escape(err->message, sizeof err->message, raw, len);
    return code;
}
