/* The kvshard command line: output, flags, exit status and error positions. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "test_util.h"

#include "deploy/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    char args[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    char command[16640];
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

/* ---- --version, -V, help ----------------------------------------------------------- */

static const char general_help[] =
    "usage: kvshard plan CONFIG [FLAG ...] [--format=text|json|svg|html] [-o FILE]\n"
    "       kvshard compare CONFIG [FLAG ...] [--format=text|json] [-o FILE]\n"
    "       kvshard fit MODEL --gpus=N --device_memory=SIZE [--context_length=L] [FLAG ...]\n"
    "           [--max_tp_size=A] [--max_pp_size=B] [--top=K] [--format=text|json] [-o FILE]\n"
    "       kvshard report CONFIG [FLAG ...] [-o FILE]\n"
    "       kvshard transfer P_PLAN D_PLAN [--p.KEY=VALUE ...] [--d.KEY=VALUE ...]\n"
    "           [--context_length=N] [--nic=NAME|RATE] [--p_replica=N] [--d_replica=N]\n"
    "           [--format=text|json|svg] [-o FILE]\n"
    "       kvshard help [COMMAND] [--engine=NAME]\n"
    "       kvshard --help | -V | --version\n"
    "\n"
    "CONFIG is a deployment YAML file, a model's config.json, or a model directory.\n"
    "  plan     which TP rank stores the KV cache of each layer, with per-rank\n"
    "           memory, KV block capacity and sequences at a context length\n"
    "  compare  every layerwise split size that divides the attention TP size,\n"
    "           under each ownership rule, and the one to use\n"
    "  fit      the layout of N GPUs (TP, stages, data parallelism, split) that\n"
    "           serves the most sequences, with the flags that run it\n"
    "  report   one self-contained HTML page of the plan and the comparison\n"
    "  transfer which prefill rank sends which part of a request's cache to which\n"
    "           decode rank, the bytes, and the time at a NIC speed\n"
    "  help     the flags of a command, with their defaults and units\n"
    "\n"
    "FLAGs are the deployment's keys, and override CONFIG (--world_size=8\n"
    "--context_length=32768); under an engine's profile (--engine=NAME) the\n"
    "engine's own flags too. 'kvshard help plan' lists every flag with its\n"
    "default and unit, 'kvshard help plan --engine=NAME' those of that engine.\n"
    "\n"
    "-o FILE replaces FILE only once the whole document is written (a temporary\n"
    "file beside it, renamed over it); -o - is standard output. A FIFO or a\n"
    "device is written directly. FILE must not be a file kvshard reads (the\n"
    "CONFIG, the model, flag files, the safetensors files of device inputs).\n"
    "\n"
    "Exit status, the same for every command: 0 success; 2 bad usage: a value\n"
    "on the command line or in a flag file that does not parse or is out of\n"
    "range, an unknown flag; 1 a refused plan, a file that does not read, a\n"
    "value of the deployment file, a failed write.\n";

static void test_version_and_help(void **state)
{
    (void)state;
    static const char *const versions[] = {"--version", "-V", "plan -V"};
    for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
        run_result r = cli("%s", versions[i]);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, "kvshard 0.4.0\n");
        assert_string_equal(r.err, "");
        run_free(&r);
    }
    static const char *const general[] = {"--help", "-h", "help", "help --engine=vllm"};
    for (size_t i = 0; i < sizeof general / sizeof general[0]; i++) {
        run_result r = cli("%s", general[i]);
        assert_int_equal(r.status, 0);
        assert_string_equal(r.out, general_help);
        assert_string_equal(r.err, "");
        run_free(&r);
    }
    run_result r = cli("help help");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "usage: kvshard help [COMMAND] [--engine=NAME]\n\n"
                               "The flags of a command, with their defaults and units, under "
                               "the engine\nprofile --engine names (kvshard when none).\n");
    run_free(&r);
}

/* `kvshard help plan` and `kvshard plan --help`: the command, its output
 * flags, then every flag of the profile with its unit and default. */
static void test_command_help(void **state)
{
    (void)state;
    run_result r = cli("help plan");
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_true(starts_with(
        r.out, "usage: kvshard plan CONFIG [FLAG ...] [--format=text|json|svg|html] [-o FILE]\n"
               "\n"
               "Which TP rank stores the KV cache of each layer, with each rank's memory,\n"
               "the KV blocks that fit and, at a context length, the sequences that run\n"
               "at once.\n"
               "CONFIG is a deployment YAML file, a model's config.json, or a model directory.\n"
               "\n"
               "output:\n"
               "  --format=FORMAT             text (the default), json, svg (the layer map) or\n"
               "                              html (the page kvshard report writes)\n"
               "  -o FILE, --output=FILE      the document replaces FILE whole; - (the default)\n"
               "                              is standard output\n"
               "\n"
               "flags of the kvshard profile; they override CONFIG. As gflags reads them:\n"
               "--key=value or --key value, a bare --key for true and --nokey for false.\n"
               "  --world_size                ranks, 1 to 65,536; default 1\n"));
    /* Units and defaults from the tables: KVSHARD_MAX_RANKS, the kvshard
     * profile's block_size 16 and max_seqs 256, the ownership it settles. */
    assert_contains(r.out, "\n  --ownership                 ordinal, global or contiguous; "
                           "default ordinal\n");
    assert_contains(r.out, "\n  --block_size                tokens, 1 to 1,048,576; default "
                           "16\n");
    assert_contains(r.out, "\n  --memory_per_rank           bytes, or a size: 80GiB, 141GB, "
                           "72.5GiB;\n                              default none\n");
    assert_contains(r.out, "\n  --max_seqs                  sequences, 1 to 16,777,216; "
                           "default 256\n");
    assert_contains(r.out, "\n  --context_length            tokens, 1 to 1,073,741,824; "
                           "default none\n");
    /* xLLM's settings are gflags flags here too, read only under its
     * profile; its max_memory_utilization falls back to 0.8. */
    assert_contains(r.out, "\naccepted, but read only by the xllm profile (--engine=xllm):\n"
                           "  --enable_prefix_cache       true or false; default true\n");
    assert_contains(r.out, "\n  --max_memory_utilization    a fraction above 0, at most 1; "
                           "default 0.8\n");
    assert_contains(r.out, "\n  --engine_version, --engine-version\n"
                           "                              a release, 0.10.0 to 0.11.0; "
                           "default 0.11.0\n");
    assert_true(strstr(r.out, "\nengine command lines:\n"
                              "  --flagfile=FILE             more flags, one a line (# starts "
                              "a comment); also\n"
                              "                              --flagfile FILE\n"
                              "  --ignore_unknown_flags      skip the flags and arguments the "
                              "profile does not\n"
                              "                              read; the plan's warning "
                              "flags_ignored names them\n"
                              "\n"
                              "'kvshard help plan --engine=NAME' lists the flags of another "
                              "profile:\n"
                              "kvshard, xllm, vllm, sglang or trtllm.\n") != NULL);
    /* Every option and every setting a gflags profile declares is there. */
    for (size_t i = 0; i < KVSHARD__OPT_COUNT; i++) {
        /* Its name, then the column or its other name ("--pp_size,"). */
        char want[96], named[96];
        snprintf(want, sizeof want, "\n  --%s ",
                 kvshard_options__option_name((kvshard__option_id)i));
        snprintf(named, sizeof named, "\n  --%s, ",
                 kvshard_options__option_name((kvshard__option_id)i));
        if (!strstr(r.out, want))
            assert_contains(r.out, named);
    }
    assert_contains(r.out, "\n  --pp_size, --pipeline_parallel_size\n"
                           "                              stages, 1 to 65,536; default 1\n");
    assert_contains(r.out, "\n  --pp_partition              the layers of each stage, as 31,30; "
                           "default none\n");
    for (size_t i = 0; i < kvshard_setting_count(); i++) {
        kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
        assert_int_equal(kvshard_setting_info_at(&info, i), KVSHARD_OK);
        if (info.engine != KVSHARD_ENGINE_XLLM)
            continue;
        char want[96];
        snprintf(want, sizeof want, "\n  --%s", info.key);
        assert_contains(r.out, want);
    }
    /* The same from `plan --help`, wherever --help stands. */
    static const char *const same[] = {"plan --help", "plan '%s' --format=json -h", "--help plan",
                                       "-o /dev/null --engine kvshard help plan"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        run_result again = cli(same[i], EXAMPLE);
        assert_int_equal(again.status, 0);
        assert_string_equal(again.out, r.out);
        run_free(&again);
    }
    run_free(&r);

    /* Under vLLM: its spellings beside kvshard's names, its defaults. */
    r = cli("help plan --engine=vllm");
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\nflags of the vllm profile; they override CONFIG. As argparse "
                           "reads them:\n--key=value or --key value, one dash or two, '-' and "
                           "'_' alike, a bare --key\nfor true and --no-key for false.\n");
    assert_contains(r.out, "\n  --max_seqs, --max-num-seqs  sequences, 1 to 16,777,216; "
                           "default 256\n");
    assert_contains(r.out, "\n  --tensor-parallel-size, -tp\n"
                           "                              ranks, 1 to 65,536; default "
                           "world_size / dp_size\n");
    assert_contains(r.out, "\n  --gpu-memory-utilization    a fraction above 0, at most 1; "
                           "default 0.92 (0.9\n                              before 0.20.0)\n");
    assert_contains(r.out, "\n  --ignore-unknown-flags      skip");
    assert_null(strstr(r.out, "accepted, but"));
    run_result spaced = cli("plan --help --engine vllm");
    assert_string_equal(spaced.out, r.out);
    run_free(&spaced);
    run_free(&r);
    /* SGLang does not read kvshard's num_speculative_tokens. */
    r = cli("help compare --engine=sglang");
    assert_int_equal(r.status, 0);
    assert_true(starts_with(r.out, "usage: kvshard compare CONFIG [FLAG ...] "
                                   "[--format=text|json] [-o FILE]\n"));
    assert_contains(r.out, "\naccepted, but not read by the sglang profile:\n"
                           "  --num_speculative_tokens    tokens, 0 to 1,024; default 0\n");
    assert_contains(r.out, "  --format=FORMAT             text (the default) or json\n");
    run_free(&r);
    r = cli("help report");
    assert_contains(r.out, "kvshard plan --format=html).\n");
    assert_null(strstr(r.out, "--format=FORMAT"));
    run_free(&r);

    r = cli("help frobnicate");
    assert_string_equal(r.err, "kvshard: unknown command 'frobnicate' (expected plan, compare, "
                               "fit, report, transfer or help)\nTry 'kvshard --help'.\n");
    assert_usage(&r);
    r = cli("help plan --engine=tgi");
    assert_string_equal(r.err, "kvshard: --engine takes kvshard, xllm, vllm, sglang or trtllm, not "
                               "'tgi'\nTry 'kvshard --help'.\n");
    assert_usage(&r);
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
    assert_contains(r.out, "\"kvshard_version\": \"0.4.0\"");
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
    assert_int_equal(
        count_of(r.out, "\"kind\": \"full_attention\", \"owner\": 3, \"compress_ratio\": null, "
                        "\"kv_source\": null, \"index_key\": false, \"stage\": 0}"),
        12);
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

