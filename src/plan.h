/* The plan object, shared by planning, memory, output and comparison. */
#ifndef KVSHARD_PLAN_H
#define KVSHARD_PLAN_H

#include "internal.h"

#define KVS_MAX_WARNINGS 8
#define KVS_WARNING_MESSAGE_MAX 200

typedef struct kvs_warning {
    kvshard_warning_code code;
    char message[KVS_WARNING_MESSAGE_MAX];
} kvs_warning;

struct kvshard_plan {
    kvshard_allocator alloc;
    kvs_model_info model;
    char *model_type;
    uint8_t *kinds;   /* kvshard_layer_kind per decoder layer */
    int32_t *owner;   /* split rank per decoder layer, or KVSHARD_OWNER_ALL */
    kvshard_options options;
    uint32_t tp;          /* T */
    uint32_t split;       /* S_eff */
    uint32_t replication; /* R */
    uint32_t *split_rank_of;  /* per TP rank: tp_rank % S_eff, so owns() needs no division */
    uint32_t *owned_offsets;  /* S_eff + 1 offsets into owned_layers */
    uint32_t *owned_layers;   /* full-attention layers, grouped by owning split rank */
    kvshard_rank_memory *ranks; /* per TP rank */
    kvshard_capacity capacity;
    kvshard_uniform uniform;
    kvs_warning warnings[KVS_MAX_WARNINGS];
    size_t warning_count;
    uint64_t digest;
};

/* SPEC §5: fill plan->ranks, capacity and uniform from the ownership map.
 * An overflow caused by the model's dimensions names `model_source`; one
 * scaled by block_size, and every capacity error, names no source, so that
 * a deployment can point at its option. */
int kvs_plan_memory(kvshard_plan *plan, const char *model_source, kvshard_error *err);

/* Blocks each rank fits into `memory` bytes; min over ranks into *out.
 * *out_has is false when no rank has KV bytes per block. When `ranks_out` is
 * given, each rank's figures with its block count are written there. */
int kvs_plan_blocks_for(uint64_t *out, bool *out_has, kvshard_rank_memory *ranks_out,
                        const kvshard_plan *plan, uint64_t memory, kvshard_error *err);

/* Owned full-attention layers of one split rank. */
static inline uint32_t kvs_plan_owned_count(const kvshard_plan *plan, uint32_t split_rank)
{
    return plan->owned_offsets[split_rank + 1] - plan->owned_offsets[split_rank];
}

#endif /* KVSHARD_PLAN_H */
