/* The layer map as SVG: one cell per decoder layer in rows of COLUMNS,
 * coloured by the split rank that stores the layer's KV and marked with a
 * letter for its kind, so the map reads without colour too. Written as it
 * goes, with no allocation: the size is linear in the layers. */
#include "output/svg.h"
#include "output/runs.h"
#include "plan/queries.h"

#include <stdio.h>
#include <string.h>

#define COLUMNS 40u /* cells per row */
#define CELL 24u    /* cell side, px */
#define PITCH 26u   /* cell side plus the gap */
#define LEFT 64u    /* room for the row labels */
#define WIDTH (LEFT + COLUMNS * PITCH + 16u)
#define LEGEND_COLUMNS 2u
#define LEGEND_X 540u /* width of one legend entry */
#define LINE 24u      /* height of a header or legend line */
#define OWNERS_SHOWN 16u

const char *const kvshard_svg__owner_fill[KVSHARD__OWNER_COLOURS] = {
    "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#cc79a7", "#d55e00", "#a6a6ff", "#7fc97f"};

/* Black text on every fill below has a contrast ratio of at least 5.4:1
 * (the vermillion); the greys are above 11:1. */
static const char STYLE_HEAD[] =
    "<style>\n"
    ".kvmap text{font-family:sans-serif;font-size:12px;fill:#000}\n"
    ".kvmap .hd{font-size:15px;font-weight:bold}\n"
    ".kvmap .layer,.kvmap .key{stroke:#595959;stroke-width:1}\n"
    ".kvmap .cells text{text-anchor:middle;font-size:11px;pointer-events:none}\n"
    ".kvmap .cells .s{font-size:8px}\n"
    ".kvmap .cells .xs{font-size:6px}\n"
    ".kvmap .cells .ri,.kvmap .ci{font-size:11px;fill:#404040}\n"
    ".kvmap .cells .ri{text-anchor:end}\n"
    ".kvmap .cells .rc{text-anchor:start;font-size:12px}\n"
    ".kvmap .m{text-anchor:middle;font-size:11px}\n";
/* The owner colours go between STYLE_HEAD and STYLE_TAIL, four a line. */
static const char STYLE_TAIL[] =
    ".kvmap .oA{fill:#bdbdbd}.kvmap .kL{fill:#e9e9e9}.kvmap .kW{fill:#d4d4d4}\n"
    ".kvmap .kN{fill:#fff;stroke-dasharray:3 2}.kvmap .kK{fill:#c8c8c8}"
    ".kvmap .kS{fill:#f7f7f7;stroke-dasharray:1 2}\n"
    "</style>\n";

/* ---- legend ------------------------------------------------------------ */

typedef struct legend {
    kvshard__out *o;
    uint32_t top; /* y of the first legend line */
    uint32_t n;   /* entries written */
} legend;

/* Open an entry: a swatch of class `cls` marked `mark`; the caller writes
 * the label and closes it with entry_end(). */
static void entry_begin(legend *lg, const char *cls, const char *mark)
{
    uint32_t x = 8 + (lg->n % LEGEND_COLUMNS) * LEGEND_X;
    uint32_t y = lg->top + (lg->n / LEGEND_COLUMNS) * LINE;
    lg->n++;
    kvshard_writer__out_printf(lg->o,
                        "<g transform=\"translate(%u,%u)\"><rect class=\"key %s\" width=\"20\" "
                        "height=\"20\"/><text class=\"m\" x=\"10\" y=\"14\">%s</text>"
                        "<text x=\"28\" y=\"14\">",
                        x, y, cls, mark);
}

static void entry_end(legend *lg)
{
    kvshard_writer__out_raw(lg->o, "</text></g>\n");
}

/* Entries the legend holds, to size the image before writing it. */
static uint32_t legend_entries(const kvshard__plan_view *p)
{
    const kvshard__model_info *m = p->model;
    uint32_t n = 0;
    if (p->split > 1 && kvshard__num_kv_layers(m))
        n += p->split < OWNERS_SHOWN ? p->split : OWNERS_SHOWN;
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        n += m->count[k] > 0;
    return n;
}

