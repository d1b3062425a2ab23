/* Capacity: sequences at a context length (concurrency and the balanced
 * max_seqs), block counts from an engine's own budget, and the xllm engine
 * profile. Figures are worked out by hand; the comments show how. */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (UINT64_C(1) << 30)

static kvshard_capacity capacity(const kvshard_plan *plan)
{
    kvshard_capacity c = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(&c, plan), KVSHARD_OK);
    return c;
}

/* The seed deployment: Qwen3.5-35B-A3B, TP 4, split 2 ordinal, block 16,
 * 20 GiB, max_seqs 128: 197493 blocks of 98304 B, state 16097280 B/seq. */
static kvshard_options seed(void)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    o.block_size = 16;
    o.memory_per_rank = 20 * GIB;
    o.max_seqs = 128;
    return o;
}

/* A GQA-only model at T = 1: 32 layers x 2 x 8 heads x 128 x 2 B = 131072
 * B/token, 2097152 per 16-token block, no state. 20 GiB / 2097152 = 10240
 * blocks. At 8192 tokens: 512 blocks a sequence, 10240 / 512 = 20 at once,
 * below max_seqs 256 (a warning); balanced 21474836480 / (512 x 2097152)
 * = 20. */
static void test_gqa_only(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("{num_hidden_layers: 32, num_attention_heads: 32, "
                                          "num_key_value_heads: 8, head_dim: 128}");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.memory_per_rank = 20 * GIB;
    o.context_length = 8192;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity(p);
    assert_int_equal(c.num_blocks, 10240);
    assert_int_equal(c.context_length, 8192);
    assert_true(c.has_concurrency);
    assert_int_equal(c.concurrency, 20);
    assert_true(c.has_balanced_max_seqs);
    assert_int_equal(c.balanced_max_seqs, 20);
    const char *message = NULL;
    kvshard_warning_code code;
    assert_int_equal(kvshard_plan_warning(&code, &message, p, 0), KVSHARD_OK);
    assert_int_equal(code, KVSHARD_WARN_MAX_SEQS_UNREACHABLE);
    assert_string_equal(message, "at 8192 tokens 20 sequences run at once, below max_seqs 256 "
                                 "(the model keeps no state, so no memory is held back); "
                                 "balanced max_seqs is 20");
    /* Nothing is reserved, so the text speaks of no state. */
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_text(p, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "capacity   20.00 GiB per rank, no state to reserve: 10,240 "
                                 "blocks = 163,840 tokens\n"));
    assert_non_null(strstr(text, "context    at 8,192 tokens: 20 sequences at once (below "
                                 "max_seqs 256; balanced max_seqs 20)\n"));
    free(text);
    /* The report says the same: no state held back for sequences that
     * cannot run. */
    char *html = NULL;
    assert_int_equal(kvshard_report_write_html(p, NULL, NULL, tu_append, &html), KVSHARD_OK);
    assert_non_null(strstr(html, "<th scope=\"row\">sequences at once</th><td>20: below "
                                 "max_seqs 256</td>"));
    assert_null(strstr(html, "reserves state"));
    free(html);
    kvshard_plan_free(p);

    /* 20 GiB / 2 MiB = 10240 blocks; a 163840-token sequence takes them all:
     * one sequence, said in the singular. */
    o.context_length = 163840;
    p = tu_plan(m, &o);
    assert_int_equal(capacity(p).concurrency, 1);
    assert_int_equal(kvshard_plan_warning(&code, &message, p, 0), KVSHARD_OK);
    assert_string_equal(message, "at 163840 tokens 1 sequence runs at once, below max_seqs 256 "
                                 "(the model keeps no state, so no memory is held back); "
                                 "balanced max_seqs is 1");
    text = NULL;
    assert_int_equal(kvshard_plan_write_text(p, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, ": 1 sequence at once (below max_seqs 256;"));
    free(text);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The seed (a hybrid model) at three context lengths. Per sequence:
 * state 16097280 B plus ceil(n / 16) blocks of 98304 B.
 * - 512 tokens: 32 blocks = 3145728 B, less than the state (state
 *   dominates). 197493 / 32 = 6171 sequences fit, capped at max_seqs 128:
 *   no warning. balanced = 21474836480 / (16097280 + 3145728 = 19243008) =
 *   1115.
 * - 32768 tokens: 2048 blocks = 201326592 B (KV dominates). 197493 / 2048 =
 *   96 < 128: warned; 32 unusable slots x 16097280 = 515112960 B.
 *   balanced = 21474836480 / 217423872 = 98.
 * - 1048576 tokens: 65536 blocks; 197493 / 65536 = 3; balanced
 *   21474836480 / (16097280 + 6442450944) = 3. */
