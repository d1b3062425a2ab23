/* Reading model configs: layer kinds, attention type, draft layers, dtype.
 * Expected figures are worked out by hand from the rules in docs/planning.md
 * and the models' published configs; the arithmetic is in the comment next
 * to each number. */
#include "test_util.h"

#include "model/kinds.h"
#include "model/reader.h"

#include <stdlib.h>
#include <string.h>

/* Gated DeltaNet keys, so that synthetic models with linear layers load. */
#define GDN_KEYS                                                                   \
    "linear_num_key_heads: 2\nlinear_num_value_heads: 2\nlinear_key_head_dim: 4\n" \
    "linear_value_head_dim: 4\nlinear_conv_kernel_dim: 2\n"

/* Every layer of `model` has the kind `kinds[i]`. */
static void assert_kinds(const kvshard_model *model, const kvshard_layer_kind *kinds, uint32_t n)
{
    assert_int_equal(kvshard_model_num_layers(model), n);
    for (uint32_t i = 0; i < n; i++) {
        kvshard_layer_kind k;
        assert_int_equal(kvshard_model_layer_kind(&k, model, i), KVSHARD_OK);
        if (k != kinds[i])
            print_error("layer %u: kind %d, expected %d\n", i, (int)k, (int)kinds[i]);
        assert_int_equal(k, kinds[i]);
    }
}

/* Layer i is full-attention iff (i + 1) % n == 0, else `other`. */
static void assert_every_nth_full(const kvshard_model *model, uint32_t n, kvshard_layer_kind other)
{
    uint32_t L = kvshard_model_num_layers(model);
    for (uint32_t i = 0; i < L; i++) {
        kvshard_layer_kind k;
        assert_int_equal(kvshard_model_layer_kind(&k, model, i), KVSHARD_OK);
        assert_int_equal(k, (i + 1) % n == 0 ? KVSHARD_LAYER_FULL_ATTENTION : other);
    }
}

/* KV bytes per token of one TP=1 rank without split: the sum over
 * full-attention layers of that layer's bytes (docs/planning.md, "Memory per rank"). */
static uint64_t tp1_kv_bytes(const kvshard_model *model, kvshard_dtype dtype)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.kv_cache_dtype = dtype;
    kvshard_plan *plan = tu_plan(model, &o);
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, plan, 0), KVSHARD_OK);
    kvshard_plan_free(plan);
    return m.kv_bytes_per_token;
}

static int load_error(const char *text, kvshard_error *err)
{
    kvshard_model *model = NULL;
    int rc = kvshard_model_load_string(&model, text, strlen(text), "test", NULL, err);
    kvshard_model_free(model);
    if (rc == KVSHARD_OK)
        assert_null(model);
    return rc;
}

/* Qwen3.5-35B-A3B: nested text_config with layer_types (40 entries). */
static void test_qwen3_5_nested(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    /* model_type comes from the top level, not text_config's "qwen3_5_moe_text". */
    assert_string_equal(kvshard_model_type(m), "qwen3_5_moe");
    assert_int_equal(kvshard_model_num_layers(m), 40);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 10); /* 40 / 4 */
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 30); /* 40 - 10 */
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 0);
    assert_int_equal(kvshard_model_num_draft_layers(m), 1); /* mtp_num_hidden_layers */
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_GQA);
    assert_every_nth_full(m, 4, KVSHARD_LAYER_LINEAR_ATTENTION); /* full at 3, 7, ..., 39 */
    kvshard_layer_kind k;
    assert_int_equal(kvshard_model_layer_kind(&k, m, 40), KVSHARD_ELAYER);
    assert_int_equal(kvshard_model_layer_kind(&k, m, UINT32_MAX), KVSHARD_ELAYER);
    /* Dimensions read from text_config: TP1, 10 full layers x 2 * 2 kv heads x
     * 256 head_dim x 2 bytes (bfloat16) = 10 x 2048 = 20480. */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 20480);
    kvshard_model_free(m);
}

