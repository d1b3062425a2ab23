/* The plan object and the calls that build it (plan.c). A plan is built in
 * order: validate (validate.h), assign owners (owners.h), compute memory and
 * capacity through the engine profile (here), collect warnings (warnings.h)
 * and digests (digest.h); queries.c answers the public queries and view.h
 * gives the writers what they read. */
#ifndef KVSHARD_PLAN_PLAN_H
#define KVSHARD_PLAN_PLAN_H

#include "deploy/options.h"
#include "deploy/settings.h"
#include "plan/memory.h"
#include "model/weights.h"
#include "plan/owners.h"
#include "plan/partition.h"
#include "plan/validate.h"

#include <stdatomic.h>

#define KVSHARD__MAX_WARNINGS 24
/* Most figures an engine profile gives (the JSON "engine" object's fields). */
#define KVSHARD__MAX_ENGINE_FIGURES 40
#define KVSHARD__WARNING_MESSAGE_MAX 240

/* Where a plan rank (stage x T + TP rank) stands: its split rank and its
 * stage's layers. kvshard_plan_owns() reads it on every call. */
typedef struct kvshard__rank_place {
    uint32_t split_rank; /* TP rank % S_eff */
    uint32_t first;      /* the stage's first layer */
    uint32_t count;      /* and its number of layers */
} kvshard__rank_place;

typedef struct kvshard__warning {
    kvshard_warning_code code;
    char message[KVSHARD__WARNING_MESSAGE_MAX];
} kvshard__warning;

/* What kvshard_plan_owns() compares: a plan rank holds a layer when the
 * layer's key is the rank's own or its stage's "every rank". With one stage
 * the layer keys are `held_by` itself (`all` is KVSHARD_OWNER_ALL); with
 * stages each key carries its stage, so a layer of another stage matches
 * neither. */
typedef struct kvshard__rank_key {
    uint32_t mine; /* stage x (S_eff + 1) + split rank */
    uint32_t all;  /* stage x (S_eff + 1) + S_eff */
} kvshard__rank_key;

/* What capacity is counted in: one budget for every rank, or one a stage
 * from the device. */
typedef struct kvshard__budgets {
    bool has;              /* false: no budget (only the figures without one) */
    uint64_t least;        /* the smallest: every rank's when `stage` is NULL */
    const uint64_t *stage; /* P budgets, or NULL */
    uint32_t stage_ranks;  /* T, the ranks of a stage */
} kvshard__budgets;

/* Where a plan's weights come from, first that applies. */
typedef enum kvshard__weights_source {
    KVSHARD__WEIGHTS_NONE,
    KVSHARD__WEIGHTS_PER_RANK,   /* weights_per_rank: given per stage */
    KVSHARD__WEIGHTS_TOTAL,      /* weights_total and weights_experts: shared by layers */
    KVSHARD__WEIGHTS_SAFETENSORS, /* the model directory's headers */
    KVSHARD__WEIGHTS_INDEX /* the index alone: its total_size, the experts given or estimated */
} kvshard__weights_source;

/* Longest first unknown tensor name a plan keeps for its outputs. */
#define KVSHARD__TENSOR_NAME_MAX 256

/* What the device inputs gave a plan, for its outputs. */
typedef struct kvshard__device_figures {
    bool used;    /* the budgets came from the device */
    bool ignored; /* device_memory was given beside memory_per_rank */
    const char *fill_given; /* the engine's own figure the weights would fill (static) */
    uint64_t device_memory;
    uint32_t utilization_ppb;
    uint64_t usable;
    uint64_t reserve;
    kvshard__weights_source source;
    bool experts_estimated;    /* index: the expert bytes are kvshard's estimate */
    kvshard__wsummary summary; /* safetensors; first_unknown points at the name below */
    char first_unknown[KVSHARD__TENSOR_NAME_MAX];
} kvshard__device_figures;

/* A plan's engine figures and, after them, the JSON text of its lists:
 * made once, then read only. */
typedef struct kvshard__engine_figures {
    size_t count;
    kvshard_figure figures[];
} kvshard__engine_figures;

