/* The communication estimate of one plan: the seed deployment on BI-V100
 * under each mechanism, every figure it prints worked out by hand from
 * the formulas of docs/comm.md; its inputs, errors and warnings. */
#include "test_util.h"

#include <kvshard/explore.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Qwen3.5-35B-A3B, TP 4, S = 2, 20 GiB a rank, 32 K tokens: 10 GQA
 * full-attention layers (2 KV heads of 256, 16 query heads) and 30 GDN
 * layers; R = 2, so a split group of 2 is one head's two replicas and
 * every owner stores one head: r = 1 x (256 + 256) x 2 = 1,024 B a token.
 * 197,493 blocks, 96 sequences (unsplit 118,496 blocks, 57). */
#define SEED_PLAN                                                                                  \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",                   \
        "--context_length=32768", "--weights_total=69321223296",                                   \
        "--weights_experts=64424509440"
#define SEED SEED_PLAN, "--comm_accelerator=bi_v100"

/* Decode under owner_attention, the kvshard profile's default. */
static void seed_owner_attention(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_true(e.given);
    assert_int_equal(e.split_size, 2);
    assert_string_equal(e.decode_mechanism, "owner_attention");
    assert_string_equal(e.prefill_mechanism, "history_rows");
    /* bi_v100 implies pcie4x16: beta 24 GB/s, alpha(2) = 15 us; 1.2 TB/s. */
    assert_string_equal(e.link_name, "pcie4x16");
    assert_int_equal(e.link_bandwidth, 24000000000u);
    assert_int_equal(e.hbm_bandwidth, 1200000000000u);
    /* B = the plan's 96 sequences; H_l = 16 / 4 = 4; q_w = o_w = 256.
     * All-gather m = 96 x 4 x 256 x 2 = 196,608 (busiest (S-1) m the same),
     * broadcast 2 x 196,608 = 393,216; over 10 layers 20 collectives and
     * 10 x 589,824 = 5,898,240 B; 20 x 15 + 5,898,240 / 24e9 s = 300 +
     * 245.76 = 545.76 us. */
    assert_int_equal(e.batch, 96);
    assert_int_equal(e.decode_collectives, 20);
    assert_int_equal(e.decode_link_bytes, 5898240u);
    tu_assert_near(e.decode_comm_us, 545.76, 1e-9);
    /* W = ceil(4,896,713,856 / 4) + ceil(64,424,509,440 / 4) =
     * 17,330,305,824; a sequence reads 10 x 32,768 x 1,024 + 30 x 2 x
     * 536,576 = 367,738,880 B, 96 of them 35,302,932,480; (W + that) /
     * 1.2e12 s = 43,861.03192 us; step 43,861.03192 + 545.76 =
     * 44,406.79192 us; 96 / that = 2,161.83 tokens/s. */
    tu_assert_near(e.base_us, 43861.03192, 1e-6);
    tu_assert_near(e.step_us, 44406.79192, 1e-6);
    tu_assert_near(e.throughput, 96.0 / 44406.79192e-6, 1e-6);
    tu_assert_near(e.throughput, 2161.8315, 1e-4);
    /* Unsplit: 57 x 367,738,880 = 20,961,116,160 B; (W + that) / 1.2e12 s =
     * 31,909.51832 us: 1,786.3009 tokens/s; the gain 2,161.83 / 1,786.30 =
     * 1.2102. */
    assert_true(e.has_unsplit);
    tu_assert_near(e.unsplit_throughput, 57.0 / 31909.51832e-6, 1e-6);
    tu_assert_near(e.throughput_gain, 1.2102, 1e-4);
    /* A 32,768-token prompt: 4 chunks of 8,192, history 0, 8,192, 16,384,
     * 24,576: three broadcasts a layer, 30 in all, of 49,152 x 1,024 B a
     * layer: 503,316,480 B; 30 x 15 + 20,971.52 = 21,421.52 us. */
    assert_int_equal(e.prefill_collectives, 30);
    assert_int_equal(e.prefill_link_bytes, 503316480u);
    tu_assert_near(e.prefill_comm_us, 21421.52, 1e-9);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_COMM_MECHANISM_ASSUMED));
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_FULL_LAYER_DECODE));
    kvshard_plan_free(p);
}

