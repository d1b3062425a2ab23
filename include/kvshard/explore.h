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

/** How compare and fit rank their rows. */
typedef enum kvshard_rank_by {
    /** By throughput when the comm inputs give one (an accelerator, a link
     *  and a context length, and for compare a decode batch: a budget or
     *  comm_batch), else by capacity. */
    KVSHARD_RANK_AUTO = 0,
    KVSHARD_RANK_CAPACITY = 1,
    /** By the throughput estimate: KVSHARD_EMISSING without its inputs. */
    KVSHARD_RANK_THROUGHPUT = 2
} kvshard_rank_by;

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
    /** The row's plan's communication estimate (kvshard_plan_comm()), when
     *  the deployment has comm inputs and the row is not an error (else
     *  `given` false); its unsplit reference is the S = 1 row of the same
     *  pp_size. Never NULL. */
    const struct kvshard_comm_estimate *comm;
} kvshard_comparison_row;

/** What a comparison covers besides the plan's options. Start from
 *  KVSHARD_COMPARE_OPTIONS_INIT. */
typedef struct kvshard_compare_options {
    size_t size;
    /** Also sweep pp_size over the divisors of world_size / (dp x cp) that
     *  can cut the layers; default false. */
    bool sweep_pp;
    /** The ranking that picks the recommended row: by capacity, or by the
     *  throughput estimate (needs a deployment's accelerator, link, context
     *  length and decode batch). */
    kvshard_rank_by rank_by;
} kvshard_compare_options;

#define KVSHARD_COMPARE_OPTIONS_INIT { sizeof(kvshard_compare_options), false, KVSHARD_RANK_AUTO }

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
/** kvshard_deployment_compare() with compare options (NULL: as
 *  kvshard_deployment_compare()): pp_size is swept when
 *  `compare_options->sweep_pp` or the deployment's sweep_pp key says so,
 *  and the rows are ranked by `compare_options->rank_by`
 *  (KVSHARD_RANK_THROUGHPUT without an accelerator, a link, a context
 *  length or a decode batch: KVSHARD_EMISSING, comm_input_missing). */
KVSHARD_EXPORT int kvshard_deployment_compare_with(kvshard_comparison **out,
                                                   const kvshard_deployment *deployment,
                                                   const kvshard_compare_options *compare_options,
                                                   kvshard_error *err);
/** How the recommended row was chosen: KVSHARD_RANK_CAPACITY or
 *  KVSHARD_RANK_THROUGHPUT (auto resolved). */
KVSHARD_EXPORT kvshard_rank_by kvshard_comparison_rank_by(const kvshard_comparison *comparison);
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
 *  then ordinal, global, contiguous. Ranked by throughput: the most whole
 *  tokens per second first (rows without one last), then as above. */
KVSHARD_EXPORT size_t kvshard_comparison_recommended(const kvshard_comparison *comparison);

/* ------------------------------------------------------------------------ */

/** The map that moves one request's cache from a prefill plan (P) to a
 *  decode plan (D) of the same model: which P rank sends which units of
 *  which layers to which D rank, and the bytes. */
typedef struct kvshard_transfer kvshard_transfer;

/** What a transfer covers besides the two plans. Start from
 *  KVSHARD_TRANSFER_OPTIONS_INIT. */
typedef struct kvshard_transfer_options {
    size_t size;
    uint32_t p_replica; /**< the P data-parallel replica of the pair */
    uint32_t d_replica; /**< the D replica */
    /** The request's length in tokens; 0: none (figures at n are absent). */
    uint64_t tokens;
    /** The network each rank sends and receives on: a preset ("ndr400",
     *  50 GB/s; "xdr800", 100 GB/s; "hdr200", 25 GB/s; "eth100", 12.5 GB/s)
     *  or a rate in bytes per second written as a size ("48GB"); NULL:
     *  "ndr400". */
    const char *nic;
} kvshard_transfer_options;

#define KVSHARD_TRANSFER_OPTIONS_INIT { sizeof(kvshard_transfer_options), 0u, 0u, 0u, NULL }

