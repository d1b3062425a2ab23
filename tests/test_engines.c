/* The engine profiles vllm, sglang and xllm: every worked figure of their
 * rules, each version-dependent rule on both sides of its boundary, the
 * engines' flag spellings, and their refusals. Figures are worked out from
 * the rules in the comments beside them. */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include "profile/versions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEMOTRON "models/nemotron_3_nano_30b_a3b.json"
#define NEMOTRON_H "models/nemotron_h_8b.json"
#define GEMMA "models/gemma_3_27b.json"
#define QWEN9B "models/qwen3_5_9b.json"
#define QWEN_NEXT "models/qwen3_next_80b_a3b.json"
#define LLAMA "models/llama3_1_8b.json"
#define DSA "models/deepseek_v3_2.json"

/* ---- helpers ----------------------------------------------------------------- */

static size_t warnings_of(const kvshard_plan *p, kvshard_warning_code code)
{
    size_t n = 0;
    for (size_t i = 0; i < kvshard_plan_warning_count(p); i++) {
        kvshard_warning_code c;
        assert_int_equal(kvshard_plan_warning(&c, NULL, p, i), KVSHARD_OK);
        n += c == code;
    }
    return n;
}

/* ---- versions ------------------------------------------------------------------- */

static kvshard_versions__v version(const char *text)
{
    kvshard_versions__v v;
    if (!kvshard_versions__parse(&v, text, strlen(text)))
        print_error("\"%s\" does not parse\n", text);
    assert_true(kvshard_versions__parse(&v, text, strlen(text)));
    return v;
}

static int cmp(const char *a, const char *b)
{
    kvshard_versions__v x = version(a), y = version(b);
    return kvshard_versions__cmp(&x, &y);
}

static void test_version_forms(void **state)
{
    (void)state;
    static const char *const good[] = {
        "0.20.0",       "0.20.1rc1.dev91+ga749a33d8", "0.19.0+cu129", "v0.5.11", "0.20.1rc1",
        "0.20.1.post2", "0.20.1rc1.post1.dev3",       "10.200.3000"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        (void)version(good[i]);
    static const char *const bad[] = {"",          "0.20",           "0.20.1.4",       "0.20.1-rc1",
                                      "0.20.1rc",  "0.20.1dev1",     "0.20.1+",        "V0.20.1",
                                      "latest",    "0.20.1.dev1rc1", "1234567890.0.0", "0.5.11 ",
                                      "0.20.1+a b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kvshard_versions__v v;
        if (kvshard_versions__parse(&v, bad[i], strlen(bad[i])))
            print_error("\"%s\" parsed\n", bad[i]);
        assert_false(kvshard_versions__parse(&v, bad[i], strlen(bad[i])));
    }
    kvshard_versions__v v = version("v0.20.1rc1.dev91+ga749a33d8");
    assert_int_equal(v.major, 0);
    assert_int_equal(v.minor, 20);
    assert_int_equal(v.patch, 1);
    assert_int_equal(v.rc, 1);
    assert_int_equal(v.post, -1);
    assert_int_equal(v.dev, 91);
    char text[KVSHARD_VERSIONS__TEXT_MAX];
    kvshard_versions__format(text, sizeof text, &v);
    assert_string_equal(text, "0.20.1rc1.dev91"); /* the local part names a build only */
}

/* Python's order: a nightly before the release candidate it leads to,
 * candidates before the release, post-releases after it. */
static void test_version_order(void **state)
{
    (void)state;
    static const char *const ascending[] = {
        "0.9.0",           "0.19.0",    "0.20.1.dev5",       "0.20.1rc1.dev30",
        "0.20.1rc1.dev31", "0.20.1rc1", "0.20.1rc1.post1",   "0.20.1rc2.dev1",
        "0.20.1rc2",       "0.20.1",    "0.20.1.post1.dev2", "0.20.1.post1",
        "0.20.2.dev0",     "1.0.0"};
    size_t n = sizeof ascending / sizeof ascending[0];
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            int c = cmp(ascending[i], ascending[j]);
            int want = i < j ? -1 : i > j ? 1 : 0;
            if ((c > 0) - (c < 0) != want)
                print_error("%s vs %s: %d\n", ascending[i], ascending[j], c);
            assert_int_equal((c > 0) - (c < 0), want);
        }
    }
    assert_int_equal(cmp("0.19.0+cu129", "0.19.0"), 0);
    assert_int_equal(cmp("v0.5.11", "0.5.11"), 0);
}

/* A version of the wrong form is engine_version_invalid where it stands; a
 * version outside the range, engine_version_unsupported naming the range;
 * the default is the newest covered. */
static void test_version_range(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_REFUSED(KVSHARD_ERANGE, "engine_version_invalid: engine_version \"0.20\"", LLAMA,
            "--engine=vllm", "--engine_version=0.20");
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_version_unsupported: engine_version 0.8.9 is outside the "
            "releases the profile covers, 0.9.0 to 0.28.0",
            LLAMA, "--engine=vllm", "--engine_version=0.8.9", "--max-model-len=4096");
    TU_REFUSED(KVSHARD_EPROFILE, "covers, 0.9.0 to 0.28.0", LLAMA, "--engine=vllm",
               "--engine-version", "0.28.1rc1.dev3", "--max-model-len=4096");
    TU_REFUSED(KVSHARD_EPROFILE, "covers, 0.9.0 to 0.28.0", LLAMA, "--engine=vllm",
               "--engine-version", "0.9.0rc1", "--max-model-len=4096");
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.9.0", "--max-model-len=4096");
    assert_string_equal(tu_efig_text(p, "version"), "0.9.0");
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.28.0+cu129", "--max-model-len=4096");
    assert_string_equal(tu_efig_text(p, "version"), "0.28.0+cu129"); /* as given */
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--max-model-len=4096");
    assert_string_equal(tu_efig_text(p, "version"), "0.28.0");
    kvshard_plan_free(p);

    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_version_unsupported: engine_version "
            "0.5.8 is outside the releases the profile covers, 0.5.9 to 0.5.21",
            LLAMA, "--engine=sglang", "--engine_version=0.5.8");
    TU_REFUSED(KVSHARD_EPROFILE, "covers, 0.5.9 to 0.5.21", LLAMA, "--engine=sglang",
            "--engine_version=0.5.22");
    TU_PLAN(&p, LLAMA, "--engine=sglang");
    assert_string_equal(tu_efig_text(p, "version"), "0.5.21");
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--engine_version=0.5.9");
    assert_string_equal(tu_efig_text(p, "version"), "0.5.9");
    kvshard_plan_free(p);

    TU_REFUSED(KVSHARD_EPROFILE,
            "xllm profile: engine_version_unsupported: engine_version 0.9.9 "
            "is outside the releases the profile covers, 0.10.0 to 0.11.0",
            LLAMA, "--engine=xllm", "--engine_version=0.9.9");
    TU_REFUSED(KVSHARD_EPROFILE, "0.10.0 to 0.11.0", LLAMA, "--engine=xllm",
            "--engine_version=0.11.1");
    TU_PLAN(&p, LLAMA, "--engine=xllm");
    assert_string_equal(tu_efig_text(p, "version"), "0.11.0");
    kvshard_plan_free(p);

    /* Under the kvshard profile the version is read by no one: a warning,
     * under either spelling. */
    TU_PLAN(&p, LLAMA, "--engine-version=0.20.0");
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_PROFILE_INPUTS_IGNORED));
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine_version=0.20.0");
    assert_string_equal(
        tu_warning_message(p, KVSHARD_WARN_PROFILE_INPUTS_IGNORED),
        "engine_version applies only under engines xllm, vllm, sglang and trtllm: the "
        "kvshard profile ignores it");
    assert_int_equal(kvshard_plan_engine_figure_count(p), 0);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\n  \"engine\": null,\n"));
    free(json);
    kvshard_plan_free(p);
}

/* ---- vllm: the Mamba2 hybrid ------------------------------------------------------ */

#define E3_14                                                                                      \
    NEMOTRON, "--engine=vllm", "--engine_version=0.20.1rc1.dev91", "--max-model-len", "256000",    \
        "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32", "--max-num-seqs",    \
        "128", "--kv-cache-memory-bytes", "3994319585"

/* Nemotron-3-Nano-30B-A3B on one GPU: 6 attention layers of 2 KV heads x
 * 128, fp8 (one byte, no scales): a1 = 2 * 2 * 128 = 512 B. 23 Mamba2 layers
 * (64 heads x 64, state 128, 8 groups, kernel 4): conv 2 * (64*64 + 2*8*128)
 * * 3 = 36,864 in bf16, temporal 4 * 64 * 64 * 128 = 2,097,152 in float32:
 * 2,134,016 B. Before 0.27.0 prefix caching is off: mode none. */
static void test_vllm_mamba2_hybrid(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, E3_14);
    /* Block 16 * ceil(2,134,016 / 8,192) = 16 * 261 = 4,176; page 4,176 *
     * 512 = 2,138,112; padding 100 * 4,096 / 2,134,016 %. */
    assert_int_equal(tu_efig(p, "attention_block_size"), 4176);
    assert_true(tu_efig_bool(p, "block_size_line"));
    assert_int_equal(tu_efig(p, "page_bytes"), 2138112);
    assert_int_equal(tu_efig(p, "mamba_page_bytes"), 2134016);
    assert_true(tu_efig_double(p, "mamba_padding_percent") == 100.0 * 4096.0 / 2134016.0);
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "none");
    assert_int_equal(tu_efig(p, "mamba_block_size"), 256000); /* mode none: L */
    assert_false(tu_efig_bool(p, "prefix_caching"));
    kvshard_figure d = tu_engine_figure(p, "state_dtypes");
    assert_int_equal(d.type, KVSHARD_FIGURE_TEXT_LIST);
    assert_int_equal(d.uint_value, 2);
    assert_string_equal(d.text_value, "bfloat16");
    assert_string_equal(d.text_value + strlen(d.text_value) + 1, "float32");
    /* Types 6 and 23: 23 >= 1.5 * 6, groups of 6: 1 + ceil(23 / 6) = 5, one
     * padding layer. */
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 5);
    assert_int_equal(tu_efig(p, "group_size"), 6);
    assert_int_equal(tu_efig(p, "padding_layers"), 1);
    /* floor(floor(3,994,319,585 / 2,138,112) / 6) = floor(1,868 / 6) = 311. */
    assert_int_equal(tu_efig(p, "bytes_per_block"), 12828672);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 311);
    assert_int_equal(tu_efig(p, "usable_blocks"), 310);
    /* ceil(256,000 / 4,176) = 62, plus 4 x 1 state block: 66. */
    assert_int_equal(tu_efig(p, "max_model_len"), 256000);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 66);
    assert_true(tu_efig_double(p, "max_concurrency") == 311.0 / 66.0);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 1206303); /* int(311 / 66 * 256,000) */
    assert_int_equal(tu_efig(p, "max_num_seqs"), 128);
    assert_int_equal(tu_efig(p, "budget"), 3994319585u);
    /* The capacity object: the engine's budget, block and counts. */
    assert_int_equal(tu_figure(p, "block_size"), 4176);
    assert_int_equal(tu_figure(p, "memory_per_rank"), 3994319585u);
    assert_int_equal(tu_figure(p, "budget"), 3994319585u);
    assert_int_equal(tu_figure(p, "num_blocks"), 311);
    assert_int_equal(tu_figure(p, "usable_blocks"), 310);
    assert_int_equal(tu_figure(p, "max_tokens"), 1206303);
    assert_int_equal(tu_figure(p, "max_seqs"), 128);
    assert_false(tu_has_figure(p, "state_slots"));
    assert_false(tu_has_figure(p, "usable_state_slots"));
    assert_false(tu_has_figure(p, "concurrency"));
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, p, 0), KVSHARD_OK);
    assert_int_equal(m.bytes_per_block, 12828672);
    assert_int_equal(m.num_blocks, 311);
    /* kvshard's own per-token figure keeps its fp8 scales: 6 x (512 + 16). */
    assert_int_equal(m.kv_bytes_per_token, 3168);
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_PADDING_LAYERS),
                        "Add 1 padding layers, may waste at most 4.35% KV cache memory (23 state "
                        "layers in groups of 6)");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   vllm 0.20.1rc1.dev91 profile: Available KV cache memory: "
                          "3.72 GiB; attention block 4,176 tokens (raised from 16), Padding "
                          "mamba page size by 0.19%\n"
                          "           5 KV cache groups of 6 layers (1 padding layer); 311 GPU "
                          "blocks (310 usable after the null block)\n"
                          "           the engine logs GPU KV cache size: 1,206,303 tokens; "
                          "Maximum concurrency for 256,000 tokens per request: 4.71x\n");
    free(text);
    kvshard_plan_free(p);

    /* At 32,768 tokens: 8 + 4 = 12 blocks a request; floor(310 / 12) = 25. */
    TU_PLAN(&p, E3_14, "--context_length=32768");
    assert_int_equal(tu_figure(p, "balanced_max_seqs"), 25);
    assert_int_equal(tu_figure(p, "concurrency"), 25);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE));
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE),
                        "at 32768 tokens 25 sequences run at once, below max_num_seqs 128: 310 "
                        "usable GPU blocks, 12 a request of that length (KV and state share the "
                        "pool); balanced max_seqs is 25");
    text = tu_plan_text(p);
    tu_assert_contains(text,
                       "context    at 32,768 tokens: 25 sequences at once (below max_seqs 128; "
                       "balanced max_seqs 25)\n");
    free(text);
    kvshard_plan_free(p);
}

