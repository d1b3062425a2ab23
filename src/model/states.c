/* The state-kind table, and the state of a config's linear and hybrid
 * layers: which kind its keys name, the dimensions (under the aliases each
 * family spells them by), the dtype, and the bytes a layer keeps. */
#include "model/states.h"

#include "model/attention.h"
#include "model/reader.h"

#include <stdio.h>
#include <string.h>

#define END KVSHARD__KEY_COUNT

static const kvshard__key MAMBA2_HEADS[] = {
    KVSHARD__KEY_MAMBA_NUM_HEADS, KVSHARD__KEY_MAMBA_N_HEADS, KVSHARD__KEY_N_MAMBA_HEADS, END};
static const kvshard__key MAMBA2_HEAD_DIM[] = {
    KVSHARD__KEY_MAMBA_HEAD_DIM, KVSHARD__KEY_MAMBA_D_HEAD, KVSHARD__KEY_MAMBA_HEADDIM, END};
static const kvshard__key MAMBA2_STATE[] = {KVSHARD__KEY_SSM_STATE_SIZE, KVSHARD__KEY_MAMBA_D_STATE,
                                            END};
static const kvshard__key MAMBA2_GROUPS[] = {KVSHARD__KEY_N_GROUPS, KVSHARD__KEY_MAMBA_N_GROUPS,
                                             KVSHARD__KEY_MAMBA_NGROUPS, END};
static const kvshard__key MAMBA2_KERNEL[] = {KVSHARD__KEY_CONV_KERNEL, KVSHARD__KEY_MAMBA_D_CONV,
                                             END};

static bool has_any(const kvshard__reader *r, const kvshard__key *keys)
{
    kvshard__node v = {0};
    const char *key;
    return kvshard_reader__get_any(r, &r->text, keys, &v, &key);
}

/* Bailing V3 keeps KDA state described by top-level keys: a
 * layer_group_size model with a short_conv_kernel_size. */
static bool bailing_kda(const kvshard__reader *r)
{
    kvshard__node v = {0};
    return kvshard__get(r, &r->text, KVSHARD__KEY_LAYER_GROUP_SIZE, &v) &&
           kvshard__get(r, &r->text, KVSHARD__KEY_SHORT_CONV_KERNEL_SIZE, &v);
}

/* Which state the keys describe, first that applies; whichever rule gave
 * the layer kinds (a MiniMax file with layer_types still has lightning
 * state). */
static kvshard_state_kind state_kind_of(const kvshard__reader *r)
{
    static const kvshard__key gdn[] = {
        KVSHARD__KEY_LINEAR_NUM_KEY_HEADS, KVSHARD__KEY_LINEAR_NUM_VALUE_HEADS,
        KVSHARD__KEY_LINEAR_KEY_HEAD_DIM, KVSHARD__KEY_LINEAR_VALUE_HEAD_DIM, END};
    static const char *const mamba2_types[] = {"nemotron_h", "granitemoehybrid", "bamba",
                                               "falcon_h1",  "zamba2",           NULL};
    kvshard__node v = {0};
    if (kvshard__get(r, &r->text, KVSHARD__KEY_LINEAR_ATTN_CONFIG, &v) || bailing_kda(r))
        return KVSHARD_STATE_KDA;
    if (kvshard__get(r, &r->text, KVSHARD__KEY_ATTN_TYPE_LIST, &v) ||
        kvshard_model__type_is(r, "minimax", true) ||
        kvshard_model__type_is(r, "bailing_moe_linear", false) ||
        kvshard_model__type_is(r, "bailing_hybrid", false))
        return KVSHARD_STATE_LIGHTNING;
    if (has_any(r, gdn))
        return KVSHARD_STATE_GDN;
    bool mamba2 = has_any(r, MAMBA2_HEADS);
    for (const char *const *t = mamba2_types; !mamba2 && *t; t++)
        mamba2 = kvshard_model__type_is(r, *t, false);
    if (mamba2)
        return KVSHARD_STATE_MAMBA2;
    if (kvshard__get(r, &r->text, KVSHARD__KEY_MAMBA_D_STATE, &v) &&
        kvshard__get(r, &r->text, KVSHARD__KEY_MAMBA_EXPAND, &v))
        return KVSHARD_STATE_MAMBA1;
    if (kvshard__get(r, &r->text, KVSHARD__KEY_CONV_L_CACHE, &v))
        return KVSHARD_STATE_SHORT_CONV;
    return KVSHARD_STATE_NONE;
}

