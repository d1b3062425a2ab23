/* kvshard fit: every layout of N GPUs that keeps a TP group inside a node
 * and stages across nodes, each planned from the device inputs (the weights
 * read and classified once), ranked by the sequences it serves. */
#include "explore/fit.h"

#include "base/abi.h"
#include "base/call.h"
#include "deploy/options.h"
#include "explore/comm.h"
#include "plan/deployment.h"
#include "plan/device.h"
#include "profile/capacity.h"
#include "profile/profiles.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *kvshard_status_name(int code)
{
    switch (code) {
    case KVSHARD_OK: return "ok";
    case KVSHARD_ENOMEM: return "nomem";
    case KVSHARD_EINVAL: return "invalid";
    case KVSHARD_EIO: return "io";
    case KVSHARD_ESYNTAX: return "syntax";
    case KVSHARD_EUTF8: return "utf8";
    case KVSHARD_ELIMIT: return "limit";
    case KVSHARD_EDUPKEY: return "dupkey";
    case KVSHARD_EUNKNOWNKEY: return "unknown_key";
    case KVSHARD_ETYPE: return "type";
    case KVSHARD_ERANGE: return "range";
    case KVSHARD_EMISSING: return "missing";
    case KVSHARD_ELAYERTYPE: return "layer_type";
    case KVSHARD_ELAYERCOUNT: return "layer_count";
    case KVSHARD_ELAYERLIST: return "layer_list";
    case KVSHARD_EPARALLEL: return "parallel";
    case KVSHARD_EWORLD: return "world";
    case KVSHARD_ESPLIT: return "split";
    case KVSHARD_ESPLITCP: return "split_cp";
    case KVSHARD_EKVHEADS: return "kv_heads";
    case KVSHARD_ELINEARHEADS: return "linear_heads";
    case KVSHARD_ERANK: return "rank";
    case KVSHARD_ELAYER: return "layer";
    case KVSHARD_ENOBLOCK: return "no_block";
    case KVSHARD_EOVERFLOW: return "overflow";
    case KVSHARD_EWRITE: return "write";
    case KVSHARD_EPROFILE: return "profile";
    case KVSHARD_EUNSUPPORTED: return "unsupported";
    case KVSHARD_EUNMODELED: return "unmodeled";
    case KVSHARD_EPPLAYERS: return "pp_layers";
    case KVSHARD_EPARTITION: return "pp_partition";
    case KVSHARD_EPPSOURCE: return "pp_kv_source";
    case KVSHARD_ESTAGE: return "stage";
    case KVSHARD_EGLOBALRANK: return "global_rank";
    case KVSHARD_EWEIGHTS: return "weights";
    case KVSHARD_EDOESNOTFIT: return "does_not_fit";
    case KVSHARD_EFITLIMITS: return "fit_limits";
    case KVSHARD_EQHEADS: return "q_heads";
    case KVSHARD_ECOMM: return "comm";
    default: return "unknown";
    }
}

/* What every row shares while the search runs. */
typedef struct search {
    const kvshard_model *model;
    kvshard_options given; /* the caller's, for each row's plan */
    kvshard__planning base; /* settled */
    kvshard__device device;
    kvshard_allocator alloc;
    uint32_t gpus;
    /* Under an engine profile: rows are that engine's, sized at its own
     * sequences, and `given.settings` is this copy of the caller's with the
     * engine's length written (owned). */
    bool engine;
    kvshard_settings *settings;
    /* An engine's line for another fit's row 1: that one layout is kept
     * when it does not fit, its reason read by the caller. */
    bool one_layout;
    /* There, the split of that layout (0: unsplit). */
    uint32_t split;
    /* There, where the name of the engine's refusal of that row for memory
     * goes ("no_memory_for_cache_blocks"): its line's reason. */
    char *row_refusal;
    /* The deployment's comm inputs: each row that fits is priced (NULL:
     * none given, no row is). */
    const kvshard__comm_inputs *comm;
    kvshard__comm *settled; /* the fit's comm_settled */
} search;

static void refusal_name(char *name, size_t cap, const char *message);

static bool memory_failure(int rc)
{
    return rc == KVSHARD_EDOESNOTFIT || rc == KVSHARD_ENOBLOCK;
}

/* One layout's plan at `max_seqs`: the device read once, shared. */
static int plan_slots(kvshard_plan **out, const search *s, uint32_t T, uint32_t P, uint32_t D,
                      uint32_t S, kvshard_ownership rule, uint32_t max_seqs, uint64_t state_slots,
                      kvshard_diag__ctx *diag);

static int plan_layout(kvshard_plan **out, const search *s, uint32_t T, uint32_t P, uint32_t D,
                       uint32_t S, kvshard_ownership rule, uint32_t max_seqs,
                       kvshard_diag__ctx *diag)
{
    return plan_slots(out, s, T, P, D, S, rule, max_seqs, 0, diag);
}

/* The same, under an engine fit telling the engine `state_slots` slots in
 * all replicas (0: none), when D > 1 that the replicas are its own workers,
 * and T where it takes its TP size as an input of its own (whatever was
 * given: fit writes the parallel sizes): those inputs go into a copy of the
 * fit's settings. */
static int plan_slots(kvshard_plan **out, const search *s, uint32_t T, uint32_t P, uint32_t D,
                      uint32_t S, kvshard_ownership rule, uint32_t max_seqs, uint64_t state_slots,
                      kvshard_diag__ctx *diag)
{
    const kvshard_profile__fitting *fitting = &s->base.profile->fitting;
    const char *replicas = s->engine && D > 1 ? fitting->replicas_input : NULL;
    const char *slots = s->engine && state_slots ? fitting->state_slots_input : NULL;
    const char *tp = s->engine ? fitting->tp_input : NULL;
    kvshard_settings *own = NULL;
    if (replicas || slots || tp) {
        own = kvshard_settings__copy(s->settings, &s->alloc);
        if (!own)
            return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                       "out of memory");
        char text[24], tp_text[16];
        snprintf(text, sizeof text, "%llu", (unsigned long long)state_slots);
        snprintf(tp_text, sizeof tp_text, "%u", T);
        int rc = replicas ? kvshard_settings_set(own, replicas, "true", "kvshard fit", diag->err)
                          : KVSHARD_OK;
        if (rc == KVSHARD_OK && slots)
            rc = kvshard_settings_set(own, slots, text, "kvshard fit", diag->err);
        if (rc == KVSHARD_OK && tp)
            rc = kvshard_settings_set(own, tp, tp_text, "kvshard fit", diag->err);
        if (rc) {
            kvshard_settings_free(own);
            return rc;
        }
    }
    kvshard_options o;
    memcpy(&o, &s->given, sizeof o);
    /* Separate instances are alike: one is planned for all. */
    uint32_t planned = s->engine && fitting->separate_instances ? 1 : D;
    o.world_size = T * P * planned;
    o.dp_size = planned;
    o.cp_size = 1;
    o.pp_size = P;
    o.pp_partition = NULL;
    o.pp_partition_count = 0;
    if (o.pp_partition_rule == KVSHARD_PP_RULE_EXPLICIT)
        o.pp_partition_rule = KVSHARD_PP_RULE_DEFAULT;
    o.enable_layerwise_split = S > 1;
    o.layerwise_split_size = S;
    o.ownership = S > 1 ? rule : KVSHARD_OWNERSHIP_DEFAULT;
    o.memory_per_rank = 0;
    o.max_seqs = max_seqs;
    if (own)
        o.settings = own;
    /* A priced row reads its layers' owners and kinds, which only a whole
     * plan has. */
    int rc = s->comm ? kvshard_plan__create_with(out, s->model, &o, &s->alloc, &s->device, diag)
                     : kvshard_plan__figures(out, s->model, &o, &s->alloc, &s->device, diag);
    kvshard_settings_free(own);
    return rc;
}

/* Sequences per replica at the context length: balanced max_seqs, or for a
 * plan without KV bytes the fewest states any rank holds; false: none. */