/* Every budget the engine logs as 3.72 GiB, [3.715, 3.725) GiB, gives 310
 * or 311 blocks: ceil(3.715 x 2^30) = 3,988,950,877 is 310 (1,865 pages),
 * ceil(3.725 x 2^30) - 1 = 3,999,688,294 is 311 (1,870 pages). */
static void test_vllm_budget_rounding(void **state)
{
    (void)state;
    static const struct {
        const char *budget, *gib;
        uint64_t blocks;
    } cases[] = {
        {"3988950876", "3.71", 310}, {"3988950877", "3.72", 310}, {"3999688294", "3.72", 311},
        {"3999688295", "3.73", 311}, {"3758096384", "3.5", 292},  {"47244640256", "44.0", 3682},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.20.1rc1.dev91",
                "--max-model-len", "256000", "--kv-cache-dtype", "fp8_e4m3",
                "--mamba-ssm-cache-dtype", "float32", "--max-num-seqs", "128", "--enforce-eager",
                "--kv-cache-memory-bytes", cases[i].budget);
        assert_int_equal(tu_efig(p, "num_gpu_blocks"), cases[i].blocks);
        char *text = tu_plan_text(p);
        char want[96];
        snprintf(want, sizeof want, "Available KV cache memory: %s GiB;", cases[i].gib);
        tu_assert_contains(text, want);
        free(text);
        kvshard_plan_free(p);
    }
}

/* ---- vllm: sliding-window attention --------------------------------------------- */

#define E3_15                                                                                      \
    GEMMA, "--engine=vllm", "--engine_version=0.11.0rc2.dev98", "--max-model-len", "4096",         \
        "--kv-cache-memory-bytes"

/* Gemma 3 27B: 10 full and 52 sliding layers (window 1,024), 16 KV heads x
 * 128 in bf16: a1 = 8,192 B for both, block 16, page 131,072. */
static void test_vllm_sliding_window(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, E3_15, "117957427200");
    assert_int_equal(tu_efig(p, "attention_block_size"), 16);
    assert_false(tu_efig_bool(p, "block_size_line")); /* a model without state layers */
    assert_int_equal(tu_efig(p, "page_bytes"), 131072);
    assert_true(tu_efig_null(p, "mamba_page_bytes"));
    assert_true(tu_efig_null(p, "mamba_padding_percent"));
    assert_true(tu_efig_null(p, "mamba_cache_mode"));
    assert_true(tu_efig_null(p, "state_dtypes"));
    assert_true(tu_efig_bool(p, "prefix_caching"));
    /* 52 >= 1.25 x 10: groups of 10, 1 + ceil(52 / 10) = 7, 8 padding. */
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 7);
    assert_int_equal(tu_efig(p, "group_size"), 10);
    assert_int_equal(tu_efig(p, "padding_layers"), 8);
    /* floor(117,957,427,200 / 131,072) = 899,940; / 10 = 89,994. */
    assert_int_equal(tu_efig(p, "bytes_per_block"), 1310720);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 89994);
    assert_int_equal(tu_efig(p, "usable_blocks"), 89993);
    /* 256 + 6 x (ceil(min(1,023 + 8,192, 4,096) / 16) + 1) = 256 + 6 x 257. */
    assert_int_equal(tu_efig(p, "blocks_per_request"), 1798);
    assert_true(tu_efig_double(p, "max_concurrency") == 89994.0 / 1798.0);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 205696); /* floor(89,994 / 7) x 16 */
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_PADDING_LAYERS),
                        "Add 8 padding layers, may waste at most 15.38% KV cache memory (52 "
                        "sliding-window layers in groups of 10)");
    assert_int_equal(warnings_of(p, KVSHARD_WARN_ENGINE_PADDING_LAYERS), 1); /* one type padded */
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   vllm 0.11.0rc2.dev98 profile: Available KV cache memory: "
                          "109.86 GiB; attention block 16 tokens\n"
                          "           7 KV cache groups of 10 layers (8 padding layers); 89,994 "
                          "GPU blocks (89,993 usable after the null block)\n"
                          "           the engine logs GPU KV cache size: 205,696 tokens; Maximum "
                          "concurrency for 4,096 tokens per request: 50.05x\n");
    free(text);
    kvshard_plan_free(p);
    /* The middle of the 109.86 GiB interval: floor(117,961,276,784 /
     * 131,072) = 899,969, / 10 = 89,996... 89,997: 899,970 pages. */
    TU_PLAN(&p, E3_15, "117961276784");
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 89997);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 205696); /* floor(89,997 / 7) x 16 */
    kvshard_plan_free(p);
    /* --num-gpu-blocks-override replaces the count. */
    TU_PLAN(&p, E3_15, "117957427200", "--num-gpu-blocks-override", "1000");
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 1000);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 142 * 16);
    kvshard_plan_free(p);
}

/* ---- vllm: each version rule on both sides ------------------------------------- */

/* The token line: floor(blocks / groups) x block before 0.20.1rc1.dev31,
 * int(concurrency x L) from it: floor(311 / 5) x 4,176 = 258,912. */
static void test_vllm_rule_tokens_line(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.20.1rc1.dev30", "--max-model-len",
         "256000", "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--max-num-seqs", "128", "--kv-cache-memory-bytes", "3994319585");
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 258912);
    assert_int_equal(tu_figure(p, "max_tokens"), 258912);
    kvshard_plan_free(p);
    TU_PLAN(&p, E3_14);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 1206303);
    kvshard_plan_free(p);
}

/* The group size when type counts are close: a model of 10 full and 14
 * sliding layers (8 KV heads x 64, bf16: a1 2,048, page 32,768), 1 GiB,
 * 4,096 tokens. Before 0.18.0 14 >= 1.25 x 10: groups of 10, 1 + 2, 6
 * padding; 32,768 pages / 10 = 3,276 blocks; 256 + 2 x 257 = 770 a
 * request; tokens floor(3,276 / 3) x 16 = 17,472. From 0.18.0 14 < 1.5 x
 * 10: groups of 14, 1 + 1, 4 padding; 2,340 blocks; 513 a request; tokens
 * floor(2,340 / 2) x 16 = 18,720. */
static void test_vllm_rule_group_size(void **state)
{
    (void)state;
    char types[512] = "";
    for (int i = 0; i < 24; i++)
        strcat(types, i < 10 ? "\"full_attention\"," : "\"sliding_attention\",");
    types[strlen(types) - 1] = '\0';
    char config[1024];
    snprintf(config, sizeof config,
             "{\"model_type\": \"test\", \"num_hidden_layers\": 24, \"layer_types\": [%s], "
             "\"sliding_window\": 512, \"num_attention_heads\": 8, \"num_key_value_heads\": 8, "
             "\"head_dim\": 64}",
             types);
    kvshard_model *m = tu_load_model_text(config);
    static const struct {
        const char *version;
        uint64_t group, groups, padding, blocks, per_request, tokens;
    } cases[] = {{"0.17.1", 10, 3, 6, 3276, 770, 17472}, {"0.18.0", 14, 2, 4, 2340, 513, 18720}};
    for (size_t i = 0; i < 2; i++) {
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        o.engine = KVSHARD_ENGINE_VLLM;
        o.memory_per_rank = 1073741824;
        kvshard_settings *s =
            tu_settings("engine_version", cases[i].version, "max_model_len", "4096", NULL);
        o.settings = s;
        kvshard_plan *p = tu_plan(m, &o);
        kvshard_settings_free(s);
        assert_int_equal(tu_efig(p, "group_size"), cases[i].group);
        assert_int_equal(tu_efig(p, "kv_cache_groups"), cases[i].groups);
        assert_int_equal(tu_efig(p, "padding_layers"), cases[i].padding);
        assert_int_equal(tu_efig(p, "num_gpu_blocks"), cases[i].blocks);
        assert_int_equal(tu_efig(p, "blocks_per_request"), cases[i].per_request);
        assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), cases[i].tokens);
        assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_PADDING_LAYERS),
                            i == 0 ? "Add 6 padding layers, may waste at most 42.86% KV cache "
                                     "memory (14 sliding-window layers in groups of 10)"
                                   : "Add 4 padding layers, may waste at most 40.00% KV cache "
                                     "memory (10 full-attention layers in groups of 14)");
        kvshard_plan_free(p);
    }
    kvshard_model_free(m);
}

/* Prefix caching for state models: off before 0.27.0 (mode none, one state
 * block a request), on from it with mode align (two): 62 + 4 x 2 = 70 a
 * request, int(311 / 70 x 256,000) = 1,137,371 tokens. */
static void test_vllm_rule_prefix_default(void **state)
{
    (void)state;
    static const struct {
        const char *version;
        bool prefix;
        const char *mode;
        uint64_t mamba_block, per_request, tokens;
    } cases[] = {{"0.26.1", false, "none", 256000, 66, 1206303},
                 {"0.27.0", true, "align", 4176, 70, 1137371}};
    for (size_t i = 0; i < 2; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version", cases[i].version,
                "--max-model-len", "256000", "--kv-cache-dtype", "fp8_e4m3",
                "--mamba-ssm-cache-dtype", "float32", "--max-num-seqs", "128",
                "--kv-cache-memory-bytes", "3994319585");
        assert_true(tu_efig_bool(p, "prefix_caching") == cases[i].prefix);
        assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), cases[i].mode);
        assert_int_equal(tu_efig(p, "mamba_block_size"), cases[i].mamba_block);
        assert_int_equal(tu_efig(p, "attention_block_size"), 4176);
        assert_int_equal(tu_efig(p, "num_gpu_blocks"), 311);
        assert_int_equal(tu_efig(p, "blocks_per_request"), cases[i].per_request);
        assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), cases[i].tokens);
        kvshard_plan_free(p);
    }
    /* --no-enable-prefix-caching keeps it off at 0.27.0. */
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.27.0", "--max-model-len", "256000",
         "--mamba-ssm-cache-dtype", "float32", "--kv-cache-memory-bytes", "3994319585",
         "--no-enable-prefix-caching");
    assert_false(tu_efig_bool(p, "prefix_caching"));
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "none");
    kvshard_plan_free(p);
}

/* Mode align exists from 0.15.0; before it a GDN model (Qwen3-Next at TP 2)
 * runs with prefix caching off. a1 = 2 x 1 head x 256 x 2 = 1,024; state
 * page conv 2 x (2*128*16 + 128*32) / 2 x 3 = 24,576 plus temporal (bf16,
 * the conv dtype) 2 x 16 x 128 x 128 = 524,288: 548,864; block 16 x
 * ceil(548,864 / 16,384) = 544; 12 full and 36 state layers, groups of 12
 * (before 0.18.0): 4; 8 GiB: floor(floor(8 GiB / 557,056) / 12) = 1,285.
 * A request of 4,096 tokens: 8 + 3 x 1 (none) = 11, 8 + 3 x 2 (align). */
static void test_vllm_rule_mode_align(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, QWEN_NEXT, "--engine=vllm", "--engine_version=0.14.1", "-tp", "2",
            "--max-model-len", "4096", "--kv-cache-memory-bytes", "8GiB",
            "--enable-prefix-caching");
    assert_false(tu_efig_bool(p, "prefix_caching"));
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "none");
    assert_int_equal(tu_efig(p, "attention_block_size"), 544);
    assert_int_equal(tu_efig(p, "mamba_page_bytes"), 548864);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 4);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 1285);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 11);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 321 * 544);
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED),
                        "vLLM 0.14.1 runs this model with prefix caching off: Mamba cache mode "
                        "align, which this model needs, exists from 0.15.0");
    kvshard_plan_free(p);
    TU_PLAN(&p, QWEN_NEXT, "--engine=vllm", "--engine_version=0.15.0", "-tp", "2",
            "--max-model-len", "4096", "--kv-cache-memory-bytes", "8GiB",
            "--enable-prefix-caching");
    assert_true(tu_efig_bool(p, "prefix_caching"));
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "align");
    assert_int_equal(tu_efig(p, "mamba_block_size"), 544);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 14);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED));
    kvshard_plan_free(p);
    /* Asked for, align before 0.15.0 is a mode the release does not have. */
    TU_REFUSED(KVSHARD_EPROFILE,
            "engine_version_unsupported: --mamba-cache-mode align exists from "
            "0.15.0",
            NEMOTRON, "--engine=vllm", "--engine_version=0.14.0", "--max-model-len", "4096",
            "--mamba-ssm-cache-dtype", "float32", "--enable-prefix-caching", "--mamba-cache-mode",
            "align");
    /* --mamba-cache-mode all on a model without it: align, warned. */
    TU_PLAN(&p, QWEN_NEXT, "--engine=vllm", "--engine_version=0.16.0", "-tp", "2",
            "--max-model-len", "4096", "--enable-prefix-caching", "--mamba-cache-mode", "all");
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "align");
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_MAMBA_CACHE_MODE_ALIGN),
                        "--mamba-cache-mode all runs as align: the model's state cannot be "
                        "cached at every chunk");
    kvshard_plan_free(p);
}