static void test_hybrid_short_and_long(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    static const struct {
        uint32_t n;
        uint64_t concurrency, balanced;
        bool warned;
    } cases[] = {{512, 128, 1115, false}, {32768, 96, 98, true}, {1048576, 3, 3, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_options o = seed();
        o.context_length = cases[i].n;
        kvshard_plan *p = tu_plan(m, &o);
        kvshard_capacity c = capacity(p);
        assert_int_equal(c.num_blocks, 197493);
        assert_int_equal(c.concurrency, cases[i].concurrency);
        assert_int_equal(c.balanced_max_seqs, cases[i].balanced);
        assert_int_equal(kvshard_plan_has_warning(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE),
                         cases[i].warned);
        if (cases[i].n == 32768) {
            const char *message = NULL;
            kvshard_warning_code code;
            assert_int_equal(kvshard_plan_warning(&code, &message, p, 0), KVSHARD_OK);
            assert_int_equal(code, KVSHARD_WARN_MAX_SEQS_UNREACHABLE);
            assert_non_null(strstr(message, "at 32768 tokens 96 sequences run at once, below "
                                            "max_seqs 128: the state slots of 32 sequences "
                                            "(515112960 bytes = 491.25 MiB per rank) cannot be "
                                            "used; balanced max_seqs is 98"));
            char *json = tu_plan_json(p);
            assert_non_null(strstr(json, "\"context_length\": 32768, \"concurrency\": 96, "
                                         "\"balanced_max_seqs\": 98"));
            free(json);
        }
        kvshard_plan_free(p);
    }
    kvshard_model_free(m);
}

/* gpt-oss-20b at TP 4: 12 full and 12 sliding layers, 8 kv heads / 4 = 2
 * heads x 64 x 2 x 2 = 512 B/token per layer. KV 12 x 512 = 6144, block
 * 98304. Window 128 at block 16: (8 + 1) x 16 x 512 = 73728 per sliding
 * layer, 12 x 73728 = 884736 B/seq. 8 GiB, max_seqs 64: reserved 56623104,
 * (8589934592 - 56623104) / 98304 = 86805 blocks. At 4096 tokens (256
 * blocks): 86805 / 256 = 339, so max_seqs 64 is reached (no warning);
 * balanced 8589934592 / (884736 + 25165824) = 329. */
static void test_sliding_window(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("gpt_oss_20b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.block_size = 16;
    o.memory_per_rank = 8 * GIB;
    o.max_seqs = 64;
    o.context_length = 4096;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity(p);
    assert_int_equal(c.num_blocks, 86805);
    assert_int_equal(c.concurrency, 64);
    assert_int_equal(c.balanced_max_seqs, 329);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE));
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* A context length without memory is not an error: both figures are null
 * and the text says what is missing. */
static void test_context_without_memory(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed();
    o.memory_per_rank = 0;
    o.context_length = 32768;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity(p);
    assert_false(c.has_concurrency);
    assert_false(c.has_balanced_max_seqs);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"context_length\": 32768, \"concurrency\": null, "
                                 "\"balanced_max_seqs\": null"));
    free(json);
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_text(p, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "context    at 32,768 tokens: give memory_per_rank for the "
                                 "sequences that run at once\n"));
    free(text);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The answer a person acts on, in the text plan. */
