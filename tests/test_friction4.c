/* Papercuts new users met: what the report says of the machine that wrote
 * it, blocks at a measured memory, fit's help and errors, and the capacity
 * of a plan whose stages have budgets of their own. */
#include "test_util.h"

#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* examples/NAME planned with the flags given (NULL-ended). */
static kvshard_plan *plan_example(const char *name, ...)
{
    const char *args[16];
    size_t n = 0;
    va_list ap;
    va_start(ap, name);
    for (const char *a = va_arg(ap, const char *); a && n < 16; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    char *path = tu_example_path(name);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    tu_assert_ok(kvshard_deployment_apply_args(dep, n, args, 0, &err), &err);
    kvshard_plan *plan = NULL;
    tu_assert_ok(kvshard_deployment_plan(&plan, dep, &err), &err);
    kvshard_deployment_free(dep);
    return plan;
}

static char *report_of(const kvshard_plan *plan, int argc, const char *const *argv)
{
    kvshard_report_options about = KVSHARD_REPORT_OPTIONS_INIT;
    about.argc = argc;
    about.argv = argv;
    char *page = NULL;
    assert_int_equal(kvshard_report_write_html(plan, NULL, &about, tu_append, &page), KVSHARD_OK);
    return page;
}

/* The page names the file it was written to by its base name only, in
 * each spelling of the output flag: the directory is the writer's own. */
static void test_report_output_path(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_example("qwen3_5_35b_a3b_tp4.yaml", NULL);
    const char *split[] = {"/opt/bin/kvshard", "report", "seed.yaml", "-o",
                           "/home/alice/shared/seed.html"};
    char *page = report_of(plan, 5, split);
    tu_assert_contains(page, "made by <code>kvshard report seed.yaml -o seed.html</code>");
    assert_null(strstr(page, "/home/alice"));
    free(page);
    const char *joined[] = {"kvshard", "report", "seed.yaml", "--output=/home/alice/seed.html"};
    page = report_of(plan, 4, joined);
    tu_assert_contains(page, "made by <code>kvshard report seed.yaml --output=seed.html</code>");
    assert_null(strstr(page, "/home/alice"));
    free(page);
    const char *spaced[] = {"kvshard", "report", "seed.yaml", "--output", "out/my page.html"};
    page = report_of(plan, 5, spaced);
    tu_assert_contains(page, "made by <code>kvshard report seed.yaml --output &#39;my "
                             "page.html&#39;</code>");
    free(page);
    kvshard_plan_free(plan);
}

/* The seed at 32,768 tokens and 19 GiB measured, by hand: 6 KiB a token (5
 * KiB of KV, 1 KiB of scratch) x 16 = 98,304 B a block; 128 sequences of
 * 16,097,280 B of state = 2,060,451,840 B reserved; (20,401,094,656 -
 * 2,060,451,840) / 98,304 = 186,570 blocks. A sequence takes 32,768 / 16 =
 * 2,048 blocks: 186,570 / 2,048 = 91 at once; balanced, 20,401,094,656 /
 * (16,097,280 + 2,048 x 98,304) = 93. A budget with no context length asks
 * at the plan's, as max_seqs always did. */
static void test_blocks_for_plan_context(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_example("qwen3_5_35b_a3b_tp4.yaml", "--context_length=32768", NULL);
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    budget.memory_per_rank = 19ull << 30;
    kvshard_blocks b = KVSHARD_BLOCKS_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, KVSHARD_ALL_RANKS, &budget, &err), &err);
    assert_int_equal(b.num_blocks, 186570);
    assert_true(b.has_concurrency);
    assert_int_equal(b.concurrency, 91);
    assert_true(b.has_balanced_max_seqs);
    assert_int_equal(b.balanced_max_seqs, 93);
    assert_true(b.has_max_seqs);
    assert_int_equal(b.max_seqs, 91);
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    tu_assert_ok(kvshard_plan_blocks_figure(&f, plan, KVSHARD_ALL_RANKS, &budget, "concurrency",
                                            &err),
                 &err);
    assert_int_equal(f.uint_value, 91);
    /* A length given still wins: 65,536 tokens are 4,096 blocks, 45 at once. */
    budget.context_length = 65536;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, KVSHARD_ALL_RANKS, &budget, &err), &err);
    assert_int_equal(b.concurrency, 45);
    assert_int_equal(b.max_seqs, 91);
    kvshard_plan_free(plan);
    /* A plan without a context length has no concurrency to give. */
    plan = plan_example("qwen3_5_35b_a3b_tp4.yaml", NULL);
    budget.context_length = 0;
    tu_assert_ok(kvshard_plan_blocks_for(&b, plan, KVSHARD_ALL_RANKS, &budget, &err), &err);
    assert_false(b.has_concurrency);
    assert_false(b.has_max_seqs);
    kvshard_plan_free(plan);
}

