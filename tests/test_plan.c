/* Planning: effective split size, split groups, owners, validation errors,
 * warnings, digest and JSON. Expected values are worked out by hand from the
 * rules in docs/planning.md; the reasoning is next to each figure. */
#include "test_util.h"

#include "kvshard/explore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Seed scenario: Qwen3.5-35B-A3B, TP=4, split 2, ordinal rule. Full-attention
 * layers are 3, 7, ..., 39 (every 4th); ordinals alternate 0, 1. */
static void test_qwen3_5_tp4_split2_ordinal(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 4);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 2);
    assert_int_equal(kvshard_plan_replication_factor(plan), 2);
    const uint32_t even[] = {3, 11, 19, 27, 35};
    const uint32_t odd[] = {7, 15, 23, 31, 39};
    tu_assert_rank_layers(plan, 0, even, 5);
    tu_assert_rank_layers(plan, 2, even, 5);
    tu_assert_rank_layers(plan, 1, odd, 5);
    tu_assert_rank_layers(plan, 3, odd, 5);
    assert_true(kvshard_plan_owns(plan, 0, 3));
    assert_false(kvshard_plan_owns(plan, 1, 3));
    assert_true(kvshard_plan_owns(plan, 1, 0)); /* linear: every rank */
    assert_int_equal(kvshard_plan_warning_count(plan), 0);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* ---- helpers ------------------------------------------------------------ */

static kvshard_options split_options(uint32_t world, uint32_t split, kvshard_ownership rule)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = split;
    o.ownership = rule;
    return o;
}

static int plan_error(const kvshard_model *model, const kvshard_options *o, kvshard_error *err)
{
    kvshard_plan *plan = NULL;
    int rc = kvshard_plan_create(&plan, model, o, NULL, err);
    kvshard_plan_free(plan);
    if (rc != KVSHARD_OK)
        assert_null(plan); /* outputs untouched on failure */
    return rc;
}

static int32_t owner_of(const kvshard_plan *plan, uint32_t layer)
{
    int32_t owner = -100;
    assert_int_equal(kvshard_plan_layer_owner(&owner, plan, layer), KVSHARD_OK);
    return owner;
}

static size_t owned_count(const kvshard_plan *plan, uint32_t plan_rank)
{
    const uint32_t *layers = NULL;
    size_t n = 99;
    assert_int_equal(kvshard_plan_rank_layers(&layers, &n, plan, plan_rank), KVSHARD_OK);
    return n;
}

/* ---- ownership ---------------------------------------------------------- */

/* Qwen3-Next TP8, split 4, global rule: full layers 3, 7, ..., 47 all have
 * index % 4 == 3, so split rank 3 owns all 12 and ranks 0-2 own none. */
/* The owner of each KV layer by the rules' definitions: k its place among
 * the N KV layers, i its layer index, S split ranks. */
static int32_t rule_owner(kvshard_ownership rule, uint32_t k, uint32_t i, uint32_t n, uint32_t S)
{
    if (rule == KVSHARD_OWNERSHIP_GLOBAL)
        return (int32_t)(i % S);
    if (rule == KVSHARD_OWNERSHIP_CONTIGUOUS) {
        /* The first N % S split ranks own N / S + 1 consecutive layers. */
        uint32_t q = n / S, m = n % S;
        return (int32_t)(k < m * (q + 1) ? k / (q + 1) : m + (k - m * (q + 1)) / q);
    }
    return (int32_t)(k % S);
}

/* Every rule on 600 pseudo-random mixes of full-attention and no-cache
 * layers (1 to 90 layers, S 2 to 16), against the definitions. */
static void test_owners_follow_the_rules(void **state)
{
    (void)state;
    static const uint32_t splits[] = {2, 4, 8, 16};
    static const kvshard_ownership rules[] = {KVSHARD_OWNERSHIP_ORDINAL, KVSHARD_OWNERSHIP_GLOBAL,
                                              KVSHARD_OWNERSHIP_CONTIGUOUS};
    kvshard_layer_kind kinds[90];
    uint32_t seed = 12345;
    for (int trial = 0; trial < 600; trial++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t L = 1 + (seed >> 8) % 90, n = 0;
        for (uint32_t i = 0; i < L; i++) {
            seed = seed * 1103515245u + 12345u;
            bool kv = (seed >> 16) % 3 != 0 || i == 0; /* at least one KV layer */
            kinds[i] = kv ? KVSHARD_LAYER_FULL_ATTENTION : KVSHARD_LAYER_NO_CACHE;
            n += kv;
        }
        kvshard_model_desc d = KVSHARD_MODEL_DESC_INIT;
        d.num_layers = L;
        d.layer_kinds = kinds;
        d.num_attention_heads = 16;
        d.num_kv_heads = 16;
        d.head_dim = 8;
        kvshard_model *m = NULL;
        kvshard_error err;
        tu_assert_ok(kvshard_model_create(&m, &d, NULL, &err), &err);
        uint32_t S = splits[trial % 4];
        kvshard_options o = split_options(S, S, rules[(trial / 4) % 3]);
        kvshard_plan *plan = tu_plan(m, &o);
        uint32_t k = 0;
        for (uint32_t i = 0; i < L; i++) {
            /* A rank holds a layer when its split rank (rank % S) owns it. */
            int32_t want = kinds[i] != KVSHARD_LAYER_FULL_ATTENTION
                               ? KVSHARD_OWNER_NONE
                               : rule_owner(o.ownership, k++, i, n, S);
            assert_int_equal(owner_of(plan, i), want);
            for (uint32_t r = 0; r < S; r++)
                assert_int_equal(kvshard_plan_owns(plan, r, i), want == (int32_t)r);
        }
        kvshard_plan_free(plan);
        kvshard_model_free(m);
    }
}