static void test_text_answer(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed();
    o.context_length = 32768;
    kvshard_plan *p = tu_plan(m, &o);
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_text(p, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "context    at 32,768 tokens: 96 sequences at once (max_seqs 128 "
                                 "reserves state for 32 that cannot run; balanced max_seqs 98)\n"));
    free(text);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* kvshard_plan_blocks_for with an engine's own figures.
 * - 16 GiB measured on every rank: 17179869184 - 2060451840 = 15119417344,
 *   / 98304 = 153802 blocks (remainder 65536); at 32768 tokens 153802 /
 *   2048 = 75 at once; balanced 17179869184 / 217423872 = 79.
 * - 1 GiB reserved for the engine's own buffers: (15119417344 -
 *   1073741824) / 98304 = 142880.
 * - 64 extra bytes per block: 15119417344 / 98368 = 153702.
 * - One rank at a time gives the same count here (every rank is alike). */
static void test_blocks_for(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed();
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_budget b = KVSHARD_BUDGET_INIT;
    kvshard_blocks out = KVSHARD_BLOCKS_INIT;
    kvshard_error err;
    b.memory_per_rank = 16 * GIB;
    b.context_length = 32768;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err), KVSHARD_OK);
    assert_int_equal(out.num_blocks, 153802);
    assert_int_equal(out.max_tokens, 153802 * 16);
    assert_true(out.has_concurrency);
    assert_int_equal(out.concurrency, 75);
    assert_int_equal(out.balanced_max_seqs, 79);
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_blocks_figure(&f, p, KVSHARD_ALL_RANKS, &b, "state_slots", &err),
                     KVSHARD_OK);
    assert_int_equal(f.type, KVSHARD_FIGURE_NULL);
    assert_int_equal(kvshard_plan_blocks_figure(&f, p, KVSHARD_ALL_RANKS, &b, "num_blocks", &err),
                     KVSHARD_OK);
    assert_int_equal(f.type, KVSHARD_FIGURE_UINT);
    assert_int_equal(f.uint_value, 153802);
    assert_int_equal(kvshard_plan_blocks_figure(&f, p, KVSHARD_ALL_RANKS, &b, "slots", &err),
                     KVSHARD_EUNKNOWNKEY);
    b.context_length = 0;
    b.reserved_bytes = 1 * GIB;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err), KVSHARD_OK);
    assert_int_equal(out.num_blocks, 142880);
    assert_false(out.has_concurrency);
    b.reserved_bytes = 0;
    b.extra_bytes_per_block = 64;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, 3, &b, &err), KVSHARD_OK);
    assert_int_equal(out.num_blocks, 153702);
    /* Errors, outputs untouched. */
    /* A byte copy: assignment need not copy the struct's padding, which
     * memcmp reads below. */
    kvshard_blocks before;
    memcpy(&before, &out, sizeof before);
    assert_int_equal(kvshard_plan_blocks_for(&out, p, 4, &b, &err), KVSHARD_ERANK);
    b.memory_per_rank = 1000;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, 0, &b, &err), KVSHARD_ENOBLOCK);
    b.reserved_bytes = 1000;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, 0, &b, &err), KVSHARD_ENOBLOCK);
    kvshard_budget wrong = b;
    wrong.size = 3;
    assert_int_equal(kvshard_plan_blocks_for(&out, p, 0, &wrong, &err), KVSHARD_EINVAL);
    assert_int_equal(memcmp(&before, &out, sizeof out), 0);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* A block or a reservation past 2^64 - 1 bytes fits in no budget, not
 * even one of 2^64 - 1 bytes: the sums are refused, never saturated (a
 * saturated block of 2^64 - 1 bytes would fit once, a saturated need
 * would leave 0 blocks and succeed).
 * - GQA-only, 2097152 B a block: 2^64 - 2097152 = 18446744073707454464
 *   extra bytes make a block of 2^64 bytes: EOVERFLOW.
 * - The seed, 98304 B a block and 128 x 16097280 = 2060451840 B of state:
 *   2^64 - 2060451840 - 98304 = 18446744071649001472 extra bytes make a
 *   block of 2^64 - 2060451840 = 18446744071649099776 B, and with the state
 *   2^64 bytes: ENOBLOCK. One byte less extra fits exactly one block. */