/* The example's recommendation: T = 4, S = 2 ordinal, each split rank
 * storing 5 of the 10 full layers of 1 replicated KV head of 256, K and V
 * in bf16: 5 x 1 x 256 x 2 x 2 = 5,120 bytes a token; 20 GiB the budget;
 * no context length, so no max_seqs to recommend. */
#define RECOMMENDATION_OF_THE_EXAMPLE                                                            \
    "\"recommendation\": {\"world_size\": 4, \"pp_size\": 1, \"attn_tp_size\": 4, "           \
    "\"enable_layerwise_split\": true, \"layerwise_split_size\": 2, \"ownership\": \"ordinal\", " \
    "\"max_seqs\": null,\n                     \"memory_per_rank\": 21474836480, "                \
    "\"max_kv_bytes_per_token\": 5120,\n                     \"flags\": "                         \
    "\"--enable_layerwise_split=true --layerwise_split_size=2 --ownership=ordinal\"}"

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
        r.out, RECOMMENDATION_OF_THE_EXAMPLE);
    assert_int_equal(count_of(r.out, "\"layerwise_split_size\": "), 10); /* 9 rows + the pick */
    run_free(&r);

    /* A recommended max_seqs comes with where it is from: S = 2's balanced
     * 98 (as the README's comparison) against a smaller max_seqs given. */
    r = cli("compare '%s' --context_length=32768 --max_seqs=50", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "--ownership=ordinal --max_seqs=98\n  max_seqs 98 is the balanced "
                           "max_seqs: the most sequences of 32,768 tokens whose state and KV "
                           "blocks all fit on every rank (max_seqs 50 leaves blocks no sequence "
                           "uses)\n");
    run_free(&r);
    r = cli("compare '%s' --format=json --context_length=32768", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"max_seqs\": 98,\n");
    assert_contains(r.out, "\"flags\": \"--enable_layerwise_split=true --layerwise_split_size=2 "
                           "--ownership=ordinal --max_seqs=98\"}");
    run_free(&r);

    /* Split flags are ignored by compare; the rest still apply. */
    r = cli("compare '%s' --format=json --layerwise_split_size=4 --ownership=global", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(
        r.out, RECOMMENDATION_OF_THE_EXAMPLE);
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
    char line[16384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    char command[16500];
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
    run_result r = cli("plan \"%s/falcon_h1_34b_tp4.yaml\" --enable_layerwise_split "
                       "--layerwise_split_size=2 --ownership=contiguous",
                       KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    /* 72 layers, contiguous over 2: layers 0-35 on split rank 0. */
    assert_contains(r.out, "     0 | H0 H0 H0 H0 H0 H0 H0 H0 H0 H0\n");
    assert_contains(r.out, "    30 | H0 H0 H0 H0 H0 H0 H1 H1 H1 H1\n");
    /* The legend names the kinds the model has, and only those. */
    assert_contains(r.out, "layer map  (H<n>: hybrid layer whose KV split rank n stores, H*: "
                           "stored on every rank)\n");
    run_free(&r);
    r = cli("plan \"%s/nemotron_h_8b_tp4.yaml\"", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "     0 | L  .  L  .  L  .  L  F* .  L\n");
    assert_contains(r.out, "F*: stored on every rank, L linear attention, . no cache)\n");
    run_free(&r);
    /* Compressed layers carry their owner; shared and chunked ones a letter. */
    r = cli("plan \"%s/deepseek_v4_flash_tp8.yaml\"", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "     0 | C0 C1 C2 C3 C4 C5 C6 C7 C0 C1\n");
    assert_contains(r.out, "scratch/seq  blocks\n");
    run_free(&r);
    r = cli("plan \"%s/gemma_4_e2b_tp1.yaml\"", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "    10 | W  W  W  W  F* S  S  S  S  S\n");
    assert_contains(r.out, "F*: stored on every rank, W sliding window, S shared KV)\n");
    run_free(&r);
    r = cli("plan \"%s/llama4_scout_tp8.yaml\"", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "     0 | K  K  K  F* K  K  K  F* K  K\n");
    run_free(&r);
}

/* ---- -o: inputs refused, files replaced whole or not at all ------------------------------ */

/* A scratch directory with a copy of the seed deployment (dep.yaml) and its
 * model (models/qwen3_5_35b_a3b.json), and a model directory (mdir/). */
typedef struct scratch {
    char dir[64];
} scratch;

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

/* The whole file as a string (malloc'd), or NULL when it cannot be read. */
static char *get_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, n;
    char *text = malloc(cap);
    assert_non_null(text);
    while ((n = fread(text + len, 1, cap - 1 - len, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            cap *= 2;
            text = realloc(text, cap);
            assert_non_null(text);
        }
    }
    fclose(f);
    text[len] = '\0';
    return text;
}

static const char *in_dir(const scratch *s, const char *name)
{
    static char paths[8][512];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 512, "%s/%s", s->dir, name);
    return p;
}

static void scratch_open(scratch *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/kvshard_cli_XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    run_result r =
        shell("cd \"%s\" && mkdir models mdir && cp \"%s\" dep.yaml && cp \"%s\" "
              "models/ && cp \"%s\" mdir/config.json",
              s->dir, EXAMPLE, KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json", NEXT_MODEL);
    assert_int_equal(r.status, 0);
    run_free(&r);
}

static void scratch_close(scratch *s)
{
    run_result r = shell("rm -rf \"%s\"", s->dir);
    assert_int_equal(r.status, 0);
    run_free(&r);
}

/* The directory's entries, sorted, one per line: no temporary file left. */
static char *listing(const scratch *s)
{
    run_result r = shell("cd \"%s\" && ls -A | LC_ALL=C sort | tr \"\\n\" \" \"", s->dir);
    assert_int_equal(r.status, 0);
    free(r.err);
    return r.out;
}

/* `args` must fail with exit 2 and `message`, and leave `path` as it was. */
static void assert_refused(const scratch *s, const char *args, const char *path,
                           const char *message)
{
    char *before = get_file(path);
    assert_non_null(before);
    run_result r = shell("cd \"%s\" && \"%s\" %s", s->dir, KVSHARD_CLI, args);
    char want[1024];
    snprintf(want, sizeof want, "%s\nTry 'kvshard --help'.\n", message);
    if (r.status != 2 || strcmp(r.err, want) != 0)
        print_error("%s: exit %d, stderr\n%s\nwanted exit 2 and\n%s", args, r.status, r.err, want);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, want);
    assert_string_equal(r.out, "");
    char *after = get_file(path);
    assert_non_null(after);
    assert_string_equal(after, before);
    free(before);
    free(after);
    run_free(&r);
}

/* A target that is any file the run reads, by any path, is refused before it
 * is opened: the CONFIG, the model file, a model directory's config.json
 * and every flag file. */
static void test_output_refuses_inputs(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    const char *dep = in_dir(&s, "dep.yaml");
    const char *model = in_dir(&s, "models/qwen3_5_35b_a3b.json");
    run_result r = shell("cd \"%s\" && ln dep.yaml hard.yaml && ln -s dep.yaml sym.yaml && "
                         "mkdir sub && ln -s ../models/qwen3_5_35b_a3b.json sub/m.json",
                         s.dir);
    assert_int_equal(r.status, 0);
    run_free(&r);
    const char *same_dep = "kvshard: refusing to write %s: it is the same file as the CONFIG "
                           "file dep.yaml, which kvshard reads";
    char want[512];
    snprintf(want, sizeof want, same_dep, "dep.yaml");
    assert_refused(&s, "plan dep.yaml -o dep.yaml", dep, want);
    snprintf(want, sizeof want, same_dep, "hard.yaml");
    assert_refused(&s, "plan dep.yaml -o hard.yaml --format=json", dep, want);
    snprintf(want, sizeof want, same_dep, "sym.yaml");
    assert_refused(&s, "compare dep.yaml --output=sym.yaml", dep, want);
    snprintf(want, sizeof want, same_dep, "sub/../dep.yaml");
    assert_refused(&s, "report dep.yaml -o sub/../dep.yaml", dep, want);

    /* The model file the deployment names, by its path and a symlink. */
    const char *same_model = "kvshard: refusing to write %s: it is the same file as the model "
                             "file ./models/qwen3_5_35b_a3b.json, which kvshard reads";
    snprintf(want, sizeof want, same_model, "models/qwen3_5_35b_a3b.json");
    assert_refused(&s, "plan ./dep.yaml -o models/qwen3_5_35b_a3b.json", model, want);
    snprintf(want, sizeof want, same_model, "sub/m.json");
    assert_refused(&s, "plan ./dep.yaml -o sub/m.json", model, want);

    /* A model directory: CONFIG stands for its config.json. */
    assert_refused(&s, "plan mdir -o mdir/config.json", in_dir(&s, "mdir/config.json"),
                   "kvshard: refusing to write mdir/config.json: it is the same file as the "
                   "CONFIG file mdir/config.json, which kvshard reads");
    /* ... and so does a deployment's `model: mdir`. */
    put_file(in_dir(&s, "dirdep.yaml"), "model: mdir\nparallel: {world_size: 2}\n");
    assert_refused(&s, "plan dirdep.yaml -o ./mdir/config.json", in_dir(&s, "mdir/config.json"),
                   "kvshard: refusing to write ./mdir/config.json: it is the same file as the "
                   "model file mdir/config.json, which kvshard reads");

    /* Flag files, a nested one included. */
    put_file(in_dir(&s, "inner.flags"), "--max_seqs=64\n");
    put_file(in_dir(&s, "outer.flags"), "--world_size=4\n--flagfile=inner.flags\n");
    assert_refused(&s, "plan dep.yaml --flagfile=outer.flags -o outer.flags",
                   in_dir(&s, "outer.flags"),
                   "kvshard: refusing to write outer.flags: it is the same file as the flag file "
                   "outer.flags, which kvshard reads");
    assert_refused(&s, "plan dep.yaml --flagfile=outer.flags -o sub/../inner.flags",
                   in_dir(&s, "inner.flags"),
                   "kvshard: refusing to write sub/../inner.flags: it is the same file as the "
                   "flag file inner.flags, which kvshard reads");

    /* Standard output appended to an input. */
    assert_refused(&s, "plan dep.yaml >> dep.yaml", dep,
                   "kvshard: standard output is the same file as the CONFIG file dep.yaml, which "
                   "kvshard reads; write the output elsewhere");

    /* Nothing was created on the way. */
    char *names = listing(&s);
    assert_string_equal(names, "dep.yaml dirdep.yaml hard.yaml inner.flags mdir models outer.flags "
                               "sub sym.yaml ");
    free(names);
    scratch_close(&s);
}

/* The bytes and identity of a file, to show it was left as it was. */
typedef struct file_state {
    struct stat st;
    unsigned char bytes[256];
    size_t len;
} file_state;

static file_state state_of(const char *path)
{
    file_state f;
    memset(&f, 0, sizeof f);
    assert_int_equal(stat(path, &f.st), 0);
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    f.len = fread(f.bytes, 1, sizeof f.bytes, in);
    assert_int_equal(fclose(in), 0);
    return f;
}

static void assert_unchanged(const char *path, const file_state *before)
{
    file_state now = state_of(path);
    assert_true(now.st.st_ino == before->st.st_ino && now.st.st_dev == before->st.st_dev);
    assert_int_equal(now.len, before->len);
    assert_memory_equal(now.bytes, before->bytes, now.len);
}

/* A model directory ck/ with a safetensors index and one shard cut after
 * its header (a tensor of 4 bytes), for device inputs. */
static void put_checkpoint(const scratch *s)
{
    run_result r = shell("cd \"%s\" && mkdir ck", s->dir);
    assert_int_equal(r.status, 0);
    run_free(&r);
    put_file(in_dir(s, "ck/config.json"),
             "{\"model_type\": \"tiny_dense\", \"num_hidden_layers\": 4, "
             "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 64}\n");
    put_file(in_dir(s, "ck/model.safetensors.index.json"),
             "{\"weight_map\": {\"model.embed_tokens.weight\": \"model-1.safetensors\"}}\n");
    static const char header[] =
        "{\"model.embed_tokens.weight\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
    unsigned char shard[8 + sizeof header - 1];
    uint64_t n = sizeof header - 1;
    for (int i = 0; i < 8; i++)
        shard[i] = (unsigned char)(n >> (8 * i));
    memcpy(shard + 8, header, n);
    FILE *f = fopen(in_dir(s, "ck/model-1.safetensors"), "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(shard, 1, sizeof shard, f), sizeof shard);
    assert_int_equal(fclose(f), 0);
}

/* `args` (run in the scratch directory) must be refused with exit 2 and
 * `message`, and leave `path` as it was, whatever it holds. */
static void assert_refused_file(const scratch *s, const char *args, const char *path,
                                const char *message)
{
    file_state before = state_of(path);
    run_result r = shell("cd \"%s\" && \"%s\" %s", s->dir, KVSHARD_CLI, args);
    char want[1024];
    snprintf(want, sizeof want, "%s\nTry 'kvshard --help'.\n", message);
    if (r.status != 2 || strcmp(r.err, want) != 0)
        print_error("%s: exit %d, stderr\n%s\nwanted exit 2 and\n%s", args, r.status, r.err, want);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, want);
    assert_string_equal(r.out, "");
    run_free(&r);
    assert_unchanged(path, &before);
}

/* The safetensors index and shards a run reads for device inputs are
 * inputs too, by any path, under plan, compare, report and fit: they are
 * read while the document is made, and the target is checked against
 * them before it is opened. */
static void test_output_refuses_weights(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    put_checkpoint(&s);
    const char *index = in_dir(&s, "ck/model.safetensors.index.json");
    const char *shard = in_dir(&s, "ck/model-1.safetensors");
    run_result r = shell("cd \"%s\" && ln -s ck/model-1.safetensors sym.st && "
                         "ln ck/model-1.safetensors hard.st && mkdir -p sub",
                         s.dir);
    assert_int_equal(r.status, 0);
    run_free(&r);
    const char *same_index = "kvshard: refusing to write %s: it is the same file as the "
                             "safetensors index ck/model.safetensors.index.json, which kvshard "
                             "reads";
    const char *same_shard = "kvshard: refusing to write %s: it is the same file as the "
                             "safetensors file ck/model-1.safetensors, which kvshard reads";
    char want[512];
    snprintf(want, sizeof want, same_index, "ck/model.safetensors.index.json");
    assert_refused_file(&s, "plan ck --device_memory=80GiB -o ck/model.safetensors.index.json",
                        index, want);
    snprintf(want, sizeof want, same_shard, "ck/model-1.safetensors");
    assert_refused_file(&s, "plan ck --device_memory=80GiB --format=json "
                            "-o ck/model-1.safetensors",
                        shard, want);
    snprintf(want, sizeof want, same_shard, "sym.st");
    assert_refused_file(&s, "compare ck --device_memory=80GiB --output=sym.st", shard, want);
    snprintf(want, sizeof want, same_shard, "hard.st");
    assert_refused_file(&s, "report ck --device_memory=80GiB -o hard.st", shard, want);
    snprintf(want, sizeof want, same_index, "sub/../ck/model.safetensors.index.json");
    assert_refused_file(&s, "fit ck --gpus=1 --device_memory=80GiB "
                            "-o sub/../ck/model.safetensors.index.json",
                        index, want);
    snprintf(want, sizeof want, same_shard, "hard.st");
    assert_refused_file(&s, "fit ck --gpus=1 --device_memory=80GiB --format=json -o hard.st",
                        shard, want);
    /* Standard output appended to a shard. */
    assert_refused_file(&s, "plan ck --device_memory=80GiB >> hard.st", shard,
                        "kvshard: standard output is the same file as the safetensors file "
                        "ck/model-1.safetensors, which kvshard reads; write the output "
                        "elsewhere");

    /* Another file of the directory is written; and without device inputs
     * the weights are not read, so they are no inputs. */
    r = shell("cd \"%s\" && \"%s\" plan ck --device_memory=80GiB -o ck/plan.txt && "
              "\"%s\" plan ck --memory_per_rank=1GiB -o ck/plain.txt",
              s.dir, KVSHARD_CLI, KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    run_free(&r);
    char *text = get_file(in_dir(&s, "ck/plan.txt"));
    assert_non_null(strstr(text, "model      tiny_dense: 4 layers"));
    free(text);
    scratch_close(&s);
}

/* A run that fails leaves an existing target as it was (same inode, same
 * bytes); one that succeeds replaces it with the whole document, in a file
 * of the mode a new file gets, or of the old file's mode. */
static void test_output_replaced_whole(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    const char *out = in_dir(&s, "out.json");
    put_file(out, "old\n");
    struct stat st, st2;
    assert_int_equal(stat(out, &st), 0);

    /* plan_kv_heads_inline.yaml loads, and then neither plans nor compares. */
    static const char *const failing[] = {"plan", "compare", "report"};
    for (size_t i = 0; i < 3; i++) {
        run_result r = shell("cd \"%s\" && \"%s\" %s \"%s\" -o out.json", s.dir, KVSHARD_CLI,
                             failing[i], INVALID "plan_kv_heads_inline.yaml");
        assert_int_equal(r.status, 1);
        assert_true(starts_with(r.err, INVALID "plan_kv_heads_inline.yaml:3:24: "));
        run_free(&r);
        char *text = get_file(out);
        assert_string_equal(text, "old\n");
        free(text);
        assert_int_equal(stat(out, &st2), 0);
        assert_true(st2.st_ino == st.st_ino);
    }
    /* A bad flag, too. */
    run_result r =
        shell("cd \"%s\" && \"%s\" plan dep.yaml --world_size=x -o out.json", s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 2);
    run_free(&r);
    char *text = get_file(out);
    assert_string_equal(text, "old\n");
    free(text);

    /* Success: the same bytes as standard output, and a new file there. */
    run_result ref = cli("plan \"%s\" --format=json", EXAMPLE);
    assert_int_equal(ref.status, 0);
    assert_int_equal(chmod(out, 0640), 0);
    r = shell("cd \"%s\" && \"%s\" plan dep.yaml --format=json -o out.json", s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "");
    run_free(&r);
    text = get_file(out);
    assert_string_equal(text, ref.out);
    free(text);
    assert_int_equal(stat(out, &st2), 0);
    assert_true(st2.st_ino != st.st_ino);
    assert_int_equal(st2.st_mode & 07777, 0640); /* the old file's mode */

    /* New files get 0666 less the umask. */
    r = shell("cd \"%s\" && umask 022 && \"%s\" plan dep.yaml -o new022.txt && umask 077 && "
              "\"%s\" plan dep.yaml -o new077.txt",
              s.dir, KVSHARD_CLI, KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    run_free(&r);
    assert_int_equal(stat(in_dir(&s, "new022.txt"), &st2), 0);
    assert_int_equal(st2.st_mode & 07777, 0644);
    assert_int_equal(stat(in_dir(&s, "new077.txt"), &st2), 0);
    assert_int_equal(st2.st_mode & 07777, 0600);

    /* A symbolic link stays a link; the file it names gets the document. */
    put_file(in_dir(&s, "real.txt"), "old\n");
    r = shell("cd \"%s\" && ln -s real.txt link.txt && \"%s\" plan dep.yaml -o link.txt && test "
              "-L link.txt",
              s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    run_free(&r);
    run_result plain = cli("plan \"%s\"", EXAMPLE);
    text = get_file(in_dir(&s, "real.txt"));
    assert_string_equal(text, plain.out);
    free(text);
    run_free(&plain);

    /* A write that fails midway (a 4 KiB file size limit; the JSON is
     * larger): with SIGXFSZ ignored the write fails and says why; with its
     * default action the process is killed. Either way the old file stays
     * and the temporary file is gone. */
    put_file(in_dir(&s, "big.json"), "old\n");
    r = shell("cd \"%s\" && trap \"\" XFSZ && ulimit -f 4 && \"%s\" plan dep.yaml --format=json "
              "-o big.json",
              s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "kvshard: cannot write big.json: File too large\n");
    run_free(&r);
    r = shell("cd \"%s\" && ulimit -f 4 && \"%s\" report dep.yaml -o big.json; exit $?", s.dir,
              KVSHARD_CLI);
    assert_int_equal(r.status, 128 + 25); /* SIGXFSZ */
    run_free(&r);
    text = get_file(in_dir(&s, "big.json"));
    assert_string_equal(text, "old\n");
    free(text);
    assert_true(strlen(ref.out) > 4096);
    run_free(&ref);

    char *names = listing(&s);
    assert_string_equal(names, "big.json dep.yaml link.txt mdir models new022.txt new077.txt "
                               "out.json real.txt ");
    free(names);
    scratch_close(&s);
}

/* Targets that are not regular files are written directly: /dev/null, -,
 * /dev/stdout (the descriptor itself, so an appended file stays appended),
 * a FIFO; a directory and a dangling link are refused. */
static void test_output_special_targets(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    run_result plain = cli("plan \"%s\"", EXAMPLE);
    assert_int_equal(plain.status, 0);

    run_result r = cli("plan \"%s\" -o /dev/null", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, "");
    run_free(&r);
    r = cli("plan \"%s\" -o -", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, plain.out);
    run_free(&r);
    r = cli("plan \"%s\" --output=/dev/stdout", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, plain.out);
    run_free(&r);

    r = shell("cd \"%s\" && echo first > log && \"%s\" plan dep.yaml -o /dev/stdout >> log", s.dir,
              KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    run_free(&r);
    char *text = get_file(in_dir(&s, "log"));
    assert_true(starts_with(text, "first\nmodel      qwen3_5_moe: 40 layers"));
    assert_string_equal(text + 6, plain.out);
    free(text);

    r = shell("cd \"%s\" && mkfifo fifo && { cat fifo > got & } && \"%s\" plan dep.yaml -o fifo "
              "&& wait",
              s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    run_free(&r);
    text = get_file(in_dir(&s, "got"));
    assert_string_equal(text, plain.out);
    free(text);

    r = shell("cd \"%s\" && \"%s\" plan dep.yaml -o models", s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "kvshard: cannot write models: it is a directory\n");
    run_free(&r);
    r = shell("cd \"%s\" && ln -s nowhere dangling && \"%s\" plan dep.yaml -o dangling", s.dir,
              KVSHARD_CLI);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "kvshard: cannot write dangling: it is a symbolic link to a file "
                               "that does not exist\n");
    run_free(&r);
    r = cli("plan \"%s\" -o /dev/full", EXAMPLE);
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "kvshard: cannot write /dev/full: No space left on device\n");
    run_free(&r);
    r = cli("plan \"%s\" -o", EXAMPLE);
    assert_usage(&r);
    r = cli("plan \"%s\" --output=", EXAMPLE);
    assert_usage(&r);
    run_free(&plain);
    scratch_close(&s);
}

/* ---- messages: escaped, shortened, never misleading ---------------------------------------- */

/* No byte of stderr is a control character (but the newline), and no
 * invisible or bidirectional character is there raw. */
static void assert_printable(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p < 0x20 && *p != '\n') || *p == 0x7F)
            print_error("raw control character 0x%02X in\n%s\n", *p, text);
        assert_false((*p < 0x20 && *p != '\n') || *p == 0x7F);
    }
    assert_null(strstr(text, "\xC2\x9B"));     /* CSI */
    assert_null(strstr(text, "\xE2\x80\x8B")); /* zero-width space */
    assert_null(strstr(text, "\xE2\x80\xAE")); /* right-to-left override */
    assert_null(strstr(text, "\xEF\xBB\xBF")); /* byte order mark */
}

static void test_messages_escaped(void **state)
{
    (void)state;
    run_result r = cli("'\033[31mplan' '%s'", EXAMPLE);
    assert_printable(r.err);
    assert_string_equal(r.err, "kvshard: unknown command '\\x1B[31mplan' (expected plan, compare, "
                               "fit, report, transfer or help)\nTry 'kvshard --help'.\n");
    assert_usage(&r);
    r = cli("plan '%s' '--format=\033]0;x\007'", EXAMPLE);
    assert_printable(r.err);
    assert_true(starts_with(r.err, "kvshard: --format takes text, json, svg or html, not "
                                   "'\\x1B]0;x\\x07'\n"));
    assert_usage(&r);
    r = cli("plan '%s' 'extra\xE2\x80\xAE\xC2\x9B'", EXAMPLE);
    assert_printable(r.err);
    assert_string_equal(r.err, "kvshard: command line: \"extra\\u{202E}\\xC2\\x9B\" is not a "
                               "flag (flags look like --key=value)\nTry 'kvshard help plan'.\n");
    assert_usage(&r);
    /* An open error names the path escaped. */
    r = cli("plan '%s' -o '/nonexistent/\033[2J.json'", EXAMPLE);
    assert_printable(r.err);
    assert_string_equal(r.err, "kvshard: cannot write /nonexistent/\\x1B[2J.json: cannot create a "
                               "temporary file in /nonexistent/: No such file or directory\n");
    assert_int_equal(r.status, 1);
    run_free(&r);
    /* Flags: a zero-width space in a flag's name is shown. */
    r = cli("plan '%s' '--world\xE2\x80\x8B_size=4'", EXAMPLE);
    assert_printable(r.err);
    assert_string_equal(r.err, "kvshard: command line --world\\u{200B}_size: unknown flag "
                               "--world\\u{200B}_size: did you mean --world_size?\n"
                               "Try 'kvshard help plan'.\n");
    assert_usage(&r);

    /* A long -o path is shortened from the front, as an error's source. */
    char path[3100];
    int n = snprintf(path, sizeof path, "/nonexistent/");
    for (int i = 0; i < 300; i++)
        n += snprintf(path + n, sizeof path - (size_t)n, "dir%04d/", i);
    snprintf(path + n, sizeof path - (size_t)n, "plan.json");
    r = cli("plan '%s' -o '%s'", EXAMPLE, path);
    assert_int_equal(r.status, 1);
    assert_true(starts_with(r.err, "kvshard: cannot write ..."));
    assert_non_null(strstr(r.err, "dir0299/plan.json: "));
    assert_true(strlen(r.err) < 2 * KVSHARD_ERROR_SOURCE_MAX + 100);
    run_free(&r);
}

/* Flag files through the CLI: a NUL is shown with the rest of its flag, a
 * byte order mark is named, a long path is the system's error. */
static void test_flagfile_messages(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    FILE *f = fopen(in_dir(&s, "nul.flags"), "wb");
    assert_non_null(f);
    static const char nul[] = "--world_size=4\n--ownership=ord\0inal\n";
    assert_int_equal(fwrite(nul, 1, sizeof nul - 1, f), sizeof nul - 1);
    assert_int_equal(fclose(f), 0);
    put_file(in_dir(&s, "bom.flags"), "\xEF\xBB\xBF--world_size=4\n");

    run_result r =
        shell("cd \"%s\" && \"%s\" plan dep.yaml --flagfile=nul.flags", s.dir, KVSHARD_CLI);
    assert_printable(r.err);
    assert_string_equal(r.err, "kvshard: nul.flags:2:16: the flag \"--ownership=ord\\x00inal\" "
                               "holds a NUL character (\\x00), which no flag may hold\n"
                               "Try 'kvshard help plan'.\n");
    assert_usage(&r);
    r = shell("cd \"%s\" && \"%s\" plan dep.yaml --flagfile=bom.flags", s.dir, KVSHARD_CLI);
    assert_printable(r.err);
    assert_true(starts_with(r.err, "kvshard: bom.flags:1:1: \"\\u{FEFF}--world_size=4\" is not a "
                                   "flag (flags look like --key=value; the file starts with a "
                                   "UTF-8 byte order mark: save it without one)\n"));
    assert_usage(&r);

    char arg[5100];
    int n = snprintf(arg, sizeof arg, "--flagfile=%s/", s.dir);
    memset(arg + n, 'a', 5000);
    snprintf(arg + n + 5000, sizeof arg - (size_t)n - 5000, "/engine.flags");
    r = cli("plan '%s' '%s'", EXAMPLE, arg);
    assert_true(starts_with(r.err, "command line --flagfile: --flagfile=..."));
    assert_non_null(strstr(r.err, "aaaa/engine.flags: cannot open: File name too long\n"));
    assert_null(strstr(r.err, "needs a file name"));
    /* A flag file that does not read is a file that does not read: 1. */
    assert_invalid(&r, "command line --flagfile: --flagfile=...");
    scratch_close(&s);
}

/* Flag files that name the next one 16 times, 8 deep: stopped at the 257th
 * file (worked out in test_errors.c), at once rather than after minutes. */
static void test_flagfile_fanout(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    for (int i = 0; i < 8; i++) {
        char text[1024] = "";
        size_t used = 0;
        for (int k = 0; i < 7 && k < 16; k++)
            used += (size_t)snprintf(text + used, sizeof text - used, "--flagfile=f%d\n", i + 1);
        if (i == 7)
            snprintf(text, sizeof text, "--world_size=4\n");
        char name[8];
        snprintf(name, sizeof name, "f%d", i);
        put_file(in_dir(&s, name), text);
    }
    run_result r =
        shell("cd \"%s\" && exec \"%s\" plan dep.yaml --flagfile=f0", s.dir, KVSHARD_CLI);
    assert_string_equal(r.err, "kvshard: f6:12:1: --flagfile=f7 would be flag file 257; one call "
                               "opens at most 256 flag files (a flag file that names others many "
                               "times?)\nTry 'kvshard help plan'.\n");
    assert_usage(&r);
    scratch_close(&s);
}

/* ---- engine profiles ---------------------------------------------------------------- */

#define NEMOTRON_MODEL KVSHARD_EXAMPLES "/models/nemotron_3_nano_30b_a3b.json"

/* vLLM's and SGLang's own spellings on kvshard's command line: --name value
 * and --name=value, one dash, '-' and '_' alike, --no-name; CONFIG first. */
static void test_engine_flag_forms(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --engine vllm --engine-version 0.20.1rc1.dev91 "
                       "--max-model-len 256000 --kv_cache_dtype=fp8_e4m3 "
                       "-mamba-ssm-cache-dtype float32 --max-num-seqs=128 "
                       "--kv-cache-memory-bytes 3994319585 --no-enable-prefix-caching",
                       NEMOTRON_MODEL);
    if (r.status != 0)
        print_error("%s", r.err);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "capacity   vllm 0.20.1rc1.dev91 profile: Available KV cache memory: "
                           "3.72 GiB; attention block 4,176 tokens (raised from 16)");
    assert_contains(r.out, "the engine logs GPU KV cache size: 1,206,303 tokens; Maximum "
                           "concurrency for 256,000 tokens per request: 4.71x\n");
    assert_string_equal(r.err, "");
    run_free(&r);
    /* JSON: the engine object. */
    r = cli("plan '%s' --engine=sglang --engine_version=0.5.11 --tp-size 2 "
            "--mem-fraction-static 0.8 --context-length 262144 --memory_per_rank=10153205760 "
            "--format=json",
            KVSHARD_EXAMPLES "/models/qwen3_5_9b.json");
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"max_mamba_cache_size\": 186,");
    assert_contains(r.out, "\"max_total_num_tokens\": 327310,");
    assert_contains(r.out, "\"max_running_requests\": 62,");
    run_free(&r);
    /* A whole engine command line, unknown flags with their values skipped. */
    r = cli("plan '%s' --engine=vllm --ignore_unknown_flags --port 8000 --host 0.0.0.0 "
            "--trust-remote-code --max-model-len 4096 --served-model-name nemo -tp 1",
            NEMOTRON_MODEL);
    if (r.status != 0)
        print_error("%s", r.err);
    assert_int_equal(r.status, 0);
    run_free(&r);
}

