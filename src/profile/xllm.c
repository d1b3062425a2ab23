/* The xllm profile: what an xLLM engine allocates for the same model and
 * flags, from that engine's own capacity estimation, so the figures match
 * its log line ("blocks: N ... linear_blocks: M"). Its budget B comes from
 * memory_per_rank, or from the device figures as the engine computes them;
 * a share of B goes to state slots (two of them padding, a 0.9/1.9 share
 * when the prefix cache sizes the pool), the rest to blocks, and block 0
 * and state row 0 are kept for padding. Releases 0.10.0 and 0.10.1 size the
 * state pool from max_concurrent_requests alone. */
#include "profile/xllm.h"

#include "profile/capacity.h"
#include "profile/verdicts.h"

#include "base/checked.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { IN_PREFIX_CACHE, IN_STATE_SLOTS, IN_DEVICE_TOTAL, IN_DEVICE_FREE, IN_UTILIZATION,
       IN_MAX_CACHE_SIZE, IN_VERSION, IN_CONCURRENT };

#define ENGINE_ERANGE KVSHARD_ERANGE
static const kvshard_profile__input inputs[] = {
    [IN_PREFIX_CACHE] = {{"enable_prefix_cache", KVSHARD__VT_BOOL, 0, 1, ENGINE_ERANGE, false, NULL,
                          NULL},
                         {1, 0.0, NULL, 0},
                         NULL},
    [IN_STATE_SLOTS] = {{"max_linear_state_cache_slots", KVSHARD__VT_U32, 0, 1u << 24,
                         ENGINE_ERANGE, false, NULL, NULL},
                        {0, 0.0, NULL, 0},
                        NULL},
    [IN_DEVICE_TOTAL] = {{"device_memory_total", KVSHARD__VT_BYTES, 1, UINT64_MAX, ENGINE_ERANGE,
                          true, NULL, NULL},
                         {0, 0.0, NULL, 0},
                         NULL},
    [IN_DEVICE_FREE] = {{"device_memory_free", KVSHARD__VT_BYTES, 1, UINT64_MAX, ENGINE_ERANGE,
                         true, NULL, NULL},
                        {0, 0.0, NULL, 0},
                        NULL},
    [IN_UTILIZATION] = {{"max_memory_utilization", KVSHARD__VT_FRACTION, 0, 1, ENGINE_ERANGE,
                         false, NULL, NULL},
                        {0, 0.8, NULL, 0},
                        NULL},
    [IN_MAX_CACHE_SIZE] = {{"max_cache_size", KVSHARD__VT_BYTES, 0, UINT64_MAX, ENGINE_ERANGE,
                            true, NULL, NULL},
                           {0, 0.0, NULL, 0},
                           NULL},
    [IN_VERSION] = KVSHARD_VERSIONS__INPUT,
    [IN_CONCURRENT] = {{"max_concurrent_requests", KVSHARD__VT_U32, 1, 1u << 24, ENGINE_ERANGE,
                        false, NULL, NULL},
                       {200, 0.0, NULL, 0},
                       NULL},
    {{NULL, KVSHARD__VT_U32, 0, 0, 0, false, NULL, NULL}, {0, 0.0, NULL, 0}, NULL},
};
#undef ENGINE_ERANGE

static const kvshard_profile__alias aliases[] = {
    {"max_seqs_per_batch", "max_seqs", NULL},
    {"engine-version", "engine_version", NULL},
    {NULL, NULL, NULL},
};

static const kvshard_profile__versions versions = {"0.11.0", KVSHARD_V(0, 10, 0),
                                                   KVSHARD_V(0, 11, 0)};

/* The releases before 0.11.0 size the state pool from the request limit. */
static const kvshard_versions__v V_0_11_0 = KVSHARD_V(0, 11, 0);

static const kvshard_xllm__state *state_of(const kvshard_profile__state *s)
{
    return &s->xllm;
}

static int settle(kvshard_profile__settling *s, kvshard_diag__ctx *diag)
{
    kvshard_xllm__state *st = &s->state->xllm;
    memset(st, 0, sizeof *st);
    int rc =
        kvshard_profile__version(&st->version, &kvshard_profile__xllm, &s->inputs[IN_VERSION], diag);
    if (rc)
        return rc;
    st->request_pool = !kvshard_versions__from(&st->version, &V_0_11_0);
    return KVSHARD_OK;
}

