/* Reading a whole model config (read.c): it calls the readers of the
 * config's parts in order, the layer kinds (rules.h), the draft layers
 * (draft.h), the recurrent state (states.h), the attention and the dtype
 * (attention.h) and the index keys (index.h). They use the toolkit of
 * reader.h and never each other, but for the head dim, which lightning
 * state shares with attention. */
#ifndef KVSHARD_MODEL_READ_H
#define KVSHARD_MODEL_READ_H

#include "model/model.h"
#include "text/yaml_doc.h"

/* Build a model from a parsed mapping; `doc->source` names it in errors. */
int kvshard_model__from_node(kvshard_model **out, const kvshard__doc *doc,
                             const kvshard__node *root, const kvshard_allocator *alloc,
                             kvshard_error *err);

#endif /* KVSHARD_MODEL_READ_H */
