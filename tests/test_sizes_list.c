/* A list of sizes, one a pipeline stage (non_kv_memory, peak_memory), as
 * long as the plan's stages make it: kept whole by the settings and the
 * plan, never cut, and refused by name past a plan's most stages or its
 * longest text. Figures worked out from vLLM's rule beside them. */
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLAMA "models/llama3_1_8b.json"
#define GIB (1ull << 30)
#define STAGES 16

/* Llama 3.1 8B on 16 stages of one rank: 2 layers a stage, each 2 x 8 KV
 * heads x 128 x 2 bytes = 4,096 B a token, so 8,192 B a token a stage and
 * vLLM's block of 16 tokens 131,072 B. */
#define STAGE_BLOCK (16ull * 2 * 4096)

/* Stage s's non_kv_memory is (10 + s) GiB: "10GiB,11GiB,...,25GiB", 95
 * characters, more than a text setting's 63. */
static void sixteen_sizes(char *out, size_t cap)
{
    size_t used = 0;
    for (int s = 0; s < STAGES; s++)
        used += (size_t)snprintf(out + used, cap - used, "%s%dGiB", s ? "," : "", 10 + s);
}

#define VLLM_SIXTEEN_STAGES                                                                        \
    LLAMA, "--engine=vllm", "-tp", "1", "-pp", "16", "--max-model-len", "8192",                    \
        "--device_memory_total", "80GiB"

/* vLLM requests ceil(80 GiB x 0.92) = 79,027,398,247 bytes; each stage's
 * workers have B_s = requested - (10 + s) GiB: B_0 = 68,289,980,007, so
 * floor(B_0 / 131,072) = 521,011 blocks, and every GiB more costs
 * 2^30 / 131,072 = 8,192 blocks. The last stage binds: B_15 =
 * 52,183,852,647, 398,131 blocks. */
static void test_vllm_sixteen_stage_budgets(void **state)
{
    (void)state;
    char list[128];
    sixteen_sizes(list, sizeof list);
    assert_int_equal(strlen(list), 95);
    uint64_t requested = (uint64_t)ceil(80.0 * GIB * 0.92);
    assert_int_equal(requested, 79027398247ull);
    kvshard_plan *p;
    TU_PLAN(&p, VLLM_SIXTEEN_STAGES, "--non_kv_memory", list);
    for (uint32_t s = 0; s < STAGES; s++) {
        kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
        assert_int_equal(kvshard_plan_rank_memory(&m, p, s), KVSHARD_OK);
        assert_true(m.has_budget && m.has_num_blocks);
        assert_int_equal(m.budget, requested - (10 + s) * GIB);
        assert_int_equal(m.num_blocks, (requested - (10 + s) * GIB) / STAGE_BLOCK);
        assert_int_equal(m.num_blocks, 521011u - 8192u * s);
    }
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 398131);
    assert_int_equal(tu_efig(p, "binding_stage"), 15);
    assert_int_equal(tu_efig(p, "budget"), 52183852647ull);
    kvshard_plan_free(p);
}

/* The same list written as a YAML list in a deployment file plans the
 * same plan. */
static void test_yaml_list_of_sixteen(void **state)
{
    (void)state;
    char list[128], text[512];
    sixteen_sizes(list, sizeof list);
    snprintf(text, sizeof text,
             "model: models/llama3_1_8b.json\n"
             "parallel:\n  world_size: 16\n  pp_size: 16\n"
             "cache:\n  engine: vllm\n  max_model_len: 8192\n"
             "  device_memory_total: 80GiB\n  non_kv_memory: [%s]\n",
             list);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_string(&dep, text, strlen(text), "sixteen.yaml",
                                                KVSHARD_EXAMPLES, NULL, &err),
                 &err);
    kvshard_plan *from_file = NULL, *from_flags;
    tu_assert_ok(kvshard_deployment_plan(&from_file, dep, &err), &err);
    kvshard_deployment_free(dep);
    TU_PLAN(&from_flags, VLLM_SIXTEEN_STAGES, "--non_kv_memory", list);
    assert_int_equal(tu_efig(from_file, "num_gpu_blocks"), 398131);
    assert_int_equal(kvshard_plan_digest(from_file), kvshard_plan_digest(from_flags));
    kvshard_plan_free(from_file);
    kvshard_plan_free(from_flags);
}

/* The settings keep the list whole, and so does a copy of them. */
static void test_settings_keep_the_list_whole(void **state)
{
    (void)state;
    char list[128], back[256];
    sixteen_sizes(list, sizeof list);
    kvshard_settings *s = tu_settings("non_kv_memory", list, NULL);
    bool set = false;
    assert_int_equal(kvshard_settings_get(back, sizeof back, &set, s, "non_kv_memory"), KVSHARD_OK);
    assert_true(set);
    assert_string_equal(back, list);
    kvshard_settings *copy = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_settings_copy(&copy, s, NULL, &err), &err);
    kvshard_settings_free(s);
    assert_int_equal(kvshard_settings_get(back, sizeof back, &set, copy, "non_kv_memory"),
                     KVSHARD_OK);
    assert_string_equal(back, list);
    /* Set again, shorter: the new text replaces the old. */
    tu_set(copy, "non_kv_memory", "1GiB,2GiB");
    assert_int_equal(kvshard_settings_get(back, sizeof back, &set, copy, "non_kv_memory"),
                     KVSHARD_OK);
    assert_string_equal(back, "1GiB,2GiB");
    kvshard_settings_free(copy);
}

/* More sizes than a plan may have stages (256), or a text longer than 256
 * sizes of 31 characters and their commas (8,191), is refused by name. */
static void test_past_the_limits_refused(void **state)
{
    (void)state;
    size_t cap = 16384;
    char *list = malloc(cap);
    assert_non_null(list);
    size_t used = 0;
    for (int i = 0; i < 257; i++)
        used += (size_t)snprintf(list + used, cap - used, "%s1GiB", i ? "," : "");
    kvshard_settings *s = tu_settings(NULL);
    kvshard_error err;
    assert_int_equal(kvshard_settings_set(s, "non_kv_memory", list, NULL, &err), KVSHARD_ERANGE);
    /* The message shows the list's first 40 characters. */
    tu_assert_contains(err.message, "non_kv_memory: \"1GiB,1GiB,1GiB,1GiB,1GiB,1GiB,1GiB,1GiB,"
                                    "...\" has more than 256 sizes, one a stage of the 256 "
                                    "stages a plan may have");
    /* 200 sizes, each padded with spaces to 40 characters: 8,199 with the commas. */
    used = 0;
    for (int i = 0; i < 200; i++)
        used += (size_t)snprintf(list + used, cap - used, "%s%40s", i ? "," : "", "1GiB");
    assert_int_equal(used, 8199);
    assert_int_equal(kvshard_settings_set(s, "peak_memory", list, NULL, &err), KVSHARD_ERANGE);
    tu_assert_contains(err.message, "peak_memory: \"");
    tu_assert_contains(err.message, "...\" is longer than the 8191 characters it may have");
    /* Nothing was kept of either. */
    bool set = true;
    char back[64];
    assert_int_equal(kvshard_settings_get(back, sizeof back, &set, s, "non_kv_memory"), KVSHARD_OK);
    assert_false(set);
    kvshard_settings_free(s);
    free(list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_sixteen_stage_budgets),
        cmocka_unit_test(test_yaml_list_of_sixteen),
        cmocka_unit_test(test_settings_keep_the_list_whole),
        cmocka_unit_test(test_past_the_limits_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
