/* Validation, effective split size and ownership; the plan object calls the
 * memory and capacity functions and answers the queries. */
#include "plan/plan.h"

#include "base/abi.h"
#include "base/checked.h"
#include "deploy/options.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* ---- validation ---------------------------------------------------------------- */

static bool stores_kv(const kvshard__model_info *m, const kvshard_options *o)
{
    return kvshard__num_kv_layers(m) + m->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0 ||
           (o->num_speculative_tokens > 0 && m->num_draft_layers > 0);
}

/* The state dimensions T must divide, and the Mamba2 group layout. */
static int check_state(const kvshard_model *model, uint32_t T, kvshard_error *err)
{
    const kvshard__model_info *m = &model->info;
    if (m->num_state == 0)
        return KVSHARD_OK;
    const int dims[2] = {KVSHARD__SITE_STATE_A, KVSHARD__SITE_STATE_B};
    for (int i = 0; i < 2; i++) {
        const kvshard__key_site *s = &model->sites[dims[i]];
        if (s->key && s->value % T != 0)
            return kvshard__fail(err, KVSHARD_ELINEARHEADS, model->source, s->mark,
                                 "%s %u is not divisible by the attention TP size %u: each rank "
                                 "must hold a whole share of the %s state",
                                 s->key, s->value, T, kvshard_state_kind_name(m->state.kind));
    }
    const kvshard__key_site *g = &model->sites[KVSHARD__SITE_STATE_GROUPS];
    if (g->key && g->value % T != 0 && !(g->value < T && T % g->value == 0))
        return kvshard__fail(err, KVSHARD_ELINEARHEADS, model->source, g->mark,
                             "%s %u cannot be laid out on %u TP ranks: Mamba2 groups must be a "
                             "multiple of the attention TP size, or fewer and divide it",
                             g->key, g->value, T);
    return KVSHARD_OK;
}

/* The xllm profile covers full-attention and linear layers, the one scratch
 * layer the engine keeps, and splits inside one KV head's replicas. */
static int check_profile(const kvshard_model *model, const kvshard_options *o, uint32_t R,
                         uint32_t S, int *blame, kvshard_error *err)
{
    const kvshard__model_info *m = &model->info;
    if (o->engine != KVSHARD_ENGINE_XLLM)
        return KVSHARD_OK;
    *blame = KVSHARD__OPT_ENGINE;
    if (m->count[KVSHARD_LAYER_SLIDING_ATTENTION] + m->count[KVSHARD_LAYER_HYBRID] + m->count[KVSHARD_LAYER_NO_CACHE] > 0)
        return kvshard__fail(err, KVSHARD_EPROFILE, "", kvshard__no_mark,
                             "the xllm profile plans full-attention and linear layers only; this "
                             "model has %u sliding-window, %u hybrid and %u no-cache layers",
                             m->count[KVSHARD_LAYER_SLIDING_ATTENTION], m->count[KVSHARD_LAYER_HYBRID], m->count[KVSHARD_LAYER_NO_CACHE]);
    *blame = KVSHARD__OPT_SCRATCH_LAYERS;
    if (o->scratch_layers != 1)
        return kvshard__fail(err, KVSHARD_EPROFILE, "", kvshard__no_mark,
                             "the xllm profile keeps one scratch layer; scratch_layers is %u",
                             o->scratch_layers);
    *blame = KVSHARD__OPT_SPLIT_SIZE;
    if (S > 1 && R % S != 0)
        return kvshard__fail(err, KVSHARD_EPROFILE, "", kvshard__no_mark,
                             "the xllm profile needs a split that divides the KV replication: "
                             "layerwise_split_size %u, replication factor %u (the engine sizes "
                             "an owner's KV with its own heads)",
                             S, R);
    *blame = KVSHARD__OPT_COUNT;
    return KVSHARD_OK;
}

int kvshard__plan_validate(uint32_t *out_tp, uint32_t *out_split, const kvshard_model *model,
                           const kvshard_options *o, int *blame, kvshard_error *err)
{
    uint32_t T = kvshard__attn_tp_size(o);
    if (T == 0)
        return kvshard__fail(err, KVSHARD_EWORLD, "", kvshard__no_mark,
                             "world_size %u is not divisible by dp_size %u x cp_size %u = %llu",
                             o->world_size, o->dp_size, o->cp_size,
                             (unsigned long long)o->dp_size * o->cp_size);
    uint32_t S = o->layerwise_split_size;
    uint32_t S_eff = o->enable_layerwise_split && S > 1 && !o->is_draft ? S : 1;
    if (S_eff > 1 && T % S != 0)
        return kvshard__fail(err, KVSHARD_ESPLIT, "", kvshard__no_mark,
                             "layerwise_split_size %u does not divide the attention TP size %u "
                             "(world_size %u / (dp_size %u x cp_size %u))",
                             S, T, o->world_size, o->dp_size, o->cp_size);
    if (S_eff > 1 && o->cp_size > 1)
        return kvshard__fail(err, KVSHARD_ESPLITCP, "", kvshard__no_mark,
                             "layerwise split (layerwise_split_size %u) cannot be combined with "
                             "context parallelism (cp_size %u)",
                             S, o->cp_size);
    const kvshard__model_info *m = &model->info;
    uint32_t H = m->num_kv_heads;
    const kvshard__key_site *kv = &model->sites[KVSHARD__SITE_KV_HEADS];
    if (m->attention == KVSHARD_ATTENTION_GQA && stores_kv(m, o) && H && T % H != 0 && H % T != 0)
        return kvshard__fail(err, KVSHARD_EKVHEADS, model->source, kv->mark,
                             "%s %u and the attention TP size %u do not divide one another",
                             kv->key ? kv->key : "num_key_value_heads", H, T);
    int rc = check_state(model, T, err);
    if (rc == KVSHARD_OK)
        rc = check_profile(model, o, kvshard__replication_factor(m, T), S_eff, blame, err);
    if (rc)
        return rc;
    uint64_t entries = (uint64_t)(T / S_eff) * kvshard__num_kv_layers(m);
    if (entries > KVSHARD_MAX_LAYER_ENTRIES)
        return kvshard__fail(err, KVSHARD_ELIMIT, "", kvshard__no_mark,
                             "the plan would list %llu KV layers over its TP ranks (%u ranks / "
                             "split %u x %u KV layers); the limit is %u "
                             "(KVSHARD_MAX_LAYER_ENTRIES)",
                             (unsigned long long)entries, T, S_eff, kvshard__num_kv_layers(m),
                             KVSHARD_MAX_LAYER_ENTRIES);
    *out_tp = T;
    *out_split = S_eff;
    return KVSHARD_OK;
}

