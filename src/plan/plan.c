/* Validation, effective split size and ownership, and the plan's queries. */
#include "plan/plan.h"

#include "base/abi.h"
#include "deploy/options.h"

#include <stdio.h>
#include <string.h>

/* ---- validation ------------------------------------------------------------- */

static bool model_stores_kv(const kvshard__model_info *m, const kvshard_options *o)
{
    return m->num_full + m->num_sliding > 0 ||
           (o->num_speculative_tokens > 0 && m->num_draft_layers > 0);
}

static int check_heads(const kvshard_model *model, uint32_t T, kvshard_error *err)
{
    const kvshard__model_info *m = &model->info;
    if (m->num_linear == 0)
        return KVSHARD_OK;
    const kvshard__key_site *sites[2] = {&model->linear_key_heads_site,
                                         &model->linear_value_heads_site};
    const uint32_t heads[2] = {m->linear_key_heads, m->linear_value_heads};
    for (int i = 0; i < 2; i++) {
        if (sites[i]->key && heads[i] % T != 0)
            return kvshard__fail(
                err, KVSHARD_ELINEARHEADS, model->source, sites[i]->mark,
                "%s %u is not divisible by the attention TP size %u: each rank must "
                "hold a whole number of linear-attention heads",
                sites[i]->key, heads[i], T);
    }
    return KVSHARD_OK;
}

static int validate(uint32_t *out_tp, uint32_t *out_split, const kvshard_model *model,
                    const kvshard_options *o, kvshard_error *err)
{
    int rc = kvshard__options_check(o, err);
    if (rc)
        return rc;
    uint32_t T = kvshard__attn_tp_size(o);
    if (T == 0)
        return kvshard__fail(err, KVSHARD_EWORLD, "", kvshard__no_mark,
                             "world_size %u is not divisible by dp_size %u x cp_size %u = %llu",
                             o->world_size, o->dp_size, o->cp_size,
                             (unsigned long long)o->dp_size * o->cp_size);
    uint32_t S = o->layerwise_split_size;
    uint32_t S_eff = o->enable_layerwise_split && S > 1 && !o->is_draft ? S : 1;
    if (S_eff > 1 && T % S != 0)
        return kvshard__fail(err, KVSHARD_ESPLIT, "", kvshard__no_mark,
                             "layerwise_split_size %u does not divide the attention TP size %u "
                             "(world_size %u / (dp_size %u x cp_size %u))",
                             S, T, o->world_size, o->dp_size, o->cp_size);
    if (S_eff > 1 && o->cp_size > 1)
        return kvshard__fail(err, KVSHARD_ESPLITCP, "", kvshard__no_mark,
                             "layerwise split (layerwise_split_size %u) cannot be combined with "
                             "context parallelism (cp_size %u)",
                             S, o->cp_size);
    const kvshard__model_info *m = &model->info;
    uint32_t H = m->num_kv_heads;
    if (m->attention == KVSHARD_ATTENTION_GQA && model_stores_kv(m, o) && T % H != 0 && H % T != 0)
        return kvshard__fail(
            err, KVSHARD_EKVHEADS, model->source, model->kv_heads_site.mark,
            "%s %u and the attention TP size %u do not divide one another",
            model->kv_heads_site.key ? model->kv_heads_site.key : "num_key_value_heads", H, T);
    if ((rc = check_heads(model, T, err)) != 0)
        return rc;
    *out_tp = T;
    *out_split = S_eff;
    return KVSHARD_OK;
}

/* ---- ownership -------------------------------------------------------------- */

static void assign_owners(kvshard_plan *p)
{
    uint32_t S = p->split;
    uint32_t L = p->model.num_layers;
    bool global = p->options.ownership == KVSHARD_OWNERSHIP_GLOBAL;
    memset(p->owned_offsets, 0, (S + 1) * sizeof *p->owned_offsets);
    uint32_t ordinal = 0;
    for (uint32_t i = 0; i < L; i++) {
        p->owner[i] = KVSHARD_OWNER_ALL;
        if (p->kinds[i] != KVSHARD_LAYER_FULL_ATTENTION)
            continue;
        uint32_t s = S > 1 ? (global ? i : ordinal) % S : 0;
        if (S > 1)
            p->owner[i] = (int32_t)s;
        p->owned_offsets[s + 1]++;
        ordinal++;
    }
    for (uint32_t s = 0; s < S; s++) {
        p->owned_counts[s] = p->owned_offsets[s + 1];
        p->owned_offsets[s + 1] += p->owned_offsets[s];
    }
    /* Fill each split rank's slice in layer order; `next` reuses the rank table. */
    uint32_t *next = p->split_rank_of;
    for (uint32_t s = 0; s < S; s++)
        next[s] = p->owned_offsets[s];
    for (uint32_t i = 0; i < L; i++) {
        if (p->kinds[i] != KVSHARD_LAYER_FULL_ATTENTION)
            continue;
        uint32_t s = p->owner[i] == KVSHARD_OWNER_ALL ? 0 : (uint32_t)p->owner[i];
        p->owned_layers[next[s]++] = i;
    }
    for (uint32_t r = 0; r < p->tp; r++)
        p->split_rank_of[r] = r % S;
}