/* A required dimension under any of its aliases; the error names them all. */
static int require_any(uint32_t *out, const char **out_key, kvshard__node *out_node,
                       const kvshard__reader *r, const kvshard__key *keys, const char *why)
{
    kvshard__node v = {0};
    const char *key;
    if (!kvshard_reader__get_any(r, &r->text, keys, &v, &key)) {
        char names[160] = "";
        size_t used = 0;
        for (const kvshard__key *k = keys + 1; *k != END && used < sizeof names; k++) {
            int n = snprintf(names + used, sizeof names - used, "%s%s", used ? ", " : " (or ",
                             kvshard_reader__key_name(*k));
            if (n > 0)
                used += (size_t)n;
        }
        if (used && used + 1 < sizeof names)
            strcat(names, ")");
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_EMISSING, &r->text,
                                   "missing key \"%s\"%s (%s)", kvshard_reader__key_name(keys[0]),
                                   names, why);
    }
    if (out_key)
        *out_key = key;
    if (out_node)
        *out_node = v;
    return kvshard_reader__read_dim(out, r, &v, key, 1, KVSHARD__MAX_DIMENSION);
}

/* An optional dimension under any of its aliases, `fallback` when absent. */
static int optional_any(uint32_t *out, const char **out_key, kvshard__node *out_node,
                        const kvshard__reader *r, const kvshard__key *keys, uint32_t fallback)
{
    kvshard__node v = {0};
    const char *key;
    if (!kvshard_reader__get_any(r, &r->text, keys, &v, &key)) {
        *out = fallback;
        if (out_key)
            *out_key = NULL;
        return KVSHARD_OK;
    }
    if (out_key)
        *out_key = key;
    if (out_node)
        *out_node = v;
    return kvshard_reader__read_dim(out, r, &v, key, 1, KVSHARD__MAX_DIMENSION);
}

static int read_gdn(kvshard__reader *r, kvshard__state_dims *s)
{
    const char *why = "Gated DeltaNet state";
    const kvshard__node *t = &r->text;
    kvshard__node v = {0};
    int rc;
    if ((rc = kvshard_reader__require_dim(&s->key_heads, r, t, KVSHARD__KEY_LINEAR_NUM_KEY_HEADS,
                                          why)) != 0 ||
        (rc = kvshard_reader__require_dim(&s->heads, r, t, KVSHARD__KEY_LINEAR_NUM_VALUE_HEADS,
                                          why)) != 0 ||
        (rc = kvshard_reader__require_dim(&s->head_dim, r, t, KVSHARD__KEY_LINEAR_KEY_HEAD_DIM,
                                          why)) != 0 ||
        (rc = kvshard_reader__require_dim(&s->value_dim, r, t, KVSHARD__KEY_LINEAR_VALUE_HEAD_DIM,
                                          why)) != 0 ||
        (rc = kvshard_reader__require_dim(&s->conv_kernel, r, t,
                                          KVSHARD__KEY_LINEAR_CONV_KERNEL_DIM, why)) != 0)
        return rc;
    kvshard__get(r, t, KVSHARD__KEY_LINEAR_NUM_KEY_HEADS, &v);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_A, "linear_num_key_heads", s->key_heads, &v);
    kvshard__get(r, t, KVSHARD__KEY_LINEAR_NUM_VALUE_HEADS, &v);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, "linear_num_value_heads", s->heads, &v);
    return KVSHARD_OK;
}

