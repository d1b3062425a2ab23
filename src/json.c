/* Buffered JSON text output. */
#include "json.h"

#include <stdio.h>
#include <string.h>

void kvs_json_init(kvs_json *j, kvshard_write_fn write, void *user)
{
    j->write = write;
    j->user = user;
    j->failed = false;
    j->len = 0;
}

static void flush(kvs_json *j)
{
    if (j->len && !j->failed && j->write(j->user, j->buf, j->len) != 0)
        j->failed = true;
    j->len = 0;
}

static void put(kvs_json *j, const char *s, size_t n)
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

void kvs_json_raw(kvs_json *j, const char *s)
{
    put(j, s, strlen(s));
}

void kvs_json_printf(kvs_json *j, const char *fmt, ...)
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

void kvs_json_string(kvs_json *j, const char *s)
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

void kvs_json_u64(kvs_json *j, uint64_t v)
{
    kvs_json_printf(j, "%llu", (unsigned long long)v);
}

void kvs_json_u64_or_null(kvs_json *j, bool has, uint64_t v)
{
    if (has)
        kvs_json_u64(j, v);
    else
        kvs_json_raw(j, "null");
}

int kvs_json_finish(kvs_json *j)
{
    flush(j);
    return j->failed ? KVSHARD_EWRITE : KVSHARD_OK;
}
