/* The report's price of the split: what the plan's split size gains in
 * capacity against what it adds to a decode step and to a prompt under each
 * mechanism, in a table and in bars drawn to scale, one axis per quantity.
 * The mechanism decides the price far more than the split size does, so a
 * reader sees all four, the ones the plan runs marked. Each is the plan's
 * own estimate with that mechanism in force: the figures are the ones the
 * plan's text and JSON would give with --comm_decode (and --comm_prefill). */
#include "output/report_comm.h"

#include "explore/comm.h"
#include "output/comm_out.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MECHANISMS 4

#define CHART_WIDTH 820u
#define BAR_X 200u
#define BAR_W KVSHARD_REPORT_COMM__BAR_W
#define BAR_H 18u
#define ROW_H 34u
#define TITLE_H 24u
#define AXIS_H 34u

/* The plan priced under one mechanism: as the decode mechanism, and as the
 * prefill one when it prefills (else the prefill in force stays). */
typedef struct priced {
    kvshard__comm_mechanism mechanism;
    bool prefills;
    bool ok;
    char refusal[KVSHARD_ERROR_MESSAGE_MAX + 16]; /* why it is not priced, when not ok */
    kvshard__comm c;
} priced;

/* The quantities the chart draws, each on its own axis. */
typedef enum quantity { SEQUENCES, DECODE_COMM, THROUGHPUT, PROMPT_COMM } quantity;

/* ---- the figures ----------------------------------------------------------- */

/* The plan's estimate with its comm inputs naming `m`: the estimate's own
 * entry point on a copy of the plan, so no figure is computed twice. */
static void price_under(priced *out, const kvshard_plan *plan, kvshard__comm_mechanism m)
{
    memset(out, 0, sizeof *out);
    out->mechanism = m;
    out->prefills = m == KVSHARD__COMM_HISTORY_ROWS || m == KVSHARD__COMM_FULL_LAYER;
    if (m == KVSHARD__COMM_SELECTED_KV && !plan->model.has_indexer) {
        /* No rows to select: refused by name, never drawn as 0. */
        snprintf(out->refusal, sizeof out->refusal, "%s",
                 "not priced: selected_kv sends the rows a DSA indexer selects, and this "
                 "model has no indexer (comm_mechanism_model)");
        return;
    }
    kvshard_error err;
    memset(&err, 0, sizeof err);
    out->ok = kvshard_comm__of_under(&out->c, plan, m,
                                     out->prefills ? m : plan->comm.prefill, &err) == KVSHARD_OK;
    if (!out->ok)
        snprintf(out->refusal, sizeof out->refusal, "not priced: %s", err.message);
}

/* Capacity at the plan's split and at S = 1 (the estimate's unsplit
 * reference): sequences at once with a context length, else the blocks a
 * rank allocates; false without the reference's capacity. */
static bool capacity_of(uint64_t *split, uint64_t *unsplit, bool *sequences,
                        const kvshard_plan *plan, const kvshard__comm *c)
{
    if (!c->has_unsplit_capacity)
        return false;
    *sequences = plan->cap.has_concurrency && c->unsplit_has_concurrency;
    if (*sequences) {
        *split = plan->cap.concurrency;
        *unsplit = c->unsplit_concurrency;
        return true;
    }
    *split = plan->cap.num_blocks;
    *unsplit = c->unsplit_blocks;
    return plan->cap.has_num_blocks;
}

static bool has_figure(const priced *r, quantity q)
{
    switch (q) {
    case DECODE_COMM: return r->ok && r->c.decode.has_time;
    case THROUGHPUT: return r->ok && r->c.has_step;
    case PROMPT_COMM: return r->ok && r->prefills && r->c.prefill.has_time;
    default: return false;
    }
}

static double figure(const priced *r, quantity q)
{
    return q == DECODE_COMM  ? r->c.decode.comm_us
           : q == THROUGHPUT ? r->c.throughput
                             : r->c.prefill.comm_us;
}

/* ---- words ----------------------------------------------------------------- */

