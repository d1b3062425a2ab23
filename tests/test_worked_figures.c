/* Figures of the worked examples of docs/comm.md and docs/transfer.md that
 * the other tests do not assert: what a rank receives under full_layer,
 * DeepSeek-V3.2's per-layer collectives, vLLM's blocks for
 * Qwen3.5-397B-A17B, and Qwen3-Next's staged transfer. Every expected value
 * is worked out by hand in the comment above it. */
#include "test_util.h"

#include "kvshard/explore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The seed: Qwen3.5-35B-A3B, TP 4, S = 2, 20 GiB a rank, 32 K tokens, on
 * BI-V100 (pcie4x16). */
#define SEED                                                                                       \
    "models/qwen3_5_35b_a3b.json", "--world_size=4", "--enable_layerwise_split=true",              \
        "--layerwise_split_size=2", "--memory_per_rank=20GiB", "--max_seqs=128",                   \
        "--context_length=32768", "--weights_total=69321223296", "--weights_experts=64424509440",  \
        "--comm_accelerator=bi_v100"

/* full_layer: a layer's pool is 197,493 blocks x 16 x 1,024 =
 * 3,235,725,312 B. A rank owns 5 of the 10 KV layers and receives the
 * pools of the other 5 each step: 5 x 3,235,725,312 = 16,178,626,560 B.
 * A 32 K prompt broadcasts the pools for each of its 3 chunks with
 * history: 3 x 16,178,626,560 = 48,535,879,680 B a rank. Every rank, owner
 * of split rank 0 or 1, receives the same. */
static void seed_full_layer_received(void **state)
{
    (void)state;
    kvshard_plan *p = NULL;
    TU_PLAN(&p, SEED, "--comm_decode=full_layer", "--comm_prefill=full_layer");
    char *json = tu_plan_json(p);
    for (unsigned rank = 0; rank < 4; rank++) {
        char want[256];
        snprintf(want, sizeof want,
                 "{\"stage\": 0, \"tp_rank\": %u, \"split_rank\": %u, "
                 "\"decode_bytes_received\": 16178626560, "
                 "\"prefill_bytes_received\": 48535879680}",
                 rank, rank % 2);
        tu_assert_contains(json, want);
    }
    free(json);
    /* The text: 10 pools, 32,357,253,120 B (32.36 GB), 150 + 1,348,218.88
     * = 1,348,368.88 us (1348.37 ms), which hides the 43.86 ms base: 96 /
     * 1.34836888 s = 71.2 tokens/s, 71.197 / 1,786.30 = 0.04x; the prompt's
     * 30 broadcasts of 97,071,759,360 B (97.07 GB), 450 + 4,044,656.64 =
     * 4,045,106.64 us (4045.11 ms), which only its compute could hide. */
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "decode     96 sequences: 10 collectives, 32.36 GB on the busiest "
                             "link, 1,348.37 ms; base 43.86 ms (17.33 GB of weights, 35.30 GB of "
                             "KV and state); step 1,348.37 ms: 71 tokens/s\n");
    tu_assert_contains(text, "the split gives 0.04x the throughput for 1.68x the sequences\n");
    tu_assert_contains(text, "30 collectives, 97.07 GB, 4,045.11 ms for compute to hide\n");
    free(text);
    kvshard_plan_free(p);
}

