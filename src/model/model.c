/* Reading a model config: its keys, attention figures and dtype; the layer
 * kinds and the state are read by kinds.c and state.c. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "model/load.h"
#include "model/reader.h"
#include "text/file.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* ---- reading keys -------------------------------------------------------------- */

static const char *const KEY_NAMES[KVSHARD__KEY_COUNT] = {
#define KEY_NAME(id, name) [KVSHARD__KEY_##id] = name,
    KVSHARD__MODEL_KEYS(KEY_NAME)
#undef KEY_NAME
};

static const uint8_t KEY_LENGTHS[KVSHARD__KEY_COUNT] = {
#define KEY_LENGTH(id, name) [KVSHARD__KEY_##id] = sizeof name - 1,
    KVSHARD__MODEL_KEYS(KEY_LENGTH)
#undef KEY_LENGTH
};

const char *kvshard__key_name(kvshard__key key)
{
    return KEY_NAMES[key];
}

/* Within `case n:` of the switch below: the key `id` when its name is the
 * text. The length test is settled at compile time, and fails safe should a
 * key stand under the wrong length. */
#define MATCH(id)                                                                                  \
    if (KEY_LENGTHS[KVSHARD__KEY_##id] == len &&                                                   \
        memcmp(s, KEY_NAMES[KVSHARD__KEY_##id], len) == 0)                                         \
    return KVSHARD__KEY_##id

kvshard__key kvshard__key_find(const char *s, size_t len)
{
    /* By length, then by text: each of the config's keys costs a jump and a
     * few word compares. */
    switch (len) {
    case 5: MATCH(DTYPE); break;
    case 8:
        MATCH(HEAD_DIM);
        MATCH(N_GROUPS);
        break;
    case 9: MATCH(NUM_HEADS); break;
    case 10:
        MATCH(MODEL_TYPE);
        MATCH(KDA_LAYERS);
        break;
    case 11:
        MATCH(HIDDEN_SIZE);
        MATCH(TEXT_CONFIG);
        MATCH(TORCH_DTYPE);
        MATCH(LAYER_TYPES);
        MATCH(CONV_KERNEL);
        break;
    case 12:
        MATCH(KV_LORA_RANK);
        MATCH(MAMBA_D_HEAD);
        MATCH(MAMBA_D_CONV);
        MATCH(MAMBA_EXPAND);
        MATCH(CONV_L_CACHE);
        break;
    case 13:
        MATCH(INDEX_N_HEADS);
        MATCH(MAMBA_N_HEADS);
        MATCH(N_MAMBA_HEADS);
        MATCH(MAMBA_HEADDIM);
        MATCH(MAMBA_D_STATE);
        MATCH(MAMBA_NGROUPS);
        break;
    case 14:
        MATCH(SLIDING_WINDOW);
        MATCH(ATTN_TYPE_LIST);
        MATCH(FULL_ATTN_IDXS);
        MATCH(INDEX_HEAD_DIM);
        MATCH(MAMBA_HEAD_DIM);
        MATCH(SSM_STATE_SIZE);
        MATCH(MAMBA_N_GROUPS);
        break;
    case 15:
        MATCH(MAMBA_NUM_HEADS);
        MATCH(MAMBA_SSM_DTYPE);
        break;
    case 16:
        MATCH(QK_ROPE_HEAD_DIM);
        MATCH(FULL_ATTN_LAYERS);
        break;
    case 17:
        MATCH(NUM_HIDDEN_LAYERS);
        MATCH(LAYERS_BLOCK_TYPE);
        MATCH(ATTN_LAYER_PERIOD);
        MATCH(ATTN_LAYER_OFFSET);
        break;
    case 18:
        MATCH(LINEAR_ATTN_CONFIG);
        MATCH(ATTN_LAYER_INDICES);
        MATCH(ATTENTION_HEAD_DIM);
        break;
    case 19:
        MATCH(NUM_ATTENTION_HEADS);
        MATCH(NUM_KEY_VALUE_HEADS);
        MATCH(LINEAR_KEY_HEAD_DIM);
        break;
    case 20: MATCH(LINEAR_NUM_KEY_HEADS); break;
    case 21:
        MATCH(MTP_NUM_HIDDEN_LAYERS);
        MATCH(LINEAR_VALUE_HEAD_DIM);
        MATCH(MAMBA_SSM_CACHE_DTYPE);
        break;
    case 22:
        MATCH(SLIDING_WINDOW_PATTERN);
        MATCH(LINEAR_NUM_VALUE_HEADS);
        MATCH(LINEAR_CONV_KERNEL_DIM);
        MATCH(SHORT_CONV_KERNEL_SIZE);
        break;
    case 23:
        MATCH(HYBRID_OVERRIDE_PATTERN);
        MATCH(FULL_ATTENTION_INTERVAL);
        break;
    case 24: MATCH(NUM_NEXTN_PREDICT_LAYERS); break;
    default: break;
    }
    return KVSHARD__KEY_COUNT;
}

#undef MATCH

/* Past this many keys a mapping is not scanned: a scan costs a little per
 * key, and a lookup in the doc's index about as much as a hundred. */
#define KEY_SCAN_MAX 128u

/* Fill `t` with the known keys of `map`, a mapping. */
static void scan_keys(kvshard__key_table *t, const kvshard__doc *doc, const kvshard__node *map)
{
    t->map = map->id;
    t->complete = map->count <= KEY_SCAN_MAX;
    if (!t->complete)
        return;
    memset(t->at, 0, sizeof t->at);
    kvshard__key_ref keys[KEY_SCAN_MAX];
    uint32_t count = kvshard__map_keys(doc, map, keys, KEY_SCAN_MAX);
    uint8_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        kvshard__key k = kvshard__key_find(keys[i].text, keys[i].len);
        if (k == KVSHARD__KEY_COUNT)
            continue;
        /* Keys are distinct (the doc rejects duplicates): one slot each. A
         * null value leaves its slot to the next key. */
        if (kvshard__doc_value(&t->values[n], doc, keys[i].value_at))
            t->at[k] = ++n;
    }
}

bool kvshard__get_in_doc(const kvshard__reader *r, const kvshard__node *map, kvshard__key key,
                         kvshard__node *out)
{
    kvshard__node v = {0};
    if (!kvshard__map_get(r->doc, map, KEY_NAMES[key], &v) || kvshard__node_is_null(&v))
        return false;
    *out = v;
    return true;
}

bool kvshard__get_any(const kvshard__reader *r, const kvshard__node *map, const kvshard__key *keys,
                      kvshard__node *out, const char **out_key)
{
    for (const kvshard__key *k = keys; *k != KVSHARD__KEY_COUNT; k++) {
        if (kvshard__get(r, map, *k, out)) {
            *out_key = KEY_NAMES[*k];
            return true;
        }
    }
    return false;
}

int kvshard__missing(const kvshard__reader *r, const kvshard__node *map, kvshard__key key,
                     const char *why)
{
    return kvshard__doc_fail(r->doc, r->err, KVSHARD_EMISSING, map, "missing key \"%s\" (%s)",
                             KEY_NAMES[key], why);
}

int kvshard__read_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *v,
                      const char *key, uint32_t min, uint32_t max)
{
    uint64_t x;
    int rc = kvshard__node_uint(&x, r->doc, v, key, min, max, r->err);
    if (rc == KVSHARD_OK)
        *out = (uint32_t)x;
    return rc;
}

int kvshard__require_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *map,
                         kvshard__key key, const char *why)
{
    kvshard__node v = {0};
    if (!kvshard__get(r, map, key, &v))
        return kvshard__missing(r, map, key, why);
    return kvshard__read_dim(out, r, &v, KEY_NAMES[key], 1, KVSHARD__MAX_DIMENSION);
}

/* An optional dimension: *found tells whether it was there. */
static int optional_dim(uint32_t *out, bool *found, const kvshard__reader *r,
                        const kvshard__node *map, kvshard__key key, uint32_t min, uint32_t max)
{
    kvshard__node v = {0};
    *found = kvshard__get(r, map, key, &v);
    return *found ? kvshard__read_dim(out, r, &v, KEY_NAMES[key], min, max) : KVSHARD_OK;
}

bool kvshard__model_type_is(const kvshard__reader *r, const char *type, bool prefix)
{
    const kvshard__node *maps[2] = {&r->top, &r->text};
    size_t tlen = strlen(type);
    /* Without a text_config both are the same mapping: one look is enough. */
    int n = r->text.id == r->top.id ? 1 : 2;
    for (int i = 0; i < n; i++) {
        kvshard__node v = {0};
        if (!kvshard__get(r, maps[i], KVSHARD__KEY_MODEL_TYPE, &v) ||
            v.kind != KVSHARD__NODE_SCALAR)
            continue;
        if (prefix ? v.count >= tlen && memcmp(v.text, type, tlen) == 0
                   : kvshard__text_is(v.text, v.count, type))
            return true;
    }
    return false;
}

void kvshard__set_site(kvshard__reader *r, int site, const char *key, uint32_t value,
                       const kvshard__node *at)
{
    kvshard__key_site *s = &r->model->sites[site];
    s->key = key;
    s->value = value;
    r->site_offsets[site] = at->offset;
}

/* ---- attention and dtype ----------------------------------------------------------- */

static int read_model_dtype(kvshard_dtype *out, const kvshard__reader *r)
{
    const kvshard__node *maps[2] = {&r->text, &r->top};
    static const kvshard__key keys[2] = {KVSHARD__KEY_DTYPE, KVSHARD__KEY_TORCH_DTYPE};
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 2; k++) {
            kvshard__node v = {0};
            if (!kvshard__get(r, maps[m], keys[k], &v))
                continue;
            const char *s;
            size_t len;
            const char *name = kvshard__key_name(keys[k]);
            int rc = kvshard__node_string(&s, &len, r->doc, &v, name, r->err);
            if (rc)
                return rc;
            if (kvshard__dtype_from_name(out, s, len))
                return KVSHARD_OK;
            char shown[64];
            kvshard__excerpt(shown, sizeof shown, s, len, 40);
            return kvshard__doc_fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                     "%s: unknown dtype \"%s\" (expected bfloat16, float16, "
                                     "float32 or fp8)",
                                     name, shown);
        }
    }
    *out = KVSHARD_DTYPE_BF16;
    return KVSHARD_OK;
}