struct kvshard_plan {
    /* What kvshard_plan_owns() reads on every call comes first (see
     * docs/performance.md). */
    uint32_t *hold_key;         /* per layer (held_by's own words with one stage) */
    kvshard__rank_key *keys;    /* per plan rank */
    int32_t *held_by;        /* per layer: as owner, but KVSHARD_OWNER_ALL for a layer whose
                                state every rank holds; `owner` itself when the same */
    kvshard__rank_place *place; /* per plan rank */
    uint32_t tp;             /* T */
    uint32_t split;          /* S_eff */
    uint32_t pp;             /* P */
    uint32_t ranks_count;    /* P x T plan ranks; P x figure_stride in fit's figures */
    /* fit's figures (kvshard_plan__figures): ranks[] holds per stage only
     * the TP ranks whose figures can differ, figure_stride a stage (the
     * last repeated to fill it), figure_ranks[i] the TP rank in its stage of
     * ranks[i]; no per-layer owners and no digests. 0 and NULL in a plan. */
    uint32_t figure_stride;
    uint32_t *figure_ranks;
    kvshard__model_info model;
    int32_t *owner; /* split rank, KVSHARD_OWNER_ALL or KVSHARD_OWNER_NONE per layer */
    uint8_t *kinds;    /* kvshard_layer_kind per decoder layer */
    uint8_t *class_of; /* per decoder layer: its cache class in model.classes */
    uint8_t *draft_class; /* per draft layer: its class; NULL without draft layers */
    int32_t *kv_source; /* per decoder layer: the layer whose cache it reads, or -1; NULL
                           when no layer reads another's */
    kvshard_allocator alloc;
    char *model_type;
    char *source;            /* the model's source */
    uint32_t *kv_slot;       /* per layer: position in its owner's KV list, or UINT32_MAX */
    uint32_t *state_slot;    /* per layer: position among the state layers, or UINT32_MAX */
    kvshard_options options; /* settled; its settings are resolved into `inputs` */
    const kvshard__profile *profile;
    kvshard_value inputs[KVSHARD__MAX_PROFILE_INPUTS]; /* the profile's inputs */
    uint32_t replication;    /* R */
    kvshard_dtype state_dtype;
    kvshard__range layers;            /* every layer of the model */
    kvshard__range *stages;           /* P ranges: the layers of each stage */
    uint32_t *stage_counts;           /* P: their layer counts, which an explicit
                                         options.pp_partition points at */
    /* Per stage, per split rank (stage x (S_eff + 1) + split rank): offsets
     * into owned_layers, which holds each stage's KV layers grouped by owning
     * split rank. */
    uint32_t *owned_offsets;
    uint32_t *owned_layers;
    uint32_t *owned_counts;           /* P x S_eff: KV layers each split rank of a stage owns */
    uint32_t *owned_by_class;         /* P x S_eff rows of model.num_classes: the same by class */
    kvshard_rank_memory *ranks;       /* per plan rank */
    kvshard_rank_memory *unsplit_ranks; /* per plan rank with one split rank owning every KV
                                           layer, counted into unsplit_cap; NULL at S_eff 1
                                           and in fit's figures */
    kvshard__capacity unsplit_cap; /* the same plan at S_eff = 1 counted, when unsplit_counted */
    bool unsplit_counted;
    uint64_t state_per_layer;         /* one linear or hybrid layer's state per sequence */
    uint64_t unsplit_bytes_per_block; /* all KV layers stored unsplit, no draft */
    bool has_memory;
    uint64_t memory; /* the budget capacity is counted in (the smallest) */
    kvshard__budgets budgets; /* the same, and each stage's from the device */
    uint64_t *stage_weights;  /* P: a stage's weights per rank, with the device */
    uint64_t *stage_budgets;  /* P: its budget, with the device */
    uint64_t *fill_stages;    /* P: the device fill's input a stage, where it wrote them; or NULL */
    kvshard__device_figures device;
    kvshard__capacity cap;
    kvshard_uniform uniform;
    kvshard_profile__state state; /* the profile's, from settling: its figures' source */
    /* The engine profile's figures, worked out the first time they are
     * read (kvshard_queries__engine_figures), so that a plan no one asks pays
     * nothing for them; NULL until then. */
    _Atomic(struct kvshard__engine_figures *) engine_figures;
    char *input_texts; /* the text inputs' bytes, each whole and NUL-ended, in the plan's block */
    /* The communication estimate's inputs, given beside a deployment: the
     * estimate is made only when some were (comm_given), from this plan and,
     * with comm_reference, the same plan at S_eff = 1 it compares against
     * (unsplit_cap; fit compares rows instead). */
    bool comm_given;
    bool comm_reference;
    kvshard__comm_inputs comm;
    uint32_t query_heads;
    kvshard__warning warnings[KVSHARD__MAX_WARNINGS];
    size_t warning_count;
    uint64_t digest;
    uint64_t layout_digest;
};

