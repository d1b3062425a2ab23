/* Deployment files, flag overrides and option parsing (docs/planning.md, "The deployment file and
 * flags"). */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen, clock_gettime */
#include "test_util.h"

#include "kvshard/explore.h"

#include "deploy/flags.h"
#include "deploy/options.h"
#include "profile/profiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------ */

static kvshard_deployment *load_file_ok(const char *path)
{
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_load_file(&dep, path, NULL, &err);
    tu_assert_ok(rc, &err);
    assert_non_null(dep);
    return dep;
}

static kvshard_deployment *load_text_ok(const char *text, const char *base_dir)
{
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_load_string(&dep, text, strlen(text), "test.yaml", base_dir, NULL,
                                            &err);
    tu_assert_ok(rc, &err);
    assert_non_null(dep);
    return dep;
}

/* Load text that must fail with `code` at line:column of "test.yaml". */
static void load_text_fails(const char *text, int code, int line, int column)
{
    kvshard_deployment *dep = (kvshard_deployment *)(uintptr_t)0x5a5a;
    kvshard_error err;
    int rc = kvshard_deployment_load_string(&dep, text, strlen(text), "test.yaml", NULL, NULL,
                                            &err);
    if (rc != code || err.line != line || err.column != column)
        print_error("got %s at %d:%d (%s), expected %s at %d:%d\n", kvshard_strerror(rc),
                    err.line, err.column, err.message, kvshard_strerror(code), line, column);
    assert_int_equal(rc, code);
    assert_int_equal(err.code, code);
    assert_int_equal(err.line, line);
    assert_int_equal(err.column, column);
    assert_string_equal(err.source, "test.yaml");
    assert_true(err.message[0] != '\0');
    assert_ptr_equal(dep, (kvshard_deployment *)(uintptr_t)0x5a5a);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void assert_default_options(const kvshard_options *o)
{
    const kvshard_options d = KVSHARD_OPTIONS_INIT;
    assert_int_equal(o->size, d.size);
    assert_int_equal(o->world_size, d.world_size);
    assert_int_equal(o->dp_size, d.dp_size);
    assert_int_equal(o->cp_size, d.cp_size);
    assert_int_equal(o->enable_layerwise_split, d.enable_layerwise_split);
    assert_int_equal(o->layerwise_split_size, d.layerwise_split_size);
    assert_int_equal(o->ownership, d.ownership);
    assert_int_equal(o->is_draft, d.is_draft);
    assert_int_equal(o->kv_cache_dtype, d.kv_cache_dtype);
    assert_int_equal(o->block_size, d.block_size);
    assert_int_equal(o->memory_per_rank, d.memory_per_rank);
    assert_int_equal(o->max_seqs, d.max_seqs);
    assert_int_equal(o->num_speculative_tokens, d.num_speculative_tokens);
    assert_int_equal(o->scratch_layers, d.scratch_layers);
}

static bool options_equal(const kvshard_options *a, const kvshard_options *b)
{
    return a->size == b->size && a->world_size == b->world_size &&
           a->dp_size == b->dp_size && a->cp_size == b->cp_size &&
           a->enable_layerwise_split == b->enable_layerwise_split &&
           a->layerwise_split_size == b->layerwise_split_size && a->ownership == b->ownership &&
           a->is_draft == b->is_draft && a->kv_cache_dtype == b->kv_cache_dtype &&
           a->block_size == b->block_size && a->memory_per_rank == b->memory_per_rank &&
           a->max_seqs == b->max_seqs && a->num_speculative_tokens == b->num_speculative_tokens &&
           a->scratch_layers == b->scratch_layers;
}

/* ---- the shipped example -------------------------------------------------- */

static void test_example_tp4_options(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.size, sizeof o);
    assert_int_equal(o.world_size, 4);
    assert_int_equal(o.dp_size, 1);
    assert_int_equal(o.cp_size, 1);
    assert_true(o.enable_layerwise_split);
    assert_int_equal(o.layerwise_split_size, 2);
    assert_int_equal(o.ownership, KVSHARD_OWNERSHIP_ORDINAL);
    assert_false(o.is_draft);
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_AUTO);
    assert_int_equal(o.block_size, 16);
    assert_true(o.memory_per_rank == UINT64_C(21474836480));
    assert_int_equal(o.max_seqs, 128);
    assert_int_equal(o.num_speculative_tokens, 0);
    assert_int_equal(o.scratch_layers, 1);

    const kvshard_model *m = kvshard_deployment_model(dep);
    assert_non_null(m);
    assert_string_equal(kvshard_model_type(m), "qwen3_5_moe");
    assert_int_equal(kvshard_model_num_layers(m), 40);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 10);

    kvshard_plan *plan = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_OK);
    assert_int_equal(err.code, KVSHARD_OK);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 4);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 2);
    kvshard_capacity cap = KVSHARD_CAPACITY_INIT;
    kvshard_plan_capacity(&cap, plan);
    assert_true(cap.has_num_blocks);
    assert_int_equal(cap.num_blocks, 197493);
    assert_int_equal(cap.max_seqs, 128);
    const uint32_t even[] = {3, 11, 19, 27, 35};
    tu_assert_rank_layers(plan, 0, even, 5);
    kvshard_plan_free(plan);
    kvshard_deployment_free(dep);
    free(path);
}

/* ---- where the model comes from ------------------------------------------- */

static void test_relative_model_path_from_file(void **state)
{
    (void)state;
    /* The test runs in the build tree; ../models is resolved against nested/. */
    char *path = tu_data_path("deploy/nested/relative.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    const kvshard_model *m = kvshard_deployment_model(dep);
    assert_string_equal(kvshard_model_type(m), "tiny_dense");
    assert_int_equal(kvshard_model_num_layers(m), 8);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.world_size, 4);
    assert_true(o.enable_layerwise_split);
    assert_int_equal(o.layerwise_split_size, 2);
    assert_int_equal(o.ownership, KVSHARD_OWNERSHIP_GLOBAL);
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_FP8);
    assert_int_equal(o.block_size, 32);
    assert_true(o.memory_per_rank == UINT64_C(512) * 1024 * 1024);
    assert_int_equal(o.max_seqs, 64);
    assert_int_equal(o.num_speculative_tokens, 2);
    assert_int_equal(o.scratch_layers, 0);
    kvshard_deployment_free(dep);
    free(path);
}

static void test_relative_model_path_from_string(void **state)
{
    (void)state;
    /* base_dir given: relative to it. */
    kvshard_deployment *dep =
        load_text_ok("model: models/qwen3_5_35b_a3b.json\n", KVSHARD_EXAMPLES);
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(dep)), 40);
    kvshard_deployment_free(dep);

    char *nested = tu_data_path("deploy/nested");
    dep = load_text_ok("model: ../models/tiny.yaml\n", nested);
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(dep)), 8);
    kvshard_deployment_free(dep);

    /* An absolute path ignores base_dir. */
    char *abs_model = tu_example_path("models/llama3_1_8b.json");
    char text[1024];
    snprintf(text, sizeof text, "model: %s\n", abs_model);
    dep = load_text_ok(text, nested);
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(dep)), 32);
    kvshard_deployment_free(dep);

    /* base_dir NULL: relative to the working directory. */
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(KVSHARD_EXAMPLES), 0);
    kvshard_deployment *from_cwd = NULL;
    kvshard_error err;
    const char *rel = "model: models/qwen3_next_80b_a3b.json\n";
    int rc = kvshard_deployment_load_string(&from_cwd, rel, strlen(rel), NULL, NULL, NULL, &err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, KVSHARD_OK);
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(from_cwd)), 48);
    kvshard_deployment_free(from_cwd);

    /* A base_dir without the file: EIO at the model value, named "<string>". */
    kvshard_deployment *none = NULL;
    rc = kvshard_deployment_load_string(&none, rel, strlen(rel), NULL, nested, NULL, &err);
    assert_int_equal(rc, KVSHARD_EIO);
    assert_int_equal(err.code, KVSHARD_EIO);
    assert_string_equal(err.source, "<string>");
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 8);
    assert_non_null(strstr(err.message, "qwen3_next_80b_a3b.json"));
    assert_null(none);

    free(abs_model);
    free(nested);
}

static void test_inline_model(void **state)
{
    (void)state;
    const char *text = "model:\n"
                       "  model_type: inline_dense\n"
                       "  num_hidden_layers: 6\n"
                       "  num_attention_heads: 16\n"
                       "  num_key_value_heads: 8\n"
                       "  hidden_size: 2048\n"
                       "parallel:\n"
                       "  world_size: 8\n"
                       "  dp_size: 2\n"
                       "  enable_layerwise_split: true\n"
                       "  layerwise_split_size: 2\n"
                       "cache: {block_size: 64, memory_per_rank: 1GiB}\n";
    kvshard_deployment *dep = load_text_ok(text, NULL);
    const kvshard_model *m = kvshard_deployment_model(dep);
    assert_string_equal(kvshard_model_type(m), "inline_dense");
    assert_int_equal(kvshard_model_num_layers(m), 6);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 6);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.world_size, 8);
    assert_int_equal(o.dp_size, 2);
    assert_int_equal(o.layerwise_split_size, 2);
    assert_int_equal(o.block_size, 64);
    assert_true(o.memory_per_rank == UINT64_C(1) << 30);
    assert_int_equal(o.max_seqs, 0); /* unset: the profile's default, 256, applies */

    kvshard_plan *plan = NULL;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, NULL), KVSHARD_OK);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 4);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 2);
    /* The plan settles what the options left to the profile. */
    kvshard_options settled = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&settled, plan), KVSHARD_OK);
    assert_int_equal(settled.max_seqs, 256);
    assert_int_equal(settled.block_size, 64);
    assert_int_equal(settled.ownership, KVSHARD_OWNERSHIP_ORDINAL);
    const uint32_t even[] = {0, 2, 4};
    tu_assert_rank_layers(plan, 0, even, 3);
    kvshard_plan_free(plan);
    kvshard_deployment_free(dep);
}

