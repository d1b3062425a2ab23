/* The trtllm profile: what TensorRT-LLM's PyTorch backend allocates for its
 * paged KV cache on one GPU, from the engine's own rules, so that kvshard
 * prints the lines it logs at start-up: "Peak memory during memory usage
 * profiling ...", "Estimated max memory in KV cache : X GiB", "Number of
 * tokens per block: 32.", "[MemUsageChange] Allocated X GiB for max tokens
 * in paged KV cache (N)." and "max_seq_len=...". The engine sizes the cache
 * from a profiling run: a small temporary cache serves dummy requests, the
 * peak is measured, and a fraction of what the peak leaves (plus the
 * temporary cache it frees) becomes the KV cache, rounded up to whole
 * blocks. */
#include "profile/trtllm.h"

#include "profile/capacity.h"

#include "model/dtype.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define PROFILE (&kvshard_profile__trtllm)

/* The releases whose estimation adds the temporary cache back and whose
 * manager rounds the tokens up to whole blocks. */
static const kvshard_profile__versions versions = {"1.1.0", {1, 1, 0, 3, -1, -1},
                                                   KVSHARD_V(1, 1, 0)};

/* ---- inputs -------------------------------------------------------------------------- */

enum {
    IN_VERSION,
    IN_TP,
    IN_EP,
    IN_ATTENTION_DP,
    IN_MAX_NUM_TOKENS,
    IN_MAX_SEQ_LEN,
    IN_BEAM_WIDTH,
    IN_FRACTION,
    IN_MAX_TOKENS,
    IN_MAX_GPU_BYTES,
    IN_WINDOWS,
    IN_OVERLAP_OFF,
    IN_BACKEND,
    IN_OPTIONS_FILE,
    IN_DEVICE_TOTAL,
    IN_PEAK,
    IN_NON_KV,
};

enum { B_PYTORCH, B_TENSORRT, B_AUTODEPLOY };

static const kvshard_value__word backend_words[] = {
    {"pytorch", B_PYTORCH}, {"tensorrt", B_TENSORRT}, {"_autodeploy", B_AUTODEPLOY}, {NULL, 0}};

/* A list of windows: whole numbers separated by commas, with or without
 * brackets ("128,131072", "[128,131072]"). */
static int check_windows(const kvshard_value__def *def, const char *text, size_t len,
                         const char *source, kvshard__mark mark, kvshard_error *err)
{
    size_t i = 0, end = len;
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        i = 1;
        end = len - 1;
    }
    bool digit = false, ok = i < end;
    for (; ok && i < end; i++) {
        if (text[i] >= '0' && text[i] <= '9')
            digit = true;
        else if (text[i] == ',' && digit)
            digit = false;
        else
            ok = false;
    }
    if (ok && digit)
        return KVSHARD_OK;
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, text, len, 48);
    return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                               "engine_flag_value: %s \"%s\" is not a list of windows (whole "
                               "numbers separated by commas, such as [128,131072])",
                               def->name, shown);
}

/* The LLM API options file is YAML. */
static int check_options_file(const kvshard_value__def *def, const char *text, size_t len,
                              const char *source, kvshard__mark mark, kvshard_error *err)
{
    static const char *const endings[] = {".yaml", ".yml"};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(endings[k]);
        if (len > n && memcmp(text + len - n, endings[k], n) == 0)
            return KVSHARD_OK;
    }
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, text, len, 48);
    return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                               "engine_flag_value: %s \"%s\" is not a YAML file (.yaml or .yml)",
                               def->name, shown);
}

/* A deployment file may write the windows as a YAML list, [128, 131072]. */
static const kvshard_value__more windows_more = {check_windows, NULL, true};
static const kvshard_value__more options_file_more = {check_options_file, NULL, false};

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
    [IN_EP] = {{"ep_size", KVSHARD__VT_U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, true, NULL,
                NULL},
               NO_VALUE,
               "none"},
    [IN_ATTENTION_DP] = {{"enable_attention_dp", KVSHARD__VT_BOOL, 0, 1, R, false, NULL, NULL},
                         NO_VALUE,
                         NULL},
    [IN_MAX_NUM_TOKENS] = {{"max_num_tokens", KVSHARD__VT_U32, 1, UINT32_MAX, R, false, NULL,
                            NULL},
                           {8192, 0.0, NULL, 0},
                           NULL},
    [IN_MAX_SEQ_LEN] = {{"max_seq_len", KVSHARD__VT_U32, 1, UINT32_MAX, R, true, NULL, NULL},
                        NO_VALUE,
                        "the config's max_position_embeddings"},
    [IN_BEAM_WIDTH] = {{"max_beam_width", KVSHARD__VT_U32, 1, 1024, R, false, NULL, NULL},
                       {1, 0.0, NULL, 0},
                       NULL},
    [IN_FRACTION] = {{"kv_cache_free_gpu_memory_fraction", KVSHARD__VT_FRACTION, 0, 1, R, false,
                      NULL, NULL},
                     {0, 0.9, NULL, 0},
                     NULL},
    [IN_MAX_TOKENS] = {{"kv_cache_config.max_tokens", KVSHARD__VT_U32, 1, UINT32_MAX, R, true,
                        NULL, NULL},
                       NO_VALUE,
                       "none"},
    /* UINT64_MAX is "not given"; the engine's 0 means the same. */
    [IN_MAX_GPU_BYTES] = {{"kv_cache_config.max_gpu_total_bytes", KVSHARD__VT_BYTES, 0,
                           UINT64_MAX - 1, R, false, NULL, NULL},
                          {UINT64_MAX, 0.0, NULL, 0},
                          "none"},
    [IN_WINDOWS] = {{"kv_cache_config.max_attention_window", KVSHARD__VT_TEXT, 0, 0, R, true,
                     NULL, &windows_more},
                    NO_VALUE,
                    "none"},
    [IN_OVERLAP_OFF] = {{"disable_overlap_scheduler", KVSHARD__VT_BOOL, 0, 1, R, false, NULL,
                         NULL},
                        NO_VALUE,
                        NULL},
    [IN_BACKEND] = {{"backend", KVSHARD__VT_WORD, 0, 0, R, false, backend_words, NULL},
                    {B_PYTORCH, 0.0, NULL, 0},
                    NULL},
    [IN_OPTIONS_FILE] = {{"extra_llm_api_options", KVSHARD__VT_TEXT, 0, 0, R, true, NULL,
                          &options_file_more},
                         NO_VALUE,
                         "none"},
    [IN_DEVICE_TOTAL] = {{"device_memory_total", KVSHARD__VT_BYTES, 1, UINT64_MAX, R, true, NULL,
                          NULL},
                         NO_VALUE,
                         NULL},
    /* One size, or one a stage: each stage's ranks measure their own. */
    [IN_PEAK] = {{"peak_memory", KVSHARD__VT_SIZES, 1, UINT64_MAX, R, true, NULL,
                  &kvshard_profile__stage_sizes},
                 NO_VALUE,
                 "none"},
    /* UINT64_MAX is "not given", above every number it takes. */
    [IN_NON_KV] = {{"non_kv_memory", KVSHARD__VT_SIZES, 0, UINT64_MAX - 1, R, false, NULL,
                    &kvshard_profile__stage_sizes},
                   {UINT64_MAX, 0.0, NULL, 0},
                   "none"},
    {{NULL, KVSHARD__VT_U32, 0, 0, 0, false, NULL, NULL}, NO_VALUE, NULL},
};
#undef R
#undef NO_VALUE

/* TensorRT-LLM's names for kvshard's keys: trtllm-serve's flags and the
 * LLM API options' keys, a kv_cache_config key by its dotted name. The
 * dtypes take kvshard's words, and settling refuses those the engine does
 * not take by name. */
