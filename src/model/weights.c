/* Tensor classes by name, and each stage's share of a checkpoint.
 *
 * Placement, in order: a multimodal component; the first `layers`/`h`/
 * `blocks` followed by a number fixes the layer (what follows is the inner
 * name); `mtp` or a layer at L or past it is a draft tensor; a layer below L
 * a decoder tensor; else a top-level one (embedding, head, final norm or
 * other). Class, in order: at most one element is replicated; an inner
 * `experts` is an expert; else the inner components, last to first, meet
 * the first word of the table below that decides; else unknown. */
#include "model/weights.h"

#include "base/checked.h"
#include "text/scalar.h"

#include <stdlib.h>
#include <string.h>

/* ---- the words ---------------------------------------------------------------------- */

typedef enum role {
    R_NONE,
    R_MULTIMODAL, /* places a tensor with the multimodal towers */
    R_CONTAINER,  /* followed by a layer number */
    R_MTP,        /* a draft (multi-token prediction) module */
    R_EXPERTS,    /* routed experts */
    R_EMBED,      /* the embedding at the top level; vocab inside a layer */
    R_HEAD,       /* the output head at the top level; vocab inside a layer */
    R_VOCAB,      /* vocab rows inside a layer */
    R_SPLIT,      /* divided over T */
    R_SPLIT_ROW,  /* divided over T, but a bias of it is added once: replicated */
    R_KV,         /* k/v projections */
    R_QKV,        /* fused q/k/v projection */
    R_REPLICATED  /* whole on every rank */
} role;

/* The words of the rules, grouped by length so that a component is compared
 * only with words as long as itself. */
typedef struct word {
    const char *text;
    role role;
} word;
static const word words_1[] = {
    {"h", R_CONTAINER},
    {"D", R_SPLIT},
    {NULL, R_NONE},
};
static const word words_2[] = {
    {"fc", R_SPLIT}, {"w1", R_SPLIT}, {"w2", R_SPLIT_ROW}, {"w3", R_SPLIT}, {NULL, R_NONE},
};
static const word words_3[] = {
    {"mtp", R_MTP}, {"wte", R_EMBED}, {"fc1", R_SPLIT}, {"fc2", R_SPLIT_ROW}, {NULL, R_NONE},
};
static const word words_4[] = {
    {"gate", R_REPLICATED},
    {NULL, R_NONE},
};
static const word words_5[] = {
    {"dense", R_SPLIT_ROW},
    {"sinks", R_SPLIT},
    {"A_log", R_SPLIT},
    {NULL, R_NONE},
};
static const word words_6[] = {
    {"visual", R_MULTIMODAL}, {"layers", R_CONTAINER}, {"blocks", R_CONTAINER},
    {"q_proj", R_SPLIT},      {"o_proj", R_SPLIT_ROW}, {"conv1d", R_SPLIT},
    {"x_proj", R_SPLIT},      {"k_proj", R_KV},        {"v_proj", R_KV},
    {"router", R_REPLICATED}, {NULL, R_NONE},
};
static const word words_7[] = {
    {"experts", R_EXPERTS},    {"lm_head", R_HEAD},       {"up_proj", R_SPLIT},
    {"in_proj", R_SPLIT},      {"dt_bias", R_SPLIT},      {"dt_proj", R_SPLIT},
    {"indexer", R_REPLICATED}, {"eh_proj", R_REPLICATED}, {NULL, R_NONE},
};
static const word words_8[] = {
    {"q_b_proj", R_SPLIT}, {"out_proj", R_SPLIT_ROW},
    {"qkv_proj", R_QKV},   {"q_a_proj", R_REPLICATED},
    {NULL, R_NONE},
};
static const word words_9[] = {
    {"kv_b_proj", R_SPLIT}, {"gate_proj", R_SPLIT}, {"down_proj", R_SPLIT_ROW},
    {"in_proj_z", R_SPLIT}, {"in_proj_b", R_SPLIT}, {"in_proj_a", R_SPLIT},
    {NULL, R_NONE},
};
static const word words_10[] = {
    {"embeddings", R_EMBED},
    {"in_proj_ba", R_SPLIT},
    {NULL, R_NONE},
};
static const word words_11[] = {
    {"audio_tower", R_MULTIMODAL},
    {"audio_model", R_MULTIMODAL},
    {"shared_head", R_VOCAB},
    {"in_proj_qkv", R_SPLIT},
    {NULL, R_NONE},
};
static const word words_12[] = {
    {"vision_tower", R_MULTIMODAL},
    {"vision_model", R_MULTIMODAL},
    {"mm_projector", R_MULTIMODAL},
    {"embed_tokens", R_EMBED},
    {"gate_up_proj", R_SPLIT},
    {"in_proj_qkvz", R_SPLIT},
    {NULL, R_NONE},
};
static const word words_14[] = {
    {"vision_encoder", R_MULTIMODAL},
    {"tok_embeddings", R_EMBED},
    {NULL, R_NONE},
};
static const word words_15[] = {
    {"word_embeddings", R_EMBED},
    {NULL, R_NONE},
};
static const word words_18[] = {
    {"shared_expert_gate", R_REPLICATED},
    {"kv_a_proj_with_mqa", R_REPLICATED},
    {NULL, R_NONE},
};
static const word words_21[] = {
    {"multi_modal_projector", R_MULTIMODAL},
    {NULL, R_NONE},
};
static const word *const words_by_length[22] = {
    [1] = words_1,   [2] = words_2,   [3] = words_3,   [4] = words_4,
    [5] = words_5,   [6] = words_6,   [7] = words_7,   [8] = words_8,
    [9] = words_9,   [10] = words_10, [11] = words_11, [12] = words_12,
    [14] = words_14, [15] = words_15, [18] = words_18, [21] = words_21,
};

