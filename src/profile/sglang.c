/* The sglang profile: SGLang's memory pools on one GPU, from the engine's
 * own rules at the release named, so that kvshard prints the lines it
 * logs at start-up: "Mamba Cache is allocated. max_mamba_cache_size: K,
 * ...", "KV Cache is allocated. #tokens: N, K size: ..., V size: ..." and
 * "max_total_num_tokens=N, max_running_requests=R, context_len=C". The
 * budget is SGLang's "rest", in GiB as a double: a mamba_full_memory_ratio
 * share of it goes to the state pool (one slot more than it counts, slot 0
 * pads), the rest to the token pool, and the state pool caps the requests
 * that run at once.
 *
 * Rules that changed between releases hold from the release named in the
 * V_* constants below. */
#include "profile/sglang.h"

#include "profile/capacity.h"
#include "profile/verdicts.h"

#include "model/states.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define PROFILE (&kvshard_profile__sglang)

/* ---- the releases whose rules differ ------------------------------------------------ */

static const kvshard_profile__versions versions = {"0.5.21", KVSHARD_V(0, 5, 9),
                                                   KVSHARD_V(0, 5, 21)};

static const kvshard_versions__v V_DRAFT_STATE =
    KVSHARD_V(0, 5, 13); /* speculation with state; lazy */
static const kvshard_versions__v V_EXTRA_BUFFER = KVSHARD_V(0, 5, 14); /* auto: extra_buffer */
static const kvshard_versions__v V_0_5_17 = KVSHARD_V(0, 5, 17);       /* K + 1 slots; 100 MiB */
/* --max-running-requests capped by the engine's estimate, then by half the
 * tokens instead. */
static const kvshard_versions__v V_REQUESTS_CAPPED = KVSHARD_V(0, 5, 10);
static const kvshard_versions__v V_REQUESTS_BY_TOKENS = KVSHARD_V(0, 5, 14);

#define GIB 1073741824.0

/* A DSA model on a CUDA GPU: the page the engine forces, the bytes it
 * stores for an fp8 latent of 576 values, and the compute capability from
 * which `auto` KV is fp8. */
#define DSA_PAGE 64u
#define DSA_FP8_LATENT 656u
#define BLACKWELL_MAJOR 10.0

/* ---- inputs -------------------------------------------------------------------------- */

enum {
    IN_VERSION,
    IN_TP,
    IN_DP_ATTENTION,
    IN_ATTN_CP,
    IN_FRACTION,
    IN_MAX_TOTAL,
    IN_MAMBA_SIZE,
    IN_RATIO,
    IN_STRATEGY,
    IN_OLD_STRATEGY,
    IN_RADIX_OFF,
    IN_OVERLAP_OFF,
    IN_CHUNKED,
    IN_DRAFT,
    IN_DSA_SPLIT,
    IN_DEVICE_FREE,
    IN_NON_KV,
    IN_MULTIMODAL,
    IN_UNIFIED_MEMORY,
    IN_HIERARCHICAL,
    IN_CAPABILITY,
};

enum { S_AUTO, S_NO_BUFFER, S_EXTRA_BUFFER, S_EXTRA_BUFFER_LAZY };
#define UNSET_BOOL 2u

static const kvshard_value__word strategy_words[] = {{"auto", S_AUTO},
                                                     {"no_buffer", S_NO_BUFFER},
                                                     {"extra_buffer", S_EXTRA_BUFFER},
                                                     {"extra_buffer_lazy", S_EXTRA_BUFFER_LAZY},
                                                     {NULL, 0}};
static const kvshard_value__word kv_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp8_e4m3", KVSHARD_DTYPE_FP8},
    {"fp8_e5m2", KVSHARD_DTYPE_FP8_E5M2},  {NULL, 0},
};
static const kvshard_value__word ssm_dtype_words[] = {
    {"float32", KVSHARD_DTYPE_FP32},
    {"bfloat16", KVSHARD_DTYPE_BF16},
    {"float16", KVSHARD_DTYPE_FP16},
    {NULL, 0},
};

#define R KVSHARD_ERANGE
#define NO_VALUE                                                                                   \
    {                                                                                              \
        0, 0.0, NULL, 0                                                                            \
    }
