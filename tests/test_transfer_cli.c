/* kvshard transfer's command line: each bad value is refused with the
 * whole of its range and the right error name and exit status (2 for a
 * value that does not parse, 1 for a refused plan). */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define PAIR "'" QWEN "' '" QWEN "' --p.world_size=2 --d.world_size=4 "

/* The command's exit status and the first line of its standard error; no
 * document is written. */
static void assert_refused(const char *command, const char *args, int status,
                           const char *first_line)
{
    char *out = NULL, *err = NULL;
    int got = tu_cli(command, args, &out, &err);
    const char *newline = strchr(err, '\n');
    size_t len = newline ? (size_t)(newline - err) : strlen(err);
    if (got != status || len != strlen(first_line) || strncmp(err, first_line, len) != 0)
        fail_msg("%s %s: exit %d (expected %d), stderr:\n%s", command, args, got, status, err);
    assert_string_equal(out, "");
    free(out);
    free(err);
}

/* The request length has the plan's range, 1 to 2^30 tokens, and says it. */
static void test_context_length_range(void **state)
{
    (void)state;
    assert_refused("transfer", PAIR "--context_length=99999999999", 2,
                   "kvshard: transfer: transfer_usage: --context_length takes a count of tokens "
                   "from 1 to 1073741824, not 99999999999");
    assert_refused("transfer", PAIR "--context_length=1073741825", 2,
                   "kvshard: transfer: transfer_usage: --context_length takes a count of tokens "
                   "from 1 to 1073741824, not 1073741825");
    assert_refused("transfer", PAIR "--context_length=0", 2,
                   "kvshard: transfer: transfer_usage: --context_length takes a count of tokens "
                   "from 1 to 1073741824, not 0");
    /* The top of the range plans: 20,480 B/token unique over 2^30 tokens. */
    char *out = NULL, *err = NULL;
    assert_int_equal(tu_cli("transfer", PAIR "--context_length=1073741824", &out, &err), 0);
    tu_assert_contains(out, "request    1,073,741,824 tokens");
    free(out);
    free(err);
}

/* A NIC so slow that the busiest rank's time passes 64 bits of microseconds
 * is a range error naming the time, the bytes and the rate; exit 1, the
 * value parses. Busiest: P rank 0 sends 20,480 B/token x 2^30 tokens +
 * 2 x 16,097,280 B of state = 21,990,264,750,080 B; over 1 B/s that is
 * 2.2e19 us, past 2^64 - 1 = 1.8e19. */
static void test_time_past_64_bits(void **state)
{
    (void)state;
    assert_refused("transfer", PAIR "--context_length=1073741824 --nic=1", 1,
                   "kvshard: transfer: the transfer's time is out of range: the busiest rank's "
                   "21,990,264,750,080 B over --nic 1 (1 B/s) take more than 2^64 - 1 \xc2\xb5s; "
                   "a faster --nic or a shorter --context_length");
}

/* A key a side's plan does not know is bad usage of transfer: named
 * transfer_usage, with the flag as given, side and all. */
static void test_unknown_side_key(void **state)
{
    (void)state;
    assert_refused("transfer", PAIR "--p.frob=1", 2,
                   "kvshard: transfer: transfer_usage: P: command line --p.frob: unknown flag "
                   "--p.frob: the kvshard profile has no such flag");
    assert_refused("transfer", PAIR "--d.world_sise=2", 2,
                   "kvshard: transfer: transfer_usage: D: command line --d.world_sise: unknown "
                   "flag --d.world_sise: did you mean --d.world_size?");
    /* A value that does not parse stays the side's plan error, 2. */
    assert_refused("transfer", PAIR "--d.world_size=x", 2,
                   "kvshard: transfer: D: command line --d.world_size: world_size: expected an "
                   "integer, found \"x\"");
}

