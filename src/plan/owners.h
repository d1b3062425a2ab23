/* Which split rank owns each KV layer: the three ownership rules, as pure
 * functions of the layer kinds, S_eff and the rule. */
#ifndef KVSHARD_PLAN_OWNERS_H
#define KVSHARD_PLAN_OWNERS_H

#include "kvshard/kvshard.h"

/* A layer whose paged KV a split divides: full attention or hybrid. */
static inline bool kvshard__is_kv_kind(uint8_t kind)
{
    return kind == KVSHARD_LAYER_FULL_ATTENTION || kind == KVSHARD_LAYER_HYBRID;
}

/* A layer with a recurrent state: linear or hybrid. */
static inline bool kvshard__is_state_kind(uint8_t kind)
{
    return kind == KVSHARD_LAYER_LINEAR_ATTENTION || kind == KVSHARD_LAYER_HYBRID;
}

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

/* Inline, like the steps: a walk that stays in registers, rather than in
 * memory behind a pointer another file was given, costs no store and
 * reload per layer. */
static inline void kvshard__owner_walk_begin(kvshard__owner_walk *w, uint32_t n_kv, uint32_t split,
                                             kvshard_ownership rule)
{
    w->rule = rule;
    w->split = split;
    w->rank = 0;
    w->q = n_kv / split;
    w->m = n_kv % split;
    w->left = w->q + (w->m > 0 ? 1u : 0u);
    w->layer_rank = 0;
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

/* KV layers each of `split` split ranks owns, for `num_layers` layers of
 * `kinds` of which `n_kv` are KV layers. Only the global rule's counts depend
 * on where the KV layers stand, and only it reads the kinds. */
void kvshard__owned_counts(uint32_t *counts, const uint8_t *kinds, uint32_t num_layers,
                           uint32_t n_kv, uint32_t split, kvshard_ownership rule);

#endif /* KVSHARD_PLAN_OWNERS_H */
