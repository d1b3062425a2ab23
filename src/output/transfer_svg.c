/* The transfer's edge table as a picture: P ranks as boxes on the left, D
 * ranks on the right, and one band per edge whose width is to scale with
 * the edge's bytes for the request. Every band is labelled beside its D
 * rank and names its layers and bytes on hover, so a band too thin to see
 * is still read. */
#include "output/transfer_svg.h"

#include "base/alloc.h"
#include "explore/transfer.h"
#include "output/svg.h"
#include "output/transfer_out.h"
#include "output/writer.h"

#include <stdio.h>
#include <string.h>

#define put kvshard_writer__out_raw

#define MARGIN 8u
#define BOX_WIDTH 110u
#define BAND_RUN 340u    /* horizontal run of a band, box to box */
#define LABEL_WIDTH 400u /* room for a band's label right of the D boxes */
#define WIDTH (MARGIN + BOX_WIDTH + BAND_RUN + BOX_WIDTH + MARGIN + LABEL_WIDTH)
#define LINE 24u
#define LEGEND_ENTRY 120u
#define LEGEND_PER_LINE ((WIDTH - 2 * MARGIN) / LEGEND_ENTRY)
/* A slot holds one band at a rank's box: at least a label's height, so the
 * labels of thin bands do not overlap. */
#define SLOT_MIN 16.0
#define SLOT_GAP 4.0
#define BOX_PAD 6.0
#define BOX_MIN 40.0 /* two lines of the box's text */
#define RANK_GAP 12.0
#define HIT_WIDTH 8.0       /* a band's pointer area, however thin the band */
#define COMPONENT_CODES 14u /* codes run from 1 to 13 */

static const char STYLE[] = "<style>\n"
                            ".kvxfer text{font-family:sans-serif;font-size:12px;fill:#000}\n"
                            ".kvxfer .hd{font-size:15px;font-weight:bold}\n"
                            ".kvxfer .rank{fill:#f2f2f2;stroke:#595959;stroke-width:1}\n"
                            ".kvxfer .rn{font-weight:bold;text-anchor:middle}\n"
                            ".kvxfer .rb{font-size:11px;text-anchor:middle}\n"
                            ".kvxfer .lb{font-size:11px}\n"
                            ".kvxfer .key{stroke:#595959;stroke-width:1}\n"
                            ".kvxfer .band{fill:none;stroke-opacity:0.8}\n"
                            ".kvxfer .hit{fill:none;stroke:#000;stroke-opacity:0}\n"
                            "</style>\n";

/* One rank's box: where it is and what passes through it. */
typedef struct column {
    double top, height, cursor;
    uint64_t bytes;
    size_t edges;
    uint32_t stage, tp; /* from its first edge */
} column;

/* The box of global rank `rank` among a side's ranks (increasing). */
static size_t box_of(const kvshard__transfer_side *s, uint32_t rank)
{
    size_t lo = 0, hi = s->rank_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->global_ranks[mid] <= rank)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static double band_width(const kvshard_transfer_edge *e, uint64_t max_bytes)
{
    return max_bytes ? (double)e->bytes * KVSHARD_TRANSFER_SVG__BAND_MAX / (double)max_bytes : 0.0;
}

static double slot_of(double width)
{
    return (width > SLOT_MIN ? width : SLOT_MIN) + SLOT_GAP;
}

/* Each box's height from the slots of its edges, then the boxes stacked
 * from `top`; returns the column's bottom. */
static double stack(column *c, size_t count, double top)
{
    for (size_t k = 0; k < count; k++) {
        c[k].height += 2 * BOX_PAD;
        if (c[k].height < BOX_MIN)
            c[k].height = BOX_MIN;
        c[k].top = top;
        c[k].cursor = top + BOX_PAD;
        top += c[k].height + RANK_GAP;
    }
    return top;
}

static void side_words(kvshard__out *o, const char *name, const kvshard__transfer_side *s)
{
    kvshard_writer__out_printf(o, "%s TP %u", name, s->tp_size);
    if (s->pp_size > 1)
        kvshard_writer__out_printf(o, " \xC3\x97 %u stages", s->pp_size);
    if (s->split > 1)
        kvshard_writer__out_printf(o, " (split %u)", s->split);
}

static void write_box(kvshard__out *o, const char *side, const char *verb, uint32_t x,
                      uint32_t rank, const column *c)
{
    kvshard_writer__out_printf(o, "<g><title>%s rank %u", side, rank);
    if (c->edges) {
        kvshard_writer__out_printf(o, " (stage %u, TP %u) %s ", c->stage, c->tp, verb);
        kvshard_writer__out_grouped(o, c->bytes);
        kvshard_writer__out_printf(o, " B in %zu edge%s", c->edges, c->edges == 1 ? "" : "s");
    } else {
        kvshard_writer__out_printf(o, " %s nothing", verb);
    }
    kvshard_writer__out_printf(o,
                               "</title><rect class=\"rank\" x=\"%u\" y=\"%.3f\" width=\"%u\" "
                               "height=\"%.3f\"/>",
                               x, c->top, BOX_WIDTH, c->height);
    double middle = c->top + c->height / 2;
    kvshard_writer__out_printf(o, "<text class=\"rn\" x=\"%u\" y=\"%.3f\">%s %u</text>",
                               x + BOX_WIDTH / 2, middle - 3, side, rank);
    kvshard_writer__out_printf(o, "<text class=\"rb\" x=\"%u\" y=\"%.3f\">", x + BOX_WIDTH / 2,
                               middle + 12);
    kvshard_writer__out_grouped(o, c->bytes);
    put(o, " B</text></g>\n");
}