/* Qwen3-Next: full_attention_interval only, flat config. */
static void test_qwen3_next_interval(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    assert_string_equal(kvshard_model_type(m), "qwen3_next");
    assert_int_equal(kvshard_model_num_layers(m), 48);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 12); /* 48 / 4 */
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 36); /* 48 - 12 */
    assert_int_equal(kvshard_model_num_draft_layers(m), 0); /* none in file */
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_GQA);
    assert_every_nth_full(m, 4, KVSHARD_LAYER_LINEAR_ATTENTION); /* 3, 7, ..., 47 */
    kvshard_model_free(m);
}

/* DeepSeek-V3.2: MLA + DSA indexer, every layer full, one MTP layer. */
static void test_deepseek_v3_2(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    assert_string_equal(kvshard_model_type(m), "deepseek_v32");
    assert_int_equal(kvshard_model_num_layers(m), 61);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 61);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 0);
    assert_int_equal(kvshard_model_num_draft_layers(m), 1); /* num_nextn_predict_layers */
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_MLA);
    /* bf16: latent (512 + 64) x 2 = 1152, indexer key 128 fp8 + 4 (one
     * fp32 scale per 128) = 132 -> 1284 per layer; kv heads 128 / head_dim
     * are ignored. 61 x 1284 = 78324. */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 78324);
    /* fp8: latent 512 + 4 x ceil(512 / 128) + 2 x 64 = 656, key 132:
     * 61 x 788 = 48068. */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_FP8), 48068);
    kvshard_model_free(m);
}

/* GLM-5: MLA + DSA, 78 layers; its `head_dim: 64` must not matter. */
static void test_glm_5(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("glm_5.json");
    assert_string_equal(kvshard_model_type(m), "glm_moe_dsa");
    assert_int_equal(kvshard_model_num_layers(m), 78);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 78);
    assert_int_equal(kvshard_model_num_draft_layers(m), 1);
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_MLA);
    /* bf16 (top-level dtype): (512 + 64) x 2 + 132 = 1284; 78 x 1284 = 100152. */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 100152);
    /* fp8: 656 + 132 = 788; 78 x 788 = 61464. */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_FP8), 61464);
    kvshard_model_free(m);
}

/* Llama 3.1 8B: dense, no head_dim key -> hidden_size / heads = 4096 / 32 = 128. */
static void test_llama_dense_head_dim_default(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    assert_string_equal(kvshard_model_type(m), "llama");
    assert_int_equal(kvshard_model_num_layers(m), 32);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 32);
    assert_int_equal(kvshard_model_num_draft_layers(m), 0);
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_GQA);
    /* TP1: 2 x 8 kv heads x 128 x 2 bytes = 4096 per layer; 32 x 4096 = 131072. */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 131072);
    kvshard_model_free(m);
}

/* Kimi Linear: 1-based full_attn_layers / kda_layers; number 27 = index 26. */
static void test_kimi_linear_one_based(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("kimi_linear_48b_a3b.json");
    assert_string_equal(kvshard_model_type(m), "kimi_linear");
    assert_int_equal(kvshard_model_num_layers(m), 27);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 7);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 20);
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_MLA);
    assert_int_equal(kvshard_model_num_draft_layers(m), 0);
    /* numbers 4, 8, 12, 16, 20, 24, 27 -> indices 3, 7, 11, 15, 19, 23, 26 */
    const uint32_t full[] = {3, 7, 11, 15, 19, 23, 26};
    for (uint32_t i = 0, f = 0; i < 27; i++) {
        kvshard_layer_kind k;
        assert_int_equal(kvshard_model_layer_kind(&k, m, i), KVSHARD_OK);
        bool is_full = f < 7 && full[f] == i;
        assert_int_equal(k, is_full ? KVSHARD_LAYER_FULL_ATTENTION
                                    : KVSHARD_LAYER_LINEAR_ATTENTION);
        f += is_full;
    }
    /* MLA without indexer, bf16: (512 + 64) x 2 = 1152; 7 x 1152 = 8064
     * (head_dim 72 ignored). */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 8064);
    kvshard_model_free(m);
}