/* Bad engine flags are bad usage at the flag; refusals are invalid input. */
/* An engine's refusal of a figure the weights filled points at
 * device_memory, which the user gave: Llama 3.1 8B's 40 GiB of weights,
 * 20 GiB a rank of two, on 16 GiB devices. */
static void test_filled_figure_errors(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --engine=sglang --tp-size=2 --device_memory=16GiB "
                       "--memory_utilization=0.85 --weights_total=40GiB",
                       KVSHARD_EXAMPLES "/models/llama3_1_8b.json");
    assert_int_equal(r.status, 1);
    assert_string_equal(r.err, "command line --device_memory: sglang profile: "
                               "not_enough_memory: non_kv_memory 21474836480 bytes leaves nothing "
                               "of device_memory_free 17179869184\n");
    run_free(&r);
}

static void test_engine_flag_errors(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --max-model-len 4096", NEMOTRON_MODEL);
    assert_true(starts_with(r.err, "kvshard: command line --max-model-len: unknown flag "
                                   "--max-model-len: it is a flag of the vllm profile, and the "
                                   "engine profile is kvshard (--engine=vllm reads it)\n"));
    assert_usage(&r);
    r = cli("plan '%s' --engine=vllm --max-num-seqs 16 --max_seqs=8", NEMOTRON_MODEL);
    assert_true(starts_with(r.err, "kvshard: command line --max_seqs: --max-num-seqs 16 and "
                                   "--max_seqs 8 give max_seqs two values; give one of them\n"));
    assert_usage(&r);
    /* Several conflicts: the one whose later flag comes first, naming the
     * earliest flag of another spelling that disagrees; still a usage error. */
    r = cli("plan '%s' --engine=vllm --max-num-seqs 16 -tp 2 --tensor-parallel-size 1 "
            "--tensor-parallel-size 2 --max_seqs=8 -tp 1",
            NEMOTRON_MODEL);
    assert_true(starts_with(r.err, "kvshard: command line --tensor-parallel-size: --tp 2 and "
                                   "--tensor-parallel-size 1 give tensor_parallel_size two "
                                   "values; give one of them\n"));
    assert_usage(&r);
    r = cli("plan '%s' --engine=vllm --engine_version=0.20 --max-model-len 4096",
            NEMOTRON_MODEL);
    assert_true(starts_with(r.err, "kvshard: command line --engine_version: "
                                   "engine_version_invalid: engine_version \"0.20\""));
    assert_usage(&r);
    r = cli("plan '%s' --engine=sglang --mem-fraction-static abc", NEMOTRON_MODEL);
    assert_true(starts_with(r.err, "kvshard: command line --mem-fraction-static: "
                                   "mem_fraction_static: expected a fraction such as 0.9, found "
                                   "\"abc\"\n"));
    assert_usage(&r);
    r = cli("plan '%s' --engine=vllm --engine_version 0.8.0 --max-model-len 4096",
            NEMOTRON_MODEL);
    assert_invalid(&r, "command line --engine_version: vllm profile: engine_version_unsupported: "
                       "engine_version 0.8.0 is outside the releases the profile covers, 0.9.0 "
                       "to 0.28.0\n");
    r = cli("plan '%s' --engine=sglang --pp-size 2 --tp-size 2", NEMOTRON_MODEL);
    assert_invalid(&r, "command line --pp-size: sglang profile: engine_unsupported: --pp-size 2: "
                       "pipeline stages of a model with state layers are not covered yet\n");
    /* The engine's world is tp x P: without a world or --tp-size, tp is 1
     * and the world 2, so the stages are refused as stages, not as a world
     * of one rank. */
    r = cli("plan '%s' --engine=sglang --pp-size 2", NEMOTRON_MODEL);
    assert_invalid(&r, "command line --pp-size: sglang profile: engine_unsupported: --pp-size 2: "
                       "pipeline stages of a model with state layers are not covered yet\n");
    /* vLLM's world is T x P x D, T 1 without a world or --tensor-parallel-size. */
    r = cli("plan '%s' --engine=vllm --pipeline-parallel-size 2", NEMOTRON_MODEL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "parallel   world_size 2 = dp 1 x pp 2 x cp 1 x attention TP 1;");
    run_free(&r);
    /* T x P x D = 2 x 2 x 1 is the world of 4 given beside them. */
    r = cli("plan '%s' --engine=vllm -pp 2 -tp 2 --world_size 4", NEMOTRON_MODEL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "parallel   world_size 4 = dp 1 x pp 2 x cp 1 x attention TP 2;");
    run_free(&r);
    r = cli("plan '%s' --engine=sglang --pp-size 2 --tp-size 2 --world_size 8", NEMOTRON_MODEL);
    assert_invalid(&r, "command line --tp-size: sglang profile: world_size 8 and the 4 ranks of "
                       "--tp-size 2 x --dp-size 1 x --pp-size 2 differ; give one of them\n");
    /* A world given alone is still divided by P x D x C. */
    r = cli("plan '%s' --engine=vllm -pp 2 --world_size 3", NEMOTRON_MODEL);
    assert_invalid(&r, "command line --world_size: world_size 3 is not divisible by pp_size 2 x "
                       "dp_size 1 x cp_size 1 = 2\n");
    /* A positional argument after CONFIG that no flag takes. */
    r = cli("plan '%s' extra", NEMOTRON_MODEL);
    assert_string_equal(r.err, "kvshard: command line: \"extra\" is not a flag (flags look like "
                               "--key=value)\nTry 'kvshard help plan'.\n");
    assert_usage(&r);
    r = cli("plan '%s' --engine=vllm --enforce-eager extra", NEMOTRON_MODEL);
    assert_true(starts_with(r.err, "kvshard: command line: \"extra\" is not a flag"));
    assert_usage(&r);
}

