/* The plan's `comm` object and its text lines: the split's communication
 * and the decode throughput, labelled as the estimate they are. */
#include "output/comm_out.h"

#include "base/alloc.h"
#include "explore/comm.h"
#include "plan/deployment.h"
#include "plan/queries.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON --------------------------------------------------------------------------- */

void kvshard_comm_out__number(kvshard__out *o, bool has, double v)
{
    if (!has || !isfinite(v)) {
        kvshard_writer__out_raw(o, "null");
        return;
    }
    char buf[40];
    kvshard_format__shortest_text(buf, sizeof buf, v);
    kvshard_writer__out_raw(o, buf);
}

/* A field after an object's first: its separator, then the shared writer
 * (writer.c); an object's first field calls the shared writer itself. */
static void next_key(kvshard__out *o, const char *name)
{
    kvshard_writer__out_raw(o, ", ");
    kvshard_writer__json_key(o, name);
}

static void next_number(kvshard__out *o, const char *name, bool has, double v)
{
    next_key(o, name);
    kvshard_comm_out__number(o, has, v);
}

static void next_count(kvshard__out *o, const char *name, bool has, uint64_t v)
{
    kvshard_writer__out_raw(o, ", ");
    kvshard_writer__json_u64_or_null(o, name, has, v);
}

static void next_word(kvshard__out *o, const char *name, const char *w)
{
    kvshard_writer__out_raw(o, ", ");
    kvshard_writer__json_word(o, name, w);
}

static void traffic(kvshard__out *o, const kvshard__comm_traffic *t)
{
    kvshard_writer__json_u64(o, "collectives", t->collectives);
    next_count(o, "link_bytes", t->has_bytes, t->link_bytes);
    next_count(o, "wire_bytes", t->has_bytes, t->wire_bytes);
    next_number(o, "comm_us", t->has_time, t->comm_us);
}

static void json_decode(kvshard__out *o, const kvshard__comm *c)
{
    kvshard_writer__out_raw(o, ",\n    \"decode\": {");
    kvshard_writer__json_u64_or_null(o, "batch", c->has_batch, c->batch);
    next_word(o, "batch_source", !c->has_batch ? NULL : c->batch_given ? "given" : "concurrency");
    next_count(o, "context_length", c->context_length != 0, c->context_length);
    next_count(o, "microbatch", c->has_batch, c->microbatch);
    next_count(o, "tokens_per_step", c->has_batch, c->tokens_per_step);
    kvshard_writer__out_raw(o, ", ");
    traffic(o, &c->decode);
    next_count(o, "binding_stage", c->has_step, c->binding_stage);
    next_count(o, "weights_bytes", c->has_step, c->weights_bytes);
    next_count(o, "kv_read_bytes", c->has_step, c->kv_read_bytes);
    next_number(o, "base_us", c->has_step, c->base_us);
    next_key(o, "overlap");
    kvshard_writer__out_raw(o, c->overlap ? "true" : "false");
    next_number(o, "step_us", c->has_step, c->step_us);
    next_number(o, "tpot_us", c->has_step, c->tpot_us);
    next_number(o, "throughput", c->has_step, c->throughput);
    next_number(o, "throughput_total", c->has_step, c->throughput_total);
    next_key(o, "unsplit");
    if (c->has_unsplit) {
        kvshard_writer__out_raw(o, "{");
        kvshard_writer__json_u64(o, "batch", c->unsplit_batch);
        next_number(o, "base_us", true, c->unsplit_base_us);
        next_number(o, "step_us", true, c->unsplit_step_us);
        next_number(o, "throughput", true, c->unsplit_throughput);
        kvshard_writer__out_raw(o, "}");
    } else {
        kvshard_writer__out_raw(o, "null");
    }
    next_number(o, "throughput_gain", c->has_gain, c->throughput_gain);
    kvshard_writer__out_raw(o, "}");
}

