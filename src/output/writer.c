/* Buffered output. */
#include "output/writer.h"

#include "base/format.h"
#include "model/kinds.h"
#include "model/model.h"

#include <stdio.h>
#include <string.h>

void kvshard_writer__out_init(kvshard__out *o, kvshard_write_fn write, void *user)
{
    o->write = write;
    o->user = user;
    o->failed = false;
    o->len = 0;
}

bool kvshard_writer__out_open(kvshard__out *o, const void *object, kvshard_write_fn write,
                              void *user)
{
    if (!object || !write)
        return false;
    kvshard_writer__out_init(o, write, user);
    return true;
}

static void flush(kvshard__out *o)
{
    if (o->len && !o->failed && o->write(o->user, o->buf, o->len) != 0)
        o->failed = true;
    o->len = 0;
}

void kvshard_writer__out_put(kvshard__out *o, const char *s, size_t n)
{
    if (o->failed)
        return;
    if (n <= sizeof o->buf - o->len) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        return;
    }
    while (n > 0 && !o->failed) {
        if (o->len == sizeof o->buf)
            flush(o);
        size_t room = sizeof o->buf - o->len;
        size_t take = n < room ? n : room;
        memcpy(o->buf + o->len, s, take);
        o->len += take;
        s += take;
        n -= take;
    }
}

void kvshard_writer__out_raw(kvshard__out *o, const char *s)
{
    kvshard_writer__out_put(o, s, strlen(s));
}

void kvshard_writer__out_u64(kvshard__out *o, uint64_t v)
{
    char digits[20];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    kvshard_writer__out_put(o, digits + i, sizeof digits - i);
}

void kvshard_writer__out_i64(kvshard__out *o, int64_t v)
{
    if (v < 0) {
        kvshard_writer__out_put(o, "-", 1);
        kvshard_writer__out_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        kvshard_writer__out_u64(o, (uint64_t)v);
    }
}

void kvshard_writer__out_grouped(kvshard__out *o, uint64_t v)
{
    char buf[32];
    kvshard_writer__out_put(o, buf, kvshard_format__grouped_text(buf, sizeof buf, v));
}

void kvshard_writer__out_human(kvshard__out *o, uint64_t bytes, int width)
{
    char buf[32];
    size_t n = kvshard_format__human_text(buf, sizeof buf, bytes);
    kvshard_writer__out_put(o, buf, n);
    for (size_t i = n; (int)i < width; i++)
        kvshard_writer__out_put(o, " ", 1);
}

void kvshard_writer__out_hex64(kvshard__out *o, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    char digits[16];
    for (int i = 15; i >= 0; i--) {
        digits[i] = hex[v & 0xF];
        v >>= 4;
    }
    kvshard_writer__out_put(o, digits, sizeof digits);
}

void kvshard_writer__out_printf(kvshard__out *o, const char *fmt, ...)
{
    if (o->failed)
        return;
    /* Formatted straight into the buffer; text that does not fit in what is
     * left is formatted again after a flush, never cut short. */
    size_t room = sizeof o->buf - o->len;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof o->buf) {
        o->failed = true; /* no writer formats 16 KiB at once */
        return;
    }
    if ((size_t)n < room) {
        o->len += (size_t)n;
        return;
    }
    flush(o);
    if (o->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(o->buf, sizeof o->buf, fmt, ap);
    va_end(ap);
    o->len = (size_t)n;
}

void kvshard_writer__out_json_string(kvshard__out *o, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    kvshard_writer__out_put(o, "\"", 1);
    size_t run = 0; /* bytes that go out as they are */
    for (size_t i = 0; i < len && !o->failed;) {
        unsigned char c = p[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            run++;
            continue;
        }
        kvshard_writer__out_put(o, (const char *)p + i - run, run);
        run = 0;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            kvshard_writer__out_put(o, esc, 2);
            i++;
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
            kvshard_writer__out_put(o, esc, 6);
            i++;
        } else {
            size_t n = kvshard_error__utf8_char(p + i, len - i);
            if (n == 0) {
                kvshard_writer__out_put(o, "\xEF\xBF\xBD", 3); /* U+FFFD */
                i++;
            } else {
                kvshard_writer__out_put(o, (const char *)p + i, n);
                i += n;
            }
        }
    }
    kvshard_writer__out_put(o, (const char *)p + len - run, run);
    kvshard_writer__out_put(o, "\"", 1);
}

/* The escaped slice for XML: entities for the five special characters, and
 * U+FFFE and U+FFFF (valid UTF-8, but not XML characters) as \xNN. */
