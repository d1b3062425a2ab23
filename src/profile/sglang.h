/* The sglang profile: SGLang's capacity, predicted from its own rules. */
#ifndef KVSHARD_PROFILE_SGLANG_H
#define KVSHARD_PROFILE_SGLANG_H

#include "profile/versions.h"

#include <kvshard/kvshard.h>

/* What the profile works out once per planning call and reads again for
 * every capacity, figure and line; the plan keeps it in its
 * kvshard_profile__state. */
typedef struct kvshard_sglang__state {
    kvshard_versions__v version;
    bool has_state;
    bool mla;
    bool dsa;
    bool split;      /* the DSA layer split */
    bool radix;      /* the radix cache is on */
    bool overlap;    /* the overlap schedule is on, after the strategy */
    bool multimodal; /* known when the budget needs it */
    bool v17;        /* K + 1 slots charged, 100 MiB kept */
    int strategy;    /* S_NO_BUFFER, S_EXTRA_BUFFER or S_EXTRA_BUFFER_LAZY */
    uint32_t ratio;  /* state slots a running request holds */
    uint32_t page;   /* p */
    uint32_t page_asked; /* --page-size as given; 0: not given */
    uint32_t tp, dp, dpdiv;
    uint32_t layers;     /* N_kv' (with stages: stage 0's) */
    uint32_t stages;     /* P */
    uint32_t binding_stage; /* the stage with the most layers: the fewest tokens */
    uint32_t stage_layers[KVSHARD_MAX_PP_PARTITION]; /* each stage's full-attention layers */
    uint32_t spec;       /* draft tokens */
    uint32_t context;    /* the engine's context length; 0: not known */
    uint64_t requested;  /* --max-running-requests q; 0: none */
    uint64_t mamba_size; /* --max-mamba-cache-size; 0: none */
    uint64_t max_total;  /* --max-total-tokens; 0: none */
    double mamba_ratio;  /* r */
    uint64_t cell;       /* bytes per token of the pool (stage 0's) */
    uint64_t binding_cell; /* bytes per token of the binding stage's pool */
    uint64_t k_token;    /* GQA: bytes per token of the K (and the V) buffer */
    uint64_t pool_token; /* MLA: bytes per token of the one buffer, indexer included */
    uint64_t index_token; /* DSA: bytes per token of the indexer buffers */
    kvshard_dtype kv_dtype; /* the KV dtype the engine runs */
    uint64_t slot, conv_slot, ssm_slot;
    kvshard_dtype ssm_dtype;
} kvshard_sglang__state;

extern const struct kvshard__profile kvshard_profile__sglang;

#endif /* KVSHARD_PROFILE_SGLANG_H */
