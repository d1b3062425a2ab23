/* Planning a deployment, and what comparing and fitting one share with it:
 * running a planning call on the deployment's model and options, and
 * pointing an error about an option at the line that set it. */
#ifndef KVSHARD_PLAN_DEPLOYMENT_H
#define KVSHARD_PLAN_DEPLOYMENT_H

#include "plan/plan.h"

/* A planning call over a model and options (plan, compare). */
typedef int (*kvshard_deployment__call)(void *out, const kvshard_model *model,
                                        const kvshard_options *options,
                                        const kvshard_allocator *allocator,
                                        kvshard_diag__ctx *diag);

/* Run `call` on the deployment's model and options, and point an error
 * about an option at where the option was set. */
int kvshard_deployment__run(kvshard_deployment__call call, void *out,
                            const kvshard_deployment *deployment, kvshard_error *err);

/* Point the error `rc` of a planning call at the line that set the option
 * `diag` says it is about; returns rc. */
int kvshard_deployment__locate(const kvshard_deployment *deployment, int rc,
                               const kvshard_diag__ctx *diag);

#endif /* KVSHARD_PLAN_DEPLOYMENT_H */
