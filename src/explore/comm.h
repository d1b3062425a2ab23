/* The price of a layerwise split: the collectives a decode step and a
 * prompt issue under the engine's mechanism, and the decode throughput a
 * memory-bandwidth floor gives with them. Read from a finished plan. */
#ifndef KVSHARD_EXPLORE_COMM_H
#define KVSHARD_EXPLORE_COMM_H

#include "deploy/options.h"
#include "kvshard/explore.h"
#include "plan/plan.h"

/* At most one of each verdict of the estimate. */
#define KVSHARD__COMM_WARNINGS 2

/* One stage's figures, or a whole replica's (stages summed). */
typedef struct kvshard__comm_traffic {
    uint64_t collectives;
    bool has_bytes;      /* the bytes need a batch (and a context, or blocks) */
    uint64_t link_bytes; /* Σ of the busiest port's bytes */
    uint64_t wire_bytes; /* Σ of what the group receives */
    bool has_time;       /* bytes and a link */
    double comm_us;
    bool overflow; /* a byte figure passed 2^64 - 1: the estimate refuses it */
} kvshard__comm_traffic;

typedef struct kvshard__comm_stage {
    kvshard__comm_traffic decode, prefill;
    bool has_base;
    uint64_t weights_bytes;
    uint64_t kv_read_bytes; /* b x K_s */
    double base_us;
    bool has_step;
    double step_us;
} kvshard__comm_stage;

typedef struct kvshard__comm {
    uint32_t split;
    kvshard__comm_mechanism decode_mechanism, prefill_mechanism; /* NONE: null */
    bool mechanism_default;
    bool owner_scatter;
    bool has_link;
    const char *link_name;
    uint64_t link_bandwidth;
    double link_latency_us;
    kvshard__alpha_rule alpha_rule;
    bool has_accelerator;
    const char *accelerator_name;
    uint64_t hbm_bandwidth;
    uint32_t activation_bytes;
    /* decode */
    bool has_batch;
    uint64_t batch;
    bool batch_given;
    uint32_t context_length; /* 0: none */
    uint64_t microbatch, tokens_per_step;
    kvshard__comm_traffic decode;
    bool has_step;
    uint32_t binding_stage;
    uint64_t weights_bytes, kv_read_bytes;
    double base_us;
    bool overlap;
    double step_us, tpot_us, throughput, throughput_total;
    bool has_unsplit;
    uint64_t unsplit_batch;
    /* The unsplit plan's capacity, beside the split plan's own: sequences
     * at once where it counts them, else blocks. */
    bool has_unsplit_capacity, unsplit_has_concurrency;
    uint64_t unsplit_concurrency, unsplit_blocks;
    double unsplit_base_us, unsplit_step_us, unsplit_throughput;
    bool has_gain;
    double throughput_gain;
    bool no_weights; /* an accelerator was given and no weights source */
    /* prefill */
    uint32_t prompt_length; /* 0: none */
    uint32_t chunk, prefix_hit;
    uint64_t chunks, history_rows;
    kvshard__comm_traffic prefill;
    /* The verdicts only the estimate can give (split_comm_dominates,
     * split_loses_throughput): the plan is made before it is priced, so
     * they travel with the estimate and writers put them after the plan's. */
    size_t warning_count;
    kvshard__warning warnings[KVSHARD__COMM_WARNINGS];
} kvshard__comm;

/* Whether plan `p` was given any comm input: only then is it priced. */
bool kvshard_comm__given(const kvshard_plan *p);

/* Whether its model is a DSA model, the one kind whose mechanisms were published. */
bool kvshard_comm__published_for(const kvshard_plan *p);

/* The estimate of plan `p` (p->comm_given) into *out, and each stage's into
 * `stages` (p->pp of them; NULL: not wanted). KVSHARD_EUNMODELED naming
 * what is not modelled yet. */
int kvshard_comm__of(kvshard__comm *out, kvshard__comm_stage *stages, const kvshard_plan *p,
                     kvshard_error *err);

/* The estimate of plan `p` as kvshard_comm__of() gives it, with `decode`
 * and `prefill` in force instead of the plan's mechanisms (the report sets
 * the mechanisms side by side). */
int kvshard_comm__of_under(kvshard__comm *out, const kvshard_plan *p,
                           kvshard__comm_mechanism decode, kvshard__comm_mechanism prefill,
                           kvshard_error *err);

/* The bytes plan rank `rank` receives in one decode step and over one
 * prompt; false where the bytes are unknown. */
void kvshard_comm__rank_received(bool *has_decode, uint64_t *decode, bool *has_prefill,
                                 uint64_t *prefill, const kvshard_plan *p, const kvshard__comm *c,
                                 uint32_t rank);

/* What ranking by throughput needs, as a command has it. */
typedef struct kvshard__rank_needs {
    bool accelerator, link, context, batch;
} kvshard__rank_needs;

/* The ranking `asked` for resolved into *out: throughput when every need is
 * met and capacity was not asked; --rank=throughput without them is
 * comm_input_missing naming every one missing. */
int kvshard_comm__rank_by(kvshard_rank_by *out, kvshard_rank_by asked,
                          const kvshard__rank_needs *has, kvshard_diag__ctx *diag);

/* The public view of estimate `c` into *e, every field of it. */
void kvshard_comm__public(kvshard_comm_estimate *e, const kvshard__comm *c);

#endif /* KVSHARD_EXPLORE_COMM_H */