static const kvshard_profile__alias aliases[] = {
    {"tensor_parallel_size", "tp_size", NULL},
    {"pipeline_parallel_size", "pp_size", NULL},
    {"max_batch_size", "max_seqs", NULL},
    {"kv_cache_config.tokens_per_block", "block_size", NULL},
    {"kv_cache_config.dtype", "kv_cache_dtype", NULL},
    {"kv_cache_config.free_gpu_memory_fraction", "kv_cache_free_gpu_memory_fraction", NULL},
    {"kv_cache_config.mamba_ssm_cache_dtype", "state_dtype", NULL},
    {"config", "extra_llm_api_options", NULL},
    {"moe_expert_parallel_size", "ep_size", NULL},
    {NULL, NULL, NULL},
};

/* The LLM API options file (--extra_llm_api_options, --config): the keys
 * kvshard reads, each as the flag of its name; the keys trtllm-serve reads
 * that change none of the figures here (CUDA graphs and the like are in
 * the measured peak, given as peak_memory); and those that change the
 * cache in a way the profile does not model. The engine refuses a key it
 * does not know, and so does kvshard. */
static const char *const options_file_keys[] = {
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "moe_expert_parallel_size",
    "enable_attention_dp",
    "disable_overlap_scheduler",
    "max_batch_size",
    "max_num_tokens",
    "max_seq_len",
    "max_beam_width",
    "backend",
    "kv_cache_config.free_gpu_memory_fraction",
    "kv_cache_config.max_tokens",
    "kv_cache_config.max_gpu_total_bytes",
    "kv_cache_config.tokens_per_block",
    "kv_cache_config.dtype",
    "kv_cache_config.max_attention_window",
    "kv_cache_config.mamba_ssm_cache_dtype",
    NULL,
};
static const char *const options_file_skipped[] = {
    "cuda_graph_config",
    "moe_config",
    "print_iter_log",
    "enable_iter_perf_stats",
    "return_perf_metrics",
    "stream_interval",
    "num_postprocess_workers",
    "trust_remote_code",
    "kv_cache_config.enable_block_reuse",
    "kv_cache_config.enable_partial_reuse",
    "kv_cache_config.copy_on_partial_reuse",
    "kv_cache_config.event_buffer_max_size",
    NULL,
};
static const char *const options_file_unmodelled[] = {
    "speculative_config",
    "cp_config",
    "context_parallel_size",
    "kv_cache_config.sink_token_length",
    "kv_cache_config.host_cache_size",
    NULL,
};

/* ---- settling ------------------------------------------------------------------------ */

static const kvshard_trtllm__state *state_of(const kvshard_profile__state *s)
{
    return &s->trtllm;
}

static int fail(kvshard_diag__ctx *diag, const char *const *about, int code, const char *name,
                const char *fmt, ...) KVSHARD__PRINTF(5, 6);

/* "trtllm profile: NAME: ...", the message of every refusal. */
static int fail(kvshard_diag__ctx *diag, const char *const *about, int code, const char *name,
                const char *fmt, ...)
{
    char text[KVSHARD_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return kvshard_diag__fail(diag, about, code, "trtllm profile: %s: %s", name, text);
}

static int unsupported(kvshard_diag__ctx *diag, const char *option, const char *what)
{
    diag->option = option;
    return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                "%s is not covered yet", what);
}

/* The layer kinds the profile plans; a kind added to kvshard later is
 * refused here until it is named. */
static const uint32_t covered_kinds = 1u << KVSHARD_LAYER_FULL_ATTENTION |
                                      1u << KVSHARD_LAYER_SLIDING_ATTENTION |
                                      1u << KVSHARD_LAYER_NO_CACHE;
/* The hybrids the engine's Mamba hybrid manager runs, and their kinds. */
static const char *const hybrid_types[] = {"nemotron_h", "qwen3_next", NULL};
static const uint32_t hybrid_kinds = 1u << KVSHARD_LAYER_FULL_ATTENTION |
                                     1u << KVSHARD_LAYER_LINEAR_ATTENTION |
                                     1u << KVSHARD_LAYER_NO_CACHE;

static int check_coverage(const kvshard_profile__settling *s, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    const kvshard_options *o = s->options;
    const kvshard_value *in = s->inputs;
    if (m->num_state > 0) {
        if (!kvshard_profile__type_is(s->model_type, hybrid_types) ||
            (m->state.kind != KVSHARD_STATE_MAMBA2 && m->state.kind != KVSHARD_STATE_GDN)) {
            char what[160];
            snprintf(what, sizeof what,
                     "a model with %s state layers other than NemotronH and Qwen3-Next",
                     kvshard_state_kind_name(m->state.kind));
            return unsupported(diag, "engine", what);
        }
        if (m->attention != KVSHARD_ATTENTION_GQA || m->count[KVSHARD_LAYER_FULL_ATTENTION] == 0)
            return unsupported(diag, "engine",
                               "a hybrid without GQA full-attention layers");
        if (m->dtype != KVSHARD_DTYPE_BF16 && m->dtype != KVSHARD_DTYPE_FP16)
            return unsupported(diag, "engine",
                               "a hybrid whose model dtype (the conv state's) is neither "
                               "bfloat16 nor float16");
    }
    uint8_t kind = kvshard_profile__unplanned_kind(
        m, m->num_state > 0 ? hybrid_kinds : covered_kinds);
    diag->option = "engine";
    if (kind != KVSHARD__KIND_COUNT)
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "%s layers (%u of %u) are not covered yet",
                    kvshard_layer_kind_name((kvshard_layer_kind)kind), m->count[kind],
                    m->num_layers);
    if (m->attention == KVSHARD_ATTENTION_MLA && m->has_indexer)
        return unsupported(diag, "engine", "a DSA model (indexer keys)");
    if (in[IN_BACKEND].u != B_PYTORCH)
        return unsupported(diag, "backend", in[IN_BACKEND].u == B_TENSORRT
                                                ? "--backend tensorrt (the TensorRT engine)"
                                                : "--backend _autodeploy");
    if (in[IN_BEAM_WIDTH].u > 1)
        return unsupported(diag, "max_beam_width", "beam width above 1");
    if (in[IN_OPTIONS_FILE].text)
        return unsupported(diag, "extra_llm_api_options",
                           "an LLM API options file that reaches planning unread (give it as "
                           "--extra_llm_api_options FILE, or in a deployment file)");
    if (o->num_speculative_tokens > 0)
        return unsupported(diag, "num_speculative_tokens", "speculative decoding");
    if (o->cp_size > 1)
        return unsupported(diag, "cp_size", "context parallelism");
    if (s->given->enable_layerwise_split && s->given->layerwise_split_size > 1) {
        diag->option = "layerwise_split_size";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                    "engine_split_unsupported",
                    "layerwise_split_size %u: the engine has no layerwise split",
                    s->given->layerwise_split_size);
    }
    if (o->kv_cache_dtype != KVSHARD_DTYPE_AUTO && o->kv_cache_dtype != KVSHARD_DTYPE_FP8) {
        diag->option = "kv_cache_dtype";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE, "engine_unsupported",
                    "kv_cache_dtype %s is not one of the engine's (auto, fp8)",
                    kvshard_dtype_name(o->kv_cache_dtype));
    }
    if (o->kv_cache_dtype == KVSHARD_DTYPE_AUTO && m->dtype != KVSHARD_DTYPE_BF16 &&
        m->dtype != KVSHARD_DTYPE_FP16)
        return unsupported(diag, "kv_cache_dtype",
                           "the checkpoint's own cache dtype for a model that is neither bfloat16 "
                           "nor float16 (give kv_cache_config.dtype)");
    diag->option = NULL;
    return KVSHARD_OK;
}

/* The engine's world is tp ranks on each of pp stages; with attention DP
 * each rank keeps every KV head, which kvshard's layout says as tp
 * data-parallel ranks of one. */
