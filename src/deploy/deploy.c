/* Reading a deployment file or a bare model config. */
#include "base/abi.h"
#include "deploy/options.h"
#include "model/model.h"
#include "text/file.h"

#include <stdio.h>
#include <string.h>

#define ORIGIN_MAX 64

/* Where an option got its value, so planning errors can point there. */
typedef struct option_site {
    bool set;
    kvshard__mark mark;      /* in the deployment file, when origin is "" */
    char origin[ORIGIN_MAX]; /* an override's origin, "" for the file */
} option_site;

struct kvshard_deployment {
    kvshard_allocator alloc;
    kvshard_model *model;
    kvshard_options options;
    char *source;
    option_site sites[KVSHARD__OPT_COUNT];
};

typedef struct loader {
    const kvshard__doc *doc;
    const char *base_dir; /* NULL: relative paths as given */
    kvshard_deployment *dep;
    kvshard_error *err;
} loader;

static int read_section(loader *l, const kvshard__node *section, kvshard__section which)
{
    const char *name = kvshard__section_name(which);
    if (kvshard__node_is_null(section))
        return KVSHARD_OK;
    int rc = kvshard__node_expect_mapping(l->doc, section, name, l->err);
    if (rc)
        return rc;
    for (size_t i = 0; i < section->count; i++) {
        const kvshard__node *k = section->u.items[2 * i];
        const kvshard__node *v = section->u.items[2 * i + 1];
        kvshard__option_id id = kvshard__option_find(k->u.text, k->count);
        if (id == KVSHARD__OPT_COUNT)
            return kvshard__fail(l->err, KVSHARD_EUNKNOWNKEY, l->doc->source, k->mark,
                                 "unknown key \"%s\" in %s", k->u.text, name);
        if (kvshard__option_section(id) != which)
            return kvshard__fail(l->err, KVSHARD_EUNKNOWNKEY, l->doc->source, k->mark,
                                 "unknown key \"%s\" in %s (it belongs in %s)", k->u.text, name,
                                 which == KVSHARD__SECTION_PARALLEL ? "cache" : "parallel");
        if (v->kind != KVSHARD__NODE_SCALAR || kvshard__node_is_null(v)) {
            char desc[64];
            kvshard__node_describe(desc, sizeof desc, v);
            return kvshard__fail(l->err, KVSHARD_ETYPE, l->doc->source, v->mark,
                                 "%s: expected a value, found %s", k->u.text, desc);
        }
        if ((rc = kvshard__option_parse(&l->dep->options, id, v->u.text, v->count, v->style,
                                        l->doc->source, v->mark, l->err)) != 0)
            return rc;
        l->dep->sites[id].set = true;
        l->dep->sites[id].mark = v->mark;
    }
    return KVSHARD_OK;
}

static int load_model_path(loader *l, const kvshard__node *v)
{
    const kvshard_allocator *a = &l->dep->alloc;
    const char *rel;
    size_t rel_len;
    int rc = kvshard__node_string(&rel, &rel_len, l->doc, v, "model", l->err);
    if (rc)
        return rc;
    if (rel_len == 0 || memchr(rel, '\0', rel_len))
        return kvshard__fail(l->err, KVSHARD_ERANGE, l->doc->source, v->mark,
                             "model: expected a file path");
    bool relative = rel[0] != '/' && l->base_dir && l->base_dir[0];
    size_t base_len = relative ? strlen(l->base_dir) : 0;
    char *path = kvshard__alloc(a, base_len + 1 + rel_len + 1, 1);
    if (!path)
        return kvshard__fail(l->err, KVSHARD_ENOMEM, l->doc->source, v->mark, "out of memory");
    if (relative)
        snprintf(path, base_len + rel_len + 2, "%s/%s", l->base_dir, rel);
    else
        memcpy(path, rel, rel_len + 1);

    char *text = NULL;
    size_t len = 0;
    kvshard_error read_err;
    kvshard__error_reset(&read_err);
    rc = kvshard__read_file(&text, &len, a, path, &read_err);
    if (rc) {
        /* Point at the `model:` line: that is what the user has to fix. */
        kvshard__fail(l->err, rc, l->doc->source, v->mark, "model file %s: %s", path,
                      read_err.message);
    } else {
        rc = kvshard__model_load_text(&l->dep->model, text, len, path, a, l->err);
        kvshard__free(a, text);
    }
    kvshard__free(a, path);
    return rc;
}

