/* The internal queries of a plan (queries.c), beside the public ones of
 * kvshard.h: the view the writers read and the figures they print. */
#ifndef KVSHARD_PLAN_QUERIES_H
#define KVSHARD_PLAN_QUERIES_H

#include "plan/view.h"

/* The view the writers read of plan `p`. */
kvshard__plan_view kvshard_plan__view_of(const kvshard_plan *p);

/* Stage `stage` of the plan (in range): what kvshard_plan_stage() answers
 * and the writers print. */
kvshard_stage_info kvshard_queries__stage_info_of(const kvshard__plan_view *v, uint32_t stage);

/* The recurrent state one sequence keeps on plan rank r: one layer's state
 * for each state layer of its stage. The rest of the rank's
 * state_bytes_per_seq is windows (sliding, chunked, compressed, draft). */
uint64_t kvshard_queries__rank_state(const kvshard__plan_view *v, uint32_t r);

/* The plan's engine figures ("name" and "version" first), made on the
 * first call from any thread and kept with the plan; NULL under a profile
 * that predicts no engine, or out of memory (`failed` then true). */
const kvshard__engine_figures *kvshard_queries__engine_figures(const kvshard_plan *plan,
                                                               bool *failed);

/* The plan's capacity counted again as the plan counted it (its budgets,
 * its profile), for plan rank `rank` alone or every rank (KVSHARD_ALL_RANKS),
 * at `context_length` (0: no concurrency figures): the report's figures at
 * other context lengths and each rank's own reserve. KVSHARD_ERANGE without
 * a budget, else the profile's status; *out untouched on failure. */
int kvshard_plan__capacity_at(kvshard__capacity *out, const kvshard_plan *plan, uint32_t rank,
                              uint32_t context_length);

/* Where a TP rank holds a layer: kvshard_plan_layer_storage()'s holding,
 * whether it keeps the layer's state (state_slot >= 0) and its KV heads. */
typedef struct kvshard__rank_holding {
    kvshard_layer_holding holding;
    bool state;
    uint32_t head_first, head_count;
} kvshard__rank_holding;

/* Where every TP rank of `layer`'s stage holds it, into out[0, plan->tp),
 * and that stage into *stage, the layer's facts read once rather than per
 * rank: for callers that read every rank of every layer. KVSHARD_ELAYER
 * for a layer out of range. */
int kvshard_plan__layer_holdings(kvshard__rank_holding *out, uint32_t *stage,
                                 const kvshard_plan *plan, uint32_t layer);

/* What decides where the TP ranks hold a layer: two layers with equal keys
 * get the same answer from kvshard_plan__layer_holdings(), so a caller can
 * read the holdings once per key rather than once per layer. Each draft
 * layer is a key of its own (`draft` is 1 + its index, 0 for a decoder
 * layer). */
typedef struct kvshard__holding_key {
    uint32_t stage, kind, draft;
    int32_t owner;
    bool state;
} kvshard__holding_key;

/* The key of `layer` (in range, drafts included) into *out. */
void kvshard_plan__layer_holding_key(kvshard__holding_key *out, const kvshard_plan *plan,
                                     uint32_t layer);

static inline bool kvshard__holding_key_same(const kvshard__holding_key *a,
                                             const kvshard__holding_key *b)
{
    return a->stage == b->stage && a->kind == b->kind && a->draft == b->draft &&
           a->owner == b->owner && a->state == b->state;
}

#endif /* KVSHARD_PLAN_QUERIES_H */
