/* Reading a whole configuration file into memory. */
#ifndef KVSHARD_TEXT_FILE_H
#define KVSHARD_TEXT_FILE_H

#include "base/error.h"

/* Read a whole regular file, at most KVSHARD_MAX_DOCUMENT_BYTES. The buffer
 * is NUL-terminated; free it with kvshard__free. */
int kvshard__read_file(char **out, size_t *out_len, const kvshard_allocator *a, const char *path,
                       kvshard_error *err);

#endif /* KVSHARD_TEXT_FILE_H */
