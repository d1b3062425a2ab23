/*
 * kvshard: plan how the KV cache of a hybrid-attention model is sharded
 * across tensor-parallel ranks.
 *
 * Conventions (see README.md, "API"):
 * - Every call that can fail returns KVSHARD_OK (0) or a negative
 *   kvshard_status; kvshard_strerror() names it.
 * - Output parameters come first and are named `out`. They are written only
 *   on success; on failure they are left untouched.
 * - Objects returned through `**out` belong to the caller and are released
 *   with the matching *_free() function, which accepts NULL. Pointers returned
 *   by queries are borrowed from the handle and live as long as it does.
 * - kvshard_model and kvshard_plan are immutable once created. Any number of
 *   threads may query one handle at the same time without locking.
 * - `err` arguments may be NULL. When given, the first error is written there
 *   with 1-based line and column (0 when unknown).
 */
#ifndef KVSHARD_KVSHARD_H
#define KVSHARD_KVSHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvshard/kvshard_export.h"
#include "kvshard/kvshard_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                              */
/* ------------------------------------------------------------------------ */

/** Result of every fallible call. Values are stable across minor versions. */
typedef enum kvshard_status {
    KVSHARD_OK = 0,
    /** An allocation failed. Nothing was leaked and no output was written. */
    KVSHARD_ENOMEM = -1,
    /** A NULL or otherwise unusable argument was passed to an API call. */
    KVSHARD_EINVAL = -2,
    /** A file could not be opened or read; the message has the system's reason. */
    KVSHARD_EIO = -3,
    /** The text is not well-formed YAML/JSON. */
    KVSHARD_ESYNTAX = -4,
    /** The text is not valid UTF-8; `offset` holds the byte offset. */
    KVSHARD_EUTF8 = -5,
    /** A reading limit was hit: document size, nesting depth, node count or
     *  alias expansion (see KVSHARD_MAX_*). */
    KVSHARD_ELIMIT = -6,
    /** A mapping holds the same key twice. */
    KVSHARD_EDUPKEY = -7,
    /** A deployment file holds a key kvshard does not know, or a flag names one. */
    KVSHARD_EUNKNOWNKEY = -8,
    /** A value has the wrong type (a string where a number is expected, ...). */
    KVSHARD_ETYPE = -9,
    /** A number is zero or negative where that is not allowed, too large, or
     *  not one of the accepted words. */
    KVSHARD_ERANGE = -10,
    /** A key the model or deployment needs is missing. */
    KVSHARD_EMISSING = -11,
    /** `layer_types` holds a string that names no known layer kind. */
    KVSHARD_ELAYERTYPE = -12,
    /** A per-layer list does not have exactly `num_hidden_layers` entries. */
    KVSHARD_ELAYERCOUNT = -13,
    /** Kimi `linear_attn_config`: a layer is in neither list, in both, or out
     *  of range. */
    KVSHARD_ELAYERLIST = -14,
    /** world_size, dp_size, cp_size or layerwise_split_size is below 1. */
    KVSHARD_EPARALLEL = -15,
    /** world_size is not divisible by dp_size * cp_size. */
    KVSHARD_EWORLD = -16,
    /** Layerwise split is on and the attention TP size is not divisible by
     *  layerwise_split_size. */
    KVSHARD_ESPLIT = -17,
    /** Layerwise split is on together with context parallelism (cp_size > 1). */
    KVSHARD_ESPLITCP = -18,
    /** GQA: the attention TP size and num_key_value_heads do not divide one
     *  another. */
    KVSHARD_EKVHEADS = -19,
    /** Linear-attention heads are not divisible by the attention TP size. */
    KVSHARD_ELINEARHEADS = -20,
    /** A TP rank outside 0..T-1 was passed to a query. */
    KVSHARD_ERANK = -21,
    /** A layer index outside 0..L-1 was passed to a query. */
    KVSHARD_ELAYER = -22,
    /** memory_per_rank does not hold the state reservation plus one KV block. */
    KVSHARD_ENOBLOCK = -23,
    /** A byte figure does not fit in 64 bits. */
    KVSHARD_EOVERFLOW = -24,
    /** A writer callback reported failure. */
    KVSHARD_EWRITE = -25
} kvshard_status;

