/* Element types of weights, KV cache and recurrent state: names and sizes. */
#ifndef KVSHARD_MODEL_DTYPE_H
#define KVSHARD_MODEL_DTYPE_H

#include "kvshard/kvshard.h"

/* Bytes of one element (AUTO, which is no type, counts as bfloat16). */
unsigned kvshard_dtype__bytes(kvshard_dtype dtype);

/* Either fp8 format: e4m3 (KVSHARD_DTYPE_FP8) or e5m2. Both take one byte
 * and the same scales; only the engines' words tell them apart. */
bool kvshard_dtype__is_fp8(kvshard_dtype dtype);

/* A model dtype name as configs write it: bfloat16/bf16, float16/fp16/half,
 * float32/fp32/float, float8_e4m3fn/float8_e5m2/fp8, with an optional
 * "torch." prefix. */
bool kvshard_dtype__from_name(kvshard_dtype *out, const char *name, size_t len);

#endif /* KVSHARD_MODEL_DTYPE_H */
