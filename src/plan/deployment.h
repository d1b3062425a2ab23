/* Planning a deployment, and what comparing and fitting one share with it:
 * pointing an error about an option at the line that set it. */
#ifndef KVSHARD_PLAN_DEPLOYMENT_H
#define KVSHARD_PLAN_DEPLOYMENT_H

#include "plan/plan.h"

/* Point the error `rc` of a planning call at the line that set the option
 * `diag` says it is about; returns rc. */
int kvshard_deployment__locate(const kvshard_deployment *deployment, int rc,
                               const kvshard_diag__ctx *diag);

/* Plan `p`'s comm inputs (p->comm) checked, and the warnings they alone
 * decide added to it: a prefix hit that is the whole prompt, a custom link
 * or accelerator without its figures, selected rows of a model without an
 * indexer are refused, naming the option in `diag`. */
int kvshard_deployment__check_comm(kvshard_plan *p, kvshard_diag__ctx *diag);

/* Comm inputs `comm` given to plan `p` of `model`, checked
 * (kvshard_deployment__check_comm): a split plan's estimate compares
 * against the same plan unsplit (comm_reference). */
int kvshard_deployment__attach_comm(kvshard_plan *p, const kvshard__comm_inputs *comm,
                                    const kvshard_model *model, kvshard_diag__ctx *diag);

/* Whether plan `p` has a source of its weights (weights_total,
 * weights_per_rank or the model's safetensors files): the decode base step
 * reads them. */
bool kvshard_deployment__weights_given(const kvshard_plan *p);

/* Whether the deployment was given any comm input, in its file or as a
 * flag: only then are its plans, comparisons and fits priced. */
bool kvshard_deployment__comm_given(const kvshard_deployment *deployment);

/* Its comm inputs as the estimate reads them, with whether a link latency
 * was given (0 is one). */
kvshard__comm_inputs kvshard_deployment__comm_inputs(const kvshard_deployment *deployment);

#endif /* KVSHARD_PLAN_DEPLOYMENT_H */
