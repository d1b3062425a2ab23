/* The trtllm profile: TensorRT-LLM's PyTorch backend. The two public
 * start-up logs it is checked against reproduce to the token, and each
 * rule (the estimation run, the fraction as a float32, the caps, the
 * window reduction) is checked from its own arithmetic, worked out in the
 * comments beside it. */
#include "test_util.h"

#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GPT_OSS "trtllm/gpt_oss_120b.json"
#define SMOLLM "trtllm/smollm2_135m.json"
#define NEMOTRON_H "models/nemotron_h_8b.json"
#define QWEN35 "models/qwen3_5_9b.json"
#define DSA "models/deepseek_v3_2.json"

static kvshard_capacity capacity_of(const kvshard_plan *p)
{
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    return c;
}

/* The gpt-oss-120b deployment of the DGX Spark log. */
#define SPARK                                                                                      \
    GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3", "--max_batch_size", "64",             \
        "--disable_overlap_scheduler", "--device_memory_total=128526896333",                       \
        "--peak_memory=122029829137"

/* gpt-oss-120b on a DGX Spark, TensorRT-LLM 1.1.0rc3: every figure the
 * public log prints. */
static void test_gpt_oss_dgx_spark(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SPARK);
    /* c = 2 x 8 heads x 64 x 36 layers (every layer in full) x 2 bytes. */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 73728);
    /* n_in = min(8192, 131071) = 8192, one request, e = 1 with the overlap
     * scheduler off: ceil(8193 / 32) = 257 blocks = 8224 tokens. */
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 8224);
    assert_int_equal(tu_efig(p, "tmp_kv_bytes"), 8224ull * 73728);
    assert_int_equal(tu_efig(p, "tmp_kv_bytes"), 606339072ull);
    /* int((128526896333 - 122029829137 + 606339072) x 0.8999999761581421). */
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 6393065471ull);
    assert_int_equal(tu_efig(p, "budget"), 6393065471ull);
    /* M = floor(6393065471 / 73728) = 86711; ceil(86711 / 32) = 2710. */
    assert_int_equal(tu_efig(p, "max_tokens"), 86711);
    assert_int_equal(tu_efig(p, "num_blocks"), 2710);
    assert_int_equal(tu_efig(p, "pool_tokens"), 86720);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 86720ull * 73728);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 6393692160ull);
    /* S = 131072 > 86720: the window and max_seq_len become 86720. */
    assert_int_equal(tu_efig(p, "max_seq_len"), 86720);
    assert_int_equal(tu_efig(p, "max_batch_size"), 64);
    assert_int_equal(tu_efig(p, "max_num_tokens"), 8192);
    assert_int_equal(tu_efig(p, "tokens_per_block"), 32);
    assert_int_equal(tu_efig(p, "total_memory"), 128526896333ull);
    assert_int_equal(tu_efig(p, "peak_memory"), 122029829137ull);
    kvshard_figure f = tu_engine_figure(p, "free_gpu_memory_fraction");
    assert_int_equal(f.type, KVSHARD_FIGURE_DOUBLE);
    assert_true(f.double_value == (double)0.9f);
    assert_true(tu_efig_null(p, "windows"));
    assert_true(tu_efig_null(p, "state_slots"));
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_WINDOW_REDUCED));
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.engine, KVSHARD_ENGINE_TRTLLM);
    assert_int_equal(c.block_size, 32);
    assert_int_equal(c.num_blocks, 2710);
    assert_int_equal(c.max_tokens, 86720);
    assert_int_equal(c.max_seqs, 64);
    char *text = tu_plan_text(p);
    tu_assert_contains(
        text,
        "capacity   trtllm 1.1.0rc3 profile: Peak memory during memory usage profiling (torch + "
        "non-torch): 113.65 GiB, available KV cache memory when calculating max tokens: 5.95 GiB, "
        "fraction is set 0.8999999761581421, kv size is 73728. device total memory 119.70 GiB, , "
        "tmp kv_mem 0.56 GiB\n"
        "           the engine logs Estimated max memory in KV cache : 5.95 GiB\n"
        "           the engine logs Attention window size 131072 exceeds upper bound 86720 for "
        "available blocks. Reducing to 86720.\n"
        "           the engine logs Number of tokens per block: 32.\n"
        "           the engine logs [MemUsageChange] Allocated 5.95 GiB for max tokens in paged KV "
        "cache (86720).\n"
        "           the engine logs max_seq_len=86720, max_num_requests=64, max_num_tokens=8192, "
        "max_batch_size=64\n");
    free(text);
    char *json = tu_plan_json(p);
    /* The engine object's fields, in their order. */
    static const char *const fields[] = {
        "\"engine\": {\"name\": \"trtllm\"", "\"version\": \"1.1.0rc3\"",
        "\"budget\": 6393065471", "\"total_memory\": 128526896333",
        "\"peak_memory\": 122029829137", "\"tmp_kv_tokens\": 8224",
        "\"tmp_kv_bytes\": 606339072", "\"free_gpu_memory_fraction\": 0.8999999761581421",
        "\"available_kv_bytes\": 6393065471", "\"kv_bytes_per_token\": 73728",
        "\"max_tokens\": 86711", "\"tokens_per_block\": 32", "\"num_blocks\": 2710",
        "\"pool_tokens\": 86720", "\"allocated_bytes\": 6393692160", "\"max_seq_len\": 86720",
        "\"max_batch_size\": 64", "\"max_num_tokens\": 8192", "\"kv_cache_dtype\": \"bfloat16\"",
        "\"windows\": null", "\"state_slots\": null", "\"state_bytes\": null",
        "\"ssm_dtype\": null", "\"pp_size\": 1", "\"binding_stage\": 0"};
    const char *at = json;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        tu_assert_contains(at, fields[i]);
        at = strstr(at, fields[i]);
    }
    tu_assert_contains(json, "\"code\": \"engine_window_reduced\"");
    free(json);
    kvshard_plan_free(p);
    /* The printed 119.70 and 113.65 GiB allow M from 86,569 to 86,831:
     * the least total and the most peak that print so, then the reverse.
     * int((128521527624 - 122036127006 + 606339072) x f32(0.9)) =
     * 6382565551, / 73728 = 86569; int((128532265041 - 122025389589 +
     * 606339072) x f32(0.9)) = 6401892902, / 73728 = 86831. */
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3", "--max_batch_size", "64",
         "--disable_overlap_scheduler", "--device_memory_total=128521527624",
         "--peak_memory=122036127006");
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 6382565551ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 86569);
    text = tu_plan_text(p);
    tu_assert_contains(text,
                       "Peak memory during memory usage profiling (torch + non-torch): 113.65 "
                       "GiB, available KV cache memory when calculating max tokens: 5.94 GiB");
    tu_assert_contains(text, "device total memory 119.70 GiB");
    free(text);
    kvshard_plan_free(p);
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--engine_version=1.1.0rc3", "--max_batch_size", "64",
         "--disable_overlap_scheduler", "--device_memory_total=128532265041",
         "--peak_memory=122025389589");
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 6401892902ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 86831);
    kvshard_plan_free(p);
}