/* A time in ms below a second, else in s: "0.55 ms", "1.35 s". */
static void duration(kvshard__out *o, double us)
{
    if (us < 1e6)
        kvshard_writer__out_printf(o, "%.2f ms", us / 1e3);
    else
        kvshard_writer__out_printf(o, "%.2f s", us / 1e6);
}

/* Tokens per second to a tenth, grouped: "2,161.8". */
static void tokens_per_s(kvshard__out *o, double v)
{
    uint64_t tenths = (uint64_t)llround(v * 10.0);
    kvshard_writer__out_grouped(o, tenths / 10);
    kvshard_writer__out_printf(o, ".%u", (unsigned)(tenths % 10));
}

/* A quantity's figure as the chart and the table write it. */
static void value(kvshard__out *o, quantity q, double v)
{
    if (q == THROUGHPUT) {
        tokens_per_s(o, v);
        kvshard_writer__out_raw(o, " tokens/s");
    } else if (q == SEQUENCES) {
        kvshard_writer__out_grouped(o, (uint64_t)v);
    } else {
        duration(o, v);
    }
}

/* Which of the plan's mechanisms `m` is: "decode", "prefill", both, with
 * whether the profile chose it; "" for neither. */
static const char *role(const kvshard__comm *in_force, const kvshard_plan *plan,
                        kvshard__comm_mechanism m, bool *profiles)
{
    bool decode = in_force->decode_mechanism == m, prefill = in_force->prefill_mechanism == m;
    *profiles = (decode && !plan->comm.decode) || (prefill && !plan->comm.prefill);
    return decode && prefill ? "decode and prefill" : decode ? "decode" : prefill ? "prefill" : "";
}

static void cell_count(kvshard__out *o, uint64_t v)
{
    kvshard_writer__out_raw(o, "<td class=\"n\">");
    kvshard_writer__out_grouped(o, v);
    kvshard_writer__out_raw(o, "</td>");
}

static void cell_bytes(kvshard__out *o, bool has, uint64_t v)
{
    kvshard_writer__out_raw(o, "<td class=\"n\">");
    if (has)
        kvshard_comm_out__link_bytes(o, v);
    else
        kvshard_writer__out_raw(o, "-");
    kvshard_writer__out_raw(o, "</td>");
}

static void cell_time(kvshard__out *o, bool has, double us)
{
    kvshard_writer__out_raw(o, "<td class=\"n\">");
    if (has)
        duration(o, us);
    else
        kvshard_writer__out_raw(o, "-");
    kvshard_writer__out_raw(o, "</td>");
}

/* ---- the table ------------------------------------------------------------- */