/* DeepSeek-V3.2 on 16 x 80 GiB H100, T = 8, D = 2, S = 8 ordinal: 127
 * sequences a replica, 61 DSA layers, H_l = 16. Per layer: all-gather m =
 * 127 x 16 x 576 x 2 = 2,340,864, busiest port 7 x m = 16,386,048; output
 * broadcast 8 x 127 x 16 x 512 x 2 = 16,646,144; link bytes 16,386,048 +
 * 16,646,144 = 33,032,192 a layer. The estimate gives no per-layer figure,
 * but the stage's totals and each rank's receipts pin all four:
 *   link bytes: 61 x 33,032,192 = 2,014,963,712;
 *   wire bytes: 61 x (8 x 7 x 2,340,864 + 7 x 16,646,144) = 61 x
 *     (131,088,384 + 116,523,008) = 61 x 247,611,392 = 15,104,294,912;
 *   a rank receives 7m of every layer's all-gather and the broadcast of
 *   each layer it does not own. Split ranks 0-4 own 8 of the 61 layers
 *   (l mod 8), ranks 5-7 own 7: 61 x 16,386,048 + 53 x 16,646,144 =
 *   999,548,928 + 882,245,632 = 1,881,794,560, and 999,548,928 + 54 x
 *   16,646,144 = 1,898,440,704; the two differ by one broadcast. */
static void deepseek_v3_2_per_layer(void **state)
{
    (void)state;
    const uint64_t m = UINT64_C(127) * 16 * 576 * 2;
    const uint64_t busiest = 7 * m, broadcast = UINT64_C(8) * 127 * 16 * 512 * 2;
    assert_int_equal(m, 2340864);
    assert_int_equal(busiest, 16386048);
    assert_int_equal(broadcast, 16646144);
    assert_int_equal(busiest + broadcast, 33032192);

    kvshard_plan *p = NULL;
    TU_PLAN(&p, "models/deepseek_v3_2.json", "--world_size=16", "--dp_size=2",
            "--enable_layerwise_split=true", "--layerwise_split_size=8", "--device_memory=80GiB",
            "--context_length=32768", "--weights_total=674030337216",
            "--weights_experts=654068416512", "--kv_cache_dtype=fp8", "--comm_accelerator=h100");
    kvshard_comm_estimate e = tu_comm_estimate(p);
    assert_int_equal(e.batch, 127);
    assert_int_equal(e.decode_link_bytes, UINT64_C(61) * 33032192);
    assert_int_equal(e.decode_link_bytes, UINT64_C(2014963712));
    char *json = tu_plan_json(p);
    tu_assert_contains(json, "\"collectives\": 122, \"link_bytes\": 2014963712, "
                             "\"wire_bytes\": 15104294912, ");
    for (unsigned rank = 0; rank < 8; rank++) {
        char want[256];
        snprintf(want, sizeof want,
                 "{\"stage\": 0, \"tp_rank\": %u, \"split_rank\": %u, "
                 "\"decode_bytes_received\": %s, ",
                 rank, rank, rank < 5 ? "1881794560" : "1898440704");
        tu_assert_contains(json, want);
    }
    free(json);
    kvshard_plan_free(p);
}

/* Qwen3.5-397B-A17B (60 layers, full attention every 4th, 2 KV heads x
 * 256, 32 query heads; GDN 16 key and 64 value heads of 128, kernel 4,
 * temporal state float32), under vLLM with an fp8 KV cache (1 B):
 *   a1 = 2 x max(1, 2 / T) x 256 x 1 = 1,024 at TP 1 and 512 at TP 8;
 *   state page = 2 x (2 x 128 x 16 + 128 x 64) x 3 / T + 4 x (64 / T) x
 *   128 x 128 = 73,728 / T + 4,194,304 / T: 4,268,032 at TP 1, 533,504 at
 *   TP 8;
 *   block = 16 x ceil(page / (16 x a1)):
 *     TP 1: 16 x ceil(4,268,032 / 16,384) = 16 x 261 = 4,176
 *     TP 8: 16 x ceil(533,504 / 8,192)    = 16 x 66  = 1,056
 *   an attention page is block x a1: 4,276,224 and 540,672 B, so the
 *   state page is padded by 8,192 / 4,268,032 = 0.19 % and 7,168 / 533,504
 *   = 1.34 %, which the capacity line prints beside the block. */
