/* The buffer-shape getters: the KV cache dtype auto resolves to, a layer's
 * KV geometry on a rank, the tensors of a layer's state, the log line with
 * measured blocks and the max_seqs of kvshard_plan_blocks_for(). Every
 * figure is worked by hand from the model's config next to it. */
#include "test_util.h"

#include <string.h>

#define GiB (1024ull * 1024ull * 1024ull)

static kvshard_plan *plan_of(const char *model_name, uint32_t world_size, void (*tweak)(kvshard_options *))
{
    kvshard_model *model = tu_load_example_model(model_name);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world_size;
    if (tweak)
        tweak(&o);
    kvshard_plan *plan = tu_plan(model, &o);
    kvshard_model_free(model);
    return plan;
}

static kvshard_layer_kv_geometry geometry_of(const kvshard_plan *plan, uint32_t rank,
                                             uint32_t layer)
{
    kvshard_error err;
    kvshard_layer_kv_geometry g = KVSHARD_LAYER_KV_GEOMETRY_INIT;
    tu_assert_ok(kvshard_plan_layer_kv_geometry(&g, plan, rank, layer, &err), &err);
    return g;
}

/* The state tensors of `layer` on `rank`, which must be `expected` many;
 * their bytes must add up to the layer's state in its storage. */
static void state_of(kvshard_state_tensor *t, size_t expected, const kvshard_plan *plan,
                     uint32_t rank, uint32_t layer)
{
    kvshard_error err;
    size_t count = 99;
    for (size_t i = 0; i < KVSHARD_MAX_STATE_TENSORS; i++)
        t[i] = (kvshard_state_tensor)KVSHARD_STATE_TENSOR_INIT;
    tu_assert_ok(kvshard_plan_layer_state_shapes(t, KVSHARD_MAX_STATE_TENSORS, &count, plan, rank,
                                                 layer, &err),
                 &err);
    assert_int_equal(count, expected);
    uint64_t sum = 0;
    for (size_t i = 0; i < count; i++) {
        uint64_t elements = 1;
        for (uint32_t d = 0; d < t[i].ndim; d++)
            elements *= t[i].dims[d];
        for (uint32_t d = t[i].ndim; d < 4; d++)
            assert_true(t[i].dims[d] == 0);
        assert_true(t[i].bytes == elements * kvshard_dtype_size(t[i].dtype));
        sum += t[i].bytes;
    }
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    tu_assert_ok(kvshard_plan_layer_storage(&st, plan, rank, layer), NULL);
    assert_true(sum == st.state_bytes_per_seq);
}

static void assert_dims(const kvshard_state_tensor *t, const char *name, kvshard_dtype dtype,
                        uint32_t ndim, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                        uint64_t bytes)
{
    assert_string_equal(t->name, name);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    assert_true(t->dims[0] == a && t->dims[1] == b && t->dims[2] == c && t->dims[3] == d);
    assert_true(t->bytes == bytes);
}

static void test_dtype_sizes(void **state)
{
    (void)state;
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_FP32), 4);
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_BF16), 2);
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_FP16), 2);
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_FP8), 1);
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_INT8), 1);
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_AUTO), 0);
}

static void fp8_cache(kvshard_options *o)
{
    o->kv_cache_dtype = KVSHARD_DTYPE_FP8;
}

/* Qwen3.5-35B-A3B's config says bfloat16: auto is bfloat16, 2 bytes; the
 * option fp8 is fp8, 1 byte, and the geometry says so too. */
static void test_kv_cache_dtype(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_of("qwen3_5_35b_a3b.json", 4, NULL);
    assert_int_equal(kvshard_plan_kv_cache_dtype(plan), KVSHARD_DTYPE_BF16);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    tu_assert_ok(kvshard_plan_options(&o, plan), NULL);
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_AUTO); /* the option stays as given */
    kvshard_layer_kv_geometry g = geometry_of(plan, 0, 3);
    assert_int_equal(g.dtype, KVSHARD_DTYPE_BF16);
    assert_int_equal(g.element_bytes, 2);
    kvshard_plan_free(plan);

    plan = plan_of("qwen3_5_35b_a3b.json", 4, fp8_cache);
    assert_int_equal(kvshard_plan_kv_cache_dtype(plan), KVSHARD_DTYPE_FP8);
    g = geometry_of(plan, 0, 3);
    assert_int_equal(g.dtype, KVSHARD_DTYPE_FP8);
    assert_int_equal(g.element_bytes, 1);
    kvshard_plan_free(plan);
}