static void test_qwen3_next_global_all_on_one_rank(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = split_options(8, 4, KVSHARD_OWNERSHIP_GLOBAL);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 8); /* 8 / (1 x 1) */
    assert_int_equal(kvshard_plan_effective_split_size(plan), 4);
    assert_int_equal(kvshard_plan_replication_factor(plan), 4); /* T / H_kv = 8 / 2 */
    const uint32_t all[] = {3, 7, 11, 15, 19, 23, 27, 31, 35, 39, 43, 47};
    tu_assert_rank_layers(plan, 3, all, 12); /* split rank 3 of group 0 */
    tu_assert_rank_layers(plan, 7, all, 12); /* split rank 3 of group 1 */
    for (uint32_t r = 0; r < 8; r++) {
        if (r % 4 != 3)
            assert_int_equal(owned_count(plan, r), 0);
    }
    for (uint32_t i = 3; i < 48; i += 4) {
        assert_int_equal(owner_of(plan, i), 3);
        assert_true(kvshard_plan_owns(plan, 3, i));
        assert_false(kvshard_plan_owns(plan, 0, i));
        assert_false(kvshard_plan_owns(plan, 6, i));
    }
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_IMBALANCED));           /* 0 vs 12 */
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_RANK_OWNS_NOTHING));    /* 0, 1, 2 */
    assert_false(kvshard_plan_has_warning(plan, KVSHARD_WARN_EXCEEDS_REPLICATION)); /* 4 <= 4 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Same with the ordinal rule: ordinals 0..11 % 4 -> 3 layers per split rank. */
static void test_qwen3_next_ordinal_balanced(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = split_options(8, 4, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_plan *plan = tu_plan(model, &o);
    /* layer 3 + 4k has ordinal k; owner k % 4 */
    const uint32_t s0[] = {3, 19, 35};  /* ordinals 0, 4, 8 */
    const uint32_t s1[] = {7, 23, 39};  /* 1, 5, 9 */
    const uint32_t s2[] = {11, 27, 43}; /* 2, 6, 10 */
    const uint32_t s3[] = {15, 31, 47}; /* 3, 7, 11 */
    tu_assert_rank_layers(plan, 0, s0, 3);
    tu_assert_rank_layers(plan, 1, s1, 3);
    tu_assert_rank_layers(plan, 2, s2, 3);
    tu_assert_rank_layers(plan, 3, s3, 3);
    tu_assert_rank_layers(plan, 4, s0, 3);
    tu_assert_rank_layers(plan, 7, s3, 3);
    assert_int_equal(owner_of(plan, 27), 2);
    assert_int_equal(owner_of(plan, 0), KVSHARD_OWNER_ALL); /* linear */
    assert_int_equal(kvshard_plan_warning_count(plan), 0);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* W=16, D=2, S=2: T = 16 / (2 x 1) = 8; tp_rank 6 -> split rank 6 % 2 = 0,
 * group 6 / 2 = 3; tp_rank 7 -> split rank 1, group 3. */
static void test_split_groups_with_dp(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = split_options(16, 2, KVSHARD_OWNERSHIP_ORDINAL);
    o.dp_size = 2;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 8);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 2);
    uint32_t sr = 99, sg = 99;
    assert_int_equal(kvshard_plan_split_position(&sr, &sg, plan, 6), KVSHARD_OK);
    assert_int_equal(sr, 0);
    assert_int_equal(sg, 3);
    assert_int_equal(kvshard_plan_split_position(&sr, &sg, plan, 7), KVSHARD_OK);
    assert_int_equal(sr, 1);
    assert_int_equal(sg, 3);
    assert_int_equal(kvshard_plan_split_position(&sr, NULL, plan, 0), KVSHARD_OK);
    assert_int_equal(sr, 0);
    assert_int_equal(kvshard_plan_split_position(NULL, &sg, plan, 5), KVSHARD_OK);
    assert_int_equal(sg, 2); /* 5 / 2 */
    /* Ordinals 0, 2, ..., 10 -> split rank 0; 1, 3, ..., 11 -> split rank 1. */
    const uint32_t r0[] = {3, 11, 19, 27, 35, 43};
    const uint32_t r1[] = {7, 15, 23, 31, 39, 47};
    tu_assert_rank_layers(plan, 6, r0, 6);
    tu_assert_rank_layers(plan, 7, r1, 6);
    /* TP ranks stop at T - 1 = 7, even though the world has 16 ranks. */
    assert_int_equal(kvshard_plan_split_position(&sr, &sg, plan, 8), KVSHARD_ERANK);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Kimi Linear (MLA, R = T) TP4 split 4, ordinal: full layers 3, 7, 11, 15,
 * 19, 23, 26 have ordinals 0..6 -> split ranks 0,1,2,3,0,1,2. Global: index
 * % 4 -> 3,3,3,3,3,3,2. */
static void test_kimi_owners(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("kimi_linear_48b_a3b.json");
    kvshard_options o = split_options(4, 4, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_replication_factor(plan), 4); /* MLA: R = T */
    const uint32_t s0[] = {3, 19}, s1[] = {7, 23}, s2[] = {11, 26}, s3[] = {15};
    tu_assert_rank_layers(plan, 0, s0, 2);
    tu_assert_rank_layers(plan, 1, s1, 2);
    tu_assert_rank_layers(plan, 2, s2, 2);
    tu_assert_rank_layers(plan, 3, s3, 1);
    assert_int_equal(kvshard_plan_warning_count(plan), 0); /* 2 - 1 <= 1 */
    kvshard_plan_free(plan);

    o.ownership = KVSHARD_OWNERSHIP_GLOBAL;
    plan = tu_plan(model, &o);
    const uint32_t g2[] = {26}, g3[] = {3, 7, 11, 15, 19, 23};
    tu_assert_rank_layers(plan, 2, g2, 1);
    tu_assert_rank_layers(plan, 3, g3, 6);
    assert_int_equal(owned_count(plan, 0), 0);
    assert_int_equal(owned_count(plan, 1), 0);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_IMBALANCED));        /* 0 vs 6 */
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_RANK_OWNS_NOTHING)); /* 0 and 1 */
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* ---- validation errors ------------------------------------------------------ */