int kvshard__read_head_dim(uint32_t *out, const kvshard__reader *r, uint32_t heads, const char *why)
{
    const kvshard__node *t = &r->text;
    kvshard__node v = {0};
    if (kvshard__get(r, t, KVSHARD__KEY_HEAD_DIM, &v))
        return kvshard__read_dim(out, r, &v, "head_dim", 1, KVSHARD__MAX_DIMENSION);
    if (kvshard__get(r, t, KVSHARD__KEY_ATTENTION_HEAD_DIM, &v))
        return kvshard__read_dim(out, r, &v, "attention_head_dim", 1, KVSHARD__MAX_DIMENSION);
    if (heads == 0)
        return kvshard__missing(r, t, KVSHARD__KEY_HEAD_DIM, why);
    uint32_t hidden = 0; /* set when rc is 0; said for -O3, which cannot tell */
    int rc = kvshard__require_dim(&hidden, r, t, KVSHARD__KEY_HIDDEN_SIZE,
                                  "head_dim defaults to hidden_size / num_attention_heads");
    if (rc)
        return rc;
    /* Zamba2's attention reads the hidden state twice as wide. */
    uint64_t width = (uint64_t)hidden * (kvshard__model_type_is(r, "zamba2", false) ? 2 : 1);
    if (width % heads != 0) {
        kvshard__get(r, t, KVSHARD__KEY_HIDDEN_SIZE, &v);
        return kvshard__doc_fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                 "hidden_size %u%s is not divisible by num_attention_heads %u; "
                                 "give head_dim explicitly",
                                 hidden, width != hidden ? " (x2 for zamba2)" : "", heads);
    }
    *out = (uint32_t)(width / heads);
    return KVSHARD_OK;
}

