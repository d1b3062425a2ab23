/* kvshard transfer: which prefill (P) rank sends which units of which
 * layer's cache to which decode (D) rank, and the bytes one request moves.
 * Everything is read from the two finished plans through their queries, so
 * both sides compute the same map without exchanging anything
 * (docs/transfer.md). */
#include "explore/transfer.h"

#include "base/alloc.h"
#include "base/call.h"
#include "base/checked.h"
#include "base/error.h"
#include "base/format.h"
#include "model/kinds.h"
#include "model/states.h"
#include "plan/memory.h"
#include "plan/partition.h"
#include "plan/plan.h"
#include "plan/queries.h"
#include "plan/validate.h"
#include "profile/profiles.h"
#include "profile/verdicts.h"
#include "text/scalar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Components in the order edges sort by; the digest codes them 1 + index. */
enum component {
    C_KV,
    C_LATENT,
    C_INDEX,
    C_WINDOW,
    C_STREAM,
    C_COMPRESSOR,
    C_CONV_Q,
    C_CONV_K,
    C_CONV_V,
    C_CONV_X,
    C_CONV_B,
    C_CONV_C,
    C_SSM,
    C_COUNT
};

static const char *const component_names[C_COUNT] = {
    "kv",     "latent", "index",  "window", "stream", "compressor", "conv_q",
    "conv_k", "conv_v", "conv_x", "conv_b", "conv_c", "ssm"};

/* How a component's entries grow with the request; the digest codes them
 * 1 + index. */
enum entry { E_TOKEN, E_WINDOW, E_CHUNK, E_STREAM, E_STATE, E_COUNT };

static const char *const entry_names[E_COUNT] = {"token", "window", "chunk", "stream", "state"};

/* One component of one layer: U units of `unit_bytes` each per entry. */
typedef struct component_of {
    enum component comp;
    bool state; /* spread by the own-units rule on every rank, never split */
    uint32_t units;
    uint64_t unit_bytes;
    enum entry entry;
    uint32_t span;
} component_of;

/* Most components one layer has: a latent and an index key, or a hybrid
 * layer's kv and its state's parts. */
#define MAX_COMPONENTS (2 + KVSHARD__STATE_PARTS)

/* The units a piece carries from one P rank to one D rank for every layer
 * of one class, `cls`: the pieces of every class that differ only in their
 * layers make one edge. Classes are numbered as they are opened, on their
 * first layers, layer after layer: their numbers order their first
 * layers. */
typedef struct piece {
    uint32_t src, dst, src_stage, src_tp, dst_stage, dst_tp;
    uint32_t comp, entry, span, lo, hi, cls;
    uint64_t entry_bytes;
} piece;

/* Marks a draft layer's class apart from the decoder layers' classes. */
#define DRAFT_CLASS UINT32_C(0x80000000)

/* Layers held alike on both sides, with the same components: their route
 * is computed once, on the first of them. */
typedef struct layer_class {
    kvshard__stage_holding p, d;
    uint32_t d_class;            /* D's layer class, with DRAFT_CLASS for a draft's */
    uint32_t layer_count, first; /* its layers: class_layers[first, first + layer_count) */
    /* What one layer of it adds to one copy of what D holds. */
    uint64_t unique_per_token, unique_fixed, unique;
} layer_class;

/* What one rank sends or receives, summed over its edges. */
typedef struct rank_sum {
    bool present;
    uint32_t stage, tp;
    uint64_t per_token, fixed, bytes;
} rank_sum;

/* The pieces of every class as they come, merged into edges once: the map
 * keeps a piece per class and edge and two words per layer, memory linear
 * in the edges. */
typedef struct pieces {
    const kvshard_allocator *alloc;
    piece *at;
    size_t count, cap;
    /* Room for a class per layer moved (each has a layer at least), in one
     * block with the next two. */
    layer_class *classes;
    size_t class_count;
    size_t *per_source;     /* per P global rank g, at [g + 1]: its pieces, counted as they come */
    rank_sum *received;     /* per D global rank */
    uint32_t *class_of;     /* per layer moved, its class; one block with class_layers, the map's */
    uint32_t *class_layers; /* each class's layers, ascending, class after class */
} pieces;

/* Room in *items (of `size` bytes each, `count` of them used) for `more`:
 * doubled until there is. */
static int grow(const kvshard_allocator *alloc, void **items, size_t count, size_t more,
                size_t *cap, size_t size)
{
    if (more <= *cap - count)
        return KVSHARD_OK;
    size_t want = *cap ? *cap : 32;
    while (want - count < more)
        want *= 2;
    void *grown = kvshard_alloc__bytes(alloc, want, size);
    if (!grown)
        return KVSHARD_ENOMEM;
    if (count)
        memcpy(grown, *items, count * size);
    kvshard_alloc__free(alloc, *items);
    *items = grown;
    *cap = want;
    return KVSHARD_OK;
}

/* Returns from an order function at the first key that differs: keys
 * compared in place, not gathered into arrays first. */
#define ORDER_BY(x, y)                                                                             \
    do {                                                                                           \
        if ((x) != (y))                                                                            \
            return (x) < (y) ? -1 : 1;                                                             \
    } while (0)

/* Orders the pieces of one source by all they carry, then by their class's
 * first layer: the pieces of one edge side by side, in layer order. */
static inline int piece_order_of(const piece *x, const piece *y)
{
    ORDER_BY(x->dst, y->dst);
    ORDER_BY(x->comp, y->comp);
    ORDER_BY(x->lo, y->lo);
    ORDER_BY(x->hi, y->hi);
    ORDER_BY(x->entry, y->entry);
    ORDER_BY(x->span, y->span);
    ORDER_BY(x->entry_bytes, y->entry_bytes);
    ORDER_BY(x->cls, y->cls);
    return 0;
}

/* piece_order_of() for pointers to pieces: pointers are sorted, not the
 * pieces, seven times their size. */
static int piece_order(const void *a, const void *b)
{
    return piece_order_of(*(const piece *const *)a, *(const piece *const *)b);
}

/* Whether pieces [from, to) lie in piece_order already, as a source's
 * mostly come: compared in place, without sort_few()'s call through a
 * pointer. */
static bool pieces_in_order(const piece **from, const piece **to)
{
    for (const piece **k = from; k + 1 < to; k++) {
        if (piece_order_of(k[0], k[1]) > 0)
            return false;
    }
    return true;
}

static bool same_edge(const piece *a, const piece *b)
{
    return a->src == b->src && a->dst == b->dst && a->comp == b->comp && a->lo == b->lo &&
           a->hi == b->hi && a->entry == b->entry && a->span == b->span &&
           a->entry_bytes == b->entry_bytes;
}

/* Room for one more piece, made in place; NULL when out of memory. */
static piece *pieces_add(pieces *ps)
{
    if (ps->count == ps->cap &&
        grow(ps->alloc, (void **)&ps->at, ps->count, 1, &ps->cap, sizeof *ps->at) != KVSHARD_OK)
        return NULL;
    return &ps->at[ps->count++];
}

static void pieces_free(pieces *ps)
{
    kvshard_alloc__free(ps->alloc, ps->at);
    kvshard_alloc__free(ps->alloc, ps->classes);
}

static int fail(kvshard_error *err, int code, const char *fmt, ...) KVSHARD__PRINTF(3, 4);

static int fail(kvshard_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard_error__vfail(err, code, "", kvshard_error__no_mark, fmt, ap);
    va_end(ap);
    return rc;
}

/* ---- the two sides agree --------------------------------------------------------- */

/* Whether the two sides' decoder layers (num_layers of each, equal) are
 * alike in every figure model_difference() compares layer by layer: a few
 * block compares, the layers read one by one only to name a difference. */
static bool layers_alike(const kvshard_plan *p, const kvshard_plan *d)
{
    const kvshard__model_info *a = &p->model, *b = &d->model;
    size_t L = a->num_layers;
    if (!L)
        return true;
    if (a->num_classes != b->num_classes || memcmp(p->kinds, d->kinds, L) != 0 ||
        memcmp(p->class_of, d->class_of, L) != 0)
        return false;
    for (uint32_t k = 0; k < a->num_classes; k++) {
        if (a->classes[k].ratio != b->classes[k].ratio ||
            a->classes[k].flags != b->classes[k].flags)
            return false;
    }
    if (!p->kv_source || !d->kv_source)
        return !p->kv_source && !d->kv_source;
    return memcmp(p->kv_source, d->kv_source, L * sizeof *p->kv_source) == 0;
}

/* The first model figure that differs between the sides, in the order the
 * documentation gives, or NULL. */
