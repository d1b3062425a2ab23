/* The report with device inputs draws the whole device: each distinct
 * rank's bar spans device_memory, its weights, activation reserve and the
 * headroom memory_utilization leaves before its budget; the Capacity table
 * names the budget and repeats the text plan's device line. Every figure is
 * worked out by hand beside it. */
#include "test_util.h"

#include "kvshard/output.h"
#include "output/report_chart.h"
#include "plan/queries.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1ull << 30)

static char *report_of(const kvshard_plan *plan)
{
    char *page = NULL;
    assert_int_equal(kvshard_report_write_html(plan, NULL, NULL, tu_append, &page), KVSHARD_OK);
    return page;
}

/* DeepSeek-V3.2 on 2 stages of TP 8, split 8, fp8, 64-token blocks, the
 * MTP layer counted, an 80 GiB GPU: 85,899,345,920 B x 0.9 =
 * 77,309,411,328 usable, so the headroom is 8,589,934,592 B (8.00 GiB);
 * the activation reserve 4 GiB. A rank's weights: dense 674,030,337,216 -
 * 654,068,416,512 = 19,961,920,704 B shared by 61 layers and 8 ranks.
 * Stage 0 (31 layers): ceil(19,961,920,704 x 31 / 488) + ceil(654,068,416,512
 * x 31 / 488) = 1,268,072,832 + 41,549,428,099 = 42,817,500,931 B (39.88
 * GiB), budget 77,309,411,328 - 4,294,967,296 - 42,817,500,931 =
 * 30,196,943,101. Stage 1 (30 layers): 1,227,167,257 + 40,209,123,966 =
 * 41,436,291,223 B (38.59 GiB), budget 31,578,152,809. */
#define DS_USABLE 77309411328ull
#define DS_RESERVE (4 * GIB)
#define DS_WEIGHTS0 42817500931ull
#define DS_WEIGHTS1 41436291223ull

static kvshard_plan *deepseek_two_stages(void)
{
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/deepseek_v3_2.json", "--world_size=16", "--pp_size=2",
            "--enable_layerwise_split=true", "--layerwise_split_size=8", "--kv_cache_dtype=fp8",
            "--block_size=64", "--num_speculative_tokens=1", "--device_memory=80GiB",
            "--weights_total=674030337216", "--weights_experts=654068416512");
    return plan;
}

/* Every bar spans the device: its parts add up to device_memory, the
 * weights of its own stage first. */
static void test_bars_span_the_device(void **state)
{
    (void)state;
    assert_int_equal(80 * GIB - DS_USABLE, 8589934592ull);
    assert_int_equal(DS_USABLE - DS_RESERVE - DS_WEIGHTS0, 30196943101ull);
    assert_int_equal(DS_USABLE - DS_RESERVE - DS_WEIGHTS1, 31578152809ull);
    kvshard_plan *plan = deepseek_two_stages();
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_report__bar bars[16];
    size_t n = kvshard_report__bars(bars, 16, &v);
    assert_true(n >= 2);
    bool stage[2] = {false, false};
    for (size_t b = 0; b < n; b++) {
        uint32_t s = bars[b].rank / 8;
        stage[s] = true;
        assert_int_equal(bars[b].span, 80 * GIB);
        assert_int_equal(bars[b].part[KVSHARD_REPORT__WEIGHTS], s ? DS_WEIGHTS1 : DS_WEIGHTS0);
        assert_int_equal(bars[b].part[KVSHARD_REPORT__ACTIVATIONS], DS_RESERVE);
        assert_int_equal(bars[b].part[KVSHARD_REPORT__HEADROOM], 80 * GIB - DS_USABLE);
        assert_int_equal(bars[b].budget, DS_USABLE - DS_RESERVE - bars[b].part[0]);
        uint64_t sum = 0, budget = 0;
        for (int k = 0; k < KVSHARD_REPORT__PARTS; k++) {
            sum += bars[b].part[k];
            if (k >= KVSHARD_REPORT__STATE)
                budget += bars[b].part[k];
        }
        assert_int_equal(sum, 80 * GIB);
        assert_int_equal(budget, bars[b].budget);
    }
    assert_true(stage[0] && stage[1]);
    kvshard_plan_free(plan);
}

/* The page shows the figures: 39.88 GiB and 38.59 GiB of weights, the
 * 4.00 GiB reserve and 8.00 GiB of headroom, on an axis to 80 GiB (ticks
 * every 10 GiB), and the Capacity table's budget and device rows. */
