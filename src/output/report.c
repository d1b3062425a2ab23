/* One self-contained HTML page of a plan: the layer map, each TP rank's
 * bytes, the capacity, the split-size comparison, the warnings and the
 * digests. Inline CSS and SVG only; the markup is well-formed XML, and every
 * string from the input goes out through kvshard_writer__out_xml(). */
#include "output/report.h"
#include "output/report_chart.h"
#include "output/report_comm.h"
#include "output/runs.h"
#include "output/svg.h"
#include "output/text.h"
#include "explore/compare.h"
#include "plan/memory.h"
#include "plan/queries.h"
#include "profile/profiles.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Text colours: #1a1a1a on white is 17.4:1, on the #f3f3f3 and #fff3c4
 * backgrounds above 15:1; #555 on white is 7.5:1; #8a0000 on white 10:1. */
static const char PAGE_STYLE[] =
    "<style>\n"
    "body{margin:0 auto;max-width:1180px;padding:16px 24px;color:#1a1a1a;background:#fff;"
    "font:15px/1.45 system-ui,\"Segoe UI\",Roboto,Helvetica,Arial,sans-serif}\n"
    "h1{font-size:24px;margin:8px 0}\n"
    "h2{font-size:19px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid #c8c8c8}\n"
    ".sub{color:#555}\n"
    ".lead{font-size:17px}\n"
    /* Figures keep their size (their text never drops below 11 px) and
     * scroll inside their box when the window is narrower. */
    ".fig,.tw{overflow-x:auto;margin:8px 0}\n"
    ".fig svg{display:block;max-width:none}\n"
    "abbr{text-decoration:none;cursor:help}\n"
    "table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:8px "
    "0;font-size:14px}\n"
    "th,td{border:1px solid #c8c8c8;padding:3px 8px;text-align:left;vertical-align:top}\n"
    "th{background:#f3f3f3}\n"
    "td.n{text-align:right;white-space:nowrap}\n"
    "tr.rec td{background:#fff3c4;font-weight:bold}\n"
    ".err{color:#8a0000}\n"
    "td.notes{white-space:nowrap}\n"
    "@media (max-width:1000px){body{padding:12px}td.b svg{width:80px}th,td{padding:3px 5px}}\n"
    "code{font-family:ui-monospace,Menlo,Consolas,\"DejaVu Sans Mono\",monospace;"
    "background:#f3f3f3;padding:0 3px}\n"
    "svg.bar .cb{fill:#4477aa}\n"
    "svg.bar .rec{fill:#e69f00;stroke:#000;stroke-width:1}\n"
    "@media print{\n"
    "body{max-width:none;padding:0;font-size:10pt}\n"
    "h2{break-after:avoid}\n"
    "table,.keep{break-inside:avoid}\n"
    ".fig{overflow:visible}\n"
    "*{-webkit-print-color-adjust:exact;print-color-adjust:exact}\n"
    "@page{margin:12mm}\n"
    "}\n"
    "</style>\n";

/* "98,304 B (96.00 KiB)": the exact figure, with a human one beside it. */
static void bytes(kvshard__out *o, uint64_t b)
{
    kvshard__printer pr = kvshard_writer__out_html_printer(o);
    kvshard_format__bytes(&pr, b);
}

static void model_name(kvshard__out *o, const kvshard__plan_view *p)
{
    char name[KVSHARD_ERROR_SOURCE_MAX];
    kvshard_report__model_name(name, sizeof name, p);
    kvshard_writer__out_xml(o, name, strlen(name));
}

void kvshard_report__model_name(char *out, size_t cap, const kvshard__plan_view *p)
{
    const char *src = p->source ? p->source : "";
    size_t len = strlen(src);
    while (len > 1 && src[len - 1] == '/')
        len--;
    const char *base = src;
    for (size_t i = 0; i < len; i++)
        if (src[i] == '/')
            base = src + i + 1;
    size_t n = (size_t)(src + len - base);
    /* A generic file name says nothing: the directory names the model. */
    static const char *const generic[] = {"config.json", "config.yaml", "config.yml", NULL};
    for (int g = 0; generic[g]; g++) {
        if (n == strlen(generic[g]) && memcmp(base, generic[g], n) == 0 && base > src + 1) {
            const char *end = base - 1, *dir = src;
            for (const char *c = src; c < end; c++)
                if (*c == '/')
                    dir = c + 1;
            if (end > dir) {
                base = dir;
                n = (size_t)(end - dir);
            }
            break;
        }
    }
    const char *dot = NULL;
    for (const char *c = base; c < base + n; c++)
        if (*c == '.')
            dot = c;
    if (dot && dot > base)
        n = (size_t)(dot - base);
    if (n == 0 || base[0] == '<') {
        base = p->model_type[0] ? p->model_type : "model";
        n = strlen(base);
    }
    snprintf(out, cap, "%.*s", (int)n, base);
}

