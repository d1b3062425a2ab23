/* Every split size that divides T, under each ownership rule, side by side.
 * A row needs only how many KV layers each split rank owns, so no row builds
 * a plan: the work is bounded by the KV layers times the split sizes, and a
 * row whose plan would pass KVSHARD_MAX_LAYER_ENTRIES is refused before any
 * work. */
#include "explore/compare.h"
#include "explore/comm.h"
#include "plan/deployment.h"
#include "plan/device.h"
#include "base/abi.h"
#include "base/call.h"

#include "base/checked.h"

#include "deploy/options.h"
#include "plan/plan.h"
#include "plan/warnings.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void kvshard_comparison_free(kvshard_comparison *comparison)
{
    if (!comparison)
        return;
    kvshard_allocator a = comparison->alloc;
    kvshard_alloc__free(&a, comparison->rows);
    kvshard_alloc__free(&a, comparison->messages);
    kvshard_alloc__free(&a, comparison->comms);
    kvshard_alloc__free(&a, comparison);
}

static const kvshard_ownership rules[] = {KVSHARD_OWNERSHIP_ORDINAL, KVSHARD_OWNERSHIP_GLOBAL,
                                          KVSHARD_OWNERSHIP_CONTIGUOUS};
#define RULES (sizeof rules / sizeof rules[0])

typedef struct work {
    const kvshard_model *model;
    const kvshard_options *given;     /* the caller's: a priced row is planned from them */
    const kvshard__comm_inputs *comm; /* NULL: no row is priced */
    kvshard__planning base; /* settled, split off */
    kvshard__range layers;  /* every layer */
    uint32_t ranks_count;   /* world_size / (dp x cp): P x T for every P */
    /* For the P in hand: its T, its stages' layer counts and ranges. */
    uint32_t pp;
    uint32_t tp;
    uint32_t *stage_counts;
    kvshard__range *stages;
    uint32_t *counts;   /* owned counts of the row's split ranks, P rows */
    uint32_t *by_class; /* the same by class: P x S_eff rows of the model's classes */
    kvshard_rank_memory *ranks; /* P x T */
    kvshard__device device;     /* the budgets' source, read once */
    kvshard__device_figures device_figures; /* its figures, for the warnings */
    kvshard__budgets budgets;   /* the P in hand's */
    uint64_t *stage_weights;    /* its stages' weights and budgets, with the device */
    uint64_t *stage_budgets;
    /* The P in hand leaves a stage no budget: every row of it fails so. */
    int pp_rc;
    kvshard_error pp_err;
    const char *const *pp_among; /* what it is about */
    uint64_t memory; /* budgets.least */
    bool has_memory;
    uint64_t unsplit_bytes_per_block;
    kvshard_uniform uniform;
} work;

static void mark_warning(void *ctx, kvshard_warning_code code, const char *message)
{
    (void)message;
    *(uint32_t *)ctx |= 1u << code;
}

static kvshard__memory_inputs inputs_of(const work *w, const kvshard__planning *pl, uint32_t S)
{
    kvshard__memory_inputs in = {&w->model->info,
                                 &pl->options,
                                 w->tp,
                                 S,
                                 NULL,
                                 &w->layers,
                                 pl->profile->counting.counts_draft_layers,
                                 pl->profile->counting.mla_v2_bytes,
                                 w->model->source};
    return in;
}