static void warn(kvshard_plan *p, kvshard_warning_code code, const char *fmt, ...)
    KVSHARD__PRINTF(3, 4);

static void warn(kvshard_plan *p, kvshard_warning_code code, const char *fmt, ...)
{
    if (p->warning_count == KVSHARD__MAX_WARNINGS)
        return;
    kvshard__warning *w = &p->warnings[p->warning_count++];
    w->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
}

static void collect_warnings(kvshard_plan *p)
{
    const kvshard_options *o = &p->options;
    uint32_t S = p->split;
    const char *rule = kvshard_ownership_name(o->ownership);
    if (o->layerwise_split_size > 1 && !o->enable_layerwise_split)
        warn(p, KVSHARD_WARN_SPLIT_DISABLED,
             "layerwise_split_size is %u but enable_layerwise_split is false: every rank stores "
             "every full-attention layer",
             o->layerwise_split_size);
    if (o->enable_layerwise_split && o->layerwise_split_size == 1)
        warn(p, KVSHARD_WARN_SPLIT_SIZE_ONE,
             "enable_layerwise_split is true with layerwise_split_size 1: nothing is split");
    if (S > 1) {
        uint32_t lo = UINT32_MAX, hi = 0, empty = 0, first_empty = 0;
        for (uint32_t s = 0; s < S; s++) {
            uint32_t c = p->owned_counts[s];
            if (c == 0 && empty++ == 0)
                first_empty = s;
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
        }
        if (empty)
            warn(p, KVSHARD_WARN_RANK_OWNS_NOTHING,
                 "%u of %u split ranks own no full-attention layer (the first is split rank %u; "
                 "%u full-attention layers, %s rule)",
                 empty, S, first_empty, p->model.num_full, rule);
        if (hi - lo > 1)
            warn(p, KVSHARD_WARN_IMBALANCED,
                 "split ranks own between %u and %u full-attention layers (%s rule)", lo, hi, rule);
        if (S > p->replication)
            warn(p, KVSHARD_WARN_EXCEEDS_REPLICATION,
                 "layerwise_split_size %u exceeds the replication factor %u: the split saves "
                 "less than %ux, since the owner of a layer holds the KV heads of its whole "
                 "split group",
                 S, p->replication, S);
    }
    if (p->model.num_full == 0)
        warn(p, KVSHARD_WARN_NO_KV_LAYERS,
             "the model has no full-attention layer: there is no KV cache to split");
    if (o->is_draft && o->enable_layerwise_split && o->layerwise_split_size > 1)
        warn(p, KVSHARD_WARN_DRAFT_UNSPLIT,
             "is_draft is true: layerwise split does not apply to a draft model");
}

/* ---- digest ------------------------------------------------------------- */

typedef struct fnv {
    uint64_t h;
} fnv;

static void fnv_u64(fnv *f, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        f->h ^= (v >> (8 * i)) & 0xFF;
        f->h *= 0x100000001b3ULL;
    }
}