static int read_gqa(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    const kvshard__node *t = &r->text;
    const char *why = "needed for the KV bytes of attention layers";
    uint32_t heads = 0;
    bool has_heads, has_kv;
    int rc = optional_dim(&heads, &has_heads, r, t, KVSHARD__KEY_NUM_ATTENTION_HEADS, 1,
                          KVSHARD__MAX_DIMENSION);
    if (rc == KVSHARD_OK)
        rc = optional_dim(&in->num_kv_heads, &has_kv, r, t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, 1,
                          KVSHARD__MAX_DIMENSION);
    if (rc)
        return rc;
    if (!has_kv && !has_heads)
        return kvshard__missing(r, t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, why);
    kvshard__key kv_key =
        has_kv ? KVSHARD__KEY_NUM_KEY_VALUE_HEADS : KVSHARD__KEY_NUM_ATTENTION_HEADS;
    if (!has_kv)
        in->num_kv_heads = heads;
    kvshard__node v = {0};
    kvshard__get(r, t, kv_key, &v);
    kvshard__set_site(r, KVSHARD__SITE_KV_HEADS, kvshard__key_name(kv_key), in->num_kv_heads, &v);
    return kvshard__read_head_dim(&in->head_dim, r, heads, why);
}

static int read_mla(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    const kvshard__node *t = &r->text;
    kvshard__node v = {0};
    int rc = kvshard__require_dim(&in->qk_rope_head_dim, r, t, KVSHARD__KEY_QK_ROPE_HEAD_DIM,
                                  "MLA caches kv_lora_rank + qk_rope_head_dim per token");
    if (rc)
        return rc;
    if (kvshard__get(r, t, KVSHARD__KEY_INDEX_HEAD_DIM, &v) &&
        kvshard__get(r, t, KVSHARD__KEY_INDEX_N_HEADS, &v)) {
        uint32_t n_heads;
        const char *why = "the DSA indexer caches one key per token";
        if ((rc = kvshard__require_dim(&in->index_head_dim, r, t, KVSHARD__KEY_INDEX_HEAD_DIM,
                                       why)) != 0 ||
            (rc = kvshard__require_dim(&n_heads, r, t, KVSHARD__KEY_INDEX_N_HEADS, why)) != 0)
            return rc;
        in->has_indexer = true;
    }
    return KVSHARD_OK;
}