/* One row: the plan's figures without the plan. */
static int fill_row(kvshard_comparison_row *row, work *w, const kvshard__planning *pl, uint32_t S,
                    kvshard_diag__ctx *diag)
{
    if (w->pp_rc) {
        *diag->err = w->pp_err;
        diag->among = w->pp_among;
        return w->pp_rc;
    }
    const kvshard__model_info *m = &w->model->info;
    const kvshard_options *o = &pl->options;
    uint32_t n_kv = w->layers.num_kv, C = m->num_classes, N = w->pp * w->tp;
    for (uint32_t s = 0; s < w->pp; s++)
        kvshard_owners__owned_counts(w->counts + (size_t)s * S, w->by_class + (size_t)s * S * C,
                              w->model->kinds, w->model->class_of, C, &w->stages[s], S,
                              o->ownership);
    kvshard__memory_inputs in = inputs_of(w, pl, S);
    int rc = kvshard_memory__stage_ranks(w->ranks, &in, w->stages, w->pp, w->by_class, diag);
    if (rc)
        return rc;
    kvshard__capacity c;
    memset(&c, 0, sizeof c);
    if (w->has_memory || pl->profile->counting.sizes_without_budget) {
        kvshard__capacity_inputs ci = kvshard_plan__capacity_inputs_of(
            pl, w->ranks, N, S, w->unsplit_bytes_per_block, &w->budgets);
        if ((rc = pl->profile->hooks.capacity(&c, NULL, &ci, diag)) != 0)
            return rc;
    }
    for (uint32_t r = 0; c.has_bytes_per_block && r < N; r++)
        w->ranks[r].bytes_per_block = c.bytes_per_block;
    row->min_owned_layers = UINT32_MAX;
    for (uint32_t k = 0; k < w->pp * S; k++) {
        if (w->stages[k / S].num_kv == 0 && w->pp > 1)
            continue; /* a stage without KV layers owns none by rule */
        row->min_owned_layers =
            w->counts[k] < row->min_owned_layers ? w->counts[k] : row->min_owned_layers;
        row->max_owned_layers =
            w->counts[k] > row->max_owned_layers ? w->counts[k] : row->max_owned_layers;
    }
    if (row->min_owned_layers == UINT32_MAX)
        row->min_owned_layers = 0;
    kvshard_memory__largest_figures(&row->max_kv_bytes_per_token, &row->max_bytes_per_block,
                                    w->ranks, N);
    kvshard_blocks b = kvshard_plan__blocks_of(&c);
    row->has_num_blocks = c.has_num_blocks;
    row->num_blocks = b.num_blocks;
    row->max_tokens = b.max_tokens;
    row->has_concurrency = b.has_concurrency;
    row->concurrency = b.concurrency;
    row->has_balanced_max_seqs = b.has_balanced_max_seqs;
    row->balanced_max_seqs = b.balanced_max_seqs;
    if (c.has_num_blocks)
        row->gain = w->uniform.num_blocks ? (double)c.num_blocks / (double)w->uniform.num_blocks
                                          : HUGE_VAL; /* the unsplit plan fits no block */
    else
        row->gain = row->max_bytes_per_block
                        ? (double)w->uniform.bytes_per_block / (double)row->max_bytes_per_block
                        : 1.0;
    kvshard__warning_inputs wi = {
        .planning = pl,
        .split = S,
        .replication = kvshard_memory__replication_factor(m, w->tp),
        .n_kv = n_kv,
        .owned_counts = w->counts,
        .capacity = &c,
        .has_memory = w->has_memory,
        .memory = w->memory,
        .state_bytes_per_seq = w->ranks[0].state_bytes_per_seq,
        .stages = w->pp,
        .ranges = w->stages,
        .ranks = w->ranks,
        .tp = w->tp,
        .draft_layers = kvshard__counted_drafts(m, &pl->options, pl->profile),
        .device = &w->device_figures,
        .max_position_embeddings = m->max_position_embeddings,
        .seq_noun =
            kvshard_kinds__seq_noun(kvshard_kinds__seq_caches(w->model->kinds, m->num_layers))};
    kvshard_warnings__collect_warnings(&wi, mark_warning, &row->warnings);
    return KVSHARD_OK;
}

/* The comm codes a priced plan's inputs add to its warnings. */
static const uint32_t comm_input_warnings = (1u << KVSHARD_WARN_COMM_MECHANISM_ASSUMED) |
                                            (1u << KVSHARD_WARN_FULL_LAYER_DECODE) |
                                            (1u << KVSHARD_WARN_COMM_NO_WEIGHTS);

/* A row's estimate: the estimate of the plan the row stands for, which only
 * a whole plan gives (its layers' owners), made as plan makes it, its
 * unsplit reference included, so a row and `plan` of the same layout agree. */