/* A table cell of a figure, "-" without one. */
static void cell_u64(kvshard__out *o, bool has, uint64_t v)
{
    kvshard_writer__out_raw(o, "<td class=\"n\">");
    if (has)
        kvshard_writer__out_grouped(o, v);
    else
        kvshard_writer__out_raw(o, "-");
    kvshard_writer__out_raw(o, "</td>");
}

/* Width of a bar of `v` out of `max` on `full` px. */
static double bar_width(uint64_t v, uint64_t max, unsigned full)
{
    return max ? (double)v / (double)max * full : 0.0;
}

/* ---- header ------------------------------------------------------------ */

static void write_head(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard_writer__out_raw(o, "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" "
                        "lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
                        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                        "'none'; style-src 'unsafe-inline'\"/>\n"
                        "<meta name=\"viewport\" content=\"width=device-width, "
                        "initial-scale=1\"/>\n<title>");
    model_name(o, p);
    kvshard_writer__out_raw(o, " \xE2\x80\x94 kvshard report</title>\n");
    kvshard_writer__out_raw(o, PAGE_STYLE);
    kvshard_writer__out_raw(o, "</head>\n<body>\n");
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* One argument of the command line, quoted for a POSIX shell when it holds
 * anything but plain characters. */
static void shell_word(kvshard__out *o, const char *arg)
{
    bool plain = *arg != '\0';
    for (const char *c = arg; *c; c++)
        plain &= strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,+@%",
                        *c) != NULL;
    if (plain) {
        kvshard_writer__out_xml(o, arg, strlen(arg));
        return;
    }
    kvshard_writer__out_raw(o, "&#39;");
    for (const char *c = arg; *c; c++) {
        if (*c == '\'')
            kvshard_writer__out_raw(o, "&#39;\\&#39;&#39;");
        else
            kvshard_writer__out_xml(o, c, 1);
    }
    kvshard_writer__out_raw(o, "&#39;");
}

/* What the page was made from: the input file, the model's file and the
 * command, when the caller gives them. */
static void write_origin(kvshard__out *o, const kvshard__plan_view *p,
                         const kvshard_report_options *about)
{
    kvshard_writer__out_raw(o, "<p class=\"sub origin\">");
    const char *sep = "";
    if (about && about->source) {
        kvshard_writer__out_raw(o, "input <code>");
        kvshard_writer__out_xml(o, about->source, strlen(about->source));
        kvshard_writer__out_raw(o, "</code>");
        sep = "; ";
    }
    if (p->source && p->source[0] &&
        (!about || !about->source || strcmp(about->source, p->source))) {
        kvshard_writer__out_printf(o, "%smodel <code>", sep);
        kvshard_writer__out_xml(o, p->source, strlen(p->source));
        kvshard_writer__out_raw(o, "</code>");
        sep = "; ";
    }
    if (p->model_type[0]) {
        kvshard_writer__out_printf(o, "%smodel_type <code>", sep);
        kvshard_writer__out_xml(o, p->model_type, strlen(p->model_type));
        kvshard_writer__out_raw(o, "</code>");
    }
    kvshard_writer__out_raw(o, "</p>\n");
    if (about && about->argc > 0 && about->argv) {
        kvshard_writer__out_raw(o, "<p class=\"sub origin\">made by <code>");
        /* The program by its base name: the path it ran from says nothing of the plan. */
        const char *prog = about->argv[0] ? about->argv[0] : "kvshard";
        shell_word(o, base_name(prog));
        for (int i = 1; i < about->argc && about->argv[i]; i++) {
            const char *arg = about->argv[i];
            kvshard_writer__out_raw(o, " ");
            /* The output file by its base name too: the page gets shared,
             * and the directory it was written to is the writer's own. */
            if (strncmp(arg, "--output=", 9) == 0) {
                kvshard_writer__out_raw(o, "--output=");
                shell_word(o, base_name(arg + 9));
                continue;
            }
            shell_word(o, arg);
            if ((strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) &&
                i + 1 < about->argc && about->argv[i + 1]) {
                kvshard_writer__out_raw(o, " ");
                shell_word(o, base_name(about->argv[++i]));
            }
        }
        kvshard_writer__out_raw(o, "</code></p>\n");
    }
}