/* GQA, 2 KV heads of 256 (Qwen3.5-35B-A3B): fewer heads than ranks, so
 * rank r holds head floor(r x 2 / T), one head shared by T / 2 ranks. At
 * T = 4 ranks 0, 1 hold head 0 and ranks 2, 3 head 1; at T = 8 ranks 0-3
 * head 0, 4-7 head 1. A linear layer keeps no KV. */
static void test_gqa_replicated_heads(void **state)
{
    (void)state;
    static const uint32_t t4[4] = {0, 0, 1, 1}, t8[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    kvshard_plan *plan = plan_of("qwen3_5_35b_a3b.json", 4, NULL);
    for (uint32_t r = 0; r < 4; r++) {
        kvshard_layer_kv_geometry g = geometry_of(plan, r, 3);
        assert_int_equal(g.kind, KVSHARD_LAYER_FULL_ATTENTION);
        assert_int_equal(g.attention, KVSHARD_ATTENTION_GQA);
        assert_true(g.has_kv);
        assert_int_equal(g.kv_heads, 1);
        assert_int_equal(g.kv_head_first, t4[r]);
        assert_int_equal(g.total_kv_heads, 2);
        assert_int_equal(g.k_head_dim, 256);
        assert_int_equal(g.v_head_dim, 256);
        assert_int_equal(g.kv_lora_rank, 0);
        assert_int_equal(g.index_head_dim, 0);
        /* One head of K and V of 256 in bf16: 1 x (256 + 256) x 2 = 1024
         * bytes per token, the storage's figure. */
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        tu_assert_ok(kvshard_plan_layer_storage(&st, plan, r, 3), NULL);
        assert_true(st.kv_bytes_per_token ==
                    (uint64_t)g.kv_heads * (g.k_head_dim + g.v_head_dim) * g.element_bytes);
        assert_true(st.kv_bytes_per_token == 1024);
    }
    kvshard_layer_kv_geometry lin = geometry_of(plan, 0, 0);
    assert_int_equal(lin.kind, KVSHARD_LAYER_LINEAR_ATTENTION);
    assert_false(lin.has_kv);
    assert_int_equal(lin.kv_heads, 0);
    assert_int_equal(lin.k_head_dim, 0);
    kvshard_plan_free(plan);

    plan = plan_of("qwen3_5_35b_a3b.json", 8, NULL);
    for (uint32_t r = 0; r < 8; r++) {
        kvshard_layer_kv_geometry g = geometry_of(plan, r, 39);
        assert_int_equal(g.kv_heads, 1);
        assert_int_equal(g.kv_head_first, t8[r]);
    }
    kvshard_plan_free(plan);
}

/* GQA, 8 KV heads of 128 (Llama 3.1 8B): at T = 4 each rank holds two
 * heads, rank r heads 2r and 2r + 1; at T = 8 one, head r. */
static void test_gqa_divided_heads(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_of("llama3_1_8b.json", 4, NULL);
    for (uint32_t r = 0; r < 4; r++) {
        kvshard_layer_kv_geometry g = geometry_of(plan, r, 31);
        assert_int_equal(g.kv_heads, 2);
        assert_int_equal(g.kv_head_first, 2 * r);
        assert_int_equal(g.total_kv_heads, 8);
        assert_int_equal(g.k_head_dim, 128);
        assert_int_equal(g.v_head_dim, 128);
    }
    kvshard_plan_free(plan);
    plan = plan_of("llama3_1_8b.json", 8, NULL);
    for (uint32_t r = 0; r < 8; r++) {
        kvshard_layer_kv_geometry g = geometry_of(plan, r, 0);
        assert_int_equal(g.kv_heads, 1);
        assert_int_equal(g.kv_head_first, r);
    }
    kvshard_plan_free(plan);
}

/* DeepSeek-V3.2 at T = 8: MLA, latent 512 + RoPE 64, no heads, and the DSA
 * indexer's key of 128 on every layer. A bf16 token is (512 + 64) x 2 =
 * 1,152 bytes of latent and 128 + 4 of fp8 index key with its scale:
 * 1,284, the storage's figure (61 layers: 78,324 B/token). */
static void test_mla_latent_and_index(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_of("deepseek_v3_2.json", 8, NULL);
    for (uint32_t r = 0; r < 8; r += 7) {
        kvshard_layer_kv_geometry g = geometry_of(plan, r, 0);
        assert_int_equal(g.attention, KVSHARD_ATTENTION_MLA);
        assert_true(g.has_kv);
        assert_int_equal(g.kv_lora_rank, 512);
        assert_int_equal(g.qk_rope_head_dim, 64);
        assert_int_equal(g.index_head_dim, 128);
        assert_int_equal(g.kv_heads, 0);
        assert_int_equal(g.k_head_dim, 0);
        assert_int_equal(g.latent_dim, 0);
        assert_int_equal(g.dtype, KVSHARD_DTYPE_BF16);
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        tu_assert_ok(kvshard_plan_layer_storage(&st, plan, r, 60), NULL);
        assert_true(st.kv_bytes_per_token == 1284);
    }
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    tu_assert_ok(kvshard_plan_rank_memory(&m, plan, 0), NULL);
    assert_true(m.kv_bytes_per_token == 78324);
    kvshard_plan_free(plan);
}

/* Qwen3.5-35B-A3B's Gated DeltaNet: 16 key heads and 32 value heads of 128,
 * kernel 4, float32 temporal state. At T = 4 a rank has 4 key and 8 value
 * heads: conv channels 2 x 128 x 4 + 128 x 8 = 2,048 by K - 1 = 3 columns
 * in bf16 (12,288 bytes), temporal 8 x 128 x 128 in float32 (524,288).
 * At T = 8: 1,024 channels (6,144 bytes) and 4 x 128 x 128 (262,144). */
static void test_gdn_state(void **state)
{
    (void)state;
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    kvshard_plan *plan = plan_of("qwen3_5_35b_a3b.json", 4, NULL);
    state_of(t, 2, plan, 0, 0);
    assert_dims(&t[0], "conv", KVSHARD_DTYPE_BF16, 2, 2048, 3, 0, 0, 12288);
    assert_dims(&t[1], "ssm", KVSHARD_DTYPE_FP32, 3, 8, 128, 128, 0, 524288);
    state_of(t, 2, plan, 3, 38);
    assert_true(t[0].bytes + t[1].bytes == 536576);
    /* 30 linear layers of 536,576 bytes: the rank's state per sequence. */
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    tu_assert_ok(kvshard_plan_rank_memory(&m, plan, 2), NULL);
    assert_true(m.state_bytes_per_seq == 30ull * 536576);
    /* A full-attention layer has no state. */
    size_t count = 99;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_layer_state_shapes(t, 2, &count, plan, 0, 3, &err), &err);
    assert_int_equal(count, 0);
    kvshard_plan_free(plan);

    plan = plan_of("qwen3_5_35b_a3b.json", 8, NULL);
    state_of(t, 2, plan, 5, 0);
    assert_dims(&t[0], "conv", KVSHARD_DTYPE_BF16, 2, 1024, 3, 0, 0, 6144);
    assert_dims(&t[1], "ssm", KVSHARD_DTYPE_FP32, 3, 4, 128, 128, 0, 262144);
    kvshard_plan_free(plan);
}