/* Compare and report under an engine profile. */
static void test_engine_compare_and_report(void **state)
{
    (void)state;
    run_result r = cli("compare '%s'", KVSHARD_EXAMPLES "/nemotron_3_nano_30b_a3b_vllm.yaml");
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "split sizes for world_size 1 (dp 1, cp 1), vllm profile, Available "
                           "KV cache memory 3.72 GiB, max_seqs 128\n");
    assert_contains(r.out, ">    1  ordinal     6-6    3.09 KiB      311           1,206,303");
    run_free(&r);
    /* xLLM runs the global rule alone: the other rules' rows are there to
     * compare, and the recommendation and a note say so. */
    r = cli("compare '%s' --engine=xllm", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\nthe xllm profile's engine runs the global rule only: the other "
                           "rules' rows are shown for comparison and never recommended\n\n"
                           "recommended: --enable_layerwise_split=");
    assert_contains(r.out, "--ownership=global\n");
    run_free(&r);
    r = cli("report '%s' -o -", KVSHARD_EXAMPLES "/qwen3_5_9b_sglang_tp2.yaml");
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "max_total_num_tokens=327310, max_running_requests=62, "
                           "context_len=262144");
    run_free(&r);
}

/* ---- engine command lines under --ignore_unknown_flags ------------------------------------ */

