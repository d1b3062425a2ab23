/* The model a config describes: layer kinds and the figures memory needs. */
#ifndef KVSHARD_MODEL_MODEL_H
#define KVSHARD_MODEL_MODEL_H

#include "base/alloc.h"
#include "base/error.h"
#include "model/dtype.h"
#include "model/kinds.h"
#include "text/file.h"

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
    uint32_t chunk_size;  /* Mamba2 chunk_size or mamba_chunk_size; 0 when absent */
    /* The model's own state dtype (its keys, else the kind's default);
     * AUTO without temporal state. A state_dtype option overrides it. */
    kvshard_dtype dtype;
} kvshard__state_dims;

/* One geometry of GQA attention: KV heads and the K and V head dims. A
 * model has two: the full layers' (full-attention, hybrid, chunked) and the
 * sliding-window layers'. */
typedef struct kvshard__geometry {
    uint32_t heads; /* H_kv */
    uint32_t k_dim;
    uint32_t v_dim;
} kvshard__geometry;

/* What a layer keeps beyond its kind. */
enum {
    KVSHARD__LAYER_INDEX_KEY = 1,  /* an indexer key per token (DSA, compressed) */
    KVSHARD__LAYER_SPARSE_K = 2,   /* a GQA sparse index key: K only */
    KVSHARD__LAYER_SPARSE_KV = 4,  /* a GQA sparse index key: K and V */
    KVSHARD__LAYER_STREAM = 8      /* a compressed layer that keeps its own stream */
};

/* A cache class: the layers (and draft layers) that cache the same bytes,
 * the unit memory is worked out in. */
typedef struct kvshard__class {
    uint8_t kind;
    uint8_t ratio; /* a compressed layer's compression ratio, else 0 */
    uint8_t flags; /* KVSHARD__LAYER_* */
} kvshard__class;

/* Whether a class caches an indexer key of any sort beside its KV. */
static inline bool kvshard__class_has_index(const kvshard__class *c)
{
    return (c->flags & (KVSHARD__LAYER_INDEX_KEY | KVSHARD__LAYER_SPARSE_K |
                        KVSHARD__LAYER_SPARSE_KV)) != 0;
}

/* Most distinct cache classes of one model. */
#define KVSHARD__MAX_CLASSES 32u