static void write_summary(kvshard__out *o, const kvshard__plan_view *p,
                          const kvshard_report_options *about)
{
    const kvshard__model_info *m = p->model;
    const kvshard_options *opt = p->options;
    const kvshard__capacity *cap = p->capacity;
    kvshard_writer__out_raw(o, "<header>\n<h1>");
    model_name(o, p);
    kvshard_writer__out_raw(o, " \xE2\x80\x94 kvshard report</h1>\n");
    write_origin(o, p, about);
    if (cap->has_num_blocks) {
        kvshard_writer__out_raw(o, "<p class=\"lead\">");
        kvshard_writer__out_grouped(o, cap->num_blocks);
        kvshard_writer__out_printf(o, " blocks of %u tokens per rank = ", opt->block_size);
        kvshard_writer__out_grouped(o, cap->max_tokens);
        kvshard_writer__out_raw(o, " tokens");
        const kvshard_uniform *u = p->uniform;
        if (u->has_num_blocks && u->num_blocks)
            kvshard_writer__out_printf(o, ", %.2f\xC3\x97 the blocks of the unsplit plan",
                                (double)cap->num_blocks / (double)u->num_blocks);
        if (cap->has_concurrency) {
            kvshard_writer__out_raw(o, "; ");
            kvshard_writer__out_grouped(o, cap->concurrency);
            kvshard_writer__out_raw(o, " sequences of ");
            kvshard_writer__out_grouped(o, opt->context_length);
            kvshard_writer__out_raw(o, " tokens at once");
        }
        kvshard_writer__out_raw(o, ".</p>\n");
    }
    kvshard_writer__out_printf(o, "<p>%u layers: ", m->num_layers);
    kvshard_writer__out_kind_counts(o, m);
    kvshard_writer__out_printf(o, "; %s; %u draft layer%s",
                               kvshard_model__attention_label(m->attention), m->num_draft_layers,
                               m->num_draft_layers == 1 ? "" : "s");
    if (m->state.kind != KVSHARD_STATE_NONE) {
        kvshard_writer__out_printf(o, "; %s state", kvshard_state_kind_name(m->state.kind));
        if (p->state_dtype != KVSHARD_DTYPE_AUTO)
            kvshard_writer__out_printf(o, " in %s", kvshard_dtype_name(p->state_dtype));
    }
    kvshard_writer__out_raw(o, ".</p>\n");
    char pp[32] = "";
    if (p->pp > 1)
        snprintf(pp, sizeof pp, " \xC3\x97 pp %u", p->pp);
    kvshard_writer__out_printf(
        o,
        "<p>world_size %u = dp %u%s \xC3\x97 cp %u \xC3\x97 attention TP %u; "
        "layerwise split %s, size %u (in force: %u), %s rule; KV replication "
        "%u; %s engine profile, block_size %u tokens, KV cache in %s, max_seqs "
        "%u.</p>\n</header>\n",
        opt->world_size, opt->dp_size, pp, opt->cp_size, p->tp,
        opt->enable_layerwise_split ? "on" : "off", opt->layerwise_split_size, p->split,
        kvshard_ownership_name(opt->ownership), p->replication, p->profile->name, opt->block_size,
        kvshard_dtype_name(kvshard_memory__kv_cache_dtype(p->model, opt)), opt->max_seqs);
}

/* ---- layer map --------------------------------------------------------- */

static void write_map(kvshard__out *o, const kvshard__plan_view *p)
{
    /* The kinds as the kind table names them, KV kinds (with an owner) first. */
    bool fold = p->model->num_layers > KVSHARD_RUNS__FOLD_AFTER;
    kvshard_writer__out_raw(o, "<section id=\"map\">\n<h2>Layer map</h2>\n<p class=\"sub\">");
    kvshard_writer__out_raw(
        o, fold ? "The layers in runs: each row is a pattern of up to 40 layers drawn "
                  "once, the layers it covers at its left and the times it repeats "
                  "at its right. A cell of a layer with paged KV ("
                : "One cell per decoder layer, in rows of 40. A cell of a layer "
                  "with paged KV (");
    const char *sep = "";
    for (uint32_t i = 0; i < KVSHARD__KIND_COUNT; i++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(kvshard_kinds__legend_order[i]);
        if (row->paged_kv) {
            kvshard_writer__out_printf(o, "%s%c %s", sep, row->letter, row->map_legend);
            sep = ", ";
        }
    }
    kvshard_writer__out_raw(o, ") carries the number of the split rank that stores its KV and that "
                        "rank's colour, or * when every rank stores it. The other cells: ");
    sep = "";
    for (uint32_t i = 0; i < KVSHARD__KIND_COUNT; i++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(kvshard_kinds__legend_order[i]);
        if (!row->paged_kv) {
            kvshard_writer__out_printf(o, "%s%s %s", sep, row->mark[0] ? row->mark : "dashed",
                                row->map_legend);
            sep = ", ";
        }
    }
    kvshard_writer__out_raw(o,
                            ". Hover a cell for its index and owner.</p>\n<div class=\"fig\">\n");
    kvshard_svg__layer_map(o, p, true);
    kvshard_writer__out_raw(o, "\n</div>\n</section>\n");
}

/* ---- pipeline stages ---------------------------------------------------- */

