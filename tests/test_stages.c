/* Pipeline stages: the worked examples of docs/stages.md (DeepSeek-V3.2 on
 * two stages, Qwen3-Next on four, Nemotron-H 8B on two and eight), the
 * global rank layouts, the engine's queries at init by global rank, and the
 * errors. Every figure is worked by hand in its comment; GiB = 2^30. */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (UINT64_C(1) << 30)

static kvshard_options staged(uint32_t world, uint32_t pp)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    o.pp_size = pp;
    return o;
}

static kvshard_stage_info stage_of(const kvshard_plan *p, uint32_t s)
{
    kvshard_stage_info st = KVSHARD_STAGE_INFO_INIT;
    assert_int_equal(kvshard_plan_stage(&st, p, s), KVSHARD_OK);
    return st;
}

static kvshard_rank_memory memory_of(const kvshard_plan *p, uint32_t plan_rank)
{
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(&m, p, plan_rank), KVSHARD_OK);
    return m;
}

static kvshard_capacity capacity_of(const kvshard_plan *p)
{
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, p), KVSHARD_OK);
    return c;
}

static void assert_partition(const kvshard_plan *p, const char *expected)
{
    char text[64];
    int n = kvshard_plan_pp_partition(text, sizeof text, p);
    assert_int_equal(n, (int)strlen(expected));
    assert_string_equal(text, expected);
}

/* The plan must fail with `code` and a message holding `message`. */
static void assert_plan_fails(const kvshard_model *m, const kvshard_options *o, int code,
                              const char *message)
{
    kvshard_plan *p = NULL;
    kvshard_error err;
    int rc = kvshard_plan_create(&p, m, o, NULL, &err);
    if (rc != code || !strstr(err.message, message))
        print_error("got %d %s\nexpected %d with \"%s\"\n", rc, err.message, code, message);
    assert_int_equal(rc, code);
    assert_non_null(strstr(err.message, message));
    assert_null(p);
}

/* A copy of the model text with `key: value` added at its top level. */
static kvshard_model *model_with(const char *name, const char *key_value)
{
    char rel[128];
    snprintf(rel, sizeof rel, "models/%s", name);
    char *path = tu_example_path(rel);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text - 256, f);
    fclose(f);
    free(path);
    text[len] = '\0';
    char *open = strchr(text, '{');
    assert_non_null(open);
    static char edited[(1 << 16) + 256];
    snprintf(edited, sizeof edited, "{%s, %s", key_value, open + 1);
    return tu_load_model_text(edited);
}

/* ---- DeepSeek-V3.2 on two stages -------------------------------------------------------- */

/* 61 MLA layers with the DSA indexer, one MTP layer. fp8 KV: the latent's
 * 512 elements in fp8, four fp32 scales and the 64-element RoPE part in
 * bf16 (512 + 16 + 128 = 656 bytes), plus the indexer key 128 + 4 = 132:
 * 788 bytes per layer and token on every rank. Block 64: a layer is 64 x 788 = 50,432 bytes a block.
 * 60 GiB = 64,424,509,440 bytes, no state. */
static kvshard_options deepseek(uint32_t world, uint32_t pp, kvshard_pp_rule rule)
{
    kvshard_options o = staged(world, pp);
    o.pp_partition_rule = rule;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.memory_per_rank = 60 * GIB;
    o.block_size = 64;
    return o;
}