/* fit asks for the weights it takes; plan still names weights_per_rank,
 * which only plan reads. */
static void test_fit_missing_weights(void **state)
{
    (void)state;
    char *model = tu_example_path("models/qwen3_5_35b_a3b.json");
    char command[4096];
    char *out = NULL, *err = NULL;
    snprintf(command, sizeof command, "%s fit %s --gpus=8 --device_memory=80GiB", KVSHARD_CLI,
             model);
    assert_int_equal(tu_run(command, &out, &err), 1);
    tu_assert_contains(err, "device_memory needs the weights of a rank: give weights_total with "
                            "weights_experts, or safetensors files in ");
    tu_assert_contains(err, " (their headers, or model.safetensors.index.json alone)");
    assert_null(strstr(err, "weights_per_rank"));
    free(out);
    free(err);
    snprintf(command, sizeof command, "%s plan %s --world_size=4 --device_memory=80GiB",
             KVSHARD_CLI, model);
    assert_int_equal(tu_run(command, &out, &err), 1);
    tu_assert_contains(err, "give weights_per_rank, weights_total (with weights_experts), or ");
    free(out);
    free(err);
    free(model);
}

/* fit's help lists what fit reads, with the defaults it plans with; what
 * it searches or works out itself is named apart, with no default. */
static void test_help_fit(void **state)
{
    (void)state;
    char command[4096];
    char *out = NULL;
    snprintf(command, sizeof command, "%s help fit", KVSHARD_CLI);
    assert_int_equal(tu_run(command, &out, NULL), 0);
    tu_assert_contains(out, "usage: kvshard fit MODEL ");
    tu_assert_contains(out, "\nMODEL is a deployment YAML file");
    tu_assert_contains(out, "they override MODEL.");
    tu_assert_contains(out, "  --memory_utilization        a fraction above 0, at most 1; "
                            "default 0.9\n");
    const char *unread = strstr(out, "\nnot read by fit,");
    assert_non_null(unread);
    const char *names[] = {"--world_size", "--cp_size", "--layerwise_split_size",
                           "--ownership", "--memory_per_rank", "--pp_partition,",
                           "--sweep_pp", "--weights_per_rank"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *at = strstr(out, names[i]);
        assert_non_null(at);
        assert_true(at > unread); /* only in the list of what fit does not read */
    }
    tu_assert_contains(out, "  --dp_size ");
    tu_assert_contains(out, "  --pp_size, --pipeline_parallel_size");
    free(out);
    /* plan reads them all, and its utilization default is the same 0.9. */
    snprintf(command, sizeof command, "%s help plan", KVSHARD_CLI);
    assert_int_equal(tu_run(command, &out, NULL), 0);
    tu_assert_contains(out, "  --world_size ");
    tu_assert_contains(out, "default 0.9\n");
    assert_null(strstr(out, "not read by fit"));
    free(out);
    kvshard_flag_info f = KVSHARD_FLAG_INFO_INIT;
    for (size_t i = 0; kvshard_flag_info_at(&f, KVSHARD_ENGINE_KVSHARD, i) == KVSHARD_OK; i++)
        assert_int_equal(f.fit_reads, strcmp(f.name, "world_size") != 0 &&
                                          strcmp(f.name, "layerwise_split_size") != 0 &&
                                          strcmp(f.name, "ownership") != 0 &&
                                          strcmp(f.name, "cp_size") != 0 &&
                                          strcmp(f.name, "memory_per_rank") != 0 &&
                                          strcmp(f.name, "pp_partition") != 0 &&
                                          strcmp(f.name, "sweep_pp") != 0 &&
                                          strcmp(f.name, "weights_per_rank") != 0);
}