static void json_prefill(kvshard__out *o, const kvshard__comm *c)
{
    kvshard_writer__out_raw(o, ",\n    \"prefill\": {");
    bool n = c->prompt_length != 0;
    kvshard_writer__json_u64_or_null(o, "prompt_length", n, c->prompt_length);
    next_count(o, "chunk", true, c->chunk);
    next_count(o, "prefix_hit", true, c->prefix_hit);
    next_count(o, "chunks", n, c->chunks);
    next_count(o, "history_rows", n, c->history_rows);
    kvshard_writer__out_raw(o, ", ");
    traffic(o, &c->prefill);
    next_key(o, "overlap");
    kvshard_writer__out_raw(
        o, c->split > 1 && c->prefill_mechanism == KVSHARD__COMM_FULL_LAYER ? "true" : "false");
    kvshard_writer__out_raw(o, "}");
}

static void json_stages(kvshard__out *o, const kvshard__comm_stage *stages, uint32_t pp)
{
    kvshard_writer__out_raw(o, ",\n    \"stages\": [");
    for (uint32_t s = 0; s < pp; s++) {
        const kvshard__comm_stage *st = &stages[s];
        kvshard_writer__out_raw(o, s ? ",\n               {" : "{");
        kvshard_writer__json_u64(o, "stage", s);
        kvshard_writer__out_raw(o, ", \"decode\": {");
        traffic(o, &st->decode);
        next_count(o, "weights_bytes", st->has_base, st->weights_bytes);
        next_count(o, "kv_read_bytes", st->has_base, st->kv_read_bytes);
        next_number(o, "base_us", st->has_base, st->base_us);
        next_number(o, "step_us", st->has_step && st->has_base, st->step_us);
        kvshard_writer__out_raw(o, "}, \"prefill\": {");
        traffic(o, &st->prefill);
        kvshard_writer__out_raw(o, "}}");
    }
    kvshard_writer__out_raw(o, "]");
}

static void json_ranks(kvshard__out *o, const kvshard_plan *plan, const kvshard__plan_view *v,
                       const kvshard__comm *c)
{
    kvshard_writer__out_raw(o, ",\n    \"ranks\": [");
    for (uint32_t r = 0; r < v->ranks_count; r++) {
        bool has_d, has_p;
        uint64_t d, p;
        kvshard_comm__rank_received(&has_d, &d, &has_p, &p, plan, c, r);
        kvshard_writer__out_raw(o, r ? ",\n              {" : "{");
        kvshard_writer__json_u64(o, "stage", r / v->tp);
        next_count(o, "tp_rank", true, r % v->tp);
        next_count(o, "split_rank", true, v->place[r].split_rank);
        next_count(o, "decode_bytes_received", has_d, d);
        next_count(o, "prefill_bytes_received", has_p, p);
        kvshard_writer__out_raw(o, "}");
    }
    kvshard_writer__out_raw(o, "]");
}

/* The mechanisms in force. */
static void mechanisms(kvshard__out *o, const kvshard__comm *c)
{
    kvshard_writer__json_word(o, "decode_mechanism",
                              kvshard_options__comm_mechanism_name(c->decode_mechanism));
    next_word(o, "prefill_mechanism", kvshard_options__comm_mechanism_name(c->prefill_mechanism));
    next_word(o, "owner_output", c->owner_scatter ? "scatter" : "broadcast");
}

/* The link, the accelerator and the activation bytes, the link first. */
static void devices(kvshard__out *o, const kvshard__comm *c)
{
    kvshard_writer__json_key(o, "link");
    if (c->has_link) {
        kvshard_writer__out_raw(o, "{");
        kvshard_writer__json_word(o, "name", c->link_name);
        next_count(o, "bandwidth", true, c->link_bandwidth);
        next_number(o, "latency_us", true, c->link_latency_us);
        static const char *const rules[] = {"log2", "linear", "flat"};
        next_word(o, "alpha_rule", rules[c->alpha_rule]);
        kvshard_writer__out_raw(o, "}");
    } else {
        kvshard_writer__out_raw(o, "null");
    }
    next_key(o, "accelerator");
    if (c->has_accelerator) {
        kvshard_writer__out_raw(o, "{");
        kvshard_writer__json_word(o, "name", c->accelerator_name);
        next_count(o, "hbm_bandwidth", c->hbm_bandwidth != 0, c->hbm_bandwidth);
        kvshard_writer__out_raw(o, "}");
    } else {
        kvshard_writer__out_raw(o, "null");
    }
    next_count(o, "activation_bytes", true, c->activation_bytes);
}

