/* kvshard transfer: the route and bytes of moving a request's cache from a
 * prefill plan to a decode plan, checked against figures worked by hand
 * from the route's rules (docs/transfer.md). */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kvshard_transfer_totals totals_of(const kvshard_transfer *t)
{
    kvshard_transfer_totals tt = KVSHARD_TRANSFER_TOTALS_INIT;
    assert_int_equal(kvshard_transfer_totals_get(&tt, t), KVSHARD_OK);
    return tt;
}

static void assert_layers(const kvshard_transfer_edge *e, const uint32_t *layers, size_t count)
{
    assert_int_equal(e->layer_count, count);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(e->layers[i], layers[i]);
}

/* Qwen3.5-35B-A3B, P TP 2 -> D TP 4 with a split of 2, n = 32,768.
 * 40 layers: full attention at 3, 7, ..., 39 (2 KV heads x 256, bf16), 30
 * GDN layers (Hk 16, Hv 32, dk = dv = 128, kernel 4, conv bf16, SSM fp32).
 * Units: kv 2 heads of (256 + 256) x 2 = 1,024 B; conv_q, conv_k 16 heads
 * of 128 x 3 x 2 = 768 B; conv_v 32 heads of 768 B; ssm 32 heads of
 * 128 x 128 x 4 = 65,536 B. */
static void test_qwen3_5_tp2_to_tp4_split2(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_plan *p = tu_plan_tp(m, 2, 1), *d = tu_plan_tp(m, 4, 2);
    kvshard_transfer *t = tu_transfer(p, d, 32768);

    /* 4 (P, D) pairs, each 1 kv edge + 4 state edges. */
    assert_int_equal(kvshard_transfer_edge_count(t), 20);
    /* D rank 0 owns the even KV ordinals (layers 3, 11, 19, 27, 35) of split
     * group {0, 1} (head 0); its home is P rank 0 = floor(0 x 2 / 4). */
    static const uint32_t even[] = {3, 11, 19, 27, 35}, odd[] = {7, 15, 23, 31, 39};
    const kvshard_transfer_edge *e = tu_transfer_edge(t, 0, 0, "kv", 0);
    assert_layers(e, even, 5);
    assert_int_equal(e->unit_hi, 1);
    assert_int_equal(e->entry_bytes, 1024);
    assert_int_equal(e->bytes_per_token, 5 * 1024);     /* 5,120 */
    assert_int_equal(e->bytes, UINT64_C(5120) * 32768); /* 167,772,160 */
    assert_layers(tu_transfer_edge(t, 0, 1, "kv", 0), odd, 5);
    /* D ranks 2 and 3: home P rank 1 = floor(2 x 2 / 4), head 1. */
    assert_layers(tu_transfer_edge(t, 1, 2, "kv", 1), even, 5);
    assert_layers(tu_transfer_edge(t, 1, 3, "kv", 1), odd, 5);

    /* Each D rank holds 4 of 16 key heads: D rank t's conv_q is
     * [4t, 4t + 4), from its home, which holds 8 of them. */
    for (uint32_t td = 0; td < 4; td++) {
        uint32_t src = td / 2;
        const kvshard_transfer_edge *q = tu_transfer_edge(t, src, td, "conv_q", 4 * td);
        assert_int_equal(q->unit_hi, 4 * td + 4);
        assert_int_equal(q->layer_count, 30);
        assert_int_equal(q->entry_bytes, 4 * 768);   /* 3,072 */
        assert_int_equal(q->bytes_fixed, 30 * 3072); /* 92,160 */
        assert_int_equal(tu_transfer_edge(t, src, td, "conv_k", 4 * td)->entry_bytes, 3072);
        assert_int_equal(tu_transfer_edge(t, src, td, "conv_v", 8 * td)->entry_bytes,
                         8 * 768); /* 6,144 */
        assert_int_equal(tu_transfer_edge(t, src, td, "ssm", 8 * td)->entry_bytes,
                         8 * 65536); /* 524,288 */
        assert_string_equal(tu_transfer_edge(t, src, td, "ssm", 8 * td)->entry, "state");
    }

    /* What each rank builds its list from: P rank 1 sends the 10 edges to
     * D ranks 2 and 3; D rank 3 receives 5, all from P rank 1. */
    size_t mine[16];
    assert_int_equal(kvshard_transfer_rank_edges(mine, 16, t, false, 1), 10);
    for (size_t i = 0; i < 10; i++)
        assert_int_equal(kvshard_transfer_edge_at(t, mine[i])->src, 1);
    assert_int_equal(kvshard_transfer_rank_edges(mine, 16, t, true, 3), 5);
    assert_int_equal(kvshard_transfer_edge_at(t, mine[0])->dst, 3);
    assert_int_equal(kvshard_transfer_rank_edges(NULL, 0, t, true, 7), 0);

    kvshard_transfer_totals tt = totals_of(t);
    /* Unique: 10 layers x 2 heads x 1,024 = 20,480 B/token; state
     * (16 + 16 + 32) x 768 + 32 x 65,536 = 2,146,304 B per GDN layer, x 30. */
    assert_int_equal(tt.unique_per_token, 20480);
    assert_int_equal(tt.unique_fixed, UINT64_C(64389120));
    assert_int_equal(tt.wire_per_token, 20480);
    assert_int_equal(tt.wire_fixed, UINT64_C(64389120));
    /* 20,480 x 32,768 + 64,389,120 = 671,088,640 + 64,389,120. */
    assert_int_equal(tt.unique, UINT64_C(735477760));
    assert_int_equal(tt.wire, UINT64_C(735477760));
    assert_true(tt.has_replication);
    assert_true(tt.replication == 1.0);
    /* P rank 0 sends 2 x 5,120 B/token and 2 x 30 x 536,576 B of state:
     * 10,240 x 32,768 + 32,194,560 = 367,738,880. */
    assert_int_equal(tt.busiest_source.global_rank, 0);
    assert_int_equal(tt.busiest_source.bytes_per_token, 10240);
    assert_int_equal(tt.busiest_source.bytes_fixed, UINT64_C(32194560));
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(367738880));
    /* D rank 0: 5,120 x 32,768 + 16,097,280 = 183,869,440. */
    assert_int_equal(tt.busiest_destination.global_rank, 0);
    assert_int_equal(tt.busiest_destination.bytes_fixed, UINT64_C(16097280));
    assert_int_equal(tt.busiest_destination.bytes, UINT64_C(183869440));
    /* ceil(367,738,880 / 50,000) = 7,355 us at 50 GB/s. */
    assert_int_equal(tt.time_us, 7355);
    assert_int_equal(kvshard_transfer_warning_count(t), 0);
    assert_int_equal(kvshard_transfer_digest(t), UINT64_C(0xee1b03cab8841722));

    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The same pair without the split: every D rank needs its head of all ten
 * KV layers, so D ranks 0 and 1 both take head 0 from P rank 0. */
