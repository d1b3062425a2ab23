/* The second wave of model families: Mamba1, Mamba2, short convolution,
 * hybrid and no-cache layers, sliding-window patterns, the contiguous rule.
 * Every figure is worked out by hand from the state formulas in
 * docs/planning.md; the comments show the arithmetic. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static kvshard_options tp(uint32_t world)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    return o;
}

static kvshard_rank_memory rank0(const kvshard_plan *plan)
{
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, plan, 0), KVSHARD_OK);
    return m;
}

static void assert_kinds(const kvshard_model *m, uint32_t full, uint32_t linear, uint32_t sliding,
                         uint32_t hybrid, uint32_t no_cache)
{
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), full);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), linear);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), sliding);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_HYBRID), hybrid);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_NO_CACHE), no_cache);
}

static void assert_full_at(const kvshard_model *m, const uint32_t *layers, size_t count)
{
    size_t seen = 0;
    for (uint32_t i = 0; i < kvshard_model_num_layers(m); i++) {
        kvshard_layer_kind k;
        assert_int_equal(kvshard_model_layer_kind(&k, m, i), KVSHARD_OK);
        if (k != KVSHARD_LAYER_FULL_ATTENTION)
            continue;
        assert_true(seen < count);
        assert_int_equal(i, layers[seen++]);
    }
    assert_int_equal(seen, count);
}

/* Jamba-1.5-Mini (Mamba1), TP 4: period 8, offset 4 -> full at 4 12 20 28.
 * d_inner = mamba_expand 2 x hidden 4096 = 8192 (not intermediate_size),
 * 8192 / 4 = 2048 per rank; conv 2 x 2048 x (4 - 1) = 12288; temporal
 * 2 x 2048 x 16 = 65536; 28 layers x 77824 = 2179072 B/seq.
 * KV: 8 kv heads / 4 = 2 heads x 128 (4096 / 32) x 2 (K, V) x 2 = 1024 per
 * layer, 4 layers = 4096 B/token. */
static void test_jamba_mamba1(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("jamba_1_5_mini.json");
    assert_kinds(m, 4, 28, 0, 0, 0);
    const uint32_t full[] = {4, 12, 20, 28};
    assert_full_at(m, full, 4);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_MAMBA1);
    assert_int_equal(kvshard_model_state_dtype(m), KVSHARD_DTYPE_BF16);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_rank_memory r = rank0(p);
    assert_int_equal(r.state_bytes_per_seq, 2179072);
    assert_int_equal(r.kv_bytes_per_token, 4096);
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&st, p, 0, 0), KVSHARD_OK);
    assert_int_equal(st.state_bytes_per_seq, 77824);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Nemotron-H-8B, TP 4: 24 M, 4 * (7 18 29 40), 24 -.
 * Mamba2 H 128, P 64, N 128, G 8 (8 % 4 = 0: all 8 groups per rank), K 4.
 * conv 2 x ((8192 + 2 x 8 x 128) / 4) x 3 = 2 x 2560 x 3 = 15360;
 * temporal 2 x 32 x 64 x 128 = 524288 (bf16, the model dtype);
 * 24 x 539648 = 12951552. With state_dtype fp32: temporal 1048576,
 * 24 x 1063936 = 25534464. */
static void test_nemotron_h_pattern(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_h_8b.json");
    assert_kinds(m, 4, 24, 0, 0, 24);
    const uint32_t full[] = {7, 18, 29, 40};
    assert_full_at(m, full, 4);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_MAMBA2);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 12951552);
    assert_int_equal(rank0(p).kv_bytes_per_token, 4096);
    assert_int_equal(tu_plan_model(p).state_dtype, KVSHARD_DTYPE_BF16);
    /* A no-cache layer (1 is '-') has no owner and nothing stored. */
    int32_t owner = 0;
    assert_int_equal(kvshard_plan_layer_owner(&owner, p, 1), KVSHARD_OK);
    assert_int_equal(owner, KVSHARD_OWNER_NONE);
    for (uint32_t r = 0; r < 4; r++)
        assert_false(kvshard_plan_owns(p, r, 1));
    kvshard_plan_free(p);
    o.state_dtype = KVSHARD_DTYPE_FP32;
    p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 25534464);
    assert_int_equal(tu_plan_model(p).state_dtype, KVSHARD_DTYPE_FP32);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Nemotron-3-Nano-30B-A3B, TP 4: 23 M, 23 E, 6 * (5 12 19 26 33 42).
 * H 64, P 64, N 128, G 8; the file's mamba_ssm_cache_dtype float32.
 * conv 2 x ((4096 + 2048) / 4) x 3 = 9216; temporal 4 x 16 x 64 x 128 =
 * 524288; 23 x 533504 = 12270592. KV: 2 kv heads < T 4, one head per rank
 * (R = 2): 2 x 128 x 2 = 512 per layer, 6 layers = 3072. */