/* ---- ownership ------------------------------------------------------------------ */

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* The pass over the layers of a split plan (S_eff > 1), once each split
 * rank's list has its place: owners, slots and the lists. Inlined for each
 * rule with the rule a constant, so that its loop holds that rule's step
 * alone and its counters stay in registers. The arrays are distinct parts
 * of the plan's block (restrict). */
static ALWAYS_INLINE void split_pass(kvshard_plan *p, kvshard_ownership rule)
{
    const uint32_t S = p->split, L = p->model.num_layers;
    const uint8_t *restrict kinds = p->kinds;
    int32_t *restrict owner = p->owner;
    uint32_t *restrict kv_slot = p->kv_slot, *restrict state_slot = p->state_slot;
    uint32_t *restrict counts = p->owned_counts;
    const uint32_t *restrict offsets = p->owned_offsets;
    uint32_t *restrict layers = p->owned_layers;
    kvshard__owner_walk walk;
    kvshard__owner_walk_begin(&walk, kvshard__num_kv_layers(&p->model), S, rule);
    uint32_t state = 0;
    for (uint32_t i = 0; i < L; i++) {
        uint8_t kind = kinds[i];
        state_slot[i] = kvshard__is_state_kind(kind) ? state++ : UINT32_MAX;
        if (!kvshard__is_kv_kind(kind)) {
            kv_slot[i] = UINT32_MAX;
            owner[i] = kind == KVSHARD_LAYER_NO_CACHE ? KVSHARD_OWNER_NONE : KVSHARD_OWNER_ALL;
            kvshard__owner_skip(&walk);
            continue;
        }
        uint32_t s = kvshard__owner_next(&walk);
        owner[i] = (int32_t)s;
        kv_slot[i] = counts[s]++; /* its place in its owner's list */
        layers[offsets[s] + kv_slot[i]] = i;
    }
}

static void assign_owners(kvshard_plan *p)
{
    /* Locals, and restrict since the arrays are distinct parts of the plan's
     * block, so that a store into one does not make the compiler read the
     * plan's fields or the other arrays again for every layer. */
    const uint32_t S = p->split, L = p->model.num_layers, T = p->tp;
    const uint32_t n_kv = kvshard__num_kv_layers(&p->model);
    const kvshard_ownership rule = p->options.ownership;
    const uint8_t *restrict kinds = p->kinds;
    uint32_t *restrict counts = p->owned_counts, *restrict offsets = p->owned_offsets;
    uint32_t *restrict split_rank_of = p->split_rank_of;
    if (S == 1) {
        /* No split (the common case): every rank stores every KV layer, and
         * the one list of KV layers is in layer order: one pass. */
        int32_t *restrict owner = p->owner;
        uint32_t *restrict kv_slot = p->kv_slot, *restrict state_slot = p->state_slot;
        uint32_t *restrict layers = p->owned_layers;
        uint32_t kv = 0, state = 0;
        for (uint32_t i = 0; i < L; i++) {
            uint8_t kind = kinds[i];
            state_slot[i] = kvshard__is_state_kind(kind) ? state++ : UINT32_MAX;
            owner[i] = kind == KVSHARD_LAYER_NO_CACHE ? KVSHARD_OWNER_NONE : KVSHARD_OWNER_ALL;
            kv_slot[i] = UINT32_MAX;
            if (kvshard__is_kv_kind(kind)) {
                kv_slot[i] = kv;
                layers[kv++] = i;
            }
        }
        counts[0] = kv;
        offsets[0] = 0;
        offsets[1] = kv;
        for (uint32_t r = 0; r < T; r++)
            split_rank_of[r] = 0;
        return;
    }
    /* Each split rank's count first, so that one pass puts every KV layer
     * straight into its owner's list. */
    kvshard__owned_counts(counts, kinds, L, n_kv, S, rule);
    offsets[0] = 0;
    for (uint32_t s = 0; s < S; s++) {
        offsets[s + 1] = offsets[s] + counts[s];
        counts[s] = 0; /* counted again by the pass, as each list fills */
    }
    switch (rule) {
    case KVSHARD_OWNERSHIP_GLOBAL: split_pass(p, KVSHARD_OWNERSHIP_GLOBAL); break;
    case KVSHARD_OWNERSHIP_CONTIGUOUS: split_pass(p, KVSHARD_OWNERSHIP_CONTIGUOUS); break;
    case KVSHARD_OWNERSHIP_ORDINAL:
    default: split_pass(p, KVSHARD_OWNERSHIP_ORDINAL); break;
    }
    for (uint32_t r = 0; r < T; r++)
        split_rank_of[r] = r % S;
    /* Hybrid layers' state is on every rank, whoever owns their KV. */
    if (p->held_by != p->owner) {
        for (uint32_t i = 0; i < L; i++)
            p->held_by[i] = kinds[i] == KVSHARD_LAYER_HYBRID ? KVSHARD_OWNER_ALL : p->owner[i];
    }
}

/* ---- warnings ------------------------------------------------------------------- */

/* Format one warning and hand it to the sink. */
static void warn(const kvshard__warning_inputs *in, kvshard__warning_sink sink, void *ctx,
                 kvshard_warning_code code, const char *fmt, ...) KVSHARD__PRINTF(5, 6);

