/* A model from a description an engine fills, checked as the loader checks a
 * config: missing figures name their field, impossible ones are refused. */
#include "base/abi.h"
#include "base/call.h"
#include "model/states.h"

#include <string.h>

#define SOURCE "kvshard_model_desc"

static int missing(kvshard_error *err, const char *field, const char *why)
{
    return kvshard_error__fail(err, KVSHARD_EMISSING, SOURCE, kvshard_error__no_mark,
                               "missing %s (%s)", field, why);
}

/* A figure that must be present: 1 .. KVSHARD__MAX_DIMENSION. */
static int need(kvshard_error *err, uint32_t value, const char *field, const char *why)
{
    if (value == 0)
        return missing(err, field, why);
    if (value > KVSHARD__MAX_DIMENSION)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "%s: %u is out of range; expected an integer from 1 to %u", field,
                             value, KVSHARD__MAX_DIMENSION);
    return KVSHARD_OK;
}

/* An optional figure: 0 (absent) or within range. */
static int optional(kvshard_error *err, uint32_t value, const char *field)
{
    return value == 0 ? KVSHARD_OK : need(err, value, field, "");
}

static void site(kvshard_model *m, int which, const char *field, uint32_t value)
{
    m->sites[which].key = field;
    m->sites[which].value = value;
    m->sites[which].mark = kvshard_error__no_mark;
}

static int check_state(kvshard_model *m, const kvshard_model_desc *d, kvshard_error *err)
{
    kvshard__state_dims *s = &m->info.state;
    s->kind = d->state_kind;
    s->heads = d->state_heads;
    s->key_heads = d->state_key_heads;
    s->head_dim = d->state_head_dim;
    s->value_dim = d->state_value_dim;
    s->state_size = d->state_size;
    s->groups = d->state_groups;
    s->conv_kernel = d->conv_kernel;
    s->channels = d->conv_channels;
    if (d->state_kind == KVSHARD_STATE_NONE)
        return missing(err, "state_kind", "the model has linear or hybrid layers");
    const kvshard_states__row *row = kvshard_states__of(d->state_kind);
    if (!row)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "state_kind %d is not a kvshard_state_kind", (int)d->state_kind);
    /* The dimensions the kind needs, with their defaults; the fields it does
     * not read are left as given. */
    const char *why = "the state of linear and hybrid layers";
    for (const kvshard_states__need *n = row->needs; n->dim != KVSHARD__DIM_COUNT; n++) {
        uint32_t *v = kvshard_states__field(s, n->dim);
        const char *field = kvshard_states__desc_name(n->dim);
        if (*v == 0)
            *v = n->fallback;
        int rc = need(err, *v, field, why);
        if (rc)
            return rc;
        if (n->site >= 0)
            site(m, n->site, field, *v);
    }
    if (row->bounded_inner && (uint64_t)s->heads * s->head_dim > KVSHARD__MAX_DIMENSION)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "state_heads %u x state_head_dim %u is past %u channels", s->heads,
                             s->head_dim, KVSHARD__MAX_DIMENSION);
    if (s->groups == 0)
        s->groups = 1;
    /* The state dtype: the description's, else the kind's default. */
    kvshard_dtype dt = d->state_dtype;
    if (dt != KVSHARD_DTYPE_AUTO && dt != KVSHARD_DTYPE_BF16 && dt != KVSHARD_DTYPE_FP16 &&
        dt != KVSHARD_DTYPE_FP32)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "state_dtype %s is not a state dtype (auto, bf16, fp16 or fp32)",
                             kvshard_dtype_name(dt));
    if (!row->temporal || dt == KVSHARD_DTYPE_AUTO)
        dt = kvshard_states__default_dtype(s->kind, m->info.dtype);
    s->dtype = dt;
    return KVSHARD_OK;
}

/* KV heads against query heads: each serves a whole number of them. */
static int check_kv_heads(kvshard_error *err, uint32_t kv, const char *kv_field, uint32_t q)
{
    if (q && kv > q)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "%s %u is more than num_attention_heads %u: each KV head serves one "
                             "or more query heads",
                             kv_field, kv, q);
    if (q && q % kv != 0)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "num_attention_heads %u is not divisible by %s %u: each KV head "
                             "serves the same number of query heads",
                             q, kv_field, kv);
    return KVSHARD_OK;
}

/* The GQA geometries the layers use: the full layers' (`full`) and the
 * sliding layers' (`sliding`). */
