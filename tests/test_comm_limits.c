/* The comm estimate at its limits. A prompt's communication in closed form: a prompt may have a
 * billion chunks, so the estimate sums the chunks with history rather than visiting them, and a
 * prompt whose bytes pass 2^64 - 1 is refused by name instead of wrapping. The seed deployment on
 * BI-V100 (pcie4x16: 24 GB/s, alpha(2) = 15 us), 10 full-attention layers split, 1,024 B a row. */
#include "test_util.h"

#include <kvshard/explore.h>
#include <kvshard/output.h>

#include <stdlib.h>
#include <string.h>

#define SEED                                                                                       \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",                   \
        "--context_length=32768", "--weights_total=69321223296", "--weights_experts=64424509440",  \
        "--comm_accelerator=bi_v100"

/* 100,000 tokens in chunks of 1, no prefix hit: chunks 1 ... 99,999 have
 * history (chunk j starts with j tokens), 99,999 broadcasts a layer, and
 * the rows sum to 100,000 x 99,999 / 2 = 4,999,950,000 a layer. Over 10
 * layers: 999,990 collectives and 4,999,950,000 x 1,024 x 10 =
 * 51,199,488,000,000 B, 999,990 x 15 + 51,199,488,000,000 / 24e3 =
 * 14,999,850 + 2,133,312,000 = 2,148,311,850 us. */
static void a_chunk_a_token(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_prompt_length=100000", "--comm_chunk=1");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.prefill_collectives, 999990);
    assert_int_equal(e.prefill_link_bytes, UINT64_C(51199488000000));
    tu_assert_near(e.prefill_comm_us, 2148311850.0, 1e-3);
    kvshard_plan_free(p);
}

/* With a prefix hit of 10 tokens, chunk 0 moves those 10 too: 100,000
 * broadcasts a layer, 100,000 x 10 + 99,999 x 100,000 / 2 rows =
 * 4,999,950,000 + 1,000,000 = 5,000,950,000 a layer. */
static void a_prefix_hit_moves_first(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_prompt_length=100010", "--comm_chunk=1", "--comm_prefix_hit=10");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.prefill_collectives, 1000000);
    assert_int_equal(e.prefill_link_bytes, UINT64_C(5000950000) * 1024u * 10u);
    kvshard_plan_free(p);
}

/* 2^30 tokens in chunks of 1: about 5.8e17 rows a layer, 5.9e21 B over
 * 10 layers, past 2^64 - 1: refused, not wrapped. */
static void bytes_past_64_bits(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_prompt_length=1073741824", "--comm_chunk=1");
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err;
    assert_int_equal(kvshard_plan_comm(&e, p, &err), KVSHARD_ERANGE);
    tu_assert_contains(err.message, "comm_value: a prompt of 1073741824 tokens in chunks of 1 "
                                    "moves more than 2^64 - 1 bytes");
    kvshard_plan_free(p);
}

#define SEED_MODEL                                                                                 \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--weights_total=69321223296", "--weights_experts=64424509440"

/* The hint where a decode step has no figure names only what is missing: a
 * context length gives the batch too (the plan's concurrency), and a link
 * is needed for the step, not for its base. */
static void hint_names_only_missing(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED_MODEL, "--memory_per_rank=20GiB", "--comm_accelerator=bi_v100");
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "decode     20 collectives; give a context length for the base "
                             "step\n");
    free(text);
    kvshard_plan_free(p);
    /* 2 sequences of 100 tokens: an all-gather of 2 x 4 x 256 x 2 = 4,096
     * B and a broadcast of 8,192 B a layer, 10 layers: 122,880 B. */
    TU_PLAN(&p, SEED_MODEL, "--comm_hbm_bandwidth=1TB", "--comm_batch=2", "--context_length=100");
    text = tu_plan_text(p);
    tu_assert_contains(text, "decode     2 sequences: 20 collectives, 122.88 kB on the busiest "
                             "link; give a link for the step\n");
    free(text);
    kvshard_plan_free(p);
}

/* The report writes a link's latency as given, never with an exponent,
 * and calls a given latency of 0 given (alpha = 0), not the preset's. */
static void report_latency_as_given(void **state)
{
    (void)state;
    static const struct {
        const char *flag, *alpha;
    } cases[] = {
        {"--comm_link_latency=0.000000001", "\xce\xb1 0.000000001 \xc2\xb5s (given)"},
        {"--comm_link_latency=1000000000", "\xce\xb1 1000000000 \xc2\xb5s (given)"},
        {"--comm_link_latency=0", "\xce\xb1 0 \xc2\xb5s (given)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kvshard_plan *p = NULL;
        TU_PLAN(&p, SEED, cases[i].flag);
        char *page = NULL;
        assert_int_equal(kvshard_report_write_html(p, NULL, NULL, tu_append, &page), KVSHARD_OK);
        tu_assert_contains(page, cases[i].alpha);
        free(page);
        kvshard_plan_free(p);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_chunk_a_token),         cmocka_unit_test(a_prefix_hit_moves_first),
        cmocka_unit_test(bytes_past_64_bits),      cmocka_unit_test(hint_names_only_missing),
        cmocka_unit_test(report_latency_as_given),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
