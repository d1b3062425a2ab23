/* The third wave of model families: compressed attention (DeepSeek-V4,
 * V4.1), shared-KV layers (Gemma 4), per-kind geometry (Gemma 4, MiMo,
 * Step-3.5), per-layer indexer keys (GLM-5.2, MiniMax-M3), chunked
 * attention (Llama 4), layer groups (Ring, Ling) and draft patterns
 * (Nemotron 3). One rank, block size 16, no split, no speculation and a
 * cache in the model dtype unless a test says otherwise; every figure is
 * worked by hand in its comment from the rules of docs/planning.md. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct figures {
    uint64_t kv;    /* kv_bytes_per_token of TP rank 0 */
    uint64_t state; /* state_bytes_per_seq of TP rank 0 */
    uint64_t draft; /* draft_bytes_per_token of TP rank 0 */
} figures;

static kvshard_options tp(uint32_t world)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    return o;
}

static figures figures_of(const kvshard_model *m, const kvshard_options *o)
{
    kvshard_plan *p = tu_plan(m, o);
    kvshard_rank_memory r = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&r, p, 0), KVSHARD_OK);
    figures f = {r.kv_bytes_per_token, r.state_bytes_per_seq, r.draft_bytes_per_token};
    kvshard_plan_free(p);
    return f;
}

static figures at_tp(const kvshard_model *m, uint32_t world)
{
    kvshard_options o = tp(world);
    return figures_of(m, &o);
}

static kvshard_layer_storage storage(const kvshard_plan *p, uint32_t rank, uint32_t layer)
{
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&st, p, rank, layer), KVSHARD_OK);
    return st;
}

static kvshard_layer_kind kind_of(const kvshard_model *m, uint32_t layer)
{
    kvshard_layer_kind k;
    assert_int_equal(kvshard_model_layer_kind(&k, m, layer), KVSHARD_OK);
    return k;
}

/* ---- compressed attention ------------------------------------------------------------ */

/* DeepSeek-V4-Flash, TP 8: 43 compressed layers, one latent of 512
 * elements (E = 512 x 2 = 1024 bytes), window 128, index keys of 128 + 4 =
 * 132 bytes on the ratio-4 layers.
 * Per token: 21 ratio-4 layers x (1024 / 4 + 132 / 4 = 256 + 33) + 20
 * ratio-128 layers x 1024 / 128 = 8: 6069 + 160 = 6229.
 * Per sequence: every layer's window 1024 x 16 x (128 / 16 + 1) = 147456,
 * 43 x 147456 = 6340608; ratio-4 compressor state (coff 2, 8 slots)
 * 8 x 2 x 2 x (512 + 128) x 4 = 81920, x 21 = 1720320; ratio-128 state
 * (128 slots) 128 x 2 x 512 x 4 = 524288, x 20 = 10485760. Sum 18546688. */
static void test_deepseek_v4_flash(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v4_flash.json");
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_COMPRESSED);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_COMPRESSED), 43);
    assert_int_equal(kvshard_model_num_draft_layers(m), 1);
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 6229);
    assert_int_equal(f.state, 18546688);

    /* fp8: E = 448 nope + 2 x 64 rope + ceil(448 / 64) = 583 -> 584.
     * 21 x (146 + 33) + 20 x ceil(584 / 128) = 3759 + 100 = 3859; windows
     * 43 x 584 x 144 = 3616128, the float32 compressor state unchanged. */
    kvshard_options o = tp(8);
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    f = figures_of(m, &o);
    assert_int_equal(f.kv, 3859);
    assert_int_equal(f.state, 3616128 + 1720320 + 10485760);

    /* One speculative token: rings of the next power of two, 16 slots
     * (ratio 4) and 256 (ratio 128): 21 x 163840 + 20 x 1048576, and the
     * ratio-0 draft layer keeps only its window, 147456: 30900224. */
    o = tp(8);
    o.num_speculative_tokens = 1;
    f = figures_of(m, &o);
    assert_int_equal(f.kv, 6229);
    assert_int_equal(f.draft, 0);
    assert_int_equal(f.state, 30900224);

    /* Per layer: layer 2 (ratio 4) keeps its stream and index keys; layer
     * 1 (ratio 0) its window only. */
    o = tp(8);
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_layer_storage st = storage(p, 0, 2);
    assert_int_equal(st.kind, KVSHARD_LAYER_COMPRESSED);
    assert_int_equal(st.compress_ratio, 4);
    assert_true(st.index_key);
    assert_int_equal(st.kv_source, -1);
    assert_int_equal(st.kv_bytes_per_token, 289);
    assert_int_equal(st.state_bytes_per_seq, 147456 + 81920);
    st = storage(p, 0, 1);
    assert_int_equal(st.compress_ratio, 0);
    assert_false(st.index_key);
    assert_int_equal(st.kv_bytes_per_token, 0);
    assert_int_equal(st.state_bytes_per_seq, 147456);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The same model re-saved with layer_types and compress_rates plans the
 * same; its sliding_attention entries are compressed layers of ratio 0. */
