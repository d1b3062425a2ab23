/* The transfer's picture, kvshard_transfer_write_svg(), which
 * kvshard/output.h declares. */
#ifndef KVSHARD_OUTPUT_TRANSFER_SVG_H
#define KVSHARD_OUTPUT_TRANSFER_SVG_H

#include "kvshard/output.h"

/* The widest band, px: the edge with the most bytes. */
#define KVSHARD_TRANSFER_SVG__BAND_MAX 96.0

#endif /* KVSHARD_OUTPUT_TRANSFER_SVG_H */
