/* Draft (MTP) layers: the model's draft steps come after its decoder layers
 * and are counted only with speculative tokens. What each step caches, by
 * the first rule that applies:
 *   1. a compressed model: one compressed layer whose ratio is
 *      compress_ratios[L + d] (0 when the list is shorter, or when
 *      layer_types made the model compressed);
 *   2. layer_types with L + n_d entries: entry L + d, full or sliding;
 *   3. mtp_layer_types (or mtp_layers_block_type): the layers of one step,
 *      repeated for every step;
 *   4. mtp_hybrid_override_pattern: one step's pattern, * for attention,
 *      E and - for blocks without a cache;
 *   5. otherwise one full-attention layer per step. */
#include "model/draft.h"

#include <stdio.h>
#include <string.h>

#define FULL ((uint8_t)KVSHARD_LAYER_FULL_ATTENTION)
#define SLIDING ((uint8_t)KVSHARD_LAYER_SLIDING_ATTENTION)
#define COMPRESSED ((uint8_t)KVSHARD_LAYER_COMPRESSED)
#define NOTHING UINT8_MAX
#define UNKNOWN_NAME (UINT8_MAX - 1) /* a name no draft layer has */

/* The kind a draft layer's name gives: full_attention and attention a
 * full-attention layer, sliding_attention a sliding one, moe and mlp none
 * (only where `blocks` allows them); UNKNOWN_NAME for any other name. */
static uint8_t draft_kind(const kvshard__node *item, bool blocks)
{
    if (item->kind != KVSHARD__NODE_SCALAR)
        return UNKNOWN_NAME;
    const char *s = item->text;
    size_t n = item->count;
    if (kvshard_text__is(s, n, "full_attention") || kvshard_text__is(s, n, "attention"))
        return FULL;
    if (kvshard_text__is(s, n, "sliding_attention"))
        return SLIDING;
    if (blocks && (kvshard_text__is(s, n, "moe") || kvshard_text__is(s, n, "mlp")))
        return NOTHING;
    return UNKNOWN_NAME;
}

/* One more draft layer that keeps a cache; ELIMIT past the bound. */
static int add(kvshard__reader *r, uint8_t kind, uint8_t ratio, uint8_t flags,
               const kvshard__node *at)
{
    if (kind == NOTHING)
        return KVSHARD_OK;
    if (r->draft_count == KVSHARD__MAX_DRAFT_LAYERS)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELIMIT, at,
                                 "the draft steps keep more than %u layers with a cache",
                                 KVSHARD__MAX_DRAFT_LAYERS);
    kvshard__class *c = &r->draft[r->draft_count++];
    c->kind = kind;
    c->ratio = ratio;
    c->flags = flags;
    return KVSHARD_OK;
}

