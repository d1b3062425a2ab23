/* The attention a config describes and the model dtype: GQA with the
 * geometry of its full layers and of its sliding layers, MLA with its
 * latent and DSA indexer, or compressed attention (one shared latent per
 * entry). Only the parts some layer uses are read; a part only draft
 * layers use is read too, but its error is kept for the plans that count
 * draft layers. */
#include "model/attention.h"

#include <stdio.h>
#include <string.h>

int kvshard_attention__read_model_dtype(kvshard_dtype *out, const kvshard__reader *r)
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
            const char *name = kvshard_reader__key_name(keys[k]);
            int rc = kvshard_tape__node_string(&s, &len, r->doc, &v, name, r->err);
            if (rc)
                return rc;
            if (kvshard_dtype__from_name(out, s, len))
                return KVSHARD_OK;
            char shown[64];
            kvshard_error__excerpt(shown, sizeof shown, s, len, 40);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                     "%s: unknown dtype \"%s\" (expected bfloat16, float16, "
                                     "float32 or fp8)",
                                     name, shown);
        }
    }
    *out = KVSHARD_DTYPE_BF16;
    return KVSHARD_OK;
}

int kvshard_attention__read_head_dim(uint32_t *out, const kvshard__reader *r, uint32_t heads,
                                     const char *why)
{
    const kvshard__node *t = &r->text;
    kvshard__node v = {0};
    if (kvshard__get(r, t, KVSHARD__KEY_HEAD_DIM, &v))
        return kvshard_reader__read_dim(out, r, &v, "head_dim", 1, KVSHARD__MAX_DIMENSION);
    if (kvshard__get(r, t, KVSHARD__KEY_ATTENTION_HEAD_DIM, &v))
        return kvshard_reader__read_dim(out, r, &v, "attention_head_dim", 1,
                                        KVSHARD__MAX_DIMENSION);
    if (heads == 0)
        return kvshard_reader__missing(r, t, KVSHARD__KEY_HEAD_DIM, why);
    uint32_t hidden = 0; /* set when rc is 0; said for -O3, which cannot tell */
    int rc = kvshard_reader__require_dim(&hidden, r, t, KVSHARD__KEY_HIDDEN_SIZE,
                                  "head_dim defaults to hidden_size / num_attention_heads");
    if (rc)
        return rc;
    /* Zamba2's attention reads the hidden state twice as wide. */
    uint64_t width = (uint64_t)hidden * (kvshard_model__type_is(r, "zamba2", false) ? 2 : 1);
    if (width % heads != 0) {
        kvshard__get(r, t, KVSHARD__KEY_HIDDEN_SIZE, &v);
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                 "hidden_size %u%s is not divisible by num_attention_heads %u; "
                                 "give head_dim explicitly",
                                 hidden, width != hidden ? " (x2 for zamba2)" : "", heads);
    }
    *out = (uint32_t)(width / heads);
    return KVSHARD_OK;
}

/* ---- GQA geometry ------------------------------------------------------------------ */

/* Where a figure may be read: a key of a mapping, under the name errors give. */
typedef struct place {
    const kvshard__node *map; /* NULL: not there (a mapping the config lacks) */
    kvshard__key key;
    const char *name;
} place;

/* The first place that holds a value; false when none does. */
static bool first_present(const kvshard__reader *r, const place *places, size_t n,
                          kvshard__node *out, const place **found)
{
    for (size_t i = 0; i < n; i++) {
        if (places[i].map && kvshard__get(r, places[i].map, places[i].key, out)) {
            *found = &places[i];
            return true;
        }
    }
    return false;
}

/* A dimension from the first place that holds it; *found NULL when none does. */
static int first_dim(uint32_t *out, const place **found, const kvshard__reader *r,
                     const place *places, size_t n, kvshard__node *at)
{
    *found = NULL;
    if (!first_present(r, places, n, at, found))
        return KVSHARD_OK;
    return kvshard_reader__read_dim(out, r, at, (*found)->name, 1, KVSHARD__MAX_DIMENSION);
}

/* Each KV head serves a whole number of query heads, so there are no more
 * of them than query heads, and they divide them. */
