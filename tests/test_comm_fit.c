/* fit priced and ranked by the throughput estimate: DeepSeek-V3.2 on 16
 * GPUs of 80 GiB (H100), whose throughput ranking differs from its
 * capacity ranking, every printed figure worked out by hand from the
 * formulas of docs/comm.md; --rank and its refusals; a fit without comm
 * inputs unchanged. */
#include "test_util.h"

#include <kvshard/explore.h>
#include <kvshard/output.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DSV32_FIT                                                                                  \
    "--device_memory=80GiB", "--context_length=32768", "--weights_total=674030337216",             \
        "--weights_experts=654068416512", "--kv_cache_dtype=fp8"

/* The deployment of examples/models/deepseek_v3_2.json with `args`, fit to
 * 16 GPUs ranked as `rank_by` asks: the status, the fit into *out. */
static int fit_of(kvshard_fit **out, kvshard_error *err, kvshard_rank_by rank_by, size_t count,
                  const char *const *args)
{
    kvshard_deployment *dep = NULL;
    tu_assert_ok(tu_deployment_args(&dep, err, "models/deepseek_v3_2.json", count, args), err);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 16;
    fo.rank_by = rank_by;
    int rc = kvshard_deployment_fit(out, dep, &fo, err);
    kvshard_deployment_free(dep);
    return rc;
}

static const kvshard_fit_row *row_of(const kvshard_fit *f, uint32_t T, uint32_t P, uint32_t S,
                                     kvshard_ownership rule)
{
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++) {
        const kvshard_fit_row *r = kvshard_fit_row_at(f, i);
        if (r->tp_size == T && r->pp_size == P && r->layerwise_split_size == S &&
            (S == 1 || r->ownership == rule))
            return r;
    }
    fail_msg("no row T %u P %u S %u", T, P, S);
    return NULL;
}

/* BW 3.35 TB/s; h100 implies nvlink4: beta 450 GB/s, alpha 5 us, log2.
 * 61 DSA layers, 128 query heads, latent 512 + RoPE 64 (fp8 latent 656 B,
 * index key 132 B), index_topk 2,048, no producer layers; a = 2. */