#define QWEN_MODEL KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"

/* vLLM's flags under kvshard's profile are skipped, not planned: the plan
 * says so, by name, instead of `warnings none`. */
static void test_flags_ignored(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --tensor-parallel-size=4 --max-model-len=32768 "
                       "--max_num_seqs=64 --ignore_unknown_flags",
                       QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_contains(r.out, "parallel   world_size 1 = dp 1 x cp 1 x attention TP 1;");
    assert_contains(r.out, "\nwarnings\n  flags_ignored: skipped 3 flags the kvshard profile does "
                           "not read: --tensor-parallel-size, --max-model-len, --max_num_seqs; "
                           "--engine=vllm reads all 3\ndigest ");
    run_free(&r);
    r = cli("plan '%s' --tensor-parallel-size=4 --ignore_unknown_flags --format=json", QWEN_MODEL);
    assert_contains(r.out, "{\"code\": \"flags_ignored\", \"message\": \"skipped 1 flag the "
                           "kvshard profile does not read: --tensor-parallel-size; "
                           "--engine=vllm reads it\"}");
    run_free(&r);
    /* An engine's whole argv: positional arguments, values apart, one
     * dash, a flag file's `--`. */
    r = cli("plan '%s' serve --engine vllm --ignore-unknown-flags --port 8000 -tp 1 "
            "--max-model-len 4096 --trust-remote-code --served-model-name nemo "
            "--max-num-seqs=8",
            NEMOTRON_MODEL);
    if (r.status != 0)
        print_error("%s", r.err);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\n  flags_ignored: skipped 3 flags and 1 argument the vllm profile "
                           "does not read: serve, --port, --trust-remote-code, "
                           "--served-model-name\n");
    run_free(&r);
    /* Every comparison row carries it. */
    r = cli("compare '%s' --world_size=4 --port 8000 --ignore_unknown_flags", QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_of(r.out, " flags_ignored\n"), 9);
    run_free(&r);
    /* Without the switch, the first unknown flag stops the run. */
    r = cli("plan '%s' --tensor-parallel-size=4 --contxt_length=32768", EXAMPLE);
    assert_string_equal(r.err, "kvshard: command line --tensor-parallel-size: unknown flag "
                               "--tensor-parallel-size: it is a flag of the vllm profile, and "
                               "the engine profile is kvshard (--engine=vllm reads it)\n"
                               "Try 'kvshard help plan'.\n");
    assert_usage(&r);
    r = cli("plan '%s' --contxt_length=32768", EXAMPLE);
    assert_string_equal(r.err, "kvshard: command line --contxt_length: unknown flag "
                               "--contxt_length: did you mean --context_length?\n"
                               "Try 'kvshard help plan'.\n");
    assert_usage(&r);
    /* The CLI's own flags are offered too. */
    r = cli("compare '%s' --formt=json", EXAMPLE);
    assert_string_equal(r.err, "kvshard: command line --formt: unknown flag --formt: did you "
                               "mean --format?\nTry 'kvshard help compare'.\n");
    assert_usage(&r);
    /* gflags' --key value under kvshard's profile. */
    r = cli("plan '%s' --max_seqs 64 --format json", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"max_seqs\": 64");
    run_free(&r);
}

