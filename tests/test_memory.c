/* Memory: per-rank bytes, state reservation, block capacity, the uniform
 * comparison and the split-size comparison. Every expected figure is worked
 * out by hand from the formulas in docs/planning.md; the arithmetic is next
 * to it. */
#include "test_util.h"

#include "kvshard/explore.h"

#include "plan/memory.h"

#include <math.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1ull << 30)

static kvshard_options split_options(uint32_t world, uint32_t split)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    o.enable_layerwise_split = split > 1;
    o.layerwise_split_size = split;
    return o;
}

/* The seed scenario: Qwen3.5-35B-A3B, TP4, split 2, ordinal, block 16,
 * 20 GiB per rank, 128 sequences. */
static kvshard_options seed_options(void)
{
    kvshard_options o = split_options(4, 2);
    o.block_size = 16;
    o.memory_per_rank = 20 * GIB; /* 21474836480 */
    o.max_seqs = 128;
    return o;
}

static kvshard_rank_memory rank_memory(const kvshard_plan *plan, uint32_t r)
{
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    memset((char *)&m + sizeof m.size, 0xAB, sizeof m - sizeof m.size); /* every figure written */
    assert_int_equal(kvshard_plan_rank_memory(&m, plan, r), KVSHARD_OK);
    return m;
}

static void assert_rank(const kvshard_plan *plan, uint32_t r, uint64_t kv, uint64_t scratch,
                        uint64_t draft, uint64_t per_block, uint64_t state)
{
    kvshard_rank_memory m = rank_memory(plan, r);
    if (m.kv_bytes_per_token != kv || m.scratch_bytes_per_token != scratch ||
        m.draft_bytes_per_token != draft || m.bytes_per_block != per_block ||
        m.state_bytes_per_seq != state)
        print_error("rank %u: kv %llu scratch %llu draft %llu block %llu state %llu\n", r,
                    (unsigned long long)m.kv_bytes_per_token,
                    (unsigned long long)m.scratch_bytes_per_token,
                    (unsigned long long)m.draft_bytes_per_token,
                    (unsigned long long)m.bytes_per_block,
                    (unsigned long long)m.state_bytes_per_seq);
    assert_int_equal(m.kv_bytes_per_token, kv);
    assert_int_equal(m.scratch_bytes_per_token, scratch);
    assert_int_equal(m.draft_bytes_per_token, draft);
    assert_int_equal(m.bytes_per_block, per_block);
    assert_int_equal(m.state_bytes_per_seq, state);
}

static kvshard_capacity capacity(const kvshard_plan *plan)
{
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    memset((char *)&c + sizeof c.size, 0xCD, sizeof c - sizeof c.size);
    kvshard_plan_capacity(&c, plan);
    return c;
}

static kvshard_uniform uniform(const kvshard_plan *plan)
{
    kvshard_uniform u = KVSHARD_UNIFORM_INIT;
    memset((char *)&u + sizeof u.size, 0xEF, sizeof u - sizeof u.size);
    kvshard_plan_uniform(&u, plan);
    return u;
}

/*
 * Seed scenario by hand.
 * T = 4, H_kv = 2 < T: rank r holds head floor(r * 2 / 4): 0, 0, 1, 1; R = 2.
 * Split groups {0, 1} and {2, 3}: the union of a group's heads is 1 head.
 * One layer on an owner: 2 x 1 head x 256 x 2 bytes = 1024.
 * Ordinal rule: each split rank owns 5 of the 10 full layers.
 *   kv = 5 x 1024 = 5120; scratch = 1 x 1024 = 1024; draft = 0 (spec 0);
 *   bytes_per_block = 16 x (5120 + 1024) = 16 x 6144 = 98304.
 * GDN state per layer (T = 4: Hk_local = 16/4 = 4, Hv_local = 32/4 = 8):
 *   conv = 2 x (2 x 128 x 4 + 128 x 8) x (4 - 1 + 0) = 2 x 2048 x 3 = 12288
 *   temporal = 4 (float32) x 8 x 128 x 128 x 1 = 524288
 *   30 linear layers x 536576 = 16097280 per sequence.
 * reserved = 128 x 16097280 = 2060451840; free = 21474836480 - 2060451840
 *   = 19414384640; num_blocks = floor(19414384640 / 98304) = 197493
 *   (98304 x 197493 = 19414351872, remainder 32768);
 *   max_tokens = 197493 x 16 = 3159888.
 * Uniform (S_eff 1): kv = 10 x 1024 = 10240, block = 16 x 10240 = 163840,
 *   num_blocks = 19414384640 / 163840 = 118496 exactly.
 */
static void test_seed_scenario(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    kvshard_plan *plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 4; r++) {
        assert_rank(plan, r, 5120, 1024, 0, 98304, 16097280);
        kvshard_rank_memory m = rank_memory(plan, r);
        assert_true(m.has_num_blocks);
        assert_int_equal(m.num_blocks, 197493);
    }
    kvshard_capacity c = capacity(plan);
    assert_int_equal(c.block_size, 16);
    assert_int_equal(c.memory_per_rank, 21474836480ull);
    assert_int_equal(c.max_seqs, 128);
    assert_true(c.has_num_blocks);
    assert_int_equal(c.num_blocks, 197493);
    assert_int_equal(c.max_tokens, 3159888);
    kvshard_uniform u = uniform(plan);
    assert_int_equal(u.kv_bytes_per_token, 10240);
    assert_int_equal(u.bytes_per_block, 163840);
    assert_true(u.has_num_blocks);
    assert_int_equal(u.num_blocks, 118496);
    kvshard_plan_free(plan);

    /* Without memory_per_rank: same bytes, no capacity. */
    o.memory_per_rank = 0;
    plan = tu_plan(model, &o);
    assert_rank(plan, 1, 5120, 1024, 0, 98304, 16097280);
    assert_false(rank_memory(plan, 1).has_num_blocks);
    c = capacity(plan);
    assert_false(c.has_num_blocks);
    assert_int_equal(c.memory_per_rank, 0);
    u = uniform(plan);
    assert_false(u.has_num_blocks);
    assert_int_equal(u.bytes_per_block, 163840);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* The seed at S = 1 (no split): scratch 0; kv 10 x 1024 = 10240 on every
 * rank; the plan equals the uniform figures: 118496 blocks. */