/* Components are compared whole: `gate` is the router, `gate_proj` the MLP,
 * `shared_experts` a container and never `experts`. */
static role role_of(const char *c, size_t n)
{
    if (n >= sizeof words_by_length / sizeof words_by_length[0] || !words_by_length[n])
        return R_NONE;
    for (const word *w = words_by_length[n]; w->text; w++) {
        if (w->text[0] == c[0] && memcmp(w->text, c, n) == 0)
            return w->role;
    }
    return R_NONE;
}

static bool has_norm(const char *c, size_t n)
{
    for (size_t i = 0; i + 4 <= n; i++) {
        if (memcmp(c + i, "norm", 4) == 0)
            return true;
    }
    return false;
}

/* A decimal number, saturated at UINT64_MAX; false for other text. */
static bool component_number(uint64_t *out, const char *c, size_t n)
{
    if (!kvshard_scalar__all_digits(c, n))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!kvshard__mul(&v, v, 10) || !kvshard__add(&v, v, (uint64_t)(c[i] - '0'))) {
            v = UINT64_MAX;
            break;
        }
    }
    *out = v;
    return true;
}

static uint32_t clamp_index(uint64_t v)
{
    return v >= KVSHARD__NO_LAYER ? KVSHARD__NO_LAYER - 1 : (uint32_t)v;
}

/* The component that starts at `at`: its length up to the next dot. */
static size_t component_len(const char *name, size_t len, size_t at)
{
    const char *dot = memchr(name + at, '.', len - at);
    return dot ? (size_t)(dot - (name + at)) : len - at;
}

/* The class of an inner name (what follows the layer number, or the whole
 * name of a tensor outside the layers). */
static kvshard__wclass class_of(const char *name, size_t len, uint64_t elements, bool gqa,
                                uint32_t *expert)
{
    *expert = KVSHARD__NO_EXPERT;
    if (elements <= 1)
        return KVSHARD__CLASS_REPLICATED; /* a scalar scale */
    for (size_t at = 0; at <= len;) {
        size_t n = component_len(name, len, at);
        if (role_of(name + at, n) == R_EXPERTS) {
            size_t next = at + n + 1;
            uint64_t index;
            if (next <= len &&
                component_number(&index, name + next, component_len(name, len, next)))
                *expert = clamp_index(index);
            return KVSHARD__CLASS_EXPERT;
        }
        at += n + 1;
    }
    size_t last_start = len;
    while (last_start > 0 && name[last_start - 1] != '.')
        last_start--;
    bool bias = kvshard_text__is(name + last_start, len - last_start, "bias");
    size_t end = len;
    for (;;) {
        size_t start = end;
        while (start > 0 && name[start - 1] != '.')
            start--;
        const char *c = name + start;
        size_t n = end - start;
        switch (role_of(c, n)) {
        case R_SPLIT: return KVSHARD__CLASS_SPLIT;
        case R_SPLIT_ROW: return bias ? KVSHARD__CLASS_REPLICATED : KVSHARD__CLASS_SPLIT;
        case R_KV: return gqa ? KVSHARD__CLASS_KV : KVSHARD__CLASS_SPLIT;
        case R_QKV: return gqa ? KVSHARD__CLASS_QKV : KVSHARD__CLASS_SPLIT;
        case R_REPLICATED: return KVSHARD__CLASS_REPLICATED;
        case R_EMBED:
        case R_HEAD:
        case R_VOCAB: return KVSHARD__CLASS_VOCAB;
        case R_NONE:
        case R_MULTIMODAL:
        case R_CONTAINER:
        case R_MTP:
        case R_EXPERTS:
        default: break;
        }
        if (has_norm(c, n))
            return KVSHARD__CLASS_REPLICATED;
        if (start == 0)
            return KVSHARD__CLASS_UNKNOWN;
        end = start - 1;
    }
}

