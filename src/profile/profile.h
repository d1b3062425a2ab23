/* The engine profile interface. A profile is whose capacity model sizes a
 * plan's blocks and state: kvshard's own, or an engine's, predicted from
 * that engine's own rules so the figures match its start-up log. Each
 * profile is one file that fills one kvshard__profile, in groups: its
 * defaults, its refusal of stages, its device inputs, its flag dialect, its
 * versions, what it counts, its capacity hooks (settling its inputs into
 * kvshard's options and its state, refusals, the budget, blocks and state
 * slots, the figures the engine logs, its warnings), its wording, and its
 * engine's stage and rank rules; profiles.c lists them. The planner and the
 * writers call a profile through this struct and never ask which one they
 * hold. */
#ifndef KVSHARD_PROFILE_PROFILE_H
#define KVSHARD_PROFILE_PROFILE_H

#include "base/checked.h"
#include "base/diag.h"
#include "base/format.h"
#include "model/model.h"
#include "profile/sglang.h"
#include "profile/trtllm.h"
#include "profile/versions.h"
#include "profile/vllm.h"
#include "profile/xllm.h"
#include "text/value.h"

/* An input only some profiles read: a deployment key under cache: and a
 * flag of the same name. */
typedef struct kvshard_profile__input {
    kvshard_value__def def;
    kvshard_value fallback; /* its value when nothing sets it */
    /* The default as kvshard_setting_info() shows it when the profile works
     * it out (by version, by model); NULL: the fallback's text. */
    const char *default_text;
} kvshard_profile__input;

/* An engine's own flag name for one of kvshard's keys (an option, or an
 * input of this profile), with the engine's words for its values (NULL:
 * the key's own). */
typedef struct kvshard_profile__alias {
    const char *flag;
    const char *key;
    const kvshard_value__word *words;
} kvshard_profile__alias;

/* How the engine writes its command line. gflags: --name=value, a bare
 * --name for true and --noname for false. argparse (Python engines): also
 * --name value, one dash as well as two, '-' and '_' alike in a name,
 * --no-name for false; every spelling of one input must then agree. */
typedef enum kvshard_profile__flag_style {
    KVSHARD_PROFILE__GFLAGS,
    KVSHARD_PROFILE__ARGPARSE
} kvshard_profile__flag_style;

/* The releases a profile predicts: the default is the newest it covers. */
typedef struct kvshard_profile__versions {
    const char *fallback; /* text of the default version */
    kvshard_versions__v oldest;
    kvshard_versions__v newest;
} kvshard_profile__versions;

/* What a profile works out once per planning call and reads again for
 * every capacity, figure and line: each profile's own struct, declared in
 * its header. The plan embeds it and hands the hooks a pointer; a profile
 * reads only its own member. */
typedef union kvshard_profile__state {
    kvshard_xllm__state xllm;
    kvshard_vllm__state vllm;
    kvshard_sglang__state sglang;
    kvshard_trtllm__state trtllm;
} kvshard_profile__state;

/* What settling sees: the options as given (0 and DEFAULT for unset), the
 * options with the profile's defaults (which it may change), its inputs
 * (in its table's order), the model and the profile's state to fill. */
typedef struct kvshard_profile__settling {
    const kvshard_options *given;
    kvshard_options *options;
    kvshard_value *inputs;
    const kvshard__model_info *model;
    const char *model_type; /* "" when the config has none */
    kvshard_profile__state *state;
    const uint8_t *kinds; /* kvshard_layer_kind per decoder layer */
} kvshard_profile__settling;

/* What a profile's checks and budget see: the model's figures, the settled
 * options, its inputs (in its table's order), its state and the plan's
 * sizes. */
typedef struct kvshard_profile__ctx {
    const kvshard__model_info *model;
    const kvshard_options *options;
    const kvshard_value *inputs;
    uint32_t tp;          /* T */
    uint32_t split;       /* S_eff */
    uint32_t replication; /* R */
    const kvshard_profile__state *state;
    /* The device fill input's size on each stage (P entries), as the fill
     * wrote them; NULL: the input as given (kvshard_profile__stage_size). */
    const uint64_t *fill_stages;
} kvshard_profile__ctx;

