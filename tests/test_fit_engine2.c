/* kvshard fit under the xllm and trtllm profiles: rows sized and ranked by
 * the engine's own sequences, launch lines in the engine's flags that
 * `kvshard plan` under the profile plans back to the same figures, and the
 * layouts and models each engine refuses, by name. */
#include "test_util.h"
#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define LLAMA KVSHARD_EXAMPLES "/models/llama3_1_8b.json"
#define GIB (1ull << 30)

/* Qwen3.5-35B-A3B text weights in bf16 on 4 GPUs of 32 GiB, 32k tokens. */
#define QWEN_DEVICE                                                                                \
    "--device_memory=32GiB --weights_total=69321223296 --weights_experts=64424509440 "            \
    "--context_length=32768"
/* Llama 3.1 8B in bf16 (8,030,261,248 parameters) on 2 GPUs of 24 GiB. */
#define LLAMA_DEVICE "--device_memory=24GiB --weights_total=16060522496 --context_length=32768"

typedef struct expected_row {
    uint32_t tp, dp, split;
    uint64_t seqs_per_replica, num_blocks, tokens_per_replica;
} expected_row;

static kvshard_fit *fit_of(const char *model_file, const kvshard_options *o, uint32_t gpus)
{
    kvshard_model *m = tu_load_example_model(model_file);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = gpus;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, o, &fo, NULL, &err), &err);
    kvshard_model_free(m);
    return f;
}

static void assert_rows(const kvshard_fit *f, const expected_row *rows, size_t count)
{
    assert_int_equal(kvshard_fit_row_count(f), count);
    for (size_t i = 0; i < count; i++) {
        const kvshard_fit_row *r = kvshard_fit_row_at(f, i);
        const expected_row *e = &rows[i];
        assert_true(r->fits);
        assert_int_equal(r->rank, i + 1);
        assert_int_equal(r->tp_size, e->tp);
        assert_int_equal(r->pp_size, 1);
        assert_int_equal(r->dp_size, e->dp);
        assert_int_equal(r->layerwise_split_size, e->split);
        assert_true(r->has_seqs);
        assert_int_equal(r->seqs_per_replica, e->seqs_per_replica);
        assert_int_equal(r->max_seqs, e->seqs_per_replica);
        assert_int_equal(r->seqs_total, e->seqs_per_replica * e->dp);
        assert_int_equal(r->num_blocks, e->num_blocks);
        assert_int_equal(r->tokens_per_replica, e->tokens_per_replica);
        assert_int_equal(r->tokens_total, e->tokens_per_replica * e->dp);
    }
}

/* ---- xllm ------------------------------------------------------------------------------ */

static kvshard_options qwen_xllm(void)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 32 * GIB;
    o.weights_total = 69321223296ull;
    o.weights_experts = 64424509440ull;
    o.context_length = 32768;
    o.engine = KVSHARD_ENGINE_XLLM;
    return o;
}

/* xLLM 0.11.0, the prefix cache on, fraction 0.8, no reserve: the three
 * layouts of 4 GPUs and T = 4 split in 2 by global index, by sequences in
 * all (28, 20, 15, 14). A split of 2 at T = 2 or of 4 at T = 4 does not
 * divide the replication and gives no row.
 *
 * Row 1 by hand (T = 2, D = 2). Weights: the 4,896,713,856 dense bytes
 * over T, the experts over D x T: 2,448,356,928 + 16,106,127,360 =
 * 18,554,484,288. free = 34,359,738,368 - 18,554,484,288 = 15,805,254,080;
 * B = free - trunc(34,359,738,368 x (1 - 0.8)) = 15,805,254,080 -
 * 6,871,947,673 = 8,933,306,407. One KV head a rank: a block of 128 tokens
 * over 10 full layers is 128 x 10 x 1,024 = 1,310,720 bytes; a GDN layer's
 * state 1,073,152 bytes (24,576 conv + 1,048,576 fp32 temporal), 30 of
 * them: lin = 32,194,560. Slots: a = trunc(B x (0.9 / 1.9) / lin) = 131,
 * bound min(floor((B - 1) / lin) = 277, floor((B + 2 x 1,310,720) /
 * (lin + 1,310,720)) = 266) = 266: 131 slots take 4,217,487,360, leaving
 * 4,715,819,047 = 3,597 blocks (3,596 usable, 460,416 tokens). A request of
 * 32,768 tokens takes 256 blocks: s = min(floor(3,596 / 256) = 14, 130
 * usable slots) = 14.
 *
 * Row 2 (T = 1, D = 4): weights 4,896,713,856 + 16,106,127,360 =
 * 21,002,841,216, B = 6,484,949,479; two KV heads: blocks of 2,621,440;
 * lin 64,389,120, a = 47 (bound 96): 3,458,660,839 left, 1,319 blocks,
 * floor(1,318 / 256) = 5.
 * Row 3 (T = 4): weights 1,224,178,464 + 16,106,127,360 = 17,330,305,824,
 * B = 10,157,484,871; lin 16,097,280, a = 298 (bound 583): 5,360,495,431
 * left, 4,089 blocks, floor(4,088 / 256) = 15.
 * Row 4 (T = 4, S = 2, global): every full layer has an odd index, so
 * split rank 1 owns all ten and rank 0 none (skipped): a block is 1,310,720
 * owned + 131,072 scratch = 1,441,792; floor(5,360,495,431 / 1,441,792) =
 * 3,717 blocks, floor(3,716 / 256) = 14. */
