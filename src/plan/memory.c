/* Per-rank bytes, state reservation and KV block capacity.
 * All arithmetic is 64-bit and checked: an overflow is an error. */
#include "plan/memory.h"

#include "base/checked.h"

#include <stdio.h>

/* Checked arithmetic that remembers the first overflow, and whether it
 * came from a figure scaled by block_size (the option to blame) or from the
 * model's dimensions alone. */
typedef struct calc {
    bool overflow;
    bool in_block;     /* the figure being computed multiplies by block_size */
    bool block_blamed; /* the first overflow happened in such a figure */
} calc;

static void overflowed(calc *c)
{
    if (!c->overflow)
        c->block_blamed = c->in_block;
    c->overflow = true;
}

static uint64_t mul(calc *c, uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    if (!kvshard__mul(&r, a, b))
        overflowed(c);
    return r;
}

static uint64_t add(calc *c, uint64_t a, uint64_t b)
{
    uint64_t r = 0;
    if (!kvshard__add(&r, a, b))
        overflowed(c);
    return r;
}

static int overflow_error(const calc *c, const kvshard__memory_inputs *in, const char *what,
                          kvshard_error *err)
{
    if (c->block_blamed)
        return kvshard__fail(err, KVSHARD_EOVERFLOW, "", kvshard__no_mark,
                             "%s overflow 64 bits at block_size %u tokens", what,
                             in->options->block_size);
    return kvshard__fail(err, KVSHARD_EOVERFLOW, in->model_source, kvshard__no_mark,
                         "%s overflow 64 bits: the model's dimensions are too large", what);
}

/* Distinct KV heads held by TP ranks first..last together (SPEC §5): rank r
 * holds heads [r*H/T, (r+1)*H/T) when H >= T, else head floor(r*H/T). */
static uint64_t heads_of_ranks(uint32_t H, uint32_t T, uint32_t first, uint32_t last)
{
    return kvshard__ceil_div(((uint64_t)last + 1) * H, T) - (uint64_t)first * H / T;
}

typedef struct layout {
    unsigned kv_bytes; /* bytes per cached element */
    bool fp8;
} layout;

static layout kv_layout(const kvshard__memory_inputs *in)
{
    layout l;
    switch (in->options->kv_cache_dtype) {
    case KVSHARD_KV_DTYPE_BF16:
    case KVSHARD_KV_DTYPE_FP16: l.kv_bytes = 2; break;
    case KVSHARD_KV_DTYPE_FP8: l.kv_bytes = 1; break;
    case KVSHARD_KV_DTYPE_AUTO:
    default: l.kv_bytes = kvshard__dtype_bytes(in->model->dtype); break;
    }
    l.fp8 = l.kv_bytes == 1;
    return l;
}

/* Bytes per token of one attention layer holding `heads` KV heads (GQA), or
 * of one MLA layer (heads ignored). */
