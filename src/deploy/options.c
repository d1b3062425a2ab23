/* Deployment options: the table of keys and the one validator behind files,
 * flags and kvshard_options built by callers. */
#include "deploy/options.h"

#include "base/call.h"
#include "base/format.h"
#include "profile/versions.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const kvshard_value__word ownership_words[] = {
    {"ordinal", KVSHARD_OWNERSHIP_ORDINAL},
    {"global", KVSHARD_OWNERSHIP_GLOBAL},
    {"contiguous", KVSHARD_OWNERSHIP_CONTIGUOUS},
    {NULL, 0},
};

/* Engines name one-byte caches int8, fp8_e4m3 and fp8_e5m2, each with the
 * scales of fp8; fp8 is fp8_e4m3. */
static const kvshard_value__word kv_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp16", KVSHARD_DTYPE_FP16},
    {"float16", KVSHARD_DTYPE_FP16},  {"fp8", KVSHARD_DTYPE_FP8},
    {"fp8_e4m3", KVSHARD_DTYPE_FP8},  {"fp8_e5m2", KVSHARD_DTYPE_FP8_E5M2},
    {"int8", KVSHARD_DTYPE_INT8},     {NULL, 0},
};

static const kvshard_value__word state_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp16", KVSHARD_DTYPE_FP16},
    {"float16", KVSHARD_DTYPE_FP16},  {"fp32", KVSHARD_DTYPE_FP32},
    {"float32", KVSHARD_DTYPE_FP32},  {NULL, 0},
};

static const kvshard_value__word pp_rule_words[] = {
    {"vllm", KVSHARD_PP_RULE_VLLM},     {"sglang", KVSHARD_PP_RULE_SGLANG},
    {"trtllm", KVSHARD_PP_RULE_TRTLLM}, {"even", KVSHARD_PP_RULE_EVEN},
    {NULL, 0},
};

static const kvshard_value__word rank_layout_words[] = {
    {"vllm", KVSHARD_RANK_LAYOUT_VLLM},     {"sglang", KVSHARD_RANK_LAYOUT_SGLANG},
    {"trtllm", KVSHARD_RANK_LAYOUT_TRTLLM}, {"xllm", KVSHARD_RANK_LAYOUT_XLLM},
    {NULL, 0},
};

/* Each mechanism's name once, read by the words a user gives and by the
 * names a plan and its estimate write. */
#define OWNER_ATTENTION_NAME "owner_attention"
#define SELECTED_KV_NAME "selected_kv"
#define HISTORY_ROWS_NAME "history_rows"
#define FULL_LAYER_NAME "full_layer"

/* The comm: section's words, each mechanism's at its own index (a name is
 * read there, not searched for), the list's end after the last. */
static const kvshard_value__word decode_words[] = {
    [KVSHARD__COMM_NONE] = {"auto", KVSHARD__COMM_NONE},
    [KVSHARD__COMM_OWNER_ATTENTION] = {OWNER_ATTENTION_NAME, KVSHARD__COMM_OWNER_ATTENTION},
    [KVSHARD__COMM_SELECTED_KV] = {SELECTED_KV_NAME, KVSHARD__COMM_SELECTED_KV},
    [KVSHARD__COMM_HISTORY_ROWS] = {HISTORY_ROWS_NAME, KVSHARD__COMM_HISTORY_ROWS},
    [KVSHARD__COMM_FULL_LAYER] = {FULL_LAYER_NAME, KVSHARD__COMM_FULL_LAYER},
    [KVSHARD__COMM_FULL_LAYER + 1] = {NULL, 0},
};

/* Owner attention and selected rows answer a decode step's queries: no
 * prefill runs them. */
static const kvshard_value__word prefill_words[] = {
    {"auto", KVSHARD__COMM_NONE},
    {HISTORY_ROWS_NAME, KVSHARD__COMM_HISTORY_ROWS},
    {FULL_LAYER_NAME, KVSHARD__COMM_FULL_LAYER},
    {NULL, 0},
};

#define NAME_PART(name) {"" name, sizeof(name) - 1}

const kvshard_format__part kvshard_options__comm_mechanism_parts[KVSHARD__COMM_MECHANISMS] = {
    [KVSHARD__COMM_NONE] = {"", 0},
    [KVSHARD__COMM_OWNER_ATTENTION] = NAME_PART(OWNER_ATTENTION_NAME),
    [KVSHARD__COMM_SELECTED_KV] = NAME_PART(SELECTED_KV_NAME),
    [KVSHARD__COMM_HISTORY_ROWS] = NAME_PART(HISTORY_ROWS_NAME),
    [KVSHARD__COMM_FULL_LAYER] = NAME_PART(FULL_LAYER_NAME),
};

static const kvshard_value__word owner_output_words[] = {
    {"broadcast", 0}, {"scatter", 1}, {NULL, 0}};

static const kvshard_value__word link_words[] = {
    {"nvlink4", KVSHARD__LINK_NVLINK4},   {"nvlink5", KVSHARD__LINK_NVLINK5},
    {"hccs", KVSHARD__LINK_HCCS},         {"pcie4x16", KVSHARD__LINK_PCIE4X16},
    {"pcie5x16", KVSHARD__LINK_PCIE5X16}, {"custom", KVSHARD__LINK_CUSTOM},
    {NULL, 0},
};

static const kvshard_value__word accelerator_words[] = {
    {"h100", KVSHARD__ACCEL_H100},
    {"h200", KVSHARD__ACCEL_H200},
    {"b200", KVSHARD__ACCEL_B200},
    {"mi300x", KVSHARD__ACCEL_MI300X},
    {"ascend_910b", KVSHARD__ACCEL_ASCEND_910B},
    {"ascend_910c", KVSHARD__ACCEL_ASCEND_910C},
    {"bi_v100", KVSHARD__ACCEL_BI_V100},
    {"custom", KVSHARD__ACCEL_CUSTOM},
    {NULL, 0},
};

static const kvshard_value__word alpha_rule_words[] = {
    {"log2", KVSHARD__ALPHA_LOG2}, {"linear", KVSHARD__ALPHA_LINEAR},
    {"flat", KVSHARD__ALPHA_FLAT}, {NULL, 0}};

static const kvshard_value__word activation_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO}, {"bf16", KVSHARD_DTYPE_BF16},
    {"fp16", KVSHARD_DTYPE_FP16}, {"fp32", KVSHARD_DTYPE_FP32},
    {NULL, 0},
};

/* Peak figures from the vendors' data sheets; α is assumed where no
 * measurement of a small collective was published (docs/comm.md). */
const kvshard_options__link_preset kvshard_options__link_presets[KVSHARD__LINK_CUSTOM + 1] = {
    [KVSHARD__LINK_NONE] = {"custom", 0, 0.0, "given"},
    [KVSHARD__LINK_NVLINK4] = {"nvlink4", 450000000000u, 5.0,
                               "NVLink 4 of H100/H200 SXM, 900 GB/s both directions; alpha assumed"},
    [KVSHARD__LINK_NVLINK5] = {"nvlink5", 900000000000u, 5.0,
                               "NVLink 5 of B200, 1.8 TB/s both directions; alpha assumed"},
    [KVSHARD__LINK_HCCS] = {"hccs", 67000000000u, 7.0,
                            "fitted to a published profile of split collectives on 2 Ascend NPUs"},
    [KVSHARD__LINK_PCIE4X16] = {"pcie4x16", 24000000000u, 15.0,
                                "PCIe 4.0 x16, the share peer-to-peer copies reach; alpha assumed"},
    [KVSHARD__LINK_PCIE5X16] = {"pcie5x16", 48000000000u, 15.0,
                                "PCIe 5.0 x16, the same share; alpha assumed"},
    [KVSHARD__LINK_CUSTOM] = {"custom", 0, 0.0, "given"},
};

