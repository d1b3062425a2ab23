/* Building a plan: owners, memory and capacity, in one allocation. The
 * capacity is the engine profile's; the plan never asks which profile it
 * holds. */
#include "plan/plan.h"
#include "plan/device.h"
#include "plan/digest.h"
#include "plan/warnings.h"
#include "base/abi.h"

#include "base/checked.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Per-rank scratch of up to this many ranks sits on the stack. */
#define SCRATCH_RANKS 16u

kvshard_blocks kvshard_plan__blocks_of(const kvshard__capacity *c)
{
    kvshard_blocks b;
    KVSHARD__INIT_BYTES(b, kvshard_blocks, KVSHARD_BLOCKS_INIT);
    b.num_blocks = c->num_blocks;
    b.max_tokens = c->max_tokens;
    b.has_concurrency = c->has_concurrency;
    b.concurrency = c->concurrency;
    b.has_balanced_max_seqs = c->has_balanced_max_seqs;
    b.balanced_max_seqs = c->balanced_max_seqs;
    return b;
}

/* The capacity inputs of `tp` ranks under settled options, profile inputs
 * and state: a planning's, or a finished plan's own copies of them. */
static kvshard__capacity_inputs capacity_inputs(const kvshard_options *options,
                                                const kvshard_value *inputs,
                                                const kvshard_profile__state *state,
                                                const uint64_t *fill_stages,
                                                const kvshard_rank_memory *ranks, uint32_t tp,
                                                uint32_t split, uint64_t unsplit,
                                                const kvshard__budgets *b)
{
    kvshard__capacity_inputs ci = {.options = options,
                                   .inputs = inputs,
                                   .ranks = ranks,
                                   .num_ranks = tp,
                                   .stage_ranks = b->stage_ranks ? b->stage_ranks : tp,
                                   .split = split,
                                   .unsplit_bytes_per_block = unsplit,
                                   .memory = b->least,
                                   .stage_memory = b->stage,
                                   .extra_per_block = 0,
                                   .context_length = options->context_length,
                                   .rank = KVSHARD_ALL_RANKS,
                                   .state = state,
                                   .has_memory = b->has,
                                   .own_budget = b->has,
                                   .fill_stages = fill_stages};
    return ci;
}

kvshard__capacity_inputs kvshard_plan__capacity_inputs_of(const kvshard__planning *pl,
                                                     const kvshard_rank_memory *ranks, uint32_t tp,
                                                     uint32_t split, uint64_t unsplit,
                                                     const kvshard__budgets *b)
{
    return capacity_inputs(&pl->options, pl->inputs, &pl->state,
                           pl->fill_stage_count ? pl->fill_stages : NULL, ranks, tp, split,
                           unsplit, b);
}

kvshard_uniform kvshard_plan__uniform_of(const kvshard_rank_memory *ranks, uint32_t tp,
                                    const kvshard__planning *pl, uint64_t unsplit_bytes_per_block,
                                    const kvshard__budgets *b)
{
    kvshard_uniform u;
    KVSHARD__INIT_BYTES(u, kvshard_uniform, KVSHARD_UNIFORM_INIT);
    kvshard_memory__largest_figures(&u.kv_bytes_per_token, &u.bytes_per_block, ranks, tp);
    if (b->has && u.bytes_per_block > 0) {
        kvshard__capacity_inputs ci =
            kvshard_plan__capacity_inputs_of(pl, ranks, tp, 1, unsplit_bytes_per_block, b);
        ci.context_length = 0;
        kvshard__capacity c;
        memset(&c, 0, sizeof c);
        kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
        u.has_num_blocks = true;
        u.num_blocks =
            pl->profile->hooks.capacity(&c, NULL, &ci, &quiet) == KVSHARD_OK && c.has_num_blocks
                ? c.num_blocks
                : 0;
    }
    return u;
}

/* The plan and all its arrays are one allocation (see plan_block). */
void kvshard_plan_free(kvshard_plan *plan)
{
    if (!plan)
        return;
    kvshard_allocator a = plan->alloc;
    kvshard_alloc__free(&a, atomic_load(&plan->engine_figures));
    if (plan->figure_ranks && plan->ranks)
        kvshard_alloc__free(&a, plan->ranks); /* fit's figures: sized once the stride is known */
    kvshard_alloc__free(&a, plan);
}