static bool sequences_of(uint64_t *out, const kvshard_plan *p)
{
    if (p->cap.has_balanced_max_seqs) {
        *out = p->cap.balanced_max_seqs;
        return true;
    }
    bool any = false;
    uint64_t least = UINT64_MAX;
    for (uint32_t r = 0; r < p->ranks_count; r++) {
        const kvshard_rank_memory *m = &p->ranks[r];
        uint64_t seq;
        bool sums = kvshard__add(&seq, m->state_bytes_per_seq, m->scratch_bytes_per_seq);
        if ((sums && !seq) || !m->has_budget)
            continue;
        any = true;
        /* A sequence past 2^64 - 1 bytes fits no budget: never a wrapped
         * size that would let many fit. */
        uint64_t fit = sums ? m->budget / seq : 0;
        least = fit < least ? fit : least;
    }
    *out = any ? least : 0;
    return any;
}

static void row_figures(kvshard_fit_row *row, const kvshard_plan *p, uint32_t *partition)
{
    row->fits = true;
    row->weights_per_rank = 0;
    for (uint32_t s = 0; s < p->pp; s++) {
        /* Stage weights are the device's; an engine's budget has none. */
        if (p->device.used && p->stage_weights[s] > row->weights_per_rank)
            row->weights_per_rank = p->stage_weights[s];
        partition[s] = p->stages[s].count;
    }
    row->budget = p->memory;
    row->binding_stage = p->cap.has_binding ? p->cap.binding_rank / p->tp : 0;
    row->num_blocks = p->cap.has_num_blocks ? p->cap.num_blocks : 0;
    row->max_seqs = p->options.max_seqs;
    row->tokens_per_replica = p->cap.has_num_blocks ? p->cap.max_tokens : 0;
    row->warnings = 0;
    for (size_t i = 0; i < p->warning_count; i++)
        row->warnings |= 1u << p->warnings[i].code;
}

/* The row's communication estimate from its plan, which was made without
 * comm inputs: a view of it with them, its batch the row's sequences (no
 * unsplit reference of its own: the S = 1 row of the layout is the
 * reference, applied once every row is priced). */
static int price_row(kvshard_fit_row *row, const search *s, const kvshard_plan *p,
                     kvshard_diag__ctx *diag)
{
    if (!s->comm)
        return KVSHARD_OK;
    kvshard_plan priced = *p;
    priced.comm_given = true;
    priced.comm = *s->comm;
    priced.comm.batch = 0;
    priced.comm_reference = false;
    priced.query_heads = s->model->sites[KVSHARD__SITE_Q_HEADS].value;
    /* The inputs' refusals and warnings are the plan's, as under plan. */
    int rc = kvshard_deployment__check_comm(&priced, diag);
    kvshard__comm c;
    if (rc == KVSHARD_OK)
        rc = kvshard_comm__of(&c, NULL, &priced, diag->err);
    if (rc)
        return rc;
    kvshard_comm__public(&row->comm, &c);
    for (size_t i = 0; i < priced.warning_count; i++)
        row->warnings |= 1u << priced.warnings[i].code;
    row->warnings |= row->comm.warnings;
    if (s->settled && !s->settled->split)
        *s->settled = c;
    return KVSHARD_OK;
}

/* A row of one layout and split: planned once, or at a context length
 * twice (at one sequence for the balanced count, then at that count).
 * `admission` is the triple's unsplit plan at the configured max_seqs (NULL
 * when it failed for memory, with that code in admission_rc): the unsplit
 * row without a context length is that plan, not planned again. */
/* D replicas of a replica's figures, checked: a wrapped product would
 * rank the layout by a figure it does not have. */
static int replica_totals(kvshard_fit_row *row, kvshard_diag__ctx *diag)
{
    uint32_t D = row->dp_size;
    if (kvshard__mul(&row->tokens_total, row->tokens_per_replica, D) &&
        kvshard__mul(&row->seqs_total, row->seqs_per_replica, D))
        return KVSHARD_OK;
    return kvshard_diag__fail(diag, kvshard_profile__about_block, KVSHARD_EOVERFLOW,
                              "T = %u, P = %u, D = %u: %llu tokens (%llu sequences) a replica "
                              "times %u replicas pass 18446744073709551615 (2^64 - 1)",
                              row->tp_size, row->pp_size, D,
                              (unsigned long long)row->tokens_per_replica,
                              (unsigned long long)row->seqs_per_replica, D);
}

/* A rank's weights under an engine profile: what the device filled into
 * the engine's input, less the reserve. */
static uint64_t engine_weights(const search *s, const kvshard_plan *p)
{
    const kvshard__profile *profile = s->base.profile;
    int i = kvshard_profiles__input_index(profile, profile->device.fill_input);
    if (i < 0 || s->device.fill_given)
        return 0;
    uint64_t fill = p->inputs[i].u;
    uint64_t taken = profile->device.fill_free ? s->device.device_memory - fill : fill;
    return taken - s->device.reserve;
}

/* The request limit an engine is planned at before its sequences are
 * known: none where it sizes its pools without one, else one sequence. */
static uint32_t engine_first_seqs(const search *s)
{
    return s->base.profile->fitting.limit_counts_replicas ? 0 : 1;
}

/* Whether the engine serves m sequences at once when its request limit is
 * m: its plan at m into `*out` when it does (else none); a plan refused
 * for memory serves none. */
static int serves(kvshard_plan **out, bool *yes, const search *s, const kvshard_fit_row *row,
                  uint64_t m, kvshard_diag__ctx *diag)
{
    kvshard_plan *p = NULL;
    *out = NULL;
    *yes = false;
    int rc = plan_layout(&p, s, row->tp_size, row->pp_size, row->dp_size,
                         row->layerwise_split_size, row->ownership, (uint32_t)m, diag);
    if (memory_failure(rc))
        return KVSHARD_OK;
    if (rc)
        return rc;
    *yes = p->cap.has_concurrency && p->cap.concurrency >= m;
    if (*yes)
        *out = p;
    else
        kvshard_plan_free(p);
    return KVSHARD_OK;
}

/* The largest request limit m the engine serves whole, where its pools
 * change with m: what it serves shrinks as m grows, so the answer lies
 * between what the plan at an upper bound serves and that bound. The
 * plan at the answer into `*out` (none when it serves no sequence). */
static int largest_served(kvshard_plan **out, uint64_t *seqs, const search *s,
                          const kvshard_fit_row *row, uint64_t upper, kvshard_diag__ctx *diag)
{
    kvshard_plan *p = NULL, *best = NULL;
    uint64_t lo = 0, hi = upper + 1; /* lo is served (or 0), hi is not */
    bool yes;
    int rc = plan_layout(&p, s, row->tp_size, row->pp_size, row->dp_size,
                         row->layerwise_split_size, row->ownership, (uint32_t)upper, diag);
    if (rc && !memory_failure(rc))
        return rc;
    if (rc == KVSHARD_OK && p->cap.has_concurrency) {
        if (p->cap.concurrency >= upper) {
            lo = upper;
            best = p;
            p = NULL;
        } else {
            lo = p->cap.concurrency; /* served: a smaller limit leaves it more */
        }
    }
    kvshard_plan_free(p);
    rc = KVSHARD_OK; /* refused for memory at the bound: the search starts at 0 */
    /* Near lo first: the bound's figure is most often the answer. */
    for (uint64_t step = 1; rc == KVSHARD_OK && hi - lo > 1;) {
        uint64_t m = lo + step < hi ? lo + step : lo + (hi - lo) / 2;
        if ((rc = serves(&p, &yes, s, row, m, diag)) != 0)
            break;
        if (yes) {
            lo = m;
            step *= 2;
            kvshard_plan_free(best);
            best = p;
            p = NULL;
        } else {
            hi = m;
            step = 1;
        }
    }
    /* lo read from the bound's plan and never planned itself: its plan. */
    if (rc == KVSHARD_OK && lo && !best && (rc = serves(&best, &yes, s, row, lo, diag)) == 0 &&
        !yes)
        lo = 0;
    if (rc) {
        kvshard_plan_free(best);
        return rc;
    }
    *seqs = lo;
    *out = best;
    return KVSHARD_OK;
}