/* Mode all for Mamba2 models from 0.11.1: before it prefix caching is off.
 * With chunk 128: block 128 x ceil(ceil(2,134,016 / 512) / 128) = 128 x
 * ceil(4,168 / 128) = 4,224; page 2,162,688; floor(floor(3,994,319,585 /
 * 2,162,688) / 6) = floor(1,846 / 6) = 307 blocks; a request: 61 + 4 x 61 =
 * 305; tokens floor(307 / 5) x 4,224 = 257,664. */
static void test_vllm_rule_mode_all(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.11.0", "--max-model-len", "256000",
         "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--kv-cache-memory-bytes", "3994319585", "--enable-prefix-caching", "--mamba-block-size",
         "128");
    assert_false(tu_efig_bool(p, "prefix_caching"));
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "none");
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED),
                        "vLLM 0.11.0 runs this model with prefix caching off: it caches no "
                        "state model's prefixes before 0.11.1");
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.11.1", "--max-model-len", "256000",
         "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--kv-cache-memory-bytes", "3994319585", "--enable-prefix-caching", "--mamba-block-size",
         "128");
    assert_true(tu_efig_bool(p, "prefix_caching"));
    assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), "all");
    assert_int_equal(tu_efig(p, "attention_block_size"), 4224);
    assert_int_equal(tu_efig(p, "mamba_block_size"), 4224);
    assert_int_equal(tu_efig(p, "page_bytes"), 2162688);
    assert_true(tu_efig_double(p, "mamba_padding_percent") == 100.0 * 28672.0 / 2134016.0);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 307);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 305);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 257664);
    kvshard_plan_free(p);
    /* Without --mamba-block-size, the config's chunk_size, 128: the same. */
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.11.1", "--max-model-len", "256000",
         "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--kv-cache-memory-bytes", "3994319585", "--enable-prefix-caching");
    assert_int_equal(tu_efig(p, "attention_block_size"), 4224);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 307);
    kvshard_plan_free(p);
}

/* Mode all with speculative decoding: all before 0.20.0, align from it. One
 * ngram token adds no layer and one conv column: 2 x 6,144 x 4 + 2,097,152
 * = 2,146,304 B a state page. 0.19.0, all: block 128 x ceil(4,192 / 128) =
 * 4,224, 61 + 4 x (61 + 1) = 309 a request (309 x 6 x 2,162,688 B, more
 * than E3.14's budget: 8 GiB here); 0.20.0, align: block 16 x ceil(2,146,304
 * / 8,192) = 4,192, 62 + 4 x 3 = 74. */
static void test_vllm_rule_all_speculative(void **state)
{
    (void)state;
    static const struct {
        const char *version, *mode;
        uint64_t block, page, per_request;
    } cases[] = {{"0.19.0", "all", 4224, 2146304, 309}, {"0.20.0", "align", 4192, 2146304, 74}};
    for (size_t i = 0; i < 2; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version", cases[i].version,
                "--max-model-len", "256000", "--kv-cache-dtype", "fp8_e4m3",
                "--mamba-ssm-cache-dtype", "float32", "--kv-cache-memory-bytes", "8GiB",
                "--enable-prefix-caching", "--mamba-block-size", "128", "--max-num-seqs", "128",
                "--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 1}");
        assert_string_equal(tu_efig_text(p, "mamba_cache_mode"), cases[i].mode);
        assert_int_equal(tu_efig(p, "attention_block_size"), cases[i].block);
        assert_int_equal(tu_efig(p, "mamba_page_bytes"), cases[i].page);
        assert_int_equal(tu_efig(p, "blocks_per_request"), cases[i].per_request);
        assert_int_equal(tu_efig(p, "kv_cache_groups"), 5); /* ngram adds no layer */
        kvshard_plan_free(p);
    }
}

/* NemotronH's temporal dtype without a mamba_ssm_cache_dtype key (Nemotron-H
 * 8B): the conv dtype before 0.13.0; float16 from 0.13.0 and float32 from
 * 0.20.0, where kvshard cannot tell the config's missing key from one that
 * names bfloat16, and asks for the flag naming the engine's default. */
static void test_vllm_rule_nemotron_dtype(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON_H, "--engine=vllm", "--engine_version=0.12.0", "--max-model-len", "8192");
    kvshard_figure d = tu_engine_figure(p, "state_dtypes");
    assert_string_equal(d.text_value, "bfloat16");
    assert_string_equal(d.text_value + 9, "bfloat16");
    kvshard_plan_free(p);
    /* Its config names no mamba_ssm_cache_dtype: the engine's own default,
     * float16 from 0.13.0, float32 from 0.20.0. */
    static const struct {
        const char *version, *temporal;
    } releases[] = {{"0.13.0", "float16"}, {"0.19.2", "float16"}, {"0.20.0", "float32"}};
    for (size_t i = 0; i < sizeof releases / sizeof releases[0]; i++) {
        char version[40];
        snprintf(version, sizeof version, "--engine_version=%s", releases[i].version);
        TU_PLAN(&p, NEMOTRON_H, "--engine=vllm", version, "--max-model-len", "8192");
        d = tu_engine_figure(p, "state_dtypes");
        assert_string_equal(d.text_value, "bfloat16");
        assert_string_equal(d.text_value + 9, releases[i].temporal);
        kvshard_plan_free(p);
    }
    /* A config that names float32 (Nemotron 3 Nano) is read at any release. */
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.13.0", "--max-model-len", "8192");
    d = tu_engine_figure(p, "state_dtypes");
    assert_string_equal(d.text_value + 9, "float32");
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON_H, "--engine=vllm", "--engine_version=0.20.0", "--max-model-len", "8192",
         "--mamba-ssm-cache-dtype", "float16", "--mamba-cache-dtype", "float32");
    d = tu_engine_figure(p, "state_dtypes");
    assert_string_equal(d.text_value, "float32");
    assert_string_equal(d.text_value + 8, "float16");
    kvshard_plan_free(p);
}

/* "Setting attention block size" is printed for a model with state layers
 * whenever --block-size is not given before 0.20.0, and from 0.20.0 only
 * when the block is raised; never for a model without state layers. */
static void test_vllm_rule_block_line(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.19.1", "--max-model-len", "4096");
    assert_false(tu_efig_bool(p, "block_size_line"));
    assert_int_equal(tu_efig(p, "attention_block_size"), 16);
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.19.1", "--max-model-len", "4096",
         "--mamba-ssm-cache-dtype", "float32", "--kv-cache-dtype", "fp8_e4m3", "--block-size",
         "4176");
    assert_false(tu_efig_bool(p, "block_size_line")); /* given, not raised */
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.19.1", "--max-model-len", "4096",
         "--mamba-ssm-cache-dtype", "float32", "--kv-cache-dtype", "fp8_e4m3");
    assert_true(tu_efig_bool(p, "block_size_line")); /* raised, and not given */
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.19.1", "--max-model-len", "4096",
         "--block-size", "16");
    assert_false(tu_efig_bool(p, "block_size_line"));
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.20.0", "--max-model-len", "4096");
    assert_false(tu_efig_bool(p, "block_size_line"));
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.20.0", "--max-model-len", "4096");
    assert_true(tu_efig_bool(p, "block_size_line")); /* raised */
    kvshard_plan_free(p);
}

/* The device-figure budget. 80 GiB, non-KV 20 GiB: u 0.9 before 0.20.0,
 * ceil(85,899,345,920 x 0.9) - 21,474,836,480 = 55,834,574,848; 0.92 from
 * it: ceil(79,027,398,246.4) - 21,474,836,480 = 57,552,561,767. And
 * before 0.14.0 int(total x u - non_kv) in double, from it the ceiling of
 * the product: 1,000,000,007 x 0.9 = 900,000,006.3: 800,000,006 and
 * 800,000,007 with non-KV 100,000,000. */
static void test_vllm_rule_budget(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.19.0", "--max-model-len", "4096",
         "--device_memory_total=80GiB", "--non_kv_memory=20GiB");
    assert_int_equal(tu_efig(p, "budget"), 55834574848u);
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.20.0", "--max-model-len", "4096",
         "--device_memory_total=80GiB", "--non_kv_memory=20GiB");
    assert_int_equal(tu_efig(p, "budget"), 57552561767u);
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.13.0", "--max-model-len", "4096",
         "--device_memory_total=1000000007", "--non_kv_memory=100000000",
         "--gpu-memory-utilization", "0.9");
    assert_int_equal(tu_efig(p, "budget"), 800000006u);
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--engine_version=0.14.0", "--max-model-len", "4096",
         "--device_memory_total=1000000007", "--non_kv_memory=100000000",
         "--gpu-memory-utilization", "0.9");
    assert_int_equal(tu_efig(p, "budget"), 800000007u);
    /* llama at one GPU: 32 layers x 2 x 8 x 128 x 2 = 131,072 B a token,
     * page 65,536 x 32 = 2 MiB a block: 381 blocks. */
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 800000007u / 2097152u);
    kvshard_plan_free(p);
    /* Free memory below the requested share; nothing left after non-KV. */
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "vllm profile: insufficient_free_memory: device_memory_free "
            "64424509440 bytes is below the 77309411328 bytes",
            LLAMA, "--engine=vllm", "--engine_version=0.19.0", "--max-model-len", "4096",
            "--device_memory_total=80GiB", "--device_memory_free=60GiB", "--non_kv_memory=20GiB");
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "vllm profile: no_memory_for_cache_blocks: device_memory_total "
            "85899345920 x gpu_memory_utilization 0.92 - non_kv_memory "
            "85899345920",
            LLAMA, "--engine=vllm", "--max-model-len", "4096", "--device_memory_total=80GiB",
            "--non_kv_memory=80GiB");
    TU_REFUSED(KVSHARD_EMISSING,
            "vllm profile: engine_input_missing: the budget from device "
            "figures needs device_memory_total and non_kv_memory",
            LLAMA, "--engine=vllm", "--max-model-len", "4096", "--device_memory_total=80GiB");
}

/* max_num_seqs above the blocks of a state model with CUDA graphs:
 * accepted before 0.18.0, a warning in 0.18, refused from 0.19.0 (311
 * blocks, 512 sequences). */
static void test_vllm_rule_max_num_seqs(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.17.1", "--max-model-len", "256000",
         "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--kv-cache-memory-bytes", "3994319585", "--max-num-seqs", "512");
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 311);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_CUDAGRAPH_SIZES_CAPPED));
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.18.1", "--max-model-len", "256000",
         "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--kv-cache-memory-bytes", "3994319585", "--max-num-seqs", "512");
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_CUDAGRAPH_SIZES_CAPPED),
                        "--max-num-seqs 512 is above the 311 GPU blocks: vLLM 0.18.1 caps its "
                        "CUDA-graph sizes at the blocks");
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: max_num_seqs_exceeds_mamba_blocks: --max-num-seqs "
            "512 is above the 311 GPU blocks",
            NEMOTRON, "--engine=vllm", "--engine_version=0.19.0", "--max-model-len", "256000",
            "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
            "--kv-cache-memory-bytes", "3994319585", "--max-num-seqs", "512");
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.19.0", "--max-model-len", "256000",
         "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32",
         "--kv-cache-memory-bytes", "3994319585", "--max-num-seqs", "512", "--enforce-eager");
    assert_int_equal(tu_efig(p, "max_num_seqs"), 512);
    kvshard_plan_free(p);
}

/* Models with state layers from 0.10.2; Qwen3.5 models from 0.17.0. */
static void test_vllm_rule_coverage(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_version_unsupported: vLLM 0.10.1 does not "
            "serve models with state layers",
            NEMOTRON, "--engine=vllm", "--engine_version=0.10.1", "--max-model-len", "4096");
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.10.2", "--max-model-len", "4096");
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EPROFILE, "vLLM 0.16.1 does not serve Qwen3.5 (qwen3_5) models", QWEN9B,
            "--engine=vllm", "--engine_version=0.16.1", "--max-model-len", "4096", "-tp", "2",
            "--mamba-ssm-cache-dtype", "float32");
    TU_PLAN(&p, QWEN9B, "--engine=vllm", "--engine_version=0.17.0", "--max-model-len", "4096",
            "-tp", "2", "--mamba-ssm-cache-dtype", "float32");
    assert_int_equal(kvshard_plan_attn_tp_size(p), 2);
    kvshard_plan_free(p);
    /* The config's mamba_ssm_dtype names float32: the temporal state's. */
    TU_PLAN(&p, QWEN9B, "--engine=vllm", "--max-model-len", "4096", "-tp", "2");
    kvshard_figure d = tu_engine_figure(p, "state_dtypes");
    assert_string_equal(d.text_value, "bfloat16");
    assert_string_equal(d.text_value + 9, "float32");
    kvshard_plan_free(p);
}

