/* What every profile's capacity computation is made of. */
#include "profile/capacity.h"
#include "model/states.h"

#include "base/checked.h"
#include "base/format.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

uint32_t kvshard_capacity__first_rank(const kvshard__capacity_inputs *in)
{
    return in->rank == KVSHARD_ALL_RANKS ? 0 : in->rank;
}

uint32_t kvshard_capacity__end_rank(const kvshard__capacity_inputs *in)
{
    return in->rank == KVSHARD_ALL_RANKS ? in->num_ranks : in->rank + 1;
}

bool kvshard_capacity__block_bytes(uint64_t *out, const kvshard_rank_memory *r, uint64_t extra)
{
    *out = 0;
    return r->bytes_per_block == 0 || kvshard__add(out, r->bytes_per_block, extra);
}

int kvshard_capacity__block_overflow(const kvshard__capacity_inputs *in, uint32_t rank,
                                     const char *profile, kvshard_diag__ctx *diag)
{
    char name[48];
    kvshard_capacity__rank_name(name, sizeof name, in, rank);
    return kvshard_diag__fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW,
                              "%s%sa block on %s: bytes_per_block %llu and %llu extra bytes per "
                              "block are more than 18446744073709551615 bytes (2^64 - 1)",
                              profile ? profile : "", profile ? " profile: " : "", name,
                              (unsigned long long)in->ranks[rank].bytes_per_block,
                              (unsigned long long)in->extra_per_block);
}

bool kvshard_capacity__same_figures(const kvshard_rank_memory *a, const kvshard_rank_memory *b)
{
    return a && a->bytes_per_block == b->bytes_per_block &&
           a->state_bytes_per_seq == b->state_bytes_per_seq &&
           a->scratch_bytes_per_seq == b->scratch_bytes_per_seq;
}

uint64_t kvshard_capacity__budget(const kvshard__capacity_inputs *in, uint32_t rank)
{
    uint32_t T = in->stage_ranks ? in->stage_ranks : in->num_ranks;
    return in->stage_memory && T ? in->stage_memory[rank / T] : in->memory;
}

void kvshard_capacity__rank_name(char *buf, size_t cap, const kvshard__capacity_inputs *in,
                                 uint32_t rank)
{
    uint32_t T = in->stage_ranks ? in->stage_ranks : in->num_ranks;
    if (T && in->num_ranks > T)
        snprintf(buf, cap, "stage %u TP rank %u", rank / T, rank % T);
    else
        snprintf(buf, cap, "TP rank %u", rank);
}

bool kvshard_capacity__seq_bytes(uint64_t *out, const kvshard_rank_memory *r)
{
    return kvshard__add(out, r->state_bytes_per_seq, r->scratch_bytes_per_seq);
}

const char *kvshard_profile__uncovered_cache(const kvshard__model_info *m, uint32_t tp)
{
    bool full = m->count[KVSHARD_LAYER_FULL_ATTENTION] + m->count[KVSHARD_LAYER_HYBRID] > 0;
    bool sliding = m->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0;
    if (m->attention == KVSHARD_ATTENTION_GQA &&
        ((full && m->full.v_dim != m->full.k_dim) ||
         (sliding && m->sliding.v_dim != m->sliding.k_dim)))
        return "a V head dim other than the K head dim";
    if (m->attention == KVSHARD_ATTENTION_GQA && full &&
        m->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0) {
        /* One page size for every attention layer on a rank. */
        uint64_t hf = m->full.heads / tp ? m->full.heads / tp : 1;
        uint64_t hs = m->sliding.heads / tp ? m->sliding.heads / tp : 1;
        if (hf * (m->full.k_dim + m->full.v_dim) != hs * (m->sliding.k_dim + m->sliding.v_dim))
            return "sliding-window layers whose page differs from the full-attention layers'";
    }
    if (kvshard_profile__has_sparse_index(m))
        return "a GQA sparse index (sparse_attention_config)";
    for (uint32_t c = 0; m->attention == KVSHARD_ATTENTION_MLA && m->has_indexer &&
                         c < m->num_classes;
         c++) {
        const kvshard__class *k = &m->classes[c];
        if (k->kind == KVSHARD_LAYER_FULL_ATTENTION && !(k->flags & KVSHARD__LAYER_INDEX_KEY))
            return "indexer keys on some layers only";
    }
    return NULL;
}