static const kvshard_profile__input inputs[] = {
    [IN_VERSION] = KVSHARD_VERSIONS__INPUT,
    [IN_TP] = {{"tp_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, true, NULL,
                NULL},
               NO_VALUE,
               "world_size"},
    [IN_DP_ATTENTION] = {{"enable_dp_attention", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                         NO_VALUE,
                         NULL},
    [IN_ATTN_CP] = {{"attn_cp_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL,
                     false, NULL, NULL},
                    {1, 0.0, NULL, 0},
                    NULL},
    [IN_FRACTION] = {{"mem_fraction_static", KVSHARD__VT_FRACTION, 0, 1, R, false, NULL, NULL},
                     NO_VALUE,
                     "none"},
    [IN_MAX_TOTAL] = {{"max_total_tokens", KVSHARD__VT_U32, 1, UINT32_MAX, R, true, NULL, NULL},
                      NO_VALUE,
                      "none"},
    [IN_MAMBA_SIZE] = {{"max_mamba_cache_size", KVSHARD__VT_U32, 1, 1u << 30, R, true, NULL, NULL},
                       NO_VALUE,
                       "none"},
    [IN_RATIO] = {{"mamba_full_memory_ratio", KVSHARD__VT_DECIMAL, 0, 100, R, false, NULL, NULL},
                  {0, 0.9, NULL, 0},
                  NULL},
    [IN_STRATEGY] = {{"mamba_radix_cache_strategy", KVSHARD__VT_WORD, 0, 0, R, false,
                      strategy_words, NULL},
                     {S_AUTO, 0.0, NULL, 0},
                     NULL},
    [IN_OLD_STRATEGY] = {{"mamba_scheduler_strategy", KVSHARD__VT_WORD, 0, 0, R, false,
                          strategy_words, NULL},
                         {S_AUTO, 0.0, NULL, 0},
                         NULL},
    [IN_RADIX_OFF] = {{"disable_radix_cache", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                      NO_VALUE,
                      NULL},
    [IN_OVERLAP_OFF] = {{"disable_overlap_schedule", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                        NO_VALUE,
                        NULL},
    [IN_CHUNKED] = {{"chunked_prefill_size", KVSHARD__VT_U32, 1, UINT32_MAX, R, true, NULL, NULL},
                    NO_VALUE,
                    "none"},
    [IN_DRAFT] = {{"speculative_num_draft_tokens", KVSHARD__VT_U32, 0, 1024, R, false, NULL, NULL},
                  NO_VALUE,
                  NULL},
    [IN_DSA_SPLIT] = {{"enable_dsa_cache_layer_split", KVSHARD__VT_BOOL, 0, 1, R, false, NULL,
                       NULL},
                      NO_VALUE,
                      NULL},
    [IN_DEVICE_FREE] = {{"device_memory_free", KVSHARD__VT_BYTES, 1, UINT64_MAX, R, true, NULL,
                         NULL},
                        NO_VALUE,
                        NULL},
    /* UINT64_MAX is "not given", above every number it takes. */
    [IN_NON_KV] = {{"non_kv_memory", KVSHARD__VT_SIZES, 0, UINT64_MAX - 1, R, false, NULL,
                      &kvshard_profile__stage_sizes},
                   {UINT64_MAX, 0.0, NULL, 0},
                   "none"},
    [IN_MULTIMODAL] = {{"multimodal", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                       {UNSET_BOOL, 0.0, NULL, 0},
                       "whether the config has vision_config"},
    /* Pools the profile does not cover: read so that they are refused,
     * never skipped. */
    [IN_UNIFIED_MEMORY] = {{"enable_unified_memory", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                           NO_VALUE,
                           NULL},
    [IN_HIERARCHICAL] = {{"enable_hierarchical_cache", KVSHARD__VT_BOOL, 0, 1, R, false, NULL,
                          NULL},
                         NO_VALUE,
                         NULL},
    /* X.Y of the GPU: the KV dtype `auto` of a DSA model depends on it. */
    [IN_CAPABILITY] = {{"device_compute_capability", KVSHARD__VT_DECIMAL, 0, 100, R, false, NULL,
                        NULL},
                       NO_VALUE,
                       "none"},
    {{NULL, KVSHARD__VT_U32, 0, 0, 0, false, NULL, NULL}, NO_VALUE, NULL},
};
#undef R
#undef NO_VALUE

/* SGLang's names for kvshard's keys, as argparse spells them once '-' is
 * '_'. */
static const kvshard_profile__alias aliases[] = {
    {"tp", "tp_size", NULL},
    {"tensor_parallel_size", "tp_size", NULL},
    {"dp", "dp_size", NULL},
    {"data_parallel_size", "dp_size", NULL},
    {"pipeline_parallel_size", "pp_size", NULL},
    {"page_size", "block_size", NULL},
    {"max_running_requests", "max_seqs", NULL},
    {"kv_cache_dtype", "kv_cache_dtype", kv_dtype_words},
    {"mamba_ssm_dtype", "state_dtype", ssm_dtype_words},
    {"enable_cp_cache_layer_split", "enable_dsa_cache_layer_split", NULL},
    {NULL, NULL, NULL},
};

/* The engine keeps no draft layers of its own. */
static const char *const ignored_options[] = {"num_speculative_tokens", NULL};

/* ---- what settling works out --------------------------------------------------------- */

/* Notes the capacity keeps for the wording and warnings. */
enum { NOTE_PROFILED_TOKENS, NOTE_REQUESTS_BEFORE_STATE, NOTE_ESTIMATE, NOTE_AVAILABLE };

static const kvshard_sglang__state *state_of(const kvshard_profile__state *s)
{
    return &s->sglang;
}

static bool from(const kvshard_sglang__state *st, const kvshard_versions__v *v)
{
    return kvshard_versions__from(&st->version, v);
}

static int fail(kvshard_diag__ctx *diag, const char *const *about, int code, const char *name,
                const char *fmt, ...) KVSHARD__PRINTF(5, 6);

/* "sglang profile: NAME: ...", the message of every refusal. */
static int fail(kvshard_diag__ctx *diag, const char *const *about, int code, const char *name,
                const char *fmt, ...)
{
    char text[KVSHARD_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return kvshard_diag__fail(diag, about, code, "sglang profile: %s: %s", name, text);
}

static const uint32_t covered_kinds = 1u << KVSHARD_LAYER_FULL_ATTENTION |
                                      1u << KVSHARD_LAYER_LINEAR_ATTENTION |
                                      1u << KVSHARD_LAYER_NO_CACHE;
static const kvshard_state_kind covered_states[] = {KVSHARD_STATE_GDN, KVSHARD_STATE_MAMBA2,
                                                    KVSHARD_STATE_NONE};
/* Models whose state pool keeps extra buffers when `auto` picks. */
static const char *const extra_buffer_types[] = {"qwen3_5",          "qwen3_5_moe", "qwen3_5_text",
                                                 "qwen3_5_moe_text", "qwen3_next",  "falcon_h1",
                                                 "granitemoehybrid", "nemotron_h",  NULL};

static int check_coverage(const kvshard_profile__settling *s, const kvshard_sglang__state *st,
                          kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    const kvshard_options *o = s->options;
    uint8_t kind = kvshard_profile__unplanned_kind(m, covered_kinds);
    diag->option = "engine";
    if (kind != KVSHARD__KIND_COUNT)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "%s layers (%u of %u) are not covered yet",
                    kvshard_layer_kind_name((kvshard_layer_kind)kind), m->count[kind],
                    m->num_layers);
    if (m->num_state > 0) {
        const kvshard_state_kind *k = covered_states;
        while (*k != KVSHARD_STATE_NONE && *k != m->state.kind)
            k++;
        if (*k == KVSHARD_STATE_NONE)
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                        "state kind %s is not covered yet (GDN and Mamba2 are)",
                        kvshard_state_kind_name(m->state.kind));
        if (m->attention == KVSHARD_ATTENTION_MLA)
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                        "state layers next to MLA layers are not covered yet");
        if (m->count[KVSHARD_LAYER_FULL_ATTENTION] == 0)
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                        "a model with state layers and no full-attention layer is not covered "
                        "yet");
    }
    /* The token pool is sized by the bytes a token takes over the
     * full-attention layers: a model with none has no token to size. */
    if (m->count[KVSHARD_LAYER_FULL_ATTENTION] == 0)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "a model with no full-attention layer (%u layers that keep no cache) is not "
                    "covered yet",
                    m->num_layers);
    diag->option =
        s->inputs[IN_UNIFIED_MEMORY].u ? "enable_unified_memory" : "enable_hierarchical_cache";
    if (s->inputs[IN_UNIFIED_MEMORY].u || s->inputs[IN_HIERARCHICAL].u)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "--%s: the engine's %s is not covered yet",
                    s->inputs[IN_UNIFIED_MEMORY].u ? "enable-unified-memory"
                                                   : "enable-hierarchical-cache",
                    s->inputs[IN_UNIFIED_MEMORY].u ? "unified memory pool" : "hierarchical cache");
    diag->option = "kv_cache_dtype";
    if (o->kv_cache_dtype == KVSHARD_DTYPE_FP16 || o->kv_cache_dtype == KVSHARD_DTYPE_INT8)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "kv_cache_dtype %s is not one of the engine's (auto, bf16, fp8_e4m3, "
                    "fp8_e5m2)",
                    kvshard_dtype_name(o->kv_cache_dtype));
    diag->option = "cp_size";
    if (o->cp_size > 1)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "cp_size %u: kvshard's context parallelism is not the engine's; the DSA "
                    "layer split takes --attn-cp-size",
                    o->cp_size);
    diag->option = "layerwise_split_size";
    if (s->given->enable_layerwise_split && s->given->layerwise_split_size > 1)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_split_unsupported",
                    "kvshard's layerwise split (layerwise_split_size %u) is not the engine's: "
                    "give --enable-dsa-cache-layer-split and --attn-cp-size",
                    s->given->layerwise_split_size);
    diag->option = "speculative_num_draft_tokens";
    if (m->num_state > 0 && s->inputs[IN_DRAFT].u > 0 && !from(st, &V_DRAFT_STATE))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "SGLang %s does not run speculative decoding on models with state layers; "
                    "it is covered from 0.5.13",
                    kvshard_versions__text_of(&st->version).s);
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The strategy, under the name the release reads. */
static int settle_strategy(const kvshard_profile__settling *s, const kvshard_sglang__state *st,
                           int *out, kvshard_diag__ctx *diag)
{
    int now = (int)s->inputs[IN_STRATEGY].u, old = (int)s->inputs[IN_OLD_STRATEGY].u;
    diag->option = "mamba_radix_cache_strategy";
    if (now != S_AUTO && old != S_AUTO && now != old)
        return kvshard_error__fail(diag->err, KVSHARD_EDUPKEY, "", kvshard_error__no_mark,
                             "sglang profile: --mamba-radix-cache-strategy %s and "
                             "--mamba-scheduler-strategy %s differ; give one of them",
                             strategy_words[now].text, strategy_words[old].text);
    if (now != S_AUTO && !from(st, &V_EXTRA_BUFFER))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "--mamba-radix-cache-strategy is the name from 0.5.14; SGLang %s reads "
                    "--mamba-scheduler-strategy",
                    kvshard_versions__text_of(&st->version).s);
    int strategy = now != S_AUTO ? now : old;
    if (strategy == S_EXTRA_BUFFER_LAZY && !from(st, &V_DRAFT_STATE))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "the strategy extra_buffer_lazy exists from 0.5.13; SGLang %s does not have "
                    "it",
                    kvshard_versions__text_of(&st->version).s);
    diag->option = NULL;
    *out = strategy;
    return KVSHARD_OK;
}