static void warn(const kvshard__warning_inputs *in, kvshard__warning_sink sink, void *ctx,
                 kvshard_warning_code code, const char *fmt, ...)
{
    (void)in;
    char message[KVSHARD__WARNING_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    sink(ctx, code, message);
}

/* The xllm profile's inputs that the options set, by name, when the plan
 * is under the kvshard profile, which does not read them. */
static void warn_profile_inputs(const kvshard__warning_inputs *in, kvshard__warning_sink sink,
                                void *ctx)
{
    const char *set[KVSHARD__XLLM_INPUTS];
    size_t count = kvshard__xllm_inputs_set(set, in->options);
    if (count == 0)
        return;
    char names[160] = "";
    size_t used = 0;
    for (size_t i = 0; i < count; i++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", set[i]);
    warn(in, sink, ctx, KVSHARD_WARN_PROFILE_INPUTS_IGNORED,
         "%s %s only under engine xllm: the kvshard profile ignores %s", names,
         count == 1 ? "applies" : "apply", count == 1 ? "it" : "them");
}

void kvshard__collect_warnings(const kvshard__warning_inputs *in, kvshard__warning_sink sink,
                               void *ctx)
{
    const kvshard_options *o = in->options;
    uint32_t S = in->split, n_kv = in->n_kv;
    const char *rule = kvshard_ownership_name(o->ownership);
    if (o->layerwise_split_size > 1 && !o->enable_layerwise_split)
        warn(in, sink, ctx, KVSHARD_WARN_SPLIT_DISABLED,
             "layerwise_split_size is %u but enable_layerwise_split is false: every rank stores "
             "every KV layer",
             o->layerwise_split_size);
    if (o->enable_layerwise_split && o->layerwise_split_size == 1)
        warn(in, sink, ctx, KVSHARD_WARN_SPLIT_SIZE_ONE,
             "enable_layerwise_split is true with layerwise_split_size 1: nothing is split");
    if (S > 1 && n_kv > 0) {
        uint32_t lo = UINT32_MAX, hi = 0, empty = 0, first_empty = 0;
        for (uint32_t s = 0; s < S; s++) {
            uint32_t c = in->owned_counts[s];
            if (c == 0 && empty++ == 0)
                first_empty = s;
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
        }
        if (empty)
            warn(in, sink, ctx, KVSHARD_WARN_RANK_OWNS_NOTHING,
                 "%u of %u split ranks own no KV layer (the first is split rank %u; %u KV "
                 "layers, %s rule)",
                 empty, S, first_empty, n_kv, rule);
        if (hi - lo > 1)
            warn(in, sink, ctx, KVSHARD_WARN_IMBALANCED,
                 "split ranks own between %u and %u KV layers (%s rule)", lo, hi, rule);
        if (S > in->replication)
            warn(in, sink, ctx, KVSHARD_WARN_EXCEEDS_REPLICATION,
                 "layerwise_split_size %u exceeds the replication factor %u: the split saves "
                 "less than %ux, since the owner of a layer holds the KV heads of its whole "
                 "split group",
                 S, in->replication, S);
    }
    if (n_kv == 0)
        warn(in, sink, ctx, KVSHARD_WARN_NO_KV_LAYERS,
             "the model has no full-attention or hybrid layer: there is no KV cache to split");
    if (o->is_draft && o->enable_layerwise_split && o->layerwise_split_size > 1)
        warn(in, sink, ctx, KVSHARD_WARN_DRAFT_UNSPLIT,
             "is_draft is true: layerwise split does not apply to a draft model");
    const kvshard__capacity *c = in->capacity;
    if (c->has_concurrency && c->concurrency < o->max_seqs && o->engine == KVSHARD_ENGINE_XLLM) {
        /* The engine's state pool does not follow max_seqs: name its bounds. */
        warn(in, sink, ctx, KVSHARD_WARN_MAX_SEQS_UNREACHABLE,
             "at %u tokens %llu sequences run at once, below max_seqs %u: the engine has %llu "
             "usable blocks (%llu a sequence) and %llu usable state slots",
             o->context_length, (unsigned long long)c->concurrency, o->max_seqs,
             (unsigned long long)c->usable_blocks,
             (unsigned long long)kvshard__ceil_div(o->context_length, o->block_size),
             (unsigned long long)c->usable_state_slots);
    } else if (c->has_concurrency && c->concurrency < o->max_seqs) {
        uint64_t idle = (uint64_t)(o->max_seqs - c->concurrency), held;
        if (!kvshard__mul(&held, idle, in->state_bytes_per_seq))
            held = UINT64_MAX;
        char balanced[64] = "";
        if (c->has_balanced_max_seqs)
            snprintf(balanced, sizeof balanced, "; balanced max_seqs is %llu",
                     (unsigned long long)c->balanced_max_seqs);
        const char *runs = c->concurrency == 1 ? "sequence runs" : "sequences run";
        if (in->state_bytes_per_seq == 0)
            warn(in, sink, ctx, KVSHARD_WARN_MAX_SEQS_UNREACHABLE,
                 "at %u tokens %llu %s at once, below max_seqs %u (the model keeps no state, so "
                 "no memory is held back)%s",
                 o->context_length, (unsigned long long)c->concurrency, runs, o->max_seqs,
                 balanced);
        else
            warn(in, sink, ctx, KVSHARD_WARN_MAX_SEQS_UNREACHABLE,
                 "at %u tokens %llu %s at once, below max_seqs %u: the state slots of %llu "
                 "sequence%s (%llu bytes per rank) cannot be used%s",
                 o->context_length, (unsigned long long)c->concurrency, runs, o->max_seqs,
                 (unsigned long long)idle, idle == 1 ? "" : "s", (unsigned long long)held,
                 balanced);
    }
    if (o->engine == KVSHARD_ENGINE_KVSHARD)
        warn_profile_inputs(in, sink, ctx);
}

static void keep_warning(void *ctx, kvshard_warning_code code, const char *message)
{
    kvshard_plan *p = ctx;
    if (p->warning_count == KVSHARD__MAX_WARNINGS)
        return;
    kvshard__warning *w = &p->warnings[p->warning_count++];
    w->code = code;
    snprintf(w->message, sizeof w->message, "%s", message);
}

static void collect_warnings(kvshard_plan *p)
{
    kvshard__warning_inputs in = {&p->options,
                                  p->split,
                                  p->replication,
                                  kvshard__num_kv_layers(&p->model),
                                  p->owned_counts,
                                  &p->cap,
                                  p->ranks[0].state_bytes_per_seq};
    kvshard__collect_warnings(&in, keep_warning, p);
}

/* ---- digests ------------------------------------------------------------------- */

/* A word-at-a-time hash: each 64-bit word is mixed with a multiply and a
 * rotation, and the end folds the bits together. */
typedef struct hasher {
    uint64_t h;
} hasher;

static inline uint64_t mix_word(uint64_t h, uint64_t m)
{
    h ^= m;
    return ((h << 31) | (h >> 33)) * 0xC2B2AE3D27D4EB4Full;
}

static inline void hash_word(hasher *x, uint64_t v)
{
    x->h = mix_word(x->h, v * 0x9E3779B97F4A7C15ull);
}

/* The same word into two hashes: their chains of multiplies are independent,
 * so the processor runs them side by side. */
static inline void hash_word2(hasher *x, hasher *y, uint64_t v)
{
    uint64_t m = v * 0x9E3779B97F4A7C15ull;
    x->h = mix_word(x->h, m);
    y->h = mix_word(y->h, m);
}

/* Eight bytes as a little-endian word on any host (compilers make this one
 * load where the host is little-endian). */
static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

/* Bytes as little-endian words, whatever the host's byte order, so that
 * every host computes the same digest; then the tail (zero-padded) with the
 * length in its top byte. */
static void hash_bytes2(hasher *x, hasher *y, const uint8_t *p, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        hash_word2(x, y, load_le64(p + i));
    uint64_t tail = 0;
    for (size_t k = len; k > i; k--)
        tail = tail << 8 | p[k - 1];
    hash_word2(x, y, tail ^ ((uint64_t)len << 56));
}

/* The owners as hash_bytes2 would take their little-endian bytes: two a
 * word, the length in bytes last. */
static void hash_owners2(hasher *x, hasher *y, const int32_t *owner, size_t n)
{
    size_t i = 0;
    for (; i + 2 <= n; i += 2)
        hash_word2(x, y, (uint64_t)(uint32_t)owner[i] | (uint64_t)(uint32_t)owner[i + 1] << 32);
    uint64_t tail = i < n ? (uint32_t)owner[i] : 0;
    hash_word2(x, y, tail ^ ((uint64_t)(4 * n) << 56));
}

static uint64_t hash_end(hasher *x)
{
    uint64_t h = x->h;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h;
}

/* What every rank stores per token and per sequence: the layout. Both
 * digests begin with it, so it is hashed into both in one pass. */
static void hash_layout2(hasher *x, hasher *y, const kvshard_plan *p)
{
    hash_word2(x, y, p->model.num_layers);
    hash_word2(x, y, (uint64_t)p->tp << 32 | p->split);
    hash_bytes2(x, y, p->kinds, p->model.num_layers);
    hash_owners2(x, y, p->owner, p->model.num_layers);
    for (uint32_t r = 0; r < p->tp; r++) {
        const kvshard_rank_memory *m = &p->ranks[r];
        hash_word2(x, y, m->kv_bytes_per_token);
        hash_word2(x, y, m->scratch_bytes_per_token);
        hash_word2(x, y, m->draft_bytes_per_token);
        hash_word2(x, y, m->state_bytes_per_seq);
    }
}

static void compute_digests(kvshard_plan *p)
{
    hasher layout = {0x6B7673686172644Cull};
    hasher full = {0x6B76736861726450ull};
    hash_layout2(&layout, &full, p);
    p->layout_digest = hash_end(&layout);

    for (uint32_t r = 0; r < p->tp; r++) {
        hash_word(&full, p->ranks[r].bytes_per_block);
        hash_word(&full, p->ranks[r].has_num_blocks ? p->ranks[r].num_blocks : UINT64_MAX);
    }
    const kvshard_capacity *c = &p->capacity;
    hash_word(&full, (uint64_t)c->engine << 32 | c->block_size);
    hash_word(&full, c->memory_per_rank);
    hash_word(&full, (uint64_t)c->max_seqs << 32 | c->context_length);
    hash_word(&full, c->has_num_blocks ? c->num_blocks : UINT64_MAX);
    hash_word(&full, c->has_concurrency ? c->concurrency : UINT64_MAX);
    hash_word(&full, c->has_balanced_max_seqs ? c->balanced_max_seqs : UINT64_MAX);
    hash_word(&full, c->has_state_slots ? c->state_slots : UINT64_MAX);
    hash_word(&full, p->uniform.kv_bytes_per_token);
    hash_word(&full, p->uniform.bytes_per_block);
    hash_word(&full, p->uniform.has_num_blocks ? p->uniform.num_blocks : UINT64_MAX);
    p->digest = hash_end(&full);
}

/* ---- create and free ------------------------------------------------------------- */

/* The plan and all its arrays are one allocation (see plan_block). */
void kvshard_plan_free(kvshard_plan *plan)
{
    if (!plan)
        return;
    kvshard_allocator a = plan->alloc;
    kvshard__free(&a, plan);
}

kvshard__memory_inputs kvshard__plan_memory_inputs(const kvshard_plan *plan)
{
    kvshard__memory_inputs in = {&plan->model,
                                 &plan->options,
                                 plan->tp,
                                 plan->split,
                                 plan->owned_counts,
                                 plan->model.count,
                                 plan->options.engine != KVSHARD_ENGINE_XLLM,
                                 plan->source};
    return in;
}

int kvshard__capacity_memory(uint64_t *out, bool *has, const kvshard_options *o, kvshard_error *err)
{
    if (o->engine == KVSHARD_ENGINE_XLLM)
        return kvshard__xllm_budget(out, has, o, err);
    *out = o->memory_per_rank;
    *has = o->memory_per_rank > 0;
    return KVSHARD_OK;
}

/* Per-rank scratch of up to this many ranks sits on the stack. */
#define SCRATCH_RANKS 16u

/* The same plan at S_eff = 1: the largest figures, the fewest blocks (0
 * when the unsplit plan fits none). */
static int compute_uniform(kvshard_plan *p, uint64_t memory, bool has_memory, kvshard_error *err)
{
    if (p->split == 1) {
        /* The plan is its own unsplit plan: its blocks are the plan's. */
        p->uniform = kvshard__uniform_of(p->ranks, p->tp, &p->options, p->unsplit_bytes_per_block,
                                         memory, false);
        p->uniform.has_num_blocks = p->cap.has_num_blocks;
        p->uniform.num_blocks = p->cap.num_blocks;
        return KVSHARD_OK;
    }
    kvshard_rank_memory local[SCRATCH_RANKS];
    kvshard_rank_memory *ranks =
        p->tp <= SCRATCH_RANKS ? local : kvshard__alloc(&p->alloc, p->tp, sizeof *ranks);
    if (!ranks)
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
    uint32_t all = kvshard__num_kv_layers(&p->model);
    kvshard__memory_inputs in = kvshard__plan_memory_inputs(p);
    in.split = 1;
    in.owned = &all;
    int rc = kvshard__memory_ranks(ranks, &in, err);
    if (rc == KVSHARD_OK)
        p->uniform = kvshard__uniform_of(ranks, p->tp, &p->options, p->unsplit_bytes_per_block,
                                         memory, has_memory);
    if (ranks != local)
        kvshard__free(&p->alloc, ranks);
    return rc;
}

static int compute_memory(kvshard_plan *p, int *blame, kvshard_error *err)
{
    kvshard__memory_inputs in = kvshard__plan_memory_inputs(p);
    uint64_t own = 0;
    uint32_t first, heads = 0;
    if (p->model.num_kv_heads)
        kvshard__kv_heads(&first, &heads, p->model.num_kv_heads, p->tp, 0, 0);
    int rc = kvshard__memory_ranks(p->ranks, &in, err);
    if (rc == KVSHARD_OK)
        rc = kvshard__state_bytes(&p->state_per_layer, &in, err);
    if (rc == KVSHARD_OK)
        rc = kvshard__layer_bytes(&own, &in, heads, err);
    if (rc)
        return rc;
    uint64_t unsplit;
    if (!kvshard__mul(&unsplit, own, kvshard__num_kv_layers(&p->model)) ||
        !kvshard__mul(&p->unsplit_bytes_per_block, unsplit, p->options.block_size))
        return kvshard__fail(err, KVSHARD_EOVERFLOW, "", kvshard__no_mark,
                             "the unsplit bytes per block overflow 64 bits at block_size %u tokens",
                             p->options.block_size);
    uint64_t memory = 0;
    bool has_memory = false;
    if ((rc = kvshard__capacity_memory(&memory, &has_memory, &p->options, err)) != 0)
        return rc;
    const kvshard_options *o = &p->options;
    kvshard__capacity c = {false, 0, 0, 0, false, 0, false, 0, false, 0, 0, 0};
    if (has_memory) {
        uint64_t local[SCRATCH_RANKS];
        uint64_t *blocks =
            p->tp <= SCRATCH_RANKS ? local : kvshard__alloc(&p->alloc, p->tp, sizeof *blocks);
        if (!blocks)
            return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
        kvshard__capacity_inputs ci = {o,
                                       p->ranks,
                                       p->tp,
                                       p->split,
                                       p->unsplit_bytes_per_block,
                                       memory,
                                       0,
                                       o->context_length,
                                       KVSHARD_ALL_RANKS};
        rc = kvshard__capacity_compute(&c, blocks, &ci, err);
        if (rc == KVSHARD_EPROFILE) /* the only profile error of the capacity */
            *blame = KVSHARD__OPT_STATE_SLOTS;
        for (uint32_t r = 0; rc == KVSHARD_OK && r < p->tp; r++) {
            bool counted = o->engine == KVSHARD_ENGINE_XLLM ? c.has_num_blocks
                                                            : p->ranks[r].bytes_per_block > 0;
            p->ranks[r].has_num_blocks = counted;
            p->ranks[r].num_blocks = counted ? blocks[r] : 0;
        }
        if (blocks != local)
            kvshard__free(&p->alloc, blocks);
        if (rc)
            return rc;
    }
    p->cap = c;
    kvshard_capacity *cap = &p->capacity;
    kvshard_capacity init = KVSHARD_CAPACITY_INIT;
    *cap = init;
    cap->engine = o->engine;
    cap->block_size = o->block_size;
    cap->memory_per_rank = has_memory ? memory : 0;
    cap->max_seqs = o->max_seqs;
    cap->has_num_blocks = c.has_num_blocks;
    cap->num_blocks = c.num_blocks;
    cap->max_tokens = c.max_tokens;
    cap->context_length = o->context_length;
    cap->has_concurrency = c.has_concurrency;
    cap->concurrency = c.concurrency;
    cap->has_balanced_max_seqs = c.has_balanced_max_seqs;
    cap->balanced_max_seqs = c.balanced_max_seqs;
    cap->has_state_slots = c.has_state_slots;
    cap->state_slots = c.state_slots;
    cap->usable_blocks = c.usable_blocks;
    cap->usable_state_slots = c.usable_state_slots;
    return compute_uniform(p, memory, has_memory, err);
}

/* Carve `n` items of `size` bytes, aligned to `align`, from a block being
 * laid out: the offset into *at, the end past it. */
static bool carve(size_t *at, size_t *end, size_t n, size_t size, size_t align)
{
    size_t start = (*end + align - 1) / align * align;
    if (start < *end || (size && n > (SIZE_MAX - start) / size))
        return false;
    *at = start;
    *end = start + n * size;
    return true;
}

/* The plan and all its arrays in one allocation, so that creating a plan
 * costs one call to the allocator and freeing it one more. The struct is
 * zeroed except its warning texts, which are written before they are read;
 * the ranks are zeroed; the strings are copied in. */
static kvshard_plan *plan_block(const kvshard_allocator *a, const kvshard_model *model, uint32_t T,
                                uint32_t S)
{
    size_t L = model->info.num_layers, n_kv = kvshard__num_kv_layers(&model->info);
    size_t type_len = strlen(model->model_type) + 1, source_len = strlen(model->source) + 1;
    /* Only a split of a model with hybrid layers holds a layer where its
     * owner does not: otherwise `held_by` is `owner`. */
    size_t held = S > 1 && model->info.count[KVSHARD_LAYER_HYBRID] > 0 ? L : 0;
    size_t end = sizeof(kvshard_plan), ranks, owner, held_by, kv_slot, state_slot, split_rank_of,
           owned_offsets, owned_layers, owned_counts, kinds, model_type, source;
    if (!carve(&ranks, &end, T, sizeof(kvshard_rank_memory), sizeof(uint64_t)) ||
        !carve(&owner, &end, L, sizeof(int32_t), sizeof(uint32_t)) ||
        !carve(&held_by, &end, held, sizeof(int32_t), sizeof(uint32_t)) ||
        !carve(&kv_slot, &end, L, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&state_slot, &end, L, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&split_rank_of, &end, T, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owned_offsets, &end, (size_t)S + 1, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owned_layers, &end, n_kv, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&owned_counts, &end, S, sizeof(uint32_t), sizeof(uint32_t)) ||
        !carve(&kinds, &end, L, 1, 1) || !carve(&model_type, &end, type_len, 1, 1) ||
        !carve(&source, &end, source_len, 1, 1))
        return NULL;
    char *block = kvshard__alloc(a, 1, end);
    if (!block)
        return NULL;
    kvshard_plan *p = (kvshard_plan *)(void *)block;
    memset(p, 0, offsetof(kvshard_plan, warnings));
    p->warning_count = 0;
    p->digest = 0;
    p->layout_digest = 0;
    p->alloc = *a;
    p->ranks = (kvshard_rank_memory *)(void *)(block + ranks);
    memset(p->ranks, 0, (size_t)T * sizeof *p->ranks);
    p->owner = (int32_t *)(void *)(block + owner);
    p->held_by = held ? (int32_t *)(void *)(block + held_by) : p->owner;
    p->kv_slot = (uint32_t *)(void *)(block + kv_slot);
    p->state_slot = (uint32_t *)(void *)(block + state_slot);
    p->split_rank_of = (uint32_t *)(void *)(block + split_rank_of);
    p->owned_offsets = (uint32_t *)(void *)(block + owned_offsets);
    p->owned_layers = (uint32_t *)(void *)(block + owned_layers);
    p->owned_counts = (uint32_t *)(void *)(block + owned_counts);
    p->kinds = (uint8_t *)(block + kinds);
    p->model_type = block + model_type;
    memcpy(p->model_type, model->model_type, type_len);
    p->source = block + source;
    memcpy(p->source, model->source, source_len);
    return p;
}

int kvshard__begin_planning(kvshard_options *out, bool args_ok, const kvshard_options *options,
                            const kvshard_allocator *allocator, int *blame, kvshard_error *err)
{
    *blame = KVSHARD__OPT_COUNT;
    kvshard__error_reset(err);
    if (!args_ok)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "out and model must not be NULL");
    if (!kvshard__allocator_valid(allocator))
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_allocator: malloc_fn and free_fn must both be set");
    kvshard_options defaults = KVSHARD_OPTIONS_INIT;
    const kvshard_options *given = options ? options : &defaults;
    int rc = kvshard__options_check(given, err);
    if (rc == KVSHARD_OK)
        *out = kvshard__options_settle(given);
    return rc;
}

int kvshard__plan_create(kvshard_plan **out, const kvshard_model *model,
                         const kvshard_options *options, const kvshard_allocator *allocator,
                         int *blame, kvshard_error *err)
{
    kvshard_options o;
    int rc = kvshard__begin_planning(&o, out && model, options, allocator, blame, err);
    if (rc)
        return rc;
    uint32_t T = 0, S = 0;
    if ((rc = kvshard__plan_validate(&T, &S, model, &o, blame, err)) != 0)
        return rc;

    kvshard_allocator a = kvshard__allocator_or_default(allocator);
    kvshard_plan *p = plan_block(&a, model, T, S);
    if (!p)
        return kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark,
                             "out of memory creating the plan");
    p->model = model->info;
    p->options = o;
    p->tp = T;
    p->split = S;
    p->replication = kvshard__replication_factor(&model->info, T);
    p->state_dtype = kvshard__state_dtype(&model->info, &o);
    memcpy(p->kinds, model->kinds, model->info.num_layers);
    assign_owners(p);
    if ((rc = compute_memory(p, blame, err)) != 0) {
        kvshard_plan_free(p);
        return rc;
    }
    collect_warnings(p);
    compute_digests(p);
    *out = p;
    return KVSHARD_OK;
}

