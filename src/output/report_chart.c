/* The report's memory chart: how each distinct rank's budget divides into
 * the state it reserves, the KV blocks it allocates and what is left, all
 * bars on one scale with an axis, so a rank that leaves a tenth of its
 * memory unused shows it. With device inputs a bar spans the whole device,
 * the weights, activation reserve and headroom before the budget, so the
 * axis reads against the GPU. Ranks with the same figures share one bar. */
#include "output/report_chart.h"
#include "base/checked.h"
#include "plan/queries.h"

#include <stdio.h>
#include <string.h>

/* Distinct ranks drawn, as the text output lists ranks. */
#define BARS_SHOWN 64u

#define CHART_WIDTH 820u /* fits a 900 px window unscaled: text stays at its size */
#define BAR_X 196u       /* where the bars start */
#define BAR_W 600u       /* px of the full scale */
#define BAR_H 18u
#define ROW_H 54u
#define AXIS_H 40u
#define LEGEND_LINE 22u
#define FIGURES_LINE 14u /* a second line of figures under a bar */

static const char CHART_STYLE[] =
    "<defs>\n"
    "<pattern id=\"kvmem-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
    "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#e69f00\"/>"
    "<rect width=\"2\" height=\"6\" fill=\"#000\"/></pattern>\n"
    "<pattern id=\"kvmem-shatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
    "patternTransform=\"rotate(-45)\"><rect width=\"6\" height=\"6\" fill=\"#117733\"/>"
    "<rect width=\"2\" height=\"6\" fill=\"#fff\"/></pattern>\n"
    "<pattern id=\"kvmem-dots\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\">"
    "<rect width=\"5\" height=\"5\" fill=\"#cc79a7\"/><circle cx=\"2.5\" cy=\"2.5\" r=\"1.2\" "
    "fill=\"#000\"/></pattern>\n"
    "</defs>\n"
    "<style>\n"
    ".kvmem text{font-family:sans-serif;font-size:12px;fill:#000}\n"
    ".kvmem .sm{font-size:11px;fill:#404040}\n"
    ".kvmem .tk{font-size:11px;fill:#404040;text-anchor:middle}\n"
    ".kvmem .grid{stroke:#d0d0d0;stroke-width:1}\n"
    ".kvmem .axis{stroke:#404040;stroke-width:1}\n"
    ".kvmem .wt{fill:#332288}.kvmem .ar{fill:#882255}.kvmem .hr{fill:#ddcc77}\n"
    ".kvmem .st{fill:#117733}.kvmem .wn{fill:#44aa99}"
    ".kvmem .ss{fill:url(#kvmem-shatch)}.kvmem .rs{fill:#117733}\n"
    ".kvmem .kv{fill:#4477aa}.kvmem .scr{fill:url(#kvmem-hatch)}"
    ".kvmem .dr{fill:url(#kvmem-dots)}.kvmem .bl{fill:#4477aa}\n"
    ".kvmem .pst{fill:#117733}.kvmem .pfr{fill:#a6c8e8}\n"
    ".kvmem .un{fill:#f2f2f2}.kvmem .ub{fill:#9e9e9e}\n"
    ".kvmem rect.seg{stroke:#000;stroke-width:.5}\n"
    "</style>\n";

/* Each part's class and its words in the legend and the tooltips. */
static const struct part_look {
    const char *cls;
    const char *legend;
    const char *what;
} LOOKS[KVSHARD_REPORT__PARTS] = {
    {"wt", "weights", "weights of the rank's stage"},
    {"ar", "activation reserve", "activation_reserve"},
    {"hr", "headroom", "what memory_utilization leaves of the device"},
    {"st", "state", "state of max_seqs sequences"},
    {"wn", "windows", "windows of max_seqs sequences (sliding, chunked, compressed)"},
    {"ss", "scratch state", "scratch of max_seqs sequences (split compressed layers)"},
    {"rs", "state reserve", "state the profile reserves"},
    {"kv", "KV", "KV of the layers the rank stores, in its blocks"},
    {"scr", "scratch KV", "scratch KV it holds while split, in its blocks"},
    {"dr", "draft", "draft layers' KV, in its blocks"},
    {"bl", "KV blocks", "KV blocks, laid out by the profile"},
    {"kv", "attention KV pages", "pages of the attention layers' groups for the sequences at once"},
    {"pst", "state pages", "pages of the state layers' groups for the sequences at once"},
    {"pfr", "free pages", "pages of the pool no sequence at once holds"},
    {"un", "unused", "unused"},
};