/* MiniMax-M1: attn_type_list, 1 = full at 7, 15, ..., 79. */
static void test_minimax_attn_type_list(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("minimax_m1.json");
    assert_string_equal(kvshard_model_type(m), "minimax_m1");
    assert_int_equal(kvshard_model_num_layers(m), 80);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 10); /* 80 / 8 */
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 70);
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_GQA);
    assert_every_nth_full(m, 8, KVSHARD_LAYER_LINEAR_ATTENTION);
    kvshard_model_free(m);
}

/* gpt-oss-20b: layer_types with sliding_attention at even layers. */
static void test_gpt_oss_sliding(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("gpt_oss_20b.json");
    assert_string_equal(kvshard_model_type(m), "gpt_oss");
    assert_int_equal(kvshard_model_num_layers(m), 24);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 12);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 12);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 0);
    assert_every_nth_full(m, 2, KVSHARD_LAYER_SLIDING_ATTENTION); /* full at odd indices */
    /* TP1: 12 full x 2 x 8 x 64 x 2 = 12 x 2048 = 24576 (sliding layers are
     * not in kv_bytes_per_token). */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 24576);
    kvshard_model_free(m);
}

/* Inline: 8 layers, interval 4 -> full at 3 and 7. */
static void test_inline_interval(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("num_hidden_layers: 8\nfull_attention_interval: 4\n"
                                          "num_key_value_heads: 1\nhead_dim: 64\n" GDN_KEYS);
    const kvshard_layer_kind L = KVSHARD_LAYER_LINEAR_ATTENTION, F = KVSHARD_LAYER_FULL_ATTENTION;
    const kvshard_layer_kind kinds[8] = {L, L, L, F, L, L, L, F};
    assert_kinds(m, kinds, 8);
    assert_string_equal(kvshard_model_type(m), ""); /* no model_type key */
    assert_int_equal(kvshard_model_num_draft_layers(m), 0);
    /* 2 full x 2 x 1 x 64 x 2 (default bfloat16) = 512 */
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 512);
    kvshard_model_free(m);

    /* interval 1: every layer full; interval 3 over 7 layers: full at 2, 5. */
    m = tu_load_model_text("num_hidden_layers: 7\nfull_attention_interval: 3\n"
                           "num_key_value_heads: 1\nhead_dim: 64\n" GDN_KEYS);
    const kvshard_layer_kind kinds3[7] = {L, L, F, L, L, F, L};
    assert_kinds(m, kinds3, 7);
    kvshard_model_free(m);
}

/* Rule order: layer_types > attn_type_list > linear_attn_config lists >
 * full_attention_interval > all full. */
