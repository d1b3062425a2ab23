/* The transfer as `kvshard transfer` writes it: JSON for programs, text
 * for a person. Every figure is the transfer object's. */
#include "output/transfer_out.h"

#include "explore/transfer.h"
#include "output/writer.h"

#include <stdio.h>
#include <string.h>

#define put kvshard_writer__out_raw
/* The JSON field writers every document shares (writer.c). */
#define key kvshard_writer__json_key
#define field_u64 kvshard_writer__json_u64
#define field_or_null kvshard_writer__json_u64_or_null
#define field_word kvshard_writer__json_word

/* A replication to its 4 decimals, trailing zeros dropped but one: 1.0,
 * 1.9125. */
static void put_replication(kvshard__out *o, double replication)
{
    char text[48];
    int n = snprintf(text, sizeof text, "%.4f", replication);
    while (n > 2 && text[n - 1] == '0' && text[n - 2] != '.')
        text[--n] = '\0';
    put(o, text);
}

static void json_side(kvshard__out *o, const char *name, const kvshard__transfer_side *s)
{
    key(o, name);
    put(o, "{");
    field_u64(o, "world_size", s->world_size);
    put(o, ", ");
    field_u64(o, "dp_size", s->dp_size);
    put(o, ", ");
    field_u64(o, "pp_size", s->pp_size);
    put(o, ", ");
    field_u64(o, "attn_tp_size", s->tp_size);
    put(o, ", ");
    field_u64(o, "effective_split_size", s->split);
    put(o, ", ");
    field_word(o, "ownership", kvshard_ownership_name(s->ownership));
    put(o, ", ");
    field_word(o, "rank_layout", kvshard_rank_layout_name(s->rank_layout));
    put(o, ", ");
    field_u64(o, "replica", s->replica);
    put(o, "}");
}

static void json_rank(kvshard__out *o, const char *name, const kvshard_transfer_rank *r)
{
    key(o, name);
    if (!r->present) {
        put(o, "null");
        return;
    }
    put(o, "{");
    field_u64(o, "global_rank", r->global_rank);
    put(o, ", ");
    field_u64(o, "stage", r->stage);
    put(o, ", ");
    field_u64(o, "tp", r->tp);
    put(o, ", ");
    field_u64(o, "bytes_per_token", r->bytes_per_token);
    put(o, ", ");
    field_u64(o, "bytes_fixed", r->bytes_fixed);
    put(o, ", ");
    field_or_null(o, "bytes", r->has_bytes, r->bytes);
    put(o, "}");
}

static void json_edge(kvshard__out *o, const kvshard_transfer_edge *e)
{
    put(o, "{");
    field_u64(o, "src", e->src);
    put(o, ", ");
    field_u64(o, "dst", e->dst);
    put(o, ", ");
    field_u64(o, "src_stage", e->src_stage);
    put(o, ", ");
    field_u64(o, "src_tp", e->src_tp);
    put(o, ", ");
    field_u64(o, "dst_stage", e->dst_stage);
    put(o, ", ");
    field_u64(o, "dst_tp", e->dst_tp);
    put(o, ",\n     ");
    field_word(o, "component", e->component);
    put(o, ", ");
    key(o, "layers");
    put(o, "[");
    for (size_t i = 0; i < e->layer_count; i++) {
        if (i)
            put(o, ", ");
        kvshard_writer__out_u64(o, e->layers[i]);
    }
    put(o, "], ");
    key(o, "units");
    put(o, "[");
    kvshard_writer__out_u64(o, e->unit_lo);
    put(o, ", ");
    kvshard_writer__out_u64(o, e->unit_hi);
    put(o, "],\n     ");
    field_word(o, "entry", e->entry);
    put(o, ", ");
    field_or_null(o, "entry_span", e->entry_span > 0, e->entry_span);
    put(o, ", ");
    field_u64(o, "entry_bytes", e->entry_bytes);
    put(o, ", ");
    field_u64(o, "bytes_per_token", e->bytes_per_token);
    put(o, ", ");
    field_u64(o, "bytes_fixed", e->bytes_fixed);
    put(o, ", ");
    field_or_null(o, "bytes", e->has_bytes, e->bytes);
    put(o, "}");
}