/* The rest of a budget whose profile keeps state slots it gives no bytes
 * for: they are in it, so it is not all unused. */
static const struct part_look POOLED = {"un", "state slots and unused",
                                        "the profile's state slots and what is left unused"};

static const struct part_look *look_of(const kvshard__plan_view *p, int k)
{
    bool pooled = p->capacity->has_state_slots && p->capacity->reserved == 0;
    return k == KVSHARD_REPORT__UNUSED && pooled ? &POOLED : &LOOKS[k];
}

/* ---- the figures ------------------------------------------------------- */

bool kvshard_report__same_rank(const kvshard__plan_view *p, uint32_t a, uint32_t b)
{
    const kvshard_rank_memory *x = &p->ranks[a], *y = &p->ranks[b];
    return x->kv_bytes_per_token == y->kv_bytes_per_token &&
           x->scratch_bytes_per_token == y->scratch_bytes_per_token &&
           x->draft_bytes_per_token == y->draft_bytes_per_token &&
           x->bytes_per_block == y->bytes_per_block &&
           x->state_bytes_per_seq == y->state_bytes_per_seq &&
           x->scratch_bytes_per_seq == y->scratch_bytes_per_seq &&
           x->has_num_blocks == y->has_num_blocks && x->num_blocks == y->num_blocks &&
           x->budget == y->budget && x->weights_bytes == y->weights_bytes;
}

/* Whether an earlier rank has rank r's figures. */
static bool seen_before(const kvshard__plan_view *p, uint32_t r)
{
    for (uint32_t q = 0; q < r; q++)
        if (kvshard_report__same_rank(p, q, r))
            return true;
    return false;
}

/* With device inputs, the parts of the device outside the budget: the
 * weights, the activation reserve and the rest, which is what the
 * utilization leaves (device - usable) when the budget is usable less the
 * other two. A profile whose budget outgrows the device draws the budget
 * alone rather than parts that do not add up. */
static void device_parts(kvshard_report__bar *b, const kvshard__plan_view *p,
                         const kvshard_rank_memory *m)
{
    const kvshard__device_figures *d = p->device;
    if (!d->used)
        return;
    uint64_t outside;
    if (!kvshard__add(&outside, m->weights_bytes, d->reserve) ||
        !kvshard__add(&outside, outside, b->budget) || outside > d->device_memory)
        return;
    b->part[KVSHARD_REPORT__WEIGHTS] = m->weights_bytes;
    b->part[KVSHARD_REPORT__ACTIVATIONS] = d->reserve;
    b->part[KVSHARD_REPORT__HEADROOM] = d->device_memory - outside;
    b->span = d->device_memory;
}

/* The bar of plan rank r: its reserve as the profile counts it for the rank
 * alone, the plan's common blocks and what is left. */
