/* kvshard transfer beside the engines: vLLM's attention block of each side,
 * worked by hand from its block rule, and the sources vLLM's TP mapping
 * reads, reproduced by kvshard's own engine-neutral route (docs/transfer.md). */
#include "test_util.h"

#include "kvshard/explore.h"

#include <string.h>

static kvshard_plan *plan_tp(const kvshard_model *m, kvshard_engine engine, uint32_t world)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = engine;
    o.world_size = world;
    return tu_plan(m, &o);
}

static kvshard_transfer *transfer(const kvshard_plan *p, const kvshard_plan *d)
{
    kvshard_transfer *t = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_create(&t, p, d, NULL, NULL, &err), &err);
    return t;
}

/* The edges of a transfer as (src, dst, component, lo, hi), in its order. */
typedef struct expected_edge {
    uint32_t src, dst;
    const char *component;
    uint32_t lo, hi;
} expected_edge;

static void assert_edges(const kvshard_transfer *t, const expected_edge *want, size_t count)
{
    assert_int_equal(kvshard_transfer_edge_count(t), count);
    for (size_t i = 0; i < count; i++) {
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(t, i);
        if (e->src != want[i].src || e->dst != want[i].dst ||
            strcmp(e->component, want[i].component) != 0 || e->unit_lo != want[i].lo ||
            e->unit_hi != want[i].hi)
            fail_msg("edge %zu: %u -> %u %s [%u, %u), expected %u -> %u %s [%u, %u)", i, e->src,
                     e->dst, e->component, e->unit_lo, e->unit_hi, want[i].src, want[i].dst,
                     want[i].component, want[i].lo, want[i].hi);
    }
}

static void assert_pair(const kvshard_model *m, uint32_t tp_p, uint32_t tp_d,
                        const expected_edge *want, size_t count)
{
    kvshard_plan *p = plan_tp(m, KVSHARD_ENGINE_KVSHARD, tp_p);
    kvshard_plan *d = plan_tp(m, KVSHARD_ENGINE_KVSHARD, tp_d);
    kvshard_transfer *t = transfer(p, d);
    assert_edges(t, want, count);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
}

/* Qwen3.5-35B-A3B under vLLM, requested block 16, temporal state float32:
 * a1 = 2 x max(1, 2 / T) x 256 x 2 = 2,048 at TP 1 and 1,024 from TP 2 on;
 * one GDN layer's state page = 49,152 / T + 2,097,152 / T; the block is
 * 16 x ceil(page / (16 x a1)):
 *   TP 1: 16 x ceil(2,146,304 / 32,768) = 16 x 66 = 1,056
 *   TP 2: 16 x ceil(1,073,152 / 16,384) = 16 x 66 = 1,056
 *   TP 4: 16 x ceil(536,576 / 16,384)   = 16 x 33 = 528
 *   TP 8: 16 x ceil(268,288 / 16,384)   = 16 x 17 = 272 */
static void test_vllm_block_sizes_qwen3_5(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    static const uint32_t tp[] = {1, 2, 4, 8};
    static const uint32_t block[] = {1056, 1056, 528, 272};
    static const uint64_t state_page[] = {2146304, 1073152, 536576, 268288};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(state_page[i], (UINT64_C(49152) + 2097152) / tp[i]);
        uint64_t a1 = tp[i] == 1 ? 2048 : 1024;
        assert_int_equal(block[i], 16 * ((state_page[i] + 16 * a1 - 1) / (16 * a1)));
        kvshard_plan *plan = plan_tp(m, KVSHARD_ENGINE_VLLM, tp[i]);
        kvshard_capacity c = KVSHARD_CAPACITY_INIT;
        assert_int_equal(kvshard_plan_capacity(&c, plan), KVSHARD_OK);
        assert_int_equal(c.engine, KVSHARD_ENGINE_VLLM);
        if (c.block_size != block[i])
            fail_msg("TP %u: vLLM's block %u, expected %u", tp[i], c.block_size, block[i]);
        kvshard_plan_free(plan);
    }
    kvshard_model_free(m);
}

/* vLLM's TP mapping, by its rules: a D rank reads the one P rank
 * floor(t_D x T_P / T_D) when T_D >= T_P and for MLA; when T_P > T_D it
 * reads the P ranks [t_D k, (t_D + 1) k), k = T_P / T_D, keeping for KV
 * heads the first rank of each distinct head and for state heads every
 * rank. Each case below is that mapping, worked by hand, and kvshard's
 * route gives the same edges. */

/* Llama-3.1-8B: 32 layers, 8 KV heads. T_P 2 -> T_D 4: D rank t holds heads
 * [2t, 2t + 2) and reads P rank floor(t x 2 / 4) = 0, 0, 1, 1, which holds
 * [0, 4) or [4, 8). */