/* The JSON and the text of the seed: every figure as printed. */
static void seed_documents(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"link\": {\"name\": \"pcie4x16\", \"bandwidth\": 24000000000, "
                             "\"latency_us\": 15, \"alpha_rule\": \"log2\"}");
    tu_assert_contains(json, "\"collectives\": 20, \"link_bytes\": 5898240, "
                             "\"wire_bytes\": 7864320, \"comm_us\": 545.76");
    /* 10 x (2 x 196,608 all-gathered + 393,216 to the one receiver). */
    tu_assert_contains(json, "\"kv_read_bytes\": 35302932480, \"base_us\": 43861.03192");
    tu_assert_contains(json, "\"step_us\": 44406.79192, \"tpot_us\": 44406.79192");
    /* (17,330,305,824 + 57 x 367,738,880) B / 1.2e6 B a us, as written. */
    tu_assert_contains(json, "\"unsplit\": {\"batch\": 57, \"base_us\": 31909.51832, "
                             "\"step_us\": 31909.51832, ");
    tu_assert_contains(json, "\"chunks\": 4, \"history_rows\": 49152, \"collectives\": 30, "
                             "\"link_bytes\": 503316480, \"wire_bytes\": 503316480, "
                             "\"comm_us\": 21421.52");
    /* A rank receives 10 x 196,608 gathered + 5 x 393,216 outputs of its
     * five non-owned layers = 3,932,160 B, and their rows, 251,658,240. */
    tu_assert_contains(json, "{\"stage\": 0, \"tp_rank\": 0, \"split_rank\": 0, "
                             "\"decode_bytes_received\": 3932160, "
                             "\"prefill_bytes_received\": 251658240}");
    free(json);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "comm       estimate, not a measurement: split 2, decode "
                             "owner_attention (output broadcast), prefill history_rows (the "
                             "profile's; assumed for this model)\n");
    tu_assert_contains(text, "           link pcie4x16: 24 GB/s a direction, \xce\xb1 15 \xc2\xb5s "
                             "(log2); bi_v100: 1.2 TB/s memory\n");
    tu_assert_contains(text, "decode     96 sequences: 20 collectives, 5.90 MB on the busiest "
                             "link, 0.55 ms; base 43.86 ms (17.33 GB of weights, 35.30 GB of KV "
                             "and state); step 44.41 ms: 2,162 tokens/s\n");
    tu_assert_contains(text, "           unsplit: 57 sequences, 31.91 ms a step, 1,786 tokens/s; "
                             "the split gives 1.21x the throughput for 1.68x the sequences\n");
    tu_assert_contains(text, "prefill    a 32,768-token prompt in 4 chunks of 8,192: 49,152 "
                             "history rows a layer, 30 collectives, 503.32 MB, 21.42 ms added "
                             "to its time to first token\n");
    tu_assert_contains(text, "leaves out:");
    free(text);
    kvshard_plan_free(p);
}

/* The output scattered: each rank's 4 heads alone, m = 96 x 4 x 256 x 2 =
 * 196,608, busiest (S-1) m: 10 x (196,608 + 196,608) = 3,932,160 B,
 * 300 + 163.84 = 463.84 us; step 44,324.87192 us: 2,165.8 tokens/s. */
static void seed_scatter(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_owner_output=scatter");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.decode_collectives, 20);
    assert_int_equal(e.decode_link_bytes, 3932160u);
    tu_assert_near(e.decode_comm_us, 463.84, 1e-9);
    tu_assert_near(e.step_us, 43861.03192 + 463.84, 1e-6);
    tu_assert_near(e.throughput, 2165.8, 0.05);
    kvshard_plan_free(p);
}

/* full_layer: a layer's pool 197,493 x 16 x 1,024 = 3,235,725,312 B; ten
 * of them a step, 32,357,253,120 B: 150 + 1,348,218.88 = 1,348,368.88 us,
 * overlapped with the 43.9 ms base: 96 / 1.34836888 s = 71.2 tokens/s.
 * Prefill: 3 chunks with history x 10 pools = 30 broadcasts,
 * 97,071,759,360 B, 450 + 4,044,656.64 us = 4.05 s. */
static void seed_full_layer(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_prefill=full_layer");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.decode_collectives, 10);
    assert_int_equal(e.decode_link_bytes, 32357253120u);
    tu_assert_near(e.decode_comm_us, 1348368.88, 1e-6);
    tu_assert_near(e.step_us, 1348368.88, 1e-6);
    tu_assert_near(e.throughput, 71.2, 0.05);
    tu_assert_near(e.throughput_gain, 71.197 / 1786.3009, 1e-3);
    assert_int_equal(e.prefill_collectives, 30);
    assert_int_equal(e.prefill_link_bytes, 97071759360u);
    tu_assert_near(e.prefill_comm_us, 4045106.64, 1e-6);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_FULL_LAYER_DECODE));
    tu_assert_contains(tu_warning_message(p, KVSHARD_WARN_FULL_LAYER_DECODE),
                       "32357253120 bytes broadcast a step");
    /* Both mechanisms given: nothing is assumed. */
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_COMM_MECHANISM_ASSUMED));
    kvshard_plan_free(p);
    /* On NVLink 4: 50 + 32,357,253,120 / 450e9 s = 71,955.01 us, 1,334.2
     * tokens/s, still below the unsplit 1,786.3. */
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_prefill=full_layer",
            "--comm_link=nvlink4");
    e = tu_comm_estimate(p);
    tu_assert_near(e.step_us, 71955.0069, 1e-3);
    tu_assert_near(e.throughput, 1334.2, 0.05);
    kvshard_plan_free(p);
}