static void test_seed_unsplit(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.enable_layerwise_split = false;
    o.layerwise_split_size = 1;
    kvshard_plan *plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 4; r++)
        assert_rank(plan, r, 10240, 0, 0, 163840, 16097280);
    assert_int_equal(capacity(plan).num_blocks, 118496);
    assert_int_equal(capacity(plan).max_tokens, 1895936); /* 118496 x 16 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* scratch_layers 0 and 2 on the seed.
 * 0: block = 16 x 5120 = 81920; 19414384640 / 81920 = 236992 exactly.
 * 2: scratch 2 x 1024 = 2048; block = 16 x 7168 = 114688;
 *    19414384640 / 114688 = 169280 exactly. */
static void test_scratch_layers(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.scratch_layers = 0;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 0, 5120, 0, 0, 81920, 16097280);
    assert_int_equal(capacity(plan).num_blocks, 236992);
    kvshard_plan_free(plan);
    o.scratch_layers = 2;
    plan = tu_plan(model, &o);
    assert_rank(plan, 3, 5120, 2048, 0, 114688, 16097280);
    assert_int_equal(capacity(plan).num_blocks, 169280);
    /* the uniform figures have no scratch either way */
    assert_int_equal(uniform(plan).bytes_per_block, 163840);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* fp8 GQA on the seed: one layer with h heads = 2 x h x 256 x 1 + 8 x h.
 * Owner (1 head): 512 + 8 = 520; kv 5 x 520 = 2600; scratch 520;
 * block = 16 x 3120 = 49920. The GDN state uses the model dtype, not the KV
 * dtype: still 16097280. Uniform: 10 x 520 = 5200, block 83200.
 * llama TP1 fp8 (8 heads, head_dim 128): 2 x 8 x 128 + 64 = 2112 per layer,
 * 32 x 2112 = 67584. */
static void test_fp8_gqa_scales(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 2, 2600, 520, 0, 49920, 16097280);
    assert_int_equal(uniform(plan).kv_bytes_per_token, 5200);
    assert_int_equal(uniform(plan).bytes_per_block, 83200);
    kvshard_plan_free(plan);

    /* fp16 KV: same bytes as bf16 (2 bytes) */
    o.kv_cache_dtype = KVSHARD_DTYPE_FP16;
    plan = tu_plan(model, &o);
    assert_rank(plan, 2, 5120, 1024, 0, 98304, 16097280);
    kvshard_plan_free(plan);
    kvshard_model_free(model);

    model = tu_load_example_model("llama3_1_8b.json");
    kvshard_options t1 = KVSHARD_OPTIONS_INIT;
    t1.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    plan = tu_plan(model, &t1);
    assert_rank(plan, 0, 67584, 0, 0, 1081344, 0); /* 16 x 67584 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Seed at S = 4 (one split group of all 4 ranks): the group's union is heads
 * {0, 1} = 2 heads, one layer 2 x 2 x 256 x 2 = 2048. Ordinals 0..9 % 4:
 * split ranks 0 and 1 own 3 layers, 2 and 3 own 2.
 * rank 0: kv 3 x 2048 = 6144, scratch 2048, block 16 x 8192 = 131072;
 * rank 2: kv 2 x 2048 = 4096, block 16 x 6144 = 98304.
 * num_blocks = min over ranks = 19414384640 / 131072 = 148120 exactly. */
static void test_seed_split4(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.layerwise_split_size = 4;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 0, 6144, 2048, 0, 131072, 16097280);
    assert_rank(plan, 1, 6144, 2048, 0, 131072, 16097280);
    assert_rank(plan, 2, 4096, 2048, 0, 98304, 16097280);
    assert_rank(plan, 3, 4096, 2048, 0, 98304, 16097280);
    assert_int_equal(rank_memory(plan, 0).num_blocks, 148120);
    /* rank 2: 19414384640 / 98304 = 197493 (as in the seed) */
    assert_int_equal(rank_memory(plan, 2).num_blocks, 197493);
    assert_int_equal(capacity(plan).num_blocks, 148120);
    assert_int_equal(capacity(plan).max_tokens, 2369920); /* 148120 x 16 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Draft layers with num_speculative_tokens = 2 on the seed.
 * draft = 1 layer x own heads (1 head) = 2 x 1 x 256 x 2 = 1024 (unsplit).
 * GDN state grows: conv = 2 x 2048 x (4 - 1 + 2) = 20480;
 *   temporal = 4 x 8 x 128 x 128 x (2 + 1) = 1572864; per layer 1593344;
 *   30 layers: 47800320.
 * block = 16 x (5120 + 1024 + 1024) = 16 x 7168 = 114688.
 * reserved = 128 x 47800320 = 6118440960; free = 15356395520;
 * num_blocks = floor(15356395520 / 114688) = 133897
 *   (114688 x 133897 = 15356379136, remainder 16384).
 * Uniform: kv 10240 + draft 1024 -> block 16 x 11264 = 180224. */
static void test_draft_layers_with_spec(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.num_speculative_tokens = 2;
    kvshard_plan *plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 4; r++)
        assert_rank(plan, r, 5120, 1024, 1024, 114688, 47800320);
    assert_int_equal(capacity(plan).num_blocks, 133897);
    assert_int_equal(capacity(plan).max_tokens, 2142352); /* 133897 x 16 */
    assert_int_equal(uniform(plan).bytes_per_block, 180224);
    kvshard_plan_free(plan);

    /* spec 1: conv x (3 + 1) = 2 x 2048 x 4 = 16384, temporal x 2 = 1048576;
     * per layer 1064960, x 30 = 31948800; draft still 1024. */
    o.num_speculative_tokens = 1;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 5120, 1024, 1024, 114688, 31948800);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Draft bytes use the rank's own heads even when the split makes an owner
 * hold its group's union. Synthetic GQA: 4 layers, 8 kv heads, head_dim 128,
 * one MTP layer; TP4 split 2, spec 1. Own: 2 heads -> 2 x 2 x 128 x 2 = 1024;
 * owner: 4 heads -> 2048. kv 2 layers x 2048 = 4096, scratch 2048, draft
 * 1 x 1024 = 1024; block 16 x 7168 = 114688. Spec 0: no draft bytes,
 * block 16 x 6144 = 98304. */
