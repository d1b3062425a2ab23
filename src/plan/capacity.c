/* Blocks, state reservation and concurrency.
 *
 * kvshard's own profile reserves the state of max_seqs sequences on every
 * rank and cuts the rest into blocks; all ranks allocate the fewest any rank
 * fits. The xllm profile predicts what an xLLM engine allocates: a share of
 * the budget for state slots (two of them padding), the rest in blocks, and
 * block 0 and state row 0 kept for padding. */
#include "plan/capacity.h"

#include "base/checked.h"
#include "plan/memory.h"

#include <math.h>

/* Ranks a computation looks at: all of them, or the one asked for. */
static uint32_t first_rank(const kvshard__capacity_inputs *in)
{
    return in->rank == KVSHARD_ALL_RANKS ? 0 : in->rank;
}

static uint32_t end_rank(const kvshard__capacity_inputs *in)
{
    return in->rank == KVSHARD_ALL_RANKS ? in->tp : in->rank + 1;
}

/* A rank's bytes per block with the engine's extra bytes; UINT64_MAX past
 * 64 bits (no block can then fit). */
static uint64_t block_bytes(const kvshard_rank_memory *r, uint64_t extra)
{
    uint64_t b;
    if (r->bytes_per_block == 0)
        return 0;
    return kvshard__add(&b, r->bytes_per_block, extra) ? b : UINT64_MAX;
}

/* Ranks with the same bytes per block and state per sequence fit the same
 * blocks and bound max_seqs alike; most ranks have the figures of the rank
 * before, so each run of them is worked out once. */
static bool same_figures(const kvshard_rank_memory *a, const kvshard_rank_memory *b)
{
    return a && a->bytes_per_block == b->bytes_per_block &&
           a->state_bytes_per_seq == b->state_bytes_per_seq;
}

static int max_tokens(kvshard__capacity *c, const kvshard_options *o, kvshard_error *err)
{
    if (c->has_num_blocks && !kvshard__mul(&c->max_tokens, c->num_blocks, o->block_size))
        return kvshard__fail(err, KVSHARD_EOVERFLOW, "", kvshard__no_mark,
                             "max_tokens (%llu blocks of %u tokens) overflows 64 bits",
                             (unsigned long long)c->num_blocks, o->block_size);
    return KVSHARD_OK;
}

/* ---- kvshard ---------------------------------------------------------------------- */

static int kvshard_profile(kvshard__capacity *c, uint64_t *rank_blocks,
                           const kvshard__capacity_inputs *in, kvshard_error *err)
{
    const kvshard_options *o = in->options;
    uint64_t least = UINT64_MAX, bpb = 0, blocks = 0;
    const kvshard_rank_memory *prev = NULL;
    for (uint32_t r = first_rank(in); r < end_rank(in); r++) {
        const kvshard_rank_memory *f = &in->ranks[r];
        if (!same_figures(prev, f)) {
            bpb = block_bytes(f, in->extra_per_block);
            uint64_t reserved, need;
            /* A reservation past 2^64 bytes exceeds any memory: no block fits. */
            if (!kvshard__mul(&reserved, o->max_seqs, f->state_bytes_per_seq))
                return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                                     "no memory for one block on TP rank %u: the state of "
                                     "max_seqs %u sequences (%llu bytes each) needs more than "
                                     "2^64 bytes",
                                     r, o->max_seqs, (unsigned long long)f->state_bytes_per_seq);
            if (!kvshard__add(&need, reserved, bpb))
                need = UINT64_MAX;
            if (in->memory < need)
                return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                                     "no memory for one block on TP rank %u: memory_per_rank "
                                     "%llu bytes, reserved %llu bytes for %u sequences of state, "
                                     "bytes_per_block %llu",
                                     r, (unsigned long long)in->memory,
                                     (unsigned long long)reserved, o->max_seqs,
                                     (unsigned long long)bpb);
            c->reserved = reserved > c->reserved ? reserved : c->reserved;
            blocks = bpb ? (in->memory - reserved) / bpb : 0;
        }
        prev = f;
        if (rank_blocks)
            rank_blocks[r] = blocks;
        if (bpb) {
            c->has_num_blocks = true;
            least = blocks < least ? blocks : least;
        }
    }
    c->num_blocks = c->has_num_blocks ? least : 0;
    int rc = max_tokens(c, o, err);
    if (rc || !c->has_num_blocks || in->context_length == 0)
        return rc;
    /* At a context length: how many sequences run at once, and the max_seqs
     * at which state and blocks run out together. */
    uint64_t per_seq = kvshard__ceil_div(in->context_length, o->block_size);
    uint64_t fit = c->num_blocks / per_seq;
    c->has_concurrency = true;
    c->concurrency = fit < o->max_seqs ? fit : o->max_seqs;
    uint64_t balanced = UINT64_MAX;
    prev = NULL;
    for (uint32_t r = first_rank(in); r < end_rank(in); r++) {
        const kvshard_rank_memory *f = &in->ranks[r];
        if (same_figures(prev, f))
            continue;
        prev = f;
        uint64_t kv, need;
        if (!kvshard__mul(&kv, per_seq, block_bytes(f, in->extra_per_block)) ||
            !kvshard__add(&need, f->state_bytes_per_seq, kv)) {
            balanced = 0; /* one sequence needs more than 2^64 bytes */
            continue;
        }
        if (need == 0)
            continue; /* stores nothing: does not bound max_seqs */
        uint64_t n = in->memory / need;
        balanced = n < balanced ? n : balanced;
    }
    c->has_balanced_max_seqs = balanced != UINT64_MAX;
    c->balanced_max_seqs = c->has_balanced_max_seqs ? balanced : 0;
    return KVSHARD_OK;
}