bool kvshard_profile__has_sparse_index(const kvshard__model_info *m)
{
    for (uint32_t c = 0; c < m->num_classes; c++) {
        if (m->classes[c].flags & (KVSHARD__LAYER_SPARSE_K | KVSHARD__LAYER_SPARSE_KV))
            return true;
    }
    return false;
}

int kvshard_capacity__max_tokens(kvshard__capacity *c, const kvshard_options *o,
                                 kvshard_diag__ctx *diag)
{
    if (c->has_num_blocks && !kvshard__mul(&c->max_tokens, c->num_blocks, o->block_size))
        return kvshard_diag__fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW,
                                  "max_tokens (%llu blocks of %u tokens) overflows 64 bits",
                                  (unsigned long long)c->num_blocks, o->block_size);
    return KVSHARD_OK;
}

/* ---- what the engine profiles share ------------------------------------------------ */

static kvshard_figure *next_figure(kvshard_profile__figures *f, const char *name,
                                   kvshard_figure_type type)
{
    if (f->count >= f->cap)
        return NULL;
    kvshard_figure *g = &f->out[f->count++];
    g->size = sizeof *g;
    g->name = name;
    g->type = type;
    g->uint_value = 0;
    g->double_value = 0.0;
    g->bool_value = false;
    g->text_value = NULL;
    return g;
}

void kvshard_profile__fig_uint(kvshard_profile__figures *f, const char *name, bool has, uint64_t v)
{
    kvshard_figure *g = next_figure(f, name, has ? KVSHARD_FIGURE_UINT : KVSHARD_FIGURE_NULL);
    if (g && has)
        g->uint_value = v;
}

void kvshard_profile__fig_double(kvshard_profile__figures *f, const char *name, bool has,
                                 double v)
{
    kvshard_figure *g = next_figure(f, name, has ? KVSHARD_FIGURE_DOUBLE : KVSHARD_FIGURE_NULL);
    if (g && has)
        g->double_value = v;
}

void kvshard_profile__fig_bool(kvshard_profile__figures *f, const char *name, bool v)
{
    kvshard_figure *g = next_figure(f, name, KVSHARD_FIGURE_BOOL);
    if (g)
        g->bool_value = v;
}

void kvshard_profile__fig_text(kvshard_profile__figures *f, const char *name, const char *text)
{
    kvshard_figure *g = next_figure(f, name, text ? KVSHARD_FIGURE_TEXT : KVSHARD_FIGURE_NULL);
    if (g)
        g->text_value = text;
}

void kvshard_profile__fig_words(kvshard_profile__figures *f, const char *name, const char *words,
                                uint64_t count)
{
    kvshard_figure *g =
        next_figure(f, name, count ? KVSHARD_FIGURE_TEXT_LIST : KVSHARD_FIGURE_NULL);
    if (g && count) {
        g->text_value = words;
        g->uint_value = count;
    }
}

/* Appends to the JSON text, counting what does not fit. */
static void json_put(kvshard_profile__figures *f, const char *s, size_t n)
{
    if (f->text && f->text_used < f->text_cap) {
        size_t room = f->text_cap - f->text_used;
        memcpy(f->text + f->text_used, s, n < room ? n : room);
    }
    f->text_used += n;
}

static void json_text(kvshard_profile__figures *f, const char *s)
{
    json_put(f, s, strlen(s));
}

static void json_u64(kvshard_profile__figures *f, uint64_t v)
{
    char buf[24];
    int n = snprintf(buf, sizeof buf, "%llu", (unsigned long long)v);
    json_put(f, buf, (size_t)n);
}

/* The separator before an item of a list or a field of an object. */
static void json_item(kvshard_profile__figures *f)
{
    if (!f->json_fresh)
        json_text(f, ", ");
    f->json_fresh = false;
}

static void json_key(kvshard_profile__figures *f, const char *key)
{
    json_item(f);
    json_text(f, "\"");
    json_text(f, key);
    json_text(f, "\": ");
}

