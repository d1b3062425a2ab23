/* The config rules that give every decoder layer its kind. The rules are
 * tried in order, and the first whose keys a config holds decides all the
 * layers; later rules' keys are then not read. A new family is a row here
 * (and a reader below when its keys have a new form), not a branch in the
 * planner. */
#include "model/rules.h"

#include <stdio.h>
#include <string.h>

typedef struct rule rule;
typedef int (*rule_reader)(uint8_t *kinds, kvshard__reader *r, const rule *self,
                           const kvshard__node *v, uint32_t L);

static int from_names(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                      uint32_t);
static int from_pattern(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                        uint32_t);
static int from_attn_type_list(uint8_t *, kvshard__reader *, const rule *,
                               const kvshard__node *, uint32_t);
static int from_kimi(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                     uint32_t);
static int from_period(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                       uint32_t);
static int all_hybrid(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                      uint32_t);
static int from_indices(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                        uint32_t);
static int from_interval(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                         uint32_t);
static int from_sliding_pattern(uint8_t *, kvshard__reader *, const rule *,
                                const kvshard__node *, uint32_t);
static int sliding_by_type(uint8_t *, kvshard__reader *, const rule *,
                           const kvshard__node *, uint32_t);
static int from_ratios(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                       uint32_t);
static int from_hybrid_layer_pattern(uint8_t *, kvshard__reader *, const rule *,
                                     const kvshard__node *, uint32_t);
static int from_group_size(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                           uint32_t);
static int from_chunk_size(uint8_t *, kvshard__reader *, const rule *, const kvshard__node *,
                           uint32_t);

#define NONE KVSHARD__KEY_COUNT

/* A rule applies when the text config holds one of its keys (not null), or
 * when model_type is one of its types and it holds `with`. */
struct rule {
    kvshard__key keys[2];
    const char *const *types;
    kvshard__key with;
    rule_reader read;
    uint32_t every; /* a model type's default period, for sliding_by_type */
};

static const char *const falcon_h1[] = {"falcon_h1", NULL};
static const char *const gemma3[] = {"gemma3", "gemma3_text", NULL};
static const char *const cohere2[] = {"cohere2", NULL};

static const rule rules[] = {
    /* DeepSeek-V4: every layer compressed, each with its ratio. */
    {{KVSHARD__KEY_COMPRESS_RATIOS, NONE}, NULL, NONE, from_ratios, 0},
    /* One name per layer (most families; Zamba2, re-saved Nemotron-H and
     * DeepSeek-V4), perhaps with the draft layers' after them. */
    {{KVSHARD__KEY_LAYER_TYPES, NONE}, NULL, NONE, from_names, 0},
    {{KVSHARD__KEY_LAYERS_BLOCK_TYPE, NONE}, NULL, NONE, from_names, 0},
    /* Nemotron-H: one character per layer. */
    {{KVSHARD__KEY_HYBRID_OVERRIDE_PATTERN, NONE}, NULL, NONE, from_pattern, 0},
    /* MiniMax: 1 full attention, 0 lightning. */
    {{KVSHARD__KEY_ATTN_TYPE_LIST, NONE}, NULL, NONE, from_attn_type_list, 0},
    /* Kimi Linear: 1-based lists of full-attention and KDA layers. */
    {{KVSHARD__KEY_LINEAR_ATTN_CONFIG, NONE}, NULL, NONE, from_kimi, 0},
    /* Jamba: attention where i % period == offset. */
    {{KVSHARD__KEY_ATTN_LAYER_PERIOD, KVSHARD__KEY_ATTN_LAYER_OFFSET}, NULL, NONE, from_period, 0},
    /* Falcon-H1: attention and Mamba2 on every layer. */
    {{NONE, NONE}, falcon_h1, NONE, all_hybrid, 0},
    /* Bamba and LFM2: 0-based indices of the full-attention layers. */
    {{KVSHARD__KEY_ATTN_LAYER_INDICES, NONE}, NULL, NONE, from_indices, 0},
    {{KVSHARD__KEY_FULL_ATTN_IDXS, NONE}, NULL, NONE, from_indices, 0},
    /* Qwen3-Next, Qwen3.5: every n-th layer full attention, the rest linear. */
    {{KVSHARD__KEY_FULL_ATTENTION_INTERVAL, NONE}, NULL, NONE, from_interval, 0},
    /* Gemma 3, Cohere2: every p-th layer full attention, the rest sliding,
     * with the period their model classes apply when the file names none. */
    {{KVSHARD__KEY_SLIDING_WINDOW_PATTERN, NONE}, NULL, NONE, from_sliding_pattern, 0},
    {{NONE, NONE}, gemma3, KVSHARD__KEY_SLIDING_WINDOW, sliding_by_type, 6},
    {{NONE, NONE}, cohere2, KVSHARD__KEY_SLIDING_WINDOW, sliding_by_type, 4},
    /* MiMo-V2: 0 full attention, 1 sliding, per layer. */
    {{KVSHARD__KEY_HYBRID_LAYER_PATTERN, NONE}, NULL, NONE, from_hybrid_layer_pattern, 0},
    /* Ling/Ring linear, Bailing V3: the last layer of every group of g full
     * attention, the rest linear. */
    {{KVSHARD__KEY_LAYER_GROUP_SIZE, NONE}, NULL, NONE, from_group_size, 0},
    /* Llama 4: layers attend within a chunk, but the NoPE layers globally. */
    {{KVSHARD__KEY_ATTENTION_CHUNK_SIZE, NONE}, NULL, NONE, from_chunk_size, 0},
};