static void test_nemotron_3_nano(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_3_nano_30b_a3b.json");
    assert_kinds(m, 6, 23, 0, 0, 23);
    const uint32_t full[] = {5, 12, 19, 26, 33, 42};
    assert_full_at(m, full, 6);
    assert_int_equal(kvshard_model_state_dtype(m), KVSHARD_DTYPE_FP32);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 12270592);
    assert_int_equal(rank0(p).kv_bytes_per_token, 3072);
    assert_int_equal(kvshard_plan_replication_factor(p), 2);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Granite-4.0-H-Small, TP 4: 36 mamba, 4 attention (layer_types).
 * H 128, P 64, N 128, G 1 < T 4 and 4 % 1 = 0: each rank keeps a copy of
 * its group, G' = T = 4: conv 2 x ((8192 + 2 x 4 x 128) / 4) x 3 =
 * 2 x 2304 x 3 = 13824; temporal 2 x 32 x 64 x 128 = 524288;
 * 36 x 538112 = 19372032. fp32: 36 x (13824 + 1048576) = 38246400. */
static void test_granite_groups_below_tp(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("granite_4_0_h_small.json");
    assert_kinds(m, 4, 36, 0, 0, 0);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 19372032);
    assert_int_equal(rank0(p).kv_bytes_per_token, 4096);
    kvshard_plan_free(p);
    o.state_dtype = KVSHARD_DTYPE_FP32;
    p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 38246400);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Falcon-H1-34B, TP 4: every layer hybrid (the file's attn_layer_indices is
 * null, so rule 7 does not apply). H 32, P 128, N 256, G 2 < 4, 4 % 2 = 0:
 * G' = 4; conv 2 x ((4096 + 2 x 4 x 256) / 4) x 3 = 2 x 1536 x 3 = 9216;
 * temporal 2 x 8 x 128 x 256 = 524288; 72 x 533504 = 38412288.
 * KV on all 72 layers: 4 kv heads / 4 = 1 head x 128 x 2 x 2 = 512; 36864.
 * With split 2, a hybrid layer's KV goes to one rank of each split group
 * and its state stays on every rank. */
static void test_falcon_h1_hybrid(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("falcon_h1_34b.json");
    assert_kinds(m, 0, 0, 0, 72, 0);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_MAMBA2);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 38412288);
    assert_int_equal(rank0(p).kv_bytes_per_token, 36864);
    kvshard_plan_free(p);

    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    p = tu_plan(m, &o);
    /* Ordinal: layer i's KV on split rank i % 2; its state on every rank. */
    int32_t owner;
    assert_int_equal(kvshard_plan_layer_owner(&owner, p, 5), KVSHARD_OK);
    assert_int_equal(owner, 1);
    for (uint32_t r = 0; r < 4; r++) {
        assert_true(kvshard_plan_owns(p, r, 5));
        assert_int_equal(kvshard_plan_stores_kv(p, r, 5), r % 2 == 1);
    }
    /* Each rank holds one of the 4 KV heads (R = 1), so an owner holds its
     * group's two: 2 x 2 x 128 x 2 = 1024 B per layer, 36 layers = 36864 --
     * the split saves nothing here, and says so. */
    assert_int_equal(rank0(p).kv_bytes_per_token, 36 * 1024);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_EXCEEDS_REPLICATION));
    assert_int_equal(rank0(p).state_bytes_per_seq, 38412288);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* LFM2-8B-A1B, TP 4: 18 conv, 6 full_attention. Short convolution:
 * conv 2 x (2048 / 4) x (3 - 1) = 2048 per layer; 18 x 2048 = 36864; no
 * temporal state, so no state dtype. KV 6 x (2 x 2 x 64 x 2 = 512) = 3072. */
static void test_lfm2_short_conv(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("lfm2_8b_a1b.json");
    assert_kinds(m, 6, 18, 0, 0, 0);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_SHORT_CONV);
    assert_int_equal(kvshard_model_state_dtype(m), KVSHARD_DTYPE_AUTO);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 36864);
    assert_int_equal(rank0(p).kv_bytes_per_token, 3072);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"state_kind\": \"short_conv\", \"state_dtype\": null"));
    free(json);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Gemma 3 27B in the older file form: sliding_window_pattern 6 in the
 * text config, window 1024. Full at (i + 1) % 6 == 0: 5, 11, ..., 59 (10
 * layers); the other 52 slide. TP 4: 16 kv heads / 4 = 4 heads x 128 x 2 x
 * 2 = 2048 B/token. A window at block 16: (ceil(1024 / 16) + 1) = 65 blocks
 * x 16 tokens x 2048 = 2129920 per layer; 52 x 2129920 = 110755840. */