static void test_bare_model_config(void **state)
{
    (void)state;
    char *path = tu_example_path("models/qwen3_next_80b_a3b.json");
    kvshard_deployment *dep = load_file_ok(path);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_default_options(&o);
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(dep)), 48);
    kvshard_plan *plan = NULL;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, NULL), KVSHARD_OK);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 1);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 1);
    kvshard_plan_free(plan);
    kvshard_deployment_free(dep);
    free(path);

    /* num_hidden_layers under text_config also makes a bare model config. */
    path = tu_example_path("models/qwen3_5_35b_a3b.json");
    dep = load_file_ok(path);
    kvshard_deployment_options(&o, dep);
    assert_default_options(&o);
    assert_string_equal(kvshard_model_type(kvshard_deployment_model(dep)), "qwen3_5_moe");
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(dep)), 40);
    kvshard_deployment_free(dep);
    free(path);

    /* From text, with deployment-like keys absent. */
    dep = load_text_ok("num_hidden_layers: 2\nnum_key_value_heads: 1\nhead_dim: 8\n", NULL);
    kvshard_deployment_options(&o, dep);
    assert_default_options(&o);
    kvshard_deployment_free(dep);
}

/* ---- overrides -------------------------------------------------------------- */

static void test_deployment_set_overrides(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    kvshard_error err;
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "8", "command line --world_size",
                                            &err),
                     KVSHARD_OK);
    assert_int_equal(err.code, KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "layerwise_split_size", "4", NULL, &err),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "ownership", "global", "flag", NULL), KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "memory_per_rank", "40GiB", "flag", NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "kv_cache_dtype", "fp8", "flag", NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "max_seqs", "64", "flag", NULL), KVSHARD_OK);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.world_size, 8);
    assert_int_equal(o.layerwise_split_size, 4);
    assert_int_equal(o.ownership, KVSHARD_OWNERSHIP_GLOBAL);
    assert_true(o.memory_per_rank == UINT64_C(40) << 30);
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_FP8);
    assert_int_equal(o.max_seqs, 64);
    /* untouched file values stay */
    assert_true(o.enable_layerwise_split);
    assert_int_equal(o.block_size, 16);
    assert_int_equal(o.scratch_layers, 1);

    /* A later override wins. */
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "4", "flag", NULL), KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "enable_layerwise_split", "false", "flag", NULL),
                     KVSHARD_OK);
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.world_size, 4);
    assert_false(o.enable_layerwise_split);
    kvshard_deployment_free(dep);
    free(path);
}

