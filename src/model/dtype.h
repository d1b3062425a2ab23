/* Data types of weights, KV cache and recurrent state: names and sizes. */
#ifndef KVSHARD_MODEL_DTYPE_H
#define KVSHARD_MODEL_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

typedef enum kvshard__dtype {
    KVSHARD__DTYPE_BF16,
    KVSHARD__DTYPE_FP16,
    KVSHARD__DTYPE_FP32,
    KVSHARD__DTYPE_FP8
} kvshard__dtype;

/* Bytes of one element. */
unsigned kvshard__dtype_bytes(kvshard__dtype dtype);

/* A dtype name as configs write it ("bfloat16", "torch.float16", "fp8", ...). */
bool kvshard__dtype_from_name(kvshard__dtype *out, const char *name, size_t len);

#endif /* KVSHARD_MODEL_DTYPE_H */
