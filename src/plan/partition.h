/* How the L decoder layers are cut into P pipeline stages: the engines'
 * default rules, and the check of a partition given explicitly. */
#ifndef KVSHARD_PLAN_PARTITION_H
#define KVSHARD_PLAN_PARTITION_H

#include "base/error.h"

/* Stages with q + 1 layers (q = L / P, r = L mod P), as each engine cuts. */
typedef enum kvshard__pp_rule {
    KVSHARD__PP_VLLM,   /* r stages back from the second-to-last: never the last */
    KVSHARD__PP_SGLANG, /* the last r stages */
    KVSHARD__PP_TRTLLM, /* the first r stages */
    KVSHARD__PP_EVEN    /* none: P must divide L */
} kvshard__pp_rule;

/* The rule's word (vllm, sglang, trtllm, even). */
const char *kvshard_partition__rule_name(kvshard__pp_rule rule);

/* The layer counts of the P stages into out[0..P-1]. EPARALLEL for P = 0;
 * ERANGE for P above L (every stage holds a layer) and for `even` with P not
 * dividing L, the message naming L and P. `out` is untouched on failure. */
int kvshard_partition__by_rule(uint32_t *out, uint32_t num_layers, uint32_t pp,
                               kvshard__pp_rule rule, kvshard_error *err);

/* An explicit partition of `count` entries: exactly P of them, each at least
 * 1, summing to L; ERANGE naming the length, the entry or the sum. */
int kvshard_partition__check(const uint32_t *counts, uint32_t count, uint32_t num_layers,
                             uint32_t pp, kvshard_error *err);

#endif /* KVSHARD_PLAN_PARTITION_H */
