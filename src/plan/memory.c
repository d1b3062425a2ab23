/* Per-rank bytes per token, per block and per sequence, worked out per
 * cache class (the layers that cache the same bytes) rather than per
 * layer. All arithmetic is 64-bit and checked: an overflow is an error,
 * never a wrapped number. */
#include "plan/memory.h"
#include "base/abi.h"

#include "base/checked.h"
#include "model/states.h"
#include "profile/capacity.h"
#include "profile/profile.h"

#include <stdio.h>
#include <string.h>

typedef kvshard__calc calc;
#define mul kvshard__calc_mul
#define add kvshard__calc_add

static int overflow_error(const calc *c, const kvshard__memory_inputs *in, const char *what,
                          kvshard_diag__ctx *diag)
{
    if (c->block_blamed)
        return kvshard_diag__fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW,
                                  "%s overflow 64 bits at block_size %u tokens", what,
                                  in->options->block_size);
    return kvshard_error__fail(diag->err, KVSHARD_EOVERFLOW, in->model_source,
                               kvshard_error__no_mark,
                               "%s overflow 64 bits: the model's dimensions are too large", what);
}

uint32_t kvshard_memory__replication_factor(const kvshard__model_info *model, uint32_t tp)
{
    if (kvshard__num_kv_layers(model) == 0)
        return 1;
    if (model->attention != KVSHARD_ATTENTION_GQA)
        return tp; /* one latent, on every rank */
    uint32_t H = model->full.heads;
    return H && H < tp ? tp / H : 1;
}

kvshard_dtype kvshard_memory__state_dtype(const kvshard__model_info *model,
                                          const kvshard_options *options)
{
    if (model->state.dtype == KVSHARD_DTYPE_AUTO) /* no temporal state */
        return KVSHARD_DTYPE_AUTO;
    return options->state_dtype != KVSHARD_DTYPE_AUTO ? options->state_dtype : model->state.dtype;
}

void kvshard_memory__kv_heads(uint32_t *out_first, uint32_t *out_count, uint32_t heads, uint32_t tp,
                       uint32_t first, uint32_t last)
{
    if (heads == 0) {
        *out_first = 0;
        *out_count = 0;
        return;
    }
    uint64_t lo = (uint64_t)first * heads / tp;
    uint64_t hi = kvshard__ceil_div(((uint64_t)last + 1) * heads, tp);
    *out_first = (uint32_t)lo;
    *out_count = (uint32_t)(hi - lo);
}

kvshard_dtype kvshard_memory__kv_cache_dtype(const kvshard__model_info *model,
                                      const kvshard_options *options)
{
    kvshard_dtype d = options->kv_cache_dtype;
    return d == KVSHARD_DTYPE_AUTO ? model->dtype : d;
}

/* Bytes per cached element. */
static unsigned kv_element_bytes(const kvshard__model_info *m, const kvshard_options *o)
{
    return kvshard_dtype__bytes(kvshard_memory__kv_cache_dtype(m, o));
}

bool kvshard_memory__kv_cache_fp8(const kvshard__model_info *model, const kvshard_options *options)
{
    return kv_element_bytes(model, options) == 1;
}

/* ---- one entry of each shape ---------------------------------------------------------- */

