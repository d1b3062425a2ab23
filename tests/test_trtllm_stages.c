/* The trtllm profile's pipeline stages: each rank works out its own bytes
 * per token, estimation and tokens from its stage's layers, and the world
 * runs with the fewest tokens. Every figure is worked out by hand in the
 * comment beside it. */
#include "test_util.h"

#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPT_OSS "trtllm/gpt_oss_120b.json"
#define SMOLLM "trtllm/smollm2_135m.json"
#define NEMOTRON_H "models/nemotron_h_8b.json"

static uint64_t rank_bytes_per_block(const kvshard_plan *p, uint32_t rank)
{
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, p, rank), KVSHARD_OK);
    return m.bytes_per_block;
}

static uint32_t world_of(const kvshard_plan *p)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&o, p), KVSHARD_OK);
    return o.world_size;
}

/* SmolLM2-135M (30 layers, 3 KV heads x 64, bfloat16) on 2 stages of 15
 * layers with the KV memory given. */
static void test_smollm2_two_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--pp_size=2", "--memory_per_rank=9723600000");
    /* c = 2 x 3 x 64 x 15 x 2 = 11520 on each stage. */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 11520);
    assert_int_equal(tu_efig(p, "pp_size"), 2);
    /* M = floor(9723600000 / 11520) = 844062 on both: stage 0 binds;
     * ceil(844062 / 32) = 26377 blocks, 844064 tokens, 844064 x 11520 =
     * 9723617280 bytes. */
    assert_int_equal(tu_efig(p, "max_tokens"), 844062);
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    assert_int_equal(tu_efig(p, "num_blocks"), 26377);
    assert_int_equal(tu_efig(p, "pool_tokens"), 844064);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 9723617280ull);
    assert_int_equal(tu_efig(p, "budget"), 9723600000ull);
    assert_int_equal(world_of(p), 2);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "           stage 0: layers 0-14, 15 attention layers, 11520 bytes a "
                             "token, 9.06 GiB, 844062 tokens (binds: every rank runs with it)\n"
                             "           stage 1: layers 15-29, 15 attention layers, 11520 bytes "
                             "a token, 9.06 GiB, 844062 tokens\n");
    free(text);
    kvshard_plan_free(p);
}

/* The trtllm rule gives the first stages one layer more: 30 layers on 4
 * stages are 8, 8, 7, 7, and a stage of 8 layers holds the fewest tokens. */
static void test_first_stages_one_layer_more(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--pp_size=4", "--memory_per_rank=9723600000");
    /* Stage 0: c = 2 x 3 x 64 x 8 x 2 = 6144; stage 2: x 7 = 5376. M =
     * floor(9723600000 / 6144) = 1582617 (6144 x 1582617 = 9723598848);
     * ceil(1582617 / 32) = 49457 blocks, 1582624 tokens. */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 6144);
    assert_int_equal(tu_efig(p, "max_tokens"), 1582617);
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    assert_int_equal(tu_efig(p, "num_blocks"), 49457);
    assert_int_equal(tu_efig(p, "pool_tokens"), 1582624);
    /* Each rank's block is its stage's: 32 x 6144 and 32 x 5376. */
    assert_int_equal(rank_bytes_per_block(p, 0), 32ull * 6144);
    assert_int_equal(rank_bytes_per_block(p, 3), 32ull * 5376);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "stage 2: layers 16-22, 7 attention layers, 5376 bytes a token");
    tu_assert_contains(text, "stage 3: layers 23-29, 7 attention layers");
    free(text);
    kvshard_plan_free(p);
}

/* pp_partition gives the layers per stage; the binding stage is the first
 * with the fewest tokens, here the second. */
static void test_partition_binds_later_stage(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--pp_size=2", "--pp_partition=10,20",
            "--memory_per_rank=9723600000");
    /* c_0 = 2 x 3 x 64 x 10 x 2 = 7680, c_1 = 15360. M_1 = floor(9723600000
     * / 15360) = 633046 (15360 x 633046 = 9723586560) < M_0 = 1266093:
     * stage 1 binds. ceil(633046 / 32) = 19783 blocks, 633056 tokens; a
     * rank of stage 0 allocates 633056 x 7680 = 4861870080 bytes. */
    assert_int_equal(tu_efig(p, "binding_stage"), 1);
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 15360);
    assert_int_equal(tu_efig(p, "max_tokens"), 633046);
    assert_int_equal(tu_efig(p, "num_blocks"), 19783);
    assert_int_equal(tu_efig(p, "pool_tokens"), 633056);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 4861870080ull);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "stage 0: layers 0-9, 10 attention layers, 7680 bytes a token, "
                             "9.06 GiB, 1266093 tokens\n");
    tu_assert_contains(text, "stage 1: layers 10-29, 20 attention layers, 15360 bytes a token, "
                             "9.06 GiB, 633046 tokens (binds: every rank runs with it)\n");
    free(text);
    kvshard_plan_free(p);
}

/* gpt-oss-120b (36 layers, 8 KV heads x 64) on 2 stages of the DGX Spark
 * device and peak: each stage's estimation uses its own bytes per token. */
