/* Which split rank owns each KV layer: the three ownership rules, as pure
 * functions of the layer kinds over a range of layers, S_eff and the rule.
 * KV layers are numbered within the range (a pipeline stage numbers its
 * own); the global rule reads the layer's index in the whole model. */
#ifndef KVSHARD_PLAN_OWNERS_H
#define KVSHARD_PLAN_OWNERS_H

#include "model/model.h"

/* The owner split rank of each KV layer, in layer order, without a division
 * per layer. After kvshard__owner_walk_begin(), call kvshard__owner_next()
 * for each KV layer and kvshard__owner_skip() for every other layer, in
 * order; `split` (S_eff) is at least 1. */
typedef struct kvshard__owner_walk {
    kvshard_ownership rule;
    uint32_t split;
    uint32_t rank;       /* ordinal, contiguous: the next KV layer's owner */
    uint32_t left;       /* contiguous: KV layers left in the current range */
    uint32_t q, m;       /* contiguous: ranges of q layers, the first m of q + 1 */
    uint32_t layer_rank; /* global: the current layer index % split */
} kvshard__owner_walk;

/* Inline, like the steps, so a walk over many layers stays cheap (see
 * docs/performance.md). */
static inline void kvshard__owner_walk_begin(kvshard__owner_walk *w, const kvshard__range *layers,
                                             uint32_t split, kvshard_ownership rule)
{
    w->rule = rule;
    w->split = split;
    w->rank = 0;
    w->q = layers->num_kv / split;
    w->m = layers->num_kv % split;
    w->left = w->q + (w->m > 0 ? 1u : 0u);
    w->layer_rank = layers->first % split;
}

static inline void kvshard__owner_skip(kvshard__owner_walk *w)
{
    if (++w->layer_rank == w->split)
        w->layer_rank = 0;
}

static inline uint32_t kvshard__owner_next(kvshard__owner_walk *w)
{
    uint32_t s;
    switch (w->rule) {
    case KVSHARD_OWNERSHIP_GLOBAL: s = w->layer_rank; break;
    case KVSHARD_OWNERSHIP_CONTIGUOUS:
        /* Ranges of 0 layers (q = 0) are passed over; no more than n_kv
         * calls are made, so the walk never passes the last rank. */
        while (w->left == 0) {
            w->rank++;
            w->left = w->q + (w->rank < w->m ? 1u : 0u);
        }
        s = w->rank;
        w->left--;
        break;
    case KVSHARD_OWNERSHIP_ORDINAL:
    default:
        s = w->rank;
        if (++w->rank == w->split)
            w->rank = 0;
        break;
    }
    kvshard__owner_skip(w);
    return s;
}

/* KV layers each of `split` split ranks owns among `layers` of a model with
 * `kinds`, into counts[split], and, when `by_class` is given, per class
 * into by_class[s * classes + c] (`class_of` the layers' classes). Only the
 * global rule's totals depend on where the KV layers stand; the counts by
 * class do whenever the range has KV layers of more than one class. */
void kvshard_owners__owned_counts(uint32_t *counts, uint32_t *by_class, const uint8_t *kinds,
                           const uint8_t *class_of, uint32_t classes, const kvshard__range *layers,
                           uint32_t split, kvshard_ownership rule);

/* Where the owners of a range of layers go: per layer of the model (the
 * range's entries are written) its owner split rank (or KVSHARD_OWNER_ALL,
 * KVSHARD_OWNER_NONE), the rank that holds it (`held_by`, which is `owner`
 * itself unless some layer keeps a state every rank holds beside split
 * KV), its slot in its owner's list and among the state layers; per split
 * rank its list of KV layers (`offsets` S_eff + 1, `counts` S_eff,
 * `layers` the range's KV layers). */
typedef struct kvshard__owners {
    int32_t *owner;
    int32_t *held_by;
    uint32_t *kv_slot;
    uint32_t *state_slot;
    uint32_t *offsets;
    uint32_t *counts;
    uint32_t *layers;
} kvshard__owners;

/* Assign the owners of `layers` by `rule` with split size `split`. A layer
 * that reads another's cache (kv_source[i] >= 0 for a kind that keeps none
 * of its own; kv_source NULL when no layer does) holds nothing and reports
 * its source's owner. */
void kvshard_owners__assign_owners(const kvshard__owners *out, const uint8_t *kinds,
                            const int32_t *kv_source, const kvshard__range *layers, uint32_t split,
                            kvshard_ownership rule);

#endif /* KVSHARD_PLAN_OWNERS_H */
