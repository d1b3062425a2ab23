/* Allocation through a per-object kvshard_allocator. */
#ifndef KVSHARD_BASE_ALLOC_H
#define KVSHARD_BASE_ALLOC_H

#include "kvshard/kvshard.h"

/* Resolve a possibly NULL allocator to a usable one (the C library's). A
 * half-set allocator is the caller's mistake; kvshard_alloc__allocator_valid()
 * tells the API calls that must refuse it. */
kvshard_allocator kvshard_alloc__allocator_or_default(const kvshard_allocator *allocator);
/* NULL, or an allocator with both functions set. */
bool kvshard_alloc__allocator_valid(const kvshard_allocator *allocator);
/* Allocation of n * size bytes; NULL on overflow or failure. */
void *kvshard_alloc__bytes(const kvshard_allocator *a, size_t n, size_t size);
/* As kvshard_alloc__bytes, zero-filled. */
void *kvshard_alloc__calloc(const kvshard_allocator *a, size_t n, size_t size);
void kvshard_alloc__free(const kvshard_allocator *a, void *p);
/* Copy of a NUL-terminated string, or of `len` bytes of one. */
char *kvshard_alloc__strdup(const kvshard_allocator *a, const char *s);
char *kvshard_alloc__strndup(const kvshard_allocator *a, const char *s, size_t len);

#endif /* KVSHARD_BASE_ALLOC_H */