void kvshard_comm_out__inputs_json(kvshard__out *o, const kvshard__comm *c)
{
    kvshard_writer__out_raw(o, "{");
    mechanisms(o, c);
    kvshard_writer__out_raw(o, ", ");
    devices(o, c);
    kvshard_writer__out_raw(o, "}");
}

void kvshard_comm_out__row_json(kvshard__out *o, const kvshard_comm_estimate *e)
{
    if (!e->given) {
        kvshard_writer__out_raw(o, "null");
        return;
    }
    kvshard_writer__out_raw(o, "{");
    kvshard_writer__json_u64_or_null(o, "batch", e->has_batch, e->batch);
    next_count(o, "collectives", true, e->decode_collectives);
    next_count(o, "link_bytes", e->has_decode_bytes, e->decode_link_bytes);
    next_number(o, "comm_us", e->has_decode_time, e->decode_comm_us);
    next_number(o, "base_us", e->has_step, e->base_us);
    next_number(o, "step_us", e->has_step, e->step_us);
    next_number(o, "tpot_us", e->has_step, e->tpot_us);
    next_number(o, "throughput", e->has_step, e->throughput);
    next_number(o, "throughput_total", e->has_step, e->throughput_total);
    next_number(o, "throughput_gain", e->has_gain, e->throughput_gain);
    next_count(o, "prefill_link_bytes", e->has_prefill_bytes, e->prefill_link_bytes);
    next_number(o, "prefill_comm_us", e->has_prefill_time, e->prefill_comm_us);
    kvshard_writer__out_raw(o, "}");
}

int kvshard_comm_out__json(kvshard__out *o, const kvshard_plan *plan)
{
    if (!kvshard_comm__given(plan))
        return KVSHARD_OK;
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_allocator a = kvshard_alloc__allocator_or_default(NULL);
    kvshard__comm_stage *stages = kvshard_alloc__bytes(&a, v.pp, sizeof *stages);
    kvshard__comm c;
    int rc = stages ? kvshard_comm__of(&c, stages, plan, NULL) : KVSHARD_ENOMEM;
    if (rc == KVSHARD_OK) {
        kvshard_writer__out_raw(o, "  \"comm\": {");
        kvshard_writer__json_u64(o, "split_size", c.split);
        kvshard_writer__out_raw(o, ", ");
        mechanisms(o, &c);
        next_key(o, "mechanism_default");
        kvshard_writer__out_raw(o, c.mechanism_default ? "true" : "false");
        kvshard_writer__out_raw(o, ",\n    ");
        devices(o, &c);
        json_decode(o, &c);
        json_prefill(o, &c);
        json_stages(o, stages, v.pp);
        json_ranks(o, plan, &v, &c);
        kvshard_writer__out_raw(o, "\n  },\n");
    }
    kvshard_alloc__free(&a, stages);
    return rc;
}

/* ---- text --------------------------------------------------------------------------- */

/* Bytes on links and rates in decimal units, as vendors state them; below
 * a kilobyte whole bytes ("0 B"), as every size kvshard writes. */
static void decimal_bytes(kvshard__out *o, double v, const char *suffix)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (u < 5 && v >= 1000.0) {
        v /= 1000.0;
        u++;
    }
    kvshard_writer__out_printf(o, u ? "%.2f %s%s" : "%.0f %s%s", v, units[u], suffix);
}

/* `text` as printf wrote a fixed-point number, its whole part grouped by
 * thousands and its point '.' whatever the locale: 1348.37 -> "1,348.37". */