static int settle_world(kvshard_profile__settling *s, kvshard_trtllm__state *st,
                        kvshard_diag__ctx *diag)
{
    kvshard_options *o = s->options;
    uint64_t tp = s->inputs[IN_TP].u, P = o->pp_size ? o->pp_size : 1;
    bool world_given = s->given->world_size != 1;
    if (!tp)
        tp = world_given ? o->world_size / P : 1;
    uint64_t world = tp * P;
    diag->option = "tp_size";
    if (world_given && s->given->world_size != world)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                                   "trtllm profile: world: world_size %u is not the engine's "
                                   "%llu ranks (--tp_size %llu x --pp_size %llu)",
                                   s->given->world_size, (unsigned long long)world,
                                   (unsigned long long)tp, (unsigned long long)P);
    diag->option = "dp_size";
    if (s->given->dp_size > 1)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                                   "trtllm profile: dp_size %u: the engine's data parallelism is "
                                   "--enable_attention_dp",
                                   s->given->dp_size);
    diag->option = NULL;
    bool attention_dp = s->inputs[IN_ATTENTION_DP].u != 0;
    st->tp = attention_dp || tp == 0 ? 1 : (uint32_t)tp;
    if (tp == 0 || world > KVSHARD_MAX_RANKS)
        return KVSHARD_OK; /* the options' own validation refuses it */
    o->world_size = (uint32_t)world;
    o->dp_size = attention_dp ? (uint32_t)tp : 1;
    return KVSHARD_OK;
}

/* max_attention_window: the list repeats over the rank's attention layers
 * (layer i takes entry i mod its length), each entry lowered to S; the
 * layers of one window make one pool. A list of one distinct window is S
 * for every layer, the same as none; one below S is refused. */
static int settle_windows(const kvshard_profile__settling *s, kvshard_trtllm__state *st,
                          const uint64_t *kind_bytes, kvshard_diag__ctx *diag)
{
    const char *text = s->inputs[IN_WINDOWS].text;
    if (!text)
        return KVSHARD_OK;
    uint64_t list[KVSHARD_TRTLLM__MAX_WINDOWS * 8];
    size_t n = 0;
    for (const char *q = text; *q;) {
        if (*q < '0' || *q > '9') {
            q++;
            continue;
        }
        uint64_t w = 0;
        for (; *q >= '0' && *q <= '9'; q++)
            w = w > UINT64_MAX / 10 ? UINT64_MAX : w * 10 + (uint64_t)(*q - '0');
        if (n == sizeof list / sizeof list[0])
            return unsupported(diag, "kv_cache_config.max_attention_window",
                               "a max_attention_window list of more than 128 entries");
        if (w == 0)
            return unsupported(diag, "kv_cache_config.max_attention_window",
                               "a max_attention_window of 0 tokens");
        list[n++] = w < st->max_seq_len ? w : st->max_seq_len;
    }
    uint32_t layer_of_kind = 0;
    for (uint32_t l = 0; l < s->model->num_layers; l++) {
        uint8_t kind = s->kinds[l];
        int k = kind == KVSHARD_LAYER_FULL_ATTENTION      ? 0
                : kind == KVSHARD_LAYER_SLIDING_ATTENTION ? 1
                                                          : -1;
        if (k < 0)
            continue;
        uint64_t w = list[layer_of_kind++ % n];
        uint32_t i = 0;
        while (i < st->num_windows && st->windows[i].window < w)
            i++;
        if (i == st->num_windows || st->windows[i].window != w) {
            if (st->num_windows == KVSHARD_TRTLLM__MAX_WINDOWS)
                return unsupported(diag, "kv_cache_config.max_attention_window",
                                   "more than 16 distinct attention windows");
            memmove(&st->windows[i + 1], &st->windows[i],
                    (st->num_windows - i) * sizeof st->windows[0]);
            st->windows[i] = (kvshard_trtllm__window){w, 0, 0};
            st->num_windows++;
        }
        st->windows[i].layers++;
        st->windows[i].token_bytes += kind_bytes[k];
    }
    if (st->num_windows == 1) {
        if (st->windows[0].window < st->max_seq_len)
            return unsupported(diag, "kv_cache_config.max_attention_window",
                               "one max_attention_window below max_seq_len for every layer");
        st->num_windows = 0;
    }
    return KVSHARD_OK;
}

static int partition(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err);

/* The stages' layers: pp_partition as given, else the engine's own cut. A
 * partition that does not fit the layers is the options' own refusal,
 * after settling: the stages are then left at one. */
static int settle_stages(const kvshard_profile__settling *s, kvshard_trtllm__state *st,
                         kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    const kvshard_options *o = s->options;
    uint32_t P = o->pp_size ? o->pp_size : 1, counts[KVSHARD_MAX_PP_PARTITION];
    st->num_stages = 1;
    counts[0] = m->num_layers;
    if (P > 1 && P <= m->num_layers && P <= KVSHARD_MAX_PP_PARTITION) {
        uint64_t sum = 0;
        for (uint32_t i = 0; i < o->pp_partition_count && i < P; i++)
            sum += o->pp_partition[i];
        if (o->pp_partition_count == P && sum == m->num_layers) {
            memcpy(counts, o->pp_partition, P * sizeof *counts);
            st->num_stages = P;
        } else if (o->pp_partition_count == 0 && o->pp_partition_rule == KVSHARD_PP_RULE_TRTLLM) {
            partition(counts, m->num_layers, P, NULL);
            st->num_stages = P;
        } else if (o->pp_partition_count == 0) {
            diag->option = "pp_partition_rule";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                        "engine_unsupported",
                        "pp_partition_rule is another engine's cut: TensorRT-LLM cuts its stages "
                        "by its own rule (trtllm) or as its pp_partition says; give the stages "
                        "as pp_partition");
        }
    }
    if (st->num_stages > 1 && s->inputs[IN_WINDOWS].text)
        return unsupported(diag, "kv_cache_config.max_attention_window",
                           "max_attention_window with pipeline stages");
    uint32_t first = 0;
    for (uint32_t i = 0; i < st->num_stages; i++) {
        kvshard__range r;
        kvshard_model__range_of(&r, s->kinds, NULL, NULL, first, counts[i]);
        kvshard_trtllm__stage *sg = &st->stages[i];
        sg->layer_first = first;
        sg->layer_count = counts[i];
        sg->kv_layers = r.census[KVSHARD_LAYER_FULL_ATTENTION] +
                        r.census[KVSHARD_LAYER_SLIDING_ATTENTION];
        if (sg->kv_layers == 0) {
            diag->option = "pp_partition";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                        "engine_unsupported",
                        "stage %u (layers %u-%u) holds no attention layer: the engine has no KV "
                        "cache to size there",
                        i, first, first + counts[i] - 1);
        }
        first += counts[i];
    }
    diag->option = NULL;
    return KVSHARD_OK;
}

/* c: a rank's KV bytes per token over its stage's attention layers, every
 * one cached in full: without max_attention_window the engine keeps S
 * tokens of every layer. */
