// The C++ wrappers of kvshard.hpp against the seed deployment
// (examples/qwen3_5_35b_a3b_tp4.yaml: Qwen3.5-35B-A3B, TP 4, split 2, 20 GiB
// per rank, 128 sequences, blocks of 16 tokens).
//
// Expected figures, worked out from the model config and the rules:
// - KV layers are every fourth layer (3, 7, ..., 39), 10 in all; under the
//   ordinal rule with S_eff = 2, split rank 0 owns KV ordinals 0, 2, 4, 6, 8,
//   i.e. layers 3 11 19 27 35, and split rank 1 layers 7 15 23 31 39.
// - KV per layer per token on one rank: 2 KV heads over T = 4 ranks leaves one
//   head per rank; K and V of 256 bfloat16 values: 2 * 256 * 2 = 1024 B.
//   Five stored layers: 5120 B/token; one scratch layer: 1024 B/token.
// - Bytes per block: 16 * (5120 + 1024) = 98304.
// - GDN state per layer per sequence on one rank (Hk 16, Hv 32, dk = dv = 128,
//   kernel 4, bfloat16 conv, float32 state): conv 2 * (2*128*16/4 + 128*32/4)
//   * 3 = 12288, temporal 4 * (32/4) * 128 * 128 = 524288; 30 linear layers:
//   30 * 536576 = 16097280 B/sequence.
// - Blocks: 20 GiB - 128 * 16097280 = 21474836480 - 2060451840 = 19414384640
//   bytes, / 98304 = 197493 (rounded down).
// - Without the split: 10 layers * 1024 = 10240 B/token, 163840 B/block,
//   19414384640 / 163840 = 118496 blocks.
#include "kvshard/explore.hpp"
#include "kvshard/kvshard.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#ifndef KVSHARD_EXAMPLES
#error "KVSHARD_EXAMPLES must name the examples directory"
#endif