/* An engine's row: planned at its first request limit, its sequences s
 * read from that plan (the concurrency, or the balanced count), then
 * planned again at s (or D x s) with the state slots the first plan gave,
 * so the row's pools are those the engine will allocate; where the limit
 * changes the pools, s is the largest limit served whole. A split the
 * engine does not run is no row. */
static int engine_row_plans(kvshard_plan **out, uint64_t *seqs, uint64_t *slots, const search *s,
                            const kvshard_fit_row *row, kvshard_diag__ctx *diag)
{
    const kvshard_profile__fitting *fitting = &s->base.profile->fitting;
    uint32_t T = row->tp_size, P = row->pp_size, D = row->dp_size, S = row->layerwise_split_size;
    kvshard_plan *p = NULL;
    *out = NULL;
    *seqs = 0;
    *slots = 0;
    int rc = plan_layout(&p, s, T, P, D, S, row->ownership, engine_first_seqs(s), diag);
    if (rc)
        return rc;
    bool has = fitting->limit_counts_replicas ? p->cap.has_concurrency
                                              : p->cap.has_balanced_max_seqs;
    *seqs = !has                             ? 0
            : fitting->limit_counts_replicas ? p->cap.concurrency
                                             : p->cap.balanced_max_seqs;
    if (fitting->limit_sizes_pools) {
        /* At one sequence the pools are the largest: their blocks bound s. */
        uint64_t per_seq = kvshard__ceil_div(s->base.options.context_length,
                                             p->options.block_size ? p->options.block_size : 1);
        uint64_t upper = has ? *seqs : p->cap.has_num_blocks ? p->cap.num_blocks / per_seq : 0;
        kvshard_plan_free(p);
        *seqs = 0;
        if (upper == 0)
            return KVSHARD_OK;
        return largest_served(out, seqs, s, row, upper > (1u << 24) ? 1u << 24 : upper, diag);
    }
    if (fitting->state_slots_input && p->cap.has_state_slots)
        *slots = (uint64_t)D * p->cap.usable_state_slots;
    kvshard_plan_free(p);
    if (*seqs == 0)
        return KVSHARD_OK;
    uint64_t limit = fitting->limit_counts_replicas ? (uint64_t)D * *seqs : *seqs;
    uint32_t max_seqs = limit > (1u << 24) ? 1u << 24 : (uint32_t)limit;
    return plan_slots(out, s, T, P, D, S, row->ownership, max_seqs, *slots, diag);
}

static int fill_engine_row(kvshard_fit_row *row, bool *dropped, const search *s,
                           uint32_t *partition, kvshard_diag__ctx *diag)
{
    kvshard_plan *p = NULL;
    kvshard_error e;
    kvshard_diag__ctx layout = kvshard_diag__on(&e);
    uint64_t seqs, slots;
    int rc = engine_row_plans(&p, &seqs, &slots, s, row, &layout);
    if (memory_failure(rc)) {
        row->reason = rc;
        if (s->row_refusal)
            refusal_name(s->row_refusal, sizeof ((kvshard_fit *)0)->row_refusal, e.message);
        return KVSHARD_OK;
    }
    if (rc && rc != KVSHARD_ENOMEM && row->layerwise_split_size > 1) {
        *dropped = true;
        return KVSHARD_OK;
    }
    if (rc) {
        if (diag->err)
            *diag->err = e;
        diag->among = layout.among;
        return rc;
    }
    row->has_seqs = true;
    if (!p) { /* the engine serves no sequence of the length */
        row->reason = KVSHARD_ENOBLOCK;
        row->no_sequence = true;
        return KVSHARD_OK;
    }
    row_figures(row, p, partition);
    row->weights_per_rank = engine_weights(s, p);
    row->max_seqs = seqs > UINT32_MAX ? UINT32_MAX : (uint32_t)seqs;
    row->seqs_per_replica = seqs;
    rc = price_row(row, s, p, diag);
    kvshard_plan_free(p);
    return rc ? rc : replica_totals(row, diag);
}

static int fill_row(kvshard_fit_row *row, bool *dropped, const search *s, uint32_t *partition,
                    const kvshard_plan *admission, int admission_rc, kvshard_diag__ctx *diag)
{
    *dropped = false;
    uint32_t T = row->tp_size, P = row->pp_size, D = row->dp_size, S = row->layerwise_split_size;
    uint32_t context = s->base.options.context_length;
    if (S == 1 && !context) {
        if (admission_rc) {
            row->reason = admission_rc;
            return KVSHARD_OK;
        }
        row_figures(row, admission, partition);
        int rc = price_row(row, s, admission, diag);
        return rc ? rc : replica_totals(row, diag);
    }
    if (s->engine)
        return fill_engine_row(row, dropped, s, partition, diag);
    kvshard_plan *p = NULL;
    kvshard_error e;
    /* The layout's own plan: its error, and what that is about. */
    kvshard_diag__ctx layout = kvshard_diag__on(&e);
    int rc = plan_layout(&p, s, T, P, D, S, row->ownership, context ? 1 : s->base.options.max_seqs,
                         &layout);
    uint64_t seqs = 0;
    if (rc == KVSHARD_OK && context) {
        row->has_seqs = sequences_of(&seqs, p);
        kvshard_plan_free(p);
        p = NULL;
        if (row->has_seqs && seqs == 0) {
            row->reason = KVSHARD_ENOBLOCK;
            row->no_sequence = true;
            return KVSHARD_OK;
        }
        uint32_t max_seqs = !row->has_seqs        ? s->base.options.max_seqs
                            : seqs > (1u << 24)    ? 1u << 24
                                                   : (uint32_t)seqs;
        rc = plan_layout(&p, s, T, P, D, S, row->ownership, max_seqs, &layout);
    }
    if (memory_failure(rc)) {
        row->reason = rc;
        return KVSHARD_OK;
    }
    if (rc) {
        if (diag->err)
            *diag->err = e;
        diag->among = layout.among;
        return rc;
    }
    row_figures(row, p, partition);
    row->seqs_per_replica = row->has_seqs ? seqs : 0;
    rc = price_row(row, s, p, diag);
    kvshard_plan_free(p);
    return rc ? rc : replica_totals(row, diag);
}

/* The ranking of rows that fit: more sequences in all (none last), more
 * tokens, the smaller P, the larger T, the smaller S, the rules in order. */
static int rule_order(kvshard_ownership r)
{
    return r == KVSHARD_OWNERSHIP_ORDINAL ? 0 : r == KVSHARD_OWNERSHIP_GLOBAL ? 1 : 2;
}

static int compare_rows(const void *pa, const void *pb)
{
    const kvshard_fit_row *a = pa, *b = pb;
    if (a->fits != b->fits)
        return a->fits ? -1 : 1;
    if (!a->fits) /* enumeration order */
        return a->rank < b->rank ? -1 : a->rank > b->rank;
    if (a->has_seqs != b->has_seqs)
        return a->has_seqs ? -1 : 1;
    if (a->seqs_total != b->seqs_total)
        return a->seqs_total > b->seqs_total ? -1 : 1;
    if (a->tokens_total != b->tokens_total)
        return a->tokens_total > b->tokens_total ? -1 : 1;
    if (a->pp_size != b->pp_size)
        return a->pp_size < b->pp_size ? -1 : 1;
    if (a->tp_size != b->tp_size)
        return a->tp_size > b->tp_size ? -1 : 1;
    if (a->layerwise_split_size != b->layerwise_split_size)
        return a->layerwise_split_size < b->layerwise_split_size ? -1 : 1;
    if (rule_order(a->ownership) != rule_order(b->ownership))
        return rule_order(a->ownership) < rule_order(b->ownership) ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank; /* enumeration order */
}

