/* mpi_init: every rank of an MPI-launched engine plans on its own, measures
 * the memory it has, counts the blocks that fit it
 * (kvshard_plan_blocks_for()), then the ranks check with one collective that
 * they all laid out the cache alike and learn the block count they share:
 * the minimum, which each rank logs and would allocate.
 *
 *   mpirun -np W mpi_init DEPLOYMENT.yaml [--mismatch-rank=N] [FLAG ...]
 *
 * FLAGs are kvshard's own, as `kvshard plan` takes them (--pp_size=2,
 * --world_size=8, --pp_partition=6,20,13,13, ...): they override the file
 * on every rank alike, as an engine's command line would.
 *
 * The MPI world must have world_size processes, and the MPI rank is the
 * engine's global rank g. With pipeline stages the plan has P x T plan ranks
 * (stage x T + TP rank), and how g maps onto a stage and a TP rank depends on
 * the engine's rank layout (rank_layout): each rank asks kvshard_plan_locate()
 * rather than working it out itself, and passes the plan rank it returns to
 * every per-rank query.
 *
 * Each rank stands in for a measurement of its free device memory (the
 * deployment's memory_per_rank, less 256 MiB per global rank here), so the
 * blocks the ranks fit differ while their plans do not: they compare the
 * layout digest, which covers layer kinds, owners, the stages and the rank
 * layout, and the bytes per token and per sequence, but not the capacity.
 * The plan's own capacity and its warnings are of the deployment's
 * memory_per_rank; what a rank allocates is the agreed minimum.
 *
 * One MPI_Allreduce with MPI_MIN over five 64-bit values does it all:
 * {layout, ~layout, ok, blocks, state rows}. The minimum of ~layout is ~(maximum
 * layout), so the ranks agree exactly when min == max and every rank's ok is
 * 1; the minimum of the blocks each rank fits is what all of them allocate:
 * every engine that runs stages sizes all its workers to the smallest count,
 * whatever their stage. A rank that stores no KV bytes (a stage made of
 * state and MLP layers only) sends UINT64_MAX for its blocks: memory does not
 * bound what it holds per token, so it must not bound the count. A rank that
 * could not plan sends {UINT64_MAX, UINT64_MAX, 0, UINT64_MAX, UINT64_MAX},
 * which leaves the others' figures unchanged and marks the world as failed.
 * The state rows (kvshard_blocks.state_slots: the sequences each state
 * layer holds) are agreed the same way, the minimum over ranks; a rank with
 * no such figure (vLLM keeps state in its KV pages) sends UINT64_MAX.
 *
 * --mismatch-rank=N makes rank N plan with ownership=global, as if it had been
 * given a different deployment, to show that the disagreement is caught.
 *
 * Exit status (every rank): 0 the plans agree, 1 they differ or a rank could
 * not plan, 2 bad usage.
 */
#include "kvshard/kvshard.h"

#include <mpi.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_DISAGREE = 1, EXIT_USAGE = 2 };

/* Everything a rank prints goes out as whole lines, so that the output of
 * the ranks interleaves by line only. */
static void say(int rank, const char *line)
{
    printf("[rank %d] %s\n", rank, line);
    fflush(stdout);
}

