/* The comparison object, read by its queries and its writers. */
#ifndef KVSHARD_EXPLORE_COMPARE_H
#define KVSHARD_EXPLORE_COMPARE_H

#include "kvshard/explore.h"
#include "plan/plan.h"
#include "profile/profile.h"

struct kvshard_comparison {
    kvshard_allocator alloc;
    kvshard_comparison_row *rows;
    char (*messages)[KVSHARD_ERROR_MESSAGE_MAX];
    size_t count;
    size_t recommended;
    kvshard_options options; /* the settled options the rows share */
    bool sweep_pp;           /* the rows sweep pp_size */
    const kvshard__profile *profile;
    uint32_t tp;
    bool has_memory;         /* rows count blocks */
    uint64_t memory;         /* the budget they are counted in */
    bool by_balanced;        /* rows rank by balanced_max_seqs */
    uint64_t uniform_blocks; /* the unsplit plan's blocks (0: fits none) */
    kvshard_comm_estimate *comms; /* a row each, the rows' `comm` */
    bool comm_given;              /* the rows were priced */
    kvshard_rank_by rank_by;      /* capacity or throughput, auto resolved */
};

/* The recommendation's flags, space-separated, as the text, the report and
 * the JSON give them; written like snprintf. */
int kvshard_compare__comparison_flags(char *buf, size_t cap, const kvshard_comparison *c);

/* kvshard_comparison_create, naming in `diag` what an error is about, as
 * kvshard_plan__create does; with a deployment's comm inputs (NULL: none
 * given) each row is priced. */
int kvshard_compare__comparison_create(kvshard_comparison **out, const kvshard_model *model,
                                       const kvshard_options *options,
                                       const kvshard_compare_options *compare_options,
                                       const kvshard_allocator *allocator,
                                       const kvshard__comm_inputs *comm, kvshard_diag__ctx *diag);

#endif /* KVSHARD_EXPLORE_COMPARE_H */
