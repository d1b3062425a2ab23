/* Budgets from the device: what a rank of each stage keeps for cache and
 * state once its weights and the activation reserve are taken from the
 * usable share of its GPU. */
#include "plan/device.h"

#include "base/checked.h"
#include "profile/capacity.h"
#include "profile/profiles.h"
#include "text/file.h"
#include "text/json_doc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BILLION UINT64_C(1000000000)
#define GIB (UINT64_C(1) << 30)

void kvshard_device__ppb_text(char *buf, size_t cap, uint32_t ppb)
{
    /* Exact: the billionths as written, trailing zeros dropped. */
    int n = snprintf(buf, cap, "%u.%09u", ppb / 1000000000u, ppb % 1000000000u);
    while (n > 2 && (size_t)n < cap && buf[n - 1] == '0' && buf[n - 2] != '.')
        buf[--n] = '\0';
}

void kvshard_device__ppb_flag_text(char *buf, size_t cap, uint32_t ppb)
{
    kvshard_device__ppb_text(buf, cap, ppb);
    size_t n = strlen(buf);
    if (n > 2 && buf[n - 2] == '.' && buf[n - 1] == '0')
        buf[n - 2] = '\0'; /* 1.0 -> 1 */
}

/* floor(bytes x ppb / 10^9) without 128-bit arithmetic: ppb is at most
 * 10^9, so neither part overflows. */
static uint64_t share_of(uint64_t bytes, uint32_t ppb)
{
    return bytes / BILLION * ppb + bytes % BILLION * ppb / BILLION;
}

/* The directory of a model read from a file: its weights sit beside it. */
static bool model_directory(char *out, size_t cap, const kvshard_model *model)
{
    if (!model->from_file || !model->source)
        return false;
    const char *slash = strrchr(model->source, '/');
    if (!slash)
        return snprintf(out, cap, ".") > 0;
    size_t n = (size_t)(slash - model->source);
    if (n + 1 > cap)
        return false;
    memcpy(out, model->source, n ? n : 1); /* "/config.json" is in "/" */
    out[n ? n : 1] = '\0';
    return true;
}

/* What a tensor's share depends on, from the model: layers, heads, which
 * layers are sliding windows (a shared-KV layer as its source), the tie. */
static int classify_weights(kvshard__weights **out, const kvshard__safetensors *set,
                            const kvshard_model *model, const kvshard_allocator *alloc,
                            kvshard_error *err)
{
    const kvshard__model_info *m = &model->info;
    uint32_t L = m->num_layers, D = m->num_draft_layers;
    bool *sliding = kvshard_alloc__bytes(alloc, (size_t)L + D + 1, sizeof *sliding);
    if (!sliding)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    for (uint32_t i = 0; i < L; i++) {
        int32_t src = model->kv_source ? model->kv_source[i] : -1;
        uint8_t kind = model->kinds[src >= 0 ? (uint32_t)src : i];
        sliding[i] = kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    }
    for (uint32_t d = 0; d < D; d++)
        sliding[L + d] = model->draft_class &&
                         m->classes[model->draft_class[d]].kind == KVSHARD_LAYER_SLIDING_ATTENTION;
    kvshard__wgeometry g = {
        .num_layers = L,
        .gqa = m->attention == KVSHARD_ATTENTION_GQA,
        /* The query heads shape the GQA attention tensors' share only. */
        .num_heads = m->attention == KVSHARD_ATTENTION_GQA
                         ? model->sites[KVSHARD__SITE_Q_HEADS].value
                         : 0,
        .num_kv_heads = m->full.heads,
        .sliding_heads = 0,
        .sliding_kv_heads = m->sliding.heads,
        .sliding = sliding,
        .sliding_count = L + D,
        .tie_word_embeddings = m->tie_word_embeddings,
    };
    int rc = kvshard_weights__build(out, set, &g, alloc, err);
    kvshard_alloc__free(alloc, sliding);
    return rc;
}

