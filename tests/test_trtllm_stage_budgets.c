/* The trtllm profile's peak_memory and non_kv_memory one a stage: each
 * stage's ranks work out their available memory from their own peak (or
 * their own weights and reserve), the world runs with the fewest tokens,
 * and the stage lines and the `stages` list show each stage's own budget.
 * The device fills non_kv_memory with each stage's own weights, in plan
 * and in fit. Every figure is worked out by hand in the comment beside it. */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMOLLM "trtllm/smollm2_135m.json"
#define LLAMA_FILE "llama3_1_8b.json"
#define LLAMA KVSHARD_EXAMPLES "/models/" LLAMA_FILE
#define GIB (1ull << 30)
/* Llama 3.1 8B in bf16 (8,030,261,248 parameters) on GPUs of 24 GiB. */
#define LLAMA_DEVICE "--device_memory=24GiB --weights_total=16060522496 --context_length=32768"

/* SmolLM2-135M on 2 stages of 15 layers: c = 2 x 3 x 64 x 15 x 2 = 11520
 * bytes a token on each. max_seq_len 8192: the estimation's n_in = 8191,
 * one request of ceil(8193 / 32) = 257 blocks and one of 1 token in
 * ceil(3 / 32) = 1 block: 258 blocks, tmp = 8256 tokens, 8256 x 11520 =
 * 95,109,120 bytes. The total is 80 GiB = 85,899,345,920; f32(0.9) =
 * 0.8999999761581421. */

/* Peaks of 20 GiB (21,474,836,480) and 30 GiB (32,212,254,720).
 * Stage 0: int((85,899,345,920 - 21,474,836,480 + 95,109,120) x f) =
 * int(64,519,618,560 x f) = 58,067,655,165; M = floor(/ 11520) =
 * 5,040,595. Stage 1: int(53,782,200,320 x f) = 48,403,979,005; M =
 * 4,201,734: stage 1 binds. ceil(4,201,734 / 32) = 131,305 blocks,
 * 4,201,760 tokens, x 11520 = 48,404,275,200 bytes. */
static void test_peak_one_a_stage(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--pp_size=2", "--device_memory_total=80GiB",
            "--peak_memory=20GiB,30GiB");
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 8256);
    assert_int_equal(tu_efig(p, "binding_stage"), 1);
    assert_int_equal(tu_efig(p, "peak_memory"), 32212254720ull);
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 48403979005ull);
    assert_int_equal(tu_efig(p, "budget"), 48403979005ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 4201734);
    assert_int_equal(tu_efig(p, "num_blocks"), 131305);
    assert_int_equal(tu_efig(p, "pool_tokens"), 4201760);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 48404275200ull);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "{\"stage\": 0, \"layer_first\": 0, \"layer_count\": 15, "
                             "\"kv_layers\": 15, \"kv_bytes_per_token\": 11520, \"budget\": "
                             "58067655165, \"max_tokens\": 5040595}");
    tu_assert_contains(json, "{\"stage\": 1, \"layer_first\": 15, \"layer_count\": 15, "
                             "\"kv_layers\": 15, \"kv_bytes_per_token\": 11520, \"budget\": "
                             "48403979005, \"max_tokens\": 4201734}");
    free(json);
    /* 58,067,655,165 bytes are 54.08 GiB, 48,403,979,005 are 45.08; the
     * binding stage's peak is 30.00 GiB, its tmp 0.09 GiB. */
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "Peak memory during memory usage profiling (torch + non-torch): "
                             "30.00 GiB, available KV cache memory when calculating max tokens: "
                             "45.08 GiB, fraction is set 0.8999999761581421, kv size is 11520. "
                             "device total memory 80.00 GiB, , tmp kv_mem 0.09 GiB\n");
    tu_assert_contains(text, "           stage 0: layers 0-14, 15 attention layers, 11520 bytes a "
                             "token, 54.08 GiB, 5040595 tokens\n"
                             "           stage 1: layers 15-29, 15 attention layers, 11520 bytes "
                             "a token, 45.08 GiB, 4201734 tokens (binds: every rank runs with "
                             "it)\n");
    free(text);
    kvshard_plan_free(p);
}

