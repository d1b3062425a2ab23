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
    KVSHARD__OPT_KV_CACHE_DTYPE,
    KVSHARD__OPT_BLOCK_SIZE,
    KVSHARD__OPT_MEMORY_PER_RANK,
    KVSHARD__OPT_MAX_SEQS,
    KVSHARD__OPT_SPECULATIVE_TOKENS,
    KVSHARD__OPT_SCRATCH_LAYERS,
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
/* The option named `key`, or KVSHARD__OPT_COUNT when there is none. */
kvshard__option_id kvshard__option_find(const char *key, size_t len);

/* Parse `text` for option `id` and store it in `options`. On failure the
 * options are unchanged and the error names `source` and `mark`. */
int kvshard__option_parse(kvshard_options *options, kvshard__option_id id, const char *text,
                          size_t len, kvshard__value_style style, const char *source,
                          kvshard__mark mark, kvshard_error *err);

/* Check caller-built options: the struct size, then every field against the
 * ranges the parser applies (EPARALLEL, ERANGE or EINVAL naming the field). */
int kvshard__options_check(const kvshard_options *options, kvshard_error *err);

/* T = world_size / (dp_size * cp_size), or 0 when that does not divide. */
uint32_t kvshard__attn_tp_size(const kvshard_options *options);

#endif /* KVSHARD_DEPLOY_OPTIONS_H */
