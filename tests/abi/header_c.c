/* kvshard.h as a C11 client sees it: the header comes first so it must be
 * self-contained; built with -std=c11 -pedantic -Werror. Also checks the
 * compile-time version macros against kvshard_version() at run time. */
#include "kvshard/kvshard.h"

#include <stdio.h>
#include <string.h>

_Static_assert(KVSHARD_VERSION == ((KVSHARD_VERSION_MAJOR << 16) | (KVSHARD_VERSION_MINOR << 8) |
                                   KVSHARD_VERSION_PATCH),
               "KVSHARD_VERSION packs major, minor and patch");
_Static_assert(KVSHARD_VERSION_MINOR < 256 && KVSHARD_VERSION_PATCH < 256,
               "minor and patch fit their bytes");
_Static_assert(KVSHARD_OK == 0, "success is 0");

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

int main(void)
{
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", KVSHARD_VERSION_MAJOR, KVSHARD_VERSION_MINOR,
             KVSHARD_VERSION_PATCH);
    check(strcmp(expected, KVSHARD_VERSION_STRING) == 0,
          "KVSHARD_VERSION_STRING is MAJOR.MINOR.PATCH");
    check(kvshard_version() != NULL, "kvshard_version() is not NULL");
    if (kvshard_version())
        check(strcmp(kvshard_version(), KVSHARD_VERSION_STRING) == 0,
              "kvshard_version() matches KVSHARD_VERSION_STRING");

    /* The initialiser macros and the error struct are usable as written. */
    kvshard_options options = KVSHARD_OPTIONS_INIT;
    kvshard_load_options load = KVSHARD_LOAD_OPTIONS_INIT;
    kvshard_error err;
    memset(&err, 0, sizeof err);
    check(options.size == sizeof options, "KVSHARD_OPTIONS_INIT sets size");
    check(load.size == sizeof load, "KVSHARD_LOAD_OPTIONS_INIT sets size");
    check(kvshard_options_set(&options, "world_size", "8", NULL, &err) == KVSHARD_OK,
          "kvshard_options_set(world_size)");
    check(options.world_size == 8, "world_size is 8");
    check(strcmp(kvshard_strerror(KVSHARD_OK), "") != 0, "kvshard_strerror(0) names success");

    printf("kvshard %s (headers %s, 0x%06x)\n", kvshard_version(), KVSHARD_VERSION_STRING,
           (unsigned)KVSHARD_VERSION);
    return failures ? 1 : 0;
}