static uint64_t compute_digest(const kvshard_plan *p)
{
    fnv f = {0xcbf29ce484222325ULL};
    fnv_u64(&f, p->model.num_layers);
    fnv_u64(&f, p->tp);
    fnv_u64(&f, p->split);
    for (uint32_t i = 0; i < p->model.num_layers; i++)
        fnv_u64(&f, (uint64_t)p->kinds[i] << 32 | (uint32_t)p->owner[i]);
    for (uint32_t r = 0; r < p->tp; r++) {
        const kvshard_rank_memory *m = &p->ranks[r];
        fnv_u64(&f, m->kv_bytes_per_token);
        fnv_u64(&f, m->scratch_bytes_per_token);
        fnv_u64(&f, m->draft_bytes_per_token);
        fnv_u64(&f, m->bytes_per_block);
        fnv_u64(&f, m->state_bytes_per_seq);
        fnv_u64(&f, m->has_num_blocks ? m->num_blocks : UINT64_MAX);
    }
    const kvshard_capacity *c = &p->capacity;
    fnv_u64(&f, c->block_size);
    fnv_u64(&f, c->memory_per_rank);
    fnv_u64(&f, c->max_seqs);
    fnv_u64(&f, c->has_num_blocks ? c->num_blocks : UINT64_MAX);
    fnv_u64(&f, p->uniform.kv_bytes_per_token);
    fnv_u64(&f, p->uniform.bytes_per_block);
    fnv_u64(&f, p->uniform.has_num_blocks ? p->uniform.num_blocks : UINT64_MAX);
    return f.h;
}

/* ---- create and free ---------------------------------------------------- */

void kvshard_plan_free(kvshard_plan *plan)
{
    if (!plan)
        return;
    kvshard_allocator a = plan->alloc;
    kvshard__free(&a, plan->model_type);
    kvshard__free(&a, plan->kinds);
    kvshard__free(&a, plan->owner);
    kvshard__free(&a, plan->split_rank_of);
    kvshard__free(&a, plan->owned_offsets);
    kvshard__free(&a, plan->owned_layers);
    kvshard__free(&a, plan->owned_counts);
    kvshard__free(&a, plan->ranks);
    kvshard__free(&a, plan);
}

int kvshard_plan_create(kvshard_plan **out, const kvshard_model *model,
                        const kvshard_options *options, const kvshard_allocator *allocator,
                        kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!out || !model)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "out and model must not be NULL");
    kvshard_options defaults = KVSHARD_OPTIONS_INIT;
    const kvshard_options *o = options ? options : &defaults;
    uint32_t T = 0, S = 0;
    int rc = validate(&T, &S, model, o, err);
    if (rc)
        return rc;

    kvshard_allocator a = kvshard__allocator_or_default(allocator);
    kvshard_plan *p = kvshard__calloc(&a, 1, sizeof *p);
    if (!p)
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark,
                             "out of memory creating the plan");
    p->alloc = a;
    p->model = model->info;
    p->options = *o;
    p->tp = T;
    p->split = S;
    p->replication = kvshard__replication_factor(&model->info, T);
    uint32_t L = model->info.num_layers;
    p->model_type = kvshard__strdup(&a, model->model_type);
    p->kinds = kvshard__alloc(&a, L, 1);
    p->owner = kvshard__alloc(&a, L, sizeof *p->owner);
    /* The rank table doubles as scratch while owners are assigned (S <= T). */
    p->split_rank_of = kvshard__alloc(&a, T, sizeof *p->split_rank_of);
    p->owned_offsets = kvshard__alloc(&a, (size_t)S + 1, sizeof *p->owned_offsets);
    p->owned_layers = kvshard__alloc(&a, model->info.num_full, sizeof *p->owned_layers);
    p->owned_counts = kvshard__alloc(&a, S, sizeof *p->owned_counts);
    p->ranks = kvshard__calloc(&a, T, sizeof *p->ranks);
    if (!p->model_type || !p->kinds || !p->owner || !p->split_rank_of || !p->owned_offsets ||
        !p->owned_layers || !p->owned_counts || !p->ranks) {
        kvshard_plan_free(p);
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark,
                             "out of memory creating the plan");
    }
    memcpy(p->kinds, model->kinds, L);
    assign_owners(p);
    collect_warnings(p);
    kvshard__memory_inputs in = {&p->model, &p->options, T, S, p->owned_counts, model->source};
    if ((rc = kvshard__memory_compute(p->ranks, &p->capacity, &p->uniform, &in, err)) != 0) {
        kvshard_plan_free(p);
        return rc;
    }
    p->digest = compute_digest(p);
    *out = p;
    return KVSHARD_OK;
}

/* ---- queries ------------------------------------------------------------ */

uint32_t kvshard_plan_attn_tp_size(const kvshard_plan *plan)
{
    return plan->tp;
}

uint32_t kvshard_plan_effective_split_size(const kvshard_plan *plan)
{
    return plan->split;
}