#undef NONE

#define COMPRESSED ((uint8_t)KVSHARD_LAYER_COMPRESSED)
#define CHUNKED ((uint8_t)KVSHARD_LAYER_CHUNKED_ATTENTION)
#define FULL ((uint8_t)KVSHARD_LAYER_FULL_ATTENTION)
#define LINEAR ((uint8_t)KVSHARD_LAYER_LINEAR_ATTENTION)
#define SLIDING ((uint8_t)KVSHARD_LAYER_SLIDING_ATTENTION)
#define HYBRID ((uint8_t)KVSHARD_LAYER_HYBRID)
#define NO_CACHE ((uint8_t)KVSHARD_LAYER_NO_CACHE)
#define UNSET UINT8_MAX


static void every_nth(uint8_t *kinds, uint32_t L, uint64_t n, uint8_t every, uint8_t rest);

/* The name of entry `i` of a per-layer list, for an error. */
static void entry_name(char *buf, size_t cap, const char *key, uint32_t i)
{
    snprintf(buf, cap, "%s[%u]", key, i);
}

/* The ratio compress_rates gives a compressed layer_types string: 2, 4 or
 * 128; an error naming compress_rates and the string otherwise. */
static int compress_rate(uint8_t *out, kvshard__reader *r, const kvshard__node *item)
{
    kvshard__node rates = {0}, v = {0};
    char shown[64];
    kvshard_error__excerpt(shown, sizeof shown, item->text, item->count, 40);
    if (!kvshard__get(r, &r->text, KVSHARD__KEY_COMPRESS_RATES, &rates))
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EMISSING, item,
                                 "missing key \"compress_rates\" (layer_types names \"%s\", whose "
                                 "compression ratio compress_rates gives)",
                                 shown);
    int rc =
        kvshard_tape__node_expect(r->doc, &rates, KVSHARD__NODE_MAPPING, "compress_rates", r->err);
    if (rc)
        return rc;
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)item->count, item->text);
    if (!kvshard_tape__map_get(r->doc, &rates, key, &v) || kvshard_tape__node_is_null(&v))
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EMISSING, &rates,
                                 "compress_rates has no entry for \"%s\", which layer_types names",
                                 shown);
    char what[96];
    snprintf(what, sizeof what, "compress_rates.%s", shown);
    uint64_t ratio;
    if ((rc = kvshard_tape__node_uint(&ratio, r->doc, &v, what, 0, UINT64_MAX, r->err)) != 0)
        return rc;
    if (ratio != 2 && ratio != 4 && ratio != 128)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &v,
                                 "%s: %llu is no compression ratio of a compressed layer (expected "
                                 "2, 4 or 128)",
                                 what, (unsigned long long)ratio);
    *out = (uint8_t)ratio;
    return KVSHARD_OK;
}