static void test_deepseek_v4_layer_types(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v4_flash_layer_types.json");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_COMPRESSED), 43);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 0);
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 6229);
    assert_int_equal(f.state, 18546688);
    kvshard_model_free(m);
}

/* DeepSeek-V4-Pro, TP 8: 61 layers, 30 of ratio 4 and 31 of ratio 128.
 * 30 x 289 + 31 x 8 = 8918; 61 x 147456 + 30 x 81920 + 31 x 524288 =
 * 8994816 + 2457600 + 16252928 = 27705344. */
static void test_deepseek_v4_pro(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v4_pro.json");
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 8918);
    assert_int_equal(f.state, 27705344);
    kvshard_model_free(m);
}

/* DeepSeek-V4.1-Flash, TP 8: ratios 0 (0-1), 2 (2-19), 1 (20-39); only the
 * KV sources 2, 8, 14 and 20 keep a stream and index keys, the others read
 * the latest source at or below them.
 * Per token: 3 ratio-2 sources x (1024 / 2 + 132 / 2 = 512 + 66) + the
 * ratio-1 source (1024 + 132) = 1734 + 1156 = 2890.
 * Per sequence: 40 windows x 147456 = 5898240; ratio-2 state (coff 1, 2
 * slots) 2 x 2 x (512 + 128) x 4 = 10240, x 3 = 30720; a ratio-1 layer
 * keeps none. 5928960. */
static void test_deepseek_v4_1_sources(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v4_1_flash.json");
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 2890);
    assert_int_equal(f.state, 5928960);
    kvshard_options o = tp(8);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(storage(p, 0, 2).kv_source, -1);
    assert_int_equal(storage(p, 0, 2).kv_bytes_per_token, 578);
    assert_int_equal(storage(p, 0, 7).kv_source, 2);
    assert_int_equal(storage(p, 0, 7).kv_bytes_per_token, 0);
    assert_false(storage(p, 0, 7).index_key);
    assert_int_equal(storage(p, 0, 13).kv_source, 8);
    assert_int_equal(storage(p, 0, 39).kv_source, 20);
    assert_int_equal(storage(p, 0, 39).compress_ratio, 1);
    assert_int_equal(storage(p, 0, 0).kv_source, -1);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "{\"index\": 7, \"kind\": \"compressed\", \"owner\": null, "
                                 "\"compress_ratio\": 2, \"kv_source\": 2, \"index_key\": false, \"stage\": 0}"));
    assert_non_null(strstr(json,
                           "{\"index\": 20, \"kind\": \"compressed\", \"owner\": null, "
                           "\"compress_ratio\": 1, \"kv_source\": null, \"index_key\": true, \"stage\": 0}"));
    assert_non_null(strstr(json, "\"attention\": \"compressed\""));
    free(json);
    kvshard_plan_free(p);
    /* With one speculative token the ratio-2 ring grows to 4 slots (20480
     * a source) and the three ratio-0 draft layers keep their windows:
     * 5898240 + 3 x 20480 + 3 x 147456 = 6402048. */
    o.num_speculative_tokens = 1;
    f = figures_of(m, &o);
    assert_int_equal(f.state, 6402048);
    kvshard_model_free(m);
}

