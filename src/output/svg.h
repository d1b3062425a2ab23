/* The layer map as SVG, shared by kvshard_plan_write_svg() and the HTML
 * report, and the small pieces of wording both use. */
#ifndef KVSHARD_OUTPUT_SVG_H
#define KVSHARD_OUTPUT_SVG_H

#include "output/writer.h"
#include "plan/view.h"

/* Owner colours: split rank s is drawn in colour s % KVSHARD__OWNER_COLOURS;
 * the rank's number is written in every cell, so the colour is never the only
 * mark. */
#define KVSHARD__OWNER_COLOURS 8

/* Their fills, "#rrggbb"; black text on each has a contrast of 5.4:1 or more. */
extern const char *const kvshard_svg__owner_fill[KVSHARD__OWNER_COLOURS];

/* The <svg> element of the layer map (no XML declaration): a header, a
 * legend and one <rect class="layer ..."> per decoder layer with a <title>
 * naming its index and owner. Its CSS is scoped under the class "kvmap".
 * The size grows linearly with the layers: at most KVSHARD__SVG_CELL_BYTES
 * per layer beyond a fixed part. With `fold`, a map of more than
 * KVSHARD_RUNS__FOLD_AFTER layers is drawn in runs instead (output/runs.h):
 * one <g class="run"> row per run, whose cells (<rect class="layer ...">
 * without an id) stand for every layer the run repeats them over. */
void kvshard_svg__layer_map(kvshard__out *o, const kvshard__plan_view *plan, bool fold);

/* Upper bound on the bytes one layer's cell takes, for the size checks. */
#define KVSHARD__SVG_CELL_BYTES 256u


#endif /* KVSHARD_OUTPUT_SVG_H */