static void test_deepseek_v3_2_two_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");

    /* vllm: 31 | 30. Stage 0: 31 x 50,432 = 1,563,392 bytes a block,
     * floor(64,424,509,440 / 1,563,392) = 41,208 blocks; stage 1:
     * 30 x 50,432 = 1,512,960 -> 42,581. Common 41,208 = 2,637,312 tokens,
     * set by stage 0. Ranks are p x 8 + t in every layout. */
    kvshard_options o = deepseek(16, 2, KVSHARD_PP_RULE_VLLM);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(kvshard_plan_pp_size(p), 2);
    assert_int_equal(kvshard_plan_attn_tp_size(p), 8);
    assert_int_equal(kvshard_plan_num_ranks(p), 16);
    assert_partition(p, "31,30");
    kvshard_stage_info s0 = stage_of(p, 0), s1 = stage_of(p, 1);
    assert_int_equal(s0.layer_first, 0);
    assert_int_equal(s0.layer_count, 31);
    assert_int_equal(s0.num_kv_layers, 31);
    assert_int_equal(s0.global_rank_first, 0);
    assert_int_equal(s0.global_rank_stride, 1);
    assert_int_equal(s0.bytes_per_token, 31 * 788);
    assert_int_equal(s0.num_blocks, 41208);
    assert_true(s0.binds);
    assert_int_equal(s1.layer_first, 31);
    assert_int_equal(s1.layer_count, 30);
    assert_int_equal(s1.global_rank_first, 8);
    assert_int_equal(s1.num_draft_layers, 0);
    assert_int_equal(s1.num_blocks, 42581);
    assert_false(s1.binds);
    assert_int_equal(memory_of(p, 0).bytes_per_block, 1563392);
    assert_int_equal(memory_of(p, 15).bytes_per_block, 1512960);
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.num_blocks, 41208);
    assert_int_equal(c.max_tokens, 2637312);
    assert_int_equal(tu_figure(p, "binding_stage"), 0);
    assert_int_equal(tu_figure(p, "binding_tp_rank"), 0);
    kvshard_plan_free(p);

    /* trtllm gives 31 | 30 too; sglang 30 | 31, so stage 1 binds. */
    o = deepseek(16, 2, KVSHARD_PP_RULE_TRTLLM);
    p = tu_plan(m, &o);
    assert_partition(p, "31,30");
    assert_int_equal(capacity_of(p).num_blocks, 41208);
    kvshard_plan_free(p);
    o = deepseek(16, 2, KVSHARD_PP_RULE_SGLANG);
    p = tu_plan(m, &o);
    assert_partition(p, "30,31");
    assert_int_equal(stage_of(p, 0).num_blocks, 42581);
    assert_int_equal(stage_of(p, 1).num_blocks, 41208);
    assert_int_equal(capacity_of(p).num_blocks, 41208);
    assert_int_equal(tu_figure(p, "binding_stage"), 1);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_PP_DRAFT_REFUSED));
    kvshard_plan_free(p);

    /* even: 2 does not divide 61. */
    o = deepseek(16, 2, KVSHARD_PP_RULE_EVEN);
    assert_plan_fails(m, &o, KVSHARD_EPARTITION,
                      "pp_partition_rule even needs pp_size to divide the 61 decoder layers, and "
                      "2 does not");

    /* With the MTP layer counted, on the last stage whole on every rank
     * (788 bytes a token, 50,432 a block). vllm: stage 1 holds 30 + 1,
     * 1,563,392 bytes a block, 41,208 blocks: the common count stays.
     * sglang: stage 1 holds 31 + 1 = 32 x 50,432 = 1,613,824 -> 39,920
     * blocks, the common count, and SGLang refuses stages with speculation. */
    o = deepseek(16, 2, KVSHARD_PP_RULE_VLLM);
    o.num_speculative_tokens = 1;
    p = tu_plan(m, &o);
    s1 = stage_of(p, 1);
    assert_int_equal(s1.num_draft_layers, 1);
    assert_int_equal(s1.bytes_per_token, 31 * 788);
    assert_int_equal(memory_of(p, 8).draft_bytes_per_token, 788);
    assert_int_equal(memory_of(p, 0).draft_bytes_per_token, 0);
    assert_int_equal(capacity_of(p).num_blocks, 41208);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_PP_DRAFT_REFUSED));
    kvshard_plan_free(p);
    o = deepseek(16, 2, KVSHARD_PP_RULE_SGLANG);
    o.num_speculative_tokens = 1;
    p = tu_plan(m, &o);
    assert_int_equal(memory_of(p, 8).bytes_per_block, 1613824);
    assert_int_equal(capacity_of(p).num_blocks, 39920);
    assert_int_equal(tu_figure(p, "binding_stage"), 1);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_PP_DRAFT_REFUSED));
    kvshard_plan_free(p);

    /* One stage, T = 8: 61 x 50,432 = 3,076,352 bytes a block -> 20,941
     * blocks = 1,340,224 tokens. */
    o = deepseek(8, 1, KVSHARD_PP_RULE_DEFAULT);
    p = tu_plan(m, &o);
    assert_int_equal(memory_of(p, 0).bytes_per_block, 3076352);
    assert_int_equal(capacity_of(p).num_blocks, 20941);
    assert_int_equal(capacity_of(p).max_tokens, 1340224);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The same with a layerwise split of 8 (ordinal) inside each stage and
 * 16-token blocks. Stage 0's 31 KV layers give split ranks 4,4,4,4,4,4,4,3
 * layers (stage-local ordinals), stage 1's 30 give 4,4,4,4,4,4,3,3. A rank
 * that owns 4 keeps one more as scratch: 5 x 788 = 3,940 bytes a token,
 * 63,040 a block -> floor(64,424,509,440 / 63,040) = 1,021,962 blocks =
 * 16,351,392 tokens, first met at stage 0, TP rank 0. With the MTP layer,
 * stage 1's ranks add 788: 4,728 a token, 75,648 a block -> 851,635 blocks
 * = 13,626,160 tokens, binding stage 1. One stage with the split: 8 + 1
 * layers, 7,092 a token -> 567,756 blocks. */
