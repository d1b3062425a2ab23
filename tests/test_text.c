/* Reading text safely: special files, the YAML subset kvshard reads, error
 * messages that are safe to print, and the memory a document costs. */
#define _POSIX_C_SOURCE 200809L /* mkfifo, mkdtemp */
#include "test_util.h"

#include "base/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int load_string(const char *text, kvshard_error *err)
{
    kvshard_deployment *dep = NULL;
    int rc = kvshard_deployment_load_string(&dep, text, strlen(text), "t.yaml", NULL, NULL, err);
    kvshard_deployment_free(dep);
    return rc;
}

/* Every byte of a message is printable ASCII or part of valid UTF-8. */
static void assert_safe(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        if (p[i] < 0x80) {
            assert_true(p[i] >= 0x20 && p[i] != 0x7F);
            i++;
            continue;
        }
        size_t n = p[i] >= 0xF0 ? 4 : p[i] >= 0xE0 ? 3 : 2;
        assert_true(p[i] >= 0xC2 && p[i] <= 0xF4);
        for (size_t k = 1; k < n; k++)
            assert_int_equal(p[i + k] & 0xC0, 0x80);
        i += n;
    }
}

/* assert_safe for a whole output: lines end in \n, nothing else is raw. */
static void assert_safe_text(const char *s)
{
    char *copy = strdup(s);
    assert_non_null(copy);
    for (char *line = strtok(copy, "\n"); line; line = strtok(NULL, "\n"))
        assert_safe(line);
    free(copy);
}

/* ---- special files ---------------------------------------------------------------- */

/* A FIFO with no writer would block an open for reading forever; kvshard
 * refuses it at once, naming what it is, as a config and as a `model:`. */
static void test_fifo_refused(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvshard_fifo_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fifo[128], dep_path[128];
    snprintf(fifo, sizeof fifo, "%s/config.yaml", dir);
    snprintf(dep_path, sizeof dep_path, "%s/dep.yaml", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    FILE *f = fopen(dep_path, "w");
    assert_non_null(f);
    fputs("model: config.yaml\n", f);
    fclose(f);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    time_t start = time(NULL);
    assert_int_equal(kvshard_deployment_load_file(&dep, fifo, NULL, &err), KVSHARD_EIO);
    assert_non_null(strstr(err.message, "a FIFO (named pipe); kvshard reads regular files only"));
    assert_int_equal(kvshard_deployment_load_file(&dep, dep_path, NULL, &err), KVSHARD_EIO);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 8);
    assert_non_null(strstr(err.message, "a FIFO"));
    kvshard_model *m = NULL;
    assert_int_equal(kvshard_model_load_file(&m, fifo, NULL, &err), KVSHARD_EIO);
    assert_true(time(NULL) - start < 5);
    assert_null(dep);
    assert_null(m);
    unlink(fifo);
    unlink(dep_path);
    rmdir(dir);
}

/* A character device is refused the same way. */
static void test_device_refused(void **state)
{
    (void)state;
    kvshard_model *m = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_model_load_file(&m, "/dev/null", NULL, &err), KVSHARD_EIO);
    assert_non_null(strstr(err.message, "a character device"));
    assert_string_equal(err.source, "/dev/null");
}

/* /proc files report size 0; their text is read, not called empty. */
static void test_proc_file_read(void **state)
{
    (void)state;
    kvshard_model *m = NULL;
    kvshard_error err;
    if (access("/proc/sys/kernel/ostype", R_OK) != 0) {
        print_message("no /proc/sys/kernel/ostype here\n");
        fail();
    }
    assert_int_equal(kvshard_model_load_file(&m, "/proc/sys/kernel/ostype", NULL, &err),
                     KVSHARD_ETYPE);
    assert_non_null(strstr(err.message, "model config: expected a mapping, found a scalar"));
}