/* DeepSeek-V4-Flash at TP 8 split 8, ordinal, bf16. Split rank 0 owns
 * layers 0 8 16 24 32 40: one of ratio 0 and five of ratio 4. kv 5 x 289 =
 * 1445; scratch 289, the largest per-token layer; state 147456 + 5 x
 * (147456 + 81920) = 1294336; scratch per sequence 671744, the largest
 * layer's window and state (ratio 128: 147456 + 524288). Split rank 3
 * owns 3 11 19 27 35, all ratio 128: 5 x 8 = 40 B/token, 5 x 671744 =
 * 3358720 B/seq. Split rank 1 owns layer 1 (ratio 0) and five ratio-128
 * layers: 147456 + 5 x 671744 = 3506176. With 60 GiB and 64 sequences
 * split rank 2 binds: it owns 2 10 18 26 34 42, all of ratio 4 (6 x 289 =
 * 1734 B/token, 6 x 229376 = 1376256 B/seq):
 * (64424509440 - 64 x (1376256 + 671744)) / (16 x (1734 + 289)) =
 * (64424509440 - 131072000) / 32368 = 1986327. */
static void test_deepseek_v4_split(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v4_flash.json");
    kvshard_options o = tp(8);
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 8;
    o.memory_per_rank = 60ull << 30;
    o.max_seqs = 64;
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(kvshard_plan_replication_factor(p), 8);
    const uint64_t expect[4][5] = {
        /* kv, scratch, state, scratch/seq, blocks */
        {1445, 289, 1294336, 671744, 2317570},
        {40, 289, 3506176, 671744, 12187903},
        {1734, 289, 1376256, 671744, 1986327},
        {40, 289, 3358720, 671744, 12189696},
    };
    for (uint32_t r = 0; r < 4; r++) {
        kvshard_rank_memory rm = KVSHARD_RANK_MEMORY_INIT;
        assert_int_equal(kvshard_plan_rank_memory(&rm, p, r), KVSHARD_OK);
        assert_int_equal(rm.kv_bytes_per_token, expect[r][0]);
        assert_int_equal(rm.scratch_bytes_per_token, expect[r][1]);
        assert_int_equal(rm.state_bytes_per_seq, expect[r][2]);
        assert_int_equal(rm.scratch_bytes_per_seq, expect[r][3]);
        assert_int_equal(rm.num_blocks, expect[r][4]);
    }
    const uint32_t owned0[] = {0, 8, 16, 24, 32, 40};
    tu_assert_rank_layers(p, 0, owned0, 6);
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    assert_int_equal(c.num_blocks, 1986327);
    assert_int_equal(c.max_tokens, 31781232);
    kvshard_uniform u = KVSHARD_UNIFORM_INIT;
    assert_int_equal(kvshard_plan_uniform(&u, p), KVSHARD_OK);
    assert_int_equal(u.num_blocks, 634507);
    /* The owner keeps all of a layer, the others none of it. */
    assert_true(storage(p, 0, 8).stores_kv);
    assert_int_equal(storage(p, 0, 8).state_bytes_per_seq, 229376);
    assert_false(storage(p, 1, 8).stores_kv);
    assert_int_equal(storage(p, 1, 8).state_bytes_per_seq, 0);
    assert_int_equal(storage(p, 1, 8).owner_plan_rank, 0);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* ---- shared KV and per-kind geometry --------------------------------------------- */

/* Gemma 4 31B: [5 sliding, 1 full] x 10. Full layers: 4 global KV heads
 * of 512 (attention_k_eq_v), K and V both stored; sliding layers 16 heads of
 * 256, window 1024 (1024 / 16 + 1 = 65 blocks, 1040 tokens).
 * TP 4: full 10 x 1 head x (512 + 512) x 2 = 20480 B/token; sliding 50 x
 * 4 heads x 512 x 2 x 1040 = 212992000 B/seq. TP 8 and 16: the 4 full
 * heads are replicated (1 a rank, 20480); the sliding heads 2 and 1 a
 * rank: 106496000 and 53248000. */
static void test_gemma_4_31b(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("gemma_4_31b.json");
    figures f = at_tp(m, 4);
    assert_int_equal(f.kv, 20480);
    assert_int_equal(f.state, 212992000);
    f = at_tp(m, 8);
    assert_int_equal(f.kv, 20480);
    assert_int_equal(f.state, 106496000);
    f = at_tp(m, 16);
    assert_int_equal(f.kv, 20480);
    assert_int_equal(f.state, 53248000);
    /* R follows the full layers' 4 heads: 16 / 4 = 4. */
    kvshard_options o = tp(16);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(kvshard_plan_replication_factor(p), 4);
    kvshard_layer_storage st = storage(p, 5, 0);
    assert_int_equal(st.kv_head_first, 5);
    assert_int_equal(st.kv_head_count, 1);
    st = storage(p, 5, 5);
    assert_int_equal(st.kv_head_first, 1);
    assert_int_equal(st.kv_head_count, 1);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Gemma 4 E2B, TP 1: [4 sliding, 1 full] x 7, the last 20 layers shared.
 * Own caches: full 4, 9, 14 x 1 head x 1024 x 2 = 6144 B/token; sliding
 * 12 x 1 x (256 + 256) x 2 x 528 tokens (512 / 16 + 1 = 33 blocks) =
 * 6488064 B/seq. Sliding layers past 14 read layer 13, full ones layer 14. */
static void test_gemma_4_e2b_shared(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("gemma_4_e2b.json");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 3);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 12);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SHARED_KV), 20);
    assert_int_equal(kind_of(m, 14), KVSHARD_LAYER_FULL_ATTENTION);
    assert_int_equal(kind_of(m, 15), KVSHARD_LAYER_SHARED_KV);
    figures f = at_tp(m, 1);
    assert_int_equal(f.kv, 6144);
    assert_int_equal(f.state, 6488064);
    kvshard_options o = tp(1);
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_layer_storage st = storage(p, 0, 15);
    assert_int_equal(st.kind, KVSHARD_LAYER_SHARED_KV);
    assert_false(st.stores_kv);
    assert_int_equal(st.kv_source, 13);
    assert_int_equal(st.kv_bytes_per_token, 0);
    assert_int_equal(st.state_bytes_per_seq, 0);
    assert_int_equal(storage(p, 0, 19).kv_source, 14);
    assert_false(kvshard_plan_owns(p, 0, 19));
    assert_true(kvshard_plan_owns(p, 0, 14));
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "{\"index\": 19, \"kind\": \"shared_kv\", \"owner\": null, "
                                 "\"compress_ratio\": null, \"kv_source\": 14, "
                                 "\"index_key\": false, \"stage\": 0}"));
    free(json);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* A shared-KV layer reports the owner of the layer it reads. Four full
 * layers, the last two shared (both read layer 1), TP 2 split 2: layer 0
 * is owned by split rank 0, layer 1 by split rank 1. */
