/* engine_init: what an inference engine does with kvshard when one rank starts.
 *
 *   engine_init DEPLOYMENT.yaml RANK [--werror]
 *
 * RANK is the process's global rank, 0 .. world_size-1. The plan says where
 * it sits (kvshard_plan_locate(): its pipeline stage and attention TP rank
 * under the deployment's rank layout), and every per-rank query takes the
 * plan rank it returns (data- and context-parallel replicas share one).
 *
 * The program loads the deployment, builds the plan, reports the warnings
 * (--werror makes any warning fatal), sizes the blocks from the memory it
 * measured (kvshard_plan_blocks_for()), logs the rank's line with those
 * blocks, then allocates
 * what the rank's cache needs, layer by layer as kvshard_plan_layer_storage()
 * describes it: a KV buffer for each KV layer the rank stores (its slot, its
 * heads and bytes per token), a state buffer for each linear or hybrid layer
 * and a window for each sliding layer, then scratch and draft buffers. To run
 * on a machine without accelerator memory the
 * allocations are scaled down to at most DEMO_BLOCKS KV blocks and DEMO_SEQS
 * sequences; the full-size figures are printed next to them.
 *
 * Exit status: 0 success, 1 the deployment or plan is invalid (or a warning
 * with --werror), 2 bad usage, 3 out of host memory.
 */
#include "kvshard/kvshard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_NOMEM = 3 };

/* Scale-down of the demo allocations. */
#define DEMO_BLOCKS 64u
#define DEMO_SEQS 4u

static void print_error(const char *what, const kvshard_error *err)
{
    if (err->line > 0)
        fprintf(stderr, "engine_init: %s: %s:%d:%d: %s\n", what, err->source, err->line,
                err->column, err->message);
    else if (err->source[0])
        fprintf(stderr, "engine_init: %s: %s: %s\n", what, err->source, err->message);
    else
        fprintf(stderr, "engine_init: %s: %s\n", what, err->message);
}

