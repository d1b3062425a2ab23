/* Comparing and fitting a deployment: the comparison or fit of its model
 * under its options, with an error about an option pointed at the line
 * that set it, as planning one does. */
#include "deploy/deploy.h"
#include "explore/compare.h"
#include "explore/fit.h"
#include "plan/deployment.h"

/* The deployment's sweep_pp key is its compare option. */
int kvshard_deployment_compare(kvshard_comparison **out, const kvshard_deployment *deployment,
                               kvshard_error *err)
{
    return kvshard_deployment_compare_with(out, deployment, NULL, err);
}

int kvshard_deployment_compare_with(kvshard_comparison **out, const kvshard_deployment *deployment,
                                    const kvshard_compare_options *compare_options,
                                    kvshard_error *err)
{
    if (!deployment) {
        kvshard_error__reset(err);
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "deployment must not be NULL");
    }
    kvshard_comparison *c = NULL;
    kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
    if (compare_options && compare_options->size != sizeof co) {
        kvshard_error__reset(err);
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                   "kvshard_compare_options.size is %zu; this library's is %zu: "
                                   "start from KVSHARD_COMPARE_OPTIONS_INIT",
                                   compare_options->size, sizeof co);
    }
    if (compare_options)
        co = *compare_options;
    co.sweep_pp = co.sweep_pp || deployment->explore.sweep_pp;
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    kvshard_options options = kvshard_deploy__deployment_options(deployment);
    kvshard__comm_inputs comm = kvshard_deployment__comm_inputs(deployment);
    int rc = kvshard_compare__comparison_create(
        out ? &c : NULL, deployment->model, &options, &co, &deployment->alloc,
        kvshard_deployment__comm_given(deployment) ? &comm : NULL, &diag);
    rc = kvshard_deployment__locate(deployment, rc, &diag);
    if (rc)
        return rc;
    for (size_t i = 0; deployment->skipped_count && i < c->count; i++) {
        if (!c->rows[i].error)
            c->rows[i].warnings |= 1u << KVSHARD_WARN_FLAGS_IGNORED;
    }
    *out = c;
    return KVSHARD_OK;
}

/* fit of a deployment: the sizes its flags or calls set pin the search;
 * the file's other parallel keys do not apply. */
int kvshard_deployment_fit(kvshard_fit **out, const kvshard_deployment *deployment,
                           const kvshard_fit_options *fit_options, kvshard_error *err)
{
    if (!deployment || !out || !fit_options) {
        kvshard_error__reset(err);
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "out, deployment and fit_options must not be NULL");
    }
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    if (fit_options->size != sizeof fo) {
        kvshard_error__reset(err);
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "kvshard_fit_options.size is %zu; this library's is %zu: start "
                             "from KVSHARD_FIT_OPTIONS_INIT",
                             fit_options->size, sizeof fo);
    }
    fo = *fit_options;
    const kvshard_options *o = &deployment->options;
    const kvshard__option_site *sites = deployment->sites;
    if (!fo.pp_size && sites[KVSHARD__OPT_PP_SIZE].set && sites[KVSHARD__OPT_PP_SIZE].override)
        fo.pp_size = o->pp_size;
    if (!fo.dp_size && sites[KVSHARD__OPT_DP_SIZE].set && sites[KVSHARD__OPT_DP_SIZE].override)
        fo.dp_size = o->dp_size;
    if (sites[KVSHARD__OPT_ENABLE_SPLIT].set && sites[KVSHARD__OPT_ENABLE_SPLIT].override &&
        !o->enable_layerwise_split)
        fo.unsplit = true;
    if (!fo.gpus_per_node)
        fo.gpus_per_node = deployment->explore.gpus_per_node;
    kvshard_diag__ctx diag = kvshard_diag__on(err);
    kvshard_options options = kvshard_deploy__deployment_options(deployment);
    kvshard__comm_inputs comm = kvshard_deployment__comm_inputs(deployment);
    int rc = kvshard_fit__create(out, deployment->model, &options, &fo, &deployment->alloc,
                                 kvshard_deployment__comm_given(deployment) ? &comm : NULL,
                                 &diag);
    return kvshard_deployment__locate(deployment, rc, &diag);
}
