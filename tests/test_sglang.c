/* The sglang profile's rules for DSA models (DeepSeek-V3.2, GLM-5): the
 * 64-token page, the KV dtype `auto` by compute capability, the indexer
 * buffers in the printed KV size; and the request limit with
 * --max-running-requests in each release range. Every figure is worked out
 * in the comment beside it from the engine's rules, not read back from
 * kvshard. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DSA "models/deepseek_v3_2.json"
#define LLAMA "models/llama3_1_8b.json"

/* DeepSeek-V3.2 (61 MLA layers with indexer keys: kv_lora_rank 512,
 * qk_rope_head_dim 64, index_head_dim 128), --tp 8 --dp 8 with DP
 * attention, 40 GiB a rank, context 32,768. */
#define DSA_EIGHT_GPUS(capability)                                                                 \
    DSA, "--engine=sglang", "--engine_version=0.5.21", "--tp", "8", "--dp", "8",                   \
        "--enable-dp-attention", "--device_compute_capability=" capability,                        \
        "--memory_per_rank=40GiB", "--context-length", "32768"

/* On compute capability 10.0 the KV is fp8_e4m3 and the page 64:
 * - cell = (512 + 64) x 61 x 1 + (128 + 4) x 61 = 35,136 + 8,052 = 43,188;
 * - tokens = floor(42,949,672,960 / 43,188) = 994,481, down to a multiple
 *   of 64: 994,432 (15,538 pages);
 * - KV size = (994,432 + 64) x (656 + 132) x 61 = 47,803,433,728 bytes
 *   (44.52 GiB), of which the indexer (994,496) x 132 x 61 =
 *   8,007,681,792;
 * - estimate = int(994,432 / 32,768 x 512) = 15,538 -> 4,096; no request
 *   flag: min(4,096, 497,216) = 4,096; at 32,768 tokens a request
 *   min(4,096, floor(994,432 / 32,768)) = 30 run at once. */
static void test_dsa_eight_gpus_blackwell(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, DSA_EIGHT_GPUS("10.0"));
    assert_string_equal(tu_efig_text(p, "kv_cache_dtype"), "fp8_e4m3");
    assert_int_equal(tu_efig(p, "page_size"), 64);
    assert_int_equal(tu_efig(p, "cell_bytes"), 43188);
    assert_int_equal(tu_efig(p, "budget"), 42949672960u);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 994432);
    assert_int_equal(tu_efig(p, "kv_cache_bytes"), 47803433728u);
    assert_int_equal(tu_efig(p, "indexer_bytes"), 8007681792u);
    assert_int_equal(tu_efig(p, "max_running_requests"), 4096);
    assert_int_equal(tu_efig(p, "context_len"), 32768);
    assert_int_equal(tu_figure(p, "block_size"), 64);
    assert_int_equal(tu_figure(p, "num_blocks"), 15538);
    assert_int_equal(tu_figure(p, "max_tokens"), 994432);
    assert_int_equal(tu_figure(p, "concurrency"), 30);
    assert_null(tu_warning_message(p, KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN));
    char *text = tu_plan_text(p);
    tu_assert_contains(text,
                       "capacity   sglang 0.5.21 profile: budget 40.00 GiB per rank (the rest "
                       "after mem_fraction_static)\n");
    tu_assert_contains(text,
                       "           the engine logs KV Cache is allocated. #tokens: 994432, KV "
                       "size: 44.52 GB\n");
    tu_assert_contains(text, "           the engine logs max_total_num_tokens=994432, "
                          "max_running_requests=4096, context_len=32768\n");
    free(text);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"kv_cache_dtype\": \"fp8_e4m3\"");
    tu_assert_contains(json, "\"indexer_bytes\": 8007681792");
    free(json);
    kvshard_plan_free(p);
}

/* On compute capability 9.0 the KV is bfloat16: cell (1,152 + 132) x 61 =
 * 78,324; floor(42,949,672,960 / 78,324) = 548,359 -> 548,352 tokens; KV
 * size (548,352 + 64) x 78,324 = 42,954,134,784 bytes (40.00 GiB), the
 * indexer 548,416 x 8,052 = 4,415,845,632 of it. */
