/* Helpers shared by the cmocka tests. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include "test_util.h"

#include "kvshard/output.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *join(const char *dir, const char *relative)
{
    size_t len = strlen(dir) + 1 + strlen(relative) + 1;
    char *p = malloc(len);
    assert_non_null(p);
    snprintf(p, len, "%s/%s", dir, relative);
    return p;
}

char *tu_example_path(const char *relative)
{
    return join(KVSHARD_EXAMPLES, relative);
}

char *tu_data_path(const char *relative)
{
    return join(KVSHARD_TEST_DATA, relative);
}

void tu_assert_ok(int rc, const kvshard_error *err)
{
    if (rc != KVSHARD_OK)
        print_error("%s:%d:%d: %s\n", err->source, err->line, err->column, err->message);
    assert_int_equal(rc, KVSHARD_OK);
}

kvshard_model *tu_load_example_model(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", name);
    char *path = tu_example_path(rel);
    kvshard_model *model = NULL;
    kvshard_error err;
    int rc = kvshard_model_load_file(&model, path, NULL, &err);
    tu_assert_ok(rc, &err);
    free(path);
    return model;
}

kvshard_model *tu_load_model_text(const char *text)
{
    kvshard_model *model = NULL;
    kvshard_error err;
    int rc = kvshard_model_load_string(&model, text, strlen(text), "test", NULL, &err);
    tu_assert_ok(rc, &err);
    return model;
}

kvshard_model *tu_granite_tiny(void)
{
    char types[40 * 12 + 1] = "";
    for (int i = 0; i < 40; i++)
        strcat(types, i % 10 == 5 ? "attention, " : "mamba, ");
    types[strlen(types) - 2] = '\0';
    char text[1024];
    snprintf(text, sizeof text,
             "{model_type: granitemoehybrid, num_hidden_layers: 40, layer_types: [%s], "
             "num_attention_heads: 12, num_key_value_heads: 4, hidden_size: 1536, "
             "mamba_n_heads: 48, mamba_d_head: 64, mamba_d_state: 128, mamba_n_groups: 1, "
             "mamba_d_conv: 4, mamba_expand: 2, torch_dtype: bfloat16}",
             types);
    return tu_load_model_text(text);
}

kvshard_plan *tu_plan(const kvshard_model *model, const kvshard_options *options)
{
    kvshard_plan *plan = NULL;
    kvshard_error err;
    int rc = kvshard_plan_create(&plan, model, options, NULL, &err);
    if (rc != KVSHARD_OK)
        print_error("plan: %s\n", err.message);
    assert_int_equal(rc, KVSHARD_OK);
    return plan;
}

typedef struct buffer {
    char *data;
    size_t len;
} buffer;

static int append(void *user, const char *data, size_t len)
{
    buffer *b = user;
    char *grown = realloc(b->data, b->len + len + 1);
    if (!grown)
        return -1;
    memcpy(grown + b->len, data, len);
    b->data = grown;
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int tu_append(void *user, const char *data, size_t len)
{
    char **text = user;
    size_t old = *text ? strlen(*text) : 0;
    char *grown = realloc(*text, old + len + 1);
    if (!grown)
        return -1;
    memcpy(grown + old, data, len);
    grown[old + len] = '\0';
    *text = grown;
    return 0;
}

static char *slurp(FILE *f)
{
    buffer b = {NULL, 0};
    char chunk[4096];
    size_t n;
    rewind(f);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        assert_int_equal(append(&b, chunk, n), 0);
    if (!b.data)
        b.data = calloc(1, 1);
    return b.data;
}

int tu_run(const char *command, char **out_stdout, char **out_stderr)
{
    char out_name[] = "/tmp/kvshard_test_out_XXXXXX";
    char err_name[] = "/tmp/kvshard_test_err_XXXXXX";
    int out_fd = mkstemp(out_name);
    int err_fd = mkstemp(err_name);
    assert_true(out_fd >= 0 && err_fd >= 0);
    size_t len = strlen(command) + 2 * sizeof out_name + 32;
    char *line = malloc(len);
    assert_non_null(line);
    snprintf(line, len, "%s >%s 2>%s </dev/null", command, out_name, err_name);
    int status = system(line);
    free(line);
    FILE *out = fdopen(out_fd, "rb");
    FILE *errf = fdopen(err_fd, "rb");
    assert_true(out && errf);
    if (out_stdout)
        *out_stdout = slurp(out);
    if (out_stderr)
        *out_stderr = slurp(errf);
    fclose(out);
    fclose(errf);
    unlink(out_name);
    unlink(err_name);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *tu_run_ok(const char *command)
{
    char *out = NULL, *err = NULL;
    int status = tu_run(command, &out, &err);
    if (status != 0)
        print_error("%s\nexited %d:\n%s\n", command, status, err ? err : "");
    assert_int_equal(status, 0);
    free(err);
    return out;
}

void tu_line_after(char *out, size_t cap, const char *text, const char *marker)
{
    const char *line = strstr(text, marker);
    if (!line)
        print_error("no \"%s\" in:\n%s\n", marker, text);
    assert_non_null(line);
    line += strlen(marker);
    const char *end = strchr(line, '\n');
    assert_non_null(end);
    snprintf(out, cap, "%.*s", (int)(end - line), line);
}

void tu_assert_rank_layers(const kvshard_plan *plan, uint32_t plan_rank, const uint32_t *expected,
                           size_t count)
{
    const uint32_t *layers = NULL;
    size_t n = 0;
    assert_int_equal(kvshard_plan_rank_layers(&layers, &n, plan, plan_rank), KVSHARD_OK);
    assert_int_equal(n, count);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(layers[i], expected[i]);
}

int tu_num_blocks(uint64_t *out, const kvshard_plan *plan, uint64_t memory, kvshard_error *err)
{
    kvshard_budget budget = KVSHARD_BUDGET_INIT;
    kvshard_blocks blocks = KVSHARD_BLOCKS_INIT;
    budget.memory_per_rank = memory;
    int rc = kvshard_plan_blocks_for(&blocks, plan, KVSHARD_ALL_RANKS, &budget, err);
    if (rc == KVSHARD_OK)
        *out = blocks.num_blocks;
    return rc;
}

void tu_set(kvshard_settings *settings, const char *key, const char *value)
{
    kvshard_error err;
    tu_assert_ok(kvshard_settings_set(settings, key, value, "test", &err), &err);
}

kvshard_settings *tu_settings(const char *key, ...)
{
    kvshard_settings *s = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_settings_create(&s, NULL, &err), &err);
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; k; k = va_arg(ap, const char *))
        tu_set(s, k, va_arg(ap, const char *));
    va_end(ap);
    return s;
}

uint64_t tu_figure(const kvshard_plan *plan, const char *name)
{
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_capacity_figure(&f, plan, name), KVSHARD_OK);
    if (f.type != KVSHARD_FIGURE_UINT)
        print_error("capacity figure %s has no value\n", name);
    assert_int_equal(f.type, KVSHARD_FIGURE_UINT);
    return f.uint_value;
}

kvshard_plan_model_info tu_plan_model(const kvshard_plan *plan)
{
    kvshard_plan_model_info m = KVSHARD_PLAN_MODEL_INFO_INIT;
    assert_int_equal(kvshard_plan_model(&m, plan), KVSHARD_OK);
    return m;
}

bool tu_has_figure(const kvshard_plan *plan, const char *name)
{
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    assert_int_equal(kvshard_plan_capacity_figure(&f, plan, name), KVSHARD_OK);
    return f.type != KVSHARD_FIGURE_NULL;
}

int tu_deployment_args(kvshard_deployment **out, kvshard_error *err, const char *model,
                       size_t count, const char *const *args)
{
    char *path = strncmp(model, "models/", 7) == 0 ? tu_example_path(model) : tu_data_path(model);
    *out = NULL;
    int rc = kvshard_deployment_load_file(out, path, NULL, err);
    free(path);
    if (rc == KVSHARD_OK && (rc = kvshard_deployment_apply_args(*out, count, args, 0, err)) != 0) {
        kvshard_deployment_free(*out);
        *out = NULL;
    }
    return rc;
}

int tu_plan_flags(kvshard_plan **out, kvshard_error *err, const char *model, ...)
{
    const char *args[40];
    size_t n = 0;
    va_list ap;
    va_start(ap, model);
    for (const char *a = va_arg(ap, const char *); a && n < 40; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    kvshard_deployment *dep = NULL;
    int rc = tu_deployment_args(&dep, err, model, n, args);
    *out = NULL;
    if (rc == KVSHARD_OK)
        rc = kvshard_deployment_plan(out, dep, err);
    kvshard_deployment_free(dep);
    return rc;
}

kvshard_figure tu_engine_figure(const kvshard_plan *p, const char *name)
{
    kvshard_figure f = KVSHARD_FIGURE_INIT;
    int rc = kvshard_plan_engine_figure(&f, p, name);
    if (rc != KVSHARD_OK)
        print_error("no engine figure \"%s\"\n", name);
    assert_int_equal(rc, KVSHARD_OK);
    return f;
}

uint64_t tu_efig(const kvshard_plan *p, const char *name)
{
    kvshard_figure f = tu_engine_figure(p, name);
    if (f.type != KVSHARD_FIGURE_UINT)
        print_error("engine figure \"%s\" is not an integer (type %d)\n", name, (int)f.type);
    assert_int_equal(f.type, KVSHARD_FIGURE_UINT);
    return f.uint_value;
}

bool tu_efig_null(const kvshard_plan *p, const char *name)
{
    return tu_engine_figure(p, name).type == KVSHARD_FIGURE_NULL;
}

bool tu_efig_bool(const kvshard_plan *p, const char *name)
{
    kvshard_figure f = tu_engine_figure(p, name);
    assert_int_equal(f.type, KVSHARD_FIGURE_BOOL);
    return f.bool_value;
}

const char *tu_efig_text(const kvshard_plan *p, const char *name)
{
    kvshard_figure f = tu_engine_figure(p, name);
    assert_int_equal(f.type, KVSHARD_FIGURE_TEXT);
    return f.text_value;
}

double tu_efig_double(const kvshard_plan *p, const char *name)
{
    kvshard_figure f = tu_engine_figure(p, name);
    assert_int_equal(f.type, KVSHARD_FIGURE_DOUBLE);
    return f.double_value;
}

void tu_assert_near(double got, double want, double tolerance)
{
    if (fabs(got - want) > tolerance)
        print_error("got %.6f, want %.6f\n", got, want);
    assert_true(fabs(got - want) <= tolerance);
}

void tu_assert_contains(const char *haystack, const char *needle)
{
    if (!strstr(haystack, needle))
        print_error("expected to find\n  %s\nin\n%s\n", needle, haystack);
    assert_non_null(strstr(haystack, needle));
}

const char *tu_warning_message(const kvshard_plan *p, kvshard_warning_code code)
{
    for (size_t i = 0; i < kvshard_plan_warning_count(p); i++) {
        kvshard_warning_code c;
        const char *m;
        assert_int_equal(kvshard_plan_warning(&c, &m, p, i), KVSHARD_OK);
        if (c == code)
            return m;
    }
    return NULL;
}