static void test_blocks_for_past_64_bits(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text("{num_hidden_layers: 32, num_attention_heads: 32, "
                                          "num_key_value_heads: 8, head_dim: 128}");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.memory_per_rank = 20 * GIB;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_budget b = KVSHARD_BUDGET_INIT;
    kvshard_blocks out = KVSHARD_BLOCKS_INIT;
    kvshard_error err;
    b.memory_per_rank = UINT64_MAX;
    b.extra_bytes_per_block = UINT64_C(18446744073707454464);
    assert_int_equal(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err),
                     KVSHARD_EOVERFLOW);
    assert_string_equal(err.message, "a block on TP rank 0: bytes_per_block 2097152 and "
                                     "18446744073707454464 extra bytes per block are more than "
                                     "18446744073709551615 bytes (2^64 - 1)");
    assert_int_equal(out.num_blocks, 0); /* untouched */
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_blocks_figure(&f, p, 0, &b, "num_blocks", &err),
                     KVSHARD_EOVERFLOW);
    b.extra_bytes_per_block -= 1; /* a block of 2^64 - 1 bytes: exactly one */
    tu_assert_ok(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err), &err);
    assert_int_equal(out.num_blocks, 1);
    kvshard_plan_free(p);
    kvshard_model_free(m);

    m = tu_load_example_model("qwen3_5_35b_a3b.json");
    o = seed();
    p = tu_plan(m, &o);
    b.extra_bytes_per_block = UINT64_C(18446744071649001472);
    assert_int_equal(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err),
                     KVSHARD_ENOBLOCK);
    assert_string_equal(err.message, "no memory for one block on TP rank 0: the state of "
                                     "max_seqs 128 sequences (16097280 + 0 bytes each) and "
                                     "bytes_per_block 18446744071649099776 need more than "
                                     "18446744073709551615 bytes (2^64 - 1)");
    b.extra_bytes_per_block -= 1;
    tu_assert_ok(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err), &err);
    assert_int_equal(out.num_blocks, 1);
    kvshard_plan_free(p);
    kvshard_model_free(m);

    /* xllm sizes slots with a block of every KV layer: the same sum. */
    m = tu_load_model_text("{num_hidden_layers: 32, num_attention_heads: 32, "
                           "num_key_value_heads: 8, head_dim: 128}");
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    o.engine = KVSHARD_ENGINE_XLLM;
    o.block_size = 16;
    o.memory_per_rank = 20 * GIB;
    p = tu_plan(m, &o);
    b.extra_bytes_per_block = UINT64_C(18446744073707454464);
    assert_int_equal(kvshard_plan_blocks_for(&out, p, KVSHARD_ALL_RANKS, &b, &err),
                     KVSHARD_EOVERFLOW);
    assert_string_equal(err.message, "xllm profile: a block of all KV layers: 2097152 bytes and "
                                     "18446744073707454464 extra bytes per block are more than "
                                     "18446744073709551615 bytes (2^64 - 1)");
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* compare with a context length ranks by balanced_max_seqs. Seed at 32768
 * tokens (2048 blocks a sequence), balanced = 21474836480 / (16097280 +
 * 2048 x the row's largest block):
 *   S1 163840 -> 61; S2 ordinal and contiguous 98304 -> 98; S2 global
 *   180224 -> 55; S4 ordinal and contiguous 131072 -> 75; S4 global
 *   360448 -> 28.
 * S2 ordinal and S2 contiguous tie at 98 with 197493 blocks each, so the
 * smaller S, then ordinal before contiguous: row 3. */
static void test_compare_with_context(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed();
    o.context_length = 32768;
    kvshard_comparison *cmp = NULL;
    assert_int_equal(kvshard_comparison_create(&cmp, m, &o, NULL, NULL, NULL), KVSHARD_OK);
    static const uint64_t balanced[9] = {61, 61, 61, 98, 55, 98, 75, 28, 75};
    static const uint64_t running[9] = {57, 57, 57, 96, 52, 96, 72, 26, 72};
    for (size_t i = 0; i < 9; i++) {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(cmp, i);
        assert_true(r->has_balanced_max_seqs);
        assert_int_equal(r->balanced_max_seqs, balanced[i]);
        assert_true(r->has_concurrency);
        assert_int_equal(r->concurrency, running[i]);
    }
    assert_int_equal(kvshard_comparison_recommended(cmp), 3);
    char *text = NULL;
    assert_int_equal(kvshard_comparison_write_text(cmp, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "running  balanced"));
    assert_non_null(strstr(text, "recommended: --enable_layerwise_split=true "
                                 "--layerwise_split_size=2 --ownership=ordinal --max_seqs=98\n"));
    free(text);
    kvshard_comparison_free(cmp);
    kvshard_model_free(m);
}

/* ---- the xllm profile ------------------------------------------------------------- */

static kvshard_options xllm(uint32_t world, uint64_t budget)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    o.engine = KVSHARD_ENGINE_XLLM;
    o.memory_per_rank = budget;
    return o;
}