/* The edge's band from y0 at the P box to y1 at the D box, its hover text
 * and its label. */
static void write_band(kvshard__out *o, const kvshard_transfer_edge *e, unsigned colour,
                       double width, double y0, double y1)
{
    const uint32_t x0 = MARGIN + BOX_WIDTH, x1 = x0 + BAND_RUN, bend = BAND_RUN / 2;
    kvshard_writer__out_printf(o, "<g class=\"edge\"><title>P %u \xE2\x86\x92 D %u: ", e->src,
                               e->dst);
    kvshard_writer__out_xml(o, e->component, strlen(e->component));
    kvshard_writer__out_printf(o, " units [%u, %u) of layer%s ", e->unit_lo, e->unit_hi,
                               e->layer_count == 1 ? "" : "s");
    kvshard_transfer_out__runs(o, e->layers, e->layer_count);
    put(o, ": ");
    kvshard_writer__out_grouped(o, e->bytes_per_token);
    put(o, " B/token + ");
    kvshard_writer__out_grouped(o, e->bytes_fixed);
    put(o, " B = ");
    kvshard_writer__out_grouped(o, e->bytes);
    put(o, " B</title>\n");
    char d[160];
    snprintf(d, sizeof d, "M%u %.3fC%u %.3f %u %.3f %u %.3f", x0, y0, x0 + bend, y0, x1 - bend, y1,
             x1, y1);
    kvshard_writer__out_printf(o, "<path class=\"band c%u\" d=\"%s\" stroke-width=\"%.3f\"/>",
                               colour, d, width);
    kvshard_writer__out_printf(o, "<path class=\"hit\" d=\"%s\" stroke-width=\"%.0f\"/>\n", d,
                               width > HIT_WIDTH ? width : HIT_WIDTH);
    kvshard_writer__out_printf(o, "<text class=\"lb\" x=\"%u\" y=\"%.3f\">from P %u: ",
                               x1 + BOX_WIDTH + MARGIN, y1 + 4, e->src);
    kvshard_writer__out_xml(o, e->component, strlen(e->component));
    kvshard_writer__out_printf(o, " [%u, %u) \xC3\x97 %zu layer%s, ", e->unit_lo, e->unit_hi,
                               e->layer_count, e->layer_count == 1 ? "" : "s");
    kvshard_writer__out_grouped(o, e->bytes);
    put(o, " B</text></g>\n");
}

