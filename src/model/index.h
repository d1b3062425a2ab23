/* The reader of what layers keep beside their KV (index.c). */
#ifndef KVSHARD_MODEL_INDEX_H
#define KVSHARD_MODEL_INDEX_H

#include "model/reader.h"

/* Which layers keep index keys, and which compressed layers keep their own
 * stream or read another's. */
int kvshard_index__read_index_keys(kvshard__reader *r);

#endif /* KVSHARD_MODEL_INDEX_H */