static void table(kvshard__out *o, const priced *rows, const kvshard__comm *in_force,
                  const kvshard_plan *plan)
{
    kvshard_writer__out_raw(
        o, "<div class=\"tw\"><table>\n<tr><th>mechanism</th><th>in this plan</th>"
           "<th>decode collectives</th><th>busiest link a step</th><th>comm a step</th>"
           "<th>step</th><th>tokens/s</th><th>vs unsplit</th><th>prompt collectives</th>"
           "<th>busiest link a prompt</th><th>comm a prompt</th></tr>\n");
    for (int i = 0; i < MECHANISMS && !o->failed; i++) {
        const priced *r = &rows[i];
        const kvshard__comm *c = &r->c;
        bool profiles;
        const char *used = role(in_force, plan, r->mechanism, &profiles);
        kvshard_writer__out_printf(o, "<tr%s><td><code>%s</code>", *used ? " class=\"rec\"" : "",
                                   kvshard_options__comm_mechanism_name(r->mechanism));
        if (r->mechanism == KVSHARD__COMM_OWNER_ATTENTION)
            kvshard_writer__out_printf(o, " (output %s)",
                                       in_force->owner_scatter ? "scatter" : "broadcast");
        kvshard_writer__out_printf(o, "</td><td>%s%s</td>", used,
                                   *used && profiles ? " (the profile's)" : "");
        if (!r->ok) {
            kvshard_writer__out_raw(o, "<td colspan=\"9\" class=\"err\">");
            kvshard_writer__out_xml(o, r->refusal, strlen(r->refusal));
            kvshard_writer__out_raw(o, "</td></tr>\n");
            continue;
        }
        cell_count(o, c->decode.collectives);
        cell_bytes(o, c->decode.has_bytes, c->decode.link_bytes);
        cell_time(o, c->decode.has_time, c->decode.comm_us);
        cell_time(o, c->has_step, c->step_us);
        kvshard_writer__out_raw(o, "<td class=\"n\">");
        if (c->has_step)
            tokens_per_s(o, c->throughput);
        else
            kvshard_writer__out_raw(o, "-");
        kvshard_writer__out_raw(o, "</td><td class=\"n\">");
        if (c->has_gain)
            kvshard_writer__out_printf(o, "%.2f\xC3\x97", c->throughput_gain);
        else
            kvshard_writer__out_raw(o, "-");
        kvshard_writer__out_raw(o, "</td>");
        if (!r->prefills) {
            kvshard_writer__out_raw(o, "<td colspan=\"3\">decode only</td></tr>\n");
            continue;
        }
        cell_count(o, c->prefill.collectives);
        cell_bytes(o, c->prefill.has_bytes, c->prefill.link_bytes);
        cell_time(o, c->prefill.has_time, c->prefill.comm_us);
        kvshard_writer__out_raw(o, "</tr>\n");
    }
    kvshard_writer__out_raw(o, "</table></div>\n");
}

/* ---- the chart ------------------------------------------------------------- */

/* One bar of a panel: its label, figure and id, and whether the plan runs it. */
typedef struct bar {
    const char *label;
    const char *note; /* after the figure: "1.68x", "" */
    char id[48];
    double v;
    bool marked;
    bool reference; /* the unsplit plan */
} bar;

static const char *const TITLES[] = {
    [SEQUENCES] = "Capacity",
    [DECODE_COMM] = "Added to a decode step: communication",
    [THROUGHPUT] = "Decode throughput, a replica",
    [PROMPT_COMM] = "Added to a prompt: communication",
};

static const char *const IDS[] = {[SEQUENCES] = "seqs",
                                  [DECODE_COMM] = "decode",
                                  [THROUGHPUT] = "tput",
                                  [PROMPT_COMM] = "prompt"};

/* A panel at `top`: its title, a bar per figure on one axis whose end is
 * the largest figure, and the scale in words; returns its height. */
static uint32_t panel(kvshard__out *o, quantity q, const char *title, const bar *bars, size_t n,
                      uint32_t top)
{
    double max = 0.0;
    for (size_t i = 0; i < n; i++)
        max = bars[i].v > max ? bars[i].v : max;
    kvshard_writer__out_printf(o,
                               "<g class=\"panel\" id=\"comm-%s\"><text class=\"hd\" x=\"8\" "
                               "y=\"%u\">",
                               IDS[q], top + 16);
    kvshard_writer__out_xml(o, title, strlen(title));
    /* The scale on the title's line, right-aligned over the axis's end. */
    kvshard_writer__out_printf(o, "</text><text class=\"sm end\" x=\"%u\" y=\"%u\">scale: %u px = ",
                               BAR_X + BAR_W, top + 16, BAR_W);
    value(o, q, max);
    kvshard_writer__out_raw(o, "</text>\n");
    uint32_t y = top + TITLE_H;
    for (size_t i = 0; i < n && !o->failed; i++, y += ROW_H) {
        const bar *b = &bars[i];
        double w = max > 0.0 ? b->v / max * BAR_W : 0.0;
        kvshard_writer__out_printf(o,
                                   "<text x=\"8\" y=\"%u\">%s</text><text class=\"sm\" x=\"8\" "
                                   "y=\"%u\">",
                                   y + 12, b->label, y + 27);
        value(o, q, b->v);
        kvshard_writer__out_printf(o, "%s</text>", b->note);
        kvshard_writer__out_printf(o,
                                   "<rect id=\"comm-%s-%s\" class=\"%s\" x=\"%u\" y=\"%u\" "
                                   "width=\"%.2f\" height=\"%u\"><title>",
                                   IDS[q], b->id,
                                   b->reference ? "ref"
                                   : b->marked  ? "mk"
                                                : "cb",
                                   BAR_X, y + 4, w, BAR_H);
        kvshard_writer__out_printf(o, "%s: ", b->label);
        value(o, q, b->v);
        kvshard_writer__out_raw(o, "</title></rect>\n");
    }
    /* The axis: 0 and its end, the largest figure, which the scale names. */
    uint32_t axis = y + 2;
    kvshard_writer__out_printf(o,
                               "<line class=\"axis\" x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\"/>"
                               "<line class=\"axis\" x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\"/>"
                               "<line class=\"axis\" x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\"/>"
                               "<text class=\"tk\" x=\"%u\" y=\"%u\">0</text>"
                               "<text class=\"tk end\" x=\"%u\" y=\"%u\">",
                               BAR_X, axis, BAR_X + BAR_W, axis, BAR_X, axis, BAR_X, axis + 5,
                               BAR_X + BAR_W, axis, BAR_X + BAR_W, axis + 5, BAR_X, axis + 17,
                               BAR_X + BAR_W, axis + 17);
    value(o, q, max);
    kvshard_writer__out_raw(o, "</text></g>\n");
    return TITLE_H + (uint32_t)n * ROW_H + AXIS_H;
}