/** Static English name of a status code ("no memory for one block", ...).
 *  Never NULL; unknown codes give "unknown error". */
KVSHARD_EXPORT const char *kvshard_strerror(int code);

/* ------------------------------------------------------------------------ */
/* Version                                                                   */
/* ------------------------------------------------------------------------ */

/**
 * Version of the library loaded at run time, "MAJOR.MINOR.PATCH". Static
 * storage, never NULL. Compare it with KVSHARD_VERSION_STRING (the version of
 * the headers the caller was compiled against) to detect a mismatched shared
 * library.
 */
KVSHARD_EXPORT const char *kvshard_version(void);

/* ------------------------------------------------------------------------ */
/* Limits                                                                    */
/* ------------------------------------------------------------------------ */

/** Largest file or string kvshard reads, in bytes. */
#define KVSHARD_MAX_DOCUMENT_BYTES (64u * 1024u * 1024u)
/** Deepest nesting of mappings and sequences. */
#define KVSHARD_MAX_DEPTH 64u
/** Most YAML nodes in one document, counting every alias as the nodes it
 *  stands for (this bounds alias expansion). */
#define KVSHARD_MAX_NODES (8u * 1024u * 1024u)
/** Most distinct YAML anchors in one document. */
#define KVSHARD_MAX_ANCHORS 256u
/** Largest num_hidden_layers (and so the longest per-layer list). */
#define KVSHARD_MAX_LAYERS (4u * 1024u * 1024u)
/** Largest world_size. */
#define KVSHARD_MAX_RANKS 65536u
/** Largest block_size in tokens. */
#define KVSHARD_MAX_BLOCK_SIZE (1u << 20)

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

#define KVSHARD_ERROR_SOURCE_MAX 160
#define KVSHARD_ERROR_MESSAGE_MAX 320

/**
 * Where and why a call failed. Owned by the caller; pass NULL to ignore.
 * Only the first error of a call is kept. `source` is the file that holds the
 * offending text ("<string>" for in-memory text, "" when no text is involved);
 * a long path is shortened from the front ("...tail/of/path.yaml").
 */
typedef struct kvshard_error {
    int code;          /**< A kvshard_status, 0 when no error. */
    int line;          /**< 1-based line, 0 when unknown. */
    int column;        /**< 1-based column, 0 when unknown. */
    size_t offset;     /**< 0-based byte offset into the source. */
    char source[KVSHARD_ERROR_SOURCE_MAX];
    char message[KVSHARD_ERROR_MESSAGE_MAX];
} kvshard_error;

/* ------------------------------------------------------------------------ */
/* Allocation                                                                */
/* ------------------------------------------------------------------------ */

/**
 * Per-object allocator. An object remembers the allocator it was created with
 * and frees through it. `malloc_fn` may return NULL to fail an allocation;
 * every call then fails with KVSHARD_ENOMEM and leaks nothing. libyaml's own
 * parser buffers, which live only during a load call, use the C library.
 */
typedef struct kvshard_allocator {
    void *(*malloc_fn)(void *user, size_t size);
    void (*free_fn)(void *user, void *ptr);
    void *user;
} kvshard_allocator;

/* ------------------------------------------------------------------------ */
/* Model                                                                     */
/* ------------------------------------------------------------------------ */

/** A model config read from config.json or YAML: its layer kinds and the
 *  figures memory needs. Opaque, immutable. */
typedef struct kvshard_model kvshard_model;

typedef enum kvshard_layer_kind {
    KVSHARD_LAYER_FULL_ATTENTION = 0,
    KVSHARD_LAYER_LINEAR_ATTENTION = 1,
    KVSHARD_LAYER_SLIDING_ATTENTION = 2
} kvshard_layer_kind;