static int read_deployment(loader *l, const kvshard__node *root)
{
    for (size_t i = 0; i < root->count; i++) {
        const kvshard__node *k = root->u.items[2 * i];
        const kvshard__node *v = root->u.items[2 * i + 1];
        int rc;
        if (kvshard__scalar_is(k, "model")) {
            if (v->kind == KVSHARD__NODE_MAPPING)
                rc = kvshard__model_from_node(&l->dep->model, l->doc, v, &l->dep->alloc, l->err);
            else
                rc = load_model_path(l, v);
        } else if (kvshard__scalar_is(k, "parallel")) {
            rc = read_section(l, v, KVSHARD__SECTION_PARALLEL);
        } else if (kvshard__scalar_is(k, "cache")) {
            rc = read_section(l, v, KVSHARD__SECTION_CACHE);
        } else {
            rc = kvshard__fail(l->err, KVSHARD_EUNKNOWNKEY, l->doc->source, k->mark,
                               "unknown key \"%s\" (a deployment has model, parallel and cache)",
                               k->u.text);
        }
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

static bool is_bare_model(const kvshard__node *root)
{
    if (kvshard__map_get(root, "num_hidden_layers"))
        return true;
    const kvshard__node *tc = kvshard__map_get(root, "text_config");
    return kvshard__map_get(tc, "num_hidden_layers") != NULL;
}

static int load(kvshard_deployment **out, const char *text, size_t len, const char *source,
                const char *base_dir, const kvshard_allocator *a, kvshard_error *err)
{
    kvshard__doc doc;
    int rc = kvshard__doc_parse(&doc, text, len, source, a, err);
    if (rc)
        return rc;
    kvshard_deployment *dep = kvshard__calloc(a, 1, sizeof *dep);
    if (!dep || !(dep->source = kvshard__strdup(a, source))) {
        kvshard__free(a, dep);
        kvshard__doc_free(&doc);
        return kvshard__fail(err, KVSHARD_ENOMEM, source, kvshard__no_mark, "out of memory");
    }
    dep->alloc = *a;
    kvshard_options defaults = KVSHARD_OPTIONS_INIT;
    dep->options = defaults;
    loader l = {&doc, base_dir, dep, err};
    const kvshard__node *root = doc.root;
    if ((rc = kvshard__node_expect_mapping(&doc, root, "deployment", err)) != 0) {
        /* nothing more to read */
    } else if (kvshard__map_get(root, "model")) {
        rc = read_deployment(&l, root);
    } else if (is_bare_model(root)) {
        rc = kvshard__model_from_node(&dep->model, &doc, root, a, err);
    } else {
        rc = kvshard__fail(err, KVSHARD_EMISSING, source, root->mark,
                           "missing key \"model\": this is neither a deployment (it has no model) "
                           "nor a model config (it has no num_hidden_layers)");
    }
    kvshard__doc_free(&doc);
    if (rc) {
        kvshard_deployment_free(dep);
        return rc;
    }
    *out = dep;
    return KVSHARD_OK;
}

/* The directory part of a path, or NULL when it has none. */
static char *dir_of(const kvshard_allocator *a, const char *path, bool *failed)
{
    const char *slash = strrchr(path, '/');
    *failed = false;
    if (!slash)
        return NULL;
    char *dir = kvshard__strndup(a, path, slash == path ? 1 : (size_t)(slash - path));
    *failed = dir == NULL;
    return dir;
}

int kvshard_deployment_load_file(kvshard_deployment **out, const char *path,
                                 const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard__begin_load(&a, out && path, "out and path", options, err);
    if (rc)
        return rc;
    char *text;
    size_t len;
    if ((rc = kvshard__read_file(&text, &len, &a, path, err)) != 0)
        return rc;
    bool failed;
    char *dir = dir_of(&a, path, &failed);
    if (failed)
        rc = kvshard__fail(err, KVSHARD_ENOMEM, path, kvshard__no_mark, "out of memory");
    else
        rc = load(out, text, len, path, dir, &a, err);
    kvshard__free(&a, dir);
    kvshard__free(&a, text);
    return rc;
}

int kvshard_deployment_load_string(kvshard_deployment **out, const char *text, size_t len,
                                   const char *name, const char *base_dir,
                                   const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard__begin_load(&a, out && text, "out and text", options, err);
    if (rc)
        return rc;
    return load(out, text, len, name ? name : "<string>", base_dir, &a, err);
}

void kvshard_deployment_free(kvshard_deployment *deployment)
{
    if (!deployment)
        return;
    kvshard_allocator a = deployment->alloc;
    kvshard_model_free(deployment->model);
    kvshard__free(&a, deployment->source);
    kvshard__free(&a, deployment);
}

const kvshard_model *kvshard_deployment_model(const kvshard_deployment *deployment)
{
    return deployment->model;
}

int kvshard_deployment_options(kvshard_options *out, const kvshard_deployment *deployment)
{
    if (!deployment)
        return KVSHARD_EINVAL;
    return kvshard__copy_out(out, &deployment->options, sizeof *out, sizeof *out) ? KVSHARD_OK
                                                                                  : KVSHARD_EINVAL;
}

int kvshard_deployment_set(kvshard_deployment *deployment, const char *key, const char *value,
                           const char *origin, kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!deployment || !key || !value)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "deployment, key and value must not be NULL");
    const char *from = origin ? origin : "override";
    kvshard__option_id id = kvshard__option_find(key, strlen(key));
    if (id == KVSHARD__OPT_COUNT)
        return kvshard__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard__no_mark,
                             "unknown option \"%s\"", key);
    int rc = kvshard__option_parse(&deployment->options, id, value, strlen(value),
                                   KVSHARD__VALUE_PLAIN, from, kvshard__no_mark, err);
    if (rc)
        return rc;
    option_site *site = &deployment->sites[id];
    site->set = true;
    site->mark = kvshard__no_mark;
    snprintf(site->origin, sizeof site->origin, "%s", from);
    return KVSHARD_OK;
}

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
                                                  KVSHARD__OPT_MAX_SEQS, KVSHARD__OPT_COUNT};
    static const kvshard__option_id overflow[] = {KVSHARD__OPT_BLOCK_SIZE, KVSHARD__OPT_COUNT};
    switch (code) {
    case KVSHARD_EWORLD: return world;
    case KVSHARD_ESPLIT: return split;
    case KVSHARD_ESPLITCP: return split_cp;
    case KVSHARD_ENOBLOCK: return no_block;
    case KVSHARD_EOVERFLOW: return overflow;
    default: return NULL;
    }
}

