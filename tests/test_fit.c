/* Budgets from the device and kvshard fit: the worked fits of docs/fit.md
 * (Qwen3.5-35B-A3B on four 32 GiB cards, DeepSeek-V3.2 on sixteen 80 GiB
 * cards, Nemotron-3-Nano on two 24 GiB cards), the tiny_hybrid plan read
 * from its safetensors headers, and the errors. Every figure is worked by
 * hand in its comment; GiB = 2^30. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture_files.h"

#define GIB (UINT64_C(1) << 30)

/* Qwen3.5-35B-A3B's text model in bf16 without vision and MTP weights:
 * 256 experts x 40 layers = 64,424,509,440 expert bytes of 69,321,223,296,
 * the rest 4,896,713,856. A 32 GiB card: usable floor(34,359,738,368 x 0.9)
 * = 30,923,764,531, reserve max(1 GiB, 34,359,738,368 / 20) = 1,717,986,918. */
static kvshard_options qwen_options(void)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 32 * GIB;
    o.context_length = 32768;
    o.weights_total = UINT64_C(69321223296);
    o.weights_experts = UINT64_C(64424509440);
    return o;
}

static kvshard_fit *fit_of(const kvshard_model *m, const kvshard_options *o, uint32_t gpus,
                           uint32_t max_pp)
{
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = gpus;
    fo.max_pp_size = max_pp;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, o, &fo, NULL, &err), &err);
    return f;
}

static size_t fitting(const kvshard_fit *f)
{
    size_t n = 0;
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++)
        n += kvshard_fit_row_at(f, i)->fits;
    return n;
}

typedef struct want {
    uint32_t rank, tp, pp, dp, split;
    kvshard_ownership rule;
    uint64_t weights, budget, per_replica, seqs, tokens;
} want;

static void assert_row(const kvshard_fit *f, const want *w)
{
    const kvshard_fit_row *r = kvshard_fit_row_at(f, w->rank - 1);
    assert_non_null(r);
    if (r->tp_size != w->tp || r->pp_size != w->pp || r->dp_size != w->dp ||
        r->layerwise_split_size != w->split || r->seqs_total != w->seqs)
        print_error("row %u is T %u P %u D %u S %u with %llu sequences\n", w->rank, r->tp_size,
                    r->pp_size, r->dp_size, r->layerwise_split_size,
                    (unsigned long long)r->seqs_total);
    assert_int_equal(r->rank, w->rank);
    assert_true(r->fits);
    assert_int_equal(r->tp_size, w->tp);
    assert_int_equal(r->pp_size, w->pp);
    assert_int_equal(r->dp_size, w->dp);
    assert_int_equal(r->layerwise_split_size, w->split);
    assert_int_equal(r->ownership, w->rule);
    if (w->weights)
        assert_int_equal(r->weights_per_rank, w->weights);
    if (w->budget)
        assert_int_equal(r->budget, w->budget);
    if (w->per_replica)
        assert_int_equal(r->seqs_per_replica, w->per_replica);
    assert_int_equal(r->seqs_total, w->seqs);
    assert_int_equal(r->tokens_total, w->tokens);
}

static void assert_flags(const kvshard_fit *f, const char *engine, bool env, const char *expected)
{
    char buf[512];
    int n = kvshard_fit_flags(buf, sizeof buf, f, engine, env);
    if (!expected) {
        assert_int_equal(n, KVSHARD_EUNSUPPORTED);
        return;
    }
    if (n < 0 || strcmp(buf, expected) != 0)
        print_error("%s flags: %s\n", engine, n < 0 ? "(none)" : buf);
    assert_int_equal(n, (int)strlen(expected));
    assert_string_equal(buf, expected);
}

/* Four GPUs are one node: P = 1, and (T, P) = (1, 2), (1, 4), (2, 2) are
 * left out. Row 1 by hand: T = 2, D = 2; dense weights over T = 2, experts
 * over X = D x T = 4: 2,448,356,928 + 16,106,127,360 = 18,554,484,288;
 * budget 30,923,764,531 - 18,554,484,288 - 1,717,986,918 = 10,651,293,325.
 * One KV head a rank: 10,240 bytes a token, 163,840 a block; 30 GDN
 * layers, 32,194,560 bytes a sequence; balanced floor(10,651,293,325 /
 * (32,194,560 + 2,048 x 163,840)) = 28 a replica; at 28 sequences
 * floor((10,651,293,325 - 901,447,680) / 163,840) = 59,508 blocks, x 16 x 2
 * replicas = 1,904,256 tokens. */
static void test_qwen_four_cards(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    kvshard_fit *f = fit_of(m, &o, 4, 0);
    assert_int_equal(kvshard_fit_row_count(f), 12);
    assert_int_equal(fitting(f), 12);
    assert_int_equal(kvshard_fit_limited_layouts(f), 3);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 0);
    const kvshard_ownership none = KVSHARD_OWNERSHIP_DEFAULT, ord = KVSHARD_OWNERSHIP_ORDINAL;
    const want rows[] = {
        {1, 2, 1, 2, 1, none, 18554484288u, 10651293325u, 28, 56, 1904256},
        {2, 4, 1, 1, 2, ord, 17330305824u, 11875471789u, 54, 54, 1791376},
        {4, 2, 1, 2, 2, ord, 18554484288u, 10651293325u, 24, 48, 1607840},
        {6, 1, 1, 4, 1, none, 21002841216u, 8202936397u, 11, 44, 1463744},
        {7, 4, 1, 1, 4, ord, 17330305824u, 11875471789u, 41, 41, 1369072},
        {9, 4, 1, 1, 1, none, 17330305824u, 11875471789u, 33, 33, 1107824},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_row(f, &rows[i]);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->num_blocks, 59508);
    assert_int_equal(r->max_seqs, 28);
    assert_int_equal(r->pp_partition[0], 40);
    assert_flags(f, "kvshard", false, "--world_size=4 --dp_size=2 --max_seqs=28");
    /* The engines' lines are their own fits of T = 2, D = 2 (vLLM 0.28.0
     * at 0.92: 1,047 usable blocks over 38 a request, 27; SGLang 0.5.21 at
     * 0.9: 19 a worker, 179 state slots a worker), not kvshard's 28. */
    assert_flags(f, "vllm", false,
                 "--tensor-parallel-size=2 --data-parallel-size=2 --gpu-memory-utilization=0.92 "
                 "--max-model-len=32768 --max-num-seqs=27");
    assert_flags(f, "sglang", false,
                 "--tp-size=4 --dp-size=2 --enable-dp-attention --mem-fraction-static=0.9 "
                 "--context-length=32768 --max-running-requests=38 --max-mamba-cache-size=358");
    assert_flags(f, "vllm", true, "");
    char buf[16];
    assert_int_equal(kvshard_fit_flags(buf, sizeof buf, f, "tgi", false), KVSHARD_EUNKNOWNKEY);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* Stages inside the node too: 18 rows fit, two stages of TP 2 first.
 * Stage 0 = layers 0-19 (5 full, 15 GDN): at T = 2 one KV head a rank,
 * 5,120 bytes a token, 81,920 a block, 16,097,280 bytes of state a
 * sequence; weights 2,448,356,928 / 2 ... = 17,330,305,824, budget
 * 11,875,471,789; balanced floor(11,875,471,789 / (16,097,280 + 2,048 x
 * 81,920)) = 64; at 64: floor((11,875,471,789 - 1,030,225,920) / 81,920) =
 * 132,388 blocks = 2,118,208 tokens. */