static int check_kv_heads(const kvshard__reader *r, uint32_t kv, const char *kv_key,
                          const kvshard__node *at, uint32_t q, const char *q_key)
{
    if (kv > q)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, at,
                                 "%s %u is more than %s %u: each KV head serves one or more query "
                                 "heads",
                                 kv_key, kv, q_key, q);
    if (q % kv != 0)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, at,
                                 "%s %u is not divisible by %s %u: each KV head serves the same "
                                 "number of query heads",
                                 q_key, q, kv_key, kv);
    return KVSHARD_OK;
}

/* The V head dim: the first present of `places` (0 counts as absent: some
 * configs write 0 for "as wide as K"), else the K head dim. */
static int v_dim(uint32_t *out, const kvshard__reader *r, const place *places, size_t n,
                 uint32_t k_dim)
{
    kvshard__node v = {0};
    const place *found;
    *out = k_dim;
    for (size_t i = 0; i < n; i++) {
        if (!first_present(r, places + i, 1, &v, &found))
            continue;
        uint32_t d;
        int rc = kvshard_reader__read_dim(&d, r, &v, found->name, 0, KVSHARD__MAX_DIMENSION);
        if (rc)
            return rc;
        if (d > 0) {
            *out = d;
            return KVSHARD_OK;
        }
    }
    return KVSHARD_OK;
}

/* The query heads of the text config; 0 when it has none. */
static int query_heads(uint32_t *out, kvshard__reader *r)
{
    bool found;
    *out = 0;
    return kvshard_reader__optional_dim(out, &found, r, &r->text, KVSHARD__KEY_NUM_ATTENTION_HEADS,
                                        1, KVSHARD__MAX_DIMENSION);
}

/* Step-3.5's attention_other_setting: the geometry of the layers whose
 * kind its attention_type names, which kvshard reads for sliding layers
 * only; NULL into *out when the config has none. */
static int other_setting(const kvshard__node **out, kvshard__node *store, kvshard__reader *r)
{
    *out = NULL;
    if (!kvshard__get(r, &r->text, KVSHARD__KEY_ATTENTION_OTHER_SETTING, store))
        return KVSHARD_OK;
    int rc = kvshard_tape__node_expect(r->doc, store, KVSHARD__NODE_MAPPING,
                                       "attention_other_setting", r->err);
    if (rc)
        return rc;
    kvshard__node type = {0};
    if (kvshard__get(r, store, KVSHARD__KEY_ATTENTION_TYPE, &type)) {
        const char *s;
        size_t len;
        const char *key = "attention_other_setting.attention_type";
        if ((rc = kvshard_tape__node_string(&s, &len, r->doc, &type, key, r->err)) != 0)
            return rc;
        if (!kvshard_text__is(s, len, "sliding_attention")) {
            char shown[64];
            kvshard_error__excerpt(shown, sizeof shown, s, len, 40);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_EUNMODELED, &type,
                                     "%s: \"%s\" is not sliding_attention, the only kind whose "
                                     "geometry kvshard reads from attention_other_setting",
                                     key, shown);
        }
    }
    *out = store;
    return KVSHARD_OK;
}

/* The geometry of full-attention, hybrid and chunked layers (and of
 * full-attention draft layers). */