static void bar_of(kvshard_report__bar *b, const kvshard__plan_view *p, uint32_t r)
{
    const kvshard_rank_memory *m = &p->ranks[r];
    const kvshard__capacity *cap = p->capacity;
    uint64_t bs = p->options->block_size;
    memset(b, 0, sizeof *b);
    b->rank = r;
    for (uint32_t q = r; q < p->ranks_count; q++)
        b->count += kvshard_report__same_rank(p, r, q);
    b->budget = m->budget;
    b->blocks = cap->num_blocks;
    b->has_fits = m->has_num_blocks;
    b->fits = m->num_blocks;
    kvshard__capacity own;
    uint64_t reserve = 0;
    if (kvshard_plan__capacity_at(&own, p->plan, r, 0) == KVSHARD_OK)
        reserve = own.reserved;
    /* Products below stay under the budget, which is 64 bits: max_seqs
     * states and the blocks both fitted it. */
    uint64_t seqs = kvshard__max_seqs_of(cap, p->options);
    uint64_t state = seqs * m->state_bytes_per_seq, scratch = seqs * m->scratch_bytes_per_seq;
    if (reserve && reserve == state + scratch) {
        uint64_t recurrent = seqs * kvshard_queries__rank_state(p, r);
        b->part[KVSHARD_REPORT__STATE] = recurrent;
        b->part[KVSHARD_REPORT__WINDOW] = state - recurrent;
        b->part[KVSHARD_REPORT__SEQ_SCRATCH] = scratch;
    } else {
        b->part[KVSHARD_REPORT__RESERVE] = reserve;
    }
    uint64_t per_token = m->kv_bytes_per_token + m->scratch_bytes_per_token +
                         m->draft_bytes_per_token;
    kvshard_profile__view pv = kvshard__profile_view(p);
    uint64_t held_kv = 0, held_state = 0;
    bool pooled = p->profile->voice.pool_split &&
                  p->profile->voice.pool_split(&held_kv, &held_state, &pv) &&
                  held_kv + held_state <= b->blocks;
    if (pooled) {
        b->part[KVSHARD_REPORT__POOL_KV] = held_kv * m->bytes_per_block;
        b->part[KVSHARD_REPORT__POOL_STATE] = held_state * m->bytes_per_block;
        b->part[KVSHARD_REPORT__POOL_FREE] =
            (b->blocks - held_kv - held_state) * m->bytes_per_block;
    } else if (bs * per_token == m->bytes_per_block) {
        b->part[KVSHARD_REPORT__KV] = b->blocks * bs * m->kv_bytes_per_token;
        b->part[KVSHARD_REPORT__SCRATCH] = b->blocks * bs * m->scratch_bytes_per_token;
        b->part[KVSHARD_REPORT__DRAFT] = b->blocks * bs * m->draft_bytes_per_token;
    } else {
        b->part[KVSHARD_REPORT__BLOCKS] = b->blocks * m->bytes_per_block;
    }
    uint64_t used = reserve + b->blocks * m->bytes_per_block;
    b->part[KVSHARD_REPORT__UNUSED] = b->budget > used ? b->budget - used : 0;
    b->span = b->budget;
    device_parts(b, p, m);
}

size_t kvshard_report__bars(kvshard_report__bar *out, size_t cap, const kvshard__plan_view *p)
{
    if (!p->has_memory || !p->capacity->has_num_blocks)
        return 0;
    size_t n = 0;
    for (uint32_t r = 0; r < p->ranks_count; r++) {
        if (seen_before(p, r))
            continue;
        if (n < cap)
            bar_of(&out[n], p, r);
        n++;
    }
    return n;
}

/* Whether plan rank q shares rank's bar (on rank's stage when
 * `stage_ranks` is given). */
static bool member(const kvshard__plan_view *p, uint32_t rank, uint32_t q, uint32_t stage_ranks)
{
    return kvshard_report__same_rank(p, rank, q) &&
           (!stage_ranks || q / stage_ranks == rank / stage_ranks);
}

/* The members of rank's bar as ranges, "0\u20134", "0, 2, 4, 6"; past four
 * ranges the first two, "\u2026" and the last. With `stage_ranks`, TP ranks of
 * rank's stage, else plan ranks. */
