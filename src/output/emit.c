/* The plan and the comparison as JSON documents. Field names are stable:
 * new fields are only added. */
#include "output/emit.h"

#include "output/comm_out.h"
#include "output/writer.h"
#include "explore/compare.h"
#include "plan/device.h"
#include "explore/fit.h"
#include "plan/queries.h"
#include "profile/profiles.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The JSON field writers every document shares (writer.c). */
#define key kvshard_writer__json_key
#define field_u64 kvshard_writer__json_u64
#define field_or_null kvshard_writer__json_u64_or_null
#define field_word kvshard_writer__json_word

static void field_bool(kvshard__out *o, const char *name, bool v)
{
    key(o, name);
    kvshard_writer__out_raw(o, v ? "true" : "false");
}

static void sep(kvshard__out *o)
{
    kvshard_writer__out_put(o, ", ", 2);
}

/* "warnings": the names of the warnings a row's mask (bit 1 << code) holds. */
static void field_warnings(kvshard__out *o, uint32_t mask)
{
    key(o, "warnings");
    kvshard_writer__out_put(o, "[", 1);
    bool first = true;
    for (unsigned code = 0; code < 32; code++) {
        if (mask & (1u << code)) {
            if (!first)
                sep(o);
            const char *name = kvshard_warning_name((kvshard_warning_code)code);
            kvshard_writer__out_json_string(o, name, strlen(name));
            first = false;
        }
    }
    kvshard_writer__out_put(o, "]", 1);
}

static void emit_model(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard__model_info *m = p->model;
    bool has_state = m->state.kind != KVSHARD_STATE_NONE;
    kvshard_writer__out_raw(o, "  \"model\": {");
    field_word(o, "model_type", p->model_type[0] ? p->model_type : NULL);
    sep(o);
    field_u64(o, "num_layers", m->num_layers);
    sep(o);
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        const char *count = kvshard_kinds__of(k)->json_count;
        if (count) {
            field_u64(o, count, m->count[k]);
            sep(o);
        }
    }
    field_u64(o, "num_draft_layers", m->num_draft_layers);
    sep(o);
    field_word(o, "attention", kvshard_attention_name(m->attention));
    sep(o);
    field_word(o, "state_kind", has_state ? kvshard_state_kind_name(m->state.kind) : NULL);
    sep(o);
    field_word(o, "state_dtype",
               p->state_dtype != KVSHARD_DTYPE_AUTO ? kvshard_dtype_name(p->state_dtype) : NULL);
    sep(o);
    field_word(o, "kv_cache_dtype",
               kvshard_dtype_name(kvshard_memory__kv_cache_dtype(p->model, p->options)));
    kvshard_writer__out_raw(o, "},\n");
}

static void emit_parallel(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard_options *opt = p->options;
    kvshard_writer__out_raw(o, "  \"parallel\": {");
    field_u64(o, "world_size", opt->world_size);
    sep(o);
    field_u64(o, "dp_size", opt->dp_size);
    sep(o);
    field_u64(o, "cp_size", opt->cp_size);
    sep(o);
    field_u64(o, "attn_tp_size", p->tp);
    sep(o);
    field_bool(o, "enable_layerwise_split", opt->enable_layerwise_split);
    sep(o);
    field_u64(o, "layerwise_split_size", opt->layerwise_split_size);
    sep(o);
    field_u64(o, "effective_split_size", p->split);
    sep(o);
    field_word(o, "ownership", kvshard_ownership_name(opt->ownership));
    sep(o);
    field_u64(o, "replication_factor", p->replication);
    sep(o);
    field_u64(o, "pp_size", p->pp);
    kvshard_writer__out_raw(o, ",\n               \"pp_partition\": [");
    for (uint32_t s = 0; s < p->pp && !o->failed; s++) {
        if (s)
            sep(o);
        kvshard_writer__out_u64(o, p->stages[s].count);
    }
    kvshard_writer__out_raw(o, "], ");
    field_word(o, "pp_partition_rule", kvshard_pp_rule_name(opt->pp_partition_rule));
    sep(o);
    field_word(o, "rank_layout", kvshard_rank_layout_name(opt->rank_layout));
    kvshard__strides st = kvshard_partition__rank_strides(opt, p->tp);
    kvshard_writer__out_raw(o, ",\n               \"rank_strides\": {");
    field_u64(o, "dp", st.dp);
    sep(o);
    field_u64(o, "pp", st.pp);
    sep(o);
    field_u64(o, "cp", st.cp);
    sep(o);
    field_u64(o, "tp", st.tp);
    kvshard_writer__out_raw(o, "}, ");
    /* Whether experts are placed whole on ranks: the value the weights of
     * a stage were charged with. */
    field_bool(o, "expert_parallel", opt->expert_parallel);
    kvshard_writer__out_raw(o, "},\n");
}

