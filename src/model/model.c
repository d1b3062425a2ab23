/* Reading a model config (SPEC §2): layer kinds, attention, dtypes, state. */
#include "model/model.h"

#include "text/file.h"

#include <stdio.h>
#include <string.h>

/* Bound on draft layers; real models have one or a few. */
#define MAX_DRAFT_LAYERS 1024u
/* Bound on any single dimension (heads, head_dim, ranks of latents, ...). */
#define MAX_DIMENSION (1u << 24)

typedef struct reader {
    const kvshard__doc *doc;
    const kvshard__node *top;  /* the whole config */
    const kvshard__node *text; /* text_config, or the top level */
    kvshard_error *err;
} reader;

static int read_dtype(kvshard__dtype *out, const reader *r, const kvshard__node *node,
                      const char *key)
{
    const char *s;
    size_t len;
    int rc = kvshard__node_string(&s, &len, r->doc, node, key, r->err);
    if (rc)
        return rc;
    if (kvshard__dtype_from_name(out, s, len))
        return KVSHARD_OK;
    return kvshard__fail(r->err, KVSHARD_ERANGE, r->doc->source, node->mark,
                         "%s: unknown dtype \"%.*s\" (expected bfloat16, float16, float32 or fp8)",
                         key, (int)(len > 40 ? 40 : len), s);
}

/* A key's value, or NULL when it is absent or null. */
static const kvshard__node *present(const kvshard__node *map, const char *key)
{
    const kvshard__node *v = kvshard__map_get(map, key);
    return kvshard__node_is_null(v) ? NULL : v;
}

static int missing(const reader *r, const kvshard__node *map, const char *key, const char *why)
{
    return kvshard__fail(r->err, KVSHARD_EMISSING, r->doc->source, map->mark,
                         "missing key \"%s\" (%s)", key, why);
}

/* A required positive dimension from `map`; its site is recorded when asked. */
static int require_dim(uint32_t *out, kvshard__key_site *site, const reader *r,
                       const kvshard__node *map, const char *key, const char *why)
{
    const kvshard__node *v = present(map, key);
    if (!v)
        return missing(r, map, key, why);
    uint64_t x;
    int rc = kvshard__node_uint(&x, r->doc, v, key, 1, MAX_DIMENSION, r->err);
    if (rc)
        return rc;
    *out = (uint32_t)x;
    if (site) {
        site->key = key;
        site->mark = v->mark;
    }
    return KVSHARD_OK;
}

/* An optional dimension: *found tells whether it was there. */
static int optional_dim(uint32_t *out, bool *found, const reader *r, const kvshard__node *map,
                        const char *key, uint64_t min, uint64_t max)
{
    const kvshard__node *v = present(map, key);
    *found = v != NULL;
    if (!v)
        return KVSHARD_OK;
    uint64_t x;
    int rc = kvshard__node_uint(&x, r->doc, v, key, min, max, r->err);
    if (rc == KVSHARD_OK)
        *out = (uint32_t)x;
    return rc;
}

/* ---- layer kinds -------------------------------------------------------- */

static int per_layer_list(const reader *r, const kvshard__node *list, const char *key, uint32_t L)
{
    int rc = kvshard__node_expect_sequence(r->doc, list, key, r->err);
    if (rc)
        return rc;
    if (list->count != L)
        return kvshard__fail(r->err, KVSHARD_ELAYERCOUNT, r->doc->source, list->mark,
                             "%s has %zu entries; num_hidden_layers is %u", key, list->count, L);
    return KVSHARD_OK;
}