/* One engine's verdict: {engine, version, verdict, reasons, requires}. */
static void json_verdict(kvshard__out *o, const kvshard__transfer_verdict *v)
{
    put(o, "{");
    field_word(o, "engine", kvshard_engine_name(v->engine));
    put(o, ", ");
    field_word(o, "version", v->version);
    put(o, ", ");
    field_word(o, "verdict", v->verdict);
    put(o, ",\n     ");
    key(o, "reasons");
    put(o, "[");
    for (size_t i = 0; i < v->rules.reason_count; i++) {
        put(o, i ? ", {" : "{");
        field_word(o, "code", v->codes[i]);
        put(o, ", ");
        field_word(o, "message", v->messages[i]);
        put(o, "}");
    }
    put(o, "],\n     ");
    key(o, "requires");
    put(o, "[");
    for (size_t i = 0; i < v->rules.require_count; i++) {
        if (i)
            put(o, ", ");
        kvshard_writer__out_json_string(o, v->rules.requires[i], strlen(v->rules.requires[i]));
    }
    put(o, "]}");
}

int kvshard_transfer_write_json(const kvshard_transfer *t, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, t, write, user))
        return KVSHARD_EINVAL;
    const kvshard_transfer_totals *tt = &t->totals;
    put(&o, "{\n  \"kvshard_version\": \"" KVSHARD_VERSION_STRING "\",\n  ");
    key(&o, "model");
    put(&o, "{");
    field_word(&o, "model_type", t->model_type);
    put(&o, ", ");
    field_u64(&o, "num_layers", t->num_layers);
    put(&o, ", ");
    field_word(&o, "attention", kvshard_attention_name(t->attention));
    put(&o, ", ");
    field_word(&o, "state_kind", kvshard_state_kind_name(t->state_kind));
    put(&o, ",\n            ");
    field_word(&o, "kv_cache_dtype", kvshard_dtype_name(t->kv_cache_dtype));
    put(&o, ", ");
    field_word(&o, "state_dtype",
               t->state_dtype == KVSHARD_DTYPE_AUTO ? NULL : kvshard_dtype_name(t->state_dtype));
    put(&o, ", ");
    field_u64(&o, "num_draft_layers", t->num_draft_layers);
    put(&o, "},\n  ");
    json_side(&o, "prefill", &t->prefill);
    put(&o, ",\n  ");
    json_side(&o, "decode", &t->decode);
    put(&o, ",\n  ");
    key(&o, "request");
    put(&o, "{");
    field_or_null(&o, "tokens", tt->has_bytes, tt->tokens);
    put(&o, ", ");
    field_word(&o, "nic", tt->nic);
    put(&o, ", ");
    field_u64(&o, "nic_bytes_per_second", tt->nic_bytes_per_second);
    put(&o, "},\n  ");
    key(&o, "edges");
    put(&o, "[");
    for (size_t i = 0; i < t->edge_count && !o.failed; i++) {
        put(&o, i ? ",\n    " : "\n    ");
        json_edge(&o, &t->edges[i]);
    }
    put(&o, t->edge_count ? "\n  ],\n  " : "],\n  ");
    key(&o, "bytes");
    put(&o, "{");
    field_u64(&o, "unique_per_token", tt->unique_per_token);
    put(&o, ", ");
    field_u64(&o, "unique_fixed", tt->unique_fixed);
    put(&o, ", ");
    field_or_null(&o, "unique", tt->has_bytes, tt->unique);
    put(&o, ",\n            ");
    field_u64(&o, "wire_per_token", tt->wire_per_token);
    put(&o, ", ");
    field_u64(&o, "wire_fixed", tt->wire_fixed);
    put(&o, ", ");
    field_or_null(&o, "wire", tt->has_bytes, tt->wire);
    put(&o, ", ");
    key(&o, "replication");
    if (tt->has_replication)
        put_replication(&o, tt->replication);
    else
        put(&o, "null");
    put(&o, ",\n            ");
    json_rank(&o, "busiest_source", &tt->busiest_source);
    put(&o, ",\n            ");
    json_rank(&o, "busiest_destination", &tt->busiest_destination);
    put(&o, ",\n            ");
    field_or_null(&o, "time_us", tt->has_time, tt->time_us);
    put(&o, "},\n  ");
    key(&o, "verdicts");
    put(&o, "[");
    for (size_t i = 0; i < t->verdict_count; i++) {
        put(&o, i ? ",\n    " : "\n    ");
        json_verdict(&o, &t->verdicts[i]);
    }
    put(&o, t->verdict_count ? "\n  ],\n  " : "],\n  ");
    key(&o, "warnings");
    put(&o, "[");
    for (size_t i = 0; i < t->warning_count; i++) {
        put(&o, i ? ", {" : "{");
        field_word(&o, "code", t->warnings[i].code);
        put(&o, ", ");
        field_word(&o, "message", t->warnings[i].message);
        put(&o, "}");
    }
    put(&o, "],\n  ");
    key(&o, "digest");
    put(&o, "\"");
    kvshard_writer__out_hex64(&o, kvshard_transfer_digest(t));
    put(&o, "\"\n}\n");
    return kvshard_writer__out_finish(&o);
}

