/* The model a config describes: layer kinds and the figures memory needs. */
#ifndef KVSHARD_MODEL_MODEL_H
#define KVSHARD_MODEL_MODEL_H

#include "base/alloc.h"
#include "base/error.h"
#include "model/dtype.h"
#include "model/kinds.h"

/* Bound on any single dimension (heads, head_dim, latent ranks, ...). */
#define KVSHARD__MAX_DIMENSION (1u << 24)
/* Bound on draft layers; real models have one or a few. */
#define KVSHARD__MAX_DRAFT_LAYERS 1024u

/* The recurrent state of linear and hybrid layers (one kind per model). */
typedef struct kvshard__state_dims {
    kvshard_state_kind kind;
    uint32_t heads;       /* GDN Hv; KDA, lightning, Mamba2 H */
    uint32_t key_heads;   /* GDN Hk */
    uint32_t head_dim;    /* GDN dk; KDA and lightning d; Mamba2 P */
    uint32_t value_dim;   /* GDN dv */
    uint32_t state_size;  /* Mamba1, Mamba2 N */
    uint32_t groups;      /* Mamba2 G */
    uint32_t conv_kernel; /* GDN, KDA, Mamba1, Mamba2 K; short conv L_cache */
    uint32_t channels;    /* Mamba1 d_inner; short conv hidden_size */
    /* The model's own state dtype (its keys, else the kind's default);
     * AUTO without temporal state. A state_dtype option overrides it. */
    kvshard_dtype dtype;
} kvshard__state_dims;

/* What planning needs of a model; plain values, copied into each plan. */
typedef struct kvshard__model_info {
    uint32_t num_layers;
    uint32_t count[KVSHARD__KIND_COUNT]; /* decoder layers of each kind */
    uint32_t num_kv;                     /* KV layers: kinds with paged KV */
    uint32_t num_state;                  /* layers that keep the recurrent state */
    uint32_t num_draft_layers;
    kvshard_attention attention;
    kvshard_dtype dtype; /* the model's: BF16, FP16, FP32 or FP8 */
    /* GQA */
    uint32_t num_kv_heads;
    uint32_t head_dim;
    uint32_t sliding_window;
    /* MLA and DSA indexer */
    uint32_t kv_lora_rank;
    uint32_t qk_rope_head_dim;
    bool has_indexer;
    uint32_t index_head_dim;
    kvshard__state_dims state;
} kvshard__model_info;

/* KV layers: the kinds with paged KV, whose KV a split divides. */
static inline uint32_t kvshard__num_kv_layers(const kvshard__model_info *m)
{
    return m->num_kv;
}

/* Decoder layers of `kind`. */
static inline uint32_t kvshard__count(const kvshard__model_info *m, uint8_t kind)
{
    return m->count[kind];
}

/* A model figure that must divide by the attention TP size, and where it was
 * read, for errors found when planning. */
typedef struct kvshard__key_site {
    const char *key; /* static name; NULL when unused */
    uint32_t value;
    kvshard__mark mark;
} kvshard__key_site;

enum {
    KVSHARD__SITE_KV_HEADS, /* GQA KV heads: T and H_kv divide one another */
    KVSHARD__SITE_Q_HEADS,  /* GQA query heads: T divides them (0 when not read) */
    KVSHARD__SITE_STATE_A,  /* state dimensions that T must divide */
    KVSHARD__SITE_STATE_B,
    KVSHARD__SITE_STATE_GROUPS, /* Mamba2 groups: G % T == 0 or T % G == 0 */
    KVSHARD__SITE_COUNT
};

struct kvshard_model {
    kvshard_allocator alloc;
    char *source;
    char *model_type;
    uint8_t *kinds; /* kvshard_layer_kind per decoder layer */
    kvshard__model_info info;
    kvshard__key_site sites[KVSHARD__SITE_COUNT];
};

/* A new empty model with its source and type copied (into the model's own
 * allocation; the layer kinds have one of their own); ENOMEM otherwise. */
int kvshard__model_new(kvshard_model **out, const kvshard_allocator *alloc, const char *source,
                       const char *model_type, size_t type_len, uint32_t num_layers,
                       kvshard_error *err);
/* Count the layer kinds into the model's info. */
void kvshard__model_count_kinds(kvshard_model *m);

/* Layers of each kind among `n` kinds into `count`. */
void kvshard__census(uint32_t count[KVSHARD__KIND_COUNT], const uint8_t *kinds, uint32_t n);

/* A range of decoder layers (a pipeline stage holds one) and the census of
 * their kinds: what memory and owners are worked out over. */
typedef struct kvshard__range {
    uint32_t first;
    uint32_t count;
    uint32_t census[KVSHARD__KIND_COUNT];
    uint32_t num_kv;    /* KV layers in the range */
    uint32_t num_state; /* layers with the recurrent state */
} kvshard__range;

/* The range of `count` layers from `first` of a model with `kinds`. */
void kvshard__range_of(kvshard__range *out, const uint8_t *kinds, uint32_t first, uint32_t count);

#endif /* KVSHARD_MODEL_MODEL_H */