static void test_qwen3_5_tp2_to_tp4_unsplit(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_plan *p = tu_plan_tp(m, 2, 1), *d = tu_plan_tp(m, 4, 1);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    kvshard_transfer_totals tt = totals_of(t);
    assert_int_equal(tt.wire_per_token, 40960); /* 4 ranks x 10 layers x 1,024 */
    /* 40,960 x 32,768 + 64,389,120 = 1,342,177,280 + 64,389,120. */
    assert_int_equal(tt.wire, UINT64_C(1406566400));
    /* 1,406,566,400 / 735,477,760 = 1.91245..., rounded half up. */
    assert_true(tt.replication == 1.9125);
    /* 20,480 x 32,768 + 32,194,560 = 703,283,200: ceil(/ 50,000) = 14,066. */
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(703283200));
    assert_int_equal(tt.time_us, 14066);
    const char *code = NULL;
    assert_int_equal(kvshard_transfer_warning_count(t), 1);
    assert_int_equal(kvshard_transfer_warning(&code, NULL, t, 0), KVSHARD_OK);
    assert_string_equal(code, "wire_exceeds_unique");
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* MiniMax-M2: 62 full-attention GQA layers, 8 KV heads x 128, bf16. */
static const char minimax_m2[] =
    "{\"model_type\": \"minimax_m2\", \"num_hidden_layers\": 62, \"hidden_size\": 3072,"
    " \"num_attention_heads\": 48, \"num_key_value_heads\": 8, \"head_dim\": 128,"
    " \"torch_dtype\": \"bfloat16\"}";

