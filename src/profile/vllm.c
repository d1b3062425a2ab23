/* The vllm profile: what vLLM's V1 engine allocates on one GPU, from the
 * engine's own rules at the release named, so that kvshard prints the
 * figures the engine logs at start-up: the attention block size (raised so
 * that one state page fits a block of full-attention pages), the page
 * padding, the KV cache groups (layers of one type in groups of one size,
 * padded with layers that cost memory as real ones), the number of GPU
 * blocks of the shared pool (block 0 is the null block), "GPU KV cache
 * size: N tokens" and "Maximum concurrency for L tokens per request: C.CCx".
 * Every figure is one GPU's: all ranks of a vLLM engine allocate the same.
 *
 * Rules that changed between releases hold from the release named in the
 * V_* constants below. */
#include "profile/vllm.h"

#include "profile/capacity.h"
#include "profile/verdicts.h"

#include "model/states.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define PROFILE (&kvshard_profile__vllm)

/* ---- the releases whose rules differ ------------------------------------------------ */

static const kvshard_profile__versions versions = {"0.28.0", KVSHARD_V(0, 9, 0),
                                                   KVSHARD_V(0, 28, 0)};

static const kvshard_versions__v V_STATE_MODELS = KVSHARD_V(0, 10, 2); /* hybrid models served */
static const kvshard_versions__v V_STAGE_GROUPS = KVSHARD_V(0, 11, 0); /* stages project groups */
static const kvshard_versions__v V_MODE_ALL = KVSHARD_V(0, 11, 1);     /* Mamba cache mode all */
static const kvshard_versions__v V_ONE_LINE = KVSHARD_V(0, 11, 1); /* stages log their lines once */
static const kvshard_versions__v V_NEMOTRON_F16 = KVSHARD_V(0, 13, 0); /* NemotronH state f16 */
static const kvshard_versions__v V_BUDGET_CEIL = KVSHARD_V(0, 14, 0);  /* requested = ceil */
static const kvshard_versions__v V_MODE_ALIGN = KVSHARD_V(0, 15, 0);   /* Mamba cache mode align */
static const kvshard_versions__v V_WHOLE_CHECK = KVSHARD_V(0, 14, 0); /* check: the whole model */
/* check: each worker's projected groups again (and 0.16.0, not its nightlies) */
static const kvshard_versions__v V_WORKER_CHECK = KVSHARD_V_RC_DEV(0, 15, 2, 1, 172);
static const kvshard_versions__v V_QWEN3_5 = KVSHARD_V(0, 17, 0);      /* Qwen3.5 served */
static const kvshard_versions__v V_GROUP_1_5 = KVSHARD_V(0, 18, 0);    /* 1.5x group rule, graphs */
static const kvshard_versions__v V_SEQS_ERROR = KVSHARD_V(0, 19, 0);   /* max_num_seqs refused */
static const kvshard_versions__v V_0_20 = KVSHARD_V(0, 20, 0); /* u 0.92, f32, align, line */
static const kvshard_versions__v V_TOKENS = KVSHARD_V_RC_DEV(0, 20, 1, 1, 31); /* tokens line */
static const kvshard_versions__v V_PREFIX_ON = KVSHARD_V(0, 27, 0); /* prefix caching on */

/* ---- inputs -------------------------------------------------------------------------- */

enum {
    IN_VERSION,
    IN_TP,
    IN_DP,
    IN_MAX_MODEL_LEN,
    IN_BATCHED,
    IN_UTILIZATION,
    IN_BLOCKS_OVERRIDE,
    IN_DTYPE,
    IN_MAMBA_DTYPE,
    IN_PREFIX,
    IN_MODE,
    IN_MAMBA_BLOCK,
    IN_EAGER,
    IN_DRAFT_CONFIG,
    IN_DRAFT_LAYERS,
    IN_DEVICE_TOTAL,
    IN_DEVICE_FREE,
    IN_NON_KV,
    IN_DECODE_CP,
    IN_PREFILL_CP,
};

enum { MODE_NONE, MODE_ALIGN, MODE_ALL };
/* The types of cache layer, each its own KV cache groups. */
enum { TYPE_FULL, TYPE_SLIDING, TYPE_STATE };
/* The start-up memory check: each worker's own cache layers without padding
 * layers; the whole model's first group against the smallest budget; each
 * worker's projected first group; each worker's projected groups. */
/* What capacity keeps in kvshard__capacity.notes. */
enum { NOTE_CHECK_NEED, NOTE_CHECK_BUDGET, NOTE_BINDING };
enum { CHECK_WORKER_LAYERS, CHECK_WHOLE_MODEL, CHECK_WORKER_FIRST_GROUP, CHECK_WORKER_GROUPS };
#define UNSET_WORD ((uint64_t)(int64_t)-1)
#define UNSET_BOOL 2u

static const kvshard_value__word model_len_words[] = {{"-1", -1}, {"auto", -2}, {NULL, 0}};
static const kvshard_value__word dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},
    {"bfloat16", KVSHARD_DTYPE_BF16},
    {"float16", KVSHARD_DTYPE_FP16},
    {"half", KVSHARD_DTYPE_FP16},
    {"float32", KVSHARD_DTYPE_FP32},
    {"float", KVSHARD_DTYPE_FP32},
    {NULL, 0},
};
static const kvshard_value__word state_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},
    {"float32", KVSHARD_DTYPE_FP32},
    {"bfloat16", KVSHARD_DTYPE_BF16},
    {"float16", KVSHARD_DTYPE_FP16},
    {NULL, 0},
};
/* One byte without scales in the page for every fp8 word; fp8_ds_mla is
 * fp8 too. */
static const kvshard_value__word kv_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},
    {"bfloat16", KVSHARD_DTYPE_BF16},
    {"bf16", KVSHARD_DTYPE_BF16},
    {"float16", KVSHARD_DTYPE_FP16},
    {"fp16", KVSHARD_DTYPE_FP16},
    {"half", KVSHARD_DTYPE_FP16},
    {"fp8", KVSHARD_DTYPE_FP8},
    {"fp8_e4m3", KVSHARD_DTYPE_FP8},
    {"fp8_e5m2", KVSHARD_DTYPE_FP8_E5M2},
    {"fp8_ds_mla", KVSHARD_DTYPE_FP8},
    {NULL, 0},
};
static const kvshard_value__word mode_words[] = {
    {"none", MODE_NONE}, {"align", MODE_ALIGN}, {"all", MODE_ALL}, {NULL, 0}};

static const kvshard_value__fields spec_fields = {"method", "num_speculative_tokens", 1024};
static const kvshard_value__more spec_more = {NULL, &spec_fields, false};

#define R KVSHARD_ERANGE
#define NO_VALUE                                                                                   \
    {                                                                                              \
        0, 0.0, NULL, 0                                                                            \
    }