static void test_tp_mapping_decode_larger(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    static const expected_edge want[] = {
        {0, 0, "kv", 0, 2}, {0, 1, "kv", 2, 4}, {1, 2, "kv", 4, 6}, {1, 3, "kv", 6, 8}};
    assert_pair(m, 2, 4, want, 4);
    kvshard_model_free(m);
}

/* T_P 4 -> T_D 2, k = 2: D rank t holds [4t, 4t + 4) and reads P ranks 2t
 * ([4t, 4t + 2)) and 2t + 1 ([4t + 2, 4t + 4)): two sources a D rank. */
static void test_tp_mapping_prefill_larger(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    static const expected_edge want[] = {
        {0, 0, "kv", 0, 2}, {1, 0, "kv", 2, 4}, {2, 1, "kv", 4, 6}, {3, 1, "kv", 6, 8}};
    assert_pair(m, 4, 2, want, 4);
    kvshard_model_free(m);
}

/* T_P 16 -> T_D 4 with 8 KV heads: P ranks 2h and 2h + 1 hold head h. D rank
 * t holds heads 2t and 2t + 1 and its range is P ranks [4t, 4t + 4), holding
 * heads 2t, 2t, 2t + 1, 2t + 1: the first rank of each distinct head is 4t
 * for head 2t and 4t + 2 for head 2t + 1. */
static void test_tp_mapping_replicated_heads(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    expected_edge want[8];
    for (uint32_t t = 0; t < 4; t++) {
        want[2 * t] = (expected_edge){4 * t, t, "kv", 2 * t, 2 * t + 1};
        want[2 * t + 1] = (expected_edge){4 * t + 2, t, "kv", 2 * t + 1, 2 * t + 2};
    }
    assert_pair(m, 16, 4, want, 8);
    kvshard_model_free(m);
}

/* MLA (DeepSeek-V3.2, a latent and an indexer key every rank keeps whole):
 * a D rank reads the one P rank floor(t_D x T_P / T_D) whichever side is
 * larger. T_P 8 -> T_D 4: D rank t reads P rank 2t; T_P 4 -> T_D 8: D rank
 * t reads P rank floor(t / 2). */
static void test_tp_mapping_mla(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    expected_edge shrink[8], grow[16];
    for (uint32_t t = 0; t < 4; t++) {
        shrink[2 * t] = (expected_edge){2 * t, t, "latent", 0, 1};
        shrink[2 * t + 1] = (expected_edge){2 * t, t, "index", 0, 1};
    }
    for (uint32_t t = 0; t < 8; t++) {
        grow[2 * t] = (expected_edge){t / 2, t, "latent", 0, 1};
        grow[2 * t + 1] = (expected_edge){t / 2, t, "index", 0, 1};
    }
    assert_pair(m, 8, 4, shrink, 8);
    assert_pair(m, 4, 8, grow, 16);
    kvshard_model_free(m);
}

/* A hybrid (Qwen3.5-35B-A3B: 2 KV heads; GDN key heads 16, value heads 32)
 * with T_P 4 -> T_D 2: P ranks 0 and 1 both hold KV head 0, so D rank 0
 * reads its KV head from the first, P rank 0, while its state heads (key
 * heads [0, 8), value heads [0, 16)) come from every rank of its range: P
 * rank 0 key heads [0, 4) and value heads [0, 8), P rank 1 the next. D rank
 * 1 likewise from P ranks 2 and 3. */
static void test_tp_mapping_hybrid_state(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    expected_edge want[18];
    size_t n = 0;
    for (uint32_t t = 0; t < 2; t++) {
        for (uint32_t k = 0; k < 2; k++) {
            uint32_t src = 2 * t + k, q = 4 * src, v = 8 * src;
            if (k == 0)
                want[n++] = (expected_edge){src, t, "kv", t, t + 1};
            want[n++] = (expected_edge){src, t, "conv_q", q, q + 4};
            want[n++] = (expected_edge){src, t, "conv_k", q, q + 4};
            want[n++] = (expected_edge){src, t, "conv_v", v, v + 8};
            want[n++] = (expected_edge){src, t, "ssm", v, v + 8};
        }
    }
    assert_pair(m, 4, 2, want, n);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_block_sizes_qwen3_5),
        cmocka_unit_test(test_tp_mapping_decode_larger),
        cmocka_unit_test(test_tp_mapping_prefill_larger),
        cmocka_unit_test(test_tp_mapping_replicated_heads),
        cmocka_unit_test(test_tp_mapping_mla),
        cmocka_unit_test(test_tp_mapping_hybrid_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
