/* The engines' stage and rank rules, looked up by the option that names
 * them: every profile's own, and those of engines without a profile. */
#ifndef KVSHARD_PROFILE_RULES_H
#define KVSHARD_PROFILE_RULES_H

#include "profile/profile.h"

/* The rules whose stage cut is `rule`, or NULL. */
const kvshard_profile__rules *kvshard_rules__of_pp_rule(kvshard_pp_rule rule);

/* The layer counts of `stages` stages (1 <= stages <= layers) cut by
 * `rule` into out[0..stages-1]; EPARTITION for a value that is no rule, or
 * the rule's own refusal. `out` is untouched on failure. */
int kvshard_rules__partition(uint32_t *out, uint32_t layers, uint32_t stages, kvshard_pp_rule rule,
                             kvshard_error *err);

/* The rules whose rank numbering is `layout`; for a value that is none,
 * those of kvshard's default layout. */
const kvshard_profile__rules *kvshard_rules__of_rank_layout(kvshard_rank_layout layout);

#endif /* KVSHARD_PROFILE_RULES_H */