namespace
{

int failures = 0;

void report(bool ok, const char *expr, const char *file, int line)
{
    if (!ok) {
        std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
        failures++;
    }
}

// Unlike assert(), stays on in release builds.
#define CHECK(expr) report(static_cast<bool>(expr), #expr, __FILE__, __LINE__)

// Runs `body`, which must throw kvshard::Error; returns the error (code 0
// when nothing or something else was thrown).
template <class Fn> kvshard::Error expect_error(Fn &&body, const char *what)
{
    try {
        body();
    } catch (const kvshard::Error &e) {
        return e;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s: threw something other than kvshard::Error: %s\n", what, e.what());
        failures++;
        return kvshard::Error(0, "wrong exception");
    }
    std::fprintf(stderr, "%s: did not throw\n", what);
    failures++;
    return kvshard::Error(0, "no exception");
}

const std::string seed = std::string(KVSHARD_EXAMPLES) + "/qwen3_5_35b_a3b_tp4.yaml";
const std::vector<std::uint32_t> rank0_layers = {3, 11, 19, 27, 35};
const std::vector<std::uint32_t> rank1_layers = {7, 15, 23, 31, 39};

void test_seed_figures()
{
    kvshard::Deployment deployment = kvshard::Deployment::load_file(seed);
    kvshard::Plan plan = deployment.plan();

    CHECK(plan.attn_tp_size() == 4);
    CHECK(plan.effective_split_size() == 2);
    CHECK(plan.replication_factor() == 2);
    CHECK(plan.num_layers() == 40);
    CHECK(plan.state_kind() == KVSHARD_STATE_GDN);
    CHECK(plan.state_dtype() == KVSHARD_DTYPE_FP32);
    CHECK(plan.warning_count() == 0);
    CHECK(plan.warnings().empty());

    for (std::uint32_t rank = 0; rank < 4; rank++) {
        const kvshard::SplitPosition pos = plan.split_position(rank);
        CHECK(pos.split_rank == rank % 2);
        CHECK(pos.split_group == rank / 2);

        const kvshard::LayerSpan layers = plan.rank_layers(rank);
        CHECK(layers.to_vector() == (rank % 2 == 0 ? rank0_layers : rank1_layers));

        const kvshard_rank_memory mem = plan.rank_memory(rank);
        CHECK(mem.kv_bytes_per_token == 5120);
        CHECK(mem.scratch_bytes_per_token == 1024);
        CHECK(mem.draft_bytes_per_token == 0);
        CHECK(mem.bytes_per_block == 98304);
        CHECK(mem.state_bytes_per_seq == 16097280);
        CHECK(mem.has_num_blocks);
        CHECK(mem.num_blocks == 197493);
    }

    // The span view: iteration, indexing, bounds.
    const kvshard::LayerSpan span = plan.rank_layers(0);
    CHECK(span.size() == 5 && !span.empty());
    CHECK(span[0] == 3 && span.at(4) == 35);
    std::uint32_t sum = 0;
    for (std::uint32_t layer : span)
        sum += layer;
    CHECK(sum == 3 + 11 + 19 + 27 + 35);
    bool out_of_range = false;
    try {
        static_cast<void>(span.at(5));
    } catch (const std::out_of_range &) {
        out_of_range = true;
    }
    CHECK(out_of_range);

    // Layer 3 is a KV layer of split rank 0, layer 7 of split rank 1, layer 0 linear.
    CHECK(plan.layer_owner(3) == 0);
    CHECK(plan.layer_owner(7) == 1);
    CHECK(plan.layer_owner(0) == KVSHARD_OWNER_ALL);
    CHECK(plan.layer_kind(3) == KVSHARD_LAYER_FULL_ATTENTION);
    CHECK(plan.layer_kind(0) == KVSHARD_LAYER_LINEAR_ATTENTION);
    CHECK(plan.owns(0, 3) && plan.stores_kv(0, 3));
    CHECK(!plan.owns(0, 7) && !plan.stores_kv(0, 7));
    CHECK(plan.owns(1, 7) && plan.stores_kv(3, 7));
    CHECK(plan.owns(0, 0) && !plan.stores_kv(0, 0)); // the state of a linear layer
    CHECK(!plan.owns(4, 3) && !plan.owns(0, 40));    // out of range: false

    // Layer 11 is rank 0's second stored layer; its one KV head is the union
    // of the split group's heads (ranks 0 and 1 hold head 0 each): head 0.
    const kvshard_layer_storage st = plan.layer_storage(0, 11);
    CHECK(st.kind == KVSHARD_LAYER_FULL_ATTENTION);
    CHECK(st.stores_kv);
    CHECK(st.kv_slot == 1);
    CHECK(st.state_slot == -1);
    CHECK(st.kv_bytes_per_token == 1024);
    CHECK(st.owner_plan_rank == 0);
    const kvshard_layer_storage st1 = plan.layer_storage(1, 11); // rank 1 receives it from 0
    CHECK(!st1.stores_kv && st1.kv_slot == -1 && st1.owner_plan_rank == 0);
    // Layer 4 is the fourth linear layer (0, 1, 2, 4): state slot 3.
    const kvshard_layer_storage lin = plan.layer_storage(2, 4);
    CHECK(lin.kind == KVSHARD_LAYER_LINEAR_ATTENTION && lin.state_slot == 3);
    CHECK(lin.state_bytes_per_seq == 536576);

    const kvshard_capacity cap = plan.capacity();
    CHECK(cap.block_size == 16);
    CHECK(cap.max_seqs == 128);
    CHECK(cap.memory_per_rank == 21474836480u);
    CHECK(cap.has_num_blocks && cap.num_blocks == 197493);
    CHECK(cap.max_tokens == 197493u * 16u);

    const kvshard_uniform uni = plan.uniform();
    CHECK(uni.kv_bytes_per_token == 10240);
    CHECK(uni.bytes_per_block == 163840);
    CHECK(uni.has_num_blocks && uni.num_blocks == 118496);

    // A measured budget: 1 GiB, 64 MiB reserved, nothing added per block and
    // no context length: 1073741824 - 67108864 - 128 * 16097280 < 0: not one
    // block fits. With 4 GiB: 4294967296 - 67108864 - 2060451840 = 2167406592
    // bytes, / 98304 = 22048 blocks exactly.
    const kvshard::Error small = expect_error(
        [&] { plan.blocks_for(0, kvshard::make_budget(1073741824u, 67108864u)); }, "blocks_for");
    CHECK(small.code() == KVSHARD_ENOBLOCK);
    const kvshard_blocks blocks =
        plan.blocks_for(kvshard::Plan::all_ranks, kvshard::make_budget(4294967296u, 67108864u));
    CHECK(blocks.num_blocks == 22048);
    CHECK(blocks.max_tokens == 22048u * 16u);

    // Digests agree with a second plan of the same deployment; the options
    // come back settled.
    kvshard::Plan again = kvshard::Deployment::load_file(seed).plan();
    CHECK(plan.digest() == again.digest());
    CHECK(plan.layout_digest() == again.layout_digest());
    CHECK(plan.digest() != plan.layout_digest());
    const kvshard::Options settled = plan.options();
    CHECK(settled->world_size == 4 && settled->layerwise_split_size == 2);
    CHECK(settled->ownership == KVSHARD_OWNERSHIP_ORDINAL);
    CHECK(settled->block_size == 16 && settled->max_seqs == 128);

    // Text outputs come back whole.
    const std::string line = plan.describe_rank(0);
    CHECK(line.find("[3 11 19 27 35]") != std::string::npos);
    CHECK(line.find("5120 B/token") != std::string::npos);
    CHECK(line.find("197493 blocks") != std::string::npos);
    // The measured blocks in the same line, and the buffer shapes: one KV
    // head of 256 per rank (2 heads over 4 ranks), the GDN state of layer 0
    // (2,048 conv channels by 3 columns in bf16, 8 x 128 x 128 in fp32).
    CHECK(plan.describe_rank(0, 1000).find(", 1000 blocks of 16, ") != std::string::npos);
    CHECK(plan.kv_cache_dtype() == KVSHARD_DTYPE_BF16);
    const kvshard_layer_kv_geometry geo = plan.layer_kv_geometry(0, 3);
    CHECK(geo.has_kv && geo.kv_heads == 1 && geo.k_head_dim == 256 && geo.v_head_dim == 256);
    const std::vector<kvshard_state_tensor> shapes = plan.layer_state_shapes(0, 0);
    CHECK(shapes.size() == 2 && shapes[0].dims[0] == 2048 && shapes[0].dims[1] == 3);
    CHECK(shapes[0].bytes == 12288 && shapes[1].bytes == 524288);
    CHECK(plan.layer_state_shapes(0, 3).empty());
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(plan.layout_digest()));
    CHECK(line.find(hex) != std::string::npos);
    const std::string json = kvshard::to_json(plan);
    CHECK(!json.empty() && json.front() == '{' && json.back() == '\n');
    CHECK(json.find("\"digest\"") != std::string::npos);
    const std::string text = kvshard::to_text(plan);
    CHECK(text.find("3 11 19 27 35") != std::string::npos);

    // The comparison: split sizes 1, 2 and 4 divide T = 4, three rules each.
    const kvshard::Comparison comparison = kvshard::Comparison::create(deployment);
    CHECK(comparison.size() == 9);
    CHECK(comparison[0].layerwise_split_size == 1);
    CHECK(comparison[3].layerwise_split_size == 2);
    CHECK(comparison[3].ownership == KVSHARD_OWNERSHIP_ORDINAL);
    CHECK(comparison[3].error == KVSHARD_OK && comparison[3].num_blocks == 197493);
    CHECK(comparison.rows().size() == 9);
    CHECK(comparison.recommended() < comparison.size());
    const kvshard::Error row = expect_error([&] { comparison.row(9); }, "row(9)");
    CHECK(row.code() == KVSHARD_EINVAL);
    CHECK(comparison.to_json().find('{') == 0);
    CHECK(!comparison.to_text().empty());
    // Without comm inputs: ranked by capacity, no row priced; asked to rank
    // by throughput, refused.
    CHECK(comparison.rank_by() == KVSHARD_RANK_CAPACITY && !comparison[3].comm->given);
    const kvshard::Error by_throughput = expect_error(
        [&] {
            (void)kvshard::Comparison::create(
                deployment, kvshard::make_compare_options(false, KVSHARD_RANK_THROUGHPUT));
        },
        "create(rank throughput)");
    CHECK(by_throughput.code() == KVSHARD_EMISSING);