/* One object per stage: its layers, its largest per-rank figures and the
 * fewest blocks of its ranks that store KV. */
static void emit_stages(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard_writer__out_raw(o, "  \"stages\": [");
    for (uint32_t s = 0; s < p->pp && !o->failed; s++) {
        kvshard_stage_info info = kvshard_queries__stage_info_of(p, s);
        kvshard_writer__out_raw(o, s ? ",\n    {" : "\n    {");
        field_u64(o, "stage", s);
        sep(o);
        field_u64(o, "layer_first", info.layer_first);
        sep(o);
        field_u64(o, "layer_count", info.layer_count);
        sep(o);
        field_u64(o, "num_kv_layers", info.num_kv_layers);
        sep(o);
        field_u64(o, "num_state_layers", info.num_state_layers);
        sep(o);
        field_u64(o, "num_draft_layers", info.num_draft_layers);
        sep(o);
        field_u64(o, "global_rank_first", info.global_rank_first);
        sep(o);
        field_u64(o, "bytes_per_token", info.bytes_per_token);
        sep(o);
        field_u64(o, "state_bytes_per_seq", info.state_bytes_per_seq);
        sep(o);
        bool device = p->device->used;
        field_or_null(o, "weights_bytes", device, device ? p->stage_weights[s] : 0);
        sep(o);
        field_or_null(o, "budget", p->has_memory, device ? p->stage_budgets[s] : p->memory);
        sep(o);
        field_or_null(o, "num_blocks", info.has_num_blocks, info.num_blocks);
        kvshard_writer__out_put(o, "}", 1);
    }
    kvshard_writer__out_raw(o, "\n  ],\n");
}

static void emit_layers(kvshard__out *o, const kvshard__plan_view *p)
{
    uint32_t stage = 0;
    kvshard_writer__out_raw(o, "  \"layers\": [");
    for (uint32_t i = 0; i < p->model->num_layers && !o->failed; i++) {
        kvshard_writer__out_raw(o, i ? ",\n    {\"index\": " : "\n    {\"index\": ");
        kvshard_writer__out_u64(o, i);
        kvshard_writer__out_raw(o, ", \"kind\": \"");
        kvshard_writer__out_raw(o, kvshard_kinds__of(p->kinds[i])->name);
        kvshard_writer__out_raw(o, "\", \"owner\": ");
        if (p->owner[i] >= 0)
            kvshard_writer__out_i64(o, p->owner[i]);
        else
            kvshard_writer__out_raw(o, "null");
        const kvshard__class *k = &p->model->classes[p->class_of[i]];
        bool compressed = kvshard_kinds__of(k->kind)->shape == KVSHARD__SHAPE_COMPRESSED;
        int32_t source = p->kv_source ? p->kv_source[i] : -1;
        kvshard_writer__out_raw(o, ", \"compress_ratio\": ");
        if (compressed)
            kvshard_writer__out_u64(o, k->ratio);
        else
            kvshard_writer__out_raw(o, "null");
        kvshard_writer__out_raw(o, ", \"kv_source\": ");
        if (source >= 0)
            kvshard_writer__out_i64(o, source);
        else
            kvshard_writer__out_raw(o, "null");
        kvshard_writer__out_raw(o, kvshard__class_has_index(k)
                                       ? ", \"index_key\": true, \"stage\": "
                                       : ", \"index_key\": false, \"stage\": ");
        while (i >= p->stages[stage].first + p->stages[stage].count)
            stage++;
        kvshard_writer__out_u64(o, stage);
        kvshard_writer__out_put(o, "}", 1);
    }
    kvshard_writer__out_raw(o, p->model->num_layers ? "\n  ],\n" : "],\n");
}