static void test_page_shows_the_device(void **state)
{
    (void)state;
    kvshard_plan *plan = deepseek_two_stages();
    char *page = report_of(plan);
    /* Stage 0's budget 30,196,943,101 B is 28.12 GiB, stage 1's 29.41 GiB. */
    tu_assert_contains(page, ">weights 39.88 GiB \xC2\xB7 activation reserve 4.00 GiB \xC2\xB7 "
                             "headroom 8.00 GiB \xC2\xB7 budget 28.12 GiB</text>");
    tu_assert_contains(page, ">weights 38.59 GiB \xC2\xB7 activation reserve 4.00 GiB \xC2\xB7 "
                             "headroom 8.00 GiB \xC2\xB7 budget 29.41 GiB</text>");
    tu_assert_contains(page, "weights of the rank's stage, 42,817,500,931 B (39.88 GiB)");
    tu_assert_contains(page, "what memory_utilization leaves of the device, 8,589,934,592 B "
                             "(8.00 GiB)");
    tu_assert_contains(page, "Each distinct rank's whole device, on one scale: the weights");
    tu_assert_contains(page, ">80</text>");
    tu_assert_contains(page, "scale in GiB");
    tu_assert_contains(page, "<tr><th scope=\"row\">budget</th><td>31,578,152,809 B (29.41 "
                             "GiB) on binding stage 1");
    tu_assert_contains(page, "<tr><th scope=\"row\">device</th><td>85,899,345,920 B (80.00 "
                             "GiB) x 0.9 = 77,309,411,328 usable; activation_reserve "
                             "4,294,967,296 B; weights from weights_total (674,030,337,216 B, "
                             "654,068,416,512 B of experts)</td></tr>");
    /* The row is the text plan's device line. */
    char *text = tu_plan_text(plan);
    tu_assert_contains(text, "\ndevice     85,899,345,920 B (80.00 GiB) x 0.9 = 77,309,411,328 "
                             "usable; activation_reserve 4,294,967,296 B; weights from "
                             "weights_total (674,030,337,216 B, 654,068,416,512 B of experts)\n");
    free(text);
    free(page);
    kvshard_plan_free(plan);
}

/* One stage: the device row ends as the text line does, with what a rank's
 * weights leave. Llama 3.1 8B on one 80 GiB GPU with 16e9 B of weights:
 * 77,309,411,328 - 4,294,967,296 - 16,000,000,000 = 57,014,444,032 B. */
static void test_one_stage_budget_row(void **state)
{
    (void)state;
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/llama3_1_8b.json", "--world_size=1", "--device_memory=80GiB",
            "--weights_total=16000000000", "--weights_experts=0");
    char *page = report_of(plan);
    tu_assert_contains(page, "<tr><th scope=\"row\">budget</th><td>57,014,444,032 B (53.10 "
                             "GiB) per rank</td></tr>");
    tu_assert_contains(page, "; a rank holds 16,000,000,000 B of weights, leaving "
                             "57,014,444,032 B</td></tr>");
    tu_assert_contains(page, ">weights 14.90 GiB \xC2\xB7 activation reserve 4.00 GiB \xC2\xB7 "
                             "headroom 8.00 GiB \xC2\xB7 budget 53.10 GiB</text>");
    free(page);
    kvshard_plan_free(plan);
}

/* Without device inputs a bar spans the budget alone, as before. */
static void test_budget_alone_without_device(void **state)
{
    (void)state;
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/llama3_1_8b.json", "--world_size=1", "--memory_per_rank=20GiB");
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_report__bar bar;
    assert_int_equal(kvshard_report__bars(&bar, 1, &v), 1);
    assert_int_equal(bar.span, 20 * GIB);
    assert_int_equal(bar.part[KVSHARD_REPORT__WEIGHTS], 0);
    assert_int_equal(bar.part[KVSHARD_REPORT__HEADROOM], 0);
    char *page = report_of(plan);
    assert_null(strstr(page, "headroom"));
    tu_assert_contains(page, "Each distinct rank's budget, on one scale");
    assert_null(strstr(page, "<tr><th scope=\"row\">device</th>"));
    tu_assert_contains(page, "<tr><th scope=\"row\">budget</th><td>21,474,836,480 B (20.00 "
                             "GiB) per rank</td></tr>");
    free(page);
    kvshard_plan_free(plan);
}