/* P TP 16 -> D TP 8: P ranks 2h and 2h + 1 hold head h; D rank t holds
 * head t and its home is P rank floor(t x 16 / 8) = 2t, a holder: one
 * source per KV head, 8 edges of 62 layers, wire = unique. */
static void test_minimax_m2_tp16_to_tp8(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(minimax_m2);
    kvshard_plan *p = tu_plan_tp(m, 16, 1), *d = tu_plan_tp(m, 8, 1);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    assert_int_equal(kvshard_transfer_edge_count(t), 8);
    for (uint32_t td = 0; td < 8; td++) {
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(t, td);
        assert_int_equal(e->src, 2 * td);
        assert_int_equal(e->dst, td);
        assert_int_equal(e->unit_lo, td);
        assert_int_equal(e->unit_hi, td + 1);
        assert_int_equal(e->layer_count, 62);
        /* 62 x (128 + 128) x 2 = 31,744 B/token; x 32,768 = 1,040,187,392. */
        assert_int_equal(e->bytes_per_token, 31744);
        assert_int_equal(e->bytes, UINT64_C(1040187392));
    }
    kvshard_transfer_totals tt = totals_of(t);
    assert_int_equal(tt.unique_per_token, 253952); /* 62 x 8 x 512 */
    assert_int_equal(tt.wire_per_token, 253952);
    assert_true(tt.replication == 1.0);
    /* ceil(1,040,187,392 / 50,000) = 20,804 us. */
    assert_int_equal(tt.time_us, 20804);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* DeepSeek-V3.2 with an fp8 KV cache, P TP 8 -> D TP 8: 61 MLA layers, each
 * with an indexer key: latent 512 + 4 x ceil(512 / 128) + 2 x 64 = 656 B,
 * index 128 + 4 x 1 = 132 B, 788 B per layer and token; unique 61 x 788 =
 * 48,068 B/token, x 32,768 = 1,575,092,224 B. */
static kvshard_plan *dsv32_plan(const kvshard_model *m, uint32_t split)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.enable_layerwise_split = split > 1;
    o.layerwise_split_size = split;
    return tu_plan(m, &o);
}

static void test_deepseek_v3_2_replication_tax(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_plan *p = dsv32_plan(m, 1), *d = dsv32_plan(m, 1), *split = dsv32_plan(m, 8);

    /* Unsplit, the latent is on every D rank: D rank t reads all 61 layers
     * from its home P rank t, 16 edges (latent and index per pair). */
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    assert_int_equal(kvshard_transfer_edge_count(t), 16);
    assert_int_equal(tu_transfer_edge(t, 3, 3, "latent", 0)->entry_bytes, 656);
    assert_int_equal(tu_transfer_edge(t, 3, 3, "index", 0)->entry_bytes, 132);
    assert_int_equal(tu_transfer_edge(t, 3, 3, "latent", 0)->layer_count, 61);
    kvshard_transfer_totals tt = totals_of(t);
    assert_int_equal(tt.unique_per_token, 48068);
    assert_int_equal(tt.unique, UINT64_C(1575092224));
    assert_int_equal(tt.wire, UINT64_C(12600737792)); /* 8 x 1,575,092,224 */
    assert_true(tt.replication == 8.0);
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(1575092224));
    assert_int_equal(tt.time_us, 31502); /* ceil(1,575,092,224 / 50,000) */
    assert_int_equal(kvshard_transfer_warning_count(t), 1);
    kvshard_transfer_free(t);

    /* A split of 8 on D: layer l is owned by D rank l mod 8, whose home is
     * P rank l mod 8; wire = unique, and P ranks 0-4 send 8 layers:
     * 8 x 788 x 32,768 = 206,569,472 B, ceil(/ 50,000) = 4,132 us. */
    t = tu_transfer(p, split, 32768);
    assert_int_equal(kvshard_transfer_edge_count(t), 16);
    static const uint32_t owned_by_5[] = {5, 13, 21, 29, 37, 45, 53};
    assert_layers(tu_transfer_edge(t, 5, 5, "latent", 0), owned_by_5, 7);
    tt = totals_of(t);
    assert_int_equal(tt.wire, UINT64_C(1575092224));
    assert_true(tt.replication == 1.0);
    assert_int_equal(tt.busiest_source.global_rank, 0);
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(206569472));
    assert_int_equal(tt.time_us, 4132);
    assert_int_equal(kvshard_transfer_warning_count(t), 0);
    kvshard_transfer_free(t);
    kvshard_plan_free(split);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Qwen3-Next-80B-A3B, P 2 stages x TP 2 -> D TP 4: 48 layers, full
 * attention at 3, 7, ..., 47 (2 KV heads x 256), 36 GDN layers with fp32
 * state. Each D rank takes layers 0-23 from P stage 0 and 24-47 from stage
 * 1, from the rank of each stage at its home floor(t x 2 / 4): 8 rank
 * pairs x (kv + 4 state parts) = 40 edges. */
