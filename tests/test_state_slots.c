/* How many state rows a rank allocates: kvshard_blocks.state_slots, one
 * answer under every profile. The kvshard profile reserves the state of
 * max_seqs sequences; xllm and sglang size slots of their own; vLLM keeps
 * its state pages in the KV pool. Every figure is worked out in the comment
 * beside it. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

#define GIB (UINT64_C(1) << 30)
#define QWEN35 "models/qwen3_5_35b_a3b.json"
#define LLAMA "models/llama3_1_8b.json"

static kvshard_blocks blocks_at(const kvshard_plan *p, uint32_t rank, uint64_t memory)
{
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    budget.memory_per_rank = memory;
    kvshard_blocks b = KVSHARD_BLOCKS_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_blocks_for(&b, p, rank, &budget, &err), &err);
    return b;
}

/* The seed deployment (max_seqs 128 in its file) under the kvshard profile:
 * the budget reserves 128 sequences of GDN state, so 128 rows, whatever the
 * budget and on every rank. */
static void test_kvshard_profile_rows_are_max_seqs(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_blocks all = blocks_at(p, KVSHARD_ALL_RANKS, 20 * GIB);
    assert_true(all.has_state_slots);
    assert_int_equal(all.state_slots, 128);
    for (uint32_t r = 0; r < 4; r++) {
        kvshard_blocks b = blocks_at(p, r, (19 + r) * GIB);
        assert_true(b.has_state_slots);
        assert_int_equal(b.state_slots, 128);
    }
    /* The JSON keeps capacity.state_slots null under kvshard. */
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"state_slots\": null"));
    free(json);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
    free(path);
}

/* Qwen3.5-35B-A3B at TP 4 under xllm's defaults: a rank's GDN state is
 * lin = 16097280 B a sequence, and its slots are trunc(B x (0.9 / 1.9) /
 * lin) = trunc(B x 9 / 19 / lin) (below the bound min((B - 1) / lin,
 * (B + 2 blk) / (lin + blk)), blk = 1310720, on every budget here):
 * - 19 GiB: 9 GiB / lin = 9663676416 / 16097280 = 600.3 -> 600;
 * - 20 GiB: 10173348514.9 / 16097280 = 631.99 -> 631;
 * - 21 GiB: 10683020613.1 / 16097280 = 663.6 -> 663.
 * Ranks measuring 20 / 19 / 20 / 21 GiB allocate 631 / 600 / 631 / 663 on
 * their own and agree on the least, 600: what every rank gets at 19 GiB. */
static void test_xllm_rows_per_rank(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, QWEN35, "--engine=xllm", "--world_size=4", "--max_cache_size=20GiB");
    static const uint64_t measured[] = {20, 19, 20, 21};
    static const uint64_t slots[] = {631, 600, 631, 663};
    uint64_t least = UINT64_MAX;
    for (uint32_t r = 0; r < 4; r++) {
        kvshard_blocks b = blocks_at(p, r, measured[r] * GIB);
        assert_true(b.has_state_slots);
        assert_int_equal(b.state_slots, slots[r]);
        least = b.state_slots < least ? b.state_slots : least;
    }
    assert_int_equal(least, 600);
    kvshard_blocks all = blocks_at(p, KVSHARD_ALL_RANKS, 19 * GIB);
    assert_true(all.has_state_slots);
    assert_int_equal(all.state_slots, 600);
    kvshard_plan_free(p);
}

/* sglang sizes its own mamba pool: the rows are its state_slots figure at
 * the same budget, not max_seqs. */
static void test_sglang_rows_are_its_slots(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/qwen3_5_9b.json", "--engine=sglang");
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    budget.memory_per_rank = 20 * GIB;
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_blocks_figure(&f, p, KVSHARD_ALL_RANKS, &budget, "state_slots", &err),
                 &err);
    assert_int_equal(f.type, KVSHARD_FIGURE_UINT);
    kvshard_blocks b = blocks_at(p, KVSHARD_ALL_RANKS, 20 * GIB);
    assert_true(b.has_state_slots);
    assert_int_equal(b.state_slots, f.uint_value);
    assert_true(b.state_slots != 256);
    kvshard_plan_free(p);
}

/* vLLM keeps the state pages in its KV pool: no rows of their own. */
static void test_vllm_has_no_rows(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, LLAMA, "--engine=vllm", "--max-model-len=4096");
    kvshard_blocks b = blocks_at(p, KVSHARD_ALL_RANKS, 20 * GIB);
    assert_false(b.has_state_slots);
    assert_int_equal(b.state_slots, 0);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kvshard_profile_rows_are_max_seqs),
        cmocka_unit_test(test_xllm_rows_per_rank),
        cmocka_unit_test(test_sglang_rows_are_its_slots),
        cmocka_unit_test(test_vllm_has_no_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
