/* kvshard's own capacity model: reserve the state of max_seqs sequences on
 * every rank and cut the rest into blocks; all ranks allocate the fewest
 * blocks any rank fits. At a context length: how many sequences run at
 * once, and the max_seqs at which state and blocks run out together. */
#include "profile/kvshard.h"

#include "profile/capacity.h"

#include "base/checked.h"

#include <stdio.h>

/* The engine profiles' shared input under either spelling. */
static const kvshard_profile__alias aliases[] = {
    {"engine-version", "engine_version", NULL},
    {"pipeline_parallel_size", "pp_size", NULL},
    {NULL, NULL, NULL},
};

static int budget(uint64_t *out, bool *has, const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    (void)diag;
    *out = c->options->memory_per_rank;
    *has = c->options->memory_per_rank > 0;
    return KVSHARD_OK;
}

static int capacity(kvshard__capacity *c, uint64_t *rank_blocks, const kvshard__capacity_inputs *in,
                    kvshard_diag__ctx *diag)
{
    const kvshard_options *o = in->options;
    uint64_t least = UINT64_MAX, bpb = 0, blocks = 0, prev_budget = 0;
    const kvshard_rank_memory *prev = NULL;
    uint32_t first = kvshard_capacity__first_rank(in), end = kvshard_capacity__end_rank(in);
    for (uint32_t r = first; r < end; r++) {
        const kvshard_rank_memory *f = &in->ranks[r];
        uint64_t budget = kvshard_capacity__budget(in, r);
        /* Ranks alike in figures and budget fit alike: counted once. */
        if (!kvshard_capacity__same_figures(prev, f) || budget != prev_budget) {
            if (!kvshard_capacity__block_bytes(&bpb, f, in->extra_per_block))
                return kvshard_capacity__block_overflow(in, r, NULL, diag);
            uint64_t reserved, need, seq;
            char rank[48];
            /* A reservation, or a reservation and one block, past 2^64 - 1
             * bytes exceeds any memory: no block fits. Never saturated, so
             * a budget of 2^64 - 1 bytes cannot seem to hold it. */
            if (!kvshard_capacity__seq_bytes(&seq, f) ||
                !kvshard__mul(&reserved, o->max_seqs, seq) || !kvshard__add(&need, reserved, bpb)) {
                kvshard_capacity__rank_name(rank, sizeof rank, in, r);
                return kvshard_diag__fail(
                    diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                    "no memory for one block on %s: the state of max_seqs %u "
                    "sequences (%llu + %llu bytes each) and bytes_per_block "
                    "%llu need more than 18446744073709551615 bytes (2^64 - 1)",
                    rank, o->max_seqs, (unsigned long long)f->state_bytes_per_seq,
                    (unsigned long long)f->scratch_bytes_per_seq, (unsigned long long)bpb);
            }
            if (budget < need) {
                kvshard_capacity__rank_name(rank, sizeof rank, in, r);
                return kvshard_diag__fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                                          "no memory for one block on %s: %s %llu bytes, "
                                          "reserved %llu bytes for %u sequences of state, "
                                          "bytes_per_block %llu",
                                          rank, in->stage_memory ? "its budget" : "memory_per_rank",
                                          (unsigned long long)budget, (unsigned long long)reserved,
                                          o->max_seqs, (unsigned long long)bpb);
            }
            c->reserved = reserved > c->reserved ? reserved : c->reserved;
            blocks = bpb ? (budget - reserved) / bpb : 0;
        }
        prev = f;
        prev_budget = budget;
        if (rank_blocks && bpb)
            rank_blocks[r] = blocks;
        if (bpb) {
            c->has_num_blocks = true;
            least = blocks < least ? blocks : least;
        }
    }
    c->num_blocks = c->has_num_blocks ? least : 0;
    int rc = kvshard_capacity__max_tokens(c, o, diag);
    if (rc || !c->has_num_blocks || in->context_length == 0)
        return rc;
    uint64_t per_seq = kvshard__ceil_div(in->context_length, o->block_size);
    uint64_t fit = c->num_blocks / per_seq;
    c->has_concurrency = true;
    c->concurrency = fit < o->max_seqs ? fit : o->max_seqs;
    uint64_t balanced = UINT64_MAX;
    prev = NULL;
    for (uint32_t r = first; r < end; r++) {
        const kvshard_rank_memory *f = &in->ranks[r];
        uint64_t budget = kvshard_capacity__budget(in, r);
        if (kvshard_capacity__same_figures(prev, f) && budget == prev_budget)
            continue;
        prev = f;
        prev_budget = budget;
        uint64_t kv, need, bytes, seq;
        if (!kvshard_capacity__block_bytes(&bytes, f, in->extra_per_block) ||
            !kvshard_capacity__seq_bytes(&seq, f) || !kvshard__mul(&kv, per_seq, bytes) ||
            !kvshard__add(&need, seq, kv)) {
            balanced = 0; /* one sequence needs more than 2^64 bytes */
            continue;
        }
        if (need == 0)
            continue; /* stores nothing: does not bound max_seqs */
        uint64_t n = budget / need;
        balanced = n < balanced ? n : balanced;
    }
    c->has_balanced_max_seqs = balanced != UINT64_MAX;
    c->balanced_max_seqs = c->has_balanced_max_seqs ? balanced : 0;
    return KVSHARD_OK;
}

