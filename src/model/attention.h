/* The reader of a config's attention and model dtype (attention.c). */
#ifndef KVSHARD_MODEL_ATTENTION_H
#define KVSHARD_MODEL_ATTENTION_H

#include "model/reader.h"

/* The model dtype: the text config's dtype or torch_dtype, then the top
 * level's; bfloat16 when none. */
int kvshard_attention__read_model_dtype(kvshard_dtype *out, const kvshard__reader *r);

/* head_dim as attention reads it: head_dim, attention_head_dim, else
 * hidden_size (Zamba2: twice it) / `heads`, which must divide. Lightning
 * state (states.c) shares it. */
int kvshard_attention__read_head_dim(uint32_t *out, const kvshard__reader *r, uint32_t heads,
                           const char *why);

/* The attention type (compressed for a compressed model, MLA when
 * kv_lora_rank is positive, else GQA) and the figures of the caches the
 * layers and draft layers keep. */
int kvshard_attention__read_attention(kvshard__reader *r);

/* The window of sliding and compressed layers, and the chunk of chunked
 * layers, when some layer keeps one. */
int kvshard_attention__read_windows(kvshard__reader *r);

#endif /* KVSHARD_MODEL_ATTENTION_H */
