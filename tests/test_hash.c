/* Tables keyed by names an input controls (tensor names, shard names,
 * skipped flags) hash them with a key drawn per table: names crafted to
 * collide under an unkeyed hash cost what ordinary names cost. The work is
 * counted, not timed: the occupied slots lookups pass
 * (kvshard_hash__probes) stay within a few per name, where one chain of
 * colliding names would pass n^2 / 2. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/hash.h"
#include "text/safetensors.h"

#include "crafted_names.h"
#include "fixture_files.h"

/* At most this many slots passed for n names: a few per name, far below the
 * n^2 / 2 of one chain. */
static uint64_t probe_bound(size_t n)
{
    return 8u * (uint64_t)n + 64u;
}

static char *make_temp_dir(void)
{
    (void)mkdir(KVSHARD_TEST_BUILD_DATA, 0777); /* the weights fixture may not have made it */
    char *dir = fixture_temp_dir(KVSHARD_TEST_BUILD_DATA, "hash_");
    assert_non_null(dir);
    return dir;
}

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
    assert_true(fixture_write_file(dir, name, data, len));
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        assert_int_equal(unlink(path), 0);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

/* A shard holding names[from, to), two bytes of F16 each. */
static void write_names_shard(const char *dir, const char *file, const char *names, size_t from,
                              size_t to)
{
    size_t len;
    unsigned char *shard = fixture_names_shard(names, from, to, &len);
    assert_non_null(shard);
    write_file(dir, file, shard, len);
    free(shard);
}

/* The slots passed reading a directory of two shards that split the names
 * between them: the check that no tensor is in both looks each one up. */
static uint64_t probes_reading_tensors(const char *names, size_t n)
{
    char *dir = make_temp_dir();
    write_names_shard(dir, "a.safetensors", names, 0, n / 2);
    write_names_shard(dir, "b.safetensors", names, n / 2, n);
    kvshard__safetensors *set = NULL;
    kvshard_error err;
    uint64_t before = kvshard_hash__probes;
    tu_assert_ok(kvshard_safetensors__read_dir(&set, dir, NULL, 0, &err), &err);
    uint64_t passed = kvshard_hash__probes - before;
    assert_int_equal(set->count, n);
    kvshard_safetensors__free(set);
    remove_dir(dir);
    free(dir);
    return passed;
}

static void test_tensor_names(void **state)
{
    (void)state;
    const size_t n = 2000;
    char *crafted = crafted_tensor_names(n), *plain = plain_tensor_names(n);
    assert_non_null(crafted);
    assert_non_null(plain);
    /* They do collide under the old hash: one state for all. */
    for (size_t i = 1; i < n; i++)
        assert_true(crafted_state16(crafted + 17 * i) == crafted_state16(crafted));
    uint64_t p = probes_reading_tensors(plain, n), c = probes_reading_tensors(crafted, n);
    print_message("tensor names: %llu slots passed for ordinary names, %llu for crafted\n",
                  (unsigned long long)p, (unsigned long long)c);
    assert_true(p <= probe_bound(n));
    assert_true(c <= probe_bound(n));
    free(crafted);
    free(plain);
}

/* An index whose weight_map names a shard per tensor, none of them present:
 * the distinct shards are found through the table of shard names. */
static uint64_t probes_reading_shard_names(const char *names, size_t n)
{
    char *dir = make_temp_dir();
    size_t cap = 128 + n * 64, used = 0;
    char *json = malloc(cap);
    assert_non_null(json);
    used += (size_t)snprintf(json, cap, "{\"metadata\":{\"total_size\":%zu},\"weight_map\":{",
                             2 * n);
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(json + used, cap - used, "%s\"t%zu\":\"%s\"", i ? "," : "", i,
                                 names + 17 * i);
    used += (size_t)snprintf(json + used, cap - used, "}}");
    write_file(dir, "model.safetensors.index.json", json, used);
    free(json);
    kvshard__safetensors *set = NULL;
    kvshard_error err;
    uint64_t before = kvshard_hash__probes;
    int rc = kvshard_safetensors__read_dir(&set, dir, NULL, 0, &err);
    uint64_t passed = kvshard_hash__probes - before;
    /* The shards are absent: an error naming the first, or the index alone. */
    if (rc == KVSHARD_OK)
        kvshard_safetensors__free(set);
    remove_dir(dir);
    free(dir);
    return passed;
}

static void test_shard_names(void **state)
{
    (void)state;
    const size_t n = 2000;
    char *crafted = crafted_tensor_names(n), *plain = plain_tensor_names(n);
    assert_non_null(crafted);
    assert_non_null(plain);
    uint64_t p = probes_reading_shard_names(plain, n),
             c = probes_reading_shard_names(crafted, n);
    print_message("shard names: %llu slots passed for ordinary names, %llu for crafted\n",
                  (unsigned long long)p, (unsigned long long)c);
    assert_true(p <= probe_bound(n));
    assert_true(c <= probe_bound(n));
    free(crafted);
    free(plain);
}

/* Flags --ignore_unknown_flags skips, each kept once. */
static uint64_t probes_skipping(const char *flags, size_t stride, size_t n)
{
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    const char **argv = malloc(n * sizeof *argv);
    assert_non_null(argv);
    for (size_t i = 0; i < n; i++)
        argv[i] = flags + i * stride;
    uint64_t before = kvshard_hash__probes;
    tu_assert_ok(
        kvshard_deployment_apply_args(dep, n, argv, KVSHARD_ARGS_IGNORE_UNKNOWN, &err), &err);
    uint64_t passed = kvshard_hash__probes - before;
    assert_int_equal(kvshard_deployment_ignored_flags(NULL, 0, dep), n);
    free(argv);
    kvshard_deployment_free(dep);
    return passed;
}

static void test_flag_names(void **state)
{
    (void)state;
    const unsigned steps = 11;
    const size_t n = (size_t)1 << steps;
    size_t cs, ps;
    char *crafted = crafted_flags(steps, &cs), *plain = plain_flags(steps, &ps);
    assert_non_null(crafted);
    assert_non_null(plain);
    /* They do collide under FNV-1a, in the low 20 bits a slot comes from. */
    uint64_t low = (1u << CRAFTED_LOW_BITS) - 1, h0 = 0xcbf29ce484222325ull;
    for (size_t i = 1; i < n; i++)
        assert_true((crafted_fnv(h0, crafted + i * cs, cs - 1) & low) ==
                    (crafted_fnv(h0, crafted, cs - 1) & low));
    uint64_t p = probes_skipping(plain, ps, n), c = probes_skipping(crafted, cs, n);
    print_message("skipped flags: %llu slots passed for ordinary names, %llu for crafted\n",
                  (unsigned long long)p, (unsigned long long)c);
    assert_true(p <= probe_bound(n));
    assert_true(c <= probe_bound(n));
    free(crafted);
    free(plain);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tensor_names),
        cmocka_unit_test(test_shard_names),
        cmocka_unit_test(test_flag_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