/* One row per stage, with pipeline stages: its layers, ranks and memory. */
static void write_stages(kvshard__out *o, const kvshard__plan_view *p)
{
    if (p->pp == 1)
        return;
    const kvshard_options *opt = p->options;
    kvshard_writer__out_printf(
        o, "<section id=\"stages\">\n<h2>Pipeline stages</h2>\n<p>%u stages ", p->pp);
    if (opt->pp_partition_rule == KVSHARD_PP_RULE_EXPLICIT)
        kvshard_writer__out_raw(o, "as given");
    else
        kvshard_writer__out_printf(o, "by the %s rule",
                                   kvshard_pp_rule_name(opt->pp_partition_rule));
    /* The string the first engine that takes one reads from its
     * environment. */
    const kvshard__profile *const *q = kvshard_profiles__all;
    while (*q && !(*q)->dialect.partition_env)
        q++;
    kvshard_writer__out_printf(o, ": <code>%s=", *q ? (*q)->dialect.partition_env : "pp_partition");
    for (uint32_t s = 0; s < p->pp && !o->failed; s++)
        kvshard_writer__out_printf(o, s ? ",%u" : "%u", p->stages[s].count);
    kvshard_writer__out_printf(
        o,
        "</code>; global ranks in the %s layout. Every stage allocates the "
        "common block count, the fewest of any rank; the binding stage sets "
        "it.</p>\n<div class=\"tw\"><table>\n<tr><th>stage</th><th>layers</th><th>KV layers</th>"
        "<th>state layers</th><th>global ranks</th><th>bytes per token</th>"
        "<th>state per sequence</th><th>blocks</th><th></th></tr>\n",
        kvshard_rank_layout_name(opt->rank_layout));
    for (uint32_t s = 0; s < p->pp && !o->failed; s++) {
        kvshard_stage_info st = kvshard_queries__stage_info_of(p, s);
        kvshard_writer__out_printf(o,
                            "<tr%s><td class=\"n\">%u</td><td class=\"n\">%u\xE2\x80\x93%u"
                            "</td><td class=\"n\">%u",
                            st.binds ? " class=\"rec\"" : "", s, st.layer_first,
                            st.layer_first + st.layer_count - 1, st.num_kv_layers);
        if (st.num_draft_layers)
            kvshard_writer__out_printf(o, " + %u draft", st.num_draft_layers);
        kvshard_writer__out_printf(o, "</td><td class=\"n\">%u</td><td class=\"n\">%u",
                            st.num_state_layers, st.global_rank_first);
        if (p->tp > 1)
            kvshard_writer__out_printf(o, st.global_rank_stride == 1 ? "\xE2\x80\x93%u" : " + %u k",
                                st.global_rank_stride == 1 ? st.global_rank_first + p->tp - 1
                                                           : st.global_rank_stride);
        kvshard_writer__out_raw(o, "</td>");
        cell_u64(o, true, st.bytes_per_token);
        cell_u64(o, true, st.state_bytes_per_seq);
        cell_u64(o, st.has_num_blocks, st.num_blocks);
        kvshard_writer__out_raw(o, st.binds ? "<td>binds</td></tr>\n" : "<td></td></tr>\n");
    }
    kvshard_writer__out_raw(o, "</table>\n</div>\n</section>\n");
}

/* ---- capacity ---------------------------------------------------------- */

static void row_begin(kvshard__out *o, const char *label)
{
    kvshard_writer__out_raw(o, "<tr><th scope=\"row\">");
    kvshard_writer__out_raw(o, label);
    kvshard_writer__out_raw(o, "</th><td>");
}

static void row_end(kvshard__out *o)
{
    kvshard_writer__out_raw(o, "</td></tr>\n");
}

/* Without a context length, the sequences that run at once at a few
 * lengths, each counted by the profile as for --context_length. */
static void concurrency_rows(kvshard__out *o, const kvshard__plan_view *p)
{
    uint32_t lengths[4];
    size_t n = kvshard_report__context_lengths(lengths, p->model);
    for (size_t i = 0; i < n && p->has_memory && p->capacity->has_num_blocks; i++) {
        kvshard__capacity c;
        if (kvshard_plan__capacity_at(&c, p->plan, KVSHARD_ALL_RANKS, lengths[i]) != KVSHARD_OK ||
            !c.has_concurrency)
            continue;
        kvshard_writer__out_raw(o, "<tr><th scope=\"row\">at ");
        kvshard_writer__out_grouped(o, lengths[i]);
        kvshard_writer__out_raw(o, " tokens</th><td>");
        kvshard_writer__out_grouped(o, c.concurrency);
        kvshard_writer__out_raw(o, c.concurrency == 1 ? " sequence at once" : " sequences at once");
        if (c.has_balanced_max_seqs) {
            kvshard_writer__out_raw(o, "; balanced max_seqs ");
            kvshard_writer__out_grouped(o, c.balanced_max_seqs);
        }
        if (lengths[i] == p->model->max_position_embeddings)
            kvshard_writer__out_raw(o, " (the model's max_position_embeddings)");
        kvshard_writer__out_raw(o, "</td></tr>\n");
    }
}