void kvshard_weights__classify(kvshard__wtensor_class *out, const char *name, size_t len,
                               uint64_t elements, uint32_t num_layers, bool gqa)
{
    bool mtp = false, embed = false, head = false, norm = false, has_layer = false;
    bool after_container = false;
    uint64_t layer = 0;
    size_t inner = 0;
    for (size_t at = 0; at <= len;) {
        size_t n = component_len(name, len, at);
        const char *c = name + at;
        role r = role_of(c, n);
        if (r == R_MULTIMODAL) {
            out->place = KVSHARD__PLACE_MULTIMODAL;
            out->cls = KVSHARD__CLASS_MULTIMODAL;
            out->layer = KVSHARD__NO_LAYER;
            out->expert = KVSHARD__NO_EXPERT;
            return;
        }
        if (!has_layer && after_container && component_number(&layer, c, n)) {
            has_layer = true;
            inner = at + n + 1 < len ? at + n + 1 : len;
        }
        after_container = r == R_CONTAINER;
        mtp |= r == R_MTP;
        embed |= r == R_EMBED;
        head |= r == R_HEAD;
        norm |= has_norm(c, n);
        at += n + 1;
    }
    out->layer = KVSHARD__NO_LAYER;
    if (mtp || (has_layer && layer >= num_layers)) {
        out->place = KVSHARD__PLACE_DRAFT;
        if (has_layer)
            out->layer = clamp_index(mtp ? layer : layer - num_layers);
    } else if (has_layer) {
        out->place = KVSHARD__PLACE_DECODER;
        out->layer = (uint32_t)layer;
    } else {
        out->expert = KVSHARD__NO_EXPERT;
        if (embed || head || norm) {
            out->place = embed  ? KVSHARD__PLACE_EMBEDDING
                         : head ? KVSHARD__PLACE_HEAD
                                : KVSHARD__PLACE_FINAL_NORM;
            out->cls = norm && !embed && !head ? KVSHARD__CLASS_REPLICATED : KVSHARD__CLASS_VOCAB;
            return;
        }
        out->place = KVSHARD__PLACE_OTHER;
    }
    /* A draft module's own tensors (mtp.fc) have no layer: their whole name
     * is inner, as for the other top-level tensors. */
    if (!has_layer)
        inner = 0;
    out->cls = class_of(name + inner, len - inner, elements, gqa, &out->expert);
}

const char *kvshard_weights__class_name(kvshard__wclass cls)
{
    static const char *const names[KVSHARD__CLASS_COUNT] = {
        "split", "kv", "qkv", "replicated", "vocab", "expert", "multimodal", "unknown",
    };
    return (unsigned)cls < KVSHARD__CLASS_COUNT ? names[cls] : "unknown";
}

/* ---- exact arithmetic ----------------------------------------------------------------- */

/* ceil(a * b / c) for c > 0, exact through a 128-bit product; false when the
 * result passes 2^64 - 1. */
static bool muldiv_ceil(uint64_t *out, uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t p;
    if (kvshard__mul(&p, a, b)) {
        *out = kvshard__ceil_div(p, c);
        return true;
    }
    const uint64_t m32 = 0xFFFFFFFFu;
    uint64_t ll = (a & m32) * (b & m32), lh = (a & m32) * (b >> 32);
    uint64_t hl = (a >> 32) * (b & m32), hh = (a >> 32) * (b >> 32);
    uint64_t mid = (ll >> 32) + (lh & m32) + (hl & m32);
    uint64_t lo = (ll & m32) | (mid << 32);
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    if (hi >= c)
        return false;
    /* Long division of hi:lo by c, one bit at a time; rem stays below c. */
    uint64_t rem = hi, quo = 0;
    for (int i = 63; i >= 0; i--) {
        bool carry = rem >> 63;
        rem = rem << 1 | ((lo >> i) & 1u);
        quo <<= 1;
        if (carry || rem >= c) {
            rem -= c;
            quo |= 1;
        }
    }
    if (rem && quo == UINT64_MAX)
        return false;
    *out = quo + (rem != 0);
    return true;
}

