/* What one rank holds of a checkpoint: tensor classes by name, and the bytes
 * of every stage's ranks for a layout.
 *
 * A tensor's name places it (a decoder layer's stage, the first or the last
 * stage, the draft layers) and classes it (how tensor parallelism divides
 * it); the share of one rank follows from its class, its bytes as stored and
 * the layout. Every rank of a stage is charged the largest share, so all
 * ranks of a stage carry the same figure. */
#ifndef KVSHARD_MODEL_WEIGHTS_H
#define KVSHARD_MODEL_WEIGHTS_H

#include "base/alloc.h"
#include "base/error.h"
#include "text/safetensors.h"

/* Where a tensor sits. */
typedef enum kvshard__wplace {
    KVSHARD__PLACE_DECODER,    /* a decoder layer i < L: i's stage */
    KVSHARD__PLACE_DRAFT,      /* an MTP / draft tensor: the last stage, counted with
                                * speculative tokens only */
    KVSHARD__PLACE_MULTIMODAL, /* a vision or audio tower, a projector: the first stage */
    KVSHARD__PLACE_EMBEDDING,  /* the token embedding: the first stage */
    KVSHARD__PLACE_HEAD,       /* the output head (lm_head): the last stage */
    KVSHARD__PLACE_FINAL_NORM, /* the final norm: the last stage */
    KVSHARD__PLACE_OTHER       /* any other top-level tensor: the first stage */
} kvshard__wplace;

/* How tensor parallelism divides a tensor. */
typedef enum kvshard__wclass {
    KVSHARD__CLASS_SPLIT,      /* over T */
    KVSHARD__CLASS_KV,         /* GQA k/v projections: over min(T, H_kv) */
    KVSHARD__CLASS_QKV,        /* GQA fused q/k/v: q over T, k and v as KV heads */
    KVSHARD__CLASS_REPLICATED, /* whole on every rank */
    KVSHARD__CLASS_VOCAB,      /* embedding and head rows: over T */
    KVSHARD__CLASS_EXPERT,     /* MoE experts: over X = D*C*T */
    KVSHARD__CLASS_MULTIMODAL, /* over T */
    KVSHARD__CLASS_UNKNOWN,    /* no rule: over T, and reported */
    KVSHARD__CLASS_COUNT
} kvshard__wclass;

#define KVSHARD__NO_LAYER UINT32_MAX
#define KVSHARD__NO_EXPERT UINT32_MAX

typedef struct kvshard__wtensor_class {
    kvshard__wplace place;
    kvshard__wclass cls;
    /* Decoder: layer i. Draft: the draft layer d (layers.d under mtp, or
     * i - L for a layer past the decoder), else KVSHARD__NO_LAYER. */
    uint32_t layer;
    /* Expert: the index after `experts`, or KVSHARD__NO_EXPERT for a tensor
     * that holds all the layer's experts fused. */
    uint32_t expert;
} kvshard__wtensor_class;

/* The placement and class of tensor `name` (`len` bytes; it need not be
 * NUL-terminated) with `elements` elements, in a model of `num_layers`
 * decoder layers; `gqa` when the model's attention is GQA (k/v projections
 * are then kv, and qkv_proj qkv). Pure; never fails. */
void kvshard_weights__classify(kvshard__wtensor_class *out, const char *name, size_t len,
                               uint64_t elements, uint32_t num_layers, bool gqa);

/* The class's word in messages and documents (split, kv, ...). */
const char *kvshard_weights__class_name(kvshard__wclass cls);

/* What the shares of kv and qkv tensors depend on. */
typedef struct kvshard__wgeometry {
    uint32_t num_layers;   /* L, the decoder layers */
    bool gqa;              /* the attention is GQA (sliding windows included) */
    uint32_t num_heads;    /* H_q (num_attention_heads) */
    uint32_t num_kv_heads; /* H_kv of the full geometry */
    /* Of a sliding-window layer: its H_q (attention_other_setting's
     * num_attention_heads) and H_kv; 0 takes the full geometry's. */
    uint32_t sliding_heads;
    uint32_t sliding_kv_heads;
    /* Per layer index, whether its geometry is the sliding one: decoder
     * layers 0..L-1, then draft layers L + d. A shared-KV layer carries its
     * source's flag. Indexes past `sliding_count` (or NULL) are full. */
    const bool *sliding;
    uint32_t sliding_count;
    bool tie_word_embeddings; /* the text config's, else the top level's */
} kvshard__wgeometry;

