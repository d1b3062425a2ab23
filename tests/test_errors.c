/* Error reporting: golden invalid inputs (tests/data/invalid), outputs left
 * alone on failure, NULL err, status names (allocation failure: test_alloc). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "test_util.h"

#include "base/diag.h"
#include "kvshard/explore.h"
#include "kvshard/output.h"

#include "base/error.h"
#include "deploy/flags.h"

#include <unistd.h>

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INVALID_DIR KVSHARD_TEST_DATA "/invalid"
#define MAX_CASES 512
#define SENTINEL_DEP ((kvshard_deployment *)(uintptr_t)0xdead0001u)
#define SENTINEL_PLAN ((kvshard_plan *)(uintptr_t)0xdead0002u)

/* ---- status codes by name ------------------------------------------------- */

static const struct {
    const char *name;
    int code;
} code_names[] = {
    {"KVSHARD_OK", KVSHARD_OK},
    {"KVSHARD_ENOMEM", KVSHARD_ENOMEM},
    {"KVSHARD_EINVAL", KVSHARD_EINVAL},
    {"KVSHARD_EIO", KVSHARD_EIO},
    {"KVSHARD_ESYNTAX", KVSHARD_ESYNTAX},
    {"KVSHARD_EUTF8", KVSHARD_EUTF8},
    {"KVSHARD_ELIMIT", KVSHARD_ELIMIT},
    {"KVSHARD_EDUPKEY", KVSHARD_EDUPKEY},
    {"KVSHARD_EUNKNOWNKEY", KVSHARD_EUNKNOWNKEY},
    {"KVSHARD_ETYPE", KVSHARD_ETYPE},
    {"KVSHARD_ERANGE", KVSHARD_ERANGE},
    {"KVSHARD_EMISSING", KVSHARD_EMISSING},
    {"KVSHARD_ELAYERTYPE", KVSHARD_ELAYERTYPE},
    {"KVSHARD_ELAYERCOUNT", KVSHARD_ELAYERCOUNT},
    {"KVSHARD_ELAYERLIST", KVSHARD_ELAYERLIST},
    {"KVSHARD_EPARALLEL", KVSHARD_EPARALLEL},
    {"KVSHARD_EWORLD", KVSHARD_EWORLD},
    {"KVSHARD_ESPLIT", KVSHARD_ESPLIT},
    {"KVSHARD_ESPLITCP", KVSHARD_ESPLITCP},
    {"KVSHARD_EKVHEADS", KVSHARD_EKVHEADS},
    {"KVSHARD_ELINEARHEADS", KVSHARD_ELINEARHEADS},
    {"KVSHARD_ERANK", KVSHARD_ERANK},
    {"KVSHARD_ELAYER", KVSHARD_ELAYER},
    {"KVSHARD_ENOBLOCK", KVSHARD_ENOBLOCK},
    {"KVSHARD_EOVERFLOW", KVSHARD_EOVERFLOW},
    {"KVSHARD_EWRITE", KVSHARD_EWRITE},
    {"KVSHARD_EPROFILE", KVSHARD_EPROFILE},
    {"KVSHARD_EUNSUPPORTED", KVSHARD_EUNSUPPORTED},
    {"KVSHARD_EUNMODELED", KVSHARD_EUNMODELED},
    {"KVSHARD_EPPLAYERS", KVSHARD_EPPLAYERS},
    {"KVSHARD_EPARTITION", KVSHARD_EPARTITION},
    {"KVSHARD_EPPSOURCE", KVSHARD_EPPSOURCE},
    {"KVSHARD_ESTAGE", KVSHARD_ESTAGE},
    {"KVSHARD_EGLOBALRANK", KVSHARD_EGLOBALRANK},
    {"KVSHARD_EWEIGHTS", KVSHARD_EWEIGHTS},
    {"KVSHARD_EDOESNOTFIT", KVSHARD_EDOESNOTFIT},
    {"KVSHARD_EFITLIMITS", KVSHARD_EFITLIMITS},
    {"KVSHARD_EQHEADS", KVSHARD_EQHEADS},
    {"KVSHARD_ECOMM", KVSHARD_ECOMM},
};
#define CODE_COUNT (sizeof code_names / sizeof code_names[0])

static bool code_from_name(int *out, const char *name)
{
    for (size_t i = 0; i < CODE_COUNT; i++) {
        if (strcmp(code_names[i].name, name) == 0) {
            *out = code_names[i].code;
            return true;
        }
    }
    return false;
}

static const char *code_name(int code)
{
    for (size_t i = 0; i < CODE_COUNT; i++) {
        if (code_names[i].code == code)
            return code_names[i].name;
    }
    return "(unknown)";
}

/* Every code a file (deployment or model config) can give. */
static const int file_codes[] = {
    KVSHARD_ESYNTAX,      KVSHARD_EUTF8,        KVSHARD_ELIMIT,     KVSHARD_EDUPKEY,
    KVSHARD_EUNKNOWNKEY,  KVSHARD_ETYPE,        KVSHARD_ERANGE,     KVSHARD_EMISSING,
    KVSHARD_ELAYERTYPE,   KVSHARD_ELAYERCOUNT,  KVSHARD_ELAYERLIST, KVSHARD_EIO,
    KVSHARD_EWORLD,       KVSHARD_ESPLIT,       KVSHARD_ESPLITCP,   KVSHARD_EKVHEADS,
    KVSHARD_ELINEARHEADS, KVSHARD_ENOBLOCK,     KVSHARD_EOVERFLOW,  KVSHARD_EPARALLEL,
    KVSHARD_EPROFILE,     KVSHARD_EUNSUPPORTED, KVSHARD_EUNMODELED, KVSHARD_EPPLAYERS,
    KVSHARD_EPARTITION,   KVSHARD_EPPSOURCE,    KVSHARD_EWEIGHTS,   KVSHARD_EDOESNOTFIT,
};

/* ---- EXPECTED ---------------------------------------------------------------- */

typedef struct golden {
    char name[128];
    int code;
    int line;
    int column;
    char source[200]; /* required suffix of err.source; "" = invalid/NAME */
    bool has_offset;
    size_t offset;
    char message[256]; /* text the message must contain */
} golden;

static size_t read_expected(golden *cases, size_t cap)
{
    FILE *f = fopen(INVALID_DIR "/EXPECTED", "r");
    assert_non_null(f);
    char text[512];
    size_t n = 0;
    int lineno = 0;
    while (fgets(text, sizeof text, f)) {
        lineno++;
        char *p = text;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        assert_true(n < cap);
        golden *g = &cases[n];
        memset(g, 0, sizeof *g);
        char *bar = strstr(p, " | ");
        if (!bar) {
            print_error("EXPECTED:%d: no \" | MESSAGE\" in \"%s\"\n", lineno, p);
            fail();
        }
        *bar = '\0';
        snprintf(g->message, sizeof g->message, "%s", bar + 3);
        g->message[strcspn(g->message, "\n")] = '\0';
        char code[64];
        int used = 0;
        if (sscanf(p, "%127s %63s %d %d%n", g->name, code, &g->line, &g->column, &used) != 4 ||
            !code_from_name(&g->code, code)) {
            print_error("EXPECTED:%d: cannot read \"%s\"\n", lineno, p);
            fail();
        }
        p += used;
        char extra[200];
        int more = 0;
        while (sscanf(p, "%199s%n", extra, &more) == 1) {
            p += more;
            unsigned long long off;
            if (strncmp(extra, "source=", 7) == 0) {
                snprintf(g->source, sizeof g->source, "%s", extra + 7);
            } else if (sscanf(extra, "offset=%llu", &off) == 1) {
                g->has_offset = true;
                g->offset = (size_t)off;
            } else {
                print_error("EXPECTED:%d: unknown field \"%s\"\n", lineno, extra);
                fail();
            }
        }
        for (size_t i = 0; i < n; i++) {
            if (strcmp(cases[i].name, g->name) == 0) {
                print_error("EXPECTED:%d: %s listed twice\n", lineno, g->name);
                fail();
            }
        }
        n++;
    }
    fclose(f);
    return n;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static char *read_whole(const char *path, size_t *out_len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            cap *= 2;
            char *grown = realloc(buf, cap);
            assert_non_null(grown);
            buf = grown;
        }
    }
    fclose(f);
    *out_len = len;
    return buf;
}

/* The three public headers one after another, as one C string: every
 * exported function is declared in exactly one of them. */
static char *read_public_headers(void)
{
    static const char *const names[] = {"kvshard.h", "explore.h", "output.h"};
    size_t total = 0;
    char *all = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/../include/kvshard/%s", KVSHARD_EXAMPLES, names[i]);
        size_t len;
        char *text = read_whole(path, &len);
        char *grown = realloc(all, total + len + 1);
        assert_non_null(grown);
        all = grown;
        memcpy(all + total, text, len);
        total += len;
        all[total] = '\0';
        free(text);
    }
    return all;
}

/* Run one case; returns true when the error matches. `text` NULL: from the
 * file; otherwise through kvshard_deployment_load_string. */
static bool run_case(const golden *g, const char *path, const char *text, size_t len)
{
    kvshard_error err;
    kvshard_deployment *dep = SENTINEL_DEP;
    int rc = text ? kvshard_deployment_load_string(&dep, text, len, path, INVALID_DIR, NULL, &err)
                  : kvshard_deployment_load_file(&dep, path, NULL, &err);
    bool untouched = true;
    if (rc == KVSHARD_OK) {
        kvshard_plan *plan = SENTINEL_PLAN;
        rc = kvshard_deployment_plan(&plan, dep, &err);
        untouched = plan == SENTINEL_PLAN;
        if (rc == KVSHARD_OK && plan != SENTINEL_PLAN)
            kvshard_plan_free(plan);
        kvshard_deployment_free(dep);
    } else {
        untouched = dep == SENTINEL_DEP;
    }
    char want_source[300];
    if (g->source[0])
        snprintf(want_source, sizeof want_source, "%s", g->source);
    else
        snprintf(want_source, sizeof want_source, "invalid/%s", g->name);
    bool ok = rc == g->code && err.code == g->code && err.line == g->line &&
              err.column == g->column && ends_with(err.source, want_source) &&
              strstr(err.message, g->message) != NULL && untouched &&
              (!g->has_offset || err.offset == g->offset);
    if (!ok)
        print_error("%s (%s): expected %s at %d:%d in ...%s%s saying \"%s\"; got %s (err.code "
                    "%s) at %d:%d offset %zu in %s: %s%s\n",
                    g->name, text ? "string" : "file", code_name(g->code), g->line, g->column,
                    want_source, g->has_offset ? " (with offset)" : "", g->message, code_name(rc),
                    code_name(err.code), err.line, err.column, err.offset, err.source,
                    err.message, untouched ? "" : " [output was written]");
    return ok;
}

