/*
 * kvshard explore: compare split sizes and fit a layout to N GPUs, on top of
 * the core of kvshard.h (whose conventions hold here too).
 *
 * Experimental until kvshard 1.0: the rows, the option structs and the JSON
 * documents declared here may change in a minor release, and a program
 * that uses them is rebuilt against each one. The `size` field of every
 * struct still makes a mismatch fail loudly (KVSHARD_EINVAL).
 *
 * A build of kvshard with KVSHARD_BUILD_EXPLORE=OFF leaves this part out:
 * neither this header nor its functions are installed.
 */
#ifndef KVSHARD_EXPLORE_H
#define KVSHARD_EXPLORE_H

#include "kvshard/kvshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/** ## Comparing split sizes */
/* ------------------------------------------------------------------------ */


/** Plans for every split size dividing T, under each ownership rule. */
typedef struct kvshard_comparison kvshard_comparison;

/** One row of a comparison. Borrowed from it; later versions add fields at
 *  the end only. */
typedef struct kvshard_comparison_row {
    uint32_t layerwise_split_size;
    kvshard_ownership ownership;
    /** KVSHARD_OK, or why this size gives no valid plan (then the figures
     *  below are 0 and `error_message` says why). */
    int error;
    const char *error_message; /**< borrowed; "" when error is 0 */
    uint32_t min_owned_layers; /**< fewest KV layers a split rank owns */
    uint32_t max_owned_layers;
    uint64_t max_kv_bytes_per_token;
    uint64_t max_bytes_per_block;
    bool has_num_blocks;
    uint64_t num_blocks;
    uint64_t max_tokens;
    /** num_blocks over the uniform num_blocks (HUGE_VAL when the uniform plan
     *  fits no block; JSON null); without capacity, the uniform
     *  bytes_per_block over this row's. */
    double gain;
    /** Bit (1u << code) set for each kvshard_warning_code the row's plan has. */
    uint32_t warnings;
    /** With a context length and memory: the plan's figures. */
    bool has_concurrency;
    uint64_t concurrency;
    bool has_balanced_max_seqs;
    uint64_t balanced_max_seqs;
    /** The row's pipeline stages and attention TP size (several of each
     *  with sweep_pp). */
    uint32_t pp_size;
    uint32_t attn_tp_size;
} kvshard_comparison_row;

/** What a comparison covers besides the plan's options. Start from
 *  KVSHARD_COMPARE_OPTIONS_INIT. */
typedef struct kvshard_compare_options {
    size_t size;
    /** Also sweep pp_size over the divisors of world_size / (dp x cp) that
     *  can cut the layers; default false. */
    bool sweep_pp;
} kvshard_compare_options;

#define KVSHARD_COMPARE_OPTIONS_INIT { sizeof(kvshard_compare_options), false }

/** Build the comparison from a model and options (the split fields of
 *  `options` are ignored; NULL means KVSHARD_OPTIONS_INIT): every split
 *  size dividing T under each ownership rule, at the options' pp_size, or
 *  with `compare_options->sweep_pp` at every pp_size that divides
 *  world_size / (dp x cp) and can cut the layers (a pp_size whose plan
 *  fails for another reason than memory is left out). `compare_options`
 *  NULL means KVSHARD_COMPARE_OPTIONS_INIT. Fails only for errors no row can
 *  avoid; errors as kvshard_plan_create(), and KVSHARD_EPARTITION for
 *  pp_partition with sweep_pp. */
KVSHARD_EXPORT int kvshard_comparison_create(kvshard_comparison **out, const kvshard_model *model,
                                             const kvshard_options *options,
                                             const kvshard_compare_options *compare_options,
                                             const kvshard_allocator *allocator,
                                             kvshard_error *err);
/** kvshard_comparison_create() with the deployment's model and options, and
 *  its `sweep_pp` key as the compare option; errors about an option point
 *  at the key in the deployment file (or its override). */
KVSHARD_EXPORT int kvshard_deployment_compare(kvshard_comparison **out,
                                              const kvshard_deployment *deployment,
                                              kvshard_error *err);
/** Release a comparison. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_comparison_free(kvshard_comparison *comparison);
/** Number of rows: three (ordinal, global, contiguous) per split size
 *  dividing T. */
KVSHARD_EXPORT size_t kvshard_comparison_row_count(const kvshard_comparison *comparison);
/** Row `index`, borrowed; NULL when out of range. Rows go by S, then
 *  ordinal, global, contiguous. */