/* ---- the classified checkpoint ---------------------------------------------------------- */

typedef struct record {
    uint64_t bytes;
    uint32_t layer; /* decoder: the layer; else KVSHARD__NO_LAYER */
    uint32_t group; /* expert: its group; else unused */
    uint32_t hq, hkv;
    uint8_t place;
    uint8_t cls;
} record;

/* The experts of one layer (or draft layer): E and their bytes B_e, for
 * expert parallelism, which places whole experts. */
typedef struct expert_group {
    uint64_t bytes;
    uint64_t experts;  /* E */
    uint64_t distinct; /* expert indices seen */
    uint64_t fused;    /* the largest first dimension of a fused tensor */
    uint32_t layer;    /* decoder: the layer; else KVSHARD__NO_LAYER */
    uint8_t place;
} expert_group;

struct kvshard__weights {
    kvshard_allocator alloc;
    record *records; /* decoder tensors first, by layer; then the others */
    size_t count;
    size_t decoder_count;
    expert_group *groups; /* decoder groups first, by layer */
    size_t group_count;
    uint32_t num_layers;
    bool tied;
    kvshard__wsummary summary;
    char *first_unknown;
};

/* Sort keys: decoder tensors by layer, then the rest. */
static uint64_t record_key(const record *r)
{
    return r->place == KVSHARD__PLACE_DECODER ? r->layer : UINT64_C(1) << 40;
}

static int compare_records(const void *a, const void *b)
{
    uint64_t x = record_key(a), y = record_key(b);
    return (x > y) - (x < y);
}

/* An expert tensor on its way to a group. */
typedef struct expert_ref {
    uint64_t group; /* decoder layer i: i; draft layer d: L + d; others above */
    uint32_t expert;
    uint32_t record; /* its place in the records */
} expert_ref;

static int compare_refs(const void *a, const void *b)
{
    const expert_ref *x = a, *y = b;
    if (x->group != y->group)
        return (x->group > y->group) - (x->group < y->group);
    return (x->expert > y->expert) - (x->expert < y->expert);
}

void kvshard_weights__free(kvshard__weights *w)
{
    if (!w)
        return;
    kvshard_allocator a = w->alloc;
    kvshard_alloc__free(&a, w->records);
    kvshard_alloc__free(&a, w->groups);
    kvshard_alloc__free(&a, w->first_unknown);
    kvshard_alloc__free(&a, w);
}

static bool sliding_at(const kvshard__wgeometry *g, uint64_t index)
{
    return g->sliding && index < g->sliding_count && g->sliding[index];
}

/* Group the expert records by layer (or draft layer) and fill each group's E
 * and B_e. E is the number of distinct expert indices, or the first
 * dimension of fused expert tensors, the larger when both appear. Until
 * here a record's `group` holds its tensor's index; after, its group's. */