uint32_t kvshard_plan_replication_factor(const kvshard_plan *plan)
{
    return plan->replication;
}

uint32_t kvshard_plan_num_layers(const kvshard_plan *plan)
{
    return plan->model.num_layers;
}

int kvshard_plan_layer_kind(kvshard_layer_kind *out, const kvshard_plan *plan, uint32_t layer)
{
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    *out = (kvshard_layer_kind)plan->kinds[layer];
    return KVSHARD_OK;
}

int kvshard_plan_layer_owner(int32_t *out, const kvshard_plan *plan, uint32_t layer)
{
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    *out = plan->owner[layer];
    return KVSHARD_OK;
}

bool kvshard_plan_owns(const kvshard_plan *plan, uint32_t tp_rank, uint32_t layer)
{
    if (tp_rank >= plan->tp || layer >= plan->model.num_layers)
        return false;
    int32_t owner = plan->owner[layer];
    return owner == KVSHARD_OWNER_ALL || (uint32_t)owner == plan->split_rank_of[tp_rank];
}

int kvshard_plan_split_position(uint32_t *out_split_rank, uint32_t *out_split_group,
                                const kvshard_plan *plan, uint32_t tp_rank)
{
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
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    uint32_t s = plan->split_rank_of[tp_rank];
    *out = plan->owned_layers + plan->owned_offsets[s];
    *out_count = plan->owned_counts[s];
    return KVSHARD_OK;
}

int kvshard_plan_rank_memory(kvshard_rank_memory *out, const kvshard_plan *plan, uint32_t tp_rank)
{
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    return kvshard__copy_out(out, &plan->ranks[tp_rank], sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                                   : KVSHARD_EINVAL;
}

int kvshard_plan_capacity(kvshard_capacity *out, const kvshard_plan *plan)
{
    return kvshard__copy_out(out, &plan->capacity, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                             : KVSHARD_EINVAL;
}

int kvshard_plan_uniform(kvshard_uniform *out, const kvshard_plan *plan)
{
    return kvshard__copy_out(out, &plan->uniform, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                            : KVSHARD_EINVAL;
}

int kvshard_plan_num_blocks_for(uint64_t *out, const kvshard_plan *plan, uint64_t memory_per_rank,
                                kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!out || !plan)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "out and plan must not be NULL");
    uint64_t blocks;
    bool has;
    int rc = kvshard__memory_blocks_for(&blocks, &has, NULL, plan->ranks, plan->tp,
                                        plan->options.max_seqs, memory_per_rank, err);
    if (rc)
        return rc;
    if (!has)
        return kvshard__fail(
            err, KVSHARD_ERANGE, "", kvshard__no_mark,
            "the plan has no KV bytes per block: memory does not bound its blocks");
    *out = blocks;
    return KVSHARD_OK;
}

const char *kvshard_warning_name(kvshard_warning_code code)
{
    switch (code) {
    case KVSHARD_WARN_SPLIT_DISABLED: return "split_disabled";
    case KVSHARD_WARN_SPLIT_SIZE_ONE: return "split_size_one";
    case KVSHARD_WARN_RANK_OWNS_NOTHING: return "rank_owns_nothing";
    case KVSHARD_WARN_IMBALANCED: return "imbalanced";
    case KVSHARD_WARN_EXCEEDS_REPLICATION: return "exceeds_replication";
    case KVSHARD_WARN_NO_KV_LAYERS: return "no_kv_layers";
    case KVSHARD_WARN_DRAFT_UNSPLIT: return "draft_unsplit";
    default: return "unknown";
    }
}

size_t kvshard_plan_warning_count(const kvshard_plan *plan)
{
    return plan->warning_count;
}

int kvshard_plan_warning(kvshard_warning_code *out_code, const char **out_message,
                         const kvshard_plan *plan, size_t index)
{
    if (index >= plan->warning_count)
        return KVSHARD_EINVAL;
    if (out_code)
        *out_code = plan->warnings[index].code;
    if (out_message)
        *out_message = plan->warnings[index].message;
    return KVSHARD_OK;
}

bool kvshard_plan_has_warning(const kvshard_plan *plan, kvshard_warning_code code)
{
    for (size_t i = 0; i < plan->warning_count; i++) {
        if (plan->warnings[i].code == code)
            return true;
    }
    return false;
}

uint64_t kvshard_plan_digest(const kvshard_plan *plan)
{
    return plan->digest;
}
