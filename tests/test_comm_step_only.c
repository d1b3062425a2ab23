/* The parts of a priced plan that are worked out on their own: the unsplit
 * reference's step when the split plan has none to compare (no link to
 * price its collectives), and the comm_mechanism_assumed message, which
 * is joined from the profile's and the mechanisms' names. */
#include "test_util.h"

#include "explore/comm.h"

#include <kvshard/explore.h>

#include <stdlib.h>
#include <string.h>

#define SEED_MODEL "models/qwen3_5_35b_a3b.json"
#define SEED_SPLIT                                                                                 \
    "--world_size=4", "--memory_per_rank=20GiB", "--max_seqs=128", "--context_length=32768",       \
        "--weights_total=69321223296", "--weights_experts=64424509440",                            \
        "--enable_layerwise_split=true", "--layerwise_split_size=2"

static kvshard__comm estimate_of(const kvshard_plan *p)
{
    kvshard__comm c;
    kvshard_error err;
    kvshard_error__reset(&err);
    tu_assert_ok(kvshard_comm__of(&c, NULL, p, &err), &err);
    return c;
}

/* A custom accelerator and no link: the split's collectives have bytes
 * but no time, so the split plan has no step, while the reference, which
 * moves nothing, has one; it is the unsplit plan's own. */
static void reference_without_a_link(void **state)
{
    (void)state;
    kvshard_plan *split = NULL, *unsplit = NULL;
    TU_PLAN(&split, SEED_MODEL, SEED_SPLIT, "--comm_accelerator=custom",
            "--comm_hbm_bandwidth=900GB");
    TU_PLAN(&unsplit, SEED_MODEL, "--world_size=4", "--memory_per_rank=20GiB", "--max_seqs=128",
            "--context_length=32768", "--weights_total=69321223296",
            "--weights_experts=64424509440", "--comm_accelerator=custom",
            "--comm_hbm_bandwidth=900GB");
    kvshard__comm s = estimate_of(split), u = estimate_of(unsplit);
    assert_false(s.has_link);
    assert_false(s.has_step);
    assert_false(s.has_gain);
    assert_true(s.has_unsplit);
    assert_true(u.has_step);
    /* 57 sequences unsplit (test_comm works the seed through). */
    assert_int_equal(s.unsplit_batch, 57);
    assert_int_equal(u.batch, 57);
    assert_true(s.unsplit_base_us == u.base_us);
    assert_true(s.unsplit_step_us == u.step_us);
    assert_true(s.unsplit_throughput == u.throughput);
    /* The base step reads the weights and 57 sequences' 32,768 tokens over
     * 900 GB/s; unsplit, the step is the base. */
    assert_true(u.step_us == u.base_us);
    assert_true(u.throughput == 57.0 / u.tpot_us * 1e6);
    kvshard_plan_free(split);
    kvshard_plan_free(unsplit);
}

/* The message as one sentence names them, cut where every warning's
 * message is cut (239 characters and the terminator). */
static void assert_assumed(const char *engine_flag, const char *prefill_flag, const char *want)
{
    kvshard_plan *p = NULL;
    if (prefill_flag)
        TU_PLAN(&p, SEED_MODEL, SEED_SPLIT, "--comm_accelerator=bi_v100", engine_flag,
                prefill_flag);
    else
        TU_PLAN(&p, SEED_MODEL, SEED_SPLIT, "--comm_accelerator=bi_v100", engine_flag);
    const char *got = tu_warning_message(p, KVSHARD_WARN_COMM_MECHANISM_ASSUMED);
    assert_non_null(got);
    assert_string_equal(got, want);
    /* Whole: shorter than the message room, nothing cut. */
    assert_true(strlen(got) < 239);
    kvshard_plan_free(p);
}

static void mechanism_assumed_text(void **state)
{
    (void)state;
    assert_assumed("--engine=kvshard", NULL,
                   "the split's mechanisms are the kvshard profile's (decode owner_attention, "
                   "prefill history_rows),"
                   " published by the engine for DSA models only and so assumed for this "
                   "model: give "
                   "comm_decode and comm_prefill if it does otherwise");
    assert_assumed("--engine=xllm", NULL,
                   "the split's mechanisms are the xllm profile's (decode owner_attention, "
                   "prefill history_rows),"
                   " published by the engine for DSA models only and so assumed for this "
                   "model: give "
                   "comm_decode and comm_prefill if it does otherwise");
    /* A given prefill is named beside the profile's decode. */
    assert_assumed("--engine=kvshard", "--comm_prefill=full_layer",
                   "the split's mechanisms are the kvshard profile's (decode owner_attention, "
                   "prefill full_layer),"
                   " published by the engine for DSA models only and so assumed for this "
                   "model: give "
                   "comm_decode and comm_prefill if it does otherwise");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reference_without_a_link),
        cmocka_unit_test(mechanism_assumed_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