    // The deployment's model, borrowed.
    const kvshard::ModelView model = deployment.model();
    CHECK(model.num_layers() == 40);
    CHECK(model.count(KVSHARD_LAYER_FULL_ATTENTION) == 10);
    CHECK(model.count(KVSHARD_LAYER_LINEAR_ATTENTION) == 30);
    CHECK(model.num_draft_layers() == 1);
    CHECK(model.type() == "qwen3_5_moe");
    CHECK(model.state_kind() == KVSHARD_STATE_GDN);
}

void test_overrides()
{
    // Overrides by key and by flag: ownership=global gives split rank 0 the
    // even layer indices, and the seed's KV layers are all odd, so split rank
    // 0 owns nothing; without the split every rank stores all 10 layers.
    kvshard::Deployment deployment = kvshard::Deployment::load_file(seed);
    deployment.set("ownership", "global");
    kvshard::Plan global = deployment.plan();
    CHECK(global.rank_layers(0).empty());
    CHECK(global.has_warning(KVSHARD_WARN_RANK_OWNS_NOTHING));
    CHECK(global.warning_count() >= 1);
    bool named = false;
    for (const kvshard::Warning &w : global.warnings())
        named = named || std::string(w.name()) == "rank_owns_nothing";
    CHECK(named);

    deployment.apply_args({"--enable_layerwise_split=false", "--no_such_flag=1"},
                          KVSHARD_ARGS_IGNORE_UNKNOWN);
    kvshard::Plan unsplit = deployment.plan();
    CHECK(unsplit.effective_split_size() == 1);
    CHECK(unsplit.rank_layers(0).size() == 10);
    CHECK(unsplit.rank_memory(0).kv_bytes_per_token == 10240);

    deployment.set("enable_layerwise_split", true).set("layerwise_split_size", 4);
    CHECK(deployment.options()->layerwise_split_size == 4);
    CHECK(deployment.plan().effective_split_size() == 4);
}

void test_errors()
{
    // A key indented by one space fits neither mapping: libyaml stops at
    // line 4, column 2.
    const std::string broken = "model: models/qwen3_5_35b_a3b.json\n"
                               "parallel:\n"
                               "  world_size: 4\n"
                               " dp_size: 1\n";
    const kvshard::Error syntax = expect_error(
        [&] {
            static_cast<void>(
                kvshard::Deployment::load_string(broken, "broken.yaml", KVSHARD_EXAMPLES));
        },
        "broken YAML");
    CHECK(syntax.code() == KVSHARD_ESYNTAX);
    CHECK(syntax.status() == KVSHARD_ESYNTAX);
    CHECK(syntax.line() == 4);
    CHECK(syntax.column() == 2);
    CHECK(std::string(syntax.source()) == "broken.yaml");
    CHECK(std::string(syntax.what()).rfind("broken.yaml:4:2: ", 0) == 0);
    CHECK(syntax.message()[0] != '\0');
    CHECK(syntax.record().code == KVSHARD_ESYNTAX);

    // A word for a number: line 3, column 15, byte offset 35 + 10 + 14 = 59.
    const std::string wrong_type = "model: models/qwen3_5_35b_a3b.json\n"
                                   "parallel:\n"
                                   "  world_size: four\n";
    const kvshard::Error type = expect_error(
        [&] {
            static_cast<void>(kvshard::Deployment::load_string(wrong_type, {}, KVSHARD_EXAMPLES));
        },
        "type");
    CHECK(type.code() == KVSHARD_ETYPE);
    CHECK(type.line() == 3);
    CHECK(type.column() == 15);
    CHECK(type.offset() == 59);
    CHECK(std::string(type.source()) == "<string>");

    // The error is a std::runtime_error too.
    bool caught = false;
    try {
        static_cast<void>(
            kvshard::Model::load_file(std::string(KVSHARD_EXAMPLES) + "/no/such/config.json"));
    } catch (const std::runtime_error &e) {
        caught = std::string(e.what()).find("config.json") != std::string::npos;
    }
    CHECK(caught);

    // Options: an unknown key and a bad value leave the options unchanged.
    kvshard::Options options;
    const kvshard::Error unknown =
        expect_error([&] { options.set("world_sise", 4); }, "unknown key");
    CHECK(unknown.code() == KVSHARD_EUNKNOWNKEY);
    const kvshard::Error range =
        expect_error([&] { options.set("world_size", "many", "--world_size"); }, "bad value");
    CHECK(range.code() == KVSHARD_ETYPE);
    CHECK(std::string(range.source()) == "--world_size");
    CHECK(options->world_size == 1);

    // Query errors carry the status.
    kvshard::Plan plan = kvshard::Deployment::load_file(seed).plan();
    CHECK(expect_error([&] { plan.rank_layers(4); }, "rank 4").code() == KVSHARD_ERANK);
    CHECK(expect_error([&] { plan.rank_memory(9); }, "rank 9").code() == KVSHARD_ERANK);
    CHECK(expect_error([&] { plan.layer_owner(40); }, "layer 40").code() == KVSHARD_ELAYER);
    CHECK(expect_error([&] { plan.layer_storage(0, 41); }, "storage").code() == KVSHARD_ELAYER);
    CHECK(expect_error([&] { plan.stage(1); }, "stage 1").code() == KVSHARD_ESTAGE);
    CHECK(expect_error([&] { plan.locate(4); }, "global rank 4").code() == KVSHARD_EGLOBALRANK);
    CHECK(expect_error([&] { plan.describe_rank(4); }, "describe").code() == KVSHARD_ERANK);

    // A plan error from a deployment points at the override that caused it.
    kvshard::Deployment deployment = kvshard::Deployment::load_file(seed);
    deployment.set("layerwise_split_size", "3", "command line --layerwise_split_size");
    const kvshard::Error split =
        expect_error([&] { static_cast<void>(deployment.plan()); }, "split 3");
    CHECK(split.code() == KVSHARD_ESPLIT);
    CHECK(std::string(split.source()) == "command line --layerwise_split_size");
}