static int settle_bytes(const kvshard_profile__settling *s, kvshard_trtllm__state *st,
                        kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    uint32_t T = st->tp;
    const char *uncovered = kvshard_profile__uncovered_cache(m, T);
    if (uncovered)
        return unsupported(diag, "engine", uncovered);
    uint64_t kv = kvshard_dtype__bytes(st->kv_dtype);
    kvshard__calc c = {false, false, false};
    uint64_t kind_bytes[2] = {0, 0}; /* a full and a sliding layer's */
    if (m->attention == KVSHARD_ATTENTION_MLA) {
        uint64_t latent = (uint64_t)m->kv_lora_rank + m->qk_rope_head_dim;
        kind_bytes[0] = kind_bytes[1] = kvshard__calc_mul(&c, latent, kv);
    } else {
        const kvshard__geometry *g[2] = {&m->full, &m->sliding};
        uint32_t n[2] = {m->count[KVSHARD_LAYER_FULL_ATTENTION],
                         m->count[KVSHARD_LAYER_SLIDING_ATTENTION]};
        for (int i = 0; i < 2; i++) {
            if (n[i] == 0)
                continue;
            diag->option = "tp_size";
            if (T > g[i]->heads)
                return fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                            "engine_unsupported",
                            "tp %u above the %u KV heads (the engine's KV head replication) is "
                            "not covered yet",
                            T, g[i]->heads);
            kind_bytes[i] = kvshard__calc_mul(&c, 2ull * (g[i]->heads / T) * g[i]->k_dim, kv);
        }
    }
    uint64_t slot = 0; /* one state layer's slot */
    if (m->num_state > 0) {
        /* The state pool: max_batch_size slots of every state layer at no
         * speculative tokens, the conv state in the model dtype. */
        st->has_state = true;
        st->ssm_dtype = s->options->state_dtype != KVSHARD_DTYPE_AUTO ? s->options->state_dtype
                                                                      : m->dtype;
        uint64_t conv = 0, temporal = 0;
        kvshard_profile__state_parts(&c, &conv, &temporal, &m->state, T, 0,
                                     kvshard_dtype__bytes(m->dtype),
                                     kvshard_dtype__bytes(st->ssm_dtype));
        slot = kvshard__calc_add(&c, conv, temporal);
    }
    for (uint32_t i = 0; i < st->num_stages; i++) {
        kvshard_trtllm__stage *sg = &st->stages[i];
        kvshard__range r;
        kvshard_model__range_of(&r, s->kinds, NULL, NULL, sg->layer_first, sg->layer_count);
        sg->token_bytes = kvshard__calc_add(
            &c, kvshard__calc_mul(&c, kind_bytes[0], r.census[KVSHARD_LAYER_FULL_ATTENTION]),
            kvshard__calc_mul(&c, kind_bytes[1], r.census[KVSHARD_LAYER_SLIDING_ATTENTION]));
        sg->state_bytes = kvshard__calc_mul(&c, kvshard__calc_mul(&c, slot, r.num_state),
                                            st->max_batch_size);
    }
    st->token_bytes = st->stages[0].token_bytes;
    st->state_bytes = st->stages[0].state_bytes;
    if (c.overflow)
        return unsupported(diag, "engine", "a KV cache whose bytes per token overflow 64 bits");
    diag->option = NULL;
    return settle_windows(s, st, kind_bytes, diag);
}

/* The estimation run's temporary cache: requests of n_in tokens until
 * max_num_tokens, each with e tokens more, in whole blocks. */
static void settle_estimation(const kvshard_profile__settling *s, kvshard_trtllm__state *st)
{
    uint64_t total = st->max_num_tokens, S = st->max_seq_len, tpb = st->tokens_per_block;
    uint64_t n_in = S > 1 ? S - 1 : 1;
    n_in = total < n_in ? total : n_in;
    uint64_t e = s->inputs[IN_OVERLAP_OFF].u ? 1 : 2;
    uint64_t blocks = total / n_in * kvshard__ceil_div(n_in + e, tpb);
    if (total % n_in)
        blocks += kvshard__ceil_div(total % n_in + e, tpb);
    if (s->inputs[IN_ATTENTION_DP].u)
        blocks *= s->options->world_size / st->num_stages; /* tp requests a step */
    st->tmp_tokens = blocks * tpb;
    st->tmp_bytes = st->tmp_tokens * st->token_bytes;
}

static int settle(kvshard_profile__settling *s, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = s->model;
    kvshard_options *o = s->options;
    kvshard_trtllm__state *st = &s->state->trtllm;
    /* The stages are written for the P in use only: clearing all of them
     * would cost every plan the room of the most stages. */
    memset(st, 0, offsetof(kvshard_trtllm__state, stages));
    int rc = kvshard_profile__version(&st->version, PROFILE, &s->inputs[IN_VERSION], diag);
    if (rc == KVSHARD_OK)
        rc = check_coverage(s, diag);
    if (rc == KVSHARD_OK)
        rc = settle_world(s, st, diag);
    if (rc)
        return rc;
    st->tokens_per_block = o->block_size ? o->block_size : PROFILE->defaults.block_size;
    st->max_batch_size = o->max_seqs ? o->max_seqs : PROFILE->defaults.max_seqs;
    st->max_num_tokens = (uint32_t)s->inputs[IN_MAX_NUM_TOKENS].u;
    st->max_seq_len = s->inputs[IN_MAX_SEQ_LEN].u ? (uint32_t)s->inputs[IN_MAX_SEQ_LEN].u
                                                  : m->max_position_embeddings;
    if (st->max_seq_len == 0) {
        diag->option = "max_seq_len";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the config gives no max_position_embeddings: give --max_seq_len");
    }
    st->kv_dtype = o->kv_cache_dtype == KVSHARD_DTYPE_FP8 ? KVSHARD_DTYPE_FP8 : m->dtype;
    st->fraction = (float)s->inputs[IN_FRACTION].d;
    if ((rc = settle_stages(s, st, diag)) != 0 ||
        (rc = kvshard_profile__check_stage_count(PROFILE->name, "peak_memory", s->inputs[IN_PEAK],
                                                 st->num_stages, diag)) != 0 ||
        (rc = settle_bytes(s, st, diag)) != 0)
        return rc;
    settle_estimation(s, st);
    o->block_size = st->tokens_per_block;
    o->max_seqs = st->max_batch_size;
    return KVSHARD_OK;
}

/* ---- budget and capacity ------------------------------------------------------------- */

/* The estimation's figures from the device, in the engine's doubles. */
typedef struct estimate {
    bool from_device;
    int64_t available; /* the KV memory before the caps */
    uint64_t mem;      /* after the caps: the budget */
    uint64_t tokens;   /* M */
} estimate;

/* The memory the peak leaves, times the fraction as a float32:
 * int((total - peak + tmp) x f32(f)); with non_kv_memory the peak is
 * non_kv + tmp + the state pool, so int((total - non_kv - state) x f32(f)).
 * tmp, the state pool, the peak and non_kv are the stage's (`filled`: the
 * device fill's non_kv a stage, or NULL). */
static int available_of(int64_t *out, const kvshard_value *in, const uint64_t *filled,
                        const kvshard_trtllm__state *st, uint32_t stage, kvshard_diag__ctx *diag)
{
    const kvshard_trtllm__stage *sg = &st->stages[stage];
    uint64_t total = in[IN_DEVICE_TOTAL].u;
    uint64_t peak = kvshard_profile__stage_size(in[IN_PEAK], NULL, stage);
    uint64_t non_kv = kvshard_profile__stage_size(in[IN_NON_KV], filled, stage);
    if (!peak && non_kv == UINT64_MAX) {
        diag->option = "peak_memory";
        return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING, "engine_input_missing",
                    "the budget from device_memory_total needs peak_memory (the peak the "
                    "engine logs) or non_kv_memory");
    }
    /* Exact integers first, as Python adds them; the one rounding is the
     * product's. */
    int64_t tmp_bytes = (int64_t)(st->tmp_tokens * sg->token_bytes);
    int64_t held = peak ? (int64_t)peak - tmp_bytes : (int64_t)non_kv + (int64_t)sg->state_bytes;
    double product = (double)((int64_t)total - held) * (double)st->fraction;
    *out = (int64_t)product;
    return KVSHARD_OK;
}

/* One stage's estimation, from its own bytes per token; a refusal names
 * the stage when there are several. */
