/* Every split size that divides T, under each ownership rule, side by side.
 * A row needs only how many KV layers each split rank owns, so no row builds
 * a plan: the work is bounded by the KV layers times the split sizes, and a
 * row whose plan would pass KVSHARD_MAX_LAYER_ENTRIES is refused before any
 * work. */
#include "plan/compare.h"
#include "base/abi.h"

#include "base/checked.h"

#include "deploy/options.h"
#include "plan/plan.h"

#include <math.h>
#include <string.h>

void kvshard_comparison_free(kvshard_comparison *comparison)
{
    if (!comparison)
        return;
    kvshard_allocator a = comparison->alloc;
    kvshard__free(&a, comparison->rows);
    kvshard__free(&a, comparison->messages);
    kvshard__free(&a, comparison);
}

static const kvshard_ownership rules[] = {KVSHARD_OWNERSHIP_ORDINAL, KVSHARD_OWNERSHIP_GLOBAL,
                                          KVSHARD_OWNERSHIP_CONTIGUOUS};
#define RULES (sizeof rules / sizeof rules[0])

typedef struct work {
    const kvshard_model *model;
    kvshard__planning base; /* settled, split off */
    kvshard__range layers;  /* every layer: one stage */
    uint32_t tp;
    uint32_t *counts;   /* owned counts of the row's split ranks */
    uint32_t *by_class; /* the same by class: a row of the model's classes per split rank */
    kvshard_rank_memory *ranks;
    uint64_t memory;
    bool has_memory;
    uint64_t unsplit_bytes_per_block;
    kvshard_uniform uniform;
} work;

static void mark_warning(void *ctx, kvshard_warning_code code, const char *message)
{
    (void)message;
    *(uint32_t *)ctx |= 1u << code;
}

/* One row: the plan's figures without the plan. */
static int fill_row(kvshard_comparison_row *row, work *w, const kvshard__planning *pl,
                    uint32_t S, kvshard_error *err)
{
    const kvshard__model_info *m = &w->model->info;
    const kvshard_options *o = &pl->options;
    uint32_t n_kv = w->layers.num_kv;
    kvshard__owned_counts(w->counts, w->by_class, w->model->kinds, w->model->class_of,
                          m->num_classes, &w->layers, S, o->ownership);
    kvshard__memory_inputs in = {m,
                                 o,
                                 w->tp,
                                 S,
                                 w->by_class,
                                 &w->layers,
                                 pl->profile->counts_draft_layers,
                                 pl->profile->mla_v2_bytes,
                                 w->model->source};
    int rc = kvshard__memory_ranks(w->ranks, &in, err);
    if (rc)
        return rc;
    kvshard__capacity c;
    memset(&c, 0, sizeof c);
    if (w->has_memory || pl->profile->sizes_without_budget) {
        kvshard__capacity_inputs ci = kvshard__capacity_inputs_of(
            pl, w->ranks, w->tp, S, w->unsplit_bytes_per_block, w->memory, w->has_memory);
        const char *blame;
        if ((rc = pl->profile->capacity(&c, NULL, &ci, &blame, err)) != 0)
            return rc;
    }
    for (uint32_t r = 0; c.has_bytes_per_block && r < w->tp; r++)
        w->ranks[r].bytes_per_block = c.bytes_per_block;
    row->min_owned_layers = UINT32_MAX;
    for (uint32_t s = 0; s < S; s++) {
        row->min_owned_layers =
            w->counts[s] < row->min_owned_layers ? w->counts[s] : row->min_owned_layers;
        row->max_owned_layers =
            w->counts[s] > row->max_owned_layers ? w->counts[s] : row->max_owned_layers;
    }
    kvshard__largest_figures(&row->max_kv_bytes_per_token, &row->max_bytes_per_block, w->ranks,
                             w->tp);
    kvshard_blocks b = kvshard__blocks_of(&c);
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
    kvshard__warning_inputs wi = {pl,
                                  S,
                                  kvshard__replication_factor(m, w->tp),
                                  n_kv,
                                  w->counts,
                                  &c,
                                  w->has_memory,
                                  w->memory,
                                  w->ranks[0].state_bytes_per_seq};
    kvshard__collect_warnings(&wi, mark_warning, &row->warnings);
    return KVSHARD_OK;
}

/* Whether row `a` beats the best so far. Rows come by S, then ordinal,
 * global, contiguous, so a tie keeps the earlier row. */
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

/* The unsplit figures every row's gain is measured against; left at their
 * start when the unsplit plan's figures overflow. */
static void unsplit_figures(work *w)
{
    kvshard__memory_inputs in = {&w->model->info,
                                 &w->base.options,
                                 w->tp,
                                 1,
                                 w->layers.class_census, /* one split rank owns them all */
                                 &w->layers,
                                 w->base.profile->counts_draft_layers,
                                 w->base.profile->mla_v2_bytes,
                                 w->model->source};
    kvshard_uniform u;
    KVSHARD__INIT_BYTES(u, kvshard_uniform, KVSHARD_UNIFORM_INIT);
    if (kvshard__memory_ranks(w->ranks, &in, NULL) == KVSHARD_OK)
        u = kvshard__uniform_of(w->ranks, w->tp, &w->base, w->unsplit_bytes_per_block, w->memory,
                                w->has_memory);
    w->uniform = u;
}

static void free_work(const kvshard_allocator *a, work *w)
{
    kvshard__free(a, w->counts);
    kvshard__free(a, w->by_class);
    kvshard__free(a, w->ranks);
}