static void test_golden_invalid_inputs(void **state)
{
    (void)state;
    golden *cases = calloc(MAX_CASES, sizeof *cases);
    assert_non_null(cases);
    size_t n = read_expected(cases, MAX_CASES);
    assert_true(n >= 40);

    size_t failures = 0;
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", INVALID_DIR, cases[i].name);
        if (!run_case(&cases[i], path, NULL, 0))
            failures++;
        size_t len;
        char *text = read_whole(path, &len);
        if (!run_case(&cases[i], path, text, len))
            failures++;
        free(text);
    }
    if (failures)
        print_error("%zu golden checks failed\n", failures);
    assert_int_equal(failures, 0);

    /* Every code a file can give is covered. */
    for (size_t c = 0; c < sizeof file_codes / sizeof file_codes[0]; c++) {
        bool seen = false;
        for (size_t i = 0; i < n && !seen; i++)
            seen = cases[i].code == file_codes[c];
        if (!seen)
            print_error("no golden case for %s\n", code_name(file_codes[c]));
        assert_true(seen);
    }
    free(cases);
}

/* Each *.yaml in the directory has an EXPECTED line and each line a file. */
static void test_golden_cases_match_directory(void **state)
{
    (void)state;
    golden *cases = calloc(MAX_CASES, sizeof *cases);
    assert_non_null(cases);
    size_t n = read_expected(cases, MAX_CASES);
    bool found[MAX_CASES] = {false};
    DIR *dir = opendir(INVALID_DIR);
    assert_non_null(dir);
    struct dirent *entry;
    size_t files = 0;
    size_t orphans = 0;
    while ((entry = readdir(dir)) != NULL) {
        if (!ends_with(entry->d_name, ".yaml"))
            continue;
        files++;
        size_t i = 0;
        while (i < n && strcmp(cases[i].name, entry->d_name) != 0)
            i++;
        if (i == n) {
            print_error("%s has no line in EXPECTED\n", entry->d_name);
            orphans++;
        } else {
            found[i] = true;
        }
    }
    closedir(dir);
    for (size_t i = 0; i < n; i++) {
        if (!found[i]) {
            print_error("EXPECTED lists %s, which is not in %s\n", cases[i].name, INVALID_DIR);
            orphans++;
        }
    }
    assert_int_equal(orphans, 0);
    assert_int_equal(files, n);
    free(cases);
}

/* ---- outputs untouched on failure ------------------------------------------------ */

static kvshard_plan *example_plan(kvshard_model **out_model)
{
    kvshard_model *model = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    o.memory_per_rank = UINT64_C(20) << 30;
    o.max_seqs = 128;
    *out_model = model;
    return tu_plan(model, &o);
}

static int failing_writer(void *user, const char *data, size_t len)
{
    (void)data;
    (void)len;
    int *calls = user;
    (*calls)++;
    return 1;
}

static void test_outputs_untouched_on_failure(void **state)
{
    (void)state;
    kvshard_error err;

    kvshard_model *model = (kvshard_model *)(uintptr_t)0xdead0003u;
    const char *bad = "num_hidden_layers: [1]\n";
    assert_int_equal(kvshard_model_load_string(&model, bad, strlen(bad), NULL, NULL, &err),
                     KVSHARD_ETYPE);
    assert_ptr_equal(model, (kvshard_model *)(uintptr_t)0xdead0003u);
    assert_string_equal(err.source, "<string>");
    assert_int_equal(err.line, 1);
    assert_int_equal(err.column, 20);
    assert_int_equal(kvshard_model_load_file(&model, "/nonexistent/kvshard.json", NULL, &err),
                     KVSHARD_EIO);
    assert_ptr_equal(model, (kvshard_model *)(uintptr_t)0xdead0003u);

    kvshard_deployment *dep = SENTINEL_DEP;
    assert_int_equal(kvshard_deployment_load_string(&dep, "model: 1: 2\n", 12, NULL, NULL, NULL,
                                                    &err),
                     KVSHARD_ESYNTAX);
    assert_ptr_equal(dep, SENTINEL_DEP);

    kvshard_model *qwen;
    kvshard_plan *plan = example_plan(&qwen);

    /* plan_create: 2 KV heads against TP 3. */
    kvshard_plan *p = SENTINEL_PLAN;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 3;
    assert_int_equal(kvshard_plan_create(&p, qwen, &o, NULL, &err), KVSHARD_EKVHEADS);
    assert_ptr_equal(p, SENTINEL_PLAN);
    assert_true(ends_with(err.source, "qwen3_5_35b_a3b.json"));
    assert_true(err.line > 0);
    o.world_size = 0;
    assert_int_equal(kvshard_plan_create(&p, qwen, &o, NULL, &err), KVSHARD_EPARALLEL);
    assert_ptr_equal(p, SENTINEL_PLAN);
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    o.size = 42;
    assert_int_equal(kvshard_plan_create(&p, qwen, &o, NULL, &err), KVSHARD_EINVAL);
    assert_ptr_equal(p, SENTINEL_PLAN);

    /* comparison: no split size avoids the KV-head mismatch. */
    kvshard_comparison *cmp = (kvshard_comparison *)(uintptr_t)0xdead0004u;
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    o.world_size = 3;
    assert_int_equal(kvshard_comparison_create(&cmp, qwen, &o, NULL, NULL, &err), KVSHARD_EKVHEADS);
    assert_ptr_equal(cmp, (kvshard_comparison *)(uintptr_t)0xdead0004u);

    /* queries out of range */
    const uint32_t *layers = (const uint32_t *)(uintptr_t)0xdead0005u;
    size_t count = 777;
    assert_int_equal(kvshard_plan_rank_layers(&layers, &count, plan, 4), KVSHARD_ERANK);
    assert_ptr_equal(layers, (const uint32_t *)(uintptr_t)0xdead0005u);
    assert_int_equal(count, 777);

    int32_t owner = 12345;
    assert_int_equal(kvshard_plan_layer_owner(&owner, plan, 40), KVSHARD_ELAYER);
    assert_int_equal(owner, 12345);
    kvshard_layer_kind kind = (kvshard_layer_kind)99;
    assert_int_equal(kvshard_model_layer_kind(&kind, qwen, 40), KVSHARD_ELAYER);
    assert_int_equal(kind, 99);

    uint32_t split_rank = 555, split_group = 666;
    assert_int_equal(kvshard_plan_split_position(&split_rank, &split_group, plan, 4),
                     KVSHARD_ERANK);
    assert_int_equal(split_rank, 555);
    assert_int_equal(split_group, 666);

    kvshard_rank_memory mem = KVSHARD_RANK_MEMORY_INIT, mem_before = KVSHARD_RANK_MEMORY_INIT;
    memset(&mem, 0xAB, sizeof mem);
    memcpy(&mem_before, &mem, sizeof mem);
    assert_int_equal(kvshard_plan_rank_memory(&mem, plan, 4), KVSHARD_ERANK);
    assert_memory_equal(&mem, &mem_before, sizeof mem);

    uint64_t blocks = 424242;
    assert_int_equal(tu_num_blocks(&blocks, plan, 1024, &err), KVSHARD_ENOBLOCK);
    assert_int_equal(blocks, 424242);
    assert_int_equal(err.code, KVSHARD_ENOBLOCK);

    kvshard_warning_code wcode = (kvshard_warning_code)77;
    const char *message = "untouched";
    assert_int_equal(kvshard_plan_warning(&wcode, &message, plan, 1000), KVSHARD_EINVAL);
    assert_int_equal(wcode, 77);
    assert_string_equal(message, "untouched");

    /* options_set leaves the options as they were */
    kvshard_options before = KVSHARD_OPTIONS_INIT;
    before.world_size = 8;
    kvshard_options after = before;
    assert_int_equal(kvshard_options_set(&after, "world_size", "eight", NULL, &err), KVSHARD_ETYPE);
    assert_int_equal(kvshard_options_set(&after, "memory_per_rank", "-1GiB", NULL, &err),
                     KVSHARD_ERANGE);
    assert_int_equal(kvshard_options_set(&after, "enable_layerwise_split", "2", NULL, &err),
                     KVSHARD_ETYPE);
    assert_int_equal(after.world_size, before.world_size);
    assert_true(after.memory_per_rank == before.memory_per_rank);
    assert_int_equal(after.enable_layerwise_split, before.enable_layerwise_split);

    /* a writer that fails */
    int calls = 0;
    assert_int_equal(kvshard_plan_write_json(plan, failing_writer, &calls), KVSHARD_EWRITE);
    assert_true(calls >= 1);

    kvshard_plan_free(plan);
    kvshard_model_free(qwen);
}

/* ---- NULL err ---------------------------------------------------------------------- */

