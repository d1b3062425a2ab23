/* The plan and the comparison as text for a person: what `kvshard plan` and
 * `kvshard compare` print. Strings from the input are escaped. */
#include "output/text.h"

#include "output/runs.h"
#include "output/comm_out.h"
#include "output/writer.h"
#include "explore/compare.h"
#include "plan/device.h"
#include "explore/fit.h"
#include "plan/queries.h"
#include "profile/profiles.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Layer-map rows and the rank tables stop after this many entries. */
#define LIST_SHOWN 16
#define RANKS_SHOWN 64
/* Cells on one line of the layer map. */
#define LIST_ROW 10u

#define human_bytes kvshard_writer__out_human

static int digits_of(uint32_t n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

static void write_model(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard__model_info *m = p->model;
    kvshard_writer__out_raw(o, "model      ");
    if (p->model_type[0])
        kvshard_writer__out_safe(o, p->model_type, strlen(p->model_type));
    else
        kvshard_writer__out_raw(o, "(no model_type)");
    kvshard_writer__out_printf(o, ": %u layers (", m->num_layers);
    kvshard_writer__out_kind_counts(o, m);
    kvshard_writer__out_printf(o, "), %s, %u draft layer%s",
                               kvshard_model__attention_label(m->attention), m->num_draft_layers,
                               m->num_draft_layers == 1 ? "" : "s");
    if (m->state.kind != KVSHARD_STATE_NONE) {
        kvshard_writer__out_printf(o, "; %s state", kvshard_state_kind_name(m->state.kind));
        if (p->state_dtype != KVSHARD_DTYPE_AUTO)
            kvshard_writer__out_printf(o, " in %s", kvshard_dtype_name(p->state_dtype));
    }
    kvshard_writer__out_raw(o, "\n");
    const kvshard_options *opt = p->options;
    char pp[24] = "";
    if (p->pp > 1)
        snprintf(pp, sizeof pp, " x pp %u", p->pp);
    kvshard_writer__out_printf(o,
                        "parallel   world_size %u = dp %u%s x cp %u x attention TP %u; layerwise "
                        "split %s, size %u (effective %u), %s rule; KV replication %u\n",
                        opt->world_size, opt->dp_size, pp, opt->cp_size, p->tp,
                        opt->enable_layerwise_split ? "on" : "off", opt->layerwise_split_size,
                        p->split, kvshard_ownership_name(opt->ownership), p->replication);
}

static const char *const weights_sources[] = {"none", "weights_per_rank", "weights_total",
                                              "the safetensors headers",
                                              "the safetensors index alone"};

void kvshard_text__device_line(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard__device_figures *d = p->device;
    char u[24];
    kvshard_device__ppb_text(u, sizeof u, d->utilization_ppb);
    kvshard_writer__out_grouped(o, d->device_memory);
    kvshard_writer__out_raw(o, " B (");
    human_bytes(o, d->device_memory, 0);
    kvshard_writer__out_printf(o, ") x %s = ", u);
    kvshard_writer__out_grouped(o, d->usable);
    kvshard_writer__out_raw(o, " usable; activation_reserve ");
    kvshard_writer__out_grouped(o, d->reserve);
    kvshard_writer__out_printf(o, " B; weights from %s", weights_sources[d->source]);
    if (d->source == KVSHARD__WEIGHTS_SAFETENSORS) {
        kvshard_writer__out_raw(o, " (");
        kvshard_writer__out_grouped(o, d->summary.total_bytes);
        kvshard_writer__out_printf(o, " B in %llu tensors)",
                                   (unsigned long long)d->summary.tensors);
    } else if (d->source == KVSHARD__WEIGHTS_TOTAL || d->source == KVSHARD__WEIGHTS_INDEX) {
        bool index = d->source == KVSHARD__WEIGHTS_INDEX;
        kvshard_writer__out_raw(o, " (");
        kvshard_writer__out_grouped(o, index ? d->summary.total_bytes : p->options->weights_total);
        kvshard_writer__out_raw(o, " B, ");
        kvshard_writer__out_grouped(o,
                                    index ? d->summary.expert_bytes : p->options->weights_experts);
        kvshard_writer__out_printf(o, " B of experts%s)",
                                   index && d->experts_estimated ? ", estimated" : "");
    }
    if (p->pp == 1) {
        kvshard_writer__out_raw(o, "; a rank holds ");
        kvshard_writer__out_grouped(o, p->stage_weights[0]);
        kvshard_writer__out_raw(o, " B of weights, leaving ");
        kvshard_writer__out_grouped(o, p->stage_budgets[0]);
        kvshard_writer__out_raw(o, " B");
    }
}

/* Where the budgets come from, with device inputs. */
static void write_device(kvshard__out *o, const kvshard__plan_view *p)
{
    if (!p->device->used)
        return;
    kvshard_writer__out_raw(o, "device     ");
    kvshard_text__device_line(o, p);
    kvshard_writer__out_raw(o, "\n");
}

/* The global rank layout in the plan's numbers, outermost coordinate first:
 * "rank = pp*8 + tp". Coordinates of size 1 are left out. */
static void write_layout_formula(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard_options *opt = p->options;
    kvshard__strides st = kvshard_partition__rank_strides(opt, p->tp);
    struct term {
        const char *name;
        uint64_t size, stride;
    } terms[4] = {{"dp", opt->dp_size, st.dp},
                  {"pp", p->pp, st.pp},
                  {"cp", opt->cp_size, st.cp},
                  {"tp", p->tp, st.tp}};
    /* Outermost first: the largest stride leads. */
    for (int i = 1; i < 4; i++)
        for (int j = i; j > 0 && terms[j].stride > terms[j - 1].stride; j--) {
            struct term t = terms[j];
            terms[j] = terms[j - 1];
            terms[j - 1] = t;
        }
    kvshard_writer__out_raw(o, "rank =");
    const char *plus = " ";
    for (int i = 0; i < 4; i++) {
        if (terms[i].size == 1)
            continue;
        if (terms[i].stride == 1)
            kvshard_writer__out_printf(o, "%s%s", plus, terms[i].name);
        else
            kvshard_writer__out_printf(o, "%s%s\xC2\xB7%llu", plus, terms[i].name,
                                (unsigned long long)terms[i].stride);
        plus = " + ";
    }
}

/* With pipeline stages: the partition, the strings the engines take (each
 * engine's environment variable, then kvshard's key), and one line per
 * stage. */
/* The stage line's word for the per-sequence bytes: what the layers keep. */
static const char *seq_column(const kvshard__plan_view *p)
{
    uint32_t caches = kvshard__view_seq_caches(p);
    if (caches == (KVSHARD__SEQ_STATE | KVSHARD__SEQ_WINDOW))
        return "state+window";
    return caches == KVSHARD__SEQ_WINDOW ? "window" : "state";
}

static void write_stages(kvshard__out *o, const kvshard__plan_view *p)
{
    if (p->pp == 1)
        return;
    const kvshard_options *opt = p->options;
    if (opt->pp_partition_rule == KVSHARD_PP_RULE_EXPLICIT)
        kvshard_writer__out_printf(o, "pipeline   %u stages, explicit: ", p->pp);
    else
        kvshard_writer__out_printf(o, "pipeline   %u stages, rule %s: ", p->pp,
                            kvshard_pp_rule_name(opt->pp_partition_rule));
    for (uint32_t s = 0; s < p->pp && !o->failed; s++)
        kvshard_writer__out_printf(o, s ? " | %u" : "%u", p->stages[s].count);
    kvshard_writer__out_printf(o,
                               " layers; layout %s: ", kvshard_rank_layout_name(opt->rank_layout));
    write_layout_formula(o, p);
    kvshard_writer__out_raw(o, "\n           ");
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
        if (!(*q)->dialect.partition_env)
            continue;
        kvshard_writer__out_printf(o, "%s=", (*q)->dialect.partition_env);
        for (uint32_t s = 0; s < p->pp && !o->failed; s++)
            kvshard_writer__out_printf(o, s ? ",%u" : "%u", p->stages[s].count);
        kvshard_writer__out_raw(o, "  ");
    }
    kvshard_writer__out_raw(o, "pp_partition=[");
    for (uint32_t s = 0; s < p->pp && !o->failed; s++)
        kvshard_writer__out_printf(o, s ? ", %u" : "%u", p->stages[s].count);
    kvshard_writer__out_raw(o, "]\n");
    /* Per-sequence bytes (states, windows) get a column when any stage keeps some. */
    bool state = false;
    for (uint32_t r = 0; r < p->ranks_count; r++)
        state |= p->ranks[r].state_bytes_per_seq > 0;
    for (uint32_t s = 0; s < p->pp && !o->failed; s++) {
        kvshard_stage_info st = kvshard_queries__stage_info_of(p, s);
        char text[64];
        kvshard_writer__out_printf(o, "stage %-4u ", s);
        snprintf(text, sizeof text, "layers %u\xE2\x80\x93%u", st.layer_first,
                 st.layer_first + st.layer_count - 1);
        kvshard_writer__out_printf(o, "%-17s ", text); /* the dash is 3 bytes, 1 column */
        if (st.num_draft_layers)
            snprintf(text, sizeof text, "%u KV + %u draft", st.num_kv_layers,
                     st.num_draft_layers);
        else
            snprintf(text, sizeof text, "%u KV", st.num_kv_layers);
        kvshard_writer__out_printf(o, "%-15s ", text);
        /* Replica 0's ranks of the stage: a range when consecutive, else
         * the first two and the last. */
        uint32_t first = st.global_rank_first, step = st.global_rank_stride;
        uint32_t last = first + (p->tp - 1) * step;
        int dash = 0; /* the en dash takes 3 bytes and one column */
        if (p->tp == 1)
            snprintf(text, sizeof text, "rank %u", first);
        else if (step == 1)
            dash = snprintf(text, sizeof text, "ranks %u\xE2\x80\x93%u", first, last) > 0 ? 2 : 0;
        else if (p->tp == 2)
            snprintf(text, sizeof text, "ranks %u, %u", first, last);
        else
            snprintf(text, sizeof text, "ranks %u, %u, ... %u", first, first + step, last);
        kvshard_writer__out_printf(o, "%-*s ", 13 + dash, text);
        kvshard_format__grouped_text(text, sizeof text, st.bytes_per_token);
        kvshard_writer__out_printf(o, "%9s B/token  ", text);
        if (state) {
            kvshard_writer__out_printf(o, "%s ", seq_column(p));
            human_bytes(o, st.state_bytes_per_seq, 0);
            kvshard_writer__out_raw(o, "/seq  ");
        }
        if (p->device->used) {
            kvshard_writer__out_raw(o, "weights ");
            human_bytes(o, p->stage_weights[s], 0);
            kvshard_writer__out_raw(o, ", budget ");
            human_bytes(o, p->stage_budgets[s], 0);
            kvshard_writer__out_raw(o, "  ");
        }
        if (st.has_num_blocks) {
            kvshard_format__grouped_text(text, sizeof text, st.num_blocks);
            kvshard_writer__out_printf(o, "%11s blocks", text);
        } else {
            kvshard_writer__out_raw(o, p->has_memory ? "  no KV blocks" : "  no budget");
        }
        kvshard_writer__out_raw(o, st.binds ? "  \xE2\x97\x80 binds\n" : "\n");
    }
}

