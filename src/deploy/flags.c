/* gflags-style arguments and flag files, so that an engine's own command line
 * or flag file can be handed to kvshard as it is. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "deploy/flags.h"

#include "deploy/deploy.h"
#include "text/file.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define ORIGIN_MAX KVSHARD_ERROR_SOURCE_MAX

/* One flag as written, and where: a command-line argument or a flag file's
 * line. `name` and `value` point into the argument or the file's text. */
typedef struct flag {
    const char *text; /* the whole flag, dashes included */
    const char *name;
    size_t name_len;
    const char *value; /* NULL for a bare --name */
    size_t value_len;
    const char *file; /* the flag file, NULL on the command line */
    kvshard__mark mark;
} flag;

typedef struct flag_list {
    kvshard_allocator alloc;
    flag *items;
    size_t count;
    size_t cap;
    char **texts; /* flag files' paths and the flags copied out of them */
    size_t text_count;
    size_t text_cap;
    char *arena; /* the block flags are copied into, and its room */
    size_t arena_used;
    size_t arena_cap;
    bool ignore_unknown;
    /* The budget of the whole call (KVSHARD_FLAGS__MAX_*). */
    size_t files; /* flag files opened */
    size_t bytes; /* bytes of flag files read */
    kvshard_flags__file_fn on_file;
    void *user;
    kvshard_error *err;
} flag_list;

static int nomem(flag_list *l)
{
    return kvshard__fail(l->err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
}

/* Append to a growing array of `size`-byte items (flags or text pointers). */
static int grow(flag_list *l, void **items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return KVSHARD_OK;
    size_t n = *cap ? *cap * 2 : 16;
    void *grown = kvshard__alloc(&l->alloc, n, size);
    if (!grown)
        return nomem(l);
    if (count)
        memcpy(grown, *items, count * size);
    kvshard__free(&l->alloc, *items);
    *items = grown;
    *cap = n;
    return KVSHARD_OK;
}

static int keep_text(flag_list *l, char *text)
{
    void *items = l->texts;
    int rc = grow(l, &items, &l->text_cap, l->text_count, sizeof *l->texts);
    l->texts = items;
    if (rc) {
        kvshard__free(&l->alloc, text);
        return rc;
    }
    l->texts[l->text_count++] = text;
    return KVSHARD_OK;
}

/* A flag file is freed once its lines are read, so memory follows the flags
 * rather than the files (comments, say): each flag is copied into blocks of
 * ARENA_BLOCK bytes, a longer one into its own allocation. */
#define ARENA_BLOCK 65536u

static int keep_flag(const char **out, flag_list *l, const char *text, size_t len)
{
    int rc;
    char *copy;
    if (len >= ARENA_BLOCK / 4) {
        if (!(copy = kvshard__strndup(&l->alloc, text, len)))
            return nomem(l);
        if ((rc = keep_text(l, copy)) != 0)
            return rc;
        *out = copy;
        return KVSHARD_OK;
    }
    if (!l->arena || l->arena_cap - l->arena_used < len + 1) {
        char *block = kvshard__alloc(&l->alloc, ARENA_BLOCK, 1);
        if (!block)
            return nomem(l);
        if ((rc = keep_text(l, block)) != 0)
            return rc;
        l->arena = block;
        l->arena_used = 0;
        l->arena_cap = ARENA_BLOCK;
    }
    copy = l->arena + l->arena_used;
    memcpy(copy, text, len);
    copy[len] = '\0';
    l->arena_used += len + 1;
    *out = copy;
    return KVSHARD_OK;
}

/* Where a flag stands, for errors: the flag file's path as it is (the error
 * shortens it from the front), or "command line --name" made in `buf`. */
static const char *origin_of(char *buf, size_t cap, const flag *f)
{
    if (f->file)
        return f->file;
    snprintf(buf, cap, "command line --%.*s", (int)(f->name_len > 64 ? 64 : f->name_len), f->name);
    return buf;
}

/* Where a flag's value stands: in a flag file, at the value after `=`, as a
 * deployment file's errors point at the value; else where the flag stands. */
static kvshard__mark value_mark(const flag *f)
{
    kvshard__mark m = f->mark;
    if (f->file && f->value && m.line > 0) {
        size_t shift = (size_t)(f->value - f->text);
        m.column += (int)shift;
        m.offset += shift;
    }
    return m;
}

static int flag_fail(flag_list *l, const flag *f, int code, const char *fmt, ...)
    KVSHARD__PRINTF(4, 5);

static int flag_fail(flag_list *l, const flag *f, int code, const char *fmt, ...)
{
    char buf[ORIGIN_MAX];
    const char *origin = origin_of(buf, sizeof buf, f);
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard__vfail(l->err, code, origin, f->mark, fmt, ap);
    va_end(ap);
    return rc;
}

static int expand(flag_list *l, const char *text, size_t len, const char *file, kvshard__mark mark,
                  int depth);

/* A flag file's path for a message about it; the error's source already
 * says where the --flagfile flag stands. */
static void shown_path(char *out, size_t cap, const char *path)
{
    kvshard__shorten(out, cap < KVSHARD_ERROR_SOURCE_MAX ? cap : KVSHARD_ERROR_SOURCE_MAX, path);
}

static int too_many_bytes(flag_list *l, const flag *f, const char *path, unsigned long long size)
{
    char shown[96];
    shown_path(shown, sizeof shown, path);
    return flag_fail(l, f, KVSHARD_ELIMIT,
                     "--flagfile=%s: %llu more bytes would pass the %u bytes (%u MiB) of flag "
                     "files one call reads (%zu read so far)",
                     shown, size, KVSHARD_FLAGS__MAX_BYTES, KVSHARD_FLAGS__MAX_BYTES >> 20,
                     l->bytes);
}

/* One flag per line; blank lines and lines starting with # are skipped. */
static int read_lines(flag_list *l, const char *text, size_t len, const char *name, int depth)
{
    int line = 1, rc;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len;
        size_t a = i, b = end;
        while (a < b && (text[a] == ' ' || text[a] == '\t'))
            a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r'))
            b--;
        if (a < b && text[a] != '#') {
            /* A NUL would end the flag for every C string that holds it:
             * refused where it stands, with the whole flag shown. */
            const char *nul = memchr(text + a, '\0', b - a);
            if (nul) {
                char shown[96];
                kvshard__excerpt(shown, sizeof shown, text + a, b - a, 64);
                size_t at = (size_t)(nul - text);
                kvshard__mark m = {line, (int)(at - i) + 1, at};
                return kvshard__fail(l->err, KVSHARD_ETYPE, name, m,
                                     "the flag \"%s\" holds a NUL character (\\x00), which no "
                                     "flag may hold",
                                     shown);
            }
            kvshard__mark m = {line, (int)(a - i) + 1, a};
            const char *copy = NULL;
            if ((rc = keep_flag(&copy, l, text + a, b - a)) != 0 ||
                (rc = expand(l, copy, b - a, name, m, depth + 1)) != 0)
                return rc;
        }
        i = end + 1;
        line++;
    }
    return KVSHARD_OK;
}

