/* The toolkit every part of a model config is read with: the known keys and
 * their lookup, a mapping's keys found in one pass, and the checked readers
 * of dimensions and of model_type. It calls no reader of a part. */
#include "model/reader.h"

#include "text/value.h"

#include <stdio.h>
#include <string.h>

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

const char *kvshard_reader__key_name(kvshard__key key)
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

kvshard__key kvshard_reader__key_find(const char *s, size_t len)
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
        MATCH(V_HEAD_DIM);
        MATCH(CHUNK_SIZE);
        MATCH(INDEX_TOPK);
        break;
    case 11:
        MATCH(TEXT_CONFIG);
        MATCH(TORCH_DTYPE);
        MATCH(LAYER_TYPES);
        MATCH(HIDDEN_SIZE);
        MATCH(CONV_KERNEL);
        MATCH(INDEX_KPOOL);
        break;
    case 12:
        MATCH(KV_LORA_RANK);
        MATCH(MAMBA_D_HEAD);
        MATCH(MAMBA_D_CONV);
        MATCH(MAMBA_EXPAND);
        MATCH(CONV_L_CACHE);
        MATCH(SWA_HEAD_DIM);
        MATCH(MB_PER_LAYER);
        break;
    case 13:
        MATCH(INDEX_N_HEADS);
        MATCH(MAMBA_N_HEADS);
        MATCH(N_MAMBA_HEADS);
        MATCH(MAMBA_HEADDIM);
        MATCH(MAMBA_D_STATE);
        MATCH(MAMBA_NGROUPS);
        MATCH(INDEXER_TYPES);
        MATCH(BLOCK_CONFIGS);
        MATCH(VISION_CONFIG);
        break;
    case 14:
        MATCH(ATTN_TYPE_LIST);
        MATCH(FULL_ATTN_IDXS);
        MATCH(SLIDING_WINDOW);
        MATCH(INDEX_HEAD_DIM);
        MATCH(MAMBA_HEAD_DIM);
        MATCH(SSM_STATE_SIZE);
        MATCH(MAMBA_N_GROUPS);
        MATCH(COMPRESS_RATES);
        MATCH(NO_ROPE_LAYERS);
        MATCH(ATTENTION_TYPE);
        MATCH(SWA_V_HEAD_DIM);
        break;
    case 15:
        MATCH(MAMBA_NUM_HEADS);
        MATCH(MAMBA_SSM_DTYPE);
        MATCH(COMPRESS_RATIOS);
        MATCH(GLOBAL_HEAD_DIM);
        MATCH(INDEX_TOPK_FREQ);
        MATCH(MTP_LAYER_TYPES);
        MATCH(LOCAL_LAYER_IDS);
        break;
    case 16:
        MATCH(QK_ROPE_HEAD_DIM);
        MATCH(FULL_ATTN_LAYERS);
        MATCH(LAYER_GROUP_SIZE);
        MATCH(ATTENTION_K_EQ_V);
        MATCH(SPARSE_INDEX_DIM);
        MATCH(MAMBA_CHUNK_SIZE);
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
        MATCH(INDEX_TOPK_PATTERN);
        break;
    case 19:
        MATCH(NUM_ATTENTION_HEADS);
        MATCH(NUM_KEY_VALUE_HEADS);
        MATCH(LINEAR_KEY_HEAD_DIM);
        MATCH(SLIDING_WINDOW_SIZE);
        MATCH(KV_SOURCE_LAYER_IDS);
        MATCH(TIE_WORD_EMBEDDINGS);
        break;
    case 20:
        MATCH(LINEAR_NUM_KEY_HEADS);
        MATCH(HYBRID_LAYER_PATTERN);
        MATCH(ATTENTION_CHUNK_SIZE);
        MATCH(NUM_ATTENTION_GROUPS);
        MATCH(NUM_KV_SHARED_LAYERS);
        MATCH(USE_SPARSE_ATTENTION);
        break;
    case 21:
        MATCH(MTP_NUM_HIDDEN_LAYERS);
        MATCH(LINEAR_VALUE_HEAD_DIM);
        MATCH(MAMBA_SSM_CACHE_DTYPE);
        MATCH(SPARSE_ATTENTION_FREQ);
        MATCH(MTP_LAYERS_BLOCK_TYPE);
        break;
    case 22:
        MATCH(SLIDING_WINDOW_PATTERN);
        MATCH(LINEAR_NUM_VALUE_HEADS);
        MATCH(LINEAR_CONV_KERNEL_DIM);
        MATCH(SHORT_CONV_KERNEL_SIZE);
        MATCH(NO_ROPE_LAYER_INTERVAL);
        MATCH(INDEX_SOURCE_LAYER_IDS);
        MATCH(INDEX_SKIP_TOPK_OFFSET);
        MATCH(CROSS_ATTENTION_LAYERS);
        MATCH(INDEXER_COMPRESS_RATIO);
        break;
    case 23:
        MATCH(HYBRID_OVERRIDE_PATTERN);
        MATCH(FULL_ATTENTION_INTERVAL);
        MATCH(ATTENTION_OTHER_SETTING);
        MATCH(SWA_NUM_KEY_VALUE_HEADS);
        MATCH(SPARSE_ATTENTION_CONFIG);
        MATCH(MAX_POSITION_EMBEDDINGS);
        break;
    case 24: MATCH(NUM_NEXTN_PREDICT_LAYERS); break;
    case 26:
        MATCH(NUM_GLOBAL_KEY_VALUE_HEADS);
        MATCH(SPARSE_DISABLE_INDEX_VALUE);
        break;
    case 27: MATCH(MTP_HYBRID_OVERRIDE_PATTERN); break;
    default: break;
    }
    return KVSHARD__KEY_COUNT;
}