static void emit_ranks(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard__strides strides = kvshard_partition__rank_strides(p->options, p->tp);
    kvshard_writer__out_raw(o, "  \"ranks\": [");
    for (uint32_t r = 0; r < p->ranks_count && !o->failed; r++) {
        uint32_t stage = r / p->tp, t = r % p->tp;
        const kvshard__rank_place *at = &p->place[r];
        const kvshard_rank_memory *m = &p->ranks[r];
        kvshard_writer__out_raw(o, r ? ",\n    {" : "\n    {");
        field_u64(o, "tp_rank", t);
        sep(o);
        field_u64(o, "split_group", t / p->split);
        sep(o);
        field_u64(o, "split_rank", at->split_rank);
        kvshard_writer__out_raw(o, ", \"owned_layers\": [");
        uint32_t count;
        const uint32_t *owned = kvshard__view_owned(p, stage, at->split_rank, &count);
        for (uint32_t k = 0; k < count && !o->failed; k++) {
            if (k)
                sep(o);
            kvshard_writer__out_u64(o, owned[k]);
        }
        kvshard_writer__out_raw(o, "], ");
        field_u64(o, "kv_bytes_per_token", m->kv_bytes_per_token);
        sep(o);
        field_u64(o, "scratch_bytes_per_token", m->scratch_bytes_per_token);
        sep(o);
        field_u64(o, "draft_bytes_per_token", m->draft_bytes_per_token);
        sep(o);
        field_u64(o, "bytes_per_block", m->bytes_per_block);
        sep(o);
        field_u64(o, "state_bytes_per_seq", m->state_bytes_per_seq);
        sep(o);
        field_u64(o, "scratch_bytes_per_seq", m->scratch_bytes_per_seq);
        sep(o);
        field_or_null(o, "num_blocks", m->has_num_blocks, m->num_blocks);
        kvshard_writer__out_raw(o, ",\n     ");
        field_u64(o, "stage", stage);
        sep(o);
        field_u64(o, "layer_first", at->first);
        sep(o);
        field_u64(o, "layer_count", at->count);
        sep(o);
        field_u64(o, "global_rank", (uint64_t)stage * strides.pp + (uint64_t)t * strides.tp);
        sep(o);
        field_or_null(o, "budget", m->has_budget, m->budget);
        sep(o);
        field_or_null(o, "weights_bytes", m->has_device, m->weights_bytes);
        sep(o);
        field_or_null(o, "activation_reserve", m->has_device, m->activation_reserve);
        kvshard_writer__out_put(o, "}", 1);
    }
    kvshard_writer__out_raw(o, "\n  ],\n");
}

static const char *const weights_sources[] = {"none", "weights_per_rank", "weights_total",
                                              "safetensors", "index"};

/* The weights whatever the layout: what device.weights and fit's weights
 * hold. */
static void emit_weights(kvshard__out *o, const kvshard__device_figures *d,
                         const kvshard_options *options)
{
    const kvshard__wsummary *w = &d->summary;
    bool headers = d->source == KVSHARD__WEIGHTS_SAFETENSORS;
    bool total = d->source == KVSHARD__WEIGHTS_TOTAL;
    bool index = d->source == KVSHARD__WEIGHTS_INDEX; /* summary: total, experts, total_size */
    kvshard_writer__out_raw(o, "{");
    field_word(o, "source", weights_sources[d->source]);
    sep(o);
    field_or_null(o, "total_bytes", headers || total || index,
                  headers || index ? w->total_bytes : options->weights_total);
    sep(o);
    field_or_null(o, "expert_bytes", headers || total || index,
                  headers || index ? w->expert_bytes : options->weights_experts);
    sep(o);
    field_or_null(o, "draft_bytes", headers, w->draft_bytes);
    sep(o);
    field_or_null(o, "tensors", headers, w->tensors);
    sep(o);
    field_or_null(o, "unknown_tensors", headers, w->unknown_tensors);
    sep(o);
    field_or_null(o, "unknown_bytes", headers, w->unknown_bytes);
    sep(o);
    field_word(o, "first_unknown", headers ? w->first_unknown : NULL);
    sep(o);
    field_or_null(o, "index_total_size", (headers || index) && w->has_index_total_size,
                  w->index_total_size);
    kvshard_writer__out_raw(o, "}");
}

/* The device and what its budgets are made of; null without device inputs. */
static void emit_device(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard__device_figures *d = p->device;
    if (!d->used) {
        kvshard_writer__out_raw(o, "  \"device\": null,\n");
        return;
    }
    char u[24];
    kvshard_device__ppb_text(u, sizeof u, d->utilization_ppb);
    kvshard_writer__out_raw(o, "  \"device\": {");
    field_u64(o, "device_memory", d->device_memory);
    kvshard_writer__out_raw(o, ", \"memory_utilization\": ");
    kvshard_writer__out_raw(o, u);
    sep(o);
    field_u64(o, "usable", d->usable);
    sep(o);
    field_u64(o, "activation_reserve", d->reserve);
    kvshard_writer__out_raw(o, ",\n             \"weights\": ");
    emit_weights(o, d, p->options);
    kvshard_writer__out_raw(o, "},\n");
}

