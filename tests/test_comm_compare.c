/* compare priced and ranked by the throughput estimate: the seed deployment
 * (Qwen3.5-35B-A3B, TP 4, 20 GiB a rank, 32,768 tokens) on BI-V100, every
 * figure worked out by hand from the formulas of docs/comm.md; a compare
 * whose throughput ranking differs from its capacity ranking; --rank and
 * its refusals; a compare without comm inputs unchanged. */
#include "test_util.h"

#include <kvshard/explore.h>
#include <kvshard/output.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEED_COMPARE                                                                               \
    "--world_size=4", "--memory_per_rank=20GiB", "--max_seqs=128", "--context_length=32768",       \
        "--weights_total=69321223296", "--weights_experts=64424509440"

/* The seed deployment with `args`, compared and ranked as `rank_by` asks:
 * the status, the comparison into *out. */
static int compare_of(kvshard_comparison **out, kvshard_error *err, kvshard_rank_by rank_by,
                      size_t count, const char *const *args)
{
    kvshard_deployment *dep = NULL;
    tu_assert_ok(tu_deployment_args(&dep, err, "models/qwen3_5_35b_a3b.json", count, args), err);
    kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
    co.rank_by = rank_by;
    int rc = kvshard_deployment_compare_with(out, dep, &co, err);
    kvshard_deployment_free(dep);
    return rc;
}

static const kvshard_comparison_row *row_of(const kvshard_comparison *c, uint32_t S,
                                            kvshard_ownership rule, size_t *index)
{
    for (size_t i = 0; i < kvshard_comparison_row_count(c); i++) {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(c, i);
        if (r->layerwise_split_size == S && r->ownership == rule) {
            if (index)
                *index = i;
            return r;
        }
    }
    fail_msg("no row S %u", S);
    return NULL;
}

/* bi_v100: BW 1.2 TB/s, implies pcie4x16: beta 24 GB/s, alpha(2) = 15 us.
 * 10 full-attention layers (GQA, 2 KV heads of 256, 16 query heads), 30
 * GDN layers; H_l = 16 / 4 = 4, q_w = o_w = 256, a = 2. */
