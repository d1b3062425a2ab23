/* The transfer's writers, kvshard_transfer_write_json() and
 * kvshard_transfer_write_text(), which kvshard/output.h declares. */
#ifndef KVSHARD_OUTPUT_TRANSFER_OUT_H
#define KVSHARD_OUTPUT_TRANSFER_OUT_H

#include "kvshard/output.h"

#endif /* KVSHARD_OUTPUT_TRANSFER_OUT_H */
