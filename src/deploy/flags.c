/* Engine command lines and flag files, so that an engine's own arguments can
 * be handed to kvshard as they are. Arguments and flag files' lines become
 * one list of tokens; the engine profile is settled first (it decides which
 * names exist and how they are written), then the tokens are read in the
 * profile's style: gflags (--name=value, --name value, --name, --noname) or
 * argparse (also one dash, '-' and '_' alike, --no-name, a value that
 * starts with '-'). `--` ends the flags. Under --ignore_unknown_flags what
 * the profile does not read is skipped and kept by name, for the plan's
 * flags_ignored warning. */
#define _POSIX_C_SOURCE 200809L /* stat */
#include "deploy/flags.h"

#include "base/call.h"
#include "base/hash.h"
#include "deploy/deploy.h"
#include "text/file.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define ORIGIN_MAX KVSHARD_ERROR_SOURCE_MAX

_Thread_local uint64_t kvshard_flags__compared;

/* One token as written, and where: a command-line argument or a flag
 * file's line. A flag has a name; a token without leading dashes can only
 * be the value of the flag before it. `name` and `value` point into the
 * argument or the file's text. */
typedef struct flag {
    const char *text; /* the whole token, dashes included */
    size_t len;
    bool is_flag;
    bool after_end; /* after `--`: an argument, never a flag or a flag's value */
    const char *name;
    size_t name_len;
    const char *value; /* NULL for a bare --name */
    size_t value_len;
    const char *file; /* the flag file, NULL on the command line */
    kvshard__mark mark;
} flag;

/* What --ignore_unknown_flags skipped: `len` bytes of a token. */
typedef struct skip_entry {
    const char *text;
    size_t len;
    bool positional;
} skip_entry;

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
    bool ended;        /* `--` was read: the tokens after it are arguments */
    skip_entry *skips; /* what --ignore_unknown_flags skipped */
    size_t skip_count;
    size_t skip_cap;
    /* Names the caller reads itself, offered when a flag is unknown. */
    const char *const *also_known;
    /* The budget of the whole call (KVSHARD_FLAGS__MAX_*). */
    size_t files; /* flag files opened */
    size_t bytes; /* bytes of flag files read */
    /* Called with each flag file read (kvshard_args_options.on_file). */
    void (*on_file)(void *user, const char *path);
    void *user;
    kvshard_error *err;
    /* A --flagfile written without `=`: the next token, whatever it is, is
     * its file (--flagfile FILE, as every other flag takes a value). */
    bool flagfile_waits;
    flag flagfile;
    int flagfile_depth;
} flag_list;

static int nomem(flag_list *l)
{
    return kvshard_error__fail(l->err, KVSHARD_ENOMEM, "", kvshard_error__no_mark, "out of memory");
}

/* Append to a growing array of `size`-byte items (flags or text pointers). */
static int grow(flag_list *l, void **items, size_t *cap, size_t count, size_t size)
{
    if (count < *cap)
        return KVSHARD_OK;
    size_t n = *cap ? *cap * 2 : 16;
    void *grown = kvshard_alloc__bytes(&l->alloc, n, size);
    if (!grown)
        return nomem(l);
    if (count)
        memcpy(grown, *items, count * size);
    kvshard_alloc__free(&l->alloc, *items);
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
        kvshard_alloc__free(&l->alloc, text);
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
        if (!(copy = kvshard_alloc__strndup(&l->alloc, text, len)))
            return nomem(l);
        if ((rc = keep_text(l, copy)) != 0)
            return rc;
        *out = copy;
        return KVSHARD_OK;
    }
    if (!l->arena || l->arena_cap - l->arena_used < len + 1) {
        char *block = kvshard_alloc__bytes(&l->alloc, ARENA_BLOCK, 1);
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
    int rc = kvshard_error__vfail(l->err, code, origin, f->mark, fmt, ap);
    va_end(ap);
    return rc;
}

static int expand(flag_list *l, const char *text, size_t len, const char *file, kvshard__mark mark,
                  int depth);

/* A flag file's path for a message about it; the error's source already
 * says where the --flagfile flag stands. */