/* A model directory reads its config.json. */
static void test_model_directory(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvshard_dir_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
          "\"head_dim\": 8}\n",
          f);
    fclose(f);
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_load_file(&m, dir, NULL, &err), &err);
    assert_string_equal(kvshard_model_type(m), "llama");
    kvshard_model_free(m);
    kvshard_deployment *dep = NULL;
    tu_assert_ok(kvshard_deployment_load_file(&dep, dir, NULL, &err), &err);
    assert_int_equal(kvshard_model_num_layers(kvshard_deployment_model(dep)), 2);
    kvshard_deployment_free(dep);
    unlink(path);
    /* Without its config.json, the directory is named, not a made-up path. */
    assert_int_equal(kvshard_deployment_load_file(&dep, dir, NULL, &err), KVSHARD_EIO);
    assert_string_equal(err.source, dir);
    assert_string_equal(err.message, "a directory without config.json (a model directory "
                                     "holds the model's config.json)");
    assert_int_equal(kvshard_model_load_file(&m, dir, NULL, &err), KVSHARD_EIO);
    assert_string_equal(err.source, dir);
    rmdir(dir);
}

/* ---- the YAML subset -------------------------------------------------------------------- */

/* Core tags that fit their value are read by the tag; others are errors. */
static void test_core_tags(void **state)
{
    (void)state;
    kvshard_error err;
    const char *head = "model: {num_hidden_layers: 4, head_dim: 8, num_attention_heads: 4}\n";
    char text[256];
    static const struct {
        const char *value;
        int rc;
    } cases[] = {
        {"!!int \"4\"", KVSHARD_OK},
        {"!!str 4", KVSHARD_ETYPE},
        {"!!float 4", KVSHARD_ETYPE},
        {"!!null 4", KVSHARD_ETYPE},
        {"!!bool 4", KVSHARD_ETYPE},
        {"!!int four", KVSHARD_ETYPE},
        {"!custom 4", KVSHARD_EUNSUPPORTED},
        {"!!python/int 4", KVSHARD_EUNSUPPORTED},
        {"!<tag:x.org:y> 4", KVSHARD_EUNSUPPORTED},
        {"04", KVSHARD_ETYPE},
        {"+4", KVSHARD_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(text, sizeof text, "%sparallel:\n  world_size: %s\n", head, cases[i].value);
        int rc = load_string(text, &err);
        if (rc != cases[i].rc)
            print_error("world_size: %s -> %d (%s)\n", cases[i].value, rc, err.message);
        assert_int_equal(rc, cases[i].rc);
    }
    /* A mapping or a list with a non-core tag, and !!map / !!seq. */
    assert_int_equal(load_string("model: !model {num_hidden_layers: 4}\n", &err),
                     KVSHARD_EUNSUPPORTED);
    assert_int_equal(load_string("!!map {model: !!map {num_hidden_layers: 4, head_dim: 8, "
                                 "num_attention_heads: 4}}\n",
                                 &err),
                     KVSHARD_OK);
    /* A quoted "<<" is an ordinary key (and unknown in a deployment). */
    assert_int_equal(
        load_string(
            "\"<<\": 1\nmodel: {num_hidden_layers: 4, num_attention_heads: 4, head_dim: 8}\n",
            &err),
        KVSHARD_EUNKNOWNKEY);
    /* A merge key reached through an alias is still a merge key. */
    assert_int_equal(load_string("x: &m <<\nmodel: {*m : {a: 1}, num_hidden_layers: 4}\n", &err),
                     KVSHARD_EUNSUPPORTED);
}

/* Keys of one length with the same first and last bytes: a mapping below
 * the size that gets a hash index compares such keys in full, and finds a
 * repeated one however many of its kind came between. */
static void test_duplicate_among_similar_keys(void **state)
{
    (void)state;
    kvshard_model *m = NULL;
    kvshard_error err;
    char text[1024];
    size_t n = (size_t)snprintf(text, sizeof text,
                                "num_hidden_layers: 1\nnum_attention_heads: 1\nhead_dim: 8\n");
    for (int i = 10; i < 38; i++) /* 28 keys a10a .. a37a on lines 4 .. 31 */
        n += (size_t)snprintf(text + n, sizeof text - n, "a%da: %d\n", i, i);
    tu_assert_ok(kvshard_model_load_string(&m, text, n, "similar", NULL, &err), &err);
    kvshard_model_free(m);
    m = NULL;
    /* a12a again, on line 32: the mapping has 32 keys, still below the index. */
    n += (size_t)snprintf(text + n, sizeof text - n, "a12a: 0\n");
    assert_int_equal(kvshard_model_load_string(&m, text, n, "similar", NULL, &err),
                     KVSHARD_EDUPKEY);
    assert_null(m);
    assert_int_equal(err.line, 32);
    assert_int_equal(err.column, 1);
    assert_string_equal(err.message, "duplicate key \"a12a\" (first at line 6, column 1)");
}

/* ---- messages safe to print ------------------------------------------------------------------ */

/* Control characters in a key, in a path and in model_type never reach a
 * terminal raw: a crafted key cannot forge a "fake.yaml:1:1:" line. */
static void test_control_characters_escaped(void **state)
{
    (void)state;
    kvshard_error err;
    const char *text = "model: {num_hidden_layers: 4, num_attention_heads: 4, head_dim: 8}\n"
                       "\"x\\e[31m\\r\\nfake.yaml:1:1: ok\": 1\n";
    assert_int_equal(load_string(text, &err), KVSHARD_EUNKNOWNKEY);
    assert_safe(err.message);
    assert_non_null(strstr(err.message, "x\\x1B[31m\\x0D\\x0Afake.yaml:1:1: ok"));

    kvshard_model *m = NULL;
    assert_int_equal(kvshard_model_load_file(&m, "/nonexistent/a\033[2Jb\nc.json", NULL, &err),
                     KVSHARD_EIO);
    assert_safe(err.source);
    assert_string_equal(err.source, "/nonexistent/a\\x1B[2Jb\\x0Ac.json");

    /* model_type with an escape and a C1 control (U+009B, CSI) in the text
     * plan, and as JSON. */
    m = tu_load_model_text("{model_type: \"evil\\e]0;x\\a\\u009bq\", num_hidden_layers: 1, "
                           "num_attention_heads: 1, head_dim: 8}");
    kvshard_plan *p = tu_plan(m, NULL);
    char *json = tu_plan_json(p);
    assert_non_null(strstr(json, "\"model_type\": \"evil\\u001b]0;x\\u0007\xC2\x9Bq\""));
    free(json);
    char *text_out = NULL;
    assert_int_equal(kvshard_plan_write_text(p, tu_append, &text_out), KVSHARD_OK);
    assert_non_null(strstr(text_out, "model      evil\\x1B]0;x\\x07\\xC2\\x9Bq: "));
    assert_safe_text(text_out);
    free(text_out);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* A message cut at its buffer's end stops between UTF-8 characters, at
 * every position a character can straddle the cut. */
static void test_cut_utf8(void **state)
{
    (void)state;
    for (size_t shift = 0; shift < 4; shift++) {
        char text[1200];
        memset(text, 'a', shift);
        size_t n = shift;
        for (int i = 0; i < 300; i++) {
            memcpy(text + n, "\xE2\x82\xAC", 3);
            n += 3;
        }
        text[n] = '\0';
        kvshard_error err;
        kvshard__error_reset(&err);
        assert_int_equal(kvshard__fail(&err, KVSHARD_ERANGE, "s", kvshard__no_mark, "%s", text),
                         KVSHARD_ERANGE);
        assert_safe(err.message);
        assert_true(strlen(err.message) >= sizeof err.message - 4);
        assert_null(strstr(err.message, "\\x"));
        /* A control character at the cut is escaped whole or not at all. */
        memset(text, '\a', sizeof text - 1);
        text[sizeof text - 1] = '\0';
        kvshard__error_reset(&err);
        kvshard__fail(&err, KVSHARD_ERANGE, "s", kvshard__no_mark, "%.*s", (int)(100 + shift),
                      text);
        assert_safe(err.message);
        assert_int_equal(strlen(err.message) % 4, 0);
    }
    /* A long path of multi-byte characters, shortened from the front. */
    char path[600] = "/nonexistent/";
    size_t n = strlen(path);
    for (int i = 0; i < 150; i++) {
        memcpy(path + n, "\xE2\x82\xAC", 3);
        n += 3;
    }
    path[n] = '\0';
    kvshard_model *m = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_model_load_file(&m, path, NULL, &err), KVSHARD_EIO);
    assert_safe(err.source);
    assert_true(strncmp(err.source, "...", 3) == 0);
}

/* The start of a file a `model:` path names is not echoed. */
static void test_no_file_contents_echoed(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvshard_echo_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char secret[128], dep[128];
    snprintf(secret, sizeof secret, "%s/secret", dir);
    snprintf(dep, sizeof dep, "%s/dep.yaml", dir);
    FILE *f = fopen(secret, "w");
    assert_non_null(f);
    fputs("root:x:0:0:root:/root:/bin/bash\nhunter2-password-line\n", f);
    fclose(f);
    f = fopen(dep, "w");
    assert_non_null(f);
    fputs("model: secret\n", f);
    fclose(f);
    kvshard_deployment *d = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_load_file(&d, dep, NULL, &err), KVSHARD_ETYPE);
    assert_null(strstr(err.message, "root"));
    assert_null(strstr(err.message, "hunter2"));
    assert_non_null(strstr(err.message, "model config: expected a mapping, found a scalar"));
    unlink(secret);
    unlink(dep);
    rmdir(dir);
}