static void test_deepseek_v3_2_split_inside_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = deepseek(16, 2, KVSHARD_PP_RULE_VLLM);
    o.block_size = 16;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 8;
    kvshard_plan *p = tu_plan(m, &o);
    const uint32_t stage0[8] = {4, 4, 4, 4, 4, 4, 4, 3}, stage1[8] = {4, 4, 4, 4, 4, 4, 3, 3};
    for (uint32_t t = 0; t < 8; t++) {
        const uint32_t *layers;
        size_t count;
        assert_int_equal(kvshard_plan_rank_layers(&layers, &count, p, t), KVSHARD_OK);
        assert_int_equal(count, stage0[t]);
        assert_int_equal(layers[0], t); /* ordinal t of stage 0 is layer t */
        assert_int_equal(kvshard_plan_rank_layers(&layers, &count, p, 8 + t), KVSHARD_OK);
        assert_int_equal(count, stage1[t]);
        assert_int_equal(layers[0], 31 + t); /* global indices */
    }
    assert_int_equal(memory_of(p, 0).kv_bytes_per_token, 4 * 788);
    assert_int_equal(memory_of(p, 0).scratch_bytes_per_token, 788);
    assert_int_equal(memory_of(p, 0).bytes_per_block, 63040);
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.num_blocks, 1021962);
    assert_int_equal(c.max_tokens, 16351392);
    assert_int_equal(tu_figure(p, "binding_stage"), 0);
    assert_int_equal(tu_figure(p, "binding_tp_rank"), 0);
    /* Layer 31 opens stage 1: split rank 0 of stage 1 owns it; stage 0's
     * ranks do not hold it at all. */
    assert_true(kvshard_plan_stores_kv(p, 8, 31));
    assert_false(kvshard_plan_stores_kv(p, 0, 31));
    assert_false(kvshard_plan_owns(p, 0, 31));
    assert_true(kvshard_plan_owns(p, 6, 30)); /* ordinal 30 of stage 0: split rank 6 */
    assert_false(kvshard_plan_owns(p, 0, 30));
    kvshard_plan_free(p);

    o.num_speculative_tokens = 1;
    p = tu_plan(m, &o);
    assert_int_equal(memory_of(p, 8).bytes_per_block, 75648);
    c = capacity_of(p);
    assert_int_equal(c.num_blocks, 851635);
    assert_int_equal(c.max_tokens, 13626160);
    assert_int_equal(tu_figure(p, "binding_stage"), 1);
    kvshard_plan_free(p);

    o = deepseek(8, 1, KVSHARD_PP_RULE_DEFAULT);
    o.block_size = 16;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 8;
    p = tu_plan(m, &o);
    assert_int_equal(memory_of(p, 0).bytes_per_block / 16, 7092);
    assert_int_equal(capacity_of(p).num_blocks, 567756);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* ---- Qwen3-Next-80B-A3B on four stages -------------------------------------------------- */

/* 48 layers, full attention at 3, 7, ..., 47. At T = 2 one KV head of
 * 256 x 2 (K and V) x 2 bytes = 1,024 bytes a layer and token; a GDN layer
 * keeps 1,073,152 bytes a sequence. Every rule gives 12 x 4; a stage holds
 * 3 full and 9 GDN layers: 3,072 bytes a token, 49,152 a block, 9,658,368
 * bytes of state a sequence. max_seqs 256 reserve 2,472,542,208; blocks
 * floor((42,949,672,960 - 2,472,542,208) / 49,152) = 823,509 on every rank
 * = 13,176,144 tokens. At 32,768 tokens a sequence takes 2,048 blocks:
 * floor(823,509 / 2,048) = 402 > 256, so 256 run; balanced
 * floor(42,949,672,960 / (9,658,368 + 2,048 x 49,152)) = 389. */
static kvshard_options qwen_next(uint32_t world, uint32_t pp)
{
    kvshard_options o = staged(world, pp);
    o.memory_per_rank = 40 * GIB;
    o.max_seqs = 256;
    o.context_length = 32768;
    return o;
}

static void test_qwen3_next_four_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    const kvshard_pp_rule rules[] = {KVSHARD_PP_RULE_VLLM, KVSHARD_PP_RULE_SGLANG,
                                     KVSHARD_PP_RULE_TRTLLM, KVSHARD_PP_RULE_EVEN};
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        kvshard_options o = qwen_next(8, 4);
        o.pp_partition_rule = rules[i];
        kvshard_plan *p = tu_plan(m, &o);
        assert_partition(p, "12,12,12,12");
        for (uint32_t s = 0; s < 4; s++) {
            kvshard_stage_info st = stage_of(p, s);
            assert_int_equal(st.num_kv_layers, 3);
            assert_int_equal(st.num_state_layers, 9);
            assert_int_equal(st.bytes_per_token, 3072);
            assert_int_equal(st.state_bytes_per_seq, 9658368);
            assert_int_equal(st.num_blocks, 823509);
        }
        kvshard_capacity c = capacity_of(p);
        assert_int_equal(c.num_blocks, 823509);
        assert_int_equal(c.max_tokens, 13176144);
        assert_int_equal(c.concurrency, 256);
        assert_int_equal(c.balanced_max_seqs, 389);
        kvshard_plan_free(p);
    }
    /* One stage at T = 2: 12 KV layers, 12,288 bytes a token, 196,608 a
     * block; 36 GDN layers, 38,633,472 bytes a sequence, reserve
     * 9,890,168,832: floor(33,059,504,128 / 196,608) = 168,149 blocks; at
     * 32,768 tokens 82 sequences, balanced floor(42,949,672,960 /
     * (38,633,472 + 2,048 x 196,608)) = 97. */
    kvshard_options o = qwen_next(2, 1);
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.num_blocks, 168149);
    assert_int_equal(c.concurrency, 82);
    assert_int_equal(c.balanced_max_seqs, 97);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* With a one-layer MTP draft and one speculative token the GDN state
 * doubles its SSM part: 19,169,280 bytes a sequence a stage (9 layers).
 * Stages 0-2: reserve 256 x 19,169,280 = 4,907,335,680, floor(38,042,337,280
 * / 49,152) = 773,973 blocks. Stage 3 adds the draft layer (1,024 bytes):
 * 4,096 a token, 65,536 a block -> 580,480 blocks, the common count
 * (9,287,680 tokens), binding stage 3. The partition [12, 12, 15, 9]:
 * stage 2 holds 12 GDN layers (25,559,040 a sequence): floor((42,949,672,960
 * - 6,543,114,240) / 49,152) = 740,693; stage 3 holds 6 GDN layers
 * (12,779,520), 3 KV and the draft: floor((42,949,672,960 - 3,271,557,120)
 * / 65,536) = 605,440, the common count. */
