/* From a device to a budget, the building blocks: the size grammar, the
 * safetensors header reader, tensor classes and each stage's weights per
 * rank, the estimate from two figures, and the layer partition rules. The
 * figures of the tiny_hybrid directory (written by gen_tiny_hybrid before
 * this test runs) are worked out by hand in the comments. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, opendir */
#include "test_util.h"

#include "model/weights.h"
#include "plan/partition.h"
#include "text/safetensors.h"
#include "text/scalar.h"

#include "fixture_files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TINY KVSHARD_TEST_BUILD_DATA "/tiny_hybrid"
#define TINY_CUT KVSHARD_TEST_BUILD_DATA "/tiny_hybrid_cut"

static void assert_contains(const char *text, const char *part)
{
    if (!strstr(text, part))
        print_error("\"%s\" does not contain \"%s\"\n", text, part);
    assert_non_null(strstr(text, part));
}

/* ---- sizes ------------------------------------------------------------------------- */

static void test_size_values(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } cases[] = {
        /* what the grammar took before: bytes, B and the binary units */
        {"0", 0},
        {"1", 1},
        {"0001", 1},
        {"123456789", 123456789},
        {"1B", 1},
        {"512 MiB", UINT64_C(512) << 20},
        {"512   MiB", UINT64_C(512) << 20},
        {"20GiB", UINT64_C(21474836480)},
        {"16777215TiB", UINT64_C(16777215) << 40},
        /* every unit */
        {"1KB", 1000},
        {"1MB", 1000000},
        {"1GB", 1000000000},
        {"1TB", UINT64_C(1000000000000)},
        {"1KiB", 1024},
        {"1MiB", 1048576},
        {"1GiB", 1073741824},
        {"1TiB", UINT64_C(1099511627776)},
        {"7 B", 7},
        /* fractions, exact in decimal and rounded down */
        {"72.5GiB", UINT64_C(77846282240)},
        {"141GB", UINT64_C(141000000000)},
        {"0.1KiB", 102}, /* 102.4 */
        {"1.9B", 1},
        {"1.5KB", 1500},
        {"2.675GB", UINT64_C(2675000000)}, /* not 2674999999: no binary fraction */
        {"4.1GiB", UINT64_C(4402341478)},  /* 4,402,341,478.4 */
        {"0.333333333333333333333333KB", 333},
        {"1.0000000000000000000000000000000000000001B", 1},
        {"0.0000000000000000000000000001TB", 0},
        {"0.9999999999999999999TB", UINT64_C(999999999999)},
        {"0.5 MiB", 524288},
        /* the top: 2^64 - 1 exactly, as bytes and with units */
        {"18446744073709551615", UINT64_MAX},
        {"18446744073709551615B", UINT64_MAX},
        {"18446744073.709551615GB", UINT64_MAX},
        /* 2^64 - 2^40 + floor(0.999999999999 x 2^40) = 2^64 - 2 */
        {"16777215.999999999999TiB", UINT64_MAX - 1},
        /* 64 characters: 16777215 TiB and 2^40 (1 - 10^-52), i.e. 2^64 - 1 */
        {"16777215.9999999999999999999999999999999999999999999999999999TiB", UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 77;
        kvshard_error err;
        kvshard_error__reset(&err);
        int rc = kvshard_scalar__parse_size(&v, cases[i].text, strlen(cases[i].text), 0,
                                            "memory_per_rank", "t", kvshard_error__no_mark, &err);
        if (rc != KVSHARD_OK || v != cases[i].bytes)
            print_error("%s: rc %d (%s), %llu; expected %llu\n", cases[i].text, rc, err.message,
                        (unsigned long long)v, (unsigned long long)cases[i].bytes);
        assert_int_equal(rc, KVSHARD_OK);
        assert_true(v == cases[i].bytes);
    }
    assert_int_equal(strlen("16777215.9999999999999999999999999999999999999999999999999999TiB"),
                     64);
}

static void test_size_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t min;
        int code;
        const char *message;
    } cases[] = {
        {"18446744073709551616", 0, KVSHARD_ERANGE,
         "memory_per_rank: 18446744073709551616 is more than 18446744073709551615 bytes (2^64 - "
         "1)"},
        {"18446744073709551616B", 0, KVSHARD_ERANGE, "is more than 18446744073709551615 bytes"},
        {"18446744073.709551616GB", 0, KVSHARD_ERANGE, "is more than"},
        {"16777216TiB", 0, KVSHARD_ERANGE, "16777216TiB is more than"},
        /* 65 characters: one digit more than the 64-character case above */
        {"16777215.99999999999999999999999999999999999999999999999999999TiB", 0, KVSHARD_ETYPE,
         "it has 65 characters, and a size has at most 64"},
        {"80G", 0, KVSHARD_ETYPE,
         "memory_per_rank: \"80G\" is not a size; did you mean 80GB or 80GiB?; a size is bytes, "
         "or a number and a unit (80GiB, 512 MiB, 72.5GiB, 141GB): B, KB, MB, GB, TB are powers "
         "of 1000, KiB, MiB, GiB, TiB of 1024"},
        {"80gb", 0, KVSHARD_ETYPE, "\"80gb\" is not a size; did you mean 80GB or 80GiB?"},
        {"80Gb", 0, KVSHARD_ETYPE, "did you mean 80GB or 80GiB?"},
        {"80 g", 0, KVSHARD_ETYPE, "did you mean 80GB or 80GiB?"},
        {"80gib", 0, KVSHARD_ETYPE, "did you mean 80GiB?"},
        {"80GIB", 0, KVSHARD_ETYPE, "did you mean 80GiB?"},
        {"80Gi", 0, KVSHARD_ETYPE, "did you mean 80GiB?"},
        {"1.5k", 0, KVSHARD_ETYPE, "did you mean 1.5KB or 1.5KiB?"},
        {"3tb", 0, KVSHARD_ETYPE, "did you mean 3TB or 3TiB?"},
        {"64mb", 0, KVSHARD_ETYPE, "did you mean 64MB or 64MiB?"},
        {"5b", 0, KVSHARD_ETYPE, "did you mean 5B?"},
        {"5 bytes", 0, KVSHARD_ETYPE, "\"5 bytes\" is not a size; a size is bytes"},
        {"1.5", 0, KVSHARD_ETYPE,
         "\"1.5\" is not a size: a number with a fraction needs a unit (1.5GiB, 1.5GB)"},
        {"1.", 0, KVSHARD_ETYPE, "\"1.\" is not a size; a size is"},
        {"1.GiB", 0, KVSHARD_ETYPE, "is not a size"},
        {".5GiB", 0, KVSHARD_ETYPE, "is not a size"},
        {"5 ", 0, KVSHARD_ETYPE, "spaces may stand only between the number and its unit"},
        {" 5GiB", 0, KVSHARD_ETYPE, "spaces may stand only between"},
        {"5GiB ", 0, KVSHARD_ETYPE, "spaces may stand only between"},
        {"5\tGiB", 0, KVSHARD_ETYPE, "and no other blank"},
        {"1e9", 0, KVSHARD_ETYPE, "\"1e9\" is not a size"},
        {"1,5GiB", 0, KVSHARD_ETYPE, "is not a size"},
        {"+5GiB", 0, KVSHARD_ETYPE, "a size has no sign"},
        {"-1GiB", 0, KVSHARD_ERANGE, "\"-1GiB\" is negative; expected a size in bytes"},
        {"-1", 0, KVSHARD_ERANGE, "is negative"},
        {"", 0, KVSHARD_ETYPE, "\"\" is not a size"},
        {"GiB", 0, KVSHARD_ETYPE, "\"GiB\" is not a size"},
        {"5 GiB B", 0, KVSHARD_ETYPE, "is not a size"},
        {"0", 1, KVSHARD_ERANGE, "memory_per_rank: 0 is 0 bytes; the least is 1 byte"},
        {"0.5B", 1, KVSHARD_ERANGE, "0.5B is 0 bytes; the least is 1 byte"},
        {"0GiB", 1, KVSHARD_ERANGE, "0GiB is 0 bytes"},
        {"1023", 1024, KVSHARD_ERANGE, "1023 is 1023 bytes; the least is 1024 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t v = 77;
        kvshard_error err;
        kvshard_error__reset(&err);
        kvshard__mark at = {3, 20, 40};
        int rc = kvshard_scalar__parse_size(&v, cases[i].text, strlen(cases[i].text), cases[i].min,
                                     "memory_per_rank", "dep.yaml", at, &err);
        if (rc != cases[i].code)
            print_error("\"%s\": %d (%s)\n", cases[i].text, rc, err.message);
        assert_int_equal(rc, cases[i].code);
        assert_true(v == 77);
        assert_contains(err.message, cases[i].message);
        assert_true(strncmp(err.message, "memory_per_rank: ", 17) == 0);
        assert_string_equal(err.source, "dep.yaml");
        assert_int_equal(err.line, 3);
        assert_int_equal(err.column, 20);
        /* NULL err gives the same answer */
        assert_int_equal(kvshard_scalar__parse_size(&v, cases[i].text, strlen(cases[i].text),
                                                    cases[i].min, "m", "s", kvshard_error__no_mark,
                                                    NULL),
                         cases[i].code);
    }
}

/* The options take the new forms as they took the old ones; a YAML float is
 * still not a size. */
static void test_size_options(void **state)
{
    (void)state;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_options_set(&o, "memory_per_rank", "72.5GiB", NULL, &err), &err);
    assert_true(o.memory_per_rank == UINT64_C(77846282240));
    kvshard_settings *s = tu_settings("device_memory_total", "141GB", NULL);
    char total[32];
    assert_int_equal(kvshard_settings_get(total, sizeof total, NULL, s, "device_memory_total"),
                     KVSHARD_OK);
    assert_string_equal(total, "141000000000");
    kvshard_settings_free(s);
    assert_int_equal(kvshard_options_set(&o, "memory_per_rank", "80G", NULL, &err), KVSHARD_ETYPE);
    assert_contains(err.message, "did you mean 80GB or 80GiB?");

    static const struct {
        const char *value;
        int code;
        uint64_t bytes;
    } files[] = {
        {"8.5", KVSHARD_ETYPE, 0},       /* a plain float */
        {"!!float 8", KVSHARD_ETYPE, 0}, /* a tagged one */
        {"8e9", KVSHARD_ETYPE, 0},
        {"\"8.5GB\"", KVSHARD_OK, UINT64_C(8500000000)},
        {"8.5GB", KVSHARD_OK, UINT64_C(8500000000)},
        {"512 MiB", KVSHARD_OK, UINT64_C(536870912)},
        {"\"1073741824\"", KVSHARD_ETYPE, 0}, /* a quoted bare number, as before */
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char text[256];
        snprintf(text, sizeof text,
                 "model: {num_hidden_layers: 1, head_dim: 8, num_key_value_heads: 1}\n"
                 "cache:\n  memory_per_rank: %s\n",
                 files[i].value);
        kvshard_deployment *dep = NULL;
        int rc =
            kvshard_deployment_load_string(&dep, text, strlen(text), "t.yaml", NULL, NULL, &err);
        if (rc != files[i].code)
            print_error("%s: %d (%s)\n", files[i].value, rc, err.message);
        assert_int_equal(rc, files[i].code);
        if (rc == KVSHARD_OK) {
            kvshard_options got = KVSHARD_OPTIONS_INIT;
            kvshard_deployment_options(&got, dep);
            assert_true(got.memory_per_rank == files[i].bytes);
        } else {
            assert_int_equal(err.line, 3);
        }
        kvshard_deployment_free(dep);
    }
}