/* The map's legend, from the kind table: the letters of the KV kinds the
 * model has, which carry their owner, then the letter of every other kind
 * it has. */
static void write_map_legend(kvshard__out *o, const kvshard__model_info *m)
{
    char letters[32] = "", words[160] = "", stars[32] = "", rest[200] = "";
    size_t nl = 0, nw = 0, ns = 0, nr = 0;
    for (uint32_t i = 0; i < KVSHARD__KIND_COUNT; i++) {
        uint8_t k = kvshard_kinds__legend_order[i];
        const kvshard_kinds__row *row = kvshard_kinds__of(k);
        if (m->count[k] == 0)
            continue;
        const char *slash = nl ? "/" : "";
        if (row->paged_kv) {
            nl += (size_t)snprintf(letters + nl, sizeof letters - nl, "%s%c<n>", slash,
                                   row->letter);
            nw += (size_t)snprintf(words + nw, sizeof words - nw, "%s%s", slash, row->map_legend);
            ns += (size_t)snprintf(stars + ns, sizeof stars - ns, "%s%c*", slash, row->letter);
        } else {
            nr += (size_t)snprintf(rest + nr, sizeof rest - nr, ", %c %s", row->letter,
                                   row->map_legend);
        }
    }
    if (nl)
        kvshard_writer__out_printf(o,
                            "\nlayer map  (%s: %s layer whose KV split rank n stores, %s: stored "
                            "on every rank%s)\n",
                            letters, words, stars, rest);
    else
        kvshard_writer__out_printf(o, "\nlayer map  (%s)\n", rest + 2);
}