void test_model_create()
{
    // Four GQA layers, full and sliding in turn: 8 KV heads of 64 bfloat16
    // values, K and V: 2 * 8 * 64 * 2 = 2048 B per layer per token. T = 1.
    // Full layers: 2 * 2048 = 4096 B/token. A sliding layer keeps
    // block_size * (ceil(128 / 16) + 1) = 144 tokens: 294912 B; two of them
    // 589824 B per sequence.
    kvshard_model_desc desc = KVSHARD_MODEL_DESC_INIT;
    desc.model_type = "toy";
    desc.num_attention_heads = 8;
    desc.num_kv_heads = 8;
    desc.head_dim = 64;
    desc.sliding_window = 128;
    const std::vector<kvshard_layer_kind> kinds = {
        KVSHARD_LAYER_FULL_ATTENTION, KVSHARD_LAYER_SLIDING_ATTENTION, KVSHARD_LAYER_FULL_ATTENTION,
        KVSHARD_LAYER_SLIDING_ATTENTION};
    kvshard::Model model = kvshard::Model::create(desc, kinds);
    CHECK(model.num_layers() == 4);
    CHECK(model.type() == "toy");
    CHECK(model.layer_kind(1) == KVSHARD_LAYER_SLIDING_ATTENTION);
    CHECK(expect_error([&] { model.layer_kind(4); }, "layer 4").code() == KVSHARD_ELAYER);

    kvshard::Plan plan = kvshard::Plan::create(model);
    const kvshard_rank_memory mem = plan.rank_memory(0);
    CHECK(mem.kv_bytes_per_token == 4096);
    CHECK(mem.state_bytes_per_seq == 589824);
    CHECK(!mem.has_num_blocks);
    CHECK((plan.rank_layers(0).to_vector() == std::vector<std::uint32_t>{0, 2}));

    kvshard::Options options;
    options.set("world_size", 2).set("memory_per_rank", "1GiB");
    CHECK(options->memory_per_rank == 1073741824u);
    kvshard::Comparison comparison = kvshard::Comparison::create(model, options);
    CHECK(comparison.size() == 6); // S = 1 and 2, three rules each

    // A deployment takes the model over; the Model is then empty.
    kvshard::Deployment deployment = kvshard::Deployment::create(std::move(model), options);
    CHECK(!model);
    CHECK(deployment.model().num_layers() == 4);
    CHECK(deployment.plan().attn_tp_size() == 2);

    // A missing figure.
    kvshard_model_desc incomplete = KVSHARD_MODEL_DESC_INIT;
    incomplete.num_layers = 2;
    const kvshard::Error missing = expect_error(
        [&] { static_cast<void>(kvshard::Model::create(incomplete)); }, "incomplete desc");
    CHECK(missing.code() == KVSHARD_EMISSING);
}

void test_moved_from()
{
    kvshard::Plan a = kvshard::Deployment::load_file(seed).plan();
    const std::uint64_t digest = a.digest();
    const kvshard::LayerSpan layers = a.rank_layers(0);

    kvshard::Plan b(std::move(a));
    CHECK(!a && b);
    CHECK(b.digest() == digest);
    // The span borrows from the C plan, which moved with it.
    CHECK(layers.to_vector() == rank0_layers);
    CHECK(expect_error([&] { a.digest(); }, "moved-from plan").code() == KVSHARD_EINVAL);
    CHECK(expect_error([&] { kvshard::to_json(a); }, "moved-from json").code() == KVSHARD_EINVAL);

    kvshard::Plan c;
    c = std::move(b); // into an empty plan
    CHECK(c.digest() == digest);
    c = kvshard::Deployment::load_file(seed).plan(); // over a live plan: the old one is freed
    CHECK(c.digest() == digest);
    a = std::move(c); // a moved-from object takes a new value
    CHECK(a.digest() == digest);

    kvshard::Deployment d = kvshard::Deployment::load_file(seed);
    kvshard::Deployment e = std::move(d);
    CHECK(expect_error([&] { static_cast<void>(d.plan()); }, "moved-from deployment").code() ==
          KVSHARD_EINVAL);
    CHECK(expect_error([&] { d.set("world_size", 2); }, "moved-from set").code() == KVSHARD_EINVAL);
    CHECK(expect_error([&] { d.model().num_layers(); }, "moved-from model").code() ==
          KVSHARD_EINVAL);

    kvshard::Comparison f = kvshard::Comparison::create(e);
    kvshard::Comparison g = std::move(f);
    CHECK(expect_error([&] { f.size(); }, "moved-from comparison").code() == KVSHARD_EINVAL);
    CHECK(g.size() == 9);

    kvshard::Model m =
        kvshard::Model::load_file(std::string(KVSHARD_EXAMPLES) + "/models/qwen3_5_35b_a3b.json");
    kvshard::Model n = std::move(m);
    CHECK(expect_error([&] { m.num_layers(); }, "moved-from model").code() == KVSHARD_EINVAL);
    CHECK(expect_error([&] { static_cast<void>(kvshard::Plan::create(m)); }, "plan of empty")
              .code() == KVSHARD_EINVAL);
    CHECK(n.num_layers() == 40);

    // Release and adopt round-trip through the C API.
    kvshard_plan *raw = a.release();
    CHECK(!a && raw != nullptr);
    kvshard::Plan adopted(raw);
    CHECK(adopted.digest() == digest);
    // All of a, b, c, d, f, m (empty) and the rest are destroyed here.
}

