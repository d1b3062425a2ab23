/* What the layer-kind and state-kind rows tell transfer and comm: a state
 * kind's parts as they move between TP sizes, the span of a window, and
 * the kinds the communication estimate refuses by name. The figures are
 * worked by hand from each model's config (docs/transfer.md, docs/comm.md). */
#include "test_util.h"

#include "kvshard/explore.h"

#include <string.h>

/* Nemotron-H 8B, Mamba2 state (H = 128 heads of P = 64, N = 128, G = 8
 * groups, K = 4, bf16 conv and state), P TP 1 -> D TP 2. A unit of conv_x
 * is a head's 64 channels x 3 columns x 2 = 384 B; of conv_b and conv_c a
 * group's 128 x 3 x 2 = 768 B; of ssm a head's 64 x 128 x 2 = 16,384 B.
 * D rank t holds heads [64t, 64t + 64) and groups [4t, 4t + 4), all from
 * P rank 0, over the 24 Mamba layers. Its conv parts add up to its conv
 * tensor: (8,192 + 2 x 8 x 128) / 2 = 5,120 channels x 3 x 2 = 30,720 B. */
static void mamba2_parts(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("nemotron_h_8b.json");
    kvshard_plan *p = tu_plan_tp(m, 1, 1), *d = tu_plan_tp(m, 2, 1);
    kvshard_transfer *t = tu_transfer(p, d, 0);
    for (uint32_t td = 0; td < 2; td++) {
        const kvshard_transfer_edge *x = tu_transfer_edge(t, 0, td, "conv_x", 64 * td);
        const kvshard_transfer_edge *b = tu_transfer_edge(t, 0, td, "conv_b", 4 * td);
        const kvshard_transfer_edge *c = tu_transfer_edge(t, 0, td, "conv_c", 4 * td);
        const kvshard_transfer_edge *s = tu_transfer_edge(t, 0, td, "ssm", 64 * td);
        assert_int_equal(x->unit_hi, 64 * td + 64);
        assert_int_equal(b->unit_hi, 4 * td + 4);
        assert_int_equal(x->entry_bytes, 64 * 384); /* 24,576 */
        assert_int_equal(b->entry_bytes, 4 * 768);  /* 3,072 */
        assert_int_equal(c->entry_bytes, 4 * 768);
        assert_int_equal(x->entry_bytes + b->entry_bytes + c->entry_bytes, 30720);
        assert_int_equal(s->entry_bytes, 64 * 16384); /* 1,048,576 */
        assert_int_equal(s->layer_count, 24);
        assert_string_equal(s->entry, "state");
        assert_int_equal(x->bytes_fixed, UINT64_C(24) * 24576); /* 589,824 */
    }
    kvshard_transfer_free(t);
    kvshard_plan_free(p);
    kvshard_plan_free(d);
    kvshard_model_free(m);
}

/* LFM2-8B-A1B, a short convolution of K = 3 over hidden_size 2,048
 * channels, bf16: one part, conv_x, a channel's 2 columns x 2 = 4 B. At
 * D TP 2 rank t holds channels [1,024t, 1,024t + 1,024): 4,096 B, over the
 * 18 conv layers. */
static void short_conv_parts(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("lfm2_8b_a1b.json");
    kvshard_plan *p = tu_plan_tp(m, 1, 1), *d = tu_plan_tp(m, 2, 1);
    kvshard_transfer *t = tu_transfer(p, d, 0);
    for (uint32_t td = 0; td < 2; td++) {
        const kvshard_transfer_edge *x = tu_transfer_edge(t, 0, td, "conv_x", 1024 * td);
        assert_int_equal(x->unit_hi, 1024 * td + 1024);
        assert_int_equal(x->entry_bytes, 4096);
        assert_int_equal(x->layer_count, 18);
    }
    for (size_t i = 0; i < kvshard_transfer_edge_count(t); i++) {
        const char *c = kvshard_transfer_edge_at(t, i)->component;
        assert_true(strcmp(c, "kv") == 0 || strcmp(c, "conv_x") == 0);
    }
    kvshard_transfer_free(t);
    kvshard_plan_free(p);
    kvshard_plan_free(d);
    kvshard_model_free(m);
}

/* A compressed layer's cache does not move yet: refused by name. */
static void compressed_refused(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("deepseek_v4_flash.json");
    kvshard_plan *p = tu_plan_tp(m, 1, 1), *d = tu_plan_tp(m, 1, 1);
    kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
    kvshard_transfer *t = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_transfer_create(&t, p, d, &o, NULL, &err), KVSHARD_EUNMODELED);
    assert_null(t);
    tu_assert_contains(err.message, "transfer_compressed: layer ");
    tu_assert_contains(err.message, " is a compressed layer: moving its window, streams and "
                                    "compressor state is not modelled yet");
    kvshard_plan_free(p);
    kvshard_plan_free(d);
    kvshard_model_free(m);
}

/* The estimate names the first layer it does not price by its kind, and
 * the kinds it prices. */
static void assert_comm_refused(const char *model, const char *expected)
{
    kvshard_plan *p = NULL;
    TU_PLAN(&p, model, "--world_size=4", "--enable_layerwise_split=true",
            "--layerwise_split_size=2", "--memory_per_rank=80GiB", "--comm_accelerator=bi_v100");
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err;
    assert_int_equal(kvshard_plan_comm(&e, p, &err), KVSHARD_EUNMODELED);
    assert_string_equal(err.message, expected);
    kvshard_plan_free(p);
}

static void comm_refuses_by_kind(void **state)
{
    (void)state;
    assert_comm_refused("models/gemma_3_27b.json",
                        "comm: layer 0 is a sliding-window layer; the estimate prices "
                        "full-attention, linear and no-cache layers so far");
    assert_comm_refused("models/llama4_scout.json",
                        "comm: layer 0 is a chunked layer; the estimate prices full-attention, "
                        "linear and no-cache layers so far");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mamba2_parts),
        cmocka_unit_test(short_conv_parts),
        cmocka_unit_test(compressed_refused),
        cmocka_unit_test(comm_refuses_by_kind),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
