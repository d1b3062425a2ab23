/* The engines' stage and rank rules: the profiles carry their engines'
 * own, and this table kvshard's even cut. */
#include "profile/rules.h"

#include "profile/profiles.h"

/* The same count on every stage, when the stages divide the layers. */
static int even_partition(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err)
{
    if (layers % stages != 0)
        return kvshard_error__fail(err, KVSHARD_EPARTITION, "", kvshard_error__no_mark,
                             "pp_partition_rule even needs pp_size to divide the %u decoder "
                             "layers, and %u does not",
                             layers, stages);
    for (uint32_t s = 0; s < stages; s++)
        counts[s] = layers / stages;
    return KVSHARD_OK;
}

static const kvshard_profile__rules without_profile[] = {
    {KVSHARD_PP_RULE_EVEN, even_partition, NULL, KVSHARD_RANK_LAYOUT_DEFAULT, {0}, false},
};

#define WITHOUT_PROFILE (sizeof without_profile / sizeof without_profile[0])

/* Every engine's rules in turn: the profiles' first, in their order. */
static const kvshard_profile__rules *rules_at(size_t i)
{
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        if ((*p)->rules && i-- == 0)
            return (*p)->rules;
    }
    return i < WITHOUT_PROFILE ? &without_profile[i] : NULL;
}

const kvshard_profile__rules *kvshard_rules__of_pp_rule(kvshard_pp_rule rule)
{
    const kvshard_profile__rules *r;
    for (size_t i = 0; (r = rules_at(i)) != NULL; i++) {
        if (r->partition && r->pp_rule == rule)
            return r;
    }
    return NULL;
}

int kvshard_rules__partition(uint32_t *out, uint32_t layers, uint32_t stages, kvshard_pp_rule rule,
                             kvshard_error *err)
{
    const kvshard_profile__rules *r = kvshard_rules__of_pp_rule(rule);
    if (!r)
        return kvshard_error__fail(err, KVSHARD_EPARTITION, "", kvshard_error__no_mark,
                             "pp_partition_rule %d is not a rule (vllm, sglang, trtllm or even)",
                             (int)rule);
    return r->partition(out, layers, stages, err);
}

const kvshard_profile__rules *kvshard_rules__of_rank_layout(kvshard_rank_layout layout)
{
    const kvshard_profile__rules *r;
    for (size_t i = 0; (r = rules_at(i)) != NULL; i++) {
        if (r->rank_layout != KVSHARD_RANK_LAYOUT_DEFAULT && r->rank_layout == layout)
            return r;
    }
    kvshard_rank_layout fallback = kvshard_profiles__own()->defaults.rank_layout;
    return layout == fallback ? NULL : kvshard_rules__of_rank_layout(fallback);
}