static void emit_capacity(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard__capacity_source src = kvshard__capacity_source_of(p);
    kvshard_writer__out_raw(o, "  \"capacity\": {");
    for (size_t i = 0; i < kvshard_figures__capacity_figure_count(); i++) {
        kvshard_figure f = KVSHARD_FIGURE_INIT;
        kvshard_figures__capacity_figure_at(&f, &src, i);
        if (i)
            sep(o);
        if (f.type == KVSHARD_FIGURE_TEXT)
            field_word(o, f.name, f.text_value);
        else
            field_or_null(o, f.name, f.type == KVSHARD_FIGURE_UINT, f.uint_value);
    }
    kvshard_writer__out_raw(o, "},\n");

    const kvshard_uniform *u = p->uniform;
    kvshard_writer__out_raw(o, "  \"uniform\": {");
    field_u64(o, "kv_bytes_per_token", u->kv_bytes_per_token);
    sep(o);
    field_u64(o, "bytes_per_block", u->bytes_per_block);
    sep(o);
    field_or_null(o, "num_blocks", u->has_num_blocks, u->num_blocks);
    kvshard_writer__out_raw(o, "},\n");
}

/* A double as the shortest decimal that reads back as the same double. */
static void out_double(kvshard__out *o, double v)
{
    if (!isfinite(v)) {
        kvshard_writer__out_raw(o, "null");
        return;
    }
    char buf[40];
    kvshard_format__shortest_text(buf, sizeof buf, v);
    kvshard_writer__out_raw(o, buf);
}

/* A JSON figure's list as it is, but a list of objects one object a line,
 * as the ranks are. The profiles write no brace inside a string. */
static void out_json_list(kvshard__out *o, const char *json)
{
    int depth = 0;
    const char *from = json;
    for (const char *c = json; *c; c++) {
        depth += *c == '[' || *c == '{' ? 1 : *c == ']' || *c == '}' ? -1 : 0;
        bool object_starts = *c == '{' && depth == 2;
        bool objects_end = *c == ']' && depth == 0 && c > json && c[-1] == '}';
        if (object_starts || objects_end) {
            size_t n = (size_t)(c - from);
            kvshard_writer__out_put(o, from, n && from[n - 1] == ' ' ? n - 1 : n);
            kvshard_writer__out_raw(o, objects_end ? "\n             " : "\n               ");
            from = c;
        }
    }
    kvshard_writer__out_put(o, from, strlen(from));
}

/* The engine profile's figures, in its order; null under a profile that
 * predicts no engine. */
static void emit_engine(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard_writer__out_raw(o, "  \"engine\": ");
    if (!p->profile->hooks.figures) {
        kvshard_writer__out_raw(o, "null,\n");
        return;
    }
    bool failed;
    const kvshard__engine_figures *figures = kvshard_queries__engine_figures(p->plan, &failed);
    if (failed) {
        o->failed = true; /* out of memory: no object that lacks its figures */
        return;
    }
    kvshard_writer__out_raw(o, "{");
    for (size_t i = 0; i < figures->count; i++) {
        const kvshard_figure *f = &figures->figures[i];
        if (i)
            kvshard_writer__out_raw(o, i % 4 ? ", " : ",\n             ");
        key(o, f->name);
        switch (f->type) {
        case KVSHARD_FIGURE_UINT: kvshard_writer__out_u64(o, f->uint_value); break;
        case KVSHARD_FIGURE_DOUBLE: out_double(o, f->double_value); break;
        case KVSHARD_FIGURE_BOOL:
            kvshard_writer__out_raw(o, f->bool_value ? "true" : "false");
            break;
        case KVSHARD_FIGURE_TEXT:
            kvshard_writer__out_json_string(o, f->text_value, strlen(f->text_value));
            break;
        case KVSHARD_FIGURE_TEXT_LIST: {
            kvshard_writer__out_raw(o, "[");
            const char *w = f->text_value;
            for (uint64_t k = 0; k < f->uint_value; k++) {
                size_t n = strlen(w);
                if (k)
                    sep(o);
                kvshard_writer__out_json_string(o, w, n);
                w += n + 1;
            }
            kvshard_writer__out_raw(o, "]");
            break;
        }
        case KVSHARD_FIGURE_JSON: out_json_list(o, f->text_value); break;
        case KVSHARD_FIGURE_NULL:
        default: kvshard_writer__out_raw(o, "null"); break;
        }
    }
    kvshard_writer__out_raw(o, "},\n");
}