static int estimate_of(estimate *e, const kvshard_options *o, const kvshard_value *in,
                       const uint64_t *filled, const kvshard_trtllm__state *st, uint32_t stage,
                       kvshard_diag__ctx *diag)
{
    const kvshard_trtllm__stage *sg = &st->stages[stage];
    memset(e, 0, sizeof *e);
    if (o->memory_per_rank) {
        e->available = (int64_t)o->memory_per_rank;
    } else {
        int rc = available_of(&e->available, in, filled, st, stage, diag);
        if (rc)
            return rc;
        e->from_device = true;
    }
    uint64_t c = sg->token_bytes;
    int64_t mem = e->available;
    uint64_t m = in[IN_MAX_TOKENS].u;
    if (m && mem > 0 && (uint64_t)mem / c >= m)
        mem = (int64_t)(m * c);
    e->tokens = mem > 0 ? (uint64_t)mem / c : 0;
    uint64_t g = in[IN_MAX_GPU_BYTES].u;
    if (g > 0 && g != UINT64_MAX && mem > 0 && (uint64_t)mem > g)
        mem = (int64_t)g;
    if (mem <= 0 || e->tokens == 0) {
        diag->option = o->memory_per_rank   ? "memory_per_rank"
                       : e->available > 0 && m ? "kv_cache_config.max_tokens"
                       : in[IN_PEAK].u          ? "peak_memory"
                                                : "non_kv_memory";
        char where[48] = "";
        if (st->num_stages > 1)
            snprintf(where, sizeof where, " on stage %u", stage);
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                    "no_memory_for_cache_blocks",
                    "%lld bytes for the KV cache hold no token of %llu bytes%s", (long long)mem,
                    (unsigned long long)c, where);
    }
    e->mem = (uint64_t)mem;
    return KVSHARD_OK;
}

/* The world's estimation: each stage's own, the fewest tokens binding (the
 * first stage with them), and the smallest memory over the stages. */
static int world_estimate(estimate *bind, uint32_t *binding, uint64_t *least_mem,
                          const kvshard_options *o, const kvshard_value *in,
                          const uint64_t *filled, const kvshard_trtllm__state *st,
                          kvshard_diag__ctx *diag)
{
    *binding = 0;
    for (uint32_t s = 0; s < st->num_stages; s++) {
        estimate e;
        int rc = estimate_of(&e, o, in, filled, st, s, diag);
        if (rc)
            return rc;
        if (s == 0 || e.tokens < bind->tokens) {
            *bind = e;
            *binding = s;
        }
        if (s == 0 || e.mem < *least_mem)
            *least_mem = e.mem;
    }
    return KVSHARD_OK;
}

static bool has_budget_inputs(const kvshard_options *o, const kvshard_value *in)
{
    return o->memory_per_rank > 0 || in[IN_DEVICE_TOTAL].u > 0;
}

static int budget(uint64_t *out, bool *has, const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    *has = false;
    if (!has_budget_inputs(c->options, c->inputs)) {
        if (c->inputs[IN_PEAK].u) {
            diag->option = "device_memory_total";
            return fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                        "engine_input_missing",
                        "peak_memory needs device_memory_total (or give memory_per_rank)");
        }
        return KVSHARD_OK;
    }
    estimate e;
    uint32_t binding;
    int rc = world_estimate(&e, &binding, out, c->options, c->inputs, c->fill_stages,
                            state_of(c->state), diag);
    if (rc)
        return rc;
    *has = true;
    return KVSHARD_OK;
}

/* One window's pool at a budget. */
typedef struct window_pool {
    uint64_t window;      /* after the fitting, before the reduction */
    uint32_t layers;
    uint64_t token_bytes; /* c_w */
    uint64_t max_tokens;  /* tokens_w */
    uint64_t blocks;      /* primary blocks */
    uint64_t adjusted;    /* the window the engine keeps */
} window_pool;

/* The windows' pools for mem bytes and M tokens, in increasing window
 * order; returns how many (windows that the fitting makes equal merge). */
static uint32_t pools_of(window_pool *out, const kvshard_trtllm__state *st, uint64_t mem,
                         uint64_t M)
{
    uint32_t n = st->num_windows;
    uint64_t weighted = 0, c_rem = 0;
    bool over = false;
    for (uint32_t i = 0; i < n; i++) {
        const kvshard_trtllm__window *w = &st->windows[i];
        out[i] = (window_pool){w->window, w->layers, w->token_bytes, 0, 0, 0};
        c_rem += w->token_bytes;
        if (w->token_bytes && w->window > (UINT64_MAX - weighted) / w->token_bytes)
            over = true;
        else
            weighted += w->window * w->token_bytes;
    }
    if (over || weighted >= mem) {
        /* Fitting: the windows grow together from the shortest while the
         * memory lasts, each layer past a window's end no longer paying. */
        uint64_t R = mem, sum = 0, prev = 0;
        uint32_t kept = 0;
        for (uint32_t i = 0; i < n; i++) {
            uint64_t take = R / c_rem, room = out[i].window - prev;
            take = take < room ? take : room;
            R -= take * c_rem;
            sum += take;
            uint64_t fitted = sum < M ? sum : M;
            if (fitted < out[i].window || fitted >= M)
                R = 0;
            prev = out[i].window;
            c_rem -= out[i].token_bytes;
            window_pool w = out[i];
            w.window = fitted;
            if (kept > 0 && out[kept - 1].window == fitted) {
                out[kept - 1].layers += w.layers;
                out[kept - 1].token_bytes += w.token_bytes;
            } else {
                out[kept++] = w;
            }
        }
        n = kept;
    }
    /* The shares, in binary32 as the engine computes them. */
    float sum_c = 0.0f;
    uint64_t all_c = 0;
    for (uint32_t i = 0; i < n; i++)
        all_c += out[i].token_bytes;
    sum_c = (float)all_c;
    float y[KVSHARD_TRTLLM__MAX_WINDOWS];
    double sum_y = 0.0;
    for (uint32_t i = 0; i < n; i++) {
        float x = (float)out[i].token_bytes / sum_c;
        y[i] = x * (float)out[i].window;
        sum_y += (double)y[i];
    }
    uint64_t tpb = st->tokens_per_block;
    for (uint32_t i = 0; i < n; i++) {
        float share = n == 1 ? 1.0f : (float)((double)y[i] / sum_y);
        float bytes = (float)mem * share;
        uint64_t tokens = (uint64_t)((double)bytes / (double)out[i].token_bytes);
        out[i].max_tokens = tokens < M ? tokens : M;
        out[i].blocks = kvshard__ceil_div(out[i].max_tokens, tpb);
        uint64_t held = out[i].blocks * tpb;
        out[i].adjusted = out[i].window > held ? held : out[i].window;
    }
    return n;
}

/* Notes the capacity keeps for the wording and warnings. */
enum {
    NOTE_AVAILABLE,
    NOTE_FROM_DEVICE,
    NOTE_MAX_SEQ_LEN,
    NOTE_ALLOCATED,
    NOTE_TOKENS,
    NOTE_BINDING
};

