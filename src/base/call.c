/* The prologue of every public call. */
#include "base/call.h"

#include "base/alloc.h"

int kvshard_call__begin(kvshard_error *err, bool args_ok, const char *args)
{
    kvshard_error__reset(err);
    if (!args_ok)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "%s must not be NULL", args);
    return KVSHARD_OK;
}

int kvshard_call__allocator(kvshard_error *err, const kvshard_allocator *allocator)
{
    if (!kvshard_alloc__allocator_valid(allocator))
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "kvshard_allocator: malloc_fn and free_fn must both be set");
    return KVSHARD_OK;
}

int kvshard_call__size(kvshard_error *err, const char *type, size_t size, size_t expected,
                       const char *init)
{
    if (size == expected)
        return KVSHARD_OK;
    return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                         "%s.size is %zu; this library's is %zu: start from %s", type, size,
                         expected, init);
}
