/* Reading text safely: special files, the YAML subset kvshard reads, error
 * messages that are safe to print, and the memory a document costs. */
#define _POSIX_C_SOURCE 200809L /* mkfifo, mkdtemp */
#include "test_util.h"

#include "kvshard/output.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/format.h"
#include "text/yaml_doc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    assert_int_equal(kvshard_deployment_load_file(&dep, fifo, NULL, &err), KVSHARD_EIO);
    assert_non_null(strstr(err.message, "a FIFO (named pipe); kvshard reads regular files only"));
    assert_int_equal(kvshard_deployment_load_file(&dep, dep_path, NULL, &err), KVSHARD_EIO);
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 8);
    assert_non_null(strstr(err.message, "a FIFO"));
    kvshard_model *m = NULL;
    assert_int_equal(kvshard_model_load_file(&m, fifo, NULL, &err), KVSHARD_EIO);
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
        kvshard_error__reset(&err);
        assert_int_equal(
            kvshard_error__fail(&err, KVSHARD_ERANGE, "s", kvshard_error__no_mark, "%s", text),
            KVSHARD_ERANGE);
        assert_safe(err.message);
        assert_true(strlen(err.message) >= sizeof err.message - 4);
        assert_null(strstr(err.message, "\\x"));
        /* A control character at the cut is escaped whole or not at all. */
        memset(text, '\a', sizeof text - 1);
        text[sizeof text - 1] = '\0';
        kvshard_error__reset(&err);
        kvshard_error__fail(&err, KVSHARD_ERANGE, "s", kvshard_error__no_mark, "%.*s",
                            (int)(100 + shift), text);
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

/* ---- limits, exactly ------------------------------------------------------------------------ */

/* Each limit is tested one below, at and one past it: the last two differ
 * by one node, anchor, level or byte, and the error names the limit and
 * its macro where the text goes past it. Large texts are made in memory. */

static kvshard_allocator default_alloc(void)
{
    return kvshard_alloc__allocator_or_default(NULL);
}

static int parse_doc(kvshard__doc *doc, const char *text, size_t len, kvshard_error *err)
{
    kvshard_allocator a = default_alloc();
    kvshard_error__reset(err);
    return kvshard_doc__parse(doc, text, len, "t.yaml", &a, err);
}

/* Fail unless the error is `code` at line:column (and `offset` unless
 * SIZE_MAX) with `message` in its text. */
static void assert_error_at(const kvshard_error *err, int code, int line, int column, size_t offset,
                            const char *message)
{
    if (err->code != code || err->line != line || err->column != column ||
        (offset != SIZE_MAX && err->offset != offset) || !strstr(err->message, message))
        print_error("got %d at %d:%d (offset %zu): %s\n", err->code, err->line, err->column,
                    err->offset, err->message);
    assert_int_equal(err->code, code);
    assert_int_equal(err->line, line);
    assert_int_equal(err->column, column);
    if (offset != SIZE_MAX)
        assert_int_equal(err->offset, offset);
    assert_non_null(strstr(err->message, message));
}

/* `len` bytes: `head`, a comment of x's, then `tail`. */
static char *padded(size_t len, const char *head, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail);
    assert_true(hl + tl <= len);
    char *t = malloc(len + 1);
    assert_non_null(t);
    memcpy(t, head, hl);
    memset(t + hl, 'x', len - hl - tl);
    memcpy(t + len - tl, tail, tl);
    t[len] = '\0';
    return t;
}

/* Gemma-style layers: sliding_window_pattern 2 makes layers 2 and 4 full
 * attention and 1 and 3 sliding, unless layer_types says otherwise; here it
 * is the file's last key, with no value, which is null: absent. */
static const char size_head[] = "num_hidden_layers: 4\nnum_attention_heads: 4\nhead_dim: 8\n"
                                "sliding_window: 4\nsliding_window_pattern: 2\n#";
static const char size_tail[] = "\nlayer_types:";

/* A document of exactly KVSHARD_MAX_DOCUMENT_BYTES whose last value is
 * empty stands that value at offset 2^26: it reads as null there and plans
 * as the same text one byte shorter. */