void kvshard_profile__json_begin(kvshard_profile__figures *f)
{
    f->json_start = f->text_used;
    f->json_fresh = true;
    json_text(f, "[");
}

void kvshard_profile__json_object(kvshard_profile__figures *f)
{
    json_item(f);
    json_text(f, "{");
    f->json_fresh = true;
}

void kvshard_profile__json_uint(kvshard_profile__figures *f, const char *key, bool has,
                                uint64_t v)
{
    json_key(f, key);
    if (has)
        json_u64(f, v);
    else
        json_text(f, "null");
}

void kvshard_profile__json_double(kvshard_profile__figures *f, const char *key, bool has,
                                  double v)
{
    json_key(f, key);
    char buf[40];
    if (has && isfinite(v))
        kvshard_format__shortest_text(buf, sizeof buf, v);
    json_text(f, has && isfinite(v) ? buf : "null");
}

void kvshard_profile__json_object_end(kvshard_profile__figures *f)
{
    json_text(f, "}");
    f->json_fresh = false;
}

/* The figure points at its text once the text fits; while measuring it
 * is null. */
void kvshard_profile__json_end(kvshard_profile__figures *f, const char *name)
{
    json_put(f, "]", 2); /* with its NUL */
    bool fits = f->text && f->text_used <= f->text_cap;
    kvshard_figure *g = next_figure(f, name, fits ? KVSHARD_FIGURE_JSON : KVSHARD_FIGURE_NULL);
    if (g && fits)
        g->text_value = f->text + f->json_start;
}

void kvshard_profile__fig_partition(kvshard_profile__figures *f, const char *name,
                                    const kvshard_profile__view *v)
{
    kvshard_profile__json_begin(f);
    for (uint32_t s = 0; v->stages && s < v->num_stages; s++) {
        json_item(f);
        json_u64(f, v->stages[s].count);
    }
    kvshard_profile__json_end(f, name);
}

const char *const kvshard_profile__about_engine[] = {"engine", NULL};

const kvshard_value__more kvshard_profile__stage_sizes = {NULL, NULL, true};

uint64_t kvshard_profile__stage_size(kvshard_value v, const uint64_t *filled, uint32_t stage)
{
    if (filled)
        return filled[stage];
    if (!v.text)
        return v.u;
    uint64_t sizes[KVSHARD_MAX_PP_PARTITION];
    uint32_t n = kvshard_value__sizes(sizes, KVSHARD_MAX_PP_PARTITION, v);
    return n == 1 ? sizes[0] : stage < n && stage < KVSHARD_MAX_PP_PARTITION ? sizes[stage] : v.u;
}

int kvshard_profile__check_stage_count(const char *profile, const char *input, kvshard_value v,
                                       uint32_t stages, kvshard_diag__ctx *diag)
{
    uint64_t first;
    uint32_t n = kvshard_value__sizes(&first, 1, v);
    if (n == 1 || n == stages)
        return KVSHARD_OK;
    diag->option = input;
    return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_ERANGE,
                              "%s profile: engine_flag_value: %s has %u sizes; pp_size is %u "
                              "(give one size, or one a stage)",
                              profile, input, n, stages);
}
const char *const kvshard_profile__about_budget[] = {"memory_per_rank", "max_seqs", NULL};
const char *const kvshard_profile__about_block[] = {"block_size", NULL};

int kvshard_profile__version(kvshard_versions__v *out, const kvshard__profile *p,
                             const kvshard_value *input, kvshard_diag__ctx *diag)
{
    const kvshard_profile__versions *r = p->versions;
    const char *text = input && input->text ? input->text : r->fallback;
    size_t len = input && input->text ? input->text_len : strlen(r->fallback);
    kvshard_versions__v v;
    if (!kvshard_versions__parse(&v, text, len)) { /* the parser refused it before */
        diag->option = "engine_version";
        return kvshard_error__fail(diag->err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                             "%s profile: engine_version_invalid: \"%.*s\"", p->name, (int)len,
                             text);
    }
    if (kvshard_versions__cmp(&v, &r->oldest) < 0 || kvshard_versions__cmp(&v, &r->newest) > 0) {
        char oldest[KVSHARD_VERSIONS__TEXT_MAX], newest[KVSHARD_VERSIONS__TEXT_MAX];
        kvshard_versions__format(oldest, sizeof oldest, &r->oldest);
        kvshard_versions__format(newest, sizeof newest, &r->newest);
        diag->option = "engine_version";
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "%s profile: engine_version_unsupported: engine_version %.*s "
                                  "is outside the releases the profile covers, %s to %s",
                                  p->name, (int)len, text, oldest, newest);
    }
    *out = v;
    return KVSHARD_OK;
}

