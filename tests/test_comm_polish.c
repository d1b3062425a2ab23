/* The comm inputs and outputs in detail: warning messages whole, a
 * latency's decimals and sign, fit refusing a batch it would not use, the
 * estimate line under fit's priced table, and the text of the comm lines
 * (grouped milliseconds, a latency as given, singular and zero figures,
 * hints that name what is missing, a capped batch said as such). */
#include "test_util.h"

#include <kvshard/explore.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The seed deployment: Qwen3.5-35B-A3B, TP 4, S = 2, 20 GiB a rank, 32 K
 * tokens, 96 sequences (57 unsplit); docs/comm.md works its figures out. */
#define SEED_PLAN                                                                                  \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",                   \
        "--context_length=32768", "--weights_total=69321223296", "--weights_experts=64424509440"
#define SEED SEED_PLAN, "--comm_accelerator=bi_v100"
#define CUSTOM_LINK "--comm_link=custom", "--comm_link_bandwidth=24GB"

/* `kvshard COMMAND` of the seed's model with `args`: the exit status. */
static int cli_qwen(const char *command, const char *args, char **out, char **errs)
{
    char *model = tu_example_path("models/qwen3_5_35b_a3b.json");
    char line[1024];
    snprintf(line, sizeof line, "%s %s", model, args);
    free(model);
    return tu_cli(command, line, out, errs);
}

/* A warning message kvshard cut at its buffer would be 239 bytes long
 * (the plan keeps 240 with the NUL): every one must be shorter. */
static void assert_messages_whole(const kvshard_plan *p)
{
    for (size_t i = 0; i < kvshard_plan_warning_count(p); i++) {
        const char *m = NULL;
        assert_int_equal(kvshard_plan_warning(NULL, &m, p, i), KVSHARD_OK);
        if (strlen(m) >= 239)
            fail_msg("warning %zu may be cut: %s", i, m);
    }
}

/* The assumed mechanisms' warning, whole: which mechanisms, from which
 * profile, and how to give them. */
static void assumed_message_whole(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    assert_string_equal(tu_warning_message(p, KVSHARD_WARN_COMM_MECHANISM_ASSUMED),
                        "the split's mechanisms are the kvshard profile's (decode "
                        "owner_attention, prefill history_rows), published by the engine for "
                        "DSA models only and so assumed for this model: give comm_decode and "
                        "comm_prefill if it does otherwise");
    assert_messages_whole(p);
    kvshard_plan_free(p);
    /* The longest of the others: full_layer with its bytes and the split
     * losing throughput; no weights beside an accelerator. */
    TU_PLAN(&p, SEED, "--comm_decode=full_layer");
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_FULL_LAYER_DECODE));
    assert_messages_whole(p);
    kvshard_plan_free(p);
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--context_length=32768",
            "--comm_accelerator=bi_v100", "--comm_decode=full_layer");
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_COMM_NO_WEIGHTS));
    assert_messages_whole(p);
    kvshard_plan_free(p);
}

/* A latency has 1 to 9 decimals and is not negative; each refusal says
 * which, and the command line's is bad usage. */
static void latency_form(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_ERANGE,
               "comm_link_latency: 0.0000000001 has more than 9 decimals; expected a decimal "
               "from 0 and at most 1000000000 with at most 9 decimals",
               SEED_PLAN, CUSTOM_LINK, "--comm_link_latency=0.0000000001");
    TU_REFUSED(KVSHARD_ERANGE, "comm_link_latency: -1 is negative", SEED_PLAN, CUSTOM_LINK,
               "--comm_link_latency=-1");
    TU_REFUSED(KVSHARD_ERANGE, "comm_link_latency: -0.5 is negative", SEED_PLAN, CUSTOM_LINK,
               "--comm_link_latency=-0.5");
    TU_REFUSED(KVSHARD_ETYPE, "expected a decimal", SEED_PLAN, CUSTOM_LINK,
               "--comm_link_latency=-x");
    /* Nine decimals are read. */
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED_PLAN, CUSTOM_LINK, "--comm_link_latency=0.000000001");
    kvshard_plan_free(p);
    char *out = NULL, *errs = NULL;
    int status = cli_qwen("plan",
                          "--world_size=4 "
                          "--comm_link=custom --comm_link_bandwidth=24GB "
                          "--comm_link_latency=0.0000000001",
                          &out, &errs);
    assert_int_equal(status, 2);
    tu_assert_contains(errs, "has more than 9 decimals");
    free(out);
    free(errs);
}