static int build_groups(kvshard__weights *w, const kvshard__safetensors *set,
                        const kvshard__wtensor_class *classes, kvshard_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < w->count; i++)
        n += w->records[i].cls == KVSHARD__CLASS_EXPERT;
    if (n == 0)
        return KVSHARD_OK;
    expert_ref *refs = kvshard_alloc__bytes(&w->alloc, n, sizeof *refs);
    w->groups = kvshard_alloc__bytes(&w->alloc, n, sizeof *w->groups);
    if (!refs || !w->groups) {
        kvshard_alloc__free(&w->alloc, refs);
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    }
    size_t k = 0;
    for (size_t i = 0; i < w->count; i++) {
        const record *r = &w->records[i];
        if (r->cls != KVSHARD__CLASS_EXPERT)
            continue;
        const kvshard__wtensor_class *c = &classes[r->group];
        uint64_t group = r->place == KVSHARD__PLACE_DECODER ? r->layer
                         : r->place == KVSHARD__PLACE_DRAFT && c->layer != KVSHARD__NO_LAYER
                             ? (uint64_t)w->num_layers + c->layer
                         : r->place == KVSHARD__PLACE_DRAFT ? UINT64_C(1) << 40
                                                            : UINT64_C(1) << 41;
        expert_ref ref = {group, c->expert, (uint32_t)i};
        refs[k++] = ref;
    }
    qsort(refs, n, sizeof *refs, compare_refs);
    size_t g = 0;
    for (size_t i = 0; i < n; i++) {
        record *r = &w->records[refs[i].record];
        const kvshard__tensor *t = &set->tensors[r->group];
        bool first = i == 0 || refs[i].group != refs[i - 1].group;
        if (first) {
            expert_group e = {
                0,       0, 0, 0, r->place == KVSHARD__PLACE_DECODER ? r->layer : KVSHARD__NO_LAYER,
                r->place};
            w->groups[g++] = e;
        }
        expert_group *e = &w->groups[g - 1];
        e->bytes += r->bytes; /* at most the headers' sum, which fits */
        if (refs[i].expert == KVSHARD__NO_EXPERT) {
            if (t->ndim > 0 && t->shape[0] > e->fused)
                e->fused = t->shape[0];
        } else if (first || refs[i].expert != refs[i - 1].expert) {
            e->distinct++;
        }
        r->group = (uint32_t)(g - 1);
    }
    for (size_t i = 0; i < g; i++)
        w->groups[i].experts =
            w->groups[i].distinct > w->groups[i].fused ? w->groups[i].distinct : w->groups[i].fused;
    w->group_count = g;
    kvshard_alloc__free(&w->alloc, refs);
    return KVSHARD_OK;
}

int kvshard_weights__build(kvshard__weights **out, const kvshard__safetensors *set,
                           const kvshard__wgeometry *g, const kvshard_allocator *alloc,
                           kvshard_error *err)
{
    kvshard_error__reset(err);
    if (!out || !set || !g)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "weights: NULL argument");
    if (g->gqa && (g->num_heads == 0 || g->num_kv_heads == 0))
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "weights: a GQA geometry needs its attention and KV heads "
                             "(num_heads %u, num_kv_heads %u)",
                             g->num_heads, g->num_kv_heads);
    kvshard_allocator a = kvshard_alloc__allocator_or_default(alloc);
    kvshard__weights *w = kvshard_alloc__calloc(&a, 1, sizeof *w);
    kvshard__wtensor_class *classes = NULL;
    if (!w)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    w->alloc = a;
    w->num_layers = g->num_layers;
    w->tied = g->tie_word_embeddings;
    int rc = KVSHARD_OK;
    size_t n = set->count;
    w->records = kvshard_alloc__bytes(&a, n, sizeof *w->records);
    classes = kvshard_alloc__bytes(&a, n, sizeof *classes);
    if (!w->records || !classes) {
        rc = kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark, "out of memory");
        goto fail;
    }
    uint32_t hq_full = g->num_heads, hkv_full = g->num_kv_heads;
    uint32_t hq_slide = g->sliding_heads ? g->sliding_heads : hq_full;
    uint32_t hkv_slide = g->sliding_kv_heads ? g->sliding_kv_heads : hkv_full;
    kvshard__wsummary *s = &w->summary;
    uint64_t embedding = 0;
    const kvshard__tensor *first_unknown = NULL;
    for (size_t i = 0; i < n; i++) {
        const kvshard__tensor *t = &set->tensors[i];
        kvshard__wtensor_class *c = &classes[i];
        kvshard_weights__classify(c, t->name, t->name_len, t->elements, g->num_layers, g->gqa);
        /* A tied head is the embedding itself: the engine reuses it. */
        if (c->place == KVSHARD__PLACE_HEAD && w->tied)
            continue;
        record *r = &w->records[w->count++];
        r->bytes = t->bytes;
        r->place = (uint8_t)c->place;
        r->cls = (uint8_t)c->cls;
        r->layer = c->place == KVSHARD__PLACE_DECODER ? c->layer : KVSHARD__NO_LAYER;
        r->group = (uint32_t)i; /* the tensor, until build_groups */
        uint64_t geometry = c->place == KVSHARD__PLACE_DECODER ? c->layer
                            : c->place == KVSHARD__PLACE_DRAFT && c->layer != KVSHARD__NO_LAYER
                                ? (uint64_t)g->num_layers + c->layer
                                : UINT64_MAX;
        bool sliding = geometry != UINT64_MAX && sliding_at(g, geometry);
        r->hq = sliding ? hq_slide : hq_full;
        r->hkv = sliding ? hkv_slide : hkv_full;
        s->tensors++;
        s->total_bytes += t->bytes; /* at most the headers' sum, which fits */
        s->class_bytes[c->cls] += t->bytes;
        if (c->cls == KVSHARD__CLASS_EXPERT)
            s->expert_bytes += t->bytes;
        if (c->place == KVSHARD__PLACE_DRAFT)
            s->draft_bytes += t->bytes;
        if (c->place == KVSHARD__PLACE_EMBEDDING)
            embedding += t->bytes;
        if (c->cls == KVSHARD__CLASS_UNKNOWN) {
            s->unknown_tensors++;
            s->unknown_bytes += t->bytes;
            if (!first_unknown)
                first_unknown = t;
        }
    }
    /* No share exceeds its bytes, so no stage passes the total plus a tied
     * embedding counted again: one check here covers every layout. */
    uint64_t bound;
    if (!kvshard__add(&bound, s->total_bytes, embedding)) {
        rc = kvshard_error__fail(err, KVSHARD_EOVERFLOW, "", kvshard_error__no_mark,
                           "weights: the tensors' bytes with the embedding counted again pass "
                           "2^64 - 1");
        goto fail;
    }
    if (first_unknown) {
        if (!(w->first_unknown =
                  kvshard_alloc__strndup(&a, first_unknown->name, first_unknown->name_len))) {
            rc = kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                     "out of memory");
            goto fail;
        }
        s->first_unknown = w->first_unknown;
    }
    s->has_index_total_size = set->has_total_size;
    s->index_total_size = set->total_size;
    s->total_size_mismatch = set->total_size_mismatch;
    if ((rc = build_groups(w, set, classes, err)) != 0)
        goto fail;
    qsort(w->records, w->count, sizeof *w->records, compare_records);
    while (w->decoder_count < w->count &&
           w->records[w->decoder_count].place == KVSHARD__PLACE_DECODER)
        w->decoder_count++;
    kvshard_alloc__free(&a, classes);
    *out = w;
    return KVSHARD_OK;