static void test_rule_precedence(void **state)
{
    (void)state;
    const kvshard_layer_kind L = KVSHARD_LAYER_LINEAR_ATTENTION, F = KVSHARD_LAYER_FULL_ATTENTION,
                             W = KVSHARD_LAYER_SLIDING_ATTENTION;
    /* layer_types (full at 0 and 5, "attention" and "mamba" aliases) beats
     * the interval, which would give full at 3 and 7. */
    kvshard_model *m = tu_load_model_text(
        "num_hidden_layers: 8\nfull_attention_interval: 4\nnum_key_value_heads: 1\n"
        "head_dim: 64\nsliding_window: 32\n" GDN_KEYS
        "layer_types: [full_attention, linear_attention, mamba, linear_attention,\n"
        "  sliding_attention, attention, linear_attention, linear_attention]\n");
    const kvshard_layer_kind k1[8] = {F, L, L, L, W, F, L, L};
    assert_kinds(m, k1, 8);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 2);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_LINEAR_ATTENTION), 5);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 1);
    kvshard_model_free(m);

    /* attn_type_list beats the interval: full at 0 and 1 only. */
    m = tu_load_model_text("num_hidden_layers: 4\nfull_attention_interval: 2\n"
                           "num_attention_heads: 4\nnum_key_value_heads: 1\nhead_dim: 8\n"
                           "attn_type_list: [1, 1, 0, 0]\n");
    const kvshard_layer_kind k2[4] = {F, F, L, L};
    assert_kinds(m, k2, 4);
    kvshard_model_free(m);

    /* Kimi lists beat the interval: number 1 full (index 0), the rest KDA. */
    m = tu_load_model_text("num_hidden_layers: 4\nfull_attention_interval: 2\n"
                           "kv_lora_rank: 8\nqk_rope_head_dim: 4\n"
                           "linear_attn_config: {full_attn_layers: [1], kda_layers: [2, 3, 4],\n"
                           "  num_heads: 2, head_dim: 4, short_conv_kernel_size: 2}\n");
    const kvshard_layer_kind k3[4] = {F, L, L, L};
    assert_kinds(m, k3, 4);
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_MLA);
    kvshard_model_free(m);

    /* None of the rules: every layer full. */
    m = tu_load_model_text("num_hidden_layers: 3\nnum_key_value_heads: 1\nhead_dim: 8\n");
    const kvshard_layer_kind k4[3] = {F, F, F};
    assert_kinds(m, k4, 3);
    kvshard_model_free(m);
}

/* Dtype precedence: text_config dtype, its torch_dtype, top dtype, top
 * torch_dtype, default bfloat16. One layer, 1 kv head, head_dim 64: bytes per
 * token = 2 x 1 x 64 x b = 128 b -> float32 512, 16-bit 256. */
static void test_dtype_precedence(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } cases[] = {
        /* text dtype float32 beats top torch_dtype float16 -> 4 x 128 */
        {"torch_dtype: float16\ntext_config: {num_hidden_layers: 1, num_key_value_heads: 1, "
         "head_dim: 64, dtype: float32}\n",
         512},
        /* text dtype float32 beats text torch_dtype float16 */
        {"text_config: {num_hidden_layers: 1, num_key_value_heads: 1, head_dim: 64, "
         "torch_dtype: float16, dtype: float32}\n",
         512},
        /* text dtype float16 beats text torch_dtype float32 -> 2 x 128 */
        {"text_config: {num_hidden_layers: 1, num_key_value_heads: 1, head_dim: 64, "
         "torch_dtype: float32, dtype: float16}\n",
         256},
        /* text torch_dtype float32 beats top dtype float16 */
        {"dtype: float16\ntext_config: {num_hidden_layers: 1, num_key_value_heads: 1, "
         "head_dim: 64, torch_dtype: float32}\n",
         512},
        /* top dtype float16 beats top torch_dtype float32 */
        {"dtype: float16\ntorch_dtype: float32\ntext_config: {num_hidden_layers: 1, "
         "num_key_value_heads: 1, head_dim: 64}\n",
         256},
        /* only top torch_dtype float32 */
        {"torch_dtype: float32\ntext_config: {num_hidden_layers: 1, num_key_value_heads: 1, "
         "head_dim: 64}\n",
         512},
        /* flat config: torch_dtype float32 */
        {"torch_dtype: float32\nnum_hidden_layers: 1\nnum_key_value_heads: 1\nhead_dim: 64\n",
         512},
        /* nothing: bfloat16 */
        {"num_hidden_layers: 1\nnum_key_value_heads: 1\nhead_dim: 64\n", 256},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_model *m = tu_load_model_text(cases[i].text);
        uint64_t got = tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO);
        if (got != cases[i].bytes)
            print_error("case %zu: %llu bytes, expected %llu\n", i, (unsigned long long)got,
                        (unsigned long long)cases[i].bytes);
        assert_int_equal(got, cases[i].bytes);
        /* kv_cache_dtype bf16 overrides a float32 model: 128 x 2 = 256 */
        assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_BF16), 256);
        kvshard_model_free(m);
    }
}

/* Defaults: num_key_value_heads = num_attention_heads; head_dim =
 * hidden_size / num_attention_heads. */