static int read_kda(kvshard__reader *r, kvshard__state_dims *s)
{
    const char *why = "Kimi Delta Attention state";
    kvshard__node cfg = {0}, v = {0};
    int rc;
    if (!kvshard__get(r, &r->text, KVSHARD__KEY_LINEAR_ATTN_CONFIG, &cfg)) {
        /* Bailing V3: the heads, head dim and kernel of the text config. */
        const kvshard__node *t = &r->text;
        if ((rc = kvshard_reader__require_dim(&s->heads, r, t, KVSHARD__KEY_NUM_ATTENTION_HEADS,
                                              why)) != 0 ||
            (rc = kvshard_reader__require_dim(&s->head_dim, r, t, KVSHARD__KEY_HEAD_DIM, why)) !=
                0 ||
            (rc = kvshard_reader__require_dim(&s->conv_kernel, r, t,
                                              KVSHARD__KEY_SHORT_CONV_KERNEL_SIZE, why)) != 0)
            return rc;
        kvshard__get(r, t, KVSHARD__KEY_NUM_ATTENTION_HEADS, &v);
        kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, "num_attention_heads", s->heads, &v);
        return KVSHARD_OK;
    }
    rc = kvshard_tape__node_expect(r->doc, &cfg, KVSHARD__NODE_MAPPING, "linear_attn_config",
                                   r->err);
    if (rc == KVSHARD_OK)
        rc = kvshard_reader__require_dim(&s->heads, r, &cfg, KVSHARD__KEY_NUM_HEADS, why);
    if (rc == KVSHARD_OK)
        rc = kvshard_reader__require_dim(&s->head_dim, r, &cfg, KVSHARD__KEY_HEAD_DIM, why);
    if (rc == KVSHARD_OK)
        rc = kvshard_reader__require_dim(&s->conv_kernel, r, &cfg,
                                         KVSHARD__KEY_SHORT_CONV_KERNEL_SIZE, why);
    if (rc)
        return rc;
    kvshard__get(r, &cfg, KVSHARD__KEY_NUM_HEADS, &v);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, "linear_attn_config.num_heads", s->heads,
                             &v);
    return KVSHARD_OK;
}

static int read_lightning(kvshard__reader *r, kvshard__state_dims *s)
{
    const char *why = "lightning attention state";
    kvshard__node v = {0};
    int rc =
        kvshard_reader__require_dim(&s->heads, r, &r->text, KVSHARD__KEY_NUM_ATTENTION_HEADS, why);
    if (rc == KVSHARD_OK)
        rc = kvshard_attention__read_head_dim(&s->head_dim, r, s->heads, why);
    if (rc)
        return rc;
    kvshard__get(r, &r->text, KVSHARD__KEY_NUM_ATTENTION_HEADS, &v);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, "num_attention_heads", s->heads, &v);
    return KVSHARD_OK;
}