static const kvshard_profile__input inputs[] = {
    [IN_VERSION] = KVSHARD_VERSIONS__INPUT,
    [IN_TP] = {{"tensor_parallel_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL,
                true, NULL, NULL},
               NO_VALUE,
               "world_size / dp_size"},
    [IN_DP] = {{"data_parallel_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL,
                true, NULL, NULL},
               NO_VALUE,
               "dp_size"},
    [IN_MAX_MODEL_LEN] = {{"max_model_len", KVSHARD__VT_U32, 1, KVSHARD_MAX_CONTEXT_LENGTH, R, true,
                           model_len_words, NULL},
                          NO_VALUE,
                          "max_position_embeddings"},
    [IN_BATCHED] = {{"max_num_batched_tokens", KVSHARD__VT_U32, 1, 1u << 30, R, false, NULL, NULL},
                    {8192, 0.0, NULL, 0},
                    NULL},
    [IN_UTILIZATION] = {{"gpu_memory_utilization", KVSHARD__VT_FRACTION, 0, 1, R, false, NULL,
                         NULL},
                        NO_VALUE,
                        "0.92 (0.9 before 0.20.0)"},
    [IN_BLOCKS_OVERRIDE] = {{"num_gpu_blocks_override", KVSHARD__VT_U32, 1, 1u << 31, R, true, NULL,
                             NULL},
                            NO_VALUE,
                            "none"},
    [IN_DTYPE] = {{"dtype", KVSHARD__VT_WORD, 0, 0, R, false, dtype_words, NULL},
                  {KVSHARD_DTYPE_AUTO, 0.0, NULL, 0},
                  NULL},
    [IN_MAMBA_DTYPE] = {{"mamba_cache_dtype", KVSHARD__VT_WORD, 0, 0, R, false, state_dtype_words,
                         NULL},
                        {KVSHARD_DTYPE_AUTO, 0.0, NULL, 0},
                        NULL},
    [IN_PREFIX] = {{"enable_prefix_caching", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                   {UNSET_BOOL, 0.0, NULL, 0},
                   "by model and version"},
    [IN_MODE] = {{"mamba_cache_mode", KVSHARD__VT_WORD, 0, 0, R, true, mode_words, NULL},
                 {UNSET_WORD, 0.0, NULL, 0},
                 "by model and version"},
    [IN_MAMBA_BLOCK] = {{"mamba_block_size", KVSHARD__VT_U32, 1, 1u << 24, R, true, NULL, NULL},
                        NO_VALUE,
                        "the model's chunk size"},
    [IN_EAGER] = {{"enforce_eager", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                  {0, 0.0, NULL, 0},
                  NULL},
    [IN_DRAFT_CONFIG] = {{"speculative_config", KVSHARD__VT_OBJECT, 0, 0, R, false, NULL,
                          &spec_more},
                         NO_VALUE,
                         "none"},
    [IN_DRAFT_LAYERS] = {{"draft_attention_layers", KVSHARD__VT_U32, 0, KVSHARD__MAX_DRAFT_LAYERS,
                          R, false, NULL, NULL},
                         {UINT64_MAX, 0.0, NULL, 0},
                         "by method"},
    [IN_DEVICE_TOTAL] = {{"device_memory_total", KVSHARD__VT_BYTES, 1, UINT64_MAX, R, true, NULL,
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
    /* Context parallelism the profile does not cover: read so that it is
     * refused, never skipped. */
    [IN_DECODE_CP] = {{"decode_context_parallel_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS,
                       KVSHARD_EPARALLEL, false, NULL, NULL},
                      {1, 0.0, NULL, 0},
                      NULL},
    [IN_PREFILL_CP] = {{"prefill_context_parallel_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS,
                        KVSHARD_EPARALLEL, false, NULL, NULL},
                       {1, 0.0, NULL, 0},
                       NULL},
    {{NULL, KVSHARD__VT_U32, 0, 0, 0, false, NULL, NULL}, NO_VALUE, NULL},
};
#undef R
#undef NO_VALUE

/* vLLM's names for kvshard's keys, as argparse spells them once '-' is
 * '_' (and its one-dash short forms). */
static const kvshard_profile__alias aliases[] = {
    {"tp", "tensor_parallel_size", NULL},
    {"dp", "data_parallel_size", NULL},
    {"pp", "pp_size", NULL},
    {"pipeline_parallel_size", "pp_size", NULL},
    {"dcp", "decode_context_parallel_size", NULL},
    {"pcp", "prefill_context_parallel_size", NULL},
    {"max_num_seqs", "max_seqs", NULL},
    {"kv_cache_memory_bytes", "memory_per_rank", NULL},
    {"kv_cache_dtype", "kv_cache_dtype", kv_dtype_words},
    {"mamba_ssm_cache_dtype", "state_dtype", state_dtype_words},
    {NULL, NULL, NULL},
};

/* ---- what settling works out --------------------------------------------------------- */

/* Why prefix caching was turned off, or a mode asked for was changed. */
enum { PC_KEPT, PC_BEFORE_ALL, PC_BEFORE_ALIGN };
enum { MODE_KEPT, MODE_NO_ALL_SUPPORT, MODE_DRAFTING };

static const kvshard_vllm__state *state_of(const kvshard_profile__state *s)
{
    return &s->vllm;
}

static bool from(const kvshard_vllm__state *st, const kvshard_versions__v *v)
{
    return kvshard_versions__from(&st->version, v);
}

static int fail(kvshard_diag__ctx *diag, const char *const *about, int code, const char *name,
                const char *fmt, ...) KVSHARD__PRINTF(5, 6);

/* "vllm profile: NAME: ...", the message of every refusal. */
static int fail(kvshard_diag__ctx *diag, const char *const *about, int code, const char *name,
                const char *fmt, ...)
{
    char text[KVSHARD_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return kvshard_diag__fail(diag, about, code, "vllm profile: %s: %s", name, text);
}

static const uint32_t covered_kinds =
    1u << KVSHARD_LAYER_FULL_ATTENTION | 1u << KVSHARD_LAYER_SLIDING_ATTENTION |
    1u << KVSHARD_LAYER_LINEAR_ATTENTION | 1u << KVSHARD_LAYER_NO_CACHE;
static const kvshard_state_kind covered_states[] = {KVSHARD_STATE_GDN, KVSHARD_STATE_MAMBA2,
                                                    KVSHARD_STATE_SHORT_CONV, KVSHARD_STATE_NONE};

static const char *const nemotron_types[] = {"nemotron_h", NULL};
static const char *const qwen3_5_types[] = {"qwen3_5", "qwen3_5_moe", "qwen3_5_text",
                                            "qwen3_5_moe_text", NULL};
/* Models whose Mamba2 state vLLM can cache at every chunk (mode all). */
static const char *const all_mode_types[] = {
    "nemotron_h", "granitemoehybrid", "bamba", "falcon_h1", "zamba2", "mamba", "mamba2", NULL};

/* What the engine covers: the kinds it plans are listed, so that a kind
 * added to kvshard later is refused until it is named here. */
static int check_coverage(const kvshard_profile__settling *s, const kvshard_vllm__state *st,
                          kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
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
                        "state kind %s is not covered yet (GDN, Mamba2 and short convolution "
                        "are)",
                        kvshard_state_kind_name(m->state.kind));
    }
    bool mla = m->attention == KVSHARD_ATTENTION_MLA;
    if (mla && (m->num_state > 0 || m->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "%s layers next to MLA layers are not covered yet",
                    m->num_state > 0 ? "state" : "sliding-window");
    if (m->num_state > 0 && m->count[KVSHARD_LAYER_FULL_ATTENTION] == 0)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "a model with state layers and no full-attention layer is not covered yet");
    diag->option = "engine_version";
    if (m->num_state > 0 && !from(st, &V_STATE_MODELS))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "vLLM %s does not serve models with state layers in the profile's range; "
                    "they are covered from 0.10.2",
                    kvshard_versions__text_of(&st->version).s);
    if (kvshard_profile__type_is(s->model_type, qwen3_5_types) && !from(st, &V_QWEN3_5))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "vLLM %s does not serve Qwen3.5 (%s) models; they are covered from 0.17.0",
                    kvshard_versions__text_of(&st->version).s, s->model_type);
    diag->option = s->inputs[IN_DECODE_CP].u > 1 ? "decode_context_parallel_size"
                                                 : "prefill_context_parallel_size";
    if (s->inputs[IN_DECODE_CP].u > 1 || s->inputs[IN_PREFILL_CP].u > 1)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "--%s %llu: decode and prefill context parallelism are not covered yet",
                    s->inputs[IN_DECODE_CP].u > 1 ? "decode-context-parallel-size"
                                                  : "prefill-context-parallel-size",
                    (unsigned long long)(s->inputs[IN_DECODE_CP].u > 1
                                             ? s->inputs[IN_DECODE_CP].u
                                             : s->inputs[IN_PREFILL_CP].u));
    diag->option = "max_model_len";
    if ((int64_t)s->inputs[IN_MAX_MODEL_LEN].u < 0)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "--max-model-len %s (the engine's own choice of length) is not covered: give "
                    "the length",
                    (int64_t)s->inputs[IN_MAX_MODEL_LEN].u == -1 ? "-1" : "auto");
    diag->option = "kv_cache_dtype";
    if (s->options->kv_cache_dtype == KVSHARD_DTYPE_INT8)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "kv_cache_dtype int8 (scales per token and head) is not covered");
    diag->option = "cp_size";
    if (s->options->cp_size > 1)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "cp_size %u: context parallelism is not covered", s->options->cp_size);
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The engine's world is T x P x D: --tensor-parallel-size, the stages and
 * --data-parallel-size, or kvshard's world_size and dp_size. A world_size
 * given beside T must be that product (`world`: the layout, not a second
 * spelling of one value); without either T is 1, as the engine's default. */
static int settle_world(kvshard_profile__settling *s, kvshard_diag__ctx *diag)
{
    kvshard_options *o = s->options;
    const kvshard_options *g = s->given;
    uint64_t tp = s->inputs[IN_TP].u, dp = s->inputs[IN_DP].u, P = o->pp_size;
    diag->option = "data_parallel_size";
    if (dp && g->dp_size != 1 && g->dp_size != dp)
        return kvshard_error__fail(diag->err, KVSHARD_EDUPKEY, "", kvshard_error__no_mark,
                             "vllm profile: dp_size %u and --data-parallel-size %llu differ; give "
                             "one of them",
                             g->dp_size, (unsigned long long)dp);
    uint64_t D = dp ? dp : o->dp_size;
    o->dp_size = (uint32_t)D;
    if (!tp && g->world_size != 1) {
        diag->option = NULL;
        return KVSHARD_OK; /* T = world_size / (P x D), validated as kvshard's */
    }
    uint64_t world = (tp ? tp : 1) * P * D;
    diag->option = tp ? "tensor_parallel_size" : P > 1 ? "pp_size" : "data_parallel_size";
    if (tp && g->world_size != 1 && g->world_size != world)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                                   "vllm profile: world: world_size %u is not the engine's %llu "
                                   "ranks (--tensor-parallel-size %llu x --pipeline-parallel-size "
                                   "%llu x --data-parallel-size %llu)",
                                   g->world_size, (unsigned long long)world, (unsigned long long)tp,
                                   (unsigned long long)P, (unsigned long long)D);
    if (world > KVSHARD_MAX_RANKS)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                             "vllm profile: --tensor-parallel-size %llu x --pipeline-parallel-size "
                             "%llu x --data-parallel-size %llu is %llu ranks, above the %u kvshard "
                             "plans",
                             (unsigned long long)(tp ? tp : 1), (unsigned long long)P,
                             (unsigned long long)D, (unsigned long long)world, KVSHARD_MAX_RANKS);
    o->world_size = (uint32_t)world;
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The speculative token count and the draft model's attention layers. */
static int settle_speculation(kvshard_profile__settling *s, kvshard_vllm__state *st,
                              kvshard_diag__ctx *diag)
{
    const kvshard_value *spec = &s->inputs[IN_DRAFT_CONFIG];
    bool given = spec->text != NULL || spec->u > 0 || s->given->num_speculative_tokens > 0;
    uint32_t count = s->given->num_speculative_tokens;
    if (spec->text || spec->u > 0) {
        diag->option = "speculative_config";
        if (count && count != spec->u)
            return kvshard_error__fail(diag->err, KVSHARD_EDUPKEY, "", kvshard_error__no_mark,
                                 "vllm profile: num_speculative_tokens %u and "
                                 "--speculative-config's %llu differ; give one of them",
                                 count, (unsigned long long)spec->u);
        count = (uint32_t)spec->u;
    }
    s->options->num_speculative_tokens = count;
    st->spec = count;
    st->draft_layers = 0;
    if (!given || count == 0)
        return KVSHARD_OK;
    if (s->inputs[IN_DRAFT_LAYERS].u != UINT64_MAX) {
        st->draft_layers = (uint32_t)s->inputs[IN_DRAFT_LAYERS].u;
        return KVSHARD_OK;
    }
    const char *method = spec->text ? spec->text : "mtp";
    size_t len = spec->text ? spec->text_len : 3;
    bool mtp = kvshard_text__is(method, len, "mtp") ||
               (len > 4 && memcmp(method + len - 4, "_mtp", 4) == 0);
    diag->option = "speculative_config";
    if (mtp) {
        if (s->model->num_draft_layers == 0) {
            diag->option = "draft_attention_layers";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                        "engine_input_missing",
                        "method %.*s needs the model's MTP layers and the config has none: give "
                        "--draft-attention-layers",
                        (int)len, method);
        }
        st->draft_layers = s->model->num_draft_layers;
    } else if (kvshard_text__is(method, len, "eagle") || kvshard_text__is(method, len, "eagle3")) {
        st->draft_layers = 1;
    } else if (!kvshard_text__is(method, len, "ngram") &&
               !kvshard_text__is(method, len, "suffix")) {
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "speculative method %.*s: kvshard does not know how many attention layers "
                    "its draft model adds; give --draft-attention-layers N",
                    (int)len, method);
    }
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The dtype the engine serves the model in: --dtype, else the config's,
 * float32 served as bfloat16; an fp8 config needs --dtype. */
