/* Pipeline stages with their own budgets under an engine profile:
 * non_kv_memory as one size or one a stage, vLLM sizing each stage from
 * its own, SGLang running every stage with the largest, the weights of
 * each stage filling it from device_memory, and kvshard fit's staged rows.
 * Every figure is worked out from those rules beside it. */
#include "test_util.h"
#include "kvshard/explore.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LLAMA "models/llama3_1_8b.json"
#define GIB (1ull << 30)
#define MIB (1ull << 20)

/* Llama 3.1 8B: 32 full-attention layers, 8 KV heads of 128; bf16 KV. On
 * one TP rank a layer keeps 2 x 8 x 128 x 2 = 4,096 bytes a token, so a
 * stage of 16 layers 65,536, and vLLM's block of 16 tokens 1 MiB. */
#define STAGE_TOKEN 65536ull
#define VLLM_BLOCK (16ull * STAGE_TOKEN)

/* vLLM from 0.14.0 requests ceil(total x u), u = 0.92 from 0.20.0. */
static uint64_t vllm_requested(uint64_t total)
{
    return (uint64_t)ceil((double)total * 0.92);
}

static uint64_t rank_budget(const kvshard_plan *p, uint32_t plan_rank, uint64_t *blocks)
{
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, p, plan_rank), KVSHARD_OK);
    assert_true(m.has_budget);
    assert_true(m.has_num_blocks);
    *blocks = m.num_blocks;
    return m.budget;
}

#define VLLM_TWO_STAGES                                                                            \
    LLAMA, "--engine=vllm", "-tp", "1", "-pp", "2", "--max-model-len", "8192",                     \
        "--device_memory_total", "80GiB"

/* Each stage's workers have their own B = requested - non_kv_memory of
 * the stage; the engine takes the fewest blocks over the stages. */
static void test_vllm_budget_a_stage(void **state)
{
    (void)state;
    uint64_t requested = vllm_requested(80 * GIB);
    assert_int_equal(requested, 79027398247ull);
    uint64_t b0 = requested - 20 * GIB, b1 = requested - 30 * GIB;
    kvshard_plan *p;
    TU_PLAN(&p, VLLM_TWO_STAGES, "--non_kv_memory", "20GiB,30GiB");
    uint64_t blocks;
    assert_int_equal(rank_budget(p, 0, &blocks), b0);
    assert_int_equal(blocks, b0 / VLLM_BLOCK);
    assert_int_equal(blocks, 54886);
    assert_int_equal(rank_budget(p, 1, &blocks), b1);
    assert_int_equal(blocks, b1 / VLLM_BLOCK);
    assert_int_equal(blocks, 44646);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 44646);
    assert_int_equal(tu_efig(p, "binding_stage"), 1);
    assert_int_equal(tu_efig(p, "budget"), b1); /* the smallest */
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "stage 0    layers 0–15, 16 cache layers (group size 16): 54,886 "
                             "blocks of 1,048,576 B; budget 53.6 GiB");
    tu_assert_contains(text, "stage 1    layers 16–31, 16 cache layers (group size 16): 44,646 "
                             "blocks of 1,048,576 B; budget 43.6 GiB  ◀ binds");
    free(text);
    kvshard_plan_free(p);

    /* One size is every stage's: the same as the list of it twice. */
    kvshard_plan *one, *two;
    TU_PLAN(&one, VLLM_TWO_STAGES, "--non_kv_memory", "30GiB");
    TU_PLAN(&two, VLLM_TWO_STAGES, "--non_kv_memory", "30GiB, 30GiB");
    assert_int_equal(rank_budget(one, 0, &blocks), b1);
    assert_int_equal(rank_budget(two, 0, &blocks), b1);
    assert_int_equal(kvshard_plan_digest(one), kvshard_plan_digest(two));
    kvshard_plan_free(one);
    kvshard_plan_free(two);
}

static void test_stage_count_refused(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_ERANGE,
               "vllm profile: engine_flag_value: non_kv_memory has 3 sizes; pp_size is 2 (give "
               "one size, or one a stage)",
               VLLM_TWO_STAGES, "--non_kv_memory", "20GiB,30GiB,30GiB");
    TU_REFUSED(KVSHARD_ERANGE, "non_kv_memory has 2 sizes; pp_size is 1", LLAMA,
               "--engine=vllm", "--max-model-len", "8192", "--device_memory_total", "80GiB",
               "--non_kv_memory", "20GiB,30GiB");
    TU_REFUSED(KVSHARD_ERANGE, "sglang profile: engine_flag_value: non_kv_memory has 3 sizes; "
                               "pp_size is 2",
               LLAMA, "--engine=sglang", "--tp-size", "1", "--pp-size", "2",
               "--context-length", "8192", "--device_memory_free", "80GiB",
               "--mem-fraction-static", "0.9", "--non_kv_memory", "1GiB,2GiB,3GiB");
    TU_REFUSED(KVSHARD_ETYPE, "non_kv_memory: \"20GiB,,30GiB\" has an empty entry 1",
               VLLM_TWO_STAGES, "--non_kv_memory", "20GiB,,30GiB");
    TU_REFUSED(KVSHARD_ETYPE, "non_kv_memory", VLLM_TWO_STAGES, "--non_kv_memory",
               "20GiB,lots");
}

