/* Allocation through a per-object kvshard_allocator. */
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

static void *default_malloc(void *user, size_t size)
{
    (void)user;
    return malloc(size);
}

static void default_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

bool kvshard_alloc__allocator_valid(const kvshard_allocator *allocator)
{
    return !allocator || (allocator->malloc_fn && allocator->free_fn);
}

kvshard_allocator kvshard_alloc__allocator_or_default(const kvshard_allocator *allocator)
{
    if (allocator && allocator->malloc_fn && allocator->free_fn)
        return *allocator;
    kvshard_allocator a = {default_malloc, default_free, NULL};
    return a;
}

void *kvshard_alloc__bytes(const kvshard_allocator *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t total = n * size;
    /* A zero-byte request still returns a distinct pointer to free. */
    return a->malloc_fn(a->user, total ? total : 1);
}

void *kvshard_alloc__calloc(const kvshard_allocator *a, size_t n, size_t size)
{
    void *p = kvshard_alloc__bytes(a, n, size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void kvshard_alloc__free(const kvshard_allocator *a, void *p)
{
    if (p)
        a->free_fn(a->user, p);
}

char *kvshard_alloc__strndup(const kvshard_allocator *a, const char *s, size_t len)
{
    char *copy = kvshard_alloc__bytes(a, len + 1, 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

char *kvshard_alloc__strdup(const kvshard_allocator *a, const char *s)
{
    return kvshard_alloc__strndup(a, s, strlen(s));
}
