/* The transfer's picture: the edge table drawn with P ranks left, D ranks
 * right and one band per edge whose width is to scale with its bytes. The
 * picture docs/transfer.md shows is regenerated here and compared byte for
 * byte, so it cannot drift from what kvshard draws. */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QWEN KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define DOCS_PICTURE KVSHARD_EXAMPLES "/../docs/images/transfer-qwen3_5.svg"
#define SPLIT_PAIR                                                                                 \
    "--p.world_size=2 --d.world_size=4 --d.enable_layerwise_split=true "                           \
    "--d.layerwise_split_size=2"

/* The widest band is 96 px: the scale the picture says it draws at. */
#define BAND_MAX 96.0

static char *svg_of(const kvshard_transfer *t)
{
    char *text = NULL;
    assert_int_equal(kvshard_transfer_write_svg(t, tu_append, &text), KVSHARD_OK);
    assert_non_null(text);
    return text;
}

static char *read_whole(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            text = realloc(text, cap);
            assert_non_null(text);
        }
        size_t n = fread(text + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    text[len] = '\0';
    return text;
}

/* Well-formed XML, checked by hand so the test needs no parser: every tag
 * closes in order, attributes are quoted, text has no bare '<' or '&'
 * outside an entity, and there is one root element. */
static void assert_well_formed(const char *s)
{
    const char *stack[64];
    size_t stack_len[64], depth = 0, roots = 0;
    if (strncmp(s, "<?xml ", 6) == 0)
        s = strstr(s, "?>") + 2;
    while (*s) {
        if (*s == '&') {
            size_t n = strspn(s + 1, "abcdefghijklmnopqrstuvwxyz#0123456789");
            assert_true(n > 0 && s[1 + n] == ';');
            s += n + 2;
        } else if (*s != '<') {
            assert_true(depth > 0 || *s == '\n');
            s++;
        } else if (s[1] == '/') {
            const char *name = s + 2;
            size_t n = strcspn(name, ">");
            assert_true(depth > 0);
            depth--;
            if (n != stack_len[depth] || strncmp(name, stack[depth], n) != 0)
                fail_msg("</%.*s> closes <%.*s>", (int)n, name, (int)stack_len[depth],
                         stack[depth]);
            s = name + n + 1;
        } else {
            const char *name = s + 1;
            size_t n = strcspn(name, " />");
            assert_true(n > 0);
            const char *p = name + n;
            while (*p == ' ') { /* attributes: name="value" */
                p++;
                p += strcspn(p, "=");
                assert_true(p[0] == '=' && p[1] == '"');
                const char *end = strchr(p + 2, '"');
                assert_non_null(end);
                assert_null(memchr(p + 2, '<', (size_t)(end - p - 2)));
                p = end + 1;
            }
            if (depth == 0)
                roots++;
            if (p[0] == '/') {
                assert_true(p[1] == '>');
                s = p + 2;
            } else {
                assert_true(p[0] == '>');
                assert_true(depth < 64);
                stack[depth] = name;
                stack_len[depth++] = n;
                s = p + 1;
            }
        }
    }
    assert_int_equal(depth, 0);
    assert_int_equal(roots, 1);
}

/* The stroke widths of the bands, in the order they are drawn. */
static size_t band_widths(double *out, size_t cap, const char *svg)
{
    size_t n = 0;
    for (const char *p = svg; (p = strstr(p, "<path class=\"band ")) != NULL; p++) {
        const char *w = strstr(p, "stroke-width=\"");
        assert_non_null(w);
        assert_true(n < cap);
        out[n++] = strtod(w + 14, NULL);
    }
    return n;
}

static size_t occurrences(const char *text, const char *part)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, part)) != NULL; p += strlen(part))
        n++;
    return n;
}

/* The picture of docs/transfer.md is what the command draws today. */
static void test_docs_picture(void **state)
{
    (void)state;
    char command[2048], *out = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "\"%s\" transfer '%s' '%s' %s --context_length=32768 --format=svg", KVSHARD_CLI, QWEN,
             QWEN, SPLIT_PAIR);
    assert_int_equal(tu_run(command, &out, &err), 0);
    assert_string_equal(err, "");
    char *docs = read_whole(DOCS_PICTURE);
    if (strcmp(out, docs) != 0)
        fail_msg("%s is not what `kvshard transfer ... --format=svg` draws: regenerate it with "
                 "the command docs/transfer.md gives",
                 DOCS_PICTURE);
    assert_well_formed(docs);
    free(docs);
    free(out);
    free(err);
}

/* Qwen3.5-35B-A3B, P TP 2 -> D TP 4 with a split of 2, n = 32,768: every
 * (P, D) pair has a kv edge of 5 layers x 1,024 B x 32,768 = 167,772,160 B,
 * the widest (96 px), and four state edges over the 30 GDN layers: conv_q
 * and conv_k 30 x 3,072 = 92,160 B (96 x 92,160 / 167,772,160 =
 * 0.052734375 px), conv_v 184,320 B (0.10546875 px) and ssm 30 x 524,288 =
 * 15,728,640 B (9 px). */
