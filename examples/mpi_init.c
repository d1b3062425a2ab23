/* mpi_init: every rank of an MPI-launched engine plans on its own, with the
 * memory it measured itself, then the ranks check with one collective that
 * they all laid out the cache alike and learn the block count they share.
 *
 *   mpirun -np 4 mpi_init DEPLOYMENT.yaml [--mismatch-rank=N]
 *
 * The MPI world must have world_size processes. Ranks are laid out with
 * tensor parallelism innermost: the attention TP rank is rank % attn_tp_size.
 *
 * Each rank stands in for a measurement of its free device memory (the
 * deployment's memory_per_rank, less 256 MiB per rank here), so the ranks'
 * capacities differ and their full digests with them: they compare the
 * layout digest, which covers layer kinds, owners and the bytes per token
 * and per sequence but not the capacity.
 *
 * One MPI_Allreduce with MPI_MIN over four 64-bit values does it all:
 * {layout, ~layout, ok, blocks}. The minimum of ~layout is ~(maximum
 * layout), so the ranks agree exactly when min == max and every rank's ok is
 * 1; the minimum of the blocks each rank fits is what all of them allocate. A
 * rank that could not plan sends {UINT64_MAX, UINT64_MAX, 0, UINT64_MAX},
 * which leaves the others' figures unchanged and marks the world as failed.
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
static void say(int rank, const char *fmt, const char *text)
{
    printf("[rank %d] ", rank);
    printf(fmt, text);
    printf("\n");
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

/* This rank's free memory for the cache, as an engine would measure it. */
static uint64_t measured_memory(const kvshard_options *options, int rank)
{
    uint64_t less = (uint64_t)rank << 28; /* 256 MiB per rank */
    return options->memory_per_rank > less ? options->memory_per_rank - less : 0;
}

/* Load, optionally perturb, set the measured memory, and plan. On failure
 * `why` holds the reason. */
static kvshard_plan *build_plan(const char *path, int perturb, int rank, uint32_t world,
                                uint64_t *measured, char *why, size_t why_cap)
{
    kvshard_error err;
    kvshard_deployment *deployment = NULL;
    kvshard_plan *plan = NULL;
    if (kvshard_deployment_load_file(&deployment, path, NULL, &err) != KVSHARD_OK) {
        snprintf(why, why_cap, "cannot load %s: %s:%d:%d: %s", path, err.source, err.line,
                 err.column, err.message);
        return NULL;
    }
    if (perturb && kvshard_deployment_set(deployment, "ownership", "global", "--mismatch-rank",
                                          &err) != KVSHARD_OK) {
        snprintf(why, why_cap, "cannot override ownership: %s", err.message);
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
    *measured = measured_memory(&options, rank);
    char memory[32];
    snprintf(memory, sizeof memory, "%" PRIu64, *measured);
    if (*measured && kvshard_deployment_set(deployment, "memory_per_rank", memory, "measured",
                                            &err) != KVSHARD_OK) {
        snprintf(why, why_cap, "cannot set the measured memory: %s", err.message);
        kvshard_deployment_free(deployment);
        return NULL;
    }
    if (kvshard_deployment_plan(&plan, deployment, &err) != KVSHARD_OK) {
        snprintf(why, why_cap, "cannot plan: %s", err.message);
        plan = NULL;
    }
    kvshard_deployment_free(deployment);
    return plan;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Every rank gets the same argv, so a usage error ends them all alike. */
    const char *path = NULL;
    int mismatch_rank = -1, bad_usage = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--mismatch-rank=", 16) == 0) {
            if (parse_int(argv[i] + 16, &mismatch_rank) != 0)
                bad_usage = 1;
        } else if (!path) {
            path = argv[i];
        } else {
            bad_usage = 1;
        }
    }
    if (bad_usage || !path) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np WORLD_SIZE mpi_init DEPLOYMENT.yaml "
                            "[--mismatch-rank=N]\n");
        MPI_Finalize();
        return EXIT_USAGE;
    }

    char why[KVSHARD_ERROR_MESSAGE_MAX + KVSHARD_ERROR_SOURCE_MAX + 64] = "";
    uint64_t measured = 0;
    kvshard_plan *plan =
        build_plan(path, rank == mismatch_rank, rank, (uint32_t)size, &measured, why, sizeof why);
    if (rank == mismatch_rank)
        say(rank, "%s", "--mismatch-rank: this rank plans with ownership=global");

    uint64_t layout = 0, blocks = UINT64_MAX;
    if (plan) {
        layout = kvshard_plan_layout_digest(plan);
        uint32_t tp_rank = (uint32_t)rank % kvshard_plan_attn_tp_size(plan);
        /* The blocks this rank fits in its own memory. */
        kvshard_budget budget = KVSHARD_BUDGET_INIT;
        kvshard_blocks fit = KVSHARD_BLOCKS_INIT;
        budget.memory_per_rank = measured;
        if (measured && kvshard_plan_blocks_for(&fit, plan, tp_rank, &budget, NULL) == KVSHARD_OK)
            blocks = fit.num_blocks;
        char line[768];
        kvshard_plan_describe_rank(line, sizeof line, plan, tp_rank);
        say(rank, "%s", line);
    } else {
        say(rank, "error: %s", why);
    }

    /* The one collective: min over {layout, ~layout, ok, blocks}. */
    uint64_t mine[4], all[4];
    mine[0] = plan ? layout : UINT64_MAX;
    mine[1] = plan ? ~layout : UINT64_MAX;
    mine[2] = plan ? 1u : 0u;
    mine[3] = plan ? blocks : UINT64_MAX;
    MPI_Allreduce(mine, all, 4, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    const uint64_t lowest = all[0], highest = ~all[1];
    const int every_rank_planned = all[2] == 1u;

    int status = 0;
    char line[256];
    if (!every_rank_planned) {
        say(rank, "%s", "error: not every rank could build its plan");
        status = EXIT_DISAGREE;
    } else if (lowest != highest) {
        snprintf(line, sizeof line,
                 "error: the ranks' layouts differ: layout digests range from %016" PRIx64
                 " to %016" PRIx64 ", this rank has %016" PRIx64,
                 lowest, highest, layout);
        say(rank, "%s", line);
        status = EXIT_DISAGREE;
    } else if (rank == 0) {
        if (all[3] != UINT64_MAX)
            snprintf(line, sizeof line,
                     "all %d ranks agree on layout %016" PRIx64 "; each allocates %" PRIu64
                     " blocks (the fewest any rank fits)",
                     size, lowest, all[3]);
        else
            snprintf(line, sizeof line, "all %d ranks agree on layout %016" PRIx64, size, lowest);
        say(rank, "%s", line);
    }

    kvshard_plan_free(plan);
    MPI_Finalize();
    return status;
}