int kvshard_transfer_write_svg(const kvshard_transfer *t, kvshard_write_fn write, void *user)
{
    kvshard__out o;
    if (!kvshard_writer__out_open(&o, t, write, user) || !t->totals.has_bytes)
        return KVSHARD_EINVAL;
    const kvshard__transfer_side *ps = &t->prefill, *ds = &t->decode;
    size_t np = ps->rank_count, nd = ds->rank_count;
    column *cols = kvshard_alloc__calloc(&t->alloc, np + nd ? np + nd : 1, sizeof *cols);
    if (!cols)
        return KVSHARD_ENOMEM;
    column *pc = cols, *dc = cols + np;

    /* The components in order of first use pick the colours, so the few a
     * model moves get distinct ones. */
    int colour_of[COMPONENT_CODES];
    const char *component_named[COMPONENT_CODES];
    unsigned components = 0;
    for (size_t c = 0; c < COMPONENT_CODES; c++)
        colour_of[c] = -1;
    uint64_t max_bytes = 0;
    for (size_t i = 0; i < t->edge_count; i++) {
        const kvshard_transfer_edge *e = &t->edges[i];
        uint32_t code = e->component_code < COMPONENT_CODES ? e->component_code : 0;
        if (colour_of[code] < 0) {
            colour_of[code] = (int)components;
            component_named[components++] = e->component;
        }
        if (e->bytes > max_bytes)
            max_bytes = e->bytes;
    }
    for (size_t i = 0; i < t->edge_count; i++) {
        const kvshard_transfer_edge *e = &t->edges[i];
        double slot = slot_of(band_width(e, max_bytes));
        column *ends[2] = {&pc[box_of(ps, e->src)], &dc[box_of(ds, e->dst)]};
        uint32_t stage[2] = {e->src_stage, e->dst_stage}, tp[2] = {e->src_tp, e->dst_tp};
        for (int k = 0; k < 2; k++) {
            if (!ends[k]->edges) {
                ends[k]->stage = stage[k];
                ends[k]->tp = tp[k];
            }
            ends[k]->height += slot;
            ends[k]->bytes += e->bytes;
            ends[k]->edges++;
        }
    }
    uint32_t legend_lines = (components + LEGEND_PER_LINE - 1) / LEGEND_PER_LINE;
    double top = 4 * LINE + legend_lines * LINE + LINE;
    double bottom = stack(pc, np, top), d_bottom = stack(dc, nd, top);
    if (d_bottom > bottom)
        bottom = d_bottom;
    uint32_t height = (uint32_t)bottom + MARGIN;

    put(&o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    kvshard_writer__out_printf(&o,
                               "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"kvxfer\" "
                               "width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" role=\"img\">\n"
                               "<title>Transfer: ",
                               WIDTH, height, WIDTH, height);
    kvshard_writer__out_xml(&o, t->model_type, strlen(t->model_type));
    kvshard_writer__out_printf(&o, ", P TP %u \xE2\x86\x92 D TP %u, %zu edges</title>\n",
                               ps->tp_size, ds->tp_size, t->edge_count);
    put(&o, STYLE);
    put(&o, "<style>\n");
    for (unsigned c = 0; c < components; c++)
        kvshard_writer__out_printf(&o, ".kvxfer .c%u{stroke:%s}\n", c,
                                   kvshard_svg__owner_fill[c % KVSHARD__OWNER_COLOURS]);
    put(&o, "</style>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n");

    const kvshard_transfer_totals *tt = &t->totals;
    put(&o, "<text class=\"hd\" x=\"8\" y=\"20\">");
    kvshard_writer__out_xml(&o, t->model_type, strlen(t->model_type));
    put(&o, ": ");
    side_words(&o, "P", ps);
    put(&o, " \xE2\x86\x92 ");
    side_words(&o, "D", ds);
    put(&o, ", ");
    kvshard_writer__out_grouped(&o, tt->tokens);
    put(&o, " tokens</text>\n");
    kvshard_writer__out_printf(&o, "<text x=\"8\" y=\"%u\">", LINE + 20);
    kvshard_writer__out_grouped(&o, tt->wire);
    kvshard_writer__out_printf(&o, " B on the wire in %zu edge%s", t->edge_count,
                               t->edge_count == 1 ? "" : "s");
    if (tt->has_time) {
        put(&o, ", ");
        kvshard_writer__out_grouped(&o, tt->time_us);
        kvshard_writer__out_printf(&o, " \xC2\xB5s over NIC %s", tt->nic);
    }
    put(&o, "; digest ");
    kvshard_writer__out_hex64(&o, kvshard_transfer_digest(t));
    put(&o, "</text>\n");
    kvshard_writer__out_printf(&o, "<text x=\"8\" y=\"%u\">", 2 * LINE + 20);
    if (max_bytes) {
        kvshard_writer__out_printf(&o, "A band's width is to scale with its bytes: %.0f px for ",
                                   KVSHARD_TRANSFER_SVG__BAND_MAX);
        kvshard_writer__out_grouped(&o, max_bytes);
        put(&o, " B; a band's tooltip names its layers and bytes");
    } else {
        put(&o, "Nothing moves");
    }
    put(&o, "</text>\n");
    for (unsigned c = 0; c < components && !o.failed; c++)
        kvshard_writer__out_printf(&o,
                                   "<g transform=\"translate(%u,%u)\"><rect class=\"key\" "
                                   "width=\"20\" height=\"12\" fill=\"%s\"/><text x=\"26\" "
                                   "y=\"11\">%s</text></g>\n",
                                   MARGIN + (c % LEGEND_PER_LINE) * LEGEND_ENTRY,
                                   3 * LINE + 6 + (c / LEGEND_PER_LINE) * LINE,
                                   kvshard_svg__owner_fill[c % KVSHARD__OWNER_COLOURS],
                                   component_named[c]);
    kvshard_writer__out_printf(&o,
                               "<text class=\"hd\" x=\"%u\" y=\"%.0f\">prefill</text>"
                               "<text class=\"hd\" x=\"%u\" y=\"%.0f\">decode</text>\n",
                               MARGIN, top - 8, MARGIN + BOX_WIDTH + BAND_RUN, top - 8);

    for (size_t k = 0; k < np && !o.failed; k++)
        write_box(&o, "P", "sends", MARGIN, ps->global_ranks[k], &pc[k]);
    for (size_t k = 0; k < nd && !o.failed; k++)
        write_box(&o, "D", "receives", MARGIN + BOX_WIDTH + BAND_RUN, ds->global_ranks[k], &dc[k]);
    for (size_t i = 0; i < t->edge_count && !o.failed; i++) {
        const kvshard_transfer_edge *e = &t->edges[i];
        double width = band_width(e, max_bytes), slot = slot_of(width);
        column *p = &pc[box_of(ps, e->src)], *d = &dc[box_of(ds, e->dst)];
        uint32_t code = e->component_code < COMPONENT_CODES ? e->component_code : 0;
        write_band(&o, e, (unsigned)colour_of[code], width, p->cursor + slot / 2,
                   d->cursor + slot / 2);
        p->cursor += slot;
        d->cursor += slot;
    }
    put(&o, "</svg>\n");
    kvshard_alloc__free(&t->alloc, cols);
    return kvshard_writer__out_finish(&o);
}