static uint64_t layer_bytes(calc *c, const kvshard__model_info *m, layout l, uint64_t heads)
{
    if (m->attention == KVSHARD_ATTENTION_MLA) {
        uint64_t b = mul(c, (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim, l.kv_bytes);
        if (l.fp8)
            b = add(c, b, 4); /* one fp32 scale */
        if (m->has_indexer)
            b = add(c, b,
                    l.fp8 ? (uint64_t)m->index_head_dim + 4
                          : mul(c, m->index_head_dim, l.kv_bytes));
        return b;
    }
    uint64_t b = mul(c, mul(c, 2 * heads, m->head_dim), l.kv_bytes);
    if (l.fp8)
        b = add(c, b, mul(c, 8, heads)); /* fp32 scales for K and V of each head */
    return b;
}

/* Recurrent state of one linear-attention layer for one sequence on a rank. */
static uint64_t linear_state_bytes(calc *c, const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    uint64_t T = in->tp;
    uint64_t spec = in->options->num_speculative_tokens;
    uint64_t model_bytes = kvshard__dtype_bytes(m->dtype);
    switch (m->linear) {
    case KVSHARD__LINEAR_GDN: {
        uint64_t hk = m->linear_key_heads / T, hv = m->linear_value_heads / T;
        uint64_t dk = m->linear_key_dim, dv = m->linear_value_dim;
        uint64_t channels = add(c, mul(c, 2 * dk, hk), mul(c, dv, hv));
        uint64_t conv = mul(c, mul(c, model_bytes, channels), m->linear_conv_kernel - 1 + spec);
        uint64_t temporal = mul(
            c, mul(c, mul(c, kvshard__dtype_bytes(m->ssm_dtype), hv), mul(c, dk, dv)), spec + 1);
        return add(c, conv, temporal);
    }
    case KVSHARD__LINEAR_KDA: {
        uint64_t h = m->linear_value_heads / T, d = m->linear_key_dim;
        uint64_t conv =
            mul(c, mul(c, model_bytes, mul(c, 3 * h, d)), m->linear_conv_kernel - 1 + spec);
        uint64_t temporal = mul(c, mul(c, 4 * h, mul(c, d, d)), spec + 1);
        return add(c, conv, temporal);
    }
    case KVSHARD__LINEAR_LIGHTNING: {
        uint64_t h = m->linear_value_heads / T, d = m->linear_key_dim;
        return mul(c, 4 * h, mul(c, d, d));
    }
    case KVSHARD__LINEAR_NONE:
    default: return 0;
    }
}

/* Figures of TP rank `r` when split ranks store layers as `split` says. */
static kvshard_rank_memory rank_figures(calc *c, const kvshard__memory_inputs *in, uint32_t split,
                                        uint32_t owned, uint32_t r, uint64_t linear_state)
{
    const kvshard__model_info *m = in->model;
    const kvshard_options *o = in->options;
    layout l = kv_layout(in);
    uint32_t H = m->num_kv_heads, T = in->tp;
    uint64_t own = layer_bytes(c, m, l, H ? heads_of_ranks(H, T, r, r) : 0);
    uint64_t stored = own;
    if (split > 1) {
        uint32_t first = r / split * split;
        stored = layer_bytes(c, m, l, H ? heads_of_ranks(H, T, first, first + split - 1) : 0);
    }
    kvshard_rank_memory f = {sizeof f, 0, 0, 0, 0, 0, 0, false};
    f.kv_bytes_per_token = mul(c, owned, stored);
    f.scratch_bytes_per_token = split > 1 ? mul(c, o->scratch_layers, stored) : 0;
    f.draft_bytes_per_token = o->num_speculative_tokens > 0 ? mul(c, m->num_draft_layers, own) : 0;
    uint64_t per_token =
        add(c, add(c, f.kv_bytes_per_token, f.scratch_bytes_per_token), f.draft_bytes_per_token);
    c->in_block = true;
    f.bytes_per_block = mul(c, o->block_size, per_token);
    uint64_t window = 0;
    if (m->num_sliding > 0)
        window = mul(c, mul(c, own, o->block_size),
                     kvshard__ceil_div(m->sliding_window, o->block_size) + 1);
    c->in_block = false;
    f.state_bytes_per_seq =
        add(c, mul(c, m->num_linear, linear_state), mul(c, m->num_sliding, window));
    return f;
}

/* Blocks that fit `memory` on one rank; ENOBLOCK when not one does. */
static int rank_blocks(kvshard_rank_memory *f, uint32_t max_seqs, uint64_t memory, uint32_t r,
                       kvshard_error *err)
{
    uint64_t reserved;
    /* A reservation past 2^64 bytes exceeds any memory: no block fits. */
    if (!kvshard__mul(&reserved, max_seqs, f->state_bytes_per_seq))
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "no memory for one block on TP rank %u: the state of max_seqs %u "
                             "sequences (%llu bytes each) needs more than 2^64 bytes",
                             r, max_seqs, (unsigned long long)f->state_bytes_per_seq);
    uint64_t need = reserved;
    if (!kvshard__add(&need, reserved, f->bytes_per_block))
        need = UINT64_MAX;
    if (memory < need || (f->bytes_per_block == 0 && memory < reserved))
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "no memory for one block on TP rank %u: memory_per_rank %llu bytes, "
                             "reserved %llu bytes for %u sequences of state, bytes_per_block %llu",
                             r, (unsigned long long)memory, (unsigned long long)reserved, max_seqs,
                             (unsigned long long)f->bytes_per_block);
    f->has_num_blocks = f->bytes_per_block > 0;
    f->num_blocks = f->has_num_blocks ? (memory - reserved) / f->bytes_per_block : 0;
    return KVSHARD_OK;
}