static void test_deployment_set_errors(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    kvshard_options before = KVSHARD_OPTIONS_INIT, after = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&before, dep);
    kvshard_error err;

    assert_int_equal(kvshard_deployment_set(dep, "tensor_parallel", "4", "command line", &err),
                     KVSHARD_EUNKNOWNKEY);
    assert_int_equal(err.code, KVSHARD_EUNKNOWNKEY);
    assert_string_equal(err.source, "command line");
    assert_int_equal(err.line, 0);
    assert_non_null(strstr(err.message, "tensor_parallel"));

    assert_int_equal(kvshard_deployment_set(dep, "world_size", "abc", "command line --world_size",
                                            &err),
                     KVSHARD_ETYPE);
    assert_string_equal(err.source, "command line --world_size");
    assert_int_equal(err.line, 0);
    assert_int_equal(err.column, 0);

    assert_int_equal(kvshard_deployment_set(dep, "world_size", "0", NULL, &err), KVSHARD_EPARALLEL);
    assert_string_equal(err.source, "override");
    assert_int_equal(kvshard_deployment_set(dep, "enable_layerwise_split", "maybe", NULL, &err),
                     KVSHARD_ETYPE);
    assert_int_equal(kvshard_deployment_set(dep, "ownership", "random", NULL, &err),
                     KVSHARD_ERANGE);
    assert_int_equal(kvshard_deployment_set(dep, "memory_per_rank", "20gb", NULL, &err),
                     KVSHARD_ETYPE);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "4", NULL, NULL), KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "x", NULL, NULL), KVSHARD_ETYPE);

    assert_int_equal(kvshard_deployment_set(NULL, "world_size", "4", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_set(dep, NULL, "4", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", NULL, NULL, &err), KVSHARD_EINVAL);

    kvshard_deployment_options(&after, dep);
    assert_true(options_equal(&before, &after));
    kvshard_deployment_free(dep);
    free(path);
}

/* ---- kvshard_options_set ------------------------------------------------------ */

typedef struct set_case {
    const char *key;
    const char *value;
    int code;
} set_case;

static void test_options_set_rejects(void **state)
{
    (void)state;
    static const set_case cases[] = {
        {"world_size", "0", KVSHARD_EPARALLEL},
        {"world_size", "-1", KVSHARD_EPARALLEL},
        {"world_size", "65537", KVSHARD_ERANGE},
        {"world_size", "18446744073709551616", KVSHARD_ERANGE},
        {"world_size", "abc", KVSHARD_ETYPE},
        {"world_size", "4x", KVSHARD_ETYPE},
        {"world_size", "4.0", KVSHARD_ETYPE},
        {"world_size", "", KVSHARD_ETYPE},
        {"dp_size", "0", KVSHARD_EPARALLEL},
        {"cp_size", "+0", KVSHARD_EPARALLEL},
        {"cp_size", "two", KVSHARD_ETYPE},
        {"layerwise_split_size", "0", KVSHARD_EPARALLEL},
        {"world_size", "65537", KVSHARD_ERANGE},
        /* Flags take gflags' booleans (true/false/1/0/yes/no/t/f/y/n, any
         * case); nothing else. */
        {"enable_layerwise_split", "on", KVSHARD_ETYPE},
        {"enable_layerwise_split", "", KVSHARD_ETYPE},
        {"enable_layerwise_split", "2", KVSHARD_ETYPE},
        {"is_draft", "nope", KVSHARD_ETYPE},
        {"ownership", "Global", KVSHARD_ERANGE},
        {"ownership", "round_robin", KVSHARD_ERANGE},
        {"kv_cache_dtype", "fp4", KVSHARD_ERANGE},
        {"kv_cache_dtype", "fp32", KVSHARD_ERANGE},
        {"state_dtype", "fp8", KVSHARD_ERANGE},
        {"state_dtype", "int8", KVSHARD_ERANGE},
        {"engine", "tgi", KVSHARD_ERANGE},
        {"context_length", "0", KVSHARD_ERANGE},
        {"context_length", "1073741825", KVSHARD_ERANGE},
        {"context_length", "32k", KVSHARD_ETYPE},
        /* Settings are not options. */
        {"max_memory_utilization", "0.5", KVSHARD_EUNKNOWNKEY},
        /* xLLM's flag name exists only under its profile. */
        {"max_seqs_per_batch", "8", KVSHARD_EUNKNOWNKEY},
        {"block_size", "0", KVSHARD_ERANGE},
        {"block_size", "1048577", KVSHARD_ERANGE},
        {"memory_per_rank", "20gb", KVSHARD_ETYPE},
        {"memory_per_rank", "20G", KVSHARD_ETYPE},
        {"memory_per_rank", "20gib", KVSHARD_ETYPE},
        {"memory_per_rank", "1.5", KVSHARD_ETYPE},
        {"memory_per_rank", "GiB", KVSHARD_ETYPE},
        {"memory_per_rank", "", KVSHARD_ETYPE},
        {"memory_per_rank", "-1", KVSHARD_ERANGE},
        {"memory_per_rank", "-20GiB", KVSHARD_ERANGE},
        {"memory_per_rank", "0", KVSHARD_ERANGE},
        {"memory_per_rank", "0GiB", KVSHARD_ERANGE},
        {"memory_per_rank", "99999999999TiB", KVSHARD_ERANGE},
        {"memory_per_rank", "16777216TiB", KVSHARD_ERANGE},
        {"memory_per_rank", "18446744073709551616", KVSHARD_ERANGE},
        {"max_seqs", "0", KVSHARD_ERANGE},
        {"max_seqs", "16777217", KVSHARD_ERANGE},
        {"num_speculative_tokens", "1025", KVSHARD_ERANGE},
        {"num_speculative_tokens", "-1", KVSHARD_ERANGE},
        {"scratch_layers", "1025", KVSHARD_ERANGE},
        {"tensor_parallel_size", "4", KVSHARD_EUNKNOWNKEY},
        {"World_size", "4", KVSHARD_EUNKNOWNKEY},
        {"", "4", KVSHARD_EUNKNOWNKEY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        const kvshard_options d = KVSHARD_OPTIONS_INIT;
        kvshard_error err;
        int rc = kvshard_options_set(&o, cases[i].key, cases[i].value, NULL, &err);
        if (rc != cases[i].code)
            print_error("%s=\"%s\": got %s, expected %s\n", cases[i].key, cases[i].value,
                        kvshard_strerror(rc), kvshard_strerror(cases[i].code));
        assert_int_equal(rc, cases[i].code);
        assert_int_equal(err.code, cases[i].code);
        assert_int_equal(err.line, 0);
        assert_true(err.message[0] != '\0');
        assert_true(options_equal(&o, &d));
        /* NULL err gives the same answer. */
        assert_int_equal(kvshard_options_set(&o, cases[i].key, cases[i].value, NULL, NULL),
                         cases[i].code);
        assert_true(options_equal(&o, &d));
    }
}

/* Settings by key take their own types and ranges; a failed set leaves the
 * settings as they were. */
static void test_settings_set_rejects(void **state)
{
    (void)state;
    static const struct {
        const char *key, *value;
        int code;
    } cases[] = {
        {"max_memory_utilization", "0", KVSHARD_ERANGE},
        {"max_memory_utilization", "1.5", KVSHARD_ERANGE},
        {"max_memory_utilization", "90%", KVSHARD_ETYPE},
        {"max_memory_utilization", "", KVSHARD_ETYPE},
        {"max_linear_state_cache_slots", "16777217", KVSHARD_ERANGE},
        {"device_memory_free", "0", KVSHARD_ERANGE},
        {"enable_prefix_cache", "maybe", KVSHARD_ETYPE},
        {"world_size", "4", KVSHARD_EUNKNOWNKEY},
        {"", "1", KVSHARD_EUNKNOWNKEY},
    };
    kvshard_settings *s = tu_settings("max_memory_utilization", "0.5", NULL);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_error err;
        int rc = kvshard_settings_set(s, cases[i].key, cases[i].value, NULL, &err);
        if (rc != cases[i].code)
            print_error("%s=\"%s\": got %s, expected %s\n", cases[i].key, cases[i].value,
                        kvshard_strerror(rc), kvshard_strerror(cases[i].code));
        assert_int_equal(rc, cases[i].code);
        assert_int_equal(err.code, cases[i].code);
        assert_true(err.message[0] != '\0');
        char text[32];
        bool set = false;
        assert_int_equal(kvshard_settings_get(text, sizeof text, &set, s, "max_memory_utilization"),
                         KVSHARD_OK);
        assert_true(set);
        assert_string_equal(text, "0.5");
    }
    /* A fraction's text is the shortest positional decimal that reads back
     * as the same double, so that it can be set again as it is. */
    static const char *const fractions[] = {"0.00001", "0.8", "0.1", "0.3333333333333333",
                                            "0.000000000000000000000000000001", "1"};
    for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
        char text[72];
        tu_set(s, "max_memory_utilization", fractions[i]);
        assert_int_equal(kvshard_settings_get(text, sizeof text, NULL, s, "max_memory_utilization"),
                         KVSHARD_OK);
        assert_string_equal(text, fractions[i]);
        tu_set(s, "max_memory_utilization", text);
    }
    tu_set(s, "max_memory_utilization", "0.50");
    char shortest[16];
    assert_int_equal(
        kvshard_settings_get(shortest, sizeof shortest, NULL, s, "max_memory_utilization"),
        KVSHARD_OK);
    assert_string_equal(shortest, "0.5");
    /* Every setting is listed with its type and bounds. */
    kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
    assert_int_equal(kvshard_setting_find(&info, "max_linear_state_cache_slots"), KVSHARD_OK);
    assert_int_equal(info.type, KVSHARD_SETTING_INTEGER);
    assert_int_equal(info.max, 1u << 24);
    assert_string_equal(info.default_value, "0");
    assert_int_equal(info.engine, KVSHARD_ENGINE_XLLM);
    assert_int_equal(kvshard_setting_find(&info, "max_memory_utilization"), KVSHARD_OK);
    assert_int_equal(info.type, KVSHARD_SETTING_FRACTION);
    assert_string_equal(info.default_value, "0.8");
    assert_int_equal(kvshard_setting_find(&info, "world_size"), KVSHARD_EUNKNOWNKEY);
    assert_int_equal(kvshard_setting_count(), 56);
    kvshard_settings_free(s);
}

/* The option table as the library publishes it. */
static void test_option_table(void **state)
{
    (void)state;
    assert_int_equal(kvshard_option_count(), 43); /* 29, and the 14 keys of comm: */
    kvshard_option_info info = KVSHARD_OPTION_INFO_INIT;
    assert_int_equal(kvshard_option_info_at(&info, 0), KVSHARD_OK);
    assert_string_equal(info.name, "world_size");
    assert_int_equal(info.kind, KVSHARD_SETTING_INTEGER);
    assert_int_equal(info.min, 1);
    assert_int_equal(info.max, KVSHARD_MAX_RANKS);
    assert_string_equal(info.default_value, "1");
    assert_string_equal(info.unit, "ranks");
    assert_string_equal(info.doc, "ranks, 1 to 65,536");
    assert_string_equal(info.section, "parallel");
    assert_false(info.unset_ok);
    assert_null(info.words);
    assert_int_equal(info.offset, offsetof(kvshard_options, world_size));
    assert_int_equal(kvshard_option_find(&info, "engine"), KVSHARD_OK);
    assert_int_equal(info.kind, KVSHARD_SETTING_WORD);
    assert_string_equal(info.default_value, "kvshard");
    assert_string_equal(info.doc, "kvshard, xllm, vllm, sglang or trtllm");
    assert_string_equal(info.section, "cache");
    static const char *const engines[] = {"kvshard", "xllm", "vllm", "sglang", "trtllm"};
    for (size_t i = 0; i < 5; i++) {
        assert_string_equal(info.words[i].text, engines[i]);
        assert_int_equal(info.words[i].value, (int)i);
    }
    assert_null(info.words[5].text);
    assert_int_equal(kvshard_option_find(&info, "activation_reserve"), KVSHARD_OK);
    assert_int_equal(info.kind, KVSHARD_SETTING_BYTES);
    assert_string_equal(info.default_value, "auto");
    assert_string_equal(info.words[0].text, "auto");
    assert_int_equal(info.words[0].value, -1);
    assert_int_equal(kvshard_option_find(&info, "pp_partition"), KVSHARD_OK);
    assert_int_equal(info.kind, KVSHARD_SETTING_COUNTS);
    assert_string_equal(info.unit, "the layers of each stage, as 31,30");
    assert_true(info.unset_ok);
    assert_int_equal(info.offset, offsetof(kvshard_options, pp_partition));
    assert_int_equal(kvshard_option_find(&info, "weights_per_rank"), KVSHARD_OK);
    assert_int_equal(info.kind, KVSHARD_SETTING_SIZES);
    assert_int_equal(info.offset, offsetof(kvshard_options, weights_per_rank));
    /* Compare's and fit's own inputs are no fields of kvshard_options. */
    assert_int_equal(kvshard_option_find(&info, "sweep_pp"), KVSHARD_OK);
    assert_true(info.offset == KVSHARD_OPTION_NO_FIELD);
    assert_int_equal(kvshard_option_find(&info, "gpus_per_node"), KVSHARD_OK);
    assert_true(info.offset == KVSHARD_OPTION_NO_FIELD);
    assert_int_equal(kvshard_option_find(&info, "block_size"), KVSHARD_OK);
    assert_string_equal(info.default_value, "none");
    assert_true(info.unset_ok);
    assert_int_equal(kvshard_option_find(&info, "memory_utilization"), KVSHARD_OK);
    assert_int_equal(info.kind, KVSHARD_SETTING_FRACTION);
    assert_string_equal(info.doc, "a fraction above 0, at most 1");
    /* Every row is found again by its name; settings are not options. The
     * rows follow the struct's fields. */
    size_t fields = 0, last = 0;
    for (size_t i = 0; i < kvshard_option_count(); i++) {
        kvshard_option_info again = KVSHARD_OPTION_INFO_INIT;
        assert_int_equal(kvshard_option_info_at(&info, i), KVSHARD_OK);
        assert_int_equal(kvshard_option_find(&again, info.name), KVSHARD_OK);
        assert_string_equal(again.name, info.name);
        if (info.offset == KVSHARD_OPTION_NO_FIELD)
            continue;
        assert_true(info.offset > last);
        assert_true(info.offset < sizeof(kvshard_options));
        last = info.offset;
        fields++;
    }
    assert_int_equal(fields, 27);
    assert_int_equal(kvshard_option_info_at(&info, 43), KVSHARD_EINVAL);
    assert_int_equal(kvshard_option_find(&info, "max_cache_size"), KVSHARD_EUNKNOWNKEY);
    info.size = 1;
    assert_int_equal(kvshard_option_info_at(&info, 0), KVSHARD_EINVAL);
}

static size_t flag_count(kvshard_engine engine)
{
    kvshard_flag_info f = KVSHARD_FLAG_INFO_INIT;
    size_t n = 0;
    while (kvshard_flag_info_at(&f, engine, n) == KVSHARD_OK)
        n++;
    return n;
}

/* Each engine's flags: spellings, the key each sets, and the dialect. */
static void test_flag_table(void **state)
{
    (void)state;
    /* Each with the 14 --comm_ flags, kvshard's own under every profile. */
    assert_int_equal(flag_count(KVSHARD_ENGINE_KVSHARD), 51);
    assert_int_equal(flag_count(KVSHARD_ENGINE_XLLM), 51);
    assert_int_equal(flag_count(KVSHARD_ENGINE_VLLM), 63);
    assert_int_equal(flag_count(KVSHARD_ENGINE_SGLANG), 64);
    kvshard_flag_info f = KVSHARD_FLAG_INFO_INIT;
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_KVSHARD, 0), KVSHARD_OK);
    assert_string_equal(f.name, "world_size");
    assert_string_equal(f.key, "world_size");
    assert_false(f.is_setting);
    assert_false(f.argparse);
    assert_true(f.recommends_flags);
    assert_true(f.read);
    assert_int_equal(f.reader, KVSHARD_ENGINE_KVSHARD);
    assert_string_equal(f.default_value, "1");
    /* xLLM: gflags, its own name for max_seqs, and a launch line fit writes. */
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_XLLM, 12), KVSHARD_OK);
    assert_string_equal(f.name, "max_seqs");
    assert_int_equal(f.also_count, 1);
    assert_string_equal(f.also[0], "max_seqs_per_batch");
    assert_string_equal(f.default_value, "200");
    assert_false(f.argparse);
    assert_true(f.recommends_flags);
    /* vLLM: argparse spellings, and its own words for the state dtype. */
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_VLLM, 16), KVSHARD_OK);
    assert_string_equal(f.name, "pp_size");
    assert_int_equal(f.also_count, 2);
    assert_string_equal(f.also[0], "pp");
    assert_string_equal(f.also[1], "pipeline-parallel-size");
    assert_true(f.argparse);
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_VLLM, 9), KVSHARD_OK);
    assert_string_equal(f.also[0], "mamba-ssm-cache-dtype");
    assert_string_equal(f.doc, "auto, float32, bfloat16 or float16");
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_VLLM, 44), KVSHARD_OK);
    assert_string_equal(f.name, "tensor-parallel-size");
    assert_string_equal(f.also[0], "tp");
    assert_string_equal(f.key, "tensor_parallel_size");
    assert_true(f.is_setting);
    assert_string_equal(f.default_value, "world_size / dp_size");
    /* An xLLM setting kvshard accepts and does not read. */
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_KVSHARD, 49), KVSHARD_OK);
    assert_string_equal(f.name, "engine_version");
    assert_false(f.read);
    assert_int_equal(f.reader, KVSHARD_ENGINE_XLLM);
    assert_string_equal(f.doc, "a release, 0.10.0 to 0.11.0");
    assert_int_equal(kvshard_flag_info_at(&f, KVSHARD_ENGINE_SGLANG, 64), KVSHARD_EINVAL);
    assert_int_equal(kvshard_flag_info_at(&f, (kvshard_engine)5, 0), KVSHARD_EINVAL);
}