kvshard__memory_inputs kvshard_plan__memory_inputs(const kvshard_plan *plan)
{
    kvshard__memory_inputs in = {&plan->model,
                                 &plan->options,
                                 plan->tp,
                                 plan->split,
                                 plan->owned_by_class,
                                 &plan->stages[0],
                                 plan->profile->counting.counts_draft_layers,
                                 plan->profile->counting.mla_v2_bytes,
                                 plan->source};
    return in;
}

/* Every plan rank's figures, stage by stage, with the plan's split or
 * (`unsplit`) with one split rank owning every KV layer. */
static int stage_memory(kvshard_rank_memory *ranks, const kvshard_plan *p, bool unsplit,
                        kvshard_diag__ctx *diag)
{
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(p);
    if (p->figure_stride && !unsplit) {
        /* fit's figures: the kept TP ranks of each stage. */
        uint32_t K = p->figure_stride;
        size_t row = (size_t)p->split * p->model.num_classes;
        for (uint32_t s = 0; s < p->pp; s++) {
            kvshard__memory_inputs stage = in;
            stage.layers = &p->stages[s];
            stage.count_draft_layers = in.count_draft_layers && s + 1 == p->pp;
            stage.owned = p->owned_by_class + s * row;
            int rc = kvshard_memory__ranks(ranks + (size_t)s * K, &stage,
                                           p->figure_ranks + (size_t)s * K, K, diag);
            if (rc)
                return rc;
        }
        return KVSHARD_OK;
    }
    return kvshard_memory__stage_ranks(ranks, &in, p->stages, p->pp,
                                       unsplit ? NULL : p->owned_by_class, diag);
}

/* The first plan rank whose blocks are the common count: the one that
 * binds. */
static void find_binding(kvshard_plan *p)
{
    kvshard__capacity *c = &p->cap;
    uint32_t K = p->figure_stride;
    for (uint32_t r = 0; c->has_num_blocks && r < p->ranks_count; r++) {
        if (p->ranks[r].has_num_blocks && p->ranks[r].num_blocks == c->num_blocks) {
            c->has_binding = true;
            /* In fit's figures, the full plan's first such rank: the kept
             * ranks are TP ranks in order, each the first of its figures. */
            c->binding_rank = K ? r / K * p->tp + p->figure_ranks[r] : r;
            return;
        }
    }
}

/* Each of plan `p`'s ranks' budget and, with the device, its weights and
 * reserve, into `ranks` (the plan's, or its figures at S_eff = 1). */
static void rank_budgets(kvshard_rank_memory *ranks, const kvshard_plan *p)
{
    for (uint32_t r = 0; r < p->ranks_count; r++) {
        kvshard_rank_memory *m = &ranks[r];
        uint32_t s = r / (p->figure_stride ? p->figure_stride : p->tp);
        m->has_budget = p->has_memory;
        m->budget = p->budgets.stage ? p->stage_budgets[s] : p->has_memory ? p->memory : 0;
        m->has_device = p->device.used;
        m->weights_bytes = p->device.used ? p->stage_weights[s] : 0;
        m->activation_reserve = p->device.used ? p->device.reserve : 0;
    }
}

/* The capacity of plan `p`'s ranks counted from `ci` (their figures and
 * S_eff), through its engine profile; each rank's blocks and the engine's
 * bytes per block into `ranks`, the figures ci reads. */
static int count_capacity(kvshard__capacity *out, kvshard_rank_memory *ranks,
                          kvshard__capacity_inputs ci, const kvshard_plan *p,
                          kvshard_diag__ctx *diag)
{
    memset(out, 0, sizeof *out);
    if (!p->has_memory && !p->profile->counting.sizes_without_budget)
        return KVSHARD_OK;
    uint32_t n = p->ranks_count;
    uint64_t local[2 * SCRATCH_RANKS]; /* each rank's blocks, then its bytes per block */
    uint64_t *blocks =
        n <= SCRATCH_RANKS ? local : kvshard_alloc__bytes(&p->alloc, 2 * (size_t)n, sizeof *blocks);
    if (!blocks)
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    if (p->figure_stride)
        ci.stage_ranks = p->figure_stride;
    ci.stages = p->stages;
    ci.num_stages = p->pp;
    uint64_t *bytes = blocks + n;
    ci.rank_bytes_per_block = bytes;
    for (uint32_t r = 0; r < n; r++) {
        blocks[r] = UINT64_MAX; /* a rank the profile does not size has no count */
        bytes[r] = 0;
    }
    int rc = p->profile->hooks.capacity(out, blocks, &ci, diag);
    for (uint32_t r = 0; rc == KVSHARD_OK && r < n; r++) {
        bool counted = blocks[r] != UINT64_MAX;
        ranks[r].has_num_blocks = counted;
        ranks[r].num_blocks = counted ? blocks[r] : 0;
        /* The engine's own bytes per block, where it lays blocks out its
         * way: the rank's, else the one of every rank. */
        if (bytes[r] || out->has_bytes_per_block)
            ranks[r].bytes_per_block = bytes[r] ? bytes[r] : out->bytes_per_block;
    }
    if (blocks != local)
        kvshard_alloc__free(&p->alloc, blocks);
    return rc;
}

