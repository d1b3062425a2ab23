/* gflags- and argparse-style arguments and flag files: the limits of one
 * call, and the words of the warning about what it skipped. */
#ifndef KVSHARD_DEPLOY_FLAGS_H
#define KVSHARD_DEPLOY_FLAGS_H

#include "kvshard/kvshard.h"

#include <stdint.h>

/* Flag files may name flag files; a cycle stops at this depth. */
#define KVSHARD_FLAGS__MAX_DEPTH 8
/* Fan-out is stopped by a budget over one whole call, all flag files
 * together: a file that names the next one many times, eight deep, would
 * otherwise read millions of files. A real engine's flag files are a few
 * files of a few hundred lines. */
#define KVSHARD_FLAGS__MAX_FILES 256u                  /* flag files opened */
#define KVSHARD_FLAGS__MAX_BYTES (16u * 1024u * 1024u) /* bytes of flag files read */
#define KVSHARD_FLAGS__MAX_FLAGS 65536u                /* flags, arguments and files together */

/* Earlier flags that flags applied under an argparse profile were
 * compared with, for the check that two spellings of one input agree, on
 * this thread: the work a command line of one input repeated would inflate,
 * read by the tests. Only ever incremented. */
extern _Thread_local uint64_t kvshard_flags__compared;

/* The message of the flags_ignored warning for what `deployment` skipped
 * (at least one argument): how many, under which profile, their names as
 * far as `cap` allows, and the engine profile that reads most of them. */
void kvshard_flags__ignored_message(char *buf, size_t cap, const kvshard_deployment *deployment);

#endif /* KVSHARD_DEPLOY_FLAGS_H */
