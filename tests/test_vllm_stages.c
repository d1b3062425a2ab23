/* The vllm profile with pipeline stages: each stage's workers hold their
 * own layers, the KV cache groups are the whole model's projected on each
 * stage, the engine takes the fewest blocks over the stages, and the
 * start-up memory check is each release's. Every figure is worked out from
 * those rules in the comments beside it. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DSA "models/deepseek_v3_2.json"
#define LLAMA "models/llama3_1_8b.json"
#define QWEN_NEXT "models/qwen3_next_80b_a3b.json"
#define NEMOTRON "models/nemotron_3_nano_30b_a3b.json"

/* The blocks a plan rank's own budget holds, before the common count. */
static uint64_t rank_blocks(const kvshard_plan *p, uint32_t plan_rank)
{
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, p, plan_rank), KVSHARD_OK);
    assert_true(m.has_num_blocks);
    return m.num_blocks;
}

/* DeepSeek-V3.2 on -tp 8 -pp 2, fp8: 61 MLA layers with DSA indexer keys,
 * cut 31 | 30 by vLLM's rule. Block 64 (MLA); a layer's pages: the fp8_ds_mla
 * latent 64 x 656 = 41,984 and the index key 64 x (128 + 4) = 8,448, 50,432
 * in all. */
#define DSA_TWO_STAGES(version, budget)                                                            \
    DSA, "--engine=vllm", "--engine_version=" version, "-tp", "8", "-pp", "2", "--kv-cache-dtype", \
        "fp8", "--kv-cache-memory-bytes", budget

static void test_deepseek_v3_2_two_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, DSA_TWO_STAGES("0.19.0", "60GiB"));
    assert_int_equal(tu_efig(p, "pp_size"), 2);
    assert_int_equal(tu_efig(p, "attention_block_size"), 64);
    assert_int_equal(tu_efig(p, "page_bytes"), 41984);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 1);
    assert_int_equal(tu_efig(p, "group_size"), 122); /* 61 x 2 caches */
    /* Stage 0: 31 x 50,432 = 1,563,392 B a block, floor(64,424,509,440 /
     * 1,563,392) = 41,208 blocks; stage 1: 30 x 50,432 = 1,512,960 B,
     * 42,581 blocks. The engine takes 41,208: stage 0 binds. */
    assert_int_equal(rank_blocks(p, 0), 41208);
    assert_int_equal(rank_blocks(p, 7), 41208);
    assert_int_equal(rank_blocks(p, 8), 42581);
    assert_int_equal(rank_blocks(p, 15), 42581);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 41208);
    assert_int_equal(tu_efig(p, "usable_blocks"), 41207);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 1563392);
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    assert_int_equal(tu_figure(p, "binding_stage"), 0);
    assert_int_equal(tu_efig(p, "budget"), 64424509440u);
    /* ceil(163,840 / 64) = 2,560 blocks a request; 41,208 / 2,560 =
     * 16.096875; tokens before dev31 floor(41,208 / 1) x 64 = 2,637,312,
     * int(16.096875 x 163,840) the same. */
    assert_int_equal(tu_efig(p, "max_model_len"), 163840);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 2560);
    assert_true(tu_efig_double(p, "max_concurrency") == 16.096875);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 2637312);
    assert_int_equal(tu_figure(p, "max_tokens"), 2637312);
    /* From 0.18.0 each worker checks its own layers: stage 0 needs 2,560 x
     * 1,563,392 = 4,002,283,520 B of its 60 GiB, the nearest to refusing
     * (stage 1: 2,560 x 1,512,960). */
    assert_string_equal(tu_efig_text(p, "memory_check"), "worker_groups");
    assert_int_equal(tu_efig(p, "memory_check_need"), 4002283520u);
    assert_int_equal(tu_efig(p, "memory_check_budget"), 64424509440u);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "capacity   vllm 0.19.0 profile: Available KV cache memory: 60.0 GiB; "
                          "attention block 64 tokens\n");
    tu_assert_contains(text, "           1 KV cache group of 122 layers; 41,208 GPU blocks, the "
                          "fewest of stage 0 (31 layers) (41,207 usable after the null block)\n");
    tu_assert_contains(text, "           the engine logs GPU KV cache size: 2,637,312 tokens; "
                          "Maximum concurrency for 163,840 tokens per request: 16.10x\n"
                          "stage 0    layers 0\xE2\x80\x93"
                          "30, 62 cache layers (group size 62): "
                          "41,208 blocks of 1,563,392 B; budget 60.0 GiB  \xE2\x97\x80 binds\n"
                          "stage 1    layers 31\xE2\x80\x93"
                          "60, 60 cache layers (group size 60): "
                          "42,581 blocks of 1,512,960 B; budget 60.0 GiB\n");
    free(text);
    kvshard_plan_free(p);
    /* The MTP draft layer joins the last stage: 31 layers there too, both
     * stages 41,208 blocks, the first binds; the draft layer costs no
     * block. One group of 62 x 2 caches. */
    TU_PLAN(&p, DSA_TWO_STAGES("0.19.0", "60GiB"), "--speculative-config",
         "{\"method\":\"mtp\",\"num_speculative_tokens\":1}");
    assert_int_equal(rank_blocks(p, 0), 41208);
    assert_int_equal(rank_blocks(p, 8), 41208);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 41208);
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    assert_int_equal(tu_efig(p, "group_size"), 124);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 1563392);
    kvshard_plan_free(p);
}

