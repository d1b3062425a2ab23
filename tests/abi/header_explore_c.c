/* kvshard/output.h and kvshard/explore.h as a C11 client sees them: each
 * self-contained (output.h comes first, before anything else), built with
 * -std=c11 -pedantic -Werror. Their option structs' *_INIT macros set their
 * sizes, and the library takes them. */
#include "kvshard/output.h"
#include "kvshard/explore.h"

#include <stdio.h>

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

static int discard(void *user, const char *data, size_t len)
{
    (void)user;
    (void)data;
    (void)len;
    return 0;
}

int main(void)
{
    kvshard_compare_options compare = KVSHARD_COMPARE_OPTIONS_INIT;
    kvshard_fit_options fit = KVSHARD_FIT_OPTIONS_INIT;
    kvshard_report_options report = KVSHARD_REPORT_OPTIONS_INIT;
    check(compare.size == sizeof compare && !compare.sweep_pp, "KVSHARD_COMPARE_OPTIONS_INIT");
    check(fit.size == sizeof fit && fit.gpus_per_node == 0, "KVSHARD_FIT_OPTIONS_INIT");
    check(report.size == sizeof report && report.argc == 0, "KVSHARD_REPORT_OPTIONS_INIT");
    check(kvshard_report_write_html(NULL, NULL, &report, discard, NULL) == KVSHARD_EINVAL,
          "kvshard_report_write_html(NULL plan)");
    check(kvshard_comparison_create(NULL, NULL, NULL, &compare, NULL, NULL) == KVSHARD_EINVAL,
          "kvshard_comparison_create(NULL out)");
    check(kvshard_status_name(KVSHARD_OK) != NULL, "kvshard_status_name");
    printf("explore.h and output.h of kvshard %s\n", kvshard_version());
    return failures ? 1 : 0;
}
