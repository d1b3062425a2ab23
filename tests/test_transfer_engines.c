/* kvshard transfer beside the engines: vLLM's attention block of each side,
 * worked by hand from its block rule, and the sources vLLM's TP mapping
 * reads, reproduced by kvshard's own engine-neutral route (docs/transfer.md). */
#include "test_util.h"

#include "kvshard/explore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kvshard_plan *plan_tp(const kvshard_model *m, kvshard_engine engine, uint32_t world)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = engine;
    o.world_size = world;
    return tu_plan(m, &o);
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
    kvshard_transfer *t = tu_transfer(p, d, 0);
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

/* ---- verdicts ---------------------------------------------------------------------------- */

/* A pair as the transfer plans it: world, stages, split and speculation of
 * each side. */
typedef struct side_of {
    uint32_t world, pp, split;
    kvshard_dtype kv_dtype;
} side_of;

static kvshard_plan *side_plan(const kvshard_model *m, const side_of *s, kvshard_engine engine,
                               const char *version)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = engine;
    o.kv_cache_dtype = s->kv_dtype;
    /* An engine's plan of a side is one stage's ranks (its TP size) with
     * the split off: the engine's block depends on neither. */
    bool own = engine == KVSHARD_ENGINE_KVSHARD;
    o.pp_size = own ? s->pp : 1;
    o.world_size = own ? s->world : s->world / s->pp;
    bool split = own && s->split > 1;
    o.enable_layerwise_split = split;
    o.layerwise_split_size = split ? s->split : 1;
    kvshard_settings *settings = version ? tu_settings("engine_version", version, NULL) : NULL;
    o.settings = settings;
    kvshard_plan *plan = tu_plan(m, &o);
    kvshard_settings_free(settings);
    return plan;
}

/* The verdict of `engine` at `version` (NULL: its default) on the pair,
 * written "verdict code code ... | requirement ...". */
static void assert_verdict(const kvshard_model *m, const side_of *p, const side_of *d,
                           kvshard_engine engine, const char *version, const char *expected)
{
    kvshard_plan *tp = side_plan(m, p, KVSHARD_ENGINE_KVSHARD, NULL);
    kvshard_plan *td = side_plan(m, d, KVSHARD_ENGINE_KVSHARD, NULL);
    kvshard_plan *ep = side_plan(m, p, engine, version);
    kvshard_plan *ed = side_plan(m, d, engine, version);
    kvshard_transfer *t = tu_transfer(tp, td, 0);
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_judge(t, ep, ed, &err), &err);
    assert_int_equal(kvshard_transfer_verdict_count(t), 1);
    kvshard_transfer_verdict v = KVSHARD_TRANSFER_VERDICT_INIT;
    assert_int_equal(kvshard_transfer_verdict_at(&v, t, 0), KVSHARD_OK);
    assert_int_equal(v.engine, engine);
    char got[512];
    size_t n = (size_t)snprintf(got, sizeof got, "%s", v.verdict);
    for (size_t i = 0; i < v.reason_count; i++)
        n += (size_t)snprintf(got + n, sizeof got - n, " %s", v.reason_codes[i]);
    if (v.require_count)
        n += (size_t)snprintf(got + n, sizeof got - n, " |");
    for (size_t i = 0; i < v.require_count; i++)
        n += (size_t)snprintf(got + n, sizeof got - n, " %s", v.requires[i]);
    if (strcmp(got, expected) != 0)
        fail_msg("%s %s: \"%s\", expected \"%s\"", kvshard_engine_name(engine),
                 version ? version : "default", got, expected);
    /* An engine is judged once. */
    assert_int_equal(kvshard_transfer_judge(t, ep, ed, &err), KVSHARD_EINVAL);
    kvshard_transfer_free(t);
    kvshard_plan_free(ed);
    kvshard_plan_free(ep);
    kvshard_plan_free(td);
    kvshard_plan_free(tp);
}

