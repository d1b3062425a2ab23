/* GLM-5 at TP 8 split 2, 4 and 8 ways, and xLLM's measured run, priced by
 * the communication estimate: the custom-link and preset time columns, the
 * capacity each split buys, draft tokens, a latency fitted to the
 * measurement and the replaced selected_kv mechanism. Every expected figure
 * is worked out by hand from the formulas of docs/comm.md. (test_comm has
 * the bytes of each split size and the 450 GB/s column.) */
#include "test_util.h"

#include <kvshard/explore.h>
#include <kvshard/output.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GLM5 "models/glm_5.json"
#define SPLIT_TP8 GLM5, "--world_size=8", "--enable_layerwise_split=true"
/* xLLM's run: 16 ranks, DP 2 x TP 8, S = 2, one sequence a replica. */
#define MEASURED                                                                                   \
    GLM5, "--world_size=16", "--dp_size=2", "--enable_layerwise_split=true",                       \
        "--layerwise_split_size=2", "--comm_batch=1", "--comm_link=hccs"

static const char *const SPLITS[] = {"--layerwise_split_size=2", "--layerwise_split_size=4",
                                     "--layerwise_split_size=8"};

/* A step's link bytes under scatter, B = 64: 78 x 64 x (S - 1) x (9,216 +
 * 8,192) = 4,992 x 17,408 x (S - 1): 86,900,736 for S = 2, three times
 * that (260,702,208) for S = 4 and seven times (608,305,152) for S = 8. */
static const double SCATTER_BYTES[] = {86900736.0, 260702208.0, 608305152.0};

/* The time printed in ms to two places. */
static double printed_ms(double us)
{
    return round(us / 10.0) / 100.0;
}

/* Decode comm of GLM-5 at TP 8, B = 64, output scattered, split `split`,
 * over a custom link of `bandwidth` with a flat alpha of `latency` us. */
static double custom_flat_us(const char *split, const char *bandwidth, const char *latency)
{
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SPLIT_TP8, split, "--comm_batch=64", "--comm_link=custom", bandwidth, latency,
            "--comm_alpha_rule=flat", "--comm_owner_output=scatter");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.decode_collectives, 156);
    double us = e.decode_comm_us;
    kvshard_plan_free(p);
    return us;
}

/* The two slower custom-link columns, 156 collectives each at a flat
 * alpha:
 *   8 us, 60 GB/s: 1,248 + 86,900,736 / 60e3 = 1,248 + 1,448.3456 =
 *     2,696.3456 us (2.70 ms); 1,248 + 4,345.0368 = 5,593.0368 (5.59);
 *     1,248 + 10,138.4192 = 11,386.4192 (11.39).
 *   25 us, 20 GB/s: 3,900 + 4,345.0368 = 8,245.0368 us (8.25 ms);
 *     3,900 + 13,035.1104 = 16,935.1104 (16.94); 3,900 + 30,415.2576 =
 *     34,315.2576 (34.32). */
static void custom_link_columns(void **state)
{
    (void)state;
    static const double slow[] = {2696.3456, 5593.0368, 11386.4192};
    static const double slow_ms[] = {2.70, 5.59, 11.39};
    static const double slowest[] = {8245.0368, 16935.1104, 34315.2576};
    static const double slowest_ms[] = {8.25, 16.94, 34.32};
    for (size_t i = 0; i < 3; i++) {
        double us =
            custom_flat_us(SPLITS[i], "--comm_link_bandwidth=60GB", "--comm_link_latency=8");
        tu_assert_near(us, 156.0 * 8.0 + SCATTER_BYTES[i] / 60e3, 1e-6);
        tu_assert_near(us, slow[i], 1e-6);
        tu_assert_near(printed_ms(us), slow_ms[i], 1e-9);
        us = custom_flat_us(SPLITS[i], "--comm_link_bandwidth=20GB", "--comm_link_latency=25");
        tu_assert_near(us, 156.0 * 25.0 + SCATTER_BYTES[i] / 20e3, 1e-6);
        tu_assert_near(us, slowest[i], 1e-6);
        tu_assert_near(printed_ms(us), slowest_ms[i], 1e-9);
    }
}

