/* The start of every planning call, and the checks a deployment must pass
 * before a plan is made: the world's sizes, the split, the KV heads and the
 * state dimensions against T, the profile's own refusals, and the bound on
 * the plan's layer lists. */
#include "plan/validate.h"

#include "base/call.h"
#include "deploy/options.h"
#include "plan/memory.h"
#include "plan/partition.h"
#include "profile/capacity.h"
#include "profile/rules.h"

#include <string.h>

int kvshard_validate__begin_planning(kvshard__planning *out, bool args_ok,
                                     const kvshard_options *options,
                                     const kvshard_allocator *allocator, kvshard_diag__ctx *diag)
{
    diag->option = NULL;
    diag->among = NULL;
    int rc = kvshard_call__begin(diag->err, args_ok, "out and model");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__allocator(diag->err, allocator);
    kvshard_options defaults = KVSHARD_OPTIONS_INIT;
    const kvshard_options *given = options ? options : &defaults;
    if (rc == KVSHARD_OK)
        rc = kvshard_options__check(given, diag->err);
    if (rc)
        return rc;
    out->given = *given;
    out->given.settings = NULL;
    out->options = kvshard_options__settle(given);
    out->profile = kvshard_profiles__of(out->options.engine);
    memset(&out->state, 0, sizeof out->state);
    out->inputs_set = kvshard_settings__resolve(out->inputs, given->settings, out->profile);
    out->ignored_count = kvshard_settings__ignored(out->ignored, KVSHARD__MAX_PROFILE_INPUTS,
                                                   given->settings, out->profile);
    out->options.settings = NULL; /* resolved: the caller's need not outlive the call */
    out->fill_stage_count = 0;
    return KVSHARD_OK;
}

int kvshard_validate__planning_settle(kvshard__planning *pl, const kvshard_model *model,
                             kvshard_diag__ctx *diag)
{
    if (!pl->profile->hooks.settle)
        return KVSHARD_OK;
    kvshard_profile__settling s = {&pl->given,
                                   &pl->options,
                                   pl->inputs,
                                   &model->info,
                                   model->model_type,
                                   &pl->state,
                                   model->kinds};
    return pl->profile->hooks.settle(&s, diag);
}

const char *kvshard_validate__planning_version(const kvshard__profile *profile,
                                               const kvshard_value *inputs)
{
    if (!profile->versions)
        return NULL;
    int i = kvshard_profiles__input_index(profile, "engine_version");
    if (i >= 0 && inputs[i].text)
        return inputs[i].text;
    return profile->versions->fallback;
}

kvshard_profile__ctx kvshard_validate__profile_ctx(const kvshard__planning *pl,
                                                   const kvshard_model *model, uint32_t tp,
                                                   uint32_t split)
{
    kvshard_profile__ctx c = {&model->info,
                              &pl->options,
                              pl->inputs,
                              tp,
                              split,
                              kvshard_memory__replication_factor(&model->info, tp),
                              &pl->state,
                              pl->fill_stage_count ? pl->fill_stages : NULL};
    return c;
}

int kvshard_validate__planning_budget(uint64_t *out, bool *has, const kvshard__planning *pl,
                             const kvshard_model *model, uint32_t tp, uint32_t split,
                             kvshard_diag__ctx *diag)
{
    kvshard_profile__ctx c = kvshard_validate__profile_ctx(pl, model, tp, split);
    return pl->profile->hooks.budget(out, has, &c, diag);
}

/* Draft layers of `kind` among those the model counts with speculation. */
static uint32_t drafts_of(const kvshard__model_info *m, uint8_t kind)
{
    uint32_t n = 0;
    for (uint32_t c = 0; c < m->num_classes; c++)
        n += m->classes[c].kind == kind ? m->draft_census[c] : 0;
    return n;
}

/* The checks of the heads against T: for GQA the KV heads of each geometry
 * the plan uses (the full one for KV, chunked and counted full-attention
 * draft layers, the sliding one for sliding layers and counted sliding
 * draft layers), and for every attention the query heads, whenever the
 * plan stores KV. */