/* Qwen3.5-35B-A3B, P TP 2 -> D TP 4 with a split of 2 on D. vLLM's blocks
 * are 1,056 on P and 528 on D: 528 is no multiple of 1,056; its state
 * layers need the DS conv layout from 0.20.0. SGLang splits on prefill
 * workers only. xLLM: another TP size needs push mode, and qwen3_5_moe is
 * not a model upstream splits. Without the split: vLLM's blocks alone
 * refuse, SGLang supports, xLLM needs push mode only. */
static void test_verdicts_qwen3_5(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    const side_of p = {2, 1, 1, KVSHARD_DTYPE_AUTO}, d = {4, 1, 2, KVSHARD_DTYPE_AUTO},
                  unsplit = {4, 1, 1, KVSHARD_DTYPE_AUTO};
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_VLLM, NULL,
                   "refused vllm_split vllm_block_ratio | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_SGLANG, NULL, "refused sglang_d_split");
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_XLLM, NULL,
                   "supported | kv_mode=PUSH layerwise_split_build");
    assert_verdict(m, &p, &unsplit, KVSHARD_ENGINE_VLLM, NULL,
                   "refused vllm_block_ratio | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &p, &unsplit, KVSHARD_ENGINE_SGLANG, NULL, "supported");
    assert_verdict(m, &p, &unsplit, KVSHARD_ENGINE_XLLM, NULL, "supported | kv_mode=PUSH");
    kvshard_model_free(m);
}

/* vLLM by version on Qwen3.5-35B-A3B's blocks (1,056 at TP 1 and 2, 528 at
 * TP 4). TP 2 -> TP 4: 528 is no multiple of 1,056, and before 0.27.0 a
 * hybrid's blocks must match. TP 4 -> TP 2: 1,056 is a multiple of 528,
 * refused before 0.27.0 only. TP 1 -> TP 2: equal blocks; state between
 * two TP sizes needs 0.20.0. */
static void test_verdicts_vllm_versions(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    const side_of tp1 = {1, 1, 1, KVSHARD_DTYPE_AUTO}, tp2 = {2, 1, 1, KVSHARD_DTYPE_AUTO},
                  tp4 = {4, 1, 1, KVSHARD_DTYPE_AUTO};
    assert_verdict(m, &tp2, &tp4, KVSHARD_ENGINE_VLLM, "0.26.0",
                   "refused vllm_block_ratio vllm_block_hma | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &tp4, &tp2, KVSHARD_ENGINE_VLLM, "0.26.0",
                   "refused vllm_block_hma | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &tp4, &tp2, KVSHARD_ENGINE_VLLM, "0.28.0",
                   "supported | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &tp1, &tp2, KVSHARD_ENGINE_VLLM, "0.20.0",
                   "supported | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &tp1, &tp2, KVSHARD_ENGINE_VLLM, "0.19.0", "refused vllm_state_tp");
    kvshard_model_free(m);
}

/* DeepSeek-V3.2 with an fp8 KV cache, P TP 8 -> D TP 8: without a split
 * every engine supports it; with a split of 8 on D vLLM has no split,
 * SGLang splits on prefill only, and xLLM runs it with neither push mode
 * (same dp and TP) nor a split build (deepseek_v32 is split upstream). */
static void test_verdicts_deepseek_v3_2(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    const side_of p = {8, 1, 1, KVSHARD_DTYPE_FP8}, split = {8, 1, 8, KVSHARD_DTYPE_FP8};
    assert_verdict(m, &p, &p, KVSHARD_ENGINE_VLLM, NULL, "supported");
    assert_verdict(m, &p, &p, KVSHARD_ENGINE_SGLANG, NULL, "supported");
    assert_verdict(m, &p, &p, KVSHARD_ENGINE_XLLM, NULL, "supported");
    assert_verdict(m, &p, &split, KVSHARD_ENGINE_VLLM, NULL, "refused vllm_split");
    assert_verdict(m, &p, &split, KVSHARD_ENGINE_SGLANG, NULL, "refused sglang_d_split");
    assert_verdict(m, &p, &split, KVSHARD_ENGINE_XLLM, NULL, "supported");
    kvshard_model_free(m);
}

/* Qwen3-Next-80B-A3B, P 2 stages x TP 2 -> D TP 4: vLLM stages prefill
 * only for models without state layers, and its blocks are 544 at TP 2
 * and 272 at TP 4 (272 is no multiple of 544); SGLang takes D's one
 * stage; xLLM has no stages. */
static void test_verdicts_qwen3_next_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    const side_of p = {4, 2, 1, KVSHARD_DTYPE_AUTO}, d = {4, 1, 1, KVSHARD_DTYPE_AUTO};
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_VLLM, NULL,
                   "refused vllm_pp vllm_block_ratio | VLLM_SSM_CONV_STATE_LAYOUT=DS");
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_SGLANG, NULL, "supported");
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_XLLM, NULL, "refused xllm_pp | kv_mode=PUSH");
    kvshard_model_free(m);
}