/* ---- vllm: what it refuses and the other inputs ------------------------------- */

/* The mainstream engines' profiles refuse, by name, the caches they do not
 * model: new layer kinds by their kind, the rest by what they are. */
static void test_uncovered_caches(void **state)
{
    (void)state;
    static const char *const engines[] = {"--engine=vllm", "--engine=sglang"};
    for (int e = 0; e < 2; e++) {
        const char *len = e == 0 ? "--max-model-len" : "--context-length";
        TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: compressed layers (43 of 43)",
                "models/deepseek_v4_flash.json", engines[e], len, "4096", "--world_size=8");
        /* SGLang's profile refuses the sliding layers before the shared ones. */
        TU_REFUSED(KVSHARD_EPROFILE,
                e == 0 ? "engine_unsupported: shared_kv layers (20 of 35)"
                       : "engine_unsupported: sliding_attention layers (12 of 35)",
                "models/gemma_4_e2b.json", engines[e], len, "4096");
        TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: chunked_attention layers (36 of 48)",
                "models/llama4_scout.json", engines[e], len, "4096", "--world_size=8");
        TU_REFUSED(KVSHARD_EPROFILE,
                "engine_unsupported: a GQA sparse index (sparse_attention_config) is not "
                "covered yet",
                "models/minimax_m3.json", engines[e], len, "4096", "--world_size=8");
        TU_REFUSED(KVSHARD_EPROFILE,
                "engine_unsupported: indexer keys on some layers only is not covered yet",
                "models/glm_5_2.json", engines[e], len, "4096", "--world_size=8");
    }
    /* vLLM plans sliding layers, but only with the full layers' page. */
    TU_REFUSED(KVSHARD_EPROFILE,
            "engine_unsupported: a V head dim other than the K head dim is not covered yet",
            "models/mimo_v2_flash.json", "--engine=vllm", "--max-model-len", "4096",
            "--world_size=8");
    TU_REFUSED(KVSHARD_EPROFILE,
            "engine_unsupported: sliding-window layers whose page differs from the "
            "full-attention layers' is not covered yet",
            "models/gemma_4_31b.json", "--engine=vllm", "--max-model-len", "4096",
            "--world_size=4");
}

static void test_vllm_refusals(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_unsupported: hybrid layers (72 of 72) are "
            "not covered yet",
            "models/falcon_h1_34b.json", "--engine=vllm", "--max-model-len", "4096");
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_unsupported: state kind mamba1 is not "
            "covered yet",
            "models/jamba_1_5_mini.json", "--engine=vllm", "--max-model-len", "4096");
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_version_unsupported: vLLM 0.10.2 groups each pipeline stage's "
            "layers on their own",
            GEMMA, "--engine=vllm", "--engine_version=0.10.2", "--max-model-len", "4096", "-pp",
            "2", "-tp", "2");
    TU_REFUSED(KVSHARD_EPROFILE, "vllm profile: engine_unsupported: --max-model-len auto", LLAMA,
            "--engine=vllm", "--max-model-len", "auto");
    TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: --max-model-len -1", LLAMA, "--engine=vllm",
            "--max-model-len", "-1");
    TU_REFUSED(KVSHARD_EPROFILE, "vllm profile: engine_split_unsupported: layerwise_split_size 2",
            LLAMA, "--engine=vllm", "--max-model-len", "4096", "-tp", "2",
            "--enable_layerwise_split", "--layerwise_split_size=2");
    /* The engine's length is the config's max_position_embeddings; a config
     * without it needs --max-model-len. */
    TU_REFUSED(KVSHARD_EMISSING,
            "vllm profile: engine_input_missing: the engine's length is the "
            "config's max_position_embeddings",
            "models/gpt_oss_20b.json", "--engine=vllm");
    /* int8 is no vLLM word: a flag refuses it, an option is refused. */
    TU_REFUSED(KVSHARD_ERANGE, "kv_cache_dtype: expected auto, bfloat16", LLAMA, "--engine=vllm",
            "--max-model-len", "4096", "--kv-cache-dtype", "int8");
    TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: cp_size 2", LLAMA, "--engine=vllm",
            "--max-model-len", "4096", "--world_size=2", "--cp_size=2");
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_unsupported: --decode-context-parallel-size "
            "2: decode and prefill context parallelism are not covered yet",
            LLAMA, "--engine=vllm", "--max-model-len", "4096", "-tp", "2", "-dcp", "2");
    /* Read so that --ignore_unknown_flags cannot skip it. */
    TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: --prefill-context-parallel-size 2", LLAMA,
            "--engine=vllm", "--ignore_unknown_flags", "--max-model-len", "4096",
            "--prefill-context-parallel-size", "2");
    /* A request of 131,072 tokens needs 8,192 blocks of 2 MiB = 16 GiB; 10
     * GiB holds 5,120 blocks: 81,920 tokens. */
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "vllm profile: max_model_len_does_not_fit: one request of "
            "max_model_len 131072 tokens needs 8192 blocks of 2097152 bytes, "
            "more than the 10737418240 bytes of the KV cache; the longest that "
            "fits is 81920 tokens",
            LLAMA, "--engine=vllm", "--max-model-len", "131072", "--kv-cache-memory-bytes",
            "10GiB");
    /* An fp8 config's compute dtype must be given. */
    kvshard_model *m = tu_load_model_text("{\"num_hidden_layers\": 2, \"num_attention_heads\": "
                                          "4, \"num_key_value_heads\": 4, \"head_dim\": 64, "
                                          "\"torch_dtype\": \"float8_e4m3fn\"}");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_VLLM;
    kvshard_settings *s = tu_settings("max_model_len", "4096", NULL);
    o.settings = s;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "engine_input_missing: the config's dtype is fp8: give "
                                        "--dtype"));
    tu_set(s, "dtype", "bfloat16");
    o.memory_per_rank = 1u << 30;
    p = tu_plan(m, &o);
    /* 2 x 4 x 64 x 2 = 1,024 B a token and layer in bf16. */
    assert_int_equal(tu_efig(p, "page_bytes"), 16 * 1024);
    kvshard_plan_free(p);
    o.kv_cache_dtype = KVSHARD_DTYPE_INT8;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EPROFILE);
    assert_non_null(strstr(err.message, "vllm profile: engine_unsupported: kv_cache_dtype int8"));
    kvshard_settings_free(s);
    kvshard_model_free(m);
}

/* The draft model's attention layers: MTP layers of the config, one for
 * EAGLE, none for n-gram, the flag for another method. */
static void test_vllm_speculative(void **state)
{
    (void)state;
    kvshard_plan *p;
    /* DeepSeek-V3.2 (61 MLA layers with DSA indexer keys, one MTP layer), TP
     * 8, fp8: 656 B a latent and 128 + 4 an index key; block 64 (MLA). One
     * MTP draft layer joins: 62 layers in one group of their 124 caches,
     * bytes per block 62 x 64 x (656 + 132) = 3,126,784. */
    TU_PLAN(&p, DSA, "--engine=vllm", "-tp", "8", "--max-model-len", "8192", "--kv-cache-dtype",
            "fp8", "--speculative-config",
            "{\"method\":\"deepseek_mtp\",\"num_speculative_tokens\":1}", "--kv-cache-memory-bytes",
            "10GiB");
    assert_int_equal(tu_efig(p, "attention_block_size"), 64);
    assert_int_equal(tu_efig(p, "page_bytes"), 64 * 656);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 1);
    assert_int_equal(tu_efig(p, "group_size"), 124);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 62u * 64u * 788u);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 10737418240u / (62u * 64u * 788u));
    assert_int_equal(tu_efig(p, "blocks_per_request"), 128); /* 8,192 / 64 */
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&o, p), KVSHARD_OK);
    assert_int_equal(o.num_speculative_tokens, 1);
    kvshard_plan_free(p);
    /* EAGLE adds one layer, and --draft-attention-layers wins. */
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--max-model-len", "4096", "--speculative-config",
         "{\"method\": \"eagle3\", \"num_speculative_tokens\": 3}");
    assert_int_equal(tu_efig(p, "group_size"), 33);
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--max-model-len", "4096", "--speculative-config",
         "{\"method\": \"medusa\", \"num_speculative_tokens\": 3}", "--draft-attention-layers",
         "2");
    assert_int_equal(tu_efig(p, "group_size"), 34);
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EPROFILE, "vllm profile: engine_unsupported: speculative method medusa",
               LLAMA, "--engine=vllm", "--max-model-len", "4096", "--speculative-config",
               "{\"method\": \"medusa\", \"num_speculative_tokens\": 3}");
    TU_REFUSED(KVSHARD_EDUPKEY, "num_speculative_tokens 2 and --speculative-config's 3 differ",
               LLAMA, "--engine=vllm", "--max-model-len", "4096", "--num_speculative_tokens=2",
               "--speculative-config", "{\"method\": \"ngram\", \"num_speculative_tokens\": 3}");
    TU_REFUSED(KVSHARD_EMISSING,
            "speculative_config: \"{\"method\": \"ngram\"}\" has no "
            "\"num_speculative_tokens\"",
            LLAMA, "--engine=vllm", "--speculative-config", "{\"method\": \"ngram\"}");
    TU_REFUSED(KVSHARD_ETYPE, "speculative_config: expected a JSON object", LLAMA, "--engine=vllm",
            "--speculative-config", "ngram");
}

/* ---- sglang: the GDN hybrid -------------------------------------------------------- */

#define E4_13(version)                                                                             \
    QWEN9B, "--engine=sglang", "--engine_version=" version, "--tp-size", "2",                      \
        "--mem-fraction-static", "0.8", "--context-length", "262144",                              \
        "--memory_per_rank=10153205760"

/* Qwen3.5-9B at TP 2: cell 2 x (256 + 256) x 8 x 2 = 16,384 B (2 KV heads a
 * rank); a state slot: conv 2 x (2*128*16 + 128*32) / 2 x 3 = 24,576 and
 * temporal 4 x 16 x 128 x 128 = 1,048,576 a layer, over 24 layers 589,824
 * and 25,165,824: 25,755,648. rest = 10,153,205,760 / 2^30 GiB. Before
 * 0.5.14 `auto` is no_buffer, 3 slots a request. mb = rest x 0.9 / 1.9 x
 * 2^30: K = floor(mb / slot) = 186; the rest less 186 slots is
 * 5,362,655,232 B: floor(/ 16,384) = 327,310 tokens. R = min(2,048,
 * 163,655) = 2,048, capped at floor(186 / 3) = 62. */