/* The KV layers plan rank `r` stores, in layer order, and how many. */
static inline const uint32_t *kvshard__plan_owned(const kvshard_plan *p, uint32_t r,
                                                  uint32_t *count)
{
    uint32_t stage = r / p->tp, k = p->place[r].split_rank;
    *count = p->owned_counts[(size_t)stage * p->split + k];
    return p->owned_layers + p->owned_offsets[(size_t)stage * (p->split + 1) + k];
}

/* The draft layers a plan counts, on its last stage: the model's when
 * speculation is on and the profile counts them, else none. */
static inline uint32_t kvshard__counted_drafts(const kvshard__model_info *m,
                                               const kvshard_options *o,
                                               const kvshard__profile *profile)
{
    return o->num_speculative_tokens > 0 && profile->counting.counts_draft_layers
               ? m->num_draft_layers
               : 0;
}

/* The stage of decoder layer `layer`: a search over the stages' ranges. */
static inline uint32_t kvshard__plan_stage_of(const kvshard_plan *p, uint32_t layer)
{
    uint32_t lo = 0, hi = p->pp - 1;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (p->stages[mid].first <= layer)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* kvshard__plan_stage_of() for layers asked in increasing order, without
 * a search: the next stage begins at `next_first`. */
typedef struct kvshard__stage_walk {
    const kvshard_plan *plan;
    uint32_t stage, next_first;
} kvshard__stage_walk;

/* The first layer of the stage after `stage`; none past the last. */
static inline uint32_t kvshard__stage_walk_next_first(const kvshard_plan *p, uint32_t stage)
{
    return stage + 1 < p->pp ? p->stages[stage + 1].first : UINT32_MAX;
}

static inline kvshard__stage_walk kvshard__stage_walk_begin(const kvshard_plan *p)
{
    return (kvshard__stage_walk){p, 0, kvshard__stage_walk_next_first(p, 0)};
}

/* The stage of `layer`, at or past the layer asked before. */
static inline uint32_t kvshard__stage_walk_to(kvshard__stage_walk *w, uint32_t layer)
{
    while (layer >= w->next_first)
        w->next_first = kvshard__stage_walk_next_first(w->plan, ++w->stage);
    return w->stage;
}

/* kvshard_plan_create, naming in `diag` the option or setting an error is
 * about. */
int kvshard_plan__create(kvshard_plan **out, const kvshard_model *model,
                         const kvshard_options *options, const kvshard_allocator *allocator,
                         kvshard_diag__ctx *diag);

struct kvshard__device;
/* The same with the device inputs already read (`device`, whose weights
 * many plans share), or NULL to read them. */
int kvshard_plan__create_with(kvshard_plan **out, const kvshard_model *model,
                              const kvshard_options *options, const kvshard_allocator *allocator,
                              const struct kvshard__device *device, kvshard_diag__ctx *diag);
/* The same for fit's rows, which read a plan's figures only (its budgets,
 * capacity, binding stage, ranks' budgets and state, warnings): when every
 * rank holds the same heads, ranks that repeat a split rank's figures are
 * not planned, nor are per-layer owners or digests. The figures are those
 * of the full plan; the plan answers no query about layers or ranks. */
int kvshard_plan__figures(kvshard_plan **out, const kvshard_model *model,
                          const kvshard_options *options, const kvshard_allocator *allocator,
                          const struct kvshard__device *device, kvshard_diag__ctx *diag);

/* The inputs of the memory functions for this plan. */
kvshard__memory_inputs kvshard_plan__memory_inputs(const kvshard_plan *plan);

/* The capacity's generic figures, as kvshard_plan_blocks_for() returns
 * them: the one conversion from the internal figures to public ones. */
kvshard_blocks kvshard_plan__blocks_of(const kvshard__capacity *c);

/* The capacity inputs of a planning call over `tp` plan ranks at budgets
 * `b`. */
kvshard__capacity_inputs kvshard_plan__capacity_inputs_of(const kvshard__planning *pl,
                                                     const kvshard_rank_memory *ranks, uint32_t tp,
                                                     uint32_t split, uint64_t unsplit,
                                                     const kvshard__budgets *b);

/* The figures of a plan at S_eff = 1 from its T ranks' figures (worked out
 * with every KV layer owned): the largest bytes per token and per block and,
 * with a memory figure, the blocks every rank fits, 0 when the unsplit plan
 * fits none where a split one may. */
kvshard_uniform kvshard_plan__uniform_of(const kvshard_rank_memory *ranks, uint32_t tp,
                                    const kvshard__planning *pl, uint64_t unsplit_bytes_per_block,
                                    const kvshard__budgets *b);

#endif /* KVSHARD_PLAN_PLAN_H */