/* The bars of quantity q: the unsplit plan first for throughput, then
 * each mechanism that has the figure; how many. */
static size_t bars_of(bar *out, quantity q, const priced *rows, const kvshard__comm *in_force)
{
    size_t n = 0;
    if (q == THROUGHPUT && in_force->has_unsplit) {
        out[n] = (bar){"S = 1 (unsplit)", "", "unsplit", in_force->unsplit_throughput, false, true};
        n++;
    }
    for (int i = 0; i < MECHANISMS; i++) {
        const priced *r = &rows[i];
        if (!has_figure(r, q))
            continue;
        bar *b = &out[n++];
        memset(b, 0, sizeof *b);
        b->label = kvshard_options__comm_mechanism_name(r->mechanism);
        b->note = "";
        snprintf(b->id, sizeof b->id, "%s", b->label);
        b->v = figure(r, q);
        kvshard__comm_mechanism used =
            q == PROMPT_COMM ? in_force->prefill_mechanism : in_force->decode_mechanism;
        b->marked = used == r->mechanism;
    }
    return n;
}

static void chart(kvshard__out *o, const priced *rows, const kvshard__comm *in_force,
                  bool has_capacity, uint64_t split, uint64_t unsplit, bool sequences)
{
    bar bars[4][MECHANISMS + 1];
    size_t counts[4] = {0, 0, 0, 0};
    char gain[32] = "", split_label[32];
    if (has_capacity) {
        if (unsplit)
            snprintf(gain, sizeof gain, " (%.2f\xC3\x97)", (double)split / (double)unsplit);
        snprintf(split_label, sizeof split_label, "S = %u", in_force->split);
        bars[SEQUENCES][0] = (bar){"S = 1 (unsplit)", "", "unsplit", (double)unsplit, false, true};
        bars[SEQUENCES][1] = (bar){split_label, gain, "split", (double)split, true, false};
        counts[SEQUENCES] = 2;
    }
    for (int q = DECODE_COMM; q <= PROMPT_COMM; q++)
        counts[q] = bars_of(bars[q], (quantity)q, rows, in_force);
    uint32_t height = 8;
    for (int q = 0; q < 4; q++)
        if (counts[q])
            height += TITLE_H + (uint32_t)counts[q] * ROW_H + AXIS_H;
    if (height == 8)
        return;
    kvshard_writer__out_printf(o,
                               "<div class=\"fig\"><svg xmlns=\"http://www.w3.org/2000/svg\" "
                               "class=\"kvcomm\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
                               "role=\"img\">\n<title>The price of the split (estimate): "
                               "capacity against the time each mechanism adds, to scale</title>\n",
                               CHART_WIDTH, height, CHART_WIDTH, height);
    kvshard_writer__out_raw(o, "<style>\n"
                               ".kvcomm text{font-family:sans-serif;font-size:12px;fill:#000}\n"
                               ".kvcomm .hd{font-weight:bold}\n"
                               ".kvcomm .sm{font-size:11px;fill:#404040}\n"
                               ".kvcomm .tk{font-size:11px;fill:#404040;text-anchor:middle}\n"
                               ".kvcomm .end{text-anchor:end}\n"
                               ".kvcomm .axis{stroke:#404040;stroke-width:1}\n"
                               ".kvcomm .cb{fill:#4477aa}.kvcomm .mk{fill:#e69f00}"
                               ".kvcomm .ref{fill:#9e9e9e}\n"
                               "</style>\n");
    uint32_t top = 8;
    char title[160];
    for (int q = 0; q < 4 && !o->failed; q++) {
        if (!counts[q])
            continue;
        const char *t = TITLES[q];
        if (q == SEQUENCES) {
            snprintf(title, sizeof title, "Capacity: %s",
                     sequences ? "sequences held at once" : "blocks a rank allocates");
            t = title;
        } else if (q == PROMPT_COMM) {
            char length[32];
            kvshard_format__grouped_text(length, sizeof length, in_force->prompt_length);
            snprintf(title, sizeof title, "Added to a %s-token prompt: communication", length);
            t = title;
        }
        top += panel(o, (quantity)q, t, bars[q], counts[q], top);
    }
    kvshard_writer__out_raw(o, "</svg></div>\n");
}

