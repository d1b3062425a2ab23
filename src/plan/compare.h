/* The comparison object, read by its queries and its JSON writer. */
#ifndef KVSHARD_PLAN_COMPARE_H
#define KVSHARD_PLAN_COMPARE_H

#include "base/alloc.h"

struct kvshard_comparison {
    kvshard_allocator alloc;
    kvshard_comparison_row *rows;
    char (*messages)[KVSHARD_ERROR_MESSAGE_MAX];
    size_t count;
    size_t recommended;
};

#endif /* KVSHARD_PLAN_COMPARE_H */
