/* Run-time version of the library (kvshard_version.h holds the compile-time one). */
#include "base/version.h"

const char *kvshard_version(void)
{
    return KVSHARD_VERSION_STRING;
}
