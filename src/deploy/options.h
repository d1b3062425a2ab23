/* Deployment options: one table of keys, one validator for files, flags and
 * the API alike. */
#ifndef KVSHARD_DEPLOY_OPTIONS_H
#define KVSHARD_DEPLOY_OPTIONS_H

#include "text/scalar.h"

typedef enum kvshard__option_id {
    KVSHARD__OPT_WORLD_SIZE,
    KVSHARD__OPT_DP_SIZE,
    KVSHARD__OPT_CP_SIZE,
    KVSHARD__OPT_ENABLE_SPLIT,
    KVSHARD__OPT_SPLIT_SIZE,
    KVSHARD__OPT_OWNERSHIP,
    KVSHARD__OPT_IS_DRAFT,
    KVSHARD__OPT_ENGINE,
    KVSHARD__OPT_KV_CACHE_DTYPE,
    KVSHARD__OPT_STATE_DTYPE,
    KVSHARD__OPT_BLOCK_SIZE,
    KVSHARD__OPT_MEMORY_PER_RANK,
    KVSHARD__OPT_MAX_SEQS,
    KVSHARD__OPT_DRAFT_TOKENS,
    KVSHARD__OPT_SCRATCH_LAYERS,
    KVSHARD__OPT_CONTEXT_LENGTH,
    KVSHARD__OPT_PREFIX_CACHE,
    KVSHARD__OPT_STATE_SLOTS,
    KVSHARD__OPT_DEVICE_TOTAL,
    KVSHARD__OPT_DEVICE_FREE,
    KVSHARD__OPT_UTILIZATION,
    KVSHARD__OPT_MAX_CACHE_SIZE,
    KVSHARD__OPT_COUNT
} kvshard__option_id;

typedef enum kvshard__section {
    KVSHARD__SECTION_PARALLEL,
    KVSHARD__SECTION_CACHE
} kvshard__section;

/* Name of a deployment section ("parallel", "cache"). */
const char *kvshard__section_name(kvshard__section section);

const char *kvshard__option_name(kvshard__option_id id);
kvshard__section kvshard__option_section(kvshard__option_id id);
bool kvshard__option_is_bool(kvshard__option_id id);
/* The option `key` names, or KVSHARD__OPT_COUNT. Flags (`flag`) may also
 * use an engine's own flag names when `engine` is that engine. */
kvshard__option_id kvshard__option_find(const char *key, size_t len, bool flag,
                                        kvshard_engine engine);

/* Parse `text` for option `id` and store it in `options`: YAML text (plain
 * or quoted) by YAML's rules, flag text by gflags' (booleans 1/0/yes/no...).
 * On failure the options are unchanged and the error names `source`/`mark`. */
int kvshard__option_parse(kvshard_options *options, kvshard__option_id id, const char *text,
                          size_t len, kvshard__value_style style, const char *source,
                          kvshard__mark mark, kvshard_error *err);

/* A boolean as text: YAML (plain) takes true or false; flags also take 1/0,
 * yes/no, t/f and y/n in any case. 1 true, 0 false, -1 neither. */
int kvshard__bool_text(const char *text, size_t len, kvshard__value_style style);

/* Check caller-built options: the struct size, then every field against the
 * ranges the parser applies (EPARALLEL, ERANGE or EINVAL naming the field). */
int kvshard__options_check(const kvshard_options *options, kvshard_error *err);

/* The names of the options only the xllm profile reads whose value in
 * `options` differs from KVSHARD_OPTIONS_INIT's, in table order, into
 * `names` (room for KVSHARD__XLLM_INPUTS); returns how many. */
#define KVSHARD__XLLM_INPUTS 6
size_t kvshard__xllm_inputs_set(const char **names, const kvshard_options *options);

/* The options with the engine profile's defaults in the unset fields. */
kvshard_options kvshard__options_settle(const kvshard_options *options);

/* T = world_size / (dp_size * cp_size), or 0 when that does not divide. */
uint32_t kvshard__attn_tp_size(const kvshard_options *options);

#endif /* KVSHARD_DEPLOY_OPTIONS_H */