/* The whole of standard error, the exit status and no document. */
static void assert_said(const char *command, const char *args, int status, const char *said)
{
    char *out = NULL, *err = NULL;
    int got = tu_cli(command, args, &out, &err);
    if (got != status || strcmp(err, said) != 0)
        fail_msg("%s %s: exit %d (expected %d), stderr:\n%s", command, args, got, status, err);
    assert_string_equal(out, "");
    free(out);
    free(err);
}

/* --rank of compare and fit: a flag without its value says which values it
 * takes, a bad value points at the command's help (2), and what
 * --rank=throughput lacks is located at the flag, a refusal (1). */
static void test_rank_flag(void **state)
{
    (void)state;
    assert_said("compare", "'" QWEN "' --world_size=2 --rank", 2,
                "kvshard: --rank needs a value: --rank=auto, --rank=capacity or "
                "--rank=throughput\nTry 'kvshard help compare'.\n");
    assert_said("compare", "'" QWEN "' --world_size=2 --rank=bogus", 2,
                "kvshard: comm_value: --rank takes auto, capacity or throughput, not 'bogus'\n"
                "Try 'kvshard help compare'.\n");
    assert_said("fit", "'" QWEN "' --gpus=4 --device_memory=80GB --rank=bogus", 2,
                "kvshard: comm_value: --rank takes auto, capacity or throughput, not 'bogus'\n"
                "Try 'kvshard help fit'.\n");
    /* Every input missing is named: without a budget, a decode batch too. */
    assert_said("compare", "'" QWEN "' --world_size=2 --rank=throughput", 1,
                "command line --rank: comm_input_missing: --rank=throughput needs an "
                "accelerator (comm_accelerator or comm_hbm_bandwidth), a link (comm_link, or an "
                "accelerator that implies one), a context length (context_length) and a decode "
                "batch (a memory budget, or comm_batch)\n");
    assert_said("fit",
                "'" QWEN "' --gpus=4 --device_memory=80GB --weights_total=1GB "
                "--rank=throughput",
                1,
                "command line --rank: comm_input_missing: --rank=throughput needs an "
                "accelerator (comm_accelerator or comm_hbm_bandwidth), a link (comm_link, or an "
                "accelerator that implies one) and a context length (context_length)\n");
}

/* The time is written in microseconds as the rest of kvshard's text writes
 * them, µs. Qwen3.5-35B-A3B P TP 2 -> D TP 4 with a split of 2, 32,768
 * tokens: P rank 0 sends 10,240 x 32,768 + 2 x 16,097,280 = 367,738,880 B,
 * ceil(367,738,880 / 50,000) = 7,355 us at ndr400's 50 GB/s. */
static void test_time_in_microseconds(void **state)
{
    (void)state;
    char *out = NULL, *err = NULL;
    assert_int_equal(tu_cli("transfer",
                            "'" QWEN "' '" QWEN "' --p.world_size=2 --d.world_size=4 "
                            "--d.enable_layerwise_split=true --d.layerwise_split_size=2 "
                            "--context_length=32768",
                            &out, &err),
                     0);
    tu_assert_contains(out, "\ntime       7,355 \xc2\xb5s, the busiest rank's bytes over its "
                            "NIC\n");
    free(out);
    free(err);
}

/* selected_kv as the decode mechanism of a model with no DSA indexer is
 * refused by its name, comm_mechanism_model, as the report names it: 1. */
static void test_selected_kv_without_indexer(void **state)
{
    (void)state;
    assert_said("plan",
                "'" KVSHARD_TEST_DATA "/invalid/models/dense.yaml' --world_size=2 "
                "--comm_decode=selected_kv",
                1,
                "command line --comm_decode: comm_mechanism_model: comm_decode selected_kv "
                "sends the rows a DSA indexer selects, and this model has no indexer\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_length_range),
        cmocka_unit_test(test_time_past_64_bits),
        cmocka_unit_test(test_unknown_side_key),
        cmocka_unit_test(test_rank_flag),
        cmocka_unit_test(test_time_in_microseconds),
        cmocka_unit_test(test_selected_kv_without_indexer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