const kvshard_options__accelerator_preset
    kvshard_options__accelerator_presets[KVSHARD__ACCEL_CUSTOM + 1] = {
    [KVSHARD__ACCEL_NONE] = {"custom", 0, KVSHARD__LINK_NONE, "given"},
    [KVSHARD__ACCEL_H100] = {"h100", 3350000000000u, KVSHARD__LINK_NVLINK4, "H100 SXM data sheet"},
    [KVSHARD__ACCEL_H200] = {"h200", 4800000000000u, KVSHARD__LINK_NVLINK4, "H200 SXM data sheet"},
    [KVSHARD__ACCEL_B200] = {"b200", 8000000000000u, KVSHARD__LINK_NVLINK5, "B200 data sheet"},
    [KVSHARD__ACCEL_MI300X] = {"mi300x", 5300000000000u, KVSHARD__LINK_NONE,
                               "AMD Instinct MI300X data sheet"},
    [KVSHARD__ACCEL_ASCEND_910B] = {"ascend_910b", 1600000000000u, KVSHARD__LINK_HCCS,
                                    "assumed: half of the 910C"},
    [KVSHARD__ACCEL_ASCEND_910C] = {"ascend_910c", 3200000000000u, KVSHARD__LINK_HCCS,
                                    "TechPowerUp, April 2025"},
    [KVSHARD__ACCEL_BI_V100] = {"bi_v100", 1200000000000u, KVSHARD__LINK_PCIE4X16,
                                "TechPowerUp, 2021"},
    [KVSHARD__ACCEL_CUSTOM] = {"custom", 0, KVSHARD__LINK_NONE, "given"},
};

const char *kvshard_options__comm_mechanism_name(kvshard__comm_mechanism m)
{
    return m != KVSHARD__COMM_NONE && (size_t)m < KVSHARD__COMM_MECHANISMS
               ? kvshard_options__comm_mechanism_parts[m].text
               : NULL;
}

typedef struct option_def {
    kvshard_value__def value;
    kvshard__section section;
    size_t offset; /* of the field in kvshard_options, or in kvshard__explore_keys */
    bool explore_key;
} option_def;

#define FIELD(f) offsetof(kvshard_options, f)
#define EXPLORE_FIELD(f) offsetof(kvshard__explore_keys, f), true
#define PARALLEL KVSHARD__SECTION_PARALLEL
#define CACHE KVSHARD__SECTION_CACHE
#define COMM KVSHARD__SECTION_COMM

#define U32 KVSHARD__VT_U32
#define BYTES KVSHARD__VT_BYTES
#define BOOL KVSHARD__VT_BOOL
#define WORD KVSHARD__VT_WORD

/* activation_reserve: "auto" is the profile's figure (kvshard_options'
 * KVSHARD_RESERVE_AUTO, read as -1). The struct has no other room for it, so
 * a reserve given as a number is at most 2^64 - 2 bytes: the number 2^64 - 1
 * is refused, never read as auto. */
static const kvshard_value__word reserve_words[] = {{"auto", -1}, {NULL, 0}};

