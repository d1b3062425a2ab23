/* Reading a whole configuration file into memory, safely. */
#ifndef KVSHARD_TEXT_FILE_H
#define KVSHARD_TEXT_FILE_H

#include "base/error.h"

/* Read a whole regular file, at most KVSHARD_MAX_DOCUMENT_BYTES (a file of
 * exactly that size is read; one byte more is ELIMIT). The file is opened
 * without blocking and checked before anything is read: a FIFO, a terminal,
 * a device or a socket is refused with EIO naming it. A file larger than the
 * limit is refused before it is read. Files that report size 0 (/proc) are
 * read to their end, or to one byte past the limit. A file that grows while
 * it is read is EIO rather than cut short. The buffer is NUL-terminated;
 * free it with kvshard_alloc__free. */
int kvshard_file__read_file(char **out, size_t *out_len, const kvshard_allocator *a,
                            const char *path, kvshard_error *err);

/* Which file a path led to, by device and inode: two paths to one file (a
 * hard link, a symbolic link, `..`) have the same. */
typedef struct kvshard__file_id {
    uint64_t dev;
    uint64_t ino;
} kvshard__file_id;

/* Told of a file the library opened for a run, with its identity as the
 * open descriptor gave it: the CLI keeps its output off every such file. */
typedef void (*kvshard__file_fn)(void *user, const char *path, kvshard__file_id id);

/* kvshard_file__read_file(), and the identity of the file read in *id. */
int kvshard_file__read_file_id(char **out, size_t *out_len, kvshard__file_id *id,
                          const kvshard_allocator *a, const char *path, kvshard_error *err);

/* The config file `path` stands for: itself, or DIR/config.json when it is a
 * directory (a Hugging Face model directory). A new string to free. */
int kvshard_file__config_path(char **out, const kvshard_allocator *a, const char *path,
                         kvshard_error *err);

#endif /* KVSHARD_TEXT_FILE_H */