static int read_model(kvshard__reader *r)
{
    kvshard_model *m = r->model;
    kvshard__model_info *in = &m->info;
    const kvshard__node *t = &r->text;
    int rc;
    if ((rc = read_model_dtype(&in->dtype, r)) != 0 || (rc = kvshard__read_layer_kinds(r)) != 0)
        return rc;
    kvshard__model_count_kinds(m);

    /* Draft layers: the first key present counts. */
    bool found;
    if ((rc = optional_dim(&in->num_draft_layers, &found, r, t,
                           KVSHARD__KEY_NUM_NEXTN_PREDICT_LAYERS, 0, KVSHARD__MAX_DRAFT_LAYERS)) !=
        0)
        return rc;
    if (!found &&
        (rc = optional_dim(&in->num_draft_layers, &found, r, t, KVSHARD__KEY_MTP_NUM_HIDDEN_LAYERS,
                           0, KVSHARD__MAX_DRAFT_LAYERS)) != 0)
        return rc;

    /* kv_lora_rank: a positive integer selects MLA; 0 or null does not. */
    uint32_t lora = 0;
    if ((rc = optional_dim(&lora, &found, r, t, KVSHARD__KEY_KV_LORA_RANK, 0,
                           KVSHARD__MAX_DIMENSION)) != 0)
        return rc;
    bool stores_kv = kvshard__num_kv_layers(in) + in->num_sliding + in->num_draft_layers > 0;
    if (found && lora > 0) {
        in->attention = KVSHARD_ATTENTION_MLA;
        in->kv_lora_rank = lora;
        if (stores_kv && (rc = read_mla(r)) != 0)
            return rc;
    } else if (stores_kv && (rc = read_gqa(r)) != 0) {
        return rc;
    }
    if (in->num_sliding > 0 &&
        (rc = kvshard__require_dim(&in->sliding_window, r, t, KVSHARD__KEY_SLIDING_WINDOW,
                                   "sliding_attention layers keep the last sliding_window "
                                   "tokens")) != 0)
        return rc;
    if (in->num_linear + in->num_hybrid > 0 && (rc = kvshard__read_state(r)) != 0)
        return rc;
    /* Work out where the figures checked at plan time stand, in one pass. */
    size_t offsets[KVSHARD__SITE_COUNT];
    kvshard__mark marks[KVSHARD__SITE_COUNT];
    int used[KVSHARD__SITE_COUNT];
    size_t n = 0;
    for (int s = 0; s < KVSHARD__SITE_COUNT; s++) {
        if (m->sites[s].key) {
            used[n] = s;
            offsets[n++] = r->site_offsets[s];
        }
    }
    kvshard__doc_marks(r->doc, offsets, marks, n);
    for (size_t i = 0; i < n; i++)
        m->sites[used[i]].mark = marks[i];
    return KVSHARD_OK;
}