static const char *model_difference(uint64_t *pv, uint64_t *dv, char *what, size_t cap,
                                    const kvshard_plan *p, const kvshard_plan *d)
{
    const kvshard__model_info *a = &p->model, *b = &d->model;
#define SAME(name, x, y)                                                                           \
    do {                                                                                           \
        if ((uint64_t)(x) != (uint64_t)(y)) {                                                      \
            *pv = (uint64_t)(x);                                                                   \
            *dv = (uint64_t)(y);                                                                   \
            return name;                                                                           \
        }                                                                                          \
    } while (0)
    SAME("num_layers", a->num_layers, b->num_layers);
    SAME("dtype", a->dtype, b->dtype);
    SAME("attention", a->attention, b->attention);
    /* A layer's figure is named only when it differs, in the caller's room
     * (maps are made on many threads at once): the layers are read one by
     * one only when layers_alike() finds them unlike. */
#define SAME_LAYER(fmt, l, x, y)                                                                   \
    do {                                                                                           \
        if ((uint64_t)(x) != (uint64_t)(y)) {                                                      \
            snprintf(what, cap, fmt, l);                                                           \
            SAME(what, x, y);                                                                      \
        }                                                                                          \
    } while (0)
    bool alike = layers_alike(p, d);
    for (uint32_t l = 0; !alike && l < a->num_layers; l++) {
        const kvshard__class *ca = &a->classes[p->class_of[l]], *cb = &b->classes[d->class_of[l]];
        SAME_LAYER("the kind of layer %u", l, p->kinds[l], d->kinds[l]);
        SAME_LAYER("the compression ratio of layer %u", l, ca->ratio, cb->ratio);
        SAME_LAYER("the cache flags of layer %u", l, ca->flags, cb->flags);
        SAME_LAYER("the KV source of layer %u", l, p->kv_source ? p->kv_source[l] : -1,
                   d->kv_source ? d->kv_source[l] : -1);
    }
#undef SAME_LAYER
    SAME("num_key_value_heads", a->full.heads, b->full.heads);
    SAME("the K head dim", a->full.k_dim, b->full.k_dim);
    SAME("the V head dim", a->full.v_dim, b->full.v_dim);
    SAME("the sliding layers' KV heads", a->sliding.heads, b->sliding.heads);
    SAME("the sliding layers' K head dim", a->sliding.k_dim, b->sliding.k_dim);
    SAME("the sliding layers' V head dim", a->sliding.v_dim, b->sliding.v_dim);
    SAME("kv_lora_rank", a->kv_lora_rank, b->kv_lora_rank);
    SAME("qk_rope_head_dim", a->qk_rope_head_dim, b->qk_rope_head_dim);
    SAME("index_head_dim", a->index_head_dim, b->index_head_dim);
    SAME("head_dim", a->latent_dim, b->latent_dim);
    SAME("sliding_window", a->sliding_window, b->sliding_window);
    SAME("attention_chunk_size", a->chunk_size, b->chunk_size);
    SAME("the state kind", a->state.kind, b->state.kind);
    SAME("the state heads", a->state.heads, b->state.heads);
    SAME("the state key heads", a->state.key_heads, b->state.key_heads);
    SAME("the state head dim", a->state.head_dim, b->state.head_dim);
    SAME("the state value dim", a->state.value_dim, b->state.value_dim);
    SAME("the state size", a->state.state_size, b->state.state_size);
    SAME("the state groups", a->state.groups, b->state.groups);
    SAME("the convolution kernel", a->state.conv_kernel, b->state.conv_kernel);
    SAME("the state channels", a->state.channels, b->state.channels);
    SAME("the draft layers", a->num_draft_layers, b->num_draft_layers);
    for (uint32_t i = 0; i < a->num_draft_layers; i++)
        SAME("a draft layer's kind", a->classes[p->draft_class[i]].kind,
             b->classes[d->draft_class[i]].kind);
#undef SAME
    return NULL;
}

static const char *side_name(bool decode)
{
    return decode ? "D" : "P";
}

/* Whether the two sides may be paired: no context parallelism, replicas in
 * range, one model, one KV and one state dtype, which *t keeps. */
static int check_sides(kvshard_transfer *t, const kvshard_plan *p, const kvshard_plan *d,
                       const kvshard_transfer_options *o, kvshard_error *err)
{
    const kvshard_plan *side[2] = {p, d};
    uint32_t replica[2] = {o->p_replica, o->d_replica};
    for (int s = 0; s < 2; s++) {
        if (side[s]->options.cp_size > 1)
            return fail(err, KVSHARD_EUNMODELED,
                        "transfer_cp: cp_size is %u on %s: how an engine spreads a sequence "
                        "over context-parallel ranks is not modelled",
                        side[s]->options.cp_size, side_name(s));
        if (replica[s] >= side[s]->options.dp_size)
            return fail(err, KVSHARD_ERANGE, "transfer_replica: --%s_replica %u: %s has %u %s",
                        s ? "d" : "p", replica[s], side_name(s), side[s]->options.dp_size,
                        side[s]->options.dp_size == 1 ? "replica" : "replicas");
    }
    uint64_t pv = 0, dv = 0;
    char layer_figure[64];
    const char *what = model_difference(&pv, &dv, layer_figure, sizeof layer_figure, p, d);
    if (what)
        return fail(err, KVSHARD_EINVAL,
                    "transfer_model_mismatch: the two sides plan different models: %s is %llu on "
                    "P and %llu on D",
                    what, (unsigned long long)pv, (unsigned long long)dv);
    kvshard_dtype pk = kvshard_plan_kv_cache_dtype(p), dk = kvshard_plan_kv_cache_dtype(d);
    if (pk != dk)
        return fail(err, KVSHARD_EINVAL,
                    "transfer_kv_dtype: the KV cache is %s on P and %s on D: bytes are copied, "
                    "never converted",
                    kvshard_dtype_name(pk), kvshard_dtype_name(dk));
    kvshard_plan_model_info pm = KVSHARD_PLAN_MODEL_INFO_INIT, dm = KVSHARD_PLAN_MODEL_INFO_INIT;
    (void)kvshard_plan_model(&pm, p);
    (void)kvshard_plan_model(&dm, d);
    if (pm.state_dtype != dm.state_dtype)
        return fail(err, KVSHARD_EINVAL,
                    "transfer_state_dtype: the state is %s on P and %s on D: bytes are copied, "
                    "never converted",
                    kvshard_dtype_name(pm.state_dtype), kvshard_dtype_name(dm.state_dtype));
    t->kv_cache_dtype = dk;
    t->state_dtype = dm.state_dtype;
    return KVSHARD_OK;
}

/* ---- what each layer keeps ------------------------------------------------------------ */

/* Whether a side counts its draft layers (speculation on, drafts present). */
static bool counts_drafts(const kvshard_plan *plan)
{
    return plan->model.num_draft_layers > 0 && plan->options.num_speculative_tokens > 0;
}

/* The component a state part moves as, or C_COUNT when transfer has none. */
static enum component component_named(const char *name)
{
    for (uint32_t c = 0; c < C_COUNT; c++)
        if (strcmp(component_names[c], name) == 0)
            return (enum component)c;
    return C_COUNT;
}

/* The state parts of a layer of `plan`, from its state kind's row. */
static int state_components(component_of *out, uint32_t *n, const kvshard_plan *plan,
                            uint32_t layer, kvshard_error *err)
{
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    for (size_t i = 0; i < KVSHARD_MAX_STATE_TENSORS; i++)
        t[i] = (kvshard_state_tensor)KVSHARD_STATE_TENSOR_INIT;
    size_t count = 0;
    uint32_t rank = 0;
    uint32_t stage = 0;
    int rc = kvshard_plan_layer_stage(&stage, plan, layer);
    if (rc == KVSHARD_OK)
        rank = stage * plan->tp;
    if (rc == KVSHARD_OK)
        rc = kvshard_plan_layer_state_shapes(t, KVSHARD_MAX_STATE_TENSORS, &count, plan, rank,
                                             layer, err);
    if (rc != KVSHARD_OK)
        return rc;
    kvshard_states__env env = {0};
    for (size_t i = 0; i < count; i++) {
        if (strcmp(t[i].name, "conv") == 0)
            env.conv_bytes = kvshard_dtype_size(t[i].dtype);
        else
            env.ssm_bytes = kvshard_dtype_size(t[i].dtype);
    }
    const kvshard__state_dims *s = &plan->model.state;
    const kvshard_states__row *row = kvshard_states__of(s->kind);
    if (!row)
        return fail(err, KVSHARD_EUNMODELED,
                    "transfer_state_kind: layer %u keeps a state of kind "
                    "%s, whose parts transfer does not know",
                    layer, kvshard_state_kind_name(s->kind));
    kvshard__calc c = {false, false, false};
    uint32_t k = 0;
    for (const kvshard_states__part *p = row->parts; p->name; p++) {
        enum component comp = component_named(p->name);
        if (comp == C_COUNT)
            return fail(err, KVSHARD_EUNMODELED,
                        "transfer_state_kind: layer %u keeps a %s state, whose part %s transfer "
                        "does not know",
                        layer, row->name, p->name);
        uint64_t unit_bytes = kvshard_states__part_unit_bytes(&c, p, s, &env);
        out[k++] =
            (component_of){comp, true, kvshard_states__part_units(p, s), unit_bytes, E_STATE, 0};
    }
    if (c.overflow)
        return fail(err, KVSHARD_EOVERFLOW, "the transfer's bytes pass 2^64 - 1");
    *n = k;
    return KVSHARD_OK;
}