/* The presets with the default log2 rule: alpha(2) = alpha, alpha(4) =
 * 2 alpha, alpha(8) = 3 alpha, over 156 collectives.
 *   nvlink4 (5 us, 450 GB/s): 780 + 193.1128 = 973.11 us (0.97 ms);
 *     1,560 + 579.3382 = 2,139.34 (2.14); 2,340 + 1,351.7892 = 3,691.79
 *     (3.69).
 *   hccs (7 us, 67 GB/s): 1,092 + 1,297.0259 = 2,389.03 (2.39); 2,184 +
 *     3,891.0777 = 6,075.08 (6.08); 3,276 + 9,079.1814 = 12,355.18
 *     (12.36).
 *   pcie4x16 (15 us, 24 GB/s): 2,340 + 3,620.864 = 5,960.864 (5.96);
 *     4,680 + 10,862.592 = 15,542.592 (15.54); 7,020 + 25,346.048 =
 *     32,366.048 (32.37). */
static void preset_columns(void **state)
{
    (void)state;
    static const struct {
        const char *link;
        double alpha_us, bytes_per_us;
        double ms[3];
    } presets[] = {
        {"--comm_link=nvlink4", 5.0, 450e3, {0.97, 2.14, 3.69}},
        {"--comm_link=hccs", 7.0, 67e3, {2.39, 6.08, 12.36}},
        {"--comm_link=pcie4x16", 15.0, 24e3, {5.96, 15.54, 32.37}},
    };
    static const double rounds[] = {1.0, 2.0, 3.0};
    for (size_t k = 0; k < 3; k++) {
        for (size_t i = 0; i < 3; i++) {
            kvshard_plan *p = NULL;
            TU_PLAN(&p, SPLIT_TP8, SPLITS[i], "--comm_batch=64", presets[k].link,
                    "--comm_owner_output=scatter");
            kvshard_comm_estimate e = tu_comm_estimate(p);
            assert_int_equal(e.decode_collectives, 156);
            double want = 156.0 * presets[k].alpha_us * rounds[i] +
                          SCATTER_BYTES[i] / presets[k].bytes_per_us;
            tu_assert_near(e.decode_comm_us, want, 1e-6);
            tu_assert_near(printed_ms(e.decode_comm_us), presets[k].ms[i], 1e-9);
            kvshard_plan_free(p);
        }
    }
    /* Checked by hand for one of each: */
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SPLIT_TP8, SPLITS[2], "--comm_batch=64", "--comm_link=pcie4x16",
            "--comm_owner_output=scatter");
    tu_assert_near(tu_comm_estimate(p).decode_comm_us, 32366.048, 1e-6);
    kvshard_plan_free(p);
}

/* The capacity column: a rank keeps its owned layers plus one scratch
 * layer against all 78 unsplit. Round-robin, rank 0 owns the most:
 * S = 2: 39 + 1, 78 / 40 = 1.95; S = 4: layers 0, 4, ..., 76 = 20 + 1,
 * 78 / 21 = 3.714 (3.71); S = 8: 0, 8, ..., 72 = 10 + 1, 78 / 11 =
 * 7.0909 (7.09). Every KV layer stores the same bytes a token, so the
 * ratio of a rank's bytes a token unsplit to split is that of the layers. */
static void capacity_column(void **state)
{
    (void)state;
    static const size_t owned[] = {39, 20, 10};
    static const double printed[] = {1.95, 3.71, 7.09};
    kvshard_plan *unsplit = NULL;
    TU_PLAN(&unsplit, GLM5, "--world_size=8");
    kvshard_rank_memory whole = KVSHARD_RANK_MEMORY_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_rank_memory(&whole, unsplit, 0), &err);
    const uint32_t *layers = NULL;
    size_t count = 0;
    tu_assert_ok(kvshard_plan_rank_layers(&layers, &count, unsplit, 0), &err);
    assert_int_equal(count, 78);
    for (size_t i = 0; i < 3; i++) {
        kvshard_plan *p = NULL;
        TU_PLAN(&p, SPLIT_TP8, SPLITS[i]);
        tu_assert_ok(kvshard_plan_rank_layers(&layers, &count, p, 0), &err);
        assert_int_equal(count, owned[i]);
        kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
        tu_assert_ok(kvshard_plan_rank_memory(&m, p, 0), &err);
        /* One scratch layer of the same bytes as an owned one. */
        assert_int_equal(m.scratch_bytes_per_token * owned[i], m.kv_bytes_per_token);
        uint64_t split_bytes = m.kv_bytes_per_token + m.scratch_bytes_per_token;
        assert_int_equal(split_bytes * 78, whole.kv_bytes_per_token * (owned[i] + 1));
        double gain = (double)whole.kv_bytes_per_token / (double)split_bytes;
        tu_assert_near(gain, 78.0 / (double)(owned[i] + 1), 1e-12);
        tu_assert_near(round(gain * 100.0) / 100.0, printed[i], 1e-9);
        kvshard_plan_free(p);
    }
    kvshard_plan_free(unsplit);
}