static int parse_rank(uint32_t *out, const char *text)
{
    char *end = NULL;
    unsigned long v = strtoul(text, &end, 10);
    if (text[0] < '0' || text[0] > '9' || *end != '\0' || v >= KVSHARD_MAX_RANKS)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* a * b * c, or 0 with *overflow set when the product does not fit 64 bits. */
static uint64_t mul3(uint64_t a, uint64_t b, uint64_t c, int *overflow)
{
    if ((b != 0 && a > UINT64_MAX / b) || (c != 0 && a * b > UINT64_MAX / c)) {
        *overflow = 1;
        return 0;
    }
    return a * b * c;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

static double gib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

/* One host allocation standing in for device memory; NULL for 0 bytes. */
static void *alloc_buffer(uint64_t bytes, int *failed)
{
    if (bytes == 0)
        return NULL;
    if (bytes > SIZE_MAX) {
        *failed = 1;
        return NULL;
    }
    void *p = calloc(1, (size_t)bytes);
    if (!p)
        *failed = 1;
    return p;
}

int main(int argc, char **argv)
{
    const char *path = NULL;
    const char *rank_text = NULL;
    int werror = 0, bad_usage = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--werror") == 0)
            werror = 1;
        else if (!path)
            path = argv[i];
        else if (!rank_text)
            rank_text = argv[i];
        else
            bad_usage = 1;
    }
    uint32_t rank = 0;
    if (bad_usage || !path || !rank_text || parse_rank(&rank, rank_text) != 0) {
        fprintf(stderr, "usage: engine_init DEPLOYMENT.yaml RANK [--werror]\n");
        return EXIT_USAGE;
    }

    /* 1. Deployment and plan. */
    kvshard_error err;
    kvshard_deployment *deployment = NULL;
    if (kvshard_deployment_load_file(&deployment, path, NULL, &err) != KVSHARD_OK) {
        print_error("cannot load the deployment", &err);
        return EXIT_INVALID;
    }
    kvshard_plan *plan = NULL;
    if (kvshard_deployment_plan(&plan, deployment, &err) != KVSHARD_OK) {
        print_error("cannot plan the deployment", &err);
        kvshard_deployment_free(deployment);
        return EXIT_INVALID;
    }
    kvshard_options options = KVSHARD_OPTIONS_INIT; /* settled: block_size, max_seqs set */
    kvshard_plan_options(&options, plan);
    kvshard_deployment_free(deployment); /* the plan keeps what it needs */

    int status = 0;
    kvshard_rank_position at = KVSHARD_RANK_POSITION_INIT;
    if (kvshard_plan_locate(&at, plan, rank) != KVSHARD_OK) {
        fprintf(stderr, "engine_init: rank %" PRIu32 " is outside world_size %" PRIu32 "\n", rank,
                options.world_size);
        kvshard_plan_free(plan);
        return EXIT_USAGE;
    }
    const uint32_t plan_rank = at.plan_rank; /* stage x T + TP rank */

    /* 2. Warnings: printed; fatal with --werror. */
    size_t nwarn = kvshard_plan_warning_count(plan);
    for (size_t i = 0; i < nwarn; i++) {
        kvshard_warning_code code;
        const char *message;
        if (kvshard_plan_warning(&code, &message, plan, i) == KVSHARD_OK)
            printf("rank %" PRIu32 ": warning %s: %s\n", rank, kvshard_warning_name(code), message);
    }
    if (werror && nwarn > 0) {
        fprintf(stderr, "engine_init: %zu plan warning(s) and --werror\n", nwarn);
        kvshard_plan_free(plan);
        return EXIT_INVALID;
    }

    /* 3. Measure, then size the blocks from the measurement: the free
     * device memory after the weights (here the deployment's
     * memory_per_rank stands in for it), through kvshard_plan_blocks_for().
     * A multi-rank engine then takes the minimum over its ranks
     * (MPI_Allreduce with MPI_MIN, as examples/mpi_init.c does) before it
     * allocates anything; this one rank has no one to agree with. */
    kvshard_rank_memory mem = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&mem, plan, plan_rank);
    kvshard_capacity cap = KVSHARD_CAPACITY_INIT;
    kvshard_plan_capacity(&cap, plan);
    uint64_t full_blocks = 0;
    int has_blocks = 0;
    /* The rows each state layer allocates: without a measurement, the
     * max_seqs whose state the plan reserves; with one, the blocks' answer
     * (max_seqs under kvshard, the engine's own slots under xllm and
     * sglang, none under vllm, whose state pages sit in the KV pool). */
    uint64_t state_rows = options.max_seqs;
    const uint64_t measured = options.memory_per_rank; /* stand-in for a measurement */
    if (measured && mem.bytes_per_block) {
        kvshard_budget budget = KVSHARD_BUDGET_INIT;
        kvshard_blocks fit = KVSHARD_BLOCKS_INIT;
        budget.memory_per_rank = measured;
        if (kvshard_plan_blocks_for(&fit, plan, plan_rank, &budget, &err) != KVSHARD_OK) {
            print_error("no block fits the measured memory", &err);
            kvshard_plan_free(plan);
            return EXIT_INVALID;
        }
        full_blocks = fit.num_blocks; /* after MPI_MIN over the ranks, in an engine */
        has_blocks = 1;
        state_rows = fit.has_state_slots ? fit.state_slots : 0; /* MPI_MIN too, in an engine */
        if (fit.has_max_seqs)
            printf("rank %" PRIu32 ": the blocks serve %" PRIu32 " sequences of %" PRIu32
                   " tokens at once\n",
                   rank, fit.max_seqs, options.context_length);
    }
    /* The log line names the blocks the rank allocates, not the plan's. */
    char line[512];
    if (has_blocks)
        kvshard_plan_describe_rank_blocks(line, sizeof line, plan, plan_rank, full_blocks);
    else
        kvshard_plan_describe_rank(line, sizeof line, plan, plan_rank);
    printf("rank %" PRIu32 ": %s\n", rank, line);
    uint64_t blocks = has_blocks && full_blocks < DEMO_BLOCKS ? full_blocks : DEMO_BLOCKS;
    uint64_t seqs = state_rows < DEMO_SEQS ? state_rows : DEMO_SEQS;
    const uint64_t bs = cap.block_size;
    printf("rank %" PRIu32 ": %" PRIu64 " blocks of %" PRIu64
           " tokens measured; allocating %" PRIu64 " blocks and state for %" PRIu64
           " of %" PRIu64 " sequences (scaled down)\n",
           rank, full_blocks, bs, blocks, seqs, state_rows);

    /* 4. Allocate layer by layer: no arithmetic of the engine's own, the
     * storage query says what this rank holds of each layer (nothing for a
     * layer of another stage). */
    const uint32_t L = kvshard_plan_num_layers(plan);
    void **buffers = calloc(L, sizeof *buffers);
    int overflow = 0, failed = buffers == NULL;
    uint64_t total = 0;
    size_t kv_buffers = 0, state_buffers = 0;
    for (uint32_t layer = 0; layer < L && !failed && !overflow; layer++) {
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        kvshard_plan_layer_storage(&st, plan, plan_rank, layer);
        uint64_t bytes = 0;
        if (st.stores_kv) {
            /* The elements of a token: heads and head dims (GQA) or the
             * latent (MLA), in the KV cache dtype auto resolved to. */
            kvshard_layer_kv_geometry geo = KVSHARD_LAYER_KV_GEOMETRY_INIT;
            if (kvshard_plan_layer_kv_geometry(&geo, plan, plan_rank, layer, &err) == KVSHARD_OK &&
                kv_buffers == 0)
                printf("rank %" PRIu32 ": KV in %s: %" PRIu32 " head(s) of K %" PRIu32
                       " + V %" PRIu32 ", latent %" PRIu32 " + rope %" PRIu32 ", index %" PRIu32
                       "\n",
                       rank, kvshard_dtype_name(geo.dtype), geo.kv_heads, geo.k_head_dim,
                       geo.v_head_dim, geo.kv_lora_rank, geo.qk_rope_head_dim,
                       geo.index_head_dim);
            bytes = mul3(blocks, bs, st.kv_bytes_per_token, &overflow);
            printf("rank %" PRIu32 ": layer %3" PRIu32 "  KV slot %2" PRId32 "  heads %" PRIu32
                   "+%" PRIu32 "  %6" PRIu64 " B/token  %8.2f MiB (full size %.2f GiB)\n",
                   rank, layer, st.kv_slot, st.kv_head_first, st.kv_head_count,
                   st.kv_bytes_per_token, mib(bytes),
                   gib(mul3(full_blocks, bs, st.kv_bytes_per_token, &overflow)));
            kv_buffers++;
        }
        if (st.state_bytes_per_seq) {
            bytes += mul3(seqs, st.state_bytes_per_seq, 1, &overflow);
            state_buffers++;
        }
        /* The first state layer's tensors, as an engine shapes them. */
        kvshard_state_tensor shapes[KVSHARD_MAX_STATE_TENSORS] = {
            KVSHARD_STATE_TENSOR_INIT, KVSHARD_STATE_TENSOR_INIT, KVSHARD_STATE_TENSOR_INIT,
            KVSHARD_STATE_TENSOR_INIT};
        size_t nshapes = 0;
        if (state_buffers == 1 && st.state_slot == 0 &&
            kvshard_plan_layer_state_shapes(shapes, KVSHARD_MAX_STATE_TENSORS, &nshapes, plan,
                                            plan_rank, layer, &err) == KVSHARD_OK) {
            for (size_t i = 0; i < nshapes; i++) {
                char dims[96] = "";
                size_t used = 0;
                for (uint32_t d = 0; d < shapes[i].ndim && used < sizeof dims; d++)
                    used += (size_t)snprintf(dims + used, sizeof dims - used, "%s%" PRIu64,
                                             d ? " x " : "", shapes[i].dims[d]);
                printf("rank %" PRIu32 ": layer %3" PRIu32 "  state %s [%s] %s, %" PRIu64
                       " B/sequence\n",
                       rank, layer, shapes[i].name, dims, kvshard_dtype_name(shapes[i].dtype),
                       shapes[i].bytes);
            }
        }
        buffers[layer] = overflow ? NULL : alloc_buffer(bytes, &failed);
        total += bytes;
    }
    uint64_t scratch_bytes = mul3(blocks, bs, mem.scratch_bytes_per_token, &overflow);
    uint64_t draft_bytes = mul3(blocks, bs, mem.draft_bytes_per_token, &overflow);
    if (overflow) {
        fprintf(stderr, "engine_init: a buffer size does not fit in 64 bits\n");
        status = EXIT_INVALID;
    }
    void *scratch = failed || overflow ? NULL : alloc_buffer(scratch_bytes, &failed);
    void *draft = failed || overflow ? NULL : alloc_buffer(draft_bytes, &failed);
    if (failed) {
        fprintf(stderr, "engine_init: out of host memory\n");
        status = EXIT_NOMEM;
    } else if (!overflow) {
        total += scratch_bytes + draft_bytes;
        printf("rank %" PRIu32 ": scratch %.2f MiB (%" PRIu64 " B/token), draft %.2f MiB (%" PRIu64
               " B/token)\n",
               rank, mib(scratch_bytes), mem.scratch_bytes_per_token, mib(draft_bytes),
               mem.draft_bytes_per_token);
        printf("rank %" PRIu32 ": allocated %.2f MiB: %zu KV buffer(s), %zu layer(s) with "
               "per-sequence state (%" PRIu64 " B/sequence in all), scratch, draft\n",
               rank, mib(total), kv_buffers, state_buffers, mem.state_bytes_per_seq);
    }

    for (uint32_t layer = 0; buffers && layer < L; layer++)
        free(buffers[layer]);
    free(buffers);
    free(scratch);
    free(draft);
    kvshard_plan_free(plan);
    return status;
}