/* Layer i's cell: its kind's letter and, for a KV layer, its owner. */
static void cell_text(char *cell, size_t cap, const kvshard__plan_view *p, uint32_t i)
{
    const kvshard_kinds__row *row = kvshard_kinds__of(p->kinds[i]);
    int32_t owner = p->owner[i];
    if (!row->paged_kv)
        snprintf(cell, cap, "%c", row->letter);
    else if (owner == KVSHARD_OWNER_ALL)
        snprintf(cell, cap, "%c*", row->letter);
    else
        snprintf(cell, cap, "%c%d", row->letter, (int)owner);
}

/* A long map as runs, one a line: the layers it covers, how many times its
 * cells repeat, and the cells of one repeat (ten to a line). A stretch with
 * no repeat is a run of "x1". */
static void write_map_runs(kvshard__out *o, const kvshard__plan_view *p, int width)
{
    uint32_t L = p->model->num_layers;
    kvshard_writer__out_raw(
        o, "           in runs: FIRST\xE2\x80\x93LAST \xC3\x97N, then the cells that "
           "repeat N times over those layers\n");
    for (uint32_t i = 0; i < L && !o->failed;) {
        kvshard_runs__run r = kvshard_runs__at(p, i, LIST_ROW);
        uint32_t last = i + r.period * r.repeats - 1;
        char span[32], count[32];
        int dash = 0; /* the en dash takes 3 bytes and one column */
        if (last == i)
            snprintf(span, sizeof span, "%u", i);
        else
            dash = snprintf(span, sizeof span, "%u\xE2\x80\x93%u", i, last) > 0 ? 2 : 0;
        kvshard_format__grouped_text(count, sizeof count, r.repeats);
        /* The times sign takes 2 bytes and one column. */
        kvshard_writer__out_printf(o, "%*s \xC3\x97%-8s", 15 + dash, span, count);
        for (uint32_t k = 0; k < r.period; k++) {
            if (k && k % LIST_ROW == 0)
                kvshard_writer__out_printf(o, "\n%26s", "");
            char cell[16];
            cell_text(cell, sizeof cell, p, i + k);
            bool row_end = k % LIST_ROW == LIST_ROW - 1 || k + 1 == r.period;
            kvshard_writer__out_printf(o, " %-*s", row_end ? 0 : width, cell);
        }
        kvshard_writer__out_raw(o, "\n");
        i = last + 1;
    }
}

static void write_layer_map(kvshard__out *o, const kvshard__plan_view *p)
{
    uint32_t L = p->model->num_layers;
    int width = 1 + digits_of(p->split - 1);
    write_map_legend(o, p->model);
    if (L > KVSHARD_RUNS__FOLD_AFTER) {
        write_map_runs(o, p, width);
        return;
    }
    for (uint32_t i = 0; i < L && !o->failed; i++) {
        if (i % LIST_ROW == 0)
            kvshard_writer__out_printf(o, "%s%6u |", i ? "\n" : "", i);
        char cell[16];
        cell_text(cell, sizeof cell, p, i);
        bool row_end = i % LIST_ROW == LIST_ROW - 1 || i + 1 == L;
        kvshard_writer__out_printf(o, " %-*s", row_end ? 0 : width, cell);
    }
    kvshard_writer__out_raw(o, "\n");
}

static void write_list(kvshard__out *o, const uint32_t *items, size_t count)
{
    for (size_t i = 0; i < count && i < LIST_SHOWN; i++) {
        if (i)
            kvshard_writer__out_put(o, " ", 1);
        kvshard_writer__out_u64(o, items[i]);
    }
    if (count > LIST_SHOWN)
        kvshard_writer__out_printf(o, " ... (%zu in all)", count);
}

/* The TP ranks of split rank `s`: every one when there are at most four,
 * else the first two, the last and how many. */