static int read_mamba2(kvshard__reader *r, kvshard__state_dims *s)
{
    const char *why = "Mamba2 state";
    const char *heads_key, *groups_key;
    kvshard__node heads_node = {0}, groups_node = {0}, v = {0};
    int rc = require_any(&s->heads, &heads_key, &heads_node, r, MAMBA2_HEADS, why);
    if (rc)
        return rc;
    /* Head dim: a key, or "auto"/absent for mamba_expand x hidden_size / H. */
    const char *dim_key;
    if (kvshard_reader__get_any(r, &r->text, MAMBA2_HEAD_DIM, &v, &dim_key) &&
        !kvshard_tape__scalar_is(&v, "auto")) {
        if ((rc = kvshard_reader__read_dim(&s->head_dim, r, &v, dim_key, 1,
                                           KVSHARD__MAX_DIMENSION)) != 0)
            return rc;
    } else {
        const char *derive = "the Mamba2 head dim is mamba_expand x hidden_size / heads when "
                             "mamba_head_dim is absent or auto";
        uint32_t expand, hidden;
        if ((rc = kvshard_reader__require_dim(&expand, r, &r->text, KVSHARD__KEY_MAMBA_EXPAND,
                                              derive)) != 0 ||
            (rc = kvshard_reader__require_dim(&hidden, r, &r->text, KVSHARD__KEY_HIDDEN_SIZE,
                                              derive)) != 0)
            return rc;
        uint64_t width = (uint64_t)expand * hidden;
        if (width % s->heads != 0 || width / s->heads > KVSHARD__MAX_DIMENSION)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &heads_node,
                                     "mamba_expand %u x hidden_size %u = %llu is not divisible by "
                                     "%s %u; give mamba_head_dim",
                                     expand, hidden, (unsigned long long)width, heads_key,
                                     s->heads);
        s->head_dim = (uint32_t)(width / s->heads);
    }
    static const kvshard__key chunk[] = {KVSHARD__KEY_CHUNK_SIZE, KVSHARD__KEY_MAMBA_CHUNK_SIZE,
                                         END};
    if ((rc = require_any(&s->state_size, NULL, NULL, r, MAMBA2_STATE, why)) != 0 ||
        (rc = optional_any(&s->groups, &groups_key, &groups_node, r, MAMBA2_GROUPS, 1)) != 0 ||
        (rc = optional_any(&s->conv_kernel, NULL, NULL, r, MAMBA2_KERNEL, 4)) != 0 ||
        (rc = optional_any(&s->chunk_size, NULL, NULL, r, chunk, 0)) != 0)
        return rc;
    if ((uint64_t)s->heads * s->head_dim > KVSHARD__MAX_DIMENSION)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &heads_node,
                                 "%s %u x head dim %u is past %u channels", heads_key, s->heads,
                                 s->head_dim, KVSHARD__MAX_DIMENSION);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, heads_key, s->heads, &heads_node);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_GROUPS, groups_key ? groups_key : "n_groups",
                      s->groups, groups_key ? &groups_node : &r->text);
    return KVSHARD_OK;
}

static int read_mamba1(kvshard__reader *r, kvshard__state_dims *s)
{
    const char *why = "Mamba state: d_inner is mamba_expand x hidden_size";
    uint32_t expand, hidden;
    kvshard__node v = {0};
    int rc;
    if ((rc = kvshard_reader__require_dim(&expand, r, &r->text, KVSHARD__KEY_MAMBA_EXPAND, why)) !=
            0 ||
        (rc = kvshard_reader__require_dim(&hidden, r, &r->text, KVSHARD__KEY_HIDDEN_SIZE, why)) !=
            0 ||
        (rc = kvshard_reader__require_dim(&s->state_size, r, &r->text, KVSHARD__KEY_MAMBA_D_STATE,
                                          why)) != 0)
        return rc;
    static const kvshard__key kernel[] = {KVSHARD__KEY_MAMBA_D_CONV, END};
    if ((rc = optional_any(&s->conv_kernel, NULL, NULL, r, kernel, 4)) != 0)
        return rc;
    uint64_t d_inner = (uint64_t)expand * hidden;
    kvshard__get(r, &r->text, KVSHARD__KEY_MAMBA_EXPAND, &v);
    if (d_inner > KVSHARD__MAX_DIMENSION)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ERANGE, &v,
                                 "mamba_expand %u x hidden_size %u is past %u channels", expand,
                                 hidden, KVSHARD__MAX_DIMENSION);
    s->channels = (uint32_t)d_inner;
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, "mamba_expand x hidden_size", s->channels,
                             &v);
    return KVSHARD_OK;
}

static int read_short_conv(kvshard__reader *r, kvshard__state_dims *s)
{
    const char *why = "short convolution state";
    kvshard__node v = {0};
    int rc;
    if ((rc = kvshard_reader__require_dim(&s->conv_kernel, r, &r->text, KVSHARD__KEY_CONV_L_CACHE,
                                          why)) != 0 ||
        (rc = kvshard_reader__require_dim(&s->channels, r, &r->text, KVSHARD__KEY_HIDDEN_SIZE,
                                          why)) != 0)
        return rc;
    kvshard__get(r, &r->text, KVSHARD__KEY_HIDDEN_SIZE, &v);
    kvshard_reader__set_site(r, KVSHARD__SITE_STATE_B, "hidden_size", s->channels, &v);
    return KVSHARD_OK;
}

/* A 16- or 32-bit dtype a state-dtype key names; anything else (auto, fp8,
 * a number) counts as absent. */
