/* Names crafted to collide under the unkeyed hashes kvshard 0.3 used for
 * its tables of input names, so that every name of a set lands on one slot
 * of any table up to 2^20 slots: tensor and shard names against the
 * safetensors reader's multiply-xorshift hash, skipped flags against
 * FNV-1a. Under a keyed hash they are ordinary names. Written once for the
 * tests (which count the slots a lookup passes) and the benchmark (which
 * times them against ordinary names). */
#ifndef KVSHARD_TESTS_CRAFTED_NAMES_H
#define KVSHARD_TESTS_CRAFTED_NAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the safetensors reader's old hash --------------------------------------------- */

#define CRAFTED_M1 0xBF58476D1CE4E5B9ull

/* One word's step of the old hash: multiply, then xorshift by 29. */
static inline uint64_t crafted_step(uint64_t h)
{
    h *= CRAFTED_M1;
    return h ^ (h >> 29);
}

static inline uint64_t crafted_unstep(uint64_t h)
{
    h ^= (h >> 29) ^ (h >> 58);
    uint64_t inv = CRAFTED_M1; /* Newton's iteration for the inverse mod 2^64 */
    for (int i = 0; i < 5; i++)
        inv *= 2 - CRAFTED_M1 * inv;
    return h * inv;
}

/* The old hash of a 16-byte name after its two words (the tail is empty,
 * so the rest depends on this state alone). */
static inline uint64_t crafted_state16(const char *s)
{
    uint64_t w0, w1, h = 0x9E3779B97F4A7C15ull ^ 16u;
    memcpy(&w0, s, 8);
    memcpy(&w1, s + 8, 8);
    return crafted_step(crafted_step(h ^ w0) ^ w1);
}

/* A byte a JSON string, a file name and a flag's text all take as it is. */
static inline bool crafted_plain(unsigned char c)
{
    return c > 0x20 && c < 0x7F && c != '"' && c != '\\' && c != '/' && c != '=' && c != '-';
}

/* `n` names of 16 bytes (each in 17, NUL-ended) whose old hash is one value:
 * the first word counts up, the second is solved for. */
static inline char *crafted_tensor_names(size_t n)
{
    char *out = malloc(n * 17);
    if (!out)
        return NULL;
    const uint64_t target = 0x0123456789ABCDEFull;
    uint64_t need = crafted_unstep(target);
    size_t k = 0;
    for (uint64_t v = 0; k < n; v++) {
        char name[17];
        uint64_t x = v;
        name[0] = 'w';
        for (int i = 1; i < 8; i++, x /= 26)
            name[i] = (char)('a' + x % 26);
        uint64_t w0, h = 0x9E3779B97F4A7C15ull ^ 16u;
        memcpy(&w0, name, 8);
        uint64_t w1 = need ^ crafted_step(h ^ w0);
        memcpy(name + 8, &w1, 8);
        bool ok = true;
        for (int i = 8; i < 16 && ok; i++)
            ok = crafted_plain((unsigned char)name[i]);
        if (!ok)
            continue;
        name[16] = '\0';
        memcpy(out + 17 * k++, name, 17);
    }
    return out;
}

/* `n` ordinary names of the same length. */
static inline char *plain_tensor_names(size_t n)
{
    char *out = malloc(n * 17);
    if (!out)
        return NULL;
    for (size_t k = 0; k < n; k++) {
        size_t x = k;
        memcpy(out + 17 * k, "w.layers.", 9);
        for (int i = 15; i >= 9; i--, x /= 10)
            out[17 * k + (size_t)i] = (char)('0' + x % 10);
        out[17 * k + 16] = '\0';
    }
    return out;
}

/* ---- FNV-1a of the old skipped-flags table ---------------------------------------- */

#define CRAFTED_FNV_PRIME 0x100000001b3ull
#define CRAFTED_LOW_BITS 20u
#define CRAFTED_BLOCK 3u

static inline uint64_t crafted_fnv(uint64_t h, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * CRAFTED_FNV_PRIME;
    return h;
}

/* 2^steps flags "--" + steps blocks of 3 letters, `stride` bytes apart
 * (NUL-ended), with one FNV-1a state in their low 20 bits: the low bits of
 * a multiply depend on the low bits of its inputs alone, so two blocks that
 * meet there from one state stay met whatever follows. NULL when out of
 * memory or when a step finds no pair. */
static inline char *crafted_flags(unsigned steps, size_t *stride)
{
    *stride = 2 + CRAFTED_BLOCK * steps + 1;
    size_t n = (size_t)1 << steps, mask = ((size_t)1 << CRAFTED_LOW_BITS) - 1;
    char(*pairs)[2][CRAFTED_BLOCK] = malloc(steps * sizeof *pairs);
    uint32_t *first = malloc((mask + 1) * sizeof *first);
    char *out = malloc(n * *stride);
    if (!pairs || !first || !out) {
        free(pairs);
        free(first);
        free(out);
        return NULL;
    }
    static const char letters[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    const uint32_t base = sizeof letters - 1, combos = base * base * base;
    uint64_t state = crafted_fnv(0xcbf29ce484222325ull, "--", 2);
    for (unsigned s = 0; s < steps; s++) {
        memset(first, 0xFF, (mask + 1) * sizeof *first);
        bool found = false;
        for (uint32_t c = 0; c < combos && !found; c++) {
            char block[CRAFTED_BLOCK] = {letters[c % base], letters[c / base % base],
                                         letters[c / base / base]};
            size_t low = (size_t)crafted_fnv(state, block, CRAFTED_BLOCK) & mask;
            if (first[low] == UINT32_MAX) {
                first[low] = c;
                continue;
            }
            uint32_t d = first[low];
            char other[CRAFTED_BLOCK] = {letters[d % base], letters[d / base % base],
                                         letters[d / base / base]};
            memcpy(pairs[s][0], other, CRAFTED_BLOCK);
            memcpy(pairs[s][1], block, CRAFTED_BLOCK);
            state = crafted_fnv(state, block, CRAFTED_BLOCK);
            found = true;
        }
        if (!found) {
            free(pairs);
            free(first);
            free(out);
            return NULL;
        }
    }
    for (size_t k = 0; k < n; k++) {
        char *f = out + k * *stride;
        f[0] = f[1] = '-';
        for (unsigned s = 0; s < steps; s++)
            memcpy(f + 2 + CRAFTED_BLOCK * s, pairs[s][k >> s & 1], CRAFTED_BLOCK);
        f[*stride - 1] = '\0';
    }
    free(pairs);
    free(first);
    return out;
}

/* 2^steps ordinary flags of the same length. */
static inline char *plain_flags(unsigned steps, size_t *stride)
{
    *stride = 2 + CRAFTED_BLOCK * steps + 1;
    size_t n = (size_t)1 << steps;
    char *out = malloc(n * *stride);
    if (!out)
        return NULL;
    for (size_t k = 0; k < n; k++) {
        char *f = out + k * *stride;
        memset(f, 'x', *stride - 1);
        f[0] = f[1] = '-';
        size_t x = k;
        for (size_t i = *stride - 2; i >= 2 && x; i--, x /= 10)
            f[i] = (char)('0' + x % 10);
        f[*stride - 1] = '\0';
    }
    return out;
}

#endif /* KVSHARD_TESTS_CRAFTED_NAMES_H */
