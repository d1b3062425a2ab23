/* The price of a layerwise split (docs/comm.md): per split layer, the
 * collectives of the mechanism in force, each priced at a latency plus its
 * busiest port's bytes over the link; a decode step's floor from the bytes
 * it reads over the memory bandwidth; and the throughput both give. */
#include "explore/comm.h"

#include "base/checked.h"
#include "base/error.h"
#include "kvshard/explore.h"
#include "model/dtype.h"
#include "model/kinds.h"
#include "model/weights.h"
#include "plan/memory.h"
#include "plan/plan.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

bool kvshard_comm__given(const kvshard_plan *p)
{
    return p && p->comm_given;
}

bool kvshard_comm__published_for(const kvshard_plan *p)
{
    return p->model.attention == KVSHARD_ATTENTION_MLA && p->model.has_indexer;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return b ? a / b + (a % b != 0) : 0;
}

/* α(S): at least ⌈log2 S⌉ dependent rounds by default. */
static double alpha_of(const kvshard__comm *c, uint32_t s)
{
    if (c->alpha_rule == KVSHARD__ALPHA_FLAT)
        return c->link_latency_us;
    if (c->alpha_rule == KVSHARD__ALPHA_LINEAR)
        return c->link_latency_us * (double)(s - 1);
    unsigned rounds = 0;
    while ((1u << rounds) < s)
        rounds++;
    return c->link_latency_us * rounds;
}

/* What a split layer's owner keeps per token: its KV part (a GQA layer's
 * KV for the union of its group's heads, an MLA latent) and its index part
 * (a DSA indexer key), which move as separate collectives. GQA and MLA
 * full attention with linear and no-cache layers beside it, all KV layers
 * of one class, are modelled; the rest is refused by name. */
typedef struct layer_bytes {
    uint64_t row_kv;           /* r_kv: per token, as the owner stores it */
    uint64_t index;            /* x: its indexer key per token; 0 without one */
    uint64_t row_own_kv;       /* per token for one rank's own heads */
    uint64_t state;            /* one linear layer's state per sequence */
    uint64_t q_width, o_width; /* query and output elements per head */
} layer_bytes;

/* The layout an estimate prices: the plan's own, or the plan at S = 1 that
 * its split is compared against (the plan's own count of its unsplit
 * ranks, so that no second plan is made). */
typedef struct layout {
    uint32_t split;
    const kvshard__capacity *cap;
    const kvshard_rank_memory *ranks; /* stage 0's TP ranks first */
    const uint32_t *owned_counts;     /* stage 0's split ranks' KV layers first */
} layout;

static layout own_layout(const kvshard_plan *p)
{
    layout l = {p->split, &p->cap, p->ranks, p->owned_counts};
    return l;
}

/* Item `i` of a list of `total`, "a, b and c", appended at buf[*used]; a
 * list cut at `cap` takes nothing more. */
static void list_item(char *buf, size_t cap, size_t *used, size_t i, size_t total,
                      const char *item)
{
    if (*used >= cap)
        return;
    const char *sep = i == 0 ? "" : i + 1 == total ? " and " : ", ";
    int n = snprintf(buf + *used, cap - *used, "%s%s", sep, item);
    *used = n < 0 ? cap : *used + (size_t)n;
}

/* The kinds the estimate prices, for a message: "full-attention, linear
 * and no-cache". */
static void priced_kinds(char *buf, size_t cap)
{
    size_t total = 0, i = 0, used = 0;
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        total += kvshard_kinds__of(k)->comm_priced;
    buf[0] = '\0';
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(k);
        if (row->comm_priced)
            list_item(buf, cap, &used, i++, total, row->adjective);
    }
}

/* Whether plan `p`'s layers are all of kinds the estimate prices with one
 * KV class at most (into *kv_class; -1 for none), from its layers' census. */
static bool priced_census(int *kv_class, const kvshard_plan *p)
{
    const kvshard__range *all = &p->layers;
    *kv_class = -1;
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        if (all->census[k] && !kvshard_kinds__of(k)->comm_priced)
            return false;
    for (uint32_t c = 0; c < p->model.num_classes; c++) {
        if (!all->class_census[c] || !kvshard_kinds__paged(p->model.classes[c].kind))
            continue;
        if (*kv_class >= 0)
            return false;
        *kv_class = (int)c;
    }
    return true;
}

/* The per-token rows of `lb` that depend on the layout: what an owner
 * stores, and what it stores for one rank's own heads. */
static void layout_rows(layer_bytes *lb, const kvshard_plan *p, const layout *lay)
{
    uint64_t row = 0;
    /* Every KV layer is of one class: a rank's bytes over its layers. */
    for (uint32_t r = 0; r < lay->split; r++) {
        uint32_t owned = lay->owned_counts[r];
        if (owned) {
            row = lay->ranks[r].kv_bytes_per_token / owned;
            break;
        }
    }
    lb->row_kv = row > lb->index ? row - lb->index : 0;
    /* Past R, a GQA owner stores the heads of S/R ranks (docs/planning.md). */
    uint32_t widen =
        lay->split > p->replication && p->replication ? lay->split / p->replication : 1;
    lb->row_own_kv = lb->row_kv / (widen ? widen : 1);
}