/* The kinds the engine plans; a kind added to kvshard later is refused
 * here until it is named. */
static const uint32_t covered =
    1u << KVSHARD_LAYER_FULL_ATTENTION | 1u << KVSHARD_LAYER_LINEAR_ATTENTION;

/* The engine covers full-attention and linear layers, keeps one scratch
 * layer, and splits only inside one KV head's replicas (it sizes an
 * owner's KV with the rank's own heads). */
static int check(const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    const kvshard__model_info *m = c->model;
    uint8_t kind = kvshard_profile__unplanned_kind(m, covered);
    diag->option = "engine";
    if (kind != KVSHARD__KIND_COUNT)
        return kvshard_diag__fail(
            diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
            "xllm profile: engine_unsupported: %s layers (%u of %u) are not "
            "covered: the xllm profile plans full-attention and linear layers "
            "only",
            kvshard_layer_kind_name((kvshard_layer_kind)kind), m->count[kind], m->num_layers);
    if (kvshard_profile__has_sparse_index(m))
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "xllm profile: engine_unsupported: a GQA sparse index "
                                  "(sparse_attention_config) is not covered");
    diag->option = "scratch_layers";
    if (c->options->scratch_layers != 1)
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "xllm profile: engine_unsupported: the engine keeps one scratch "
                                  "layer; scratch_layers is %u",
                                  c->options->scratch_layers);
    diag->option = "layerwise_split_size";
    if (c->split > 1 && c->replication % c->split != 0)
        return kvshard_diag__fail(
            diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
            "xllm profile: engine_unsupported: a split must divide the KV "
            "replication: layerwise_split_size %u, replication factor %u (the "
            "engine sizes an owner's KV with its own heads)",
            c->split, c->replication);
    diag->option = NULL;
    return KVSHARD_OK;
}

/* B: memory_per_rank as given, uncapped; else device_memory_free -
 * trunc(device_memory_total x (1 - utilization)) in double, as the engine
 * computes it, capped by max_cache_size. */
static int budget(uint64_t *out, bool *has, const kvshard_profile__ctx *c, kvshard_diag__ctx *diag)
{
    const kvshard_options *o = c->options;
    uint64_t total = c->inputs[IN_DEVICE_TOTAL].u, free_bytes = c->inputs[IN_DEVICE_FREE].u;
    double utilization = c->inputs[IN_UTILIZATION].d;
    uint64_t cap = c->inputs[IN_MAX_CACHE_SIZE].u;
    *has = false;
    if (o->memory_per_rank) {
        *out = o->memory_per_rank;
        *has = true;
        return KVSHARD_OK;
    }
    if (!total && !free_bytes)
        return KVSHARD_OK;
    if (!total || !free_bytes) {
        diag->option = total ? "device_memory_total" : "device_memory_free";
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                                  "xllm profile: %s needs %s too (or give memory_per_rank)",
                                  total ? "device_memory_total" : "device_memory_free",
                                  total ? "device_memory_free" : "device_memory_total");
    }
    double held = trunc((double)total * (1.0 - utilization));
    double b = (double)free_bytes - held;
    if (cap > 0 && b > (double)cap)
        b = (double)cap;
    if (!(b > 0.0)) {
        diag->option = "device_memory_free";
        return kvshard_diag__fail(
            diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
            "xllm profile: no_memory_for_cache_blocks: no budget for the KV "
            "cache: device_memory_free %llu - "
            "device_memory_total %llu x (1 - max_memory_utilization %g) = %.0f "
            "bytes",
            (unsigned long long)free_bytes, (unsigned long long)total, utilization, b);
    }
    *out = b >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)b;
    *has = true;
    return KVSHARD_OK;
}

/* State slots: two padding slots, and a 0.9/1.9 share of the budget when
 * the prefix cache sizes the pool. */
