/* The public queries on a plan. Every query that returns a status answers
 * KVSHARD_EINVAL for a NULL argument; those that return a figure give 0 (or
 * false) for a NULL plan. */
#include "plan/view.h"

#include "base/abi.h"
#include "base/call.h"

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

kvshard_state_kind kvshard_plan_state_kind(const kvshard_plan *plan)
{
    return plan ? plan->model.state.kind : KVSHARD_STATE_NONE;
}

kvshard_dtype kvshard_plan_state_dtype(const kvshard_plan *plan)
{
    return plan ? plan->state_dtype : KVSHARD_DTYPE_AUTO;
}

int kvshard_plan_layer_kind(kvshard_layer_kind *out, const kvshard_plan *plan, uint32_t layer)
{
    if (!out || !plan)
        return KVSHARD_EINVAL;
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    *out = (kvshard_layer_kind)plan->kinds[layer];
    return KVSHARD_OK;
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

OWNS_ALIGNED bool kvshard_plan_owns(const kvshard_plan *plan, uint32_t tp_rank, uint32_t layer)
{
    if (!plan || tp_rank >= plan->tp || layer >= plan->model.num_layers)
        return false;
    /* Every rank holds a layer held by all (owned by all, or a hybrid
     * layer, whose state is on every rank whoever owns its KV), and the
     * ranks of the split rank that owns it hold the rest;
     * KVSHARD_OWNER_NONE is no split rank. */
    uint32_t held = (uint32_t)plan->held_by[layer];
    return (held == (uint32_t)KVSHARD_OWNER_ALL) | (held == plan->split_rank_of[tp_rank]);
}

bool kvshard_plan_stores_kv(const kvshard_plan *plan, uint32_t tp_rank, uint32_t layer)
{
    if (!plan || tp_rank >= plan->tp || layer >= plan->model.num_layers)
        return false;
    int32_t owner = plan->owner[layer];
    return kvshard_kinds__paged(plan->kinds[layer]) &&
           (owner == KVSHARD_OWNER_ALL || (uint32_t)owner == plan->split_rank_of[tp_rank]);
}

int kvshard_plan_split_position(uint32_t *out_split_rank, uint32_t *out_split_group,
                                const kvshard_plan *plan, uint32_t tp_rank)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    if (out_split_rank)
        *out_split_rank = tp_rank % plan->split;
    if (out_split_group)
        *out_split_group = tp_rank / plan->split;
    return KVSHARD_OK;
}

int kvshard_plan_rank_layers(const uint32_t **out, size_t *out_count, const kvshard_plan *plan,
                             uint32_t tp_rank)
{
    if (!out || !out_count || !plan)
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    uint32_t s = plan->split_rank_of[tp_rank];
    *out = plan->owned_layers + plan->owned_offsets[s];
    *out_count = plan->owned_counts[s];
    return KVSHARD_OK;
}