static void test_draft_uses_own_heads(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_model_text("num_hidden_layers: 4\nnum_key_value_heads: 8\n"
                                              "head_dim: 128\nmtp_num_hidden_layers: 1\n");
    kvshard_options o = split_options(4, 2);
    o.num_speculative_tokens = 1;
    kvshard_plan *plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 4; r++)
        assert_rank(plan, r, 4096, 2048, 1024, 114688, 0);
    kvshard_plan_free(plan);
    o.num_speculative_tokens = 0;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 4096, 2048, 0, 98304, 0);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/*
 * DeepSeek-V3.2, TP8, split 8, fp8 (the example deployment).
 * One layer: MLA (512 + 64) x 1 + 4 = 580, indexer 128 + 4 = 132 -> 712.
 * R = T = 8, so S = 8 does not exceed it. 61 layers, ordinals 0..60 % 8:
 * 61 = 7 x 8 + 5 -> split ranks 0..4 own 8 layers, 5..7 own 7.
 * rank 0: kv 8 x 712 = 5696, scratch 712, block 16 x 6408 = 102528;
 * rank 7: kv 7 x 712 = 4984, scratch 712, block 16 x 5696 = 91136.
 * No linear layers: state 0. M = 24 GiB = 25769803776, reserved 0;
 * num_blocks = floor(25769803776 / 102528) = 251344 (102528 x 251344 =
 * 25769797632, remainder 6144); max_tokens = 251344 x 16 = 4021504.
 * Uniform: 61 x 712 = 43432, block 694912, 25769803776 / 694912 = 37083
 * (694912 x 37083 = 25769421696, remainder 382080).
 */
static void test_deepseek_fp8_split8(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = split_options(8, 8);
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.memory_per_rank = 24 * GIB;
    o.max_seqs = 256;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_replication_factor(plan), 8);
    /* fp8, a DSA model: latent 512 + 4 x 4 + 2 x 64 = 656, indexer key 132:
     * 788 per layer. 61 layers over 8 split ranks: ranks 0-4 own 8, 5-7 own 7.
     * rank 0: kv 8 x 788 = 6304, scratch 788, block 16 x 7092 = 113472;
     * rank 5: kv 7 x 788 = 5516, block 16 x 6304 = 100864. */
    for (uint32_t r = 0; r < 8; r++) {
        if (r < 5)
            assert_rank(plan, r, 6304, 788, 0, 113472, 0);
        else
            assert_rank(plan, r, 5516, 788, 0, 100864, 0);
    }
    const uint32_t s0[] = {0, 8, 16, 24, 32, 40, 48, 56};
    const uint32_t s5[] = {5, 13, 21, 29, 37, 45, 53};
    tu_assert_rank_layers(plan, 0, s0, 8);
    tu_assert_rank_layers(plan, 5, s5, 7);
    /* rank 7: 25769803776 / 100864 = 255490 (100864 x 255490 = 25769743360) */
    assert_int_equal(rank_memory(plan, 7).num_blocks, 255490);
    /* rank 0 binds: 25769803776 / 113472 = 227102 (x 113472 = 25769718144) */
    assert_int_equal(capacity(plan).num_blocks, 227102);
    assert_int_equal(capacity(plan).max_tokens, 3633632);
    kvshard_uniform u = uniform(plan);
    assert_int_equal(u.kv_bytes_per_token, 48068); /* 61 x 788 */
    assert_int_equal(u.bytes_per_block, 769088);
    assert_int_equal(u.num_blocks, 33506);
    assert_int_equal(kvshard_plan_warning_count(plan), 0); /* 8 vs 7: within 1 */
    kvshard_plan_free(plan);

    /* bf16: (512 + 64) x 2 = 1152 + the 132-byte indexer key -> 1284 per layer.
     * rank 0: kv 8 x 1284 = 10272, scratch 1284, block 16 x 11556 = 184896;
     * rank 5: kv 7 x 1284 = 8988, block 16 x 10272 = 164352.
     * 25769803776 / 184896 = 139374 (184896 x 139374 = 25769695104). */
    o.kv_cache_dtype = KVSHARD_DTYPE_AUTO;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 10272, 1284, 0, 184896, 0);
    assert_rank(plan, 5, 8988, 1284, 0, 164352, 0);
    assert_int_equal(capacity(plan).num_blocks, 139374);
    assert_int_equal(uniform(plan).kv_bytes_per_token, 78324); /* 61 x 1284 */
    kvshard_plan_free(plan);

    /* fp8 with one MTP layer (spec 1), whose indexer key it keeps too: draft
     * = 1 x 788 on every rank; rank 0 block = 16 x (6304 + 788 + 788) =
     * 126080; 25769803776 / 126080 = 204392 (x 126080 = 25769743360). */
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.num_speculative_tokens = 1;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 6304, 788, 788, 126080, 0);
    assert_rank(plan, 7, 5516, 788, 788, 113472, 0); /* 16 x 7092 */
    assert_int_equal(capacity(plan).num_blocks, 204392);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* GQA with H_kv >= T: llama 8 kv heads, TP4, split 2. Each rank holds 2
 * heads; the owner holds its group's union, 4 heads.
 * head_dim 4096 / 32 = 128. Own layer: 2 x 2 x 128 x 2 = 1024; stored
 * layer on an owner: 2 x 4 x 128 x 2 = 2048. 32 layers -> 16 per split rank.
 * kv 16 x 2048 = 32768, scratch 2048, block 16 x 34816 = 557056.
 * Uniform: 32 x 1024 = 32768 -> block 524288: the split saves nothing and
 * adds scratch (exceeds_replication). */