static void write_split_ranks(kvshard__out *o, const kvshard__plan_view *p)
{
    uint32_t T = p->tp, S = p->split;
    bool stages = p->pp > 1;
    /* The column fits its widest list (four ranks of four digits). */
    int width = 19;
    for (uint32_t s = 0; s < S; s++) {
        char ranks[64];
        kvshard_writer__split_members(ranks, sizeof ranks, T, S, s);
        width = (int)strlen(ranks) > width ? (int)strlen(ranks) : width;
    }
    kvshard_writer__out_printf(o, "\n%ssplit rank  %-*s owned  KV layers stored\n",
                        stages ? "stage  " : "", width, "TP ranks");
    for (uint32_t stage = 0; stage < p->pp && !o->failed; stage++) {
        for (uint32_t s = 0; s < S && !o->failed; s++) {
            char ranks[64];
            kvshard_writer__split_members(ranks, sizeof ranks, T, S, s);
            uint32_t count;
            const uint32_t *owned = kvshard__view_owned(p, stage, s, &count);
            if (stages)
                kvshard_writer__out_printf(o, "%-6u ", stage);
            kvshard_writer__out_printf(o, "%-11u %-*s %-6u ", s, width, ranks, count);
            write_list(o, owned, count);
            kvshard_writer__out_raw(o, "\n");
        }
    }
}

static void write_memory(kvshard__out *o, const kvshard__plan_view *p)
{
    bool stages = p->pp > 1;
    kvshard_writer__out_printf(o, "\nmemory per TP rank (block_size %u tokens)\n",
                        p->options->block_size);
    /* The per-sequence scratch of a split compressed model gets a column of
     * its own; other plans have none to show. */
    bool seq_scratch = false;
    for (uint32_t r = 0; r < p->ranks_count; r++)
        seq_scratch |= p->ranks[r].scratch_bytes_per_seq > 0;
    kvshard_writer__out_raw(o, stages ? "stage  TP rank  " : "TP rank  ");
    /* The per-sequence column is named for what the layers keep, with one
     * column each when they keep both. */
    uint32_t caches = kvshard__view_seq_caches(p);
    bool both = caches == (KVSHARD__SEQ_STATE | KVSHARD__SEQ_WINDOW);
    kvshard_writer__out_raw(o, "KV/token     scratch/token  draft/token  per block    ");
    kvshard_writer__out_raw(o, both                            ? "state/seq    window/seq   "
                               : caches == KVSHARD__SEQ_WINDOW ? "window/seq   "
                                                               : "state/seq    ");
    kvshard_writer__out_raw(o, seq_scratch ? "scratch/seq  blocks\n" : "blocks\n");
    for (uint32_t r = 0; r < p->ranks_count && r < RANKS_SHOWN && !o->failed; r++) {
        const kvshard_rank_memory *m = &p->ranks[r];
        if (stages)
            kvshard_writer__out_printf(o, "%-6u ", r / p->tp);
        kvshard_writer__out_printf(o, "%-8u ", r % p->tp);
        human_bytes(o, m->kv_bytes_per_token, 12);
        kvshard_writer__out_put(o, " ", 1);
        human_bytes(o, m->scratch_bytes_per_token, 14);
        kvshard_writer__out_put(o, " ", 1);
        human_bytes(o, m->draft_bytes_per_token, 12);
        kvshard_writer__out_put(o, " ", 1);
        human_bytes(o, m->bytes_per_block, 12);
        kvshard_writer__out_put(o, " ", 1);
        if (both) {
            uint64_t state = kvshard_queries__rank_state(p, r);
            human_bytes(o, state, 12);
            kvshard_writer__out_put(o, " ", 1);
            human_bytes(o, m->state_bytes_per_seq - state, 12);
        } else {
            human_bytes(o, m->state_bytes_per_seq, 12);
        }
        kvshard_writer__out_put(o, " ", 1);
        if (seq_scratch) {
            human_bytes(o, m->scratch_bytes_per_seq, 12);
            kvshard_writer__out_put(o, " ", 1);
        }
        if (m->has_num_blocks)
            kvshard_writer__out_grouped(o, m->num_blocks);
        else
            kvshard_writer__out_raw(o, "-");
        kvshard_writer__out_raw(o, "\n");
    }
    if (p->ranks_count > RANKS_SHOWN)
        kvshard_writer__out_printf(o, "... %u more %s (all figures: --format=json)\n",
                            p->ranks_count - RANKS_SHOWN, stages ? "ranks" : "TP ranks");
}

/* The capacity in the profile's words, and at a context length the answer a
 * person acts on. */
static void write_capacity(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard__capacity *c = p->capacity;
    const kvshard_options *opt = p->options;
    kvshard__printer pr = kvshard_writer__out_text_printer(o);
    kvshard_profile__view pv = kvshard__profile_view(p);
    p->profile->voice.write_capacity(&pr, &pv);
    uint64_t max_seqs = kvshard__max_seqs_of(c, opt);
    if (opt->context_length) {
        kvshard_writer__out_raw(o, "context    at ");
        kvshard_writer__out_grouped(o, opt->context_length);
        kvshard_writer__out_raw(o, " tokens: ");
        if (!c->has_concurrency) {
            kvshard_writer__out_raw(o, p->has_memory ? "no KV bytes per block, so no concurrency\n"
                                              : "give memory_per_rank for the sequences that run "
                                                "at once\n");
        } else {
            kvshard_writer__out_grouped(o, c->concurrency);
            kvshard_writer__out_raw(o, c->concurrency == 1 ? " sequence at once"
                                                           : " sequences at once");
            if (c->concurrency < max_seqs && p->ranks[0].state_bytes_per_seq && c->reserved) {
                kvshard_writer__out_printf(o, " (max_seqs %llu reserves %s for ",
                                           (unsigned long long)max_seqs,
                                           kvshard_kinds__seq_noun(kvshard__view_seq_caches(p)));
                kvshard_writer__out_grouped(o, max_seqs - c->concurrency);
                kvshard_writer__out_raw(o, " that cannot run");
            } else if (c->concurrency < max_seqs) {
                kvshard_writer__out_printf(o, " (below max_seqs %llu",
                                           (unsigned long long)max_seqs);
            } else {
                kvshard_writer__out_printf(o, " (max_seqs %llu is reached",
                                           (unsigned long long)max_seqs);
            }
            if (c->has_balanced_max_seqs) {
                kvshard_writer__out_raw(o, "; balanced max_seqs ");
                kvshard_writer__out_grouped(o, c->balanced_max_seqs);
            }
            kvshard_writer__out_raw(o, ")\n");
        }
    }
    const kvshard_uniform *u = p->uniform;
    kvshard_writer__out_raw(o, "uniform    without the split: ");
    human_bytes(o, u->kv_bytes_per_token, 0);
    kvshard_writer__out_raw(o, " KV per token, ");
    human_bytes(o, u->bytes_per_block, 0);
    kvshard_writer__out_raw(o, " per block");
    if (c->has_num_blocks && u->has_num_blocks) {
        kvshard_writer__out_raw(o, ", ");
        kvshard_writer__out_grouped(o, u->num_blocks);
        kvshard_writer__out_raw(o, " blocks");
        if (u->num_blocks)
            kvshard_writer__out_printf(o, ": the plan holds %.2fx the blocks",
                                (double)c->num_blocks / (double)u->num_blocks);
    }
    kvshard_writer__out_raw(o, "\n");
}