/* The parallel sizes: --tp-size and --dp-size, with DP attention dividing
 * the attention TP size instead of multiplying the world. */
static int settle_world(kvshard_profile__settling *s, kvshard_sglang__state *st,
                        kvshard_diag__ctx *diag)
{
    kvshard_options *o = s->options;
    bool dp_attention = s->inputs[IN_DP_ATTENTION].u != 0;
    uint64_t dp = o->dp_size, tp = s->inputs[IN_TP].u, P = o->pp_size;
    /* The engine's world is its TP group (tp ranks, or tp x dp without DP
     * attention) on each of P stages. Without --tp-size the world is
     * kvshard's, which its own validation checks; without either, tp is 1,
     * the engine's default. */
    bool world_given = s->given->world_size != 1;
    uint64_t per_stage = dp_attention || dp == 0 ? 1 : dp;
    if (!tp)
        tp = world_given ? o->world_size / (P * per_stage) : 1;
    uint64_t world = s->inputs[IN_TP].u || !world_given ? tp * per_stage * P : o->world_size;
    diag->option = s->inputs[IN_TP].u || P == 1 ? "tp_size" : "pp_size";
    if (s->inputs[IN_TP].u && world_given && s->given->world_size != world)
        return kvshard_error__fail(
            diag->err, KVSHARD_EDUPKEY, "", kvshard_error__no_mark,
            "sglang profile: world_size %u and the %llu ranks of --tp-size "
            "%llu%s%llu%s x --pp-size %llu differ; give one of them",
            s->given->world_size, (unsigned long long)world, (unsigned long long)tp,
            dp_attention ? " (DP attention in it, --dp-size " : " x --dp-size ",
            (unsigned long long)dp, dp_attention ? ")" : "", (unsigned long long)P);
    if (dp_attention && (dp == 0 || tp % dp != 0))
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                             "sglang profile: --enable-dp-attention needs --tp-size %llu "
                             "divisible by --dp-size %llu",
                             (unsigned long long)tp, (unsigned long long)dp);
    if (world > KVSHARD_MAX_RANKS || world == 0)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                             "sglang profile: %llu ranks is above the %u kvshard plans",
                             (unsigned long long)world, KVSHARD_MAX_RANKS);
    o->world_size = (uint32_t)world;
    st->tp = (uint32_t)tp;
    st->dp = (uint32_t)dp;
    st->dpdiv = dp_attention ? (uint32_t)dp : 1;
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The temporal state's dtype: the flag, else the config's mamba_ssm_dtype
 * when it names a 16- or 32-bit dtype, else float32. */
static int ssm_dtype_of(kvshard_dtype *out, const kvshard_profile__settling *s,
                        kvshard_diag__ctx *diag)
{
    (void)diag;
    const kvshard__model_info *m = s->model;
    if (s->options->state_dtype != KVSHARD_DTYPE_AUTO)
        *out = s->options->state_dtype;
    else if (m->named_ssm_dtype != KVSHARD_DTYPE_AUTO)
        *out = m->named_ssm_dtype;
    else
        *out = KVSHARD_DTYPE_FP32;
    return KVSHARD_OK;
}

static int partition(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err);

/* Pipeline stages: each holds its own layers and sizes its pool from them,
 * so the stage with the most full-attention layers holds the fewest tokens
 * and the engine runs every stage with that count. Covered for models
 * whose layers all keep KV and have no state. */
static int settle_stages(const kvshard_profile__settling *s, kvshard_sglang__state *st,
                         kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    const kvshard_options *o = s->options;
    uint32_t P = o->pp_size ? o->pp_size : 1;
    st->stages = 1;
    st->stage_layers[0] = st->layers;
    if (P <= 1)
        return KVSHARD_OK;
    diag->option = "pp_size";
    if (st->spec > 0)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "pp_speculative_refused",
                    "--pp-size %u with --speculative-num-draft-tokens %u: SGLang refuses pipeline "
                    "stages with speculative decoding",
                    P, st->spec);
    const char *uncovered = st->has_state ? "a model with state layers"
                            : st->split   ? "the DSA layer split"
                            : m->count[KVSHARD_LAYER_FULL_ATTENTION] != m->num_layers
                                ? "a model with layers that keep no cache"
                                : NULL;
    if (uncovered)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "--pp-size %u: pipeline stages of %s are not covered yet", P, uncovered);
    /* A partition that does not fit the layers is the options' own
     * refusal, after settling: the stages are then left at one. */
    if (P > m->num_layers || P > KVSHARD_MAX_PP_PARTITION)
        return KVSHARD_OK;
    if (o->pp_partition_count == P) {
        uint64_t sum = 0;
        for (uint32_t i = 0; i < P; i++)
            sum += o->pp_partition[i];
        if (sum != m->num_layers)
            return KVSHARD_OK;
        memcpy(st->stage_layers, o->pp_partition, P * sizeof *st->stage_layers);
    } else if (o->pp_partition_rule == KVSHARD_PP_RULE_SGLANG) {
        partition(st->stage_layers, m->num_layers, P, NULL);
    } else {
        diag->option = "pp_partition_rule";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "pp_partition_rule is another engine's cut: SGLang cuts its stages by its own "
                    "rule (sglang) or as SGLANG_PP_LAYER_PARTITION says; give the stages as "
                    "pp_partition");
    }
    st->stages = P;
    for (uint32_t i = 0; i < P; i++)
        if (st->stage_layers[i] > st->stage_layers[st->binding_stage])
            st->binding_stage = i;
    st->layers = st->stage_layers[0];
    diag->option = NULL;
    return KVSHARD_OK;
}

static bool has_budget_inputs(const kvshard_profile__settling *s)
{
    return s->options->memory_per_rank > 0 || s->inputs[IN_DEVICE_FREE].u > 0;
}

/* The KV dtype the engine runs. `auto` is the model dtype, with float32
 * and fp8 configs run as bfloat16; a DSA model's `auto` is fp8_e4m3 on
 * Blackwell (compute capability 10.0 and above) and bfloat16 below. One
 * byte for the fp8 words, no scales (the dtypes the engine has no word for
 * are refused with the coverage). */