/* Room for the stages of a layout the memo keeps: a layout of more is
 * walked every time. */
#define MEMO_STAGES 64u

struct kvshard__stage_memo {
    bool valid;
    uint32_t tp, dp, cp, pp;
    bool expert_parallel, speculative;
    uint32_t stage_layers[MEMO_STAGES];
    uint64_t bytes[MEMO_STAGES];
};

static bool memo_holds(const struct kvshard__stage_memo *m, const kvshard__wlayout *l)
{
    return m && m->valid && m->tp == l->tp && m->dp == l->dp && m->cp == l->cp &&
           m->pp == l->pp && m->expert_parallel == l->expert_parallel &&
           m->speculative == l->speculative &&
           memcmp(m->stage_layers, l->stage_layers, l->pp * sizeof *l->stage_layers) == 0;
}

static void memo_keep(struct kvshard__stage_memo *m, const kvshard__wlayout *l,
                      const uint64_t *bytes)
{
    if (!m || l->pp > MEMO_STAGES)
        return;
    m->valid = true;
    m->tp = l->tp, m->dp = l->dp, m->cp = l->cp, m->pp = l->pp;
    m->expert_parallel = l->expert_parallel;
    m->speculative = l->speculative;
    memcpy(m->stage_layers, l->stage_layers, l->pp * sizeof *l->stage_layers);
    memcpy(m->bytes, bytes, l->pp * sizeof *bytes);
}

/* A key of the text config, else of the top level; null counts as absent. */
static bool config_get(kvshard__node *out, const kvshard__doc *doc, const kvshard__node *text,
                       const kvshard__node *root, const char *key)
{
    return (text && kvshard_tape__map_get(doc, text, key, out) &&
            !kvshard_tape__node_is_null(out)) ||
           (kvshard_tape__map_get(doc, root, key, out) && !kvshard_tape__node_is_null(out));
}

/* The first of `keys` the config gives as a positive integer, else 0. */
static uint64_t config_uint(const kvshard__doc *doc, const kvshard__node *text,
                            const kvshard__node *root, const char *const *keys)
{
    for (; *keys; keys++) {
        kvshard__node n;
        uint64_t v = 0;
        kvshard_error ignored;
        if (config_get(&n, doc, text, root, *keys) &&
            kvshard_tape__node_uint(&v, doc, &n, *keys, 1, UINT64_MAX, &ignored) == KVSHARD_OK)
            return v;
    }
    return 0;
}

/* What the expert estimate reads of the model's config file. */
static int read_experts_config(kvshard__wexperts_config *c, const kvshard_model *model,
                               const kvshard_allocator *alloc, kvshard_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = kvshard_file__read_file(&text, &len, alloc, model->source, err);
    if (rc)
        return rc;
    kvshard__doc doc;
    if ((rc = kvshard_json_doc__parse(&doc, text, len, model->source, alloc, err)) != 0) {
        kvshard_alloc__free(alloc, text);
        return rc;
    }
    kvshard__node root = kvshard_tape__doc_root(&doc), sub, n;
    const kvshard__node *tc = kvshard_tape__map_get(&doc, &root, "text_config", &sub) &&
                                      sub.kind == KVSHARD__NODE_MAPPING
                                  ? &sub
                                  : NULL;
    static const char *const hidden[] = {"hidden_size", NULL};
    static const char *const inter[] = {"moe_intermediate_size", "intermediate_size", NULL};
    static const char *const experts[] = {"num_experts", "n_routed_experts", "num_local_experts",
                                          NULL};
    c->hidden = config_uint(&doc, tc, &root, hidden);
    c->intermediate = config_uint(&doc, tc, &root, inter);
    c->experts = config_uint(&doc, tc, &root, experts);
    c->quantized = config_get(&n, &doc, tc, &root, "quantization_config");
    c->element_bytes = 0;
    if (config_get(&n, &doc, tc, &root, "torch_dtype") ||
        config_get(&n, &doc, tc, &root, "dtype"))
        c->element_bytes = kvshard_tape__scalar_is(&n, "bfloat16") ||
                                   kvshard_tape__scalar_is(&n, "float16")
                               ? 2
                           : kvshard_tape__scalar_is(&n, "float32") ? 4
                                                                     : 0;
    kvshard_tape__doc_free(&doc);
    kvshard_alloc__free(alloc, text);
    return KVSHARD_OK;
}