/* SmolLM2-135M on a 12 GB GPU: the blocks the documented log prints. */
static void test_smollm2_blocks(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000");
    /* c = 2 x 3 x 64 x 30 x 2 = 23040; M = floor(9723600000 / 23040) =
     * 422031; ceil(422031 / 32) = 13189 blocks; 422048 tokens. */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 23040);
    assert_int_equal(tu_efig(p, "max_tokens"), 422031);
    assert_int_equal(tu_efig(p, "num_blocks"), 13189);
    assert_int_equal(tu_efig(p, "pool_tokens"), 422048);
    assert_int_equal(tu_efig(p, "allocated_bytes"), 9723985920ull);
    assert_int_equal(tu_efig(p, "max_seq_len"), 2049);
    assert_true(tu_efig_null(p, "available_kv_bytes"));
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_WINDOW_REDUCED));
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   trtllm 1.1.0 profile: KV memory 9.06 GiB given\n"
                          "           the engine logs Estimated max memory in KV cache : 9.06 "
                          "GiB\n"
                          "           the engine logs Number of tokens per block: 32.\n"
                          "           the engine logs [MemUsageChange] Allocated 9.06 GiB for "
                          "max tokens in paged KV cache (422048).\n"
                          "           the engine logs max_seq_len=2049, max_num_requests=2048, "
                          "max_num_tokens=8192, max_batch_size=2048\n");
    free(text);
    kvshard_plan_free(p);
    /* The 13,189 printed pins mem to [9723271680, 9724008960): 422017 and
     * 422048 tokens are 13,189 blocks, 422016 and 422049 are not. */
    static const struct {
        const char *mem;
        uint64_t blocks;
    } pins[] = {{"--memory_per_rank=9723271679", 13188},
                {"--memory_per_rank=9723271680", 13189},
                {"--memory_per_rank=9724008959", 13189},
                {"--memory_per_rank=9724008960", 13190}};
    for (size_t i = 0; i < sizeof pins / sizeof pins[0]; i++) {
        TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", pins[i].mem);
        assert_int_equal(tu_efig(p, "num_blocks"), pins[i].blocks);
        kvshard_plan_free(p);
    }
}

