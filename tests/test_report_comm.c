/* The report's price of the split: the seed deployment on BI-V100, each
 * mechanism's row worked out by hand from the formulas of docs/comm.md,
 * the bars' widths from their figures and the scale, and no section at all
 * without a comm input. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include "test_util.h"

#include "kvshard/output.h"
#include "output/report_comm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Qwen3.5-35B-A3B, TP 4, S = 2, 20 GiB a rank, 32 K tokens: 10 GQA
 * full-attention layers and 30 GDN layers; every owner stores one KV head,
 * r = 1 x (256 + 256) x 2 = 1,024 B a token. 197,493 blocks of 16 tokens,
 * 96 sequences (unsplit 118,496 blocks, 57). bi_v100: 1.2 TB/s and
 * pcie4x16, beta 24 GB/s, alpha(2) = 15 us. */
#define SEED_PLAN                                                                                  \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",                   \
        "--context_length=32768", "--weights_total=69321223296", "--weights_experts=64424509440"
#define SEED SEED_PLAN, "--comm_accelerator=bi_v100"

/* Decode communication a step, in us: owner_attention 20 x 15 + 5,898,240
 * B / 24e9 B/s = 300 + 245.76 = 545.76; full_layer broadcasts the 10 pools
 * of 197,493 x 16 x 1,024 = 3,235,725,312 B: 10 x 15 + 32,357,253,120 /
 * 24e9 = 150 + 1,348,218.88 = 1,348,368.88, the longest bar. */
#define OWNER_DECODE_US 545.76
#define FULL_DECODE_US 1348368.88
/* A 32,768-token prompt in 4 chunks of 8,192, three with history:
 * history_rows moves 8,192 + 16,384 + 24,576 = 49,152 rows a layer, 10 x
 * 49,152 x 1,024 = 503,316,480 B, 30 x 15 + 20,971.52 = 21,421.52 us;
 * full_layer moves the 10 pools 3 times, 97,071,759,360 B, 30 x 15 +
 * 4,044,656.64 = 4,045,106.64 us. */
#define HISTORY_PROMPT_US 21421.52
#define FULL_PROMPT_US 4045106.64

static char *report_of(const kvshard_plan *plan)
{
    char *page = NULL;
    assert_int_equal(kvshard_report_write_html(plan, NULL, NULL, tu_append, &page), KVSHARD_OK);
    assert_non_null(page);
    return page;
}

/* xmllint must be there: a missing checker fails the test, it does not skip. */
static void assert_well_formed(const char *page)
{
    if (tu_run("command -v xmllint", NULL, NULL) != 0)
        fail_msg("xmllint not found: install libxml2-utils; this test checks the markup with it");
    char path[] = "/tmp/kvshard_report_comm_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(page, 1, strlen(page), f), strlen(page));
    assert_int_equal(fclose(f), 0);
    char command[128];
    snprintf(command, sizeof command, "xmllint --noout '%s'", path);
    char *err = NULL;
    int status = tu_run(command, NULL, &err);
    if (status != 0)
        print_error("xmllint:\n%s\n", err ? err : "");
    free(err);
    unlink(path);
    assert_int_equal(status, 0);
}

/* The table row of `mechanism`, from <tr to </tr>, into `out`. */
static void row_of(char *out, size_t cap, const char *page, const char *mechanism)
{
    char needle[64];
    snprintf(needle, sizeof needle, "<td><code>%s</code>", mechanism);
    const char *cell = strstr(page, needle);
    if (!cell)
        fail_msg("no row of %s", mechanism);
    const char *begin = cell;
    while (begin > page && strncmp(begin, "<tr", 3) != 0)
        begin--;
    const char *end = strstr(cell, "</tr>");
    assert_non_null(end);
    size_t n = (size_t)(end + 5 - begin);
    assert_true(n < cap);
    memcpy(out, begin, n);
    out[n] = '\0';
}

static void assert_row(const char *page, const char *mechanism, const char *want)
{
    char got[2048];
    row_of(got, sizeof got, page, mechanism);
    if (strcmp(got, want) != 0)
        print_error("row of %s:\n got  %s\n want %s\n", mechanism, got, want);
    assert_string_equal(got, want);
}

/* The width of the bar with id `id`, in px. */
static double width_of(const char *page, const char *id)
{
    char needle[96];
    snprintf(needle, sizeof needle, "id=\"%s\"", id);
    const char *bar = strstr(page, needle);
    if (!bar)
        fail_msg("no bar %s", id);
    const char *w = strstr(bar, "width=\"");
    assert_non_null(w);
    return strtod(w + 7, NULL);
}

static void assert_width(const char *page, const char *id, double want)
{
    double got = width_of(page, id);
    if (fabs(got - want) > 0.005)
        print_error("%s: width %.4f, want %.4f\n", id, got, want);
    assert_true(fabs(got - want) <= 0.005);
}