/* Qwen3.5-35B-A3B, TP 4, B = 20 GiB: blk at block 128 = 128 x 10 layers x
 * 1024 = 1310720; lin = 16097280.
 * - defaults (block 128, 200 sequences, prefix cache on): bound min(
 *   (B - 1) / lin = 1334, (B + 2 blk) / (lin + blk) = 1233) = 1233;
 *   a = trunc(B x (0.9 / 1.9) / lin) = 631 -> 631 slots; reserved
 *   10157383680, (B - reserved) / blk = 8634 blocks (1105152 tokens).
 * - prefix cache off: min(200 + 2, 1233) = 202 slots, 13903 blocks.
 * - block 16, max_seqs 128, prefix cache off: 130 slots, 118299 blocks.
 * - the same with split 2: ordinal 197165, global 107545. */
static void test_xllm_worked_example(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    static const struct {
        uint32_t block, max_seqs, split;
        bool prefix;
        kvshard_ownership rule;
        uint64_t slots, blocks;
    } cases[] = {
        {0, 0, 1, true, KVSHARD_OWNERSHIP_DEFAULT, 631, 8634},
        {0, 0, 1, false, KVSHARD_OWNERSHIP_DEFAULT, 202, 13903},
        {16, 128, 1, false, KVSHARD_OWNERSHIP_DEFAULT, 130, 118299},
        {16, 128, 2, false, KVSHARD_OWNERSHIP_ORDINAL, 130, 197165},
        {16, 128, 2, false, KVSHARD_OWNERSHIP_DEFAULT, 130, 107545}, /* global */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard_options o = xllm(4, 20 * GIB);
        o.block_size = cases[i].block;
        o.max_seqs = cases[i].max_seqs;
        kvshard_settings *s =
            tu_settings("enable_prefix_cache", cases[i].prefix ? "true" : "false", NULL);
        o.settings = s;
        o.enable_layerwise_split = cases[i].split > 1;
        o.layerwise_split_size = cases[i].split;
        o.ownership = cases[i].rule;
        kvshard_plan *p = tu_plan(m, &o);
        kvshard_settings_free(s);
        kvshard_capacity c = capacity(p);
        assert_int_equal(c.engine, KVSHARD_ENGINE_XLLM);
        assert_int_equal(tu_figure(p, "state_slots"), cases[i].slots);
        assert_int_equal(tu_figure(p, "usable_state_slots"), cases[i].slots - 1);
        assert_int_equal(c.num_blocks, cases[i].blocks);
        assert_int_equal(tu_figure(p, "usable_blocks"), cases[i].blocks - 1);
        assert_int_equal(tu_figure(p, "budget"), 20 * GIB);
        if (i == 0) {
            assert_int_equal(c.block_size, 128);
            assert_int_equal(c.max_seqs, 200);
            assert_int_equal(c.max_tokens, 1105152);
            assert_int_equal(c.memory_per_rank, 20 * GIB);
            kvshard_options settled = KVSHARD_OPTIONS_INIT;
            kvshard_plan_options(&settled, p);
            assert_int_equal(settled.ownership, KVSHARD_OWNERSHIP_GLOBAL);
            char *json = tu_plan_json(p);
            assert_non_null(strstr(json, "\"engine\": \"xllm\", \"budget\": 21474836480, "
                                         "\"state_slots\": 631, \"usable_blocks\": 8633, "
                                         "\"usable_state_slots\": 630"));
            free(json);
        }
        kvshard_plan_free(p);
    }
    kvshard_model_free(m);
}

