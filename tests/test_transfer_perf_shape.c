/* kvshard transfer routes each class of layers once (layers held alike on
 * both sides): a pair with stages and a split on both sides, whose stage
 * boundaries differ, gives the edges and bytes worked by hand from the
 * route's rules (docs/transfer.md, docs/stages.md section 3). */
#include "test_util.h"

#include "kvshard/explore.h"

#include <string.h>

/* Llama 3.1 8B: 32 full-attention layers, 8 KV heads of (128 + 128) x 2 =
 * 512 B (bf16). A split of 2 with stages cut by `partition`. */
static kvshard_plan *plan_of(const kvshard_model *m, uint32_t world, const uint32_t *partition)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    o.pp_size = 2;
    o.pp_partition = partition;
    o.pp_partition_count = 2;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    o.ownership = KVSHARD_OWNERSHIP_ORDINAL;
    return tu_plan(m, &o);
}

typedef struct expected_edge {
    uint32_t src, dst, src_stage, src_tp, dst_stage, dst_tp, lo, hi;
    uint32_t layers[16];
    uint32_t layer_count;
} expected_edge;

/* P: 2 stages of TP 2 (layers 0-15, 16-31), D: 2 stages of TP 4 (layers
 * 0-8, 9-31), both split 2, ordinal ownership, layout vllm (global rank =
 * stage x T + t). A layer's owner on a side is its stage-local KV ordinal
 * mod 2: on P the layer's parity (16 is even); on D the parity for layers
 * 0-8, the other parity from 9 on. P's owner holds all 8 heads (its group
 * is the whole stage); D's owner of split group {0, 1} holds heads 0-3 and
 * the one of {2, 3} heads 4-7, so D TP rank o and o + 2 hold a layer owned
 * by split rank o. Their homes are P rank floor(t x 2 / 4) = 0 and 1, and
 * only P's owner holds the heads: every unit comes from P's owner. */
static const expected_edge edges[] = {
    {0, 0, 0, 0, 0, 0, 0, 4, {0, 2, 4, 6, 8}, 5},
    {0, 2, 0, 0, 0, 2, 4, 8, {0, 2, 4, 6, 8}, 5},
    {0, 5, 0, 0, 1, 1, 0, 4, {10, 12, 14}, 3},
    {0, 7, 0, 0, 1, 3, 4, 8, {10, 12, 14}, 3},
    {1, 1, 0, 1, 0, 1, 0, 4, {1, 3, 5, 7}, 4},
    {1, 3, 0, 1, 0, 3, 4, 8, {1, 3, 5, 7}, 4},
    {1, 4, 0, 1, 1, 0, 0, 4, {9, 11, 13, 15}, 4},
    {1, 6, 0, 1, 1, 2, 4, 8, {9, 11, 13, 15}, 4},
    {2, 5, 1, 0, 1, 1, 0, 4, {16, 18, 20, 22, 24, 26, 28, 30}, 8},
    {2, 7, 1, 0, 1, 3, 4, 8, {16, 18, 20, 22, 24, 26, 28, 30}, 8},
    {3, 4, 1, 1, 1, 0, 0, 4, {17, 19, 21, 23, 25, 27, 29, 31}, 8},
    {3, 6, 1, 1, 1, 2, 4, 8, {17, 19, 21, 23, 25, 27, 29, 31}, 8},
};

static void test_stages_and_splits_on_both_sides(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("llama3_1_8b.json");
    static const uint32_t p_stages[] = {16, 16}, d_stages[] = {9, 23};
    kvshard_plan *p = plan_of(m, 4, p_stages), *d = plan_of(m, 8, d_stages);
    kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
    o.tokens = 1000;
    kvshard_transfer *t = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_create(&t, p, d, &o, NULL, &err), &err);

    size_t count = sizeof edges / sizeof edges[0];
    assert_int_equal(kvshard_transfer_edge_count(t), count);
    for (size_t i = 0; i < count; i++) {
        const expected_edge *x = &edges[i];
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(t, i);
        assert_int_equal(e->src, x->src);
        assert_int_equal(e->dst, x->dst);
        assert_int_equal(e->src_stage, x->src_stage);
        assert_int_equal(e->src_tp, x->src_tp);
        assert_int_equal(e->dst_stage, x->dst_stage);
        assert_int_equal(e->dst_tp, x->dst_tp);
        assert_string_equal(e->component, "kv");
        assert_string_equal(e->entry, "token");
        assert_int_equal(e->unit_lo, x->lo);
        assert_int_equal(e->unit_hi, x->hi);
        assert_int_equal(e->layer_count, x->layer_count);
        for (uint32_t k = 0; k < x->layer_count; k++)
            assert_int_equal(e->layers[k], x->layers[k]);
        /* 4 heads x 512 B per layer and token. */
        assert_int_equal(e->entry_bytes, 2048);
        assert_int_equal(e->bytes_per_token, (uint64_t)x->layer_count * 2048);
        assert_int_equal(e->bytes, (uint64_t)x->layer_count * 2048 * 1000);
    }

    kvshard_transfer_totals tt = KVSHARD_TRANSFER_TOTALS_INIT;
    assert_int_equal(kvshard_transfer_totals_get(&tt, t), KVSHARD_OK);
    /* Each layer's 8 heads move once: 32 x 8 x 512 = 131,072 B per token. */
    assert_int_equal(tt.unique_per_token, 131072);
    assert_int_equal(tt.wire_per_token, 131072);
    assert_int_equal(tt.unique, UINT64_C(131072000));
    assert_int_equal(tt.wire, UINT64_C(131072000));
    assert_true(tt.replication == 1.0);
    /* Every P rank sends 16 layer-halves (16 x 2,048 x 1,000 =
     * 32,768,000 B): the lowest global rank wins the tie. D ranks 4 and 6
     * take 4 + 8 = 12 layer-halves: 24,576,000 B, rank 4 the lower. */
    assert_int_equal(tt.busiest_source.global_rank, 0);
    assert_int_equal(tt.busiest_source.bytes, UINT64_C(32768000));
    assert_int_equal(tt.busiest_destination.global_rank, 4);
    assert_int_equal(tt.busiest_destination.bytes, UINT64_C(24576000));
    /* 32,768,000 B at 50 GB/s (ndr400) = 655.36 us, rounded up. */
    assert_int_equal(tt.time_us, 656);

    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stages_and_splits_on_both_sides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
