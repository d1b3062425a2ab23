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

/* ---- a model directory of safetensors headers ------------------------------------------- */

/* DeepSeek-V3.2's dimensions (its config.json, with the MLP widths of its
 * published checkpoint). */
enum {
    DS_HIDDEN = 7168,
    DS_VOCAB = 129280,
    DS_Q_LORA = 1536,
    DS_KV_LORA = 512,
    DS_ROPE = 64,
    DS_HEADS = 128,
    DS_QK_NOPE = 128,
    DS_V_HEAD = 128,
    DS_INDEX_HEADS = 64,
    DS_INDEX_DIM = 128,
    DS_DENSE_LAYERS = 3, /* first_k_dense_replace */
    DS_INTERMEDIATE = 18432,
    DS_SHARED = 2048, /* moe_intermediate_size, of the shared expert */
    /* The routed experts' width here: with the expert count that brings the
     * directory to its number of tensors, their bytes come to about the
     * checkpoint's weights_experts. */
    DS_EXPERT = 464
};

typedef struct st_tensor {
    char name[80];
    uint32_t name_len;
    uint64_t dims[2];
    uint32_t ndim;
    uint32_t shard;
    bool expert;
} st_tensor;

typedef struct st_list {
    st_tensor *t;
    size_t n, cap;
} st_list;

static void tensor(st_list *l, bool expert, uint64_t d0, uint64_t d1, const char *fmt, ...)
    BENCH_PRINTF(5, 6);

/* One BF16 tensor of shape [d0] (d1 0) or [d0, d1]. */
static void tensor(st_list *l, bool expert, uint64_t d0, uint64_t d1, const char *fmt, ...)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 4096;
        st_tensor *grown = realloc(l->t, l->cap * sizeof *grown);
        if (!grown)
            bench_die("out of memory generating tensor names");
        l->t = grown;
    }
    st_tensor *t = &l->t[l->n++];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof t->name)
        bench_die("generated tensor name too long");
    t->name_len = (uint32_t)n;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->ndim = d1 ? 2 : 1;
    t->shard = 0;
    t->expert = expert;
}

static uint64_t tensor_bytes(const st_tensor *t)
{
    return 2 * t->dims[0] * (t->ndim == 2 ? t->dims[1] : 1); /* BF16 */
}

/* The tensors of one layer other than its routed experts. */
static void layer_tensors(st_list *l, uint32_t i, uint32_t experts)
{
    char p[64];
    snprintf(p, sizeof p, "model.layers.%u.self_attn.", i);
    tensor(l, false, DS_Q_LORA, DS_HIDDEN, "%sq_a_proj.weight", p);
    tensor(l, false, DS_Q_LORA, 0, "%sq_a_layernorm.weight", p);
    tensor(l, false, DS_HEADS * (DS_QK_NOPE + DS_ROPE), DS_Q_LORA, "%sq_b_proj.weight", p);
    tensor(l, false, DS_KV_LORA + DS_ROPE, DS_HIDDEN, "%skv_a_proj_with_mqa.weight", p);
    tensor(l, false, DS_KV_LORA, 0, "%skv_a_layernorm.weight", p);
    tensor(l, false, DS_HEADS * (DS_QK_NOPE + DS_V_HEAD), DS_KV_LORA, "%skv_b_proj.weight", p);
    tensor(l, false, DS_HIDDEN, DS_HEADS * DS_V_HEAD, "%so_proj.weight", p);
    tensor(l, false, DS_INDEX_HEADS * DS_INDEX_DIM, DS_Q_LORA, "%sindexer.wq_b.weight", p);
    tensor(l, false, DS_INDEX_DIM, DS_HIDDEN, "%sindexer.wk.weight", p);
    tensor(l, false, DS_INDEX_DIM, 0, "%sindexer.k_norm.weight", p);
    tensor(l, false, DS_INDEX_DIM, 0, "%sindexer.k_norm.bias", p);
    tensor(l, false, DS_INDEX_HEADS, DS_HIDDEN, "%sindexer.weights_proj.weight", p);
    snprintf(p, sizeof p, "model.layers.%u.mlp.", i);
    if (i < DS_DENSE_LAYERS) {
        tensor(l, false, DS_INTERMEDIATE, DS_HIDDEN, "%sgate_proj.weight", p);
        tensor(l, false, DS_INTERMEDIATE, DS_HIDDEN, "%sup_proj.weight", p);
        tensor(l, false, DS_HIDDEN, DS_INTERMEDIATE, "%sdown_proj.weight", p);
    } else {
        tensor(l, false, experts, DS_HIDDEN, "%sgate.weight", p);
        tensor(l, false, experts, 0, "%sgate.e_score_correction_bias", p);
        tensor(l, false, DS_SHARED, DS_HIDDEN, "%sshared_experts.gate_proj.weight", p);
        tensor(l, false, DS_SHARED, DS_HIDDEN, "%sshared_experts.up_proj.weight", p);
        tensor(l, false, DS_HIDDEN, DS_SHARED, "%sshared_experts.down_proj.weight", p);
    }
    tensor(l, false, DS_HIDDEN, 0, "model.layers.%u.input_layernorm.weight", i);
    tensor(l, false, DS_HIDDEN, 0, "model.layers.%u.post_attention_layernorm.weight", i);
}