static const option_def defs[KVSHARD__OPT_COUNT] = {
    [KVSHARD__OPT_WORLD_SIZE] = {{"world_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, false,
                                  NULL, NULL},
                                 PARALLEL,
                                 FIELD(world_size)},
    [KVSHARD__OPT_DP_SIZE] = {{"dp_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, false, NULL,
                               NULL},
                              PARALLEL,
                              FIELD(dp_size)},
    [KVSHARD__OPT_CP_SIZE] = {{"cp_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, false, NULL,
                               NULL},
                              PARALLEL,
                              FIELD(cp_size)},
    [KVSHARD__OPT_ENABLE_SPLIT] = {{"enable_layerwise_split", BOOL, 0, 1, KVSHARD_ERANGE, false,
                                    NULL, NULL},
                                   PARALLEL,
                                   FIELD(enable_layerwise_split)},
    [KVSHARD__OPT_SPLIT_SIZE] = {{"layerwise_split_size", U32, 1, KVSHARD_MAX_RANKS,
                                  KVSHARD_EPARALLEL, false, NULL, NULL},
                                 PARALLEL,
                                 FIELD(layerwise_split_size)},
    [KVSHARD__OPT_OWNERSHIP] = {{"ownership", WORD, 0, 0, KVSHARD_ERANGE, true, ownership_words,
                                 NULL},
                                PARALLEL,
                                FIELD(ownership)},
    [KVSHARD__OPT_IS_DRAFT] = {{"is_draft", BOOL, 0, 1, KVSHARD_ERANGE, false, NULL, NULL},
                               PARALLEL,
                               FIELD(is_draft)},
    [KVSHARD__OPT_ENGINE] = {{"engine", WORD, 0, 0, KVSHARD_ERANGE, false,
                              kvshard_profiles__engine_words, NULL},
                             CACHE,
                             FIELD(engine)},
    [KVSHARD__OPT_KV_CACHE_DTYPE] = {{"kv_cache_dtype", WORD, 0, 0, KVSHARD_ERANGE, false,
                                      kv_dtype_words, NULL},
                                     CACHE,
                                     FIELD(kv_cache_dtype)},
    [KVSHARD__OPT_STATE_DTYPE] = {{"state_dtype", WORD, 0, 0, KVSHARD_ERANGE, false,
                                   state_dtype_words, NULL},
                                  CACHE,
                                  FIELD(state_dtype)},
    [KVSHARD__OPT_BLOCK_SIZE] = {{"block_size", U32, 1, KVSHARD_MAX_BLOCK_SIZE, KVSHARD_ERANGE,
                                  true, NULL, NULL},
                                 CACHE,
                                 FIELD(block_size)},
    [KVSHARD__OPT_MEMORY_PER_RANK] = {{"memory_per_rank", BYTES, 1, UINT64_MAX, KVSHARD_ERANGE,
                                       true, NULL, NULL},
                                      CACHE,
                                      FIELD(memory_per_rank)},
    [KVSHARD__OPT_MAX_SEQS] = {{"max_seqs", U32, 1, 1u << 24, KVSHARD_ERANGE, true, NULL, NULL},
                               CACHE,
                               FIELD(max_seqs)},
    [KVSHARD__OPT_DRAFT_TOKENS] = {{"num_speculative_tokens", U32, 0, 1024, KVSHARD_ERANGE, false,
                                    NULL, NULL},
                                   CACHE,
                                   FIELD(num_speculative_tokens)},
    [KVSHARD__OPT_SCRATCH_LAYERS] = {{"scratch_layers", U32, 0, 1024, KVSHARD_ERANGE, false, NULL,
                                      NULL},
                                     CACHE,
                                     FIELD(scratch_layers)},
    [KVSHARD__OPT_CONTEXT_LENGTH] = {{"context_length", U32, 1, KVSHARD_MAX_CONTEXT_LENGTH,
                                      KVSHARD_ERANGE, true, NULL, NULL},
                                     CACHE,
                                     FIELD(context_length)},
    [KVSHARD__OPT_PP_SIZE] = {{"pp_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, true, NULL,
                               NULL},
                              PARALLEL,
                              FIELD(pp_size)},
    [KVSHARD__OPT_PP_RULE] = {{"pp_partition_rule", WORD, 0, 0, KVSHARD_EPARTITION, true,
                               pp_rule_words, NULL},
                              PARALLEL,
                              FIELD(pp_partition_rule)},
    /* Its text is read into a list the deployment keeps (deploy.c); the
     * field here is the list's length. */
    [KVSHARD__OPT_PP_PARTITION] = {{"pp_partition", KVSHARD__VT_TEXT, 0, 0, KVSHARD_EPARTITION,
                                    true, NULL, NULL},
                                   PARALLEL,
                                   FIELD(pp_partition_count)},
    [KVSHARD__OPT_RANK_LAYOUT] = {{"rank_layout", WORD, 0, 0, KVSHARD_ERANGE, true,
                                   rank_layout_words, NULL},
                                  PARALLEL,
                                  FIELD(rank_layout)},
    [KVSHARD__OPT_SWEEP_PP] = {{"sweep_pp", BOOL, 0, 1, KVSHARD_ERANGE, false, NULL, NULL},
                               PARALLEL,
                               EXPLORE_FIELD(sweep_pp)},
    [KVSHARD__OPT_DEVICE_MEMORY] = {{"device_memory", BYTES, 1, UINT64_MAX, KVSHARD_ERANGE, true,
                                     NULL, NULL},
                                    CACHE,
                                    FIELD(device_memory)},
    [KVSHARD__OPT_MEMORY_UTILIZATION] = {{"memory_utilization", KVSHARD__VT_FRACTION, 0, 1,
                                          KVSHARD_ERANGE, true, NULL, NULL},
                                         CACHE,
                                         FIELD(memory_utilization)},
    [KVSHARD__OPT_ACTIVATION_RESERVE] = {{"activation_reserve", BYTES, 0, UINT64_MAX - 1,
                                          KVSHARD_ERANGE, false, reserve_words, NULL},
                                         CACHE,
                                         FIELD(activation_reserve)},
    /* Like pp_partition: a list the deployment keeps; the field is its length. */
    [KVSHARD__OPT_WEIGHTS_PER_RANK] = {{"weights_per_rank", KVSHARD__VT_TEXT, 0, 0,
                                        KVSHARD_EWEIGHTS, true, NULL, NULL},
                                       CACHE,
                                       FIELD(weights_per_rank_count)},
    [KVSHARD__OPT_WEIGHTS_TOTAL] = {{"weights_total", BYTES, 1, UINT64_MAX, KVSHARD_ERANGE, true,
                                     NULL, NULL},
                                    CACHE,
                                    FIELD(weights_total)},
    [KVSHARD__OPT_WEIGHTS_EXPERTS] = {{"weights_experts", BYTES, 0, UINT64_MAX, KVSHARD_ERANGE,
                                       true, NULL, NULL},
                                      CACHE,
                                      FIELD(weights_experts)},
    [KVSHARD__OPT_EXPERT_PARALLEL] = {{"expert_parallel", BOOL, 0, 1, KVSHARD_ERANGE, false, NULL,
                                       NULL},
                                      PARALLEL,
                                      FIELD(expert_parallel)},
    [KVSHARD__OPT_GPUS_PER_NODE] = {{"gpus_per_node", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_ERANGE,
                                     true, NULL, NULL},
                                    CACHE,
                                    EXPLORE_FIELD(gpus_per_node)},
    [KVSHARD__OPT_COMM_DECODE] = {{"comm_decode", WORD, 0, 0, KVSHARD_ERANGE, false, decode_words,
                                   NULL},
                                  COMM,
                                  EXPLORE_FIELD(comm.decode)},
    [KVSHARD__OPT_COMM_PREFILL] = {{"comm_prefill", WORD, 0, 0, KVSHARD_ERANGE, false,
                                    prefill_words, NULL},
                                   COMM,
                                   EXPLORE_FIELD(comm.prefill)},
    [KVSHARD__OPT_COMM_OWNER_OUTPUT] = {{"comm_owner_output", WORD, 0, 0, KVSHARD_ERANGE, false,
                                         owner_output_words, NULL},
                                        COMM,
                                        EXPLORE_FIELD(comm.owner_output)},
    [KVSHARD__OPT_COMM_LINK] = {{"comm_link", WORD, 0, 0, KVSHARD_ERANGE, true, link_words, NULL},
                                COMM,
                                EXPLORE_FIELD(comm.link)},
    [KVSHARD__OPT_COMM_LINK_BANDWIDTH] = {{"comm_link_bandwidth", BYTES, 1, UINT64_MAX,
                                           KVSHARD_ERANGE, true, NULL, NULL},
                                          COMM,
                                          EXPLORE_FIELD(comm.link_bandwidth)},
    [KVSHARD__OPT_COMM_LINK_LATENCY] = {{"comm_link_latency", KVSHARD__VT_DECIMAL, 0, 1000000000,
                                         KVSHARD_ERANGE, true, NULL, NULL},
                                        COMM,
                                        EXPLORE_FIELD(comm.link_latency_us)},
    [KVSHARD__OPT_COMM_ALPHA_RULE] = {{"comm_alpha_rule", WORD, 0, 0, KVSHARD_ERANGE, false,
                                       alpha_rule_words, NULL},
                                      COMM,
                                      EXPLORE_FIELD(comm.alpha_rule)},
    [KVSHARD__OPT_COMM_ACCELERATOR] = {{"comm_accelerator", WORD, 0, 0, KVSHARD_ERANGE, true,
                                        accelerator_words, NULL},
                                       COMM,
                                       EXPLORE_FIELD(comm.accelerator)},
    [KVSHARD__OPT_COMM_HBM_BANDWIDTH] = {{"comm_hbm_bandwidth", BYTES, 1, UINT64_MAX,
                                          KVSHARD_ERANGE, true, NULL, NULL},
                                         COMM,
                                         EXPLORE_FIELD(comm.hbm_bandwidth)},
    [KVSHARD__OPT_COMM_BATCH] = {{"comm_batch", U32, 1, 1u << 24, KVSHARD_ERANGE, true, NULL,
                                  NULL},
                                 COMM,
                                 EXPLORE_FIELD(comm.batch)},
    [KVSHARD__OPT_COMM_PROMPT_LENGTH] = {{"comm_prompt_length", U32, 1,
                                          KVSHARD_MAX_CONTEXT_LENGTH, KVSHARD_ERANGE, true, NULL,
                                          NULL},
                                         COMM,
                                         EXPLORE_FIELD(comm.prompt_length)},
    [KVSHARD__OPT_COMM_CHUNK] = {{"comm_chunk", U32, 1, KVSHARD_MAX_CONTEXT_LENGTH,
                                  KVSHARD_ERANGE, true, NULL, NULL},
                                 COMM,
                                 EXPLORE_FIELD(comm.chunk)},
    [KVSHARD__OPT_COMM_PREFIX_HIT] = {{"comm_prefix_hit", U32, 0, KVSHARD_MAX_CONTEXT_LENGTH,
                                       KVSHARD_ERANGE, false, NULL, NULL},
                                      COMM,
                                      EXPLORE_FIELD(comm.prefix_hit)},
    [KVSHARD__OPT_COMM_ACTIVATION_DTYPE] = {{"comm_activation_dtype", WORD, 0, 0, KVSHARD_ERANGE,
                                             false, activation_dtype_words, NULL},
                                            COMM,
                                            EXPLORE_FIELD(comm.activation_dtype)},
};