static void seed_priced(void **state)
{
    (void)state;
    const char *args[] = {SEED_COMPARE, "--comm_accelerator=bi_v100"};
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_AUTO, 7, args), &err);
    /* auto: an accelerator, its implied link, a context length and a
     * budget for the batch. */
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_THROUGHPUT);

    /* S = 2 ordinal: 96 sequences (B = 96), a split group is one head's two
     * replicas, so the owner stores and reads one head: r = 1 x (256 +
     * 256) x 2 = 1,024 B a token. Per layer an all-gather of 96 x 4 x 256
     * x 2 = 196,608 B and a broadcast of 2 x 196,608 = 393,216 B: over 10
     * layers 20 collectives, 5,898,240 B, 20 x 15 + 5,898,240 / 24e9 s =
     * 300 + 245.76 = 545.76 us. Weights ceil(4,896,713,856 / 4) +
     * ceil(64,424,509,440 / 4) = 17,330,305,824 B; a sequence reads 10 x
     * 32,768 x 1,024 + 30 x 2 x 536,576 = 367,738,880 B, 96 of them
     * 35,302,932,480 B: base 52,633,238,304 / 1.2e12 s = 43,861.03 us,
     * step 44,406.79 us, 96 / 44,406.79 us = 2,161.83 tokens/s. */
    size_t split_index = 0;
    const kvshard_comparison_row *r = row_of(c, 2, KVSHARD_OWNERSHIP_ORDINAL, &split_index);
    assert_int_equal(kvshard_comparison_recommended(c), split_index);
    const kvshard_comm_estimate *e = r->comm;
    assert_non_null(e);
    assert_true(e->given && e->has_step && e->has_gain && e->has_unsplit);
    assert_int_equal(e->batch, 96);
    assert_int_equal(e->decode_collectives, 20);
    assert_int_equal(e->decode_link_bytes, 5898240u);
    tu_assert_near(e->decode_comm_us, 300.0 + 5898240.0 / 24e3, 1e-9);
    tu_assert_near(e->base_us, (17330305824.0 + 96.0 * 367738880.0) / 1.2e6, 1e-6);
    tu_assert_near(e->base_us, 43861.03, 0.005);
    tu_assert_near(e->step_us, 44406.79, 0.005);
    tu_assert_near(e->tpot_us, e->step_us, 0.0);
    tu_assert_near(e->throughput, 2161.83, 0.005);
    tu_assert_near(e->throughput_total, e->throughput, 0.0);
    /* A 32,768-token prompt under history_rows: 4 chunks of 8,192, history
     * 8,192 + 16,384 + 24,576 = 49,152 rows a layer, 30 broadcasts, 10 x
     * 49,152 x 1,024 = 503,316,480 B: 30 x 15 + 20,971.52 = 21,421.52 us. */
    assert_int_equal(e->prefill_collectives, 30);
    assert_int_equal(e->prefill_link_bytes, 503316480u);
    tu_assert_near(e->prefill_comm_us, 21421.52, 1e-6);
    assert_true(r->warnings & (1u << KVSHARD_WARN_COMM_MECHANISM_ASSUMED));
    assert_false(r->warnings & (1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));

    /* The S = 1 row is the reference: 57 sequences, (17,330,305,824 + 57 x
     * 367,738,880) / 1.2e12 s = 31,909.52 us, 57 / 31,909.52 us = 1,786.30
     * tokens/s; the split gives 2,161.83 / 1,786.30 = 1.21x. */
    const kvshard_comparison_row *u = row_of(c, 1, KVSHARD_OWNERSHIP_ORDINAL, NULL);
    assert_int_equal(u->comm->batch, 57);
    assert_int_equal(u->comm->decode_collectives, 0);
    tu_assert_near(u->comm->step_us, (17330305824.0 + 57.0 * 367738880.0) / 1.2e6, 1e-6);
    tu_assert_near(u->comm->step_us, 31909.52, 0.005);
    tu_assert_near(u->comm->throughput, 1786.30, 0.005);
    tu_assert_near(u->comm->throughput_gain, 1.0, 0.0);
    tu_assert_near(e->unsplit_throughput, u->comm->throughput, 0.0);
    tu_assert_near(e->throughput_gain, 1.21, 0.005);

    /* S = 2 global (52 sequences, 1,687.7) and S = 4 ordinal (72, where
     * the owner stores and reads two heads: 1,248.5) lose to S = 1. */
    const kvshard_comparison_row *g = row_of(c, 2, KVSHARD_OWNERSHIP_GLOBAL, NULL);
    assert_int_equal(g->comm->batch, 52);
    tu_assert_near(g->comm->throughput, 1687.7, 0.05);
    assert_true(g->warnings & (1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));
    const kvshard_comparison_row *four = row_of(c, 4, KVSHARD_OWNERSHIP_ORDINAL, NULL);
    assert_int_equal(four->comm->batch, 72);
    tu_assert_near(four->comm->throughput, 1248.5, 0.05);
    assert_true(four->warnings & (1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));
    kvshard_comparison_free(c);
}

/* A given batch above the unsplit plan's concurrency: the S = 2 row decodes
 * 80 sequences and its reference is the plan with the split off at its own
 * 57 (the given batch capped), as under plan, and the S = 1 row, which
 * holds no more than 57 either, decodes those 57 and gives the same. Reference: (17,330,305,824
 * + 57 x 367,738,880) / 1.2e12 s = 31,909.52 us, 1,786.30 tokens/s. The split
 * row: 80 x 367,738,880 = 29,419,110,400 B of KV, base (17,330,305,824 +
 * 29,419,110,400) / 1.2e12 s = 38,957.85 us; its 20 collectives move 80 x 4
 * x 256 x 2 = 163,840 B gathered and 327,680 B broadcast a layer, 4,915,200
 * B: 300 + 204.80 = 504.80 us; step 39,462.65 us, 80 / that = 2,027.23
 * tokens/s, 1.135x the reference. */
