/* A plan's warnings (warnings.c), worked out from figures a plan and a
 * comparison row share. */
#ifndef KVSHARD_PLAN_WARNINGS_H
#define KVSHARD_PLAN_WARNINGS_H

#include "plan/plan.h"

/* What the warnings are worked out from, so that a comparison row gets the
 * same ones as its plan. */
typedef struct kvshard__warning_inputs {
    const kvshard__planning *planning;
    uint32_t split;
    uint32_t replication;
    uint32_t n_kv;
    const uint32_t *owned_counts; /* `split` entries */
    const kvshard__capacity *capacity;
    bool has_memory;
    uint64_t memory;
    uint64_t state_bytes_per_seq;
    /* The stages: P ranges, their ranks' figures (P x T) and `owned_counts`
     * holding P rows of `split` entries. */
    uint32_t stages;
    const kvshard__range *ranges;
    const kvshard_rank_memory *ranks;
    uint32_t tp;
    uint32_t draft_layers; /* draft layers speculation counts, on the last stage */
    const kvshard__device_figures *device; /* what the device inputs gave */
    uint32_t max_position_embeddings;      /* the model's; 0 when its config gives none */
    const char *seq_noun; /* what state_bytes_per_seq keeps: kvshard_kinds__seq_noun */
} kvshard__warning_inputs;

typedef kvshard_profile__warn_fn kvshard__warning_sink;

/* Each warning, in code order, to `sink`. */
void kvshard_warnings__collect_warnings(const kvshard__warning_inputs *in,
                                        kvshard__warning_sink sink, void *ctx);

#endif /* KVSHARD_PLAN_WARNINGS_H */
