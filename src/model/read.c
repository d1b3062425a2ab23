/* Reading a whole model config: the order in which its parts are read, and
 * the model object they fill. */
#include "model/read.h"

#include "model/attention.h"
#include "model/draft.h"
#include "model/index.h"
#include "model/reader.h"
#include "model/rules.h"
#include "model/states.h"

#include <string.h>

/* Keys of caches kvshard does not model: a plan by another rule would be
 * wrong in size, silently, so each is refused by name. */
static const struct {
    kvshard__key key;
    const char *why;
} refused[] = {
    {KVSHARD__KEY_BLOCK_CONFIGS, "per-layer attention geometry; kvshard reads one geometry per "
                                 "layer kind"},
    {KVSHARD__KEY_MB_PER_LAYER, "a cross-decoder reusing one layer's KV, and gated memory units "
                                "of sizes no published rule fixes"},
    {KVSHARD__KEY_CROSS_ATTENTION_LAYERS, "cross-attention layers, which cache the image "
                                          "tokens' keys rather than the text's"},
    {KVSHARD__KEY_INDEX_KPOOL, "pooled indexer keys, of a size no published rule fixes"},
    {KVSHARD__KEY_INDEXER_COMPRESS_RATIO, "block-compressed indexer keys"},
    {KVSHARD__KEY_LOCAL_LAYER_IDS, "local-attention layers whose window rule kvshard has not "
                                   "confirmed"},
};

static int refuse_unmodeled(const kvshard__reader *r)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        kvshard__node v = {0};
        if (kvshard__get(r, &r->text, refused[i].key, &v)) {
            const char *name = kvshard_reader__key_name(refused[i].key);
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_EUNMODELED, &v,
                                     "%s: kvshard does not model the cache that %s describes (%s)",
                                     name, name, refused[i].why);
        }
    }
    return KVSHARD_OK;
}

/* The draft (MTP) steps: num_nextn_predict_layers, else
 * mtp_num_hidden_layers, else none. */
static int read_draft_steps(kvshard__reader *r)
{
    bool found;
    int rc = kvshard_reader__optional_dim(&r->draft_steps, &found, r, &r->text,
                                   KVSHARD__KEY_NUM_NEXTN_PREDICT_LAYERS, 0,
                                   KVSHARD__MAX_DRAFT_LAYERS);
    if (rc == KVSHARD_OK && !found)
        rc = kvshard_reader__optional_dim(&r->draft_steps, &found, r, &r->text,
                                   KVSHARD__KEY_MTP_NUM_HIDDEN_LAYERS, 0,
                                   KVSHARD__MAX_DRAFT_LAYERS);
    return rc;
}

/* The cache classes of the decoder layers, then of the draft layers with
 * the number of draft layers of each. */
static int read_classes(kvshard__reader *r)
{
    kvshard_model *m = r->model;
    kvshard__model_info *in = &m->info;
    int rc = kvshard_model__classes(m, r->err);
    if (rc)
        return rc;
    bool dsa = in->attention == KVSHARD_ATTENTION_MLA && in->has_indexer;
    if (r->draft_count) {
        m->draft_class = kvshard_alloc__bytes(&m->alloc, r->draft_count, 1);
        if (!m->draft_class)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ENOMEM, &r->text, "out of memory");
    }
    for (uint32_t d = 0; d < r->draft_count; d++) {
        kvshard__class k = r->draft[d];
        /* A DSA model's draft layers carry a full indexer. */
        if (dsa && k.kind == KVSHARD_LAYER_FULL_ATTENTION)
            k.flags |= KVSHARD__LAYER_INDEX_KEY;
        uint8_t c = kvshard_model__class_of(in, k.kind, k.ratio, k.flags);
        if (c == UINT8_MAX)
            return kvshard_marks__fail(r->doc, r->err, KVSHARD_ELIMIT, &r->text,
                                     "the layers and draft layers cache more than %u distinct "
                                     "kinds of entries",
                                     KVSHARD__MAX_CLASSES);
        in->draft_census[c]++;
        m->draft_class[d] = c;
    }
    return KVSHARD_OK;
}

/* What engines read of a config beside its caches: the longest context
 * (text config first), whether it carries a vision model, and whether its
 * output head is the embedding. */