typedef enum kvshard_attention {
    KVSHARD_ATTENTION_GQA = 0,
    KVSHARD_ATTENTION_MLA = 1
} kvshard_attention;

/** Options for reading text. Start from KVSHARD_LOAD_OPTIONS_INIT. */
typedef struct kvshard_load_options {
    /** sizeof(kvshard_load_options) as the caller was compiled: set by the
     *  INIT macro, it lets later versions add fields. */
    size_t size;
    /** NULL: the C library's malloc and free. Copied; need not outlive the call. */
    const kvshard_allocator *allocator;
} kvshard_load_options;

#define KVSHARD_LOAD_OPTIONS_INIT { sizeof(kvshard_load_options), NULL }

/**
 * Read a model config file. `options` may be NULL for defaults.
 * On success *out is a new model the caller frees with kvshard_model_free().
 * Errors: KVSHARD_EIO (with the system's reason), reading errors
 * (KVSHARD_ESYNTAX ... KVSHARD_ELAYERLIST) with line and column.
 */
KVSHARD_EXPORT int kvshard_model_load_file(kvshard_model **out, const char *path,
                                           const kvshard_load_options *options,
                                           kvshard_error *err);

/** As kvshard_model_load_file() for `len` bytes of text; `name` is used as the
 *  error source (NULL: "<string>"). The text is not retained. */
KVSHARD_EXPORT int kvshard_model_load_string(kvshard_model **out, const char *text,
                                             size_t len, const char *name,
                                             const kvshard_load_options *options,
                                             kvshard_error *err);

/** Release a model. NULL is a no-op. Plans made from it stay valid. */
KVSHARD_EXPORT void kvshard_model_free(kvshard_model *model);

/** `model_type` from the top level of the config ("" when absent). Borrowed. */
KVSHARD_EXPORT const char *kvshard_model_type(const kvshard_model *model);
/** num_hidden_layers: the decoder layers, without draft layers. */
KVSHARD_EXPORT uint32_t kvshard_model_num_layers(const kvshard_model *model);
/** Draft (MTP) layers the model declares (counted in memory only with
 *  num_speculative_tokens > 0). */
KVSHARD_EXPORT uint32_t kvshard_model_num_draft_layers(const kvshard_model *model);
/** Attention type of the full-attention layers. */
KVSHARD_EXPORT kvshard_attention kvshard_model_attention(const kvshard_model *model);
/** Number of decoder layers of one kind. */
KVSHARD_EXPORT uint32_t kvshard_model_count(const kvshard_model *model,
                                            kvshard_layer_kind kind);
/** Kind of decoder layer `layer`: KVSHARD_OK, or KVSHARD_ELAYER when out of range. */
KVSHARD_EXPORT int kvshard_model_layer_kind(kvshard_layer_kind *out,
                                            const kvshard_model *model, uint32_t layer);

/* ------------------------------------------------------------------------ */
/* Deployment options                                                        */
/* ------------------------------------------------------------------------ */

typedef enum kvshard_ownership {
    /** Owner split rank = KV ordinal % S (default). */
    KVSHARD_OWNERSHIP_ORDINAL = 0,
    /** Owner split rank = layer index % S. */
    KVSHARD_OWNERSHIP_GLOBAL = 1
} kvshard_ownership;

typedef enum kvshard_kv_dtype {
    KVSHARD_KV_DTYPE_AUTO = 0, /**< the model's dtype */
    KVSHARD_KV_DTYPE_BF16 = 1,
    KVSHARD_KV_DTYPE_FP16 = 2,
    KVSHARD_KV_DTYPE_FP8 = 3
} kvshard_kv_dtype;

/**
 * Parallel and cache settings of a deployment. Always start from
 * KVSHARD_OPTIONS_INIT so that fields added later get their defaults.
 */