static void rank_list(char *out, size_t cap, const kvshard__plan_view *p, uint32_t rank,
                      uint32_t stage_ranks)
{
    uint32_t ranges = 0;
    for (uint32_t q = rank; q < p->ranks_count; q++)
        if (member(p, rank, q, stage_ranks) &&
            (q == rank || !member(p, rank, q - 1, stage_ranks)))
            ranges++;
    size_t used = 0;
    uint32_t k = 0;
    out[0] = '\0';
    for (uint32_t q = rank; q < p->ranks_count && used < cap; q++) {
        if (!member(p, rank, q, stage_ranks))
            continue;
        uint32_t a = q;
        while (q + 1 < p->ranks_count && member(p, rank, q + 1, stage_ranks))
            q++;
        k++;
        if (ranges > 4 && k > 2 && k < ranges) {
            if (k == 3)
                used += (size_t)snprintf(out + used, cap - used, ", \xE2\x80\xA6");
            continue;
        }
        uint32_t from = stage_ranks ? a % stage_ranks : a;
        uint32_t to = stage_ranks ? q % stage_ranks : q;
        const char *sep = k > 1 ? ", " : "";
        if (to == from)
            used += (size_t)snprintf(out + used, cap - used, "%s%u", sep, from);
        else if (to == from + 1)
            used += (size_t)snprintf(out + used, cap - used, "%s%u, %u", sep, from, to);
        else
            used += (size_t)snprintf(out + used, cap - used, "%s%u\xE2\x80\x93%u", sep, from, to);
    }
}

void kvshard_report__members(char *out, size_t cap, const kvshard__plan_view *p, uint32_t rank)
{
    uint32_t count = 0;
    bool one_stage = true;
    for (uint32_t q = rank; q < p->ranks_count; q++) {
        if (kvshard_report__same_rank(p, rank, q)) {
            count++;
            one_stage &= q / p->tp == rank / p->tp;
        }
    }
    char list[48];
    bool by_stage = p->pp > 1 && one_stage;
    rank_list(list, sizeof list, p, rank, by_stage ? p->tp : 0);
    char stage[24] = "";
    if (by_stage)
        snprintf(stage, sizeof stage, "stage %u ", rank / p->tp);
    if (count == 1)
        snprintf(out, cap, "%srank %s", stage, list);
    else
        snprintf(out, cap, "%sranks %s (%u)", stage, list, count);
}

/* ---- drawing ----------------------------------------------------------- */

/* A scale for `max` bytes: ticks every `step` bytes of `unit`, 1, 2 or 5
 * times a power of ten of it, at most 8 of them. */
typedef struct scale {
    uint64_t max; /* bytes at the full bar */
    uint64_t step;
    uint64_t unit;
    const char *unit_name;
} scale;

static scale scale_for(uint64_t max)
{
    static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    scale s = {max ? max : 1, 1, 1, "B"};
    int u = 0;
    while (u < 5 && s.max >= (s.unit << 10)) {
        s.unit <<= 10;
        u++;
    }
    s.unit_name = names[u];
    uint64_t mult = 1;
    for (;;) {
        static const uint64_t steps[] = {1, 2, 5};
        for (int i = 0; i < 3; i++) {
            uint64_t step = steps[i] * mult * s.unit;
            if (s.max / step <= 8) {
                s.step = step;
                return s;
            }
        }
        mult *= 10;
    }
}

static double x_of(const scale *s, uint64_t v)
{
    return BAR_X + (double)v / (double)s->max * BAR_W;
}

static void axis(kvshard__out *o, const scale *s, uint32_t top, uint32_t bottom)
{
    kvshard_writer__out_printf(o,
                               "<line class=\"axis\" x1=\"%u\" y1=\"%u\" x2=\"%u\" y2=\"%u\"/>\n",
                               BAR_X, bottom, BAR_X + BAR_W, bottom);
    for (uint64_t v = 0; v <= s->max && !o->failed; v += s->step) {
        double x = x_of(s, v);
        kvshard_writer__out_printf(o,
                            "<line class=\"grid\" x1=\"%.1f\" y1=\"%u\" x2=\"%.1f\" y2=\"%u\"/>"
                            "<line class=\"axis\" x1=\"%.1f\" y1=\"%u\" x2=\"%.1f\" y2=\"%u\"/>"
                            "<text class=\"tk\" x=\"%.1f\" y=\"%u\">%llu</text>\n",
                            x, top, x, bottom, x, bottom, x, bottom + 5, x, bottom + 18,
                            (unsigned long long)(v / s->unit));
    }
    kvshard_writer__out_printf(o, "<text class=\"sm\" x=\"8\" y=\"%u\">scale in %s</text>\n",
                        bottom + 18, s->unit_name);
}