/* The seed deployment under --engine=xllm keeps its own block 16 and split
 * 2 (ordinal, from the file): 631 slots as above (a depends on B and lin
 * only; bound min(1334, (B + 2 x 163840) / (lin + 163840) = 1320)), and
 * (B - 631 x lin) / (16 x 5 x 1024 + 16 x 1024 = 98304) = 115127 blocks.
 * The kvshard profile's figures of the same file stay 197493. */
static void test_xllm_seed_deployment(void **state)
{
    (void)state;
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    assert_int_equal(capacity(p).num_blocks, 197493);
    kvshard_plan_free(p);
    const char *args[] = {"--engine=xllm"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 1, args, 0, &err), &err);
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_capacity c = capacity(p);
    assert_int_equal(c.block_size, 16);
    assert_int_equal(tu_figure(p, "state_slots"), 631);
    assert_int_equal(c.num_blocks, 115127);
    kvshard_rank_memory r = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&r, p, 0);
    assert_int_equal(r.bytes_per_block, 98304);
    assert_int_equal(r.num_blocks, 115127);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
    free(path);
}

/* An MLA model has no state: 2 slots and no reservation. DeepSeek-V3.2 at
 * TP 8, split 8 (R = T = 8 for MLA), the profile's global rule: 61 layers,
 * split ranks 0-4 own 8 (layers s, s + 8, ..., up to 60), 5-7 own 7. A
 * layer: (512 + 64) x 2 + 128 x 2 = 1408 B/token; owner 8 x 1408 x 128 =
 * 1441792 plus scratch 1408 x 128 = 180224: 1622016 per block. B = 40 GiB:
 * 42949672960 / 1622016 = 26479 blocks. Draft layers are not counted. */
static void test_xllm_mla_split(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = xllm(8, 40 * GIB);
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 8;
    o.num_speculative_tokens = 1;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity(p);
    assert_int_equal(tu_figure(p, "state_slots"), 2);
    assert_int_equal(tu_figure(p, "usable_state_slots"), 1);
    assert_int_equal(c.num_blocks, 26479);
    kvshard_rank_memory r = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&r, p, 0);
    assert_int_equal(r.bytes_per_block, 1622016);
    assert_int_equal(r.draft_bytes_per_token, 0);
    assert_int_equal(r.state_bytes_per_seq, 0);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Explicit slots: n + 2 while within the bound (1233 at block 128):
 * 100 -> 102 slots, (B - 102 x lin) / 1310720 = 15131 blocks. 1231 -> 1233
 * fits; 1232 -> 1234 is above the bound. */
