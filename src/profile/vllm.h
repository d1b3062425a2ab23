/* The vllm profile: vLLM's capacity, predicted from its own rules. */
#ifndef KVSHARD_PROFILE_VLLM_H
#define KVSHARD_PROFILE_VLLM_H

#include "profile/versions.h"

#include <kvshard/kvshard.h>

/* What the profile works out once per planning call and reads again for
 * every capacity, figure and line; the plan keeps it in its
 * kvshard_profile__state. */
typedef struct kvshard_vllm__state {
    kvshard_versions__v version;
    bool has_state;    /* the model has state layers */
    bool dsa;          /* MLA with indexer keys: one group of every layer */
    bool prefix;       /* prefix caching, after the rules */
    int mode;          /* MODE_*; -1 without state layers */
    uint8_t pc_reason; /* PC_*: why prefix caching is off though asked */
    uint8_t mode_reason;
    bool raised;                /* the block rose above the requested one */
    bool block_line;            /* "Setting attention block size" is printed */
    bool padded;                /* "Padding mamba page size" is printed */
    bool tokens_by_concurrency; /* the token line is int(concurrency x L) */
    bool seqs_error;            /* max_num_seqs above the blocks is refused */
    bool seqs_warning;          /* ... or caps the CUDA-graph sizes */
    bool eager;
    bool budget_ceil;   /* requested = ceil(total x u) */
    bool override_checked; /* the memory check's budget is the override's blocks */
    bool lines_per_worker; /* each worker logs its own two lines (before 0.11.1) */
    uint8_t check;         /* CHECK_*: the start-up memory check of the release */
    uint8_t first_type;    /* TYPE_*: the type of the first cache layer */
    uint32_t requested; /* the block asked for (or the default) */
    uint32_t pp;        /* pipeline stages */
    uint32_t block;
    uint32_t mamba_block;
    uint32_t max_model_len;
    uint32_t batched;
    uint32_t window;
    uint32_t spec;
    uint32_t draft_layers;
    uint32_t n_full, n_sliding, n_state; /* layers of each cache type */
    uint32_t group_size, groups;
    uint32_t groups_full, groups_sliding, groups_state; /* groups of each type */
    uint32_t pad_full, pad_sliding, pad_state;          /* padding layers of each type */
    uint32_t override_blocks;                           /* 0: none */
    uint64_t a1;                                        /* attention bytes per token of one layer */
    uint64_t idx; /* DSA indexer bytes per token of one layer */
    uint64_t page;
    uint64_t mamba_page; /* unpadded; 0 without state */
    uint64_t bytes_per_block;
    uint64_t blocks_per_request; /* at max_model_len */
    double padding_percent;
    double utilization;
    kvshard_dtype conv_dtype, ssm_dtype;
    char dtypes[24]; /* "conv\0temporal\0" */
} kvshard_vllm__state;

extern const struct kvshard__profile kvshard_profile__vllm;

#endif /* KVSHARD_PROFILE_VLLM_H */
