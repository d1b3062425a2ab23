/* Bytes per token and per sequence of every rank: pure functions of the
 * model's figures, the settled options, T, S_eff, the layers the ranks hold
 * (a range and its census) and how many KV layers each split rank owns.
 * They know nothing of the plan object. */
#ifndef KVSHARD_PLAN_MEMORY_H
#define KVSHARD_PLAN_MEMORY_H

#include "model/model.h"

typedef struct kvshard__memory_inputs {
    const kvshard__model_info *model;
    const kvshard_options *options; /* settled: block_size and max_seqs set */
    uint32_t tp;                    /* T */
    uint32_t split;                 /* S_eff */
    const uint32_t *owned;          /* KV layers each split rank owns: `split` entries */
    const kvshard__range *layers;   /* the layers the ranks hold */
    bool count_draft_layers;        /* the profile counts draft layers' KV */
    /* Names the model file when the model's own figures overflow. An
     * overflow scaled by block_size names no source, so that a deployment
     * can point at its option. */
    const char *model_source;
} kvshard__memory_inputs;

/* How many TP ranks hold a copy of each KV head without the split: T/H_kv
 * for GQA with fewer KV heads than ranks, T for MLA, 1 otherwise and for a
 * model with no KV layer. */
uint32_t kvshard__replication_factor(const kvshard__model_info *model, uint32_t tp);

/* The state dtype in force: the option, else the model's own. */
kvshard_dtype kvshard__state_dtype(const kvshard__model_info *model,
                                   const kvshard_options *options);

/* KV heads TP ranks first..last hold together: rank r holds heads
 * [r*H/T, (r+1)*H/T) when H >= T, else head floor(r*H/T). First head and
 * count into *out_first and *out_count. */
void kvshard__kv_heads(uint32_t *out_first, uint32_t *out_count, uint32_t heads, uint32_t tp,
                       uint32_t first, uint32_t last);

/* Bytes per token of one KV layer holding `heads` KV heads (ignored for
 * MLA). EOVERFLOW past 64 bits. */
int kvshard__layer_bytes(uint64_t *out, const kvshard__memory_inputs *in, uint32_t heads,
                         kvshard_error *err);

/* Per-sequence state of one linear or hybrid layer on one rank. */
int kvshard__state_bytes(uint64_t *out, const kvshard__memory_inputs *in, kvshard_error *err);

/* Per-sequence window of one sliding layer on one rank. */
int kvshard__window_bytes(uint64_t *out, const kvshard__memory_inputs *in, kvshard_error *err);

/* Every rank's bytes per token, per block and per sequence into `ranks` (T
 * entries); the block counts are left for the capacity. */
int kvshard__memory_ranks(kvshard_rank_memory *ranks, const kvshard__memory_inputs *in,
                          kvshard_error *err);

/* The largest bytes per token and per block of T ranks. */
void kvshard__largest_figures(uint64_t *out_kv_bytes_per_token, uint64_t *out_bytes_per_block,
                              const kvshard_rank_memory *ranks, uint32_t tp);

#endif /* KVSHARD_PLAN_MEMORY_H */