static const expected_row xllm_rows[4] = {
    {2, 2, 1, 14, 3597, 460416},
    {1, 4, 1, 5, 1319, 168832},
    {4, 1, 1, 15, 4089, 523392},
    {4, 1, 2, 14, 3717, 475776},
};

static void test_xllm_worked_example(void **state)
{
    (void)state;
    kvshard_options o = qwen_xllm();
    kvshard_fit *f = fit_of("qwen3_5_35b_a3b.json", &o, 4);
    assert_rows(f, xllm_rows, 4);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 0);
    assert_int_equal(kvshard_fit_row_at(f, 3)->ownership, KVSHARD_OWNERSHIP_GLOBAL);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->weights_per_rank, 18554484288ull);
    assert_int_equal(r->budget, 8933306407ull);
    assert_int_equal(kvshard_fit_row_at(f, 1)->budget, 6484949479ull);
    assert_int_equal(kvshard_fit_row_at(f, 2)->budget, 10157484871ull);

    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "xllm", false) > 0);
    assert_string_equal(buf, "--max_seqs_per_batch=14 --max_memory_utilization=0.8 --dp_size=2");
    assert_int_equal(kvshard_fit_flags(buf, sizeof buf, f, "xllm", true), 0);
    assert_string_equal(buf, "");
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "kvshard", false) > 0);
    assert_string_equal(buf, "--engine=xllm --engine_version=0.11.0 --max_seqs_per_batch=14 "
                             "--max_memory_utilization=0.8 --dp_size=2");
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "vllm", false) < 0);
    kvshard_fit_free(f);
}

/* The launch line under kvshard plan, with the fit's device flags and its
 * world, plans row 1: 3,597 blocks, 131 slots, 14 at once. */
static void test_xllm_line_replans(void **state)
{
    (void)state;
    char command[4096];
    snprintf(command, sizeof command, "'%s' fit '%s' --engine=xllm --gpus=4 " QWEN_DEVICE,
             KVSHARD_CLI, QWEN);
    char *out = tu_run_ok(command);
    tu_assert_contains(out, "fit under xllm 0.11.0: 4 GPUs of 34,359,738,368 B (32.00 GiB) x "
                            "0.8; activation_reserve 0 B\n");
    tu_assert_contains(out, "\nrecommended: xllm --max_seqs_per_batch=14 "
                            "--max_memory_utilization=0.8 --dp_size=2\n");
    free(out);
    snprintf(command, sizeof command,
             "'%s' plan '%s' --world_size=4 --engine=xllm --engine_version=0.11.0 "
             "--max_seqs_per_batch=14 --max_memory_utilization=0.8 --dp_size=2 " QWEN_DEVICE
             " --format=json",
             KVSHARD_CLI, QWEN);
    out = tu_run_ok(command);
    tu_assert_contains(out, "\"max_seqs\": 14, \"num_blocks\": 3597, \"max_tokens\": 460416");
    tu_assert_contains(out, "\"concurrency\": 14");
    tu_assert_contains(out, "\"budget\": 8933306407, \"state_slots\": 131");
    free(out);
}

