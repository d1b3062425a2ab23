/* The public queries on a plan. Every query that returns a status answers
 * KVSHARD_EINVAL for a NULL argument; those that return a figure give 0 (or
 * false) for a NULL plan. */
#include "plan/queries.h"

#include "base/abi.h"
#include "base/call.h"
#include "profile/capacity.h"

#include <stdio.h>
#include <string.h>

int kvshard_plan_options(kvshard_options *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    /* The settings were resolved into the plan's inputs: none is borrowed. */
    return kvshard__copy_out(out, &plan->options, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                            : KVSHARD_EINVAL;
}

uint32_t kvshard_plan_attn_tp_size(const kvshard_plan *plan)
{
    return plan ? plan->tp : 0;
}

uint32_t kvshard_plan_effective_split_size(const kvshard_plan *plan)
{
    return plan ? plan->split : 0;
}

uint32_t kvshard_plan_replication_factor(const kvshard_plan *plan)
{
    return plan ? plan->replication : 0;
}

uint32_t kvshard_plan_num_layers(const kvshard_plan *plan)
{
    return plan ? plan->model.num_layers : 0;
}

int kvshard_plan_model(kvshard_plan_model_info *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    kvshard_plan_model_info info = KVSHARD_PLAN_MODEL_INFO_INIT;
    info.num_draft_layers = plan->model.num_draft_layers;
    info.state_kind = plan->model.state.kind;
    info.state_dtype = plan->state_dtype;
    return kvshard__copy_out(out, &info, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_layer_owner(int32_t *out, const kvshard_plan *plan, uint32_t layer)
{
    if (!out || !plan)
        return KVSHARD_EINVAL;
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    *out = plan->owner[layer];
    return KVSHARD_OK;
}

/* kvshard_plan_owns() runs per layer and rank in an engine's loops: its
 * layout is docs/performance.md's ("How the hot paths are laid out"). */
#if defined(__GNUC__)
#define OWNS_ALIGNED __attribute__((aligned(64)))
#else
#define OWNS_ALIGNED
#endif

OWNS_ALIGNED bool kvshard_plan_owns(const kvshard_plan *plan, uint32_t plan_rank, uint32_t layer)
{
    if (!plan || plan_rank >= plan->ranks_count || layer >= plan->model.num_layers)
        return false;
    /* Every rank of the layer's stage holds a layer held by all (owned by
     * all, or a hybrid layer, whose state is on every rank whoever owns its
     * KV), and the ranks of the split rank that owns it hold the rest;
     * KVSHARD_OWNER_NONE matches no rank, nor does another stage's key. */
    uint32_t key = plan->hold_key[layer];
    const kvshard__rank_key *mine = &plan->keys[plan_rank];
    return (key == mine->all) | (key == mine->mine);
}

bool kvshard_plan_stores_kv(const kvshard_plan *plan, uint32_t plan_rank, uint32_t layer)
{
    if (!plan || plan_rank >= plan->ranks_count || layer >= plan->model.num_layers)
        return false;
    const kvshard__rank_place *place = &plan->place[plan_rank];
    int32_t owner = plan->owner[layer];
    return layer - place->first < place->count && kvshard_kinds__paged(plan->kinds[layer]) &&
           (owner == KVSHARD_OWNER_ALL || (uint32_t)owner == place->split_rank);
}

int kvshard_plan_split_position(uint32_t *out_split_rank, uint32_t *out_split_group,
                                const kvshard_plan *plan, uint32_t plan_rank)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (plan_rank >= plan->ranks_count)
        return KVSHARD_ERANK;
    if (out_split_rank)
        *out_split_rank = plan->place[plan_rank].split_rank;
    if (out_split_group)
        *out_split_group = plan_rank % plan->tp / plan->split;
    return KVSHARD_OK;
}

int kvshard_plan_rank_layers(const uint32_t **out, size_t *out_count, const kvshard_plan *plan,
                             uint32_t plan_rank)
{
    if (!out || !out_count || !plan)
        return KVSHARD_EINVAL;
    if (plan_rank >= plan->ranks_count)
        return KVSHARD_ERANK;
    uint32_t count;
    *out = kvshard__plan_owned(plan, plan_rank, &count);
    *out_count = count;
    return KVSHARD_OK;
}

/* The storage of draft layer `d` on plan rank `r`: on every rank of the
 * last stage with its own heads, when speculation counts it. */
static int draft_storage(kvshard_layer_storage *st, const kvshard_plan *plan, uint32_t r,
                         uint32_t d, bool with_bytes)
{
    const kvshard__model_info *m = &plan->model;
    uint8_t cls = plan->draft_class[d];
    const kvshard__class *k = &m->classes[cls];
    st->kind = (kvshard_layer_kind)k->kind;
    st->compress_ratio = k->ratio;
    st->index_key = (k->flags & KVSHARD__LAYER_INDEX_KEY) != 0;
    st->stage = plan->pp - 1;
    if (r / plan->tp != plan->pp - 1) {
        st->holding = KVSHARD_HOLDS_NOT_ON_STAGE;
        return KVSHARD_OK;
    }
    if (plan->options.num_speculative_tokens == 0 || !plan->profile->counting.counts_draft_layers)
        return KVSHARD_OK; /* nothing: the draft layer is not counted */
    st->holding = KVSHARD_HOLDS_DRAFT;
    bool sliding = k->kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    uint32_t heads = m->attention != KVSHARD_ATTENTION_GQA ? 0
                     : sliding                             ? m->sliding.heads
                                                           : m->full.heads;
    uint32_t t = r % plan->tp, count = 0, first = 0;
    kvshard_memory__kv_heads(&first, &count, heads, plan->tp, t, t);
    st->kv_head_first = count ? first : 0;
    st->kv_head_count = count;
    if (!with_bytes)
        return KVSHARD_OK;
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
    kvshard__cost cost;
    kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
    if (kvshard_memory__layer_cost(&cost, &in, cls, sliding ? 0 : count, sliding ? count : 0,
                                   &quiet) != KVSHARD_OK)
        return KVSHARD_EOVERFLOW; /* not reached: the plan's figures fit */
    st->kv_bytes_per_token = cost.per_token ? cost.per_token : cost.entry;
    st->state_bytes_per_seq = cost.per_seq;
    return KVSHARD_OK;
}

/* What a rank that holds a layer of its stage holds of it. */
static kvshard_layer_holding holding_of(const kvshard_kinds__row *row, bool stores_kv)
{
    if (row->paged_kv)
        return stores_kv ? KVSHARD_HOLDS_KV : KVSHARD_HOLDS_SCRATCH;
    if (row->reads_source)
        return KVSHARD_HOLDS_SHARED;
    if (row->window)
        return KVSHARD_HOLDS_WINDOW;
    return row->state ? KVSHARD_HOLDS_STATE : KVSHARD_HOLDS_NOTHING;
}

/* The storage of `layer` (in range) on `plan_rank` (in range) into *st,
 * initialised by the caller; its bytes only `with_bytes`, as they cost the
 * layer's memory model. */
static int layer_storage(kvshard_layer_storage *st, const kvshard_plan *plan, uint32_t plan_rank,
                         uint32_t layer, bool with_bytes)
{
    const kvshard__model_info *m = &plan->model;
    uint32_t L = m->num_layers;
    if (layer >= L)
        return draft_storage(st, plan, plan_rank, layer - L, with_bytes);
    uint8_t kind = plan->kinds[layer], cls = plan->class_of[layer];
    const kvshard__class *k = &m->classes[cls];
    uint32_t S = plan->split, T = plan->tp, t = plan_rank % T;
    const kvshard__rank_place *place = &plan->place[plan_rank];
    st->kind = (kvshard_layer_kind)kind;
    st->kv_source = plan->kv_source ? plan->kv_source[layer] : -1;
    st->compress_ratio = k->ratio;
    st->index_key = kvshard__class_has_index(k);
    st->stage = kvshard__plan_stage_of(plan, layer);
    if (layer - place->first >= place->count) {
        st->holding = KVSHARD_HOLDS_NOT_ON_STAGE;
        return KVSHARD_OK;
    }
    st->stores_kv = kvshard_plan_stores_kv(plan, plan_rank, layer);
    const kvshard_kinds__row *row = kvshard_kinds__of(kind);
    st->holding = holding_of(row, st->stores_kv);
    if (row->state) {
        st->state_slot = (int32_t)plan->state_slot[layer];
        st->state_bytes_per_seq = plan->state_per_layer;
    }
    if (row->paged_kv) {
        int32_t owner = plan->owner[layer];
        uint32_t group = plan_rank / S * S; /* a split group lies inside one stage */
        st->owner_plan_rank =
            (int32_t)(owner == KVSHARD_OWNER_ALL ? plan_rank : group + (uint32_t)owner);
    }
    uint32_t first = t, last = t;
    if (!st->stores_kv && !row->window)
        return KVSHARD_OK;
    if (st->stores_kv) {
        st->kv_slot = (int32_t)plan->kv_slot[layer];
        if (S > 1) { /* the owner holds its whole group's heads */
            first = t / S * S;
            last = first + S - 1;
        }
    }
    /* The heads of the layer's own geometry: a sliding layer's, or the full
     * layers' for every other kind. */
    bool sliding = kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    uint32_t heads = m->attention != KVSHARD_ATTENTION_GQA ? 0
                     : sliding                             ? m->sliding.heads
                                                           : m->full.heads;
    uint32_t count = 0, head_first = 0;
    kvshard_memory__kv_heads(&head_first, &count, heads, T, first, last);
    st->kv_head_first = count ? head_first : 0;
    st->kv_head_count = count;
    if (!with_bytes)
        return KVSHARD_OK;
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
    kvshard__cost cost;
    kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
    if (kvshard_memory__layer_cost(&cost, &in, cls, sliding ? 0 : count, sliding ? count : 0,
                                   &quiet) != KVSHARD_OK)
        return KVSHARD_EOVERFLOW; /* not reached: the plan's figures fit */
    st->kv_bytes_per_token = row->window ? cost.entry : cost.per_token;
    st->state_bytes_per_seq += cost.per_seq;
    return KVSHARD_OK;
}

int kvshard_plan_layer_storage(kvshard_layer_storage *out, const kvshard_plan *plan,
                               uint32_t plan_rank, uint32_t layer)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (plan_rank >= plan->ranks_count)
        return KVSHARD_ERANK;
    const kvshard__model_info *m = &plan->model;
    if (layer >= m->num_layers + (plan->draft_class ? m->num_draft_layers : 0))
        return KVSHARD_ELAYER;
    kvshard_layer_storage st;
    KVSHARD__INIT_BYTES(st, kvshard_layer_storage, KVSHARD_LAYER_STORAGE_INIT);
    int rc = layer_storage(&st, plan, plan_rank, layer, true);
    if (rc != KVSHARD_OK)
        return rc;
    return kvshard__copy_out(out, &st, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan__stage_holding(kvshard__stage_holding *out, const kvshard_plan *plan,
                                uint32_t layer)
{
    const kvshard__model_info *m = &plan->model;
    uint32_t L = m->num_layers;
    if (layer >= L + (plan->draft_class ? m->num_draft_layers : 0))
        return KVSHARD_ELAYER;
    /* What layer_storage() and draft_storage() answer rank by rank; the
     * figures a layer does not use are 0, so that layers held alike compare
     * equal. */
    *out = (kvshard__stage_holding){plan->pp - 1, false, false, KVSHARD_OWNER_ALL, 1, 1, 0};
    uint8_t kind = layer < L ? plan->kinds[layer] : m->classes[plan->draft_class[layer - L]].kind;
    bool sliding = kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    uint32_t heads = m->attention != KVSHARD_ATTENTION_GQA ? 0
                     : sliding                             ? m->sliding.heads
                                                           : m->full.heads;
    if (layer >= L) {
        out->cache = plan->options.num_speculative_tokens > 0 &&
                     plan->profile->counting.counts_draft_layers;
        out->heads = out->cache ? heads : 0;
        return KVSHARD_OK;
    }
    const kvshard_kinds__row *row = kvshard_kinds__of(kind);
    int32_t owner = plan->owner[layer];
    out->stage = kvshard__plan_stage_of(plan, layer);
    out->state = row->state && (int32_t)plan->state_slot[layer] >= 0;
    if (row->paged_kv && owner != KVSHARD_OWNER_NONE) {
        /* An owner holds its whole split group's heads. */
        *out = (kvshard__stage_holding){out->stage, true,        out->state, owner,
                                        plan->split, plan->split, heads};
    } else if (!row->paged_kv && !row->reads_source && row->window) {
        out->cache = true;
        out->heads = heads;
    }
    return KVSHARD_OK;
}

int kvshard_plan_rank_memory(kvshard_rank_memory *out, const kvshard_plan *plan, uint32_t plan_rank)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (plan_rank >= plan->ranks_count)
        return KVSHARD_ERANK;
    return kvshard__copy_out(out, &plan->ranks[plan_rank], sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                                   : KVSHARD_EINVAL;
}

int kvshard_plan_capacity(kvshard_capacity *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    const kvshard_options *o = &plan->options;
    kvshard_blocks b = kvshard_plan__blocks_of(&plan->cap);
    kvshard_capacity c;
    KVSHARD__INIT_BYTES(c, kvshard_capacity, KVSHARD_CAPACITY_INIT);
    c.engine = o->engine;
    c.block_size = o->block_size;
    c.memory_per_rank = plan->has_memory ? plan->memory : 0;
    c.max_seqs = (uint32_t)kvshard__max_seqs_of(&plan->cap, o);
    c.has_num_blocks = plan->cap.has_num_blocks;
    c.num_blocks = b.num_blocks;
    c.max_tokens = b.max_tokens;
    c.context_length = o->context_length;
    c.has_concurrency = b.has_concurrency;
    c.concurrency = b.concurrency;
    c.has_balanced_max_seqs = b.has_balanced_max_seqs;
    c.balanced_max_seqs = b.balanced_max_seqs;
    return kvshard__copy_out(out, &c, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

/* A figure of the capacity `c` counted in `memory`, by name. */
static int figure_named(kvshard_figure *out, const kvshard_plan *plan, const kvshard__capacity *c,
                        bool has_memory, uint64_t memory, bool from_device, const char *name)
{
    size_t index = kvshard_figures__capacity_figure_index(name);
    if (index == SIZE_MAX)
        return KVSHARD_EUNKNOWNKEY;
    kvshard__capacity_source src = {&plan->options, plan->profile, c, has_memory, memory,
                                    plan->tp,       from_device};
    kvshard_figure f;
    KVSHARD__INIT_BYTES(f, kvshard_figure, KVSHARD_FIGURE_INIT);
    kvshard_figures__capacity_figure_at(&f, &src, index);
    return kvshard__copy_out(out, &f, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_capacity_figure(kvshard_figure *out, const kvshard_plan *plan, const char *name)
{
    if (!out || !plan || !name)
        return KVSHARD_EINVAL;
    return figure_named(out, plan, &plan->cap, plan->has_memory, plan->memory, plan->device.used,
                        name);
}

int kvshard_plan_uniform(kvshard_uniform *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &plan->uniform, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                            : KVSHARD_EINVAL;
}

/* The capacity inputs of a plan's own figures (its budgets, every rank);
 * callers change what differs. */
static kvshard__capacity_inputs plan_capacity_inputs(const kvshard_plan *plan)
{
    kvshard__capacity_inputs ci = {.options = &plan->options,
                                   .inputs = plan->inputs,
                                   .ranks = plan->ranks,
                                   .num_ranks = plan->ranks_count,
                                   .stage_ranks = plan->tp,
                                   .split = plan->split,
                                   .unsplit_bytes_per_block = plan->unsplit_bytes_per_block,
                                   .memory = plan->budgets.least,
                                   .stage_memory = plan->budgets.stage,
                                   .extra_per_block = 0,
                                   .context_length = plan->options.context_length,
                                   .rank = KVSHARD_ALL_RANKS,
                                   .state = &plan->state,
                                   .has_memory = plan->budgets.has,
                                   .own_budget = plan->budgets.has,
                                   .stages = plan->stages,
                                   .num_stages = plan->pp,
                                   .fill_stages = plan->fill_stages};
    return ci;
}

/* The capacity at a measured budget: the common part of blocks_for and
 * blocks_figure. */
static int capacity_at(kvshard__capacity *out, const kvshard_plan *plan, uint32_t plan_rank,
                       const kvshard_budget *budget, kvshard_error *err)
{
    if (budget->size != sizeof *budget)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "kvshard_budget and kvshard_blocks: start from their INIT macros");
    if (plan_rank != KVSHARD_ALL_RANKS && plan_rank >= plan->ranks_count)
        return kvshard_error__fail(err, KVSHARD_ERANK, "", kvshard_error__no_mark,
                             "plan rank %u is outside 0..%u", plan_rank, plan->ranks_count - 1);
    if (budget->context_length > KVSHARD_MAX_CONTEXT_LENGTH)
        return kvshard_error__fail(err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                             "context_length: %u is out of range; expected an integer from 0 to "
                             "%u",
                             budget->context_length, KVSHARD_MAX_CONTEXT_LENGTH);
    if (budget->reserved_bytes >= budget->memory_per_rank)
        return kvshard_error__fail(err, KVSHARD_ENOBLOCK, "", kvshard_error__no_mark,
                             "no memory for one block: memory_per_rank %llu bytes, of which %llu "
                             "are reserved",
                             (unsigned long long)budget->memory_per_rank,
                             (unsigned long long)budget->reserved_bytes);
    /* The caller's budget for every stage: no stage budgets of the plan's. */
    kvshard__capacity_inputs ci = plan_capacity_inputs(plan);
    ci.memory = budget->memory_per_rank - budget->reserved_bytes;
    ci.stage_memory = NULL;
    ci.extra_per_block = budget->extra_bytes_per_block;
    /* 0 asks at the plan's own length, as max_seqs always is: a caller
     * that gives memory alone gets figures that agree with each other. */
    ci.context_length = budget->context_length ? budget->context_length
                                               : plan->options.context_length;
    ci.rank = plan_rank;
    ci.has_memory = true;
    ci.own_budget = false;
    kvshard__capacity c;
    memset(&c, 0, sizeof c);
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    int rc = plan->profile->hooks.capacity(&c, NULL, &ci, &diag);
    if (rc)
        return rc;
    if (!c.has_num_blocks)
        return kvshard_error__fail(err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                             "the plan has no KV bytes per block: memory does not bound its "
                             "blocks");
    *out = c;
    return KVSHARD_OK;
}

int kvshard_plan_blocks_for(kvshard_blocks *out, const kvshard_plan *plan, uint32_t plan_rank,
                            const kvshard_budget *budget, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && plan && budget, "out, plan and budget");
    if (rc)
        return rc;
    if (out->size != sizeof *out)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "kvshard_budget and kvshard_blocks: start from their INIT macros");
    kvshard__capacity c;
    if ((rc = capacity_at(&c, plan, plan_rank, budget, err)) != 0)
        return rc;
    kvshard_blocks b = kvshard_plan__blocks_of(&c);
    /* The request limit at the plan's own context length: the same
     * capacity's concurrency, counted again when the budget asks at
     * another length. */
    uint32_t length = plan->options.context_length;
    if (length) {
        kvshard__capacity at = c;
        if (budget->context_length && budget->context_length != length) {
            kvshard_budget other = *budget;
            other.context_length = length;
            if ((rc = capacity_at(&at, plan, plan_rank, &other, err)) != 0)
                return rc;
        }
        uint64_t limit = kvshard__max_seqs_of(&at, &plan->options);
        uint64_t seqs = at.concurrency < limit ? at.concurrency : limit;
        b.has_max_seqs = at.has_concurrency;
        b.max_seqs = at.has_concurrency ? (uint32_t)(seqs < UINT32_MAX ? seqs : UINT32_MAX) : 0;
    }
    /* The rows an engine allocates for each state layer: one answer, so
     * that no caller picks max_seqs where the profile sizes its own. */
    if (plan->profile->counting.reserves_max_seqs_state) {
        b.has_state_slots = true;
        b.state_slots = plan->options.max_seqs;
    } else {
        b.has_state_slots = c.has_state_slots;
        b.state_slots = c.has_state_slots ? c.state_slots : 0;
    }
    *out = b;
    return KVSHARD_OK;
}

int kvshard_plan_blocks_figure(kvshard_figure *out, const kvshard_plan *plan, uint32_t plan_rank,
                               const kvshard_budget *budget, const char *name, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && plan && budget && name, "out, plan, budget and name");
    if (rc)
        return rc;
    if (kvshard_figures__capacity_figure_index(name) == SIZE_MAX)
        return kvshard_error__fail(err, KVSHARD_EUNKNOWNKEY, "", kvshard_error__no_mark,
                             "unknown capacity figure \"%s\"", name);
    kvshard__capacity c;
    if ((rc = capacity_at(&c, plan, plan_rank, budget, err)) != 0)
        return rc;
    rc = figure_named(out, plan, &c, true, budget->memory_per_rank - budget->reserved_bytes, false,
                      name);
    return rc ? kvshard_error__fail(err, rc, "", kvshard_error__no_mark,
                                    "kvshard_figure: start from "
                                    "KVSHARD_FIGURE_INIT")
              : KVSHARD_OK;
}

/* The figures into one block with the JSON text of their lists after them:
 * a first pass into a buffer on the stack measures that text, and a
 * second is needed only when it does not fit there. */
static kvshard__engine_figures *make_engine_figures(const kvshard_plan *p)
{
    kvshard__plan_view v = kvshard_plan__view_of(p);
    kvshard_profile__view pv = kvshard__profile_view(&v);
    kvshard_figure probe[KVSHARD__MAX_ENGINE_FIGURES];
    char probe_text[4096];
    kvshard_profile__figures f = {.out = probe,
                                  .cap = KVSHARD__MAX_ENGINE_FIGURES,
                                  .text = probe_text,
                                  .text_cap = sizeof probe_text};
    size_t n = kvshard_figures__engine_figures(&f, p->profile, &pv);
    size_t text = f.text_used;
    kvshard__engine_figures *e =
        kvshard_alloc__bytes(&p->alloc, 1, sizeof *e + n * sizeof e->figures[0] + text);
    if (!e)
        return NULL;
    char *kept_text = (char *)(e->figures + n);
    e->count = n;
    if (text <= sizeof probe_text) {
        memcpy(e->figures, probe, n * sizeof *probe);
        memcpy(kept_text, probe_text, text);
        for (size_t i = 0; i < n; i++) {
            if (e->figures[i].type == KVSHARD_FIGURE_JSON)
                e->figures[i].text_value = kept_text + (e->figures[i].text_value - probe_text);
        }
    } else {
        kvshard_profile__figures kept = {
            .out = e->figures, .cap = n, .text = kept_text, .text_cap = text};
        kvshard_figures__engine_figures(&kept, p->profile, &pv);
    }
    return e;
}

const kvshard__engine_figures *kvshard_queries__engine_figures(const kvshard_plan *plan,
                                                            bool *failed)
{
    *failed = false;
    /* The one field a query writes: the plan itself was made writable. */
    kvshard_plan *p = (kvshard_plan *)(uintptr_t)plan;
    kvshard__engine_figures *e = atomic_load_explicit(&p->engine_figures, memory_order_acquire);
    if (e || !p->profile->hooks.figures)
        return e;
    if ((e = make_engine_figures(p)) == NULL) {
        *failed = true;
        return NULL;
    }
    /* Two threads may both make them: the first kept, the other freed. */
    kvshard__engine_figures *first = NULL;
    if (!atomic_compare_exchange_strong_explicit(&p->engine_figures, &first, e,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        kvshard_alloc__free(&p->alloc, e);
        return first;
    }
    return e;
}

size_t kvshard_plan_engine_figure_count(const kvshard_plan *plan)
{
    bool failed;
    const kvshard__engine_figures *e = plan ? kvshard_queries__engine_figures(plan, &failed) : NULL;
    return e ? e->count : 0;
}

/* The plan's engine figure `index`, or `name` when it is not NULL. */
static int engine_figure(kvshard_figure *out, const kvshard_plan *plan, size_t index,
                         const char *name)
{
    bool failed;
    const kvshard__engine_figures *e = kvshard_queries__engine_figures(plan, &failed);
    if (failed)
        return KVSHARD_ENOMEM;
    size_t n = e ? e->count : 0;
    for (size_t i = 0; name && i < n; i++) {
        if (strcmp(e->figures[i].name, name) == 0)
            index = i;
    }
    if (index >= n)
        return name ? KVSHARD_EUNKNOWNKEY : KVSHARD_EINVAL;
    return kvshard__copy_out(out, &e->figures[index], sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                                : KVSHARD_EINVAL;
}

int kvshard_plan_engine_figure_at(kvshard_figure *out, const kvshard_plan *plan, size_t index)
{
    return out && plan ? engine_figure(out, plan, index, NULL) : KVSHARD_EINVAL;
}

int kvshard_plan_engine_figure(kvshard_figure *out, const kvshard_plan *plan, const char *name)
{
    return out && plan && name ? engine_figure(out, plan, SIZE_MAX, name) : KVSHARD_EINVAL;
}

size_t kvshard_plan_warning_count(const kvshard_plan *plan)
{
    return plan ? plan->warning_count : 0;
}

int kvshard_plan_warning(kvshard_warning_code *out_code, const char **out_message,
                         const kvshard_plan *plan, size_t index)
{
    if (!plan || index >= plan->warning_count)
        return KVSHARD_EINVAL;
    if (out_code)
        *out_code = plan->warnings[index].code;
    if (out_message)
        *out_message = plan->warnings[index].message;
    return KVSHARD_OK;
}

bool kvshard_plan_has_warning(const kvshard_plan *plan, kvshard_warning_code code)
{
    for (size_t i = 0; plan && i < plan->warning_count; i++) {
        if (plan->warnings[i].code == code)
            return true;
    }
    return false;
}

uint64_t kvshard_plan_digest(const kvshard_plan *plan)
{
    return plan ? plan->digest : 0;
}

uint64_t kvshard_plan_layout_digest(const kvshard_plan *plan)
{
    return plan ? plan->layout_digest : 0;
}

/* The rank's log line, with `has_blocks` and `num_blocks` the blocks it
 * names: the plan's, or those the engine agreed from measured memory. */
static int describe(char *buf, size_t cap, const kvshard_plan *plan, uint32_t plan_rank,
                    bool has_blocks, uint64_t num_blocks)
{
    if (!plan || (!buf && cap))
        return KVSHARD_EINVAL;
    if (plan_rank >= plan->ranks_count)
        return KVSHARD_ERANK;
    const kvshard_rank_memory *m = &plan->ranks[plan_rank];
    uint32_t s = plan->place[plan_rank].split_rank, count;
    const uint32_t *layers = kvshard__plan_owned(plan, plan_rank, &count);
    char list[96] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < count && used + 12 < sizeof list - 8; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", i ? " " : "", layers[i]);
    if (used && count > 0 && used + 12 >= sizeof list - 8)
        snprintf(list + used, sizeof list - used, " ...");
    char blocks[48] = "no capacity";
    if (has_blocks)
        snprintf(blocks, sizeof blocks, "%llu blocks of %u", (unsigned long long)num_blocks,
                 plan->options.block_size);
    /* With stages, the rank's stage leads and its TP rank is its stage's. */
    char stage[32] = "";
    if (plan->pp > 1)
        snprintf(stage, sizeof stage, "stage %u/%u ", plan_rank / plan->tp, plan->pp);
    uint32_t t = plan_rank % plan->tp;
    int n = snprintf(
        buf, cap,
        "kvshard %s: %stp_rank %u/%u split rank %u group %u (S_eff %u, %s): KV of %u "
        "layers [%s], %llu B/token + %llu scratch + %llu draft, state %llu B/seq, "
        "%s, layout %016llx",
        KVSHARD_VERSION_STRING, stage, t, plan->tp, s, t / plan->split, plan->split,
        kvshard_ownership_name(plan->options.ownership), count, list,
        (unsigned long long)m->kv_bytes_per_token, (unsigned long long)m->scratch_bytes_per_token,
        (unsigned long long)m->draft_bytes_per_token, (unsigned long long)m->state_bytes_per_seq,
        blocks, (unsigned long long)plan->layout_digest);
    return n < 0 ? KVSHARD_EINVAL : n;
}

int kvshard_plan_describe_rank(char *buf, size_t cap, const kvshard_plan *plan, uint32_t plan_rank)
{
    if (!plan || plan_rank >= plan->ranks_count)
        return describe(buf, cap, plan, plan_rank, false, 0);
    const kvshard_rank_memory *m = &plan->ranks[plan_rank];
    return describe(buf, cap, plan, plan_rank, m->has_num_blocks, m->num_blocks);
}

int kvshard_plan_describe_rank_blocks(char *buf, size_t cap, const kvshard_plan *plan,
                                      uint32_t plan_rank, uint64_t num_blocks)
{
    return describe(buf, cap, plan, plan_rank, true, num_blocks);
}

kvshard__plan_view kvshard_plan__view_of(const kvshard_plan *p)
{
    kvshard__plan_view v = {.model = &p->model,
                            .model_type = p->model_type,
                            .kinds = p->kinds,
                            .owner = p->owner,
                            .class_of = p->class_of,
                            .kv_source = p->kv_source,
                            .options = &p->options,
                            .profile = p->profile,
                            .tp = p->tp,
                            .split = p->split,
                            .replication = p->replication,
                            .state_dtype = p->state_dtype,
                            .pp = p->pp,
                            .ranks_count = p->ranks_count,
                            .ranks = p->ranks,
                            .place = p->place,
                            .stages = p->stages,
                            .owned_offsets = p->owned_offsets,
                            .owned_layers = p->owned_layers,
                            .owned_counts = p->owned_counts,
                            .capacity = &p->cap,
                            .has_memory = p->has_memory,
                            .memory = p->memory,
                            .device = &p->device,
                            .stage_weights = p->stage_weights,
                            .stage_budgets = p->stage_budgets,
                            .stage_memory = p->budgets.stage ? p->stage_budgets : NULL,
                            .fill_stages = p->fill_stages,
                            .uniform = &p->uniform,
                            .warnings = p->warnings,
                            .warning_count = p->warning_count,
                            .digest = p->digest,
                            .layout_digest = p->layout_digest,
                            .inputs = p->inputs,
                            .state = &p->state,
                            .source = p->source,
                            .plan = p};
    return v;
}

int kvshard_plan__capacity_at(kvshard__capacity *out, const kvshard_plan *plan, uint32_t rank,
                              uint32_t context_length)
{
    if (!plan->budgets.has && !plan->profile->counting.sizes_without_budget)
        return KVSHARD_ERANGE;
    kvshard__capacity_inputs ci = plan_capacity_inputs(plan);
    ci.context_length = context_length;
    ci.rank = rank;
    kvshard__capacity c;
    memset(&c, 0, sizeof c);
    kvshard_diag__ctx diag = kvshard_diag__on(NULL);
    int rc = plan->profile->hooks.capacity(&c, NULL, &ci, &diag);
    if (rc == KVSHARD_OK)
        *out = c;
    return rc;
}

/* ---- stages and global ranks --------------------------------------------------------- */

uint32_t kvshard_plan_pp_size(const kvshard_plan *plan)
{
    return plan ? plan->pp : 0;
}

uint32_t kvshard_plan_num_ranks(const kvshard_plan *plan)
{
    return plan ? plan->ranks_count : 0;
}

uint64_t kvshard_queries__rank_state(const kvshard__plan_view *v, uint32_t r)
{
    return (uint64_t)kvshard_queries__stage_info_of(v, r / v->tp).num_state_layers *
           v->plan->state_per_layer;
}

kvshard_stage_info kvshard_queries__stage_info_of(const kvshard__plan_view *v, uint32_t stage)
{
    kvshard_stage_info info;
    KVSHARD__INIT_BYTES(info, kvshard_stage_info, KVSHARD_STAGE_INFO_INIT);
    const kvshard__range *r = &v->stages[stage];
    kvshard__strides strides = kvshard_partition__rank_strides(v->options, v->tp);
    info.stage = stage;
    info.layer_first = r->first;
    info.layer_count = r->count;
    info.num_kv_layers = r->num_kv;
    info.num_state_layers = r->num_state;
    info.num_draft_layers =
        stage + 1 == v->pp ? kvshard__counted_drafts(v->model, v->options, v->profile) : 0;
    info.global_rank_first = (uint32_t)(stage * strides.pp);
    info.global_rank_stride = (uint32_t)strides.tp;
    for (uint32_t t = 0; t < v->tp; t++) {
        const kvshard_rank_memory *m = &v->ranks[(size_t)stage * v->tp + t];
        uint64_t per_token =
            m->kv_bytes_per_token + m->scratch_bytes_per_token + m->draft_bytes_per_token;
        if (per_token > info.bytes_per_token)
            info.bytes_per_token = per_token;
        if (m->state_bytes_per_seq > info.state_bytes_per_seq)
            info.state_bytes_per_seq = m->state_bytes_per_seq;
        if (m->has_num_blocks && (!info.has_num_blocks || m->num_blocks < info.num_blocks)) {
            info.has_num_blocks = true;
            info.num_blocks = m->num_blocks;
        }
    }
    info.binds = v->capacity->has_binding && v->capacity->binding_rank / v->tp == stage;
    return info;
}

int kvshard_plan_stage(kvshard_stage_info *out, const kvshard_plan *plan, uint32_t stage)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (stage >= plan->pp)
        return KVSHARD_ESTAGE;
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_stage_info info = kvshard_queries__stage_info_of(&v, stage);
    return kvshard__copy_out(out, &info, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_layer_stage(uint32_t *out, const kvshard_plan *plan, uint32_t layer)
{
    if (!out || !plan)
        return KVSHARD_EINVAL;
    if (layer >= plan->model.num_layers + plan->model.num_draft_layers)
        return KVSHARD_ELAYER;
    *out = layer < plan->model.num_layers ? kvshard__plan_stage_of(plan, layer) : plan->pp - 1;
    return KVSHARD_OK;
}

int kvshard_plan_pp_partition(char *buf, size_t cap, const kvshard_plan *plan)
{
    if (!plan || (!buf && cap))
        return KVSHARD_EINVAL;
    size_t need = 0;
    if (cap)
        buf[0] = '\0';
    for (uint32_t s = 0; s < plan->pp; s++) {
        /* Like snprintf: what fits is written, and the length is the whole. */
        int n = need < cap ? snprintf(buf + need, cap - need, s ? ",%u" : "%u",
                                      plan->stages[s].count)
                           : snprintf(NULL, 0, s ? ",%u" : "%u", plan->stages[s].count);
        need += (size_t)n;
    }
    return need > INT32_MAX ? KVSHARD_EINVAL : (int)need;
}

int kvshard_plan_locate(kvshard_rank_position *out, const kvshard_plan *plan, uint32_t global_rank)
{
    if (!plan)
        return KVSHARD_EINVAL;
    const kvshard_options *o = &plan->options;
    if (global_rank >= o->world_size)
        return KVSHARD_EGLOBALRANK;
    kvshard__strides st = kvshard_partition__rank_strides(o, plan->tp);
    kvshard_rank_position at;
    KVSHARD__INIT_BYTES(at, kvshard_rank_position, KVSHARD_RANK_POSITION_INIT);
    uint64_t g = global_rank;
    at.global_rank = global_rank;
    at.dp_rank = (uint32_t)(g / st.dp % o->dp_size);
    at.stage = (uint32_t)(g / st.pp % plan->pp);
    at.cp_rank = (uint32_t)(g / st.cp % o->cp_size);
    at.tp_rank = (uint32_t)(g / st.tp % plan->tp);
    at.plan_rank = at.stage * plan->tp + at.tp_rank;
    at.split_group = at.tp_rank / plan->split;
    at.split_rank = at.tp_rank % plan->split;
    return kvshard__copy_out(out, &at, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_global_rank(uint32_t *out, const kvshard_plan *plan, uint32_t dp_rank,
                             uint32_t stage, uint32_t cp_rank, uint32_t tp_rank)
{
    if (!out || !plan)
        return KVSHARD_EINVAL;
    const kvshard_options *o = &plan->options;
    if (stage >= plan->pp)
        return KVSHARD_ESTAGE;
    if (dp_rank >= o->dp_size || cp_rank >= o->cp_size || tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    kvshard__strides st = kvshard_partition__rank_strides(o, plan->tp);
    *out = (uint32_t)(dp_rank * st.dp + stage * st.pp + cp_rank * st.cp + tp_rank * st.tp);
    return KVSHARD_OK;
}