/* Three draft tokens (num_speculative_tokens = 3): tau = 1 x (1 + 3) = 4.
 * The all-gather's count a rank is 4 x 8 x 576 = 18,432 elements (36,864
 * B) and the output broadcast's 4 x 2 x 8 x 512 = 32,768 (65,536 B), as
 * measured. 78 x 102,400 = 7,987,200 B in 156 collectives (the draft
 * layer is not split): 1,092 + 7,987,200 / 67e3 = 1,092 + 119.2119 =
 * 1,211.21 us. */
static void draft_tokens(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, MEASURED, "--num_speculative_tokens=3");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.decode_collectives, 156);
    assert_int_equal(e.decode_link_bytes, 78u * (18432u * 2u + 32768u * 2u));
    assert_int_equal(e.decode_link_bytes, 7987200u);
    tu_assert_near(e.decode_comm_us, 1092.0 + 7987200.0 / 67e3, 1e-6);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"microbatch\": 1, \"tokens_per_step\": 4, ");
    free(json);
    kvshard_plan_free(p);
}

/* The latency fitted to the measurement, alpha = (5.54 ms - 0.03 ms) / 156
 * = 35.3 us on hccs's 67 GB/s: 156 x 35.3 + 1,996,800 / 67e3 = 5,506.8 +
 * 29.8030 = 5,536.603 us, the measured +5.54 ms. */
static void fitted_latency(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, MEASURED, "--comm_link_latency=35.3");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_string_equal(e.link_name, "hccs");
    assert_int_equal(e.decode_link_bytes, 1996800u);
    tu_assert_near(e.decode_comm_us, 156.0 * 35.3 + 1996800.0 / 67e3, 1e-6);
    tu_assert_near(e.decode_comm_us, 5536.603, 1e-3);
    tu_assert_near(printed_ms(e.decode_comm_us), 5.54, 1e-9);
    kvshard_plan_free(p);
}

/* The replaced selected_kv version, tau = 1, index_topk 2,048: per layer a
 * top-k broadcast of 2,048 x 4 = 8,192 B and a row broadcast of the
 * latent's 2,048 x (512 + 64) x 2 = 2,048 x 1,152 = 2,359,296 B (the
 * index key's 132 B a row stay with the owner, whose indexer reads them). 78
 * layers: 156 broadcasts, 78 x 2,367,488 = 184,664,064 B on the busiest
 * port, the same received by the group (S - 1 = 1 receiver); 156 x 7 +
 * 184,664,064 / 67e3 = 1,092 + 2,756.18 = 3,848.18 us (3.85 ms). A rank
 * receives both for its 39 non-owned layers: 39 x 2,367,488 = 92,332,032
 * B. What the group receives a layer under owner attention: the
 * all-gather's 2 x 1 x 9,216 and the output broadcast's 16,384, 34,816 B
 * (34 KiB), against selected_kv's 2,367,488 (2.26 MiB): 68.0 times fewer;
 * 78 x 34,816 = 2,715,648 B a step. */
