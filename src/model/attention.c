/* The attention a config describes (GQA with its KV heads and head dim, or
 * MLA with its latent and DSA indexer) and the model dtype. */
#include "model/read.h"

#include <string.h>

int kvshard__read_model_dtype(kvshard_dtype *out, const kvshard__reader *r)
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
    int rc = kvshard__optional_dim(&heads, &has_heads, r, t, KVSHARD__KEY_NUM_ATTENTION_HEADS, 1,
                          KVSHARD__MAX_DIMENSION);
    if (rc == KVSHARD_OK)
        rc = kvshard__optional_dim(&in->num_kv_heads, &has_kv, r, t, KVSHARD__KEY_NUM_KEY_VALUE_HEADS, 1,
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
    /* Each KV head serves a whole number of query heads, so there are no
     * more of them than query heads, and they divide them. */
    if (has_heads && has_kv && in->num_kv_heads > heads)
        return kvshard__doc_fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                 "num_key_value_heads %u is more than num_attention_heads %u: each "
                                 "KV head serves one or more query heads",
                                 in->num_kv_heads, heads);
    if (has_heads && has_kv && heads % in->num_kv_heads != 0)
        return kvshard__doc_fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                 "num_attention_heads %u is not divisible by num_key_value_heads "
                                 "%u: each KV head serves the same number of query heads",
                                 heads, in->num_kv_heads);
    kvshard__set_site(r, KVSHARD__SITE_KV_HEADS, kvshard__key_name(kv_key), in->num_kv_heads, &v);
    if (has_heads) {
        kvshard__node q = {0};
        kvshard__get(r, t, KVSHARD__KEY_NUM_ATTENTION_HEADS, &q);
        kvshard__set_site(r, KVSHARD__SITE_Q_HEADS, "num_attention_heads", heads, &q);
    }
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


int kvshard__read_attention(kvshard__reader *r, bool stores_kv)
{
    /* kv_lora_rank: a positive integer selects MLA; 0 or null does not. */
    kvshard__model_info *in = &r->model->info;
    uint32_t lora = 0;
    bool found;
    int rc = kvshard__optional_dim(&lora, &found, r, &r->text, KVSHARD__KEY_KV_LORA_RANK, 0,
                                   KVSHARD__MAX_DIMENSION);
    if (rc)
        return rc;
    if (found && lora > 0) {
        in->attention = KVSHARD_ATTENTION_MLA;
        in->kv_lora_rank = lora;
        return stores_kv ? read_mla(r) : KVSHARD_OK;
    }
    return stores_kv ? read_gqa(r) : KVSHARD_OK;
}