static int kinds_from_layer_types(uint8_t *kinds, const reader *r, const kvshard__node *list,
                                  uint32_t L)
{
    static const struct {
        const char *name;
        kvshard_layer_kind kind;
    } names[] = {
        {"full_attention", KVSHARD_LAYER_FULL_ATTENTION},
        {"attention", KVSHARD_LAYER_FULL_ATTENTION},
        {"linear_attention", KVSHARD_LAYER_LINEAR_ATTENTION},
        {"mamba", KVSHARD_LAYER_LINEAR_ATTENTION},
        {"sliding_attention", KVSHARD_LAYER_SLIDING_ATTENTION},
    };
    int rc = per_layer_list(r, list, "layer_types", L);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < L; i++) {
        const kvshard__node *item = list->u.items[i];
        char what[48];
        snprintf(what, sizeof what, "layer_types[%u]", i);
        const char *s;
        size_t len;
        if ((rc = kvshard__node_string(&s, &len, r->doc, item, what, r->err)) != 0)
            return rc;
        size_t k = 0;
        while (k < sizeof names / sizeof names[0] &&
               !(strlen(names[k].name) == len && memcmp(names[k].name, s, len) == 0))
            k++;
        if (k == sizeof names / sizeof names[0])
            return kvshard__fail(r->err, KVSHARD_ELAYERTYPE, r->doc->source, item->mark,
                                 "%s: unknown layer type \"%.*s\" (expected full_attention, "
                                 "attention, linear_attention, mamba or sliding_attention)",
                                 what, (int)(len > 40 ? 40 : len), s);
        kinds[i] = (uint8_t)names[k].kind;
    }
    return KVSHARD_OK;
}

static int kinds_from_attn_type_list(uint8_t *kinds, const reader *r, const kvshard__node *list,
                                     uint32_t L)
{
    int rc = per_layer_list(r, list, "attn_type_list", L);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < L; i++) {
        const kvshard__node *item = list->u.items[i];
        char what[48];
        snprintf(what, sizeof what, "attn_type_list[%u]", i);
        uint64_t v;
        if ((rc = kvshard__node_uint(&v, r->doc, item, what, 0, UINT64_MAX, r->err)) != 0)
            return rc;
        if (v > 1)
            return kvshard__fail(
                r->err, KVSHARD_ELAYERTYPE, r->doc->source, item->mark,
                "%s: %llu is no layer type (expected 1 for full attention or 0 for "
                "linear attention)",
                what, (unsigned long long)v);
        kinds[i] =
            (uint8_t)(v == 1 ? KVSHARD_LAYER_FULL_ATTENTION : KVSHARD_LAYER_LINEAR_ATTENTION);
    }
    return KVSHARD_OK;
}

/* Kimi: 1-based layer numbers in two lists that must cover every layer once. */
static int mark_kimi_list(uint8_t *kinds, const reader *r, const kvshard__node *cfg,
                          const char *key, kvshard_layer_kind kind, uint32_t L)
{
    const kvshard__node *list = kvshard__map_get(cfg, key);
    int rc = kvshard__node_expect_sequence(r->doc, list, key, r->err);
    if (rc)
        return rc;
    for (size_t i = 0; i < list->count; i++) {
        const kvshard__node *item = list->u.items[i];
        char what[64];
        snprintf(what, sizeof what, "linear_attn_config.%s[%zu]", key, i);
        uint64_t n;
        if ((rc = kvshard__node_uint(&n, r->doc, item, what, 0, UINT64_MAX, r->err)) != 0)
            return rc;
        if (n < 1 || n > L)
            return kvshard__fail(
                r->err, KVSHARD_ELAYERLIST, r->doc->source, item->mark,
                "%s: layer %llu is out of range; these lists are 1-based, from 1 to "
                "num_hidden_layers %u",
                what, (unsigned long long)n, L);
        uint8_t *slot = &kinds[n - 1];
        if (*slot == kind)
            return kvshard__fail(r->err, KVSHARD_ELAYERLIST, r->doc->source, item->mark,
                                 "%s: layer %llu is listed twice in %s", what,
                                 (unsigned long long)n, key);
        if (*slot != UINT8_MAX)
            return kvshard__fail(r->err, KVSHARD_ELAYERLIST, r->doc->source, item->mark,
                                 "%s: layer %llu is in both full_attn_layers and kda_layers; each "
                                 "layer belongs to exactly one",
                                 what, (unsigned long long)n);
        *slot = (uint8_t)kind;
    }
    return KVSHARD_OK;
}

static int kinds_from_kimi(uint8_t *kinds, const reader *r, const kvshard__node *cfg, uint32_t L)
{
    memset(kinds, UINT8_MAX, L);
    int rc = mark_kimi_list(kinds, r, cfg, "full_attn_layers", KVSHARD_LAYER_FULL_ATTENTION, L);
    if (rc == KVSHARD_OK)
        rc = mark_kimi_list(kinds, r, cfg, "kda_layers", KVSHARD_LAYER_LINEAR_ATTENTION, L);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < L; i++) {
        if (kinds[i] == UINT8_MAX)
            return kvshard__fail(r->err, KVSHARD_ELAYERLIST, r->doc->source, cfg->mark,
                                 "linear_attn_config: layer %u (0-based index %u) is in neither "
                                 "full_attn_layers nor kda_layers",
                                 i + 1, i);
    }
    return KVSHARD_OK;
}