static void shown_path(char *out, size_t cap, const char *path)
{
    kvshard_error__shorten(out, cap < KVSHARD_ERROR_SOURCE_MAX ? cap : KVSHARD_ERROR_SOURCE_MAX,
                           path);
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
                kvshard_error__excerpt(shown, sizeof shown, text + a, b - a, 64);
                size_t at = (size_t)(nul - text);
                kvshard__mark m = {line, (int)(at - i) + 1, at};
                return kvshard_error__fail(l->err, KVSHARD_ETYPE, name, m,
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
    /* A --flagfile on the file's last line has no file after it: the next
     * argument outside the file is not its value. */
    if (l->flagfile_waits && l->flagfile_depth == depth + 1) {
        l->flagfile_waits = false;
        return flag_fail(l, &l->flagfile, KVSHARD_ERANGE, "--flagfile needs a file name");
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
    char *name = kvshard_alloc__strndup(&l->alloc, f->value, f->value_len);
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
    kvshard_error__reset(&read_err);
    rc = kvshard_file__read_file(&text, &len, &l->alloc, name, &read_err);
    if (rc)
        return flag_fail(l, f, rc, "--flagfile=%s: %s", read_err.source, read_err.message);
    if (len > left) { /* it grew, or its size was not known (/proc) */
        kvshard_alloc__free(&l->alloc, text);
        return too_many_bytes(l, f, name, (unsigned long long)len);
    }
    l->bytes += len;
    if (l->on_file)
        l->on_file(l->user, name);
    rc = read_lines(l, text, len, name, depth);
    kvshard_alloc__free(&l->alloc, text);
    return rc;
}

/* A token that no flag takes as its value: refused where it stands. */
static int not_a_flag(flag_list *l, const flag *f)
{
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, f->text, f->len, 64);
    const char *origin = f->file ? f->file : "command line";
    /* An editor's byte order mark is not skipped: the engine reading the
     * same file would not skip it either. */
    bool bom = f->file && f->mark.offset == 0 && f->len >= 3 &&
               memcmp(f->text, "\xEF\xBB\xBF", 3) == 0;
    return kvshard_error__fail(l->err, KVSHARD_EUNKNOWNKEY, origin, f->mark,
                         "\"%s\" is not a flag (flags look like --key=value%s)", shown,
                         bom ? "; the file starts with a UTF-8 byte order mark: save it "
                               "without one"
                             : "");
}

/* Add one token (`--name=value`, `--name`, `-name=value`, or a value),
 * expanding flag files in place. */
static int expand(flag_list *l, const char *text, size_t len, const char *file, kvshard__mark mark,
                  int depth)
{
    flag f = {text, len, false, l->ended, text, 0, NULL, 0, file, mark};
    if (l->flagfile_waits) {
        /* The token after a bare --flagfile is its file, as written. */
        flag named = l->flagfile;
        named.value = text;
        named.value_len = len;
        l->flagfile_waits = false;
        return read_flagfile(l, &named, l->flagfile_depth);
    }
    if (!l->ended && len == 2 && text[0] == '-' && text[1] == '-') {
        l->ended = true; /* as gflags and argparse read `--` */
        return KVSHARD_OK;
    }
    size_t dashes =
        !l->ended && len > 1 && text[0] == '-' ? (len > 2 && text[1] == '-' ? 2 : 1) : 0;
    if (dashes > 0) {
        f.is_flag = true;
        f.name = text + dashes;
        const char *eq = memchr(f.name, '=', len - dashes);
        f.name_len = eq ? (size_t)(eq - f.name) : len - dashes;
        if (eq) {
            f.value = eq + 1;
            f.value_len = len - dashes - f.name_len - 1;
        }
        if (kvshard_text__is(f.name, f.name_len, "flagfile")) {
            if (eq)
                return read_flagfile(l, &f, depth);
            l->flagfile_waits = true;
            l->flagfile = f;
            l->flagfile_depth = depth;
            return KVSHARD_OK;
        }
    }
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
        kvshard_alloc__free(&l->alloc, l->texts[i]);
    kvshard_alloc__free(&l->alloc, l->texts);
    kvshard_alloc__free(&l->alloc, l->items);
    kvshard_alloc__free(&l->alloc, l->skips);
}

/* A token a flag may take as its value: no flag, and before any `--`. */
static bool is_value(const flag *f)
{
    return f && !f->is_flag && !f->after_end;
}

/* Keep what --ignore_unknown_flags skipped: a flag as written up to its
 * value ("--max-model-len"), an argument as it is. */
static int skip(flag_list *l, const flag *f)
{
    void *items = l->skips;
    int rc = grow(l, &items, &l->skip_cap, l->skip_count, sizeof *l->skips);
    l->skips = items;
    if (rc)
        return rc;
    skip_entry *k = &l->skips[l->skip_count++];
    k->text = f->text;
    k->len = f->is_flag ? (size_t)(f->name - f->text) + f->name_len : f->len;
    k->positional = !f->is_flag;
    return KVSHARD_OK;
}

static bool name_is(const flag *f, const char *name)
{
    return f->is_flag && kvshard_text__is(f->name, f->name_len, name);
}

/* The kvshard name of --ignore_unknown_flags in either spelling. */
static bool is_ignore_flag(const flag *f)
{
    return name_is(f, "ignore_unknown_flags") || name_is(f, "ignore-unknown-flags");
}

/* The key a flag names, with --name (true), --noname (gflags) and --no-name
 * (argparse) for booleans; *negated when the no- form gave it. */
static kvshard__deploy_key key_of(const flag *f, const kvshard__profile *profile, bool *negated)
{
    kvshard__deploy_key key = kvshard_options__key_lookup(f->name, f->name_len, profile);
    *negated = false;
    if (kvshard__key_known(key) || f->value)
        return key;
    bool argparse = profile->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE;
    size_t skip = 0;
    if (argparse && f->name_len > 3 && f->name[0] == 'n' && f->name[1] == 'o' &&
        (f->name[2] == '-' || f->name[2] == '_'))
        skip = 3;
    else if (!argparse && f->name_len > 2 && f->name[0] == 'n' && f->name[1] == 'o')
        skip = 2;
    if (skip) {
        kvshard__deploy_key neg =
            kvshard_options__key_lookup(f->name + skip, f->name_len - skip, profile);
        if (kvshard__key_known(neg) && kvshard__key_is_bool(neg)) {
            *negated = true;
            return neg;
        }
    }
    return key;
}

/* The name a flag goes by once '-' and '_' are alike: two flags with the
 * same one are one spelling, the later winning. */
static bool same_spelling(const flag *a, const flag *b)
{
    if (a->name_len != b->name_len)
        return false;
    for (size_t i = 0; i < a->name_len; i++) {
        char x = a->name[i] == '-' ? '_' : a->name[i], y = b->name[i] == '-' ? '_' : b->name[i];
        if (x != y)
            return false;
    }
    return true;
}

/* A flag applied, for the check that two spellings of one input agree. */
typedef struct applied {
    kvshard__deploy_key key;
    const flag *f;
    const char *value;
    size_t value_len;
    size_t next; /* the next flag applied to the same input, index + 1; 0: none */
} applied;

/* The flags applied to one input, as indexes + 1 into the list of applied
 * flags (0: none). */
typedef struct spelled {
    size_t first; /* the first */
    size_t other; /* the first of a spelling other than first's */
    size_t last;  /* the last, which the next one is linked after */
} spelled;

/* The row of the input `key` sets in the table of spellings: kvshard's
 * options, then the profile's own settings, *row. False for a setting
 * outside the profile's table (not reached: under an argparse profile
 * kvshard_options__key_lookup gives a flag a setting of that table). */
static bool input_row(size_t *row, const kvshard__profile *p, kvshard__deploy_key key)
{
    *row = (size_t)key.option;
    if (key.option != KVSHARD__OPT_COUNT)
        return true;
    for (const kvshard_profile__input *in = p->dialect.inputs; in && in->def.name; in++, (*row)++) {
        if (in == key.setting)
            return true;
    }
    return false;
}

/* The rows of that table: one per option and one per setting of `p`. */
static size_t input_rows(const kvshard__profile *p)
{
    size_t n = KVSHARD__OPT_COUNT;
    for (const kvshard_profile__input *in = p->dialect.inputs; in && in->def.name; in++)
        n++;
    return n;
}

/* The value `text` gives `key`, parsed as the flag would set it. */
static bool parse_for(kvshard_value *out, kvshard__deploy_key key, const char *text, size_t len)
{
    kvshard_value__def def = key.option != KVSHARD__OPT_COUNT
                                 ? *kvshard_options__option_def(key.option)
                                 : key.setting->def;
    if (key.words && def.type == KVSHARD__VT_WORD)
        def.words = key.words;
    return kvshard_value__parse(out, &def, text, len, KVSHARD__VALUE_FLAG, "",
                                kvshard_error__no_mark, NULL) == KVSHARD_OK;
}

/* Refuse `now` when the earlier flag `a` of another spelling gives its
 * input another value, naming both. */
static int agree(flag_list *l, const applied *a, const applied *now)
{
    kvshard_flags__compared++;
    kvshard_value x, y;
    const kvshard_value__def *def = now->key.option != KVSHARD__OPT_COUNT
                                        ? kvshard_options__option_def(now->key.option)
                                        : &now->key.setting->def;
    if (parse_for(&x, a->key, a->value, a->value_len) &&
        parse_for(&y, now->key, now->value, now->value_len) && kvshard_value__equal(def, x, y))
        return KVSHARD_OK;
    char first[96], second[96];
    kvshard_error__excerpt(first, sizeof first, a->value, a->value_len, 48);
    kvshard_error__excerpt(second, sizeof second, now->value, now->value_len, 48);
    return flag_fail(l, now->f, KVSHARD_EDUPKEY,
                     "--%.*s %s and --%.*s %s give %s two values; give one of them",
                     (int)(a->f->name_len > 64 ? 64 : a->f->name_len), a->f->name, first,
                     (int)(now->f->name_len > 64 ? 64 : now->f->name_len), now->f->name, second,
                     kvshard__key_name_of(now->key));
}

/* Under an argparse profile every spelling of one input must give it one
 * value: --max-num-seqs 16 beside --max_seqs=8 is refused, naming both.
 * `now` is refused beside the earliest flag applied to its input before it
 * under another spelling that gives another value.
 *
 * Every flag before `now` passed this check, so once an input has two
 * spellings all its flags agree, and the earliest flag of a spelling other
 * than now's (the input's first, or the first of another spelling than the
 * first's) agrees with now exactly when all of them do. Until then the
 * input's flags share one spelling and may differ (the last wins): those
 * kept are compared in turn, once, when a second spelling comes. An
 * engine's flag file may repeat one flag tens of thousands of times: each
 * costs a comparison or two, not one per flag before it
 * (docs/performance.md). */
static int check_spellings(flag_list *l, const applied *done, const spelled *input,
                           const applied *now)
{
    if (!input->first)
        return KVSHARD_OK;
    kvshard_flags__compared++;
    bool first_spelling = same_spelling(done[input->first - 1].f, now->f);
    if (input->other)
        return agree(l, &done[(first_spelling ? input->other : input->first) - 1], now);
    if (first_spelling)
        return KVSHARD_OK;
    int rc = KVSHARD_OK;
    for (size_t at = input->first; at && rc == KVSHARD_OK; at = done[at - 1].next)
        rc = agree(l, &done[at - 1], now);
    return rc;
}

/* Whether the check needs the flag `now`, just applied, again: the first
 * flag of its input and the first of a second spelling; once the input has
 * two spellings, no more; before that, a flag unless it repeats the last
 * one kept, spelling and value (that one, earlier, gives the same answer).
 * So the list follows the values an input was given, not how often. */
static bool spelled_keeps(const spelled *input, const applied *done, const applied *now)
{
    if (!input->first)
        return true;
    if (input->other)
        return false;
    const applied *last = &done[input->last - 1];
    return !same_spelling(last->f, now->f) || last->value_len != now->value_len ||
           memcmp(last->value, now->value, now->value_len) != 0;
}

/* Link the flag applied at index + 1 `at` into its input's row. */
static void spelled_add(spelled *input, applied *done, size_t at)
{
    if (!input->first)
        input->first = at;
    else if (!input->other && !same_spelling(done[input->first - 1].f, done[at - 1].f))
        input->other = at;
    if (input->last)
        done[input->last - 1].next = at;
    input->last = at;
}

/* Whether profile `p` reads the flag: an option every profile takes, or an
 * input of its own (not one it only accepts). */
static bool reads_flag(const kvshard__profile *p, const flag *f)
{
    bool negated;
    kvshard__deploy_key key = key_of(f, p, &negated);
    return kvshard__key_known(key) &&
           (key.option != KVSHARD__OPT_COUNT ||
            kvshard_profiles__input_index(p, key.setting->def.name) >= 0);
}

/* A profile other than `mine` that reads the flag, or NULL. */
static const kvshard__profile *owner_of(const flag *f, const kvshard__profile *mine)
{
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        if (*p != mine && reads_flag(*p, f))
            return *p;
    }
    return NULL;
}

