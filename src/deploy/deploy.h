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

/* An argument kvshard_deployment_apply_args() skipped under
 * --ignore_unknown_flags: a flag as written without its value
 * ("--max-model-len"), or a positional argument. */
typedef struct kvshard__skipped {
    char *text;
    bool positional;
    kvshard_engine engine; /* the profile in force when it was skipped */
} kvshard__skipped;

struct kvshard_deployment {
    kvshard_allocator alloc;
    kvshard_model *model;
    kvshard_options options; /* its `settings` is `settings` below */
    kvshard_settings *settings;
    char *source;
    kvshard__option_site sites[KVSHARD__OPT_COUNT];
    /* Every argument skipped so far, each once, in the order first seen:
     * its plans warn flags_ignored naming them. */
    kvshard__skipped *skipped;
    size_t skipped_count;
};

/* What a change to a deployment writes into: copies of its options, sites
 * and settings, so that a batch of changes lands all or nothing. */
typedef struct kvshard__deployment_values {
    kvshard_options *options;
    kvshard__option_site *sites;
    kvshard_settings *settings;
} kvshard__deployment_values;

/* Parse `value` for the option or setting `key` and record where it was set. */
int kvshard__deployment_assign(const kvshard__deployment_values *into, kvshard__deploy_key key,
                               const char *value, size_t len, kvshard__value_style style,
                               const char *source, kvshard__mark mark, bool override,
                               kvshard_error *err);

/* The site of the option or setting `name` when it was set: its source and
 * mark, and whether a flag or call set it. */
bool kvshard__deployment_site(const kvshard_deployment *deployment, const char *name,
                              const char **source, kvshard__mark *mark, bool *override);

#endif /* KVSHARD_DEPLOY_DEPLOY_H */