static void test_gemma3_pattern(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("gemma_3_27b.json");
    assert_kinds(m, 10, 0, 52, 0, 0);
    const uint32_t full[] = {5, 11, 17, 23, 29, 35, 41, 47, 53, 59};
    assert_full_at(m, full, 10);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).kv_bytes_per_token, 20480);
    assert_int_equal(rank0(p).state_bytes_per_seq, 110755840);
    kvshard_plan_free(p);
    kvshard_model_free(m);

    /* With no pattern key, gemma3_text (in the text config) defaults to 6,
     * cohere2 to 4; another model with a sliding_window plans as full
     * attention. */
    m = tu_load_model_text("{model_type: gemma3, text_config: {model_type: gemma3_text, "
                           "num_hidden_layers: 12, sliding_window: 512, num_attention_heads: 8, "
                           "num_key_value_heads: 4, head_dim: 256}}");
    assert_kinds(m, 2, 0, 10, 0, 0);
    kvshard_model_free(m);
    m = tu_load_model_text("{model_type: cohere2, num_hidden_layers: 8, sliding_window: 4096, "
                           "num_attention_heads: 8, head_dim: 128}");
    const uint32_t cohere[] = {3, 7};
    assert_full_at(m, cohere, 2);
    kvshard_model_free(m);
    m = tu_load_model_text("{model_type: mistral, num_hidden_layers: 8, sliding_window: 4096, "
                           "num_attention_heads: 8, head_dim: 128}");
    assert_kinds(m, 8, 0, 0, 0, 0);
    kvshard_model_free(m);
}

/* Zamba2-2.7B, TP 4: layers_block_type with 45 mamba and 9 hybrid.
 * Attention: MHA, 32 kv heads / 4 = 8 heads x 160 (attention_head_dim) x
 * 2 x 2 = 5120 per hybrid layer; 9 x 5120 = 46080 B/token.
 * Mamba2 H 80, P 64, N 64, G 1 -> G' 4: conv 2 x ((5120 + 2 x 4 x 64) / 4)
 * x 3 = 2 x 1408 x 3 = 8448; temporal 2 x 20 x 64 x 64 = 163840; 172288 per
 * layer on all 54 (linear and hybrid) = 9303552. */
static void test_zamba2_hybrid(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("zamba2_2_7b.json");
    assert_kinds(m, 0, 45, 0, 9, 0);
    kvshard_options o = tp(4);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).kv_bytes_per_token, 46080);
    assert_int_equal(rank0(p).state_bytes_per_seq, 9303552);
    kvshard_plan_free(p);
    kvshard_model_free(m);
    /* Without attention_head_dim, Zamba2's head dim is 2 x hidden / heads:
     * 2 x 2560 / 32 = 160, the same KV. */
    m = tu_load_model_text(
        "{model_type: zamba2, num_hidden_layers: 2, layers_block_type: [mamba, hybrid], "
        "hidden_size: 2560, num_attention_heads: 32, num_key_value_heads: 32, "
        "n_mamba_heads: 80, mamba_headdim: 64, mamba_d_state: 64, mamba_ngroups: 1}");
    p = tu_plan(m, &o);
    assert_int_equal(rank0(p).kv_bytes_per_token, 5120);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Bamba-9B: attn_layer_indices [9, 18, 27] are full attention, the rest
 * Mamba2 (model_type bamba, mamba_n_heads ...). */
static void test_bamba_indices(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("bamba_9b.json");
    assert_kinds(m, 3, 29, 0, 0, 0);
    const uint32_t full[] = {9, 18, 27};
    assert_full_at(m, full, 3);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_MAMBA2);
    kvshard_model_free(m);
}

/* Mamba2 groups: G = 8 at T = 8 (G % T = 0) keeps all 8 groups per rank:
 * H 16, P 8, N 4, K 4: conv 2 x ((128 + 2 x 8 x 4) / 8) x 3 = 2 x 24 x 3 =
 * 144; temporal 2 x 2 x 8 x 4 = 128; 272 per layer. G = 2 at T = 8 gives
 * G' = 8 too (each rank a copy of its group): the same 272. G = 16 at T = 8
 * keeps 16: conv 2 x ((128 + 2 x 16 x 4) / 8) x 3 = 2 x 32 x 3 = 192;
 * 320 per layer. G = 3 cannot be laid out on 8 ranks. */
