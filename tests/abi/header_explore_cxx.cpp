// kvshard/output.h and kvshard/explore.h as a C++11 client sees them:
// extern "C" linkage, no C-only constructs; built with -std=c++11 -pedantic
// -Werror.
#include "kvshard/output.h"
#include "kvshard/explore.h"

#include <cstdio>

int main()
{
    kvshard_compare_options compare = KVSHARD_COMPARE_OPTIONS_INIT;
    kvshard_fit_options fit = KVSHARD_FIT_OPTIONS_INIT;
    kvshard_report_options report = KVSHARD_REPORT_OPTIONS_INIT;
    if (compare.size != sizeof compare || fit.size != sizeof fit || report.size != sizeof report) {
        std::fprintf(stderr, "FAIL: initialiser macros\n");
        return 1;
    }
    std::printf("explore.h and output.h from C++: %s\n", kvshard_status_name(KVSHARD_OK));
    return 0;
}
