/* The texts the cases read: the shipped examples, read into memory before any
 * timing, and generated configs far larger than any shipped one. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, opendir */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *bench_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = bench_xmalloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

void bench_read_text(bench_text *t, const char *dir, const char *name)
{
    t->name = bench_xstrdup(name);
    t->path = bench_join(dir, name);
    FILE *f = fopen(t->path, "rb");
    if (!f)
        bench_die("cannot open %s: %s", t->path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = bench_xmalloc(cap);
    for (;;) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        char *grown = realloc(buf, cap);
        if (!grown)
            bench_die("out of memory reading %s", t->path);
        buf = grown;
    }
    if (ferror(f))
        bench_die("cannot read %s", t->path);
    fclose(f);
    buf[len] = '\0'; /* the loop stops with room for it (len < cap) */
    t->data = buf;
    t->len = len;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t bench_read_dir(bench_text **out, const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        bench_die("cannot open directory %s: %s", dir, strerror(errno));
    char *names[256];
    size_t n = 0, sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0)
            names[n++] = bench_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    bench_text *t = bench_xmalloc((n ? n : 1) * sizeof *t);
    for (size_t i = 0; i < n; i++) {
        bench_read_text(&t[i], dir, names[i]);
        free(names[i]);
    }
    *out = t;
    return n;
}

void bench_free_texts(bench_text *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].name);
        free(t[i].path);
        free(t[i].data);
    }
    free(t);
}

/* ---- generated configs --------------------------------------------------------------------- */

typedef struct builder {
    char *data;
    size_t len, cap;
} builder;

static void put(builder *b, const char *s, size_t n)
{
    if (b->cap - b->len < n + 1) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->len < n + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
            bench_die("out of memory generating a config");
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void putf(builder *b, const char *fmt, ...) BENCH_PRINTF(2, 3);

static void putf(builder *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp)
        bench_die("generated line too long");
    put(b, tmp, (size_t)n);
}

/* The keys of Qwen3.5-35B-A3B's text config, flattened, with the layer
 * count, the linear heads and the layer_types list as given. */
static void qwen35_config(builder *b, uint32_t layers, uint32_t key_heads, uint32_t value_heads)
{
    /* Qwen3.5's 16 query heads, or as many as the GDN key heads when there
     * are more, so that every TP size that divides those divides these. */
    uint32_t query_heads = key_heads > 16 ? key_heads : 16;
    putf(b,
         "{\n"
         "  \"architectures\": [\"Qwen3_5MoeForCausalLM\"],\n"
         "  \"model_type\": \"qwen3_5_moe_text\",\n"
         "  \"dtype\": \"bfloat16\",\n"
         "  \"hidden_size\": 2048,\n"
         "  \"num_hidden_layers\": %u,\n"
         "  \"num_attention_heads\": %u,\n"
         "  \"num_key_value_heads\": 2,\n"
         "  \"head_dim\": 256,\n"
         "  \"layer_types\": [\n",
         layers, query_heads);
    static const char linear[] = "    \"linear_attention\",\n";
    static const char full[] = "    \"full_attention\",\n";
    for (uint32_t i = 0; i < layers; i++) {
        bool is_full = i % 4 == 3;
        size_t n = is_full ? sizeof full - 1 : sizeof linear - 1;
        /* The last entry has no comma. */
        if (i + 1 == layers) {
            put(b, is_full ? full : linear, n - 2);
            put(b, "\n", 1);
        } else {
            put(b, is_full ? full : linear, n);
        }
    }
    putf(b,
         "  ],\n"
         "  \"full_attention_interval\": 4,\n"
         "  \"linear_num_key_heads\": %u,\n"
         "  \"linear_num_value_heads\": %u,\n"
         "  \"linear_key_head_dim\": 128,\n"
         "  \"linear_value_head_dim\": 128,\n"
         "  \"linear_conv_kernel_dim\": 4,\n"
         "  \"mamba_ssm_dtype\": \"float32\",\n"
         "  \"num_experts\": 256,\n"
         "  \"num_experts_per_tok\": 8,\n"
         "  \"mtp_num_hidden_layers\": 1,\n"
         "  \"max_position_embeddings\": 262144,\n"
         "  \"vocab_size\": 248320",
         key_heads, value_heads);
}

char *bench_gen_layer_types(size_t *out_len, uint32_t layers, uint32_t key_heads,
                            uint32_t value_heads)
{
    builder b = {NULL, 0, 0};
    qwen35_config(&b, layers, key_heads, value_heads);
    put(&b, "\n}\n", 3);
    *out_len = b.len;
    return b.data;
}

char *bench_gen_many_keys(size_t *out_len, uint32_t extra)
{
    builder b = {NULL, 0, 0};
    qwen35_config(&b, 40, 16, 32);
    put(&b, ",\n", 2);
    /* "  \"k0000000\": 0,\n": 17 bytes a key. */
    char line[32];
    memcpy(line, "  \"k0000000\": 0,\n", 17);
    for (uint32_t i = 0; i < extra; i++) {
        uint32_t v = i;
        for (int d = 10; d >= 4; d--) {
            line[d] = (char)('0' + v % 10);
            v /= 10;
        }
        put(&b, line, i + 1 == extra ? 15 : 17);
    }
    put(&b, "\n}\n", 3);
    *out_len = b.len;
    return b.data;
}

/* The top-level keys qwen35_config() writes, for the size of the table the
 * old index gave the mapping. */
#define QWEN35_TOP_KEYS 21u

/* kvshard 0.2's duplicate-key hash of an 8-byte key: a fixed multiply and
 * xorshift of the length and the text as one word, whose low bits picked
 * a slot of a table probed linearly. */
static uint32_t old_hash8(const char *s)
{
    uint64_t w, h = 0x9E3779B97F4A7C15ull ^ 8u;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 31)) * 0x94D049BB133111EBull;
    return (uint32_t)(h >> 32);
}

char *bench_gen_colliding_keys(size_t *out_len, uint32_t extra)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    uint64_t pairs = (uint64_t)extra + QWEN35_TOP_KEYS, slots = 32;
    while (slots < 2 * pairs)
        slots *= 2;
    builder b = {NULL, 0, 0};
    qwen35_config(&b, 40, 16, 32);
    put(&b, ",\n", 2);
    /* "  \"kXXXXXXz\": 0,\n", the length of bench_gen_many_keys()'s lines: one
     * length, first and last byte for all, and a slot in the first
     * sixteenth of the old table, where they pile up. */
    char line[32];
    memcpy(line, "  \"k000000z\": 0,\n", 17);
    uint64_t v = 0;
    for (uint32_t i = 0; i < extra; i++) {
        do {
            uint64_t x = v++;
            for (int d = 4; d <= 9; d++) {
                line[d] = letters[x % 62];
                x /= 62;
            }
        } while ((old_hash8(line + 3) & (slots - 1)) >= slots / 16);
        put(&b, line, i + 1 == extra ? 15 : 17);
    }
    put(&b, "\n}\n", 3);
    *out_len = b.len;
    return b.data;
}

char *bench_write_temp(const char *text, size_t len)
{
    const char *dir = getenv("TMPDIR");
    char *path = bench_join(dir && *dir ? dir : "/tmp", "kvshard_bench_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        bench_die("cannot create a temporary file %s: %s", path, strerror(errno));
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            bench_die("cannot write %s: %s", path, strerror(errno));
        done += (size_t)w;
    }
    if (close(fd) != 0)
        bench_die("cannot write %s: %s", path, strerror(errno));
    return path;
}
