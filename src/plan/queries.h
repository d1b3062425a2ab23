/* The internal queries of a plan (queries.c), beside the public ones of
 * kvshard.h: the view the writers read and the figures they print. */
#ifndef KVSHARD_PLAN_QUERIES_H
#define KVSHARD_PLAN_QUERIES_H

#include "model/kinds.h"
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

/* Where the TP ranks of a stage hold a layer, by group rather than rank by
 * rank: what kvshard_plan_layer_storage() answers for each rank, in a few
 * figures. Two layers with equal holdings are held alike by every rank, so
 * a caller reads the ranks once per holding rather than once per layer.
 * TP rank t of `stage` keeps the layer's cache (its paged KV, window or
 * draft KV) when `cache` and t is a holder: every rank when owner is
 * KVSHARD_OWNER_ALL, else the ranks with t % split == owner. A holder keeps
 * the KV heads (of `heads`, 0 for MLA) of the `head_ranks` ranks from
 * t / head_ranks x head_ranks. Every rank of the stage keeps the layer's
 * state when `state`. */
typedef struct kvshard__stage_holding {
    uint32_t stage;
    bool cache, state;
    int32_t owner;
    uint32_t split, head_ranks, heads;
} kvshard__stage_holding;

/* The holding of `layer` (drafts included) into *out; KVSHARD_ELAYER for a
 * layer out of range. Of a decoder layer it reads its kind, its owner, its
 * stage and whether the plan keeps its state, nothing else: the transfer
 * map keys layers by those to ask once per key. */
int kvshard_plan__stage_holding(kvshard__stage_holding *out, const kvshard_plan *plan,
                                uint32_t layer);

/* Whether TP rank t holds the cache of a layer held as `h`. */
static inline bool kvshard__stage_holding_has(const kvshard__stage_holding *h, uint32_t t)
{
    return h->cache && (h->owner == KVSHARD_OWNER_ALL || t % h->split == (uint32_t)h->owner);
}

static inline bool kvshard__stage_holding_same(const kvshard__stage_holding *a,
                                               const kvshard__stage_holding *b)
{
    /* The owner first: layers of one stage differ most often by it. */
    return a->owner == b->owner && a->stage == b->stage && a->cache == b->cache &&
           a->state == b->state && a->split == b->split && a->head_ranks == b->head_ranks &&
           a->heads == b->heads;
}

#endif /* KVSHARD_PLAN_QUERIES_H */