/* The components of `layer`, from D's plan (both sides plan one model). */
static int layer_components(component_of *out, uint32_t *n, const kvshard_plan *plan,
                            uint32_t layer, kvshard_error *err)
{
    *n = 0;
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    uint32_t stage = 0;
    int rc = kvshard_plan_layer_stage(&stage, plan, layer);
    if (rc == KVSHARD_OK)
        rc = kvshard_plan_layer_storage(&st, plan, stage * plan->tp, layer);
    if (rc != KVSHARD_OK)
        return fail(err, rc, "layer %u has no storage on its stage", layer);
    const kvshard__model_info *m = &plan->model;
    uint32_t L = m->num_layers;
    const kvshard__class *cls =
        layer < L ? &m->classes[plan->class_of[layer]] : &m->classes[plan->draft_class[layer - L]];
    const kvshard_kinds__row *row = kvshard_kinds__of(cls->kind);
    if (row->shape == KVSHARD__SHAPE_COMPRESSED)
        return fail(err, KVSHARD_EUNMODELED,
                    "transfer_compressed: layer %u is a compressed layer: moving its window, "
                    "streams and compressor state is not modelled yet",
                    layer);
    if (cls->flags & (KVSHARD__LAYER_SPARSE_K | KVSHARD__LAYER_SPARSE_KV))
        return fail(err, KVSHARD_EUNMODELED,
                    "transfer_sparse_index: layer %u keeps a GQA sparse index key: moving it is "
                    "not modelled yet",
                    layer);
    /* How the KV of each shape grows: per token, per window, per chunk. */
    static const enum entry entry_of_shape[] = {[KVSHARD__SHAPE_NONE] = E_COUNT,
                                                [KVSHARD__SHAPE_KV] = E_TOKEN,
                                                [KVSHARD__SHAPE_WINDOW] = E_WINDOW,
                                                [KVSHARD__SHAPE_CHUNK] = E_CHUNK,
                                                [KVSHARD__SHAPE_COMPRESSED] = E_COUNT};
    enum entry e = entry_of_shape[row->shape];
    if (e != E_COUNT) {
        uint32_t span = row->window_tokens ? row->window_tokens(m) : 0;
        if (m->attention == KVSHARD_ATTENTION_MLA) {
            /* The latent's bytes are the plan's, less the indexer key beside it. */
            kvshard_layer_storage owner = KVSHARD_LAYER_STORAGE_INIT;
            uint32_t owner_rank =
                st.owner_plan_rank >= 0 ? (uint32_t)st.owner_plan_rank : stage * plan->tp;
            rc = kvshard_plan_layer_storage(&owner, plan, owner_rank, layer);
            if (rc != KVSHARD_OK)
                return fail(err, rc, "layer %u has no owner on its stage", layer);
            bool index = (cls->flags & KVSHARD__LAYER_INDEX_KEY) != 0;
            kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
            uint64_t x = index ? kvshard_memory__index_key_bytes(&in) : 0;
            out[(*n)++] = (component_of){C_LATENT, false, 1, owner.kv_bytes_per_token - x, e, span};
            if (index)
                out[(*n)++] = (component_of){C_INDEX, false, 1, x, e, span};
        } else if (m->attention == KVSHARD_ATTENTION_GQA &&
                   (cls->flags & KVSHARD__LAYER_INDEX_KEY)) {
            return fail(err, KVSHARD_EUNMODELED,
                        "transfer_index: layer %u keeps an indexer key beside GQA heads: moving "
                        "it is not modelled yet",
                        layer);
        } else if (m->attention == KVSHARD_ATTENTION_GQA) {
            kvshard_layer_kv_geometry g = KVSHARD_LAYER_KV_GEOMETRY_INIT;
            rc = kvshard_plan_layer_kv_geometry(&g, plan, stage * plan->tp, layer, err);
            if (rc != KVSHARD_OK)
                return rc;
            /* K and V of a head travel together, with the head's share of
             * the rank's scales. */
            uint64_t head = ((uint64_t)g.k_head_dim + g.v_head_dim) * g.element_bytes +
                            (g.kv_heads ? g.scale_bytes_per_token / g.kv_heads : 0);
            out[(*n)++] = (component_of){C_KV, false, g.total_kv_heads, head, e, span};
        } else {
            return fail(err, KVSHARD_EUNMODELED,
                        "transfer_attention: layer %u has %s attention, which transfer does not "
                        "move yet",
                        layer, kvshard_attention_name(m->attention));
        }
    }
    if (row->state) {
        uint32_t k = 0;
        rc = state_components(out + *n, &k, plan, layer, err);
        if (rc != KVSHARD_OK)
            return rc;
        *n += k;
    }
    return KVSHARD_OK;
}

/* ---- the route ------------------------------------------------------------------------ */

/* One side of the route: its plan, its replica of the pair, and how the
 * ranks of the current class's stage hold it. */
typedef struct route_side {
    const kvshard_plan *plan;
    uint32_t replica;
    kvshard__stage_holding h;
    kvshard__strides strides; /* of the plan's rank layout, read once */
    uint32_t stage_base;      /* the global rank of TP rank 0 of h's stage */
} route_side;

/* The global rank of each plan rank of side s's replica (stage by stage,
 * TP rank by TP rank): kvshard_plan_global_rank()'s, from the side's strides.
 * Whether they increase in that order (all but a layout with TP
 * outermost): within a stage they climb by the TP stride, so only a stage's
 * step past its last TP rank can fall back. */
static bool plan_global_ranks(uint32_t *out, const route_side *s)
{
    kvshard__strides st = s->strides;
    /* Read once: `out` may alias the plan. */
    uint32_t P = s->plan->pp, T = s->plan->tp, replica = s->replica;
    /* In 32 bits, as the ranks are: the stage's loop then runs lane by lane. */
    uint32_t step = (uint32_t)st.tp;
    for (uint32_t stage = 0; stage < P; stage++) {
        uint32_t base = (uint32_t)(replica * st.dp + stage * st.pp), *stage_out = out + stage * T;
        for (uint32_t t = 0; t < T; t++)
            stage_out[t] = base + t * step;
    }
    return P < 2 || T < 2 || st.pp >= (T - 1) * st.tp;
}

/* Side s's strides, read once for its global ranks and its route. */
static void side_open(route_side *s)
{
    s->strides = kvshard_partition__rank_strides(&s->plan->options, s->plan->tp);
}

/* Side s routes a class held as `h`: its stage's global ranks worked out
 * once for the class. */
static void side_route(route_side *s, const kvshard__stage_holding *h)
{
    s->h = *h;
    s->stage_base = (uint32_t)(s->replica * s->strides.dp + h->stage * s->strides.pp);
}

/* The global rank of TP rank t of the stage side s routes:
 * plan_global_ranks()'s figure, worked out where it is needed instead of
 * kept for every rank. */
static uint32_t side_global_rank(const route_side *s, uint32_t t)
{
    return (uint32_t)(s->stage_base + t * s->strides.tp);
}

/* How `plan` holds `layer` into *h (written in place: a copy read back
 * field by field stalls); a layer the plan does not count is held by no
 * rank. */
static void holding_of_layer(kvshard__stage_holding *h, const kvshard_plan *plan, uint32_t layer)
{
    if (kvshard_plan__stage_holding(h, plan, layer) != KVSHARD_OK)
        *h = (kvshard__stage_holding){0, false, false, KVSHARD_OWNER_ALL, 1, 1, 0};
}

/* The units TP rank t of side s holds of component c of the class routed,
 * [*lo, *hi), when t is one of its holders; false when it holds none. */
static inline bool holder_units(uint32_t *lo, uint32_t *hi, const route_side *s, uint32_t t,
                                const component_of *c)
{
    const kvshard__stage_holding *h = &s->h;
    uint32_t T = s->plan->tp, count = 0;
    if (c->state) {
        kvshard_memory__kv_heads(lo, &count, c->units, T, t, t);
    } else if (c->comp != C_KV) {
        *lo = 0;
        *hi = 1;
        return true;
    } else {
        uint32_t first = t / h->head_ranks * h->head_ranks;
        kvshard_memory__kv_heads(lo, &count, h->heads, T, first, first + h->head_ranks - 1);
    }
    *hi = *lo + count;
    return count > 0;
}

/* Whether side s holds component c of the class routed on some rank. */
static bool holds_any(const route_side *s, const component_of *c)
{
    return c->state ? s->h.state : s->h.cache;
}

/* The units TP rank t of side s holds of component c of the class routed,
 * [*lo, *hi); false when it holds none. */
static inline bool holding(uint32_t *lo, uint32_t *hi, const route_side *s, uint32_t t,
                           const component_of *c)
{
    if (!holds_any(s, c) || (!c->state && !kvshard__stage_holding_has(&s->h, t)))
        return false;
    return holder_units(lo, hi, s, t, c);
}

typedef struct route {
    route_side p, d;
    /* The components of the class last opened: the classes of one D layer
     * class and stage, which differ only in their owners, share them. */
    component_of comps[MAX_COMPONENTS];
    uint32_t comp_count, comps_d_class, comps_d_stage;
    bool comps_known;
} route;

/* The first D rank that may hold component c, and the step to the next:
 * the holders of its cache, or every rank for its state. */
static uint32_t first_holder(uint32_t *step, const route_side *s, const component_of *c)
{
    const kvshard__stage_holding *h = &s->h;
    *step = 1;
    if (c->state || h->owner == KVSHARD_OWNER_ALL)
        return 0;
    *step = h->split;
    return (uint32_t)h->owner;
}

/* The home of D's TP rank td: floor(td x T_P / T_D), the P rank its units
 * are looked for from first. Sides of one TP size, the usual pairing, are
 * homed without a division. */
static uint32_t home_rank(const route *r, uint32_t td)
{
    uint32_t tp_p = r->p.plan->tp, tp_d = r->d.plan->tp;
    return tp_p == tp_d ? td : (uint32_t)((uint64_t)td * tp_p / tp_d);
}

/* A piece of units [lo, hi) of component c of class `cls`, from TP rank
 * src_tp of P to TP rank dst_tp of D (global rank dst); NULL when out of
 * memory. */