static void two_draft_tokens(kvshard_options *o)
{
    o->num_speculative_tokens = 2;
}

/* Under two speculative tokens the conv keeps K - 1 + 2 = 5 columns
 * (2,048 x 5 x 2 = 20,480 bytes) and the temporal state 3 copies
 * (3 x 8 x 128 x 128 x 4 = 1,572,864). */
static void test_gdn_state_speculative(void **state)
{
    (void)state;
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    kvshard_plan *plan = plan_of("qwen3_5_35b_a3b.json", 4, two_draft_tokens);
    state_of(t, 2, plan, 1, 0);
    assert_dims(&t[0], "conv", KVSHARD_DTYPE_BF16, 2, 2048, 5, 0, 0, 20480);
    assert_dims(&t[1], "ssm", KVSHARD_DTYPE_FP32, 4, 3, 8, 128, 128, 1572864);
    kvshard_plan_free(plan);
}

/* Bamba-9B's Mamba2: 128 heads of 64, state 128, one group, kernel 4, the
 * state in the model dtype (bf16). At T = 4 the one group is copied to
 * every rank: conv channels 128 x 64 / 4 + 2 x 1 x 128 = 2,304 by 3
 * columns (13,824 bytes); temporal 32 x 64 x 128 (524,288). Layer 9 is
 * attention and has none. */