/* ---- memory per node --------------------------------------------------------------------------
 */

typedef struct counting {
    size_t now;
    size_t peak;
} counting;

typedef union header {
    size_t size;
    max_align_t align;
} header;

static void *count_malloc(void *user, size_t size)
{
    counting *c = user;
    header *h = malloc(sizeof *h + size);
    if (!h)
        return NULL;
    h->size = size;
    c->now += size;
    c->peak = c->now > c->peak ? c->now : c->peak;
    return h + 1;
}

static void count_free(void *user, void *ptr)
{
    counting *c = user;
    header *h = (header *)ptr - 1;
    c->now -= h->size;
    free(h);
}

/* What kvshard allocates while it reads a document (libyaml's own parser
 * buffers aside), per node, at its peak, beyond the text itself:
 * a 10^6-entry layer_types list at most 16 bytes an entry, and a mapping
 * of 200,000 keys at most 40 bytes a node. */
static void test_loader_memory_per_node(void **state)
{
    (void)state;
    const size_t layers = 1000000;
    size_t cap = layers * 22 + 1024, n = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    n += (size_t)snprintf(text, cap,
                          "{\"num_hidden_layers\": %zu, \"num_attention_heads\": 4, "
                          "\"num_key_value_heads\": 4, \"head_dim\": 8, \"layer_types\": [",
                          layers);
    for (size_t i = 0; i < layers; i++) {
        const char *item = i % 4 == 3 ? "\"attention\"" : "\"hybrid\"";
        n += (size_t)snprintf(text + n, cap - n, "%s%s", i ? "," : "", item);
    }
    n += (size_t)snprintf(text + n, cap - n,
                          "], \"mamba_num_heads\": 4, \"mamba_head_dim\": 8, "
                          "\"ssm_state_size\": 8}");
    counting c = {0, 0};
    kvshard_allocator a = {count_malloc, count_free, &c};
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &a;
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_load_string(&m, text, n, "big", &lo, &err), &err);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_HYBRID), 750000);
    print_message("10^6-entry list: peak %zu bytes, %.2f per entry\n", c.peak,
                  (double)c.peak / (double)layers);
    assert_true(c.peak <= 16 * layers);
    kvshard_model_free(m);
    assert_int_equal(c.now, 0);
    free(text);

    const size_t keys = 200000;
    cap = keys * 24 + 256;
    text = malloc(cap);
    assert_non_null(text);
    n = (size_t)snprintf(text, cap,
                         "{\"num_hidden_layers\": 1, \"num_attention_heads\": 1, "
                         "\"head_dim\": 8");
    for (size_t i = 0; i < keys; i++)
        n += (size_t)snprintf(text + n, cap - n, ", \"k%zu\": %zu", i, i);
    n += (size_t)snprintf(text + n, cap - n, "}");
    c.now = c.peak = 0;
    tu_assert_ok(kvshard_model_load_string(&m, text, n, "keys", &lo, &err), &err);
    size_t nodes = 2 * keys + 7;
    print_message("%zu-key mapping: peak %zu bytes, %.2f per node\n", keys, c.peak,
                  (double)c.peak / (double)nodes);
    assert_true(c.peak <= 40 * nodes);
    kvshard_model_free(m);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_device_refused),
        cmocka_unit_test(test_proc_file_read),
        cmocka_unit_test(test_model_directory),
        cmocka_unit_test(test_core_tags),
        cmocka_unit_test(test_duplicate_among_similar_keys),
        cmocka_unit_test(test_control_characters_escaped),
        cmocka_unit_test(test_cut_utf8),
        cmocka_unit_test(test_no_file_contents_echoed),
        cmocka_unit_test(test_loader_memory_per_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