#undef U32
#undef BYTES
#undef BOOL
#undef WORD

bool kvshard_options__option_is_explore_key(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT && defs[id].explore_key;
}

const char *kvshard_options__section_name(kvshard__section section)
{
    return section == KVSHARD__SECTION_PARALLEL ? "parallel"
           : section == KVSHARD__SECTION_COMM   ? "comm"
                                                : "cache";
}

const char *kvshard_options__option_name(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT ? defs[id].value.name : "";
}

kvshard__section kvshard_options__option_section(kvshard__option_id id)
{
    return defs[id].section;
}

/* What each integer option counts, and how a text option is written, for
 * help; the others' types say what they are. */
/* What kvshard fit plans without: it searches the parallel sizes and the
 * split itself, works out the budgets and each layout's weights, and cuts
 * every stage count by the rule. Its help lists the others. */
static const bool fit_unread[KVSHARD__OPT_COUNT] = {
    [KVSHARD__OPT_WORLD_SIZE] = true,      [KVSHARD__OPT_CP_SIZE] = true,
    [KVSHARD__OPT_SPLIT_SIZE] = true,      [KVSHARD__OPT_OWNERSHIP] = true,
    [KVSHARD__OPT_MEMORY_PER_RANK] = true, [KVSHARD__OPT_PP_PARTITION] = true,
    [KVSHARD__OPT_SWEEP_PP] = true,        [KVSHARD__OPT_WEIGHTS_PER_RANK] = true,
};

static const char *const units[KVSHARD__OPT_COUNT] = {
    [KVSHARD__OPT_WORLD_SIZE] = "ranks",      [KVSHARD__OPT_DP_SIZE] = "ranks",
    [KVSHARD__OPT_CP_SIZE] = "ranks",         [KVSHARD__OPT_SPLIT_SIZE] = "ranks",
    [KVSHARD__OPT_BLOCK_SIZE] = "tokens",     [KVSHARD__OPT_MAX_SEQS] = "sequences",
    [KVSHARD__OPT_DRAFT_TOKENS] = "tokens",   [KVSHARD__OPT_SCRATCH_LAYERS] = "layers",
    [KVSHARD__OPT_CONTEXT_LENGTH] = "tokens", [KVSHARD__OPT_PP_SIZE] = "stages",
    [KVSHARD__OPT_PP_PARTITION] = "the layers of each stage, as 31,30",
    [KVSHARD__OPT_WEIGHTS_PER_RANK] = "a size, or one a stage: 17GiB,16.5GiB",
    [KVSHARD__OPT_GPUS_PER_NODE] = "GPUs",
    [KVSHARD__OPT_COMM_LINK_LATENCY] = "microseconds",
    [KVSHARD__OPT_COMM_BATCH] = "sequences",
    [KVSHARD__OPT_COMM_PROMPT_LENGTH] = "tokens",
    [KVSHARD__OPT_COMM_CHUNK] = "tokens",
    [KVSHARD__OPT_COMM_PREFIX_HIT] = "tokens",
};

const char *kvshard_options__option_unit(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT ? units[id] : NULL;
}

bool kvshard_options__option_is_bool(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT && defs[id].value.type == KVSHARD__VT_BOOL;
}

static kvshard__option_id option_named(const char *key, size_t len)
{
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        if (kvshard_text__is(key, len, defs[i].value.name))
            return (kvshard__option_id)i;
    }
    return KVSHARD__OPT_COUNT;
}

kvshard__option_id kvshard_options__option_id_of(const char *name, size_t len)
{
    return option_named(name, len);
}

/* Longest flag name an argparse profile knows; longer ones are unknown. */
#define FLAG_NAME_MAX 64

kvshard__deploy_key kvshard_options__key_lookup(const char *key, size_t len,
                                        const kvshard__profile *flags_of)
{
    kvshard__deploy_key ref = {KVSHARD__OPT_COUNT, NULL, NULL};
    char normal[FLAG_NAME_MAX];
    bool argparse = flags_of && flags_of->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE;
    if (argparse) {
        /* --max-model-len is --max_model_len. */
        if (len >= sizeof normal)
            return ref;
        for (size_t i = 0; i < len; i++)
            normal[i] = key[i] == '-' ? '_' : key[i];
        key = normal;
    }
    /* The engine's own spelling first: an alias may carry the engine's
     * words for an option of the same name (an engine's --kv-cache-dtype). */
    const kvshard_profile__alias *alias = flags_of ? kvshard_profiles__alias(flags_of, key, len)
                                                   : NULL;
    ref.option = alias ? KVSHARD__OPT_COUNT : option_named(key, len);
    if (ref.option != KVSHARD__OPT_COUNT)
        return ref;
    if (alias) {
        ref.option = option_named(alias->key, strlen(alias->key));
        ref.words = alias->words;
        if (ref.option == KVSHARD__OPT_COUNT)
            ref.setting = argparse ? kvshard_profiles__own_input(flags_of, alias->key,
                                                                 strlen(alias->key))
                                   : kvshard_profiles__gflags_input(alias->key, strlen(alias->key));
        return ref;
    }
    ref.setting = !flags_of  ? kvshard_profiles__input(key, len)
                  : argparse ? kvshard_profiles__own_input(flags_of, key, len)
                             : kvshard_profiles__gflags_input(key, len);
    return ref;
}

/* ---- the nearest key, for a typo ------------------------------------------------ */

/* Names longer than this get no suggestion: no key is that long. */
#define NEAREST_MAX 64

static bool same_char(char a, char b, bool dashes_alike)
{
    if (dashes_alike) {
        a = a == '-' ? '_' : a;
        b = b == '-' ? '_' : b;
    }
    return a == b;
}

/* Edits (insert, delete, change, swap two neighbours) from a to b: the
 * optimal string alignment distance, over bytes. */