static int layer_bytes_of(layer_bytes *lb, const kvshard_plan *p, const layout *lay,
                          kvshard_error *err)
{
    const kvshard__model_info *m = &p->model;
    if (m->attention == KVSHARD_ATTENTION_COMPRESSED || m->sparse_index_dim)
        return kvshard_error__fail(err, KVSHARD_EUNMODELED, "", kvshard_error__no_mark,
                                   "comm: the estimate prices GQA and MLA attention so far; "
                                   "compressed attention and GQA sparse-index keys are not "
                                   "priced yet");
    int kv_class = -1;
    bool census_priced = priced_census(&kv_class, p);
    if (!census_priced)
        kv_class = -1;
    /* The layers are visited only to name what is refused. */
    for (uint32_t i = 0; !census_priced && i < m->num_layers; i++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(p->kinds[i]);
        if (!row->comm_priced) {
            char priced[160];
            priced_kinds(priced, sizeof priced);
            return kvshard_error__fail(err, KVSHARD_EUNMODELED, "", kvshard_error__no_mark,
                                       "comm: layer %u is a %s layer; the estimate prices %s "
                                       "layers so far",
                                       i, row->adjective, priced);
        }
        if (!row->paged_kv)
            continue;
        if (kv_class >= 0 && p->class_of[i] != kv_class)
            return kvshard_error__fail(err, KVSHARD_EUNMODELED, "", kvshard_error__no_mark,
                                       "comm: layer %u caches otherwise than layer %u; the "
                                       "estimate prices KV layers of one kind so far",
                                       i, (unsigned)kv_class);
        kv_class = p->class_of[i];
    }
    memset(lb, 0, sizeof *lb);
    lb->state = p->state_per_layer;
    bool mla = m->attention == KVSHARD_ATTENTION_MLA;
    if (mla && m->has_indexer && kv_class >= 0) {
        /* A layer that reuses an earlier layer's top-k makes that layer a
         * producer, whose indices move too: not priced yet. */
        if (!(m->classes[kv_class].flags & KVSHARD__LAYER_INDEX_KEY))
            return kvshard_error__fail(err, KVSHARD_EUNMODELED, "", kvshard_error__no_mark,
                                       "comm: DSA layers that reuse another layer's top-k "
                                       "indices are not priced yet");
        kvshard__memory_inputs in = kvshard_plan__memory_inputs(p);
        lb->index = kvshard_memory__index_key_bytes(&in);
    }
    layout_rows(lb, p, lay);
    /* MLA is attended in absorbed form: the query in the latent and its
     * RoPE part, the output in the latent. */
    lb->q_width = mla ? (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim : m->full.k_dim;
    lb->o_width = mla ? m->kv_lora_rank : m->full.v_dim;
    return KVSHARD_OK;
}

/* One collective: its count, busiest port, what the group receives. */
typedef enum { ALL_GATHER, BROADCAST, SCATTER } collective;

static void add_n(kvshard__comm_traffic *t, const kvshard__comm *c, collective kind, uint64_t n,
                  uint64_t m)
{
    /* `n` collectives whose m sum to `m`: each figure is linear in m. */
    uint64_t s = c->split, busy = 0, wire = 0;
    bool ok = kvshard__mul(&busy, kind == BROADCAST ? 1 : s - 1, m) &&
              kvshard__mul(&wire, kind == ALL_GATHER ? s * (s - 1) : s - 1, m) &&
              kvshard__add(&t->link_bytes, t->link_bytes, busy) &&
              kvshard__add(&t->wire_bytes, t->wire_bytes, wire);
    t->overflow |= !ok;
    t->collectives += n;
}

static void add(kvshard__comm_traffic *t, const kvshard__comm *c, collective kind, uint64_t m)
{
    add_n(t, c, kind, 1, m);
}

/* Σ t over the collectives of `t`: each costs α(S) (`alpha_us`, worked
 * out once for every stage) plus its busiest port's bytes over β, summed
 * as one product and one quotient. */
static void price(kvshard__comm_traffic *t, const kvshard__comm *c, double alpha_us)
{
    if (c->has_link)
        t->comm_us = (double)t->collectives * alpha_us +
                     (double)t->link_bytes / ((double)c->link_bandwidth / 1e6);
}

/* Stage traffic `part` into the group's `sum`; the first stage's is the
 * sum so far, copied whole. */
static void add_stage(kvshard__comm_traffic *sum, const kvshard__comm_traffic *part, bool first)
{
    if (first) {
        *sum = *part;
        return;
    }
    sum->collectives += part->collectives;
    sum->overflow |= part->overflow ||
                     !kvshard__add(&sum->link_bytes, sum->link_bytes, part->link_bytes) ||
                     !kvshard__add(&sum->wire_bytes, sum->wire_bytes, part->wire_bytes);
    sum->comm_us += part->comm_us;
    sum->has_bytes = sum->has_bytes && part->has_bytes;
    sum->has_time = sum->has_time && part->has_time;
}

/* `n` times one layer's collectives `one`, into *t. */
static void times(kvshard__comm_traffic *t, const kvshard__comm_traffic *one, uint64_t n)
{
    t->collectives = n * one->collectives;
    t->overflow = one->overflow || !kvshard__mul(&t->link_bytes, n, one->link_bytes) ||
                  !kvshard__mul(&t->wire_bytes, n, one->wire_bytes);
}

/* The owner broadcasts a layer's rows in `n` collectives of each part,
 * `rows` rows in all: its KV part, then its index part when it has one. */
static void broadcast_rows(kvshard__comm_traffic *t, uint64_t *received, uint32_t rank,
                           const kvshard__comm *c, const layer_bytes *lb, uint32_t owner,
                           uint64_t n, uint64_t rows)
{
    uint64_t kv = 0, index = 0;
    t->overflow |= !kvshard__mul(&kv, rows, lb->row_kv) || !kvshard__mul(&index, rows, lb->index);
    add_n(t, c, BROADCAST, n, kv);
    if (lb->index)
        add_n(t, c, BROADCAST, n, index);
    if (rank != owner)
        t->overflow |=
            !kvshard__add(received, *received, kv) || !kvshard__add(received, *received, index);
}

/* Per decode step: what one split layer moves, as collectives into `t`;
 * *received gains what split rank `rank` receives (the owner is the root). */
static void decode_layer(kvshard__comm_traffic *t, uint64_t *received, uint32_t rank,
                         const kvshard__comm *c, const kvshard_plan *p, const layer_bytes *lb,
                         uint32_t owner)
{
    uint64_t a = c->activation_bytes, tau = c->tokens_per_step;
    uint64_t heads = p->tp ? p->query_heads / p->tp : 0;
    uint64_t width = lb->q_width, out_width = lb->o_width;
    uint64_t s = c->split;
    switch (c->decode_mechanism) {
    case KVSHARD__COMM_OWNER_ATTENTION: {
        uint64_t q = tau * heads * width * a;
        add(t, c, ALL_GATHER, q);
        uint64_t o =
            c->owner_scatter ? tau * heads * out_width * a : s * tau * heads * out_width * a;
        add(t, c, c->owner_scatter ? SCATTER : BROADCAST, o);
        *received += (s - 1) * q + (rank == owner ? 0 : o);
        break;
    }
    case KVSHARD__COMM_HISTORY_ROWS:
    case KVSHARD__COMM_FULL_LAYER: {
        /* Every sequence's history, or the whole pool; the index keys apart. */
        uint64_t rows = p->cap.num_blocks * p->options.block_size;
        if (c->decode_mechanism == KVSHARD__COMM_HISTORY_ROWS)
            t->overflow |= !kvshard__mul(&rows, c->microbatch, c->context_length);
        broadcast_rows(t, received, rank, c, lb, owner, 1, rows);
        break;
    }
    case KVSHARD__COMM_SELECTED_KV: {
        /* The owner's indexer picks index_topk rows for every query token:
         * their indices (int32), then their KV rows, so every rank attends
         * its own heads over them. A model without an indexer is refused
         * before any estimate. */
        uint64_t picked = tau * p->model.index_topk;
        uint64_t sent = 0;
        if (lb->index) {
            add(t, c, BROADCAST, picked * 4);
            sent += picked * 4;
        }
        add(t, c, BROADCAST, picked * lb->row_kv);
        sent += picked * lb->row_kv;
        *received += rank == owner ? 0 : sent;
        break;
    }
    default: break;
    }
}

/* Per prompt: every chunk with history moves the layer's rows, its
 * history (history_rows) or the whole pool (full_layer). Chunk j starts with
 * H + j x C tokens, so all but a first chunk without a prefix hit move;
 * summed in closed form, as a prompt may have a billion chunks. */
static void prefill_layer(kvshard__comm_traffic *t, uint64_t *received, uint32_t rank,
                          const kvshard__comm *c, const kvshard_plan *p, const layer_bytes *lb,
                          uint32_t owner)
{
    uint64_t moves = c->chunks - (c->chunks && c->prefix_hit == 0);
    uint64_t rows = c->history_rows;
    if (c->prefill_mechanism == KVSHARD__COMM_FULL_LAYER)
        t->overflow |= !kvshard__mul(&rows, moves, p->cap.num_blocks * p->options.block_size);
    if (moves)
        broadcast_rows(t, received, rank, c, lb, owner, moves, rows);
}

/* The bytes one sequence of a `context`-token history reads in a decode
 * step of stage `s`, `row` bytes for each KV row it attends (the owner reads
 * its group's heads of a split layer under owner attention). */
static uint64_t reads_per_sequence(const kvshard_plan *p, const layer_bytes *lb, uint64_t row,
                                   uint64_t context, uint32_t s)
{
    /* Every KV layer is of one class (layer_bytes_of): the stage's census
     * counts them, and its state layers, each read alike. A DSA layer reads
     * the latent of the index_topk rows its indexer selects, and every
     * row's index key to select them. */
    const kvshard__range *stage = &p->stages[s];
    uint64_t rows = lb->index && p->model.index_topk < context ? p->model.index_topk : context;
    uint64_t kv_layer = rows * row + context * lb->index;
    uint64_t total = stage->num_kv * kv_layer;
    total += stage->num_state * 2 * lb->state; /* read and written */
    return total;
}

/* A stage's base step: the bytes it reads over the memory bandwidth. */
static double base_us_of(uint64_t weights, uint64_t kv_read, uint64_t hbm_bandwidth)
{
    /* Bytes over bytes a microsecond: one rounding where the rate is whole
     * megabytes a second (every preset), so 38,291,421,984 B at 1.2 TB/s is
     * 31,909.51832 us as written, not 31,909.518319999996. */
    return (double)(weights + kv_read) / ((double)hbm_bandwidth / 1e6);
}

/* The weights one rank of stage `s` reads each step, from the plan's
 * device figures or from the sources a memory plan leaves unread. */
static bool stage_weights(uint64_t *out, const kvshard_plan *p, uint32_t s)
{
    const kvshard_options *o = &p->options;
    if (p->device.used && p->stage_weights) {
        *out = p->stage_weights[s];
        return true;
    }
    if (o->weights_per_rank_count && o->weights_per_rank) {
        *out = o->weights_per_rank[o->weights_per_rank_count == 1 ? 0 : s];
        return true;
    }
    if (o->weights_total) {
        uint64_t x = (uint64_t)o->dp_size * o->cp_size * p->tp;
        return kvshard_weights__estimate(out, o->weights_total, o->weights_experts,
                                         p->stages[s].count, p->model.num_layers, p->tp, x,
                                         NULL) == KVSHARD_OK;
    }
    return false;
}

/* The inputs in force: the given ones, the profile's mechanisms, the
 * presets' figures. */
static void settle_inputs(kvshard__comm *c, const kvshard_plan *p, uint32_t split)
{
    const kvshard__comm_inputs *in = &p->comm;
    /* Each figure is written where it is worked out; only these may stay
     * unset, and the verdicts' texts are written before they are read, so
     * the struct is not cleared whole. */
    c->warning_count = 0;
    c->has_unsplit = c->has_unsplit_capacity = c->unsplit_has_concurrency = c->has_gain = false;
    c->unsplit_batch = c->unsplit_concurrency = c->unsplit_blocks = 0;
    c->unsplit_base_us = c->unsplit_step_us = c->unsplit_throughput = c->throughput_gain = 0.0;
    c->split = split;
    c->decode_mechanism = in->decode ? in->decode : p->profile->comm.decode;
    c->prefill_mechanism = in->prefill ? in->prefill : p->profile->comm.prefill;
    c->mechanism_default =
        (!in->decode && c->decode_mechanism) || (!in->prefill && c->prefill_mechanism);
    c->owner_scatter = in->owner_output == 1;
    c->alpha_rule = in->alpha_rule;
    const kvshard_options__accelerator_preset *acc =
        kvshard_options__accelerator_preset_of(in->accelerator);
    c->has_accelerator = in->accelerator != KVSHARD__ACCEL_NONE || in->hbm_bandwidth;
    c->accelerator_name = acc->name;
    c->hbm_bandwidth = in->hbm_bandwidth ? in->hbm_bandwidth : acc->hbm_bandwidth;
    kvshard__comm_link link = in->link ? in->link : acc->link;
    const kvshard_options__link_preset *lp = kvshard_options__link_preset_of(link);
    c->link_name = lp->name;
    c->link_bandwidth = in->link_bandwidth ? in->link_bandwidth : lp->bandwidth;
    c->link_latency_us = in->has_link_latency ? in->link_latency_us : lp->latency_us;
    c->has_link = c->link_bandwidth > 0 && (link != KVSHARD__LINK_NONE || in->link_bandwidth);
    kvshard_dtype a = in->activation_dtype;
    if (a == KVSHARD_DTYPE_AUTO)
        a = p->model.dtype == KVSHARD_DTYPE_FP32 ? KVSHARD_DTYPE_FP32 : KVSHARD_DTYPE_BF16;
    c->activation_bytes = kvshard_dtype__bytes(a);
}

/* The decode base step of every stage, the binding stage's step and the
 * throughput; `stages` gains each stage's weights, base and step. */
static void price_steps(kvshard__comm *c, kvshard__comm_stage *stages, const kvshard_plan *p,
                        const layer_bytes *lb)
{
    bool weights_known = true;
    bool priced = c->has_accelerator && c->hbm_bandwidth && c->has_batch && c->context_length;
    bool owner_reads = c->split > 1 && c->decode_mechanism == KVSHARD__COMM_OWNER_ATTENTION;
    uint64_t row = owner_reads ? lb->row_kv : lb->row_own_kv;
    bool every_step = true;
    c->binding_stage = 0;
    for (uint32_t s = 0; s < p->pp; s++) {
        kvshard__comm_stage *st = &stages[s];
        uint64_t w = 0;
        bool has_w = stage_weights(&w, p, s);
        weights_known &= has_w;
        /* Kept even without a base: the unsplit reference reads it. */
        st->weights_bytes = w;
        st->has_base = priced && has_w;
        st->has_step = st->has_base && (c->split == 1 || st->decode.has_time);
        every_step &= st->has_step;
        if (!st->has_base) {
            st->kv_read_bytes = 0;
            st->base_us = st->step_us = 0.0;
            continue;
        }
        st->kv_read_bytes = c->microbatch * reads_per_sequence(p, lb, row, c->context_length, s);
        st->base_us = base_us_of(w, st->kv_read_bytes, c->hbm_bandwidth);
        double comm = c->split > 1 ? st->decode.comm_us : 0.0;
        st->step_us = c->overlap ? (st->base_us > comm ? st->base_us : comm) : st->base_us + comm;
        /* The first of the slowest stages binds; read only when all step. */
        if (st->step_us > stages[c->binding_stage].step_us)
            c->binding_stage = s;
    }
    c->no_weights = c->has_accelerator && !weights_known;
    c->has_step = priced && weights_known && every_step;
    if (!c->has_step) {
        c->binding_stage = 0;
        c->weights_bytes = c->kv_read_bytes = 0;
        c->base_us = c->step_us = c->tpot_us = c->throughput = c->throughput_total = 0.0;
        return;
    }
    const kvshard__comm_stage *b = &stages[c->binding_stage];
    c->weights_bytes = b->weights_bytes;
    c->kv_read_bytes = b->kv_read_bytes;
    c->base_us = b->base_us;
    c->step_us = b->step_us;
    c->tpot_us = p->pp * c->step_us;
    c->throughput = (double)c->batch / c->tpot_us * 1e6;
    c->throughput_total = c->throughput * p->options.dp_size;
}

/* The batch a step of capacity `cap` decodes: its concurrency, a given one
 * no more than it (false: neither); and each stage's microbatch of it. */
static bool settle_batch(uint64_t *batch, uint64_t *microbatch, const kvshard_plan *p,
                         const kvshard__capacity *cap)
{
    const kvshard__comm_inputs *in = &p->comm;
    *batch = in->batch ? in->batch : cap->concurrency;
    if (in->batch && cap->has_concurrency && cap->concurrency < *batch)
        *batch = cap->concurrency;
    *microbatch = ceil_div(*batch, p->pp);
    return in->batch || cap->has_concurrency;
}

/* The estimate of plan `p` in its own layout into *c, each stage's figures
 * into `stages`, and the bytes its layers move into *lb. */
static int estimate(kvshard__comm *c, kvshard__comm_stage *stages, layer_bytes *out_lb,
                    const kvshard_plan *p, kvshard_error *err)
{
    layout lay = own_layout(p);
    settle_inputs(c, p, lay.split);
    int rc = layer_bytes_of(out_lb, p, &lay, err);
    if (rc)
        return rc;
    if (c->decode_mechanism == KVSHARD__COMM_SELECTED_KV && !p->model.index_topk)
        return kvshard_error__fail(err, KVSHARD_EMISSING, "", kvshard_error__no_mark,
                                   "comm_input_missing: selected_kv broadcasts the index_topk "
                                   "rows the indexer selects for every query token, and the "
                                   "model config has no index_topk");
    const layer_bytes lb = *out_lb;
    const kvshard__comm_inputs *in = &p->comm;
    const kvshard__capacity *cap = lay.cap;
    c->context_length = p->options.context_length;
    c->has_batch = settle_batch(&c->batch, &c->microbatch, p, cap);
    c->batch_given = in->batch != 0;
    c->tokens_per_step = c->microbatch * (1 + (uint64_t)p->options.num_speculative_tokens);
    c->overlap = c->split > 1 && c->decode_mechanism == KVSHARD__COMM_FULL_LAYER;
    c->prompt_length = in->prompt_length ? in->prompt_length : p->options.context_length;
    c->chunk = in->chunk ? in->chunk : KVSHARD__COMM_DEFAULT_CHUNK;
    c->prefix_hit = in->prefix_hit;
    c->chunks = c->history_rows = 0;
    if (c->prompt_length) {
        c->chunks = ceil_div(c->prompt_length - c->prefix_hit, c->chunk);
        c->history_rows = c->chunks * c->prefix_hit + c->chunk * c->chunks * (c->chunks - 1) / 2;
    }
    bool decode_bytes = c->decode_mechanism == KVSHARD__COMM_FULL_LAYER ? cap->has_num_blocks
                        : c->decode_mechanism == KVSHARD__COMM_HISTORY_ROWS
                            ? c->has_batch && c->context_length
                            : c->has_batch;
    bool prefill_bytes = c->prompt_length &&
                         (c->prefill_mechanism != KVSHARD__COMM_FULL_LAYER || cap->has_num_blocks);
    /* The group's totals; what each rank receives is
     * kvshard_comm__rank_received's. Every split layer is of one class and
     * moves alike whoever owns it: one layer's collectives, times the KV
     * layers each stage's split ranks own. */
    kvshard__comm_traffic decode = {0}, prefill = {0};
    if (c->split > 1) {
        uint64_t unused = 0;
        decode_layer(&decode, &unused, 0, c, p, &lb, 0);
        prefill_layer(&prefill, &unused, 0, c, p, &lb, 0);
    }
    double alpha_us = alpha_of(c, c->split);
    for (uint32_t s = 0; s < p->pp; s++) {
        kvshard__comm_stage *st = &stages[s];
        uint64_t split_layers = 0;
        for (uint32_t k = 0; c->split > 1 && k < c->split; k++)
            split_layers += p->owned_counts[(size_t)s * c->split + k];
        st->decode = st->prefill = (kvshard__comm_traffic){0};
        times(&st->decode, &decode, split_layers);
        times(&st->prefill, &prefill, split_layers);
        price(&st->decode, c, alpha_us);
        price(&st->prefill, c, alpha_us);
        st->decode.has_bytes = decode_bytes && c->decode_mechanism != KVSHARD__COMM_NONE;
        st->decode.has_time = st->decode.has_bytes && c->has_link;
        st->prefill.has_bytes = prefill_bytes && c->prefill_mechanism != KVSHARD__COMM_NONE;
        st->prefill.has_time = st->prefill.has_bytes && c->has_link;
        if (c->split == 1) {
            /* Nothing is split: every figure is 0, known without a link. */
            st->decode.has_bytes = st->decode.has_time = true;
            st->prefill.has_bytes = st->prefill.has_time = c->prompt_length != 0;
        }
        add_stage(&c->decode, &st->decode, s == 0);
        add_stage(&c->prefill, &st->prefill, s == 0);
    }
    if (c->prefill.overflow)
        return kvshard_error__fail(err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                                   "comm_value: a prompt of %u tokens in chunks of %u moves more "
                                   "than 2^64 - 1 bytes over the split's links; give a larger "
                                   "comm_chunk or a shorter comm_prompt_length",
                                   c->prompt_length, c->chunk);
    if (c->decode.overflow)
        return kvshard_error__fail(err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                                   "comm_value: a decode step of %llu sequences moves more than "
                                   "2^64 - 1 bytes over the split's links; give a smaller "
                                   "comm_batch",
                                   (unsigned long long)c->batch);
    if (c->has_accelerator && lb.index && !p->model.index_topk)
        return kvshard_error__fail(err, KVSHARD_EMISSING, "", kvshard_error__no_mark,
                                   "comm_input_missing: the decode base step of a DSA model "
                                   "reads the latent of the index_topk rows its indexer "
                                   "selects, and the model config has no index_topk");
    price_steps(c, stages, p, &lb);
    return KVSHARD_OK;
}

static void add_warning(kvshard__comm *c, kvshard_warning_code code, const char *fmt, ...)
    KVSHARD__PRINTF(3, 4);
static void add_warning(kvshard__comm *c, kvshard_warning_code code, const char *fmt, ...)
{
    if (c->warning_count >= KVSHARD__COMM_WARNINGS)
        return;
    kvshard__warning *w = &c->warnings[c->warning_count++];
    w->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
}

/* The verdicts on the split: a stage whose decode communication is half
 * its base step or more pays at least half a base step on every step, which
 * only a capacity gain above 1.5x repays; and, when both throughputs are
 * known, whether the split decodes slower than the plan without it. */
static void verdicts(kvshard__comm *c, const kvshard__comm_stage *stages, uint32_t pp)
{
    if (c->split < 2)
        return;
    for (uint32_t s = 0; s < pp; s++) {
        const kvshard__comm_stage *st = &stages[s];
        if (!st->has_base || !st->decode.has_time || st->decode.comm_us < st->base_us / 2)
            continue;
        add_warning(c, KVSHARD_WARN_SPLIT_COMM_DOMINATES,
                    "stage %u: the split's decode communication, %.2f ms a step, is at least "
                    "half the %.2f ms base step (estimate)",
                    s, st->decode.comm_us / 1000.0, st->base_us / 1000.0);
        break;
    }
    if (c->has_step && c->has_unsplit && c->throughput < c->unsplit_throughput)
        add_warning(c, KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT,
                    "the split decodes %.1f tokens/s at a batch of %llu, below the %.1f tokens/s "
                    "of the plan without it at a batch of %llu (estimate): it holds more "
                    "sequences but serves them slower",
                    c->throughput, (unsigned long long)c->batch, c->unsplit_throughput,
                    (unsigned long long)c->unsplit_batch);
}

/* Stages and ranks of up to these counts sit on the stack. */
#define SCRATCH_STAGES 8u
#define SCRATCH_RANKS 16u

/* The decode step of plan `p` at S = 1 into out's unsplit figures, at a
 * batch of `batch`: nothing moves, so each stage's step is its base, from
 * the weights the split estimate found for it (`stages`) and the rows `ulb`
 * an unsplit owner stores. */
static void unsplit_step(kvshard__comm *out, const kvshard__comm_stage *stages,
                         const kvshard_plan *p, const layer_bytes *ulb, uint64_t batch,
                         uint64_t microbatch)
{
    double step_us = 0.0;
    for (uint32_t s = 0; s < p->pp; s++) {
        uint64_t kv_read =
            microbatch * reads_per_sequence(p, ulb, ulb->row_own_kv, out->context_length, s);
        double base_us = base_us_of(stages[s].weights_bytes, kv_read, out->hbm_bandwidth);
        if (s == 0 || base_us > step_us)
            step_us = base_us;
    }
    out->has_unsplit = true;
    out->unsplit_batch = batch;
    out->unsplit_base_us = out->unsplit_step_us = step_us;
    out->unsplit_throughput = (double)batch / (p->pp * step_us) * 1e6;
}

/* The same estimate at S = 1 into out's unsplit figures: plan `p` with the
 * split off, its ranks' figures and capacity as the plan counted them
 * unsplit, its batch that capacity's. Only the step is priced: nothing
 * moves at S = 1, and the settled inputs, the layers' bytes (`lb`) and the
 * stages' weights (`stages`) are the split estimate's but for the rows an
 * owner stores. None when the unsplit plan has no memory for a block or no
 * step. */
static void unsplit_reference(kvshard__comm *out, const kvshard__comm_stage *stages,
                              const kvshard_plan *p, const layer_bytes *lb)
{
    if (!p->unsplit_ranks || !p->unsplit_counted)
        return;
    const kvshard__capacity *cap = &p->unsplit_cap;
    out->has_unsplit_capacity = cap->has_num_blocks;
    out->unsplit_has_concurrency = cap->has_concurrency;
    out->unsplit_concurrency = cap->concurrency;
    out->unsplit_blocks = cap->num_blocks;
    uint64_t batch, microbatch;
    /* The split's step conditions, with the unsplit batch; the weights are
     * known alike (no_weights). */
    bool has_step = settle_batch(&batch, &microbatch, p, cap) && out->has_accelerator &&
                    out->hbm_bandwidth && out->context_length && !out->no_weights;
    if (has_step) {
        /* One split rank of stage 0 owns every KV layer of it. */
        uint32_t owned = p->stages[0].num_kv;
        layout unsplit = {1, cap, p->unsplit_ranks, &owned};
        layer_bytes ulb = *lb;
        layout_rows(&ulb, p, &unsplit);
        unsplit_step(out, stages, p, &ulb, batch, microbatch);
    }
}

int kvshard_comm__of(kvshard__comm *out, kvshard__comm_stage *stages, const kvshard_plan *p,
                     kvshard_error *err)
{
    kvshard__comm_stage local[SCRATCH_STAGES];
    kvshard__comm_stage *own = stages ? stages
                               : p->pp <= SCRATCH_STAGES
                                   ? local
                                   : kvshard_alloc__bytes(&p->alloc, p->pp, sizeof *own);
    if (!own)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    layer_bytes lb;
    int rc = estimate(out, own, &lb, p, err);
    if (rc == KVSHARD_OK && p->comm_reference && out->split > 1)
        unsplit_reference(out, own, p, &lb);
    /* A refused estimate stops part-way: only a whole one has a gain. */
    if (rc == KVSHARD_OK && out->has_step && (out->split == 1 || out->has_unsplit)) {
        out->has_gain = true;
        out->throughput_gain = out->split == 1 ? 1.0 : out->throughput / out->unsplit_throughput;
    }
    if (rc == KVSHARD_OK)
        verdicts(out, own, p->pp);
    if (own != stages && own != local)
        kvshard_alloc__free(&p->alloc, own);
    return rc;
}

int kvshard_comm__of_under(kvshard__comm *out, const kvshard_plan *p,
                           kvshard__comm_mechanism decode, kvshard__comm_mechanism prefill,
                           kvshard_error *err)
{
    kvshard_allocator a = p->alloc;
    kvshard_plan *under = kvshard_alloc__bytes(&a, 1, sizeof *under);
    if (!under)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    *under = *p;
    under->comm.decode = decode;
    under->comm.prefill = prefill;
    int rc = kvshard_comm__of(out, NULL, under, err);
    kvshard_alloc__free(&a, under);
    return rc;
}

void kvshard_comm__rank_received(bool *has_decode, uint64_t *decode, bool *has_prefill,
                                 uint64_t *prefill, const kvshard_plan *p, const kvshard__comm *c,
                                 uint32_t rank)
{
    *decode = *prefill = 0;
    *has_decode = c->decode.has_bytes;
    *has_prefill = c->prefill.has_bytes;
    layer_bytes lb;
    layout lay = own_layout(p);
    if (c->split < 2 || layer_bytes_of(&lb, p, &lay, NULL) != KVSHARD_OK)
        return;
    const kvshard__rank_place *place = &p->place[rank];
    kvshard__comm_traffic unused;
    for (uint32_t i = place->first; i < place->first + place->count; i++) {
        if (!kvshard_kinds__paged(p->kinds[i]) || p->owner[i] < 0)
            continue;
        memset(&unused, 0, sizeof unused);
        decode_layer(&unused, decode, place->split_rank, c, p, &lb, (uint32_t)p->owner[i]);
        prefill_layer(&unused, prefill, place->split_rank, c, p, &lb, (uint32_t)p->owner[i]);
    }
}

void kvshard_comm__public(kvshard_comm_estimate *e, const kvshard__comm *c)
{
    e->size = sizeof *e;
    e->given = true;
    e->split_size = c->split;
    e->decode_mechanism = kvshard_options__comm_mechanism_name(c->decode_mechanism);
    e->prefill_mechanism = kvshard_options__comm_mechanism_name(c->prefill_mechanism);
    e->has_link = c->has_link;
    e->link_name = c->has_link ? c->link_name : NULL;
    e->link_bandwidth = c->link_bandwidth;
    e->link_latency_us = c->link_latency_us;
    e->has_accelerator = c->has_accelerator;
    e->accelerator_name = c->has_accelerator ? c->accelerator_name : NULL;
    e->hbm_bandwidth = c->hbm_bandwidth;
    e->has_batch = c->has_batch;
    e->batch = c->batch;
    e->decode_collectives = c->decode.collectives;
    e->has_decode_bytes = c->decode.has_bytes;
    e->decode_link_bytes = c->decode.link_bytes;
    e->has_decode_time = c->decode.has_time;
    e->decode_comm_us = c->decode.comm_us;
    e->has_step = c->has_step;
    e->base_us = c->base_us;
    e->step_us = c->step_us;
    e->tpot_us = c->tpot_us;
    e->throughput = c->throughput;
    e->throughput_total = c->throughput_total;
    e->has_unsplit = c->has_unsplit;
    e->unsplit_throughput = c->unsplit_throughput;
    e->has_gain = c->has_gain;
    e->throughput_gain = c->throughput_gain;
    e->prefill_collectives = c->prefill.collectives;
    e->has_prefill_bytes = c->prefill.has_bytes;
    e->prefill_link_bytes = c->prefill.link_bytes;
    e->has_prefill_time = c->prefill.has_time;
    e->prefill_comm_us = c->prefill.comm_us;
    uint32_t warnings = 0;
    for (size_t i = 0; i < c->warning_count; i++)
        warnings |= 1u << c->warnings[i].code;
    e->warnings = warnings;
}

int kvshard_plan_comm(kvshard_comm_estimate *out, const kvshard_plan *plan, kvshard_error *err)
{
    kvshard_error__reset(err);
    if (!out || !plan || out->size != sizeof *out)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "out and plan must not be NULL, and out->size must be "
                                   "sizeof(kvshard_comm_estimate) (KVSHARD_COMM_ESTIMATE_INIT)");
    if (!plan->comm_given) {
        *out = (kvshard_comm_estimate)KVSHARD_COMM_ESTIMATE_INIT;
        return KVSHARD_OK;
    }
    kvshard__comm c;
    int rc = kvshard_comm__of(&c, NULL, plan, err);
    if (rc == KVSHARD_OK)
        kvshard_comm__public(out, &c); /* every field: *out is not cleared first */
    return rc;
}

