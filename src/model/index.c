/* What layers keep beside their KV, per layer: the indexer keys of a DSA
 * model (indexer_types, index_topk_pattern, or the every-f-th schedule),
 * the sparse index keys of a GQA model (sparse_attention_config), and, in
 * a compressed model, which layers keep their own compressed stream and
 * index keys and which read another layer's (kv_source_layer_ids). */
#include "model/index.h"

#include <stdio.h>
#include <string.h>

#define FULL ((uint8_t)KVSHARD_LAYER_FULL_ATTENTION)
#define HYBRID ((uint8_t)KVSHARD_LAYER_HYBRID)

/* ---- DSA: which full-attention layers keep an indexer key ---------------------------- */

/* A `shared` entry reuses the top-k of the full layer before it, so one must
 * come first. */
static int no_full_before(const kvshard__reader *r, const kvshard__node *at, const char *key,
                          uint32_t i, const char *entry)
{
    return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, at,
                             "%s[%u]: layer %u is \"%s\" but no layer before it keeps the indexer "
                             "key it would reuse",
                             key, i, i, entry);
}

/* indexer_types: "full" keeps a key, "shared" reuses the previous one's. */
static int dsa_from_types(kvshard__reader *r, const kvshard__node *list, uint32_t L)
{
    const char *key = "indexer_types";
    int rc = kvshard_reader__read_layer_list(r, list, key, L);
    if (rc)
        return rc;
    kvshard_model *m = r->model;
    bool seen = false;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        if (m->kinds[i] != FULL)
            continue; /* read only for full-attention layers */
        bool scalar = item.kind == KVSHARD__NODE_SCALAR;
        bool full = scalar && kvshard_text__is(item.text, item.count, "full");
        bool shared = scalar && kvshard_text__is(item.text, item.count, "shared");
        if (!full && !shared) {
            char shown[96];
            kvshard_tape__node_describe(shown, sizeof shown, &item);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s[%u]: %s is neither \"full\" (the layer keeps an indexer "
                                     "key) nor \"shared\" (it reuses the previous one's)",
                                     key, i, shown);
        }
        if (shared && !seen)
            return no_full_before(r, &item, key, i, "shared");
        seen |= full;
        if (full)
            kvshard__add_layer_flags(m, i, KVSHARD__LAYER_INDEX_KEY);
    }
    return KVSHARD_OK;
}

/* index_topk_pattern: one character per layer, F keeps a key, S does not. */
static int dsa_from_pattern(kvshard__reader *r, const kvshard__node *v, uint32_t L)
{
    const char *key = "index_topk_pattern", *s;
    size_t len;
    int rc = kvshard_tape__node_string(&s, &len, r->doc, v, key, r->err);
    if (rc)
        return rc;
    if (len != L)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERCOUNT, v,
                                 "%s has %zu characters; num_hidden_layers is %u", key, len, L);
    kvshard_model *m = r->model;
    bool seen = false;
    for (uint32_t i = 0; i < L; i++) {
        if (m->kinds[i] != FULL)
            continue;
        if (s[i] != 'F' && s[i] != 'S') {
            char shown[16];
            kvshard_error__excerpt(shown, sizeof shown, s + i, 1, 1);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, v,
                                     "%s[%u]: '%s' is neither F (the layer keeps an indexer key) "
                                     "nor S (it reuses the previous one's)",
                                     key, i, shown);
        }
        if (s[i] == 'S' && !seen)
            return no_full_before(r, v, key, i, "S");
        seen |= s[i] == 'F';
        if (s[i] == 'F')
            kvshard__add_layer_flags(m, i, KVSHARD__LAYER_INDEX_KEY);
    }
    return KVSHARD_OK;
}

/* index_topk_freq f (default 1) and index_skip_topk_offset o (default 2):
 * layer i keeps a key iff max(i - o + 1, 0) % f == 0; the defaults give
 * every layer one. */
