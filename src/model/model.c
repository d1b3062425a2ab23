/* The model object: one allocation holding its figures, layer kinds, source
 * and type, and the queries on it. */
#include "model/model.h"

#include <string.h>

int kvshard_model__new(kvshard_model **out, const kvshard_allocator *alloc, const char *source,
                       const char *model_type, size_t type_len, uint32_t num_layers,
                       kvshard_error *err)
{
    /* One allocation: the model, then its per-layer kinds and classes, its
     * source and type. */
    size_t source_len = strlen(source);
    size_t fixed = sizeof(kvshard_model) + 2 * (size_t)num_layers + 2;
    kvshard_model *m = NULL;
    if (source_len <= SIZE_MAX - fixed && type_len <= SIZE_MAX - fixed - source_len)
        m = kvshard_alloc__bytes(alloc, 1, fixed + source_len + type_len);
    if (!m)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, source, kvshard_error__no_mark,
                                   "out of memory");
    memset(m, 0, sizeof *m);
    m->alloc = *alloc;
    m->kinds = (uint8_t *)(m + 1);
    m->class_of = m->kinds + num_layers;
    memset(m->class_of, 0, num_layers);
    m->kv_source = NULL;
    m->source = (char *)m->class_of + num_layers;
    memcpy(m->source, source, source_len + 1);
    m->model_type = m->source + source_len + 1;
    memcpy(m->model_type, model_type, type_len);
    m->model_type[type_len] = '\0';
    m->info.num_layers = num_layers;
    *out = m;
    return KVSHARD_OK;
}

void kvshard_model__census(uint32_t *count, uint32_t values, const uint8_t *of, uint32_t n)
{
    /* Four tables counted in turn, then summed (see docs/performance.md). */
    uint32_t c[4][KVSHARD__MAX_CLASSES];
    for (int t = 0; t < 4; t++)
        memset(c[t], 0, values * sizeof c[t][0]);
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        c[0][of[i]]++;
        c[1][of[i + 1]]++;
        c[2][of[i + 2]]++;
        c[3][of[i + 3]]++;
    }
    for (; i < n; i++)
        c[0][of[i]]++;
    for (uint32_t k = 0; k < values; k++)
        count[k] = c[0][k] + c[1][k] + c[2][k] + c[3][k];
}

uint8_t kvshard_model__class_of(kvshard__model_info *m, uint8_t kind, uint8_t ratio, uint8_t flags)
{
    for (uint32_t c = 0; c < m->num_classes; c++) {
        const kvshard__class *k = &m->classes[c];
        if (k->kind == kind && k->ratio == ratio && k->flags == flags)
            return (uint8_t)c;
    }
    if (m->num_classes == KVSHARD__MAX_CLASSES)
        return UINT8_MAX;
    kvshard__class *k = &m->classes[m->num_classes];
    k->kind = kind;
    k->ratio = ratio;
    k->flags = flags;
    return (uint8_t)m->num_classes++;
}

int kvshard_model__classes(kvshard_model *m, kvshard_error *err)
{
    kvshard__model_info *in = &m->info;
    if (!m->any_attrs) {
        /* No layer has a ratio or flags (most models): one class per kind. */
        uint8_t *by_kind = in->kind_class;
        for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
            by_kind[k] = in->count[k] ? kvshard_model__class_of(in, k, 0, 0) : 0;
        in->classes_by_kind = true;
        uint8_t *restrict class_of = m->class_of;
        const uint8_t *restrict kinds = m->kinds;
        for (uint32_t i = 0, n = in->num_layers; i < n; i++)
            class_of[i] = by_kind[kinds[i]];
        return KVSHARD_OK;
    }
    /* Each layer's ratio and flags give way to its class, in place. Layers
     * of one class come in runs: a class is looked up when a layer differs
     * from the one before. */
    uint8_t kind = UINT8_MAX, attrs = 0, c = 0;
    for (uint32_t i = 0; i < in->num_layers; i++) {
        if (m->kinds[i] != kind || m->class_of[i] != attrs) {
            kind = m->kinds[i];
            attrs = m->class_of[i];
            c = kvshard_model__class_of(in, kind, kvshard__layer_ratio(m, i),
                                        kvshard__layer_flags(m, i));
            if (c == UINT8_MAX)
                return kvshard_error__fail(err, KVSHARD_ELIMIT, m->source, kvshard_error__no_mark,
                                     "the layers cache more than %u distinct kinds of entries "
                                     "(kind, compression ratio and index keys)",
                                     KVSHARD__MAX_CLASSES);
        }
        m->class_of[i] = c;
    }
    return KVSHARD_OK;
}