static int kv_dtype_of(kvshard_dtype *out, const kvshard_profile__settling *s,
                       const kvshard_sglang__state *st, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    kvshard_dtype kv = s->options->kv_cache_dtype;
    if (kv == KVSHARD_DTYPE_AUTO && st->dsa) {
        double capability = s->inputs[IN_CAPABILITY].d;
        if (!(capability > 0.0)) {
            diag->option = "device_compute_capability";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                        "engine_input_missing",
                        "a DSA model's --kv-cache-dtype auto is fp8_e4m3 on GPUs of compute "
                        "capability 10.0 and above and bfloat16 below: give "
                        "--device_compute_capability (9.0 for H100, 10.0 for B200)");
        }
        kv = floor(capability) >= BLACKWELL_MAJOR ? KVSHARD_DTYPE_FP8 : KVSHARD_DTYPE_BF16;
    } else if (st->dsa && kv != KVSHARD_DTYPE_BF16 && kv != KVSHARD_DTYPE_FP8) {
        /* The engine's DSA kernels read bfloat16 or fp8_e4m3 pages only. */
        diag->option = "kv_cache_dtype";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "a DSA model's kv_cache_dtype %s is not covered (bfloat16 or fp8_e4m3)",
                    kvshard_dtype_name(kv));
    } else if (kv == KVSHARD_DTYPE_AUTO) {
        kv = m->dtype == KVSHARD_DTYPE_FP32 || kvshard_dtype__is_fp8(m->dtype) ? KVSHARD_DTYPE_BF16
                                                                                : m->dtype;
    }
    *out = kv;
    return KVSHARD_OK;
}

static int settle(kvshard_profile__settling *s, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    kvshard_options *o = s->options;
    kvshard_sglang__state *st = &s->state->sglang;
    memset(st, 0, sizeof *st);
    int rc = kvshard_profile__version(&st->version, PROFILE, &s->inputs[IN_VERSION], diag);
    if (rc == KVSHARD_OK)
        rc = check_coverage(s, st, diag);
    int strategy = S_AUTO;
    if (rc == KVSHARD_OK)
        rc = settle_strategy(s, st, &strategy, diag);
    if (rc == KVSHARD_OK)
        rc = settle_world(s, st, diag);
    if (rc)
        return rc;
    st->v17 = from(st, &V_0_5_17);
    st->has_state = m->num_state > 0;
    st->mla = m->attention == KVSHARD_ATTENTION_MLA;
    st->dsa = st->mla && m->has_indexer;
    st->page_asked = s->given->block_size;
    /* The engine runs a DSA model with its own page, whatever is asked. */
    st->page = st->dsa ? DSA_PAGE : st->page_asked ? st->page_asked : PROFILE->defaults.block_size;
    st->spec = (uint32_t)s->inputs[IN_DRAFT].u;
    st->requested = s->given->max_seqs;
    st->mamba_size = s->inputs[IN_MAMBA_SIZE].u;
    st->max_total = s->inputs[IN_MAX_TOTAL].u;
    st->mamba_ratio = s->inputs[IN_RATIO].d;
    st->radix = s->inputs[IN_RADIX_OFF].u == 0;
    st->overlap = s->inputs[IN_OVERLAP_OFF].u == 0;
    st->context = s->given->context_length ? s->given->context_length : m->max_position_embeddings;
    /* The DSA layer split over the attention context-parallel group. */
    uint64_t C = s->inputs[IN_ATTN_CP].u;
    uint32_t n_kv = m->count[KVSHARD_LAYER_FULL_ATTENTION];
    st->layers = n_kv;
    if (s->inputs[IN_DSA_SPLIT].u && C > 1) {
        diag->option = "enable_dsa_cache_layer_split";
        if (!st->dsa)
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                        "engine_split_unsupported",
                        "--enable-dsa-cache-layer-split splits the layers of a model with DSA "
                        "indexer keys; this model has none");
        st->split = true;
        st->layers = (uint32_t)((n_kv + C - 1) / C + 1); /* its own share and one scratch layer */
        o->enable_layerwise_split = true;
        o->layerwise_split_size = (uint32_t)C;
        o->ownership = KVSHARD_OWNERSHIP_CONTIGUOUS;
        o->scratch_layers = 1;
    }
    diag->option = NULL;
    /* T is one stage's attention TP: the world is D x C x P of them. */
    uint64_t dc = (uint64_t)o->dp_size * o->cp_size * o->pp_size;
    if (dc == 0 || o->world_size % dc != 0)
        return KVSHARD_OK; /* the options' own validation refuses them */
    uint32_t T = (uint32_t)(o->world_size / dc);
    const char *uncovered = kvshard_profile__uncovered_cache(m, T);
    if (uncovered) {
        diag->option = "engine";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "%s is not covered yet", uncovered);
    }
    if (has_budget_inputs(s) && st->context == 0) {
        diag->option = "context_length";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the engine's context length is the config's max_position_embeddings, "
                    "which it does not give: give --context-length");
    }
    if ((rc = kv_dtype_of(&st->kv_dtype, s, st, diag)) != 0)
        return rc;
    if ((rc = settle_stages(s, st, diag)) != 0)
        return rc;
    uint64_t kvb = kvshard_dtype__bytes(st->kv_dtype);
    kvshard__calc c = {false, false, false};
    if (st->mla) {
        uint64_t latent =
            kvshard__calc_mul(&c, (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim, kvb);
        uint64_t index = st->dsa ? (uint64_t)m->index_head_dim + (m->index_head_dim / 128) * 4 : 0;
        st->cell = kvshard__calc_mul(&c, kvshard__calc_add(&c, latent, index), st->layers);
        st->index_token = kvshard__calc_mul(&c, index, st->layers);
        /* fp8 DSA latents are counted as 576 bytes but stored as 656 (the
         * fp8 values with their scales); the engine's KV size adds the
         * indexer buffers. */
        st->pool_token = kvshard__calc_add(
            &c, kvshard__calc_mul(&c, st->dsa && kvb == 1 ? DSA_FP8_LATENT : latent, st->layers),
            st->index_token);
    } else {
        uint64_t h = m->full.heads / T ? m->full.heads / T : 1;
        st->k_token = kvshard__calc_mul(&c, kvshard__calc_mul(&c, h, m->full.k_dim),
                                        kvshard__calc_mul(&c, st->layers, kvb));
        st->cell = kvshard__calc_mul(&c, 2, st->k_token);
    }
    /* A pool's bytes are its layers' times one layer's. */
    st->binding_cell =
        kvshard__calc_mul(&c, st->cell / st->layers, st->stage_layers[st->binding_stage]);
    if (st->has_state) {
        if ((rc = ssm_dtype_of(&st->ssm_dtype, s, diag)) != 0)
            return rc;
        uint64_t conv = 0, temporal = 0;
        kvshard_profile__state_parts(&c, &conv, &temporal, &m->state, T, 0, 2,
                                     kvshard_dtype__bytes(st->ssm_dtype));
        st->conv_slot = kvshard__calc_mul(&c, conv, m->num_state);
        st->ssm_slot = kvshard__calc_mul(&c, temporal, m->num_state);
        st->slot = kvshard__calc_add(&c, st->conv_slot, st->ssm_slot);
        if (strategy == S_AUTO) {
            bool extra = from(st, &V_EXTRA_BUFFER) && st->radix && (st->overlap || st->page > 1) &&
                         kvshard_profile__type_is(s->model_type, extra_buffer_types);
            strategy = extra ? S_EXTRA_BUFFER : S_NO_BUFFER;
            if (!extra && from(st, &V_EXTRA_BUFFER))
                st->overlap = false;
        }
        st->strategy = strategy;
        st->ratio = !st->radix                                                       ? 1
                   : strategy == S_EXTRA_BUFFER && st->overlap                      ? 5
                   : strategy == S_EXTRA_BUFFER || strategy == S_EXTRA_BUFFER_LAZY ? 4
                                                                                   : 3;
        if (st->spec > 0 && st->requested == 0) {
            diag->option = "max_seqs";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                        "engine_input_missing",
                        "speculative decoding on a model with state layers needs "
                        "--max-running-requests");
        }
    }
    if (c.overflow) {
        diag->option = "engine";
        return fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW, "engine_unsupported",
                    "the engine's pool bytes overflow 64 bits");
    }
    /* A config with a vision_config is multimodal, unless told otherwise. */
    if (has_budget_inputs(s))
        st->multimodal = s->inputs[IN_MULTIMODAL].u != UNSET_BOOL ? s->inputs[IN_MULTIMODAL].u != 0
                                                                  : m->multimodal;
    o->block_size = st->page;
    return KVSHARD_OK;
}

