/* What the writers read of a plan: a read-only view, so that an output
 * file depends on the plan's figures and not on how the plan object keeps
 * them. */
#ifndef KVSHARD_PLAN_VIEW_H
#define KVSHARD_PLAN_VIEW_H

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
    const kvshard_rank_memory *ranks;  /* per TP rank */
    const uint32_t *split_rank_of;     /* per TP rank */
    const uint32_t *owned_offsets;     /* S_eff + 1 */
    const uint32_t *owned_layers;
    const uint32_t *owned_counts;      /* S_eff */
    const kvshard__capacity *capacity;
    bool has_memory;
    uint64_t memory; /* the budget capacity is counted in */
    const kvshard_uniform *uniform;
    const kvshard__warning *warnings;
    size_t warning_count;
    uint64_t digest;
    uint64_t layout_digest;
    const kvshard_value *inputs; /* the profile's */
    const kvshard_profile__state *state;
} kvshard__plan_view;

kvshard__plan_view kvshard__plan_view_of(const kvshard_plan *p);

/* The engine's figures of a plan, as the JSON "engine" object lists them:
 * its name and version, then the profile's, into `out` (at most `cap`);
 * returns how many, 0 under a profile that predicts no engine. They are
 * worked out from what the plan keeps (the profile's state, the capacity),
 * so a plan that no one asks costs nothing for them; text is the plan's. */
size_t kvshard__engine_figures(kvshard_figure *out, size_t cap, const kvshard__plan_view *v);

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
                                kvshard__planning_version(v->profile, v->inputs)};
    return pv;
}

/* The capacity's figures, for the figure table. */
static inline kvshard__capacity_source kvshard__capacity_source_of(const kvshard__plan_view *v)
{
    kvshard__capacity_source s = {v->options, v->profile, v->capacity, v->has_memory, v->memory};
    return s;
}

#endif /* KVSHARD_PLAN_VIEW_H */
