/* Allocation through a per-object kvshard_allocator. */
#include "internal.h"

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

kvshard_allocator kvs_allocator_or_default(const kvshard_allocator *allocator)
{
    if (allocator && allocator->malloc_fn && allocator->free_fn)
        return *allocator;
    kvshard_allocator a = {default_malloc, default_free, NULL};
    return a;
}

void *kvs_alloc(const kvshard_allocator *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        return NULL;
    size_t total = n * size;
    /* A zero-byte request still returns a distinct pointer to free. */
    return a->malloc_fn(a->user, total ? total : 1);
}

void *kvs_calloc(const kvshard_allocator *a, size_t n, size_t size)
{
    void *p = kvs_alloc(a, n, size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void kvs_free(const kvshard_allocator *a, void *p)
{
    if (p)
        a->free_fn(a->user, p);
}

char *kvs_strndup(const kvshard_allocator *a, const char *s, size_t len)
{
    char *copy = kvs_alloc(a, len + 1, 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

char *kvs_strdup(const kvshard_allocator *a, const char *s)
{
    return kvs_strndup(a, s, strlen(s));
}