static int read_full_geometry(kvshard__reader *r)
{
    kvshard__geometry *g = &r->model->info.full;
    const kvshard__node *t = &r->text;
    const char *why = "needed for the KV bytes of attention layers";
    /* attention_other_setting is checked wherever it stands, though only
     * sliding layers read it. */
    kvshard__node store = {0};
    const kvshard__node *other;
    uint32_t q;
    int rc = other_setting(&other, &store, r);
    if (rc == KVSHARD_OK)
        rc = query_heads(&q, r);
    if (rc)
        return rc;
    /* Gemma 4's global heads count only where K and V are one projection. */
    kvshard__node v = {0};
    bool k_eq_v = false;
    if (kvshard__get(r, t, KVSHARD__KEY_ATTENTION_K_EQ_V, &v) &&
        (rc = kvshard_reader__read_bool(&k_eq_v, r, &v, "attention_k_eq_v")) != 0)
        return rc;
    const place heads[] = {
        {k_eq_v ? t : NULL, KVSHARD__KEY_NUM_GLOBAL_KEY_VALUE_HEADS, "num_global_key_value_heads"},
        {t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, "num_key_value_heads"},
        {t, KVSHARD__KEY_NUM_ATTENTION_GROUPS, "num_attention_groups"},
        {t, KVSHARD__KEY_NUM_ATTENTION_HEADS, "num_attention_heads"}};
    const place *found;
    if ((rc = first_dim(&g->heads, &found, r, heads, 4, &v)) != 0)
        return rc;
    if (!found)
        return kvshard_reader__missing(r, t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, why);
    if (q && found->key != KVSHARD__KEY_NUM_ATTENTION_HEADS &&
        (rc = check_kv_heads(r, g->heads, found->name, &v, q, "num_attention_heads")) != 0)
        return rc;
    kvshard_reader__set_site(r, KVSHARD__SITE_KV_HEADS, found->name, g->heads, &v);
    bool has_global;
    rc = kvshard_reader__optional_dim(&g->k_dim, &has_global, r, t, KVSHARD__KEY_GLOBAL_HEAD_DIM, 1,
                               KVSHARD__MAX_DIMENSION);
    if (rc == KVSHARD_OK && !has_global)
        rc = kvshard_attention__read_head_dim(&g->k_dim, r, q, why);
    const place v_places[] = {{t, KVSHARD__KEY_V_HEAD_DIM, "v_head_dim"}};
    return rc ? rc : v_dim(&g->v_dim, r, v_places, 1, g->k_dim);
}

/* The geometry of sliding-window layers (and of sliding draft layers). */
static int read_sliding_geometry(kvshard__reader *r)
{
    kvshard__geometry *g = &r->model->info.sliding;
    const kvshard__node *t = &r->text;
    const char *why = "needed for the KV bytes of sliding-window layers";
    kvshard__node store = {0}, v = {0};
    const kvshard__node *other;
    int rc = other_setting(&other, &store, r);
    if (rc)
        return rc;
    kvshard__node swa = {0};
    if ((kvshard_model__type_is(r, "mimo_v2_flash", false) ||
         kvshard_model__type_is(r, "mimo_v2", false)) &&
        !kvshard__get(r, t, KVSHARD__KEY_SWA_NUM_KEY_VALUE_HEADS, &swa))
        return kvshard_reader__missing(r, t, KVSHARD__KEY_SWA_NUM_KEY_VALUE_HEADS,
                                "MiMo's sliding layers have KV heads of their own, which kvshard "
                                "does not derive");
    const place heads[] = {
        {t, KVSHARD__KEY_SWA_NUM_KEY_VALUE_HEADS, "swa_num_key_value_heads"},
        {other, KVSHARD__KEY_NUM_ATTENTION_GROUPS, "attention_other_setting.num_attention_groups"},
        {t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, "num_key_value_heads"},
        {t, KVSHARD__KEY_NUM_ATTENTION_GROUPS, "num_attention_groups"},
        {t, KVSHARD__KEY_NUM_ATTENTION_HEADS, "num_attention_heads"}};
    const place *found;
    if ((rc = first_dim(&g->heads, &found, r, heads, 5, &v)) != 0)
        return rc;
    if (!found)
        return kvshard_reader__missing(r, t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, why);
    /* The query heads of these layers: their own setting's, else the model's. */
    uint32_t q = 0, q_text;
    bool has_q = false;
    const char *q_key = "attention_other_setting.num_attention_heads";
    if (other && (rc = kvshard_reader__optional_dim(&q, &has_q, r, other,
                                             KVSHARD__KEY_NUM_ATTENTION_HEADS, 1,
                                             KVSHARD__MAX_DIMENSION)) != 0)
        return rc;
    if ((rc = query_heads(&q_text, r)) != 0)
        return rc;
    if (!has_q) {
        q = q_text;
        q_key = "num_attention_heads";
    }
    if (q && found->key != KVSHARD__KEY_NUM_ATTENTION_HEADS &&
        (rc = check_kv_heads(r, g->heads, found->name, &v, q, q_key)) != 0)
        return rc;
    kvshard_reader__set_site(r, KVSHARD__SITE_SLIDING_KV_HEADS, found->name, g->heads, &v);
    const place dims[] = {{t, KVSHARD__KEY_SWA_HEAD_DIM, "swa_head_dim"},
                          {other, KVSHARD__KEY_HEAD_DIM, "attention_other_setting.head_dim"}};
    if ((rc = first_dim(&g->k_dim, &found, r, dims, 2, &v)) != 0)
        return rc;
    if (!found && (rc = kvshard_attention__read_head_dim(&g->k_dim, r, q_text, why)) != 0)
        return rc;
    const place v_places[] = {{t, KVSHARD__KEY_SWA_V_HEAD_DIM, "swa_v_head_dim"}};
    return v_dim(&g->v_dim, r, v_places, 1, g->k_dim);
}

