/* The toolkit for reading a model config's keys from a parsed document,
 * shared by the readers of its parts (read.h lists them): the known keys, their
 * lookup, and checked readers of dimensions. */
#ifndef KVSHARD_MODEL_READER_H
#define KVSHARD_MODEL_READER_H

#include "model/model.h"
#include "text/yaml_doc.h"

/* Every key a model config is read by, as X(ID, "name"): the top level,
 * text_config and linear_attn_config. */
#define KVSHARD__MODEL_KEYS(X)                                                                     \
    X(TEXT_CONFIG, "text_config")                                                                  \
    X(MODEL_TYPE, "model_type")                                                                    \
    X(NUM_HIDDEN_LAYERS, "num_hidden_layers")                                                      \
    X(DTYPE, "dtype")                                                                              \
    X(TORCH_DTYPE, "torch_dtype")                                                                  \
    X(LAYER_TYPES, "layer_types")                                                                  \
    X(LAYERS_BLOCK_TYPE, "layers_block_type")                                                      \
    X(HYBRID_OVERRIDE_PATTERN, "hybrid_override_pattern")                                          \
    X(ATTN_TYPE_LIST, "attn_type_list")                                                            \
    X(LINEAR_ATTN_CONFIG, "linear_attn_config")                                                    \
    X(ATTN_LAYER_PERIOD, "attn_layer_period")                                                      \
    X(ATTN_LAYER_OFFSET, "attn_layer_offset")                                                      \
    X(ATTN_LAYER_INDICES, "attn_layer_indices")                                                    \
    X(FULL_ATTN_IDXS, "full_attn_idxs")                                                            \
    X(FULL_ATTENTION_INTERVAL, "full_attention_interval")                                          \
    X(SLIDING_WINDOW_PATTERN, "sliding_window_pattern")                                            \
    X(SLIDING_WINDOW, "sliding_window")                                                            \
    X(NUM_NEXTN_PREDICT_LAYERS, "num_nextn_predict_layers")                                        \
    X(MTP_NUM_HIDDEN_LAYERS, "mtp_num_hidden_layers")                                              \
    X(KV_LORA_RANK, "kv_lora_rank")                                                                \
    X(NUM_ATTENTION_HEADS, "num_attention_heads")                                                  \
    X(NUM_KEY_VALUE_HEADS, "num_key_value_heads")                                                  \
    X(HEAD_DIM, "head_dim")                                                                        \
    X(ATTENTION_HEAD_DIM, "attention_head_dim")                                                    \
    X(HIDDEN_SIZE, "hidden_size")                                                                  \
    X(QK_ROPE_HEAD_DIM, "qk_rope_head_dim")                                                        \
    X(INDEX_HEAD_DIM, "index_head_dim")                                                            \
    X(INDEX_N_HEADS, "index_n_heads")                                                              \
    X(INDEX_TOPK, "index_topk")                                                                    \
    X(LINEAR_NUM_KEY_HEADS, "linear_num_key_heads")                                                \
    X(LINEAR_NUM_VALUE_HEADS, "linear_num_value_heads")                                            \
    X(LINEAR_KEY_HEAD_DIM, "linear_key_head_dim")                                                  \
    X(LINEAR_VALUE_HEAD_DIM, "linear_value_head_dim")                                              \
    X(LINEAR_CONV_KERNEL_DIM, "linear_conv_kernel_dim")                                            \
    X(MAMBA_NUM_HEADS, "mamba_num_heads")                                                          \
    X(MAMBA_N_HEADS, "mamba_n_heads")                                                              \
    X(N_MAMBA_HEADS, "n_mamba_heads")                                                              \
    X(MAMBA_HEAD_DIM, "mamba_head_dim")                                                            \
    X(MAMBA_D_HEAD, "mamba_d_head")                                                                \
    X(MAMBA_HEADDIM, "mamba_headdim")                                                              \
    X(SSM_STATE_SIZE, "ssm_state_size")                                                            \
    X(MAMBA_D_STATE, "mamba_d_state")                                                              \
    X(N_GROUPS, "n_groups")                                                                        \
    X(MAMBA_N_GROUPS, "mamba_n_groups")                                                            \
    X(MAMBA_NGROUPS, "mamba_ngroups")                                                              \
    X(CONV_KERNEL, "conv_kernel")                                                                  \
    X(MAMBA_D_CONV, "mamba_d_conv")                                                                \
    X(MAMBA_EXPAND, "mamba_expand")                                                                \
    X(CONV_L_CACHE, "conv_L_cache")                                                                \
    X(MAMBA_SSM_DTYPE, "mamba_ssm_dtype")                                                          \
    X(MAMBA_SSM_CACHE_DTYPE, "mamba_ssm_cache_dtype")                                              \
    X(FULL_ATTN_LAYERS, "full_attn_layers")                                                        \
    X(KDA_LAYERS, "kda_layers")                                                                    \
    X(NUM_HEADS, "num_heads")                                                                      \
    X(SHORT_CONV_KERNEL_SIZE, "short_conv_kernel_size")                                            \
    X(COMPRESS_RATIOS, "compress_ratios")                                                        \
    X(COMPRESS_RATES, "compress_rates")                                                          \
    X(HYBRID_LAYER_PATTERN, "hybrid_layer_pattern")                                              \
    X(LAYER_GROUP_SIZE, "layer_group_size")                                                      \
    X(ATTENTION_CHUNK_SIZE, "attention_chunk_size")                                              \
    X(NO_ROPE_LAYERS, "no_rope_layers")                                                          \
    X(NO_ROPE_LAYER_INTERVAL, "no_rope_layer_interval")                                          \
    X(SLIDING_WINDOW_SIZE, "sliding_window_size")                                                \
    X(NUM_GLOBAL_KEY_VALUE_HEADS, "num_global_key_value_heads")                                  \
    X(ATTENTION_K_EQ_V, "attention_k_eq_v")                                                      \
    X(GLOBAL_HEAD_DIM, "global_head_dim")                                                        \
    X(V_HEAD_DIM, "v_head_dim")                                                                  \
    X(NUM_ATTENTION_GROUPS, "num_attention_groups")                                              \
    X(ATTENTION_OTHER_SETTING, "attention_other_setting")                                        \
    X(ATTENTION_TYPE, "attention_type")                                                          \
    X(SWA_NUM_KEY_VALUE_HEADS, "swa_num_key_value_heads")                                        \
    X(SWA_HEAD_DIM, "swa_head_dim")                                                              \
    X(SWA_V_HEAD_DIM, "swa_v_head_dim")                                                          \
    X(KV_SOURCE_LAYER_IDS, "kv_source_layer_ids")                                                \
    X(INDEX_SOURCE_LAYER_IDS, "index_source_layer_ids")                                          \
    X(NUM_KV_SHARED_LAYERS, "num_kv_shared_layers")                                              \
    X(INDEXER_TYPES, "indexer_types")                                                            \
    X(INDEX_TOPK_PATTERN, "index_topk_pattern")                                                  \
    X(INDEX_TOPK_FREQ, "index_topk_freq")                                                        \
    X(INDEX_SKIP_TOPK_OFFSET, "index_skip_topk_offset")                                          \
    X(SPARSE_ATTENTION_CONFIG, "sparse_attention_config")                                        \
    X(USE_SPARSE_ATTENTION, "use_sparse_attention")                                              \
    X(SPARSE_ATTENTION_FREQ, "sparse_attention_freq")                                            \
    X(SPARSE_DISABLE_INDEX_VALUE, "sparse_disable_index_value")                                  \
    X(SPARSE_INDEX_DIM, "sparse_index_dim")                                                      \
    X(MTP_LAYER_TYPES, "mtp_layer_types")                                                        \
    X(MTP_LAYERS_BLOCK_TYPE, "mtp_layers_block_type")                                            \
    X(MTP_HYBRID_OVERRIDE_PATTERN, "mtp_hybrid_override_pattern")                                \
    X(BLOCK_CONFIGS, "block_configs")                                                            \
    X(MB_PER_LAYER, "mb_per_layer")                                                              \
    X(CROSS_ATTENTION_LAYERS, "cross_attention_layers")                                          \
    X(INDEX_KPOOL, "index_kpool")                                                                \
    X(INDEXER_COMPRESS_RATIO, "indexer_compress_ratio")                                          \
    X(LOCAL_LAYER_IDS, "local_layer_ids")                                                        \
    X(MAX_POSITION_EMBEDDINGS, "max_position_embeddings")                                        \
    X(CHUNK_SIZE, "chunk_size")                                                                  \
    X(MAMBA_CHUNK_SIZE, "mamba_chunk_size")                                                      \
    X(VISION_CONFIG, "vision_config")                                                            \
    X(TIE_WORD_EMBEDDINGS, "tie_word_embeddings")