static void test_qwen3_next_draft_and_explicit_partition(void **state)
{
    (void)state;
    kvshard_model *m = model_with("qwen3_next_80b_a3b.json", "\"mtp_num_hidden_layers\": 1");
    kvshard_options o = qwen_next(8, 4);
    o.context_length = 0;
    o.num_speculative_tokens = 1;
    kvshard_plan *p = tu_plan(m, &o);
    for (uint32_t s = 0; s < 3; s++) {
        assert_int_equal(stage_of(p, s).state_bytes_per_seq, 19169280);
        assert_int_equal(stage_of(p, s).num_blocks, 773973);
    }
    kvshard_stage_info last = stage_of(p, 3);
    assert_int_equal(last.num_draft_layers, 1);
    assert_int_equal(last.bytes_per_token, 4096);
    assert_int_equal(last.num_blocks, 580480);
    assert_true(last.binds);
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.num_blocks, 580480);
    assert_int_equal(c.max_tokens, 9287680);
    assert_int_equal(tu_figure(p, "binding_stage"), 3);
    assert_int_equal(tu_plan_model(p).num_draft_layers, 1);
    /* The draft layer (index 48) is on the last stage, on every rank of it. */
    uint32_t stage;
    assert_int_equal(kvshard_plan_layer_stage(&stage, p, 48), KVSHARD_OK);
    assert_int_equal(stage, 3);
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&st, p, 7, 48), KVSHARD_OK);
    assert_int_equal(st.holding, KVSHARD_HOLDS_DRAFT);
    assert_int_equal(kvshard_plan_layer_storage(&st, p, 0, 48), KVSHARD_OK);
    assert_int_equal(st.holding, KVSHARD_HOLDS_NOT_ON_STAGE);
    kvshard_plan_free(p);

    const uint32_t counts[4] = {12, 12, 15, 9};
    o.pp_partition = counts;
    o.pp_partition_count = 4;
    p = tu_plan(m, &o);
    assert_partition(p, "12,12,15,9");
    kvshard_options settled = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_plan_options(&settled, p), KVSHARD_OK);
    assert_int_equal(settled.pp_partition_rule, KVSHARD_PP_RULE_EXPLICIT);
    /* The plan's options borrow its own copy of the counts and plan it again. */
    assert_int_equal(settled.pp_partition_count, 4);
    assert_int_equal(settled.pp_partition[2], 15);
    kvshard_plan *again = tu_plan(m, &settled);
    assert_true(kvshard_plan_digest(again) == kvshard_plan_digest(p));
    kvshard_plan_free(again);
    assert_int_equal(stage_of(p, 2).state_bytes_per_seq, 25559040);
    assert_int_equal(stage_of(p, 2).num_blocks, 740693);
    assert_int_equal(stage_of(p, 3).state_bytes_per_seq, 12779520);
    assert_int_equal(capacity_of(p).num_blocks, 605440);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* compare --sweep_pp over W = 8 at 40 GiB and 32,768 tokens: the best row
 * of P = 1 (T = 8) is S = 4, balanced 298; of P = 2 (T = 4) S = 2, 298; of
 * P = 4 (T = 2) S = 1, 389; of P = 8 (T = 1) S = 1, 300. P = 4, S = 1 is
 * recommended. Rows go by P, then S, then ordinal, global, contiguous:
 * P = 1 has S in 1, 2, 4, 8 (12 rows), P = 2 in 1, 2, 4 (9), P = 4 in 1, 2
 * (6), P = 8 only 1 (3): 30 rows. */
static void test_qwen3_next_sweep_pp(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = qwen_next(8, 1);
    kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
    co.sweep_pp = true;
    kvshard_comparison *c = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_comparison_create(&c, m, &o, &co, NULL, &err), &err);
    assert_int_equal(kvshard_comparison_row_count(c), 30);
    uint64_t best[9] = {0};
    uint32_t best_split[9] = {0};
    for (size_t i = 0; i < 30; i++) {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(c, i);
        assert_int_equal(r->pp_size * r->attn_tp_size, 8);
        if (r->error == KVSHARD_OK && r->balanced_max_seqs > best[r->pp_size]) {
            best[r->pp_size] = r->balanced_max_seqs;
            best_split[r->pp_size] = r->layerwise_split_size;
        }
    }
    assert_int_equal(kvshard_comparison_row_at(c, 0)->pp_size, 1);
    assert_int_equal(kvshard_comparison_row_at(c, 29)->pp_size, 8);
    assert_int_equal(best[1], 298);
    assert_int_equal(best_split[1], 4);
    assert_int_equal(best[2], 298);
    assert_int_equal(best_split[2], 2);
    assert_int_equal(best[4], 389);
    assert_int_equal(best_split[4], 1);
    assert_int_equal(best[8], 300);
    const kvshard_comparison_row *rec =
        kvshard_comparison_row_at(c, kvshard_comparison_recommended(c));
    assert_int_equal(rec->pp_size, 4);
    assert_int_equal(rec->layerwise_split_size, 1);
    assert_int_equal(rec->ownership, KVSHARD_OWNERSHIP_ORDINAL);
    kvshard_comparison_free(c);

    /* An explicit partition fixes P, so it cannot be swept. */
    const uint32_t counts[2] = {24, 24};
    o.pp_size = 2;
    o.pp_partition = counts;
    o.pp_partition_count = 2;
    c = NULL;
    assert_int_equal(kvshard_comparison_create(&c, m, &o, &co, NULL, &err), KVSHARD_EPARTITION);
    assert_null(c);

    /* Compare options of another header's size are refused. */
    co.size = sizeof co + 1;
    assert_int_equal(kvshard_comparison_create(&c, m, &o, &co, NULL, &err), KVSHARD_EINVAL);
    assert_non_null(strstr(err.message, "kvshard_compare_options"));
    assert_null(c);
    kvshard_model_free(m);
}