uint8_t kvshard_profile__unplanned_kind(const kvshard__model_info *m, uint32_t planned)
{
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++) {
        if (m->count[k] > 0 && !(planned >> k & 1u))
            return k;
    }
    return KVSHARD__KIND_COUNT;
}

bool kvshard_profile__type_is(const char *model_type, const char *const *types)
{
    for (const char *const *t = types; *t; t++) {
        if (strcmp(model_type, *t) == 0)
            return true;
    }
    return false;
}

bool kvshard_profile__state_parts(kvshard__calc *c, uint64_t *conv, uint64_t *temporal,
                                  const kvshard__state_dims *s, uint32_t tp, uint32_t spec,
                                  uint32_t conv_bytes, uint32_t ssm_bytes)
{
    /* The state-kind table's tensors: the conv state as grown by spec, the
     * temporal state as one copy (the engines keep no speculative copies). */
    kvshard_states__env grown = {tp, spec, conv_bytes, ssm_bytes};
    kvshard_states__env once = {tp, 0, conv_bytes, ssm_bytes};
    kvshard_states__tensor t[KVSHARD__STATE_TENSORS], t0[KVSHARD__STATE_TENSORS];
    uint32_t n = kvshard_states__shapes(t, c, s, &grown);
    uint32_t n0 = kvshard_states__shapes(t0, c, s, &once);
    *conv = *temporal = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!t[i].temporal)
            *conv = kvshard__calc_add(c, *conv, kvshard_states__tensor_bytes(c, &t[i], &grown));
    for (uint32_t i = 0; i < n0; i++)
        if (t0[i].temporal)
            *temporal =
                kvshard__calc_add(c, *temporal, kvshard_states__tensor_bytes(c, &t0[i], &once));
    return n > 0;
}

void kvshard_profile__gib(char *buf, size_t cap, uint64_t bytes)
{
    snprintf(buf, cap, "%.2f", (double)bytes / 1073741824.0);
}

void kvshard_profile__percent(char *buf, size_t cap, uint64_t num, uint64_t den)
{
    /* Hundredths of a percent; a value off a tie is rounded the same way by
     * the double, whose error is far below the distance to the tie. */
    uint64_t scaled = num * 10000, q = scaled / den, r = scaled % den;
    if (2 * r > den || (2 * r == den && (q & 1)))
        q++;
    char digits[32];
    size_t n = 0;
    uint64_t whole = q / 100;
    do {
        digits[n++] = (char)('0' + whole % 10);
        whole /= 10;
    } while (whole && n < sizeof digits);
    size_t used = 0;
    while (n && used + 1 < cap)
        buf[used++] = digits[--n];
    if (used + 4 <= cap) {
        buf[used++] = '.';
        buf[used++] = (char)('0' + q % 100 / 10);
        buf[used++] = (char)('0' + q % 10);
    }
    if (cap)
        buf[used < cap ? used : cap - 1] = '\0';
}

void kvshard_profile__arg(char *buf, size_t cap, size_t *used, const char *fmt, ...)
{
    char arg[160];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(arg, sizeof arg, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    int w = *used < cap ? snprintf(buf + *used, cap - *used, "%s%s", *used ? " " : "", arg)
                        : snprintf(NULL, 0, "%s%s", *used ? " " : "", arg);
    *used += w > 0 ? (size_t)w : 0;
}

void kvshard_profile__partition_text(char *buf, size_t cap, const kvshard_profile__layout *l)
{
    size_t n = 0;
    if (cap)
        buf[0] = '\0';
    for (uint32_t s = 0; s < l->pp && n < cap; s++) {
        int w = snprintf(buf + n, cap - n, s ? ",%u" : "%u", l->pp_partition[s]);
        n += w > 0 ? (size_t)w : 0;
    }
}
