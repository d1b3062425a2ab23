/* engine_init: what an inference engine does with kvshard when one rank starts.
 *
 *   engine_init DEPLOYMENT.yaml RANK [--werror]
 *
 * RANK is the process's global rank, 0 .. world_size-1. Ranks are laid out
 * with tensor parallelism innermost, so the attention TP rank is
 * RANK % attn_tp_size (every data/context-parallel replica has the same plan).
 *
 * The program loads the deployment, builds the plan, reports its warnings
 * (--werror makes any warning fatal), then allocates what the rank's KV cache
 * needs: one buffer per full-attention layer the rank stores, a scratch
 * buffer, a draft-layer buffer and the per-sequence state of the linear and
 * sliding-window layers. To run on a machine without accelerator memory the
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
    kvshard_options options = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&options, deployment);
    kvshard_deployment_free(deployment); /* the plan keeps what it needs */

    int status = 0;
    const uint32_t T = kvshard_plan_attn_tp_size(plan);
    if (rank >= options.world_size) {
        fprintf(stderr, "engine_init: rank %" PRIu32 " is outside world_size %" PRIu32 "\n", rank,
                options.world_size);
        kvshard_plan_free(plan);
        return EXIT_USAGE;
    }
    const uint32_t tp_rank = rank % T;
    uint32_t split_rank = 0, split_group = 0;
    kvshard_plan_split_position(&split_rank, &split_group, plan, tp_rank);
    printf("rank %" PRIu32 ": kvshard %s, %s, tp_rank %" PRIu32 " of %" PRIu32
           ", split group %" PRIu32 ", split rank %" PRIu32 " of %" PRIu32 "\n",
           rank, kvshard_version(), path, tp_rank, T, split_group, split_rank,
           kvshard_plan_effective_split_size(plan));
    printf("rank %" PRIu32 ": plan digest %016" PRIx64 "\n", rank, kvshard_plan_digest(plan));

    /* 2. Warnings: printed; fatal with --werror. */
    size_t nwarn = kvshard_plan_warning_count(plan);
    for (size_t i = 0; i < nwarn; i++) {
        kvshard_warning_code code;
        const char *message;
        if (kvshard_plan_warning(&code, &message, plan, i) == KVSHARD_OK)
            printf("rank %" PRIu32 ": warning %s: %s\n", rank, kvshard_warning_name(code),
                   message);
    }
    if (werror && nwarn > 0) {
        fprintf(stderr, "engine_init: %zu plan warning(s) and --werror\n", nwarn);
        kvshard_plan_free(plan);
        return EXIT_INVALID;
    }

    /* 3. What this rank stores. */
    const uint32_t *layers = NULL;
    size_t owned = 0;
    kvshard_plan_rank_layers(&layers, &owned, plan, tp_rank);
    kvshard_rank_memory mem = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&mem, plan, tp_rank);
    kvshard_capacity cap = KVSHARD_CAPACITY_INIT;
    kvshard_plan_capacity(&cap, plan);

    printf("rank %" PRIu32 ": stores the KV of %zu full-attention layer(s):", rank, owned);
    for (size_t i = 0; i < owned; i++)
        printf(" %" PRIu32, layers[i]);
    printf("\n");

    /* Every stored layer has the same per-token size on one rank. */
    uint64_t layer_bytes_per_token = owned ? mem.kv_bytes_per_token / owned : 0;
    if (owned && layer_bytes_per_token * owned != mem.kv_bytes_per_token) {
        fprintf(stderr,
                "engine_init: kv_bytes_per_token %" PRIu64 " is not a multiple of %zu layers\n",
                mem.kv_bytes_per_token, owned);
        kvshard_plan_free(plan);
        return EXIT_INVALID;
    }

    /* All ranks allocate the same block count: the capacity's minimum. */
    uint64_t full_blocks = cap.has_num_blocks ? cap.num_blocks : 0;
    uint64_t blocks = cap.has_num_blocks && full_blocks < DEMO_BLOCKS ? full_blocks : DEMO_BLOCKS;
    uint64_t seqs = options.max_seqs < DEMO_SEQS ? options.max_seqs : DEMO_SEQS;
    const uint64_t bs = cap.block_size;
    if (cap.has_num_blocks)
        printf("rank %" PRIu32 ": capacity %" PRIu64 " blocks x %" PRIu64 " tokens; allocating "
               "%" PRIu64 " blocks and state for %" PRIu64 " of %" PRIu32
               " sequences (scaled down for a CPU-only host)\n",
               rank, full_blocks, bs, blocks, seqs, options.max_seqs);
    else
        printf("rank %" PRIu32 ": no memory_per_rank, so no capacity; allocating %" PRIu64
               " blocks of %" PRIu64 " tokens and state for %" PRIu64 " sequences\n",
               rank, blocks, bs, seqs);

    int overflow = 0, failed = 0;
    uint64_t layer_bytes = mul3(blocks, bs, layer_bytes_per_token, &overflow);
    uint64_t layer_full = mul3(full_blocks, bs, layer_bytes_per_token, &overflow);
    uint64_t scratch_bytes = mul3(blocks, bs, mem.scratch_bytes_per_token, &overflow);
    uint64_t draft_bytes = mul3(blocks, bs, mem.draft_bytes_per_token, &overflow);
    uint64_t state_bytes = mul3(seqs, mem.state_bytes_per_seq, 1, &overflow);
    if (overflow) {
        fprintf(stderr, "engine_init: a buffer size does not fit in 64 bits\n");
        kvshard_plan_free(plan);
        return EXIT_INVALID;
    }

    /* 4. Allocate: one KV buffer per stored layer, then scratch, draft, state. */
    void **kv = owned ? calloc(owned, sizeof *kv) : NULL;
    if (owned && !kv)
        failed = 1;
    uint64_t total = 0;
    for (size_t i = 0; i < owned && !failed; i++) {
        kv[i] = alloc_buffer(layer_bytes, &failed);
        if (failed)
            break;
        total += layer_bytes;
        printf("rank %" PRIu32 ": layer %3" PRIu32 "  KV buffer %8.2f MiB  (%" PRIu64
               " B/token; full size %.2f GiB)\n",
               rank, layers[i], mib(layer_bytes), layer_bytes_per_token, gib(layer_full));
    }
    void *scratch = failed ? NULL : alloc_buffer(scratch_bytes, &failed);
    void *draft = failed ? NULL : alloc_buffer(draft_bytes, &failed);
    void *state = failed ? NULL : alloc_buffer(state_bytes, &failed);
    if (failed) {
        fprintf(stderr, "engine_init: out of host memory\n");
        status = EXIT_NOMEM;
    } else {
        total += scratch_bytes + draft_bytes + state_bytes;
        printf("rank %" PRIu32 ": scratch buffer %8.2f MiB  (%" PRIu64 " B/token)\n", rank,
               mib(scratch_bytes), mem.scratch_bytes_per_token);
        if (draft_bytes)
            printf("rank %" PRIu32 ": draft buffer   %8.2f MiB  (%" PRIu64 " B/token)\n", rank,
                   mib(draft_bytes), mem.draft_bytes_per_token);
        printf("rank %" PRIu32 ": state buffer   %8.2f MiB  (%" PRIu64 " B/sequence)\n", rank,
               mib(state_bytes), mem.state_bytes_per_seq);
        printf("rank %" PRIu32 ": allocated %.2f MiB in %zu KV buffer(s) + scratch + draft + "
               "state; bytes per block %" PRIu64 "\n",
               rank, mib(total), owned, mem.bytes_per_block);
    }

    for (size_t i = 0; kv && i < owned; i++)
        free(kv[i]);
    free(kv);
    free(scratch);
    free(draft);
    free(state);
    kvshard_plan_free(plan);
    return status;
}