static int check_gqa(kvshard_model *m, const kvshard_model_desc *d, bool full, bool sliding,
                     kvshard_error *err)
{
    kvshard__model_info *in = &m->info;
    const char *why = "needed for the KV bytes of attention layers";
    uint32_t kv = d->num_kv_heads ? d->num_kv_heads : d->num_attention_heads;
    uint32_t q = d->num_attention_heads;
    int rc;
    if ((rc = need(err, kv, "num_kv_heads", why)) != 0 ||
        (rc = need(err, d->head_dim, "head_dim", why)) != 0 ||
        (rc = optional(err, q, "num_attention_heads")) != 0 ||
        (rc = optional(err, d->v_head_dim, "v_head_dim")) != 0 ||
        (rc = optional(err, d->sliding_kv_heads, "sliding_kv_heads")) != 0 ||
        (rc = optional(err, d->sliding_head_dim, "sliding_head_dim")) != 0 ||
        (rc = optional(err, d->sliding_v_head_dim, "sliding_v_head_dim")) != 0 ||
        (rc = check_kv_heads(err, kv, "num_kv_heads", q)) != 0)
        return rc;
    if (full) {
        in->full.heads = kv;
        in->full.k_dim = d->head_dim;
        in->full.v_dim = d->v_head_dim ? d->v_head_dim : d->head_dim;
        site(m, KVSHARD__SITE_KV_HEADS, d->num_kv_heads ? "num_kv_heads" : "num_attention_heads",
             kv);
    }
    if (sliding) {
        uint32_t heads = d->sliding_kv_heads ? d->sliding_kv_heads : kv;
        if ((rc = check_kv_heads(err, heads, "sliding_kv_heads", q)) != 0)
            return rc;
        in->sliding.heads = heads;
        in->sliding.k_dim = d->sliding_head_dim ? d->sliding_head_dim : d->head_dim;
        in->sliding.v_dim = d->sliding_v_head_dim ? d->sliding_v_head_dim : in->sliding.k_dim;
        site(m, KVSHARD__SITE_SLIDING_KV_HEADS,
             d->sliding_kv_heads   ? "sliding_kv_heads"
             : d->num_kv_heads ? "num_kv_heads"
                               : "num_attention_heads",
             heads);
    }
    if (q)
        site(m, KVSHARD__SITE_Q_HEADS, "num_attention_heads", q);
    return KVSHARD_OK;
}

static int check_attention(kvshard_model *m, const kvshard_model_desc *d, bool full, bool sliding,
                           kvshard_error *err)
{
    kvshard__model_info *in = &m->info;
    const char *why = "needed for the KV bytes of attention layers";
    int rc;
    if (d->attention == KVSHARD_ATTENTION_MLA) {
        in->attention = KVSHARD_ATTENTION_MLA;
        if ((rc = need(err, d->kv_lora_rank, "kv_lora_rank", why)) != 0 ||
            (rc = need(err, d->qk_rope_head_dim, "qk_rope_head_dim", why)) != 0 ||
            (rc = optional(err, d->index_head_dim, "index_head_dim")) != 0 ||
            (rc = optional(err, d->num_attention_heads, "num_attention_heads")) != 0)
            return rc;
        /* The query heads T must divide, as for GQA. */
        if (d->num_attention_heads)
            site(m, KVSHARD__SITE_Q_HEADS, "num_attention_heads", d->num_attention_heads);
        in->kv_lora_rank = d->kv_lora_rank;
        in->qk_rope_head_dim = d->qk_rope_head_dim;
        in->has_indexer = d->index_head_dim > 0;
        in->index_head_dim = d->index_head_dim;
        return KVSHARD_OK;
    }
    if (d->attention == KVSHARD_ATTENTION_COMPRESSED)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "attention: compressed attention cannot be described (its layers "
                             "read their neighbours' streams); load the model's config");
    if (d->attention != KVSHARD_ATTENTION_GQA)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "attention %d is not a kvshard_attention", (int)d->attention);
    return check_gqa(m, d, full, sliding, err);
}