/* Qwen3.5-35B-A3B at 131,072 tokens on 8 x H100 (81,559 MiB) under vLLM
 * 0.28.0. The budget: ceil(85,520,809,984 x 0.92) = 78,679,145,186
 * requested, less a rank's weights 69,321,223,296 / 8 = 8,665,152,912 and
 * the reserve 85,520,809,984 / 20 = 4,276,040,499: B = 65,737,951,775. A
 * layer's page is 272 tokens x 1,024 B (one KV head of 256 at TP 8, K and
 * V in bf16) = 278,528 B; 10 full-attention and 30 GDN layers make groups
 * of g = 10 (30 >= 1.5 x 10), one attention and three state groups, so
 * 2,785,280 B a block and floor(floor(B / 278,528) / 10) = 23,601 blocks,
 * 23,600 usable after the null block. A request of 131,072 tokens takes
 * ceil(131,072 / 272) = 482 attention blocks and 2 in each state group:
 * 488, so floor(23,600 / 488) = 48 run at once, the engine's
 * --max-num-seqs. */
#define QWEN_VLLM                                                                                  \
    "--engine=vllm -tp 8 --context_length=131072 --device_memory=81559MiB "                       \
    "--weights_total=69321223296 --weights_experts=64424509440"

static char *cli_report(const char *model, const char *flags)
{
    char *path = tu_example_path(model);
    char command[4096];
    snprintf(command, sizeof command, "%s report %s %s -o -", KVSHARD_CLI, path, flags);
    char *out = NULL;
    assert_int_equal(tu_run(command, &out, NULL), 0);
    free(path);
    return out;
}

static void test_vllm_figures_by_hand(void **state)
{
    (void)state;
    uint64_t device = 81559ull << 20;
    uint64_t budget = 78679145186ull - 69321223296ull / 8 - device / 20;
    assert_int_equal(budget, 65737951775ull);
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/qwen3_5_35b_a3b.json", "--engine=vllm", "-tp", "8",
            "--context_length=131072", "--device_memory=81559MiB",
            "--weights_total=69321223296", "--weights_experts=64424509440");
    assert_int_equal(tu_efig(plan, "budget"), budget);
    assert_int_equal(tu_efig(plan, "page_bytes"), 272 * 1024);
    assert_int_equal(tu_efig(plan, "num_gpu_blocks"), budget / (272 * 1024) / 10);
    assert_int_equal(tu_efig(plan, "num_gpu_blocks"), 23601);
    assert_int_equal(tu_figure(plan, "balanced_max_seqs"), 23600 / (482 + 3 * 2));
    assert_int_equal(tu_figure(plan, "balanced_max_seqs"), 48);
    kvshard_plan_free(plan);
}

/* Under vLLM the pool of 23,601 blocks of 2,785,280 B divides by the KV
 * cache groups: the 48 sequences at once hold 482 blocks each in the
 * attention group (48 x 482 = 23,136) and 2 in each of the three state
 * groups (48 x 6 = 288); 23,601 - 23,424 = 177 blocks are free. */
static void test_vllm_pool_by_groups(void **state)
{
    (void)state;
    const uint64_t block = 2785280;
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/qwen3_5_35b_a3b.json", "--engine=vllm", "-tp", "8",
            "--context_length=131072", "--device_memory=81559MiB",
            "--weights_total=69321223296", "--weights_experts=64424509440");
    assert_int_equal(tu_efig(plan, "bytes_per_block"), block);
    assert_int_equal(tu_efig(plan, "kv_cache_groups"), 4);
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_report__bar bar;
    assert_int_equal(kvshard_report__bars(&bar, 1, &v), 1);
    assert_int_equal(bar.part[KVSHARD_REPORT__POOL_KV], 48ull * 482 * block);
    assert_int_equal(bar.part[KVSHARD_REPORT__POOL_STATE], 48ull * 3 * 2 * block);
    assert_int_equal(bar.part[KVSHARD_REPORT__POOL_FREE], 177ull * block);
    assert_int_equal(bar.part[KVSHARD_REPORT__KV], 0);
    assert_int_equal(bar.part[KVSHARD_REPORT__BLOCKS], 0);
    uint64_t sum = 0;
    for (int k = 0; k < KVSHARD_REPORT__PARTS; k++)
        sum += bar.part[k];
    assert_int_equal(sum, bar.budget);
    kvshard_plan_free(plan);

    char *page = cli_report("models/qwen3_5_35b_a3b.json", QWEN_VLLM);
    /* 64,440,238,080 B = 60.01 GiB; 802,160,640 B = 765.00 MiB. */
    tu_assert_contains(page, "attention KV pages 60.01 GiB \xC2\xB7 state pages 765.00 MiB "
                             "\xC2\xB7 free pages 470.16 MiB");
    tu_assert_contains(page, "23,136 \xC3\x97 2,785,280 B = 64,440,238,080 B (60.01 GiB)");
    tu_assert_contains(page, "288 \xC3\x97 2,785,280 B = 802,160,640 B (765.00 MiB)");
    free(page);
}