static void test_qwen3_next_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.pp_size = 2;
    kvshard_plan *p = tu_plan(m, &o), *d = tu_plan_tp(m, 4, 1);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    assert_int_equal(kvshard_transfer_edge_count(t), 40);
    /* Stage 1's TP rank 0 is global rank 2 (layout vllm): it sends D rank 1
     * head 0 of the KV layers 27, ..., 47. */
    static const uint32_t stage1_kv[] = {27, 31, 35, 39, 43, 47};
    const kvshard_transfer_edge *e = tu_transfer_edge(t, 2, 1, "kv", 0);
    assert_int_equal(e->src_stage, 1);
    assert_int_equal(e->src_tp, 0);
    assert_layers(e, stage1_kv, 6);
    kvshard_transfer_totals tt = totals_of(t);
    /* 12 x 2 x 1,024 = 24,576 B/token; 36 x 2,146,304 = 77,266,944 B. */
    assert_int_equal(tt.unique_per_token, 24576);
    assert_int_equal(tt.unique_fixed, UINT64_C(77266944));
    assert_int_equal(tt.wire_per_token, 49152);
    assert_int_equal(tt.unique, UINT64_C(882573312));
    assert_int_equal(tt.wire, UINT64_C(1687879680));
    assert_true(tt.replication == 1.9125);
    /* Global rank 0: 6 layers x 2 D ranks x 1,024 x 32,768 + 2 x 18 x
     * 536,576 = 421,969,920, tied with global rank 2; the lower wins. */
    assert_int_equal(tt.busiest_source.global_rank, 0);
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(421969920));
    assert_int_equal(tt.time_us, 8440);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* A request's edges stay inside its replica pair: P replica 1 of two (2
 * stages x TP 2 each, layout vllm) is global ranks 4-7, so its edges leave
 * from ranks 4 + stage x 2 + t, the same map shifted by the replica's
 * offset. */
static void test_replica_pair(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.pp_size = 2;
    o.dp_size = 2;
    kvshard_plan *p = tu_plan(m, &o), *d = tu_plan_tp(m, 4, 1);
    kvshard_transfer_options to = KVSHARD_TRANSFER_OPTIONS_INIT;
    to.p_replica = 1;
    kvshard_transfer *t = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_create(&t, p, d, &to, NULL, &err), &err);
    assert_int_equal(kvshard_transfer_edge_count(t), 40);
    assert_int_equal(kvshard_transfer_edge_at(t, 0)->src, 4);
    assert_int_equal(tu_transfer_edge(t, 6, 1, "kv", 0)->src_stage, 1);
    /* The digest names the global ranks: another replica, another map. */
    kvshard_plan *p1 = NULL;
    o.dp_size = 1;
    o.world_size = 4;
    p1 = tu_plan(m, &o);
    kvshard_transfer *t0 = tu_transfer(p1, d, 0);
    assert_int_equal(kvshard_transfer_edge_count(t0), 40);
    assert_int_equal(kvshard_transfer_edge_at(t0, 0)->src, 0);
    assert_true(kvshard_transfer_digest(t0) != kvshard_transfer_digest(t));
    kvshard_transfer_free(t0);
    kvshard_transfer_free(t);
    kvshard_plan_free(p1);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Gemma 3 27B, P TP 2 -> D TP 4: 62 layers, every sixth full attention (5,
 * 11, ..., 59: 10 layers), the other 52 sliding with a window of 1,024; 16
 * KV heads of 128 in bf16, 512 B per head and token. A sliding layer moves
 * the tokens its window still covers: min(32,768, 1,024) = 1,024. */