kvshard__entry_layout kvshard_memory__entry_layout(const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    unsigned e = kv_element_bytes(m, in->options);
    kvshard__entry_layout l = {e, e, e, 0, 0, 0};
    uint64_t d = m->index_head_dim;
    if (in->mla_v2_bytes) {
        l.index_scale_bytes = e == 1 ? 4 : 0;
    } else {
        /* fp8 with an fp32 scale per 128 elements, whatever the KV dtype. */
        l.index_element_bytes = 1;
        l.index_scale_bytes = (uint32_t)(4 * kvshard__ceil_div(d, 128));
    }
    if (e != 1)
        return l;
    /* fp32 scales, one for K and one for V per head. */
    l.head_scale_bytes = 8;
    if (m->attention == KVSHARD_ATTENTION_COMPRESSED) {
        /* The fp8 NoPE part, the bf16 RoPE part and a scale byte per 64
         * NoPE elements, rounded up to 8 bytes: the padding counts with
         * the scales. */
        uint64_t rope = m->qk_rope_head_dim, nope = m->latent_dim - rope;
        uint64_t raw = nope + 2 * rope + kvshard__ceil_div(nope, 64);
        l.rope_element_bytes = 2;
        l.latent_scale_bytes = (uint32_t)((raw + 7) / 8 * 8 - nope - 2 * rope);
    } else if (m->has_indexer && !in->mla_v2_bytes) {
        /* A DSA model keeps the layout both mainstream engines use: fp8
         * NoPE part with an fp32 scale per 128 elements, RoPE part in bf16. */
        l.rope_element_bytes = 2;
        l.latent_scale_bytes = (uint32_t)(4 * kvshard__ceil_div(m->kv_lora_rank, 128));
    } else {
        l.latent_scale_bytes = 4; /* one scale for the whole latent */
    }
    return l;
}

/* One token of GQA KV with `heads` heads of geometry `g`: K and V, and
 * their scales. */
static uint64_t gqa_entry(calc *c, const kvshard__memory_inputs *in, const kvshard__geometry *g,
                          uint64_t heads)
{
    kvshard__entry_layout l = kvshard_memory__entry_layout(in);
    uint64_t b = mul(c, mul(c, heads, (uint64_t)g->k_dim + g->v_dim), l.element_bytes);
    return add(c, b, mul(c, l.head_scale_bytes, heads));
}

/* One token of an MLA latent: the NoPE part, the RoPE part and the scales. */
static uint64_t mla_entry(calc *c, const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    kvshard__entry_layout l = kvshard_memory__entry_layout(in);
    return add(c,
               add(c, mul(c, m->kv_lora_rank, l.element_bytes),
                   mul(c, m->qk_rope_head_dim, l.rope_element_bytes)),
               l.latent_scale_bytes);
}

/* One indexer key and its scales. */
static uint64_t index_key(calc *c, const kvshard__memory_inputs *in)
{
    kvshard__entry_layout l = kvshard_memory__entry_layout(in);
    return add(c, mul(c, in->model->index_head_dim, l.index_element_bytes), l.index_scale_bytes);
}

uint64_t kvshard_memory__index_key_bytes(const kvshard__memory_inputs *in)
{
    calc c = {false, false, false};
    return index_key(&c, in);
}

/* One entry of a compressed model's latent: its NoPE and RoPE parts and the
 * scales with the padding. */
static uint64_t latent_entry(calc *c, const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    kvshard__entry_layout l = kvshard_memory__entry_layout(in);
    uint64_t rope = m->qk_rope_head_dim, nope = m->latent_dim - rope;
    return add(c, add(c, mul(c, nope, l.element_bytes), mul(c, rope, l.rope_element_bytes)),
               l.latent_scale_bytes);
}

uint64_t kvshard_memory__window_tokens(const kvshard__memory_inputs *in, uint64_t tokens)
{
    uint32_t block = in->options->block_size;
    return (uint64_t)block * (kvshard__ceil_div(tokens, block) + 1);
}

/* The window of `tokens` tokens of `entry` bytes: whole blocks, plus the
 * block being filled. */
static uint64_t window(calc *c, const kvshard__memory_inputs *in, uint64_t entry, uint64_t tokens)
{
    c->in_block = true;
    uint64_t w = mul(c, entry, kvshard_memory__window_tokens(in, tokens));
    c->in_block = false;
    return w;
}

