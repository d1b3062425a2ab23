/* The report's memory chart: how a rank's budget divides, which the chart
 * draws and the tests read, and the context lengths the report gives
 * concurrency at. */
#ifndef KVSHARD_OUTPUT_REPORT_CHART_H
#define KVSHARD_OUTPUT_REPORT_CHART_H

#include "output/writer.h"
#include "plan/view.h"

/* The parts of a rank's budget, in the order the chart stacks them. A
 * reserve or a block the profile lays out its own way (its figures do not
 * add up to max_seqs sequences or to block_size tokens of the rank's
 * per-token bytes) is one part, RESERVE or BLOCKS; else it is split. */
typedef enum kvshard_report__part {
    KVSHARD_REPORT__WEIGHTS,     /* the rank's stage weights, with device inputs */
    KVSHARD_REPORT__ACTIVATIONS, /* the activation reserve, with device inputs */
    KVSHARD_REPORT__HEADROOM,    /* what the device keeps outside the budget: device - usable */
    KVSHARD_REPORT__STATE,       /* max_seqs x the recurrent state per sequence */
    KVSHARD_REPORT__WINDOW,      /* max_seqs x the windows per sequence */
    KVSHARD_REPORT__SEQ_SCRATCH, /* max_seqs x the scratch per sequence */
    KVSHARD_REPORT__RESERVE,     /* the profile's reserve, when not those two */
    KVSHARD_REPORT__KV,          /* blocks x block_size x KV per token */
    KVSHARD_REPORT__SCRATCH,     /* blocks x block_size x scratch per token */
    KVSHARD_REPORT__DRAFT,       /* blocks x block_size x draft per token */
    KVSHARD_REPORT__BLOCKS,      /* blocks x the bytes per block, when not those three */
    /* An engine whose KV and state share the pool (the profile's pool_split):
     * the pages its attention groups and its state groups hold for the
     * sequences at once, and the pages left free; then KV to BLOCKS are 0. */
    KVSHARD_REPORT__POOL_KV,
    KVSHARD_REPORT__POOL_STATE,
    KVSHARD_REPORT__POOL_FREE,
    KVSHARD_REPORT__UNUSED,      /* what is left of the budget */
    KVSHARD_REPORT__PARTS
} kvshard_report__part;

/* One bar: the plan ranks whose memory figures are all the same. */
typedef struct kvshard_report__bar {
    uint32_t rank;   /* the first plan rank with these figures */
    uint32_t count;  /* how many plan ranks have them */
    uint64_t budget; /* the rank's budget: the parts from STATE on add up to it */
    /* With device inputs, device_memory: every part adds up to it; else the
     * budget. */
    uint64_t span;
    uint64_t blocks; /* blocks the rank allocates: the plan's common count */
    bool has_fits;
    uint64_t fits; /* blocks the rank alone would fit */
    uint64_t part[KVSHARD_REPORT__PARTS];
} kvshard_report__bar;

/* Whether plan ranks a and b have the same memory figures (one bar). */
bool kvshard_report__same_rank(const kvshard__plan_view *p, uint32_t a, uint32_t b);

/* The bars of the plan's distinct ranks, in the order of their first rank,
 * into `out` (at most `cap`); returns how many distinct ranks there are,
 * 0 without a budget or a block count. */
size_t kvshard_report__bars(kvshard_report__bar *out, size_t cap, const kvshard__plan_view *p);

/* The members of a bar as its label names them: "ranks 0\u20133 (4)",
 * "rank 5", "stage 1 ranks 0, 2 (2)"; at most `cap` bytes with the NUL. */
void kvshard_report__members(char *out, size_t cap, const kvshard__plan_view *p, uint32_t rank);

/* The memory section: a stacked bar per distinct rank on one scale with
 * an axis in human sizes, or without a budget the bytes of one block and
 * of one sequence, on one scale too. */
void kvshard_report__write_memory(kvshard__out *o, const kvshard__plan_view *p);

/* The context lengths the report gives concurrency at without a
 * context_length: 4,096, 32,768 and 131,072 tokens and the model's
 * max_position_embeddings, none above the latter when the config gives it,
 * no length twice, in increasing order; returns how many (at most 4). */
size_t kvshard_report__context_lengths(uint32_t *out, const kvshard__model_info *m);

#endif /* KVSHARD_OUTPUT_REPORT_CHART_H */