static int served_dtype(kvshard_dtype *out, const kvshard_profile__settling *s,
                        kvshard_diag__ctx *diag)
{
    kvshard_dtype d = (kvshard_dtype)(int)s->inputs[IN_DTYPE].u;
    if (d != KVSHARD_DTYPE_AUTO) {
        *out = d;
        return KVSHARD_OK;
    }
    d = s->model->dtype;
    if (kvshard_dtype__is_fp8(d)) {
        diag->option = "dtype";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the config's dtype is fp8: give --dtype (the dtype the engine computes in)");
    }
    *out = d == KVSHARD_DTYPE_FP32 ? KVSHARD_DTYPE_BF16 : d;
    return KVSHARD_OK;
}

/* The temporal state's dtype: the flag, else NemotronH's and Qwen3.5's own
 * config keys (each engine reads its own) and defaults, else the conv
 * dtype. */
static int temporal_dtype(kvshard_dtype *out, const kvshard_profile__settling *s,
                          const kvshard_vllm__state *st, kvshard_diag__ctx *diag)
{
    (void)diag;
    const kvshard__model_info *m = s->model;
    if (s->options->state_dtype != KVSHARD_DTYPE_AUTO) {
        *out = s->options->state_dtype;
        return KVSHARD_OK;
    }
    bool nemotron = m->state.kind == KVSHARD_STATE_MAMBA2 &&
                    kvshard_profile__type_is(s->model_type, nemotron_types);
    bool qwen = m->state.kind == KVSHARD_STATE_GDN &&
                kvshard_profile__type_is(s->model_type, qwen3_5_types);
    *out = st->conv_dtype;
    /* The engine reads the config's key from 0.13.0 only, with its own
     * defaults. */
    if (nemotron && m->named_ssm_cache_dtype != KVSHARD_DTYPE_AUTO && from(st, &V_NEMOTRON_F16))
        *out = m->named_ssm_cache_dtype;
    else if (nemotron && from(st, &V_0_20))
        *out = KVSHARD_DTYPE_FP32;
    else if (nemotron && from(st, &V_NEMOTRON_F16))
        *out = KVSHARD_DTYPE_FP16;
    else if (qwen && m->named_ssm_dtype != KVSHARD_DTYPE_AUTO)
        *out = m->named_ssm_dtype;
    return KVSHARD_OK;
}

static uint32_t dtype_bytes(kvshard_dtype d)
{
    return kvshard_dtype__bytes(d);
}

static const char *dtype_word(kvshard_dtype d)
{
    return kvshard_dtype_name(d);
}

/* Prefix caching and the Mamba cache mode, for a model with state layers. */
static int settle_mode(kvshard_profile__settling *s, kvshard_vllm__state *st,
                       kvshard_diag__ctx *diag)
{
    uint64_t asked = s->inputs[IN_PREFIX].u;
    bool wanted = asked == UNSET_BOOL ? from(st, &V_PREFIX_ON) : asked != 0;
    int flag = (int)(int64_t)s->inputs[IN_MODE].u;
    bool supports_all = s->model->state.kind == KVSHARD_STATE_MAMBA2 &&
                        kvshard_profile__type_is(s->model_type, all_mode_types);
    st->prefix = false;
    st->mode = MODE_NONE;
    if (!wanted)
        return KVSHARD_OK;
    if (!from(st, &V_MODE_ALL) || (!supports_all && !from(st, &V_MODE_ALIGN))) {
        st->pc_reason = !from(st, &V_MODE_ALL) ? PC_BEFORE_ALL : PC_BEFORE_ALIGN;
        return KVSHARD_OK; /* the engine runs it with prefix caching off */
    }
    diag->option = "mamba_cache_mode";
    if (flag == MODE_ALIGN && !from(st, &V_MODE_ALIGN))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "--mamba-cache-mode align exists from 0.15.0; vLLM %s does not have it",
                    kvshard_versions__text_of(&st->version).s);
    diag->option = NULL;
    st->prefix = true;
    if (flag == MODE_ALIGN) {
        st->mode = MODE_ALIGN;
    } else if (flag == MODE_ALL) {
        if (!supports_all) {
            st->mode = MODE_ALIGN;
            st->mode_reason = MODE_NO_ALL_SUPPORT;
        } else if (st->spec > 0 && from(st, &V_0_20)) {
            st->mode = MODE_ALIGN;
            st->mode_reason = MODE_DRAFTING;
        } else {
            st->mode = MODE_ALL;
        }
    } else if (from(st, &V_PREFIX_ON)) {
        st->mode = MODE_ALIGN;
    } else {
        st->mode = supports_all && (st->spec == 0 || !from(st, &V_0_20)) ? MODE_ALL : MODE_ALIGN;
    }
    return KVSHARD_OK;
}

static uint64_t lcm(uint64_t a, uint64_t b)
{
    uint64_t x = a, y = b;
    while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
    }
    return a / x * b;
}

/* The attention block: the requested one, raised with state layers so
 * that a state page fits one block of attention pages. */
static int settle_block(kvshard_profile__settling *s, kvshard_vllm__state *st, kvshard__calc *c,
                        kvshard_diag__ctx *diag)
{
    uint32_t given = s->given->block_size;
    bool mla = s->model->attention == KVSHARD_ATTENTION_MLA;
    if (!st->has_state) {
        st->requested = given ? given : mla ? 64 : 16;
        st->block = st->requested;
        st->block_line = false; /* only the hybrid models' alignment prints it */
        return KVSHARD_OK;
    }
    st->requested = given ? given : 16;
    uint64_t align = st->requested > 16 ? st->requested : 16;
    uint64_t b;
    if (st->mode == MODE_ALL) {
        uint64_t chunk =
            s->inputs[IN_MAMBA_BLOCK].u ? s->inputs[IN_MAMBA_BLOCK].u : s->model->state.chunk_size;
        if (!chunk) {
            diag->option = "mamba_block_size";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                        "engine_input_missing",
                        "Mamba cache mode all needs the model's chunk size (chunk_size or "
                        "mamba_chunk_size), which the config does not give: give "
                        "--mamba-block-size");
        }
        chunk = lcm(chunk, align);
        uint64_t tokens = kvshard__ceil_div(st->mamba_page, st->a1);
        b = kvshard__calc_mul(c, chunk, kvshard__ceil_div(tokens, chunk));
    } else {
        b = kvshard__calc_mul(
            c, align, kvshard__ceil_div(st->mamba_page, kvshard__calc_mul(c, align, st->a1)));
    }
    if (b > KVSHARD_MAX_BLOCK_SIZE) {
        diag->option = "engine";
        return fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW, "engine_unsupported",
                    "the attention block would be %llu tokens, above the %u kvshard plans",
                    (unsigned long long)b, KVSHARD_MAX_BLOCK_SIZE);
    }
    st->block = b > st->requested ? (uint32_t)b : st->requested;
    st->raised = st->block > st->requested;
    st->block_line = st->raised || (!given && !from(st, &V_0_20));
    st->mamba_block = st->mode == MODE_NONE    ? st->max_model_len
                      : st->mode == MODE_ALIGN ? st->block
                                               : (uint32_t)b;
    return KVSHARD_OK;
}

/* The KV cache groups: layers of each type in groups of one size. */
static void settle_groups(kvshard_vllm__state *st)
{
    uint32_t n[3] = {st->n_full, st->n_sliding, st->n_state};
    uint32_t lo = UINT32_MAX, hi = 0, types = 0;
    for (int t = 0; t < 3; t++) {
        if (!n[t])
            continue;
        types++;
        lo = n[t] < lo ? n[t] : lo;
        hi = n[t] > hi ? n[t] : hi;
    }
    uint32_t g;
    if (types <= 1 || st->dsa)
        g = st->n_full + st->n_sliding + st->n_state;
    else if (from(st, &V_GROUP_1_5))
        g = 2 * (uint64_t)hi < 3 * (uint64_t)lo ? hi : lo; /* max < 1.5 min */
    else
        g = 4 * (uint64_t)hi < 5 * (uint64_t)lo ? hi : lo; /* max < 1.25 min */
    uint32_t *groups[3] = {&st->groups_full, &st->groups_sliding, &st->groups_state};
    uint32_t *pads[3] = {&st->pad_full, &st->pad_sliding, &st->pad_state};
    /* A DSA group lists both caches of every layer: its latent and its
     * indexer key. */
    st->group_size = st->dsa ? 2 * g : g;
    st->groups = 0;
    for (int t = 0; t < 3; t++) {
        uint32_t k = n[t] && g ? (n[t] + g - 1) / g : 0;
        if (st->dsa || types <= 1)
            k = n[t] ? 1 : 0;
        *groups[t] = k;
        *pads[t] = st->dsa || types <= 1 ? 0 : k * g - n[t];
        st->groups += k;
    }
}

/* Blocks one group of a type holds for a request of n tokens. */
static uint64_t type_blocks(const kvshard_vllm__state *st, int type, uint64_t n)
{
    uint64_t b = st->block;
    if (type == TYPE_FULL)
        return kvshard__ceil_div(n, b);
    if (type == TYPE_SLIDING) {
        uint64_t kept = (uint64_t)st->window - 1 + st->batched;
        return kvshard__ceil_div(kept < n ? kept : n, b) + 1;
    }
    return st->mode == MODE_NONE    ? 1 + (uint64_t)st->spec
           : st->mode == MODE_ALIGN ? 2 + (uint64_t)st->spec
                                    : kvshard__ceil_div(n, st->mamba_block) + st->spec;
}

/* The report's division of the pool: each group holds its blocks for each
 * of the sequences at once, g layers' pages a block. */
static bool pool_split(uint64_t *attention, uint64_t *state, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = &v->state->vllm;
    const kvshard__capacity *c = v->capacity;
    uint64_t n = v->options->context_length;
    if (st->dsa || st->pp != 1 || !st->groups_state || !n || !c->has_concurrency)
        return false;
    uint64_t a = st->groups_full * type_blocks(st, TYPE_FULL, n) +
                 st->groups_sliding * type_blocks(st, TYPE_SLIDING, n);
    uint64_t s = st->groups_state * type_blocks(st, TYPE_STATE, n);
    /* Both stay below the pool: the sequences at once fit it. */
    *attention = c->concurrency * a;
    *state = c->concurrency * s;
    return true;
}

