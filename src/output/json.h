/* A buffered JSON text writer on top of a kvshard_write_fn. */
#ifndef KVSHARD_JSON_H
#define KVSHARD_JSON_H

#include "base/error.h"

typedef struct kvshard__json {
    kvshard_write_fn write;
    void *user;
    bool failed;
    size_t len;
    char buf[4096];
} kvshard__json;

void kvshard__json_init(kvshard__json *j, kvshard_write_fn write, void *user);
void kvshard__json_raw(kvshard__json *j, const char *s);
void kvshard__json_printf(kvshard__json *j, const char *fmt, ...) KVSHARD__PRINTF(2, 3);
/* A quoted, escaped JSON string. */
void kvshard__json_string(kvshard__json *j, const char *s);
void kvshard__json_u64(kvshard__json *j, uint64_t v);
/* A number, or null when `has` is false. */
void kvshard__json_u64_or_null(kvshard__json *j, bool has, uint64_t v);
/* Flush; KVSHARD_OK or KVSHARD_EWRITE when any write failed. */
int kvshard__json_finish(kvshard__json *j);

#endif /* KVSHARD_JSON_H */
