/* Numbers for people, and the printer wording is written through: the text
 * plan, the HTML report and an engine profile's own lines all format their
 * figures the same way, whatever the output escapes. */
#ifndef KVSHARD_BASE_FORMAT_H
#define KVSHARD_BASE_FORMAT_H

#include "base/error.h"

#include <string.h>

/* 3159888 -> "3,159,888" into buf (at least 27 bytes); returns its length. */
size_t kvshard_format__grouped_text(char *buf, size_t cap, uint64_t v);

/* 16097280 -> "15.35 MiB"; below 1 KiB, "512 B". Returns its length. */
size_t kvshard_format__human_text(char *buf, size_t cap, uint64_t bytes);

/* A number printf wrote in the locale's decimal point, its point written
 * as '.' (the documents kvshard writes are read in any locale). */
void kvshard_format__c_point(char *text);

/* A double as the shortest decimal that reads back as the same double
 * ("0.9000000001", "0.9", "1"), so that two values that differ show
 * differently; "%g" would print both of those as 0.9. Returns its length. */
size_t kvshard_format__shortest_text(char *buf, size_t cap, double v);

/* A part of a joined text and its length: a literal's is known when
 * compiled (KVSHARD_FORMAT_LITERAL), a name's is counted
 * (kvshard_format__part_of). */
typedef struct kvshard_format__part {
    const char *text;
    size_t length;
} kvshard_format__part;

#define KVSHARD_FORMAT_LITERAL(literal) ((kvshard_format__part){"" literal, sizeof(literal) - 1})

/* A NUL-ended text as a part; NULL is an empty one. Inline: a priced
 * plan's every message counts its names so. */
static inline kvshard_format__part kvshard_format__part_of(const char *text)
{
    return text ? (kvshard_format__part){text, strlen(text)} : (kvshard_format__part){"", 0};
}

/* `count` parts one after the other into buf, cut to cap - 1 bytes as
 * snprintf cuts; returns the length written. Messages made on every plan
 * or map are joined so, at a fraction of formatting's cost, and inline:
 * a call costs a part's copy. */
static inline size_t kvshard_format__join(char *buf, size_t cap, const kvshard_format__part *parts,
                                          size_t count)
{
    if (!cap)
        return 0;
    size_t used = 0, room = cap - 1, whole = 0;
    for (size_t i = 0; i < count; i++)
        whole += parts[i].length;
    if (whole <= room) {
        /* Unrolled where the parts are known, so that a literal is copied
         * inline at its compiled length rather than by a call. */
#pragma GCC unroll 8
        for (size_t i = 0; i < count; i++) {
            memcpy(buf + used, parts[i].text, parts[i].length);
            used += parts[i].length;
        }
    } else {
        for (size_t i = 0; i < count; i++) {
            size_t length = parts[i].length < room - used ? parts[i].length : room - used;
            memcpy(buf + used, parts[i].text, length);
            used += length;
        }
    }
    buf[used] = '\0';
    return used;
}

/* Where wording goes. `put` takes text to show as it is (the sink escapes
 * it); `code` marks a flag or key (HTML writes it as code). `row`, which a
 * sink without rows leaves NULL, starts a labelled row of a table, or ends
 * the open one when `label` is NULL. */
typedef struct kvshard__printer {
    void (*put)(void *ctx, const char *s, size_t n, bool code);
    void (*row)(void *ctx, const char *label);
    void *ctx;
} kvshard__printer;

/* Text in which `backquoted` parts are code: "pass `--memory_per_rank`". */
void kvshard_format__text(const kvshard__printer *p, const char *s);
void kvshard_format__printf(const kvshard__printer *p, const char *fmt, ...) KVSHARD__PRINTF(2, 3);
void kvshard_format__grouped(const kvshard__printer *p, uint64_t v);
void kvshard_format__human(const kvshard__printer *p, uint64_t bytes);
/* "98,304 B (96.00 KiB)": the exact figure, with a human one beside it. */
void kvshard_format__bytes(const kvshard__printer *p, uint64_t bytes);
/* Start a labelled row (a no-op for a sink without rows); end it. */
void kvshard_format__row(const kvshard__printer *p, const char *label);
void kvshard_format__row_end(const kvshard__printer *p);

#endif /* KVSHARD_BASE_FORMAT_H */