/* ---- text ------------------------------------------------------------------------------ */

void kvshard_transfer_out__runs(kvshard__out *o, const uint32_t *v, size_t count)
{
    for (size_t i = 0; i < count;) {
        size_t k = i;
        while (k + 1 < count && v[k + 1] == v[k] + 1)
            k++;
        if (i)
            put(o, ", ");
        kvshard_writer__out_u64(o, v[i]);
        if (k > i) {
            put(o, "-");
            kvshard_writer__out_u64(o, v[k]);
        }
        i = k + 1;
    }
}

static void text_side(kvshard__out *o, const char *label, const kvshard__transfer_side *s)
{
    put(o, label);
    put(o, "world ");
    kvshard_writer__out_u64(o, s->world_size);
    kvshard_writer__out_printf(o, ": %u %s x %u %s x TP %u, ", s->dp_size,
                               s->dp_size == 1 ? "replica" : "replicas", s->pp_size,
                               s->pp_size == 1 ? "stage" : "stages", s->tp_size);
    if (s->split > 1)
        kvshard_writer__out_printf(o, "split %u (%s)", s->split,
                                   kvshard_ownership_name(s->ownership));
    else
        put(o, "no split");
    kvshard_writer__out_printf(o, ", layout %s; replica %u: global ranks ",
                               kvshard_rank_layout_name(s->rank_layout), s->replica);
    kvshard_transfer_out__runs(o, s->global_ranks, s->rank_count);
    put(o, "\n");
}

/* "735,477,760 B: 20,480 B/token + 64,389,120 B per request". */
static void text_bytes(kvshard__out *o, const char *label, bool has, uint64_t total,
                       uint64_t per_token, uint64_t fixed)
{
    put(o, label);
    if (has) {
        kvshard_writer__out_grouped(o, total);
        put(o, " B: ");
    }
    kvshard_writer__out_grouped(o, per_token);
    put(o, " B/token + ");
    kvshard_writer__out_grouped(o, fixed);
    put(o, " B per request");
}

static void text_rank(kvshard__out *o, const char *side, const char *verb,
                      const kvshard_transfer_rank *r)
{
    kvshard_writer__out_printf(o, "%s rank %u (stage %u, TP %u) %s ", side, r->global_rank,
                               r->stage, r->tp, verb);
    if (r->has_bytes) {
        kvshard_writer__out_grouped(o, r->bytes);
        put(o, " B");
    } else {
        kvshard_writer__out_grouped(o, r->bytes_per_token);
        put(o, " B/token + ");
        kvshard_writer__out_grouped(o, r->bytes_fixed);
        put(o, " B");
    }
}