int kvshard__memory_blocks_for(uint64_t *out, bool *out_has, kvshard_rank_memory *ranks_out,
                               const kvshard_rank_memory *ranks, uint32_t tp, uint32_t max_seqs,
                               uint64_t memory, kvshard_error *err)
{
    uint64_t least = UINT64_MAX;
    bool has = false;
    for (uint32_t r = 0; r < tp; r++) {
        kvshard_rank_memory f = ranks[r];
        int rc = rank_blocks(&f, max_seqs, memory, r, err);
        if (rc)
            return rc;
        if (f.has_num_blocks && f.num_blocks < least)
            least = f.num_blocks;
        has = has || f.has_num_blocks;
        if (ranks_out)
            ranks_out[r] = f;
    }
    *out = has ? least : 0;
    *out_has = has;
    return KVSHARD_OK;
}

/* The S_eff = 1 figures for comparison: largest bytes, fewest blocks. */
static int compute_uniform(kvshard_uniform *out, const kvshard__memory_inputs *in,
                           uint64_t linear_state, kvshard_error *err)
{
    calc c = {false, false, false};
    const kvshard_options *o = in->options;
    kvshard_uniform u = {sizeof u, 0, 0, false, UINT64_MAX};
    for (uint32_t r = 0; r < in->tp; r++) {
        kvshard_rank_memory f = rank_figures(&c, in, 1, in->model->num_full, r, linear_state);
        if (c.overflow)
            return overflow_error(&c, in, "the uniform (unsplit) KV bytes", err);
        u.kv_bytes_per_token = f.kv_bytes_per_token > u.kv_bytes_per_token ? f.kv_bytes_per_token
                                                                           : u.kv_bytes_per_token;
        u.bytes_per_block =
            f.bytes_per_block > u.bytes_per_block ? f.bytes_per_block : u.bytes_per_block;
        if (o->memory_per_rank && f.bytes_per_block > 0) {
            /* The unsplit plan may fit no block where the split one does: 0. */
            uint64_t blocks =
                rank_blocks(&f, o->max_seqs, o->memory_per_rank, r, NULL) == KVSHARD_OK
                    ? f.num_blocks
                    : 0;
            u.num_blocks = blocks < u.num_blocks ? blocks : u.num_blocks;
            u.has_num_blocks = true;
        }
    }
    if (!u.has_num_blocks)
        u.num_blocks = 0;
    *out = u;
    return KVSHARD_OK;
}

uint32_t kvshard__replication_factor(const kvshard__model_info *model, uint32_t tp)
{
    if (model->attention == KVSHARD_ATTENTION_MLA)
        return tp;
    return model->num_kv_heads && model->num_kv_heads < tp ? tp / model->num_kv_heads : 1;
}

int kvshard__memory_compute(kvshard_rank_memory *ranks, kvshard_capacity *capacity,
                            kvshard_uniform *uniform, const kvshard__memory_inputs *in,
                            kvshard_error *err)
{
    calc c = {false, false, false};
    const kvshard_options *o = in->options;
    uint64_t linear_state = linear_state_bytes(&c, in);
    if (c.overflow)
        return overflow_error(&c, in, "the linear-attention state bytes", err);
    for (uint32_t r = 0; r < in->tp; r++) {
        ranks[r] = rank_figures(&c, in, in->split, in->owned[r % in->split], r, linear_state);
        if (c.overflow) {
            char what[64];
            snprintf(what, sizeof what, "the memory figures of TP rank %u", r);
            return overflow_error(&c, in, what, err);
        }
    }
    kvshard_capacity cap = {sizeof cap, o->block_size, o->memory_per_rank, o->max_seqs, false, 0,
                            0};
    if (cap.memory_per_rank) {
        int rc = kvshard__memory_blocks_for(&cap.num_blocks, &cap.has_num_blocks, ranks, ranks,
                                            in->tp, o->max_seqs, cap.memory_per_rank, err);
        if (rc)
            return rc;
        if (cap.has_num_blocks && !kvshard__mul(&cap.max_tokens, cap.num_blocks, cap.block_size))
            return kvshard__fail(err, KVSHARD_EOVERFLOW, "", kvshard__no_mark,
                                 "max_tokens (%llu blocks of %u tokens) overflows 64 bits",
                                 (unsigned long long)cap.num_blocks, cap.block_size);
    }
    *capacity = cap;
    return compute_uniform(uniform, in, linear_state, err);
}
