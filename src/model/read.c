/* Reading a whole model config: the order in which its parts are read, and
 * the model object they fill. */
#include "model/load.h"
#include "model/read.h"

#include <string.h>

static int read_model(kvshard__reader *r)
{
    kvshard_model *m = r->model;
    kvshard__model_info *in = &m->info;
    const kvshard__node *t = &r->text;
    int rc;
    if ((rc = kvshard__read_model_dtype(&in->dtype, r)) != 0 || (rc = kvshard__read_layer_kinds(r)) != 0)
        return rc;
    kvshard__model_count_kinds(m);

    /* Draft layers: the first key present counts. */
    bool found;
    if ((rc = kvshard__optional_dim(&in->num_draft_layers, &found, r, t,
                           KVSHARD__KEY_NUM_NEXTN_PREDICT_LAYERS, 0, KVSHARD__MAX_DRAFT_LAYERS)) !=
        0)
        return rc;
    if (!found &&
        (rc = kvshard__optional_dim(&in->num_draft_layers, &found, r, t, KVSHARD__KEY_MTP_NUM_HIDDEN_LAYERS,
                           0, KVSHARD__MAX_DRAFT_LAYERS)) != 0)
        return rc;

    bool stores_kv = kvshard__num_kv_layers(in) + in->count[KVSHARD_LAYER_SLIDING_ATTENTION] +
                         in->num_draft_layers >
                     0;
    if ((rc = kvshard__read_attention(r, stores_kv)) != 0)
        return rc;
    if (in->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0 &&
        (rc = kvshard__require_dim(&in->sliding_window, r, t, KVSHARD__KEY_SLIDING_WINDOW,
                                   "sliding_attention layers keep the last sliding_window "
                                   "tokens")) != 0)
        return rc;
    if (in->num_state > 0 && (rc = kvshard__read_state(r)) != 0)
        return rc;
    /* Work out where the figures checked at plan time stand, in one pass. */
    size_t offsets[KVSHARD__SITE_COUNT];
    kvshard__mark marks[KVSHARD__SITE_COUNT];
    int used[KVSHARD__SITE_COUNT];
    size_t n = 0;
    for (int s = 0; s < KVSHARD__SITE_COUNT; s++) {
        if (m->sites[s].key) {
            used[n] = s;
            offsets[n++] = r->site_offsets[s];
        }
    }
    kvshard__doc_marks(r->doc, offsets, marks, n);
    for (size_t i = 0; i < n; i++)
        m->sites[used[i]].mark = marks[i];
    return KVSHARD_OK;
}

int kvshard__model_from_node(kvshard_model **out, const kvshard__doc *doc,
                             const kvshard__node *root, const kvshard_allocator *alloc,
                             kvshard_error *err)
{
    if (root->kind != KVSHARD__NODE_MAPPING)
        /* The contents of a file that is not a config are not echoed. */
        return kvshard__doc_fail(doc, err, KVSHARD_ETYPE, root,
                                 "model config: expected a mapping, found %s",
                                 root->kind == KVSHARD__NODE_SEQUENCE ? "a list" : "a scalar");
    kvshard__reader r;
    r.doc = doc;
    r.top = *root;
    r.text = *root;
    r.err = err;
    r.model = NULL;
    memset(r.site_offsets, 0, sizeof r.site_offsets);
    r.text_keys.map = UINT32_MAX;
    kvshard__scan_keys(&r.top_keys, doc, root);
    kvshard__node tc = {0}, type = {0}, layers = {0};
    int rc;
    if (kvshard__get(&r, root, KVSHARD__KEY_TEXT_CONFIG, &tc)) {
        if ((rc = kvshard__node_expect(doc, &tc, KVSHARD__NODE_MAPPING, "text_config", err)) != 0)
            return rc;
        r.text = tc;
        kvshard__scan_keys(&r.text_keys, doc, &tc);
    }
    const char *type_text = "";
    size_t type_len = 0;
    if (kvshard__get(&r, root, KVSHARD__KEY_MODEL_TYPE, &type) &&
        (rc = kvshard__node_string(&type_text, &type_len, doc, &type, "model_type", err)) != 0)
        return rc;
    if (!kvshard__get(&r, &r.text, KVSHARD__KEY_NUM_HIDDEN_LAYERS, &layers))
        return kvshard__missing(&r, &r.text, KVSHARD__KEY_NUM_HIDDEN_LAYERS,
                                "the number of decoder layers");
    uint32_t L;
    if ((rc = kvshard__read_dim(&L, &r, &layers, "num_hidden_layers", 1, KVSHARD_MAX_LAYERS)) != 0)
        return rc;
    if ((rc = kvshard__model_new(&r.model, alloc, doc->source, type_text, type_len, L, err)) != 0)
        return rc;
    if ((rc = read_model(&r)) != 0) {
        kvshard_model_free(r.model);
        return rc;
    }
    *out = r.model;
    return KVSHARD_OK;
}