/* Without a comm input the plan and its documents are what they were; with
 * one, the digests do not move. */
static void no_input_no_comm(void **state)
{
    (void)state;
    kvshard_plan *plain = NULL, *priced = NULL;
    TU_PLAN(&plain, SEED_PLAN);
    TU_PLAN(&priced, SEED);
    kvshard_comm_estimate e = tu_comm_estimate(plain);
    assert_false(e.given);
    char *json = tu_plan_json(plain);
    assert_null(strstr(json, "\"comm\""));
    free(json);
    char *text = tu_plan_text(plain);
    assert_null(strstr(text, "estimate"));
    free(text);
    assert_false(kvshard_plan_has_warning(plain, KVSHARD_WARN_COMM_MECHANISM_ASSUMED));
    assert_int_equal(kvshard_plan_digest(plain), kvshard_plan_digest(priced));
    assert_int_equal(kvshard_plan_layout_digest(plain), kvshard_plan_layout_digest(priced));
    kvshard_plan_free(plain);
    kvshard_plan_free(priced);
}

/* A link given without an accelerator: times, and no base step. */
static void link_without_accelerator(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",
            "--context_length=32768", "--comm_link=custom", "--comm_link_bandwidth=24GB",
            "--comm_link_latency=15");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_string_equal(e.link_name, "custom");
    tu_assert_near(e.decode_comm_us, 545.76, 1e-9);
    assert_false(e.has_accelerator);
    assert_false(e.has_step);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "give --comm_accelerator");
    free(text);
    kvshard_plan_free(p);
}

/* Refusals of one plan: a prefix hit that is the whole prompt, selected
 * rows of a model without an indexer, a word outside its list. */
static void refusals(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_ECOMM, "comm_prefix_hit: 32768 cached tokens of a 32768-token prompt",
               SEED, "--comm_prefix_hit=32768");
    TU_REFUSED(KVSHARD_ECOMM, "selected_kv", SEED, "--comm_decode=selected_kv");
    TU_REFUSED(KVSHARD_ERANGE, "comm_prefill", SEED, "--comm_prefill=owner_attention");
    TU_REFUSED(KVSHARD_ERANGE, "comm_link_bandwidth", SEED, "--comm_link_bandwidth=0");
    /* A custom link or accelerator is its figures. */
    TU_REFUSED(KVSHARD_EMISSING, "comm_input_missing: a custom link needs both", SEED_PLAN,
               "--comm_link=custom", "--comm_link_bandwidth=24GB");
    TU_REFUSED(KVSHARD_EMISSING, "a custom accelerator needs comm_hbm_bandwidth", SEED_PLAN,
               "--comm_accelerator=custom");
    assert_string_equal(kvshard_status_name(KVSHARD_ECOMM), "comm");
}

/* An accelerator without weights: the base step is unknown, and said. */
static void no_weights(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--context_length=32768",
            "--comm_accelerator=bi_v100");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_false(e.has_step);
    assert_true(e.has_decode_time);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_COMM_NO_WEIGHTS));
    kvshard_plan_free(p);
}

/* GLM-5, TP 8: 78 DSA layers, H_l = 64 / 8 = 8, q_w = 512 + 64 = 576,
 * o_w = 512, bf16 (a = 2); every layer keeps its index key, so no producer
 * layers. B = 64, owner attention, a custom link of 450 GB/s and a flat
 * alpha of 10 us. Per layer and token the query piece is 8 x 576 x 2 =
 * 9,216 B and a rank's output 8 x 512 x 2 = 8,192 B: a step moves
 * 78 x 64 x (S - 1) x (9,216 + 8,192) with scatter and
 * 78 x 64 x ((S - 1) x 9,216 + S x 8,192) with broadcast, in 156
 * collectives; the time is 156 x 10 + the scatter bytes / 450e9 s. */