/* non_kv_memory of 16 GiB (17,179,869,184) and 15 GiB (16,106,127,360),
 * no state: available = int((total - non_kv) x f). Stage 0:
 * int(68,719,476,736 x f) = 61,847,527,424, M = 5,368,708; stage 1:
 * int(69,793,218,560 x f) = 62,813,895,040, M = 5,452,595: stage 0 binds.
 * ceil(5,368,708 / 32) = 167,773 blocks, 5,368,736 tokens. The logged
 * peak is stage 0's non_kv + tmp = 17,274,978,304 bytes, 16.09 GiB. */
static void test_non_kv_one_a_stage(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--pp_size=2", "--device_memory_total=80GiB",
            "--non_kv_memory=16GiB,15GiB");
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    assert_true(tu_efig_null(p, "peak_memory"));
    assert_int_equal(tu_efig(p, "budget"), 61847527424ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 5368708);
    assert_int_equal(tu_efig(p, "num_blocks"), 167773);
    assert_int_equal(tu_efig(p, "pool_tokens"), 5368736);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"kv_bytes_per_token\": 11520, \"budget\": 61847527424, "
                             "\"max_tokens\": 5368708}");
    tu_assert_contains(json, "\"kv_bytes_per_token\": 11520, \"budget\": 62813895040, "
                             "\"max_tokens\": 5452595}");
    free(json);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "(torch + non-torch): 16.09 GiB, available KV cache memory when "
                             "calculating max tokens: 57.60 GiB,");
    tu_assert_contains(text, "stage 0: layers 0-14, 15 attention layers, 11520 bytes a token, "
                             "57.60 GiB, 5368708 tokens (binds: every rank runs with it)\n");
    tu_assert_contains(text, "stage 1: layers 15-29, 15 attention layers, 11520 bytes a token, "
                             "58.50 GiB, 5452595 tokens\n");
    free(text);
    kvshard_plan_free(p);
}

/* A list of another count than 1 or P is refused as under vLLM. */
static void test_counts_refused(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_ERANGE,
               "trtllm profile: engine_flag_value: peak_memory has 3 sizes; pp_size is 2 (give "
               "one size, or one a stage)",
               SMOLLM, "--engine=trtllm", "--pp_size=2", "--device_memory_total=80GiB",
               "--peak_memory=20GiB,30GiB,30GiB");
    TU_REFUSED(KVSHARD_ERANGE,
               "trtllm profile: engine_flag_value: non_kv_memory has 3 sizes; pp_size is 2 (give "
               "one size, or one a stage)",
               SMOLLM, "--engine=trtllm", "--pp_size=2", "--device_memory_total=80GiB",
               "--non_kv_memory=16GiB,15GiB,15GiB");
    TU_REFUSED(KVSHARD_ERANGE, "peak_memory has 2 sizes; pp_size is 1", SMOLLM, "--engine=trtllm",
               "--device_memory_total=80GiB", "--peak_memory=20GiB,30GiB");
}

/* Llama 3.1 8B on 2 stages of 16 layers from the device: the reserve is
 * max(1 GiB, floor(25,769,803,776 / 20)) = 1,288,490,188; each stage's
 * weights are 16,060,522,496 x 16 / 32 = 8,030,261,248, so non_kv =
 * 9,318,751,436 on each (not the whole model's 16,060,522,496 + reserve).
 * available = int((25,769,803,776 - 9,318,751,436) x f) =
 * int(16,451,052,340 x 0.8999999761581421) = 14,805,946,713; c = 2 x 8 x
 * 128 x 16 x 2 = 65,536; M = 225,920, 7,060 blocks of 32; a request of
 * 32,768 tokens takes 1,024 blocks: floor(7,060 / 1,024) = 6 at once. */
static void test_device_fill_one_a_stage(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, "models/" LLAMA_FILE, "--engine=trtllm", "--pp_size=2", "--device_memory=24GiB",
            "--weights_total=16060522496", "--context_length=32768", "--max_seq_len=32768");
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 65536);
    assert_int_equal(tu_efig(p, "budget"), 14805946713ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 225920);
    assert_int_equal(tu_efig(p, "num_blocks"), 7060);
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"kv_layers\": 16, \"kv_bytes_per_token\": 65536, \"budget\": "
                             "14805946713, \"max_tokens\": 225920}");
    free(json);
    kvshard_plan_free(p);
}