static void write_capacity(kvshard__out *o, const kvshard__plan_view *p)
{
    const kvshard__capacity *cap = p->capacity;
    const kvshard_options *opt = p->options;
    const kvshard_uniform *u = p->uniform;
    kvshard__printer pr = kvshard_writer__out_html_printer(o);
    kvshard_profile__view pv = kvshard__profile_view(p);
    kvshard_writer__out_raw(o, "<section id=\"capacity\">\n<h2>Capacity</h2>\n");
    if (!p->has_memory) {
        kvshard_writer__out_raw(o, "<p>");
        kvshard_format__text(&pr, p->profile->voice.no_budget_hint);
        kvshard_writer__out_raw(o, ".</p>\n");
    }
    kvshard_writer__out_raw(o, "<table class=\"keep\">\n");
    if (p->has_memory)
        p->profile->voice.report_rows(&pr, &pv, false);
    if (p->device->used) {
        row_begin(o, "device");
        kvshard_text__device_line(o, p);
        row_end(o);
    }
    uint64_t max_block = 0;
    for (uint32_t r = 0; r < p->ranks_count; r++)
        if (p->ranks[r].bytes_per_block > max_block)
            max_block = p->ranks[r].bytes_per_block;
    row_begin(o, "bytes per block");
    if (pv.binding) {
        bytes(o, pv.binding->bytes_per_block);
        kvshard_writer__out_printf(o, " on binding stage %u", pv.binding_stage);
        if (pv.binding->bytes_per_block == max_block) {
            kvshard_writer__out_raw(o, ", the largest");
        } else {
            kvshard_writer__out_raw(o, " (the largest rank: ");
            bytes(o, max_block);
            kvshard_writer__out_raw(o, ")");
        }
        kvshard_writer__out_printf(o, ", %u tokens a block", opt->block_size);
    } else {
        bytes(o, max_block);
        kvshard_writer__out_printf(o, " on the largest rank, %u tokens a block", opt->block_size);
    }
    row_end(o);
    if (cap->has_num_blocks) {
        row_begin(o, "blocks per rank");
        kvshard_writer__out_grouped(o, cap->num_blocks);
        row_end(o);
        row_begin(o, "tokens per rank");
        kvshard_writer__out_grouped(o, cap->max_tokens);
        row_end(o);
    } else if (p->has_memory) {
        row_begin(o, "blocks per rank");
        kvshard_writer__out_raw(o, "none: the plan has no KV bytes per block");
        row_end(o);
    }
    row_begin(o, "unsplit plan");
    bytes(o, u->bytes_per_block);
    kvshard_writer__out_raw(o, " per block");
    if (u->has_num_blocks) {
        kvshard_writer__out_raw(o, ", ");
        kvshard_writer__out_grouped(o, u->num_blocks);
        kvshard_writer__out_raw(o, " blocks");
    }
    row_end(o);
    row_begin(o, "gain");
    if (cap->has_num_blocks && u->has_num_blocks) {
        if (u->num_blocks)
            kvshard_writer__out_printf(o, "%.2f\xC3\x97 the blocks of the unsplit plan",
                                (double)cap->num_blocks / (double)u->num_blocks);
        else
            kvshard_writer__out_raw(o, "the unsplit plan fits no block");
    } else if (max_block) {
        kvshard_writer__out_printf(o, "the unsplit plan takes %.2f\xC3\x97 the bytes per block",
                            (double)u->bytes_per_block / (double)max_block);
    } else {
        kvshard_writer__out_raw(o, "none: no KV bytes per block");
    }
    row_end(o);
    if (opt->context_length) {
        row_begin(o, "context length");
        kvshard_writer__out_grouped(o, opt->context_length);
        kvshard_writer__out_raw(o, " tokens");
        row_end(o);
        row_begin(o, "sequences at once");
        if (cap->has_concurrency) {
            kvshard_writer__out_grouped(o, cap->concurrency);
            /* A model without state reserves nothing for the sequences that
             * cannot run. */
            if (cap->concurrency < opt->max_seqs && p->ranks[0].state_bytes_per_seq &&
                cap->reserved) {
                kvshard_writer__out_printf(o, ": max_seqs %u reserves %s for ", opt->max_seqs,
                                           kvshard_kinds__seq_noun(kvshard__view_seq_caches(p)));
                kvshard_writer__out_grouped(o, opt->max_seqs - cap->concurrency);
                kvshard_writer__out_raw(o, " that cannot run");
            } else if (cap->concurrency < opt->max_seqs) {
                kvshard_writer__out_printf(o, ": below max_seqs %u", opt->max_seqs);
            } else {
                kvshard_writer__out_printf(o, ": max_seqs %u is reached", opt->max_seqs);
            }
        } else {
            kvshard_writer__out_raw(o, p->has_memory ? "none: no KV bytes per block"
                                              : "give memory_per_rank for this figure");
        }
        row_end(o);
        if (cap->has_balanced_max_seqs) {
            row_begin(o, "balanced max_seqs");
            kvshard_writer__out_grouped(o, cap->balanced_max_seqs);
            kvshard_writer__out_printf(o, " (%s and blocks run out together)",
                                       kvshard_kinds__seq_noun(kvshard__view_seq_caches(p)));
            row_end(o);
        }
    }
    if (!opt->context_length)
        concurrency_rows(o, p);
    if (p->has_memory)
        p->profile->voice.report_rows(&pr, &pv, true);
    kvshard_writer__out_raw(o, "</table>\n</section>\n");
}

/* ---- comparison -------------------------------------------------------- */

#define CMP_BAR 160u