/* The flag of `profile` nearest to the unknown `f`, written as `f` was
 * (its dashes; under argparse its '-' or '_'), into `out`. */
static bool nearest_flag(char *out, size_t cap, const flag_list *l, const flag *f,
                         const kvshard__profile *profile)
{
    bool argparse = profile->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE;
    kvshard_options__nearest n;
    kvshard_options__nearest_begin(&n, f->name, f->name_len, argparse);
    kvshard_options__offer_flags(&n, profile);
    kvshard_options__nearest_offer(&n, "flagfile");
    kvshard_options__nearest_offer(&n, "ignore_unknown_flags");
    for (const char *const *k = l->also_known; k && *k; k++)
        kvshard_options__nearest_offer(&n, *k);
    const char *found = kvshard_options__nearest_found(&n);
    if (!found)
        return false;
    bool dash = memchr(f->name, '-', f->name_len) != NULL;
    bool under = memchr(f->name, '_', f->name_len) != NULL;
    int dashes = (int)(f->name - f->text);
    snprintf(out, cap, "%.*s%s", dashes, f->text, found);
    for (char *c = out + dashes; argparse && dash != under && *c; c++) {
        if (*c == '-' || *c == '_')
            *c = dash ? '-' : '_';
    }
    return true;
}

/* An unknown flag: the profile that reads it, else the nearest flag the
 * profile has when it is near enough to be a typo. Never a switch that
 * would plan without it. */