/* An index with none of its shards at hand: the total from its
 * metadata.total_size, the experts given or estimated from its names. */
static int index_weights(kvshard__device *d, const kvshard__safetensors *set, const char *dir,
                         const kvshard_options *o, const kvshard_model *model,
                         const kvshard_allocator *alloc, kvshard_diag__ctx *diag)
{
    char index[4200];
    snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
    if (!set->has_total_size || set->total_size == 0)
        return kvshard_diag__fail(
            diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
            "%s: none of its shards is in the directory and its metadata.total_size is %s: give "
            "weights_total with weights_experts, or the shards' headers",
            index, set->has_total_size ? "0" : "absent");
    uint64_t experts = o->weights_experts;
    d->experts_estimated = experts == 0;
    if (d->experts_estimated) {
        kvshard__wexperts_config c = {
            .num_layers = model->info.num_layers,
            .gqa = model->info.attention == KVSHARD_ATTENTION_GQA,
        };
        int rc = read_experts_config(&c, model, alloc, diag->err);
        if (rc == KVSHARD_OK)
            rc = kvshard_weights__estimate_experts(&experts, set, &c, index, diag->err);
        if (rc) {
            diag->among = kvshard_device__about_weights;
            return rc;
        }
    }
    if (experts > set->total_size) {
        diag->option = "weights_experts";
        return kvshard_diag__fail(diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
                                  "%s: the expert bytes %llu are more than its total_size %llu",
                                  index, (unsigned long long)experts,
                                  (unsigned long long)set->total_size);
    }
    d->source = KVSHARD__WEIGHTS_INDEX;
    d->summary.total_bytes = set->total_size;
    d->summary.expert_bytes = experts;
    d->summary.has_index_total_size = true;
    d->summary.index_total_size = set->total_size;
    return KVSHARD_OK;
}

static int read_weights(kvshard__device *d, const kvshard_options *o, const kvshard_model *model,
                        const kvshard_allocator *alloc, kvshard_diag__ctx *diag)
{
    char dir[4096];
    if (!model_directory(dir, sizeof dir, model))
        return kvshard_diag__fail(
            diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
            "device_memory needs the weights of a rank: give weights_per_rank, "
            "weights_total (with weights_experts), or a model directory with "
            "safetensors files (this model has no directory)");
    kvshard__safetensors *set = NULL;
    kvshard__st_options so = {0, 0, model->on_weights_file, model->on_weights_file_user};
    int rc = kvshard_safetensors__read_dir_with(&set, dir, alloc, &so, diag->err);
    if (rc)
        return rc;
    if (set->files == KVSHARD__ST_NONE) {
        kvshard_safetensors__free(set);
        return kvshard_diag__fail(
            diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
            "device_memory needs the weights of a rank: give weights_per_rank, "
            "weights_total (with weights_experts), or safetensors files in %s (their "
            "headers, or model.safetensors.index.json alone)",
            dir);
    }
    if (set->files == KVSHARD__ST_INDEX_ONLY) {
        rc = index_weights(d, set, dir, o, model, alloc, diag);
        kvshard_safetensors__free(set);
        return rc;
    }
    rc = classify_weights(&d->weights, set, model, alloc, diag->err);
    kvshard_safetensors__free(set);
    if (rc == KVSHARD_OK) {
        d->summary = *kvshard_weights__summary(d->weights);
        d->memo =
            kvshard_alloc__calloc(alloc, 1, sizeof *d->memo); /* none: no memo, same figures */
    }
    return rc;
}

