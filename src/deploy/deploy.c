/* Reading a deployment file or a bare model config, and overrides. */
#include "deploy/deploy.h"

#include "base/abi.h"
#include "base/call.h"
#include "model/load.h"
#include "model/read.h"
#include "text/file.h"
#include "text/yaml_doc.h"

#include <stdio.h>
#include <string.h>

/* Room for a YAML list joined as its flag takes it: longer than any text a
 * setting keeps (a list of sizes, one a stage, the longest), so that the
 * check refuses a list cut to it rather than keep it cut. */
#define JOINED_LIST_MAX (KVSHARD__SIZES_TEXT_MAX + 1)

typedef struct loader {
    const kvshard__doc *doc;
    const char *base_dir; /* NULL: relative paths as given */
    kvshard_deployment *dep;
    kvshard_error *err;
} loader;

bool kvshard_deploy__option_is_list(kvshard__option_id id)
{
    return id == KVSHARD__OPT_PP_PARTITION || id == KVSHARD__OPT_WEIGHTS_PER_RANK;
}

/* One entry of a list option: a layer count of pp_partition, a size of
 * weights_per_rank. */
static int parse_entry(const kvshard__deployment_values *into, kvshard__option_id id, uint32_t n,
                       const char *text, size_t len, kvshard__value_style style,
                       const char *source, kvshard__mark mark, kvshard_error *err)
{
    char what[48];
    snprintf(what, sizeof what, "%s[%u]", kvshard_options__option_name(id), n);
    if (id == KVSHARD__OPT_PP_PARTITION) {
        uint64_t v;
        int rc = kvshard_scalar__parse_uint(&v, text, len, 0, UINT32_MAX, what, source, mark, err);
        if (rc == KVSHARD_OK)
            into->lists->pp_counts[n] = (uint32_t)v;
        return rc;
    }
    kvshard_value__def def = {what, KVSHARD__VT_BYTES, 0, UINT64_MAX, KVSHARD_ERANGE,
                              false, NULL, NULL};
    kvshard_value v;
    int rc = kvshard_value__parse(&v, &def, text, len, style, source, mark, err);
    if (rc == KVSHARD_OK)
        into->lists->weights[n] = v.u;
    return rc;
}

/* The options' count and pointer of list `id`, of `n` entries. */
static void set_list(const kvshard__deployment_values *into, kvshard__option_id id, uint32_t n)
{
    if (id == KVSHARD__OPT_PP_PARTITION) {
        into->options->pp_partition = n ? into->lists->pp_counts : NULL;
        into->options->pp_partition_count = n;
    } else {
        into->options->weights_per_rank = n ? into->lists->weights : NULL;
        into->options->weights_per_rank_count = n;
    }
}

static int too_long(kvshard_error *err, kvshard__option_id id, const char *source,
                    kvshard__mark mark)
{
    return kvshard_error__fail(err,
                         id == KVSHARD__OPT_PP_PARTITION ? KVSHARD_EPARTITION : KVSHARD_EWEIGHTS,
                         source, mark, "%s has more than %u entries (KVSHARD_MAX_PP_PARTITION)",
                         kvshard_options__option_name(id), KVSHARD_MAX_PP_PARTITION);
}

/* An empty list is no list left out: it gives no stage its layers or its
 * weights, and reading it as the key absent would plan something else than
 * what was written. Its length is the error, as any other wrong length.
 * `text`: a flag's or a setter's text rather than a YAML list. */
static int empty_list(kvshard_error *err, kvshard__option_id id, bool text, const char *source,
                      kvshard__mark mark)
{
    bool pp = id == KVSHARD__OPT_PP_PARTITION;
    return kvshard_error__fail(err, pp ? KVSHARD_EPARTITION : KVSHARD_EWEIGHTS, source, mark,
                         "%s has 0 entries; give %s, such as %s, or leave %s out",
                         kvshard_options__option_name(id),
                         pp ? "one layer count a stage" : "one size, or one a stage",
                         pp ? (text ? "31,30" : "[31, 30]")
                            : (text ? "17GiB,16.5GiB" : "[17GiB, 16.5GiB]"),
                         text ? "it" : "the key");
}