static void test_sglang_gdn_hybrid(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, E4_13("0.5.11"));
    assert_int_equal(tu_efig(p, "budget"), 10153205760u);
    assert_string_equal(tu_efig_text(p, "mamba_radix_cache_strategy"), "no_buffer");
    assert_int_equal(tu_efig(p, "mamba_ratio"), 3);
    assert_int_equal(tu_efig(p, "max_mamba_cache_size"), 186);
    assert_int_equal(tu_efig(p, "mamba_pool_slots"), 187);
    assert_int_equal(tu_efig(p, "mamba_bytes_per_slot"), 25755648);
    assert_int_equal(tu_efig(p, "conv_state_bytes"), 187u * 589824u);          /* 110,297,088 */
    assert_int_equal(tu_efig(p, "ssm_state_bytes"), UINT64_C(187) * 25165824); /* 4,706,009,088 */
    assert_string_equal(tu_efig_text(p, "ssm_dtype"), "float32");
    assert_int_equal(tu_efig(p, "cell_bytes"), 16384);
    assert_int_equal(tu_efig(p, "page_size"), 1);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 327310);
    assert_int_equal(tu_efig(p, "k_cache_bytes"),
                     327311u * 8u * 2u * 256u * 2u); /* 2,681,331,712 */
    assert_int_equal(tu_efig(p, "v_cache_bytes"), 2681331712u);
    assert_true(tu_efig_null(p, "kv_cache_bytes"));
    assert_int_equal(tu_efig(p, "max_running_requests"), 62);
    assert_int_equal(tu_efig(p, "context_len"), 262144);
    assert_false(tu_efig_bool(p, "layer_split"));
    assert_true(tu_efig_null(p, "split_layers_per_rank"));
    /* capacity: block p, tokens / p blocks, R, K + 1 slots, K usable. */
    assert_int_equal(tu_figure(p, "block_size"), 1);
    assert_int_equal(tu_figure(p, "num_blocks"), 327310);
    assert_int_equal(tu_figure(p, "max_tokens"), 327310);
    assert_int_equal(tu_figure(p, "max_seqs"), 62);
    assert_int_equal(tu_figure(p, "state_slots"), 187);
    assert_int_equal(tu_figure(p, "usable_state_slots"), 186);
    assert_false(tu_has_figure(p, "usable_blocks"));
    assert_false(tu_has_figure(p, "balanced_max_seqs"));
    /* min(62, floor(327,310 / 262,144)) = 1. */
    assert_int_equal(tu_figure(p, "concurrency"), 1);
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_MAX_RUNNING_REQUESTS_CAPPED),
                        "max_running_requests 2048 is capped at 62: the state pool's 186 slots "
                        "hold 3 a running request");
    char *text = tu_plan_text(p);
    tu_assert_contains(text,
                    "capacity   sglang 0.5.11 profile: budget 9.46 GiB per rank (the rest after "
                    "mem_fraction_static); no_buffer, 3 state slots per request\n"
                    "           the engine logs Mamba Cache is allocated. max_mamba_cache_size: "
                    "186, conv_state size: 0.10GB, ssm_state size: 4.38GB\n"
                    "           the engine logs KV Cache is allocated. #tokens: 327310, K size: "
                    "2.50 GB, V size: 2.50 GB\n"
                    "           the engine logs max_total_num_tokens=327310, "
                    "max_running_requests=62, context_len=262144\n");
    free(text);
    kvshard_plan_free(p);

    /* 0.5.21: 100 MiB for the multimodal model, extra_buffer with 5 slots a
     * request, K = floor((mb - slot) / slot) = 183 with 184 charged: 324,054
     * tokens, R = floor(183 / 5) = 36. */
    TU_PLAN(&p, E4_13("0.5.21"), "--multimodal");
    assert_string_equal(tu_efig_text(p, "mamba_radix_cache_strategy"), "extra_buffer");
    assert_int_equal(tu_efig(p, "mamba_ratio"), 5);
    assert_int_equal(tu_efig(p, "max_mamba_cache_size"), 183);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 324054);
    assert_int_equal(tu_efig(p, "max_running_requests"), 36);
    assert_int_equal(tu_efig(p, "budget"), 10153205760u); /* before the reservation */
    kvshard_plan_free(p);
    /* The config's vision_config says it is multimodal: the same figures. */
    TU_PLAN(&p, E4_13("0.5.21"));
    assert_int_equal(tu_efig(p, "max_mamba_cache_size"), 183);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 324054);
    kvshard_plan_free(p);
    /* Told it is not, the 100 MiB stay in the pool: 186 slots as at 0.5.11
     * less the extra buffer's. */
    TU_PLAN(&p, E4_13("0.5.21"), "--multimodal=false");
    assert_true(tu_efig(p, "max_total_num_tokens") > 324054);
    kvshard_plan_free(p);
}

/* The budget from the free figures the engine printed (22.93 GiB before the
 * weights, 14.08 after), at TP 2 rounded to float32 as the engine's minimum
 * over ranks: rest 9.494 GiB, 187 state slots, 328,234 tokens. */
static void test_sglang_device_budget(void **state)
{
    (void)state;
    kvshard_plan *p;
    /* round(22.93 x 2^30) = 24,620,900,024; round(14.08 x 2^30) =
     * 15,118,284,882: non-KV 9,502,615,142. */
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.11", "--tp-size", "2",
         "--mem-fraction-static", "0.8", "--context-length", "262144",
         "--device_memory_free=24620900024", "--non_kv_memory=9502615142");
    assert_int_equal(tu_efig(p, "max_mamba_cache_size"), 187);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 328234);
    /* int(rest x 2^30), rest = 14.08... - 22.93... x 0.2 in float32 figures. */
    assert_int_equal(tu_efig(p, "budget"), 10194104729u);
    assert_int_equal(tu_figure(p, "memory_per_rank"), 10194104729u);
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EMISSING,
            "sglang profile: engine_input_missing: the budget from device "
            "figures needs device_memory_free, non_kv_memory and "
            "--mem-fraction-static",
            QWEN9B, "--engine=sglang", "--engine_version=0.5.11", "--tp-size", "2",
            "--context-length", "262144", "--device_memory_free=24620900024",
            "--non_kv_memory=9502615142");
}

/* ---- sglang: each version rule on both sides ------------------------------------- */

/* The state pool solve at 0.5.17 (multimodal off, extra_buffer both): K =
 * floor(mb / slot) = 186 charged 186 at 0.5.16; floor((mb - slot) / slot) =
 * 185 charged 186 at 0.5.17: the same tokens, R 37 both. */
static void test_sglang_rule_state_pool(void **state)
{
    (void)state;
    static const struct {
        const char *version;
        uint64_t K;
    } cases[] = {{"0.5.16", 186}, {"0.5.17", 185}};
    for (size_t i = 0; i < 2; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version", cases[i].version, "--tp-size",
                "2", "--context-length", "262144", "--memory_per_rank=10153205760",
                "--multimodal=false");
        assert_int_equal(tu_efig(p, "max_mamba_cache_size"), cases[i].K);
        assert_int_equal(tu_efig(p, "mamba_pool_slots"), cases[i].K + 1);
        assert_int_equal(tu_efig(p, "max_total_num_tokens"), 327310);
        assert_int_equal(tu_efig(p, "max_running_requests"), 37);
        kvshard_plan_free(p);
    }
    /* The 100 MiB for a multimodal model, from 0.5.17 only. */
    kvshard_plan *p;
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.16", "--tp-size", "2",
         "--context-length", "262144", "--memory_per_rank=10153205760", "--multimodal");
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 327310);
    kvshard_plan_free(p);
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.17", "--tp-size", "2",
         "--context-length", "262144", "--memory_per_rank=10153205760", "--multimodal");
    assert_int_equal(tu_efig(p, "max_mamba_cache_size"), 183);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 324054);
    kvshard_plan_free(p);
}

/* max_running_requests with the flag: min(q, estimate) from 0.5.10 to
 * 0.5.13, min(q, tokens / 2) from 0.5.14. Llama 3.1 8B (no state), 20 GiB: 163,840
 * tokens of 131,072 B; at 8,192 tokens the estimate is 4,096. */
static void test_sglang_rule_requests(void **state)
{
    (void)state;
    static const struct {
        const char *version;
        uint64_t with_flag, without;
    } cases[] = {{"0.5.13", 4096, 4096}, {"0.5.14", 5000, 4096}};
    for (size_t i = 0; i < 2; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, LLAMA, "--engine=sglang", "--engine_version", cases[i].version,
                "--context-length", "8192", "--memory_per_rank=20GiB", "--max-running-requests",
                "5000", "--multimodal=false");
        assert_int_equal(tu_efig(p, "max_total_num_tokens"), 163840);
        assert_int_equal(tu_efig(p, "max_running_requests"), cases[i].with_flag);
        assert_true(tu_efig_null(p, "max_mamba_cache_size"));
        assert_true(tu_efig_null(p, "mamba_radix_cache_strategy"));
        kvshard_plan_free(p);
        TU_PLAN(&p, LLAMA, "--engine=sglang", "--engine_version", cases[i].version,
                "--context-length", "8192", "--memory_per_rank=20GiB", "--multimodal=false");
        assert_int_equal(tu_efig(p, "max_running_requests"), cases[i].without);
        kvshard_plan_free(p);
    }
    /* --max-total-tokens lowers the pool; above it, a warning. */
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--context-length", "8192", "--memory_per_rank=20GiB",
         "--max-total-tokens", "100003", "--page-size", "16", "--multimodal=false");
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 100000); /* a multiple of 16 */
    assert_int_equal(tu_figure(p, "num_blocks"), 6250);
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--context-length", "8192", "--memory_per_rank=20GiB",
         "--max-total-tokens", "200000", "--multimodal=false");
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 163840);
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_MAX_TOTAL_TOKENS_ABOVE_PROFILE),
                        "--max-total-tokens 200000 is above the 163840 tokens the budget holds: "
                        "the engine keeps 163840");
    kvshard_plan_free(p);
}

/* The strategy `auto`: no_buffer before 0.5.14, extra_buffer from it for
 * Qwen3.5 with the overlap schedule (5 slots a request); without the
 * overlap schedule and pages of one token, no_buffer; with pages of 16, 4
 * slots a request. */
static void test_sglang_rule_strategy(void **state)
{
    (void)state;
    static const struct {
        const char *version, *extra1, *extra2, *strategy;
        uint64_t ratio, requests;
    } cases[] = {
        {"0.5.13", "--context-length=262144", "--context-length=262144", "no_buffer", 3, 62},
        {"0.5.14", "--context-length=262144", "--context-length=262144", "extra_buffer", 5, 37},
        {"0.5.14", "--disable-overlap-schedule", "--context-length=262144", "no_buffer", 3, 62},
        {"0.5.14", "--disable-overlap-schedule", "--page-size=16", "extra_buffer", 4, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version", cases[i].version, "--tp-size",
                "2", "--context-length", "262144", "--memory_per_rank=10153205760", cases[i].extra1,
                cases[i].extra2);
        assert_string_equal(tu_efig_text(p, "mamba_radix_cache_strategy"), cases[i].strategy);
        assert_int_equal(tu_efig(p, "mamba_ratio"), cases[i].ratio);
        if (cases[i].requests)
            assert_int_equal(tu_efig(p, "max_running_requests"), cases[i].requests);
        kvshard_plan_free(p);
    }
    /* The flag's name: --mamba-radix-cache-strategy from 0.5.14, the old
     * name at every release; extra_buffer_lazy from 0.5.13. */
    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_version_unsupported: "
            "--mamba-radix-cache-strategy is the name from 0.5.14",
            QWEN9B, "--engine=sglang", "--engine_version=0.5.13", "--tp-size", "2",
            "--mamba-radix-cache-strategy", "no_buffer");
    kvshard_plan *p;
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.14", "--tp-size", "2",
         "--mamba-radix-cache-strategy", "no_buffer", "--memory_per_rank=10153205760",
         "--context-length=262144");
    assert_int_equal(tu_efig(p, "mamba_ratio"), 3);
    kvshard_plan_free(p);
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.21", "--tp-size", "2",
         "--mamba-scheduler-strategy", "no_buffer", "--memory_per_rank=10153205760",
         "--context-length=262144", "--multimodal=false");
    assert_string_equal(tu_efig_text(p, "mamba_radix_cache_strategy"), "no_buffer");
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EDUPKEY,
            "--mamba-radix-cache-strategy no_buffer and "
            "--mamba-scheduler-strategy extra_buffer differ",
            QWEN9B, "--engine=sglang", "--tp-size", "2", "--mamba-radix-cache-strategy",
            "no_buffer", "--mamba-scheduler-strategy", "extra_buffer");
    TU_REFUSED(KVSHARD_EPROFILE, "the strategy extra_buffer_lazy exists from 0.5.13", QWEN9B,
            "--engine=sglang", "--engine_version=0.5.12", "--tp-size", "2",
            "--mamba-scheduler-strategy", "extra_buffer_lazy");
    /* 0.5.13, lazy: 4 slots a request, floor(186 / 4) = 46. */
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.13", "--tp-size", "2",
         "--mamba-scheduler-strategy", "extra_buffer_lazy", "--memory_per_rank=10153205760",
         "--context-length=262144");
    assert_int_equal(tu_efig(p, "mamba_ratio"), 4);
    assert_int_equal(tu_efig(p, "max_running_requests"), 46);
    kvshard_plan_free(p);
}

/* Speculative decoding with state layers from 0.5.13, with
 * --max-running-requests q: with s = 2 draft tokens and q = 8, K =
 * floor(mb / (slot x (1 + 2 / 3))) = 112; the rest less slot x min(8,
 * floor(112 / 3)) x 2 and 112 slots: 418,486 tokens; R = min(8, 2,048,
 * 37) = 8. */
static void test_sglang_rule_speculative(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_version_unsupported: SGLang 0.5.12 does "
            "not run speculative decoding on models with state layers",
            QWEN9B, "--engine=sglang", "--engine_version=0.5.12", "--tp-size", "2",
            "--speculative-num-draft-tokens", "2", "--max-running-requests", "8");
    kvshard_plan *p;
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--engine_version=0.5.13", "--tp-size", "2",
         "--speculative-num-draft-tokens", "2", "--max-running-requests", "8",
         "--memory_per_rank=10153205760", "--context-length", "262144");
    assert_int_equal(tu_efig(p, "max_mamba_cache_size"), 112);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 418486);
    assert_int_equal(tu_efig(p, "max_running_requests"), 8);
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EMISSING,
            "engine_input_missing: speculative decoding on a model with state "
            "layers needs --max-running-requests",
            QWEN9B, "--engine=sglang", "--engine_version=0.5.13", "--tp-size", "2",
            "--speculative-num-draft-tokens", "2");
    /* kvshard's own count is not the engine's: named as ignored. */
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--num_speculative_tokens=2");
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_PROFILE_INPUTS_IGNORED),
                        "num_speculative_tokens is not read by the sglang profile");
    kvshard_plan_free(p);
}

/* ---- sglang: refusals and the layer split ------------------------------------------ */