/* ---- xllm --------------------------------------------------------------------------- */

int kvshard__xllm_budget(uint64_t *out, bool *out_has, const kvshard_options *options,
                         kvshard_error *err)
{
    const kvshard_options *o = options;
    *out_has = false;
    if (o->memory_per_rank) { /* the engine's budget as given, uncapped */
        *out = o->memory_per_rank;
        *out_has = true;
        return KVSHARD_OK;
    }
    if (!o->device_memory_total && !o->device_memory_free)
        return KVSHARD_OK;
    if (!o->device_memory_total || !o->device_memory_free)
        return kvshard__fail(err, KVSHARD_EMISSING, "", kvshard__no_mark,
                             "xllm profile: %s needs %s too (or give memory_per_rank)",
                             o->device_memory_total ? "device_memory_total" : "device_memory_free",
                             o->device_memory_total ? "device_memory_free" : "device_memory_total");
    /* In double arithmetic, as the engine computes it. */
    double held = trunc((double)o->device_memory_total * (1.0 - o->max_memory_utilization));
    double budget = (double)o->device_memory_free - held;
    if (o->max_cache_size > 0 && budget > (double)o->max_cache_size)
        budget = (double)o->max_cache_size;
    if (!(budget > 0.0))
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "xllm profile: no budget for the KV cache: device_memory_free %llu - "
                             "device_memory_total %llu x (1 - max_memory_utilization %g) = %.0f "
                             "bytes",
                             (unsigned long long)o->device_memory_free,
                             (unsigned long long)o->device_memory_total, o->max_memory_utilization,
                             budget);
    *out = budget >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)budget;
    *out_has = true;
    return KVSHARD_OK;
}

/* State slots: two padding slots, and a 0.9/1.9 share of the budget when
 * the prefix cache sizes the pool. */
static int xllm_slots(uint64_t *out, const kvshard__capacity_inputs *in, uint64_t lin, uint64_t blk,
                      kvshard_error *err)
{
    const kvshard_options *o = in->options;
    uint64_t B = in->memory;
    if (lin == 0) {
        *out = 2;
        return KVSHARD_OK;
    }
    uint64_t by_state = (B - 1) / lin;
    uint64_t room, per;
    uint64_t by_both =
        kvshard__add(&room, B, 2 * blk) && kvshard__add(&per, lin, blk) ? room / per : by_state;
    uint64_t bound = by_state < by_both ? by_state : by_both;
    bound = bound > 2 ? bound : 2;
    if (o->max_linear_state_cache_slots > 0) {
        uint64_t slots = (uint64_t)o->max_linear_state_cache_slots + 2;
        if (slots > bound)
            return kvshard__fail(err, KVSHARD_EPROFILE, "", kvshard__no_mark,
                                 "xllm profile: max_linear_state_cache_slots %u (+2 padding) is "
                                 "above the %llu state slots the budget %llu bytes can hold "
                                 "(state %llu bytes per slot)",
                                 o->max_linear_state_cache_slots, (unsigned long long)bound,
                                 (unsigned long long)B, (unsigned long long)lin);
        *out = slots;
    } else if (!o->enable_prefix_cache) {
        uint64_t want = (uint64_t)o->max_seqs + 2;
        *out = want < bound ? want : bound;
    } else {
        /* IEEE double, in this order, as the engine computes it. */
        double share = (double)B * (0.9 / 1.9) / (double)lin;
        uint64_t a = (uint64_t)trunc(share);
        a = a > 2 ? a : 2;
        *out = a < bound ? a : bound;
    }
    return KVSHARD_OK;
}