/* ---- the section ----------------------------------------------------------- */

/* The inputs in force and where their figures come from. */
static void sources(kvshard__out *o, const kvshard__comm *c, const kvshard_plan *plan)
{
    const kvshard__comm_inputs *in = &plan->comm;
    const kvshard_options__accelerator_preset *acc =
        kvshard_options__accelerator_preset_of(in->accelerator);
    const kvshard_options__link_preset *link =
        kvshard_options__link_preset_of(in->link ? in->link : acc->link);
    if (c->has_link) {
        kvshard_writer__out_printf(o, " Link <code>%s</code>: ", c->link_name);
        kvshard_comm_out__link_bytes(o, c->link_bandwidth);
        char alpha[48];
        kvshard_comm_out__latency_text(alpha, sizeof alpha, c->link_latency_us);
        kvshard_writer__out_printf(o, "/s a direction, \xce\xb1 %s \xc2\xb5s (", alpha);
        const char *basis = in->link_bandwidth || in->has_link_latency ? "given" : link->basis;
        kvshard_writer__out_xml(o, basis, strlen(basis));
        kvshard_writer__out_raw(o, ").");
    } else {
        kvshard_writer__out_raw(o, " No link: give <code>--comm_link</code> or "
                                   "<code>--comm_accelerator</code> for times.");
    }
    if (c->has_accelerator && c->hbm_bandwidth) {
        kvshard_writer__out_printf(o, " Accelerator <code>%s</code>: ", c->accelerator_name);
        kvshard_comm_out__link_bytes(o, c->hbm_bandwidth);
        kvshard_writer__out_raw(o, "/s memory (");
        const char *basis = in->hbm_bandwidth ? "given" : acc->basis;
        kvshard_writer__out_xml(o, basis, strlen(basis));
        kvshard_writer__out_raw(o, ").");
    }
}

