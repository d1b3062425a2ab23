/* Writes the tiny_hybrid model directory that test_weights reads: a
 * config.json, model.safetensors.index.json and two shards whose headers
 * describe 126 tensors of a four-layer hybrid (three Gated DeltaNet layers,
 * one full-attention layer, four experts per layer, one MTP layer). The
 * tensor data is zeros. A second directory, tiny_hybrid_cut, holds the same
 * files with every shard cut right after its header.
 *
 *   gen_tiny_hybrid OUTPUT_DIR   -> OUTPUT_DIR/tiny_hybrid, OUTPUT_DIR/tiny_hybrid_cut
 *
 * It is a C program because the test build needs nothing but a C toolchain. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char CONFIG[] =
    "{\"model_type\": \"qwen3_next\", \"torch_dtype\": \"bfloat16\", \"num_hidden_layers\": 4,\n"
    " \"layer_types\": [\"linear_attention\", \"linear_attention\", \"linear_attention\", "
    "\"full_attention\"],\n"
    " \"hidden_size\": 32, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
    "\"head_dim\": 8,\n"
    " \"linear_num_key_heads\": 4, \"linear_num_value_heads\": 4, \"linear_key_head_dim\": 8,\n"
    " \"linear_value_head_dim\": 8, \"linear_conv_kernel_dim\": 4, \"num_experts\": 4,\n"
    " \"moe_intermediate_size\": 16, \"shared_expert_intermediate_size\": 16, "
    "\"vocab_size\": 128,\n"
    " \"tie_word_embeddings\": false, \"mtp_num_hidden_layers\": 1}\n";

static const char *const SHARDS[2] = {"model-00001-of-00002.safetensors",
                                      "model-00002-of-00002.safetensors"};

typedef struct tensor {
    char name[96];
    const char *dtype;
    unsigned bits;
    unsigned ndim;
    uint64_t shape[3];
    int shard;
} tensor;

static tensor tensors[200];
static size_t count;

static void add(int shard, const char *dtype, unsigned ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                const char *fmt, ...)
{
    tensor *t = &tensors[count++];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
    t->dtype = dtype;
    t->bits = strcmp(dtype, "F32") == 0 ? 32 : strcmp(dtype, "F8_E4M3") == 0 ? 8 : 16;
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    t->shard = shard;
}

static uint64_t bytes_of(const tensor *t)
{
    uint64_t e = 1;
    for (unsigned i = 0; i < t->ndim; i++)
        e *= t->shape[i];
    return e * t->bits / 8;
}

#define BF16 "BF16"

static void build(void)
{
    add(0, BF16, 2, 128, 32, 0, "model.embed_tokens.weight");
    add(1, BF16, 2, 128, 32, 0, "lm_head.weight");
    add(1, BF16, 1, 32, 0, 0, "model.norm.weight");
    for (int i = 0; i < 4; i++) {
        int s = i < 2 ? 0 : 1;
        const char *p = "model.layers";
        add(s, BF16, 1, 32, 0, 0, "%s.%d.input_layernorm.weight", p, i);
        add(s, BF16, 1, 32, 0, 0, "%s.%d.post_attention_layernorm.weight", p, i);
        add(s, BF16, 2, 4, 32, 0, "%s.%d.mlp.gate.weight", p, i);
        for (int e = 0; e < 4; e++) {
            add(s, BF16, 2, 16, 32, 0, "%s.%d.mlp.experts.%d.gate_proj.weight", p, i, e);
            add(s, BF16, 2, 16, 32, 0, "%s.%d.mlp.experts.%d.up_proj.weight", p, i, e);
            add(s, BF16, 2, 32, 16, 0, "%s.%d.mlp.experts.%d.down_proj.weight", p, i, e);
        }
        add(s, BF16, 2, 16, 32, 0, "%s.%d.mlp.shared_expert.gate_proj.weight", p, i);
        add(s, BF16, 2, 16, 32, 0, "%s.%d.mlp.shared_expert.up_proj.weight", p, i);
        add(s, BF16, 2, 32, 16, 0, "%s.%d.mlp.shared_expert.down_proj.weight", p, i);
        add(s, BF16, 2, 1, 32, 0, "%s.%d.mlp.shared_expert_gate.weight", p, i);
        if (i < 3) {
            const char *a = "linear_attn";
            add(s, BF16, 2, 128, 32, 0, "%s.%d.%s.in_proj_qkvz.weight", p, i, a);
            add(s, BF16, 2, 8, 32, 0, "%s.%d.%s.in_proj_ba.weight", p, i, a);
            add(s, BF16, 3, 96, 1, 4, "%s.%d.%s.conv1d.weight", p, i, a);
            add(s, "F32", 1, 4, 0, 0, "%s.%d.%s.A_log", p, i, a);
            add(s, BF16, 1, 4, 0, 0, "%s.%d.%s.dt_bias", p, i, a);
            add(s, BF16, 1, 8, 0, 0, "%s.%d.%s.norm.weight", p, i, a);
            add(s, BF16, 2, 32, 32, 0, "%s.%d.%s.out_proj.weight", p, i, a);
        } else {
            const char *a = "self_attn";
            add(s, BF16, 2, 32, 32, 0, "%s.%d.%s.q_proj.weight", p, i, a);
            add(s, BF16, 2, 16, 32, 0, "%s.%d.%s.k_proj.weight", p, i, a);
            add(s, BF16, 2, 16, 32, 0, "%s.%d.%s.v_proj.weight", p, i, a);
            add(s, "F8_E4M3", 2, 32, 32, 0, "%s.%d.%s.o_proj.weight", p, i, a);
            add(s, "F32", 2, 1, 1, 0, "%s.%d.%s.o_proj.weight_scale_inv", p, i, a);
            add(s, BF16, 1, 8, 0, 0, "%s.%d.%s.q_norm.weight", p, i, a);
            add(s, BF16, 1, 8, 0, 0, "%s.%d.%s.k_norm.weight", p, i, a);
            add(s, "F32", 1, 4, 0, 0, "%s.%d.%s.rotary_emb.inv_freq", p, i, a);
        }
    }
    add(1, BF16, 2, 32, 64, 0, "mtp.fc.weight");
    add(1, BF16, 1, 32, 0, 0, "mtp.norm.weight");
    add(1, BF16, 2, 32, 32, 0, "mtp.layers.0.self_attn.q_proj.weight");
    add(1, BF16, 2, 16, 32, 0, "mtp.layers.0.self_attn.k_proj.weight");
    add(1, BF16, 2, 16, 32, 0, "mtp.layers.0.self_attn.v_proj.weight");
    add(1, BF16, 2, 32, 32, 0, "mtp.layers.0.self_attn.o_proj.weight");
    for (int e = 0; e < 4; e++) {
        add(1, BF16, 2, 16, 32, 0, "mtp.layers.0.mlp.experts.%d.gate_proj.weight", e);
        add(1, BF16, 2, 16, 32, 0, "mtp.layers.0.mlp.experts.%d.up_proj.weight", e);
        add(1, BF16, 2, 32, 16, 0, "mtp.layers.0.mlp.experts.%d.down_proj.weight", e);
    }
}

/* A growing text buffer; the program exits on allocation failure. */
typedef struct text {
    char *p;
    size_t len, cap;
} text;