KVSHARD_EXPORT const kvshard_comparison_row *
kvshard_comparison_row_at(const kvshard_comparison *comparison, size_t index);
/** Index of the recommended row. With a context length and memory: the most
 *  balanced_max_seqs, then the most blocks; otherwise the most blocks (or,
 *  without memory, the fewest bytes per block). Ties go to the smaller S,
 *  then ordinal, global, contiguous. */
KVSHARD_EXPORT size_t kvshard_comparison_recommended(const kvshard_comparison *comparison);

/* ------------------------------------------------------------------------ */
/** ## Fit: the layout that serves the most sequences on N GPUs */
/* ------------------------------------------------------------------------ */

/** The short name of a status ("ok", "weights", "does_not_fit", "no_block",
 *  "kv_heads", ...), as fit's reasons and JSON documents name errors;
 *  "unknown" for other values. */
KVSHARD_EXPORT const char *kvshard_status_name(int code);

/** A search over layouts. Start from KVSHARD_FIT_OPTIONS_INIT. */
typedef struct kvshard_fit_options {
    size_t size;
    uint32_t gpus;        /**< N, at least 1 */
    uint32_t max_tp_size; /**< 0: gpus_per_node */
    uint32_t max_pp_size; /**< 0: the nodes, ceil(N / gpus_per_node) */
    uint32_t pp_size;     /**< 0: every P; else only this one */
    uint32_t dp_size;     /**< 0: every D; else only this one */
    bool unsplit;         /**< true: layerwise split size 1 only */
    /** GPUs of one node, 1 to KVSHARD_MAX_RANKS; 0: 8 (for
     *  kvshard_deployment_fit(), its `gpus_per_node` key, else 8). */
    uint32_t gpus_per_node;
} kvshard_fit_options;

#define KVSHARD_FIT_OPTIONS_INIT { sizeof(kvshard_fit_options), 0u, 0u, 0u, 0u, 0u, false, 0u }

/** One layout of a fit. Borrowed from the fit; later versions add fields at
 *  the end only. */
typedef struct kvshard_fit_row {
    size_t size;
    uint32_t rank; /**< 1 for the recommendation, then by the ranking */
    uint32_t tp_size;
    uint32_t pp_size;
    uint32_t dp_size;
    uint32_t layerwise_split_size;
    kvshard_ownership ownership; /**< KVSHARD_OWNERSHIP_DEFAULT when unsplit */
    bool fits;
    /** Why it does not fit: KVSHARD_EDOESNOTFIT, KVSHARD_ENOBLOCK, or
     *  KVSHARD_ENOBLOCK with no_sequence (no sequence at the context
     *  length); KVSHARD_OK when it fits. */
    int reason;
    bool no_sequence;
    uint64_t weights_per_rank; /**< the largest over its stages */
    uint64_t budget;           /**< the smallest over its ranks */
    uint32_t binding_stage;
    uint64_t num_blocks;
    uint32_t max_seqs; /**< what its plan reserves state for */
    bool has_seqs;     /**< a context length was given */
    uint64_t seqs_per_replica;
    uint64_t seqs_total;
    uint64_t tokens_per_replica;
    uint64_t tokens_total;
    const uint32_t *pp_partition; /**< pp_size layer counts */
    uint32_t warnings;            /**< bit (1 << code) per warning of its plan */
} kvshard_fit_row;

typedef struct kvshard_fit kvshard_fit;

/**
 * Every layout of `fit_options->gpus` GPUs within the node limits (T in
 * the node, stages across nodes), planned from the device inputs of
 * `options` (device_memory required; weights_total with weights_experts, or
 * the model directory's safetensors), ranked by the sequences they serve
 * at options->context_length (else by tokens). Errors: KVSHARD_EINVAL
 * (NULL arguments, `options` and `fit_options` included, an unknown size),
 * KVSHARD_EPROFILE (an engine profile: fit_profile), KVSHARD_EWEIGHTS
 * (no weights, or weights_per_rank), KVSHARD_EFITLIMITS, the error of the
 * first layout when none is admitted, KVSHARD_EDOESNOTFIT or
 * KVSHARD_ENOBLOCK when none fits, KVSHARD_EOVERFLOW when a layout's
 * tokens or sequences over its replicas pass 2^64 - 1.
 */
KVSHARD_EXPORT int kvshard_fit_create(kvshard_fit **out, const kvshard_model *model,
                                      const kvshard_options *options,
                                      const kvshard_fit_options *fit_options,
                                      const kvshard_allocator *allocator, kvshard_error *err);
/** kvshard_fit_create() with the deployment's model and options
 *  (`fit_options` NULL: KVSHARD_EINVAL); its pp_size and dp_size, when a
 *  flag or call set them, pin those sizes, and enable_layerwise_split set
 *  false so pins the split to 1. Errors point at the option responsible,
 *  as kvshard_deployment_plan()'s. */