fail:
    kvshard_alloc__free(&a, classes);
    kvshard_weights__free(w);
    return rc;
}

const kvshard__wsummary *kvshard_weights__summary(const kvshard__weights *w)
{
    return &w->summary;
}

/* ---- one layout ------------------------------------------------------------------------ */

/* The bytes of a tensor on one rank (expert tensors without expert
 * parallelism; with it the groups are charged instead). */
static uint64_t share(const record *r, uint64_t t, uint64_t x)
{
    switch ((kvshard__wclass)r->cls) {
    case KVSHARD__CLASS_REPLICATED: return r->bytes;
    case KVSHARD__CLASS_KV: {
        /* With fewer KV heads than ranks each rank keeps a whole head. */
        uint64_t ways = r->hkv < t ? r->hkv : t;
        return kvshard__ceil_div(r->bytes, ways);
    }
    case KVSHARD__CLASS_QKV: {
        /* The query part over T, keys and values as H_kv heads: h of them on
         * a rank, one replicated when H_kv < T. */
        uint64_t h = r->hkv >= t ? r->hkv / t : 1;
        uint64_t num = r->hq + 2 * h * t, den = t * (r->hq + 2 * (uint64_t)r->hkv), v;
        return muldiv_ceil(&v, r->bytes, num, den) ? v : r->bytes;
    }
    case KVSHARD__CLASS_EXPERT: return kvshard__ceil_div(r->bytes, x);
    case KVSHARD__CLASS_SPLIT:
    case KVSHARD__CLASS_VOCAB:
    case KVSHARD__CLASS_MULTIMODAL:
    case KVSHARD__CLASS_UNKNOWN:
    default: return kvshard__ceil_div(r->bytes, t);
    }
}

static void charge(kvshard__wstage *stage, kvshard__wclass cls, uint64_t bytes)
{
    stage->bytes += bytes;
    stage->class_bytes[cls] += bytes;
}

