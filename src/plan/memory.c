/* Per-rank bytes per token, per block and per sequence. All arithmetic is
 * 64-bit and checked: an overflow is an error, never a wrapped number. */
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

uint32_t kvshard__replication_factor(const kvshard__model_info *model, uint32_t tp)
{
    if (kvshard__num_kv_layers(model) == 0)
        return 1;
    if (model->attention == KVSHARD_ATTENTION_MLA)
        return tp;
    return model->num_kv_heads && model->num_kv_heads < tp ? tp / model->num_kv_heads : 1;
}

kvshard_dtype kvshard__state_dtype(const kvshard__model_info *model, const kvshard_options *options)
{
    if (model->state.dtype == KVSHARD_DTYPE_AUTO) /* no temporal state */
        return KVSHARD_DTYPE_AUTO;
    return options->state_dtype != KVSHARD_DTYPE_AUTO ? options->state_dtype : model->state.dtype;
}

void kvshard__kv_heads(uint32_t *out_first, uint32_t *out_count, uint32_t heads, uint32_t tp,
                       uint32_t first, uint32_t last)
{
    uint64_t lo = (uint64_t)first * heads / tp;
    uint64_t hi = kvshard__ceil_div(((uint64_t)last + 1) * heads, tp);
    *out_first = (uint32_t)lo;
    *out_count = (uint32_t)(hi - lo);
}

/* Bytes per cached element, and whether they carry fp8 scales. */
static unsigned kv_element_bytes(const kvshard__memory_inputs *in)
{
    kvshard_dtype d = in->options->kv_cache_dtype;
    return kvshard__dtype_bytes(d == KVSHARD_DTYPE_AUTO ? in->model->dtype : d);
}

