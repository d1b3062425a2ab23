/* The trtllm profile's LLM API options file (--extra_llm_api_options,
 * --config): its keys are read as the flags of their names, a
 * kv_cache_config key by its dotted name, and a flag wins over the file.
 * The figures are worked out by hand in the comments beside them. */
#include "test_util.h"

#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPT_OSS "trtllm/gpt_oss_120b.json"
#define SMOLLM "trtllm/smollm2_135m.json"

/* The text plan from its capacity lines on: the lines the engine logs. */
static char *capacity_text(const kvshard_plan *p)
{
    char *text = tu_plan_text(p);
    const char *at = strstr(text, "capacity   ");
    assert_non_null(at);
    size_t n = strlen(at);
    char *copy = malloc(n + 1);
    assert_non_null(copy);
    memcpy(copy, at, n + 1);
    free(text);
    return copy;
}

/* The DGX Spark example with disable_overlap_scheduler and max_batch_size
 * from the options file, as the playbook gives them, reproduces every
 * figure the flags do. */
static void test_spark_through_options_file(void **state)
{
    (void)state;
    char *options = tu_data_path("trtllm/spark_options.yaml");
    kvshard_plan *by_file, *by_flags;
    TU_PLAN(&by_file, GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3",
            "--extra_llm_api_options", options, "--device_memory_total=128526896333",
            "--peak_memory=122029829137");
    TU_PLAN(&by_flags, GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3",
            "--max_batch_size", "64", "--disable_overlap_scheduler",
            "--device_memory_total=128526896333", "--peak_memory=122029829137");
    /* e = 1 with the overlap scheduler off: ceil(8193 / 32) = 257 blocks,
     * 8224 tokens; available = int((128526896333 - 122029829137 + 8224 x
     * 73728) x 0.8999999761581421) = 6393065471; M = floor(6393065471 /
     * 73728) = 86711; ceil(86711 / 32) = 2710 blocks, 86720 tokens. */
    assert_int_equal(tu_efig(by_file, "tmp_kv_tokens"), 8224);
    assert_int_equal(tu_efig(by_file, "available_kv_bytes"), 6393065471ull);
    assert_int_equal(tu_efig(by_file, "max_tokens"), 86711);
    assert_int_equal(tu_efig(by_file, "num_blocks"), 2710);
    assert_int_equal(tu_efig(by_file, "pool_tokens"), 86720);
    assert_int_equal(tu_efig(by_file, "max_batch_size"), 64);
    assert_int_equal(tu_efig(by_file, "max_seq_len"), 86720);
    char *a = capacity_text(by_file), *b = capacity_text(by_flags);
    assert_string_equal(a, b);
    tu_assert_contains(a, "max_seq_len=86720, max_num_requests=64, max_num_tokens=8192, "
                          "max_batch_size=64\n");
    free(a);
    free(b);
    kvshard_plan_free(by_flags);
    kvshard_plan_free(by_file);
    /* --config is the same flag. */
    TU_PLAN(&by_file, GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3", "--config",
            options, "--device_memory_total=128526896333", "--peak_memory=122029829137");
    assert_int_equal(tu_efig(by_file, "num_blocks"), 2710);
    kvshard_plan_free(by_file);
    free(options);
}

/* A flag wins over the file, before or after it. */
static void test_flag_wins(void **state)
{
    (void)state;
    char *options = tu_data_path("trtllm/spark_options.yaml");
    kvshard_plan *p;
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--max_batch_size=8", "--config", options,
            "--memory_per_rank=8GiB");
    assert_int_equal(tu_efig(p, "max_batch_size"), 8);
    kvshard_plan_free(p);
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--config", options, "--max_batch_size=8",
            "--no-disable_overlap_scheduler", "--memory_per_rank=8GiB");
    assert_int_equal(tu_efig(p, "max_batch_size"), 8);
    /* The overlap scheduler on again: e = 2, ceil(8194 / 32) = 257 blocks
     * still; 8192 + 2 tokens need the same. */
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 8224);
    kvshard_plan_free(p);
    free(options);
}