typedef struct kvshard_options {
    /** sizeof(kvshard_options) as the caller was compiled; set by the INIT
     *  macro. A call given another size fails with KVSHARD_EINVAL. */
    size_t size;
    uint32_t world_size;
    uint32_t dp_size;
    uint32_t cp_size;
    bool enable_layerwise_split;
    uint32_t layerwise_split_size;
    kvshard_ownership ownership;
    /** The plan is for a draft model: layerwise split never applies. */
    bool is_draft;
    kvshard_kv_dtype kv_cache_dtype;
    uint32_t block_size;
    /** Device memory for the KV cache per rank in bytes; 0 = no capacity. */
    uint64_t memory_per_rank;
    uint32_t max_seqs;
    uint32_t num_speculative_tokens;
    uint32_t scratch_layers;
} kvshard_options;

#define KVSHARD_OPTIONS_INIT                                                         \
    { sizeof(kvshard_options), 1u, 1u, 1u, false, 1u, KVSHARD_OWNERSHIP_ORDINAL,     \
      false, KVSHARD_KV_DTYPE_AUTO, 16u, 0u, 256u, 0u, 1u }

/**
 * Set one option by its deployment key name ("world_size", "memory_per_rank",
 * ...) from text, as a command-line flag would. Booleans are true/false;
 * memory_per_rank takes bytes or a KiB/MiB/GiB/TiB suffix.
 * On failure `*options` is unchanged and the error is KVSHARD_EUNKNOWNKEY,
 * KVSHARD_ETYPE or KVSHARD_ERANGE.
 */
KVSHARD_EXPORT int kvshard_options_set(kvshard_options *options, const char *key,
                                       const char *value, kvshard_error *err);

/** A deployment file read with its model: the model plus parallel and
 *  cache options. Opaque. */
typedef struct kvshard_deployment kvshard_deployment;

/**
 * Read a deployment file, or a bare model config (a file with no `model` key
 * and a `num_hidden_layers`), whose options are then the defaults.
 * A `model` path is relative to the directory of `path`.
 * The caller frees *out with kvshard_deployment_free().
 */
KVSHARD_EXPORT int kvshard_deployment_load_file(kvshard_deployment **out, const char *path,
                                                const kvshard_load_options *options,
                                                kvshard_error *err);

/** As kvshard_deployment_load_file() for text. Relative model paths are taken
 *  from `base_dir` (NULL: the current directory). */
KVSHARD_EXPORT int kvshard_deployment_load_string(kvshard_deployment **out, const char *text,
                                                  size_t len, const char *name,
                                                  const char *base_dir,
                                                  const kvshard_load_options *options,
                                                  kvshard_error *err);

/** Release a deployment and its model. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_deployment_free(kvshard_deployment *deployment);

/** The deployment's model. Borrowed: valid until the deployment is freed. */
KVSHARD_EXPORT const kvshard_model *kvshard_deployment_model(const kvshard_deployment *deployment);

/** Copy the deployment's options (file values over defaults, then
 *  overrides) into *out, whose `size` the caller set with
 *  KVSHARD_OPTIONS_INIT. KVSHARD_EINVAL when `out` is NULL or its size is
 *  unknown. */
KVSHARD_EXPORT int kvshard_deployment_options(kvshard_options *out,
                                              const kvshard_deployment *deployment);

/** Override one option, as kvshard_options_set(). Later plan errors about this
 *  key are reported against `origin` (e.g. "command line"; NULL: "override"). */
KVSHARD_EXPORT int kvshard_deployment_set(kvshard_deployment *deployment, const char *key,
                                          const char *value, const char *origin,
                                          kvshard_error *err);

/* ------------------------------------------------------------------------ */
/* Plan                                                                      */
/* ------------------------------------------------------------------------ */

/** A validated ownership map with per-rank memory and capacity. Opaque,
 *  immutable. */
typedef struct kvshard_plan kvshard_plan;

/** Owner of a layer whose cache is stored on every rank. */
#define KVSHARD_OWNER_ALL (-1)

