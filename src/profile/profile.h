/* The engine profile interface. A profile is whose capacity model sizes a
 * plan's blocks and state: kvshard's own, or an engine's, predicted from
 * that engine's own rules so the figures match its start-up log. Each
 * profile is one file that fills one kvshard__profile (its defaults, its
 * inputs, what it refuses, how it turns a budget into blocks and state
 * slots, and its wording); profiles.c lists them. The planner and the
 * writers call a profile through this struct and never ask which one they
 * hold. */
#ifndef KVSHARD_PROFILE_PROFILE_H
#define KVSHARD_PROFILE_PROFILE_H

#include "base/format.h"
#include "model/model.h"
#include "text/value.h"

/* An input only some profiles read: a deployment key under cache: and a
 * flag of the same name. */
typedef struct kvshard_profile__input {
    kvshard_value__def def;
    kvshard_value fallback; /* its value when nothing sets it */
} kvshard_profile__input;

/* An engine's own flag name for one of kvshard's options. */
typedef struct kvshard_profile__alias {
    const char *flag;
    const char *option;
} kvshard_profile__alias;

/* What a profile's checks and budget see: the model's figures, the settled
 * options, its inputs (in its table's order) and the plan's sizes. */
typedef struct kvshard_profile__ctx {
    const kvshard__model_info *model;
    const kvshard_options *options;
    const kvshard_value *inputs;
    uint32_t tp;          /* T */
    uint32_t split;       /* S_eff */
    uint32_t replication; /* R */
} kvshard_profile__ctx;

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
} kvshard__capacity;

/* What a capacity computation sees: numbers only. */
typedef struct kvshard__capacity_inputs {
    const kvshard_options *options;   /* settled */
    const kvshard_value *inputs;      /* the profile's inputs */
    const kvshard_rank_memory *ranks; /* T entries: bytes per block and per sequence */
    uint32_t tp;
    uint32_t split; /* S_eff */
    /* The bytes per block of all KV layers stored unsplit, no draft. */
    uint64_t unsplit_bytes_per_block;
    uint64_t memory;          /* the budget capacity is counted in */
    uint64_t extra_per_block; /* bytes the engine adds to every block */
    uint32_t context_length;  /* 0: no concurrency figures */
    uint32_t rank;            /* one TP rank, or KVSHARD_ALL_RANKS */
} kvshard__capacity_inputs;

/* What a profile's wording reads. */
typedef struct kvshard_profile__view {
    const kvshard_options *options; /* settled */
    const kvshard__capacity *capacity;
    bool has_memory;
    uint64_t memory; /* the budget capacity is counted in */
    uint64_t state_bytes_per_seq; /* of TP rank 0 */
} kvshard_profile__view;

typedef struct kvshard__profile {
    const char *name; /* cache.engine, JSON capacity.engine */
    kvshard_engine engine;

    /* Defaults for what the options leave unset. */
    uint32_t block_size;
    uint32_t max_seqs;
    kvshard_ownership ownership;

    /* The engine's flag names for kvshard's options, and the inputs only
     * this profile reads; both NULL-ended (an input by a NULL def.name). */
    const kvshard_profile__alias *aliases;
    const kvshard_profile__input *inputs;

    /* Whether draft layers' KV is counted (an engine that runs its draft
     * model as an engine of its own counts none). */
    bool counts_draft_layers;
    /* Whether MLA latents and DSA index keys keep the second version's sizes
     * (an engine whose own layout they are), not the mainstream engines'. */
    bool mla_v2_bytes;
    /* Whether compare ranks rows by balanced max_seqs at a context length
     * (else by blocks). */
    bool ranks_by_balanced;

    /* What it refuses: KVSHARD_EPROFILE (or another code) naming the
     * option in *blame. NULL: nothing. */
    int (*check)(const kvshard_profile__ctx *c, const char **blame, kvshard_error *err);
    /* The memory capacity is counted in, *has false when the options give
     * none. */
    int (*budget)(uint64_t *out, bool *has, const kvshard_profile__ctx *c, const char **blame,
                  kvshard_error *err);
    /* Blocks, state slots and concurrency from a budget; each rank's own
     * block count into `rank_blocks` when given (a rank without one keeps
     * the UINT64_MAX it holds). An error about one of the profile's inputs
     * names it in *blame. */
    int (*capacity)(kvshard__capacity *out, uint64_t *rank_blocks,
                    const kvshard__capacity_inputs *in, const char **blame, kvshard_error *err);

    /* Wording. The budget's name in headers ("memory_per_rank"); whether
     * headers name the profile; what to give for blocks when there is no
     * budget (`backquoted` parts are flags). */
    const char *budget_label;
    bool named_in_headers;
    const char *no_budget_hint;
    /* The capacity line(s) of the text plan, each starting "capacity   "
     * or 11 spaces and ending with a newline. */
    void (*write_capacity)(const kvshard__printer *p, const kvshard_profile__view *v);
    /* The report's capacity rows before the common ones, and after them
     * (`tail`). */
    void (*report_rows)(const kvshard__printer *p, const kvshard_profile__view *v, bool tail);
    /* The max_seqs_unreachable message when the profile has its own (the
     * engine's bounds differ from max_seqs); NULL: the common one. */
    void (*unreachable)(char *buf, size_t cap, const kvshard_profile__view *v);

    /* The engine's rule for cutting decoder layers into pipeline stages:
     * `stages` counts into `counts`. NULL: kvshard's default rule. */
    int (*partition)(uint32_t *counts, uint32_t layers, uint32_t stages, kvshard_error *err);
} kvshard__profile;

/* ---- helpers every capacity computation shares (capacity.c) ---------------- */

/* Ranks a computation looks at: all of them, or the one asked for. */
uint32_t kvshard_capacity__first_rank(const kvshard__capacity_inputs *in);
uint32_t kvshard_capacity__end_rank(const kvshard__capacity_inputs *in);

/* A rank's bytes per block with the engine's extra bytes; UINT64_MAX past
 * 64 bits (no block can then fit), 0 when the rank stores no KV. */
uint64_t kvshard_capacity__block_bytes(const kvshard_rank_memory *r, uint64_t extra);

/* Ranks with the same bytes per block and state per sequence fit the same
 * blocks; most ranks have the figures of the rank before. */
bool kvshard_capacity__same_figures(const kvshard_rank_memory *a, const kvshard_rank_memory *b);

/* The first layer kind the model has layers of outside `planned` (a mask
 * of 1 << kind), KVSHARD__KIND_COUNT when there is none: for a profile's
 * refusal by name. */
uint8_t kvshard_profile__unplanned_kind(const kvshard__model_info *m, uint32_t planned);

/* Whether some layer keeps a GQA sparse index key. */
bool kvshard_profile__has_sparse_index(const kvshard__model_info *m);

/* The bytes a rank reserves per sequence: its state and, while split, the
 * scratch window and state of the largest KV layer; UINT64_MAX past 64 bits. */
uint64_t kvshard_capacity__seq_bytes(const kvshard_rank_memory *r);

/* max_tokens = num_blocks x block_size, or EOVERFLOW. */
int kvshard_capacity__max_tokens(kvshard__capacity *c, const kvshard_options *o,
                                 kvshard_error *err);

#endif /* KVSHARD_PROFILE_PROFILE_H */
