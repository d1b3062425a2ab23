/* The reader of a config's layer kinds (rules.c). */
#ifndef KVSHARD_MODEL_RULES_H
#define KVSHARD_MODEL_RULES_H

#include "model/reader.h"

/* Layer kinds, by the first rule that applies. */
int kvshard_rules__read_layer_kinds(kvshard__reader *r);

#endif /* KVSHARD_MODEL_RULES_H */