static void test_dsa_eight_gpus_hopper(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, DSA_EIGHT_GPUS("9.0"));
    assert_string_equal(tu_efig_text(p, "kv_cache_dtype"), "bfloat16");
    assert_int_equal(tu_efig(p, "cell_bytes"), 78324);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 548352);
    assert_int_equal(tu_efig(p, "kv_cache_bytes"), 42954134784u);
    assert_int_equal(tu_efig(p, "indexer_bytes"), 4415845632u);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "#tokens: 548352, KV size: 40.00 GB\n");
    free(text);
    kvshard_plan_free(p);
    /* A capability of 12.1 is Blackwell too; an explicit dtype needs no
     * capability at all. */
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--device_compute_capability", "12.1");
    assert_string_equal(tu_efig_text(p, "kv_cache_dtype"), "fp8_e4m3");
    assert_int_equal(tu_efig(p, "cell_bytes"), 43188);
    kvshard_plan_free(p);
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--kv-cache-dtype", "bf16");
    assert_string_equal(tu_efig_text(p, "kv_cache_dtype"), "bfloat16");
    assert_int_equal(tu_efig(p, "cell_bytes"), 78324);
    kvshard_plan_free(p);
}

/* Without the compute capability a DSA model's `auto` KV is not guessed. */
static void test_dsa_capability_missing(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(tu_plan_flags(&p, &err, DSA, "--engine=sglang", "--tp", "8", NULL),
                     KVSHARD_EMISSING);
    assert_null(p);
    assert_string_equal(err.message,
                        "sglang profile: engine_input_missing: a DSA model's --kv-cache-dtype "
                        "auto is fp8_e4m3 on GPUs of compute capability 10.0 and above and "
                        "bfloat16 below: give --device_compute_capability (9.0 for H100, 10.0 "
                        "for B200)");
    /* A model without DSA reads no capability. */
    TU_PLAN(&p, LLAMA, "--engine=sglang");
    assert_string_equal(tu_efig_text(p, "kv_cache_dtype"), "bfloat16");
    kvshard_plan_free(p);
}

/* Any --page-size but 64 is overridden, with a warning; 64 itself is not.
 * The deployment of tests/data/deploy gives it under cache:, with the
 * compute capability (9.0: bfloat16, 548,352 tokens as above). */
static void test_dsa_page_size_overridden(void **state)
{
    (void)state;
    char *path = tu_data_path("deploy/sglang_dsa_page_size.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_deployment_free(dep);
    assert_int_equal(tu_efig(p, "page_size"), 64);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 548352);
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN),
                        "--page-size 16: the engine runs a DSA model with pages of 64 tokens");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN),
                        "engine_page_size_overridden");
    kvshard_plan_free(p);
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--device_compute_capability=9.0",
         "--page-size", "64");
    assert_null(tu_warning_message(p, KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN));
    kvshard_plan_free(p);
    /* Other models keep the page asked. */
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--page-size", "16");
    assert_int_equal(tu_efig(p, "page_size"), 16);
    assert_null(tu_warning_message(p, KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN));
    kvshard_plan_free(p);
}

/* The request limit with --max-running-requests q, Llama 3.1 8B at 20 GiB
 * (163,840 tokens of 131,072 bytes), context 8,192: estimate =
 * int(163,840 / 8,192 x 512) = 10,240 -> 4,096; half the tokens 81,920.
 * 0.5.9 takes q; 0.5.10 to 0.5.13 min(q, 4,096); from 0.5.14 min(q,
 * 81,920). */
static void test_request_limit_by_release(void **state)
{
    (void)state;
    static const struct {
        const char *version, *requested;
        uint64_t limit;
    } cases[] = {
        {"0.5.9", "5000", 5000},     {"0.5.9", "100000", 100000},  {"0.5.10", "5000", 4096},
        {"0.5.13", "5000", 4096},    {"0.5.13", "100", 100},       {"0.5.14", "5000", 5000},
        {"0.5.14", "100000", 81920}, {"0.5.21", "100000", 81920},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, LLAMA, "--engine=sglang", "--engine_version", cases[i].version,
             "--context-length", "8192", "--memory_per_rank=20GiB", "--multimodal=false",
             "--max-running-requests", cases[i].requested);
        assert_int_equal(tu_efig(p, "max_total_num_tokens"), 163840);
        if (tu_efig(p, "max_running_requests") != cases[i].limit)
            print_error("%s with --max-running-requests %s\n", cases[i].version,
                        cases[i].requested);
        assert_int_equal(tu_efig(p, "max_running_requests"), cases[i].limit);
        kvshard_plan_free(p);
    }
}

