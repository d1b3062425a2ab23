/* The engine object's lists: pp_partition, each stage's figures and
 * TensorRT-LLM's windows, read from the JSON plan and from the figure
 * API. Every expected figure is worked out here from the engines' rules
 * (docs/engines.md), not copied from what kvshard prints. */
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DSA "models/deepseek_v3_2.json"
#define GPT_OSS "trtllm/gpt_oss_120b.json"

/* DeepSeek-V3.2 under vLLM 0.19.0, -tp 8, fp8 KV, 60 GiB a worker. Block 64
 * (MLA); a layer's page is the latent 64 x 656 = 41,984 and the index key
 * 64 x 132 = 8,448 bytes; one group of 2 caches a layer. */
#define VLLM_DSA                                                                                   \
    DSA, "--engine=vllm", "--engine_version=0.19.0", "-tp", "8", "--kv-cache-dtype", "fp8",        \
        "--kv-cache-memory-bytes", "60GiB"

static const uint64_t VLLM_BUDGET = 60ull << 30; /* 64,424,509,440 */
static const uint64_t DSA_LAYER_PAGE = 41984 + 8448;
/* max_model_len 163,840 from the config: ceil(163,840 / 64) blocks. */
static const uint64_t DSA_BLOCKS_PER_REQUEST = 163840 / 64;

/* One vLLM stage object as the JSON plan writes it. At 0.19.0 the token
 * line is blocks x 64 (one group); the concurrency is given as text, its
 * shortest decimal. */
static void vllm_stage(char *buf, size_t cap, unsigned stage, unsigned first, unsigned count,
                       const char *concurrency)
{
    uint64_t bytes_per_block = count * DSA_LAYER_PAGE;
    uint64_t blocks = VLLM_BUDGET / bytes_per_block;
    snprintf(buf, cap,
             "{\"stage\": %u, \"layer_first\": %u, \"layer_count\": %u, \"cache_layers\": %u, "
             "\"group_size\": %u, \"bytes_per_block\": %llu, \"budget\": %llu, "
             "\"num_gpu_blocks\": %llu, \"gpu_kv_cache_tokens\": %llu, \"max_concurrency\": %s, "
             "\"check_need\": %llu}",
             stage, first, count, 2 * count, 2 * count, (unsigned long long)bytes_per_block,
             (unsigned long long)VLLM_BUDGET, (unsigned long long)blocks,
             (unsigned long long)(blocks * 64), concurrency,
             (unsigned long long)(DSA_BLOCKS_PER_REQUEST * bytes_per_block));
}

/* The worked example of two stages: 31 | 30 layers (vLLM's cut gives the
 * extra layer walking back from the second-to-last stage). Stage 0:
 * 31 x 50,432 = 1,563,392 bytes a block, 41,208 blocks, 41,208 x 64 =
 * 2,637,312 tokens, 41,208 / 2,560 = 16.096875, and the check of its own
 * layers 2,560 x 1,563,392 = 4,002,283,520 bytes. Stage 1: 1,512,960 bytes,
 * 42,581 blocks, 2,725,184 tokens, 42,581 / 2,560 = 16.633203125. */
static void test_vllm_two_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, VLLM_DSA, "-pp", "2");
    char s0[512], s1[512], list[1100];
    vllm_stage(s0, sizeof s0, 0, 0, 31, "16.096875");
    vllm_stage(s1, sizeof s1, 1, 31, 30, "16.633203125");
    assert_int_equal(31 * DSA_LAYER_PAGE, 1563392);
    assert_int_equal(VLLM_BUDGET / 1563392, 41208);
    assert_int_equal(VLLM_BUDGET / 1512960, 42581);

    /* The figure API: one JSON text a list, reachable by name. */
    kvshard_figure f = tu_engine_figure(p, "pp_partition");
    assert_int_equal(f.type, KVSHARD_FIGURE_JSON);
    assert_string_equal(f.text_value, "[31, 30]");
    f = tu_engine_figure(p, "stages");
    assert_int_equal(f.type, KVSHARD_FIGURE_JSON);
    snprintf(list, sizeof list, "[%s, %s]", s0, s1);
    assert_string_equal(f.text_value, list);
    /* The same figure by its index, in the JSON object's order: last. */
    size_t n = kvshard_plan_engine_figure_count(p);
    kvshard_figure at = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_engine_figure_at(&at, p, n - 1), KVSHARD_OK);
    assert_string_equal(at.name, "stages");
    assert_ptr_equal(at.text_value, f.text_value);

    /* The JSON plan: the partition after pp_size, one stage a line. */
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"pp_size\": 2,\n             \"pp_partition\": [31, 30], "
                             "\"binding_stage\": 0,");
    char lines[1200];
    snprintf(lines, sizeof lines,
             "\"stages\": [\n               %s,\n               %s\n"
             "             ]},\n",
             s0, s1);
    tu_assert_contains(json, lines);
    free(json);
    kvshard_plan_free(p);
}