static int unknown_flag(flag_list *l, const flag *f, const kvshard__profile *profile)
{
    char shown[96], near[80];
    kvshard_error__excerpt(shown, sizeof shown, f->name, f->name_len, 64);
    const kvshard__profile *owner = owner_of(f, profile);
    if (owner)
        return flag_fail(l, f, KVSHARD_EUNKNOWNKEY,
                         "unknown flag --%s: it is a flag of the %s profile, and the engine "
                         "profile is %s (--engine=%s reads it)",
                         shown, owner->name, profile->name, owner->name);
    if (nearest_flag(near, sizeof near, l, f, profile))
        return flag_fail(l, f, KVSHARD_EUNKNOWNKEY, "unknown flag --%s: did you mean %s?", shown,
                         near);
    return flag_fail(l, f, KVSHARD_EUNKNOWNKEY,
                     "unknown flag --%s: the %s profile has no such flag", shown, profile->name);
}

/* The flag that names the engine, if any: the last one wins. Its value is
 * after '=' or the next token. */
static const flag *engine_flag(const flag_list *l, const flag **value_token)
{
    const flag *found = NULL;
    *value_token = NULL;
    for (size_t i = 0; i < l->count; i++) {
        if (!name_is(&l->items[i], "engine"))
            continue;
        found = &l->items[i];
        const flag *next = i + 1 < l->count ? &l->items[i + 1] : NULL;
        *value_token = !found->value && is_value(next) ? next : NULL;
    }
    return found;
}