static unsigned edits(const char *a, size_t n, const char *b, size_t m, bool dashes_alike)
{
    unsigned d[NEAREST_MAX + 1][NEAREST_MAX + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            unsigned cost = same_char(a[i - 1], b[j - 1], dashes_alike) ? 0u : 1u;
            unsigned best = d[i - 1][j] + 1;
            best = d[i][j - 1] + 1 < best ? d[i][j - 1] + 1 : best;
            best = d[i - 1][j - 1] + cost < best ? d[i - 1][j - 1] + cost : best;
            if (i > 1 && j > 1 && same_char(a[i - 1], b[j - 2], dashes_alike) &&
                same_char(a[i - 2], b[j - 1], dashes_alike) && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[n][m];
}

void kvshard_options__nearest_begin(kvshard_options__nearest *n, const char *typed, size_t len,
                                    bool dashes_alike)
{
    n->typed = typed;
    n->len = len;
    n->dashes_alike = dashes_alike;
    /* A typo: one edit in a short name, up to three in a long one; a name
     * of one or two characters is too short to tell. */
    n->best = len < 3 ? 0u : len <= 4 ? 1u : len / 4 < 3 ? (unsigned)(len / 4) : 3u;
    n->best++; /* the bound is inclusive: a candidate needs fewer edits than this */
    n->found = false;
    n->name[0] = '\0';
}

void kvshard_options__nearest_offer(kvshard_options__nearest *n, const char *candidate)
{
    size_t m = strlen(candidate);
    if (n->len > NEAREST_MAX || m > NEAREST_MAX || m == 0)
        return;
    size_t gap = m > n->len ? m - n->len : n->len - m;
    if (gap >= n->best)
        return;
    unsigned d = edits(n->typed, n->len, candidate, m, n->dashes_alike);
    if (d > 0 && d < n->best) {
        n->best = d;
        n->found = true;
        memcpy(n->name, candidate, m + 1);
    }
}

const char *kvshard_options__nearest_found(const kvshard_options__nearest *n)
{
    return n->found ? n->name : NULL;
}

bool kvshard_options__key_nearest(char *out, size_t cap, const char *key, size_t len,
                                  kvshard__section section)
{
    kvshard_options__nearest n;
    kvshard_options__nearest_begin(&n, key, len, false);
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        const char *name = defs[i].value.name;
        if (defs[i].section == section)
            kvshard_options__nearest_offer(&n, section == KVSHARD__SECTION_COMM
                                                   ? name + strlen("comm_")
                                                   : name);
    }
    /* Settings sit under cache:, but the engines' parallel sizes; none
     * under comm:. */
    for (const kvshard__profile *const *p = kvshard_profiles__all;
         *p && section != KVSHARD__SECTION_COMM; p++) {
        for (const kvshard_profile__input *in = (*p)->dialect.inputs; in && in->def.name; in++) {
            bool parallel = in->def.below_min == KVSHARD_EPARALLEL;
            if (parallel == (section == KVSHARD__SECTION_PARALLEL))
                kvshard_options__nearest_offer(&n, in->def.name);
        }
    }
    const char *found = kvshard_options__nearest_found(&n);
    if (found)
        snprintf(out, cap, "%s", found);
    return found != NULL;
}

/* ---- the flags of a profile ---------------------------------------------------- */

static kvshard_value get_field(const kvshard_options *o, const option_def *d);

/* `name` as the profile writes a flag: argparse engines write '-' for '_'. */
static void spell(char *out, size_t cap, const char *name, bool argparse)
{
    snprintf(out, cap, "%s", name);
    for (char *c = out; argparse && *c; c++)
        *c = *c == '_' ? '-' : *c;
}

static bool key_is(kvshard__deploy_key a, kvshard__deploy_key b)
{
    return a.option == b.option && (a.option != KVSHARD__OPT_COUNT || a.setting == b.setting);
}

/* The engine's other names for the key of `f`, and its words for the value
 * when an alias carries them. */
static void add_aliases(kvshard_options__flag *f, const kvshard__profile *p, bool argparse)
{
    for (const kvshard_profile__alias *a = p->dialect.aliases; a && a->flag; a++) {
        kvshard__deploy_key k = kvshard_options__key_lookup(a->flag, strlen(a->flag), p);
        if (!key_is(k, f->key))
            continue;
        char name[sizeof f->name];
        spell(name, sizeof name, a->flag, argparse);
        if (a->words)
            f->key.words = a->words;
        char own[sizeof f->name];
        spell(own, sizeof own, f->name, argparse);
        if (strcmp(name, own) != 0 && f->also_count < KVSHARD_OPTIONS__FLAG_ALSO)
            snprintf(f->also[f->also_count++], sizeof f->also[0], "%s", name);
    }
}

static void input_flag(kvshard_options__flag *f, const kvshard__profile *p,
                       const kvshard_profile__input *in, bool argparse)
{
    memset(f, 0, sizeof *f);
    spell(f->name, sizeof f->name, in->def.name, argparse);
    f->key.option = KVSHARD__OPT_COUNT;
    f->key.setting = in;
    f->read = kvshard_profiles__input_index(p, in->def.name) >= 0;
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q && !f->read; q++) {
        if (kvshard_profiles__input_index(*q, in->def.name) >= 0) {
            f->reader = *q;
            break;
        }
    }
    add_aliases(f, p, argparse);
}

void kvshard_options__each_flag(const kvshard__profile *p, kvshard_options__flag_fn fn, void *user)
{
    bool argparse = p->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE;
    kvshard_options__flag f;
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        memset(&f, 0, sizeof f);
        snprintf(f.name, sizeof f.name, "%s", defs[i].value.name);
        f.key.option = (kvshard__option_id)i;
        f.read = true;
        for (const char *const *o = p->dialect.ignored_options; o && *o; o++)
            f.read &= strcmp(*o, defs[i].value.name) != 0;
        add_aliases(&f, p, argparse);
        fn(user, &f);
    }
    /* Under argparse the profile's own inputs; under gflags every input a
     * gflags profile declares, once (kvshard_options__key_lookup's sets). */
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
        if (argparse ? *q != p : (*q)->dialect.flag_style != KVSHARD_PROFILE__GFLAGS)
            continue;
        for (const kvshard_profile__input *in = (*q)->dialect.inputs; in && in->def.name; in++) {
            const kvshard_profile__input *first =
                argparse ? in : kvshard_profiles__input(in->def.name, strlen(in->def.name));
            if (first != in)
                continue; /* declared by an earlier profile */
            input_flag(&f, p, in, argparse);
            fn(user, &f);
        }
    }
}

static void offer_flag(void *user, const kvshard_options__flag *known)
{
    kvshard_options__nearest *n = user;
    kvshard_options__nearest_offer(n, known->name);
    for (size_t i = 0; i < known->also_count; i++)
        kvshard_options__nearest_offer(n, known->also[i]);
}

void kvshard_options__offer_flags(kvshard_options__nearest *n, const kvshard__profile *p)
{
    kvshard_options__each_flag(p, offer_flag, n);
}

/* A default value as a flag would give it; "none" for an unset number. */
static void default_text(char *buf, size_t cap, const kvshard_value__def *def, kvshard_value v)
{
    const kvshard_value__word *w = NULL;
    switch (def->type) {
    case KVSHARD__VT_BOOL: snprintf(buf, cap, "%s", v.u ? "true" : "false"); break;
    case KVSHARD__VT_WORD:
        w = kvshard_value__word_of(def->words, (int)(int64_t)v.u);
        snprintf(buf, cap, "%s", w ? w->text : "none");
        break;
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL:
        if (v.d > 0)
            snprintf(buf, cap, "%g", v.d);
        else
            snprintf(buf, cap, "none");
        break;
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT:
        snprintf(buf, cap, "%.*s", v.text ? (int)v.text_len : 4, v.text ? v.text : "none");
        break;
    case KVSHARD__VT_U32:
    case KVSHARD__VT_BYTES:
    default:
        if (kvshard_value__is_word(def, v))
            w = kvshard_value__word_of(def->words, (int)(int64_t)v.u);
        if (w)
            snprintf(buf, cap, "%s", w->text);
        else if (v.u == 0 && def->unset_ok)
            snprintf(buf, cap, "none");
        else
            snprintf(buf, cap, "%llu", (unsigned long long)v.u);
        break;
    }
}