static void test_options_set_every_key(void **state)
{
    (void)state;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_error err;
#define SET(k, v) assert_int_equal(kvshard_options_set(&o, (k), (v), NULL, &err), KVSHARD_OK)
    SET("world_size", "65536");
    assert_int_equal(o.world_size, 65536);
    SET("world_size", "+16");
    assert_int_equal(o.world_size, 16);
    SET("dp_size", "2");
    assert_int_equal(o.dp_size, 2);
    SET("cp_size", "1");
    assert_int_equal(o.cp_size, 1);
    SET("enable_layerwise_split", "true");
    assert_true(o.enable_layerwise_split);
    SET("enable_layerwise_split", "false");
    assert_false(o.enable_layerwise_split);
    SET("layerwise_split_size", "4");
    assert_int_equal(o.layerwise_split_size, 4);
    SET("ownership", "global");
    assert_int_equal(o.ownership, KVSHARD_OWNERSHIP_GLOBAL);
    SET("ownership", "ordinal");
    assert_int_equal(o.ownership, KVSHARD_OWNERSHIP_ORDINAL);
    SET("is_draft", "true");
    assert_true(o.is_draft);
    SET("kv_cache_dtype", "bf16");
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_BF16);
    SET("kv_cache_dtype", "fp16");
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_FP16);
    SET("kv_cache_dtype", "fp8");
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_FP8);
    SET("kv_cache_dtype", "auto");
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_AUTO);
    SET("block_size", "1048576");
    assert_int_equal(o.block_size, 1048576);
    SET("max_seqs", "16777216");
    assert_int_equal(o.max_seqs, 16777216);
    SET("num_speculative_tokens", "3");
    assert_int_equal(o.num_speculative_tokens, 3);
    SET("num_speculative_tokens", "0");
    assert_int_equal(o.num_speculative_tokens, 0);
    SET("scratch_layers", "0");
    assert_int_equal(o.scratch_layers, 0);
    SET("scratch_layers", "2");
    assert_int_equal(o.scratch_layers, 2);

    static const struct {
        const char *text;
        uint64_t bytes;
    } sizes[] = {
        {"1", 1},
        {"123456789", 123456789},
        {"18446744073709551615", UINT64_MAX},
        {"1B", 1},
        {"1KiB", UINT64_C(1) << 10},
        {"3KiB", UINT64_C(3) << 10},
        {"1MiB", UINT64_C(1) << 20},
        {"512 MiB", UINT64_C(512) << 20},
        {"20GiB", UINT64_C(21474836480)},
        {"2TiB", UINT64_C(2) << 40},
        {"16777215TiB", UINT64_C(16777215) << 40},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        SET("memory_per_rank", sizes[i].text);
        if (o.memory_per_rank != sizes[i].bytes)
            print_error("memory_per_rank=%s\n", sizes[i].text);
        assert_true(o.memory_per_rank == sizes[i].bytes);
    }
#undef SET

    /* Bad arguments. */
    assert_int_equal(kvshard_options_set(NULL, "world_size", "1", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_options_set(&o, NULL, "1", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_options_set(&o, "world_size", NULL, NULL, &err), KVSHARD_EINVAL);
    kvshard_options old = KVSHARD_OPTIONS_INIT;
    old.size = 99;
    assert_int_equal(kvshard_options_set(&old, "world_size", "2", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(old.world_size, 1);
}

/* ---- YAML values ------------------------------------------------------------- */

static void test_yaml_booleans_and_types(void **state)
{
    (void)state;
    /* Only plain true and false are booleans. */
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "parallel:\n"
                    "  enable_layerwise_split: yes\n",
                    KVSHARD_ETYPE, 3, 27);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "parallel:\n"
                    "  enable_layerwise_split: True\n",
                    KVSHARD_ETYPE, 3, 27);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "parallel:\n"
                    "  enable_layerwise_split: \"true\"\n",
                    KVSHARD_ETYPE, 3, 27);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "parallel:\n"
                    "  is_draft: 'false'\n",
                    KVSHARD_ETYPE, 3, 13);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "parallel:\n"
                    "  world_size: !!str 4\n",
                    KVSHARD_ETYPE, 3, 15);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "cache:\n"
                    "  memory_per_rank: 1 gb\n",
                    KVSHARD_ETYPE, 3, 20);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "cache:\n"
                    "  memory_per_rank: 99999999999TiB\n",
                    KVSHARD_ERANGE, 3, 20);
    load_text_fails("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                    "cache:\n"
                    "  memory_per_rank: 0\n",
                    KVSHARD_ERANGE, 3, 20);

    kvshard_deployment *dep =
        load_text_ok("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                     "parallel:\n"
                     "  enable_layerwise_split: true\n"
                     "  is_draft: false\n"
                     "cache:\n"
                     "  memory_per_rank: 3MiB\n"
                     "  kv_cache_dtype: fp16\n",
                     NULL);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_true(o.enable_layerwise_split);
    assert_false(o.is_draft);
    assert_true(o.memory_per_rank == UINT64_C(3) << 20);
    assert_int_equal(o.kv_cache_dtype, KVSHARD_DTYPE_FP16);
    kvshard_deployment_free(dep);

    /* Empty sections are allowed and keep the defaults. */
    dep = load_text_ok("model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                       "parallel:\n"
                       "cache: ~\n",
                       NULL);
    kvshard_deployment_options(&o, dep);
    assert_default_options(&o);
    kvshard_deployment_free(dep);
}

/* ---- planning errors point at the key responsible -------------------------------- */

static void test_plan_error_at_file_key(void **state)
{
    (void)state;
    char *path = tu_data_path("deploy/split3.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    kvshard_plan *plan = (kvshard_plan *)(uintptr_t)0x77;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_ESPLIT);
    assert_ptr_equal(plan, (kvshard_plan *)(uintptr_t)0x77);
    assert_int_equal(err.code, KVSHARD_ESPLIT);
    assert_true(ends_with(err.source, "deploy/split3.yaml"));
    assert_int_equal(err.line, 5);
    assert_int_equal(err.column, 25);
    assert_non_null(strstr(err.message, "3"));
    /* NULL err: same code. */
    assert_int_equal(kvshard_deployment_plan(&plan, dep, NULL), KVSHARD_ESPLIT);

    /* An override of the responsible key moves the blame to its origin. */
    assert_int_equal(kvshard_deployment_set(dep, "layerwise_split_size", "3",
                                            "command line --layerwise_split_size", NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_ESPLIT);
    assert_string_equal(err.source, "command line --layerwise_split_size");
    assert_int_equal(err.line, 0);
    assert_int_equal(err.column, 0);

    /* An override of another blamed key wins over the file's key: split
     * size 3 from the file, world_size 8 from a flag (T = 8). */
    kvshard_deployment_free(dep);
    dep = load_file_ok(path);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "8", "command line --world_size",
                                            NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_ESPLIT);
    assert_string_equal(err.source, "command line --world_size");

    /* Fixing it by override makes the plan. */
    assert_int_equal(kvshard_deployment_set(dep, "layerwise_split_size", "4", "flag", NULL),
                     KVSHARD_OK);
    plan = NULL;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_OK);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 4);
    kvshard_plan_free(plan);
    kvshard_deployment_free(dep);
    free(path);

    /* ENOBLOCK: at memory_per_rank in the file. */
    path = tu_data_path("deploy/small_memory.yaml");
    dep = load_file_ok(path);
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_ENOBLOCK);
    assert_true(ends_with(err.source, "deploy/small_memory.yaml"));
    assert_int_equal(err.line, 6);
    assert_int_equal(err.column, 20);
    assert_int_equal(kvshard_deployment_set(dep, "memory_per_rank", "1KiB", "--memory_per_rank",
                                            NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_ENOBLOCK);
    assert_string_equal(err.source, "--memory_per_rank");
    assert_int_equal(err.line, 0);
    kvshard_deployment_free(dep);
    free(path);
}

/* The comparison points its errors at the deployment's keys too: world_size
 * 6 over dp_size 4 fails for every split size, blamed on `6` (line 3,
 * column 15 of world_dp.yaml). */
static void test_compare_error_at_file_key(void **state)
{
    (void)state;
    char *path = tu_data_path("deploy/world_dp.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    kvshard_comparison *cmp = (kvshard_comparison *)(uintptr_t)0x77;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_compare(&cmp, dep, &err), KVSHARD_EWORLD);
    assert_ptr_equal(cmp, (kvshard_comparison *)(uintptr_t)0x77);
    assert_true(ends_with(err.source, "deploy/world_dp.yaml"));
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 15);
    /* Fixed by an override, the comparison has a row for each divisor of
     * T = 8 / 4 = 2 (S = 1, 2) under each of the three rules. */
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "8", "flag", NULL), KVSHARD_OK);
    cmp = NULL;
    assert_int_equal(kvshard_deployment_compare(&cmp, dep, &err), KVSHARD_OK);
    assert_int_equal(kvshard_comparison_row_count(cmp), 6);
    kvshard_comparison_free(cmp);
    kvshard_deployment_free(dep);
    free(path);
}

