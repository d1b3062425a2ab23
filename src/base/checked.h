/* Overflow-checked 64-bit arithmetic: every byte figure goes through it. */
#ifndef KVSHARD_BASE_CHECKED_H
#define KVSHARD_BASE_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* a * b and a + b; false on 64-bit overflow (the result is then unset). */
static inline bool kvshard__mul(uint64_t *out, uint64_t a, uint64_t b)
{
#if defined(__GNUC__) || defined(__clang__)
    /* The processor's overflow flag: no 64-bit division on the way. */
    uint64_t product;
    if (__builtin_mul_overflow(a, b, &product))
        return false;
    *out = product;
#else
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
#endif
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

/* A chain of checked products and sums that remembers whether any of them
 * overflowed, so a formula reads as it is written and is tested once at its
 * end. `in_block` marks the part of a formula scaled by the block size, so
 * that an overflow there is blamed on block_size rather than on the model. */
typedef struct kvshard__calc {
    bool overflow;
    bool in_block;
    bool block_blamed; /* the first overflow came from a figure scaled by block_size */
} kvshard__calc;

static inline void kvshard__calc_overflowed(kvshard__calc *c)
{
    if (!c->overflow)
        c->block_blamed = c->in_block;
    c->overflow = true;
}

static inline uint64_t kvshard__calc_mul(kvshard__calc *c, uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    if (!kvshard__mul(&r, a, b))
        kvshard__calc_overflowed(c);
    return r;
}

static inline uint64_t kvshard__calc_add(kvshard__calc *c, uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    if (!kvshard__add(&r, a, b))
        kvshard__calc_overflowed(c);
    return r;
}

#endif /* KVSHARD_BASE_CHECKED_H */