/* The engine's layer split is its flags': kvshard's split rows other than
 * that one are not the engine's. */
static int check(const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    const kvshard_sglang__state *st = state_of(c->state);
    const kvshard_options *o = c->options;
    uint32_t want = st->split ? o->layerwise_split_size : 1;
    bool split = o->enable_layerwise_split && o->layerwise_split_size > 1;
    diag->option = "layerwise_split_size";
    if (st->split && c->split != want)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_split_unsupported",
                    "the engine splits the layers over --attn-cp-size %u ranks; split size %u is "
                    "not that split",
                    want, c->split);
    if (!st->split && split)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_split_unsupported",
                    "layerwise_split_size %u: the engine's only layer split is "
                    "--enable-dsa-cache-layer-split with --attn-cp-size",
                    o->layerwise_split_size);
    diag->option = "ownership";
    if (st->split && o->ownership != KVSHARD_OWNERSHIP_CONTIGUOUS)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_split_unsupported",
                    "the engine's layer split gives each rank a contiguous range of layers; "
                    "ownership %s is not it",
                    o->ownership == KVSHARD_OWNERSHIP_GLOBAL ? "global" : "ordinal");
    diag->option = NULL;
    return KVSHARD_OK;
}

/* ---- budget and capacity ------------------------------------------------------------- */

/* The rest, in GiB, from the device figures, as the engine works it out. */
static int device_rest(double *out, const kvshard_value *in, uint32_t world,
                       kvshard_diag__ctx *diag)
{
    uint64_t free_bytes = in[IN_DEVICE_FREE].u, non_kv = in[IN_NON_KV].u;
    double f = in[IN_FRACTION].d;
    if (non_kv == UINT64_MAX || !(f > 0.0)) {
        diag->option = non_kv == UINT64_MAX ? "non_kv_memory" : "mem_fraction_static";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the budget from device figures needs device_memory_free, non_kv_memory and "
                    "--mem-fraction-static (kvshard does not work out the engine's automatic "
                    "fraction)");
    }
    if (non_kv >= free_bytes) {
        diag->option = "non_kv_memory";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK, "not_enough_memory",
                    "non_kv_memory %llu bytes leaves nothing of device_memory_free %llu",
                    (unsigned long long)non_kv, (unsigned long long)free_bytes);
    }
    double pre = (double)free_bytes, post = (double)(free_bytes - non_kv);
    if (world > 1) { /* the engine takes the minimum over ranks as a float32 */
        pre = (double)(float)pre;
        post = (double)(float)post;
    }
    *out = post / GIB - pre / GIB * (1.0 - f);
    return KVSHARD_OK;
}

static int budget(uint64_t *out, bool *has, const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    *has = false;
    if (c->options->memory_per_rank) {
        *out = c->options->memory_per_rank;
        *has = true;
        return KVSHARD_OK;
    }
    if (!c->inputs[IN_DEVICE_FREE].u) {
        if (c->inputs[IN_NON_KV].u != UINT64_MAX) {
            diag->option = "device_memory_free";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                        "engine_input_missing",
                        "non_kv_memory needs device_memory_free (or give memory_per_rank)");
        }
        return KVSHARD_OK;
    }
    double rest = 0.0;
    int rc = device_rest(&rest, c->inputs, c->options->world_size, diag);
    if (rc)
        return rc;
    if (!(rest > 0.0)) {
        diag->option = "mem_fraction_static";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK, "not_enough_memory",
                    "device_memory_free %llu - non_kv_memory %llu leaves %.4f GiB after the "
                    "static fraction %g",
                    (unsigned long long)c->inputs[IN_DEVICE_FREE].u,
                    (unsigned long long)c->inputs[IN_NON_KV].u, rest, c->inputs[IN_FRACTION].d);
    }
    *out = (uint64_t)(rest * GIB);
    *has = true;
    return KVSHARD_OK;
}

/* A double floor as an integer count, 0 below zero. */
static int64_t floor_count(double x)
{
    double f = floor(x);
    return f < -9.0e18 ? INT64_MIN / 2 : f > 9.0e18 ? INT64_MAX / 2 : (int64_t)f;
}

static int capacity(kvshard__capacity *c, uint64_t *rank_blocks, const kvshard__capacity_inputs *in,
                    kvshard_diag__ctx *diag)
{
    const kvshard_sglang__state *st = state_of(in->state);
    const kvshard_options *o = in->options;
    uint64_t p = st->page;
    /* One figure for every rank: with stages the ranks keep kvshard's own
     * bytes a block of their stage. */
    c->has_bytes_per_block = st->stages == 1;
    c->bytes_per_block = p * st->cell;
    c->has_max_seqs = true;
    c->max_seqs = 0; /* null without a budget */
    if (!in->has_memory)
        return KVSHARD_OK;
    double rest = (double)in->memory / GIB;
    if (in->own_budget && o->memory_per_rank == 0) {
        int rc = device_rest(&rest, in->inputs, o->world_size, diag);
        if (rc)
            return rc;
    }
    c->has_budget = true;
    c->budget = in->own_budget && o->memory_per_rank == 0 ? (uint64_t)(rest * GIB) : in->memory;
    if (st->v17 && st->multimodal)
        rest -= 100.0 / 1024.0;
    int64_t K = 0;
    uint64_t pad = st->v17 ? 1 : 0;
    if (st->has_state) {
        double slot = (double)st->slot, s = (double)st->spec;
        uint64_t q = st->requested / st->dpdiv;
        bool case3 = false;
        if (st->mamba_size) {
            K = (int64_t)(st->mamba_size / st->dpdiv);
        } else if (!st->radix && st->requested) {
            K = (int64_t)q;
        } else {
            double mb = rest * st->mamba_ratio / (1.0 + st->mamba_ratio) * GIB;
            double per = st->spec ? slot * (1.0 + s / st->ratio) : slot;
            double room = st->v17 ? mb - slot * (1.0 + s) : mb;
            K = floor_count(room / per);
            case3 = true;
        }
        if (st->spec > 0) {
            uint64_t held = !case3 && !st->mamba_size ? (uint64_t)K
                            : q < (uint64_t)(K > 0 ? K : 0) / st->ratio
                                ? q
                                : (uint64_t)(K > 0 ? K : 0) / st->ratio;
            rest = rest - slot * (double)(held + pad) * s / GIB;
        }
        if (K <= 0) {
            diag->option = in->own_budget && o->memory_per_rank == 0 ? "mem_fraction_static"
                                                                     : "memory_per_rank";
            return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                        "mamba_cache_too_small",
                        "the state pool holds %lld slots of %llu bytes: the budget gives no "
                        "request its state",
                        (long long)K, (unsigned long long)st->slot);
        }
        rest = rest - (double)((uint64_t)K + pad) * slot / GIB;
    }
    double avail_d = trunc(rest * GIB);
    int64_t available = avail_d < -9.0e18 ? INT64_MIN / 2 : (int64_t)avail_d;
    int64_t tokens = available > 0 ? available / (int64_t)st->binding_cell : 0;
    tokens -= tokens % (int64_t)p;
    c->notes[NOTE_PROFILED_TOKENS] = tokens > 0 ? (uint64_t)tokens : 0;
    c->notes[NOTE_AVAILABLE] = available > 0 ? (uint64_t)available : 0;
    if (st->max_total && tokens > 0) {
        int64_t n = (int64_t)st->max_total;
        tokens = (n < tokens ? n : tokens);
        tokens -= tokens % (int64_t)p;
    }
    if ((st->v17 && available <= 0) || tokens <= 0) {
        diag->option =
            in->own_budget && o->memory_per_rank == 0 ? "mem_fraction_static" : "memory_per_rank";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK, "not_enough_memory",
                    "%lld bytes are left for the token pool, %llu bytes a token: no token fits",
                    (long long)available, (unsigned long long)st->binding_cell);
    }
    uint64_t T = (uint64_t)tokens;
    /* SGLang's estimate, clamped before it becomes an integer (a context
     * of 0 tokens would make it infinite). */
    double per_context = st->context ? (double)T / (double)st->context * 512.0 : 4096.0;
    uint64_t estimate = per_context > 4096.0 ? 4096 : (uint64_t)per_context;
    estimate = estimate < 2048 ? 2048 : estimate;
    uint64_t Rq;
    if (st->requested) {
        /* The flag alone at first, then capped by the estimate, then by
         * half the tokens. */
        uint64_t q = st->requested / st->dpdiv;
        uint64_t cap = from(st, &V_REQUESTS_BY_TOKENS) ? T / 2
                       : from(st, &V_REQUESTS_CAPPED)  ? estimate
                                                       : UINT64_MAX;
        Rq = q < cap ? q : cap;
    } else {
        Rq = estimate < T / 2 ? estimate : T / 2;
    }
    c->notes[NOTE_REQUESTS_BEFORE_STATE] = Rq;
    c->notes[NOTE_ESTIMATE] = estimate;
    uint64_t Rr = Rq;
    if (st->has_state && (uint64_t)K / st->ratio < Rr)
        Rr = (uint64_t)K / st->ratio;
    if (Rr == 0) {
        diag->option = st->mamba_size               ? "max_mamba_cache_size"
                       : st->requested && !st->radix ? "max_seqs"
                                                   : "memory_per_rank";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                    "max_running_requests_zero",
                    "the state pool of %lld slots serves no request at %u slots a request",
                    (long long)K, st->ratio);
    }
    c->has_num_blocks = true;
    c->num_blocks = T / p;
    c->max_tokens = T;
    c->max_seqs = Rr;
    if (st->has_state) {
        c->has_state_slots = true;
        c->state_slots = (uint64_t)K + 1;
        c->usable_state_slots = (uint64_t)K;
    }
    uint32_t first = kvshard_capacity__first_rank(in), end = kvshard_capacity__end_rank(in);
    for (uint32_t r = first; rank_blocks && r < end; r++)
        rank_blocks[r] = c->num_blocks;
    if (in->context_length == 0)
        return KVSHARD_OK;
    uint64_t per = kvshard__ceil_div(in->context_length, p) * p;
    uint64_t fit = T / per;
    if (st->has_state && (uint64_t)K / st->ratio < fit)
        fit = (uint64_t)K / st->ratio;
    c->has_concurrency = true;
    c->concurrency = fit < Rr ? fit : Rr;
    return KVSHARD_OK;
}