void test_threads()
{
    const kvshard::Plan plan = kvshard::Deployment::load_file(seed).plan();
    const std::uint64_t digest = plan.digest();
    const std::string json = kvshard::to_json(plan);
    std::vector<std::string> lines;
    for (std::uint32_t rank = 0; rank < 4; rank++)
        lines.push_back(plan.describe_rank(rank));

    std::atomic<int> disagreements{0};
    std::atomic<int> errors{0};
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 8; t++) {
        threads.emplace_back([&, t] {
            try {
                for (unsigned i = 0; i < 200; i++) {
                    const std::uint32_t rank = (t + i) % 4;
                    bool ok = plan.digest() == digest;
                    ok = ok && plan.rank_layers(rank).to_vector() ==
                                   (rank % 2 == 0 ? rank0_layers : rank1_layers);
                    const kvshard_rank_memory mem = plan.rank_memory(rank);
                    ok = ok && mem.kv_bytes_per_token == 5120 && mem.num_blocks == 197493 &&
                         mem.state_bytes_per_seq == 16097280;
                    for (std::uint32_t layer = 0; layer < 40; layer++) {
                        const bool kv = layer % 4 == 3 && (layer / 4) % 2 == rank % 2;
                        ok = ok && plan.stores_kv(rank, layer) == kv;
                        ok = ok && plan.owns(rank, layer) == (kv || layer % 4 != 3);
                    }
                    ok = ok && plan.describe_rank(rank) == lines[rank];
                    ok = ok && plan.capacity().num_blocks == 197493;
                    if (i % 40 == 0)
                        ok = ok && kvshard::to_json(plan) == json;
                    if (!ok)
                        disagreements++;
                }
            } catch (...) {
                errors++;
            }
        });
    }
    for (std::thread &th : threads)
        th.join();
    CHECK(disagreements.load() == 0);
    CHECK(errors.load() == 0);
}

// An engine profile's inputs are settings: Options::set() takes them by key
// beside the options, a copy keeps its own, and the profile's figures come
// by name. The seed under xllm, B = 20 GiB, its block 16 and split 2: 631
// state slots and 115127 blocks (tests/test_capacity.c works them out); with
// the prefix cache off, min(128 + 2, bound) = 130 slots.
void test_settings()
{
    kvshard::Model model = kvshard::Model::load_file(std::string(KVSHARD_EXAMPLES) +
                                                     "/models/qwen3_5_35b_a3b.json");
    kvshard::Options options;
    options.set("engine", "xllm")
        .set("world_size", 4)
        .set("memory_per_rank", "20GiB")
        .set("block_size", 16)
        .set("max_seqs", 128)
        .set("enable_layerwise_split", true)
        .set("layerwise_split_size", 2)
        .set("ownership", "ordinal");
    kvshard::Options copy = options;
    options.set("enable_prefix_cache", false);
    kvshard::Plan off = kvshard::Plan::create(model, options);
    kvshard::Plan on = kvshard::Plan::create(model, copy);
    CHECK(off.capacity_figure("state_slots").uint_value == 130);
    CHECK(on.capacity_figure("state_slots").uint_value == 631);
    CHECK(on.capacity().num_blocks == 115127);
    CHECK(on.capacity_figure("usable_blocks").uint_value == 115126);
    CHECK(on.capacity_figure("engine").type == KVSHARD_FIGURE_TEXT);
    kvshard::Error e = expect_error([&] { options.set("enable_prefix_cache", "maybe"); },
                                    "a setting of the wrong type");
    CHECK(e.code() == KVSHARD_ETYPE);
    e = expect_error([&] { on.capacity_figure("slots"); }, "an unknown figure");
    CHECK(e.code() == KVSHARD_EUNKNOWNKEY);
}

// DeepSeek-V4-Flash at TP 8 split 8 (examples/deepseek_v4_flash_tp8.yaml):
// split rank 2 owns six ratio-4 layers, 6 x (1024 / 4 + 132 / 4) = 1734
// B/token, and binds the blocks at 1986327; every rank keeps scratch for the
// largest layer, a ratio-128 one: its window 1024 x 16 x 9 = 147456 and its
// compressor state 128 x 2 x 512 x 4 = 524288 B/sequence.
void test_compressed()
{
    const std::string path = std::string(KVSHARD_EXAMPLES) + "/deepseek_v4_flash_tp8.yaml";
    kvshard::Deployment dep = kvshard::Deployment::load_file(path);
    kvshard::Plan plan = dep.plan();
    CHECK(std::string(kvshard::name(dep.model().attention())) == "compressed");
    kvshard_rank_memory r2 = plan.rank_memory(2);
    CHECK(r2.kv_bytes_per_token == 1734);
    CHECK(r2.scratch_bytes_per_seq == 147456 + 524288);
    CHECK(plan.capacity().num_blocks == 1986327);
    kvshard_layer_storage st = plan.layer_storage(0, 8);
    CHECK(st.kind == KVSHARD_LAYER_COMPRESSED);
    CHECK(st.compress_ratio == 4);
    CHECK(st.index_key);
    CHECK(st.stores_kv);
    CHECK(!plan.layer_storage(1, 8).stores_kv);
}