/* By throughput: the rows that fit by the most whole tokens per second in
 * all (whole, so rows that differ by rounding tie; unpriced last), then as
 * by capacity. */
static int compare_throughput(const void *pa, const void *pb)
{
    const kvshard_fit_row *a = pa, *b = pb;
    if (a->fits && b->fits) {
        bool ha = a->comm.has_step, hb = b->comm.has_step;
        if (ha != hb)
            return ha ? -1 : 1;
        double ta = ha ? floor(a->comm.throughput_total) : 0;
        double tb = hb ? floor(b->comm.throughput_total) : 0;
        if (ta != tb)
            return ta > tb ? -1 : 1;
    }
    return compare_rows(pa, pb);
}

/* Each split row against the S = 1 row of its (T, P, D), the layout
 * without the split at that row's own sequences: its gain, and the verdict
 * when it decodes slower. */
static void price_against_unsplit(kvshard_fit *f)
{
    for (size_t i = 0; i < f->count; i++) {
        kvshard_comm_estimate *e = &f->rows[i].comm;
        const kvshard_fit_row *row = &f->rows[i];
        if (!e->given || !e->has_step)
            continue;
        if (row->layerwise_split_size == 1) {
            e->has_gain = true;
            e->throughput_gain = 1.0;
            continue;
        }
        for (size_t j = 0; j < f->count; j++) {
            const kvshard_fit_row *ref = &f->rows[j];
            if (ref->layerwise_split_size != 1 || ref->tp_size != row->tp_size ||
                ref->pp_size != row->pp_size || ref->dp_size != row->dp_size)
                continue;
            if (ref->comm.given && ref->comm.has_step) {
                e->has_unsplit = true;
                e->unsplit_throughput = ref->comm.throughput;
                e->has_gain = true;
                e->throughput_gain = e->throughput / e->unsplit_throughput;
                if (e->throughput < e->unsplit_throughput) {
                    e->warnings |= 1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT;
                    f->rows[i].warnings |= 1u << KVSHARD_WARN_SPLIT_LOSES_THROUGHPUT;
                }
            }
            break;
        }
    }
}

/* The ranking asked for, auto resolved: throughput when the inputs give
 * one (an accelerator, a link, a context length); asked for without them,
 * comm_input_missing naming what is missing. */
static int settle_rank(kvshard_fit *f, const search *s, kvshard_rank_by asked,
                       kvshard_diag__ctx *diag)
{
    const kvshard_comm_estimate *e = NULL;
    for (size_t i = 0; i < f->count && !e; i++)
        e = f->rows[i].comm.given ? &f->rows[i].comm : NULL;
    /* A fit row's batch is its own sequences: no batch to give. */
    kvshard__rank_needs has = {e && e->has_accelerator, e && e->has_link,
                              s->base.options.context_length > 0, true};
    return kvshard_comm__rank_by(&f->rank_by, asked, &has, diag);
}

/* The (T, P) the node limits admit: a TP group inside a node (or whole
 * nodes once max_tp_size allows), at most max_pp_size stages. */
static bool within_limits(const kvshard_fit *f, uint32_t T, uint32_t P)
{
    uint32_t G = f->gpus_per_node;
    bool node = f->gpus <= G || G % T == 0 || T % G == 0;
    return T <= f->max_tp_size && node && P <= f->max_pp_size;
}

static const uint32_t ownership_rules[3] = {KVSHARD_OWNERSHIP_ORDINAL, KVSHARD_OWNERSHIP_GLOBAL,
                                            KVSHARD_OWNERSHIP_CONTIGUOUS};

/* The divisors of n in increasing order into d (room for 2 x 1024, more
 * than any n up to 2^32 has); their count. */
static uint32_t divisors_of(uint32_t *d, uint32_t n)
{
    uint32_t low = 0, high = 0, big[1024];
    for (uint32_t k = 1; (uint64_t)k * k <= n; k++) {
        if (n % k)
            continue;
        d[low++] = k;
        if (k != n / k)
            big[high++] = n / k;
    }
    while (high)
        d[low++] = big[--high];
    return low;
}

/* The plans a row of split S makes: one, or two at a context length (one
 * sequence, then the balanced count), each over the L layers and the
 * ranks a stage keeps: S split ranks, of two groups when the split groups'
 * unions of KV heads differ (kvshard_memory__other_group). */
static uint64_t row_work(const kvshard__model_info *m, uint32_t T, uint32_t P, uint32_t S,
                         bool context)
{
    uint64_t kept = (uint64_t)S * (kvshard_memory__other_group(m, T, S) ? 2u : 1u);
    return ((uint64_t)m->num_layers + P * kept) * (context ? 2u : 1u);
}

static int start(kvshard_fit *f, search *s, const kvshard_fit_options *fo, kvshard_diag__ctx *diag)
{
    const kvshard_options *o = &s->base.options;
    if (fo->gpus == 0)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                             "gpus is 0; kvshard fit needs at least 1");
    if (fo->gpus > KVSHARD_MAX_RANKS)
        return kvshard_error__fail(diag->err, KVSHARD_EPARALLEL, "", kvshard_error__no_mark,
                             "gpus %u is above the %u ranks kvshard plans", fo->gpus,
                             KVSHARD_MAX_RANKS);
    if (o->device_memory == 0) {
        diag->option = "device_memory";
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                                  "kvshard fit needs device_memory, the memory of one GPU");
    }
    if (o->weights_per_rank_count > 0) {
        diag->option = "weights_per_rank";
        return kvshard_diag__fail(diag, kvshard_device__about_weights, KVSHARD_EWEIGHTS,
                                  "weights_per_rank: kvshard fit works out each layout's "
                                  "weights; give weights_total (with weights_experts) or the "
                                  "model's safetensors files");
    }
    /* An engine without stages (no flag for them) fits one stage; asking
     * for more is its refusal of stages. */
    const kvshard__profile *profile = s->base.profile;
    bool one_stage = s->engine && profile->stages.refusal && !profile->stages.flag;
    if (one_stage && (fo->max_pp_size > 1 || fo->pp_size > 1)) {
        diag->option = fo->pp_size > 1 ? "pp_size" : "max_pp_size";
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "%s profile: %s: %s %u: %s", profile->name,
                                  profile->stages.refusal, diag->option,
                                  fo->pp_size > 1 ? fo->pp_size : fo->max_pp_size,
                                  profile->stages.why);
    }
    f->gpus = fo->gpus;
    f->gpus_per_node = fo->gpus_per_node ? fo->gpus_per_node : 8;
    uint32_t nodes = (f->gpus + f->gpus_per_node - 1) / f->gpus_per_node;
    f->max_tp_size = fo->max_tp_size ? fo->max_tp_size : f->gpus_per_node;
    f->max_pp_size = fo->max_pp_size ? fo->max_pp_size : nodes > 1 && !one_stage ? nodes : 1;
    if (!fo->max_pp_size && fo->pp_size > f->max_pp_size)
        f->max_pp_size = fo->pp_size;
    return KVSHARD_OK;
}

/* The device asks plan's caller for weights_per_rank among the sources of
 * a rank's weights; fit refuses it (it works out each layout's weights), so
 * its message names only the sources fit takes. */
static void name_fit_weights(kvshard_error *err)
{
    static const char plan_sources[] = "give weights_per_rank, weights_total (with "
                                       "weights_experts), or ";
    static const char fit_sources[] = "give weights_total with weights_experts, or ";
    if (!err)
        return;
    char *at = strstr(err->message, plan_sources);
    if (!at)
        return;
    size_t tail = strlen(at + sizeof plan_sources - 1) + 1;
    memcpy(at, fit_sources, sizeof fit_sources - 1);
    memmove(at + sizeof fit_sources - 1, at + sizeof plan_sources - 1, tail);
}

/* A profile's refusal reads "NAME profile: REFUSAL: why": REFUSAL into
 * `name` ("" for another message). */