int kvshard_deploy__assign_list(const kvshard__deployment_values *into, kvshard__option_id id,
                         const char *text, size_t len, const char *source, kvshard__mark mark,
                         kvshard_error *err)
{
    size_t blank = 0;
    while (blank < len && (text[blank] == ' ' || text[blank] == '\t'))
        blank++;
    if (blank == len)
        return empty_list(err, id, true, source, mark);
    uint32_t n = 0;
    size_t i = 0;
    /* Entries land in the list only once every one has parsed. */
    kvshard__lists parsed;
    kvshard__deployment_values to = *into;
    to.lists = &parsed;
    while (i <= len) {
        size_t start = i;
        while (i < len && text[i] != ',')
            i++;
        /* One entry, with the blanks around it. */
        size_t a = start, b = i;
        while (a < b && (text[a] == ' ' || text[a] == '\t'))
            a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t'))
            b--;
        if (n == KVSHARD_MAX_PP_PARTITION)
            return too_long(err, id, source, mark);
        int rc = parse_entry(&to, id, n, text + a, b - a, KVSHARD__VALUE_FLAG, source, mark, err);
        if (rc)
            return rc;
        n++;
        i++; /* past the comma, or the end */
    }
    if (id == KVSHARD__OPT_PP_PARTITION)
        memcpy(into->lists->pp_counts, parsed.pp_counts, n * sizeof parsed.pp_counts[0]);
    else
        memcpy(into->lists->weights, parsed.weights, n * sizeof parsed.weights[0]);
    set_list(into, id, n);
    return KVSHARD_OK;
}

/* ---- an engine's options file ---------------------------------------------------- */

static bool listed(const char *const *names, const char *name)
{
    for (; names && *names; names++)
        if (strcmp(*names, name) == 0)
            return true;
    return false;
}

/* The profile whose table holds `input`. */
static const kvshard__profile *owner_of_input(const kvshard_profile__input *input)
{
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++)
        for (const kvshard_profile__input *in = (*p)->dialect.inputs; in && in->def.name; in++)
            if (in == input)
                return *p;
    return NULL;
}

/* Whether `key` names an engine's options file. */
static bool is_options_file(kvshard__deploy_key key)
{
    const kvshard__profile *owner = key.setting ? owner_of_input(key.setting) : NULL;
    return owner && owner->dialect.options_file &&
           strcmp(key.setting->def.name, owner->dialect.options_file) == 0;
}

/* Whether a flag (or an API call) gave the input of `key`: the file's key
 * then yields to it. */
static bool set_by_flag(const kvshard__deployment_values *into, kvshard__deploy_key key)
{
    if (key.option != KVSHARD__OPT_COUNT)
        return into->sites[key.option].set && into->sites[key.option].override;
    const kvshard_settings__entry *e = kvshard_settings__find(into->settings, key.setting->def.name);
    return e && e->override;
}

static int options_entry(const kvshard__deployment_values *into, const kvshard__profile *p,
                         const kvshard__doc *doc, const char *prefix, const kvshard__node *k,
                         const kvshard__node *v, kvshard_error *err);

/* A mapping of the file: its keys under `prefix` ("" at the top). */
static int options_mapping(const kvshard__deployment_values *into, const kvshard__profile *p,
                           const kvshard__doc *doc, const char *prefix, const kvshard__node *map,
                           kvshard_error *err)
{
    int rc = kvshard_tape__node_expect(doc, map, KVSHARD__NODE_MAPPING,
                                       *prefix ? prefix : p->dialect.options_file, err);
    kvshard__iter it = kvshard_tape__iter_begin(doc, map);
    kvshard__node k = {0}, v = {0};
    while (rc == KVSHARD_OK && kvshard_tape__iter_next(doc, &it, &k) &&
           kvshard_tape__iter_next(doc, &it, &v))
        rc = options_entry(into, p, doc, prefix, &k, &v, err);
    return rc;
}