/* The estimation run: requests of min(max_num_tokens, S - 1) tokens, the
 * last the remainder, each with one token more and one for the overlap
 * scheduler. */
static void test_estimation_run(void **state)
{
    (void)state;
    kvshard_plan *p;
    /* S 2048: n_in 2047, 4 requests and one of 4 tokens; with the overlap
     * scheduler 4 x ceil(2049 / 32) + ceil(6 / 32) = 261 blocks. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2048");
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 261 * 32);
    assert_int_equal(tu_efig(p, "tmp_kv_bytes"), 261ull * 32 * 23040);
    kvshard_plan_free(p);
    /* Without it: 4 x ceil(2048 / 32) + ceil(5 / 32) = 257 blocks. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2048", "--disable-overlap-scheduler");
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 257 * 32);
    kvshard_plan_free(p);
    /* max_num_tokens 1000 below S - 1: one request, ceil(1002 / 32) = 32. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2048", "--max_num_tokens", "1000");
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 32 * 32);
    kvshard_plan_free(p);
    /* Attention DP: every rank keeps the 3 KV heads (c 23040) and the
     * requests are tp times as many: 2 x 261 blocks. Without it the heads
     * split: c = 2 x 1 x 64 x 30 x 2 = 7680 at tp 3. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2048", "--tp_size", "2",
         "--enable_attention_dp");
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 23040);
    assert_int_equal(tu_efig(p, "tmp_kv_tokens"), 2 * 261 * 32);
    kvshard_plan_free(p);
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2048", "--tp_size", "3");
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 7680);
    kvshard_plan_free(p);
}

/* The budget from non_kv_memory: the temporary cache is inside the peak,
 * so available = int((total - non_kv) x f32(f)). */
static void test_non_kv_budget(void **state)
{
    (void)state;
    kvshard_plan *p;
    /* 10737418240 x 0.8999999761581421 is 9663676416 less 10737418240 x
     * 2.384185791015625e-8 = 256: int gives 9663676160. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--device_memory_total=12GiB",
         "--non_kv_memory=2GiB");
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 9663676160ull);
    /* floor(9663676160 / 23040) = 419430; ceil(419430 / 32) = 13108. */
    assert_int_equal(tu_efig(p, "max_tokens"), 419430);
    assert_int_equal(tu_efig(p, "num_blocks"), 13108);
    kvshard_plan_free(p);
    /* The fraction is kvshard's memory_utilization too: 0.5 is exact. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--device_memory_total=12GiB",
         "--non_kv_memory=2GiB", "--kv_cache_config.free_gpu_memory_fraction=0.5");
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 5368709120ull);
    kvshard_plan_free(p);
    TU_REFUSED(KVSHARD_EMISSING, "trtllm profile: engine_input_missing: the budget from "
                              "device_memory_total needs peak_memory",
            SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--device_memory_total=12GiB");
    TU_REFUSED(KVSHARD_ENOBLOCK, "trtllm profile: no_memory_for_cache_blocks", SMOLLM,
            "--engine=trtllm", "--max_seq_len", "2049", "--device_memory_total=12GiB",
            "--peak_memory=13GiB");
}

/* max_tokens caps the memory before M; max_gpu_total_bytes after it (M is
 * not recomputed, as in the engine). */
static void test_caps(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000",
         "--kv_cache_config.max_tokens=100000");
    /* mem = 100000 x 23040; M = 100000; ceil(100000 / 32) = 3125. */
    assert_int_equal(tu_efig(p, "budget"), 2304000000ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 100000);
    assert_int_equal(tu_efig(p, "num_blocks"), 3125);
    kvshard_plan_free(p);
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000",
         "--kv_cache_config.max_gpu_total_bytes=1GiB");
    assert_int_equal(tu_efig(p, "budget"), 1073741824ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 422031);
    assert_int_equal(tu_efig(p, "num_blocks"), 13189);
    kvshard_plan_free(p);
    /* fp8: one byte a value, c halves: M = floor(9723600000 / 11520). */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000",
         "--kv_cache_config.dtype", "fp8");
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 11520);
    assert_int_equal(tu_efig(p, "max_tokens"), 844062);
    kvshard_plan_free(p);
}

