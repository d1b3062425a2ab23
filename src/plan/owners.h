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

/* Owner split rank of the KV layer with KV ordinal `k` at index `layer`, of
 * `n_kv` KV layers, under `rule` with S_eff = `split` > 1. */
uint32_t kvshard__owner_of(uint32_t k, uint32_t layer, uint32_t n_kv, uint32_t split,
                           kvshard_ownership rule);

/* KV layers each of `split` split ranks owns. `kv_layers` lists the KV layer
 * indices in order (read only by the global rule). */
void kvshard__owned_counts(uint32_t *counts, const uint32_t *kv_layers, uint32_t n_kv,
                           uint32_t split, kvshard_ownership rule);

#endif /* KVSHARD_PLAN_OWNERS_H */