static void test_shared_layer_owner(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("{num_hidden_layers: 4, num_key_value_heads: 2, "
                                          "head_dim: 64, num_kv_shared_layers: 2}");
    kvshard_options o = tp(2);
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    kvshard_plan *p = tu_plan(m, &o);
    int32_t owner = -5;
    assert_int_equal(kvshard_plan_layer_owner(&owner, p, 3), KVSHARD_OK);
    assert_int_equal(owner, 1);
    assert_false(kvshard_plan_owns(p, 1, 3));
    assert_false(kvshard_plan_stores_kv(p, 1, 3));
    const uint32_t owned1[] = {1};
    tu_assert_rank_layers(p, 1, owned1, 1);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "{\"index\": 3, \"kind\": \"shared_kv\", \"owner\": 1, "
                                 "\"compress_ratio\": null, \"kv_source\": 1, "
                                 "\"index_key\": false, \"stage\": 0}"));
    free(json);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* MiMo-V2-Flash, TP 8: full at 0 and every (l + 1) % 6 == 0 (9 layers), 4
 * KV heads with K 192 and V 128 wide: 9 x 1 x (192 + 128) x 2 = 5760;
 * sliding 39 layers, 8 heads (1 a rank), window 128 (144 tokens): 39 x 640
 * x 144 = 3594240. */
