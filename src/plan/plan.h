/* The plan object, read by the queries and the output writers. */
#ifndef KVSHARD_PLAN_PLAN_H
#define KVSHARD_PLAN_PLAN_H

#include "plan/memory.h"

#define KVSHARD__MAX_WARNINGS 8
#define KVSHARD__WARNING_MESSAGE_MAX 200

typedef struct kvshard__warning {
    kvshard_warning_code code;
    char message[KVSHARD__WARNING_MESSAGE_MAX];
} kvshard__warning;

struct kvshard_plan {
    kvshard_allocator alloc;
    kvshard__model_info model;
    char *model_type;
    uint8_t *kinds; /* kvshard_layer_kind per decoder layer */
    int32_t *owner; /* split rank per decoder layer, or KVSHARD_OWNER_ALL */
    kvshard_options options;
    uint32_t tp;                /* T */
    uint32_t split;             /* S_eff */
    uint32_t replication;       /* R */
    uint32_t *split_rank_of;    /* per TP rank: tp_rank % S_eff, so owns() needs no division */
    uint32_t *owned_offsets;    /* S_eff + 1 offsets into owned_layers */
    uint32_t *owned_layers;     /* KV layers, grouped by owning split rank */
    uint32_t *owned_counts;     /* S_eff entries: KV layers each split rank owns */
    kvshard_rank_memory *ranks; /* per TP rank */
    kvshard_capacity capacity;
    kvshard_uniform uniform;
    kvshard__warning warnings[KVSHARD__MAX_WARNINGS];
    size_t warning_count;
    uint64_t digest;
};

#endif /* KVSHARD_PLAN_PLAN_H */