/* Numbers a profile's capacity keeps for its own lines and warnings. */
#define KVSHARD_PROFILE__NOTES 6

/* The capacity of a plan, as every profile reports it; fields a profile
 * does not give stay unset (JSON null). */
typedef struct kvshard__capacity {
    bool has_num_blocks;
    uint64_t num_blocks;
    uint64_t max_tokens;
    uint64_t reserved; /* bytes of state reserved per rank */
    bool has_concurrency;
    uint64_t concurrency;
    bool has_balanced_max_seqs;
    uint64_t balanced_max_seqs;
    bool has_budget; /* the engine's budget, reported as such */
    uint64_t budget;
    bool has_state_slots;
    uint64_t state_slots;
    uint64_t usable_state_slots;
    bool has_usable_blocks; /* blocks the engine can use after its padding */
    uint64_t usable_blocks;
    /* The engine's own request limit where it is not max_seqs (SGLang's
     * max_running_requests). */
    bool has_max_seqs;
    uint64_t max_seqs;
    /* The engine's bytes per block, the same on every rank, where they are
     * not the planner's (vLLM's page times its group size). */
    bool has_bytes_per_block;
    uint64_t bytes_per_block;
    uint64_t notes[KVSHARD_PROFILE__NOTES];
    /* The first plan rank whose blocks are the common count (the plan works
     * it out from every rank's count). */
    bool has_binding;
    uint32_t binding_rank;
} kvshard__capacity;

/* What a capacity computation sees: numbers only. */
typedef struct kvshard__capacity_inputs {
    const kvshard_options *options;   /* settled */
    const kvshard_value *inputs;      /* the profile's inputs */
    const kvshard_rank_memory *ranks; /* `num_ranks` entries: bytes per block and per sequence */
    uint32_t num_ranks;   /* P x T plan ranks */
    uint32_t stage_ranks; /* T, the ranks of one stage, to name a rank by its stage */
    uint32_t split; /* S_eff */
    /* The bytes per block of all KV layers stored unsplit, no draft. */
    uint64_t unsplit_bytes_per_block;
    uint64_t memory;          /* the budget capacity is counted in */
    /* Each stage's own budget (P entries), from the device; NULL: `memory`
     * on every rank. */
    const uint64_t *stage_memory;
    uint64_t extra_per_block; /* bytes the engine adds to every block */
    uint32_t context_length;  /* 0: no concurrency figures */
    uint32_t rank;            /* one TP rank, or KVSHARD_ALL_RANKS */
    const kvshard_profile__state *state;
    bool has_memory; /* false: no budget (only for sizes_without_budget) */
    /* `memory` is the budget the profile's own budget gave (a profile that
     * works it out in floating point may use its exact figure). */
    bool own_budget;
    /* The layers of each pipeline stage (num_stages ranges); NULL: one
     * stage of every layer. */
    const kvshard__range *stages;
    uint32_t num_stages;
    /* Where a profile whose bytes per block differ by stage writes each
     * rank's (num_ranks entries, 0 where it writes none); NULL: not asked. */
    uint64_t *rank_bytes_per_block;
    const uint64_t *fill_stages; /* as kvshard_profile__ctx's */
} kvshard__capacity_inputs;

/* What a profile's wording and figures read. */
typedef struct kvshard_profile__view {
    const kvshard_options *options; /* settled */
    const kvshard__capacity *capacity;
    bool has_memory;
    uint64_t memory;              /* the budget capacity is counted in */
    uint64_t state_bytes_per_seq; /* of TP rank 0 */
    const kvshard_value *inputs;
    const kvshard_profile__state *state;
    const char *version; /* the engine version as given, else the default; NULL: none */
    /* The layers of each pipeline stage (num_stages ranges) and, from the
     * device, each stage's budget; NULL: one stage, and `memory` on all. */
    const kvshard__range *stages;
    uint32_t num_stages;
    const uint64_t *stage_memory;
    /* With stage budgets: the binding rank's figures (its budget and bytes
     * per block) and its stage, so that the blocks are told beside the
     * budget they come from; NULL when one budget holds on every rank. */
    const kvshard_rank_memory *binding;
    uint32_t binding_stage;
    const uint64_t *fill_stages; /* as kvshard_profile__ctx's */
    /* What the per-sequence bytes keep, as a noun ("state", "windows", "state
     * and windows": kvshard_kinds__seq_noun); NULL: "state". */
    const char *seq_noun;
} kvshard_profile__view;