/* With the prefix cache off the state pool follows the request limit: s is
 * the largest m whose m + 2 slots leave floor((blocks - 1) / 256) >= m. At
 * row 1, m = 24: 26 slots take 837,058,560, leaving 8,096,247,847 = 6,176
 * blocks, floor(6,175 / 256) = 24; m = 25 leaves 6,152 blocks, 24 < 25.
 * The line repeats the flag as xLLM spells it. */
static void test_xllm_prefix_cache_off(void **state)
{
    (void)state;
    kvshard_options o = qwen_xllm();
    kvshard_settings *set = tu_settings("enable_prefix_cache", "false", NULL);
    o.settings = set;
    kvshard_fit *f = fit_of("qwen3_5_35b_a3b.json", &o, 4);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->tp_size, 2);
    assert_int_equal(r->dp_size, 2);
    assert_int_equal(r->seqs_per_replica, 24);
    assert_int_equal(r->num_blocks, 6176);
    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "xllm", false) > 0);
    assert_string_equal(buf, "--max_seqs_per_batch=24 --max_memory_utilization=0.8 --dp_size=2 "
                             "--enable_prefix_cache=false");
    kvshard_fit_free(f);
    kvshard_settings_free(set);
}

/* A given fraction is the one the rows use and the line states: at 0.9 row
 * 1's B is 15,805,254,080 - trunc(34,359,738,368 x 0.09999999999999998) =
 * 12,369,280,244. */
static void test_xllm_fraction(void **state)
{
    (void)state;
    kvshard_options o = qwen_xllm();
    kvshard_settings *set = tu_settings("max_memory_utilization", "0.9", NULL);
    o.settings = set;
    kvshard_fit *f = fit_of("qwen3_5_35b_a3b.json", &o, 4);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->tp_size, 2);
    assert_int_equal(r->budget, 12369280244ull);
    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "xllm", false) > 0);
    tu_assert_contains(buf, " --max_memory_utilization=0.9 ");
    kvshard_fit_free(f);
    kvshard_settings_free(set);
}

/* xLLM has no pipeline stages: asking fit for them is the profile's
 * refusal, not an empty search. */
static void test_xllm_pp_engine(void **state)
{
    (void)state;
    char command[4096], *out = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=xllm --gpus=4 --max_pp_size=2 " QWEN_DEVICE, KVSHARD_CLI,
             QWEN);
    assert_int_equal(tu_run(command, &out, &err), 1);
    tu_assert_contains(err, "xllm profile: pp_engine: max_pp_size 2: xLLM has no pipeline "
                            "parallelism");
    free(out);
    free(err);
    kvshard_options o = qwen_xllm();
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 4;
    fo.pp_size = 2;
    kvshard_fit *f = NULL;
    kvshard_error e;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &e), KVSHARD_EPROFILE);
    tu_assert_contains(e.message, "xllm profile: pp_engine: pp_size 2: ");
    assert_null(f);
    kvshard_model_free(m);
}

/* ---- trtllm ---------------------------------------------------------------------------- */

/* TensorRT-LLM covers no hybrid but NemotronH and Qwen3-Next: the model is
 * refused by name, every layout alike. */
static void test_trtllm_refuses_qwen3_5(void **state)
{
    (void)state;
    char command[4096], *out = NULL, *err = NULL;
    snprintf(command, sizeof command, "'%s' fit '%s' --engine=trtllm --gpus=4 " QWEN_DEVICE,
             KVSHARD_CLI, QWEN);
    assert_int_equal(tu_run(command, &out, &err), 1);
    assert_string_equal(err, "command line --engine: trtllm profile: engine_unsupported: a model "
                             "with gdn state layers other than NemotronH and Qwen3-Next is not "
                             "covered yet\n");
    free(out);
    free(err);
}

static kvshard_options llama_trtllm(void)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 24 * GIB;
    o.weights_total = 16060522496ull;
    o.context_length = 32768;
    o.engine = KVSHARD_ENGINE_TRTLLM;
    return o;
}

