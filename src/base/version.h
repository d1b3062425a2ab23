/* The version of the library loaded at run time: kvshard_version, which
 * kvshard.h declares (kvshard_version.h holds the headers' own). */
#ifndef KVSHARD_BASE_VERSION_H
#define KVSHARD_BASE_VERSION_H

#include "kvshard/kvshard.h"

#endif /* KVSHARD_BASE_VERSION_H */