static void vllm_blocks_qwen3_5_397b(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_model_text(
        "{\"model_type\": \"qwen3_5_moe\", \"text_config\": {\"model_type\": "
        "\"qwen3_5_moe_text\", \"dtype\": \"bfloat16\", \"hidden_size\": 4096, "
        "\"num_hidden_layers\": 60, \"num_attention_heads\": 32, \"num_key_value_heads\": 2, "
        "\"head_dim\": 256, \"full_attention_interval\": 4, \"linear_num_key_heads\": 16, "
        "\"linear_num_value_heads\": 64, \"linear_key_head_dim\": 128, "
        "\"linear_value_head_dim\": 128, \"linear_conv_kernel_dim\": 4, "
        "\"mamba_ssm_dtype\": \"float32\", \"max_position_embeddings\": 262144}}");
    static const uint32_t tp[] = {1, 8};
    static const uint64_t a1[] = {1024, 512};
    static const uint64_t state_page[] = {4268032, 533504};
    static const uint32_t block[] = {4176, 1056};
    static const char *const line[] = {
        "attention block 4,176 tokens (raised from 16), Padding mamba page size by 0.19%\n",
        "attention block 1,056 tokens (raised from 16), Padding mamba page size by 1.34%\n"};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(state_page[i], (UINT64_C(73728) + 4194304) / tp[i]);
        assert_int_equal(block[i], 16 * ((state_page[i] + 16 * a1[i] - 1) / (16 * a1[i])));
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        o.engine = KVSHARD_ENGINE_VLLM;
        o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
        o.world_size = tp[i];
        o.memory_per_rank = UINT64_C(40) << 30;
        kvshard_plan *plan = tu_plan(m, &o);
        kvshard_capacity c = KVSHARD_CAPACITY_INIT;
        assert_int_equal(kvshard_plan_capacity(&c, plan), KVSHARD_OK);
        assert_int_equal(c.engine, KVSHARD_ENGINE_VLLM);
        if (c.block_size != block[i])
            fail_msg("TP %u: vLLM's block %u, expected %u", tp[i], c.block_size, block[i]);
        assert_int_equal(tu_efig(plan, "attention_block_size"), block[i]);
        assert_int_equal(tu_efig(plan, "mamba_page_bytes"), state_page[i]);
        assert_int_equal(tu_efig(plan, "page_bytes"), block[i] * a1[i]);
        uint64_t padding = block[i] * a1[i] - state_page[i];
        assert_int_equal(padding, i == 0 ? 8192 : 7168);
        assert_true(tu_efig_double(plan, "mamba_padding_percent") ==
                    100.0 * (double)padding / (double)state_page[i]);
        char *text = tu_plan_text(plan);
        tu_assert_contains(text, line[i]);
        free(text);
        kvshard_plan_free(plan);
    }
    kvshard_model_free(m);
}

/* The bytes global rank `rank` of P sends: the sum over its edges. */
static uint64_t source_bytes(const kvshard_transfer *t, uint32_t rank)
{
    size_t index[64];
    size_t count = kvshard_transfer_rank_edges(index, 64, t, false, rank);
    assert_true(count <= 64);
    uint64_t bytes = 0;
    for (size_t i = 0; i < count; i++)
        bytes += kvshard_transfer_edge_at(t, index[i])->bytes;
    return bytes;
}

/* Qwen3-Next-80B-A3B, P 2 stages x TP 2 -> D TP 4, 32 K tokens. Global
 * rank 0 (stage 0, TP 0) sends head 0 of the 6 KV layers 3, ..., 23 to D
 * ranks 0 and 1 and their state units of the 18 GDN layers 0-22: 6 x 2 x
 * 1,024 x 32,768 + 2 x 18 x 536,576 = 402,653,184 + 19,316,736 =
 * 421,969,920 B. Global rank 2 (stage 1, TP 0) sends the same of layers
 * 24-47: a tie, and the lower rank is the busiest source; ranks 1 and 3
 * send the same to D ranks 2 and 3. */