/** One edge: a P rank sends units [unit_lo, unit_hi) of one component of
 *  each of its layers to a D rank. Borrowed from the transfer. */
typedef struct kvshard_transfer_edge {
    uint32_t src; /**< global ranks of the sender and the receiver */
    uint32_t dst;
    uint32_t src_stage;
    uint32_t src_tp;
    uint32_t dst_stage;
    uint32_t dst_tp;
    const char *component; /**< "kv", "latent", "index", "conv_q", ..., "ssm" */
    /** 1 + the component's position in kv, latent, index, window, stream,
     *  compressor, conv_q, conv_k, conv_v, conv_x, conv_b, conv_c, ssm */
    uint32_t component_code;
    const uint32_t *layers; /**< increasing; draft layers as L + d */
    size_t layer_count;
    uint32_t unit_lo;
    uint32_t unit_hi;
    const char *entry;     /**< "token", "window", "chunk" or "state" */
    uint32_t entry_code;   /**< token 1, window 2, chunk 3, stream 4, state 5 */
    uint32_t entry_span;   /**< the window or chunk; 0 for token and state */
    uint64_t entry_bytes;  /**< (unit_hi - unit_lo) x the unit's bytes */
    uint64_t bytes_per_token;
    uint64_t bytes_fixed;
    bool has_bytes; /**< a request length was given */
    uint64_t bytes;
} kvshard_transfer_edge;

/** The bytes one rank sends or receives. */
typedef struct kvshard_transfer_rank {
    bool present; /**< false when there is no edge */
    uint32_t global_rank;
    uint32_t stage;
    uint32_t tp;
    uint64_t bytes_per_token;
    uint64_t bytes_fixed;
    bool has_bytes;
    uint64_t bytes;
} kvshard_transfer_rank;

/** A transfer's totals. Start from KVSHARD_TRANSFER_TOTALS_INIT. */
typedef struct kvshard_transfer_totals {
    size_t size;
    uint64_t unique_per_token; /**< one copy of the request's cache */
    uint64_t unique_fixed;
    uint64_t wire_per_token; /**< the sum over the edges */
    uint64_t wire_fixed;
    bool has_bytes; /**< a request length was given */
    uint64_t tokens;
    uint64_t unique;
    uint64_t wire;
    /** wire / unique rounded half up to 4 decimals; false without a length
     *  or when unique is 0. */
    bool has_replication;
    double replication;
    kvshard_transfer_rank busiest_source;
    kvshard_transfer_rank busiest_destination;
    /** ceil(max(busiest bytes) x 10^6 / NIC rate), with a length. */
    bool has_time;
    uint64_t time_us;
    uint64_t nic_bytes_per_second;
    const char *nic; /**< the preset's name, or "custom" (static) */
} kvshard_transfer_totals;

#define KVSHARD_TRANSFER_RANK_INIT { false, 0u, 0u, 0u, 0u, 0u, false, 0u }
#define KVSHARD_TRANSFER_TOTALS_INIT                                                   \
    { sizeof(kvshard_transfer_totals), 0u, 0u, 0u, 0u, false, 0u, 0u, 0u, false, 0.0,  \
      KVSHARD_TRANSFER_RANK_INIT, KVSHARD_TRANSFER_RANK_INIT, false, 0u, 0u, NULL }

/**
 * The transfer of one request from replica `options->p_replica` of `p` to
 * replica `options->d_replica` of `d` (`options` NULL:
 * KVSHARD_TRANSFER_OPTIONS_INIT). Each message starts with its reason's
 * name: KVSHARD_EINVAL for "transfer_model_mismatch" (naming the first
 * figure that differs), "transfer_kv_dtype" and "transfer_state_dtype";
 * KVSHARD_ERANGE for "transfer_replica"; KVSHARD_ETYPE or KVSHARD_ERANGE
 * for "transfer_nic" (neither a preset nor a size); KVSHARD_EUNMODELED for
 * "transfer_cp" (context parallelism on a side) and a cache this version
 * does not move ("transfer_compressed", "transfer_sparse_index", ...);
 * KVSHARD_EINVAL for NULL arguments, KVSHARD_ENOMEM, KVSHARD_EOVERFLOW.
 */
