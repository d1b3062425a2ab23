/* Buffered JSON text output. */
#include "output/json.h"

#include <stdio.h>
#include <string.h>

void kvshard__json_init(kvshard__json *j, kvshard_write_fn write, void *user)
{
    j->write = write;
    j->user = user;
    j->failed = false;
    j->len = 0;
}

static void flush(kvshard__json *j)
{
    if (j->len && !j->failed && j->write(j->user, j->buf, j->len) != 0)
        j->failed = true;
    j->len = 0;
}

static void put(kvshard__json *j, const char *s, size_t n)
{
    while (n > 0) {
        if (j->len == sizeof j->buf)
            flush(j);
        size_t room = sizeof j->buf - j->len;
        size_t take = n < room ? n : room;
        memcpy(j->buf + j->len, s, take);
        j->len += take;
        s += take;
        n -= take;
    }
}

void kvshard__json_raw(kvshard__json *j, const char *s)
{
    put(j, s, strlen(s));
}

void kvshard__json_printf(kvshard__json *j, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        j->failed = true;
    else
        put(j, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

void kvshard__json_string(kvshard__json *j, const char *s)
{
    put(j, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            char esc[2] = {'\\', (char)*p};
            put(j, esc, 2);
        } else if (*p < 0x20) {
            char esc[8];
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put(j, esc, 6);
        } else {
            put(j, (const char *)p, 1);
        }
    }
    put(j, "\"", 1);
}

void kvshard__json_u64(kvshard__json *j, uint64_t v)
{
    kvshard__json_printf(j, "%llu", (unsigned long long)v);
}

void kvshard__json_u64_or_null(kvshard__json *j, bool has, uint64_t v)
{
    if (has)
        kvshard__json_u64(j, v);
    else
        kvshard__json_raw(j, "null");
}

int kvshard__json_finish(kvshard__json *j)
{
    flush(j);
    return j->failed ? KVSHARD_EWRITE : KVSHARD_OK;
}