/* Where a profile's warnings go. */
typedef void (*kvshard_profile__warn_fn)(void *ctx, kvshard_warning_code code,
                                         const char *message);

/* A layout kvshard fit recommends, for the profiles' flags. */
typedef struct kvshard_profile__layout {
    uint32_t world_size, tp, pp, dp, split;
    const char *ownership;         /* the rule's word, when split > 1 */
    const uint32_t *pp_partition;  /* pp counts */
    bool expert_parallel;
    const char *utilization;       /* the share of device memory, shortest: "1" */
    kvshard_dtype kv_cache_dtype;  /* an fp8 one is named in the engine's word */
    bool drafts;                   /* draft layers are counted */
    uint32_t context_length;       /* 0: none */
    uint64_t seqs_per_replica;     /* with a context length */
    /* Under fit --engine: the fraction the engine runs with, which its line
     * states (NULL otherwise), and the state slots of every replica it is
     * told (0: none). */
    const char *engine_fraction;
    uint64_t state_slots;
} kvshard_profile__layout;

/* A coordinate of a global rank. */
typedef enum kvshard_profile__coord {
    KVSHARD_PROFILE__DP,
    KVSHARD_PROFILE__PP,
    KVSHARD_PROFILE__CP,
    KVSHARD_PROFILE__TP
} kvshard_profile__coord;

/* An engine's rules that hold whatever its capacity: how it cuts the
 * decoder layers into pipeline stages, and how it numbers its global ranks.
 * A profile carries its engine's (rules.c lists the engines without one). */
typedef struct kvshard_profile__rules {
    /* The pp_partition_rule of the engine's cut; DEFAULT: it has none. */
    kvshard_pp_rule pp_rule;
    /* The cut: `layers` decoder layers into `stages` counts (1 <= stages
     * <= layers), `counts` untouched on failure. */
    int (*partition)(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err);
    /* The engine's words when it refuses pipeline stages together with
     * draft layers, for the pp_draft_refused warning; NULL: it runs them. */
    const char *refuses_drafts;
    /* The rank_layout of the engine's numbering; DEFAULT: it has none. */
    kvshard_rank_layout rank_layout;
    /* The numbering's coordinates, outermost first, and whether stages are
     * one of them (an engine without stages lays out P = 1 alone). */
    kvshard_profile__coord order[4];
    bool numbers_stages;
} kvshard_profile__rules;

/* Defaults for what the options leave unset. */
typedef struct kvshard_profile__defaults {
    uint32_t block_size;
    uint32_t max_seqs;
    kvshard_ownership ownership;
    /* The engine runs that ownership rule alone: compare recommends no
     * other. */
    bool runs_its_ownership_only;
    kvshard_pp_rule pp_rule;         /* how stages are cut */
    kvshard_rank_layout rank_layout; /* how the engine numbers its ranks */
} kvshard_profile__defaults;

/* How an engine moves a split layer to the attention that needs it, per
 * forward pass; NONE for an engine without a layerwise split. */
typedef enum kvshard__comm_mechanism {
    KVSHARD__COMM_NONE,
    KVSHARD__COMM_OWNER_ATTENTION, /* the owner attends for its group: queries and outputs move */
    KVSHARD__COMM_SELECTED_KV,     /* the owner sends the top-k rows each query selects */
    KVSHARD__COMM_HISTORY_ROWS,    /* the owner sends the cached rows the step attends over */
    KVSHARD__COMM_FULL_LAYER       /* the owner sends the layer's whole buffer */
} kvshard__comm_mechanism;