static int price_row(kvshard_comm_estimate *e, kvshard_comparison_row *row, const work *w,
                     const kvshard_allocator *a, kvshard_diag__ctx *diag)
{
    kvshard_options o = *w->given;
    o.pp_size = row->pp_size;
    o.enable_layerwise_split = row->layerwise_split_size > 1;
    o.layerwise_split_size = row->layerwise_split_size;
    o.ownership = row->ownership;
    kvshard_plan *p = NULL;
    /* The device inputs read once for every row, as the rows' own figures. */
    int rc = kvshard_plan__create_with(&p, w->model, &o, a, &w->device, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_deployment__attach_comm(p, w->comm, w->model, diag);
    kvshard__comm c;
    if (rc == KVSHARD_OK)
        rc = kvshard_comm__of(&c, NULL, p, diag->err);
    if (rc == KVSHARD_OK) {
        kvshard_comm__public(e, &c);
        for (size_t i = 0; i < p->warning_count; i++)
            row->warnings |= (1u << p->warnings[i].code) & comm_input_warnings;
        row->warnings |= e->warnings;
    }
    kvshard_plan_free(p);
    return rc;
}

/* Whether row `a` beats the best so far. Rows come by P, then S, then
 * ordinal, global, contiguous, so a tie keeps the earlier row. */
static bool better(const kvshard_comparison_row *a, const kvshard_comparison_row *best,
                   bool by_balanced)
{
    if (a->error)
        return false;
    if (!best || best->error)
        return true;
    if (by_balanced && a->has_balanced_max_seqs && best->has_balanced_max_seqs &&
        a->balanced_max_seqs != best->balanced_max_seqs)
        return a->balanced_max_seqs > best->balanced_max_seqs;
    if (a->has_num_blocks && best->has_num_blocks)
        return a->num_blocks > best->num_blocks;
    return a->max_bytes_per_block < best->max_bytes_per_block;
}

/* Ranked by throughput: the most whole tokens per second (whole, so rows
 * that differ by rounding tie; rows without one last), then as by
 * capacity. Rows come by P, S and rule, so a tie keeps the earlier. */
static bool faster(const kvshard_comparison_row *a, const kvshard_comparison_row *best,
                   bool by_balanced)
{
    if (a->error)
        return false;
    if (!best || best->error)
        return true;
    bool ha = a->comm->has_step, hb = best->comm->has_step;
    if (ha != hb)
        return ha;
    double ta = ha ? floor(a->comm->throughput) : 0, tb = hb ? floor(best->comm->throughput) : 0;
    if (ta != tb)
        return ta > tb;
    return better(a, best, by_balanced);
}

/* A row the engine can run: its own rule, where it runs one. */
static bool runnable(const kvshard_comparison *c, const kvshard_comparison_row *row)
{
    return !c->profile->defaults.runs_its_ownership_only ||
           row->ownership == c->profile->defaults.ownership;
}

/* The ranking asked for, auto resolved: throughput when the rows were
 * priced with an accelerator, a link, a context length and a decode batch
 * (a budget or comm_batch); asked for without them, comm_input_missing
 * naming the first missing. */
static int settle_rank(kvshard_comparison *c, kvshard_rank_by asked,
                       const kvshard__comm_inputs *comm, kvshard_diag__ctx *diag)
{
    const kvshard_comm_estimate *e = NULL;
    for (size_t i = 0; i < c->count && !e; i++)
        e = c->comms[i].given ? &c->comms[i] : NULL;
    kvshard__rank_needs has = {e && e->has_accelerator, e && e->has_link,
                              c->options.context_length > 0, c->has_memory || (comm && comm->batch)};
    int rc = kvshard_comm__rank_by(&c->rank_by, asked, &has, diag);
    if (rc)
        return rc;
    if (c->rank_by == KVSHARD_RANK_THROUGHPUT) {
        const kvshard_comparison_row *best = NULL;
        for (size_t i = 0; i < c->count; i++) {
            if (runnable(c, &c->rows[i]) && faster(&c->rows[i], best, c->by_balanced)) {
                best = &c->rows[i];
                c->recommended = i;
            }
        }
    }
    return KVSHARD_OK;
}

static void free_work(const kvshard_allocator *a, work *w)
{
    kvshard_alloc__free(a, w->stage_counts);
    kvshard_alloc__free(a, w->stages);
    kvshard_alloc__free(a, w->counts);
    kvshard_alloc__free(a, w->by_class);
    kvshard_alloc__free(a, w->ranks);
    kvshard_alloc__free(a, w->stage_weights);
    kvshard_alloc__free(a, w->stage_budgets);
    kvshard_device__close(&w->device);
}

/* Room for every P: P x T is the same number of ranks for each. */
static int prepare(work *w, const kvshard_allocator *a, kvshard_diag__ctx *diag)
{
    const kvshard_model *model = w->model;
    size_t N = w->ranks_count, C = model->info.num_classes;
    w->stage_counts = kvshard_alloc__bytes(a, N, sizeof *w->stage_counts);
    w->stages = kvshard_alloc__bytes(a, N, sizeof *w->stages);
    w->counts = kvshard_alloc__bytes(a, N, sizeof *w->counts);
    w->by_class = kvshard_alloc__bytes(a, N * C, sizeof *w->by_class);
    w->ranks = kvshard_alloc__bytes(a, N, sizeof *w->ranks);
    w->stage_weights = kvshard_alloc__bytes(a, N, sizeof *w->stage_weights);
    w->stage_budgets = kvshard_alloc__bytes(a, N, sizeof *w->stage_budgets);
    if (!w->stage_counts || !w->stages || !w->counts || !w->by_class || !w->ranks ||
        !w->stage_weights || !w->stage_budgets)
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    /* The unsplit bytes per block, as a profile that does not split sizes
     * its state slots by. */
    kvshard__memory_inputs in = inputs_of(w, &w->base, 1);
    /* At the configured P, or at one stage when the world does not divide
     * by that P (its rows then fail on their own). */
    uint32_t T = kvshard_options__attn_tp_size(&w->base.options);
    in.tp = T ? T : w->ranks_count;
    in.owned = w->layers.class_census;
    return kvshard_memory__unsplit_bytes_per_block(&w->unsplit_bytes_per_block, &in, diag);
}

/* P's stages, its T and budget, and the unsplit figures its rows' gains are
 * measured against (left at their start when those figures overflow). */
static int begin_pp(work *w, uint32_t P, kvshard_diag__ctx *diag)
{
    const kvshard_model *model = w->model;
    w->pp = P;
    w->tp = w->ranks_count / P;
    for (uint32_t s = 0, first = 0; s < P; s++) {
        kvshard_model__range_of(&w->stages[s], model->kinds, model->class_of, &model->info, first,
                          w->stage_counts[s]);
        first += w->stage_counts[s];
    }
    kvshard__planning pl = w->base;
    pl.options.pp_size = P;
    /* Each P has its own budgets from the device: its weights per rank
     * differ. One that leaves a stage none makes every row of it fail. */
    const kvshard_options *o = &pl.options;
    kvshard__device_layout layout = {w->tp, o->dp_size, o->cp_size, P, w->stage_counts,
                                     model->info.num_layers};
    kvshard_error__reset(&w->pp_err);
    kvshard_diag__ctx why = kvshard_diag__on(&w->pp_err);
    /* An engine's input of one size a stage takes this P's stage weights. */
    w->pp_rc = kvshard_device__fill(&pl, &w->device, &layout, &why);
    /* The rows' capacity reads the same sizes a stage as their budgets. */
    w->base.fill_stage_count = pl.fill_stage_count;
    memcpy(w->base.fill_stages, pl.fill_stages, sizeof pl.fill_stages);
    if (w->pp_rc == KVSHARD_OK)
        w->pp_rc = kvshard_device__budgets_for(&w->budgets, w->stage_weights, w->stage_budgets,
                                               &w->device, &pl, model, &layout, 1, NULL, &why);
    w->pp_among = why.among;
    if (w->pp_rc && w->pp_rc != KVSHARD_EDOESNOTFIT) {
        diag->option = why.option;
        diag->among = why.among;
        if (diag->err)
            *diag->err = w->pp_err;
        return w->pp_rc;
    }
    if (w->pp_rc)
        w->budgets.has = false;
    w->memory = w->budgets.least;
    w->has_memory = w->budgets.has;
    kvshard__memory_inputs in = inputs_of(w, &pl, 1);
    kvshard_uniform u;
    KVSHARD__INIT_BYTES(u, kvshard_uniform, KVSHARD_UNIFORM_INIT);
    kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
    if (kvshard_memory__stage_ranks(w->ranks, &in, w->stages, P, NULL, &quiet) == KVSHARD_OK)
        u = kvshard_plan__uniform_of(w->ranks, P * w->tp, &pl, w->unsplit_bytes_per_block,
                                &w->budgets);
    w->uniform = u;
    return KVSHARD_OK;
}

int kvshard_comparison_create(kvshard_comparison **out, const kvshard_model *model,
                              const kvshard_options *options,
                              const kvshard_compare_options *compare_options,
                              const kvshard_allocator *allocator, kvshard_error *err)
{
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    return kvshard_compare__comparison_create(out, model, options, compare_options, allocator, NULL,
                                              &diag);
}

/* The rows of one P: every split size dividing its T under each rule. */
static int pp_rows(kvshard_comparison *c, work *w, const kvshard_comparison_row **best,
                   int *first_error, kvshard_diag__ctx *first_diag, kvshard_diag__ctx *diag)
{
    uint32_t T = w->tp;
    for (uint32_t s = 1; s <= T; s++) {
        if (T % s != 0)
            continue;
        for (size_t rule = 0; rule < RULES; rule++) {
            kvshard_comparison_row *row = &c->rows[c->count];
            kvshard__planning pl = w->base;
            kvshard_options *o = &pl.options;
            o->pp_size = w->pp;
            o->enable_layerwise_split = s > 1;
            o->layerwise_split_size = s;
            o->ownership = rules[rule];
            row->layerwise_split_size = s;
            row->ownership = o->ownership;
            row->pp_size = w->pp;
            row->attn_tp_size = T;
            row->error_message = c->messages[c->count];
            row->comm = &c->comms[c->count];
            kvshard_error row_err;
            kvshard_error__reset(&row_err);
            uint32_t row_tp, row_split;
            kvshard_diag__ctx row_diag = kvshard_diag__on(&row_err);
            int rc = kvshard_plan__validate(&row_tp, &row_split, w->stage_counts, w->model, &pl,
                                            &row_diag);
            if (rc == KVSHARD_OK)
                rc = fill_row(row, w, &pl, row_split, &row_diag);
            if (rc == KVSHARD_ENOMEM)
                return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                           "out of memory");
            if (rc) {
                memset(row, 0, sizeof *row);
                row->layerwise_split_size = s;
                row->ownership = o->ownership;
                row->pp_size = w->pp;
                row->attn_tp_size = T;
                row->error_message = c->messages[c->count];
                row->comm = &c->comms[c->count];
                row->error = rc;
                memcpy(c->messages[c->count], row_err.message, sizeof row_err.message);
                if (!*first_error) {
                    *first_error = rc;
                    *first_diag->err = row_err;
                    first_diag->among = row_diag.among;
                }
            }
            if (!row->error && w->comm) {
                rc = price_row(&c->comms[c->count], row, w, &c->alloc, diag);
                if (rc)
                    return rc; /* an estimate refused is the command's refusal, as under plan */
            }
            if (runnable(c, row) && better(row, *best, c->by_balanced)) {
                *best = row;
                c->recommended = c->count;
            }
            c->count++;
        }
    }
    return KVSHARD_OK;
}

