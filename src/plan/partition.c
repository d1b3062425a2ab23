/* Layer partitions over pipeline stages. The stages are contiguous ranges in
 * layer order; layer kinds play no part in the cut. */
#include "plan/partition.h"

#include "profile/rules.h"

#include <string.h>

int kvshard_partition__by_rule(uint32_t *out, uint32_t num_layers, uint32_t pp,
                               kvshard_pp_rule rule, kvshard_error *err)
{
    if (pp == 0)
        return kvshard_error__fail(err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                             "pp_size is 0; it must be at least 1");
    if (pp > num_layers)
        return kvshard_error__fail(err, KVSHARD_EPPLAYERS, "", kvshard_error__no_mark,
                             "pp_size %u is above the model's %u decoder layers: every stage "
                             "holds at least one",
                             pp, num_layers);
    return kvshard_rules__partition(out, num_layers, pp, rule, err);
}

int kvshard_partition__check(const uint32_t *counts, uint32_t count, uint32_t num_layers,
                             uint32_t pp, kvshard_error *err)
{
    if (count != pp)
        return kvshard_error__fail(err, KVSHARD_EPARTITION, "", kvshard_error__no_mark,
                             "pp_partition has %u entr%s; pp_size is %u", count,
                             count == 1 ? "y" : "ies", pp);
    uint64_t sum = 0;
    for (uint32_t s = 0; s < count; s++) {
        if (counts[s] == 0)
            return kvshard_error__fail(err, KVSHARD_EPARTITION, "", kvshard_error__no_mark,
                                 "pp_partition[%u] is 0; every stage holds at least one layer",
                                 s);
        sum += counts[s];
    }
    if (sum != num_layers)
        return kvshard_error__fail(err, KVSHARD_EPARTITION, "", kvshard_error__no_mark,
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

kvshard__strides kvshard_partition__rank_strides(const kvshard_options *o, uint32_t tp)
{
    const kvshard_profile__rules *r = kvshard_rules__of_rank_layout(o->rank_layout);
    uint64_t sizes[4];
    sizes[KVSHARD_PROFILE__DP] = o->dp_size;
    sizes[KVSHARD_PROFILE__PP] = o->pp_size ? o->pp_size : 1;
    sizes[KVSHARD_PROFILE__CP] = o->cp_size;
    sizes[KVSHARD_PROFILE__TP] = tp;
    uint64_t strides[4], stride = 1;
    /* Innermost first: each coordinate steps over all those inside it. */
    for (int i = 3; i >= 0; i--) {
        strides[r->order[i]] = stride;
        stride *= sizes[r->order[i]];
    }
    kvshard__strides s = {strides[KVSHARD_PROFILE__DP], strides[KVSHARD_PROFILE__PP],
                          strides[KVSHARD_PROFILE__CP], strides[KVSHARD_PROFILE__TP]};
    return s;
}
