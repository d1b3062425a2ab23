/* How every public call begins: the caller's error record cleared, then
 * NULL arguments, half-set allocators and structs of an unknown size
 * refused with KVSHARD_EINVAL, each with the same words everywhere. */
#ifndef KVSHARD_BASE_CALL_H
#define KVSHARD_BASE_CALL_H

#include "base/error.h"

/* Clear `err`; EINVAL "ARGS must not be NULL" when `args_ok` is false. */
int kvshard_call__begin(kvshard_error *err, bool args_ok, const char *args);

/* EINVAL when `allocator` is set but lacks one of its functions. */
int kvshard_call__allocator(kvshard_error *err, const kvshard_allocator *allocator);

/* EINVAL when a caller's struct `type` has `size` bytes and this library's
 * has `expected`: the caller was compiled against another header, or did
 * not start from the struct's `init` macro. */
int kvshard_call__size(kvshard_error *err, const char *type, size_t size, size_t expected,
                       const char *init);

#endif /* KVSHARD_BASE_CALL_H */
