/* Layer partitions over pipeline stages. The stages are contiguous ranges in
 * layer order; layer kinds play no part in the cut. */
#include "plan/partition.h"

#include <string.h>

int kvshard_partition__by_rule(uint32_t *out, uint32_t num_layers, uint32_t pp,
                               kvshard_pp_rule rule, kvshard_error *err)
{
    if (pp == 0)
        return kvshard__fail(err, KVSHARD_EPARALLEL, "", kvshard__no_mark,
                             "pp_size is 0; it must be at least 1");
    if (pp > num_layers)
        return kvshard__fail(err, KVSHARD_EPPLAYERS, "", kvshard__no_mark,
                             "pp_size %u is above the model's %u decoder layers: every stage "
                             "holds at least one",
                             pp, num_layers);
    uint32_t q = num_layers / pp, r = num_layers % pp;
    if (rule != KVSHARD_PP_RULE_VLLM && rule != KVSHARD_PP_RULE_SGLANG &&
        rule != KVSHARD_PP_RULE_TRTLLM && rule != KVSHARD_PP_RULE_EVEN)
        return kvshard__fail(err, KVSHARD_EPARTITION, "", kvshard__no_mark,
                             "pp_partition_rule %d is not a rule (vllm, sglang, trtllm or even)",
                             (int)rule);
    if (rule == KVSHARD_PP_RULE_EVEN && r != 0)
        return kvshard__fail(err, KVSHARD_EPARTITION, "", kvshard__no_mark,
                             "pp_partition_rule even needs pp_size to divide the %u decoder "
                             "layers, and %u does not",
                             num_layers, pp);
    for (uint32_t s = 0; s < pp; s++)
        out[s] = q;
    /* vLLM gives the extras walking back from the second-to-last stage, so
     * that the last (head and draft layers) and the first (embedding) get
     * one only when every other stage has. */
    for (uint32_t k = 0; k < r; k++) {
        uint32_t s = rule == KVSHARD_PP_RULE_VLLM     ? pp - 2 - k
                     : rule == KVSHARD_PP_RULE_SGLANG ? pp - r + k
                                                      : k;
        out[s]++;
    }
    return KVSHARD_OK;
}

int kvshard_partition__check(const uint32_t *counts, uint32_t count, uint32_t num_layers,
                             uint32_t pp, kvshard_error *err)
{
    if (count != pp)
        return kvshard__fail(err, KVSHARD_EPARTITION, "", kvshard__no_mark,
                             "pp_partition has %u entr%s; pp_size is %u", count,
                             count == 1 ? "y" : "ies", pp);
    uint64_t sum = 0;
    for (uint32_t s = 0; s < count; s++) {
        if (counts[s] == 0)
            return kvshard__fail(err, KVSHARD_EPARTITION, "", kvshard__no_mark,
                                 "pp_partition[%u] is 0; every stage holds at least one layer",
                                 s);
        sum += counts[s];
    }
    if (sum != num_layers)
        return kvshard__fail(err, KVSHARD_EPARTITION, "", kvshard__no_mark,
                             "pp_partition sums to %llu layers; the model has %u",
                             (unsigned long long)sum, num_layers);
    return KVSHARD_OK;
}

const char *const kvshard_partition__about[] = {"pp_partition", "pp_partition_rule", "pp_size",
                                                NULL};

int kvshard_partition__of(uint32_t *out, const kvshard_options *options, uint32_t num_layers,
                          kvshard_diag__ctx *diag)
{
    static const char *const stages[] = {"pp_size", NULL};
    uint32_t pp = options->pp_size;
    if (pp > num_layers)
        return kvshard_diag__fail(diag, stages, KVSHARD_EPPLAYERS,
                                  "pp_size %u is above the model's %u decoder layers: every "
                                  "stage holds at least one",
                                  pp, num_layers);
    int rc =
        options->pp_partition_count == 0
            ? kvshard_partition__by_rule(out, num_layers, pp, options->pp_partition_rule, diag->err)
            : kvshard_partition__check(options->pp_partition, options->pp_partition_count,
                                       num_layers, pp, diag->err);
    if (rc)
        diag->among = kvshard_partition__about;
    else if (options->pp_partition_count > 0)
        memcpy(out, options->pp_partition, pp * sizeof *out);
    return rc;
}

/* ---- the global rank layout: one stride per coordinate (a mixed-radix number) ---- */

kvshard__strides kvshard__rank_strides(const kvshard_options *o, uint32_t tp)
{
    uint64_t D = o->dp_size, P = o->pp_size ? o->pp_size : 1, C = o->cp_size, T = tp;
    kvshard__strides s;
    switch (o->rank_layout) {
    case KVSHARD_RANK_LAYOUT_SGLANG: /* pp, dp, cp, tp */
        s.tp = 1;
        s.cp = T;
        s.dp = C * T;
        s.pp = D * C * T;
        break;
    case KVSHARD_RANK_LAYOUT_TRTLLM: /* pp, dp, tp, cp */
        s.cp = 1;
        s.tp = C;
        s.dp = T * C;
        s.pp = D * T * C;
        break;
    case KVSHARD_RANK_LAYOUT_VLLM: /* dp, pp, cp, tp */
    case KVSHARD_RANK_LAYOUT_XLLM: /* dp, cp, tp: the same with P = 1 */
    default:
        s.tp = 1;
        s.cp = T;
        s.pp = C * T;
        s.dp = P * C * T;
        break;
    }
    return s;
}
