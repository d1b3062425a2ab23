/* What every profile's capacity computation is made of. */
#include "profile/profile.h"

#include "base/checked.h"

uint32_t kvshard_capacity__first_rank(const kvshard__capacity_inputs *in)
{
    return in->rank == KVSHARD_ALL_RANKS ? 0 : in->rank;
}

uint32_t kvshard_capacity__end_rank(const kvshard__capacity_inputs *in)
{
    return in->rank == KVSHARD_ALL_RANKS ? in->tp : in->rank + 1;
}

uint64_t kvshard_capacity__block_bytes(const kvshard_rank_memory *r, uint64_t extra)
{
    uint64_t b;
    if (r->bytes_per_block == 0)
        return 0;
    return kvshard__add(&b, r->bytes_per_block, extra) ? b : UINT64_MAX;
}

bool kvshard_capacity__same_figures(const kvshard_rank_memory *a, const kvshard_rank_memory *b)
{
    return a && a->bytes_per_block == b->bytes_per_block &&
           a->state_bytes_per_seq == b->state_bytes_per_seq;
}

int kvshard_capacity__max_tokens(kvshard__capacity *c, const kvshard_options *o,
                                 kvshard_error *err)
{
    if (c->has_num_blocks && !kvshard__mul(&c->max_tokens, c->num_blocks, o->block_size))
        return kvshard__fail(err, KVSHARD_EOVERFLOW, "", kvshard__no_mark,
                             "max_tokens (%llu blocks of %u tokens) overflows 64 bits",
                             (unsigned long long)c->num_blocks, o->block_size);
    return KVSHARD_OK;
}