/* The same plan at S_eff = 1: the largest figures, the fewest blocks (0
 * when the unsplit plan fits none). `pl` is the plan's settled planning.
 * With a split, the unsplit ranks are counted in full, as the plan counts
 * its own, and the count is kept: the communication estimate's unsplit
 * reference reads it instead of counting again. */
static int compute_uniform(kvshard_plan *p, const kvshard__planning *pl, kvshard_diag__ctx *diag)
{
    uint32_t n = p->ranks_count;
    kvshard__budgets none = {false, 0, NULL, p->tp};
    if (p->split == 1) {
        /* The plan is its own unsplit plan: its blocks are the plan's. */
        p->uniform = kvshard_plan__uniform_of(p->ranks, n, pl, p->unsplit_bytes_per_block, &none);
        p->uniform.has_num_blocks = p->cap.has_num_blocks;
        p->uniform.num_blocks = p->cap.num_blocks;
        return KVSHARD_OK;
    }
    int rc = stage_memory(p->unsplit_ranks, p, true, diag);
    if (rc != KVSHARD_OK)
        return rc;
    /* The largest figures first: the count writes the engine's bytes per
     * block into the ranks. */
    p->uniform = kvshard_plan__uniform_of(p->unsplit_ranks, n, pl, p->unsplit_bytes_per_block, &none);
    rank_budgets(p->unsplit_ranks, p);
    kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
    rc = count_capacity(&p->unsplit_cap, p->unsplit_ranks,
                        kvshard_plan__capacity_inputs_of(pl, p->unsplit_ranks, n, 1,
                                                         p->unsplit_bytes_per_block, &p->budgets),
                        p, &quiet);
    if (rc == KVSHARD_ENOMEM)
        return kvshard_error__fail(diag->err, rc, "", kvshard_error__no_mark, "out of memory");
    /* A count the unsplit plan refuses (no memory for a block) is no count. */
    p->unsplit_counted = rc == KVSHARD_OK;
    p->uniform.has_num_blocks = p->budgets.has && p->uniform.bytes_per_block > 0;
    p->uniform.num_blocks = p->uniform.has_num_blocks && p->unsplit_counted &&
                                    p->unsplit_cap.has_num_blocks
                                ? p->unsplit_cap.num_blocks
                                : 0;
    return KVSHARD_OK;
}