static void refusal_name(char *name, size_t cap, const char *message)
{
    name[0] = '\0';
    const char *p = strstr(message, " profile: ");
    if (!p)
        return;
    p += strlen(" profile: ");
    size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
    if (n && n < cap && p[n] == ':') {
        memcpy(name, p, n);
        name[n] = '\0';
    }
}

const char *kvshard_fit__refusal_name(const kvshard__refused *r)
{
    return r->name[0] ? r->name : kvshard_status_name(r->code);
}

/* Why no row fits: every admitted layout leaves some stage no budget (the
 * closest named), or the state of max_seqs sequences leaves no block. */
static int none_fits(const kvshard_fit *f, const search *s, bool all_short, uint32_t ct,
                     uint32_t cp, uint32_t cd, int64_t closest, kvshard_diag__ctx *diag)
{
    const kvshard__device *d = &s->device;
    const char *engine = s->base.profile->name;
    if (s->engine && all_short) {
        diag->option = "device_memory";
        return kvshard_diag__fail(diag, kvshard_device__about_fit, KVSHARD_EDOESNOTFIT,
                                  "does_not_fit: no layout of %u GPUs leaves the %s profile a "
                                  "budget: the weights and activation_reserve %llu bytes take "
                                  "the engine's share of device_memory %llu",
                                  f->gpus, engine, (unsigned long long)d->reserve,
                                  (unsigned long long)d->device_memory);
    }
    if (s->engine) {
        diag->option = "context_length";
        return kvshard_diag__fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                                  "no layout of %u GPUs serves one sequence of %u tokens under "
                                  "the %s profile; give a shorter context_length",
                                  f->gpus, s->base.options.context_length, engine);
    }
    char u[24];
    kvshard_device__ppb_text(u, sizeof u, d->utilization_ppb);
    if (all_short) {
        diag->option = "device_memory";
        return kvshard_diag__fail(diag, kvshard_device__about_fit, KVSHARD_EDOESNOTFIT,
                                  "does_not_fit: no layout of %u GPUs leaves a budget: "
                                  "device_memory %llu x memory_utilization %s = %llu usable "
                                  "bytes, less activation_reserve %llu; the closest, T = %u, P "
                                  "= %u, D = %u, leaves its poorest stage %lld bytes",
                                  f->gpus, (unsigned long long)d->device_memory, u,
                                  (unsigned long long)d->usable, (unsigned long long)d->reserve, ct,
                                  cp, cd, (long long)closest);
    }
    diag->option = "max_seqs";
    return kvshard_diag__fail(diag, kvshard_profile__about_budget, KVSHARD_ENOBLOCK,
                              "no memory for one block in any layout of %u GPUs: the state of "
                              "max_seqs %u sequences leaves no block; give a context_length "
                              "(fit then sizes max_seqs to it) or a smaller max_seqs",
                              f->gpus, s->base.options.max_seqs);
}

/* The layouts in enumeration order: T, then P, then S, then the rule. Only
 * the (T, P) the limits and pins admit are walked: sizes are taken from the
 * divisors of N, and the work they would cost is counted and capped
 * (KVSHARD__FIT_MAX_WORK) before anything is planned. */
static int enumerate(kvshard_fit *f, search *s, const kvshard_fit_options *fo,
                     kvshard_diag__ctx *diag)
{
    uint32_t N = f->gpus, L = s->model->info.num_layers;
    bool context = s->base.options.context_length > 0;
    uint32_t divs[2048];
    uint32_t nd = divisors_of(divs, N);
    size_t rows = 0, partition_entries = 0, triples = 0;
    uint64_t work = 0;
    f->limited_layouts = 0;
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t T = divs[i];
        for (uint32_t j = 0; j < nd && divs[j] <= N / T; j++) {
            uint32_t P = divs[j];
            if ((N / T) % P != 0)
                continue;
            if (!within_limits(f, T, P)) {
                f->limited_layouts++;
                continue;
            }
            uint32_t D = N / (T * P);
            if ((fo->pp_size && P != fo->pp_size) || (fo->dp_size && D != fo->dp_size))
                continue;
            triples++;
            work += (uint64_t)L + P; /* the admission, which is the unsplit row's plan */
            for (uint32_t k = 0; k <= i; k++) {
                uint32_t S = divs[k];
                if (T % S != 0 || (S > 1 && fo->unsplit) || (s->one_layout && S != s->split))
                    continue;
                uint32_t n = S == 1 ? 1 : 3;
                rows += n;
                partition_entries += (size_t)n * P;
                if (S > 1 || context)
                    work += n * row_work(&s->model->info, T, P, S, context);
            }
        }
    }
    if (triples == 0) {
        char pins[96] = "";
        if (fo->pp_size || fo->dp_size)
            snprintf(pins, sizeof pins, " and the pins pp_size %u, dp_size %u", fo->pp_size,
                     fo->dp_size);
        diag->option = fo->pp_size ? "pp_size" : fo->dp_size ? "dp_size" : NULL;
        return kvshard_error__fail(diag->err, KVSHARD_EFITLIMITS, "", kvshard_error__no_mark,
                             "fit_limits: no layout of %u GPUs within gpus_per_node %u, "
                             "max_tp_size %u and max_pp_size %u%s",
                             N, f->gpus_per_node, f->max_tp_size, f->max_pp_size, pins);
    }
    if (work > KVSHARD__FIT_MAX_WORK)
        return kvshard_error__fail(diag->err, KVSHARD_EFITLIMITS, "", kvshard_error__no_mark,
                             "fit_limits: %zu layouts of %u GPUs (%zu rows of a %u-layer model "
                             "within max_tp_size %u and max_pp_size %u) would cost %llu layer "
                             "and split-rank figures, past the %llu of KVSHARD__FIT_MAX_WORK; "
                             "give a smaller max_tp_size or max_pp_size, or pin pp_size or "
                             "dp_size",
                             triples, N, rows, L, f->max_tp_size, f->max_pp_size,
                             (unsigned long long)work, (unsigned long long)KVSHARD__FIT_MAX_WORK);
    f->rows = kvshard_alloc__calloc(&f->alloc, rows ? rows : 1, sizeof *f->rows);
    f->partitions = kvshard_alloc__calloc(&f->alloc, partition_entries ? partition_entries : 1,
                                    sizeof *f->partitions);
    f->refused = kvshard_alloc__calloc(&f->alloc, triples, sizeof *f->refused);
    if (!f->rows || !f->partitions || !f->refused)
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    int first_refusal = KVSHARD_OK;
    kvshard_error first_err;
    kvshard_error__reset(&first_err);
    const char *const *first_among = NULL;
    bool all_short = true, any_admitted = false;
    int64_t closest = INT64_MIN;
    uint32_t ct = 0, cp = 0, cd = 0, order = 0;
    size_t used = 0;
    for (uint32_t i = 0; i < nd; i++) {
        uint32_t T = divs[i];
        for (uint32_t j = 0; j < nd && divs[j] <= N / T; j++) {
            uint32_t P = divs[j];
            uint32_t D = N / (T * P);
            if ((N / T) % P != 0 || !within_limits(f, T, P) || (fo->pp_size && P != fo->pp_size) ||
                (fo->dp_size && D != fo->dp_size))
                continue;
            /* Admitted when the unsplit plan fails for memory at most. */
            kvshard_plan *p = NULL;
            kvshard_error e;
            kvshard_diag__ctx layout_diag = kvshard_diag__on(&e);
            /* An engine's own request limit is what its row works out:
             * admitted at one sequence. */
            int rc = plan_layout(&p, s, T, P, D, 1, KVSHARD_OWNERSHIP_DEFAULT,
                                 s->engine ? engine_first_seqs(s) : s->base.options.max_seqs,
                                 &layout_diag);
            if (rc == KVSHARD_ENOMEM) { /* the host's memory, not the layout's */
                if (diag->err)
                    *diag->err = e;
                return rc;
            }
            if (rc && !memory_failure(rc)) {
                kvshard__refused *r = &f->refused[f->refused_count++];
                *r = (kvshard__refused){T, P, D, rc, ""};
                if (s->engine)
                    refusal_name(r->name, sizeof r->name, e.message);
                if (!first_refusal) {
                    first_refusal = rc;
                    first_err = e;
                    first_among = layout_diag.among;
                }
                continue;
            }
            any_admitted = true;
            int admission_rc = rc;
            /* How close its poorest stage comes, for the error if none fits. */
            uint32_t counts[256];
            int64_t left = INT64_MAX;
            kvshard_error ignore;
            kvshard_error__reset(&ignore);
            if (s->engine) {
                /* The engine's budget is its own: none_fits names no
                 * device share. */
                all_short = all_short && admission_rc == KVSHARD_EDOESNOTFIT;
            } else if (P <= 256 && kvshard_partition__by_rule(counts, L, P,
                                                       s->base.options.pp_partition_rule ==
                                                               KVSHARD_PP_RULE_EXPLICIT
                                                           ? s->base.profile->defaults.pp_rule
                                                           : s->base.options.pp_partition_rule,
                                                       &ignore) == KVSHARD_OK) {
                uint64_t w[256], b[256];
                kvshard__device_layout layout = {T, D, 1, P, counts, L};
                kvshard_diag__ctx why = kvshard_diag__on(&ignore);
                if (kvshard_device__stages(w, b, &s->device, &s->base, &layout, &left, &why) ==
                    KVSHARD_OK)
                    all_short = false;
            } else {
                all_short = false;
            }
            if (left > closest) {
                closest = left;
                ct = T, cp = P, cd = D;
            }
            int failed = KVSHARD_OK;
            for (uint32_t k = 0; k <= i && failed == KVSHARD_OK; k++) {
                uint32_t S = divs[k];
                if (T % S != 0 || (S > 1 && fo->unsplit) || (s->one_layout && S != s->split))
                    continue;
                for (uint32_t r = 0; r < (S == 1 ? 1u : 3u); r++) {
                    if (S > 1 && s->engine &&
                        ownership_rules[r] != (uint32_t)s->base.profile->defaults.ownership)
                        continue; /* an engine owns split layers by its own rule */
                    kvshard_fit_row *row = &f->rows[f->count];
                    memset(row, 0, sizeof *row); /* padding too: rows compare by bytes */
                    row->size = sizeof *row;
                    row->comm.size = sizeof row->comm;
                    row->rank = ++order; /* enumeration order until ranked */
                    row->tp_size = T;
                    row->pp_size = P;
                    row->dp_size = D;
                    row->layerwise_split_size = S;
                    row->ownership = S == 1 ? KVSHARD_OWNERSHIP_DEFAULT
                                            : (kvshard_ownership)ownership_rules[r];
                    row->pp_partition = f->partitions + used;
                    used += P;
                    bool dropped;
                    if ((failed = fill_row(row, &dropped, s, (uint32_t *)row->pp_partition, p,
                                           admission_rc, diag)) != 0)
                        break;
                    if (dropped) {
                        used -= P;
                        order--;
                        continue;
                    }
                    f->fitting += row->fits;
                    f->count++;
                }
            }
            kvshard_plan_free(p);
            if (failed)
                return failed;
        }
    }
    if (!any_admitted) {
        if (diag->err)
            *diag->err = first_err;
        diag->among = first_among;
        return first_refusal;
    }
    if (f->fitting == 0 && !s->one_layout)
        return none_fits(f, s, all_short, ct, cp, cd, closest, diag);
    price_against_unsplit(f);
    int rc = settle_rank(f, s, fo->rank_by, diag);
    if (rc)
        return rc;
    qsort(f->rows, f->count, sizeof *f->rows,
          f->rank_by == KVSHARD_RANK_THROUGHPUT ? compare_throughput : compare_rows);
    for (size_t i = 0; i < f->count; i++)
        f->rows[i].rank = (uint32_t)(i + 1);
    return KVSHARD_OK;
}