static int check_heads(const kvshard_model *model, const kvshard__planning *pl, uint32_t T,
                       kvshard_error *err)
{
    const kvshard__model_info *m = &model->info;
    bool drafts =
        pl->options.num_speculative_tokens > 0 && pl->profile->counting.counts_draft_layers;
    bool full = kvshard__num_kv_layers(m) + m->count[KVSHARD_LAYER_CHUNKED_ATTENTION] > 0 ||
                (drafts && drafts_of(m, KVSHARD_LAYER_FULL_ATTENTION) > 0);
    bool sliding = m->count[KVSHARD_LAYER_SLIDING_ATTENTION] > 0 ||
                   (drafts && drafts_of(m, KVSHARD_LAYER_SLIDING_ATTENTION) > 0);
    const struct {
        bool used;
        int site;
        uint32_t heads;
    } geometries[2] = {{full, KVSHARD__SITE_KV_HEADS, m->full.heads},
                       {sliding, KVSHARD__SITE_SLIDING_KV_HEADS, m->sliding.heads}};
    for (int g = 0; g < 2 && m->attention == KVSHARD_ATTENTION_GQA; g++) {
        uint32_t H = geometries[g].heads;
        const kvshard__key_site *kv = &model->sites[geometries[g].site];
        if (geometries[g].used && H && T % H != 0 && H % T != 0)
            return kvshard_error__fail(err, KVSHARD_EKVHEADS, model->source, kv->mark,
                                 "%s %u and the attention TP size %u do not divide one another",
                                 kv->key ? kv->key : "num_key_value_heads", H, T);
    }
    /* The engines shard query heads evenly over the attention TP ranks,
     * whatever the attention: MLA, DSA and compressed models too, and
     * models whose attention layers are all sliding windows. A model that
     * stores no KV (no KV, window or counted draft layer) has none. */
    const kvshard__key_site *q = &model->sites[KVSHARD__SITE_Q_HEADS];
    if ((full || sliding) && q->key && q->value % T != 0)
        return kvshard_error__fail(err, KVSHARD_EQHEADS, model->source, q->mark,
                             "%s %u is not divisible by the attention TP size %u: every rank "
                             "holds the same number of query heads",
                             q->key, q->value, T);
    return KVSHARD_OK;
}

/* What the model could not give and only some plans need: the parts of
 * the config only counted draft layers read, and the RoPE part of a
 * compressed latent that an fp8 cache keeps apart. */
static int check_needs(const kvshard_model *model, const kvshard__planning *pl,
                       kvshard_error *err)
{
    const kvshard__model_info *m = &model->info;
    const kvshard_options *o = &pl->options;
    if (model->draft_rc && o->num_speculative_tokens > 0 &&
        pl->profile->counting.counts_draft_layers && m->num_draft_layers > 0) {
        if (err)
            *err = model->draft_error;
        return model->draft_rc;
    }
    const kvshard__key_site *rope = &model->sites[KVSHARD__SITE_LATENT_ROPE];
    if (rope->key && kvshard_memory__kv_cache_fp8(m, o))
        return kvshard_error__fail(err, KVSHARD_EMISSING, model->source, rope->mark,
                             "missing key \"qk_rope_head_dim\" (an fp8 cache keeps the RoPE part "
                             "of each compressed latent in bf16)");
    return KVSHARD_OK;
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
            return kvshard_error__fail(err, KVSHARD_ELINEARHEADS, model->source, s->mark,
                                 "%s %u is not divisible by the attention TP size %u: each rank "
                                 "must hold a whole share of the %s state",
                                 s->key, s->value, T, kvshard_state_kind_name(m->state.kind));
    }
    const kvshard__key_site *g = &model->sites[KVSHARD__SITE_STATE_GROUPS];
    if (g->key && g->value % T != 0 && !(g->value < T && T % g->value == 0))
        return kvshard_error__fail(err, KVSHARD_ELINEARHEADS, model->source, g->mark,
                             "%s %u cannot be laid out on %u TP ranks: Mamba2 groups must be a "
                             "multiple of the attention TP size, or fewer and divide it",
                             g->key, g->value, T);
    return KVSHARD_OK;
}

/* Stages a profile does not model, and a rank layout without a stage
 * coordinate. */
static int check_stages(const kvshard__planning *pl, kvshard_diag__ctx *diag)
{
    const kvshard_options *o = &pl->options;
    if (o->pp_size <= 1)
        return KVSHARD_OK;
    const kvshard__profile *p = pl->profile;
    diag->option = "pp_size";
    if (p->stages.refusal)
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "%s profile: %s: %s %u: %s", p->name, p->stages.refusal,
                                  p->stages.flag ? p->stages.flag : "pp_size", o->pp_size,
                                  p->stages.why);
    if (!kvshard_rules__of_rank_layout(o->rank_layout)->numbers_stages)
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "pp_engine: pp_size %u with rank_layout %s, which numbers no "
                                  "pipeline stages",
                                  o->pp_size, kvshard_rank_layout_name(o->rank_layout));
    diag->option = NULL;
    return KVSHARD_OK;
}

/* A layer that reads another's cache (a shared-KV layer, a compressed layer
 * that reads a stream) sits on the stage of that cache: a stage cannot read
 * what another stage holds. */