void kvshard_model__range_of(kvshard__range *out, const uint8_t *kinds, const uint8_t *class_of,
                       const kvshard__model_info *m, uint32_t first, uint32_t count)
{
    out->first = first;
    out->count = count;
    /* The whole model's census is the model's own count. */
    if (m && first == 0 && count == m->num_layers)
        memcpy(out->census, m->count, sizeof out->census);
    else
        kvshard_model__census(out->census, KVSHARD__KIND_COUNT, kinds + first, count);
    memset(out->class_census, 0, sizeof out->class_census);
    if (m && m->classes_by_kind) {
        for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
            out->class_census[m->kind_class[k]] += out->census[k];
    } else if (m) {
        kvshard_model__census(out->class_census, m->num_classes, class_of + first, count);
    }
    out->num_kv = 0;
    out->num_state = 0;
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        const kvshard_kinds__row *row = kvshard_kinds__of(k);
        out->num_kv += row->paged_kv ? out->census[k] : 0;
        out->num_state += row->state ? out->census[k] : 0;
    }
}

void kvshard_model__count_kinds(kvshard_model *m)
{
    kvshard__model_info *in = &m->info;
    kvshard__range all;
    kvshard_model__range_of(&all, m->kinds, NULL, NULL, 0, in->num_layers);
    memcpy(in->count, all.census, sizeof in->count);
    in->num_kv = all.num_kv;
    in->num_state = all.num_state;
}

void kvshard_model_free(kvshard_model *model)
{
    if (!model)
        return;
    kvshard_allocator a = model->alloc;
    kvshard_alloc__free(&a, model->kv_source);
    kvshard_alloc__free(&a, model->draft_class);
    kvshard_alloc__free(&a, model); /* its per-layer arrays, source and type with it */
}

/* ---- queries --------------------------------------------------------------------------- */

const char *kvshard_model_type(const kvshard_model *model)
{
    return model ? model->model_type : "";
}

uint32_t kvshard_model_num_layers(const kvshard_model *model)
{
    return model ? model->info.num_layers : 0;
}

uint32_t kvshard_model_num_draft_layers(const kvshard_model *model)
{
    return model ? model->info.num_draft_layers : 0;
}

kvshard_attention kvshard_model_attention(const kvshard_model *model)
{
    return model ? model->info.attention : KVSHARD_ATTENTION_GQA;
}

uint32_t kvshard_model_count(const kvshard_model *model, kvshard_layer_kind kind)
{
    return model && (unsigned)kind < KVSHARD__KIND_COUNT ? model->info.count[kind] : 0;
}

int kvshard_model_layer_kind(kvshard_layer_kind *out, const kvshard_model *model, uint32_t layer)
{
    if (!out || !model)
        return KVSHARD_EINVAL;
    if (layer >= model->info.num_layers)
        return KVSHARD_ELAYER;
    *out = (kvshard_layer_kind)model->kinds[layer];
    return KVSHARD_OK;
}

kvshard_state_kind kvshard_model_state_kind(const kvshard_model *model)
{
    return model ? model->info.state.kind : KVSHARD_STATE_NONE;
}

kvshard_dtype kvshard_model_state_dtype(const kvshard_model *model)
{
    return model ? model->info.state.dtype : KVSHARD_DTYPE_AUTO;
}

const char *kvshard_attention_name(kvshard_attention attention)
{
    switch (attention) {
    case KVSHARD_ATTENTION_GQA: return "gqa";
    case KVSHARD_ATTENTION_MLA: return "mla";
    case KVSHARD_ATTENTION_COMPRESSED: return "compressed";
    default: return "unknown";
    }
}

const char *kvshard_model__attention_label(kvshard_attention attention)
{
    switch (attention) {
    case KVSHARD_ATTENTION_MLA: return "MLA";
    case KVSHARD_ATTENTION_COMPRESSED: return "compressed attention";
    case KVSHARD_ATTENTION_GQA:
    default: return "GQA";
    }
}