/* TensorRT-LLM 1.1.0, fraction 0.9 (0.8999999761581421 in binary32), the
 * reserve max(1 GiB, floor(25,769,803,776 / 20)) = 1,288,490,188.
 *
 * Row 1 by hand (T = 2): weights 16,060,522,496 / 2 = 8,030,261,248;
 * non_kv = 9,318,751,436; available = int((25,769,803,776 - 9,318,751,436)
 * x 0.8999999761581421) = int(16,451,052,340 x 0.8999999761581421) =
 * 14,805,946,713. Four of 8 KV heads a rank, head 128, 32 layers, bf16: c
 * = 2 x 4 x 128 x 32 x 2 = 65,536 bytes a token; M = floor(14,805,946,713
 * / 65,536) = 225,920 = 7,060 blocks of 32; a request of 32,768 tokens
 * takes 1,024 blocks: s = floor(7,060 / 1,024) = 6.
 * Row 2 (T = 1, two instances of one GPU): weights 16,060,522,496,
 * available int(8,420,791,092 x 0.8999999761581421) = 7,578,711,782; c =
 * 131,072; M = 57,820, ceil(57,820 / 32) = 1,807 blocks (57,824 tokens),
 * floor(1,807 / 1,024) = 1 a replica, 2 in all. */
static const expected_row trtllm_rows[2] = {
    {2, 1, 1, 6, 7060, 225920},
    {1, 2, 1, 1, 1807, 57824},
};

static void test_trtllm_dense(void **state)
{
    (void)state;
    kvshard_options o = llama_trtllm();
    kvshard_fit *f = fit_of("llama3_1_8b.json", &o, 2);
    assert_rows(f, trtllm_rows, 2);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 0);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->weights_per_rank, 8030261248ull);
    assert_int_equal(r->budget, 14805946713ull);
    assert_int_equal(kvshard_fit_row_at(f, 1)->budget, 7578711782ull);
    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "trtllm", false) > 0);
    assert_string_equal(buf, "--tp_size=2 --max_seq_len=32768 --max_batch_size=6 "
                             "--kv_cache_free_gpu_memory_fraction=0.9");
    assert_int_equal(kvshard_fit_flags(buf, sizeof buf, f, "trtllm", true), 0);
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "kvshard", false) > 0);
    assert_string_equal(buf, "--engine=trtllm --engine_version=1.1.0 --tp_size=2 "
                             "--max_seq_len=32768 --max_batch_size=6 "
                             "--kv_cache_free_gpu_memory_fraction=0.9");
    kvshard_fit_free(f);
}

/* The line under kvshard plan plans row 1's pool; a given max_num_tokens
 * is repeated on it, and a given --tp_size is not read: fit writes the
 * parallel sizes. */
static void test_trtllm_line_replans(void **state)
{
    (void)state;
    char command[4096];
    snprintf(command, sizeof command, "'%s' fit '%s' --engine=trtllm --gpus=2 " LLAMA_DEVICE,
             KVSHARD_CLI, LLAMA);
    char *out = tu_run_ok(command);
    tu_assert_contains(out, "\nrecommended: trtllm --tp_size=2 --max_seq_len=32768 "
                            "--max_batch_size=6 --kv_cache_free_gpu_memory_fraction=0.9\n");
    free(out);
    snprintf(command, sizeof command,
             "'%s' plan '%s' --engine=trtllm --engine_version=1.1.0 --tp_size=2 "
             "--max_seq_len=32768 --max_batch_size=6 --kv_cache_free_gpu_memory_fraction=0.9 "
             LLAMA_DEVICE " --format=json",
             KVSHARD_CLI, LLAMA);
    out = tu_run_ok(command);
    tu_assert_contains(out, "\"max_seqs\": 6, \"num_blocks\": 7060, \"max_tokens\": 225920");
    tu_assert_contains(out, "\"concurrency\": 6, \"balanced_max_seqs\": 6");
    free(out);
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=trtllm --gpus=2 --max_num_tokens=4096 " LLAMA_DEVICE,
             KVSHARD_CLI, LLAMA);
    out = tu_run_ok(command);
    tu_assert_contains(out, " --kv_cache_free_gpu_memory_fraction=0.9 --max_num_tokens=4096\n");
    free(out);
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=trtllm --gpus=2 --tp_size=1 " LLAMA_DEVICE, KVSHARD_CLI,
             LLAMA);
    out = tu_run_ok(command);
    tu_assert_contains(out, "\nrecommended: trtllm --tp_size=2 --max_seq_len=32768 "
                            "--max_batch_size=6 --kv_cache_free_gpu_memory_fraction=0.9\n");
    free(out);
}

