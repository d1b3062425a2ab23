/* The trtllm profile: TensorRT-LLM's PyTorch backend, predicted from its
 * own rules. */
#ifndef KVSHARD_PROFILE_TRTLLM_H
#define KVSHARD_PROFILE_TRTLLM_H

#include "profile/versions.h"

#include <kvshard/kvshard.h>

/* The most distinct windows a max_attention_window list may hold. */
#define KVSHARD_TRTLLM__MAX_WINDOWS 16

/* One window of kv_cache_config.max_attention_window: the rank's attention
 * layers that keep it, and their KV bytes per token. */
typedef struct kvshard_trtllm__window {
    uint64_t window; /* lowered to max_seq_len */
    uint32_t layers;
    uint64_t token_bytes;
} kvshard_trtllm__window;

/* One pipeline stage: its layers and what its ranks keep. Each rank works
 * out its own estimation from its stage's layers; the world runs with the
 * fewest tokens over the stages. */
typedef struct kvshard_trtllm__stage {
    uint32_t layer_first;
    uint32_t layer_count;
    uint32_t kv_layers;    /* its attention layers, which keep KV */
    uint64_t token_bytes;  /* c of a rank of the stage */
    uint64_t state_bytes;  /* a hybrid's state pool over the stage's state layers */
} kvshard_trtllm__stage;

/* What the profile works out once per planning call and reads again for
 * every capacity, figure and line; the plan keeps it in its
 * kvshard_profile__state. */
typedef struct kvshard_trtllm__state {
    kvshard_versions__v version;
    uint32_t tp;             /* the KV heads' split: tp, 1 with attention DP */
    uint32_t tokens_per_block;
    uint32_t max_seq_len;    /* S as given or from the config */
    uint32_t max_batch_size;
    uint32_t max_num_tokens;
    kvshard_dtype kv_dtype;  /* the cache's dtype, settled */
    uint64_t token_bytes;    /* c: one rank's KV bytes per token (stage 0's) */
    uint64_t tmp_tokens;     /* the estimation run's temporary cache, the same on every stage */
    uint64_t tmp_bytes;      /* stage 0's */
    bool has_state;          /* a hybrid: its state pool is max_batch_size slots */
    kvshard_dtype ssm_dtype; /* the temporal state's */
    uint64_t state_bytes;    /* the pool, allocated before the profiling run (stage 0's) */
    float fraction;          /* free_gpu_memory_fraction as the engine keeps it */
    uint32_t num_windows;    /* 0: every attention layer keeps max_seq_len tokens */
    kvshard_trtllm__window windows[KVSHARD_TRTLLM__MAX_WINDOWS]; /* increasing */
    uint32_t num_stages;     /* P */
    kvshard_trtllm__stage stages[KVSHARD_MAX_PP_PARTITION];
} kvshard_trtllm__state;

extern const struct kvshard__profile kvshard_profile__trtllm;

#endif /* KVSHARD_PROFILE_TRTLLM_H */