static void capped_batch_reference(void **state)
{
    (void)state;
    const char *args[] = {SEED_COMPARE, "--comm_accelerator=bi_v100", "--comm_batch=80"};
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_AUTO, 8, args), &err);
    const kvshard_comm_estimate *e = row_of(c, 2, KVSHARD_OWNERSHIP_ORDINAL, NULL)->comm;
    assert_int_equal(e->batch, 80);
    assert_int_equal(e->decode_link_bytes, 4915200u);
    tu_assert_near(e->step_us, (17330305824.0 + 80.0 * 367738880.0) / 1.2e6 + 504.8, 1e-6);
    tu_assert_near(e->throughput, 2027.23, 0.005);
    assert_true(e->has_unsplit);
    tu_assert_near(e->unsplit_throughput, 1786.30, 0.005);
    tu_assert_near(e->throughput_gain, 2027.23 / 1786.30, 0.0001);
    const kvshard_comm_estimate *u = row_of(c, 1, KVSHARD_OWNERSHIP_ORDINAL, NULL)->comm;
    assert_int_equal(u->batch, 57);
    tu_assert_near(u->throughput, e->unsplit_throughput, 1e-9);
    kvshard_comparison_free(c);
}

/* The JSON and the text of the seed compare: the rows' comm, rank_by, the
 * recommendation's throughput; the columns and the header line. */
static void seed_documents(void **state)
{
    (void)state;
    const char *args[] = {SEED_COMPARE, "--comm_accelerator=bi_v100"};
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_AUTO, 7, args), &err);
    char *json = NULL;
    assert_int_equal(kvshard_comparison_write_json(c, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"context_length\": 32768,\n  \"rank_by\": \"throughput\",\n"));
    assert_non_null(strstr(json, "\"comm\": {\"batch\": 96, \"collectives\": 20, \"link_bytes\": "
                                 "5898240, \"comm_us\": 545.76, \"base_us\": 43861.03192, "
                                 "\"step_us\": 44406.79192, "));
    assert_non_null(strstr(json, "\"prefill_link_bytes\": 503316480, \"prefill_comm_us\": "
                                 "21421.52}}"));
    assert_non_null(strstr(json, "\"rank_by\": \"throughput\", \"throughput\": 2161.83"));
    free(json);
    char *text = NULL;
    assert_int_equal(kvshard_comparison_write_text(c, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "\n\nranked by throughput (estimate)\n     S  rule"));
    assert_non_null(strstr(text, "balanced  comm/step  step       tok/s    x tput  gain\n"));
    /* Times in ms with two decimals, whole tokens per second. */
    assert_non_null(strstr(text, ">    2  ordinal     5-5 "));
    assert_non_null(strstr(text, "0.55 ms    44.41 ms   2,162    1.21x   1.67x"));
    assert_non_null(strstr(text, "0.00 ms    31.91 ms   1,786    1.00x   1.00x"));
    /* The times say they are an estimate, on which link and memory. */
    assert_non_null(strstr(text, "\n\nestimate, not a measurement: link pcie4x16, 24 GB/s a "
                                 "direction, \xce\xb1 15 \xc2\xb5s; bi_v100, 1.2 TB/s memory "
                                 "(docs/comm.md: "));
    free(text);
    kvshard_comparison_free(c);
}

/* Under full_layer the split broadcasts each layer's whole pool, 197,493 x
 * 16 x 1,024 = 3,235,725,312 B, 10 of them a step: 150 + 32,357,253,120 /
 * 24e9 s = 1,348,368.88 us, overlapped with the 43,861.03 us base:
 * 96 / 1,348,368.88 us = 71.2 tokens/s. By capacity S = 2 ordinal leads
 * (96 sequences); by throughput S = 1 (1,786.3). */