static int open_weights(kvshard__device *d, const kvshard_options *o, const kvshard_model *model,
                        const kvshard_allocator *alloc, kvshard_diag__ctx *diag);

const char *const kvshard_device__about_weights[] = {"weights_per_rank", "weights_total",
                                                     "weights_experts", "device_memory", NULL};
const char *const kvshard_device__about_fit[] = {"device_memory", "memory_utilization",
                                                 "activation_reserve", NULL};

/* Whether a setting gives the input of the planning's profile named
 * `name` (a value equal to its default is given all the same). */
static bool input_given(const kvshard__planning *pl, const char *name)
{
    int i = name ? kvshard_profiles__input_index(pl->profile, name) : -1;
    return i >= 0 && (pl->inputs_set >> i & 1u);
}

int kvshard_device__open(kvshard__device *d, const kvshard__planning *pl,
                         const kvshard_model *model, const kvshard_allocator *alloc,
                         kvshard_diag__ctx *diag)
{
    const kvshard_options *o = &pl->options;
    memset(d, 0, sizeof *d);
    d->alloc = *alloc;
    d->ignored = o->device_memory > 0 && o->memory_per_rank > 0;
    if (o->device_memory == 0 || o->memory_per_rank > 0)
        return KVSHARD_OK;
    const kvshard__profile *p = pl->profile;
    diag->option = "device_memory";
    bool engine = !p->device.utilization_ppb; /* the engine's formula makes the budget */
    if (engine && !p->device.fill_input)
        return kvshard_diag__fail(
            diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
            "%s profile: device_inputs_unsupported: device_memory: the profile "
            "reads none of the device inputs",
            p->name);
    d->used = !engine;
    d->device_memory = o->device_memory;
    if (engine && input_given(pl, p->device.fill_input)) {
        d->fill_given = p->device.fill_input; /* the engine's own figure: no weights to read */
        return KVSHARD_OK;
    }
    d->fills = engine;
    if (engine) {
        uint64_t twentieth = o->device_memory / 20;
        d->reserve = o->activation_reserve != KVSHARD_RESERVE_AUTO ? o->activation_reserve
                     : !p->device.reserve_auto                     ? 0
                     : twentieth > GIB                             ? twentieth
                                                                   : GIB;
        return open_weights(d, o, model, alloc, diag);
    }
    d->utilization =
        o->memory_utilization > 0 ? o->memory_utilization : (double)p->device.utilization_ppb / 1e9;
    double scaled = d->utilization * 1e9;
    d->utilization_ppb = (uint32_t)llround(scaled);
    if (fabs(scaled - (double)d->utilization_ppb) > 1e-3) {
        char shown[40];
        kvshard_format__shortest_text(shown, sizeof shown, d->utilization);
        diag->option = "memory_utilization";
        return kvshard_error__fail(diag->err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                             "memory_utilization %s has more than 9 digits after the point; "
                             "kvshard reads it to the billionth",
                             shown);
    }
    d->usable = share_of(o->device_memory, d->utilization_ppb);
    uint64_t twentieth = o->device_memory / 20;
    d->reserve = o->activation_reserve != KVSHARD_RESERVE_AUTO ? o->activation_reserve
                 : twentieth > GIB                             ? twentieth
                                                               : GIB;
    return open_weights(d, o, model, alloc, diag);
}

/* Where the weights come from, first that applies, read now when they are
 * the model directory's. */