static void test_xllm_explicit_slots(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = xllm(4, 20 * GIB);
    kvshard_settings *s = tu_settings("max_linear_state_cache_slots", "100", NULL);
    o.settings = s;
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "state_slots"), 102);
    assert_int_equal(capacity(p).num_blocks, 15131);
    kvshard_plan_free(p);
    tu_set(s, "max_linear_state_cache_slots", "1231");
    p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "state_slots"), 1233);
    kvshard_plan_free(p);
    tu_set(s, "max_linear_state_cache_slots", "1232");
    kvshard_error err;
    p = NULL;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EPROFILE);
    kvshard_settings_free(s);
    assert_null(p);
    assert_non_null(strstr(err.message, "max_linear_state_cache_slots 1232 (+2 padding) is above "
                                        "the 1233 state slots"));
    kvshard_model_free(m);
}

/* The budget from device figures: 32 GiB total, 25 GiB free, utilization
 * 0.9: B = 26843545600 - trunc(34359738368 x (1 - 0.9)) = 26843545600 -
 * 3435973836 = 23407571764 (in double, 1 - 0.9 is 0.09999999999999998).
 * a = trunc(B x (0.9 / 1.9) / lin) = 688 slots; (B - 688 lin) / 1310720 =
 * 9409 blocks. With max_cache_size 20 GiB, B = 21474836480: 631 / 8634. */
static void test_xllm_device_budget(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = xllm(4, 0);
    kvshard_settings *s =
        tu_settings("device_memory_total", "32GiB", "device_memory_free", "25GiB",
                    "max_memory_utilization", "0.9", NULL);
    o.settings = s;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity(p);
    assert_int_equal(c.memory_per_rank, 23407571764ull);
    assert_int_equal(tu_figure(p, "state_slots"), 688);
    assert_int_equal(c.num_blocks, 9409);
    kvshard_plan_free(p);
    tu_set(s, "max_cache_size", "20GiB");
    p = tu_plan(m, &o);
    c = capacity(p);
    assert_int_equal(c.memory_per_rank, 20 * GIB);
    assert_int_equal(tu_figure(p, "state_slots"), 631);
    assert_int_equal(c.num_blocks, 8634);
    kvshard_plan_free(p);
    kvshard_settings_free(s);
    kvshard_model_free(m);
}

/* The automatic share is computed in double: at B = 20389887999 bytes,
 * B x (0.9 / 1.9) / lin is 599.9999... in double, so 599 slots and
 * (B - 599 lin) / 1310720 = 8199 blocks; single precision would round to
 * 600 slots and 8187 blocks. */
static void test_xllm_double_arithmetic(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = xllm(4, 20389887999ull);
    kvshard_plan *p = tu_plan(m, &o);
    assert_int_equal(tu_figure(p, "state_slots"), 599);
    assert_int_equal(capacity(p).num_blocks, 8199);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* Concurrency under xllm: usable blocks over blocks per sequence, capped by
 * max_seqs and the usable state slots; no balanced figure. Defaults at
 * 32768 tokens (256 blocks of 128 a sequence): 8633 / 256 = 33 < 200:
 * warned. */
static void test_xllm_concurrency(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = xllm(4, 20 * GIB);
    o.context_length = 32768;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_capacity c = capacity(p);
    assert_int_equal(c.concurrency, 33);
    assert_false(c.has_balanced_max_seqs);
    assert_true(kvshard_plan_has_warning(p, KVSHARD_WARN_MAX_SEQS_UNREACHABLE));
    kvshard_plan_free(p);
    /* At 128 tokens: 8633 blocks fit 8633 sequences; the cap is min(200,
     * 630 usable slots) = 200. */
    o.context_length = 128;
    p = tu_plan(m, &o);
    assert_int_equal(capacity(p).concurrency, 200);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The profile's defaults fill only what the file and flags leave unset, and
 * its flag names work in any order with --engine. */
static void test_xllm_flags(void **state)
{
    (void)state;
    char *path = tu_example_path("models/qwen3_5_35b_a3b.json");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    const char *args[] = {"--max_seqs_per_batch=128", "--world_size=4",          "--block_size=16",
                          "--memory_per_rank=20GiB",  "--noenable_prefix_cache", "--engine=xllm"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 6, args, 0, &err), &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    assert_int_equal(tu_figure(p, "state_slots"), 130);
    assert_int_equal(capacity(p).num_blocks, 118299);
    kvshard_plan_free(p);
    /* --max_seqs and --max_seqs_per_batch set one option: the last wins. */
    const char *again[] = {"--max_seqs=64", "--max_seqs_per_batch=100"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 2, again, 0, &err), &err);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    assert_int_equal(o.max_seqs, 100);
    kvshard_deployment_free(dep);
    free(path);
}

/* Under the kvshard profile the engine fields of the JSON are null. */
static void test_kvshard_profile_json(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed();
    kvshard_plan *p = tu_plan(m, &o);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"engine\": \"kvshard\", \"budget\": null, \"state_slots\": "
                                 "null, \"usable_blocks\": null, \"usable_state_slots\": null"));
    free(json);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The xllm profile's inputs set under the kvshard profile are named in a
 * warning, since the plan does not read them; under xllm they are read. */