static int read_layer_kinds(uint8_t *kinds, const reader *r, uint32_t L)
{
    const kvshard__node *t = r->text;
    const kvshard__node *v;
    const kvshard__node *kimi = present(t, "linear_attn_config");
    if (kimi) {
        int rc = kvshard__node_expect_mapping(r->doc, kimi, "linear_attn_config", r->err);
        if (rc)
            return rc;
    }
    if ((v = present(t, "layer_types")) != NULL)
        return kinds_from_layer_types(kinds, r, v, L);
    if ((v = present(t, "attn_type_list")) != NULL)
        return kinds_from_attn_type_list(kinds, r, v, L);
    if (kimi) {
        bool has_full = kvshard__map_get(kimi, "full_attn_layers") != NULL;
        bool has_kda = kvshard__map_get(kimi, "kda_layers") != NULL;
        if (has_full && has_kda)
            return kinds_from_kimi(kinds, r, kimi, L);
        if (has_full || has_kda)
            return missing(r, kimi, has_full ? "kda_layers" : "full_attn_layers",
                           "linear_attn_config lists full-attention and KDA layers together");
    }
    if ((v = present(t, "full_attention_interval")) != NULL) {
        uint64_t n;
        int rc =
            kvshard__node_uint(&n, r->doc, v, "full_attention_interval", 1, UINT32_MAX, r->err);
        if (rc)
            return rc;
        for (uint32_t i = 0; i < L; i++)
            kinds[i] = (uint8_t)(((uint64_t)i + 1) % n == 0 ? KVSHARD_LAYER_FULL_ATTENTION
                                                            : KVSHARD_LAYER_LINEAR_ATTENTION);
        return KVSHARD_OK;
    }
    memset(kinds, KVSHARD_LAYER_FULL_ATTENTION, L);
    return KVSHARD_OK;
}

/* The kind of linear attention follows the keys that describe its state,
 * whichever rule gave the layer kinds: MiniMax files may carry layer_types. */
static kvshard__linear_flavour linear_flavour(const reader *r)
{
    const kvshard__node *t = r->text;
    if (present(t, "linear_attn_config"))
        return KVSHARD__LINEAR_KDA;
    if (present(t, "linear_num_key_heads") || present(t, "linear_num_value_heads") ||
        present(t, "linear_key_head_dim") || present(t, "linear_value_head_dim"))
        return KVSHARD__LINEAR_GDN;
    const kvshard__node *type = present(r->top, "model_type");
    if (present(t, "attn_type_list") ||
        (type && type->kind == KVSHARD__NODE_SCALAR && type->count >= 7 &&
         memcmp(type->u.text, "minimax", 7) == 0))
        return KVSHARD__LINEAR_LIGHTNING;
    return KVSHARD__LINEAR_GDN;
}

/* ---- dimensions --------------------------------------------------------- */

static int read_gqa(kvshard_model *m, const reader *r)
{
    kvshard__model_info *in = &m->info;
    const kvshard__node *t = r->text;
    uint32_t heads = 0;
    bool has_heads, has_kv, has_head_dim;
    int rc = optional_dim(&heads, &has_heads, r, t, "num_attention_heads", 1, MAX_DIMENSION);
    if (rc == KVSHARD_OK)
        rc =
            optional_dim(&in->num_kv_heads, &has_kv, r, t, "num_key_value_heads", 1, MAX_DIMENSION);
    if (rc == KVSHARD_OK)
        rc = optional_dim(&in->head_dim, &has_head_dim, r, t, "head_dim", 1, MAX_DIMENSION);
    if (rc)
        return rc;
    const char *why = "needed for the KV bytes of attention layers";
    if (!has_kv && !has_heads)
        return missing(r, t, "num_key_value_heads", why);
    const char *kv_key = has_kv ? "num_key_value_heads" : "num_attention_heads";
    m->kv_heads_site.key = kv_key;
    m->kv_heads_site.mark = present(t, kv_key)->mark;
    if (!has_kv)
        in->num_kv_heads = heads;
    if (!has_head_dim) {
        if (!has_heads)
            return missing(r, t, "head_dim", why);
        uint32_t hidden;
        if ((rc = require_dim(&hidden, NULL, r, t, "hidden_size",
                              "head_dim defaults to hidden_size / num_attention_heads")) != 0)
            return rc;
        if (hidden % heads != 0)
            return kvshard__fail(r->err, KVSHARD_ERANGE, r->doc->source,
                                 present(t, "hidden_size")->mark,
                                 "hidden_size %u is not divisible by num_attention_heads %u; give "
                                 "head_dim explicitly",
                                 hidden, heads);
        in->head_dim = hidden / heads;
    }
    return KVSHARD_OK;
}

