/* The readers of a model config's parts, each filling its share of the
 * model: the layer kinds (rules.c), the recurrent state (state.c), the
 * attention and the dtype (attention.c). read.c calls them in order; they
 * use the toolkit of reader.h and never each other, but for the head dim,
 * which lightning state shares with attention. */
#ifndef KVSHARD_MODEL_READ_H
#define KVSHARD_MODEL_READ_H

#include "model/reader.h"

/* Layer kinds, by the first rule that applies (rules.c). */
int kvshard__read_layer_kinds(kvshard__reader *r);

/* The draft layers of the model's draft steps (draft.c). */
int kvshard__read_draft_layers(kvshard__reader *r);

/* The state kind, its dimensions and dtype (states.c). */
int kvshard__read_state(kvshard__reader *r);

/* The model dtype: the text config's dtype or torch_dtype, then the top
 * level's; bfloat16 when none (attention.c). */
int kvshard__read_model_dtype(kvshard_dtype *out, const kvshard__reader *r);

/* head_dim as attention reads it: head_dim, attention_head_dim, else
 * hidden_size (Zamba2: twice it) / `heads`, which must divide
 * (attention.c). */
int kvshard__read_head_dim(uint32_t *out, const kvshard__reader *r, uint32_t heads,
                           const char *why);

/* The attention type (compressed for a compressed model, MLA when
 * kv_lora_rank is positive, else GQA) and the figures of the caches the
 * layers and draft layers keep (attention.c). */
int kvshard__read_attention(kvshard__reader *r);

/* The window of sliding and compressed layers, and the chunk of chunked
 * layers, when some layer keeps one (attention.c). */
int kvshard__read_windows(kvshard__reader *r);

/* Which layers keep index keys, and which compressed layers keep their own
 * stream or read another's (index.c). */
int kvshard__read_index_keys(kvshard__reader *r);

#endif /* KVSHARD_MODEL_READ_H */
