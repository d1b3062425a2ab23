/*
 * kvshard output: a plan, a comparison and a fit as JSON, text and SVG, and
 * the HTML report, through a callback (kvshard.h's conventions hold here
 * too).
 *
 * Experimental until kvshard 1.0: the JSON documents and the text written
 * here, and the option structs declared here, may change in a minor
 * release.
 *
 * A build of kvshard with KVSHARD_BUILD_EXPLORE=OFF leaves this part out:
 * neither this header nor its functions are installed.
 */
#ifndef KVSHARD_OUTPUT_H
#define KVSHARD_OUTPUT_H

#include "kvshard/kvshard.h"
#include "kvshard/explore.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/** ## Plans */
/* ------------------------------------------------------------------------ */

/** Receives output text. Return 0 to continue, non-zero to stop: the writing
 *  call then stops at once and fails with KVSHARD_EWRITE. */
typedef int (*kvshard_write_fn)(void *user, const char *data, size_t len);

/** Write the plan as its JSON document (docs/planning.md lists every
 *  field), followed by a newline. KVSHARD_EINVAL for NULL arguments,
 *  KVSHARD_EWRITE when the writer fails. */
KVSHARD_EXPORT int kvshard_plan_write_json(const kvshard_plan *plan, kvshard_write_fn write,
                                           void *user);
/** Write the plan as the text `kvshard plan` prints. Errors as
 *  kvshard_plan_write_json(). */
KVSHARD_EXPORT int kvshard_plan_write_text(const kvshard_plan *plan, kvshard_write_fn write,
                                           void *user);
/** Write the plan's layer map as a standalone SVG image. Errors as
 *  kvshard_plan_write_json(). */
KVSHARD_EXPORT int kvshard_plan_write_svg(const kvshard_plan *plan, kvshard_write_fn write,
                                          void *user);

/* ------------------------------------------------------------------------ */
/** ## Comparisons and the report */
/* ------------------------------------------------------------------------ */

/** Write the comparison as JSON (docs/planning.md). Errors as
 *  kvshard_plan_write_json(). */
KVSHARD_EXPORT int kvshard_comparison_write_json(const kvshard_comparison *comparison,
                                                 kvshard_write_fn write, void *user);
/** Write the comparison as the table `kvshard compare` prints. */
KVSHARD_EXPORT int kvshard_comparison_write_text(const kvshard_comparison *comparison,
                                                 kvshard_write_fn write, void *user);

/** What the report says it was made from, in the lines under its title.
 *  Start from KVSHARD_REPORT_OPTIONS_INIT. */
typedef struct kvshard_report_options {
    size_t size;
    /** The input file, as the page names it; NULL: none. */
    const char *source;
    /** The command line that made the page (argv[0] first); argc 0: none. */
    int argc;
    const char *const *argv;
} kvshard_report_options;

#define KVSHARD_REPORT_OPTIONS_INIT { sizeof(kvshard_report_options), NULL, 0, NULL }

/**
 * Write one self-contained HTML page (inline SVG and CSS, nothing fetched):
 * the layer map of `plan`, each rank's memory, the capacity, the comparison
 * of split sizes (`comparison` may be NULL to leave it out), the warnings and
 * the digest. `options` NULL means KVSHARD_REPORT_OPTIONS_INIT. Errors as
 * kvshard_plan_write_json(), and KVSHARD_EINVAL for an unknown options size.
 */
KVSHARD_EXPORT int kvshard_report_write_html(const kvshard_plan *plan,
                                             const kvshard_comparison *comparison,
                                             const kvshard_report_options *options,
                                             kvshard_write_fn write, void *user);

/* ------------------------------------------------------------------------ */
/** ## Fits */
/* ------------------------------------------------------------------------ */

/** The fit as `kvshard fit --format=json` writes it. */
KVSHARD_EXPORT int kvshard_fit_write_json(const kvshard_fit *fit, kvshard_write_fn write,
                                          void *user);
/** The fit as `kvshard fit` prints it: the top `top` rows (0: 10). */
KVSHARD_EXPORT int kvshard_fit_write_text(const kvshard_fit *fit, size_t top,
                                          kvshard_write_fn write, void *user);

/* ------------------------------------------------------------------------ */
/** ## Transfers */
/* ------------------------------------------------------------------------ */

/** The transfer as `kvshard transfer --format=json` writes it. */
KVSHARD_EXPORT int kvshard_transfer_write_json(const kvshard_transfer *transfer,
                                               kvshard_write_fn write, void *user);
/** The transfer as `kvshard transfer` prints it: the sides, the request,
 *  the bytes, the busiest ranks and the time, the edge table, the warnings
 *  and the digest line. */
KVSHARD_EXPORT int kvshard_transfer_write_text(const kvshard_transfer *transfer,
                                               kvshard_write_fn write, void *user);
/** The transfer's edge table as a standalone SVG image, as `kvshard
 *  transfer --format=svg` writes it: P ranks as boxes on the left, D ranks
 *  on the right and one band per edge, its width to scale with the edge's
 *  bytes for the request, its layers and bytes in its tooltip. Errors as
 *  kvshard_transfer_write_json(), and KVSHARD_EINVAL for a transfer made
 *  without a request length (the widths are the request's bytes). */
KVSHARD_EXPORT int kvshard_transfer_write_svg(const kvshard_transfer *transfer,
                                              kvshard_write_fn write, void *user);

#ifdef __cplusplus
}
#endif

#endif /* KVSHARD_OUTPUT_H */
