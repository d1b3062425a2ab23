/* The fit object, read by its queries and its writers: every layout of N
 * GPUs planned from the device, ranked. */
#ifndef KVSHARD_EXPLORE_FIT_H
#define KVSHARD_EXPLORE_FIT_H

#include "kvshard/explore.h"
#include "explore/comm.h"
#include "plan/plan.h"

/* The most work one fit may try, counted before it plans anything: for each
 * plan it would make (a triple's admission, each row once, or twice at a
 * context length), the model's layers plus its stages times its split
 * ranks, which is what planning a row's figures passes over. A search past
 * it is refused (fit_limits) naming this limit: the node limits, pp_size or
 * dp_size narrow it. */
#define KVSHARD__FIT_MAX_WORK (UINT64_C(1) << 30)

/* A layout refused for another reason than memory: its status, and under
 * an engine fit the name of the profile's refusal ("" when none). */
typedef struct kvshard__refused {
    uint32_t tp, pp, dp;
    int code;
    char name[48];
} kvshard__refused;

/* The name a refusal goes by in a fit's documents. */
const char *kvshard_fit__refusal_name(const kvshard__refused *r);

/* Without --engine, an engine's line for row 1: its flags and environment
 * from that engine's own fit of row 1's layout, or the name of the reason
 * it has none ("" when it has one). */
typedef struct kvshard__engine_line {
    const kvshard__profile *profile;
    char flags[1024];
    char env[256];
    char reason[48];
} kvshard__engine_line;

#define KVSHARD__FIT_ENGINE_LINES 8

struct kvshard_fit {
    kvshard_allocator alloc;
    kvshard_options options; /* settled, as every row shares them */
    const kvshard__profile *profile;
    uint32_t gpus;
    uint32_t gpus_per_node;
    uint32_t max_tp_size;
    uint32_t max_pp_size;
    uint32_t limited_layouts; /* (T, P) pairs the node limits leave out */
    kvshard__device_figures device;
    kvshard_fit_row *rows; /* ranked: those that fit, then the others */
    size_t count;
    size_t fitting;
    uint32_t *partitions; /* the rows' pp_partition entries */
    kvshard__refused *refused;
    size_t refused_count;
    char *model_source; /* the model's file, for the command line the text gives */
    kvshard_dtype kv_cache_dtype; /* the engines' flag names an fp8 one */
    bool drafts;  /* draft layers are counted (some engines run no stages with them) */
    /* Ranked by an engine profile's own figures (fit --engine): the memory
     * fraction that engine uses and the version planned, which its launch
     * line states. */
    bool engine;
    double engine_utilization;
    char engine_version[40];
    uint64_t engine_state_slots; /* row 1's, in all replicas, where the engine is told them */
    char engine_repeated[1024]; /* the engine flags given that its line repeats */
    kvshard__engine_line engine_lines[KVSHARD__FIT_ENGINE_LINES];
    /* A one-layout engine fit's (an engine line's): the name of the
     * engine's memory refusal of its row, "" when none. */
    char row_refusal[48];
    size_t engine_line_count;
    kvshard_rank_by rank_by; /* capacity, or throughput (auto resolved) */
    /* Whether comm inputs were given, and as the first priced row settled
     * them (split 0: no row priced), which every row shares. */
    bool comm_given;
    kvshard__comm comm_settled;
};

/* The reason an engine has no line in a fit without --engine; NULL when it
 * has one, or when the fit does not hold a line of that engine. */
const char *kvshard_fit__engine_reason(const kvshard_fit *fit, const char *engine);

/* kvshard_fit_create, naming in `diag` the option an error is about, each
 * row priced with `comm` (NULL: no comm input given). */
int kvshard_fit__create(kvshard_fit **out, const kvshard_model *model,
                        const kvshard_options *options, const kvshard_fit_options *fit_options,
                        const kvshard_allocator *allocator, const kvshard__comm_inputs *comm,
                        kvshard_diag__ctx *diag);

/* A row as the profiles' recommend() takes it; `utilization` (at least 24
 * bytes) holds the share's text: the device's, or under an engine fit the
 * fraction that engine uses. */
kvshard_profile__layout kvshard_fit__layout(const kvshard_fit *fit, const kvshard_fit_row *row,
                                            char *utilization, size_t cap);

#endif /* KVSHARD_EXPLORE_FIT_H */