static void emit_warnings(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard__warning priced[KVSHARD__COMM_WARNINGS];
    size_t count = p->warning_count + kvshard_comm_out__warnings(priced, p->plan);
    kvshard_writer__out_raw(o, "  \"warnings\": [");
    for (size_t i = 0; i < count; i++) {
        const kvshard__warning *w =
            i < p->warning_count ? &p->warnings[i] : &priced[i - p->warning_count];
        kvshard_writer__out_raw(o, i ? ",\n    {" : "\n    {");
        field_word(o, "code", kvshard_warning_name(w->code));
        sep(o);
        key(o, "message");
        kvshard_writer__out_json_string(o, w->message, strlen(w->message));
        kvshard_writer__out_put(o, "}", 1);
    }
    kvshard_writer__out_raw(o, count ? "\n  ],\n" : "],\n");
}

int kvshard_plan_write_json(const kvshard_plan *plan, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, plan, write, user))
        return KVSHARD_EINVAL;
    kvshard__plan_view view = kvshard_plan__view_of(plan);
    const kvshard__plan_view *p = &view;
    kvshard_writer__out_raw(&o, "{\n  \"kvshard_version\": \"" KVSHARD_VERSION_STRING "\",\n");
    emit_model(&o, p);
    emit_parallel(&o, p);
    emit_stages(&o, p);
    emit_layers(&o, p);
    emit_ranks(&o, p);
    emit_capacity(&o, p);
    emit_engine(&o, p);
    emit_warnings(&o, p);
    emit_device(&o, p);
    int comm_rc = kvshard_comm_out__json(&o, plan);
    kvshard_writer__out_raw(&o, "  \"digest\": \"");
    kvshard_writer__out_hex64(&o, p->digest);
    kvshard_writer__out_raw(&o, "\",\n  \"layout_digest\": \"");
    kvshard_writer__out_hex64(&o, p->layout_digest);
    kvshard_writer__out_raw(&o, "\"\n}\n");
    int rc = kvshard_writer__out_finish(&o);
    return rc ? rc : comm_rc;
}

/* ---- comparison -------------------------------------------------------------------- */

static void emit_row(kvshard__out *o, const kvshard_comparison *c, const kvshard_comparison_row *r)
{
    kvshard_writer__out_raw(o, "{");
    field_u64(o, "pp_size", r->pp_size);
    sep(o);
    field_u64(o, "attn_tp_size", r->attn_tp_size);
    sep(o);
    field_u64(o, "layerwise_split_size", r->layerwise_split_size);
    sep(o);
    field_word(o, "ownership", kvshard_ownership_name(r->ownership));
    sep(o);
    bool ok = r->error == KVSHARD_OK;
    field_or_null(o, "min_owned_layers", ok, r->min_owned_layers);
    sep(o);
    field_or_null(o, "max_owned_layers", ok, r->max_owned_layers);
    sep(o);
    field_or_null(o, "max_kv_bytes_per_token", ok, r->max_kv_bytes_per_token);
    sep(o);
    field_or_null(o, "num_blocks", ok && r->has_num_blocks, r->num_blocks);
    sep(o);
    field_or_null(o, "max_tokens", ok && r->has_num_blocks, r->max_tokens);
    sep(o);
    field_or_null(o, "concurrency", ok && r->has_concurrency, r->concurrency);
    sep(o);
    field_or_null(o, "balanced_max_seqs", ok && r->has_balanced_max_seqs, r->balanced_max_seqs);
    sep(o);
    key(o, "gain");
    if (!ok || isinf(r->gain))
        kvshard_writer__out_raw(o, "null");
    else
        kvshard_writer__out_printf(o, "%.4f", r->gain);
    kvshard_writer__out_raw(o, ", ");
    field_warnings(o, r->warnings);
    kvshard_writer__out_raw(o, ", \"error\": ");
    if (ok)
        kvshard_writer__out_raw(o, "null");
    else
        kvshard_writer__out_json_string(o, r->error_message, strlen(r->error_message));
    if (c->comm_given) {
        kvshard_writer__out_raw(o, ", \"comm\": ");
        kvshard_comm_out__row_json(o, r->comm);
    }
    kvshard_writer__out_put(o, "}", 1);
}