/* The state reserved beside the blocks: the binding rank's when stages have
 * budgets of their own, else the largest over ranks. */
static uint64_t shown_reserved(const kvshard_profile__view *v)
{
    uint64_t seq;
    if (v->binding && kvshard_capacity__seq_bytes(&seq, v->binding))
        return (uint64_t)v->options->max_seqs * seq; /* the plan checked it fits */
    return v->capacity->reserved;
}

/* What the reserved bytes keep, in the plan's words. */
static const char *seq_noun(const kvshard_profile__view *v)
{
    return v->seq_noun ? v->seq_noun : "state";
}

static void write_capacity(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard__capacity *c = v->capacity;
    kvshard_format__text(p, "capacity   ");
    if (!v->has_memory) {
        kvshard_format__text(p, kvshard_profile__kvshard.voice.no_budget_hint);
        kvshard_format__text(p, "\n");
        return;
    }
    /* Stages with budgets of their own: the binding stage's budget and
     * reservation, the ones its blocks are counted from. */
    const kvshard_rank_memory *bind = v->binding;
    uint64_t state = bind ? bind->state_bytes_per_seq : v->state_bytes_per_seq;
    uint64_t reserved = shown_reserved(v);
    if (bind) {
        kvshard_format__printf(p, "binding stage %u: budget ", v->binding_stage);
        kvshard_format__human(p, bind->budget);
        kvshard_format__text(p, ", ");
    } else {
        kvshard_format__human(p, v->memory);
        kvshard_format__text(p, " per rank, ");
    }
    if (state) {
        kvshard_format__human(p, reserved);
        kvshard_format__printf(p, " reserved for the %s of %u sequence%s", seq_noun(v),
                               v->options->max_seqs, v->options->max_seqs == 1 ? "" : "s");
    } else {
        kvshard_format__text(p, "no state to reserve");
    }
    if (c->has_num_blocks) {
        kvshard_format__text(p, ": ");
        kvshard_format__grouped(p, c->num_blocks);
        if (bind) {
            kvshard_format__text(p, " blocks of ");
            kvshard_format__grouped(p, bind->bytes_per_block);
            kvshard_format__text(p, " B");
        } else {
            kvshard_format__text(p, " blocks");
        }
        kvshard_format__text(p, " = ");
        kvshard_format__grouped(p, c->max_tokens);
        kvshard_format__text(p, " tokens\n");
    } else {
        kvshard_format__text(p, "; no KV bytes per block\n");
    }
}