/* Blocks one request of n tokens holds, over every group. */
static uint64_t blocks_per_request(const kvshard_vllm__state *st, uint64_t n)
{
    if (st->dsa)
        return kvshard__ceil_div(n, st->block);
    const uint32_t groups[3] = {st->groups_full, st->groups_sliding, st->groups_state};
    uint64_t total = 0;
    for (int t = TYPE_FULL; t <= TYPE_STATE; t++)
        total += groups[t] ? groups[t] * type_blocks(st, t, n) : 0;
    return total;
}

/* One GQA attention layer's bytes per token on one GPU, in geometry `g`. */
static uint64_t gqa_bytes(kvshard__calc *c, const kvshard__geometry *g, uint32_t T,
                          uint64_t kv_bytes)
{
    uint64_t h = g->heads / T ? g->heads / T : 1;
    return kvshard__calc_mul(c, kvshard__calc_mul(c, 2 * h, g->k_dim), kv_bytes);
}

/* a1, the bytes per token of one attention layer, which every attention
 * layer's page is made of (the engine keeps one page size). The full
 * layers' geometry gives it; in a model whose attention layers are all
 * sliding windows (a Gemma 3 or Cohere2 config shorter than its pattern)
 * the sliding layers' does. A model with no cache layer at all leaves the
 * engine no KV cache group to size, as a stage without one does. */
static int attention_page(kvshard_vllm__state *st, const kvshard_profile__settling *s,
                          kvshard__calc *c, uint32_t T, uint64_t kv_bytes, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    diag->option = "engine";
    if (st->n_full + st->n_sliding + st->n_state == 0)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "a model with no cache layer (%u layers that keep nothing) is not covered: "
                    "the engine has no KV cache group to size",
                    m->num_layers);
    if (m->attention == KVSHARD_ATTENTION_MLA) {
        st->a1 =
            st->dsa && kv_bytes == 1
                ? 656
                : kvshard__calc_mul(c, (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim, kv_bytes);
        st->idx = st->dsa ? (uint64_t)m->index_head_dim + (m->index_head_dim / 128) * 4 : 0;
        diag->option = NULL;
        return KVSHARD_OK;
    }
    const kvshard__geometry *g = st->n_full > 0 ? &m->full : &m->sliding;
    /* Draft layers the method adds to a model without full-attention
     * layers have the full geometry, which such a config does not give. */
    if (st->n_full > 0 && g->k_dim == 0)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "draft attention layers (%u) on a model without full-attention layers are not "
                    "covered yet",
                    st->draft_layers);
    st->a1 = g->k_dim ? gqa_bytes(c, g, T, kv_bytes) : 0;
    /* kvshard_profile__uncovered_cache compares the pages of full and
     * sliding decoder layers; full draft layers on a model whose decoder
     * layers all slide (an MTP entry of layer_types) reach only this one. */
    if (st->n_full > 0 && st->n_sliding > 0 && gqa_bytes(c, &m->sliding, T, kv_bytes) != st->a1)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "sliding-window layers whose page differs from the full-attention layers' "
                    "are not covered yet");
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The type of the first cache layer in layer order, whose group the
 * memory check of some releases counts alone. */
static uint8_t first_type(const kvshard_profile__settling *s)
{
    for (uint32_t l = 0; s->kinds && l < s->model->num_layers; l++) {
        if (s->kinds[l] == KVSHARD_LAYER_FULL_ATTENTION)
            return TYPE_FULL;
        if (s->kinds[l] == KVSHARD_LAYER_SLIDING_ATTENTION)
            return TYPE_SLIDING;
        if (s->kinds[l] == KVSHARD_LAYER_LINEAR_ATTENTION)
            return TYPE_STATE;
    }
    return TYPE_FULL; /* only draft layers keep a cache */
}

/* The start-up memory check of the release: the whole model's from 0.14.0
 * (vLLM #32105, #34076) until the fix of 0.15.2rc1.dev172, which 0.16.0
 * has but its nightlies 0.16.0rc1.devN, numbered after it, do not. */
static uint8_t memory_check(const kvshard_vllm__state *st)
{
    const kvshard_versions__v *v = &st->version;
    bool nightly_0_16 = v->major == 0 && v->minor == 16 && v->patch == 0 && v->rc >= 0 &&
                        v->dev >= 0;
    if (!from(st, &V_WHOLE_CHECK))
        return CHECK_WORKER_LAYERS;
    if (!from(st, &V_WORKER_CHECK) || nightly_0_16)
        return CHECK_WHOLE_MODEL;
    if (!from(st, &V_GROUP_1_5))
        return CHECK_WORKER_FIRST_GROUP;
    return CHECK_WORKER_GROUPS;
}

static int settle(kvshard_profile__settling *s, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    kvshard_options *o = s->options;
    kvshard_vllm__state *st = &s->state->vllm;
    memset(st, 0, sizeof *st);
    st->mode = -1;
    int rc = kvshard_profile__version(&st->version, PROFILE, &s->inputs[IN_VERSION], diag);
    if (rc == KVSHARD_OK)
        rc = check_coverage(s, st, diag);
    if (rc == KVSHARD_OK)
        rc = settle_world(s, diag);
    if (rc == KVSHARD_OK)
        rc = settle_speculation(s, st, diag);
    kvshard_dtype served = KVSHARD_DTYPE_BF16;
    if (rc == KVSHARD_OK)
        rc = served_dtype(&served, s, diag);
    if (rc)
        return rc;
    st->max_model_len = (uint32_t)s->inputs[IN_MAX_MODEL_LEN].u;
    if (!st->max_model_len)
        st->max_model_len = m->max_position_embeddings;
    if (!st->max_model_len) {
        diag->option = "max_model_len";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the engine's length is the config's max_position_embeddings, which it does "
                    "not give: give --max-model-len");
    }
    uint64_t dc = (uint64_t)o->dp_size * o->cp_size * (o->pp_size ? o->pp_size : 1);
    if (dc == 0 || o->world_size % dc != 0)
        return KVSHARD_OK; /* the options' own validation refuses them */
    uint32_t T = (uint32_t)(o->world_size / dc);
    const char *uncovered = kvshard_profile__uncovered_cache(m, T);
    if (uncovered) {
        diag->option = "engine";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "%s is not covered yet", uncovered);
    }
    st->has_state = m->num_state > 0;
    st->dsa = m->attention == KVSHARD_ATTENTION_MLA && m->has_indexer;
    st->batched = (uint32_t)s->inputs[IN_BATCHED].u;
    st->window = m->sliding_window;
    st->eager = s->inputs[IN_EAGER].u != 0;
    st->override_blocks = (uint32_t)s->inputs[IN_BLOCKS_OVERRIDE].u;
    st->tokens_by_concurrency = from(st, &V_TOKENS);
    st->seqs_error = from(st, &V_SEQS_ERROR);
    st->seqs_warning = from(st, &V_GROUP_1_5) && !st->seqs_error;
    st->budget_ceil = from(st, &V_BUDGET_CEIL);
    st->utilization = s->inputs[IN_UTILIZATION].d > 0.0 ? s->inputs[IN_UTILIZATION].d
                      : from(st, &V_0_20)               ? 0.92
                                                        : 0.9;
    /* Bytes per token of one attention layer on one GPU (fp8: one byte,
     * no scales in the page). */
    kvshard_dtype kv = o->kv_cache_dtype == KVSHARD_DTYPE_AUTO ? served : o->kv_cache_dtype;
    uint64_t kv_bytes = dtype_bytes(kv);
    kvshard__calc c = {false, false, false};
    st->n_full = m->count[KVSHARD_LAYER_FULL_ATTENTION] + st->draft_layers;
    st->n_sliding = m->count[KVSHARD_LAYER_SLIDING_ATTENTION];
    st->n_state = m->num_state;
    if ((rc = attention_page(st, s, &c, T, kv_bytes, diag)) != 0)
        return rc;
    if (st->has_state) {
        kvshard_dtype conv = (kvshard_dtype)(int)s->inputs[IN_MAMBA_DTYPE].u;
        st->conv_dtype = conv == KVSHARD_DTYPE_AUTO ? served : conv;
        if ((rc = temporal_dtype(&st->ssm_dtype, s, st, diag)) != 0)
            return rc;
        uint64_t conv_part = 0, temporal = 0;
        kvshard_profile__state_parts(&c, &conv_part, &temporal, &m->state, T, st->spec,
                                     dtype_bytes(st->conv_dtype), dtype_bytes(st->ssm_dtype));
        st->mamba_page = kvshard__calc_add(&c, conv_part, temporal);
        const char *cw = dtype_word(st->conv_dtype), *tw = dtype_word(st->ssm_dtype);
        size_t cl = strlen(cw);
        if (cl + strlen(tw) + 2 <= sizeof st->dtypes) {
            memcpy(st->dtypes, cw, cl + 1);
            memcpy(st->dtypes + cl + 1, tw, strlen(tw) + 1);
        }
        if ((rc = settle_mode(s, st, diag)) != 0)
            return rc;
    } else {
        st->prefix = s->inputs[IN_PREFIX].u != 0; /* on unless turned off */
    }
    if ((rc = settle_block(s, st, &c, diag)) != 0)
        return rc;
    st->page = kvshard__calc_mul(&c, st->block, st->a1);
    if (st->has_state && st->page > st->mamba_page) {
        st->padded = true;
        st->padding_percent = 100.0 * (double)(st->page - st->mamba_page) / (double)st->mamba_page;
    }
    settle_groups(st);
    diag->option = "pp_size";
    if (o->pp_size > 1 && st->groups > 1 && !from(st, &V_STAGE_GROUPS))
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_version_unsupported",
                    "vLLM %s groups each pipeline stage's layers on their own; pipeline stages "
                    "of a model with several KV cache groups are covered from 0.11.0",
                    kvshard_versions__text_of(&st->version).s);
    diag->option = NULL;
    st->first_type = first_type(s);
    st->check = memory_check(st);
    st->lines_per_worker = !from(st, &V_ONE_LINE);
    st->pp = o->pp_size;
    st->override_checked = from(st, &V_TOKENS);
    if (st->dsa) /* one group: every MLA layer's page and every indexer page */
        st->bytes_per_block = kvshard__calc_mul(
            &c, st->n_full,
            kvshard__calc_add(&c, st->page, kvshard__calc_mul(&c, st->block, st->idx)));
    else
        st->bytes_per_block = kvshard__calc_mul(&c, st->page, st->group_size);
    if (c.overflow) {
        diag->option = "block_size";
        return fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW, "engine_unsupported",
                    "the engine's page bytes overflow 64 bits at a block of %u tokens", st->block);
    }
    st->blocks_per_request = blocks_per_request(st, st->max_model_len);
    o->block_size = st->block;
    diag->option = NULL;
    return KVSHARD_OK;
}

