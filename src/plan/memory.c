/* Per-rank bytes per token, per block and per sequence. All arithmetic is
 * 64-bit and checked: an overflow is an error, never a wrapped number. */
#include "plan/memory.h"

#include "base/checked.h"
#include "model/states.h"

#include <stdio.h>

typedef kvshard__calc calc;
#define mul kvshard__calc_mul
#define add kvshard__calc_add

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

/* The recurrent state of one linear or hybrid layer for one sequence on one
 * rank, by its kind's formula. */
static uint64_t state_bytes(calc *c, const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    kvshard_states__env env = {in->tp, in->options->num_speculative_tokens,
                               kvshard__dtype_bytes(m->dtype),
                               kvshard__dtype_bytes(kvshard__state_dtype(m, in->options))};
    return kvshard_states__bytes(c, &m->state, &env);
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
    bool has_kv = in->layers->num_kv > 0;
    bool draft = o->num_speculative_tokens > 0 && in->count_draft_layers;
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
        /* Per sequence: the state of every layer that keeps one, and the
         * window of every layer that keeps a window, each on every rank. */
        uint64_t per_seq = 0;
        for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
            const kvshard_kinds__row *row = kvshard_kinds__of(k);
            uint64_t n = in->layers->census[k];
            if (n && row->state)
                per_seq = add(&c, per_seq, mul(&c, n, state));
            if (n && row->window)
                per_seq = add(&c, per_seq, mul(&c, n, window_bytes(&c, in, own)));
        }
        f.state_bytes_per_seq = per_seq;
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
