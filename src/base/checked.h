/* Overflow-checked 64-bit arithmetic: every byte figure goes through it. */
#ifndef KVSHARD_BASE_CHECKED_H
#define KVSHARD_BASE_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* a * b and a + b; false on 64-bit overflow (the result is then unset). */
static inline bool kvshard__mul(uint64_t *out, uint64_t a, uint64_t b)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

static inline bool kvshard__add(uint64_t *out, uint64_t a, uint64_t b)
{
    if (b > UINT64_MAX - a)
        return false;
    *out = a + b;
    return true;
}

/* ceil(a / b) for b > 0, without overflow. */
static inline uint64_t kvshard__ceil_div(uint64_t a, uint64_t b)
{
    return a / b + (a % b != 0);
}

#endif /* KVSHARD_BASE_CHECKED_H */