static void test_gemma_3_windows(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("gemma_3_27b.json");
    kvshard_plan *p = tu_plan_tp(m, 2, 1), *d = tu_plan_tp(m, 4, 1);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    /* D rank t holds heads [4t, 4t + 4), all on its home P rank t / 2. */
    assert_int_equal(kvshard_transfer_edge_count(t), 8);
    const kvshard_transfer_edge *w = tu_transfer_edge(t, 1, 3, "kv", 12);
    assert_string_equal(w->entry, "window");
    assert_int_equal(w->entry_span, 1024);
    assert_int_equal(w->entry_bytes, 4 * 512);
    assert_int_equal(w->layer_count, 52);
    assert_int_equal(w->bytes_per_token, 0);
    assert_int_equal(w->bytes, UINT64_C(52) * 2048 * 1024); /* 109,051,904 */
    kvshard_transfer_totals tt = totals_of(t);
    /* Per token only the 10 full layers: 10 x 16 x 512 = 81,920 B; at n
     * 81,920 x 32,768 + 52 x 16 x 512 x 1,024 = 2,684,354,560 +
     * 436,207,616. */
    assert_int_equal(tt.unique_per_token, 81920);
    assert_int_equal(tt.unique, UINT64_C(3120562176));
    assert_int_equal(tt.wire, UINT64_C(3120562176));
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Draft layers move only when both sides count them: DeepSeek-V3.2's one
 * MTP layer (layer 61) with speculation on P only is not sent. */
static void test_drafts(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.num_speculative_tokens = 1;
    kvshard_plan *spec = tu_plan(m, &o), *plain = tu_plan_tp(m, 8, 1);
    kvshard_transfer *t = tu_transfer(spec, plain, 0);
    const char *code = NULL;
    assert_int_equal(kvshard_transfer_warning(&code, NULL, t, 0), KVSHARD_OK);
    assert_string_equal(code, "draft_not_sent");
    assert_int_equal(tu_transfer_edge(t, 0, 0, "latent", 0)->layer_count, 61);
    kvshard_transfer_free(t);
    t = tu_transfer(plain, spec, 0);
    assert_int_equal(kvshard_transfer_warning(&code, NULL, t, 0), KVSHARD_OK);
    assert_string_equal(code, "draft_not_on_source");
    assert_int_equal(tu_transfer_edge(t, 0, 0, "latent", 0)->layer_count, 61);
    kvshard_transfer_free(t);
    /* Both count it: 62 layers, the draft last. */
    t = tu_transfer(spec, spec, 0);
    const kvshard_transfer_edge *e = tu_transfer_edge(t, 0, 0, "latent", 0);
    assert_int_equal(e->layer_count, 62);
    assert_int_equal(e->layers[61], 61);
    kvshard_transfer_free(t);
    kvshard_plan_free(plain);
    kvshard_plan_free(spec);
    kvshard_model_free(m);
}

/* Without a request length the figures at n are absent, and the digest,
 * which names the map, is the same. */
static void test_no_length(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_plan *p = tu_plan_tp(m, 2, 1), *d = tu_plan_tp(m, 4, 2);
    kvshard_transfer *t = tu_transfer(p, d, 0);
    kvshard_transfer_totals tt = totals_of(t);
    assert_false(tt.has_bytes);
    assert_false(tt.has_replication);
    assert_false(tt.has_time);
    assert_false(kvshard_transfer_edge_at(t, 0)->has_bytes);
    /* Busiest by bytes per token: P rank 0 (10,240) ties P rank 1, and the
     * lower wins. */
    assert_int_equal(tt.busiest_source.global_rank, 0);
    assert_int_equal(tt.busiest_source.bytes_per_token, 10240);
    assert_int_equal(kvshard_transfer_digest(t), UINT64_C(0xee1b03cab8841722));
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

static void expect_refusal(const kvshard_plan *p, const kvshard_plan *d,
                           const kvshard_transfer_options *o, int code, const char *message)
{
    kvshard_transfer *t = NULL;
    kvshard_error err;
    int rc = kvshard_transfer_create(&t, p, d, o, NULL, &err);
    assert_int_equal(rc, code);
    assert_null(t);
    assert_string_equal(err.message, message);
}

static void test_refusals(void **state)
{
    (void)state;
    kvshard_model *q = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_model *mm = tu_load_model_text(minimax_m2);
    kvshard_plan *p = tu_plan_tp(q, 2, 1), *other = tu_plan_tp(mm, 2, 1);
    expect_refusal(p, other, NULL, KVSHARD_EINVAL,
                   "transfer_model_mismatch: the two sides plan different models: num_layers is "
                   "40 on P and 62 on D");
    kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
    o.d_replica = 1;
    expect_refusal(p, p, &o, KVSHARD_ERANGE, "transfer_replica: --d_replica 1: D has 1 replica");

    kvshard_options co = KVSHARD_OPTIONS_INIT;
    co.world_size = 4;
    co.cp_size = 2;
    kvshard_plan *cp = tu_plan(q, &co);
    expect_refusal(cp, p, NULL, KVSHARD_EUNMODELED,
                   "transfer_cp: cp_size is 2 on P: how an engine spreads a sequence over "
                   "context-parallel ranks is not modelled");

    kvshard_options fo = KVSHARD_OPTIONS_INIT;
    fo.world_size = 2;
    fo.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    kvshard_plan *fp8 = tu_plan(q, &fo);
    expect_refusal(p, fp8, NULL, KVSHARD_EINVAL,
                   "transfer_kv_dtype: the KV cache is bfloat16 on P and fp8 on D: bytes are "
                   "copied, never converted");
    kvshard_options so = KVSHARD_OPTIONS_INIT;
    so.world_size = 2;
    so.state_dtype = KVSHARD_DTYPE_BF16;
    kvshard_plan *bf16_state = tu_plan(q, &so);
    expect_refusal(bf16_state, p, NULL, KVSHARD_EINVAL,
                   "transfer_state_dtype: the state is bfloat16 on P and float32 on D: bytes are "
                   "copied, never converted");
    kvshard_plan_free(bf16_state);
    kvshard_plan_free(fp8);
    kvshard_plan_free(cp);
    kvshard_plan_free(other);
    kvshard_plan_free(p);
    kvshard_model_free(mm);
    kvshard_model_free(q);
}

/* ---- the command ---------------------------------------------------------------------- */

#define QWEN KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define SPLIT_PAIR                                                                                 \
    "--p.world_size=2 --d.world_size=4 --d.enable_layerwise_split=true "                           \
    "--d.layerwise_split_size=2"

static void test_command_text_and_json(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(tu_cli("transfer",
                            "'" QWEN "' '" QWEN "' " SPLIT_PAIR " --context_length=32768", &out,
                            &err),
                     0);
    assert_string_equal(err, "");
    tu_assert_contains(out,
                       "\nunique     735,477,760 B: 20,480 B/token + 64,389,120 B per request\n");
    tu_assert_contains(out, "\nwire       735,477,760 B: 20,480 B/token + 64,389,120 B per "
                            "request; replication 1.0\n");
    tu_assert_contains(out, "\nbusiest    P rank 0 (stage 0, TP 0) sends 367,738,880 B; D rank 0 "
                            "(stage 0, TP 0) receives 183,869,440 B\n");
    tu_assert_contains(out, "\ntime       7,355 \xc2\xb5s");
    tu_assert_contains(out, "\nedges      20\n");
    tu_assert_contains(out, "\n    0    0  kv          [0, 1)    token            1,024      "
                            "167,772,160  3, 11, 19, 27, 35\n");
    tu_assert_contains(out, "\ndigest     ee1b03cab8841722\n");
    free(out);
    free(err);
    assert_int_equal(tu_cli("transfer",
                            "'" QWEN "' '" QWEN "' " SPLIT_PAIR
                            " --context_length=32768 --format=json",
                            &out, &err),
                     0);
    tu_assert_contains(out, "\"unique\": 735477760");
    tu_assert_contains(out, "\"wire\": 735477760, \"replication\": 1.0");
    tu_assert_contains(out, "\"time_us\": 7355");
    tu_assert_contains(out, "\"request\": {\"tokens\": 32768, \"nic\": \"ndr400\", "
                            "\"nic_bytes_per_second\": 50000000000}");
    tu_assert_contains(out, "\"digest\": \"ee1b03cab8841722\"\n}\n");
    free(out);
    free(err);
    /* A NIC written as a rate: 48GB is 48,000,000,000 B/s, and
     * ceil(367,738,880 x 10^6 / 48 x 10^9) = 7,662 us. */
    assert_int_equal(tu_cli("transfer",
                            "'" QWEN "' '" QWEN "' " SPLIT_PAIR
                            " --context_length=32768 --nic=48GB --format=json",
                            &out, &err),
                     0);
    tu_assert_contains(out, "\"nic\": \"custom\", \"nic_bytes_per_second\": 48000000000");
    tu_assert_contains(out, "\"time_us\": 7662");
    free(out);
    free(err);
}

/* Each refusal: its exit status and the first line of its message. */
static void test_command_errors(void **state)
{
    (void)state;
    static const struct {
        const char *args;
        int status;
        const char *message;
    } cases[] = {
        {"'" QWEN "'", 2, "kvshard: transfer: transfer_usage: missing D_PLAN\n"},
        {"'" QWEN "' '" QWEN "' --world_size=4", 2,
         "kvshard: transfer: transfer_flag_side: a deployment key belongs to one side: write it "
         "--p.KEY=VALUE or --d.KEY=VALUE, not --world_size=4\n"},
        {"'" QWEN "' '" QWEN "' --frobnicate=1", 2,
         "kvshard: transfer: transfer_usage: unknown flag --frobnicate=1\n"},
        {"'" QWEN "' '" QWEN "' --p.world_size", 2,
         "kvshard: transfer: transfer_usage: a side's flag is --p.KEY=VALUE or --d.KEY=VALUE, "
         "not --p.world_size\n"},
        {"'" QWEN "' '" QWEN "' --context_length=0", 2,
         "kvshard: transfer: transfer_usage: --context_length takes a count of tokens from 1 to "
         "1073741824, not 0\n"},
        {"'" QWEN "' '" QWEN "' --nic=fast", 2,
         "kvshard: transfer: transfer_nic: --nic is "
         "neither a preset (ndr400, xdr800, hdr200, "
         "eth100) nor a rate in bytes per second"},
        {"'" QWEN "' '" QWEN "' --d.world_size=x", 2,
         "kvshard: transfer: D: command line --d.world_size: world_size: expected an integer, "
         "found \"x\"\n"},
        {"'" QWEN "' '" QWEN "' --d_replica=1", 1,
         "kvshard: transfer: transfer_replica: --d_replica 1: D has 1 replica\n"},
        {"'" QWEN "' '" QWEN "' --p.world_size=4 --p.cp_size=2", 1,
         "kvshard: transfer: transfer_cp: cp_size is 2 on P: how an engine spreads a sequence "
         "over context-parallel ranks is not modelled\n"},
        {"'" QWEN "' '" QWEN "' --d.kv_cache_dtype=fp8", 1,
         "kvshard: transfer: transfer_kv_dtype: the KV cache is bfloat16 on P and fp8 on D: "
         "bytes are copied, never converted\n"},
        {"'" QWEN "' '" KVSHARD_EXAMPLES "/models/llama3_1_8b.json'", 1,
         "kvshard: transfer: transfer_model_mismatch: the two sides plan different models: "
         "num_layers is 40 on P and 32 on D\n"},
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
        cmocka_unit_test(test_qwen3_5_tp2_to_tp4_split2),
        cmocka_unit_test(test_qwen3_5_tp2_to_tp4_unsplit),
        cmocka_unit_test(test_minimax_m2_tp16_to_tp8),
        cmocka_unit_test(test_deepseek_v3_2_replication_tax),
        cmocka_unit_test(test_qwen3_next_stages),
        cmocka_unit_test(test_replica_pair),
        cmocka_unit_test(test_gemma_3_windows),
        cmocka_unit_test(test_drafts),
        cmocka_unit_test(test_no_length),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_command_text_and_json),
        cmocka_unit_test(test_command_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