static void test_qwen_stages_in_the_node(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    kvshard_fit *f = fit_of(m, &o, 4, 4);
    assert_int_equal(fitting(f), 18);
    assert_int_equal(kvshard_fit_limited_layouts(f), 0);
    const kvshard_ownership none = KVSHARD_OWNERSHIP_DEFAULT, ord = KVSHARD_OWNERSHIP_ORDINAL;
    const want rows[] = {
        {1, 2, 2, 1, 1, none, 17330305824u, 11875471789u, 64, 64, 2118208},
        {2, 2, 1, 2, 1, none, 0, 0, 28, 56, 1904256},
        {3, 1, 2, 2, 1, none, 0, 0, 28, 56, 1904256},
        {4, 1, 4, 1, 1, none, 0, 0, 54, 54, 1800800},
        {5, 4, 1, 1, 2, ord, 0, 0, 54, 54, 1791376},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_row(f, &rows[i]);
    assert_int_equal(kvshard_fit_row_at(f, 0)->num_blocks, 132388);
    assert_flags(f, "kvshard", false, "--world_size=4 --pp_size=2 --pp_partition=20,20 --max_seqs=64");
    /* The vllm profile fills each stage's non_kv_memory with that stage's
     * weights and the reserve: 17,330,305,824 + 1,717,986,918, so B =
     * 31,610,959,299 - 19,048,292,742 = 12,562,666,557 on either stage. A
     * stage's 5 full and 15 GDN layers put 5 in each of the model's 4
     * groups: a block is 5 pages of 1,056 x 1,024 = 5,406,720 bytes,
     * floor(B / 5,406,720) = 2,323 blocks; a request takes ceil(32,768 /
     * 1,056) + 3 x 2 = 38, so floor(2,322 / 38) = 61 sequences. SGLang
     * covers no stages with state layers: no line. */
    assert_flags(f, "vllm", false,
                 "--tensor-parallel-size=2 --pipeline-parallel-size=2 "
                 "--gpu-memory-utilization=0.92 --max-model-len=32768 --max-num-seqs=61");
    assert_flags(f, "vllm", true, "VLLM_PP_LAYER_PARTITION=20,20");
    assert_flags(f, "sglang", false, NULL);
    kvshard_fit_free(f);

    /* Without a context length (max_seqs 256), by tokens: T = 4, S = 2
     * ordinal first with 78,883 blocks = 1,262,128 tokens, then its
     * contiguous twin, then S = 4 (946,592), ...; T = 1, D = 4 cannot
     * reserve 256 sequences of state (no memory for one block). */
    o.context_length = 0;
    f = fit_of(m, &o, 4, 0);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->tp_size, 4);
    assert_int_equal(r->layerwise_split_size, 2);
    assert_int_equal(r->ownership, KVSHARD_OWNERSHIP_ORDINAL);
    assert_int_equal(r->num_blocks, 78883);
    assert_int_equal(r->tokens_total, 1262128);
    assert_false(r->has_seqs);
    assert_int_equal(kvshard_fit_row_at(f, 2)->tokens_total, 946592);
    size_t last = kvshard_fit_row_count(f) - 1;
    r = kvshard_fit_row_at(f, last);
    assert_false(r->fits);
    assert_int_equal(r->reason, KVSHARD_ENOBLOCK);
    assert_int_equal(r->tp_size, 1);
    assert_int_equal(r->dp_size, 4);
    kvshard_fit_free(f);
    o.max_seqs = 256;
    f = fit_of(m, &o, 4, 4);
    r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->tp_size, 2);
    assert_int_equal(r->pp_size, 2);
    assert_int_equal(r->num_blocks, 94660);
    assert_int_equal(r->tokens_total, 1514560);
    assert_int_equal(kvshard_fit_row_at(f, 1)->tokens_total, 1306848);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* DeepSeek-V3.2, fp8, on sixteen 80 GiB cards (two nodes: T <= 8, P <= 2,
 * seven (T, P) left out). Row 1: T = 8, D = 2, split 8: weights
 * ceil(19,961,920,704 / 8) + ceil(654,068,416,512 / 16) = 43,374,516,120,
 * budget 77,309,411,328 - 43,374,516,120 - 4,294,967,296 = 29,639,927,912;
 * the worst rank keeps 8 of 61 layers and one scratch: 9 x 788 = 7,092
 * bytes a token, 113,472 a block: balanced floor(29,639,927,912 / (2,048 x
 * 113,472)) = 127 a replica; 261,209 blocks x 16 x 2 = 8,358,688 tokens. */