/* ---- files for the reader ---------------------------------------------------------- */

static char *make_temp_dir(void)
{
    char *dir = fixture_temp_dir(KVSHARD_TEST_BUILD_DATA, "st_");
    assert_non_null(dir);
    return dir;
}

static void write_bytes(const char *dir, const char *name, const void *data, size_t len)
{
    assert_true(fixture_write_file(dir, name, data, len));
}

/* A shard: N = `declared` (strlen(json) when ~0), the JSON, `data` zeros. */
static void write_shard(const char *dir, const char *name, const char *json, uint64_t declared,
                        size_t data)
{
    size_t len = strlen(json);
    uint64_t n = declared == UINT64_MAX ? len : declared;
    size_t total = 8 + len + data;
    unsigned char *buf = calloc(1, total);
    assert_non_null(buf);
    for (int i = 0; i < 8; i++)
        buf[i] = (unsigned char)(n >> (8 * i));
    memcpy(buf + 8, json, len);
    write_bytes(dir, name, buf, total);
    free(buf);
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        assert_int_equal(lstat(path, &st), 0);
        if (S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            assert_int_equal(unlink(path), 0);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

static kvshard__safetensors *read_ok(const char *dir)
{
    kvshard__safetensors *set = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_safetensors__read_dir(&set, dir, NULL, 0, &err), &err);
    assert_non_null(set);
    return set;
}

/* Read `dir`; it must fail with `code` and a message with `message`. */
static void read_fails(const char *dir, size_t max_tensors, int code, const char *message,
                       kvshard_error *out_err)
{
    kvshard__safetensors *set = (kvshard__safetensors *)(uintptr_t)0x5a5a;
    kvshard_error err;
    int rc = kvshard_safetensors__read_dir(&set, dir, NULL, max_tensors, &err);
    if (rc != code)
        print_error("%s: got %s (%s), expected %s\n", dir, kvshard_strerror(rc), err.message,
                    kvshard_strerror(code));
    assert_int_equal(rc, code);
    assert_int_equal(err.code, code);
    assert_true(set == (kvshard__safetensors *)(uintptr_t)0x5a5a);
    assert_true(strncmp(err.message, "safetensors: ", 13) == 0);
    assert_contains(err.message, message);
    if (out_err)
        *out_err = err;
}

/* ---- the tiny_hybrid headers --------------------------------------------------------- */

static const kvshard__tensor *find_tensor(const kvshard__safetensors *s, const char *name)
{
    for (size_t i = 0; i < s->count; i++) {
        if (strcmp(s->tensors[i].name, name) == 0)
            return &s->tensors[i];
    }
    fail_msg("no tensor %s", name);
    return NULL;
}

static void test_read_tiny_hybrid(void **state)
{
    (void)state;
    kvshard__safetensors *s = read_ok(TINY);
    assert_int_equal(s->files, KVSHARD__ST_INDEX);
    assert_int_equal(s->shard_count, 2);
    assert_string_equal(s->shards[0], "model-00001-of-00002.safetensors");
    assert_string_equal(s->shards[1], "model-00002-of-00002.safetensors");
    assert_int_equal(s->count, 126);
    assert_true(s->total_bytes == 142124);
    assert_true(s->has_total_size);
    assert_true(s->total_size == 142124);
    assert_false(s->total_size_mismatch);
    /* Shard 1: the embedding and layers 0-1, 19 MLP and 7 GDN tensors each. */
    size_t first = 0;
    for (size_t i = 0; i < s->count; i++)
        first += s->tensors[i].shard == 0;
    assert_int_equal(first, 53);
    const kvshard__tensor *t = &s->tensors[0];
    assert_string_equal(t->name, "model.embed_tokens.weight");
    assert_int_equal(t->name_len, strlen(t->name));
    assert_string_equal(t->dtype, "BF16");
    assert_int_equal(t->bits, 16);
    assert_int_equal(t->ndim, 2);
    assert_true(t->shape[0] == 128 && t->shape[1] == 32);
    assert_true(t->elements == 4096 && t->bytes == 8192);
    assert_int_equal(t->shard, 0);
    t = find_tensor(s, "model.layers.3.self_attn.o_proj.weight");
    assert_string_equal(t->dtype, "F8_E4M3");
    assert_true(t->bytes == 1024 && t->shard == 1);
    t = find_tensor(s, "model.layers.2.linear_attn.conv1d.weight");
    assert_int_equal(t->ndim, 3);
    assert_true(t->shape[0] == 96 && t->shape[1] == 1 && t->shape[2] == 4 && t->bytes == 768);
    t = find_tensor(s, "model.layers.3.self_attn.o_proj.weight_scale_inv");
    assert_true(t->elements == 1 && t->bytes == 4);
    assert_string_equal(s->tensors[s->count - 1].name,
                        "mtp.layers.0.mlp.experts.3.down_proj.weight");

    /* Cut after the headers: the files are shorter, the list is the same. */
    struct stat full, cut;
    assert_int_equal(stat(TINY "/model-00002-of-00002.safetensors", &full), 0);
    assert_int_equal(stat(TINY_CUT "/model-00002-of-00002.safetensors", &cut), 0);
    assert_true(cut.st_size < full.st_size);
    kvshard__safetensors *c = read_ok(TINY_CUT);
    assert_int_equal(c->count, s->count);
    assert_true(c->total_bytes == s->total_bytes);
    for (size_t i = 0; i < s->count; i++) {
        const kvshard__tensor *a = &s->tensors[i], *b = &c->tensors[i];
        assert_string_equal(a->name, b->name);
        assert_string_equal(a->dtype, b->dtype);
        assert_int_equal(a->ndim, b->ndim);
        for (uint32_t d = 0; d < a->ndim; d++)
            assert_true(a->shape[d] == b->shape[d]);
        assert_true(a->bytes == b->bytes && a->shard == b->shard);
    }
    kvshard_safetensors__free(c);
    kvshard_safetensors__free(s);
    kvshard_safetensors__free(NULL);
}

/* ---- which files ---------------------------------------------------------------------- */

static const char ONE_TENSOR[] = "{\"t\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";

static void test_which_files(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    kvshard__safetensors *s = read_ok(dir);
    assert_int_equal(s->files, KVSHARD__ST_NONE);
    assert_int_equal(s->count, 0);
    assert_int_equal(s->shard_count, 0);
    kvshard_safetensors__free(s);

    /* Every *.safetensors in byte order of names ("B" < "a" < "b"); other
     * files and a directory with the suffix are passed over. */
    write_shard(dir, "b.safetensors",
                "{\"b\":{\"dtype\":\"U8\",\"shape\":[1,1],\"data_offsets\":[0,1]}}", UINT64_MAX, 1);
    write_shard(dir, "a.safetensors",
                "{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}", UINT64_MAX, 0);
    write_shard(dir, "B.safetensors", "{\"__metadata__\":{\"format\":\"pt\"}}", UINT64_MAX, 0);
    write_bytes(dir, "notes.txt", "x", 1);
    write_bytes(dir, "x.safetensors.part", "x", 1);
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/d.safetensors", dir);
    assert_int_equal(mkdir(sub, 0777), 0);
    s = read_ok(dir);
    assert_int_equal(s->files, KVSHARD__ST_GLOB);
    assert_int_equal(s->shard_count, 3);
    assert_string_equal(s->shards[0], "B.safetensors");
    assert_string_equal(s->shards[1], "a.safetensors");
    assert_string_equal(s->shards[2], "b.safetensors");
    assert_int_equal(s->count, 2);
    assert_string_equal(s->tensors[0].name, "a");
    assert_int_equal(s->tensors[0].shard, 1);
    assert_string_equal(s->tensors[1].name, "b");
    assert_int_equal(s->tensors[1].shard, 2);
    assert_true(s->total_bytes == 4);
    assert_false(s->has_total_size);
    kvshard_safetensors__free(s);

    /* model.safetensors alone wins over the others. */
    write_shard(dir, "model.safetensors", ONE_TENSOR, UINT64_MAX, 4);
    s = read_ok(dir);
    assert_int_equal(s->files, KVSHARD__ST_SINGLE);
    assert_int_equal(s->shard_count, 1);
    assert_string_equal(s->shards[0], "model.safetensors");
    assert_int_equal(s->count, 1);
    kvshard_safetensors__free(s);

    /* The index wins over both; its shards in the order they first appear,
     * a total_size that differs from the headers is flagged. */
    const char *index = "{\"metadata\": {\"total_size\": 999, \"format\": \"x\"}, \"other\": 1,\n"
                        " \"weight_map\": {\"b\": \"b.safetensors\", \"a\": \"a.safetensors\",\n"
                        "                \"b2\": \"b.safetensors\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    s = read_ok(dir);
    assert_int_equal(s->files, KVSHARD__ST_INDEX);
    assert_int_equal(s->shard_count, 2);
    assert_string_equal(s->shards[0], "b.safetensors");
    assert_string_equal(s->shards[1], "a.safetensors");
    assert_string_equal(s->tensors[0].name, "b");
    assert_true(s->has_total_size && s->total_size == 999 && s->total_bytes == 4);
    assert_true(s->total_size_mismatch);
    kvshard_safetensors__free(s);

    /* An index without metadata has no total_size. */
    index = "{\"weight_map\": {\"a\": \"a.safetensors\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    s = read_ok(dir);
    assert_false(s->has_total_size);
    assert_false(s->total_size_mismatch);
    kvshard_safetensors__free(s);
    remove_tree(dir);
    free(dir);
}

/* ---- the reader's checks ------------------------------------------------------------- */

typedef struct header_case {
    const char *json;
    uint64_t declared; /* UINT64_MAX: the JSON's length */
    int code;
    const char *message;
} header_case;

static void test_header_errors(void **state)
{
    (void)state;
    static const header_case cases[] = {
        /* the length */
        {"{}", UINT64_C(100000001), KVSHARD_ELIMIT,
         "safetensors: model.safetensors: the header length is 100000001 bytes, above the "
         "format's limit of 100,000,000"},
        {"{}", UINT64_C(70000000), KVSHARD_ELIMIT,
         "the header is 70000000 bytes; kvshard parses at most 67108864 bytes of JSON"},
        {"{\"t\": {}}", 100, KVSHARD_ESYNTAX,
         "the file ends inside its header: 8 + 100 bytes announced, 17 present"},
        /* not JSON, not an object */
        {"{\"t\": {\"dtype\": ", UINT64_MAX, KVSHARD_ESYNTAX, "the header is not JSON: "},
        {"", UINT64_MAX, KVSHARD_ESYNTAX,
         "the header is not JSON: expected a JSON value (an object, an array, a string, a "
         "number, true, false or null), found the end of the text (the text is empty)"},
        {"[1, 2]", UINT64_MAX, KVSHARD_ETYPE, "the header is not a JSON object (found a list)"},
        {"\"text\"", UINT64_MAX, KVSHARD_ETYPE, "the header is not a JSON object"},
        {"t: {dtype: F16, shape: [2], data_offsets: [0, 4]}", UINT64_MAX, KVSHARD_ESYNTAX,
         "the header is not JSON: expected a JSON value (an object, an array, a string, a "
         "number, true, false or null), found 't'"},
        {"{t: {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ESYNTAX,
         "the header is not JSON: expected a key in double quotes or '}', found 't'"},
        {"{\"t\": {\"dtype\": F16, \"shape\": [2], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ESYNTAX,
         "the header is not JSON: expected a JSON value (an object, an array, a "
         "string, a number, true, false or null), found 'F16'"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}, "
         "\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}}",
         UINT64_MAX, KVSHARD_EDUPKEY, "duplicate key \"t\""},
        /* entries */
        {"{\"t\": [1]}", UINT64_MAX, KVSHARD_ETYPE,
         "tensor \"t\": expected an object of dtype, shape and data_offsets, found a list"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2]}}", UINT64_MAX, KVSHARD_EMISSING,
         "tensor \"t\" has no data_offsets (an entry holds dtype, shape and data_offsets)"},
        {"{\"t\": {\"shape\": [2], \"data_offsets\": [0, 4]}}", UINT64_MAX, KVSHARD_EMISSING,
         "tensor \"t\" has no dtype"},
        {"{\"t\": {\"dtype\": \"F16\", \"data_offsets\": [0, 4]}}", UINT64_MAX, KVSHARD_EMISSING,
         "tensor \"t\" has no shape"},
        {"{\"t\": {\"dtype\": 5, \"shape\": [2], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "tensor \"t\": dtype must be a string, found \"5\""},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": \"2\", \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "tensor \"t\": shape must be a list of integers, found the string \"2\""},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [-2], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "shape must be a list of integers from 0 to 2^64 - 1, found \"-2\""},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2.0], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "found \"2.0\""},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [02], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ESYNTAX, "the header is not JSON: a number with a leading zero"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [\"2\"], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "found the string \"2\""},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [18446744073709551616], \"data_offsets\": [0, "
         "4]}}",
         UINT64_MAX, KVSHARD_EOVERFLOW, "found \"18446744073709551616\""},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "tensor \"t\": data_offsets must be two integers [begin, end]"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4, 8]}}", UINT64_MAX,
         KVSHARD_ETYPE, "data_offsets must be two integers"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": {\"begin\": 0}}}",
         UINT64_MAX, KVSHARD_ETYPE, "data_offsets must be two integers"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, \"4\"]}}", UINT64_MAX,
         KVSHARD_ETYPE, "data_offsets must be two integers"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [-1, 4]}}", UINT64_MAX,
         KVSHARD_ETYPE, "data_offsets must be two integers"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, "
         "18446744073709551616]}}",
         UINT64_MAX, KVSHARD_EOVERFLOW, "data_offsets must be two integers"},
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [8, 4]}}", UINT64_MAX,
         KVSHARD_ERANGE, "tensor \"t\": data_offsets [8, 4] begin after they end"},
        /* byte counts of the known dtypes */
        {"{\"t\": {\"dtype\": \"F16\", \"shape\": [2, 3], \"data_offsets\": [0, 10]}}", UINT64_MAX,
         KVSHARD_ERANGE,
         "tensor \"t\": F16 [2, 3] takes 12 bytes, but data_offsets [0, 10] hold 10"},
        {"{\"t\": {\"dtype\": \"BF16\", \"shape\": [], \"data_offsets\": [0, 4]}}", UINT64_MAX,
         KVSHARD_ERANGE, "BF16 [] takes 2 bytes"},
        {"{\"t\": {\"dtype\": \"F4\", \"shape\": [3], \"data_offsets\": [0, 1]}}", UINT64_MAX,
         KVSHARD_ERANGE, "F4 [3] takes 2 bytes"},
        {"{\"t\": {\"dtype\": \"F6_E3M2\", \"shape\": [5], \"data_offsets\": [0, 3]}}", UINT64_MAX,
         KVSHARD_ERANGE, "F6_E3M2 [5] takes 4 bytes"},
        {"{\"t\": {\"dtype\": \"I64\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}}", UINT64_MAX,
         KVSHARD_ERANGE, "I64 [2, 2] takes 32 bytes"},
        {"{\"t\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, "
         "4]}}",
         UINT64_MAX, KVSHARD_EOVERFLOW,
         "tensor \"t\": shape [4294967296, 4294967296] has more than 2^64 - 1 elements"},
        {"{\"t\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904, 2], \"data_offsets\": [0, "
         "4]}}",
         UINT64_MAX, KVSHARD_EOVERFLOW,
         "tensor \"t\": F32 [4611686018427387904, 2] takes more than 2^64 - 1 bytes"},
        /* 2^63 - 8 one-byte elements are 2^63 - 8 bytes, though their bits
         * pass 2^64: the count is compared, not overflowed */
        {"{\"t\": {\"dtype\": \"U8\", \"shape\": [9223372036854775800], \"data_offsets\": [0, "
         "8]}}",
         UINT64_MAX, KVSHARD_ERANGE,
         "tensor \"t\": U8 [9223372036854775800] takes 9223372036854775800 bytes, but "
         "data_offsets [0, 8] hold 8"},
        /* two tensors that share a byte of the file: the format stores each
         * byte once, so one of them is misdescribed */
        {"{\"a\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [0, 8]}, "
         "\"b\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [4, 12]}}",
         UINT64_MAX, KVSHARD_ERANGE,
         "tensor \"b\": data_offsets [4, 12] overlap those of tensor \"a\", [0, 8]; a "
         "safetensors file stores each byte once"},
        /* listed out of file order: the one the header lists later is named */
        {"{\"b\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [8, 16]}, "
         "\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 12]}}",
         UINT64_MAX, KVSHARD_ERANGE,
         "tensor \"a\": data_offsets [0, 12] overlap those of tensor \"b\", [8, 16]"},
        /* one range inside another, with a third after both */
        {"{\"big\": {\"dtype\": \"U8\", \"shape\": [16], \"data_offsets\": [0, 16]}, "
         "\"x\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [16, 18]}, "
         "\"in\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [4, 6]}}",
         UINT64_MAX, KVSHARD_ERANGE,
         "tensor \"in\": data_offsets [4, 6] overlap those of tensor \"big\", [0, 16]"},
        /* the same range twice */
        {"{\"a\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}, "
         "\"b\": {\"dtype\": \"F16\", \"shape\": [2], \"data_offsets\": [0, 4]}}",
         UINT64_MAX, KVSHARD_ERANGE,
         "tensor \"b\": data_offsets [0, 4] overlap those of tensor \"a\", [0, 4]"},
        /* a range that overlaps the one before the one before it */
        {"{\"a\": {\"dtype\": \"U8\", \"shape\": [10], \"data_offsets\": [0, 10]}, "
         "\"b\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [10, 11]}, "
         "\"c\": {\"dtype\": \"U8\", \"shape\": [3], \"data_offsets\": [9, 12]}}",
         UINT64_MAX, KVSHARD_ERANGE,
         "tensor \"c\": data_offsets [9, 12] overlap those of tensor \"a\", [0, 10]"},
        /* past the count of tensors allowed (3 in this test) */
        {"{\"a\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}, "
         "\"b\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [1, 2]}, "
         "\"c\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [2, 3]}, "
         "\"d\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [3, 4]}}",
         UINT64_MAX, KVSHARD_ELIMIT, "more than 3 tensors in the directory's headers (the limit)"},
    };
    char *dir = make_temp_dir();
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_shard(dir, "model.safetensors", cases[i].json, cases[i].declared, 0);
        kvshard_error err;
        read_fails(dir, 3, cases[i].code, cases[i].message, &err);
        assert_contains(err.message, "safetensors: model.safetensors: ");
        assert_string_equal(err.source, path);
        /* The same bytes in memory give the same error. */
        size_t len = strlen(cases[i].json);
        unsigned char *image = malloc(8 + len + 1);
        assert_non_null(image);
        uint64_t n = cases[i].declared == UINT64_MAX ? len : cases[i].declared;
        for (int k = 0; k < 8; k++)
            image[k] = (unsigned char)(n >> (8 * k));
        memcpy(image + 8, cases[i].json, len);
        kvshard__safetensors *s = NULL;
        kvshard_error mem_err;
        int rc = kvshard_safetensors__read_bytes(&s, image, 8 + len, "model.safetensors", NULL, 3,
                                                 &mem_err);
        assert_int_equal(rc, cases[i].code);
        assert_null(s);
        assert_contains(mem_err.message, cases[i].message);
        assert_string_equal(mem_err.source, "model.safetensors");
        free(image);
    }

    /* A file shorter than the length field. */
    write_bytes(dir, "model.safetensors", "\x02\0\0\0\0", 5);
    read_fails(dir, 0, KVSHARD_ESYNTAX,
               "safetensors: model.safetensors: the file is 5 bytes, shorter than the 8 that give "
               "its header's length",
               NULL);
    write_bytes(dir, "model.safetensors", "", 0);
    read_fails(dir, 0, KVSHARD_ESYNTAX, "the file is 0 bytes", NULL);

    /* Where: line and column in the JSON, the offset in the file (8 + 14). */
    write_shard(dir, "model.safetensors",
                "{\"t\":{\"dtype\":5,\"shape\":[2],\"data_offsets\":[0,4]}}", UINT64_MAX, 4);
    kvshard_error err;
    read_fails(dir, 0, KVSHARD_ETYPE, "dtype must be a string", &err);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 15);
    assert_int_equal(err.offset, 22);
    write_shard(dir, "model.safetensors",
                "{\"t\":\n {\"dtype\":\"F16\",\"shape\":[2,3],\n"
                "  \"data_offsets\":[0,10]}}",
                UINT64_MAX, 0);
    read_fails(dir, 0, KVSHARD_ERANGE, "F16 [2, 3] takes 12 bytes", &err);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 18);

    /* An overlap is located at the data_offsets of the tensor named first:
     * line 3, column 24 of the JSON (two lines of 61 bytes and their line
     * feeds, then 21 bytes of the third), 8 + 145 bytes into the file. */
    write_shard(dir, "model.safetensors",
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [8], \"data_offsets\": [0, 8]},\n"
                " \"z\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [3, 3]},\n"
                " \"b\": {\"data_offsets\": [7, 9], \"dtype\": \"U8\", \"shape\": [2]}}",
                UINT64_MAX, 9);
    read_fails(dir, 0, KVSHARD_ERANGE,
               "tensor \"b\": data_offsets [7, 9] overlap those of tensor \"a\", [0, 8]", &err);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 24);
    assert_int_equal(err.offset, 8 + 145);

    /* A tensor name that is not printable is escaped in the message. */
    write_shard(dir, "model.safetensors",
                "{\"a\\u0001b\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                UINT64_MAX, 0);
    read_fails(dir, 0, KVSHARD_ERANGE, "tensor \"a\\x01b\": F16 [1] takes 2 bytes", NULL);

    /* Accepted: __metadata__, padding, an unknown dtype as stored, a zero
     * dimension, [] as one element, fields in any order and extra ones. */
    write_shard(
        dir, "model.safetensors",
        "{\"__metadata__\": {\"format\": \"pt\"}, "
        "\"q\": {\"shape\": [10], \"dtype\": \"Q4_K\", \"data_offsets\": [0, 7], "
        "\"x\": 1}, "
        "\"z\": {\"dtype\": \"F32\", \"shape\": [0, 4294967296, 4294967296], "
        "\"data_offsets\": [7, 7]}, "
        "\"s\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [7, 11]}, "
        "\"f\": {\"dtype\": \"F4\", \"shape\": [3], \"data_offsets\": [11, 13]}, "
        "\"e\": {\"dtype\": \"F6_E2M3\", \"shape\": [5], \"data_offsets\": [13, 17]}}      ",
        UINT64_MAX, 17);
    kvshard__safetensors *s = read_ok(dir);
    assert_int_equal(s->count, 5);
    assert_string_equal(s->tensors[0].name, "q");
    assert_string_equal(s->tensors[0].dtype, "Q4_K");
    assert_int_equal(s->tensors[0].bits, 0);
    assert_true(s->tensors[0].bytes == 7 && s->tensors[0].elements == 10);
    assert_true(s->tensors[1].elements == 0 && s->tensors[1].bytes == 0);
    assert_true(s->tensors[2].elements == 1 && s->tensors[2].ndim == 0 && s->tensors[2].bytes == 4);
    assert_true(s->tensors[3].bits == 4 && s->tensors[3].bytes == 2);
    assert_true(s->tensors[4].bits == 6 && s->tensors[4].bytes == 4);
    assert_true(s->total_bytes == 17);
    kvshard_safetensors__free(s);

    /* Ranges that touch share no byte, and an empty range shares none with
     * the range around it: [0, 4), [4, 8) and [2, 2) are three tensors. */
    write_shard(dir, "model.safetensors",
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}, "
                "\"z\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [2, 2]}, "
                "\"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [4, 8]}}",
                UINT64_MAX, 8);
    s = read_ok(dir);
    assert_int_equal(s->count, 3);
    assert_true(s->total_bytes == 8);
    kvshard_safetensors__free(s);

    /* Exactly the allowed count passes; the default bound is 2^20. */
    write_shard(dir, "model.safetensors",
                "{\"a\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [0, 1]}, "
                "\"__metadata__\": {}, "
                "\"b\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [1, 2]}, "
                "\"c\": {\"dtype\": \"U8\", \"shape\": [], \"data_offsets\": [2, 3]}}",
                UINT64_MAX, 3);
    assert_int_equal(kvshard_safetensors__read_dir(&s, dir, NULL, 3, &err), KVSHARD_OK);
    assert_int_equal(s->count, 3);
    kvshard_safetensors__free(s);
    assert_int_equal(kvshard_safetensors__read_dir(&s, dir, NULL, 2, &err), KVSHARD_ELIMIT);
    assert_contains(err.message, "more than 2 tensors");
    assert_int_equal(KVSHARD__ST_MAX_TENSORS, 1048576);
    remove_tree(dir);
    free(dir);
}