static int options_entry(const kvshard__deployment_values *into, const kvshard__profile *p,
                         const kvshard__doc *doc, const char *prefix, const kvshard__node *k,
                         const kvshard__node *v, kvshard_error *err)
{
    char name[128];
    snprintf(name, sizeof name, "%s%s%.*s", prefix, *prefix ? "." : "",
             (int)(k->count > 64 ? 64 : k->count), k->text);
    const kvshard_profile__dialect *d = &p->dialect;
    if (listed(d->options_file_skipped, name))
        return KVSHARD_OK;
    if (listed(d->options_file_unmodelled, name))
        return kvshard_marks__fail(doc, err, KVSHARD_EPROFILE, k,
                                   "%s profile: engine_unsupported: %s in %s changes the KV cache "
                                   "in a way kvshard does not model yet",
                                   p->name, name, d->options_file);
    bool nested = false;
    for (const char *const *n = d->options_file_keys; !nested && n && *n; n++)
        nested = strncmp(*n, name, strlen(name)) == 0 && (*n)[strlen(name)] == '.';
    if (nested && !*prefix)
        return options_mapping(into, p, doc, name, v, err);
    kvshard__deploy_key key = kvshard_options__key_lookup(name, strlen(name), p);
    if (!listed(d->options_file_keys, name) || !kvshard__key_known(key)) {
        kvshard_options__nearest near;
        kvshard_options__nearest_begin(&near, name, strlen(name), false);
        for (const char *const *n = d->options_file_keys; n && *n; n++)
            kvshard_options__nearest_offer(&near, *n);
        const char *found = kvshard_options__nearest_found(&near);
        char hint[96] = "";
        if (found)
            snprintf(hint, sizeof hint, " (did you mean %s?)", found);
        return kvshard_marks__fail(doc, err, KVSHARD_EUNKNOWNKEY, k,
                                   "unknown key \"%s\" in %s: not one the %s profile reads "
                                   "there%s",
                                   name, d->options_file, p->name, hint);
    }
    if (set_by_flag(into, key))
        return KVSHARD_OK; /* the flag wins over the file */
    /* A list is the text its flag takes: the items joined by commas. */
    char joined[JOINED_LIST_MAX];
    const char *text = v->text;
    size_t len = v->count;
    kvshard__value_style style = v->style;
    if (v->kind == KVSHARD__NODE_SEQUENCE && key.setting && key.setting->def.more &&
        key.setting->def.more->file_list) {
        size_t used = 0;
        kvshard__iter it = kvshard_tape__iter_begin(doc, v);
        kvshard__node item = {0};
        while (kvshard_tape__iter_next(doc, &it, &item) && used < sizeof joined) {
            if (item.kind != KVSHARD__NODE_SCALAR || kvshard_tape__node_is_null(&item))
                return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, &item,
                                           "%s: expected a list of values", name);
            int n = snprintf(joined + used, sizeof joined - used, "%s%.*s", used ? "," : "",
                             (int)item.count, item.text);
            used += n > 0 ? (size_t)n : 0;
        }
        text = joined;
        len = used < sizeof joined ? used : sizeof joined - 1;
        style = KVSHARD__VALUE_QUOTED;
    } else if (v->kind != KVSHARD__NODE_SCALAR || kvshard_tape__node_is_null(v)) {
        char desc[160];
        kvshard_tape__node_describe(desc, sizeof desc, v);
        return kvshard_marks__fail(doc, err, KVSHARD_ETYPE, v, "%s: expected a value, found %s",
                                   name, desc);
    }
    return kvshard_deploy__deployment_assign(into, key, text, len, style, doc->source,
                                             kvshard_marks__mark(doc, v->offset), true, err);
}

/* Read the options file `path` (its flag at `source` and `mark`) into
 * `into`. */
static int read_options_file(const kvshard__deployment_values *into, const kvshard__profile *p,
                             const char *path, const char *source, kvshard__mark mark,
                             kvshard_error *err)
{
    kvshard_allocator a = into->settings->alloc;
    char *text = NULL;
    size_t len = 0;
    kvshard_error read_err;
    kvshard_error__reset(&read_err);
    int rc = kvshard_file__read_file(&text, &len, &a, path, &read_err);
    if (rc)
        return kvshard_error__fail(err, rc, source, mark, "%s %s: %s", p->dialect.options_file,
                                   read_err.source, read_err.message);
    kvshard__doc doc;
    rc = kvshard_doc__parse(&doc, text, len, path, &a, err);
    if (rc == KVSHARD_OK) {
        kvshard__node root = kvshard_tape__doc_root(&doc);
        if (!kvshard_tape__node_is_null(&root))
            rc = options_mapping(into, p, &doc, "", &root, err);
        kvshard_tape__doc_free(&doc);
    }
    kvshard_alloc__free(&a, text);
    return rc;
}

int kvshard_deploy__deployment_assign(const kvshard__deployment_values *into,
                                      kvshard__deploy_key key, const char *value, size_t len,
                                      kvshard__value_style style, const char *source,
                                      kvshard__mark mark, bool override, kvshard_error *err)
{
    if (is_options_file(key)) {
        const kvshard__profile *owner = owner_of_input(key.setting);
        /* The file is read now and its keys kept, never its name: a name
         * that reaches planning came another way, and is refused there. */
        const kvshard_value__def *def = &key.setting->def;
        int rc = def->more && def->more->check
                     ? def->more->check(def, value, len, source, mark, err)
                     : KVSHARD_OK;
        kvshard_allocator a = into->settings->alloc;
        char *path = rc ? NULL : kvshard_alloc__strndup(&a, value, len);
        if (!rc && !path)
            rc = kvshard_error__fail(err, KVSHARD_ENOMEM, source, mark, "out of memory");
        if (!rc)
            rc = read_options_file(into, owner, path, source, mark, err);
        kvshard_alloc__free(&a, path);
        return rc;
    }
    if (key.option == KVSHARD__OPT_COUNT)
        return kvshard_settings__assign(into->settings, key.setting, value, len, style, source,
                                        mark, override, err);
    int rc;
    if (kvshard_deploy__option_is_list(key.option)) {
        rc = kvshard_deploy__assign_list(into, key.option, value, len, source, mark, err);
    } else {
        rc = kvshard_options__option_parse(into->options, into->explore, key.option, value, len,
                                           style, key.words, source, mark, err);
    }
    if (rc)
        return rc;
    kvshard__option_site *site = &into->sites[key.option];
    site->set = true;
    site->override = override;
    site->mark = mark;
    kvshard_error__shorten(site->source, sizeof site->source, source);
    return KVSHARD_OK;
}