static void test_mimo_v2_flash(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("mimo_v2_flash.json");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 9);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 39);
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 5760);
    assert_int_equal(f.state, 3594240);
    kvshard_model_free(m);
}

/* Step-3.5-Flash, TP 8: 45 decoder layers, full at 0, 4, ..., 44 (12) with
 * 8 KV heads (num_attention_groups) of 128: 12 x 1 x 256 x 2 = 6144;
 * sliding 33 layers with attention_other_setting's 8 groups, window 512
 * (528 tokens): 33 x 512 x 528 = 8921088. Its three draft layers
 * (layer_types 45-47: one full, two sliding) count with speculation:
 * 512 B/token and 2 x 270336 B/seq. */
static void test_step3p5_flash(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("step3p5_flash.json");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 12);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 33);
    assert_int_equal(kvshard_model_num_draft_layers(m), 3);
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 6144);
    assert_int_equal(f.state, 8921088);
    kvshard_options o = tp(8);
    o.num_speculative_tokens = 3;
    f = figures_of(m, &o);
    assert_int_equal(f.draft, 512);
    assert_int_equal(f.state, 8921088 + 2 * 270336);
    kvshard_model_free(m);
}

/* ---- indexer keys per layer ---------------------------------------------------------- */

/* GLM-5.2, TP 8: 78 MLA layers, latent (512 + 64) x 2 = 1152 at bf16 and
 * 512 + 4 x 4 + 2 x 64 = 656 at fp8; indexer keys (132) on the 21 layers
 * indexer_types names full: 0, 1, 2, 6, 10, ..., 74.
 * 78 x 1152 + 21 x 132 = 89856 + 2772 = 92628; fp8 78 x 656 + 2772 = 53940. */
static void test_glm_5_2_indexer_types(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("glm_5_2.json");
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 92628);
    kvshard_options o = tp(8);
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    f = figures_of(m, &o);
    assert_int_equal(f.kv, 53940);
    kvshard_plan *p = tu_plan(m, &o);
    assert_true(storage(p, 0, 2).index_key);
    assert_false(storage(p, 0, 3).index_key);
    assert_true(storage(p, 0, 6).index_key);
    assert_int_equal(storage(p, 0, 6).kv_bytes_per_token, 788);
    assert_int_equal(storage(p, 0, 7).kv_bytes_per_token, 656);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The freq/offset schedule gives the same layers as GLM-5.2's list: f 4,
 * o 3 keeps keys where max(i - 2, 0) % 4 == 0. Without either key every
 * layer keeps one. */
static void test_index_schedule(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{num_hidden_layers: 12, kv_lora_rank: 512, qk_rope_head_dim: 64, index_head_dim: 128, "
        "index_n_heads: 32, index_topk_freq: 4, index_skip_topk_offset: 3}");
    /* keys at 0, 1, 2, 6, 10: 12 x 1152 + 5 x 132 = 13824 + 660 = 14484 */
    assert_int_equal(at_tp(m, 1).kv, 14484);
    kvshard_model_free(m);
    m = tu_load_model_text("{num_hidden_layers: 12, kv_lora_rank: 512, qk_rope_head_dim: 64, "
                           "index_head_dim: 128, index_n_heads: 32}");
    assert_int_equal(at_tp(m, 1).kv, 12 * 1284);
    kvshard_model_free(m);
    m = tu_load_model_text("{num_hidden_layers: 4, kv_lora_rank: 512, qk_rope_head_dim: 64, "
                           "index_head_dim: 128, index_n_heads: 32, index_topk_pattern: FSSF}");
    assert_int_equal(at_tp(m, 1).kv, 4 * 1152 + 2 * 132);
    kvshard_model_free(m);
}