/* The smallest power of two at least n. */
static uint64_t pow2_at_least(uint64_t n)
{
    uint64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

/* A compressed layer: the window of latents, and, when it keeps its own
 * stream, one latent (and index key) per `ratio` tokens, rounded up per
 * layer, with the compressor's float32 state for ratios of 2 and more. */
static kvshard__cost compressed_cost(calc *c, const kvshard__memory_inputs *in,
                                     const kvshard__class *k)
{
    const kvshard__model_info *m = in->model;
    uint64_t E = latent_entry(c, in);
    bool index = k->flags & KVSHARD__LAYER_INDEX_KEY;
    kvshard__cost cost = {0, window(c, in, E, m->sliding_window), E};
    if (!(k->flags & KVSHARD__LAYER_STREAM) || k->ratio == 0)
        return cost;
    uint64_t X = index_key(c, in);
    cost.per_token = kvshard__ceil_div(E, k->ratio) + (index ? kvshard__ceil_div(X, k->ratio) : 0);
    kvshard__compressor comp = kvshard_memory__compressor(in, k);
    if (comp.slots)
        cost.per_seq = add(c, cost.per_seq,
                           mul(c, mul(c, comp.slots, comp.rows), mul(c, comp.dims, 4)));
    return cost;
}

kvshard__compressor kvshard_memory__compressor(const kvshard__memory_inputs *in,
                                               const kvshard__class *k)
{
    kvshard__compressor comp = {0, 0, 0};
    if (!(k->flags & KVSHARD__LAYER_STREAM) || k->ratio < 2)
        return comp;
    /* The ratio-4 compressor reads two overlapping windows. */
    uint64_t coff = k->ratio == 4 ? 2 : 1, spec = in->options->num_speculative_tokens;
    comp.slots = spec == 0 ? coff * k->ratio : pow2_at_least(coff * k->ratio + spec);
    comp.rows = 2 * coff;
    comp.dims = (uint64_t)in->model->latent_dim +
                (k->flags & KVSHARD__LAYER_INDEX_KEY ? in->model->index_head_dim : 0);
    return comp;
}

/* What one layer of class `k` keeps, with `full` heads of the full geometry
 * and `sliding` of the sliding one. */
static kvshard__cost class_cost(calc *c, const kvshard__memory_inputs *in, const kvshard__class *k,
                                uint32_t full, uint32_t sliding)
{
    const kvshard__model_info *m = in->model;
    bool gqa = m->attention == KVSHARD_ATTENTION_GQA;
    kvshard__cost cost = {0, 0, 0};
    switch (kvshard_kinds__of(k->kind)->shape) {
    case KVSHARD__SHAPE_KV:
        cost.per_token = gqa ? gqa_entry(c, in, &m->full, full) : mla_entry(c, in);
        if (k->flags & KVSHARD__LAYER_INDEX_KEY)
            cost.per_token = add(c, cost.per_token, index_key(c, in));
        if (k->flags & (KVSHARD__LAYER_SPARSE_K | KVSHARD__LAYER_SPARSE_KV)) {
            /* One head, in the model dtype, on every rank that keeps the layer. */
            uint64_t parts = k->flags & KVSHARD__LAYER_SPARSE_KV ? 2 : 1;
            cost.per_token =
                add(c, cost.per_token,
                    mul(c, parts * m->sparse_index_dim, kvshard_dtype__bytes(m->dtype)));
        }
        cost.entry = cost.per_token;
        break;
    case KVSHARD__SHAPE_WINDOW:
        cost.entry = gqa ? gqa_entry(c, in, &m->sliding, sliding) : mla_entry(c, in);
        cost.per_seq = window(c, in, cost.entry, m->sliding_window);
        break;
    case KVSHARD__SHAPE_CHUNK:
        cost.entry = gqa ? gqa_entry(c, in, &m->full, full) : mla_entry(c, in);
        cost.per_seq = window(c, in, cost.entry, m->chunk_size);
        break;
    case KVSHARD__SHAPE_COMPRESSED: cost = compressed_cost(c, in, k); break;
    case KVSHARD__SHAPE_NONE:
    default: break;
    }
    return cost;
}

int kvshard_memory__layer_cost(kvshard__cost *out, const kvshard__memory_inputs *in, uint8_t cls,
                        uint32_t full_heads, uint32_t sliding_heads, kvshard_diag__ctx *diag)
{
    calc c = {false, false, false};
    kvshard__cost cost = class_cost(&c, in, &in->model->classes[cls], full_heads, sliding_heads);
    if (c.overflow)
        return overflow_error(&c, in, "the cache bytes of a layer", diag);
    *out = cost;
    return KVSHARD_OK;
}

/* The recurrent state of one linear or hybrid layer for one sequence on one
 * rank, by its kind's formula. */
static uint64_t state_bytes(calc *c, const kvshard__memory_inputs *in)
{
    kvshard_states__env env = kvshard_memory__state_env(in);
    return kvshard_states__bytes(c, &in->model->state, &env);
}

kvshard_states__env kvshard_memory__state_env(const kvshard__memory_inputs *in)
{
    const kvshard__model_info *m = in->model;
    kvshard_states__env env = {in->tp, in->options->num_speculative_tokens,
                               kvshard_dtype__bytes(m->dtype),
                               kvshard_dtype__bytes(kvshard_memory__state_dtype(m, in->options))};
    return env;
}

int kvshard_memory__state_bytes(uint64_t *out, const kvshard__memory_inputs *in,
                                kvshard_diag__ctx *diag)
{
    calc c = {false, false, false};
    uint64_t b = state_bytes(&c, in);
    if (c.overflow)
        return overflow_error(&c, in, "the recurrent state bytes", diag);
    *out = b;
    return KVSHARD_OK;
}

/* ---- every rank ------------------------------------------------------------------------- */

static uint32_t heads_of(uint32_t heads, uint32_t tp, uint32_t first, uint32_t last)
{
    uint32_t f, n;
    kvshard_memory__kv_heads(&f, &n, heads, tp, first, last);
    return n;
}

/* Whether H and T divide one another (0 heads: no geometry). */
static bool divides_either(uint32_t heads, uint32_t tp)
{
    return heads == 0 || heads % tp == 0 || tp % heads == 0;
}

/* Every class's cost with the given heads, into costs[0 .. classes). */
static void all_costs(kvshard__cost *costs, calc *c, const kvshard__memory_inputs *in,
                      uint32_t full, uint32_t sliding)
{
    const kvshard__model_info *m = in->model;
    for (uint32_t k = 0; k < m->num_classes; k++)
        costs[k] = class_cost(c, in, &m->classes[k], full, sliding);
}

/* What a rank keeps: `row` its owned KV layers per class, `stored` the
 * costs of the KV classes as it stores them (its group's heads while
 * split), `own` every class with its own heads. */
static kvshard_rank_memory rank_figures(calc *c, const kvshard__memory_inputs *in,
                                        const uint32_t *row, const kvshard__cost *stored,
                                        const kvshard__cost *own, uint64_t state)
{
    const kvshard__model_info *m = in->model;
    const kvshard_options *o = in->options;
    const uint32_t *census = in->layers->class_census;
    bool split = in->split > 1;
    bool draft = o->num_speculative_tokens > 0 && in->count_draft_layers;
    kvshard_rank_memory f;
    KVSHARD__INIT_BYTES(f, kvshard_rank_memory, KVSHARD_RANK_MEMORY_INIT);
    uint64_t per_seq = mul(c, in->layers->num_state, state);
    uint64_t widest_token = 0, widest_seq = 0, drafts = 0;
    for (uint32_t k = 0; k < m->num_classes; k++) {
        if (kvshard_kinds__paged(m->classes[k].kind)) {
            f.kv_bytes_per_token =
                add(c, f.kv_bytes_per_token, mul(c, row[k], stored[k].per_token));
            per_seq = add(c, per_seq, mul(c, row[k], stored[k].per_seq));
            if (census[k] > 0) {
                widest_token = stored[k].per_token > widest_token ? stored[k].per_token
                                                                  : widest_token;
                widest_seq = stored[k].per_seq > widest_seq ? stored[k].per_seq : widest_seq;
            }
        } else {
            /* Windows and chunks stay on every rank. */
            per_seq = add(c, per_seq, mul(c, census[k], own[k].per_seq));
        }
        if (draft && m->draft_census[k] > 0) {
            drafts = add(c, drafts, mul(c, m->draft_census[k], own[k].per_token));
            f.draft_bytes_per_seq =
                add(c, f.draft_bytes_per_seq, mul(c, m->draft_census[k], own[k].per_seq));
        }
    }
    /* While split, a rank computes each KV layer it does not own from a
     * scratch copy: room for the largest. */
    if (split && in->layers->num_kv > 0) {
        f.scratch_bytes_per_token = mul(c, o->scratch_layers, widest_token);
        f.scratch_bytes_per_seq = mul(c, o->scratch_layers, widest_seq);
    }
    f.draft_bytes_per_token = drafts;
    uint64_t per_token =
        add(c, add(c, f.kv_bytes_per_token, f.scratch_bytes_per_token), f.draft_bytes_per_token);
    c->in_block = true;
    f.bytes_per_block = mul(c, o->block_size, per_token);
    c->in_block = false;
    f.state_bytes_per_seq = add(c, per_seq, f.draft_bytes_per_seq);
    return f;
}

int kvshard_memory__ranks(kvshard_rank_memory *ranks, const kvshard__memory_inputs *in,
                          const uint32_t *which, uint32_t n, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = in->model;
    calc c = {false, false, false};
    uint64_t state = state_bytes(&c, in);
    if (c.overflow)
        return overflow_error(&c, in, "the recurrent state bytes", diag);
    uint32_t T = in->tp, S = in->split, C = m->num_classes;
    bool split = S > 1;
    kvshard__cost own[KVSHARD__MAX_CLASSES], stored[KVSHARD__MAX_CLASSES];
    /* The inputs the costs were last worked out for, and the rank before's. */
    uint32_t own_full = UINT32_MAX, own_sliding = UINT32_MAX, group_full = UINT32_MAX;
    const uint32_t *prev_row = NULL;
    /* When T and each geometry's heads divide one another, as planning
     * requires of the geometries a plan uses, every rank holds as many
     * heads of its own as the first: those divisions are done once. */
    bool even = divides_either(m->full.heads, T) && divides_either(m->sliding.heads, T);
    uint32_t full0 = heads_of(m->full.heads, T, 0, 0),
             sliding0 = heads_of(m->sliding.heads, T, 0, 0);
    /* A split group's union is not the same for every group: with fewer
     * KV heads than ranks a group can straddle two heads' replicas (H 4,
     * T 12, S 2: ranks 2 and 3 hold heads 0 and 1), so each group's is
     * worked out from its own ranks. */
    uint32_t gfull = full0, group = UINT32_MAX;
    uint32_t s = 0, g = 0; /* r % S_eff and r / S_eff, counted when every rank is listed */
    for (uint32_t j = 0; j < n; j++) {
        uint32_t r = which ? which[j] : j;
        uint32_t rs = which ? r % S : s, rg = which ? r / S : g;
        if (!which && ++s == S) {
            s = 0;
            g++;
        }
        /* Ranks differ only in their heads, their group's and the layers
         * they own, and most ranks share all three with the one before. */
        uint32_t full = even ? full0 : heads_of(m->full.heads, T, r, r);
        uint32_t sliding = even ? sliding0 : heads_of(m->sliding.heads, T, r, r);
        if (!split) {
            gfull = full;
        } else if (rg != group) {
            gfull = heads_of(m->full.heads, T, rg * S, rg * S + S - 1);
            group = rg;
        }
        const uint32_t *row = in->owned + (size_t)rs * C;
        if (j > 0 && !c.overflow && full == own_full && sliding == own_sliding &&
            gfull == group_full && memcmp(row, prev_row, C * sizeof *row) == 0) {
            ranks[j] = ranks[j - 1]; /* the same figures, computed without an overflow */
            continue;
        }
        if (full != own_full || sliding != own_sliding) {
            all_costs(own, &c, in, full, sliding);
            own_full = full;
            own_sliding = sliding;
            group_full = UINT32_MAX;
        }
        if (split && gfull != group_full)
            all_costs(stored, &c, in, gfull, sliding);
        group_full = gfull;
        prev_row = row;
        ranks[j] = rank_figures(&c, in, row, split ? stored : own, own, state);
        if (c.overflow) {
            char what[64];
            snprintf(what, sizeof what, "the memory figures of TP rank %u", r);
            return overflow_error(&c, in, what, diag);
        }
    }
    return KVSHARD_OK;
}

bool kvshard_memory__ranks_alike(const kvshard__model_info *m, uint32_t tp)
{
    return divides_either(m->full.heads, tp) && divides_either(m->sliding.heads, tp);
}

uint32_t kvshard_memory__other_group(const kvshard__model_info *m, uint32_t tp, uint32_t split)
{
    /* Group g's union is 1 + floor((o + S - 1) / R) heads, o = g S mod R its
     * start within a head's R = T / H replicas: with e = S mod R, group 0's
     * (o = 0) or one more once o > R - e. o steps by e modulo R, first past
     * R - e at g = floor(R / e) unless e divides R, when it lands on R - e
     * and wraps to 0; that g is below T / S, as lcm(S, R) divides T. */
    uint32_t H = m->full.heads;
    if (split <= 1 || H == 0 || H >= tp || tp % H != 0)
        return 0; /* whole heads a rank (every group holds S times a rank's), or not alike */
    uint32_t R = tp / H, e = split % R;
    return e == 0 || R % e == 0 ? 0 : R / e;
}

int kvshard_memory__stage_ranks(kvshard_rank_memory *ranks, const kvshard__memory_inputs *in,
                         const kvshard__range *stages, uint32_t pp, const uint32_t *owned,
                         kvshard_diag__ctx *diag)
{
    size_t row = (size_t)in->split * in->model->num_classes;
    for (uint32_t s = 0; s < pp; s++) {
        kvshard__memory_inputs stage = *in;
        stage.layers = &stages[s];
        stage.count_draft_layers = in->count_draft_layers && s + 1 == pp;
        if (owned) {
            stage.owned = owned + s * row;
        } else {
            stage.split = 1;
            stage.owned = stages[s].class_census; /* one split rank owns every KV layer */
        }
        int rc = kvshard_memory__ranks(ranks + (size_t)s * in->tp, &stage, NULL, in->tp, diag);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

int kvshard_memory__unsplit_bytes_per_block(uint64_t *out, const kvshard__memory_inputs *in,
                                     kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = in->model;
    calc c = {false, false, false};
    uint32_t full = heads_of(m->full.heads, in->tp, 0, 0);
    uint32_t sliding = heads_of(m->sliding.heads, in->tp, 0, 0);
    uint64_t per_token = 0;
    for (uint32_t k = 0; k < m->num_classes; k++) {
        uint32_t n = in->layers->class_census[k];
        if (n && kvshard_kinds__paged(m->classes[k].kind))
            per_token =
                add(&c, per_token,
                    mul(&c, n, class_cost(&c, in, &m->classes[k], full, sliding).per_token));
    }
    c.in_block = true;
    *out = mul(&c, per_token, in->options->block_size);
    if (c.overflow)
        return overflow_error(&c, in, "the unsplit bytes per block", diag);
    return KVSHARD_OK;
}

void kvshard_memory__largest_figures(uint64_t *out_kv_bytes_per_token,
                                     uint64_t *out_bytes_per_block,
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
