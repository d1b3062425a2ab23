/* Planning a deployment: the plan of its model under its options, with an
 * error about an option pointed at the line that set it. */
#include "plan/deployment.h"

#include "base/format.h"
#include "deploy/deploy.h"
#include "deploy/flags.h"
#include "plan/plan.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Point a planning error at where the option it is about was set: the
 * option the failing check named, else one of the options it may be about,
 * an override first, since it changed what the file said, then the file.
 * Errors that already name a source (the model file) stay where they are. */
int kvshard_deployment__locate(const kvshard_deployment *deployment, int rc,
                               const kvshard_diag__ctx *diag)
{
    kvshard_error *err = diag->err;
    if (!err || (!diag->among && !diag->option) || err->source[0] != '\0')
        return rc;
    const char *source;
    kvshard__mark mark;
    bool override;
    if (diag->option &&
        kvshard_deploy__deployment_site(deployment, diag->option, &source, &mark, &override)) {
        kvshard_error__locate(err, source, mark);
        return rc;
    }
    for (int pass = 0; diag->among && pass < 2; pass++) {
        for (const char *const *o = diag->among; *o; o++) {
            if (kvshard_deploy__deployment_site(deployment, *o, &source, &mark, &override) &&
                (pass == 1 || override)) {
                kvshard_error__locate(err, source, mark);
                return rc;
            }
        }
    }
    kvshard_error__locate(err, deployment->source, kvshard_error__no_mark);
    return rc;
}

static void add_warning(kvshard_plan *p, kvshard_warning_code code, const char *fmt, ...)
    KVSHARD__PRINTF(3, 4);
static void add_warning(kvshard_plan *p, kvshard_warning_code code, const char *fmt, ...)
{
    if (p->warning_count >= KVSHARD__MAX_WARNINGS)
        return;
    kvshard__warning *w = &p->warnings[p->warning_count++];
    w->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->message, sizeof w->message, fmt, ap);
    va_end(ap);
}

/* A warning whose message is `parts` one after the other, cut to the
 * message's size as add_warning cuts it: a priced plan carries one on
 * every plan. */
static void add_joined_warning(kvshard_plan *p, kvshard_warning_code code,
                               const kvshard_format__part *parts, size_t count)
{
    if (p->warning_count >= KVSHARD__MAX_WARNINGS)
        return;
    kvshard__warning *w = &p->warnings[p->warning_count++];
    w->code = code;
    kvshard_format__join(w->message, sizeof w->message, parts, count);
}

bool kvshard_deployment__weights_given(const kvshard_plan *p)
{
    return p->options.weights_total || p->options.weights_per_rank_count ||
           p->device.source == KVSHARD__WEIGHTS_SAFETENSORS;
}

/* The warnings of the comm: inputs that the plan alone decides. */
static void comm_warnings(kvshard_plan *p)
{
    const kvshard__comm_inputs *c = &p->comm;
    const kvshard__profile *prof = p->profile;
    kvshard__comm_mechanism decode = c->decode ? c->decode : prof->comm.decode;
    bool defaulted = (!c->decode && prof->comm.decode) || (!c->prefill && prof->comm.prefill);
    bool dsa = p->model.attention == KVSHARD_ATTENTION_MLA && p->model.has_indexer;
    /* Only the profiles that run the seed engine's split default to its
     * mechanisms without a word from the engine about other models. */
    if (p->split > 1 && defaulted && prof->comm.decode == KVSHARD__COMM_OWNER_ATTENTION && !dsa) {
        /* Both mechanisms are named: the profile's decode, and a prefill
         * that is the profile's or a given one. */
        const kvshard_format__part parts[] = {
            KVSHARD_FORMAT_LITERAL("the split's mechanisms are the "),
            kvshard_format__part_of(prof->name),
            KVSHARD_FORMAT_LITERAL(" profile's (decode "),
            kvshard_options__comm_mechanism_part(decode),
            KVSHARD_FORMAT_LITERAL(", prefill "),
            kvshard_options__comm_mechanism_part(c->prefill ? c->prefill : prof->comm.prefill),
            KVSHARD_FORMAT_LITERAL(
                "), published by the engine for DSA models only and so assumed for this "
                "model: give comm_decode and comm_prefill if it does otherwise")};
        add_joined_warning(p, KVSHARD_WARN_COMM_MECHANISM_ASSUMED, parts,
                           sizeof parts / sizeof *parts);
    }
    if (p->split > 1 && decode == KVSHARD__COMM_FULL_LAYER) {
        /* Each split layer's pool: its blocks times what its owner keeps
         * a token; the first split group's ranks hold every layer once. */
        uint64_t per_token = 0;
        for (uint32_t s = 0; s < p->pp; s++)
            for (uint32_t k = 0; k < p->split; k++)
                per_token += p->ranks[(size_t)s * p->tp + k].kv_bytes_per_token;
        if (p->cap.has_num_blocks)
            add_warning(
                p, KVSHARD_WARN_FULL_LAYER_DECODE,
                "decode full_layer: a decode step moves the whole pool of every split "
                "layer, %llu bytes broadcast a step, however few sequences run",
                (unsigned long long)(per_token * p->options.block_size * p->cap.num_blocks));
        else
            add_warning(p, KVSHARD_WARN_FULL_LAYER_DECODE,
                        "decode full_layer: a decode step moves the whole pool of every split "
                        "layer, however few sequences run");
    }
    if ((c->accelerator || c->hbm_bandwidth) && !kvshard_deployment__weights_given(p))
        add_warning(p, KVSHARD_WARN_COMM_NO_WEIGHTS,
                    "an accelerator is given but no weights: the decode base step and the "
                    "throughput need weights_per_rank, weights_total (with weights_experts) or "
                    "the model's safetensors files");
}