/* A legend of the parts `used` marks, wrapped to the chart's width; returns
 * the lines it takes. `write` false only counts them. */
static uint32_t legend(kvshard__out *o, const kvshard__plan_view *p, const bool *used,
                       uint32_t top, bool write)
{
    uint32_t x = 8, line = 0;
    for (int k = 0; k < KVSHARD_REPORT__PARTS; k++) {
        if (!used[k])
            continue;
        const struct part_look *look = look_of(p, k);
        uint32_t w = 24 + 7 * (uint32_t)strlen(look->legend) + 18;
        if (x + w > CHART_WIDTH) {
            x = 8;
            line++;
        }
        if (write)
            kvshard_writer__out_printf(o,
                                "<rect class=\"seg %s\" x=\"%u\" y=\"%u\" width=\"18\" "
                                "height=\"14\"/><text x=\"%u\" y=\"%u\">%s</text>\n",
                                look->cls, x, top + line * LEGEND_LINE, x + 24,
                                top + line * LEGEND_LINE + 12, look->legend);
        x += w;
    }
    return line + 1;
}

/* One segment of `v` bytes from *x, with its figure on hover. */
static void segment(kvshard__out *o, const scale *s, double *x, uint32_t y, uint64_t v,
                    const char *cls, const char *label, const char *what, uint64_t blocks,
                    uint64_t each)
{
    if (!v)
        return;
    double w = (double)v / (double)s->max * BAR_W;
    kvshard_writer__out_printf(o,
                        "<rect class=\"seg %s\" x=\"%.1f\" y=\"%u\" width=\"%.1f\" height=\"%u\">"
                        "<title>",
                        cls, *x, y, w, BAR_H);
    kvshard_writer__out_raw(o, label);
    kvshard_writer__out_printf(o, ": %s, ", what);
    if (blocks) {
        kvshard_writer__out_grouped(o, blocks);
        kvshard_writer__out_raw(o, " \xC3\x97 ");
        kvshard_writer__out_grouped(o, each);
        kvshard_writer__out_raw(o, " B = ");
    }
    kvshard__printer pr = kvshard_writer__out_html_printer(o);
    kvshard_format__bytes(&pr, v);
    kvshard_writer__out_raw(o, "</title></rect>");
    *x += w;
}