static void test_deepseek_sixteen_cards(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.context_length = 32768;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.weights_total = UINT64_C(674030337216);
    o.weights_experts = UINT64_C(654068416512);
    kvshard_fit *f = fit_of(m, &o, 16, 0);
    assert_int_equal(kvshard_fit_row_count(f), 44);
    assert_int_equal(fitting(f), 44);
    assert_int_equal(kvshard_fit_limited_layouts(f), 7);
    const kvshard_ownership none = KVSHARD_OWNERSHIP_DEFAULT, ord = KVSHARD_OWNERSHIP_ORDINAL;
    const want rows[] = {
        {1, 8, 1, 2, 8, ord, 43374516120u, 29639927912u, 127, 254, 8358688},
        {2, 8, 1, 2, 8, KVSHARD_OWNERSHIP_GLOBAL, 0, 0, 127, 254, 8358688},
        {3, 8, 1, 2, 8, KVSHARD_OWNERSHIP_CONTIGUOUS, 0, 0, 127, 254, 8358688},
        {4, 4, 2, 2, 4, ord, 44085573763u, 28928870269u, 124, 248, 8158144},
        {7, 4, 1, 4, 4, ord, 45869756208u, 27144687824u, 61, 244, 8105280},
        {10, 2, 2, 4, 2, ord, 46621719426u, 26392724606u, 60, 240, 7880768},
        {19, 1, 2, 8, 1, none, 51694010752u, 21320433280u, 26, 208, 6982272},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_row(f, &rows[i]);
    assert_int_equal(kvshard_fit_row_at(f, 0)->num_blocks, 261209);
    assert_flags(f, "kvshard", false,
                 "--world_size=16 --dp_size=2 --enable_layerwise_split=true "
                 "--layerwise_split_size=8 --ownership=ordinal --max_seqs=127");
    assert_flags(f, "vllm", false, NULL);
    assert_flags(f, "sglang", false, NULL);
    assert_flags(f, "sglang", true, NULL);
    kvshard_fit_free(f);

    /* Pinned to one stage: 22 rows, T = 8 S = 8 then T = 4, D = 4, S = 4. */
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 16;
    fo.pp_size = 1;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    assert_int_equal(kvshard_fit_row_count(f), 22);
    assert_int_equal(kvshard_fit_row_at(f, 0)->seqs_total, 254);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 3);
    assert_int_equal(r->tp_size, 4);
    assert_int_equal(r->seqs_total, 244);
    kvshard_fit_free(f);

    /* Stages inside nodes too (62 rows): sixteen stages of T = 1 keep one
     * latent per replica, 4 x 788 = 3,152 bytes a token on the poorest
     * stage: 571,377 blocks, balanced floor(28,815,733,394 / (2,048 x
     * 50,432)) = 278; then T = 1, P = 8, D = 2 (266), then the row above. */
    f = fit_of(m, &o, 16, 16);
    assert_int_equal(kvshard_fit_row_count(f), 62);
    const want deep = {1, 1, 16, 1, 1, none, 44198710638u, 28815733394u, 278, 278, 9142032};
    assert_row(f, &deep);
    r = kvshard_fit_row_at(f, 1);
    assert_int_equal(r->pp_size, 8);
    assert_int_equal(r->seqs_total, 266);
    assert_int_equal(kvshard_fit_row_at(f, 0)->num_blocks, 571377);
    assert_int_equal(kvshard_fit_row_at(f, 2)->seqs_total, 254);
    kvshard_fit_free(f);

    /* T = 16 too once max_tp_size allows it: 75 rows; T = 16, S = 16 runs 239. */
    fo = (kvshard_fit_options)KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 16;
    fo.max_pp_size = 16;
    fo.max_tp_size = 16;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    assert_int_equal(kvshard_fit_row_count(f), 75);
    bool seen = false;
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++) {
        r = kvshard_fit_row_at(f, i);
        if (r->tp_size == 16 && r->layerwise_split_size == 16 &&
            r->ownership == KVSHARD_OWNERSHIP_ORDINAL) {
            assert_int_equal(r->seqs_total, 239);
            seen = true;
        }
    }
    assert_true(seen);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* Nemotron-3-Nano on two 24 GiB cards: usable floor(25,769,803,776 x 0.9)
 * = 23,192,823,398, reserve 1,288,490,188. In bf16 no layout fits: the
 * closest, T = 2, keeps 31,577,947,648 bytes of weights a rank and leaves
 * -9,673,614,438. In fp8 experts: T = 2 runs 40 sequences, 1,312,528
 * tokens; the split costs (31); T = 1, D = 2 runs 11 a replica, 22. */
static void test_nemotron_two_cards(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_3_nano_30b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 24 * GIB;
    o.context_length = 32768;
    o.weights_total = UINT64_C(63155895296);
    o.weights_experts = UINT64_C(58749616128);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    kvshard_fit *f = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EDOESNOTFIT);
    assert_null(f);
    assert_non_null(strstr(err.message, "the closest, T = 2, P = 1, D = 1, leaves its poorest "
                                        "stage -9673614438 bytes"));
    assert_non_null(strstr(err.message, "23192823398 usable bytes, less activation_reserve "
                                        "1288490188"));
    fo.max_pp_size = 2;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EDOESNOTFIT);
    assert_non_null(strstr(err.message, "the closest, T = 1, P = 2, D = 1"));

    o.weights_total = UINT64_C(33781110784);
    o.weights_experts = UINT64_C(29374831616);
    f = fit_of(m, &o, 2, 0);
    const kvshard_ownership none = KVSHARD_OWNERSHIP_DEFAULT, ord = KVSHARD_OWNERSHIP_ORDINAL;
    const want rows[] = {
        {1, 2, 1, 1, 1, none, 16890555392u, 5013777818u, 40, 40, 1312528},
        {2, 2, 1, 1, 2, ord, 16890555392u, 5013777818u, 31, 31, 1038320},
        {5, 1, 1, 2, 1, none, 19093694976u, 2810638234u, 11, 22, 739168},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        assert_row(f, &rows[i]);
    assert_int_equal(kvshard_fit_limited_layouts(f), 1);
    kvshard_fit_free(f);
    f = fit_of(m, &o, 2, 2);
    const want second = {2, 1, 2, 1, 1, none, 0, 0, 39, 39, 1306976};
    assert_row(f, &second);
    kvshard_fit_free(f);

    /* No context length: 256 sequences of state leave no block anywhere;
     * at 32 sequences T = 2 holds 86,028 blocks. */
    o.context_length = 0;
    fo = (kvshard_fit_options)KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_ENOBLOCK);
    assert_non_null(strstr(err.message, "max_seqs 256"));
    o.max_seqs = 32;
    f = fit_of(m, &o, 2, 0);
    assert_int_equal(kvshard_fit_row_at(f, 0)->num_blocks, 86028);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* A plan with the same device inputs is fit's row 1 again. */