static int dsa_from_schedule(kvshard__reader *r, uint32_t L)
{
    uint32_t f = 1, o = 2;
    bool found;
    int rc = kvshard_reader__optional_dim(&f, &found, r, &r->text, KVSHARD__KEY_INDEX_TOPK_FREQ, 1,
                                   UINT32_MAX);
    if (rc == KVSHARD_OK)
        rc = kvshard_reader__optional_dim(&o, &found, r, &r->text,
                                          KVSHARD__KEY_INDEX_SKIP_TOPK_OFFSET, 0, UINT32_MAX);
    if (rc)
        return rc;
    kvshard_model *m = r->model;
    for (uint32_t i = 0; i < L; i++) {
        uint64_t from = (uint64_t)i + 1 > o ? (uint64_t)i + 1 - o : 0;
        if (m->kinds[i] == FULL && from % f == 0)
            kvshard__add_layer_flags(m, i, KVSHARD__LAYER_INDEX_KEY);
    }
    return KVSHARD_OK;
}

static int read_dsa(kvshard__reader *r, uint32_t L)
{
    kvshard__node v = {0};
    if (kvshard__get(r, &r->text, KVSHARD__KEY_INDEXER_TYPES, &v))
        return dsa_from_types(r, &v, L);
    if (kvshard__get(r, &r->text, KVSHARD__KEY_INDEX_TOPK_PATTERN, &v))
        return dsa_from_pattern(r, &v, L);
    return dsa_from_schedule(r, L);
}

/* ---- a GQA model's sparse index keys ----------------------------------------------- */

/* A per-layer 0/1 list of sparse_attention_config into out, or `fallback`
 * for every layer when the list is absent. */
static int sparse_list(uint8_t *out, kvshard__reader *r, const kvshard__node *cfg, kvshard__key key,
                       uint32_t L, uint8_t fallback, const char *meaning)
{
    kvshard__node list = {0};
    if (!kvshard__get(r, cfg, key, &list)) {
        memset(out, fallback, L);
        return KVSHARD_OK;
    }
    char name[80];
    snprintf(name, sizeof name, "sparse_attention_config.%s", kvshard_reader__key_name(key));
    return kvshard_reader__read_bits(out, r, &list, name, L, meaning);
}

static int read_sparse(kvshard__reader *r, const kvshard__node *cfg, uint32_t L)
{
    int rc = kvshard_tape__node_expect(r->doc, cfg, KVSHARD__NODE_MAPPING,
                                       "sparse_attention_config", r->err);
    if (rc)
        return rc;
    kvshard_model *m = r->model;
    kvshard__model_info *in = &m->info;
    kvshard__node v = {0};
    bool use = true;
    if (kvshard__get(r, cfg, KVSHARD__KEY_USE_SPARSE_ATTENTION, &v) &&
        (rc = kvshard_reader__read_bool(&use, r, &v,
                                        "sparse_attention_config.use_sparse_attention")) != 0)
        return rc;
    if (!use)
        return KVSHARD_OK;
    if (in->attention != KVSHARD_ATTENTION_GQA)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EUNMODELED, cfg,
                                 "sparse_attention_config: kvshard models a sparse index beside "
                                 "GQA attention only, and this model's attention is %s",
                                 kvshard_attention_name(in->attention));
    if (!kvshard__get(r, cfg, KVSHARD__KEY_SPARSE_INDEX_DIM, &v))
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EMISSING, cfg,
                                 "missing key \"sparse_attention_config.sparse_index_dim\" (the "
                                 "elements of one sparse index key)");
    if ((rc = kvshard_reader__read_dim(&in->sparse_index_dim, r, &v,
                                "sparse_attention_config.sparse_index_dim", 1,
                                KVSHARD__MAX_DIMENSION)) != 0)
        return rc;
    uint8_t *lists = kvshard_alloc__bytes(&m->alloc, 2, L);
    if (!lists)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ENOMEM, cfg, "out of memory");
    uint8_t *on = lists, *k_only = lists + L;
    rc = sparse_list(on, r, cfg, KVSHARD__KEY_SPARSE_ATTENTION_FREQ, L, 1,
                     "1: the layer keeps a sparse index key, 0: none");
    if (rc == KVSHARD_OK)
        rc = sparse_list(k_only, r, cfg, KVSHARD__KEY_SPARSE_DISABLE_INDEX_VALUE, L, 0,
                         "1: the index keeps K only, 0: K and V");
    for (uint32_t i = 0; rc == KVSHARD_OK && i < L; i++) {
        if ((m->kinds[i] == FULL || m->kinds[i] == HYBRID) && on[i])
            kvshard__add_layer_flags(
                m, i, k_only[i] ? KVSHARD__LAYER_SPARSE_K : KVSHARD__LAYER_SPARSE_KV);
    }
    kvshard_alloc__free(&m->alloc, lists);
    return rc;
}

