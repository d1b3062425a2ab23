/* A buffered JSON text writer on top of a kvshard_write_fn. */
#ifndef KVSHARD_JSON_H
#define KVSHARD_JSON_H

#include "internal.h"

typedef struct kvs_json {
    kvshard_write_fn write;
    void *user;
    bool failed;
    size_t len;
    char buf[4096];
} kvs_json;

void kvs_json_init(kvs_json *j, kvshard_write_fn write, void *user);
void kvs_json_raw(kvs_json *j, const char *s);
void kvs_json_printf(kvs_json *j, const char *fmt, ...) KVS_PRINTF(2, 3);
/* A quoted, escaped JSON string. */
void kvs_json_string(kvs_json *j, const char *s);
void kvs_json_u64(kvs_json *j, uint64_t v);
/* A number, or null when `has` is false. */
void kvs_json_u64_or_null(kvs_json *j, bool has, uint64_t v);
/* Flush; KVSHARD_OK or KVSHARD_EWRITE when any write failed. */
int kvs_json_finish(kvs_json *j);

#endif /* KVSHARD_JSON_H */