static void test_plan_from_the_device(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    o.world_size = 4;
    o.dp_size = 2;
    o.max_seqs = 28;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_rank_memory r = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&r, p, 1), KVSHARD_OK);
    assert_true(r.has_budget);
    assert_true(r.has_device);
    assert_int_equal(r.budget, 10651293325u);
    assert_int_equal(r.weights_bytes, 18554484288u);
    assert_int_equal(r.activation_reserve, 1717986918u);
    assert_int_equal(tu_figure(p, "num_blocks"), 59508);
    assert_int_equal(tu_figure(p, "budget"), 10651293325u);
    assert_false(tu_has_figure(p, "memory_per_rank"));
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"device\": {\"device_memory\": 34359738368, "
                                 "\"memory_utilization\": 0.9, \"usable\": 30923764531, "
                                 "\"activation_reserve\": 1717986918,\n             \"weights\": "
                                 "{\"source\": \"weights_total\", \"total_bytes\": 69321223296, "
                                 "\"expert_bytes\": 64424509440, \"draft_bytes\": null"));
    free(json);
    kvshard_plan_free(p);

    /* memory_per_rank wins, and says so. */
    o.memory_per_rank = 8 * GIB;
    p = tu_plan(m, &o);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_DEVICE_MEMORY_IGNORED));
    assert_int_equal(tu_figure(p, "memory_per_rank"), 8 * GIB);
    assert_int_equal(kvshard_plan_rank_memory(&r, p, 0), KVSHARD_OK);
    assert_false(r.has_device);
    assert_int_equal(r.budget, 8 * GIB);
    kvshard_plan_free(p);

    /* weights_per_rank, one a stage, and an exact utilization: 2/5 of
     * 34,359,738,368 is 13,743,895,347.2, floored. */
    const uint64_t per_stage[2] = {9 * GIB, 8 * GIB};
    o = qwen_options();
    o.weights_total = 0; /* one source of the weights: this one */
    o.weights_experts = 0;
    o.world_size = 4;
    o.pp_size = 2;
    o.max_seqs = 8;
    o.memory_utilization = 0.4;
    o.activation_reserve = 0;
    o.weights_per_rank = per_stage;
    o.weights_per_rank_count = 2;
    p = tu_plan(m, &o);
    assert_int_equal(kvshard_plan_rank_memory(&r, p, 0), KVSHARD_OK);
    assert_int_equal(r.budget, UINT64_C(13743895347) - 9 * GIB);
    assert_int_equal(kvshard_plan_rank_memory(&r, p, 2), KVSHARD_OK);
    assert_int_equal(r.budget, UINT64_C(13743895347) - 8 * GIB);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* tiny_hybrid's safetensors headers on 4 ranks in two stages, 1 MiB a card,
 * all of it usable, no reserve, 4 sequences: stage 0 (layers 0-1, GDN only)
 * holds 31,928 bytes of weights, budget 1,016,648, no KV, 1,600 bytes of
 * state a sequence; stage 1 (layers 2-3) 28,808, budget 1,019,768, 32 bytes
 * a token (512 a block), 800 of state: floor((1,019,768 - 3,200) / 512) =
 * 1,985 blocks, set by stage 1. One tensor is classed unknown. */
static void test_tiny_hybrid_plan(void **state)
{
    (void)state;
    const char *dirs[] = {KVSHARD_TEST_BUILD_DATA "/tiny_hybrid",
                          KVSHARD_TEST_BUILD_DATA "/tiny_hybrid_cut"};
    uint64_t digest = 0;
    for (size_t d = 0; d < 2; d++) {
        kvshard_model *m = NULL;
        kvshard_error err;
        tu_assert_ok(kvshard_model_load_file(&m, dirs[d], NULL, &err), &err);
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        o.world_size = 4;
        o.pp_size = 2;
        o.device_memory = UINT64_C(1) << 20;
        o.memory_utilization = 1.0;
        o.activation_reserve = 0;
        o.max_seqs = 4;
        kvshard_plan *p = tu_plan(m, &o);
        kvshard_rank_memory r = KVSHARD_RANK_MEMORY_INIT;
        assert_int_equal(kvshard_plan_rank_memory(&r, p, 0), KVSHARD_OK);
        assert_int_equal(r.weights_bytes, 31928);
        assert_int_equal(r.budget, 1016648);
        assert_int_equal(r.bytes_per_block, 0);
        assert_int_equal(r.state_bytes_per_seq, 1600);
        assert_int_equal(kvshard_plan_rank_memory(&r, p, 2), KVSHARD_OK);
        assert_int_equal(r.weights_bytes, 28808);
        assert_int_equal(r.budget, 1019768);
        assert_int_equal(r.kv_bytes_per_token, 32);
        assert_int_equal(r.state_bytes_per_seq, 800);
        assert_int_equal(r.num_blocks, 1985);
        assert_int_equal(tu_figure(p, "num_blocks"), 1985);
        assert_int_equal(tu_figure(p, "binding_stage"), 1);
        assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_STAGE_WITHOUT_KV));
        assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_WEIGHTS_UNKNOWN_TENSORS));
        char *json = tu_plan_json(p);
        assert_non_null(strstr(json, "\"weights\": {\"source\": \"safetensors\", \"total_bytes\": "
                                     "142124, \"expert_bytes\": 61440, \"draft_bytes\": 22592, "
                                     "\"tensors\": 126, \"unknown_tensors\": 1, "
                                     "\"unknown_bytes\": 16, \"first_unknown\": "
                                     "\"model.layers.3.self_attn.rotary_emb.inv_freq\", "
                                     "\"index_total_size\": 142124}"));
        free(json);
        /* Headers alone give the same plan as whole shards. */
        if (d == 0)
            digest = kvshard_plan_digest(p);
        else
            assert_true(kvshard_plan_digest(p) == digest);
        kvshard_plan_free(p);

        /* T = 4 with experts placed whole and one speculative token: the
         * draft tensors come in on the one stage: 38,058 bytes a rank. */
        o.pp_size = 1;
        o.expert_parallel = true;
        o.num_speculative_tokens = 1;
        p = tu_plan(m, &o);
        assert_int_equal(kvshard_plan_rank_memory(&r, p, 3), KVSHARD_OK);
        assert_int_equal(r.weights_bytes, 38058);
        kvshard_plan_free(p);
        kvshard_model_free(m);
    }
}

/* Sixteen replicas of a row's tokens that pass 2^64 - 1 are refused, not
 * wrapped into a smaller figure the ranking would trust. One layer, one
 * KV head of dim 1, fp8 (1 byte and a 4-byte scale, for K and for V: 10 B
 * a token, 160 B a block of 16) on 16 GPUs of 2^64 - 1 bytes, 1 byte of
 * weights: usable floor((2^64 - 1) x 0.9) = 16602069666338596453, reserve
 * floor((2^64 - 1) / 20) = 922337203685477580, budget
 * 16602069666338596453 - 922337203685477580 - 1 = 15679732462653118872,
 * floor(/ 160) = 97998327891581992 blocks, x 16 = 1567973246265311872
 * tokens a replica; T = 1, D = 16: x 16 = 25087571940244989952 > 2^64 - 1. */
