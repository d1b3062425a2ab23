/* libFuzzer target: read the input as a deployment (or bare model config),
 * build a plan and a comparison from it and write them out; then read it as
 * a model config alone and plan it under a few parallel settings. Any
 * crash, leak or sanitizer report is a finding, and so is an error record
 * that disagrees with the status a call returned. */
#include "kvshard/kvshard.h"
#include "kvshard/output.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int discard(void *user, const char *text, size_t len)
{
    (void)user;
    (void)text;
    (void)len;
    return 0;
}

/* The error must carry the code the call returned, and a message. */
static int check(int rc, const kvshard_error *err)
{
    if (rc != err->code || (rc != KVSHARD_OK && err->message[0] == '\0') ||
        memchr(err->message, '\0', sizeof err->message) == NULL ||
        memchr(err->source, '\0', sizeof err->source) == NULL)
        abort();
    return rc;
}

static void plan_and_emit(const kvshard_model *model, const kvshard_options *options)
{
    kvshard_plan *plan = NULL;
    kvshard_error err;
    if (check(kvshard_plan_create(&plan, model, options, NULL, &err), &err) != KVSHARD_OK)
        return;
    uint32_t T = kvshard_plan_attn_tp_size(plan);
    for (uint32_t layer = 0; layer < kvshard_plan_num_layers(plan) && layer < 64; layer++)
        (void)kvshard_plan_owns(plan, layer % T, layer);
    (void)kvshard_plan_write_json(plan, discard, NULL);
    (void)kvshard_plan_write_text(plan, discard, NULL);
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    kvshard_blocks blocks = KVSHARD_BLOCKS_INIT;
    budget.memory_per_rank = UINT64_C(1) << 34;
    budget.context_length = 4096;
    check(kvshard_plan_blocks_for(&blocks, plan, KVSHARD_ALL_RANKS, &budget, &err), &err);
    kvshard_plan_free(plan);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    /* Relative model paths resolve inside the seed corpus's models. */
    if (check(kvshard_deployment_load_string(&dep, text, size, "fuzz", FUZZ_MODEL_DIR, NULL, &err),
              &err) == KVSHARD_OK) {
        kvshard_plan *plan = NULL;
        if (check(kvshard_deployment_plan(&plan, dep, &err), &err) == KVSHARD_OK) {
            (void)kvshard_plan_write_json(plan, discard, NULL);
            kvshard_plan_free(plan);
        }
        kvshard_options options = KVSHARD_OPTIONS_INIT;
        kvshard_deployment_options(&options, dep);
        if (options.world_size <= 64) {
            kvshard_comparison *cmp = NULL;
            if (check(kvshard_deployment_compare(&cmp, dep, &err), &err) == KVSHARD_OK)
                (void)kvshard_comparison_write_json(cmp, discard, NULL);
            kvshard_comparison_free(cmp);
        }
        kvshard_deployment_free(dep);
    }

    kvshard_model *model = NULL;
    if (check(kvshard_model_load_string(&model, text, size, "fuzz", NULL, &err), &err) ==
        KVSHARD_OK) {
        static const uint32_t worlds[] = {1, 4, 8, 16};
        for (size_t i = 0; i < sizeof worlds / sizeof worlds[0]; i++) {
            kvshard_options o = KVSHARD_OPTIONS_INIT;
            o.world_size = worlds[i];
            o.enable_layerwise_split = true;
            o.layerwise_split_size = 2;
            o.ownership = (kvshard_ownership)(i % 3);
            o.memory_per_rank = UINT64_C(1) << 33;
            o.num_speculative_tokens = (uint32_t)i;
            o.kv_cache_dtype = i == 3 ? KVSHARD_DTYPE_FP8 : KVSHARD_DTYPE_AUTO;
            o.context_length = i == 2 ? 32768 : 0;
            o.engine = i == 1 ? KVSHARD_ENGINE_XLLM : KVSHARD_ENGINE_KVSHARD;
            plan_and_emit(model, &o);
        }
        kvshard_model_free(model);
    }
    return 0;
}
