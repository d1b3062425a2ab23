/* The start of a planning call (validate.c): settling the options and the
 * profile's inputs, the budget, and validating options against a model. */
#ifndef KVSHARD_PLAN_VALIDATE_H
#define KVSHARD_PLAN_VALIDATE_H

#include "deploy/settings.h"

/* A planning call's settled inputs: the options with the profile's
 * defaults, the profile and its inputs. */
typedef struct kvshard__planning {
    kvshard_options options; /* settled; `settings` is NULL once resolved */
    kvshard_options given;   /* as the caller gave them, unset fields unset */
    const kvshard__profile *profile;
    kvshard_value inputs[KVSHARD__MAX_PROFILE_INPUTS];
    uint64_t inputs_set; /* bit (1 << index) per input a setting gives */
    const char *ignored[KVSHARD__MAX_PROFILE_INPUTS]; /* settings the profile does not read */
    size_t ignored_count;
    kvshard_profile__state state; /* the profile's, once settled */
    /* The device's fill of the profile's fill input, one a stage (the
     * stage's weights and the reserve) when it holds sizes a stage; 0: the
     * input's own value. */
    uint32_t fill_stage_count;
    uint64_t fill_stages[KVSHARD_MAX_PP_PARTITION];
} kvshard__planning;

/* The start of a plan or comparison call: reset `diag`, refuse
 * missing arguments, a half-set allocator and options out of range, and
 * settle the profile's defaults and inputs into *out. */
int kvshard_validate__begin_planning(kvshard__planning *out, bool args_ok,
                                     const kvshard_options *options,
                                     const kvshard_allocator *allocator, kvshard_diag__ctx *diag);

/* Settle the profile's inputs into the planning's options and state (the
 * profile's settle hook), before validation. */
/* (Callers map the device inputs onto the profile's first:
 * kvshard_device__map().) */
int kvshard_validate__planning_settle(kvshard__planning *pl, const kvshard_model *model,
                             kvshard_diag__ctx *diag);

/* The engine version a planning call names, as given or the profile's
 * default; NULL for a profile without versions. */
const char *kvshard_validate__planning_version(const kvshard__profile *profile,
                                               const kvshard_value *inputs);

/* The profile's view of a model under settled options. */
kvshard_profile__ctx kvshard_validate__profile_ctx(const kvshard__planning *pl,
                                                   const kvshard_model *model, uint32_t tp,
                                                   uint32_t split);

/* Validate settled options against a model: T and S_eff into the outputs,
 * and the layers of each of the pp_size stages into stage_counts (pp_size
 * entries), or the first error (EWORLD, EPROFILE, EPPLAYERS, EPARTITION,
 * EPPSOURCE, ESPLIT, ESPLITCP, EKVHEADS, EQHEADS, ELINEARHEADS, ELIMIT),
 * with `diag` naming the option or options it is about. */
int kvshard_plan__validate(uint32_t *out_tp, uint32_t *out_split, uint32_t *stage_counts,
                           const kvshard_model *model, const kvshard__planning *pl,
                           kvshard_diag__ctx *diag);

/* The budget of a planning call (memory_per_rank, or the profile's own
 * figures); *has false when there is none. */
int kvshard_validate__planning_budget(uint64_t *out, bool *has, const kvshard__planning *pl,
                             const kvshard_model *model, uint32_t tp, uint32_t split,
                             kvshard_diag__ctx *diag);

#endif /* KVSHARD_PLAN_VALIDATE_H */