void kvshard_report_comm__write(kvshard__out *o, const kvshard_plan *plan)
{
    if (!kvshard_comm__given(plan))
        return;
    kvshard_writer__out_raw(o, "<section id=\"comm\">\n<h2>The price of the split "
                               "(estimate)</h2>\n");
    kvshard__comm in_force;
    kvshard_error err;
    memset(&err, 0, sizeof err);
    if (kvshard_comm__of(&in_force, NULL, plan, &err) != KVSHARD_OK) {
        kvshard_writer__out_raw(o, "<p class=\"err\">Not priced: ");
        kvshard_writer__out_xml(o, err.message, strlen(err.message));
        kvshard_writer__out_raw(o, "</p>\n</section>\n");
        return;
    }
    kvshard_writer__out_raw(o, "<p>An estimate, not a measurement: a collective costs a latency "
                               "plus its bytes over the link, and a decode step reads its "
                               "weights, KV and state over the memory bandwidth.");
    sources(o, &in_force, plan);
    kvshard_writer__out_raw(o, " It leaves out compute, the communication every layout pays, "
                               "launches and waits, layout changes, bandwidth below the peak "
                               "and more: each real figure is above it; docs/comm.md lists "
                               "what it leaves out under \xe2\x80\x9cWhat the estimate leaves "
                               "out\xe2\x80\x9d.</p>\n");
    if (in_force.split < 2) {
        kvshard_writer__out_raw(o, "<p>The plan does not split its layers (S = 1): no layer "
                                   "moves, so there is no trade to price.</p>\n</section>\n");
        return;
    }
    uint64_t split = 0, unsplit = 0;
    bool sequences = false;
    bool has_capacity = capacity_of(&split, &unsplit, &sequences, plan, &in_force);
    kvshard_writer__out_printf(o, "<p class=\"lead\">S = %u", in_force.split);
    if (has_capacity) {
        kvshard_writer__out_raw(o, sequences ? " holds " : " allocates ");
        kvshard_writer__out_grouped(o, split);
        kvshard_writer__out_raw(o, sequences ? " sequences at once where S = 1 holds "
                                             : " blocks a rank where S = 1 allocates ");
        kvshard_writer__out_grouped(o, unsplit);
        if (unsplit)
            kvshard_writer__out_printf(o, ": %.2f\xC3\x97 the capacity",
                                       (double)split / (double)unsplit);
    } else {
        kvshard_writer__out_raw(o, ": give a budget for the capacity it gains");
    }
    kvshard_writer__out_raw(o, ". What it adds under each mechanism: ");
    if (in_force.has_batch) {
        kvshard_writer__out_raw(o, "a decode step of ");
        kvshard_writer__out_grouped(o, in_force.batch);
        kvshard_writer__out_raw(o, " sequences");
    } else {
        kvshard_writer__out_raw(o, "a decode step (give a batch or a budget for its bytes)");
    }
    if (in_force.prompt_length) {
        kvshard_writer__out_raw(o, ", and a ");
        kvshard_writer__out_grouped(o, in_force.prompt_length);
        kvshard_writer__out_raw(o, "-token prompt in chunks of ");
        kvshard_writer__out_grouped(o, in_force.chunk);
    }
    kvshard_writer__out_raw(o, ".");
    if (in_force.has_unsplit) {
        kvshard_writer__out_raw(o, " Unsplit, a step takes ");
        duration(o, in_force.unsplit_step_us);
        kvshard_writer__out_raw(o, ": ");
        tokens_per_s(o, in_force.unsplit_throughput);
        kvshard_writer__out_raw(o, " tokens/s.");
    }
    kvshard_writer__out_raw(o, " The mechanisms the plan runs are marked.</p>\n");
    priced rows[MECHANISMS];
    for (int i = 0; i < MECHANISMS; i++)
        price_under(&rows[i], plan, (kvshard__comm_mechanism)(KVSHARD__COMM_OWNER_ATTENTION + i));
    table(o, rows, &in_force, plan);
    chart(o, rows, &in_force, has_capacity, split, unsplit, sequences);
    kvshard_writer__out_printf(o,
                               "<p class=\"sub\">Bars to scale: each quantity has its own "
                               "axis, whose end, %u px, is its largest figure; a bar far "
                               "below it may be thinner than a pixel. full_layer overlaps "
                               "the compute: its step is the longer of the two, and in a "
                               "prompt its time is what compute must hide.</p>\n</section>\n",
                               BAR_W);
}