static inline piece *add_piece(pieces *ps, const route *r, const component_of *c, uint32_t cls,
                               uint32_t src_tp, uint32_t dst_tp, uint32_t dst, uint32_t lo,
                               uint32_t hi)
{
    piece *added = pieces_add(ps);
    uint32_t src = side_global_rank(&r->p, src_tp);
    if (!added)
        return NULL;
    ps->per_source[src + 1]++;
    *added = (piece){src,
                     dst,
                     r->p.h.stage,
                     src_tp,
                     r->d.h.stage,
                     dst_tp,
                     (uint32_t)c->comp,
                     (uint32_t)c->entry,
                     c->span,
                     lo,
                     hi,
                     cls,
                     (uint64_t)(hi - lo) * c->unit_bytes};
    return added;
}

/* The pieces of a latent or an index key that every P rank holds whole,
 * the D ranks that hold it from `first` by `step`: each takes its one unit
 * from its home rank, one piece each, made from one model piece (what the
 * pieces share, written once). False when out of memory. */
static bool route_whole(pieces *ps, const route *r, const component_of *c, uint32_t cls,
                        uint32_t first, uint32_t step, bool *moved)
{
    uint32_t tp_d = r->d.plan->tp;
    if (first >= tp_d)
        return true;
    size_t holders = (tp_d - first - 1) / step + 1;
    if (grow(ps->alloc, (void **)&ps->at, ps->count, holders, &ps->cap, sizeof *ps->at) !=
        KVSHARD_OK)
        return false;
    *moved = true;
    /* add_piece()'s fields, the shared ones written once: add_piece() in
     * this loop costs the map some 4% more instructions. */
    const piece model = {.src_stage = r->p.h.stage,
                         .dst_stage = r->d.h.stage,
                         .comp = (uint32_t)c->comp,
                         .entry = (uint32_t)c->entry,
                         .span = c->span,
                         .lo = 0,
                         .hi = 1,
                         .cls = cls,
                         .entry_bytes = c->unit_bytes};
    piece *out = &ps->at[ps->count];
    ps->count += holders;
    for (uint32_t td = first; td < tp_d; td += step, out++) {
        uint32_t home = home_rank(r, td);
        *out = model;
        out->src = side_global_rank(&r->p, home);
        out->src_tp = home;
        out->dst = side_global_rank(&r->d, td);
        out->dst_tp = td;
        ps->per_source[out->src + 1]++;
    }
    return true;
}

/* The pieces of one component of the layers of class `cls`, read on its
 * first layer: each unit a D rank holds comes from the first P rank holding
 * it in the cyclic order from the D rank's home, floor(t_D x T_P / T_D).
 * Only the D ranks that hold the component are visited. */
static int route_component(pieces *ps, route *r, uint32_t cls, uint32_t layer,
                           const component_of *c, bool *moved, kvshard_error *err)
{
    uint32_t tp_p = r->p.plan->tp, tp_d = r->d.plan->tp;
    if (!holds_any(&r->d, c))
        return KVSHARD_OK;
    uint32_t step = 1, first = first_holder(&step, &r->d, c);
    /* Every P rank holds all of a latent or an index key when P's layer has
     * no owner: any home then holds what its D rank takes, unchecked. */
    if (!c->state && c->comp != C_KV && r->p.h.cache && r->p.h.owner == KVSHARD_OWNER_ALL)
        return route_whole(ps, r, c, cls, first, step, moved)
                   ? KVSHARD_OK
                   : fail(err, KVSHARD_ENOMEM, "out of memory");
    /* Only holders are visited: an owner is below the split it steps by. */
    for (uint32_t td = first; td < tp_d; td += step) {
        uint32_t lo = 0, hi = 0;
        if (!holder_units(&lo, &hi, &r->d, td, c))
            continue;
        *moved = true;
        uint32_t home = home_rank(r, td);
        uint32_t dst = side_global_rank(&r->d, td);
        uint32_t home_lo = 0, home_hi = 0;
        if (holding(&home_lo, &home_hi, &r->p, home, c) && home_lo <= lo && hi <= home_hi) {
            /* The home rank holds them all, as it mostly does: one piece,
             * no rank searched unit by unit. */
            if (!add_piece(ps, r, c, cls, home, td, dst, lo, hi))
                return fail(err, KVSHARD_ENOMEM, "out of memory");
            continue;
        }
        piece *cur = NULL; /* the piece open, made in place */
        for (uint32_t u = lo; u < hi; u++) {
            uint32_t src_tp = tp_p;
            for (uint32_t k = 0, t = home; k < tp_p && src_tp == tp_p; k++) {
                uint32_t plo = 0, phi = 0;
                if (holding(&plo, &phi, &r->p, t, c) && plo <= u && u < phi)
                    src_tp = t;
                t = t + 1 == tp_p ? 0 : t + 1;
            }
            if (src_tp == tp_p)
                return fail(err, KVSHARD_EUNMODELED,
                            "transfer_no_source: no P rank holds unit %u of %s of layer %u", u,
                            component_names[c->comp], layer);
            if (cur && cur->src_tp == src_tp) {
                cur->hi = u + 1;
                cur->entry_bytes += c->unit_bytes;
                continue;
            }
            piece *added = add_piece(ps, r, c, cls, src_tp, td, dst, u, u + 1);
            if (!added)
                return fail(err, KVSHARD_ENOMEM, "out of memory");
            cur = added;
        }
    }
    return KVSHARD_OK;
}

static int edge_order(const void *a, const void *b)
{
    const kvshard_transfer_edge *x = a, *y = b;
    ORDER_BY(x->src, y->src);
    ORDER_BY(x->dst, y->dst);
    ORDER_BY(x->component_code, y->component_code);
    ORDER_BY(x->layers[0], y->layers[0]);
    ORDER_BY(x->unit_lo, y->unit_lo);
    return 0;
}

/* ---- bytes -------------------------------------------------------------------------- */

/* The entries a component keeps for a request of n tokens. */
static uint64_t entries(enum entry e, uint32_t span, uint64_t n)
{
    switch (e) {
    case E_TOKEN: return n;
    case E_WINDOW: return n < span ? n : span;
    case E_CHUNK: return span ? (n - 1) % span + 1 : n;
    case E_STREAM: return span ? n / span : 0;
    case E_STATE:
    case E_COUNT: break;
    }
    return 1;
}

/* Adds edge e to rank r's sums unchecked: they are parts of the wire's
 * sums, which are checked, so they cannot pass 2^64 - 1 unless those do. */
static void rank_add(rank_sum *r, uint32_t stage, uint32_t tp, const kvshard_transfer_edge *e)
{
    r->present = true;
    r->stage = stage;
    r->tp = tp;
    r->per_token += e->bytes_per_token;
    r->fixed += e->bytes_fixed;
    r->bytes += e->bytes;
}

/* Whether r sends or receives more than b: the most bytes at n, without n
 * the most per token then fixed. */
static bool busier(const rank_sum *r, const rank_sum *b, bool has_n)
{
    return has_n ? r->bytes > b->bytes
                 : r->per_token > b->per_token ||
                       (r->per_token == b->per_token && r->fixed > b->fixed);
}

/* The busiest rank `global`, summed in r; none when r is NULL. */
static kvshard_transfer_rank rank_of(const rank_sum *r, uint32_t global, bool has_n)
{
    if (!r)
        return (kvshard_transfer_rank){false, 0, 0, 0, 0, 0, false, 0};
    return (kvshard_transfer_rank){true,         global,   r->stage, r->tp,
                                   r->per_token, r->fixed, has_n,    has_n ? r->bytes : 0};
}

/* The busiest of `count` ranks; ties go to the lowest global rank. */
static kvshard_transfer_rank busiest(const rank_sum *sums, size_t count, bool has_n)
{
    const rank_sum *b = NULL;
    size_t at = 0;
    for (size_t g = 0; g < count; g++) {
        if (sums[g].present && (!b || busier(&sums[g], b, has_n))) {
            b = &sums[g];
            at = g;
        }
    }
    return rank_of(b, (uint32_t)at, has_n);
}

/* ceil(bytes x 10^6 / rate) without the product's overflow. */
static uint64_t micros(kvshard__calc *c, uint64_t bytes, uint64_t rate)
{
    uint64_t whole = kvshard__calc_mul(c, bytes / rate, 1000000);
    return kvshard__calc_add(c, whole,
                             kvshard__ceil_div(kvshard__calc_mul(c, bytes % rate, 1000000), rate));
}

/* ---- the digest ------------------------------------------------------------------------- */

static uint64_t rotl(uint64_t v, unsigned s)
{
    return (v << s) | (v >> (64 - s));
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v * UINT64_C(0x9E3779B97F4A7C15);
    return rotl(h, 31) * UINT64_C(0xC2B2AE3D27D4EB4F);
}

/* A word hash over the edges only, so it names the map whatever the
 * request's length or the NIC. */
static uint64_t edges_digest(const kvshard_transfer_edge *edges, size_t count)
{
    uint64_t h = UINT64_C(0x6B76736861726458);
    h = mix(h, count);
    for (size_t i = 0; i < count; i++) {
        const kvshard_transfer_edge *e = &edges[i];
        h = mix(h, e->src);
        h = mix(h, e->dst);
        h = mix(h, e->component_code);
        h = mix(h, e->layer_count);
        for (size_t k = 0; k < e->layer_count; k++)
            h = mix(h, e->layers[k]);
        h = mix(h, e->unit_lo);
        h = mix(h, e->unit_hi);
        h = mix(h, e->entry_code);
        h = mix(h, e->entry_span);
        h = mix(h, e->entry_bytes);
    }
    h ^= h >> 33;
    h *= UINT64_C(0xFF51AFD7ED558CCD);
    h ^= h >> 33;
    h *= UINT64_C(0xC4CEB9FE1A85EC53);
    h ^= h >> 33;
    return h;
}