static void test_totals_past_64_bits(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("{num_hidden_layers: 1, num_attention_heads: 1, "
                                          "num_key_value_heads: 1, head_dim: 1}");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = UINT64_MAX;
    o.weights_total = 1;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 16;
    kvshard_fit *f = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EOVERFLOW);
    assert_string_equal(err.message, "T = 1, P = 1, D = 16: 1567973246265311872 tokens (0 "
                                     "sequences) a replica times 16 replicas pass "
                                     "18446744073709551615 (2^64 - 1)");
    assert_null(f);
    /* Four replicas hold 6271892985061247488 tokens: the figure, exact. */
    fo.gpus = 4;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    const kvshard_fit_row *row = kvshard_fit_row_at(f, 0);
    assert_int_equal(row->dp_size, 4);
    assert_true(row->tokens_per_replica == UINT64_C(1567973246265311872));
    assert_true(row->tokens_total == UINT64_C(6271892985061247488));
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

static void test_errors(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    kvshard_fit *f = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EPARALLEL);
    assert_non_null(strstr(err.message, "gpus is 0"));
    fo.gpus = 4;
    o.device_memory = 0;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "kvshard fit needs device_memory"));
    o = qwen_options();
    const uint64_t one[1] = {GIB};
    o.weights_per_rank = one;
    o.weights_per_rank_count = 1;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EWEIGHTS);
    assert_non_null(strstr(err.message, "kvshard fit works out each layout's weights"));
    o = qwen_options();
    fo.pp_size = 4; /* within max_pp_size 4, but D = 4 / (T x 4) needs T = 1 ... */
    fo.dp_size = 2; /* ... and D = 2 leaves none */
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EFITLIMITS);
    assert_non_null(strstr(err.message, "fit_limits: no layout of 4 GPUs within gpus_per_node 8, "
                                        "max_tp_size 8 and max_pp_size 4 and the pins pp_size 4, "
                                        "dp_size 2"));
    assert_null(f);
    /* Under an engine profile device_memory is its device_memory_total and
     * the weights fill the figure it takes from a running engine: xLLM's
     * free memory after the weights load, 34,359,738,368 - 17,330,305,824
     * (T = 4, reserve 0) = 17,029,432,544; its budget less the device's
     * unused share, floor(34,359,738,368 x 0.2) = 6,871,947,673:
     * 10,157,484,871. Given with another value, the two differ. */
    o = qwen_options();
    o.world_size = 4;
    o.context_length = 0;
    o.engine = KVSHARD_ENGINE_XLLM;
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "budget"), 10157484871u);
    kvshard_plan_free(p);
    kvshard_settings *set = tu_settings("device_memory_total", "16GiB", NULL);
    o.settings = set;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDUPKEY);
    assert_non_null(strstr(err.message, "xllm profile: device_memory 34359738368 and "
                                        "device_memory_total 17179869184 differ"));
    kvshard_settings_free(set);
    kvshard_model_free(m);

    /* A layout the model refuses is listed, not fatal: 6 GPUs of one node
     * give T = 3 and T = 6, which 2 KV heads do not divide. */
    m = tu_load_example_model("llama3_1_8b.json"); /* 8 KV heads, 32 query heads */
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.weights_total = 16 * GIB;
    o.max_seqs = 16;
    fo = (kvshard_fit_options)KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 6;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 2);
    uint32_t T, P, D;
    int code;
    assert_int_equal(kvshard_fit_not_admitted(&T, &P, &D, &code, f, 0), KVSHARD_OK);
    assert_int_equal(T, 3);
    assert_int_equal(P, 1);
    assert_int_equal(D, 2);
    assert_int_equal(code, KVSHARD_EKVHEADS);
    assert_string_equal(kvshard_status_name(code), "kv_heads");
    assert_int_equal(kvshard_fit_not_admitted(&T, &P, &D, &code, f, 1), KVSHARD_OK);
    assert_int_equal(T, 6);
    assert_int_equal(kvshard_fit_not_admitted(&T, &P, &D, &code, f, 2), KVSHARD_EINVAL);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* ---- a model directory written by the test ------------------------------------------ */

typedef struct model_dir {
    char path[512];
} model_dir;

static void dir_file(const model_dir *d, const char *name, const void *data, size_t len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", d->path, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* A shard cut after its header: N in 8 bytes, then the JSON. */
static void dir_shard(const model_dir *d, const char *name, const char *json)
{
    size_t len = strlen(json);
    unsigned char *buf = malloc(8 + len);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(buf + 8, json, len);
    dir_file(d, name, buf, 8 + len);
    free(buf);
}

/* A directory of a small dense GQA model's config.json (4 layers, 8 query
 * heads, 2 KV heads of 64) and nothing else yet. */
static void dir_open(model_dir *d)
{
    snprintf(d->path, sizeof d->path, "%s/model_XXXXXX", KVSHARD_TEST_BUILD_DATA);
    assert_non_null(mkdtemp(d->path));
    static const char config[] = "{\"model_type\": \"tiny_dense\", \"num_hidden_layers\": 4, "
                                 "\"num_attention_heads\": 8, \"num_key_value_heads\": 2, "
                                 "\"head_dim\": 64}";
    dir_file(d, "config.json", config, strlen(config));
}

static void dir_close(model_dir *d)
{
    char command[1024];
    snprintf(command, sizeof command, "rm -rf '%s'", d->path);
    assert_int_equal(system(command), 0);
}

/* An embedding of 2^63 - 8 one-byte elements is 9,223,372,036,854,775,800
 * bytes, a size whose bit count passes 2^64: the plan refuses it as
 * does_not_fit, not as an overflow. At T = 1 the rank holds all of it; an
 * 80 GiB card (85,899,345,920 bytes) leaves floor(x 0.9) = 77,309,411,328
 * usable, the reserve is 85,899,345,920 / 20 = 4,294,967,296, and the
 * shortfall 9,223,372,036,854,775,800 + 4,294,967,296 - 77,309,411,328 =
 * 9,223,371,963,840,331,768. */
static void test_tensor_of_2_63_bytes(void **state)
{
    (void)state;
    model_dir d;
    dir_open(&d);
    dir_shard(&d, "model.safetensors",
              "{\"model.embed_tokens.weight\": {\"dtype\": \"U8\", \"shape\": "
              "[9223372036854775800], \"data_offsets\": [0, 9223372036854775800]}}");
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_load_file(&m, d.path, NULL, &err), &err);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    kvshard_plan *p = NULL;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDOESNOTFIT);
    assert_null(p);
    assert_string_equal(err.message,
                        "does_not_fit: the weights (9223372036854775800 bytes a rank) and "
                        "activation_reserve 4294967296 bytes take all of device_memory "
                        "85899345920 x memory_utilization 0.9 = 77309411328 usable bytes: "
                        "9223371963840331768 bytes short");
    kvshard_model_free(m);
    dir_close(&d);
}