static int parse_int(const char *text, int *out)
{
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 0 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

/* "what: where: why", with the file, line and column when the error has
 * them (a deployment file), the source alone for a flag. */
static void format_error(char *why, size_t cap, const char *what, const kvshard_error *err)
{
    if (err->line > 0)
        snprintf(why, cap, "%s: %s:%d:%d: %s", what, err->source, err->line, err->column,
                 err->message);
    else if (err->source[0])
        snprintf(why, cap, "%s: %s: %s", what, err->source, err->message);
    else
        snprintf(why, cap, "%s: %s", what, err->message);
}

/* This rank's free memory for the cache, as an engine would measure it. */
static uint64_t measured_memory(const kvshard_options *options, int rank)
{
    uint64_t less = (uint64_t)rank << 28; /* 256 MiB per rank */
    return options->memory_per_rank > less ? options->memory_per_rank - less : 0;
}

/* Load, apply the flags, optionally perturb, plan, and measure. On failure
 * `why` holds the reason. */
static kvshard_plan *build_plan(const char *path, size_t nflags, const char *const *flags,
                                int perturb, int rank, uint32_t world, uint64_t *measured,
                                char *why, size_t why_cap)
{
    kvshard_error err;
    kvshard_deployment *deployment = NULL;
    kvshard_plan *plan = NULL;
    if (kvshard_deployment_load_file(&deployment, path, NULL, &err) != KVSHARD_OK) {
        format_error(why, why_cap, "cannot load the deployment", &err);
        return NULL;
    }
    if (nflags && kvshard_deployment_apply_args(deployment, nflags, flags, 0, &err) != KVSHARD_OK) {
        format_error(why, why_cap, "bad flag", &err);
        kvshard_deployment_free(deployment);
        return NULL;
    }
    if (perturb && kvshard_deployment_set(deployment, "ownership", "global", "--mismatch-rank",
                                          &err) != KVSHARD_OK) {
        format_error(why, why_cap, "cannot override ownership", &err);
        kvshard_deployment_free(deployment);
        return NULL;
    }
    kvshard_options options = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&options, deployment);
    if (options.world_size != world) {
        snprintf(why, why_cap,
                 "the deployment has world_size %" PRIu32 " but MPI started %" PRIu32 " processes",
                 options.world_size, world);
        kvshard_deployment_free(deployment);
        return NULL;
    }
    /* Without a memory figure there is nothing to measure: the ranks still
     * agree on the layout, and no block count is taken. */
    *measured = measured_memory(&options, rank);
    if (options.memory_per_rank && !*measured) {
        snprintf(why, why_cap, "this rank measured no free memory (memory_per_rank %" PRIu64 ")",
                 options.memory_per_rank);
        kvshard_deployment_free(deployment);
        return NULL;
    }
    /* The plan is the same on every rank: it is made before anything is
     * measured, and the measurement only sizes the blocks (view_rank()). */
    if (kvshard_deployment_plan(&plan, deployment, &err) != KVSHARD_OK) {
        format_error(why, why_cap, "cannot plan", &err);
        plan = NULL;
    }
    kvshard_deployment_free(deployment);
    return plan;
}

/* "7 18" from a list of layer indices, cut short with "..." if it is long. */
static void format_layers(char *buf, size_t cap, const uint32_t *layers, size_t count)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        if (used + 16 >= cap) {
            snprintf(buf + used, cap - used, " ...");
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu32, i ? " " : "", layers[i]);
    }
}

/* Where global rank g sits and what it stores, found before the collective
 * and printed after it, beside the common count. */
typedef struct rank_view {
    kvshard_rank_position pos;
    kvshard_stage_info stage;
    char kv_layers[256];
    int stores_kv;   /* bytes_per_block > 0: it allocates KV blocks */
    uint64_t blocks; /* what it fits in its own memory; UINT64_MAX: no bound */
    uint64_t state_rows; /* rows each state layer holds; UINT64_MAX: no figure */
} rank_view;

/* Locate g, read its stage and KV layers, and count the blocks it fits in
 * its measured memory. On failure `why` holds the reason. */