/* ---- the network ------------------------------------------------------------------------ */

static const struct {
    const char *name;
    uint64_t bytes_per_second;
} nic_presets[] = {
    {"ndr400", UINT64_C(50000000000)},  /* 400 Gb/s */
    {"xdr800", UINT64_C(100000000000)}, /* 800 Gb/s */
    {"hdr200", UINT64_C(25000000000)},  /* 200 Gb/s */
    {"eth100", UINT64_C(12500000000)},  /* 100 Gb/s */
};

static int resolve_nic(kvshard_transfer_totals *tt, const char *nic, kvshard_error *err)
{
    const char *name = nic ? nic : "ndr400";
    for (size_t i = 0; i < sizeof nic_presets / sizeof nic_presets[0]; i++) {
        if (strcmp(name, nic_presets[i].name) == 0) {
            tt->nic = nic_presets[i].name;
            tt->nic_bytes_per_second = nic_presets[i].bytes_per_second;
            return KVSHARD_OK;
        }
    }
    kvshard_error size_err;
    kvshard_error__reset(&size_err);
    int rc = kvshard_scalar__parse_size(&tt->nic_bytes_per_second, name, strlen(name), 1, "--nic",
                                        "", kvshard_error__no_mark, &size_err);
    if (rc != KVSHARD_OK)
        return fail(err, rc,
                    "transfer_nic: --nic is neither a preset (ndr400, xdr800, hdr200, eth100) "
                    "nor a rate in bytes per second (%s)",
                    size_err.message);
    tt->nic = "custom";
    return KVSHARD_OK;
}

/* ---- building -------------------------------------------------------------------------- */

static void warn(kvshard_transfer *t, const char *code, const char *fmt, ...) KVSHARD__PRINTF(3, 4);

static void warn(kvshard_transfer *t, const char *code, const char *fmt, ...)
{
    if (t->warning_count == KVSHARD__TRANSFER_WARNINGS)
        return;
    kvshard__transfer_warning *w = &t->warnings[t->warning_count++];
    w->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
}

static void joined_warning(kvshard_transfer *t, const char *code, const kvshard_format__part *parts,
                           size_t count)
{
    if (t->warning_count == KVSHARD__TRANSFER_WARNINGS)
        return;
    kvshard__transfer_warning *w = &t->warnings[t->warning_count++];
    w->code = code;
    kvshard_format__join(w->message, sizeof w->message, parts, count);
}

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* A side as the documents describe it, with the global ranks of its
 * replica of the pair. */
/* Side s of the route side `side` (opened), its global ranks written into
 * `ranks` (room for each rank of a replica). */
static void describe_side(kvshard__transfer_side *s, uint32_t *ranks, const route_side *side)
{
    const kvshard_plan *plan = side->plan;
    uint32_t replica = side->replica;
    size_t count = (size_t)plan->pp * plan->tp;
    *s = (kvshard__transfer_side){
        plan->options.world_size, plan->options.dp_size,     plan->pp, plan->tp, plan->split,
        plan->options.ownership,  plan->options.rank_layout, replica,  ranks,    count};
    if (!plan_global_ranks(ranks, side))
        qsort(ranks, count, sizeof *ranks, compare_u32);
}

/* Sorts a source's few items in place (by insertion; qsort past 16): a
 * source sends to few D ranks. Items are at most an edge's size. */
static void sort_few(void *items, size_t count, size_t size,
                     int (*order)(const void *, const void *))
{
    if (count > 16) {
        qsort(items, count, size, order);
        return;
    }
    unsigned char *at = items, held[sizeof(kvshard_transfer_edge)];
    for (size_t i = 1; i < count; i++) {
        /* Items mostly come in order: one compared in place is not copied. */
        if (order(at + (i - 1) * size, at + i * size) <= 0)
            continue;
        memcpy(held, at + i * size, size);
        size_t j = i;
        for (; j > 0 && order(at + (j - 1) * size, held) > 0; j--)
            memcpy(at + j * size, at + (j - 1) * size, size);
        memcpy(at + j * size, held, size);
    }
}

/* The edge of the pieces [from, to) of ps, which differ only in their
 * classes, into *e: an edge of one class points at its class's layers, an
 * edge of more at theirs merged at t->layers[*placed]. */
static void make_edge(kvshard_transfer_edge *e, kvshard_transfer *t, const pieces *ps,
                      const piece *const *from, const piece *const *to, size_t *placed, uint64_t n,
                      kvshard__calc *c)
{
    const layer_class *first = &ps->classes[(*from)->cls];
    const uint32_t *layers = &ps->class_layers[first->first];
    size_t count = first->layer_count;
    if (to - from > 1) {
        uint32_t *merged = &t->layers[*placed];
        count = 0;
        for (const piece *const *k = from; k < to; k++) {
            const layer_class *cls = &ps->classes[(*k)->cls];
            memcpy(&merged[count], &ps->class_layers[cls->first],
                   cls->layer_count * sizeof *merged);
            count += cls->layer_count;
        }
        /* Each class's layers ascend; together they interleave. */
        qsort(merged, count, sizeof *merged, compare_u32);
        *placed += count;
        layers = merged;
    }
    const piece *p = *from;
    *e = (kvshard_transfer_edge){p->src,
                                 p->dst,
                                 p->src_stage,
                                 p->src_tp,
                                 p->dst_stage,
                                 p->dst_tp,
                                 component_names[p->comp],
                                 p->comp + 1,
                                 layers,
                                 count,
                                 p->lo,
                                 p->hi,
                                 entry_names[p->entry],
                                 p->entry + 1,
                                 p->span,
                                 p->entry_bytes,
                                 0,
                                 0,
                                 n > 0,
                                 0};
    uint64_t run_bytes = kvshard__calc_mul(c, e->layer_count, e->entry_bytes);
    if (p->entry == E_TOKEN)
        e->bytes_per_token = run_bytes;
    if (p->entry == E_STATE)
        e->bytes_fixed = run_bytes;
    if (n)
        e->bytes = kvshard__calc_mul(c, run_bytes, entries((enum entry)p->entry, p->span, n));
}

/* The pieces' scratch, in one block: room for `classes` classes, a count
 * per source and one more, and a receipt per D rank, the counts and the
 * receipts zeroed; false when out of memory. */
static bool scratch_block(pieces *ps, size_t classes, size_t sources, size_t receivers)
{
    _Static_assert(sizeof(layer_class) % sizeof(size_t) == 0 &&
                       sizeof(rank_sum) % sizeof(size_t) == 0,
                   "the classes, the sources' counts and the D ranks' receipts share one block");
    size_t class_words = classes * (sizeof(layer_class) / sizeof(size_t));
    size_t counted = sources + 1 + receivers * (sizeof(rank_sum) / sizeof(size_t));
    size_t *block = kvshard_alloc__bytes(ps->alloc, class_words + counted, sizeof *block);
    if (!block)
        return false;
    ps->classes = (layer_class *)(void *)block;
    ps->per_source = block + class_words;
    ps->received = (rank_sum *)(void *)(ps->per_source + sources + 1);
    memset(ps->per_source, 0, counted * sizeof *block);
    return true;
}

/* The edges of the pieces in edge_order, each with its layers in order, and
 * what they add up to in t->totals: the wire's bytes and the busiest source
 * and destination. The pieces, counted by source (a global rank below
 * `sources`) as they came, are put in sources' order, each source's sorted
 * so that an edge's pieces lie side by side, then its edges sorted; each
 * edge is summed as it is made. */