static void test_plan_error_in_model_file(void **state)
{
    (void)state;
    /* TP 3 against 4 KV heads: blamed on the model file's num_key_value_heads. */
    char *path = tu_data_path("deploy/nested/relative.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "3", "flag", NULL), KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "enable_layerwise_split", "false", "flag", NULL),
                     KVSHARD_OK);
    kvshard_plan *plan = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_EKVHEADS);
    assert_null(plan);
    assert_true(ends_with(err.source, "deploy/nested/../models/tiny.yaml"));
    assert_int_equal(err.line, 5);
    assert_int_equal(err.column, 22);
    kvshard_deployment_free(dep);
    free(path);

    /* A bare model config with flags: the split error names the flag. */
    path = tu_example_path("models/qwen3_next_80b_a3b.json");
    dep = load_file_ok(path);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", "8", "--world_size", NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "enable_layerwise_split", "true",
                                            "--enable_layerwise_split", NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_set(dep, "layerwise_split_size", "3",
                                            "--layerwise_split_size", NULL),
                     KVSHARD_OK);
    assert_int_equal(kvshard_deployment_plan(&plan, dep, &err), KVSHARD_ESPLIT);
    assert_string_equal(err.source, "--layerwise_split_size");
    kvshard_deployment_free(dep);
    free(path);
}

/* ---- arguments ------------------------------------------------------------------ */

static void test_deployment_arguments(void **state)
{
    (void)state;
    kvshard_deployment_free(NULL);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_load_file(NULL, "x.yaml", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_load_file(&dep, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_load_string(&dep, NULL, 0, NULL, NULL, NULL, &err),
                     KVSHARD_EINVAL);
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.size = 7;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    assert_int_equal(kvshard_deployment_load_file(&dep, path, &lo, &err), KVSHARD_EINVAL);
    assert_null(dep);
    lo.size = sizeof lo;
    assert_int_equal(kvshard_deployment_load_file(&dep, path, &lo, &err), KVSHARD_OK);
    kvshard_deployment_free(dep);
    free(path);
    assert_int_equal(kvshard_deployment_plan(NULL, NULL, &err), KVSHARD_EINVAL);

    /* A file that is not there: EIO naming it, no position. */
    dep = NULL;
    assert_int_equal(kvshard_deployment_load_file(&dep, "/nonexistent/kvshard/dep.yaml", NULL,
                                                  &err),
                     KVSHARD_EIO);
    assert_string_equal(err.source, "/nonexistent/kvshard/dep.yaml");
    assert_int_equal(err.line, 0);
    assert_null(dep);
}

/* ---- engine command lines: forms, skipped arguments, typos ------------------------------ */

static kvshard_deployment *seed(void)
{
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = load_file_ok(path);
    free(path);
    return dep;
}

static const char *last_warning(const kvshard_plan *p, kvshard_warning_code *code)
{
    size_t n = kvshard_plan_warning_count(p);
    assert_true(n > 0);
    const char *message = NULL;
    assert_int_equal(kvshard_plan_warning(code, &message, p, n - 1), KVSHARD_OK);
    return message;
}

static void assert_ignored(const kvshard_deployment *dep, const char *const *want, size_t n)
{
    const char *got[16] = {NULL};
    assert_int_equal(kvshard_deployment_ignored_flags(got, 16, dep), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(got[i], want[i]);
}

/* An engine's argv as it is: --k=v, --k v, -k v, positional arguments and
 * `--`; what the profile does not read is skipped and named. */
static void test_ignored_flags_listed(void **state)
{
    (void)state;
    kvshard_deployment *dep = seed();
    kvshard_error err;
    const char *argv[] = {"serve",
                          "--tensor-parallel-size=4",
                          "--max-model-len",
                          "32768",
                          "-max_num_seqs",
                          "64",
                          "--ignore_unknown_flags",
                          "--world_size",
                          "8",
                          "--port",
                          "--",
                          "--block_size=32",
                          "model"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, sizeof argv / sizeof argv[0], argv, 0, &err),
                 &err);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_deployment_options(&o, dep), KVSHARD_OK);
    assert_int_equal(o.world_size, 8);  /* --world_size 8: gflags' value apart */
    assert_int_equal(o.block_size, 16); /* after `--`, an argument */
    static const char *const first[] = {"serve",
                                        "--tensor-parallel-size",
                                        "--max-model-len",
                                        "-max_num_seqs",
                                        "--port",
                                        "--block_size=32",
                                        "model"};
    assert_ignored(dep, first, 7);
    /* The count alone, and a short array. */
    assert_int_equal(kvshard_deployment_ignored_flags(NULL, 0, dep), 7);
    const char *two[2];
    assert_int_equal(kvshard_deployment_ignored_flags(two, 2, dep), 7);
    assert_string_equal(two[1], "--tensor-parallel-size");

    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_warning_code code;
    const char *message = last_warning(p, &code);
    assert_int_equal(code, KVSHARD_WARN_FLAGS_IGNORED);
    assert_string_equal(kvshard_warning_name(code), "flags_ignored");
    /* vLLM reads --tensor-parallel-size, --max-model-len and --max-num-seqs
     * (its max_seqs); nobody reads --port. */
    assert_string_equal(message, "skipped 4 flags and 3 arguments the kvshard profile does not "
                                 "read: serve, --tensor-parallel-size, --max-model-len, "
                                 "-max_num_seqs, --port, --block_size=32, model; --engine=vllm "
                                 "reads 3 of them");
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_FLAGS_IGNORED));
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"code\": \"flags_ignored\""));
    free(json);
    kvshard_plan_free(p);

    /* A second call adds what is new, once: --port again, then --host with
     * its value. */
    const char *more[] = {"--port=1", "--host", "0.0.0.0"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 3, more, KVSHARD_ARGS_IGNORE_UNKNOWN, &err),
                 &err);
    static const char *const second[] = {
        "serve",  "--tensor-parallel-size", "--max-model-len", "-max_num_seqs",
        "--port", "--block_size=32",        "model",           "--host"};
    assert_ignored(dep, second, 8);
    /* A call that fails changes nothing, its skipped flags included. */
    const char *bad[] = {"--ignore_unknown_flags", "--metrics-port", "9", "--world_size=zero"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 4, bad, 0, &err), KVSHARD_ETYPE);
    assert_ignored(dep, second, 8);
    assert_int_equal(kvshard_deployment_options(&o, dep), KVSHARD_OK);
    assert_int_equal(o.world_size, 8);

    /* Every row of a comparison carries the warning too. */
    kvshard_comparison *cmp = NULL;
    tu_assert_ok(kvshard_deployment_compare(&cmp, dep, &err), &err);
    size_t rows = kvshard_comparison_row_count(cmp);
    assert_true(rows > 1);
    for (size_t i = 0; i < rows; i++)
        assert_true(kvshard_comparison_row_at(cmp, i)->warnings &
                    (1u << KVSHARD_WARN_FLAGS_IGNORED));
    kvshard_comparison_free(cmp);
    kvshard_deployment_free(dep);

    /* Nothing skipped, no warning; and a plan made from the options alone
     * never has it. */
    dep = seed();
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_FLAGS_IGNORED));
    assert_int_equal(kvshard_deployment_ignored_flags(NULL, 0, dep), 0);
    kvshard_plan_free(p);
    /* Without the switch a positional argument is refused where it stands. */
    const char *positional[] = {"--world_size=4", "serve"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 2, positional, 0, &err),
                     KVSHARD_EUNKNOWNKEY);
    assert_string_equal(err.message, "\"serve\" is not a flag (flags look like --key=value)");
    const char *ended[] = {"--", "--world_size=4"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 2, ended, 0, &err), KVSHARD_EUNKNOWNKEY);
    assert_string_equal(err.message,
                        "\"--world_size=4\" is not a flag (flags look like --key=value)");
    kvshard_deployment_free(dep);
}

/* The message names what fits and then how many there are in all; the
 * query has every one. */
static void test_ignored_flags_many(void **state)
{
    (void)state;
    kvshard_deployment *dep = seed();
    kvshard_error err;
    char names[30][24];
    const char *argv[30];
    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof names[i], "--engine-flag-%02d", i);
        argv[i] = names[i];
    }
    tu_assert_ok(kvshard_deployment_apply_args(dep, 30, argv, KVSHARD_ARGS_IGNORE_UNKNOWN, &err),
                 &err);
    const char *got[30];
    assert_int_equal(kvshard_deployment_ignored_flags(got, 30, dep), 30);
    assert_string_equal(got[29], "--engine-flag-29");
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_warning_code code;
    /* 52 bytes of words, then 16 for the first name and 18 for each next
     * while the 216 bytes left before the tail allow: 9 names. */
    assert_string_equal(last_warning(p, &code),
                        "skipped 30 flags the kvshard profile does not read: --engine-flag-00, "
                        "--engine-flag-01, --engine-flag-02, --engine-flag-03, --engine-flag-04, "
                        "--engine-flag-05, --engine-flag-06, --engine-flag-07, --engine-flag-08, "
                        "... (30 in all)");
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
}

/* gflags read --key value as --key=value; a boolean takes no value apart;
 * --engine NAME settles the profile as --engine=NAME does. */
static void test_gflags_value_forms(void **state)
{
    (void)state;
    kvshard_deployment *dep = seed();
    kvshard_error err;
    const char *spaced[] = {"--max_seqs", "64",   "-block_size",          "32",
                            "--engine",   "xllm", "--max_seqs_per_batch", "48"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 8, spaced, 0, &err), &err);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_deployment_options(&o, dep), KVSHARD_OK);
    assert_int_equal(o.max_seqs, 48); /* xLLM's name for it, the later flag */
    assert_int_equal(o.block_size, 32);
    assert_int_equal(o.engine, KVSHARD_ENGINE_XLLM);
    kvshard_deployment_free(dep);

    dep = seed();
    /* A flag after a flag is no value under gflags. */
    const char *two_flags[] = {"--world_size", "--block_size=4"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 2, two_flags, 0, &err), KVSHARD_ETYPE);
    assert_string_equal(err.message, "--world_size needs a value (--world_size=VALUE)");
    assert_string_equal(err.source, "command line --world_size");
    const char *last[] = {"--max_seqs"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, last, 0, &err), KVSHARD_ETYPE);
    /* `--is_draft false` would be true and an argument: refused, even when
     * arguments are skipped. */
    const char *apart[] = {"--ignore_unknown_flags", "--is_draft", "false"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 3, apart, 0, &err), KVSHARD_ETYPE);
    assert_string_equal(err.message, "--is_draft false: a boolean flag takes its value after '=' "
                                     "(--is_draft=false); bare, it is true");
    /* Any other argument after a bare boolean is skipped with the switch. */
    const char *after_bool[] = {"--ignore_unknown_flags", "--is_draft", "serve"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 3, after_bool, 0, &err), &err);
    assert_int_equal(kvshard_deployment_options(&o, dep), KVSHARD_OK);
    assert_true(o.is_draft);
    static const char *const serve[] = {"serve"};
    assert_ignored(dep, serve, 1);
    kvshard_deployment_free(dep);
}