static void qwen3_next_stages_sources(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.pp_size = 2;
    kvshard_plan *p = tu_plan(m, &o), *d = tu_plan_tp(m, 4, 1);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    for (uint32_t rank = 0; rank < 4; rank++)
        assert_int_equal(source_bytes(t, rank), UINT64_C(421969920));
    kvshard_transfer_totals tt = KVSHARD_TRANSFER_TOTALS_INIT;
    assert_int_equal(kvshard_transfer_totals_get(&tt, t), KVSHARD_OK);
    assert_int_equal(tt.busiest_source.global_rank, 0);
    assert_int_equal(tt.busiest_source.bytes_per_token, 6 * 2 * 1024);
    assert_int_equal(tt.busiest_source.bytes_fixed, 2 * 18 * 536576);
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(421969920));
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* vLLM's verdict on that pair: its blocks are those of each side's TP
 * size with the GDN temporal state in bf16 (its rule without
 * mamba_ssm_dtype): a1 = 2 x 256 x 2 = 1,024 at TP 2 and TP 4; a GDN
 * layer's page 2 x (2 x 128 x 16 + 128 x 32) x 3 / T + 2 x (32 / T) x 128
 * x 128 = 49,152 / T + 1,048,576 / T:
 *   TP 2: 548,864 B, 16 x ceil(548,864 / 16,384) = 16 x 34 = 544
 *   TP 4: 274,432 B, 16 x ceil(274,432 / 16,384) = 16 x 17 = 272
 * and 272 is no multiple of 544. The message names both. */
static void qwen3_next_block_ratio_message(void **state)
{
    (void)state;
    assert_int_equal(16 * ((UINT64_C(548864) + 16383) / 16384), 544);
    assert_int_equal(16 * ((UINT64_C(274432) + 16383) / 16384), 272);
    assert_int_equal((UINT64_C(49152) + 1048576) / 2, 548864);
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.pp_size = 2;
    kvshard_plan *p = tu_plan(m, &o), *d = tu_plan_tp(m, 4, 1);
    kvshard_options v = KVSHARD_OPTIONS_INIT;
    v.engine = KVSHARD_ENGINE_VLLM;
    v.world_size = 2;
    kvshard_plan *vp = tu_plan(m, &v);
    v.world_size = 4;
    kvshard_plan *vd = tu_plan(m, &v);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_judge(t, vp, vd, &err), &err);
    kvshard_transfer_verdict verdict = KVSHARD_TRANSFER_VERDICT_INIT;
    assert_int_equal(kvshard_transfer_verdict_at(&verdict, t, 0), KVSHARD_OK);
    assert_string_equal(verdict.verdict, "refused");
    assert_int_equal(verdict.reason_count, 2);
    assert_string_equal(verdict.reason_codes[0], "vllm_pp");
    assert_string_equal(verdict.reason_codes[1], "vllm_block_ratio");
    assert_string_equal(verdict.reason_messages[1], "D's block 272 is not a multiple of P's 544");
    kvshard_transfer_free(t);
    kvshard_plan_free(vd);
    kvshard_plan_free(vp);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    /* The CLI prints the same figures and refuses the pair (exit 1). */
    char *path = tu_example_path("models/qwen3_next_80b_a3b.json");
    char args[1024];
    snprintf(args, sizeof args,
             "\"%s\" \"%s\" --p.world_size=4 --p.pp_size=2 --d.world_size=4 "
             "--context_length=32768 --engine=vllm",
             path, path);
    char *out = NULL;
    assert_int_equal(tu_cli("transfer", args, &out, NULL), 1);
    tu_assert_contains(out, "vllm_block_ratio: D's block 272 is not a multiple of P's 544)");
    tu_assert_contains(out, "busiest    P rank 0 (stage 0, TP 0) sends 421,969,920 B");
    free(out);
    free(path);
    kvshard_model_free(m);
}

/* DeepSeek-V3.2, fp8 KV (656 + 132 = 788 B a layer and token), P TP 8 ->
 * D TP 8, 32 K tokens. Unsplit, every P rank t sends all 61 layers to D
 * rank t: 61 x 788 x 32,768 = 1,575,092,224 B each. With a split of 8 on
 * D, P rank t sends the layers l = t mod 8: 8 of them for t = 0-4 (t + 56
 * <= 60), 7 for t = 5-7, so 8 x 788 x 32,768 = 206,569,472 B and 7 x 788 x
 * 32,768 = 180,748,288 B. */