int kvshard_deployment__check_comm(kvshard_plan *p, kvshard_diag__ctx *diag)
{
    const kvshard__comm_inputs *c = &p->comm;
    uint32_t prompt = c->prompt_length ? c->prompt_length : p->options.context_length;
    if (prompt && c->prefix_hit >= prompt) {
        diag->option = "comm_prefix_hit";
        return kvshard_error__fail(diag->err, KVSHARD_ECOMM, "", kvshard_error__no_mark,
                                   "comm_prefix_hit: %u cached tokens of a %u-token prompt "
                                   "leave nothing to prefill; it must be below the prompt "
                                   "length",
                                   c->prefix_hit, prompt);
    }
    /* A custom link or accelerator is its figures: without them nothing
     * can be priced. */
    bool preset_link = c->link != KVSHARD__LINK_NONE && c->link != KVSHARD__LINK_CUSTOM;
    bool implied_link =
        c->link == KVSHARD__LINK_NONE &&
        kvshard_options__accelerator_preset_of(c->accelerator)->link != KVSHARD__LINK_NONE;
    bool custom_link =
        c->link == KVSHARD__LINK_CUSTOM ||
        (!preset_link && !implied_link && (c->link_bandwidth || c->has_link_latency));
    if (custom_link && (!c->link_bandwidth || !c->has_link_latency)) {
        diag->option = c->link_bandwidth     ? "comm_link_bandwidth"
                       : c->has_link_latency ? "comm_link_latency"
                                             : "comm_link";
        return kvshard_error__fail(diag->err, KVSHARD_EMISSING, "", kvshard_error__no_mark,
                                   "comm_input_missing: a custom link needs both "
                                   "comm_link_bandwidth and comm_link_latency (%s is missing)",
                                   c->link_bandwidth ? "comm_link_latency" : "comm_link_bandwidth");
    }
    if (c->accelerator == KVSHARD__ACCEL_CUSTOM && !c->hbm_bandwidth) {
        diag->option = "comm_accelerator";
        return kvshard_error__fail(diag->err, KVSHARD_EMISSING, "", kvshard_error__no_mark,
                                   "comm_input_missing: a custom accelerator needs "
                                   "comm_hbm_bandwidth");
    }
    if (c->decode == KVSHARD__COMM_SELECTED_KV && !p->model.has_indexer) {
        diag->option = "comm_decode";
        return kvshard_error__fail(diag->err, KVSHARD_ECOMM, "", kvshard_error__no_mark,
                                   "comm_mechanism_model: comm_decode selected_kv sends the "
                                   "rows a DSA indexer selects, and this model has no indexer");
    }
    comm_warnings(p);
    return KVSHARD_OK;
}

bool kvshard_deployment__comm_given(const kvshard_deployment *deployment)
{
    bool given = false;
    for (int i = KVSHARD__OPT_COMM_DECODE; i < KVSHARD__OPT_COUNT; i++)
        given |= deployment->sites[i].set;
    return given;
}

kvshard__comm_inputs kvshard_deployment__comm_inputs(const kvshard_deployment *deployment)
{
    kvshard__comm_inputs in = deployment->explore.comm;
    in.has_link_latency = deployment->sites[KVSHARD__OPT_COMM_LINK_LATENCY].set;
    return in;
}

int kvshard_deployment__attach_comm(kvshard_plan *p, const kvshard__comm_inputs *comm,
                                    const kvshard_model *model, kvshard_diag__ctx *diag)
{
    p->comm_given = true;
    p->comm = *comm;
    p->query_heads = model->sites[KVSHARD__SITE_Q_HEADS].value;
    int rc = kvshard_deployment__check_comm(p, diag);
    if (rc)
        return rc;
    p->comm_reference = p->split > 1;
    return KVSHARD_OK;
}

/* The comm: inputs, when some were given. */
static int attach_comm(kvshard_plan *p, const kvshard_deployment *deployment,
                       kvshard_diag__ctx *diag)
{
    if (!kvshard_deployment__comm_given(deployment))
        return KVSHARD_OK;
    kvshard__comm_inputs comm = kvshard_deployment__comm_inputs(deployment);
    return kvshard_deployment__attach_comm(p, &comm, deployment->model, diag);
}

/* Flags skipped under --ignore_unknown_flags change what the engine runs
 * but not the plan: its last warning, flags_ignored, names them, so that a
 * plan of the wrong deployment does not pass for the right one. */
int kvshard_deployment_plan(kvshard_plan **out, const kvshard_deployment *deployment,
                            kvshard_error *err)
{
    if (!deployment) {
        kvshard_error__reset(err);
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "deployment must not be NULL");
    }
    kvshard_plan *p = NULL;
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    kvshard_options options = kvshard_deploy__deployment_options(deployment);
    int rc = kvshard_plan__create(out ? &p : NULL, deployment->model, &options, &deployment->alloc,
                                  &diag);
    if ((rc = kvshard_deployment__locate(deployment, rc, &diag)) != 0)
        return rc;
    if (p && (rc = attach_comm(p, deployment, &diag)) != 0) {
        kvshard_plan_free(p);
        return kvshard_deployment__locate(deployment, rc, &diag);
    }
    if (deployment->skipped_count && p->warning_count < KVSHARD__MAX_WARNINGS) {
        kvshard__warning *w = &p->warnings[p->warning_count++];
        w->code = KVSHARD_WARN_FLAGS_IGNORED;
        kvshard_flags__ignored_message(w->message, sizeof w->message, deployment);
    }
    *out = p;
    return KVSHARD_OK;
}