/* Headers that hold no tensor are no checkpoint: plan and fit refuse them
 * as weights, where 0 bytes of weights would make the whole usable device
 * (77,309,411,328 bytes of 80 GiB) every rank's budget. */
static void test_checkpoint_without_tensors(void **state)
{
    (void)state;
    model_dir d;
    dir_open(&d);
    dir_shard(&d, "model.safetensors", "{\"__metadata__\": {\"format\": \"pt\"}}");
    char shard[1024];
    snprintf(shard, sizeof shard, "%s/model.safetensors", d.path);
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_load_file(&m, d.path, NULL, &err), &err);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    kvshard_plan *p = NULL;
    static const char message[] = "safetensors: model.safetensors: the header holds no tensor, so "
                                  "the checkpoint has no weights to count";
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EWEIGHTS);
    assert_string_equal(err.message, message);
    assert_string_equal(err.source, shard);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    kvshard_fit *f = NULL;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EWEIGHTS);
    assert_string_equal(err.message, message);
    assert_null(f);
    kvshard_model_free(m);
    dir_close(&d);
}

/* weights_per_rank and weights_total together are two figures for one
 * thing: an error naming both, where weights_per_rank used to win. With
 * memory_per_rank the weights are not read, and neither is an error. */
static void test_two_weight_sources(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options(); /* weights_total and weights_experts */
    o.world_size = 4;
    o.context_length = 0;
    const uint64_t one[1] = {17 * GIB};
    o.weights_per_rank = one;
    o.weights_per_rank_count = 1;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EWEIGHTS);
    assert_null(p);
    assert_string_equal(err.message,
                        "weights_per_rank and weights_total are both given: a rank's weights "
                        "come from one source; give weights_per_rank (measured), or "
                        "weights_total with weights_experts (an estimate)");
    kvshard_comparison *c = NULL;
    assert_int_equal(kvshard_comparison_create(&c, m, &o, NULL, NULL, &err), KVSHARD_EWEIGHTS);
    o.memory_per_rank = 20 * GIB;
    p = tu_plan(m, &o);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_DEVICE_MEMORY_IGNORED));
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* A deployment's flags pin the search: --pp_size=1 as a flag. */
static void test_deployment_pins(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    const char *args[] = {"--device_memory=32GiB", "--context_length=32768",
                          "--weights_total=69321223296", "--weights_experts=64424509440",
                          "--enable_layerwise_split=false"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 5, args, 0, &err), &err);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 4;
    kvshard_fit *f = NULL;
    tu_assert_ok(kvshard_deployment_fit(&f, dep, &fo, &err), &err);
    /* Unsplit only: one row each for T = 1, 2, 4. */
    assert_int_equal(kvshard_fit_row_count(f), 3);
    assert_int_equal(kvshard_fit_row_at(f, 0)->seqs_total, 56);
    char *json = NULL;
    assert_int_equal(kvshard_fit_write_json(f, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"gpus\": 4, \"gpus_per_node\": 8, \"max_tp_size\": 8, "
                                 "\"max_pp_size\": 1, \"limited_layouts\": 3"));
    assert_non_null(strstr(json, "\"flags\": {\"kvshard\": [\"--world_size=4\", \"--dp_size=2\", "
                                 "\"--max_seqs=28\"]"));
    free(json);
    kvshard_fit_free(f);
    kvshard_deployment_free(dep);
}

/* Device inputs under the engine profiles, Llama 3.1 8B on two GPUs of
 * 80 GiB: each rank keeps 4 of the 8 KV heads of 128, 2 x 4 x 128 x 2 x 32
 * = 65,536 bytes a token, and half of a 16 GiB checkpoint, 8,589,934,592
 * bytes. */
static void test_engine_device_inputs(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    kvshard_error err;
    kvshard_plan *p = NULL;

    /* vllm: device_memory is device_memory_total; the reserve max(1 GiB,
     * 80 GiB / 20) = 4 GiB and the weights fill non_kv_memory = 12 GiB;
     * ceil(85,899,345,920 x 0.92) = 79,027,398,247 less 12,884,901,888 =
     * 66,142,496,359 bytes, blocks of 16 x 65,536: 63,078. */
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_VLLM;
    o.world_size = 2;
    o.device_memory = 80ull << 30;
    o.weights_total = 16ull << 30;
    p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "budget"), 66142496359u);
    assert_int_equal(tu_figure(p, "num_blocks"), 63078);
    kvshard_plan_free(p);
    /* The engine's own non_kv_memory (14 GiB) wins, and no weights are
     * needed: 79,027,398,247 - 15,032,385,536 = 63,995,012,711, 61,030
     * blocks. */
    o.weights_total = 0;
    kvshard_settings *set = tu_settings("non_kv_memory", "14GiB", NULL);
    o.settings = set;
    p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "budget"), 63995012711u);
    assert_int_equal(tu_figure(p, "num_blocks"), 61030);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_DEVICE_MEMORY_IGNORED));
    kvshard_plan_free(p);
    /* Weights or a reserve beside it are not read, and said so; the
     * budget is the same. */
    o.activation_reserve = 2ull << 30;
    p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "budget"), 63995012711u);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_DEVICE_MEMORY_IGNORED));
    kvshard_plan_free(p);
    o.activation_reserve = KVSHARD_RESERVE_AUTO;
    kvshard_settings_free(set);
    o.settings = NULL;
    /* Without it the weights are needed. */
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EWEIGHTS);

    /* sglang: device_memory is the free memory of a fresh GPU; the reserve
     * is 0, so non_kv_memory is the 8 GiB of weights; the rest after the
     * static fraction 0.85: (80 - 8) - 80 x 0.15 = 60 GiB, tokens of
     * 65,536 bytes: 983,040. Another device_memory_free differs. */
    o.engine = KVSHARD_ENGINE_SGLANG;
    o.weights_total = 16ull << 30;
    o.memory_utilization = 0.85;
    p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "budget"), 60ull << 30);
    assert_int_equal(tu_figure(p, "max_tokens"), 983040);
    kvshard_plan_free(p);
    set = tu_settings("device_memory_free", "78GiB", NULL);
    o.settings = set;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDUPKEY);
    assert_non_null(strstr(err.message, "sglang profile: device_memory 85899345920 and "
                                        "device_memory_free 83751862272 differ"));
    kvshard_settings_free(set);
    o.settings = NULL;

    /* xllm: two names for the utilization differ even when the engine's
     * is its default 0.8: given is given. */
    o.engine = KVSHARD_ENGINE_XLLM;
    o.memory_utilization = 0.9;
    set = tu_settings("max_memory_utilization", "0.8", NULL);
    o.settings = set;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EDUPKEY);
    assert_non_null(strstr(err.message, "xllm profile: memory_utilization 0.9 and "
                                        "max_memory_utilization 0.8 differ"));
    kvshard_settings_free(set);

    /* fit under an engine profile reads its device inputs as a plan does:
     * a device_memory_total that differs is refused. */
    o.engine = KVSHARD_ENGINE_VLLM;
    set = tu_settings("device_memory_total", "70GiB", NULL);
    o.settings = set;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    kvshard_fit *f = NULL;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EDUPKEY);
    assert_non_null(strstr(err.message, "vllm profile: device_memory "));
    assert_non_null(strstr(err.message, " and device_memory_total 75161927680 differ"));
    assert_null(f);
    kvshard_settings_free(set);
    kvshard_model_free(m);
}

