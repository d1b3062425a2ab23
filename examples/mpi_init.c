/* mpi_init: every rank of an MPI-launched engine plans on its own, then the
 * ranks check with one collective that they all built the same plan.
 *
 *   mpirun -np 4 mpi_init DEPLOYMENT.yaml [--mismatch-rank=N]
 *
 * The MPI world must have world_size processes. Ranks are laid out with
 * tensor parallelism innermost: the attention TP rank is rank % attn_tp_size.
 *
 * Agreement takes one MPI_Allreduce with MPI_MIN over three 64-bit values:
 * {digest, ~digest, ok}. The minimum of ~digest is ~(maximum digest), so the
 * ranks agree exactly when min == max and every rank's ok is 1. A rank that
 * could not build its plan sends {UINT64_MAX, UINT64_MAX, 0}, which leaves the
 * digest range of the others unchanged and marks the world as failed.
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

/* Load, optionally perturb, and plan. On failure `why` holds the reason. */
static kvshard_plan *build_plan(const char *path, int perturb, uint32_t world, char *why,
                                size_t why_cap)
{
    kvshard_error err;
    kvshard_deployment *deployment = NULL;
    kvshard_plan *plan = NULL;
    if (kvshard_deployment_load_file(&deployment, path, NULL, &err) != KVSHARD_OK) {
        snprintf(why, why_cap, "cannot load %s: %s:%d:%d: %s", path, err.source, err.line,
                 err.column, err.message);
        return NULL;
    }
    if (perturb &&
        kvshard_deployment_set(deployment, "ownership", "global", "--mismatch-rank", &err) !=
            KVSHARD_OK) {
        snprintf(why, why_cap, "cannot override ownership: %s", err.message);
        kvshard_deployment_free(deployment);
        return NULL;
    }
    kvshard_options options = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&options, deployment);
    if (options.world_size != world) {
        snprintf(why, why_cap,
                 "the deployment has world_size %" PRIu32 " but MPI started %" PRIu32
                 " processes",
                 options.world_size, world);
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
    kvshard_plan *plan = build_plan(path, rank == mismatch_rank, (uint32_t)size, why, sizeof why);
    if (rank == mismatch_rank)
        say(rank, "%s", "--mismatch-rank: this rank plans with ownership=global");

    uint64_t digest = 0;
    if (plan) {
        digest = kvshard_plan_digest(plan);
        uint32_t T = kvshard_plan_attn_tp_size(plan);
        uint32_t tp_rank = (uint32_t)rank % T;
        const uint32_t *layers = NULL;
        size_t count = 0;
        kvshard_plan_rank_layers(&layers, &count, plan, tp_rank);
        char line[1024];
        int n = snprintf(line, sizeof line,
                         "tp_rank %" PRIu32 ", digest %016" PRIx64 ", stores the KV of %zu "
                         "full-attention layer(s):",
                         tp_rank, digest, count);
        for (size_t i = 0; i < count && n > 0 && (size_t)n < sizeof line; i++)
            n += snprintf(line + n, sizeof line - (size_t)n, " %" PRIu32, layers[i]);
        say(rank, "%s", line);
    } else {
        say(rank, "error: %s", why);
    }

    /* The one collective: min over {digest, ~digest, ok}. */
    uint64_t mine[3], all[3];
    mine[0] = plan ? digest : UINT64_MAX;
    mine[1] = plan ? ~digest : UINT64_MAX;
    mine[2] = plan ? 1u : 0u;
    MPI_Allreduce(mine, all, 3, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    const uint64_t lowest = all[0], highest = ~all[1];
    const int every_rank_planned = all[2] == 1u;

    int status = 0;
    char line[256];
    if (!every_rank_planned) {
        say(rank, "%s", "error: not every rank could build its plan");
        status = EXIT_DISAGREE;
    } else if (lowest != highest) {
        snprintf(line, sizeof line,
                 "error: the ranks' plans differ: digests range from %016" PRIx64
                 " to %016" PRIx64 ", this rank has %016" PRIx64,
                 lowest, highest, digest);
        say(rank, "%s", line);
        status = EXIT_DISAGREE;
    } else {
        snprintf(line, sizeof line, "agreed digest %016" PRIx64, lowest);
        say(rank, "%s", line);
        if (rank == 0) {
            snprintf(line, sizeof line, "all %d ranks agree on plan %016" PRIx64, size, lowest);
            say(rank, "%s", line);
        }
    }

    kvshard_plan_free(plan);
    MPI_Finalize();
    return status;
}
