/* The ownership rules. With S_eff split ranks and N_kv KV layers, k a layer's
 * position among the KV layers:
 *   ordinal     k % S_eff (round-robin over the KV layers);
 *   global      layer index % S_eff (upstream xLLM's rule);
 *   contiguous  balanced consecutive ranges: with q = N_kv / S_eff and
 *               m = N_kv % S_eff, split ranks 0..m-1 own q+1 layers each and
 *               the rest q. */
#include "plan/owners.h"

#include <string.h>

void kvshard__owned_counts(uint32_t *counts, const uint8_t *kinds, uint32_t num_layers,
                           uint32_t n_kv, uint32_t split, kvshard_ownership rule)
{
    if (rule == KVSHARD_OWNERSHIP_GLOBAL) {
        memset(counts, 0, split * sizeof *counts);
        kvshard__owner_walk walk;
        kvshard__owner_walk_begin(&walk, n_kv, split, rule);
        for (uint32_t i = 0; i < num_layers; i++) {
            if (kvshard__is_kv_kind(kinds[i]))
                counts[kvshard__owner_next(&walk)]++;
            else
                kvshard__owner_skip(&walk);
        }
        return;
    }
    /* Ordinal and contiguous give the same counts: q+1 to the first m. */
    for (uint32_t s = 0; s < split; s++)
        counts[s] = n_kv / split + (s < n_kv % split);
}