/* Split groups that straddle two KV heads' replicas are sized in fit as in
 * a plan, by their own group's union: Granite-4.0-H-Tiny's geometry on 12
 * GPUs in one node of 12, every rule at T = 12 checked against
 * kvshard_plan_create() of its layout at the row's budget. A 2 GiB card:
 * usable floor(2,147,483,648 x 0.9) = 1,932,735,283, reserve 1 GiB; 1 GiB of
 * dense weights over T = 12: ceil(1,073,741,824 / 12) = 89,478,486; budget
 * 1,932,735,283 - 1,073,741,824 - 89,478,486 = 769,514,973. State 16 x
 * 2,469,888 = 39,518,208 (test_memory), 729,996,765 left for blocks.
 * At S = 2 (ordinal) ranks 2, 3, 8 and 9 hold heads 0-1 or 2-3 (H 4, R 3):
 * 2 x 1,024 KV + 1,024 scratch a token, a block 16 x 3,072 = 49,152 bytes:
 * floor(729,996,765 / 49,152) = 14,851 blocks. Sized with group 0's one
 * head the block was 24,576 bytes and the row said 29,703. Of S 3, 4, 6 and
 * 12 only S = 2 leaves groups with different unions: {1, 2} heads. */
static void test_straddling_groups(void **state)
{
    (void)state;
    kvshard_model *m = tu_granite_tiny();
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 2 * GIB;
    o.weights_total = GIB;
    o.weights_experts = 0;
    o.max_seqs = 16;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus_per_node = 12;
    fo.gpus = 12;
    fo.max_tp_size = 12;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    uint32_t seen = 0;
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++) {
        const kvshard_fit_row *r = kvshard_fit_row_at(f, i);
        uint32_t S = r->layerwise_split_size;
        if (r->tp_size != 12 || S == 1)
            continue;
        assert_true(r->fits);
        assert_int_equal(r->budget, UINT64_C(769514973));
        kvshard_options one = KVSHARD_OPTIONS_INIT;
        one.world_size = 12;
        one.enable_layerwise_split = true;
        one.layerwise_split_size = S;
        one.ownership = r->ownership;
        one.memory_per_rank = r->budget;
        one.max_seqs = r->max_seqs;
        kvshard_plan *p = tu_plan(m, &one);
        kvshard_capacity c = KVSHARD_CAPACITY_INIT;
        assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
        if (c.num_blocks != r->num_blocks)
            print_error("S %u %s: fit %llu blocks, plan %llu\n", S,
                        kvshard_ownership_name(r->ownership), (unsigned long long)r->num_blocks,
                        (unsigned long long)c.num_blocks);
        assert_true(c.has_num_blocks);
        assert_int_equal(r->num_blocks, c.num_blocks);
        if (S == 2 && r->ownership == KVSHARD_OWNERSHIP_ORDINAL)
            assert_int_equal(r->num_blocks, 14851);
        kvshard_plan_free(p);
        seen++;
    }
    assert_int_equal(seen, 15); /* S 2, 3, 4, 6 and 12, three rules each */
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* ---- bounded work ------------------------------------------------------------------------- */

/* Bytes an allocator hands out, in all: the work a call does in memory
 * it fills, counted rather than timed. */
typedef struct counted {
    uint64_t bytes;
} counted;

static void *counted_malloc(void *user, size_t size)
{
    ((counted *)user)->bytes += size;
    return malloc(size);
}

static void counted_free(void *user, void *ptr)
{
    (void)user;
    free(ptr);
}

/* A Nemotron-H config of `layers` layers, an attention layer and a Mamba
 * layer in every 64 (MLP layers otherwise): a long model that still fits. */
static kvshard_model *long_model(uint32_t layers)
{
    size_t len;
    char *text = fixture_long_config(layers, &len);
    assert_non_null(text);
    kvshard_model *m = tu_load_model_text(text);
    free(text);
    return m;
}

/* fit plans each row's figures, not its layers' owners: a fit of a long
 * model on 64 GPUs (88 rows) fills less memory than one plan of it, where
 * planning every row in full filled a plan's per-layer arrays 88 times. */
static void test_work_per_layer(void **state)
{
    (void)state;
    kvshard_model *m = long_model(1u << 18);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.weights_total = UINT64_C(16000000000);
    o.context_length = 4096;
    counted c = {0};
    kvshard_allocator a = {counted_malloc, counted_free, &c};
    kvshard_options one = o;
    one.world_size = 64;
    one.pp_size = 8;
    one.max_seqs = 1;
    kvshard_plan *p = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_create(&p, m, &one, &a, &err), &err);
    uint64_t plan_bytes = c.bytes;
    kvshard_plan_free(p);
    c.bytes = 0;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 64;
    kvshard_fit *f = NULL;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, &a, &err), &err);
    uint64_t fit_bytes = c.bytes;
    print_message("one plan: %llu bytes; the fit of %zu rows: %llu bytes\n",
                  (unsigned long long)plan_bytes, kvshard_fit_row_count(f),
                  (unsigned long long)fit_bytes);
    assert_int_equal(kvshard_fit_row_count(f), 88);
    assert_true(fitting(f) > 0);
    assert_true(fit_bytes < plan_bytes);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* Ranks alike are planned once: DeepSeek-V3.2 on 55,440 GPUs with the size
 * limits open. 55,440 = 2^4 x 3^2 x 5 x 7 x 11 and T must divide the 128
 * query heads, so T is 1, 2, 4, 8 or 16; P divides 55,440 / T and is at most
 * the 61 layers: 33, 31, 27, 20 and 12 values of P. A (T, P) gives the
 * unsplit row and three rules for each split size S > 1 dividing T: 1, 4,
 * 7, 10 and 13 rows, so 33 + 124 + 189 + 200 + 156 = 702 rows. The 2,430
 * pairs (T, P) with T x P dividing 55,440 are those 123, 651 not admitted
 * (q_heads, pp_layers) and 1,656 past gpus_per_node. fit fills a few
 * hundred bytes a row and split rank, not a rank's figures for every rank
 * (the budget below allows a sixteenth of the 293,882,524 ranks the 0.3.0
 * search planned). */