/* One stage holds every layer: 61 x 50,432 = 3,076,352 bytes a block and
 * 64,424,509,440 / 3,076,352 = 20,941 blocks, 20,941 / 2,560 = 8.180078125. */
static void test_vllm_one_stage(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, VLLM_DSA);
    assert_int_equal(VLLM_BUDGET / (61 * DSA_LAYER_PAGE), 20941);
    char s0[512], list[520];
    vllm_stage(s0, sizeof s0, 0, 0, 61, "8.180078125");
    snprintf(list, sizeof list, "[%s]", s0);
    assert_string_equal(tu_engine_figure(p, "stages").text_value, list);
    assert_string_equal(tu_engine_figure(p, "pp_partition").text_value, "[61]");
    /* The stage's figures are the engine's own at one stage. */
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 20941);
    assert_int_equal(tu_efig(p, "group_size"), 122);
    kvshard_plan_free(p);

    /* Without a budget: the sizes, and null for what needs one. */
    TU_PLAN(&p, DSA, "--engine=vllm", "--engine_version=0.19.0", "-tp", "8", "-pp", "2",
            "--kv-cache-dtype", "fp8");
    tu_assert_contains(tu_engine_figure(p, "stages").text_value,
                       "{\"stage\": 1, \"layer_first\": 31, \"layer_count\": 30, \"cache_layers\": "
                       "60, \"group_size\": 60, \"bytes_per_block\": 1512960, \"budget\": null, "
                       "\"num_gpu_blocks\": null, \"gpu_kv_cache_tokens\": null, "
                       "\"max_concurrency\": null, \"check_need\": null}]");
    kvshard_plan_free(p);
}

/* SGLang's stages of DeepSeek-V3.2 at bfloat16 KV, page 64: 30 | 31 layers
 * (the last stage takes the extra one); a layer's cell is the latent
 * 1,152 and the index key 132 bytes; the rest 40 GiB = 42,949,672,960. */
static void sglang_stage(char *buf, size_t cap, unsigned stage, unsigned first, unsigned count,
                         uint64_t common)
{
    uint64_t cell = (1152 + 132) * (uint64_t)count;
    uint64_t tokens = (40ull << 30) / cell;
    tokens -= tokens % 64;
    /* Every stage allocates the common count and one page more. */
    uint64_t pool = (common + 64) * cell;
    snprintf(buf, cap,
             "{\"stage\": %u, \"layer_first\": %u, \"layer_count\": %u, \"kv_layers\": %u, "
             "\"cell_bytes\": %llu, \"max_total_num_tokens\": %llu, \"k_cache_bytes\": null, "
             "\"v_cache_bytes\": null, \"kv_cache_bytes\": %llu}",
             stage, first, count, count, (unsigned long long)cell, (unsigned long long)tokens,
             (unsigned long long)pool);
}

/* Cells 38,520 and 39,804 bytes; tokens floor(40 GiB / cell) down to a
 * multiple of 64: 1,114,944 and 1,078,976. Stage 1 binds. */
static void test_sglang_two_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, DSA, "--engine=sglang", "--tp", "8", "--pp-size", "2",
            "--device_compute_capability", "9.0", "--memory_per_rank=40GiB");
    assert_int_equal(30 * (1152 + 132), 38520);
    assert_int_equal(31 * (1152 + 132), 39804);
    char s0[400], s1[400], lines[1000];
    sglang_stage(s0, sizeof s0, 0, 0, 30, 1078976);
    sglang_stage(s1, sizeof s1, 1, 30, 31, 1078976);
    tu_assert_contains(s0, "\"max_total_num_tokens\": 1114944,");
    tu_assert_contains(s1, "\"max_total_num_tokens\": 1078976,");
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"pp_partition\": [30, 31], ");
    snprintf(lines, sizeof lines,
             "\"stages\": [\n               %s,\n               %s\n"
             "             ]},\n",
             s0, s1);
    tu_assert_contains(json, lines);
    free(json);
    kvshard_plan_free(p);
}