static int slots_of(uint64_t *out, const kvshard__capacity_inputs *in, uint64_t lin, uint64_t blk,
                    kvshard_diag__ctx *diag)
{
    const kvshard_options *o = in->options;
    uint64_t B = in->memory;
    uint32_t asked = (uint32_t)in->inputs[IN_STATE_SLOTS].u;
    if (state_of(in->state)->request_pool) {
        *out = in->inputs[IN_CONCURRENT].u + 2; /* with or without linear layers */
        return KVSHARD_OK;
    }
    if (lin == 0) {
        *out = 2;
        return KVSHARD_OK;
    }
    uint64_t by_state = (B - 1) / lin;
    uint64_t room, per, pad;
    /* (B + 2 blk) / (lin + blk), checked: a wrapped 2 blk would bound the
     * slots by a figure no memory gives. */
    uint64_t by_both =
        kvshard__mul(&pad, 2, blk) && kvshard__add(&room, B, pad) && kvshard__add(&per, lin, blk)
            ? room / per
            : by_state;
    uint64_t bound = by_state < by_both ? by_state : by_both;
    bound = bound > 2 ? bound : 2;
    if (asked > 0) {
        uint64_t slots = (uint64_t)asked + 2;
        if (slots > bound) {
            diag->option = "max_linear_state_cache_slots";
            return kvshard_diag__fail(
                diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                "xllm profile: max_linear_state_cache_slots %u (+2 padding) is "
                "above the %llu state slots the budget %llu bytes can hold "
                "(state %llu bytes per slot)",
                asked, (unsigned long long)bound, (unsigned long long)B, (unsigned long long)lin);
        }
        *out = slots;
    } else if (!in->inputs[IN_PREFIX_CACHE].u) {
        uint64_t want = (uint64_t)o->max_seqs + 2;
        *out = want < bound ? want : bound;
    } else {
        /* IEEE double, in this order, as the engine computes it. */
        double share = (double)B * (0.9 / 1.9) / (double)lin;
        uint64_t a = (uint64_t)trunc(share);
        a = a > 2 ? a : 2;
        *out = a < bound ? a : bound;
    }
    return KVSHARD_OK;
}

static int capacity(kvshard__capacity *c, uint64_t *rank_blocks, const kvshard__capacity_inputs *in,
                    kvshard_diag__ctx *diag)
{
    const kvshard_options *o = in->options;
    uint64_t B = in->memory;
    uint32_t first = kvshard_capacity__first_rank(in), end = kvshard_capacity__end_rank(in);
    uint64_t lin = in->ranks[first].state_bytes_per_seq;
    uint64_t blk = in->unsplit_bytes_per_block;
    if (blk && !kvshard__add(&blk, blk, in->extra_per_block))
        return kvshard_diag__fail(
            diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW,
            "xllm profile: a block of all KV layers: %llu bytes and %llu extra "
            "bytes per block are more than 18446744073709551615 bytes (2^64 - 1)",
            (unsigned long long)in->unsplit_bytes_per_block,
            (unsigned long long)in->extra_per_block);
    uint64_t slots = 0, reserved;
    int rc = slots_of(&slots, in, lin, blk, diag);
    if (rc)
        return rc;
    /* Memory too small: the figure to change is the budget the device
     * figures gave, when they gave it. */
    const char *budget_input = o->memory_per_rank ? NULL : "device_memory_free";
    if (!kvshard__mul(&reserved, slots, lin) || reserved >= B) {
        diag->option = budget_input;
        return kvshard_diag__fail(
            diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
            "xllm profile: state slots do not fit: %llu slots x %llu bytes of "
            "state reach the budget of %llu bytes",
            (unsigned long long)slots, (unsigned long long)lin, (unsigned long long)B);
    }
    uint64_t avail = B - reserved;
    c->has_budget = true;
    c->budget = B;
    c->reserved = reserved;
    c->has_state_slots = true;
    c->state_slots = slots;
    c->usable_state_slots = slots - 1;
    /* Ranks that own no KV layer hold only scratch; the engine skips them
     * when it sizes every rank. Asked for one such rank, its own fit. */
    uint64_t least = UINT64_MAX, worst = 0;
    bool split = in->split > 1;
    for (uint32_t r = first; r < end; r++) {
        const kvshard_rank_memory *f = &in->ranks[r];
        uint64_t bpb;
        if (!kvshard_capacity__block_bytes(&bpb, f, in->extra_per_block))
            return kvshard_capacity__block_overflow(in, r, "xllm", diag);
        if (bpb == 0 || (split && f->kv_bytes_per_token == 0 && in->rank == KVSHARD_ALL_RANKS))
            continue;
        uint64_t blocks = avail / bpb;
        if (blocks < least) {
            least = blocks;
            worst = bpb;
        }
    }
    if (least == UINT64_MAX)
        return KVSHARD_OK; /* no KV bytes: slots only */
    if (least < 1) {
        diag->option = budget_input;
        return kvshard_diag__fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                                  "xllm profile: no memory for one block: budget %llu bytes, %llu "
                                  "state slots take %llu, bytes_per_block %llu",
                                  (unsigned long long)B, (unsigned long long)slots,
                                  (unsigned long long)reserved, (unsigned long long)worst);
    }
    c->has_num_blocks = true;
    c->num_blocks = least;
    c->has_usable_blocks = true;
    c->usable_blocks = least - 1;
    for (uint32_t r = first; rank_blocks && r < end; r++)
        rank_blocks[r] = least; /* the engine allocates one count everywhere */
    if ((rc = kvshard_capacity__max_tokens(c, o, diag)) != 0 || in->context_length == 0)
        return rc;
    uint64_t per_seq = kvshard__ceil_div(in->context_length, o->block_size);
    uint64_t cap = o->max_seqs;
    if (lin > 0 && c->usable_state_slots < cap)
        cap = c->usable_state_slots;
    uint64_t fit = c->usable_blocks / per_seq;
    c->has_concurrency = true;
    c->concurrency = fit < cap ? fit : cap;
    return KVSHARD_OK;
}