static void test_sglang_refusals(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_unsupported: sliding_attention layers "
            "(52 of 62) are not covered yet",
            GEMMA, "--engine=sglang");
    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_unsupported: state kind short_conv is "
            "not covered yet",
            "models/lfm2_8b_a1b.json", "--engine=sglang");
    TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: --pp-size 2", QWEN9B, "--engine=sglang",
            "--pipeline-parallel-size", "2", "--tp-size", "2");
    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_unsupported: --enable-hierarchical-cache: "
            "the engine's hierarchical cache is not covered yet",
            LLAMA, "--engine=sglang", "--ignore_unknown_flags", "--enable-hierarchical-cache");
    TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: --enable-unified-memory", LLAMA,
            "--engine=sglang", "--enable-unified-memory");
    TU_REFUSED(KVSHARD_EPROFILE,
            "sglang profile: engine_split_unsupported: kvshard's layerwise "
            "split (layerwise_split_size 2) is not the engine's",
            LLAMA, "--engine=sglang", "--tp", "2", "--enable_layerwise_split",
            "--layerwise_split_size", "2");
    TU_REFUSED(KVSHARD_EPROFILE,
            "engine_split_unsupported: --enable-dsa-cache-layer-split splits "
            "the layers of a model with DSA indexer keys",
            LLAMA, "--engine=sglang", "--tp", "2", "--enable-dsa-cache-layer-split",
            "--attn-cp-size", "2");
    /* fp16 is no SGLang word: a flag refuses it, an option is refused. */
    TU_REFUSED(KVSHARD_ERANGE,
            "kv_cache_dtype: expected auto, bf16, bfloat16, fp8_e4m3 or "
            "fp8_e5m2, found \"fp16\"",
            LLAMA, "--engine=sglang", "--kv_cache_dtype=fp16");
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_SGLANG;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP16;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EPROFILE);
    assert_non_null(strstr(err.message, "sglang profile: engine_unsupported: kv_cache_dtype "
                                        "float16"));
    kvshard_model_free(m);
    TU_REFUSED(KVSHARD_EMISSING,
            "sglang profile: engine_input_missing: the engine's context "
            "length is the config's max_position_embeddings",
            "models/glm_5.json", "--engine=sglang", "--world_size=8", "--memory_per_rank=60GiB");
    /* No token: 10 MiB is less than one pool token of 128 KiB x 2... */
    TU_REFUSED(KVSHARD_ENOBLOCK, "sglang profile: not_enough_memory", LLAMA, "--engine=sglang",
            "--context-length", "8192", "--memory_per_rank=100KiB", "--multimodal=false");
    /* A state pool of no slot, and one that serves no request. */
    TU_REFUSED(KVSHARD_ENOBLOCK, "sglang profile: mamba_cache_too_small", QWEN9B, "--engine=sglang",
            "--engine_version=0.5.11", "--tp-size", "2", "--context-length", "4096",
            "--memory_per_rank=40MiB");
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "sglang profile: max_running_requests_zero: the state pool of 2 "
            "slots serves no request at 3 slots a request",
            QWEN9B, "--engine=sglang", "--engine_version=0.5.11", "--tp-size", "2",
            "--context-length", "4096", "--memory_per_rank=10GiB", "--max-mamba-cache-size", "2");
    TU_REFUSED(KVSHARD_EPARALLEL,
            "sglang profile: --enable-dp-attention needs --tp-size 4 "
            "divisible by --dp-size 3",
            LLAMA, "--engine=sglang", "--tp", "4", "--dp", "3", "--enable-dp-attention");
}

/* DP attention: the world is the TP size and the attention TP size is tp /
 * dp; without it the world is tp x dp. */
static void test_sglang_parallel(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--tp", "4", "--dp", "2", "--enable-dp-attention");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&o, p), KVSHARD_OK);
    assert_int_equal(o.world_size, 4);
    assert_int_equal(kvshard_plan_attn_tp_size(p), 2);
    kvshard_plan_free(p);
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--tp-size", "4", "--data-parallel-size", "2");
    assert_int_equal(kvshard_plan_options(&o, p), KVSHARD_OK);
    assert_int_equal(o.world_size, 8);
    assert_int_equal(kvshard_plan_attn_tp_size(p), 4);
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EDUPKEY, "sglang profile: world_size 2 and the 4 ranks of --tp-size 4",
               LLAMA, "--engine=sglang", "--world_size=2", "--tp-size", "4");
}

/* The DSA layer split: DeepSeek-V3.2's 61 layers over --attn-cp-size 4 of
 * TP 8, ceil(61 / 4) + 1 = 17 layers a rank; bf16 cell (512 + 64) x 2 +
 * 132 = 1,284 B a layer: 17 x 1,284 = 21,828 B a token; pages of 64
 * tokens; the KV size counts the indexer buffers. */
static void test_sglang_layer_split(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--enable-dsa-cache-layer-split",
         "--attn-cp-size", "4", "--memory_per_rank=40GiB", "--context-length", "8192",
         "--multimodal=false", "--device_compute_capability=9.0");
    assert_true(tu_efig_bool(p, "layer_split"));
    assert_int_equal(tu_efig(p, "split_layers_per_rank"), 17);
    assert_int_equal(tu_efig(p, "cell_bytes"), 17 * 1284);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 1967616); /* 1,967,641 down to 64s */
    assert_int_equal(tu_efig(p, "kv_cache_bytes"), (1967616ull + 64) * 17 * 1284);
    assert_int_equal(kvshard_plan_effective_split_size(p), 4);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&o, p), KVSHARD_OK);
    assert_int_equal(o.ownership, KVSHARD_OWNERSHIP_CONTIGUOUS);
    assert_true(o.enable_layerwise_split);
    kvshard_plan_free(p);
}

/* ---- xllm: the figures, the 0.10 rule and the engine object ----------------------- */

/* Qwen3.5-35B-A3B at TP 4, B 20 GiB: the default release sizes 631 state
 * slots and 8,634 blocks; 0.10.0 and 0.10.1 size max_concurrent_requests +
 * 2 = 202 slots whatever the model, and 13,903 blocks. */
static void test_xllm_versions(void **state)
{
    (void)state;
    static const struct {
        const char *version;
        uint64_t slots, blocks;
    } cases[] = {{"0.10.0", 202, 13903}, {"0.10.1", 202, 13903}, {"0.11.0", 631, 8634}};
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        o.engine = KVSHARD_ENGINE_XLLM;
        o.world_size = 4;
        o.memory_per_rank = 21474836480u;
        kvshard_settings *s = tu_settings("engine_version", cases[i].version, NULL);
        o.settings = s;
        kvshard_plan *p = tu_plan(m, &o);
        kvshard_settings_free(s);
        assert_int_equal(tu_figure(p, "state_slots"), cases[i].slots);
        assert_int_equal(tu_figure(p, "num_blocks"), cases[i].blocks);
        assert_int_equal(kvshard_plan_engine_figure_count(p), 8);
        assert_string_equal(tu_efig_text(p, "name"), "xllm");
        assert_string_equal(tu_efig_text(p, "version"), cases[i].version);
        assert_int_equal(tu_efig(p, "budget"), 21474836480u);
        assert_int_equal(tu_efig(p, "state_slots"), cases[i].slots);
        assert_int_equal(tu_efig(p, "linear_blocks"), cases[i].slots);
        assert_int_equal(tu_efig(p, "num_blocks"), cases[i].blocks);
        assert_int_equal(tu_efig(p, "usable_blocks"), cases[i].blocks - 1);
        assert_int_equal(tu_efig(p, "usable_state_slots"), cases[i].slots - 1);
        kvshard_plan_free(p);
    }
    /* 0.10 sizes its pool from the requests even without linear layers. */
    kvshard_model *dense = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_XLLM;
    o.memory_per_rank = 1u << 30;
    kvshard_settings *s =
        tu_settings("engine_version", "0.10.1", "max_concurrent_requests", "64", NULL);
    o.settings = s;
    kvshard_plan *p = tu_plan(dense, &o);
    assert_int_equal(tu_figure(p, "state_slots"), 66);
    kvshard_plan_free(p);
    tu_set(s, "engine_version", "0.11.0");
    p = tu_plan(dense, &o);
    assert_int_equal(tu_figure(p, "state_slots"), 2);
    kvshard_plan_free(p);
    kvshard_settings_free(s);
    kvshard_model_free(dense);
    kvshard_model_free(m);
    /* The text lines of the default release. */
    kvshard_plan *t;
    TU_PLAN(&t, "models/qwen3_5_35b_a3b.json", "--engine=xllm", "--world_size=4",
         "--memory_per_rank=20GiB");
    char *text = tu_plan_text(t);
    tu_assert_contains(text, "capacity   xllm profile: budget 20.00 GiB per rank; 631 state slots "
                          "(9.46 GiB), 8,634 blocks of 128 tokens = 1,105,152 tokens\n"
                          "           the engine logs blocks: 8634, linear_blocks: 631; usable "
                          "after padding: 8,633 blocks, 630 state slots\n");
    free(text);
    char *json = tu_plan_json(t);
    assert_non_null(strstr(json, "\"engine\": {\"name\": \"xllm\", \"version\": \"0.11.0\", "
                                 "\"budget\": 21474836480, \"state_slots\": 631,\n"
                                 "             \"linear_blocks\": 631, \"num_blocks\": 8634, "
                                 "\"usable_blocks\": 8633, \"usable_state_slots\": 630},\n"));
    free(json);
    kvshard_plan_free(t);
    TU_REFUSED(KVSHARD_EPROFILE,
            "xllm profile: engine_unsupported: no_cache layers (23 of 52) are "
            "not covered",
            NEMOTRON, "--engine=xllm");
}

/* ---- flags ----------------------------------------------------------------------------- */

/* The engines' spellings: --name value and --name=value, one dash or two,
 * '-' and '_' alike, --no-name, the next argument taken whatever it starts
 * with; each engine's flags only under its profile; two spellings of one
 * input must agree. */
static void test_flag_forms(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "-tp", "2", "--engine", "vllm", "-max_model_len=4096", "--max-num-seqs=64",
         "--kv_cache_memory_bytes", "4GiB", "--enable-prefix-caching=false");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&o, p), KVSHARD_OK);
    assert_int_equal(o.world_size, 2);
    assert_int_equal(o.max_seqs, 64);
    assert_int_equal(o.memory_per_rank, 4294967296u);
    assert_false(tu_efig_bool(p, "prefix_caching"));
    assert_int_equal(tu_efig(p, "max_model_len"), 4096);
    kvshard_plan_free(p);
    /* The same input twice under one spelling: the last wins. */
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--max-model-len", "2048", "--max_model_len", "4096");
    assert_int_equal(tu_efig(p, "max_model_len"), 4096);
    kvshard_plan_free(p);
    /* Two spellings that agree are one value. */
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--max-model-len=4096", "--max-num-seqs", "16",
         "--max_seqs=16", "-tp", "1", "--tensor-parallel-size", "1");
    assert_int_equal(tu_efig(p, "max_num_seqs"), 16);
    kvshard_plan_free(p);

    kvshard_error err;
    TU_REFUSED(KVSHARD_EDUPKEY, "--max-num-seqs 16 and --max_seqs 8 give max_seqs two values",
               LLAMA, "--engine=vllm", "--max-num-seqs", "16", "--max_seqs=8");
    TU_REFUSED(KVSHARD_EDUPKEY,
            "--tp 2 and --tensor-parallel-size 4 give tensor_parallel_size two "
            "values",
            LLAMA, "--engine=vllm", "-tp", "2", "--tensor-parallel-size", "4");
    TU_REFUSED(KVSHARD_EPARALLEL,
            "vllm profile: world: world_size 8 is not the engine's 2 ranks "
            "(--tensor-parallel-size 2 x --pipeline-parallel-size 1 x --data-parallel-size 1)",
            LLAMA, "--engine=vllm", "--world_size=8", "--tensor-parallel-size", "2");
    /* Another engine's flags, and kvshard's profile. */
    TU_REFUSED(KVSHARD_EUNKNOWNKEY,
            "unknown flag --mem-fraction-static: it is a flag of the sglang "
            "profile, and the engine profile is vllm",
            LLAMA, "--engine=vllm", "--mem-fraction-static", "0.8");
    TU_REFUSED(KVSHARD_EUNKNOWNKEY,
            "unknown flag --max-model-len: it is a flag of the vllm "
            "profile, and the engine profile is kvshard",
            LLAMA, "--max-model-len=4096");
    TU_REFUSED(KVSHARD_EUNKNOWNKEY, "unknown flag --max_model_len", LLAMA, "--engine=xllm",
            "--max_model_len=4096");
    /* Values of the wrong type, a missing value. */
    TU_REFUSED(KVSHARD_ETYPE, "max_model_len: expected an integer, found \"4k\"", LLAMA,
            "--engine=vllm", "--max-model-len", "4k");
    TU_REFUSED(KVSHARD_ETYPE, "--max-model-len needs a value", LLAMA, "--engine=vllm",
            "--max-model-len");
    TU_REFUSED(KVSHARD_ETYPE, "enforce_eager: expected true or false", LLAMA, "--engine=vllm",
            "--enforce-eager=maybe");
    TU_REFUSED(KVSHARD_ERANGE, "gpu_memory_utilization: 1.5 is out of range", LLAMA,
               "--engine=vllm", "--gpu-memory-utilization", "1.5");
    /* A value is the next argument whatever it starts with: -1 is the
     * engine's automatic length, which the profile refuses. */
    TU_REFUSED(KVSHARD_EPROFILE, "engine_unsupported: --max-model-len -1", LLAMA, "--engine=vllm",
            "--max-model-len", "-1");
    /* --engine with nothing after it (gflags also take --engine xllm). */
    TU_REFUSED(KVSHARD_ETYPE, "--engine needs a value", LLAMA, "--engine");

    /* --ignore_unknown_flags: an engine's whole command line, --port 8000
     * skipped as one flag, --trust-remote-code alone. */
    char *path = tu_example_path(LLAMA);
    kvshard_deployment *dep = NULL;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    const char *line[] = {"--engine=vllm",
                          "--port",
                          "8000",
                          "--trust-remote-code",
                          "--host",
                          "0.0.0.0",
                          "--max-model-len",
                          "4096",
                          "--served-model-name",
                          "llama",
                          "--ignore-unknown-flags",
                          "-tp",
                          "2"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, sizeof line / sizeof line[0], line, 0, &err),
                 &err);
    assert_int_equal(kvshard_deployment_plan(&p, dep, &err), KVSHARD_OK);
    assert_int_equal(kvshard_plan_attn_tp_size(p), 2);
    kvshard_plan_free(p);
    /* A stray value is not a flag. */
    const char *stray[] = {"--engine=vllm", "--enforce-eager", "4096"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 3, stray, 0, &err), KVSHARD_EUNKNOWNKEY);
    assert_non_null(strstr(err.message, "\"4096\" is not a flag"));
    /* kvshard_deployment_set takes the engine's names too. */
    tu_assert_ok(kvshard_deployment_set(dep, "max-num-seqs", "32", NULL, &err), &err);
    kvshard_options dep_options = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_deployment_options(&dep_options, dep), KVSHARD_OK);
    assert_int_equal(dep_options.max_seqs, 32);
    kvshard_deployment_free(dep);
}