// The vllm profile's figures through the wrappers: Nemotron-3-Nano-30B-A3B
// on one GPU at 3,994,319,585 bytes, fp8 KV, float32 temporal state.
// - attention page per token 2 * 2 * 128 * 1 = 512 B; state page conv
//   2 * (64*64 + 2*8*128) * 3 = 36,864 plus temporal 4 * 64 * 64 * 128 =
//   2,097,152: 2,134,016 B; block 16 * ceil(2,134,016 / (16 * 512)) = 4,176.
// - groups of 6 (6 attention layers, 23 state layers): 1 + 4 = 5; blocks
//   floor(floor(3,994,319,585 / 2,138,112) / 6) = floor(1,868 / 6) = 311.
// - a request of 256,000 tokens: ceil(256,000 / 4,176) + 4 = 66 blocks;
//   concurrency 311 / 66; tokens int(311 / 66 * 256,000) = 1,206,303.
void test_engine_figures()
{
    kvshard::Deployment deployment = kvshard::Deployment::load_file(
        std::string(KVSHARD_EXAMPLES) + "/models/nemotron_3_nano_30b_a3b.json");
    deployment.apply_args({"--engine=vllm", "--engine_version=0.20.1rc1.dev91",
                           "--max-model-len", "256000", "--kv-cache-dtype", "fp8_e4m3",
                           "--mamba-ssm-cache-dtype", "float32", "--max-num-seqs", "128",
                           "--kv-cache-memory-bytes", "3994319585"},
                          0);
    kvshard::Plan plan = deployment.plan();
    CHECK(plan.engine_figure_count() == 30);
    CHECK(std::string(plan.engine_figure_at(0).name) == "name");
    CHECK(std::string(plan.engine_figure_at(0).text_value) == "vllm");
    CHECK(std::string(plan.engine_figure("version").text_value) == "0.20.1rc1.dev91");
    CHECK(plan.engine_figure("attention_block_size").uint_value == 4176);
    CHECK(plan.engine_figure("kv_cache_groups").uint_value == 5);
    CHECK(plan.engine_figure("num_gpu_blocks").uint_value == 311);
    CHECK(plan.engine_figure("gpu_kv_cache_tokens").uint_value == 1206303);
    kvshard_figure c = plan.engine_figure("max_concurrency");
    CHECK(c.type == KVSHARD_FIGURE_DOUBLE && c.double_value == 311.0 / 66.0);
    kvshard_figure d = plan.engine_figure("state_dtypes");
    CHECK(d.type == KVSHARD_FIGURE_TEXT_LIST && d.uint_value == 2);
    CHECK(std::string(d.text_value) == "bfloat16");
    CHECK(std::string(d.text_value + 9) == "float32");
    CHECK(plan.engine_figure("mamba_cache_mode").type == KVSHARD_FIGURE_TEXT);
    CHECK(plan.engine_figures().size() == 30);
    CHECK(plan.engine_figure("pp_partition").type == KVSHARD_FIGURE_JSON);
    CHECK(std::string(plan.engine_figure("pp_partition").text_value) == "[52]");
    CHECK(plan.capacity().block_size == 4176);
    kvshard::Error e = expect_error([&] { plan.engine_figure("num_blocks"); },
                                    "an engine figure the profile does not have");
    CHECK(e.code() == KVSHARD_EUNKNOWNKEY);
    e = expect_error([&] { plan.engine_figure_at(30); }, "an index past the figures");
    CHECK(e.code() == KVSHARD_EINVAL);
    // The kvshard profile predicts no engine.
    const kvshard::Plan seed_plan = kvshard::Deployment::load_file(seed).plan();
    CHECK(seed_plan.engine_figure_count() == 0);
    CHECK(seed_plan.engine_figures().empty());
}

// kvshard fit through the wrappers: Qwen3.5-35B-A3B on 4 GPUs of 32 GiB at
// 32,768 tokens, the weights given as 69,321,223,296 bytes of which
// 64,424,509,440 are experts.
// - Usable: floor(34,359,738,368 x 0.9) = 30,923,764,531 B; the reserve
//   max(1 GiB, 34,359,738,368 / 20) = 1,717,986,918 B.
// - T = 2, D = 2: the 4,896,713,856 B that are no experts split over T, the
//   experts over T x D = 4: ceil(4,896,713,856 / 2) + ceil(64,424,509,440 /
//   4) = 2,448,356,928 + 16,106,127,360 = 18,554,484,288 B a rank; budget
//   30,923,764,531 - 18,554,484,288 - 1,717,986,918 = 10,651,293,325 B.
// - At T = 2 a rank keeps one KV head of 10 layers: 10 x 2 x 256 x 2 =
//   10,240 B/token, 163,840 B a block of 16; GDN state 30 x (conv 2 x (2 x
//   128 x 16 / 2 + 128 x 32 / 2) x 3 + temporal 4 x 16 x 128 x 128) = 30 x
//   1,073,152 = 32,194,560 B a sequence. A sequence of 32,768 tokens takes
//   2,048 blocks: 32,194,560 + 2,048 x 163,840 = 367,738,880 B, so
//   floor(10,651,293,325 / 367,738,880) = 28 a replica, 56 in all.
// - At max_seqs 28: (10,651,293,325 - 28 x 32,194,560) / 163,840 = 59,508
//   blocks, 952,128 tokens a replica, 1,904,256 in all.
// - Of the 6 pairs (T, P) of 4 GPUs, P is limited to 1 stage (one node):
//   (1, 2), (1, 4) and (2, 2) are left out.
const std::string qwen35 = std::string(KVSHARD_EXAMPLES) + "/models/qwen3_5_35b_a3b.json";

kvshard::Options qwen35_device()
{
    kvshard::Options options;
    options.set("device_memory", "32GiB")
        .set("context_length", 32768)
        .set("weights_total", "69321223296")
        .set("weights_experts", "64424509440");
    return options;
}