/* The same at 5 GiB (5,368,709,120 B a worker): the whole model's need,
 * 2,560 x 61 x 50,432 = 7,875,461,120 B, is above it; each stage's is not
 * (stage 0: 4,002,283,520 B). */
static void test_deepseek_v3_2_check_by_release(void **state)
{
    (void)state;
    /* 0.14.0 to 0.15.2rc1.dev171 check the whole model against one worker:
     * refused; ceil(n / 64) <= floor(5,368,709,120 / 3,076,352) = 1,745
     * blocks hold 111,680 tokens. */
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "vllm profile: max_model_len_does_not_fit: one request of max_model_len 163840 "
            "tokens needs 2560 blocks of 3076352 bytes over the whole model's layers, more than "
            "the 5368709120 bytes of the smallest worker's KV cache, which this release checks "
            "it against; the longest that fits is 111680 tokens",
            DSA_TWO_STAGES("0.15.0", "5GiB"));
    /* The nightlies 0.16.0rc1.devN were built before the fix, numbered
     * after it. */
    TU_REFUSED(KVSHARD_ENOBLOCK, "the longest that fits is 111680 tokens",
            DSA_TWO_STAGES("0.16.0rc1.dev120", "5GiB"));
    TU_REFUSED(KVSHARD_ENOBLOCK, "the longest that fits is 111680 tokens",
            DSA_TWO_STAGES("0.15.2rc1.dev171", "5GiB"));
    /* From the fix each worker checks its own layers: the engine starts
     * with floor(5,368,709,120 / 1,563,392) = 3,434 blocks (stage 1:
     * floor(5,368,709,120 / 1,512,960) = 3,548), 3,434 x 64 = 219,776
     * tokens, 3,434 / 2,560 = 1.341...x. */
    const char *fixed[] = {"0.16.0", "0.15.2rc1.dev172"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        char version[64];
        snprintf(version, sizeof version, "--engine_version=%s", fixed[i]);
        kvshard_plan *p;
        TU_PLAN(&p, DSA, "--engine=vllm", version, "-tp", "8", "-pp", "2", "--kv-cache-dtype",
                "fp8", "--kv-cache-memory-bytes", "5GiB");
        assert_int_equal(tu_efig(p, "num_gpu_blocks"), 3434);
        assert_int_equal(rank_blocks(p, 8), 3548);
        assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 219776);
        assert_true(tu_efig_double(p, "max_concurrency") == 3434.0 / 2560.0);
        assert_string_equal(tu_efig_text(p, "memory_check"), "worker_groups");
        assert_int_equal(tu_efig(p, "memory_check_need"), 4002283520u);
        char *text = tu_plan_text(p);
        tu_assert_contains(text, "Maximum concurrency for 163,840 tokens per request: 1.34x\n");
        free(text);
        kvshard_plan_free(p);
    }
    /* Before 0.14.0 each worker checks its own cache layers. */
    kvshard_plan *p;
    TU_PLAN(&p, DSA_TWO_STAGES("0.13.0", "5GiB"));
    assert_string_equal(tu_efig_text(p, "memory_check"), "worker_layers");
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 3434);
    kvshard_plan_free(p);
}

/* Llama 3.1 8B on -pp 4 (8 KV heads x 128, bf16: a page of 16 x 4,096 =
 * 65,536 B), 8 layers a stage, at 131,072 tokens and 10 GiB a worker. */
#define LLAMA_FOUR_STAGES(version)                                                                 \
    LLAMA, "--engine=vllm", "--engine_version=" version, "-pp", "4", "--max-model-len", "131072",  \
        "--kv-cache-memory-bytes", "10GiB"