/* Without a context length no sequences hold the pool: it is drawn whole. */
static void test_vllm_pool_whole_without_length(void **state)
{
    (void)state;
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/qwen3_5_35b_a3b.json", "--engine=vllm", "-tp", "8",
            "--device_memory=81559MiB", "--weights_total=69321223296",
            "--weights_experts=64424509440");
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_report__bar bar;
    assert_int_equal(kvshard_report__bars(&bar, 1, &v), 1);
    assert_int_equal(bar.part[KVSHARD_REPORT__POOL_STATE], 0);
    assert_int_equal(bar.part[KVSHARD_REPORT__KV], 23601ull * 2785280);
    kvshard_plan_free(plan);
}

/* The split table keeps the rows vLLM runs, S = 1 under each rule, says
 * in one line why the rest are left out, and recommends vLLM's flags. */
static void test_vllm_split_table(void **state)
{
    (void)state;
    char *page = cli_report("models/qwen3_5_35b_a3b.json", QWEN_VLLM);
    assert_null(strstr(page, "class=\"err\""));
    assert_null(strstr(page, "engine_split_unsupported"));
    tu_assert_contains(page, "<p class=\"sub\">9 rows of split sizes above 1 are left out "
                             "(vLLM has no layerwise split: every rank keeps every layer&#39;s "
                             "KV).</p>");
    tu_assert_contains(page, "<p>Recommended: <code>--tensor-parallel-size=8 "
                             "--gpu-memory-utilization=0.92 --max-model-len=131072 "
                             "--max-num-seqs=48</code></p>");
    assert_null(strstr(page, "--enable_layerwise_split"));
    const char *table = strstr(page, "<section id=\"compare\">");
    assert_non_null(table);
    size_t rows = 0;
    for (const char *r = table; (r = strstr(r, "<td class=\"n\">1</td><td>")) != NULL; r++)
        rows++;
    assert_int_equal(rows, 3);
    free(page);
}

/* TensorRT-LLM plans a split size above 1 as kvshard would but cannot run
 * it: those rows are left out too, and their warnings leave the notes. The
 * flags are the engine's, its batch the plan's balanced max_seqs. */
static void test_trtllm_split_table(void **state)
{
    (void)state;
    const char *flags = "--engine=trtllm --tp_size=2 --world_size=2 --device_memory=80GiB "
                        "--weights_total=16000000000 --weights_experts=0 --context_length=8192";
    kvshard_plan *plan = NULL;
    TU_PLAN(&plan, "models/llama3_1_8b.json", "--engine=trtllm", "--tp_size=2",
            "--world_size=2", "--device_memory=80GiB", "--weights_total=16000000000",
            "--weights_experts=0", "--context_length=8192");
    char want[256];
    snprintf(want, sizeof want,
             "<p>Recommended: <code>--tp_size=2 --max_seq_len=8192 --max_batch_size=%llu "
             "--kv_cache_free_gpu_memory_fraction=0.9</code></p>",
             (unsigned long long)tu_figure(plan, "balanced_max_seqs"));
    kvshard_plan_free(plan);
    char *page = cli_report("models/llama3_1_8b.json", flags);
    tu_assert_contains(page, want);
    tu_assert_contains(page, "<p class=\"sub\">3 rows of split sizes above 1 are left out (the "
                             "engine has no layerwise split: every rank keeps every layer&#39;s "
                             "KV).</p>");
    assert_null(strstr(page, "<td class=\"n\">2</td><td>ordinal</td>"));
    assert_null(strstr(page, "exceeds_<wbr/>replication"));
    free(page);
}

/* Under kvshard's profile the split table keeps every size and kvshard's
 * flags. */
static void test_kvshard_split_table_whole(void **state)
{
    (void)state;
    char *page = cli_report("models/qwen3_5_35b_a3b.json",
                            "--world_size=8 --context_length=131072 --memory_per_rank=20GiB");
    assert_null(strstr(page, "are left out"));
    tu_assert_contains(page, "<td class=\"n\">8</td><td>contiguous</td>");
    tu_assert_contains(page, "<p>Recommended: <code>--enable_layerwise_split=");
    free(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bars_span_the_device),
        cmocka_unit_test(test_page_shows_the_device),
        cmocka_unit_test(test_one_stage_budget_row),
        cmocka_unit_test(test_budget_alone_without_device),
        cmocka_unit_test(test_vllm_figures_by_hand),
        cmocka_unit_test(test_vllm_split_table),
        cmocka_unit_test(test_vllm_pool_by_groups),
        cmocka_unit_test(test_vllm_pool_whole_without_length),
        cmocka_unit_test(test_trtllm_split_table),
        cmocka_unit_test(test_kvshard_split_table_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