static void full_layer_orders(void **state)
{
    (void)state;
    const char *args[] = {SEED_COMPARE, "--comm_accelerator=bi_v100", "--comm_decode=full_layer",
                          "--comm_prefill=full_layer"};
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_THROUGHPUT, 9, args), &err);
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_THROUGHPUT);
    size_t unsplit = 0, split = 0;
    row_of(c, 1, KVSHARD_OWNERSHIP_ORDINAL, &unsplit);
    const kvshard_comparison_row *r = row_of(c, 2, KVSHARD_OWNERSHIP_ORDINAL, &split);
    assert_int_equal(kvshard_comparison_recommended(c), unsplit);
    assert_int_equal(r->comm->decode_collectives, 10);
    assert_int_equal(r->comm->decode_link_bytes, 32357253120u);
    tu_assert_near(r->comm->step_us, 150.0 + 32357253120.0 / 24e3, 1e-6);
    tu_assert_near(r->comm->throughput, 71.2, 0.05);
    assert_true(r->warnings & (1u << KVSHARD_WARN_FULL_LAYER_DECODE));
    assert_true(r->warnings & (1u << KVSHARD_WARN_SPLIT_COMM_DOMINATES));
    assert_true(r->warnings & (1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));
    kvshard_comparison_free(c);

    /* The same inputs by capacity: the rows keep their comm, S = 2 leads. */
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_CAPACITY, 9, args), &err);
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_CAPACITY);
    assert_int_equal(kvshard_comparison_recommended(c), split);
    assert_true(kvshard_comparison_row_at(c, split)->comm->given);
    char *json = NULL;
    assert_int_equal(kvshard_comparison_write_json(c, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\n  \"rank_by\": \"capacity\",\n"));
    assert_non_null(strstr(json, "\"rank_by\": \"capacity\", \"throughput\": 71.19"));
    free(json);
    char *text = NULL;
    assert_int_equal(kvshard_comparison_write_text(c, tu_append, &text), KVSHARD_OK);
    assert_null(strstr(text, "ranked by throughput"));
    /* A step of 1,348,368.88 us is "1,348.37 ms", 11 characters: the two
     * time columns widen from 10 to 11 for every row and the heading, so
     * the split row's cells stay under it; 71.19 / 1,786.30 = 0.04x. */
    assert_non_null(strstr(text, "comm/step   step        tok/s    x tput  gain\n"));
    assert_non_null(strstr(text, " 0.00 ms     31.91 ms    1,786    1.00x   1.00x "));
    assert_non_null(strstr(text, " 1,348.37 ms 1,348.37 ms 71       0.04x   1.67x "));
    free(text);
    kvshard_comparison_free(c);
}

/* --rank=throughput needs an accelerator, a link, a context length and a
 * decode batch; a bad rank_by is comm_value. */