static int make_edges(kvshard_transfer *t, pieces *ps, uint64_t n, size_t sources, size_t receivers,
                      kvshard__calc *c)
{
    size_t count = ps->count;
    const piece **sorted = kvshard_alloc__bytes(&t->alloc, count ? count : 1, sizeof *sorted);
    size_t *end = ps->per_source;
    rank_sum *received = ps->received;
    t->edges = kvshard_alloc__bytes(&t->alloc, count ? count : 1, sizeof *t->edges);
    int rc = sorted && t->edges ? KVSHARD_OK : KVSHARD_ENOMEM;
    for (size_t g = 0; rc == KVSHARD_OK && g < sources; g++)
        end[g + 1] += end[g];
    for (size_t i = 0; rc == KVSHARD_OK && i < count; i++) /* end[g]: g's start, then its end */
        sorted[end[ps->at[i].src]++] = &ps->at[i];
    kvshard_transfer_totals *tt = &t->totals;
    /* The wire's sums, kept in locals as the edges are summed: summed in
     * place, each would be read back after every edge's stores. */
    uint64_t wire_per_token = 0, wire_fixed = 0, wire = 0;
    /* Only the busiest source is kept, with no sum per P rank; ties go to
     * the lowest, summed first. */
    rank_sum most_sent = {0};
    size_t most_sender = 0, placed = 0;
    kvshard_transfer_edge *e = t->edges; /* the next edge, kept apart from t's count */
    for (size_t g = 0, from = 0; rc == KVSHARD_OK && g < sources; from = end[g++]) {
        if (from == end[g])
            continue; /* sends nothing */
        if (!pieces_in_order(&sorted[from], &sorted[end[g]]))
            sort_few(&sorted[from], end[g] - from, sizeof *sorted, piece_order);
        kvshard_transfer_edge *first_edge = e;
        /* What g sends, summed in words of their own: its edges all come
         * from one rank. */
        uint64_t sent_per_token = 0, sent_fixed = 0, sent_bytes = 0;
        /* The edges come ordered by receiver and component; only edges that
         * share both may be out of edge_order. */
        bool shared = false;
        for (size_t i = from, j; i < end[g]; i = j, e++) {
            for (j = i + 1; j < end[g] && same_edge(sorted[j], sorted[i]); j++)
                ;
            if (j - i > 1 && !t->layers) { /* room for every piece's layers, once merging */
                size_t layer_total = 0;
                for (size_t k = 0; k < count; k++)
                    layer_total += ps->classes[ps->at[k].cls].layer_count;
                t->layers = kvshard_alloc__bytes(&t->alloc, layer_total, sizeof *t->layers);
                if (!t->layers) {
                    rc = KVSHARD_ENOMEM;
                    break;
                }
            }
            make_edge(e, t, ps, &sorted[i], &sorted[j], &placed, n, c);
            if (e > first_edge && e[-1].dst == e->dst && e[-1].component_code == e->component_code)
                shared = true;
            wire_per_token = kvshard__calc_add(c, wire_per_token, e->bytes_per_token);
            wire_fixed = kvshard__calc_add(c, wire_fixed, e->bytes_fixed);
            wire = kvshard__calc_add(c, wire, e->bytes);
            sent_per_token += e->bytes_per_token;
            sent_fixed += e->bytes_fixed;
            sent_bytes += e->bytes;
            rank_add(&received[e->dst], e->dst_stage, e->dst_tp, e);
        }
        if (rc != KVSHARD_OK)
            break; /* first_edge may not be made */
        if (shared)
            sort_few(first_edge, (size_t)(e - first_edge), sizeof *e, edge_order);
        const rank_sum sent = {
            true,      first_edge->src_stage, first_edge->src_tp, sent_per_token, sent_fixed,
            sent_bytes};
        if (!most_sent.present || busier(&sent, &most_sent, n > 0)) {
            most_sent = sent;
            most_sender = g;
        }
    }
    t->edge_count = (size_t)(e - t->edges);
    tt->wire_per_token = wire_per_token;
    tt->wire_fixed = wire_fixed;
    tt->wire = wire;
    if (rc == KVSHARD_OK) {
        tt->busiest_source =
            rank_of(most_sent.present ? &most_sent : NULL, (uint32_t)most_sender, n > 0);
        tt->busiest_destination = busiest(received, receivers, n > 0);
    }
    kvshard_alloc__free(&t->alloc, sorted);
    return rc;
}

/* The request's figures from the edges' sums: the time at the NIC, the
 * replication, and the warning when the wire carries more than one copy. */
static int totals(kvshard_transfer *t, const kvshard_transfer_options *o, kvshard__calc *c)
{
    kvshard_transfer_totals *tt = &t->totals;
    uint64_t n = o->tokens;
    tt->has_bytes = n > 0;
    tt->tokens = n;
    if (n) {
        uint64_t most = tt->busiest_source.bytes > tt->busiest_destination.bytes
                            ? tt->busiest_source.bytes
                            : tt->busiest_destination.bytes;
        tt->has_time = true;
        /* Apart from the bytes: a time past 64 bits is a NIC too slow for
         * the request, which the caller names as such. */
        kvshard__calc time = {false, false, false};
        tt->time_us = micros(&time, most, tt->nic_bytes_per_second);
        if (time.overflow && !c->overflow)
            return KVSHARD_ERANGE;
        if (tt->unique) {
            /* Rounded half up to 4 decimals in whole numbers, exact. */
            uint64_t q = tt->wire / tt->unique, r = tt->wire % tt->unique;
            uint64_t scaled =
                kvshard__calc_add(c, kvshard__calc_mul(c, q, 10000),
                                  kvshard__calc_add(c, kvshard__calc_mul(c, r, 20000), tt->unique) /
                                      kvshard__calc_mul(c, 2, tt->unique));
            tt->has_replication = true;
            tt->replication = (double)scaled / 10000.0;
        }
    }
    if (tt->wire_per_token > tt->unique_per_token || tt->wire_fixed > tt->unique_fixed) {
        char wire[32], unique[32];
        bool per_token = tt->wire_per_token > tt->unique_per_token;
        size_t wire_length = kvshard_format__grouped_text(
            wire, sizeof wire, per_token ? tt->wire_per_token : tt->wire_fixed);
        size_t unique_length = kvshard_format__grouped_text(
            unique, sizeof unique, per_token ? tt->unique_per_token : tt->unique_fixed);
        /* Joined, not formatted: most maps of a replicating D carry it. */
        const kvshard_format__part parts[] = {
            KVSHARD_FORMAT_LITERAL("the wire carries "), (kvshard_format__part){wire, wire_length},
            per_token ? KVSHARD_FORMAT_LITERAL(" B per token against ")
                      : KVSHARD_FORMAT_LITERAL(" B per request against "),
            (kvshard_format__part){unique, unique_length},
            KVSHARD_FORMAT_LITERAL(" B of one copy: D keeps replicas (a split on D, or a smaller "
                                   "D TP size, moves less)")};
        joined_warning(t, "wire_exceeds_unique", parts, sizeof parts / sizeof *parts);
    }
    return KVSHARD_OK;
}

static bool same_class(const layer_class *a, const layer_class *b)
{
    return a->d_class == b->d_class && kvshard__stage_holding_same(&a->p, &b->p) &&
           kvshard__stage_holding_same(&a->d, &b->d);
}

/* The classes last found, by what a decoder layer's holdings on both sides
 * are made of (its key) and D's layer class: a layer's class is then found
 * at once, without working out its holdings, which are worked out only for
 * a key not found here (and for draft layers, which are few). */
#define RECENT_CLASSES 64u

/* A layer's key, in three words: both sides' owners; D's layer class, the
 * kind (the sides share it: layers_alike()) and whether each side keeps the
 * layer's state; both sides' stages. A plan works out a layer's holding
 * from its kind, owner, stage and state alone, so layers of equal keys hold
 * alike on both sides. */
typedef struct recent_class {
    uint64_t owners, made, stages;
    uint32_t k; /* the class */
} recent_class;

/* The slots in use, a bit each: one word cleared, not a mark per slot. */
typedef uint64_t recent_used;
_Static_assert(RECENT_CLASSES == 8 * sizeof(recent_used), "a bit per recent class");

static recent_class layer_key(const kvshard_plan *p, const kvshard_plan *d, uint32_t layer,
                              uint32_t p_stage, uint32_t d_stage)
{
    uint8_t kind = d->kinds[layer];
    bool stateful = kvshard_kinds__of(kind)->state;
    uint64_t p_state = stateful && (int32_t)p->state_slot[layer] >= 0;
    uint64_t d_state = stateful && (int32_t)d->state_slot[layer] >= 0;
    return (recent_class){(uint32_t)p->owner[layer] | (uint64_t)(uint32_t)d->owner[layer] << 32,
                          d->class_of[layer] | (uint64_t)kind << 8 | p_state << 16 | d_state << 17,
                          p_stage | (uint64_t)d_stage << 32, 0};
}

static uint32_t recent_slot(const recent_class *key)
{
    /* The owners tell most layers apart: D's, in the high word, are folded
     * onto P's. */
    uint64_t h = key->owners ^ key->owners >> 29 ^ key->made * 5u ^ key->stages * 7u;
    return (uint32_t)(h ^ h >> 12) & (RECENT_CLASSES - 1);
}

static bool same_key(const recent_class *a, const recent_class *b)
{
    return a->owners == b->owners && a->made == b->made && a->stages == b->stages;
}

/* Each class's layers in ascending order, class after class. */
static void group_layers(pieces *ps, uint32_t layer_count)
{
    uint32_t at = 0;
    for (size_t k = 0; k < ps->class_count; k++) {
        ps->classes[k].first = at;
        at += ps->classes[k].layer_count;
        ps->classes[k].layer_count = 0;
    }
    for (uint32_t l = 0; l < layer_count; l++) {
        layer_class *cls = &ps->classes[ps->class_of[l]];
        ps->class_layers[cls->first + cls->layer_count++] = l;
    }
}

/* A new class of the layers like `layer`, the first of them: its
 * components and their route, read on it. */
static int open_class(pieces *ps, route *r, const layer_class *key, uint32_t layer, uint64_t tokens,
                      kvshard__calc *c, kvshard_error *err)
{
    if (!r->comps_known || r->comps_d_class != key->d_class || r->comps_d_stage != key->d.stage) {
        int rc = layer_components(r->comps, &r->comp_count, r->d.plan, layer, err);
        r->comps_known = rc == KVSHARD_OK;
        if (rc != KVSHARD_OK)
            return rc;
        r->comps_d_class = key->d_class;
        r->comps_d_stage = key->d.stage;
    }
    const component_of *comps = r->comps;
    uint32_t count = r->comp_count;
    int rc = KVSHARD_OK;
    uint32_t k = (uint32_t)ps->class_count++;
    layer_class *cls = &ps->classes[k];
    *cls = *key;
    side_route(&r->p, &key->p);
    side_route(&r->d, &key->d);
    for (uint32_t i = 0; i < count; i++) {
        bool moved = false;
        rc = route_component(ps, r, k, layer, &comps[i], &moved, err);
        if (rc != KVSHARD_OK)
            return rc;
        cls = &ps->classes[k];
        if (!moved)
            continue;
        /* One copy of what D holds: U units of every component moved. */
        uint64_t copy = kvshard__calc_mul(c, comps[i].units, comps[i].unit_bytes);
        if (comps[i].entry == E_TOKEN)
            cls->unique_per_token = kvshard__calc_add(c, cls->unique_per_token, copy);
        if (comps[i].entry == E_STATE)
            cls->unique_fixed = kvshard__calc_add(c, cls->unique_fixed, copy);
        if (tokens)
            cls->unique = kvshard__calc_add(
                c, cls->unique,
                kvshard__calc_mul(c, copy, entries(comps[i].entry, comps[i].span, tokens)));
    }
    return KVSHARD_OK;
}