static void figures(kvshard_profile__figures *f, const kvshard_profile__view *v)
{
    const kvshard__capacity *c = v->capacity;
    kvshard_profile__fig_uint(f, "budget", c->has_budget, c->budget);
    kvshard_profile__fig_uint(f, "state_slots", c->has_state_slots, c->state_slots);
    kvshard_profile__fig_uint(f, "linear_blocks", c->has_state_slots, c->state_slots);
    kvshard_profile__fig_uint(f, "num_blocks", c->has_num_blocks, c->num_blocks);
    kvshard_profile__fig_uint(f, "usable_blocks", c->has_usable_blocks, c->usable_blocks);
    kvshard_profile__fig_uint(f, "usable_state_slots", c->has_state_slots,
                              c->usable_state_slots);
}

static void write_capacity(const kvshard__printer *p, const kvshard_profile__view *v)
{
    const kvshard__capacity *c = v->capacity;
    if (!v->has_memory) {
        kvshard_format__text(p, "capacity   ");
        kvshard_format__text(p, kvshard_profile__xllm.voice.no_budget_hint);
        kvshard_format__text(p, "\n");
        return;
    }
    kvshard_format__text(p, "capacity   xllm profile: budget ");
    kvshard_format__human(p, v->memory);
    kvshard_format__text(p, " per rank; ");
    kvshard_format__grouped(p, c->state_slots);
    kvshard_format__text(p, " state slots (");
    kvshard_format__human(p, c->reserved);
    kvshard_format__text(p, ")");
    if (!c->has_num_blocks) {
        kvshard_format__text(p, "; no KV bytes per block\n");
        return;
    }
    kvshard_format__text(p, ", ");
    kvshard_format__grouped(p, c->num_blocks);
    kvshard_format__printf(p, " blocks of %u tokens = ", v->options->block_size);
    kvshard_format__grouped(p, c->max_tokens);
    kvshard_format__printf(p, " tokens\n           the engine logs blocks: %llu, linear_blocks: "
                              "%llu; usable after padding: ",
                           (unsigned long long)c->num_blocks, (unsigned long long)c->state_slots);
    kvshard_format__grouped(p, c->usable_blocks);
    kvshard_format__text(p, " blocks, ");
    kvshard_format__grouped(p, c->usable_state_slots);
    kvshard_format__text(p, " state slots\n");
}

