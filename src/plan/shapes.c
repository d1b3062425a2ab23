/* Buffer shapes: the elements an engine allocates for a layer on a rank, as
 * the plan's memory counts them. Nothing here has a formula of its own: the
 * KV dtype is memory's resolution, the heads its split of heads over T, the
 * state tensors the state-kind table's, and the kind of a layer is read
 * through the layer-kind table's rows. */
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
    if (dtype <= KVSHARD_DTYPE_AUTO || dtype > KVSHARD_DTYPE_INT8)
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
    if (g.has_kv && m->attention == KVSHARD_ATTENTION_GQA) {
        /* A window kind caches in the sliding geometry, every other kind in
         * the full layers'. */
        const kvshard__geometry *geo = row->shape == KVSHARD__SHAPE_WINDOW ? &m->sliding : &m->full;
        uint32_t t = plan_rank % plan->tp;
        kvshard_memory__kv_heads(&g.kv_head_first, &g.kv_heads, geo->heads, plan->tp, t, t);
        g.total_kv_heads = geo->heads;
        g.k_head_dim = geo->k_dim;
        g.v_head_dim = geo->v_dim;
    } else if (g.has_kv) {
        g.kv_lora_rank = m->attention == KVSHARD_ATTENTION_MLA ? m->kv_lora_rank : 0;
        g.qk_rope_head_dim = m->qk_rope_head_dim;
        g.latent_dim = m->attention == KVSHARD_ATTENTION_COMPRESSED ? m->latent_dim : 0;
    }
    if (g.has_kv && (k->flags & KVSHARD__LAYER_INDEX_KEY))
        g.index_head_dim = m->index_head_dim;
    *out = g;
    return KVSHARD_OK;
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
    const kvshard__rank_place *place = &plan->place[plan_rank];
    bool on_stage = layer < m->num_layers && layer - place->first < place->count;
    if (!on_stage || !kvshard_kinds__has_state(plan->kinds[layer])) {
        *out_count = 0;
        return KVSHARD_OK;
    }
    kvshard__memory_inputs in = kvshard_plan__memory_inputs(plan);
    kvshard_states__env env = kvshard_memory__state_env(&in);
    kvshard_states__tensor t[KVSHARD__STATE_TENSORS];
    kvshard__calc c = {false, false, false};
    uint32_t n = kvshard_states__shapes(t, &c, &m->state, &env);
    kvshard_state_tensor filled[KVSHARD__STATE_TENSORS];
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
    for (uint32_t i = 0; i < n && i < cap; i++)
        out[i] = filled[i];
    *out_count = n;
    return KVSHARD_OK;
}