/* ---- compressed models: streams shared from KV sources ------------------------------ */

/* A list of layer ids, each in 0..L-1 and listed once, marked in `marks`
 * with `bit`. */
static int read_ids(uint8_t *marks, uint8_t bit, const kvshard__reader *r,
                    const kvshard__node *list, const char *key, uint32_t L)
{
    int rc = kvshard_tape__node_expect(r->doc, list, KVSHARD__NODE_SEQUENCE, key, r->err);
    if (rc)
        return rc;
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        char what[64];
        snprintf(what, sizeof what, "%s[%u]", key, i);
        uint64_t id;
        if ((rc = kvshard_tape__node_uint(&id, r->doc, &item, what, 0, UINT64_MAX, r->err)) != 0)
            return rc;
        if (id >= L)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &item,
                                     "%s: layer %llu is out of range; layers run from 0 to "
                                     "num_hidden_layers - 1 = %u",
                                     what, (unsigned long long)id, L - 1);
        if (marks[id] & bit)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, &item,
                                     "%s: layer %llu is listed twice", what,
                                     (unsigned long long)id);
        marks[id] |= bit;
    }
    return KVSHARD_OK;
}

enum { SOURCE = 1, INDEX_SOURCE = 2 };

/* Only the KV sources keep a stream (and index keys, where
 * index_source_layer_ids lists them, or all of them without that key); a
 * layer of ratio r > 0 reads the stream of the latest source at or below
 * it, which must have its ratio. */
static int read_sources(kvshard__reader *r, const kvshard__node *ids, uint32_t L, uint8_t *marks)
{
    kvshard_model *m = r->model;
    const char *key = "kv_source_layer_ids";
    int rc = read_ids(marks, SOURCE, r, ids, key, L);
    kvshard__node index_ids = {0};
    bool listed = kvshard__get(r, &r->text, KVSHARD__KEY_INDEX_SOURCE_LAYER_IDS, &index_ids);
    if (rc == KVSHARD_OK && listed)
        rc = read_ids(marks, INDEX_SOURCE, r, &index_ids, "index_source_layer_ids", L);
    if (rc)
        return rc;
    if (!m->kv_source) {
        m->kv_source = kvshard_alloc__bytes(&m->alloc, L, sizeof *m->kv_source);
        if (!m->kv_source)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ENOMEM, ids, "out of memory");
    }
    uint32_t latest = UINT32_MAX;
    for (uint32_t i = 0; i < L; i++) {
        uint8_t ratio = kvshard__layer_ratio(m, i);
        m->kv_source[i] = -1;
        kvshard__set_layer_flags(m, i,
                                 kvshard__layer_flags(m, i) &
                                     (uint8_t) ~(KVSHARD__LAYER_INDEX_KEY | KVSHARD__LAYER_STREAM));
        if (marks[i] & SOURCE) {
            if (ratio == 0)
                return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, ids,
                                         "%s: layer %u has compression ratio 0 and keeps no "
                                         "stream for other layers to read",
                                         key, i);
            latest = i;
            kvshard__add_layer_flags(m, i, KVSHARD__LAYER_STREAM);
            if (!listed || (marks[i] & INDEX_SOURCE))
                kvshard__add_layer_flags(m, i, KVSHARD__LAYER_INDEX_KEY);
            continue;
        }
        if (ratio == 0)
            continue;
        if (latest == UINT32_MAX)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, ids,
                                     "%s: layer %u (compression ratio %u) has no KV source at or "
                                     "below it to read the stream of",
                                     key, i, ratio);
        if (kvshard__layer_ratio(m, latest) != ratio)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERLIST, ids,
                                     "%s: layer %u (compression ratio %u) would read the stream of "
                                     "layer %u, whose compression ratio is %u",
                                     key, i, ratio, latest, kvshard__layer_ratio(m, latest));
        m->kv_source[i] = (int32_t)latest;
    }
    return KVSHARD_OK;
}