static int needs_value(flag_list *l, const flag *f)
{
    return flag_fail(l, f, KVSHARD_ETYPE, "--%.*s needs a value (--%.*s=VALUE)",
                     (int)f->name_len, f->name, (int)f->name_len, f->name);
}

/* `--is_draft false`: a boolean given bare is true, and its value apart
 * would be an argument, so the flag would say the opposite of what it
 * meant. Refused, even when arguments are skipped. */
static int bool_apart(flag_list *l, const flag *f, const flag *value)
{
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, value->text, value->len, 16);
    return flag_fail(l, f, KVSHARD_ETYPE,
                     "--%.*s %s: a boolean flag takes its value after '=' (--%.*s=%s); bare, it "
                     "is true",
                     (int)f->name_len, f->name, shown, (int)f->name_len, f->name, shown);
}

static int apply(flag_list *l, const kvshard__deployment_values *into)
{
    kvshard_options *options = into->options;
    char buf[ORIGIN_MAX];
    /* The engine profile first, wherever --engine stands: it decides which
     * flag names exist and how they are written. */
    const flag *value_token;
    const flag *e = engine_flag(l, &value_token);
    if (e) {
        const char *value = e->value ? e->value : value_token ? value_token->text : NULL;
        size_t len = e->value ? e->value_len : value_token ? value_token->len : 0;
        if (!value)
            return needs_value(l, e);
        kvshard__deploy_key key = kvshard_options__key_lookup("engine", 6, NULL);
        int rc = kvshard_deploy__deployment_assign(into, key, value, len, KVSHARD__VALUE_FLAG,
                                            origin_of(buf, sizeof buf, e), value_mark(e), true,
                                            l->err);
        if (rc)
            return rc;
    }
    const kvshard__profile *profile = kvshard_profiles__of(options->engine);
    bool argparse = profile->dialect.flag_style == KVSHARD_PROFILE__ARGPARSE;
    applied *done = NULL;
    size_t done_count = 0, done_cap = 0;
    /* The flags applied to each option and setting, a row each. */
    spelled *inputs = NULL;
    if (argparse) {
        size_t rows = input_rows(profile);
        if (!(inputs = kvshard_alloc__bytes(&l->alloc, rows, sizeof *inputs)))
            return nomem(l);
        memset(inputs, 0, rows * sizeof *inputs);
    }
    int rc = KVSHARD_OK;
    const flag *bare_bool = NULL; /* a boolean flag just given without a value */
    for (size_t i = 0; i < l->count && rc == KVSHARD_OK; i++) {
        const flag *f = &l->items[i];
        const flag *after_bool = bare_bool;
        bare_bool = NULL;
        if (!f->is_flag) {
            if (after_bool && is_value(f) &&
                kvshard_value__bool_text(f->text, f->len, KVSHARD__VALUE_FLAG) >= 0)
                rc = bool_apart(l, after_bool, f);
            else
                rc = l->ignore_unknown ? skip(l, f) : not_a_flag(l, f);
            continue;
        }
        const flag *next = i + 1 < l->count ? &l->items[i + 1] : NULL;
        if (name_is(f, "engine")) {
            if (!f->value && is_value(next))
                i++; /* its value, applied above */
            continue;
        }
        bool negated;
        kvshard__deploy_key key = key_of(f, profile, &negated);
        if (!kvshard__key_known(key)) {
            if (!l->ignore_unknown) {
                rc = unknown_flag(l, f, profile);
                break;
            }
            /* --port 8000: the value of an unknown flag goes with it. */
            rc = skip(l, f);
            if (!f->value && is_value(next))
                i++;
            continue;
        }
        const char *value = f->value;
        size_t value_len = f->value_len;
        kvshard__mark mark = value_mark(f);
        if (negated) {
            value = "false";
            value_len = 5;
        } else if (!value && kvshard__key_is_bool(key)) {
            value = "true";
            value_len = 4;
            bare_bool = f;
        } else if (!value) {
            /* A flag that takes a value takes the next token: under
             * argparse whatever it starts with, under gflags when it is not
             * a flag itself; never one after `--`. */
            if (!next || next->after_end || (!argparse && next->is_flag)) {
                rc = needs_value(l, f);
                break;
            }
            value = next->text;
            value_len = next->len;
            if (next->file)
                mark = next->mark;
            i++;
        }
        applied now = {key, f, value, value_len, 0};
        size_t row = 0;
        if (argparse && !input_row(&row, profile, key)) { /* not reached: see input_row() */
            rc = flag_fail(l, f, KVSHARD_EINVAL, "--%.*s sets no input of the %s profile",
                           (int)(f->name_len > 64 ? 64 : f->name_len), f->name, profile->name);
            break;
        }
        if (argparse && (rc = check_spellings(l, done, &inputs[row], &now)) != 0)
            break;
        const char *origin = origin_of(buf, sizeof buf, f);
        rc = kvshard_deploy__deployment_assign(into, key, value, value_len, KVSHARD__VALUE_FLAG,
                                               origin, mark, true, l->err);
        if (rc || !argparse || !spelled_keeps(&inputs[row], done, &now))
            continue;
        void *items = done;
        if ((rc = grow(l, &items, &done_cap, done_count, sizeof *done)) != 0)
            break;
        done = items;
        done[done_count++] = now;
        spelled_add(&inputs[row], done, done_count);
    }
    kvshard_alloc__free(&l->alloc, done);
    kvshard_alloc__free(&l->alloc, inputs);
    return rc;
}