static int read_engine_figures(kvshard__reader *r)
{
    kvshard__model_info *in = &r->model->info;
    kvshard__node v = {0};
    in->multimodal = kvshard__get(r, &r->top, KVSHARD__KEY_VISION_CONFIG, &v);
    bool found;
    int rc = kvshard_reader__optional_dim(&in->max_position_embeddings, &found, r, &r->text,
                                   KVSHARD__KEY_MAX_POSITION_EMBEDDINGS, 1, UINT32_MAX);
    if (rc == KVSHARD_OK && !found && r->text.id != r->top.id)
        rc = kvshard_reader__optional_dim(&in->max_position_embeddings, &found, r, &r->top,
                                   KVSHARD__KEY_MAX_POSITION_EMBEDDINGS, 1, UINT32_MAX);
    /* Where the weights sit: a tied head is the embedding again. */
    if (rc == KVSHARD_OK && (kvshard__get(r, &r->text, KVSHARD__KEY_TIE_WORD_EMBEDDINGS, &v) ||
                             kvshard__get(r, &r->top, KVSHARD__KEY_TIE_WORD_EMBEDDINGS, &v)))
        rc = kvshard_reader__read_bool(&in->tie_word_embeddings, r, &v, "tie_word_embeddings");
    return rc;
}

static int read_model(kvshard__reader *r)
{
    kvshard_model *m = r->model;
    kvshard__model_info *in = &m->info;
    int rc;
    if ((rc = refuse_unmodeled(r)) != 0 ||
        (rc = kvshard_attention__read_model_dtype(&in->dtype, r)) != 0 ||
        (rc = read_draft_steps(r)) != 0 || (rc = kvshard_rules__read_layer_kinds(r)) != 0)
        return rc;
    kvshard_model__count_kinds(m);
    if ((rc = kvshard_draft__read_draft_layers(r)) != 0 ||
        (rc = kvshard_attention__read_attention(r)) != 0 ||
        (rc = kvshard_attention__read_windows(r)) != 0 ||
        (rc = kvshard_index__read_index_keys(r)) != 0)
        return rc;
    if (in->num_state > 0 && (rc = kvshard_states__read_state(r)) != 0)
        return rc;
    if ((rc = read_classes(r)) != 0 || (rc = read_engine_figures(r)) != 0)
        return rc;
    /* Work out where the figures checked at plan time stand, in one pass. */
    _Static_assert(KVSHARD__SITE_COUNT <= KVSHARD__DOC_MARKS_MAX,
                   "every site's mark is found in one pass over the text");
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
    kvshard_marks__of(r->doc, offsets, marks, n);
    for (size_t i = 0; i < n; i++)
        m->sites[used[i]].mark = marks[i];
    return KVSHARD_OK;
}

int kvshard_model__from_node(kvshard_model **out, const kvshard__doc *doc,
                             const kvshard__node *root, const kvshard_allocator *alloc,
                             kvshard_error *err)
{
    if (root->kind != KVSHARD__NODE_MAPPING)
        /* The contents of a file that is not a config are not echoed. */
        return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, root,
                                 "model config: expected a mapping, found %s",
                                 root->kind == KVSHARD__NODE_SEQUENCE ? "a list" : "a scalar");
    kvshard__reader r;
    r.doc = doc;
    r.top = *root;
    r.text = *root;
    r.err = err;
    r.model = NULL;
    r.draft_steps = 0;
    r.compressed = 0;
    r.layer_list_drafts = false;
    r.draft_count = 0;
    memset(r.site_offsets, 0, sizeof r.site_offsets);
    r.text_keys.map = UINT32_MAX;
    kvshard_reader__scan_keys(&r.top_keys, doc, root);
    kvshard__node tc = {0}, type = {0}, layers = {0};
    int rc;
    if (kvshard__get(&r, root, KVSHARD__KEY_TEXT_CONFIG, &tc)) {
        if ((rc = kvshard_tape__node_expect(doc, &tc, KVSHARD__NODE_MAPPING, "text_config", err)) !=
            0)
            return rc;
        r.text = tc;
        kvshard_reader__scan_keys(&r.text_keys, doc, &tc);
    }
    const char *type_text = "";
    size_t type_len = 0;
    if (kvshard__get(&r, root, KVSHARD__KEY_MODEL_TYPE, &type) &&
        (rc = kvshard_tape__node_string(&type_text, &type_len, doc, &type, "model_type", err)) != 0)
        return rc;
    if (!kvshard__get(&r, &r.text, KVSHARD__KEY_NUM_HIDDEN_LAYERS, &layers))
        return kvshard_reader__missing(&r, &r.text, KVSHARD__KEY_NUM_HIDDEN_LAYERS,
                                "the number of decoder layers");
    uint32_t L;
    if ((rc = kvshard_reader__read_dim(&L, &r, &layers, "num_hidden_layers", 1,
                                       KVSHARD_MAX_LAYERS)) != 0)
        return rc;
    if ((rc = kvshard_model__new(&r.model, alloc, doc->source, type_text, type_len, L, err)) != 0)
        return rc;
    if ((rc = read_model(&r)) != 0) {
        kvshard_model_free(r.model);
        return rc;
    }
    *out = r.model;
    return KVSHARD_OK;
}