static void write_legend(kvshard__out *o, const kvshard__plan_view *p, uint32_t top)
{
    const kvshard__model_info *m = p->model;
    legend lg = {o, top, 0};
    bool split = p->split > 1;
    if (split && kvshard__num_kv_layers(m)) {
        for (uint32_t s = 0; s < p->split && s < OWNERS_SHOWN && !o->failed; s++) {
            char cls[8], mark[16];
            snprintf(cls, sizeof cls, "o%u", s % KVSHARD__OWNER_COLOURS);
            snprintf(mark, sizeof mark, "%u", s);
            entry_begin(&lg, cls, mark);
            uint32_t owned = 0; /* over every stage: one split rank per stage's TP group */
            for (uint32_t stage = 0; stage < p->pp; stage++)
                owned += p->owned_counts[(size_t)stage * p->split + s];
            kvshard_writer__out_printf(o, "split rank %u: %u KV layer%s; TP rank%s ", s, owned,
                                owned == 1 ? "" : "s", p->tp / p->split == 1 ? "" : "s");
            char members[64];
            kvshard_writer__split_members(members, sizeof members, p->tp, p->split, s);
            kvshard_writer__out_raw(o, members);
            entry_end(&lg);
        }
    }
    for (uint32_t i = 0; i < KVSHARD__KIND_COUNT && !o->failed; i++) {
        uint8_t k = kvshard_kinds__legend_order[i];
        const kvshard_kinds__row *row = kvshard_kinds__of(k);
        if (!m->count[k])
            continue;
        char mark[8];
        if (row->paged_kv)
            snprintf(mark, sizeof mark, "%c%s", row->letter, split ? "0" : "*");
        else
            snprintf(mark, sizeof mark, "%s", row->mark);
        entry_begin(&lg, row->paged_kv ? (split ? "o0" : "oA") : row->css, mark);
        const char *text = split ? row->legend_split : row->legend_unsplit;
        if (row->window_tokens)
            kvshard_writer__out_printf(o, text, row->window_tokens(m));
        else
            kvshard_writer__out_raw(o, text);
        entry_end(&lg);
    }
}

/* ---- cells ------------------------------------------------------------- */

/* Layer i's cell class and mark: its kind's, and for a KV layer its owner's. */
static void cell_look(char *cls, char *mark, size_t cap, const kvshard__plan_view *p, uint32_t i)
{
    const kvshard_kinds__row *row = kvshard_kinds__of(p->kinds[i]);
    int32_t owner = p->owner[i];
    if (!row->paged_kv) {
        snprintf(cls, cap, "%s", row->css);
        snprintf(mark, cap, "%s", row->mark);
    } else if (owner >= 0) {
        snprintf(cls, cap, "%s o%u", row->css, (unsigned)owner % KVSHARD__OWNER_COLOURS);
        snprintf(mark, cap, "%c%d", row->letter, (int)owner);
    } else {
        snprintf(cls, cap, "%s oA", row->css);
        snprintf(mark, cap, "%c*", row->letter);
    }
}

/* What layer i holds and where, for its tooltip: "full attention, KV on
 * split rank 1". */
static void cell_what(kvshard__out *o, const kvshard__plan_view *p, uint32_t i)
{
    const kvshard_kinds__row *row = kvshard_kinds__of(p->kinds[i]);
    int32_t owner = p->owner[i];
    kvshard_writer__out_raw(o, row->title);
    if (row->paged_kv) {
        if (owner >= 0)
            kvshard_writer__out_printf(o, ", KV on split rank %d", (int)owner);
        else
            kvshard_writer__out_raw(o, ", KV on every rank");
        if (row->state)
            kvshard_writer__out_raw(o, ", state on every rank");
    }
}

/* The text over a cell at x, smaller for long marks. */
static void cell_mark(kvshard__out *o, uint32_t x, const char *mark)
{
    size_t len = strlen(mark);
    if (len) {
        kvshard_writer__out_printf(o, "<text x=\"%u\" y=\"16\"%s>%s</text>", x + CELL / 2,
                            len <= 3   ? ""
                            : len <= 5 ? " class=\"s\""
                                       : " class=\"xs\"",
                            mark);
    }
}

/* Layer i, on pipeline stage `stage`: a bar marks where a stage starts. */
static void write_cell(kvshard__out *o, const kvshard__plan_view *p, uint32_t i, uint32_t stage)
{
    uint32_t x = (i % COLUMNS) * PITCH;
    char cls[16], mark[16];
    cell_look(cls, mark, sizeof cls, p, i);
    kvshard_writer__out_printf(o,
                        "<rect id=\"l%u\" class=\"layer %s\" x=\"%u\" width=\"%u\" "
                        "height=\"%u\"><title>layer %u: ",
                        i, cls, x, CELL, CELL, i);
    cell_what(o, p, i);
    int32_t source = p->kv_source ? p->kv_source[i] : -1;
    if (source >= 0)
        kvshard_writer__out_printf(o, ", reads layer %d", (int)source);
    if (p->pp > 1)
        kvshard_writer__out_printf(o, ", stage %u", stage);
    kvshard_writer__out_raw(o, "</title></rect>");
    if (stage > 0 && p->stages[stage].first == i)
        kvshard_writer__out_printf(o,
                            "<rect class=\"sb\" x=\"%d\" y=\"-2\" width=\"2\" "
                            "height=\"%u\"><title>stage %u starts at layer %u</title></rect>",
                            (int)x - 2, CELL + 4, stage, i);
    cell_mark(o, x, mark);
    kvshard_writer__out_put(o, "\n", 1);
}