static void test_document_size_at_limit(void **state)
{
    (void)state;
    const size_t max = KVSHARD_MAX_DOCUMENT_BYTES;
    kvshard_error err;
    for (size_t len = max - 1; len <= max; len++) {
        char *text = padded(len, size_head, size_tail);
        kvshard_model *m = NULL;
        tu_assert_ok(kvshard_model_load_string(&m, text, len, "t.yaml", NULL, &err), &err);
        assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 2);
        assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION), 2);
        kvshard_model_free(m);
        kvshard__doc doc;
        tu_assert_ok(parse_doc(&doc, text, len, &err), &err);
        kvshard__node root = kvshard_tape__doc_root(&doc), v;
        assert_true(kvshard_tape__map_get(&doc, &root, "layer_types", &v));
        assert_int_equal(v.kind, KVSHARD__NODE_SCALAR);
        assert_true(kvshard_tape__node_is_null(&v));
        assert_int_equal(v.offset, len);
        kvshard__mark mark = kvshard_marks__mark(&doc, v.offset);
        assert_int_equal(mark.line, 7);
        assert_int_equal(mark.column, 13); /* just after "layer_types:" */
        kvshard_tape__doc_free(&doc);
        free(text);
    }
}

/* An error at the last value of a text of exactly the limit is located
 * there, not at line 1; one byte more is refused, located at the first byte
 * past the limit. */
static void test_document_size_past_limit(void **state)
{
    (void)state;
    const size_t max = KVSHARD_MAX_DOCUMENT_BYTES;
    kvshard_error err;
    char *text =
        padded(max, "model: {num_hidden_layers: 1, num_attention_heads: 1, head_dim: 8}\n#",
               "\nparallel:\n  world_size:");
    kvshard_deployment *dep = NULL;
    assert_int_equal(kvshard_deployment_load_string(&dep, text, max, "t.yaml", NULL, NULL, &err),
                     KVSHARD_ETYPE);
    assert_error_at(&err, KVSHARD_ETYPE, 4, 14, max, "world_size: expected a value, found null");
    free(text);

    /* One byte past: the 2^26 + 1st byte, the ':' of "layer_types:". */
    text = padded(max + 1, size_head, size_tail);
    kvshard_model *m = NULL;
    assert_int_equal(kvshard_model_load_string(&m, text, max + 1, "t.yaml", NULL, &err),
                     KVSHARD_ELIMIT);
    assert_null(m);
    assert_error_at(&err, KVSHARD_ELIMIT, 7, 12, max,
                    "text is 67108865 bytes; the limit is 67108864 bytes "
                    "(KVSHARD_MAX_DOCUMENT_BYTES)");
    free(text);
}

/* A file of exactly the limit is read and loads; one byte more is refused
 * before it is read (the file is sparse: nothing of it is read). */
static void test_file_size_exact(void **state)
{
    (void)state;
    const size_t max = KVSHARD_MAX_DOCUMENT_BYTES;
    char dir[] = "/tmp/kvshard_size_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    char *text = padded(max, size_head, size_tail);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, max, f), max);
    assert_int_equal(fclose(f), 0);
    free(text);
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_load_file(&m, path, NULL, &err), &err);
    assert_int_equal(kvshard_model_count(m, KVSHARD_LAYER_SLIDING_ATTENTION), 2);
    kvshard_model_free(m);
    m = NULL;
    assert_int_equal(truncate(path, (off_t)max + 1), 0);
    assert_int_equal(kvshard_model_load_file(&m, path, NULL, &err), KVSHARD_ELIMIT);
    assert_null(m);
    assert_string_equal(err.source, path);
    assert_string_equal(err.message, "file is 67108865 bytes; the limit is 67108864 bytes "
                                     "(KVSHARD_MAX_DOCUMENT_BYTES)");
    unlink(path);
    rmdir(dir);
}

/* `levels` nested lists on one line: level k opens at column k. */
static void test_depth_exact(void **state)
{
    (void)state;
    char text[2 * KVSHARD_MAX_DEPTH + 8];
    kvshard_error err;
    for (unsigned levels = KVSHARD_MAX_DEPTH - 1; levels <= KVSHARD_MAX_DEPTH + 1; levels++) {
        size_t n = 0;
        for (unsigned i = 0; i < levels; i++)
            text[n++] = '[';
        for (unsigned i = 0; i < levels; i++)
            text[n++] = ']';
        kvshard__doc doc;
        int rc = parse_doc(&doc, text, n, &err);
        if (levels <= KVSHARD_MAX_DEPTH) {
            tu_assert_ok(rc, &err);
            kvshard_tape__doc_free(&doc);
        } else {
            assert_error_at(&err, KVSHARD_ELIMIT, 1, (int)levels, levels - 1,
                            "nesting deeper than 64 levels (KVSHARD_MAX_DEPTH)");
        }
    }
}

/* `count` anchors a line ("- &aK K"), then an alias of the last. A name used
 * again replaces its anchor rather than counting twice. */