/* SGLang's free figures are minima over its world: the largest
 * non_kv_memory binds every stage. rest = (free - non_kv) / 2^30 - free /
 * 2^30 x (1 - f), both free figures rounded to float32 (two ranks). */
static void test_sglang_largest_binds(void **state)
{
    (void)state;
    double free_gib = (double)(float)(80.0 * GIB) / GIB;
    double after_gib = (double)(float)(50.0 * GIB) / GIB;
    double rest = after_gib - free_gib * (1 - 0.9);
    uint64_t budget = (uint64_t)(rest * GIB);
    assert_int_equal(budget, 42 * GIB);
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "--engine=sglang", "--tp-size", "1", "--pp-size", "2", "--context-length",
            "8192", "--device_memory_free", "80GiB", "--mem-fraction-static", "0.9",
            "--non_kv_memory", "20GiB,30GiB");
    assert_int_equal(tu_efig(p, "budget"), budget);
    /* Each stage's cell over its 16 layers; page 1. */
    assert_int_equal(tu_efig(p, "cell_bytes"), STAGE_TOKEN);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), budget / STAGE_TOKEN);
    assert_int_equal(tu_efig(p, "max_total_num_tokens"), 688128);
    kvshard_plan_free(p);
}

/* A deployment file writes one a stage as a YAML list, or as the flag's
 * comma string. */
static void test_file_list(void **state)
{
    (void)state;
    const char *forms[] = {"[20GiB, 30GiB]", "\"20GiB,30GiB\""};
    for (size_t i = 0; i < 2; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "model: models/llama3_1_8b.json\n"
                 "parallel:\n  world_size: 2\n  pp_size: 2\n"
                 "cache:\n  engine: vllm\n  max_model_len: 8192\n"
                 "  device_memory_total: 80GiB\n  non_kv_memory: %s\n",
                 forms[i]);
        char *base = tu_example_path("");
        kvshard_deployment *dep = NULL;
        kvshard_error err;
        tu_assert_ok(kvshard_deployment_load_string(&dep, text, strlen(text), "stages.yaml", base,
                                                    NULL, &err),
                     &err);
        free(base);
        kvshard_plan *p = NULL;
        tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
        uint64_t blocks;
        assert_int_equal(rank_budget(p, 1, &blocks), vllm_requested(80 * GIB) - 30 * GIB);
        assert_int_equal(rank_budget(p, 0, &blocks), vllm_requested(80 * GIB) - 20 * GIB);
        kvshard_plan_free(p);
        kvshard_deployment_free(dep);
    }
}

/* The setting's type and its value as text. */
static void test_setting(void **state)
{
    (void)state;
    kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
    assert_int_equal(kvshard_setting_find(&info, "non_kv_memory"), KVSHARD_OK);
    assert_int_equal(info.type, KVSHARD_SETTING_SIZES);
    kvshard_settings *s = tu_settings("non_kv_memory", "40GiB,38GiB", NULL);
    char buf[64];
    bool set = false;
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, &set, s, "non_kv_memory"), KVSHARD_OK);
    assert_true(set);
    assert_string_equal(buf, "40GiB,38GiB");
    tu_set(s, "non_kv_memory", "38GiB");
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, &set, s, "non_kv_memory"), KVSHARD_OK);
    assert_string_equal(buf, "40802189312");
    kvshard_settings_free(s);
}

/* From device_memory, each stage's non_kv_memory is its weights and the
 * reserve, max(1 GiB, device / 20) = 4 GiB under vllm. */
static void test_vllm_fill_a_stage(void **state)
{
    (void)state;
    uint64_t requested = vllm_requested(80 * GIB);
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA, "--engine=vllm", "-tp", "1", "-pp", "2", "--max-model-len", "8192",
            "--device_memory", "80GiB", "--weights_per_rank", "10GiB,12GiB");
    uint64_t blocks;
    assert_int_equal(rank_budget(p, 0, &blocks), requested - 14 * GIB);
    assert_int_equal(blocks, (requested - 14 * GIB) / VLLM_BLOCK);
    assert_int_equal(rank_budget(p, 1, &blocks), requested - 16 * GIB);
    assert_int_equal(blocks, 58982);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 58982);
    kvshard_plan_free(p);
}

