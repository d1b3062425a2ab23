/* The picture of a plan: the layer map SVG and the HTML report. The markup
 * is checked with xmllint (libxml2-utils), the cells are counted and their
 * owners read back from the markup, strings from the input must come out
 * escaped, a failing writer must stop the output, and the size must grow
 * linearly with the layers. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include "output/report.h"
#include "output/report_chart.h"
#include "output/svg.h"
#include "plan/queries.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- output capture ------------------------------------------------------ */

typedef struct text {
    char *data;
    size_t len;
    size_t cap;
} text;

/* Appends, doubling the buffer: the 100,000-layer outputs are 17 MB. */
static int collect(void *user, const char *data, size_t len)
{
    text *t = user;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 65536;
        while (cap < t->len + len + 1)
            cap *= 2;
        char *grown = realloc(t->data, cap);
        if (!grown)
            return -1;
        t->data = grown;
        t->cap = cap;
    }
    memcpy(t->data + t->len, data, len);
    t->len += len;
    t->data[t->len] = '\0';
    return 0;
}

static text svg_of(const kvshard_plan *plan)
{
    text t = {NULL, 0, 0};
    assert_int_equal(kvshard_plan_write_svg(plan, collect, &t), KVSHARD_OK);
    assert_non_null(t.data);
    assert_int_equal(strlen(t.data), t.len); /* no NUL byte inside */
    return t;
}

static text html_of(const kvshard_plan *plan, const kvshard_comparison *cmp)
{
    text t = {NULL, 0, 0};
    assert_int_equal(kvshard_report_write_html(plan, cmp, NULL, collect, &t), KVSHARD_OK);
    assert_non_null(t.data);
    assert_int_equal(strlen(t.data), t.len);
    return t;
}

/* ---- well-formedness ----------------------------------------------------- */

/* xmllint must be there: a missing checker fails the test, it does not skip. */
static void require_xmllint(void)
{
    if (tu_run("command -v xmllint", NULL, NULL) != 0)
        fail_msg("xmllint not found: install libxml2-utils (apt-get install libxml2-utils); "
                 "this test checks the report's markup with it");
}

static void assert_well_formed(const text *t, const char *what)
{
    require_xmllint();
    char path[] = "/tmp/kvshard_report_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(t->data, 1, t->len, f), t->len);
    assert_int_equal(fclose(f), 0);
    char command[128];
    snprintf(command, sizeof command, "xmllint --noout '%s'", path);
    char *err = NULL;
    int status = tu_run(command, NULL, &err);
    if (status != 0)
        print_error("xmllint on the %s:\n%s\n", what, err ? err : "");
    free(err);
    unlink(path);
    assert_int_equal(status, 0);
}

/* ---- reading the cells back ---------------------------------------------- */

#define OWNER_NOT_KV (-3) /* a linear, sliding or no-cache cell */

typedef struct cell {
    char kind;     /* F, H, L, W or N, from the class "k?" */
    int32_t owner; /* split rank, KVSHARD_OWNER_ALL, or OWNER_NOT_KV */
    char mark[16]; /* the text drawn in the cell, "" when none */
} cell;

/* The first `needle` in [p, end), or NULL. Searched with memchr and memcmp:
 * strstr under AddressSanitizer measures the whole rest of a 17 MB document
 * on every call, which makes a loop over 100,000 cells quadratic. */
static const char *find(const char *p, const char *end, const char *needle)
{
    size_t n = strlen(needle);
    while ((size_t)(end - p) >= n) {
        const char *hit = memchr(p, needle[0], (size_t)(end - p) - n + 1);
        if (!hit)
            return NULL;
        if (memcmp(hit, needle, n) == 0)
            return hit;
        p = hit + 1;
    }
    return NULL;
}