static void test_gqa_kv_heads_at_least_tp(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = split_options(4, 2);
    kvshard_plan *plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 4; r++)
        assert_rank(plan, r, 32768, 2048, 0, 557056, 0);
    assert_int_equal(uniform(plan).kv_bytes_per_token, 32768);
    assert_int_equal(uniform(plan).bytes_per_block, 524288);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_EXCEEDS_REPLICATION));
    kvshard_plan_free(plan);

    /* TP4 split 4: union = all 8 heads: 2 x 8 x 128 x 2 = 4096 per layer;
     * 32 layers / 4 = 8 each: kv 32768, scratch 4096, block 16 x 36864 = 589824 */
    o = split_options(4, 4);
    plan = tu_plan(model, &o);
    assert_rank(plan, 1, 32768, 4096, 0, 589824, 0);
    kvshard_plan_free(plan);

    /* TP8 split 2 (H_kv = T = 8, one head per rank, R = 1): owner holds 2
     * heads = 2 x 2 x 128 x 2 = 1024; 16 layers x 1024 = 16384 + scratch 1024;
     * block 16 x 17408 = 278528. Uniform: 32 x 512 = 16384. */
    o = split_options(8, 2);
    plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_replication_factor(plan), 1);
    assert_rank(plan, 7, 16384, 1024, 0, 278528, 0);
    assert_int_equal(uniform(plan).kv_bytes_per_token, 16384);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Qwen3-Next TP8 split 4 (example deployment: 40 GiB, 256 sequences).
 * H_kv = 2, T = 8: ranks 0-3 head 0, ranks 4-7 head 1; groups {0..3} and
 * {4..7} each union 1 head -> 2 x 1 x 256 x 2 = 1024 per layer (torch_dtype
 * bfloat16). Ordinal: 3 layers each -> kv 3072, scratch 1024,
 * block 16 x 4096 = 65536.
 * GDN at T = 8: Hk 16/8 = 2, Hv 32/8 = 4; no mamba_ssm_dtype -> float32.
 *   conv = 2 x (2 x 128 x 2 + 128 x 4) x 3 = 2 x 1024 x 3 = 6144;
 *   temporal = 4 x 4 x 128 x 128 = 262144; per layer 268288;
 *   36 layers: 9658368. reserved 256 x 9658368 = 2472542208;
 *   free = 42949672960 - 2472542208 = 40477130752;
 *   num_blocks = floor(40477130752 / 65536) = 617632.
 * Global: split rank 3 owns all 12: kv 12288, block 16 x 13312 = 212992;
 *   num_blocks = floor(40477130752 / 212992) = 190040. */
static void test_qwen3_next_tp8_split4(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = split_options(8, 4);
    o.memory_per_rank = 40 * GIB;
    o.max_seqs = 256;
    kvshard_plan *plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 8; r++)
        assert_rank(plan, r, 3072, 1024, 0, 65536, 9658368);
    assert_int_equal(capacity(plan).num_blocks, 617632);
    kvshard_plan_free(plan);

    o.ownership = KVSHARD_OWNERSHIP_GLOBAL;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 0, 1024, 0, 16384, 9658368);
    assert_rank(plan, 3, 12288, 1024, 0, 212992, 9658368);
    assert_rank(plan, 7, 12288, 1024, 0, 212992, 9658368);
    assert_int_equal(capacity(plan).num_blocks, 190040);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* MiniMax-M1 TP8: lightning state 4 x H_local x d x d with H = 64, d = 128:
 * H_local = 8 -> 4 x 8 x 16384 = 524288 per layer; 70 linear layers ->
 * 36700160 (no conv, independent of num_speculative_tokens).
 * KV: H_kv 8 at T 8 -> 1 head per rank: 2 x 1 x 128 x 2 = 512 per layer;
 * 10 full layers -> 5120; block 16 x 5120 = 81920. */
static void test_minimax_lightning_state(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("minimax_m1.json");
    kvshard_options o = split_options(8, 1);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 0, 5120, 0, 0, 81920, 36700160);
    assert_rank(plan, 7, 5120, 0, 0, 81920, 36700160);
    kvshard_plan_free(plan);
    o.num_speculative_tokens = 3; /* no draft layers; lightning has no spec term */
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 5120, 0, 0, 81920, 36700160);
    kvshard_plan_free(plan);
    /* TP4: H_local 16 -> 4 x 16 x 16384 = 1048576, x 70 = 73400320;
     * 2 kv heads per rank: 2 x 2 x 128 x 2 = 1024, x 10 = 10240. */
    o = split_options(4, 1);
    plan = tu_plan(model, &o);
    assert_rank(plan, 2, 10240, 0, 0, 163840, 73400320);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Kimi Linear TP4: KDA H = 32, d = 128, K = 4 -> H_local = 8.
 * conv = 2 x 3 x 8 x 128 x (4 - 1) = 2 x 3072 x 3 = 18432;
 * temporal = 4 x 8 x 128 x 128 = 524288; per layer 542720;
 * 20 KDA layers -> 10854400.
 * MLA (no indexer): (512 + 64) x 2 = 1152 per layer; S_eff 1: 7 x 1152 = 8064.
 * Split 4 (ordinal, owners 2, 2, 2, 1 layers): rank 0 kv 2304, scratch 1152,
 * block 16 x 3456 = 55296; rank 3 kv 1152, block 16 x 2304 = 36864.
 * With spec 2: conv x 5 = 30720, temporal x 3 = 1572864, per layer 1603584,
 * x 20 = 32071680 (num_nextn_predict_layers 0: no draft bytes). */
static void test_kimi_kda_state(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("kimi_linear_48b_a3b.json");
    kvshard_options o = split_options(4, 1);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 1, 8064, 0, 0, 129024, 10854400); /* 16 x 8064 */
    kvshard_plan_free(plan);
    o = split_options(4, 4);
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 2304, 1152, 0, 55296, 10854400);
    assert_rank(plan, 3, 1152, 1152, 0, 36864, 10854400);
    kvshard_plan_free(plan);
    o.num_speculative_tokens = 2;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 2304, 1152, 0, 55296, 32071680);
    kvshard_plan_free(plan);
    /* fp8 MLA without indexer: 576 + 4 = 580 per layer; spec 0 again.
     * rank 0: kv 2 x 580 = 1160, scratch 580, block 16 x 1740 = 27840. */
    o.num_speculative_tokens = 0;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 1160, 580, 0, 27840, 10854400);
    assert_int_equal(uniform(plan).kv_bytes_per_token, 4060); /* 7 x 580 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* gpt-oss-20b: sliding layers reserve b x block_size x (ceil(window /
 * block_size) + 1) per sequence, b = the rank's own heads, unsplit.
 * TP1: b = 2 x 8 x 64 x 2 = 2048; block 16: ceil(128/16) + 1 = 9 ->
 *   2048 x 16 x 9 = 294912 per layer, 12 layers -> 3538944;
 *   kv 12 x 2048 = 24576, block 16 x 24576 = 393216.
 * block 48: ceil(128/48) + 1 = 3 + 1 = 4 -> 2048 x 48 x 4 = 393216 per
 *   layer, 12 -> 4718592; block 48 x 24576 = 1179648.
 * TP4 split 2: own 2 heads: b = 2 x 2 x 64 x 2 = 512; owner stores the
 *   group's 4 heads: 1024 per layer; 12 full layers / 2 = 6 each:
 *   kv 6144, scratch 1024, block 16 x 7168 = 114688;
 *   sliding 512 x 16 x 9 = 73728 per layer, x 12 = 884736. */