/* Upstream vLLM keeps every layer's KV on every rank of a TP group. */
static int check(const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    const kvshard_options *o = c->options;
    if (o->enable_layerwise_split && o->layerwise_split_size > 1) {
        diag->option = "layerwise_split_size";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_split_unsupported",
                    "layerwise_split_size %u: vLLM has no layerwise split; every rank keeps every "
                    "layer's KV",
                    o->layerwise_split_size);
    }
    diag->option = NULL;
    return KVSHARD_OK;
}

/* ---- budget and capacity ------------------------------------------------------------- */

/* B: --kv-cache-memory-bytes as given; else from the device figures as the
 * engine requests its share of the GPU. */
static int budget(uint64_t *out, bool *has, const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    const kvshard_vllm__state *st = state_of(c->state);
    uint64_t total = c->inputs[IN_DEVICE_TOTAL].u, free_bytes = c->inputs[IN_DEVICE_FREE].u;
    uint64_t non_kv = c->inputs[IN_NON_KV].u;
    *has = false;
    if (c->options->memory_per_rank) {
        *out = c->options->memory_per_rank;
        *has = true;
        return KVSHARD_OK;
    }
    if (!total && !free_bytes && non_kv == UINT64_MAX)
        return KVSHARD_OK;
    if (!total || non_kv == UINT64_MAX) {
        diag->option = total        ? "non_kv_memory"
                       : free_bytes ? "device_memory_free"
                                    : "non_kv_memory";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the budget from device figures needs device_memory_total and non_kv_memory "
                    "(or give --kv-cache-memory-bytes)");
    }
    double u = st->utilization;
    double requested = (double)total * u;
    double b;
    if (st->budget_ceil) {
        requested = ceil(requested);
        b = requested - (double)non_kv;
    } else {
        b = trunc(requested - (double)non_kv);
    }
    if (free_bytes && (double)free_bytes < requested) {
        diag->option = "device_memory_free";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                    "insufficient_free_memory",
                    "device_memory_free %llu bytes is below the %.0f bytes the engine requests "
                    "(device_memory_total %llu x gpu_memory_utilization %g)",
                    (unsigned long long)free_bytes, requested, (unsigned long long)total, u);
    }
    if (!(b > 0.0)) {
        diag->option = "non_kv_memory";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                    "no_memory_for_cache_blocks",
                    "device_memory_total %llu x gpu_memory_utilization %g - non_kv_memory %llu "
                    "leaves %.0f bytes for the KV cache",
                    (unsigned long long)total, u, (unsigned long long)non_kv, b);
    }
    *out = b >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)b;
    *has = true;
    return KVSHARD_OK;
}

/* One pipeline stage's share of the KV cache groups: its cache layers of
 * each type (the draft layers on the last stage) and its projection of the
 * whole model's groups. */
typedef struct stage_share {
    uint32_t layers[3];     /* TYPE_*: its cache layers of each type */
    uint32_t group_size;    /* g_s: the most of its layers in one group */
    uint64_t bytes_per_block;
    uint64_t budget;
    uint64_t blocks; /* num_blocks_s, before the common count */
} stage_share;

/* The share of `r` (NULL: every layer of the model, the draft layers
 * included). A contiguous run of n of a type's layers, dealt to its G
 * groups in turn, puts at most ceil(n / G) in one group. */
static stage_share share_of(const kvshard_vllm__state *st, const kvshard__range *r, bool last)
{
    stage_share sh;
    memset(&sh, 0, sizeof sh);
    if (r) {
        sh.layers[TYPE_FULL] = r->census[KVSHARD_LAYER_FULL_ATTENTION] +
                               (last ? st->draft_layers : 0);
        sh.layers[TYPE_SLIDING] = r->census[KVSHARD_LAYER_SLIDING_ATTENTION];
        sh.layers[TYPE_STATE] = r->num_state;
    } else {
        sh.layers[TYPE_FULL] = st->n_full;
        sh.layers[TYPE_SLIDING] = st->n_sliding;
        sh.layers[TYPE_STATE] = st->n_state;
    }
    const uint32_t groups[3] = {st->groups_full, st->groups_sliding, st->groups_state};
    if (st->dsa) {
        sh.group_size = 2 * sh.layers[TYPE_FULL];
        sh.bytes_per_block = sh.layers[TYPE_FULL] * (st->page + (uint64_t)st->block * st->idx);
        return sh;
    }
    for (int t = TYPE_FULL; t <= TYPE_STATE; t++) {
        uint32_t g = groups[t] ? (sh.layers[t] + groups[t] - 1) / groups[t] : 0;
        sh.group_size = g > sh.group_size ? g : sh.group_size;
    }
    sh.bytes_per_block = st->page * sh.group_size;
    return sh;
}

/* What the memory check counts for a request of n tokens on a share (the
 * whole model's in the whole-model check): `blocks` of `unit` bytes. */
static void check_need(uint64_t *blocks, uint64_t *unit, const kvshard_vllm__state *st,
                       const stage_share *sh, uint64_t n)
{
    if (st->dsa) {
        *blocks = kvshard__ceil_div(n, st->block);
        *unit = sh->bytes_per_block;
        return;
    }
    *unit = sh->bytes_per_block;
    switch (st->check) {
    case CHECK_WORKER_LAYERS: {
        /* Every cache layer the worker holds, no padding layer: a type's
         * layers as blocks of its own count of pages when it is alone. */
        uint32_t types = 0, only = TYPE_FULL;
        uint64_t total = 0;
        for (int t = TYPE_FULL; t <= TYPE_STATE; t++) {
            if (!sh->layers[t])
                continue;
            types++;
            only = (uint32_t)t;
            total += sh->layers[t] * type_blocks(st, t, n);
        }
        if (types == 1) {
            *blocks = type_blocks(st, (int)only, n);
            *unit = st->page * sh->layers[only];
        } else {
            *blocks = total;
            *unit = st->page;
        }
        return;
    }
    case CHECK_WHOLE_MODEL:
    case CHECK_WORKER_FIRST_GROUP:
        *blocks = type_blocks(st, st->first_type, n);
        return;
    default:
        *blocks = blocks_per_request(st, n);
        return;
    }
}