static int read_mla(kvshard_model *m, const reader *r)
{
    kvshard__model_info *in = &m->info;
    const kvshard__node *t = r->text;
    int rc = require_dim(&in->qk_rope_head_dim, NULL, r, t, "qk_rope_head_dim",
                         "MLA caches kv_lora_rank + qk_rope_head_dim per token");
    if (rc)
        return rc;
    if (present(t, "index_head_dim") && present(t, "index_n_heads")) {
        uint32_t n_heads;
        if ((rc = require_dim(&in->index_head_dim, NULL, r, t, "index_head_dim", "")) != 0 ||
            (rc = require_dim(&n_heads, NULL, r, t, "index_n_heads", "")) != 0)
            return rc;
        in->has_indexer = true;
    }
    return KVSHARD_OK;
}

static int read_linear_state(kvshard_model *m, const reader *r)
{
    kvshard__model_info *in = &m->info;
    const kvshard__node *t = r->text;
    int rc;
    in->ssm_dtype = KVSHARD__DTYPE_FP32;
    switch (in->linear) {
    case KVSHARD__LINEAR_KDA: {
        const kvshard__node *cfg = present(t, "linear_attn_config");
        const char *why = "Kimi Delta Attention state";
        if ((rc = require_dim(&in->linear_value_heads, &m->linear_value_heads_site, r, cfg,
                              "num_heads", why)) != 0 ||
            (rc = require_dim(&in->linear_key_dim, NULL, r, cfg, "head_dim", why)) != 0 ||
            (rc = require_dim(&in->linear_conv_kernel, NULL, r, cfg, "short_conv_kernel_size",
                              why)) != 0)
            return rc;
        return KVSHARD_OK;
    }
    case KVSHARD__LINEAR_LIGHTNING: {
        const char *why = "lightning attention state";
        if ((rc = require_dim(&in->linear_value_heads, &m->linear_value_heads_site, r, t,
                              "num_attention_heads", why)) != 0 ||
            (rc = require_dim(&in->linear_key_dim, NULL, r, t, "head_dim", why)) != 0)
            return rc;
        return KVSHARD_OK;
    }
    case KVSHARD__LINEAR_GDN:
    default: {
        const char *why = "Gated DeltaNet state";
        const kvshard__node *v;
        if ((rc = require_dim(&in->linear_key_heads, &m->linear_key_heads_site, r, t,
                              "linear_num_key_heads", why)) != 0 ||
            (rc = require_dim(&in->linear_value_heads, &m->linear_value_heads_site, r, t,
                              "linear_num_value_heads", why)) != 0 ||
            (rc = require_dim(&in->linear_key_dim, NULL, r, t, "linear_key_head_dim", why)) != 0 ||
            (rc = require_dim(&in->linear_value_dim, NULL, r, t, "linear_value_head_dim", why)) !=
                0 ||
            (rc = require_dim(&in->linear_conv_kernel, NULL, r, t, "linear_conv_kernel_dim",
                              why)) != 0)
            return rc;
        if ((v = present(t, "mamba_ssm_dtype")) != NULL)
            return read_dtype(&in->ssm_dtype, r, v, "mamba_ssm_dtype");
        return KVSHARD_OK;
    }
    }
}