/* Concurrency at a context length: blocks over the blocks a request takes,
 * capped by max_batch_size. */
static void test_concurrency(void **state)
{
    (void)state;
    kvshard_plan *p;
    /* 13189 blocks / ceil(2049 / 32) = 65 a request = 202 < 2048. */
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000",
         "--context_length=2049");
    kvshard_capacity c = capacity_of(p);
    assert_true(c.has_concurrency);
    assert_int_equal(c.concurrency, 202);
    assert_int_equal(c.balanced_max_seqs, 202);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE));
    kvshard_plan_free(p);
    TU_PLAN(&p, SMOLLM, "--engine=trtllm", "--max_seq_len", "2049", "--memory_per_rank=9723600000",
         "--context_length=2049", "--max-batch-size", "64");
    c = capacity_of(p);
    assert_int_equal(c.concurrency, 64);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE));
    kvshard_plan_free(p);
}

/* Without a budget: the figures that do not depend on one. */
static void test_without_budget(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm");
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 73728);
    assert_int_equal(tu_efig(p, "tokens_per_block"), 32);
    assert_true(tu_efig_null(p, "num_blocks"));
    assert_true(tu_efig_null(p, "budget"));
    assert_int_equal(tu_efig(p, "max_seq_len"), 131072);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   trtllm 1.1.0 profile: 73728 KV bytes per token, 32 tokens "
                          "per block; no budget: give `--memory_per_rank`, or "
                          "`--device_memory_total` and `--peak_memory`\n");
    free(text);
    kvshard_plan_free(p);
}

/* A NemotronH hybrid: the Mamba hybrid manager's state pool of
 * max_batch_size slots beside the attention layers' cache. */
static void test_nemotron_h_hybrid(void **state)
{
    (void)state;
    kvshard_plan *p;
    /* Nemotron-H 8B: 4 attention layers of 8 KV heads x 128: c = 2 x 8 x
     * 128 x 4 x 2 = 16384. 24 Mamba2 layers: conv 2 x (128 x 64 + 2 x 8 x
     * 128) x 3 = 61440, temporal 2 x 128 x 64 x 128 = 2097152 (bfloat16,
     * the model's); 2158592 a layer, 51806208 a slot, x 64 slots. */
    TU_PLAN(&p, NEMOTRON_H, "--engine=trtllm", "--max_batch_size=64", "--memory_per_rank=8GiB");
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 16384);
    assert_int_equal(tu_efig(p, "state_slots"), 64);
    assert_int_equal(tu_efig(p, "state_bytes"), 64ull * 24 * (61440 + 2097152));
    assert_string_equal(tu_engine_figure(p, "ssm_dtype").text_value, "bfloat16");
    /* mem = 8 GiB: M = 524288 tokens, 16384 blocks. */
    assert_int_equal(tu_efig(p, "num_blocks"), 16384);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_STATE_SLOTS_FIXED));
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_capacity_figure(&f, p, "state_slots"), KVSHARD_OK);
    assert_int_equal(f.uint_value, 64);
    kvshard_plan_free(p);
    /* A float32 temporal state: 4 x 128 x 64 x 128 = 4194304 a layer. */
    TU_PLAN(&p, NEMOTRON_H, "--engine=trtllm", "--max_batch_size=64",
         "--kv_cache_config.mamba_ssm_cache_dtype=float32");
    assert_int_equal(tu_efig(p, "state_bytes"), 64ull * 24 * (61440 + 4194304));
    kvshard_plan_free(p);
    /* From non_kv_memory the pool is inside the peak: available =
     * int((32 GiB - 16 GiB - 3315597312) x f32(0.9)) = int(13864271872 x
     * 0.8999999761581421) = 12477844354. */
    TU_PLAN(&p, NEMOTRON_H, "--engine=trtllm", "--max_batch_size=64", "--device_memory_total=32GiB",
         "--non_kv_memory=16GiB");
    assert_int_equal(tu_efig(p, "available_kv_bytes"), 12477844354ull);
    kvshard_plan_free(p);
}