/* ---- MLA and compressed attention -------------------------------------------------- */

static int read_mla(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    const kvshard__node *t = &r->text;
    kvshard__node v = {0};
    int rc = kvshard_reader__require_dim(&in->qk_rope_head_dim, r, t, KVSHARD__KEY_QK_ROPE_HEAD_DIM,
                                  "MLA caches kv_lora_rank + qk_rope_head_dim per token");
    if (rc)
        return rc;
    if (kvshard__get(r, t, KVSHARD__KEY_INDEX_HEAD_DIM, &v) &&
        kvshard__get(r, t, KVSHARD__KEY_INDEX_N_HEADS, &v)) {
        uint32_t n_heads;
        const char *why = "the DSA indexer caches one key per token";
        if ((rc = kvshard_reader__require_dim(&in->index_head_dim, r, t,
                                              KVSHARD__KEY_INDEX_HEAD_DIM, why)) != 0 ||
            (rc = kvshard_reader__require_dim(&n_heads, r, t, KVSHARD__KEY_INDEX_N_HEADS, why)) !=
                0)
            return rc;
        /* Only the decode estimate reads it: optional until then. */
        bool found;
        if ((rc = kvshard_reader__optional_dim(&in->index_topk, &found, r, t,
                                               KVSHARD__KEY_INDEX_TOPK, 1,
                                               KVSHARD__MAX_DIMENSION)) != 0)
            return rc;
        in->has_indexer = true;
    }
    return KVSHARD_OK;
}

/* DeepSeek-V4's latent: head_dim elements shared by K and V, one head. */
static int read_compressed(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    const kvshard__node *t = &r->text;
    kvshard__node v = {0};
    int rc = kvshard_reader__require_dim(&in->latent_dim, r, t, KVSHARD__KEY_HEAD_DIM,
                                  "compressed attention caches one latent of head_dim elements "
                                  "per entry");
    if (rc)
        return rc;
    if (kvshard__get(r, t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, &v)) {
        uint32_t kv;
        if ((rc = kvshard_reader__read_dim(&kv, r, &v, "num_key_value_heads", 1,
                                    KVSHARD__MAX_DIMENSION)) != 0)
            return rc;
        if (kv != 1)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_EUNMODELED, &v,
                                     "num_key_value_heads %u: kvshard models compressed attention "
                                     "with one latent shared by every head (1), not grouped KV "
                                     "heads",
                                     kv);
    }
    /* The RoPE part matters only to an fp8 cache, which keeps it in bf16:
     * planning asks for it then. */
    if (kvshard__get(r, t, KVSHARD__KEY_QK_ROPE_HEAD_DIM, &v))
        return kvshard_reader__read_dim(&in->qk_rope_head_dim, r, &v, "qk_rope_head_dim", 0,
                                 in->latent_dim - 1);
    kvshard_reader__set_site(r, KVSHARD__SITE_LATENT_ROPE, "qk_rope_head_dim", 0, t);
    return KVSHARD_OK;
}

/* ---- which parts are read ----------------------------------------------------------- */

/* The query heads, which every engine shards evenly over the attention TP
 * ranks whatever the attention (GQA, MLA, DSA, compressed): kept for the
 * plans that store KV to check against T. A config without the key has
 * nothing to check. */
static int read_query_site(kvshard__reader *r)
{
    kvshard__node v = {0};
    uint32_t q;
    if (!kvshard__get(r, &r->text, KVSHARD__KEY_NUM_ATTENTION_HEADS, &v))
        return KVSHARD_OK;
    int rc = kvshard_reader__read_dim(&q, r, &v, "num_attention_heads", 1, KVSHARD__MAX_DIMENSION);
    if (rc == KVSHARD_OK)
        kvshard_reader__set_site(r, KVSHARD__SITE_Q_HEADS, "num_attention_heads", q, &v);
    return rc;
}