static void test_parallel_errors(void **state)
{
    (void)state;
    kvshard_model *ds = tu_load_example_model("deepseek_v3_2.json");
    kvshard_error err;

    /* T = 2 / 1 = 2; 2 % 4 != 0 */
    kvshard_options o = split_options(2, 4, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(plan_error(ds, &o, &err), KVSHARD_ESPLIT);
    assert_int_equal(err.code, KVSHARD_ESPLIT);
    assert_non_null(strstr(err.message, "layerwise_split_size 4 does not divide the attention TP "
                                        "size 2"));
    /* the same sizes with the split off are fine: S_eff = 1 */
    o.enable_layerwise_split = false;
    kvshard_plan *plan = tu_plan(ds, &o);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    kvshard_plan_free(plan);

    /* W 8, C 2: T = 4, S = 2 divides it, but the split cannot go with CP */
    o = split_options(8, 2, KVSHARD_OWNERSHIP_ORDINAL);
    o.cp_size = 2;
    assert_int_equal(plan_error(ds, &o, &err), KVSHARD_ESPLITCP);
    /* CP without the split is fine: T = 8 / 2 = 4 */
    o.enable_layerwise_split = false;
    plan = tu_plan(ds, &o);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 4);
    kvshard_plan_free(plan);

    /* 6 % (4 x 1) != 0 */
    o = split_options(6, 1, KVSHARD_OWNERSHIP_ORDINAL);
    o.dp_size = 4;
    assert_int_equal(plan_error(ds, &o, &err), KVSHARD_EWORLD);
    assert_non_null(strstr(err.message, "6"));
    /* 12 % (2 x 4) != 0 */
    o = split_options(12, 1, KVSHARD_OWNERSHIP_ORDINAL);
    o.dp_size = 2;
    o.cp_size = 4;
    assert_int_equal(plan_error(ds, &o, &err), KVSHARD_EWORLD);

    /* any of W, D, C, S below 1 */
    for (int which = 0; which < 4; which++) {
        o = split_options(8, 2, KVSHARD_OWNERSHIP_ORDINAL);
        switch (which) {
        case 0: o.world_size = 0; break;
        case 1: o.dp_size = 0; break;
        case 2: o.cp_size = 0; break;
        default: o.layerwise_split_size = 0; break;
        }
        assert_int_equal(plan_error(ds, &o, &err), KVSHARD_EPARALLEL);
        assert_int_equal(err.code, KVSHARD_EPARALLEL);
    }
    kvshard_model_free(ds);
}

static void test_kv_heads_errors(void **state)
{
    (void)state;
    kvshard_error err;
    /* 3 kv heads at T = 2: 2 % 3 = 2 and 3 % 2 = 1 */
    kvshard_model *m = tu_load_model_text("num_hidden_layers: 2\nnum_key_value_heads: 3\n"
                                          "head_dim: 8\n");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 2;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EKVHEADS);
    assert_non_null(strstr(err.message, "3"));
    /* T = 3 and T = 6 divide / are divided by 3: fine */
    o.world_size = 3;
    kvshard_plan *plan = tu_plan(m, &o);
    kvshard_plan_free(plan);
    o.world_size = 6;
    plan = tu_plan(m, &o);
    kvshard_plan_free(plan);
    kvshard_model_free(m);

    /* llama 8 kv heads at T = 6: 6 % 8 = 6, 8 % 6 = 2 */
    m = tu_load_example_model("llama3_1_8b.json");
    o.world_size = 6;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EKVHEADS);
    kvshard_model_free(m);

    /* MLA ignores num_key_value_heads, but its query heads shard over T as
     * GQA's do: DeepSeek-V3.2's 128 at T = 6 (128 = 21 x 6 + 2) and T = 24
     * (128 = 5 x 24 + 8) are refused as query heads; T = 8 holds 16 a rank. */
    m = tu_load_example_model("deepseek_v3_2.json");
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_string_equal(err.message, "num_attention_heads 128 is not divisible by the attention "
                                     "TP size 6: every rank holds the same number of query heads");
    o.world_size = 24;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_string_equal(kvshard_status_name(err.code), "q_heads");
    assert_non_null(strstr(err.message, "num_attention_heads 128 is not divisible by the "
                                        "attention TP size 24"));
    o.world_size = 8;
    plan = tu_plan(m, &o);
    kvshard_plan_free(plan);
    kvshard_model_free(m);
}