/* Rule 1: layer_types (or layers_block_type), one name per layer, perhaps
 * followed by one per draft layer (read with the draft layers). When the
 * decoder layers name a compressed kind, the model is compressed: its
 * sliding layers are compressed layers of ratio 0, and no other kind may
 * stand among them. */
static int from_names(uint8_t *kinds, kvshard__reader *r, const rule *self,
                      const kvshard__node *list, uint32_t L)
{
    const char *key = kvshard_reader__key_name(self->keys[0]);
    int rc = kvshard_tape__node_expect(r->doc, list, KVSHARD__NODE_SEQUENCE, key, r->err);
    if (rc)
        return rc;
    uint32_t n_d = r->draft_steps;
    if (list->count != L && (n_d == 0 || list->count != (uint64_t)L + n_d))
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERCOUNT, list,
                                 n_d ? "%s has %u entries; num_hidden_layers is %u and the model "
                                       "has %u draft step%s (%u entries, or %u + %u with the draft "
                                       "layers')"
                                     : "%s has %u entries; num_hidden_layers is %u",
                                 key, list->count, L, n_d, n_d == 1 ? "" : "s", L, L, n_d);
    r->layer_list = *list;
    r->layer_list_drafts = list->count != L;
    uint8_t rates[2] = {0, 0}; /* compressed_sparse_attention's, heavily_compressed_attention's */
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; i < L && kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        if (item.kind != KVSHARD__NODE_SCALAR || kvshard_tape__node_is_null(&item)) {
            /* The position is only worked out for the error. */
            char what[64];
            entry_name(what, sizeof what, key, i);
            const char *str;
            size_t len;
            return kvshard_tape__node_string(&str, &len, r->doc, &item, what, r->err);
        }
        uint8_t kind = kvshard_kinds__from_word(item.text, item.count);
        if (kind == UNSET) {
            char shown[96], words[400];
            kvshard_error__excerpt(shown, sizeof shown, item.text, item.count, 40);
            kvshard_kinds__word_list(words, sizeof words);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s[%u]: unknown layer type \"%s\" (expected %s)", key, i,
                                     shown, words);
        }
        if (kind == COMPRESSED) {
            /* Two strings name compressed layers; each one's ratio is
             * looked up once. The checkpoints carry an indexer on their
             * sparse layers. */
            int word =
                kvshard_text__is(item.text, item.count, "compressed_sparse_attention") ? 0 : 1;
            if (!rates[word] && (rc = compress_rate(&rates[word], r, &item)) != 0)
                return rc;
            kvshard__set_layer_ratio(r->model, i, rates[word]);
            if (word == 0)
                kvshard__add_layer_flags(r->model, i, KVSHARD__LAYER_INDEX_KEY);
            r->compressed = 2;
        }
        kinds[i] = kind;
    }
    if (!r->compressed)
        return KVSHARD_OK;
    it = kvshard_tape__iter_begin(r->doc, list);
    for (uint32_t i = 0; i < L && kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        if (kinds[i] == SLIDING) {
            kinds[i] = COMPRESSED; /* ratio 0: only the window */
        } else if (kinds[i] != COMPRESSED) {
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s[%u]: a %s layer in a compressed model (its layers are "
                                     "sliding_attention, compressed_sparse_attention or "
                                     "heavily_compressed_attention)",
                                     key, i, kvshard_kinds__of(kinds[i])->name);
        }
    }
    return KVSHARD_OK;
}

/* Rule 0: compress_ratios, at least L integers; the first L are the
 * layers' ratios, and the draft layers' follow. */