#undef MATCH

/* Past this many keys a mapping is not scanned: a scan costs a little per
 * key, and a lookup in the doc's index about as much as a hundred. */
#define KEY_SCAN_MAX 128u

void kvshard_reader__scan_keys(kvshard__key_table *t, const kvshard__doc *doc,
                               const kvshard__node *map)
{
    t->map = map->id;
    t->complete = map->count <= KEY_SCAN_MAX;
    if (!t->complete)
        return;
    memset(t->at, 0, sizeof t->at);
    kvshard__key_ref keys[KEY_SCAN_MAX];
    uint32_t count = kvshard_tape__map_keys(doc, map, keys, KEY_SCAN_MAX);
    uint8_t n = 0;
    for (uint32_t i = 0; i < count; i++) {
        kvshard__key k = kvshard_reader__key_find(keys[i].text, keys[i].len);
        if (k == KVSHARD__KEY_COUNT)
            continue;
        /* Keys are distinct (the doc rejects duplicates): one slot each. A
         * null value leaves its slot to the next key. */
        if (kvshard_tape__doc_value(&t->values[n], doc, keys[i].value_at))
            t->at[k] = ++n;
    }
}

bool kvshard_reader__get_in_doc(const kvshard__reader *r, const kvshard__node *map,
                                kvshard__key key, kvshard__node *out)
{
    kvshard__node v = {0};
    if (!kvshard_tape__map_get(r->doc, map, KEY_NAMES[key], &v) || kvshard_tape__node_is_null(&v))
        return false;
    *out = v;
    return true;
}

bool kvshard_reader__get_any(const kvshard__reader *r, const kvshard__node *map,
                             const kvshard__key *keys, kvshard__node *out, const char **out_key)
{
    for (const kvshard__key *k = keys; *k != KVSHARD__KEY_COUNT; k++) {
        if (kvshard__get(r, map, *k, out)) {
            *out_key = KEY_NAMES[*k];
            return true;
        }
    }
    return false;
}

int kvshard_reader__missing(const kvshard__reader *r, const kvshard__node *map, kvshard__key key,
                     const char *why)
{
    return kvshard_marks__fail(r->doc, r->err, KVSHARD_EMISSING, map, "missing key \"%s\" (%s)",
                             KEY_NAMES[key], why);
}

int kvshard_reader__read_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *v,
                      const char *key, uint32_t min, uint32_t max)
{
    uint64_t x;
    int rc = kvshard_tape__node_uint(&x, r->doc, v, key, min, max, r->err);
    if (rc == KVSHARD_OK)
        *out = (uint32_t)x;
    return rc;
}