/* ---- Nemotron-H 8B ------------------------------------------------------------------------ */

/* 52 layers: attention at 7, 18, 29, 40; 24 Mamba2 and 24 MLP layers.
 * fp32 state, block 16, max_seqs 128, 14 GiB = 15,032,385,536 bytes. At
 * T = 2 an attention layer is 2,048 bytes a token and a Mamba2 layer
 * 2,127,872 bytes a sequence. P = 2: 26 | 26 under every rule, two
 * attention and 12 Mamba layers a stage: 4,096 bytes a token, 65,536 a
 * block, 25,534,464 a sequence, reserve 3,268,411,392, floor(11,763,974,144
 * / 65,536) = 179,504 blocks = 2,872,064 tokens. At 8,192 tokens (512
 * blocks a sequence) all 128 run; balanced floor(15,032,385,536 /
 * (25,534,464 + 512 x 65,536)) = 254. One stage: 64,816 blocks, 126
 * sequences, balanced 127. */
static kvshard_options nemotron(uint32_t world, uint32_t pp)
{
    kvshard_options o = staged(world, pp);
    o.state_dtype = KVSHARD_DTYPE_FP32;
    o.memory_per_rank = 14 * GIB;
    o.max_seqs = 128;
    o.context_length = 8192;
    return o;
}

static void test_nemotron_h_two_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_h_8b.json");
    kvshard_options o = nemotron(4, 2);
    kvshard_plan *p = tu_plan(m, &o);
    assert_partition(p, "26,26");
    for (uint32_t s = 0; s < 2; s++) {
        kvshard_stage_info st = stage_of(p, s);
        assert_int_equal(st.num_kv_layers, 2);
        assert_int_equal(st.num_state_layers, 12);
        assert_int_equal(st.bytes_per_token, 4096);
        assert_int_equal(st.state_bytes_per_seq, 25534464);
    }
    kvshard_capacity c = capacity_of(p);
    assert_int_equal(c.num_blocks, 179504);
    assert_int_equal(c.max_tokens, 2872064);
    assert_int_equal(c.concurrency, 128);
    assert_int_equal(c.balanced_max_seqs, 254);
    kvshard_plan_free(p);
    o = nemotron(2, 1);
    p = tu_plan(m, &o);
    c = capacity_of(p);
    assert_int_equal(c.num_blocks, 64816);
    assert_int_equal(c.concurrency, 126);
    assert_int_equal(c.balanced_max_seqs, 127);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* P = 8, T = 1: a stage with one attention layer stores 4,096 bytes a
 * token (65,536 a block); stages without one store none. vllm cuts 6, 6,
 * 6, 7, 7, 7, 7, 6 (layers 0-5, 6-11, 12-17, 18-24, 25-31, 32-38, 39-45,
 * 46-51): attention 7, 18, 29, 40 fall on stages 1, 3, 4, 6, so stages 0,
 * 2, 5, 7 hold no KV. Stage 1 (layers 6-11) holds three Mamba layers
 * (6, 9, 11), 3 x 4,255,744 = 12,767,232 a sequence: floor((15,032,385,536
 * - 1,634,205,696) / 65,536) = 204,440, first met at stage 1. sglang cuts
 * 6, 6, 6, 6, 7, 7, 7, 7 and trtllm 7, 7, 7, 7, 6, 6, 6, 6 with the same
 * common count; every rule warns stage_without_kv; balanced 324. */
static void test_nemotron_h_eight_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_h_8b.json");
    const struct {
        kvshard_pp_rule rule;
        const char *partition;
        bool without_kv[8];
    } cases[] = {
        {KVSHARD_PP_RULE_VLLM, "6,6,6,7,7,7,7,6", {1, 0, 1, 0, 0, 1, 0, 1}},
        {KVSHARD_PP_RULE_SGLANG, "6,6,6,6,7,7,7,7", {1, 0, 1, 0, 0, 1, 0, 1}},
        {KVSHARD_PP_RULE_TRTLLM, "7,7,7,7,6,6,6,6", {1, 0, 0, 1, 0, 1, 0, 1}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_options o = nemotron(8, 8);
        o.pp_partition_rule = cases[i].rule;
        kvshard_plan *p = tu_plan(m, &o);
        assert_partition(p, cases[i].partition);
        for (uint32_t s = 0; s < 8; s++) {
            kvshard_stage_info st = stage_of(p, s);
            assert_int_equal(st.num_kv_layers == 0, cases[i].without_kv[s]);
            assert_int_equal(st.has_num_blocks, !cases[i].without_kv[s]);
            assert_int_equal(memory_of(p, s).bytes_per_block, cases[i].without_kv[s] ? 0 : 65536);
        }
        kvshard_capacity c = capacity_of(p);
        assert_int_equal(c.num_blocks, 204440);
        assert_int_equal(c.balanced_max_seqs, 324);
        assert_int_equal(tu_figure(p, "binding_stage"), 1);
        assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_STAGE_WITHOUT_KV));
        kvshard_plan_free(p);
    }
    kvshard_options o = nemotron(8, 8);
    o.pp_partition_rule = KVSHARD_PP_RULE_EVEN;
    assert_plan_fails(m, &o, KVSHARD_EPARTITION, "and 8 does not");

    /* A stage without KV must still fit its state: at 128 MiB a rank of
     * stage 0 (layers 0-5: Mamba 0, 2, 4; 12,767,232 bytes a sequence)
     * cannot reserve 128 sequences (1,634,205,696 bytes). */
    o = nemotron(8, 8);
    o.memory_per_rank = 128u << 20;
    assert_plan_fails(m, &o, KVSHARD_ENOBLOCK, "stage 0");
    kvshard_model_free(m);
}