/* MiniMax-M3, TP 8: 60 full layers, 4 KV heads of 128 (1 a rank): 60 x 256
 * x 2 = 30720; a sparse index key, one head of 128 in bf16, K only, on 57
 * layers: 57 x 256 = 14592. 45312. */
static void test_minimax_m3_sparse_index(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("minimax_m3.json");
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 45312);
    kvshard_options o = tp(8);
    kvshard_plan *p = tu_plan(m, &o);
    assert_false(storage(p, 0, 2).index_key);
    assert_int_equal(storage(p, 0, 2).kv_bytes_per_token, 512);
    assert_true(storage(p, 0, 3).index_key);
    assert_int_equal(storage(p, 0, 3).kv_bytes_per_token, 768);
    kvshard_plan_free(p);
    kvshard_model_free(m);
    /* K and V (sparse_disable_index_value 0): 2 x 128 x 2 = 512 a layer. */
    m = tu_load_model_text("{num_hidden_layers: 2, num_attention_heads: 8, num_key_value_heads: "
                           "2, head_dim: 64, sparse_attention_config: {sparse_index_dim: 128}}");
    assert_int_equal(at_tp(m, 1).kv, 2 * (2 * 128 * 2 + 512));
    kvshard_model_free(m);
    /* use_sparse_attention false: no index. */
    m = tu_load_model_text("{num_hidden_layers: 2, num_attention_heads: 8, num_key_value_heads: "
                           "2, head_dim: 64, sparse_attention_config: {use_sparse_attention: "
                           "false}}");
    assert_int_equal(at_tp(m, 1).kv, 2 * 512);
    kvshard_model_free(m);
}

/* ---- chunked attention and layer groups ---------------------------------------------- */

/* Llama 4 Scout, TP 8: no_rope_layers [1, 1, 1, 0] x 12: 12 NoPE layers
 * with global attention x 1 head x 256 x 2 = 6144 B/token; 36 chunked
 * layers keep one chunk of 8192 tokens (8192 / 16 + 1 = 513 blocks, 8208
 * tokens) x 512: 36 x 512 x 8208 = 151289856 B/seq. */
static void test_llama4_chunked(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama4_scout.json");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_CHUNKED_ATTENTION), 36);
    assert_int_equal(kind_of(m, 3), KVSHARD_LAYER_FULL_ATTENTION);
    assert_int_equal(kind_of(m, 4), KVSHARD_LAYER_CHUNKED_ATTENTION);
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 6144);
    assert_int_equal(f.state, 151289856);
    kvshard_model_free(m);
    /* Without no_rope_layers a llama4 model's class default: every 4th
     * layer NoPE (no_rope_layer_interval 4). */
    m = tu_load_model_text("{model_type: llama4_text, num_hidden_layers: 8, "
                           "num_key_value_heads: 8, head_dim: 128, attention_chunk_size: 16}");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_CHUNKED_ATTENTION), 6);
    assert_int_equal(kind_of(m, 7), KVSHARD_LAYER_FULL_ATTENTION);
    kvshard_model_free(m);
}

/* Ring-mini-linear-2.0, TP 4: layer_group_size 5: full at 4, 9, 14, 19, 4
 * KV heads (1 a rank) x 256 x 2 = 512 a layer, 2048; 16 lightning layers,
 * 16 heads / 4 x 128 x 128 x 4 (fp32) = 262144 each: 4194304. */
static void test_ring_group_size(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("ring_mini_linear_2_0.json");
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_LIGHTNING);
    assert_int_equal(kind_of(m, 19), KVSHARD_LAYER_FULL_ATTENTION);
    figures f = at_tp(m, 4);
    assert_int_equal(f.kv, 2048);
    assert_int_equal(f.state, 4194304);
    kvshard_model_free(m);
    /* 7 layers in groups of 3: full at 2, 5 and the trailing layer 6. */
    m = tu_load_model_text("{model_type: bailing_moe_linear, num_hidden_layers: 7, "
                           "layer_group_size: 3, num_attention_heads: 4, head_dim: 32}");
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 3);
    assert_int_equal(kind_of(m, 6), KVSHARD_LAYER_FULL_ATTENTION);
    assert_int_equal(kind_of(m, 4), KVSHARD_LAYER_LINEAR_ATTENTION);
    kvshard_model_free(m);
}