static void rank_refused(void **state)
{
    (void)state;
    kvshard_comparison *c = NULL;
    kvshard_error err;
    const char *none[] = {SEED_COMPARE};
    assert_int_equal(compare_of(&c, &err, KVSHARD_RANK_THROUGHPUT, 6, none), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "comm_input_missing: --rank=throughput needs an "
                                        "accelerator"));
    assert_null(c);
    const char *no_budget[] = {"--world_size=4", "--context_length=32768",
                               "--weights_total=69321223296", "--weights_experts=64424509440",
                               "--comm_accelerator=bi_v100"};
    assert_int_equal(compare_of(&c, &err, KVSHARD_RANK_THROUGHPUT, 5, no_budget), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "needs a decode batch"));
    /* Auto without a batch ranks by capacity, its rows priced. */
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_AUTO, 5, no_budget), &err);
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_CAPACITY);
    assert_true(kvshard_comparison_row_at(c, 0)->comm->given);
    assert_false(kvshard_comparison_row_at(c, 0)->comm->has_step);
    kvshard_comparison_free(c);
    /* A comm_batch gives the batch. */
    const char *batch[] = {"--world_size=4",
                           "--context_length=32768",
                           "--weights_total=69321223296",
                           "--weights_experts=64424509440",
                           "--comm_accelerator=bi_v100",
                           "--comm_batch=8"};
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_THROUGHPUT, 6, batch), &err);
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_THROUGHPUT);
    kvshard_comparison_free(c);

    /* A model alone has no comm inputs. */
    char *path = tu_example_path("models/qwen3_5_35b_a3b.json");
    kvshard_model *m = NULL;
    tu_assert_ok(kvshard_model_load_file(&m, path, NULL, &err), &err);
    free(path);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
    co.rank_by = KVSHARD_RANK_THROUGHPUT;
    assert_int_equal(kvshard_comparison_create(&c, m, &o, &co, NULL, &err), KVSHARD_EMISSING);
    co.rank_by = (kvshard_rank_by)7;
    assert_int_equal(kvshard_comparison_create(&c, m, &o, &co, NULL, &err), KVSHARD_ERANGE);
    assert_non_null(strstr(err.message, "comm_value: rank_by is 7"));
    co.rank_by = KVSHARD_RANK_AUTO;
    tu_assert_ok(kvshard_comparison_create(&c, m, &o, &co, NULL, &err), &err);
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_CAPACITY);
    assert_false(kvshard_comparison_row_at(c, 0)->comm->given);
    kvshard_comparison_free(c);
    kvshard_model_free(m);
}

/* Without comm inputs the documents carry no rank_by, no comm and no
 * columns of the estimate. */
static void unpriced_unchanged(void **state)
{
    (void)state;
    const char *none[] = {SEED_COMPARE};
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_AUTO, 6, none), &err);
    assert_int_equal(kvshard_comparison_rank_by(c), KVSHARD_RANK_CAPACITY);
    char *json = NULL, *text = NULL;
    assert_int_equal(kvshard_comparison_write_json(c, tu_append, &json), KVSHARD_OK);
    assert_int_equal(kvshard_comparison_write_text(c, tu_append, &text), KVSHARD_OK);
    assert_null(strstr(json, "rank_by"));
    assert_null(strstr(json, "\"comm\""));
    assert_null(strstr(text, "comm/step"));
    assert_null(strstr(text, "ranked by"));
    free(json);
    free(text);
    kvshard_comparison_free(c);
}

/* A latency of 0 is a link without one (alpha = 0): given as a flag or in a
 * file it replaces the preset's 15 us, and with a bandwidth it makes a
 * custom link; a negative one is refused. */
