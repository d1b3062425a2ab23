/* The plan and the comparison as JSON documents. */
#include "output/json.h"
#include "plan/compare.h"
#include "plan/plan.h"

#include <math.h>

static void emit_model(kvshard__json *j, const kvshard_plan *p)
{
    const kvshard__model_info *m = &p->model;
    kvshard__json_raw(j, "  \"model\": {\"model_type\": ");
    kvshard__json_string(j, p->model_type);
    kvshard__json_printf(
        j,
        ", \"num_layers\": %u, \"num_full_attention_layers\": %u, "
        "\"num_linear_attention_layers\": %u, \"num_sliding_attention_layers\": %u, "
        "\"num_draft_layers\": %u, \"attention\": \"%s\"},\n",
        m->num_layers, m->num_full, m->num_linear, m->num_sliding, m->num_draft_layers,
        m->attention == KVSHARD_ATTENTION_MLA ? "mla" : "gqa");
}

static void emit_parallel(kvshard__json *j, const kvshard_plan *p)
{
    const kvshard_options *o = &p->options;
    kvshard__json_printf(j,
                         "  \"parallel\": {\"world_size\": %u, \"dp_size\": %u, \"cp_size\": %u, "
                         "\"attn_tp_size\": %u, \"layerwise_split_size\": %u, "
                         "\"effective_split_size\": %u, \"ownership\": \"%s\", "
                         "\"replication_factor\": %u},\n",
                         o->world_size, o->dp_size, o->cp_size, p->tp, o->layerwise_split_size,
                         p->split, kvshard_ownership_name(o->ownership), p->replication);
}

static void emit_layers(kvshard__json *j, const kvshard_plan *p)
{
    kvshard__json_raw(j, "  \"layers\": [");
    for (uint32_t i = 0; i < p->model.num_layers; i++) {
        kvshard__json_printf(j,
                             "%s\n    {\"index\": %u, \"kind\": \"%s\", \"owner\": ", i ? "," : "",
                             i, kvshard_layer_kind_name((kvshard_layer_kind)p->kinds[i]));
        if (p->owner[i] == KVSHARD_OWNER_ALL)
            kvshard__json_raw(j, "null}");
        else
            kvshard__json_printf(j, "%d}", p->owner[i]);
    }
    kvshard__json_raw(j, p->model.num_layers ? "\n  ],\n" : "],\n");
}

static void emit_ranks(kvshard__json *j, const kvshard_plan *p)
{
    kvshard__json_raw(j, "  \"ranks\": [");
    for (uint32_t r = 0; r < p->tp; r++) {
        uint32_t s = p->split_rank_of[r];
        kvshard__json_printf(j,
                             "%s\n    {\"tp_rank\": %u, \"split_group\": %u, \"split_rank\": %u, "
                             "\"owned_layers\": [",
                             r ? "," : "", r, r / p->split, s);
        for (uint32_t k = p->owned_offsets[s]; k < p->owned_offsets[s + 1]; k++)
            kvshard__json_printf(j, "%s%u", k > p->owned_offsets[s] ? ", " : "",
                                 p->owned_layers[k]);
        const kvshard_rank_memory *m = &p->ranks[r];
        kvshard__json_printf(j,
                             "], \"kv_bytes_per_token\": %llu, \"scratch_bytes_per_token\": %llu, "
                             "\"draft_bytes_per_token\": %llu, \"bytes_per_block\": %llu, "
                             "\"state_bytes_per_seq\": %llu, \"num_blocks\": ",
                             (unsigned long long)m->kv_bytes_per_token,
                             (unsigned long long)m->scratch_bytes_per_token,
                             (unsigned long long)m->draft_bytes_per_token,
                             (unsigned long long)m->bytes_per_block,
                             (unsigned long long)m->state_bytes_per_seq);
        kvshard__json_u64_or_null(j, m->has_num_blocks, m->num_blocks);
        kvshard__json_raw(j, "}");
    }
    kvshard__json_raw(j, "\n  ],\n");
}

static void emit_capacity(kvshard__json *j, const kvshard_plan *p)
{
    const kvshard_capacity *c = &p->capacity;
    kvshard__json_printf(
        j, "  \"capacity\": {\"block_size\": %u, \"memory_per_rank\": ", c->block_size);
    kvshard__json_u64_or_null(j, c->memory_per_rank != 0, c->memory_per_rank);
    kvshard__json_printf(j, ", \"max_seqs\": %u, \"num_blocks\": ", c->max_seqs);
    kvshard__json_u64_or_null(j, c->has_num_blocks, c->num_blocks);
    kvshard__json_raw(j, ", \"max_tokens\": ");
    kvshard__json_u64_or_null(j, c->has_num_blocks, c->max_tokens);
    kvshard__json_raw(j, "},\n");

    const kvshard_uniform *u = &p->uniform;
    kvshard__json_printf(j,
                         "  \"uniform\": {\"kv_bytes_per_token\": %llu, \"bytes_per_block\": %llu, "
                         "\"num_blocks\": ",
                         (unsigned long long)u->kv_bytes_per_token,
                         (unsigned long long)u->bytes_per_block);
    kvshard__json_u64_or_null(j, u->has_num_blocks, u->num_blocks);
    kvshard__json_raw(j, "},\n");
}