/* Whether P can be planned at all: its unsplit plan validates (a plan past
 * the layer-entry bound may still split). */
static int pp_valid(work *w, uint32_t P, kvshard_diag__ctx *diag)
{
    kvshard__planning pl = w->base;
    pl.options.pp_size = P;
    uint32_t T = 0, S = 0;
    int rc = kvshard_plan__validate(&T, &S, w->stage_counts, w->model, &pl, diag);
    return rc == KVSHARD_ELIMIT ? KVSHARD_OK : rc;
}

int kvshard_compare__comparison_create(kvshard_comparison **out, const kvshard_model *model,
                                       const kvshard_options *options,
                                       const kvshard_compare_options *compare_options,
                                       const kvshard_allocator *allocator,
                                       const kvshard__comm_inputs *comm, kvshard_diag__ctx *diag)
{
    work w;
    memset(&w, 0, sizeof w);
    w.model = model;
    w.given = options;
    w.comm = options ? comm : NULL;
    int rc = kvshard_validate__begin_planning(&w.base, out && model, options, allocator, diag);
    if (rc)
        return rc;
    kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
    if (compare_options &&
        (rc = kvshard_call__size(diag->err, "kvshard_compare_options", compare_options->size,
                                 sizeof co, "KVSHARD_COMPARE_OPTIONS_INIT")) != 0)
        return rc;
    if (compare_options)
        co = *compare_options;
    if ((unsigned)co.rank_by > KVSHARD_RANK_THROUGHPUT) {
        diag->option = "rank";
        return kvshard_error__fail(diag->err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                                   "comm_value: rank_by is %d; it takes KVSHARD_RANK_AUTO, "
                                   "KVSHARD_RANK_CAPACITY or KVSHARD_RANK_THROUGHPUT",
                                   (int)co.rank_by);
    }
    /* The rows set the split; the profile settles the rest once. */
    w.base.options.enable_layerwise_split = false;
    w.base.options.layerwise_split_size = 1;
    w.base.given.enable_layerwise_split = false;
    w.base.given.layerwise_split_size = 1;
    if ((rc = kvshard_device__map(&w.base, diag)) != 0 ||
        (rc = kvshard_validate__planning_settle(&w.base, model, diag)) != 0)
        return rc;
    kvshard_allocator a = kvshard_alloc__allocator_or_default(allocator);
    if ((rc = kvshard_device__open(&w.device, &w.base, model, &a, diag)) != 0) {
        kvshard_device__close(&w.device);
        return rc;
    }
    kvshard_device__figures_of(&w.device_figures, &w.device);
    /* An engine profile's budget: the weights fill its input once (its
     * engines plan one stage). */
    kvshard__device_layout engine_layout = {kvshard_options__attn_tp_size(&w.base.options),
                                            w.base.options.dp_size,
                                            w.base.options.cp_size,
                                            1,
                                            NULL,
                                            model->info.num_layers};
    if (w.device.fills && engine_layout.tp &&
        (rc = kvshard_device__fill(&w.base, &w.device, &engine_layout, diag)) != 0) {
        kvshard_device__close(&w.device);
        return rc;
    }
    const kvshard_options *o = &w.base.options;
    bool sweep = co.sweep_pp;
    if (sweep && o->pp_partition_count > 0) {
        kvshard_device__close(&w.device);
        diag->option = "sweep_pp";
        return kvshard_diag__fail(diag, kvshard_partition__about, KVSHARD_EPARTITION,
                                  "pp_partition fixes pp_size at %u: it cannot be given with "
                                  "sweep_pp",
                                  o->pp_partition_count);
    }
    kvshard_model__range_of(&w.layers, model->kinds, model->class_of, &model->info, 0,
                      model->info.num_layers);
    uint64_t dc = (uint64_t)o->dp_size * o->cp_size;
    w.ranks_count = dc && o->world_size % dc == 0 ? (uint32_t)(o->world_size / dc) : 0;
    /* Errors that no split size avoids end the comparison: those of the
     * configured P, or, sweeping, of every P. */
    uint32_t P0 = sweep ? 1 : o->pp_size, P1 = sweep ? w.ranks_count : o->pp_size;
    if (w.ranks_count == 0)
        P0 = P1 = o->pp_size;
    kvshard_error base_err;
    kvshard_error__reset(&base_err);
    size_t rows = 0;
    uint32_t valid = 0;
    if (w.ranks_count && (rc = prepare(&w, &a, diag)) != 0) {
        free_work(&a, &w);
        return rc;
    }
    int base_rc = KVSHARD_OK;
    for (uint32_t P = P0; P <= P1; P++) {
        if (sweep && w.ranks_count && w.ranks_count % P != 0)
            continue;
        kvshard_error e;
        kvshard_error__reset(&e);
        kvshard_diag__ctx p_diag = kvshard_diag__on(&e);
        rc = w.ranks_count ? pp_valid(&w, P, &p_diag) : KVSHARD_EWORLD;
        if (!w.ranks_count) {
            /* The world itself is wrong: the plan's own error says how. */
            kvshard__planning pl = w.base;
            uint32_t T, S, one = 0;
            rc = kvshard_plan__validate(&T, &S, &one, model, &pl, &p_diag);
        }
        if (rc) {
            if (base_rc == KVSHARD_OK) {
                base_rc = rc;
                base_err = e;
                diag->option = p_diag.option;
                diag->among = p_diag.among;
            }
            continue;
        }
        valid++;
        uint32_t T = w.ranks_count / P;
        for (uint32_t s = 1; s <= T; s++)
            rows += T % s == 0 ? RULES : 0;
    }
    if (valid == 0) {
        free_work(&a, &w);
        if (diag->err)
            *diag->err = base_err;
        return base_rc;
    }
    kvshard_comparison *c = kvshard_alloc__calloc(&a, 1, sizeof *c);
    if (c) {
        c->alloc = a;
        c->rows = kvshard_alloc__calloc(&a, rows, sizeof *c->rows);
        c->messages = kvshard_alloc__calloc(&a, rows, sizeof *c->messages);
        c->comms = kvshard_alloc__bytes(&a, rows, sizeof *c->comms);
    }
    if (!c || !c->rows || !c->messages || !c->comms) {
        kvshard_comparison_free(c);
        free_work(&a, &w);
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    }
    for (size_t i = 0; i < rows; i++) {
        kvshard_comm_estimate none = KVSHARD_COMM_ESTIMATE_INIT;
        c->comms[i] = none;
    }
    c->comm_given = w.comm != NULL;
    c->options = w.base.options;
    c->sweep_pp = sweep;
    c->profile = w.base.profile;
    c->by_balanced =
        w.base.options.context_length > 0 && w.base.profile->counting.ranks_by_balanced;
    const kvshard_comparison_row *best = NULL;
    int first_error = KVSHARD_OK;
    kvshard_error first_err;
    kvshard_error__reset(&first_err);
    kvshard_diag__ctx first_diag = kvshard_diag__on(&first_err);
    rc = KVSHARD_OK;
    for (uint32_t P = P0; rc == KVSHARD_OK && P <= P1; P++) {
        /* A probe: it keeps no error, but names options as the checks of
         * the plan do, and a failing row is located by what it names. */
        kvshard_diag__ctx probe = {NULL, diag->option, NULL};
        bool valid_pp = w.ranks_count % P == 0 && pp_valid(&w, P, &probe) == KVSHARD_OK;
        diag->option = probe.option;
        if (!valid_pp)
            continue;
        if ((rc = begin_pp(&w, P, diag)) != 0)
            break;
        if (P == o->pp_size || (sweep && P == P0)) {
            /* The header's figures: the configured P's. */
            c->tp = w.tp;
            c->has_memory = w.has_memory;
            c->memory = w.memory;
            c->uniform_blocks = w.uniform.num_blocks;
        }
        c->by_balanced = c->by_balanced && w.has_memory;
        rc = pp_rows(c, &w, &best, &first_error, &first_diag, diag);
    }
    free_work(&a, &w);
    if (rc) {
        kvshard_comparison_free(c);
        return rc;
    }
    if (!best) {
        kvshard_comparison_free(c);
        if (diag->err)
            *diag->err = first_err;
        diag->among = first_diag.among;
        return first_error;
    }
    if ((rc = settle_rank(c, co.rank_by, w.comm, diag)) != 0) {
        kvshard_comparison_free(c);
        return rc;
    }
    *out = c;
    return KVSHARD_OK;
}