/* ---- global ranks ------------------------------------------------------------------------- */

/* W = 16, D = 2, P = 2, C = 2, T = 2. The rank with d = 0, p = 1, c = 1,
 * t = 0 is ((0 x 2 + 1) x 2 + 1) x 2 + 0 = 6 under vllm, ((1 x 2 + 0) x 2
 * + 1) x 2 = 10 under sglang, (1 x 2 x 2 + 0 + 0) x 2 + 1 = 9 under
 * trtllm. */
static void test_rank_layouts(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    const struct {
        kvshard_rank_layout layout;
        uint32_t global;
        uint32_t stride_tp;
    } cases[] = {{KVSHARD_RANK_LAYOUT_VLLM, 6, 1},
                 {KVSHARD_RANK_LAYOUT_SGLANG, 10, 1},
                 {KVSHARD_RANK_LAYOUT_TRTLLM, 9, 2}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_options o = staged(16, 2);
        o.dp_size = 2;
        o.cp_size = 2;
        o.rank_layout = cases[i].layout;
        kvshard_plan *p = tu_plan(m, &o);
        assert_int_equal(kvshard_plan_attn_tp_size(p), 2);
        uint32_t g;
        assert_int_equal(kvshard_plan_global_rank(&g, p, 0, 1, 1, 0), KVSHARD_OK);
        assert_int_equal(g, cases[i].global);
        kvshard_rank_position at = KVSHARD_RANK_POSITION_INIT;
        assert_int_equal(kvshard_plan_locate(&at, p, cases[i].global), KVSHARD_OK);
        assert_int_equal(at.dp_rank, 0);
        assert_int_equal(at.stage, 1);
        assert_int_equal(at.cp_rank, 1);
        assert_int_equal(at.tp_rank, 0);
        assert_int_equal(at.plan_rank, 2);
        assert_int_equal(stage_of(p, 1).global_rank_stride, cases[i].stride_tp);
        /* Every global rank decodes to coordinates that encode back to it. */
        for (uint32_t r = 0; r < 16; r++) {
            assert_int_equal(kvshard_plan_locate(&at, p, r), KVSHARD_OK);
            assert_int_equal(
                kvshard_plan_global_rank(&g, p, at.dp_rank, at.stage, at.cp_rank, at.tp_rank),
                KVSHARD_OK);
            assert_int_equal(g, r);
        }
        assert_int_equal(kvshard_plan_locate(&at, p, 16), KVSHARD_EGLOBALRANK);
        assert_int_equal(kvshard_plan_global_rank(&g, p, 0, 2, 0, 0), KVSHARD_ESTAGE);
        assert_int_equal(kvshard_plan_global_rank(&g, p, 2, 0, 0, 0), KVSHARD_ERANK);
        assert_int_equal(kvshard_plan_global_rank(&g, p, 0, 0, 0, 2), KVSHARD_ERANK);
        kvshard_plan_free(p);
    }
    kvshard_model_free(m);
}

/* What an engine rank asks at init, by its global rank: Qwen3-Next on
 * P = 4, T = 2 under the vllm layout (g = 2p + t). Global rank 5 is stage
 * 2, TP rank 1, plan rank 5: layers 24-35, full attention at 27, 31, 35. */