/* Ling-3.0-tiny (Bailing V3), TP 4: MLA at 3, 7, ..., 23 (6 x 1152 =
 * 6912); 18 KDA layers from the top-level keys (16 heads / 4, head_dim
 * 128, kernel 4): conv 2 x 3 x 4 x 128 x 3 = 9216, temporal 4 x 4 x 128 x
 * 128 = 262144; 18 x 271360 = 4884480. */
static void test_ling_bailing_v3(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("ling_3_0_tiny.json");
    assert_int_equal(kvshard_model_attention(m), KVSHARD_ATTENTION_MLA);
    assert_int_equal(kvshard_model_state_kind(m), KVSHARD_STATE_KDA);
    figures f = at_tp(m, 4);
    assert_int_equal(f.kv, 6912);
    assert_int_equal(f.state, 4884480);
    kvshard_model_free(m);
}

/* Nemotron 3 Super, TP 8: 8 attention layers x 2 KV heads (1 a rank) x 256
 * x 2 = 4096; 40 Mamba2 layers: conv 2 x ((8192 + 2 x 8 x 128) / 8) x 3 =
 * 7680, temporal 2 x 16 x 64 x 128 = 262144 (model dtype): 10792960. One
 * speculative token: the draft step's one attention layer (*E) adds 512
 * B/token, and the conv window grows by one: 40 x (10240 + 262144) =
 * 10895360. */
static void test_nemotron_3_super_draft(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_3_super_120b_a12b.json");
    assert_int_equal(kvshard_model_num_draft_layers(m), 1);
    figures f = at_tp(m, 8);
    assert_int_equal(f.kv, 4096);
    assert_int_equal(f.state, 10792960);
    kvshard_options o = tp(8);
    o.num_speculative_tokens = 1;
    f = figures_of(m, &o);
    assert_int_equal(f.draft, 512);
    assert_int_equal(f.state, 10895360);
    kvshard_model_free(m);
}

/* DeepSeek-V3.2 at TP 8: 61 x (1152 + 132) = 78324 at bf16, 61 x (656 +
 * 132) = 48068 at fp8; its MTP layer keeps a latent and a key, 788. */
static void test_deepseek_v3_2_revised(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    assert_int_equal(at_tp(m, 8).kv, 78324);
    kvshard_options o = tp(8);
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.num_speculative_tokens = 1;
    figures f = figures_of(m, &o);
    assert_int_equal(f.kv, 48068);
    assert_int_equal(f.draft, 788);
    kvshard_model_free(m);
    m = tu_load_example_model("glm_5.json");
    assert_int_equal(at_tp(m, 8).kv, 100152);
    o.num_speculative_tokens = 0;
    assert_int_equal(figures_of(m, &o).kv, 61464);
    kvshard_model_free(m);
}

/* Attention keys are needed only when some layer stores KV: a model whose
 * only attention is a draft layer plans without them until speculation
 * counts that layer. */
static void test_draft_only_attention(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{num_hidden_layers: 2, layer_types: [linear_attention, linear_attention], "
        "linear_num_key_heads: 2, linear_num_value_heads: 2, linear_key_head_dim: 64, "
        "linear_value_head_dim: 64, linear_conv_kernel_dim: 4, num_nextn_predict_layers: 1}");
    kvshard_options o = tp(1);
    figures f = figures_of(m, &o);
    assert_int_equal(f.kv, 0);
    /* GDN: conv 2 x (2 x 64 x 2 + 64 x 2) x 3 = 2304, temporal 4 x 2 x 64 x
     * 64 = 32768: 2 x 35072 = 70144. */
    assert_int_equal(f.state, 70144);
    o.num_speculative_tokens = 1;
    kvshard_plan *p = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EMISSING);
    assert_null(p);
    assert_non_null(strstr(err.message, "missing key \"num_key_value_heads\""));
    assert_non_null(strstr(err.message, "num_speculative_tokens"));
    kvshard_model_free(m);
}

