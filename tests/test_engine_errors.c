/* The exit statuses of the engine profiles' errors, under each of vllm,
 * sglang, xllm and trtllm: engine_version_invalid and engine_flag_value
 * given on the command line are bad usage (exit 2); every other error, and
 * any error located in a deployment file, is a refused plan (exit 1). The
 * messages themselves are the golden cases of tests/data/invalid. */
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLAMA KVSHARD_EXAMPLES "/models/llama3_1_8b.json"
#define SMOLLM KVSHARD_TEST_DATA "/trtllm/smollm2_135m.json"
#define INVALID KVSHARD_TEST_DATA "/invalid/"

/* Each profile's model and the inputs that let it plan. */
typedef struct profile_case {
    const char *engine;
    const char *model;
    const char *inputs;
} profile_case;

static const profile_case profiles[] = {
    {"vllm", LLAMA, "--max-model-len=4096"},
    {"sglang", LLAMA, "--context-length=4096"},
    {"xllm", LLAMA, "--memory_per_rank=1GiB"},
    {"trtllm", SMOLLM, "--device_memory_total=80GiB --peak_memory=20GiB"},
};
#define PROFILE_COUNT (sizeof profiles / sizeof profiles[0])

typedef struct run_result {
    int status;
    char *out;
    char *err;
} run_result;

/* `kvshard ARGS`: the caller quotes the paths in ARGS. */
static run_result kvshard(const char *args)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' %s", KVSHARD_CLI, args);
    run_result r;
    r.status = tu_run(command, &r.out, &r.err);
    assert_non_null(r.out);
    assert_non_null(r.err);
    return r;
}

/* Exit `status`, nothing on stdout, stderr starting with `prefix` and
 * holding `needle`. */
static void assert_refused(const char *args, int status, const char *prefix, const char *needle)
{
    run_result r = kvshard(args);
    bool starts = strncmp(r.err, prefix, strlen(prefix)) == 0;
    if (r.status != status || !starts || !strstr(r.err, needle))
        print_error("kvshard %s\nexit %d, stderr:\n%s\nexpected exit %d, a stderr starting "
                    "with\n%s\nholding\n%s\n",
                    args, r.status, r.err, status, prefix, needle);
    assert_int_equal(r.status, status);
    assert_true(starts);
    assert_non_null(strstr(r.err, needle));
    assert_string_equal(r.out, "");
    free(r.out);
    free(r.err);
}

/* ---- bad usage on the command line: exit 2 ------------------------------------------- */

static void test_version_invalid_on_command_line(void **state)
{
    (void)state;
    static const char *const invalid[PROFILE_COUNT] = {"0.20", "0.5", "latest", "1.1"};
    for (size_t i = 0; i < PROFILE_COUNT; i++) {
        char args[1024], needle[128];
        snprintf(args, sizeof args, "plan '%s' %s --engine=%s --engine_version=%s",
                 profiles[i].model, profiles[i].inputs, profiles[i].engine, invalid[i]);
        snprintf(needle, sizeof needle,
                 "engine_version_invalid: engine_version \"%s\" is not a version of the form "
                 "[v]X.Y.Z",
                 invalid[i]);
        assert_refused(args, 2, "kvshard: command line --engine_version: ", needle);
    }
}

/* A list of stage sizes of another length than the stages, under the
 * profiles with stages; xLLM has none, and its flag out of range is the
 * same bad usage. */
static void test_flag_value_on_command_line(void **state)
{
    (void)state;
    assert_refused("plan '" LLAMA "' --engine=vllm --max-model-len=4096 --world_size=2 "
                   "--pp_size=2 --device_memory_total=80GiB --non_kv_memory=20GiB,30GiB,30GiB",
                   2, "kvshard: command line --non_kv_memory: ",
                   "vllm profile: engine_flag_value: non_kv_memory has 3 sizes; pp_size is 2");
    assert_refused("plan '" LLAMA "' --engine=sglang --context-length=4096 --world_size=2 "
                   "--pp_size=2 --device_memory_free=80GiB --mem-fraction-static=0.8 "
                   "--non_kv_memory=20GiB,30GiB,30GiB",
                   2, "kvshard: command line --non_kv_memory: ",
                   "sglang profile: engine_flag_value: non_kv_memory has 3 sizes; pp_size is 2");
    assert_refused("plan '" LLAMA "' --engine=xllm --memory_per_rank=1GiB "
                   "--max_memory_utilization=1.5",
                   2, "kvshard: command line --max_memory_utilization: ",
                   "max_memory_utilization: 1.5 is out of range");
    assert_refused("plan '" SMOLLM "' --engine=trtllm --world_size=2 --pp_size=2 "
                   "--device_memory_total=80GiB --peak_memory=20GiB,30GiB,30GiB",
                   2, "kvshard: command line --peak_memory: ",
                   "trtllm profile: engine_flag_value: peak_memory has 3 sizes; pp_size is 2");
    assert_refused("plan '" SMOLLM "' --engine=trtllm --device_memory_total=80GiB "
                   "--peak_memory=20GiB --kv_cache_config.max_attention_window=[128,full]",
                   2, "kvshard: command line --kv_cache_config.max_attention_window: ",
                   "engine_flag_value: kv_cache_config.max_attention_window \"[128,full]\" is "
                   "not a list of windows");
}