/* A deployment file writes the engine's inputs under cache:, a
 * kv_cache_config key by its dotted name; a flag wins over the file. */
static void test_deployment_file(void **state)
{
    (void)state;
    static const char text[] = "model: trtllm/smollm2_135m.json\n"
                               "cache:\n"
                               "  engine: trtllm\n"
                               "  max_seq_len: 2049\n"
                               "  memory_per_rank: 9723600000\n"
                               "  kv_cache_config.max_tokens: 100000\n";
    char *dir = tu_data_path("");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_string(&dep, text, sizeof text - 1, "trtllm.yaml", dir,
                                                NULL, &err),
                 &err);
    free(dir);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    /* mem = 100000 x 23040: 3125 blocks. */
    assert_int_equal(tu_efig(p, "max_tokens"), 100000);
    assert_int_equal(tu_efig(p, "num_blocks"), 3125);
    kvshard_plan_free(p);
    const char *args[] = {"--kv_cache_config.max_tokens", "64000"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 2, args, 0, &err), &err);
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    assert_int_equal(tu_efig(p, "num_blocks"), 2000);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
}

/* A deployment file may write the windows as a YAML list: the plan of the
 * flag's [128,131072]. */
static void test_deployment_window_list(void **state)
{
    (void)state;
    static const char text[] = "model: trtllm/gpt_oss_120b.json\n"
                               "cache:\n"
                               "  engine: trtllm\n"
                               "  memory_per_rank: 20GiB\n"
                               "  kv_cache_config.max_attention_window: [128, 131072]\n";
    char *dir = tu_data_path("");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_string(&dep, text, sizeof text - 1, "trtllm.yaml", dir,
                                                NULL, &err),
                 &err);
    free(dir);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    /* 18 and 9103 blocks, as test_windows works out. */
    assert_int_equal(tu_efig(p, "pool_tokens"), (18 + 9103) * 32);
    assert_int_equal(tu_efig(p, "max_tokens"), 291271);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
}

/* 1.1.0rc3 to 1.1.0, in Python's order. */
static void test_versions(void **state)
{
    (void)state;
    static const char *const covered[] = {"--engine_version=1.1.0rc3", "--engine_version=1.1.0rc5",
                                          "--engine_version=v1.1.0",
                                          "--engine_version=1.1.0+cu128"};
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) {
        kvshard_plan *p;
        TU_PLAN(&p, SMOLLM, "--engine=trtllm", covered[i]);
        kvshard_plan_free(p);
    }
    static const char *const outside[] = {
        "--engine_version=1.1.0rc2", "--engine_version=1.1.0rc3.dev4",
        "--engine_version=1.1.0.post1", "--engine_version=1.2.0rc1", "--engine_version=1.0.0"};
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++)
        TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_version_unsupported", SMOLLM,
                "--engine=trtllm", outside[i]);
    TU_REFUSED(KVSHARD_EPROFILE, "1.1.0rc3 to 1.1.0", SMOLLM, "--engine=trtllm",
            "--engine_version=1.2.0");
    TU_REFUSED(KVSHARD_ERANGE, "engine_version_invalid", SMOLLM, "--engine=trtllm",
            "--engine_version=1.1");
}

/* gpt-oss-120b with the windows [128,131072] and 20 GiB: the contract's
 * worked arithmetic. 18 sliding and 18 full layers alternate, so the list
 * gives window 128 to the sliding ones and 131072 to the full ones: c_w =
 * 2 x 8 x 64 x 18 x 2 = 36864 each. */