static int capacity(kvshard__capacity *c, uint64_t *rank_blocks, const kvshard__capacity_inputs *in,
                    kvshard_diag__ctx *diag)
{
    const kvshard_trtllm__state *st = state_of(in->state);
    const kvshard_options *o = in->options;
    uint64_t tpb = st->tokens_per_block;
    c->has_bytes_per_block = true;
    c->bytes_per_block = tpb * st->token_bytes;
    c->has_max_seqs = true;
    c->max_seqs = st->max_batch_size;
    c->notes[NOTE_MAX_SEQ_LEN] = st->max_seq_len;
    uint32_t first = kvshard_capacity__first_rank(in), end = kvshard_capacity__end_rank(in);
    uint32_t T = in->stage_ranks ? in->stage_ranks : in->num_ranks;
    for (uint32_t r = first; st->num_stages > 1 && T && in->rank_bytes_per_block && r < end; r++)
        in->rank_bytes_per_block[r] = tpb * st->stages[r / T % st->num_stages].token_bytes;
    if (!in->has_memory)
        return KVSHARD_OK;
    estimate e;
    memset(&e, 0, sizeof e); /* each branch below sets what it knows */
    uint32_t binding = 0;
    uint64_t least_mem = 0;
    if (in->own_budget) {
        int rc = world_estimate(&e, &binding, &least_mem, o, in->inputs, in->fill_stages, st,
                                diag);
        if (rc)
            return rc;
    } else {
        /* A budget given from outside the engine's estimation: it is every
         * stage's mem. */
        e.from_device = false;
        e.available = (int64_t)in->memory;
        e.mem = least_mem = in->memory;
        e.tokens = UINT64_MAX;
        for (uint32_t s = 0; s < st->num_stages; s++)
            if (in->memory / st->stages[s].token_bytes < e.tokens) {
                e.tokens = in->memory / st->stages[s].token_bytes;
                binding = s;
            }
    }
    if (e.tokens == 0) {
        diag->option = "memory_per_rank";
        return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                    "no_memory_for_cache_blocks",
                    "%llu bytes for the KV cache hold no token of %llu bytes",
                    (unsigned long long)e.mem,
                    (unsigned long long)st->stages[binding].token_bytes);
    }
    c->has_budget = true;
    c->budget = least_mem;
    c->notes[NOTE_BINDING] = binding;
    if (st->has_state) {
        c->has_state_slots = true;
        c->state_slots = st->max_batch_size;
        c->usable_state_slots = st->max_batch_size;
        c->reserved = st->state_bytes;
    }
    window_pool pools[KVSHARD_TRTLLM__MAX_WINDOWS];
    uint32_t n_pools = pools_of(pools, st, e.mem, e.tokens);
    c->has_num_blocks = true;
    c->num_blocks = 0;
    for (uint32_t i = 0; i < n_pools; i++) {
        if (pools[i].blocks == 0) {
            diag->option = o->memory_per_rank ? "memory_per_rank" : "engine";
            return fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                        "no_memory_for_cache_blocks",
                        "%llu bytes for the KV cache give window %llu no block",
                        (unsigned long long)e.mem, (unsigned long long)pools[i].window);
        }
        c->num_blocks += pools[i].blocks;
    }
    if (n_pools == 0)
        c->num_blocks = kvshard__ceil_div(e.tokens, tpb);
    int rc = kvshard_capacity__max_tokens(c, o, diag);
    if (rc)
        return rc;
    c->notes[NOTE_AVAILABLE] = e.available > 0 ? (uint64_t)e.available : 0;
    c->notes[NOTE_FROM_DEVICE] = e.from_device;
    c->notes[NOTE_TOKENS] = e.tokens;
    c->notes[NOTE_ALLOCATED] = c->max_tokens * st->token_bytes;
    if (st->max_seq_len > c->max_tokens)
        c->notes[NOTE_MAX_SEQ_LEN] = c->max_tokens;
    if (n_pools > 0) {
        c->notes[NOTE_ALLOCATED] = 0;
        for (uint32_t i = 0; i < n_pools; i++)
            c->notes[NOTE_ALLOCATED] += pools[i].blocks * tpb * pools[i].token_bytes;
        c->notes[NOTE_MAX_SEQ_LEN] = pools[n_pools - 1].adjusted;
    }
    for (uint32_t r = first; rank_blocks && r < end; r++)
        rank_blocks[r] = c->num_blocks; /* the engine allocates one count everywhere */
    if (in->context_length == 0)
        return KVSHARD_OK;
    uint64_t fit = c->num_blocks / kvshard__ceil_div(in->context_length, tpb);
    for (uint32_t i = 0; i < n_pools; i++) {
        /* A request holds at most its window's tokens in each pool. */
        uint64_t kept = in->context_length < pools[i].adjusted ? in->context_length
                                                               : pools[i].adjusted;
        uint64_t pool_fit = pools[i].blocks / kvshard__ceil_div(kept, tpb);
        if (i == 0 || pool_fit < fit)
            fit = pool_fit;
    }
    c->has_balanced_max_seqs = true;
    c->balanced_max_seqs = fit;
    c->has_concurrency = true;
    c->concurrency = fit < st->max_batch_size ? fit : st->max_batch_size;
    return KVSHARD_OK;
}

/* ---- figures, warnings and wording ----------------------------------------------------- */

/* engine.windows: each window's pool at the budget, in increasing window
 * order; without a budget only what the layers give. Null without
 * windows. */
static void window_figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    if (st->num_windows == 0) {
        kvshard_profile__fig_text(f, "windows", NULL);
        return;
    }
    bool pool = c->has_num_blocks;
    window_pool pools[KVSHARD_TRTLLM__MAX_WINDOWS];
    uint32_t n = st->num_windows;
    if (pool) {
        n = pools_of(pools, st, c->budget, c->notes[NOTE_TOKENS]);
    } else {
        for (uint32_t i = 0; i < n; i++)
            pools[i] = (window_pool){st->windows[i].window, st->windows[i].layers,
                                     st->windows[i].token_bytes, 0, 0, 0};
    }
    kvshard_profile__json_begin(f);
    for (uint32_t i = 0; i < n; i++) {
        kvshard_profile__json_object(f);
        kvshard_profile__json_uint(f, "window", true, pools[i].window);
        kvshard_profile__json_uint(f, "layers", true, pools[i].layers);
        kvshard_profile__json_uint(f, "bytes_per_token", true, pools[i].token_bytes);
        kvshard_profile__json_uint(f, "max_tokens", pool, pools[i].max_tokens);
        kvshard_profile__json_uint(f, "primary_blocks", pool, pools[i].blocks);
        kvshard_profile__json_uint(f, "adjusted_window", pool, pools[i].adjusted);
        kvshard_profile__json_object_end(f);
    }
    kvshard_profile__json_end(f, "windows");
}

/* engine.stages: the profile plans one stage, which holds every layer. */
static estimate stage_estimate(const kvshard_profile__view *v, uint32_t s);

/* One object a stage: its layers, its bytes a token, and the memory and
 * tokens its ranks work out alone (null without a budget). */
static void stage_figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    bool pool = v->capacity->has_num_blocks;
    kvshard_profile__json_begin(f);
    for (uint32_t s = 0; s < st->num_stages; s++) {
        const kvshard_trtllm__stage *sg = &st->stages[s];
        estimate e;
        memset(&e, 0, sizeof e);
        if (pool)
            e = stage_estimate(v, s);
        kvshard_profile__json_object(f);
        kvshard_profile__json_uint(f, "stage", true, s);
        kvshard_profile__json_uint(f, "layer_first", true, sg->layer_first);
        kvshard_profile__json_uint(f, "layer_count", true, sg->layer_count);
        kvshard_profile__json_uint(f, "kv_layers", true, sg->kv_layers);
        kvshard_profile__json_uint(f, "kv_bytes_per_token", true, sg->token_bytes);
        kvshard_profile__json_uint(f, "budget", pool, e.mem);
        kvshard_profile__json_uint(f, "max_tokens", pool, e.tokens);
        kvshard_profile__json_object_end(f);
    }
    kvshard_profile__json_end(f, "stages");
}