static int check_sources(const kvshard_model *model, const uint32_t *counts, uint32_t P,
                         kvshard_diag__ctx *diag)
{
    if (!model->kv_source || P == 1)
        return KVSHARD_OK;
    /* Stages are walked in layer order; a source lies below its reader. */
    uint32_t L = model->info.num_layers, stage = 0, end = counts[0], stage_first = 0;
    for (uint32_t i = 0; i < L; i++) {
        while (i >= end) {
            stage_first = end;
            end += counts[++stage];
        }
        int32_t src = model->kv_source[i];
        if (src < 0 || (uint32_t)src >= stage_first)
            continue;
        uint32_t src_stage = 0, e = counts[0];
        while ((uint32_t)src >= e)
            e += counts[++src_stage];
        return kvshard_diag__fail(diag, kvshard_partition__about, KVSHARD_EPPSOURCE,
                                  "layer %u (stage %u) reads the cache of layer %d (stage %u): a "
                                  "stage cannot read a cache another stage holds; give a "
                                  "pp_partition that keeps them together",
                                  i, stage, (int)src, src_stage);
    }
    return KVSHARD_OK;
}

int kvshard_plan__validate(uint32_t *out_tp, uint32_t *out_split, uint32_t *stage_counts,
                           const kvshard_model *model, const kvshard__planning *pl,
                           kvshard_diag__ctx *diag)
{
    /* What each refusal may be about, most specific first. */
    static const char *const world[] = {"world_size", "pp_size", "dp_size", "cp_size", NULL};
    static const char *const split[] = {"layerwise_split_size", "world_size", NULL};
    static const char *const split_cp[] = {"cp_size", "enable_layerwise_split", NULL};
    static const char *const limit[] = {"world_size", "layerwise_split_size", NULL};
    const kvshard_options *o = &pl->options;
    uint32_t T = kvshard_options__attn_tp_size(o);
    if (T == 0)
        return o->pp_size > 1
                   ? kvshard_diag__fail(diag, world, KVSHARD_EWORLD,
                                        "world_size %u is not divisible by pp_size %u x dp_size "
                                        "%u x cp_size %u = %llu",
                                        o->world_size, o->pp_size, o->dp_size, o->cp_size,
                                        (unsigned long long)o->pp_size * o->dp_size * o->cp_size)
                   : kvshard_diag__fail(diag, world, KVSHARD_EWORLD,
                                        "world_size %u is not divisible by dp_size %u x cp_size "
                                        "%u = %llu",
                                        o->world_size, o->dp_size, o->cp_size,
                                        (unsigned long long)o->dp_size * o->cp_size);
    int rc = check_stages(pl, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_partition__of(stage_counts, o, model->info.num_layers, diag);
    if (rc == KVSHARD_OK)
        rc = check_sources(model, stage_counts, o->pp_size, diag);
    if (rc)
        return rc;
    uint32_t S = o->layerwise_split_size;
    uint32_t S_eff = o->enable_layerwise_split && S > 1 && !o->is_draft ? S : 1;
    if (S_eff > 1 && T % S != 0)
        return kvshard_diag__fail(diag, split, KVSHARD_ESPLIT,
                                  "layerwise_split_size %u does not divide the attention TP size "
                                  "%u (world_size %u / (dp_size %u x cp_size %u))",
                                  S, T, o->world_size, o->dp_size, o->cp_size);
    if (S_eff > 1 && o->cp_size > 1)
        return kvshard_diag__fail(diag, split_cp, KVSHARD_ESPLITCP,
                                  "layerwise split (layerwise_split_size %u) cannot be combined "
                                  "with context parallelism (cp_size %u)",
                                  S, o->cp_size);
    const kvshard__model_info *m = &model->info;
    rc = check_heads(model, pl, T, diag->err);
    if (rc == KVSHARD_OK)
        rc = check_needs(model, pl, diag->err);
    if (rc)
        return rc;
    rc = check_state(model, T, diag->err);
    if (rc == KVSHARD_OK && pl->profile->hooks.check) {
        kvshard_profile__ctx c = kvshard_validate__profile_ctx(pl, model, T, S_eff);
        rc = pl->profile->hooks.check(&c, diag);
    }
    if (rc)
        return rc;
    uint64_t entries = (uint64_t)(T / S_eff) * kvshard__num_kv_layers(m);
    if (entries > KVSHARD_MAX_LAYER_ENTRIES)
        return kvshard_diag__fail(diag, limit, KVSHARD_ELIMIT,
                                  "the plan would list %llu KV layers over its TP ranks (%u "
                                  "ranks / split %u x %u KV layers); the limit is %u "
                                  "(KVSHARD_MAX_LAYER_ENTRIES)",
                                  (unsigned long long)entries, T, S_eff, kvshard__num_kv_layers(m),
                                  KVSHARD_MAX_LAYER_ENTRIES);
    *out_tp = T;
    *out_split = S_eff;
    return KVSHARD_OK;
}