void kvshard_options__flag_default(char *buf, size_t cap, const kvshard_options__flag *f,
                                   const kvshard__profile *p)
{
    /* Defaults the plan itself gives: the sequences it decodes at once,
     * the length it is planned for. */
    if (f->key.option == KVSHARD__OPT_COMM_BATCH) {
        snprintf(buf, cap, "the plan's concurrency");
        return;
    }
    if (f->key.option == KVSHARD__OPT_COMM_PROMPT_LENGTH) {
        snprintf(buf, cap, "context_length");
        return;
    }
    if (f->key.option != KVSHARD__OPT_COUNT) {
        /* The profile's defaults fill what KVSHARD_OPTIONS_INIT leaves
         * unset; the engine itself is kvshard's unless a flag names one. */
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        if (f->key.option != KVSHARD__OPT_ENGINE)
            o.engine = p->engine;
        o = kvshard_options__settle(&o);
        kvshard_value__def def = defs[f->key.option].value;
        kvshard_value v = get_field(&o, &defs[f->key.option]);
        /* Left unset, the utilization is the profile's share of the device. */
        if (f->key.option == KVSHARD__OPT_MEMORY_UTILIZATION && !(v.d > 0) &&
            p->device.utilization_ppb)
            v.d = p->device.utilization_ppb / 1e9;
        /* In the engine's words when it has one for the value. */
        if (f->key.words && def.type == KVSHARD__VT_WORD &&
            kvshard_value__word_of(f->key.words, (int)(int64_t)v.u))
            def.words = f->key.words;
        default_text(buf, cap, &def, v);
        return;
    }
    const kvshard_profile__input *in = f->key.setting;
    const kvshard__profile *reader = f->read ? p : f->reader;
    if (strcmp(in->def.name, "engine_version") == 0 && reader && reader->versions)
        snprintf(buf, cap, "%s", reader->versions->fallback); /* each profile's newest */
    else if (in->default_text)
        snprintf(buf, cap, "%s", in->default_text);
    else
        default_text(buf, cap, &in->def, in->fallback);
}

/* ---- fields by offset ----------------------------------------------------- */

/* The explore keys of options that carry none: their defaults. */
static const kvshard__explore_keys no_explore_keys = {
    false, 0, {.chunk = KVSHARD__COMM_DEFAULT_CHUNK}};

/* Where option `d` lives in `o`; an explore key, which options do not
 * carry, reads as its default. */
static const char *field_at(const kvshard_options *o, const option_def *d)
{
    return d->explore_key ? (const char *)&no_explore_keys + d->offset
                          : (const char *)o + d->offset;
}

/* A field's value; every enum of kvshard is int-sized. */
static kvshard_value get_field(const kvshard_options *o, const option_def *d)
{
    const char *base = field_at(o, d);
    kvshard_value v = {0, 0.0, NULL, 0};
    switch (d->value.type) {
    case KVSHARD__VT_U32: {
        uint32_t x;
        memcpy(&x, base, sizeof x);
        v.u = x;
        break;
    }
    case KVSHARD__VT_BYTES: memcpy(&v.u, base, sizeof v.u); break;
    case KVSHARD__VT_BOOL: {
        bool x;
        memcpy(&x, base, sizeof x);
        v.u = x;
        break;
    }
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL: memcpy(&v.d, base, sizeof v.d); break;
    case KVSHARD__VT_WORD: {
        int x;
        memcpy(&x, base, sizeof x);
        v.u = (uint64_t)(int64_t)x;
        break;
    }
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT:
    case KVSHARD__VT_SIZES: break; /* no option holds text or a list */
    }
    return v;
}

static void set_field(kvshard_options *o, kvshard__explore_keys *e, const option_def *d,
                      kvshard_value v)
{
    char *base = d->explore_key ? (char *)e + d->offset : (char *)o + d->offset;
    switch (d->value.type) {
    case KVSHARD__VT_U32: {
        uint32_t x = (uint32_t)v.u;
        memcpy(base, &x, sizeof x);
        break;
    }
    case KVSHARD__VT_BYTES: memcpy(base, &v.u, sizeof v.u); break;
    case KVSHARD__VT_BOOL: {
        bool x = v.u != 0;
        memcpy(base, &x, sizeof x);
        break;
    }
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL: memcpy(base, &v.d, sizeof v.d); break;
    case KVSHARD__VT_WORD: {
        int x = (int)(int64_t)v.u;
        memcpy(base, &x, sizeof x);
        break;
    }
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT:
    case KVSHARD__VT_SIZES: break;
    }
}

int kvshard_options__option_parse(kvshard_options *options, kvshard__explore_keys *explore,
                          kvshard__option_id id, const char *text, size_t len,
                          kvshard__value_style style, const kvshard_value__word *words,
                          const char *source, kvshard__mark mark, kvshard_error *err)
{
    kvshard_value v;
    kvshard_value__def def = defs[id].value;
    if (words && def.type == KVSHARD__VT_WORD)
        def.words = words;
    int rc = kvshard_value__parse(&v, &def, text, len, style, source, mark, err);
    if (rc == KVSHARD_OK)
        set_field(options, explore, &defs[id], v);
    return rc;
}

kvshard_value kvshard_options__option_value(const kvshard_options *options, kvshard__option_id id)
{
    return get_field(options, &defs[id]);
}

const kvshard_value__def *kvshard_options__option_def(kvshard__option_id id)
{
    return &defs[id].value;
}

bool kvshard_options__option_changed(const kvshard_options *options, kvshard__option_id id)
{
    kvshard_options init = KVSHARD_OPTIONS_INIT;
    return !kvshard_value__equal(&defs[id].value, get_field(options, &defs[id]),
                                 get_field(&init, &defs[id]));
}

/* Whether an option's field holds a value in range, read straight from the
 * struct: every plan checks every option, and nearly always all pass. A
 * false answer sends the field through the general check, which words the
 * error (or accepts what this one does not decide). */
static bool field_in_range(const kvshard_options *o, const option_def *d)
{
    const char *base = field_at(o, d);
    const kvshard_value__def *v = &d->value;
    switch (v->type) {
    case KVSHARD__VT_U32: {
        uint32_t x;
        memcpy(&x, base, sizeof x);
        return (x == 0 && v->unset_ok) || (x >= v->min && x <= v->max);
    }
    case KVSHARD__VT_BYTES: {
        uint64_t x;
        memcpy(&x, base, sizeof x);
        return (x == 0 && v->unset_ok) || (x >= v->min && x <= v->max);
    }
    case KVSHARD__VT_WORD: {
        int x;
        memcpy(&x, base, sizeof x);
        return (x == -1 && v->unset_ok) || kvshard_value__word_of(v->words, x) != NULL;
    }
    case KVSHARD__VT_FRACTION: {
        double x;
        memcpy(&x, base, sizeof x);
        return (x == 0.0 && v->unset_ok) || (x > 0.0 && x <= 1.0);
    }
    case KVSHARD__VT_DECIMAL: {
        double x;
        memcpy(&x, base, sizeof x);
        return (x == 0.0 && v->unset_ok) || (x > 0.0 && x <= (double)v->max);
    }
    case KVSHARD__VT_BOOL:
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT: return true;
    default: return false;
    }
}