static void test_llama_four_stages(void **state)
{
    (void)state;
    /* 0.14.1: the whole model needs 8,192 x 32 x 65,536 = 17,179,869,184 B
     * of 10,737,418,240: refused; floor(10,737,418,240 / 2,097,152) = 5,120
     * blocks of 16 tokens hold 81,920. */
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "needs 8192 blocks of 2097152 bytes over the whole model's layers, more than the "
            "10737418240 bytes of the smallest worker's KV cache, which this release checks it "
            "against; the longest that fits is 81920 tokens",
            LLAMA_FOUR_STAGES("0.14.1"));
    /* 0.20.0: each stage of 8 layers needs 8,192 x 8 x 65,536 = 4 GiB;
     * floor(floor(10,737,418,240 / 65,536) / 8) = 20,480 blocks, 20,480 x 16
     * = 327,680 tokens, 20,480 / 8,192 = 2.5x. */
    kvshard_plan *p;
    TU_PLAN(&p, LLAMA_FOUR_STAGES("0.20.0"));
    assert_int_equal(tu_efig(p, "page_bytes"), 65536);
    assert_int_equal(tu_efig(p, "group_size"), 32);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 524288);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 20480);
    for (uint32_t r = 0; r < 4; r++)
        assert_int_equal(rank_blocks(p, r), 20480);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 327680);
    assert_true(tu_efig_double(p, "max_concurrency") == 2.5);
    assert_int_equal(tu_efig(p, "memory_check_need"), 4294967296u);
    kvshard_plan_free(p);
}

/* Qwen3-Next-80B-A3B on -tp 2 -pp 4: 48 layers, every fourth full attention
 * (12 full, 36 GDN). Block 544, page 557,056; groups of 12: 1 full group, 3
 * GDN groups, the GDN layers dealt to them in turn. Each stage of 12 layers
 * holds 3 full and 9 GDN layers, 3 of every group: g_s = 3. */
static void test_qwen3_next_four_stages(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, QWEN_NEXT, "--engine=vllm", "--engine_version=0.19.0", "-tp", "2", "-pp", "4",
         "--max-model-len", "8192", "--max-num-seqs", "16", "--kv-cache-memory-bytes", "40GiB");
    assert_int_equal(tu_efig(p, "attention_block_size"), 544);
    assert_int_equal(tu_efig(p, "page_bytes"), 557056);
    assert_int_equal(tu_efig(p, "group_size"), 12);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 4);
    /* 3 x 557,056 = 1,671,168 B a block; floor(floor(42,949,672,960 /
     * 557,056) / 3) = floor(77,101 / 3) = 25,700 on every stage. */
    assert_int_equal(tu_efig(p, "bytes_per_block"), 1671168);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 25700);
    for (uint32_t r = 0; r < 8; r++)
        assert_int_equal(rank_blocks(p, r), 25700);
    assert_int_equal(tu_efig(p, "binding_stage"), 0);
    kvshard_plan_free(p);
}

/* Before 0.11.1 each worker logs the two lines with its own count: Gemma 3
 * 27B on -pp 2 at 0.11.0 (62 layers cut 31 | 31; 10 full, 52 sliding in
 * groups of 10: 1 full group and 6 sliding ones, the sliding layers dealt
 * to them in turn). Stage 0 holds full layers 5, 11, ..., 29 (5) and 26
 * sliding: g_0 = max(5, ceil(26 / 6)) = 5; stage 1 the other 5 and 26.
 * Each: floor(floor(42,949,672,960 / 131,072) / 5) = 65,536 blocks of
 * 655,360 B; ceil(4,096 / 16) = 256 + 6 x (ceil(4,096 / 16) + 1) = 1,798 a
 * request: 65,536 / 1,798 = 36.45x; floor(65,536 / 7) x 16 = 149,792
 * tokens. */
static void test_lines_per_worker(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, "models/gemma_3_27b.json", "--engine=vllm", "--engine_version=0.11.0", "-pp", "2",
         "--max-model-len", "4096", "--kv-cache-memory-bytes", "40GiB");
    assert_int_equal(tu_efig(p, "group_size"), 10);
    assert_int_equal(tu_efig(p, "kv_cache_groups"), 7);
    assert_int_equal(tu_efig(p, "bytes_per_block"), 655360);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 65536);
    assert_int_equal(tu_efig(p, "blocks_per_request"), 1798);
    assert_int_equal(tu_efig(p, "gpu_kv_cache_tokens"), 149792);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "stage 1    layers 31\xE2\x80\x93"
                          "61, 31 cache layers (group size 5): "
                          "65,536 blocks of 655,360 B; budget 40.0 GiB; the engine logs GPU KV "
                          "cache size: 149,792 tokens; Maximum concurrency for 4,096 tokens per "
                          "request: 36.45x\n");
    free(text);
    kvshard_plan_free(p);
}