bool kvshard_deploy__deployment_site(const kvshard_deployment *deployment, const char *name,
                              const char **source, kvshard__mark *mark, bool *override)
{
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        const kvshard__option_site *site = &deployment->sites[i];
        if (site->set && strcmp(kvshard_options__option_name((kvshard__option_id)i), name) == 0) {
            *source = site->source;
            *mark = site->mark;
            *override = site->override;
            return true;
        }
    }
    const kvshard_settings__entry *e = kvshard_settings__find(deployment->settings, name);
    if (!e)
        return false;
    *source = e->source;
    *mark = e->mark;
    *override = e->override;
    return true;
}

/* A list option written as a YAML list: pp_partition's layer counts,
 * weights_per_rank's sizes. */
static int read_list(loader *l, kvshard__option_id id, const kvshard__node *list)
{
    const kvshard__doc *doc = l->doc;
    kvshard_deployment *dep = l->dep;
    kvshard__mark at = kvshard_marks__mark(doc, list->offset);
    if (list->count > KVSHARD_MAX_PP_PARTITION)
        return too_long(l->err, id, doc->source, at);
    if (list->count == 0)
        return empty_list(l->err, id, false, doc->source, at);
    kvshard__deployment_values into = {&dep->options, &dep->explore, dep->sites, dep->settings,
                                       &dep->lists};
    uint32_t n = 0;
    kvshard__iter it = kvshard_tape__iter_begin(doc, list);
    kvshard__node item = {0};
    while (kvshard_tape__iter_next(doc, &it, &item)) {
        char what[48];
        snprintf(what, sizeof what, "%s[%u]", kvshard_options__option_name(id), n);
        int rc;
        if (id == KVSHARD__OPT_PP_PARTITION) {
            uint64_t v;
            rc = kvshard_tape__node_uint(&v, doc, &item, what, 0, UINT32_MAX, l->err);
            if (rc == KVSHARD_OK)
                dep->lists.pp_counts[n] = (uint32_t)v;
        } else if (item.kind != KVSHARD__NODE_SCALAR || item.tag == KVSHARD__TAG_FLOAT) {
            /* A size is an integer or has a unit: 8.5 alone is no size. */
            char desc[160];
            kvshard_tape__node_describe(desc, sizeof desc, &item);
            rc = kvshard_marks__fail(doc, l->err, KVSHARD_ETYPE, &item,
                                   "%s: expected a size such as \"17GiB\", found %s", what, desc);
        } else {
            rc = parse_entry(&into, id, n, item.text, item.count, item.style, doc->source,
                             kvshard_marks__mark(doc, item.offset), l->err);
        }
        if (rc)
            return rc;
        n++;
    }
    set_list(&into, id, n);
    kvshard__option_site *site = &dep->sites[id];
    site->set = true;
    site->override = false;
    site->mark = at;
    kvshard_error__shorten(site->source, sizeof site->source, doc->source);
    return KVSHARD_OK;
}

/* A text setting written as a YAML list: its scalars joined by commas, the
 * text the flag takes, checked as the flag's is. */
static int read_text_list(loader *l, kvshard__deploy_key key, const kvshard__node *list)
{
    const kvshard__doc *doc = l->doc;
    char joined[JOINED_LIST_MAX];
    size_t used = 0;
    kvshard__iter it = kvshard_tape__iter_begin(doc, list);
    kvshard__node item = {0};
    while (kvshard_tape__iter_next(doc, &it, &item)) {
        if (item.kind != KVSHARD__NODE_SCALAR || kvshard_tape__node_is_null(&item)) {
            char desc[160];
            kvshard_tape__node_describe(desc, sizeof desc, &item);
            return kvshard_marks__fail(doc, l->err, KVSHARD_ETYPE, &item,
                                     "%s: expected a list of values, found %s in it",
                                     kvshard__key_name_of(key), desc);
        }
        int n = snprintf(joined + used, sizeof joined - used, "%s%.*s", used ? "," : "",
                         (int)item.count, item.text);
        used += n > 0 ? (size_t)n : 0;
        if (used >= sizeof joined) {
            used = sizeof joined - 1;
            break;
        }
    }
    kvshard__deployment_values into = {&l->dep->options, &l->dep->explore, l->dep->sites,
                                       l->dep->settings, &l->dep->lists};
    return kvshard_deploy__deployment_assign(&into, key, joined, used, KVSHARD__VALUE_QUOTED,
                                             doc->source, kvshard_marks__mark(doc, list->offset),
                                             false, l->err);
}