int kvshard_options__check(const kvshard_options *options, kvshard_error *err)
{
    int rc = kvshard_call__size(err, "kvshard_options", options->size, sizeof *options,
                                "KVSHARD_OPTIONS_INIT");
    for (int i = 0; rc == KVSHARD_OK && i < KVSHARD__OPT_COUNT; i++) {
        /* A plan's options name the rule of their partition "explicit": they
         * plan again as given. */
        if (i == KVSHARD__OPT_PP_RULE && options->pp_partition_rule == KVSHARD_PP_RULE_EXPLICIT &&
            options->pp_partition_count > 0)
            continue;
        if (defs[i].explore_key)
            continue; /* not a field of the options: its parser checked it */
        if (!field_in_range(options, &defs[i]))
            rc = kvshard_value__check(&defs[i].value, get_field(options, &defs[i]), err);
    }
    if (rc == KVSHARD_OK && options->pp_partition_count > KVSHARD_MAX_PP_PARTITION)
        return kvshard_error__fail(err, KVSHARD_EPARTITION, "", kvshard_error__no_mark,
                             "pp_partition has %u entries; at most %u are read "
                             "(KVSHARD_MAX_PP_PARTITION)",
                             options->pp_partition_count, KVSHARD_MAX_PP_PARTITION);
    if (rc == KVSHARD_OK && options->pp_partition_count > 0 && !options->pp_partition)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "pp_partition_count is %u but pp_partition is NULL",
                             options->pp_partition_count);
    if (rc == KVSHARD_OK && options->weights_per_rank_count > KVSHARD_MAX_PP_PARTITION)
        return kvshard_error__fail(err, KVSHARD_EWEIGHTS, "", kvshard_error__no_mark,
                             "weights_per_rank has %u entries; at most %u are read "
                             "(KVSHARD_MAX_PP_PARTITION)",
                             options->weights_per_rank_count, KVSHARD_MAX_PP_PARTITION);
    if (rc == KVSHARD_OK && options->weights_per_rank_count > 0 && !options->weights_per_rank)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "weights_per_rank_count is %u but weights_per_rank is NULL",
                             options->weights_per_rank_count);
    return rc;
}

kvshard_options kvshard_options__settle(const kvshard_options *options)
{
    kvshard_options o = *options;
    const kvshard__profile *p = kvshard_profiles__of(o.engine);
    if (o.block_size == 0)
        o.block_size = p->defaults.block_size;
    if (o.max_seqs == 0)
        o.max_seqs = p->defaults.max_seqs;
    if (o.ownership == KVSHARD_OWNERSHIP_DEFAULT)
        o.ownership = p->defaults.ownership;
    if (o.pp_size == 0)
        o.pp_size = 1;
    if (o.pp_partition_count > 0)
        o.pp_partition_rule = KVSHARD_PP_RULE_EXPLICIT;
    else if (o.pp_partition_rule == KVSHARD_PP_RULE_DEFAULT)
        o.pp_partition_rule = p->defaults.pp_rule;
    if (o.rank_layout == KVSHARD_RANK_LAYOUT_DEFAULT)
        o.rank_layout = p->defaults.rank_layout;
    return o;
}

uint32_t kvshard_options__attn_tp_size(const kvshard_options *options)
{
    uint64_t pp = options->pp_size ? options->pp_size : 1;
    uint64_t pdc = pp * options->dp_size * options->cp_size;
    if (pdc == 0 || options->world_size % pdc != 0)
        return 0;
    return (uint32_t)(options->world_size / pdc);
}

int kvshard_options_set(kvshard_options *options, const char *key, const char *value,
                        const char *origin, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, options && key && value, "options, key and value");
    if (rc == KVSHARD_OK)
        rc = kvshard_options__check(options, err);
    if (rc)
        return rc;
    const char *from = origin ? origin : "option";
    kvshard__deploy_key ref =
        kvshard_options__key_lookup(key, strlen(key), kvshard_profiles__of(options->engine));
    if (ref.option == KVSHARD__OPT_PP_PARTITION)
        return kvshard_error__fail(err, KVSHARD_EINVAL, from, kvshard_error__no_mark,
                             "pp_partition is a list: set options->pp_partition (an array of "
                             "layer counts) and options->pp_partition_count");
    if (ref.option == KVSHARD__OPT_WEIGHTS_PER_RANK)
        return kvshard_error__fail(err, KVSHARD_EINVAL, from, kvshard_error__no_mark,
                             "weights_per_rank is a list: set options->weights_per_rank (an "
                             "array of sizes) and options->weights_per_rank_count");
    if (kvshard_options__option_is_explore_key(ref.option))
        return kvshard_error__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard_error__no_mark,
                             "%s is not a field of kvshard_options: set it in "
                             "kvshard_compare_options or kvshard_fit_options",
                             kvshard_options__option_name(ref.option));
    if (ref.option == KVSHARD__OPT_COUNT) {
        char shown[96];
        kvshard_error__excerpt(shown, sizeof shown, key, strlen(key), 64);
        if (ref.setting)
            return kvshard_error__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard_error__no_mark,
                                 "\"%s\" is a setting, not an option: set it with "
                                 "kvshard_settings_set()",
                                 shown);
        return kvshard_error__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard_error__no_mark,
                             "unknown option \"%s\"", shown);
    }
    return kvshard_options__option_parse(options, NULL, ref.option, value, strlen(value),
                                 KVSHARD__VALUE_FLAG, ref.words, from, kvshard_error__no_mark, err);
}

const char *kvshard_pp_rule_name(kvshard_pp_rule rule)
{
    if (rule == KVSHARD_PP_RULE_DEFAULT)
        return "default";
    if (rule == KVSHARD_PP_RULE_EXPLICIT)
        return "explicit";
    const kvshard_value__word *w = kvshard_value__word_of(pp_rule_words, rule);
    return w ? w->text : "unknown";
}

const char *kvshard_rank_layout_name(kvshard_rank_layout layout)
{
    if (layout == KVSHARD_RANK_LAYOUT_DEFAULT)
        return "default";
    const kvshard_value__word *w = kvshard_value__word_of(rank_layout_words, layout);
    return w ? w->text : "unknown";
}

const char *kvshard_ownership_name(kvshard_ownership ownership)
{
    if (ownership == KVSHARD_OWNERSHIP_DEFAULT)
        return "default";
    const kvshard_value__word *w = kvshard_value__word_of(ownership_words, ownership);
    return w ? w->text : "unknown";
}

/* ---- the public tables ---------------------------------------------------- */

/* "ranks, 1 to 65,536": what a value is, in one line. `unit` is the
 * option's (NULL for a setting), `words` the ones it takes, `reader` the
 * profile that reads it (for an engine version's range). */