int kvshard_plan_create(kvshard_plan **out, const kvshard_model *model,
                        const kvshard_options *options, const kvshard_allocator *allocator,
                        kvshard_error *err)
{
    int blame;
    return kvshard__plan_create(out, model, options, allocator, &blame, err);
}

/* ---- queries ------------------------------------------------------------------------ */

int kvshard_plan_options(kvshard_options *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &plan->options, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                            : KVSHARD_EINVAL;
}

uint32_t kvshard_plan_attn_tp_size(const kvshard_plan *plan)
{
    return plan->tp;
}

uint32_t kvshard_plan_effective_split_size(const kvshard_plan *plan)
{
    return plan->split;
}

uint32_t kvshard_plan_replication_factor(const kvshard_plan *plan)
{
    return plan->replication;
}

uint32_t kvshard_plan_num_layers(const kvshard_plan *plan)
{
    return plan->model.num_layers;
}

kvshard_state_kind kvshard_plan_state_kind(const kvshard_plan *plan)
{
    return plan->model.state.kind;
}

kvshard_dtype kvshard_plan_state_dtype(const kvshard_plan *plan)
{
    return plan->state_dtype;
}

int kvshard_plan_layer_kind(kvshard_layer_kind *out, const kvshard_plan *plan, uint32_t layer)
{
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    *out = (kvshard_layer_kind)plan->kinds[layer];
    return KVSHARD_OK;
}