static int read_model_dtype(kvshard__dtype *out, const reader *r)
{
    const kvshard__node *maps[2] = {r->text, r->top};
    static const char *const keys[2] = {"dtype", "torch_dtype"};
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 2; k++) {
            const kvshard__node *v = present(maps[m], keys[k]);
            if (v)
                return read_dtype(out, r, v, keys[k]);
        }
    }
    *out = KVSHARD__DTYPE_BF16;
    return KVSHARD_OK;
}

static int read_model(kvshard_model *m, const reader *r)
{
    kvshard__model_info *in = &m->info;
    const kvshard__node *t = r->text;
    uint64_t L;
    const kvshard__node *v = present(t, "num_hidden_layers");
    if (!v)
        return missing(r, t, "num_hidden_layers", "the number of decoder layers");
    int rc = kvshard__node_uint(&L, r->doc, v, "num_hidden_layers", 1, KVSHARD_MAX_LAYERS, r->err);
    if (rc)
        return rc;
    in->num_layers = (uint32_t)L;
    if ((rc = read_model_dtype(&in->dtype, r)) != 0)
        return rc;

    m->kinds = kvshard__alloc(&m->alloc, L, 1);
    if (!m->kinds)
        return kvshard__fail(r->err, KVSHARD_ENOMEM, r->doc->source, v->mark, "out of memory");
    if ((rc = read_layer_kinds(m->kinds, r, in->num_layers)) != 0)
        return rc;
    for (uint32_t i = 0; i < in->num_layers; i++) {
        switch (m->kinds[i]) {
        case KVSHARD_LAYER_FULL_ATTENTION: in->num_full++; break;
        case KVSHARD_LAYER_LINEAR_ATTENTION: in->num_linear++; break;
        default: in->num_sliding++; break;
        }
    }
    in->linear = in->num_linear > 0 ? linear_flavour(r) : KVSHARD__LINEAR_NONE;

    /* Draft layers: the first key present counts. */
    bool found;
    if ((rc = optional_dim(&in->num_draft_layers, &found, r, t, "num_nextn_predict_layers", 0,
                           MAX_DRAFT_LAYERS)) != 0)
        return rc;
    if (!found && (rc = optional_dim(&in->num_draft_layers, &found, r, t, "mtp_num_hidden_layers",
                                     0, MAX_DRAFT_LAYERS)) != 0)
        return rc;

    /* kv_lora_rank: a positive integer selects MLA; 0 or null does not. */
    uint32_t lora = 0;
    if ((rc = optional_dim(&lora, &found, r, t, "kv_lora_rank", 0, MAX_DIMENSION)) != 0)
        return rc;
    bool has_kv_layers = in->num_full + in->num_sliding + in->num_draft_layers > 0;
    if (found && lora > 0) {
        in->attention = KVSHARD_ATTENTION_MLA;
        in->kv_lora_rank = lora;
        if (has_kv_layers && (rc = read_mla(m, r)) != 0)
            return rc;
    } else if (has_kv_layers && (rc = read_gqa(m, r)) != 0) {
        return rc;
    }
    if (in->num_sliding > 0 &&
        (rc = require_dim(&in->sliding_window, NULL, r, t, "sliding_window",
                          "sliding_attention layers keep the last sliding_window tokens")) != 0)
        return rc;
    if (in->num_linear > 0 && (rc = read_linear_state(m, r)) != 0)
        return rc;
    return KVSHARD_OK;
}

int kvshard__model_from_node(kvshard_model **out, const kvshard__doc *doc,
                             const kvshard__node *root, const kvshard_allocator *alloc,
                             kvshard_error *err)
{
    int rc = kvshard__node_expect_mapping(doc, root, "model config", err);
    if (rc)
        return rc;
    reader r = {doc, root, root, err};
    const kvshard__node *tc = present(root, "text_config");
    if (tc) {
        if ((rc = kvshard__node_expect_mapping(doc, tc, "text_config", err)) != 0)
            return rc;
        r.text = tc;
    }
    const kvshard__node *type = present(root, "model_type");
    const char *type_text = "";
    size_t type_len = 0;
    if (type &&
        (rc = kvshard__node_string(&type_text, &type_len, doc, type, "model_type", err)) != 0)
        return rc;

    kvshard_model *m = kvshard__calloc(alloc, 1, sizeof *m);
    if (!m)
        return kvshard__fail(err, KVSHARD_ENOMEM, doc->source, kvshard__no_mark, "out of memory");
    m->alloc = *alloc;
    m->source = kvshard__strdup(alloc, doc->source);
    m->model_type = kvshard__strndup(alloc, type_text, type_len);
    if (!m->source || !m->model_type)
        rc = kvshard__fail(err, KVSHARD_ENOMEM, doc->source, kvshard__no_mark, "out of memory");
    if (rc == KVSHARD_OK)
        rc = read_model(m, &r);
    if (rc) {
        kvshard_model_free(m);
        return rc;
    }
    *out = m;
    return KVSHARD_OK;
}