static void selected_kv(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, MEASURED, "--comm_decode=selected_kv", "--context_length=2504");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_string_equal(e.decode_mechanism, "selected_kv");
    assert_int_equal(e.decode_collectives, 156);
    assert_int_equal(e.decode_link_bytes, 78u * (8192u + 2359296u));
    assert_int_equal(e.decode_link_bytes, 184664064u);
    tu_assert_near(e.decode_comm_us, 1092.0 + 184664064.0 / 67e3, 1e-6);
    tu_assert_near(e.decode_comm_us, 3848.18006, 1e-5);
    tu_assert_near(printed_ms(e.decode_comm_us), 3.85, 1e-9);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"collectives\": 156, \"link_bytes\": 184664064, "
                             "\"wire_bytes\": 184664064, ");
    tu_assert_contains(json, "{\"stage\": 0, \"tp_rank\": 0, \"split_rank\": 0, "
                             "\"decode_bytes_received\": 92332032, ");
    free(json);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "decode selected_kv");
    tu_assert_contains(text, "156 collectives, 184.66 MB on the busiest link, 3.85 ms");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, MEASURED, "--context_length=2504");
    json = tu_plan_json(p);
    tu_assert_contains(json, "\"collectives\": 156, \"link_bytes\": 1996800, "
                             "\"wire_bytes\": 2715648, ");
    free(json);
    kvshard_plan_free(p);
    tu_assert_near(2367488.0 / 34816.0, 68.0, 1e-12);
    /* With B = 64 and scatter-free defaults at S = 4: tau = 64, the same
     * two broadcasts a layer, 64 x 2,367,488 = 151,519,232 B each layer,
     * 78 of them 11,818,500,096 B; each broadcast's busiest port carries
     * m whatever S. */
    TU_PLAN(&p, SPLIT_TP8, SPLITS[1], "--comm_batch=64", "--comm_link=hccs",
            "--comm_decode=selected_kv");
    e = tu_comm_estimate(p);
    assert_int_equal(e.decode_collectives, 156);
    assert_int_equal(e.decode_link_bytes, 11818500096u);
    /* alpha(4) = 14 us: 2,184 + 11,818,500,096 / 67e3 us. */
    tu_assert_near(e.decode_comm_us, 2184.0 + 11818500096.0 / 67e3, 1e-6);
    kvshard_plan_free(p);
}

/* Without a batch selected_kv's bytes are unknown, its count is not. */
static void selected_kv_needs_a_batch(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SPLIT_TP8, SPLITS[0], "--comm_link=hccs", "--comm_decode=selected_kv");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_false(e.has_batch);
    assert_int_equal(e.decode_collectives, 156);
    assert_false(e.has_decode_bytes);
    assert_false(e.has_decode_time);
    kvshard_plan_free(p);
}

/* A DSA model whose config has no index_topk: selected_kv cannot say how
 * many rows it sends, and names the key. */
static void selected_kv_needs_index_topk(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "comm/dsa_without_index_topk.json", "--world_size=8",
            "--enable_layerwise_split=true", "--layerwise_split_size=8", "--comm_link=nvlink4",
            "--comm_batch=1", "--comm_decode=selected_kv");
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err;
    assert_int_equal(kvshard_plan_comm(&e, p, &err), KVSHARD_EMISSING);
    tu_assert_contains(err.message, "comm_input_missing: selected_kv");
    tu_assert_contains(err.message, "no index_topk");
    kvshard_plan_free(p);
}

/* The report prices selected_kv's row on a DSA model, as the plan does:
 * the measured run's 156 collectives, 184.66 MB and 3.85 ms; no
 * accelerator, so no step; a decode mechanism, so no prompt. */
static void report_row(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, MEASURED, "--comm_decode=selected_kv", "--context_length=2504");
    char *page = NULL;
    assert_int_equal(kvshard_report_write_html(p, NULL, NULL, tu_append, &page), KVSHARD_OK);
    tu_assert_contains(page, "<tr class=\"rec\"><td><code>selected_kv</code></td><td>decode</td>"
                             "<td class=\"n\">156</td><td class=\"n\">184.66 MB</td>"
                             "<td class=\"n\">3.85 ms</td><td class=\"n\">-</td>"
                             "<td class=\"n\">-</td><td class=\"n\">-</td>"
                             "<td colspan=\"3\">decode only</td></tr>");
    tu_assert_contains(page, "id=\"comm-decode-selected_kv\"");
    free(page);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(custom_link_columns),
        cmocka_unit_test(preset_columns),
        cmocka_unit_test(capacity_column),
        cmocka_unit_test(draft_tokens),
        cmocka_unit_test(fitted_latency),
        cmocka_unit_test(selected_kv),
        cmocka_unit_test(selected_kv_needs_a_batch),
        cmocka_unit_test(selected_kv_needs_index_topk),
        cmocka_unit_test(report_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