/* The engine flags given to fit that its launch line repeats, in the
 * profile's order and the engine's spelling. */
static void repeated_flags(kvshard_fit *f, const kvshard_settings *given)
{
    const kvshard_profile__fitting *fitting = &f->profile->fitting;
    size_t used = 0;
    f->engine_repeated[0] = '\0';
    for (const char *const *name = fitting->repeated; name && *name; name++) {
        char value[256], flag[96];
        bool set = false;
        if (kvshard_settings_get(value, sizeof value, &set, given, *name) != KVSHARD_OK || !set)
            continue;
        snprintf(flag, sizeof flag, "%s", *name);
        for (char *c = flag; *c && !fitting->underscores; c++)
            *c = *c == '_' ? '-' : *c;
        kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
        bool boolean = kvshard_setting_find(&info, *name) == KVSHARD_OK &&
                       info.type == KVSHARD_SETTING_BOOL;
        char *out = f->engine_repeated + used;
        size_t left = sizeof f->engine_repeated - used;
        const char *sep = used ? " " : "";
        int n = !boolean                     ? snprintf(out, left, "%s--%s=%s", sep, flag, value)
                : strcmp(value, "true") == 0 ? snprintf(out, left, "%s--%s", sep, flag)
                : fitting->false_as_no       ? snprintf(out, left, "%s--no-%s", sep, flag)
                                             : snprintf(out, left, "%s--%s=false", sep, flag);
        if (n > 0 && (size_t)n < left)
            used += (size_t)n;
    }
}

/* Row 1's state slots, which its launch line tells the engine: its plans
 * again (the rows keep no slots of their own). */
static int recommended_slots(kvshard_fit *f, const search *s, kvshard_diag__ctx *diag)
{
    kvshard_plan *p = NULL;
    uint64_t seqs;
    int rc = engine_row_plans(&p, &seqs, &f->engine_state_slots, s, &f->rows[0], diag);
    kvshard_plan_free(p);
    return rc;
}

/* What an engine fit writes for every row into `*given` (the caller's
 * options, its settings a copy the search owns): the length, context_length
 * else the engine's own length input else the config's
 * max_position_embeddings (also into that input where the engine takes it
 * by one), and the fraction the profile assumes when none is given. */
static int engine_inputs(search *s, kvshard_options *given, const kvshard_model *model,
                         const kvshard_allocator *allocator, kvshard_diag__ctx *diag)
{
    const kvshard__profile *profile = s->base.profile;
    const char *input = profile->fitting.length_input;
    uint32_t L = given->context_length;
    char text[32];
    bool set = false;
    if (!L && input && kvshard_settings_get(text, sizeof text, &set, given->settings, input) ==
                           KVSHARD_OK && set)
        L = (uint32_t)strtoul(text, NULL, 10);
    if (!L)
        L = model->info.max_position_embeddings;
    if (!L) {
        diag->option = "context_length";
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EMISSING,
                                  "%s profile: engine_input_missing: the length of a row is "
                                  "context_length, the engine's own, else the config's "
                                  "max_position_embeddings, which it does not give: give "
                                  "--context_length",
                                  profile->name);
    }
    given->context_length = L;
    kvshard_allocator alloc = kvshard_alloc__allocator_or_default(allocator);
    s->settings = kvshard_settings__copy(given->settings, &alloc);
    if (!s->settings)
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    given->settings = s->settings;
    snprintf(text, sizeof text, "%u", L);
    int rc = input ? kvshard_settings_set(s->settings, input, text, "kvshard fit", diag->err)
                   : KVSHARD_OK;
    const char *fraction = profile->device.utilization_input;
    set = given->memory_utilization > 0;
    if (rc == KVSHARD_OK && !set && profile->fitting.assumed_fraction > 0 &&
        kvshard_settings_get(text, sizeof text, &set, s->settings, fraction) == KVSHARD_OK &&
        !set) {
        kvshard_format__shortest_text(text, sizeof text, profile->fitting.assumed_fraction);
        rc = kvshard_settings_set(s->settings, fraction, text, "kvshard fit", diag->err);
    }
    return rc;
}