/* The slot of a skipped argument: the keyed hash of its text (the flags
 * are the caller's to choose, base/hash.h), and whether it is positional. */
static size_t skip_slot(const kvshard__hash_key *key, const char *text, size_t len,
                        bool positional, size_t slots)
{
    return ((size_t)kvshard_hash__of(key, text, len) ^ (positional ? slots / 2 : 0)) & (slots - 1);
}

/* The deployment's skipped arguments with this call's added, each once, in
 * a new array (the old one's texts moved over): made before anything of the
 * deployment changes, so a failure leaves it as it was. An engine's flag
 * file may skip tens of thousands of flags, so each is found again through
 * a hash table rather than by comparing it with every one before. */
static int merge_skipped(kvshard__skipped **out, size_t *out_count, flag_list *l,
                         const kvshard_deployment *dep, kvshard_engine engine)
{
    *out = NULL;
    *out_count = dep->skipped_count;
    if (l->skip_count == 0)
        return KVSHARD_OK;
    size_t cap = dep->skipped_count + l->skip_count, n = dep->skipped_count, slots = 16;
    while (slots < 2 * cap)
        slots *= 2;
    kvshard__skipped *all = kvshard_alloc__bytes(&l->alloc, cap, sizeof *all);
    size_t *table = kvshard_alloc__bytes(&l->alloc, slots, sizeof *table); /* index + 1; 0: empty */
    if (!all || !table) {
        kvshard_alloc__free(&l->alloc, all);
        kvshard_alloc__free(&l->alloc, table);
        return nomem(l);
    }
    memset(table, 0, slots * sizeof *table);
    kvshard__hash_key key = kvshard_hash__key(kvshard_hash__seed(table, cap));
    if (n)
        memcpy(all, dep->skipped, n * sizeof *all);
    int rc = KVSHARD_OK;
    for (size_t i = 0; i < cap && rc == KVSHARD_OK; i++) {
        bool old = i < dep->skipped_count;
        const skip_entry *k = old ? NULL : &l->skips[i - dep->skipped_count];
        const char *text = old ? all[i].text : k->text;
        size_t len = old ? strlen(text) : k->len;
        bool positional = old ? all[i].positional : k->positional;
        size_t at = skip_slot(&key, text, len, positional, slots);
        bool seen = false;
        for (; table[at] && !seen; at = (at + 1) & (slots - 1)) {
            kvshard_hash__probes++;
            const kvshard__skipped *e = &all[table[at] - 1];
            seen = e->positional == positional && kvshard_text__is(text, len, e->text);
        }
        if (seen)
            continue;
        if (old) {
            table[at] = i + 1;
            continue;
        }
        char *copy = kvshard_alloc__strndup(&l->alloc, text, len);
        if (!copy) {
            rc = nomem(l);
            break;
        }
        all[n].text = copy;
        all[n].positional = positional;
        all[n].engine = engine;
        table[at] = ++n;
    }
    kvshard_alloc__free(&l->alloc, table);
    if (rc) {
        for (size_t j = dep->skipped_count; j < n; j++)
            kvshard_alloc__free(&l->alloc, all[j].text);
        kvshard_alloc__free(&l->alloc, all);
        return rc;
    }
    *out = all;
    *out_count = n;
    return KVSHARD_OK;
}