static void test_linear_heads_errors(void **state)
{
    (void)state;
    kvshard_error err;
    /* Kimi: 32 KDA heads, T = 3: 32 % 3 = 2; its MLA layers' 32 query heads
     * do not shard over 3 ranks either, and are refused first. */
    kvshard_model *m = tu_load_example_model("kimi_linear_48b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 3;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_non_null(strstr(err.message, "num_attention_heads 32"));
    kvshard_model_free(m);

    /* GDN key heads 6 at T = 4, where the 8 query and 2 KV heads lay out
     * (8 % 4 = 0, 4 % 2 = 0): 6 % 4 = 2. */
    m = tu_load_model_text("num_hidden_layers: 2\nlayer_types: [linear_attention, full_attention]\n"
                           "num_attention_heads: 8\nnum_key_value_heads: 2\nhead_dim: 16\n"
                           "linear_num_key_heads: 6\nlinear_num_value_heads: 8\n"
                           "linear_key_head_dim: 4\nlinear_value_head_dim: 4\n"
                           "linear_conv_kernel_dim: 2\n");
    o.world_size = 4;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_ELINEARHEADS);
    assert_non_null(strstr(err.message, "linear_num_key_heads 6 is not divisible by the attention "
                                        "TP size 4"));
    kvshard_model_free(m);

    /* Qwen3-Next at T = 32: kv heads 2 divide 32, but its 16 query heads do
     * not shard over 32 ranks, which the engines refuse before any state. */
    m = tu_load_example_model("qwen3_next_80b_a3b.json");
    o.world_size = 32;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_non_null(strstr(err.message, "num_attention_heads 16 is not divisible by the attention "
                                        "TP size 32"));
    kvshard_model_free(m);

    /* MiniMax: 64 query (and lightning) heads at T = 128, with kv heads 8
     * dividing 128: the query heads are refused first. */
    m = tu_load_example_model("minimax_m1.json");
    o.world_size = 128;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    kvshard_model_free(m);
}

/* The query heads against T under every attention that stores KV, and not
 * for a model that stores none. */
static void test_query_heads_every_attention(void **state)
{
    (void)state;
    kvshard_error err;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    /* Five sliding layers, no full one (a Gemma 3 config shorter than its
     * pattern of 6): 8 query heads on 16 ranks (16 % 4 KV heads = 0). */
    kvshard_model *m = tu_load_model_text(
        "{model_type: gemma3_text, num_hidden_layers: 5, sliding_window_pattern: 6, "
        "sliding_window: 512, num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256}");
    o.world_size = 16;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_string_equal(err.message, "num_attention_heads 8 is not divisible by the attention "
                                     "TP size 16: every rank holds the same number of query heads");
    o.world_size = 8; /* one query head a rank; KV heads 4 replicated twice */
    kvshard_plan_free(tu_plan(m, &o));
    kvshard_model_free(m);

    /* Compressed attention (DeepSeek-V4-Flash): 64 query heads, T = 3. */
    m = tu_load_example_model("deepseek_v4_flash.json");
    o.world_size = 3;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_non_null(strstr(err.message, "num_attention_heads 64 is not divisible by the "
                                        "attention TP size 3"));
    kvshard_model_free(m);

    /* GLM-5 (DSA): 64 query heads, T = 48 (64 = 48 + 16). */
    m = tu_load_example_model("glm_5.json");
    o.world_size = 48;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    kvshard_model_free(m);

    /* MLA from a description: 6 query heads on 4 ranks. */
    kvshard_model_desc d = KVSHARD_MODEL_DESC_INIT;
    d.num_layers = 2;
    d.attention = KVSHARD_ATTENTION_MLA;
    d.kv_lora_rank = 512;
    d.qk_rope_head_dim = 64;
    d.num_attention_heads = 6;
    tu_assert_ok(kvshard_model_create(&m, &d, NULL, &err), &err);
    o.world_size = 4;
    assert_int_equal(plan_error(m, &o, &err), KVSHARD_EQHEADS);
    assert_string_equal(err.message, "num_attention_heads 6 is not divisible by the attention TP "
                                     "size 4: every rank holds the same number of query heads");
    kvshard_model_free(m);

    /* Models that store no KV are not checked: layers that keep nothing,
     * and Mamba2 layers only (32 heads and 2 groups lay out on 16 ranks). */
    m = tu_load_model_text("{model_type: nemotron_h, num_hidden_layers: 4, "
                           "hybrid_override_pattern: \"-E-E\", num_attention_heads: 8}");
    o.world_size = 3;
    kvshard_plan_free(tu_plan(m, &o));
    kvshard_model_free(m);
    m = tu_load_model_text("{model_type: nemotron_h, num_hidden_layers: 4, "
                           "hybrid_override_pattern: MMMM, num_attention_heads: 8, "
                           "num_key_value_heads: 2, head_dim: 128, mamba_num_heads: 32, "
                           "mamba_head_dim: 64, ssm_state_size: 128, n_groups: 2}");
    o.world_size = 16;
    kvshard_plan_free(tu_plan(m, &o));
    kvshard_model_free(m);
}

