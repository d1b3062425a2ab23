/* Allocation failure: fail the Nth allocation for every N along the whole
 * load -> plan -> JSON -> compare path. Every call must then fail with
 * KVSHARD_ENOMEM (or succeed), leave its output untouched, and leak nothing. */
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

typedef struct counting {
    size_t calls;      /* allocations asked for so far */
    size_t fail_at;    /* 1-based allocation to refuse; 0 = never */
    size_t live;       /* allocations not yet freed */
    bool failed;       /* the refusal happened */
} counting;

static void *counting_malloc(void *user, size_t size)
{
    counting *c = user;
    if (++c->calls == c->fail_at) {
        c->failed = true;
        return NULL;
    }
    void *p = malloc(size);
    if (p)
        c->live++;
    return p;
}

static void counting_free(void *user, void *ptr)
{
    counting *c = user;
    if (ptr) {
        c->live--;
        free(ptr);
    }
}

static int discard(void *user, const char *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 0;
}

/* One pass of the full path; returns the first failing status. */
static int full_path(counting *c, const char *deployment_path)
{
    kvshard_allocator alloc = {counting_malloc, counting_free, c};
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &alloc;
    kvshard_deployment *dep = (kvshard_deployment *)(uintptr_t)0x1;
    kvshard_error err;
    int rc = kvshard_deployment_load_file(&dep, deployment_path, &lo, &err);
    if (rc) {
        assert_int_equal(rc, KVSHARD_ENOMEM);
        assert_int_equal(err.code, KVSHARD_ENOMEM);
        assert_ptr_equal(dep, (kvshard_deployment *)(uintptr_t)0x1);
        return rc;
    }
    kvshard_plan *plan = (kvshard_plan *)(uintptr_t)0x1;
    rc = kvshard_deployment_plan(&plan, dep, &err);
    if (rc == KVSHARD_OK) {
        assert_int_equal(kvshard_plan_write_json(plan, discard, NULL), KVSHARD_OK);
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        kvshard_deployment_options(&o, dep);
        kvshard_comparison *cmp = (kvshard_comparison *)(uintptr_t)0x1;
        rc = kvshard_comparison_create(&cmp, kvshard_deployment_model(dep), &o, &alloc, &err);
        if (rc == KVSHARD_OK) {
            assert_int_equal(kvshard_comparison_write_json(cmp, discard, NULL), KVSHARD_OK);
            kvshard_comparison_free(cmp);
        } else {
            assert_ptr_equal(cmp, (kvshard_comparison *)(uintptr_t)0x1);
        }
        kvshard_plan_free(plan);
    } else {
        assert_ptr_equal(plan, (kvshard_plan *)(uintptr_t)0x1);
    }
    if (rc) {
        assert_int_equal(rc, KVSHARD_ENOMEM);
        assert_int_equal(err.code, KVSHARD_ENOMEM);
    }
    kvshard_deployment_free(dep);
    return rc;
}

static void walk_every_allocation(const char *example)
{
    char *path = tu_example_path(example);
    counting c = {0, 0, 0, false};
    assert_int_equal(full_path(&c, path), KVSHARD_OK);
    assert_int_equal(c.live, 0);
    size_t total = c.calls;
    assert_true(total > 10);
    for (size_t n = 1; n <= total; n++) {
        counting f = {0, n, 0, false};
        int rc = full_path(&f, path);
        assert_true(f.failed);
        assert_int_equal(rc, KVSHARD_ENOMEM);
        if (f.live != 0)
            print_error("allocation %zu of %zu leaked %zu blocks\n", n, total, f.live);
        assert_int_equal(f.live, 0);
    }
    /* One past the last allocation: nothing fails. */
    counting after = {0, total + 1, 0, false};
    assert_int_equal(full_path(&after, path), KVSHARD_OK);
    assert_false(after.failed);
    free(path);
}

static void test_seed_deployment(void **state)
{
    (void)state;
    walk_every_allocation("qwen3_5_35b_a3b_tp4.yaml");
}

static void test_mla_deployment(void **state)
{
    (void)state;
    walk_every_allocation("deepseek_v3_2_tp8.yaml");
}

static void test_kimi_deployment(void **state)
{
    (void)state;
    walk_every_allocation("kimi_linear_48b_a3b_tp4.yaml");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_deployment),
        cmocka_unit_test(test_mla_deployment),
        cmocka_unit_test(test_kimi_deployment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