static void test_index_errors(void **state)
{
    (void)state;
    static const struct {
        const char *index;
        int code;
        const char *message;
    } cases[] = {
        /* Some shards at hand but not all (none at hand is the index alone). */
        {"{\"weight_map\": {\"t\": \"model-1.safetensors\", \"u\": \"model-2.safetensors\"}}",
         KVSHARD_EIO,
         "safetensors: model.safetensors.index.json: its weight_map names model-2.safetensors, "
         "which the directory does not hold"},
        {"{\"weight_map\": {\"t\": \"../model-1.safetensors\"}}", KVSHARD_ERANGE,
         "weight_map: tensor \"t\" names the string \"../model-1.safetensors\", which is not a "
         "plain file name (no / or \\, not . or ..)"},
        {"{\"weight_map\": {\"t\": \"sub/model-1.safetensors\"}}", KVSHARD_ERANGE,
         "not a plain file name"},
        {"{\"weight_map\": {\"t\": \"sub\\\\model-1.safetensors\"}}", KVSHARD_ERANGE,
         "not a plain file name"},
        {"{\"weight_map\": {\"t\": \".\"}}", KVSHARD_ERANGE, "not a plain file name"},
        {"{\"weight_map\": {\"t\": \"..\"}}", KVSHARD_ERANGE, "not a plain file name"},
        {"{\"weight_map\": {\"t\": \"\"}}", KVSHARD_ERANGE, "not a plain file name"},
        {"{\"weight_map\": {\"t\": \"model-1.safetensors\", \"u\": \"/etc/passwd\"}}",
         KVSHARD_ERANGE, "tensor \"u\" names the string \"/etc/passwd\""},
        {"{\"weight_map\": {\"t\": 1}}", KVSHARD_ETYPE,
         "weight_map: expected tensor names mapped to file names, as JSON strings; found \"1\""},
        {"{\"weight_map\": {\"t\": [\"model-1.safetensors\"]}}", KVSHARD_ETYPE, "found a list"},
        {"{\"weight_map\": [\"model-1.safetensors\"]}", KVSHARD_ETYPE,
         "weight_map must be an object from tensor names to shard files, found a list"},
        {"{\"metadata\": {\"total_size\": 8}}", KVSHARD_EMISSING,
         "the index has no weight_map (an object from tensor names to shard files)"},
        {"{\"metadata\": {\"total_size\": \"8\"}, \"weight_map\": {}}", KVSHARD_ETYPE,
         "metadata.total_size must be an integer from 0 to 2^64 - 1, found the string \"8\""},
        {"{\"metadata\": {\"total_size\": 8.0}, \"weight_map\": {}}", KVSHARD_ETYPE,
         "found \"8.0\""},
        {"{\"metadata\": {\"total_size\": 18446744073709551616}, \"weight_map\": {}}",
         KVSHARD_EOVERFLOW, "metadata.total_size must be an integer"},
        {"{\"metadata\": [], \"weight_map\": {}}", KVSHARD_ETYPE,
         "metadata must be an object, found a list"},
        {"[]", KVSHARD_ETYPE, "the index is not a JSON object (found a list)"},
        {"{\"weight_map\": {\"t\": \"a\",}", KVSHARD_ESYNTAX,
         "safetensors: model.safetensors.index.json: the index is not JSON: "},
        {"{\"weight_map\": {\"t\": \"a\", \"t\": \"b\"}}", KVSHARD_EDUPKEY, "duplicate key \"t\""},
        {"{\"weight_map\": {\"t\": \"sub.safetensors\"}}", KVSHARD_EIO,
         "safetensors: sub.safetensors: cannot read: a directory; kvshard reads regular files "
         "only"},
    };
    char *dir = make_temp_dir();
    char sub[1024];
    snprintf(sub, sizeof sub, "%s/sub.safetensors", dir);
    assert_int_equal(mkdir(sub, 0777), 0);
    write_shard(dir, "model-1.safetensors", ONE_TENSOR, UINT64_MAX, 4);
    char index_path[1024];
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_bytes(dir, "model.safetensors.index.json", cases[i].index, strlen(cases[i].index));
        kvshard_error err;
        read_fails(dir, 0, cases[i].code, cases[i].message, &err);
        if (cases[i].code != KVSHARD_EIO || strstr(cases[i].message, "does not hold"))
            assert_string_equal(err.source, index_path);
    }
    /* Where: the value's line and column in the index. */
    const char *index = "{\"weight_map\": {\n  \"t\": \"a/b\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    kvshard_error err;
    read_fails(dir, 0, KVSHARD_ERANGE, "not a plain file name", &err);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 8);
    assert_int_equal(err.offset, 24);
    remove_tree(dir);
    free(dir);

    /* A tensor in two shards would be counted twice. */
    dir = make_temp_dir();
    write_shard(dir, "a.safetensors", ONE_TENSOR, UINT64_MAX, 4);
    write_shard(dir, "b.safetensors",
                "{\"u\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                "\"t\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,8]}}",
                UINT64_MAX, 8);
    read_fails(dir, 0, KVSHARD_EDUPKEY,
               "safetensors: b.safetensors: tensor \"t\" is also in "
               "a.safetensors",
               &err);
    assert_non_null(strstr(err.source, "/b.safetensors"));
    remove_tree(dir);
    free(dir);

    /* The directory itself. */
    read_fails(KVSHARD_TEST_BUILD_DATA "/no_such_dir", 0, KVSHARD_EIO,
               "safetensors: cannot open the model directory: ", NULL);
    read_fails(TINY "/config.json", 0, KVSHARD_EIO, "safetensors: not a directory", NULL);
    assert_int_equal(kvshard_safetensors__read_dir(NULL, TINY, NULL, 0, &err), KVSHARD_EINVAL);
}