/* ---- effective split size and warnings ---------------------------------- */

static void test_split_disabled_and_size_one(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    /* S = 2 but not enabled: S_eff 1, warning split_disabled */
    kvshard_options o = split_options(4, 2, KVSHARD_OWNERSHIP_ORDINAL);
    o.enable_layerwise_split = false;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_SPLIT_DISABLED));
    assert_false(kvshard_plan_has_warning(plan, KVSHARD_WARN_SPLIT_SIZE_ONE));
    const uint32_t all[] = {3, 7, 11, 15, 19, 23, 27, 31, 35, 39};
    for (uint32_t r = 0; r < 4; r++)
        tu_assert_rank_layers(plan, r, all, 10); /* everyone stores all 10 */
    kvshard_warning_code code = KVSHARD_WARN_NO_KV_LAYERS;
    const char *message = NULL;
    assert_int_equal(kvshard_plan_warning(&code, &message, plan, 0), KVSHARD_OK);
    assert_int_equal(code, KVSHARD_WARN_SPLIT_DISABLED);
    assert_non_null(message);
    assert_string_equal(kvshard_warning_name(code), "split_disabled");
    assert_int_equal(kvshard_plan_warning(&code, &message, plan, 99), KVSHARD_EINVAL);
    kvshard_plan_free(plan);

    /* enabled with S = 1: split_size_one */
    o = split_options(4, 1, KVSHARD_OWNERSHIP_ORDINAL);
    plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_SPLIT_SIZE_ONE));
    assert_false(kvshard_plan_has_warning(plan, KVSHARD_WARN_SPLIT_DISABLED));
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_SPLIT_SIZE_ONE), "split_size_one");
    kvshard_plan_free(plan);

    /* defaults: no split, no warnings */
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    assert_int_equal(kvshard_plan_warning_count(plan), 0);
    kvshard_plan_free(plan);
    /* NULL options = KVSHARD_OPTIONS_INIT: T = 1 */
    plan = tu_plan(model, NULL);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 1);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* A draft model is never split. */
static void test_is_draft(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = split_options(4, 2, KVSHARD_OWNERSHIP_ORDINAL);
    o.is_draft = true;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    assert_int_equal(owner_of(plan, 3), KVSHARD_OWNER_ALL);
    assert_true(kvshard_plan_owns(plan, 1, 3));
    assert_int_equal(owned_count(plan, 1), 10);
    /* kvshard's own warning: a split was asked for and does not apply. */
    assert_int_equal(kvshard_plan_warning_count(plan), 1);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_DRAFT_UNSPLIT));
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_DRAFT_UNSPLIT), "draft_unsplit");
    kvshard_plan_free(plan);
    /* is_draft also avoids ESPLIT: T = 2 with S = 4 would fail otherwise */
    kvshard_model *ds = tu_load_example_model("deepseek_v3_2.json");
    o = split_options(2, 4, KVSHARD_OWNERSHIP_ORDINAL);
    o.is_draft = true;
    plan = tu_plan(ds, &o);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    kvshard_plan_free(plan);
    kvshard_model_free(ds);
    kvshard_model_free(model);
}

/* GQA with H_kv >= T: R = 1, so any S > 1 exceeds it. llama 8 kv heads at
 * TP4: each rank 2 heads, R = 1 < S = 2. */
static void test_exceeds_replication(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = split_options(4, 2, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_replication_factor(plan), 1);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 2);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_EXCEEDS_REPLICATION));
    assert_false(kvshard_plan_has_warning(plan, KVSHARD_WARN_IMBALANCED)); /* 16 / 16 */
    assert_int_equal(owned_count(plan, 0), 16); /* 32 layers, ordinals even */
    assert_int_equal(owned_count(plan, 1), 16);
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_EXCEEDS_REPLICATION),
                        "exceeds_replication");
    kvshard_plan_free(plan);

    /* Qwen3.5 at TP4: R = 4 / 2 = 2; S = 4 > 2 warns, S = 2 does not. */
    kvshard_model *q = tu_load_example_model("qwen3_5_35b_a3b.json");
    o = split_options(4, 4, KVSHARD_OWNERSHIP_ORDINAL);
    plan = tu_plan(q, &o);
    assert_int_equal(kvshard_plan_replication_factor(plan), 2);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_EXCEEDS_REPLICATION));
    kvshard_plan_free(plan);
    kvshard_model_free(q);
    kvshard_model_free(model);
}