static int view_rank(rank_view *v, const kvshard_plan *plan, uint32_t g, uint64_t measured,
                     char *why, size_t why_cap)
{
    kvshard_error err;
    v->pos = (kvshard_rank_position)KVSHARD_RANK_POSITION_INIT;
    v->stage = (kvshard_stage_info)KVSHARD_STAGE_INFO_INIT;
    v->blocks = UINT64_MAX;
    v->state_rows = UINT64_MAX;
    if (kvshard_plan_locate(&v->pos, plan, g) != KVSHARD_OK ||
        kvshard_plan_stage(&v->stage, plan, v->pos.stage) != KVSHARD_OK) {
        snprintf(why, why_cap, "cannot locate global rank %" PRIu32, g);
        return -1;
    }
    /* From here on the plan rank (stage x T + TP rank) names this rank. */
    const uint32_t r = v->pos.plan_rank;
    const uint32_t *layers = NULL;
    size_t count = 0;
    kvshard_rank_memory memory = KVSHARD_RANK_MEMORY_INIT;
    if (kvshard_plan_rank_layers(&layers, &count, plan, r) != KVSHARD_OK ||
        kvshard_plan_rank_memory(&memory, plan, r) != KVSHARD_OK) {
        snprintf(why, why_cap, "no plan rank %" PRIu32, r);
        return -1;
    }
    format_layers(v->kv_layers, sizeof v->kv_layers, layers, count);
    v->stores_kv = memory.bytes_per_block > 0;
    if (!measured)
        return 0;
    if (!v->stores_kv) {
        /* A rank without KV bytes allocates no blocks and has no count of
         * its own, but it still holds the state of max_seqs sequences. */
        kvshard_options settled = KVSHARD_OPTIONS_INIT;
        if (kvshard_plan_options(&settled, plan) != KVSHARD_OK) {
            snprintf(why, why_cap, "cannot read the plan's options");
            return -1;
        }
        uint64_t per_seq = memory.state_bytes_per_seq + memory.scratch_bytes_per_seq;
        if (per_seq && settled.max_seqs > measured / per_seq) {
            snprintf(why, why_cap,
                     "the state of max_seqs %" PRIu32 " sequences (%" PRIu64
                     " bytes each) does not fit the %" PRIu64 " bytes this rank measured",
                     settled.max_seqs, per_seq, measured);
            return -1;
        }
        return 0;
    }
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    kvshard_blocks fit = KVSHARD_BLOCKS_INIT;
    budget.memory_per_rank = measured;
    if (kvshard_plan_blocks_for(&fit, plan, r, &budget, &err) != KVSHARD_OK) {
        format_error(why, why_cap, "cannot count this rank's blocks", &err);
        return -1;
    }
    v->blocks = fit.num_blocks;
    v->state_rows = fit.has_state_slots ? fit.state_slots : UINT64_MAX;
    return 0;
}

/* The line each rank prints once the world agrees: who it is, what it
 * holds and what it allocates. */
