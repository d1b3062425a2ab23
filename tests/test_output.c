/* Output: every writer stops at the first failed write, and output and work
 * stay bounded at kvshard's limits (sizes and counts, never times). */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A writer that takes `budget` bytes, then fails and counts what follows. */
typedef struct failing {
    size_t budget;
    size_t taken;
    unsigned calls_after;
    bool failed;
} failing;

static int fail_after(void *user, const char *data, size_t len)
{
    (void)data;
    failing *f = user;
    if (f->failed) {
        f->calls_after++;
        return -1;
    }
    if (f->taken + len > f->budget) {
        f->failed = true;
        return -1;
    }
    f->taken += len;
    return 0;
}

typedef struct counter {
    uint64_t bytes;
    uint64_t calls;
} counter;

static int count_bytes(void *user, const char *data, size_t len)
{
    (void)data;
    counter *c = user;
    c->bytes += len;
    c->calls++;
    return 0;
}

static kvshard_model *big_model(uint32_t layers, uint32_t heads)
{
    char text[512];
    snprintf(text, sizeof text,
             "{num_hidden_layers: %u, full_attention_interval: 4, num_attention_heads: %u, "
             "head_dim: 8, linear_num_key_heads: %u, linear_num_value_heads: %u, "
             "linear_key_head_dim: 8, linear_value_head_dim: 8, linear_conv_kernel_dim: 4}",
             layers, heads, heads, heads);
    return tu_load_model_text(text);
}

typedef int (*plan_writer)(const kvshard_plan *, kvshard_write_fn, void *);
typedef int (*cmp_writer)(const kvshard_comparison *, kvshard_write_fn, void *);

/* Each writer fails with KVSHARD_EWRITE at the first refused write and never
 * calls the writer again, wherever the failure falls. */
static void test_failing_writers(void **state)
{
    (void)state;
    kvshard_model *m = big_model(100000, 8);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    o.memory_per_rank = UINT64_C(1) << 34;
    kvshard_plan *p = tu_plan(m, &o);
    kvshard_comparison *cmp = NULL;
    assert_int_equal(kvshard_comparison_create(&cmp, m, &o, NULL, NULL, NULL), KVSHARD_OK);
    const plan_writer plan_writers[] = {kvshard_plan_write_json, kvshard_plan_write_text,
                                        kvshard_plan_write_svg};
    const cmp_writer cmp_writers[] = {kvshard_comparison_write_json,
                                      kvshard_comparison_write_text};
    /* Each writer's whole output, then budgets that cut it short. */
    for (size_t w = 0; w < 6; w++) {
        counter full = {0, 0};
        int rc = w < 3   ? plan_writers[w](p, count_bytes, &full)
                 : w < 5 ? cmp_writers[w - 3](cmp, count_bytes, &full)
                         : kvshard_report_write_html(p, cmp, NULL, count_bytes, &full);
        assert_int_equal(rc, KVSHARD_OK);
        assert_true(full.bytes > 100);
        const size_t budgets[] = {0, 1, (size_t)full.bytes / 3, (size_t)full.bytes - 1,
                                  (size_t)full.bytes};
        for (size_t b = 0; b < sizeof budgets / sizeof budgets[0]; b++) {
            failing f = {budgets[b], 0, 0, false};
            rc = w < 3   ? plan_writers[w](p, fail_after, &f)
                 : w < 5 ? cmp_writers[w - 3](cmp, fail_after, &f)
                         : kvshard_report_write_html(p, cmp, NULL, fail_after, &f);
            bool enough = budgets[b] == full.bytes;
            assert_int_equal(rc, enough ? KVSHARD_OK : KVSHARD_EWRITE);
            assert_int_equal(f.failed, !enough);
            assert_int_equal(f.calls_after, 0);
        }
    }
    /* NULL arguments. */
    assert_int_equal(kvshard_plan_write_json(NULL, count_bytes, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_text(p, NULL, NULL), KVSHARD_EINVAL);
    kvshard_comparison_free(cmp);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* The plan JSON at the layer-list bound: 2^20 layers, one in four full
 * attention (262144 KV layers), T = 64 unsplit: 64 x 262144 = 16777216
 * list entries, exactly KVSHARD_MAX_LAYER_ENTRIES. The document is at most
 * 128 bytes a layer, 9 an entry, 300 a rank and 4 KiB besides; one more KV
 * layer is refused with KVSHARD_ELIMIT. Text output lists no more than 16
 * layers a split rank and 64 ranks: at most 6 bytes a layer beyond that. */
static void test_json_size_at_bound(void **state)
{
    (void)state;
    const uint32_t L = 1u << 20, T = 64;
    kvshard_model *m = big_model(L, T);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = T;
    kvshard_plan *p = tu_plan(m, &o);
    counter c = {0, 0};
    assert_int_equal(kvshard_plan_write_json(p, count_bytes, &c), KVSHARD_OK);
    uint64_t entries = (uint64_t)T * (L / 4);
    assert_int_equal(entries, KVSHARD_MAX_LAYER_ENTRIES);
    uint64_t bound = 128ull * L + 9ull * entries + 300ull * T + 4096;
    print_message("plan JSON at the bound: %llu bytes (bound %llu), %llu writes\n",
                  (unsigned long long)c.bytes, (unsigned long long)bound,
                  (unsigned long long)c.calls);
    assert_true(c.bytes <= bound);
    counter t = {0, 0};
    assert_int_equal(kvshard_plan_write_text(p, count_bytes, &t), KVSHARD_OK);
    assert_true(t.bytes <= 6ull * L + 200ull * 64 + 8192);
    kvshard_plan_free(p);
    kvshard_model_free(m);

    m = big_model(L + 4, T);
    kvshard_plan *over = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_plan_create(&over, m, &o, NULL, &err), KVSHARD_ELIMIT);
    assert_non_null(strstr(err.message, "16777280 KV layers"));
    kvshard_model_free(m);
}

/* A comparison at the limits: 4 Mi layers (1 Mi KV layers) at world_size
 * 55440, which has 120 divisors: 360 rows. A row of split size S lists
 * (55440 / S) x 2^20 entries, within the bound of 2^24 only when 55440 / S
 * <= 16: the 15 divisors of 55440 up to 16 (all but 13), S from 3465 to
 * 55440. So 45 rows are worked out (each O(KV layers + ranks)) and the
 * other 315 stop at KVSHARD_ELIMIT before any work. */
static void test_compare_work_at_limits(void **state)
{
    (void)state;
    const uint32_t W = 55440;
    kvshard_model *m = big_model(KVSHARD_MAX_LAYERS, W);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = W;
    kvshard_comparison *cmp = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_comparison_create(&cmp, m, &o, NULL, NULL, &err), &err);
    size_t rows = kvshard_comparison_row_count(cmp), worked = 0, limited = 0;
    assert_int_equal(rows, 360);
    for (size_t i = 0; i < rows; i++) {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(cmp, i);
        if (r->error == KVSHARD_OK) {
            assert_true(r->layerwise_split_size >= 3465);
            worked++;
        } else {
            assert_int_equal(r->error, KVSHARD_ELIMIT);
            limited++;
        }
    }
    assert_int_equal(worked, 45);
    assert_int_equal(limited, 315);
    counter c = {0, 0};
    assert_int_equal(kvshard_comparison_write_json(cmp, count_bytes, &c), KVSHARD_OK);
    assert_true(c.bytes <= 360 * 600);
    kvshard_comparison_free(cmp);
    kvshard_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failing_writers),
        cmocka_unit_test(test_json_size_at_bound),
        cmocka_unit_test(test_compare_work_at_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