typedef struct typo_case {
    const char *engine; /* NULL: kvshard */
    const char *flag;
    const char *message;
} typo_case;

/* An unknown flag names the flag it is a typo of, in the spelling it was
 * written in, and never the switch that would skip it. */
static void test_unknown_flag_suggestions(void **state)
{
    (void)state;
    static const typo_case cases[] = {
        {NULL, "--contxt_length=4096",
         "unknown flag --contxt_length: did you mean --context_length?"},
        {NULL, "--wrold_size=4", "unknown flag --wrold_size: did you mean --world_size?"},
        {NULL, "-blok_size=32", "unknown flag --blok_size: did you mean -block_size?"},
        {NULL, "--ignore_unknwn_flags",
         "unknown flag --ignore_unknwn_flags: did you mean "
         "--ignore_unknown_flags?"},
        {NULL, "--frobnicate=1", "unknown flag --frobnicate: the kvshard profile has no such flag"},
        /* Two characters are too few to tell a typo. */
        {NULL, "-tq=2", "unknown flag --tq: the kvshard profile has no such flag"},
        /* An xLLM setting is a gflags flag under kvshard's profile too. */
        {NULL, "--max_cache_sise=1GiB",
         "unknown flag --max_cache_sise: did you mean "
         "--max_cache_size?"},
        {"--engine=xllm", "--max_seqs_per_bach=4",
         "unknown flag --max_seqs_per_bach: did you mean "
         "--max_seqs_per_batch?"},
        /* argparse: '-' and '_' alike, the answer in the spelling asked. */
        {"--engine=vllm", "--max-modl-len=4096",
         "unknown flag --max-modl-len: did you mean "
         "--max-model-len?"},
        {"--engine=vllm", "--max_modl_len=4096",
         "unknown flag --max_modl_len: did you mean "
         "--max_model_len?"},
        {"--engine=vllm", "--gpu-memory-utilisation=0.9",
         "unknown flag --gpu-memory-utilisation: "
         "did you mean --gpu-memory-utilization?"},
        {"--engine=sglang", "--mem-fraction-statc=0.8",
         "unknown flag --mem-fraction-statc: did "
         "you mean --mem-fraction-static?"},
        /* Another profile's flag: the profile that reads it. */
        {NULL, "--max_seqs_per_batch=4",
         "unknown flag --max_seqs_per_batch: it is a flag of the "
         "xllm profile, and the engine profile is kvshard "
         "(--engine=xllm reads it)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_deployment *dep = seed();
        kvshard_error err;
        const char *argv[2] = {cases[i].engine ? cases[i].engine : cases[i].flag, cases[i].flag};
        size_t n = cases[i].engine ? 2 : 1;
        assert_int_equal(kvshard_deployment_apply_args(dep, n, argv, 0, &err), KVSHARD_EUNKNOWNKEY);
        if (strcmp(err.message, cases[i].message) != 0)
            print_error("%s: %s\n", cases[i].flag, err.message);
        assert_string_equal(err.message, cases[i].message);
        if (strstr(cases[i].flag, "ignore") == NULL)
            assert_null(strstr(err.message, "ignore"));
        kvshard_deployment_free(dep);
    }
    /* kvshard_deployment_set's keys are matched the same way. */
    kvshard_deployment *dep = seed();
    kvshard_error err;
    assert_int_equal(kvshard_deployment_set(dep, "contxt_length", "4096", NULL, &err),
                     KVSHARD_EUNKNOWNKEY);
    assert_string_equal(err.message, "unknown option \"contxt_length\" (did you mean "
                                     "context_length?)");
    assert_int_equal(kvshard_deployment_set(dep, "replicas", "4", NULL, &err), KVSHARD_EUNKNOWNKEY);
    assert_string_equal(err.message, "unknown option \"replicas\"");
    kvshard_deployment_free(dep);
}

/* ---- two spellings of one input ------------------------------------------------ */

typedef struct spelling_case {
    const char *args; /* after --engine=vllm, split at spaces */
    int code;
    const char *source;
    const char *message;
} spelling_case;

/* Applies `args` after --engine=vllm to the seed; the error in *err. */
static int apply_spelled(const char *args, const char *flagfile, kvshard_error *err)
{
    char copy[256], file_arg[64];
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "--engine=vllm";
    snprintf(copy, sizeof copy, "%s", args);
    for (char *save = NULL, *t = strtok_r(copy, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        assert_true(n + 1 < sizeof argv / sizeof argv[0]);
        argv[n++] = t;
    }
    if (flagfile) {
        snprintf(file_arg, sizeof file_arg, "--flagfile=%s", flagfile);
        argv[n++] = file_arg;
    }
    kvshard_deployment *dep = seed();
    int rc = kvshard_deployment_apply_args(dep, n, argv, 0, err);
    kvshard_deployment_free(dep);
    return rc;
}

/* Under an argparse profile the conflict reported is at the first flag, in
 * the order flags are read (flag files in place), whose value disagrees
 * with an earlier flag of another spelling of the same input; it names the
 * earliest such earlier flag. Same-spelling flags never conflict (the last
 * wins), yet each one read counts, not only the one that won. */
static void test_flag_spellings_first_conflict(void **state)
{
    (void)state;
    static const spelling_case cases[] = {
        /* Two inputs in conflict: the one whose second flag comes first. */
        {"-tp 2 --tensor-parallel-size 4 --pp 1 --pipeline-parallel-size 2", KVSHARD_EDUPKEY,
         "command line --tensor-parallel-size",
         "--tp 2 and --tensor-parallel-size 4 give tensor_parallel_size two values; give one "
         "of them"},
        {"--pp 1 -tp 2 --pipeline-parallel-size 2 --tensor-parallel-size 4", KVSHARD_EDUPKEY,
         "command line --pipeline-parallel-size",
         "--pp 1 and --pipeline-parallel-size 2 give pp_size two values; give one of them"},
        /* The earliest earlier flag that disagrees, whichever of its
         * spelling's flags won. */
        {"--tensor-parallel-size 2 --tensor-parallel-size 4 -tp 2", KVSHARD_EDUPKEY,
         "command line --tp",
         "--tensor-parallel-size 4 and --tp 2 give tensor_parallel_size two values; give one "
         "of them"},
        {"--tensor-parallel-size 4 --tensor-parallel-size 2 -tp 2", KVSHARD_EDUPKEY,
         "command line --tp",
         "--tensor-parallel-size 4 and --tp 2 give tensor_parallel_size two values; give one "
         "of them"},
        {"--tensor-parallel-size 2 --tensor_parallel_size 2 -tp 2 --tensor-parallel-size 4",
         KVSHARD_EDUPKEY, "command line --tensor-parallel-size",
         "--tp 2 and --tensor-parallel-size 4 give tensor_parallel_size two values; give one "
         "of them"},
        /* The flag's own spelling before it is passed over, '-' and '_'
         * alike. */
        {"--max-num-seqs 8 --max_seqs 8 --max_num_seqs 16 --max-seqs 4", KVSHARD_EDUPKEY,
         "command line --max_num_seqs",
         "--max_seqs 8 and --max_num_seqs 16 give max_seqs two values; give one of them"},
        {"-tp 2 --tensor-parallel-size 2 --tensor_parallel_size 2 -tp 4", KVSHARD_EDUPKEY,
         "command line --tp",
         "--tensor-parallel-size 2 and --tp 4 give tensor_parallel_size two values; give one "
         "of them"},
        /* A flag repeated names its first writing. */
        {"--max_num_seqs 8 --max-num-seqs 8 --max-num-seqs 16 --max_seqs 16", KVSHARD_EDUPKEY,
         "command line --max_seqs",
         "--max_num_seqs 8 and --max_seqs 16 give max_seqs two values; give one of them"},
        /* Three spellings of one input. */
        {"--pp 2 --pp-size 2 --pipeline-parallel-size 1 --pp-size 3", KVSHARD_EDUPKEY,
         "command line --pipeline-parallel-size",
         "--pp 2 and --pipeline-parallel-size 1 give pp_size two values; give one of them"},
        {"--pp-size 2 --pipeline-parallel-size 2 --pp 2 --pp-size 3", KVSHARD_EDUPKEY,
         "command line --pp-size",
         "--pipeline-parallel-size 2 and --pp-size 3 give pp_size two values; give one of "
         "them"},
        /* --no-name is a spelling of its own. */
        {"--enable-prefix-caching --no-enable-prefix-caching --enable-prefix-caching=false",
         KVSHARD_EDUPKEY, "command line --no-enable-prefix-caching",
         "--enable-prefix-caching true and --no-enable-prefix-caching false give "
         "enable_prefix_caching two values; give one of them"},
        /* Agreeing spellings, then the same spelling changing its value:
         * the last wins, and nothing conflicts. */
        {"--max-num-seqs 8 --max_seqs 8 --max-num-seqs 8 --max_seqs=8", KVSHARD_OK, "", ""},
        {"--max-num-seqs 8 --max-num-seqs 16 --max-num-seqs=4", KVSHARD_OK, "", ""},
        /* Whatever error comes first in the order is the one reported. */
        {"--max-num-seqs 8 --max-model-len 4k --max_seqs 9", KVSHARD_ETYPE,
         "command line --max-model-len", "max_model_len: expected an integer, found \"4k\""},
        {"-tp 2 --tensor-parallel-size 4 --max-model-len 4k", KVSHARD_EDUPKEY,
         "command line --tensor-parallel-size",
         "--tp 2 and --tensor-parallel-size 4 give tensor_parallel_size two values; give one "
         "of them"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const spelling_case *c = &cases[i];
        kvshard_error err;
        memset(&err, 0, sizeof err);
        int rc = apply_spelled(c->args, NULL, &err);
        if (rc != c->code || strcmp(err.source, c->source) != 0 ||
            strcmp(err.message, c->message) != 0)
            print_error("%s\ngot %s: %s: %s\n", c->args, kvshard_strerror(rc), err.source,
                        err.message);
        assert_int_equal(rc, c->code);
        assert_string_equal(err.source, c->source);
        assert_string_equal(err.message, c->message);
    }

    /* In a flag file: at the line and column of the later flag. */
    char path[] = "/tmp/kvshard_spellings_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fputs("--max-num-seqs=8\n"
          "--tensor-parallel-size=2\n"
          "# the max_seqs conflict comes first\n"
          "  --max_seqs=16\n"
          "--tensor_parallel_size=4\n",
          f);
    assert_int_equal(fclose(f), 0);
    kvshard_error err;
    assert_int_equal(apply_spelled("-tp 4", path, &err), KVSHARD_EDUPKEY);
    assert_string_equal(err.source, path);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 1);
    assert_string_equal(err.message, "--tp 4 and --tensor-parallel-size 2 give "
                                     "tensor_parallel_size two values; give one of them");
    assert_int_equal(apply_spelled("-tp 2", path, &err), KVSHARD_EDUPKEY);
    assert_string_equal(err.source, path);
    assert_int_equal(err.line, 4);
    assert_int_equal(err.column, 3);
    assert_string_equal(err.message, "--max-num-seqs 8 and --max_seqs 16 give max_seqs two "
                                     "values; give one of them");
    unlink(path);
}

/* The flags applied under an argparse profile, and the earlier flags they
 * were compared with (kvshard_flags__compared), for `argv` of `n`. */
static uint64_t compared_applying(const char *const *argv, size_t n)
{
    kvshard_deployment *dep = seed();
    kvshard_error err;
    uint64_t before = kvshard_flags__compared;
    tu_assert_ok(kvshard_deployment_apply_args(dep, n, argv, 0, &err), &err);
    uint64_t compared = kvshard_flags__compared - before;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_deployment_options(&o, dep), KVSHARD_OK);
    assert_int_equal(o.max_seqs, 16);
    kvshard_deployment_free(dep);
    return compared;
}