/**
 * Build a plan. `options` NULL means KVSHARD_OPTIONS_INIT; the plan copies what
 * it needs, so the model may be freed afterwards. The plan allocates with
 * `allocator` (NULL: the C library's).
 * Errors: KVSHARD_EPARALLEL ... KVSHARD_ELINEARHEADS, KVSHARD_ENOBLOCK,
 * KVSHARD_EOVERFLOW, KVSHARD_ENOMEM. Model-related errors point at the key in
 * the model file.
 */
KVSHARD_EXPORT int kvshard_plan_create(kvshard_plan **out, const kvshard_model *model,
                                       const kvshard_options *options,
                                       const kvshard_allocator *allocator,
                                       kvshard_error *err);

/** kvshard_plan_create() with the deployment's model and options; errors about
 *  an option point at the key in the deployment file (or its override). */
KVSHARD_EXPORT int kvshard_deployment_plan(kvshard_plan **out,
                                           const kvshard_deployment *deployment,
                                           kvshard_error *err);

/** Release a plan. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_plan_free(kvshard_plan *plan);

/** T = world_size / (dp_size * cp_size). */
KVSHARD_EXPORT uint32_t kvshard_plan_attn_tp_size(const kvshard_plan *plan);
/** S_eff: the split size in force (1 when layerwise split does not apply). */
KVSHARD_EXPORT uint32_t kvshard_plan_effective_split_size(const kvshard_plan *plan);
/** R: how many TP ranks hold a copy of each KV head without the split. */
KVSHARD_EXPORT uint32_t kvshard_plan_replication_factor(const kvshard_plan *plan);
/** L: decoder layers. */
KVSHARD_EXPORT uint32_t kvshard_plan_num_layers(const kvshard_plan *plan);
/** Kind of a decoder layer; KVSHARD_ELAYER when out of range. */
KVSHARD_EXPORT int kvshard_plan_layer_kind(kvshard_layer_kind *out, const kvshard_plan *plan,
                                           uint32_t layer);
/** Split rank that owns a layer's cache, or KVSHARD_OWNER_ALL when every rank
 *  stores it; KVSHARD_ELAYER when out of range. */
KVSHARD_EXPORT int kvshard_plan_layer_owner(int32_t *out, const kvshard_plan *plan,
                                            uint32_t layer);

/**
 * Whether TP rank `tp_rank` stores the cache of decoder layer `layer` (KV for
 * a full-attention layer, state or window for the others). O(1), allocates
 * nothing. Out-of-range arguments give false.
 */
KVSHARD_EXPORT bool kvshard_plan_owns(const kvshard_plan *plan, uint32_t tp_rank,
                                      uint32_t layer);

/** Split rank (tp_rank % S_eff) and split group (tp_rank / S_eff) of a TP
 *  rank. Either output may be NULL. KVSHARD_ERANK when out of range. */
KVSHARD_EXPORT int kvshard_plan_split_position(uint32_t *out_split_rank,
                                               uint32_t *out_split_group,
                                               const kvshard_plan *plan, uint32_t tp_rank);

/** The full-attention layer indices whose KV TP rank `tp_rank` stores, in
 *  ascending order. The array is borrowed from the plan. KVSHARD_ERANK when
 *  out of range. */
KVSHARD_EXPORT int kvshard_plan_rank_layers(const uint32_t **out, size_t *out_count,
                                            const kvshard_plan *plan, uint32_t tp_rank);

/** Memory figures of one TP rank, all in bytes. Start from
 *  KVSHARD_RANK_MEMORY_INIT: the library writes at most `size` bytes. */
typedef struct kvshard_rank_memory {
    size_t size;
    uint64_t kv_bytes_per_token;
    uint64_t scratch_bytes_per_token;
    uint64_t draft_bytes_per_token;
    uint64_t bytes_per_block;
    uint64_t state_bytes_per_seq;
    /** KV blocks that fit this rank's memory_per_rank; 0 when has_num_blocks
     *  is false (no memory_per_rank, or no KV bytes per block). */
    uint64_t num_blocks;
    bool has_num_blocks;
} kvshard_rank_memory;