/* A model without any full-attention layer. */
static void test_no_kv_layers(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "num_hidden_layers: 4\n"
        "layer_types: [linear_attention, linear_attention, linear_attention, linear_attention]\n"
        "linear_num_key_heads: 4\nlinear_num_value_heads: 4\nlinear_key_head_dim: 8\n"
        "linear_value_head_dim: 8\nlinear_conv_kernel_dim: 4\n");
    kvshard_options o = split_options(2, 2, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_plan *plan = tu_plan(m, &o);
    assert_true(kvshard_plan_has_warning(plan, KVSHARD_WARN_NO_KV_LAYERS));
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_NO_KV_LAYERS), "no_kv_layers");
    assert_int_equal(owned_count(plan, 0), 0);
    assert_int_equal(owned_count(plan, 1), 0);
    for (uint32_t i = 0; i < 4; i++) {
        assert_int_equal(owner_of(plan, i), KVSHARD_OWNER_ALL);
        assert_true(kvshard_plan_owns(plan, 0, i));
        assert_true(kvshard_plan_owns(plan, 1, i));
    }
    kvshard_plan_free(plan);
    kvshard_model_free(m);
}

/* ---- queries ------------------------------------------------------------ */

static void test_queries_and_ranges(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = split_options(4, 2, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_num_layers(plan), 40);
    /* linear layers: owner all; full layers: ordinal % 2 */
    assert_int_equal(owner_of(plan, 0), KVSHARD_OWNER_ALL);
    assert_int_equal(owner_of(plan, 38), KVSHARD_OWNER_ALL);
    assert_int_equal(owner_of(plan, 3), 0);  /* ordinal 0 */
    assert_int_equal(owner_of(plan, 7), 1);  /* ordinal 1 */
    assert_int_equal(owner_of(plan, 39), 1); /* ordinal 9 */
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&st, plan, 0, 39), KVSHARD_OK);
    assert_int_equal(st.kind, KVSHARD_LAYER_FULL_ATTENTION);
    assert_int_equal(kvshard_plan_layer_storage(&st, plan, 0, 38), KVSHARD_OK);
    assert_int_equal(st.kind, KVSHARD_LAYER_LINEAR_ATTENTION);
    kvshard_plan_model_info facts = tu_plan_model(plan);
    assert_int_equal(facts.num_draft_layers, 1); /* mtp_num_hidden_layers */
    assert_int_equal(facts.state_kind, KVSHARD_STATE_GDN);

    /* bad layer: ELAYER, output untouched */
    int32_t owner = 1234;
    assert_int_equal(kvshard_plan_layer_owner(&owner, plan, 40), KVSHARD_ELAYER);
    assert_int_equal(owner, 1234);
    st.kind = KVSHARD_LAYER_SLIDING_ATTENTION; /* 40 is the draft layer: 41 is past L + d */
    assert_int_equal(kvshard_plan_layer_storage(&st, plan, 0, 41), KVSHARD_ELAYER);
    assert_int_equal(st.kind, KVSHARD_LAYER_SLIDING_ATTENTION);
    assert_int_equal(kvshard_plan_layer_owner(&owner, plan, UINT32_MAX), KVSHARD_ELAYER);

    /* owns() out of range: false */
    assert_false(kvshard_plan_owns(plan, 4, 3));
    assert_false(kvshard_plan_owns(plan, 0, 40));
    assert_false(kvshard_plan_owns(plan, UINT32_MAX, 0));
    assert_true(kvshard_plan_owns(plan, 3, 39)); /* split rank 1 owns ordinal 9 */
    assert_false(kvshard_plan_owns(plan, 2, 39));

    /* bad rank: ERANK, outputs untouched */
    const uint32_t *layers = NULL;
    size_t n = 77;
    assert_int_equal(kvshard_plan_rank_layers(&layers, &n, plan, 4), KVSHARD_ERANK);
    assert_null(layers);
    assert_int_equal(n, 77);
    uint32_t sr = 55, sg = 66;
    assert_int_equal(kvshard_plan_split_position(&sr, &sg, plan, 4), KVSHARD_ERANK);
    assert_int_equal(sr, 55);
    assert_int_equal(sg, 66);
    kvshard_rank_memory mem = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&mem, plan, 4), KVSHARD_ERANK);
    kvshard_plan_free(plan);

    /* S_eff = 1: every full layer owner all, every rank owns it */
    o = split_options(4, 1, KVSHARD_OWNERSHIP_ORDINAL);
    plan = tu_plan(model, &o);
    assert_int_equal(owner_of(plan, 3), KVSHARD_OWNER_ALL);
    assert_int_equal(owner_of(plan, 7), KVSHARD_OWNER_ALL);
    for (uint32_t r = 0; r < 4; r++) {
        assert_true(kvshard_plan_owns(plan, r, 3));
        assert_true(kvshard_plan_owns(plan, r, 7));
        assert_int_equal(kvshard_plan_split_position(&sr, &sg, plan, r), KVSHARD_OK);
        assert_int_equal(sr, 0); /* r % 1 */
        assert_int_equal(sg, r); /* r / 1 */
    }
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* ---- digest ------------------------------------------------------------- */