static void dsv32_priced(void **state)
{
    (void)state;
    const char *args[] = {DSV32_FIT, "--comm_accelerator=h100"};
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(fit_of(&f, &err, KVSHARD_RANK_AUTO, 6, args), &err);
    /* auto: an accelerator, its implied link and a context length. */
    assert_int_equal(kvshard_fit_rank_by(f), KVSHARD_RANK_THROUGHPUT);

    /* T = 8, D = 2, S = 8 ordinal, the capacity winner: 127 sequences a
     * replica. H_l = 128 / 8 = 16, tau = 127. All-gather m = 127 x 16 x
     * 576 x 2 = 2,340,864, busiest port 7m = 16,386,048; output broadcast
     * 8 x 127 x 16 x 512 x 2 = 16,646,144. Per layer 33,032,192 B, 61
     * layers 2,014,963,712 B in 122 collectives; alpha(8) = 3 x 5 = 15 us:
     * 122 x 15 + 2,014,963,712 / 450e9 s = 1,830 + 4,477.70 = 6,307.70 us.
     * A sequence reads 61 x (2,048 x 656 + 32,768 x 132) = 345,800,704 B;
     * 127 of them 43,916,689,408 B; weights 43,374,516,120 B: base
     * 87,291,205,528 / 3.35e12 s = 26,057.08 us; step 32,364.77 us;
     * 127 / 32,364.77 us = 3,924.02 tokens/s, x 2 replicas 7,848.04. */
    const kvshard_fit_row *r = row_of(f, 8, 1, 8, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(r->rank, 7);
    assert_int_equal(r->seqs_per_replica, 127);
    assert_true(r->comm.given && r->comm.has_step && r->comm.has_gain);
    assert_int_equal(r->comm.batch, 127);
    assert_int_equal(r->comm.decode_collectives, 122);
    assert_int_equal(r->comm.decode_link_bytes, 2014963712u);
    tu_assert_near(r->comm.decode_comm_us, 1830.0 + 2014963712.0 / 450e3, 1e-6);
    tu_assert_near(r->comm.decode_comm_us, 6307.70, 0.005);
    tu_assert_near(r->comm.base_us, (43374516120.0 + 127.0 * 345800704.0) / 3.35e6, 1e-6);
    tu_assert_near(r->comm.base_us, 26057.08, 0.005);
    tu_assert_near(r->comm.step_us, 32364.77, 0.005);
    tu_assert_near(r->comm.throughput, 3924.02, 0.005);
    tu_assert_near(r->comm.throughput_total, 7848.04, 0.005);
    /* Its unsplit row: T = 8, D = 2, S = 1, 18 sequences a replica, each
     * reading the same 345,800,704 B: (43,374,516,120 + 18 x 345,800,704)
     * / 3.35e12 s = 14,805.65 us, 18 / 14,805.65 us = 1,215.75 tokens/s;
     * the split is worth 3,924.02 / 1,215.75 = 3.23x. */
    const kvshard_fit_row *u = row_of(f, 8, 1, 1, KVSHARD_OWNERSHIP_DEFAULT);
    assert_int_equal(u->seqs_per_replica, 18);
    tu_assert_near(u->comm.step_us, (43374516120.0 + 18.0 * 345800704.0) / 3.35e6, 1e-6);
    tu_assert_near(u->comm.step_us, 14805.65, 0.005);
    tu_assert_near(u->comm.throughput, 1215.75, 0.005);
    tu_assert_near(u->comm.throughput_gain, 1.0, 0.0);
    assert_true(r->comm.has_unsplit);
    tu_assert_near(r->comm.unsplit_throughput, u->comm.throughput, 0.0);
    tu_assert_near(r->comm.throughput_gain, 3.23, 0.005);
    /* A 32 K prompt under history_rows: 4 chunks, 49,152 rows a layer of
     * 656 + 132 B, 61 x 49,152 x 788 = 2,362,638,336 B in 61 x 3 x 2 = 366
     * collectives: 366 x 15 + 2,362,638,336 / 450e9 s = 10,740.31 us. */
    assert_int_equal(r->comm.prefill_collectives, 366);
    assert_int_equal(r->comm.prefill_link_bytes, 2362638336u);
    tu_assert_near(r->comm.prefill_comm_us, 10740.31, 0.005);

    /* Row 1: T = 2, D = 8, S = 2 ordinal, 26 sequences a replica. H_l =
     * 64, tau = 26: all-gather m = 26 x 64 x 576 x 2 = 1,916,928 (busiest
     * m), broadcast 2 x 26 x 64 x 512 x 2 = 3,407,872; 61 x 5,324,800 =
     * 324,812,800 B, alpha(2) = 5 us: 610 + 721.81 = 1,331.81 us. Weights
     * ceil(19,961,920,704 / 2) + ceil(654,068,416,512 / 16) = 9,980,960,352
     * + 40,879,276,032 = 50,860,236,384 B; reads 26 x 345,800,704 =
     * 8,990,818,304 B: base 59,851,054,688 / 3.35e12 s = 17,865.99 us, step
     * 19,197.79 us, 26 / 19,197.79 us = 1,354.32 a replica, 10,834.58 in
     * all. Unsplit row (14 a replica): (50,860,236,384 + 14 x 345,800,704)
     * / 3.35e12 s = 16,627.30 us, 841.99 tokens/s: 1.61x. */
    r = row_of(f, 2, 1, 2, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(r->rank, 1);
    assert_int_equal(r->dp_size, 8);
    assert_int_equal(r->seqs_per_replica, 26);
    assert_int_equal(r->comm.decode_link_bytes, 324812800u);
    tu_assert_near(r->comm.decode_comm_us, 1331.81, 0.005);
    tu_assert_near(r->comm.base_us, 59851054688.0 / 3.35e6, 1e-6);
    tu_assert_near(r->comm.step_us, 19197.79, 0.005);
    tu_assert_near(r->comm.throughput_total, 10834.58, 0.005);
    u = row_of(f, 2, 1, 1, KVSHARD_OWNERSHIP_DEFAULT);
    assert_int_equal(u->seqs_per_replica, 14);
    tu_assert_near(u->comm.step_us, 16627.30, 0.005);
    tu_assert_near(u->comm.throughput, 14.0 / (50860236384.0 + 14.0 * 345800704.0) * 3.35e12, 1e-6);
    tu_assert_near(r->comm.throughput_gain, 1.61, 0.005);

    /* Rank 4: T = 4, D = 4, S = 4 ordinal, 61 a replica. H_l = 32: m = 61
     * x 32 x 576 x 2 = 2,248,704 (busiest 3m = 6,746,112), broadcast 4 x
     * 61 x 32 x 512 x 2 = 7,995,392; 61 x 14,741,504 = 899,231,744 B,
     * alpha(4) = 10 us: 1,220 + 1,998.29 = 3,218.29 us. Weights
     * ceil(19,961,920,704 / 4) + 40,879,276,032 = 45,869,756,208 B; reads
     * 61 x 345,800,704 = 21,093,842,944 B: base 19,989.13 us, step
     * 23,207.43 us, 61 / 23,207.43 us x 4 = 10,513.88 tokens/s. */
    r = row_of(f, 4, 1, 4, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(r->rank, 4);
    assert_int_equal(r->comm.decode_link_bytes, 899231744u);
    tu_assert_near(r->comm.decode_comm_us, 3218.29, 0.005);
    tu_assert_near(r->comm.base_us, (45869756208.0 + 21093842944.0) / 3.35e6, 1e-6);
    tu_assert_near(r->comm.step_us, 23207.43, 0.005);
    tu_assert_near(r->comm.throughput_total, 10513.88, 0.005);
    tu_assert_near(r->comm.throughput_gain, 2.39, 0.005);

    /* Rank 10: T = 2, P = 2, D = 4, S = 2 ordinal, 60 a replica, stages of
     * 31 and 30 layers; b = 30 a stage. The first stage binds: H_l = 64,
     * m = 30 x 64 x 576 x 2 = 2,211,840, broadcast 2 x 30 x 64 x 512 x 2 =
     * 3,932,160; 31 x 6,144,000 = 190,464,000 B in 62 collectives: 310 +
     * 423.25 = 733.25 us; the second 30 layers 709.60 us; 1,442.85 us in
     * all. Its weights 46,621,719,426 B, reads 30 x 31 x (2,048 x 656 +
     * 32,768 x 132) = 5,272,043,520 B: base 15,490.68 us, step 16,223.93
     * us, TPOT 2 x 16,223.93 = 32,447.86 us, 60 / 32,447.86 us x 4 =
     * 7,396.48 tokens/s. */
    r = row_of(f, 2, 2, 2, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(r->rank, 10);
    tu_assert_near(r->comm.decode_comm_us, 1442.85, 0.005);
    tu_assert_near(r->comm.base_us, (46621719426.0 + 5272043520.0) / 3.35e6, 1e-6);
    tu_assert_near(r->comm.step_us, 16223.93, 0.005);
    tu_assert_near(r->comm.tpot_us, 32447.86, 0.005);
    tu_assert_near(r->comm.throughput_total, 7396.48, 0.005);
    tu_assert_near(r->comm.throughput_gain, 1.71, 0.005);
    /* global and contiguous price the same and keep their order. */
    assert_int_equal(row_of(f, 2, 1, 2, KVSHARD_OWNERSHIP_GLOBAL)->rank, 2);
    assert_int_equal(row_of(f, 2, 1, 2, KVSHARD_OWNERSHIP_CONTIGUOUS)->rank, 3);
    kvshard_fit_free(f);
}

/* By capacity the same fit keeps TOPOLOGY's order (T = 8, S = 8 first),
 * each row still priced; the ranks and every capacity figure are those of
 * the fit without comm inputs. */
static void dsv32_by_capacity(void **state)
{
    (void)state;
    const char *priced[] = {DSV32_FIT, "--comm_accelerator=h100"};
    const char *plain[] = {DSV32_FIT};
    kvshard_fit *f = NULL, *g = NULL;
    kvshard_error err;
    tu_assert_ok(fit_of(&f, &err, KVSHARD_RANK_CAPACITY, 6, priced), &err);
    tu_assert_ok(fit_of(&g, &err, KVSHARD_RANK_AUTO, 5, plain), &err);
    assert_int_equal(kvshard_fit_rank_by(f), KVSHARD_RANK_CAPACITY);
    assert_int_equal(kvshard_fit_rank_by(g), KVSHARD_RANK_CAPACITY);
    assert_int_equal(kvshard_fit_row_count(f), kvshard_fit_row_count(g));
    const kvshard_fit_row *first = kvshard_fit_row_at(f, 0);
    assert_int_equal(first->tp_size, 8);
    assert_int_equal(first->layerwise_split_size, 8);
    tu_assert_near(first->comm.throughput_total, 7848.04, 0.005);
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++) {
        const kvshard_fit_row *a = kvshard_fit_row_at(f, i), *b = kvshard_fit_row_at(g, i);
        assert_int_equal(a->tp_size, b->tp_size);
        assert_int_equal(a->layerwise_split_size, b->layerwise_split_size);
        assert_int_equal(a->seqs_total, b->seqs_total);
        assert_int_equal(a->tokens_total, b->tokens_total);
        assert_int_equal(a->budget, b->budget);
        assert_int_equal(a->warnings, b->warnings);
        assert_true(a->comm.given == a->fits);
        assert_false(b->comm.given);
    }
    /* Without comm inputs the JSON has no comm key at all. */
    char *json = NULL;
    assert_int_equal(kvshard_fit_write_json(g, tu_append, &json), KVSHARD_OK);
    assert_null(strstr(json, "\"comm\""));
    assert_null(strstr(json, "comm_inputs"));
    assert_null(strstr(json, "rank_by"));
    free(json);
    json = NULL;
    assert_int_equal(kvshard_fit_write_json(f, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\n  \"rank_by\": \"capacity\",\n  \"comm_inputs\": "
                                 "{\"decode_mechanism\": \"owner_attention\", "
                                 "\"prefill_mechanism\": \"history_rows\", \"owner_output\": "
                                 "\"broadcast\", \"link\": {\"name\": \"nvlink4\", \"bandwidth\": "
                                 "450000000000, \"latency_us\": 5, \"alpha_rule\": \"log2\"}, "
                                 "\"accelerator\": {\"name\": \"h100\", \"hbm_bandwidth\": "
                                 "3350000000000}, \"activation_bytes\": 2},"));
    assert_non_null(strstr(json, "\"rank_by\": \"capacity\", \"throughput_total\": 7848.0388"));
    free(json);
    kvshard_fit_free(f);
    kvshard_fit_free(g);
}

/* The text when ranked by throughput: the header line and the columns. */
static void dsv32_text(void **state)
{
    (void)state;
    const char *args[] = {DSV32_FIT, "--comm_accelerator=h100"};
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(fit_of(&f, &err, KVSHARD_RANK_THROUGHPUT, 6, args), &err);
    char *text = NULL;
    assert_int_equal(kvshard_fit_write_text(f, 10, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "\nranked by throughput (estimate: "));
    assert_non_null(strstr(text, "tokens          tok/s     comm/step  notes\n"));
    assert_non_null(strstr(text, "   1     2     1     8     2  ordinal "));
    assert_non_null(strstr(text, "7,028,608       10,835    1.33 ms\n"));
    assert_non_null(strstr(text, "8,358,688       7,848     6.31 ms\n"));
    free(text);
    kvshard_fit_free(f);
}

/* --rank=throughput needs an accelerator, a link and a context length. */
static void rank_throughput_refused(void **state)
{
    (void)state;
    kvshard_fit *f = NULL;
    kvshard_error err;
    const char *none[] = {DSV32_FIT};
    assert_int_equal(fit_of(&f, &err, KVSHARD_RANK_THROUGHPUT, 5, none), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "comm_input_missing: --rank=throughput needs an "
                                        "accelerator"));
    assert_null(f);
    const char *link_only[] = {DSV32_FIT, "--comm_link=nvlink4"};
    assert_int_equal(fit_of(&f, &err, KVSHARD_RANK_THROUGHPUT, 6, link_only), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "needs an accelerator"));
    /* A link alone prices the bytes, not the step: auto ranks by capacity. */
    tu_assert_ok(fit_of(&f, &err, KVSHARD_RANK_AUTO, 6, link_only), &err);
    assert_int_equal(kvshard_fit_rank_by(f), KVSHARD_RANK_CAPACITY);
    assert_true(kvshard_fit_row_at(f, 0)->comm.given);
    assert_false(kvshard_fit_row_at(f, 0)->comm.has_step);
    kvshard_fit_free(f);
}

/* The seed model on four 32 GiB cards with --comm_accelerator=bi_v100
 * (1.2 TB/s, pcie4x16: 24 GB/s, alpha(2) = 15 us): by throughput T = 2,
 * D = 2 leads, then T = 1, D = 4, then T = 4, S = 2. A sequence of 32,768
 * tokens reads its rank's KV and twice its GDN state, 30 x 536,576 x
 * (4 / T) bytes. */
static void seed_fit(void **state)
{
    (void)state;
    const char *args[] = {"--device_memory=32GiB", "--context_length=32768",
                          "--weights_total=69321223296", "--weights_experts=64424509440",
                          "--comm_accelerator=bi_v100"};
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(tu_deployment_args(&dep, &err, "models/qwen3_5_35b_a3b.json", 5, args), &err);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 4;
    kvshard_fit *f = NULL;
    tu_assert_ok(kvshard_deployment_fit(&f, dep, &fo, &err), &err);
    kvshard_deployment_free(dep);
    assert_int_equal(kvshard_fit_rank_by(f), KVSHARD_RANK_THROUGHPUT);
    /* T = 2, D = 2: 28 a replica, each reading 32,768 x 10,240 +
     * 2 x 32,194,560 = 399,933,440 B; with 18,554,484,288 B of weights
     * (18,554,484,288 + 28 x 399,933,440) / 1.2e12 s = 24,793.85 us:
     * 1,129.31 tokens/s a replica, 2,258.62 in all. */
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_true(r->tp_size == 2 && r->dp_size == 2 && r->layerwise_split_size == 1);
    assert_int_equal(r->seqs_total, 56);
    tu_assert_near(r->comm.step_us, (18554484288.0 + 28.0 * 399933440.0) / 1.2e6, 1e-6);
    tu_assert_near(r->comm.throughput_total, 2258.62, 0.005);
    /* T = 1, D = 4: 11 a replica, 671,088,640 + 128,778,240 = 799,866,880
     * B each, 21,002,841,216 B of weights: 24,834.48 us, 1,771.73 in all. */
    r = kvshard_fit_row_at(f, 1);
    assert_true(r->tp_size == 1 && r->dp_size == 4);
    assert_int_equal(r->seqs_total, 44);
    tu_assert_near(r->comm.step_us, (21002841216.0 + 11.0 * 799866880.0) / 1.2e6, 1e-6);
    tu_assert_near(r->comm.throughput_total, 1771.73, 0.005);
    /* T = 4, S = 2 ordinal, then contiguous: 54 sequences of 367,738,880 B
     * (the owner reads its one head), base (17,330,305,824 + 54 x
     * 367,738,880) / 1.2e12 s = 30,990.17 us; all-gather 54 x 4 x 256 x 2
     * = 110,592 B and broadcast 221,184 B a layer, 20 x 15 + 3,317,760 /
     * 24e9 s = 438.24 us; step 31,428.41 us, 1,718.19 tokens/s. Its
     * unsplit row (33 sequences): 24,554.74 us, 1,343.94: 1.28x. */
    r = kvshard_fit_row_at(f, 2);
    assert_true(r->tp_size == 4 && r->layerwise_split_size == 2);
    assert_int_equal(r->ownership, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(kvshard_fit_row_at(f, 3)->ownership, KVSHARD_OWNERSHIP_CONTIGUOUS);
    assert_int_equal(r->comm.decode_link_bytes, 3317760u);
    tu_assert_near(r->comm.decode_comm_us, 438.24, 1e-9);
    tu_assert_near(r->comm.throughput, 1718.19, 0.005);
    tu_assert_near(r->comm.unsplit_throughput, 1343.94, 0.005);
    tu_assert_near(r->comm.throughput_gain, 1.28, 0.005);
    /* T = 2, D = 2, S = 2 (R = 1 at T = 2: the owner reads both heads)
     * decodes slower than its unsplit row. */
    r = kvshard_fit_row_at(f, 4);
    assert_true(r->tp_size == 2 && r->layerwise_split_size == 2);
    assert_true(r->comm.throughput < r->comm.unsplit_throughput);
    assert_true(r->warnings & (1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));
    assert_true(r->comm.warnings & (1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT));
    /* The defaulted mechanisms of a GQA model are assumed, as under plan. */
    assert_true(r->warnings & (1u << KVSHARD_WARN_COMM_MECHANISM_ASSUMED));
    kvshard_fit_free(f);
}

/* fit checks the comm inputs as plan does. */
static void fit_comm_refusals(void **state)
{
    (void)state;
    kvshard_fit *f = NULL;
    kvshard_error err;
    const char *custom[] = {DSV32_FIT, "--comm_link=custom"};
    assert_int_equal(fit_of(&f, &err, KVSHARD_RANK_AUTO, 6, custom), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "comm_input_missing: a custom link needs both"));
    const char *hit[] = {DSV32_FIT, "--comm_prefix_hit=32768"};
    assert_int_equal(fit_of(&f, &err, KVSHARD_RANK_AUTO, 6, hit), KVSHARD_ECOMM);
    assert_non_null(strstr(err.message, "comm_prefix_hit: 32768 cached tokens"));
    assert_null(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dsv32_priced),
        cmocka_unit_test(dsv32_by_capacity),
        cmocka_unit_test(dsv32_text),
        cmocka_unit_test(rank_throughput_refused),
        cmocka_unit_test(seed_fit),
        cmocka_unit_test(fit_comm_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