static void grouped_fixed(char *buf, size_t cap, const char *text)
{
    const char *digits = text[0] == '-' ? text + 1 : text;
    size_t whole = strspn(digits, "0123456789");
    char grouped[32];
    kvshard_format__grouped_text(grouped, sizeof grouped, strtoull(digits, NULL, 10));
    snprintf(buf, cap, "%s%s%s%s", digits == text ? "" : "-", grouped,
             digits[whole] ? "." : "", digits[whole] ? digits + whole + 1 : "");
}

/* Microseconds as milliseconds with two decimals, grouped: "1,348.37 ms". */
void kvshard_comm_out__ms_text(char *buf, size_t cap, double us)
{
    char text[48];
    snprintf(text, sizeof text, "%.2f", us / 1000.0);
    grouped_fixed(buf, cap, text);
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, " ms");
}

void kvshard_comm_out__latency_text(char *buf, size_t cap, double us)
{
    char text[48] = "";
    for (int decimals = 0; decimals <= 9; decimals++) {
        snprintf(text, sizeof text, "%.*f", decimals, us);
        if (strtod(text, NULL) == us)
            break;
    }
    kvshard_format__c_point(text);
    snprintf(buf, cap, "%s", text);
}

static void rate(kvshard__out *o, uint64_t bytes_per_s)
{
    double v = (double)bytes_per_s;
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    int u = 0;
    while (u < 5 && v >= 1000.0) {
        v /= 1000.0;
        u++;
    }
    kvshard_writer__out_printf(o, "%g %s/s", v, units[u]);
}

void kvshard_comm_out__sources(kvshard__out *o, const kvshard_comm_estimate *e)
{
    kvshard_writer__out_printf(o, "estimate, not a measurement: link %s, ", e->link_name);
    rate(o, e->link_bandwidth);
    char alpha[48];
    kvshard_comm_out__latency_text(alpha, sizeof alpha, e->link_latency_us);
    kvshard_writer__out_printf(o, " a direction, \xce\xb1 %s \xc2\xb5s; %s, ", alpha,
                               e->accelerator_name);
    rate(o, e->hbm_bandwidth);
    kvshard_writer__out_raw(o, " memory (docs/comm.md: their sources, and what the estimate "
                               "leaves out)\n");
}

static void ms(kvshard__out *o, double us)
{
    char text[64];
    kvshard_comm_out__ms_text(text, sizeof text, us);
    kvshard_writer__out_raw(o, text);
}

static void tokens_per_s(kvshard__out *o, double v)
{
    kvshard_writer__out_grouped(o, (uint64_t)llround(v));
    kvshard_writer__out_raw(o, " tokens/s");
}

void kvshard_comm_out__row_cells(kvshard__out *o, const kvshard_comm_estimate *e, bool notes)
{
    char tput[32] = "-", comm[32] = "-";
    if (e->given && e->has_step)
        kvshard_format__grouped_text(tput, sizeof tput, (uint64_t)llround(e->throughput_total));
    if (e->given && e->has_decode_time)
        kvshard_comm_out__ms_text(comm, sizeof comm, e->decode_comm_us);
    kvshard_writer__out_printf(o, notes ? "%-9s %-10s " : "%-9s %s", tput, comm);
}