static void test_gpt_oss_sliding_window(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("gpt_oss_20b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 0, 24576, 0, 0, 393216, 3538944);
    kvshard_plan_free(plan);
    o.block_size = 48;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 24576, 0, 0, 1179648, 4718592);
    kvshard_plan_free(plan);
    /* block 128: ceil(128/128) + 1 = 2 -> 2048 x 128 x 2 = 524288, x 12 = 6291456 */
    o.block_size = 128;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 24576, 0, 0, 3145728, 6291456); /* 128 x 24576 */
    kvshard_plan_free(plan);

    o = split_options(4, 2);
    plan = tu_plan(model, &o);
    for (uint32_t r = 0; r < 4; r++)
        assert_rank(plan, r, 6144, 1024, 0, 114688, 884736);
    const uint32_t s0[] = {1, 5, 9, 13, 17, 21}; /* ordinals 0, 2, ..., 10 */
    tu_assert_rank_layers(plan, 2, s0, 6);
    assert_true(kvshard_plan_owns(plan, 1, 0)); /* sliding layer: every rank */
    assert_int_equal(uniform(plan).kv_bytes_per_token, 6144); /* 12 x 512 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* A budget one byte short of reservation + one block fails; the exact
 * amount gives one block. Seed: 2060451840 + 98304 = 2060550144. */
static void test_no_memory_for_one_block(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.memory_per_rank = 2060550143ull;
    kvshard_plan *plan = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&plan, model, &o, NULL, &err), KVSHARD_ENOBLOCK);
    assert_null(plan);
    assert_int_equal(err.code, KVSHARD_ENOBLOCK);
    assert_non_null(strstr(err.message, "2060550143")); /* names M */
    assert_non_null(strstr(err.message, "2060451840")); /* the reservation */
    assert_non_null(strstr(err.message, "98304"));      /* bytes_per_block */

    /* less than the reservation alone */
    o.memory_per_rank = 1 * GIB;
    assert_int_equal(kvshard_plan_create(&plan, model, &o, NULL, &err), KVSHARD_ENOBLOCK);
    assert_null(plan);

    o.memory_per_rank = 2060550144ull;
    plan = tu_plan(model, &o);
    assert_int_equal(capacity(plan).num_blocks, 1);
    assert_int_equal(capacity(plan).max_tokens, 16);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* kvshard_plan_num_blocks_for with a budget the engine measured.
 * Seed bytes: 16 GiB = 17179869184 - 2060451840 = 15119417344;
 * / 98304 = 153802 (98304 x 153802 = 15119351808, remainder 65536). */