static void write_budget_chart(kvshard__out *o, const kvshard__plan_view *p)
{
    kvshard_report__bar bars[BARS_SHOWN];
    size_t total = kvshard_report__bars(bars, BARS_SHOWN, p);
    size_t shown = total < BARS_SHOWN ? total : BARS_SHOWN;
    bool used[KVSHARD_REPORT__PARTS] = {false};
    uint64_t max = 0;
    for (size_t i = 0; i < shown; i++) {
        for (int k = 0; k < KVSHARD_REPORT__PARTS; k++)
            used[k] |= bars[i].part[k] > 0;
        max = bars[i].span > max ? bars[i].span : max;
    }
    used[KVSHARD_REPORT__UNUSED] = true;
    bool device = used[KVSHARD_REPORT__HEADROOM] || used[KVSHARD_REPORT__WEIGHTS];
    scale s = scale_for(max);
    uint32_t lines = legend(o, p, used, 0, false);
    uint32_t top = 8 + lines * LEGEND_LINE + 8;
    /* With the device a bar's figures take two lines, the device's and the
     * budget's, so that neither runs past the chart. */
    uint32_t row_h = device ? ROW_H + FIGURES_LINE : ROW_H;
    uint32_t bottom = top + (uint32_t)shown * row_h;
    uint32_t height = bottom + AXIS_H;
    kvshard_writer__out_printf(o,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kvmem\" width=\"%u\" "
                        "height=\"%u\" viewBox=\"0 0 %u %u\" role=\"img\">\n"
                        "<title>How each distinct rank's %s divides: %sstate, KV blocks, "
                        "unused</title>\n",
                        CHART_WIDTH, height, CHART_WIDTH, height,
                        device ? "device" : "budget",
                        device ? "weights, activation reserve, headroom, " : "");
    kvshard_writer__out_raw(o, CHART_STYLE);
    legend(o, p, used, 8, true);
    axis(o, &s, top - 4, bottom);
    uint64_t bs = p->options->block_size;
    for (size_t i = 0; i < shown && !o->failed; i++) {
        const kvshard_report__bar *b = &bars[i];
        const kvshard_rank_memory *m = &p->ranks[b->rank];
        uint32_t y = top + (uint32_t)i * row_h;
        char label[96];
        kvshard_report__members(label, sizeof label, p, b->rank);
        kvshard_writer__out_printf(o, "<g class=\"rank\"><text x=\"8\" y=\"%u\">%s</text>", y + 14,
                            label);
        /* The split rank, when the bar's ranks share one. */
        bool one_split = p->split > 1;
        for (uint32_t q = b->rank; one_split && q < p->ranks_count; q++)
            one_split = !kvshard_report__same_rank(p, b->rank, q) ||
                        p->place[q].split_rank == p->place[b->rank].split_rank;
        if (one_split)
            kvshard_writer__out_printf(o,
                                       "<text class=\"sm\" x=\"8\" y=\"%u\">split rank %u</text>",
                                       y + 30, p->place[b->rank].split_rank);
        double x = BAR_X;
        uint64_t each[KVSHARD_REPORT__PARTS] = {0, 0, 0, 0, 0, 0, 0, bs * m->kv_bytes_per_token,
                                                bs * m->scratch_bytes_per_token,
                                                bs * m->draft_bytes_per_token,
                                                m->bytes_per_block, m->bytes_per_block,
                                                m->bytes_per_block, m->bytes_per_block, 0};
        for (int k = 0; k < KVSHARD_REPORT__PARTS; k++)
            segment(o, &s, &x, y + 2, b->part[k], look_of(p, k)->cls, label, look_of(p, k)->what,
                    each[k] ? b->part[k] / each[k] : 0, each[k]);
        /* The figures under the bar, in human sizes; the unused share in
         * per cent of the budget. */
        kvshard_writer__out_printf(o, "<text class=\"sm\" x=\"%u\" y=\"%u\">", BAR_X,
                                   y + BAR_H + 17);
        const char *sep = "";
        for (int k = 0; k < KVSHARD_REPORT__PARTS; k++) {
            if (device && k == KVSHARD_REPORT__STATE) {
                char h[32];
                kvshard_format__human_text(h, sizeof h, b->budget);
                kvshard_writer__out_printf(o,
                                           "%sbudget %s</text><text class=\"sm\" x=\"%u\" "
                                           "y=\"%u\">",
                                           sep, h, BAR_X, y + BAR_H + 17 + FIGURES_LINE);
                sep = "";
            }
            if (!b->part[k] && k != KVSHARD_REPORT__UNUSED)
                continue;
            char h[32];
            kvshard_format__human_text(h, sizeof h, b->part[k]);
            kvshard_writer__out_printf(o, "%s%s %s", sep, look_of(p, k)->legend, h);
            sep = " \xC2\xB7 ";
        }
        if (b->budget)
            kvshard_writer__out_printf(o, " (%.1f%%)",
                                100.0 * (double)b->part[KVSHARD_REPORT__UNUSED] /
                                    (double)b->budget);
        if (b->has_fits && b->fits > b->blocks) {
            kvshard_writer__out_raw(o, ": fits ");
            kvshard_writer__out_grouped(o, b->fits);
            kvshard_writer__out_raw(o, " blocks, allocates ");
            kvshard_writer__out_grouped(o, b->blocks);
        }
        kvshard_writer__out_raw(o, "</text></g>\n");
    }
    kvshard_writer__out_raw(o, "</svg>\n");
    if (total > shown)
        kvshard_writer__out_printf(o,
                            "<p>%zu more distinct ranks are not drawn; <code>kvshard plan "
                            "--format=json</code> lists every rank.</p>\n",
                            total - shown);
}

