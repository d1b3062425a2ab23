/* kvshard transfer's refusals on the command line, each with its exit
 * status and the first line of its message: 2 for a command line that does
 * not parse, 1 for a pair that is refused or a file that cannot be read.
 * Together with the cases of test_transfer and test_transfer_engines every
 * refusal of docs/transfer.md's table has one here. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define PAIR "'" QWEN "' '" QWEN "' "
#define V4_FLASH KVSHARD_EXAMPLES "/models/deepseek_v4_flash.json"
#define MINIMAX_M3 KVSHARD_EXAMPLES "/models/minimax_m3.json"
#define DSV32 KVSHARD_EXAMPLES "/models/deepseek_v3_2.json"

typedef struct refusal {
    const char *args;
    int status;
    const char *first_line; /* the whole first line of standard error */
} refusal;

static const refusal cases[] = {
    /* transfer_usage, 2 */
    {PAIR "'" QWEN "'", 2,
     "kvshard: transfer: transfer_usage: transfer takes two plans, P_PLAN and D_PLAN; one "
     "more: " QWEN},
    {PAIR "--p_replica=x", 2,
     "kvshard: transfer: transfer_usage: --p_replica takes a replica index from 0, not x"},
    {PAIR "--d_replica=-1", 2,
     "kvshard: transfer: transfer_usage: --d_replica takes a replica index from 0, not -1"},
    /* A flag without its value says what it needs; a value given empty
     * is named as ''. */
    {PAIR "--engine", 2, "kvshard: transfer: transfer_usage: --engine needs vllm, sglang or xllm"},
    {PAIR "--engine=", 2,
     "kvshard: transfer: transfer_usage: --engine takes vllm, sglang or xllm, not ''"},
    {PAIR "--format", 2, "kvshard: transfer: transfer_usage: --format needs text, json or svg"},
    {PAIR "--format=", 2,
     "kvshard: transfer: transfer_usage: --format takes text, json or svg, not ''"},
    {PAIR "--context_length", 2,
     "kvshard: transfer: transfer_usage: --context_length needs a count of tokens from 1 to "
     "1073741824"},
    {PAIR "--context_length=", 2,
     "kvshard: transfer: transfer_usage: --context_length takes a count of tokens from 1 to "
     "1073741824, not ''"},
    {PAIR "--p_replica", 2,
     "kvshard: transfer: transfer_usage: --p_replica needs a replica index from 0"},
    {PAIR "--output", 2,
     "kvshard: transfer: transfer_usage: --output needs a file name (or - for standard output)"},
    {PAIR "-o", 2,
     "kvshard: transfer: transfer_usage: -o needs a file name (or - for standard output)"},
    {PAIR "--d_replica=", 2,
     "kvshard: transfer: transfer_usage: --d_replica takes a replica index from 0, not ''"},
    /* transfer_nic, 2: a flag without its value */
    {PAIR "--nic", 2, "kvshard: transfer: transfer_nic: --nic needs a preset or a rate"},
    /* A side's key that is no deployment key or flag: that side's plan
     * refuses it as bad usage, 2, naming the side. */
    {PAIR "--p.frobnicate=1", 2,
     "kvshard: transfer: transfer_usage: P: command line --p.frobnicate: unknown flag "
     "--p.frobnicate: the kvshard profile has no such flag"},
    /* A side's plan error that is not a flag value, 1. */
    {PAIR "--d.world_size=3", 1,
     "kvshard: transfer: D: " QWEN ":14:28: num_key_value_heads 2 and the attention TP size 3 "
     "do not divide one another"},
    {"'" KVSHARD_TEST_DATA "/no_such_plan.json' '" QWEN "'", 1,
     "kvshard: transfer: P: " KVSHARD_TEST_DATA "/no_such_plan.json: cannot open: No such file "
     "or directory"},
    /* The pair, 1. */
    {PAIR "--d.state_dtype=bf16", 1,
     "kvshard: transfer: transfer_state_dtype: the state is float32 on P and bfloat16 on D: "
     "bytes are copied, never converted"},
    {PAIR "--p.world_size=4 --p.dp_size=2 --p_replica=2", 1,
     "kvshard: transfer: transfer_replica: --p_replica 2: P has 2 replicas"},
    {"'" V4_FLASH "' '" V4_FLASH "' --p.world_size=8 --d.world_size=8 --p.kv_cache_dtype=fp8 "
     "--d.kv_cache_dtype=fp8",
     1,
     "kvshard: transfer: transfer_compressed: layer 0 is a compressed layer: moving its window, "
     "streams and compressor state is not modelled yet"},
    {"'" MINIMAX_M3 "' '" MINIMAX_M3 "' --p.world_size=8 --d.world_size=8", 1,
     "kvshard: transfer: transfer_sparse_index: layer 3 keeps a GQA sparse index key: moving it "
     "is not modelled yet"},
};

static void test_refusals(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL, *err = NULL;
        int status = tu_cli("transfer", cases[i].args, &out, &err);
        const char *newline = strchr(err, '\n');
        size_t len = newline ? (size_t)(newline - err) : strlen(err);
        if (status != cases[i].status || len != strlen(cases[i].first_line) ||
            strncmp(err, cases[i].first_line, len) != 0)
            fail_msg("transfer %s: exit %d (expected %d), stderr:\n%s", cases[i].args, status,
                     cases[i].status, err);
        /* No document with a refusal; bad usage points at the help. */
        assert_string_equal(out, "");
        if (status == 2)
            assert_string_equal(newline, "\nTry 'kvshard help transfer'.\n");
        free(out);
        free(err);
    }
}

/* Without --engine, an engine whose profile cannot plan a side for an input
 * only it needs (SGLang's compute capability for a DSA model's automatic KV
 * dtype) gives its verdict as unsupported, with the whole reason, and the
 * map and the other verdicts stand. Named with --engine, the same refusal
 * is the command's error, 1. */
static void test_engine_input_missing_is_a_verdict(void **state)
{
    (void)state;
    char command[2048], *out = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "'%s' transfer '%s' '%s' --p.world_size=8 --d.world_size=8 --context_length=1024",
             KVSHARD_CLI, DSV32, DSV32);
    assert_int_equal(tu_run(command, &out, &err), 0);
    tu_assert_contains(out, "verdict    sglang 0.5.21: unsupported (engine_unsupported: sglang "
                            "profile: engine_input_missing: a DSA model's --kv-cache-dtype auto "
                            "is fp8_e4m3 on GPUs of compute capability 10.0 and above and "
                            "bfloat16 below: give --device_compute_capability (9.0 for H100, "
                            "10.0 for B200))\n");
    tu_assert_contains(out, "verdict    xllm 0.11.0: supported\n");
    free(out);
    free(err);
    snprintf(command, sizeof command,
             "'%s' transfer '%s' '%s' --p.world_size=8 --d.world_size=8 --engine=sglang",
             KVSHARD_CLI, DSV32, DSV32);
    assert_int_equal(tu_run(command, &out, &err), 1);
    tu_assert_contains(err, "engine_input_missing");
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_engine_input_missing_is_a_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