static void test_mamba2_state(void **state)
{
    (void)state;
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    kvshard_plan *plan = plan_of("bamba_9b.json", 4, NULL);
    assert_int_equal(tu_plan_model(plan).state_dtype, KVSHARD_DTYPE_BF16);
    state_of(t, 2, plan, 0, 0);
    assert_dims(&t[0], "conv", KVSHARD_DTYPE_BF16, 2, 2304, 3, 0, 0, 13824);
    assert_dims(&t[1], "ssm", KVSHARD_DTYPE_BF16, 3, 32, 64, 128, 0, 524288);
    state_of(t, 0, plan, 2, 9);
    /* A cap of 1: the first tensor written, the count is still 2. */
    kvshard_state_tensor one = KVSHARD_STATE_TENSOR_INIT;
    size_t count = 0;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_layer_state_shapes(&one, 1, &count, plan, 0, 1, &err), &err);
    assert_int_equal(count, 2);
    assert_string_equal(one.name, "conv");
    /* A count alone, with no array. */
    tu_assert_ok(kvshard_plan_layer_state_shapes(NULL, 0, &count, plan, 0, 1, &err), &err);
    assert_int_equal(count, 2);
    kvshard_plan_free(plan);
}

/* Out of range: the rank, the layer, a struct of another size. */
static void test_errors(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_of("qwen3_5_35b_a3b.json", 4, NULL);
    kvshard_error err;
    kvshard_layer_kv_geometry g = KVSHARD_LAYER_KV_GEOMETRY_INIT;
    assert_int_equal(kvshard_plan_layer_kv_geometry(&g, plan, 4, 0, &err), KVSHARD_ERANK);
    assert_non_null(strstr(err.message, "plan rank 4 is outside 0..3"));
    /* 40 decoder layers and one draft layer: 41 is past them. */
    assert_int_equal(kvshard_plan_layer_kv_geometry(&g, plan, 0, 41, &err), KVSHARD_ELAYER);
    assert_non_null(strstr(err.message, "layer 41 is outside 0..40"));
    kvshard_layer_kv_geometry draft = geometry_of(plan, 0, 40);
    assert_int_equal(draft.kind, KVSHARD_LAYER_FULL_ATTENTION);
    assert_int_equal(draft.kv_heads, 1);
    g.size = 8;
    assert_int_equal(kvshard_plan_layer_kv_geometry(&g, plan, 0, 0, &err), KVSHARD_EINVAL);
    kvshard_state_tensor t = KVSHARD_STATE_TENSOR_INIT;
    size_t count = 99;
    assert_int_equal(kvshard_plan_layer_state_shapes(&t, 1, &count, plan, 9, 0, &err),
                     KVSHARD_ERANK);
    assert_int_equal(kvshard_plan_layer_state_shapes(&t, 1, &count, plan, 0, 99, &err),
                     KVSHARD_ELAYER);
    t.size = 4;
    assert_int_equal(kvshard_plan_layer_state_shapes(&t, 1, &count, plan, 0, 0, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(count, 99);
    kvshard_plan_free(plan);
}

static void context_and_memory(kvshard_options *o)
{
    o->context_length = 32768;
    o->memory_per_rank = 40 * GiB;
}

/* Qwen3.5-35B-A3B at T = 4: 10 full layers of 1,024 B/token = 10,240
 * B/token, 163,840 bytes a block of 16; state 30 x 536,576 = 16,097,280
 * B/seq, 256 sequences of it reserved: 4,120,903,680 bytes. The plan's
 * 40 GiB leave 38,828,769,280 bytes: 236,992 blocks. A measured 20 GiB
 * leave 17,353,932,800: 105,920 blocks, which at the plan's 32,768 tokens
 * (2,048 blocks a sequence) serve 51 sequences. */
static void test_measured_blocks(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_of("qwen3_5_35b_a3b.json", 4, context_and_memory);
    kvshard_error err;
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    budget.memory_per_rank = 20 * GiB;
    kvshard_blocks b = KVSHARD_BLOCKS_INIT;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, KVSHARD_ALL_RANKS, &budget, &err), &err);
    assert_true(b.num_blocks == 105920);
    /* The budget named no length: the plan's 32,768 tokens, as for max_seqs;
     * balanced 21,474,836,480 / (16,097,280 + 2,048 x 163,840) = 61. */
    assert_true(b.has_concurrency && b.concurrency == 51);
    assert_true(b.has_balanced_max_seqs && b.balanced_max_seqs == 61);
    assert_true(b.has_max_seqs);
    assert_int_equal(b.max_seqs, 51);
    /* At 65,536 tokens the concurrency is 105,920 / 4,096 = 25; max_seqs
     * stays at the plan's length. */
    budget.context_length = 65536;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, 1, &budget, &err), &err);
    assert_true(b.has_concurrency && b.concurrency == 25);
    assert_int_equal(b.max_seqs, 51);
    /* 400 GiB less the reservation is 425,375,825,920 bytes: 2,596,288
     * blocks, 1,267 sequences of 2,048, capped at the 256 reserved. */
    budget.memory_per_rank = 400 * GiB;
    budget.context_length = 0;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, 0, &budget, &err), &err);
    assert_int_equal(b.max_seqs, 256);

    char line[512];
    int n = kvshard_plan_describe_rank(line, sizeof line, plan, 1);
    assert_true(n > 0 && (size_t)n < sizeof line);
    assert_non_null(strstr(line, ", 236992 blocks of 16, "));
    n = kvshard_plan_describe_rank_blocks(line, sizeof line, plan, 1, 105920);
    assert_true(n > 0 && (size_t)n < sizeof line);
    assert_non_null(strstr(line, ", 105920 blocks of 16, "));
    assert_null(strstr(line, "236992"));
    assert_non_null(strstr(line, "tp_rank 1/4 "));
    assert_int_equal(kvshard_plan_describe_rank_blocks(line, sizeof line, plan, 4, 1),
                     KVSHARD_ERANK);
    kvshard_plan_free(plan);

    /* Without a context length in the plan there is no max_seqs. */
    plan = plan_of("qwen3_5_35b_a3b.json", 4, NULL);
    budget.memory_per_rank = 20 * GiB;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, KVSHARD_ALL_RANKS, &budget, &err), &err);
    assert_true(b.num_blocks == 105920);
    assert_false(b.has_max_seqs);
    assert_int_equal(b.max_seqs, 0);
    kvshard_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_sizes),
        cmocka_unit_test(test_kv_cache_dtype),
        cmocka_unit_test(test_gqa_replicated_heads),
        cmocka_unit_test(test_gqa_divided_heads),
        cmocka_unit_test(test_mla_latent_and_index),
        cmocka_unit_test(test_gdn_state),
        cmocka_unit_test(test_gdn_state_speculative),
        cmocka_unit_test(test_mamba2_state),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_measured_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