int kvshard_weights__stages(kvshard__wstage *out, const kvshard__weights *w,
                            const kvshard__wlayout *layout, kvshard_error *err)
{
    if (!out || !w || !layout || (layout->pp && !layout->stage_layers))
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "weights: NULL argument");
    uint64_t x = (uint64_t)layout->dp * layout->cp * layout->tp;
    if (layout->tp == 0 || layout->dp == 0 || layout->cp == 0 || layout->pp == 0 || x > UINT32_MAX)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "weights: a layout of T %u, D %u, C %u and P %u stages", layout->tp,
                             layout->dp, layout->cp, layout->pp);
    uint64_t sum = 0;
    for (uint32_t s = 0; s < layout->pp; s++) {
        if (layout->stage_layers[s] == 0)
            return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                 "weights: stage %u holds no layer", s);
        sum += layout->stage_layers[s];
    }
    if (sum != w->num_layers)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "weights: the stages hold %llu layers; the model has %u",
                             (unsigned long long)sum, w->num_layers);
    uint32_t p = layout->pp, last = p - 1;
    uint64_t t = layout->tp;
    bool ep = layout->expert_parallel;
    memset(out, 0, p * sizeof *out);
    /* Decoder tensors are sorted by layer: one walk over the stages. */
    uint32_t stage = 0;
    uint64_t end = layout->stage_layers[0];
    for (size_t i = 0; i < w->decoder_count; i++) {
        const record *r = &w->records[i];
        while (r->layer >= end)
            end += layout->stage_layers[++stage];
        if (!(ep && r->cls == KVSHARD__CLASS_EXPERT))
            charge(&out[stage], (kvshard__wclass)r->cls, share(r, t, x));
    }
    uint64_t embedding = 0;
    for (size_t i = w->decoder_count; i < w->count; i++) {
        const record *r = &w->records[i];
        if (ep && r->cls == KVSHARD__CLASS_EXPERT)
            continue;
        uint64_t b = share(r, t, x);
        switch ((kvshard__wplace)r->place) {
        case KVSHARD__PLACE_DRAFT:
            if (layout->speculative)
                charge(&out[last], (kvshard__wclass)r->cls, b);
            break;
        case KVSHARD__PLACE_HEAD:
        case KVSHARD__PLACE_FINAL_NORM: charge(&out[last], (kvshard__wclass)r->cls, b); break;
        case KVSHARD__PLACE_EMBEDDING:
            embedding += b;
            charge(&out[0], (kvshard__wclass)r->cls, b);
            break;
        case KVSHARD__PLACE_DECODER:
        case KVSHARD__PLACE_MULTIMODAL:
        case KVSHARD__PLACE_OTHER:
        default: charge(&out[0], (kvshard__wclass)r->cls, b); break;
        }
    }
    /* Tied embeddings: the last stage builds the embedding again to compute
     * the logits. */
    if (w->tied && p > 1)
        charge(&out[last], KVSHARD__CLASS_VOCAB, embedding);
    if (ep) {
        stage = 0;
        end = layout->stage_layers[0];
        for (size_t i = 0; i < w->group_count; i++) {
            const expert_group *e = &w->groups[i];
            uint64_t b;
            /* Whole experts: ceil(E / X) of them on the most loaded rank. */
            if (e->experts == 0 ||
                !muldiv_ceil(&b, e->bytes, kvshard__ceil_div(e->experts, x), e->experts))
                b = kvshard__ceil_div(e->bytes, x);
            if (e->place == KVSHARD__PLACE_DECODER) {
                while (e->layer >= end)
                    end += layout->stage_layers[++stage];
                charge(&out[stage], KVSHARD__CLASS_EXPERT, b);
            } else if (e->place == KVSHARD__PLACE_DRAFT) {
                if (layout->speculative)
                    charge(&out[last], KVSHARD__CLASS_EXPERT, b);
            } else {
                charge(&out[0], KVSHARD__CLASS_EXPERT, b);
            }
        }
    }
    return KVSHARD_OK;
}

int kvshard_weights__estimate(uint64_t *out, uint64_t total, uint64_t experts, uint32_t n_s,
                              uint32_t num_layers, uint32_t tp, uint64_t x, kvshard_error *err)
{
    if (!out)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "weights: NULL argument");
    if (experts > total)
        return kvshard_error__fail(err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                             "weights_experts %llu is above weights_total %llu: the experts are "
                             "a part of the checkpoint",
                             (unsigned long long)experts, (unsigned long long)total);
    if (num_layers == 0 || tp == 0 || x == 0 || x > UINT32_MAX || n_s > num_layers)
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "weights: an estimate for %u of %u layers, T %u, X %llu", n_s,
                             num_layers, tp, (unsigned long long)x);
    /* Both parts are at most their figure, so the sum fits unless the
     * figures are within two bytes of 2^64. */
    uint64_t dense, moe, v;
    if (!muldiv_ceil(&dense, total - experts, n_s, (uint64_t)num_layers * tp) ||
        !muldiv_ceil(&moe, experts, n_s, (uint64_t)num_layers * x) || !kvshard__add(&v, dense, moe))
        return kvshard_error__fail(err, KVSHARD_EOVERFLOW, "", kvshard_error__no_mark,
                             "weights: the estimate passes 2^64 - 1 bytes");
    *out = v;
    return KVSHARD_OK;
}