static int build(kvshard_transfer *t, const kvshard_plan *p, const kvshard_plan *d,
                 const kvshard_transfer_options *o, kvshard_error *err)
{
    int rc = resolve_nic(&t->totals, o->nic, err);
    if (rc == KVSHARD_OK)
        rc = check_sides(t, p, d, o, err);
    if (rc != KVSHARD_OK)
        return rc;
    t->model_type = kvshard_alloc__strdup(&t->alloc, d->model_type ? d->model_type : "");
    /* Per TP rank of each side, so memory stays linear in the ranks. */
    route r = {.p = {.plan = p, .replica = o->p_replica},
               .d = {.plan = d, .replica = o->d_replica}};
    side_open(&r.p);
    side_open(&r.d);
    uint32_t L = d->model.num_layers, drafts = d->model.num_draft_layers;
    bool p_drafts = counts_drafts(p), d_drafts = counts_drafts(d);
    if (p_drafts && !d_drafts)
        warn(t, "draft_not_sent", "P counts %u draft layer%s and D does not: not sent", drafts,
             drafts == 1 ? "" : "s");
    if (d_drafts && !p_drafts)
        warn(t, "draft_not_on_source", "D counts %u draft layer%s and P does not: D rebuilds them",
             drafts, drafts == 1 ? "" : "s");
    t->num_layers = L;
    t->num_draft_layers = p_drafts && d_drafts ? drafts : 0;
    t->attention = d->model.attention;
    t->state_kind = d->model.state.kind;

    pieces ps = {.alloc = &t->alloc};
    size_t moved = (size_t)L + t->num_draft_layers;
    /* Both sides' global ranks and the classes' layers, which the map keeps
     * (an edge of one class points into them), in one block freed with P's
     * ranks: one allocation fewer per map. */
    size_t p_ranks = (size_t)p->pp * p->tp, d_ranks = (size_t)d->pp * d->tp;
    uint32_t *ranks = kvshard_alloc__bytes(&t->alloc, p_ranks + d_ranks + 2 * moved, sizeof *ranks);
    if (!t->model_type || !ranks)
        return fail(err, KVSHARD_ENOMEM, "out of memory");
    describe_side(&t->prefill, ranks, &r.p);
    describe_side(&t->decode, ranks + p_ranks, &r.d);
    t->class_layers = ps.class_of = ranks + p_ranks + d_ranks;
    ps.class_layers = ps.class_of + moved;
    /* Room for a piece per component most moved to each D rank of a stage
     * pair, so that a map like most is pushed without growing. */
    ps.cap = (size_t)d->pp * d->tp * 2;
    ps.at = kvshard_alloc__bytes(&t->alloc, ps.cap, sizeof *ps.at);
    if (!ps.at || !scratch_block(&ps, moved, p->options.world_size, d->options.world_size))
        rc = KVSHARD_ENOMEM;
    kvshard__calc c = {false, false, false};
    uint32_t first_of_stages = 0; /* the classes of the layers' stages on both sides */
    recent_class recent[RECENT_CLASSES];
    recent_used used = 0;
    layer_class key = {0}; /* only its holdings and D's class are compared */
    kvshard__stage_walk p_stages = kvshard__stage_walk_begin(p),
                        d_stages = kvshard__stage_walk_begin(d);
    for (uint32_t layer = 0; rc == KVSHARD_OK && layer < L + t->num_draft_layers; layer++) {
        bool draft = layer >= L;
        recent_class made_of = {0, 0, 0, 0}, *slot = NULL;
        uint32_t at = 0, k = 0;
        if (!draft) {
            made_of = layer_key(p, d, layer, kvshard__stage_walk_to(&p_stages, layer),
                                kvshard__stage_walk_to(&d_stages, layer));
            at = recent_slot(&made_of);
            slot = &recent[at];
        }
        if (slot && (used >> at & 1) && same_key(slot, &made_of)) {
            k = slot->k;
        } else {
            /* Layers of other keys may hold alike: the class is looked for
             * among those of the layer's stages by its holdings. */
            key.d_class = draft ? DRAFT_CLASS | d->draft_class[layer - L] : d->class_of[layer];
            holding_of_layer(&key.p, p, layer);
            holding_of_layer(&key.d, d, layer);
            if (ps.class_count && (ps.classes[first_of_stages].p.stage != key.p.stage ||
                                   ps.classes[first_of_stages].d.stage != key.d.stage))
                first_of_stages = (uint32_t)ps.class_count;
            for (k = first_of_stages; k < ps.class_count && !same_class(&ps.classes[k], &key); k++)
                ;
            if (k == ps.class_count)
                rc = open_class(&ps, &r, &key, layer, o->tokens, &c, err);
            if (rc != KVSHARD_OK)
                break;
            if (slot) {
                *slot = made_of;
                slot->k = k;
                used |= (recent_used)1 << at;
            }
        }
        ps.class_of[layer] = k;
        ps.classes[k].layer_count++;
    }
    if (rc == KVSHARD_OK)
        group_layers(&ps, L + t->num_draft_layers);
    kvshard_transfer_totals *tt = &t->totals;
    for (size_t k = 0; rc == KVSHARD_OK && k < ps.class_count; k++) {
        const layer_class *cls = &ps.classes[k];
        uint64_t n = cls->layer_count;
        tt->unique_per_token = kvshard__calc_add(&c, tt->unique_per_token,
                                                 kvshard__calc_mul(&c, n, cls->unique_per_token));
        tt->unique_fixed =
            kvshard__calc_add(&c, tt->unique_fixed, kvshard__calc_mul(&c, n, cls->unique_fixed));
        tt->unique = kvshard__calc_add(&c, tt->unique, kvshard__calc_mul(&c, n, cls->unique));
    }
    if (rc == KVSHARD_OK)
        rc = make_edges(t, &ps, o->tokens, p->options.world_size, d->options.world_size, &c);
    pieces_free(&ps);
    bool slow_nic = false;
    if (rc == KVSHARD_OK) {
        rc = totals(t, o, &c);
        slow_nic = rc == KVSHARD_ERANGE;
    }
    if (rc == KVSHARD_ENOMEM)
        return fail(err, KVSHARD_ENOMEM, "out of memory");
    if (slow_nic) {
        const kvshard_transfer_rank *most =
            t->totals.busiest_source.bytes > t->totals.busiest_destination.bytes
                ? &t->totals.busiest_source
                : &t->totals.busiest_destination;
        char bytes[32], rate[32];
        kvshard_format__grouped_text(bytes, sizeof bytes, most->bytes);
        kvshard_format__grouped_text(rate, sizeof rate, t->totals.nic_bytes_per_second);
        return fail(err, KVSHARD_ERANGE,
                    "the transfer's time is out of range: the busiest rank's %s B over --nic %s "
                    "(%s B/s) take more than 2^64 - 1 µs; a faster --nic or a shorter "
                    "--context_length",
                    bytes, o->nic ? o->nic : "ndr400", rate);
    }
    if (rc != KVSHARD_OK)
        return rc;
    if (c.overflow)
        return fail(err, KVSHARD_EOVERFLOW, "the transfer's bytes pass 2^64 - 1");
    return KVSHARD_OK;
}

/* ---- public ------------------------------------------------------------------------------ */

int kvshard_transfer_create(kvshard_transfer **out, const kvshard_plan *p, const kvshard_plan *d,
                            const kvshard_transfer_options *options,
                            const kvshard_allocator *allocator, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && p && d, "out, p and d");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__allocator(err, allocator);
    const kvshard_transfer_options defaults = KVSHARD_TRANSFER_OPTIONS_INIT;
    const kvshard_transfer_options *o = options ? options : &defaults;
    if (rc == KVSHARD_OK)
        rc = kvshard_call__size(err, "kvshard_transfer_options", o->size, sizeof *o,
                                "KVSHARD_TRANSFER_OPTIONS_INIT");
    if (rc != KVSHARD_OK)
        return rc;
    *out = NULL;
    kvshard_allocator a = kvshard_alloc__allocator_or_default(allocator);
    kvshard_transfer *t = kvshard_alloc__calloc(&a, 1, sizeof *t);
    if (!t)
        return fail(err, KVSHARD_ENOMEM, "out of memory");
    t->alloc = a;
    t->totals.size = sizeof t->totals;
    atomic_init(&t->digest, 0);
    atomic_init(&t->digest_known, false);
    rc = build(t, p, d, o, err);
    if (rc != KVSHARD_OK) {
        kvshard_transfer_free(t);
        return rc;
    }
    *out = t;
    return KVSHARD_OK;
}

void kvshard_transfer_free(kvshard_transfer *transfer)
{
    if (!transfer)
        return;
    kvshard_allocator a = transfer->alloc;
    kvshard_alloc__free(&a, transfer->edges);
    kvshard_alloc__free(&a, transfer->layers);
    kvshard_alloc__free(&a, transfer->model_type);
    kvshard_alloc__free(&a, transfer->verdicts);
    kvshard_alloc__free(&a, transfer->prefill.global_ranks); /* D's and the classes' layers too */
    kvshard_alloc__free(&a, transfer);
}