static int read_flagfile(flag_list *l, const flag *f, int depth)
{
    if (!f->value || f->value_len == 0)
        return flag_fail(l, f, KVSHARD_ERANGE, "--flagfile needs a file name");
    if (depth >= KVSHARD_FLAGS__MAX_DEPTH)
        return flag_fail(l, f, KVSHARD_ELIMIT,
                         "flag files nested more than %d deep (a flag file that names itself?)",
                         KVSHARD_FLAGS__MAX_DEPTH);
    /* The path as written, however long: too long a name is the system's
     * to refuse, and the error then says so. */
    char *name = kvshard__strndup(&l->alloc, f->value, f->value_len);
    int rc;
    if (!name)
        return nomem(l);
    if ((rc = keep_text(l, name)) != 0)
        return rc;
    if (l->files >= KVSHARD_FLAGS__MAX_FILES) {
        char shown[96];
        shown_path(shown, sizeof shown, name);
        return flag_fail(l, f, KVSHARD_ELIMIT,
                         "--flagfile=%s would be flag file %zu; one call opens at most %u flag "
                         "files (a flag file that names others many times?)",
                         shown, l->files + 1, KVSHARD_FLAGS__MAX_FILES);
    }
    /* Refuse a file the byte budget cannot hold before reading it. */
    size_t left = KVSHARD_FLAGS__MAX_BYTES - l->bytes;
    struct stat st;
    if (stat(name, &st) == 0 && S_ISREG(st.st_mode) && (unsigned long long)st.st_size > left)
        return too_many_bytes(l, f, name, (unsigned long long)st.st_size);
    l->files++;
    char *text = NULL;
    size_t len;
    kvshard_error read_err;
    kvshard__error_reset(&read_err);
    rc = kvshard__read_file(&text, &len, &l->alloc, name, &read_err);
    if (rc)
        return flag_fail(l, f, rc, "--flagfile=%s: %s", read_err.source, read_err.message);
    if (len > left) { /* it grew, or its size was not known (/proc) */
        kvshard__free(&l->alloc, text);
        return too_many_bytes(l, f, name, (unsigned long long)len);
    }
    l->bytes += len;
    if (l->on_file)
        l->on_file(l->user, name);
    rc = read_lines(l, text, len, name, depth);
    kvshard__free(&l->alloc, text);
    return rc;
}