/* Every mechanism's row with the kvshard profile's mechanisms in force. */
static void seed_rows(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    char *page = report_of(p);
    assert_well_formed(page);
    tu_assert_contains(page, "<h2>The price of the split (estimate)</h2>");
    /* Capacity: 96 sequences against the unsplit 57, 96 / 57 = 1.68x. The
     * unsplit step reads 57 x 367,738,880 B of KV and state beside the
     * 17,330,305,824 B of weights: 31,909.52 us, 57 / that = 1,786.3
     * tokens/s. */
    tu_assert_contains(page, "S = 2 holds 96 sequences at once where S = 1 holds 57: "
                             "1.68\xC3\x97 the capacity");
    tu_assert_contains(page, "Unsplit, a step takes 31.91 ms: 1,786.3 tokens/s.");
    /* The presets' sources and what the estimate leaves out, in words. */
    tu_assert_contains(page, "An estimate, not a measurement");
    tu_assert_contains(page, "(PCIe 4.0 x16, the share peer-to-peer copies reach; alpha "
                             "assumed)");
    tu_assert_contains(page, "1.20 TB/s memory (TechPowerUp, 2021)");
    tu_assert_contains(page, "docs/comm.md lists what it leaves out");
    /* owner_attention: 20 collectives, 5,898,240 B (5.90 MB), 0.55 ms; base
     * (17,330,305,824 + 96 x 367,738,880) / 1.2e12 s = 43,861.03 us, step
     * 43,861.03 + 545.76 = 44,406.79 us (44.41 ms); 96 / that = 2,161.8
     * tokens/s, 2,161.8 / 1,786.3 = 1.21x. A decode mechanism: no prompt. */
    assert_row(page, "owner_attention",
               "<tr class=\"rec\"><td><code>owner_attention</code> (output broadcast)</td>"
               "<td>decode (the profile's)</td><td class=\"n\">20</td><td class=\"n\">5.90 MB"
               "</td><td class=\"n\">0.55 ms</td><td class=\"n\">44.41 ms</td><td class=\"n\">"
               "2,161.8</td><td class=\"n\">1.21\xC3\x97</td><td colspan=\"3\">decode only</td>"
               "</tr>");
    /* selected_kv needs a DSA indexer: refused by name, never drawn. */
    assert_row(page, "selected_kv",
               "<tr><td><code>selected_kv</code></td><td></td><td colspan=\"9\" class=\"err\">"
               "not priced: selected_kv sends the rows a DSA indexer selects, and this model "
               "has no indexer (comm_mechanism_model)</td></tr>");
    /* history_rows in decode moves each sequence's history every step: 96
     * x 32,768 x 1,024 = 3,221,225,472 B a layer, 10 broadcasts,
     * 32,212,254,720 B (32.21 GB), 150 + 1,342,177.28 = 1,342,327.28 us
     * (1.34 s); not overlapped, the step is 43,861.03 + 1,342,327.28 =
     * 1,386,188.31 us (1.39 s): 96 / that = 69.3 tokens/s, 69.25 /
     * 1,786.30 = 0.04x. Its prompt (the profile's prefill): 30 collectives,
     * 503,316,480 B (503.32 MB), 21.42 ms. */
    assert_row(page, "history_rows",
               "<tr class=\"rec\"><td><code>history_rows</code></td><td>prefill (the "
               "profile's)</td><td class=\"n\">10</td><td class=\"n\">32.21 GB</td><td "
               "class=\"n\">1.34 s</td><td class=\"n\">1.39 s</td><td class=\"n\">69.3</td>"
               "<td class=\"n\">0.04\xC3\x97</td><td class=\"n\">30</td><td class=\"n\">503.32 "
               "MB</td><td class=\"n\">21.42 ms</td></tr>");
    /* full_layer: 10 collectives, 32,357,253,120 B (32.36 GB), 1.35 s;
     * overlapped, the step is the longer, 1,348,368.88 us (1.35 s): 71.2
     * tokens/s, 0.04x. Its prompt: 30, 97,071,759,360 B (97.07 GB), 4.05 s. */
    assert_row(page, "full_layer",
               "<tr><td><code>full_layer</code></td><td></td><td class=\"n\">10</td><td "
               "class=\"n\">32.36 GB</td><td class=\"n\">1.35 s</td><td class=\"n\">1.35 s</td>"
               "<td class=\"n\">71.2</td><td class=\"n\">0.04\xC3\x97</td><td class=\"n\">30</td>"
               "<td class=\"n\">97.07 GB</td><td class=\"n\">4.05 s</td></tr>");
    free(page);
    kvshard_plan_free(p);
}

/* Bars are proportional to their figures on one axis per quantity, whose
 * end is the largest figure and which the scale names. */