int kvshard_deployment_apply_args(kvshard_deployment *deployment, size_t count,
                                  const char *const *args, unsigned flags, kvshard_error *err)
{
    kvshard_args_options o = KVSHARD_ARGS_OPTIONS_INIT;
    o.flags = flags;
    return kvshard_deployment_apply_args_with(deployment, count, args, &o, err);
}

/* The model's weights hook, passed on to the caller's on_file. */
static void weights_read(void *user, const char *path, kvshard__file_id id)
{
    (void)id;
    const kvshard_deployment *d = user;
    d->on_file(d->on_file_user, KVSHARD_FILE_WEIGHTS, path);
}

static void flag_file_read(void *user, const char *path)
{
    const kvshard_args_options *o = user;
    o->on_file(o->on_file_user, KVSHARD_FILE_FLAGS, path);
}

/* The files the deployment was read from, reported before its flags. */
static void report_sources(const kvshard_deployment *d, const kvshard_args_options *o)
{
    if (!o->on_file)
        return;
    if (d->source)
        o->on_file(o->on_file_user, KVSHARD_FILE_DEPLOYMENT, d->source);
    if (d->model && d->model->source)
        o->on_file(o->on_file_user, KVSHARD_FILE_MODEL, d->model->source);
}

/* After a call that applied: its on_file stays with the deployment, for
 * the weights files its plans open. */
static void keep_on_file(kvshard_deployment *d, const kvshard_args_options *o)
{
    d->on_file = o->on_file;
    d->on_file_user = o->on_file_user;
    if (d->model) {
        d->model->on_weights_file = o->on_file ? weights_read : NULL;
        d->model->on_weights_file_user = o->on_file ? d : NULL;
    }
}

int kvshard_deployment_apply_args_with(kvshard_deployment *deployment, size_t count,
                                       const char *const *args,
                                       const kvshard_args_options *args_options, kvshard_error *err)
{
    kvshard_args_options o = KVSHARD_ARGS_OPTIONS_INIT;
    if (args_options) {
        int rc = kvshard_call__size(err, "kvshard_args_options", args_options->size,
                                    sizeof *args_options, "KVSHARD_ARGS_OPTIONS_INIT");
        if (rc)
            return rc;
        o = *args_options;
    }
    unsigned flags = o.flags;
    const char *const *also_known = o.caller_flags;
    kvshard_error__reset(err);
    if (!deployment || (count && !args))
        return kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                             "deployment and args must not be NULL");
    flag_list l;
    memset(&l, 0, sizeof l);
    l.alloc = deployment->alloc;
    l.err = err;
    l.ignore_unknown = (flags & KVSHARD_ARGS_IGNORE_UNKNOWN) != 0;
    report_sources(deployment, &o);
    l.on_file = o.on_file ? flag_file_read : NULL;
    l.user = &o;
    l.also_known = also_known;
    int rc = KVSHARD_OK;
    for (size_t i = 0; i < count && rc == KVSHARD_OK; i++) {
        if (!args[i]) {
            rc = kvshard_error__fail(err, KVSHARD_EINVAL, "", kvshard_error__no_mark,
                                     "args[%zu] is NULL", i);
            break;
        }
        rc = expand(&l, args[i], strlen(args[i]), NULL, kvshard_error__no_mark, 0);
    }
    if (rc == KVSHARD_OK && l.flagfile_waits)
        rc = flag_fail(&l, &l.flagfile, KVSHARD_ERANGE, "--flagfile needs a file name");
    /* --ignore_unknown_flags (or =true, =false) anywhere applies to all. */
    size_t kept = 0;
    for (size_t i = 0; rc == KVSHARD_OK && i < l.count; i++) {
        const flag *f = &l.items[i];
        if (!is_ignore_flag(f)) {
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
        kvshard_options options;
        memcpy(&options, &deployment->options, sizeof options); /* by bytes: see below */
        kvshard__option_site sites[KVSHARD__OPT_COUNT];
        memcpy(sites, deployment->sites, sizeof sites);
        kvshard__lists lists = deployment->lists;
        kvshard__explore_keys explore = deployment->explore;
        kvshard_settings *settings = kvshard_settings__copy(deployment->settings, &l.alloc);
        kvshard__deployment_values into = {&options, &explore, sites, settings, &lists};
        kvshard__skipped *skipped = NULL;
        size_t skipped_count = 0;
        rc = settings ? apply(&l, &into)
                      : kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                            "out of memory");
        if (rc == KVSHARD_OK)
            rc = merge_skipped(&skipped, &skipped_count, &l, deployment, options.engine);
        if (rc == KVSHARD_OK) {
            /* Copied by bytes, so the options handed out compare equal byte
             * for byte when nothing changed. */
            memcpy(&deployment->options, &options, sizeof options);
            /* The list entries are the deployment's. */
            deployment->options.pp_partition = NULL;
            deployment->options.weights_per_rank = NULL;
            deployment->lists = lists;
            deployment->explore = explore;
            memcpy(deployment->sites, sites, sizeof sites);
            kvshard_settings *old = deployment->settings;
            deployment->settings = settings;
            settings = old;
            if (skipped) {
                kvshard_alloc__free(&l.alloc, deployment->skipped);
                deployment->skipped = skipped;
                deployment->skipped_count = skipped_count;
            }
            keep_on_file(deployment, &o);
        }
        kvshard_settings_free(settings);
    }
    free_list(&l);
    return rc;
}