/* ---- --format=html, the comparison's columns, the split ranks ----------------------------- */

/* A page without its "made by" line, the one line that names the command:
 * a copy the caller frees. */
static char *without_command(const char *page)
{
    char *copy = strdup(page);
    assert_non_null(copy);
    char *line = strstr(copy, "<p class=\"sub origin\">made by <code>kvshard ");
    assert_non_null(line);
    char *end = strchr(line, '\n');
    assert_non_null(end);
    memmove(line, end + 1, strlen(end + 1) + 1);
    return copy;
}

static void test_format_html(void **state)
{
    (void)state;
    run_result html = cli("plan '%s' --format=html --context_length=32768", EXAMPLE);
    run_result report = cli("report '%s' --context_length=32768", EXAMPLE);
    run_result again = cli("report '%s' --context_length=32768 --format=html", EXAMPLE);
    assert_int_equal(html.status, 0);
    assert_true(starts_with(html.out, "<!DOCTYPE html>\n"));
    /* The same page, but for the command under the title. */
    assert_contains(html.out, "made by <code>kvshard plan ");
    assert_contains(html.out, " --format=html --context_length=32768</code></p>\n");
    assert_contains(report.out, " --context_length=32768</code></p>\n");
    assert_contains(again.out, " --context_length=32768 --format=html</code></p>\n");
    char *a = without_command(html.out), *b = without_command(report.out),
         *c = without_command(again.out);
    assert_string_equal(a, b);
    assert_string_equal(c, b);
    free(a);
    free(b);
    free(c);
    run_free(&html);
    run_free(&report);
    run_free(&again);
    run_result r = cli("compare '%s' --format=html", EXAMPLE);
    assert_string_equal(r.err, "kvshard: --format=html is for plan: 'kvshard report CONFIG' "
                               "writes the HTML page, the comparison included\n"
                               "Try 'kvshard --help'.\n");
    assert_usage(&r);
}

/* The header's columns stand over the values: S right-aligned over the
 * split sizes, each name at its column's first character. */
static void test_compare_columns(void **state)
{
    (void)state;
    run_result r = cli("compare '%s' --context_length=32768", EXAMPLE);
    assert_int_equal(r.status, 0);
    const char *header = "     S  rule        owned  max KV/token  blocks        max tokens      "
                         "running  balanced  gain\n";
    const char *row = ">    2  ordinal     5-5    5.00 KiB      197,493       3,159,888       "
                      "96       98         1.67x ";
    assert_contains(r.out, header);
    assert_contains(r.out, row);
    static const char *const names[] = {"S",      "rule",       "owned",   "max KV/token",
                                        "blocks", "max tokens", "running", "balanced"};
    static const char *const values[] = {"2",       "ordinal",   "5-5", "5.00 KiB",
                                         "197,493", "3,159,888", "96",  "98"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *n = strstr(header, names[i]), *v = strstr(row, values[i]);
        size_t col = (size_t)(n - header) + (i == 0 ? strlen(names[i]) : 0);
        size_t at = (size_t)(v - row) + (i == 0 ? strlen(values[i]) : 0);
        assert_int_equal(col, at);
    }
    run_free(&r);
}

static void test_split_rank_lists(void **state)
{
    (void)state;
    /* Four ranks of each split rank: all four. */
    run_result r = cli("plan '%s' --world_size=8", EXAMPLE);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\nsplit rank  TP ranks            owned  KV layers stored\n"
                           "0           0, 2, 4, 6          5      3 11 19 27 35\n"
                           "1           1, 3, 5, 7          5      7 15 23 31 39\n");
    run_free(&r);
    /* Eight: the first two, the last and how many. */
    r = cli("plan '%s' --world_size=16", EXAMPLE);
    assert_contains(r.out, "0           0, 2, ... 14 (8)    5      3 11 19 27 35\n");
    run_free(&r);
    /* Four ranks up to 2047 are 21 characters: the column widens. */
    char path[] = "/tmp/kvshard_wide_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *config = "{num_hidden_layers: 8, num_attention_heads: 2048, "
                         "num_key_value_heads: 8, head_dim: 8}\n";
    assert_int_equal(write(fd, config, strlen(config)), (ssize_t)strlen(config));
    close(fd);
    r = cli("plan '%s' --world_size=2048 --enable_layerwise_split --layerwise_split_size=512",
            path);
    unlink(path);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\n0           0, 512, 1024, 1536    1      0\n");
    assert_contains(r.out, "\nsplit rank  TP ranks              owned  KV layers stored\n");
    assert_contains(r.out, "\n511         511, 1023, 1535, 2047 0      \n");
    run_free(&r);
}

/* ---- setup ------------------------------------------------------------------------------- */

/* tools/setup.sh names what the optional parts need; --list prints it
 * without installing anything. */
static void test_setup_lists_optional_packages(void **state)
{
    (void)state;
    run_result r = shell("sh \"%s/../tools/setup.sh\" --list", KVSHARD_EXAMPLES);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_contains(r.out, "required: gcc g++ make cmake pkg-config libyaml-dev libcmocka-dev "
                           "libxml2-utils\n");
    assert_contains(r.out, "  openmpi-bin libopenmpi-dev  examples/mpi_init.c, run with mpirun\n");
    run_free(&r);
}

/* Every `$ kvshard ...` block of a document prints exactly what the
 * document shows, run from the top of the repository; returns how many. */
static size_t check_command_blocks(scratch *sp, const char *relative)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/../%s", KVSHARD_EXAMPLES, relative);
    char *readme = get_file(path);
    assert_non_null(readme);
    scratch s = *sp;
    size_t blocks = 0;
    for (const char *p = strstr(readme, "```text\n$ kvshard "); p;
         p = strstr(p, "```text\n$ kvshard ")) {
        p += strlen("```text\n$ ");
        /* The command: lines ending in a backslash continue it. */
        char command[2048] = "";
        size_t used = 0;
        for (;;) {
            const char *nl = strchr(p, '\n');
            assert_non_null(nl);
            size_t n = (size_t)(nl - p);
            bool more = n > 0 && p[n - 1] == '\\';
            const char *line = p;
            if (used && line[0] == ' ')
                while (*line == ' ' && line < nl)
                    line++;
            size_t take = (size_t)(nl - line) - (more ? 1 : 0);
            assert_true(used + take + 1 < sizeof command);
            memcpy(command + used, line, take);
            used += take;
            command[used] = '\0';
            p = nl + 1;
            if (!more)
                break;
        }
        const char *end = strstr(p, "```\n");
        assert_non_null(end);
        char *want = malloc((size_t)(end - p) + 1);
        assert_non_null(want);
        memcpy(want, p, (size_t)(end - p));
        want[end - p] = '\0';
        FILE *f = fopen(in_dir(&s, "readme.sh"), "w");
        assert_non_null(f);
        fprintf(f, "cd \"%s/..\" && PATH=\"%s:$PATH\" && %s\n", KVSHARD_EXAMPLES, s.dir, command);
        assert_int_equal(fclose(f), 0);
        run_result r = shell("bash \"%s/readme.sh\"", s.dir);
        if (strcmp(r.out, want) != 0)
            print_error("%s block \"%s\" prints\n%s\nthe document shows\n%s", relative, command,
                        r.out, want);
        assert_string_equal(r.out, want);
        run_free(&r);
        free(want);
        blocks++;
        p = end;
    }
    free(readme);
    return blocks;
}