/* ---- the model object ---------------------------------------------------------------- */

int kvshard__model_new(kvshard_model **out, const kvshard_allocator *alloc, const char *source,
                       const char *model_type, size_t type_len, uint32_t num_layers,
                       kvshard_error *err)
{
    /* One allocation: the model, then its layer kinds, source and type. */
    size_t source_len = strlen(source);
    size_t fixed = sizeof(kvshard_model) + (size_t)num_layers + 2;
    kvshard_model *m = NULL;
    if (source_len <= SIZE_MAX - fixed && type_len <= SIZE_MAX - fixed - source_len)
        m = kvshard__alloc(alloc, 1, fixed + source_len + type_len);
    if (!m)
        return kvshard__fail(err, KVSHARD_ENOMEM, source, kvshard__no_mark, "out of memory");
    memset(m, 0, sizeof *m);
    m->alloc = *alloc;
    m->kinds = (uint8_t *)(m + 1);
    m->source = (char *)m->kinds + num_layers;
    memcpy(m->source, source, source_len + 1);
    m->model_type = m->source + source_len + 1;
    memcpy(m->model_type, model_type, type_len);
    m->model_type[type_len] = '\0';
    m->info.num_layers = num_layers;
    *out = m;
    return KVSHARD_OK;
}

void kvshard__model_count_kinds(kvshard_model *m)
{
    /* A counter per kind in a register: a table of counts in memory would
     * make each layer wait for the last one's store when kinds repeat, as
     * they mostly do. */
    kvshard__model_info *in = &m->info;
    uint32_t full = 0, linear = 0, sliding = 0, hybrid = 0, none = 0;
    for (uint32_t i = 0; i < in->num_layers; i++) {
        uint8_t k = m->kinds[i];
        full += k == KVSHARD_LAYER_FULL_ATTENTION;
        linear += k == KVSHARD_LAYER_LINEAR_ATTENTION;
        sliding += k == KVSHARD_LAYER_SLIDING_ATTENTION;
        hybrid += k == KVSHARD_LAYER_HYBRID;
        none += k == KVSHARD_LAYER_NO_CACHE;
    }
    in->num_full = full;
    in->num_linear = linear;
    in->num_sliding = sliding;
    in->num_hybrid = hybrid;
    in->num_no_cache = none;
}

int kvshard__model_from_node(kvshard_model **out, const kvshard__doc *doc,
                             const kvshard__node *root, const kvshard_allocator *alloc,
                             kvshard_error *err)
{
    if (root->kind != KVSHARD__NODE_MAPPING)
        /* The contents of a file that is not a config are not echoed. */
        return kvshard__doc_fail(doc, err, KVSHARD_ETYPE, root,
                                 "model config: expected a mapping, found %s",
                                 root->kind == KVSHARD__NODE_SEQUENCE ? "a list" : "a scalar");
    kvshard__reader r;
    r.doc = doc;
    r.top = *root;
    r.text = *root;
    r.err = err;
    r.model = NULL;
    memset(r.site_offsets, 0, sizeof r.site_offsets);
    r.text_keys.map = UINT32_MAX;
    scan_keys(&r.top_keys, doc, root);
    kvshard__node tc = {0}, type = {0}, layers = {0};
    int rc;
    if (kvshard__get(&r, root, KVSHARD__KEY_TEXT_CONFIG, &tc)) {
        if ((rc = kvshard__node_expect(doc, &tc, KVSHARD__NODE_MAPPING, "text_config", err)) != 0)
            return rc;
        r.text = tc;
        scan_keys(&r.text_keys, doc, &tc);
    }
    const char *type_text = "";
    size_t type_len = 0;
    if (kvshard__get(&r, root, KVSHARD__KEY_MODEL_TYPE, &type) &&
        (rc = kvshard__node_string(&type_text, &type_len, doc, &type, "model_type", err)) != 0)
        return rc;
    if (!kvshard__get(&r, &r.text, KVSHARD__KEY_NUM_HIDDEN_LAYERS, &layers))
        return kvshard__missing(&r, &r.text, KVSHARD__KEY_NUM_HIDDEN_LAYERS,
                                "the number of decoder layers");
    uint32_t L;
    if ((rc = kvshard__read_dim(&L, &r, &layers, "num_hidden_layers", 1, KVSHARD_MAX_LAYERS)) != 0)
        return rc;
    if ((rc = kvshard__model_new(&r.model, alloc, doc->source, type_text, type_len, L, err)) != 0)
        return rc;
    if ((rc = read_model(&r)) != 0) {
        kvshard_model_free(r.model);
        return rc;
    }
    *out = r.model;
    return KVSHARD_OK;
}