static size_t count_of(const char *doc, const char *needle)
{
    const char *end = doc + strlen(doc);
    size_t n = 0;
    for (const char *p = doc; (p = find(p, end, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Parse every <rect id="lN" class="layer ..."> in order into cells[0..L-1]:
 * ids must run 0, 1, ..., L-1 with no gap or repeat, and no other element
 * may carry the class "layer". Returns the count. */
static size_t read_cells(const char *doc, cell *cells, size_t cap)
{
    const char *doc_end = doc + strlen(doc);
    size_t n = 0;
    for (const char *p = doc; (p = find(p, doc_end, "<rect id=\"l")) != NULL;) {
        char *end;
        unsigned long id = strtoul(p + 11, &end, 10);
        assert_int_equal(id, n);
        assert_true(n < cap);
        assert_int_equal(strncmp(end, "\" class=\"layer k", 16), 0);
        cell *c = &cells[n];
        c->kind = end[16];
        const char *title = find(end, doc_end, "<title>");
        const char *title_end = find(end, doc_end, "</title></rect>");
        assert_non_null(title);
        assert_non_null(title_end);
        /* The title and the mark after it, in a copy, so that every search
         * below stays within this cell. */
        char tip[256];
        const char *after = title_end + strlen("</title></rect>");
        const char *line_end = memchr(after, '\n', (size_t)(doc_end - after));
        assert_non_null(line_end);
        size_t tip_len = (size_t)(line_end - title);
        assert_true(tip_len < sizeof tip);
        memcpy(tip, title, tip_len);
        tip[tip_len] = '\0';
        char expect[40];
        snprintf(expect, sizeof expect, "<title>layer %lu: ", id);
        assert_int_equal(strncmp(tip, expect, strlen(expect)), 0);
        char *tip_title_end = strstr(tip, "</title></rect>");
        assert_non_null(tip_title_end);
        char *mark = tip_title_end + strlen("</title></rect>");
        *tip_title_end = '\0';
        /* The owner as the tooltip states it. */
        const char *rank = strstr(tip, "KV on split rank ");
        if (rank)
            c->owner = (int32_t)strtol(rank + 17, NULL, 10);
        else if (strstr(tip, "KV on every rank") || strstr(tip, "KV and state on every rank"))
            c->owner = KVSHARD_OWNER_ALL;
        else
            c->owner = OWNER_NOT_KV;
        /* The mark drawn over the cell, if one follows. */
        c->mark[0] = '\0';
        if (strncmp(mark, "<text ", 6) == 0) {
            const char *open = strchr(mark, '>');
            const char *close = strstr(mark, "</text>");
            assert_true(open && close && close > open && (size_t)(close - open) < sizeof c->mark);
            memcpy(c->mark, open + 1, (size_t)(close - open - 1));
            c->mark[close - open - 1] = '\0';
        }
        n++;
        p = line_end;
    }
    assert_int_equal(count_of(doc, "class=\"layer "), n);
    return n;
}

/* ---- the seed example ---------------------------------------------------- */

typedef struct seed {
    kvshard_deployment *dep;
    kvshard_plan *plan;
    kvshard_comparison *cmp;
} seed;

static seed load_seed(void)
{
    seed s = {NULL, NULL, NULL};
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&s.dep, path, NULL, &err), &err);
    free(path);
    tu_assert_ok(kvshard_deployment_plan(&s.plan, s.dep, &err), &err);
    tu_assert_ok(kvshard_deployment_compare(&s.cmp, s.dep, &err), &err);
    return s;
}

static void free_seed(seed *s)
{
    kvshard_comparison_free(s->cmp);
    kvshard_plan_free(s->plan);
    kvshard_deployment_free(s->dep);
}

/* Qwen3.5-35B-A3B, TP 4, split 2, ordinal rule: layers 3, 7, ..., 39 are
 * full attention and alternate between split ranks 0 and 1; the other 30
 * are linear attention, stored on every rank. */
static void assert_seed_cells(const char *doc)
{
    static const uint32_t rank0[] = {3, 11, 19, 27, 35};
    static const uint32_t rank1[] = {7, 15, 23, 31, 39};
    cell cells[64];
    assert_int_equal(read_cells(doc, cells, 64), 40);
    int32_t expect[40];
    for (int i = 0; i < 40; i++)
        expect[i] = OWNER_NOT_KV;
    for (int k = 0; k < 5; k++) {
        expect[rank0[k]] = 0;
        expect[rank1[k]] = 1;
    }
    size_t linear = 0;
    for (int i = 0; i < 40; i++) {
        assert_int_equal(cells[i].owner, expect[i]);
        if (expect[i] == OWNER_NOT_KV) {
            assert_int_equal(cells[i].kind, 'L');
            assert_string_equal(cells[i].mark, "L");
            linear++;
        } else {
            assert_int_equal(cells[i].kind, 'F');
            /* The owner is written in the cell, not only coloured. */
            assert_string_equal(cells[i].mark, expect[i] ? "F1" : "F0");
        }
    }
    assert_int_equal(linear, 30);
}

static void test_seed_svg(void **state)
{
    (void)state;
    seed s = load_seed();
    text svg = svg_of(s.plan);
    assert_int_equal(strncmp(svg.data, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg ", 44), 0);
    assert_seed_cells(svg.data);
    assert_well_formed(&svg, "SVG");
    /* The legend names both split ranks and their TP ranks (0, 2 and 1, 3). */
    assert_non_null(strstr(svg.data, "split rank 0: 5 KV layers; TP ranks 0, 2"));
    assert_non_null(strstr(svg.data, "split rank 1: 5 KV layers; TP ranks 1, 3"));
    free(svg.data);
    free_seed(&s);
}

static void test_seed_html(void **state)
{
    (void)state;
    seed s = load_seed();
    text html = html_of(s.plan, s.cmp);
    assert_int_equal(strncmp(html.data, "<!DOCTYPE html>\n<html ", 22), 0);
    assert_seed_cells(html.data);
    assert_well_formed(&html, "HTML");
    const char *d = html.data;
    /* Nothing runs and nothing is fetched. */
    assert_null(strstr(d, "<script"));
    assert_null(strstr(d, "src="));
    assert_null(strstr(d, "href="));
    assert_null(strstr(d, "@import"));
    assert_non_null(strstr(d, "@media print"));
    /* Every rank's block: 16 tokens x (KV 5,120 + scratch 1,024 B per token)
     * = 81,920 + 16,384 = 98,304 B. State: 30 GDN layers x 536,576 B
     * (32/4 value heads x 128 x 128 x 4 B, plus the conv window
     * 3 x (2 x 16/4 x 128 + 32/4 x 128) x 2 B) = 16,097,280 B. The four TP
     * ranks have the same figures: one bar, "ranks 0-3 (4)", of the 20 GiB
     * budget = 128 x 16,097,280 = 2,060,451,840 B of state, 197,493 blocks
     * (below) x 81,920 = 16,178,626,560 B of KV and x 16,384 =
     * 3,235,725,312 B of scratch, leaving 21,474,836,480 - 2,060,451,840 -
     * 197,493 x 98,304 = 32,768 B. */
    assert_int_equal(count_of(d, "<g class=\"rank\">"), 1);
    assert_non_null(strstr(d, "<g class=\"rank\"><text x=\"8\" y=\"52\">ranks 0\xE2\x80\x93"
                              "3 (4)</text>"));
    assert_non_null(strstr(d, "ranks 0\xE2\x80\x93" "3 (4): state of max_seqs sequences, "
                              "2,060,451,840 B (1.92 GiB)</title>"));
    assert_non_null(strstr(d, "ranks 0\xE2\x80\x93" "3 (4): KV of the layers the rank stores, in "
                              "its blocks, 197,493 \xC3\x97 81,920 B = 16,178,626,560 B"));
    assert_non_null(strstr(d, "in its blocks, 197,493 \xC3\x97 16,384 B = 3,235,725,312 B"));
    assert_non_null(strstr(d, "ranks 0\xE2\x80\x93" "3 (4): unused, 32,768 B (32.00 KiB)</title>"));
    /* One scale: 20 GiB over 600 px, ticks every 5 GiB (0 to 20). */
    assert_int_equal(count_of(d, "<text class=\"tk\""), 5);
    assert_non_null(strstr(d, "<text class=\"tk\" x=\"796.0\" y=\"110\">20</text>"));
    /* Capacity: 20 GiB less 128 x 16,097,280 B of state, in 98,304 B
     * blocks: (21,474,836,480 - 2,060,451,840) / 98,304 = 197,493 blocks,
     * x 16 = 3,159,888 tokens; the unsplit plan (160 KiB blocks) holds
     * 19,414,384,640 / 163,840 = 118,496; 197,493 / 118,496 = 1.67. */
    assert_non_null(strstr(d, "21,474,836,480 B (20.00 GiB)"));
    assert_non_null(strstr(d, "2,060,451,840 B (1.92 GiB) for the state of max_seqs = 128"));
    assert_non_null(strstr(d, "<th scope=\"row\">blocks per rank</th><td>197,493</td>"));
    assert_non_null(strstr(d, "<th scope=\"row\">tokens per rank</th><td>3,159,888</td>"));
    assert_non_null(strstr(d, "163,840 B (160.00 KiB) per block, 118,496 blocks"));
    assert_non_null(strstr(d, "1.67\xC3\x97 the blocks of the unsplit plan"));
    /* No context length: the sequences at once at 4,096, 32,768, 131,072
     * and max_position_embeddings 262,144 tokens, of 197,493 blocks of 16
     * tokens: 197,493 / 256 = 771 (max_seqs 128 binds), / 2,048 = 96,
     * / 8,192 = 24, / 16,384 = 12. Balanced max_seqs: 20 GiB over one
     * sequence's blocks (256 x 98,304 = 25,165,824 B at 4,096 tokens) and
     * state (16,097,280 B) = 21,474,836,480 / 41,263,104 = 520; at 32,768
     * tokens / (201,326,592 + 16,097,280) = 98; then 26 and 13. */
    assert_non_null(strstr(d, "<tr><th scope=\"row\">at 4,096 tokens</th><td>128 sequences at "
                              "once; balanced max_seqs 520</td></tr>\n"
                              "<tr><th scope=\"row\">at 32,768 tokens</th><td>96 sequences at "
                              "once; balanced max_seqs 98</td></tr>\n"
                              "<tr><th scope=\"row\">at 131,072 tokens</th><td>24 sequences at "
                              "once; balanced max_seqs 26</td></tr>\n"
                              "<tr><th scope=\"row\">at 262,144 tokens</th><td>12 sequences at "
                              "once; balanced max_seqs 13 (the model's "
                              "max_position_embeddings)</td></tr>\n"));
    /* Comparison: 3 ordinal rules x split sizes 1, 2, 4 = 9 rows, each with
     * a bar; the recommended one is S=2 ordinal. */
    assert_int_equal(count_of(d, "class=\"bar\""), 9);
    assert_int_equal(count_of(d, "<tr class=\"rec\">"), 1);
    assert_non_null(strstr(d, "<tr class=\"rec\"><td>\xE2\x96\xB6</td><td class=\"n\">2</td>"
                              "<td>ordinal</td>"));
    assert_non_null(strstr(d, "--enable_layerwise_split=true --layerwise_split_size=2 "
                              "--ownership=ordinal"));
    /* Warnings and digests. */
    assert_non_null(strstr(d, "<h2>Warnings</h2>\n<p>None.</p>"));
    char digest[64];
    snprintf(digest, sizeof digest, "<code id=\"digest\">%016llx</code>",
             (unsigned long long)kvshard_plan_digest(s.plan));
    assert_non_null(strstr(d, digest));
    snprintf(digest, sizeof digest, "<code id=\"layout-digest\">%016llx</code>",
             (unsigned long long)kvshard_plan_layout_digest(s.plan));
    assert_non_null(strstr(d, digest));
    free(html.data);

    /* Without a comparison the section is left out and the page still holds. */
    html = html_of(s.plan, NULL);
    assert_null(strstr(html.data, "id=\"compare\""));
    assert_seed_cells(html.data);
    assert_well_formed(&html, "HTML");
    free(html.data);
    free_seed(&s);
}

/* At 32,768 tokens the comparison ranks rows by balanced max_seqs, and the
 * plan's warning reaches the page. */
static void test_seed_context(void **state)
{
    (void)state;
    seed s = load_seed();
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_set(s.dep, "context_length", "32768", NULL, &err), &err);
    kvshard_plan_free(s.plan);
    kvshard_comparison_free(s.cmp);
    tu_assert_ok(kvshard_deployment_plan(&s.plan, s.dep, &err), &err);
    tu_assert_ok(kvshard_deployment_compare(&s.cmp, s.dep, &err), &err);
    text html = html_of(s.plan, s.cmp);
    assert_non_null(strstr(html.data, "The bars show balanced max_seqs"));
    assert_non_null(strstr(html.data, "<li><strong>max_seqs_unreachable</strong>: "));
    /* 197,493 blocks x 16 tokens / 32,768 = 96 sequences at once. */
    assert_non_null(strstr(html.data, "<th scope=\"row\">sequences at once</th><td>96: "));
    /* With a context length, that one alone. */
    assert_null(strstr(html.data, "<th scope=\"row\">at 4,096 tokens</th>"));
    assert_well_formed(&html, "HTML");
    free(html.data);
    free_seed(&s);
}

/* ---- a Nemotron-H-sized model -------------------------------------------- */

/* 118 layers: 54 Mamba2 (M), 10 attention (*), 54 MLP (-). The attention
 * layers stand at 7, 18, 29, ..., 106 (7 + 11k); the others alternate M, -. */
static const char NEMOTRON_PATTERN[] = "M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M*"
                                       "-M-M-M-M-M-";

static void test_nemotron_h(void **state)
{
    (void)state;
    assert_int_equal(strlen(NEMOTRON_PATTERN), 118);
    assert_int_equal(count_of(NEMOTRON_PATTERN, "M"), 54);
    assert_int_equal(count_of(NEMOTRON_PATTERN, "*"), 10);
    assert_int_equal(count_of(NEMOTRON_PATTERN, "-"), 54);
    char config[1024];
    snprintf(config, sizeof config,
             "{\"model_type\": \"nemotron_h\", \"num_hidden_layers\": 118, \"hidden_size\": 8192,"
             " \"num_attention_heads\": 64, \"num_key_value_heads\": 8, \"head_dim\": 128,"
             " \"mamba_num_heads\": 256, \"mamba_head_dim\": 64, \"ssm_state_size\": 256,"
             " \"n_groups\": 8, \"conv_kernel\": 4, \"torch_dtype\": \"bfloat16\","
             " \"hybrid_override_pattern\": \"%s\"}",
             NEMOTRON_PATTERN);
    kvshard_model *model = tu_load_model_text(config);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    o.ownership = KVSHARD_OWNERSHIP_ORDINAL;
    kvshard_plan *plan = tu_plan(model, &o);
    /* Ordinal rule: the k-th attention layer goes to split rank k % 2. */
    static const uint32_t rank0[] = {7, 29, 51, 73, 95};
    static const uint32_t rank1[] = {18, 40, 62, 84, 106};
    int32_t expect[118];
    for (int i = 0; i < 118; i++)
        expect[i] = OWNER_NOT_KV;
    for (int k = 0; k < 5; k++) {
        expect[rank0[k]] = 0;
        expect[rank1[k]] = 1;
    }
    text svg = svg_of(plan);
    text html = html_of(plan, NULL);
    const char *docs[2] = {svg.data, html.data};
    for (int d = 0; d < 2; d++) {
        cell cells[128];
        assert_int_equal(read_cells(docs[d], cells, 128), 118);
        for (int i = 0; i < 118; i++) {
            assert_int_equal(cells[i].owner, expect[i]);
            switch (NEMOTRON_PATTERN[i]) {
            case '*':
                assert_int_equal(cells[i].kind, 'F');
                assert_string_equal(cells[i].mark, expect[i] ? "F1" : "F0");
                break;
            case 'M':
                assert_int_equal(cells[i].kind, 'L');
                assert_string_equal(cells[i].mark, "L");
                break;
            default: /* no cache: a dashed empty cell */
                assert_int_equal(cells[i].kind, 'N');
                assert_string_equal(cells[i].mark, "");
            }
        }
    }
    /* TP 8, split 2: split rank 0 is TP ranks 0, 2, 4, 6. */
    assert_non_null(strstr(svg.data, "split rank 0: 5 KV layers; TP ranks 0, 2, 4, 6"));
    assert_non_null(strstr(svg.data, "no cache (an MLP or MoE block)"));
    assert_well_formed(&svg, "SVG");
    assert_well_formed(&html, "HTML");
    free(svg.data);
    free(html.data);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* ---- escaping ------------------------------------------------------------ */

static void test_escaping(void **state)
{
    (void)state;
    kvshard_model_desc desc = KVSHARD_MODEL_DESC_INIT;
    desc.model_type = "evil<script>&\"'\x01x</script>";
    desc.num_layers = 4;
    desc.num_attention_heads = 8;
    desc.num_kv_heads = 8;
    desc.head_dim = 64;
    kvshard_model *model = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_create(&model, &desc, NULL, &err), &err);
    kvshard_plan *plan = tu_plan(model, NULL);
    text svg = svg_of(plan);
    text html = html_of(plan, NULL);
    const char *docs[2] = {svg.data, html.data};
    for (int d = 0; d < 2; d++) {
        const char *doc = docs[d];
        assert_null(strstr(doc, "<script"));
        assert_null(strstr(doc, "</script"));
        assert_null(strchr(doc, '\x01'));
        assert_non_null(strstr(doc, "evil&lt;script&gt;&amp;&quot;&#39;\\x01x&lt;/script&gt;"));
        /* No control character other than the newline anywhere. */
        for (const char *p = doc; *p; p++)
            assert_true((unsigned char)*p >= 0x20 || *p == '\n');
    }
    assert_well_formed(&svg, "SVG");
    assert_well_formed(&html, "HTML");
    free(svg.data);
    free(html.data);
    kvshard_plan_free(plan);
    kvshard_model_free(model);

    /* Valid UTF-8 that XML still forbids (U+FFFE, U+FFFF), a C1 control
     * (U+0085) and a surrogate's bytes: all shown as \xNN. */
    desc.model_type = "a\xEF\xBF\xBF"
                      "b\xEF\xBF\xBE"
                      "c\xC2\x85"
                      "d\xED\xA0\x80"
                      "e";
    tu_assert_ok(kvshard_model_create(&model, &desc, NULL, &err), &err);
    plan = tu_plan(model, NULL);
    svg = svg_of(plan);
    html = html_of(plan, NULL);
    const char *shown = "a\\xEF\\xBF\\xBFb\\xEF\\xBF\\xBEc\\xC2\\x85d\\xED\\xA0\\x80e";
    assert_non_null(strstr(svg.data, shown));
    assert_non_null(strstr(html.data, shown));
    assert_well_formed(&svg, "SVG");
    assert_well_formed(&html, "HTML");
    free(svg.data);
    free(html.data);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* ---- a failing writer ---------------------------------------------------- */

typedef struct limited {
    size_t limit; /* bytes accepted before the writer fails */
    size_t written;
    bool failed;
    int calls_after; /* calls made after the failure: must stay 0 */
} limited;

static int limited_write(void *user, const char *data, size_t len)
{
    (void)data;
    limited *w = user;
    if (w->failed) {
        w->calls_after++;
        return -1;
    }
    if (w->written + len > w->limit) {
        w->failed = true;
        return -1;
    }
    w->written += len;
    return 0;
}

static void test_failing_writer(void **state)
{
    (void)state;
    seed s = load_seed();
    /* The seed report is about 22 kB and the writer buffers 16 KiB: these
     * limits fail the first write, and the second. */
    const size_t limits[] = {0, 1, 100, 16383, 16384, 16385, 20000};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        limited w = {limits[i], 0, false, 0};
        assert_int_equal(kvshard_report_write_html(s.plan, s.cmp, NULL, limited_write, &w),
                         KVSHARD_EWRITE);
        assert_true(w.failed);
        assert_int_equal(w.calls_after, 0);
        limited v = {limits[i] < 8000 ? limits[i] : 4000, 0, false, 0};
        assert_int_equal(kvshard_plan_write_svg(s.plan, limited_write, &v), KVSHARD_EWRITE);
        assert_true(v.failed);
        assert_int_equal(v.calls_after, 0);
    }
    /* A writer with room enough succeeds. */
    limited w = {SIZE_MAX, 0, false, 0};
    assert_int_equal(kvshard_report_write_html(s.plan, s.cmp, NULL, limited_write, &w), KVSHARD_OK);
    assert_false(w.failed);
    /* Bad arguments. */
    assert_int_equal(kvshard_report_write_html(NULL, s.cmp, NULL, limited_write, &w),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_report_write_html(s.plan, s.cmp, NULL, NULL, &w), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_svg(NULL, limited_write, &w), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_svg(s.plan, NULL, &w), KVSHARD_EINVAL);
    free_seed(&s);
}

/* ---- colours ------------------------------------------------------------- */

static double channel(unsigned v)
{
    double c = v / 255.0;
    return c <= 0.03928 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4);
}

/* WCAG relative luminance of "#rrggbb" or "#rgb". */
static double luminance(const char *hex)
{
    unsigned r, g, b;
    size_t digits = strspn(hex + 1, "0123456789abcdefABCDEF");
    if (digits == 6) {
        assert_int_equal(sscanf(hex, "#%2x%2x%2x", &r, &g, &b), 3);
    } else {
        assert_int_equal(digits, 3);
        assert_int_equal(sscanf(hex, "#%1x%1x%1x", &r, &g, &b), 3);
        r *= 17;
        g *= 17;
        b *= 17;
    }
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

/* Every cell fill the map's CSS declares, against the cell text (black):
 * WCAG AA asks 4.5:1 for text. */
static void test_cell_contrast(void **state)
{
    (void)state;
    seed s = load_seed();
    text svg = svg_of(s.plan);
    assert_non_null(
        strstr(svg.data, ".kvmap text{font-family:sans-serif;font-size:12px;fill:#000}"));
    const char *style_end = strstr(svg.data, "</style>");
    assert_non_null(style_end);
    static const char *const classes[] = {".o0", ".o1", ".o2", ".o3", ".o4", ".o5",
                                          ".o6", ".o7", ".oA", ".kL", ".kW", ".kN"};
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        char rule[32];
        snprintf(rule, sizeof rule, ".kvmap %s{fill:", classes[i]);
        const char *at = strstr(svg.data, rule);
        assert_true(at && at < style_end);
        double fill = luminance(at + strlen(rule));
        double ratio = (fill + 0.05) / (0.0 + 0.05);
        if (ratio < 4.5)
            print_error("%s has contrast %.2f against black\n", classes[i], ratio);
        assert_true(ratio >= 4.5);
    }
    /* One colour per split rank, and KVSHARD__OWNER_COLOURS of them. */
    assert_int_equal(KVSHARD__OWNER_COLOURS, 8);
    free(svg.data);
    free_seed(&s);
}

/* ---- size ---------------------------------------------------------------- */

/* A GDN model with `layers` layers, every 4th full attention. */
static kvshard_plan *interval_plan(uint32_t layers, kvshard_model **model)
{
    char config[640];
    snprintf(config, sizeof config,
             "model_type: big_hybrid\nnum_hidden_layers: %u\nfull_attention_interval: 4\n"
             "hidden_size: 2048\nnum_attention_heads: 16\nnum_key_value_heads: 2\n"
             "head_dim: 256\nlinear_num_key_heads: 16\nlinear_num_value_heads: 32\n"
             "linear_key_head_dim: 128\nlinear_value_head_dim: 128\n"
             "linear_conv_kernel_dim: 4\n",
             layers);
    *model = tu_load_model_text(config);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    return tu_plan(*model, &o);
}

/* The stated bound: at most KVSHARD__SVG_CELL_BYTES (256) bytes per layer
 * beyond a fixed 16 KiB for the SVG (64 KiB for the page, whose other
 * sections do not grow with the layers). The longest cell there can be, a
 * hybrid layer 4,194,303 owned by split rank 65,535, takes 208 bytes. */
#define SVG_FIXED 16384u
#define HTML_FIXED 65536u

static void test_size_linear(void **state)
{
    (void)state;
    const uint32_t sizes[] = {10000, 100000};
    size_t svg_len[2];
    for (int k = 0; k < 2; k++) {
        uint32_t L = sizes[k];
        kvshard_model *model;
        kvshard_plan *plan = interval_plan(L, &model);
        text svg = svg_of(plan);
        text html = html_of(plan, NULL);
        svg_len[k] = svg.len;
        assert_true(svg.len <= SVG_FIXED + (size_t)KVSHARD__SVG_CELL_BYTES * L);
        assert_true(html.len <= HTML_FIXED + (size_t)KVSHARD__SVG_CELL_BYTES * L);
        assert_int_equal(count_of(svg.data, "class=\"layer "), L);
        /* The page folds the map: layers 4k..4k+7 repeat "L L L F0 L L L F1",
         * one run of 8 cells over every layer. */
        assert_int_equal(count_of(html.data, "<g class=\"run\""), 1);
        assert_int_equal(count_of(html.data, "class=\"layer "), 8);
        char span[64];
        snprintf(span, sizeof span, ">0\xE2\x80\x93%u</text>", L - 1);
        assert_non_null(strstr(html.data, span));
        snprintf(span, sizeof span, "\xC3\x97%s</text></g>", L == 10000 ? "1,250" : "12,500");
        assert_non_null(strstr(html.data, span));
        if (L == 100000) {
            cell *cells = calloc(L, sizeof *cells);
            assert_non_null(cells);
            assert_int_equal(read_cells(svg.data, cells, L), L);
            /* Layer 4k+3 is the k-th full-attention layer: split rank k % 2. */
            for (uint32_t i = 0; i < L; i++) {
                int32_t want = i % 4 == 3 ? (int32_t)((i / 4) % 2) : OWNER_NOT_KV;
                assert_int_equal(cells[i].owner, want);
            }
            assert_int_equal(cells[99999].owner, 1); /* k = 24,999 */
            free(cells);
            assert_well_formed(&svg, "SVG");
            printf("100,000 layers: SVG %zu bytes, HTML %zu bytes\n", svg.len, html.len);
        }
        free(svg.data);
        free(html.data);
        kvshard_plan_free(plan);
        kvshard_model_free(model);
    }
    /* Linear growth: the 90,000 extra layers cost at most the cell bound each. */
    assert_true(svg_len[1] > svg_len[0]);
    assert_true((svg_len[1] - svg_len[0]) / 90000 <= KVSHARD__SVG_CELL_BYTES);
}

/* ---- distinct ranks -------------------------------------------------------- */

/* DeepSeek-V3.2 on TP 8, split 8: 61 MLA layers, ranks 0-4 own 8 and ranks
 * 5-7 own 7. One layer keeps 788 B per token (its latent, rope and index
 * key), 12,608 B in a block of 16 tokens: 8 layers 100,864 B, 7 layers
 * 88,256 B, and every rank holds one scratch layer, 12,608 B. The 24 GiB
 * budget (no state) holds 25,769,803,776 / 113,472 = 227,102 blocks on
 * ranks 0-4 (85,632 B left), which every rank allocates; ranks 5-7 fit
 * 25,769,803,776 / 100,864 = 255,490 and leave 25,769,803,776 - 227,102 x
 * 100,864 = 2,863,387,648 B (11.1%) unused. */
static void test_distinct_ranks(void **state)
{
    (void)state;
    char *path = tu_example_path("deepseek_v3_2_tp8.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_plan *plan = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    tu_assert_ok(kvshard_deployment_plan(&plan, dep, &err), &err);
    kvshard__plan_view v = kvshard_plan__view_of(plan);
    kvshard_report__bar bars[8];
    assert_int_equal(kvshard_report__bars(bars, 8, &v), 2);
    assert_int_equal(bars[0].rank, 0);
    assert_int_equal(bars[0].count, 5);
    assert_int_equal(bars[1].rank, 5);
    assert_int_equal(bars[1].count, 3);
    for (int b = 0; b < 2; b++) {
        assert_int_equal(bars[b].budget, 25769803776ull);
        assert_int_equal(bars[b].blocks, 227102);
        assert_int_equal(bars[b].part[KVSHARD_REPORT__STATE], 0);
        assert_int_equal(bars[b].part[KVSHARD_REPORT__SCRATCH], 227102ull * 12608);
        uint64_t sum = 0;
        for (int k = 0; k < KVSHARD_REPORT__PARTS; k++)
            sum += bars[b].part[k];
        assert_int_equal(sum, bars[b].budget);
    }
    assert_int_equal(bars[0].part[KVSHARD_REPORT__KV], 227102ull * 100864);
    assert_int_equal(bars[0].part[KVSHARD_REPORT__UNUSED], 85632);
    assert_int_equal(bars[1].part[KVSHARD_REPORT__KV], 227102ull * 88256);
    assert_int_equal(bars[1].part[KVSHARD_REPORT__UNUSED], 2863387648ull);
    assert_true(bars[1].has_fits);
    assert_int_equal(bars[1].fits, 255490);
    char label[96];
    kvshard_report__members(label, sizeof label, &v, 5);
    assert_string_equal(label, "ranks 5\xE2\x80\x93" "7 (3)");
    text html = html_of(plan, NULL);
    assert_int_equal(count_of(html.data, "<g class=\"rank\">"), 2);
    assert_non_null(strstr(html.data, "unused 2.67 GiB (11.1%): fits 255,490 blocks, allocates "
                                      "227,102</text>"));
    /* The title is the model file's name, not its type. */
    assert_non_null(strstr(html.data, "<title>deepseek_v3_2 \xE2\x80\x94 kvshard report</title>"));
    assert_well_formed(&html, "HTML");
    free(html.data);
    kvshard_plan_free(plan);
    kvshard_deployment_free(dep);
}

/* Two Nemotron-H examples of one model_type get different titles. */
static void test_titles(void **state)
{
    (void)state;
    static const char *const examples[] = {"nemotron_h_8b_tp4.yaml", "nemotron_3_super_tp8.yaml"};
    static const char *const titles[] = {
        "<h1>nemotron_h_8b \xE2\x80\x94 kvshard report</h1>",
        "<h1>nemotron_3_super_120b_a12b \xE2\x80\x94 kvshard report</h1>"};
    for (int i = 0; i < 2; i++) {
        char *path = tu_example_path(examples[i]);
        kvshard_deployment *dep = NULL;
        kvshard_plan *plan = NULL;
        kvshard_error err;
        tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
        free(path);
        tu_assert_ok(kvshard_deployment_plan(&plan, dep, &err), &err);
        text html = html_of(plan, NULL);
        assert_non_null(strstr(html.data, titles[i]));
        assert_non_null(strstr(html.data, "model_type <code>nemotron_h</code>"));
        free(html.data);
        kvshard_plan_free(plan);
        kvshard_deployment_free(dep);
    }
}

/* ---- concurrency lengths ---------------------------------------------------- */

static void test_context_lengths(void **state)
{
    (void)state;
    kvshard__model_info m;
    memset(&m, 0, sizeof m);
    uint32_t l[4];
    /* No max_position_embeddings: the three lengths. */
    assert_int_equal(kvshard_report__context_lengths(l, &m), 3);
    assert_int_equal(l[0], 4096);
    assert_int_equal(l[1], 32768);
    assert_int_equal(l[2], 131072);
    /* 40,960: 4,096 and 32,768 below it, then it; 131,072 is above it. */
    m.max_position_embeddings = 40960;
    assert_int_equal(kvshard_report__context_lengths(l, &m), 3);
    assert_int_equal(l[2], 40960);
    /* 32,768 is one of the lengths: not twice. */
    m.max_position_embeddings = 32768;
    assert_int_equal(kvshard_report__context_lengths(l, &m), 2);
    assert_int_equal(l[0], 4096);
    assert_int_equal(l[1], 32768);
    /* Shorter than all of them. */
    m.max_position_embeddings = 2048;
    assert_int_equal(kvshard_report__context_lengths(l, &m), 1);
    assert_int_equal(l[0], 2048);
    m.max_position_embeddings = 1048576;
    assert_int_equal(kvshard_report__context_lengths(l, &m), 4);
    assert_int_equal(l[3], 1048576);
}

/* ---- long maps in runs ---------------------------------------------------- */

static text text_of(const kvshard_plan *plan)
{
    text t = {NULL, 0, 0};
    assert_int_equal(kvshard_plan_write_text(plan, collect, &t), KVSHARD_OK);
    assert_non_null(t.data);
    return t;
}

/* 1,003 layers of the interval model on 2 stages of TP 4, split 2. The vLLM
 * rule cuts 502 | 501. Layer 4k+3 is full attention, the others linear; the
 * ordinal rule counts KV layers per stage, so stage 0 repeats
 * "L L L F0 L L L F1" from layer 0 (62 times: layers 0-495) and stage 1,
 * whose first KV layer is 503, repeats "L F0 L L L F1 L L" from 502 (62
 * times: 502-997). What is left of each stage: 496-498 linear (a run of
 * 3), 499 (the 125th KV layer of stage 0: F0) alone, 500-501 linear, then
 * 998 L with 999 F0 (no repeat in them) and 1000-1002 linear: 7 runs. */
static void test_runs(void **state)
{
    (void)state;
    char config[640];
    snprintf(config, sizeof config,
             "model_type: big_hybrid\nnum_hidden_layers: 1003\nfull_attention_interval: 4\n"
             "hidden_size: 2048\nnum_attention_heads: 16\nnum_key_value_heads: 2\n"
             "head_dim: 256\nlinear_num_key_heads: 16\nlinear_num_value_heads: 32\n"
             "linear_key_head_dim: 128\nlinear_value_head_dim: 128\n"
             "linear_conv_kernel_dim: 4\n");
    kvshard_model *model = tu_load_model_text(config);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 8;
    o.pp_size = 2;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    kvshard_plan *plan = tu_plan(model, &o);
    text t = text_of(plan);
    static const char *const lines[] = {
        "          0\xE2\x80\x93" "495 \xC3\x97" "62       L  L  L  F0 L  L  L  F1\n",
        "        496\xE2\x80\x93" "498 \xC3\x97" "3        L\n",
        "            499 \xC3\x97" "1        F0\n",
        "        500\xE2\x80\x93" "501 \xC3\x97" "2        L\n",
        "        502\xE2\x80\x93" "997 \xC3\x97" "62       L  F0 L  L  L  F1 L  L\n",
        "        998\xE2\x80\x93" "999 \xC3\x97" "1        L  F0\n",
        "      1000\xE2\x80\x93" "1002 \xC3\x97" "3        L\n",
    };
    const char *at = strstr(t.data, "in runs: ");
    assert_non_null(at);
    at = strchr(at, '\n') + 1;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        if (strncmp(at, lines[i], strlen(lines[i])) != 0)
            print_error("run %zu: expected\n%sgot\n%.80s\n", i, lines[i], at);
        assert_int_equal(strncmp(at, lines[i], strlen(lines[i])), 0);
        at += strlen(lines[i]);
    }
    assert_int_equal(*at, '\n'); /* the blank line before the split ranks */
    /* The page folds the same way: 7 rows, 8 + 1 + 1 + 1 + 8 + 2 + 1 cells,
     * and a stage bar before the row of layer 502. */
    text html = html_of(plan, NULL);
    assert_int_equal(count_of(html.data, "<g class=\"run\""), 7);
    assert_int_equal(count_of(html.data, "class=\"layer "), 22);
    assert_non_null(strstr(html.data, "<title>stage 1 starts at layer 502</title>"));
    assert_non_null(strstr(html.data, "<title>layers 503, 511, \xE2\x80\xA6 991 (62 layers, one "
                                      "in 8): full attention, KV on split rank 0, stage 1"));
    assert_non_null(strstr(html.data, "<title>layer 999: full attention, KV on split rank 0, "
                                      "stage 1</title>"));
    assert_well_formed(&html, "HTML");
    free(html.data);
    free(t.data);
    kvshard_plan_free(plan);
    kvshard_model_free(model);

    /* 200 layers keep one line per ten layers; 201 fold. */
    for (uint32_t L = 200; L <= 201; L++) {
        kvshard_plan *p = interval_plan(L, &model);
        t = text_of(p);
        assert_int_equal(strstr(t.data, "in runs: ") != NULL, L == 201);
        assert_int_equal(strstr(t.data, "\n   190 | L  F1 L  L  L  F0") != NULL, L == 200);
        free(t.data);
        kvshard_plan_free(p);
        kvshard_model_free(model);
    }
}

/* The made-by lines come from kvshard_report_options: the input file and
 * the command, the program by its base name; without options, neither. */
static void test_report_options(void **state)
{
    (void)state;
    seed s = load_seed();
    const char *argv[] = {"/usr/local/bin/kvshard", "report", "seed.yaml"};
    kvshard_report_options ro = KVSHARD_REPORT_OPTIONS_INIT;
    ro.source = "seed.yaml";
    ro.argc = 3;
    ro.argv = argv;
    text t = {NULL, 0, 0};
    assert_int_equal(kvshard_report_write_html(s.plan, NULL, &ro, collect, &t), KVSHARD_OK);
    assert_non_null(strstr(t.data, "input <code>seed.yaml</code>"));
    assert_non_null(strstr(t.data, "made by <code>kvshard report seed.yaml</code>"));
    text bare = html_of(s.plan, NULL);
    assert_null(strstr(bare.data, "made by"));
    assert_null(strstr(bare.data, "input <code>"));
    ro.size = sizeof ro + 1;
    assert_int_equal(kvshard_report_write_html(s.plan, NULL, &ro, collect, &t), KVSHARD_EINVAL);
    free(t.data);
    free(bare.data);
    free_seed(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_svg),      cmocka_unit_test(test_seed_html),
        cmocka_unit_test(test_seed_context),  cmocka_unit_test(test_nemotron_h),
        cmocka_unit_test(test_escaping),      cmocka_unit_test(test_failing_writer),
        cmocka_unit_test(test_cell_contrast), cmocka_unit_test(test_size_linear),
        cmocka_unit_test(test_runs),          cmocka_unit_test(test_context_lengths),
        cmocka_unit_test(test_distinct_ranks),  cmocka_unit_test(test_titles),
        cmocka_unit_test(test_report_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