static void test_anchors_exact(void **state)
{
    (void)state;
    char text[16384];
    kvshard_error err;
    for (unsigned count = KVSHARD_MAX_ANCHORS - 1; count <= KVSHARD_MAX_ANCHORS + 1; count++) {
        size_t n = 0;
        for (unsigned k = 1; k <= count; k++)
            n += (size_t)snprintf(text + n, sizeof text - n, "- &a%u %u\n", k, k);
        n += (size_t)snprintf(text + n, sizeof text - n, "- &a1 again\n- *a%u\n- *a1\n", count);
        kvshard__doc doc;
        int rc = parse_doc(&doc, text, n, &err);
        if (count > KVSHARD_MAX_ANCHORS) {
            assert_error_at(&err, KVSHARD_ELIMIT, (int)count, 3, SIZE_MAX,
                            "more than 256 anchors (KVSHARD_MAX_ANCHORS)");
            continue;
        }
        tu_assert_ok(rc, &err);
        kvshard__node root = kvshard_tape__doc_root(&doc);
        assert_int_equal(root.count, count + 3);
        kvshard__node last = kvshard_tape__seq_item(&doc, &root, count + 1);
        kvshard__node again = kvshard_tape__seq_item(&doc, &root, count + 2);
        char want[16];
        snprintf(want, sizeof want, "%u", count);
        assert_true(kvshard_tape__scalar_is(&last, want));
        assert_true(kvshard_tape__scalar_is(&again, "again"));
        kvshard_tape__doc_free(&doc);
    }
}

/* A list of 1023 ones anchored, `aliases` aliases of it (1024 nodes each),
 * then `ones` more ones: 1 + 1024 (1 + aliases) + ones nodes. *at_last is the
 * offset of the last item. */
static char *alias_text(size_t *len, size_t *at_last, unsigned aliases, unsigned ones)
{
    size_t cap = 8 + 2048 + 4 * (size_t)aliases + 3 * (size_t)ones;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t n = 0;
    memcpy(t, "[&a [1", 6);
    n = 6;
    for (unsigned i = 1; i < 1023; i++) {
        memcpy(t + n, ",1", 2);
        n += 2;
    }
    t[n++] = ']';
    for (unsigned i = 0; i < aliases; i++) {
        memcpy(t + n, ",*a ", 4);
        *at_last = n + 1;
        n += 4;
    }
    for (unsigned i = 0; i < ones; i++) {
        memcpy(t + n, ",1", 2);
        *at_last = n + 1;
        n += 2;
    }
    t[n++] = ']';
    assert_true(n <= cap);
    *len = n;
    return t;
}

static void test_nodes_exact(void **state)
{
    (void)state;
    kvshard_error err;
    /* 1 + 1024 * 8191 = 8,387,585 nodes, and 1022, 1023 or 1024 ones. */
    for (unsigned ones = 1022; ones <= 1024; ones++) {
        size_t len, last;
        char *text = alias_text(&len, &last, 8190, ones);
        kvshard__doc doc;
        int rc = parse_doc(&doc, text, len, &err);
        if (ones == 1024) {
            assert_error_at(&err, KVSHARD_ELIMIT, 1, (int)last + 1, last,
                            "document has more than 8388608 nodes (aliases counted as what they "
                            "stand for; KVSHARD_MAX_NODES)");
        } else {
            tu_assert_ok(rc, &err);
            kvshard__node root = kvshard_tape__doc_root(&doc);
            assert_int_equal(root.count, 1 + 8190 + ones);
            kvshard__node alias = kvshard_tape__seq_item(&doc, &root, 8190);
            assert_int_equal(alias.kind, KVSHARD__NODE_SEQUENCE);
            assert_int_equal(alias.count, 1023);
            kvshard_tape__doc_free(&doc);
        }
        free(text);
    }
    /* The alias that goes past is refused where it stands: 1 + 1024 * 8192. */
    size_t len, last;
    char *text = alias_text(&len, &last, 8191, 0);
    kvshard__doc doc;
    assert_int_equal(parse_doc(&doc, text, len, &err), KVSHARD_ELIMIT);
    assert_error_at(&err, KVSHARD_ELIMIT, 1, (int)last + 1, last, "KVSHARD_MAX_NODES");
    free(text);
}

/* "-\n" a line: `items` empty items, which libyaml reads fastest. Item i
 * (null) stands just after its dash, at line i + 1, column 2. */
static char *dashes(size_t *len, size_t items)
{
    char *t = malloc(2 * items);
    assert_non_null(t);
    for (size_t i = 0; i < items; i++) {
        t[2 * i] = '-';
        t[2 * i + 1] = '\n';
    }
    *len = 2 * items;
    return t;
}

