/* A plan's digests (digest.c). */
#ifndef KVSHARD_PLAN_DIGEST_H
#define KVSHARD_PLAN_DIGEST_H

#include "plan/plan.h"

/* The layout digest and the plan digest of a finished plan. */
void kvshard_digest__compute_digests(kvshard_plan *p);

#endif /* KVSHARD_PLAN_DIGEST_H */