static void test_digest(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_model *again = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = split_options(4, 2, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_plan *a = tu_plan(model, &o);
    kvshard_plan *b = tu_plan(again, &o);
    assert_int_equal(kvshard_plan_digest(a), kvshard_plan_digest(b));

    /* global: layers 3, 7, ... all odd -> all on split rank 1: owners change */
    kvshard_options g = o;
    g.ownership = KVSHARD_OWNERSHIP_GLOBAL;
    kvshard_plan *c = tu_plan(model, &g);
    assert_int_equal(owner_of(c, 3), 1); /* 3 % 2; ordinal gave 0 */
    assert_true(kvshard_plan_digest(a) != kvshard_plan_digest(c));

    /* block_size 32 doubles bytes_per_block: a byte figure changes */
    kvshard_options bs = o;
    bs.block_size = 32;
    kvshard_plan *d = tu_plan(model, &bs);
    assert_true(kvshard_plan_digest(a) != kvshard_plan_digest(d));

    /* fp8 KV changes kv_bytes_per_token */
    kvshard_options f8 = o;
    f8.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    kvshard_plan *e = tu_plan(model, &f8);
    assert_true(kvshard_plan_digest(a) != kvshard_plan_digest(e));

    /* the model may be freed; a plan built after it from the same inputs matches */
    kvshard_model_free(again);
    kvshard_plan *a2 = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_digest(a2), kvshard_plan_digest(b));

    kvshard_plan_free(a);
    kvshard_plan_free(a2);
    kvshard_plan_free(b);
    kvshard_plan_free(c);
    kvshard_plan_free(d);
    kvshard_plan_free(e);
    kvshard_model_free(model);
}

/* ---- JSON --------------------------------------------------------------- */

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        print_error("missing in JSON: %s\n", needle);
    assert_non_null(strstr(haystack, needle));
}