static void test_gpt_oss_stages_from_device(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3", "--max_batch_size", "64",
            "--disable_overlap_scheduler", "--pp_size", "2", "--device_memory_total=128526896333",
            "--peak_memory=122029829137");
    /* 18 layers a stage, every one in full: c = 2 x 8 x 64 x 18 x 2 =
     * 36864. The estimation's 8224 tokens (ceil(8193 / 32) = 257 blocks)
     * take 8224 x 36864 = 303169536 bytes. available = int((128526896333
     * - 122029829137 + 303169536) x 0.8999999761581421) = int(6800236732 x
     * 0.8999999761581421) = 6120212896; M = floor(6120212896 / 36864) =
     * 166021 (36864 x 166021 = 6120198144). */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 36864);
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 8224);
    assert_int_equal(tu_efig(p, "tmp_kv_bytes"), 303169536ull);
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 6120212896ull);
    assert_int_equal(tu_efig(p, "budget"), 6120212896ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 166021);
    /* ceil(166021 / 32) = 5189 blocks, 166048 tokens, 166048 x 36864 =
     * 6121193472 bytes; S = 131072 fits: no reduction. */
    assert_int_equal(tu_efig(p, "num_blocks"), 5189);
    assert_int_equal(tu_efig(p, "pool_tokens"), 166048);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 6121193472ull);
    assert_int_equal(tu_efig(p, "max_seq_len"), 131072);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_WINDOW_REDUCED));
    char *text = tu_plan_text(p);
    /* 303169536 bytes are 0.28 GiB; 6120212896, 5.70 GiB. */
    tu_assert_contains(text, "available KV cache memory when calculating max tokens: 5.70 GiB, "
                             "fraction is set 0.8999999761581421, kv size is 36864. device total "
                             "memory 119.70 GiB, , tmp kv_mem 0.28 GiB\n");
    free(text);
    kvshard_plan_free(p);
}

/* Nemotron-H 8B on 2 stages of 10 and 42 layers, from the device and
 * non_kv_memory: each stage's state pool is over its own state layers. */
static void test_nemotron_h_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON_H, "--engine=trtllm", "--max_batch_size=64", "--pp_size=2",
            "--pp_partition=10,42", "--device_memory_total=32GiB", "--non_kv_memory=16GiB");
    /* The pattern M-M-M-M*-M-... puts attention at layers 7, 18, 29 and 40.
     * Stage 0 (layers 0-9): 1 attention and 5 Mamba2 layers; c_0 = 2 x 8 x
     * 128 x 1 x 2 = 4096, its pool 64 x 5 x 2158592 = 690749440. Stage 1:
     * 3 attention and 19 Mamba2 layers; c_1 = 12288, its pool 64 x 19 x
     * 2158592 = 2624847872.
     * available_0 = int((34359738368 - 17179869184 - 690749440) x
     * 0.8999999761581421) = 14840207376, M_0 = 3623097; available_1 =
     * int((17179869184 - 2624847872) x 0.8999999761581421) = 13099518833,
     * M_1 = floor(13099518833 / 12288) = 1066041: stage 1 binds. */
    assert_int_equal(tu_efig(p, "binding_stage"), 1);
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 12288);
    assert_int_equal(tu_efig(p, "state_bytes"), 2624847872ull);
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 13099518833ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 1066041);
    /* The budget is the smallest mem over the stages: stage 1's. */
    assert_int_equal(tu_efig(p, "budget"), 13099518833ull);
    /* ceil(1066041 / 32) = 33314 blocks. */
    assert_int_equal(tu_efig(p, "num_blocks"), 33314);
    assert_int_equal(tu_efig(p, "state_slots"), 64);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_STATE_SLOTS_FIXED));
    kvshard_plan_free(p);
}

/* T x P ranks: tp 3 on 2 stages is a world of 6. */
static void test_world_of_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--tp_size=3", "--pp_size=2",
            "--memory_per_rank=9723600000");
    assert_int_equal(world_of(p), 6);
    /* c = 2 x 1 head x 64 x 15 x 2 = 3840. */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 3840);
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EPARALLEL, "trtllm profile: world: world_size 4 is not the engine's 6 ranks",
               SMOLLM, "--engine=trtllm", "--tp_size=3", "--pp_size=2", "--world_size=4");
}

static void test_stage_refusals(void **state)
{
    (void)state;
    /* Nemotron-H's first attention layer is layer 7: a stage of layers 0-6
     * has none. */
    TU_REFUSED(KVSHARD_EPROFILE,
               "trtllm profile: engine_unsupported: stage 0 (layers 0-6) holds no attention "
               "layer",
               NEMOTRON_H, "--engine=trtllm", "--pp_size=2", "--pp_partition=7,45",
               "--memory_per_rank=8GiB");
    TU_REFUSED(KVSHARD_EPROFILE,
               "trtllm profile: engine_unsupported: max_attention_window with pipeline stages",
               GPT_OSS, "--engine=trtllm", "--pp_size=2",
               "--kv_cache_config.max_attention_window=[128,131072]", "--memory_per_rank=20GiB");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported: pp_partition_rule is another "
                                 "engine's cut",
               SMOLLM, "--engine=trtllm", "--pp_size=2", "--pp_partition_rule=vllm");
    /* A stage whose memory holds no token names the stage. */
    TU_REFUSED(KVSHARD_ENOBLOCK, "no token of 15360 bytes on stage 1", SMOLLM, "--engine=trtllm",
               "--pp_size=2", "--pp_partition=10,20", "--memory_per_rank=10000");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smollm2_two_stages),
        cmocka_unit_test(test_first_stages_one_layer_more),
        cmocka_unit_test(test_partition_binds_later_stage),
        cmocka_unit_test(test_gpt_oss_stages_from_device),
        cmocka_unit_test(test_nemotron_h_stages),
        cmocka_unit_test(test_world_of_stages),
        cmocka_unit_test(test_stage_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