static void test_null_err_accepted(void **state)
{
    (void)state;
    kvshard_model *model = NULL;
    const char *bad = "num_hidden_layers: 4\nnum_hidden_layers: 5\n";
    assert_int_equal(kvshard_model_load_string(&model, bad, strlen(bad), NULL, NULL, NULL),
                     KVSHARD_EDUPKEY);
    assert_null(model);
    assert_int_equal(kvshard_model_load_file(&model, "/nonexistent/m.json", NULL, NULL),
                     KVSHARD_EIO);
    assert_int_equal(kvshard_model_load_string(NULL, bad, 1, NULL, NULL, NULL), KVSHARD_EINVAL);

    kvshard_deployment *dep = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/limit_alias_bomb.yaml", INVALID_DIR);
    assert_int_equal(kvshard_deployment_load_file(&dep, path, NULL, NULL), KVSHARD_ELIMIT);
    snprintf(path, sizeof path, "%s/plan_split_not_divisible.yaml", INVALID_DIR);
    assert_int_equal(kvshard_deployment_load_file(&dep, path, NULL, NULL), KVSHARD_OK);
    kvshard_plan *plan = NULL;
    assert_int_equal(kvshard_deployment_plan(&plan, dep, NULL), KVSHARD_ESPLIT);
    assert_null(plan);
    assert_int_equal(kvshard_deployment_set(dep, "nope", "1", NULL, NULL), KVSHARD_EUNKNOWNKEY);
    kvshard_deployment_free(dep);

    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_options_set(&o, "world_size", "-3", NULL, NULL), KVSHARD_EPARALLEL);

    kvshard_model *qwen;
    kvshard_plan *good = example_plan(&qwen);
    uint64_t blocks;
    assert_int_equal(tu_num_blocks(&blocks, good, 1, NULL), KVSHARD_ENOBLOCK);
    o.world_size = 4;
    o.dp_size = 3;
    assert_int_equal(kvshard_plan_create(&plan, qwen, &o, NULL, NULL), KVSHARD_EWORLD);
    o.dp_size = 1;
    o.cp_size = 2;
    o.enable_layerwise_split = true;
    o.layerwise_split_size = 2;
    assert_int_equal(kvshard_plan_create(&plan, qwen, &o, NULL, NULL), KVSHARD_ESPLITCP);
    o.cp_size = 1;
    o.world_size = 8;
    assert_int_equal(kvshard_plan_create(&plan, qwen, &o, NULL, NULL), KVSHARD_OK);
    kvshard_plan_free(plan);
    o.world_size = 64; /* 2 KV heads replicate fine; 16 query heads do not split 64 ways */
    o.layerwise_split_size = 1;
    assert_int_equal(kvshard_plan_create(&plan, qwen, &o, NULL, NULL), KVSHARD_EQHEADS);
    assert_int_equal(kvshard_plan_create(NULL, qwen, &o, NULL, NULL), KVSHARD_EINVAL);
    kvshard_plan_free(good);
    kvshard_model_free(qwen);
}

/* ---- status names -------------------------------------------------------------------- */

static void test_strerror_distinct(void **state)
{
    (void)state;
    for (size_t i = 0; i < CODE_COUNT; i++) {
        const char *a = kvshard_strerror(code_names[i].code);
        assert_non_null(a);
        assert_true(a[0] != '\0');
        assert_string_not_equal(a, "unknown error");
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(a, kvshard_strerror(code_names[j].code));
    }
    /* The table above has every code from KVSHARD_OK down to the last one. */
    assert_int_equal(CODE_COUNT, 1 - KVSHARD_ECOMM);
    assert_string_equal(kvshard_strerror(1), "unknown error");
    assert_string_equal(kvshard_strerror(KVSHARD_ECOMM - 1), "unknown error");
    assert_string_equal(kvshard_strerror(-1000), "unknown error");
    /* Queries take plan ranks (stage x T + TP rank), in UTF-8: a middle dot
     * and a minus sign. */
    assert_string_equal(kvshard_strerror(KVSHARD_ERANK),
                        "a plan rank outside 0..P\xc2\xb7T\xe2\x88\x92"
                        "1");
}

/* ---- reading limits not covered by files ------------------------------------------------ */

static void test_document_size_limit(void **state)
{
    (void)state;
    size_t len = (size_t)KVSHARD_MAX_DOCUMENT_BYTES + 1;
    char *text = calloc(len, 1);
    assert_non_null(text);
    memset(text, ' ', 16);
    kvshard_deployment *dep = SENTINEL_DEP;
    kvshard_error err;
    assert_int_equal(kvshard_deployment_load_string(&dep, text, len, "big.yaml", NULL, NULL, &err),
                     KVSHARD_ELIMIT);
    assert_ptr_equal(dep, SENTINEL_DEP);
    assert_string_equal(err.source, "big.yaml");
    kvshard_model *model = NULL;
    assert_int_equal(kvshard_model_load_string(&model, text, len, NULL, NULL, &err),
                     KVSHARD_ELIMIT);
    assert_null(model);
    free(text);
}

/* Model config with `x:` nested `lists` lists deep, on line 4 after "x: ". */
static size_t nested_text(char *text, size_t cap, unsigned lists)
{
    size_t n = (size_t)snprintf(text, cap, "num_hidden_layers: 1\nhead_dim: 8\n"
                                           "num_key_value_heads: 1\nx: ");
    assert_true(n + 2 * lists + 1 < cap);
    for (unsigned i = 0; i < lists; i++)
        text[n++] = '[';
    for (unsigned i = 0; i < lists; i++)
        text[n++] = ']';
    text[n++] = '\n';
    return n;
}

/* The depth limit applies to model configs too, and to the exact level. */
static void test_depth_limit_exact(void **state)
{
    (void)state;
    char text[512];
    kvshard_model *model = NULL;
    kvshard_error err;
    /* The top mapping and 63 lists: 64 levels, allowed. */
    size_t n = nested_text(text, sizeof text, KVSHARD_MAX_DEPTH - 1);
    assert_int_equal(kvshard_model_load_string(&model, text, n, NULL, NULL, &err), KVSHARD_OK);
    kvshard_model_free(model);
    model = NULL;
    /* 64 lists: the 64th `[` (column 4 + 63) is level 65. */
    n = nested_text(text, sizeof text, KVSHARD_MAX_DEPTH);
    assert_int_equal(kvshard_model_load_string(&model, text, n, NULL, NULL, &err), KVSHARD_ELIMIT);
    assert_null(model);
    assert_int_equal(err.line, 4);
    assert_int_equal(err.column, 67);
}

/* ---- the one escape of every message ----------------------------------------------------- */

static void assert_escape(const char *text, size_t len, const char *want)
{
    char out[256];
    size_t n = kvshard_error__escape(out, sizeof out, text, len);
    if (strcmp(out, want) != 0)
        print_error("escaped \"%s\", expected \"%s\"\n", out, want);
    assert_string_equal(out, want);
    assert_int_equal(n, strlen(want));
    assert_int_equal(kvshard_error__escaped_width(text, len), strlen(want));
    /* Escaped text escapes to itself. */
    char again[256];
    kvshard_error__escape(again, sizeof again, out, n);
    assert_string_equal(again, out);
}

#define ESCAPES(text, want) assert_escape(text, sizeof text - 1, want)

/* The invisible and bidirectional characters at both ends of each range of
 * the set, and their neighbours, which are shown as they are. */
static void test_escape_hidden_characters(void **state)
{
    (void)state;
    ESCAPES("a\xE2\x80\x8B"
            "b\xE2\x80\x8F"
            "c",
            "a\\u{200B}b\\u{200F}c"); /* zero-width space, right-to-left mark */
    ESCAPES("\xE2\x80\xAA\xE2\x80\xAE", "\\u{202A}\\u{202E}"); /* embedding, override */
    ESCAPES("\xE2\x81\xA0\xE2\x81\xA4", "\\u{2060}\\u{2064}"); /* word joiner, invisible plus */
    ESCAPES("\xE2\x81\xA6\xE2\x81\xA9", "\\u{2066}\\u{2069}"); /* isolates */
    ESCAPES("\xEF\xBB\xBFkey", "\\u{FEFF}key");                /* byte order mark */
    ESCAPES("soft\xC2\xAD"
            "hyphen\xC2\xA0nbsp",
            "soft\\u{00AD}hyphen\\u{00A0}nbsp");
    ESCAPES("\xE2\x80\x80\xE3\x80\x80", "\\u{2000}\\u{3000}"); /* en quad, ideographic space */
    ESCAPES("\xF3\xA0\x80\x81", "\\u{E0001}");                 /* language tag */
    /* Neighbours that are seen: hyphen U+2010, one dot leader U+2024 ...
     * U+2027, per mille U+2030, U+205E, superscript zero U+2070, U+00AC,
     * U+00AE, e acute, the euro sign, an emoji. */
    ESCAPES("\xE2\x80\x90\xE2\x80\xA7\xE2\x80\xB0\xE2\x81\x9E\xE2\x81\xB0",
            "\xE2\x80\x90\xE2\x80\xA7\xE2\x80\xB0\xE2\x81\x9E\xE2\x81\xB0");
    ESCAPES("\xC2\xAC\xC2\xAE\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80",
            "\xC2\xAC\xC2\xAE\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    /* Controls and bad bytes keep their \xNN form; a NUL is shown, and the
     * text after it is kept. */
    ESCAPES("ab\0cd", "ab\\x00cd");
    ESCAPES("\x1B[31m\x7F\xC2\x85\xFF", "\\x1B[31m\\x7F\\xC2\\x85\\xFF");
    /* A lone byte of a hidden character is invalid UTF-8, not hidden. */
    ESCAPES("\xE2\x80", "\\xE2\\x80");

    /* Cut only between whole escapes: 12 bytes hold "ab" and one escape. */
    char out[12];
    assert_int_equal(kvshard_error__escape(out, sizeof out, "ab\xE2\x80\x8B\xE2\x80\x8B", 8), 10);
    assert_string_equal(out, "ab\\u{200B}");
}

/* A long path is shortened from the front, never inside an escape, and the
 * invisible characters in it are shown. */
static void test_shorten_keeps_whole_escapes(void **state)
{
    (void)state;
    char path[1024];
    size_t n = 0;
    for (int i = 0; i < 60; i++) {
        path[n++] = 'd';
        memcpy(path + n, "\xE2\x80\x8B", 3); /* "d\u{200B}": 9 characters shown */
        n += 3;
    }
    memcpy(path + n, "/flags.txt", sizeof "/flags.txt");
    char out[KVSHARD_ERROR_SOURCE_MAX];
    kvshard_error__shorten(out, sizeof out, path);
    assert_true(strlen(out) < sizeof out);
    assert_true(strncmp(out, "...", 3) == 0);
    assert_true(ends_with(out, "d\\u{200B}/flags.txt"));
    /* 156 characters after "...": "/flags.txt" and 16 whole "d\u{200B}". */
    assert_int_equal(strlen(out), 3 + 10 + 16 * 9);
    assert_true(strncmp(out + 3, "d\\u{200B}", 9) == 0);
    /* A short path is escaped whole; kvshard_error.source is this form. */
    kvshard_error__shorten(out, sizeof out,
                     "/tmp/a\xE2\x80\xAE"
                     "b");
    assert_string_equal(out, "/tmp/a\\u{202E}b");
    kvshard_error err;
    kvshard_error__reset(&err);
    kvshard_error__fail(&err, KVSHARD_EIO, path, kvshard_error__no_mark, "x");
    kvshard_error__shorten(out, sizeof out, path);
    assert_string_equal(err.source, out);
}

/* ---- a failure that names what it is about ------------------------------------------------- */

static void test_diag_names_what_fails(void **state)
{
    (void)state;
    static const char *const about[] = {"block_size", NULL};
    kvshard_error err;
    kvshard_error__reset(&err);
    kvshard_diag__ctx d = kvshard_diag__on(&err);
    assert_ptr_equal(d.err, &err);
    assert_null(d.option);
    assert_null(d.among);
    d.option = "max_seqs";
    assert_int_equal(kvshard_diag__fail(&d, about, KVSHARD_EOVERFLOW, "%u blocks", 3u),
                     KVSHARD_EOVERFLOW);
    assert_int_equal(err.code, KVSHARD_EOVERFLOW);
    assert_string_equal(err.message, "3 blocks");
    assert_string_equal(err.source, "");
    assert_int_equal(err.line, 0);
    assert_ptr_equal(d.among, about);
    assert_string_equal(d.option, "max_seqs"); /* what the check named stays */
    /* The first error stays, as with kvshard_error__fail. */
    assert_int_equal(kvshard_diag__fail(&d, NULL, KVSHARD_ENOBLOCK, "later"), KVSHARD_ENOBLOCK);
    assert_int_equal(err.code, KVSHARD_EOVERFLOW);
    assert_string_equal(err.message, "3 blocks");
    /* Without a record the failure still names its options. */
    kvshard_diag__ctx quiet = kvshard_diag__on(NULL);
    assert_int_equal(kvshard_diag__fail(&quiet, about, KVSHARD_ELIMIT, "x"), KVSHARD_ELIMIT);
    assert_ptr_equal(quiet.among, about);
}

/* ---- the flag-file budget, NUL, long paths ------------------------------------------------- */

typedef struct scratch {
    char dir[64];
    char paths[16][128];
    size_t count;
} scratch;

static void scratch_open(scratch *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->dir, sizeof s->dir, "/tmp/kvshard_flags_XXXXXX");
    assert_non_null(mkdtemp(s->dir));
}