/* fit decodes each row's own sequences: a batch is refused by name, exit 2
 * from the command line and 1 from a file. */
static void fit_refuses_batch(void **state)
{
    (void)state;
    const char *args[] = {"--device_memory=32GiB", "--context_length=32768",
                          "--comm_accelerator=bi_v100", "--comm_batch=64"};
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(tu_deployment_args(&dep, &err, "models/qwen3_5_35b_a3b.json", 4, args), &err);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 4;
    kvshard_fit *f = NULL;
    assert_int_equal(kvshard_deployment_fit(&f, dep, &fo, &err), KVSHARD_ERANGE);
    assert_null(f);
    tu_assert_contains(err.message, "comm_batch: 64 is not a fit input: each fit row decodes "
                                    "its own sequences a replica");
    kvshard_deployment_free(dep);

    char *out = NULL, *errs = NULL;
    int status = cli_qwen("fit",
                          "--gpus=4 --device_memory=32GiB "
                          "--context_length=32768 --comm_accelerator=bi_v100 --comm_batch=64",
                          &out, &errs);
    assert_int_equal(status, 2);
    tu_assert_contains(errs, "comm_batch: 64 is not a fit input");
    free(out);
    free(errs);
    char *file = tu_data_path("deploy/comm_fit_batch.yaml");
    char command[1024];
    snprintf(command, sizeof command, "%s --gpus=4 --device_memory=32GiB", file);
    free(file);
    status = tu_cli("fit", command, &out, &errs);
    assert_int_equal(status, 1);
    tu_assert_contains(errs, "comm_fit_batch.yaml:10:10: ");
    tu_assert_contains(errs, "comm_batch: 64 is not a fit input");
    free(out);
    free(errs);
}

/* fit's priced table ends with the line compare writes under its own: the
 * link and memory it assumes and where their figures come from. */
static void fit_estimate_line(void **state)
{
    (void)state;
    char *out = NULL, *errs = NULL;
    int status = cli_qwen("fit",
                          "--gpus=4 --device_memory=32GiB "
                          "--context_length=32768 --weights_total=69321223296 "
                          "--weights_experts=64424509440 --comm_accelerator=bi_v100",
                          &out, &errs);
    assert_int_equal(status, 0);
    tu_assert_contains(out, "\nranked by throughput (estimate: ");
    /* bi_v100 implies pcie4x16: 24 GB/s, 15 us; its memory 1.2 TB/s. */
    tu_assert_contains(out, "\n\nestimate, not a measurement: link pcie4x16, 24 GB/s a "
                            "direction, \xce\xb1 15 \xc2\xb5s; bi_v100, 1.2 TB/s memory "
                            "(docs/comm.md: their sources, and what the estimate leaves "
                            "out)\n");
    free(out);
    free(errs);
}

/* full_layer on the seed: a step broadcasts ten pools of 197,493 x 16 x
 * 1,024 B, 32,357,253,120 B, in 10 x 15 + 1,348,218.88 = 1,348,368.88 us,
 * which overlaps the 43.86 ms base and binds the step: 96 / 1.34836888 s =
 * 71.2 tokens/s. A prompt: 30 broadcasts, 97,071,759,360 B, 450 +
 * 4,044,656.64 = 4,045,106.64 us. Milliseconds of four digits are grouped. */