/* ---- sizes past the bit count, checkpoints without tensors, the JSON in all ---------- */

/* The bytes of a tensor are worked out without its bit count first: 2^63 - 8
 * one-byte elements are 2^63 - 8 bytes, 2^64 - 1 F4 elements are
 * ceil((2^64 - 1) x 4 / 8) = 2^63 bytes, and both are sizes. */
static void test_sizes_past_the_bits(void **state)
{
    (void)state;
    static const char json[] =
        "{\"u\": {\"dtype\": \"U8\", \"shape\": [9223372036854775800], "
        "\"data_offsets\": [0, 9223372036854775800]}, "
        "\"f\": {\"dtype\": \"F4\", \"shape\": [18446744073709551615], "
        "\"data_offsets\": [9223372036854775800, 18446744073709551608]}}";
    size_t len = strlen(json);
    unsigned char image[512];
    assert_true(8 + len <= sizeof image);
    for (int k = 0; k < 8; k++)
        image[k] = (unsigned char)((uint64_t)len >> (8 * k));
    memcpy(image + 8, json, len);
    kvshard__safetensors *s = NULL;
    kvshard_error err;
    tu_assert_ok(
        kvshard_safetensors__read_bytes(&s, image, 8 + len, "model.safetensors", NULL, 0, &err),
        &err);
    assert_int_equal(s->count, 2);
    assert_true(s->tensors[0].elements == UINT64_C(9223372036854775800));
    assert_true(s->tensors[0].bytes == UINT64_C(9223372036854775800));
    assert_true(s->tensors[1].elements == UINT64_MAX);
    assert_true(s->tensors[1].bytes == UINT64_C(9223372036854775808));
    assert_true(s->total_bytes == UINT64_C(18446744073709551608));
    kvshard_safetensors__free(s);
}

/* A checkpoint whose headers hold no tensor, or whose index maps none, has
 * no weights to count: KVSHARD_EWEIGHTS, never 0 bytes. One header of no
 * tensor on its own (read_bytes) is not a checkpoint and reads. */
static void test_checkpoint_without_tensors(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    char path[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    static const char *const empty[] = {"{}", "{\"__metadata__\": {\"format\": \"pt\"}}"};
    kvshard_error err;
    for (size_t i = 0; i < 2; i++) {
        write_shard(dir, "model.safetensors", empty[i], UINT64_MAX, 0);
        read_fails(dir, 0, KVSHARD_EWEIGHTS,
                   "safetensors: model.safetensors: the header holds no tensor, so the "
                   "checkpoint has no weights to count",
                   &err);
        assert_string_equal(err.source, path);
        unsigned char image[64];
        size_t len = strlen(empty[i]);
        for (int k = 0; k < 8; k++)
            image[k] = (unsigned char)((uint64_t)len >> (8 * k));
        memcpy(image + 8, empty[i], len);
        kvshard__safetensors *s = NULL;
        tu_assert_ok(kvshard_safetensors__read_bytes(&s, image, 8 + len, "one.safetensors", NULL,
                                                     0, &err),
                     &err);
        assert_int_equal(s->count, 0);
        kvshard_safetensors__free(s);
    }
    assert_int_equal(unlink(path), 0);

    /* Every *.safetensors of the directory, none with a tensor. */
    write_shard(dir, "a.safetensors", "{}", UINT64_MAX, 0);
    write_shard(dir, "b.safetensors", "{\"__metadata__\": {}}", UINT64_MAX, 0);
    read_fails(dir, 0, KVSHARD_EWEIGHTS,
               "safetensors: the headers of the 2 shard files hold no tensor, so the checkpoint "
               "has no weights to count",
               &err);
    assert_string_equal(err.source, dir);

    /* An index whose weight_map is empty, at the map: line 2, column 17. */
    char index_path[1024];
    snprintf(index_path, sizeof index_path, "%s/model.safetensors.index.json", dir);
    const char *index = "{\"metadata\": {\"total_size\": 0},\n \"weight_map\": {}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    read_fails(dir, 0, KVSHARD_EWEIGHTS,
               "safetensors: model.safetensors.index.json: weight_map is empty: the index names "
               "no tensor, so the checkpoint has no weights to count",
               &err);
    assert_string_equal(err.source, index_path);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 16);
    assert_int_equal(err.offset, 47);

    /* An index that maps tensors to shards that hold none. */
    index = "{\"weight_map\": {\"x\": \"a.safetensors\", \"y\": \"b.safetensors\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    read_fails(dir, 0, KVSHARD_EWEIGHTS, "the headers of the 2 shard files hold no tensor", NULL);
    remove_tree(dir);
    free(dir);
}