/* Engine inputs in a deployment file: underscores, under cache:. */
static void test_deployment_file(void **state)
{
    (void)state;
    char *dir = tu_example_path("");
    static const char text[] = "model: models/nemotron_3_nano_30b_a3b.json\n"
                               "cache:\n"
                               "  engine: vllm\n"
                               "  engine_version: 0.20.1rc1.dev91\n"
                               "  max_model_len: 256000\n"
                               "  kv_cache_dtype: fp8_e4m3\n"
                               "  state_dtype: fp32\n"
                               "  max_seqs: 128\n"
                               "  memory_per_rank: 3994319585\n"
                               "  speculative_config: '{\"method\": \"ngram\", "
                               "\"num_speculative_tokens\": 0}'\n";
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(
        kvshard_deployment_load_string(&dep, text, strlen(text), "d.yaml", dir, NULL, &err), &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 311);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 1206303);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
    static const char bad[] = "model: models/llama3_1_8b.json\n"
                              "cache:\n"
                              "  engine: vllm\n"
                              "  engine_version: 0.20\n";
    assert_int_equal(
        kvshard_deployment_load_string(&dep, bad, strlen(bad), "b.yaml", dir, NULL, &err),
        KVSHARD_ERANGE);
    assert_int_equal(err.line, 4);
    assert_int_equal(err.column, 19);
    assert_non_null(strstr(err.message, "engine_version_invalid"));
    free(dir);
}

/* Settings of the new types: text, a JSON object, a decimal. */
static void test_setting_types(void **state)
{
    (void)state;
    kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
    assert_int_equal(kvshard_setting_find(&info, "engine_version"), KVSHARD_OK);
    assert_int_equal(info.type, KVSHARD_SETTING_TEXT);
    assert_int_equal(info.engine, KVSHARD_ENGINE_XLLM); /* the first profile that reads it */
    assert_int_equal(kvshard_setting_find(&info, "speculative_config"), KVSHARD_OK);
    assert_int_equal(info.type, KVSHARD_SETTING_JSON);
    assert_int_equal(info.engine, KVSHARD_ENGINE_VLLM);
    assert_int_equal(kvshard_setting_find(&info, "mamba_full_memory_ratio"), KVSHARD_OK);
    assert_int_equal(info.type, KVSHARD_SETTING_DECIMAL);
    assert_int_equal(info.max, 100);
    assert_string_equal(info.default_value, "0.9");
    assert_int_equal(info.engine, KVSHARD_ENGINE_SGLANG);
    assert_int_equal(kvshard_setting_find(&info, "gpu_memory_utilization"), KVSHARD_OK);
    assert_string_equal(info.default_value, "0.92 (0.9 before 0.20.0)");
    kvshard_settings *s = tu_settings("engine_version", "v0.5.11", "speculative_config",
                                      "{\"method\": \"eagle\", \"num_speculative_tokens\": 4, "
                                      "\"model\": \"x\"}",
                                      "mamba_full_memory_ratio", "2.5", NULL);
    char buf[128];
    bool set = false;
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, &set, s, "engine_version"), KVSHARD_OK);
    assert_true(set);
    assert_string_equal(buf, "v0.5.11");
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, NULL, s, "speculative_config"),
                     KVSHARD_OK);
    assert_string_equal(buf, "{\"method\": \"eagle\", \"num_speculative_tokens\": 4}");
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, NULL, s, "mamba_full_memory_ratio"),
                     KVSHARD_OK);
    assert_string_equal(buf, "2.5");
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, &set, s, "enable_prefix_caching"),
                     KVSHARD_OK);
    assert_false(set);
    assert_string_equal(buf, "by model and version");
    kvshard_error err;
    assert_int_equal(kvshard_settings_set(s, "mamba_full_memory_ratio", "101", NULL, &err),
                     KVSHARD_ERANGE);
    assert_int_equal(kvshard_settings_set(s, "engine_version", "0.5.11\x1b", NULL, &err),
                     KVSHARD_ETYPE);
    char long_version[80];
    memset(long_version, 'a', sizeof long_version - 1);
    memcpy(long_version, "0.5.11+", 7);
    long_version[sizeof long_version - 1] = '\0';
    assert_int_equal(kvshard_settings_set(s, "engine_version", long_version, NULL, &err),
                     KVSHARD_ERANGE);
    assert_int_equal(kvshard_settings_set(s, "speculative_config",
                                          "{\"method\": 3, \"num_speculative_tokens\": 1}", NULL,
                                          &err),
                     KVSHARD_ETYPE);
    assert_int_equal(kvshard_settings_set(s, "speculative_config",
                                          "{\"num_speculative_tokens\": 2000}", NULL, &err),
                     KVSHARD_ERANGE);
    /* The plan keeps its own copy of the text: the settings may go. */
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_SGLANG;
    o.settings = s;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_settings_free(s);
    assert_string_equal(tu_efig_text(p, "version"), "v0.5.11");
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* What every profile declares: shared inputs alike, at most the text
 * inputs a plan keeps, a figure list that fits. */
static void test_profile_tables(void **state)
{
    (void)state;
    size_t n = kvshard_setting_count();
    for (size_t i = 0; i < n; i++) {
        kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
        assert_int_equal(kvshard_setting_info_at(&info, i), KVSHARD_OK);
        kvshard_setting_info again = KVSHARD_SETTING_INFO_INIT;
        assert_int_equal(kvshard_setting_find(&again, info.key), KVSHARD_OK);
        assert_int_equal(again.type, info.type);
    }
    assert_int_equal(n, 56);
    /* Engine names. */
    assert_string_equal(kvshard_engine_name(KVSHARD_ENGINE_VLLM), "vllm");
    assert_string_equal(kvshard_engine_name(KVSHARD_ENGINE_SGLANG), "sglang");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED),
                        "engine_prefix_caching_disabled");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_MAMBA_CACHE_MODE_ALIGN),
                        "engine_mamba_cache_mode_align");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_PADDING_LAYERS),
                        "engine_padding_layers");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_CUDAGRAPH_SIZES_CAPPED),
                        "engine_cudagraph_sizes_capped");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_MAX_TOTAL_TOKENS_ABOVE_PROFILE),
                        "engine_max_total_tokens_above_profile");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_MAX_RUNNING_REQUESTS_CAPPED),
                        "engine_max_running_requests_capped");
    /* The JSON engine object lists every figure, in order (pp_partition and
     * stages among them). */
    kvshard_plan *p;
    TU_PLAN(&p, E3_14);
    assert_int_equal(kvshard_plan_engine_figure_count(p), 30);
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_engine_figure_at(&f, p, 30), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_engine_figure(&f, p, "no_such"), KVSHARD_EUNKNOWNKEY);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"engine\": {\"name\": \"vllm\", \"version\": "
                                 "\"0.20.1rc1.dev91\", \"budget\": 3994319585, "
                                 "\"attention_block_size\": 4176,\n"));
    assert_non_null(strstr(json, "\"state_dtypes\": [\"bfloat16\", \"float32\"]"));
    assert_non_null(strstr(json, "\"max_concurrency\": 4.712121212121212,"));
    assert_non_null(strstr(json, "\"mamba_padding_percent\": 0.19193857965451055,"));
    free(json);
    kvshard_plan_free(p);
}

/* Compare ranks what the engine can run: vLLM has no layerwise split. */
static void test_compare_under_engines(void **state)
{
    (void)state;
    char *path = tu_example_path(LLAMA);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    const char *args[] = {"--engine=vllm",
                          "-tp",
                          "4",
                          "--max-model-len",
                          "4096",
                          "--kv-cache-memory-bytes",
                          "8GiB",
                          "--context_length=4096"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 8, args, 0, &err), &err);
    kvshard_comparison *c = NULL;
    tu_assert_ok(kvshard_deployment_compare(&c, dep, &err), &err);
    size_t rows = kvshard_comparison_row_count(c);
    assert_int_equal(rows, 9); /* S 1, 2, 4 under three rules */
    for (size_t i = 0; i < rows; i++) {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(c, i);
        if (r->layerwise_split_size == 1) {
            /* 2 KV heads of 128 a rank: 32 x 2 x 2 x 128 x 2 = 32 KiB a token,
             * page 16 x 1,024 x 32... 8 GiB / (16 KiB x 32) = 16,384 blocks. */
            assert_int_equal(r->error, KVSHARD_OK);
            assert_int_equal(r->num_blocks, 16384);
            assert_int_equal(r->balanced_max_seqs, 16383 / 256);
        } else {
            assert_int_equal(r->error, KVSHARD_EPROFILE);
            assert_non_null(strstr(r->error_message, "engine_split_unsupported"));
        }
    }
    assert_int_equal(
        kvshard_comparison_row_at(c, kvshard_comparison_recommended(c))->layerwise_split_size, 1);
    char *text = NULL;
    assert_int_equal(kvshard_comparison_write_text(c, tu_append, &text), KVSHARD_OK);
    tu_assert_contains(text, "vllm profile, Available KV cache memory 8.00 GiB");
    free(text);
    kvshard_comparison_free(c);
    kvshard_deployment_free(dep);
}

/* The report shows the engine's figures. */
static void test_report_under_engines(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, E4_13("0.5.11"));
    char *html = NULL;
    assert_int_equal(kvshard_report_write_html(p, NULL, NULL, tu_append, &html), KVSHARD_OK);
    tu_assert_contains(html, "max_mamba_cache_size 186 (no_buffer, 3 state slots a request)");
    tu_assert_contains(html, "max_total_num_tokens=327310, max_running_requests=62, "
                          "context_len=262144");
    free(html);
    kvshard_plan_free(p);
    TU_PLAN(&p, E3_14);
    html = NULL;
    assert_int_equal(kvshard_report_write_html(p, NULL, NULL, tu_append, &html), KVSHARD_OK);
    tu_assert_contains(html, "<th scope=\"row\">Available KV cache memory</th><td>3.72 GiB");
    tu_assert_contains(html, "<th scope=\"row\">GPU KV cache size</th><td>1,206,303 tokens");
    free(html);
    kvshard_plan_free(p);
}

/* Without a budget, the figures that do not depend on one. */
static void test_without_budget(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.20.1rc1.dev91", "--max-model-len",
         "256000", "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32");
    assert_int_equal(tu_efig(p, "attention_block_size"), 4176);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 5);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 12828672);
    assert_true(tu_efig_null(p, "budget"));
    assert_true(tu_efig_null(p, "num_gpu_blocks"));
    assert_true(tu_efig_null(p, "max_concurrency"));
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, p, 0), KVSHARD_OK);
    assert_int_equal(m.bytes_per_block, 12828672);
    char *text = tu_plan_text(p);
    tu_assert_contains(text,
                       "capacity   vllm 0.20.1rc1.dev91 profile: attention block 4,176 tokens "
                       "(raised from 16), Padding mamba page size by 0.19%\n"
                       "           no budget: give --kv-cache-memory-bytes or the device "
                       "figures\n");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, QWEN9B, "--engine=sglang", "--tp", "2");
    assert_int_equal(tu_efig(p, "cell_bytes"), 16384);
    assert_int_equal(tu_efig(p, "mamba_bytes_per_slot"), 25755648);
    assert_true(tu_efig_null(p, "max_total_num_tokens"));
    assert_false(tu_has_figure(p, "max_seqs"));
    text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   sglang 0.5.21 profile: no budget: give --memory_per_rank, "
                          "or --device_memory_free, --non_kv_memory and --mem-fraction-static\n");
    free(text);
    kvshard_plan_free(p);
}