/* The mechanisms the engine uses for a split layer in decode and prefill:
 * what kvshard prices when the deployment names none. */
typedef struct kvshard_profile__comm {
    kvshard__comm_mechanism decode;
    kvshard__comm_mechanism prefill;
} kvshard_profile__comm;

/* A profile that does not model pipeline stages: the name of its refusal of
 * pp_size above 1, why in words, and the engine's flag for the stages
 * (NULL: the engine has none, and pp_size is named); `refusal` NULL when it
 * does model them. */
typedef struct kvshard_profile__stages {
    const char *refusal;
    const char *why;
    const char *flag;
} kvshard_profile__stages;

/* Device inputs: the utilization (in billionths) a profile whose budget
 * comes from device_memory uses by default; 0 for a profile whose budget is
 * its engine's formula. Such a profile names the inputs device_memory and
 * memory_utilization are the same as, and the one the weights fill when not
 * given: non_kv_memory (a rank's weights and the reserve) or, with
 * fill_free, device_memory_free (the device less them); the reserve
 * defaults to kvshard's with reserve_auto, else to 0. A fill input of
 * one size or one a stage (KVSHARD__VT_SIZES) takes P sizes with stages:
 * with stage_budgets each stage's budget comes from its own size, else the
 * profile's budget hook sees the whole list (fill_stages of its ctx, or the
 * input's text; kvshard_profile__stage_size) and the largest in `u`. */
typedef struct kvshard_profile__device {
    uint32_t utilization_ppb;
    const char *total_input;
    const char *utilization_input;
    const char *fill_input;
    bool fill_free;
    bool reserve_auto;
    bool stage_budgets;
} kvshard_profile__device;

/* The engine's command line, read and written. */
typedef struct kvshard_profile__dialect {
    /* The engine's flag names for kvshard's keys, and the inputs only this
     * profile reads; both NULL-ended (an input by a NULL def.name). */
    const kvshard_profile__alias *aliases;
    const kvshard_profile__input *inputs;
    kvshard_profile__flag_style flag_style;
    /* kvshard options the profile does not read (NULL-ended; NULL: none): a
     * value other than the default is named in profile_inputs_ignored. */
    const char *const *ignored_options;
    /* The engine's flags (env false) or environment (env true) that run a
     * layout fit found, into buf like snprintf; the length, or
     * KVSHARD_EUNSUPPORTED when the engine cannot run it. NULL: the profile
     * recommends nothing. */
    int (*recommend)(char *buf, size_t cap, const kvshard_profile__layout *l, bool env);
    /* The environment variable that takes the stages' layer counts ("31,30");
     * NULL: none. */
    const char *partition_env;
    /* The input that names a file of the engine's own options (YAML), read
     * when it is given: a nested mapping's keys by their dotted names, each
     * read as the flag of that name, where no flag gives its input. The
     * keys it reads, those the engine reads that change nothing kvshard
     * figures (skipped), and those that change the cache in a way the
     * profile does not model (refused); NULL-ended. Another key is refused
     * as unknown. NULL: no such file. */
    const char *options_file;
    const char *const *options_file_keys;
    const char *const *options_file_skipped;
    const char *const *options_file_unmodelled;
} kvshard_profile__dialect;

/* What the profile counts, and how compare sorts by it. */
typedef struct kvshard_profile__counting {
    /* Whether draft layers' KV is counted (an engine that runs its draft
     * model as an engine of its own counts none). */
    bool counts_draft_layers;
    /* Whether MLA latents and DSA index keys keep the second version's sizes
     * (an engine whose own layout they are), not the mainstream engines'. */
    bool mla_v2_bytes;
    /* Whether compare ranks rows by balanced max_seqs at a context length
     * (else by blocks). */
    bool ranks_by_balanced;
    /* Whether capacity is also called without a budget, for the figures
     * that do not depend on one (the engine's block and its bytes). */
    bool sizes_without_budget;
    /* Whether the budget reserves the state of max_seqs sequences, so a
     * rank allocates max_seqs state rows (else the capacity's state slots
     * are its rows, where it has any). */
    bool reserves_max_seqs_state;
} kvshard_profile__counting;