/* The memory check of each release for a model with several groups, at
 * one stage. Nemotron-3-Nano at 256,000 tokens, fp8 KV, float32 state:
 * block 4,176, page 2,138,112, groups of 6 (1 full-attention group of 6, 4
 * state groups of 23 layers and 1 padding layer), bytes per block
 * 12,828,672; mode none, so a state group takes 1 block a request and the
 * full group ceil(256,000 / 4,176) = 62. The first cache layer is a Mamba2
 * layer. At a budget of 500,000,000 B (233 pages, 38 blocks): */
#define NANO_CHECK(version)                                                                        \
    NEMOTRON, "--engine=vllm", "--engine_version=" version, "--max-model-len", "256000",           \
        "--kv-cache-dtype", "fp8_e4m3", "--mamba-ssm-cache-dtype", "float32", "--max-num-seqs",    \
        "16", "--kv-cache-memory-bytes", "500000000"

static void test_check_of_several_groups(void **state)
{
    (void)state;
    /* Before 0.14.0 every cache layer, no padding layer: 6 x 62 + 23 x 1 =
     * 395 pages, above 233; 6 k + 23 <= 233 gives k = 35 blocks of 4,176:
     * 146,160 tokens. */
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "one request of max_model_len 256000 tokens needs 395 blocks of 2138112 bytes, more "
            "than the 500000000 bytes of the KV cache; the longest that fits is 146160 tokens",
            NANO_CHECK("0.13.0"));
    /* 0.14.0 to 0.17.x count the first group alone, a state group: 6 x
     * 2,138,112 x 1 = 12,828,672 B. */
    kvshard_plan *p;
    TU_PLAN(&p, NANO_CHECK("0.15.0"));
    assert_string_equal(tu_efig_text(p, "memory_check"), "whole_model");
    assert_int_equal(tu_efig(p, "memory_check_need"), 12828672);
    assert_int_equal(tu_efig(p, "memory_check_budget"), 500000000);
    assert_int_equal(tu_efig(p, "num_gpu_blocks"), 38);
    kvshard_plan_free(p);
    TU_PLAN(&p, NANO_CHECK("0.17.0"));
    assert_string_equal(tu_efig_text(p, "memory_check"), "worker_groups");
    assert_int_equal(tu_efig(p, "memory_check_need"), 12828672);
    kvshard_plan_free(p);
    /* From 0.18.0 every group: (62 + 4) x 12,828,672 = 846,692,352 B;
     * floor(500,000,000 / 12,828,672) = 38 blocks hold k + 4 <= 38, k = 34:
     * 141,984 tokens. */
    TU_REFUSED(KVSHARD_ENOBLOCK,
            "one request of max_model_len 256000 tokens needs 66 blocks of 12828672 bytes, more "
            "than the 500000000 bytes of the KV cache; the longest that fits is 141984 tokens",
            NANO_CHECK("0.18.0"));
}

/* NemotronH's config names its temporal state dtype (float32 here): the
 * engine reads it from 0.13.0; before, the conv dtype (bfloat16). */
static void test_nemotron_state_dtype_by_release(void **state)
{
    (void)state;
    kvshard_plan *p;
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.12.0", "--max-model-len", "4096");
    kvshard_figure d = tu_engine_figure(p, "state_dtypes");
    assert_int_equal(d.type, KVSHARD_FIGURE_TEXT_LIST);
    assert_string_equal(d.text_value + strlen(d.text_value) + 1, "bfloat16");
    kvshard_plan_free(p);
    TU_PLAN(&p, NEMOTRON, "--engine=vllm", "--engine_version=0.13.0", "--max-model-len", "4096");
    d = tu_engine_figure(p, "state_dtypes");
    assert_string_equal(d.text_value + strlen(d.text_value) + 1, "float32");
    kvshard_plan_free(p);
}

/* A stage without a cache layer leaves the engine no group to size:
 * Nemotron's layer 1 is an MoE layer. */
static void test_stage_without_cache_layers(void **state)
{
    (void)state;
    TU_REFUSED(KVSHARD_EPROFILE,
            "vllm profile: engine_unsupported: stage 1 (layers 1-1) holds no cache layer", NEMOTRON,
            "--engine=vllm", "--engine_version=0.19.0", "-pp", "3", "--pp_partition", "1,1,50",
            "--max-model-len", "4096");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_v3_2_two_stages),
        cmocka_unit_test(test_deepseek_v3_2_check_by_release),
        cmocka_unit_test(test_llama_four_stages),
        cmocka_unit_test(test_qwen3_next_four_stages),
        cmocka_unit_test(test_lines_per_worker),
        cmocka_unit_test(test_check_of_several_groups),
        cmocka_unit_test(test_nemotron_state_dtype_by_release),
        cmocka_unit_test(test_stage_without_cache_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