/* Under an engine profile blocks_for sizes the engine's pool at a measured
 * budget too. */
static void test_blocks_for(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, E3_14);
    kvshard_budget b = KVSHARD_BUDGET_INIT;
    kvshard_blocks out = KVSHARD_BLOCKS_INIT;
    kvshard_error err;
    b.memory_per_rank = 4294967296u; /* floor(floor(4 GiB / 2,138,112) / 6) = 334 */
    tu_assert_ok(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err), &err);
    assert_int_equal(out.num_blocks, 334);
    b.memory_per_rank = 100000000;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err),
                     KVSHARD_ENOBLOCK);
    assert_non_null(strstr(err.message, "max_model_len_does_not_fit"));
    kvshard_plan_free(p);
}

/* ---- models with no full-attention, no KV or only state layers ---------------- */

/* Five sliding layers and no full-attention one: a Gemma 3 config shorter
 * than its pattern of 6 (layer i is full when (i + 1) % 6 == 0). */
#define ALL_SLIDING                                                                                \
    "{model_type: gemma3_text, num_hidden_layers: 5, sliding_window_pattern: 6, "               \
    "sliding_window: 512, num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256, "      \
    "max_position_embeddings: 8192, torch_dtype: bfloat16}"
/* Layers that keep nothing (Nemotron-H's MLP and MoE blocks): no KV layer. */
#define NO_CACHE                                                                                   \
    "{model_type: nemotron_h, num_hidden_layers: 4, hybrid_override_pattern: \"-E-E\", "        \
    "num_attention_heads: 8, num_key_value_heads: 2, head_dim: 128, "                           \
    "max_position_embeddings: 8192, torch_dtype: bfloat16}"
/* Mamba2 layers only. */
#define STATE_ONLY                                                                                 \
    "{model_type: nemotron_h, num_hidden_layers: 4, hybrid_override_pattern: MMMM, "            \
    "num_attention_heads: 8, num_key_value_heads: 2, head_dim: 128, hidden_size: 1024, "        \
    "mamba_num_heads: 32, mamba_head_dim: 64, ssm_state_size: 128, n_groups: 2, "               \
    "conv_kernel: 4, max_position_embeddings: 8192, torch_dtype: bfloat16}"

/* The model planned under `engine` at T = 2 with 4 GiB a rank and requests
 * of 4,096 tokens: the status; the plan into *out. */
static int plan_small(kvshard_plan **out, kvshard_error *err, const kvshard_model *m,
                      kvshard_engine engine)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 2;
    o.engine = engine;
    o.memory_per_rank = 4ull << 30;
    o.context_length = 4096;
    *out = NULL;
    return kvshard_plan_create(out, m, &o, NULL, err);
}

static void assert_small_refused(const kvshard_model *m, kvshard_engine engine, const char *text)
{
    kvshard_plan *p = NULL;
    kvshard_error err;
    int rc = plan_small(&p, &err, m, engine);
    if (rc != KVSHARD_EPROFILE || !strstr(err.message, text))
        print_error("got %s: %s\nexpected \"%s\"\n", kvshard_strerror(rc), err.message, text);
    assert_int_equal(rc, KVSHARD_EPROFILE);
    assert_non_null(strstr(err.message, text));
    assert_null(p);
}

/* No KV bytes under kvshard's own profile: state (or nothing) per
 * sequence, no blocks, no figures by context length. */
static void assert_no_blocks(const kvshard_plan *p, uint64_t state)
{
    kvshard_rank_memory r = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&r, p, 1), KVSHARD_OK);
    assert_int_equal(r.kv_bytes_per_token, 0);
    assert_int_equal(r.bytes_per_block, 0);
    assert_int_equal(r.state_bytes_per_seq, state);
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    assert_false(c.has_num_blocks);
    assert_false(c.has_concurrency);
    assert_false(c.has_balanced_max_seqs);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_NO_KV_LAYERS));
}

/*
 * Only sliding layers. Sliding geometry: 4 KV heads over T = 2, 2 a rank;
 * 2 x (256 + 256) x 2 = 2,048 B a token and layer.
 * kvshard: a window of 2,048 x 16 x (ceil(512 / 16) + 1) = 1,081,344 B a
 *   layer, 5 layers: 5,406,720 B a sequence; no KV bytes.
 * vllm (E3.3 covers sliding layers; one type: one group of 5 layers): a1 =
 *   2 x 2 x 256 x 2 = 2,048, page 16 x 2,048 = 32,768, bytes per block
 *   5 x 32,768 = 163,840; blocks floor(floor(4,294,967,296 / 32,768) / 5) =
 *   floor(131,072 / 5) = 26,214. A request of L = 8,192 (the config's
 *   max_position_embeddings) keeps min(512 - 1 + 8,192, 8,192) = 8,192
 *   tokens: ceil(8,192 / 16) + 1 = 513 blocks; concurrency 26,214 / 513 =
 *   51.0994...; tokens int(51.0994... x 8,192) = 418,606. At 4,096 tokens:
 *   ceil(4,096 / 16) + 1 = 257 blocks; (26,214 - 1) / 257 = 101 sequences.
 *   (It divided by the full layers' page, 0 here: SIGFPE.)
 * xllm, sglang: sliding layers are not covered.
 */
static void test_all_sliding_model(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(ALL_SLIDING);
    kvshard_plan *p = NULL;
    kvshard_error err;
    tu_assert_ok(plan_small(&p, &err, m, KVSHARD_ENGINE_KVSHARD), &err);
    assert_no_blocks(p, 5406720);
    kvshard_plan_free(p);
    tu_assert_ok(plan_small(&p, &err, m, KVSHARD_ENGINE_VLLM), &err);
    assert_int_equal(tu_efig(p, "page_bytes"), 32768);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 1);
    assert_int_equal(tu_efig(p, "group_size"), 5);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 163840);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 26214);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 513);
    assert_true(fabs(tu_efig_double(p, "max_concurrency") - 26214.0 / 513.0) < 1e-9);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 418606);
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    assert_int_equal(c.num_blocks, 26214);
    assert_int_equal(c.balanced_max_seqs, 101);
    assert_int_equal(c.concurrency, 101);
    kvshard_plan_free(p);
    assert_small_refused(m, KVSHARD_ENGINE_XLLM,
                         "xllm profile: engine_unsupported: sliding_attention layers (5 of 5)");
    assert_small_refused(m, KVSHARD_ENGINE_SGLANG,
                         "sglang profile: engine_unsupported: sliding_attention layers (5 of 5) "
                         "are not covered yet");
    kvshard_model_free(m);
    /* Sliding layers whose V head is narrower than K: vllm's page is
     * 2 x h x head_dim, which this model does not keep. */
    m = tu_load_model_text(
        "{model_type: gemma3_text, num_hidden_layers: 5, "
        "sliding_window_pattern: 6, sliding_window: 512, num_attention_heads: 8, "
        "num_key_value_heads: 4, head_dim: 256, swa_v_head_dim: 128, "
        "max_position_embeddings: 8192}");
    assert_small_refused(m, KVSHARD_ENGINE_VLLM,
                         "vllm profile: engine_unsupported: a V head dim other than the K head "
                         "dim is not covered yet");
    kvshard_model_free(m);
}

/*
 * No KV layer and nothing else: kvshard plans nothing per rank; an engine
 * has no cache to size (vllm and sglang divided by a page or a token cell of
 * 0 bytes: SIGFPE), xllm does not cover no-cache layers.
 */
static void test_no_cache_model(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(NO_CACHE);
    kvshard_plan *p = NULL;
    kvshard_error err;
    tu_assert_ok(plan_small(&p, &err, m, KVSHARD_ENGINE_KVSHARD), &err);
    assert_no_blocks(p, 0);
    kvshard_plan_free(p);
    assert_small_refused(m, KVSHARD_ENGINE_XLLM,
                         "xllm profile: engine_unsupported: no_cache layers (4 of 4)");
    assert_small_refused(m, KVSHARD_ENGINE_VLLM,
                         "vllm profile: engine_unsupported: a model with no cache layer (4 layers "
                         "that keep nothing) is not covered: the engine has no KV cache group to "
                         "size");
    assert_small_refused(m, KVSHARD_ENGINE_SGLANG,
                         "sglang profile: engine_unsupported: a model with no full-attention "
                         "layer (4 layers that keep no cache) is not covered yet");
    kvshard_model_free(m);
}

/*
 * Only Mamba2 layers, T = 2: H 32 -> 16, d_inner 32 x 64 = 2,048, G 2 -> 2.
 *   conv 2 x ((2,048 + 2 x 2 x 128) / 2) x 3 = 2 x 1,280 x 3 = 7,680;
 *   temporal (model dtype) 2 x 16 x 64 x 128 = 262,144; 4 layers x 269,824
 *   = 1,079,296 B a sequence.
 * xllm (prefix cache on): slots trunc(4,294,967,296 x (0.9 / 1.9) /
 *   1,079,296) = trunc(1,884.99) = 1,884, below floor((B - 1) / 1,079,296)
 *   = 3,979; no KV blocks.
 * vllm, sglang: state layers without a full-attention layer are not covered.
 */
static void test_state_only_model(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(STATE_ONLY);
    kvshard_plan *p = NULL;
    kvshard_error err;
    tu_assert_ok(plan_small(&p, &err, m, KVSHARD_ENGINE_KVSHARD), &err);
    assert_no_blocks(p, 1079296);
    kvshard_plan_free(p);
    tu_assert_ok(plan_small(&p, &err, m, KVSHARD_ENGINE_XLLM), &err);
    assert_int_equal(tu_efig(p, "state_slots"), 1884);
    assert_true(tu_efig_null(p, "num_blocks"));
    kvshard_plan_free(p);
    assert_small_refused(m, KVSHARD_ENGINE_VLLM,
                         "vllm profile: engine_unsupported: a model with state layers and no "
                         "full-attention layer is not covered yet");
    assert_small_refused(m, KVSHARD_ENGINE_SGLANG,
                         "sglang profile: engine_unsupported: a model with state layers and no "
                         "full-attention layer is not covered yet");
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_forms),
        cmocka_unit_test(test_version_order),
        cmocka_unit_test(test_version_range),
        cmocka_unit_test(test_vllm_mamba2_hybrid),
        cmocka_unit_test(test_vllm_budget_rounding),
        cmocka_unit_test(test_vllm_sliding_window),
        cmocka_unit_test(test_vllm_rule_tokens_line),
        cmocka_unit_test(test_vllm_rule_group_size),
        cmocka_unit_test(test_vllm_rule_prefix_default),
        cmocka_unit_test(test_vllm_rule_mode_align),
        cmocka_unit_test(test_vllm_rule_mode_all),
        cmocka_unit_test(test_vllm_rule_all_speculative),
        cmocka_unit_test(test_vllm_rule_nemotron_dtype),
        cmocka_unit_test(test_vllm_rule_block_line),
        cmocka_unit_test(test_vllm_rule_budget),
        cmocka_unit_test(test_vllm_rule_max_num_seqs),
        cmocka_unit_test(test_vllm_rule_coverage),
        cmocka_unit_test(test_uncovered_caches),
        cmocka_unit_test(test_vllm_refusals),
        cmocka_unit_test(test_vllm_speculative),
        cmocka_unit_test(test_sglang_gdn_hybrid),
        cmocka_unit_test(test_sglang_device_budget),
        cmocka_unit_test(test_sglang_rule_state_pool),
        cmocka_unit_test(test_sglang_rule_requests),
        cmocka_unit_test(test_sglang_rule_strategy),
        cmocka_unit_test(test_sglang_rule_speculative),
        cmocka_unit_test(test_sglang_refusals),
        cmocka_unit_test(test_sglang_parallel),
        cmocka_unit_test(test_sglang_layer_split),
        cmocka_unit_test(test_xllm_versions),
        cmocka_unit_test(test_flag_forms),
        cmocka_unit_test(test_deployment_file),
        cmocka_unit_test(test_setting_types),
        cmocka_unit_test(test_profile_tables),
        cmocka_unit_test(test_compare_under_engines),
        cmocka_unit_test(test_report_under_engines),
        cmocka_unit_test(test_without_budget),
        cmocka_unit_test(test_all_sliding_model),
        cmocka_unit_test(test_no_cache_model),
        cmocka_unit_test(test_state_only_model),
        cmocka_unit_test(test_blocks_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