static int from_ratios(uint8_t *kinds, kvshard__reader *r, const rule *self,
                       const kvshard__node *list, uint32_t L)
{
    (void)self;
    int rc =
        kvshard_tape__node_expect(r->doc, list, KVSHARD__NODE_SEQUENCE, "compress_ratios", r->err);
    if (rc)
        return rc;
    if (list->count < L)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERCOUNT, list,
                                 "compress_ratios has %u entries; num_hidden_layers is %u (one "
                                 "ratio per layer, then the draft layers')",
                                 list->count, L);
    uint64_t read = (uint64_t)L + r->draft_steps;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; i < read && kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        char what[64];
        uint64_t ratio;
        if (kvshard_tape__node_uint(&ratio, r->doc, &item, "compress_ratios", 0, UINT64_MAX,
                                    NULL)) {
            entry_name(what, sizeof what, "compress_ratios", i);
            return kvshard_tape__node_uint(&ratio, r->doc, &item, what, 0, UINT64_MAX, r->err);
        }
        if (ratio != 0 && ratio != 1 && ratio != 2 && ratio != 4 && ratio != 128)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "compress_ratios[%u]: %llu is no compression ratio "
                                     "(expected 0, 1, 2, 4 or 128)",
                                     i, (unsigned long long)ratio);
        if (i < L) {
            kinds[i] = COMPRESSED;
            kvshard__set_layer_ratio(r->model, i, (uint8_t)ratio);
            /* The checkpoints carry an indexer on their ratio-4 layers. */
            if (ratio == 4)
                kvshard__add_layer_flags(r->model, i, KVSHARD__LAYER_INDEX_KEY);
        }
    }
    r->compressed = 1;
    r->ratio_list = *list;
    return KVSHARD_OK;
}

/* Rule 11: MiMo-V2's hybrid_layer_pattern, 0 full attention, 1 sliding. */
static int from_hybrid_layer_pattern(uint8_t *kinds, kvshard__reader *r, const rule *self,
                                     const kvshard__node *list, uint32_t L)
{
    (void)self;
    const char *key = "hybrid_layer_pattern";
    int rc = kvshard_reader__read_layer_list(r, list, key, L);
    if (rc)
        return rc;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        uint64_t v;
        char what[64];
        entry_name(what, sizeof what, key, i);
        if ((rc = kvshard_tape__node_uint(&v, r->doc, &item, what, 0, UINT64_MAX, r->err)) != 0)
            return rc;
        if (v > 1)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s: %llu is no layer type (expected 0 for full attention or "
                                     "1 for sliding window)",
                                     what, (unsigned long long)v);
        kinds[i] = v ? SLIDING : FULL;
    }
    return KVSHARD_OK;
}

/* Rule 12: layer_group_size g: the last layer of each whole group of g,
 * and every layer past the last whole group, full attention. */
static int from_group_size(uint8_t *kinds, kvshard__reader *r, const rule *self,
                           const kvshard__node *v, uint32_t L)
{
    (void)self;
    uint32_t g;
    int rc = kvshard_reader__read_dim(&g, r, v, "layer_group_size", 1, UINT32_MAX);
    if (rc)
        return rc;
    uint64_t whole = (uint64_t)(L / g) * g;
    for (uint32_t i = 0; i < L; i++)
        kinds[i] = ((uint64_t)i + 1) % g == 0 || i >= whole ? FULL : LINEAR;
    return KVSHARD_OK;
}

/* Rule 13: attention_chunk_size. A layer is chunked when no_rope_layers
 * says 1, full attention (a NoPE layer, global) when 0; without the list a
 * Llama 4 model has every k-th layer NoPE (k = no_rope_layer_interval, by
 * default 4), as its config class does. */