int kvshard__model_load_text(kvshard_model **out, const char *text, size_t len, const char *source,
                             const kvshard_allocator *alloc, kvshard_error *err)
{
    kvshard__doc doc;
    int rc = kvshard__doc_parse(&doc, text, len, source, alloc, err);
    if (rc)
        return rc;
    rc = kvshard__model_from_node(out, &doc, doc.root, alloc, err);
    kvshard__doc_free(&doc);
    return rc;
}

int kvshard__begin_load(kvshard_allocator *alloc, bool args_ok, const char *args,
                        const kvshard_load_options *options, kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!args_ok)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark, "%s must not be NULL",
                             args);
    if (options && options->size != sizeof *options)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_load_options.size is %zu; this library's is %zu: start from "
                             "KVSHARD_LOAD_OPTIONS_INIT",
                             options->size, sizeof *options);
    if (options && !kvshard__allocator_valid(options->allocator))
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_allocator: malloc_fn and free_fn must both be set");
    *alloc = kvshard__allocator_or_default(options ? options->allocator : NULL);
    return KVSHARD_OK;
}

int kvshard_model_load_string(kvshard_model **out, const char *text, size_t len, const char *name,
                              const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard__begin_load(&a, out && text, "out and text", options, err);
    if (rc)
        return rc;
    return kvshard__model_load_text(out, text, len, name ? name : "<string>", &a, err);
}

int kvshard_model_load_file(kvshard_model **out, const char *path,
                            const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard__begin_load(&a, out && path, "out and path", options, err);
    if (rc)
        return rc;
    char *text;
    size_t len;
    if ((rc = kvshard__read_file(&text, &len, &a, path, err)) != 0)
        return rc;
    rc = kvshard__model_load_text(out, text, len, path, &a, err);
    kvshard__free(&a, text);
    return rc;
}

void kvshard_model_free(kvshard_model *model)
{
    if (!model)
        return;
    kvshard_allocator a = model->alloc;
    kvshard__free(&a, model->source);
    kvshard__free(&a, model->model_type);
    kvshard__free(&a, model->kinds);
    kvshard__free(&a, model);
}

const char *kvshard_model_type(const kvshard_model *model)
{
    return model->model_type;
}

uint32_t kvshard_model_num_layers(const kvshard_model *model)
{
    return model->info.num_layers;
}

uint32_t kvshard_model_num_draft_layers(const kvshard_model *model)
{
    return model->info.num_draft_layers;
}

kvshard_attention kvshard_model_attention(const kvshard_model *model)
{
    return model->info.attention;
}

uint32_t kvshard_model_count(const kvshard_model *model, kvshard_layer_kind kind)
{
    switch (kind) {
    case KVSHARD_LAYER_FULL_ATTENTION: return model->info.num_full;
    case KVSHARD_LAYER_LINEAR_ATTENTION: return model->info.num_linear;
    case KVSHARD_LAYER_SLIDING_ATTENTION: return model->info.num_sliding;
    default: return 0;
    }
}

int kvshard_model_layer_kind(kvshard_layer_kind *out, const kvshard_model *model, uint32_t layer)
{
    if (layer >= model->info.num_layers)
        return KVSHARD_ELAYER;
    *out = (kvshard_layer_kind)model->kinds[layer];
    return KVSHARD_OK;
}

const char *kvshard_layer_kind_name(kvshard_layer_kind kind)
{
    switch (kind) {
    case KVSHARD_LAYER_FULL_ATTENTION: return "full_attention";
    case KVSHARD_LAYER_LINEAR_ATTENTION: return "linear_attention";
    case KVSHARD_LAYER_SLIDING_ATTENTION: return "sliding_attention";
    default: return "unknown";
    }
}
