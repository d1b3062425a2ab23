/* The plan as the JSON document of SPEC §7. */
#include "json.h"
#include "plan.h"

static void emit_model(kvs_json *j, const kvshard_plan *p)
{
    const kvs_model_info *m = &p->model;
    kvs_json_raw(j, "  \"model\": {\"model_type\": ");
    kvs_json_string(j, p->model_type);
    kvs_json_printf(j,
                    ", \"num_layers\": %u, \"num_full_attention_layers\": %u, "
                    "\"num_linear_attention_layers\": %u, \"num_sliding_attention_layers\": %u, "
                    "\"num_draft_layers\": %u, \"attention\": \"%s\"},\n",
                    m->num_layers, m->num_full, m->num_linear, m->num_sliding,
                    m->num_draft_layers,
                    m->attention == KVSHARD_ATTENTION_MLA ? "mla" : "gqa");
}

static void emit_parallel(kvs_json *j, const kvshard_plan *p)
{
    const kvshard_options *o = &p->options;
    kvs_json_printf(j,
                    "  \"parallel\": {\"world_size\": %u, \"dp_size\": %u, \"cp_size\": %u, "
                    "\"attn_tp_size\": %u, \"layerwise_split_size\": %u, "
                    "\"effective_split_size\": %u, \"ownership\": \"%s\", "
                    "\"replication_factor\": %u},\n",
                    o->world_size, o->dp_size, o->cp_size, p->tp, o->layerwise_split_size,
                    p->split, kvshard_ownership_name(o->ownership), p->replication);
}

static void emit_layers(kvs_json *j, const kvshard_plan *p)
{
    kvs_json_raw(j, "  \"layers\": [");
    for (uint32_t i = 0; i < p->model.num_layers; i++) {
        kvs_json_printf(j, "%s\n    {\"index\": %u, \"kind\": \"%s\", \"owner\": ", i ? "," : "", i,
                        kvshard_layer_kind_name((kvshard_layer_kind)p->kinds[i]));
        if (p->owner[i] == KVSHARD_OWNER_ALL)
            kvs_json_raw(j, "null}");
        else
            kvs_json_printf(j, "%d}", p->owner[i]);
    }
    kvs_json_raw(j, p->model.num_layers ? "\n  ],\n" : "],\n");
}

static void emit_ranks(kvs_json *j, const kvshard_plan *p)
{
    kvs_json_raw(j, "  \"ranks\": [");
    for (uint32_t r = 0; r < p->tp; r++) {
        uint32_t s = p->split_rank_of[r];
        kvs_json_printf(j,
                        "%s\n    {\"tp_rank\": %u, \"split_group\": %u, \"split_rank\": %u, "
                        "\"owned_layers\": [",
                        r ? "," : "", r, r / p->split, s);
        for (uint32_t k = p->owned_offsets[s]; k < p->owned_offsets[s + 1]; k++)
            kvs_json_printf(j, "%s%u", k > p->owned_offsets[s] ? ", " : "", p->owned_layers[k]);
        const kvshard_rank_memory *m = &p->ranks[r];
        kvs_json_printf(j,
                        "], \"kv_bytes_per_token\": %llu, \"scratch_bytes_per_token\": %llu, "
                        "\"draft_bytes_per_token\": %llu, \"bytes_per_block\": %llu, "
                        "\"state_bytes_per_seq\": %llu, \"num_blocks\": ",
                        (unsigned long long)m->kv_bytes_per_token,
                        (unsigned long long)m->scratch_bytes_per_token,
                        (unsigned long long)m->draft_bytes_per_token,
                        (unsigned long long)m->bytes_per_block,
                        (unsigned long long)m->state_bytes_per_seq);
        kvs_json_u64_or_null(j, m->has_num_blocks, m->num_blocks);
        kvs_json_raw(j, "}");
    }
    kvs_json_raw(j, "\n  ],\n");
}

static void emit_capacity(kvs_json *j, const kvshard_plan *p)
{
    const kvshard_capacity *c = &p->capacity;
    kvs_json_printf(j, "  \"capacity\": {\"block_size\": %u, \"memory_per_rank\": ", c->block_size);
    kvs_json_u64_or_null(j, c->memory_per_rank != 0, c->memory_per_rank);
    kvs_json_printf(j, ", \"max_seqs\": %u, \"num_blocks\": ", c->max_seqs);
    kvs_json_u64_or_null(j, c->has_num_blocks, c->num_blocks);
    kvs_json_raw(j, ", \"max_tokens\": ");
    kvs_json_u64_or_null(j, c->has_num_blocks, c->max_tokens);
    kvs_json_raw(j, "},\n");

    const kvshard_uniform *u = &p->uniform;
    kvs_json_printf(j, "  \"uniform\": {\"kv_bytes_per_token\": %llu, \"bytes_per_block\": %llu, "
                       "\"num_blocks\": ",
                    (unsigned long long)u->kv_bytes_per_token,
                    (unsigned long long)u->bytes_per_block);
    kvs_json_u64_or_null(j, u->has_num_blocks, u->num_blocks);
    kvs_json_raw(j, "},\n");
}

static void emit_warnings(kvs_json *j, const kvshard_plan *p)
{
    kvs_json_raw(j, "  \"warnings\": [");
    for (size_t i = 0; i < p->warning_count; i++) {
        kvs_json_printf(j, "%s\n    {\"code\": \"%s\", \"message\": ", i ? "," : "",
                        kvshard_warning_name(p->warnings[i].code));
        kvs_json_string(j, p->warnings[i].message);
        kvs_json_raw(j, "}");
    }
    kvs_json_raw(j, p->warning_count ? "\n  ],\n" : "],\n");
}

int kvshard_plan_write_json(const kvshard_plan *plan, kvshard_write_fn write, void *user)
{
    if (!plan || !write)
        return KVSHARD_EINVAL;
    kvs_json j;
    kvs_json_init(&j, write, user);
    kvs_json_raw(&j, "{\n  \"kvshard_version\": ");
    kvs_json_string(&j, KVSHARD_VERSION_STRING);
    kvs_json_raw(&j, ",\n");
    emit_model(&j, plan);
    emit_parallel(&j, plan);
    emit_layers(&j, plan);
    emit_ranks(&j, plan);
    emit_capacity(&j, plan);
    emit_warnings(&j, plan);
    kvs_json_printf(&j, "  \"digest\": \"%016llx\"\n}\n", (unsigned long long)plan->digest);
    return kvs_json_finish(&j);
}