/* The largest request length n <= L whose need fits `budget_bytes`. */
static uint64_t longest_fit(const kvshard_vllm__state *st, const stage_share *sh,
                            uint64_t budget_bytes, uint64_t L)
{
    uint64_t lo = 0, hi = L;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2, blocks, unit, need;
        check_need(&blocks, &unit, st, sh, mid);
        if (kvshard__mul(&need, blocks, unit) && need <= budget_bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The engine's start-up memory check of one share against its budget: the
 * need and budget at L into *need and *budget, KVSHARD_ENOBLOCK when one
 * request of L tokens does not fit. `stage` names the share with stages,
 * -1 for the whole model or a plan of one stage. */
static int check_memory(uint64_t *need, uint64_t *budget_bytes, const kvshard_vllm__state *st,
                        const stage_share *sh, uint64_t B, int stage, kvshard_diag__ctx *diag)
{
    uint64_t blocks, unit;
    check_need(&blocks, &unit, st, sh, st->max_model_len);
    if (st->override_blocks && st->override_checked)
        B = kvshard__mul(&B, st->override_blocks, sh->bytes_per_block) ? B : UINT64_MAX;
    *budget_bytes = B;
    bool fits = kvshard__mul(need, blocks, unit);
    if (!fits)
        *need = UINT64_MAX;
    if (fits && *need <= B)
        return KVSHARD_OK;
    char where[64] = "";
    if (stage >= 0)
        snprintf(where, sizeof where, " on stage %d", stage);
    else if (st->check == CHECK_WHOLE_MODEL && st->pp > 1)
        snprintf(where, sizeof where, " over the whole model's layers");
    diag->option = "max_model_len";
    return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                "max_model_len_does_not_fit",
                "one request of max_model_len %u tokens needs %llu blocks of %llu bytes%s, "
                "more than the %llu bytes of %s; the longest that fits is %llu tokens",
                st->max_model_len, (unsigned long long)blocks, (unsigned long long)unit, where,
                (unsigned long long)B,
                stage < 0 && st->check == CHECK_WHOLE_MODEL && st->pp > 1
                    ? "the smallest worker's KV cache, which this release checks it against"
                    : "the KV cache",
                (unsigned long long)longest_fit(st, sh, B, st->max_model_len));
}

/* The engine's "GPU KV cache size" line at `blocks`. */
static uint64_t tokens_of(const kvshard_vllm__state *st, uint64_t blocks)
{
    double concurrency = (double)blocks / (double)st->blocks_per_request;
    return st->tokens_by_concurrency ? (uint64_t)(concurrency * (double)st->max_model_len)
                                     : blocks / st->groups * st->block;
}

/* Where the stages come from: their layers, and their budgets from the
 * device (NULL: `memory` on every stage). */
typedef struct stage_source {
    const kvshard__range *ranges;
    const uint64_t *budgets;
    uint64_t memory;
    uint32_t count; /* P, 1 without ranges */
} stage_source;

static stage_source source_of(const kvshard__range *ranges, uint32_t n, const uint64_t *budgets,
                              uint64_t memory)
{
    stage_source src = {ranges, budgets, memory, ranges && n > 1 ? n : 1};
    return src;
}

/* Stage s with its budget and its own blocks. */
static stage_share stage_at(const kvshard_vllm__state *st, const stage_source *src, uint32_t s)
{
    uint32_t P = src->count;
    stage_share sh = share_of(st, P > 1 ? &src->ranges[s] : NULL, s + 1 == P);
    sh.budget = src->budgets && P > 1 ? src->budgets[s] : src->memory;
    if (sh.bytes_per_block)
        sh.blocks = st->dsa ? sh.budget / sh.bytes_per_block
                            : sh.budget / st->page / sh.group_size;
    return sh;
}


/* Every stage's share and blocks; the engine takes the fewest. Notes:
 * [NOTE_CHECK_NEED] and [NOTE_CHECK_BUDGET] the check nearest to refusing,
 * [NOTE_BINDING] the binding stage. */
static int capacity(kvshard__capacity *c, uint64_t *rank_blocks, const kvshard__capacity_inputs *in,
                    kvshard_diag__ctx *diag)
{
    const kvshard_vllm__state *st = state_of(in->state);
    const kvshard_options *o = in->options;
    stage_source src = source_of(in->stages, in->num_stages, in->stage_memory, in->memory);
    uint32_t P = src.count;
    for (uint32_t s = 0; s < P; s++) {
        if (stage_at(st, &src, s).group_size == 0) {
            diag->option = "pp_partition";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                        "engine_unsupported",
                        "stage %u (layers %u-%u) holds no cache layer: the engine has no KV "
                        "cache group to size there",
                        s, in->stages[s].first, in->stages[s].first + in->stages[s].count - 1);
        }
    }
    c->has_bytes_per_block = true;
    c->bytes_per_block = stage_at(st, &src, 0).bytes_per_block;
    uint32_t first = kvshard_capacity__first_rank(in), end = kvshard_capacity__end_rank(in);
    uint32_t T = in->stage_ranks ? in->stage_ranks : in->num_ranks;
    for (uint32_t r = first; P > 1 && T && in->rank_bytes_per_block && r < end; r++)
        in->rank_bytes_per_block[r] = stage_at(st, &src, r / T).bytes_per_block;
    if (!in->has_memory)
        return KVSHARD_OK;
    int rc = KVSHARD_OK;
    /* The start-up check: once over the whole model, or each worker in
     * stage order. */
    uint64_t worst_need = 0, worst_budget = 0;
    if (st->check == CHECK_WHOLE_MODEL) {
        stage_share whole = share_of(st, NULL, true);
        uint64_t least = stage_at(st, &src, 0).budget;
        for (uint32_t s = 1; s < P; s++) {
            uint64_t b = stage_at(st, &src, s).budget;
            least = b < least ? b : least;
        }
        rc = check_memory(&worst_need, &worst_budget, st, &whole, least, -1, diag);
    } else {
        for (uint32_t s = 0; rc == KVSHARD_OK && s < P; s++) {
            stage_share sh = stage_at(st, &src, s);
            uint64_t need, B;
            rc = check_memory(&need, &B, st, &sh, sh.budget, P > 1 ? (int)s : -1, diag);
            /* the largest need / budget; the first on a tie */
            if (s == 0 || (double)need * (double)worst_budget > (double)worst_need * (double)B) {
                worst_need = need;
                worst_budget = B;
            }
        }
    }
    if (rc)
        return rc;
    stage_share bind = stage_at(st, &src, 0);
    uint32_t binding = 0;
    for (uint32_t s = 1; s < P; s++) {
        stage_share sh = stage_at(st, &src, s);
        if (sh.blocks < bind.blocks) {
            bind = sh;
            binding = s;
        }
    }
    uint64_t blocks = bind.blocks;
    if (st->override_blocks)
        blocks = st->override_blocks;
    if (st->has_state && !st->eager && st->seqs_error && o->max_seqs > blocks) {
        diag->option = "max_seqs";
        rc = fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                  "max_num_seqs_exceeds_mamba_blocks",
                  "--max-num-seqs %u is above the %llu GPU blocks, which hold the state of "
                  "the running requests: lower --max-num-seqs to %llu (or give "
                  "--enforce-eager)",
                  o->max_seqs, (unsigned long long)blocks, (unsigned long long)blocks);
        return rc;
    }
    uint64_t tokens = tokens_of(st, blocks);
    c->has_num_blocks = true;
    c->num_blocks = blocks;
    c->max_tokens = tokens;
    c->has_usable_blocks = true;
    c->usable_blocks = blocks ? blocks - 1 : 0; /* block 0 is the null block */
    c->has_budget = true;
    c->budget = in->memory;
    c->bytes_per_block = bind.bytes_per_block;
    c->notes[NOTE_CHECK_NEED] = worst_need;
    c->notes[NOTE_CHECK_BUDGET] = worst_budget;
    c->notes[NOTE_BINDING] = binding;
    /* Each worker's own count before the engine shrinks it to the fewest
     * (the override: every worker's), so that the first binds. */
    for (uint32_t r = first; rank_blocks && r < end; r++)
        rank_blocks[r] =
            st->override_blocks || P == 1 || !T ? blocks : stage_at(st, &src, r / T).blocks;
    if (in->context_length == 0)
        return KVSHARD_OK;
    uint64_t per = blocks_per_request(st, in->context_length);
    uint64_t balanced = c->usable_blocks / per;
    c->has_balanced_max_seqs = true;
    c->balanced_max_seqs = balanced;
    c->has_concurrency = true;
    c->concurrency = balanced < o->max_seqs ? balanced : o->max_seqs;
    return KVSHARD_OK;
}

/* ---- figures, warnings and wording ----------------------------------------------------- */

static const char *mode_name(int mode)
{
    return mode == MODE_NONE ? "none" : mode == MODE_ALIGN ? "align" : "all";
}

/* The check's name in JSON: the two per-worker releases check the same
 * layers, the projected groups. */
static const char *check_name(uint8_t check)
{
    return check == CHECK_WORKER_LAYERS ? "worker_layers"
           : check == CHECK_WHOLE_MODEL ? "whole_model"
                                        : "worker_groups";
}

static double concurrency_of(const kvshard_vllm__state *st, const kvshard__capacity *c)
{
    return (double)c->num_blocks / (double)st->blocks_per_request;
}

/* A stage's cache layers: a DSA stage counts 2 caches a layer, as its
 * group does. */
static uint32_t cache_layers_of(const kvshard_vllm__state *st, const stage_share *sh)
{
    return st->dsa ? sh->group_size
                   : sh->layers[TYPE_FULL] + sh->layers[TYPE_SLIDING] + sh->layers[TYPE_STATE];
}

/* engine.stages: each stage's share, its own blocks before the engine
 * takes the fewest (every worker's with the override), and its own need
 * where each worker checks its layers. */
static void stage_figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    bool blocks = c->has_num_blocks;
    stage_source src = source_of(v->stages, v->num_stages, v->stage_memory, v->memory);
    kvshard_profile__json_begin(f);
    for (uint32_t s = 0; s < src.count; s++) {
        stage_share sh = stage_at(st, &src, s);
        uint64_t own = st->override_blocks ? c->num_blocks : sh.blocks;
        uint64_t need_blocks, unit, need = 0;
        check_need(&need_blocks, &unit, st, &sh, st->max_model_len);
        bool has_need = blocks && st->check != CHECK_WHOLE_MODEL &&
                        kvshard__mul(&need, need_blocks, unit);
        kvshard_profile__json_object(f);
        kvshard_profile__json_uint(f, "stage", true, s);
        kvshard_profile__json_uint(f, "layer_first", true, v->stages ? v->stages[s].first : 0);
        kvshard_profile__json_uint(f, "layer_count", true, v->stages ? v->stages[s].count : 0);
        kvshard_profile__json_uint(f, "cache_layers", true, cache_layers_of(st, &sh));
        kvshard_profile__json_uint(f, "group_size", true, sh.group_size);
        kvshard_profile__json_uint(f, "bytes_per_block", true, sh.bytes_per_block);
        kvshard_profile__json_uint(f, "budget", v->has_memory, sh.budget);
        kvshard_profile__json_uint(f, "num_gpu_blocks", blocks, own);
        kvshard_profile__json_uint(f, "gpu_kv_cache_tokens", blocks,
                                   blocks ? tokens_of(st, own) : 0);
        kvshard_profile__json_double(f, "max_concurrency", blocks,
                                     (double)own / (double)st->blocks_per_request);
        kvshard_profile__json_uint(f, "check_need", has_need, need);
        kvshard_profile__json_object_end(f);
    }
    kvshard_profile__json_end(f, "stages");
}

static void figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    /* Text the figures point at lives in the plan's own state. */
    const char *dtypes = st->dtypes;
    bool blocks = c->has_num_blocks;
    kvshard_profile__fig_uint(f, "budget", c->has_budget, c->budget);
    kvshard_profile__fig_uint(f, "attention_block_size", true, st->block);
    kvshard_profile__fig_bool(f, "block_size_line", st->block_line);
    kvshard_profile__fig_uint(f, "page_bytes", true, st->page);
    kvshard_profile__fig_uint(f, "mamba_page_bytes", st->has_state, st->mamba_page);
    kvshard_profile__fig_double(f, "mamba_padding_percent", st->padded, st->padding_percent);
    kvshard_profile__fig_text(f, "mamba_cache_mode", st->has_state ? mode_name(st->mode) : NULL);
    kvshard_profile__fig_uint(f, "mamba_block_size", st->has_state, st->mamba_block);
    kvshard_profile__fig_bool(f, "prefix_caching", st->prefix);
    kvshard_profile__fig_words(f, "state_dtypes", dtypes, st->has_state && dtypes[0] ? 2 : 0);
    kvshard_profile__fig_uint(f, "kv_cache_groups", true, st->groups);
    kvshard_profile__fig_uint(f, "group_size", true, st->group_size);
    kvshard_profile__fig_uint(f, "padding_layers", true,
                              (uint64_t)st->pad_full + st->pad_sliding + st->pad_state);
    /* With stages, the binding stage's (stage 0's without a budget). */
    kvshard_profile__fig_uint(f, "bytes_per_block", true,
                              c->has_bytes_per_block ? c->bytes_per_block : st->bytes_per_block);
    kvshard_profile__fig_uint(f, "num_gpu_blocks", blocks, c->num_blocks);
    kvshard_profile__fig_uint(f, "usable_blocks", blocks, c->usable_blocks);
    kvshard_profile__fig_uint(f, "max_model_len", true, st->max_model_len);
    kvshard_profile__fig_uint(f, "blocks_per_request", true, st->blocks_per_request);
    kvshard_profile__fig_double(f, "max_concurrency", blocks, blocks ? concurrency_of(st, c) : 0);
    kvshard_profile__fig_uint(f, "gpu_kv_cache_tokens", blocks, c->max_tokens);
    kvshard_profile__fig_uint(f, "max_num_seqs", true, v->options->max_seqs);
    kvshard_profile__fig_uint(f, "pp_size", true, st->pp);
    kvshard_profile__fig_partition(f, "pp_partition", v);
    kvshard_profile__fig_uint(f, "binding_stage", blocks, c->notes[NOTE_BINDING]);
    kvshard_profile__fig_text(f, "memory_check", check_name(st->check));
    kvshard_profile__fig_uint(f, "memory_check_budget", blocks, c->notes[NOTE_CHECK_BUDGET]);
    kvshard_profile__fig_uint(f, "memory_check_need", blocks, c->notes[NOTE_CHECK_NEED]);
    stage_figures(f, v);
}