/* A list has no limit of its own: with itself it is at most
 * KVSHARD_MAX_NODES nodes, so at the top it holds at most 8,388,607 items,
 * and its count and every item's place are kept exactly. */
static void check_list(size_t items)
{
    size_t len;
    char *text = dashes(&len, items);
    kvshard__doc doc;
    kvshard_error err;
    int rc = parse_doc(&doc, text, len, &err);
    if (items + 1 > KVSHARD_MAX_NODES) {
        assert_error_at(&err, KVSHARD_ELIMIT, (int)items, 2, 2 * (items - 1) + 1,
                        "document has more than 8388608 nodes");
    } else {
        tu_assert_ok(rc, &err);
        kvshard__node root = kvshard_tape__doc_root(&doc);
        assert_int_equal(root.count, items);
        kvshard__node item = kvshard_tape__seq_item(&doc, &root, (uint32_t)(items - 1));
        assert_true(kvshard_tape__node_is_null(&item));
        assert_int_equal(item.offset, 2 * (items - 1) + 1);
        kvshard__mark m = kvshard_marks__mark(&doc, item.offset);
        assert_int_equal(m.line, (int)items);
        assert_int_equal(m.column, 2);
        kvshard_tape__doc_free(&doc);
    }
    free(text);
}

static void test_list_items_below_limit(void **state)
{
    (void)state;
    check_list(KVSHARD_MAX_NODES - 2);
}

static void test_list_items_at_limit(void **state)
{
    (void)state;
    check_list(KVSHARD_MAX_NODES - 1);
}

static void test_list_items_past_limit(void **state)
{
    (void)state;
    check_list(KVSHARD_MAX_NODES);
}

/* Key i of a mapping of distinct 4-letter keys. */
static void key4(char *out, size_t i)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int d = 0; d < 4; d++) {
        out[d] = letters[i % 62];
        i /= 62;
    }
}

/* "{aaaa,baaa,...,KEY: 1}": `keys` keys, all null but the last, which is 1. */
static char *keys_mapping(size_t *len, size_t *value_at, size_t keys)
{
    char *t = malloc(5 * keys + 8);
    assert_non_null(t);
    size_t n = 0;
    t[n++] = '{';
    for (size_t i = 0; i < keys; i++) {
        key4(t + n, i);
        n += 4;
        t[n++] = ',';
    }
    n--; /* the last key's comma */
    memcpy(t + n, ": 1}", 4);
    *value_at = n + 2;
    *len = n + 4;
    return t;
}

/* A mapping has no limit of its own either: its keys and values are nodes,
 * so at the top it holds at most (KVSHARD_MAX_NODES - 1) / 2 = 4,194,303
 * keys. The index of so many keys finds each of them. */
static void check_keys(size_t keys)
{
    size_t len, value_at;
    char *text = keys_mapping(&len, &value_at, keys);
    kvshard__doc doc;
    kvshard_error err;
    int rc = parse_doc(&doc, text, len, &err);
    if (1 + 2 * keys > KVSHARD_MAX_NODES) {
        assert_error_at(&err, KVSHARD_ELIMIT, 1, (int)value_at + 1, value_at,
                        "document has more than 8388608 nodes");
    } else {
        tu_assert_ok(rc, &err);
        kvshard__node root = kvshard_tape__doc_root(&doc), v;
        assert_int_equal(root.count, keys);
        char key[5] = {0};
        key4(key, keys - 1);
        assert_true(kvshard_tape__map_get(&doc, &root, key, &v));
        assert_true(kvshard_tape__scalar_is(&v, "1"));
        assert_int_equal(v.offset, value_at);
        key4(key, keys / 2);
        assert_true(kvshard_tape__map_get(&doc, &root, key, &v));
        assert_true(kvshard_tape__node_is_null(&v));
        assert_false(kvshard_tape__map_get(&doc, &root, "zzzzz", &v));
        kvshard_tape__doc_free(&doc);
    }
    free(text);
}

static void test_mapping_keys_below_limit(void **state)
{
    (void)state;
    check_keys((KVSHARD_MAX_NODES - 1) / 2 - 1);
}

static void test_mapping_keys_at_limit(void **state)
{
    (void)state;
    check_keys((KVSHARD_MAX_NODES - 1) / 2);
}

static void test_mapping_keys_past_limit(void **state)
{
    (void)state;
    check_keys((KVSHARD_MAX_NODES - 1) / 2 + 1);
}

/* The duplicate-key index of kvshard 0.2: a fixed multiply-xorshift hash of
 * the text in words, whose low bits picked a slot, probed linearly. Keys
 * whose slots fall in the first sixteenth of the table pile up there, and
 * every new key walked the whole pile. */
