/* The keyed hash of the tables keyed by input names (base/hash.h). */
#include "base/hash.h"

#include <string.h>
#include <time.h>

_Thread_local uint64_t kvshard_hash__probes;

/* The 128-bit product of two words folded to 64 bits (high half XOR low
 * half). Each bit of the result depends on both words, so a difference in
 * one cannot be cancelled by a difference elsewhere without knowing the
 * other: mixing a secret key into both makes collisions a matter of luck. */
#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 wide_product;

static inline uint64_t fold_mul(uint64_t a, uint64_t b)
{
    wide_product p = (wide_product)a * b;
    return (uint64_t)p ^ (uint64_t)(p >> 64);
}
#else
static inline uint64_t fold_mul(uint64_t a, uint64_t b)
{
    uint64_t al = a & 0xFFFFFFFFu, ah = a >> 32, bl = b & 0xFFFFFFFFu, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (lh & 0xFFFFFFFFu) + (hl & 0xFFFFFFFFu);
    return ((ll & 0xFFFFFFFFu) | mid << 32) ^ (hh + (lh >> 32) + (hl >> 32) + (mid >> 32));
}
#endif

/* splitmix64's finalizer: every input bit reaches every output bit. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

kvshard__hash_key kvshard_hash__key(uint64_t seed)
{
    kvshard__hash_key key;
    for (size_t i = 0; i < 4; i++) {
        seed += 0x9E3779B97F4A7C15ull;
        key.k[i] = mix64(seed);
    }
    return key;
}

uint64_t kvshard_hash__seed(const void *where, uint64_t salt)
{
    struct timespec ts = {0, 0};
    (void)timespec_get(&ts, TIME_UTC);
    uint64_t at = (uint64_t)(uintptr_t)where ^ (uint64_t)(uintptr_t)&ts << 17;
    uint64_t when = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return mix64(at ^ salt) ^ when;
}

/* Sixteen bytes a step, the last step's read overlapping the one before it
 * rather than running past the text; up to 16 bytes are read as two
 * overlapping words, or for fewer than 4 as the first, middle and last
 * byte. Every byte is read, and the length goes in too. */
uint32_t kvshard_hash__of(const kvshard__hash_key *key, const char *s, size_t len)
{
    const uint64_t *k = key->k;
    uint64_t h = k[0] ^ (uint64_t)len, a, b;
    if (len > 16) {
        const char *last = s + len - 16;
        for (; s < last; s += 16) {
            memcpy(&a, s, 8);
            memcpy(&b, s + 8, 8);
            h = fold_mul(a ^ k[1], b ^ h);
        }
        memcpy(&a, last, 8);
        memcpy(&b, last + 8, 8);
    } else if (len >= 8) {
        memcpy(&a, s, 8);
        memcpy(&b, s + len - 8, 8);
    } else if (len >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4);
        memcpy(&y, s + len - 4, 4);
        a = x;
        b = y;
    } else {
        a = len ? (uint64_t)(unsigned char)s[0] << 16 | (uint64_t)(unsigned char)s[len / 2] << 8 |
                      (unsigned char)s[len - 1]
                : 0;
        b = 0;
    }
    h = fold_mul(a ^ k[1], b ^ h);
    h = fold_mul(h ^ k[2], (uint64_t)len ^ k[3]);
    return (uint32_t)(h ^ (h >> 32));
}