static int open_weights(kvshard__device *d, const kvshard_options *o, const kvshard_model *model,
                        const kvshard_allocator *alloc, kvshard_diag__ctx *diag)
{
    /* Two figures for one thing: which one the user meant is not ours to
     * guess (the first source used to win in silence). */
    if (o->weights_per_rank_count > 0 && o->weights_total > 0) {
        diag->option = NULL; /* the override of the two, else the first in the file */
        return kvshard_diag__fail(diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
                                  "weights_per_rank and weights_total are both given: a rank's "
                                  "weights come from one source; give weights_per_rank (measured), "
                                  "or weights_total with weights_experts (an estimate)");
    }
    if (o->weights_per_rank_count > 0) {
        d->source = KVSHARD__WEIGHTS_PER_RANK;
    } else if (o->weights_total > 0) {
        d->source = KVSHARD__WEIGHTS_TOTAL;
        if (o->weights_experts > o->weights_total) {
            diag->option = "weights_experts";
            return kvshard_diag__fail(diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
                                      "weights_experts %llu is more than weights_total %llu: the "
                                      "experts are part of the checkpoint",
                                      (unsigned long long)o->weights_experts,
                                      (unsigned long long)o->weights_total);
        }
    } else {
        d->source = KVSHARD__WEIGHTS_SAFETENSORS;
        int rc = read_weights(d, o, model, alloc, diag);
        if (rc)
            return rc;
    }
    diag->option = NULL;
    return KVSHARD_OK;
}

void kvshard_device__close(kvshard__device *d)
{
    kvshard_weights__free(d->weights);
    d->weights = NULL;
    kvshard_alloc__free(&d->alloc, d->memo);
    d->memo = NULL;
}

static int stage_weights(uint64_t *weights, const kvshard__device *d, const kvshard__planning *pl,
                         const kvshard__device_layout *l, kvshard_diag__ctx *diag)
{
    const kvshard_options *o = &pl->options;
    switch (d->source) {
    case KVSHARD__WEIGHTS_PER_RANK:
        if (o->weights_per_rank_count != 1 && o->weights_per_rank_count != l->pp) {
            diag->option = "weights_per_rank";
            return kvshard_diag__fail(
                diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
                "weights_per_rank has %u entries; pp_size is %u (give one size, "
                "or one a stage)",
                o->weights_per_rank_count, l->pp);
        }
        for (uint32_t s = 0; s < l->pp; s++)
            weights[s] = o->weights_per_rank[o->weights_per_rank_count == 1 ? 0 : s];
        return KVSHARD_OK;
    case KVSHARD__WEIGHTS_TOTAL:
    case KVSHARD__WEIGHTS_INDEX: {
        uint64_t x = (uint64_t)l->dp * l->cp * l->tp;
        bool index = d->source == KVSHARD__WEIGHTS_INDEX;
        uint64_t total = index ? d->summary.total_bytes : o->weights_total;
        uint64_t experts = index ? d->summary.expert_bytes : o->weights_experts;
        for (uint32_t s = 0; s < l->pp; s++) {
            int rc = kvshard_weights__estimate(&weights[s], total, experts, l->stage_layers[s],
                                               l->num_layers, l->tp, x, diag->err);
            if (rc) {
                diag->among = kvshard_device__about_weights;
                return rc;
            }
        }
        return KVSHARD_OK;
    }
    case KVSHARD__WEIGHTS_SAFETENSORS: {
        kvshard__wstage local[64];
        kvshard__wstage *st =
            l->pp <= 64 ? local : kvshard_alloc__bytes(&d->alloc, l->pp, sizeof *st);
        if (!st)
            return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                       "out of memory");
        kvshard__wlayout wl = {l->tp, l->dp, l->cp, o->expert_parallel,
                               o->num_speculative_tokens > 0, l->pp, l->stage_layers};
        if (memo_holds(d->memo, &wl)) {
            memcpy(weights, d->memo->bytes, l->pp * sizeof *weights);
            return KVSHARD_OK;
        }
        int rc = kvshard_weights__stages(st, d->weights, &wl, diag->err);
        for (uint32_t s = 0; rc == KVSHARD_OK && s < l->pp; s++)
            weights[s] = st[s].bytes;
        if (rc == KVSHARD_OK)
            memo_keep(d->memo, &wl, weights);
        if (st != local)
            kvshard_alloc__free(&d->alloc, st);
        return rc;
    }
    case KVSHARD__WEIGHTS_NONE:
    default:
        return kvshard_diag__fail(diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
                                  "no weights");
    }
}