int kvshard_plan_layer_storage(kvshard_layer_storage *out, const kvshard_plan *plan,
                               uint32_t tp_rank, uint32_t layer)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    kvshard_layer_storage st;
    KVSHARD__INIT_BYTES(st, kvshard_layer_storage, KVSHARD_LAYER_STORAGE_INIT);
    uint8_t kind = plan->kinds[layer], cls = plan->class_of[layer];
    const kvshard__model_info *m = &plan->model;
    const kvshard__class *k = &m->classes[cls];
    uint32_t S = plan->split;
    kvshard__memory_inputs in = kvshard__plan_memory_inputs(plan);
    st.kind = (kvshard_layer_kind)kind;
    st.stores_kv = kvshard_plan_stores_kv(plan, tp_rank, layer);
    st.kv_source = plan->kv_source ? plan->kv_source[layer] : -1;
    st.compress_ratio = k->ratio;
    st.index_key = kvshard__class_has_index(k);
    const kvshard_kinds__row *row = kvshard_kinds__of(kind);
    if (row->state) {
        st.state_slot = (int32_t)plan->state_slot[layer];
        st.state_bytes_per_seq = plan->state_per_layer;
    }
    if (row->paged_kv) {
        int32_t owner = plan->owner[layer];
        uint32_t group = tp_rank / S * S;
        st.owner_tp_rank =
            (int32_t)(owner == KVSHARD_OWNER_ALL ? tp_rank : group + (uint32_t)owner);
    }
    uint32_t first = tp_rank, last = tp_rank;
    if (!st.stores_kv && !row->window)
        return kvshard__copy_out(out, &st, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
    if (st.stores_kv) {
        st.kv_slot = (int32_t)plan->kv_slot[layer];
        if (S > 1) { /* the owner holds its whole group's heads */
            first = tp_rank / S * S;
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
    kvshard__kv_heads(&head_first, &count, heads, plan->tp, first, last);
    st.kv_head_first = count ? head_first : 0;
    st.kv_head_count = count;
    kvshard__cost cost;
    if (kvshard__layer_cost(&cost, &in, cls, sliding ? 0 : count, sliding ? count : 0, NULL) !=
        KVSHARD_OK)
        return KVSHARD_EOVERFLOW; /* not reached: the plan's figures fit */
    st.kv_bytes_per_token = row->window ? cost.entry : cost.per_token;
    st.state_bytes_per_seq += cost.per_seq;
    return kvshard__copy_out(out, &st, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_rank_memory(kvshard_rank_memory *out, const kvshard_plan *plan, uint32_t tp_rank)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    return kvshard__copy_out(out, &plan->ranks[tp_rank], sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                                   : KVSHARD_EINVAL;
}

int kvshard_plan_capacity(kvshard_capacity *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    const kvshard_options *o = &plan->options;
    kvshard_blocks b = kvshard__blocks_of(&plan->cap);
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
                        bool has_memory, uint64_t memory, const char *name)
{
    size_t index = kvshard__capacity_figure_index(name);
    if (index == SIZE_MAX)
        return KVSHARD_EUNKNOWNKEY;
    kvshard__capacity_source src = {&plan->options, plan->profile, c, has_memory, memory};
    kvshard_figure f;
    KVSHARD__INIT_BYTES(f, kvshard_figure, KVSHARD_FIGURE_INIT);
    kvshard__capacity_figure_at(&f, &src, index);
    return kvshard__copy_out(out, &f, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_capacity_figure(kvshard_figure *out, const kvshard_plan *plan, const char *name)
{
    if (!out || !plan || !name)
        return KVSHARD_EINVAL;
    return figure_named(out, plan, &plan->cap, plan->has_memory, plan->memory, name);
}

int kvshard_plan_uniform(kvshard_uniform *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &plan->uniform, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                            : KVSHARD_EINVAL;
}

/* The capacity at a measured budget: the common part of blocks_for and
 * blocks_figure. */
static int capacity_at(kvshard__capacity *out, const kvshard_plan *plan, uint32_t tp_rank,
                       const kvshard_budget *budget, kvshard_error *err)
{
    if (budget->size != sizeof *budget)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_budget and kvshard_blocks: start from their INIT macros");
    if (tp_rank != KVSHARD_ALL_RANKS && tp_rank >= plan->tp)
        return kvshard__fail(err, KVSHARD_ERANK, "", kvshard__no_mark,
                             "TP rank %u is outside 0..%u", tp_rank, plan->tp - 1);
    if (budget->context_length > KVSHARD_MAX_CONTEXT_LENGTH)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "context_length: %u is out of range; expected an integer from 0 to "
                             "%u",
                             budget->context_length, KVSHARD_MAX_CONTEXT_LENGTH);
    if (budget->reserved_bytes >= budget->memory_per_rank)
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "no memory for one block: memory_per_rank %llu bytes, of which %llu "
                             "are reserved",
                             (unsigned long long)budget->memory_per_rank,
                             (unsigned long long)budget->reserved_bytes);
    kvshard__capacity_inputs ci = {&plan->options,
                                   plan->inputs,
                                   plan->ranks,
                                   plan->tp,
                                   plan->split,
                                   plan->unsplit_bytes_per_block,
                                   budget->memory_per_rank - budget->reserved_bytes,
                                   budget->extra_bytes_per_block,
                                   budget->context_length,
                                   tp_rank,
                                   &plan->state,
                                   true,
                                   false};
    kvshard__capacity c;
    memset(&c, 0, sizeof c);
    const char *blame;
    int rc = plan->profile->capacity(&c, NULL, &ci, &blame, err);
    if (rc)
        return rc;
    if (!c.has_num_blocks)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "the plan has no KV bytes per block: memory does not bound its "
                             "blocks");
    *out = c;
    return KVSHARD_OK;
}

int kvshard_plan_blocks_for(kvshard_blocks *out, const kvshard_plan *plan, uint32_t tp_rank,
                            const kvshard_budget *budget, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && plan && budget, "out, plan and budget");
    if (rc)
        return rc;
    if (out->size != sizeof *out)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_budget and kvshard_blocks: start from their INIT macros");
    kvshard__capacity c;
    if ((rc = capacity_at(&c, plan, tp_rank, budget, err)) != 0)
        return rc;
    *out = kvshard__blocks_of(&c);
    return KVSHARD_OK;
}

int kvshard_plan_blocks_figure(kvshard_figure *out, const kvshard_plan *plan, uint32_t tp_rank,
                               const kvshard_budget *budget, const char *name, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && plan && budget && name, "out, plan, budget and name");
    if (rc)
        return rc;
    if (kvshard__capacity_figure_index(name) == SIZE_MAX)
        return kvshard__fail(err, KVSHARD_EUNKNOWNKEY, "", kvshard__no_mark,
                             "unknown capacity figure \"%s\"", name);
    kvshard__capacity c;
    if ((rc = capacity_at(&c, plan, tp_rank, budget, err)) != 0)
        return rc;
    rc = figure_named(out, plan, &c, true, budget->memory_per_rank - budget->reserved_bytes,
                      name);
    return rc ? kvshard__fail(err, rc, "", kvshard__no_mark, "kvshard_figure: start from "
                                                             "KVSHARD_FIGURE_INIT")
              : KVSHARD_OK;
}

size_t kvshard__engine_figures(kvshard_figure *out, size_t cap, const kvshard__plan_view *v)
{
    if (!v->profile->figures)
        return 0;
    kvshard_profile__figures f = {out, cap, 0};
    kvshard_profile__view pv = kvshard__profile_view(v);
    kvshard_profile__fig_text(&f, "name", v->profile->name);
    kvshard_profile__fig_text(&f, "version", pv.version);
    f.count += v->profile->figures(f.out + f.count, f.cap - f.count, &pv);
    return f.count;
}

size_t kvshard_plan_engine_figure_count(const kvshard_plan *plan)
{
    if (!plan)
        return 0;
    kvshard_figure figures[KVSHARD__MAX_ENGINE_FIGURES];
    kvshard__plan_view v = kvshard__plan_view_of(plan);
    return kvshard__engine_figures(figures, KVSHARD__MAX_ENGINE_FIGURES, &v);
}

int kvshard_plan_engine_figure_at(kvshard_figure *out, const kvshard_plan *plan, size_t index)
{
    if (!out || !plan)
        return KVSHARD_EINVAL;
    kvshard_figure figures[KVSHARD__MAX_ENGINE_FIGURES];
    kvshard__plan_view v = kvshard__plan_view_of(plan);
    size_t n = kvshard__engine_figures(figures, KVSHARD__MAX_ENGINE_FIGURES, &v);
    if (index >= n)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &figures[index], sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                             : KVSHARD_EINVAL;
}

int kvshard_plan_engine_figure(kvshard_figure *out, const kvshard_plan *plan, const char *name)
{
    if (!out || !plan || !name)
        return KVSHARD_EINVAL;
    kvshard_figure figures[KVSHARD__MAX_ENGINE_FIGURES];
    kvshard__plan_view v = kvshard__plan_view_of(plan);
    size_t n = kvshard__engine_figures(figures, KVSHARD__MAX_ENGINE_FIGURES, &v);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(figures[i].name, name) == 0)
            return kvshard__copy_out(out, &figures[i], sizeof *out, sizeof *out)
                       ? KVSHARD_OK
                       : KVSHARD_EINVAL;
    }
    return KVSHARD_EUNKNOWNKEY;
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

