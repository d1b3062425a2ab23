// engine_init_cxx: one rank's start-up, as engine_init.c, through the C++
// wrappers of kvshard.hpp.
//
//   engine_init_cxx DEPLOYMENT.yaml RANK [--werror] [--FLAG=VALUE ...]
//
// RANK is the process's global rank, 0 .. world_size-1; Plan::locate() gives
// its stage and the plan rank every per-rank query takes. Other --FLAG=VALUE
// arguments are engine flags applied over the deployment file
// (--layerwise_split_size=4, --memory_per_rank=40GiB, --flagfile=FILE).
//
// The program plans the deployment, prints the rank's log line and the
// plan's warnings (--werror makes any warning fatal), then allocates one KV
// buffer per layer the rank stores, sized from that layer's own figures,
// plus scratch, draft and state buffers. To run on a host without
// accelerator memory it allocates at most 64 blocks and state for 4
// sequences, and prints the full-size figures next to them.
//
// Exit status: 0 success, 1 the deployment or plan is invalid (or a warning
// with --werror), 2 bad usage, 3 out of host memory.
#include "kvshard/kvshard.hpp"

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

namespace
{

enum { exit_invalid = 1, exit_usage = 2, exit_nomem = 3 };

constexpr std::uint64_t demo_blocks = 64;
constexpr std::uint64_t demo_seqs = 4;

double mib(std::uint64_t bytes)
{
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

double gib(std::uint64_t bytes)
{
    return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

bool parse_rank(std::uint32_t &out, const std::string &text)
{
    if (text.empty() || text.size() > 5 ||
        text.find_first_not_of("0123456789") != std::string::npos)
        return false;
    const unsigned long v = std::stoul(text);
    if (v >= KVSHARD_MAX_RANKS)
        return false;
    out = static_cast<std::uint32_t>(v);
    return true;
}

// a * b, or false when the product does not fit 64 bits.
bool mul(std::uint64_t &out, std::uint64_t a, std::uint64_t b)
{
    if (b != 0 && a > std::numeric_limits<std::uint64_t>::max() / b)
        return false;
    out = a * b;
    return true;
}

// Host memory standing in for device memory; empty for 0 bytes.
std::unique_ptr<unsigned char[]> allocate(std::uint64_t bytes)
{
    if (bytes == 0)
        return nullptr;
    if (bytes > std::numeric_limits<std::size_t>::max())
        throw std::bad_alloc();
    // Left uninitialised, as device memory would be: nothing is touched.
    return std::unique_ptr<unsigned char[]>(new unsigned char[static_cast<std::size_t>(bytes)]);
}

struct Buffer {
    std::uint32_t layer;
    std::uint64_t bytes_per_token;
    std::uint64_t full_bytes;
    std::uint64_t bytes;
    std::unique_ptr<unsigned char[]> data;
};

int run(const std::string &path, std::uint32_t rank, bool werror,
        const std::vector<std::string> &flags)
{
    // 1. Deployment, engine flags and plan. Any error is a kvshard::Error
    //    with the file, line and column of the offending text.
    kvshard::Deployment deployment = kvshard::Deployment::load_file(path);
    if (!flags.empty())
        deployment.apply_args(flags);
    const kvshard::Plan plan = deployment.plan();
    const kvshard::Options options = plan.options();

    if (rank >= options->world_size) {
        std::fprintf(stderr,
                     "engine_init_cxx: rank %" PRIu32 " is outside world_size %" PRIu32 "\n", rank,
                     options->world_size);
        return exit_usage;
    }
    const std::uint32_t plan_rank = plan.locate(rank).plan_rank; // stage x T + TP rank
    std::printf("rank %" PRIu32 ": plan digest %016" PRIx64 ", layout digest %016" PRIx64 "\n",
                rank, plan.digest(), plan.layout_digest());

    // 2. Warnings: printed; fatal with --werror.
    const std::vector<kvshard::Warning> warnings = plan.warnings();
    for (const kvshard::Warning &w : warnings)
        std::printf("rank %" PRIu32 ": warning %s: %s\n", rank, w.name(), w.message.c_str());
    if (werror && !warnings.empty()) {
        std::fprintf(stderr, "engine_init_cxx: %zu plan warning(s) and --werror\n",
                     warnings.size());
        return exit_invalid;
    }

    // 3. What this rank stores.
    const kvshard::LayerSpan layers = plan.rank_layers(plan_rank);
    const kvshard_rank_memory mem = plan.rank_memory(plan_rank);
    const kvshard_capacity cap = plan.capacity();
    std::printf("rank %" PRIu32 ": stores the KV of %zu full-attention layer(s):", rank,
                layers.size());
    for (std::uint32_t layer : layers)
        std::printf(" %" PRIu32, layer);
    std::printf("\n");

    // Measure, then size: the free memory after the weights (the
    // deployment's memory_per_rank stands in for the measurement) gives the
    // blocks; an engine of many ranks takes their minimum (MPI_MIN) before
    // it allocates, and logs that count.
    const std::uint64_t measured = options->memory_per_rank;
    const bool has_blocks = measured > 0 && mem.bytes_per_block > 0;
    kvshard_blocks fit = KVSHARD_BLOCKS_INIT;
    if (has_blocks)
        fit = plan.blocks_for(plan_rank, kvshard::make_budget(measured));
    const std::uint64_t full_blocks = has_blocks ? fit.num_blocks : 0;
    // The rows each state layer allocates: the blocks' answer once measured
    // (max_seqs under kvshard, the engine's own slots under xllm and sglang,
    // none under vllm, whose state pages sit in the KV pool), else the
    // max_seqs whose state the plan reserves. MPI_MIN too, in an engine.
    const std::uint64_t state_rows =
        has_blocks ? (fit.has_state_slots ? fit.state_slots : 0) : options->max_seqs;
    std::printf("rank %" PRIu32 ": %s\n", rank,
                (has_blocks ? plan.describe_rank(plan_rank, full_blocks)
                            : plan.describe_rank(plan_rank))
                    .c_str());
    const std::uint64_t blocks = has_blocks && full_blocks < demo_blocks ? full_blocks : demo_blocks;
    const std::uint64_t seqs = state_rows < demo_seqs ? state_rows : demo_seqs;
    const std::uint64_t block_tokens = cap.block_size;
    if (has_blocks)
        std::printf("rank %" PRIu32 ": capacity %" PRIu64 " blocks x %" PRIu64
                    " tokens; allocating %" PRIu64 " blocks and state for %" PRIu64 " of %" PRIu64
                    " sequences (scaled down for a CPU-only host)\n",
                    rank, full_blocks, block_tokens, blocks, seqs, state_rows);
    else
        std::printf("rank %" PRIu32 ": no memory_per_rank, so no capacity; allocating %" PRIu64
                    " blocks of %" PRIu64 " tokens and state for %" PRIu64 " sequences\n",
                    rank, blocks, block_tokens, seqs);

    // 4. One KV buffer per stored layer, sized from the layer's own bytes per
    //    token; then scratch, draft and state.
    std::uint64_t block_tokens_demo = 0, block_tokens_full = 0;
    bool fits = mul(block_tokens_demo, blocks, block_tokens) &&
                mul(block_tokens_full, full_blocks, block_tokens);
    std::vector<Buffer> kv;
    kv.reserve(layers.size());
    for (std::uint32_t layer : layers) {
        const kvshard_layer_storage st = plan.layer_storage(plan_rank, layer);
        Buffer b{layer, st.kv_bytes_per_token, 0, 0, nullptr};
        fits = fits && mul(b.bytes, block_tokens_demo, st.kv_bytes_per_token) &&
               mul(b.full_bytes, block_tokens_full, st.kv_bytes_per_token);
        kv.push_back(std::move(b));
    }
    std::uint64_t scratch_bytes = 0, draft_bytes = 0, state_bytes = 0;
    fits = fits && mul(scratch_bytes, block_tokens_demo, mem.scratch_bytes_per_token) &&
           mul(draft_bytes, block_tokens_demo, mem.draft_bytes_per_token) &&
           mul(state_bytes, seqs, mem.state_bytes_per_seq);
    if (!fits) {
        std::fprintf(stderr, "engine_init_cxx: a buffer size does not fit in 64 bits\n");
        return exit_invalid;
    }

    std::uint64_t total = 0;
    for (Buffer &b : kv) {
        b.data = allocate(b.bytes);
        total += b.bytes;
        std::printf("rank %" PRIu32 ": layer %3" PRIu32 "  KV buffer %8.2f MiB  (%" PRIu64
                    " B/token; full size %.2f GiB)\n",
                    rank, b.layer, mib(b.bytes), b.bytes_per_token, gib(b.full_bytes));
    }
    const auto scratch = allocate(scratch_bytes);
    const auto draft = allocate(draft_bytes);
    const auto state = allocate(state_bytes);
    total += scratch_bytes + draft_bytes + state_bytes;
    std::printf("rank %" PRIu32 ": scratch buffer %8.2f MiB  (%" PRIu64 " B/token)\n", rank,
                mib(scratch_bytes), mem.scratch_bytes_per_token);
    if (draft_bytes != 0)
        std::printf("rank %" PRIu32 ": draft buffer   %8.2f MiB  (%" PRIu64 " B/token)\n", rank,
                    mib(draft_bytes), mem.draft_bytes_per_token);
    std::printf("rank %" PRIu32 ": state buffer   %8.2f MiB  (%" PRIu64 " B/sequence)\n", rank,
                mib(state_bytes), mem.state_bytes_per_seq);
    std::printf("rank %" PRIu32 ": allocated %.2f MiB in %zu KV buffer(s) + scratch + draft + "
                "state; bytes per block %" PRIu64 "\n",
                rank, mib(total), kv.size(), mem.bytes_per_block);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::string path, rank_text;
    bool werror = false, bad_usage = false;
    std::vector<std::string> flags;
    for (int i = 1; i < argc; i++) {
        const std::string arg = argv[i];
        if (arg == "--werror")
            werror = true;
        else if (arg.rfind("--", 0) == 0)
            flags.push_back(arg);
        else if (path.empty())
            path = arg;
        else if (rank_text.empty())
            rank_text = arg;
        else
            bad_usage = true;
    }
    std::uint32_t rank = 0;
    if (bad_usage || path.empty() || !parse_rank(rank, rank_text)) {
        std::fprintf(stderr,
                     "usage: engine_init_cxx DEPLOYMENT.yaml RANK [--werror] [--FLAG=VALUE ...]\n");
        return exit_usage;
    }

    try {
        return run(path, rank, werror, flags);
    } catch (const kvshard::Error &e) {
        std::fprintf(stderr, "engine_init_cxx: %s (%s)\n", e.what(), e.code_name());
        return exit_invalid;
    } catch (const std::bad_alloc &) {
        std::fprintf(stderr, "engine_init_cxx: out of host memory\n");
        return exit_nomem;
    }
}