static void grouped_times(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_prefill=full_layer");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "decode     96 sequences: 10 collectives, 32.36 GB on the busiest "
                             "link, 1,348.37 ms; base 43.86 ms (17.33 GB of weights, 35.30 GB "
                             "of KV and state); step 1,348.37 ms: 71 tokens/s\n");
    tu_assert_contains(text, "30 collectives, 97.07 GB, 4,045.11 ms for compute to hide\n");
    free(text);
    kvshard_plan_free(p);
}

/* A latency is shown as a decimal, never with an exponent. */
static void latency_as_given(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED_PLAN, CUSTOM_LINK, "--comm_link_latency=1234567");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "\xce\xb1 1234567 \xc2\xb5s (log2)");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, SEED_PLAN, CUSTOM_LINK, "--comm_link_latency=0.123456789");
    text = tu_plan_text(p);
    tu_assert_contains(text, "\xce\xb1 0.123456789 \xc2\xb5s (log2)");
    free(text);
    kvshard_plan_free(p);
    /* Nine decimals are read, and shown as given. */
    TU_PLAN(&p, SEED_PLAN, CUSTOM_LINK, "--comm_link_latency=0.000000001");
    text = tu_plan_text(p);
    tu_assert_contains(text, "link custom: 24 GB/s a direction, \xce\xb1 0.000000001 \xc2\xb5s "
                             "(log2)\n");
    free(text);
    kvshard_plan_free(p);
}

/* One sequence: the all-gather 1 x 4 x 256 x 2 = 2,048 B and the broadcast
 * of twice that, over 10 layers 61,440 B. Unsplit, nothing crosses a link:
 * 0 B. */
static void singular_and_zero(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_batch=1");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "decode     1 sequence: 20 collectives, 61.44 kB on the busiest "
                             "link, 0.30 ms;");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--memory_per_rank=20GiB",
            "--max_seqs=128", "--context_length=32768", "--weights_total=69321223296",
            "--weights_experts=64424509440", "--comm_accelerator=bi_v100");
    text = tu_plan_text(p);
    tu_assert_contains(text, "decode     57 sequences: 0 collectives, 0 B on the busiest link, "
                             "0.00 ms;");
    free(text);
    kvshard_plan_free(p);
}

/* Without a base step the hint names only what is missing. */
static void hint_names_missing(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED_PLAN, CUSTOM_LINK, "--comm_link_latency=15");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "0.55 ms; give --comm_accelerator for the base step\n");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",
            "--context_length=32768", "--comm_accelerator=bi_v100");
    text = tu_plan_text(p);
    tu_assert_contains(text, "0.55 ms; give the weights for the base step\n");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",
            "--context_length=32768", CUSTOM_LINK, "--comm_link_latency=15");
    text = tu_plan_text(p);
    tu_assert_contains(text, "0.55 ms; give --comm_accelerator and the weights for the base "
                             "step\n");
    free(text);
    kvshard_plan_free(p);
}

/* A batch above the plan's 96 sequences runs as 96; the JSON keeps its
 * source, given, and the text says it was capped. */
static void capped_batch(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_batch=1000");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "decode     96 sequences (1,000 given, capped at the 96 the plan "
                             "holds): 20 collectives, 5.90 MB on the busiest link, 0.55 ms;");
    free(text);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"decode\": {\"batch\": 96, \"batch_source\": \"given\"");
    free(json);
    kvshard_plan_free(p);
    /* A batch within the plan's is not remarked on. */
    TU_PLAN(&p, SEED, "--comm_batch=96");
    text = tu_plan_text(p);
    tu_assert_contains(text, "decode     96 sequences: 20 collectives");
    free(text);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(assumed_message_whole), cmocka_unit_test(latency_form),
        cmocka_unit_test(fit_refuses_batch),     cmocka_unit_test(fit_estimate_line),
        cmocka_unit_test(grouped_times),         cmocka_unit_test(latency_as_given),
        cmocka_unit_test(singular_and_zero),     cmocka_unit_test(hint_names_missing),
        cmocka_unit_test(capped_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
