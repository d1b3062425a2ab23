/* Reading a model config's keys from a parsed document: shared by the
 * layer-kind rules, the state kinds and the attention figures. */
#ifndef KVSHARD_MODEL_READER_H
#define KVSHARD_MODEL_READER_H

#include "model/model.h"
#include "text/yaml_doc.h"

typedef struct kvshard__reader {
    const kvshard__doc *doc;
    kvshard__node top;  /* the whole config */
    kvshard__node text; /* text_config, or the top level */
    kvshard_error *err;
    kvshard_model *model; /* being filled */
    size_t site_offsets[KVSHARD__SITE_COUNT];
} kvshard__reader;

/* The value of `key` in `map` when present and not null (null counts as
 * absent everywhere in a model config). */
bool kvshard__get(const kvshard__reader *r, const kvshard__node *map, const char *key,
                  kvshard__node *out);
/* The first present key of a NULL-terminated list of aliases; its name into
 * *out_key. */
bool kvshard__get_any(const kvshard__reader *r, const kvshard__node *map, const char *const *keys,
                      kvshard__node *out, const char **out_key);
/* EMISSING at `map`: "missing key "key" (why)". */
int kvshard__missing(const kvshard__reader *r, const kvshard__node *map, const char *key,
                     const char *why);
/* A dimension in [min, max] from `v`, which holds `key`. */
int kvshard__read_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *v,
                      const char *key, uint32_t min, uint32_t max);
/* A required dimension (1 .. KVSHARD__MAX_DIMENSION) of `map`. */
int kvshard__require_dim(uint32_t *out, const kvshard__reader *r, const kvshard__node *map,
                         const char *key, const char *why);
/* model_type at the top level or in the text config is `type` (or, with
 * `prefix`, starts with it). */
bool kvshard__model_type_is(const kvshard__reader *r, const char *type, bool prefix);
/* Remember where a figure checked at plan time was read. */
void kvshard__set_site(kvshard__reader *r, int site, const char *key, uint32_t value,
                       const kvshard__node *at);

/* head_dim as attention reads it: head_dim, attention_head_dim, else
 * hidden_size (Zamba2: twice it) / `heads`, which must divide (model.c). */
int kvshard__read_head_dim(uint32_t *out, const kvshard__reader *r, uint32_t heads,
                           const char *why);

/* Layer kinds, by the first rule that applies (kinds.c). */
int kvshard__read_layer_kinds(kvshard__reader *r);
/* The state kind, its dimensions and dtype (state.c). */
int kvshard__read_state(kvshard__reader *r);

#endif /* KVSHARD_MODEL_READER_H */
