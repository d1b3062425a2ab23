/* The transfer's writers, kvshard_transfer_write_json() and
 * kvshard_transfer_write_text(), which kvshard/output.h declares. */
#ifndef KVSHARD_OUTPUT_TRANSFER_OUT_H
#define KVSHARD_OUTPUT_TRANSFER_OUT_H

#include "kvshard/output.h"
#include "output/writer.h"

/* "3, 11, 19" or "0-2, 4-6": increasing numbers as runs of consecutive
 * ones, as the edge table and the picture's tooltips list an edge's layers. */
void kvshard_transfer_out__runs(kvshard__out *o, const uint32_t *v, size_t count);

#endif /* KVSHARD_OUTPUT_TRANSFER_OUT_H */
