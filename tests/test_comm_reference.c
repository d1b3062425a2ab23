/* The unsplit reference of the communication estimate: a split plan's
 * unsplit batch, base step, step and throughput are those the same
 * deployment planned with the split off reports for itself (its batch its
 * own concurrency, a given batch capped at it), on the seed, GLM-5 at
 * S = 8, DeepSeek-V3.2 over two pipeline stages and a given batch the
 * unsplit plan caps. */
#include "test_util.h"

#include "explore/comm.h"

#include <kvshard/explore.h>

#include <stdlib.h>

static kvshard__comm estimate_of(const kvshard_plan *p)
{
    kvshard__comm c;
    kvshard_error err;
    kvshard_error__reset(&err);
    tu_assert_ok(kvshard_comm__of(&c, NULL, p, &err), &err);
    return c;
}

/* `split` and `unsplit` are one deployment with the split on and off: the
 * split plan's reference is the unsplit plan's own figures, exactly (one
 * computation on the same figures). `batch` is the unsplit batch both
 * give. */
static void assert_reference(const kvshard_plan *split, const kvshard_plan *unsplit, uint64_t batch)
{
    kvshard__comm s = estimate_of(split), u = estimate_of(unsplit);
    assert_true(s.split > 1);
    assert_int_equal(u.split, 1);
    assert_true(u.has_step);
    assert_true(s.has_unsplit);
    assert_int_equal(s.unsplit_batch, batch);
    assert_int_equal(u.batch, batch);
    assert_true(s.unsplit_base_us == u.base_us);
    assert_true(s.unsplit_step_us == u.step_us);
    assert_true(s.unsplit_throughput == u.throughput);
    assert_true(s.has_gain);
    assert_true(s.throughput_gain == s.throughput / u.throughput);
    /* An unsplit plan is its own reference. */
    assert_false(u.has_unsplit);
    assert_true(u.has_gain);
    assert_true(u.throughput_gain == 1.0);
}

#define SEED_MODEL "models/qwen3_5_35b_a3b.json"
#define SEED_INPUTS                                                                                \
    "--world_size=4", "--memory_per_rank=20GiB", "--max_seqs=128", "--context_length=32768",       \
        "--weights_total=69321223296", "--weights_experts=64424509440",                            \
        "--comm_accelerator=bi_v100"

/* The seed, TP 4, S = 2: 96 sequences split, 57 unsplit (test_comm works
 * the figures through). */
static void seed(void **state)
{
    (void)state;
    kvshard_plan *split = NULL, *unsplit = NULL;
    TU_PLAN(&split, SEED_MODEL, SEED_INPUTS, "--enable_layerwise_split=true",
            "--layerwise_split_size=2");
    TU_PLAN(&unsplit, SEED_MODEL, SEED_INPUTS);
    assert_reference(split, unsplit, 57);
    kvshard_plan_free(split);
    kvshard_plan_free(unsplit);
}

/* A given batch of 80: the split plan holds 96 and runs 80; the unsplit
 * plan caps it at its 57. */
static void seed_batch_capped(void **state)
{
    (void)state;
    kvshard_plan *split = NULL, *unsplit = NULL;
    TU_PLAN(&split, SEED_MODEL, SEED_INPUTS, "--comm_batch=80", "--enable_layerwise_split=true",
            "--layerwise_split_size=2");
    TU_PLAN(&unsplit, SEED_MODEL, SEED_INPUTS, "--comm_batch=80");
    assert_int_equal(estimate_of(split).batch, 80);
    assert_reference(split, unsplit, 57);
    kvshard_plan_free(split);
    kvshard_plan_free(unsplit);
}

#define GLM5_INPUTS                                                                                \
    "models/glm_5.json", "--world_size=8", "--device_memory=141GiB", "--context_length=65536",     \
        "--weights_total=744000000000", "--weights_experts=700000000000",                          \
        "--comm_accelerator=h200"

/* GLM-5, TP 8, S = 8: every rank owns 78 / 8 DSA layers' latent split,
 * every rank holds all 78 unsplit. */
static void glm5_split_8(void **state)
{
    (void)state;
    kvshard_plan *split = NULL, *unsplit = NULL;
    TU_PLAN(&split, GLM5_INPUTS, "--enable_layerwise_split=true", "--layerwise_split_size=8");
    TU_PLAN(&unsplit, GLM5_INPUTS);
    kvshard__comm u = estimate_of(unsplit);
    assert_true(u.batch > 0);
    assert_reference(split, unsplit, u.batch);
    kvshard_plan_free(split);
    kvshard_plan_free(unsplit);
}

#define DSV32_INPUTS                                                                               \
    "models/deepseek_v3_2.json", "--world_size=16", "--pp_size=2", "--device_memory=80GiB",        \
        "--context_length=32768", "--weights_total=674030337216",                                  \
        "--weights_experts=654068416512", "--kv_cache_dtype=fp8", "--comm_accelerator=h100"

/* DeepSeek-V3.2, TP 8 over two pipeline stages, S = 4: each stage's
 * layers, weights and blocks, the binding stage's step. */
static void deepseek_v3_2_stages(void **state)
{
    (void)state;
    kvshard_plan *split = NULL, *unsplit = NULL;
    TU_PLAN(&split, DSV32_INPUTS, "--enable_layerwise_split=true", "--layerwise_split_size=4");
    TU_PLAN(&unsplit, DSV32_INPUTS);
    assert_int_equal(kvshard_plan_num_ranks(split), 16);
    kvshard__comm u = estimate_of(unsplit);
    assert_true(u.batch > 0);
    assert_reference(split, unsplit, u.batch);
    kvshard_plan_free(split);
    kvshard_plan_free(unsplit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed),
        cmocka_unit_test(seed_batch_capped),
        cmocka_unit_test(glm5_split_8),
        cmocka_unit_test(deepseek_v3_2_stages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