/* --engine=vllm and 65,535 flags of one input, the budget of one call:
 * each flag is compared with the first flag of its input and at most one
 * of another spelling, and once per input with the flags kept before it
 * when a second spelling first appears; at most 3 n in all. Comparing each
 * with every one before made (n - 1)(n - 2) / 2 = 2,147,385,345. Counted,
 * not timed. */
static void test_flag_spellings_at_the_flag_limit(void **state)
{
    (void)state;
    enum { N = KVSHARD_FLAGS__MAX_FLAGS };
    static const char *argv[N];
    argv[0] = "--engine=vllm";
    /* One spelling, repeated. */
    for (size_t i = 1; i < N; i++)
        argv[i] = "--max-num-seqs=16";
    uint64_t one = compared_applying(argv, N);
    /* Two spellings that agree, in turn. */
    for (size_t i = 1; i < N; i++)
        argv[i] = i % 2 ? "--max-num-seqs=16" : "--max_seqs=16";
    uint64_t two = compared_applying(argv, N);
    /* One spelling to the end, then another: its flag is compared with
     * every one before it, once. */
    for (size_t i = 1; i < N; i++)
        argv[i] = i + 1 < N ? "--max-num-seqs=16" : "--max_seqs=16";
    uint64_t last = compared_applying(argv, N);
    print_message("%u flags of one input: %llu, %llu and %llu earlier flags compared\n",
                  (unsigned)N, (unsigned long long)one, (unsigned long long)two,
                  (unsigned long long)last);
    assert_true(one <= 3u * (uint64_t)N);
    assert_true(two <= 3u * (uint64_t)N);
    assert_true(last <= 3u * (uint64_t)N);
}

/* An engine's flag file of 65,536 flags that kvshard does not read: each
 * kept once, in order, found again through a table, so the call stays
 * well under a second (comparing each with every one before took 14 s). */
static void test_ignored_flags_at_the_flag_limit(void **state)
{
    (void)state;
    enum { N = 65536, DISTINCT = 40000 };
    char path[] = "/tmp/kvshard_skipped_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "--ignore_unknown_flags\n");
    /* 40,000 names, then 25,535 of them again: 65,536 flags in all. */
    for (int i = 0; i < N - 1; i++)
        fprintf(f, "--engine_flag_%d=%d\n", i % DISTINCT, i);
    assert_int_equal(fclose(f), 0);
    kvshard_deployment *dep = seed();
    kvshard_error err;
    char arg[64];
    snprintf(arg, sizeof arg, "--flagfile=%s", path);
    const char *argv[] = {arg};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 1, argv, 0, &err), &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    static const char *got[DISTINCT];
    assert_int_equal(kvshard_deployment_ignored_flags(got, DISTINCT, dep), DISTINCT);
    assert_string_equal(got[0], "--engine_flag_0");
    assert_string_equal(got[DISTINCT - 1], "--engine_flag_39999");
    kvshard_warning_code code;
    const char *message = last_warning(p, &code);
    assert_int_equal(code, KVSHARD_WARN_FLAGS_IGNORED);
    assert_true(strstr(message, "skipped 40000 flags the kvshard profile does not read: "
                                "--engine_flag_0, --engine_flag_1, ") == message);
    assert_non_null(strstr(message, ", ... (40000 in all)"));
    kvshard_plan_free(p);
    /* The same flags again add nothing. */
    tu_assert_ok(kvshard_deployment_apply_args(dep, 1, argv, 0, &err), &err);
    assert_int_equal(kvshard_deployment_ignored_flags(NULL, 0, dep), DISTINCT);
    kvshard_deployment_free(dep);
    unlink(path);
}

/* Out of memory at every allocation of a call that skips arguments: the
 * call fails whole, the deployment keeps what it had, nothing leaks. */
typedef struct failing {
    size_t calls;
    size_t fail_at;
    long live;
} failing;

static void *failing_malloc(void *user, size_t size)
{
    failing *f = user;
    if (++f->calls == f->fail_at)
        return NULL;
    void *p = malloc(size);
    f->live += p != NULL;
    return p;
}

static void failing_free(void *user, void *ptr)
{
    failing *f = user;
    f->live -= ptr != NULL;
    free(ptr);
}

static void test_ignored_flags_out_of_memory(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    const char *first[] = {"--ignore_unknown_flags", "--port", "8000", "serve"};
    const char *argv[] = {"--ignore_unknown_flags", "--host", "x", "model", "--port",
                          "--block_size=32"};
    bool succeeded = false;
    for (size_t at = 1; !succeeded && at < 10000; at++) {
        failing f = {0, 0, 0};
        kvshard_allocator alloc = {failing_malloc, failing_free, &f};
        kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
        lo.allocator = &alloc;
        kvshard_deployment *dep = NULL;
        kvshard_error err;
        tu_assert_ok(kvshard_deployment_load_file(&dep, path, &lo, &err), &err);
        tu_assert_ok(kvshard_deployment_apply_args(dep, 4, first, 0, &err), &err);
        f.fail_at = f.calls + at;
        int rc = kvshard_deployment_apply_args(dep, 6, argv, 0, &err);
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        assert_int_equal(kvshard_deployment_options(&o, dep), KVSHARD_OK);
        if (rc == KVSHARD_OK) {
            static const char *const all[] = {"--port", "serve", "--host", "model"};
            assert_ignored(dep, all, 4);
            assert_int_equal(o.block_size, 32);
            succeeded = true;
        } else {
            assert_int_equal(rc, KVSHARD_ENOMEM);
            static const char *const before[] = {"--port", "serve"};
            assert_ignored(dep, before, 2);
            assert_int_equal(o.block_size, 16);
        }
        kvshard_deployment_free(dep);
        assert_int_equal(f.live, 0);
    }
    assert_true(succeeded);
    free(path);
}

/* An empty list is an error of its length, in a file as in a flag, never
 * the key left out: pp_partition: [] would plan by the rule, and
 * weights_per_rank: [] would read the weights from elsewhere. */