/* DeepSeek-V3.2 on 2 stages of TP 8, split 8, fp8, 64-token blocks, the
 * MTP layer counted, budgets from an 80 GiB GPU, by hand:
 * usable 85,899,345,920 x 0.9 = 77,309,411,328, less the 4 GiB reserve
 * 4,294,967,296. Weights a rank, dense 674,030,337,216 - 654,068,416,512 =
 * 19,961,920,704 over 61 layers x T 8: stage 1 (30 layers) ceil(19,961,920,704
 * x 30 / 488) + ceil(654,068,416,512 x 30 / 488) = 1,227,167,257 +
 * 40,209,123,966 = 41,436,291,223, budget 31,578,152,809 (29.41 GiB);
 * stage 0 (31 layers) 1,268,072,832 + 41,549,428,099 = 42,817,500,931,
 * budget 30,196,943,101 (28.12 GiB). A stage-1 rank of 4 KV layers holds
 * them, the MTP layer and the scratch layer: 6 x 788 B x 64 = 302,592 B a
 * block, 31,578,152,809 / 302,592 = 104,358 blocks (stage 0: 5 x 788 x 64
 * = 252,160 B, 119,753 blocks), so stage 1 binds; 104,358 x 64 = 6,678,912
 * tokens. The smallest budget, stage 0's, never stands beside them. */
static kvshard_plan *deepseek_two_stages(void)
{
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/deepseek_v3_2.json", "--world_size=16", "--pp_size=2",
            "--enable_layerwise_split=true", "--layerwise_split_size=8", "--kv_cache_dtype=fp8",
            "--block_size=64", "--num_speculative_tokens=1", "--device_memory=80GiB",
            "--weights_total=674030337216", "--weights_experts=654068416512");
    return plan;
}

static void test_stage_budget_beside_blocks(void **state)
{
    (void)state;
    kvshard_plan *plan = deepseek_two_stages();
    assert_int_equal(tu_figure(plan, "num_blocks"), 104358);
    char *text = tu_plan_text(plan);
    tu_assert_contains(text, "\ncapacity   binding stage 1: budget 29.41 GiB, no state to "
                             "reserve: 104,358 blocks of 302,592 B = 6,678,912 tokens\n");
    assert_null(strstr(text, "28.12 GiB per rank"));
    free(text);
    char *page = report_of(plan, 0, NULL);
    tu_assert_contains(page, "<tr><th scope=\"row\">budget</th><td>31,578,152,809 B (29.41 "
                             "GiB) on binding stage 1, whose blocks every rank allocates"
                             "</td></tr>");
    tu_assert_contains(page, "<tr><th scope=\"row\">bytes per block</th><td>302,592 B (295.50 "
                             "KiB) on binding stage 1, the largest, 64 tokens a block</td></tr>");
    tu_assert_contains(page, "<tr><th scope=\"row\">blocks per rank</th><td>104,358</td></tr>");
    assert_null(strstr(page, "memory per rank"));
    free(page);
    kvshard_plan_free(plan);
}

/* The split table's header lists each stage's budget, as the rows' blocks
 * come from their own binding stage. */
static void test_split_table_stage_budgets(void **state)
{
    (void)state;
    char *model = tu_example_path("models/deepseek_v3_2.json");
    char command[4096];
    snprintf(command, sizeof command,
             "%s report %s --world_size=16 --pp_size=2 --enable_layerwise_split=true "
             "--layerwise_split_size=8 --kv_cache_dtype=fp8 --block_size=64 "
             "--num_speculative_tokens=1 --device_memory=80GiB --weights_total=674030337216 "
             "--weights_experts=654068416512 -o -",
             KVSHARD_CLI, model);
    char *out = NULL;
    assert_int_equal(tu_run(command, &out, NULL), 0);
    tu_assert_contains(out, "under each ownership rule, each stage's budget from the device: "
                            "stage 0 30,196,943,101 B (28.12 GiB), stage 1 31,578,152,809 B "
                            "(29.41 GiB); max_seqs 256.");
    free(out);
    free(model);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_output_path),
        cmocka_unit_test(test_blocks_for_plan_context),
        cmocka_unit_test(test_fit_missing_weights),
        cmocka_unit_test(test_help_fit),
        cmocka_unit_test(test_stage_budget_beside_blocks),
        cmocka_unit_test(test_split_table_stage_budgets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
