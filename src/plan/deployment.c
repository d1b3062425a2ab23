/* Planning a deployment: the plan of its model under its options, with an
 * error about an option pointed at the line that set it. */
#include "plan/deployment.h"

#include "deploy/deploy.h"
#include "deploy/flags.h"
#include "plan/plan.h"

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
    int rc = kvshard_plan__create(out ? &p : NULL, deployment->model, &options,
                                  &deployment->alloc, &diag);
    if ((rc = kvshard_deployment__locate(deployment, rc, &diag)) != 0)
        return rc;
    if (deployment->skipped_count && p->warning_count < KVSHARD__MAX_WARNINGS) {
        kvshard__warning *w = &p->warnings[p->warning_count++];
        w->code = KVSHARD_WARN_FLAGS_IGNORED;
        kvshard_flags__ignored_message(w->message, sizeof w->message, deployment);
    }
    *out = p;
    return KVSHARD_OK;
}
