/* The layer-kind table: what each kind of decoder layer caches, and how it
 * is named, counted and drawn. One row per kvshard_layer_kind, in the
 * enum's order. The planner, memory and every writer read these rows; none
 * of them asks which kind a layer is. A new kind is an enum value and a row
 * here (plus the config rules that produce it, and a bytes rule in memory
 * when its cache has a shape no row has yet). */
#ifndef KVSHARD_MODEL_KINDS_H
#define KVSHARD_MODEL_KINDS_H

#include "kvshard/kvshard.h"

#define KVSHARD__KIND_COUNT 8u

struct kvshard__model_info;

/* The shape of what a kind caches, for the bytes rules of memory.c. */
typedef enum kvshard_kinds__shape {
    KVSHARD__SHAPE_NONE,       /* no KV of its own (a state, if any, is the state flag's) */
    KVSHARD__SHAPE_KV,         /* paged KV per token, the full geometry */
    KVSHARD__SHAPE_WINDOW,     /* the KV of the last sliding_window tokens, the sliding geometry */
    KVSHARD__SHAPE_CHUNK,      /* the KV of one attention chunk, the full geometry */
    KVSHARD__SHAPE_COMPRESSED  /* a latent window, a compressed stream, compressor state */
} kvshard_kinds__shape;

/* What a kind keeps for each sequence, bits of a mask: its recurrent
 * state, or a window (a sliding or chunked window, a compressed layer's
 * latent window and compressor state). The writers name the per-sequence
 * bytes by these: "state", "windows", or both. */
typedef enum kvshard_kinds__seq_cache {
    KVSHARD__SEQ_NONE = 0,
    KVSHARD__SEQ_STATE = 1,
    KVSHARD__SEQ_WINDOW = 2
} kvshard_kinds__seq_cache;

/* A word with its length, so a long list is matched without a strlen. */
typedef struct kvshard_kinds__word {
    const char *text;
    size_t len;
} kvshard_kinds__word;

typedef struct kvshard_kinds__row {
    /* kvshard_layer_kind_name() and the JSON plan's "kind". */
    const char *name;
    /* The layer_types (and layers_block_type) words for this kind, ended
     * by a NULL text. */
    const kvshard_kinds__word *words;

    /* What the layer caches. */
    kvshard_kinds__shape shape;
    bool paged_kv; /* a KV layer: its paged KV is what a layerwise split gives one rank */
    bool state;    /* the model's recurrent state, on every rank */
    bool window;   /* the KV of a window of recent tokens, on every rank */
    bool reads_source; /* keeps nothing: it reads an earlier layer's cache */
    kvshard_kinds__seq_cache seq_cache; /* what it keeps a sequence, in words */
    /* The tokens one window entry spans (sliding_window, chunk_size); NULL
     * for a kind without a window. */
    uint32_t (*window_tokens)(const struct kvshard__model_info *model);

    /* The communication estimate prices its layers: what they keep is
     * paged KV of the full geometry, a state, or nothing. */
    bool comm_priced;

    /* How the layer is counted. */
    const char *json_count;  /* the JSON model object's count field; NULL: none */
    const char *count_label; /* "10 full attention" in the plan's model line */
    const char *adjective;   /* "a sliding-window layer" in messages */
    bool count_always;       /* in the text model line even when none */

    /* How it is drawn. */
    char letter;            /* text layer map; an owner number follows for paged_kv */
    const char *map_legend; /* the text map's legend word */
    const char *css;        /* SVG cell class; "" for none beyond the owner colour */
    const char *mark;       /* SVG cell text of a kind without an owner */
    const char *title;      /* SVG cell tooltip, before any owner phrase */
    /* SVG legend entries, with a split and without; "%u" takes window_tokens. */
    const char *legend_split;
    const char *legend_unsplit;
} kvshard_kinds__row;

extern const kvshard_kinds__row kvshard_kinds__rows[KVSHARD__KIND_COUNT];

/* The row of `kind`, which must be below KVSHARD__KIND_COUNT. */
static inline const kvshard_kinds__row *kvshard_kinds__of(uint8_t kind)
{
    return &kvshard_kinds__rows[kind];
}

/* Bit k set when kind k has paged KV (a KV layer), or a state: for loops
 * over many layers. */
uint32_t kvshard_kinds__paged_mask(void);
uint32_t kvshard_kinds__state_mask(void);
/* Bit k set when kind k caches in `shape`. */
uint32_t kvshard_kinds__shape_mask(kvshard_kinds__shape shape);

/* The kinds in the order a legend lists them (KV layers first). */
extern const uint8_t kvshard_kinds__legend_order[KVSHARD__KIND_COUNT];

/* The seq_cache bits of the `n` kinds in `kinds`. */
uint32_t kvshard_kinds__seq_caches(const uint8_t *kinds, size_t n);

/* What the seq_cache bits `caches` keep, as a noun for "reserved for the
 * %s of 64 sequences": "state", "windows", "state and windows"; "state"
 * for none, the word of the second version's plans. */
const char *kvshard_kinds__seq_noun(uint32_t caches);

/* The kind a layer_types word names, or UINT8_MAX for none. */
uint8_t kvshard_kinds__from_word(const char *s, size_t len);

/* Every layer_types word into `buf`, for messages: "full_attention,
 * attention, ... or moe". */
void kvshard_kinds__word_list(char *buf, size_t cap);

static inline bool kvshard_kinds__paged(uint8_t kind)
{
    return kvshard_kinds__of(kind)->paged_kv;
}

static inline bool kvshard_kinds__has_state(uint8_t kind)
{
    return kvshard_kinds__of(kind)->state;
}

#endif /* KVSHARD_MODEL_KINDS_H */