static void report_rows(const kvshard__printer *p, const kvshard_profile__view *v, bool tail)
{
    if (tail)
        return;
    const kvshard_rank_memory *bind = v->binding;
    kvshard_format__row(p, "budget");
    if (bind) {
        kvshard_format__bytes(p, bind->budget);
        kvshard_format__printf(p, " on binding stage %u, whose blocks every rank allocates",
                               v->binding_stage);
    } else {
        kvshard_format__bytes(p, v->memory);
        kvshard_format__text(p, " per rank");
    }
    kvshard_format__row_end(p);
    char label[32];
    snprintf(label, sizeof label, "%s reserved", seq_noun(v));
    kvshard_format__row(p, label);
    kvshard_format__bytes(p, shown_reserved(v));
    kvshard_format__printf(p, " for the %s of max_seqs = %u sequences", seq_noun(v),
                           v->options->max_seqs);
    kvshard_format__row_end(p);
}

/* The layout as kvshard's own flags: given to `kvshard plan` with the same
 * device flags they make the same plan. */
static int recommend(char *buf, size_t cap, const kvshard_profile__layout *l, bool env)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    if (env)
        return 0;
    kvshard_profile__arg(buf, cap, &used, "--world_size=%u", l->world_size);
    if (l->pp > 1) {
        char counts[2048];
        kvshard_profile__partition_text(counts, sizeof counts, l);
        kvshard_profile__arg(buf, cap, &used, "--pp_size=%u", l->pp);
        kvshard_profile__arg(buf, cap, &used, "--pp_partition=%s", counts);
    }
    if (l->dp > 1)
        kvshard_profile__arg(buf, cap, &used, "--dp_size=%u", l->dp);
    if (l->split > 1) {
        kvshard_profile__arg(buf, cap, &used, "--enable_layerwise_split=true");
        kvshard_profile__arg(buf, cap, &used, "--layerwise_split_size=%u", l->split);
        kvshard_profile__arg(buf, cap, &used, "--ownership=%s", l->ownership);
    }
    if (l->expert_parallel)
        kvshard_profile__arg(buf, cap, &used, "--expert_parallel=true");
    if (l->context_length)
        kvshard_profile__arg(buf, cap, &used, "--max_seqs=%llu",
                             (unsigned long long)l->seqs_per_replica);
    return used > INT32_MAX ? KVSHARD_EINVAL : (int)used;
}

const kvshard__profile kvshard_profile__kvshard = {
    .name = "kvshard",
    .engine = KVSHARD_ENGINE_KVSHARD,
    .defaults.block_size = 16,
    .defaults.max_seqs = 256,
    .defaults.ownership = KVSHARD_OWNERSHIP_ORDINAL,
    .defaults.pp_rule = KVSHARD_PP_RULE_VLLM,
    .defaults.rank_layout = KVSHARD_RANK_LAYOUT_VLLM,
    /* kvshard's split flags are the seed engine's, and xLLM runs them. */
    .comm.decode = KVSHARD__COMM_OWNER_ATTENTION,
    .comm.prefill = KVSHARD__COMM_HISTORY_ROWS,
    .device.utilization_ppb = 900000000, /* 0.9 */
    .dialect.aliases = aliases,
    .dialect.flag_style = KVSHARD_PROFILE__GFLAGS,
    .counting.counts_draft_layers = true,
    .counting.ranks_by_balanced = true,
    .counting.reserves_max_seqs_state = true,
    .hooks.budget = budget,
    .hooks.capacity = capacity,
    .voice.budget_label = "memory_per_rank",
    .voice.no_budget_hint = "no memory_per_rank given: pass `--memory_per_rank=20GiB` for blocks",
    .voice.write_capacity = write_capacity,
    .dialect.recommend = recommend,
    .voice.report_rows = report_rows,
};