static void test_empty_lists(void **state)
{
    (void)state;
    static const char inline_model[] =
        "model: {num_hidden_layers: 4, head_dim: 8, num_key_value_heads: 1}\n";
    static const struct {
        const char *rest;
        int code, line, column;
        const char *message;
    } files[] = {
        {"parallel:\n  world_size: 2\n  pp_size: 2\n  pp_partition: []\n", KVSHARD_EPARTITION, 5,
         17,
         "pp_partition has 0 entries; give one layer count a stage, such as [31, 30], or leave "
         "the key out"},
        {"parallel: {pp_partition: [ ]}\n", KVSHARD_EPARTITION, 2, 26,
         "pp_partition has 0 entries"},
        {"cache:\n  device_memory: 1GiB\n  weights_per_rank: []\n", KVSHARD_EWEIGHTS, 4, 21,
         "weights_per_rank has 0 entries; give one size, or one a stage, such as [17GiB, "
         "16.5GiB], or leave the key out"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%s", inline_model, files[i].rest);
        load_text_fails(text, files[i].code, files[i].line, files[i].column);
        kvshard_deployment *dep = NULL;
        kvshard_error err;
        assert_int_equal(kvshard_deployment_load_string(&dep, text, strlen(text), "test.yaml",
                                                        NULL, NULL, &err),
                         files[i].code);
        assert_non_null(strstr(err.message, files[i].message));
    }

    /* The flags: an empty value, or blanks only. */
    static const struct {
        const char *arg;
        int code;
        const char *message;
    } flags[] = {
        {"--pp_partition=", KVSHARD_EPARTITION,
         "pp_partition has 0 entries; give one layer count a stage, such as 31,30, or leave it "
         "out"},
        {"--weights_per_rank= ", KVSHARD_EWEIGHTS,
         "weights_per_rank has 0 entries; give one size, or one a stage, such as "
         "17GiB,16.5GiB, or leave it out"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        kvshard_deployment *dep = load_text_ok(inline_model, NULL);
        kvshard_error err;
        const char *argv[] = {flags[i].arg};
        assert_int_equal(kvshard_deployment_apply_args(dep, 1, argv, 0, &err), flags[i].code);
        assert_string_equal(err.message, flags[i].message);
        kvshard_deployment_free(dep);
    }
    /* One entry is a list. */
    kvshard_deployment *dep =
        load_text_ok("model: {num_hidden_layers: 4, head_dim: 8, "
                     "num_key_value_heads: 1}\nparallel: {pp_partition: [4]}\n",
                     NULL);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.pp_partition_count, 1);
    assert_int_equal(o.pp_partition[0], 4);
    kvshard_deployment_free(dep);
}

/* ---- numbers and words ------------------------------------------------------------- */

/* A text is a word only when it is the word: a number whose value equals
 * how a word is stored (activation_reserve's auto is UINT64_MAX in
 * kvshard_options; max_model_len's -1 and auto are -1 and -2) is a number,
 * checked against the key's range, and a number past 2^64 - 1 is an
 * error, never a word. */
static void test_number_never_a_word(void **state)
{
    (void)state;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_error err;
    assert_int_equal(
        kvshard_options_set(&o, "activation_reserve", "18446744073709551615", NULL, &err),
        KVSHARD_ERANGE);
    assert_string_equal(err.message, "activation_reserve: 18446744073709551615 is out of range; "
                                     "expected a size from 0 to 18446744073709551614 bytes "
                                     "(kvshard_options holds auto as 18446744073709551615)");
    assert_true(o.activation_reserve == KVSHARD_RESERVE_AUTO); /* unchanged */
    /* 2^64 - 1 = 16 EiB - 1 B: as a size with a unit too (16,777,216 TiB
     * is 2^64, one byte more). */
    assert_int_equal(kvshard_options_set(&o, "activation_reserve", "16777216TiB", NULL, &err),
                     KVSHARD_ERANGE);
    o.activation_reserve = 0;
    tu_assert_ok(kvshard_options_set(&o, "activation_reserve", "18446744073709551614", NULL, &err),
                 &err);
    assert_true(o.activation_reserve == UINT64_C(18446744073709551614));
    tu_assert_ok(kvshard_options_set(&o, "activation_reserve", "auto", NULL, &err), &err);
    assert_true(o.activation_reserve == KVSHARD_RESERVE_AUTO);
    /* A count past 2^64 - 1 is out of range, not saturated into a word. */
    assert_int_equal(kvshard_options_set(&o, "max_seqs", "18446744073709551616", NULL, &err),
                     KVSHARD_ERANGE);
    assert_string_equal(err.message, "max_seqs: 18446744073709551616 is out of range; expected "
                                     "an integer from 1 to 16777216");

    kvshard_settings *s = NULL;
    tu_assert_ok(kvshard_settings_create(&s, NULL, &err), &err);
    static const char *const numbers[] = {"18446744073709551615", "18446744073709551614",
                                          "18446744073709551616", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        char want[160];
        snprintf(want, sizeof want,
                 "max_model_len: %s is out of range; expected an integer from 1 to 1073741824",
                 numbers[i]);
        assert_int_equal(kvshard_settings_set(s, "max_model_len", numbers[i], NULL, &err),
                         KVSHARD_ERANGE);
        assert_string_equal(err.message, want);
    }
    char buf[64];
    bool set = true;
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, &set, s, "max_model_len"), KVSHARD_OK);
    assert_false(set); /* nothing was set */
    tu_assert_ok(kvshard_settings_set(s, "max_model_len", "-1", NULL, &err), &err);
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, &set, s, "max_model_len"), KVSHARD_OK);
    assert_string_equal(buf, "-1");
    /* non_kv_memory's "not given" is UINT64_MAX: a number stops below. */
    assert_int_equal(kvshard_settings_set(s, "non_kv_memory", "18446744073709551615", NULL, &err),
                     KVSHARD_ERANGE);
    assert_string_equal(err.message, "non_kv_memory: 18446744073709551615 is out of range; "
                                     "expected a size from 0 to 18446744073709551614 bytes");
    kvshard_settings_free(s);
}

/* A reserve near 2^64 bytes (now a number up to 2^64 - 2) is short by its
 * exact figure, never by a saturated one, and never fills non_kv_memory
 * with the value that stands for "not given". 80 GiB x 0.9 =
 * 77,309,411,328 usable:
 * - weights 10 GiB: short by 10737418240 + 18446744073709551614 -
 *   77309411328 = 18446744007137558526 bytes;
 * - weights 2^64 - 1: short by more than 2^64 - 1 bytes;
 * - vllm: weights 16 GiB + the reserve pass 2^64 - 1: does not fit, where
 *   the saturated sum read as a non_kv_memory not given. */
static void test_reserve_near_64_bits(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = UINT64_C(80) << 30;
    o.weights_total = UINT64_C(10) << 30;
    o.activation_reserve = UINT64_MAX - 1;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDOESNOTFIT);
    assert_string_equal(err.message, "does_not_fit: the weights (10737418240 bytes a rank) and "
                                     "activation_reserve 18446744073709551614 bytes take all of "
                                     "device_memory 85899345920 x memory_utilization 0.9 = "
                                     "77309411328 usable bytes: 18446744007137558526 bytes short");
    o.weights_total = UINT64_MAX;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDOESNOTFIT);
    assert_non_null(strstr(err.message, "77309411328 usable bytes: more than "
                                        "18446744073709551615 bytes short"));
    kvshard_settings *s = NULL;
    tu_assert_ok(kvshard_settings_create(&s, NULL, &err), &err);
    tu_assert_ok(kvshard_settings_set(s, "max_model_len", "4096", NULL, &err), &err);
    o.engine = KVSHARD_ENGINE_VLLM;
    o.settings = s;
    o.weights_total = UINT64_C(16) << 30;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDOESNOTFIT);
    assert_string_equal(err.message, "does_not_fit: the weights (17179869184 bytes a rank) and "
                                     "activation_reserve 18446744073709551614 bytes take all of "
                                     "device_memory 85899345920");
    assert_null(p);
    kvshard_settings_free(s);
    kvshard_model_free(m);
}

/* The tables keep words and numbers apart: every word a number-typed key
 * takes, and every fallback that stands for "not given", is stored as a
 * value outside the key's [min, max], the only values a number may have. */
static void value_apart(const kvshard_value__def *def, const kvshard_value *fallback,
                        const char *default_text)
{
    if (def->type != KVSHARD__VT_U32 && def->type != KVSHARD__VT_BYTES)
        return;
    for (const kvshard_value__word *w = def->words; w && w->text; w++) {
        uint64_t u = (uint64_t)(int64_t)w->value;
        if (u >= def->min && u <= def->max)
            print_error("%s: the word %s is stored as %llu, inside %llu..%llu\n", def->name,
                        w->text, (unsigned long long)u, (unsigned long long)def->min,
                        (unsigned long long)def->max);
        assert_false(u >= def->min && u <= def->max);
    }
    if (fallback && default_text && strcmp(default_text, "none") == 0) {
        bool inside = fallback->u >= def->min && fallback->u <= def->max;
        if (inside)
            print_error("%s: its fallback %llu (\"none\") is a number it takes\n", def->name,
                        (unsigned long long)fallback->u);
        assert_false(inside);
    }
}

static void test_sentinels_outside_ranges(void **state)
{
    (void)state;
    size_t checked = 0;
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++, checked++)
        value_apart(kvshard_options__option_def((kvshard__option_id)i), NULL, NULL);
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        for (const kvshard_profile__input *in = (*p)->dialect.inputs; in && in->def.name;
             in++, checked++)
            value_apart(&in->def, &in->fallback, in->default_text);
    }
    assert_true(checked > KVSHARD__OPT_COUNT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_tp4_options),
        cmocka_unit_test(test_relative_model_path_from_file),
        cmocka_unit_test(test_relative_model_path_from_string),
        cmocka_unit_test(test_inline_model),
        cmocka_unit_test(test_bare_model_config),
        cmocka_unit_test(test_deployment_set_overrides),
        cmocka_unit_test(test_deployment_set_errors),
        cmocka_unit_test(test_options_set_rejects),
        cmocka_unit_test(test_settings_set_rejects),
        cmocka_unit_test(test_option_table),
        cmocka_unit_test(test_flag_table),
        cmocka_unit_test(test_options_set_every_key),
        cmocka_unit_test(test_yaml_booleans_and_types),
        cmocka_unit_test(test_plan_error_at_file_key),
        cmocka_unit_test(test_plan_error_in_model_file),
        cmocka_unit_test(test_compare_error_at_file_key),
        cmocka_unit_test(test_deployment_arguments),
        cmocka_unit_test(test_ignored_flags_listed),
        cmocka_unit_test(test_ignored_flags_many),
        cmocka_unit_test(test_gflags_value_forms),
        cmocka_unit_test(test_unknown_flag_suggestions),
        cmocka_unit_test(test_flag_spellings_first_conflict),
        cmocka_unit_test(test_flag_spellings_at_the_flag_limit),
        cmocka_unit_test(test_ignored_flags_at_the_flag_limit),
        cmocka_unit_test(test_ignored_flags_out_of_memory),
        cmocka_unit_test(test_empty_lists),
        cmocka_unit_test(test_number_never_a_word),
        cmocka_unit_test(test_sentinels_outside_ranges),
        cmocka_unit_test(test_reserve_near_64_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