static void zero_latency(void **state)
{
    (void)state;
    const char *args[] = {SEED_COMPARE, "--comm_accelerator=bi_v100", "--comm_link_latency=0"};
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(compare_of(&c, &err, KVSHARD_RANK_AUTO, 8, args), &err);
    /* S = 2 ordinal: the 5,898,240 bytes alone, 5,898,240 / 24e9 s =
     * 245.76 us; the step 43,861.03 + 245.76 = 44,106.79 us. */
    const kvshard_comparison_row *r = row_of(c, 2, KVSHARD_OWNERSHIP_ORDINAL, NULL);
    assert_true(r->comm->has_link);
    tu_assert_near(r->comm->link_latency_us, 0.0, 0.0);
    tu_assert_near(r->comm->decode_comm_us, 245.76, 1e-9);
    tu_assert_near(r->comm->step_us, 44106.79, 0.005);
    kvshard_comparison_free(c);

    char *model = tu_example_path("models/qwen3_5_35b_a3b.json");
    char yaml[1024];
    snprintf(yaml, sizeof yaml,
             "model: %s\nparallel:\n  world_size: 4\n  enable_layerwise_split: true\n"
             "  layerwise_split_size: 2\ncomm:\n  link_bandwidth: 24GB\n  link_latency: 0\n",
             model);
    free(model);
    kvshard_deployment *dep = NULL;
    tu_assert_ok(
        kvshard_deployment_load_string(&dep, yaml, strlen(yaml), "zero.yaml", NULL, NULL, &err),
        &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    tu_assert_ok(kvshard_plan_comm(&e, p, &err), &err);
    assert_string_equal(e.link_name, "custom");
    assert_int_equal(e.link_bandwidth, 24000000000u);
    tu_assert_near(e.link_latency_us, 0.0, 0.0);
    kvshard_plan_free(p);
    const char *negative[] = {"--comm_link_latency=-1"};
    assert_int_not_equal(kvshard_deployment_apply_args(dep, 1, negative, 0, &err), KVSHARD_OK);
    assert_non_null(strstr(err.message, "comm_link_latency"));
    kvshard_deployment_free(dep);
}

typedef struct run_result {
    int status;
    char *out;
    char *err;
} run_result;

static run_result kvshard(const char *args)
{
    char *path = tu_example_path("models/qwen3_5_35b_a3b.json");
    char command[4096];
    snprintf(command, sizeof command, "'%s' compare '%s' %s", KVSHARD_CLI, path, args);
    free(path);
    run_result r;
    r.status = tu_run(command, &r.out, &r.err);
    assert_non_null(r.out);
    assert_non_null(r.err);
    return r;
}

/* The command line: --rank for compare, its refusals and exit statuses. */
static void cli_rank(void **state)
{
    (void)state;
    run_result r = kvshard("--world_size=4 --rank=bogus");
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "comm_value: --rank takes auto, capacity or throughput, not "
                                  "'bogus'"));
    assert_string_equal(r.out, "");
    free(r.out);
    free(r.err);
    r = kvshard("--world_size=4 --memory_per_rank=20GiB --context_length=32768 "
                "--rank=throughput");
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "comm_input_missing: --rank=throughput needs an accelerator"));
    assert_string_equal(r.out, "");
    free(r.out);
    free(r.err);
    r = kvshard("--world_size=4 --memory_per_rank=20GiB --max_seqs=128 --context_length=32768 "
                "--weights_total=69321223296 --weights_experts=64424509440 "
                "--comm_accelerator=bi_v100 --rank=throughput --format=json");
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "\"rank_by\": \"throughput\", \"throughput\": 2161.83"));
    free(r.out);
    free(r.err);
}

/* help shows the defaults of the decode batch and the prompt length, which
 * the plan gives, and compare's --rank. */
static void help_defaults(void **state)
{
    (void)state;
    static const char *const commands[] = {"plan", "compare", "fit"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        char command[1024];
        snprintf(command, sizeof command, "'%s' help %s", KVSHARD_CLI, commands[i]);
        run_result r;
        r.status = tu_run(command, &r.out, &r.err);
        assert_int_equal(r.status, 0);
        assert_non_null(strstr(r.out, "--comm_batch                sequences, 1 to 16,777,216; "
                                      "default the plan's\n                              "
                                      "concurrency\n"));
        assert_non_null(strstr(r.out, "--comm_prompt_length        tokens, 1 to 1,073,741,824;\n"
                                      "                              default context_length\n"));
        assert_non_null(strstr(r.out, "--comm_link_latency         a decimal from 0"));
        assert_true((strstr(r.out, "--rank=HOW") != NULL) == (i > 0));
        free(r.out);
        free(r.err);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_priced),        cmocka_unit_test(seed_documents),
        cmocka_unit_test(full_layer_orders),  cmocka_unit_test(rank_refused),
        cmocka_unit_test(unpriced_unchanged), cmocka_unit_test(cli_rank),
        cmocka_unit_test(zero_latency),       cmocka_unit_test(help_defaults),
        cmocka_unit_test(capped_batch_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