static int engine_lines(kvshard_fit *f, const search *s, const kvshard_allocator *allocator);

static int fit_create(kvshard_fit **out, const kvshard_model *model, const kvshard_options *options,
                      const kvshard_fit_options *fo, const kvshard_allocator *allocator,
                      const kvshard_fit_row *one_layout, const kvshard__comm_inputs *comm,
                      kvshard_diag__ctx *diag)
{
    search s;
    memset(&s, 0, sizeof s);
    s.comm = comm;
    s.one_layout = one_layout != NULL;
    s.split = one_layout ? one_layout->layerwise_split_size : 0;
    /* A fit needs its GPUs and the device: no NULL stands for defaults. */
    diag->option = NULL;
    int rc = kvshard_call__begin(diag->err, out && model && options && fo,
                                 "out, model, options and fit_options");
    if (rc == KVSHARD_OK)
        rc = kvshard_validate__begin_planning(&s.base, true, options, allocator, diag);
    if (rc == KVSHARD_OK && (rc = kvshard_call__size(diag->err, "kvshard_fit_options", fo->size,
                                                     sizeof *fo, "KVSHARD_FIT_OPTIONS_INIT")) != 0)
        return rc;
    /* gpus_per_node keeps the range and words of its deployment key. */
    kvshard_value gpus_per_node = {fo ? fo->gpus_per_node : 0, 0.0, NULL, 0};
    if (rc == KVSHARD_OK &&
        (rc = kvshard_value__check(kvshard_options__option_def(KVSHARD__OPT_GPUS_PER_NODE),
                                   gpus_per_node, diag->err)) != 0) {
        diag->option = "gpus_per_node";
        return rc;
    }
    /* Each fit row decodes its own sequences a replica, so a batch given
     * would be silently ignored: it is refused by name instead. */
    if (rc == KVSHARD_OK && !one_layout && comm && comm->batch) {
        diag->option = "comm_batch";
        return kvshard_error__fail(diag->err, KVSHARD_ERANGE, "", kvshard_error__no_mark,
                                   "comm_batch: %u is not a fit input: each fit row decodes its "
                                   "own sequences a replica (give the batch to plan or compare)",
                                   comm->batch);
    }
    /* Before the profile settles anything: a profile that does not say how
     * its engine is fitted is refused, whatever its inputs. */
    s.engine = rc == KVSHARD_OK && !s.base.profile->device.utilization_ppb;
    if (s.engine && !s.base.profile->fitting.utilization) {
        diag->option = "engine";
        return kvshard_diag__fail(diag, kvshard_profile__about_engine, KVSHARD_EPROFILE,
                                  "%s profile: fit_profile: kvshard fit does not rank layouts by "
                                  "this engine's figures",
                                  s.base.profile->name);
    }
    kvshard_options init = KVSHARD_OPTIONS_INIT;
    memcpy(&s.given, options ? options : &init, sizeof s.given);
    /* Under an engine, planned again with what fit writes for every row. */
    if (rc == KVSHARD_OK && s.engine &&
        (rc = engine_inputs(&s, &s.given, model, allocator, diag)) == KVSHARD_OK)
        rc = kvshard_validate__begin_planning(&s.base, true, &s.given, allocator, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_device__map(&s.base, diag);
    if (rc == KVSHARD_OK)
        rc = kvshard_validate__planning_settle(&s.base, model, diag);
    if (rc) {
        kvshard_settings_free(s.settings);
        return rc;
    }
    s.model = model;
    s.alloc = kvshard_alloc__allocator_or_default(allocator);
    /* fit works out the budgets: memory_per_rank is not one. */
    s.given.memory_per_rank = 0;
    s.base.options.memory_per_rank = 0;
    kvshard_fit *f = kvshard_alloc__calloc(&s.alloc, 1, sizeof *f);
    if (!f) {
        kvshard_settings_free(s.settings);
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    }
    f->alloc = s.alloc;
    s.row_refusal = one_layout ? f->row_refusal : NULL;
    size_t source_len = strlen(model->source) + 1;
    f->model_source = kvshard_alloc__bytes(&s.alloc, source_len, 1);
    if (!f->model_source) {
        kvshard_settings_free(s.settings);
        kvshard_alloc__free(&s.alloc, f);
        return kvshard_error__fail(diag->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    }
    memcpy(f->model_source, model->source, source_len);
    f->options = s.base.options;
    f->options.settings = NULL;
    f->comm_given = comm != NULL;
    s.settled = &f->comm_settled;
    f->profile = s.base.profile;
    if (s.engine) {
        f->engine = true;
        f->engine_utilization = f->profile->fitting.utilization(s.base.inputs, &s.base.state);
        const char *version = kvshard_validate__planning_version(f->profile, s.base.inputs);
        snprintf(f->engine_version, sizeof f->engine_version, "%s", version ? version : "");
    }
    rc = start(f, &s, fo, diag);
    if (rc == KVSHARD_OK) {
        rc = kvshard_device__open(&s.device, &s.base, model, &s.alloc, diag);
        if (rc == KVSHARD_EWEIGHTS)
            name_fit_weights(diag->err);
    }
    if (rc == KVSHARD_OK) {
        kvshard_device__figures_of(&f->device, &s.device);
        if (f->device.summary.first_unknown)
            f->device.summary.first_unknown = f->device.first_unknown; /* the fit's copy */
        f->kv_cache_dtype = kvshard_memory__kv_cache_dtype(&model->info, &f->options);
        f->drafts = kvshard__counted_drafts(&model->info, &f->options, f->profile) > 0;
        rc = enumerate(f, &s, fo, diag);
    }
    if (rc == KVSHARD_OK && s.engine && f->fitting && f->profile->fitting.state_slots_input)
        rc = recommended_slots(f, &s, diag);
    if (rc == KVSHARD_OK && !s.engine)
        rc = engine_lines(f, &s, allocator);
    if (rc == KVSHARD_OK && s.engine)
        repeated_flags(f, options->settings);
    kvshard_device__close(&s.device);
    kvshard_settings_free(s.settings);
    if (rc) {
        kvshard_fit_free(f);
        return rc;
    }
    *out = f;
    return KVSHARD_OK;
}

/* One engine's line for row 1 (unsplit): that engine's fit of row 1's
 * (T, P, D) alone, under its profile at its default version with this fit's
 * inputs, so every figure on the line is one the engine's profile predicts.
 * A refusal or a row that does not fit is the line's reason. */
static int engine_line(kvshard__engine_line *line, const kvshard_fit *f, const search *s,
                       const kvshard_allocator *allocator)
{
    const kvshard_fit_row *row = &f->rows[0];
    kvshard_options o;
    memcpy(&o, &s->given, sizeof o);
    o.engine = line->profile->engine;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = f->gpus;
    fo.gpus_per_node = f->gpus_per_node;
    fo.max_tp_size = row->tp_size;
    fo.max_pp_size = row->pp_size;
    fo.pp_size = row->pp_size;
    fo.dp_size = row->dp_size;
    kvshard_fit *one = NULL;
    kvshard_error e;
    kvshard_diag__ctx diag = kvshard_diag__on(&e);
    int rc = fit_create(&one, s->model, &o, &fo, allocator, row, NULL, &diag);
    if (rc == KVSHARD_ENOMEM)
        return rc;
    if (rc) {
        refusal_name(line->reason, sizeof line->reason, e.message);
        if (!line->reason[0])
            snprintf(line->reason, sizeof line->reason, "%s", kvshard_status_name(rc));
        return KVSHARD_OK;
    }
    const kvshard_fit_row *r = &one->rows[0];
    const char *name = line->profile->name;
    if (one->count == 0) { /* the profile refused the split: no row */
        snprintf(line->reason, sizeof line->reason, "%s", "engine_split_unsupported");
        kvshard_fit_free(one);
        return KVSHARD_OK;
    }
    int n = KVSHARD_OK, m = KVSHARD_OK;
    if (r->fits) {
        n = kvshard_fit_flags(line->flags, sizeof line->flags, one, name, false);
        m = kvshard_fit_flags(line->env, sizeof line->env, one, name, true);
        /* A line cut short would start another engine than the fit's. */
        if (n >= (int)sizeof line->flags || m >= (int)sizeof line->env)
            n = KVSHARD_ELIMIT;
    }
    if (!r->fits)
        snprintf(line->reason, sizeof line->reason, "%s",
                 r->no_sequence       ? "no_sequence"
                 : one->row_refusal[0] ? one->row_refusal
                                       : kvshard_status_name(r->reason));
    else if (n < 0 || m < 0)
        snprintf(line->reason, sizeof line->reason, "%s", kvshard_status_name(n < 0 ? n : m));
    kvshard_fit_free(one);
    return KVSHARD_OK;
}

/* Without --engine: each engine that writes a launch line gets row 1's,
 * or the reason it has none. Of the engines only one that places split
 * layers by its own rule splits, and only by that rule. */
static int engine_lines(kvshard_fit *f, const search *s, const kvshard_allocator *allocator)
{
    const kvshard__profile *own = kvshard_profiles__own();
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
        if (*q == own || !(*q)->dialect.recommend ||
            f->engine_line_count == KVSHARD__FIT_ENGINE_LINES)
            continue;
        kvshard__engine_line *line = &f->engine_lines[f->engine_line_count++];
        line->profile = *q;
        if (f->fitting == 0)
            continue;
        const kvshard_fit_row *row = &f->rows[0];
        const kvshard_profile__defaults *d = &(*q)->defaults;
        if (row->layerwise_split_size > 1 &&
            (!d->runs_its_ownership_only || row->ownership != d->ownership)) {
            snprintf(line->reason, sizeof line->reason, "%s", "engine_split_unsupported");
            continue;
        }
        int rc = engine_line(line, f, s, allocator);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

const char *kvshard_fit__engine_reason(const kvshard_fit *fit, const char *engine)
{
    for (size_t i = 0; fit && engine && i < fit->engine_line_count; i++) {
        const kvshard__engine_line *line = &fit->engine_lines[i];
        if (strcmp(line->profile->name, engine) == 0)
            return line->reason[0] ? line->reason : NULL;
    }
    return NULL;
}

int kvshard_fit_create(kvshard_fit **out, const kvshard_model *model,
                       const kvshard_options *options, const kvshard_fit_options *fit_options,
                       const kvshard_allocator *allocator, kvshard_error *err)
{
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    return fit_create(out, model, options, fit_options, allocator, NULL, NULL, &diag);
}

int kvshard_fit__create(kvshard_fit **out, const kvshard_model *model,
                        const kvshard_options *options, const kvshard_fit_options *fit_options,
                        const kvshard_allocator *allocator, const kvshard__comm_inputs *comm,
                        kvshard_diag__ctx *diag)
{
    return fit_create(out, model, options, fit_options, allocator, NULL, comm, diag);
}

void kvshard_fit_free(kvshard_fit *fit)
{
    if (!fit)
        return;
    kvshard_allocator a = fit->alloc;
    kvshard_alloc__free(&a, fit->rows);
    kvshard_alloc__free(&a, fit->partitions);
    kvshard_alloc__free(&a, fit->refused);
    kvshard_alloc__free(&a, fit->model_source);
    kvshard_alloc__free(&a, fit);
}

size_t kvshard_fit_row_count(const kvshard_fit *fit)
{
    return fit ? fit->count : 0;
}

const kvshard_fit_row *kvshard_fit_row_at(const kvshard_fit *fit, size_t index)
{
    return fit && index < fit->count ? &fit->rows[index] : NULL;
}

size_t kvshard_fit_not_admitted_count(const kvshard_fit *fit)
{
    return fit ? fit->refused_count : 0;
}

int kvshard_fit_not_admitted(uint32_t *tp_size, uint32_t *pp_size, uint32_t *dp_size, int *code,
                             const kvshard_fit *fit, size_t index)
{
    if (!fit || index >= fit->refused_count)
        return KVSHARD_EINVAL;
    const kvshard__refused *r = &fit->refused[index];
    if (tp_size)
        *tp_size = r->tp;
    if (pp_size)
        *pp_size = r->pp;
    if (dp_size)
        *dp_size = r->dp;
    if (code)
        *code = r->code;
    return KVSHARD_OK;
}

kvshard_rank_by kvshard_fit_rank_by(const kvshard_fit *fit)
{
    return fit ? fit->rank_by : KVSHARD_RANK_CAPACITY;
}

uint32_t kvshard_fit_limited_layouts(const kvshard_fit *fit)
{
    return fit ? fit->limited_layouts : 0;
}

kvshard_profile__layout kvshard_fit__layout(const kvshard_fit *fit, const kvshard_fit_row *row,
                                            char *utilization, size_t cap)
{
    if (fit->engine)
        kvshard_format__shortest_text(utilization, cap, fit->engine_utilization);
    else
        kvshard_device__ppb_flag_text(utilization, cap, fit->device.utilization_ppb);
    kvshard_profile__layout l = {
        .world_size = fit->gpus,
        .tp = row->tp_size,
        .pp = row->pp_size,
        .dp = row->dp_size,
        .split = row->layerwise_split_size,
        .ownership = kvshard_ownership_name(row->ownership),
        .pp_partition = row->pp_partition,
        .expert_parallel = fit->options.expert_parallel,
        .utilization = utilization,
        .kv_cache_dtype = fit->kv_cache_dtype,
        .drafts = fit->drafts,
        .context_length = row->has_seqs ? fit->options.context_length : 0,
        .seqs_per_replica = row->seqs_per_replica,
        .engine_fraction = fit->engine ? utilization : NULL,
        .state_slots = fit->engine_state_slots,
    };
    return l;
}

int kvshard_fit_flags(char *buf, size_t cap, const kvshard_fit *fit, const char *engine, bool env)
{
    if (!fit || !engine || (!buf && cap) || fit->fitting == 0)
        return KVSHARD_EINVAL;
    const kvshard__profile *p = NULL;
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
        if (strcmp((*q)->name, engine) == 0 && (*q)->dialect.recommend)
            p = *q;
    }
    if (!p)
        return KVSHARD_EUNKNOWNKEY;
    char u[24];
    kvshard_profile__layout l = kvshard_fit__layout(fit, &fit->rows[0], u, sizeof u);
    bool own = p == kvshard_profiles__own();
    if (!fit->engine && own)
        return p->dialect.recommend(buf, cap, &l, env);
    if (!fit->engine) { /* the engine's own fit of row 1's layout */
        for (size_t i = 0; i < fit->engine_line_count; i++) {
            const kvshard__engine_line *line = &fit->engine_lines[i];
            if (line->profile == p)
                return line->reason[0] ? KVSHARD_EUNSUPPORTED
                                       : snprintf(buf, cap, "%s", env ? line->env : line->flags);
        }
        return KVSHARD_EUNSUPPORTED;
    }
    /* Under an engine fit only that engine's line has figures it predicts;
     * kvshard's is the same line planned under that profile. */
    if (p != fit->profile && !own)
        return KVSHARD_EUNSUPPORTED;
    if (own && env)
        return KVSHARD_EUNSUPPORTED;
    char list[4096];
    int n = fit->profile->dialect.recommend(list, sizeof list, &l, env);
    if (n < 0)
        return n;
    if (!env && fit->engine_repeated[0]) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", len ? " " : "", fit->engine_repeated);
        n = 1;
    }
    if (!own)
        return snprintf(buf, cap, "%s", list);
    return snprintf(buf, cap, "--engine=%s --engine_version=%s%s%s", fit->profile->name,
                    fit->engine_version, n ? " " : "", list);
}