static uint64_t old_round(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 31);
}

static uint32_t old_hash(const char *s, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)len, w;
    assert_true(len >= 8); /* the keys here: the word loop and the last word */
    const char *last = s + len - 8;
    for (; s < last; s += 8) {
        memcpy(&w, s, 8);
        h = old_round(h, w);
    }
    memcpy(&w, last, 8);
    h = old_round(h, w) * 0x94D049BB133111EBull;
    return (uint32_t)(h >> 32);
}

static uint32_t table_slots(size_t pairs)
{
    uint32_t slots = 32;
    while (slots < 2 * pairs)
        slots *= 2;
    return slots;
}

typedef uint32_t (*key_hash_fn)(const void *ctx, const char *key, size_t len);

static uint32_t old_scheme(const void *ctx, const char *key, size_t len)
{
    (void)ctx;
    return old_hash(key, len);
}

static uint32_t new_scheme(const void *ctx, const char *key, size_t len)
{
    return kvshard_hash__of(ctx, key, len);
}

/* Key i: "k" and 7 digits, or with a hash, the i-th of "kXXXXXXX" (base 26)
 * whose slot among `slots` falls in the first sixteenth. */
static void key_text(char out[9], uint64_t v)
{
    out[0] = 'k';
    for (int d = 7; d >= 1; d--) {
        out[d] = (char)('a' + v % 26);
        v /= 26;
    }
    out[8] = '\0';
}

static char **make_keys(size_t n, key_hash_fn hash, const void *ctx, uint32_t slots)
{
    char **keys = malloc(n * sizeof *keys);
    assert_non_null(keys);
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        keys[i] = malloc(9);
        assert_non_null(keys[i]);
        if (!hash) {
            snprintf(keys[i], 9, "k%07zu", i);
            continue;
        }
        do
            key_text(keys[i], v++);
        while ((hash(ctx, keys[i], 8) & (slots - 1)) >= slots / 16);
    }
    return keys;
}

static void free_keys(char **keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
}

/* A model config: 3 model keys, then `n` keys a line ("KEY": I), key i on
 * line i + 5, then `extra` more lines as given. */
static char *keys_config(size_t *len, char **keys, size_t n, const char *const *extra,
                         size_t extras)
{
    size_t cap = 128 + (n + extras) * 24, k = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    k += (size_t)snprintf(t, cap,
                          "{\n\"num_hidden_layers\": 1,\n\"num_attention_heads\": 1,\n"
                          "\"head_dim\": 8");
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(t + k, cap - k, ",\n\"%s\": %zu", keys[i], i);
    for (size_t j = 0; j < extras; j++)
        k += (size_t)snprintf(t + k, cap - k, ",\n%s", extra[j]);
    k += (size_t)snprintf(t + k, cap - k, "\n}\n");
    *len = k;
    return t;
}

static void assert_loads(const char *text, size_t len)
{
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_load_string(&m, text, len, "keys", NULL, &err), &err);
    assert_int_equal(kvshard_model_num_layers(m), 1);
    kvshard_model_free(m);
}

/* 100,000 keys that all fall in one sixteenth of kvshard 0.2's table: it
 * took seconds over them (a few MB of them, minutes). They load like as many
 * ordinary keys; how fast, the benchmark measures (its "keys" case). */
static void test_keys_colliding_under_old_hash(void **state)
{
    (void)state;
    const size_t n = 100000;
    char **plain = make_keys(n, NULL, NULL, 0);
    char **crafted = make_keys(n, old_scheme, NULL, table_slots(n + 3));
    size_t plain_len, crafted_len;
    char *plain_text = keys_config(&plain_len, plain, n, NULL, 0);
    char *crafted_text = keys_config(&crafted_len, crafted, n, NULL, 0);
    assert_int_equal(plain_len, crafted_len);
    assert_loads(plain_text, plain_len);
    assert_loads(crafted_text, crafted_len);
    free(plain_text);
    free(crafted_text);
    free_keys(plain, n);
    free_keys(crafted, n);
}

/* With the hash key known (a test's fixed seed), keys can be chosen to
 * crowd the table. They get the sorted index: every key is found, a
 * missing one is not, and the earliest repeat is the one reported. */