int kvshard_device__stages(uint64_t *weights, uint64_t *budgets, const kvshard__device *d,
                           const kvshard__planning *pl, const kvshard__device_layout *layout,
                           int64_t *left, kvshard_diag__ctx *diag)
{
    int rc = stage_weights(weights, d, pl, layout, diag);
    if (rc)
        return rc;
    /* The poorest stage's budget, signed: how close a layout came. */
    int64_t poorest = INT64_MAX;
    uint32_t first_short = UINT32_MAX;
    for (uint32_t s = 0; s < layout->pp; s++) {
        uint64_t taken;
        if (!kvshard__add(&taken, weights[s], d->reserve))
            taken = UINT64_MAX;
        int64_t b = taken < d->usable
                        ? (d->usable - taken > (uint64_t)INT64_MAX ? INT64_MAX
                                                                   : (int64_t)(d->usable - taken))
                        : (taken - d->usable > (uint64_t)INT64_MAX ? INT64_MIN
                                                                   : -(int64_t)(taken - d->usable));
        poorest = b < poorest ? b : poorest;
        if (taken < d->usable)
            budgets[s] = d->usable - taken;
        else if (first_short == UINT32_MAX)
            first_short = s;
    }
    if (left)
        *left = poorest;
    if (first_short != UINT32_MAX) {
        uint32_t s = first_short;
        /* weights + reserve - usable, without a saturated sum: a reserve
         * near 2^64 bytes is short by its exact figure, or by more than
         * 2^64 - 1 bytes. */
        uint64_t shortfall;
        char short_text[48];
        bool exact = true;
        if (weights[s] >= d->usable)
            exact = kvshard__add(&shortfall, weights[s] - d->usable, d->reserve);
        else
            shortfall = d->reserve - (d->usable - weights[s]);
        if (exact)
            snprintf(short_text, sizeof short_text, "%llu", (unsigned long long)shortfall);
        else
            snprintf(short_text, sizeof short_text, "more than 18446744073709551615");
        char u[24], where[32] = "";
        kvshard_device__ppb_text(u, sizeof u, d->utilization_ppb);
        if (layout->pp > 1)
            snprintf(where, sizeof where, " on stage %u", s);
        diag->option = "device_memory";
        return kvshard_diag__fail(
            diag, kvshard_device__about_fit, KVSHARD_EDOESNOTFIT,
            "does_not_fit: the weights%s (%llu bytes a rank) and "
            "activation_reserve %llu bytes take all of device_memory %llu x "
            "memory_utilization %s = %llu usable bytes: %s bytes short",
            where, (unsigned long long)weights[s], (unsigned long long)d->reserve,
            (unsigned long long)d->device_memory, u, (unsigned long long)d->usable, short_text);
    }
    return KVSHARD_OK;
}

/* Whether profile `p`'s fill input takes one size a stage. */
static bool fill_sizes(const kvshard__profile *p)
{
    int i = p->device.fill_input ? kvshard_profiles__input_index(p, p->device.fill_input) : -1;
    return i >= 0 && p->dialect.inputs[i].def.type == KVSHARD__VT_SIZES;
}

/* An engine's budget with the fill input's sizes one a stage: P of them
 * (or one for every stage), and with the profile's stage_budgets each
 * stage's budget from its own size, into stage[] and out. The largest size
 * has made out->least already, the smallest budget. A list is counted
 * under every profile that reads the input, so that none takes its largest
 * size unsaid. */