void test_fit()
{
    const kvshard::Model model = kvshard::Model::load_file(qwen35);
    const kvshard::Fit fit =
        kvshard::Fit::create(model, qwen35_device(), kvshard::make_fit_options(4));
    CHECK(fit.size() == 12);
    CHECK(fit.fitting() == 12);
    CHECK(fit.rows().size() == 12);
    CHECK(fit.limited_layouts() == 3);
    CHECK(fit.not_admitted().empty());

    const kvshard_fit_row &best = fit.recommended();
    CHECK(&best == &fit[0] && fit.rows()[0] == &best);
    CHECK(best.rank == 1);
    CHECK(best.tp_size == 2 && best.pp_size == 1 && best.dp_size == 2);
    CHECK(best.layerwise_split_size == 1);
    CHECK(best.ownership == KVSHARD_OWNERSHIP_DEFAULT);
    CHECK(best.fits && best.reason == KVSHARD_OK && !best.no_sequence);
    CHECK(best.weights_per_rank == 18554484288u);
    CHECK(best.budget == 10651293325u);
    CHECK(best.binding_stage == 0);
    CHECK(best.num_blocks == 59508);
    CHECK(best.max_seqs == 28);
    CHECK(best.has_seqs && best.seqs_per_replica == 28 && best.seqs_total == 56);
    CHECK(best.tokens_per_replica == 952128 && best.tokens_total == 1904256);
    CHECK(best.warnings == 0);
    // Without comm inputs: ranked by capacity, no row priced.
    CHECK(fit.rank_by() == KVSHARD_RANK_CAPACITY && !best.comm.given);
    CHECK(kvshard::Fit::pp_partition(best).to_vector() == std::vector<std::uint32_t>{40});
    // Ranks follow the order.
    for (std::size_t i = 0; i < fit.size(); i++)
        CHECK(fit[i].rank == i + 1);

    CHECK(fit.flags("kvshard") == std::optional<std::string>("--world_size=4 --dp_size=2 "
                                                             "--max_seqs=28"));
    CHECK(fit.flags("vllm") ==
          std::optional<std::string>("--tensor-parallel-size=2 --data-parallel-size=2 "
                                     "--gpu-memory-utilization=0.92 --max-model-len=32768 "
                                     "--max-num-seqs=27"));
    CHECK(fit.flags("sglang") ==
          std::optional<std::string>("--tp-size=4 --dp-size=2 --enable-dp-attention "
                                     "--mem-fraction-static=0.9 --context-length=32768 "
                                     "--max-running-requests=38 --max-mamba-cache-size=358"));
    // One stage needs no partition in the environment.
    CHECK(fit.flags("vllm", true) == std::optional<std::string>(""));
    CHECK(fit.flags("xllm") ==
          std::optional<std::string>("--max_seqs_per_batch=14 --max_memory_utilization=0.8 "
                                     "--dp_size=2"));
    CHECK(fit.flags("trtllm") == std::nullopt); // no GDN hybrid under TensorRT-LLM
    CHECK(expect_error([&] { static_cast<void>(fit.flags("nope")); }, "an unknown engine")
              .code() == KVSHARD_EUNKNOWNKEY);
    CHECK(expect_error([&] { fit.row(12); }, "row(12)").code() == KVSHARD_EINVAL);

    const std::string json = fit.to_json();
    CHECK(json.front() == '{' && json.back() == '\n');
    CHECK(json.find("\"limited_layouts\": 3") != std::string::npos);
    CHECK(json.find("\"budget\": 10651293325") != std::string::npos);
    const std::string text = fit.to_text();
    CHECK(text.find("... 2 more layouts fit") != std::string::npos);
    CHECK(text.find("recommended: kvshard plan ") != std::string::npos);
    CHECK(fit.to_text(1).find("... 11 more layouts fit") != std::string::npos);
    CHECK(fit.to_text(12).find("more layouts fit") == std::string::npos);

    // The same search from a deployment; a dp_size override pins D = 4.
    kvshard::Deployment deployment = kvshard::Deployment::load_file(qwen35);
    deployment.apply_args({"--device_memory=32GiB", "--context_length=32768",
                           "--weights_total=69321223296", "--weights_experts=64424509440"});
    const kvshard::Fit same = kvshard::Fit::create(deployment, kvshard::make_fit_options(4));
    CHECK(same.size() == 12 && same[0].budget == 10651293325u);
    deployment.set("dp_size", 4);
    const kvshard::Fit pinned = kvshard::Fit::create(deployment, kvshard::make_fit_options(4));
    CHECK(pinned.size() == 1 && pinned[0].tp_size == 1 && pinned[0].dp_size == 4);

    // Moved from, it is empty.
    kvshard::Fit moved = kvshard::Fit::create(model, qwen35_device(), kvshard::make_fit_options(4));
    kvshard::Fit taker = std::move(moved);
    CHECK(!moved && taker);
    CHECK(expect_error([&] { moved.size(); }, "moved-from fit").code() == KVSHARD_EINVAL);
}

// DeepSeek-V3.2 on 16 GPUs of 80 GiB at 32,768 tokens, fp8 KV, the weights
// 674,030,337,216 B of which 654,068,416,512 are experts: the best layout
// splits 8 ways, which neither vLLM nor SGLang runs.
// - T = 8, D = 2: 19,961,920,704 / 8 + 654,068,416,512 / 16 = 2,495,240,088
//   + 40,879,276,032 = 43,374,516,120 B a rank; usable 77,309,411,328 less
//   the reserve 85,899,345,920 / 20 = 4,294,967,296: a budget of
//   29,639,927,912 B.
// - Split 8 over 61 layers: a rank owns at most 8 and computes one from
//   scratch, 9 x (656 + 132) = 7,092 B/token, 113,472 B a block;
//   floor(29,639,927,912 / 113,472) = 261,209 blocks, / 2,048 a sequence =
//   127 a replica, 254 in all.
void test_fit_split()
{
    const kvshard::Model model =
        kvshard::Model::load_file(std::string(KVSHARD_EXAMPLES) + "/models/deepseek_v3_2.json");
    kvshard::Options options;
    options.set("device_memory", "80GiB")
        .set("context_length", 32768)
        .set("kv_cache_dtype", "fp8")
        .set("weights_total", "674030337216")
        .set("weights_experts", "654068416512");
    const kvshard::Fit fit = kvshard::Fit::create(model, options, kvshard::make_fit_options(16));
    CHECK(fit.size() == 44 && fit.fitting() == 44);
    CHECK(fit.limited_layouts() == 7);
    const kvshard_fit_row &best = fit.recommended();
    CHECK(best.tp_size == 8 && best.pp_size == 1 && best.dp_size == 2);
    CHECK(best.layerwise_split_size == 8 && best.ownership == KVSHARD_OWNERSHIP_ORDINAL);
    CHECK(best.weights_per_rank == 43374516120u);
    CHECK(best.budget == 29639927912u);
    CHECK(best.num_blocks == 261209);
    CHECK(best.seqs_per_replica == 127 && best.seqs_total == 254);
    CHECK(fit.flags("kvshard") ==
          std::optional<std::string>("--world_size=16 --dp_size=2 --enable_layerwise_split=true "
                                     "--layerwise_split_size=8 --ownership=ordinal "
                                     "--max_seqs=127"));
    CHECK(!fit.flags("vllm").has_value());
    CHECK(!fit.flags("sglang").has_value());
    CHECK(!fit.flags("vllm", true).has_value());
}