int kvshard_reader__optional_dim(uint32_t *out, bool *found, const kvshard__reader *r,
                        const kvshard__node *map, kvshard__key key, uint32_t min, uint32_t max)
{
    kvshard__node v = {0};
    *found = kvshard__get(r, map, key, &v);
    return *found ? kvshard_reader__read_dim(out, r, &v, KEY_NAMES[key], min, max) : KVSHARD_OK;
}

int kvshard_reader__require_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *map,
                         kvshard__key key, const char *why)
{
    kvshard__node v = {0};
    if (!kvshard__get(r, map, key, &v))
        return kvshard_reader__missing(r, map, key, why);
    return kvshard_reader__read_dim(out, r, &v, KEY_NAMES[key], 1, KVSHARD__MAX_DIMENSION);
}

bool kvshard_model__type_is(const kvshard__reader *r, const char *type, bool prefix)
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
                   : kvshard_text__is(v.text, v.count, type))
            return true;
    }
    return false;
}

void kvshard_reader__set_site(kvshard__reader *r, int site, const char *key, uint32_t value,
                       const kvshard__node *at)
{
    kvshard__key_site *s = &r->model->sites[site];
    s->key = key;
    s->value = value;
    r->site_offsets[site] = at->offset;
}


int kvshard_reader__read_bool(bool *out, const kvshard__reader *r, const kvshard__node *v,
                       const char *key)
{
    int b = v->kind == KVSHARD__NODE_SCALAR ? kvshard_value__bool_text(v->text, v->count, v->style)
                                            : -1;
    if (b < 0) {
        char shown[96];
        kvshard_tape__node_describe(shown, sizeof shown, v);
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ETYPE, v,
                                 "%s: expected true or false, found %s", key, shown);
    }
    *out = b == 1;
    return KVSHARD_OK;
}

int kvshard_reader__read_layer_list(const kvshard__reader *r, const kvshard__node *list,
                                    const char *key, uint32_t L)
{
    int rc = kvshard_tape__node_expect(r->doc, list, KVSHARD__NODE_SEQUENCE, key, r->err);
    if (rc)
        return rc;
    if (list->count != L)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERCOUNT, list,
                                 "%s has %u entries; num_hidden_layers is %u", key, list->count, L);
    return KVSHARD_OK;
}

int kvshard_reader__read_bits(uint8_t *out, const kvshard__reader *r, const kvshard__node *list,
                       const char *key, uint32_t L, const char *meaning)
{
    int rc = kvshard_reader__read_layer_list(r, list, key, L);
    if (rc)
        return rc;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        bool plain = item.kind == KVSHARD__NODE_SCALAR && item.count == 1 &&
                     item.style == KVSHARD__VALUE_PLAIN;
        if (plain && (item.text[0] == '0' || item.text[0] == '1')) {
            out[i] = (uint8_t)(item.text[0] - '0');
            continue;
        }
        /* The entry is named only for its error: the lists are long. */
        char what[96];
        snprintf(what, sizeof what, "%s[%u]", key, i);
        uint64_t x;
        if ((rc = kvshard_tape__node_uint(&x, r->doc, &item, what, 0, UINT64_MAX, r->err)) != 0)
            return rc;
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &item,
                                 "%s: %llu is neither 0 nor 1 (%s)", what, (unsigned long long)x,
                                 meaning);
    }
    return KVSHARD_OK;
}

int kvshard_reader__read_part(kvshard__reader *r, bool decoder_needs, bool drafts_need,
                       int (*part)(kvshard__reader *))
{
    if (decoder_needs)
        return part(r);
    if (!drafts_need)
        return KVSHARD_OK;
    kvshard_model *m = r->model;
    kvshard_error *caller = r->err;
    kvshard_error kept;
    memset(&kept, 0, sizeof kept);
    r->err = &kept;
    int rc = part(r);
    r->err = caller;
    if (rc && m->draft_rc == KVSHARD_OK) {
        /* Say why a model that plans without speculation needs it. */
        size_t len = strlen(kept.message);
        snprintf(kept.message + len, sizeof kept.message - len,
                 "; the draft layers need it when num_speculative_tokens is above 0");
        m->draft_rc = rc;
        m->draft_error = kept;
    }
    return KVSHARD_OK;
}