static void test_work_per_rank(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.weights_total = UINT64_C(680000000000);
    counted c = {0};
    kvshard_allocator a = {counted_malloc, counted_free, &c};
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 55440;
    fo.max_tp_size = 55440;
    fo.max_pp_size = 55440;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, &a, &err), &err);
    print_message("%zu rows: %llu bytes\n", kvshard_fit_row_count(f),
                  (unsigned long long)c.bytes);
    assert_int_equal(kvshard_fit_row_count(f), 702);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 651);
    assert_int_equal(kvshard_fit_limited_layouts(f), 1656);
    /* One rank's figures for every rank of every row would be 293,882,524
     * x sizeof(kvshard_rank_memory) bytes. */
    assert_true(c.bytes < UINT64_C(293882524) * sizeof(kvshard_rank_memory) / 16);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* An allocator that fails after `left` allocations, counting what is live. */
typedef struct failing {
    size_t left;
    size_t live;
} failing;

static void *failing_malloc(void *user, size_t size)
{
    failing *f = user;
    if (f->left == 0)
        return NULL;
    f->left--;
    void *p = malloc(size);
    f->live += p != NULL;
    return p;
}

static void failing_free(void *user, void *ptr)
{
    failing *f = user;
    f->live -= ptr != NULL;
    free(ptr);
}

/* Out of memory at every allocation of a fit whose rows are figures
 * plans: each fails cleanly and frees everything. */
static void test_out_of_memory(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.context_length = 32768;
    o.weights_total = UINT64_C(674030337216);
    o.weights_experts = UINT64_C(654068416512);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 16;
    int rc = KVSHARD_ENOMEM;
    size_t k = 0;
    for (; rc == KVSHARD_ENOMEM; k++) {
        failing fa = {k, 0};
        kvshard_allocator a = {failing_malloc, failing_free, &fa};
        kvshard_fit *f = NULL;
        kvshard_error err;
        rc = kvshard_fit_create(&f, m, &o, &fo, &a, &err);
        if (rc == KVSHARD_OK) {
            assert_int_equal(kvshard_fit_row_count(f), 44);
            kvshard_fit_free(f);
        } else {
            assert_int_equal(rc, KVSHARD_ENOMEM);
        }
        assert_int_equal(fa.live, 0);
    }
    assert_true(k > 44);
    kvshard_model_free(m);
}

/* Past KVSHARD__FIT_MAX_WORK a fit is refused by that name before it plans:
 * 2^20 layers on 4,096 GPUs with every T and P open, at a context length. */
static void test_work_limit(void **state)
{
    (void)state;
    kvshard_model *m = long_model(1u << 20);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.weights_total = UINT64_C(16000000000);
    o.context_length = 4096;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 4096;
    fo.max_tp_size = 4096;
    fo.max_pp_size = 4096;
    kvshard_fit *f = (kvshard_fit *)(uintptr_t)0x5a5a;
    kvshard_error err;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_EFITLIMITS);
    assert_true(f == (kvshard_fit *)(uintptr_t)0x5a5a);
    assert_non_null(strstr(err.message, "KVSHARD__FIT_MAX_WORK"));
    assert_non_null(strstr(err.message, "max_tp_size 4096 and max_pp_size 4096"));
    /* On 64 GPUs within the node limits the same model is searched. */
    fo.gpus = 64;
    fo.max_tp_size = 0;
    fo.max_pp_size = 0;
    f = NULL;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* gpus_per_node is a fit option, and a deployment key: kvshard_options
 * refuses it, kvshard_fit_options checks its range, and a deployment's key
 * sets the node of its fits unless the fit options give one. */
static void test_gpus_per_node_moved(void **state)
{
    (void)state;
    kvshard_error err;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_options_set(&o, "gpus_per_node", "4", NULL, &err),
                     KVSHARD_EUNKNOWNKEY);
    assert_non_null(strstr(err.message, "gpus_per_node is not a field of kvshard_options"));
    o.device_memory = 2 * GIB;
    o.weights_total = GIB;
    o.weights_experts = 0;
    o.max_seqs = 16;
    kvshard_model *m = tu_granite_tiny();
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 8;
    fo.gpus_per_node = KVSHARD_MAX_RANKS + 1;
    kvshard_fit *f = NULL;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_ERANGE);
    assert_non_null(strstr(err.message, "gpus_per_node"));
    assert_null(f);

    kvshard_deployment *dep = NULL;
    tu_assert_ok(kvshard_deployment_create(&dep, m, &o, &err), &err);
    tu_assert_ok(kvshard_deployment_set(dep, "gpus_per_node", "4", "test", &err), &err);
    fo.gpus_per_node = 0;
    tu_assert_ok(kvshard_deployment_fit(&f, dep, &fo, &err), &err);
    char *json = NULL;
    assert_int_equal(kvshard_fit_write_json(f, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"gpus\": 8, \"gpus_per_node\": 4, \"max_tp_size\": 4, "));
    free(json);
    kvshard_fit_free(f);
    fo.gpus_per_node = 2; /* the call's own wins */
    tu_assert_ok(kvshard_deployment_fit(&f, dep, &fo, &err), &err);
    json = NULL;
    assert_int_equal(kvshard_fit_write_json(f, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"gpus\": 8, \"gpus_per_node\": 2, \"max_tp_size\": 2, "));
    free(json);
    kvshard_fit_free(f);
    kvshard_deployment_free(dep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen_four_cards),     cmocka_unit_test(test_qwen_stages_in_the_node),
        cmocka_unit_test(test_deepseek_sixteen_cards), cmocka_unit_test(test_nemotron_two_cards),
        cmocka_unit_test(test_plan_from_the_device), cmocka_unit_test(test_tiny_hybrid_plan),
        cmocka_unit_test(test_errors),               cmocka_unit_test(test_deployment_pins),
        cmocka_unit_test(test_tensor_of_2_63_bytes),
        cmocka_unit_test(test_checkpoint_without_tensors),
        cmocka_unit_test(test_two_weight_sources),
        cmocka_unit_test(test_engine_device_inputs), cmocka_unit_test(test_work_per_layer),
        cmocka_unit_test(test_work_per_rank),        cmocka_unit_test(test_work_limit),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_totals_past_64_bits),
        cmocka_unit_test(test_straddling_groups),
        cmocka_unit_test(test_gpus_per_node_moved),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