static void warn(kvshard_profile__warn_fn sink, void *ctx, kvshard_warning_code code,
                 const char *fmt, ...) KVSHARD__PRINTF(4, 5);

static void warn(kvshard_profile__warn_fn sink, void *ctx, kvshard_warning_code code,
                 const char *fmt, ...)
{
    char message[240];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    sink(ctx, code, message);
}

/* A message of text and numbers, put together without printf: the padding
 * warning comes with most hybrid plans. */
typedef struct message {
    char text[240];
    size_t used;
} message;

static void put(message *m, const char *s, size_t n)
{
    if (n > sizeof m->text - 1 - m->used)
        n = sizeof m->text - 1 - m->used;
    memcpy(m->text + m->used, s, n);
    m->used += n;
    m->text[m->used] = '\0';
}

#define PUT(m, literal) put((m), literal, sizeof literal - 1)

static void put_uint(message *m, uint64_t v)
{
    char digits[24];
    size_t n = sizeof digits;
    do {
        digits[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(m, digits + n, sizeof digits - n);
}

static void padding_warning(kvshard_profile__warn_fn sink, void *ctx, const char *type,
                            uint32_t pad, uint32_t n, uint32_t g)
{
    if (!pad)
        return;
    char q[32];
    kvshard_profile__percent(q, sizeof q, pad, n);
    message m = {"", 0};
    PUT(&m, "Add ");
    put_uint(&m, pad);
    PUT(&m, " padding layers, may waste at most ");
    put(&m, q, strlen(q));
    PUT(&m, "% KV cache memory (");
    put_uint(&m, n);
    PUT(&m, " ");
    put(&m, type, strlen(type));
    PUT(&m, " layers in groups of ");
    put_uint(&m, g);
    PUT(&m, ")");
    sink(ctx, KVSHARD_WARN_ENGINE_PADDING_LAYERS, m.text);
}

static void warnings(kvshard_profile__warn_fn sink, void *ctx, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = state_of(v->state);
    char ver[KVSHARD_VERSIONS__TEXT_MAX] = "";
    if (st->pc_reason != PC_KEPT || st->seqs_warning)
        kvshard_versions__format(ver, sizeof ver, &st->version);
    if (st->pc_reason != PC_KEPT)
        warn(sink, ctx, KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED,
             "vLLM %s runs this model with prefix caching off: %s", ver,
             st->pc_reason == PC_BEFORE_ALL
                 ? "it caches no state model's prefixes before 0.11.1"
                 : "Mamba cache mode align, which this model needs, exists from 0.15.0");
    if (st->mode_reason != MODE_KEPT)
        warn(sink, ctx, KVSHARD_WARN_ENGINE_MAMBA_CACHE_MODE_ALIGN,
             "--mamba-cache-mode all runs as align: %s",
             st->mode_reason == MODE_NO_ALL_SUPPORT
                 ? "the model's state cannot be cached at every chunk"
                 : "speculative decoding uses align from 0.20.0");
    padding_warning(sink, ctx, "full-attention", st->pad_full, st->n_full, st->group_size);
    padding_warning(sink, ctx, "sliding-window", st->pad_sliding, st->n_sliding, st->group_size);
    padding_warning(sink, ctx, "state", st->pad_state, st->n_state, st->group_size);
    const kvshard__capacity *c = v->capacity;
    if (st->has_state && !st->eager && st->seqs_warning && c->has_num_blocks &&
        v->options->max_seqs > c->num_blocks)
        warn(sink, ctx, KVSHARD_WARN_ENGINE_CUDAGRAPH_SIZES_CAPPED,
             "--max-num-seqs %u is above the %llu GPU blocks: vLLM %s caps its CUDA-graph sizes "
             "at the blocks",
             v->options->max_seqs, (unsigned long long)c->num_blocks, ver);
}

static void unreachable(char *buf, size_t cap, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    const kvshard_options *o = v->options;
    snprintf(buf, cap,
             "at %u tokens %llu %s at once, below max_num_seqs %u: %llu usable GPU "
             "blocks, %llu a request of that length (KV and %s share the pool); balanced "
             "max_seqs is %llu",
             o->context_length, (unsigned long long)c->concurrency,
             c->concurrency == 1 ? "sequence runs" : "sequences run", o->max_seqs,
             (unsigned long long)c->usable_blocks,
             (unsigned long long)blocks_per_request(st, o->context_length),
             v->seq_noun ? v->seq_noun : "state", (unsigned long long)c->balanced_max_seqs);
}

/* B / 2^30 as the engine logs it: two decimals, a trailing zero dropped. */
static void available_gib(char *buf, size_t cap, uint64_t bytes)
{
    kvshard_profile__gib(buf, cap, bytes);
    size_t n = strlen(buf);
    if (n > 1 && buf[n - 1] == '0')
        buf[n - 1] = '\0';
}

/* The engine's two start-up lines at `blocks`. */
static void write_engine_lines(const kvshard__printer *p, const kvshard_vllm__state *st,
                               uint64_t blocks)
{
    kvshard_format__text(p, "the engine logs GPU KV cache size: ");
    kvshard_format__grouped(p, tokens_of(st, blocks));
    kvshard_format__text(p, " tokens; Maximum concurrency for ");
    kvshard_format__grouped(p, st->max_model_len);
    kvshard_format__printf(p, " tokens per request: %.2fx",
                           (double)blocks / (double)st->blocks_per_request);
}

/* One line a stage, with P > 1: its layers, its share of the groups, its
 * own blocks and budget; before 0.11.1 also the lines its workers log. */
static void write_stages(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    stage_source src = source_of(v->stages, v->num_stages, v->stage_memory, v->memory);
    if (src.count < 2 || !c->has_num_blocks)
        return;
    for (uint32_t s = 0; s < src.count; s++) {
        stage_share sh = stage_at(st, &src, s);
        const kvshard__range *r = &src.ranges[s];
        uint32_t caches = cache_layers_of(st, &sh);
        char label[24];
        snprintf(label, sizeof label, "stage %u", s);
        kvshard_format__printf(p, "%-11slayers %u\xE2\x80\x93%u, ", label, r->first,
                               r->first + r->count - 1);
        kvshard_format__grouped(p, caches);
        kvshard_format__text(p, " cache layers (group size ");
        kvshard_format__grouped(p, sh.group_size);
        kvshard_format__text(p, "): ");
        kvshard_format__grouped(p, sh.blocks);
        kvshard_format__text(p, " blocks of ");
        kvshard_format__grouped(p, sh.bytes_per_block);
        char gib[32];
        available_gib(gib, sizeof gib, sh.budget);
        kvshard_format__printf(p, " B; budget %s GiB", gib);
        if (st->lines_per_worker) {
            kvshard_format__text(p, "; ");
            write_engine_lines(p, st, sh.blocks);
        }
        kvshard_format__text(p, s == c->notes[NOTE_BINDING] ? "  \xE2\x97\x80 binds\n" : "\n");
    }
}

static void write_capacity(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard_vllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    kvshard_format__printf(p, "capacity   vllm %s profile: ", v->version);
    if (c->has_budget) {
        char gib[32];
        available_gib(gib, sizeof gib, c->budget);
        kvshard_format__printf(p, "Available KV cache memory: %s GiB; ", gib);
    }
    kvshard_format__text(p, "attention block ");
    kvshard_format__grouped(p, st->block);
    kvshard_format__text(p, " tokens");
    if (st->raised)
        kvshard_format__printf(p, " (raised from %u)", st->requested);
    if (st->padded)
        kvshard_format__printf(p, ", Padding mamba page size by %.2f%%", st->padding_percent);
    kvshard_format__text(p, "\n           ");
    if (!c->has_num_blocks) {
        kvshard_format__text(p, "no budget: give `--kv-cache-memory-bytes` or the device "
                                "figures\n");
        return;
    }
    uint32_t pad = st->pad_full + st->pad_sliding + st->pad_state;
    kvshard_format__printf(p, "%u KV cache group%s of %u layers", st->groups,
                           st->groups == 1 ? "" : "s", st->group_size);
    if (pad)
        kvshard_format__printf(p, " (%u padding layer%s)", pad, pad == 1 ? "" : "s");
    kvshard_format__text(p, "; ");
    kvshard_format__grouped(p, c->num_blocks);
    kvshard_format__text(p, " GPU blocks");
    if (v->stages && v->num_stages > 1 && !st->override_blocks) {
        const kvshard__range *bind = &v->stages[c->notes[NOTE_BINDING]];
        kvshard_format__printf(p, ", the fewest of stage %u (%u layers)",
                               (unsigned)c->notes[NOTE_BINDING], bind->count);
    }
    kvshard_format__text(p, " (");
    kvshard_format__grouped(p, c->usable_blocks);
    kvshard_format__text(p, " usable after the null block)\n           the engine logs GPU KV "
                            "cache size: ");
    kvshard_format__grouped(p, c->max_tokens);
    kvshard_format__text(p, " tokens; Maximum concurrency for ");
    kvshard_format__grouped(p, st->max_model_len);
    kvshard_format__printf(p, " tokens per request: %.2fx\n", concurrency_of(st, c));
    write_stages(p, v);
}

static void report_rows(const kvshard__printer *p, const kvshard_profile__view *v, bool tail)
{
    const kvshard_vllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    if (tail) {
        if (!c->has_num_blocks)
            return;
        kvshard_format__row(p, "GPU KV cache size");
        kvshard_format__grouped(p, c->max_tokens);
        kvshard_format__text(p, " tokens (the engine's log line)");
        kvshard_format__row_end(p);
        kvshard_format__row(p, "Maximum concurrency");
        kvshard_format__printf(p, "%.2fx for ", concurrency_of(st, c));
        kvshard_format__grouped(p, st->max_model_len);
        kvshard_format__text(p, " tokens per request");
        kvshard_format__row_end(p);
        return;
    }
    char gib[32];
    available_gib(gib, sizeof gib, c->budget);
    kvshard_format__row(p, "Available KV cache memory");
    kvshard_format__printf(p, "%s GiB (", gib);
    kvshard_format__bytes(p, c->budget);
    kvshard_format__printf(p, "), vllm %s profile", v->version);
    kvshard_format__row_end(p);
    kvshard_format__row(p, "attention block");
    kvshard_format__grouped(p, st->block);
    kvshard_format__text(p, " tokens");
    if (st->raised)
        kvshard_format__printf(p, " (raised from %u)", st->requested);
    if (st->padded)
        kvshard_format__printf(p, "; Padding mamba page size by %.2f%%", st->padding_percent);
    kvshard_format__row_end(p);
    kvshard_format__row(p, "KV cache groups");
    kvshard_format__printf(p, "%u of %u layers, %u padding", st->groups, st->group_size,
                           st->pad_full + st->pad_sliding + st->pad_state);
    kvshard_format__row_end(p);
    kvshard_format__row(p, "GPU blocks");
    kvshard_format__grouped(p, c->num_blocks);
    kvshard_format__text(p, " (");
    kvshard_format__grouped(p, c->usable_blocks);
    kvshard_format__text(p, " usable after the null block)");
    kvshard_format__row_end(p);
}

/* The layout as vLLM's command line, and its partition in the environment:
 * vLLM has no layerwise split. */
static int recommend(char *buf, size_t cap, const kvshard_profile__layout *l, bool env)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    if (l->split > 1)
        return KVSHARD_EUNSUPPORTED;
    if (env) {
        char counts[2048];
        kvshard_profile__partition_text(counts, sizeof counts, l);
        if (l->pp > 1)
            kvshard_profile__arg(buf, cap, &used, "%s=%s",
                                 kvshard_profile__vllm.dialect.partition_env, counts);
        return (int)used;
    }
    kvshard_profile__arg(buf, cap, &used, "--tensor-parallel-size=%u", l->tp);
    if (l->pp > 1)
        kvshard_profile__arg(buf, cap, &used, "--pipeline-parallel-size=%u", l->pp);
    if (l->dp > 1)
        kvshard_profile__arg(buf, cap, &used, "--data-parallel-size=%u", l->dp);
    if (l->expert_parallel)
        kvshard_profile__arg(buf, cap, &used, "--enable-expert-parallel");
    kvshard_profile__arg(buf, cap, &used, "--gpu-memory-utilization=%s", l->utilization);
    if (kvshard_dtype__is_fp8(l->kv_cache_dtype))
        kvshard_profile__arg(buf, cap, &used, "--kv-cache-dtype=%s", dtype_word(l->kv_cache_dtype));
    if (l->context_length) {
        kvshard_profile__arg(buf, cap, &used, "--max-model-len=%u", l->context_length);
        kvshard_profile__arg(buf, cap, &used, "--max-num-seqs=%llu",
                             (unsigned long long)l->seqs_per_replica);
    }
    return (int)used;
}

/* The flags a launch line of fit repeats when given: they change what the
 * engine allocates. */
static const char *const fit_repeated[] = {
    "dtype",         "mamba_cache_dtype",      "mamba_cache_mode",        "mamba_block_size",
    "enable_prefix_caching", "max_num_batched_tokens", "enforce_eager", "num_gpu_blocks_override",
    NULL};

/* The fraction the engine takes of the device, as fit's launch line
 * states it. */
static double fit_utilization(const kvshard_value *given, const kvshard_profile__state *state)
{
    (void)given;
    return state->vllm.utilization;
}

/* ---- stages and ranks ---------------------------------------------------------------- */

/* vLLM gives the extra layers walking back from the second-to-last stage,
 * so that the last (head and draft layers) and the first (embedding) get
 * one only when every other stage has. */
static int partition(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err)
{
    (void)err;
    uint32_t r = layers % stages;
    for (uint32_t s = 0; s < stages; s++)
        counts[s] = layers / stages;
    for (uint32_t k = 0; k < r; k++)
        counts[stages - 2 - k]++;
    return KVSHARD_OK;
}

/* Releases that changed what the NIXL connector moves between two plans. */
static const kvshard_versions__v V_HETERO_TP = KVSHARD_V(0, 9, 1);     /* PR #18833 */
static const kvshard_versions__v V_BLOCKS_DIFFER = KVSHARD_V(0, 12, 0); /* PR #26759 */
static const kvshard_versions__v V_STATE_NIXL = KVSHARD_V(0, 19, 0);   /* PR #36687 */
static const kvshard_versions__v V_STATE_TP = KVSHARD_V(0, 20, 0);     /* PR #37635 */
static const kvshard_versions__v V_PP_PREFILL = KVSHARD_V(0, 24, 0);   /* PR #45880 */
static const kvshard_versions__v V_HYBRID_BLOCKS = KVSHARD_V(0, 27, 0); /* PR #49612 */

/* NixlConnector, D reading from P: its rules in the order the documentation
 * lists them. */
static void transfer_verdict(kvshard_profile__verdict *v, const kvshard_profile__pair *pair)
{
    const kvshard_vllm__state *st = &pair->state[1]->vllm;
    const uint32_t *T = pair->tp, *block = pair->block;
    bool hma = pair->has_sliding || pair->has_state;
    char text[2][32];
    for (int s = 0; s < 2; s++)
        kvshard_format__grouped_text(text[s], sizeof text[s], block[s]);
    if (pair->split[0] > 1 || pair->split[1] > 1)
        kvshard_verdicts__refuse(v, "vllm_split",
                                 "vLLM has no layerwise split: S is %u on P and %u on D",
                                 pair->split[0], pair->split[1]);
    if (pair->pp[1] > 1)
        kvshard_verdicts__refuse(v, "vllm_pp", "D has %u pipeline stages: vLLM reads into one",
                                 pair->pp[1]);
    else if (pair->pp[0] > 1 && (hma || !from(st, &V_PP_PREFILL)))
        kvshard_verdicts__refuse(v, "vllm_pp", "P has %u pipeline stages: %s", pair->pp[0],
                                 hma ? "staged prefill covers models without sliding or state "
                                       "layers only"
                                     : "staged prefill needs 0.24.0");
    if (T[0] % T[1] != 0 && T[1] % T[0] != 0)
        kvshard_verdicts__refuse(v, "vllm_tp_ratio",
                                 "TP %u on P and %u on D: neither divides the other", T[0], T[1]);
    if (T[0] != T[1] && !from(st, &V_HETERO_TP))
        kvshard_verdicts__refuse(v, "vllm_tp_version",
                                 "TP %u on P and %u on D: different TP sizes need 0.9.1", T[0],
                                 T[1]);
    if (pair->model->attention != KVSHARD_ATTENTION_MLA && !pair->has_state && T[0] > T[1] &&
        T[0] > pair->model->full.heads)
        kvshard_verdicts__refuse(v, "vllm_replicated_kv",
                                 "P TP %u replicates the %u KV heads and D TP %u is smaller", T[0],
                                 pair->model->full.heads, T[1]);
    if (pair->has_state && !from(st, &V_STATE_NIXL))
        kvshard_verdicts__refuse(v, "vllm_state_version",
                                 "moving state layers with NIXL needs 0.19.0");
    if (pair->has_state && T[0] != T[1] && !from(st, &V_STATE_TP))
        kvshard_verdicts__refuse(v, "vllm_state_tp",
                                 "state layers between TP %u and TP %u need 0.20.0", T[0], T[1]);
    if (block[1] % block[0] != 0)
        kvshard_verdicts__refuse(v, "vllm_block_ratio", "D's block %s is not a multiple of P's %s",
                                 text[1], text[0]);
    if (block[0] != block[1] && (!from(st, &V_BLOCKS_DIFFER) ||
                                 (hma && !from(st, &V_HYBRID_BLOCKS))))
        kvshard_verdicts__refuse(v, "vllm_block_hma", "the blocks differ (%s on P, %s on D): %s",
                                 text[0], text[1],
                                 from(st, &V_BLOCKS_DIFFER)
                                     ? "with sliding or state layers they must match before 0.27.0"
                                     : "they must match before 0.12.0");
    if (pair->spec[0] != pair->spec[1])
        kvshard_verdicts__refuse(v, "vllm_spec",
                                 "num_speculative_tokens is %u on P and %u on D: both sides run "
                                 "the same speculation",
                                 pair->spec[0], pair->spec[1]);
    if (pair->has_state && from(st, &V_STATE_TP))
        v->requires[v->require_count++] = "VLLM_SSM_CONV_STATE_LAYOUT=DS";
}

/* Global ranks: dp, pp, cp, tp. */
static const kvshard_profile__rules rules = {
    KVSHARD_PP_RULE_VLLM,
    partition,
    NULL,
    KVSHARD_RANK_LAYOUT_VLLM,
    {KVSHARD_PROFILE__DP, KVSHARD_PROFILE__PP, KVSHARD_PROFILE__CP, KVSHARD_PROFILE__TP},
    true,
};

const kvshard__profile kvshard_profile__vllm = {
    .name = "vllm",
    .engine = KVSHARD_ENGINE_VLLM,
    .defaults.block_size = 16,
    .defaults.max_seqs = 256,
    .defaults.ownership = KVSHARD_OWNERSHIP_ORDINAL,
    .defaults.pp_rule = KVSHARD_PP_RULE_VLLM,
    .defaults.rank_layout = KVSHARD_RANK_LAYOUT_VLLM,
    .device.total_input = "device_memory_total",
    .device.utilization_input = "gpu_memory_utilization",
    .device.fill_input = "non_kv_memory",
    .device.reserve_auto = true,
    .device.stage_budgets = true, /* each stage's workers have their own B */
    .dialect.aliases = aliases,
    .dialect.inputs = inputs,
    .dialect.flag_style = KVSHARD_PROFILE__ARGPARSE,
    .versions = &versions,
    .counting.counts_draft_layers = true,
    .counting.ranks_by_balanced = true,
    .counting.sizes_without_budget = true,
    .hooks.settle = settle,
    .hooks.check = check,
    .hooks.budget = budget,
    .hooks.capacity = capacity,
    .hooks.figures = figures,
    .hooks.warnings = warnings,
    .voice.budget_label = "Available KV cache memory",
    .voice.named_in_headers = true,
    .voice.no_budget_hint = "vllm profile: no budget: give `--kv-cache-memory-bytes` or the device "
                            "figures",
    .voice.write_capacity = write_capacity,
    .dialect.recommend = recommend,
    .dialect.partition_env = "VLLM_PP_LAYER_PARTITION",
    .voice.report_rows = report_rows,
    .voice.pool_split = pool_split,
    .voice.no_split = "vLLM has no layerwise split: every rank keeps every layer's KV",
    .voice.unreachable = unreachable,
    .rules = &rules,
    .fitting.length_input = "max_model_len",
    .fitting.utilization = fit_utilization,
    .fitting.repeated = fit_repeated,
    .fitting.false_as_no = true,
    .transfer_verdict = transfer_verdict,
};