/* Two compressed models whose layers swap ratios have the same kinds, owners
 * and totals; the digests still tell them apart, as ranks comparing plans
 * need. */
static void test_digest_sees_ratios(void **state)
{
    (void)state;
    kvshard_model *a = tu_load_model_text("{num_hidden_layers: 2, head_dim: 512, sliding_window: "
                                          "128, index_head_dim: 128, compress_ratios: [4, 128]}");
    kvshard_model *b = tu_load_model_text("{num_hidden_layers: 2, head_dim: 512, sliding_window: "
                                          "128, index_head_dim: 128, compress_ratios: [128, 4]}");
    kvshard_options o = tp(1);
    kvshard_plan *pa = tu_plan(a, &o), *pb = tu_plan(b, &o);
    kvshard_rank_memory ra = KVSHARD_RANK_MEMORY_INIT, rb = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&ra, pa, 0);
    kvshard_plan_rank_memory(&rb, pb, 0);
    assert_int_equal(ra.kv_bytes_per_token, rb.kv_bytes_per_token);
    assert_int_equal(ra.state_bytes_per_seq, rb.state_bytes_per_seq);
    assert_true(kvshard_plan_layout_digest(pa) != kvshard_plan_layout_digest(pb));
    assert_true(kvshard_plan_digest(pa) != kvshard_plan_digest(pb));
    kvshard_plan_free(pa);
    kvshard_plan_free(pb);
    kvshard_model_free(a);
    kvshard_model_free(b);
}

/* The refused keys name themselves; a null value counts as absent. */
static void test_refused_keys(void **state)
{
    (void)state;
    static const char *const keys[] = {"block_configs",          "mb_per_layer",
                                       "cross_attention_layers", "index_kpool",
                                       "indexer_compress_ratio", "local_layer_ids"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char text[256], expect[128];
        snprintf(text, sizeof text,
                 "{num_hidden_layers: 2, num_key_value_heads: 2, head_dim: 64, %s: [1]}", keys[i]);
        kvshard_model *m = NULL;
        kvshard_error err;
        assert_int_equal(kvshard_model_load_string(&m, text, strlen(text), "refused", NULL, &err),
                         KVSHARD_EUNMODELED);
        snprintf(expect, sizeof expect, "kvshard does not model the cache that %s describes",
                 keys[i]);
        assert_non_null(strstr(err.message, expect));
        snprintf(text, sizeof text,
                 "{num_hidden_layers: 2, num_key_value_heads: 2, head_dim: 64, %s: null}", keys[i]);
        m = tu_load_model_text(text);
        kvshard_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_v4_flash),
        cmocka_unit_test(test_deepseek_v4_layer_types),
        cmocka_unit_test(test_deepseek_v4_pro),
        cmocka_unit_test(test_deepseek_v4_1_sources),
        cmocka_unit_test(test_deepseek_v4_split),
        cmocka_unit_test(test_gemma_4_31b),
        cmocka_unit_test(test_gemma_4_e2b_shared),
        cmocka_unit_test(test_shared_layer_owner),
        cmocka_unit_test(test_mimo_v2_flash),
        cmocka_unit_test(test_step3p5_flash),
        cmocka_unit_test(test_glm_5_2_indexer_types),
        cmocka_unit_test(test_index_schedule),
        cmocka_unit_test(test_minimax_m3_sparse_index),
        cmocka_unit_test(test_llama4_chunked),
        cmocka_unit_test(test_ring_group_size),
        cmocka_unit_test(test_ling_bailing_v3),
        cmocka_unit_test(test_nemotron_3_super_draft),
        cmocka_unit_test(test_deepseek_v3_2_revised),
        cmocka_unit_test(test_draft_only_attention),
        cmocka_unit_test(test_refused_keys),
        cmocka_unit_test(test_digest_sees_ratios),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