/* A NemotronH hybrid: its state pool is max_batch_size slots inside the
 * measured peak, so more requests leave fewer blocks. Row 1's s is the
 * largest limit served whole: planned at s the engine serves s, at s + 1
 * fewer than s + 1. At 1,024 tokens the pools at one request bound s far
 * above what the state of that many slots leaves memory for: the search
 * starts from none. */
static uint64_t trtllm_hybrid_concurrency(uint32_t length, uint32_t max_batch_size)
{
    char limit[16], tokens[16];
    snprintf(limit, sizeof limit, "%u", max_batch_size);
    snprintf(tokens, sizeof tokens, "%u", length);
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/nemotron_h_8b.json", "--engine=trtllm", "--tp_size", "2",
            "--max_seq_len", tokens, "--max_batch_size", limit, "--device_memory", "24GiB",
            "--context_length", tokens, "--weights_total", "16000000000");
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    assert_true(c.has_concurrency);
    kvshard_plan_free(p);
    return c.concurrency;
}

static void test_trtllm_hybrid_largest_served(void **state)
{
    (void)state;
    static const uint32_t lengths[2] = {32768, 1024};
    for (size_t i = 0; i < 2; i++) {
        kvshard_options o = llama_trtllm();
        o.weights_total = 16000000000ull;
        o.context_length = lengths[i];
        kvshard_fit *f = fit_of("nemotron_h_8b.json", &o, 2);
        const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
        assert_true(r->fits);
        assert_int_equal(r->tp_size, 2);
        uint64_t s = r->seqs_per_replica;
        assert_true(s > 1);
        assert_int_equal(trtllm_hybrid_concurrency(lengths[i], (uint32_t)s), s);
        assert_true(trtllm_hybrid_concurrency(lengths[i], (uint32_t)s + 1) < s + 1);
        kvshard_fit_free(f);
    }
}

/* ---- without --engine -------------------------------------------------------------------- */

/* kvshard's own fit: row 1 is T = 2, D = 2 at 32k tokens; xLLM's line is
 * its own fit of that layout (row 1 of the worked example above), and
 * TensorRT-LLM has none for this model. */
static void test_lines_without_engine(void **state)
{
    (void)state;
    char command[4096];
    snprintf(command, sizeof command, "'%s' fit '%s' --gpus=4 " QWEN_DEVICE, KVSHARD_CLI, QWEN);
    char *out = tu_run_ok(command);
    tu_assert_contains(out, "\nxllm         --max_seqs_per_batch=14 --max_memory_utilization=0.8 "
                            "--dp_size=2\n");
    tu_assert_contains(out, "\ntrtllm       no line: engine_unsupported\n");
    free(out);
    snprintf(command, sizeof command, "'%s' fit '%s' --gpus=4 --format=json " QWEN_DEVICE,
             KVSHARD_CLI, QWEN);
    out = tu_run_ok(command);
    tu_assert_contains(out, "\"xllm\": [\"--max_seqs_per_batch=14\", "
                            "\"--max_memory_utilization=0.8\", \"--dp_size=2\"],");
    tu_assert_contains(out, "\"engine_reasons\": {\"xllm\": null, \"vllm\": null, "
                            "\"sglang\": null, \"trtllm\": \"engine_unsupported\"}}");
    free(out);
    /* Llama on 2 GPUs: kvshard's row 1 is T = 2, TensorRT-LLM's own row 1
     * above. */
    snprintf(command, sizeof command, "'%s' fit '%s' --gpus=2 " LLAMA_DEVICE, KVSHARD_CLI,
             LLAMA);
    out = tu_run_ok(command);
    tu_assert_contains(out, "\ntrtllm       --tp_size=2 --max_seq_len=32768 --max_batch_size=6 "
                            "--kv_cache_free_gpu_memory_fraction=0.9\n");
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xllm_worked_example),
        cmocka_unit_test(test_xllm_line_replans),
        cmocka_unit_test(test_xllm_prefix_cache_off),
        cmocka_unit_test(test_xllm_fraction),
        cmocka_unit_test(test_xllm_pp_engine),
        cmocka_unit_test(test_trtllm_refuses_qwen3_5),
        cmocka_unit_test(test_trtllm_dense),
        cmocka_unit_test(test_trtllm_line_replans),
        cmocka_unit_test(test_trtllm_hybrid_largest_served),
        cmocka_unit_test(test_lines_without_engine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