static void say_position(int rank, const kvshard_plan *plan, const rank_view *v, uint64_t common)
{
    char fits[64], tail[64], line[512];
    if (!v->stores_kv)
        snprintf(fits, sizeof fits, "state only, does not bound the blocks");
    else if (v->blocks != UINT64_MAX)
        snprintf(fits, sizeof fits, "fits %" PRIu64 " blocks", v->blocks);
    else
        snprintf(fits, sizeof fits, "no memory figure");
    if (common != UINT64_MAX)
        snprintf(tail, sizeof tail, "common block count %" PRIu64, common);
    else
        snprintf(tail, sizeof tail, "no common block count");
    const kvshard_stage_info *s = &v->stage;
    snprintf(line, sizeof line,
             "global rank %" PRIu32 ": stage %" PRIu32 "/%" PRIu32 ", tp_rank %" PRIu32 "/%" PRIu32
             ", layers %" PRIu32 "-%" PRIu32 ", KV layers [%s], %s; %s",
             v->pos.global_rank, v->pos.stage, kvshard_plan_pp_size(plan), v->pos.tp_rank,
             kvshard_plan_attn_tp_size(plan), s->layer_first, s->layer_first + s->layer_count - 1,
             v->kv_layers, fits, tail);
    say(rank, line);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Every rank gets the same argv, so a usage error ends them all alike.
     * After the path: this example's --mismatch-rank, and kvshard's flags,
     * collected in order for kvshard_deployment_apply_args(). */
    const char *path = NULL;
    const char **flags = calloc((size_t)argc, sizeof *flags);
    size_t nflags = 0;
    int mismatch_rank = -1, bad_usage = !flags;
    for (int i = 1; i < argc && flags; i++) {
        if (strncmp(argv[i], "--mismatch-rank=", 16) == 0) {
            if (parse_int(argv[i] + 16, &mismatch_rank) != 0)
                bad_usage = 1;
        } else if (!path && argv[i][0] != '-') {
            path = argv[i];
        } else if (path) {
            flags[nflags++] = argv[i];
        } else {
            bad_usage = 1;
        }
    }
    if (bad_usage || !path) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np WORLD_SIZE mpi_init DEPLOYMENT.yaml "
                            "[--mismatch-rank=N] [FLAG ...]\n");
        free(flags);
        MPI_Finalize();
        return EXIT_USAGE;
    }

    char why[KVSHARD_ERROR_MESSAGE_MAX + KVSHARD_ERROR_SOURCE_MAX + 96] = "";
    char line[1024];
    uint64_t measured = 0;
    kvshard_plan *plan = build_plan(path, nflags, flags, rank == mismatch_rank, rank,
                                    (uint32_t)size, &measured, why, sizeof why);
    free(flags);
    if (rank == mismatch_rank)
        say(rank, "--mismatch-rank: this rank plans with ownership=global");

    rank_view view;
    memset(&view, 0, sizeof view);
    int ok = plan && view_rank(&view, plan, (uint32_t)rank, measured, why, sizeof why) == 0;
    uint64_t layout = 0;
    if (ok) {
        layout = kvshard_plan_layout_digest(plan);
    } else {
        snprintf(line, sizeof line, "error: %s", why);
        say(rank, line);
    }

    /* The one collective: min over {layout, ~layout, ok, blocks, state rows}. */
    uint64_t mine[5], all[5];
    mine[0] = ok ? layout : UINT64_MAX;
    mine[1] = ok ? ~layout : UINT64_MAX;
    mine[2] = ok ? 1u : 0u;
    mine[3] = ok ? view.blocks : UINT64_MAX;
    mine[4] = ok ? view.state_rows : UINT64_MAX;
    MPI_Allreduce(mine, all, 5, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    const uint64_t lowest = all[0], highest = ~all[1], common = all[3], state_rows = all[4];
    const int every_rank_planned = all[2] == 1u;

    int status = 0;
    if (!every_rank_planned) {
        say(rank, "error: not every rank could build its plan");
        status = EXIT_DISAGREE;
    } else if (lowest != highest) {
        snprintf(line, sizeof line,
                 "error: the ranks' layouts differ: layout digests range from %016" PRIx64
                 " to %016" PRIx64 ", this rank has %016" PRIx64,
                 lowest, highest, layout);
        say(rank, line);
        status = EXIT_DISAGREE;
    } else {
        /* Agreed: every rank holds the same partition and layout, so rank 0
         * speaks for the world. */
        if (rank == 0) {
            char rows[96] = "";
            if (state_rows != UINT64_MAX)
                snprintf(rows, sizeof rows, " and %" PRIu64 " state rows a state layer",
                         state_rows);
            if (common != UINT64_MAX)
                snprintf(line, sizeof line,
                         "all %d ranks agree on layout %016" PRIx64 "; each allocates %" PRIu64
                         " blocks (the fewest any rank fits)%s",
                         size, lowest, common, rows);
            else
                snprintf(line, sizeof line, "all %d ranks agree on layout %016" PRIx64, size,
                         lowest);
            say(rank, line);
            /* The layer counts per stage, for the engine's own partition
             * setting (VLLM_PP_LAYER_PARTITION, SGLANG_PP_LAYER_PARTITION). */
            char partition[256];
            kvshard_plan_pp_partition(partition, sizeof partition, plan);
            const uint32_t P = kvshard_plan_pp_size(plan);
            snprintf(line, sizeof line, "pp partition %s (%" PRIu32 " stage%s)", partition, P,
                     P == 1 ? "" : "s");
            say(rank, line);
            size_t nwarn = kvshard_plan_warning_count(plan);
            for (size_t i = 0; i < nwarn; i++) {
                kvshard_warning_code code;
                const char *message;
                if (kvshard_plan_warning(&code, &message, plan, i) != KVSHARD_OK)
                    continue;
                snprintf(line, sizeof line, "warning %s: %s", kvshard_warning_name(code), message);
                say(rank, line);
            }
        }
        /* The log line names the blocks every rank allocates: the agreed
         * minimum of the measured counts, not the plan's. */
        if (common != UINT64_MAX)
            kvshard_plan_describe_rank_blocks(line, sizeof line, plan, view.pos.plan_rank, common);
        else
            kvshard_plan_describe_rank(line, sizeof line, plan, view.pos.plan_rank);
        say(rank, line);
        say_position(rank, plan, &view, common);
    }

    kvshard_plan_free(plan);
    MPI_Finalize();
    return status;
}