static void test_gqa_defaults(void **state)
{
    (void)state;
    /* kv heads default to 4 heads, head_dim 256 / 4 = 64: 2 x 4 x 64 x 2 = 1024 */
    kvshard_model *m = tu_load_model_text("num_hidden_layers: 1\nnum_attention_heads: 4\n"
                                          "hidden_size: 256\n");
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 1024);
    kvshard_model_free(m);
    /* MLA: kv heads and head_dim ignored: (32 + 16) x 2 = 96 */
    m = tu_load_model_text("num_hidden_layers: 1\nnum_attention_heads: 4\n"
                           "num_key_value_heads: 3\nhead_dim: 999\nkv_lora_rank: 32\n"
                           "qk_rope_head_dim: 16\n");
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_MLA);
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 96);
    kvshard_model_free(m);
    /* kv_lora_rank 0 is not MLA: GQA 2 x 2 x 8 x 2 = 64 */
    m = tu_load_model_text("num_hidden_layers: 1\nnum_key_value_heads: 2\nhead_dim: 8\n"
                           "kv_lora_rank: 0\nqk_rope_head_dim: 16\n");
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_GQA);
    assert_int_equal(tp1_kv_bytes(m, KVSHARD_DTYPE_AUTO), 64);
    kvshard_model_free(m);
}

/* Draft layers: num_nextn_predict_layers first, else mtp_num_hidden_layers. */
static void test_draft_keys(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("num_hidden_layers: 1\nnum_key_value_heads: 1\n"
                                          "head_dim: 8\nmtp_num_hidden_layers: 3\n");
    assert_int_equal(kvshard_model_num_draft_layers(m), 3);
    kvshard_model_free(m);
    m = tu_load_model_text("num_hidden_layers: 1\nnum_key_value_heads: 1\nhead_dim: 8\n"
                           "num_nextn_predict_layers: 2\nmtp_num_hidden_layers: 3\n");
    assert_int_equal(kvshard_model_num_draft_layers(m), 2);
    kvshard_model_free(m);
}

/* Errors of the layer-kind rules: unknown layer type (naming string and position), wrong list
 * length, Kimi layers in neither / both lists or out of range. */
