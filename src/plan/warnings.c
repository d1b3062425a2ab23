/* The warnings a plan carries: machine-readable codes with a message each,
 * never fatal. A comparison row works out the same ones from the same
 * inputs. */
#include "plan/warnings.h"

#include "plan/figures.h"

#include "base/checked.h"
#include "deploy/options.h"
#include "profile/rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Format one warning and hand it to the sink. */
static void warn(kvshard__warning_sink sink, void *ctx, kvshard_warning_code code, const char *fmt,
                 ...) KVSHARD__PRINTF(4, 5);

static void warn(kvshard__warning_sink sink, void *ctx, kvshard_warning_code code, const char *fmt,
                 ...)
{
    char message[KVSHARD__WARNING_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    sink(ctx, code, message);
}

/* kvshard options the profile does not read, when they differ from the
 * defaults, into `names`; returns how many. */
static size_t ignored_options(const char **names, size_t cap, const kvshard__planning *pl)
{
    size_t n = 0;
    for (const char *const *o = pl->profile->dialect.ignored_options; o && *o && n < cap; o++) {
        kvshard__option_id id = kvshard_options__option_id_of(*o, strlen(*o));
        if (id != KVSHARD__OPT_COUNT && kvshard_options__option_changed(&pl->given, id))
            names[n++] = *o;
    }
    return n;
}

/* Settings only another profile reads, and options this one does not
 * read, named when they differ from their defaults. */
static void warn_profile_inputs(const kvshard__warning_inputs *in, kvshard__warning_sink sink,
                                void *ctx)
{
    const kvshard__planning *pl = in->planning;
    const char *options[KVSHARD__OPT_COUNT];
    size_t count = pl->ignored_count,
           option_count = ignored_options(options, KVSHARD__OPT_COUNT, pl);
    if (count == 0 && option_count == 0)
        return;
    char message[KVSHARD__WARNING_MESSAGE_MAX] = "";
    size_t used = 0;
    if (count) {
        /* One list when every setting is read by the same engines. */
        char first[64], readers[64];
        kvshard_profiles__readers(first, sizeof first, pl->ignored[0]);
        bool alike = true;
        for (size_t i = 1; i < count && alike; i++) {
            kvshard_profiles__readers(readers, sizeof readers, pl->ignored[i]);
            alike = strcmp(readers, first) == 0;
        }
        for (size_t i = 0; i < count && used < sizeof message; i++) {
            kvshard_profiles__readers(readers, sizeof readers, pl->ignored[i]);
            int n = alike ? snprintf(message + used, sizeof message - used, "%s%s",
                                     i ? ", " : "", pl->ignored[i])
                          : snprintf(message + used, sizeof message - used, "%s%s (%s)",
                                     i ? ", " : "", pl->ignored[i], readers);
            used += n > 0 ? (size_t)n : 0;
        }
        if (used < sizeof message) {
            int n = alike ? snprintf(message + used, sizeof message - used,
                                     " %s only under engine%s %s: the %s profile ignores %s",
                                     count == 1 ? "applies" : "apply",
                                     strchr(first, ' ') || strchr(first, ',') ? "s" : "", first,
                                     pl->profile->name, count == 1 ? "it" : "them")
                          : snprintf(message + used, sizeof message - used,
                                     " apply only under those engines: the %s profile ignores "
                                     "them",
                                     pl->profile->name);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    for (size_t i = 0; i < option_count && used < sizeof message; i++) {
        int n = snprintf(message + used, sizeof message - used, "%s%s",
                         i       ? ", "
                         : count ? "; "
                                 : "",
                         options[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    if (option_count && used < sizeof message)
        snprintf(message + used, sizeof message - used, " %s not read by the %s profile",
                 option_count == 1 ? "is" : "are", pl->profile->name);
    sink(ctx, KVSHARD_WARN_PROFILE_INPUTS_IGNORED, message);
}

static void warn_unreachable(const kvshard__warning_inputs *in, kvshard__warning_sink sink,
                             void *ctx)
{
    const kvshard_options *o = &in->planning->options;
    const kvshard__capacity *c = in->capacity;
    if (!c->has_concurrency || c->concurrency >= kvshard__max_seqs_of(c, o))
        return;
    if (in->planning->profile->voice.unreachable) {
        kvshard_profile__view v = {o,
                                   c,
                                   in->has_memory,
                                   in->memory,
                                   in->state_bytes_per_seq,
                                   in->planning->inputs,
                                   &in->planning->state,
                                   kvshard_validate__planning_version(in->planning->profile,
                                                             in->planning->inputs),
                                   NULL,
                                   0,
                                   NULL,
                                   NULL,
                                   0,
                                   in->planning->fill_stage_count ? in->planning->fill_stages
                                                                  : NULL,
                                   in->seq_noun};
        char message[KVSHARD__WARNING_MESSAGE_MAX];
        in->planning->profile->voice.unreachable(message, sizeof message, &v);
        sink(ctx, KVSHARD_WARN_MAX_SEQS_UNREACHABLE, message);
        return;
    }
    uint64_t idle = (uint64_t)(o->max_seqs - c->concurrency), held;
    if (!kvshard__mul(&held, idle, in->state_bytes_per_seq))
        held = UINT64_MAX;
    char balanced[64] = "";
    if (c->has_balanced_max_seqs)
        snprintf(balanced, sizeof balanced, "; balanced max_seqs is %llu",
                 (unsigned long long)c->balanced_max_seqs);
    const char *runs = c->concurrency == 1 ? "sequence runs" : "sequences run";
    char human[32]; /* beside the exact bytes, which scripts read */
    kvshard_format__human_text(human, sizeof human, held);
    if (in->state_bytes_per_seq == 0)
        warn(sink, ctx, KVSHARD_WARN_MAX_SEQS_UNREACHABLE,
             "at %u tokens %llu %s at once, below max_seqs %u (the model keeps no state, so no "
             "memory is held back)%s",
             o->context_length, (unsigned long long)c->concurrency, runs, o->max_seqs, balanced);
    else
        warn(sink, ctx, KVSHARD_WARN_MAX_SEQS_UNREACHABLE,
             "at %u tokens %llu %s at once, below max_seqs %u: the %s of %llu "
             "sequence%s (%llu bytes = %s per rank) cannot be used%s",
             o->context_length, (unsigned long long)c->concurrency, runs, o->max_seqs,
             in->seq_noun && strcmp(in->seq_noun, "state") != 0 ? in->seq_noun : "state slots",
             (unsigned long long)idle, idle == 1 ? "" : "s", (unsigned long long)held, human,
             balanced);
}

/* Split ranks that own no KV layer of their stage, and stages whose split
 * ranks own counts more than one apart. With one stage the messages are
 * those of a plan without stages. */
static void warn_ownership(const kvshard__warning_inputs *in, kvshard__warning_sink sink,
                           void *ctx)
{
    uint32_t S = in->split;
    const char *rule = kvshard_ownership_name(in->planning->options.ownership);
    uint32_t empty_stages = 0, empty_stage = 0, empty = 0, first_empty = 0;
    uint32_t spread_stage = 0, spread_lo = 0, spread_hi = 0;
    for (uint32_t stage = 0; stage < in->stages; stage++) {
        if (in->ranges[stage].num_kv == 0)
            continue;
        const uint32_t *counts = in->owned_counts + (size_t)stage * S;
        uint32_t lo = UINT32_MAX, hi = 0, none = 0, first_none = 0;
        for (uint32_t s = 0; s < S; s++) {
            if (counts[s] == 0 && none++ == 0)
                first_none = s;
            lo = counts[s] < lo ? counts[s] : lo;
            hi = counts[s] > hi ? counts[s] : hi;
        }
        if (none && empty_stages++ == 0) {
            empty_stage = stage;
            empty = none;
            first_empty = first_none;
        }
        if (hi - lo > spread_hi - spread_lo) {
            spread_stage = stage;
            spread_lo = lo;
            spread_hi = hi;
        }
    }
    if (empty_stages && in->stages == 1)
        warn(sink, ctx, KVSHARD_WARN_RANK_OWNS_NOTHING,
             "%u of %u split ranks own no KV layer (the first is split rank %u; %u KV "
             "layers, %s rule)",
             empty, S, first_empty, in->n_kv, rule);
    else if (empty_stages)
        warn(sink, ctx, KVSHARD_WARN_RANK_OWNS_NOTHING,
             "on stage %u, %u of %u split ranks own no KV layer of the stage (the first is "
             "split rank %u; the stage has %u KV layers, %s rule)%s",
             empty_stage, empty, S, first_empty, in->ranges[empty_stage].num_kv, rule,
             empty_stages > 1 ? "; other stages too" : "");
    if (spread_hi - spread_lo > 1 && in->stages == 1)
        warn(sink, ctx, KVSHARD_WARN_IMBALANCED,
             "split ranks own between %u and %u KV layers (%s rule)", spread_lo, spread_hi, rule);
    else if (spread_hi - spread_lo > 1)
        warn(sink, ctx, KVSHARD_WARN_IMBALANCED,
             "the split ranks of stage %u own between %u and %u of its KV layers (%s rule)",
             spread_stage, spread_lo, spread_hi, rule);
}

/* What pipeline stages alone bring: the refusal of stages with speculative
 * decoding by the engine whose cut the plan took, and stages whose ranks
 * store no KV bytes. */
static void warn_stages(const kvshard__warning_inputs *in, kvshard__warning_sink sink, void *ctx)
{
    if (in->stages == 1)
        return;
    const kvshard_profile__rules *cut =
        kvshard_rules__of_pp_rule(in->planning->options.pp_partition_rule);
    if (in->draft_layers && cut && cut->refuses_drafts)
        warn(sink, ctx, KVSHARD_WARN_PP_DRAFT_REFUSED,
             "%s: this plan of %u stages with %u draft layer%s on the last stage is made all the "
             "same",
             cut->refuses_drafts, in->stages, in->draft_layers, in->draft_layers == 1 ? "" : "s");
    uint32_t without = 0, first = 0;
    for (uint32_t stage = 0; stage < in->stages; stage++) {
        bool stores = false;
        for (uint32_t t = 0; t < in->tp; t++)
            stores |= in->ranks[(size_t)stage * in->tp + t].bytes_per_block > 0;
        if (!stores && without++ == 0)
            first = stage;
    }
    if (without && in->n_kv > 0) {
        const kvshard__range *r = &in->ranges[first];
        warn(sink, ctx, KVSHARD_WARN_STAGE_WITHOUT_KV,
             "%u of %u stages hold no KV layer (the first is stage %u, layers %u-%u): their "
             "ranks keep only state and do not bound the block count",
             without, in->stages, first, r->first, r->first + r->count - 1);
    }
}

/* What the device inputs leave to say: a device_memory memory_per_rank
 * overrides, and weights counted by a guess or against a total that
 * disagrees. */
static void warn_device(const kvshard__warning_inputs *in, kvshard__warning_sink sink, void *ctx)
{
    const kvshard__device_figures *d = in->device;
    if (!d)
        return;
    if (d->ignored)
        warn(sink, ctx, KVSHARD_WARN_DEVICE_MEMORY_IGNORED,
             "memory_per_rank %llu bytes is the budget of every rank: device_memory and the "
             "weights are not read",
             (unsigned long long)in->planning->options.memory_per_rank);
    const kvshard_options *o = &in->planning->options;
    bool weights = o->weights_per_rank_count || o->weights_total || o->weights_experts;
    bool reserve = o->activation_reserve != KVSHARD_RESERVE_AUTO;
    if (d->fill_given && (weights || reserve))
        warn(sink, ctx, KVSHARD_WARN_DEVICE_MEMORY_IGNORED,
             "%s is given: the engine's own figure holds what the %s%s%s would fill, so %s not "
             "read",
             d->fill_given, weights ? "weights" : "", weights && reserve ? " and " : "",
             reserve ? "activation_reserve" : "", weights && reserve ? "they are" : "it is");
    const kvshard__wsummary *w = &d->summary;
    if (d->used && w->total_size_mismatch)
        warn(sink, ctx, KVSHARD_WARN_WEIGHTS_TOTAL_SIZE_MISMATCH,
             "the index's metadata.total_size is %llu bytes but its shards' headers hold %llu: "
             "the headers are counted",
             (unsigned long long)w->index_total_size, (unsigned long long)w->total_bytes);
    if (d->used && d->source == KVSHARD__WEIGHTS_INDEX)
        warn(sink, ctx, KVSHARD_WARN_WEIGHTS_ESTIMATED,
             "the weights are estimated from model.safetensors.index.json alone (none of its "
             "shards is at hand): total_size %llu bytes, %llu bytes of experts (%s); the shards' "
             "headers (their first 8 + N bytes) give exact figures",
             (unsigned long long)w->index_total_size, (unsigned long long)w->expert_bytes,
             d->experts_estimated ? "estimated from its expert tensors' names and the config"
                                  : "weights_experts as given");
    if (d->used && w->unknown_tensors)
        warn(sink, ctx, KVSHARD_WARN_WEIGHTS_UNKNOWN_TENSORS,
             "%llu tensor%s (%llu bytes) match%s no rule and %s counted as split over the TP "
             "ranks; the first is %s",
             (unsigned long long)w->unknown_tensors, w->unknown_tensors == 1 ? "" : "s",
             (unsigned long long)w->unknown_bytes, w->unknown_tensors == 1 ? "es" : "",
             w->unknown_tensors == 1 ? "is" : "are", w->first_unknown ? w->first_unknown : "?");
}

void kvshard_warnings__collect_warnings(const kvshard__warning_inputs *in,
                                        kvshard__warning_sink sink, void *ctx)
{
    const kvshard_options *o = &in->planning->options;
    uint32_t S = in->split, n_kv = in->n_kv;
    if (o->layerwise_split_size > 1 && !o->enable_layerwise_split)
        warn(sink, ctx, KVSHARD_WARN_SPLIT_DISABLED,
             "layerwise_split_size is %u but enable_layerwise_split is false: every rank stores "
             "every KV layer",
             o->layerwise_split_size);
    if (o->enable_layerwise_split && o->layerwise_split_size == 1)
        warn(sink, ctx, KVSHARD_WARN_SPLIT_SIZE_ONE,
             "enable_layerwise_split is true with layerwise_split_size 1: nothing is split");
    if (S > 1 && n_kv > 0) {
        warn_ownership(in, sink, ctx);
        if (S > in->replication)
            warn(sink, ctx, KVSHARD_WARN_EXCEEDS_REPLICATION,
                 "layerwise_split_size %u exceeds the replication factor %u: the split saves "
                 "less than %ux, since the owner of a layer holds the KV heads of its whole "
                 "split group",
                 S, in->replication, S);
    }
    if (n_kv == 0)
        warn(sink, ctx, KVSHARD_WARN_NO_KV_LAYERS,
             "the model has no full-attention or hybrid layer: there is no KV cache to split");
    if (o->is_draft && o->enable_layerwise_split && o->layerwise_split_size > 1)
        warn(sink, ctx, KVSHARD_WARN_DRAFT_UNSPLIT,
             "is_draft is true: layerwise split does not apply to a draft model");
    warn_unreachable(in, sink, ctx);
    warn_profile_inputs(in, sink, ctx);
    const kvshard__profile *profile = in->planning->profile;
    if (profile->hooks.warnings) {
        kvshard_profile__view v = {
            o,
            in->capacity,
            in->has_memory,
            in->memory,
            in->state_bytes_per_seq,
            in->planning->inputs,
            &in->planning->state,
            kvshard_validate__planning_version(profile, in->planning->inputs),
            NULL,
            0,
            NULL,
            NULL,
            0,
            in->planning->fill_stage_count ? in->planning->fill_stages : NULL,
            NULL};
        profile->hooks.warnings(sink, ctx, &v);
    }
    warn_stages(in, sink, ctx);
    warn_device(in, sink, ctx);
    if (in->max_position_embeddings && o->context_length > in->max_position_embeddings)
        warn(sink, ctx, KVSHARD_WARN_CONTEXT_BEYOND_MODEL,
             "context_length %u is beyond the model's max_position_embeddings %u: the plan sizes "
             "the cache for it all the same, but the model was not trained that far unless the "
             "engine stretches its positions",
             o->context_length, in->max_position_embeddings);
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
    case KVSHARD_WARN_ENGINE_PREFIX_CACHING_DISABLED: return "engine_prefix_caching_disabled";
    case KVSHARD_WARN_ENGINE_MAMBA_CACHE_MODE_ALIGN: return "engine_mamba_cache_mode_align";
    case KVSHARD_WARN_ENGINE_PADDING_LAYERS: return "engine_padding_layers";
    case KVSHARD_WARN_ENGINE_CUDAGRAPH_SIZES_CAPPED: return "engine_cudagraph_sizes_capped";
    case KVSHARD_WARN_ENGINE_MAX_TOTAL_TOKENS_ABOVE_PROFILE:
        return "engine_max_total_tokens_above_profile";
    case KVSHARD_WARN_ENGINE_MAX_RUNNING_REQUESTS_CAPPED:
        return "engine_max_running_requests_capped";
    case KVSHARD_WARN_FLAGS_IGNORED: return "flags_ignored";
    case KVSHARD_WARN_PP_DRAFT_REFUSED: return "pp_draft_refused";
    case KVSHARD_WARN_STAGE_WITHOUT_KV: return "stage_without_kv";
    case KVSHARD_WARN_DEVICE_MEMORY_IGNORED: return "device_memory_ignored";
    case KVSHARD_WARN_WEIGHTS_TOTAL_SIZE_MISMATCH: return "weights_total_size_mismatch";
    case KVSHARD_WARN_WEIGHTS_UNKNOWN_TENSORS: return "weights_unknown_tensors";
    case KVSHARD_WARN_CONTEXT_BEYOND_MODEL: return "context_beyond_model";
    case KVSHARD_WARN_ENGINE_PAGE_SIZE_OVERRIDDEN: return "engine_page_size_overridden";
    case KVSHARD_WARN_ENGINE_WINDOW_REDUCED: return "engine_window_reduced";
    case KVSHARD_WARN_ENGINE_STATE_SLOTS_FIXED: return "engine_state_slots_fixed";
    case KVSHARD_WARN_COMM_MECHANISM_ASSUMED: return "comm_mechanism_assumed";
    case KVSHARD_WARN_FULL_LAYER_DECODE: return "full_layer_decode";
    case KVSHARD_WARN_COMM_NO_WEIGHTS: return "comm_no_weights";
    case KVSHARD_WARN_WEIGHTS_ESTIMATED: return "weights_estimated";
    case KVSHARD_WARN_SPLIT_COMM_DOMINATES: return "split_comm_dominates";
    case KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT: return "split_loses_throughput";
    default: return "unknown";
    }
}