/* Rule 1: compressed draft layers, each keeping its stream. */
static int compressed_drafts(kvshard__reader *r, uint32_t L)
{
    kvshard__iter it = {0};
    kvshard__node item = {0};
    bool listed = r->compressed == 1;
    if (listed) {
        it = kvshard_tape__iter_begin(r->doc, &r->ratio_list);
        for (uint32_t i = 0; i < L; i++)
            kvshard_tape__iter_next(r->doc, &it, &item);
    }
    for (uint32_t d = 0; d < r->draft_steps; d++) {
        uint64_t ratio = 0;
        /* The ratios were checked with the decoder layers'. */
        if (listed && kvshard_tape__iter_next(r->doc, &it, &item))
            kvshard_tape__node_uint(&ratio, r->doc, &item, "compress_ratios", 0, 128, NULL);
        uint8_t flags = ratio > 0 ? KVSHARD__LAYER_STREAM : 0;
        if (ratio == 4)
            flags |= KVSHARD__LAYER_INDEX_KEY;
        int rc = add(r, COMPRESSED, (uint8_t)ratio, flags, &r->text);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

/* Rule 2: layer_types entries L.. name the draft layers. */
static int listed_drafts(kvshard__reader *r, uint32_t L)
{
    const char *key = "layer_types";
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, &r->layer_list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        if (i < L)
            continue;
        uint8_t kind = draft_kind(&item, false);
        if (kind == UNKNOWN_NAME) {
            char shown[64] = "";
            if (item.kind == KVSHARD__NODE_SCALAR)
                kvshard_error__excerpt(shown, sizeof shown, item.text, item.count, 40);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s[%u]: a draft layer must be full_attention, attention or "
                                     "sliding_attention, not \"%s\"",
                                     key, i, shown);
        }
        int rc = add(r, kind, 0, 0, &item);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

/* Rule 3: the layers of one step, repeated for every step. */
static int step_list(kvshard__reader *r, const kvshard__node *list, const char *key)
{
    int rc = kvshard_tape__node_expect(r->doc, list, KVSHARD__NODE_SEQUENCE, key, r->err);
    if (rc)
        return rc;
    uint8_t kinds[64];
    if (list->count > sizeof kinds)
        return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELIMIT, list,
                                 "%s has %u entries; one draft step holds at most %zu layers", key,
                                 list->count, sizeof kinds);
    kvshard__iter it = kvshard_tape__iter_begin(r->doc, list);
    kvshard__node item = {0};
    for (uint32_t i = 0; kvshard_tape__iter_next(r->doc, &it, &item); i++) {
        bool scalar = item.kind == KVSHARD__NODE_SCALAR;
        uint8_t kind = draft_kind(&item, true);
        if (kind == UNKNOWN_NAME) {
            char shown[64] = "";
            if (scalar)
                kvshard_error__excerpt(shown, sizeof shown, item.text, item.count, 40);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, &item,
                                     "%s[%u]: \"%s\" is no draft layer kvshard plans (expected "
                                     "full_attention, attention, sliding_attention, moe or mlp)",
                                     key, i, shown);
        }
        kinds[i] = kind;
    }
    for (uint32_t d = 0; d < r->draft_steps; d++) {
        for (uint32_t i = 0; i < list->count; i++) {
            if ((rc = add(r, kinds[i], 0, 0, list)) != 0)
                return rc;
        }
    }
    return KVSHARD_OK;
}

/* Rule 4: Nemotron 3's mtp_hybrid_override_pattern for one step. */
static int step_pattern(kvshard__reader *r, const kvshard__node *v)
{
    const char *s;
    size_t len;
    const char *key = "mtp_hybrid_override_pattern";
    int rc = kvshard_tape__node_string(&s, &len, r->doc, v, key, r->err);
    if (rc)
        return rc;
    for (size_t i = 0; i < len; i++) {
        if (s[i] != '*' && s[i] != 'E' && s[i] != '-') {
            char shown[16];
            kvshard_error__excerpt(shown, sizeof shown, s + i, 1, 1);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELAYERTYPE, v,
                                     "%s[%zu]: '%s' is no draft layer kvshard plans (expected * "
                                     "for attention, E or - for a block without a cache; a draft "
                                     "layer with recurrent state is not run)",
                                     key, i, shown);
        }
    }
    for (uint32_t d = 0; d < r->draft_steps; d++) {
        for (size_t i = 0; i < len; i++) {
            if ((rc = add(r, s[i] == '*' ? FULL : NOTHING, 0, 0, v)) != 0)
                return rc;
        }
    }
    return KVSHARD_OK;
}

int kvshard_draft__read_draft_layers(kvshard__reader *r)
{
    uint32_t L = r->model->info.num_layers;
    kvshard__node v = {0};
    int rc;
    r->draft_count = 0;
    if (r->draft_steps == 0)
        rc = KVSHARD_OK;
    else if (r->compressed)
        rc = compressed_drafts(r, L);
    else if (r->layer_list_drafts)
        rc = listed_drafts(r, L);
    else if (kvshard__get(r, &r->text, KVSHARD__KEY_MTP_LAYER_TYPES, &v))
        rc = step_list(r, &v, "mtp_layer_types");
    else if (kvshard__get(r, &r->text, KVSHARD__KEY_MTP_LAYERS_BLOCK_TYPE, &v))
        rc = step_list(r, &v, "mtp_layers_block_type");
    else if (kvshard__get(r, &r->text, KVSHARD__KEY_MTP_HYBRID_OVERRIDE_PATTERN, &v))
        rc = step_pattern(r, &v);
    else {
        rc = KVSHARD_OK;
        for (uint32_t d = 0; d < r->draft_steps && rc == KVSHARD_OK; d++)
            rc = add(r, FULL, 0, 0, &r->text);
    }
    if (rc == KVSHARD_OK)
        r->model->info.num_draft_layers = r->draft_count;
    return rc;
}