static void put(text *t, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->p ? t->p + t->len : NULL, t->p ? t->cap - t->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0)
            exit(1);
        if (t->p && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = t->cap * 2 + (size_t)n + 64;
        if (!(t->p = realloc(t->p, t->cap)))
            exit(1);
    }
}

static void write_file(const char *dir, const char *name, const void *data, size_t len,
                       uint64_t zeros)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "gen_tiny_hybrid: cannot write %s: %s\n", path, strerror(errno));
        exit(1);
    }
    static const char zero[4096];
    while (zeros > 0) {
        size_t n = zeros > sizeof zero ? sizeof zero : (size_t)zeros;
        if (fwrite(zero, 1, n, f) != n)
            exit(1);
        zeros -= n;
    }
    if (fclose(f) != 0)
        exit(1);
}

/* One shard: the 8-byte length, the JSON padded with spaces to a multiple
 * of 8 bytes (as the format's writers do), then `cut` ? nothing : the data. */
static void write_shard(const char *dir, int shard, int cut)
{
    text h = {0};
    uint64_t offset = 0;
    put(&h, "{\"__metadata__\":{\"format\":\"pt\"}");
    for (size_t i = 0; i < count; i++) {
        const tensor *t = &tensors[i];
        if (t->shard != shard)
            continue;
        put(&h, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name, t->dtype);
        for (unsigned d = 0; d < t->ndim; d++)
            put(&h, "%s%llu", d ? "," : "", (unsigned long long)t->shape[d]);
        uint64_t b = bytes_of(t);
        put(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
            (unsigned long long)(offset + b));
        offset += b;
    }
    put(&h, "}");
    while (h.len % 8)
        put(&h, " ");
    size_t total = 8 + h.len;
    unsigned char *file = malloc(total);
    if (!file)
        exit(1);
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    memcpy(file + 8, h.p, h.len);
    write_file(dir, SHARDS[shard], file, total, cut ? 0 : offset);
    free(file);
    free(h.p);
}

static void write_dir(const char *root, const char *name, int cut)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", root, name);
    if (mkdir(root, 0777) != 0 && errno != EEXIST)
        exit(1);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "gen_tiny_hybrid: cannot make %s: %s\n", dir, strerror(errno));
        exit(1);
    }
    write_file(dir, "config.json", CONFIG, sizeof CONFIG - 1, 0);
    text x = {0};
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++)
        total += bytes_of(&tensors[i]);
    put(&x, "{\n  \"metadata\": {\n    \"total_size\": %llu\n  },\n  \"weight_map\": {",
        (unsigned long long)total);
    for (size_t i = 0; i < count; i++)
        put(&x, "%s\n    \"%s\": \"%s\"", i ? "," : "", tensors[i].name, SHARDS[tensors[i].shard]);
    put(&x, "\n  }\n}\n");
    write_file(dir, "model.safetensors.index.json", x.p, x.len, 0);
    free(x.p);
    write_shard(dir, 0, cut);
    write_shard(dir, 1, cut);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_tiny_hybrid OUTPUT_DIR\n");
        return 2;
    }
    build();
    write_dir(argv[1], "tiny_hybrid", 0);
    write_dir(argv[1], "tiny_hybrid_cut", 1);
    return 0;
}