/* How the rows were ranked, as fit and compare write it. */
static const char *rank_by_word(kvshard_rank_by rank_by)
{
    return rank_by == KVSHARD_RANK_THROUGHPUT ? "\"throughput\"" : "\"capacity\"";
}

int kvshard_comparison_write_json(const kvshard_comparison *comparison, kvshard_write_fn write,
                                  void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, comparison, write, user))
        return KVSHARD_EINVAL;
    const kvshard_options *opt = &comparison->options;
    kvshard_writer__out_raw(&o, "{\n  ");
    field_word(&o, "engine", comparison->profile->name);
    kvshard_writer__out_raw(&o, ",\n  ");
    field_or_null(&o, "context_length", opt->context_length != 0, opt->context_length);
    if (comparison->comm_given) {
        kvshard_writer__out_raw(&o, ",\n  \"rank_by\": ");
        kvshard_writer__out_raw(&o, rank_by_word(comparison->rank_by));
    }
    kvshard_writer__out_raw(&o, ",\n  \"rows\": [");
    for (size_t i = 0; i < comparison->count && !o.failed; i++) {
        kvshard_writer__out_raw(&o, i ? ",\n    " : "\n    ");
        emit_row(&o, comparison, &comparison->rows[i]);
    }
    const kvshard_comparison_row *rec = &comparison->rows[comparison->recommended];
    /* Everything a script needs to deploy the recommended row without
     * reading the rows: its layout, the max_seqs the flags carry, the
     * budget and a token's KV on the fullest rank, and the flags. (Its
     * blocks and concurrency are in its row, at the given max_seqs.) */
    bool seqs = comparison->has_memory && opt->context_length && rec->has_balanced_max_seqs;
    char flags[256];
    kvshard_compare__comparison_flags(flags, sizeof flags, comparison);
    kvshard_writer__out_raw(&o, "\n  ],\n  \"recommendation\": {");
    field_u64(&o, "world_size", opt->world_size);
    sep(&o);
    field_u64(&o, "pp_size", rec->pp_size);
    sep(&o);
    field_u64(&o, "attn_tp_size", rec->attn_tp_size);
    sep(&o);
    field_bool(&o, "enable_layerwise_split", rec->layerwise_split_size > 1);
    sep(&o);
    field_u64(&o, "layerwise_split_size", rec->layerwise_split_size);
    sep(&o);
    field_word(&o, "ownership", kvshard_ownership_name(rec->ownership));
    sep(&o);
    field_or_null(&o, "max_seqs", seqs, rec->balanced_max_seqs);
    kvshard_writer__out_raw(&o, ",\n                     ");
    field_or_null(&o, "memory_per_rank", comparison->has_memory, comparison->memory);
    sep(&o);
    field_u64(&o, "max_kv_bytes_per_token", rec->max_kv_bytes_per_token);
    kvshard_writer__out_raw(&o, ",\n                     ");
    field_word(&o, "flags", flags);
    if (comparison->comm_given) {
        kvshard_writer__out_raw(&o, ", \"rank_by\": ");
        kvshard_writer__out_raw(&o, rank_by_word(comparison->rank_by));
        kvshard_writer__out_raw(&o, ", \"throughput\": ");
        kvshard_comm_out__number(&o, rec->comm->has_step, rec->comm->throughput);
    }
    kvshard_writer__out_raw(&o, "}\n}\n");
    return kvshard_writer__out_finish(&o);
}

/* ---- fit ------------------------------------------------------------------------------ */

