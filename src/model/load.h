/* Loading a model from a file or a string (load.c); a parsed mapping is
 * read by read.h. */
#ifndef KVSHARD_MODEL_LOAD_H
#define KVSHARD_MODEL_LOAD_H

#include "model/model.h"

/* Read a model file (or the config.json of a model directory). */
int kvshard_model__load_path(kvshard_model **out, const char *path, const kvshard_allocator *alloc,
                             kvshard_error *err);

/* Start a public call that reads text: reset `err`, reject missing arguments
 * (`args_ok` false; `args` names them) and unknown options, and resolve the
 * allocator the options ask for. */
int kvshard_load__begin_load(kvshard_allocator *alloc, bool args_ok, const char *args,
                        const kvshard_load_options *options, kvshard_error *err);

#endif /* KVSHARD_MODEL_LOAD_H */