static void test_keys_crowding_known_hash_key(void **state)
{
    (void)state;
    const size_t n = 60000;
    const uint64_t seed = 12345;
    kvshard__hash_key hk = kvshard_hash__key(seed);
    char **plain = make_keys(n, NULL, NULL, 0);
    char **crafted = make_keys(n, new_scheme, &hk, table_slots(n + 3));
    kvshard_allocator a = default_alloc();
    kvshard_error err;
    /* How fast the crowded table is, the benchmark measures (its "keys"
     * case); here, that it finds every key. */
    for (int pass = 0; pass < 2; pass++) {
        char **keys = pass ? crafted : plain;
        size_t len;
        char *text = keys_config(&len, keys, n, NULL, 0);
        kvshard__doc doc;
        kvshard_error__reset(&err);
        tu_assert_ok(kvshard_doc__parse_seeded(&doc, text, len, "keys", &a, seed, &err), &err);
        kvshard__node root = kvshard_tape__doc_root(&doc), v;
        assert_int_equal(kvshard_tape__map_sorted(&doc, &root), pass == 1);
        for (size_t i = 0; i < n; i += 997) {
            char want[16];
            snprintf(want, sizeof want, "%zu", i);
            assert_true(kvshard_tape__map_get(&doc, &root, keys[i], &v));
            assert_true(kvshard_tape__scalar_is(&v, want));
        }
        assert_true(kvshard_tape__map_get(&doc, &root, "head_dim", &v));
        assert_true(kvshard_tape__scalar_is(&v, "8"));
        assert_false(kvshard_tape__map_get(&doc, &root, "kzzzzzzz", &v));
        kvshard_tape__doc_free(&doc);
        free(text);
    }

    /* After the keys: a repeat of key 9000 on line n + 5, one of key 5000
     * on line n + 6, and a key that is a list on line n + 7. The first
     * repeat is the error, pointing back at line 9000 + 5; without the
     * repeats, the list key is. */
    char dup9000[32], dup5000[32];
    snprintf(dup9000, sizeof dup9000, "\"%s\": 0", crafted[9000]);
    snprintf(dup5000, sizeof dup5000, "\"%s\": 0", crafted[5000]);
    const char *const extra[] = {dup9000, dup5000, "? [1] : 0"};
    for (size_t first = 0; first < 3; first++) {
        size_t len;
        char *text = keys_config(&len, crafted, n, extra + first, 3 - first);
        kvshard__doc doc;
        kvshard_error__reset(&err);
        int rc = kvshard_doc__parse_seeded(&doc, text, len, "keys", &a, seed, &err);
        char want[96];
        if (first < 2) {
            size_t of = first == 0 ? 9000 : 5000;
            snprintf(want, sizeof want, "duplicate key \"%s\" (first at line %zu, column 1)",
                     crafted[of], of + 5);
            assert_int_equal(rc, KVSHARD_EDUPKEY);
            assert_error_at(&err, KVSHARD_EDUPKEY, (int)n + 5, 1, SIZE_MAX, want);
        } else {
            assert_int_equal(rc, KVSHARD_ETYPE);
            assert_error_at(&err, KVSHARD_ETYPE, (int)n + 5, 3, SIZE_MAX,
                            "mapping keys must be scalars");
        }
        free(text);
    }
    free_keys(plain, n);
    free_keys(crafted, n);
}

/* Keys that are aliases of long texts cost no more than their own few
 * bytes: 32 anchors of 100 kB texts alike but in the last bytes, then 2000
 * small mappings and 20 large ones of aliases of them. kvshard 0.2 compared
 * the texts over and over (seconds); now each text is hashed once. */
static void test_alias_keys_of_long_texts(void **state)
{
    (void)state;
    const size_t text_len = 100000, anchors = 40;
    size_t cap = 2 * anchors * (text_len + 16) + 2200 * 40 * 12, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    n += (size_t)snprintf(t, cap, "a: [");
    for (size_t i = 0; i < anchors; i++) {
        n += (size_t)snprintf(t + n, cap - n, "&k%02zu x", i);
        memset(t + n, 'y', text_len);
        t[n + text_len - 2] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"[i];
        n += text_len;
        t[n++] = ',';
    }
    n += (size_t)snprintf(t + n, cap - n, "]\nb: [");
    for (size_t m = 0; m < 2020; m++) {
        size_t keys = m < 2000 ? 32 : anchors; /* the last 20 get an index */
        t[n++] = '{';
        for (size_t i = 0; i < keys; i++)
            n += (size_t)snprintf(t + n, cap - n, "*k%02zu : 1,", i);
        n += (size_t)snprintf(t + n, cap - n, "},");
    }
    n += (size_t)snprintf(t + n, cap - n, "]\n");
    assert_true(n < cap);
    kvshard__doc doc;
    kvshard_error err;
    tu_assert_ok(parse_doc(&doc, t, n, &err), &err);
    kvshard_tape__doc_free(&doc);
    /* A plain key of the same text as anchor k02's and then an alias of
     * k02, in an indexed mapping: a duplicate. */
    n -= 2; /* the final "]\n" */
    t[n++] = '{';
    for (size_t i = 0; i < 40; i++)
        n += (size_t)snprintf(t + n, cap - n, "p%02zu: 1, ", i);
    n += (size_t)snprintf(t + n, cap - n, "? x"); /* past 1024 characters a key is explicit */
    memset(t + n, 'y', text_len);
    t[n + text_len - 2] = 'C';
    n += text_len;
    n += (size_t)snprintf(t + n, cap - n, ": 1, *k02 : 2}]\n");
    assert_true(n < cap);
    assert_int_equal(parse_doc(&doc, t, n, &err), KVSHARD_EDUPKEY);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.message, "(first at line 2, column "));
    free(t);
}