static bool named_state_dtype(kvshard_dtype *out, const kvshard__node *v)
{
    kvshard_dtype d;
    if (v->kind != KVSHARD__NODE_SCALAR || !kvshard_dtype__from_name(&d, v->text, v->count) ||
        d == KVSHARD_DTYPE_FP8)
        return false;
    *out = d;
    return true;
}

/* The dtype `key` names, text config first; AUTO when neither names one. */
static kvshard_dtype named_by(const kvshard__reader *r, kvshard__key key)
{
    const kvshard__node *maps[2] = {&r->text, &r->top};
    for (int m = 0; m < 2; m++) {
        kvshard__node v = {0};
        kvshard_dtype d;
        if (kvshard__get(r, maps[m], key, &v) && named_state_dtype(&d, &v))
            return d;
    }
    return KVSHARD_DTYPE_AUTO;
}

static kvshard_dtype state_dtype_of(const kvshard__reader *r, kvshard_state_kind kind,
                                    kvshard_dtype model_dtype)
{
    const kvshard__node *maps[2] = {&r->text, &r->top};
    static const kvshard__key keys[2] = {KVSHARD__KEY_MAMBA_SSM_DTYPE,
                                         KVSHARD__KEY_MAMBA_SSM_CACHE_DTYPE};
    if (!kvshard_states__of(kind)->temporal)
        return KVSHARD_DTYPE_AUTO;
    for (int m = 0; m < 2; m++) {
        for (int k = 0; k < 2; k++) {
            kvshard__node v = {0};
            kvshard_dtype d;
            if (kvshard__get(r, maps[m], keys[k], &v) && named_state_dtype(&d, &v))
                return d;
        }
    }
    return kvshard_states__default_dtype(kind, model_dtype);
}

int kvshard_states__read_state(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    kvshard__state_dims *s = &in->state;
    s->kind = state_kind_of(r);
    const kvshard_states__row *row = kvshard_states__of(s->kind);
    if (!row)
        return kvshard_marks__fail(
            r->doc, r->err, KVSHARD_EMISSING, &r->text,
            "the model has linear or hybrid layers but no keys that describe "
            "their state (looked for linear_attn_config, layer_group_size with "
            "short_conv_kernel_size, attn_type_list, "
            "linear_num_value_heads, mamba_num_heads, mamba_d_state with "
            "mamba_expand, conv_L_cache)");
    int rc = row->read(r, s);
    if (rc)
        return rc;
    s->dtype = state_dtype_of(r, s->kind, in->dtype);
    in->named_ssm_dtype = named_by(r, KVSHARD__KEY_MAMBA_SSM_DTYPE);
    in->named_ssm_cache_dtype = named_by(r, KVSHARD__KEY_MAMBA_SSM_CACHE_DTYPE);
    return KVSHARD_OK;
}

/* ---- the tensors of one layer's state, for one sequence on one rank ----------------- */
/* Every "x / T" divides exactly: planning checked the dimensions against T.
 * The bytes a layer keeps are the sum of these tensors (kvshard_states__bytes),
 * so the shapes an engine allocates and the plan's figures are one formula. */

#define MUL(a, b) kvshard__calc_mul(c, (a), (b))
#define ADD(a, b) kvshard__calc_add(c, (a), (b))

/* A conv state of `channels` channels and `columns` columns, in the
 * model dtype. */
static kvshard_states__tensor conv_tensor(uint64_t channels, uint64_t columns)
{
    kvshard_states__tensor t = {"conv", false, 2, {channels, columns, 0, 0}};
    return t;
}

/* A temporal state of dims a x b x c, in the state dtype, with one copy per
 * draft token and one more under speculation (a leading dim of spec + 1). */
static kvshard_states__tensor temporal_tensor(uint64_t a, uint64_t b, uint64_t d, uint64_t copies)
{
    kvshard_states__tensor t = {"ssm", true, 3, {a, b, d, 0}};
    if (copies > 1) {
        kvshard_states__tensor w = {"ssm", true, 4, {copies, a, b, d}};
        return w;
    }
    return t;
}

