/* Pipeline stages: how the L decoder layers are cut into P stages (the
 * engines' rules, and the check of a partition given explicitly), and how
 * global ranks are numbered over stages and TP ranks. */
#ifndef KVSHARD_PLAN_PARTITION_H
#define KVSHARD_PLAN_PARTITION_H

#include "base/diag.h"

/* The layer counts of the P stages by `rule` (an engine's cut, or even)
 * into out[0..P-1]: q = L / P each, the remainder r = L % P spread as the
 * rule's engine spreads it. EPARALLEL for P = 0; EPPLAYERS for P above L
 * (every stage holds a layer); EPARTITION for `even` with P not dividing L
 * or another rule. `out` is untouched on failure. */
int kvshard_partition__by_rule(uint32_t *out, uint32_t num_layers, uint32_t pp,
                               kvshard_pp_rule rule, kvshard_error *err);

/* An explicit partition of `count` entries: exactly P of them, each at least
 * 1, summing to L; EPARTITION naming the length, the entry or the sum. */
int kvshard_partition__check(const uint32_t *counts, uint32_t count, uint32_t num_layers,
                             uint32_t pp, kvshard_error *err);

/* The layer counts of a plan's P stages (settled options: the explicit
 * pp_partition, else the rule's) into out[0..P-1], with the errors above,
 * about pp_size (EPPLAYERS) or the partition. */
int kvshard_partition__of(uint32_t *out, const kvshard_options *options, uint32_t num_layers,
                          kvshard_diag__ctx *diag);

/* The options a partition of the layers into stages comes from, the most
 * specific first: what a failure to cut the layers is about. */
extern const char *const kvshard_partition__about[];

/* The strides of the global rank layout: g = d x dp + p x pp + c x cp +
 * t x tp, for the coordinates of a rank (data-parallel d, stage p,
 * context-parallel c, attention TP t). */
typedef struct kvshard__strides {
    uint64_t dp, pp, cp, tp;
} kvshard__strides;

/* The strides of the plan's rank layout (settled options), T = `tp`. */
kvshard__strides kvshard_partition__rank_strides(const kvshard_options *options, uint32_t tp);

#endif /* KVSHARD_PLAN_PARTITION_H */