/* The index and every header of a directory count against one bound,
 * KVSHARD__ST_MAX_JSON_TOTAL (256 MiB), checked before a header is read. */
static void test_json_in_all(void **state)
{
    (void)state;
    assert_true(KVSHARD__ST_MAX_JSON_TOTAL == UINT64_C(268435456));
    assert_int_equal(strlen(ONE_TENSOR), 54);
    char *dir = make_temp_dir();
    write_shard(dir, "a.safetensors", ONE_TENSOR, UINT64_MAX, 4);
    write_shard(dir, "b.safetensors",
                "{\"u\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", UINT64_MAX, 4);
    write_shard(dir, "c.safetensors",
                "{\"v\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", UINT64_MAX, 4);
    /* Three headers of 54 bytes: 162 in all. */
    kvshard__st_options o = {0, 162, NULL, NULL};
    kvshard__safetensors *s = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_safetensors__read_dir_with(&s, dir, NULL, &o, &err), &err);
    assert_int_equal(s->count, 3);
    assert_true(s->json_bytes == 162);
    kvshard_safetensors__free(s);
    o.max_json = 161;
    s = (kvshard__safetensors *)(uintptr_t)0x5a5a;
    assert_int_equal(kvshard_safetensors__read_dir_with(&s, dir, NULL, &o, &err), KVSHARD_ELIMIT);
    assert_true(s == (kvshard__safetensors *)(uintptr_t)0x5a5a);
    assert_string_equal(err.message,
                        "safetensors: c.safetensors: its header of 54 bytes brings the "
                        "directory's JSON to 162 bytes, past the 161 kvshard reads for one "
                        "checkpoint (its index and headers together)");
    assert_non_null(strstr(err.source, "/c.safetensors"));

    /* The index counts too: its 41 bytes and the first header's 54 are 95,
     * past 94; past 40, the index alone. */
    const char *index = "{\"weight_map\": {\"t\": \"a.safetensors\"}}   ";
    assert_int_equal(strlen(index), 41);
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    o.max_json = 94;
    assert_int_equal(kvshard_safetensors__read_dir_with(&s, dir, NULL, &o, &err), KVSHARD_ELIMIT);
    assert_string_equal(err.message,
                        "safetensors: a.safetensors: its header of 54 bytes brings the "
                        "directory's JSON to 95 bytes, past the 94 kvshard reads for one "
                        "checkpoint (its index and headers together)");
    o.max_json = 40;
    assert_int_equal(kvshard_safetensors__read_dir_with(&s, dir, NULL, &o, &err), KVSHARD_ELIMIT);
    assert_string_equal(err.message,
                        "safetensors: model.safetensors.index.json: the index of 41 bytes brings "
                        "the directory's JSON to 41 bytes, past the 40 kvshard reads for one "
                        "checkpoint (its index and headers together)");
    remove_tree(dir);
    free(dir);
}

typedef struct told {
    size_t count;
    char names[8][64];
    kvshard__file_id ids[8];
} told;

static void tell_me(void *user, const char *path, kvshard__file_id id)
{
    told *t = user;
    if (t->count < 8) {
        const char *slash = strrchr(path, '/');
        snprintf(t->names[t->count], sizeof t->names[0], "%s", slash ? slash + 1 : path);
        t->ids[t->count] = id;
    }
    t->count++;
}

/* One file reached by several names is read once: a shard named by many
 * tensors of the index, and a shard linked under two names. The reader
 * tells of every file it opens, with its device and inode. */
static void test_one_file_read_once(void **state)
{
    (void)state;
    char *dir = make_temp_dir();
    char path[1024], link_path[1024];
    /* m.safetensors: metadata only, padded to 100 bytes; n.safetensors: one
     * tensor (54 bytes). The index (126 bytes) names m under three tensor
     * names, n under one, and l, a symbolic link to m: 126 + 100 + 54 = 280
     * bytes are read, and l adds nothing. */
    char padded[101];
    memset(padded, ' ', 100);
    padded[100] = '\0';
    memcpy(padded, "{\"__metadata__\": {}}", 20);
    write_shard(dir, "m.safetensors", padded, UINT64_MAX, 0);
    write_shard(dir, "n.safetensors", ONE_TENSOR, UINT64_MAX, 4);
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    snprintf(link_path, sizeof link_path, "%s/l.safetensors", dir);
    assert_int_equal(symlink("m.safetensors", link_path), 0);
    const char *index = "{\"weight_map\": {\"a\": \"m.safetensors\", \"b\": \"m.safetensors\", "
                        "\"t\": \"n.safetensors\", \"c\": \"m.safetensors\", \"d\": "
                        "\"l.safetensors\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    assert_int_equal(strlen(index), 126);
    told t = {0};
    kvshard__st_options o = {0, 280, tell_me, &t};
    kvshard__safetensors *s = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_safetensors__read_dir_with(&s, dir, NULL, &o, &err), &err);
    assert_int_equal(s->shard_count, 3);
    assert_string_equal(s->shards[0], "m.safetensors");
    assert_string_equal(s->shards[1], "n.safetensors");
    assert_string_equal(s->shards[2], "l.safetensors");
    assert_int_equal(s->count, 1);
    assert_true(s->json_bytes == 280);
    kvshard_safetensors__free(s);
    assert_int_equal(t.count, 4);
    assert_string_equal(t.names[0], "model.safetensors.index.json");
    assert_string_equal(t.names[1], "m.safetensors");
    assert_string_equal(t.names[2], "n.safetensors");
    assert_string_equal(t.names[3], "l.safetensors");
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(t.ids[1].dev == (uint64_t)st.st_dev && t.ids[1].ino == (uint64_t)st.st_ino);
    assert_true(t.ids[3].dev == t.ids[1].dev && t.ids[3].ino == t.ids[1].ino);

    /* A file of tensors under two names would count each twice: its second
     * name is refused before its header is read again, through a hard link
     * as through a symbolic link. */
    char hard[1024];
    snprintf(hard, sizeof hard, "%s/h.safetensors", dir);
    snprintf(path, sizeof path, "%s/n.safetensors", dir);
    assert_int_equal(link(path, hard), 0);
    index = "{\"weight_map\": {\"t\": \"n.safetensors\", \"u\": \"h.safetensors\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    read_fails(dir, 0, KVSHARD_EDUPKEY,
               "safetensors: h.safetensors: it is the same file as n.safetensors (a link), so "
               "tensor \"t\" and every other of it would count twice",
               &err);
    assert_string_equal(err.source, hard);
    assert_int_equal(unlink(link_path), 0);
    assert_int_equal(symlink("n.safetensors", link_path), 0);
    index = "{\"weight_map\": {\"t\": \"n.safetensors\", \"u\": \"l.safetensors\"}}";
    write_bytes(dir, "model.safetensors.index.json", index, strlen(index));
    read_fails(dir, 0, KVSHARD_EDUPKEY,
               "safetensors: l.safetensors: it is the same file as n.safetensors (a link)", NULL);
    remove_tree(dir);
    free(dir);

    /* The fixture: its index, then its two shards. */
    memset(&t, 0, sizeof t);
    o = (kvshard__st_options){0, 0, tell_me, &t};
    tu_assert_ok(kvshard_safetensors__read_dir_with(&s, TINY, NULL, &o, &err), &err);
    kvshard_safetensors__free(s);
    assert_int_equal(t.count, 3);
    assert_string_equal(t.names[0], "model.safetensors.index.json");
    assert_string_equal(t.names[1], "model-00001-of-00002.safetensors");
    assert_string_equal(t.names[2], "model-00002-of-00002.safetensors");
}

/* ---- classes --------------------------------------------------------------------------- */

