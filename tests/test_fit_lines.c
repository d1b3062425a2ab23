/* kvshard fit without --engine: each engine's line is that engine's own fit
 * of row 1's layout, so the line given back to `kvshard plan --engine`
 * plans the figures it states; an engine that cannot serve that layout has
 * no line, and the fit names why. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
/* Qwen3.5-35B-A3B text weights in bf16 on 4 GPUs of 32 GiB. */
#define DEVICE_FLAGS                                                                               \
    "--gpus=4 --device_memory=32GiB --weights_total=69321223296 --weights_experts=64424509440"
#define PLAN_DEVICE                                                                                \
    "--device_memory=32GiB --weights_total=69321223296 --weights_experts=64424509440 "            \
    "--context_length=32768 --format=json"

/* The fit's text, and the flags on the line that starts with `engine`. */
static void engine_line(char *flags, size_t cap, const char *engine)
{
    char command[2048], marker[32];
    snprintf(command, sizeof command, "'%s' fit '%s' " DEVICE_FLAGS " --context_length=32768",
             KVSHARD_CLI, MODEL);
    char *out = tu_run_ok(command);
    snprintf(marker, sizeof marker, "\n%-12s ", engine);
    tu_line_after(flags, cap, out, marker);
    free(out);
}

static char *plan_json(const char *engine, const char *flags)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' plan '%s' --engine=%s %s " PLAN_DEVICE, KVSHARD_CLI,
             MODEL, engine, flags);
    return tu_run_ok(command);
}

/* Row 1 is kvshard's T = 2, D = 2 (28 a replica). Under vLLM 0.28.0 at
 * 0.92: weights 18,554,484,288 and the reserve 1,717,986,918 leave
 * ceil(34,359,738,368 x 0.92) - 20,272,471,206 = 11,338,488,093; pages of
 * 1,081,344 B (a block of 1,056 tokens) in 4 groups of 10 give
 * floor(floor(11,338,488,093 / 1,081,344) / 10) = 1,048 blocks, 1,047
 * usable; a request takes ceil(32,768 / 1,056) + 3 x 2 = 38: 27 a replica,
 * and int(1,048 / 38 x 32,768) = 903,706 tokens. */
static void test_vllm_line_replans(void **state)
{
    (void)state;
    char flags[1024];
    engine_line(flags, sizeof flags, "vllm");
    assert_string_equal(flags, "--tensor-parallel-size=2 --data-parallel-size=2 "
                               "--gpu-memory-utilization=0.92 --max-model-len=32768 "
                               "--max-num-seqs=27");
    char *out = plan_json("vllm", flags);
    assert_non_null(strstr(out, "\"num_gpu_blocks\": 1048"));
    assert_non_null(strstr(out, "\"gpu_kv_cache_tokens\": 903706"));
    assert_non_null(strstr(out, "\"max_num_seqs\": 27"));
    assert_non_null(strstr(out, "\"balanced_max_seqs\": 27"));
    assert_non_null(strstr(out, "\"budget\": 11338488093"));
    free(out);
}

/* Under SGLang 0.5.21 the fraction fit states, 0.9, and no reserve: 19
 * requests a worker and 179 state slots a worker, told for both workers. */
static void test_sglang_line_replans(void **state)
{
    (void)state;
    char flags[1024];
    engine_line(flags, sizeof flags, "sglang");
    assert_string_equal(flags, "--tp-size=4 --dp-size=2 --enable-dp-attention "
                               "--mem-fraction-static=0.9 --context-length=32768 "
                               "--max-running-requests=38 --max-mamba-cache-size=358");
    char *out = plan_json("sglang", flags);
    assert_non_null(strstr(out, "\"max_total_num_tokens\": 631777"));
    assert_non_null(strstr(out, "\"max_mamba_cache_size\": 179"));
    assert_non_null(strstr(out, "\"max_running_requests\": 19"));
    assert_non_null(strstr(out, "\"concurrency\": 19"));
    free(out);
}

static char *fit_output(const char *extra)
{
    char command[2048];
    snprintf(command, sizeof command, "'%s' fit '%s' " DEVICE_FLAGS " %s", KVSHARD_CLI, MODEL,
             extra);
    return tu_run_ok(command);
}

/* An engine with no line for row 1 says why, in the text and in
 * recommendation.engine_reasons; its flags and env are null. */
static void test_reasons(void **state)
{
    (void)state;
    /* Without a context length row 1 splits layers (T = 4, S = 2), which
     * neither engine does. */
    char *out = fit_output("");
    assert_non_null(strstr(out, "\nvllm         no line: engine_split_unsupported\n"
                                "sglang       no line: engine_split_unsupported\n"));
    free(out);
    out = fit_output("--format=json");
    assert_non_null(strstr(out, "\"flags\": {\"kvshard\": [\"--world_size=4\", "
                                "\"--enable_layerwise_split=true\", \"--layerwise_split_size=2\", "
                                "\"--ownership=ordinal\"],\n"
                                "                              \"xllm\": null,\n"
                                "                              \"vllm\": null,\n"
                                "                              \"sglang\": null,\n"
                                "                              \"trtllm\": null},\n"
                                "                     \"env\": {\"xllm\": null, \"vllm\": null, "
                                "\"sglang\": null, \"trtllm\": null},\n"
                                "                     \"engine_reasons\": {\"xllm\": "
                                "\"engine_split_unsupported\", \"vllm\": "
                                "\"engine_split_unsupported\", \"sglang\": "
                                "\"engine_split_unsupported\", \"trtllm\": "
                                "\"engine_split_unsupported\"}}"));
    free(out);
    /* Two stages of TP 2: SGLang covers no stages of a model with state
     * layers; the vllm profile fills each stage's non_kv_memory with its
     * own weights (test_fit works its line out). */
    out = fit_output("--context_length=32768 --max_pp_size=4");
    assert_non_null(strstr(out, "\nvllm         VLLM_PP_LAYER_PARTITION=20,20 "
                                "--tensor-parallel-size=2 --pipeline-parallel-size=2 "
                                "--gpu-memory-utilization=0.92 --max-model-len=32768 "
                                "--max-num-seqs=61\n"
                                "sglang       no line: engine_unsupported\n"));
    free(out);
    out = fit_output("--context_length=32768 --max_pp_size=4 --format=json");
    assert_non_null(strstr(out, "\"engine_reasons\": {\"xllm\": \"pp_engine\", \"vllm\": null, "
                                "\"sglang\": \"engine_unsupported\", \"trtllm\": "
                                "\"engine_unsupported\"}}"));
    free(out);
    /* Where the line exists the reason is null. */
    out = fit_output("--context_length=32768 --format=json");
    assert_non_null(strstr(out, "\"engine_reasons\": {\"xllm\": null, \"vllm\": null, "
                                "\"sglang\": null, \"trtllm\": \"engine_unsupported\"}}"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_line_replans),
        cmocka_unit_test(test_sglang_line_replans),
        cmocka_unit_test(test_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