static void emit_fit_row(kvshard__out *o, const kvshard_fit *fit, const kvshard_fit_row *r)
{
    kvshard_writer__out_raw(o, "{");
    field_u64(o, "rank", r->rank);
    sep(o);
    field_u64(o, "tp_size", r->tp_size);
    sep(o);
    field_u64(o, "pp_size", r->pp_size);
    sep(o);
    field_u64(o, "dp_size", r->dp_size);
    sep(o);
    field_u64(o, "layerwise_split_size", r->layerwise_split_size);
    sep(o);
    field_word(o, "ownership",
               r->layerwise_split_size > 1 ? kvshard_ownership_name(r->ownership) : NULL);
    kvshard_writer__out_raw(o, r->fits ? ", \"fits\": true, " : ", \"fits\": false, ");
    field_word(o, "reason",
               r->fits ? NULL : r->no_sequence ? "no_sequence" : kvshard_status_name(r->reason));
    kvshard_writer__out_raw(o, ",\n     ");
    bool ok = r->fits;
    field_or_null(o, "weights_per_rank", ok, r->weights_per_rank);
    sep(o);
    field_or_null(o, "budget", ok, r->budget);
    sep(o);
    field_or_null(o, "binding_stage", ok, r->binding_stage);
    sep(o);
    field_or_null(o, "num_blocks", ok, r->num_blocks);
    sep(o);
    field_or_null(o, "max_seqs", ok, r->max_seqs);
    sep(o);
    field_or_null(o, "seqs_per_replica", ok && r->has_seqs, r->seqs_per_replica);
    sep(o);
    field_or_null(o, "seqs_total", ok && r->has_seqs, r->seqs_total);
    sep(o);
    field_or_null(o, "tokens_per_replica", ok, r->tokens_per_replica);
    sep(o);
    field_or_null(o, "tokens_total", ok, r->tokens_total);
    kvshard_writer__out_raw(o, ",\n     \"pp_partition\": ");
    if (ok) {
        kvshard_writer__out_raw(o, "[");
        for (uint32_t s = 0; s < r->pp_size && !o->failed; s++) {
            if (s)
                sep(o);
            kvshard_writer__out_u64(o, r->pp_partition[s]);
        }
        kvshard_writer__out_raw(o, "]");
    } else {
        kvshard_writer__out_raw(o, "null");
    }
    kvshard_writer__out_raw(o, ", ");
    field_warnings(o, r->warnings);
    if (fit->comm_given) {
        kvshard_writer__out_raw(o, ",\n     \"comm\": ");
        kvshard_comm_out__row_json(o, &r->comm);
    }
    kvshard_writer__out_raw(o, "}");
}

/* A list of arguments as a JSON array ("--a=1 --b" is two); null when the
 * engine cannot run the layout. */
static void emit_args(kvshard__out *o, const kvshard_fit *fit, const char *engine, bool env)
{
    char buf[4096];
    int n = kvshard_fit_flags(buf, sizeof buf, fit, engine, env);
    if (n < 0) {
        kvshard_writer__out_raw(o, "null");
        return;
    }
    kvshard_writer__out_raw(o, "[");
    const char *p = buf;
    bool first = true;
    while (*p) {
        const char *end = strchr(p, ' ');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (!first)
            sep(o);
        kvshard_writer__out_json_string(o, p, len);
        first = false;
        p += len + (end ? 1 : 0);
    }
    kvshard_writer__out_raw(o, "]");
}