static int from_chunk_size(uint8_t *kinds, kvshard__reader *r, const rule *self,
                           const kvshard__node *v, uint32_t L)
{
    (void)self;
    kvshard__model_info *in = &r->model->info;
    int rc = kvshard_reader__read_dim(&in->chunk_size, r, v, "attention_chunk_size", 1, UINT32_MAX);
    if (rc)
        return rc;
    kvshard__node list = {0};
    bool has_list = kvshard__get(r, &r->text, KVSHARD__KEY_NO_ROPE_LAYERS, &list);
    if (has_list && !(list.kind == KVSHARD__NODE_SEQUENCE && list.count == 0)) {
        const char *key = "no_rope_layers";
        if ((rc = kvshard_reader__read_layer_list(r, &list, key, L)) != 0)
            return rc;
        kvshard__iter it = kvshard_tape__iter_begin(r->doc, &list);
        kvshard__node item = {0};
        for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
            uint64_t x;
            char what[64];
            entry_name(what, sizeof what, key, i);
            if ((rc = kvshard_tape__node_uint(&x, r->doc, &item, what, 0, UINT64_MAX, r->err)) != 0)
                return rc;
            if (x > 1)
                return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                         "%s: %llu is neither 1 (a chunked layer) nor 0 (a NoPE "
                                         "layer with global attention)",
                                         what, (unsigned long long)x);
            kinds[i] = x ? CHUNKED : FULL;
        }
        return KVSHARD_OK;
    }
    if (!kvshard_model__type_is(r, "llama4", false) &&
        !kvshard_model__type_is(r, "llama4_text", false))
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EUNMODELED, v,
                                 "attention_chunk_size: kvshard cannot tell which layers are "
                                 "chunked: give no_rope_layers (1 for a chunked layer, 0 for a "
                                 "layer with global attention)");
    uint32_t k = 4;
    kvshard__node interval = {0};
    if (kvshard__get(r, &r->text, KVSHARD__KEY_NO_ROPE_LAYER_INTERVAL, &interval) &&
        (rc = kvshard_reader__read_dim(&k, r, &interval, "no_rope_layer_interval", 1,
                                       UINT32_MAX)) != 0)
        return rc;
    every_nth(kinds, L, k, FULL, CHUNKED);
    return KVSHARD_OK;
}

/* Rule 2: Nemotron-H's hybrid_override_pattern, one character per layer. */
static int from_pattern(uint8_t *kinds, kvshard__reader *r, const rule *self,
                        const kvshard__node *v, uint32_t L)
{
    (void)self;
    const char *s;
    size_t len;
    int rc = kvshard_tape__node_string(&s, &len, r->doc, v, "hybrid_override_pattern", r->err);
    if (rc)
        return rc;
    if (len != L)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERCOUNT, v,
                                 "hybrid_override_pattern has %zu characters; num_hidden_layers "
                                 "is %u",
                                 len, L);
    for (uint32_t i = 0; i < L; i++) {
        switch (s[i]) {
        case '*': kinds[i] = FULL; break;
        case 'M': kinds[i] = LINEAR; break;
        case '-':
        case 'E': kinds[i] = NO_CACHE; break;
        default: {
            /* Point at the character itself when the string is the source text. */
            kvshard__node at = *v;
            const kvshard__doc *d = r->doc;
            if (s >= d->text && s < d->text + d->len)
                at.offset = (uint32_t)(s - d->text) + i;
            char shown[16];
            kvshard_error__excerpt(shown, sizeof shown, s + i, 1, 1);
            return kvshard_marks__fail(d, r->err, KVSHARD_ELAYERTYPE, &at,
                                     "hybrid_override_pattern[%u]: unknown layer character '%s' "
                                     "(expected * for attention, M for Mamba, - or E for an MLP "
                                     "or MoE block)",
                                     i, shown);
        }
        }
    }
    return KVSHARD_OK;
}

/* Rule 3: MiniMax's attn_type_list, 1 for full attention, 0 for lightning. */
static int from_attn_type_list(uint8_t *kinds, kvshard__reader *r, const rule *self,
                               const kvshard__node *list, uint32_t L)
{
    (void)self;
    int rc = kvshard_reader__read_layer_list(r, list, "attn_type_list", L);
    if (rc)
        return rc;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        /* "1" or "0", without a strlen and a memcmp per entry. */
        bool digit = item.kind == KVSHARD__NODE_SCALAR && item.count == 1;
        bool one = digit && item.text[0] == '1', zero = digit && item.text[0] == '0';
        if (!(one || zero) || item.style != KVSHARD__VALUE_PLAIN) {
            char what[48];
            snprintf(what, sizeof what, "attn_type_list[%u]", i);
            uint64_t value;
            if ((rc = kvshard_tape__node_uint(&value, r->doc, &item, what, 0, UINT64_MAX,
                                              r->err)) != 0)
                return rc;
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s: %llu is no layer type (expected 1 for full attention or "
                                     "0 for linear attention)",
                                     what, (unsigned long long)value);
        }
        kinds[i] = one ? FULL : LINEAR;
    }
    return KVSHARD_OK;
}