static void put_xml(kvshard__out *o, const char *tmp, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        const char *entity = NULL;
        size_t width = 1;
        unsigned char c = (unsigned char)tmp[i];
        if (c == 0xEF && i + 2 < n && (unsigned char)tmp[i + 1] == 0xBF &&
            ((unsigned char)tmp[i + 2] & 0xFE) == 0xBE) {
            entity = (unsigned char)tmp[i + 2] == 0xBE ? "\\xEF\\xBF\\xBE" : "\\xEF\\xBF\\xBF";
            width = 3;
        } else {
            switch (c) {
            case '&': entity = "&amp;"; break;
            case '<': entity = "&lt;"; break;
            case '>': entity = "&gt;"; break;
            case '"': entity = "&quot;"; break;
            case '\'': entity = "&#39;"; break;
            default: continue;
            }
        }
        kvshard_writer__out_put(o, tmp + from, i - from);
        kvshard_writer__out_raw(o, entity);
        i += width - 1;
        from = i + 1;
    }
    kvshard_writer__out_put(o, tmp + from, n - from);
}

/* Escape text in slices cut between characters, each through `put`. */
static void put_escaped(kvshard__out *o, const char *s, size_t len,
                        void (*put)(kvshard__out *, const char *, size_t))
{
    char tmp[1024];
    while (len > 0 && !o->failed) {
        size_t take = len < 200 ? len : 200;
        while (take < len && take > 0 && ((unsigned char)s[take] & 0xC0) == 0x80)
            take--;
        if (take == 0)
            take = len < 200 ? len : 200;
        put(o, tmp, kvshard_error__escape(tmp, sizeof tmp, s, take));
        s += take;
        len -= take;
    }
}

void kvshard_writer__out_safe(kvshard__out *o, const char *s, size_t len)
{
    put_escaped(o, s, len, kvshard_writer__out_put);
}

void kvshard_writer__out_xml(kvshard__out *o, const char *s, size_t len)
{
    put_escaped(o, s, len, put_xml);
}

int kvshard_writer__out_finish(kvshard__out *o)
{
    flush(o);
    return o->failed ? KVSHARD_EWRITE : KVSHARD_OK;
}

/* ---- printers: where a profile's wording goes ------------------------------------ */

static void text_put(void *ctx, const char *s, size_t n, bool code)
{
    (void)code;
    kvshard_writer__out_put(ctx, s, n);
}

kvshard__printer kvshard_writer__out_text_printer(kvshard__out *o)
{
    kvshard__printer p = {text_put, NULL, o};
    return p;
}

static void html_put(void *ctx, const char *s, size_t n, bool code)
{
    if (code)
        kvshard_writer__out_raw(ctx, "<code>");
    kvshard_writer__out_xml(ctx, s, n);
    if (code)
        kvshard_writer__out_raw(ctx, "</code>");
}

static void html_row(void *ctx, const char *label)
{
    if (!label) {
        kvshard_writer__out_raw(ctx, "</td></tr>\n");
        return;
    }
    kvshard_writer__out_raw(ctx, "<tr><th scope=\"row\">");
    kvshard_writer__out_xml(ctx, label, strlen(label));
    kvshard_writer__out_raw(ctx, "</th><td>");
}

kvshard__printer kvshard_writer__out_html_printer(kvshard__out *o)
{
    kvshard__printer p = {html_put, html_row, o};
    return p;
}

void kvshard_writer__split_members(char *out, size_t cap, uint32_t T, uint32_t S, uint32_t s)
{
    uint32_t n = T / S;
    if (n > 4) {
        snprintf(out, cap, "%u, %u, ... %u (%u)", s, s + S, T - S + s, n);
        return;
    }
    size_t used = 0;
    if (cap)
        out[0] = '\0';
    for (uint32_t k = 0; k < n && used < cap; k++) {
        int w = snprintf(out + used, cap - used, "%s%u", k ? ", " : "", s + k * S);
        used += w > 0 ? (size_t)w : 0;
    }
}

void kvshard_writer__out_kind_counts(kvshard__out *o, const kvshard__model_info *m)
{
    const char *sep = "";
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(k);
        if (row->count_always || m->count[k]) {
            kvshard_writer__out_printf(o, "%s%u %s", sep, m->count[k], row->count_label);
            sep = ", ";
        }
    }
}

void kvshard_writer__json_key(kvshard__out *o, const char *name)
{
    kvshard_writer__out_put(o, "\"", 1);
    kvshard_writer__out_raw(o, name);
    kvshard_writer__out_put(o, "\": ", 3);
}

void kvshard_writer__json_u64(kvshard__out *o, const char *name, uint64_t v)
{
    kvshard_writer__json_key(o, name);
    kvshard_writer__out_u64(o, v);
}

void kvshard_writer__json_u64_or_null(kvshard__out *o, const char *name, bool has, uint64_t v)
{
    kvshard_writer__json_key(o, name);
    if (has)
        kvshard_writer__out_u64(o, v);
    else
        kvshard_writer__out_raw(o, "null");
}

void kvshard_writer__json_word(kvshard__out *o, const char *name, const char *word)
{
    kvshard_writer__json_key(o, name);
    if (word)
        kvshard_writer__out_json_string(o, word, strlen(word));
    else
        kvshard_writer__out_raw(o, "null");
}