/* Point a planning error about an option at where the option was set: an
 * override first, since it changed what the file said, then the file. Errors
 * that already name a source (the model file) stay where they are. */
static int locate_option_error(const kvshard_deployment *deployment, int rc, kvshard_error *err)
{
    const kvshard__option_id *blame = blame_list(rc);
    if (!err || !blame || err->source[0] != '\0')
        return rc;
    for (const kvshard__option_id *b = blame; *b != KVSHARD__OPT_COUNT; b++) {
        const option_site *site = &deployment->sites[*b];
        if (site->set && site->origin[0]) {
            kvshard__error_locate(err, site->origin, kvshard__no_mark);
            return rc;
        }
    }
    for (const kvshard__option_id *b = blame; *b != KVSHARD__OPT_COUNT; b++) {
        const option_site *site = &deployment->sites[*b];
        if (site->set) {
            kvshard__error_locate(err, deployment->source, site->mark);
            return rc;
        }
    }
    kvshard__error_locate(err, deployment->source, kvshard__no_mark);
    return rc;
}

int kvshard_deployment_plan(kvshard_plan **out, const kvshard_deployment *deployment,
                            kvshard_error *err)
{
    if (!deployment) {
        kvshard__error_reset(err);
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "deployment must not be NULL");
    }
    int rc =
        kvshard_plan_create(out, deployment->model, &deployment->options, &deployment->alloc, err);
    return locate_option_error(deployment, rc, err);
}

int kvshard_deployment_compare(kvshard_comparison **out, const kvshard_deployment *deployment,
                               kvshard_error *err)
{
    if (!deployment) {
        kvshard__error_reset(err);
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "deployment must not be NULL");
    }
    int rc = kvshard_comparison_create(out, deployment->model, &deployment->options,
                                       &deployment->alloc, err);
    return locate_option_error(deployment, rc, err);
}
