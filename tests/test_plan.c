/* Planning (SPEC §1, §3, §4): effective split size, split groups, owners. */
#include "test_util.h"

#include <stdlib.h>

/* Seed scenario: Qwen3.5-35B-A3B, TP=4, split 2, ordinal rule. Full-attention
 * layers are 3, 7, ..., 39 (every 4th); ordinals alternate 0, 1. */
static void test_qwen3_5_tp4_split2_ordinal(void **state)
{
    (void)state;
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    kvshard_plan *plan = tu_plan(model, &o);
    assert_int_equal(kvshard_plan_attn_tp_size(plan), 4);
    assert_int_equal(kvshard_plan_effective_split_size(plan), 2);
    assert_int_equal(kvshard_plan_replication_factor(plan), 2);
    const uint32_t even[] = {3, 11, 19, 27, 35};
    const uint32_t odd[] = {7, 15, 23, 31, 39};
    tu_assert_rank_layers(plan, 0, even, 5);
    tu_assert_rank_layers(plan, 2, even, 5);
    tu_assert_rank_layers(plan, 1, odd, 5);
    tu_assert_rank_layers(plan, 3, odd, 5);
    assert_true(kvshard_plan_owns(plan, 0, 3));
    assert_false(kvshard_plan_owns(plan, 1, 3));
    assert_true(kvshard_plan_owns(plan, 1, 0)); /* linear: every rank */
    assert_int_equal(kvshard_plan_warning_count(plan), 0);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen3_5_tp4_split2_ordinal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
