/* Papercuts new users met: what the report says of the machine that wrote
 * it, blocks at a measured memory, fit's help and errors, and the capacity
 * of a plan whose stages have budgets of their own. */
#include "test_util.h"

#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* examples/NAME planned with the flags given (NULL-ended). */
static kvshard_plan *plan_example(const char *name, ...)
{
    const char *args[16];
    size_t n = 0;
    va_list ap;
    va_start(ap, name);
    for (const char *a = va_arg(ap, const char *); a && n < 16; a = va_arg(ap, const char *))
        args[n++] = a;
    va_end(ap);
    char *path = tu_example_path(name);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    tu_assert_ok(kvshard_deployment_apply_args(dep, n, args, 0, &err), &err);
    kvshard_plan *plan = NULL;
    tu_assert_ok(kvshard_deployment_plan(&plan, dep, &err), &err);
    kvshard_deployment_free(dep);
    return plan;
}

static char *report_of(const kvshard_plan *plan, int argc, const char *const *argv)
{
    kvshard_report_options about = KVSHARD_REPORT_OPTIONS_INIT;
    about.argc = argc;
    about.argv = argv;
    char *page = NULL;
    assert_int_equal(kvshard_report_write_html(plan, NULL, &about, tu_append, &page), KVSHARD_OK);
    return page;
}

/* The page names the file it was written to by its base name only, in
 * each spelling of the output flag: the directory is the writer's own. */
static void test_report_output_path(void **state)
{
    (void)state;
    kvshard_plan *plan = plan_example("qwen3_5_35b_a3b_tp4.yaml", NULL);
    const char *split[] = {"/opt/bin/kvshard", "report", "seed.yaml", "-o",
                           "/home/alice/shared/seed.html"};
    char *page = report_of(plan, 5, split);
    tu_assert_contains(page, "made by <code>kvshard report seed.yaml -o seed.html</code>");
    assert_null(strstr(page, "/home/alice"));
    free(page);
    const char *joined[] = {"kvshard", "report", "seed.yaml", "--output=/home/alice/seed.html"};
    page = report_of(plan, 4, joined);
    tu_assert_contains(page, "made by <code>kvshard report seed.yaml --output=seed.html</code>");
    assert_null(strstr(page, "/home/alice"));
    free(page);
    const char *spaced[] = {"kvshard", "report", "seed.yaml", "--output", "out/my page.html"};
    page = report_of(plan, 5, spaced);
    tu_assert_contains(page, "made by <code>kvshard report seed.yaml --output &#39;my "
                             "page.html&#39;</code>");
    free(page);
    kvshard_plan_free(plan);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_output_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