#define KVSHARD_RANK_MEMORY_INIT { sizeof(kvshard_rank_memory), 0, 0, 0, 0, 0, 0, false }

/** Memory figures of TP rank `tp_rank` into *out (its `size` set by the
 *  caller). KVSHARD_ERANK when out of range, KVSHARD_EINVAL when `out` is
 *  NULL or its size is unknown. */
KVSHARD_EXPORT int kvshard_plan_rank_memory(kvshard_rank_memory *out, const kvshard_plan *plan,
                                            uint32_t tp_rank);

/** Capacity common to all ranks (the minimum over ranks). Start from
 *  KVSHARD_CAPACITY_INIT: the library writes at most `size` bytes. */
typedef struct kvshard_capacity {
    size_t size;
    uint32_t block_size;
    uint64_t memory_per_rank; /**< 0 when none was given */
    uint32_t max_seqs;
    bool has_num_blocks;      /**< false without memory_per_rank or KV bytes */
    uint64_t num_blocks;
    uint64_t max_tokens;
} kvshard_capacity;

#define KVSHARD_CAPACITY_INIT { sizeof(kvshard_capacity), 0, 0, 0, false, 0, 0 }

/** Capacity common to all ranks, copied into *out (its `size` set by the
 *  caller). KVSHARD_EINVAL when `out` is NULL or its size is unknown. */
KVSHARD_EXPORT int kvshard_plan_capacity(kvshard_capacity *out, const kvshard_plan *plan);

/** The same model and options at S_eff = 1, for comparison: the largest
 *  per-rank figures. Start from KVSHARD_UNIFORM_INIT. */
typedef struct kvshard_uniform {
    size_t size;
    uint64_t kv_bytes_per_token;
    uint64_t bytes_per_block;
    bool has_num_blocks;
    uint64_t num_blocks;
} kvshard_uniform;

#define KVSHARD_UNIFORM_INIT { sizeof(kvshard_uniform), 0, 0, false, 0 }

/** The S_eff = 1 comparison figures, copied into *out (its `size` set by the
 *  caller). KVSHARD_EINVAL when `out` is NULL or its size is unknown. */
KVSHARD_EXPORT int kvshard_plan_uniform(kvshard_uniform *out, const kvshard_plan *plan);

/**
 * KV blocks every rank can allocate from `memory_per_rank` bytes, as the
 * engine measured it: min over ranks of (memory - max_seqs * state) /
 * bytes_per_block. KVSHARD_ENOBLOCK when not even one block fits, KVSHARD_ERANGE
 * when the plan has no KV bytes per block.
 */
KVSHARD_EXPORT int kvshard_plan_num_blocks_for(uint64_t *out, const kvshard_plan *plan,
                                               uint64_t memory_per_rank, kvshard_error *err);

typedef enum kvshard_warning_code {
    KVSHARD_WARN_SPLIT_DISABLED = 0,
    KVSHARD_WARN_SPLIT_SIZE_ONE = 1,
    KVSHARD_WARN_RANK_OWNS_NOTHING = 2,
    KVSHARD_WARN_IMBALANCED = 3,
    KVSHARD_WARN_EXCEEDS_REPLICATION = 4,
    KVSHARD_WARN_NO_KV_LAYERS = 5,
    KVSHARD_WARN_DRAFT_UNSPLIT = 6
} kvshard_warning_code;

/** Machine-readable name of a warning code ("split_disabled", ...). */
KVSHARD_EXPORT const char *kvshard_warning_name(kvshard_warning_code code);

/** Number of warnings the plan carries (see kvshard_plan_warning()). */
KVSHARD_EXPORT size_t kvshard_plan_warning_count(const kvshard_plan *plan);
/** Warning `index` (0-based, in a fixed order). The message is borrowed.
 *  KVSHARD_EINVAL when out of range. */
