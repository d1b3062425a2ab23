/* Internal declarations shared by kvshard's sources. Not installed. */
#ifndef KVSHARD_INTERNAL_H
#define KVSHARD_INTERNAL_H

#include "kvshard/kvshard.h"

#include <stdarg.h>

#if defined(__GNUC__) || defined(__clang__)
#define KVS_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define KVS_PRINTF(fmt, args)
#endif

/* ---- allocation (alloc.c) ---------------------------------------------- */

/* Resolve a possibly NULL allocator to a usable one (the C library's). */
kvshard_allocator kvs_allocator_or_default(const kvshard_allocator *allocator);
/* Allocation of n * size bytes; NULL on overflow or failure. */
void *kvs_alloc(const kvshard_allocator *a, size_t n, size_t size);
/* As kvs_alloc, zero-filled. */
void *kvs_calloc(const kvshard_allocator *a, size_t n, size_t size);
void kvs_free(const kvshard_allocator *a, void *p);
/* Copy of a NUL-terminated string, or of `len` bytes of one. */
char *kvs_strdup(const kvshard_allocator *a, const char *s);
char *kvs_strndup(const kvshard_allocator *a, const char *s, size_t len);

/* ---- errors (error.c) -------------------------------------------------- */

/* Position of a piece of text: 1-based line and column, 0-based offset. */
typedef struct kvs_mark {
    int line;
    int column;
    size_t offset;
} kvs_mark;

/* Record an error unless `err` is NULL or already holds one. Returns code. */
int kvs_fail(kvshard_error *err, int code, const char *source, kvs_mark mark,
             const char *fmt, ...) KVS_PRINTF(5, 6);
/* Clear an error before a call writes into it. */
void kvs_error_reset(kvshard_error *err);
/* Point an existing error at another place (its code and message stay). */
void kvs_error_locate(kvshard_error *err, const char *source, kvs_mark mark);

/* ---- checked arithmetic (error.c) -------------------------------------- */

/* a * b and a + b; return false on 64-bit overflow (the result is unset). */
bool kvs_mul(uint64_t *out, uint64_t a, uint64_t b);
bool kvs_add(uint64_t *out, uint64_t a, uint64_t b);

/* ---- files (yaml_doc.c) ------------------------------------------------- */

/* Read a whole regular file, at most KVSHARD_MAX_DOCUMENT_BYTES. The buffer
 * is NUL-terminated; free it with kvs_free. */
int kvs_read_file(char **out, size_t *out_len, const kvshard_allocator *a, const char *path,
                  kvshard_error *err);

/* ---- dtypes (model.c) --------------------------------------------------- */

typedef enum kvs_dtype {
    KVS_DTYPE_BF16,
    KVS_DTYPE_FP16,
    KVS_DTYPE_FP32,
    KVS_DTYPE_FP8
} kvs_dtype;

unsigned kvs_dtype_bytes(kvs_dtype dtype);

/* ---- model (model.c) ---------------------------------------------------- */

typedef enum kvs_linear_flavour {
    KVS_LINEAR_NONE,
    KVS_LINEAR_GDN,       /* Gated DeltaNet (Qwen3-Next, Qwen3.5) */
    KVS_LINEAR_KDA,       /* Kimi Delta Attention */
    KVS_LINEAR_LIGHTNING  /* MiniMax lightning attention */
} kvs_linear_flavour;

/* What planning needs of a model; plain values, copied into each plan. */
typedef struct kvs_model_info {
    uint32_t num_layers;
    uint32_t num_full;
    uint32_t num_linear;
    uint32_t num_sliding;
    uint32_t num_draft_layers;
    kvshard_attention attention;
    kvs_dtype dtype;
    /* GQA */
    uint32_t num_kv_heads;
    uint32_t head_dim;
    uint32_t sliding_window;
    /* MLA and DSA indexer */
    uint32_t kv_lora_rank;
    uint32_t qk_rope_head_dim;
    bool has_indexer;
    uint32_t index_head_dim;
    /* linear-attention state */
    kvs_linear_flavour linear;
    uint32_t linear_key_heads;   /* GDN Hk */
    uint32_t linear_value_heads; /* GDN Hv; KDA and lightning: their heads */
    uint32_t linear_key_dim;     /* GDN dk; KDA and lightning: head dim */
    uint32_t linear_value_dim;   /* GDN dv */
    uint32_t linear_conv_kernel; /* GDN and KDA K */
    kvs_dtype ssm_dtype;
} kvs_model_info;

/* Where a model key was read, for errors found when planning. */
typedef struct kvs_key_site {
    const char *key; /* static string, NULL when the value was defaulted */
    kvs_mark mark;
} kvs_key_site;

struct kvshard_model {
    kvshard_allocator alloc;
    char *source;
    char *model_type;
    uint8_t *kinds; /* kvshard_layer_kind per decoder layer */
    kvs_model_info info;
    kvs_key_site kv_heads_site;
    kvs_key_site linear_key_heads_site;
    kvs_key_site linear_value_heads_site;
};

/* ---- options (options.c) ------------------------------------------------ */

typedef enum kvs_option_id {
    KVS_OPT_WORLD_SIZE,
    KVS_OPT_DP_SIZE,
    KVS_OPT_CP_SIZE,
    KVS_OPT_ENABLE_SPLIT,
    KVS_OPT_SPLIT_SIZE,
    KVS_OPT_OWNERSHIP,
    KVS_OPT_IS_DRAFT,
    KVS_OPT_KV_CACHE_DTYPE,
    KVS_OPT_BLOCK_SIZE,
    KVS_OPT_MEMORY_PER_RANK,
    KVS_OPT_MAX_SEQS,
    KVS_OPT_SPECULATIVE_TOKENS,
    KVS_OPT_SCRATCH_LAYERS,
    KVS_OPT_COUNT
} kvs_option_id;

typedef enum kvs_option_section { KVS_SECTION_PARALLEL, KVS_SECTION_CACHE } kvs_option_section;

const char *kvs_option_name(kvs_option_id id);
kvs_option_section kvs_option_section_of(kvs_option_id id);
/* The option named `key`, or KVS_OPT_COUNT when there is none. */
kvs_option_id kvs_option_find(const char *key, size_t len);

/* How the value text was written: a plain YAML scalar (or a flag) may be a
 * number or boolean; a quoted one is always a string. */
typedef enum kvs_value_style { KVS_VALUE_PLAIN, KVS_VALUE_QUOTED } kvs_value_style;

/* Parse `text` for option `id` and store it in `options`. On failure the
 * options are unchanged and the error names `source` and `mark`. */
int kvs_option_parse(kvshard_options *options, kvs_option_id id, const char *text,
                     size_t len, kvs_value_style style, const char *source, kvs_mark mark,
                     kvshard_error *err);

/* Check every field of caller-built options against the same ranges as
 * kvs_option_parse (ERANGE or EINVAL naming the field). */
int kvs_options_check(const kvshard_options *options, kvshard_error *err);

/* Text of one or more ASCII digits and nothing else. */
bool kvs_all_digits(const char *text, size_t len);

/* Parse a decimal integer in [min, max]; ERANGE/ETYPE with `what` named. */
int kvs_parse_uint(uint64_t *out, const char *text, size_t len, uint64_t min, uint64_t max,
                   const char *what, const char *source, kvs_mark mark, kvshard_error *err);

#endif /* KVSHARD_INTERNAL_H */