static int compute_memory(kvshard_plan *p, const kvshard__planning *pl, const kvshard_model *model,
                          const kvshard__device *device, const uint32_t *counts,
                          kvshard_diag__ctx *diag)
{
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(p);
    in.layers = &p->layers;
    int rc = stage_memory(p->ranks, p, false, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_memory__state_bytes(&p->state_per_layer, &in, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_memory__unsplit_bytes_per_block(&p->unsplit_bytes_per_block, &in, diag);
    kvshard__device_layout layout = {p->tp, p->options.dp_size, p->options.cp_size, p->pp,
                                     counts, p->model.num_layers};
    if (rc == KVSHARD_OK)
        rc = kvshard_device__budgets_for(&p->budgets, p->stage_weights, p->stage_budgets, device,
                                         pl, model, &layout, p->split, NULL, diag);
    if (rc)
        return rc;
    p->memory = p->budgets.least;
    p->has_memory = p->budgets.has;
    rank_budgets(p->ranks, p);
    kvshard__capacity c;
    rc = count_capacity(&c, p->ranks,
                        kvshard_plan__capacity_inputs_of(pl, p->ranks, p->ranks_count, p->split,
                                                         p->unsplit_bytes_per_block, &p->budgets),
                        p, diag);
    if (rc)
        return rc;
    p->cap = c;
    find_binding(p);
    return p->figure_stride ? KVSHARD_OK : compute_uniform(p, pl, diag);
}

/* Carve `n` items of `size` bytes, aligned to `align`, from a block being
 * laid out: the offset into *at, the end past it. */
static bool carve(size_t *at, size_t *end, size_t n, size_t size, size_t align)
{
    size_t start = (*end + align - 1) / align * align;
    if (start < *end || (size && n > (SIZE_MAX - start) / size))
        return false;
    *at = start;
    *end = start + n * size;
    return true;
}

/* Whether a layer's holders differ from its owner: a layer that keeps
 * paged KV and a state (a split plan holds it on ranks that do not own its
 * KV), or a layer that reads another's cache (it reports an owner and is
 * held by none). */
static bool holders_differ(const kvshard__model_info *m, uint32_t split)
{
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(k);
        if (m->count[k] > 0 && ((split > 1 && row->paged_kv && row->state) || row->reads_source))
            return true;
    }
    return false;
}

/* The plan and all its arrays in one allocation, so that creating a plan
 * costs one call to the allocator and freeing it one more. The struct is
 * zeroed except its warning texts, which are written before they are read;
 * the ranks are zeroed; the strings are copied in. */
static kvshard_plan *plan_block(const kvshard_allocator *a, const kvshard_model *model, uint32_t T,
                                uint32_t S, uint32_t P, bool figures, uint32_t groups,
                                size_t texts_len)
{
    /* fit's figures keep no per-layer arrays and at most S ranks a stage of
     * each of `groups` group unions. */
    size_t L = figures ? 0 : model->info.num_layers;
    size_t n_kv = figures ? 0 : kvshard__num_kv_layers(&model->info);
    size_t type_len = strlen(model->model_type) + 1, source_len = strlen(model->source) + 1;
    size_t held = holders_differ(&model->info, S) ? L : 0;
    size_t sources = model->kv_source ? L : 0, C = model->info.num_classes;
    size_t N = figures ? 0 : (size_t)P * T, PS = (size_t)P * S;
    size_t per_rank = N, split_of = figures ? PS * groups : 0;
    size_t unsplit = S > 1 ? N : 0;
    size_t end = sizeof(kvshard_plan), ranks, unsplit_ranks, owner, held_by, kv_slot, state_slot,
           place, stages, owned_offsets, owned_layers, owned_counts, owned_by_class, kv_source,
           kinds, class_of, draft_class, model_type, source, keys, hold_key, stage_counts,
           stage_weights, stage_budgets, fill_stages, figure_ranks, input_texts;
    size_t staged_keys = P > 1 ? L : 0;
    size_t drafts = model->draft_class ? model->info.num_draft_layers : 0;
    if (!carve(&ranks, &end, N, sizeof(kvshard_rank_memory), sizeof(uint64_t)) ||
        !carve(&unsplit_ranks, &end, unsplit, sizeof(kvshard_rank_memory), sizeof(uint64_t)) ||
        !carve(&keys, &end, per_rank, sizeof(kvshard__rank_key), sizeof(uint32_t)) ||
        !carve(&figure_ranks, &end, split_of, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&hold_key, &end, staged_keys, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owner, &end, L, sizeof(int32_t), sizeof(uint32_t)) ||
        !carve(&held_by, &end, held, sizeof(int32_t), sizeof(uint32_t)) ||
        !carve(&kv_slot, &end, L, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&state_slot, &end, L, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&place, &end, per_rank, sizeof(kvshard__rank_place), sizeof(uint32_t)) ||
        !carve(&stages, &end, P, sizeof(kvshard__range), sizeof(uint64_t)) ||
        !carve(&stage_counts, &end, P, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&stage_weights, &end, P, sizeof(uint64_t), sizeof(uint64_t)) ||
        !carve(&stage_budgets, &end, P, sizeof(uint64_t), sizeof(uint64_t)) ||
        !carve(&fill_stages, &end, P, sizeof(uint64_t), sizeof(uint64_t)) ||
        !carve(&owned_offsets, &end, figures ? 0 : PS + P, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owned_layers, &end, n_kv, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owned_counts, &end, PS, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owned_by_class, &end, PS * C, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&kv_source, &end, sources, sizeof(int32_t), sizeof(int32_t)) ||
        !carve(&kinds, &end, L, 1, 1) || !carve(&class_of, &end, L, 1, 1) ||
        !carve(&draft_class, &end, drafts, 1, 1) || !carve(&model_type, &end, type_len, 1, 1) ||
        !carve(&source, &end, source_len, 1, 1) || !carve(&input_texts, &end, texts_len, 1, 1))
        return NULL;
    char *block = kvshard_alloc__bytes(a, 1, end);
    if (!block)
        return NULL;
    kvshard_plan *p = (kvshard_plan *)(void *)block;
    memset(p, 0, offsetof(kvshard_plan, warnings));
    atomic_init(&p->engine_figures, NULL);
    p->warning_count = 0;
    p->digest = 0;
    p->layout_digest = 0;
    p->alloc = *a;
    p->ranks = figures ? NULL : (kvshard_rank_memory *)(void *)(block + ranks);
    if (!figures)
        memset(p->ranks, 0, N * sizeof *p->ranks);
    p->unsplit_ranks = unsplit ? (kvshard_rank_memory *)(void *)(block + unsplit_ranks) : NULL;
    if (unsplit)
        memset(p->unsplit_ranks, 0, unsplit * sizeof *p->unsplit_ranks);
    p->figure_ranks = figures ? (uint32_t *)(void *)(block + figure_ranks) : NULL;
    p->owner = figures ? NULL : (int32_t *)(void *)(block + owner);
    p->held_by = held ? (int32_t *)(void *)(block + held_by) : p->owner;
    p->keys = (kvshard__rank_key *)(void *)(block + keys);
    /* int32_t and uint32_t may name the same words. */
    p->hold_key = staged_keys ? (uint32_t *)(void *)(block + hold_key) : (uint32_t *)p->held_by;
    p->kv_slot = (uint32_t *)(void *)(block + kv_slot);
    p->state_slot = (uint32_t *)(void *)(block + state_slot);
    p->place = (kvshard__rank_place *)(void *)(block + place);
    p->stages = (kvshard__range *)(void *)(block + stages);
    p->stage_counts = (uint32_t *)(void *)(block + stage_counts);
    p->stage_weights = (uint64_t *)(void *)(block + stage_weights);
    p->stage_budgets = (uint64_t *)(void *)(block + stage_budgets);
    p->fill_stages = (uint64_t *)(void *)(block + fill_stages);
    p->owned_offsets = (uint32_t *)(void *)(block + owned_offsets);
    p->owned_layers = (uint32_t *)(void *)(block + owned_layers);
    p->owned_counts = (uint32_t *)(void *)(block + owned_counts);
    p->owned_by_class = (uint32_t *)(void *)(block + owned_by_class);
    p->kv_source = sources ? (int32_t *)(void *)(block + kv_source) : NULL;
    if (sources)
        memcpy(p->kv_source, model->kv_source, L * sizeof *p->kv_source);
    p->kinds = figures ? NULL : (uint8_t *)(block + kinds);
    p->class_of = figures ? NULL : (uint8_t *)(block + class_of);
    p->draft_class = drafts ? (uint8_t *)(block + draft_class) : NULL;
    if (drafts)
        memcpy(p->draft_class, model->draft_class, drafts);
    p->model_type = block + model_type;
    memcpy(p->model_type, model->model_type, type_len);
    p->source = block + source;
    memcpy(p->source, model->source, source_len);
    p->input_texts = block + input_texts;
    return p;
}

/* Each stage's layers, owners and lists, and where every plan rank stands. */
static void assign_stages(kvshard_plan *p, const uint32_t *counts)
{
    uint32_t S = p->split, C = p->model.num_classes, first = 0, kv_first = 0;
    kvshard_ownership rule = p->options.ownership;
    for (uint32_t s = 0; s < p->pp; s++) {
        kvshard__range *range = &p->stages[s];
        if (p->pp == 1) /* the one stage is every layer, already counted */
            *range = p->layers;
        else
            kvshard_model__range_of(range, p->kinds, p->class_of, &p->model, first, counts[s]);
        uint32_t *offsets = p->owned_offsets + (size_t)s * (S + 1);
        uint32_t *owned = p->owned_counts + (size_t)s * S;
        kvshard_owners__owned_counts(owned, p->owned_by_class + (size_t)s * S * C, p->kinds,
                              p->class_of, C, range, S, rule);
        kvshard__owners owners = {p->owner,  p->held_by, p->kv_slot,
                                  p->state_slot, offsets, owned,
                                  p->owned_layers + kv_first};
        kvshard_owners__assign_owners(&owners, p->kinds, p->kv_source, range, S, rule);
        /* The stage's lists follow the stages before it in owned_layers. */
        for (uint32_t k = 0; k <= S; k++)
            offsets[k] += kv_first;
        /* With one stage the layer keys are held_by's own values. */
        uint32_t base = p->pp > 1 ? s * (S + 1) : 0;
        for (uint32_t t = 0; t < p->tp; t++) {
            kvshard__rank_place *pl = &p->place[(size_t)s * p->tp + t];
            pl->split_rank = t % S;
            pl->first = first;
            pl->count = counts[s];
            kvshard__rank_key *key = &p->keys[(size_t)s * p->tp + t];
            key->mine = base + t % S;
            key->all = p->pp > 1 ? base + S : (uint32_t)KVSHARD_OWNER_ALL;
        }
        if (p->pp > 1) {
            for (uint32_t i = first; i < first + counts[s]; i++) {
                int32_t held = p->held_by[i];
                p->hold_key[i] = held == KVSHARD_OWNER_ALL    ? base + S
                              : held == KVSHARD_OWNER_NONE ? (uint32_t)KVSHARD_OWNER_NONE
                                                           : base + (uint32_t)held;
            }
        }
        first += counts[s];
        kv_first += range->num_kv;
    }
}

/* fit's figures: each stage's layers and owned counts, and the TP ranks
 * planned. A rank has the figures of the rank before it when both are in
 * one group and their split ranks own the same layers by class, and of the
 * same split rank of group 0 when its group's union is group 0's. So a
 * stage keeps of group 0 the first split rank and each whose owned counts
 * differ from the one before it, and the same split ranks of the first
 * group whose union differs (`other`, 0 for none; every group holds one of
 * those two unions). Kept in TP rank order, a stage's first rank with the
 * fewest blocks is the full plan's. The stride is the most any stage
 * keeps, a stage's last kept rank repeated to fill it. */
static void assign_figures(kvshard_plan *p, const kvshard_model *model, const uint32_t *counts,
                           uint32_t other)
{
    uint32_t S = p->split, C = p->model.num_classes, first = 0, K = 1;
    uint32_t room = other ? 2 * S : S; /* a stage's entries before they move down */
    for (uint32_t s = 0; s < p->pp; s++) {
        kvshard__range *range = &p->stages[s];
        if (p->pp == 1)
            *range = p->layers;
        else
            kvshard_model__range_of(range, model->kinds, model->class_of, &p->model, first,
                                    counts[s]);
        uint32_t *by_class = p->owned_by_class + (size_t)s * S * C;
        kvshard_owners__owned_counts(p->owned_counts + (size_t)s * S, by_class, model->kinds,
                              model->class_of, C, range, S, p->options.ownership);
        uint32_t *kept = p->figure_ranks + (size_t)s * room, n = 0;
        for (uint32_t j = 0; j < S; j++) {
            const uint32_t *row = by_class + (size_t)j * C, *before = row - (j ? C : 0);
            bool differs = j == 0;
            for (uint32_t k = 0; k < C && !differs; k++)
                differs = row[k] != before[k];
            if (differs)
                kept[n++] = j;
        }
        for (uint32_t i = 0, m = n; other && i < m; i++)
            kept[n++] = other * S + kept[i];
        if (n < room)
            kept[n] = UINT32_MAX; /* the end of the stage's list */
        K = n > K ? n : K;
        first += counts[s];
    }
    /* Each stage's list moved down to the stride (never past a later
     * stage's, as K <= room), its last rank repeated to fill it. */
    for (uint32_t s = 0; s < p->pp; s++) {
        const uint32_t *from = p->figure_ranks + (size_t)s * room;
        uint32_t n = 0;
        while (n < room && from[n] != UINT32_MAX)
            n++;
        uint32_t *to = p->figure_ranks + (size_t)s * K;
        memmove(to, from, n * sizeof *to);
        for (uint32_t j = n; j < K; j++)
            to[j] = to[n - 1];
    }
    p->figure_stride = K;
    p->ranks_count = p->pp * K;
}

static void keep_warning(void *ctx, kvshard_warning_code code, const char *message)
{
    kvshard_plan *p = ctx;
    if (p->warning_count == KVSHARD__MAX_WARNINGS)
        return;
    kvshard__warning *w = &p->warnings[p->warning_count++];
    w->code = code;
    size_t n = strlen(message);
    n = n < sizeof w->message ? n : sizeof w->message - 1;
    memcpy(w->message, message, n);
    w->message[n] = '\0';
}

/* The plan keeps the text of its text inputs: the caller's settings need
 * not outlive the call. */
/* The bytes the profile's text inputs take, each with its NUL: the room
 * the plan keeps them in. */
static size_t input_texts_len(const kvshard__profile *profile, const kvshard_value *inputs)
{
    size_t len = 0, i = 0;
    for (const kvshard_profile__input *in = profile->dialect.inputs; in && in->def.name; in++, i++)
        len += inputs[i].text ? inputs[i].text_len + 1 : 0;
    return len;
}

/* The plan's own copy of every text input, whole (a list of sizes may be
 * long), in the room input_texts_len() made. */
static void keep_input_texts(kvshard_plan *p)
{
    char *at = p->input_texts;
    size_t i = 0;
    for (const kvshard_profile__input *in = p->profile->dialect.inputs; in && in->def.name;
         in++, i++) {
        kvshard_value *v = &p->inputs[i];
        if (!v->text)
            continue;
        memcpy(at, v->text, v->text_len);
        at[v->text_len] = '\0';
        v->text = at;
        at += v->text_len + 1;
    }
}

/* `model` gives the layer kinds, which fit's figures do not copy. */
static void collect_warnings(kvshard_plan *p, const kvshard_model *model,
                             const kvshard__planning *pl)
{
    kvshard__warning_inputs in = {
        .planning = pl,
        .split = p->split,
        .replication = p->replication,
        .n_kv = p->layers.num_kv,
        .owned_counts = p->owned_counts,
        .capacity = &p->cap,
        .has_memory = p->has_memory,
        .memory = p->memory,
        .state_bytes_per_seq = p->ranks[0].state_bytes_per_seq,
        .stages = p->pp,
        .ranges = p->stages,
        .ranks = p->ranks,
        .tp = p->figure_stride ? p->figure_stride : p->tp,
        .draft_layers = kvshard__counted_drafts(&p->model, &pl->options, pl->profile),
        .device = &p->device,
        .max_position_embeddings = p->model.max_position_embeddings,
        .seq_noun =
            kvshard_kinds__seq_noun(kvshard_kinds__seq_caches(model->kinds, p->model.num_layers))};
    kvshard_warnings__collect_warnings(&in, keep_warning, p);
}

/* Room for the layer counts of this many stages sits on the stack. */
#define SCRATCH_STAGES 64u

int kvshard_plan__create(kvshard_plan **out, const kvshard_model *model,
                         const kvshard_options *options, const kvshard_allocator *allocator,
                         kvshard_diag__ctx *diag)
{
    return kvshard_plan__create_with(out, model, options, allocator, NULL, diag);
}

static int create(kvshard_plan **out, const kvshard_model *model, const kvshard_options *options,
                  const kvshard_allocator *allocator, const struct kvshard__device *shared,
                  bool want_figures, kvshard_diag__ctx *diag)
{
    kvshard__planning pl;
    int rc = kvshard_validate__begin_planning(&pl, out && model, options, allocator, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_device__map(&pl, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_validate__planning_settle(&pl, model, diag);
    if (rc)
        return rc;
    kvshard_allocator a = kvshard_alloc__allocator_or_default(allocator);
    uint32_t P = pl.options.pp_size;
    uint32_t local[SCRATCH_STAGES];
    uint32_t *counts = P <= SCRATCH_STAGES ? local : kvshard_alloc__bytes(&a, P, sizeof *counts);
    if (!counts)
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                             "out of memory creating the plan");
    uint32_t T = 0, S = 0;
    kvshard_plan *p = NULL;
    kvshard__device device;
    memset(&device, 0, sizeof device);
    rc = kvshard_plan__validate(&T, &S, counts, model, &pl, diag);
    if (rc == KVSHARD_OK && shared)
        device = *shared; /* borrowed: not closed here */
    else if (rc == KVSHARD_OK)
        rc = kvshard_device__open(&device, &pl, model, &a, diag);
    if (rc == KVSHARD_OK) {
        kvshard__device_layout layout = {T, pl.options.dp_size, pl.options.cp_size, P, counts,
                                         model->info.num_layers};
        rc = kvshard_device__fill(&pl, &device, &layout, diag);
    }
    bool figures = want_figures && rc == KVSHARD_OK && kvshard_memory__ranks_alike(&model->info, T);
    uint32_t other = figures ? kvshard_memory__other_group(&model->info, T, S) : 0;
    if (rc == KVSHARD_OK && (p = plan_block(&a, model, T, S, P, figures, other ? 2 : 1,
                                              input_texts_len(pl.profile, pl.inputs))) == NULL)
        rc = kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                           "out of memory creating the plan");
    if (rc == KVSHARD_OK) {
        p->model = model->info;
        p->options = pl.options;
        /* The plan keeps its own copy of an explicit partition, so the
         * options it hands back plan the same plan again. */
        memcpy(p->stage_counts, counts, (size_t)P * sizeof *counts);
        p->options.pp_partition =
            pl.options.pp_partition_rule == KVSHARD_PP_RULE_EXPLICIT ? p->stage_counts : NULL;
        p->profile = pl.profile;
        memcpy(p->inputs, pl.inputs, sizeof p->inputs);
        keep_input_texts(p);
        if (pl.fill_stage_count == P)
            memcpy(p->fill_stages, pl.fill_stages, (size_t)P * sizeof *p->fill_stages);
        else
            p->fill_stages = NULL;
        p->state = pl.state;
        p->tp = T;
        p->split = S;
        p->pp = P;
        p->ranks_count = P * T;
        p->replication = kvshard_memory__replication_factor(&model->info, T);
        p->state_dtype = kvshard_memory__state_dtype(&model->info, &pl.options);
        uint32_t L = model->info.num_layers;
        if (figures) {
            kvshard_model__range_of(&p->layers, model->kinds, model->class_of, &p->model, 0, L);
            assign_figures(p, model, counts, other);
            p->ranks = kvshard_alloc__calloc(&a, p->ranks_count, sizeof *p->ranks);
            if (!p->ranks)
                rc = kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory creating the plan");
        } else {
            memcpy(p->kinds, model->kinds, L);
            memcpy(p->class_of, model->class_of, L);
            kvshard_model__range_of(&p->layers, p->kinds, p->class_of, &p->model, 0, L);
            assign_stages(p, counts);
        }
        kvshard_device__figures_of(&p->device, &device);
        if (p->device.summary.first_unknown)
            p->device.summary.first_unknown = p->device.first_unknown; /* the plan's copy */
        if (rc == KVSHARD_OK)
            rc = compute_memory(p, &pl, model, &device, counts, diag);
    }
    if (rc)
        kvshard_device__about_fill(&device, pl.profile, diag);
    if (!shared)
        kvshard_device__close(&device);
    if (counts != local)
        kvshard_alloc__free(&a, counts);
    if (rc) {
        kvshard_plan_free(p);
        return rc;
    }
    collect_warnings(p, model, &pl);
    if (!figures)
        kvshard_digest__compute_digests(p);
    *out = p;
    return KVSHARD_OK;
}

int kvshard_plan__create_with(kvshard_plan **out, const kvshard_model *model,
                              const kvshard_options *options, const kvshard_allocator *allocator,
                              const struct kvshard__device *shared, kvshard_diag__ctx *diag)
{
    return create(out, model, options, allocator, shared, false, diag);
}

int kvshard_plan__figures(kvshard_plan **out, const kvshard_model *model,
                          const kvshard_options *options, const kvshard_allocator *allocator,
                          const struct kvshard__device *shared, kvshard_diag__ctx *diag)
{
    return create(out, model, options, allocator, shared, true, diag);
}

int kvshard_plan_create(kvshard_plan **out, const kvshard_model *model,
                        const kvshard_options *options, const kvshard_allocator *allocator,
                        kvshard_error *err)
{
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    return kvshard_plan__create(out, model, options, allocator, &diag);
}