/* compare sizes each P's stages from their own weights as the plan does:
 * at T = 2, P = 2 a stage holds ceil(16e9 x 16 / (32 x 2)) = 4e9 bytes. */
static void test_compare_staged(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_VLLM;
    o.world_size = 4;
    o.pp_size = 2;
    o.device_memory = 80 * GIB;
    o.weights_total = 16000000000ull;
    o.context_length = 8192;
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_comparison_create(&c, m, &o, NULL, NULL, &err), &err);
    const kvshard_comparison_row *r = kvshard_comparison_row_at(c, 0);
    uint64_t budget = vllm_requested(80 * GIB) - 4000000000ull - 4 * GIB;
    assert_true(r->has_num_blocks);
    assert_int_equal(r->num_blocks, budget / VLLM_BLOCK);
    assert_int_equal(r->num_blocks, 67455);
    kvshard_comparison_free(c);
    kvshard_model_free(m);
}

static kvshard_fit *llama_fit(kvshard_model **model, kvshard_engine engine)
{
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    *model = m;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 80 * GIB;
    o.weights_total = 16000000000ull;
    o.context_length = 8192;
    o.engine = engine;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    fo.max_pp_size = 2;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    return f;
}

static const kvshard_fit_row *row_of(const kvshard_fit *f, uint32_t tp, uint32_t pp)
{
    for (size_t i = 0; i < kvshard_fit_row_count(f); i++) {
        const kvshard_fit_row *r = kvshard_fit_row_at(f, i);
        if (r->tp_size == tp && r->pp_size == pp && r->dp_size == 1)
            return r;
    }
    fail_msg("no row of tp %u pp %u", tp, pp);
    return NULL;
}

/* fit under vllm on 2 GPUs of 80 GiB, 16 GB of weights, 8k tokens: the
 * staged row's stages hold ceil(16e9 x 16 / 32) = 8e9 bytes each; B =
 * requested - 8e9 - 4 GiB; a request takes 8,192 / 16 = 512 blocks and
 * the engine keeps one block apart. */
static void test_fit_vllm_staged_row(void **state)
{
    (void)state;
    kvshard_model *m;
    kvshard_fit *f = llama_fit(&m, KVSHARD_ENGINE_VLLM);
    const kvshard_fit_row *r = row_of(f, 1, 2);
    uint64_t weights = 8000000000ull;
    uint64_t budget = vllm_requested(80 * GIB) - weights - 4 * GIB;
    assert_true(r->fits);
    assert_int_equal(r->weights_per_rank, weights);
    assert_int_equal(r->budget, budget);
    assert_int_equal(r->num_blocks, budget / VLLM_BLOCK);
    assert_int_equal(r->num_blocks, 63641);
    assert_int_equal(r->seqs_per_replica, (budget / VLLM_BLOCK - 1) / 512);
    assert_int_equal(r->seqs_per_replica, 124);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* fit under sglang: the same stage weights fill non_kv_memory (reserve 0)
 * and f = 0.9; the stage's cell is over its 16 layers, and a request of
 * 8,192 tokens takes 8,192 of them. */
static void test_fit_sglang_staged_row(void **state)
{
    (void)state;
    kvshard_model *m;
    kvshard_fit *f = llama_fit(&m, KVSHARD_ENGINE_SGLANG);
    const kvshard_fit_row *r = row_of(f, 1, 2);
    double pre = (double)(float)(80.0 * GIB) / GIB;
    double post = (double)(float)(80.0 * GIB - 8000000000.0) / GIB;
    uint64_t budget = (uint64_t)((post - pre * (1 - 0.9)) * GIB);
    assert_int_equal(budget, 69309415424ull);
    assert_true(r->fits);
    assert_int_equal(r->weights_per_rank, 8000000000ull);
    assert_int_equal(r->budget, budget);
    assert_int_equal(r->tokens_per_replica, budget / STAGE_TOKEN);
    assert_int_equal(r->seqs_per_replica, budget / STAGE_TOKEN / 8192);
    assert_int_equal(r->seqs_per_replica, 129);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_budget_a_stage),
        cmocka_unit_test(test_stage_count_refused),
        cmocka_unit_test(test_sglang_largest_binds),
        cmocka_unit_test(test_file_list),
        cmocka_unit_test(test_setting),
        cmocka_unit_test(test_vllm_fill_a_stage),
        cmocka_unit_test(test_compare_staged),
        cmocka_unit_test(test_fit_vllm_staged_row),
        cmocka_unit_test(test_fit_sglang_staged_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
