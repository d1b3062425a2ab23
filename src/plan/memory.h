/* Bytes per token, per sequence and per block, and how many blocks fit:
 * pure functions of the model's figures, the options, T, S_eff and how many
 * KV layers each split rank owns. They know nothing of the plan object. */
#ifndef KVSHARD_PLAN_MEMORY_H
#define KVSHARD_PLAN_MEMORY_H

#include "model/model.h"

typedef struct kvshard__memory_inputs {
    const kvshard__model_info *model;
    const kvshard_options *options;
    uint32_t tp;           /* T */
    uint32_t split;        /* S_eff */
    const uint32_t *owned; /* KV layers owned by each split rank: `split` entries */
    /* Names the model file when the model's own figures overflow. An
     * overflow scaled by block_size, and every capacity error, name no
     * source, so that a deployment can point at its option. */
    const char *model_source;
} kvshard__memory_inputs;

/* How many TP ranks hold a copy of each KV head without the split: T/H_kv
 * for GQA with fewer KV heads than ranks, T for MLA, otherwise 1. */
uint32_t kvshard__replication_factor(const kvshard__model_info *model, uint32_t tp);

/* Fill `ranks` (T entries), the common capacity and the S_eff = 1 figures. */
int kvshard__memory_compute(kvshard_rank_memory *ranks, kvshard_capacity *capacity,
                            kvshard_uniform *uniform, const kvshard__memory_inputs *in,
                            kvshard_error *err);

/* Blocks each of `tp` ranks fits into `memory` bytes after the state of
 * `max_seqs` sequences; the minimum over ranks into *out. *out_has is false
 * when no rank has KV bytes per block. When `ranks_out` is given, each rank's
 * figures with its block count are written there. */
int kvshard__memory_blocks_for(uint64_t *out, bool *out_has, kvshard_rank_memory *ranks_out,
                               const kvshard_rank_memory *ranks, uint32_t tp, uint32_t max_seqs,
                               uint64_t memory, kvshard_error *err);

#endif /* KVSHARD_PLAN_MEMORY_H */