/* The attention type and the parts of it the layers use. */
static int read_attention_kind(kvshard__reader *r, bool full, bool sliding, bool draft_full,
                               bool draft_sliding)
{
    kvshard__model_info *in = &r->model->info;
    if (r->compressed) {
        in->attention = KVSHARD_ATTENTION_COMPRESSED; /* its kv_lora_rank is not read */
        return read_compressed(r);
    }
    /* kv_lora_rank: a positive integer selects MLA; 0 or null does not. */
    uint32_t lora = 0;
    bool found;
    int rc = kvshard_reader__optional_dim(&lora, &found, r, &r->text, KVSHARD__KEY_KV_LORA_RANK, 0,
                                   KVSHARD__MAX_DIMENSION);
    if (rc)
        return rc;
    if (found && lora > 0) {
        in->attention = KVSHARD_ATTENTION_MLA;
        in->kv_lora_rank = lora;
        return kvshard_reader__read_part(r, full || sliding, draft_full || draft_sliding, read_mla);
    }
    in->attention = KVSHARD_ATTENTION_GQA;
    rc = kvshard_reader__read_part(r, full, draft_full, read_full_geometry);
    return rc ? rc : kvshard_reader__read_part(r, sliding, draft_sliding, read_sliding_geometry);
}

int kvshard_attention__read_attention(kvshard__reader *r)
{
    const uint32_t *n = r->model->info.count;
    bool full = n[KVSHARD_LAYER_FULL_ATTENTION] + n[KVSHARD_LAYER_HYBRID] +
                    n[KVSHARD_LAYER_CHUNKED_ATTENTION] >
                0;
    bool sliding = n[KVSHARD_LAYER_SLIDING_ATTENTION] > 0;
    bool draft_full = false, draft_sliding = false;
    for (uint32_t d = 0; d < r->draft_count; d++) {
        draft_full |= r->draft[d].kind == KVSHARD_LAYER_FULL_ATTENTION;
        draft_sliding |= r->draft[d].kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    }
    int rc = read_attention_kind(r, full, sliding, draft_full, draft_sliding);
    if (rc)
        return rc;
    /* Every layer of a compressed model caches its latent. */
    return kvshard_reader__read_part(r, full || sliding || r->compressed,
                                     draft_full || draft_sliding, read_query_site);
}

/* sliding_window, else sliding_window_size. */
static int read_sliding_window(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    kvshard__node v = {0};
    if (kvshard__get(r, &r->text, KVSHARD__KEY_SLIDING_WINDOW, &v))
        return kvshard_reader__read_dim(&in->sliding_window, r, &v, "sliding_window", 1,
                                        UINT32_MAX);
    if (kvshard__get(r, &r->text, KVSHARD__KEY_SLIDING_WINDOW_SIZE, &v))
        return kvshard_reader__read_dim(&in->sliding_window, r, &v, "sliding_window_size", 1,
                                 UINT32_MAX);
    return kvshard_reader__missing(r, &r->text, KVSHARD__KEY_SLIDING_WINDOW,
                            "sliding and compressed layers keep the last sliding_window tokens; "
                            "sliding_window_size is read too");
}

int kvshard_attention__read_windows(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    bool draft_sliding = false;
    for (uint32_t d = 0; d < r->draft_count; d++)
        draft_sliding |= r->draft[d].kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    bool sliding = in->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0 ||
                   in->attention == KVSHARD_ATTENTION_COMPRESSED;
    int rc = kvshard_reader__read_part(r, sliding, draft_sliding, read_sliding_window);
    if (rc || in->count[KVSHARD_LAYER_CHUNKED_ATTENTION] == 0 || in->chunk_size > 0)
        return rc;
    return kvshard_reader__require_dim(&in->chunk_size, r, &r->text,
                                       KVSHARD__KEY_ATTENTION_CHUNK_SIZE,
                                       "chunked_attention layers keep one chunk of "
                                       "attention_chunk_size tokens");
}