static void test_readme_outputs(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    run_result link = shell("ln -s \"%s\" \"%s/kvshard\"", KVSHARD_CLI, s.dir);
    assert_int_equal(link.status, 0);
    run_free(&link);
    /* the plan, the comparison, vLLM and SGLang */
    assert_true(check_command_blocks(&s, "README.md") >= 4);
    /* Every document under docs/ with its own examples. */
    static const char *const docs[] = {
        "docs/cli.md",         "docs/comm.md",        "docs/engines.md",  "docs/extending.md",
        "docs/fit.md",         "docs/integration.md", "docs/performance.md", "docs/planning.md",
        "docs/python.md",      "docs/report.md",      "docs/stages.md",   "docs/weights.md",     "docs/transfer.md"};
    size_t in_docs = 0;
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++)
        in_docs += check_command_blocks(&s, docs[i]);
    assert_true(in_docs >= 6); /* engines.md's five and stages.md's */
    scratch_close(&s);
}

/* kvshard fit: the rows and the commands of the recommendation, its
 * usage errors, and the JSON. Figures as test_fit's (Qwen3.5-35B-A3B on
 * four 32 GiB cards at 32,768 tokens). */
#define QWEN_MODEL KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define QWEN_WEIGHTS "--weights_total=69321223296 --weights_experts=64424509440"