size_t kvshard_deployment_ignored_flags(const char **out, size_t cap,
                                        const kvshard_deployment *deployment)
{
    if (!deployment)
        return 0;
    for (size_t i = 0; out && i < cap && i < deployment->skipped_count; i++)
        out[i] = deployment->skipped[i].text;
    return deployment->skipped_count;
}

/* ---- the flags_ignored warning ---------------------------------------------------------- */

typedef struct message {
    char *text;
    size_t cap;
    size_t used;
} message;

static void say(message *m, const char *fmt, ...) KVSHARD__PRINTF(2, 3);

static void say(message *m, const char *fmt, ...)
{
    if (m->used >= m->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(m->text + m->used, m->cap - m->used, fmt, ap);
    va_end(ap);
    m->used += n > 0 ? (size_t)n : 0;
    if (m->used >= m->cap)
        m->used = m->cap - 1;
}

/* The profile other than the one in force that reads the most of the
 * skipped flags, and how many it reads. */
static const kvshard__profile *best_reader(size_t *reads, const kvshard_deployment *dep)
{
    const kvshard__profile *best = NULL;
    *reads = 0;
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        size_t n = 0;
        for (size_t i = 0; i < dep->skipped_count; i++) {
            const kvshard__skipped *k = &dep->skipped[i];
            const char *name = k->text;
            while (*name == '-')
                name++;
            flag f;
            memset(&f, 0, sizeof f);
            f.text = k->text;
            f.len = strlen(k->text);
            f.is_flag = true;
            f.name = name;
            f.name_len = strlen(name);

            const kvshard__profile *mine = kvshard_profiles__of(k->engine);
            n += !k->positional && *p != mine && reads_flag(*p, &f);
        }
        if (n > *reads) {
            *reads = n;
            best = *p;
        }
    }
    return best;
}

void kvshard_flags__ignored_message(char *buf, size_t cap, const kvshard_deployment *dep)
{
    message m = {buf, cap, 0};
    if (cap)
        buf[0] = '\0';
    size_t flags = 0, args = 0;
    bool one_engine = true;
    for (size_t i = 0; i < dep->skipped_count; i++) {
        flags += !dep->skipped[i].positional;
        args += dep->skipped[i].positional;
        one_engine &= dep->skipped[i].engine == dep->skipped[0].engine;
    }
    say(&m, "skipped ");
    if (flags)
        say(&m, "%zu flag%s", flags, flags == 1 ? "" : "s");
    if (args)
        say(&m, "%s%zu argument%s", flags ? " and " : "", args, args == 1 ? "" : "s");
    if (one_engine)
        say(&m,
            " the %s profile does not read: ", kvshard_profiles__of(dep->skipped[0].engine)->name);
    else
        say(&m, " that kvshard did not read: ");
    size_t reads;
    const kvshard__profile *reader = best_reader(&reads, dep);
    char hint[96] = "";
    if (reader && reads == flags && flags == 2)
        snprintf(hint, sizeof hint, "; --engine=%s reads both", reader->name);
    else if (reader && reads == flags && flags > 2)
        snprintf(hint, sizeof hint, "; --engine=%s reads all %zu", reader->name, reads);
    else if (reader && reads == flags)
        snprintf(hint, sizeof hint, "; --engine=%s reads it", reader->name);
    else if (reader)
        snprintf(hint, sizeof hint, "; --engine=%s reads %zu of them", reader->name, reads);
    /* Names as long as they fit, then how many there are in all. */
    size_t room = cap > strlen(hint) + 24 ? cap - strlen(hint) - 24 : 0, shown = 0;
    for (size_t i = 0; i < dep->skipped_count; i++) {
        char name[80];
        const char *text = dep->skipped[i].text;
        kvshard_error__excerpt(name, sizeof name, text, strlen(text), 48);
        if (m.used + strlen(name) + 2 > room)
            break;
        say(&m, "%s%s", i ? ", " : "", name);
        shown++;
    }
    if (shown < dep->skipped_count)
        say(&m, "%s... (%zu in all)", shown ? ", " : "", dep->skipped_count);
    say(&m, "%s", hint);
}