static void test_band_widths_to_scale(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_plan *p = tu_plan_tp(m, 2, 1), *d = tu_plan_tp(m, 4, 2);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    char *svg = svg_of(t);
    assert_well_formed(svg);

    double widths[64];
    size_t n = band_widths(widths, 64, svg);
    assert_int_equal(n, kvshard_transfer_edge_count(t));
    assert_int_equal(n, 20);
    static const struct {
        const char *component;
        uint64_t bytes;
        double width;
    } expected[] = {{"kv", 167772160, 96.0},
                    {"conv_q", 92160, 0.052734375},
                    {"conv_k", 92160, 0.052734375},
                    {"conv_v", 184320, 0.10546875},
                    {"ssm", 15728640, 9.0}};
    for (size_t i = 0; i < n; i++) {
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(t, i);
        bool found = false;
        for (size_t k = 0; k < sizeof expected / sizeof expected[0]; k++) {
            if (strcmp(e->component, expected[k].component) != 0)
                continue;
            found = true;
            assert_int_equal(e->bytes, expected[k].bytes);
            /* Written to 3 decimals. */
            assert_true(fabs(widths[i] - expected[k].width) <= 0.0005);
        }
        assert_true(found);
        /* Proportional: width / bytes is one scale for every band. */
        assert_true(fabs(widths[i] - (double)e->bytes * BAND_MAX / 167772160.0) <= 0.0005);
    }
    assert_int_equal(occurrences(svg, "<rect class=\"rank\""), 2 + 4);
    /* Hover: a band names its layers and bytes; a rank box its total. */
    tu_assert_contains(svg, "<title>P 0 \xE2\x86\x92 D 0: kv units [0, 1) of layers 3, 11, 19, "
                            "27, 35: 5,120 B/token + 0 B = 167,772,160 B</title>");
    tu_assert_contains(svg, "<title>P rank 0 (stage 0, TP 0) sends 367,738,880 B in 10 edges"
                            "</title>");
    tu_assert_contains(svg, "<title>D rank 3 (stage 0, TP 3) receives 183,869,440 B in 5 edges"
                            "</title>");
    tu_assert_contains(svg, ">from P 1: ssm [24, 32) \xC3\x97 30 layers, 15,728,640 B</text>");
    tu_assert_contains(svg, "735,477,760 B on the wire in 20 edges, 7,355 \xC2\xB5s over NIC "
                            "ndr400; digest ee1b03cab8841722");
    free(svg);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);

    /* Without the split each D rank takes its head of all ten layers:
     * 10 x 1,024 x 32,768 = 335,544,320 B a kv edge, now the widest, and
     * the ssm edges half as wide as before against it: 4.5 px. */
    d = tu_plan_tp(m, 4, 1);
    t = tu_transfer(p, d, 32768);
    svg = svg_of(t);
    n = band_widths(widths, 64, svg);
    assert_int_equal(n, 20);
    for (size_t i = 0; i < n; i++) {
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(t, i);
        if (strcmp(e->component, "kv") == 0)
            assert_true(fabs(widths[i] - 96.0) <= 0.0005);
        if (strcmp(e->component, "ssm") == 0)
            assert_true(fabs(widths[i] - 4.5) <= 0.0005);
        assert_true(fabs(widths[i] - (double)e->bytes * BAND_MAX / 335544320.0) <= 0.0005);
    }
    tu_assert_contains(svg, "96 px for 335,544,320 B");
    free(svg);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

/* With stages on P, a P rank's box names its stage: Qwen3-Next-80B-A3B,
 * P 2 stages x TP 2 -> D TP 4. */
static void test_stages(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_next_80b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.pp_size = 2;
    kvshard_plan *p = tu_plan(m, &o), *d = tu_plan_tp(m, 4, 1);
    kvshard_transfer *t = tu_transfer(p, d, 32768);
    char *svg = svg_of(t);
    assert_well_formed(svg);
    assert_int_equal(occurrences(svg, "<path class=\"band "), kvshard_transfer_edge_count(t));
    assert_int_equal(occurrences(svg, "<rect class=\"rank\""), 4 + 4);
    tu_assert_contains(svg, "<title>P rank 3 (stage 1, TP 1) sends ");
    tu_assert_contains(svg, "P TP 2 \xC3\x97 2 stages \xE2\x86\x92 D TP 4");
    free(svg);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);
}

static int failing_writer(void *user, const char *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 1;
}

/* The widths are a request's bytes: without a length there is no picture,
 * and the command says why. */
static void test_refusals(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_plan *p = tu_plan_tp(m, 2, 1), *d = tu_plan_tp(m, 4, 2);
    kvshard_transfer *t = tu_transfer(p, d, 0);
    char *text = NULL;
    assert_int_equal(kvshard_transfer_write_svg(t, tu_append, &text), KVSHARD_EINVAL);
    assert_null(text);
    assert_int_equal(kvshard_transfer_write_svg(NULL, tu_append, &text), KVSHARD_EINVAL);
    kvshard_transfer_free(t);
    t = tu_transfer(p, d, 32768);
    assert_int_equal(kvshard_transfer_write_svg(t, NULL, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_write_svg(t, failing_writer, NULL), KVSHARD_EWRITE);
    kvshard_transfer_free(t);
    kvshard_plan_free(d);
    kvshard_plan_free(p);
    kvshard_model_free(m);

    char command[2048], *out = NULL, *err = NULL;
    snprintf(command, sizeof command, "\"%s\" transfer '%s' '%s' %s --format=svg", KVSHARD_CLI,
             QWEN, QWEN, SPLIT_PAIR);
    assert_int_equal(tu_run(command, &out, &err), 2);
    assert_string_equal(out, "");
    tu_assert_contains(err, "kvshard: transfer: transfer_usage: --format=svg draws each edge's "
                            "bytes for a request and needs its length");
    free(out);
    free(err);
    snprintf(command, sizeof command,
             "\"%s\" transfer '%s' '%s' %s --context_length=8 --format=png", KVSHARD_CLI, QWEN,
             QWEN, SPLIT_PAIR);
    assert_int_equal(tu_run(command, &out, &err), 2);
    tu_assert_contains(err, "transfer_usage: --format takes text, json or svg, not png");
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docs_picture),
        cmocka_unit_test(test_band_widths_to_scale),
        cmocka_unit_test(test_stages),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