int kvshard_comm__rank_by(kvshard_rank_by *out, kvshard_rank_by asked,
                          const kvshard__rank_needs *has, kvshard_diag__ctx *diag)
{
    const struct {
        bool met;
        const char *what;
    } needs[] = {
        {has->accelerator, "an accelerator (comm_accelerator or comm_hbm_bandwidth)"},
        {has->link, "a link (comm_link, or an accelerator that implies one)"},
        {has->context, "a context length (context_length)"},
        {has->batch, "a decode batch (a memory budget, or comm_batch)"},
    };
    size_t count = sizeof needs / sizeof needs[0], missing = 0;
    for (size_t i = 0; i < count; i++)
        missing += !needs[i].met;
    if (asked == KVSHARD_RANK_THROUGHPUT && missing) {
        /* Every input missing is named, so that one try gives them all. */
        char list[320];
        size_t used = 0, named = 0;
        list[0] = '\0';
        for (size_t i = 0; i < count; i++)
            if (!needs[i].met)
                list_item(list, sizeof list, &used, named++, missing, needs[i].what);
        diag->option = "rank";
        return kvshard_error__fail(diag->err, KVSHARD_EMISSING, "", kvshard_error__no_mark,
                                   "comm_input_missing: --rank=throughput needs %s", list);
    }
    *out = asked != KVSHARD_RANK_CAPACITY && !missing ? KVSHARD_RANK_THROUGHPUT
                                                      : KVSHARD_RANK_CAPACITY;
    return KVSHARD_OK;
}