static void test_classify(void **state)
{
    (void)state;
    enum { L = 4 };
    const uint32_t none = KVSHARD__NO_LAYER, fused = KVSHARD__NO_EXPERT;
    static const struct {
        const char *name;
        uint64_t elements;
        bool gqa;
        kvshard__wplace place;
        kvshard__wclass cls;
        uint32_t layer, expert;
    } cases[] = {
#define DEC KVSHARD__PLACE_DECODER
#define DRAFT KVSHARD__PLACE_DRAFT
#define C(x) KVSHARD__CLASS_##x
        {"model.embed_tokens.weight", 4096, true, KVSHARD__PLACE_EMBEDDING, C(VOCAB), none, fused},
        {"transformer.wte.weight", 4096, true, KVSHARD__PLACE_EMBEDDING, C(VOCAB), none, fused},
        {"model.tok_embeddings.weight", 9, true, KVSHARD__PLACE_EMBEDDING, C(VOCAB), none, fused},
        {"lm_head.weight", 4096, true, KVSHARD__PLACE_HEAD, C(VOCAB), none, fused},
        {"model.norm.weight", 32, true, KVSHARD__PLACE_FINAL_NORM, C(REPLICATED), none, fused},
        {"model.final_layernorm.weight", 32, true, KVSHARD__PLACE_FINAL_NORM, C(REPLICATED), none,
         fused},
        {"model.gate.weight", 32, true, KVSHARD__PLACE_OTHER, C(REPLICATED), none, fused},
        {"model.decoder.proj.weight", 32, true, KVSHARD__PLACE_OTHER, C(UNKNOWN), none, fused},
        {"transformer.ln_f.weight", 32, true, KVSHARD__PLACE_OTHER, C(UNKNOWN), none, fused},
        {"model.layers.x.q_proj.weight", 32, true, KVSHARD__PLACE_OTHER, C(SPLIT), none, fused},
        /* multimodal before everything, layers included */
        {"visual.blocks.0.attn.qkv.weight", 64, true, KVSHARD__PLACE_MULTIMODAL, C(MULTIMODAL),
         none, fused},
        {"model.vision_tower.embeddings.patch.weight", 64, true, KVSHARD__PLACE_MULTIMODAL,
         C(MULTIMODAL), none, fused},
        {"multi_modal_projector.linear_1.weight", 64, true, KVSHARD__PLACE_MULTIMODAL,
         C(MULTIMODAL), none, fused},
        {"model.audio_tower.layers.0.fc1.weight", 64, true, KVSHARD__PLACE_MULTIMODAL,
         C(MULTIMODAL), none, fused},
        /* decoder layers */
        {"model.layers.0.input_layernorm.weight", 32, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.3.self_attn.rotary_emb.inv_freq", 4, true, DEC, C(UNKNOWN), 3, fused},
        {"model.layers.3.self_attn.q_proj.weight", 1024, true, DEC, C(SPLIT), 3, fused},
        {"model.layers.3.self_attn.k_proj.weight", 512, true, DEC, C(KV), 3, fused},
        {"model.layers.3.self_attn.k_proj.weight", 512, false, DEC, C(SPLIT), 3, fused},
        {"model.layers.3.self_attn.v_proj.bias", 16, true, DEC, C(KV), 3, fused},
        {"model.layers.1.self_attn.qkv_proj.weight", 512, true, DEC, C(QKV), 1, fused},
        {"model.layers.1.self_attn.qkv_proj.weight", 512, false, DEC, C(SPLIT), 1, fused},
        {"model.layers.0.self_attn.o_proj.weight", 1024, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.self_attn.o_proj.bias", 32, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.self_attn.q_proj.bias", 32, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mlp.down_proj.bias", 32, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.mlp.up_proj.bias", 32, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mlp.fc2.bias", 32, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.attention.dense.bias", 32, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.self_attn.o_proj.weight_scale_inv", 1, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.self_attn.o_proj.weight_scale_inv", 2, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.self_attn.sinks", 8, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.self_attn.q_a_proj.weight", 8, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.self_attn.q_a_layernorm.weight", 8, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.self_attn.kv_a_proj_with_mqa.weight", 8, true, DEC, C(REPLICATED), 0,
         fused},
        {"model.layers.0.self_attn.kv_b_proj.weight", 8, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.self_attn.indexer.wk.weight", 8, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.mixer.A_log", 8, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mixer.D", 8, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mixer.norm.weight", 8, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.2.linear_attn.in_proj_qkvz.weight", 8, true, DEC, C(SPLIT), 2, fused},
        {"transformer.h.1.attn.c_attn.weight", 8, true, DEC, C(UNKNOWN), 1, fused},
        {"model.blocks.2.fc.weight", 8, true, DEC, C(SPLIT), 2, fused},
        /* gate is the router, gate_proj the MLP, gatex nothing */
        {"model.layers.0.mlp.gate.weight", 128, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.mlp.gate.e_score_correction_bias", 4, true, DEC, C(REPLICATED), 0, fused},
        {"model.layers.0.mlp.gate_proj.weight", 128, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mlp.gatex.weight", 128, true, DEC, C(UNKNOWN), 0, fused},
        /* shared experts are dense MLPs; their gate is replicated */
        {"model.layers.0.mlp.shared_expert.gate_proj.weight", 512, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mlp.shared_experts.down_proj.weight", 512, true, DEC, C(SPLIT), 0, fused},
        {"model.layers.0.mlp.shared_expert_gate.weight", 32, true, DEC, C(REPLICATED), 0, fused},
        /* routed experts, by index or fused */
        {"model.layers.2.mlp.experts.7.down_proj.weight", 512, true, DEC, C(EXPERT), 2, 7},
        {"model.layers.2.mlp.experts.gate_up_proj", 512, true, DEC, C(EXPERT), 2, fused},
        {"model.layers.2.mlp.experts.down_proj.weight_scale", 512, true, DEC, C(EXPERT), 2, fused},
        {"model.layers.2.mlp.experts.0.down_proj.weight_scale", 1, true, DEC, C(REPLICATED), 2,
         fused},
        /* the first layers/N pair decides */
        {"model.layers.0.layers.9.q_proj.weight", 8, true, DEC, C(SPLIT), 0, fused},
        /* draft tensors: mtp, or a layer at L and past it */
        {"mtp.fc.weight", 2048, true, DRAFT, C(SPLIT), none, fused},
        {"mtp.norm.weight", 32, true, DRAFT, C(REPLICATED), none, fused},
        {"mtp.pre_fc_norm_embedding.weight", 32, true, DRAFT, C(REPLICATED), none, fused},
        {"mtp.layers.0.self_attn.k_proj.weight", 512, true, DRAFT, C(KV), 0, fused},
        {"mtp.layers.1.mlp.experts.3.up_proj.weight", 512, true, DRAFT, C(EXPERT), 1, 3},
        {"model.layers.4.eh_proj.weight", 512, true, DRAFT, C(REPLICATED), 0, fused},
        {"model.layers.5.enorm.weight", 32, true, DRAFT, C(REPLICATED), 1, fused},
        {"model.layers.4.shared_head.head.weight", 512, true, DRAFT, C(VOCAB), 0, fused},
        {"model.layers.4.shared_head.norm.weight", 32, true, DRAFT, C(REPLICATED), 0, fused},
        {"model.layers.4.embed_tokens.weight", 512, true, DRAFT, C(VOCAB), 0, fused},
        {"model.layers.99999999999999999999.q_proj.weight", 8, true, DRAFT, C(SPLIT),
         KVSHARD__NO_LAYER - 1, fused},
#undef DEC
#undef DRAFT
#undef C
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard__wtensor_class c;
        kvshard_weights__classify(&c, cases[i].name, strlen(cases[i].name), cases[i].elements, L,
                                  cases[i].gqa);
        if (c.place != cases[i].place || c.cls != cases[i].cls || c.layer != cases[i].layer ||
            c.expert != cases[i].expert)
            print_error("%s: place %d class %s layer %u expert %u\n", cases[i].name, c.place,
                        kvshard_weights__class_name(c.cls), c.layer, c.expert);
        assert_int_equal(c.place, cases[i].place);
        assert_int_equal(c.cls, cases[i].cls);
        assert_int_equal(c.layer, cases[i].layer);
        assert_int_equal(c.expert, cases[i].expert);
    }
    /* The name need not be NUL-terminated: a prefix is classified alone. */
    kvshard__wtensor_class c;
    const char *name = "model.layers.0.mlp.gate_proj.weight";
    kvshard_weights__classify(&c, name, strlen("model.layers.0.mlp.gate"), 8, L, true);
    assert_int_equal(c.cls, KVSHARD__CLASS_REPLICATED);
    assert_string_equal(kvshard_weights__class_name(KVSHARD__CLASS_QKV), "qkv");
    assert_string_equal(kvshard_weights__class_name(KVSHARD__CLASS_UNKNOWN), "unknown");
}

/* ---- the tiny_hybrid weights ----------------------------------------------------------- */

/* Qwen3-Next-like: GQA, 4 query and 2 KV heads, no sliding layer. */
static kvshard__weights *tiny_weights(const char *dir)
{
    kvshard__safetensors *s = read_ok(dir);
    kvshard__wgeometry g = {4, true, 4, 2, 0, 0, NULL, 0, false};
    kvshard__weights *w = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_weights__build(&w, s, &g, NULL, &err), &err);
    kvshard_safetensors__free(s); /* the weights keep nothing of it */
    return w;
}

static void test_tiny_summary(void **state)
{
    (void)state;
    kvshard__weights *w = tiny_weights(TINY);
    const kvshard__wsummary *m = kvshard_weights__summary(w);
    assert_true(m->tensors == 126);
    assert_true(m->total_bytes == 142124);
    assert_true(m->expert_bytes == 61440);
    assert_true(m->draft_bytes == 22592);
    assert_true(m->unknown_tensors == 1);
    assert_true(m->unknown_bytes == 16);
    assert_string_equal(m->first_unknown, "model.layers.3.self_attn.rotary_emb.inv_freq");
    assert_true(m->has_index_total_size && m->index_total_size == 142124);
    assert_false(m->total_size_mismatch);
    /* vocab: embedding and head 8,192 each. replicated: 8 layer norms 512,
     * final norm 64, 3 GDN norms 48, q/k norms 32, the scalar scale 4, 4
     * routers 1,024, 4 shared-expert gates 256, the MTP norm 64. split: 3
     * GDN layers 11,544 each, q_proj 2,048 + o_proj 1,024, 4 shared experts
     * 3,072 each, mtp.fc 4,096 + MTP q/o 4,096. kv: 2 x 1,024 twice. */
    assert_true(m->class_bytes[KVSHARD__CLASS_VOCAB] == 16384);
    assert_true(m->class_bytes[KVSHARD__CLASS_REPLICATED] == 2004);
    assert_true(m->class_bytes[KVSHARD__CLASS_SPLIT] == 58184);
    assert_true(m->class_bytes[KVSHARD__CLASS_KV] == 4096);
    assert_true(m->class_bytes[KVSHARD__CLASS_QKV] == 0);
    assert_true(m->class_bytes[KVSHARD__CLASS_EXPERT] == 61440);
    assert_true(m->class_bytes[KVSHARD__CLASS_MULTIMODAL] == 0);
    assert_true(m->class_bytes[KVSHARD__CLASS_UNKNOWN] == 16);
    kvshard_weights__free(w);
    kvshard_weights__free(NULL);
}

typedef struct tiny_row {
    uint32_t t, p, d;
    bool spec, ep;
    uint64_t stages[4];
} tiny_row;

/* The table of weights per rank (rule vllm: 4 layers on 2 stages are 2, 2;
 * on 4 stages 1, 1, 1, 1). "no or yes" rows are checked both ways. */
static const tiny_row tiny_rows[] = {
    {1, 1, 1, false, false, {119532}},
    {2, 1, 1, false, false, {60736}},
    {4, 1, 1, false, false, {31850}},
    {4, 1, 1, false, true, {31850}},
    {2, 2, 1, false, false, {31928, 28808}},
    {2, 2, 1, true, false, {31928, 40136}},
    {1, 4, 1, true, false, {35560, 27368, 27368, 51828}},
    {2, 1, 2, false, false, {48448}},
    {2, 1, 2, false, true, {48448}},
    {1, 1, 4, false, true, {82668}},
    {4, 1, 1, true, true, {38058}},
};

static void check_rows(kvshard__weights *w)
{
    for (size_t i = 0; i < sizeof tiny_rows / sizeof tiny_rows[0]; i++) {
        const tiny_row *r = &tiny_rows[i];
        uint32_t parts[4];
        kvshard_error err;
        tu_assert_ok(kvshard_partition__by_rule(parts, 4, r->p, KVSHARD_PP_RULE_VLLM, &err), &err);
        kvshard__wlayout layout = {r->t, r->d, 1, r->ep, r->spec, r->p, parts};
        kvshard__wstage out[4];
        tu_assert_ok(kvshard_weights__stages(out, w, &layout, &err), &err);
        for (uint32_t s = 0; s < r->p; s++) {
            if (out[s].bytes != r->stages[s])
                print_error("T %u P %u D %u spec %d ep %d: stage %u has %llu, expected %llu\n",
                            r->t, r->p, r->d, r->spec, r->ep, s, (unsigned long long)out[s].bytes,
                            (unsigned long long)r->stages[s]);
            assert_true(out[s].bytes == r->stages[s]);
            uint64_t parts_sum = 0;
            for (int c = 0; c < KVSHARD__CLASS_COUNT; c++)
                parts_sum += out[s].class_bytes[c];
            assert_true(parts_sum == out[s].bytes);
        }
    }
}

static void test_tiny_stages(void **state)
{
    (void)state;
    uint32_t parts[4];
    kvshard_error err;
    tu_assert_ok(kvshard_partition__by_rule(parts, 4, 2, KVSHARD_PP_RULE_VLLM, &err), &err);
    assert_true(parts[0] == 2 && parts[1] == 2);
    tu_assert_ok(kvshard_partition__by_rule(parts, 4, 4, KVSHARD_PP_RULE_VLLM, &err), &err);
    assert_true(parts[0] == 1 && parts[1] == 1 && parts[2] == 1 && parts[3] == 1);

    kvshard__weights *w = tiny_weights(TINY);
    check_rows(w);

    /* T = 4 by hand: vocab 2 x 2,048; replicated 1,940; split 12,498 (three
     * GDN layers 2,886 each, q_proj 512, o_proj 256, four shared experts 768
     * each); kv 2 x ceil(1,024 / 2); unknown ceil(16 / 4); experts 48 x 256. */
    uint32_t one = 4;
    kvshard__wlayout layout = {4, 1, 1, false, false, 1, &one};
    kvshard__wstage out[1];
    tu_assert_ok(kvshard_weights__stages(out, w, &layout, &err), &err);
    assert_true(out[0].class_bytes[KVSHARD__CLASS_VOCAB] == 4096);
    assert_true(out[0].class_bytes[KVSHARD__CLASS_REPLICATED] == 1940);
    assert_true(out[0].class_bytes[KVSHARD__CLASS_SPLIT] == 12498);
    assert_true(out[0].class_bytes[KVSHARD__CLASS_KV] == 1024);
    assert_true(out[0].class_bytes[KVSHARD__CLASS_UNKNOWN] == 4);
    assert_true(out[0].class_bytes[KVSHARD__CLASS_EXPERT] == 12288);
    assert_true(out[0].bytes == 31850);

    /* Bad layouts, outputs untouched. */
    out[0].bytes = 7;
    kvshard__wlayout bad = layout;
    bad.tp = 0;
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__stages(out, w, &bad, &err), KVSHARD_EINVAL);
    uint32_t three = 3;
    bad = layout;
    bad.stage_layers = &three;
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__stages(out, w, &bad, &err), KVSHARD_EINVAL);
    assert_contains(err.message, "the stages hold 3 layers; the model has 4");
    uint32_t zero_first[2] = {0, 4};
    bad = layout;
    bad.pp = 2;
    bad.stage_layers = zero_first;
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__stages(out, w, &bad, &err), KVSHARD_EINVAL);
    assert_true(out[0].bytes == 7);
    kvshard_weights__free(w);

    /* The cut directory gives every figure again. */
    w = tiny_weights(TINY_CUT);
    check_rows(w);
    kvshard_weights__free(w);
}

/* ---- shares that the fixture does not reach ------------------------------------------ */

/* One shard image from a JSON header, read into a set. */
static kvshard__safetensors *set_of(const char *json)
{
    size_t len = strlen(json);
    unsigned char *image = malloc(8 + len);
    assert_non_null(image);
    for (int k = 0; k < 8; k++)
        image[k] = (unsigned char)((uint64_t)len >> (8 * k));
    memcpy(image + 8, json, len);
    kvshard__safetensors *s = NULL;
    kvshard_error err;
    tu_assert_ok(
        kvshard_safetensors__read_bytes(&s, image, 8 + len, "t.safetensors", NULL, 0, &err), &err);
    free(image);
    return s;
}

static kvshard__weights *weights_of(const char *json, const kvshard__wgeometry *g)
{
    kvshard__safetensors *s = set_of(json);
    kvshard__weights *w = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_weights__build(&w, s, g, NULL, &err), &err);
    kvshard_safetensors__free(s);
    return w;
}