/* Mark layers listed in `list` as `kind`: numbers from `base` (1 for Kimi's
 * 1-based lists, 0 for index lists), each at most once, none past L. */
static int mark_listed(uint8_t *kinds, const kvshard__reader *r, const kvshard__node *list,
                       const char *key, uint32_t base, uint8_t kind, uint32_t L,
                       const char *other_key)
{
    int rc = kvshard_tape__node_expect(r->doc, list, KVSHARD__NODE_SEQUENCE, key, r->err);
    if (rc)
        return rc;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    const char *dot = strrchr(key, '.');
    const char *list_name = dot ? dot + 1 : key;
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        /* The entry's name ("key[i]") is written only for an error: these
         * lists can be long. */
        char what[96];
        uint64_t n;
        if (kvshard_tape__node_uint(&n, r->doc, &item, key, 0, UINT64_MAX, NULL) != KVSHARD_OK) {
            snprintf(what, sizeof what, "%s[%u]", key, i);
            return kvshard_tape__node_uint(&n, r->doc, &item, what, 0, UINT64_MAX, r->err);
        }
        bool in_range = n >= base && n - base < L;
        uint8_t *slot = in_range ? &kinds[n - base] : NULL;
        if (in_range && *slot == UNSET) {
            *slot = kind;
            continue;
        }
        snprintf(what, sizeof what, "%s[%u]", key, i);
        if (!in_range)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &item,
                                     base ? "%s: layer %llu is out of range; these lists are "
                                            "1-based, from 1 to num_hidden_layers %u"
                                          : "%s: layer index %llu is out of range; indices run "
                                            "from 0 to num_hidden_layers - 1 = %u",
                                     what, (unsigned long long)n, base ? L : L - 1);
        if (*slot == kind)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &item,
                                     "%s: layer %llu is listed twice in %s", what,
                                     (unsigned long long)n, list_name);
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &item,
                                 "%s: layer %llu is in both %s and %s; each layer belongs to "
                                 "exactly one",
                                 what, (unsigned long long)n, other_key, list_name);
    }
    return KVSHARD_OK;
}

/* Rule 4: Kimi's linear_attn_config lists, 1-based, covering every layer. */
static int from_kimi(uint8_t *kinds, kvshard__reader *r, const rule *self,
                     const kvshard__node *cfg, uint32_t L)
{
    (void)self;
    int rc = kvshard_tape__node_expect(r->doc, cfg, KVSHARD__NODE_MAPPING, "linear_attn_config",
                                  r->err);
    if (rc)
        return rc;
    kvshard__node full = {0}, kda = {0};
    bool has_full = kvshard__get(r, cfg, KVSHARD__KEY_FULL_ATTN_LAYERS, &full);
    bool has_kda = kvshard__get(r, cfg, KVSHARD__KEY_KDA_LAYERS, &kda);
    const char *why = "linear_attn_config lists the full-attention and the KDA layers";
    if (!has_full)
        return kvshard_reader__missing(r, cfg, KVSHARD__KEY_FULL_ATTN_LAYERS, why);
    if (!has_kda)
        return kvshard_reader__missing(r, cfg, KVSHARD__KEY_KDA_LAYERS, why);
    memset(kinds, UNSET, L);
    rc = mark_listed(kinds, r, &full, "linear_attn_config.full_attn_layers", 1, FULL, L,
                     "kda_layers");
    if (rc == KVSHARD_OK)
        rc = mark_listed(kinds, r, &kda, "linear_attn_config.kda_layers", 1, LINEAR, L,
                         "full_attn_layers");
    if (rc)
        return rc;
    for (uint32_t i = 0; i < L; i++) {
        if (kinds[i] == UNSET)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, cfg,
                                     "linear_attn_config: layer %u (0-based index %u) is in "
                                     "neither full_attn_layers nor kda_layers",
                                     i + 1, i);
    }
    return KVSHARD_OK;
}

