/* How many blocks and sequences fit: pure functions of every rank's bytes,
 * the settled options and a memory figure, under either engine profile. */
#ifndef KVSHARD_PLAN_CAPACITY_H
#define KVSHARD_PLAN_CAPACITY_H

#include "base/error.h"

typedef struct kvshard__capacity_inputs {
    const kvshard_options *options;   /* settled */
    const kvshard_rank_memory *ranks; /* T entries: bytes per block and per sequence */
    uint32_t tp;
    uint32_t split; /* S_eff */
    /* xllm: the bytes per block of all KV layers stored unsplit, no draft. */
    uint64_t unsplit_bytes_per_block;
    uint64_t memory;          /* kvshard: M per rank; xllm: the budget B */
    uint64_t extra_per_block; /* bytes the engine adds to every block */
    uint32_t context_length;  /* 0: no concurrency figures */
    uint32_t rank;            /* one TP rank, or KVSHARD_ALL_RANKS */
} kvshard__capacity_inputs;

typedef struct kvshard__capacity {
    bool has_num_blocks;
    uint64_t num_blocks;
    uint64_t max_tokens;
    uint64_t reserved; /* bytes of state reserved per rank */
    bool has_concurrency;
    uint64_t concurrency;
    bool has_balanced_max_seqs;
    uint64_t balanced_max_seqs;
    bool has_state_slots;
    uint64_t state_slots;
    uint64_t usable_blocks;
    uint64_t usable_state_slots;
} kvshard__capacity;

/* The xllm budget B from the options: memory_per_rank when given, else
 * device_memory_free - trunc(device_memory_total * (1 - utilization)),
 * capped by max_cache_size. *out_has is false when the options give
 * neither. ENOBLOCK when B <= 0, EMISSING for half the device figures. */
int kvshard__xllm_budget(uint64_t *out, bool *out_has, const kvshard_options *options,
                         kvshard_error *err);

/* Capacity under the options' engine profile. When `rank_blocks` is given,
 * each rank's own block count goes there (xllm: the common one). */
int kvshard__capacity_compute(kvshard__capacity *out, uint64_t *rank_blocks,
                              const kvshard__capacity_inputs *in, kvshard_error *err);

/* The figures of a plan at S_eff = 1 from its T ranks' figures (worked out
 * with every KV layer owned): the largest bytes per token and per block and,
 * with a memory figure, the blocks every rank fits, 0 when the unsplit plan
 * fits none where a split one may. */
kvshard_uniform kvshard__uniform_of(const kvshard_rank_memory *ranks, uint32_t tp,
                                    const kvshard_options *options,
                                    uint64_t unsplit_bytes_per_block, uint64_t memory,
                                    bool has_memory);

#endif /* KVSHARD_PLAN_CAPACITY_H */