static void test_mamba2_group_layout(void **state)
{
    (void)state;
    static const struct {
        const char *groups;
        uint64_t bytes;
        int rc;
    } cases[] = {{"8", 272, KVSHARD_OK}, {"2", 272, KVSHARD_OK}, {"16", 320, KVSHARD_OK},
                 {"3", 0, KVSHARD_ELINEARHEADS}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{model_type: nemotron_h, num_hidden_layers: 1, hybrid_override_pattern: M, "
                 "mamba_num_heads: 16, mamba_head_dim: 8, ssm_state_size: 4, n_groups: %s}",
                 cases[i].groups);
        kvshard_model *m = tu_load_model_text(text);
        kvshard_options o = tp(8);
        kvshard_plan *p = NULL;
        kvshard_error err;
        int rc = kvshard_plan_create(&p, m, &o, NULL, &err);
        assert_int_equal(rc, cases[i].rc);
        if (rc == KVSHARD_OK) {
            assert_int_equal(rank0(p).state_bytes_per_seq, cases[i].bytes);
            /* No KV layer: R = 1, no scratch, the no_kv_layers warning only. */
            assert_int_equal(kvshard_plan_replication_factor(p), 1);
            assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_NO_KV_LAYERS));
            assert_int_equal(kvshard_plan_warning_count(p), 1);
        } else {
            assert_non_null(strstr(err.message, "n_groups 3 cannot be laid out on 8 TP ranks"));
            assert_int_equal(err.line, 1);
        }
        kvshard_plan_free(p);
        kvshard_model_free(m);
    }
}

/* Mamba2's head dim: "auto" or absent means mamba_expand x hidden / heads:
 * 2 x 64 / 16 = 8, the same 272 B as above at T 8, G 8. Not divisible: an
 * error naming the figures. */
static void test_mamba2_head_dim_auto(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{model_type: nemotron_h, num_hidden_layers: 1, hybrid_override_pattern: M, "
        "mamba_num_heads: 16, mamba_head_dim: auto, mamba_expand: 2, hidden_size: 64, "
        "ssm_state_size: 4, n_groups: 8}");
    kvshard_options o = tp(8);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).state_bytes_per_seq, 272);
    kvshard_plan_free(p);
    kvshard_model_free(m);
    const char *bad = "{model_type: nemotron_h, num_hidden_layers: 1, hybrid_override_pattern: M, "
                      "mamba_num_heads: 3, mamba_expand: 2, hidden_size: 64, ssm_state_size: 4}";
    kvshard_error err;
    m = NULL;
    assert_int_equal(kvshard_model_load_string(&m, bad, strlen(bad), "t", NULL, &err),
                     KVSHARD_ERANGE);
    assert_non_null(strstr(err.message, "mamba_expand 2 x hidden_size 64 = 128 is not divisible "
                                        "by mamba_num_heads 3"));
}

/* The contiguous rule on 10 KV layers over S = 4: q = 2, m = 2, so split
 * ranks 0 and 1 own 3 consecutive KV layers and ranks 2 and 3 own 2: owners
 * by KV ordinal 0 0 0 1 1 1 2 2 3 3. */
static void test_contiguous_rule(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{num_hidden_layers: 20, full_attention_interval: 2, num_attention_heads: 8, "
        "num_key_value_heads: 1, head_dim: 64, linear_num_key_heads: 8, "
        "linear_num_value_heads: 8, linear_key_head_dim: 8, linear_value_head_dim: 8, "
        "linear_conv_kernel_dim: 4}");
    kvshard_options o = tp(8);
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 4;
    o.ownership = KVSHARD_OWNERSHIP_CONTIGUOUS;
    kvshard_plan *p = tu_plan(m, &o);
    static const int32_t want[10] = {0, 0, 0, 1, 1, 1, 2, 2, 3, 3};
    for (uint32_t k = 0; k < 10; k++) {
        int32_t owner = -9;
        assert_int_equal(kvshard_plan_layer_owner(&owner, p, 2 * k + 1), KVSHARD_OK);
        assert_int_equal(owner, want[k]);
    }
    const uint32_t first[] = {1, 3, 5}, last[] = {17, 19};
    tu_assert_rank_layers(p, 0, first, 3);
    tu_assert_rank_layers(p, 7, last, 2); /* TP 7 is split rank 3 */
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_IMBALANCED));
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Null counts as absent in a model config; model_type is null in the JSON
 * when the config has none; the Nemotron-H re-saved form reads its kinds
 * from layers_block_type with linear_attention, moe, mlp, full_attention. */
