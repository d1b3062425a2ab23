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
           a->state_bytes_per_seq == b->state_bytes_per_seq &&
           a->scratch_bytes_per_seq == b->scratch_bytes_per_seq;
}

uint64_t kvshard_capacity__seq_bytes(const kvshard_rank_memory *r)
{
    uint64_t b;
    return kvshard__add(&b, r->state_bytes_per_seq, r->scratch_bytes_per_seq) ? b : UINT64_MAX;
}

uint8_t kvshard_profile__unplanned_kind(const kvshard__model_info *m, uint32_t planned)
{
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        if (m->count[k] > 0 && !(planned >> k & 1u))
            return k;
    }
    return KVSHARD__KIND_COUNT;
}

bool kvshard_profile__has_sparse_index(const kvshard__model_info *m)
{
    for (uint32_t c = 0; c < m->num_classes; c++) {
        if (m->classes[c].flags & (KVSHARD__LAYER_SPARSE_K | KVSHARD__LAYER_SPARSE_KV))
            return true;
    }
    return false;
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