static int engine_stage_budgets(kvshard__budgets *out, uint64_t *stage,
                                const kvshard__planning *pl, const kvshard_model *model,
                                const kvshard__device_layout *layout, uint32_t split,
                                kvshard_diag__ctx *diag)
{
    const kvshard__profile *p = pl->profile;
    int at = p->device.fill_input ? kvshard_profiles__input_index(p, p->device.fill_input) : -1;
    if (at < 0 || pl->options.memory_per_rank)
        return KVSHARD_OK;
    uint64_t given[KVSHARD_MAX_PP_PARTITION];
    const uint64_t *sizes = pl->fill_stage_count ? pl->fill_stages : given;
    uint32_t n = pl->fill_stage_count
                     ? pl->fill_stage_count
                     : kvshard_value__sizes(given, KVSHARD_MAX_PP_PARTITION, pl->inputs[at]);
    int rc = pl->fill_stage_count ? KVSHARD_OK
                                  : kvshard_profile__check_stage_count(
                                        p->name, p->device.fill_input, pl->inputs[at], layout->pp,
                                        diag);
    if (rc)
        return rc;
    if (n == 1 || !fill_sizes(p) || !p->device.stage_budgets)
        return KVSHARD_OK;
    kvshard_value inputs[KVSHARD__MAX_PROFILE_INPUTS];
    memcpy(inputs, pl->inputs, sizeof inputs);
    kvshard_profile__ctx c = kvshard_validate__profile_ctx(pl, model, layout->tp, split);
    c.inputs = inputs;
    for (uint32_t s = 0; s < n; s++) {
        inputs[at].u = sizes[s];
        inputs[at].text = NULL;
        bool has = false;
        rc = p->hooks.budget(&stage[s], &has, &c, diag);
        if (rc)
            return rc;
    }
    out->stage = stage;
    return KVSHARD_OK;
}

int kvshard_device__budgets_for(kvshard__budgets *out, uint64_t *weights, uint64_t *stage,
                         const kvshard__device *d, const kvshard__planning *pl,
                         const kvshard_model *model, const kvshard__device_layout *layout,
                         uint32_t split, int64_t *left, kvshard_diag__ctx *diag)
{
    out->stage_ranks = layout->tp;
    out->stage = NULL;
    if (!d->used) {
        int rc = kvshard_validate__planning_budget(&out->least, &out->has, pl, model, layout->tp,
                                                   split, diag);
        if (rc || !out->has)
            return rc;
        return engine_stage_budgets(out, stage, pl, model, layout, split, diag);
    }
    int rc = kvshard_device__stages(weights, stage, d, pl, layout, left, diag);
    if (rc)
        return rc;
    out->has = true;
    out->stage = stage;
    out->least = UINT64_MAX;
    for (uint32_t s = 0; s < layout->pp; s++)
        out->least = stage[s] < out->least ? stage[s] : out->least;
    return KVSHARD_OK;
}

void kvshard_device__figures_of(kvshard__device_figures *out, const kvshard__device *d)
{
    memset(out, 0, sizeof *out);
    out->used = d->used;
    out->ignored = d->ignored;
    out->fill_given = d->fill_given;
    out->device_memory = d->device_memory;
    out->utilization_ppb = d->utilization_ppb;
    out->usable = d->usable;
    out->reserve = d->reserve;
    out->source = d->source;
    out->experts_estimated = d->experts_estimated;
    out->summary = d->summary;
    if (d->summary.first_unknown) {
        snprintf(out->first_unknown, sizeof out->first_unknown, "%s", d->summary.first_unknown);
        out->summary.first_unknown = out->first_unknown;
    }
}


/* The input of the planning's profile named `name` (NULL when it has
 * none), and whether a setting gives it. */
static kvshard_value *engine_input(kvshard__planning *pl, const char *name, bool *set)
{
    int i = name ? kvshard_profiles__input_index(pl->profile, name) : -1;
    if (i < 0)
        return NULL;
    *set = input_given(pl, name);
    return &pl->inputs[i];
}