static void test_fit_command(void **state)
{
    (void)state;
    run_result r = cli(
        "fit '%s' --gpus=4 --device_memory=32GiB --context_length=32768 " QWEN_WEIGHTS " --top=2",
        QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_true(starts_with(r.out, "fit        4 GPUs of 34,359,738,368 B (32.00 GiB) x 0.9 = "
                                   "30,923,764,531 usable; activation_reserve 1,717,986,918 B\n"));
    assert_contains(r.out, "limits     T limited to 8 per node, P to 1 stage; "
                           "--max_tp_size/--max_pp_size to widen\n");
    assert_contains(r.out, "\n   1     2     1     2     1  -           17.28 GiB     9.92 GiB    "
                           "           28  56        1,904,256\n");
    assert_contains(r.out, "... 10 more layouts fit (all rows: --format=json)\n");
    assert_contains(r.out, "recommended: kvshard plan ");
    assert_contains(r.out, " --world_size=4 --dp_size=2 --max_seqs=28 --device_memory=34359738368 "
                           "--weights_total=69321223296 --weights_experts=64424509440 "
                           "--context_length=32768\n");
    assert_contains(r.out, "\nvllm         --tensor-parallel-size=2 --data-parallel-size=2 "
                           "--gpu-memory-utilization=0.92 --max-model-len=32768 "
                           "--max-num-seqs=27\n");
    assert_contains(r.out, "\nsglang       --tp-size=4 --dp-size=2 --enable-dp-attention "
                           "--mem-fraction-static=0.9 --context-length=32768 "
                           "--max-running-requests=38 --max-mamba-cache-size=358\n");
    run_free(&r);
    r = cli("fit '%s' --gpus 4 --device_memory=32GiB --context_length=32768 " QWEN_WEIGHTS
            " --format=json",
            QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"memory_utilization\": 0.9, \"usable\": 30923764531, "
                           "\"activation_reserve\": 1717986918, \"context_length\": 32768");
    assert_contains(r.out, "{\"rank\": 1, \"tp_size\": 2, \"pp_size\": 1, \"dp_size\": 2, "
                           "\"layerwise_split_size\": 1, \"ownership\": null, \"fits\": true, "
                           "\"reason\": null,\n     \"weights_per_rank\": 18554484288, "
                           "\"budget\": 10651293325, \"binding_stage\": 0, \"num_blocks\": "
                           "59508, \"max_seqs\": 28, \"seqs_per_replica\": 28, \"seqs_total\": "
                           "56, \"tokens_per_replica\": 952128, \"tokens_total\": 1904256,\n"
                           "     \"pp_partition\": [40], \"warnings\": []}");
    assert_contains(r.out, "\"env\": {\"xllm\": [], \"vllm\": [], \"sglang\": [], "
                           "\"trtllm\": null},\n                     "
                           "\"engine_reasons\": {\"xllm\": null, \"vllm\": null, \"sglang\": "
                           "null, \"trtllm\": \"engine_unsupported\"}}");
    run_free(&r);
    /* Usage: fit's flags are its own and --gpus is needed. */
    r = cli("fit '%s' --device_memory=32GiB", QWEN_MODEL);
    assert_true(starts_with(r.err, "kvshard: fit needs --gpus=N"));
    assert_usage(&r);
    r = cli("plan '%s' --gpus=4", QWEN_MODEL);
    assert_true(starts_with(r.err, "kvshard: --gpus, --max_tp_size, --max_pp_size and --top are "
                                   "flags of fit"));
    assert_usage(&r);
    r = cli("fit '%s' --gpus=4 --top=0", QWEN_MODEL);
    assert_true(starts_with(r.err, "kvshard: --top takes a whole number from 1 to 65536, not '0'"));
    assert_usage(&r);
    /* Invalid input: no weights for the device, located at the flag. */
    r = cli("fit '%s' --gpus=4", QWEN_MODEL);
    assert_int_equal(r.status, 1);
    assert_contains(r.err, "kvshard fit needs device_memory");
    run_free(&r);
}

/* ---- correctness v4: values and the command line ------------------------------------------ */

#define LLAMA_MODEL KVSHARD_EXAMPLES "/models/llama3_1_8b.json"

/* Flag lines write a fraction as its shortest decimal, as the engines print
 * theirs: u = 1 is "1" in kvshard's and vLLM's flags. The header and the
 * JSON device object keep the number's point (32 GiB x 1 = 34,359,738,368
 * usable); 0.95 stays 0.95. */
static void test_fit_flag_fractions(void **state)
{
    (void)state;
    run_result r =
        cli("fit '%s' --gpus=4 --device_memory=32GiB --context_length=32768 " QWEN_WEIGHTS
            " --memory_utilization=1",
            QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_true(starts_with(r.out, "fit        4 GPUs of 34,359,738,368 B (32.00 GiB) x 1.0 = "
                                   "34,359,738,368 usable; "));
    assert_contains(r.out, " --device_memory=34359738368 --memory_utilization=1 "
                           "--weights_total=69321223296");
    assert_contains(r.out, " --gpu-memory-utilization=1 --max-model-len=32768 ");
    assert_null(strstr(r.out, "=1.0"));
    run_free(&r);
    r = cli("fit '%s' --gpus=4 --device_memory=32GiB --context_length=32768 " QWEN_WEIGHTS
            " --memory_utilization=1 --format=json",
            QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, "\"memory_utilization\": 1.0, \"usable\": 34359738368,");
    assert_contains(r.out, "\"--gpu-memory-utilization=1\"");
    assert_null(strstr(r.out, "=1.0"));
    run_free(&r);
    r = cli("fit '%s' --gpus=4 --device_memory=32GiB --context_length=32768 " QWEN_WEIGHTS
            " --memory_utilization=0.95",
            QWEN_MODEL);
    assert_int_equal(r.status, 0);
    assert_contains(r.out, " --memory_utilization=0.95 ");
    assert_contains(r.out, " --gpu-memory-utilization=0.95 ");
    run_free(&r);
}

/* Two values of one setting that conflict show so that they differ on
 * screen, each as its shortest decimal ("%g" showed both as 0.9). */
static void test_conflict_shows_values(void **state)
{
    (void)state;
    run_result r = cli("plan '%s' --engine=vllm --max-model-len=4096 --device_memory=80GiB "
                       "--weights_total=16GiB --memory_utilization=0.9000000001 "
                       "--gpu-memory-utilization=0.9",
                       LLAMA_MODEL);
    assert_invalid(&r, "command line --memory_utilization: vllm profile: memory_utilization "
                       "0.9000000001 and gpu_memory_utilization 0.9 differ; give one of them\n");
    /* Each as the shortest decimal of its value, not as typed (the typed
     * text is not kept): 0.90 is shown 0.9, and the two still differ. */
    r = cli("plan '%s' --engine=vllm --max-model-len=4096 --device_memory=80GiB "
            "--weights_total=16GiB --memory_utilization=0.9000000001 "
            "--gpu-memory-utilization=0.90",
            LLAMA_MODEL);
    assert_invalid(&r, "command line --memory_utilization: vllm profile: memory_utilization "
                       "0.9000000001 and gpu_memory_utilization 0.9 differ; give one of them\n");
}

/* --speculative-config is JSON, as the engine's json.loads reads it: the
 * forms only YAML takes are bad usage, at the flag. */
static void test_speculative_config_is_json(void **state)
{
    (void)state;
    static const struct {
        const char *value, *why;
    } refused[] = {
        {"{\"method\": \"ngram\", \"num_speculative_tokens\": 2,}",
         "(expected a key after ',', found '}': JSON allows no trailing comma)"},
        {"{\"method\": \"ngram\", # two\n\"num_speculative_tokens\": 2}",
         "(expected a key in double quotes after ',', found '#')"},
        {"{'method': 'ngram', 'num_speculative_tokens': 2}",
         "(expected a key in double quotes or '}', found a single quote (JSON strings take double "
         "quotes))"},
        {"{\"method\": \"ngram\", \"num_speculative_tokens\": !!int 2}",
         "(expected a JSON value (an object, an array, a string, a number, true, false or "
         "null), found '!')"},
        {"{\"method\": ngram, \"num_speculative_tokens\": 2}",
         "(expected a JSON value (an object, an array, a string, a number, true, false or "
         "null), found 'ngram')"},
        {"{method: \"ngram\", \"num_speculative_tokens\": 2}",
         "(expected a key in double quotes or '}', found 'method')"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        /* One shell word: in single quotes, each ' written '\'' */
        char quoted[256];
        size_t n = 0;
        quoted[n++] = '\'';
        for (const char *c = refused[i].value; *c; c++) {
            if (*c == '\'') {
                memcpy(quoted + n, "'\\''", 4);
                n += 4;
            } else {
                quoted[n++] = *c;
            }
        }
        quoted[n++] = '\'';
        quoted[n] = '\0';
        run_result r = cli("plan '%s' --engine=vllm --max-model-len=4096 --memory_per_rank=10GiB "
                           "--speculative-config %s",
                           LLAMA_MODEL, quoted);
        if (r.status != 2 || !strstr(r.err, refused[i].why))
            print_error("%s: exit %d, %s\n", refused[i].value, r.status, r.err);
        assert_true(starts_with(r.err, "kvshard: command line --speculative-config: "
                                       "speculative_config: expected a JSON object, found \""));
        assert_non_null(strstr(r.err, refused[i].why));
        assert_usage(&r);
    }
    run_result r = cli("plan '%s' --engine=vllm --max-model-len=4096 --memory_per_rank=10GiB "
                       "--speculative-config '{\"method\": \"ngram\", "
                       "\"num_speculative_tokens\": 2}'",
                       LLAMA_MODEL);
    assert_int_equal(r.status, 0);
    run_free(&r);
}

/* --flagfile FILE takes the next argument as its file, as every flag with a
 * value does: on the command line (before or after CONFIG, under an
 * engine's argparse style too) and in a flag file (the next line). */
static void test_flagfile_separate_value(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    put_file(in_dir(&s, "two.flags"), "--world_size=2\n");
    put_file(in_dir(&s, "outer.flags"), "--flagfile\ntwo.flags\n");
    put_file(in_dir(&s, "last.flags"), "--world_size=2\n--flagfile\n");
    static const char *const forms[] = {
        "plan dep.yaml --flagfile=two.flags", "plan dep.yaml --flagfile two.flags",
        "plan --flagfile two.flags dep.yaml", "plan dep.yaml --flagfile outer.flags",
        "plan dep.yaml -flagfile two.flags",
    };
    char *first = NULL;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        run_result r = shell("cd \"%s\" && \"%s\" %s", s.dir, KVSHARD_CLI, forms[i]);
        if (r.status != 0)
            print_error("%s: exit %d, %s\n", forms[i], r.status, r.err);
        assert_int_equal(r.status, 0);
        assert_contains(r.out, "\nparallel   world_size 2 = dp 1 x cp 1 x attention TP 2;");
        if (!first)
            first = strdup(r.out);
        else
            assert_string_equal(r.out, first);
        run_free(&r);
    }
    free(first);
    run_result r = shell("cd \"%s\" && \"%s\" plan models/qwen3_5_35b_a3b.json --engine=vllm "
                         "--max-model-len 4096 --memory_per_rank=10GiB --flagfile two.flags",
                         s.dir, KVSHARD_CLI);
    assert_int_equal(r.status, 0);
    run_free(&r);
    r = shell("cd \"%s\" && \"%s\" plan dep.yaml --flagfile", s.dir, KVSHARD_CLI);
    assert_string_equal(r.err, "kvshard: command line --flagfile: --flagfile needs a file name\n"
                               "Try 'kvshard help plan'.\n");
    assert_usage(&r);
    /* A bare --flagfile on a file's last line: the argument after the file
     * is not its value. */
    r = shell("cd \"%s\" && \"%s\" plan dep.yaml --flagfile=last.flags two.flags", s.dir,
              KVSHARD_CLI);
    assert_string_equal(r.err, "kvshard: last.flags:2:1: --flagfile needs a file name\n"
                               "Try 'kvshard help plan'.\n");
    assert_usage(&r);
    scratch_close(&s);
}

/* Exit status, the same for every command: a command-line value that does
 * not parse, is out of range or is past what kvshard represents (a
 * fraction with more than 9 decimals, a count past 2^64 - 1) is bad usage,
 * 2, whether the flags or the plan find it out; the same value in a
 * deployment file is invalid input, 1, located. */
static void test_exit_status_uniform(void **state)
{
    (void)state;
    static const char *const commands[] = {"plan", "compare", "report", "fit"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const char *fit = strcmp(commands[i], "fit") == 0 ? " --gpus=4" : "";
        run_result r = cli("%s '%s'%s --device_memory=32GiB " QWEN_WEIGHTS
                           " --memory_utilization=0.9000000001",
                           commands[i], QWEN_MODEL, fit);
        char want[512];
        snprintf(want, sizeof want,
                 "kvshard: command line --memory_utilization: memory_utilization 0.9000000001 "
                 "has more than 9 digits after the point; kvshard reads it to the billionth\n"
                 "Try 'kvshard help %s'.\n",
                 commands[i]);
        if (r.status != 2 || strcmp(r.err, want) != 0)
            print_error("%s: exit %d, %s\n", commands[i], r.status, r.err);
        assert_string_equal(r.err, want);
        assert_usage(&r);
        r = cli("%s '%s'%s --device_memory=32GiB " QWEN_WEIGHTS " --max_seqs=18446744073709551616",
                commands[i], QWEN_MODEL, fit);
        snprintf(want, sizeof want,
                 "kvshard: command line --max_seqs: max_seqs: 18446744073709551616 is out of "
                 "range; expected an integer from 1 to 16777216\nTry 'kvshard help %s'.\n",
                 commands[i]);
        assert_string_equal(r.err, want);
        assert_usage(&r);
    }
    /* In a deployment file: invalid input at its line and column. */
    run_result r = cli("plan '%s'", INVALID "device_utilization_digits.yaml");
    assert_invalid(&r, INVALID "device_utilization_digits.yaml:5:23: memory_utilization "
                               "0.1234567891 has more than 9 digits after the point; kvshard reads "
                               "it to the billionth\n");
    r = cli("plan '%s'", INVALID "values_count_past_64_bits.yaml");
    assert_invalid(&r, INVALID "values_count_past_64_bits.yaml:4:13: max_seqs: "
                               "18446744073709551616 is out of range; expected an integer from 1 "
                               "to 16777216\n");
}

/* A flag file's value found out of range only when planning is bad usage
 * however long the file's path: the error names it shortened from the
 * front, past KVSHARD_ERROR_SOURCE_MAX, and is still known as the flag
 * file's. The same value in a deployment file at such a path is invalid
 * input. */
static void test_exit_status_long_flagfile(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    char deep[512];
    int n = snprintf(deep, sizeof deep, "%s/", s.dir);
    for (int i = 0; i < 4; i++) {
        memset(deep + n, 'a' + i, 60);
        n += 60;
        deep[n++] = '/';
    }
    deep[n] = '\0';
    run_result r = shell("mkdir -p \"%s\"", deep);
    assert_int_equal(r.status, 0);
    run_free(&r);
    char flags[600], config[600];
    snprintf(flags, sizeof flags, "%sengine.flags", deep);
    snprintf(config, sizeof config, "%sdeployment.yaml", deep);
    assert_true(strlen(flags) >= KVSHARD_ERROR_SOURCE_MAX);
    put_file(flags, "--world_size=1\n--memory_utilization=0.9000000001\n");
    static const char *const commands[] = {"plan", "compare", "report", "fit"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        const char *fit = strcmp(commands[i], "fit") == 0 ? " --gpus=4" : "";
        r = cli("%s '%s'%s --device_memory=32GiB " QWEN_WEIGHTS " --flagfile='%s'", commands[i],
                QWEN_MODEL, fit, flags);
        char want[256];
        snprintf(want, sizeof want,
                 "dddddd/engine.flags:2:22: memory_utilization 0.9000000001 has more than 9 "
                 "digits after the point; kvshard reads it to the billionth\n"
                 "Try 'kvshard help %s'.\n",
                 commands[i]);
        if (r.status != 2 || !strstr(r.err, want))
            print_error("%s: exit %d, %s\n", commands[i], r.status, r.err);
        assert_true(starts_with(r.err, "kvshard: ..."));
        assert_non_null(strstr(r.err, want));
        assert_usage(&r);
    }
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "model: %s\ncache:\n  device_memory: 32GiB\n  memory_utilization: 0.9000000001\n"
             "  weights_total: 69321223296\n  weights_experts: 64424509440\n",
             QWEN_MODEL);
    put_file(config, yaml);
    r = cli("plan '%s'", config);
    assert_non_null(strstr(r.err, "dddddd/deployment.yaml:4:23: memory_utilization 0.9000000001 "
                                  "has more than 9 digits after the point"));
    assert_invalid(&r, "...");
    scratch_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_and_help),
        cmocka_unit_test(test_command_help),
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
        cmocka_unit_test(test_output_refuses_inputs),
        cmocka_unit_test(test_output_refuses_weights),
        cmocka_unit_test(test_output_replaced_whole),
        cmocka_unit_test(test_output_special_targets),
        cmocka_unit_test(test_messages_escaped),
        cmocka_unit_test(test_flagfile_messages),
        cmocka_unit_test(test_flagfile_fanout),
        cmocka_unit_test(test_engine_flag_forms),
        cmocka_unit_test(test_engine_flag_errors),
        cmocka_unit_test(test_filled_figure_errors),
        cmocka_unit_test(test_engine_compare_and_report),
        cmocka_unit_test(test_flags_ignored),
        cmocka_unit_test(test_format_html),
        cmocka_unit_test(test_compare_columns),
        cmocka_unit_test(test_split_rank_lists),
        cmocka_unit_test(test_setup_lists_optional_packages),
        cmocka_unit_test(test_readme_outputs),
        cmocka_unit_test(test_fit_command),
        cmocka_unit_test(test_fit_flag_fractions),
        cmocka_unit_test(test_conflict_shows_values),
        cmocka_unit_test(test_speculative_config_is_json),
        cmocka_unit_test(test_flagfile_separate_value),
        cmocka_unit_test(test_exit_status_uniform),
        cmocka_unit_test(test_exit_status_long_flagfile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
