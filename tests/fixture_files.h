/* Inputs the tests and the benchmark both build: a long hybrid model
 * config, a safetensors shard that holds a list of names, and the
 * temporary directory and files they are written to. Written once so that
 * a test and the benchmark case that times the same work read the same
 * files. Each returns NULL or false on failure and leaves the reaction to
 * the caller (a test asserts, the benchmark stops). The includer defines
 * _POSIX_C_SOURCE 200809L (mkdtemp) before any header. */
#ifndef KVSHARD_TESTS_FIXTURE_FILES_H
#define KVSHARD_TESTS_FIXTURE_FILES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A new directory `parent`/`prefix`XXXXXX, malloc'd, or NULL. */
static inline char *fixture_temp_dir(const char *parent, const char *prefix)
{
    size_t cap = strlen(parent) + strlen(prefix) + 8;
    char *dir = malloc(cap);
    if (!dir)
        return NULL;
    snprintf(dir, cap, "%s/%sXXXXXX", parent, prefix);
    if (!mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* `len` bytes as the file `dir`/`name`, replacing it; false when any step
 * fails. */
static inline bool fixture_write_file(const char *dir, const char *name, const void *data,
                                      size_t len)
{
    char path[1024];
    int n = snprintf(path, sizeof path, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof path)
        return false;
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    bool ok = fwrite(data, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* A safetensors file holding names[from, to) (16-byte names, each in 17
 * bytes NUL-ended, as tests/crafted_names.h makes them), two bytes of F16
 * each: its bytes (malloc'd, `*len` of them), or NULL when out of memory. */
static inline unsigned char *fixture_names_shard(const char *names, size_t from, size_t to,
                                                 size_t *len)
{
    *len = 0;
    size_t cap = 64 + (to - from) * 96, used = 0;
    char *json = malloc(cap);
    if (!json)
        return NULL;
    json[used++] = '{';
    for (size_t i = from; i < to; i++)
        used += (size_t)snprintf(json + used, cap - used,
                                 "%s\"%s\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[%zu,"
                                 "%zu]}",
                                 i > from ? "," : "", names + 17 * i, 2 * (i - from),
                                 2 * (i - from) + 2);
    json[used++] = '}';
    size_t total = 8 + used + 2 * (to - from);
    unsigned char *buf = calloc(1, total);
    if (buf) {
        for (int i = 0; i < 8; i++)
            buf[i] = (unsigned char)((uint64_t)used >> (8 * i));
        memcpy(buf + 8, json, used);
        *len = total;
    }
    free(json);
    return buf;
}

/* A Nemotron-H config of `layers` layers, an attention layer and a Mamba
 * layer in every 64 and MLP layers otherwise: a long model that still fits.
 * Its text (malloc'd, `*len` bytes before the NUL), or NULL when out of
 * memory. */
static inline char *fixture_long_config(uint32_t layers, size_t *len)
{
    *len = 0;
    size_t cap = (size_t)layers + 1024;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    int n = snprintf(text, cap,
                     "{\"model_type\": \"nemotron_h\", \"hidden_size\": 4096, "
                     "\"num_attention_heads\": 32, \"num_key_value_heads\": 8, "
                     "\"attention_head_dim\": 128, \"mamba_num_heads\": 128, "
                     "\"mamba_head_dim\": 64, \"n_groups\": 8, \"ssm_state_size\": 128, "
                     "\"conv_kernel\": 4, \"expand\": 2, \"num_hidden_layers\": %u, "
                     "\"hybrid_override_pattern\": \"",
                     layers);
    if (n < 0) {
        free(text);
        return NULL;
    }
    size_t at = (size_t)n;
    for (uint32_t i = 0; i < layers; i++)
        text[at++] = i % 64 == 63 ? '*' : i % 64 == 31 ? 'M' : '-';
    memcpy(text + at, "\"}", 3);
    *len = at + 2;
    return text;
}

#endif /* KVSHARD_TESTS_FIXTURE_FILES_H */
