/* The kvshard command line: output, flags, exit status and error positions. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXAMPLE KVSHARD_EXAMPLES "/qwen3_5_35b_a3b_tp4.yaml"
#define NEXT_MODEL KVSHARD_EXAMPLES "/models/qwen3_next_80b_a3b.json"
#define INVALID KVSHARD_TEST_DATA "/invalid/"

typedef struct run_result {
    int status;
    char *out;
    char *err;
} run_result;

#if defined(__GNUC__) || defined(__clang__)
#define CLI_PRINTF __attribute__((format(printf, 1, 2)))
#else
#define CLI_PRINTF
#endif

/* Run `kvshard ARGS`; ARGS is a printf format. */
static run_result cli(const char *fmt, ...) CLI_PRINTF;

static run_result cli(const char *fmt, ...)
{
    char args[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char command[4096];
    snprintf(command, sizeof command, "'%s' %s", KVSHARD_CLI, args);
    run_result r;
    r.status = tu_run(command, &r.out, &r.err);
    assert_non_null(r.out);
    assert_non_null(r.err);
    return r;
}

static void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static size_t count_of(const char *haystack, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static void assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        print_error("expected to find\n  %s\nin\n%s\n", needle, haystack);
    assert_non_null(strstr(haystack, needle));
}

/* The line of `text` that starts with `prefix`, copied into `line`. */
static bool line_starting(char *line, size_t cap, const char *text, const char *prefix)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (starts_with(p, prefix)) {
            const char *end = strchr(p, '\n');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            if (len >= cap)
                len = cap - 1;
            memcpy(line, p, len);
            line[len] = '\0';
            return true;
        }
    }
    return false;
}

/* Invalid input: exit 1, nothing on stdout, stderr begins with `prefix`. */
static void assert_invalid(run_result *r, const char *prefix)
{
    if (r->status != 1 || !starts_with(r->err, prefix))
        print_error("exit %d, stderr:\n%s\nexpected exit 1 and a stderr starting with\n%s\n",
                    r->status, r->err, prefix);
    assert_int_equal(r->status, 1);
    assert_true(starts_with(r->err, prefix));
    assert_string_equal(r->out, "");
    run_free(r);
}

/* Bad usage: exit 2, nothing on stdout, a "kvshard: " message. */
static void assert_usage(run_result *r)
{
    if (r->status != 2)
        print_error("exit %d, stderr:\n%s\n", r->status, r->err);
    assert_int_equal(r->status, 2);
    assert_true(starts_with(r->err, "kvshard: "));
    assert_string_equal(r->out, "");
    run_free(r);
}

/* ---- --version, --help ---------------------------------------------------------- */

static void test_version_and_help(void **state)
{
    (void)state;
    run_result r = cli("--version");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "kvshard 0.1.0\n");
    assert_string_equal(r.err, "");
    run_free(&r);

    r = cli("--help");
    assert_int_equal(r.status, 0);
    assert_true(starts_with(r.out, "usage: kvshard plan CONFIG"));
    assert_contains(r.out, "kvshard compare CONFIG");
    assert_contains(r.out, "--memory_per_rank");
    assert_string_equal(r.err, "");
    run_free(&r);

    r = cli("-h");
    assert_int_equal(r.status, 0);
    assert_true(starts_with(r.out, "usage: "));
    run_free(&r);
}

/* ---- plan --------------------------------------------------------------------------- */