static int read_streams(kvshard__reader *r, uint32_t L)
{
    kvshard_model *m = r->model;
    kvshard__node ids = {0};
    if (!kvshard__get(r, &r->text, KVSHARD__KEY_KV_SOURCE_LAYER_IDS, &ids)) {
        for (uint32_t i = 0; i < L; i++) {
            if (kvshard__layer_ratio(m, i) > 0)
                kvshard__add_layer_flags(m, i,
                                         KVSHARD__LAYER_STREAM); /* every layer keeps its own */
        }
        return KVSHARD_OK;
    }
    uint8_t *marks = kvshard_alloc__bytes(&m->alloc, L, 1);
    if (!marks)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ENOMEM, &ids, "out of memory");
    memset(marks, 0, L);
    int rc = read_sources(r, &ids, L, marks);
    kvshard_alloc__free(&m->alloc, marks);
    return rc;
}

static int read_index_head_dim(kvshard__reader *r)
{
    return kvshard_reader__require_dim(&r->model->info.index_head_dim, r, &r->text,
                                KVSHARD__KEY_INDEX_HEAD_DIM,
                                "compressed layers with index keys cache one per entry");
}

int kvshard_index__read_index_keys(kvshard__reader *r)
{
    kvshard_model *m = r->model;
    kvshard__model_info *in = &m->info;
    uint32_t L = in->num_layers;
    kvshard__node v = {0};
    if (in->attention != KVSHARD_ATTENTION_COMPRESSED &&
        kvshard__get(r, &r->text, KVSHARD__KEY_KV_SOURCE_LAYER_IDS, &v))
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EUNMODELED, &v,
                                 "kv_source_layer_ids: kvshard reads layers that share a stream "
                                 "only in a compressed model (compress_ratios), and this one is "
                                 "not");
    int rc = KVSHARD_OK;
    if (in->attention == KVSHARD_ATTENTION_MLA && in->has_indexer)
        rc = read_dsa(r, L);
    if (rc == KVSHARD_OK && kvshard__get(r, &r->text, KVSHARD__KEY_SPARSE_ATTENTION_CONFIG, &v))
        rc = read_sparse(r, &v, L);
    if (rc || in->attention != KVSHARD_ATTENTION_COMPRESSED)
        return rc;
    if ((rc = read_streams(r, L)) != 0)
        return rc;
    bool layers_index = false, drafts_index = false;
    for (uint32_t i = 0; i < L; i++)
        layers_index |= (kvshard__layer_flags(m, i) & KVSHARD__LAYER_INDEX_KEY) != 0;
    for (uint32_t d = 0; d < r->draft_count; d++)
        drafts_index |= (r->draft[d].flags & KVSHARD__LAYER_INDEX_KEY) != 0;
    return kvshard_reader__read_part(r, layers_index, drafts_index, read_index_head_dim);
}