static void write_warnings(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard__warning priced[KVSHARD__COMM_WARNINGS];
    size_t count = p->warning_count + kvshard_comm_out__warnings(priced, p->plan);
    kvshard_writer__out_raw(o, count ? "\nwarnings\n" : "\nwarnings   none\n");
    for (size_t i = 0; i < count; i++) {
        const kvshard__warning *w =
            i < p->warning_count ? &p->warnings[i] : &priced[i - p->warning_count];
        kvshard_writer__out_printf(o, "  %s: ", kvshard_warning_name(w->code));
        kvshard_writer__out_safe(o, w->message, strlen(w->message));
        kvshard_writer__out_raw(o, "\n");
    }
}

int kvshard_plan_write_text(const kvshard_plan *plan, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, plan, write, user))
        return KVSHARD_EINVAL;
    kvshard__plan_view view = kvshard_plan__view_of(plan);
    const kvshard__plan_view *p = &view;
    write_model(&o, p);
    write_device(&o, p);
    write_stages(&o, p);
    write_layer_map(&o, p);
    write_split_ranks(&o, p);
    write_memory(&o, p);
    write_capacity(&o, p);
    int comm_rc = kvshard_comm_out__text(&o, plan);
    write_warnings(&o, p);
    kvshard_writer__out_raw(&o, "digest     ");
    kvshard_writer__out_hex64(&o, p->digest);
    kvshard_writer__out_raw(&o, " (layout ");
    kvshard_writer__out_hex64(&o, p->layout_digest);
    kvshard_writer__out_raw(&o, ")\n");
    int rc = kvshard_writer__out_finish(&o);
    return rc ? rc : comm_rc;
}

/* " name name": the warnings a row's mask (bit 1 << code) holds. */
static void write_warning_names(kvshard__out *o, uint32_t mask)
{
    for (unsigned code = 0; code < 32; code++) {
        if (mask & (1u << code))
            kvshard_writer__out_printf(o, " %s", kvshard_warning_name((kvshard_warning_code)code));
    }
}

/* ---- comparison -------------------------------------------------------------------------- */

/* The first priced row's estimate when it has a link and an accelerator:
 * only then are the rows' times and throughputs shown; else NULL. */
static const kvshard_comm_estimate *comparison_timed(const kvshard_comparison *c)
{
    for (size_t i = 0; c->comm_given && i < c->count; i++) {
        const kvshard_comm_estimate *e = c->rows[i].comm;
        if (e->given)
            return e->has_link && e->has_accelerator ? e : NULL;
    }
    return NULL;
}

/* A row's estimate cells: decode communication and step in ms, tokens/s
 * and the gain over the unsplit row ("-" where unknown). */
typedef struct comm_cells {
    char comm[32], step[32], tput[32], gain[32];
} comm_cells;

static comm_cells comparison_comm_cells(const kvshard_comm_estimate *e)
{
    comm_cells c = {"-", "-", "-", "-"};
    if (e->given && e->has_decode_time)
        kvshard_comm_out__ms_text(c.comm, sizeof c.comm, e->decode_comm_us);
    if (e->given && e->has_step) {
        kvshard_comm_out__ms_text(c.step, sizeof c.step, e->step_us);
        kvshard_format__grouped_text(c.tput, sizeof c.tput, (uint64_t)llround(e->throughput));
    }
    if (e->given && e->has_gain)
        snprintf(c.gain, sizeof c.gain, "%.2fx", e->throughput_gain);
    return c;
}

/* The widths of the estimate's columns: their usual ones, wider where a
 * row's cell is (a step of 10 s and more, a million tokens/s), so that
 * every row stays under its heading. */
typedef struct comm_widths {
    int comm, step, tput;
} comm_widths;

static int widest(int width, const char *cell)
{
    int n = (int)strlen(cell);
    return n > width ? n : width;
}

static comm_widths comparison_comm_widths(const kvshard_comparison *comparison)
{
    comm_widths w = {10, 10, 8};
    for (size_t i = 0; i < comparison->count; i++) {
        const kvshard_comparison_row *r = &comparison->rows[i];
        if (r->error)
            continue;
        comm_cells c = comparison_comm_cells(r->comm);
        w.comm = widest(w.comm, c.comm);
        w.step = widest(w.step, c.step);
        w.tput = widest(w.tput, c.tput);
    }
    return w;
}