static void value_doc(char *out, size_t cap, const kvshard_value__def *def,
                      const kvshard_value__word *words, const char *unit,
                      const kvshard__profile *reader)
{
    char lo[32], hi[32], list[256];
    kvshard_format__grouped_text(lo, sizeof lo, def->min);
    kvshard_format__grouped_text(hi, sizeof hi, def->max);
    switch (def->type) {
    case KVSHARD__VT_U32: {
        const char *counts = unit ? unit : def->below_min == KVSHARD_EPARALLEL ? "ranks" : NULL;
        int n = snprintf(out, cap, "%s, %s to %s", counts ? counts : "a whole number", lo, hi);
        if (words && n > 0 && (size_t)n < cap) {
            kvshard_value__list_words(list, sizeof list, words);
            snprintf(out + n, cap - (size_t)n, ", or %s", list);
        }
        break;
    }
    case KVSHARD__VT_BYTES: snprintf(out, cap, "bytes, or a size: 80GiB, 141GB, 72.5GiB"); break;
    case KVSHARD__VT_SIZES: snprintf(out, cap, "a size, or one a stage: 40GiB,38GiB"); break;
    case KVSHARD__VT_BOOL: snprintf(out, cap, "true or false"); break;
    case KVSHARD__VT_WORD:
        kvshard_value__list_words(list, sizeof list, words);
        snprintf(out, cap, "%s", list);
        break;
    case KVSHARD__VT_FRACTION: snprintf(out, cap, "a fraction above 0, at most 1"); break;
    case KVSHARD__VT_DECIMAL:
        snprintf(out, cap, "a decimal %s 0, at most %s", def->unset_ok ? "from" : "above", hi);
        break;
    case KVSHARD__VT_TEXT:
        if (reader && reader->versions && strcmp(def->name, "engine_version") == 0) {
            char oldest[KVSHARD_VERSIONS__TEXT_MAX], newest[KVSHARD_VERSIONS__TEXT_MAX];
            kvshard_versions__format(oldest, sizeof oldest, &reader->versions->oldest);
            kvshard_versions__format(newest, sizeof newest, &reader->versions->newest);
            snprintf(out, cap, "a release, %s to %s", oldest, newest);
        } else {
            snprintf(out, cap, "%s", unit ? unit : "text");
        }
        break;
    case KVSHARD__VT_OBJECT: {
        const kvshard_value__fields *fields = def->more ? def->more->fields : NULL;
        if (fields && fields->text && fields->integer)
            snprintf(out, cap, "a JSON object with \"%s\" and \"%s\"", fields->text,
                     fields->integer);
        else
            snprintf(out, cap, "a JSON object");
        break;
    }
    }
}

size_t kvshard_option_count(void)
{
    return KVSHARD__OPT_COUNT;
}

int kvshard_option_info_at(kvshard_option_info *out, size_t index)
{
    if (!out || out->size != sizeof *out || index >= KVSHARD__OPT_COUNT)
        return KVSHARD_EINVAL;
    const option_def *d = &defs[index];
    kvshard_option_info info = KVSHARD_OPTION_INFO_INIT;
    info.name = d->value.name;
    info.kind = kvshard_settings__public_type(d->value.type);
    /* The two lists are text to the parser and arrays in the struct. */
    if (index == KVSHARD__OPT_PP_PARTITION)
        info.kind = KVSHARD_SETTING_COUNTS;
    else if (index == KVSHARD__OPT_WEIGHTS_PER_RANK)
        info.kind = KVSHARD_SETTING_SIZES;
    info.min = d->value.min;
    info.max = d->value.max;
    kvshard_options init = KVSHARD_OPTIONS_INIT;
    default_text(info.default_value, sizeof info.default_value, &d->value, get_field(&init, d));
    info.words = d->value.words;
    info.unit = units[index];
    value_doc(info.doc, sizeof info.doc, &d->value, d->value.words, units[index], NULL);
    info.section = kvshard_options__section_name(d->section);
    info.unset_ok = d->value.unset_ok;
    /* A list's def holds its count's offset, which the parser sets. */
    if (index == KVSHARD__OPT_PP_PARTITION)
        info.offset = offsetof(kvshard_options, pp_partition);
    else if (index == KVSHARD__OPT_WEIGHTS_PER_RANK)
        info.offset = offsetof(kvshard_options, weights_per_rank);
    else if (!d->explore_key)
        info.offset = d->offset;
    *out = info;
    return KVSHARD_OK;
}

int kvshard_option_find(kvshard_option_info *out, const char *name)
{
    if (!out || !name)
        return KVSHARD_EINVAL;
    kvshard__option_id id = option_named(name, strlen(name));
    return id == KVSHARD__OPT_COUNT ? KVSHARD_EUNKNOWNKEY : kvshard_option_info_at(out, id);
}

/* The flag of each_flag's walk whose turn is `want`. */
typedef struct flag_walk {
    size_t want, at;
    const kvshard__profile *profile;
    kvshard_flag_info *out;
    bool found;
} flag_walk;

static void flag_row(void *user, const kvshard_options__flag *f)
{
    flag_walk *w = user;
    if (w->at++ != w->want)
        return;
    kvshard_flag_info *out = w->out;
    const kvshard__profile *p = w->profile;
    bool is_option = f->key.option != KVSHARD__OPT_COUNT;
    const kvshard_value__def *def = is_option ? &defs[f->key.option].value : &f->key.setting->def;
    snprintf(out->name, sizeof out->name, "%s", f->name);
    for (size_t i = 0; i < f->also_count; i++)
        snprintf(out->also[i], sizeof out->also[i], "%s", f->also[i]);
    out->also_count = f->also_count;
    out->key = def->name;
    out->is_setting = !is_option;
    out->words = f->key.words ? f->key.words : def->words;
    out->read = f->read;
    out->reader = f->read ? (int)p->engine : f->reader ? (int)f->reader->engine : -1;
    value_doc(out->doc, sizeof out->doc, def, out->words,
              is_option ? units[f->key.option] : NULL, f->read ? p : f->reader);
    kvshard_options__flag_default(out->default_value, sizeof out->default_value, f, p);
    out->argparse = p->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE;
    out->recommends_flags = p->dialect.recommend != NULL;
    out->fit_reads = !is_option || !fit_unread[f->key.option];
    w->found = true;
}

_Static_assert(KVSHARD_OPTIONS__FLAG_ALSO == KVSHARD_FLAG_ALSO_MAX, "the public flag's spellings");
_Static_assert(sizeof(((kvshard_options__flag *)0)->name) == KVSHARD_FLAG_NAME_MAX,
               "the public flag's name");

int kvshard_flag_info_at(kvshard_flag_info *out, kvshard_engine engine, size_t index)
{
    const kvshard__profile *p = kvshard_profiles__of(engine);
    if (!out || out->size != sizeof *out || !p)
        return KVSHARD_EINVAL;
    kvshard_flag_info info = KVSHARD_FLAG_INFO_INIT;
    flag_walk w = {index, 0, p, &info, false};
    kvshard_options__each_flag(p, flag_row, &w);
    if (!w.found)
        return KVSHARD_EINVAL;
    *out = info;
    return KVSHARD_OK;
}