static void test_plan_text(void **state)
{
    (void)state;
    run_result r = cli("plan '%s'", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_true(starts_with(r.out, "model      qwen3_5_moe: 40 layers"));
    char line[256];
    /* split rank 0 (TP ranks 0 and 2) stores the even KV ordinals */
    assert_true(line_starting(line, sizeof line, r.out, "0           0, 2 "));
    assert_non_null(strstr(line, " 3 11 19 27 35"));
    assert_true(line_starting(line, sizeof line, r.out, "1           1, 3 "));
    assert_non_null(strstr(line, " 7 15 23 31 39"));
    assert_contains(r.out, "197,493 blocks = 3,159,888 tokens");
    assert_contains(r.out, "     0 | L  L  L  F0 L  L  L  F1 L  L");
    assert_true(line_starting(line, sizeof line, r.out, "warnings   none"));
    run_free(&r);

    /* --format=text is the default */
    run_result t = cli("plan '%s' --format=text", EXAMPLE);
    run_result d = cli("plan '%s'", EXAMPLE);
    assert_int_equal(t.status, 0);
    assert_string_equal(t.out, d.out);
    run_free(&t);
    run_free(&d);
}

static void test_plan_json(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --format=json", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_true(starts_with(r.out, "{"));
    assert_contains(r.out, "\"kvshard_version\": \"0.1.0\"");
    assert_contains(r.out, "\"owned_layers\": [3, 11, 19, 27, 35]");
    assert_contains(r.out, "\"owned_layers\": [7, 15, 23, 31, 39]");
    assert_contains(r.out, "\"num_blocks\": 197493");
    assert_contains(r.out, "\"effective_split_size\": 2");
    assert_contains(r.out, "\"memory_per_rank\": 21474836480");
    assert_contains(r.out, "\"max_seqs\": 128");
    assert_int_equal(count_of(r.out, "\"tp_rank\": "), 4);
    assert_int_equal(count_of(r.out, "\"index\": "), 40);
    run_free(&r);

    /* The format flag may come anywhere. */
    run_result early = cli("--format=json plan '%s'", EXAMPLE);
    run_result late = cli("plan '%s' --format=json", EXAMPLE);
    assert_int_equal(early.status, 0);
    assert_string_equal(early.out, late.out);
    run_free(&early);
    run_free(&late);
}

static void test_flags_override_file(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --format=json --ownership=global", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"ownership\": \"global\"");
    /* every full-attention layer index is odd: split rank 1 owns them all */
    assert_int_equal(count_of(r.out, "\"owned_layers\": []"), 2);
    assert_int_equal(count_of(r.out, "\"owned_layers\": [3, 7, 11, 15, 19, 23, 27, 31, 35, 39]"),
                     2);
    assert_contains(r.out, "\"code\": \"rank_owns_nothing\"");
    run_free(&r);

    r = cli("plan '%s' --format=json --layerwise_split_size=4", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"effective_split_size\": 4");
    assert_contains(r.out, "\"owned_layers\": [3, 19, 35]");
    assert_contains(r.out, "\"owned_layers\": [7, 23, 39]");
    assert_contains(r.out, "\"owned_layers\": [11, 27]");
    assert_contains(r.out, "\"owned_layers\": [15, 31]");
    run_free(&r);

    r = cli("--world_size=8 plan '%s' --format=json", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"world_size\": 8");
    assert_contains(r.out, "\"attn_tp_size\": 8");
    assert_int_equal(count_of(r.out, "\"tp_rank\": "), 8);
    run_free(&r);

    /* the last flag for a key wins; a bare boolean flag means true */
    r = cli("plan '%s' --format=json --enable_layerwise_split=false --layerwise_split_size=4 "
            "--enable_layerwise_split",
            EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"effective_split_size\": 4");
    run_free(&r);

    r = cli("plan '%s' --format=json --enable_layerwise_split=false", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"effective_split_size\": 1");
    assert_contains(r.out, "\"code\": \"split_disabled\"");
    assert_int_equal(count_of(r.out, "\"owned_layers\": [3, 7, 11, 15, 19, 23, 27, 31, 35, 39]"),
                     4);
    run_free(&r);

    r = cli("plan '%s' --format=json --memory_per_rank=40GiB --max_seqs=1", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"memory_per_rank\": 42949672960");
    assert_contains(r.out, "\"max_seqs\": 1");
    run_free(&r);
}

static void test_bare_model_with_flags(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --world_size=8 --enable_layerwise_split=true "
                       "--layerwise_split_size=4 --ownership=global --format=json",
                       NEXT_MODEL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_contains(r.out, "\"model_type\": \"qwen3_next\"");
    assert_contains(r.out, "\"world_size\": 8");
    assert_contains(r.out, "\"effective_split_size\": 4");
    /* layers 3, 7, ..., 47 are all 3 mod 4 */
    assert_int_equal(count_of(r.out, "\"kind\": \"full_attention\""), 12);
    assert_int_equal(count_of(r.out, "\"kind\": \"full_attention\", \"owner\": 3}"), 12);
    assert_contains(r.out, "\"code\": \"imbalanced\"");
    run_free(&r);

    /* Without flags a bare model config plans with the defaults. */
    r = cli("plan '%s' --format=json", NEXT_MODEL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"world_size\": 1");
    assert_contains(r.out, "\"effective_split_size\": 1");
    assert_contains(r.out, "\"memory_per_rank\": null");
    run_free(&r);
}

/* ---- compare ------------------------------------------------------------------------ */

static void test_compare(void **state)
{
    (void)state;
    run_result r = cli("compare '%s'", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_contains(r.out,
                    "recommended: --enable_layerwise_split=true --layerwise_split_size=2 "
                    "--ownership=ordinal\n");
    char line[256];
    assert_true(line_starting(line, sizeof line, r.out, ">"));
    assert_true(starts_with(line, ">    2  ordinal"));
    assert_int_equal(count_of(r.out, "\n>"), 1);
    run_free(&r);

    r = cli("compare '%s' --format=json", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out,
                    "\"recommendation\": {\"layerwise_split_size\": 2, \"ownership\": \"ordinal\"}");
    assert_int_equal(count_of(r.out, "\"layerwise_split_size\": "), 10); /* 9 rows + the pick */
    run_free(&r);

    /* Split flags are ignored by compare; the rest still apply. */
    r = cli("compare '%s' --format=json --layerwise_split_size=4 --ownership=global", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out,
                    "\"recommendation\": {\"layerwise_split_size\": 2, \"ownership\": \"ordinal\"}");
    run_free(&r);
}

/* ---- invalid input: exit 1, FILE:LINE:COLUMN ------------------------------------------- */

static void test_invalid_input_position(void **state)
{
    (void)state;
    run_result r = cli("plan '%s'", INVALID "type_string_for_int.yaml");
    assert_invalid(&r, INVALID "type_string_for_int.yaml:3:15: world_size: ");

    r = cli("compare '%s' --format=json", INVALID "dupkey_nested.yaml");
    assert_invalid(&r, INVALID "dupkey_nested.yaml:5:3: duplicate key \"world_size\"");

    r = cli("plan '%s'", INVALID "utf8_truncated_sequence.yaml");
    assert_invalid(&r, INVALID "utf8_truncated_sequence.yaml:3:20: ");

    /* an error inside the referenced model file names that file */
    r = cli("plan '%s'", INVALID "syntax_in_model_file.yaml");
    assert_invalid(&r, INVALID "models/broken.json:4:13: ");

    r = cli("plan '%s'", INVALID "io_missing_model.yaml");
    assert_invalid(&r, INVALID "io_missing_model.yaml:2:8: model file ");

    /* planning errors: at the option in the file ... */
    r = cli("plan '%s' --format=json", KVSHARD_TEST_DATA "/deploy/split3.yaml");
    assert_invalid(&r, KVSHARD_TEST_DATA "/deploy/split3.yaml:5:25: layerwise_split_size 3");

    r = cli("plan '%s'", INVALID "plan_kv_heads.yaml");
    assert_invalid(&r, INVALID "models/kv_heads_3.json:5:26: ");

    /* ... or at the flag that set it */
    r = cli("plan '%s' --layerwise_split_size=3", EXAMPLE);
    assert_invalid(&r, "command line --layerwise_split_size: layerwise_split_size 3");

    r = cli("plan '%s' --memory_per_rank=1KiB", EXAMPLE);
    assert_invalid(&r, "command line --memory_per_rank: ");

    /* a flag that repairs the file makes it plan */
    r = cli("plan '%s' --layerwise_split_size=2 --format=json",
            KVSHARD_TEST_DATA "/deploy/split3.yaml");
    assert_int_equal(r.status, 0);
    run_free(&r);

    r = cli("plan '%s'", KVSHARD_TEST_DATA "/no_such_dir/dep.yaml");
    assert_invalid(&r, KVSHARD_TEST_DATA "/no_such_dir/dep.yaml: cannot open: ");
}

/* ---- bad usage: exit 2 ------------------------------------------------------------------- */

static void test_usage_errors(void **state)
{
    (void)state;
    run_result r = cli("%s", "");
    assert_usage(&r);
    r = cli("frobnicate '%s'", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --frobnicate=1", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --format=xml", EXAMPLE);
    assert_usage(&r);
    r = cli("plan");
    assert_usage(&r);
    r = cli("compare --format=json");
    assert_usage(&r);
    r = cli("plan '%s' --world_size=abc", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --world_size=0", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --enable_layerwise_split=maybe", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --memory_per_rank=20GB", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' extra", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --=4", EXAMPLE);
    assert_usage(&r);
    /* Flags are read once, after the config: a config that cannot be read
     * is reported first, as invalid input. */
    r = cli("plan /nonexistent/kvshard.yaml --frobnicate=1");
    assert_int_equal(r.status, 1);
    assert_true(starts_with(r.err, "/nonexistent/kvshard.yaml: cannot open: "));
    run_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_help),
        cmocka_unit_test(test_plan_text),
        cmocka_unit_test(test_plan_json),
        cmocka_unit_test(test_flags_override_file),
        cmocka_unit_test(test_bare_model_with_flags),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_invalid_input_position),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