static void test_engine_queries_by_global_rank(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = qwen_next(8, 4);
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_rank_position at = KVSHARD_RANK_POSITION_INIT;
    assert_int_equal(kvshard_plan_locate(&at, p, 5), KVSHARD_OK);
    assert_int_equal(at.stage, 2);
    assert_int_equal(at.tp_rank, 1);
    assert_int_equal(at.plan_rank, 5);
    assert_int_equal(at.split_rank, 0);
    kvshard_stage_info st = stage_of(p, at.stage);
    assert_int_equal(st.layer_first, 24);
    assert_int_equal(st.layer_count, 12);
    const uint32_t full[3] = {27, 31, 35};
    tu_assert_rank_layers(p, at.plan_rank, full, 3);
    kvshard_layer_storage ls = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&ls, p, at.plan_rank, 27), KVSHARD_OK);
    assert_int_equal(ls.holding, KVSHARD_HOLDS_KV);
    assert_int_equal(ls.stage, 2);
    assert_int_equal(ls.kv_slot, 0);
    assert_int_equal(ls.kv_head_first, 1); /* two KV heads, one a TP rank */
    assert_int_equal(ls.kv_bytes_per_token, 1024);
    assert_int_equal(kvshard_plan_layer_storage(&ls, p, at.plan_rank, 24), KVSHARD_OK);
    assert_int_equal(ls.holding, KVSHARD_HOLDS_STATE);
    assert_int_equal(ls.state_bytes_per_seq, 1073152);
    assert_int_equal(kvshard_plan_layer_storage(&ls, p, at.plan_rank, 3), KVSHARD_OK);
    assert_int_equal(ls.holding, KVSHARD_HOLDS_NOT_ON_STAGE);
    assert_int_equal(ls.stage, 0);
    assert_int_equal(ls.kv_bytes_per_token, 0);
    uint32_t stage;
    assert_int_equal(kvshard_plan_layer_stage(&stage, p, 47), KVSHARD_OK);
    assert_int_equal(stage, 3);
    assert_int_equal(kvshard_plan_layer_stage(&stage, p, 48), KVSHARD_ELAYER);
    assert_false(kvshard_plan_owns(p, 5, 3));
    assert_true(kvshard_plan_owns(p, 5, 24));
    kvshard_rank_memory mem = memory_of(p, at.plan_rank);
    assert_int_equal(mem.num_blocks, 823509);
    assert_int_equal(kvshard_plan_rank_memory(&mem, p, 8), KVSHARD_ERANK);
    kvshard_stage_info none = KVSHARD_STAGE_INFO_INIT;
    assert_int_equal(kvshard_plan_stage(&none, p, 4), KVSHARD_ESTAGE);
    /* The log line leads with the stage. */
    char line[512];
    assert_true(kvshard_plan_describe_rank(line, sizeof line, p, 5) > 0);
    assert_non_null(strstr(line, ": stage 2/4 tp_rank 1/2 split rank 0 group 1 "));
    assert_non_null(strstr(line, "KV of 3 layers [27 31 35]"));
    /* A partition string cut short, as snprintf cuts. */
    char small[6];
    assert_int_equal(kvshard_plan_pp_partition(small, sizeof small, p), 11);
    assert_string_equal(small, "12,12");
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Owners are plan ranks: Qwen3-Next on P = 2, T = 2, so stage 1 (layers
 * 24-47) is plan ranks 2 and 3. Without a split each rank owns the KV it
 * stores, full attention layer 27 among it; a stage-1 rank names itself,
 * not its TP rank 0 or 1. */
