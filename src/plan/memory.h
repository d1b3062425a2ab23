/* Bytes per token and per sequence of every rank: pure functions of the
 * model's figures, the settled options, T, S_eff, the layers the ranks hold
 * (a range and the census of its cache classes) and how many KV layers of
 * each class each split rank owns. They know nothing of the plan object. */
#ifndef KVSHARD_PLAN_MEMORY_H
#define KVSHARD_PLAN_MEMORY_H

#include "base/diag.h"
#include "model/model.h"
#include "model/states.h"

typedef struct kvshard__memory_inputs {
    const kvshard__model_info *model;
    const kvshard_options *options; /* settled: block_size and max_seqs set */
    uint32_t tp;                    /* T */
    uint32_t split;                 /* S_eff */
    /* KV layers of each class each split rank owns: `split` rows of
     * model->num_classes entries. */
    const uint32_t *owned;
    const kvshard__range *layers; /* the layers the ranks hold */
    bool count_draft_layers;      /* the profile counts draft layers' KV */
    bool mla_v2_bytes;            /* the profile keeps MLA and DSA at the second version's sizes */
    /* Names the model file when the model's own figures overflow. An
     * overflow scaled by block_size names no source, so that a deployment
     * can point at its option. */
    const char *model_source;
} kvshard__memory_inputs;

/* What one layer of a class keeps on one rank. */
typedef struct kvshard__cost {
    uint64_t per_token; /* paged bytes per token: KV, index keys, a compressed stream */
    uint64_t per_seq;   /* per sequence: a window, a chunk, compressor state */
    uint64_t entry;     /* bytes of one token's entry (a window's or chunk's too) */
} kvshard__cost;

/* How many TP ranks hold a copy of each KV head without the split: T/H
 * for GQA with fewer KV heads of the full geometry than ranks, T for MLA
 * and compressed attention, 1 otherwise and for a model with no KV layer. */
uint32_t kvshard_memory__replication_factor(const kvshard__model_info *model, uint32_t tp);

/* The state dtype in force: the option, else the model's own. */
kvshard_dtype kvshard_memory__state_dtype(const kvshard__model_info *model,
                                   const kvshard_options *options);

/* The dtype the KV cache is sized in: kv_cache_dtype, or for auto the
 * model's own. */
kvshard_dtype kvshard_memory__kv_cache_dtype(const kvshard__model_info *model,
                                      const kvshard_options *options);

/* The dtypes and sizes one layer's state is counted in at T = in->tp: the
 * conv state in the model dtype, the temporal state in the state dtype. */
kvshard_states__env kvshard_memory__state_env(const kvshard__memory_inputs *in);

/* Whether the KV cache is fp8: kv_cache_dtype fp8, or auto with an fp8 model. */
bool kvshard_memory__kv_cache_fp8(const kvshard__model_info *model, const kvshard_options *options);

/* KV heads TP ranks first..last hold together: rank r holds heads
 * [r*H/T, (r+1)*H/T) when H >= T, else head floor(r*H/T). First head and
 * count into *out_first and *out_count (0 and 0 when H is 0). */
void kvshard_memory__kv_heads(uint32_t *out_first, uint32_t *out_count, uint32_t heads, uint32_t tp,
                       uint32_t first, uint32_t last);

/* One token's indexer key of a DSA layer, as the plan counts it. */
uint64_t kvshard_memory__index_key_bytes(const kvshard__memory_inputs *in);

/* How one token's entry is laid out, element by element: the bytes of the
 * K, V and latent NoPE elements, of the RoPE part beside a latent and of an
 * indexer key's elements, and the scales stored with them (per GQA head, per
 * latent, per index key). The entry bytes of layer_cost are made of these. */
typedef struct kvshard__entry_layout {
    uint32_t element_bytes;
    uint32_t rope_element_bytes;
    uint32_t index_element_bytes;
    uint32_t head_scale_bytes;
    uint32_t latent_scale_bytes; /* a compressed latent's padding to 8 bytes counts here */
    uint32_t index_scale_bytes;
} kvshard__entry_layout;