KVSHARD_EXPORT int kvshard_transfer_create(kvshard_transfer **out, const kvshard_plan *p,
                                           const kvshard_plan *d,
                                           const kvshard_transfer_options *options,
                                           const kvshard_allocator *allocator,
                                           kvshard_error *err);
/** Release a transfer. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_transfer_free(kvshard_transfer *transfer);
/** Edges, ordered by source global rank, destination global rank,
 *  component, first layer, unit_lo. */
KVSHARD_EXPORT size_t kvshard_transfer_edge_count(const kvshard_transfer *transfer);
/** Edge `index`, borrowed; NULL when out of range. */
KVSHARD_EXPORT const kvshard_transfer_edge *
kvshard_transfer_edge_at(const kvshard_transfer *transfer, size_t index);
/** The edges one rank takes part in, so that a rank builds its own
 *  transfer list without a collective: those global rank `global_rank` of
 *  P sends (`decode` false) or of D receives (`decode` true), as indices
 *  into the edges, increasing. The first `cap` go into `out` (NULL when
 *  `cap` is 0); returns how many there are (0 for a NULL transfer). */
KVSHARD_EXPORT size_t kvshard_transfer_rank_edges(size_t *out, size_t cap,
                                                  const kvshard_transfer *transfer, bool decode,
                                                  uint32_t global_rank);
/** The totals into *out (`size` set by the caller). KVSHARD_EINVAL. */
KVSHARD_EXPORT int kvshard_transfer_totals_get(kvshard_transfer_totals *out,
                                               const kvshard_transfer *transfer);
/** The 64-bit digest of the edges, which does not depend on the request
 *  length: P and D ranks compare it to know they computed one map. */
KVSHARD_EXPORT uint64_t kvshard_transfer_digest(const kvshard_transfer *transfer);
/** Warnings: "draft_not_sent", "draft_not_on_source",
 *  "wire_exceeds_unique", each with its message (borrowed). */
KVSHARD_EXPORT size_t kvshard_transfer_warning_count(const kvshard_transfer *transfer);
KVSHARD_EXPORT int kvshard_transfer_warning(const char **out_code, const char **out_message,
                                            const kvshard_transfer *transfer, size_t index);
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
    /** The estimate's own warnings, bit 1 << code: split_comm_dominates and
     *  split_loses_throughput, which the plan's JSON and text list after
     *  its own (kvshard_plan_has_warning() does not see them). */
    uint32_t warnings;
} kvshard_comm_estimate;

#define KVSHARD_COMM_ESTIMATE_INIT                                                      \
    { sizeof(kvshard_comm_estimate), false, 0, NULL, NULL, false, NULL, 0, 0.0, false, NULL, \
      0, false, 0, 0, false, 0, false, 0.0, false, 0.0, 0.0, 0.0, 0.0, 0.0, false, 0.0,     \
      false, 0.0, 0, false, 0, false, 0.0, 0 }

/** The estimate of `plan` into *out (its `size` set by the caller). A plan
 *  made without comm inputs gives `given` false. KVSHARD_EUNMODELED naming
 *  a layer or attention the estimate does not price yet; KVSHARD_EINVAL for
 *  a NULL argument or an unknown size. */
KVSHARD_EXPORT int kvshard_plan_comm(kvshard_comm_estimate *out, const kvshard_plan *plan,
                                     kvshard_error *err);

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
    /** The ranking: by capacity, or by the throughput estimate (needs a
     *  deployment's accelerator, link and context length). */
    kvshard_rank_by rank_by;
} kvshard_fit_options;

#define KVSHARD_FIT_OPTIONS_INIT                                                                   \
    { sizeof(kvshard_fit_options), 0u, 0u, 0u, 0u, 0u, false, 0u, KVSHARD_RANK_AUTO }

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
    /** Its plan's communication estimate, when the deployment has comm
     *  inputs and the row fits (else `given` false); its unsplit reference
     *  is the S = 1 row of the same T, P, D. */
    kvshard_comm_estimate comm;
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
/** How the rows were ranked: KVSHARD_RANK_CAPACITY or
 *  KVSHARD_RANK_THROUGHPUT (auto resolved). */