static int prepare(work *w, const kvshard_allocator *a, kvshard_error *err)
{
    const kvshard_model *model = w->model;
    w->counts = kvshard__alloc(a, w->tp, sizeof *w->counts);
    w->by_class = kvshard__alloc(a, (size_t)w->tp * model->info.num_classes, sizeof *w->by_class);
    w->ranks = kvshard__alloc(a, w->tp, sizeof *w->ranks);
    if (!w->counts || !w->by_class || !w->ranks)
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
    /* The unsplit bytes per block, as a profile that does not split sizes
     * its state slots by. */
    kvshard__memory_inputs in = {&model->info,
                                 &w->base.options,
                                 w->tp,
                                 1,
                                 w->layers.class_census,
                                 &w->layers,
                                 w->base.profile->counts_draft_layers,
                                 w->base.profile->mla_v2_bytes,
                                 model->source};
    int rc = kvshard__unsplit_bytes_per_block(&w->unsplit_bytes_per_block, &in, err);
    if (rc)
        return rc;
    unsplit_figures(w);
    return KVSHARD_OK;
}

int kvshard_comparison_create(kvshard_comparison **out, const kvshard_model *model,
                              const kvshard_options *options, const kvshard_allocator *allocator,
                              kvshard_error *err)
{
    const char *blame;
    return kvshard__comparison_create(out, model, options, allocator, &blame, err);
}

int kvshard__comparison_create(kvshard_comparison **out, const kvshard_model *model,
                               const kvshard_options *options, const kvshard_allocator *allocator,
                               const char **blame, kvshard_error *err)
{
    work w;
    memset(&w, 0, sizeof w);
    w.model = model;
    int rc = kvshard__begin_planning(&w.base, out && model, options, allocator, blame, err);
    if (rc)
        return rc;
    /* The rows set the split; the profile settles the rest once. */
    w.base.options.enable_layerwise_split = false;
    w.base.options.layerwise_split_size = 1;
    w.base.given.enable_layerwise_split = false;
    w.base.given.layerwise_split_size = 1;
    if ((rc = kvshard__planning_settle(&w.base, model, blame, err)) != 0)
        return rc;
    kvshard__range_of(&w.layers, model->kinds, model->class_of, &model->info, 0,
                      model->info.num_layers);
    /* Errors that no split size avoids end the comparison. */
    uint32_t T = 0, S = 0;
    kvshard_error base_err;
    kvshard__error_reset(&base_err);
    rc = kvshard__plan_validate(&T, &S, model, &w.base, blame, &base_err);
    if (rc == KVSHARD_ELIMIT) /* the unsplit rows are past the bound; larger splits may pass */
        T = kvshard__attn_tp_size(&w.base.options);
    else if (rc) {
        if (err)
            *err = base_err;
        return rc;
    }
    if ((rc = kvshard__planning_budget(&w.memory, &w.has_memory, &w.base, model, T, 1, blame,
                                       err)) != 0)
        return rc;
    w.tp = T;
    kvshard_allocator a = kvshard__allocator_or_default(allocator);
    size_t divisors = 0;
    for (uint32_t s = 1; s <= T; s++)
        divisors += T % s == 0;
    kvshard_comparison *c = kvshard__calloc(&a, 1, sizeof *c);
    if (c) {
        c->alloc = a;
        c->rows = kvshard__calloc(&a, RULES * divisors, sizeof *c->rows);
        c->messages = kvshard__calloc(&a, RULES * divisors, sizeof *c->messages);
    }
    if (!c || !c->rows || !c->messages) {
        kvshard_comparison_free(c);
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
    }
    if ((rc = prepare(&w, &a, err)) != 0) {
        free_work(&a, &w);
        kvshard_comparison_free(c);
        return rc;
    }
    c->options = w.base.options;
    c->profile = w.base.profile;
    c->tp = T;
    c->has_memory = w.has_memory;
    c->memory = w.memory;
    c->by_balanced =
        w.has_memory && w.base.options.context_length > 0 && w.base.profile->ranks_by_balanced;
    c->uniform_blocks = w.uniform.num_blocks;
    const kvshard_comparison_row *best = NULL;
    int first_error = KVSHARD_OK;
    kvshard_error first_err;
    kvshard__error_reset(&first_err);
    for (uint32_t s = 1; s <= T; s++) {
        if (T % s != 0)
            continue;
        for (size_t rule = 0; rule < RULES; rule++) {
            kvshard_comparison_row *row = &c->rows[c->count];
            kvshard__planning pl = w.base;
            kvshard_options *o = &pl.options;
            o->enable_layerwise_split = s > 1;
            o->layerwise_split_size = s;
            o->ownership = rules[rule];
            row->layerwise_split_size = s;
            row->ownership = o->ownership;
            row->error_message = c->messages[c->count];
            kvshard_error row_err;
            kvshard__error_reset(&row_err);
            uint32_t row_tp, row_split;
            const char *row_blame;
            rc = kvshard__plan_validate(&row_tp, &row_split, model, &pl, &row_blame, &row_err);
            if (rc == KVSHARD_OK)
                rc = fill_row(row, &w, &pl, row_split, &row_err);
            if (rc == KVSHARD_ENOMEM) {
                free_work(&a, &w);
                kvshard_comparison_free(c);
                return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
            }
            if (rc) {
                memset(row, 0, sizeof *row);
                row->layerwise_split_size = s;
                row->ownership = o->ownership;
                row->error_message = c->messages[c->count];
                row->error = rc;
                memcpy(c->messages[c->count], row_err.message, sizeof row_err.message);
                if (!first_error) {
                    first_error = rc;
                    first_err = row_err;
                }
            }
            if (better(row, best, c->by_balanced)) {
                best = row;
                c->recommended = c->count;
            }
            c->count++;
        }
    }
    free_work(&a, &w);
    if (!best) {
        kvshard_comparison_free(c);
        if (err)
            *err = first_err;
        return first_error;
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