/* Pipeline stages: DeepSeek-V3.2 with --tp 8 --pp-size 2 on compute
 * capability 9.0 (bfloat16, pages of 64), 40 GiB a rank. SGLang's cut
 * gives the extra layer to the last stage: 30 | 31 layers; cells (1,152 +
 * 132) x 30 = 38,520 and x 31 = 39,804 bytes; tokens floor(42,949,672,960
 * / 38,520) = 1,114,996 -> 1,114,944 and floor(42,949,672,960 / 39,804) =
 * 1,079,029 -> 1,078,976: every stage runs with 1,078,976 (stage 1
 * binds). Stage 0's pools at that count: (1,078,976 + 64) x 38,520 =
 * 41,564,620,800 bytes, the indexer 1,079,040 x 132 x 30 = 4,272,998,400. */
static void test_dsa_two_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--pp-size", "2",
         "--device_compute_capability", "9.0", "--memory_per_rank=40GiB", "--context-length",
         "8192");
    assert_int_equal(tu_efig(p, "pp_size"), 2);
    assert_int_equal(tu_efig(p, "cell_bytes"), 38520);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 1078976);
    assert_int_equal(tu_efig(p, "kv_cache_bytes"), 41564620800u);
    assert_int_equal(tu_efig(p, "indexer_bytes"), 4272998400u);
    assert_int_equal(tu_figure(p, "num_blocks"), 1078976 / 64);
    assert_int_equal(kvshard_plan_pp_size(p), 2);
    char partition[32];
    assert_true(kvshard_plan_pp_partition(partition, sizeof partition, p) > 0);
    assert_string_equal(partition, "30,31");
    char *text = tu_plan_text(p);
    tu_assert_contains(text,
                       "           stage 0: layers 0-29, 38520 bytes a token, 1114944 tokens\n");
    tu_assert_contains(text,
                       "           stage 1: layers 30-60, 39804 bytes a token, 1078976 tokens "
                       "(binds: every stage runs with it)\n");
    free(text);
    kvshard_plan_free(p);
    /* The stages given: 31 | 30, stage 0 binds. */
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--pp-size", "2", "--pp_partition", "31,30",
         "--device_compute_capability", "9.0", "--memory_per_rank=40GiB", "--context-length",
         "8192");
    assert_int_equal(tu_efig(p, "cell_bytes"), 39804);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 1078976);
    kvshard_plan_free(p);
}

/* SGLang refuses stages with speculative decoding; stages of a model with
 * state layers are not covered. */
static void test_stage_refusals(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(tu_plan_flags(&p, &err, LLAMA, "--engine=sglang", "--pp-size", "2",
                               "--speculative-num-draft-tokens", "3", NULL),
                     KVSHARD_EPROFILE);
    assert_string_equal(err.message,
                        "sglang profile: pp_speculative_refused: --pp-size 2 with "
                        "--speculative-num-draft-tokens 3: SGLang refuses pipeline stages with "
                        "speculative decoding");
    assert_int_equal(tu_plan_flags(&p, &err, "models/qwen3_5_9b.json", "--engine=sglang",
                                   "--pp-size", "2", NULL),
                     KVSHARD_EPROFILE);
    assert_string_equal(err.message,
                        "sglang profile: engine_unsupported: --pp-size 2: pipeline stages of a "
                        "model with state layers are not covered yet");
    /* Another engine's cut is not SGLang's: the stages are given instead. */
    assert_int_equal(tu_plan_flags(&p, &err, LLAMA, "--engine=sglang", "--pp-size", "2",
                               "--pp_partition_rule=vllm", NULL),
                     KVSHARD_EPROFILE);
    assert_string_equal(err.message,
                        "sglang profile: engine_unsupported: pp_partition_rule is another "
                        "engine's cut: SGLang cuts its stages by its own rule (sglang) or as "
                        "SGLANG_PP_LAYER_PARTITION says; give the stages as pp_partition");
    assert_null(p);
    /* Llama 3.1 8B on two stages of 16 layers: the rule's cut and the one
     * given alike. */
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--pp-size", "2", "--pp_partition_rule=sglang");
    assert_int_equal(tu_efig(p, "pp_size"), 2);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dsa_eight_gpus_blackwell),
        cmocka_unit_test(test_dsa_eight_gpus_hopper),
        cmocka_unit_test(test_dsa_capability_missing),
        cmocka_unit_test(test_dsa_page_size_overridden),
        cmocka_unit_test(test_request_limit_by_release),
        cmocka_unit_test(test_dsa_two_stages),
        cmocka_unit_test(test_stage_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