static uint32_t gdn_shapes(kvshard__calc *c, kvshard_states__tensor *out,
                           const kvshard__state_dims *s, const kvshard_states__env *e)
{
    uint64_t hk = s->key_heads / e->tp, hv = s->heads / e->tp, dk = s->head_dim,
             dv = s->value_dim;
    /* The q, k and v convolutions: 2 dk Hk + dv Hv channels. */
    uint64_t channels = ADD(MUL(2 * dk, hk), MUL(dv, hv));
    out[0] = conv_tensor(channels, s->conv_kernel - 1 + e->spec);
    out[1] = temporal_tensor(hv, dk, dv, e->spec + 1);
    return 2;
}

static uint32_t kda_shapes(kvshard__calc *c, kvshard_states__tensor *out,
                           const kvshard__state_dims *s, const kvshard_states__env *e)
{
    uint64_t h = s->heads / e->tp, d = s->head_dim;
    out[0] = conv_tensor(MUL(3 * h, d), s->conv_kernel - 1 + e->spec);
    out[1] = temporal_tensor(h, d, d, e->spec + 1);
    return 2;
}

static uint32_t lightning_shapes(kvshard__calc *c, kvshard_states__tensor *out,
                                 const kvshard__state_dims *s, const kvshard_states__env *e)
{
    (void)c;
    uint64_t h = s->heads / e->tp, d = s->head_dim;
    out[0] = temporal_tensor(h, d, d, 1);
    return 1;
}

static uint32_t mamba2_shapes(kvshard__calc *c, kvshard_states__tensor *out,
                              const kvshard__state_dims *s, const kvshard_states__env *e)
{
    /* Groups on a rank: all G when T divides them, else a copy of its group
     * when G < T divides T (planning refused the rest). */
    uint64_t groups = s->groups % e->tp == 0 ? s->groups : e->tp;
    uint64_t inner = (uint64_t)s->heads * s->head_dim;
    uint64_t channels = ADD(inner, MUL(2 * groups, s->state_size)) / e->tp;
    out[0] = conv_tensor(channels, s->conv_kernel - 1 + e->spec);
    out[1] = temporal_tensor(s->heads / e->tp, s->head_dim, s->state_size, 1);
    return 2;
}

static uint32_t mamba1_shapes(kvshard__calc *c, kvshard_states__tensor *out,
                              const kvshard__state_dims *s, const kvshard_states__env *e)
{
    (void)c;
    uint64_t inner = s->channels / e->tp;
    out[0] = conv_tensor(inner, s->conv_kernel - 1);
    kvshard_states__tensor t = {"ssm", true, 2, {inner, s->state_size, 0, 0}};
    out[1] = t;
    return 2;
}

static uint32_t short_conv_shapes(kvshard__calc *c, kvshard_states__tensor *out,
                                  const kvshard__state_dims *s, const kvshard_states__env *e)
{
    (void)c;
    /* A short convolution keeps K - 1 columns, speculation or not. */
    out[0] = conv_tensor(s->channels / e->tp, s->conv_kernel - 1);
    return 1;
}

#undef MUL
#undef ADD

/* ---- the table -------------------------------------------------------------------- */

#define NEED(dim, fallback, site) {KVSHARD__DIM_##dim, fallback, site}
#define LAST {KVSHARD__DIM_COUNT, 0, -1}
#define ONE COUNT
#define DIM(d) KVSHARD__DIM_##d
#define CONV(name, units, d) {name, false, DIM(units), {DIM(d), DIM(COUNT)}}
#define TEMPORAL(name, units, a, b) {name, true, DIM(units), {DIM(a), DIM(b)}}