/* Write `len` bytes to DIR/NAME; returns the path (lives in `s`). */
static const char *scratch_file(scratch *s, const char *name, const char *text, size_t len)
{
    assert_true(s->count < 16);
    char dir[sizeof s->dir];
    memcpy(dir, s->dir, sizeof dir);
    char *path = s->paths[s->count++];
    snprintf(path, 128, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void scratch_close(scratch *s)
{
    for (size_t i = 0; i < s->count; i++)
        unlink(s->paths[i]);
    rmdir(s->dir);
}

static kvshard_deployment *seed_deployment(void)
{
    char *path = tu_example_path("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    return dep;
}

/* Apply one or two arguments; the deployment must stay as it was on error. */
static int apply2(kvshard_error *err, const char *a, const char *b)
{
    kvshard_deployment *dep = seed_deployment();
    kvshard_options before = KVSHARD_OPTIONS_INIT, after = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_deployment_options(&before, dep), KVSHARD_OK);
    const char *args[2] = {a, b};
    int rc = kvshard_deployment_apply_args(dep, b ? 2 : 1, args, 0, err);
    assert_int_equal(kvshard_deployment_options(&after, dep), KVSHARD_OK);
    if (rc != KVSHARD_OK)
        assert_memory_equal(&before, &after, sizeof before);
    kvshard_deployment_free(dep);
    return rc;
}

static void assert_flag_error(const kvshard_error *err, int code, const char *source_suffix,
                              int line, int column, const char *message)
{
    if (err->code != code || !ends_with(err->source, source_suffix) || err->line != line ||
        err->column != column || !strstr(err->message, message))
        print_error("got %s at %s:%d:%d: %s\nwanted %s at ...%s:%d:%d: ...%s...\n",
                    code_name(err->code), err->source, err->line, err->column, err->message,
                    code_name(code), source_suffix, line, column, message);
    assert_int_equal(err->code, code);
    assert_true(ends_with(err->source, source_suffix));
    assert_int_equal(err->line, line);
    assert_int_equal(err->column, column);
    assert_non_null(strstr(err->message, message));
}

/* f0 .. f6 each name the next file 16 times; f7 holds one flag. Without a
 * budget that is 16^7 (268 million) files. Opened depth first: f0 .. f6 (7
 * files), then f6's 16 lines open f7 (23 in all); each further line of f5
 * opens f6 and its 16 f7s (17 more), so after 14 lines of f5 there are
 * 23 + 13 x 17 = 244 files; line 15 opens f6 (245) and 11 f7s (256), and
 * line 12 of that f6 would open the 257th. */
static void test_flagfile_fanout_budget(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    const char *f0 = NULL;
    for (int i = 7; i >= 0; i--) {
        char name[8], text[2048];
        snprintf(name, sizeof name, "f%d", i);
        size_t n = 0;
        if (i == 7) {
            n = (size_t)snprintf(text, sizeof text, "--world_size=4\n");
        } else {
            for (int k = 0; k < 16; k++)
                n += (size_t)snprintf(text + n, sizeof text - n, "--flagfile=%s/f%d\n", s.dir,
                                      i + 1);
        }
        const char *path = scratch_file(&s, name, text, n);
        if (i == 0)
            f0 = path;
    }
    char arg[200];
    snprintf(arg, sizeof arg, "--flagfile=%s", f0);
    kvshard_error err;
    assert_int_equal(apply2(&err, arg, NULL), KVSHARD_ELIMIT);
    char want[300];
    snprintf(want, sizeof want,
             "--flagfile=%s/f7 would be flag file 257; one call opens at most "
             "256 flag files",
             s.dir);
    assert_flag_error(&err, KVSHARD_ELIMIT, "/f6", 12, 1, want);
    assert_int_equal(KVSHARD_FLAGS__MAX_FILES, 256);
    scratch_close(&s);
}

/* `lines` copies of `line` (with its newline), malloc'd. */
static char *repeat_line(const char *line, size_t lines, size_t *len)
{
    size_t n = strlen(line);
    char *text = malloc(n * lines + 1);
    assert_non_null(text);
    for (size_t i = 0; i < lines; i++)
        memcpy(text + i * n, line, n);
    text[n * lines] = '\0';
    *len = n * lines;
    return text;
}

/* 16 MiB of flag files in one call are read; one byte more is refused at
 * the --flagfile flag that would bring it, before that file is read. */
static void test_flagfile_byte_budget(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    size_t len;
    /* 12 MiB and 4 MiB of 64-byte comment lines: 16777216 bytes exactly. */
    char line[65];
    memset(line, 'x', 64);
    line[0] = '#';
    line[63] = '\n';
    line[64] = '\0';
    char *text = repeat_line(line, 12u << 14, &len);
    assert_int_equal(len, 12u << 20);
    const char *big = scratch_file(&s, "big", text, len);
    free(text);
    text = repeat_line(line, 4u << 14, &len);
    char body[200];
    snprintf(body, sizeof body, "--flagfile=%s/last\n", s.dir);
    /* The last comment line makes way for a shorter comment and the
     * --flagfile line, so the file stays 4 MiB; it is line 65537. */
    size_t b = strlen(body);
    memset(text + len - 64, '#', 64 - b);
    text[len - b - 1] = '\n';
    memcpy(text + len - b, body, b);
    const char *rest = scratch_file(&s, "rest", text, len);
    free(text);
    scratch_file(&s, "last", "\n", 1);
    char a1[200], a2[200];
    snprintf(a1, sizeof a1, "--flagfile=%s", big);
    snprintf(a2, sizeof a2, "--flagfile=%s", rest);
    kvshard_error err;
    /* big + rest = 16 MiB; rest then names `last`, one byte over. */
    assert_int_equal(apply2(&err, a1, a2), KVSHARD_ELIMIT);
    char want[300];
    snprintf(want, sizeof want,
             "--flagfile=%s/last: 1 more bytes would pass the 16777216 bytes (16 MiB) of flag "
             "files one call reads (16777216 read so far)",
             s.dir);
    assert_flag_error(&err, KVSHARD_ELIMIT, "/rest", 65537, 1, want);
    /* Without the last file, the two are read and applied. */
    scratch_file(&s, "last", "", 0);
    assert_int_equal(apply2(&err, a1, a2), KVSHARD_OK);
    scratch_close(&s);
}

/* 65,536 flags in one call are applied; one more is refused where it
 * stands. */
static void test_flagfile_flag_budget(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    size_t len;
    char *text = repeat_line("--block_size=32\n", 65535, &len);
    const char *many = scratch_file(&s, "many", text, len);
    free(text);
    char arg[200];
    snprintf(arg, sizeof arg, "--flagfile=%s", many);
    kvshard_error err;
    /* One flag on the command line and 65,535 in the file: the limit. */
    assert_int_equal(apply2(&err, "--world_size=4", arg), KVSHARD_OK);
    assert_int_equal(apply2(&err, "--world_size=4", "--dp_size=1"), KVSHARD_OK);
    const char *more = scratch_file(&s, "more", "# two\n--world_size=4\n--dp_size=1\n", 33);
    char arg2[200];
    snprintf(arg2, sizeof arg2, "--flagfile=%s", more);
    /* `many` then `more`: the 65,536th is more's --world_size, on line 2;
     * its --dp_size on line 3 is one too many. */
    assert_int_equal(apply2(&err, arg, arg2), KVSHARD_ELIMIT);
    assert_flag_error(&err, KVSHARD_ELIMIT, "/more", 3, 1,
                      "more than 65536 flags in one call, arguments and flag files together");
    scratch_close(&s);
}

/* A NUL in a flag file is shown as \x00 with the rest of the flag, at its
 * own column; a BOM and a zero-width space are shown, not passed raw. */
static void test_flagfile_hidden_bytes(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    static const char nul[] = "--world_size=4\n  --ownership=ord\0inal\n";
    const char *p = scratch_file(&s, "nul", nul, sizeof nul - 1);
    char arg[200];
    snprintf(arg, sizeof arg, "--flagfile=%s", p);
    kvshard_error err;
    assert_int_equal(apply2(&err, arg, NULL), KVSHARD_ETYPE);
    /* "  --ownership=ord" is 17 bytes: the NUL is column 18, offset 15 + 17. */
    assert_flag_error(&err, KVSHARD_ETYPE, "/nul", 2, 18,
                      "the flag \"--ownership=ord\\x00inal\" holds a NUL character (\\x00)");
    assert_int_equal(err.offset, 32);

    static const char bom[] = "\xEF\xBB\xBF--world_size=4\n";
    p = scratch_file(&s, "bom", bom, sizeof bom - 1);
    snprintf(arg, sizeof arg, "--flagfile=%s", p);
    assert_int_equal(apply2(&err, arg, NULL), KVSHARD_EUNKNOWNKEY);
    assert_flag_error(&err, KVSHARD_EUNKNOWNKEY, "/bom", 1, 1,
                      "\"\\u{FEFF}--world_size=4\" is not a flag (flags look like --key=value; "
                      "the file starts with a UTF-8 byte order mark: save it without one)");

    static const char zw[] = "--world\xE2\x80\x8B_size=4\n";
    p = scratch_file(&s, "zw", zw, sizeof zw - 1);
    snprintf(arg, sizeof arg, "--flagfile=%s", p);
    assert_int_equal(apply2(&err, arg, NULL), KVSHARD_EUNKNOWNKEY);
    assert_flag_error(&err, KVSHARD_EUNKNOWNKEY, "/zw", 1, 1, "unknown flag --world\\u{200B}_size");
    scratch_close(&s);
}

/* A --flagfile path longer than any the system takes is the system's to
 * refuse: "File name too long", never "needs a file name". */
static void test_flagfile_long_path(void **state)
{
    (void)state;
    size_t n = 5000;
    char *arg = malloc(n + 32);
    assert_non_null(arg);
    int k = snprintf(arg, n + 32, "--flagfile=/tmp/");
    memset(arg + k, 'a', n);
    memcpy(arg + k + n, "/flags", 7);
    kvshard_error err;
    assert_int_equal(apply2(&err, arg, NULL), KVSHARD_EIO);
    assert_string_equal(err.source, "command line --flagfile");
    assert_true(strncmp(err.message, "--flagfile=...", 14) == 0);
    assert_non_null(strstr(err.message, "aaaa/flags: cannot open: File name too long"));
    assert_null(strstr(err.message, "needs a file name"));
    free(arg);
}

typedef struct seen_files {
    char paths[8][128];
    size_t count;
    kvshard_file_role sources[4]; /* the roles reported before the flag files */
    size_t source_count;
} seen_files;

static void note_file(void *user, kvshard_file_role role, const char *path)
{
    seen_files *seen = user;
    if (role != KVSHARD_FILE_FLAGS) {
        seen->sources[seen->source_count++] = role;
        assert_int_equal(seen->count, 0); /* before any flag file */
        assert_non_null(strstr(path, "qwen3_5_35b_a3b"));
        return;
    }
    assert_true(seen->count < 8);
    snprintf(seen->paths[seen->count++], 128, "%s", path);
}

/* The flag files a call read, in order, each time it read them. */
static void test_flagfile_files_reported(void **state)
{
    (void)state;
    scratch s;
    scratch_open(&s);
    const char *inner = scratch_file(&s, "inner", "--world_size=4\n", 15);
    char text[200];
    int n = snprintf(text, sizeof text, "--flagfile=%s\n--flagfile=%s\n", inner, inner);
    const char *outer = scratch_file(&s, "outer", text, (size_t)n);
    char arg[200];
    snprintf(arg, sizeof arg, "--flagfile=%s", outer);
    const char *args[1] = {arg};
    seen_files seen = {0};
    kvshard_deployment *dep = seed_deployment();
    kvshard_error err;
    kvshard_args_options o = KVSHARD_ARGS_OPTIONS_INIT;
    o.on_file = note_file;
    o.on_file_user = &seen;
    tu_assert_ok(kvshard_deployment_apply_args_with(dep, 1, args, &o, &err), &err);
    assert_int_equal(seen.count, 3);
    /* The deployment file, then the model config its `model:` names. */
    assert_int_equal(seen.source_count, 2);
    assert_int_equal(seen.sources[0], KVSHARD_FILE_DEPLOYMENT);
    assert_int_equal(seen.sources[1], KVSHARD_FILE_MODEL);
    assert_string_equal(seen.paths[0], outer);
    assert_string_equal(seen.paths[1], inner);
    assert_string_equal(seen.paths[2], inner);
    kvshard_deployment_free(dep);
    scratch_close(&s);
}

/* ---- NULL in every pointer position ---------------------------------------------------- */

static int discard_writer(void *user, const char *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 0;
}

/* The public functions this test calls with NULL, by name: the header must
 * hold no other, so a new function is not forgotten here. */
static const char *const null_checked[] = {
    "kvshard_strerror",
    "kvshard_version",
    "kvshard_layer_kind_name",
    "kvshard_attention_name",
    "kvshard_state_kind_name",
    "kvshard_dtype_name",
    "kvshard_ownership_name",
    "kvshard_engine_name",
    "kvshard_pp_rule_name",
    "kvshard_rank_layout_name",
    "kvshard_model_load_file",
    "kvshard_model_load_string",
    "kvshard_model_create",
    "kvshard_model_free",
    "kvshard_model_type",
    "kvshard_model_num_layers",
    "kvshard_model_num_draft_layers",
    "kvshard_model_attention",
    "kvshard_model_count",
    "kvshard_model_layer_kind",
    "kvshard_model_state_kind",
    "kvshard_model_state_dtype",
    "kvshard_options_set",
    "kvshard_settings_create",
    "kvshard_settings_copy",
    "kvshard_settings_free",
    "kvshard_settings_set",
    "kvshard_settings_get",
    "kvshard_setting_count",
    "kvshard_setting_info_at",
    "kvshard_setting_find",
    "kvshard_option_count",
    "kvshard_option_info_at",
    "kvshard_option_find",
    "kvshard_flag_info_at",
    "kvshard_deployment_load_file",
    "kvshard_deployment_load_string",
    "kvshard_deployment_create",
    "kvshard_deployment_free",
    "kvshard_deployment_model",
    "kvshard_deployment_options",
    "kvshard_deployment_set",
    "kvshard_deployment_apply_args",
    "kvshard_deployment_apply_args_with",
    "kvshard_plan_create",
    "kvshard_deployment_plan",
    "kvshard_plan_free",
    "kvshard_plan_options",
    "kvshard_plan_attn_tp_size",
    "kvshard_plan_effective_split_size",
    "kvshard_plan_replication_factor",
    "kvshard_plan_num_layers",
    "kvshard_plan_model",
    "kvshard_plan_layer_owner",
    "kvshard_plan_owns",
    "kvshard_plan_stores_kv",
    "kvshard_plan_split_position",
    "kvshard_plan_rank_layers",
    "kvshard_plan_layer_storage",
    "kvshard_plan_rank_memory",
    "kvshard_plan_capacity",
    "kvshard_plan_uniform",
    "kvshard_plan_blocks_for",
    "kvshard_plan_capacity_figure",
    "kvshard_plan_blocks_figure",
    "kvshard_plan_engine_figure_count",
    "kvshard_plan_engine_figure_at",
    "kvshard_plan_engine_figure",
    "kvshard_warning_name",
    "kvshard_plan_warning_count",
    "kvshard_plan_warning",
    "kvshard_plan_has_warning",
    "kvshard_plan_digest",
    "kvshard_plan_layout_digest",
    "kvshard_plan_describe_rank",
    "kvshard_plan_describe_rank_blocks",
    "kvshard_dtype_size",
    "kvshard_plan_kv_cache_dtype",
    "kvshard_plan_layer_kv_geometry",
    "kvshard_plan_layer_state_shapes",
    "kvshard_plan_pp_size",
    "kvshard_plan_num_ranks",
    "kvshard_plan_stage",
    "kvshard_plan_layer_stage",
    "kvshard_plan_pp_partition",
    "kvshard_plan_locate",
    "kvshard_plan_global_rank",
    "kvshard_plan_write_json",
    "kvshard_plan_write_text",
    "kvshard_plan_write_svg",
    "kvshard_comparison_create",
    "kvshard_deployment_compare",
    "kvshard_deployment_ignored_flags",
    "kvshard_comparison_free",
    "kvshard_comparison_row_count",
    "kvshard_comparison_row_at",
    "kvshard_comparison_recommended",
    "kvshard_deployment_compare_with",
    "kvshard_comparison_rank_by",
    "kvshard_comparison_write_json",
    "kvshard_comparison_write_text",
    "kvshard_report_write_html",
    "kvshard_status_name",
    "kvshard_fit_create",
    "kvshard_deployment_fit",
    "kvshard_fit_free",
    "kvshard_fit_row_count",
    "kvshard_fit_row_at",
    "kvshard_fit_not_admitted_count",
    "kvshard_fit_not_admitted",
    "kvshard_fit_limited_layouts",
    "kvshard_fit_rank_by",
    "kvshard_fit_flags",
    "kvshard_fit_write_json",
    "kvshard_fit_write_text",
    "kvshard_transfer_create",
    "kvshard_transfer_free",
    "kvshard_transfer_edge_count",
    "kvshard_transfer_edge_at",
    "kvshard_transfer_rank_edges",
    "kvshard_transfer_totals_get",
    "kvshard_transfer_digest",
    "kvshard_transfer_warning_count",
    "kvshard_transfer_warning",
    "kvshard_transfer_judge",
    "kvshard_transfer_judge_unsupported",
    "kvshard_transfer_judging_engine",
    "kvshard_transfer_verdict_count",
    "kvshard_transfer_verdict_at",
    "kvshard_transfer_write_json",
    "kvshard_transfer_write_text",
    "kvshard_transfer_write_svg",
    "kvshard_plan_comm",
};

static bool is_null_checked(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof null_checked / sizeof null_checked[0]; i++) {
        if (strlen(null_checked[i]) == len && memcmp(null_checked[i], name, len) == 0)
            return true;
    }
    return false;
}

/* Every KVSHARD_EXPORT function of the header is in null_checked. */
static void test_null_list_is_the_header(void **state)
{
    (void)state;
    char *text = read_public_headers();
    size_t found = 0;
    for (const char *p = strstr(text, "KVSHARD_EXPORT "); p; p = strstr(p + 1, "KVSHARD_EXPORT ")) {
        const char *paren = strchr(p, '(');
        assert_non_null(paren);
        const char *end = paren;
        while (end > p && (end[-1] == ' ' || end[-1] == '\n'))
            end--;
        const char *start = end;
        while (start > p && (isalnum((unsigned char)start[-1]) || start[-1] == '_'))
            start--;
        if (!is_null_checked(start, (size_t)(end - start)))
            print_error("%.*s is not called with NULL by test_null_everywhere\n",
                        (int)(end - start), start);
        assert_true(is_null_checked(start, (size_t)(end - start)));
        found++;
    }
    free(text);
    assert_int_equal(found, sizeof null_checked / sizeof null_checked[0]);
}

/* Every public function with NULL in each pointer position: a status
 * function answers KVSHARD_EINVAL, a query its documented empty value, a
 * free does nothing; nothing crashes. */
static void test_null_everywhere(void **state)
{
    (void)state;
    kvshard_error err;
    kvshard_model *model;
    kvshard_plan *plan = example_plan(&model);
    kvshard_deployment *dep = NULL;
    char path[512];
    snprintf(path, sizeof path, "%s/qwen3_5_35b_a3b_tp4.yaml", KVSHARD_EXAMPLES);
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    kvshard_comparison *cmp = NULL;
    tu_assert_ok(kvshard_deployment_compare(&cmp, dep, &err), &err);
    kvshard_settings *settings = NULL;
    tu_assert_ok(kvshard_settings_create(&settings, NULL, &err), &err);
    const char *text = "num_hidden_layers: 1\n";

    /* Names of values: never NULL. */
    assert_non_null(kvshard_strerror(12345));
    assert_string_equal(kvshard_status_name(12345), "unknown");
    assert_string_equal(kvshard_status_name(KVSHARD_EDOESNOTFIT), "does_not_fit");
    assert_non_null(kvshard_version());
    assert_string_equal(kvshard_layer_kind_name((kvshard_layer_kind)99), "unknown");
    assert_string_equal(kvshard_state_kind_name((kvshard_state_kind)99), "unknown");
    assert_string_equal(kvshard_attention_name((kvshard_attention)99), "unknown");
    assert_string_equal(kvshard_dtype_name((kvshard_dtype)99), "unknown");
    assert_string_equal(kvshard_ownership_name((kvshard_ownership)99), "unknown");
    assert_string_equal(kvshard_engine_name((kvshard_engine)99), "unknown");
    assert_string_equal(kvshard_pp_rule_name((kvshard_pp_rule)99), "unknown");
    assert_string_equal(kvshard_rank_layout_name((kvshard_rank_layout)99), "unknown");
    assert_string_equal(kvshard_warning_name((kvshard_warning_code)99), "unknown");

    /* Models. */
    kvshard_model *m = NULL;
    assert_int_equal(kvshard_model_load_file(NULL, path, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_model_load_file(&m, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_model_load_string(NULL, text, strlen(text), NULL, NULL, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_model_load_string(&m, NULL, 4, NULL, NULL, &err), KVSHARD_EINVAL);
    kvshard_model_desc desc = KVSHARD_MODEL_DESC_INIT;
    assert_int_equal(kvshard_model_create(NULL, &desc, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_model_create(&m, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_null(m);
    kvshard_model_free(NULL);
    assert_string_equal(kvshard_model_type(NULL), "");
    assert_int_equal(kvshard_model_num_layers(NULL), 0);
    assert_int_equal(kvshard_model_num_draft_layers(NULL), 0);
    assert_int_equal(kvshard_model_attention(NULL), KVSHARD_ATTENTION_GQA);
    assert_int_equal(kvshard_model_count(NULL, KVSHARD_LAYER_FULL_ATTENTION), 0);
    kvshard_layer_kind kind;
    assert_int_equal(kvshard_model_layer_kind(NULL, model, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_model_layer_kind(&kind, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_model_state_kind(NULL), KVSHARD_STATE_NONE);
    assert_int_equal(kvshard_model_state_dtype(NULL), KVSHARD_DTYPE_AUTO);

    /* Options and settings. */
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    assert_int_equal(kvshard_options_set(NULL, "world_size", "4", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_options_set(&o, NULL, "4", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_options_set(&o, "world_size", NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_settings_create(NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_settings_copy(NULL, settings, NULL, &err), KVSHARD_EINVAL);
    kvshard_settings *copy = NULL;
    tu_assert_ok(kvshard_settings_copy(&copy, NULL, NULL, &err), &err);
    kvshard_settings_free(copy);
    kvshard_settings_free(NULL);
    assert_int_equal(kvshard_settings_set(NULL, "max_cache_size", "1", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_settings_set(settings, NULL, "1", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_settings_set(settings, "max_cache_size", NULL, NULL, &err),
                     KVSHARD_EINVAL);
    char buf[64];
    assert_int_equal(kvshard_settings_get(NULL, sizeof buf, NULL, settings, "max_cache_size"),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, NULL, NULL, "max_cache_size"),
                     KVSHARD_OK); /* NULL settings: every default */
    assert_int_equal(kvshard_settings_get(buf, sizeof buf, NULL, settings, NULL), KVSHARD_EINVAL);
    assert_true(kvshard_setting_count() > 0);
    assert_int_equal(kvshard_setting_info_at(NULL, 0), KVSHARD_EINVAL);
    kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
    assert_int_equal(kvshard_setting_find(NULL, "max_cache_size"), KVSHARD_EINVAL);
    assert_int_equal(kvshard_setting_find(&info, NULL), KVSHARD_EINVAL);
    assert_true(kvshard_option_count() > 0);
    assert_int_equal(kvshard_option_info_at(NULL, 0), KVSHARD_EINVAL);
    kvshard_option_info option = KVSHARD_OPTION_INFO_INIT;
    assert_int_equal(kvshard_option_find(NULL, "world_size"), KVSHARD_EINVAL);
    assert_int_equal(kvshard_option_find(&option, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_flag_info_at(NULL, KVSHARD_ENGINE_VLLM, 0), KVSHARD_EINVAL);

    /* Deployments. */
    kvshard_deployment *d = NULL;
    assert_int_equal(kvshard_deployment_load_file(NULL, path, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_load_file(&d, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_load_string(NULL, text, 4, NULL, NULL, NULL, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_load_string(&d, NULL, 4, NULL, NULL, NULL, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_create(NULL, model, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_create(&d, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_null(d);
    kvshard_deployment_free(NULL);
    assert_null(kvshard_deployment_model(NULL));
    assert_int_equal(kvshard_deployment_options(NULL, dep), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_options(&o, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_set(NULL, "world_size", "4", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_set(dep, NULL, "4", NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_set(dep, "world_size", NULL, NULL, &err), KVSHARD_EINVAL);
    const char *args[] = {"--world_size=4", NULL};
    assert_int_equal(kvshard_deployment_apply_args(NULL, 1, args, 0, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, NULL, 0, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_apply_args(dep, 2, args, 0, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_apply_args(dep, 0, NULL, 0, &err), KVSHARD_OK);
    assert_int_equal(kvshard_deployment_apply_args_with(NULL, 1, args, NULL, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_apply_args_with(dep, 1, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_apply_args_with(dep, 0, NULL, NULL, &err), KVSHARD_OK);
    assert_int_equal(kvshard_deployment_ignored_flags(NULL, 4, NULL), 0);
    assert_int_equal(kvshard_deployment_ignored_flags(NULL, 0, dep), 0);

    /* Plans. */
    kvshard_plan *p = NULL;
    assert_int_equal(kvshard_plan_create(NULL, model, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_create(&p, NULL, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_plan(NULL, dep, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_plan(&p, NULL, &err), KVSHARD_EINVAL);
    assert_null(p);
    kvshard_plan_free(NULL);
    assert_int_equal(kvshard_plan_options(NULL, plan), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_options(&o, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_attn_tp_size(NULL), 0);
    assert_int_equal(kvshard_plan_effective_split_size(NULL), 0);
    assert_int_equal(kvshard_plan_replication_factor(NULL), 0);
    assert_int_equal(kvshard_plan_num_layers(NULL), 0);
    kvshard_plan_model_info facts = KVSHARD_PLAN_MODEL_INFO_INIT;
    assert_int_equal(kvshard_plan_model(NULL, plan), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_model(&facts, NULL), KVSHARD_EINVAL);
    facts.size = 1;
    assert_int_equal(kvshard_plan_model(&facts, plan), KVSHARD_EINVAL);
    int32_t owner;
    assert_int_equal(kvshard_plan_layer_owner(NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_owner(&owner, NULL, 0), KVSHARD_EINVAL);
    assert_false(kvshard_plan_owns(NULL, 0, 0));
    assert_false(kvshard_plan_stores_kv(NULL, 0, 0));
    uint32_t split_rank, split_group;
    assert_int_equal(kvshard_plan_split_position(&split_rank, &split_group, NULL, 0),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_split_position(NULL, NULL, plan, 0), KVSHARD_OK);
    const uint32_t *layers;
    size_t count;
    assert_int_equal(kvshard_plan_rank_layers(NULL, &count, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_rank_layers(&layers, NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_rank_layers(&layers, &count, NULL, 0), KVSHARD_EINVAL);
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(NULL, plan, 0, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_storage(&st, NULL, 0, 0), KVSHARD_EINVAL);
    kvshard_rank_memory rm = KVSHARD_RANK_MEMORY_INIT;
    assert_int_equal(kvshard_plan_rank_memory(NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_rank_memory(&rm, NULL, 0), KVSHARD_EINVAL);
    kvshard_capacity cap = KVSHARD_CAPACITY_INIT;
    assert_int_equal(kvshard_plan_capacity(NULL, plan), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_capacity(&cap, NULL), KVSHARD_EINVAL);
    kvshard_uniform uni = KVSHARD_UNIFORM_INIT;
    assert_int_equal(kvshard_plan_uniform(NULL, plan), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_uniform(&uni, NULL), KVSHARD_EINVAL);
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    budget.memory_per_rank = UINT64_C(1) << 34;
    kvshard_blocks blocks = KVSHARD_BLOCKS_INIT;
    assert_int_equal(kvshard_plan_blocks_for(NULL, plan, 0, &budget, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_blocks_for(&blocks, NULL, 0, &budget, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_blocks_for(&blocks, plan, 0, NULL, &err), KVSHARD_EINVAL);
    kvshard_figure fig = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_engine_figure_count(NULL), 0);
    assert_int_equal(kvshard_plan_engine_figure_at(NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_engine_figure_at(&fig, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_engine_figure(NULL, plan, "name"), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_engine_figure(&fig, NULL, "name"), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_engine_figure(&fig, plan, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_capacity_figure(NULL, plan, "num_blocks"), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_capacity_figure(&fig, NULL, "num_blocks"), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_capacity_figure(&fig, plan, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_blocks_figure(NULL, plan, 0, &budget, "num_blocks", &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_blocks_figure(&fig, NULL, 0, &budget, "num_blocks", &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_blocks_figure(&fig, plan, 0, NULL, "num_blocks", &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_blocks_figure(&fig, plan, 0, &budget, NULL, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_warning_count(NULL), 0);
    kvshard_warning_code code;
    const char *message;
    assert_int_equal(kvshard_plan_warning(&code, &message, NULL, 0), KVSHARD_EINVAL);
    assert_false(kvshard_plan_has_warning(NULL, KVSHARD_WARN_SPLIT_DISABLED));
    assert_true(kvshard_plan_digest(NULL) == 0);
    assert_true(kvshard_plan_layout_digest(NULL) == 0);
    assert_int_equal(kvshard_plan_describe_rank(buf, sizeof buf, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_describe_rank(NULL, sizeof buf, plan, 0), KVSHARD_EINVAL);
    assert_true(kvshard_plan_describe_rank(NULL, 0, plan, 0) > 0); /* the length it needs */
    assert_int_equal(kvshard_plan_describe_rank_blocks(buf, sizeof buf, NULL, 0, 7),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_describe_rank_blocks(NULL, sizeof buf, plan, 0, 7),
                     KVSHARD_EINVAL);
    assert_true(kvshard_plan_describe_rank_blocks(NULL, 0, plan, 0, 7) > 0);
    assert_int_equal(kvshard_dtype_size(KVSHARD_DTYPE_AUTO), 0);
    assert_int_equal(kvshard_dtype_size((kvshard_dtype)99), 0);
    assert_int_equal(kvshard_plan_kv_cache_dtype(NULL), KVSHARD_DTYPE_AUTO);
    kvshard_layer_kv_geometry geometry = KVSHARD_LAYER_KV_GEOMETRY_INIT;
    assert_int_equal(kvshard_plan_layer_kv_geometry(NULL, plan, 0, 0, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_kv_geometry(&geometry, NULL, 0, 0, &err),
                     KVSHARD_EINVAL);
    kvshard_state_tensor tensors[2] = {KVSHARD_STATE_TENSOR_INIT, KVSHARD_STATE_TENSOR_INIT};
    size_t tensor_count = 99;
    assert_int_equal(kvshard_plan_layer_state_shapes(NULL, 2, &tensor_count, plan, 0, 0, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_state_shapes(tensors, 2, NULL, plan, 0, 0, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_state_shapes(tensors, 2, &tensor_count, NULL, 0, 0, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(tensor_count, 99); /* untouched on failure */
    assert_int_equal(kvshard_plan_pp_size(NULL), 0);
    assert_int_equal(kvshard_plan_num_ranks(NULL), 0);
    kvshard_stage_info stage = KVSHARD_STAGE_INFO_INIT;
    assert_int_equal(kvshard_plan_stage(NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_stage(&stage, NULL, 0), KVSHARD_EINVAL);
    uint32_t at;
    assert_int_equal(kvshard_plan_layer_stage(NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_stage(&at, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_pp_partition(buf, sizeof buf, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_pp_partition(NULL, sizeof buf, plan), KVSHARD_EINVAL);
    assert_true(kvshard_plan_pp_partition(NULL, 0, plan) > 0); /* the length it needs */
    kvshard_rank_position pos = KVSHARD_RANK_POSITION_INIT;
    assert_int_equal(kvshard_plan_locate(NULL, plan, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_locate(&pos, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_global_rank(NULL, plan, 0, 0, 0, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_global_rank(&at, NULL, 0, 0, 0, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_json(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_json(plan, NULL, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_text(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_text(plan, NULL, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_svg(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_write_svg(plan, NULL, NULL), KVSHARD_EINVAL);

    /* Fits. */
    kvshard_fit *fit = NULL;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 1;
    /* A fit of the example on one 200 GiB GPU, so that each NULL below is
     * the only thing wrong with its call. */
    kvshard_options fopt = KVSHARD_OPTIONS_INIT;
    fopt.device_memory = UINT64_C(200) << 30;
    fopt.weights_total = UINT64_C(70) << 30;
    assert_int_equal(kvshard_fit_create(NULL, model, &fopt, &fo, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_fit_create(&fit, NULL, &fopt, &fo, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_fit_create(&fit, model, NULL, &fo, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_fit_create(&fit, model, &fopt, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_string_equal(err.message, "out, model, options and fit_options must not be NULL");
    assert_int_equal(kvshard_deployment_fit(NULL, dep, &fo, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_fit(&fit, NULL, &fo, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_fit(&fit, dep, NULL, &err), KVSHARD_EINVAL);
    assert_string_equal(err.message, "out, deployment and fit_options must not be NULL");
    assert_null(fit);
    kvshard_fit_free(NULL);
    assert_int_equal(kvshard_fit_row_count(NULL), 0);
    assert_null(kvshard_fit_row_at(NULL, 0));
    assert_int_equal(kvshard_fit_not_admitted_count(NULL), 0);
    assert_int_equal(kvshard_fit_not_admitted(NULL, NULL, NULL, NULL, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_fit_limited_layouts(NULL), 0);
    assert_int_equal(kvshard_fit_rank_by(NULL), KVSHARD_RANK_CAPACITY);
    assert_int_equal(kvshard_fit_flags(buf, sizeof buf, NULL, "kvshard", false), KVSHARD_EINVAL);
    tu_assert_ok(kvshard_fit_create(&fit, model, &fopt, &fo, NULL, &err), &err);
    assert_true(kvshard_fit_flags(buf, sizeof buf, fit, "kvshard", false) > 0);
    assert_int_equal(kvshard_fit_flags(NULL, sizeof buf, fit, "kvshard", false), KVSHARD_EINVAL);
    assert_int_equal(kvshard_fit_flags(buf, sizeof buf, fit, NULL, false), KVSHARD_EINVAL);
    assert_true(kvshard_fit_flags(NULL, 0, fit, "kvshard", false) > 0); /* the length it needs */
    kvshard_fit_free(fit);
    fit = NULL;
    assert_int_equal(kvshard_fit_write_json(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_fit_write_text(NULL, 0, discard_writer, NULL), KVSHARD_EINVAL);

    /* Transfers. */
    kvshard_transfer *tr = NULL;
    assert_int_equal(kvshard_transfer_create(NULL, plan, plan, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_create(&tr, NULL, plan, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_create(&tr, plan, NULL, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_string_equal(err.message, "out, p and d must not be NULL");
    assert_null(tr);
    kvshard_transfer_free(NULL);
    assert_int_equal(kvshard_transfer_edge_count(NULL), 0);
    assert_null(kvshard_transfer_edge_at(NULL, 0));
    assert_int_equal(kvshard_transfer_rank_edges(NULL, 0, NULL, false, 0), 0);
    assert_int_equal(kvshard_transfer_digest(NULL), 0);
    assert_int_equal(kvshard_transfer_warning_count(NULL), 0);
    assert_int_equal(kvshard_transfer_warning(NULL, NULL, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_write_json(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_write_text(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_write_svg(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    tu_assert_ok(kvshard_transfer_create(&tr, plan, plan, NULL, NULL, &err), &err);
    assert_int_equal(kvshard_transfer_judge(NULL, plan, plan, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_judge(tr, NULL, plan, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_judge(tr, plan, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(
        kvshard_transfer_judge_unsupported(NULL, KVSHARD_ENGINE_VLLM, NULL, "why", &err),
        KVSHARD_EINVAL);
    assert_int_equal(
        kvshard_transfer_judge_unsupported(tr, KVSHARD_ENGINE_VLLM, "0.28.0", NULL, &err),
        KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_verdict_count(NULL), 0);
    assert_int_equal(kvshard_transfer_judging_engine(NULL, 0), KVSHARD_EINVAL);
    kvshard_transfer_verdict verdict = KVSHARD_TRANSFER_VERDICT_INIT;
    assert_int_equal(kvshard_transfer_verdict_at(NULL, tr, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_verdict_at(&verdict, NULL, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_totals_get(NULL, tr), KVSHARD_EINVAL);
    kvshard_transfer_totals totals = KVSHARD_TRANSFER_TOTALS_INIT;
    assert_int_equal(kvshard_transfer_totals_get(&totals, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_transfer_write_json(tr, NULL, NULL), KVSHARD_EINVAL);
    kvshard_transfer_free(tr);

    /* Comparisons and the report. */
    kvshard_comparison *c = NULL;
    assert_int_equal(kvshard_comparison_create(NULL, model, NULL, NULL, NULL, &err),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_comparison_create(&c, NULL, NULL, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_compare(NULL, dep, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_compare(&c, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_compare_with(NULL, dep, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_deployment_compare_with(&c, NULL, NULL, &err), KVSHARD_EINVAL);
    assert_null(c);
    assert_int_equal(kvshard_comparison_rank_by(NULL), KVSHARD_RANK_CAPACITY);
    kvshard_comparison_free(NULL);
    assert_int_equal(kvshard_comparison_row_count(NULL), 0);
    assert_null(kvshard_comparison_row_at(NULL, 0));
    assert_int_equal(kvshard_comparison_recommended(NULL), 0);
    kvshard_comm_estimate estimate = KVSHARD_COMM_ESTIMATE_INIT;
    assert_int_equal(kvshard_plan_comm(NULL, plan, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_comm(&estimate, NULL, &err), KVSHARD_EINVAL);
    assert_int_equal(kvshard_comparison_write_json(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_comparison_write_json(cmp, NULL, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_comparison_write_text(NULL, discard_writer, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_comparison_write_text(cmp, NULL, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_report_write_html(NULL, cmp, NULL, discard_writer, NULL),
                     KVSHARD_EINVAL);
    assert_int_equal(kvshard_report_write_html(plan, cmp, NULL, NULL, NULL), KVSHARD_EINVAL);
    assert_int_equal(kvshard_report_write_html(plan, NULL, NULL, discard_writer, NULL), KVSHARD_OK);

    kvshard_settings_free(settings);
    kvshard_comparison_free(cmp);
    kvshard_deployment_free(dep);
    kvshard_plan_free(plan);
    kvshard_model_free(model);
}

/* ---- every pointer parameter, from the header ---------------------------------------- */

/* Pointer parameters the header documents as optional: NULL is an answer
 * there, not an error. "*" stands for every function. */
static const struct {
    const char *function;
    const char *param;
} optional_pointers[] = {
    {"*", "err"},       /* `err` arguments may be NULL */
    {"*", "allocator"}, /* NULL: the C library's */
    {"*", "user"},      /* the write callback's own pointer */
    {"*", "origin"},    /* NULL: "option", "override" */
    {"kvshard_model_load_file", "options"},
    {"kvshard_model_load_string", "options"},
    {"kvshard_model_load_string", "name"},
    {"kvshard_deployment_load_file", "options"},
    {"kvshard_deployment_load_string", "options"},
    {"kvshard_deployment_load_string", "name"},
    {"kvshard_deployment_load_string", "base_dir"},
    {"kvshard_settings_copy", "settings"}, /* NULL: an empty one */
    {"kvshard_settings_get", "settings"},  /* NULL: every default */
    {"kvshard_settings_get", "out_set"},
    {"kvshard_plan_create", "options"},       /* NULL: KVSHARD_OPTIONS_INIT */
    {"kvshard_comparison_create", "options"}, /* as kvshard_plan_create() */
    {"kvshard_comparison_create", "compare_options"}, /* NULL: KVSHARD_COMPARE_OPTIONS_INIT */
    {"kvshard_deployment_compare_with", "compare_options"}, /* NULL: the deployment's */
    {"kvshard_deployment_create", "options"},
    {"kvshard_plan_split_position", "out_split_rank"}, /* either output may be NULL */
    {"kvshard_plan_split_position", "out_split_group"},
    {"kvshard_plan_warning", "out_code"}, /* either output may be NULL */
    {"kvshard_plan_warning", "out_message"},
    {"kvshard_fit_not_admitted", "tp_size"}, /* each output may be NULL */
    {"kvshard_fit_not_admitted", "pp_size"},
    {"kvshard_fit_not_admitted", "dp_size"},
    {"kvshard_fit_not_admitted", "code"},
    {"kvshard_report_write_html", "comparison"}, /* NULL leaves it out */
    {"kvshard_report_write_html", "options"},    /* NULL: KVSHARD_REPORT_OPTIONS_INIT */
};

static bool optional_pointer(const char *function, size_t flen, const char *param, size_t plen)
{
    for (size_t i = 0; i < sizeof optional_pointers / sizeof optional_pointers[0]; i++) {
        const char *f = optional_pointers[i].function, *q = optional_pointers[i].param;
        if ((strcmp(f, "*") == 0 || (strlen(f) == flen && memcmp(f, function, flen) == 0)) &&
            strlen(q) == plen && memcmp(q, param, plen) == 0)
            return true;
    }
    return false;
}

/* A file as a C string (read_whole leaves room after its bytes). */
static char *read_text(const char *path)
{
    size_t len;
    char *text = read_whole(path, &len);
    text[len] = '\0';
    return text;
}

/* The text from `open` (a '(') to its matching ')', exclusive; its
 * arguments split at the commas of depth 1 into starts[] and lens[]. */
static size_t split_args(const char *open, const char **starts, size_t *lens, size_t cap,
                         const char **close)
{
    int depth = 0;
    size_t n = 0;
    const char *start = open + 1;
    for (const char *p = open; *p; p++) {
        if (*p == '(' || *p == '[' || *p == '{')
            depth++;
        else if (*p == ')' || *p == ']' || *p == '}')
            depth--;
        if ((*p == ',' && depth == 1) || depth == 0) {
            while (start < p && isspace((unsigned char)*start))
                start++;
            const char *end = p;
            while (end > start && isspace((unsigned char)end[-1]))
                end--;
            if (n < cap && (end > start || n > 0)) {
                starts[n] = start;
                lens[n] = (size_t)(end - start);
                n++;
            }
            start = p + 1;
        }
        if (depth == 0) {
            *close = p;
            return n;
        }
    }
    *close = open;
    return n;
}

/* Whether test_null_everywhere calls `name` with NULL as argument `index`. */
static bool called_with_null(const char *body, const char *name, size_t len, size_t index)
{
    for (const char *p = strstr(body, name); p; p = strstr(p + 1, name)) {
        if ((p > body && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) ||
            strncmp(p, name, len) != 0 || p[len] != '(')
            continue;
        const char *starts[16], *close;
        size_t lens[16];
        size_t n = split_args(p + len, starts, lens, 16, &close);
        if (index < n && lens[index] == 4 && memcmp(starts[index], "NULL", 4) == 0)
            return true;
    }
    return false;
}

/* Every pointer parameter of every public function, read from the header
 * (so a new function or parameter is covered without a list to keep): each
 * one the header does not call optional is passed NULL somewhere in
 * test_null_everywhere, whose assertions then say what NULL gives. A list
 * of names alone let kvshard_fit_create's fit_options slip through. */
static void test_null_every_pointer_parameter(void **state)
{
    (void)state;
    char *header = read_public_headers();
    char *source = read_text(KVSHARD_EXAMPLES "/../tests/test_errors.c");
    const char *begin = strstr(source, "static void test_null_everywhere(void **state)");
    assert_non_null(begin);
    const char *end = strstr(begin, "\nint main(void)");
    assert_non_null(end);
    ((char *)end)[0] = '\0';
    size_t pointers = 0, missing = 0;
    for (const char *p = strstr(header, "KVSHARD_EXPORT "); p;
         p = strstr(p + 1, "KVSHARD_EXPORT ")) {
        const char *paren = strchr(p, '(');
        assert_non_null(paren);
        const char *nend = paren;
        while (nend > p && isspace((unsigned char)nend[-1]))
            nend--;
        const char *name = nend;
        while (name > p && (isalnum((unsigned char)name[-1]) || name[-1] == '_'))
            name--;
        size_t name_len = (size_t)(nend - name);
        char fname[96];
        snprintf(fname, sizeof fname, "%.*s", (int)name_len, name);
        const char *starts[16], *close;
        size_t lens[16];
        size_t n = split_args(paren, starts, lens, 16, &close);
        for (size_t i = 0; i < n; i++) {
            if (!memchr(starts[i], '*', lens[i]))
                continue;
            const char *pe = starts[i] + lens[i], *pn = pe;
            while (pn > starts[i] && (isalnum((unsigned char)pn[-1]) || pn[-1] == '_'))
                pn--;
            if (optional_pointer(name, name_len, pn, (size_t)(pe - pn)))
                continue;
            pointers++;
            if (!called_with_null(begin, fname, name_len, i)) {
                print_error("%s: its parameter %.*s (argument %zu) is never NULL in "
                            "test_null_everywhere\n",
                            fname, (int)(pe - pn), pn, i + 1);
                missing++;
            }
        }
    }
    free(header);
    free(source);
    assert_true(pointers > 150);
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diag_names_what_fails),
        cmocka_unit_test(test_golden_invalid_inputs),
        cmocka_unit_test(test_golden_cases_match_directory),
        cmocka_unit_test(test_outputs_untouched_on_failure),
        cmocka_unit_test(test_null_err_accepted),
        cmocka_unit_test(test_null_list_is_the_header),
        cmocka_unit_test(test_null_everywhere),
        cmocka_unit_test(test_null_every_pointer_parameter),
        cmocka_unit_test(test_strerror_distinct),
        cmocka_unit_test(test_document_size_limit),
        cmocka_unit_test(test_depth_limit_exact),
        cmocka_unit_test(test_escape_hidden_characters),
        cmocka_unit_test(test_shorten_keeps_whole_escapes),
        cmocka_unit_test(test_flagfile_fanout_budget),
        cmocka_unit_test(test_flagfile_byte_budget),
        cmocka_unit_test(test_flagfile_flag_budget),
        cmocka_unit_test(test_flagfile_hidden_bytes),
        cmocka_unit_test(test_flagfile_long_path),
        cmocka_unit_test(test_flagfile_files_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