static void test_num_blocks_for(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.memory_per_rank = 0; /* the plan need not have a budget itself */
    kvshard_plan *plan = tu_plan(model, &o);
    uint64_t n = 0;
    kvshard_error err;
    assert_int_equal(tu_num_blocks(&n, plan, 16 * GIB, &err), KVSHARD_OK);
    assert_int_equal(n, 153802);
    assert_int_equal(tu_num_blocks(&n, plan, 20 * GIB, &err), KVSHARD_OK);
    assert_int_equal(n, 197493);
    assert_int_equal(tu_num_blocks(&n, plan, 2060550144ull, &err), KVSHARD_OK);
    assert_int_equal(n, 1);
    n = 42;
    assert_int_equal(tu_num_blocks(&n, plan, 2060550143ull, &err),
                     KVSHARD_ENOBLOCK);
    assert_int_equal(n, 42); /* untouched */
    assert_int_equal(err.code, KVSHARD_ENOBLOCK);
    kvshard_plan_free(plan);

    /* S = 4 plan: min over ranks uses the 3-layer ranks (131072 per block):
     * 15119417344 / 131072 = 115352 (131072 x 115352 = 15119417344 exactly). */
    o.layerwise_split_size = 4;
    plan = tu_plan(model, &o);
    assert_int_equal(tu_num_blocks(&n, plan, 16 * GIB, &err), KVSHARD_OK);
    assert_int_equal(n, 115352);
    kvshard_plan_free(plan);
    kvshard_model_free(model);

    /* No KV bytes at all: ERANGE. 4 linear layers only; T = 1:
     * conv = 2 x (2 x 8 x 4 + 8 x 4) x 3 = 2 x 96 x 3 = 576,
     * temporal = 4 x 4 x 8 x 8 = 1024 -> 1600 per layer, x 4 = 6400. */
    model = tu_load_model_text(
        "num_hidden_layers: 4\n"
        "layer_types: [linear_attention, linear_attention, linear_attention, linear_attention]\n"
        "linear_num_key_heads: 4\nlinear_num_value_heads: 4\nlinear_key_head_dim: 8\n"
        "linear_value_head_dim: 8\nlinear_conv_kernel_dim: 4\n");
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    plan = tu_plan(model, &o);
    assert_rank(plan, 0, 0, 0, 0, 0, 6400);
    assert_int_equal(tu_num_blocks(&n, plan, 1 * GIB, &err), KVSHARD_ERANGE);
    kvshard_plan_free(plan);
    /* with memory_per_rank: no capacity figure, but the plan is valid */
    o.memory_per_rank = 1 * GIB;
    plan = tu_plan(model, &o);
    assert_false(capacity(plan).has_num_blocks);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Byte figures that do not fit in 64 bits: 2^23 kv heads x head_dim 2^23,
 * bf16: one layer = 2 x 2^23 x 2^23 x 2 = 2^48 bytes per token;
 * block_size 2^20 -> 2^68 bytes per block > 2^64. At block_size 16 it is
 * 2^52 and fits. */
static void test_overflow(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_model_text("num_hidden_layers: 1\n"
                                              "num_key_value_heads: 8388608\n"
                                              "head_dim: 8388608\n");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_rank(plan, 0, 1ull << 48, 0, 0, 1ull << 52, 0);
    kvshard_plan_free(plan);
    o.block_size = KVSHARD_MAX_BLOCK_SIZE;
    kvshard_error err;
    plan = NULL;
    assert_int_equal(kvshard_plan_create(&plan, model, &o, NULL, &err), KVSHARD_EOVERFLOW);
    assert_null(plan);
    assert_int_equal(err.code, KVSHARD_EOVERFLOW);
    /* Scaled by block_size: no model source, so a deployment can blame it. */
    assert_string_equal(err.source, "");
    assert_non_null(strstr(err.message, "block_size 1048576"));
    kvshard_model_free(model);

    /* 2^22 layers of 2^48 bytes: the KV bytes per token themselves pass 2^64
     * (2^70), whatever the options; the error names the model. */
    model = tu_load_model_text("num_hidden_layers: 4194304\n"
                               "num_key_value_heads: 8388608\n"
                               "head_dim: 8388608\n");
    o.block_size = 16;
    assert_int_equal(kvshard_plan_create(&plan, model, &o, NULL, &err), KVSHARD_EOVERFLOW);
    assert_string_equal(err.source, "test");
    assert_non_null(strstr(err.message, "model's dimensions"));
    kvshard_model_free(model);

    /* A state reservation past 2^64 bytes cannot fit any memory: ENOBLOCK.
     * GDN at T = 1: temporal = 4 * 2^20 heads * 2^12 * 2^12 = 2^46 bytes per
     * layer and sequence (conv adds a little); 2^24 max_seqs -> past 2^70. */
    model = tu_load_model_text("num_hidden_layers: 2\nfull_attention_interval: 2\n"
                               "num_key_value_heads: 1\nhead_dim: 8\n"
                               "linear_num_key_heads: 1048576\nlinear_num_value_heads: 1048576\n"
                               "linear_key_head_dim: 4096\nlinear_value_head_dim: 4096\n"
                               "linear_conv_kernel_dim: 4\n");
    o.max_seqs = 1u << 24;
    o.memory_per_rank = 1ull << 40;
    assert_int_equal(kvshard_plan_create(&plan, model, &o, NULL, &err), KVSHARD_ENOBLOCK);
    assert_null(plan);
    assert_non_null(strstr(err.message, "2^64"));
    kvshard_model_free(model);
}

/*
 * kvshard_comparison for the seed (T = 4: S in {1, 2, 4}, each under the
 * ordinal, global and contiguous rules).
 * free = 19414384640 bytes per rank after the reservation (see the seed).
 * S1 (every rule): uniform: block 163840 -> 118496 blocks.
 * S2 ordinal: 197493 (seed). max kv 5120, owned 5..5.
 * S2 global: layers 3, 7, ..., 39 all odd -> split rank 1 owns 10, rank 0
 *   none. Rank 1 block 16 x (10240 + 1024) = 180224;
 *   19414384640 / 180224 = 107723 (180224 x 107723 = 19414269952).
 * S2 contiguous: q = 10 / 2 = 5, m = 0: KV ordinals 0-4 to split rank 0,
 *   5-9 to rank 1: the ordinal counts, so the ordinal figures.
 * S4 ordinal: 148120 (see test_seed_split4); owned 2..3, max kv 6144.
 * S4 global: all 10 layers on split rank 3 (index % 4 = 3): 2-head union,
 *   kv 10 x 2048 = 20480, block 16 x 22528 = 360448;
 *   19414384640 / 360448 = 53861 (360448 x 53861 = 19414089728).
 * S4 contiguous: q = 2, m = 2: ranks 0 and 1 own 3, ranks 2 and 3 own 2:
 *   the ordinal counts again.
 * Recommended: the most blocks, S2 ordinal (row 3); S2 contiguous ties and
 * comes later.
 */
static void test_comparison_seed(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    kvshard_comparison *cmp = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, &err), KVSHARD_OK);
    assert_int_equal(kvshard_comparison_row_count(cmp), 9);
    static const struct {
        uint32_t s;
        kvshard_ownership rule;
        uint32_t min_owned, max_owned;
        uint64_t max_kv, max_block, blocks;
    } want[9] = {
        {1, KVSHARD_OWNERSHIP_ORDINAL, 10, 10, 10240, 163840, 118496},
        {1, KVSHARD_OWNERSHIP_GLOBAL, 10, 10, 10240, 163840, 118496},
        {1, KVSHARD_OWNERSHIP_CONTIGUOUS, 10, 10, 10240, 163840, 118496},
        {2, KVSHARD_OWNERSHIP_ORDINAL, 5, 5, 5120, 98304, 197493},
        {2, KVSHARD_OWNERSHIP_GLOBAL, 0, 10, 10240, 180224, 107723},
        {2, KVSHARD_OWNERSHIP_CONTIGUOUS, 5, 5, 5120, 98304, 197493},
        {4, KVSHARD_OWNERSHIP_ORDINAL, 2, 3, 6144, 131072, 148120},
        {4, KVSHARD_OWNERSHIP_GLOBAL, 0, 10, 20480, 360448, 53861},
        {4, KVSHARD_OWNERSHIP_CONTIGUOUS, 2, 3, 6144, 131072, 148120},
    };
    for (size_t i = 0; i < 9; i++) {
        const kvshard_comparison_row *row = kvshard_comparison_row_at(cmp, i);
        assert_non_null(row);
        assert_int_equal(row->layerwise_split_size, want[i].s);
        assert_int_equal(row->ownership, want[i].rule);
        assert_int_equal(row->error, KVSHARD_OK);
        assert_int_equal(row->min_owned_layers, want[i].min_owned);
        assert_int_equal(row->max_owned_layers, want[i].max_owned);
        assert_int_equal(row->max_kv_bytes_per_token, want[i].max_kv);
        assert_int_equal(row->max_bytes_per_block, want[i].max_block);
        assert_true(row->has_num_blocks);
        assert_int_equal(row->num_blocks, want[i].blocks);
        assert_int_equal(row->max_tokens, want[i].blocks * 16);
        assert_false(row->has_concurrency); /* no context length */
    }
    assert_null(kvshard_comparison_row_at(cmp, 9));
    assert_int_equal(kvshard_comparison_recommended(cmp), 3);
    const kvshard_comparison_row *s2 = kvshard_comparison_row_at(cmp, 3);
    /* gain 197493 / 118496 = 1.66667 */
    assert_true(s2->gain > 1.6666 && s2->gain < 1.6667);
    assert_int_equal(s2->warnings, 0);
    const kvshard_comparison_row *s2g = kvshard_comparison_row_at(cmp, 4);
    assert_true(s2g->warnings & (1u << KVSHARD_WARN_RANK_OWNS_NOTHING));
    assert_true(s2g->warnings & (1u << KVSHARD_WARN_IMBALANCED));
    /* S4 > R = 2 */
    assert_true(kvshard_comparison_row_at(cmp, 6)->warnings &
                (1u << KVSHARD_WARN_EXCEEDS_REPLICATION));
    assert_false(kvshard_comparison_row_at(cmp, 6)->warnings &
                 (1u << KVSHARD_WARN_IMBALANCED)); /* 2 vs 3 */
    kvshard_comparison_free(cmp);
    kvshard_model_free(model);
}