/* What planning needs of a model; plain values, copied into each plan. */
typedef struct kvshard__model_info {
    uint32_t num_layers;
    uint32_t count[KVSHARD__KIND_COUNT]; /* decoder layers of each kind */
    uint32_t num_kv;                     /* KV layers: kinds with paged KV */
    uint32_t num_state;                  /* layers that keep the recurrent state */
    uint32_t num_draft_layers;           /* draft layers that keep a cache */
    kvshard_attention attention;
    kvshard_dtype dtype; /* the model's: BF16, FP16, FP32 or FP8 */
    /* GQA */
    kvshard__geometry full;
    kvshard__geometry sliding;
    uint32_t sliding_window;
    uint32_t chunk_size;       /* chunked attention: tokens of one chunk */
    uint32_t sparse_index_dim; /* a GQA sparse index key's elements */
    /* MLA and DSA indexer */
    uint32_t kv_lora_rank;
    uint32_t qk_rope_head_dim; /* MLA; compressed: the RoPE part of the latent */
    bool has_indexer;
    uint32_t index_head_dim;
    uint32_t index_topk; /* the rows a DSA layer attends; 0: not in the config */
    /* Compressed attention: the elements of one shared K=V entry. */
    uint32_t latent_dim;
    kvshard__state_dims state;
    /* The cache classes, and the counted draft layers of each. */
    uint32_t num_classes;
    kvshard__class classes[KVSHARD__MAX_CLASSES];
    /* When every layer of a kind has one class (no ratios or flags), the
     * class of each kind: a census of kinds is then one of classes. */
    bool classes_by_kind;
    uint8_t kind_class[KVSHARD__KIND_COUNT];
    uint32_t draft_census[KVSHARD__MAX_CLASSES];
    /* Figures engines read that no cache size depends on. */
    uint32_t max_position_embeddings; /* the longest context; 0 when the config gives none */
    bool multimodal;                  /* the config has a vision_config */
    /* The output head reuses the embedding (text config first, else the
     * top level's; false when neither says). */
    bool tie_word_embeddings;
    /* The dtypes mamba_ssm_dtype and mamba_ssm_cache_dtype name (text
     * config first); AUTO when a key is absent or names no dtype. */
    kvshard_dtype named_ssm_dtype;
    kvshard_dtype named_ssm_cache_dtype;
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

/* The class of a layer or draft layer, added to the model's table when new;
 * UINT8_MAX when the table is full. */
uint8_t kvshard_model__class_of(kvshard__model_info *m, uint8_t kind, uint8_t ratio, uint8_t flags);

/* A model figure that must divide by the attention TP size, and where it was
 * read, for errors found when planning. */
typedef struct kvshard__key_site {
    const char *key; /* static name; NULL when unused */
    uint32_t value;
    kvshard__mark mark;
} kvshard__key_site;

enum {
    KVSHARD__SITE_KV_HEADS, /* GQA KV heads of the full geometry: T and H divide one another */
    KVSHARD__SITE_SLIDING_KV_HEADS, /* the same for the sliding geometry */
    KVSHARD__SITE_Q_HEADS,  /* GQA query heads: T divides them (0 when not read) */
    KVSHARD__SITE_STATE_A,  /* state dimensions that T must divide */
    KVSHARD__SITE_STATE_B,
    KVSHARD__SITE_STATE_GROUPS, /* Mamba2 groups: G % T == 0 or T % G == 0 */
    KVSHARD__SITE_LATENT_ROPE,  /* a compressed model without qk_rope_head_dim: the text
                                   config, for the error an fp8 cache gives */
    KVSHARD__SITE_COUNT
};

struct kvshard_model {
    kvshard_allocator alloc;
    char *source;
    bool from_file; /* `source` is a file on disk, whose directory holds the weights */
    char *model_type;
    uint8_t *kinds;    /* kvshard_layer_kind per decoder layer */
    /* Per decoder layer, its class in info.classes; while the config is read,
     * its compression ratio and flags instead (kvshard__layer_ratio()), one
     * byte a layer either way. */
    uint8_t *class_of;
    bool any_attrs; /* some layer has a ratio or flags (set with them) */
    /* Per decoder layer, the layer whose cache it reads, or -1; NULL when no
     * layer reads another's (its own allocation, made by the reader). */
    int32_t *kv_source;
    /* Per draft layer (info.num_draft_layers), its class; NULL with none
     * (its own allocation). */
    uint8_t *draft_class;
    kvshard__model_info info;
    kvshard__key_site sites[KVSHARD__SITE_COUNT];
    /* The first error of a part of the config only draft layers read (their
     * attention keys, their window): a plan that counts them fails with it. */
    int draft_rc;
    kvshard_error draft_error;
    /* Told of each weights file a plan of this model opens (the index and
     * every shard), for a caller that must never write over one (the CLI's
     * -o); NULL when nobody asks. */
    kvshard__file_fn on_weights_file;
    void *on_weights_file_user;
};

/* A layer's compression ratio and flags while the config is read: bits 0-2
 * a ratio's code (0, 1, 2, 4, 128), bits 3-6 the KVSHARD__LAYER_* flags. */
static inline uint8_t kvshard__layer_ratio(const kvshard_model *m, uint32_t i)
{
    static const uint8_t ratios[8] = {0, 1, 2, 4, 128, 0, 0, 0};
    return ratios[m->class_of[i] & 7u];
}

static inline uint8_t kvshard__layer_flags(const kvshard_model *m, uint32_t i)
{
    return (uint8_t)(m->class_of[i] >> 3);
}

/* Set the ratio, one of 0, 1, 2, 4 and 128. */
static inline void kvshard__set_layer_ratio(kvshard_model *m, uint32_t i, uint8_t ratio)
{
    uint8_t code = ratio == 128 ? 4 : ratio == 4 ? 3 : ratio;
    m->class_of[i] = (uint8_t)((m->class_of[i] & ~7u) | code);
    m->any_attrs = true;
}

static inline void kvshard__set_layer_flags(kvshard_model *m, uint32_t i, uint8_t flags)
{
    m->class_of[i] = (uint8_t)((m->class_of[i] & 7u) | (uint8_t)(flags << 3));
    m->any_attrs = true;
}

static inline void kvshard__add_layer_flags(kvshard_model *m, uint32_t i, uint8_t flags)
{
    kvshard__set_layer_flags(m, i, (uint8_t)(kvshard__layer_flags(m, i) | flags));
}

/* A new empty model with its source and type copied (into the model's own
 * allocation; the layer kinds have one of their own); ENOMEM otherwise. */
int kvshard_model__new(kvshard_model **out, const kvshard_allocator *alloc, const char *source,
                       const char *model_type, size_t type_len, uint32_t num_layers,
                       kvshard_error *err);
/* Count the layer kinds into the model's info. */
void kvshard_model__count_kinds(kvshard_model *m);

/* Give every decoder layer its class from its kind, ratio and flags; ELIMIT
 * past KVSHARD__MAX_CLASSES. */
int kvshard_model__classes(kvshard_model *m, kvshard_error *err);

/* How many of `n` values `of` (each below `values`, at most
 * KVSHARD__MAX_CLASSES) are each value, into `count`. */
void kvshard_model__census(uint32_t *count, uint32_t values, const uint8_t *of, uint32_t n);

/* How the writers name an attention type: "GQA", "MLA", "compressed
 * attention". */
const char *kvshard_model__attention_label(kvshard_attention attention);

/* A range of decoder layers (a pipeline stage holds one) and the census of
 * their kinds: what memory and owners are worked out over. */
typedef struct kvshard__range {
    uint32_t first;
    uint32_t count;
    uint32_t census[KVSHARD__KIND_COUNT];
    uint32_t num_kv;    /* KV layers in the range */
    uint32_t num_state; /* layers with the recurrent state */
    /* Layers of each class in the range (when the classes are given). */
    uint32_t class_census[KVSHARD__MAX_CLASSES];
} kvshard__range;

/* The range of `count` layers from `first` of a model with `kinds` and,
 * when the model's figures `m` are given, the census of their classes
 * (`class_of` the layers' classes). */
void kvshard_model__range_of(kvshard__range *out, const uint8_t *kinds, const uint8_t *class_of,
                       const kvshard__model_info *m, uint32_t first, uint32_t count);

#endif /* KVSHARD_MODEL_MODEL_H */