/* Rules 7 and 8: 0-based indices of the full-attention layers; the rest are
 * linear. */
static int from_indices(uint8_t *kinds, kvshard__reader *r, const rule *self,
                        const kvshard__node *list, uint32_t L)
{
    const char *key = kvshard_reader__key_name(self->keys[0]);
    memset(kinds, UNSET, L);
    int rc = mark_listed(kinds, r, list, key, 0, FULL, L, key);
    if (rc)
        return rc;
    for (uint32_t i = 0; i < L; i++) {
        if (kinds[i] == UNSET)
            kinds[i] = LINEAR;
    }
    return KVSHARD_OK;
}

/* Every (i + 1) % n == 0 layer is `every`, the others `rest`. */
static void every_nth(uint8_t *kinds, uint32_t L, uint64_t n, uint8_t every, uint8_t rest)
{
    for (uint32_t i = 0; i < L; i++)
        kinds[i] = ((uint64_t)i + 1) % n == 0 ? every : rest;
}

/* Rule 5: Jamba's attn_layer_period and attn_layer_offset. */
static int from_period(uint8_t *kinds, kvshard__reader *r, const rule *self,
                       const kvshard__node *given, uint32_t L)
{
    (void)self;
    (void)given;
    kvshard__node p = {0}, o = {0};
    bool has_p = kvshard__get(r, &r->text, KVSHARD__KEY_ATTN_LAYER_PERIOD, &p);
    bool has_o = kvshard__get(r, &r->text, KVSHARD__KEY_ATTN_LAYER_OFFSET, &o);
    const char *why = "attn_layer_period and attn_layer_offset place the attention layers "
                      "together";
    if (!has_p)
        return kvshard_reader__missing(r, &r->text, KVSHARD__KEY_ATTN_LAYER_PERIOD, why);
    if (!has_o)
        return kvshard_reader__missing(r, &r->text, KVSHARD__KEY_ATTN_LAYER_OFFSET, why);
    uint32_t period, offset;
    int rc = kvshard_reader__read_dim(&period, r, &p, "attn_layer_period", 1, UINT32_MAX);
    if (rc == KVSHARD_OK)
        rc = kvshard_reader__read_dim(&offset, r, &o, "attn_layer_offset", 0, UINT32_MAX);
    if (rc)
        return rc;
    if (offset >= period)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &o,
                                 "attn_layer_offset %u is not below attn_layer_period %u", offset,
                                 period);
    for (uint32_t i = 0; i < L; i++)
        kinds[i] = i % period == offset ? FULL : LINEAR;
    return KVSHARD_OK;
}

/* Falcon-H1: every layer holds KV and a Mamba2 state. */
static int all_hybrid(uint8_t *kinds, kvshard__reader *r, const rule *self,
                      const kvshard__node *v, uint32_t L)
{
    (void)r;
    (void)self;
    (void)v;
    memset(kinds, HYBRID, L);
    return KVSHARD_OK;
}

/* Layer i full attention iff (i + 1) % n == 0, else linear. */
static int from_interval(uint8_t *kinds, kvshard__reader *r, const rule *self,
                         const kvshard__node *v, uint32_t L)
{
    (void)self;
    uint32_t n;
    int rc = kvshard_reader__read_dim(&n, r, v, "full_attention_interval", 1, UINT32_MAX);
    if (rc == KVSHARD_OK)
        every_nth(kinds, L, n, FULL, LINEAR);
    return rc;
}

/* Layer i full attention iff (i + 1) % p == 0, else sliding. */
static int from_sliding_pattern(uint8_t *kinds, kvshard__reader *r, const rule *self,
                                const kvshard__node *v, uint32_t L)
{
    (void)self;
    uint32_t p;
    int rc = kvshard_reader__read_dim(&p, r, v, "sliding_window_pattern", 1, UINT32_MAX);
    if (rc == KVSHARD_OK)
        every_nth(kinds, L, p, FULL, SLIDING);
    return rc;
}