/* The part of an expert tensor's name after "experts.": the projection of
 * one expert, or of all of them fused. */
static const char *after_experts(const char *name, size_t len)
{
    const char *last = NULL;
    for (const char *p = name; (p = strstr(p, "experts.")) && (size_t)(p - name) < len; p++)
        last = p;
    return last ? last + strlen("experts.") : NULL;
}

/* Elements of one expert tensor's name in units of I x H: 1, 2 (gate and up
 * fused), times E when every expert is fused in it; 0 when no rule holds. */
static uint64_t expert_units(const char *tail, bool fused, uint64_t experts)
{
    static const char *const one[] = {"gate_proj.weight", "up_proj.weight", "down_proj.weight",
                                      "w1.weight",        "w2.weight",      "w3.weight"};
    if (fused)
        return strcmp(tail, "gate_up_proj") == 0 ? 2 * experts
               : strcmp(tail, "down_proj") == 0  ? experts
                                                 : 0;
    const char *dot = strchr(tail, '.'); /* past the expert's index */
    if (!dot)
        return 0;
    tail = dot + 1;
    if (strcmp(tail, "gate_up_proj.weight") == 0)
        return 2;
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++)
        if (strcmp(tail, one[i]) == 0)
            return 1;
    return 0;
}

int kvshard_weights__estimate_experts(uint64_t *out, const kvshard__safetensors *set,
                                      const kvshard__wexperts_config *c, const char *source,
                                      kvshard_error *err)
{
    static const char ask[] = "give --weights_experts (the expert bytes), or the shards' headers";
    if (c->quantized)
        return kvshard_error__fail(err, KVSHARD_EWEIGHTS, source, kvshard_error__no_mark,
                                   "weights: the config has a quantization_config, so the expert "
                                   "bytes of the index cannot be estimated from their shapes: %s",
                                   ask);
    const char *lacking = !c->element_bytes  ? "torch_dtype or dtype (bfloat16, float16 or float32)"
                          : !c->hidden       ? "hidden_size"
                          : !c->intermediate ? "moe_intermediate_size or intermediate_size"
                                             : NULL;
    uint64_t sum = 0, per_unit = 0;
    bool fits = kvshard__mul(&per_unit, c->intermediate, c->hidden) &&
                kvshard__mul(&per_unit, per_unit, c->element_bytes);
    for (size_t i = 0; i < set->count; i++) {
        const kvshard__tensor *t = &set->tensors[i];
        kvshard__wtensor_class k;
        /* No shape in an index: every tensor is taken as a matrix, so an
         * expert scale is classed expert and refused below by its name. */
        kvshard_weights__classify(&k, t->name, t->name_len, UINT64_MAX, c->num_layers, c->gqa);
        if (k.cls != KVSHARD__CLASS_EXPERT)
            continue;
        bool fused = k.expert == KVSHARD__NO_EXPERT;
        const char *tail = after_experts(t->name, t->name_len);
        uint64_t units = tail ? expert_units(tail, fused, c->experts) : 0;
        if (units == 0 || lacking)
            return kvshard_error__fail(
                err, KVSHARD_EWEIGHTS, source, kvshard_error__no_mark,
                "weights: the expert bytes of the index cannot be estimated: %s%s%s; %s",
                lacking ? "the config has no " : "tensor \"",
                lacking ? lacking : t->name,
                lacking                  ? ""
                : fused && !c->experts   ? "\" is fused and the config has no num_experts, "
                                           "n_routed_experts or num_local_experts"
                                         : "\" is not a projection weight kvshard sizes",
                ask);
        uint64_t bytes;
        if (!fits || !kvshard__mul(&bytes, per_unit, units) || !kvshard__add(&sum, sum, bytes))
            return kvshard_error__fail(err, KVSHARD_EOVERFLOW, source, kvshard_error__no_mark,
                                       "weights: the expert estimate passes 2^64 - 1 bytes");
    }
    *out = sum;
    return KVSHARD_OK;
}