int kvshard_plan_layer_owner(int32_t *out, const kvshard_plan *plan, uint32_t layer)
{
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    *out = plan->owner[layer];
    return KVSHARD_OK;
}

/* kvshard_plan_owns() runs per layer and rank in an engine's loops, where a
 * call costs a few cycles: starting it on a 64-byte boundary keeps its
 * instructions in one fetch block, so its cost does not move with whatever
 * code the linker puts before it. */
#if defined(__GNUC__)
#define OWNS_ALIGNED __attribute__((aligned(64)))
#else
#define OWNS_ALIGNED
#endif

OWNS_ALIGNED bool kvshard_plan_owns(const kvshard_plan *plan, uint32_t tp_rank, uint32_t layer)
{
    if (tp_rank >= plan->tp || layer >= plan->model.num_layers)
        return false;
    /* Without branches on the data: every rank holds a layer held by all
     * (owned by all, or a hybrid layer, whose state is on every rank
     * whoever owns its KV), and the ranks of the split rank that owns it
     * hold the rest; KVSHARD_OWNER_NONE is no split rank. */
    uint32_t held = (uint32_t)plan->held_by[layer];
    return (held == (uint32_t)KVSHARD_OWNER_ALL) | (held == plan->split_rank_of[tp_rank]);
}