static uint64_t row_metric(const kvshard_comparison *c, const kvshard_comparison_row *r)
{
    if (c->by_balanced)
        return r->has_balanced_max_seqs ? r->balanced_max_seqs : 0;
    if (c->has_memory)
        return r->has_num_blocks ? r->num_blocks : 0;
    return r->max_bytes_per_block;
}

/* A warning name that may wrap after its underscores. */
static void warning_name(kvshard__out *o, kvshard_warning_code code)
{
    const char *name = kvshard_warning_name(code);
    for (const char *u; (u = strchr(name, '_')) != NULL; name = u + 1) {
        kvshard_writer__out_put(o, name, (size_t)(u - name) + 1);
        kvshard_writer__out_raw(o, "<wbr/>");
    }
    kvshard_writer__out_raw(o, name);
}


/* Whether the table leaves row r out: a split size above 1, under a
 * profile whose engine has no layerwise split (whether the row is refused
 * or planned as kvshard would). The recommended row is always shown. */
static bool row_left_out(const kvshard_comparison *c, const kvshard_comparison_row *r)
{
    return c->profile->voice.no_split && r->layerwise_split_size > 1 &&
           r != &c->rows[c->recommended];
}

/* Whether row r's warnings are among the table's notes. */
static bool row_noted(const kvshard_comparison *c, const kvshard_comparison_row *r)
{
    return !r->error && !row_left_out(c, r);
}

/* The number of warning `code` in the comparison's notes: its place among
 * the codes any row carries. */
static unsigned note_number(const kvshard_comparison *c, unsigned code)
{
    uint32_t used = 0;
    for (size_t i = 0; i < c->count; i++)
        used |= row_noted(c, &c->rows[i]) ? c->rows[i].warnings : 0u;
    unsigned n = 0;
    for (unsigned k = 0; k <= code; k++)
        n += (used >> k) & 1u;
    return n;
}

/* The flags that run the recommended row: under an engine's profile the
 * engine's own, through its recommend hook; under kvshard's, kvshard's. */
static void write_recommended(kvshard__out *o, const kvshard_comparison *c,
                              const kvshard__plan_view *p)
{
    char flags[1024];
    const kvshard__profile *prof = c->profile;
    if (prof == kvshard_profiles__own() || !prof->dialect.recommend ||
        !prof->fitting.utilization) {
        kvshard_compare__comparison_flags(flags, sizeof flags, c);
    } else {
        const kvshard_options *opt = &c->options;
        const kvshard_comparison_row *rec = &c->rows[c->recommended];
        uint32_t counts[KVSHARD_MAX_PP_PARTITION];
        bool cut = rec->pp_size == p->pp && p->pp <= KVSHARD_MAX_PP_PARTITION;
        for (uint32_t s = 0; cut && s < p->pp; s++)
            counts[s] = p->stages[s].count;
        char u[24];
        kvshard_format__shortest_text(u, sizeof u, prof->fitting.utilization(p->inputs, p->state));
        bool seqs = c->has_memory && opt->context_length && rec->has_balanced_max_seqs;
        uint32_t dp = opt->world_size / (rec->pp_size * opt->cp_size * rec->attn_tp_size);
        kvshard_profile__layout l = {
            .world_size = opt->world_size,
            .tp = rec->attn_tp_size,
            .pp = rec->pp_size,
            .dp = dp ? dp : 1,
            .split = rec->layerwise_split_size,
            .ownership = kvshard_ownership_name(rec->ownership),
            /* The plan's cut when the row has its stages; an engine's flags
             * name no cut (only its environment does). */
            .pp_partition = cut ? counts : NULL,
            .expert_parallel = opt->expert_parallel,
            .utilization = u,
            .kv_cache_dtype = kvshard_memory__kv_cache_dtype(p->model, opt),
            .drafts = kvshard__counted_drafts(p->model, opt, prof) > 0,
            .context_length = seqs ? opt->context_length : 0,
            .seqs_per_replica = seqs ? rec->balanced_max_seqs : 0,
        };
        if (prof->dialect.recommend(flags, sizeof flags, &l, false) < 0) {
            kvshard_writer__out_printf(o, "<p>Recommended: the %s profile writes no flags for "
                                          "this layout.</p>\n", prof->name);
            return;
        }
    }
    kvshard_writer__out_raw(o, "<p>Recommended: <code>");
    kvshard_writer__out_xml(o, flags, strlen(flags));
    kvshard_writer__out_raw(o, "</code></p>\n");
}

