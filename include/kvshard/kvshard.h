/*
 * kvshard: plan how the KV cache of a hybrid-attention model is sharded
 * across tensor-parallel ranks.
 *
 * This is the stable core an inference engine compiles against: its `##`
 * groups come in the order of an engine's start-up (load, options, plan,
 * the rank's layers, blocks, shapes, the log line), then the calls that
 * inspect a plan or a model. Comparing split sizes and fitting a layout to
 * N GPUs are in kvshard/explore.h, the JSON, text, SVG and HTML writers in
 * kvshard/output.h; this header includes neither.
 *
 * Conventions:
 * - Every call that can fail returns KVSHARD_OK (0) or a negative
 *   kvshard_status; kvshard_strerror() names it.
 * - Output parameters come first and are named `out`. They are written only
 *   on success; on failure they are left untouched.
 * - Objects returned through `**out` belong to the caller and are released
 *   with the matching *_free() function, which accepts NULL. Pointers returned
 *   by queries are borrowed from the handle and live as long as it does.
 * - kvshard_model and kvshard_plan (and explore.h's comparison and fit) are
 *   immutable once created. Any number of threads may query one handle at
 *   the same time without locking. A kvshard_deployment changes only
 *   through kvshard_deployment_set() and kvshard_deployment_apply_args().
 * - `err` arguments may be NULL. When given, the first error is written there
 *   with 1-based line and column (0 when unknown).
 * - A call that returns a status answers KVSHARD_EINVAL for a NULL pointer
 *   argument (optional outputs documented as such aside); a query that
 *   returns a value gives 0, false, NULL or "" for a NULL handle.
 * - Structs the caller passes in or gets filled start with `size_t size`, set
 *   by the struct's *_INIT macro. This version accepts exactly its own sizes
 *   and refuses any other with KVSHARD_EINVAL, so a program compiled against
 *   a different header fails loudly instead of reading past a struct. Later
 *   versions add fields only at the end and keep accepting the sizes of the
 *   versions before them.
 * - Names: TP is tensor parallelism, P the pipeline stages, T the attention
 *   TP size of one stage (world_size / (pp_size * dp_size * cp_size)), S the
 *   layerwise split size and S_eff
 *   the split in force (1 when layerwise split does not apply). A "KV layer"
 *   is a full-attention or hybrid layer: the layers whose paged KV cache a
 *   split gives to one rank of each split group.
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
/** ## Status and version */
/* ------------------------------------------------------------------------ */


/** Result of every fallible call. Values are stable across minor versions. */
typedef enum kvshard_status {
    KVSHARD_OK = 0,
    /** An allocation failed. Nothing was leaked and no output was written. */
    KVSHARD_ENOMEM = -1,
    /** A NULL or otherwise unusable argument was passed to an API call (a
     *  struct whose `size` this library does not know, a half-set
     *  allocator, an index out of range for a warning). */
    KVSHARD_EINVAL = -2,
    /** A file could not be opened or read, or is not a regular file; the
     *  message has the system's reason. */
    KVSHARD_EIO = -3,
    /** The text is not well-formed YAML/JSON. */
    KVSHARD_ESYNTAX = -4,
    /** The text is not valid UTF-8; `offset` holds the byte offset. */
    KVSHARD_EUTF8 = -5,
    /** A limit was hit: document size, nesting depth, node count, alias
     *  expansion, or the size of a plan's layer lists (see KVSHARD_MAX_*);
     *  a model with more distinct kinds of cache entries, or draft steps
     *  with more layers, than kvshard keeps; flag files past their count or
     *  bytes; a checkpoint's safetensors past their shard files, tensors or
     *  header length, or its index and headers together past 256 MiB of
     *  JSON. */
    KVSHARD_ELIMIT = -6,
    /** A mapping holds the same key twice, or one batch of flags gives one
     *  input under two spellings with different values. */
    KVSHARD_EDUPKEY = -7,
    /** A deployment file or a flag names a key kvshard does not know. */
    KVSHARD_EUNKNOWNKEY = -8,
    /** A value has the wrong type: a string where a number is expected, a
     *  quoted number, an integer written with a leading zero, a core tag
     *  that does not fit the value (`!!float 4` for an integer). */
    KVSHARD_ETYPE = -9,
    /** A number is zero or negative where that is not allowed, too large, or
     *  not one of the accepted words. */
    KVSHARD_ERANGE = -10,
    /** A key the model or deployment needs is missing. */
    KVSHARD_EMISSING = -11,
    /** A per-layer list or pattern names no known layer kind. */
    KVSHARD_ELAYERTYPE = -12,
    /** A per-layer list or pattern does not have exactly num_hidden_layers
     *  entries. */
    KVSHARD_ELAYERCOUNT = -13,
    /** A list of layer numbers or indices misses, repeats or overruns a
     *  layer, or an interval rule's offset is not below its period. */
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
    /** GQA: the attention TP size and the KV heads do not divide one
     *  another. */
    KVSHARD_EKVHEADS = -19,
    /** A recurrent-state dimension (heads, channels) is not divisible by the
     *  attention TP size, or Mamba2 groups cannot be laid out on its ranks. */
    KVSHARD_ELINEARHEADS = -20,
    /** A plan rank outside 0..P·T−1 was passed to a query. */
    KVSHARD_ERANK = -21,
    /** A layer index outside 0..L-1 was passed to a query. */
    KVSHARD_ELAYER = -22,
    /** The memory does not hold the state reservation plus one KV block (or,
     *  under an engine profile, its budget is not positive or its state slots
     *  do not fit): kvshard_plan_blocks_for() with reserved_bytes not below
     *  memory_per_rank, or with a reservation and one block past 2^64 - 1
     *  bytes; kvshard fit when the state of max_seqs leaves no block in any
     *  layout. */
    KVSHARD_ENOBLOCK = -23,
    /** A byte figure does not fit in 64 bits: a block with
     *  extra_bytes_per_block or max_tokens in kvshard_plan_blocks_for(), a
     *  fit's replica totals, a weights estimate, a figure of a safetensors
     *  header; or an engine profile's block would pass
     *  KVSHARD_MAX_BLOCK_SIZE tokens. */
    KVSHARD_EOVERFLOW = -24,
    /** A writer callback, or a write to a file, failed. */
    KVSHARD_EWRITE = -25,
    /** The engine profile cannot plan this model or these options (layer
     *  kinds it does not support, a split that does not divide the KV
     *  replication, scratch_layers other than 1, state slots above its
     *  bound), or the engine version named is outside the profile's range;
     *  the message starts with the profile and the refusal's name
     *  ("vllm profile: engine_unsupported: ..."). */
    KVSHARD_EPROFILE = -26,
    /** The text uses a YAML feature kvshard does not read: merge keys (<<)
     *  or tags other than YAML's core tags. */
    KVSHARD_EUNSUPPORTED = -27,
    /** The model config describes a cache kvshard does not model (a key
     *  such as block_configs or cross_attention_layers): it is refused by
     *  name rather than planned by another rule. */
    KVSHARD_EUNMODELED = -28,
    /** More pipeline stages than decoder layers: every stage holds one. */
    KVSHARD_EPPLAYERS = -29,
    /** The layers cannot be cut into the stages asked for: the even rule
     *  with pp_size not dividing the layers, an explicit pp_partition of
     *  another length or sum or with an entry below 1, or one given with
     *  sweep_pp. (A rule no word names is KVSHARD_ERANGE.) */
    KVSHARD_EPARTITION = -30,
    /** A layer and the layer whose cache it reads fall on different stages. */
    KVSHARD_EPPSOURCE = -31,
    /** A stage outside 0..pp_size-1 in an API call. */
    KVSHARD_ESTAGE = -32,
    /** A global rank outside 0..world_size-1 in an API call (a TP, data or
     *  context coordinate out of range is KVSHARD_ERANK). */
    KVSHARD_EGLOBALRANK = -33,
    /** Device memory is given but the weights are not (no weights_per_rank,
     *  weights_total or safetensors files); weights_per_rank and
     *  weights_total are given together; weights_experts exceeds
     *  weights_total; weights_per_rank is empty, has more than
     *  KVSHARD_MAX_PP_PARTITION entries or neither 1 nor pp_size of them (or
     *  is given to kvshard fit); or a checkpoint names no tensor (a
     *  safetensors index with an empty weight_map, headers that hold
     *  none). */
    KVSHARD_EWEIGHTS = -34,
    /** A stage's weights and the activation reserve leave no budget of the
     *  usable device memory (kvshard fit: no layout leaves one). */
    KVSHARD_EDOESNOTFIT = -35,
    /** kvshard fit: the node limits and the pinned sizes leave no layout. */
    KVSHARD_EFITLIMITS = -36,
    /** The model's query heads (num_attention_heads) are not divisible by
     *  the attention TP size, for a plan that stores KV with attention of
     *  any type (GQA, MLA, DSA, compressed) in full, sliding-window,
     *  chunked or counted draft layers: every engine gives each rank the
     *  same number of query heads. */
    KVSHARD_EQHEADS = -37,
    /** The split's communication cannot be priced as asked: a mechanism
     *  the model has no data for (selected_kv without a DSA indexer), or a
     *  prefix hit that covers the whole prompt. */
    KVSHARD_ECOMM = -38
} kvshard_status;

/** Static English name of a status code ("no memory for one block", ...).
 *  Never NULL; unknown codes give "unknown error". */
KVSHARD_EXPORT const char *kvshard_strerror(int code);


/**
 * Version of the library loaded at run time, "MAJOR.MINOR.PATCH". Static
 * storage, never NULL. Compare it with KVSHARD_VERSION_STRING (the version of
 * the headers the caller was compiled against) to detect a mismatched shared
 * library.
 */
KVSHARD_EXPORT const char *kvshard_version(void);

/* ------------------------------------------------------------------------ */
/** ## Limits, errors and allocation */
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
/** Largest world_size, dp_size, cp_size and layerwise_split_size. */
#define KVSHARD_MAX_RANKS 65536u
/** Largest block_size in tokens. */
#define KVSHARD_MAX_BLOCK_SIZE (1u << 20)
/** Largest context_length in tokens. */
#define KVSHARD_MAX_CONTEXT_LENGTH (1u << 30)
/** Most entries a plan's per-rank KV layer lists hold together: every TP
 *  rank lists the KV layers it stores, (T / S_eff) x KV layers in all. This
 *  bounds the plan's JSON document and the work of every writer; a plan
 *  past it fails with KVSHARD_ELIMIT. */
#define KVSHARD_MAX_LAYER_ENTRIES (16u * 1024u * 1024u)


#define KVSHARD_ERROR_SOURCE_MAX 160
#define KVSHARD_ERROR_MESSAGE_MAX 320

/**
 * Where and why a call failed. Owned by the caller; pass NULL to ignore.
 * Only the first error of a call is kept. `source` is the file that holds the
 * offending text ("<string>" for in-memory text, an origin such as "command
 * line --world_size" for a flag, "" when no text is involved); a long path is
 * shortened from the front ("...tail/of/path.yaml"). `source` and `message`
 * are safe to print: control characters and invalid UTF-8 from the input are
 * escaped as \xNN, invisible and bidirectional characters (zero-width
 * spaces, direction overrides, a byte order mark, soft hyphens) as \u{XXXX},
 * and they are cut only between characters.
 */
typedef struct kvshard_error {
    int code;          /**< A kvshard_status, 0 when no error. */
    int line;          /**< 1-based line, 0 when unknown. */
    int column;        /**< 1-based column in characters, 0 when unknown. */
    size_t offset;     /**< 0-based byte offset into the source. */
    char source[KVSHARD_ERROR_SOURCE_MAX];
    char message[KVSHARD_ERROR_MESSAGE_MAX];
} kvshard_error;


