/* Extensible structs: each public struct the library fills or reads starts
 * with a `size_t size` the caller set from the struct's INIT macro. A later
 * version of kvshard may add fields at the end; it then writes and reads only
 * the `size` bytes the caller's struct has. */
#ifndef KVSHARD_BASE_ABI_H
#define KVSHARD_BASE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Whether a caller's struct of `size` bytes is one this library can fill or
 * read: at least as large as its first published layout (`min`), at most as
 * large as today's (`max`). */
static inline bool kvshard__size_ok(size_t size, size_t min, size_t max)
{
    return size >= min && size <= max;
}

/* Copy `full` bytes of `src` into the caller's `dst`, keeping its size and
 * writing no more than it. false when dst is NULL or its size unknown. */
static inline bool kvshard__copy_out(void *dst, const void *src, size_t min, size_t full)
{
    size_t size;
    if (!dst)
        return false;
    memcpy(&size, dst, sizeof size);
    if (!kvshard__size_ok(size, min, full))
        return false;
    memcpy((char *)dst + sizeof size, (const char *)src + sizeof size, size - sizeof size);
    return true;
}

/* Start `var`, a struct a caller will receive, from its INIT value with
 * every byte written, padding included (a static object's padding is
 * zero), so that what a caller gets back compares equal byte for byte when
 * its fields do. */
#define KVSHARD__INIT_BYTES(var, type, init)                                                       \
    do {                                                                                           \
        static const type kvshard__init_value = init;                                             \
        memcpy(&(var), &kvshard__init_value, sizeof(var));                                         \
    } while (0)

#endif /* KVSHARD_BASE_ABI_H */