static int load_text(kvshard_model **out, const char *text, size_t len, const char *source,
                     const kvshard_allocator *alloc, kvshard_error *err)
{
    kvshard__doc doc;
    int rc = kvshard__doc_parse(&doc, text, len, source, alloc, err);
    if (rc)
        return rc;
    kvshard__node root = kvshard__doc_root(&doc);
    rc = kvshard__model_from_node(out, &doc, &root, alloc, err);
    kvshard__doc_free(&doc);
    return rc;
}

int kvshard__model_load_path(kvshard_model **out, const char *path, const kvshard_allocator *alloc,
                             kvshard_error *err)
{
    char *file = NULL, *text = NULL;
    size_t len;
    int rc = kvshard__config_path(&file, alloc, path, err);
    if (rc)
        return rc;
    if ((rc = kvshard__read_file(&text, &len, alloc, file, err)) == KVSHARD_OK)
        rc = load_text(out, text, len, file, alloc, err);
    kvshard__free(alloc, text);
    kvshard__free(alloc, file);
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
    return load_text(out, text, len, name ? name : "<string>", &a, err);
}

int kvshard_model_load_file(kvshard_model **out, const char *path,
                            const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard__begin_load(&a, out && path, "out and path", options, err);
    if (rc)
        return rc;
    return kvshard__model_load_path(out, path, &a, err);
}

void kvshard_model_free(kvshard_model *model)
{
    if (!model)
        return;
    kvshard_allocator a = model->alloc;
    kvshard__free(&a, model); /* its kinds, source and type with it */
}

/* ---- queries --------------------------------------------------------------------------- */

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
    const kvshard__model_info *in = &model->info;
    switch (kind) {
    case KVSHARD_LAYER_FULL_ATTENTION: return in->num_full;
    case KVSHARD_LAYER_LINEAR_ATTENTION: return in->num_linear;
    case KVSHARD_LAYER_SLIDING_ATTENTION: return in->num_sliding;
    case KVSHARD_LAYER_HYBRID: return in->num_hybrid;
    case KVSHARD_LAYER_NO_CACHE: return in->num_no_cache;
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

kvshard_state_kind kvshard_model_state_kind(const kvshard_model *model)
{
    return model->info.state.kind;
}

kvshard_dtype kvshard_model_state_dtype(const kvshard_model *model)
{
    return model->info.state.dtype;
}

const char *kvshard_layer_kind_name(kvshard_layer_kind kind)
{
    switch (kind) {
    case KVSHARD_LAYER_FULL_ATTENTION: return "full_attention";
    case KVSHARD_LAYER_LINEAR_ATTENTION: return "linear_attention";
    case KVSHARD_LAYER_SLIDING_ATTENTION: return "sliding_attention";
    case KVSHARD_LAYER_HYBRID: return "hybrid";
    case KVSHARD_LAYER_NO_CACHE: return "no_cache";
    default: return "unknown";
    }
}

const char *kvshard_state_kind_name(kvshard_state_kind kind)
{
    switch (kind) {
    case KVSHARD_STATE_NONE: return "none";
    case KVSHARD_STATE_GDN: return "gdn";
    case KVSHARD_STATE_KDA: return "kda";
    case KVSHARD_STATE_LIGHTNING: return "lightning";
    case KVSHARD_STATE_MAMBA1: return "mamba1";
    case KVSHARD_STATE_MAMBA2: return "mamba2";
    case KVSHARD_STATE_SHORT_CONV: return "short_conv";
    default: return "unknown";
    }
}