#define WINDOWS GPT_OSS, "--engine=trtllm", "--kv_cache_config.max_attention_window=[128,131072]"

static void test_windows(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, WINDOWS, "--memory_per_rank=20GiB", "--context_length=32768");
    /* M = floor(21474836480 / 73728) = 291271. Sum of w x c_w = (128 +
     * 131072) x 36864 = 4836556800 < 21474836480: no fitting. x = 0.5
     * each, y = 64 and 65536, share_128 = f32(64 / 65600) =
     * 0.0009756097570061684: f32(21474836480 x share) = 20951060, / 36864
     * = 568 tokens, 18 blocks; share_131072 = 0.9990243911743164:
     * 21453885440 / 36864 = 581973, capped by M: 291271, 9103 blocks. */
    assert_int_equal(tu_efig(p, "kv_bytes_per_token"), 73728);
    assert_int_equal(tu_efig(p, "budget"), 21474836480ull);
    assert_int_equal(tu_efig(p, "max_tokens"), 291271);
    assert_true(tu_efig_null(p, "num_blocks"));
    assert_int_equal(tu_efig(p, "pool_tokens"), (18 + 9103) * 32);
    /* (18 + 9103) x 32 tokens of 36864 bytes a window's layers. */
    assert_int_equal(tu_efig(p, "allocated_bytes"), 291872ull * 36864);
    assert_int_equal(tu_efig(p, "max_seq_len"), 131072);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_WINDOW_REDUCED));
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.num_blocks, 18 + 9103);
    assert_int_equal(c.max_tokens, 291872);
    /* At 32768 tokens a request takes ceil(128 / 32) = 4 blocks of the 128
     * window and 1024 of the other: min(2048, 18 / 4, 9103 / 1024) = 4. */
    assert_int_equal(c.concurrency, 4);
    assert_int_equal(c.balanced_max_seqs, 4);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   trtllm 1.1.0 profile: KV memory 20.00 GiB given\n"
                          "           the engine logs Estimated max memory in KV cache : 20.00 "
                          "GiB\n"
                          "           the engine logs Number of tokens per block: 32.\n"
                          "           the engine logs window 128: 18 primary blocks, window "
                          "131072: 9103 primary blocks\n"
                          "           the engine logs max_seq_len=131072, max_num_requests=2048, "
                          "max_num_tokens=8192, max_batch_size=2048\n");
    free(text);
    kvshard_plan_free(p);

    /* The list without brackets is the same list. */
    TU_PLAN(&p, GPT_OSS, "--engine=trtllm", "--kv_cache_config.max_attention_window=128,131072",
         "--memory_per_rank=20GiB");
    assert_int_equal(tu_efig(p, "pool_tokens"), 291872);
    kvshard_plan_free(p);

    /* 5 GiB: sum of w x c_w = 4762828800 < 5368709120, no fitting; M =
     * floor(5368709120 / 73728) = 72817. share_128: f32(5368709120 x
     * 0.0009756097570061684) = 5237765, / 36864 = 142 tokens, 5 blocks;
     * share_131072: 5363471360 / 36864 = 145493, capped by M: 72817,
     * ceil(72817 / 32) = 2276 blocks = 72832 tokens < 131072: the window
     * and max_seq_len become 72832. */
    TU_PLAN(&p, WINDOWS, "--memory_per_rank=5GiB");
    assert_int_equal(tu_efig(p, "max_tokens"), 72817);
    assert_int_equal(tu_efig(p, "pool_tokens"), (5 + 2276) * 32);
    assert_int_equal(tu_efig(p, "max_seq_len"), 72832);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_WINDOW_REDUCED));
    text = tu_plan_text(p);
    tu_assert_contains(text,
                       "           the engine logs Attention window size 131072 exceeds upper "
                       "bound 72832 for available blocks. Reducing to 72832.\n"
                       "           the engine logs Number of tokens per block: 32.\n"
                       "           the engine logs window 128: 5 primary blocks, window "
                       "131072: 2276 primary blocks\n"
                       "           the engine logs max_seq_len=72832,");
    free(text);
    kvshard_plan_free(p);
}