int kvshard_transfer_write_text(const kvshard_transfer *t, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, t, write, user))
        return KVSHARD_EINVAL;
    const kvshard_transfer_totals *tt = &t->totals;
    put(&o, "transfer   ");
    kvshard_writer__out_safe(&o, t->model_type, strlen(t->model_type));
    kvshard_writer__out_printf(&o, ", %u layers", t->num_layers);
    if (t->num_draft_layers)
        kvshard_writer__out_printf(&o, " + %u draft", t->num_draft_layers);
    kvshard_writer__out_printf(&o, ": P TP %u -> D TP %u\n", t->prefill.tp_size, t->decode.tp_size);
    text_side(&o, "P          ", &t->prefill);
    text_side(&o, "D          ", &t->decode);
    put(&o, "request    ");
    if (tt->has_bytes) {
        kvshard_writer__out_grouped(&o, tt->tokens);
        put(&o, " tokens");
    } else {
        put(&o, "no length (--context_length)");
    }
    kvshard_writer__out_printf(&o, ", NIC %s (", tt->nic);
    kvshard_writer__out_grouped(&o, tt->nic_bytes_per_second);
    put(&o, " B/s)\n");
    text_bytes(&o, "unique     ", tt->has_bytes, tt->unique, tt->unique_per_token,
               tt->unique_fixed);
    put(&o, "\n");
    text_bytes(&o, "wire       ", tt->has_bytes, tt->wire, tt->wire_per_token, tt->wire_fixed);
    if (tt->has_replication) {
        put(&o, "; replication ");
        put_replication(&o, tt->replication);
    }
    put(&o, "\nbusiest    ");
    if (tt->busiest_source.present) {
        text_rank(&o, "P", "sends", &tt->busiest_source);
        put(&o, "; ");
        text_rank(&o, "D", "receives", &tt->busiest_destination);
    } else {
        put(&o, "nothing moves");
    }
    if (tt->has_time) {
        put(&o, "\ntime       ");
        kvshard_writer__out_grouped(&o, tt->time_us);
        put(&o, " \xc2\xb5s, the busiest rank's bytes over its NIC");
    }
    for (size_t i = 0; i < t->verdict_count; i++) {
        const kvshard__transfer_verdict *v = &t->verdicts[i];
        kvshard_writer__out_printf(&o, "\nverdict    %s %s: %s", kvshard_engine_name(v->engine),
                                   v->version, v->verdict);
        for (size_t k = 0; k < v->rules.reason_count; k++) {
            kvshard_writer__out_printf(&o, "%s%s: ", k ? "; " : " (", v->codes[k]);
            put(&o, v->messages[k]);
        }
        if (v->rules.reason_count)
            put(&o, ")");
        for (size_t k = 0; k < v->rules.require_count; k++)
            kvshard_writer__out_printf(&o, "%s%s", k ? ", " : "; requires ", v->rules.requires[k]);
    }
    kvshard_writer__out_printf(&o, "\nedges      %zu\n", t->edge_count);
    if (t->edge_count)
        put(&o, "  src  dst  component   units     entry          entry B            bytes  "
                "layers\n");
    for (size_t i = 0; i < t->edge_count && !o.failed; i++) {
        const kvshard_transfer_edge *e = &t->edges[i];
        char units[32], entry[24];
        snprintf(units, sizeof units, "[%u, %u)", e->unit_lo, e->unit_hi);
        if (e->entry_span)
            snprintf(entry, sizeof entry, "%s %u", e->entry, e->entry_span);
        else
            snprintf(entry, sizeof entry, "%s", e->entry);
        kvshard_writer__out_printf(&o, "%5u %4u  %-10s  %-8s  %-10s ", e->src, e->dst, e->component,
                                   units, entry);
        char n[32];
        kvshard_format__grouped_text(n, sizeof n, e->entry_bytes);
        kvshard_writer__out_printf(&o, "%11s ", n);
        if (e->has_bytes)
            kvshard_format__grouped_text(n, sizeof n, e->bytes);
        else
            snprintf(n, sizeof n, "-");
        kvshard_writer__out_printf(&o, "%16s  ", n);
        kvshard_transfer_out__runs(&o, e->layers, e->layer_count);
        put(&o, "\n");
    }
    for (size_t i = 0; i < t->warning_count; i++) {
        kvshard_writer__out_printf(&o, "warning    %s: ", t->warnings[i].code);
        put(&o, t->warnings[i].message);
        put(&o, "\n");
    }
    put(&o, "digest     ");
    kvshard_writer__out_hex64(&o, kvshard_transfer_digest(t));
    put(&o, "\n");
    return kvshard_writer__out_finish(&o);
}