/* One alias of the last of 256 anchors a line: each is found by its name's
 * hash, not by comparing it with the 255 before (seconds in kvshard 0.2). */
static void test_many_aliases_of_many_anchors(void **state)
{
    (void)state;
    const size_t aliases = 1000000;
    size_t cap = 256 * 12 + aliases * 7 + 16, n = 0;
    char *t = malloc(cap);
    assert_non_null(t);
    t[n++] = '[';
    for (unsigned i = 0; i < 256; i++)
        n += (size_t)snprintf(t + n, cap - n, "&a%03u 1,", i);
    for (size_t i = 0; i < aliases; i++) {
        memcpy(t + n, "*a255,", 6);
        n += 6;
    }
    t[n - 1] = ']';
    kvshard__doc doc;
    kvshard_error err;
    tu_assert_ok(parse_doc(&doc, t, n, &err), &err);
    kvshard__node root = kvshard_tape__doc_root(&doc);
    assert_int_equal(root.count, 256 + aliases);
    kvshard_tape__doc_free(&doc);
    /* The yardstick: as many plain scalars of the same length. */
    for (size_t i = 0; i < aliases; i++)
        memcpy(t + 1 + 256 * 8 + 6 * i, "12345,", 6);
    t[n - 1] = ']';
    tu_assert_ok(parse_doc(&doc, t, n, &err), &err);
    kvshard_tape__doc_free(&doc);
    free(t);
}

/* ---- joined messages -------------------------------------------------------------------- */

/* A joined message is cut where snprintf would cut the same text: at every
 * room from none to more than the whole, the same bytes and length. */
static void test_join_cuts_as_snprintf(void **state)
{
    (void)state;
    const kvshard_format__part parts[] = {
        KVSHARD_FORMAT_LITERAL("the wire carries "), kvshard_format__part_of("1,234"),
        KVSHARD_FORMAT_LITERAL(" B"), kvshard_format__part_of(NULL),
        KVSHARD_FORMAT_LITERAL(" per token")};
    const char whole[] = "the wire carries 1,234 B per token";
    for (size_t cap = 0; cap <= sizeof whole + 2; cap++) {
        char joined[64], printed[64];
        memset(joined, 'x', sizeof joined);
        memset(printed, 'x', sizeof printed);
        size_t n = kvshard_format__join(joined, cap, parts, sizeof parts / sizeof *parts);
        int m = snprintf(printed, cap, "%s", whole);
        size_t expect = cap == 0 ? 0 : (size_t)m < cap ? (size_t)m : cap - 1;
        assert_int_equal(n, expect);
        assert_memory_equal(joined, printed, cap ? expect + 1 : 1);
    }
}

/* ---- tags on collections ------------------------------------------------------------------- */

/* A core tag on the wrong kind of node is a type error, as a scalar tag
 * that does not fit the text is; other tags are not read. */
