/* What the writers read of a plan: a read-only view, so that an output
 * file depends on the plan's figures and not on how the plan object keeps
 * them. */
#ifndef KVSHARD_PLAN_VIEW_H
#define KVSHARD_PLAN_VIEW_H

#include "plan/figures.h"
#include "plan/plan.h"

typedef struct kvshard__plan_view {
    const kvshard__model_info *model;
    const char *model_type; /* "" when the config has none */
    const uint8_t *kinds;   /* per decoder layer */
    const int32_t *owner;   /* per decoder layer (a shared-KV layer: its source's owner) */
    const uint8_t *class_of;  /* per decoder layer: its class in model->classes */
    const int32_t *kv_source; /* per decoder layer, or NULL when no layer reads another's */
    const kvshard_options *options; /* settled */
    const kvshard__profile *profile;
    uint32_t tp;
    uint32_t split;
    uint32_t replication;
    kvshard_dtype state_dtype;
    uint32_t pp;          /* P */
    uint32_t ranks_count; /* P x T plan ranks */
    const kvshard_rank_memory *ranks;  /* per plan rank */
    const kvshard__rank_place *place;  /* per plan rank */
    const kvshard__range *stages;      /* P */
    const uint32_t *owned_offsets;     /* P x (S_eff + 1) */
    const uint32_t *owned_layers;
    const uint32_t *owned_counts;      /* P x S_eff */
    const kvshard__capacity *capacity;
    bool has_memory;
    uint64_t memory; /* the budget capacity is counted in (the smallest) */
    const kvshard__device_figures *device;
    const uint64_t *stage_weights; /* P, with the device */
    const uint64_t *stage_budgets; /* P, with the device */
    /* P: each stage's budget where the stages have their own (from the
     * device, or an engine's input one a stage); NULL: `memory` on all. */
    const uint64_t *stage_memory;
    const uint64_t *fill_stages; /* P: the device fill's input a stage; NULL: none */
    const kvshard_uniform *uniform;
    const kvshard__warning *warnings;
    size_t warning_count;
    uint64_t digest;
    uint64_t layout_digest;
    const kvshard_value *inputs; /* the profile's */
    const kvshard_profile__state *state;
    const char *source;       /* where the model was read from */
    const kvshard_plan *plan; /* for kvshard_plan__capacity_at() */
} kvshard__plan_view;

/* The KV layers split rank `k` of stage `stage` owns, and how many. */
static inline const uint32_t *kvshard__view_owned(const kvshard__plan_view *v, uint32_t stage,
                                                  uint32_t k, uint32_t *count)
{
    *count = v->owned_counts[(size_t)stage * v->split + k];
    return v->owned_layers + v->owned_offsets[(size_t)stage * (v->split + 1) + k];
}

/* What the plan's decoder layers keep a sequence: KVSHARD__SEQ_ bits. */
static inline uint32_t kvshard__view_seq_caches(const kvshard__plan_view *v)
{
    return kvshard_kinds__seq_caches(v->kinds, v->model->num_layers);
}

/* The profile's view of the capacity, for its wording. */
static inline kvshard_profile__view kvshard__profile_view(const kvshard__plan_view *v)
{
    kvshard_profile__view pv = {v->options,
                                v->capacity,
                                v->has_memory,
                                v->memory,
                                v->ranks[0].state_bytes_per_seq,
                                v->inputs,
                                v->state,
                                kvshard_validate__planning_version(v->profile, v->inputs),
                                v->stages,
                                v->pp,
                                v->stage_memory,
                                NULL,
                                0,
                                v->fill_stages,
                                kvshard_kinds__seq_noun(kvshard__view_seq_caches(v))};
    if (v->stage_memory && v->pp > 1 && v->capacity->has_binding) {
        pv.binding = &v->ranks[v->capacity->binding_rank];
        pv.binding_stage = v->capacity->binding_rank / v->tp;
    }
    return pv;
}

/* The capacity's figures, for the figure table. */
static inline kvshard__capacity_source kvshard__capacity_source_of(const kvshard__plan_view *v)
{
    kvshard__capacity_source s = {v->options, v->profile, v->capacity, v->has_memory, v->memory,
                                  v->tp,      v->device->used};
    return s;
}

#endif /* KVSHARD_PLAN_VIEW_H */
