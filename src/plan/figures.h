/* A plan's capacity figures by name (figures.c): the one table the JSON
 * capacity object and the figure queries read. */
#ifndef KVSHARD_PLAN_FIGURES_H
#define KVSHARD_PLAN_FIGURES_H

#include "profile/capacity.h"

/* What a plan's capacity figures are read from. */
typedef struct kvshard__capacity_source {
    const kvshard_options *options;
    const kvshard__profile *profile;
    const kvshard__capacity *capacity;
    bool has_memory;
    uint64_t memory;
    uint32_t tp; /* T, to name the binding rank by its stage and TP rank */
    bool from_device; /* `memory` is the smallest budget from the device */
} kvshard__capacity_source;

/* The max_seqs a plan's figures report: the engine's request limit where
 * the profile gives one, else the option. */
static inline uint64_t kvshard__max_seqs_of(const kvshard__capacity *c, const kvshard_options *o)
{
    return c->has_max_seqs ? c->max_seqs : o->max_seqs;
}

/* The fields of the JSON capacity object, in its order. */
size_t kvshard_figures__capacity_figure_count(void);
/* Figure `index` of `src` into *out (its size kept). */
void kvshard_figures__capacity_figure_at(kvshard_figure *out, const kvshard__capacity_source *src,
                                 size_t index);
/* The index of the figure `name`, or SIZE_MAX. */
size_t kvshard_figures__capacity_figure_index(const char *name);

/* A plan's engine figures, the JSON "engine" object's fields: "name" and
 * "version", then the profile's own; how many. */
size_t kvshard_figures__engine_figures(kvshard_profile__figures *f,
                                       const kvshard__profile *profile,
                                       const kvshard_profile__view *view);

#endif /* KVSHARD_PLAN_FIGURES_H */