static void write_comparison(kvshard__out *o, const kvshard_comparison *c,
                             const kvshard__plan_view *p)
{
    const kvshard_options *opt = &c->options;
    bool context = c->has_memory && opt->context_length;
    const char *metric = c->by_balanced  ? "balanced max_seqs"
                         : c->has_memory ? "blocks per rank"
                                         : "bytes per block (fewer is better)";
    bool stages = c->sweep_pp || opt->pp_size > 1;
    if (c->sweep_pp)
        kvshard_writer__out_raw(o, "<section id=\"compare\">\n<h2>Pipeline and split sizes</h2>\n"
                            "<p>Every pipeline size P dividing the world over data and context "
                            "parallelism, and for each every split size dividing its attention "
                            "TP size T, under each ownership rule");
    else
        kvshard_writer__out_printf(o,
                            "<section id=\"compare\">\n<h2>Split sizes</h2>\n<p>Every split "
                            "size dividing the attention TP size %u under each ownership rule",
                            c->tp);
    /* Stages with budgets of their own, cut as the plan's: each stage's,
     * never the smallest beside another stage's blocks. */
    bool stage_budgets = c->has_memory && !c->sweep_pp && p->device->used && p->pp > 1;
    if (stage_budgets) {
        kvshard_writer__out_raw(o, ", each stage's budget from the device:");
        for (uint32_t s = 0; s < p->pp; s++) {
            kvshard_writer__out_printf(o, "%s stage %u ", s ? "," : "", s);
            bytes(o, p->stage_budgets[s]);
        }
        kvshard_writer__out_printf(o, "; max_seqs %u", opt->max_seqs);
        if (context) {
            kvshard_writer__out_raw(o, ", at ");
            kvshard_writer__out_grouped(o, opt->context_length);
            kvshard_writer__out_raw(o, " tokens");
        }
    } else if (c->has_memory) {
        kvshard_writer__out_printf(o, ", %s ", c->profile->voice.budget_label);
        bytes(o, c->memory);
        kvshard_writer__out_printf(o, ", max_seqs %u", opt->max_seqs);
        if (context) {
            kvshard_writer__out_raw(o, ", at ");
            kvshard_writer__out_grouped(o, opt->context_length);
            kvshard_writer__out_raw(o, " tokens");
        }
    } else {
        kvshard_writer__out_raw(o, "; no memory_per_rank, so the gain compares bytes per block");
    }
    kvshard_writer__out_printf(o, ". The bars show %s; the recommended row is marked.</p>\n",
                               metric);
    if (c->count == 0) {
        kvshard_writer__out_raw(o, "<p>No split size to compare.</p>\n</section>\n");
        return;
    }
    uint64_t max = 0;
    for (size_t i = 0; i < c->count; i++)
        if (row_noted(c, &c->rows[i]) && row_metric(c, &c->rows[i]) > max)
            max = row_metric(c, &c->rows[i]);
    unsigned columns = context ? 10u : 8u; /* the cells after S and rule */
    kvshard_writer__out_raw(o, stages
                                   ? "<div class=\"tw\"><table>\n<tr><th></th><th>P</th><th>T</th>"
                                   : "<div class=\"tw\"><table>\n<tr><th></th>");
    kvshard_writer__out_raw(o, "<th>S</th><th>rule</th><th>KV layers owned</th>"
                        "<th>max KV/token</th><th>max bytes/block</th><th>blocks</th>"
                        "<th>tokens</th>");
    if (context)
        kvshard_writer__out_raw(o, "<th>running at once</th><th>balanced max_seqs</th>");
    kvshard_writer__out_printf(o, "<th>gain</th><th>%s</th><th>notes</th></tr>\n", metric);
    size_t left_out = 0;
    for (size_t i = 0; i < c->count && !o->failed; i++) {
        const kvshard_comparison_row *r = &c->rows[i];
        bool rec = i == c->recommended;
        if (row_left_out(c, r)) {
            left_out++;
            continue;
        }
        kvshard_writer__out_printf(o, "<tr%s><td>%s</td>", rec ? " class=\"rec\"" : "",
                            rec ? "\xE2\x96\xB6" : "");
        if (stages)
            kvshard_writer__out_printf(o, "<td class=\"n\">%u</td><td class=\"n\">%u</td>",
                                       r->pp_size, r->attn_tp_size);
        kvshard_writer__out_printf(o, "<td class=\"n\">%u</td><td>%s</td>", r->layerwise_split_size,
                            kvshard_ownership_name(r->ownership));
        if (r->error) {
            kvshard_writer__out_printf(o, "<td colspan=\"%u\" class=\"err\">error: ", columns);
            kvshard_writer__out_xml(o, r->error_message, strlen(r->error_message));
            kvshard_writer__out_raw(o, "</td></tr>\n");
            continue;
        }
        kvshard_writer__out_printf(o, "<td class=\"n\">%u-%u</td>", r->min_owned_layers,
                            r->max_owned_layers);
        cell_u64(o, true, r->max_kv_bytes_per_token);
        cell_u64(o, true, r->max_bytes_per_block);
        cell_u64(o, r->has_num_blocks, r->num_blocks);
        cell_u64(o, r->has_num_blocks, r->max_tokens);
        if (context) {
            cell_u64(o, r->has_concurrency, r->concurrency);
            cell_u64(o, r->has_balanced_max_seqs, r->balanced_max_seqs);
        }
        if (isinf(r->gain))
            kvshard_writer__out_raw(o, "<td class=\"n\">new</td>");
        else
            kvshard_writer__out_printf(o, "<td class=\"n\">%.2f\xC3\x97</td>", r->gain);
        uint64_t v = row_metric(c, r);
        kvshard_writer__out_printf(
            o,
            "<td class=\"b\"><svg xmlns=\"http://www.w3.org/2000/svg\" class=\"bar\" "
            "width=\"%u\" height=\"14\" viewBox=\"0 0 %u 14\" role=\"img\">"
            "<title>%s: ",
            CMP_BAR, CMP_BAR, metric);
        kvshard_writer__out_grouped(o, v);
        kvshard_writer__out_printf(o,
                            "</title><rect class=\"%s\" width=\"%.1f\" height=\"14\"/></svg>"
                            "</td><td class=\"notes\">",
                            rec ? "rec" : "cb", bar_width(v, max, CMP_BAR));
        /* Short notes that never wrap: numbers for the warnings, named
         * under the table and on hover. */
        const char *sep = "";
        if (rec) {
            kvshard_writer__out_raw(o, "<abbr title=\"recommended\">rec</abbr>");
            sep = " ";
        }
        for (unsigned code = 0; code < 32; code++) {
            if (r->warnings & (1u << code)) {
                kvshard_writer__out_printf(o, "%s<abbr title=\"%s\">%u</abbr>", sep,
                                    kvshard_warning_name((kvshard_warning_code)code),
                                    note_number(c, code));
                sep = " ";
            }
        }
        kvshard_writer__out_raw(o, "</td></tr>\n");
    }
    kvshard_writer__out_raw(o, "</table>\n</div>\n");
    if (left_out) {
        kvshard_writer__out_printf(o, "<p class=\"sub\">%zu rows of split sizes above 1 are left "
                                      "out (", left_out);
        kvshard_writer__out_xml(o, c->profile->voice.no_split, strlen(c->profile->voice.no_split));
        kvshard_writer__out_raw(o, ").</p>\n");
    }
    uint32_t used = 0;
    for (size_t i = 0; i < c->count; i++)
        used |= row_noted(c, &c->rows[i]) ? c->rows[i].warnings : 0u;
    if (used) {
        kvshard_writer__out_raw(o, "<p class=\"sub\">Notes: ");
        const char *sep = "";
        for (unsigned code = 0; code < 32; code++) {
            if (used & (1u << code)) {
                kvshard_writer__out_printf(o, "%s%u ", sep, note_number(c, code));
                warning_name(o, (kvshard_warning_code)code);
                sep = "; ";
            }
        }
        kvshard_writer__out_raw(o, " (the plan's own warnings are explained below).</p>\n");
    }
    write_recommended(o, c, p);
    kvshard_writer__out_raw(o, "</section>\n");
}