/* Add one flag (`--name=value`, `--name`, `-name=value`), expanding flag
 * files in place and noting --ignore_unknown_flags. */
static int expand(flag_list *l, const char *text, size_t len, const char *file, kvshard__mark mark,
                  int depth)
{
    flag f = {text, text, len, NULL, 0, file, mark};
    size_t dashes = len > 1 && text[0] == '-' ? (len > 2 && text[1] == '-' ? 2 : 1) : 0;
    if (dashes == 0) {
        f.name_len = 0;
        char shown[96];
        kvshard__excerpt(shown, sizeof shown, text, len, 64);
        const char *origin = file ? file : "command line";
        /* An editor's byte order mark is not skipped: the engine reading
         * the same file would not skip it either. */
        bool bom = file && mark.offset == 0 && len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0;
        return kvshard__fail(l->err, KVSHARD_EUNKNOWNKEY, origin, mark,
                             "\"%s\" is not a flag (flags look like --key=value%s)", shown,
                             bom ? "; the file starts with a UTF-8 byte order mark: save it "
                                   "without one"
                                 : "");
    }
    f.name = text + dashes;
    const char *eq = memchr(f.name, '=', len - dashes);
    f.name_len = eq ? (size_t)(eq - f.name) : len - dashes;
    if (eq) {
        f.value = eq + 1;
        f.value_len = len - dashes - f.name_len - 1;
    }
    if (kvshard__text_is(f.name, f.name_len, "flagfile"))
        return read_flagfile(l, &f, depth);
    if (l->count >= KVSHARD_FLAGS__MAX_FLAGS)
        return flag_fail(l, &f, KVSHARD_ELIMIT,
                         "more than %u flags in one call, arguments and flag files together "
                         "(the limit on flags)",
                         KVSHARD_FLAGS__MAX_FLAGS);
    void *items = l->items;
    int rc = grow(l, &items, &l->cap, l->count, sizeof *l->items);
    l->items = items;
    if (rc)
        return rc;
    l->items[l->count++] = f;
    return KVSHARD_OK;
}

static void free_list(flag_list *l)
{
    for (size_t i = 0; i < l->text_count; i++)
        kvshard__free(&l->alloc, l->texts[i]);
    kvshard__free(&l->alloc, l->texts);
    kvshard__free(&l->alloc, l->items);
}

/* The value a flag gives, with --name (true) and --noname (false) for
 * booleans; *key is the option or setting it sets (neither: unknown). */
static int resolve(const flag *f, kvshard_engine engine, kvshard__deploy_key *key,
                   const char **value, size_t *value_len)
{
    const kvshard__profile *profile = kvshard_profiles__of(engine);
    *key = kvshard__key_lookup(f->name, f->name_len, profile);
    *value = f->value;
    *value_len = f->value_len;
    if (!kvshard__key_known(*key) && !f->value && f->name_len > 2 && f->name[0] == 'n' &&
        f->name[1] == 'o') {
        kvshard__deploy_key neg = kvshard__key_lookup(f->name + 2, f->name_len - 2, profile);
        if (kvshard__key_known(neg) && kvshard__key_is_bool(neg)) {
            *key = neg;
            *value = "false";
            *value_len = 5;
        }
    } else if (kvshard__key_known(*key) && !f->value) {
        if (!kvshard__key_is_bool(*key))
            return KVSHARD_ETYPE;
        *value = "true";
        *value_len = 4;
    }
    return KVSHARD_OK;
}

/* The flag that names the engine, if any: the last one wins. */
static const flag *engine_flag(const flag_list *l)
{
    const flag *found = NULL;
    for (size_t i = 0; i < l->count; i++) {
        if (kvshard__text_is(l->items[i].name, l->items[i].name_len, "engine"))
            found = &l->items[i];
    }
    return found;
}