static uint64_t one_stage(const kvshard__weights *w, uint32_t num_layers, uint32_t t, uint32_t d,
                          bool ep, bool spec, kvshard__wstage *out)
{
    kvshard__wlayout layout = {t, d, 1, ep, spec, 1, &num_layers};
    kvshard_error err;
    tu_assert_ok(kvshard_weights__stages(out, w, &layout, &err), &err);
    return out->bytes;
}

/* Tied embeddings: the head is not counted; with stages the last one holds
 * the embedding's share again. */
static void test_tied_embeddings(void **state)
{
    (void)state;
    const char *json = "{\"model.embed_tokens.weight\": {\"dtype\": \"BF16\", \"shape\": [100, 8],"
                       " \"data_offsets\": [0, 1600]},"
                       " \"lm_head.weight\": {\"dtype\": \"BF16\", \"shape\": [100, 8],"
                       " \"data_offsets\": [1600, 3200]},"
                       " \"model.layers.0.mlp.up_proj.weight\": {\"dtype\": \"BF16\","
                       " \"shape\": [10, 8], \"data_offsets\": [3200, 3360]},"
                       " \"model.layers.1.mlp.up_proj.weight\": {\"dtype\": \"BF16\","
                       " \"shape\": [10, 8], \"data_offsets\": [3360, 3520]}}";
    kvshard__wgeometry g = {2, true, 4, 2, 0, 0, NULL, 0, true};
    kvshard__weights *w = weights_of(json, &g);
    const kvshard__wsummary *m = kvshard_weights__summary(w);
    assert_true(m->tensors == 3 && m->total_bytes == 1920);
    kvshard__wstage out[2];
    /* P = 1, T = 2: 800 + 80 + 80. */
    assert_true(one_stage(w, 2, 2, 1, false, false, out) == 960);
    uint32_t parts[2] = {1, 1};
    kvshard__wlayout layout = {2, 1, 1, false, false, 2, parts};
    kvshard_error err;
    tu_assert_ok(kvshard_weights__stages(out, w, &layout, &err), &err);
    assert_true(out[0].bytes == 880 && out[1].bytes == 880);
    assert_true(out[1].class_bytes[KVSHARD__CLASS_VOCAB] == 800);
    kvshard_weights__free(w);

    /* Untied, the head sits on the last stage. */
    g.tie_word_embeddings = false;
    w = weights_of(json, &g);
    assert_true(kvshard_weights__summary(w)->total_bytes == 3520);
    tu_assert_ok(kvshard_weights__stages(out, w, &layout, &err), &err);
    assert_true(out[0].bytes == 880 && out[1].bytes == 880);
    assert_true(one_stage(w, 2, 2, 1, false, false, out) == 1760);
    kvshard_weights__free(w);
}

/* kv and qkv by the layer's own geometry: layer 0 and draft layer 0 sliding
 * (12 query heads, 1 KV head), layer 1 full (8 and 2). */
static void test_kv_shares(void **state)
{
    (void)state;
    const char *json =
        "{\"model.layers.0.self_attn.qkv_proj.weight\": {\"dtype\": \"U8\", \"shape\": [2400],"
        " \"data_offsets\": [0, 2400]},"
        " \"model.layers.1.self_attn.qkv_proj.weight\": {\"dtype\": \"U8\", \"shape\": [2400],"
        " \"data_offsets\": [2400, 4800]},"
        " \"model.layers.0.self_attn.k_proj.weight\": {\"dtype\": \"U8\", \"shape\": [999],"
        " \"data_offsets\": [4800, 5799]},"
        " \"model.layers.1.self_attn.v_proj.weight\": {\"dtype\": \"U8\", \"shape\": [999],"
        " \"data_offsets\": [5799, 6798]},"
        " \"model.layers.2.self_attn.k_proj.weight\": {\"dtype\": \"U8\", \"shape\": [999],"
        " \"data_offsets\": [6798, 7797]}}";
    const bool sliding[3] = {true, false, true};
    kvshard__wgeometry g = {2, true, 8, 2, 12, 1, sliding, 3, false};
    kvshard__weights *w = weights_of(json, &g);
    kvshard__wstage out[1];
    /* T = 4. Layer 0: qkv ceil(2400 (12 + 2 x 1 x 4) / (4 (12 + 2))) =
     * ceil(48000 / 56) = 858; k over min(4, 1): 999. Layer 1: qkv h = 1:
     * ceil(2400 x 16 / 48) = 800; v over min(4, 2): 500. Draft layer 0
     * (index 2, sliding): k 999, counted with speculative tokens only. */
    one_stage(w, 2, 4, 1, false, false, out);
    assert_true(out->class_bytes[KVSHARD__CLASS_QKV] == 858 + 800);
    assert_true(out->class_bytes[KVSHARD__CLASS_KV] == 999 + 500);
    one_stage(w, 2, 4, 1, false, true, out);
    assert_true(out->class_bytes[KVSHARD__CLASS_KV] == 999 + 500 + 999);
    /* T = 2. Layer 0 (1 KV head < 2): ceil(2400 x 16 / 28) = 1372, k 999.
     * Layer 1 (H_kv = T, h = 1): 2400 x 12 / 24 = 1200, v 500. */
    one_stage(w, 2, 2, 1, false, false, out);
    assert_true(out->class_bytes[KVSHARD__CLASS_QKV] == 1372 + 1200);
    assert_true(out->class_bytes[KVSHARD__CLASS_KV] == 999 + 500);
    /* T = 1: whole. */
    assert_true(one_stage(w, 2, 1, 1, false, false, out) == 2400 + 2400 + 999 + 999);
    kvshard_weights__free(w);

    /* Without GQA both are split. */
    g.gqa = false;
    w = weights_of(json, &g);
    one_stage(w, 2, 4, 1, false, false, out);
    assert_true(out->class_bytes[KVSHARD__CLASS_SPLIT] == 600 + 600 + 250 + 250);
    kvshard_weights__free(w);

    /* A GQA geometry needs its heads. */
    g.gqa = true;
    g.num_kv_heads = 0;
    kvshard__safetensors *s = set_of(json);
    kvshard__weights *none = (kvshard__weights *)(uintptr_t)0x5a5a;
    kvshard_error err;
    assert_int_equal(kvshard_weights__build(&none, s, &g, NULL, &err), KVSHARD_EINVAL);
    assert_true(none == (kvshard__weights *)(uintptr_t)0x5a5a);
    kvshard_safetensors__free(s);

    /* A share of a tensor near 2^64 bytes is exact: ceil(2^63 x 16 / 48). */
    const char *big = "{\"model.layers.1.self_attn.qkv_proj.weight\": {\"dtype\": \"X\","
                      " \"shape\": [3], \"data_offsets\": [0, 9223372036854775808]}}";
    g.num_kv_heads = 2;
    w = weights_of(big, &g);
    one_stage(w, 2, 4, 1, false, false, out);
    assert_true(out->bytes == UINT64_C(3074457345618258603));
    kvshard_weights__free(w);
}

/* Expert parallelism places whole experts: ceil(E / X) of them. */
static void test_expert_parallel(void **state)
{
    (void)state;
    /* Layer 0: six experts by index, 600 bytes each (E = 6). Layer 1: one
     * fused tensor of 6 experts, 3,000 bytes, and its 6 x 100 bias (E = 6).
     * Top level: an expert tensor outside the layers, 90 bytes (E = 9). */
    char json[4096];
    size_t o = (size_t)snprintf(json, sizeof json, "{");
    uint64_t at = 0;
    for (int e = 0; e < 6; e++) {
        o += (size_t)snprintf(json + o, sizeof json - o,
                              "\"model.layers.0.mlp.experts.%d.w1.weight\": {\"dtype\": \"U8\","
                              " \"shape\": [600], \"data_offsets\": [%llu, %llu]}, ",
                              e, (unsigned long long)at, (unsigned long long)(at + 600));
        at += 600;
    }
    snprintf(json + o, sizeof json - o,
             "\"model.layers.1.mlp.experts.gate_up_proj\": {\"dtype\": \"U8\", \"shape\": [6, 500],"
             " \"data_offsets\": [%llu, %llu]},"
             " \"model.layers.1.mlp.experts.gate_up_proj_bias\": {\"dtype\": \"U8\","
             " \"shape\": [6, 100], \"data_offsets\": [%llu, %llu]},"
             " \"model.experts.w\": {\"dtype\": \"U8\", \"shape\": [9, 10],"
             " \"data_offsets\": [%llu, %llu]}}",
             (unsigned long long)at, (unsigned long long)(at + 3000),
             (unsigned long long)(at + 3000), (unsigned long long)(at + 3600),
             (unsigned long long)(at + 3600), (unsigned long long)(at + 3690));
    kvshard__wgeometry g = {2, true, 4, 2, 0, 0, NULL, 0, false};
    kvshard__weights *w = weights_of(json, &g);
    assert_true(kvshard_weights__summary(w)->expert_bytes == 3600 + 3600 + 90);
    kvshard__wstage out[1];
    /* X = 4 without expert parallelism: per tensor, 6 x 150 + 750 + 150 +
     * ceil(90 / 4) = 23. */
    assert_true(one_stage(w, 2, 2, 2, false, false, out) == 900 + 900 + 23);
    /* With it: ceil(6 / 4) = 2 experts of each layer, 3,600 x 2 / 6 = 1,200
     * twice; the top-level group ceil(9 / 4) = 3: 90 x 3 / 9 = 30. */
    assert_true(one_stage(w, 2, 2, 2, true, false, out) == 1200 + 1200 + 30);
    /* X = 6: one each; X = 12: still one whole expert (600). */
    assert_true(one_stage(w, 2, 3, 2, true, false, out) == 600 + 600 + 20);
    assert_true(one_stage(w, 2, 4, 3, true, false, out) == 600 + 600 + 10);
    kvshard_weights__free(w);
}