static void test_layer_kind_errors(void **state)
{
    (void)state;
    kvshard_error err;
    int rc = load_error("num_hidden_layers: 3\nnum_key_value_heads: 1\nhead_dim: 8\n"
                        "layer_types: [full_attention, full_attention, bogus_attention]\n",
                        &err);
    assert_int_equal(rc, KVSHARD_ELAYERTYPE);
    assert_int_equal(err.code, KVSHARD_ELAYERTYPE);
    assert_non_null(strstr(err.message, "bogus_attention"));
    assert_non_null(strstr(err.message, "2")); /* 0-based position of the bad entry */
    assert_int_equal(err.line, 4);

    rc = load_error("num_hidden_layers: 3\nnum_key_value_heads: 1\nhead_dim: 8\n"
                    "layer_types: [full_attention, full_attention]\n",
                    &err);
    assert_int_equal(rc, KVSHARD_ELAYERCOUNT);

    rc = load_error("num_hidden_layers: 3\nnum_attention_heads: 1\nhead_dim: 8\n"
                    "attn_type_list: [1, 0]\n",
                    &err);
    assert_int_equal(rc, KVSHARD_ELAYERCOUNT);

    const char *kimi_bad[] = {
        /* number 3 in neither list */
        "num_hidden_layers: 3\nkv_lora_rank: 8\nqk_rope_head_dim: 4\n"
        "linear_attn_config: {full_attn_layers: [1], kda_layers: [2],\n"
        "  num_heads: 2, head_dim: 4, short_conv_kernel_size: 2}\n",
        /* number 2 in both */
        "num_hidden_layers: 3\nkv_lora_rank: 8\nqk_rope_head_dim: 4\n"
        "linear_attn_config: {full_attn_layers: [1, 2], kda_layers: [2, 3],\n"
        "  num_heads: 2, head_dim: 4, short_conv_kernel_size: 2}\n",
        /* 0 is not a 1-based layer number */
        "num_hidden_layers: 3\nkv_lora_rank: 8\nqk_rope_head_dim: 4\n"
        "linear_attn_config: {full_attn_layers: [0, 3], kda_layers: [1, 2],\n"
        "  num_heads: 2, head_dim: 4, short_conv_kernel_size: 2}\n",
        /* 4 is past num_hidden_layers 3 */
        "num_hidden_layers: 3\nkv_lora_rank: 8\nqk_rope_head_dim: 4\n"
        "linear_attn_config: {full_attn_layers: [4], kda_layers: [1, 2, 3],\n"
        "  num_heads: 2, head_dim: 4, short_conv_kernel_size: 2}\n",
    };
    for (size_t i = 0; i < sizeof kimi_bad / sizeof kimi_bad[0]; i++) {
        rc = load_error(kimi_bad[i], &err);
        if (rc != KVSHARD_ELAYERLIST)
            print_error("kimi case %zu: %d %s\n", i, rc, err.message);
        assert_int_equal(rc, KVSHARD_ELAYERLIST);
    }

    /* The message tells a repeat within one list from a layer in both. */
    rc = load_error("num_hidden_layers: 3\nkv_lora_rank: 8\nqk_rope_head_dim: 4\n"
                    "linear_attn_config: {full_attn_layers: [1, 1], kda_layers: [2, 3],\n"
                    "  num_heads: 2, head_dim: 4, short_conv_kernel_size: 2}\n",
                    &err);
    assert_int_equal(rc, KVSHARD_ELAYERLIST);
    assert_non_null(strstr(err.message, "listed twice in full_attn_layers"));
    rc = load_error(kimi_bad[1], &err);
    assert_non_null(strstr(err.message, "in both full_attn_layers and kda_layers"));
}

/* A MiniMax config that gives its layers with layer_types (no attn_type_list)
 * still has lightning state: the state keys, not the layer rule, decide.
 * One linear layer at T = 1: 4 * 8 heads * 16 * 16 = 8192 bytes per sequence. */
static void test_minimax_with_layer_types(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_model_text(
        "model_type: minimax\nnum_hidden_layers: 2\nnum_attention_heads: 8\n"
        "num_key_value_heads: 2\nhead_dim: 16\n"
        "layer_types: [linear_attention, full_attention]\n");
    kvshard_plan *plan = tu_plan(model, NULL);
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, plan, 0), KVSHARD_OK);
    assert_int_equal(m.state_bytes_per_seq, 8192);
    /* KV: 2 heads * 16 * 2 (K and V) * 2 bytes = 128 bytes per token. */
    assert_int_equal(m.kv_bytes_per_token, 128);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* Every key the model reader knows is found again by its own name, and no
 * near miss is: a key the hand-written lookup missed would never be read. */
static void test_every_key_round_trips(void **state)
{
    (void)state;
    for (int k = 0; k < KVSHARD__KEY_COUNT; k++) {
        const char *name = kvshard_reader__key_name((kvshard__key)k);
        size_t len = strlen(name);
        if (kvshard_reader__key_find(name, len) != (kvshard__key)k)
            print_error("key %d \"%s\" is not found by its name\n", k, name);
        assert_int_equal(kvshard_reader__key_find(name, len), k);
        /* One byte short, and with its last byte changed: no key. */
        assert_int_equal(kvshard_reader__key_find(name, len - 1) == (kvshard__key)k, 0);
        char changed[64];
        assert_true(len < sizeof changed);
        memcpy(changed, name, len);
        changed[len - 1] = (char)(changed[len - 1] ^ 0x20);
        assert_int_not_equal(kvshard_reader__key_find(changed, len), k);
    }
}

/* Each layer_types word names the kind of its row, and each kind's name is
 * what kvshard_layer_kind_name() says. */