/**
 * Per-object allocator. An object remembers the allocator it was created with
 * and frees through it. `malloc_fn` may return NULL to fail an allocation;
 * every call then fails with KVSHARD_ENOMEM and leaks nothing. Both functions
 * must be set (a half-set allocator is KVSHARD_EINVAL). libyaml's own parser
 * buffers, which live only during a load call, use the C library.
 */
typedef struct kvshard_allocator {
    void *(*malloc_fn)(void *user, size_t size);
    void (*free_fn)(void *user, void *ptr);
    void *user;
} kvshard_allocator;

/* ------------------------------------------------------------------------ */
/** ## Kinds, dtypes and engines */
/* ------------------------------------------------------------------------ */


/** What a decoder layer caches. */
typedef enum kvshard_layer_kind {
    /** A paged KV cache that grows with every token; split when S_eff > 1. */
    KVSHARD_LAYER_FULL_ATTENTION = 0,
    /** A fixed recurrent state per sequence, on every rank. */
    KVSHARD_LAYER_LINEAR_ATTENTION = 1,
    /** KV of at most sliding_window tokens per sequence, on every rank. */
    KVSHARD_LAYER_SLIDING_ATTENTION = 2,
    /** Both: a KV cache split like a full-attention layer's, and a state of
     *  the model's state kind on every rank (Falcon-H1, Zamba2). */
    KVSHARD_LAYER_HYBRID = 3,
    /** Nothing: an MLP or MoE block listed as a layer (Nemotron-H). */
    KVSHARD_LAYER_NO_CACHE = 4,
    /** Compressed attention (DeepSeek-V4): one latent per entry, a window of
     *  recent entries and, with a compression ratio r > 0, a stream of one
     *  entry per r tokens with its compressor state; a KV layer, split like
     *  a full-attention layer, its owner keeping all of it. */
    KVSHARD_LAYER_COMPRESSED = 5,
    /** Reads the cache of an earlier layer, its KV source, and keeps none of
     *  its own (Gemma 3n, Gemma 4). */
    KVSHARD_LAYER_SHARED_KV = 6,
    /** KV of at most one attention chunk per sequence, on every rank
     *  (Llama 4). */
    KVSHARD_LAYER_CHUNKED_ATTENTION = 7
} kvshard_layer_kind;

typedef enum kvshard_attention {
    KVSHARD_ATTENTION_GQA = 0,
    KVSHARD_ATTENTION_MLA = 1,
    /** One shared K=V latent per entry, compressed by layer (DeepSeek-V4). */
    KVSHARD_ATTENTION_COMPRESSED = 2
} kvshard_attention;

/** The recurrent state of a model's linear and hybrid layers. */
typedef enum kvshard_state_kind {
    KVSHARD_STATE_NONE = 0,      /**< the model has no linear or hybrid layer */
    KVSHARD_STATE_GDN = 1,       /**< Gated DeltaNet (Qwen3-Next, Qwen3.5) */
    KVSHARD_STATE_KDA = 2,       /**< Kimi Delta Attention */
    KVSHARD_STATE_LIGHTNING = 3, /**< lightning attention (MiniMax) */
    KVSHARD_STATE_MAMBA1 = 4,    /**< Mamba (Jamba) */
    KVSHARD_STATE_MAMBA2 = 5, /**< Mamba2 (Nemotron-H, Granite-4.0-H, Bamba, Falcon-H1, Zamba2) */
    KVSHARD_STATE_SHORT_CONV = 6 /**< short convolution (LFM2) */
} kvshard_state_kind;

/** Element types of weights, KV cache and state. */
typedef enum kvshard_dtype {
    KVSHARD_DTYPE_AUTO = 0, /**< as an option: follow the model */
    KVSHARD_DTYPE_BF16 = 1,
    KVSHARD_DTYPE_FP16 = 2,
    KVSHARD_DTYPE_FP8 = 3,  /**< 1 byte; a KV cache adds fp32 scales */
    KVSHARD_DTYPE_FP32 = 4,
    KVSHARD_DTYPE_INT8 = 5, /**< 1 byte with scales, as fp8 (KV cache only) */
    KVSHARD_DTYPE_FP8_E5M2 = 6 /**< fp8 with 5 exponent bits: 1 byte, sized as fp8 */
} kvshard_dtype;

/** How a split group's ranks share the KV layers. */
typedef enum kvshard_ownership {
    /** The engine profile's rule: ordinal for kvshard, global for xllm. */
    KVSHARD_OWNERSHIP_DEFAULT = -1,
    /** Owner split rank = KV ordinal % S_eff (round-robin over KV layers). */
    KVSHARD_OWNERSHIP_ORDINAL = 0,
    /** Owner split rank = layer index % S_eff (upstream xLLM's rule). */
    KVSHARD_OWNERSHIP_GLOBAL = 1,
    /** Balanced consecutive ranges of KV layers, split rank 0 first. */
    KVSHARD_OWNERSHIP_CONTIGUOUS = 2
} kvshard_ownership;

/** How the decoder layers are cut into pipeline stages: the engine whose
 *  default rule gives the counts (q = L / P layers each, the remainder
 *  r = L % P spread as that engine spreads it). */
typedef enum kvshard_pp_rule {
    /** The engine profile's rule: sglang under sglang, trtllm under trtllm, else vllm. */
    KVSHARD_PP_RULE_DEFAULT = -1,
    /** The extras walking back from the second-to-last stage (vLLM). */
    KVSHARD_PP_RULE_VLLM = 0,
    /** The extras on the last r stages (SGLang). */
    KVSHARD_PP_RULE_SGLANG = 1,
    /** The extras on the first r stages (TensorRT-LLM). */
    KVSHARD_PP_RULE_TRTLLM = 2,
    /** No extras: pp_size must divide the layers. */
    KVSHARD_PP_RULE_EVEN = 3,
    /** Given as pp_partition (reported; not an input). */
    KVSHARD_PP_RULE_EXPLICIT = 4
} kvshard_pp_rule;

/** The order in which an engine numbers its ranks, outermost first. */
typedef enum kvshard_rank_layout {
    /** The engine profile's: sglang under sglang, trtllm under trtllm, else vllm. */
    KVSHARD_RANK_LAYOUT_DEFAULT = -1,
    /** dp, pp, cp, tp: ((d·P + p)·C + c)·T + t. */
    KVSHARD_RANK_LAYOUT_VLLM = 0,
    /** pp, dp, cp, tp: ((p·D + d)·C + c)·T + t. */
    KVSHARD_RANK_LAYOUT_SGLANG = 1,
    /** pp, dp, tp, cp: (p·D·T + d·T + t)·C + c. */
    KVSHARD_RANK_LAYOUT_TRTLLM = 2,
    /** dp, cp, tp, no stages: (d·C + c)·T + t. */
    KVSHARD_RANK_LAYOUT_XLLM = 3
} kvshard_rank_layout;

/** Most entries of an explicit pp_partition. */
#define KVSHARD_MAX_PP_PARTITION 256u
/** activation_reserve left to the profile: under kvshard max(1 GiB,
 *  device_memory / 20). */
#define KVSHARD_RESERVE_AUTO UINT64_MAX

/** Whose capacity model sizes blocks and state. */
typedef enum kvshard_engine {
    /** kvshard's own: reserve state for max_seqs, cut the rest into blocks. */
    KVSHARD_ENGINE_KVSHARD = 0,
    /** Predict what an xLLM engine allocates from the same flags. */
    KVSHARD_ENGINE_XLLM = 1,
    /** Predict what vLLM's V1 engine allocates on one GPU. */
    KVSHARD_ENGINE_VLLM = 2,
    /** Predict SGLang's memory pools on one GPU. */
    KVSHARD_ENGINE_SGLANG = 3,
    /** Predict TensorRT-LLM's (PyTorch backend) paged KV cache on one GPU. */
    KVSHARD_ENGINE_TRTLLM = 4
} kvshard_engine;

/* ------------------------------------------------------------------------ */
/** ## Loading a model */
/* ------------------------------------------------------------------------ */

/** A model: its layer kinds and the figures memory needs, read from a
 *  config.json (or the same keys in YAML) or built from a description.
 *  Opaque, immutable. */
typedef struct kvshard_model kvshard_model;

/** Options for reading text. Start from KVSHARD_LOAD_OPTIONS_INIT. */
typedef struct kvshard_load_options {
    size_t size;
    /** NULL: the C library's malloc and free. Copied; need not outlive the call. */
    const kvshard_allocator *allocator;
} kvshard_load_options;

#define KVSHARD_LOAD_OPTIONS_INIT { sizeof(kvshard_load_options), NULL }

/**
 * Read a model config: a file, or a directory that holds config.json (a
 * Hugging Face model directory). `options` may be NULL for defaults. On
 * success *out is a new model the caller frees with kvshard_model_free().
 * Errors: KVSHARD_EINVAL (NULL arguments, bad options), KVSHARD_EIO (with the
 * system's reason), KVSHARD_ENOMEM, and the reading errors KVSHARD_ESYNTAX,
 * EUTF8, ELIMIT, EDUPKEY, ETYPE, ERANGE, EMISSING, ELAYERTYPE, ELAYERCOUNT,
 * ELAYERLIST, EUNSUPPORTED with line and column.
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

/**
 * A model described by an engine that already holds its arguments, so that
 * kvshard plans from the same figures instead of a second parse. Start from
 * KVSHARD_MODEL_DESC_INIT; 0 means "absent" for every optional figure.
 */
typedef struct kvshard_model_desc {
    size_t size;
    const char *model_type;              /**< may be NULL */
    uint32_t num_layers;                 /**< L, decoder layers */
    const kvshard_layer_kind *layer_kinds; /**< L kinds; NULL: all full attention */
    kvshard_dtype dtype;                 /**< model dtype; AUTO means bfloat16 */
    kvshard_attention attention;
    /** Query heads: the attention TP size must divide them whatever the
     *  attention (0: not checked). */
    uint32_t num_attention_heads;
    /* GQA */
    uint32_t num_kv_heads;               /**< 0: num_attention_heads */
    uint32_t head_dim;
    uint32_t sliding_window;             /**< tokens; needed with sliding layers */
    /* MLA and the DSA indexer */
    uint32_t kv_lora_rank;
    uint32_t qk_rope_head_dim;
    uint32_t index_head_dim;             /**< 0: no indexer */
    uint32_t num_draft_layers;
    /* Recurrent state of linear and hybrid layers (see docs/planning.md for
     * each kind's formula and which fields it reads). */
    kvshard_state_kind state_kind;
    kvshard_dtype state_dtype;           /**< AUTO: the kind's default */
    uint32_t state_heads;        /**< GDN value heads; KDA, lightning, Mamba2 heads */
    uint32_t state_key_heads;    /**< GDN key heads */
    uint32_t state_head_dim;     /**< GDN key dim; KDA, lightning, Mamba2 head dim */
    uint32_t state_value_dim;    /**< GDN value dim */
    uint32_t state_size;         /**< Mamba1, Mamba2: N */
    uint32_t state_groups;       /**< Mamba2 groups; 0 means 1 */
    uint32_t conv_kernel;        /**< GDN, KDA, Mamba1, Mamba2 K; short conv L_cache */
    uint32_t conv_channels;      /**< Mamba1 d_inner; short conv hidden size */
    /* The geometry of sliding-window layers where it differs from the full
     * layers' (0: the same), and of the others. */
    uint32_t v_head_dim;         /**< GQA V head dim; 0: head_dim */
    uint32_t sliding_kv_heads;   /**< 0: num_kv_heads */
    uint32_t sliding_head_dim;   /**< 0: head_dim */
    uint32_t sliding_v_head_dim; /**< 0: the sliding head dim */
    uint32_t attention_chunk_size; /**< tokens; needed with chunked layers */
} kvshard_model_desc;

