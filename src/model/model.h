/* The model a config describes: layer kinds and the figures memory needs. */
#ifndef KVSHARD_MODEL_MODEL_H
#define KVSHARD_MODEL_MODEL_H

#include "base/alloc.h"
#include "model/dtype.h"
#include "text/yaml_doc.h"

typedef enum kvshard__linear_flavour {
    KVSHARD__LINEAR_NONE,
    KVSHARD__LINEAR_GDN,      /* Gated DeltaNet (Qwen3-Next, Qwen3.5) */
    KVSHARD__LINEAR_KDA,      /* Kimi Delta Attention */
    KVSHARD__LINEAR_LIGHTNING /* MiniMax lightning attention */
} kvshard__linear_flavour;

/* What planning needs of a model; plain values, copied into each plan. */
typedef struct kvshard__model_info {
    uint32_t num_layers;
    uint32_t num_full;
    uint32_t num_linear;
    uint32_t num_sliding;
    uint32_t num_draft_layers;
    kvshard_attention attention;
    kvshard__dtype dtype;
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
    kvshard__linear_flavour linear;
    uint32_t linear_key_heads;   /* GDN Hk */
    uint32_t linear_value_heads; /* GDN Hv; KDA and lightning: their heads */
    uint32_t linear_key_dim;     /* GDN dk; KDA and lightning: head dim */
    uint32_t linear_value_dim;   /* GDN dv */
    uint32_t linear_conv_kernel; /* GDN and KDA K */
    kvshard__dtype ssm_dtype;
} kvshard__model_info;

/* Where a model key was read, for errors found when planning. */
typedef struct kvshard__key_site {
    const char *key; /* static string, NULL when the value was defaulted */
    kvshard__mark mark;
} kvshard__key_site;

struct kvshard_model {
    kvshard_allocator alloc;
    char *source;
    char *model_type;
    uint8_t *kinds; /* kvshard_layer_kind per decoder layer */
    kvshard__model_info info;
    kvshard__key_site kv_heads_site;
    kvshard__key_site linear_key_heads_site;
    kvshard__key_site linear_value_heads_site;
};

/* Build a model from a parsed mapping; `doc->source` names it in errors. */
int kvshard__model_from_node(kvshard_model **out, const kvshard__doc *doc,
                             const kvshard__node *root, const kvshard_allocator *alloc,
                             kvshard_error *err);
/* Parse text and build a model from its root. */
int kvshard__model_load_text(kvshard_model **out, const char *text, size_t len, const char *source,
                             const kvshard_allocator *alloc, kvshard_error *err);
/* Start a public load call: reset `err`, reject missing arguments (`args_ok`
 * false; `args` names them) and unknown option versions, and resolve the
 * allocator the options ask for. */
int kvshard__begin_load(kvshard_allocator *alloc, bool args_ok, const char *args,
                        const kvshard_load_options *options, kvshard_error *err);

#endif /* KVSHARD_MODEL_MODEL_H */
