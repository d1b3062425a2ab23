/* Planning a deployment: the plan of its model under its options, with an
 * error about an option pointed at the line that set it. */
#include "plan/deployment.h"

#include "deploy/deploy.h"
#include "deploy/flags.h"
#include "plan/plan.h"

/* Options a planning error can be about when the error names none, most
 * specific first. */
static const char *const *blame_list(int code)
{
    static const char *const world[] = {"world_size", "pp_size", "dp_size", "cp_size", NULL};
    static const char *const stages[] = {"pp_size", NULL};
    static const char *const partition[] = {"pp_partition", "pp_partition_rule", "pp_size", NULL};
    static const char *const split[] = {"layerwise_split_size", "world_size", NULL};
    static const char *const split_cp[] = {"cp_size", "enable_layerwise_split", NULL};
    static const char *const no_block[] = {"memory_per_rank", "max_seqs", NULL};
    static const char *const overflow[] = {"block_size", NULL};
    static const char *const profile[] = {"engine", NULL};
    /* An engine profile's missing input: the profile that needs it. */
    static const char *const missing[] = {"engine", NULL};
    static const char *const limit[] = {"world_size", "layerwise_split_size", NULL};
    static const char *const weights[] = {"weights_per_rank", "weights_total", "weights_experts",
                                          "device_memory", NULL};
    static const char *const fit[] = {"device_memory", "memory_utilization",
                                      "activation_reserve", NULL};
    switch (code) {
    case KVSHARD_EWORLD: return world;
    case KVSHARD_ESPLIT: return split;
    case KVSHARD_ESPLITCP: return split_cp;
    case KVSHARD_ENOBLOCK: return no_block;
    case KVSHARD_EOVERFLOW: return overflow;
    case KVSHARD_EPROFILE: return profile;
    case KVSHARD_EMISSING: return missing;
    case KVSHARD_ELIMIT: return limit;
    case KVSHARD_EPPLAYERS: return stages;
    case KVSHARD_EPARTITION:
    case KVSHARD_EPPSOURCE: return partition;
    case KVSHARD_EWEIGHTS: return weights;
    case KVSHARD_EDOESNOTFIT: return fit;
    default: return NULL;
    }
}

/* Point a planning error about an option at where the option was set: the
 * option the error names, else the options its code is about, an override
 * first, since it changed what the file said, then the file. Errors that
 * already name a source (the model file) stay where they are. */
int kvshard_deployment__locate(const kvshard_deployment *deployment, int rc, const char *named,
                               kvshard_error *err)
{
    const char *const *blame = blame_list(rc);
    if (!err || (!blame && !named) || err->source[0] != '\0')
        return rc;
    const char *source;
    kvshard__mark mark;
    bool override;
    if (named && kvshard__deployment_site(deployment, named, &source, &mark, &override)) {
        kvshard__error_locate(err, source, mark);
        return rc;
    }
    for (int pass = 0; blame && pass < 2; pass++) {
        for (const char *const *b = blame; *b; b++) {
            if (kvshard__deployment_site(deployment, *b, &source, &mark, &override) &&
                (pass == 1 || override)) {
                kvshard__error_locate(err, source, mark);
                return rc;
            }
        }
    }
    kvshard__error_locate(err, deployment->source, kvshard__no_mark);
    return rc;
}

int kvshard_deployment__run(kvshard_deployment__call call, void *out,
                            const kvshard_deployment *deployment, kvshard_error *err)
{
    if (!deployment) {
        kvshard__error_reset(err);
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "deployment must not be NULL");
    }
    const char *blame = NULL;
    kvshard_options options = kvshard__deployment_options(deployment);
    int rc = call(out, deployment->model, &options, &deployment->alloc, &blame, err);
    return kvshard_deployment__locate(deployment, rc, blame, err);
}

static int plan_call(void *out, const kvshard_model *model, const kvshard_options *options,
                     const kvshard_allocator *allocator, const char **blame, kvshard_error *err)
{
    return kvshard__plan_create(out, model, options, allocator, blame, err);
}

/* Flags skipped under --ignore_unknown_flags change what the engine runs
 * but not the plan: its last warning, flags_ignored, names them, so that a
 * plan of the wrong deployment does not pass for the right one. */
int kvshard_deployment_plan(kvshard_plan **out, const kvshard_deployment *deployment,
                            kvshard_error *err)
{
    kvshard_plan *p = NULL;
    int rc = kvshard_deployment__run(plan_call, out ? &p : NULL, deployment, err);
    if (rc)
        return rc;
    if (deployment->skipped_count && p->warning_count < KVSHARD__MAX_WARNINGS) {
        kvshard__warning *w = &p->warnings[p->warning_count++];
        w->code = KVSHARD_WARN_FLAGS_IGNORED;
        kvshard_flags__ignored_message(w->message, sizeof w->message, deployment);
    }
    *out = p;
    return KVSHARD_OK;
}