/* ---- warnings and digest ----------------------------------------------- */

static void write_warnings(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard_writer__out_raw(o, "<section id=\"warnings\">\n<h2>Warnings</h2>\n");
    if (!p->warning_count) {
        kvshard_writer__out_raw(o, "<p>None.</p>\n");
    } else {
        kvshard_writer__out_raw(o, "<ul>\n");
        for (size_t i = 0; i < p->warning_count; i++) {
            kvshard_writer__out_printf(
                o, "<li><strong>%s</strong>: ", kvshard_warning_name(p->warnings[i].code));
            kvshard_writer__out_xml(o, p->warnings[i].message, strlen(p->warnings[i].message));
            kvshard_writer__out_raw(o, "</li>\n");
        }
        kvshard_writer__out_raw(o, "</ul>\n");
    }
    kvshard_writer__out_raw(o, "</section>\n");
}

static void write_footer(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard_writer__out_raw(o, "<footer>\n<h2>Digest</h2>\n<p>plan <code id=\"digest\">");
    kvshard_writer__out_hex64(o, p->digest);
    kvshard_writer__out_raw(o, "</code>, layout <code id=\"layout-digest\">");
    kvshard_writer__out_hex64(o, p->layout_digest);
    kvshard_writer__out_printf(o,
                        "</code>. Ranks that size their blocks from their own measured memory "
                        "compare the layout digest. Written by kvshard %s.</p>\n</footer>\n",
                        kvshard_version());
}

int kvshard_report_write_html(const kvshard_plan *plan, const kvshard_comparison *comparison,
                              const kvshard_report_options *options, kvshard_write_fn write,
                              void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, plan, write, user))
        return KVSHARD_EINVAL;
    if (options && options->size != sizeof *options)
        return KVSHARD_EINVAL;
    const kvshard_report_options *about = options;
    kvshard__plan_view view = kvshard_plan__view_of(plan);
    const kvshard__plan_view *p = &view;
    write_head(&o, p);
    write_summary(&o, p, about);
    write_stages(&o, p);
    write_map(&o, p);
    kvshard_report__write_memory(&o, p);
    write_capacity(&o, p);
    kvshard_report_comm__write(&o, plan);
    if (comparison)
        write_comparison(&o, comparison, p);
    write_warnings(&o, p);
    write_footer(&o, p);
    kvshard_writer__out_raw(&o, "</body>\n</html>\n");
    return kvshard_writer__out_finish(&o);
}