/* fit --engine=trtllm of Llama 3.1 8B on 2 GPUs of 24 GiB up to 2 stages:
 * the staged row (T = 1, P = 2) is sized by each stage's weights, so it
 * holds what the T = 2 row holds (by hand above: 7,060 blocks, 225,920
 * tokens, 6 at once), not the 3 of the whole model's weights on a stage
 * (available int(8,420,791,092 x f) = 7,578,711,782, 3,614 blocks). */
static void test_fit_staged_row(void **state)
{
    (void)state;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 24 * GIB;
    o.weights_total = 16060522496ull;
    o.context_length = 32768;
    o.engine = KVSHARD_ENGINE_TRTLLM;
    kvshard_model *m = tu_load_example_model(LLAMA_FILE);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    fo.max_pp_size = 2;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    kvshard_model_free(m);
    const kvshard_fit_row *staged = NULL;
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++)
        if (kvshard_fit_row_at(f, i)->pp_size == 2)
            staged = kvshard_fit_row_at(f, i);
    assert_non_null(staged);
    assert_true(staged->fits);
    assert_int_equal(staged->tp_size, 1);
    assert_int_equal(staged->weights_per_rank, 8030261248ull);
    assert_int_equal(staged->budget, 14805946713ull);
    assert_int_equal(staged->num_blocks, 7060);
    assert_int_equal(staged->tokens_per_replica, 225920);
    assert_int_equal(staged->seqs_per_replica, 6);
    kvshard_fit_free(f);
    /* The staged row's line plans back to the same pool. */
    char command[4096], *out = NULL, *errs = NULL;
    snprintf(command, sizeof command,
             "'%s' plan '%s' --engine=trtllm --engine_version=1.1.0 --tp_size=1 --pp_size=2 "
             "--max_seq_len=32768 --max_batch_size=6 --kv_cache_free_gpu_memory_fraction=0.9 "
             LLAMA_DEVICE " --format=json",
             KVSHARD_CLI, LLAMA);
    assert_int_equal(tu_run(command, &out, &errs), 0);
    tu_assert_contains(out, "\"max_seqs\": 6, \"num_blocks\": 7060, \"max_tokens\": 225920");
    free(out);
    free(errs);
}

/* Stages of 20 and 12 layers from the device: stage 0's weights are
 * 16,060,522,496 x 20 / 32 = 10,037,826,560, non_kv 11,326,316,748,
 * available int(14,443,487,028 x f) = 12,999,137,980 (12.11 GiB), c = 2 x
 * 8 x 128 x 20 x 2 = 81,920, M = 158,680; stage 1's 6,022,695,936,
 * non_kv 7,311,186,124, available int(18,458,617,652 x f) =
 * 16,612,755,446 (15.47 GiB), c = 49,152, M = 337,987. Stage 0 binds:
 * ceil(158,680 / 32) = 4,959 blocks, 158,688 tokens. compare's row of the
 * same layout counts the same. */
static void test_uneven_stages_from_device(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, "models/" LLAMA_FILE, "--engine=trtllm", "--world_size=2", "--pp_size=2",
            "--pp_partition=20,12", "--device_memory=24GiB", "--weights_total=16060522496");
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    assert_int_equal(tu_efig(p, "budget"), 12999137980ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 158680);
    assert_int_equal(tu_efig(p, "num_blocks"), 4959);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "stage 0: layers 0-19, 20 attention layers, 81920 bytes a token, "
                             "12.11 GiB, 158680 tokens (binds: every rank runs with it)\n");
    tu_assert_contains(text, "stage 1: layers 20-31, 12 attention layers, 49152 bytes a token, "
                             "15.47 GiB, 337987 tokens\n");
    free(text);
    kvshard_plan_free(p);
    char command[4096], *out = NULL, *errs = NULL;
    snprintf(command, sizeof command,
             "'%s' compare '%s' --engine=trtllm --world_size=2 --pp_size=2 --pp_partition=20,12 "
             "--device_memory=24GiB --weights_total=16060522496 --context_length=32768",
             KVSHARD_CLI, LLAMA);
    assert_int_equal(tu_run(command, &out, &errs), 0);
    tu_assert_contains(out, " 12-20  80.00 KiB     4,959         158,688 ");
    free(out);
    free(errs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peak_one_a_stage),
        cmocka_unit_test(test_non_kv_one_a_stage),
        cmocka_unit_test(test_counts_refused),
        cmocka_unit_test(test_device_fill_one_a_stage),
        cmocka_unit_test(test_uneven_stages_from_device),
        cmocka_unit_test(test_fit_staged_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