static int xllm_profile(kvshard__capacity *c, uint64_t *rank_blocks,
                        const kvshard__capacity_inputs *in, kvshard_error *err)
{
    const kvshard_options *o = in->options;
    uint64_t B = in->memory;
    uint64_t lin = in->ranks[first_rank(in)].state_bytes_per_seq;
    uint64_t blk = in->unsplit_bytes_per_block;
    if (blk && !kvshard__add(&blk, blk, in->extra_per_block))
        blk = UINT64_MAX;
    uint64_t slots = 0, reserved;
    int rc = xllm_slots(&slots, in, lin, blk, err);
    if (rc)
        return rc;
    if (!kvshard__mul(&reserved, slots, lin) || reserved >= B)
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "xllm profile: state slots do not fit: %llu slots x %llu bytes of "
                             "state reach the budget of %llu bytes",
                             (unsigned long long)slots, (unsigned long long)lin,
                             (unsigned long long)B);
    uint64_t avail = B - reserved;
    c->reserved = reserved;
    c->has_state_slots = true;
    c->state_slots = slots;
    c->usable_state_slots = slots - 1;
    /* Ranks that own no KV layer hold only scratch; the engine skips them
     * when it sizes every rank. Asked for one such rank, its own fit. */
    uint64_t least = UINT64_MAX, worst = 0;
    bool split = in->split > 1;
    for (uint32_t r = first_rank(in); r < end_rank(in); r++) {
        const kvshard_rank_memory *f = &in->ranks[r];
        uint64_t bpb = block_bytes(f, in->extra_per_block);
        if (bpb == 0 || (split && f->kv_bytes_per_token == 0 && in->rank == KVSHARD_ALL_RANKS))
            continue;
        uint64_t blocks = avail / bpb;
        if (blocks < least) {
            least = blocks;
            worst = bpb;
        }
    }
    if (least == UINT64_MAX)
        return KVSHARD_OK; /* no KV bytes: slots only */
    if (least < 1)
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "xllm profile: no memory for one block: budget %llu bytes, %llu "
                             "state slots take %llu, bytes_per_block %llu",
                             (unsigned long long)B, (unsigned long long)slots,
                             (unsigned long long)reserved, (unsigned long long)worst);
    c->has_num_blocks = true;
    c->num_blocks = least;
    c->usable_blocks = least - 1;
    for (uint32_t r = first_rank(in); rank_blocks && r < end_rank(in); r++)
        rank_blocks[r] = least; /* the engine allocates one count everywhere */
    if ((rc = max_tokens(c, o, err)) != 0 || in->context_length == 0)
        return rc;
    uint64_t per_seq = kvshard__ceil_div(in->context_length, o->block_size);
    uint64_t cap = o->max_seqs;
    if (lin > 0 && c->usable_state_slots < cap)
        cap = c->usable_state_slots;
    uint64_t fit = c->usable_blocks / per_seq;
    c->has_concurrency = true;
    c->concurrency = fit < cap ? fit : cap;
    return KVSHARD_OK;
}

int kvshard__capacity_compute(kvshard__capacity *out, uint64_t *rank_blocks,
                              const kvshard__capacity_inputs *in, kvshard_error *err)
{
    kvshard__capacity c = {false, 0, 0, 0, false, 0, false, 0, false, 0, 0, 0};
    int rc = in->options->engine == KVSHARD_ENGINE_XLLM ? xllm_profile(&c, rank_blocks, in, err)
                                                        : kvshard_profile(&c, rank_blocks, in, err);
    if (rc == KVSHARD_OK)
        *out = c;
    return rc;
}

kvshard_uniform kvshard__uniform_of(const kvshard_rank_memory *ranks, uint32_t tp,
                                    const kvshard_options *options,
                                    uint64_t unsplit_bytes_per_block, uint64_t memory,
                                    bool has_memory)
{
    kvshard_uniform u = KVSHARD_UNIFORM_INIT;
    kvshard__largest_figures(&u.kv_bytes_per_token, &u.bytes_per_block, ranks, tp);
    if (has_memory && u.bytes_per_block > 0) {
        kvshard__capacity_inputs ci = {
            options, ranks, tp, 1, unsplit_bytes_per_block, memory, 0, 0, KVSHARD_ALL_RANKS};
        kvshard__capacity c;
        u.has_num_blocks = true;
        u.num_blocks =
            kvshard__capacity_compute(&c, NULL, &ci, NULL) == KVSHARD_OK && c.has_num_blocks
                ? c.num_blocks
                : 0;
    }
    return u;
}