static void test_nulls_and_resaved_kinds(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{num_hidden_layers: 4, layers_block_type: [linear_attention, moe, mlp, "
        "full_attention], num_attention_heads: 4, num_key_value_heads: 4, head_dim: 8, "
        "mamba_num_heads: 4, mamba_head_dim: 8, ssm_state_size: 8, "
        "full_attention_interval: null, sliding_window: null}");
    assert_kinds(m, 1, 1, 0, 0, 2);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_MAMBA2);
    kvshard_options o = tp(1);
    kvshard_plan *p = tu_plan(m, &o);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"model_type\": null"));
    assert_non_null(strstr(json, "\"num_no_cache_layers\": 2"));
    assert_non_null(
        strstr(json, "{\"index\": 1, \"kind\": \"no_cache\", \"owner\": null, \"compress_ratio\": "
                     "null, \"kv_source\": null, \"index_key\": false, \"stage\": 0}"));
    free(json);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The state dtype: a state-dtype key naming auto or fp8 counts as absent;
 * a Mamba model in fp8 keeps its state in bfloat16; the option wins. */
static void test_state_dtype_rules(void **state)
{
    (void)state;
    static const struct {
        const char *keys;
        kvshard_dtype want;
    } cases[] = {
        {"torch_dtype: float16", KVSHARD_DTYPE_FP16},
        {"torch_dtype: float8_e4m3fn", KVSHARD_DTYPE_BF16},
        {"mamba_ssm_dtype: auto, torch_dtype: float16", KVSHARD_DTYPE_FP16},
        {"mamba_ssm_cache_dtype: fp8, torch_dtype: float16", KVSHARD_DTYPE_FP16},
        {"mamba_ssm_cache_dtype: float32", KVSHARD_DTYPE_FP32},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{model_type: bamba, num_hidden_layers: 1, attn_layer_indices: [], "
                 "mamba_n_heads: 4, mamba_d_head: 8, mamba_d_state: 8, %s}",
                 cases[i].keys);
        kvshard_model *m = tu_load_model_text(text);
        assert_int_equal(kvshard_model_state_dtype(m), cases[i].want);
        kvshard_options o = tp(1);
        o.state_dtype = KVSHARD_DTYPE_FP32;
        kvshard_plan *p = tu_plan(m, &o);
        assert_int_equal(tu_plan_model(p).state_dtype, KVSHARD_DTYPE_FP32);
        kvshard_plan_free(p);
        kvshard_model_free(m);
    }
    /* GDN keeps float32 by default. */
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    assert_int_equal(kvshard_model_state_dtype(m), KVSHARD_DTYPE_FP32);
    kvshard_model_free(m);
}

/* An fp8 model with kv_cache_dtype auto gets fp8 KV with its scales:
 * 2 heads x 64 x 2 x 1 + 8 x 2 = 272 B per layer at T = 1 (2 kv heads). */
static void test_fp8_auto_scales(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("{num_hidden_layers: 1, num_attention_heads: 2, "
                                          "head_dim: 64, torch_dtype: float8_e4m3fn}");
    kvshard_options o = tp(1);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(rank0(p).kv_bytes_per_token, 272);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* model_type in the text config decides too (either level is enough). */
static void test_model_type_in_text_config(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{model_type: wrapper, text_config: {model_type: falcon_h1, num_hidden_layers: 2, "
        "num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, mamba_n_heads: 4, "
        "mamba_d_head: 8, mamba_d_state: 8}}");
    assert_kinds(m, 0, 0, 0, 2, 0);
    assert_string_equal(kvshard_model_type(m), "wrapper");
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jamba_mamba1),
        cmocka_unit_test(test_nemotron_h_pattern),
        cmocka_unit_test(test_nemotron_3_nano),
        cmocka_unit_test(test_granite_groups_below_tp),
        cmocka_unit_test(test_falcon_h1_hybrid),
        cmocka_unit_test(test_lfm2_short_conv),
        cmocka_unit_test(test_gemma3_pattern),
        cmocka_unit_test(test_zamba2_hybrid),
        cmocka_unit_test(test_bamba_indices),
        cmocka_unit_test(test_mamba2_group_layout),
        cmocka_unit_test(test_mamba2_head_dim_auto),
        cmocka_unit_test(test_contiguous_rule),
        cmocka_unit_test(test_nulls_and_resaved_kinds),
        cmocka_unit_test(test_state_dtype_rules),
        cmocka_unit_test(test_fp8_auto_scales),
        cmocka_unit_test(test_model_type_in_text_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