KVSHARD_EXPORT int kvshard_deployment_fit(kvshard_fit **out, const kvshard_deployment *deployment,
                                          const kvshard_fit_options *fit_options,
                                          kvshard_error *err);
KVSHARD_EXPORT void kvshard_fit_free(kvshard_fit *fit);
/** Rows: those that fit, ranked, then those that do not, in enumeration
 *  order. */
KVSHARD_EXPORT size_t kvshard_fit_row_count(const kvshard_fit *fit);
KVSHARD_EXPORT const kvshard_fit_row *kvshard_fit_row_at(const kvshard_fit *fit, size_t index);
/** Layouts refused for another reason than memory (T, P, D and the
 *  status; each output may be NULL), and how many pairs (T, P) the node
 *  limits left out. */
KVSHARD_EXPORT size_t kvshard_fit_not_admitted_count(const kvshard_fit *fit);
KVSHARD_EXPORT int kvshard_fit_not_admitted(uint32_t *tp_size, uint32_t *pp_size,
                                            uint32_t *dp_size, int *code,
                                            const kvshard_fit *fit, size_t index);
KVSHARD_EXPORT uint32_t kvshard_fit_limited_layouts(const kvshard_fit *fit);
/** The recommendation's flags for `engine` ("kvshard", "vllm" or
 *  "sglang"), space-separated, or its environment (`env`: NAME=value
 *  entries). Written like snprintf; returns the length, KVSHARD_EUNSUPPORTED
 *  when that engine cannot run the layout (a split), KVSHARD_EUNKNOWNKEY for
 *  another engine, KVSHARD_EINVAL. */
KVSHARD_EXPORT int kvshard_fit_flags(char *buf, size_t cap, const kvshard_fit *fit,
                                     const char *engine, bool env);

/* ------------------------------------------------------------------------ */
/** ## Comm: the price of the split, an estimate */
/* ------------------------------------------------------------------------ */

/** The communication estimate of a plan (docs/comm.md): the collectives a
 *  decode step and a prompt issue under the engine's mechanism, and the
 *  decode throughput a memory-bandwidth floor gives with them. A lower
 *  bound under its assumptions, not a measurement. Times in microseconds,
 *  throughputs in tokens per second. Start from KVSHARD_COMM_ESTIMATE_INIT. */
typedef struct kvshard_comm_estimate {
    size_t size;
    bool given; /**< the plan's deployment had a comm input; else all 0 */
    uint32_t split_size;
    const char *decode_mechanism;  /**< "owner_attention", ...; NULL: none */
    const char *prefill_mechanism; /**< "history_rows", "full_layer"; NULL: none */
    bool has_link;
    const char *link_name;
    uint64_t link_bandwidth; /**< bytes/s a direction */
    double link_latency_us;
    bool has_accelerator;
    const char *accelerator_name;
    uint64_t hbm_bandwidth; /**< bytes/s */
    bool has_batch;
    uint64_t batch;
    uint64_t decode_collectives;
    bool has_decode_bytes;
    uint64_t decode_link_bytes; /**< on the busiest port */
    bool has_decode_time;
    double decode_comm_us;
    bool has_step; /**< base_us to throughput_total below */
    double base_us, step_us, tpot_us, throughput, throughput_total;
    bool has_unsplit; /**< the same plan without the split */
    double unsplit_throughput;
    bool has_gain;
    double throughput_gain;
    uint64_t prefill_collectives;
    bool has_prefill_bytes;
    uint64_t prefill_link_bytes;
    bool has_prefill_time;
    double prefill_comm_us;
} kvshard_comm_estimate;

#define KVSHARD_COMM_ESTIMATE_INIT                                                      \
    { sizeof(kvshard_comm_estimate), false, 0, NULL, NULL, false, NULL, 0, 0.0, false, NULL, \
      0, false, 0, 0, false, 0, false, 0.0, false, 0.0, 0.0, 0.0, 0.0, 0.0, false, 0.0,     \
      false, 0.0, 0, false, 0, false, 0.0 }

/** The estimate of `plan` into *out (its `size` set by the caller). A plan
 *  made without comm inputs gives `given` false. KVSHARD_EUNMODELED naming
 *  a layer or attention the estimate does not price yet; KVSHARD_EINVAL for
 *  a NULL argument or an unknown size. */
KVSHARD_EXPORT int kvshard_plan_comm(kvshard_comm_estimate *out, const kvshard_plan *plan,
                                     kvshard_error *err);

#ifdef __cplusplus
}
#endif

#endif /* KVSHARD_EXPLORE_H */
