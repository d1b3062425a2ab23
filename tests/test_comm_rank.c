/* The verdicts of the communication estimate on a split: a stage whose
 * decode communication is half its base step or more, and a split that
 * decodes slower than the plan without it. Figures worked out by hand from
 * the formulas of docs/comm.md on the seed deployment (BI-V100). */
#include "test_util.h"

#include <kvshard/explore.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED                                                                                       \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",                   \
        "--context_length=32768", "--weights_total=69321223296",                                   \
        "--weights_experts=64424509440", "--comm_accelerator=bi_v100"

#define BIT(code) (1u << (code))

static kvshard_comm_estimate estimate_of(const kvshard_plan *p)
{
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_comm(&e, p, &err), &err);
    return e;
}

/* Owner attention on PCIe 4: 545.76 us of communication against a base
 * step of 43,861.03 us, and 2,161.8 tokens/s against the unsplit 1,786.3:
 * neither verdict. */
static void owner_attention_pays(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    assert_int_equal(estimate_of(p).warnings, 0);
    char *json = tu_plan_json(p);
    assert_null(strstr(json, "split_comm_dominates"));
    assert_null(strstr(json, "split_loses_throughput"));
    free(json);
    kvshard_plan_free(p);
}

/* full_layer on PCIe 4: a step broadcasts 10 pools, 150 + 1,348,218.88 =
 * 1,348,368.88 us, against a base step of 43,861.03 us (at least half of
 * it); overlapped, 96 sequences decode 71.2 tokens/s against the unsplit
 * plan's 57 at 1,786.3. */
static void full_layer_loses(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_prefill=full_layer");
    kvshard_comm_estimate e = estimate_of(p);
    assert_int_equal(e.warnings, BIT(KVSHARD_WARN_SPLIT_COMM_DOMINATES) |
                                     BIT(KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));
    /* The plan's own list does not hold the estimate's verdicts. */
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_SPLIT_COMM_DOMINATES));
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_SPLIT_COMM_DOMINATES),
                        "split_comm_dominates");
    assert_string_equal(kvshard_warning_name(KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT),
                        "split_loses_throughput");
    const char *dominates = "stage 0: the split's decode communication, 1348.37 ms a step, is "
                            "at least half the 43.86 ms base step (estimate)";
    const char *loses = "the split decodes 71.2 tokens/s at a batch of 96, below the 1786.3 "
                        "tokens/s of the plan without it at a batch of 57 (estimate): it holds "
                        "more sequences but serves them slower";
    /* After the plan's own warnings, in both documents. */
    char *json = tu_plan_json(p);
    char want[512];
    snprintf(want, sizeof want, "{\"code\": \"split_comm_dominates\", \"message\": \"%s\"}",
             dominates);
    tu_assert_contains(json, want);
    snprintf(want, sizeof want, "{\"code\": \"split_loses_throughput\", \"message\": \"%s\"}",
             loses);
    tu_assert_contains(json, want);
    assert_true(strstr(json, "full_layer_decode") < strstr(json, "split_comm_dominates"));
    free(json);
    char *text = tu_plan_text(p);
    snprintf(want, sizeof want, "\n  split_comm_dominates: %s\n", dominates);
    tu_assert_contains(text, want);
    snprintf(want, sizeof want, "\n  split_loses_throughput: %s\n", loses);
    tu_assert_contains(text, want);
    free(text);
    kvshard_plan_free(p);
    /* On NVLink 4 the step is 50 + 71,905.01 = 71,955.01 us, still at
     * least half the base and 1,334.2 tokens/s, below 1,786.3. */
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_link=nvlink4");
    json = tu_plan_json(p);
    tu_assert_contains(json, "decode communication, 71.96 ms a step, is at least half the "
                             "43.86 ms base step");
    tu_assert_contains(json, "the split decodes 1334.2 tokens/s at a batch of 96, below the "
                             "1786.3 tokens/s");
    free(json);
    kvshard_plan_free(p);
}

/* Without an accelerator there is no base step: no verdict is given. */
static void no_verdict_without_a_base(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--context_length=32768",
            "--comm_decode=full_layer", "--comm_link=pcie4x16");
    assert_int_equal(estimate_of(p).warnings, 0);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(owner_attention_pays),
        cmocka_unit_test(full_layer_loses),
        cmocka_unit_test(no_verdict_without_a_base),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
