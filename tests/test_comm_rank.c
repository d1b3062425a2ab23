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

/* Owner attention on PCIe 4: 545.76 us of communication against a base
 * step of 43,861.03 us, and 2,161.8 tokens/s against the unsplit 1,786.3:
 * neither verdict. */
static void owner_attention_pays(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    assert_int_equal(tu_comm_estimate(p).warnings, 0);
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
    kvshard_comm_estimate e = tu_comm_estimate(p);
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
    assert_int_equal(tu_comm_estimate(p).warnings, 0);
    kvshard_plan_free(p);
}

#include <math.h>

/* DeepSeek-V3.2 on 16 x 80 GiB H100, fit's capacity winner T = 8, D = 2,
 * S = 8 ordinal, priced on H100 (3.35 TB/s, nvlink4: 450 GB/s, alpha(8) =
 * 3 x 5 = 15 us). */
#define DSV32_PLAN                                                                                 \
    "models/deepseek_v3_2.json", "--world_size=16", "--dp_size=2",                                 \
        "--enable_layerwise_split=true", "--layerwise_split_size=8", "--device_memory=80GiB",     \
        "--context_length=32768", "--weights_total=674030337216",                                  \
        "--weights_experts=654068416512", "--kv_cache_dtype=fp8"

static void deepseek_v3_2_on_h100(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, DSV32_PLAN, "--comm_accelerator=h100");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_string_equal(e.link_name, "nvlink4");
    /* 127 sequences a replica; 61 DSA layers, H_l = 128 / 8 = 16, fp8
     * latent 656 B and index key 132 B. tau = 127: all-gather m = 127 x 16 x
     * 576 x 2 = 2,340,864 (busiest 7 x m = 16,386,048), output broadcast
     * 8 x 127 x 16 x 512 x 2 = 16,646,144: 122 collectives, 61 x 33,032,192
     * = 2,014,963,712 B; 122 x 15 + 2,014,963,712 / 450e9 s = 1,830 +
     * 4,477.697 = 6,307.697 us. */
    assert_int_equal(e.batch, 127);
    assert_int_equal(e.decode_collectives, 122);
    assert_int_equal(e.decode_link_bytes, 2014963712u);
    tu_assert_near(e.decode_comm_us, 1830.0 + 2014963712.0 / 450e3, 1e-6);
    tu_assert_near(round(e.decode_comm_us * 100.0) / 100.0, 6307.70, 1e-9);
    /* A sequence reads 61 x (2,048 x 656 + 32,768 x 132) = 345,800,704 B
     * (the 2,048 latent rows the indexer selects and every index key); 127
     * of them 43,916,689,408; with 43,374,516,120 B of weights t_base =
     * 87,291,205,528 / 3.35e12 s = 26,057.08 us; step 32,364.77 us:
     * 127 / that = 3,924.0 tokens/s a replica, 7,848.0 in all. */
    tu_assert_near(e.base_us, (43374516120.0 + 127.0 * 345800704.0) / 3.35e6, 1e-6);
    tu_assert_near(round(e.base_us * 100.0) / 100.0, 26057.08, 1e-9);
    tu_assert_near(round(e.step_us * 100.0) / 100.0, 32364.77, 1e-9);
    tu_assert_near(round(e.throughput * 10.0) / 10.0, 3924.0, 1e-9);
    tu_assert_near(round(e.throughput_total * 10.0) / 10.0, 7848.0, 1e-9);
    /* Unsplit: 18 sequences, (43,374,516,120 + 18 x 345,800,704) / 3.35e12 s
     * = 14,805.65 us, 1,215.8 tokens/s a replica: the split is worth 3.23x. */
    assert_true(e.has_unsplit);
    tu_assert_near(round(e.unsplit_throughput * 10.0) / 10.0, 1215.8, 1e-9);
    tu_assert_near(round(e.throughput_gain * 100.0) / 100.0, 3.23, 1e-9);
    /* A 32 K prompt under history_rows: 49,152 rows a layer of 656 + 132 B,
     * latent and keys apart, 3 chunks x 2 x 61 = 366 collectives,
     * 61 x 49,152 x 788 = 2,362,638,336 B; 366 x 15 + that / 450e9 s =
     * 10,740.31 us. */
    assert_int_equal(e.prefill_collectives, 366);
    assert_int_equal(e.prefill_link_bytes, 2362638336u);
    tu_assert_near(round(e.prefill_comm_us / 10.0) / 100.0, 10.74, 1e-9);
    assert_int_equal(e.warnings, 0);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"unsplit\": {\"batch\": 18, ");
    free(json);
    kvshard_plan_free(p);
}

/* A DSA model whose config lacks index_topk: its base step cannot be
 * priced, and says which key is missing; without an accelerator its
 * communication still is. */
static void dsa_without_index_topk(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "comm/dsa_without_index_topk.json", "--world_size=8",
            "--enable_layerwise_split=true", "--layerwise_split_size=8",
            "--comm_accelerator=h100");
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err;
    assert_int_equal(kvshard_plan_comm(&e, p, &err), KVSHARD_EMISSING);
    tu_assert_contains(err.message, "comm_input_missing");
    tu_assert_contains(err.message, "no index_topk");
    kvshard_plan_free(p);
    TU_PLAN(&p, "comm/dsa_without_index_topk.json", "--world_size=8",
            "--enable_layerwise_split=true", "--layerwise_split_size=8", "--comm_link=nvlink4",
            "--comm_batch=1");
    e = tu_comm_estimate(p);
    assert_true(e.has_decode_time);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(owner_attention_pays),
        cmocka_unit_test(full_layer_loses),
        cmocka_unit_test(no_verdict_without_a_base),
        cmocka_unit_test(deepseek_v3_2_on_h100),
        cmocka_unit_test(dsa_without_index_topk),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