static void report_rows(const kvshard__printer *p, const kvshard_profile__view *v, bool tail)
{
    const kvshard__capacity *c = v->capacity;
    if (!tail) {
        kvshard_format__row(p, "budget per rank");
        kvshard_format__bytes(p, v->memory);
        kvshard_format__row_end(p);
        kvshard_format__row(p, "state slots");
        kvshard_format__grouped(p, c->state_slots);
        kvshard_format__text(p, ", taking ");
        kvshard_format__bytes(p, c->reserved);
        kvshard_format__row_end(p);
        return;
    }
    if (!c->has_num_blocks)
        return;
    kvshard_format__row(p, "usable after padding");
    kvshard_format__grouped(p, c->usable_blocks);
    kvshard_format__text(p, " blocks, ");
    kvshard_format__grouped(p, c->usable_state_slots);
    kvshard_format__printf(p, " state slots (the engine logs blocks: %llu, linear_blocks: %llu)",
                           (unsigned long long)c->num_blocks, (unsigned long long)c->state_slots);
    kvshard_format__row_end(p);
}

/* The engine's state pool does not follow max_seqs: the message names its
 * bounds. */
static void unreachable(char *buf, size_t cap, const kvshard_profile__view *v)
{
    const kvshard_options *o = v->options;
    const kvshard__capacity *c = v->capacity;
    snprintf(buf, cap,
             "at %u tokens %llu sequences run at once, below max_seqs %u: the engine has %llu "
             "usable blocks (%llu a sequence) and %llu usable state slots",
             o->context_length, (unsigned long long)c->concurrency, o->max_seqs,
             (unsigned long long)c->usable_blocks,
             (unsigned long long)kvshard__ceil_div(o->context_length, o->block_size),
             (unsigned long long)c->usable_state_slots);
}

/* The layout as xLLM's command line: its DP replicas are its own
 * (--dp_size), and a split names the engine's flags; its rule places the
 * layers, so no ownership is written. */
static int recommend(char *buf, size_t cap, const kvshard_profile__layout *l, bool env)
{
    size_t used = 0;
    if (cap)
        buf[0] = '\0';
    if (env || l->pp > 1)
        return env ? 0 : KVSHARD_EUNSUPPORTED;
    if (l->context_length)
        kvshard_profile__arg(buf, cap, &used, "--max_seqs_per_batch=%llu",
                             (unsigned long long)l->seqs_per_replica);
    kvshard_profile__arg(buf, cap, &used, "--max_memory_utilization=%s",
                         l->engine_fraction ? l->engine_fraction : l->utilization);
    if (l->dp > 1)
        kvshard_profile__arg(buf, cap, &used, "--dp_size=%u", l->dp);
    if (l->split > 1) {
        kvshard_profile__arg(buf, cap, &used, "--enable_layerwise_split=true");
        kvshard_profile__arg(buf, cap, &used, "--layerwise_split_size=%u", l->split);
    }
    return (int)used;
}

/* The flags a launch line of fit repeats when given: they change what the
 * engine allocates. */
static const char *const fit_repeated[] = {"enable_prefix_cache", "max_linear_state_cache_slots",
                                           "max_cache_size", NULL};

/* Under fit --engine, the fraction given, else the engine's 0.8. */
static double fit_utilization(const kvshard_value *given, const kvshard_profile__state *state)
{
    (void)state;
    return given[IN_UTILIZATION].d;
}

/* Global ranks: dp, cp, tp; the engine has no stages. */
static const kvshard_profile__rules rules = {
    KVSHARD_PP_RULE_DEFAULT,
    NULL,
    NULL,
    KVSHARD_RANK_LAYOUT_XLLM,
    {KVSHARD_PROFILE__DP, KVSHARD_PROFILE__PP, KVSHARD_PROFILE__CP, KVSHARD_PROFILE__TP},
    false,
};

/* The model types upstream xLLM splits layers for; the adaptation this
 * profile follows splits every model it covers, with its own build. */
static const char *const upstream_split_types[] = {"deepseek_v32", "glm_moe_dsa", NULL};

