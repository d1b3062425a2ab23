/* Planning a deployment: the plan or comparison of its model under its
 * options, with an error about an option pointed at the line that set it. */
#include "deploy/deploy.h"
#include "plan/plan.h"

/* Options a planning error can be about, most specific first. */
static const kvshard__option_id *blame_list(int code)
{
    static const kvshard__option_id world[] = {KVSHARD__OPT_WORLD_SIZE, KVSHARD__OPT_DP_SIZE,
                                               KVSHARD__OPT_CP_SIZE, KVSHARD__OPT_COUNT};
    static const kvshard__option_id split[] = {KVSHARD__OPT_SPLIT_SIZE, KVSHARD__OPT_WORLD_SIZE,
                                               KVSHARD__OPT_COUNT};
    static const kvshard__option_id split_cp[] = {KVSHARD__OPT_CP_SIZE, KVSHARD__OPT_ENABLE_SPLIT,
                                                  KVSHARD__OPT_COUNT};
    static const kvshard__option_id no_block[] = {KVSHARD__OPT_MEMORY_PER_RANK,
                                                  KVSHARD__OPT_DEVICE_FREE, KVSHARD__OPT_MAX_SEQS,
                                                  KVSHARD__OPT_STATE_SLOTS, KVSHARD__OPT_COUNT};
    static const kvshard__option_id overflow[] = {KVSHARD__OPT_BLOCK_SIZE, KVSHARD__OPT_COUNT};
    static const kvshard__option_id profile[] = {KVSHARD__OPT_ENGINE, KVSHARD__OPT_COUNT};
    static const kvshard__option_id device[] = {KVSHARD__OPT_DEVICE_FREE, KVSHARD__OPT_DEVICE_TOTAL,
                                                KVSHARD__OPT_COUNT};
    static const kvshard__option_id limit[] = {KVSHARD__OPT_WORLD_SIZE, KVSHARD__OPT_SPLIT_SIZE,
                                               KVSHARD__OPT_COUNT};
    switch (code) {
    case KVSHARD_EWORLD: return world;
    case KVSHARD_ESPLIT: return split;
    case KVSHARD_ESPLITCP: return split_cp;
    case KVSHARD_ENOBLOCK: return no_block;
    case KVSHARD_EOVERFLOW: return overflow;
    case KVSHARD_EPROFILE: return profile;
    case KVSHARD_ELIMIT: return limit;
    case KVSHARD_EMISSING: return device;
    default: return NULL;
    }
}

/* Point a planning error about an option at where the option was set: an
 * override first, since it changed what the file said, then the file. Errors
 * that already name a source (the model file) stay where they are. */
static int locate_option_error(const kvshard_deployment *deployment, int rc, int option,
                               kvshard_error *err)
{
    const kvshard__option_id *blame = blame_list(rc);
    if (!err || !blame || err->source[0] != '\0')
        return rc;
    if (option != KVSHARD__OPT_COUNT && deployment->sites[option].set) {
        const kvshard__option_site *site = &deployment->sites[option];
        kvshard__error_locate(err, site->source, site->mark);
        return rc;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (const kvshard__option_id *b = blame; *b != KVSHARD__OPT_COUNT; b++) {
            const kvshard__option_site *site = &deployment->sites[*b];
            if (site->set && (pass == 1 || site->override)) {
                kvshard__error_locate(err, site->source, site->mark);
                return rc;
            }
        }
    }
    kvshard__error_locate(err, deployment->source, kvshard__no_mark);
    return rc;
}

/* Plan or compare a deployment, and point an error about an option at it. */
typedef int (*planning_call)(void *out, const kvshard_model *model, const kvshard_options *options,
                             const kvshard_allocator *allocator, int *blame, kvshard_error *err);

static int plan_deployment(planning_call call, void *out, const kvshard_deployment *deployment,
                           kvshard_error *err)
{
    if (!deployment) {
        kvshard__error_reset(err);
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "deployment must not be NULL");
    }
    int blame;
    int rc = call(out, deployment->model, &deployment->options, &deployment->alloc, &blame, err);
    return locate_option_error(deployment, rc, blame, err);
}

static int plan_call(void *out, const kvshard_model *model, const kvshard_options *options,
                     const kvshard_allocator *allocator, int *blame, kvshard_error *err)
{
    return kvshard__plan_create(out, model, options, allocator, blame, err);
}

static int compare_call(void *out, const kvshard_model *model, const kvshard_options *options,
                        const kvshard_allocator *allocator, int *blame, kvshard_error *err)
{
    return kvshard__comparison_create(out, model, options, allocator, blame, err);
}

int kvshard_deployment_plan(kvshard_plan **out, const kvshard_deployment *deployment,
                            kvshard_error *err)
{
    return plan_deployment(plan_call, out, deployment, err);
}

int kvshard_deployment_compare(kvshard_comparison **out, const kvshard_deployment *deployment,
                               kvshard_error *err)
{
    return plan_deployment(compare_call, out, deployment, err);
}