static void test_json_seed(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = split_options(4, 2, KVSHARD_OWNERSHIP_ORDINAL);
    o.memory_per_rank = 20ull << 30;
    o.max_seqs = 128;
    kvshard_plan *plan = tu_plan(model, &o);
    char *json = tu_plan_json(plan);
    assert_contains(json, "\"model_type\": \"qwen3_5_moe\"");
    assert_contains(json, "\"num_layers\": 40");
    assert_contains(json, "\"num_full_attention_layers\": 10");
    assert_contains(json, "\"num_linear_attention_layers\": 30");
    assert_contains(json, "\"num_draft_layers\": 1");
    assert_contains(json, "\"attention\": \"gqa\"");
    /* kv_cache_dtype auto resolves to the checkpoint's bfloat16 */
    assert_contains(json, "\"state_dtype\": \"float32\", \"kv_cache_dtype\": \"bfloat16\"}");
    assert_contains(json, "\"attn_tp_size\": 4, \"enable_layerwise_split\": true, "
                          "\"layerwise_split_size\": 2");
    {
        kvshard_options fp8 = o;
        fp8.kv_cache_dtype = KVSHARD_DTYPE_FP8;
        fp8.enable_layerwise_split = false;
        kvshard_plan *p8 = tu_plan(model, &fp8);
        char *j8 = tu_plan_json(p8);
        assert_contains(j8, "\"kv_cache_dtype\": \"fp8\"}");
        assert_contains(j8, "\"enable_layerwise_split\": false, \"layerwise_split_size\": 2");
        free(j8);
        kvshard_plan_free(p8);
    }
    assert_contains(json, "\"effective_split_size\": 2");
    assert_contains(json, "\"ownership\": \"ordinal\"");
    assert_contains(json, "\"replication_factor\": 2"); /* T / H_kv = 4 / 2 */
    assert_contains(json, "{\"index\": 0, \"kind\": \"linear_attention\", \"owner\": null, "
                          "\"compress_ratio\": null, \"kv_source\": null, \"index_key\": false, \"stage\": 0}");
    assert_contains(json, "{\"index\": 3, \"kind\": \"full_attention\", \"owner\": 0, "
                          "\"compress_ratio\": null, \"kv_source\": null, \"index_key\": false, \"stage\": 0}");
    assert_contains(json, "{\"index\": 7, \"kind\": \"full_attention\", \"owner\": 1, "
                          "\"compress_ratio\": null, \"kv_source\": null, \"index_key\": false, \"stage\": 0}");
    assert_contains(json, "\"owned_layers\": [3, 11, 19, 27, 35]");
    assert_contains(json, "\"owned_layers\": [7, 15, 23, 31, 39]");
    assert_contains(json, "\"tp_rank\": 3, \"split_group\": 1, \"split_rank\": 1");
    /* Memory figures (see test_memory.c): 5 x 1024 kv, 1024 scratch, 16 x 6144 */
    assert_contains(json, "\"kv_bytes_per_token\": 5120");
    assert_contains(json, "\"scratch_bytes_per_token\": 1024");
    assert_contains(json, "\"bytes_per_block\": 98304");
    assert_contains(json, "\"state_bytes_per_seq\": 16097280");
    assert_contains(json, "\"num_blocks\": 197493");
    assert_contains(json, "\"max_tokens\": 3159888");          /* 197493 x 16 */
    assert_contains(json, "\"memory_per_rank\": 21474836480"); /* 20 x 2^30 */
    assert_contains(json, "\"max_seqs\": 128");
    char digest[40];
    snprintf(digest, sizeof digest, "\"digest\": \"%016llx\"",
             (unsigned long long)kvshard_plan_digest(plan));
    assert_contains(json, digest);
    assert_null(strstr(json, "\"code\"")); /* no warnings */
    free(json);
    kvshard_plan_free(plan);

    /* without memory_per_rank: capacity figures are null */
    o.memory_per_rank = 0;
    plan = tu_plan(model, &o);
    json = tu_plan_json(plan);
    assert_contains(json, "\"memory_per_rank\": null");
    assert_contains(json, "\"max_tokens\": null");
    free(json);
    kvshard_plan_free(plan);

    /* a warning shows up by its code */
    o = split_options(4, 2, KVSHARD_OWNERSHIP_GLOBAL);
    plan = tu_plan(model, &o);
    json = tu_plan_json(plan);
    assert_contains(json, "\"code\": \"rank_owns_nothing\"");
    assert_contains(json, "\"code\": \"imbalanced\"");
    assert_contains(json, "\"owned_layers\": []"); /* split rank 0 */
    free(json);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* context_length against max_position_embeddings: the text config's value
 * before the top level's, a warning only beyond it, none when neither gives
 * it; a comparison's rows carry the same warning. */
static void test_context_beyond_model(void **state)
{
    (void)state;
    kvshard_model *nested = tu_load_model_text(
        "{\"max_position_embeddings\": 8192, \"text_config\": {\"num_hidden_layers\": 2, "
        "\"num_key_value_heads\": 2, \"head_dim\": 8, \"max_position_embeddings\": 4096}}");
    kvshard_model *top = tu_load_model_text("{\"num_hidden_layers\": 2, \"num_key_value_heads\": 2, "
                                            "\"head_dim\": 8, \"max_position_embeddings\": 8192}");
    kvshard_model *none =
        tu_load_model_text("{\"num_hidden_layers\": 2, \"num_key_value_heads\": 2, \"head_dim\": 8}");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.memory_per_rank = 1 << 20;
    struct {
        kvshard_model *model;
        uint32_t context_length;
        bool warned;
    } cases[] = {{nested, 4096, false}, {nested, 4097, true}, {top, 8192, false},
                 {top, 8193, true},     {none, 1u << 30, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.context_length = cases[i].context_length;
        kvshard_plan *plan = tu_plan(cases[i].model, &o);
        assert_int_equal(kvshard_plan_has_warning(plan, KVSHARD_WARN_CONTEXT_BEYOND_MODEL),
                         cases[i].warned);
        kvshard_plan_free(plan);
    }
    o.context_length = 4097;
    kvshard_plan *plan = tu_plan(nested, &o);
    const char *message = NULL;
    for (size_t i = 0; i < kvshard_plan_warning_count(plan); i++) {
        kvshard_warning_code code;
        const char *text;
        assert_int_equal(kvshard_plan_warning(&code, &text, plan, i), KVSHARD_OK);
        if (code == KVSHARD_WARN_CONTEXT_BEYOND_MODEL)
            message = text;
    }
    assert_non_null(message);
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_CONTEXT_BEYOND_MODEL),
                        "context_beyond_model");
    assert_non_null(strstr(message, "context_length 4097 is beyond the model's "
                                    "max_position_embeddings 4096"));
    kvshard_plan_free(plan);

    kvshard_comparison *c = NULL;
    kvshard_error err;
    o.world_size = 2;
    assert_int_equal(kvshard_comparison_create(&c, nested, &o, NULL, NULL, &err), KVSHARD_OK);
    assert_true(kvshard_comparison_row_count(c) > 0);
    for (size_t i = 0; i < kvshard_comparison_row_count(c); i++)
        assert_true(kvshard_comparison_row_at(c, i)->warnings &
                    (1u << KVSHARD_WARN_CONTEXT_BEYOND_MODEL));
    kvshard_comparison_free(c);
    kvshard_model_free(nested);
    kvshard_model_free(top);
    kvshard_model_free(none);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owners_follow_the_rules),
        cmocka_unit_test(test_qwen3_5_tp4_split2_ordinal),
        cmocka_unit_test(test_qwen3_next_global_all_on_one_rank),
        cmocka_unit_test(test_qwen3_next_ordinal_balanced),
        cmocka_unit_test(test_split_groups_with_dp),
        cmocka_unit_test(test_kimi_owners),
        cmocka_unit_test(test_parallel_errors),
        cmocka_unit_test(test_kv_heads_errors),
        cmocka_unit_test(test_linear_heads_errors),
        cmocka_unit_test(test_query_heads_every_attention),
        cmocka_unit_test(test_split_disabled_and_size_one),
        cmocka_unit_test(test_is_draft),
        cmocka_unit_test(test_exceeds_replication),
        cmocka_unit_test(test_no_kv_layers),
        cmocka_unit_test(test_queries_and_ranges),
        cmocka_unit_test(test_digest),
        cmocka_unit_test(test_json_seed),
        cmocka_unit_test(test_context_beyond_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