static void deepseek_v3_2_every_source(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v3_2.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    kvshard_plan *p = tu_plan(m, &o);
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 8;
    kvshard_plan *split = tu_plan(m, &o);
    kvshard_transfer *t = tu_transfer(p, p, 32768);
    for (uint32_t rank = 0; rank < 8; rank++)
        assert_int_equal(source_bytes(t, rank), UINT64_C(1575092224));
    kvshard_transfer_free(t);
    t = tu_transfer(p, split, 32768);
    for (uint32_t rank = 0; rank < 8; rank++) {
        size_t layers = rank < 5 ? 8 : 7;
        assert_int_equal(tu_transfer_edge(t, rank, rank, "latent", 0)->layer_count, layers);
        assert_int_equal(tu_transfer_edge(t, rank, rank, "index", 0)->layer_count, layers);
        assert_int_equal(source_bytes(t, rank), layers * 788 * 32768);
    }
    assert_int_equal(UINT64_C(7) * 788 * 32768, 180748288);
    kvshard_transfer_free(t);
    kvshard_plan_free(split);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* fit of DeepSeek-V3.2 on 16 x 80 GiB H100, ranked by throughput: the
 * first row of each layout of its table. Sequences are a replica's times
 * D: 26 x 8 = 208, 61 x 4 = 244, 127 x 2 = 254, 60 x 4 = 240. tok/s
 * rounds 10,834.58, 10,513.88, 7,848.04, 7,396.48; comm/step 1,331.81,
 * 3,218.29, 6,307.70 and, over two stages of 31 and 30 layers, 733.25 +
 * 709.60 = 1,442.85 us. */
static void deepseek_v3_2_fit_table(void **state)
{
    (void)state;
    char *path = tu_example_path("models/deepseek_v3_2.json");
    char args[1024];
    snprintf(args, sizeof args,
             "\"%s\" --gpus=16 --device_memory=80GiB --context_length=32768 "
             "--weights_total=674030337216 --weights_experts=654068416512 "
             "--kv_cache_dtype=fp8 --comm_accelerator=h100",
             path);
    char *out = NULL;
    assert_int_equal(tu_cli("fit", args, &out, NULL), 0);
    static const struct {
        const char *row, *seqs, *figures;
    } rows[] = {
        {"   1     2     1     8     2  ordinal ", "  26  208 ", "  10,835    1.33 ms\n"},
        {"   4     4     1     4     4  ordinal ", "  61  244 ", "  10,514    3.22 ms\n"},
        {"   7     8     1     2     8  ordinal ", " 127  254 ", "  7,848     6.31 ms\n"},
        {"  10     2     2     4     2  ordinal ", "  60  240 ", "  7,396     1.44 ms\n"},
    };
    for (size_t i = 0; i < 4; i++) {
        const char *at = strstr(out, rows[i].row);
        if (!at)
            fail_msg("no row \"%s\" in:\n%s", rows[i].row, out);
        const char *end = strchr(at, '\n');
        assert_non_null(end);
        char line[256];
        size_t len = (size_t)(end - at) + 1;
        assert_true(len < sizeof line);
        memcpy(line, at, len);
        line[len] = '\0';
        tu_assert_contains(line, rows[i].seqs);
        tu_assert_contains(line, rows[i].figures);
    }
    free(out);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_full_layer_received),
        cmocka_unit_test(deepseek_v3_2_per_layer),
        cmocka_unit_test(vllm_blocks_qwen3_5_397b),
        cmocka_unit_test(qwen3_next_stages_sources),
        cmocka_unit_test(qwen3_next_block_ratio_message),
        cmocka_unit_test(deepseek_v3_2_every_source),
        cmocka_unit_test(deepseek_v3_2_fit_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