int kvshard_comparison_write_text(const kvshard_comparison *comparison, kvshard_write_fn write,
                                  void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, comparison, write, user))
        return KVSHARD_EINVAL;
    const kvshard_options *opt = &comparison->options;
    bool context = comparison->has_memory && opt->context_length;
    /* Rows of several pipeline sizes, or of one above 1, name P and T. */
    bool stages = comparison->sweep_pp || opt->pp_size > 1;
    kvshard_writer__out_printf(&o, "%s for world_size %u (dp %u, cp %u)",
                        comparison->sweep_pp ? "pipeline and split sizes" : "split sizes",
                        opt->world_size, opt->dp_size, opt->cp_size);
    const kvshard__profile *profile = comparison->profile;
    if (profile->voice.named_in_headers)
        kvshard_writer__out_printf(&o, ", %s profile", profile->name);
    if (comparison->has_memory) {
        kvshard_writer__out_printf(&o, ", %s ", profile->voice.budget_label);
        human_bytes(&o, comparison->memory, 0);
        kvshard_writer__out_printf(&o, ", max_seqs %u", opt->max_seqs);
        if (context) {
            kvshard_writer__out_raw(&o, ", at ");
            kvshard_writer__out_grouped(&o, opt->context_length);
            kvshard_writer__out_raw(&o, " tokens");
        }
        kvshard_writer__out_raw(&o, "\n");
    } else {
        kvshard_writer__out_raw(&o, " -- no memory_per_rank: gain compares bytes per block\n");
    }
    const kvshard_comm_estimate *timed = comparison_timed(comparison);
    if (comparison->rank_by == KVSHARD_RANK_THROUGHPUT)
        kvshard_writer__out_raw(&o, "\nranked by throughput (estimate)");
    kvshard_writer__out_raw(&o, stages ? "\n     P     T    S  rule        owned  "
                                : "\n     S  rule        owned  ");
    kvshard_writer__out_raw(
        &o, context ? "max KV/token  blocks        max tokens      running  balanced  "
                    : "max KV/token  blocks        max tokens      ");
    comm_widths widths = {10, 10, 8};
    if (timed) {
        widths = comparison_comm_widths(comparison);
        kvshard_writer__out_printf(&o, "%-*s %-*s %-*s x tput  ", widths.comm, "comm/step",
                                   widths.step, "step", widths.tput, "tok/s");
    }
    kvshard_writer__out_raw(&o, "gain\n");
    for (size_t i = 0; i < comparison->count && !o.failed; i++) {
        const kvshard_comparison_row *r = &comparison->rows[i];
        kvshard_writer__out_raw(&o, i == comparison->recommended ? ">" : " ");
        if (stages)
            kvshard_writer__out_printf(&o, " %4u  %4u", r->pp_size, r->attn_tp_size);
        kvshard_writer__out_printf(&o, " %4u  %-11s ", r->layerwise_split_size,
                            kvshard_ownership_name(r->ownership));
        if (r->error) {
            kvshard_writer__out_raw(&o, "error: ");
            kvshard_writer__out_safe(&o, r->error_message, strlen(r->error_message));
            kvshard_writer__out_raw(&o, "\n");
            continue;
        }
        char owned[32];
        snprintf(owned, sizeof owned, "%u-%u", r->min_owned_layers, r->max_owned_layers);
        kvshard_writer__out_printf(&o, "%-6s ", owned);
        human_bytes(&o, r->max_kv_bytes_per_token, 13);
        kvshard_writer__out_put(&o, " ", 1);
        char blocks[32] = "-", tokens[32] = "-";
        if (r->has_num_blocks) {
            kvshard_format__grouped_text(blocks, sizeof blocks, r->num_blocks);
            kvshard_format__grouped_text(tokens, sizeof tokens, r->max_tokens);
        }
        kvshard_writer__out_printf(&o, "%-13s %-15s ", blocks, tokens);
        if (context) {
            char running[24] = "-", balanced[24] = "-";
            if (r->has_concurrency)
                kvshard_format__grouped_text(running, sizeof running, r->concurrency);
            if (r->has_balanced_max_seqs)
                kvshard_format__grouped_text(balanced, sizeof balanced, r->balanced_max_seqs);
            kvshard_writer__out_printf(&o, "%-8s %-9s ", running, balanced);
        }
        if (timed) {
            comm_cells c = comparison_comm_cells(r->comm);
            kvshard_writer__out_printf(&o, "%-*s %-*s %-*s %-7s", widths.comm, c.comm, widths.step,
                                       c.step, widths.tput, c.tput, c.gain);
        }
        if (isinf(r->gain)) /* the unsplit plan fits no block */
            kvshard_writer__out_raw(&o, "  new ");
        else
            kvshard_writer__out_printf(&o, "%5.2fx ", r->gain);
        int bar = r->gain > 4.0 ? 40 : (int)(r->gain * 10.0 + 0.5);
        for (int k = 0; k < bar; k++)
            kvshard_writer__out_put(&o, "#", 1);
        write_warning_names(&o, r->warnings);
        kvshard_writer__out_raw(&o, "\n");
    }
    if (timed) {
        kvshard_writer__out_raw(&o, "\n");
        kvshard_comm_out__sources(&o, timed);
    }
    char flags[256];
    kvshard_compare__comparison_flags(flags, sizeof flags, comparison);
    if (profile->defaults.runs_its_ownership_only)
        kvshard_writer__out_printf(&o,
                            "\nthe %s profile's engine runs the %s rule only: the other rules' "
                            "rows are shown for comparison and never recommended\n",
                            profile->name, kvshard_ownership_name(profile->defaults.ownership));
    kvshard_writer__out_printf(&o, "\nrecommended: %s\n", flags);
    /* A recommended max_seqs is a figure the user did not give: say where
     * it comes from and how it differs from theirs. */
    const kvshard_comparison_row *rec = &comparison->rows[comparison->recommended];
    if (context && rec->has_balanced_max_seqs) {
        char seqs[32], length[32];
        kvshard_format__grouped_text(seqs, sizeof seqs, rec->balanced_max_seqs);
        kvshard_format__grouped_text(length, sizeof length, opt->context_length);
        kvshard_writer__out_printf(&o,
                            "  max_seqs %s is the balanced max_seqs: the most sequences of %s "
                            "tokens whose state and KV blocks all fit on every rank",
                            seqs, length);
        if (opt->max_seqs > rec->balanced_max_seqs)
            kvshard_writer__out_printf(
                &o, " (max_seqs %u holds state for sequences that cannot run)", opt->max_seqs);
        else if (opt->max_seqs < rec->balanced_max_seqs)
            kvshard_writer__out_printf(&o, " (max_seqs %u leaves blocks no sequence uses)",
                                       opt->max_seqs);
        kvshard_writer__out_raw(&o, "\n");
    }
    return kvshard_writer__out_finish(&o);
}