bool kvshard_plan_stores_kv(const kvshard_plan *plan, uint32_t tp_rank, uint32_t layer)
{
    if (tp_rank >= plan->tp || layer >= plan->model.num_layers)
        return false;
    int32_t owner = plan->owner[layer];
    return kvshard__is_kv_kind(plan->kinds[layer]) &&
           (owner == KVSHARD_OWNER_ALL || (uint32_t)owner == plan->split_rank_of[tp_rank]);
}

int kvshard_plan_split_position(uint32_t *out_split_rank, uint32_t *out_split_group,
                                const kvshard_plan *plan, uint32_t tp_rank)
{
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    if (out_split_rank)
        *out_split_rank = tp_rank % plan->split;
    if (out_split_group)
        *out_split_group = tp_rank / plan->split;
    return KVSHARD_OK;
}

int kvshard_plan_rank_layers(const uint32_t **out, size_t *out_count, const kvshard_plan *plan,
                             uint32_t tp_rank)
{
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    uint32_t s = plan->split_rank_of[tp_rank];
    *out = plan->owned_layers + plan->owned_offsets[s];
    *out_count = plan->owned_counts[s];
    return KVSHARD_OK;
}

int kvshard_plan_layer_storage(kvshard_layer_storage *out, const kvshard_plan *plan,
                               uint32_t tp_rank, uint32_t layer)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    if (layer >= plan->model.num_layers)
        return KVSHARD_ELAYER;
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    uint8_t kind = plan->kinds[layer];
    uint32_t S = plan->split, H = plan->model.num_kv_heads;
    kvshard__memory_inputs in = kvshard__plan_memory_inputs(plan);
    st.kind = (kvshard_layer_kind)kind;
    st.stores_kv = kvshard_plan_stores_kv(plan, tp_rank, layer);
    if (kvshard__is_state_kind(kind)) {
        st.state_slot = (int32_t)plan->state_slot[layer];
        st.state_bytes_per_seq = plan->state_per_layer;
    }
    if (kvshard__is_kv_kind(kind)) {
        int32_t owner = plan->owner[layer];
        uint32_t group = tp_rank / S * S;
        st.owner_tp_rank =
            (int32_t)(owner == KVSHARD_OWNER_ALL ? tp_rank : group + (uint32_t)owner);
    }
    uint32_t first = tp_rank, last = tp_rank;
    bool holds = st.stores_kv || kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    if (st.stores_kv) {
        st.kv_slot = (int32_t)plan->kv_slot[layer];
        if (S > 1) { /* the owner holds its whole group's heads */
            first = tp_rank / S * S;
            last = first + S - 1;
        }
    }
    if (holds) {
        uint32_t count = 0;
        if (plan->model.attention == KVSHARD_ATTENTION_GQA && H)
            kvshard__kv_heads(&st.kv_head_first, &count, H, plan->tp, first, last);
        st.kv_head_count = count;
        if (kvshard__layer_bytes(&st.kv_bytes_per_token, &in, count, NULL) != KVSHARD_OK)
            return KVSHARD_EOVERFLOW; /* not reached: the plan's figures fit */
        if (plan->model.attention == KVSHARD_ATTENTION_MLA)
            st.kv_head_first = 0;
    }
    if (kind == KVSHARD_LAYER_SLIDING_ATTENTION &&
        kvshard__window_bytes(&st.state_bytes_per_seq, &in, NULL) != KVSHARD_OK)
        return KVSHARD_EOVERFLOW;
    return kvshard__copy_out(out, &st, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_plan_rank_memory(kvshard_rank_memory *out, const kvshard_plan *plan, uint32_t tp_rank)
{
    if (!plan)
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    return kvshard__copy_out(out, &plan->ranks[tp_rank], sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                                   : KVSHARD_EINVAL;
}

int kvshard_plan_capacity(kvshard_capacity *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &plan->capacity, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                             : KVSHARD_EINVAL;
}

int kvshard_plan_uniform(kvshard_uniform *out, const kvshard_plan *plan)
{
    if (!plan)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &plan->uniform, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                            : KVSHARD_EINVAL;
}

int kvshard_plan_blocks_for(kvshard_blocks *out, const kvshard_plan *plan, uint32_t tp_rank,
                            const kvshard_budget *budget, kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!out || !plan || !budget)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "out, plan and budget must not be NULL");
    if (budget->size != sizeof *budget || out->size != sizeof *out)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_budget and kvshard_blocks: start from their INIT macros");
    if (tp_rank != KVSHARD_ALL_RANKS && tp_rank >= plan->tp)
        return kvshard__fail(err, KVSHARD_ERANK, "", kvshard__no_mark,
                             "TP rank %u is outside 0..%u", tp_rank, plan->tp - 1);
    if (budget->context_length > KVSHARD_MAX_CONTEXT_LENGTH)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "context_length: %u is out of range; expected an integer from 0 to "
                             "%u",
                             budget->context_length, KVSHARD_MAX_CONTEXT_LENGTH);
    if (budget->reserved_bytes >= budget->memory_per_rank)
        return kvshard__fail(err, KVSHARD_ENOBLOCK, "", kvshard__no_mark,
                             "no memory for one block: memory_per_rank %llu bytes, of which %llu "
                             "are reserved",
                             (unsigned long long)budget->memory_per_rank,
                             (unsigned long long)budget->reserved_bytes);
    uint64_t unsplit = plan->unsplit_bytes_per_block;
    kvshard__capacity_inputs ci = {&plan->options,
                                   plan->ranks,
                                   plan->tp,
                                   plan->split,
                                   unsplit,
                                   budget->memory_per_rank - budget->reserved_bytes,
                                   budget->extra_bytes_per_block,
                                   budget->context_length,
                                   tp_rank};
    kvshard__capacity c;
    int rc = kvshard__capacity_compute(&c, NULL, &ci, err);
    if (rc)
        return rc;
    if (!c.has_num_blocks)
        return kvshard__fail(err, KVSHARD_ERANGE, "", kvshard__no_mark,
                             "the plan has no KV bytes per block: memory does not bound its "
                             "blocks");
    kvshard_blocks b = KVSHARD_BLOCKS_INIT;
    b.num_blocks = c.num_blocks;
    b.max_tokens = c.max_tokens;
    b.has_concurrency = c.has_concurrency;
    b.concurrency = c.concurrency;
    b.has_balanced_max_seqs = c.has_balanced_max_seqs;
    b.balanced_max_seqs = c.balanced_max_seqs;
    b.has_state_slots = c.has_state_slots;
    b.state_slots = c.state_slots;
    b.usable_blocks = c.usable_blocks;
    b.usable_state_slots = c.usable_state_slots;
    *out = b;
    return KVSHARD_OK;
}