static uint64_t layer_bytes(calc *c, const kvshard__memory_inputs *in, uint64_t heads)
{
    const kvshard__model_info *m = in->model;
    unsigned e = kv_element_bytes(in);
    bool fp8 = e == 1;
    if (m->attention == KVSHARD_ATTENTION_MLA) {
        uint64_t b = mul(c, (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim, e);
        if (fp8)
            b = add(c, b, 4); /* one fp32 scale */
        if (m->has_indexer)
            b = add(c, b, fp8 ? (uint64_t)m->index_head_dim + 4 : mul(c, m->index_head_dim, e));
        return b;
    }
    uint64_t b = mul(c, mul(c, 2 * heads, m->head_dim), e);
    if (fp8)
        b = add(c, b, mul(c, 8, heads)); /* fp32 scales for K and V of each head */
    return b;
}

int kvshard__layer_bytes(uint64_t *out, const kvshard__memory_inputs *in, uint32_t heads,
                         kvshard_error *err)
{
    calc c = {false, false, false};
    uint64_t b = layer_bytes(&c, in, heads);
    if (c.overflow)
        return overflow_error(&c, in, "the KV bytes of a layer", err);
    *out = b;
    return KVSHARD_OK;
}

/* Mamba2 groups on a rank: all G when T divides them, else a copy of its
 * group when G < T divides T (plan validation refused the rest). */
static uint64_t mamba2_groups(uint32_t groups, uint32_t tp)
{
    return groups % tp == 0 ? groups : tp;
}

/* The recurrent state of one linear or hybrid layer for one sequence on one
 * rank; every "x / T" below divides exactly (plan validation checked). */
static uint64_t state_bytes(calc *c, const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    const kvshard__state_dims *s = &m->state;
    uint64_t T = in->tp;
    uint64_t spec = in->options->num_speculative_tokens;
    uint64_t conv_b = kvshard__dtype_bytes(m->dtype);
    uint64_t ssm_b = kvshard__dtype_bytes(kvshard__state_dtype(m, in->options));
    uint64_t K = s->conv_kernel;
    switch (s->kind) {
    case KVSHARD_STATE_GDN: {
        uint64_t hk = s->key_heads / T, hv = s->heads / T, dk = s->head_dim, dv = s->value_dim;
        uint64_t channels = add(c, mul(c, 2 * dk, hk), mul(c, dv, hv));
        uint64_t conv = mul(c, mul(c, conv_b, channels), K - 1 + spec);
        uint64_t temporal = mul(c, mul(c, mul(c, ssm_b, hv), mul(c, dk, dv)), spec + 1);
        return add(c, conv, temporal);
    }
    case KVSHARD_STATE_KDA: {
        uint64_t h = s->heads / T, d = s->head_dim;
        uint64_t conv = mul(c, mul(c, conv_b, mul(c, 3 * h, d)), K - 1 + spec);
        uint64_t temporal = mul(c, mul(c, mul(c, ssm_b, h), mul(c, d, d)), spec + 1);
        return add(c, conv, temporal);
    }
    case KVSHARD_STATE_LIGHTNING: {
        uint64_t h = s->heads / T, d = s->head_dim;
        return mul(c, mul(c, ssm_b, h), mul(c, d, d));
    }
    case KVSHARD_STATE_MAMBA2: {
        uint64_t inner = (uint64_t)s->heads * s->head_dim;
        uint64_t channels =
            add(c, inner, mul(c, 2 * mamba2_groups(s->groups, in->tp), s->state_size)) / T;
        uint64_t conv = mul(c, mul(c, conv_b, channels), K - 1 + spec);
        uint64_t temporal = mul(c, mul(c, ssm_b, s->heads / T), mul(c, s->head_dim, s->state_size));
        return add(c, conv, temporal);
    }
    case KVSHARD_STATE_MAMBA1: {
        uint64_t inner = s->channels / T;
        uint64_t conv = mul(c, mul(c, conv_b, inner), K - 1);
        uint64_t temporal = mul(c, mul(c, ssm_b, inner), s->state_size);
        return add(c, conv, temporal);
    }
    case KVSHARD_STATE_SHORT_CONV: return mul(c, mul(c, conv_b, s->channels / T), K - 1);
    case KVSHARD_STATE_NONE:
    default: return 0;
    }
}

int kvshard__state_bytes(uint64_t *out, const kvshard__memory_inputs *in, kvshard_error *err)
{
    calc c = {false, false, false};
    uint64_t b = state_bytes(&c, in);
    if (c.overflow)
        return overflow_error(&c, in, "the recurrent state bytes", err);
    *out = b;
    return KVSHARD_OK;
}

/* A sliding layer keeps its window plus one block being filled, in blocks. */
static uint64_t window_bytes(calc *c, const kvshard__memory_inputs *in, uint64_t own)
{
    uint32_t block = in->options->block_size;
    c->in_block = true;
    uint64_t w =
        mul(c, mul(c, own, block), kvshard__ceil_div(in->model->sliding_window, block) + 1);
    c->in_block = false;
    return w;
}

static uint32_t own_heads(const kvshard__memory_inputs *in, uint32_t r)
{
    uint32_t first, count;
    if (in->model->num_kv_heads == 0)
        return 0;
    kvshard__kv_heads(&first, &count, in->model->num_kv_heads, in->tp, r, r);
    return count;
}

int kvshard__window_bytes(uint64_t *out, const kvshard__memory_inputs *in, kvshard_error *err)
{
    calc c = {false, false, false};
    uint64_t w = window_bytes(&c, in, layer_bytes(&c, in, own_heads(in, 0)));
    if (c.overflow)
        return overflow_error(&c, in, "the sliding-window bytes", err);
    *out = w;
    return KVSHARD_OK;
}

int kvshard__memory_ranks(kvshard_rank_memory *ranks, const kvshard__memory_inputs *in,
                          kvshard_error *err)
{
    const kvshard__model_info *m = in->model;
    const kvshard_options *o = in->options;
    calc c = {false, false, false};
    uint64_t state = state_bytes(&c, in);
    if (c.overflow)
        return overflow_error(&c, in, "the recurrent state bytes", err);
    bool split = in->split > 1;
    bool has_kv = kvshard__num_kv_layers(m) > 0;
    bool draft = o->num_speculative_tokens > 0 && o->engine != KVSHARD_ENGINE_XLLM;
    uint32_t H = m->num_kv_heads, T = in->tp;
    uint64_t group_bytes = 0, own = 0;
    uint32_t group_of_bytes = UINT32_MAX, heads_of_own = UINT32_MAX;
    uint32_t prev_heads = 0, prev_owned = 0; /* the inputs of rank r - 1 */
    uint64_t prev_stored = 0;
    /* When H and T divide one another, as planning requires of a model that
     * stores KV, every rank holds as many heads as rank 0: the divisions
     * of kvshard__kv_heads() are then done once, not for every rank. */
    bool same_heads = H == 0 || T % H == 0 || H % T == 0;
    uint32_t s = 0, g = 0; /* r % S_eff and r / S_eff, counted */
    for (uint32_t r = 0; r < T; r++) {
        /* Ranks differ only in their KV heads, their group's and the layers
         * they own, and most ranks share all three with the one before. */
        uint32_t heads = r > 0 && same_heads ? heads_of_own : own_heads(in, r);
        if (heads != heads_of_own) {
            own = layer_bytes(&c, in, heads);
            heads_of_own = heads;
        }
        uint64_t stored = own;
        if (split) {
            /* The owner of a layer holds the KV heads of its whole group. */
            if (g != group_of_bytes) {
                uint32_t first, count = 0;
                if (H)
                    kvshard__kv_heads(&first, &count, H, T, g * in->split,
                                      g * in->split + in->split - 1);
                group_bytes = layer_bytes(&c, in, count);
                group_of_bytes = g;
            }
            stored = group_bytes;
        }
        uint32_t owned = in->owned[s];
        if (++s == in->split) {
            s = 0;
            g++;
        }
        if (r > 0 && !c.overflow && heads == prev_heads && stored == prev_stored &&
            owned == prev_owned) {
            ranks[r] = ranks[r - 1]; /* the same figures, computed without an overflow */
            continue;
        }
        prev_heads = heads;
        prev_stored = stored;
        prev_owned = owned;
        kvshard_rank_memory f = KVSHARD_RANK_MEMORY_INIT;
        f.kv_bytes_per_token = mul(&c, owned, stored);
        f.scratch_bytes_per_token = split && has_kv ? mul(&c, o->scratch_layers, stored) : 0;
        f.draft_bytes_per_token = draft ? mul(&c, m->num_draft_layers, own) : 0;
        uint64_t per_token = add(&c, add(&c, f.kv_bytes_per_token, f.scratch_bytes_per_token),
                                 f.draft_bytes_per_token);
        c.in_block = true;
        f.bytes_per_block = mul(&c, o->block_size, per_token);
        c.in_block = false;
        uint64_t windows = m->num_sliding ? mul(&c, m->num_sliding, window_bytes(&c, in, own)) : 0;
        f.state_bytes_per_seq =
            add(&c, mul(&c, (uint64_t)m->num_linear + m->num_hybrid, state), windows);
        if (c.overflow) {
            char what[64];
            snprintf(what, sizeof what, "the memory figures of TP rank %u", r);
            return overflow_error(&c, in, what, err);
        }
        ranks[r] = f;
    }
    return KVSHARD_OK;
}

void kvshard__largest_figures(uint64_t *out_kv_bytes_per_token, uint64_t *out_bytes_per_block,
                              const kvshard_rank_memory *ranks, uint32_t tp)
{
    uint64_t kv = 0, block = 0;
    for (uint32_t r = 0; r < tp; r++) {
        kv = ranks[r].kv_bytes_per_token > kv ? ranks[r].kv_bytes_per_token : kv;
        block = ranks[r].bytes_per_block > block ? ranks[r].bytes_per_block : block;
    }
    *out_kv_bytes_per_token = kv;
    *out_bytes_per_block = block;
}