/* The parallel sizes and the kv_cache_config keys. */
static void test_options_file_keys(void **state)
{
    (void)state;
    char *options = tu_data_path("trtllm/smollm2_options.yaml");
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--extra_llm_api_options", options,
            "--memory_per_rank=9723600000");
    /* Two stages of 15 layers, fp8: c = 2 x 3 x 64 x 15 x 1 = 5760. mem /
     * c = 1688125 tokens, above max_tokens: mem = 100000 x 5760, M =
     * 100000; ceil(100000 / 64) = 1563 blocks of 64, 100032 tokens. */
    assert_int_equal(tu_efig(p, "pp_size"), 2);
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 5760);
    assert_string_equal(tu_efig_text(p, "kv_cache_dtype"), "fp8");
    assert_int_equal(tu_efig(p, "tokens_per_block"), 64);
    assert_int_equal(tu_efig(p, "max_tokens"), 100000);
    assert_int_equal(tu_efig(p, "budget"), 576000000ull);
    assert_int_equal(tu_efig(p, "num_blocks"), 1563);
    assert_int_equal(tu_efig(p, "pool_tokens"), 100032);
    assert_int_equal(tu_efig(p, "max_seq_len"), 2049);
    kvshard_plan_free(p);
    free(options);
    /* The windows as a YAML list: the worked arithmetic of the windows,
     * 18 and 9103 blocks. */
    options = tu_data_path("trtllm/windows_options.yaml");
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--config", options, "--memory_per_rank=20GiB",
            "--context_length=32768");
    assert_int_equal(tu_efig(p, "max_tokens"), 291271);
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    assert_int_equal(c.num_blocks, 18 + 9103);
    assert_int_equal(c.concurrency, 4);
    kvshard_plan_free(p);
    free(options);
}

static void test_options_file_refusals(void **state)
{
    (void)state;
    char *unknown = tu_data_path("trtllm/options_unknown_key.yaml");
    char *speculative = tu_data_path("trtllm/options_speculative.yaml");
    TU_REFUSED(KVSHARD_EUNKNOWNKEY,
               "unknown key \"kv_cache_config.max_tokenz\" in extra_llm_api_options", GPT_OSS,
               "--engine=trtllm", "--config", unknown);
    TU_REFUSED(KVSHARD_EPROFILE,
               "trtllm profile: engine_unsupported: speculative_config in extra_llm_api_options "
               "changes the KV cache",
               GPT_OSS, "--engine=trtllm", "--config", speculative);
    TU_REFUSED(KVSHARD_ERANGE, "engine_flag_value: extra_llm_api_options \"extra.json\" is not a "
                               "YAML file",
               GPT_OSS, "--engine=trtllm", "--config", "extra.json");
    TU_REFUSED(KVSHARD_EIO, "extra_llm_api_options", GPT_OSS, "--engine=trtllm", "--config",
               "no_such_options.yaml");
    free(unknown);
    free(speculative);
    /* A name that reaches planning without the file read (set as a plain
     * setting) is refused by name, never planned without its keys. */
    kvshard_model *m = tu_load_model_text("{\"num_hidden_layers\": 2, \"num_attention_heads\": "
                                          "4, \"num_key_value_heads\": 4, \"head_dim\": 64, "
                                          "\"torch_dtype\": \"bfloat16\", "
                                          "\"max_position_embeddings\": 4096}");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_TRTLLM;
    kvshard_settings *s = tu_settings("extra_llm_api_options", "extra.yaml", NULL);
    o.settings = s;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EPROFILE);
    assert_non_null(strstr(err.message, "trtllm profile: engine_unsupported: an LLM API options "
                                        "file that reaches planning unread"));
    kvshard_settings_free(s);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spark_through_options_file),
        cmocka_unit_test(test_flag_wins),
        cmocka_unit_test(test_options_file_keys),
        cmocka_unit_test(test_options_file_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