/* Mooncake push: its rules in the order the documentation lists them. */
static void transfer_verdict(kvshard_profile__verdict *v, const kvshard_profile__pair *pair)
{
    const kvshard_xllm__state *st = &pair->state[1]->xllm;
    bool before_0_11 = !kvshard_versions__from(&st->version, &V_0_11_0);
    bool other_topology = pair->dp[0] != pair->dp[1] || pair->tp[0] != pair->tp[1];
    bool split = pair->split[0] > 1 || pair->split[1] > 1;
    if (pair->pp[0] > 1 || pair->pp[1] > 1)
        kvshard_verdicts__refuse(v, "xllm_pp",
                                 "%u pipeline stages on P and %u on D: xLLM has no pipeline "
                                 "parallelism",
                                 pair->pp[0], pair->pp[1]);
    if (other_topology && pair->model->attention != KVSHARD_ATTENTION_MLA && before_0_11)
        kvshard_verdicts__refuse(v, "xllm_hetero_mla",
                                 "dp %u x TP %u on P and dp %u x TP %u on D: a different topology "
                                 "without MLA needs 0.11.0",
                                 pair->dp[0], pair->tp[0], pair->dp[1], pair->tp[1]);
    if (split && before_0_11)
        kvshard_verdicts__refuse(v, "xllm_split_version",
                                 "S %u on P and %u on D: the layerwise split needs 0.11.0",
                                 pair->split[0], pair->split[1]);
    if (pair->block[0] != pair->block[1])
        kvshard_verdicts__refuse(v, "xllm_block", "the blocks differ: %u on P, %u on D",
                                 pair->block[0], pair->block[1]);
    if (other_topology)
        v->requires[v->require_count++] = "kv_mode=PUSH";
    bool upstream = false;
    for (const char *const *t = upstream_split_types; *t; t++)
        upstream = upstream || strcmp(pair->model_type, *t) == 0;
    if (split && !upstream)
        v->requires[v->require_count++] = "layerwise_split_build";
}

const kvshard__profile kvshard_profile__xllm = {
    .name = "xllm",
    .engine = KVSHARD_ENGINE_XLLM,
    .defaults.block_size = 128,
    .defaults.max_seqs = 200,
    .defaults.ownership = KVSHARD_OWNERSHIP_GLOBAL,
    .defaults.runs_its_ownership_only = true, /* stock xLLM places layers by global index */
    .defaults.pp_rule = KVSHARD_PP_RULE_VLLM,
    .defaults.rank_layout = KVSHARD_RANK_LAYOUT_XLLM,
    /* xLLM's decode attends on the owner; its prefill sends history rows. */
    .comm.decode = KVSHARD__COMM_OWNER_ATTENTION,
    .comm.prefill = KVSHARD__COMM_HISTORY_ROWS,
    .device.total_input = "device_memory_total",
    .device.utilization_input = "max_memory_utilization",
    .device.fill_input = "device_memory_free",
    .device.fill_free = true,
    .stages.refusal = "pp_engine",
    .stages.why = "xLLM has no pipeline parallelism",
    .dialect.aliases = aliases,
    .dialect.inputs = inputs,
    .dialect.flag_style = KVSHARD_PROFILE__GFLAGS,
    .versions = &versions,
    .counting.counts_draft_layers = false,
    .counting.mla_v2_bytes = true,
    .counting.ranks_by_balanced = false,
    .hooks.settle = settle,
    .hooks.check = check,
    .hooks.budget = budget,
    .hooks.capacity = capacity,
    .hooks.figures = figures,
    .voice.budget_label = "budget",
    .voice.named_in_headers = true,
    .voice.no_budget_hint = "xllm profile: no budget given: pass `--memory_per_rank`, or "
                            "`--device_memory_total` and `--device_memory_free`",
    .voice.write_capacity = write_capacity,
    .voice.report_rows = report_rows,
    .voice.unreachable = unreachable,
    .dialect.recommend = recommend,
    .rules = &rules,
    /* The state pool follows the request limit when the prefix cache is
     * off, and caps the sequences when it is on. */
    .fitting.utilization = fit_utilization,
    .fitting.limit_sizes_pools = true,
    .fitting.repeated = fit_repeated,
    .fitting.underscores = true,
    .transfer_verdict = transfer_verdict,
};