int kvshard_plan_describe_rank(char *buf, size_t cap, const kvshard_plan *plan, uint32_t tp_rank)
{
    if (!plan || (!buf && cap))
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    const kvshard_rank_memory *m = &plan->ranks[tp_rank];
    uint32_t s = plan->split_rank_of[tp_rank];
    const uint32_t *layers = plan->owned_layers + plan->owned_offsets[s];
    uint32_t count = plan->owned_counts[s];
    char list[96] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < count && used + 12 < sizeof list - 8; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", i ? " " : "", layers[i]);
    if (used && count > 0 && used + 12 >= sizeof list - 8)
        snprintf(list + used, sizeof list - used, " ...");
    char blocks[48] = "no capacity";
    if (m->has_num_blocks)
        snprintf(blocks, sizeof blocks, "%llu blocks of %u", (unsigned long long)m->num_blocks,
                 plan->options.block_size);
    int n = snprintf(
        buf, cap,
        "kvshard %s: tp_rank %u/%u split rank %u group %u (S_eff %u, %s): KV of %u "
        "layers [%s], %llu B/token + %llu scratch + %llu draft, state %llu B/seq, "
        "%s, layout %016llx",
        KVSHARD_VERSION_STRING, tp_rank, plan->tp, s, tp_rank / plan->split, plan->split,
        kvshard_ownership_name(plan->options.ownership), count, list,
        (unsigned long long)m->kv_bytes_per_token, (unsigned long long)m->scratch_bytes_per_token,
        (unsigned long long)m->draft_bytes_per_token, (unsigned long long)m->state_bytes_per_seq,
        blocks, (unsigned long long)plan->layout_digest);
    return n < 0 ? KVSHARD_EINVAL : n;
}

kvshard__plan_view kvshard__plan_view_of(const kvshard_plan *p)
{
    kvshard__plan_view v = {&p->model,       p->model_type,   p->kinds,
                            p->owner,        p->class_of,     p->kv_source,
                            &p->options,     p->profile,
                            p->tp,           p->split,        p->replication,
                            p->state_dtype,  p->ranks,        p->split_rank_of,
                            p->owned_offsets, p->owned_layers, p->owned_counts,
                            &p->cap,         p->has_memory,   p->memory,
                            &p->uniform,     p->warnings,     p->warning_count,
                            p->digest,       p->layout_digest,
                            p->inputs,       &p->state};
    return v;
}
