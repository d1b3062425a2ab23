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
/* The allocator load options ask for (the C library's when NULL). */
kvshard_allocator kvs_load_allocator(const kvshard_load_options *options);

#endif /* KVSHARD_MODEL_H */