static void test_kind_table_words(void **state)
{
    (void)state;
    static const struct {
        const char *word;
        kvshard_layer_kind kind;
    } words[] = {
        {"full_attention", KVSHARD_LAYER_FULL_ATTENTION},
        {"attention", KVSHARD_LAYER_FULL_ATTENTION},
        {"linear_attention", KVSHARD_LAYER_LINEAR_ATTENTION},
        {"mamba", KVSHARD_LAYER_LINEAR_ATTENTION},
        {"conv", KVSHARD_LAYER_LINEAR_ATTENTION},
        {"short_conv", KVSHARD_LAYER_LINEAR_ATTENTION},
        {"sliding_attention", KVSHARD_LAYER_SLIDING_ATTENTION},
        {"hybrid", KVSHARD_LAYER_HYBRID},
        {"mlp", KVSHARD_LAYER_NO_CACHE},
        {"moe", KVSHARD_LAYER_NO_CACHE},
        {"deepseek_sparse_attention", KVSHARD_LAYER_FULL_ATTENTION},
        {"indexed_attention", KVSHARD_LAYER_FULL_ATTENTION},
        {"chunked_attention", KVSHARD_LAYER_CHUNKED_ATTENTION},
        {"compressed_sparse_attention", KVSHARD_LAYER_COMPRESSED},
        {"heavily_compressed_attention", KVSHARD_LAYER_COMPRESSED},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        assert_int_equal(kvshard_kinds__from_word(words[i].word, strlen(words[i].word)),
                         words[i].kind);
    assert_int_equal(kvshard_kinds__from_word("attentio", 8), UINT8_MAX);
    assert_int_equal(kvshard_kinds__from_word("full_attentionx", 15), UINT8_MAX);
    assert_string_equal(kvshard_layer_kind_name(KVSHARD_LAYER_HYBRID), "hybrid");
    assert_string_equal(kvshard_layer_kind_name(KVSHARD_LAYER_COMPRESSED), "compressed");
    assert_string_equal(kvshard_layer_kind_name(KVSHARD_LAYER_SHARED_KV), "shared_kv");
    assert_string_equal(kvshard_layer_kind_name(KVSHARD_LAYER_CHUNKED_ATTENTION),
                        "chunked_attention");
    /* shared_kv is no word of a config: num_kv_shared_layers makes it. */
    assert_int_equal(kvshard_kinds__from_word("shared_kv", 9), UINT8_MAX);
    assert_string_equal(kvshard_layer_kind_name((kvshard_layer_kind)KVSHARD__KIND_COUNT),
                        "unknown");
    /* Exactly the KV kinds have paged KV, exactly the state kinds a state. */
    assert_int_equal(kvshard_kinds__paged_mask(), 1u << KVSHARD_LAYER_FULL_ATTENTION |
                                                      1u << KVSHARD_LAYER_HYBRID |
                                                      1u << KVSHARD_LAYER_COMPRESSED);
    assert_int_equal(kvshard_kinds__state_mask(),
                     1u << KVSHARD_LAYER_LINEAR_ATTENTION | 1u << KVSHARD_LAYER_HYBRID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_5_nested),
        cmocka_unit_test(test_qwen3_next_interval),
        cmocka_unit_test(test_deepseek_v3_2),
        cmocka_unit_test(test_glm_5),
        cmocka_unit_test(test_llama_dense_head_dim_default),
        cmocka_unit_test(test_kimi_linear_one_based),
        cmocka_unit_test(test_minimax_attn_type_list),
        cmocka_unit_test(test_gpt_oss_sliding),
        cmocka_unit_test(test_inline_interval),
        cmocka_unit_test(test_rule_precedence),
        cmocka_unit_test(test_dtype_precedence),
        cmocka_unit_test(test_gqa_defaults),
        cmocka_unit_test(test_draft_keys),
        cmocka_unit_test(test_layer_kind_errors),
        cmocka_unit_test(test_minimax_with_layer_types),
        cmocka_unit_test(test_every_key_round_trips),
        cmocka_unit_test(test_kind_table_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