typedef enum kvshard__key {
#define KVSHARD__KEY_ENUM(id, name) KVSHARD__KEY_##id,
    KVSHARD__MODEL_KEYS(KVSHARD__KEY_ENUM)
#undef KVSHARD__KEY_ENUM
        KVSHARD__KEY_COUNT /* also ends a list of keys */
} kvshard__key;

/* A key's name as a config spells it. */
const char *kvshard_reader__key_name(kvshard__key key);
/* The key spelled `len` bytes at `s`; KVSHARD__KEY_COUNT when none is. */
kvshard__key kvshard_reader__key_find(const char *s, size_t len);

/* The values of the known keys of one mapping, found in one pass over it: a
 * model is read with some 30 to 60 lookups, most for keys a config does not
 * have, and a config has a few dozen keys. */
typedef struct kvshard__key_table {
    uint32_t map;                   /* node id of the mapping; UINT32_MAX for none */
    bool complete;                  /* false for a mapping too large to scan: the doc is asked */
    uint8_t at[KVSHARD__KEY_COUNT]; /* 1 + index into `values`; 0 absent or null */
    kvshard__node values[KVSHARD__KEY_COUNT];
} kvshard__key_table;

typedef struct kvshard__reader {
    const kvshard__doc *doc;
    kvshard__node top;  /* the whole config */
    kvshard__node text; /* text_config, or the top level */
    kvshard_error *err;
    kvshard_model *model; /* being filled */
    size_t site_offsets[KVSHARD__SITE_COUNT];
    kvshard__key_table top_keys;
    kvshard__key_table text_keys; /* text_config's; unused without one */
    /* What the layer-kind rules found, for the readers after them. */
    uint32_t draft_steps;     /* the model's draft (MTP) steps */
    int compressed;           /* 0: not compressed; 1: by compress_ratios; 2: by layer_types */
    kvshard__node layer_list; /* layer_types (or layers_block_type) when a rule read it */
    bool layer_list_drafts;   /* it lists the draft layers too */
    kvshard__node ratio_list; /* compress_ratios when a rule read it */
    /* The draft layers that keep a cache, with their kind, ratio and flags. */
    uint32_t draft_count;
    kvshard__class draft[KVSHARD__MAX_DRAFT_LAYERS];
} kvshard__reader;