KVSHARD_EXPORT int kvshard_plan_warning(kvshard_warning_code *out_code, const char **out_message,
                                        const kvshard_plan *plan, size_t index);
/** Whether the plan carries a warning with this code. */
KVSHARD_EXPORT bool kvshard_plan_has_warning(const kvshard_plan *plan, kvshard_warning_code code);

/** 64-bit digest of owners and byte figures, equal for equal plans. */
KVSHARD_EXPORT uint64_t kvshard_plan_digest(const kvshard_plan *plan);

/** Receives output text. Return 0 to continue, non-zero to stop
 *  (the writing call then fails with KVSHARD_EWRITE). */
typedef int (*kvshard_write_fn)(void *user, const char *data, size_t len);

/** Write the plan as its JSON document (docs/planning.md lists every
 *  field), followed by a newline. */
KVSHARD_EXPORT int kvshard_plan_write_json(const kvshard_plan *plan, kvshard_write_fn write,
                                           void *user);

/* ------------------------------------------------------------------------ */
/* Split-size comparison                                                     */
/* ------------------------------------------------------------------------ */

/** Plans for every split size dividing T, under both ownership rules. */
typedef struct kvshard_comparison kvshard_comparison;

typedef struct kvshard_comparison_row {
    uint32_t layerwise_split_size;
    kvshard_ownership ownership;
    /** KVSHARD_OK, or why this size gives no valid plan (then the figures
     *  below are 0 and `error_message` says why). */
    int error;
    const char *error_message; /**< borrowed; "" when error is 0 */
    uint32_t min_owned_layers; /**< fewest full-attention layers a split rank owns */
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
} kvshard_comparison_row;

/** Build the comparison from a model and options (the split fields of
 *  `options` are ignored). Fails only for errors no split size can avoid. */
KVSHARD_EXPORT int kvshard_comparison_create(kvshard_comparison **out, const kvshard_model *model,
                                             const kvshard_options *options,
                                             const kvshard_allocator *allocator,
                                             kvshard_error *err);
/** kvshard_comparison_create() with the deployment's model and options; errors
 *  about an option point at the key in the deployment file (or its override). */
KVSHARD_EXPORT int kvshard_deployment_compare(kvshard_comparison **out,
                                              const kvshard_deployment *deployment,
                                              kvshard_error *err);
/** Release a comparison. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_comparison_free(kvshard_comparison *comparison);
/** Number of rows: two (ordinal, global) per split size dividing T. */
KVSHARD_EXPORT size_t kvshard_comparison_row_count(const kvshard_comparison *comparison);
/** Row `index`, borrowed; NULL when out of range. Rows go by S, then ordinal
 *  before global. */
KVSHARD_EXPORT const kvshard_comparison_row *
kvshard_comparison_row_at(const kvshard_comparison *comparison, size_t index);
/** Index of the recommended row: most blocks (or, without capacity, fewest
 *  bytes per block); ties go to the smaller S, then to ordinal. */
KVSHARD_EXPORT size_t kvshard_comparison_recommended(const kvshard_comparison *comparison);
/** Write the comparison as JSON (README.md, "kvshard compare"). */
KVSHARD_EXPORT int kvshard_comparison_write_json(const kvshard_comparison *comparison,
                                                 kvshard_write_fn write, void *user);

/* ------------------------------------------------------------------------ */
/* Names                                                                     */
/* ------------------------------------------------------------------------ */

/** "full_attention", "linear_attention" or "sliding_attention". */
KVSHARD_EXPORT const char *kvshard_layer_kind_name(kvshard_layer_kind kind);
/** "ordinal" or "global". */
KVSHARD_EXPORT const char *kvshard_ownership_name(kvshard_ownership ownership);

#ifdef __cplusplus
}
#endif

#endif /* KVSHARD_KVSHARD_H */
