/* The plan object, read by the queries and the output writers. */
#ifndef KVSHARD_PLAN_PLAN_H
#define KVSHARD_PLAN_PLAN_H

#include "plan/capacity.h"
#include "plan/memory.h"
#include "plan/owners.h"

#define KVSHARD__MAX_WARNINGS 9
#define KVSHARD__WARNING_MESSAGE_MAX 240

typedef struct kvshard__warning {
    kvshard_warning_code code;
    char message[KVSHARD__WARNING_MESSAGE_MAX];
} kvshard__warning;

struct kvshard_plan {
    /* What kvshard_plan_owns() reads on every call comes first, in one
     * cache line with the layer count at the start of `model`. */
    int32_t *held_by;        /* per layer: as owner, but KVSHARD_OWNER_ALL for a hybrid layer,
                                whose state every rank holds; `owner` itself when the same */
    uint32_t *split_rank_of; /* per TP rank: tp_rank % S_eff, so owns() needs no division */
    uint32_t tp;             /* T */
    uint32_t split;          /* S_eff */
    kvshard__model_info model;
    int32_t *owner; /* split rank, KVSHARD_OWNER_ALL or KVSHARD_OWNER_NONE per layer */
    uint8_t *kinds; /* kvshard_layer_kind per decoder layer */
    kvshard_allocator alloc;
    char *model_type;
    char *source;            /* the model's source */
    uint32_t *kv_slot;       /* per layer: position in its owner's KV list, or UINT32_MAX */
    uint32_t *state_slot;    /* per layer: position among the state layers, or UINT32_MAX */
    kvshard_options options; /* settled */
    uint32_t replication;    /* R */
    kvshard_dtype state_dtype;
    uint32_t *owned_offsets;          /* S_eff + 1 offsets into owned_layers */
    uint32_t *owned_layers;           /* KV layers, grouped by owning split rank */
    uint32_t *owned_counts;           /* S_eff entries: KV layers each split rank owns */
    kvshard_rank_memory *ranks;       /* per TP rank */
    uint64_t state_per_layer;         /* one linear or hybrid layer's state per sequence */
    uint64_t unsplit_bytes_per_block; /* all KV layers stored unsplit, no draft */
    kvshard__capacity cap;
    kvshard_capacity capacity;
    kvshard_uniform uniform;
    kvshard__warning warnings[KVSHARD__MAX_WARNINGS];
    size_t warning_count;
    uint64_t digest;
    uint64_t layout_digest;
};

/* Validate settled options against a model: T and S_eff into the outputs,
 * or the first error (EWORLD, ESPLIT, ESPLITCP, EKVHEADS, ELINEARHEADS,
 * EPROFILE, ELIMIT), with *blame set to the option it is about when its
 * code alone does not tell (a kvshard__option_id). */
int kvshard__plan_validate(uint32_t *out_tp, uint32_t *out_split, const kvshard_model *model,
                           const kvshard_options *options, int *blame, kvshard_error *err);

/* The start of a plan or comparison call: reset `err` and *blame, refuse
 * missing arguments, a half-set allocator and options out of range, and
 * settle the profile's defaults into *out. */
int kvshard__begin_planning(kvshard_options *out, bool args_ok, const kvshard_options *options,
                            const kvshard_allocator *allocator, int *blame, kvshard_error *err);

/* kvshard_plan_create, telling which option an error is about: *blame is a
 * kvshard__option_id, or KVSHARD__OPT_COUNT when the kind of error decides. */
int kvshard__plan_create(kvshard_plan **out, const kvshard_model *model,
                         const kvshard_options *options, const kvshard_allocator *allocator,
                         int *blame, kvshard_error *err);

/* kvshard_comparison_create, with *blame as for kvshard__plan_create. */
int kvshard__comparison_create(kvshard_comparison **out, const kvshard_model *model,
                               const kvshard_options *options, const kvshard_allocator *allocator,
                               int *blame, kvshard_error *err);

/* What the warnings are worked out from, so that a comparison row gets the
 * same ones as its plan. */
typedef struct kvshard__warning_inputs {
    const kvshard_options *options; /* settled */
    uint32_t split;
    uint32_t replication;
    uint32_t n_kv;
    const uint32_t *owned_counts; /* `split` entries */
    const kvshard__capacity *capacity;
    uint64_t state_bytes_per_seq;
} kvshard__warning_inputs;

typedef void (*kvshard__warning_sink)(void *ctx, kvshard_warning_code code, const char *message);

/* Each warning, in code order, to `sink`. */
void kvshard__collect_warnings(const kvshard__warning_inputs *in, kvshard__warning_sink sink,
                               void *ctx);

/* The memory capacity is counted in: M for kvshard, the budget for xllm;
 * *has is false when the options give none. */
int kvshard__capacity_memory(uint64_t *out, bool *has, const kvshard_options *options,
                             kvshard_error *err);

/* The inputs of the memory functions for this plan. */
kvshard__memory_inputs kvshard__plan_memory_inputs(const kvshard_plan *plan);

#endif /* KVSHARD_PLAN_PLAN_H */
