/* Model reading entry points shared with the deployment loader. */
#ifndef KVSHARD_MODEL_H
#define KVSHARD_MODEL_H

#include "yaml_doc.h"

/* Build a model from a parsed mapping; `doc->source` names it in errors. */
int kvs_model_from_node(kvshard_model **out, const kvs_doc *doc, const kvs_node *root,
                        const kvshard_allocator *alloc, kvshard_error *err);
/* Parse text and build a model from its root. */
int kvs_model_load_text(kvshard_model **out, const char *text, size_t len, const char *source,
                        const kvshard_allocator *alloc, kvshard_error *err);
/* Start a public load call: reset `err`, reject missing arguments (`args_ok`
 * false; `args` names them) and unknown option versions, and resolve the
 * allocator the options ask for. */
int kvs_begin_load(kvshard_allocator *alloc, bool args_ok, const char *args,
                   const kvshard_load_options *options, kvshard_error *err);

#endif /* KVSHARD_MODEL_H */