/* ---- runs -------------------------------------------------------------- */

#define RUN_LEFT 132u  /* room for a run's layers, "4194296-4194303" */
#define RUN_COUNT 84u  /* room for its count after the cells */
#define RUN_WIDTH (RUN_LEFT + COLUMNS * PITCH + RUN_COUNT)

/* One row of a folded map: the run's layers, the cells of one repeat (each
 * tooltip lists the layers the cell stands for) and the repeat count. */
static void write_run(kvshard__out *o, const kvshard__plan_view *p, uint32_t row,
                      kvshard_runs__run r, uint32_t *stage)
{
    uint32_t last = r.first + r.period * r.repeats - 1;
    while (r.first >= p->stages[*stage].first + p->stages[*stage].count)
        (*stage)++;
    kvshard_writer__out_printf(o,
                        "<g class=\"run\" id=\"run%u\" transform=\"translate(0,%u)\"><text "
                        "class=\"ri\" x=\"-8\" y=\"16\">%u",
                        row, row * PITCH, r.first);
    if (last > r.first)
        kvshard_writer__out_printf(o, "\xE2\x80\x93%u", last);
    kvshard_writer__out_raw(o, "</text>\n");
    if (*stage > 0 && p->stages[*stage].first == r.first)
        kvshard_writer__out_printf(o,
                            "<rect class=\"sb\" x=\"-4\" y=\"-2\" width=\"2\" "
                            "height=\"%u\"><title>stage %u starts at layer %u</title></rect>\n",
                            CELL + 4, *stage, r.first);
    for (uint32_t k = 0; k < r.period && !o->failed; k++) {
        uint32_t i = r.first + k, x = k * PITCH;
        char cls[16], mark[16];
        cell_look(cls, mark, sizeof cls, p, i);
        kvshard_writer__out_printf(o,
                            "<rect class=\"layer %s\" x=\"%u\" width=\"%u\" height=\"%u\">"
                            "<title>layer%s %u",
                            cls, x, CELL, CELL, r.repeats > 1 ? "s" : "", i);
        if (r.repeats == 2)
            kvshard_writer__out_printf(o, ", %u", i + r.period);
        else if (r.repeats > 2)
            kvshard_writer__out_printf(o, ", %u, \xE2\x80\xA6 %u (%u layers, one in %u)",
                                i + r.period, i + (r.repeats - 1) * r.period, r.repeats, r.period);
        kvshard_writer__out_raw(o, ": ");
        cell_what(o, p, i);
        int32_t source = p->kv_source ? p->kv_source[i] : -1;
        if (source >= 0 && r.repeats == 1)
            kvshard_writer__out_printf(o, ", reads layer %d", (int)source);
        if (p->pp > 1)
            kvshard_writer__out_printf(o, ", stage %u", *stage);
        kvshard_writer__out_raw(o, "</title></rect>");
        cell_mark(o, x, mark);
        kvshard_writer__out_put(o, "\n", 1);
    }
    kvshard_writer__out_printf(o, "<text class=\"rc\" x=\"%u\" y=\"16\">\xC3\x97",
                               r.period * PITCH + 6);
    kvshard_writer__out_grouped(o, r.repeats);
    kvshard_writer__out_raw(o, "</text></g>\n");
}