static void figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    bool pool = c->has_num_blocks, device = pool && c->notes[NOTE_FROM_DEVICE];
    /* The binding stage's figures: stage 0's without a budget. */
    uint32_t binding = pool ? (uint32_t)c->notes[NOTE_BINDING] : 0;
    const kvshard_trtllm__stage *bind = &st->stages[binding];
    uint64_t total = v->inputs[IN_DEVICE_TOTAL].u;
    uint64_t peak = kvshard_profile__stage_size(v->inputs[IN_PEAK], NULL, binding);
    kvshard_profile__fig_uint(f, "budget", c->has_budget, c->budget);
    kvshard_profile__fig_uint(f, "total_memory", total > 0, total);
    kvshard_profile__fig_uint(f, "peak_memory", peak > 0, peak);
    kvshard_profile__fig_uint(f, "tmp_kv_tokens", true, st->tmp_tokens);
    kvshard_profile__fig_uint(f, "tmp_kv_bytes", true, st->tmp_tokens * bind->token_bytes);
    kvshard_profile__fig_double(f, "free_gpu_memory_fraction", true, (double)st->fraction);
    kvshard_profile__fig_uint(f, "available_kv_bytes", device, c->notes[NOTE_AVAILABLE]);
    kvshard_profile__fig_uint(f, "kv_bytes_per_token", true, bind->token_bytes);
    kvshard_profile__fig_uint(f, "max_tokens", pool, c->notes[NOTE_TOKENS]);
    kvshard_profile__fig_uint(f, "tokens_per_block", true, st->tokens_per_block);
    kvshard_profile__fig_uint(f, "num_blocks", pool && st->num_windows == 0, c->num_blocks);
    kvshard_profile__fig_uint(f, "pool_tokens", pool, c->max_tokens);
    kvshard_profile__fig_uint(f, "allocated_bytes", pool, c->notes[NOTE_ALLOCATED]);
    kvshard_profile__fig_uint(f, "max_seq_len", true, c->notes[NOTE_MAX_SEQ_LEN]);
    kvshard_profile__fig_uint(f, "max_batch_size", true, st->max_batch_size);
    kvshard_profile__fig_uint(f, "max_num_tokens", true, st->max_num_tokens);
    kvshard_profile__fig_text(f, "kv_cache_dtype", kvshard_dtype_name(st->kv_dtype));
    window_figures(f, v);
    kvshard_profile__fig_uint(f, "state_slots", st->has_state, st->max_batch_size);
    kvshard_profile__fig_uint(f, "state_bytes", st->has_state, bind->state_bytes);
    kvshard_profile__fig_text(f, "ssm_dtype",
                              st->has_state ? kvshard_dtype_name(st->ssm_dtype) : NULL);
    kvshard_profile__fig_uint(f, "pp_size", true, st->num_stages);
    kvshard_profile__fig_partition(f, "pp_partition", v);
    kvshard_profile__fig_uint(f, "binding_stage", pool, c->notes[NOTE_BINDING]);
    stage_figures(f, v);
}

static void warnings(kvshard_profile__warn_fn sink, void *ctx, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    char message[240];
    if (st->has_state) {
        snprintf(message, sizeof message,
                 "the engine's state pool holds max_batch_size %u slots, allocated before its "
                 "profiling run: no more requests than that run at once",
                 st->max_batch_size);
        sink(ctx, KVSHARD_WARN_ENGINE_STATE_SLOTS_FIXED, message);
    }
    if (!c->has_num_blocks)
        return;
    if (st->num_windows > 0) {
        window_pool pools[KVSHARD_TRTLLM__MAX_WINDOWS];
        uint32_t n = pools_of(pools, st, c->budget, c->notes[NOTE_TOKENS]);
        for (uint32_t i = 0; i < n; i++) {
            if (pools[i].adjusted == pools[i].window)
                continue;
            snprintf(message, sizeof message,
                     "attention window %llu is above the %llu tokens of its %llu blocks: the "
                     "engine reduces it to %llu",
                     (unsigned long long)pools[i].window, (unsigned long long)pools[i].adjusted,
                     (unsigned long long)pools[i].blocks, (unsigned long long)pools[i].adjusted);
            sink(ctx, KVSHARD_WARN_ENGINE_WINDOW_REDUCED, message);
        }
        return;
    }
    if (st->max_seq_len <= c->max_tokens)
        return;
    snprintf(message, sizeof message,
             "max_seq_len %u is above the %llu tokens of the pool: the engine reduces the "
             "attention window and max_seq_len to %llu",
             st->max_seq_len, (unsigned long long)c->max_tokens,
             (unsigned long long)c->max_tokens);
    sink(ctx, KVSHARD_WARN_ENGINE_WINDOW_REDUCED, message);
}

static void unreachable(char *buf, size_t cap, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    const kvshard_options *o = v->options;
    snprintf(buf, cap,
             "at %u tokens %llu %s at once, below max_batch_size %u: the pool's %llu blocks "
             "hold %llu of that length",
             o->context_length, (unsigned long long)c->concurrency,
             c->concurrency == 1 ? "sequence runs" : "sequences run", st->max_batch_size,
             (unsigned long long)c->num_blocks, (unsigned long long)c->balanced_max_seqs);
}

static void gib(char *buf, size_t cap, uint64_t bytes)
{
    kvshard_profile__gib(buf, cap, bytes);
}

/* The engine prints the fraction as Python prints the float32 widened to a
 * double: the shortest text that reads back as that double. */
static void fraction_text(char *buf, size_t cap, float fraction)
{
    kvshard_format__shortest_text(buf, cap, (double)fraction);
}

/* Stage s's estimation as its ranks work it out, for the lines and
 * figures that list the stages (call it with a budget only). */
static estimate stage_estimate(const kvshard_profile__view *v, uint32_t s)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    estimate e;
    memset(&e, 0, sizeof e);
    kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
    if (!has_budget_inputs(v->options, v->inputs) ||
        estimate_of(&e, v->options, v->inputs, v->fill_stages, st, s, &quiet) != KVSHARD_OK) {
        /* A budget from outside the engine's estimation is every stage's. */
        e.available = (int64_t)v->memory;
        e.mem = v->memory;
        e.tokens = v->memory / st->stages[s].token_bytes;
    }
    return e;
}

/* One line a stage, with P > 1: its layers, its bytes a token, its memory
 * and the tokens it would hold alone; the world runs with the fewest. */
static void write_stages(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    for (uint32_t s = 0; st->num_stages > 1 && s < st->num_stages; s++) {
        const kvshard_trtllm__stage *sg = &st->stages[s];
        estimate e = stage_estimate(v, s);
        char a[32];
        gib(a, sizeof a, e.mem);
        kvshard_format__printf(p,
                               "           stage %u: layers %u-%u, %u attention layers, %llu "
                               "bytes a token, %s GiB, %llu tokens%s\n",
                               s, sg->layer_first, sg->layer_first + sg->layer_count - 1,
                               sg->kv_layers, (unsigned long long)sg->token_bytes, a,
                               (unsigned long long)e.tokens,
                               s == v->capacity->notes[NOTE_BINDING]
                                   ? " (binds: every rank runs with it)"
                                   : "");
    }
}

