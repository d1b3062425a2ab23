/* Every split size that divides T, under each ownership rule, side by side. */
#include "plan/compare.h"

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

static void fill_row(kvshard_comparison_row *row, const kvshard_plan *p)
{
    row->min_owned_layers = UINT32_MAX;
    for (uint32_t s = 0; s < p->split; s++) {
        uint32_t c = p->owned_counts[s];
        row->min_owned_layers = c < row->min_owned_layers ? c : row->min_owned_layers;
        row->max_owned_layers = c > row->max_owned_layers ? c : row->max_owned_layers;
    }
    for (uint32_t r = 0; r < p->tp; r++) {
        const kvshard_rank_memory *m = &p->ranks[r];
        if (m->kv_bytes_per_token > row->max_kv_bytes_per_token)
            row->max_kv_bytes_per_token = m->kv_bytes_per_token;
        if (m->bytes_per_block > row->max_bytes_per_block)
            row->max_bytes_per_block = m->bytes_per_block;
    }
    row->has_num_blocks = p->capacity.has_num_blocks;
    row->num_blocks = p->capacity.num_blocks;
    row->max_tokens = p->capacity.max_tokens;
    if (p->capacity.has_num_blocks)
        row->gain = p->uniform.num_blocks ? (double)row->num_blocks / (double)p->uniform.num_blocks
                                          : HUGE_VAL; /* the unsplit plan fits no block */
    else
        row->gain = row->max_bytes_per_block
                        ? (double)p->uniform.bytes_per_block / (double)row->max_bytes_per_block
                        : 1.0;
    for (size_t i = 0; i < p->warning_count; i++)
        row->warnings |= 1u << p->warnings[i].code;
}

/* Whether row `a` beats the best so far: rows come by S, then ordinal, so a
 * tie keeps the earlier row. */
static bool better(const kvshard_comparison_row *a, const kvshard_comparison_row *best)
{
    if (a->error)
        return false;
    if (!best || best->error)
        return true;
    if (a->has_num_blocks && best->has_num_blocks)
        return a->num_blocks > best->num_blocks;
    return a->max_bytes_per_block < best->max_bytes_per_block;
}

int kvshard_comparison_create(kvshard_comparison **out, const kvshard_model *model,
                              const kvshard_options *options, const kvshard_allocator *allocator,
                              kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!out || !model)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "out and model must not be NULL");
    kvshard_options base = KVSHARD_OPTIONS_INIT;
    if (options)
        base = *options;
    base.enable_layerwise_split = false;
    base.layerwise_split_size = 1;
    base.ownership = KVSHARD_OWNERSHIP_ORDINAL;
    /* Errors that no split size avoids end the comparison. */
    kvshard_plan *plan;
    int rc = kvshard_plan_create(&plan, model, &base, allocator, err);
    if (rc && rc != KVSHARD_ENOBLOCK)
        return rc;
    uint32_t T = kvshard__attn_tp_size(&base);
    kvshard_plan_free(rc ? NULL : plan);
    kvshard__error_reset(err);

    kvshard_allocator a = kvshard__allocator_or_default(allocator);
    size_t divisors = 0;
    for (uint32_t s = 1; s <= T; s++)
        divisors += T % s == 0;
    kvshard_comparison *c = kvshard__calloc(&a, 1, sizeof *c);
    if (c) {
        c->alloc = a;
        c->rows = kvshard__calloc(&a, 2 * divisors, sizeof *c->rows);
        c->messages = kvshard__calloc(&a, 2 * divisors, sizeof *c->messages);
    }
    if (!c || !c->rows || !c->messages) {
        kvshard_comparison_free(c);
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
    }
    const kvshard_comparison_row *best = NULL;
    int first_error = KVSHARD_OK;
    kvshard_error first_err;
    kvshard__error_reset(&first_err);
    for (uint32_t s = 1; s <= T; s++) {
        if (T % s != 0)
            continue;
        for (int rule = KVSHARD_OWNERSHIP_ORDINAL; rule <= KVSHARD_OWNERSHIP_GLOBAL; rule++) {
            kvshard_comparison_row *row = &c->rows[c->count];
            kvshard_options o = base;
            o.enable_layerwise_split = s > 1;
            o.layerwise_split_size = s;
            o.ownership = (kvshard_ownership)rule;
            row->layerwise_split_size = s;
            row->ownership = o.ownership;
            kvshard_error row_err;
            rc = kvshard_plan_create(&plan, model, &o, &a, &row_err);
            if (rc == KVSHARD_ENOMEM) {
                kvshard_comparison_free(c);
                return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
            }
            row->error_message = c->messages[c->count];
            if (rc) {
                row->error = rc;
                memcpy(c->messages[c->count], row_err.message, sizeof row_err.message);
                if (!first_error) {
                    first_error = rc;
                    first_err = row_err;
                }
            } else {
                fill_row(row, plan);
                kvshard_plan_free(plan);
            }
            if (better(row, best)) {
                best = row;
                c->recommended = c->count;
            }
            c->count++;
        }
    }
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
    return comparison->count;
}

const kvshard_comparison_row *kvshard_comparison_row_at(const kvshard_comparison *comparison,
                                                        size_t index)
{
    return index < comparison->count ? &comparison->rows[index] : NULL;
}

size_t kvshard_comparison_recommended(const kvshard_comparison *comparison)
{
    return comparison->recommended;
}