// The fit's errors, and the status names.
// - Nemotron-3-Nano in bf16 on 2 GPUs of 24 GiB: T = 2 keeps
//   63,155,895,296 - 58,749,616,128 = 4,406,279,168 / 2 + 58,749,616,128 / 2
//   = 31,577,947,648 B a rank, against 23,192,823,398 usable less
//   1,288,490,188 reserved: 9,673,614,438 B short, the closest layout.
void test_fit_errors()
{
    CHECK(std::string(kvshard::name(KVSHARD_EDOESNOTFIT)) == "does_not_fit");
    CHECK(std::string(kvshard::name(KVSHARD_EWEIGHTS)) == "weights");
    CHECK(std::string(kvshard::name(KVSHARD_EFITLIMITS)) == "fit_limits");
    CHECK(std::string(kvshard::name(KVSHARD_OK)) == "ok");

    const kvshard::Model nano = kvshard::Model::load_file(std::string(KVSHARD_EXAMPLES) +
                                                          "/models/nemotron_3_nano_30b_a3b.json");
    kvshard::Options options;
    options.set("device_memory", "24GiB")
        .set("context_length", 32768)
        .set("weights_total", "63155895296")
        .set("weights_experts", "58749616128");
    kvshard::Error e = expect_error(
        [&] {
            static_cast<void>(kvshard::Fit::create(nano, options, kvshard::make_fit_options(2)));
        },
        "does not fit");
    CHECK(e.status() == KVSHARD_EDOESNOTFIT);
    CHECK(std::string(e.message()).find("-9673614438") != std::string::npos);

    // No device memory, a limit of 1 GPU a TP group on 3 GPUs pinned to
    // 2 stages, weights_per_rank (each layout has its own), no GPUs.
    const kvshard::Model model = kvshard::Model::load_file(qwen35);
    kvshard::Options bare;
    e = expect_error(
        [&] { static_cast<void>(kvshard::Fit::create(model, bare, kvshard::make_fit_options(4))); },
        "no device memory");
    CHECK(e.status() == KVSHARD_EMISSING);
    kvshard_fit_options fo = kvshard::make_fit_options(3, 1, 1);
    fo.pp_size = 2;
    e = expect_error([&] { static_cast<void>(kvshard::Fit::create(model, qwen35_device(), fo)); },
                     "no layout");
    CHECK(e.status() == KVSHARD_EFITLIMITS);
    kvshard::Options per_rank = qwen35_device();
    const std::uint64_t weights[1] = {18554484288u};
    per_rank->weights_per_rank = weights;
    per_rank->weights_per_rank_count = 1;
    e = expect_error(
        [&] {
            static_cast<void>(kvshard::Fit::create(model, per_rank, kvshard::make_fit_options(4)));
        },
        "weights_per_rank");
    CHECK(e.status() == KVSHARD_EWEIGHTS);
    e = expect_error(
        [&] {
            static_cast<void>(
                kvshard::Fit::create(model, qwen35_device(), kvshard::make_fit_options(0)));
        },
        "no GPUs");
    CHECK(e.status() == KVSHARD_EPARALLEL);
}

// A plan from the device inputs, at the fit's recommendation: world 4, dp 2,
// max_seqs 28. Each rank's budget and weights are the fit's row 1.
void test_device_plan()
{
    const kvshard::Model model = kvshard::Model::load_file(qwen35);
    kvshard::Options options = qwen35_device();
    options.set("world_size", 4).set("dp_size", 2).set("max_seqs", 28);
    const kvshard::Plan plan = kvshard::Plan::create(model, options);
    for (std::uint32_t rank = 0; rank < 2; rank++) {
        const kvshard_rank_memory mem = plan.rank_memory(rank);
        CHECK(mem.has_budget && mem.budget == 10651293325u);
        CHECK(mem.has_device && mem.weights_bytes == 18554484288u);
        CHECK(mem.activation_reserve == 1717986918u);
        CHECK(mem.has_num_blocks && mem.num_blocks == 59508);
    }
    // memory_per_rank is the budget when given: the device is not read.
    options.set("memory_per_rank", "20GiB");
    const kvshard::Plan budgeted = kvshard::Plan::create(model, options);
    CHECK(budgeted.has_warning(KVSHARD_WARN_DEVICE_MEMORY_IGNORED));
    const kvshard_rank_memory mem = budgeted.rank_memory(0);
    CHECK(mem.has_budget && mem.budget == 21474836480u && !mem.has_device);
    // Utilization to the billionth, and no further.
    kvshard::Options fine = qwen35_device();
    fine.set("world_size", 4).set("dp_size", 2).set("max_seqs", 28);
    fine->memory_utilization = 0.9000000001;
    CHECK(
        expect_error([&] { static_cast<void>(kvshard::Plan::create(model, fine)); }, "ten decimals")
            .status() == KVSHARD_ERANGE);
}

} // namespace

// The transfer's picture: the seed (TP 4, split 2) decodes what TP 2
// prefills, the docs' worked example; without a length there is none.
static void test_transfer_svg()
{
    kvshard::Deployment prefill = kvshard::Deployment::load_file(seed);
    prefill.apply_args({"--world_size=2", "--enable_layerwise_split=false"});
    const kvshard::Plan p = prefill.plan();
    const kvshard::Plan d = kvshard::Deployment::load_file(seed).plan();
    const kvshard::Transfer t =
        kvshard::Transfer::create(p, d, kvshard::make_transfer_options(32768));
    const std::string svg = t.to_svg();
    CHECK(svg.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 0) == 0);
    CHECK(svg.find("735,477,760 B on the wire in 20 edges") != std::string::npos);
    CHECK(svg.find("96 px for 167,772,160 B") != std::string::npos);
    const kvshard::Transfer no_length = kvshard::Transfer::create(p, d);
    CHECK(expect_error([&] { static_cast<void>(no_length.to_svg()); }, "svg without a length")
              .code() == KVSHARD_EINVAL);
}

int main()
{
    const std::pair<const char *, void (*)()> tests[] = {
        {"seed_figures", test_seed_figures},
        {"overrides", test_overrides},
        {"errors", test_errors},
        {"model_create", test_model_create},
        {"moved_from", test_moved_from},
        {"threads", test_threads},
        {"settings", test_settings},
        {"compressed", test_compressed},
        {"engine_figures", test_engine_figures},
        {"fit", test_fit},
        {"fit_split", test_fit_split},
        {"fit_errors", test_fit_errors},
        {"device_plan", test_device_plan},
        {"transfer_svg", test_transfer_svg},
    };
    for (const auto &test : tests) {
        const int before = failures;
        try {
            test.second();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "%s: unexpected exception: %s\n", test.first, e.what());
            failures++;
        }
        std::printf("%s %s\n", failures == before ? "ok  " : "FAIL", test.first);
    }
    if (failures != 0) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    return 0;
}