/* Fill `t` with the known keys of `map`, a mapping, in one pass. */
void kvshard_reader__scan_keys(kvshard__key_table *t, const kvshard__doc *doc,
                               const kvshard__node *map);

/* kvshard__get() in a mapping without a complete key table: asks the doc. */
bool kvshard_reader__get_in_doc(const kvshard__reader *r, const kvshard__node *map,
                                kvshard__key key, kvshard__node *out);

/* The value of `key` in `map` when present and not null (null counts as
 * absent everywhere in a model config). Inline: a model is read with dozens
 * of these, nearly all answered by a key table. */
static inline bool kvshard__get(const kvshard__reader *r, const kvshard__node *map,
                                kvshard__key key, kvshard__node *out)
{
    /* The same node id is the same mapping, whichever way it was reached. */
    const kvshard__key_table *t = map->id == r->text_keys.map  ? &r->text_keys
                                  : map->id == r->top_keys.map ? &r->top_keys
                                                               : NULL;
    if (!t || !t->complete)
        return kvshard_reader__get_in_doc(r, map, key, out);
    uint8_t at = t->at[key];
    if (!at)
        return false;
    *out = t->values[at - 1];
    return true;
}
/* The first present key of a list of aliases ended by KVSHARD__KEY_COUNT;
 * its name into *out_key. */
bool kvshard_reader__get_any(const kvshard__reader *r, const kvshard__node *map,
                             const kvshard__key *keys, kvshard__node *out, const char **out_key);
/* EMISSING at `map`: "missing key "key" (why)". */
int kvshard_reader__missing(const kvshard__reader *r, const kvshard__node *map, kvshard__key key,
                     const char *why);
/* A dimension in [min, max] from `v`, which holds `key`. */
int kvshard_reader__read_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *v,
                      const char *key, uint32_t min, uint32_t max);
/* An optional dimension in [min, max] of `map`: *found tells whether it
 * was there. */
int kvshard_reader__optional_dim(uint32_t *out, bool *found, const kvshard__reader *r,
                          const kvshard__node *map, kvshard__key key, uint32_t min, uint32_t max);
/* A required dimension (1 .. KVSHARD__MAX_DIMENSION) of `map`. */
int kvshard_reader__require_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *map,
                         kvshard__key key, const char *why);
/* A boolean (true or false) from `v`, which holds `key`. */
int kvshard_reader__read_bool(bool *out, const kvshard__reader *r, const kvshard__node *v,
                       const char *key);
/* `list`, which holds `key`, is a list of exactly L entries (ELAYERCOUNT
 * naming both counts otherwise). */
int kvshard_reader__read_layer_list(const kvshard__reader *r, const kvshard__node *list,
                                    const char *key, uint32_t L);
/* A list of exactly L entries, each 0 or 1, into out[0..L); `meaning` says
 * what the two values mean, for the error. */
int kvshard_reader__read_bits(uint8_t *out, const kvshard__reader *r, const kvshard__node *list,
                       const char *key, uint32_t L, const char *meaning);
/* Read one part of the config with `part`: when the decoder layers need it,
 * as any part; when only draft layers do, its error is kept in the model
 * (draft_rc, draft_error) for the plans that count them, and the read goes
 * on; when nothing needs it, it is not read. */
int kvshard_reader__read_part(kvshard__reader *r, bool decoder_needs, bool drafts_need,
                       int (*part)(kvshard__reader *));
/* model_type at the top level or in the text config is `type` (or, with
 * `prefix`, starts with it). */
bool kvshard_model__type_is(const kvshard__reader *r, const char *type, bool prefix);
/* Remember where a figure checked at plan time was read. */
void kvshard_reader__set_site(kvshard__reader *r, int site, const char *key, uint32_t value,
                       const kvshard__node *at);

#endif /* KVSHARD_MODEL_READER_H */
