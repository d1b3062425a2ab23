/* Dtype names as Hugging Face configs write them, and their sizes. */
#include "model/dtype.h"

#include <string.h>

unsigned kvshard_dtype__bytes(kvshard_dtype dtype)
{
    switch (dtype) {
    case KVSHARD_DTYPE_FP32: return 4;
    case KVSHARD_DTYPE_FP8:
    case KVSHARD_DTYPE_FP8_E5M2:
    case KVSHARD_DTYPE_INT8: return 1;
    case KVSHARD_DTYPE_AUTO:
    case KVSHARD_DTYPE_BF16:
    case KVSHARD_DTYPE_FP16:
    default: return 2;
    }
}

static const struct {
    const char *name;
    kvshard_dtype dtype;
} dtype_names[] = {
    {"bfloat16", KVSHARD_DTYPE_BF16},   {"bf16", KVSHARD_DTYPE_BF16},
    {"float16", KVSHARD_DTYPE_FP16},    {"fp16", KVSHARD_DTYPE_FP16},
    {"half", KVSHARD_DTYPE_FP16},       {"float32", KVSHARD_DTYPE_FP32},
    {"fp32", KVSHARD_DTYPE_FP32},       {"float", KVSHARD_DTYPE_FP32},
    {"fp8", KVSHARD_DTYPE_FP8},         {"float8_e4m3fn", KVSHARD_DTYPE_FP8},
    {"float8_e5m2", KVSHARD_DTYPE_FP8},
};

bool kvshard_dtype__is_fp8(kvshard_dtype dtype)
{
    return dtype == KVSHARD_DTYPE_FP8 || dtype == KVSHARD_DTYPE_FP8_E5M2;
}

bool kvshard_dtype__from_name(kvshard_dtype *out, const char *name, size_t len)
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

const char *kvshard_dtype_name(kvshard_dtype dtype)
{
    switch (dtype) {
    case KVSHARD_DTYPE_AUTO: return "auto";
    case KVSHARD_DTYPE_BF16: return "bfloat16";
    case KVSHARD_DTYPE_FP16: return "float16";
    case KVSHARD_DTYPE_FP8: return "fp8";
    case KVSHARD_DTYPE_FP32: return "float32";
    case KVSHARD_DTYPE_INT8: return "int8";
    case KVSHARD_DTYPE_FP8_E5M2: return "fp8_e5m2";
    default: return "unknown";
    }
}