/* Without a budget: one block and one sequence's state per distinct rank,
 * and one block of the unsplit plan, on one byte scale. */
static void write_sizes_chart(kvshard__out *o, const kvshard__plan_view *p)
{
    uint64_t bs = p->options->block_size;
    const kvshard_uniform *u = p->uniform;
    uint64_t max = u->bytes_per_block;
    uint32_t distinct = 0;
    for (uint32_t r = 0; r < p->ranks_count; r++) {
        if (seen_before(p, r))
            continue;
        distinct++;
        const kvshard_rank_memory *m = &p->ranks[r];
        uint64_t seq = m->state_bytes_per_seq + m->scratch_bytes_per_seq;
        max = m->bytes_per_block > max ? m->bytes_per_block : max;
        max = seq > max ? seq : max;
    }
    uint32_t shown = distinct < BARS_SHOWN ? distinct : BARS_SHOWN;
    scale s = scale_for(max);
    bool used[KVSHARD_REPORT__PARTS] = {false};
    /* A model that keeps only windows shows no state. */
    uint32_t caches = kvshard__view_seq_caches(p);
    used[KVSHARD_REPORT__STATE] = caches != KVSHARD__SEQ_WINDOW;
    used[KVSHARD_REPORT__WINDOW] = (caches & KVSHARD__SEQ_WINDOW) != 0;
    used[KVSHARD_REPORT__KV] = true;
    for (uint32_t r = 0; r < p->ranks_count; r++) {
        used[KVSHARD_REPORT__SEQ_SCRATCH] |= p->ranks[r].scratch_bytes_per_seq > 0;
        used[KVSHARD_REPORT__SCRATCH] |= p->ranks[r].scratch_bytes_per_token > 0;
        used[KVSHARD_REPORT__DRAFT] |= p->ranks[r].draft_bytes_per_token > 0;
    }
    uint32_t lines = legend(o, p, used, 0, false);
    uint32_t top = 8 + lines * LEGEND_LINE + 8;
    uint32_t bottom = top + (shown + 1) * ROW_H;
    uint32_t height = bottom + AXIS_H;
    kvshard_writer__out_printf(o,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kvmem\" width=\"%u\" "
                        "height=\"%u\" viewBox=\"0 0 %u %u\" role=\"img\">\n"
                        "<title>Bytes of one block and of one sequence's state per distinct "
                        "rank, on one scale</title>\n",
                        CHART_WIDTH, height, CHART_WIDTH, height);
    kvshard_writer__out_raw(o, CHART_STYLE);
    legend(o, p, used, 8, true);
    axis(o, &s, top - 4, bottom);
    uint32_t row = 0;
    for (uint32_t r = 0; r < p->ranks_count && row < shown && !o->failed; r++) {
        if (seen_before(p, r))
            continue;
        const kvshard_rank_memory *m = &p->ranks[r];
        uint32_t y = top + row++ * ROW_H;
        char label[96];
        kvshard_report__members(label, sizeof label, p, r);
        kvshard_writer__out_printf(o, "<g class=\"rank\"><text x=\"8\" y=\"%u\">%s</text>", y + 14,
                            label);
        double x = BAR_X;
        segment(o, &s, &x, y + 2, bs * m->kv_bytes_per_token, "kv", label, "KV of one block", 0,
                0);
        segment(o, &s, &x, y + 2, bs * m->scratch_bytes_per_token, "scr", label,
                "scratch KV of one block", 0, 0);
        segment(o, &s, &x, y + 2, bs * m->draft_bytes_per_token, "dr", label,
                "draft KV of one block", 0, 0);
        x = BAR_X;
        uint64_t recurrent = kvshard_queries__rank_state(p, r);
        segment(o, &s, &x, y + 22, recurrent, "st", label, "state of one sequence", 0, 0);
        segment(o, &s, &x, y + 22, m->state_bytes_per_seq - recurrent, "wn", label,
                "windows of one sequence", 0, 0);
        segment(o, &s, &x, y + 22, m->scratch_bytes_per_seq, "ss", label,
                "scratch of one sequence", 0, 0);
        char block[32], seq[32];
        kvshard_format__human_text(block, sizeof block, m->bytes_per_block);
        kvshard_format__human_text(seq, sizeof seq,
                                   m->state_bytes_per_seq + m->scratch_bytes_per_seq);
        kvshard_writer__out_printf(o,
                            "<text class=\"sm\" x=\"8\" y=\"%u\">block %s \xC2\xB7 sequence "
                            "%s</text></g>\n",
                            y + 30, block, seq);
    }
    uint32_t y = top + row * ROW_H;
    double x = BAR_X;
    kvshard_writer__out_printf(o, "<g class=\"rank\"><text x=\"8\" y=\"%u\">unsplit plan</text>",
                               y + 14);
    segment(o, &s, &x, y + 2, u->bytes_per_block, "ub", "unsplit plan", "one block", 0, 0);
    char block[32];
    kvshard_format__human_text(block, sizeof block, u->bytes_per_block);
    kvshard_writer__out_printf(o, "<text class=\"sm\" x=\"8\" y=\"%u\">block %s</text></g>\n",
                               y + 30, block);
    kvshard_writer__out_raw(o, "</svg>\n");
    if (distinct > shown)
        kvshard_writer__out_printf(o,
                            "<p>%u more distinct ranks are not drawn; <code>kvshard plan "
                            "--format=json</code> lists every rank.</p>\n",
                            distinct - shown);
}