static void test_collection_tags(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int code;
        int column;
        const char *message;
    } cases[] = {
        {"a: !!map {b: 1}\n", KVSHARD_OK, 0, ""},
        {"a: !!seq [1]\n", KVSHARD_OK, 0, ""},
        {"a: !!seq {b: 1}\n", KVSHARD_ETYPE, 4,
         "the tag !!seq does not fit a mapping: it tags a list, and a mapping takes !!map"},
        {"a: !!map [1]\n", KVSHARD_ETYPE, 4,
         "the tag !!map does not fit a list: it tags a mapping, and a list takes !!seq"},
        {"a: !!str {b: 1}\n", KVSHARD_ETYPE, 4,
         "the tag !!str does not fit a mapping: it tags a scalar, and a mapping takes !!map"},
        {"a: !!int [1]\n", KVSHARD_ETYPE, 4,
         "the tag !!int does not fit a list: it tags a scalar, and a list takes !!seq"},
        {"a: !!map 4\n", KVSHARD_ETYPE, 4,
         "the tag !!map does not fit the value \"4\": it tags a mapping"},
        {"a: !!seq x\n", KVSHARD_ETYPE, 4,
         "the tag !!seq does not fit the value \"x\": it tags a list"},
        {"a:\n  !!seq\n  b: 1\n", KVSHARD_ETYPE, 3, "the tag !!seq does not fit a mapping"},
        {"a: ! {b: 1}\n", KVSHARD_EUNSUPPORTED, 4,
         "the tag ! is not one kvshard reads on a mapping"},
        {"a: !!omap [x]\n", KVSHARD_EUNSUPPORTED, 4,
         "the tag !!omap is not one kvshard reads on a list"},
        {"a: !!set {x}\n", KVSHARD_EUNSUPPORTED, 4,
         "the tag !!set is not one kvshard reads on a mapping"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kvshard__doc doc;
        kvshard_error err;
        int rc = parse_doc(&doc, cases[i].text, strlen(cases[i].text), &err);
        if (cases[i].code == KVSHARD_OK) {
            tu_assert_ok(rc, &err);
            kvshard_tape__doc_free(&doc);
            continue;
        }
        int line = cases[i].column == 3 ? 2 : 1;
        assert_error_at(&err, cases[i].code, line, cases[i].column, SIZE_MAX, cases[i].message);
    }
    /* Through the loader, where a config's mapping is tagged !!seq. */
    kvshard_error err;
    assert_int_equal(load_string("model: !!seq {num_hidden_layers: 4, head_dim: 8, "
                                 "num_attention_heads: 4}\n",
                                 &err),
                     KVSHARD_ETYPE);
    assert_error_at(&err, KVSHARD_ETYPE, 1, 8, 7, "the tag !!seq does not fit a mapping");
}

/* Marks of more offsets than one pass takes (KVSHARD__DOC_MARKS_MAX) are
 * found a slice at a time, with nothing allocated. 40 lines "kNN: NN\n" of
 * 8 bytes; the value of line L starts at offset 8 (L - 1) + 5, column 6.
 * Offsets go last line first, so entry n is line 40 - n. */
static void test_marks_past_one_pass(void **state)
{
    (void)state;
    char text[40 * 8 + 1];
    for (int l = 0; l < 40; l++)
        snprintf(text + 8 * l, 9, "k%02d: %02d\n", l, l);
    kvshard__doc doc;
    kvshard_error err;
    tu_assert_ok(parse_doc(&doc, text, 40 * 8, &err), &err);
    size_t offsets[40];
    kvshard__mark marks[40];
    for (size_t n = 0; n < 40; n++)
        offsets[n] = 8 * (39 - n) + 5;
    kvshard_marks__of(&doc, offsets, marks, 40);
    for (size_t n = 0; n < 40; n++) {
        assert_int_equal(marks[n].line, (int)(40 - n));
        assert_int_equal(marks[n].column, 6);
        assert_int_equal(marks[n].offset, offsets[n]);
    }
    kvshard_tape__doc_free(&doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_refused),
        cmocka_unit_test(test_marks_past_one_pass),
        cmocka_unit_test(test_device_refused),
        cmocka_unit_test(test_proc_file_read),
        cmocka_unit_test(test_model_directory),
        cmocka_unit_test(test_core_tags),
        cmocka_unit_test(test_duplicate_among_similar_keys),
        cmocka_unit_test(test_control_characters_escaped),
        cmocka_unit_test(test_cut_utf8),
        cmocka_unit_test(test_no_file_contents_echoed),
        cmocka_unit_test(test_loader_memory_per_node),
        cmocka_unit_test(test_document_size_at_limit),
        cmocka_unit_test(test_document_size_past_limit),
        cmocka_unit_test(test_file_size_exact),
        cmocka_unit_test(test_depth_exact),
        cmocka_unit_test(test_anchors_exact),
        cmocka_unit_test(test_nodes_exact),
        cmocka_unit_test(test_list_items_below_limit),
        cmocka_unit_test(test_list_items_at_limit),
        cmocka_unit_test(test_list_items_past_limit),
        cmocka_unit_test(test_mapping_keys_below_limit),
        cmocka_unit_test(test_mapping_keys_at_limit),
        cmocka_unit_test(test_mapping_keys_past_limit),
        cmocka_unit_test(test_keys_colliding_under_old_hash),
        cmocka_unit_test(test_keys_crowding_known_hash_key),
        cmocka_unit_test(test_alias_keys_of_long_texts),
        cmocka_unit_test(test_many_aliases_of_many_anchors),
        cmocka_unit_test(test_collection_tags),
        cmocka_unit_test(test_join_cuts_as_snprintf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