/* What the headers hold, whatever the layout (a plan's `weights` object). */
typedef struct kvshard__wsummary {
    uint64_t total_bytes;  /* every counted tensor as stored: draft included,
                            * a tied checkpoint's head tensors not */
    uint64_t expert_bytes; /* class expert, draft experts included */
    uint64_t draft_bytes;  /* placement draft */
    uint64_t tensors;      /* counted tensors (a tied head's are not) */
    uint64_t unknown_tensors;
    uint64_t unknown_bytes;
    const char *first_unknown; /* the first in reading order, NULL when none */
    bool has_index_total_size;
    uint64_t index_total_size; /* the index's metadata.total_size */
    /* metadata.total_size differs from the headers' sum of every tensor:
     * the warning weights_total_size_mismatch. */
    bool total_size_mismatch;
    uint64_t class_bytes[KVSHARD__CLASS_COUNT]; /* as stored, by class */
} kvshard__wsummary;

/* A checkpoint's tensors, classified once for every layout. */
typedef struct kvshard__weights kvshard__weights;

/* Classify every tensor of `set` for geometry `g` into *out (free with
 * kvshard_weights__free). The result keeps nothing of `set` or `g`: both may
 * go once it is built. EINVAL for a GQA geometry without heads; ENOMEM. On
 * failure *out is untouched. */
int kvshard_weights__build(kvshard__weights **out, const kvshard__safetensors *set,
                           const kvshard__wgeometry *g, const kvshard_allocator *alloc,
                           kvshard_error *err);
void kvshard_weights__free(kvshard__weights *w);

/* The layout-independent figures. Borrowed from `w`. */
const kvshard__wsummary *kvshard_weights__summary(const kvshard__weights *w);

/* A layout: T, D, C (X = D*C*T ranks share a stage's experts), whether
 * experts are placed whole, whether draft layers count, and the stages. */
typedef struct kvshard__wlayout {
    uint32_t tp;
    uint32_t dp;
    uint32_t cp;
    bool expert_parallel;
    bool speculative; /* num_speculative_tokens > 0 */
    uint32_t pp;
    const uint32_t *stage_layers; /* pp counts, each >= 1, summing to L */
} kvshard__wlayout;

/* One stage's weights per rank, and their parts by class. */
typedef struct kvshard__wstage {
    uint64_t bytes;
    uint64_t class_bytes[KVSHARD__CLASS_COUNT];
} kvshard__wstage;

/* The weights of each stage's ranks into out[0..pp-1]. EINVAL for a layout
 * with a size of 0 or a partition that does not cover the L layers;
 * EOVERFLOW past 2^64 - 1 bytes. `out` is untouched on failure. Pure:
 * concurrent calls on one `w` are safe. */
int kvshard_weights__stages(kvshard__wstage *out, const kvshard__weights *w,
                            const kvshard__wlayout *layout, kvshard_error *err);

/* The estimate from two figures (weights_total, weights_experts) for a stage
 * of n_s of the L layers: ceil((total - experts) * n_s / (L * T)) +
 * ceil(experts * n_s / (L * X)). ERANGE when experts exceed total (the
 * `weights` error); EINVAL for L, T or X of 0 or n_s above L. */
int kvshard_weights__estimate(uint64_t *out, uint64_t total, uint64_t experts, uint32_t n_s,
                              uint32_t num_layers, uint32_t tp, uint64_t x, kvshard_error *err);

/* What the expert estimate of an index without shards reads of the config
 * (the text config's values first). */
typedef struct kvshard__wexperts_config {
    uint32_t num_layers;        /* L, to place the names */
    bool gqa;                   /* as kvshard__wgeometry */
    uint64_t element_bytes;     /* 2 for bfloat16 or float16, 4 for float32; 0: none */
    uint64_t hidden;            /* H, hidden_size; 0: none */
    uint64_t intermediate;      /* I, moe_intermediate_size else intermediate_size; 0: none */
    uint64_t experts;           /* E, num_experts, n_routed_experts or num_local_experts */
    bool quantized;             /* the config has a quantization_config */
} kvshard__wexperts_config;

/* The bytes of the expert tensors `set` names (an index without shards:
 * names only), estimated as elements x element_bytes: I x H for
 * `experts.<j>.<p>.weight` with p gate_proj, up_proj, down_proj, w1, w2 or
 * w3; 2 I H for `experts.<j>.gate_up_proj.weight`; a fused
 * `experts.gate_up_proj` or `experts.down_proj` that count times E.
 * EWEIGHTS, naming `source` and asking for weights_experts, for any other
 * expert tensor, a quantized config, or a figure the config lacks;
 * EOVERFLOW past 2^64 - 1. */
int kvshard_weights__estimate_experts(uint64_t *out, const kvshard__safetensors *set,
                                      const kvshard__wexperts_config *c, const char *source,
                                      kvshard_error *err);

#endif /* KVSHARD_MODEL_WEIGHTS_H */