static void test_owner_is_a_plan_rank(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = qwen_next(4, 2);
    kvshard_plan *p = tu_plan(m, &o);
    for (uint32_t r = 2; r < 4; r++) {
        kvshard_layer_storage ls = KVSHARD_LAYER_STORAGE_INIT;
        assert_int_equal(kvshard_plan_layer_storage(&ls, p, r, 27), KVSHARD_OK);
        assert_int_equal(ls.stage, 1);
        assert_int_equal(ls.holding, KVSHARD_HOLDS_KV);
        assert_int_equal(ls.owner_plan_rank, (int32_t)r);
    }
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* ---- errors and output ------------------------------------------------------------------ */

static void test_errors(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json"); /* 32 layers, 8 KV heads */
    kvshard_options o = staged(6, 4);
    assert_plan_fails(m, &o, KVSHARD_EWORLD,
                      "world_size 6 is not divisible by pp_size 4 x dp_size 1 x cp_size 1 = 4");
    /* A comparison of one rank on two stages fails the same way. */
    o = staged(1, 2);
    kvshard_comparison *c = NULL;
    kvshard_error cerr;
    assert_int_equal(kvshard_comparison_create(&c, m, &o, NULL, NULL, &cerr), KVSHARD_EWORLD);
    assert_null(c);
    o = staged(64, 64);
    assert_plan_fails(m, &o, KVSHARD_EPPLAYERS,
                      "pp_size 64 is above the model's 32 decoder layers");
    const uint32_t three[3] = {16, 8, 8};
    o = staged(2, 2);
    o.pp_partition = three;
    o.pp_partition_count = 3;
    assert_plan_fails(m, &o, KVSHARD_EPARTITION, "pp_partition has 3 entries; pp_size is 2");
    const uint32_t short_by_one[3] = {16, 8, 7};
    o = staged(3, 3);
    o.pp_partition = short_by_one;
    o.pp_partition_count = 3;
    assert_plan_fails(m, &o, KVSHARD_EPARTITION, "pp_partition sums to 31 layers; the model has 32");
    /* The split still checks against a stage's T: 8 ranks over 2 stages are
     * T = 4, which split size 8 does not divide. */
    o = staged(8, 2);
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 8;
    assert_plan_fails(m, &o, KVSHARD_ESPLIT, "does not divide the attention TP size 4");
    o = staged(2, 2);
    o.engine = KVSHARD_ENGINE_XLLM;
    o.memory_per_rank = GIB;
    assert_plan_fails(m, &o, KVSHARD_EPROFILE, "xllm profile: pp_engine: pp_size 2");
    o = staged(2, 2);
    o.rank_layout = KVSHARD_RANK_LAYOUT_XLLM;
    assert_plan_fails(m, &o, KVSHARD_EPROFILE, "pp_engine: pp_size 2 with rank_layout xllm");
    kvshard_model_free(m);

    /* A shared-KV layer must sit with its source: Gemma 4 E2B's last 20 of
     * 35 layers read the caches of layers below 15, and two stages of 18
     * and 17 layers part layers 18-34 from them. */
    m = tu_load_example_model("gemma_4_e2b.json");
    o = staged(2, 2);
    assert_plan_fails(m, &o, KVSHARD_EPPSOURCE, "reads the cache of layer");
    kvshard_model_free(m);
}

/* Plans of two stages in JSON and text: the stage objects, the per-rank
 * stage and global rank, and the lines an engine copies its partition
 * from. */
static void test_output(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = deepseek(16, 2, KVSHARD_PP_RULE_VLLM);
    kvshard_plan *p = tu_plan(m, &o);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"pp_size\": 2,\n               \"pp_partition\": [31, 30], "
                                 "\"pp_partition_rule\": \"vllm\", \"rank_layout\": \"vllm\""));
    assert_non_null(strstr(json, "\"rank_strides\": {\"dp\": 16, \"pp\": 8, \"cp\": 8, \"tp\": 1}"));
    assert_non_null(strstr(json, "{\"stage\": 1, \"layer_first\": 31, \"layer_count\": 30, "
                                 "\"num_kv_layers\": 30, \"num_state_layers\": 0, "
                                 "\"num_draft_layers\": 0, \"global_rank_first\": 8, "
                                 "\"bytes_per_token\": 23640, \"state_bytes_per_seq\": 0, "
                                 "\"weights_bytes\": null, \"budget\": 64424509440, "
                                 "\"num_blocks\": 42581}"));
    assert_non_null(strstr(json, "\"index\": 31, \"kind\": \"full_attention\""));
    assert_non_null(strstr(json, "\"stage\": 1, \"layer_first\": 31, \"layer_count\": 30, "
                                 "\"global_rank\": 15, \"budget\": 64424509440, "
                                 "\"weights_bytes\": null, \"activation_reserve\": null}"));
    assert_non_null(strstr(json, "\"device\": null"));
    assert_non_null(strstr(json, "\"tp\": 1}, \"expert_parallel\": false},\n"));
    free(json);
    /* expert_parallel is written as it was used, not as its default. */
    o.expert_parallel = true;
    kvshard_plan *ep = tu_plan(m, &o);
    json = tu_plan_json(ep);
    assert_non_null(strstr(json, "\"tp\": 1}, \"expert_parallel\": true},\n"));
    free(json);
    kvshard_plan_free(ep);
    o.expert_parallel = false;
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_text(p, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "world_size 16 = dp 1 x pp 2 x cp 1 x attention TP 8;"));
    assert_non_null(strstr(text, "pipeline   2 stages, rule vllm: 31 | 30 layers; layout vllm: "
                                 "rank = pp\xC2\xB7" "8 + tp\n"));
    assert_non_null(strstr(text, "VLLM_PP_LAYER_PARTITION=31,30  SGLANG_PP_LAYER_PARTITION=31,30  "
                                 "pp_partition=[31, 30]\n"));
    assert_non_null(strstr(text, "stage 0    layers 0\xE2\x80\x93" "30"));
    assert_non_null(strstr(text, "41,208 blocks  \xE2\x97\x80 binds\n"));
    free(text);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* sweep_pp is a compare option and a deployment key: kvshard_options
 * refuses it, and a deployment's key sweeps its comparisons. */
static void test_sweep_pp_moved(void **state)
{
    (void)state;
    kvshard_error err;
    kvshard_options o = qwen_next(8, 1);
    assert_int_equal(kvshard_options_set(&o, "sweep_pp", "true", NULL, &err), KVSHARD_EUNKNOWNKEY);
    assert_non_null(strstr(err.message, "sweep_pp is not a field of kvshard_options"));
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_deployment *dep = NULL;
    tu_assert_ok(kvshard_deployment_create(&dep, m, &o, &err), &err);
    kvshard_comparison *c = NULL;
    tu_assert_ok(kvshard_deployment_compare(&c, dep, &err), &err);
    size_t unswept = kvshard_comparison_row_count(c);
    kvshard_comparison_free(c);
    tu_assert_ok(kvshard_deployment_set(dep, "sweep_pp", "true", "test", &err), &err);
    tu_assert_ok(kvshard_deployment_compare(&c, dep, &err), &err);
    assert_int_equal(kvshard_comparison_row_count(c), 30); /* as test_qwen3_next_sweep_pp's */
    assert_true(unswept < 30);
    kvshard_comparison_free(c);
    kvshard_deployment_free(dep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deepseek_v3_2_two_stages),
        cmocka_unit_test(test_deepseek_v3_2_split_inside_stages),
        cmocka_unit_test(test_qwen3_next_four_stages),
        cmocka_unit_test(test_qwen3_next_draft_and_explicit_partition),
        cmocka_unit_test(test_qwen3_next_sweep_pp),
        cmocka_unit_test(test_sweep_pp_moved),
        cmocka_unit_test(test_nemotron_h_two_stages),
        cmocka_unit_test(test_nemotron_h_eight_stages),
        cmocka_unit_test(test_rank_layouts),
        cmocka_unit_test(test_engine_queries_by_global_rank),
        cmocka_unit_test(test_owner_is_a_plan_rank),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