/* A size without a valid plan carries its error in its row: W 8, C 2 ->
 * T = 4; S = 2 and 4 cannot go with CP (ESPLITCP); S = 1 is fine, so it is
 * recommended. T = 4 ranks each: H_kv 2 -> R 2, 1 head per rank. */
static void test_comparison_row_errors(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.world_size = 8;
    o.cp_size = 2;
    kvshard_comparison *cmp = NULL;
    assert_int_equal(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, NULL), KVSHARD_OK);
    assert_int_equal(kvshard_comparison_row_count(cmp), 9);
    for (size_t i = 0; i < 9; i++) {
        const kvshard_comparison_row *row = kvshard_comparison_row_at(cmp, i);
        if (row->layerwise_split_size == 1) {
            assert_int_equal(row->error, KVSHARD_OK);
            assert_string_equal(row->error_message, "");
            assert_int_equal(row->num_blocks, 118496);
        } else {
            assert_int_equal(row->error, KVSHARD_ESPLITCP);
            assert_true(strlen(row->error_message) > 0);
            assert_int_equal(row->num_blocks, 0);
            assert_int_equal(row->max_bytes_per_block, 0);
        }
    }
    assert_int_equal(kvshard_comparison_recommended(cmp), 0);
    kvshard_comparison_free(cmp);

    /* The split fields of the options are ignored: enabling S = 2 with CP
     * does not make the comparison fail. An error no size avoids does. */
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    assert_int_equal(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, NULL), KVSHARD_OK);
    kvshard_comparison_free(cmp);
    o.world_size = 7; /* 7 % 2 != 0 */
    cmp = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, &err), KVSHARD_EWORLD);
    assert_null(cmp);
    kvshard_model_free(model);
}

/* Comparison without memory_per_rank: ranked by bytes per block (fewest
 * wins): S1 163840, S2 ord 98304, S2 glob 180224, S2 contiguous 98304 (a
 * tie, later), S4 ord 131072, S4 glob 360448 -> S2 ordinal (row 3). gain =
 * uniform block / row block: S2 ordinal 163840 / 98304 = 1.6667. */
/* When the unsplit plan fits no block, the split's gain is unbounded:
 * reserved 2060451840 (seed state x 128) + 100000 bytes holds one 98304-byte
 * block at S = 2 ordinal and no 163840-byte uniform block. The S = 1 rows
 * carry ENOBLOCK, the S = 2 ordinal row is recommended with gain HUGE_VAL
 * (JSON null). */
static void test_comparison_uniform_fits_nothing(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.max_seqs = 128;
    o.memory_per_rank = 2060451840ull + 100000ull;
    kvshard_comparison *cmp = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, &err), KVSHARD_OK);
    assert_int_equal(kvshard_comparison_row_at(cmp, 0)->error, KVSHARD_ENOBLOCK);
    size_t best = kvshard_comparison_recommended(cmp);
    const kvshard_comparison_row *row = kvshard_comparison_row_at(cmp, best);
    assert_int_equal(row->layerwise_split_size, 2);
    assert_int_equal(row->ownership, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(row->num_blocks, 1);
    assert_true(row->gain == HUGE_VAL);
    kvshard_comparison_free(cmp);
    kvshard_model_free(model);
}

static void test_comparison_without_capacity(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed_options();
    o.memory_per_rank = 0;
    kvshard_comparison *cmp = NULL;
    assert_int_equal(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, NULL), KVSHARD_OK);
    assert_int_equal(kvshard_comparison_recommended(cmp), 3);
    const kvshard_comparison_row *row = kvshard_comparison_row_at(cmp, 3);
    assert_false(row->has_num_blocks);
    assert_int_equal(row->max_bytes_per_block, 98304);
    assert_true(row->gain > 1.6666 && row->gain < 1.6667);
    kvshard_comparison_free(cmp);
    kvshard_model_free(model);
}

/*
 * A split group whose ranks hold two different KV heads stores both.
 * H = 4, T = 12: rank r holds head floor(r x 4 / 12) = floor(r / 3):
 *   ranks 0-2 head 0, 3-5 head 1, 6-8 head 2, 9-11 head 3; R = 3.
 * S = 2, groups {0,1} {2,3} {4,5} {6,7} {8,9} {10,11}: unions 1, 2, 1, 1, 2,
 *   1 heads. One head of one layer: 2 x 128 x 2 = 512 B a token.
 * Ordinal: split rank 0 owns layers 5 and 25, split rank 1 layers 15 and 35.
 *   Ranks 2, 3, 8, 9: kv 2 x (2 x 512) = 2048, scratch 1024,
 *     block 16 x 3072 = 49152.
 *   The others: kv 2 x 512 = 1024, scratch 512, block 16 x 1536 = 24576.
 * State (T = 12): conv 2 x ((48 x 64 + 2 x 12 x 128) / 12) x 3 = 2 x 512 x 3
 *   = 3072 (one group < T: each rank keeps a copy, G' = 12); temporal
 *   2 x (48 / 12) x 64 x 128 = 65536; 36 Mamba2 layers x 68608 = 2469888.
 */
static void test_split_group_straddles_heads(void **state)
{
    (void)state;
    kvshard_model *model = tu_granite_tiny();
    kvshard_options o = split_options(12, 2);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_replication_factor(plan), 3);
    for (uint32_t r = 0; r < 12; r++) {
        bool two = r == 2 || r == 3 || r == 8 || r == 9;
        assert_rank(plan, r, two ? 2048 : 1024, two ? 1024 : 512, 0, two ? 49152 : 24576,
                    2469888);
    }
    /* The per-layer query says the same: rank 3 (split rank 1) owns layer
     * 15 with heads 0 and 1, 1024 B a token. */
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&st, plan, 3, 15), KVSHARD_OK);
    assert_true(st.stores_kv);
    assert_int_equal(st.kv_head_first, 0);
    assert_int_equal(st.kv_head_count, 2);
    assert_int_equal(st.kv_bytes_per_token, 1024);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/*
 * compare on the same model, 1 GiB a rank, 16 sequences:
 *   reserved 16 x 2469888 = 39518208; free 1073741824 - 39518208 = 1034223616.
 * S = 1: every rank 1 head: kv 4 x 512 = 2048, block 32768: 31562 blocks
 *   (32768 x 31562 = 1034223616 exactly).
 * S = 2 (above): the binding block is 49152: 21041 blocks (remainder 16384);
 *   sized with group 0's one head it would be 24576 and 42082 blocks.
 * S = 3 = R: each group lies inside one head's replicas (1 head); ordinal
 *   counts 2, 1, 1: kv 2 x 512 + scratch 512, block 16 x 1536 = 24576:
 *   42082 blocks (24576 x 42082 = 1034207232, remainder 16384).
 * S = 4: groups {0..3} {4..7} {8..11} hold heads 0-1, 1-2, 2-3 (2 each);
 *   one layer each: 1024 + 1024, block 32768: 31562.
 * S = 6: groups of 2 heads, at most one layer: 32768 again, 31562.
 * S = 12: all 4 heads, 2048 + 2048, block 65536: 15781 (exactly).
 * The most blocks: S = 3, ordinal first (global and contiguous also have a
 * split rank owning 2 layers: the same figures). With group 0's heads S = 2
 * tied it and, smaller, won.
 */