static void text_inputs(kvshard__out *o, const kvshard_plan *plan, const kvshard__comm *c)
{
    kvshard_writer__out_printf(o, "comm       estimate, not a measurement: split %u", c->split);
    const char *d = kvshard_options__comm_mechanism_name(c->decode_mechanism);
    const char *p = kvshard_options__comm_mechanism_name(c->prefill_mechanism);
    kvshard_writer__out_printf(o, ", decode %s", d ? d : "none");
    if (c->decode_mechanism == KVSHARD__COMM_OWNER_ATTENTION)
        kvshard_writer__out_printf(o, " (output %s)", c->owner_scatter ? "scatter" : "broadcast");
    kvshard_writer__out_printf(o, ", prefill %s", p ? p : "none");
    if (c->mechanism_default)
        kvshard_writer__out_raw(o, c->split > 1 && !kvshard_comm__published_for(plan)
                                       ? " (the profile's; assumed for this model)"
                                       : " (the profile's)");
    kvshard_writer__out_raw(o, "\n           ");
    if (c->has_link) {
        kvshard_writer__out_printf(o, "link %s: ", c->link_name);
        rate(o, c->link_bandwidth);
        static const char *const rules[] = {"log2", "linear", "flat"};
        char alpha[48];
        kvshard_comm_out__latency_text(alpha, sizeof alpha, c->link_latency_us);
        kvshard_writer__out_printf(o, " a direction, \xce\xb1 %s \xc2\xb5s (%s)", alpha,
                                   rules[c->alpha_rule]);
    } else {
        kvshard_writer__out_raw(o, "no link: give --comm_link or --comm_accelerator for times");
    }
    if (c->has_accelerator && c->hbm_bandwidth) {
        kvshard_writer__out_printf(o, "; %s: ", c->accelerator_name);
        rate(o, c->hbm_bandwidth);
        kvshard_writer__out_raw(o, " memory");
    }
    kvshard_writer__out_raw(o, "\n");
}

/* What the base step still needs, named: the inputs a plan without a step
 * lacks, or the weights of some stage when every input is there. */
static void step_hint(kvshard__out *o, const kvshard_plan *plan, const kvshard__comm *c)
{
    const char *missing[4];
    size_t n = 0;
    if (!c->has_accelerator || !c->hbm_bandwidth)
        missing[n++] = "--comm_accelerator";
    if (c->no_weights || (!c->has_accelerator && !kvshard_deployment__weights_given(plan)))
        missing[n++] = "the weights";
    /* A context length also gives the batch, the plan's concurrency. */
    if (!c->context_length)
        missing[n++] = "a context length";
    else if (!c->has_batch)
        missing[n++] = "--comm_batch";
    bool link = c->split > 1 && !c->has_link;
    if (!n && !link)
        missing[n++] = "the weights of every stage";
    bool base = n > 0;
    kvshard_writer__out_raw(o, "; give ");
    for (size_t i = 0; i < n; i++)
        kvshard_writer__out_printf(o, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ",
                                   missing[i]);
    kvshard_writer__out_printf(o, "%s%s\n", base ? " for the base step" : "",
                               link ? base ? " and a link for the step" : "a link for the step"
                                    : "");
}

static void text_decode(kvshard__out *o, const kvshard_plan *plan, const kvshard__comm *c)
{
    kvshard_writer__out_raw(o, "decode     ");
    if (c->has_batch) {
        kvshard_writer__out_grouped(o, c->batch);
        kvshard_writer__out_raw(o, c->batch == 1 ? " sequence" : " sequences");
        /* A given batch above what the plan holds runs as the plan's. */
        if (c->batch_given && plan->comm.batch > c->batch) {
            kvshard_writer__out_raw(o, " (");
            kvshard_writer__out_grouped(o, plan->comm.batch);
            kvshard_writer__out_raw(o, " given, capped at the ");
            kvshard_writer__out_grouped(o, c->batch);
            kvshard_writer__out_raw(o, " the plan holds)");
        }
        kvshard_writer__out_raw(o, ": ");
    }
    kvshard_writer__out_grouped(o, c->decode.collectives);
    kvshard_writer__out_raw(o, " collectives");
    if (c->decode.has_bytes) {
        kvshard_writer__out_raw(o, ", ");
        decimal_bytes(o, (double)c->decode.link_bytes, " on the busiest link");
    }
    if (c->decode.has_time) {
        kvshard_writer__out_raw(o, ", ");
        ms(o, c->decode.comm_us);
    }
    if (!c->has_step) {
        step_hint(o, plan, c);
        return;
    }
    kvshard_writer__out_raw(o, "; base ");
    ms(o, c->base_us);
    kvshard_writer__out_raw(o, " (");
    decimal_bytes(o, (double)c->weights_bytes, " of weights, ");
    decimal_bytes(o, (double)c->kv_read_bytes, " of KV and state); step ");
    ms(o, c->step_us);
    kvshard_writer__out_raw(o, ": ");
    tokens_per_s(o, c->throughput_total);
    kvshard_writer__out_raw(o, "\n");
    if (c->has_unsplit) {
        kvshard_writer__out_raw(o, "           unsplit: ");
        kvshard_writer__out_grouped(o, c->unsplit_batch);
        kvshard_writer__out_raw(o, c->unsplit_batch == 1 ? " sequence, " : " sequences, ");
        ms(o, c->unsplit_step_us);
        kvshard_writer__out_raw(o, " a step, ");
        tokens_per_s(o, c->unsplit_throughput);
        kvshard_writer__out_printf(o,
                                   "; the split gives %.2fx the throughput for %.2fx the "
                                   "sequences\n",
                                   c->throughput_gain, (double)c->batch / (double)c->unsplit_batch);
    }
}