/* ---- figures, warnings and wording ----------------------------------------------------- */

static const char *strategy_name(int strategy)
{
    return strategy_words[strategy].text;
}

/* The engine's word for the KV dtype it runs: its one-byte default is
 * fp8_e4m3. */
static const char *kv_dtype_name(kvshard_dtype kv)
{
    return kv == KVSHARD_DTYPE_FP8 ? "fp8_e4m3" : kvshard_dtype_name(kv);
}

static uint64_t stage_tokens(const kvshard_sglang__state *st, const kvshard__capacity *c,
                             uint32_t stage);

/* A figure of stage 0's layers (what the state keeps) for `stage`'s. */
static uint64_t of_stage(const kvshard_sglang__state *st, uint64_t stage0, uint32_t stage)
{
    return stage0 / st->layers * st->stage_layers[stage];
}

/* engine.stages: each stage's cell and the tokens it would hold alone, and
 * its pools at the count every stage runs with. */
static void stage_figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_sglang__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    bool pool = c->has_num_blocks;
    uint64_t slots = pool ? c->max_tokens + st->page : 0;
    kvshard_profile__json_begin(f);
    for (uint32_t s = 0; s < st->stages && s < v->num_stages; s++) {
        kvshard_profile__json_object(f);
        kvshard_profile__json_uint(f, "stage", true, s);
        kvshard_profile__json_uint(f, "layer_first", true, v->stages[s].first);
        kvshard_profile__json_uint(f, "layer_count", true, v->stages[s].count);
        kvshard_profile__json_uint(f, "kv_layers", true, st->stage_layers[s]);
        kvshard_profile__json_uint(f, "cell_bytes", true, of_stage(st, st->cell, s));
        kvshard_profile__json_uint(f, "max_total_num_tokens", pool,
                                   pool ? stage_tokens(st, c, s) : 0);
        kvshard_profile__json_uint(f, "k_cache_bytes", pool && !st->mla,
                                   slots * of_stage(st, st->k_token, s));
        kvshard_profile__json_uint(f, "v_cache_bytes", pool && !st->mla,
                                   slots * of_stage(st, st->k_token, s));
        kvshard_profile__json_uint(f, "kv_cache_bytes", pool && st->mla,
                                   slots * of_stage(st, st->pool_token, s));
        kvshard_profile__json_object_end(f);
    }
    kvshard_profile__json_end(f, "stages");
}

static void figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_sglang__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    bool pool = c->has_num_blocks, state = st->has_state && pool;
    uint64_t K = c->usable_state_slots, slots = pool ? c->max_tokens + st->page : 0;
    kvshard_profile__fig_uint(f, "budget", c->has_budget, c->budget);
    kvshard_profile__fig_text(f, "mamba_radix_cache_strategy",
                              st->has_state ? strategy_name(st->strategy) : NULL);
    kvshard_profile__fig_uint(f, "mamba_ratio", st->has_state, st->ratio);
    kvshard_profile__fig_uint(f, "max_mamba_cache_size", state, K);
    kvshard_profile__fig_uint(f, "mamba_pool_slots", state, K + 1);
    kvshard_profile__fig_uint(f, "mamba_bytes_per_slot", st->has_state, st->slot);
    kvshard_profile__fig_uint(f, "conv_state_bytes", state, (K + 1) * st->conv_slot);
    kvshard_profile__fig_uint(f, "ssm_state_bytes", state, (K + 1) * st->ssm_slot);
    kvshard_profile__fig_text(f, "ssm_dtype",
                              st->has_state ? kvshard_dtype_name(st->ssm_dtype) : NULL);
    kvshard_profile__fig_uint(f, "cell_bytes", true, st->cell);
    kvshard_profile__fig_uint(f, "page_size", true, st->page);
    kvshard_profile__fig_uint(f, "max_total_num_tokens", pool, c->max_tokens);
    kvshard_profile__fig_uint(f, "k_cache_bytes", pool && !st->mla, slots * st->k_token);
    kvshard_profile__fig_uint(f, "v_cache_bytes", pool && !st->mla, slots * st->k_token);
    kvshard_profile__fig_uint(f, "kv_cache_bytes", pool && st->mla, slots * st->pool_token);
    kvshard_profile__fig_uint(f, "max_running_requests", pool, c->max_seqs);
    kvshard_profile__fig_uint(f, "context_len", st->context > 0, st->context);
    kvshard_profile__fig_bool(f, "layer_split", st->split);
    kvshard_profile__fig_uint(f, "split_layers_per_rank", st->split, st->layers);
    kvshard_profile__fig_text(f, "kv_cache_dtype", kv_dtype_name(st->kv_dtype));
    kvshard_profile__fig_uint(f, "indexer_bytes", pool && st->dsa, slots * st->index_token);
    kvshard_profile__fig_uint(f, "pp_size", true, st->stages);
    kvshard_profile__fig_partition(f, "pp_partition", v);
    stage_figures(f, v);
}