int kvshard_device__map(kvshard__planning *pl, kvshard_diag__ctx *diag)
{
    const kvshard_options *o = &pl->options;
    const kvshard__profile *p = pl->profile;
    if (p->device.utilization_ppb || o->device_memory == 0 || o->memory_per_rank > 0)
        return KVSHARD_OK;
    bool set;
    kvshard_value *total = engine_input(pl, p->device.total_input, &set);
    if (total && set && total->u != o->device_memory) {
        diag->option = "device_memory";
        return kvshard_error__fail(diag->err, KVSHARD_EDUPKEY, "", kvshard_error__no_mark,
                             "%s profile: device_memory %llu and %s %llu differ; give one of them",
                             p->name, (unsigned long long)o->device_memory, p->device.total_input,
                             (unsigned long long)total->u);
    }
    if (total)
        total->u = o->device_memory;
    kvshard_value *u = engine_input(pl, p->device.utilization_input, &set);
    if (u && o->memory_utilization > 0) {
        if (set && u->d != o->memory_utilization) {
            /* Each as the shortest decimal of its value: "%g" would show
             * 0.9000000001 and 0.9 alike. */
            char mine[40], theirs[40];
            kvshard_format__shortest_text(mine, sizeof mine, o->memory_utilization);
            kvshard_format__shortest_text(theirs, sizeof theirs, u->d);
            diag->option = "memory_utilization";
            return kvshard_error__fail(diag->err, KVSHARD_EDUPKEY, "", kvshard_error__no_mark,
                                 "%s profile: memory_utilization %s and %s %s differ; give one "
                                 "of them",
                                 p->name, mine, p->device.utilization_input, theirs);
        }
        u->d = o->memory_utilization;
    }
    return KVSHARD_OK;
}

void kvshard_device__about_fill(const kvshard__device *d, const kvshard__profile *profile,
                                kvshard_diag__ctx *diag)
{
    if (d->fills && diag->option && profile->device.fill_input &&
        strcmp(diag->option, profile->device.fill_input) == 0)
        diag->option = "device_memory";
}

int kvshard_device__fill(kvshard__planning *pl, const kvshard__device *d,
                         const kvshard__device_layout *layout, kvshard_diag__ctx *diag)
{
    if (!d->fills)
        return KVSHARD_OK;
    const kvshard__profile *p = pl->profile;
    bool set;
    kvshard_value *fill = engine_input(pl, p->device.fill_input, &set);
    if (!fill || set)
        return KVSHARD_OK; /* the engine's own figure wins */
    /* Each stage holds its own weights where the input takes one a stage;
     * else the whole model's weights on one stage. */
    bool staged = layout->pp > 1 && fill_sizes(p);
    uint32_t all = layout->num_layers;
    kvshard__device_layout one = *layout;
    if (!staged) {
        one.pp = 1;
        one.stage_layers = &all;
    }
    uint64_t weights[KVSHARD_MAX_PP_PARTITION];
    int rc = stage_weights(weights, d, pl, &one, diag);
    if (rc)
        return rc;
    uint64_t largest = 0;
    for (uint32_t s = 0; s < one.pp; s++) {
        uint64_t taken;
        bool added = kvshard__add(&taken, weights[s], d->reserve);
        /* Past 2^64 - 2 bytes no device holds them, and non_kv_memory's
         * numbers end there (2^64 - 1 stands for "not given"): never filled
         * saturated. */
        if (!added || taken == UINT64_MAX ||
            (p->device.fill_free && taken >= d->device_memory)) {
            diag->option = "device_memory";
            return kvshard_diag__fail(diag, kvshard_device__about_fit, KVSHARD_EDOESNOTFIT,
                                      "does_not_fit: the weights (%llu bytes a rank) and "
                                      "activation_reserve %llu bytes take all of device_memory "
                                      "%llu",
                                      (unsigned long long)weights[s],
                                      (unsigned long long)d->reserve,
                                      (unsigned long long)d->device_memory);
        }
        if (staged)
            pl->fill_stages[s] = taken;
        largest = taken > largest ? taken : largest;
    }
    pl->fill_stage_count = staged ? one.pp : 0;
    fill->u = p->device.fill_free ? d->device_memory - largest : largest;
    fill->text = NULL;
    return KVSHARD_OK;
}