int kvshard_fit_write_json(const kvshard_fit *fit, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, fit, write, user))
        return KVSHARD_EINVAL;
    const kvshard__device_figures *d = &fit->device;
    char u[24];
    kvshard_device__ppb_text(u, sizeof u, d->utilization_ppb);
    kvshard_writer__out_raw(&o, "{\n  \"kvshard_version\": \"" KVSHARD_VERSION_STRING "\", ");
    if (fit->engine) { /* ranked by that engine's own figures */
        kvshard_writer__out_raw(&o, "\"engine\": {");
        field_word(&o, "name", fit->profile->name);
        sep(&o);
        field_word(&o, "version", fit->engine_version);
        kvshard_writer__out_raw(&o, "}, ");
        kvshard_format__shortest_text(u, sizeof u, fit->engine_utilization);
    }
    field_u64(&o, "gpus", fit->gpus);
    sep(&o);
    field_u64(&o, "gpus_per_node", fit->gpus_per_node);
    sep(&o);
    field_u64(&o, "max_tp_size", fit->max_tp_size);
    sep(&o);
    field_u64(&o, "max_pp_size", fit->max_pp_size);
    sep(&o);
    field_u64(&o, "limited_layouts", fit->limited_layouts);
    kvshard_writer__out_raw(&o, ",\n  ");
    field_u64(&o, "device_memory", d->device_memory);
    kvshard_writer__out_raw(&o, ", \"memory_utilization\": ");
    kvshard_writer__out_raw(&o, u);
    sep(&o);
    field_or_null(&o, "usable", !fit->engine, d->usable); /* an engine's budget is its own */
    sep(&o);
    field_u64(&o, "activation_reserve", d->reserve);
    sep(&o);
    field_or_null(&o, "context_length", fit->options.context_length != 0,
                  fit->options.context_length);
    kvshard_writer__out_raw(&o, ",\n  \"weights\": ");
    emit_weights(&o, d, &fit->options);
    if (fit->comm_given) {
        kvshard_writer__out_raw(&o, ",\n  \"rank_by\": ");
        kvshard_writer__out_raw(&o, rank_by_word(fit->rank_by));
        kvshard_writer__out_raw(&o, ",\n  \"comm_inputs\": ");
        kvshard_comm_out__inputs_json(&o, &fit->comm_settled);
    }
    kvshard_writer__out_raw(&o, ",\n  \"rows\": [");
    for (size_t i = 0; i < fit->count && !o.failed; i++) {
        kvshard_writer__out_raw(&o, i ? ",\n    " : "\n    ");
        emit_fit_row(&o, fit, &fit->rows[i]);
    }
    kvshard_writer__out_raw(&o, "\n  ],\n  \"not_admitted\": [");
    for (size_t i = 0; i < fit->refused_count && !o.failed; i++) {
        const kvshard__refused *r = &fit->refused[i];
        kvshard_writer__out_raw(&o, i ? ",\n    {" : "\n    {");
        field_u64(&o, "tp_size", r->tp);
        sep(&o);
        field_u64(&o, "pp_size", r->pp);
        sep(&o);
        field_u64(&o, "dp_size", r->dp);
        sep(&o);
        field_word(&o, "reason", kvshard_fit__refusal_name(r));
        kvshard_writer__out_raw(&o, "}");
    }
    kvshard_writer__out_raw(&o, fit->refused_count ? "\n  ],\n" : "],\n");
    const kvshard_fit_row *rec = &fit->rows[0];
    kvshard_writer__out_raw(&o, "  \"recommendation\": {");
    field_u64(&o, "tp_size", rec->tp_size);
    sep(&o);
    field_u64(&o, "pp_size", rec->pp_size);
    sep(&o);
    field_u64(&o, "dp_size", rec->dp_size);
    sep(&o);
    field_u64(&o, "layerwise_split_size", rec->layerwise_split_size);
    sep(&o);
    field_word(&o, "ownership",
               rec->layerwise_split_size > 1 ? kvshard_ownership_name(rec->ownership) : NULL);
    sep(&o);
    field_or_null(&o, "seqs_total", rec->has_seqs, rec->seqs_total);
    sep(&o);
    field_u64(&o, "tokens_total", rec->tokens_total);
    if (fit->comm_given) {
        kvshard_writer__out_raw(&o, fit->rank_by == KVSHARD_RANK_THROUGHPUT
                                        ? ", \"rank_by\": \"throughput\", \"throughput_total\": "
                                        : ", \"rank_by\": \"capacity\", \"throughput_total\": ");
        kvshard_comm_out__number(&o, rec->comm.has_step, rec->comm.throughput_total);
    }
    /* Every profile that recommends: flags for each, environment for the
     * engines (kvshard's own takes none). */
    for (int env = 0; env < 2; env++) {
        kvshard_writer__out_raw(&o, env ? ",\n                     \"env\": {"
                                 : ",\n                     \"flags\": {");
        bool first = true;
        for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
            if (!(*q)->dialect.recommend || (env && *q == kvshard_profiles__own()))
                continue;
            if (fit->engine && *q != fit->profile && *q != kvshard_profiles__own())
                continue; /* an engine fit's lines are that engine's */
            if (!first)
                kvshard_writer__out_raw(&o, env ? ", " : ",\n                              ");
            key(&o, (*q)->name);
            emit_args(&o, fit, (*q)->name, env == 1);
            first = false;
        }
        kvshard_writer__out_raw(&o, "}");
    }
    /* Without --engine, why an engine has no line (null where it has one). */
    if (!fit->engine) {
        kvshard_writer__out_raw(&o, ",\n                     \"engine_reasons\": {");
        for (size_t i = 0; i < fit->engine_line_count; i++) {
            const kvshard__engine_line *line = &fit->engine_lines[i];
            if (i)
                sep(&o);
            field_word(&o, line->profile->name, line->reason[0] ? line->reason : NULL);
        }
        kvshard_writer__out_raw(&o, "}");
    }
    kvshard_writer__out_raw(&o, "}\n}\n");
    return kvshard_writer__out_finish(&o);
}