/* ---- fit -------------------------------------------------------------------------------- */

/* An engine fit's one flag line: that engine's environment and flags. */
static int write_engine_line(kvshard__out *o, const kvshard_fit *fit)
{
    char flags[4096], env[4096];
    const char *name = fit->profile->name;
    if (kvshard_fit_flags(flags, sizeof flags, fit, name, false) < 0 ||
        kvshard_fit_flags(env, sizeof env, fit, name, true) < 0)
        flags[0] = env[0] = '\0';
    kvshard_writer__out_printf(o, "\nrecommended: %s %s%s%s\n", name, env, env[0] ? " " : "",
                               flags);
    return kvshard_writer__out_finish(o);
}

int kvshard_fit_write_text(const kvshard_fit *fit, size_t top, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, fit, write, user))
        return KVSHARD_EINVAL;
    const kvshard__device_figures *d = &fit->device;
    const kvshard_options *opt = &fit->options;
    char u[24];
    kvshard_device__ppb_text(u, sizeof u, d->utilization_ppb);
    if (fit->engine) {
        /* The engine makes its own budget of its share: no kvshard usable. */
        kvshard_format__shortest_text(u, sizeof u, fit->engine_utilization);
        kvshard_writer__out_printf(&o, "fit under %s %s: %u GPUs of ", fit->profile->name,
                                   fit->engine_version, fit->gpus);
        kvshard_writer__out_grouped(&o, d->device_memory);
        kvshard_writer__out_raw(&o, " B (");
        human_bytes(&o, d->device_memory, 0);
        kvshard_writer__out_printf(&o, ") x %s; activation_reserve ", u);
    } else {
        kvshard_writer__out_printf(&o, "fit        %u GPUs of ", fit->gpus);
        kvshard_writer__out_grouped(&o, d->device_memory);
        kvshard_writer__out_raw(&o, " B (");
        human_bytes(&o, d->device_memory, 0);
        kvshard_writer__out_printf(&o, ") x %s = ", u);
        kvshard_writer__out_grouped(&o, d->usable);
        kvshard_writer__out_raw(&o, " usable; activation_reserve ");
    }
    kvshard_writer__out_grouped(&o, d->reserve);
    kvshard_writer__out_printf(&o, " B\n           weights from %s", weights_sources[d->source]);
    if (d->source == KVSHARD__WEIGHTS_SAFETENSORS) {
        kvshard_writer__out_raw(&o, ": ");
        kvshard_writer__out_grouped(&o, d->summary.total_bytes);
        kvshard_writer__out_printf(&o, " B in %llu tensors",
                                   (unsigned long long)d->summary.tensors);
        if (d->summary.unknown_tensors)
            kvshard_writer__out_printf(&o, " (%llu unknown)",
                                (unsigned long long)d->summary.unknown_tensors);
    } else {
        bool index = d->source == KVSHARD__WEIGHTS_INDEX;
        kvshard_writer__out_raw(&o, ": ");
        kvshard_writer__out_grouped(&o, index ? d->summary.total_bytes : opt->weights_total);
        kvshard_writer__out_raw(&o, " B, ");
        kvshard_writer__out_grouped(&o, index ? d->summary.expert_bytes : opt->weights_experts);
        kvshard_writer__out_printf(&o, " B of experts%s",
                                   index && d->experts_estimated ? ", estimated" : "");
    }
    if (opt->context_length) {
        kvshard_writer__out_raw(&o, "; at ");
        kvshard_writer__out_grouped(&o, opt->context_length);
        kvshard_writer__out_raw(&o, " tokens");
    } else {
        kvshard_writer__out_printf(&o, "; max_seqs %u", opt->max_seqs);
    }
    kvshard_writer__out_raw(&o, "\n");
    if (fit->limited_layouts)
        kvshard_writer__out_printf(&o,
                            "limits     T limited to %u per node, P to %u stage%s; "
                            "--max_tp_size/--max_pp_size to widen\n",
                            fit->max_tp_size, fit->max_pp_size, fit->max_pp_size == 1 ? "" : "s");
    bool seqs = opt->context_length != 0;
    bool by_throughput = fit->rank_by == KVSHARD_RANK_THROUGHPUT;
    if (by_throughput)
        kvshard_writer__out_raw(&o, "\nranked by throughput (estimate: memory-bandwidth floor "
                                    "and split communication; docs/comm.md says what it leaves "
                                    "out)");
    kvshard_writer__out_raw(
        &o, seqs ? "\nrank     T     P     D     S  rule        weights/rank  budget       "
                   "seqs/replica  seqs      tokens          "
                 : "\nrank     T     P     D     S  rule        weights/rank  budget       "
                   "blocks        tokens          ");
    kvshard_writer__out_raw(&o, by_throughput ? "tok/s     comm/step  notes\n" : "notes\n");
    size_t shown = top ? top : 10;
    for (size_t i = 0; i < fit->count && i < shown && !o.failed; i++) {
        const kvshard_fit_row *r = &fit->rows[i];
        if (!r->fits)
            break;
        kvshard_writer__out_printf(&o, "%4u  %4u  %4u  %4u  %4u  %-11s ", r->rank, r->tp_size,
                            r->pp_size, r->dp_size, r->layerwise_split_size,
                            r->layerwise_split_size > 1 ? kvshard_ownership_name(r->ownership)
                                                        : "-");
        human_bytes(&o, r->weights_per_rank, 13);
        kvshard_writer__out_put(&o, " ", 1);
        human_bytes(&o, r->budget, 12);
        kvshard_writer__out_put(&o, " ", 1);
        char a[32], b[32], c[32];
        if (seqs) {
            kvshard_format__grouped_text(a, sizeof a, r->seqs_per_replica);
            kvshard_format__grouped_text(b, sizeof b, r->seqs_total);
            kvshard_writer__out_printf(&o, "%12s  %-9s ", a, b);
        } else {
            kvshard_format__grouped_text(a, sizeof a, r->num_blocks);
            kvshard_writer__out_printf(&o, "%-13s ", a);
        }
        kvshard_format__grouped_text(c, sizeof c, r->tokens_total);
        if (by_throughput) {
            kvshard_writer__out_printf(&o, "%-15s ", c);
            kvshard_comm_out__row_cells(&o, &r->comm, r->warnings != 0);
        } else {
            kvshard_writer__out_printf(&o, r->warnings ? "%-15s" : "%s", c);
        }
        write_warning_names(&o, r->warnings);
        kvshard_writer__out_raw(&o, "\n");
    }
    if (fit->fitting > shown)
        kvshard_writer__out_printf(&o, "... %zu more layouts fit (all rows: --format=json)\n",
                            fit->fitting - shown);
    /* The priced table says what link and memory it assumes, as compare's. */
    for (size_t i = 0; by_throughput && i < fit->fitting; i++) {
        const kvshard_comm_estimate *e = &fit->rows[i].comm;
        if (e->given && e->has_link && e->has_accelerator) {
            kvshard_writer__out_raw(&o, "\n");
            kvshard_comm_out__sources(&o, e);
            break;
        }
    }
    size_t weights = 0, state = 0;
    for (size_t i = fit->fitting; i < fit->count; i++)
        fit->rows[i].reason == KVSHARD_EDOESNOTFIT ? weights++ : state++;
    if (weights + state)
        kvshard_writer__out_printf(&o, "%zu layout%s do%s not fit: %zu weights, %zu state\n",
                            weights + state, weights + state == 1 ? "" : "s",
                            weights + state == 1 ? "es" : "", weights, state);
    for (size_t i = 0; i < fit->refused_count; i++)
        kvshard_writer__out_printf(&o, "refused    T = %u, P = %u, D = %u: %s\n",
                                   fit->refused[i].tp, fit->refused[i].pp, fit->refused[i].dp,
                                   kvshard_fit__refusal_name(&fit->refused[i]));
    /* The recommendation as the commands that run it. */
    char flags[4096];
    if (fit->engine)
        return write_engine_line(&o, fit);
    const kvshard__profile *own = kvshard_profiles__own();
    kvshard_fit_flags(flags, sizeof flags, fit, own->name, false);
    kvshard_writer__out_raw(&o, "\nrecommended: kvshard plan ");
    kvshard_writer__out_safe(&o, fit->model_source, strlen(fit->model_source));
    kvshard_writer__out_printf(&o, " %s --device_memory=%llu", flags,
                        (unsigned long long)d->device_memory);
    if (opt->memory_utilization > 0) {
        kvshard_device__ppb_flag_text(u, sizeof u, d->utilization_ppb);
        kvshard_writer__out_printf(&o, " --memory_utilization=%s", u);
    }
    if (opt->activation_reserve != KVSHARD_RESERVE_AUTO)
        kvshard_writer__out_printf(&o, " --activation_reserve=%llu",
                            (unsigned long long)opt->activation_reserve);
    if (opt->weights_total)
        kvshard_writer__out_printf(&o, " --weights_total=%llu --weights_experts=%llu",
                            (unsigned long long)opt->weights_total,
                            (unsigned long long)opt->weights_experts);
    if (opt->context_length)
        kvshard_writer__out_printf(&o, " --context_length=%u", opt->context_length);
    /* The cache's dtype decides the row's sequences: a line without it
     * would plan another row. */
    if (opt->kv_cache_dtype != KVSHARD_DTYPE_AUTO)
        kvshard_writer__out_printf(&o, " --kv_cache_dtype=%s",
                                   kvshard_dtype_name(opt->kv_cache_dtype));
    kvshard_writer__out_raw(&o, "\n");
    /* Then each engine's line: its environment and flags. Only kvshard
     * splits layers; an engine that refuses stages with draft layers says
     * so when they are counted. */
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
        if (*q == own || !(*q)->dialect.recommend)
            continue;
        const char *name = (*q)->name;
        char env[4096];
        if (kvshard_fit_flags(flags, sizeof flags, fit, name, false) < 0) {
            const char *reason = kvshard_fit__engine_reason(fit, name);
            kvshard_writer__out_printf(&o, "%-12s no line: %s\n", name,
                                       reason ? reason : "unsupported");
            continue;
        }
        kvshard_fit_flags(env, sizeof env, fit, name, true);
        kvshard_writer__out_printf(&o, "%-12s %s%s%s\n", name, env[0] ? env : "", env[0] ? " " : "",
                            flags);
    }
    return kvshard_writer__out_finish(&o);
}