/* A path the file names, relative to the file's folder when it is relative
 * (NULL: out of memory). */
static char *path_in(const loader *l, const char *rel, size_t rel_len)
{
    const kvshard_allocator *a = &l->dep->alloc;
    bool relative = rel_len > 0 && rel[0] != '/' && l->base_dir && l->base_dir[0];
    size_t base_len = relative ? strlen(l->base_dir) : 0;
    char *path = kvshard_alloc__bytes(a, base_len + 1 + rel_len + 1, 1);
    if (!path)
        return NULL;
    if (relative)
        snprintf(path, base_len + rel_len + 2, "%s/%.*s", l->base_dir, (int)rel_len, rel);
    else {
        memcpy(path, rel, rel_len);
        path[rel_len] = '\0';
    }
    return path;
}

static int read_section(loader *l, const kvshard__node *section, kvshard__section which)
{
    const kvshard__doc *doc = l->doc;
    const char *name = kvshard_options__section_name(which);
    if (kvshard_tape__node_is_null(section))
        return KVSHARD_OK;
    int rc = kvshard_tape__node_expect(doc, section, KVSHARD__NODE_MAPPING, name, l->err);
    if (rc)
        return rc;
    kvshard__iter it = kvshard_tape__iter_begin(doc, section);
    kvshard__node k = {0}, v = {0};
    while (kvshard_tape__iter_next(doc, &it, &k) && kvshard_tape__iter_next(doc, &it, &v)) {
        char shown[96];
        /* comm: writes its keys without the "comm_" of their flags. */
        char flag_name[80];
        bool in_comm = which == KVSHARD__SECTION_COMM;
        int flag_len = in_comm ? snprintf(flag_name, sizeof flag_name, "comm_%.*s",
                                          (int)(k.count < 64 ? k.count : 64), k.text)
                               : 0;
        kvshard__deploy_key key =
            in_comm && k.count < 64
                ? kvshard_options__key_lookup(flag_name, (size_t)flag_len, NULL)
                : kvshard_options__key_lookup(k.text, k.count, NULL);
        if (in_comm && key.option == KVSHARD__OPT_COUNT)
            key.setting = NULL; /* an engine's setting is no key of comm: */
        /* Settings, the inputs of engine profiles, are cache keys, except
         * the engines' parallel sizes (whose floor of 1 is a rule of its
         * own), which stay beside kvshard's in parallel:. */
        kvshard__section home = key.option != KVSHARD__OPT_COUNT
                                    ? kvshard_options__option_section(key.option)
                                : key.setting && key.setting->def.below_min == KVSHARD_EPARALLEL
                                    ? KVSHARD__SECTION_PARALLEL
                                    : KVSHARD__SECTION_CACHE;
        if (!kvshard__key_known(key) || home != which) {
            kvshard_error__excerpt(shown, sizeof shown, k.text, k.count, 64);
            char near[80];
            if (!kvshard__key_known(key) &&
                kvshard_options__key_nearest(near, sizeof near, k.text, k.count, which))
                return kvshard_marks__fail(doc, l->err, KVSHARD_EUNKNOWNKEY, &k,
                                         "unknown key \"%s\" in %s (did you mean %s?)", shown, name,
                                         near);
            if (!kvshard__key_known(key))
                return kvshard_marks__fail(doc, l->err, KVSHARD_EUNKNOWNKEY, &k,
                                         "unknown key \"%s\" in %s", shown, name);
            return kvshard_marks__fail(doc, l->err, KVSHARD_EUNKNOWNKEY, &k,
                                     "unknown key \"%s\" in %s (it belongs in %s)", shown, name,
                                     kvshard_options__section_name(home));
        }
        if (key.option == KVSHARD__OPT_PP_PARTITION) {
            /* A file lists the counts; only the flag spells them "31,30". */
            if (v.kind != KVSHARD__NODE_SEQUENCE) {
                char desc[160];
                kvshard_tape__node_describe(desc, sizeof desc, &v);
                return kvshard_marks__fail(doc, l->err, KVSHARD_ETYPE, &v,
                                         "pp_partition: expected a list of layer counts such as "
                                         "[31, 30], found %s",
                                         desc);
            }
            if ((rc = read_list(l, key.option, &v)) != 0)
                return rc;
            continue;
        }
        /* weights_per_rank: one size for every stage, or a list of them. */
        if (key.option == KVSHARD__OPT_WEIGHTS_PER_RANK && v.kind == KVSHARD__NODE_SEQUENCE) {
            if ((rc = read_list(l, key.option, &v)) != 0)
                return rc;
            continue;
        }
        if (v.kind == KVSHARD__NODE_SEQUENCE && key.setting && key.setting->def.more &&
            key.setting->def.more->file_list) {
            if ((rc = read_text_list(l, key, &v)) != 0)
                return rc;
            continue;
        }
        bool object = key.setting && key.setting->def.type == KVSHARD__VT_OBJECT;
        if (v.kind != KVSHARD__NODE_SCALAR || kvshard_tape__node_is_null(&v)) {
            char desc[160];
            kvshard_tape__node_describe(desc, sizeof desc, &v);
            return kvshard_marks__fail(doc, l->err, KVSHARD_ETYPE, &v,
                                     "%s: expected a value, found %s%s", kvshard__key_name_of(key),
                                     desc,
                                     object ? " (write the JSON object as one quoted string, "
                                              "as the flag takes it)"
                                            : "");
        }
        kvshard_value__type type = key.setting ? key.setting->def.type
                                   : kvshard_deploy__option_is_list(key.option)
                                       ? KVSHARD__VT_U32
                                       : kvshard_options__option_def(key.option)->type;
        bool decimal = type == KVSHARD__VT_FRACTION || type == KVSHARD__VT_DECIMAL ||
                       type == KVSHARD__VT_TEXT;
        if (v.tag == KVSHARD__TAG_FLOAT && !kvshard__key_is_bool(key) && !decimal)
            return kvshard_marks__fail(doc, l->err, KVSHARD_ETYPE, &v,
                                     "%s: expected an integer or a word, found a !!float",
                                     kvshard__key_name_of(key));
        kvshard__mark mark = kvshard_marks__mark(doc, v.offset);
        kvshard__deployment_values into = {&l->dep->options, &l->dep->explore, l->dep->sites,
                                           l->dep->settings, &l->dep->lists};
        char *path = is_options_file(key) ? path_in(l, v.text, v.count) : NULL;
        if (is_options_file(key) && !path)
            return kvshard_marks__fail(doc, l->err, KVSHARD_ENOMEM, &v, "out of memory");
        rc = kvshard_deploy__deployment_assign(&into, key, path ? path : v.text,
                                               path ? strlen(path) : v.count, v.style,
                                               doc->source, mark, false, l->err);
        kvshard_alloc__free(&l->dep->alloc, path);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

static int load_model_path(loader *l, const kvshard__node *v)
{
    const kvshard_allocator *a = &l->dep->alloc;
    const kvshard__doc *doc = l->doc;
    const char *rel;
    size_t rel_len;
    int rc = kvshard_tape__node_string(&rel, &rel_len, doc, v, "model", l->err);
    if (rc)
        return rc;
    if (rel_len == 0)
        return kvshard_marks__fail(doc, l->err, KVSHARD_ERANGE, v, "model: expected a file path");
    char *path = path_in(l, rel, rel_len);
    if (!path)
        return kvshard_marks__fail(doc, l->err, KVSHARD_ENOMEM, v, "out of memory");
    kvshard_error model_err;
    kvshard_error__reset(&model_err);
    rc = kvshard_model__load_path(&l->dep->model, path, a, &model_err);
    if (rc == KVSHARD_EIO || rc == KVSHARD_ENOMEM) {
        /* Point at the `model:` line: that is what the user has to fix. */
        kvshard_marks__fail(doc, l->err, rc, v, "model file %s: %s", model_err.source,
                          model_err.message);
    } else if (rc && l->err && l->err->code == KVSHARD_OK) {
        *l->err = model_err; /* an error inside the model file points there */
    }
    kvshard_alloc__free(a, path);
    return rc;
}

static int read_deployment(loader *l, const kvshard__node *root)
{
    const kvshard__doc *doc = l->doc;
    kvshard__iter it = kvshard_tape__iter_begin(doc, root);
    kvshard__node k = {0}, v = {0};
    while (kvshard_tape__iter_next(doc, &it, &k) && kvshard_tape__iter_next(doc, &it, &v)) {
        int rc;
        if (kvshard_tape__scalar_is(&k, "model")) {
            if (v.kind == KVSHARD__NODE_MAPPING)
                rc = kvshard_model__from_node(&l->dep->model, doc, &v, &l->dep->alloc, l->err);
            else
                rc = load_model_path(l, &v);
        } else if (kvshard_tape__scalar_is(&k, "parallel")) {
            rc = read_section(l, &v, KVSHARD__SECTION_PARALLEL);
        } else if (kvshard_tape__scalar_is(&k, "cache")) {
            rc = read_section(l, &v, KVSHARD__SECTION_CACHE);
        } else if (kvshard_tape__scalar_is(&k, "comm")) {
            rc = read_section(l, &v, KVSHARD__SECTION_COMM);
        } else {
            char shown[96];
            kvshard_error__excerpt(shown, sizeof shown, k.text, k.count, 64);
            rc = kvshard_marks__fail(doc, l->err, KVSHARD_EUNKNOWNKEY, &k,
                                   "unknown key \"%s\" (a deployment has model, parallel and "
                                   "cache)",
                                   shown);
        }
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

static bool is_bare_model(const kvshard__doc *doc, const kvshard__node *root)
{
    kvshard__node v = {0}, tc = {0};
    if (kvshard_tape__map_get(doc, root, "num_hidden_layers", &v))
        return true;
    return kvshard_tape__map_get(doc, root, "text_config", &tc) &&
           kvshard_tape__map_get(doc, &tc, "num_hidden_layers", &v);
}

static kvshard_deployment *new_deployment(const kvshard_allocator *a, const char *source,
                                          const kvshard_settings *settings)
{
    kvshard_deployment *dep = kvshard_alloc__calloc(a, 1, sizeof *dep);
    if (!dep)
        return NULL;
    dep->source = kvshard_alloc__strdup(a, source);
    dep->settings = kvshard_settings__copy(settings, a);
    if (!dep->source || !dep->settings) {
        kvshard_settings_free(dep->settings);
        kvshard_alloc__free(a, dep->source);
        kvshard_alloc__free(a, dep);
        return NULL;
    }
    dep->alloc = *a;
    KVSHARD__INIT_BYTES(dep->options, kvshard_options, KVSHARD_OPTIONS_INIT);
    return dep;
}

static int load(kvshard_deployment **out, const char *text, size_t len, const char *source,
                const char *base_dir, bool from_file, const kvshard_allocator *a,
                kvshard_error *err)
{
    kvshard__doc doc;
    int rc = kvshard_doc__parse(&doc, text, len, source, a, err);
    if (rc)
        return rc;
    kvshard_deployment *dep = new_deployment(a, source, NULL);
    if (!dep) {
        kvshard_tape__doc_free(&doc);
        return kvshard_error__fail(err, KVSHARD_ENOMEM, source, kvshard_error__no_mark,
                                   "out of memory");
    }
    loader l = {&doc, base_dir, dep, err};
    kvshard__node root = kvshard_tape__doc_root(&doc), model;
    if (root.kind != KVSHARD__NODE_MAPPING) {
        /* The contents of a file that is not a config are not echoed. */
        rc = kvshard_marks__fail(&doc, err, KVSHARD_ETYPE, &root,
                               "deployment: expected a mapping, found %s",
                               root.kind == KVSHARD__NODE_SEQUENCE ? "a list" : "a scalar");
    } else if (kvshard_tape__map_get(&doc, &root, "model", &model)) {
        rc = read_deployment(&l, &root);
    } else if (is_bare_model(&doc, &root)) {
        rc = kvshard_model__from_node(&dep->model, &doc, &root, a, err);
        if (rc == KVSHARD_OK)
            dep->model->from_file = from_file; /* its weights sit beside it */
    } else {
        rc = kvshard_marks__fail(&doc, err, KVSHARD_EMISSING, &root,
                               "missing key \"model\": this is neither a deployment (it has no "
                               "model) nor a model config (it has no num_hidden_layers)");
    }
    kvshard_tape__doc_free(&doc);
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
    char *dir = kvshard_alloc__strndup(a, path, slash == path ? 1 : (size_t)(slash - path));
    *failed = dir == NULL;
    return dir;
}

int kvshard_deployment_load_file(kvshard_deployment **out, const char *path,
                                 const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard_load__begin_load(&a, out && path, "out and path", options, err);
    if (rc)
        return rc;
    char *file = NULL, *text = NULL, *dir = NULL;
    size_t len;
    bool failed = false;
    if ((rc = kvshard_file__config_path(&file, &a, path, err)) == KVSHARD_OK &&
        (rc = kvshard_file__read_file(&text, &len, &a, file, err)) == KVSHARD_OK) {
        dir = dir_of(&a, file, &failed);
        if (failed)
            rc = kvshard_error__fail(err, KVSHARD_ENOMEM, file, kvshard_error__no_mark,
                                     "out of memory");
        else
            rc = load(out, text, len, file, dir, true, &a, err);
    }
    kvshard_alloc__free(&a, dir);
    kvshard_alloc__free(&a, text);
    kvshard_alloc__free(&a, file);
    return rc;
}

int kvshard_deployment_load_string(kvshard_deployment **out, const char *text, size_t len,
                                   const char *name, const char *base_dir,
                                   const kvshard_load_options *options, kvshard_error *err)
{
    kvshard_allocator a;
    int rc = kvshard_load__begin_load(&a, out && text, "out and text", options, err);
    if (rc)
        return rc;
    return load(out, text, len, name ? name : "<string>", base_dir, false, &a, err);
}

int kvshard_deployment_create(kvshard_deployment **out, kvshard_model *model,
                              const kvshard_options *options, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out && model, "out and model");
    if (rc == KVSHARD_OK && options)
        rc = kvshard_options__check(options, err);
    if (rc)
        return rc;
    kvshard_deployment *dep =
        new_deployment(&model->alloc, "options", options ? options->settings : NULL);
    if (!dep)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    if (options) {
        dep->options = *options;
        if (options->pp_partition_count)
            memcpy(dep->lists.pp_counts, options->pp_partition,
                   options->pp_partition_count * sizeof *dep->lists.pp_counts);
        if (options->weights_per_rank_count)
            memcpy(dep->lists.weights, options->weights_per_rank,
                   options->weights_per_rank_count * sizeof *dep->lists.weights);
        dep->options.pp_partition = NULL;
        dep->options.weights_per_rank = NULL;
    }
    dep->model = model;
    *out = dep;
    return KVSHARD_OK;
}

void kvshard_deployment_free(kvshard_deployment *deployment)
{
    if (!deployment)
        return;
    kvshard_allocator a = deployment->alloc;
    for (size_t i = 0; i < deployment->skipped_count; i++)
        kvshard_alloc__free(&a, deployment->skipped[i].text);
    kvshard_alloc__free(&a, deployment->skipped);
    kvshard_model_free(deployment->model);
    kvshard_settings_free(deployment->settings);
    kvshard_alloc__free(&a, deployment->source);
    kvshard_alloc__free(&a, deployment);
}

const kvshard_model *kvshard_deployment_model(const kvshard_deployment *deployment)
{
    return deployment ? deployment->model : NULL;
}

kvshard_options kvshard_deploy__deployment_options(const kvshard_deployment *deployment)
{
    kvshard_options o;
    memcpy(&o, &deployment->options, sizeof o); /* its padding too: callers compare bytes */
    o.settings = deployment->settings;
    o.pp_partition = o.pp_partition_count ? deployment->lists.pp_counts : NULL;
    o.weights_per_rank = o.weights_per_rank_count ? deployment->lists.weights : NULL;
    return o;
}

int kvshard_deployment_options(kvshard_options *out, const kvshard_deployment *deployment)
{
    if (!deployment)
        return KVSHARD_EINVAL;
    kvshard_options o;
    memcpy(&o, &deployment->options, sizeof o);
    o.settings = deployment->settings;
    o.pp_partition = o.pp_partition_count ? deployment->lists.pp_counts : NULL;
    o.weights_per_rank = o.weights_per_rank_count ? deployment->lists.weights : NULL;
    return kvshard__copy_out(out, &o, sizeof *out, sizeof *out) ? KVSHARD_OK : KVSHARD_EINVAL;
}

int kvshard_deployment_set(kvshard_deployment *deployment, const char *key, const char *value,
                           const char *origin, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, deployment && key && value, "deployment, key and value");
    if (rc)
        return rc;
    const char *from = origin ? origin : "override";
    kvshard__deploy_key ref = kvshard_options__key_lookup(
        key, strlen(key), kvshard_profiles__of(deployment->options.engine));
    if (!kvshard__key_known(ref)) {
        char shown[96];
        kvshard_error__excerpt(shown, sizeof shown, key, strlen(key), 64);
        const kvshard__profile *p = kvshard_profiles__of(deployment->options.engine);
        kvshard_options__nearest n;
        kvshard_options__nearest_begin(&n, key, strlen(key),
                                       p->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE);
        kvshard_options__offer_flags(&n, p);
        const char *near = kvshard_options__nearest_found(&n);
        return kvshard_error__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard_error__no_mark,
                             "unknown option \"%s\"%s%s%s", shown, near ? " (did you mean " : "",
                             near ? near : "", near ? "?)" : "");
    }
    kvshard__deployment_values into = {&deployment->options, &deployment->explore,
                                       deployment->sites, deployment->settings,
                                       &deployment->lists};
    return kvshard_deploy__deployment_assign(&into, ref, value, strlen(value), KVSHARD__VALUE_FLAG,
                                             from, kvshard_error__no_mark, true, err);
}