void kvshard_report__write_memory(kvshard__out *o, const kvshard__plan_view *p)
{
    bool budget = p->has_memory && p->capacity->has_num_blocks;
    kvshard_writer__out_raw(o,
                            "<section id=\"memory\">\n<h2>Memory per rank</h2>\n<p class=\"sub\">");
    /* The words follow the bars: the first spans the device or its budget. */
    kvshard_report__bar first;
    bool device = budget && kvshard_report__bars(&first, 1, p) && first.span != first.budget;
    if (device)
        kvshard_writer__out_raw(o,
                            "Each distinct rank's whole device, on one scale: the weights of its "
                            "stage, the activation reserve and the headroom memory_utilization "
                            "leaves, then its budget: the state it reserves for max_seqs "
                            "sequences, the common blocks every rank allocates (the fewest any "
                            "rank fits) and what is left unused. Ranks with the same figures "
                            "share a bar. Hover a segment for its bytes.");
    else if (budget)
        kvshard_writer__out_printf(o,
                            "Each distinct rank's budget, on one scale: the state it reserves "
                            "for max_seqs sequences, the %s blocks every rank allocates (the "
                            "fewest any rank fits) and what is left unused. Ranks with the same "
                            "figures share a bar. Hover a segment for its bytes.",
                            "common");
    else
        kvshard_writer__out_printf(o,
                            "Without a budget, the bytes of one block of %u tokens (KV, scratch "
                            "and draft) and of one sequence's state on each distinct rank, and "
                            "one block of the plan without the split, on one scale. Hover a "
                            "segment for its bytes.",
                            p->options->block_size);
    kvshard_writer__out_raw(o, "</p>\n<div class=\"fig\">\n");
    if (budget)
        write_budget_chart(o, p);
    else
        write_sizes_chart(o, p);
    kvshard_writer__out_raw(o, "</div>\n</section>\n");
}

size_t kvshard_report__context_lengths(uint32_t *out, const kvshard__model_info *m)
{
    static const uint32_t lengths[] = {4096, 32768, 131072};
    uint32_t max = m->max_position_embeddings;
    size_t n = 0;
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        if (max && lengths[i] >= max)
            break;
        out[n++] = lengths[i];
    }
    if (max && max <= KVSHARD_MAX_CONTEXT_LENGTH)
        out[n++] = max;
    return n;
}