static void test_comparison_straddling_groups(void **state)
{
    (void)state;
    kvshard_model *model = tu_granite_tiny();
    kvshard_options o = split_options(12, 2);
    o.memory_per_rank = GIB;
    o.max_seqs = 16;
    kvshard_comparison *cmp = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_comparison_create(&cmp, model, &o, NULL, NULL, &err), &err);
    static const struct {
        uint32_t s;
        uint64_t block, blocks;
    } want[] = {{1, 32768, 31562}, {2, 49152, 21041}, {3, 24576, 42082},
                {4, 32768, 31562}, {6, 32768, 31562}, {12, 65536, 15781}};
    size_t seen = 0;
    for (size_t i = 0; i < kvshard_comparison_row_count(cmp); i++) {
        const kvshard_comparison_row *row = kvshard_comparison_row_at(cmp, i);
        if (row->ownership != KVSHARD_OWNERSHIP_ORDINAL)
            continue;
        for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
            if (want[k].s != row->layerwise_split_size)
                continue;
            assert_int_equal(row->error, KVSHARD_OK);
            assert_int_equal(row->max_bytes_per_block, want[k].block);
            assert_true(row->has_num_blocks);
            assert_int_equal(row->num_blocks, want[k].blocks);
            seen++;
        }
    }
    assert_int_equal(seen, 6);
    const kvshard_comparison_row *best =
        kvshard_comparison_row_at(cmp, kvshard_comparison_recommended(cmp));
    assert_int_equal(best->layerwise_split_size, 3);
    assert_int_equal(best->ownership, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(best->num_blocks, 42082);
    kvshard_comparison_free(cmp);
    kvshard_model_free(model);
}

/* kvshard_memory__other_group's closed form against every group's union
 * counted from the head rule, for every T up to 240, every H and S
 * dividing it with H and T dividing one another: the first group whose
 * union differs from group 0's (0 for none), and never a third union. */
static void test_other_group_by_count(void **state)
{
    (void)state;
    kvshard__model_info m;
    memset(&m, 0, sizeof m);
    uint32_t differ = 0;
    for (uint32_t T = 1; T <= 240; T++) {
        for (uint32_t H = 1; H <= 2 * T; H++) {
            if (H % T != 0 && T % H != 0)
                continue;
            m.full.heads = H;
            for (uint32_t S = 1; S <= T; S++) {
                if (T % S != 0)
                    continue;
                uint32_t first, u0, u, other = 0, high = 0;
                kvshard_memory__kv_heads(&first, &u0, H, T, 0, S - 1);
                for (uint32_t g = 1; g < T / S; g++) {
                    kvshard_memory__kv_heads(&first, &u, H, T, g * S, g * S + S - 1);
                    if (u != u0 && other == 0)
                        other = g;
                    if (u != u0)
                        high = high ? high : u;
                    assert_true(u == u0 || u == high); /* two unions at most */
                }
                assert_int_equal(kvshard_memory__other_group(&m, T, S), other);
                differ += other != 0;
            }
        }
    }
    assert_true(differ > 0);
    /* Granite at T = 12 (H 4): group 1 = ranks 2, 3 at S = 2; none at 3, 4, 6, 12. */
    m.full.heads = 4;
    assert_int_equal(kvshard_memory__other_group(&m, 12, 2), 1);
    assert_int_equal(kvshard_memory__other_group(&m, 12, 4), 0);
}

static void *plain_malloc(void *user, size_t size)
{
    (void)user;
    return malloc(size);
}

/* A comparison refuses a half-set allocator as a plan does. */
static void test_comparison_half_set_allocator(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_allocator bad = {plain_malloc, NULL, NULL}; /* malloc_fn set, free_fn not */
    kvshard_comparison *cmp = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_comparison_create(&cmp, m, NULL, NULL, &bad, &err), KVSHARD_EINVAL);
    assert_non_null(strstr(err.message, "malloc_fn and free_fn must both be set"));
    assert_null(cmp);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_scenario),
        cmocka_unit_test(test_seed_unsplit),
        cmocka_unit_test(test_scratch_layers),
        cmocka_unit_test(test_fp8_gqa_scales),
        cmocka_unit_test(test_seed_split4),
        cmocka_unit_test(test_draft_layers_with_spec),
        cmocka_unit_test(test_draft_uses_own_heads),
        cmocka_unit_test(test_deepseek_fp8_split8),
        cmocka_unit_test(test_gqa_kv_heads_at_least_tp),
        cmocka_unit_test(test_qwen3_next_tp8_split4),
        cmocka_unit_test(test_minimax_lightning_state),
        cmocka_unit_test(test_kimi_kda_state),
        cmocka_unit_test(test_gpt_oss_sliding_window),
        cmocka_unit_test(test_no_memory_for_one_block),
        cmocka_unit_test(test_num_blocks_for),
        cmocka_unit_test(test_overflow),
        cmocka_unit_test(test_comparison_seed),
        cmocka_unit_test(test_comparison_row_errors),
        cmocka_unit_test(test_comparison_without_capacity),
        cmocka_unit_test(test_comparison_uniform_fits_nothing),
        cmocka_unit_test(test_split_group_straddles_heads),
        cmocka_unit_test(test_comparison_straddling_groups),
        cmocka_unit_test(test_other_group_by_count),
        cmocka_unit_test(test_comparison_half_set_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