struct kvshard_profile__figures;

/* The capacity model: settling, refusals, the budget, capacity, and the
 * figures and warnings the engine logs. */
typedef struct kvshard_profile__hooks {
    /* Settle the profile's inputs into kvshard's options and work out its
     * state, before the options are validated: the version, what the
     * engine covers, the engine's spellings of kvshard's keys that are not
     * plain aliases. An error names the option or input in `diag`. NULL:
     * nothing to settle. */
    int (*settle)(kvshard_profile__settling *s, kvshard_diag__ctx *diag);
    /* What it refuses: KVSHARD_EPROFILE (or another code) naming the
     * option in `diag`. NULL: nothing. */
    int (*check)(const kvshard_profile__ctx *c, kvshard_diag__ctx *diag);
    /* The memory capacity is counted in, *has false when the options give
     * none. */
    int (*budget)(uint64_t *out, bool *has, const kvshard_profile__ctx *c, kvshard_diag__ctx *diag);
    /* Blocks, state slots and concurrency from a budget; each rank's own
     * block count into `rank_blocks` when given (a rank without one keeps
     * the UINT64_MAX it holds). An error about one of the profile's inputs
     * names it in `diag`. */
    int (*capacity)(kvshard__capacity *out, uint64_t *rank_blocks,
                    const kvshard__capacity_inputs *in, kvshard_diag__ctx *diag);
    /* The figures the engine logs, in the order of the JSON "engine"
     * object after its name and version, appended to `f` (capacity.h).
     * NULL: the profile predicts no engine (JSON null). */
    void (*figures)(struct kvshard_profile__figures *f, const kvshard_profile__view *v);
    /* The profile's own warnings, after the common ones. NULL: none. */
    void (*warnings)(kvshard_profile__warn_fn warn, void *ctx, const kvshard_profile__view *v);
} kvshard_profile__hooks;

/* Wording. */
typedef struct kvshard_profile__voice {
    /* The budget's name in headers ("memory_per_rank"); whether headers
     * name the profile; what to give for blocks when there is no budget
     * (`backquoted` parts are flags). */
    const char *budget_label;
    bool named_in_headers;
    const char *no_budget_hint;
    /* The capacity line(s) of the text plan, each starting "capacity   "
     * or 11 spaces and ending with a newline; called with and without a
     * budget. */
    void (*write_capacity)(const kvshard__printer *p, const kvshard_profile__view *v);
    /* The report's capacity rows before the common ones, and after them
     * (`tail`); called only with a budget. */
    void (*report_rows)(const kvshard__printer *p, const kvshard_profile__view *v, bool tail);
    /* The max_seqs_unreachable message when the profile has its own (the
     * engine's bounds differ from max_seqs); NULL: the common one. */
    void (*unreachable)(char *buf, size_t cap, const kvshard_profile__view *v);
    /* Why the engine runs no layerwise split, for the note that stands for
     * the split sizes above 1 a comparison's table leaves out; NULL: the
     * profile plans them. */
    const char *no_split;
    /* For the report's bars of an engine whose KV and state share one pool
     * of blocks: the blocks the sequences at once hold at the plan's
     * context length in the groups of attention layers and in those of
     * state layers; false when the pool does not divide so (one kind of
     * group, pipeline stages, no context length). NULL: never. */
    bool (*pool_split)(uint64_t *attention, uint64_t *state, const kvshard_profile__view *v);
} kvshard_profile__voice;

/* What kvshard fit needs to rank layouts by the engine's own figures and
 * to write a launch line whose every number the profile predicts. A
 * profile without `utilization` is not fitted (fit_profile). */