static void test_kvshard_profile_names_xllm_inputs(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = seed();
    kvshard_settings *s =
        tu_settings("max_memory_utilization", "0.5", "device_memory_free", "1GiB", NULL);
    o.settings = s;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_settings_free(s);
    assert_int_equal(kvshard_plan_warning_count(p), 1);
    const char *message = NULL;
    kvshard_warning_code code;
    assert_int_equal(kvshard_plan_warning(&code, &message, p, 0), KVSHARD_OK);
    assert_int_equal(code, KVSHARD_WARN_PROFILE_INPUTS_IGNORED);
    assert_string_equal(kvshard_warning_name(code), "profile_inputs_ignored");
    assert_string_equal(message, "device_memory_free (xllm, vllm and sglang), "
                                 "max_memory_utilization (xllm) apply only under those engines: "
                                 "the kvshard profile ignores them");
    /* The figures are the seed's, as if the inputs were not there. */
    assert_int_equal(capacity(p).num_blocks, 197493);
    kvshard_plan_free(p);

    o = seed();
    s = tu_settings("enable_prefix_cache", "false", NULL);
    o.settings = s;
    p = tu_plan(m, &o);
    kvshard_settings_free(s);
    assert_int_equal(kvshard_plan_warning(&code, &message, p, 0), KVSHARD_OK);
    assert_string_equal(message, "enable_prefix_cache applies only under engine xllm: the "
                                 "kvshard profile ignores it");
    kvshard_plan_free(p);

    o = seed();
    o.engine = KVSHARD_ENGINE_XLLM;
    s = tu_settings("max_cache_size", "10GiB", "max_linear_state_cache_slots", "64", NULL);
    o.settings = s;
    p = tu_plan(m, &o);
    kvshard_settings_free(s);
    assert_false(kvshard_plan_has_warning(p, KVSHARD_WARN_PROFILE_INPUTS_IGNORED));
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gqa_only),
        cmocka_unit_test(test_hybrid_short_and_long),
        cmocka_unit_test(test_sliding_window),
        cmocka_unit_test(test_context_without_memory),
        cmocka_unit_test(test_text_answer),
        cmocka_unit_test(test_blocks_for),
        cmocka_unit_test(test_blocks_for_past_64_bits),
        cmocka_unit_test(test_compare_with_context),
        cmocka_unit_test(test_xllm_worked_example),
        cmocka_unit_test(test_xllm_seed_deployment),
        cmocka_unit_test(test_xllm_mla_split),
        cmocka_unit_test(test_xllm_explicit_slots),
        cmocka_unit_test(test_xllm_device_budget),
        cmocka_unit_test(test_xllm_double_arithmetic),
        cmocka_unit_test(test_xllm_concurrency),
        cmocka_unit_test(test_xllm_flags),
        cmocka_unit_test(test_kvshard_profile_json),
        cmocka_unit_test(test_kvshard_profile_names_xllm_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