/* MiniMax-M2 (62 GQA layers, 8 KV heads), P TP 16 -> D TP 8: P replicates
 * each head on two ranks and its TP is larger than D's, which vLLM's NIXL
 * handshake refuses; SGLang supports it; xLLM needs push mode for another
 * TP size. */
static void test_verdicts_minimax_m2(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{\"model_type\": \"minimax_m2\", \"num_hidden_layers\": 62, \"hidden_size\": 3072,"
        " \"num_attention_heads\": 48, \"num_key_value_heads\": 8, \"head_dim\": 128,"
        " \"max_position_embeddings\": 196608, \"torch_dtype\": \"bfloat16\"}");
    const side_of p = {16, 1, 1, KVSHARD_DTYPE_AUTO}, d = {8, 1, 1, KVSHARD_DTYPE_AUTO};
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_VLLM, NULL, "refused vllm_replicated_kv");
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_SGLANG, NULL, "supported");
    assert_verdict(m, &p, &d, KVSHARD_ENGINE_XLLM, NULL, "supported | kv_mode=PUSH");
    kvshard_model_free(m);
}

/* An engine whose profile does not cover the model: its one reason. */
static void test_verdict_unsupported(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    kvshard_plan *p = plan_tp(m, KVSHARD_ENGINE_KVSHARD, 2);
    kvshard_transfer *t = tu_transfer(p, p, 0);
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_judge_unsupported(t, KVSHARD_ENGINE_SGLANG, NULL,
                                                    "the model's kind", &err),
                 &err);
    kvshard_transfer_verdict v = KVSHARD_TRANSFER_VERDICT_INIT;
    assert_int_equal(kvshard_transfer_verdict_at(&v, t, 0), KVSHARD_OK);
    assert_string_equal(v.verdict, "unsupported");
    assert_string_equal(v.version, "0.5.21");
    assert_int_equal(v.reason_count, 1);
    assert_string_equal(v.reason_codes[0], "engine_unsupported");
    assert_string_equal(v.reason_messages[0], "the model's kind");
    assert_int_equal(kvshard_transfer_verdict_at(&v, t, 1), KVSHARD_EINVAL);
    /* kvshard's own profile judges no transfer. */
    assert_int_equal(kvshard_transfer_judge(t, p, p, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_verdict_count(t), 1);
    kvshard_transfer_free(t);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* ---- the command ------------------------------------------------------------------------- */

#define QWEN KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define QWEN_PAIR "'" QWEN "' '" QWEN "' --p.world_size=2 --d.world_size=4 "

/* Qwen3.5-35B-A3B P TP 2 -> D TP 4 without a split: vLLM refuses (528 is no
 * multiple of 1,056; at 0.26.0 a hybrid's blocks must also match), exit 1
 * with the document written; SGLang supports it, exit 0; without --engine
 * every engine is listed and a refusal is information. */
static void test_command_engine(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(tu_cli("transfer", QWEN_PAIR "--engine=vllm --format=json", &out, &err), 1);
    tu_assert_contains(out, "\"verdicts\": [\n    {\"engine\": \"vllm\", \"version\": \"0.28.0\", "
                            "\"verdict\": \"refused\",\n     \"reasons\": [{\"code\": "
                            "\"vllm_block_ratio\", \"message\": \"D's block 528 is not a multiple "
                            "of P's 1,056\"}],\n     \"requires\": "
                            "[\"VLLM_SSM_CONV_STATE_LAYOUT=DS\"]}\n  ],\n");
    assert_string_equal(err, "kvshard: transfer: transfer_refused: vllm 0.28.0 refuses the pair "
                             "(vllm_block_ratio)\n");
    free(out);
    free(err);
    assert_int_equal(
        tu_cli("transfer", QWEN_PAIR "--engine=vllm --engine_version=0.26.0", &out, &err), 1);
    tu_assert_contains(out, "verdict    vllm 0.26.0: refused (vllm_block_ratio: D's block 528 is "
                            "not a multiple of P's 1,056; vllm_block_hma: the blocks differ (1,056 "
                            "on P, 528 on D): with sliding or state layers they must match before "
                            "0.27.0); requires VLLM_SSM_CONV_STATE_LAYOUT=DS\nedges");
    free(out);
    free(err);
    assert_int_equal(tu_cli("transfer", QWEN_PAIR "--engine=sglang", &out, &err), 0);
    tu_assert_contains(out, "\nverdict    sglang 0.5.21: supported\nedges");
    assert_string_equal(err, "");
    free(out);
    free(err);
    assert_int_equal(tu_cli("transfer", QWEN_PAIR, &out, &err), 0);
    tu_assert_contains(out, "\nverdict    vllm 0.28.0: refused");
    tu_assert_contains(out, "\nverdict    sglang 0.5.21: supported\n"
                            "verdict    xllm 0.11.0: supported; requires kv_mode=PUSH\n");
    free(out);
    free(err);
}

/* The flags' refusals: exit status and message. */
static void test_command_engine_errors(void **state)
{
    (void)state;
    static const struct {
        const char *args;
        int status;
        const char *message;
    } cases[] = {
        {QWEN_PAIR "--engine=trtllm", 2,
         "kvshard: transfer: transfer_usage: --engine takes vllm, sglang or xllm, not trtllm\n"},
        {QWEN_PAIR "--engine_version=0.28.0", 2,
         "kvshard: transfer: transfer_usage: --engine_version needs --engine\n"},
        {QWEN_PAIR "--engine=vllm --engine_version=0.8.0", 1,
         "kvshard: transfer: engine_version_unsupported: "},
        {QWEN_PAIR "--engine=vllm --engine_version=0.20", 2,
         "kvshard: transfer: engine_version_invalid: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL, *err = NULL;
        int status = tu_cli("transfer", cases[i].args, &out, &err);
        if (status != cases[i].status ||
            strncmp(err, cases[i].message, strlen(cases[i].message)) != 0)
            fail_msg("transfer %s: exit %d, stderr:\n%s", cases[i].args, status, err);
        assert_string_equal(out, "");
        free(out);
        free(err);
    }
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
        cmocka_unit_test(test_verdicts_qwen3_5),
        cmocka_unit_test(test_verdicts_vllm_versions),
        cmocka_unit_test(test_verdicts_deepseek_v3_2),
        cmocka_unit_test(test_verdicts_qwen3_next_stages),
        cmocka_unit_test(test_verdicts_minimax_m2),
        cmocka_unit_test(test_verdict_unsupported),
        cmocka_unit_test(test_command_engine),
        cmocka_unit_test(test_command_engine_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