typedef struct kvshard_profile__fitting {
    /* The input that takes the length the engine serves, which fit writes
     * for every row; NULL: the engine reads context_length itself. */
    const char *length_input;
    /* The memory fraction the settled engine uses (the one given, else its
     * default for the version), which the launch line states. */
    double (*utilization)(const kvshard_value *inputs, const kvshard_profile__state *state);
    /* The fraction fit assumes, writes and states when none is given, where
     * the engine's own default depends on what kvshard does not model; 0:
     * the engine's default. */
    double assumed_fraction;
    /* The boolean input that makes a layout's D replicas the engine's own
     * workers (written true when D > 1); NULL: D separate engines. */
    const char *replicas_input;
    /* The engine's own input for its TP size, which fit writes T into for
     * every row; NULL: it takes kvshard's. */
    const char *tp_input;
    /* A layout's D replicas are D separate instances of the engine, each
     * planned as one (the engine has no data parallelism of its own). */
    bool separate_instances;
    /* The engine's sequences are its concurrency with no request limit
     * given, and its request limit counts every replica (written D x s);
     * else they are the balanced count and the limit is a replica's. */
    bool limit_counts_replicas;
    /* The input that takes the state slots of every replica, written D x
     * the slots the first plan gave, so the replan keeps its pools; NULL:
     * none. */
    const char *state_slots_input;
    /* The engine's request limit changes its pools or caps its sequences
     * (state slots that follow it): its sequences are the largest limit m
     * whose plan at m serves m at once. */
    bool limit_sizes_pools;
    /* The inputs a launch line repeats when they are given to fit, in this
     * order, as --name=value with dashes, or underscores as the engine
     * spells them when `underscores` (NULL-ended; NULL: none); a false
     * boolean as --no-name when `false_as_no`, else --name=false. */
    const char *const *repeated;
    bool false_as_no;
    bool underscores;
} kvshard_profile__fitting;

/* What an engine's transfer verdict reads: the pair as the transfer plans
 * it (each side's sizes, split and rule; index 0 is P, 1 is D) and each side
 * planned under the engine at one version as one stage with its split off,
 * for the engine's own block, version and state. */
typedef struct kvshard_profile__pair {
    const kvshard__model_info *model;
    const char *model_type;          /* "" when the config has none */
    bool has_state, has_sliding;     /* linear or hybrid layers; sliding-window layers */
    uint32_t tp[2], pp[2], dp[2], split[2];
    kvshard_ownership ownership[2];
    uint32_t spec[2];                /* num_speculative_tokens */
    uint32_t block[2];               /* the engine's block of each side */
    const kvshard_profile__state *state[2];
} kvshard_profile__pair;

/* Most reasons and requirements one verdict gives: one per rule of the
 * largest engine table. */
#define KVSHARD_PROFILE__VERDICT_REASONS 10
#define KVSHARD_PROFILE__VERDICT_REQUIRES 2

/* An engine's verdict on a pair: a refusal's reasons (code and message, in
 * the order of the engine's rules) and the settings the pair requires. */
typedef struct kvshard_profile__verdict {
    struct {
        const char *code;
        char message[KVSHARD_ERROR_MESSAGE_MAX]; /* a refusal may quote an error */
    } reasons[KVSHARD_PROFILE__VERDICT_REASONS];
    size_t reason_count;
    const char *requires[KVSHARD_PROFILE__VERDICT_REQUIRES];
    size_t require_count;
} kvshard_profile__verdict;

typedef struct kvshard__profile {
    const char *name; /* cache.engine, JSON capacity.engine */
    kvshard_engine engine;
    kvshard_profile__defaults defaults;
    kvshard_profile__comm comm;
    kvshard_profile__stages stages;
    kvshard_profile__device device;
    kvshard_profile__dialect dialect;
    /* The releases it covers; NULL for a profile without versions. */
    const kvshard_profile__versions *versions;
    kvshard_profile__counting counting;
    kvshard_profile__hooks hooks;
    kvshard_profile__voice voice;
    /* The engine's own stage and rank rules; NULL: it has none (kvshard). */
    const kvshard_profile__rules *rules;
    kvshard_profile__fitting fitting;
    /* The engine's verdict on moving a request's cache between two plans
     * (kvshard transfer); NULL: the engine runs no such transfer. */
    void (*transfer_verdict)(kvshard_profile__verdict *out, const kvshard_profile__pair *pair);
} kvshard__profile;

#endif /* KVSHARD_PROFILE_PROFILE_H */
