/* Layer partitions over pipeline stages. The stages are contiguous ranges in
 * layer order; layer kinds play no part in the cut. */
#include "plan/partition.h"

const char *kvshard_partition__rule_name(kvshard__pp_rule rule)
{
    switch (rule) {
    case KVSHARD__PP_VLLM: return "vllm";
    case KVSHARD__PP_SGLANG: return "sglang";
    case KVSHARD__PP_TRTLLM: return "trtllm";
    case KVSHARD__PP_EVEN:
    default: return "even";
    }
}

int kvshard_partition__by_rule(uint32_t *out, uint32_t num_layers, uint32_t pp,
                               kvshard__pp_rule rule, kvshard_error *err)
{
    if (pp == 0)
        return kvshard__fail(err, KVSHARD_EPARALLEL, "", kvshard__no_mark,
                             "pp_size is 0; it must be at least 1");
    if (pp > num_layers)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "pp_size %u is above the model's %u decoder layers: every stage "
                             "holds at least one",
                             pp, num_layers);
    uint32_t q = num_layers / pp, r = num_layers % pp;
    if (rule == KVSHARD__PP_EVEN && r != 0)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "pp_partition: the rule even needs pp_size to divide the %u decoder "
                             "layers, and %u does not",
                             num_layers, pp);
    for (uint32_t s = 0; s < pp; s++)
        out[s] = q;
    /* vLLM gives the extras walking back from the second-to-last stage, so
     * that the last (head and draft layers) and the first (embedding) get
     * one only when every other stage has. */
    for (uint32_t k = 0; k < r; k++) {
        uint32_t s = rule == KVSHARD__PP_VLLM     ? pp - 2 - k
                     : rule == KVSHARD__PP_SGLANG ? pp - r + k
                                                  : k;
        out[s]++;
    }
    return KVSHARD_OK;
}

int kvshard_partition__check(const uint32_t *counts, uint32_t count, uint32_t num_layers,
                             uint32_t pp, kvshard_error *err)
{
    if (count != pp)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "pp_partition has %u entries; pp_size is %u", count, pp);
    uint64_t sum = 0;
    for (uint32_t s = 0; s < count; s++) {
        if (counts[s] == 0)
            return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                                 "pp_partition entry %u is 0; every stage holds at least one "
                                 "layer",
                                 s);
        sum += counts[s];
    }
    if (sum != num_layers)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "pp_partition sums to %llu layers; the model has %u",
                             (unsigned long long)sum, num_layers);
    return KVSHARD_OK;
}