#define KVSHARD_MODEL_DESC_INIT                                                      \
    { sizeof(kvshard_model_desc), NULL, 0, NULL, KVSHARD_DTYPE_AUTO,                \
      KVSHARD_ATTENTION_GQA, 0, 0, 0, 0, 0, 0, 0, 0, KVSHARD_STATE_NONE,             \
      KVSHARD_DTYPE_AUTO, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Build a model from a description, with the loader's checks: missing
 * figures are KVSHARD_EMISSING, impossible ones KVSHARD_ERANGE, each naming
 * the field. `allocator` NULL: the C library's. The description is copied
 * (`layer_kinds` and `model_type` need not outlive the call). The caller
 * frees *out with kvshard_model_free(). A description cannot hold what
 * compressed and shared-KV layers read of their neighbours: those kinds are
 * KVSHARD_ELAYERTYPE here (load the model's config instead). Errors:
 * KVSHARD_EINVAL, EMISSING, ERANGE, ELAYERTYPE, ENOMEM.
 */
KVSHARD_EXPORT int kvshard_model_create(kvshard_model **out, const kvshard_model_desc *desc,
                                        const kvshard_allocator *allocator, kvshard_error *err);

/** Release a model. NULL is a no-op. Plans made from it stay valid. */
KVSHARD_EXPORT void kvshard_model_free(kvshard_model *model);

/* ------------------------------------------------------------------------ */
/** ## Options */
/* ------------------------------------------------------------------------ */

/** Inputs that only some engine profiles read, set by key (see
 *  kvshard_settings_set()). Opaque. */
typedef struct kvshard_settings kvshard_settings;

/**
 * Parallel and cache settings of a deployment: what every engine profile
 * reads. Always start from KVSHARD_OPTIONS_INIT. Values the engine profile
 * decides are "unset" there (block_size 0, max_seqs 0, ownership
 * KVSHARD_OWNERSHIP_DEFAULT) and the plan settles them;
 * kvshard_plan_options() returns the settled values. Inputs of one engine
 * profile alone are not fields here: they are settings by key, in the
 * kvshard_settings that `settings` points to, so that a new profile's
 * inputs never change this struct.
 */
typedef struct kvshard_options {
    size_t size;
    uint32_t world_size;          /**< all ranks; default 1 */
    uint32_t dp_size;             /**< data-parallel size; default 1 */
    uint32_t cp_size;             /**< context-parallel size; default 1 */
    bool enable_layerwise_split;  /**< default false */
    uint32_t layerwise_split_size; /**< S; default 1 */
    kvshard_ownership ownership;  /**< default: the profile's */
    /** The plan is for a draft model: layerwise split never applies. */
    bool is_draft;
    kvshard_engine engine;        /**< capacity model; default kvshard */
    kvshard_dtype kv_cache_dtype; /**< AUTO (the model's), BF16, FP16, FP8, FP8_E5M2, INT8 */
    kvshard_dtype state_dtype;    /**< AUTO, BF16, FP16, FP32 */
    uint32_t block_size;          /**< tokens; 0: the profile's (16, xllm 128, sglang 1) */
    /** Bytes for the KV cache and state per rank; 0: no capacity. */
    uint64_t memory_per_rank;
    uint32_t max_seqs;            /**< 0: the profile's (256, xllm 200) */
    uint32_t num_speculative_tokens; /**< default 0 */
    uint32_t scratch_layers;      /**< KV layers of scratch while split; default 1 */
    /** Tokens per sequence for the concurrency figures; 0: none. */
    uint32_t context_length;
    /** The engine profiles' own inputs; NULL: every one at its default.
     *  Borrowed: a plan copies what it reads, so it need only outlive the
     *  call the options are given to. */
    const kvshard_settings *settings;
    /** P, the pipeline stages; default 1. T = world_size / (P x dp x cp). */
    uint32_t pp_size;
    /** The rule that cuts the layers into stages; DEFAULT: vllm. */
    kvshard_pp_rule pp_partition_rule;
    /** The layers of each stage, given explicitly (pp_partition_count
     *  entries, at most KVSHARD_MAX_PP_PARTITION); NULL: the rule's.
     *  Borrowed like `settings`. */
    const uint32_t *pp_partition;
    uint32_t pp_partition_count;
    /** How the engine numbers its ranks; DEFAULT: the profile's. */
    kvshard_rank_layout rank_layout;
    /* Device inputs: without memory_per_rank, a rank's budget is the usable
     * share of its GPU less its weights and the activation reserve. */
    /** Bytes of one GPU as the device reports them; 0: none. */
    uint64_t device_memory;
    /** The share of device_memory the engine may use, above 0 and at most 1,
     *  read to 9 decimal places; 0: the profile's (kvshard 0.9). */
    double memory_utilization;
    /** Bytes per GPU for everything but weights and cache; default
     *  KVSHARD_RESERVE_AUTO. */
    uint64_t activation_reserve;
    /** The weights of one rank: one size, or one per stage
     *  (weights_per_rank_count 1 or pp_size; NULL: none). Borrowed like
     *  `settings`. */
    const uint64_t *weights_per_rank;
    uint32_t weights_per_rank_count;
    /** The checkpoint's bytes, and the part in expert tensors, for an
     *  estimate by layers; 0: none (the model directory's safetensors). */
    uint64_t weights_total;
    uint64_t weights_experts;
    /** Experts placed whole on ranks; default false. */
    bool expert_parallel;
} kvshard_options;

#define KVSHARD_OPTIONS_INIT                                                          \
    { sizeof(kvshard_options), 1u, 1u, 1u, false, 1u, KVSHARD_OWNERSHIP_DEFAULT,      \
      false, KVSHARD_ENGINE_KVSHARD, KVSHARD_DTYPE_AUTO, KVSHARD_DTYPE_AUTO, 0u, 0u,  \
      0u, 0u, 1u, 0u, NULL, 1u, KVSHARD_PP_RULE_DEFAULT, NULL, 0u,                     \
      KVSHARD_RANK_LAYOUT_DEFAULT, 0u, 0.0, KVSHARD_RESERVE_AUTO, NULL, 0u, 0u, 0u,     \
      false }

/**
 * Set one option by its deployment key name ("world_size",
 * "memory_per_rank", ...) from text, as a command-line flag would (an
 * engine profile's own inputs are settings: kvshard_settings_set()): booleans
 * take true/false/1/0/yes/no/t/f/y/n in any case; sizes take bytes or a
 * KiB/MiB/GiB/TiB suffix. `origin` names where the text came from in errors
 * (NULL: "option"). On failure `*options` is unchanged. Errors:
 * KVSHARD_EINVAL (NULL arguments or an unknown `size`), KVSHARD_EUNKNOWNKEY,
 * KVSHARD_ETYPE, KVSHARD_ERANGE, KVSHARD_EPARALLEL.
 */
KVSHARD_EXPORT int kvshard_options_set(kvshard_options *options, const char *key,
                                       const char *value, const char *origin,
                                       kvshard_error *err);

/* ------------------------------------------------------------------------ */
/** ## Settings: the inputs of one engine profile alone, by key */
/* ------------------------------------------------------------------------ */

/** A new, empty settings object: every setting at its default. The caller
 *  frees it with kvshard_settings_free(). Errors: KVSHARD_EINVAL,
 *  KVSHARD_ENOMEM. */
KVSHARD_EXPORT int kvshard_settings_create(kvshard_settings **out,
                                           const kvshard_allocator *allocator,
                                           kvshard_error *err);
/** A copy of `settings` (NULL: an empty one), allocated with `allocator`;
 *  the caller frees it. Errors: KVSHARD_EINVAL, KVSHARD_ENOMEM. */
KVSHARD_EXPORT int kvshard_settings_copy(kvshard_settings **out, const kvshard_settings *settings,
                                         const kvshard_allocator *allocator, kvshard_error *err);
/** Release a settings object. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_settings_free(kvshard_settings *settings);
/**
 * Set one setting ("enable_prefix_cache", "device_memory_free", ...) from
 * text, as a flag would give it; kvshard_setting_find() tells a key's type
 * and bounds. `origin` names where the text came from in errors (NULL:
 * "setting"). On failure the settings are unchanged. Errors: KVSHARD_EINVAL,
 * KVSHARD_EUNKNOWNKEY, KVSHARD_ETYPE, KVSHARD_ERANGE, KVSHARD_ENOMEM.
 */
KVSHARD_EXPORT int kvshard_settings_set(kvshard_settings *settings, const char *key,
                                        const char *value, const char *origin,
                                        kvshard_error *err);
/** The value of setting `key` as text into `buf` (NUL-terminated, cut at
 *  `cap`): the value set, else its default; *out_set (may be NULL) tells
 *  which. `settings` may be NULL (every default). KVSHARD_EINVAL for NULL
 *  arguments, KVSHARD_EUNKNOWNKEY for an unknown key. */
KVSHARD_EXPORT int kvshard_settings_get(char *buf, size_t cap, bool *out_set,
                                        const kvshard_settings *settings, const char *key);

/* ------------------------------------------------------------------------ */
/** ## Deployment */
/* ------------------------------------------------------------------------ */

/** A deployment: a model plus its options, read from a deployment file or a
 *  bare model config and changed by overrides. Opaque. */
typedef struct kvshard_deployment kvshard_deployment;

/**
 * Read a deployment file, or a bare model config (a file with no `model` key
 * and a `num_hidden_layers`, or a model directory), whose options are then
 * the defaults. A `model` path is relative to the directory of `path`. The
 * caller frees *out with kvshard_deployment_free(). Errors: those of
 * kvshard_model_load_file(), plus KVSHARD_EUNKNOWNKEY and KVSHARD_EPARALLEL
 * for the deployment's own keys.
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

/** A deployment of a model the caller built (kvshard_model_create()); the
 *  deployment takes ownership of `model` on success only. `options` NULL
 *  means KVSHARD_OPTIONS_INIT. */
KVSHARD_EXPORT int kvshard_deployment_create(kvshard_deployment **out, kvshard_model *model,
                                             const kvshard_options *options,
                                             kvshard_error *err);

/** Release a deployment and its model. NULL is a no-op. */
KVSHARD_EXPORT void kvshard_deployment_free(kvshard_deployment *deployment);

/** The deployment's model. Borrowed: valid until the deployment is freed. */
KVSHARD_EXPORT const kvshard_model *kvshard_deployment_model(const kvshard_deployment *deployment);

/** Copy the deployment's options (file values over defaults, then
 *  overrides) into *out, whose `size` the caller set with
 *  KVSHARD_OPTIONS_INIT; its `settings` points to the deployment's own,
 *  borrowed while the deployment lives. KVSHARD_EINVAL when an argument is
 *  NULL or the size is unknown. */
KVSHARD_EXPORT int kvshard_deployment_options(kvshard_options *out,
                                              const kvshard_deployment *deployment);

/** Override one option or setting, as kvshard_options_set() and
 *  kvshard_settings_set(). Later plan errors about this key are reported
 *  against `origin` (e.g. "command line --world_size"; NULL: "override").
 *  Under an engine profile that engine's flag names for kvshard's options
 *  are keys too (xllm: max_seqs_per_batch; vllm and sglang: their own
 *  spellings, '-' and '_' alike, "max-num-seqs"). */
KVSHARD_EXPORT int kvshard_deployment_set(kvshard_deployment *deployment, const char *key,
                                          const char *value, const char *origin,
                                          kvshard_error *err);

/** Flags for kvshard_deployment_apply_args(). */
#define KVSHARD_ARGS_IGNORE_UNKNOWN 1u /**< skip flags kvshard does not know */

/**
 * Apply an engine's arguments, as its command line or flag file would hold
 * them: gflags-style by default (`--key=value`, a bare `--key` (true) and
 * `--nokey` (false) for booleans), and `--flagfile=FILE` (one argument per
 * line, `#` starts a comment; nested flag files are read too). The engine
 * profile is settled first, wherever `--engine` stands, so each engine's
 * flag names are accepted under it in any order. Under `--engine=vllm` and
 * `--engine=sglang` the arguments are read as those engines write them:
 * one dash as well as two, '-' and '_' alike, `--no-key` for false; two
 * spellings of one input with different values are KVSHARD_EDUPKEY. A flag
 * that takes a value may take the next argument (`--key value`) under every
 * profile; a boolean's value must be joined (`--key=false`).
 * `--ignore_unknown_flags` in the arguments, or KVSHARD_ARGS_IGNORE_UNKNOWN,
 * skips unknown flags and positional arguments instead of failing (an
 * unknown flag without `=` takes the next argument with it unless that
 * starts with `-`; `--` ends the flags) and keeps what it skipped (see
 * kvshard_deployment_ignored_flags()). Without it every argument must be a
 * flag. On failure the deployment is unchanged and the
 * error names the argument (or the flag file's line and column). Errors:
 * those of kvshard_deployment_set(), KVSHARD_EIO for a flag file,
 * KVSHARD_ELIMIT for flag files nested too deeply.
 */
KVSHARD_EXPORT int kvshard_deployment_apply_args(kvshard_deployment *deployment, size_t count,
                                                 const char *const *args, unsigned flags,
                                                 kvshard_error *err);
/** What a file read for a deployment is (kvshard_args_options.on_file). */
typedef enum kvshard_file_role {
    /** The deployment file (DIR/config.json for a model directory). */
    KVSHARD_FILE_DEPLOYMENT = 0,
    /** The model config a `model:` path led to (the deployment file itself
     *  for an inline model or a bare config). */
    KVSHARD_FILE_MODEL = 1,
    KVSHARD_FILE_FLAGS = 2,  /**< a flag file (--flagfile) */
    /** A safetensors index or shard, read for device inputs. */
    KVSHARD_FILE_WEIGHTS = 3
} kvshard_file_role;

/** Called with each file read; `path` is borrowed for the call. */
typedef void (*kvshard_file_fn)(void *user, kvshard_file_role role, const char *path);

/** How kvshard_deployment_apply_args_with() reads. Start from
 *  KVSHARD_ARGS_OPTIONS_INIT. */
typedef struct kvshard_args_options {
    size_t size;
    unsigned flags;  /**< KVSHARD_ARGS_* */
    /** Flags the caller reads itself before passing the rest on (NULL-ended
     *  names without dashes; NULL: none): an unknown flag near one of them
     *  is told so. */
    const char *const *caller_flags;
    /** NULL, or called first with the deployment's own files, then with
     *  each flag file as it is read (a file named twice, twice). When the
     *  call applies, it stays with the deployment: from then on its plans,
     *  comparisons and fits report each weights file they open, until a
     *  later call that applies sets another or NULL (the user data must
     *  live as long). */
    kvshard_file_fn on_file;
    void *on_file_user;
} kvshard_args_options;

#define KVSHARD_ARGS_OPTIONS_INIT { sizeof(kvshard_args_options), 0u, NULL, NULL, NULL }

/** kvshard_deployment_apply_args() with `options` (NULL:
 *  KVSHARD_ARGS_OPTIONS_INIT). The same errors, and KVSHARD_EINVAL for an
 *  unknown `size`. */
KVSHARD_EXPORT int kvshard_deployment_apply_args_with(kvshard_deployment *deployment,
                                                      size_t count, const char *const *args,
                                                      const kvshard_args_options *options,
                                                      kvshard_error *err);

/** What kvshard_deployment_apply_args() skipped under `--ignore_unknown_flags`
 *  or KVSHARD_ARGS_IGNORE_UNKNOWN, over every call, each once in the order
 *  first seen: unknown flags as written without their values
 *  ("--max-model-len"), and positional arguments (which the switch skips
 *  too) as they are. Its plans and comparisons warn
 *  KVSHARD_WARN_FLAGS_IGNORED. Writes the first `cap` of them into `out`
 *  (which may be NULL when `cap` is 0) and returns how many there are (0
 *  for a NULL deployment). The strings are borrowed until the deployment is
 *  freed. */
KVSHARD_EXPORT size_t kvshard_deployment_ignored_flags(const char **out, size_t cap,
                                                       const kvshard_deployment *deployment);

/* ------------------------------------------------------------------------ */
/** ## Planning */
/* ------------------------------------------------------------------------ */

/** A validated ownership map with per-rank memory and capacity. Opaque,
 *  immutable. */
typedef struct kvshard_plan kvshard_plan;

/** Owner of a layer whose cache is stored on every rank. */
#define KVSHARD_OWNER_ALL (-1)
/** Owner of a layer that stores nothing (a no-cache layer). */
#define KVSHARD_OWNER_NONE (-2)

/**
 * Build a plan. `options` NULL means KVSHARD_OPTIONS_INIT; the plan copies what
 * it needs, so the model may be freed afterwards. The plan allocates with
 * `allocator` (NULL: the C library's). Errors: KVSHARD_EINVAL (NULL
 * arguments, an unknown `size`), KVSHARD_EPARALLEL, ERANGE (an option out of
 * its range), EWORLD, ESPLIT, ESPLITCP, EKVHEADS, EQHEADS, ELINEARHEADS, ENOBLOCK,
 * EOVERFLOW, EPROFILE, ELIMIT, ENOMEM. Errors about the model's own figures
 * point at the key in the model file.
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

/* ------------------------------------------------------------------------ */
/** ## A rank's layers and memory */
/* ------------------------------------------------------------------------ */

/**
 * Whether plan rank `plan_rank` stores any cache of decoder layer `layer`: the KV
 * of a KV layer it owns (all of a compressed layer), the state of a linear
 * layer, the window of a sliding or chunked layer; true on every rank for a
 * hybrid layer (its state is everywhere) and false everywhere for no-cache
 * and shared-KV layers. O(1), allocates nothing.
 * Out-of-range arguments give false.
 */
KVSHARD_EXPORT bool kvshard_plan_owns(const kvshard_plan *plan, uint32_t plan_rank,
                                      uint32_t layer);
/** Whether plan rank `plan_rank` stores the paged KV cache of `layer`: true only
 *  for a KV layer (full attention, hybrid or compressed) the rank's split
 *  rank owns (all of them when S_eff = 1). O(1), allocates nothing; out of range: false. */
KVSHARD_EXPORT bool kvshard_plan_stores_kv(const kvshard_plan *plan, uint32_t plan_rank,
                                           uint32_t layer);

/** Split rank (t % S_eff) and split group (t / S_eff) of plan rank
 *  `plan_rank`, whose TP rank is t. Either output may be NULL. KVSHARD_ERANK
 *  when out of range. */
KVSHARD_EXPORT int kvshard_plan_split_position(uint32_t *out_split_rank,
                                               uint32_t *out_split_group,
                                               const kvshard_plan *plan, uint32_t plan_rank);

/** The KV layer indices (full attention, hybrid, compressed) whose KV plan
 *  rank `plan_rank` stores, in ascending order. The array is borrowed from the plan.
 *  KVSHARD_ERANK when out of range. */
KVSHARD_EXPORT int kvshard_plan_rank_layers(const uint32_t **out, size_t *out_count,
                                            const kvshard_plan *plan, uint32_t plan_rank);

/** What a rank holds of one layer. */
typedef enum kvshard_layer_holding {
    /** The layer belongs to another pipeline stage. */
    KVSHARD_HOLDS_NOT_ON_STAGE = 0,
    /** Nothing: a no-cache layer, or a draft layer no speculation counts. */
    KVSHARD_HOLDS_NOTHING = 1,
    /** The recurrent state of a linear layer. */
    KVSHARD_HOLDS_STATE = 2,
    /** The window of a sliding-window or chunked-attention layer. */
    KVSHARD_HOLDS_WINDOW = 3,
    /** The paged KV it owns (full attention, hybrid with its state,
     *  compressed with its window and state). */
    KVSHARD_HOLDS_KV = 4,
    /** A KV layer another rank of its split group owns: the rank computes
     *  it from its scratch buffer (a hybrid layer's state is still its own). */
    KVSHARD_HOLDS_SCRATCH = 5,
    /** A shared-KV layer: it reads kv_source's cache, on the same stage. */
    KVSHARD_HOLDS_SHARED = 6,
    /** A draft layer counted with speculation, on the last stage. */
    KVSHARD_HOLDS_DRAFT = 7
} kvshard_layer_holding;

/** How one rank stores one layer: what an engine needs to allocate the
 *  layer's buffers. Start from KVSHARD_LAYER_STORAGE_INIT. */
typedef struct kvshard_layer_storage {
    size_t size;
    kvshard_layer_kind kind;
    /** The rank stores the layer's paged KV (see kvshard_plan_stores_kv()). */
    bool stores_kv;
    /** Position of the layer among the KV layers this rank stores (the index
     *  into kvshard_plan_rank_layers()), -1 when it stores none. */
    int32_t kv_slot;
    /** Position among the state layers (linear and hybrid) in layer order,
     *  the same on every rank; -1 for other kinds. */
    int32_t state_slot;
    /** GQA KV heads the rank holds for this layer: on an owner the union of
     *  its split group's heads, on every rank of a sliding layer its own.
     *  0 and 0 when it holds none, and for MLA (one latent, no heads). */
    uint32_t kv_head_first;
    uint32_t kv_head_count;
    /** Bytes per token of this layer's KV (or window) on this rank; 0 when
     *  it stores none. */
    uint64_t kv_bytes_per_token;
    /** Plan rank of this rank's split group that stores the layer's KV: the
     *  rank to receive it from (on the same stage). The rank itself when S_eff = 1; -1 for
     *  layers without a paged KV cache. */
    int32_t owner_plan_rank;
    /** Per-sequence bytes: the state of a linear or hybrid layer, the window
     *  of a sliding or chunked layer, the window and compressor state of a
     *  compressed layer on its owner, else 0. */
    uint64_t state_bytes_per_seq;
    /** The layer whose cache this one reads (a shared-KV layer, or a
     *  compressed layer that reads another's stream); -1 for none. */
    int32_t kv_source;
    /** A compressed layer's compression ratio, else 0. */
    uint32_t compress_ratio;
    /** The layer keeps an indexer key (DSA, a sparse index, a compressed
     *  layer's index keys). */
    bool index_key;
    /** What the rank holds of it. */
    kvshard_layer_holding holding;
    /** The pipeline stage the layer is on (draft layers: the last). */
    uint32_t stage;
} kvshard_layer_storage;

#define KVSHARD_LAYER_STORAGE_INIT                                                    \
    { sizeof(kvshard_layer_storage), KVSHARD_LAYER_FULL_ATTENTION, false, -1, -1, 0,  \
      0, 0, -1, 0, -1, 0, false, KVSHARD_HOLDS_NOTHING, 0 }

/** How plan rank `plan_rank` (stage x T + TP rank; the TP rank when there is
 *  one stage) stores `layer`, into *out (`size` set by the caller): decoder
 *  layers 0..L-1, then the draft layers L..L+d-1 (d =
 *  kvshard_model_num_draft_layers()). A layer of another stage is
 *  KVSHARD_HOLDS_NOT_ON_STAGE, not an error. O(1). KVSHARD_ERANK,
 *  KVSHARD_ELAYER when out of range, KVSHARD_EINVAL when `out` is NULL or
 *  its size unknown. */
KVSHARD_EXPORT int kvshard_plan_layer_storage(kvshard_layer_storage *out,
                                              const kvshard_plan *plan, uint32_t plan_rank,
                                              uint32_t layer);

/** Memory figures of one plan rank, all in bytes. Start from
 *  KVSHARD_RANK_MEMORY_INIT. */
typedef struct kvshard_rank_memory {
    size_t size;
    uint64_t kv_bytes_per_token;      /**< the KV layers the rank stores */
    uint64_t scratch_bytes_per_token; /**< scratch KV layers while split */
    uint64_t draft_bytes_per_token;   /**< draft layers, with speculation */
    uint64_t bytes_per_block;         /**< block_size x the three above */
    uint64_t state_bytes_per_seq;     /**< states, windows, compressor state */
    /** KV blocks that fit this rank's memory; 0 when has_num_blocks is false
     *  (no memory_per_rank, or no KV bytes per block). */
    uint64_t num_blocks;
    bool has_num_blocks;
    /** Per-sequence scratch while split: the window and state of the largest
     *  KV layer the rank computes without owning it (compressed layers). */
    uint64_t scratch_bytes_per_seq;
    /** The draft layers' share of state_bytes_per_seq (their windows and
     *  compressor state), with speculation. */
    uint64_t draft_bytes_per_seq;
    /** The rank's budget for cache and state: memory_per_rank, or from the
     *  device inputs; false without either. */
    bool has_budget;
    uint64_t budget;
    /** With device inputs: the weights the rank holds and the activation
     *  reserve its budget leaves out (has_device false otherwise). */
    bool has_device;
    uint64_t weights_bytes;
    uint64_t activation_reserve;
} kvshard_rank_memory;

#define KVSHARD_RANK_MEMORY_INIT                                                      \
    { sizeof(kvshard_rank_memory), 0, 0, 0, 0, 0, 0, false, 0, 0, false, 0, false, 0, 0 }

/** Memory figures of plan rank `plan_rank` into *out (its `size` set by the
 *  caller). KVSHARD_ERANK when out of range, KVSHARD_EINVAL when `out` is
 *  NULL or its size is unknown. */
KVSHARD_EXPORT int kvshard_plan_rank_memory(kvshard_rank_memory *out, const kvshard_plan *plan,
                                            uint32_t plan_rank);

/* ------------------------------------------------------------------------ */
/** ## Pipeline stages and global ranks */
/* ------------------------------------------------------------------------ */

/* A plan of P stages has P x T plan ranks: plan rank stage x T + TP rank.
 * Every call of this header that takes a rank takes a plan rank (the TP
 * rank when P = 1). An engine that knows only its global rank asks
 * kvshard_plan_locate() for its plan rank first. */

/** P: pipeline stages (1 without pp_size); 0 for a NULL plan. */
KVSHARD_EXPORT uint32_t kvshard_plan_pp_size(const kvshard_plan *plan);
/** P x T: how many plan ranks there are; 0 for a NULL plan. */
KVSHARD_EXPORT uint32_t kvshard_plan_num_ranks(const kvshard_plan *plan);

/** One pipeline stage. Start from KVSHARD_STAGE_INFO_INIT. */
typedef struct kvshard_stage_info {
    size_t size;
    uint32_t stage;
    uint32_t layer_first;      /**< its first decoder layer */
    uint32_t layer_count;      /**< its decoder layers */
    uint32_t num_kv_layers;    /**< full-attention, hybrid and compressed layers */
    uint32_t num_state_layers; /**< linear and hybrid layers */
    /** Draft layers speculation counts on it: the last stage only. */
    uint32_t num_draft_layers;
    /** Global rank of its TP rank 0 (data-parallel replica 0, context rank
     *  0), and the step between the global ranks of consecutive TP ranks. */
    uint32_t global_rank_first;
    uint32_t global_rank_stride;
    /** The largest over its ranks of KV + scratch + draft bytes per token,
     *  and of the state bytes per sequence. */
    uint64_t bytes_per_token;
    uint64_t state_bytes_per_seq;
    /** The fewest blocks of its ranks that store KV bytes; false when none
     *  does or there is no budget. */
    bool has_num_blocks;
    uint64_t num_blocks;
    /** The binding rank (the first whose blocks are the common count) is on
     *  this stage. */
    bool binds;
} kvshard_stage_info;

#define KVSHARD_STAGE_INFO_INIT                                                       \
    { sizeof(kvshard_stage_info), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, 0, false }

/** Stage `stage` into *out (`size` set by the caller). KVSHARD_ESTAGE when
 *  out of range, KVSHARD_EINVAL for NULL arguments or an unknown size. */
KVSHARD_EXPORT int kvshard_plan_stage(kvshard_stage_info *out, const kvshard_plan *plan,
                                      uint32_t stage);

/** The stage a layer is on: decoder layers 0..L-1, then the draft layers
 *  L..L+d-1 (on the last stage). KVSHARD_ELAYER when out of range. */
KVSHARD_EXPORT int kvshard_plan_layer_stage(uint32_t *out, const kvshard_plan *plan,
                                            uint32_t layer);

/** The layer counts of the stages as the engines take them ("31,30": the
 *  value of VLLM_PP_LAYER_PARTITION and SGLANG_PP_LAYER_PARTITION). Written
 *  like snprintf; returns the length the whole text needs, or
 *  KVSHARD_EINVAL. */
KVSHARD_EXPORT int kvshard_plan_pp_partition(char *buf, size_t cap, const kvshard_plan *plan);

/** Where a global rank sits. Start from KVSHARD_RANK_POSITION_INIT. */
typedef struct kvshard_rank_position {
    size_t size;
    uint32_t global_rank;
    uint32_t dp_rank;     /**< data-parallel replica */
    uint32_t stage;       /**< pipeline stage */
    uint32_t cp_rank;     /**< context-parallel rank */
    uint32_t tp_rank;     /**< attention-TP rank inside its stage */
    uint32_t plan_rank;   /**< stage x T + tp_rank: what the rank calls take */
    uint32_t split_group; /**< tp_rank / S_eff */
    uint32_t split_rank;  /**< tp_rank % S_eff */
} kvshard_rank_position;

#define KVSHARD_RANK_POSITION_INIT { sizeof(kvshard_rank_position), 0, 0, 0, 0, 0, 0, 0, 0 }

/** The coordinates of global rank `global_rank` under the plan's rank
 *  layout, into *out (`size` set by the caller). No collective: every rank
 *  can locate every other. KVSHARD_EGLOBALRANK outside 0..world_size-1,
 *  KVSHARD_EINVAL for NULL arguments or an unknown size. */
KVSHARD_EXPORT int kvshard_plan_locate(kvshard_rank_position *out, const kvshard_plan *plan,
                                       uint32_t global_rank);

/** The global rank of a rank's coordinates under the plan's layout.
 *  KVSHARD_ESTAGE for a stage out of range, KVSHARD_ERANK for another
 *  coordinate out of range, KVSHARD_EINVAL for NULL arguments. */
KVSHARD_EXPORT int kvshard_plan_global_rank(uint32_t *out, const kvshard_plan *plan,
                                            uint32_t dp_rank, uint32_t stage, uint32_t cp_rank,
                                            uint32_t tp_rank);

/* ------------------------------------------------------------------------ */
/** ## Blocks and capacity */
/* ------------------------------------------------------------------------ */

/** Capacity common to all ranks (the minimum over ranks). Start from
 *  KVSHARD_CAPACITY_INIT. An engine profile's own figures (state slots, the
 *  blocks left after its padding) are figures by name:
 *  kvshard_plan_capacity_figure(). */
typedef struct kvshard_capacity {
    size_t size;
    kvshard_engine engine;
    uint32_t block_size;
    /** Bytes per rank for cache and state (under xllm: the budget B); 0 when
     *  none was given. */
    uint64_t memory_per_rank;
    uint32_t max_seqs;
    bool has_num_blocks;      /**< false without memory or KV bytes */
    uint64_t num_blocks;
    uint64_t max_tokens;      /**< num_blocks x block_size */
    /** Tokens per sequence for the two figures below; 0 when none. */
    uint32_t context_length;
    /** Sequences of context_length tokens that run at once. */
    bool has_concurrency;
    uint64_t concurrency;
    /** The max_seqs at which state and KV blocks run out together. */
    bool has_balanced_max_seqs;
    uint64_t balanced_max_seqs;
} kvshard_capacity;

#define KVSHARD_CAPACITY_INIT                                                         \
    { sizeof(kvshard_capacity), KVSHARD_ENGINE_KVSHARD, 0, 0, 0, false, 0, 0, 0,      \
      false, 0, false, 0 }

/** Capacity common to all ranks into *out (`size` set by the caller).
 *  KVSHARD_EINVAL when an argument is NULL or the size is unknown. */
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

/** The S_eff = 1 comparison figures into *out (`size` set by the caller).
 *  KVSHARD_EINVAL when an argument is NULL or the size is unknown. */
KVSHARD_EXPORT int kvshard_plan_uniform(kvshard_uniform *out, const kvshard_plan *plan);

/** Memory an engine measured, for block counts without rebuilding the plan.
 *  Start from KVSHARD_BUDGET_INIT. */
typedef struct kvshard_budget {
    size_t size;
    /** Bytes the rank can give to cache and state (under xllm: the budget). */
    uint64_t memory_per_rank;
    /** Bytes taken off first for the engine's own buffers. */
    uint64_t reserved_bytes;
    /** Bytes the engine adds to every block (its own block metadata). */
    uint64_t extra_bytes_per_block;
    /** Tokens per sequence for concurrency figures; 0: the plan's own
     *  context_length (none when the plan has none). */
    uint32_t context_length;
} kvshard_budget;

#define KVSHARD_BUDGET_INIT { sizeof(kvshard_budget), 0, 0, 0, 0 }

/** Block counts from a budget. Start from KVSHARD_BLOCKS_INIT. */
typedef struct kvshard_blocks {
    size_t size;
    uint64_t num_blocks;
    uint64_t max_tokens;
    bool has_concurrency;     /**< a context length was given, or the plan has one */
    uint64_t concurrency;
    bool has_balanced_max_seqs;
    uint64_t balanced_max_seqs;
    /** The sequences these blocks serve at once at the plan's own
     *  context_length, at most the plan's max_seqs, whose
     *  state the budget reserved: the request limit to give the engine's
     *  scheduler. has_max_seqs is false when the plan has no
     *  context_length. */
    bool has_max_seqs;
    uint32_t max_seqs;
    /** The per-sequence rows each state layer allocates on this rank for
     *  this budget: under the kvshard profile the plan's max_seqs, whose
     *  state the budget reserves; under a profile with state slots of its
     *  own (xllm, sglang, trtllm) that profile's state_slots figure.
     *  has_state_slots is false under vllm, whose state pages live in the
     *  KV pool. Ranks agree on the minimum, as on num_blocks. */
    bool has_state_slots;
    uint64_t state_slots;
} kvshard_blocks;

#define KVSHARD_BLOCKS_INIT \
    { sizeof(kvshard_blocks), 0, 0, false, 0, false, 0, false, 0, false, 0 }

/** Every plan rank, for kvshard_plan_blocks_for(). */
#define KVSHARD_ALL_RANKS UINT32_MAX

/**
 * Blocks that fit `budget` on plan rank `plan_rank` (the rank's own measured
 * memory), or on every rank (KVSHARD_ALL_RANKS: the minimum, what all ranks
 * allocate), under the plan's engine profile, with the concurrency figures at
 * the budget's context length, else the plan's. Errors: KVSHARD_EINVAL (NULL arguments, an
 * unknown size), KVSHARD_ERANK, KVSHARD_ENOBLOCK (not one block fits; the
 * state reservation and one block pass 2^64 - 1 bytes), KVSHARD_ERANGE (the
 * plan has no KV bytes per block), KVSHARD_EOVERFLOW (a block with
 * extra_bytes_per_block passes 2^64 - 1 bytes, or max_tokens does). No sum
 * is saturated: a budget of 2^64 - 1 bytes never holds a larger block.
 */
KVSHARD_EXPORT int kvshard_plan_blocks_for(kvshard_blocks *out, const kvshard_plan *plan,
                                           uint32_t plan_rank, const kvshard_budget *budget,
                                           kvshard_error *err);

/* ------------------------------------------------------------------------ */
/** ## Buffer shapes: what an engine allocates, element by element */
/* ------------------------------------------------------------------------ */

/** Bytes of one element of `dtype`: 4 for float32, 2 for bfloat16 and
 *  float16, 1 for fp8, fp8_e5m2 and int8 (their scales are counted in the bytes per
 *  token, not here); 0 for KVSHARD_DTYPE_AUTO, which is no type, and for
 *  unknown values. */
KVSHARD_EXPORT uint32_t kvshard_dtype_size(kvshard_dtype dtype);

/** The dtype the plan's KV cache is sized in: the kv_cache_dtype option,
 *  or for KVSHARD_DTYPE_AUTO the model's dtype (an fp8 checkpoint gives an
 *  fp8 cache); never AUTO for a plan. KVSHARD_DTYPE_AUTO for a NULL plan. */
KVSHARD_EXPORT kvshard_dtype kvshard_plan_kv_cache_dtype(const kvshard_plan *plan);

/** The elements of one token of a layer's KV on one rank. Start from
 *  KVSHARD_LAYER_KV_GEOMETRY_INIT; later versions add fields at the end. */
typedef struct kvshard_layer_kv_geometry {
    size_t size;
    kvshard_layer_kind kind;
    kvshard_attention attention;
    /** The layer keeps KV of its own: paged (full attention, hybrid,
     *  compressed) or a window (sliding, chunked). False for linear,
     *  no-cache and shared-KV layers, whose figures below are 0. */
    bool has_kv;
    /** The KV cache dtype (kvshard_plan_kv_cache_dtype()) and its bytes per
     *  element. */
    kvshard_dtype dtype;
    uint32_t element_bytes;
    /** GQA: the KV heads of this TP rank's shard, kv_head_first .. +
     *  kv_heads - 1; one head, shared by T / H ranks, when the layer has
     *  fewer KV heads than T. (While split, an owner stores its whole
     *  group's heads: kvshard_layer_storage.kv_head_count.) 0 for MLA and
     *  compressed attention. */
    uint32_t kv_head_first;
    uint32_t kv_heads;
    /** GQA: the model's KV heads for this layer's geometry (the sliding
     *  layers' may differ), and the K and V head dims. */
    uint32_t total_kv_heads;
    uint32_t k_head_dim;
    uint32_t v_head_dim;
    /** MLA: the latent (kv_lora_rank) and the RoPE part stored beside it;
     *  compressed attention: the RoPE part of its latent. */
    uint32_t kv_lora_rank;
    uint32_t qk_rope_head_dim;
    /** Compressed attention: the elements of one shared K=V entry. */
    uint32_t latent_dim;
    /** The indexer's key dim when the layer keeps an indexer key (DSA,
     *  compressed layers), else 0. */
    uint32_t index_head_dim;
    /** The scales stored beside the elements of one token, so that the
     *  parts add up to the layer's kv_bytes_per_token (the entry bytes of a
     *  window):
     *  - GQA: kv_heads x (k_head_dim + v_head_dim) x element_bytes +
     *    scale_bytes_per_token. At fp8 an fp32 scale for K and one for V per
     *    head (8 bytes a head); none at 16 bits.
     *  - MLA: kv_lora_rank x element_bytes + qk_rope_head_dim x
     *    rope_element_bytes + index_head_dim x index_element_bytes +
     *    scale_bytes_per_token. At fp8 a DSA model keeps the RoPE part in
     *    bf16 and an fp32 scale per 128 latent elements, other models one
     *    fp32 scale a latent; the indexer key is fp8 with an fp32 scale per
     *    128 elements.
     *  - Compressed: (latent_dim - qk_rope_head_dim) x element_bytes +
     *    qk_rope_head_dim x rope_element_bytes + index_head_dim x
     *    index_element_bytes + scale_bytes_per_token, one latent entry and
     *    index key (the stream keeps one per compress ratio tokens): at fp8
     *    the latent has one scale byte per 64 NoPE elements and its padding
     *    to 8 bytes (scale_dtype KVSHARD_DTYPE_FP8, the latent's), the index
     *    key its fp32 scales.
     *  scale_dtype is KVSHARD_DTYPE_AUTO when there are no scales. A GQA
     *  layer's sparse index key (one head in the model dtype) is not in
     *  these parts. */
    kvshard_dtype scale_dtype;
    uint32_t scale_bytes_per_token;
    /** Bytes of one element of the RoPE part beside a latent (2 when it is
     *  bf16 beside an fp8 NoPE part) and of the indexer key; 0 without. */
    uint32_t rope_element_bytes;
    uint32_t index_element_bytes;
} kvshard_layer_kv_geometry;

#define KVSHARD_LAYER_KV_GEOMETRY_INIT                                                \
    { sizeof(kvshard_layer_kv_geometry), KVSHARD_LAYER_FULL_ATTENTION,                \
      KVSHARD_ATTENTION_GQA, false, KVSHARD_DTYPE_AUTO, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, \
      KVSHARD_DTYPE_AUTO, 0, 0, 0 }

/** The KV geometry of `layer` (decoder layers 0..L-1, then the draft layers
 *  L..L+d-1) on plan rank `plan_rank` into *out (`size` set by the caller).
 *  The geometry is the model's and the rank's TP position's, whatever the
 *  rank's stage. Errors: KVSHARD_EINVAL (NULL arguments, an unknown size),
 *  KVSHARD_ERANK, KVSHARD_ELAYER. */
KVSHARD_EXPORT int kvshard_plan_layer_kv_geometry(kvshard_layer_kv_geometry *out,
                                                  const kvshard_plan *plan, uint32_t plan_rank,
                                                  uint32_t layer, kvshard_error *err);

/** Most tensors one layer keeps a sequence (state or window). */
#define KVSHARD_MAX_STATE_TENSORS 4u

/** One tensor a layer keeps for one sequence on one rank: its recurrent
 *  state, or its window. Start each entry from KVSHARD_STATE_TENSOR_INIT. */
typedef struct kvshard_state_tensor {
    size_t size;
    /** Static storage, one of:
     *  - "conv" (the convolution's last columns: dims channels, columns) and
     *    "ssm" (the temporal state: heads, then the state's own dims; GDN
     *    and KDA under speculation lead with spec + 1 copies);
     *  - "window_k" and "window_v" of a sliding or chunked layer: tokens,
     *    heads, head dim, where tokens = block_size x (ceil(window /
     *    block_size) + 1), the window's whole blocks and the one being
     *    filled; at fp8 "window_k_scale" and "window_v_scale" (tokens,
     *    heads) in float32 beside them;
     *  - "window_latent" of a compressed layer (or a window of an MLA
     *    model): tokens, then the latent's elements, or at fp8 the bytes of
     *    its packed entry (fp8 NoPE part, bf16 RoPE part and scales, as
     *    kvshard_layer_kv_geometry details them);
     *  - "compressor_state" of a compressed layer that owns a stream of
     *    ratio 2 or more: slots, rows (2 per overlapping window), the
     *    latent's and index key's dims, in float32. */
    const char *name;
    /** conv: the model dtype; ssm: the state dtype in force; a window: the
     *  KV cache dtype (its scales and the compressor state: float32). */
    kvshard_dtype dtype;
    uint32_t ndim;
    uint64_t dims[4]; /**< the first ndim used, the rest 0 */
    uint64_t bytes;   /**< the dims' product times the dtype's bytes */
} kvshard_state_tensor;

#define KVSHARD_STATE_TENSOR_INIT                                                     \
    { sizeof(kvshard_state_tensor), NULL, KVSHARD_DTYPE_AUTO, 0, {0, 0, 0, 0}, 0 }

/**
 * The tensors `layer` keeps for one sequence on plan rank `plan_rank`: its
 * recurrent state (linear and hybrid layers) and its window (sliding,
 * chunked and compressed layers, and a compressed layer's compressor state)
 * where the rank keeps them. The first `cap` into `out` (whose entries'
 * `size` the caller set; `out` may be NULL when `cap` is 0), how many there
 * are into *out_count (at most KVSHARD_MAX_STATE_TENSORS). Their bytes add
 * up to the layer's kvshard_layer_storage.state_bytes_per_seq on every
 * layer, draft layers included, and rank. A layer that keeps nothing a
 * sequence, or of another stage, has none (*out_count 0). Errors:
 * KVSHARD_EINVAL, KVSHARD_ERANK, KVSHARD_ELAYER.
 */
KVSHARD_EXPORT int kvshard_plan_layer_state_shapes(kvshard_state_tensor *out, size_t cap,
                                                   size_t *out_count, const kvshard_plan *plan,
                                                   uint32_t plan_rank, uint32_t layer,
                                                   kvshard_error *err);

/* ------------------------------------------------------------------------ */
/** ## Digests and the log line */
/* ------------------------------------------------------------------------ */

/** 64-bit digest of the whole plan: layer kinds, owners, every byte figure
 *  and the capacity. Equal plans give equal digests. */
KVSHARD_EXPORT uint64_t kvshard_plan_digest(const kvshard_plan *plan);
/** 64-bit digest of the layout only: layer kinds, owners, T, S_eff and the
 *  bytes per token and per sequence of every rank, without memory or
 *  capacity. Ranks that size blocks from their own measured memory compare
 *  this one. */
KVSHARD_EXPORT uint64_t kvshard_plan_layout_digest(const kvshard_plan *plan);

/**
 * One line for an engine's log: the rank's place in its split group, the KV
 * layers it stores, its bytes per token and per sequence, the blocks, and
 * the layout digest. Written like snprintf: at most `cap` bytes with the
 * terminating NUL; returns the length the whole line needs, or a negative
 * status (KVSHARD_ERANK, KVSHARD_EINVAL).
 */
KVSHARD_EXPORT int kvshard_plan_describe_rank(char *buf, size_t cap, const kvshard_plan *plan,
                                              uint32_t plan_rank);

/**
 * kvshard_plan_describe_rank() with the blocks the rank allocates in place
 * of the plan's: the count an engine agreed over its ranks from measured
 * memory (kvshard_plan_blocks_for(), then the minimum over ranks), so that
 * the log line names what was allocated ("N blocks of B"). Errors as
 * kvshard_plan_describe_rank().
 */
KVSHARD_EXPORT int kvshard_plan_describe_rank_blocks(char *buf, size_t cap,
                                                     const kvshard_plan *plan, uint32_t plan_rank,
                                                     uint64_t num_blocks);

/* ------------------------------------------------------------------------ */
/** ## Warnings */
/* ------------------------------------------------------------------------ */

typedef enum kvshard_warning_code {
    KVSHARD_WARN_SPLIT_DISABLED = 0,
    KVSHARD_WARN_SPLIT_SIZE_ONE = 1,
    KVSHARD_WARN_RANK_OWNS_NOTHING = 2,
    KVSHARD_WARN_IMBALANCED = 3,
    KVSHARD_WARN_EXCEEDS_REPLICATION = 4,
    KVSHARD_WARN_NO_KV_LAYERS = 5,
    KVSHARD_WARN_DRAFT_UNSPLIT = 6,
    KVSHARD_WARN_MAX_SEQS_UNREACHABLE = 7,
    /** Settings that only another engine profile reads differ from their
     *  defaults: the plan's profile ignores them. */
    KVSHARD_WARN_PROFILE_INPUTS_IGNORED = 8,
    /** vllm: the engine version runs this state model with prefix caching
     *  off, whatever was asked. */
    KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED = 9,
    /** vllm: Mamba cache mode `all` asked for runs as `align`. */
    KVSHARD_WARN_ENGINE_MAMBA_CACHE_MODE_ALIGN = 10,
    /** vllm: a KV cache group type is padded with layers that cost memory
     *  as real ones (one warning per type). */
    KVSHARD_WARN_ENGINE_PADDING_LAYERS = 11,
    /** vllm 0.18: max_num_seqs above the blocks caps the CUDA-graph sizes. */
    KVSHARD_WARN_ENGINE_CUDAGRAPH_SIZES_CAPPED = 12,
    /** sglang: --max-total-tokens above the token pool the budget gives. */
    KVSHARD_WARN_ENGINE_MAX_TOTAL_TOKENS_ABOVE_PROFILE = 13,
    /** sglang: the state pool lowers max_running_requests. */
    KVSHARD_WARN_ENGINE_MAX_RUNNING_REQUESTS_CAPPED = 14,
    /** kvshard_deployment_apply_args() skipped flags or arguments the
     *  profile does not read (`--ignore_unknown_flags`); the message names
     *  them (all of them: kvshard_deployment_ignored_flags()). */
    KVSHARD_WARN_FLAGS_IGNORED = 15,
    /** SGLang refuses pipeline stages together with speculative decoding;
     *  the plan is made all the same. */
    KVSHARD_WARN_PP_DRAFT_REFUSED = 16,
    /** Some stage's ranks store no KV bytes though the model has KV layers. */
    KVSHARD_WARN_STAGE_WITHOUT_KV = 17,
    /** memory_per_rank is the budget: device_memory is not read; or under
     *  an engine profile the engine's own figure the weights fill is given,
     *  so the weights and activation_reserve given are not read. */
    KVSHARD_WARN_DEVICE_MEMORY_IGNORED = 18,
    /** The safetensors index's metadata.total_size differs from the sum of
     *  its shards' tensors; the headers are used. */
    KVSHARD_WARN_WEIGHTS_TOTAL_SIZE_MISMATCH = 19,
    /** Some tensors have names no rule classes: counted as split over T. */
    KVSHARD_WARN_WEIGHTS_UNKNOWN_TENSORS = 20,
    /** context_length is longer than the model's max_position_embeddings
     *  (the text config's first): the model was not trained that far. The
     *  plan is made all the same. */
    KVSHARD_WARN_CONTEXT_BEYOND_MODEL = 21,
    /** sglang: a DSA model runs with pages of 64 tokens whatever
     *  --page-size asks. */
    KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN = 22,
    /** trtllm: max_seq_len is above the tokens of the pool: the engine
     *  reduces the attention window and max_seq_len to them. */
    KVSHARD_WARN_ENGINE_WINDOW_REDUCED = 23,
    /** trtllm: a hybrid's state pool is max_batch_size slots, fixed before
     *  the engine profiles its memory: concurrency is capped by it. */
    KVSHARD_WARN_ENGINE_STATE_SLOTS_FIXED = 24,
    /** comm: the split's mechanisms are the profile's, and the engine has
     *  published them for DSA models only: for this model they are assumed. */
    KVSHARD_WARN_COMM_MECHANISM_ASSUMED = 25,
    /** comm: the decode mechanism broadcasts the whole pool of every split
     *  layer each step. */
    KVSHARD_WARN_FULL_LAYER_DECODE = 26,
    /** comm: an accelerator is given but no weights source, so the decode
     *  base step and the throughput are unknown. */
    KVSHARD_WARN_COMM_NO_WEIGHTS = 27,
    /** The weights come from model.safetensors.index.json alone (none of
     *  its shards at hand): its total_size, and the expert bytes estimated
     *  from its tensor names or given; the shards' headers give exact
     *  figures. */
    KVSHARD_WARN_WEIGHTS_ESTIMATED = 28,
    /** comm: some stage's decode communication takes at least half its
     *  base step (an estimate's warning, see kvshard_plan_comm()). */
    KVSHARD_WARN_SPLIT_COMM_DOMINATES = 29,
    /** comm: the split plan's estimated throughput is below the same plan's
     *  without the split (an estimate's warning, see kvshard_plan_comm()). */
    KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT = 30
} kvshard_warning_code;

/** Machine-readable name of a warning code ("split_disabled", ...);
 *  "unknown" for other values. */
KVSHARD_EXPORT const char *kvshard_warning_name(kvshard_warning_code code);

/** Number of warnings the plan carries (see kvshard_plan_warning()). */
KVSHARD_EXPORT size_t kvshard_plan_warning_count(const kvshard_plan *plan);
/** Warning `index` (0-based, in a fixed order). The message is borrowed.
 *  Either output may be NULL. KVSHARD_EINVAL when out of range. */
KVSHARD_EXPORT int kvshard_plan_warning(kvshard_warning_code *out_code, const char **out_message,
                                        const kvshard_plan *plan, size_t index);
/** Whether the plan carries a warning with this code. */
KVSHARD_EXPORT bool kvshard_plan_has_warning(const kvshard_plan *plan, kvshard_warning_code code);

/* ------------------------------------------------------------------------ */
/** ## Inspecting a plan */
/* ------------------------------------------------------------------------ */

/** The options the plan was built with, with the profile's defaults settled
 *  (block_size, max_seqs and ownership set). `out->size` set by the caller. */
KVSHARD_EXPORT int kvshard_plan_options(kvshard_options *out, const kvshard_plan *plan);
/** T = world_size / (pp_size * dp_size * cp_size): the TP ranks of a stage. */
KVSHARD_EXPORT uint32_t kvshard_plan_attn_tp_size(const kvshard_plan *plan);
/** S_eff: the split size in force (1 when layerwise split does not apply). */
KVSHARD_EXPORT uint32_t kvshard_plan_effective_split_size(const kvshard_plan *plan);
/** R: how many TP ranks hold a copy of each KV head without the split (1
 *  when the model has no KV layer). */
KVSHARD_EXPORT uint32_t kvshard_plan_replication_factor(const kvshard_plan *plan);
/** L: decoder layers. */
KVSHARD_EXPORT uint32_t kvshard_plan_num_layers(const kvshard_plan *plan);
/** What a plan keeps of its model besides L, with its options in force.
 *  Start from KVSHARD_PLAN_MODEL_INFO_INIT. A layer's kind is in its
 *  kvshard_layer_storage (or kvshard_model_layer_kind()). */
typedef struct kvshard_plan_model_info {
    size_t size;
    /** d: the model's draft layers, which layer queries number L..L+d-1 (on
     *  the last stage; counted only with speculation). */
    uint32_t num_draft_layers;
    /** State kind of the model's linear and hybrid layers. */
    kvshard_state_kind state_kind;
    /** The state dtype in force (the state_dtype option, else the model's);
     *  KVSHARD_DTYPE_AUTO when there is no temporal state. */
    kvshard_dtype state_dtype;
} kvshard_plan_model_info;

#define KVSHARD_PLAN_MODEL_INFO_INIT                                                  \
    { sizeof(kvshard_plan_model_info), 0, KVSHARD_STATE_NONE, KVSHARD_DTYPE_AUTO }

/** The plan's model facts into *out (`size` set by the caller).
 *  KVSHARD_EINVAL for NULL arguments or an unknown size. */
KVSHARD_EXPORT int kvshard_plan_model(kvshard_plan_model_info *out, const kvshard_plan *plan);
/** Split rank that stores a KV layer's KV when S_eff > 1; KVSHARD_OWNER_ALL
 *  when every rank stores the layer's cache (S_eff = 1, linear, sliding and
 *  chunked layers); KVSHARD_OWNER_NONE for a no-cache layer. A shared-KV
 *  layer, which keeps nothing, gives the owner of the layer whose cache it
 *  reads. KVSHARD_ELAYER when out of range. */
KVSHARD_EXPORT int kvshard_plan_layer_owner(int32_t *out, const kvshard_plan *plan,
                                            uint32_t layer);

/** What a figure holds. */
typedef enum kvshard_figure_type {
    KVSHARD_FIGURE_NULL = 0,   /**< no value (JSON null) */
    KVSHARD_FIGURE_UINT = 1,   /**< uint_value */
    KVSHARD_FIGURE_DOUBLE = 2, /**< double_value */
    KVSHARD_FIGURE_BOOL = 3,   /**< bool_value */
    KVSHARD_FIGURE_TEXT = 4,   /**< text_value, borrowed */
    /** uint_value words in text_value, each followed by a NUL (JSON: an
     *  array of strings), borrowed */
    KVSHARD_FIGURE_TEXT_LIST = 5,
    /** text_value is JSON text, borrowed: a list of counts ("[31, 30]") or
     *  of objects with the same fields each (an engine's pipeline stages) */
    KVSHARD_FIGURE_JSON = 6
} kvshard_figure_type;

/** One named figure of a plan. Start from KVSHARD_FIGURE_INIT. */
typedef struct kvshard_figure {
    size_t size;
    const char *name; /**< static storage */
    kvshard_figure_type type;
    uint64_t uint_value;
    double double_value;
    bool bool_value;
    const char *text_value;
} kvshard_figure;

#define KVSHARD_FIGURE_INIT                                                                        \
    {                                                                                              \
        sizeof(kvshard_figure), NULL, KVSHARD_FIGURE_NULL, 0, 0.0, false, NULL                     \
    }

/**
 * A figure of the plan's capacity by the name of its field in the JSON
 * plan's "capacity" object: "num_blocks", "concurrency", and the engine
 * profiles' "budget", "state_slots", "usable_blocks", "usable_state_slots"
 * (KVSHARD_FIGURE_NULL where the profile gives none). Text figures are
 * borrowed from the plan. KVSHARD_EUNKNOWNKEY for another name,
 * KVSHARD_EINVAL for NULL arguments or an unknown size.
 */
KVSHARD_EXPORT int kvshard_plan_capacity_figure(kvshard_figure *out, const kvshard_plan *plan,
                                                const char *name);

/** The same figure at a measured budget, on one plan rank or on every rank, as
 *  kvshard_plan_blocks_for() computes it. Errors as kvshard_plan_blocks_for(),
 *  and KVSHARD_EUNKNOWNKEY for an unknown name. */
KVSHARD_EXPORT int kvshard_plan_blocks_figure(kvshard_figure *out, const kvshard_plan *plan,
                                              uint32_t plan_rank, const kvshard_budget *budget,
                                              const char *name, kvshard_error *err);

/** How many figures the plan's engine profile predicts the engine logs (the
 *  fields of the JSON plan's top-level "engine" object, "name" and "version"
 *  first); 0 under the kvshard profile and for a NULL plan. */
KVSHARD_EXPORT size_t kvshard_plan_engine_figure_count(const kvshard_plan *plan);
/** Engine figure `index` (0-based, in the JSON object's order) into *out
 *  (`size` set by the caller); text is borrowed from the plan, which makes
 *  the figures on the first read from any thread and keeps them.
 *  KVSHARD_EINVAL for NULL arguments, an unknown size or an index out of
 *  range, KVSHARD_ENOMEM when they cannot be kept. */
KVSHARD_EXPORT int kvshard_plan_engine_figure_at(kvshard_figure *out, const kvshard_plan *plan,
                                                 size_t index);
/** The engine figure `name` ("num_gpu_blocks", "max_total_num_tokens",
 *  "stages", ...) into *out. KVSHARD_EUNKNOWNKEY when the plan's profile
 *  has no such figure, KVSHARD_EINVAL for NULL arguments or an unknown
 *  size, KVSHARD_ENOMEM as kvshard_plan_engine_figure_at(). */
KVSHARD_EXPORT int kvshard_plan_engine_figure(kvshard_figure *out, const kvshard_plan *plan,
                                              const char *name);

/* ------------------------------------------------------------------------ */
/** ## Inspecting a model */
/* ------------------------------------------------------------------------ */

/** `model_type` of the config ("" when absent). Borrowed. */
KVSHARD_EXPORT const char *kvshard_model_type(const kvshard_model *model);
/** L: the decoder layers, without draft layers. */
KVSHARD_EXPORT uint32_t kvshard_model_num_layers(const kvshard_model *model);
/** Draft (MTP) layers the model declares (counted in memory only with
 *  num_speculative_tokens > 0). */
KVSHARD_EXPORT uint32_t kvshard_model_num_draft_layers(const kvshard_model *model);
/** Attention type of the KV layers. */
KVSHARD_EXPORT kvshard_attention kvshard_model_attention(const kvshard_model *model);
/** Number of decoder layers of one kind. */
KVSHARD_EXPORT uint32_t kvshard_model_count(const kvshard_model *model,
                                            kvshard_layer_kind kind);
/** Kind of decoder layer `layer`: KVSHARD_OK, or KVSHARD_ELAYER when out of range. */
KVSHARD_EXPORT int kvshard_model_layer_kind(kvshard_layer_kind *out,
                                            const kvshard_model *model, uint32_t layer);
/** State kind of the linear and hybrid layers (KVSHARD_STATE_NONE without any). */
KVSHARD_EXPORT kvshard_state_kind kvshard_model_state_kind(const kvshard_model *model);
/** The state dtype the model asks for (its own keys, else its kind's default),
 *  before any state_dtype option; KVSHARD_DTYPE_AUTO when it has no state or
 *  no temporal state (short convolution). */
KVSHARD_EXPORT kvshard_dtype kvshard_model_state_dtype(const kvshard_model *model);

/* ------------------------------------------------------------------------ */
/** ## Names and tables */
/* ------------------------------------------------------------------------ */

/** "full_attention", "linear_attention", "sliding_attention", "hybrid",
 *  "no_cache", "compressed", "shared_kv", "chunked_attention"; "unknown" for
 *  other values. Static storage. */
KVSHARD_EXPORT const char *kvshard_layer_kind_name(kvshard_layer_kind kind);
/** "gqa", "mla", "compressed"; "unknown" for other values. */
KVSHARD_EXPORT const char *kvshard_attention_name(kvshard_attention attention);
/** "gdn", "kda", "lightning", "mamba1", "mamba2", "short_conv"; "none" for
 *  KVSHARD_STATE_NONE; "unknown" for other values. */
KVSHARD_EXPORT const char *kvshard_state_kind_name(kvshard_state_kind kind);
/** "auto", "bfloat16", "float16", "fp8", "float32", "int8", "fp8_e5m2"; "unknown" for
 *  other values. */
KVSHARD_EXPORT const char *kvshard_dtype_name(kvshard_dtype dtype);
/** "default", "ordinal", "global", "contiguous"; "unknown" for other values. */
KVSHARD_EXPORT const char *kvshard_ownership_name(kvshard_ownership ownership);
/** "default", "vllm", "sglang", "trtllm", "even", "explicit"; "unknown" for
 *  other values. */
KVSHARD_EXPORT const char *kvshard_pp_rule_name(kvshard_pp_rule rule);
/** "default", "vllm", "sglang", "trtllm", "xllm"; "unknown" for other
 *  values. */
KVSHARD_EXPORT const char *kvshard_rank_layout_name(kvshard_rank_layout layout);
/** "kvshard", "xllm", "vllm", "sglang"; "unknown" for other values. */
KVSHARD_EXPORT const char *kvshard_engine_name(kvshard_engine engine);

/** The type of a setting's or an option's value. */
typedef enum kvshard_setting_type {
    KVSHARD_SETTING_INTEGER = 0,  /**< a whole number in [min, max] */
    KVSHARD_SETTING_BYTES = 1,    /**< bytes: an integer or a size with a unit */
    KVSHARD_SETTING_BOOL = 2,     /**< true or false */
    KVSHARD_SETTING_WORD = 3,     /**< one of a few words */
    KVSHARD_SETTING_FRACTION = 4, /**< a decimal above 0 and at most 1 */
    KVSHARD_SETTING_TEXT = 5,     /**< text (an engine version) */
    KVSHARD_SETTING_JSON = 6,     /**< a JSON object (vLLM's --speculative-config) */
    KVSHARD_SETTING_DECIMAL = 7,  /**< a decimal above 0 and at most `max` */
    KVSHARD_SETTING_COUNTS = 8,   /**< options only: whole numbers, one a stage ("31,30") */
    KVSHARD_SETTING_SIZES = 9     /**< byte sizes, one or one a stage (non_kv_memory) */
} kvshard_setting_type;

/** What a setting takes. Start from KVSHARD_SETTING_INFO_INIT. */
typedef struct kvshard_setting_info {
    size_t size;
    const char *key;            /**< static storage */
    kvshard_setting_type type;
    uint64_t min;               /**< integers and bytes: the bounds */
    uint64_t max;
    char default_value[32];     /**< as text */
    kvshard_engine engine;      /**< the first profile that reads it */
} kvshard_setting_info;

#define KVSHARD_SETTING_INFO_INIT                                                     \
    { sizeof(kvshard_setting_info), NULL, KVSHARD_SETTING_INTEGER, 0, 0, {0},        \
      KVSHARD_ENGINE_KVSHARD }

/** How many settings there are. */
KVSHARD_EXPORT size_t kvshard_setting_count(void);
/** Setting `index` (0-based) into *out (`size` set by the caller).
 *  KVSHARD_EINVAL when out of range or the size is unknown. */
KVSHARD_EXPORT int kvshard_setting_info_at(kvshard_setting_info *out, size_t index);
/** The setting `key` into *out. KVSHARD_EUNKNOWNKEY for an unknown key,
 *  KVSHARD_EINVAL for NULL arguments or an unknown size. */
KVSHARD_EXPORT int kvshard_setting_find(kvshard_setting_info *out, const char *key);
/* ------------------------------------------------------------------------ */
/* Tables: the options and each engine's flags                               */
/* ------------------------------------------------------------------------ */

/** A word a value takes, and the value it stands for (an enum's, or a
 *  number's stand-in such as activation_reserve's "auto", -1). */
typedef struct kvshard_word {
    const char *text;
    int value;
} kvshard_word;

/** What an option (a field of kvshard_options, a deployment key) takes.
 *  Start from KVSHARD_OPTION_INFO_INIT. */
typedef struct kvshard_option_info {
    size_t size;
    const char *name;          /**< the deployment key; static storage */
    kvshard_setting_type kind;
    uint64_t min;              /**< integers and bytes: the bounds */
    uint64_t max;
    /** KVSHARD_OPTIONS_INIT's value as text; "none" when the plan settles it. */
    char default_value[32];
    /** The words it takes, ended by a NULL `text` (a word option's values,
     *  or the words a number option takes besides numbers); NULL: none.
     *  Static storage. */
    const kvshard_word *words;
    /** What a number counts ("ranks"), or how a list is written; NULL when
     *  the kind says it. Static storage. */
    const char *unit;
    /** One line: what the value is ("ranks, 1 to 65,536"). */
    char doc[128];
    const char *section;       /**< the deployment file's: "parallel" or "cache" */
    /** 0 (a word option: -1) may stand in kvshard_options: the plan
     *  settles it from the engine profile. */
    bool unset_ok;
    /** offsetof() its field in kvshard_options (a list's array; the count
     *  is the next field), so that a binding can lay the struct out from
     *  this table. KVSHARD_OPTION_NO_FIELD for an input of compare or fit
     *  (explore.h), which a deployment keeps by its key. */
    size_t offset;
} kvshard_option_info;

/** kvshard_option_info.offset of an option kvshard_options does not hold. */
#define KVSHARD_OPTION_NO_FIELD SIZE_MAX

#define KVSHARD_OPTION_INFO_INIT                                                      \
    { sizeof(kvshard_option_info), NULL, KVSHARD_SETTING_INTEGER, 0, 0, {0}, NULL,     \
      NULL, {0}, NULL, false, KVSHARD_OPTION_NO_FIELD }

/** How many options there are. */
KVSHARD_EXPORT size_t kvshard_option_count(void);
/** Option `index` (0-based, in the order of kvshard_options' fields) into
 *  *out (`size` set by the caller). KVSHARD_EINVAL when out of range or the
 *  size is unknown. */
KVSHARD_EXPORT int kvshard_option_info_at(kvshard_option_info *out, size_t index);
/** The option `name` into *out. KVSHARD_EUNKNOWNKEY for an unknown name,
 *  KVSHARD_EINVAL for NULL arguments or an unknown size. */
KVSHARD_EXPORT int kvshard_option_find(kvshard_option_info *out, const char *name);

#define KVSHARD_FLAG_NAME_MAX 64 /**< a flag's name, its NUL included */
#define KVSHARD_FLAG_ALSO_MAX 4  /**< other spellings of one flag */

/** One flag an engine's command line takes (kvshard_deployment_apply_args()
 *  under that --engine), and the engine's way with flags. Start from
 *  KVSHARD_FLAG_INFO_INIT. */
typedef struct kvshard_flag_info {
    size_t size;
    /** As the engine writes it, without dashes (argparse: '-' for '_'). */
    char name[KVSHARD_FLAG_NAME_MAX];
    /** The engine's other spellings of it ("tp" for vLLM's
     *  tensor-parallel-size), `also_count` of them. */
    char also[KVSHARD_FLAG_ALSO_MAX][KVSHARD_FLAG_NAME_MAX];
    size_t also_count;
    /** The option (kvshard_option_find()) or setting (kvshard_setting_find())
     *  it sets; static storage. */
    const char *key;
    bool is_setting;
    /** The words its value takes under this engine, NULL-ended; NULL: none. */
    const kvshard_word *words;
    /** The engine reads it. When not, the plan warns it was ignored and
     *  `reader` is the first engine (a kvshard_engine) that does, -1 none. */
    bool read;
    int reader;
    char doc[320];             /**< one line: what its value is */
    char default_value[80];    /**< under this engine, as text */
    /** The engine's command line is argparse's: one dash or two, '-' and
     *  '_' alike; else gflags'. The same in every row of one engine. */
    bool argparse;
    /** The engine has flags to run a layout with (kvshard_fit_flags()). The
     *  same in every row of one engine. */
    bool recommends_flags;
    /** `kvshard fit` reads it. When not, fit plans without it: it searches
     *  the parallel sizes and the split, and works out budgets and weights. */
    bool fit_reads;
} kvshard_flag_info;

#define KVSHARD_FLAG_INFO_INIT                                                        \
    { sizeof(kvshard_flag_info), {0}, {{0}}, 0, NULL, false, NULL, false, -1, {0}, {0}, \
      false, false, false }

/** Flag `index` (0-based) of `engine` into *out (`size` set by the caller):
 *  the options in their table's order, then the engine's settings.
 *  KVSHARD_EINVAL for an unknown engine, an index past the last flag or an
 *  unknown size. The engines are the words of the option "engine". */
KVSHARD_EXPORT int kvshard_flag_info_at(kvshard_flag_info *out, kvshard_engine engine,
                                        size_t index);


#ifdef __cplusplus
}
#endif

#endif /* KVSHARD_KVSHARD_H */