static void glm5_split_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *split;
        uint64_t scatter, broadcast;
        double flat_us;
    } rows[] = {
        /* 78 x 64 x 17,408 = 86,900,736; 78 x 64 x 25,600 = 127,795,200;
         * 1,560 + 193.11275 */
        {"--layerwise_split_size=2", 86900736u, 127795200u, 1560.0 + 86900736.0 / 450e3},
        /* x 3 x 17,408 = 260,702,208; 78 x 64 x (27,648 + 32,768) */
        {"--layerwise_split_size=4", 260702208u, 301596672u, 1560.0 + 260702208.0 / 450e3},
        /* x 7 x 17,408 = 608,305,152; 78 x 64 x (64,512 + 65,536) */
        {"--layerwise_split_size=8", 608305152u, 649199616u, 1560.0 + 608305152.0 / 450e3},
    };
    static const double printed_ms[] = {1.75, 2.14, 2.91};
    for (size_t i = 0; i < 3; i++) {
        kvshard_plan *p = NULL;
        TU_PLAN(&p, "models/glm_5.json", "--world_size=8", "--enable_layerwise_split=true",
                rows[i].split, "--comm_batch=64", "--comm_link=custom",
                "--comm_link_bandwidth=450GB", "--comm_link_latency=10",
                "--comm_alpha_rule=flat", "--comm_owner_output=scatter");
        kvshard_comm_estimate e = tu_comm_estimate(p);
        assert_int_equal(e.decode_collectives, 156);
        assert_int_equal(e.decode_link_bytes, rows[i].scatter);
        tu_assert_near(e.decode_comm_us, rows[i].flat_us, 1e-6);
        tu_assert_near(round(e.decode_comm_us / 10.0) / 100.0, printed_ms[i], 1e-9);
        kvshard_plan_free(p);
        TU_PLAN(&p, "models/glm_5.json", "--world_size=8", "--enable_layerwise_split=true",
                rows[i].split, "--comm_batch=64", "--comm_link=custom",
                "--comm_link_bandwidth=450GB", "--comm_link_latency=10",
                "--comm_alpha_rule=flat");
        e = tu_comm_estimate(p);
        assert_int_equal(e.decode_link_bytes, rows[i].broadcast);
        kvshard_plan_free(p);
    }
}

/* xLLM's measured run: DP 2 x TP 8, S = 2, one sequence a replica (B = 1,
 * tau = 1), hccs. The all-gather's count a rank is 1 x 8 x 576 = 4,608
 * elements (9,216 B) and the output broadcast's 1 x 2 x 8 x 512 = 8,192
 * (16,384 B): 78 x 25,600 = 1,996,800 B in 156 collectives, 156 x 7 us +
 * 1,996,800 / 67e9 s = 1,092 + 29.80 = 1.12 ms a step. */
static void glm5_measured_counts(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/glm_5.json", "--world_size=16", "--dp_size=2",
            "--enable_layerwise_split=true", "--layerwise_split_size=2", "--comm_batch=1",
            "--comm_link=hccs");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.decode_collectives, 156);
    assert_int_equal(e.decode_link_bytes, 78u * (4608u * 2u + 8192u * 2u));
    tu_assert_near(e.decode_comm_us, 156.0 * 7.0 + 1996800.0 / 67e3, 1e-6);
    tu_assert_near(round(e.decode_comm_us / 10.0) / 100.0, 1.12, 1e-9);
    kvshard_plan_free(p);
    /* Its base step reads the rows index_topk selects (test_comm_rank
     * works one through); without weights there is none. */
    TU_PLAN(&p, "models/glm_5.json", "--world_size=8", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--comm_accelerator=ascend_910c");
    e = tu_comm_estimate(p);
    assert_false(e.has_step);
    kvshard_plan_free(p);
}

/* The comm: section of a deployment file: its keys are the flags without
 * "comm_", and a flag wins over the file. The link implied by bi_v100
 * keeps its name with the file's latency: 20 x 15.5 + 3,932,160 / 24e9 s =
 * 310 + 163.84 = 473.84 us (scatter). */
static void deployment_section(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "deploy/comm_seed.yaml");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_string_equal(e.link_name, "pcie4x16");
    tu_assert_near(e.link_latency_us, 15.5, 0.0);
    assert_int_equal(e.decode_link_bytes, 3932160u);
    tu_assert_near(e.decode_comm_us, 473.84, 1e-9);
    kvshard_plan_free(p);
    /* The flag's output broadcast over the file's scatter: 5,898,240 B. */
    TU_PLAN(&p, "deploy/comm_seed.yaml", "--comm_owner_output=broadcast");
    e = tu_comm_estimate(p);
    assert_int_equal(e.decode_link_bytes, 5898240u);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_owner_attention), cmocka_unit_test(seed_documents),
        cmocka_unit_test(seed_scatter),         cmocka_unit_test(seed_full_layer),
        cmocka_unit_test(no_input_no_comm),     cmocka_unit_test(link_without_accelerator),
        cmocka_unit_test(refusals),             cmocka_unit_test(no_weights),
        cmocka_unit_test(glm5_split_sizes),     cmocka_unit_test(glm5_measured_counts),
        cmocka_unit_test(deployment_section),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