kvshard__entry_layout kvshard_memory__entry_layout(const kvshard__memory_inputs *in);

/* The tokens a window of `tokens` keeps: whole blocks, plus the block being
 * filled. */
uint64_t kvshard_memory__window_tokens(const kvshard__memory_inputs *in, uint64_t tokens);

/* A compressed layer's float32 compressor state: `slots` partial entries of
 * `rows` rows (an entry and its gate scores per overlapping window) of
 * `dims` elements (the latent, with the index key's when it has one). All 0
 * for a layer that keeps none. */
typedef struct kvshard__compressor {
    uint64_t slots;
    uint64_t rows;
    uint64_t dims;
} kvshard__compressor;

kvshard__compressor kvshard_memory__compressor(const kvshard__memory_inputs *in,
                                               const kvshard__class *k);

/* What one layer of class `cls` keeps with `full_heads` heads of the full
 * geometry and `sliding_heads` of the sliding one. EOVERFLOW past 64 bits. */
int kvshard_memory__layer_cost(kvshard__cost *out, const kvshard__memory_inputs *in, uint8_t cls,
                        uint32_t full_heads, uint32_t sliding_heads, kvshard_diag__ctx *diag);

/* Per-sequence state of one linear or hybrid layer on one rank. */
int kvshard_memory__state_bytes(uint64_t *out, const kvshard__memory_inputs *in,
                                kvshard_diag__ctx *diag);

/* Bytes per token, per block and per sequence of `n` TP ranks into `ranks`:
 * rank j is TP rank which[j], or j when `which` is NULL (every rank, n =
 * T). Each is sized by its own heads, its split group's union and its
 * split rank's row of `in->owned`; the block counts are left for the
 * capacity. */
int kvshard_memory__ranks(kvshard_rank_memory *ranks, const kvshard__memory_inputs *in,
                          const uint32_t *which, uint32_t n, kvshard_diag__ctx *diag);

/* Whether every rank of T holds as many heads of each geometry as the
 * first (T and the heads divide one another, as planning requires of the
 * geometries a plan uses): then two ranks of one stage have the same
 * figures when they are the same split rank of groups with the same union
 * (kvshard_memory__other_group). */
bool kvshard_memory__ranks_alike(const kvshard__model_info *m, uint32_t tp);

/* When kvshard_memory__ranks_alike: the first split group of S_eff = `split`
 * ranks whose union of full-geometry KV heads differs from group 0's, or 0
 * when every group's is group 0's. Only with fewer KV heads than ranks can
 * it differ (a group straddling two heads' replicas), and then every group
 * holds group 0's count or one more: group 0 and that group stand for all.
 * fit keeps a split rank of each (kvshard_plan__figures). */
uint32_t kvshard_memory__other_group(const kvshard__model_info *m, uint32_t tp, uint32_t split);

/* Every plan rank's figures (P x T entries into `ranks`), stage by stage:
 * `in` gives the model, options, T and S_eff; `stages` the P stages' layer
 * ranges; `owned` P rows of S_eff x classes entries (the stages' owned
 * counts by class), or NULL for one split rank owning every KV layer (the
 * uniform figures). Draft layers count on the last stage only. */
int kvshard_memory__stage_ranks(kvshard_rank_memory *ranks, const kvshard__memory_inputs *in,
                         const kvshard__range *stages, uint32_t pp, const uint32_t *owned,
                         kvshard_diag__ctx *diag);

/* The bytes per block of every KV layer of the range stored unsplit on TP
 * rank 0 (no draft layers): what an engine that does not split sizes a
 * block by. EOVERFLOW past 64 bits. */
int kvshard_memory__unsplit_bytes_per_block(uint64_t *out, const kvshard__memory_inputs *in,
                                     kvshard_diag__ctx *diag);

/* The largest bytes per token and per block of T ranks. */
void kvshard_memory__largest_figures(uint64_t *out_kv_bytes_per_token,
                                     uint64_t *out_bytes_per_block,
                                     const kvshard_rank_memory *ranks, uint32_t tp);

#endif /* KVSHARD_PLAN_MEMORY_H */