/* Tensors outside the routed experts: 14 a layer, 3 more for a dense MLP
 * or 5 for the router and shared expert, and the embedding, norm and head. */
static size_t other_tensors(uint32_t layers)
{
    return 14u * layers + 3u * DS_DENSE_LAYERS + 5u * (layers - DS_DENSE_LAYERS) + 3u;
}

static int cmp_tensor(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return strcmp(x->name, y->name);
}

static void write_file(const char *path, const void *head, size_t head_len, const char *text,
                       size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f || (head_len && fwrite(head, 1, head_len, f) != head_len) ||
        fwrite(text, 1, len, f) != len || fclose(f) != 0)
        bench_die("cannot write %s: %s", path, strerror(errno));
}

static bench_model_dir *to_remove; /* removed at exit if still there */

static void remove_at_exit(void)
{
    if (to_remove)
        bench_model_dir_remove(to_remove);
}

static void shard_name(char *buf, size_t cap, unsigned k, unsigned shards)
{
    snprintf(buf, cap, "model-%05u-of-%05u.safetensors", k + 1, shards);
}

void bench_model_dir_make(bench_model_dir *d, const bench_text *config, uint32_t layers,
                          size_t tensors, unsigned shards)
{
    memset(d, 0, sizeof *d);
    size_t others = other_tensors(layers);
    uint32_t moe = layers - DS_DENSE_LAYERS;
    if (tensors < others || (tensors - others) % 3 != 0 || shards == 0 || shards > 99)
        bench_die("cannot make %zu tensors of %u layers over %u shards", tensors, layers, shards);
    /* The routed experts' gate, up and down projections fill the rest,
     * spread evenly over the MoE layers (the first ones one more). */
    size_t experts = (tensors - others) / 3;
    st_list l = {NULL, 0, 0};
    tensor(&l, false, DS_VOCAB, DS_HIDDEN, "model.embed_tokens.weight");
    for (uint32_t i = 0; i < layers; i++) {
        uint32_t e_i = 0;
        if (i >= DS_DENSE_LAYERS)
            e_i = (uint32_t)(experts / moe + ((i - DS_DENSE_LAYERS) < experts % moe));
        layer_tensors(&l, i, e_i);
        for (uint32_t e = 0; e < e_i; e++) {
            char p[64];
            snprintf(p, sizeof p, "model.layers.%u.mlp.experts.%u.", i, e);
            tensor(&l, true, DS_EXPERT, DS_HIDDEN, "%sgate_proj.weight", p);
            tensor(&l, true, DS_EXPERT, DS_HIDDEN, "%sup_proj.weight", p);
            tensor(&l, true, DS_HIDDEN, DS_EXPERT, "%sdown_proj.weight", p);
        }
    }
    tensor(&l, false, DS_HIDDEN, 0, "model.norm.weight");
    tensor(&l, false, DS_VOCAB, DS_HIDDEN, "lm_head.weight");
    if (l.n != tensors)
        bench_die("generated %zu tensors, not %zu", l.n, tensors);

    const char *tmp = getenv("TMPDIR");
    d->dir = bench_join(tmp && *tmp ? tmp : "/tmp", "kvshard_bench_XXXXXX");
    if (!mkdtemp(d->dir))
        bench_die("cannot create a temporary directory %s: %s", d->dir, strerror(errno));
    if (!to_remove) {
        to_remove = d;
        atexit(remove_at_exit);
    }
    d->config = bench_join(d->dir, "config.json");
    write_file(d->config, NULL, 0, config->data, config->len);

    /* Shards take the tensors in model order, as a checkpoint is saved;
     * each header lists its own by name, as the safetensors writer does. */
    d->json_count = 1 + shards;
    d->jsons = bench_xmalloc(d->json_count * sizeof *d->jsons);
    memset(d->jsons, 0, d->json_count * sizeof *d->jsons);
    const st_tensor **order = bench_xmalloc(l.n * sizeof *order);
    for (size_t i = 0; i < l.n; i++) {
        l.t[i].shard = (uint32_t)(i * shards / l.n);
        order[i] = &l.t[i];
        d->total_bytes += tensor_bytes(&l.t[i]);
        if (l.t[i].expert) {
            d->expert_bytes += tensor_bytes(&l.t[i]);
            d->expert_tensors++;
        }
    }
    d->tensors = l.n;
    size_t first = 0;
    for (unsigned k = 0; k < shards; k++) {
        size_t end = first;
        while (end < l.n && l.t[end].shard == k)
            end++;
        qsort(order + first, end - first, sizeof *order, cmp_tensor);
        builder b = {NULL, 0, 0};
        putf(&b, "{\"__metadata__\":{\"format\":\"pt\"}");
        uint64_t at = 0;
        for (size_t i = first; i < end; i++) {
            const st_tensor *t = order[i];
            uint64_t n = tensor_bytes(t);
            putf(&b, ",\"%s\":{\"dtype\":\"BF16\",\"shape\":[%llu", t->name,
                 (unsigned long long)t->dims[0]);
            if (t->ndim == 2)
                putf(&b, ",%llu", (unsigned long long)t->dims[1]);
            putf(&b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                 (unsigned long long)(at + n));
            at += n;
        }
        put(&b, "}", 1);
        while (b.len % 8) /* the writer pads the header with spaces to 8 bytes */
            put(&b, " ", 1);
        char name[64];
        shard_name(name, sizeof name, k, shards);
        bench_text *t = &d->jsons[1 + k];
        t->name = bench_xstrdup(name);
        t->path = bench_join(d->dir, name);
        t->data = b.data;
        t->len = b.len;
        unsigned char head[8];
        for (int i = 0; i < 8; i++)
            head[i] = (unsigned char)((uint64_t)b.len >> (8 * i));
        /* The header alone: the reader never reads past it. */
        write_file(t->path, head, 8, b.data, b.len);
        d->json_bytes += b.len;
        first = end;
    }

    /* The index as transformers writes it: indented, keys sorted. */
    qsort(order, l.n, sizeof *order, cmp_tensor);
    builder b = {NULL, 0, 0};
    putf(&b, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {\n",
         (unsigned long long)d->total_bytes);
    for (size_t i = 0; i < l.n; i++) {
        char name[64];
        shard_name(name, sizeof name, order[i]->shard, shards);
        putf(&b, "    \"%s\": \"%s\"%s\n", order[i]->name, name, i + 1 < l.n ? "," : "");
    }
    put(&b, "  }\n}\n", 6);
    bench_text *t = &d->jsons[0];
    t->name = bench_xstrdup("model.safetensors.index.json");
    t->path = bench_join(d->dir, t->name);
    t->data = b.data;
    t->len = b.len;
    write_file(t->path, NULL, 0, b.data, b.len);
    d->json_bytes += b.len;
    free(order);
    free(l.t);
}

void bench_model_dir_remove(bench_model_dir *d)
{
    if (!d->dir)
        return;
    /* At exit after a failure, some files may not have been made yet. */
    for (size_t i = 0; i < d->json_count; i++) {
        if (d->jsons[i].path)
            unlink(d->jsons[i].path);
    }
    if (d->config)
        unlink(d->config);
    if (rmdir(d->dir) != 0)
        fprintf(stderr, "kvshard_bench: cannot remove %s: %s\n", d->dir, strerror(errno));
    bench_free_texts(d->jsons, d->json_count);
    free(d->config);
    free(d->dir);
    if (to_remove == d)
        to_remove = NULL;
    memset(d, 0, sizeof *d);
}