/* gpt-oss-120b with the windows [128,131072] at 20 GiB: 18 layers each,
 * c_w = 2 x 8 x 64 x 18 x 2 = 36,864. M = floor(21,474,836,480 / 73,728)
 * = 291,271. Shares in binary32: share_128 = f32(64 / 65,600) gives
 * trunc(f32(21,474,836,480 x share) / 36,864) = 568 tokens, ceil(568 / 32)
 * = 18 blocks; the other window 581,973 tokens, capped by M: 291,271,
 * ceil(291,271 / 32) = 9,103 blocks. Neither window is above its blocks'
 * tokens, so neither is reduced. */
static void test_trtllm_windows(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--kv_cache_config.max_attention_window=[128,131072]",
            "--memory_per_rank=20GiB");
    assert_int_equal(2 * 8 * 64 * 18 * 2, 36864);
    assert_int_equal((20ull << 30) / 73728, 291271);
    assert_int_equal((291271 + 31) / 32, 9103);
    assert_int_equal((568 + 31) / 32, 18);
    const char *windows =
        "[{\"window\": 128, \"layers\": 18, \"bytes_per_token\": 36864, \"max_tokens\": 568, "
        "\"primary_blocks\": 18, \"adjusted_window\": 128}, "
        "{\"window\": 131072, \"layers\": 18, \"bytes_per_token\": 36864, \"max_tokens\": 291271, "
        "\"primary_blocks\": 9103, \"adjusted_window\": 131072}]";
    assert_string_equal(tu_engine_figure(p, "windows").text_value, windows);
    char *json = tu_plan_json(p);
    tu_assert_contains(json,
                       "\"windows\": [\n"
                       "               {\"window\": 128, \"layers\": 18, \"bytes_per_token\": "
                       "36864, \"max_tokens\": 568, \"primary_blocks\": 18, \"adjusted_window\": "
                       "128},\n"
                       "               {\"window\": 131072, \"layers\": 18, \"bytes_per_token\": "
                       "36864, \"max_tokens\": 291271, \"primary_blocks\": 9103, "
                       "\"adjusted_window\": 131072}\n"
                       "             ],\n");
    /* Its one stage holds the 36 attention layers at 73,728 bytes a token. */
    tu_assert_contains(json, "\"pp_partition\": [36], ");
    tu_assert_contains(json, "{\"stage\": 0, \"layer_first\": 0, \"layer_count\": 36, "
                             "\"kv_layers\": 36, \"kv_bytes_per_token\": 73728, \"budget\": "
                             "21474836480, \"max_tokens\": 291271}");
    free(json);
    kvshard_plan_free(p);

    /* Without windows the list is null. */
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--memory_per_rank=20GiB");
    assert_true(tu_efig_null(p, "windows"));
    kvshard_plan_free(p);
}

#define READERS 8

typedef struct reader {
    const kvshard_plan *plan;
    kvshard_figure stages;
    int rc;
} reader;

static void *read_stages(void *arg)
{
    reader *r = arg;
    r->stages = (kvshard_figure)KVSHARD_FIGURE_INIT;
    r->rc = kvshard_plan_engine_figure(&r->stages, r->plan, "stages");
    return NULL;
}

/* A plan's engine figures are made the first time they are read: threads
 * that read a fresh plan at once all get the one copy the plan keeps. */
static void test_threads_read_one_copy(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, VLLM_DSA, "-pp", "2");
    pthread_t threads[READERS];
    reader readers[READERS];
    for (int i = 0; i < READERS; i++) {
        readers[i].plan = p;
        assert_int_equal(pthread_create(&threads[i], NULL, read_stages, &readers[i]), 0);
    }
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    kvshard_figure again = tu_engine_figure(p, "stages");
    for (int i = 0; i < READERS; i++) {
        assert_int_equal(readers[i].rc, KVSHARD_OK);
        assert_int_equal(readers[i].stages.type, KVSHARD_FIGURE_JSON);
        assert_ptr_equal(readers[i].stages.text_value, again.text_value);
    }
    tu_assert_contains(again.text_value, "\"num_gpu_blocks\": 42581,");
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_two_stages),
        cmocka_unit_test(test_vllm_one_stage),
        cmocka_unit_test(test_sglang_two_stages),
        cmocka_unit_test(test_trtllm_windows),
        cmocka_unit_test(test_threads_read_one_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
