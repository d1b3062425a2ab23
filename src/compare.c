/* Every split size that divides T, under both ownership rules, side by side. */
#include "json.h"
#include "plan.h"

#include <math.h>
#include <string.h>

struct kvshard_comparison {
    kvshard_allocator alloc;
    kvshard_comparison_row *rows;
    char (*messages)[KVSHARD_ERROR_MESSAGE_MAX];
    size_t count;
    size_t recommended;
};

static const kvs_mark no_mark = {0, 0, 0};

void kvshard_comparison_free(kvshard_comparison *comparison)
{
    if (!comparison)
        return;
    kvshard_allocator a = comparison->alloc;
    kvs_free(&a, comparison->rows);
    kvs_free(&a, comparison->messages);
    kvs_free(&a, comparison);
}

static void fill_row(kvshard_comparison_row *row, const kvshard_plan *p)
{
    row->min_owned_layers = UINT32_MAX;
    for (uint32_t s = 0; s < p->split; s++) {
        uint32_t c = kvs_plan_owned_count(p, s);
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
    kvs_error_reset(err);
    if (!out || !model)
        return kvs_fail(err, KVSHARD_EINVAL, "", no_mark, "out and model must not be NULL");
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
    uint32_t T = rc ? base.world_size / (base.dp_size * base.cp_size) : plan->tp;
    kvshard_plan_free(rc ? NULL : plan);
    kvs_error_reset(err);

    kvshard_allocator a = kvs_allocator_or_default(allocator);
    size_t divisors = 0;
    for (uint32_t s = 1; s <= T; s++)
        divisors += T % s == 0;
    kvshard_comparison *c = kvs_calloc(&a, 1, sizeof *c);
    if (c) {
        c->alloc = a;
        c->rows = kvs_calloc(&a, 2 * divisors, sizeof *c->rows);
        c->messages = kvs_calloc(&a, 2 * divisors, sizeof *c->messages);
    }
    if (!c || !c->rows || !c->messages) {
        kvshard_comparison_free(c);
        return kvs_fail(err, KVSHARD_ENOMEM, "", no_mark, "out of memory");
    }
    const kvshard_comparison_row *best = NULL;
    int first_error = KVSHARD_OK;
    kvshard_error first_err;
    kvs_error_reset(&first_err);
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
                return kvs_fail(err, KVSHARD_ENOMEM, "", no_mark, "out of memory");
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

int kvshard_comparison_write_json(const kvshard_comparison *comparison, kvshard_write_fn write,
                                  void *user)
{
    if (!comparison || !write)
        return KVSHARD_EINVAL;
    kvs_json j;
    kvs_json_init(&j, write, user);
    kvs_json_raw(&j, "{\n  \"rows\": [");
    for (size_t i = 0; i < comparison->count; i++) {
        const kvshard_comparison_row *r = &comparison->rows[i];
        kvs_json_printf(&j, "%s\n    {\"layerwise_split_size\": %u, \"ownership\": \"%s\", ",
                        i ? "," : "", r->layerwise_split_size, kvshard_ownership_name(r->ownership));
        if (r->error) {
            kvs_json_raw(&j, "\"min_owned_layers\": null, \"max_owned_layers\": null, "
                             "\"max_kv_bytes_per_token\": null, \"num_blocks\": null, "
                             "\"max_tokens\": null, \"gain\": null, \"warnings\": [], "
                             "\"error\": ");
            kvs_json_string(&j, r->error_message);
            kvs_json_raw(&j, "}");
            continue;
        }
        kvs_json_printf(&j,
                        "\"min_owned_layers\": %u, \"max_owned_layers\": %u, "
                        "\"max_kv_bytes_per_token\": %llu, \"num_blocks\": ",
                        r->min_owned_layers, r->max_owned_layers,
                        (unsigned long long)r->max_kv_bytes_per_token);
        kvs_json_u64_or_null(&j, r->has_num_blocks, r->num_blocks);
        kvs_json_raw(&j, ", \"max_tokens\": ");
        kvs_json_u64_or_null(&j, r->has_num_blocks, r->max_tokens);
        if (isinf(r->gain))
            kvs_json_raw(&j, ", \"gain\": null, \"warnings\": [");
        else
            kvs_json_printf(&j, ", \"gain\": %.4f, \"warnings\": [", r->gain);
        bool first = true;
        for (unsigned code = 0; code < 32; code++) {
            if (r->warnings & (1u << code)) {
                kvs_json_printf(&j, "%s\"%s\"", first ? "" : ", ",
                                kvshard_warning_name((kvshard_warning_code)code));
                first = false;
            }
        }
        kvs_json_raw(&j, "], \"error\": null}");
    }
    const kvshard_comparison_row *rec = &comparison->rows[comparison->recommended];
    kvs_json_printf(&j,
                    "\n  ],\n  \"recommendation\": {\"layerwise_split_size\": %u, "
                    "\"ownership\": \"%s\"}\n}\n",
                    rec->layerwise_split_size, kvshard_ownership_name(rec->ownership));
    return kvs_json_finish(&j);
}
