/* The first user: Qwen3.5-35B-A3B at 128k tokens on 8 x H100 80 GB.
 * `kvshard fit --engine=NAME` prints a launch line; that line, given back to
 * `kvshard plan` under the same engine with the same device flags, must plan
 * the figures the fit's row 1 printed, or the engine would start with other
 * pools than the ones fit promised. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define DEVICE                                                                                     \
    "--device_memory=81559MiB --context_length=131072 --weights_total=69321223296 "                \
    "--weights_experts=64424509440"

/* Row 1's launch line for `engine`, copied into flags. */
static void launch_line(char *flags, size_t cap, const char *engine)
{
    char command[2048];
    snprintf(command, sizeof command, "'%s' fit '%s' --engine=%s --gpus=8 " DEVICE, KVSHARD_CLI,
             MODEL, engine);
    char *out = tu_run_ok(command);
    char marker[64];
    snprintf(marker, sizeof marker, "\nrecommended: %s ", engine);
    tu_line_after(flags, cap, out, marker);
    free(out);
}

static char *plan_json(const char *engine, const char *flags)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' plan '%s' --engine=%s %s " DEVICE " --format=json",
             KVSHARD_CLI, MODEL, engine, flags);
    return tu_run_ok(command);
}

/* vLLM 0.28.0 by hand, T = 2 and D = 4 on GPUs of 85,520,809,984 bytes:
 * weights 4,896,713,856 dense / 2 + 64,424,509,440 experts / 8 =
 * 10,501,420,608; reserve floor(device / 20) = 4,276,040,499; the engine
 * requests ceil(device x 0.92) = 78,679,145,186, so B = 63,901,684,079.
 * One KV head a rank makes the page 1,081,344 bytes (a 1,056-token block;
 * 10 full and 30 GDN layers in 4 groups of 10): floor(floor(B / page) / 10)
 * = floor(59,094 / 10) = 5,909 blocks, 5,908 usable. A request of 131,072
 * tokens in mode align takes ceil(131,072 / 1,056) + 3 x 2 = 131 blocks:
 * 45 sequences, and int(5,909 / 131 x 131,072) = 5,912,247 tokens. */
static void test_vllm_line_replans(void **state)
{
    (void)state;
    char flags[1024];
    launch_line(flags, sizeof flags, "vllm");
    assert_string_equal(flags, "--tensor-parallel-size=2 --data-parallel-size=4 "
                               "--gpu-memory-utilization=0.92 --max-model-len=131072 "
                               "--max-num-seqs=45");
    char *out = plan_json("vllm", flags);
    tu_assert_contains(out, "\"budget\": 63901684079");
    tu_assert_contains(out, "\"num_gpu_blocks\": 5909");
    tu_assert_contains(out, "\"usable_blocks\": 5908");
    tu_assert_contains(out, "\"blocks_per_request\": 131");
    tu_assert_contains(out, "\"gpu_kv_cache_tokens\": 5912247");
    tu_assert_contains(out, "\"max_num_seqs\": 45");
    tu_assert_contains(out, "\"balanced_max_seqs\": 45");
    free(out);
}

/* SGLang: the line states the fraction fit assumed and the pools it
 * predicted (D x s requests, D x K state slots); planned back, each of the
 * four DP-attention workers gets the same token pool and serves s = 26. */
static void test_sglang_line_replans(void **state)
{
    (void)state;
    char flags[1024];
    launch_line(flags, sizeof flags, "sglang");
    assert_string_equal(flags, "--tp-size=8 --dp-size=4 --enable-dp-attention "
                               "--mem-fraction-static=0.9 --context-length=131072 "
                               "--max-running-requests=104 --max-mamba-cache-size=3900");
    char command[2048], *fit = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=sglang --gpus=8 " DEVICE " --format=json", KVSHARD_CLI, MODEL);
    assert_int_equal(tu_run(command, &fit, &err), 0);
    tu_assert_contains(fit, "\"tokens_per_replica\": 3412163");
    free(fit);
    free(err);
    char *out = plan_json("sglang", flags);
    tu_assert_contains(out, "\"max_total_num_tokens\": 3412163");
    tu_assert_contains(out, "\"max_mamba_cache_size\": 975");
    tu_assert_contains(out, "\"max_running_requests\": 26");
    tu_assert_contains(out, "\"concurrency\": 26");
    free(out);
}

/* kvshard's own line repeats the inputs that decide the row's sequences,
 * the KV dtype included: DeepSeek-V3.2 on 16 x 80 GiB with an fp8 cache fits 127
 * sequences a replica at T = 8, D = 2, S = 8 (a 656 + 132 B token a layer);
 * the same line planned without --kv_cache_dtype=fp8 would count bf16's
 * 1,152 + 132 B and hold fewer. */
static void test_kvshard_line_keeps_dtype(void **state)
{
    (void)state;
    char command[2048];
    const char *inputs = "--device_memory=80GiB --context_length=32768 "
                         "--weights_total=674030337216 --weights_experts=654068416512";
    snprintf(command, sizeof command,
             "'%s' fit '%s/models/deepseek_v3_2.json' --gpus=16 --kv_cache_dtype=fp8 %s",
             KVSHARD_CLI, KVSHARD_EXAMPLES, inputs);
    char *out = tu_run_ok(command);
    char line[1024];
    tu_line_after(line, sizeof line, out, "\nrecommended: kvshard plan ");
    free(out);
    tu_assert_contains(line, "--layerwise_split_size=8 --ownership=ordinal --max_seqs=127 ");
    tu_assert_contains(line, " --context_length=32768 --kv_cache_dtype=fp8");
    snprintf(command, sizeof command, "'%s' plan %s --format=json", KVSHARD_CLI, line);
    out = tu_run_ok(command);
    tu_assert_contains(out, "\"kv_cache_dtype\": \"fp8\"");
    tu_assert_contains(out, "\"concurrency\": 127");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_line_replans),
        cmocka_unit_test(test_sglang_line_replans),
        cmocka_unit_test(test_kvshard_line_keeps_dtype),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