static int describe(kvshard_model *m, const kvshard_model_desc *d, kvshard_error *err)
{
    kvshard__model_info *in = &m->info;
    for (uint32_t i = 0; i < in->num_layers; i++) {
        int k = d->layer_kinds ? (int)d->layer_kinds[i] : KVSHARD_LAYER_FULL_ATTENTION;
        if (k < 0 || (unsigned)k >= KVSHARD__KIND_COUNT)
            return kvshard_error__fail(err, KVSHARD_ELAYERTYPE, SOURCE, kvshard_error__no_mark,
                                 "layer_kinds[%u]: %d is not a kvshard_layer_kind", i, k);
        if (k == KVSHARD_LAYER_COMPRESSED || k == KVSHARD_LAYER_SHARED_KV)
            return kvshard_error__fail(err, KVSHARD_ELAYERTYPE, SOURCE, kvshard_error__no_mark,
                                 "layer_kinds[%u]: a %s layer cannot be described (it reads "
                                 "other layers' caches); load the model's config",
                                 i, kvshard_layer_kind_name((kvshard_layer_kind)k));
        m->kinds[i] = (uint8_t)k;
    }
    kvshard_model__count_kinds(m);
    kvshard_dtype dt = d->dtype == KVSHARD_DTYPE_AUTO ? KVSHARD_DTYPE_BF16 : d->dtype;
    /* Either fp8 format is a checkpoint's dtype, as a config's float8_e4m3fn
     * and float8_e5m2 are. */
    if (dt == KVSHARD_DTYPE_INT8 || (int)dt < 0 || (int)dt > KVSHARD_DTYPE_FP8_E5M2)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "dtype %d is not a model dtype (bf16, fp16, fp32, fp8 or fp8_e5m2)",
                             (int)dt);
    in->dtype = dt;
    int rc;
    if (d->num_draft_layers > KVSHARD__MAX_DRAFT_LAYERS)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "num_draft_layers: %u is out of range; expected an integer from 0 "
                             "to %u",
                             d->num_draft_layers, KVSHARD__MAX_DRAFT_LAYERS);
    in->num_draft_layers = d->num_draft_layers;
    const uint32_t *n = in->count;
    uint32_t sliding = n[KVSHARD_LAYER_SLIDING_ATTENTION];
    uint32_t chunked = n[KVSHARD_LAYER_CHUNKED_ATTENTION];
    bool full = kvshard__num_kv_layers(in) + chunked + in->num_draft_layers > 0;
    if ((full || sliding) && (rc = check_attention(m, d, full, sliding > 0, err)) != 0)
        return rc;
    if (sliding > 0) {
        if ((rc = need(err, d->sliding_window, "sliding_window",
                       "sliding_attention layers keep the last sliding_window tokens")) != 0)
            return rc;
        in->sliding_window = d->sliding_window;
    }
    if (chunked > 0) {
        if ((rc = need(err, d->attention_chunk_size, "attention_chunk_size",
                       "chunked_attention layers keep one chunk of attention_chunk_size "
                       "tokens")) != 0)
            return rc;
        in->chunk_size = d->attention_chunk_size;
    }
    if (in->num_state > 0 && (rc = check_state(m, d, err)) != 0)
        return rc;
    /* A description's DSA indexer keeps a key on every full-attention layer
     * and draft layer. */
    uint8_t index = in->attention == KVSHARD_ATTENTION_MLA && in->has_indexer
                        ? (uint8_t)KVSHARD__LAYER_INDEX_KEY
                        : 0;
    for (uint32_t i = 0; index && i < in->num_layers; i++) {
        if (m->kinds[i] == KVSHARD_LAYER_FULL_ATTENTION)
            kvshard__set_layer_flags(m, i, index);
    }
    if ((rc = kvshard_model__classes(m, err)) != 0)
        return rc;
    if (in->num_draft_layers > 0) {
        uint8_t c = kvshard_model__class_of(in, KVSHARD_LAYER_FULL_ATTENTION, 0, index);
        if (c == UINT8_MAX)
            return kvshard_error__fail(err, KVSHARD_ELIMIT, SOURCE, kvshard_error__no_mark,
                                 "the layers cache more than %u distinct kinds of entries",
                                 KVSHARD__MAX_CLASSES);
        in->draft_census[c] = in->num_draft_layers;
        m->draft_class = kvshard_alloc__bytes(&m->alloc, in->num_draft_layers, 1);
        if (!m->draft_class)
            return kvshard_error__fail(err, KVSHARD_ENOMEM, SOURCE, kvshard_error__no_mark,
                                       "out of memory");
        memset(m->draft_class, c, in->num_draft_layers);
    }
    return KVSHARD_OK;
}

int kvshard_model_create(kvshard_model **out, const kvshard_model_desc *desc,
                         const kvshard_allocator *allocator, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && desc, "out and desc");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__size(err, "kvshard_model_desc", desc->size, sizeof *desc,
                                "KVSHARD_MODEL_DESC_INIT");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__allocator(err, allocator);
    if (rc)
        return rc;
    if (desc->num_layers < 1 || desc->num_layers > KVSHARD_MAX_LAYERS)
        return kvshard_error__fail(err, KVSHARD_ERANGE, SOURCE, kvshard_error__no_mark,
                             "num_layers: %u is out of range; expected an integer from 1 to %u",
                             desc->num_layers, KVSHARD_MAX_LAYERS);
    kvshard_allocator a = kvshard_alloc__allocator_or_default(allocator);
    const char *type = desc->model_type ? desc->model_type : "";
    kvshard_model *m;
    rc = kvshard_model__new(&m, &a, SOURCE, type, strlen(type), desc->num_layers, err);
    if (rc)
        return rc;
    if ((rc = describe(m, desc, err)) != 0) {
        kvshard_model_free(m);
        return rc;
    }
    *out = m;
    return KVSHARD_OK;
}
