/* The kvshard command line: output, flags, exit status and error positions. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    assert_string_equal(r.out, "kvshard 0.2.0\n");
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
    assert_contains(r.out, "\"kvshard_version\": \"0.2.0\"");
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
    assert_contains(r.out, "recommended: --enable_layerwise_split=true --layerwise_split_size=2 "
                           "--ownership=ordinal\n");
    char line[256];
    assert_true(line_starting(line, sizeof line, r.out, ">"));
    assert_true(starts_with(line, ">    2  ordinal"));
    assert_int_equal(count_of(r.out, "\n>"), 1);
    run_free(&r);

    r = cli("compare '%s' --format=json", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(
        r.out, "\"recommendation\": {\"layerwise_split_size\": 2, \"ownership\": \"ordinal\"}");
    assert_int_equal(count_of(r.out, "\"layerwise_split_size\": "), 10); /* 9 rows + the pick */
    run_free(&r);

    /* Split flags are ignored by compare; the rest still apply. */
    r = cli("compare '%s' --format=json --layerwise_split_size=4 --ownership=global", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(
        r.out, "\"recommendation\": {\"layerwise_split_size\": 2, \"ownership\": \"ordinal\"}");
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
    r = cli("plan '%s' --memory_per_rank=20G", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' extra", EXAMPLE);
    assert_usage(&r);
    r = cli("plan '%s' --=4", EXAMPLE);
    assert_usage(&r);
    r = cli("compare '%s' --format=svg", EXAMPLE);
    assert_usage(&r);
    /* report writes HTML only: any --format is refused, not ignored. */
    r = cli("report '%s' --format=json", EXAMPLE);
    assert_string_equal(r.err, "kvshard: report always writes HTML; --format is for plan and "
                               "compare\nTry 'kvshard --help'.\n");
    assert_usage(&r);
    /* Flags are read once, after the config: a config that cannot be read
     * is reported first, as invalid input. */
    r = cli("plan /nonexistent/kvshard.yaml --frobnicate=1");
    assert_int_equal(r.status, 1);
    assert_true(starts_with(r.err, "/nonexistent/kvshard.yaml: cannot open: "));
    run_free(&r);
}

/* ---- failed writes ---------------------------------------------------------------------- */

/* Run a shell command line (sh -c); ARGS is a printf format. */
static run_result shell(const char *fmt, ...) CLI_PRINTF;

static run_result shell(const char *fmt, ...)
{
    char line[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char command[4200];
    snprintf(command, sizeof command, "bash -c '%s'", line);
    run_result r;
    r.status = tu_run(command, &r.out, &r.err);
    return r;
}

/* A full disk is an error for every output, --help and --version included:
 * exit 1 with the system's reason. */
static void test_write_to_full_disk(void **state)
{
    (void)state;
    static const char *const commands[] = {"plan \"%s\" --format=json", "plan \"%s\"",
                                           "compare \"%s\"", "--help", "--version"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char args[512];
        snprintf(args, sizeof args, commands[i], EXAMPLE);
        run_result r = shell("\"%s\" %s >/dev/full", KVSHARD_CLI, args);
        if (r.status != 1)
            print_error("%s: exit %d, stderr %s\n", args, r.status, r.err);
        assert_int_equal(r.status, 1);
        assert_string_equal(r.err, "kvshard: cannot write to standard output: No space left on "
                                   "device\n");
        run_free(&r);
    }
}

/* With SIGPIPE ignored, a reader that goes away stops the output at the
 * next write, and the CLI says why: a 10^5-layer plan (several MB of JSON)
 * into `head -c 1`. */
static void test_closed_pipe(void **state)
{
    (void)state;
    char path[] = "/tmp/kvshard_pipe_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *config = "{num_hidden_layers: 100000, num_attention_heads: 8, head_dim: 8}\n";
    assert_int_equal(write(fd, config, strlen(config)), (ssize_t)strlen(config));
    close(fd);
    run_result r = shell("trap \"\" PIPE; \"%s\" plan %s --format=json | head -c 1 >/dev/null; "
                         "exit ${PIPESTATUS[0]}",
                         KVSHARD_CLI, path);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "kvshard: cannot write to standard output: Broken pipe\n");
    run_free(&r);
    unlink(path);
}

/* ---- engine profiles and flag files -------------------------------------------------------- */

static void test_xllm_profile(void **state)
{
    (void)state;
    run_result r = cli("plan \"%s/models/qwen3_5_35b_a3b.json\" --world_size=4 --engine=xllm "
                       "--memory_per_rank=20GiB",
                       KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "capacity   xllm profile: budget 20.00 GiB per rank; 631 state slots "
                           "(9.46 GiB), 8,634 blocks of 128 tokens = 1,105,152 tokens\n");
    assert_contains(r.out, "the engine logs blocks: 8634, linear_blocks: 631; usable after "
                           "padding: 8,633 blocks, 630 state slots\n");
    run_free(&r);
    r = cli("plan \"%s\" --engine=xllm", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "631 state slots (9.46 GiB), 115,127 blocks of 16 tokens");
    run_free(&r);
    /* The kvshard profile's figures of the same file are unchanged. */
    r = cli("plan \"%s\"", EXAMPLE);
    assert_contains(r.out, "197,493 blocks = 3,159,888 tokens");
    run_free(&r);
}

static void test_flagfile_errors(void **state)
{
    (void)state;
    char path[] = "/tmp/kvshard_flags_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    /* The value "big" stands at column 4 + len("--block_size=") = 17. */
    const char *flags = "# engine flags\n--world_size=4\n   --block_size=big\n";
    assert_int_equal(write(fd, flags, strlen(flags)), (ssize_t)strlen(flags));
    close(fd);
    run_result r = cli("plan \"%s\" --flagfile=%s", EXAMPLE, path);
    assert_int_equal(r.status, 2);
    char want[256];
    snprintf(want, sizeof want, "kvshard: %s:3:17: block_size: expected an integer", path);
    assert_true(starts_with(r.err, want));
    assert_string_equal(r.out, "");
    run_free(&r);
    unlink(path);
}

/* Hybrid layers (H<n>), no-cache layers (.) and the contiguous rule in the
 * text layer map. */
static void test_layer_map_glyphs(void **state)
{
    (void)state;
    run_result r = cli("plan \"%s/falcon_h1_34b_tp8.yaml\"", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    /* 72 layers, contiguous over 2: layers 0-35 on split rank 0. */
    assert_contains(r.out, "     0 | H0 H0 H0 H0 H0 H0 H0 H0 H0 H0\n");
    assert_contains(r.out, "    30 | H0 H0 H0 H0 H0 H0 H1 H1 H1 H1\n");
    assert_contains(r.out, ". no cache)");
    run_free(&r);
    r = cli("plan \"%s/nemotron_h_8b_tp4.yaml\"", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "     0 | L  .  L  .  L  .  L  F* .  L\n");
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
        cmocka_unit_test(test_write_to_full_disk),
        cmocka_unit_test(test_closed_pipe),
        cmocka_unit_test(test_xllm_profile),
        cmocka_unit_test(test_flagfile_errors),
        cmocka_unit_test(test_layer_map_glyphs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