static int apply(flag_list *l, const kvshard__deployment_values *into)
{
    kvshard_options *options = into->options;
    /* The engine profile first, wherever --engine stands: it decides which
     * flag names exist. */
    const flag *e = engine_flag(l);
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < l->count; i++) {
            const flag *f = &l->items[i];
            bool is_engine = f == e;
            if ((pass == 0) != is_engine)
                continue;
            if (kvshard__text_is(f->name, f->name_len, "engine") && !is_engine)
                continue; /* an earlier --engine, overridden by the last */
            kvshard__deploy_key key;
            const char *value;
            size_t value_len;
            if (resolve(f, options->engine, &key, &value, &value_len) != KVSHARD_OK)
                return flag_fail(l, f, KVSHARD_ETYPE, "--%.*s needs a value (--%.*s=VALUE)",
                                 (int)f->name_len, f->name, (int)f->name_len, f->name);
            if (!kvshard__key_known(key)) {
                if (l->ignore_unknown)
                    continue;
                char shown[96];
                kvshard__excerpt(shown, sizeof shown, f->name, f->name_len, 64);
                return flag_fail(l, f, KVSHARD_EUNKNOWNKEY,
                                 "unknown flag --%s (--ignore_unknown_flags skips flags kvshard "
                                 "does not use)",
                                 shown);
            }
            char buf[ORIGIN_MAX];
            const char *origin = origin_of(buf, sizeof buf, f);
            int rc = kvshard__deployment_assign(into, key, value, value_len, KVSHARD__VALUE_FLAG,
                                                origin, value_mark(f), true, l->err);
            if (rc)
                return rc;
        }
    }
    return KVSHARD_OK;
}

int kvshard_deployment_apply_args(kvshard_deployment *deployment, size_t count,
                                  const char *const *args, unsigned flags, kvshard_error *err)
{
    return kvshard_flags__apply(deployment, count, args, flags, NULL, NULL, err);
}

int kvshard_flags__apply(kvshard_deployment *deployment, size_t count, const char *const *args,
                         unsigned flags, kvshard_flags__file_fn on_file, void *user,
                         kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!deployment || (count && !args))
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "deployment and args must not be NULL");
    flag_list l;
    memset(&l, 0, sizeof l);
    l.alloc = deployment->alloc;
    l.err = err;
    l.ignore_unknown = (flags & KVSHARD_ARGS_IGNORE_UNKNOWN) != 0;
    l.on_file = on_file;
    l.user = user;
    int rc = KVSHARD_OK;
    for (size_t i = 0; i < count && rc == KVSHARD_OK; i++) {
        if (!args[i]) {
            rc = kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark, "args[%zu] is NULL", i);
            break;
        }
        rc = expand(&l, args[i], strlen(args[i]), NULL, kvshard__no_mark, 0);
    }
    /* --ignore_unknown_flags (or =true, =false) anywhere applies to all. */
    size_t kept = 0;
    for (size_t i = 0; rc == KVSHARD_OK && i < l.count; i++) {
        const flag *f = &l.items[i];
        if (!kvshard__text_is(f->name, f->name_len, "ignore_unknown_flags")) {
            l.items[kept++] = *f;
            continue;
        }
        int value =
            f->value ? kvshard_value__bool_text(f->value, f->value_len, KVSHARD__VALUE_FLAG) : 1;
        if (value < 0) {
            rc = flag_fail(&l, f, KVSHARD_ETYPE, "--ignore_unknown_flags takes true or false");
            break;
        }
        l.ignore_unknown = value != 0;
    }
    if (rc == KVSHARD_OK) {
        l.count = kept;
        /* All or nothing: the flags go into copies, which replace the
         * deployment's only when every flag applied. */
        kvshard_options options = deployment->options;
        kvshard__option_site sites[KVSHARD__OPT_COUNT];
        memcpy(sites, deployment->sites, sizeof sites);
        kvshard_settings *settings = kvshard_settings__copy(deployment->settings, &l.alloc);
        kvshard__deployment_values into = {&options, sites, settings};
        rc = settings ? apply(&l, &into)
                      : kvshard__fail(err, KVSHARD_ENOMEM, "", kvshard__no_mark, "out of memory");
        if (rc == KVSHARD_OK) {
            deployment->options = options;
            memcpy(deployment->sites, sites, sizeof sites);
            kvshard_settings *old = deployment->settings;
            deployment->settings = settings;
            settings = old;
        }
        kvshard_settings_free(settings);
    }
    free_list(&l);
    return rc;
}
