/* The deployment object: a model, its options, and where each option was
 * set, so that planning errors can point there. */
#ifndef KVSHARD_DEPLOY_DEPLOY_H
#define KVSHARD_DEPLOY_DEPLOY_H

#include "deploy/options.h"
#include "model/model.h"

/* Where an option got its value: the deployment file at a mark, a flag file
 * at a mark, or an override's origin. */
typedef struct kvshard__option_site {
    bool set;
    bool override; /* set by a flag or an API call, after the file */
    kvshard__mark mark;
    char source[KVSHARD_ERROR_SOURCE_MAX];
} kvshard__option_site;

struct kvshard_deployment {
    kvshard_allocator alloc;
    kvshard_model *model;
    kvshard_options options;
    char *source;
    kvshard__option_site sites[KVSHARD__OPT_COUNT];
};

/* Parse `value` for `id` into the deployment's options and record the site. */
int kvshard__deployment_assign(kvshard_options *options, kvshard__option_site *sites,
                               kvshard__option_id id, const char *value, size_t len,
                               kvshard__value_style style, const char *source, kvshard__mark mark,
                               bool override, kvshard_error *err);

#endif /* KVSHARD_DEPLOY_DEPLOY_H */