static void write_capacity(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    const char *pad = "           the engine logs ";
    char a[32], b[32], d[32], t[32];
    kvshard_format__printf(p, "capacity   trtllm %s profile: ", v->version);
    if (!c->has_num_blocks) {
        kvshard_format__printf(p, "%llu KV bytes per token, %u tokens per block; no budget: "
                                  "give `--memory_per_rank`, or `--device_memory_total` and "
                                  "`--peak_memory`\n",
                               (unsigned long long)st->token_bytes, st->tokens_per_block);
        return;
    }
    /* The binding stage's ranks log the figures every rank runs with. */
    uint32_t binding = (uint32_t)c->notes[NOTE_BINDING];
    uint64_t token_bytes = st->stages[binding].token_bytes;
    uint64_t tmp_bytes = st->tmp_tokens * token_bytes;
    if (c->notes[NOTE_FROM_DEVICE]) {
        uint64_t peak = kvshard_profile__stage_size(v->inputs[IN_PEAK], NULL, binding);
        uint64_t non_kv =
            kvshard_profile__stage_size(v->inputs[IN_NON_KV], v->fill_stages, binding);
        char f[40];
        fraction_text(f, sizeof f, st->fraction);
        gib(a, sizeof a, peak ? peak : non_kv + tmp_bytes);
        gib(b, sizeof b, c->notes[NOTE_AVAILABLE]);
        gib(d, sizeof d, v->inputs[IN_DEVICE_TOTAL].u);
        gib(t, sizeof t, tmp_bytes);
        kvshard_format__printf(p,
                               "Peak memory during memory usage profiling (torch + non-torch): "
                               "%s GiB, available KV cache memory when calculating max tokens: "
                               "%s GiB, fraction is set %s, kv size is %llu. device total memory "
                               "%s GiB, , tmp kv_mem %s GiB\n",
                               a, b, f, (unsigned long long)token_bytes, d, t);
    } else {
        gib(a, sizeof a, v->options->memory_per_rank);
        kvshard_format__printf(p, "KV memory %s GiB given\n", a);
    }
    gib(a, sizeof a, st->num_stages > 1 ? stage_estimate(v, binding).mem : c->budget);
    kvshard_format__printf(p, "%sEstimated max memory in KV cache : %s GiB\n", pad, a);
    if (st->num_windows > 0) {
        window_pool pools[KVSHARD_TRTLLM__MAX_WINDOWS];
        uint32_t n = pools_of(pools, st, c->budget, c->notes[NOTE_TOKENS]);
        for (uint32_t i = 0; i < n; i++)
            if (pools[i].adjusted != pools[i].window)
                kvshard_format__printf(p,
                                       "%sAttention window size %llu exceeds upper bound %llu for "
                                       "available blocks. Reducing to %llu.\n",
                                       pad, (unsigned long long)pools[i].window,
                                       (unsigned long long)pools[i].adjusted,
                                       (unsigned long long)pools[i].adjusted);
        kvshard_format__printf(p, "%sNumber of tokens per block: %u.\n%s", pad,
                               st->tokens_per_block, pad);
        for (uint32_t i = 0; i < n; i++)
            kvshard_format__printf(p, "%swindow %llu: %llu primary blocks", i ? ", " : "",
                                   (unsigned long long)pools[i].window,
                                   (unsigned long long)pools[i].blocks);
        kvshard_format__printf(p, "\n");
    } else if (st->max_seq_len > c->max_tokens)
        kvshard_format__printf(p,
                               "%sAttention window size %u exceeds upper bound %llu for available "
                               "blocks. Reducing to %llu.\n",
                               pad, st->max_seq_len, (unsigned long long)c->max_tokens,
                               (unsigned long long)c->max_tokens);
    if (st->num_windows == 0) {
        kvshard_format__printf(p, "%sNumber of tokens per block: %u.\n", pad,
                               st->tokens_per_block);
        gib(a, sizeof a, c->notes[NOTE_ALLOCATED]);
        kvshard_format__printf(p,
                               "%s[MemUsageChange] Allocated %s GiB for max tokens in paged KV "
                               "cache (%llu).\n",
                               pad, a, (unsigned long long)c->max_tokens);
    }
    kvshard_format__printf(p,
                           "%smax_seq_len=%llu, max_num_requests=%u, max_num_tokens=%u, "
                           "max_batch_size=%u\n",
                           pad, (unsigned long long)c->notes[NOTE_MAX_SEQ_LEN], st->max_batch_size,
                           st->max_num_tokens, st->max_batch_size);
    write_stages(p, v);
}

static void report_rows(const kvshard__printer *p, const kvshard_profile__view *v, bool tail)
{
    const kvshard_trtllm__state *st = state_of(v->state);
    const kvshard__capacity *c = v->capacity;
    if (tail) {
        kvshard_format__row(p, "the engine logs");
        kvshard_format__printf(p,
                               "max_seq_len=%llu, max_num_requests=%u, max_num_tokens=%u, "
                               "max_batch_size=%u",
                               (unsigned long long)c->notes[NOTE_MAX_SEQ_LEN], st->max_batch_size,
                               st->max_num_tokens, st->max_batch_size);
        kvshard_format__row_end(p);
        return;
    }
    kvshard_format__row(p, "budget per rank");
    kvshard_format__bytes(p, c->budget);
    kvshard_format__printf(p, " (the engine's estimated max memory in KV cache), trtllm %s profile",
                           v->version);
    kvshard_format__row_end(p);
}

/* The layout as trtllm-serve's command line: D instances of T x P GPUs,
 * no layerwise split. kv_cache_config keys stay in the user's options
 * file. */
static int recommend(char *buf, size_t cap, const kvshard_profile__layout *l, bool env)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    if (l->split > 1)
        return KVSHARD_EUNSUPPORTED;
    if (env)
        return 0;
    kvshard_profile__arg(buf, cap, &used, "--tp_size=%u", l->tp);
    if (l->pp > 1)
        kvshard_profile__arg(buf, cap, &used, "--pp_size=%u", l->pp);
    if (l->context_length) {
        kvshard_profile__arg(buf, cap, &used, "--max_seq_len=%u", l->context_length);
        kvshard_profile__arg(buf, cap, &used, "--max_batch_size=%llu",
                             (unsigned long long)l->seqs_per_replica);
    }
    kvshard_profile__arg(buf, cap, &used, "--kv_cache_free_gpu_memory_fraction=%s",
                         l->engine_fraction ? l->engine_fraction : l->utilization);
    return (int)used;
}

/* The flags a launch line of fit repeats when given: the estimation run's
 * batch changes the budget. */
static const char *const fit_repeated[] = {"max_num_tokens", NULL};

/* Under fit --engine, the fraction given, else the engine's 0.9, as given
 * (the engine rounds it to binary32 itself). */
static double fit_utilization(const kvshard_value *given, const kvshard_profile__state *state)
{
    (void)state;
    return given[IN_FRACTION].d;
}

/* ---- stages and ranks ---------------------------------------------------------------- */

/* TensorRT-LLM gives the extra layers to the first stages. */
static int partition(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err)
{
    (void)err;
    uint32_t q = layers / stages, r = layers % stages;
    for (uint32_t s = 0; s < stages; s++)
        counts[s] = q + (s < r);
    return KVSHARD_OK;
}

/* Global ranks: pp, dp, tp, cp. */
static const kvshard_profile__rules rules = {
    KVSHARD_PP_RULE_TRTLLM,
    partition,
    NULL,
    KVSHARD_RANK_LAYOUT_TRTLLM,
    {KVSHARD_PROFILE__PP, KVSHARD_PROFILE__DP, KVSHARD_PROFILE__TP, KVSHARD_PROFILE__CP},
    true,
};

const kvshard__profile kvshard_profile__trtllm = {
    .name = "trtllm",
    .engine = KVSHARD_ENGINE_TRTLLM,
    .defaults.block_size = 32,
    .defaults.max_seqs = 2048,
    .defaults.ownership = KVSHARD_OWNERSHIP_CONTIGUOUS,
    .defaults.pp_rule = KVSHARD_PP_RULE_TRTLLM,
    .defaults.rank_layout = KVSHARD_RANK_LAYOUT_TRTLLM,
    .device.total_input = "device_memory_total",
    .device.utilization_input = "kv_cache_free_gpu_memory_fraction",
    .device.fill_input = "non_kv_memory",
    .device.reserve_auto = true,
    .dialect.aliases = aliases,
    .dialect.inputs = inputs,
    .dialect.flag_style = KVSHARD_PROFILE__ARGPARSE,
    .dialect.options_file = "extra_llm_api_options",
    .dialect.options_file_keys = options_file_keys,
    .dialect.options_file_skipped = options_file_skipped,
    .dialect.options_file_unmodelled = options_file_unmodelled,
    .versions = &versions,
    .counting.counts_draft_layers = false,
    .counting.ranks_by_balanced = false,
    .counting.sizes_without_budget = true,
    .hooks.settle = settle,
    .hooks.budget = budget,
    .hooks.capacity = capacity,
    .hooks.figures = figures,
    .hooks.warnings = warnings,
    .voice.budget_label = "budget",
    .voice.named_in_headers = true,
    .voice.no_budget_hint = "trtllm profile: no budget: give `--memory_per_rank`, or "
                            "`--device_memory_total` and `--peak_memory`",
    .voice.write_capacity = write_capacity,
    .voice.report_rows = report_rows,
    .voice.no_split = "the engine has no layerwise split: every rank keeps every layer's KV",
    .voice.unreachable = unreachable,
    .dialect.recommend = recommend,
    .rules = &rules,
    /* A hybrid's state pool is max_batch_size slots, inside the peak. */
    .fitting.length_input = "max_seq_len",
    .fitting.utilization = fit_utilization,
    .fitting.limit_sizes_pools = true,
    .fitting.separate_instances = true,
    .fitting.tp_input = "tp_size",
    .fitting.repeated = fit_repeated,
    .fitting.underscores = true,
};
