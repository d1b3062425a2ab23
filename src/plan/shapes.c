/* Buffer shapes: the elements an engine allocates for a layer on a rank, as
 * the plan's memory counts them. Nothing here has a formula of its own: the
 * KV dtype, an entry's parts, a window's tokens and a compressor's state are
 * memory's, the heads its split of heads over T, the state tensors the
 * state-kind table's, and the kind of a layer is read through the
 * layer-kind table's rows. */
#include "plan/plan.h"

#include "base/abi.h"
#include "base/call.h"

#include <string.h>

/* Every tensor the state-kind table gives fits the caller's array. */
_Static_assert(KVSHARD__STATE_TENSORS <= KVSHARD_MAX_STATE_TENSORS,
               "the public limit on a layer's state tensors holds the table's");

uint32_t kvshard_dtype_size(kvshard_dtype dtype)
{
    /* kvshard_dtype__bytes counts AUTO as bfloat16 for sizing; a caller
     * asking of a type gets 0 for what is no type. */
    if (dtype <= KVSHARD_DTYPE_AUTO || dtype > KVSHARD_DTYPE_FP8_E5M2)
        return 0;
    return kvshard_dtype__bytes(dtype);
}

kvshard_dtype kvshard_plan_kv_cache_dtype(const kvshard_plan *plan)
{
    return plan ? kvshard_memory__kv_cache_dtype(&plan->model, &plan->options) : KVSHARD_DTYPE_AUTO;
}

/* The class of decoder or draft layer `layer`, or UINT8_MAX past the
 * layers the plan has. */
static uint8_t class_of_layer(const kvshard_plan *plan, uint32_t layer)
{
    const kvshard__model_info *m = &plan->model;
    if (layer < m->num_layers)
        return plan->class_of[layer];
    if (plan->draft_class && layer - m->num_layers < m->num_draft_layers)
        return plan->draft_class[layer - m->num_layers];
    return UINT8_MAX;
}

/* The checks both queries begin with, after the NULL arguments. */
static int check_position(const kvshard_plan *plan, uint32_t plan_rank, uint32_t layer,
                          kvshard_error *err)
{
    if (plan_rank >= plan->ranks_count)
        return kvshard_error__fail(err, KVSHARD_ERANK, "", kvshard_error__no_mark,
                             "plan rank %u is outside 0..%u", plan_rank, plan->ranks_count - 1);
    if (class_of_layer(plan, layer) == UINT8_MAX)
        return kvshard_error__fail(err, KVSHARD_ELAYER, "", kvshard_error__no_mark,
                             "layer %u is outside 0..%u (decoder and draft layers)", layer,
                             plan->model.num_layers +
                                 (plan->draft_class ? plan->model.num_draft_layers : 0) - 1);
    return KVSHARD_OK;
}

int kvshard_plan_layer_kv_geometry(kvshard_layer_kv_geometry *out, const kvshard_plan *plan,
                                   uint32_t plan_rank, uint32_t layer, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && plan, "out and plan");
    if (rc)
        return rc;
    if (!kvshard__size_ok(out->size, sizeof *out, sizeof *out))
        return kvshard_call__size(err, "kvshard_layer_kv_geometry", out->size, sizeof *out,
                                  "KVSHARD_LAYER_KV_GEOMETRY_INIT");
    if ((rc = check_position(plan, plan_rank, layer, err)) != 0)
        return rc;
    const kvshard__model_info *m = &plan->model;
    const kvshard__class *k = &m->classes[class_of_layer(plan, layer)];
    const kvshard_kinds__row *row = kvshard_kinds__of(k->kind);
    kvshard_layer_kv_geometry g;
    KVSHARD__INIT_BYTES(g, kvshard_layer_kv_geometry, KVSHARD_LAYER_KV_GEOMETRY_INIT);
    g.kind = (kvshard_layer_kind)k->kind;
    g.attention = m->attention;
    g.dtype = kvshard_memory__kv_cache_dtype(m, &plan->options);
    g.element_bytes = kvshard_dtype_size(g.dtype);
    g.has_kv = row->shape != KVSHARD__SHAPE_NONE;
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
    kvshard__entry_layout layout = kvshard_memory__entry_layout(&in);
    uint64_t scales = 0;
    if (g.has_kv && m->attention == KVSHARD_ATTENTION_GQA) {
        /* A window kind caches in the sliding geometry, every other kind in
         * the full layers'. */
        const kvshard__geometry *geo = row->shape == KVSHARD__SHAPE_WINDOW ? &m->sliding : &m->full;
        uint32_t t = plan_rank % plan->tp;
        kvshard_memory__kv_heads(&g.kv_head_first, &g.kv_heads, geo->heads, plan->tp, t, t);
        g.total_kv_heads = geo->heads;
        g.k_head_dim = geo->k_dim;
        g.v_head_dim = geo->v_dim;
        scales = (uint64_t)layout.head_scale_bytes * g.kv_heads;
    } else if (g.has_kv) {
        g.kv_lora_rank = m->attention == KVSHARD_ATTENTION_MLA ? m->kv_lora_rank : 0;
        g.qk_rope_head_dim = m->qk_rope_head_dim;
        g.latent_dim = m->attention == KVSHARD_ATTENTION_COMPRESSED ? m->latent_dim : 0;
        g.rope_element_bytes = layout.rope_element_bytes;
        scales = layout.latent_scale_bytes;
    }
    /* A window of an MLA model caches the latent without an index key. */
    if (g.has_kv && (k->flags & KVSHARD__LAYER_INDEX_KEY) && !row->window) {
        g.index_head_dim = m->index_head_dim;
        g.index_element_bytes = layout.index_element_bytes;
        scales += layout.index_scale_bytes;
    }
    g.scale_bytes_per_token = (uint32_t)scales;
    if (scales)
        g.scale_dtype = m->attention == KVSHARD_ATTENTION_COMPRESSED && layout.latent_scale_bytes
                            ? KVSHARD_DTYPE_FP8
                            : KVSHARD_DTYPE_FP32;
    *out = g;
    return KVSHARD_OK;
}