static const kvshard_states__row rows[KVSHARD__STATE_KIND_COUNT] = {
    [KVSHARD_STATE_GDN] = {"gdn",
                           {NEED(KEY_HEADS, 0, KVSHARD__SITE_STATE_A),
                            NEED(HEADS, 0, KVSHARD__SITE_STATE_B), NEED(HEAD_DIM, 0, -1),
                            NEED(VALUE_DIM, 0, -1), NEED(CONV_KERNEL, 0, -1), LAST},
                           false,
                           true,
                           true,
                           read_gdn,
                           gdn_shapes,
                           {CONV("conv_q", KEY_HEADS, HEAD_DIM),
                            CONV("conv_k", KEY_HEADS, HEAD_DIM), CONV("conv_v", HEADS, VALUE_DIM),
                            TEMPORAL("ssm", HEADS, HEAD_DIM, VALUE_DIM)}},
    [KVSHARD_STATE_KDA] = {"kda",
                           {NEED(HEADS, 0, KVSHARD__SITE_STATE_B), NEED(HEAD_DIM, 0, -1),
                            NEED(CONV_KERNEL, 0, -1), LAST},
                           false,
                           true,
                           true,
                           read_kda,
                           kda_shapes,
                           {CONV("conv_q", HEADS, HEAD_DIM), CONV("conv_k", HEADS, HEAD_DIM),
                            CONV("conv_v", HEADS, HEAD_DIM),
                            TEMPORAL("ssm", HEADS, HEAD_DIM, HEAD_DIM)}},
    [KVSHARD_STATE_LIGHTNING] = {"lightning",
                                 {NEED(HEADS, 0, KVSHARD__SITE_STATE_B), NEED(HEAD_DIM, 0, -1),
                                  LAST},
                                 false,
                                 true,
                                 true,
                                 read_lightning,
                                 lightning_shapes,
                                 {TEMPORAL("ssm", HEADS, HEAD_DIM, HEAD_DIM)}},
    [KVSHARD_STATE_MAMBA1] = {"mamba1",
                              {NEED(CHANNELS, 0, KVSHARD__SITE_STATE_B), NEED(STATE_SIZE, 0, -1),
                               NEED(CONV_KERNEL, 4, -1), LAST},
                              false,
                              true,
                              false,
                              read_mamba1,
                              mamba1_shapes,
                              {CONV("conv_x", CHANNELS, ONE),
                               TEMPORAL("ssm", CHANNELS, STATE_SIZE, ONE)}},
    [KVSHARD_STATE_MAMBA2] = {"mamba2",
                              {NEED(HEADS, 0, KVSHARD__SITE_STATE_B), NEED(HEAD_DIM, 0, -1),
                               NEED(STATE_SIZE, 0, -1), NEED(GROUPS, 1, KVSHARD__SITE_STATE_GROUPS),
                               NEED(CONV_KERNEL, 4, -1), LAST},
                              true,
                              true,
                              false,
                              read_mamba2,
                              mamba2_shapes,
                              {CONV("conv_x", HEADS, HEAD_DIM), CONV("conv_b", GROUPS, STATE_SIZE),
                               CONV("conv_c", GROUPS, STATE_SIZE),
                               TEMPORAL("ssm", HEADS, HEAD_DIM, STATE_SIZE)}},
    [KVSHARD_STATE_SHORT_CONV] = {"short_conv",
                                  {NEED(CHANNELS, 0, KVSHARD__SITE_STATE_B),
                                   NEED(CONV_KERNEL, 0, -1), LAST},
                                  false,
                                  false,
                                  false,
                                  read_short_conv,
                                  short_conv_shapes,
                                  {CONV("conv_x", CHANNELS, ONE)}},
};

#undef NEED
#undef LAST
#undef ONE
#undef DIM
#undef CONV
#undef TEMPORAL

const kvshard_states__row *kvshard_states__of(kvshard_state_kind kind)
{
    return (unsigned)kind < KVSHARD__STATE_KIND_COUNT && rows[kind].name ? &rows[kind] : NULL;
}

uint32_t *kvshard_states__field(kvshard__state_dims *s, kvshard_states__dim dim)
{
    uint32_t *const fields[KVSHARD__DIM_COUNT] = {
        [KVSHARD__DIM_HEADS] = &s->heads,           [KVSHARD__DIM_KEY_HEADS] = &s->key_heads,
        [KVSHARD__DIM_HEAD_DIM] = &s->head_dim,     [KVSHARD__DIM_VALUE_DIM] = &s->value_dim,
        [KVSHARD__DIM_STATE_SIZE] = &s->state_size, [KVSHARD__DIM_GROUPS] = &s->groups,
        [KVSHARD__DIM_CONV_KERNEL] = &s->conv_kernel, [KVSHARD__DIM_CHANNELS] = &s->channels,
    };
    return fields[dim];
}