static void warnings(kvshard_profile__warn_fn sink, void *ctx, const kvshard_profile__view *v)
{
    const kvshard_sglang__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    char message[240];
    if (st->dsa && st->page_asked && st->page_asked != st->page) {
        snprintf(message, sizeof message,
                 "--page-size %u: the engine runs a DSA model with pages of %u tokens", st->page_asked,
                 st->page);
        sink(ctx, KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN, message);
    }
    if (!c->has_num_blocks)
        return;
    if (st->max_total && st->max_total > c->notes[NOTE_PROFILED_TOKENS]) {
        snprintf(message, sizeof message,
                 "--max-total-tokens %llu is above the %llu tokens the budget holds: the engine "
                 "keeps %llu",
                 (unsigned long long)st->max_total,
                 (unsigned long long)c->notes[NOTE_PROFILED_TOKENS],
                 (unsigned long long)c->max_tokens);
        sink(ctx, KVSHARD_WARN_ENGINE_MAX_TOTAL_TOKENS_ABOVE_PROFILE, message);
    }
    if (st->has_state && c->notes[NOTE_REQUESTS_BEFORE_STATE] > c->max_seqs) {
        snprintf(message, sizeof message,
                 "max_running_requests %llu is capped at %llu: the state pool's %llu slots hold "
                 "%u a running request",
                 (unsigned long long)c->notes[NOTE_REQUESTS_BEFORE_STATE],
                 (unsigned long long)c->max_seqs, (unsigned long long)c->usable_state_slots,
                 st->ratio);
        sink(ctx, KVSHARD_WARN_ENGINE_MAX_RUNNING_REQUESTS_CAPPED, message);
    }
}

static void unreachable(char *buf, size_t cap, const kvshard_profile__view *v)
{
    const kvshard_sglang__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    const kvshard_options *o = v->options;
    snprintf(buf, cap,
             "at %u tokens %llu %s at once, below max_running_requests %llu: the "
             "pool's %llu tokens hold %llu of that length",
             o->context_length, (unsigned long long)c->concurrency,
             c->concurrency == 1 ? "sequence runs" : "sequences run",
             (unsigned long long)c->max_seqs, (unsigned long long)c->max_tokens,
             (unsigned long long)(c->max_tokens /
                                  (kvshard__ceil_div(o->context_length, st->page) * st->page)));
}

static void gb(char *buf, size_t cap, uint64_t bytes)
{
    kvshard_profile__gib(buf, cap, bytes);
}

/* The tokens one stage's pool would hold on its own, before the engine
 * takes the fewest over the stages. */
static uint64_t stage_tokens(const kvshard_sglang__state *st, const kvshard__capacity *c,
                             uint32_t stage)
{
    uint64_t cell = of_stage(st, st->cell, stage);
    uint64_t tokens = c->notes[NOTE_AVAILABLE] / cell;
    tokens -= tokens % st->page;
    if (st->max_total && st->max_total < tokens)
        tokens = st->max_total - st->max_total % st->page;
    return tokens;
}

/* One line a stage: its layers, its bytes a token and the tokens it would
 * hold alone; the engine runs every stage with the fewest. */
static void write_stages(const kvshard__printer *p, const kvshard_sglang__state *st,
                         const kvshard__capacity *c)
{
    uint32_t first = 0;
    for (uint32_t s = 0; st->stages > 1 && s < st->stages; s++) {
        uint32_t n = st->stage_layers[s];
        kvshard_format__printf(p,
                               "           stage %u: layers %u-%u, %llu bytes a token, %llu "
                               "tokens%s\n",
                               s, first, first + n - 1,
                               (unsigned long long)of_stage(st, st->cell, s),
                               (unsigned long long)stage_tokens(st, c, s),
                               s == st->binding_stage ? " (binds: every stage runs with it)" : "");
        first += n;
    }
}

static void write_capacity(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard_sglang__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    char a[32], b[32];
    kvshard_format__printf(p, "capacity   sglang %s profile: ", v->version);
    if (!c->has_num_blocks) {
        kvshard_format__text(p, "no budget: give `--memory_per_rank`, or `--device_memory_free`, "
                                "`--non_kv_memory` and `--mem-fraction-static`\n");
        return;
    }
    gb(a, sizeof a, c->budget);
    kvshard_format__printf(p, "budget %s GiB per rank (the rest after mem_fraction_static)", a);
    if (st->has_state)
        kvshard_format__printf(p, "; %s, %u state slots per request", strategy_name(st->strategy),
                               st->ratio);
    kvshard_format__text(p, "\n");
    uint64_t K = c->usable_state_slots, slots = c->max_tokens + st->page;
    if (st->has_state) {
        gb(a, sizeof a, (K + 1) * st->conv_slot);
        gb(b, sizeof b, (K + 1) * st->ssm_slot);
        kvshard_format__printf(p,
                               "           the engine logs Mamba Cache is allocated. "
                               "max_mamba_cache_size: %llu, conv_state size: %sGB, ssm_state "
                               "size: %sGB\n",
                               (unsigned long long)K, a, b);
    }
    if (st->mla) {
        gb(a, sizeof a, slots * st->pool_token);
        kvshard_format__printf(p,
                               "           the engine logs KV Cache is allocated. #tokens: %llu, "
                               "KV size: %s GB\n",
                               (unsigned long long)c->max_tokens, a);
    } else {
        gb(a, sizeof a, slots * st->k_token);
        kvshard_format__printf(p,
                               "           the engine logs KV Cache is allocated. #tokens: %llu, "
                               "K size: %s GB, V size: %s GB\n",
                               (unsigned long long)c->max_tokens, a, a);
    }
    kvshard_format__printf(p,
                           "           the engine logs max_total_num_tokens=%llu, "
                           "max_running_requests=%llu, context_len=%u\n",
                           (unsigned long long)c->max_tokens, (unsigned long long)c->max_seqs,
                           st->context);
    write_stages(p, st, c);
}

static void report_rows(const kvshard__printer *p, const kvshard_profile__view *v, bool tail)
{
    const kvshard_sglang__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    if (tail) {
        if (!c->has_num_blocks)
            return;
        kvshard_format__row(p, "the engine logs");
        kvshard_format__printf(p,
                               "max_total_num_tokens=%llu, max_running_requests=%llu, "
                               "context_len=%u",
                               (unsigned long long)c->max_tokens, (unsigned long long)c->max_seqs,
                               st->context);
        kvshard_format__row_end(p);
        return;
    }
    kvshard_format__row(p, "budget per rank");
    kvshard_format__bytes(p, c->budget);
    kvshard_format__printf(p, " (the rest after mem_fraction_static), sglang %s profile",
                           v->version);
    kvshard_format__row_end(p);
    if (st->has_state && c->has_num_blocks) {
        kvshard_format__row(p, "Mamba cache");
        kvshard_format__printf(p, "max_mamba_cache_size %llu (%s, %u state slots a request), ",
                               (unsigned long long)c->usable_state_slots,
                               strategy_name(st->strategy), st->ratio);
        kvshard_format__bytes(p, (c->usable_state_slots + 1) * st->slot);
        kvshard_format__row_end(p);
    }
}

/* The flags a launch line of fit repeats when given: they change what the
 * engine allocates. */