/* Windows whose full sizes do not fit are first fitted from the shortest. */
static void test_windows_fitted(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, WINDOWS, "--memory_per_rank=4GiB");
    /* 4 GiB = 4294967296 <= 4836556800: fitted. M = floor(4294967296 /
     * 73728) = 58254. Window 128: min(floor(4294967296 / 73728) = 58254,
     * 128) = 128 tokens, R = 4294967296 - 128 x 73728 = 4285530112.
     * Window 131072: min(floor(4285530112 / 36864) = 116252, 131072 - 128)
     * = 116252, the sum 116380 capped by M: 58254. Shares: y = 64 and
     * f32(0.5 x 58254) = 29127, share_128 = f32(64 / 29191) =
     * 0.0021924565080553293: f32(4294967296 x share) = 9416529, / 36864 =
     * 255 tokens, 8 blocks; share_58254 = 0.9978075623512268:
     * 4285550848 / 36864 = 116253, capped by M: 58254, ceil(58254 / 32) =
     * 1821 blocks = 58272 tokens, above the window: none reduced. */
    assert_int_equal(tu_efig(p, "max_tokens"), 58254);
    assert_int_equal(tu_efig(p, "pool_tokens"), (8 + 1821) * 32);
    assert_int_equal(tu_efig(p, "max_seq_len"), 58254);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_ENGINE_WINDOW_REDUCED));
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "window 128: 8 primary blocks, window 58254: 1821 primary blocks\n");
    free(text);
    kvshard_plan_free(p);

    /* One distinct window at S is every layer in full: the plan without
     * windows. */
    TU_PLAN(&p, SPARK, "--kv_cache_config.max_attention_window=[131072,200000]");
    assert_int_equal(tu_efig(p, "num_blocks"), 2710);
    assert_int_equal(tu_efig(p, "pool_tokens"), 86720);
    kvshard_plan_free(p);
}

/* What the profile does not cover yet is refused by name. */
static void test_refusals(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_EPROFILE,
            "trtllm profile: engine_unsupported: a model with gdn state layers other than "
            "NemotronH and Qwen3-Next",
            QWEN35, "--engine=trtllm");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported", DSA, "--engine=trtllm");
    TU_REFUSED(KVSHARD_EPROFILE,
            "trtllm profile: engine_unsupported: one max_attention_window below max_seq_len for "
            "every layer",
            GPT_OSS, "--engine=trtllm", "--kv_cache_config.max_attention_window=[128]");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported: a max_attention_window of 0",
            GPT_OSS, "--engine=trtllm", "--kv_cache_config.max_attention_window=[0,128]");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported: beam width above 1", SMOLLM,
            "--engine=trtllm", "--max_beam_width", "2");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported: --backend tensorrt", SMOLLM,
            "--engine=trtllm", "--backend", "tensorrt");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported: speculative decoding", SMOLLM,
            "--engine=trtllm", "--num_speculative_tokens=2");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_split_unsupported", SMOLLM,
            "--engine=trtllm", "--tp_size=3", "--enable_layerwise_split",
            "--layerwise_split_size=3");
    TU_REFUSED(KVSHARD_EPROFILE, "trtllm profile: engine_unsupported: tp 6 above the 3 KV heads",
            SMOLLM, "--engine=trtllm", "--tp_size=6");
    TU_REFUSED(KVSHARD_EPARALLEL, "trtllm profile: world: world_size 4", SMOLLM, "--engine=trtllm",
            "--tp_size=2", "--world_size=4");
    /* The engine's flags are unknown under another profile. */
    TU_REFUSED(KVSHARD_EUNKNOWNKEY, "max_batch_size", SMOLLM, "--engine=vllm",
               "--max_batch_size=4");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt_oss_dgx_spark),
        cmocka_unit_test(test_smollm2_blocks),
        cmocka_unit_test(test_estimation_run),
        cmocka_unit_test(test_non_kv_budget),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_without_budget),
        cmocka_unit_test(test_nemotron_h_hybrid),
        cmocka_unit_test(test_deployment_file),
        cmocka_unit_test(test_deployment_window_list),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_windows_fitted),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