const char *kvshard_states__desc_name(kvshard_states__dim dim)
{
    static const char *const names[KVSHARD__DIM_COUNT] = {
        [KVSHARD__DIM_HEADS] = "state_heads",         [KVSHARD__DIM_KEY_HEADS] = "state_key_heads",
        [KVSHARD__DIM_HEAD_DIM] = "state_head_dim",   [KVSHARD__DIM_VALUE_DIM] = "state_value_dim",
        [KVSHARD__DIM_STATE_SIZE] = "state_size",     [KVSHARD__DIM_GROUPS] = "state_groups",
        [KVSHARD__DIM_CONV_KERNEL] = "conv_kernel",   [KVSHARD__DIM_CHANNELS] = "conv_channels",
    };
    return names[dim];
}

kvshard_dtype kvshard_states__default_dtype(kvshard_state_kind kind, kvshard_dtype model_dtype)
{
    const kvshard_states__row *row = kvshard_states__of(kind);
    if (!row || !row->temporal)
        return KVSHARD_DTYPE_AUTO;
    if (row->default_fp32)
        return KVSHARD_DTYPE_FP32;
    return kvshard_dtype__is_fp8(model_dtype) ? KVSHARD_DTYPE_BF16 : model_dtype;
}

uint32_t kvshard_states__shapes(kvshard_states__tensor *out, kvshard__calc *c,
                               const kvshard__state_dims *s, const kvshard_states__env *env)
{
    const kvshard_states__row *row = kvshard_states__of(s->kind);
    return row ? row->shapes(c, out, s, env) : 0;
}

uint64_t kvshard_states__tensor_bytes(kvshard__calc *c, const kvshard_states__tensor *t,
                                      const kvshard_states__env *env)
{
    uint64_t b = t->temporal ? env->ssm_bytes : env->conv_bytes;
    for (uint32_t d = 0; d < t->ndim; d++)
        b = kvshard__calc_mul(c, b, t->dims[d]);
    return b;
}

uint64_t kvshard_states__bytes(kvshard__calc *c, const kvshard__state_dims *s,
                               const kvshard_states__env *env)
{
    kvshard_states__tensor t[KVSHARD__STATE_TENSORS];
    uint32_t n = kvshard_states__shapes(t, c, s, env);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total = kvshard__calc_add(c, total, kvshard_states__tensor_bytes(c, &t[i], env));
    return total;
}

/* Dimension `dim` of `s`, read through the one field map. */
static uint32_t dim_value(const kvshard__state_dims *s, kvshard_states__dim dim)
{
    kvshard__state_dims copy = *s;
    return *kvshard_states__field(&copy, dim);
}

uint32_t kvshard_states__part_units(const kvshard_states__part *p, const kvshard__state_dims *s)
{
    return dim_value(s, p->units);
}

uint64_t kvshard_states__part_unit_bytes(kvshard__calc *c, const kvshard_states__part *p,
                                         const kvshard__state_dims *s,
                                         const kvshard_states__env *env)
{
    uint64_t b = p->temporal ? env->ssm_bytes : env->conv_bytes;
    for (uint32_t i = 0; i < 2; i++)
        if (p->per_unit[i] != KVSHARD__DIM_COUNT)
            b = kvshard__calc_mul(c, b, dim_value(s, p->per_unit[i]));
    if (!p->temporal)
        b = kvshard__calc_mul(c, b, s->conv_kernel ? s->conv_kernel - 1 : 0);
    return b;
}

const char *kvshard_state_kind_name(kvshard_state_kind kind)
{
    if (kind == KVSHARD_STATE_NONE)
        return "none";
    const kvshard_states__row *row = kvshard_states__of(kind);
    return row ? row->name : "unknown";
}
