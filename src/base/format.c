/* Numbers for people, and the printer. */
#include "base/format.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kvshard_format__c_point(char *text)
{
    const char *point = localeconv()->decimal_point;
    if (point && point[0] && point[0] != '.' && point[1] == '\0') {
        char *at = strchr(text, point[0]);
        if (at)
            *at = '.';
    }
}

size_t kvshard_format__shortest_text(char *buf, size_t cap, double v)
{
    char text[40] = "";
    /* printf and strtod both follow the locale's point: the round trip is
     * checked in it, and the point written as '.' afterwards. */
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v)
            break;
    }
    kvshard_format__c_point(text);
    int n = snprintf(buf, cap, "%s", text);
    return n < 0 ? 0 : (size_t)n;
}

size_t kvshard_format__grouped_text(char *buf, size_t cap, uint64_t v)
{
    char digits[32];
    size_t i = sizeof digits, n = 0;
    do {
        if (n && n % 3 == 0)
            digits[--i] = ',';
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
        n++;
    } while (v);
    size_t len = sizeof digits - i;
    if (len >= cap)
        len = cap ? cap - 1 : 0;
    memcpy(buf, digits + i, len);
    if (cap)
        buf[len] = '\0';
    return len;
}

size_t kvshard_format__human_text(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int n;
    if (bytes < 1024) {
        n = snprintf(buf, cap, "%llu B", (unsigned long long)bytes);
    } else {
        double v = (double)bytes;
        int u = 0;
        while (v >= 1024.0 && u < 6) {
            v /= 1024.0;
            u++;
        }
        n = snprintf(buf, cap, "%.2f %s", v, units[u]);
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap ? cap - 1 : 0;
}

void kvshard_format__text(const kvshard__printer *p, const char *s)
{
    bool code = false;
    while (*s) {
        const char *tick = strchr(s, '`');
        size_t n = tick ? (size_t)(tick - s) : strlen(s);
        if (n)
            p->put(p->ctx, s, n, code);
        if (!tick)
            break;
        code = !code;
        s = tick + 1;
    }
}

void kvshard_format__printf(const kvshard__printer *p, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        p->put(p->ctx, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1, false);
}

void kvshard_format__grouped(const kvshard__printer *p, uint64_t v)
{
    char buf[32];
    p->put(p->ctx, buf, kvshard_format__grouped_text(buf, sizeof buf, v), false);
}

void kvshard_format__human(const kvshard__printer *p, uint64_t bytes)
{
    char buf[32];
    p->put(p->ctx, buf, kvshard_format__human_text(buf, sizeof buf, bytes), false);
}

void kvshard_format__bytes(const kvshard__printer *p, uint64_t bytes)
{
    kvshard_format__grouped(p, bytes);
    p->put(p->ctx, " B", 2, false);
    if (bytes >= 1024) {
        p->put(p->ctx, " (", 2, false);
        kvshard_format__human(p, bytes);
        p->put(p->ctx, ")", 1, false);
    }
}

void kvshard_format__row(const kvshard__printer *p, const char *label)
{
    if (p->row)
        p->row(p->ctx, label);
}

void kvshard_format__row_end(const kvshard__printer *p)
{
    if (p->row)
        p->row(p->ctx, NULL);
}