/* ---- every other error on the command line: exit 1 ----------------------------------- */

static void test_version_unsupported_on_command_line(void **state)
{
    (void)state;
    static const char *const outside[PROFILE_COUNT] = {"0.8.0", "0.1.0", "99.0.0", "1.1.0rc2"};
    for (size_t i = 0; i < PROFILE_COUNT; i++) {
        char args[1024], needle[128];
        snprintf(args, sizeof args, "plan '%s' %s --engine=%s --engine_version=%s",
                 profiles[i].model, profiles[i].inputs, profiles[i].engine, outside[i]);
        snprintf(needle, sizeof needle, "%s profile: engine_version_unsupported: engine_version %s",
                 profiles[i].engine, outside[i]);
        assert_refused(args, 1, "command line --engine_version: ", needle);
    }
}

static void test_refusals_on_command_line(void **state)
{
    (void)state;
    /* 131,072 tokens x 128 KiB a token are 16 GiB, above the 10 GiB budget. */
    assert_refused("plan '" LLAMA "' --engine=vllm --max-model-len=131072 "
                   "--memory_per_rank=10GiB",
                   1, "command line --max-model-len: ",
                   "vllm profile: max_model_len_does_not_fit: one request of max_model_len "
                   "131072 tokens needs 8192 blocks of 2097152 bytes");
    assert_refused("plan '" LLAMA "' --engine=sglang --context-length=4096 --world_size=2 "
                   "--pp_size=2 --speculative-num-draft-tokens=3 --memory_per_rank=1GiB",
                   1, "command line ", "sglang profile: pp_speculative_refused: --pp-size 2");
    assert_refused("plan '" LLAMA "' --engine=xllm --memory_per_rank=1GiB --world_size=2 "
                   "--pp_size=2",
                   1, "command line --pp_size: ",
                   "xllm profile: pp_engine: pp_size 2: xLLM has no pipeline parallelism");
    assert_refused("plan '" SMOLLM "' --engine=trtllm --world_size=8 --tp_size=2 "
                   "--device_memory_total=80GiB --peak_memory=20GiB",
                   1, "command line --tp_size: ",
                   "trtllm profile: world: world_size 8 is not the engine's 2 ranks "
                   "(--tp_size 2 x --pp_size 1)");
}

/* ---- any error in a deployment file: exit 1 ------------------------------------------ */

static void test_errors_in_a_file(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        const char *at; /* LINE:COLUMN: */
        const char *needle;
    } cases[] = {
        {"engine_version_invalid", "5:19: ", "engine_version_invalid: "},
        {"engine_sglang_version_invalid", "5:19: ", "engine_version_invalid: "},
        {"engine_xllm_version_invalid", "5:19: ", "engine_version_invalid: "},
        {"engine_trtllm_version_invalid", "5:19: ", "engine_version_invalid: "},
        {"engine_non_kv_memory_stages", "10:18: ", "vllm profile: engine_flag_value: "},
        {"engine_sglang_flag_value", "11:18: ", "sglang profile: engine_flag_value: "},
        {"range_utilization", "4:27: ", "max_memory_utilization: 1.2 is out of range"},
        {"trtllm_peak_memory_stages", "9:16: ", "trtllm profile: engine_flag_value: "},
        {"trtllm_window_list", "5:41: ", "engine_flag_value: "},
        {"engine_trtllm_world", "5:12: ", "trtllm profile: world: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512], prefix[512];
        snprintf(args, sizeof args, "plan '" INVALID "%s.yaml'", cases[i].file);
        snprintf(prefix, sizeof prefix, INVALID "%s.yaml:%s", cases[i].file, cases[i].at);
        assert_refused(args, 1, prefix, cases[i].needle);
    }
}

/* ---- fit ranks under every engine profile -------------------------------------------- */

/* fit_profile refuses only a profile fit cannot rank by: never these four. */
static void test_fit_under_every_profile(void **state)
{
    (void)state;
    for (size_t i = 0; i < PROFILE_COUNT; i++) {
        char args[512], header[64];
        snprintf(args, sizeof args,
                 "fit '" LLAMA "' --engine=%s --gpus=2 --device_memory=80GiB "
                 "--weights_total=16060522496 --context_length=8192",
                 profiles[i].engine);
        run_result r = kvshard(args);
        if (r.status != 0)
            print_error("kvshard %s\nexit %d, stderr:\n%s\n", args, r.status, r.err);
        assert_int_equal(r.status, 0);
        snprintf(header, sizeof header, "fit under %s ", profiles[i].engine);
        assert_true(strncmp(r.out, header, strlen(header)) == 0);
        assert_null(strstr(r.out, "fit_profile"));
        assert_null(strstr(r.err, "fit_profile"));
        free(r.out);
        free(r.err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_invalid_on_command_line),
        cmocka_unit_test(test_flag_value_on_command_line),
        cmocka_unit_test(test_version_unsupported_on_command_line),
        cmocka_unit_test(test_refusals_on_command_line),
        cmocka_unit_test(test_errors_in_a_file),
        cmocka_unit_test(test_fit_under_every_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
