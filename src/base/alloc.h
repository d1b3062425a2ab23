/* Allocation through a per-object kvshard_allocator. */
#ifndef KVSHARD_BASE_ALLOC_H
#define KVSHARD_BASE_ALLOC_H

#include "kvshard/kvshard.h"

/* Resolve a possibly NULL allocator to a usable one (the C library's). A
 * half-set allocator is the caller's mistake; kvshard__allocator_valid()
 * tells the API calls that must refuse it. */
kvshard_allocator kvshard__allocator_or_default(const kvshard_allocator *allocator);
/* NULL, or an allocator with both functions set. */
bool kvshard__allocator_valid(const kvshard_allocator *allocator);
/* Allocation of n * size bytes; NULL on overflow or failure. */
void *kvshard__alloc(const kvshard_allocator *a, size_t n, size_t size);
/* As kvshard__alloc, zero-filled. */
void *kvshard__calloc(const kvshard_allocator *a, size_t n, size_t size);
void kvshard__free(const kvshard_allocator *a, void *p);
/* Copy of a NUL-terminated string, or of `len` bytes of one. */
char *kvshard__strdup(const kvshard_allocator *a, const char *s);
char *kvshard__strndup(const kvshard_allocator *a, const char *s, size_t len);

#endif /* KVSHARD_BASE_ALLOC_H */