static void text_prefill(kvshard__out *o, const kvshard__comm *c)
{
    kvshard_writer__out_raw(o, "prefill    ");
    if (!c->prompt_length) {
        kvshard_writer__out_raw(o, "give --context_length or --comm_prompt_length for a prompt\n");
        return;
    }
    kvshard_writer__out_raw(o, "a ");
    kvshard_writer__out_grouped(o, c->prompt_length);
    kvshard_writer__out_raw(o, "-token prompt");
    if (c->prefix_hit) {
        kvshard_writer__out_raw(o, " with ");
        kvshard_writer__out_grouped(o, c->prefix_hit);
        kvshard_writer__out_raw(o, " cached");
    }
    kvshard_writer__out_raw(o, " in ");
    kvshard_writer__out_grouped(o, c->chunks);
    kvshard_writer__out_raw(o, c->chunks == 1 ? " chunk of " : " chunks of ");
    kvshard_writer__out_grouped(o, c->chunk);
    kvshard_writer__out_raw(o, ": ");
    kvshard_writer__out_grouped(o, c->history_rows);
    kvshard_writer__out_raw(o, " history rows a layer, ");
    kvshard_writer__out_grouped(o, c->prefill.collectives);
    kvshard_writer__out_raw(o, " collectives");
    if (c->prefill.has_bytes) {
        kvshard_writer__out_raw(o, ", ");
        decimal_bytes(o, (double)c->prefill.link_bytes, "");
    }
    if (c->prefill.has_time) {
        kvshard_writer__out_raw(o, ", ");
        ms(o, c->prefill.comm_us);
        kvshard_writer__out_raw(o, c->split > 1 && c->prefill_mechanism == KVSHARD__COMM_FULL_LAYER
                                       ? " for compute to hide"
                                       : " added to its time to first token");
    }
    kvshard_writer__out_raw(o, "\n");
}

size_t kvshard_comm_out__warnings(kvshard__warning *out, const kvshard_plan *plan)
{
    kvshard__comm c;
    if (!kvshard_comm__given(plan) || kvshard_comm__of(&c, NULL, plan, NULL) != KVSHARD_OK)
        return 0;
    memcpy(out, c.warnings, c.warning_count * sizeof *out);
    return c.warning_count;
}

int kvshard_comm_out__text(kvshard__out *o, const kvshard_plan *plan)
{
    if (!kvshard_comm__given(plan))
        return KVSHARD_OK;
    kvshard__comm c;
    int rc = kvshard_comm__of(&c, NULL, plan, NULL);
    if (rc)
        return rc;
    text_inputs(o, plan, &c);
    text_decode(o, plan, &c);
    text_prefill(o, &c);
    /* What the floor leaves out, so that no one reads it as a measurement. */
    kvshard_writer__out_raw(o, "           leaves out: attention and MoE compute; tensor-parallel, "
                               "expert and pipeline communication;\n"
                               "           launches and waits; layout changes; bandwidth below "
                               "the peak; sparse reads (counted whole)\n");
    return KVSHARD_OK;
}

void kvshard_comm_out__link_bytes(kvshard__out *o, uint64_t bytes)
{
    decimal_bytes(o, (double)bytes, "");
}
