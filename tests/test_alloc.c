/* Allocation failure: fail the Nth allocation for every N along the whole
 * load -> flags -> plan -> JSON and text -> compare path, and along a model
 * built from a description. Every call must then fail with KVSHARD_ENOMEM
 * (or succeed), leave its output untouched, and leak nothing. */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A flag file the walks read through their allocator. */
static char flagfile_arg[96];

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
    const char *args[] = {"--context_length=32768", flagfile_arg};
    kvshard_options before = KVSHARD_OPTIONS_INIT, after = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&before, dep);
    rc = kvshard_deployment_apply_args(dep, 2, args, 0, &err);
    if (rc) {
        assert_int_equal(rc, KVSHARD_ENOMEM);
        kvshard_deployment_options(&after, dep);
        assert_int_equal(memcmp(&before, &after, sizeof before), 0); /* all or nothing */
        kvshard_deployment_free(dep);
        return rc;
    }
    kvshard_plan *plan = (kvshard_plan *)(uintptr_t)0x1;
    rc = kvshard_deployment_plan(&plan, dep, &err);
    if (rc == KVSHARD_OK) {
        assert_int_equal(kvshard_plan_write_json(plan, discard, NULL), KVSHARD_OK);
        assert_int_equal(kvshard_plan_write_text(plan, discard, NULL), KVSHARD_OK);
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        kvshard_deployment_options(&o, dep);
        kvshard_comparison *cmp = (kvshard_comparison *)(uintptr_t)0x1;
        rc = kvshard_comparison_create(&cmp, kvshard_deployment_model(dep), &o, NULL, &alloc, &err);
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

typedef int (*path_fn)(counting *c, const char *arg);

static void walk(path_fn run, const char *path)
{
    counting c = {0, 0, 0, false};
    assert_int_equal(run(&c, path), KVSHARD_OK);
    assert_int_equal(c.live, 0);
    size_t total = c.calls;
    /* Every path makes a model, a plan and more through the allocator: a
     * handful of calls at least, each of which is then failed in turn. */
    assert_true(total > 5);
    for (size_t n = 1; n <= total; n++) {
        counting f = {0, n, 0, false};
        int rc = run(&f, path);
        assert_true(f.failed);
        assert_int_equal(rc, KVSHARD_ENOMEM);
        if (f.live != 0)
            print_error("allocation %zu of %zu leaked %zu blocks\n", n, total, f.live);
        assert_int_equal(f.live, 0);
    }
    /* One past the last allocation: nothing fails. */
    counting after = {0, total + 1, 0, false};
    assert_int_equal(run(&after, path), KVSHARD_OK);
    assert_false(after.failed);
}

static void walk_every_allocation(const char *example)
{
    char *path = tu_example_path(example);
    walk(full_path, path);
    free(path);
}

/* A model from a description, its deployment, an xllm plan and comparison. */
static int described_path(counting *c, const char *unused)
{
    (void)unused;
    kvshard_allocator alloc = {counting_malloc, counting_free, c};
    kvshard_layer_kind kinds[8];
    for (int i = 0; i < 8; i++)
        kinds[i] = i % 4 == 3 ? KVSHARD_LAYER_FULL_ATTENTION : KVSHARD_LAYER_LINEAR_ATTENTION;
    kvshard_model_desc d = KVSHARD_MODEL_DESC_INIT;
    d.num_layers = 8;
    d.layer_kinds = kinds;
    d.num_attention_heads = 8;
    d.num_kv_heads = 2;
    d.head_dim = 64;
    d.state_kind = KVSHARD_STATE_MAMBA2;
    d.state_heads = 8;
    d.state_head_dim = 16;
    d.state_size = 16;
    kvshard_model *m = (kvshard_model *)(uintptr_t)0x1;
    kvshard_error err;
    int rc = kvshard_model_create(&m, &d, &alloc, &err);
    if (rc) {
        assert_ptr_equal(m, (kvshard_model *)(uintptr_t)0x1);
        return rc;
    }
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.engine = KVSHARD_ENGINE_XLLM;
    o.memory_per_rank = UINT64_C(1) << 30;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    kvshard_deployment *dep = (kvshard_deployment *)(uintptr_t)0x1;
    if ((rc = kvshard_deployment_create(&dep, m, &o, &err)) != KVSHARD_OK) {
        assert_ptr_equal(dep, (kvshard_deployment *)(uintptr_t)0x1);
        kvshard_model_free(m);
        return rc;
    }
    kvshard_plan *plan = NULL;
    if ((rc = kvshard_deployment_plan(&plan, dep, &err)) == KVSHARD_OK) {
        kvshard_comparison *cmp = NULL;
        rc = kvshard_deployment_compare(&cmp, dep, &err);
        kvshard_comparison_free(cmp);
    }
    kvshard_plan_free(plan);
    kvshard_deployment_free(dep);
    return rc;
}

static void test_described_model(void **state)
{
    (void)state;
    walk(described_path, NULL);
}

static void test_hybrid_and_no_cache(void **state)
{
    (void)state;
    walk_every_allocation("falcon_h1_34b_tp4.yaml");
    walk_every_allocation("nemotron_3_nano_30b_a3b_tp4.yaml");
}

static int setup_flagfile(void **state)
{
    (void)state;
    char path[] = "/tmp/kvshard_alloc_flags_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    const char *text = "# a flag file\n--max_seqs=64\n";
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    snprintf(flagfile_arg, sizeof flagfile_arg, "--flagfile=%s", path);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int remove_flagfile(void **state)
{
    (void)state;
    unlink(flagfile_arg + strlen("--flagfile="));
    return 0;
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
        cmocka_unit_test(test_hybrid_and_no_cache),
        cmocka_unit_test(test_described_model),
    };
    return cmocka_run_group_tests(tests, setup_flagfile, remove_flagfile);
}