static void seed_bars_to_scale(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED);
    char *page = report_of(p);
    const double full = KVSHARD_REPORT_COMM__BAR_W;
    assert_int_equal(KVSHARD_REPORT_COMM__BAR_W, 600);
    /* Capacity: 96 at the axis's end, 57 at 57 / 96 x 600 = 356.25 px. */
    assert_width(page, "comm-seqs-split", full);
    assert_width(page, "comm-seqs-unsplit", 57.0 / 96.0 * full);
    tu_assert_contains(page, "scale: 600 px = 96<");
    /* A decode step: full_layer's 1,348,368.88 us ends the axis; owner
     * attention's 545.76 us is 545.76 / 1,348,368.88 x 600 = 0.24 px. */
    assert_width(page, "comm-decode-full_layer", full);
    assert_width(page, "comm-decode-owner_attention", OWNER_DECODE_US / FULL_DECODE_US * full);
    tu_assert_contains(page, "scale: 600 px = 1.35 s<");
    /* A prompt: full_layer's 4,045,106.64 us ends it; history_rows'
     * 21,421.52 us is 21,421.52 / 4,045,106.64 x 600 = 3.18 px. */
    assert_width(page, "comm-prompt-full_layer", full);
    assert_width(page, "comm-prompt-history_rows", HISTORY_PROMPT_US / FULL_PROMPT_US * full);
    tu_assert_contains(page, "scale: 600 px = 4.05 s<");
    /* Throughput: owner attention's 96 / 44,406.79192 us ends it; the
     * unsplit 57 / 31,909.51832 us is at their ratio. */
    double owner = 96.0 / 44406.79192e-6, unsplit = 57.0 / 31909.51832e-6;
    assert_width(page, "comm-tput-owner_attention", full);
    assert_width(page, "comm-tput-unsplit", unsplit / owner * full);
    /* selected_kv is not priced, so it has no bar. */
    assert_null(strstr(page, "comm-decode-selected_kv"));
    free(page);
    kvshard_plan_free(p);
}

/* The owner's output scattered: 3,932,160 link bytes (3.93 MB), 20 x 15 +
 * 163.84 = 463.84 us (0.46 ms); step 43,861.03 + 463.84 = 44,324.87 us
 * (44.32 ms): 96 / that = 2,165.8 tokens/s, 1.21x. */
static void seed_scatter(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_owner_output=scatter");
    char *page = report_of(p);
    assert_row(page, "owner_attention",
               "<tr class=\"rec\"><td><code>owner_attention</code> (output scatter)</td>"
               "<td>decode (the profile's)</td><td class=\"n\">20</td><td class=\"n\">3.93 MB"
               "</td><td class=\"n\">0.46 ms</td><td class=\"n\">44.32 ms</td><td class=\"n\">"
               "2,165.8</td><td class=\"n\">1.21\xC3\x97</td><td colspan=\"3\">decode only</td>"
               "</tr>");
    free(page);
    kvshard_plan_free(p);
}

/* With full_layer given for both, its row is the one in force, not the
 * profile's, and its bars are the marked ones. */
static void seed_full_layer_given(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_prefill=full_layer");
    char *page = report_of(p);
    assert_well_formed(page);
    char row[2048];
    row_of(row, sizeof row, page, "full_layer");
    tu_assert_contains(row, "<tr class=\"rec\"><td><code>full_layer</code></td><td>decode and "
                            "prefill</td>");
    row_of(row, sizeof row, page, "owner_attention");
    tu_assert_contains(row, "<tr><td><code>owner_attention</code>");
    tu_assert_contains(page, "id=\"comm-decode-full_layer\" class=\"mk\"");
    tu_assert_contains(page, "id=\"comm-decode-owner_attention\" class=\"cb\"");
    free(page);
    kvshard_plan_free(p);
}

/* Without a comm input the report has no section; at S = 1 the section
 * says there is nothing to price. */
static void no_input_no_section(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED_PLAN);
    char *page = report_of(p);
    assert_null(strstr(page, "id=\"comm\""));
    assert_null(strstr(page, "price of the split"));
    assert_null(strstr(page, "kvcomm"));
    free(page);
    kvshard_plan_free(p);
    TU_PLAN(&p, "models/qwen3_5_35b_a3b.json", "--world_size=4", "--memory_per_rank=20GiB",
            "--context_length=32768", "--comm_link=pcie4x16");
    page = report_of(p);
    assert_well_formed(page);
    tu_assert_contains(page, "<h2>The price of the split (estimate)</h2>");
    tu_assert_contains(page, "The plan does not split its layers (S = 1)");
    assert_null(strstr(page, "kvcomm"));
    free(page);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_rows),           cmocka_unit_test(seed_bars_to_scale),
        cmocka_unit_test(seed_scatter),        cmocka_unit_test(seed_full_layer_given),
        cmocka_unit_test(no_input_no_section),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
