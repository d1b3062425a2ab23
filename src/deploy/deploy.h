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
    /* The file or origin, shortened from the front as an error's source
     * is (kvshard_error__shorten): an error pointed here names it as every
     * message about that file does. */
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

/* The entries of the options that are lists: an explicit pp_partition
 * (options.pp_partition_count of them) and weights_per_rank
 * (options.weights_per_rank_count). */
typedef struct kvshard__lists {
    uint32_t pp_counts[KVSHARD_MAX_PP_PARTITION];
    uint64_t weights[KVSHARD_MAX_PP_PARTITION];
} kvshard__lists;

struct kvshard_deployment {
    kvshard_allocator alloc;
    kvshard_model *model;
    kvshard_options options; /* its `settings` is `settings` below */
    kvshard__explore_keys explore;
    kvshard_settings *settings;
    char *source;
    kvshard__option_site sites[KVSHARD__OPT_COUNT];
    /* The entries of the list options; the options' pointers point here
     * only in the options handed out (kvshard_deploy__deployment_options()). */
    kvshard__lists lists;
    /* Every argument skipped so far, each once, in the order first seen:
     * its plans warn flags_ignored naming them. */
    kvshard__skipped *skipped;
    size_t skipped_count;
    /* kvshard_args_options.on_file, which its model's weights reads call. */
    kvshard_file_fn on_file;
    void *on_file_user;
};

/* The deployment's options as a plan takes them: its settings and its
 * pp_partition entries borrowed from it. */
kvshard_options kvshard_deploy__deployment_options(const kvshard_deployment *deployment);

/* What a change to a deployment writes into: copies of its options, sites
 * and settings, so that a batch of changes lands all or nothing. */
typedef struct kvshard__deployment_values {
    kvshard_options *options;
    kvshard__explore_keys *explore;
    kvshard__option_site *sites;
    kvshard_settings *settings;
    kvshard__lists *lists;
} kvshard__deployment_values;

/* Whether option `id` is a list the deployment keeps the entries of. */
bool kvshard_deploy__option_is_list(kvshard__option_id id);

/* A list option given as text ("31,30", "17GiB, 16.5GiB"): at most
 * KVSHARD_MAX_PP_PARTITION entries into the values' list of `id`, and the
 * options' count and pointer. */
int kvshard_deploy__assign_list(const kvshard__deployment_values *into, kvshard__option_id id,
                         const char *text, size_t len, const char *source, kvshard__mark mark,
                         kvshard_error *err);

/* Parse `value` for the option or setting `key` and record where it was set. */
int kvshard_deploy__deployment_assign(const kvshard__deployment_values *into,
                                      kvshard__deploy_key key, const char *value, size_t len,
                                      kvshard__value_style style, const char *source,
                                      kvshard__mark mark, bool override, kvshard_error *err);

/* The site of the option or setting `name` when it was set: its source and
 * mark, and whether a flag or call set it. */
bool kvshard_deploy__deployment_site(const kvshard_deployment *deployment, const char *name,
                              const char **source, kvshard__mark *mark, bool *override);

#endif /* KVSHARD_DEPLOY_DEPLOY_H */