/* Appends one tensor of `ndim` dims to `out` at *n. */
static void put_tensor(kvshard_state_tensor *out, uint32_t *n, const char *name,
                       kvshard_dtype dtype, uint32_t ndim, uint64_t a, uint64_t b, uint64_t c)
{
    kvshard_state_tensor *f = &out[(*n)++];
    KVSHARD__INIT_BYTES(*f, kvshard_state_tensor, KVSHARD_STATE_TENSOR_INIT);
    f->name = name;
    f->dtype = dtype;
    f->ndim = ndim;
    f->dims[0] = a;
    f->dims[1] = b;
    f->dims[2] = ndim > 2 ? c : 0;
    f->bytes = a * b * (ndim > 2 ? c : 1) * kvshard_dtype_size(dtype);
}

/* The most tensors a window or a compressed layer's cache has. */
#define WINDOW_TENSORS 4u
_Static_assert(WINDOW_TENSORS <= KVSHARD_MAX_STATE_TENSORS,
               "the public limit on a layer's tensors holds a window's");

/* The per-sequence tensors of the cache of class `cls` a rank keeps with
 * `heads` KV heads: a window's (or chunk's) K and V with their scales, or
 * a latent window, and a compressed layer's compressor state. These are
 * the per-sequence bytes of memory's layer cost, part by part. Returns
 * how many were put in `out`. */
static uint32_t window_tensors(kvshard_state_tensor *out, const kvshard_plan *plan, uint8_t cls,
                               uint32_t heads)
{
    const kvshard__model_info *m = &plan->model;
    const kvshard__class *k = &m->classes[cls];
    kvshard_kinds__shape shape = kvshard_kinds__of(k->kind)->shape;
    if (shape != KVSHARD__SHAPE_WINDOW && shape != KVSHARD__SHAPE_CHUNK &&
        shape != KVSHARD__SHAPE_COMPRESSED)
        return 0;
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
    kvshard__entry_layout l = kvshard_memory__entry_layout(&in);
    kvshard_dtype dtype = kvshard_memory__kv_cache_dtype(m, &plan->options);
    uint32_t n = 0;
    uint64_t span = shape == KVSHARD__SHAPE_CHUNK ? m->chunk_size : m->sliding_window;
    uint64_t tokens = kvshard_memory__window_tokens(&in, span);
    if (shape != KVSHARD__SHAPE_COMPRESSED && m->attention == KVSHARD_ATTENTION_GQA) {
        const kvshard__geometry *g = shape == KVSHARD__SHAPE_WINDOW ? &m->sliding : &m->full;
        put_tensor(out, &n, "window_k", dtype, 3, tokens, heads, g->k_dim);
        put_tensor(out, &n, "window_v", dtype, 3, tokens, heads, g->v_dim);
        if (l.head_scale_bytes) { /* an fp32 scale for K and one for V per head */
            put_tensor(out, &n, "window_k_scale", KVSHARD_DTYPE_FP32, 2, tokens, heads, 0);
            put_tensor(out, &n, "window_v_scale", KVSHARD_DTYPE_FP32, 2, tokens, heads, 0);
        }
        return n;
    }
    /* A latent: its elements, or at one byte an element the packed entry
     * (NoPE, RoPE and scales), whose last dim counts its bytes. */
    bool compressed = shape == KVSHARD__SHAPE_COMPRESSED;
    uint64_t rope = m->qk_rope_head_dim, nope = compressed ? m->latent_dim - rope : m->kv_lora_rank;
    uint64_t entry = nope + rope;
    if (l.element_bytes == 1)
        entry = nope + rope * l.rope_element_bytes + l.latent_scale_bytes;
    put_tensor(out, &n, "window_latent", dtype, 2, tokens, entry, 0);
    kvshard__compressor comp = compressed ? kvshard_memory__compressor(&in, k)
                                          : (kvshard__compressor){0, 0, 0};
    if (comp.slots)
        put_tensor(out, &n, "compressor_state", KVSHARD_DTYPE_FP32, 3, comp.slots, comp.rows,
                   comp.dims);
    return n;
}