KVSHARD_EXPORT kvshard_rank_by kvshard_fit_rank_by(const kvshard_fit *fit);
/** The recommendation's flags for `engine` ("kvshard", "xllm", "vllm",
 *  "sglang" or "trtllm"), space-separated, or its environment (`env`:
 *  NAME=value entries). Written like snprintf; returns the length,
 *  KVSHARD_EUNSUPPORTED when that engine has no line for the layout (a
 *  split it does not run, a refusal, no sequence), KVSHARD_EUNKNOWNKEY for
 *  another engine, KVSHARD_EINVAL. */
KVSHARD_EXPORT int kvshard_fit_flags(char *buf, size_t cap, const kvshard_fit *fit,
                                     const char *engine, bool env);

/* ------------------------------------------------------------------------ */
/** ## Transfer: moving a request's cache from one plan to another */


/** One engine's verdict on a transfer, borrowed from it: `verdict` is
 *  "supported", "refused" (with its reasons, a code and a message each, in
 *  the order of the engine's rules) or "unsupported" (the engine's profile
 *  does not cover the model: one reason, "engine_unsupported");
 *  `requires` are the settings the engine needs for the pair
 *  ("kv_mode=PUSH"). Start from KVSHARD_TRANSFER_VERDICT_INIT. */
typedef struct kvshard_transfer_verdict {
    size_t size;
    kvshard_engine engine;
    const char *version;
    const char *verdict;
    size_t reason_count;
    const char *const *reason_codes;
    const char *const *reason_messages;
    size_t require_count;
    const char *const *requires;
} kvshard_transfer_verdict;

#define KVSHARD_TRANSFER_VERDICT_INIT                                                              \
    { sizeof(kvshard_transfer_verdict), KVSHARD_ENGINE_KVSHARD, NULL, NULL, 0u, NULL, NULL, 0u,    \
      NULL }

/** Judge whether an engine (vllm, sglang or xllm) can move this transfer,
 *  and keep its verdict with the transfer, after those judged before.
 *  `p` and `d` are the transfer's two sides planned under that engine at
 *  one version, each as one stage of its TP size with the layerwise split
 *  off: they give the engine's block, its version and its speculation; the
 *  split, stages and sizes are the transfer's. KVSHARD_EINVAL for NULL arguments, two engines or versions,
 *  an engine without verdicts, a side whose TP size is not the transfer's,
 *  or an engine judged already. */
KVSHARD_EXPORT int kvshard_transfer_judge(kvshard_transfer *transfer, const kvshard_plan *p,
                                          const kvshard_plan *d, kvshard_error *err);
/** Keep the verdict "unsupported" for `engine` at `version` (NULL: its
 *  default), whose profile refused to plan a side of this model:
 *  `reason` is that refusal's message. Errors as kvshard_transfer_judge(). */
KVSHARD_EXPORT int kvshard_transfer_judge_unsupported(kvshard_transfer *transfer,
                                                      kvshard_engine engine, const char *version,
                                                      const char *reason, kvshard_error *err);
/** The engines that judge transfers, in the order their verdicts are
 *  listed: engine `index` into *out; KVSHARD_EINVAL for a NULL `out` or an
 *  index past the last. */
KVSHARD_EXPORT int kvshard_transfer_judging_engine(kvshard_engine *out, size_t index);
/** The verdicts kept, in the order they were judged. */
KVSHARD_EXPORT size_t kvshard_transfer_verdict_count(const kvshard_transfer *transfer);
/** Verdict `index` into *out (`size` set by the caller). KVSHARD_EINVAL for
 *  NULL arguments, an unknown size or an index out of range. */
KVSHARD_EXPORT int kvshard_transfer_verdict_at(kvshard_transfer_verdict *out,
                                               const kvshard_transfer *transfer, size_t index);

#ifdef __cplusplus
}
#endif

#endif /* KVSHARD_EXPLORE_H */
