// kvshard.h as a C++11 client sees it: extern "C" linkage, no C-only
// constructs; built with -std=c++11 -pedantic -Werror.
#include "kvshard/kvshard.h"

#include <cstdio>
#include <cstring>

static_assert(KVSHARD_VERSION == ((KVSHARD_VERSION_MAJOR << 16) | (KVSHARD_VERSION_MINOR << 8) |
                                  KVSHARD_VERSION_PATCH),
              "KVSHARD_VERSION packs major, minor and patch");

int main()
{
    int failures = 0;
    const char *v = kvshard_version();
    if (v == nullptr || std::strcmp(v, KVSHARD_VERSION_STRING) != 0) {
        std::fprintf(stderr, "FAIL: kvshard_version() is '%s', headers say '%s'\n",
                     v ? v : "(null)", KVSHARD_VERSION_STRING);
        failures++;
    }

    kvshard_options options = KVSHARD_OPTIONS_INIT;
    kvshard_load_options load = KVSHARD_LOAD_OPTIONS_INIT;
    kvshard_error err = kvshard_error();
    if (options.size != sizeof options || load.size != sizeof load) {
        std::fprintf(stderr, "FAIL: initialiser macros\n");
        failures++;
    }
    if (kvshard_options_set(&options, "ownership", "global", nullptr, &err) != KVSHARD_OK ||
        options.ownership != KVSHARD_OWNERSHIP_GLOBAL) {
        std::fprintf(stderr, "FAIL: kvshard_options_set(ownership): %s\n", err.message);
        failures++;
    }
    kvshard_plan *plan = nullptr;
    kvshard_plan_free(plan); // NULL is a no-op

    std::printf("kvshard %s from C++\n", v ? v : "(null)");
    return failures ? 1 : 0;
}