int kvshard_plan_layer_state_shapes(kvshard_state_tensor *out, size_t cap, size_t *out_count,
                                    const kvshard_plan *plan, uint32_t plan_rank, uint32_t layer,
                                    kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out_count && plan && (out || cap == 0),
                                 "out_count, plan and (with a cap) out");
    if (rc)
        return rc;
    for (size_t i = 0; i < cap; i++) {
        if (!kvshard__size_ok(out[i].size, sizeof *out, sizeof *out))
            return kvshard_call__size(err, "kvshard_state_tensor", out[i].size, sizeof *out,
                                      "KVSHARD_STATE_TENSOR_INIT");
    }
    if ((rc = check_position(plan, plan_rank, layer, err)) != 0)
        return rc;
    const kvshard__model_info *m = &plan->model;
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    if ((rc = kvshard_plan_layer_storage(&st, plan, plan_rank, layer)) != KVSHARD_OK)
        return kvshard_error__fail(err, rc, "", kvshard_error__no_mark,
                                   "the storage of layer %u overflows 64 bits", layer);
    kvshard_state_tensor filled[KVSHARD__STATE_TENSORS + WINDOW_TENSORS];
    uint32_t n = 0;
    if (layer < m->num_layers && st.holding != KVSHARD_HOLDS_NOT_ON_STAGE &&
        kvshard_kinds__has_state(plan->kinds[layer])) {
        kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
        kvshard_states__env env = kvshard_memory__state_env(&in);
        kvshard_states__tensor t[KVSHARD__STATE_TENSORS];
        kvshard__calc c = {false, false, false};
        n = kvshard_states__shapes(t, &c, &m->state, &env);
        for (uint32_t i = 0; i < n; i++) {
            kvshard_state_tensor *f = &filled[i];
            KVSHARD__INIT_BYTES(*f, kvshard_state_tensor, KVSHARD_STATE_TENSOR_INIT);
            f->name = t[i].name;
            f->dtype = t[i].temporal ? plan->state_dtype : m->dtype;
            f->ndim = t[i].ndim;
            memcpy(f->dims, t[i].dims, sizeof f->dims);
            f->bytes = kvshard_states__tensor_bytes(&c, &t[i], &env);
        }
        if (c.overflow) /* not reached: planning counted these bytes */
            return kvshard_error__fail(err, KVSHARD_EOVERFLOW, "", kvshard_error__no_mark,
                                       "the state tensors of layer %u overflow 64 bits", layer);
    }
    /* A window, or a compressed layer's cache, where the rank keeps it: as
     * the layer's storage counts it, with the heads it names. */
    if (st.holding == KVSHARD_HOLDS_WINDOW || st.holding == KVSHARD_HOLDS_KV ||
        st.holding == KVSHARD_HOLDS_DRAFT) {
        uint8_t cls = layer < m->num_layers ? plan->class_of[layer]
                                            : plan->draft_class[layer - m->num_layers];
        n += window_tensors(filled + n, plan, cls, st.kv_head_count);
    }
    for (uint32_t i = 0; i < n && i < cap; i++)
        out[i] = filled[i];
    *out_count = n;
    return KVSHARD_OK;
}
