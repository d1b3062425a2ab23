/* What kvshard is measured against. This file is its own translation unit,
 * and the build uses no link-time optimisation, so a call from another file
 * into bench_empty_owns() is a real call, as a call into the library is. */
#include "bench.h"

BENCH_NOINLINE BENCH_ALIGNED bool bench_empty_owns(const kvshard_plan *plan, uint32_t plan_rank,
                                                   uint32_t layer)
{
    (void)plan;
    (void)plan_rank;
    (void)layer;
    return false;
}

/* FNV-1a, 64-bit: offset basis 14695981039346656037, prime 1099511628211.
 * Each word goes in as its 8 bytes, low byte first, one multiply per byte. */
BENCH_NOINLINE uint64_t bench_fnv1a_bytewise(const uint64_t *words, size_t count)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < count; i++) {
        uint64_t w = words[i];
        for (int b = 0; b < 8; b++) {
            h ^= (w >> (8 * b)) & 0xFFu;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}