static const char *const fit_repeated[] = {
    "mamba_radix_cache_strategy", "disable_radix_cache", "disable_overlap_schedule",
    "mamba_full_memory_ratio",    "max_total_tokens",    "chunked_prefill_size",
    NULL};

/* Under fit --engine, the fraction fit wrote or was given. */
static double fit_utilization(const kvshard_value *given, const kvshard_profile__state *state)
{
    (void)state;
    return given[IN_FRACTION].d;
}

/* The layout as SGLang's command line: its TP group holds the DP ranks (DP
 * attention), and it refuses stages with speculative decoding and has no
 * layerwise split. Its memory fraction measures another share: not given. */
static int recommend(char *buf, size_t cap, const kvshard_profile__layout *l, bool env)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    if (l->split > 1 || (l->pp > 1 && l->drafts))
        return KVSHARD_EUNSUPPORTED;
    if (env) {
        char counts[2048];
        kvshard_profile__partition_text(counts, sizeof counts, l);
        if (l->pp > 1)
            kvshard_profile__arg(buf, cap, &used, "%s=%s",
                                 kvshard_profile__sglang.dialect.partition_env, counts);
        return (int)used;
    }
    kvshard_profile__arg(buf, cap, &used, "--tp-size=%u", l->dp * l->tp);
    if (l->dp > 1) {
        kvshard_profile__arg(buf, cap, &used, "--dp-size=%u", l->dp);
        kvshard_profile__arg(buf, cap, &used, "--enable-dp-attention");
    }
    if (l->pp > 1)
        kvshard_profile__arg(buf, cap, &used, "--pp-size=%u", l->pp);
    if (l->engine_fraction)
        kvshard_profile__arg(buf, cap, &used, "--mem-fraction-static=%s", l->engine_fraction);
    if (l->expert_parallel)
        kvshard_profile__arg(buf, cap, &used, "--ep-size=%u", l->dp * l->tp);
    if (kvshard_dtype__is_fp8(l->kv_cache_dtype))
        kvshard_profile__arg(buf, cap, &used, "--kv-cache-dtype=%s",
                             kv_dtype_name(l->kv_cache_dtype));
    if (l->context_length) {
        kvshard_profile__arg(buf, cap, &used, "--context-length=%u", l->context_length);
        kvshard_profile__arg(buf, cap, &used, "--max-running-requests=%llu",
                             (unsigned long long)(l->dp * l->seqs_per_replica));
    }
    if (l->state_slots)
        kvshard_profile__arg(buf, cap, &used, "--max-mamba-cache-size=%llu",
                             (unsigned long long)l->state_slots);
    return (int)used;
}

/* ---- stages and ranks ---------------------------------------------------------------- */

/* SGLang gives the extra layers to the last stages. */
static int partition(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err)
{
    (void)err;
    uint32_t r = layers % stages;
    for (uint32_t s = 0; s < stages; s++)
        counts[s] = layers / stages + (s >= stages - r);
    return KVSHARD_OK;
}

/* Global ranks: pp, dp, cp, tp. */
static const kvshard_profile__rules rules = {
    KVSHARD_PP_RULE_SGLANG,
    partition,
    "SGLang refuses pipeline stages together with speculative decoding",
    KVSHARD_RANK_LAYOUT_SGLANG,
    {KVSHARD_PROFILE__PP, KVSHARD_PROFILE__DP, KVSHARD_PROFILE__CP, KVSHARD_PROFILE__TP},
    true,
};

/* Mooncake, P pushing: its rules in the order the documentation lists them.
 * SGLang's split is kvshard's contiguous rule on DSA models, on prefill
 * workers only. */
static void transfer_verdict(kvshard_profile__verdict *v, const kvshard_profile__pair *pair)
{
    const uint32_t *T = pair->tp;
    if (pair->split[1] > 1)
        kvshard_verdicts__refuse(v, "sglang_d_split",
                                 "D splits layers (S %u): SGLang splits on prefill workers only",
                                 pair->split[1]);
    if (pair->split[0] > 1 &&
        !(pair->state[0]->sglang.dsa && pair->ownership[0] == KVSHARD_OWNERSHIP_CONTIGUOUS))
        kvshard_verdicts__refuse(v, "sglang_p_split",
                                 "P splits layers (S %u): SGLang splits DSA models by the "
                                 "contiguous rule only",
                                 pair->split[0]);
    if (pair->pp[1] != 1 && pair->pp[1] != pair->pp[0])
        kvshard_verdicts__refuse(v, "sglang_pp",
                                 "D has %u pipeline stages and P %u: D's must be 1 or P's",
                                 pair->pp[1], pair->pp[0]);
    if (pair->block[0] != pair->block[1])
        kvshard_verdicts__refuse(v, "sglang_page", "the pages differ: %u on P, %u on D",
                                 pair->block[0], pair->block[1]);
    if (T[0] % T[1] != 0 && T[1] % T[0] != 0)
        kvshard_verdicts__refuse(v, "sglang_tp_ratio",
                                 "TP %u on P and %u on D: neither divides the other", T[0], T[1]);
}

const kvshard__profile kvshard_profile__sglang = {
    .name = "sglang",
    .engine = KVSHARD_ENGINE_SGLANG,
    .defaults.block_size = 1,
    .defaults.max_seqs = 256,
    .defaults.ownership = KVSHARD_OWNERSHIP_CONTIGUOUS,
    .defaults.pp_rule = KVSHARD_PP_RULE_SGLANG,
    .defaults.rank_layout = KVSHARD_RANK_LAYOUT_SGLANG,
    /* SGLang's DSA cache layer split broadcasts whole layers ahead of use. */
    .comm.decode = KVSHARD__COMM_FULL_LAYER,
    .comm.prefill = KVSHARD__COMM_FULL_LAYER,
    .device.total_input = "device_memory_free", /* a fresh GPU: all of it is free */
    .device.utilization_input = "mem_fraction_static",
    .device.fill_input = "non_kv_memory",
    .dialect.aliases = aliases,
    .dialect.inputs = inputs,
    .dialect.flag_style = KVSHARD_PROFILE__ARGPARSE,
    .dialect.ignored_options = ignored_options,
    .versions = &versions,
    .counting.counts_draft_layers = false,
    .counting.ranks_by_balanced = false,
    .counting.sizes_without_budget = true,
    .hooks.settle = settle,
    .hooks.check = check,
    .hooks.budget = budget,
    .hooks.capacity = capacity,
    .hooks.figures = figures,
    .hooks.warnings = warnings,
    .voice.budget_label = "budget",
    .voice.named_in_headers = true,
    .voice.no_budget_hint = "sglang profile: no budget: give `--memory_per_rank`, or "
                            "`--device_memory_free`, `--non_kv_memory` and `--mem-fraction-static`",
    .voice.write_capacity = write_capacity,
    .dialect.recommend = recommend,
    .dialect.partition_env = "SGLANG_PP_LAYER_PARTITION",
    .voice.report_rows = report_rows,
    .voice.unreachable = unreachable,
    .rules = &rules,
    /* SGLang's automatic fraction depends on the GPU, the CUDA-graph sizes
     * and the chunked prefill, which kvshard does not model: fit assumes
     * 0.9 and says so. */
    .fitting.utilization = fit_utilization,
    .fitting.assumed_fraction = 0.9,
    .fitting.replicas_input = "enable_dp_attention",
    .fitting.limit_counts_replicas = true,
    .fitting.state_slots_input = "max_mamba_cache_size",
    .fitting.repeated = fit_repeated,
    .transfer_verdict = transfer_verdict,
};