size_t kvshard_comparison_row_count(const kvshard_comparison *comparison)
{
    return comparison ? comparison->count : 0;
}

const kvshard_comparison_row *kvshard_comparison_row_at(const kvshard_comparison *comparison,
                                                        size_t index)
{
    return comparison && index < comparison->count ? &comparison->rows[index] : NULL;
}

size_t kvshard_comparison_recommended(const kvshard_comparison *comparison)
{
    return comparison ? comparison->recommended : 0;
}

kvshard_rank_by kvshard_comparison_rank_by(const kvshard_comparison *comparison)
{
    return comparison ? comparison->rank_by : KVSHARD_RANK_CAPACITY;
}

int kvshard_compare__comparison_flags(char *buf, size_t cap, const kvshard_comparison *c)
{
    const kvshard_options *o = &c->options;
    const kvshard_comparison_row *rec = &c->rows[c->recommended];
    bool stages = c->sweep_pp || o->pp_size > 1;
    char pp[32] = "", seqs[48] = "";
    if (stages)
        snprintf(pp, sizeof pp, "--pp_size=%u ", rec->pp_size);
    if (c->has_memory && o->context_length && rec->has_balanced_max_seqs)
        snprintf(seqs, sizeof seqs, " --max_seqs=%llu",
                 (unsigned long long)rec->balanced_max_seqs);
    return snprintf(buf, cap, "%s--enable_layerwise_split=%s --layerwise_split_size=%u "
                              "--ownership=%s%s",
                    pp, rec->layerwise_split_size > 1 ? "true" : "false",
                    rec->layerwise_split_size, kvshard_ownership_name(rec->ownership), seqs);
}