/* ---- the estimate from two figures ---------------------------------------------------- */

static void test_estimate(void **state)
{
    (void)state;
    uint64_t v = 0;
    kvshard_error err;
    /* Qwen3.5-35B-A3B, T 2, D 2: ceil(4,896,713,856 / 2) + ceil(64,424,509,440 / 4). */
    tu_assert_ok(kvshard_weights__estimate(&v, UINT64_C(69321223296), UINT64_C(64424509440), 40, 40,
                                           2, 4, &err),
                 &err);
    assert_true(v == UINT64_C(18554484288));
    /* Two stages of TP 2, 20 of 40 layers each. */
    tu_assert_ok(kvshard_weights__estimate(&v, UINT64_C(69321223296), UINT64_C(64424509440), 20, 40,
                                           2, 2, &err),
                 &err);
    assert_true(v == UINT64_C(17330305824));
    /* DeepSeek-V3.2, T 8, D 2; then T 4, P 2 (31 | 30 layers), D 2. */
    uint64_t total = UINT64_C(674030337216), experts = UINT64_C(654068416512);
    tu_assert_ok(kvshard_weights__estimate(&v, total, experts, 61, 61, 8, 16, &err), &err);
    assert_true(v == UINT64_C(43374516120));
    uint32_t parts[2];
    tu_assert_ok(kvshard_partition__by_rule(parts, 61, 2, KVSHARD_PP_RULE_VLLM, &err), &err);
    tu_assert_ok(kvshard_weights__estimate(&v, total, experts, parts[0], 61, 4, 8, &err), &err);
    assert_true(v == UINT64_C(44085573763));
    tu_assert_ok(kvshard_weights__estimate(&v, total, experts, parts[1], 61, 4, 8, &err), &err);
    assert_true(v == UINT64_C(42663458479));
    /* Exact past 64-bit products: (2^64 - 1) x 3 / 3. */
    tu_assert_ok(kvshard_weights__estimate(&v, UINT64_MAX, 0, 3, 3, 1, 1, &err), &err);
    assert_true(v == UINT64_MAX);
    tu_assert_ok(kvshard_weights__estimate(&v, UINT64_MAX, UINT64_MAX / 2, 7, 7, 1, 1, &err), &err);
    assert_true(v == UINT64_MAX);
    /* ceil((2^64 - 1) x 2 / 3) = 12,297,829,382,473,034,410 */
    tu_assert_ok(kvshard_weights__estimate(&v, UINT64_MAX, 0, 2, 3, 1, 1, &err), &err);
    assert_true(v == UINT64_C(12297829382473034410));
    tu_assert_ok(kvshard_weights__estimate(&v, 0, 0, 1, 3, 1, 1, &err), &err);
    assert_true(v == 0);
    /* Errors, the output untouched. */
    v = 5;
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__estimate(&v, 10, 11, 1, 1, 1, 1, &err), KVSHARD_ERANGE);
    assert_contains(err.message, "weights_experts 11 is above weights_total 10");
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__estimate(&v, 10, 1, 2, 1, 1, 1, &err), KVSHARD_EINVAL);
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__estimate(&v, 10, 1, 1, 0, 1, 1, &err), KVSHARD_EINVAL);
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__estimate(&v, 10, 1, 1, 1, 0, 1, &err), KVSHARD_EINVAL);
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_weights__estimate(&v, 10, 1, 1, 1, 1, 0, &err), KVSHARD_EINVAL);
    assert_true(v == 5);
}

/* ---- partitions ------------------------------------------------------------------------- */

static void test_partition_rules(void **state)
{
    (void)state;
    static const struct {
        uint32_t l, p;
        kvshard_pp_rule rule;
        uint32_t counts[8];
    } cases[] = {
        {61, 2, KVSHARD_PP_RULE_VLLM, {31, 30}},
        {61, 2, KVSHARD_PP_RULE_SGLANG, {30, 31}},
        {61, 2, KVSHARD_PP_RULE_TRTLLM, {31, 30}},
        {61, 4, KVSHARD_PP_RULE_VLLM, {15, 15, 16, 15}},
        {61, 4, KVSHARD_PP_RULE_SGLANG, {15, 15, 15, 16}},
        {61, 4, KVSHARD_PP_RULE_TRTLLM, {16, 15, 15, 15}},
        {61, 8, KVSHARD_PP_RULE_VLLM, {7, 7, 8, 8, 8, 8, 8, 7}},
        {61, 8, KVSHARD_PP_RULE_SGLANG, {7, 7, 7, 8, 8, 8, 8, 8}},
        {61, 8, KVSHARD_PP_RULE_TRTLLM, {8, 8, 8, 8, 8, 7, 7, 7}},
        {52, 8, KVSHARD_PP_RULE_VLLM, {6, 6, 6, 7, 7, 7, 7, 6}},
        {52, 8, KVSHARD_PP_RULE_SGLANG, {6, 6, 6, 6, 7, 7, 7, 7}},
        {52, 8, KVSHARD_PP_RULE_TRTLLM, {7, 7, 7, 7, 6, 6, 6, 6}},
        {48, 4, KVSHARD_PP_RULE_EVEN, {12, 12, 12, 12}},
        {48, 4, KVSHARD_PP_RULE_VLLM, {12, 12, 12, 12}},
        {40, 4, KVSHARD_PP_RULE_SGLANG, {10, 10, 10, 10}},
        {7, 7, KVSHARD_PP_RULE_VLLM, {1, 1, 1, 1, 1, 1, 1}},
        {9, 5, KVSHARD_PP_RULE_VLLM, {2, 2, 2, 2, 1}}, /* r = P - 1: the first gets one */
        {5, 1, KVSHARD_PP_RULE_VLLM, {5}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint32_t out[8] = {0};
        kvshard_error err;
        tu_assert_ok(kvshard_partition__by_rule(out, cases[i].l, cases[i].p, cases[i].rule, &err),
                     &err);
        for (uint32_t s = 0; s < cases[i].p; s++) {
            if (out[s] != cases[i].counts[s])
                print_error("L %u P %u %s: stage %u has %u\n", cases[i].l, cases[i].p,
                            kvshard_pp_rule_name(cases[i].rule), s, out[s]);
            assert_int_equal(out[s], cases[i].counts[s]);
        }
        tu_assert_ok(kvshard_partition__check(out, cases[i].p, cases[i].l, cases[i].p, &err), &err);
    }
    uint32_t out[4] = {9, 9, 9, 9};
    kvshard_error err;
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_partition__by_rule(out, 61, 2, KVSHARD_PP_RULE_EVEN, &err),
                     KVSHARD_EPARTITION);
    assert_contains(err.message, "pp_partition_rule even needs pp_size to divide the 61 decoder "
                                 "layers, and 2 does not");
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_partition__by_rule(out, 3, 4, KVSHARD_PP_RULE_VLLM, &err),
                     KVSHARD_EPPLAYERS);
    assert_contains(err.message, "pp_size 4 is above the model's 3 decoder layers");
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_partition__by_rule(out, 3, 0, KVSHARD_PP_RULE_VLLM, &err),
                     KVSHARD_EPARALLEL);
    assert_true(out[0] == 9 && out[3] == 9);
    const uint32_t bad[3] = {2, 0, 2};
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_partition__check(bad, 3, 4, 2, &err), KVSHARD_EPARTITION);
    assert_contains(err.message, "pp_partition has 3 entries; pp_size is 2");
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_partition__check(bad, 3, 4, 3, &err), KVSHARD_EPARTITION);
    assert_contains(err.message, "pp_partition[1] is 0");
    const uint32_t sum[2] = {2, 3};
    kvshard_error__reset(&err);
    assert_int_equal(kvshard_partition__check(sum, 2, 4, 2, &err), KVSHARD_EPARTITION);
    assert_contains(err.message, "pp_partition sums to 5 layers; the model has 4");
    assert_string_equal(kvshard_pp_rule_name(KVSHARD_PP_RULE_TRTLLM), "trtllm");
}

/* ---- out of memory ---------------------------------------------------------------------- */

typedef struct counting {
    long left; /* allocations that succeed before one fails; -1: all */
    long live;
} counting;

static void *count_malloc(void *user, size_t size)
{
    counting *c = user;
    if (c->left == 0)
        return NULL;
    if (c->left > 0)
        c->left--;
    void *p = malloc(size);
    if (p)
        c->live++;
    return p;
}

static void count_free(void *user, void *p)
{
    counting *c = user;
    c->live--;
    free(p);
}

/* Every allocation of reading and classifying the fixture fails in turn:
 * each gives ENOMEM, leaves the output alone and leaks nothing. */
static void test_out_of_memory(void **state)
{
    (void)state;
    kvshard__wgeometry g = {4, true, 4, 2, 0, 0, NULL, 0, false};
    for (long n = 0;; n++) {
        counting c = {n, 0};
        kvshard_allocator a = {count_malloc, count_free, &c};
        kvshard__safetensors *s = (kvshard__safetensors *)(uintptr_t)0x5a5a;
        kvshard_error err;
        int rc = kvshard_safetensors__read_dir(&s, TINY, &a, 0, &err);
        if (rc == KVSHARD_OK) {
            kvshard__weights *w = (kvshard__weights *)(uintptr_t)0x5a5a;
            rc = kvshard_weights__build(&w, s, &g, &a, &err);
            kvshard_safetensors__free(s);
            if (rc == KVSHARD_OK) {
                assert_true(kvshard_weights__summary(w)->total_bytes == 142124);
                kvshard_weights__free(w);
                assert_int_equal(c.live, 0);
                break;
            }
            assert_true(w == (kvshard__weights *)(uintptr_t)0x5a5a);
        } else {
            assert_true(s == (kvshard__safetensors *)(uintptr_t)0x5a5a);
        }
        assert_int_equal(rc, KVSHARD_ENOMEM);
        assert_int_equal(c.live, 0);
        assert_true(n < 100000);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_size_values),     cmocka_unit_test(test_size_errors),
        cmocka_unit_test(test_size_options),    cmocka_unit_test(test_read_tiny_hybrid),
        cmocka_unit_test(test_which_files),     cmocka_unit_test(test_header_errors),
        cmocka_unit_test(test_index_errors),    cmocka_unit_test(test_classify),
        cmocka_unit_test(test_tiny_summary),    cmocka_unit_test(test_tiny_stages),
        cmocka_unit_test(test_tied_embeddings), cmocka_unit_test(test_kv_shares),
        cmocka_unit_test(test_expert_parallel), cmocka_unit_test(test_estimate),
        cmocka_unit_test(test_partition_rules), cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_sizes_past_the_bits),
        cmocka_unit_test(test_checkpoint_without_tensors),
        cmocka_unit_test(test_json_in_all),     cmocka_unit_test(test_one_file_read_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