size_t kvshard_transfer_edge_count(const kvshard_transfer *transfer)
{
    return transfer ? transfer->edge_count : 0;
}

const kvshard_transfer_edge *kvshard_transfer_edge_at(const kvshard_transfer *transfer,
                                                      size_t index)
{
    return transfer && index < transfer->edge_count ? &transfer->edges[index] : NULL;
}

size_t kvshard_transfer_rank_edges(size_t *out, size_t cap, const kvshard_transfer *transfer,
                                   bool decode, uint32_t global_rank)
{
    size_t count = 0;
    for (size_t i = 0; transfer && i < transfer->edge_count; i++) {
        const kvshard_transfer_edge *e = &transfer->edges[i];
        if ((decode ? e->dst : e->src) != global_rank)
            continue;
        if (out && count < cap)
            out[count] = i;
        count++;
    }
    return count;
}

int kvshard_transfer_totals_get(kvshard_transfer_totals *out, const kvshard_transfer *transfer)
{
    int rc = kvshard_call__begin(NULL, out && transfer, "out and transfer");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__size(NULL, "kvshard_transfer_totals", out->size, sizeof *out,
                                "KVSHARD_TRANSFER_TOTALS_INIT");
    if (rc == KVSHARD_OK)
        *out = transfer->totals;
    return rc;
}

uint64_t kvshard_transfer_digest(const kvshard_transfer *transfer)
{
    if (!transfer)
        return 0;
    /* The one field a query writes: the transfer itself was made writable. */
    kvshard_transfer *t = (kvshard_transfer *)(uintptr_t)transfer;
    if (atomic_load_explicit(&t->digest_known, memory_order_acquire))
        return atomic_load_explicit(&t->digest, memory_order_relaxed);
    /* Two threads may both work it out: the same value, stored twice. */
    uint64_t digest = edges_digest(t->edges, t->edge_count);
    atomic_store_explicit(&t->digest, digest, memory_order_relaxed);
    atomic_store_explicit(&t->digest_known, true, memory_order_release);
    return digest;
}

size_t kvshard_transfer_warning_count(const kvshard_transfer *transfer)
{
    return transfer ? transfer->warning_count : 0;
}

int kvshard_transfer_warning(const char **out_code, const char **out_message,
                             const kvshard_transfer *transfer, size_t index)
{
    if (!transfer || index >= transfer->warning_count)
        return KVSHARD_EINVAL;
    if (out_code)
        *out_code = transfer->warnings[index].code;
    if (out_message)
        *out_message = transfer->warnings[index].message;
    return KVSHARD_OK;
}

/* ---- engine verdicts ---------------------------------------------------------------------- */

/* The next verdict of `t` for `profile`, or an error naming why there is
 * none. */
static int verdict_slot(kvshard__transfer_verdict **out, kvshard_transfer *t,
                        const kvshard__profile *profile, kvshard_error *err)
{
    if (!profile || !profile->transfer_verdict)
        return fail(err, KVSHARD_EINVAL, "the %s profile gives no transfer verdict",
                    profile ? profile->name : "unknown");
    for (size_t i = 0; i < t->verdict_count; i++)
        if (t->verdicts[i].engine == profile->engine)
            return fail(err, KVSHARD_EINVAL, "%s is judged already", profile->name);
    if (t->verdict_count == KVSHARD__TRANSFER_VERDICTS)
        return fail(err, KVSHARD_EINVAL, "a transfer keeps %u verdicts",
                    KVSHARD__TRANSFER_VERDICTS);
    if (!t->verdicts)
        t->verdicts =
            kvshard_alloc__calloc(&t->alloc, KVSHARD__TRANSFER_VERDICTS, sizeof *t->verdicts);
    if (!t->verdicts)
        return fail(err, KVSHARD_ENOMEM, "out of memory");
    *out = &t->verdicts[t->verdict_count];
    memset(*out, 0, sizeof **out);
    (*out)->engine = profile->engine;
    return KVSHARD_OK;
}

static void verdict_keep(kvshard_transfer *t, kvshard__transfer_verdict *v, const char *verdict)
{
    v->verdict = verdict;
    for (size_t i = 0; i < v->rules.reason_count; i++) {
        v->codes[i] = v->rules.reasons[i].code;
        v->messages[i] = v->rules.reasons[i].message;
    }
    t->verdict_count++;
}

/* Whether a layer of `plan` is of a kind in `kinds` (bit k for kind k). */
static bool has_kind(const kvshard_plan *plan, uint32_t kinds)
{
    for (uint32_t l = 0; l < plan->model.num_layers; l++)
        if (kinds >> plan->kinds[l] & 1u)
            return true;
    return false;
}

int kvshard_transfer_judge(kvshard_transfer *transfer, const kvshard_plan *p, const kvshard_plan *d,
                           kvshard_error *err)
{
    int rc = kvshard_call__begin(err, transfer && p && d, "transfer, p and d");
    if (rc != KVSHARD_OK)
        return rc;
    const kvshard_plan *side[2] = {p, d};
    const kvshard__transfer_side *ts[2] = {&transfer->prefill, &transfer->decode};
    const char *version[2];
    for (int s = 0; s < 2; s++) {
        version[s] = kvshard_validate__planning_version(side[s]->profile, side[s]->inputs);
        if (side[s]->tp != ts[s]->tp_size || side[s]->model.num_layers != transfer->num_layers)
            return fail(err, KVSHARD_EINVAL,
                        "the engine's plan of %s has %u layers at TP %u, the transfer's %u at "
                        "TP %u",
                        side_name(s), side[s]->model.num_layers, side[s]->tp, transfer->num_layers,
                        ts[s]->tp_size);
    }
    if (p->profile != d->profile || !version[0] || !version[1] ||
        strcmp(version[0], version[1]) != 0)
        return fail(err, KVSHARD_EINVAL,
                    "the two sides are planned under %s %s and %s %s: one engine at one version "
                    "judges",
                    p->profile->name, version[0] ? version[0] : "", d->profile->name,
                    version[1] ? version[1] : "");
    kvshard__transfer_verdict *v = NULL;
    rc = verdict_slot(&v, transfer, d->profile, err);
    if (rc != KVSHARD_OK)
        return rc;
    snprintf(v->version, sizeof v->version, "%s", version[1]);
    kvshard_profile__pair pair = {
        .model = &d->model,
        .model_type = d->model_type ? d->model_type : "",
        .has_state = has_kind(d, kvshard_kinds__state_mask()),
        .has_sliding = has_kind(d, kvshard_kinds__shape_mask(KVSHARD__SHAPE_WINDOW)),
    };
    for (int s = 0; s < 2; s++) {
        kvshard_capacity cap = KVSHARD_CAPACITY_INIT;
        (void)kvshard_plan_capacity(&cap, side[s]);
        pair.tp[s] = ts[s]->tp_size;
        pair.pp[s] = ts[s]->pp_size;
        pair.dp[s] = ts[s]->dp_size;
        pair.split[s] = ts[s]->split;
        pair.ownership[s] = ts[s]->ownership;
        pair.spec[s] = side[s]->options.num_speculative_tokens;
        pair.block[s] = cap.block_size;
        pair.state[s] = &side[s]->state;
    }
    d->profile->transfer_verdict(&v->rules, &pair);
    verdict_keep(transfer, v, v->rules.reason_count ? "refused" : "supported");
    return KVSHARD_OK;
}

int kvshard_transfer_judge_unsupported(kvshard_transfer *transfer, kvshard_engine engine,
                                       const char *version, const char *reason, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, transfer && reason, "transfer and reason");
    if (rc != KVSHARD_OK)
        return rc;
    const kvshard__profile *profile = kvshard_profiles__of(engine);
    kvshard__transfer_verdict *v = NULL;
    rc = verdict_slot(&v, transfer, profile, err);
    if (rc != KVSHARD_OK)
        return rc;
    snprintf(v->version, sizeof v->version, "%s", version ? version : profile->versions->fallback);
    kvshard_verdicts__refuse(&v->rules, "engine_unsupported", "%s", reason);
    verdict_keep(transfer, v, "unsupported");
    return KVSHARD_OK;
}

int kvshard_transfer_judging_engine(kvshard_engine *out, size_t index)
{
    int rc = kvshard_call__begin(NULL, out, "out");
    for (size_t i = 0; rc == KVSHARD_OK && i <= index; i++)
        if (!kvshard_profiles__judges[i])
            return KVSHARD_EINVAL;
    if (rc == KVSHARD_OK)
        *out = kvshard_profiles__judges[index]->engine;
    return rc;
}

size_t kvshard_transfer_verdict_count(const kvshard_transfer *transfer)
{
    return transfer ? transfer->verdict_count : 0;
}

int kvshard_transfer_verdict_at(kvshard_transfer_verdict *out, const kvshard_transfer *transfer,
                                size_t index)
{
    int rc = kvshard_call__begin(NULL, out && transfer && index < transfer->verdict_count,
                                 "out, transfer and an index below the verdicts");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__size(NULL, "kvshard_transfer_verdict", out->size, sizeof *out,
                                "KVSHARD_TRANSFER_VERDICT_INIT");
    if (rc != KVSHARD_OK)
        return rc;
    const kvshard__transfer_verdict *v = &transfer->verdicts[index];
    *out = (kvshard_transfer_verdict){
        sizeof *out,           v->engine, v->version,  v->verdict,
        v->rules.reason_count, v->codes,  v->messages, v->rules.require_count,
        v->rules.requires};
    return KVSHARD_OK;
}
