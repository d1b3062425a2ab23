/* The ownership rules. With S_eff split ranks and N_kv KV layers, k a layer's
 * position among the KV layers:
 *   ordinal     k % S_eff (round-robin over the KV layers);
 *   global      layer index % S_eff (upstream xLLM's rule);
 *   contiguous  balanced consecutive ranges: with q = N_kv / S_eff and
 *               m = N_kv % S_eff, split ranks 0..m-1 own q+1 layers each and
 *               the rest q. */
#include "plan/owners.h"

#include <string.h>

uint32_t kvshard__owner_of(uint32_t k, uint32_t layer, uint32_t n_kv, uint32_t split,
                           kvshard_ownership rule)
{
    switch (rule) {
    case KVSHARD_OWNERSHIP_GLOBAL: return layer % split;
    case KVSHARD_OWNERSHIP_CONTIGUOUS: {
        uint32_t q = n_kv / split, m = n_kv % split;
        uint64_t big = (uint64_t)m * (q + 1); /* layers in the longer ranges */
        return k < big ? k / (q + 1) : m + (uint32_t)((k - big) / q);
    }
    case KVSHARD_OWNERSHIP_ORDINAL:
    default: return k % split;
    }
}

void kvshard__owned_counts(uint32_t *counts, const uint32_t *kv_layers, uint32_t n_kv,
                           uint32_t split, kvshard_ownership rule)
{
    if (rule == KVSHARD_OWNERSHIP_GLOBAL) {
        memset(counts, 0, split * sizeof *counts);
        for (uint32_t k = 0; k < n_kv; k++)
            counts[kv_layers[k] % split]++;
        return;
    }
    /* Ordinal and contiguous give the same counts: q+1 to the first m. */
    for (uint32_t s = 0; s < split; s++)
        counts[s] = n_kv / split + (s < n_kv % split);
}
