/* The reader of a config's draft (MTP) layers (draft.c). */
#ifndef KVSHARD_MODEL_DRAFT_H
#define KVSHARD_MODEL_DRAFT_H

#include "model/reader.h"

/* The draft layers of the model's draft steps. */
int kvshard_draft__read_draft_layers(kvshard__reader *r);

#endif /* KVSHARD_MODEL_DRAFT_H */