/* A Gemma 3 or Cohere2 file with sliding_window and neither layer_types nor
 * sliding_window_pattern: the period its model class applies. */
static int sliding_by_type(uint8_t *kinds, kvshard__reader *r, const rule *self,
                           const kvshard__node *v, uint32_t L)
{
    (void)r;
    (void)v;
    every_nth(kinds, L, self->every, FULL, SLIDING);
    return KVSHARD_OK;
}

/* Whether rule `self` applies to the config; the value of the key that made it
 * apply into *v. */
static bool applies(const rule *self, const kvshard__reader *r, kvshard__node *v)
{
    for (int k = 0; k < 2; k++) {
        if (self->keys[k] != KVSHARD__KEY_COUNT && kvshard__get(r, &r->text, self->keys[k], v))
            return true;
    }
    if (!self->types)
        return false;
    if (self->with != KVSHARD__KEY_COUNT && !kvshard__get(r, &r->text, self->with, v))
        return false;
    for (const char *const *t = self->types; *t; t++) {
        if (kvshard_model__type_is(r, *t, false))
            return true;
    }
    return false;
}

/* Shared-KV layers (Gemma 3n, Gemma 4): the last N layers read the cache
 * of the last layer of their kind among the first L - N, and keep none. */
static int shared_layers(kvshard__reader *r, uint32_t L)
{
    kvshard_model *m = r->model;
    kvshard__node v = {0};
    if (!kvshard__get(r, &r->text, KVSHARD__KEY_NUM_KV_SHARED_LAYERS, &v))
        return KVSHARD_OK;
    uint32_t N;
    int rc = kvshard_reader__read_dim(&N, r, &v, "num_kv_shared_layers", 0, UINT32_MAX);
    if (rc || N == 0)
        return rc;
    if (N >= L)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                 "num_kv_shared_layers %u is not below num_hidden_layers %u: some "
                                 "layer must keep the cache the others read",
                                 N, L);
    uint32_t last[KVSHARD__KIND_COUNT];
    for (uint32_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        last[k] = UINT32_MAX;
    for (uint32_t i = 0; i < L - N; i++)
        last[m->kinds[i]] = i;
    m->kv_source = kvshard_alloc__bytes(&m->alloc, L, sizeof *m->kv_source);
    if (!m->kv_source)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ENOMEM, &v, "out of memory");
    for (uint32_t i = 0; i < L; i++)
        m->kv_source[i] = -1;
    for (uint32_t i = L - N; i < L; i++) {
        uint8_t kind = m->kinds[i];
        const char *name = kvshard_kinds__of(kind)->name;
        if (kind != FULL && kind != SLIDING && kind != CHUNKED)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &v,
                                     "num_kv_shared_layers %u: layer %u is a %s layer, which has "
                                     "no KV cache to share",
                                     N, i, name);
        if (last[kind] == UINT32_MAX)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &v,
                                     "num_kv_shared_layers %u: layer %u (%s) has no %s layer "
                                     "before layer %u to read the cache of",
                                     N, i, name, name, L - N);
        m->kinds[i] = KVSHARD_LAYER_SHARED_KV;
        m->kv_source[i] = (int32_t)last[kind];
    }
    return KVSHARD_OK;
}

int kvshard_rules__read_layer_kinds(kvshard__reader *r)
{
    uint8_t *kinds = r->model->kinds;
    uint32_t L = r->model->info.num_layers;
    int rc = KVSHARD_OK;
    size_t i = 0;
    for (; i < sizeof rules / sizeof rules[0]; i++) {
        kvshard__node v = {0};
        if (applies(&rules[i], r, &v)) {
            rc = rules[i].read(kinds, r, &rules[i], &v, L);
            break;
        }
    }
    /* No rule applies: every layer is full attention (dense and MLA models). */
    if (i == sizeof rules / sizeof rules[0])
        memset(kinds, FULL, L);
    return rc ? rc : shared_layers(r, L);
}