const char *kvshard_warning_name(kvshard_warning_code code)
{
    switch (code) {
    case KVSHARD_WARN_SPLIT_DISABLED: return "split_disabled";
    case KVSHARD_WARN_SPLIT_SIZE_ONE: return "split_size_one";
    case KVSHARD_WARN_RANK_OWNS_NOTHING: return "rank_owns_nothing";
    case KVSHARD_WARN_IMBALANCED: return "imbalanced";
    case KVSHARD_WARN_EXCEEDS_REPLICATION: return "exceeds_replication";
    case KVSHARD_WARN_NO_KV_LAYERS: return "no_kv_layers";
    case KVSHARD_WARN_DRAFT_UNSPLIT: return "draft_unsplit";
    case KVSHARD_WARN_MAX_SEQS_UNREACHABLE: return "max_seqs_unreachable";
    case KVSHARD_WARN_PROFILE_INPUTS_IGNORED: return "profile_inputs_ignored";
    default: return "unknown";
    }
}

size_t kvshard_plan_warning_count(const kvshard_plan *plan)
{
    return plan->warning_count;
}

int kvshard_plan_warning(kvshard_warning_code *out_code, const char **out_message,
                         const kvshard_plan *plan, size_t index)
{
    if (index >= plan->warning_count)
        return KVSHARD_EINVAL;
    if (out_code)
        *out_code = plan->warnings[index].code;
    if (out_message)
        *out_message = plan->warnings[index].message;
    return KVSHARD_OK;
}