static void emit_warnings(kvshard__json *j, const kvshard_plan *p)
{
    kvshard__json_raw(j, "  \"warnings\": [");
    for (size_t i = 0; i < p->warning_count; i++) {
        kvshard__json_printf(j, "%s\n    {\"code\": \"%s\", \"message\": ", i ? "," : "",
                             kvshard_warning_name(p->warnings[i].code));
        kvshard__json_string(j, p->warnings[i].message);
        kvshard__json_raw(j, "}");
    }
    kvshard__json_raw(j, p->warning_count ? "\n  ],\n" : "],\n");
}

int kvshard_plan_write_json(const kvshard_plan *plan, kvshard_write_fn write, void *user)
{
    if (!plan || !write)
        return KVSHARD_EINVAL;
    kvshard__json j;
    kvshard__json_init(&j, write, user);
    kvshard__json_raw(&j, "{\n  \"kvshard_version\": ");
    kvshard__json_string(&j, KVSHARD_VERSION_STRING);
    kvshard__json_raw(&j, ",\n");
    emit_model(&j, plan);
    emit_parallel(&j, plan);
    emit_layers(&j, plan);
    emit_ranks(&j, plan);
    emit_capacity(&j, plan);
    emit_warnings(&j, plan);
    kvshard__json_printf(&j, "  \"digest\": \"%016llx\"\n}\n", (unsigned long long)plan->digest);
    return kvshard__json_finish(&j);
}

int kvshard_comparison_write_json(const kvshard_comparison *comparison, kvshard_write_fn write,
                                  void *user)
{
    if (!comparison || !write)
        return KVSHARD_EINVAL;
    kvshard__json j;
    kvshard__json_init(&j, write, user);
    kvshard__json_raw(&j, "{\n  \"rows\": [");
    for (size_t i = 0; i < comparison->count; i++) {
        const kvshard_comparison_row *r = &comparison->rows[i];
        kvshard__json_printf(&j, "%s\n    {\"layerwise_split_size\": %u, \"ownership\": \"%s\", ",
                             i ? "," : "", r->layerwise_split_size,
                             kvshard_ownership_name(r->ownership));
        if (r->error) {
            kvshard__json_raw(&j, "\"min_owned_layers\": null, \"max_owned_layers\": null, "
                                  "\"max_kv_bytes_per_token\": null, \"num_blocks\": null, "
                                  "\"max_tokens\": null, \"gain\": null, \"warnings\": [], "
                                  "\"error\": ");
            kvshard__json_string(&j, r->error_message);
            kvshard__json_raw(&j, "}");
            continue;
        }
        kvshard__json_printf(&j,
                             "\"min_owned_layers\": %u, \"max_owned_layers\": %u, "
                             "\"max_kv_bytes_per_token\": %llu, \"num_blocks\": ",
                             r->min_owned_layers, r->max_owned_layers,
                             (unsigned long long)r->max_kv_bytes_per_token);
        kvshard__json_u64_or_null(&j, r->has_num_blocks, r->num_blocks);
        kvshard__json_raw(&j, ", \"max_tokens\": ");
        kvshard__json_u64_or_null(&j, r->has_num_blocks, r->max_tokens);
        if (isinf(r->gain))
            kvshard__json_raw(&j, ", \"gain\": null, \"warnings\": [");
        else
            kvshard__json_printf(&j, ", \"gain\": %.4f, \"warnings\": [", r->gain);
        bool first = true;
        for (unsigned code = 0; code < 32; code++) {
            if (r->warnings & (1u << code)) {
                kvshard__json_printf(&j, "%s\"%s\"", first ? "" : ", ",
                                     kvshard_warning_name((kvshard_warning_code)code));
                first = false;
            }
        }
        kvshard__json_raw(&j, "], \"error\": null}");
    }
    const kvshard_comparison_row *rec = &comparison->rows[comparison->recommended];
    kvshard__json_printf(&j,
                         "\n  ],\n  \"recommendation\": {\"layerwise_split_size\": %u, "
                         "\"ownership\": \"%s\"}\n}\n",
                         rec->layerwise_split_size, kvshard_ownership_name(rec->ownership));
    return kvshard__json_finish(&j);
}
