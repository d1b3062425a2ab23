/* Dtype names as Hugging Face configs write them, and their sizes. */
#include "model/dtype.h"

#include <string.h>

unsigned kvshard__dtype_bytes(kvshard__dtype dtype)
{
    switch (dtype) {
    case KVSHARD__DTYPE_FP32: return 4;
    case KVSHARD__DTYPE_FP8: return 1;
    case KVSHARD__DTYPE_BF16:
    case KVSHARD__DTYPE_FP16:
    default: return 2;
    }
}

static const struct {
    const char *name;
    kvshard__dtype dtype;
} dtype_names[] = {
    {"bfloat16", KVSHARD__DTYPE_BF16},   {"bf16", KVSHARD__DTYPE_BF16},
    {"float16", KVSHARD__DTYPE_FP16},    {"fp16", KVSHARD__DTYPE_FP16},
    {"half", KVSHARD__DTYPE_FP16},       {"float32", KVSHARD__DTYPE_FP32},
    {"fp32", KVSHARD__DTYPE_FP32},       {"float", KVSHARD__DTYPE_FP32},
    {"fp8", KVSHARD__DTYPE_FP8},         {"float8_e4m3fn", KVSHARD__DTYPE_FP8},
    {"float8_e5m2", KVSHARD__DTYPE_FP8},
};

bool kvshard__dtype_from_name(kvshard__dtype *out, const char *name, size_t len)
{
    if (len > 6 && memcmp(name, "torch.", 6) == 0) {
        name += 6;
        len -= 6;
    }
    for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++) {
        if (strlen(dtype_names[i].name) == len && memcmp(dtype_names[i].name, name, len) == 0) {
            *out = dtype_names[i].dtype;
            return true;
        }
    }
    return false;
}