bool kvshard_plan_has_warning(const kvshard_plan *plan, kvshard_warning_code code)
{
    for (size_t i = 0; i < plan->warning_count; i++) {
        if (plan->warnings[i].code == code)
            return true;
    }
    return false;
}

uint64_t kvshard_plan_digest(const kvshard_plan *plan)
{
    return plan->digest;
}

uint64_t kvshard_plan_layout_digest(const kvshard_plan *plan)
{
    return plan->layout_digest;
}

int kvshard_plan_describe_rank(char *buf, size_t cap, const kvshard_plan *plan, uint32_t tp_rank)
{
    if (!plan || (!buf && cap))
        return KVSHARD_EINVAL;
    if (tp_rank >= plan->tp)
        return KVSHARD_ERANK;
    const kvshard_rank_memory *m = &plan->ranks[tp_rank];
    uint32_t s = plan->split_rank_of[tp_rank];
    const uint32_t *layers = plan->owned_layers + plan->owned_offsets[s];
    uint32_t count = plan->owned_counts[s];
    char list[96] = "";
    size_t used = 0;
    for (uint32_t i = 0; i < count && used + 12 < sizeof list - 8; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", i ? " " : "", layers[i]);
    if (used && count > 0 && used + 12 >= sizeof list - 8)
        snprintf(list + used, sizeof list - used, " ...");
    char blocks[48] = "no capacity";
    if (m->has_num_blocks)
        snprintf(blocks, sizeof blocks, "%llu blocks of %u", (unsigned long long)m->num_blocks,
                 plan->options.block_size);
    int n = snprintf(
        buf, cap,
        "kvshard %s: tp_rank %u/%u split rank %u group %u (S_eff %u, %s): KV of %u "
        "layers [%s], %llu B/token + %llu scratch + %llu draft, state %llu B/seq, "
        "%s, layout %016llx",
        KVSHARD_VERSION_STRING, tp_rank, plan->tp, s, tp_rank / plan->split, plan->split,
        kvshard_ownership_name(plan->options.ownership), count, list,
        (unsigned long long)m->kv_bytes_per_token, (unsigned long long)m->scratch_bytes_per_token,
        (unsigned long long)m->draft_bytes_per_token, (unsigned long long)m->state_bytes_per_seq,
        blocks, (unsigned long long)plan->layout_digest);
    return n < 0 ? KVSHARD_EINVAL : n;
}
