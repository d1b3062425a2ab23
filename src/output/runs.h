/* Long layer maps folded into runs, for the text map and the report: a
 * model of thousands of layers is almost always a short pattern repeated,
 * and a map that prints the pattern once with its count stays readable. */
#ifndef KVSHARD_OUTPUT_RUNS_H
#define KVSHARD_OUTPUT_RUNS_H

#include "plan/view.h"

/* Maps of more layers than this are folded into runs; smaller ones keep
 * one cell per layer. */
#define KVSHARD_RUNS__FOLD_AFTER 200u
/* The longest pattern a run repeats. */
#define KVSHARD_RUNS__MAX_PERIOD 40u

/* `period` consecutive layers from `first`, repeated `repeats` times back
 * to back: the layers first .. first + period x repeats - 1. A run that
 * repeats once is a stretch with no repeat in it. */
typedef struct kvshard_runs__run {
    uint32_t first;
    uint32_t period;
    uint32_t repeats;
} kvshard_runs__run;

/* Two layers draw the same cell: the same kind and, for a KV layer, the
 * same owning split rank. */
bool kvshard_runs__same_cell(const kvshard__plan_view *p, uint32_t a, uint32_t b);

/* The run that starts at layer `first` (below the model's layer count).
 * Among the patterns of 1 to KVSHARD_RUNS__MAX_PERIOD layers that repeat at
 * least twice from `first`, the one covering the most layers (the shortest
 * of equals); without one, up to `literal` layers that hold no repeat. A
 * run stays inside one pipeline stage. */
kvshard_runs__run kvshard_runs__at(const kvshard__plan_view *p, uint32_t first, uint32_t literal);

/* The number of runs the map folds into, with `literal` as above. */
uint32_t kvshard_runs__count(const kvshard__plan_view *p, uint32_t literal);

#endif /* KVSHARD_OUTPUT_RUNS_H */