void kvshard_svg__layer_map(kvshard__out *o, const kvshard__plan_view *p, bool fold)
{
    const kvshard__model_info *m = p->model;
    uint32_t L = m->num_layers;
    fold = fold && L > KVSHARD_RUNS__FOLD_AFTER;
    uint32_t rows = fold ? kvshard_runs__count(p, COLUMNS) : L / COLUMNS + (L % COLUMNS != 0);
    uint32_t entries = legend_entries(p);
    bool owners_cut = p->split > OWNERS_SHOWN && kvshard__num_kv_layers(m);
    uint32_t legend_top = 2 * LINE + 8;
    uint32_t legend_lines = (entries + LEGEND_COLUMNS - 1) / LEGEND_COLUMNS + owners_cut;
    uint32_t grid_top = legend_top + legend_lines * LINE + 24;
    /* Rows of 26 px: 4M layers are about 2.7M px, inside 32 bits. */
    uint32_t height = grid_top + rows * PITCH + 8;
    uint32_t width = fold ? RUN_WIDTH : WIDTH;
    uint32_t left = fold ? RUN_LEFT : LEFT;

    kvshard_writer__out_printf(o,
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kvmap\" width=\"%u\" "
                        "height=\"%u\" viewBox=\"0 0 %u %u\" role=\"img\">\n<title>Layer map: ",
                        width, height, width, height);
    if (p->model_type[0])
        kvshard_writer__out_xml(o, p->model_type, strlen(p->model_type));
    else
        kvshard_writer__out_raw(o, "model");
    kvshard_writer__out_printf(o, ", %u layers, attention TP %u, split %u</title>\n", L, p->tp,
                               p->split);
    kvshard_writer__out_raw(o, STYLE_HEAD);
    for (uint32_t c = 0; c < KVSHARD__OWNER_COLOURS; c++)
        kvshard_writer__out_printf(o, ".kvmap .o%u{fill:%s}%s", c, kvshard_svg__owner_fill[c],
                                   c % 4 == 3 ? "\n" : "");
    kvshard_writer__out_raw(o, STYLE_TAIL);
    if (p->pp > 1) /* the bars before each stage */
        kvshard_writer__out_raw(o, "<style>\n.kvmap .sb{fill:#000}\n</style>\n");
    kvshard_writer__out_raw(o, "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");

    kvshard_writer__out_raw(o, "<text class=\"hd\" x=\"8\" y=\"20\">");
    if (p->model_type[0])
        kvshard_writer__out_xml(o, p->model_type, strlen(p->model_type));
    else
        kvshard_writer__out_raw(o, "(no model_type)");
    kvshard_writer__out_printf(o, ": %u layers, attention TP %u, layerwise split %u", L, p->tp,
                               p->split);
    if (p->split > 1)
        kvshard_writer__out_printf(o, " (%s rule)", kvshard_ownership_name(p->options->ownership));
    kvshard_writer__out_raw(o, "</text>\n");
    if (fold)
        kvshard_writer__out_printf(o,
                            "<text x=\"8\" y=\"%u\">%u KV layers in %u runs: a row's cells "
                            "repeat the times at its right over the layers at its left",
                            LINE + 20, kvshard__num_kv_layers(m), rows);
    else
        kvshard_writer__out_printf(o,
                            "<text x=\"8\" y=\"%u\">%u KV layers; one cell per layer, %u per "
                            "row; a cell's tooltip names its layer and owner",
                            LINE + 20, kvshard__num_kv_layers(m), COLUMNS);
    if (p->pp > 1)
        kvshard_writer__out_printf(
            o, "; %u pipeline stages, a black bar before a stage's first layer", p->pp);
    kvshard_writer__out_raw(o, "</text>\n");

    write_legend(o, p, legend_top);
    if (owners_cut)
        kvshard_writer__out_printf(o,
                            "<text x=\"8\" y=\"%u\">split ranks %u to %u are not listed: the "
                            "colours repeat every %u ranks, the number in a cell names its "
                            "rank</text>\n",
                            legend_top + (legend_lines - 1) * LINE + 14, OWNERS_SHOWN, p->split - 1,
                            KVSHARD__OWNER_COLOURS);

    kvshard_writer__out_printf(o, "<g class=\"cells\" transform=\"translate(%u,%u)\">\n", left,
                               grid_top);
    uint32_t stage = 0;
    if (fold) {
        uint32_t row = 0;
        for (uint32_t i = 0; i < L && !o->failed; row++) {
            kvshard_runs__run r = kvshard_runs__at(p, i, COLUMNS);
            write_run(o, p, row, r, &stage);
            i += r.period * r.repeats;
        }
        kvshard_writer__out_raw(o, "</g>\n</svg>");
        return;
    }
    for (uint32_t c = 0; c < COLUMNS && c < L; c += 5)
        kvshard_writer__out_printf(o, "<text class=\"ci\" x=\"%u\" y=\"-6\">+%u</text>",
                            c * PITCH + CELL / 2, c);
    kvshard_writer__out_put(o, "\n", 1);
    for (uint32_t r = 0; r < rows && !o->failed; r++) {
        kvshard_writer__out_printf(o,
                            "<g transform=\"translate(0,%u)\"><text class=\"ri\" x=\"-8\" "
                            "y=\"16\">%u</text>\n",
                            r * PITCH, r * COLUMNS);
        uint32_t end = r * COLUMNS + COLUMNS < L ? r * COLUMNS + COLUMNS : L;
        for (uint32_t i = r * COLUMNS; i < end; i++) {
            while (i >= p->stages[stage].first + p->stages[stage].count)
                stage++;
            write_cell(o, p, i, stage);
        }
        kvshard_writer__out_raw(o, "</g>\n");
    }
    kvshard_writer__out_raw(o, "</g>\n</svg>");
}

int kvshard_plan_write_svg(const kvshard_plan *plan, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, plan, write, user))
        return KVSHARD_EINVAL;
    kvshard_writer__out_raw(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    kvshard__plan_view view = kvshard_plan__view_of(plan);
    kvshard_svg__layer_map(&o, &view, false);
    kvshard_writer__out_put(&o, "\n", 1);
    return kvshard_writer__out_finish(&o);
}
