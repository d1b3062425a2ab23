/* The kvshard CLI's messages and its output file.
 *
 * A document written with -o never destroys anything: a target that is one
 * of the files the run read is refused before it is opened, and a regular
 * file is replaced by renaming a complete temporary file over it, so a run
 * that fails, is interrupted or hits a full disk leaves the old file as it
 * was. FIFOs and devices cannot be replaced and are written directly. */
#define _XOPEN_SOURCE 700 /* POSIX 2008 with realpath */
#include "cli_output.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- messages ------------------------------------------------------------------------------ */

/* Messages are shown as the library shows its own: a control character or
 * a byte that starts no UTF-8 character as \xNN, a character a terminal
 * shows as nothing or as a look-alike blank (or one that reorders the text)
 * as \u{XXXX}; the rest as it is. Text so escaped stays as it is, so the
 * library's messages pass through unchanged. */

/* Rows of first..last code point shown as \u{XXXX}. */
static const struct {
    uint32_t first, last;
} invisible[] = {
    {0x00A0, 0x00A0},   {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x061C, 0x061C},
    {0x115F, 0x1160},   {0x1680, 0x1680},   {0x17B4, 0x17B5},   {0x180B, 0x180F},
    {0x2000, 0x200F},   {0x2028, 0x202F},   {0x205F, 0x206F},   {0x3000, 0x3000},
    {0x3164, 0x3164},   {0xFE00, 0xFE0F},   {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},
    {0xFFF0, 0xFFFB},   {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
};

/* The bytes of the well-formed UTF-8 character at `p`, 0 for none. */
static size_t utf8_length(const unsigned char *p, size_t left)
{
    unsigned char c = p[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        lo = c == 0xE0 ? 0xA0 : lo;  /* overlong */
        hi = c == 0xED ? 0x9F : hi;  /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        lo = c == 0xF0 ? 0x90 : lo;
        hi = c == 0xF4 ? 0x8F : hi;
    } else
        return 0;
    if (left < n || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
    }
    return n;
}

#define WIDEST_ESCAPE 16 /* four \xNN, or \u{XXXXX} */

/* How the character at `p` is shown: its input bytes into *bytes, its
 * escape into `esc` (esc[0] '\0' when it is shown as it is); returns its
 * width in the output. */
static size_t show_char(char *esc, const unsigned char *p, size_t left, size_t *bytes)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = utf8_length(p, left);
    bool control = n == 1 ? p[0] < 0x20 || p[0] == 0x7F : n == 2 && p[0] == 0xC2 && p[1] < 0xA0;
    esc[0] = '\0';
    if (n == 0 || control) {
        size_t count = n > 1 ? n : 1;
        for (size_t k = 0; k < count; k++)
            snprintf(esc + 4 * k, 5, "\\x%c%c", hex[p[k] >> 4], hex[p[k] & 0xF]);
        *bytes = count;
        return 4 * count;
    }
    *bytes = n;
    if (n == 1)
        return 1;
    uint32_t cp = p[0] & (n == 2 ? 0x1Fu : n == 3 ? 0x0Fu : 0x07u);
    for (size_t i = 1; i < n; i++)
        cp = cp << 6 | (p[i] & 0x3Fu);
    for (size_t i = 0; i < sizeof invisible / sizeof invisible[0]; i++) {
        if (cp >= invisible[i].first && cp <= invisible[i].last)
            return (size_t)snprintf(esc, WIDEST_ESCAPE + 1, "\\u{%04X}", (unsigned)cp);
    }
    return n;
}

/* `text` escaped into `out`, whole characters only, NUL-terminated; returns
 * the bytes written. */
static size_t escape(char *out, size_t cap, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < len;) {
        char esc[WIDEST_ESCAPE + 1];
        size_t n, w = show_char(esc, p + i, len - i, &n);
        if (o + w >= cap)
            break;
        memcpy(out + o, esc[0] ? esc : (const char *)p + i, w);
        o += w;
        i += n;
    }
    out[o] = '\0';
    return o;
}

void kvshard_cli__shorten(char *out, size_t cap, const char *text)
{
    if (cap == 0)
        return;
    size_t len = strlen(text), total = 0;
    const unsigned char *p = (const unsigned char *)text;
    char esc[WIDEST_ESCAPE + 1];
    for (size_t i = 0, n; i < len; i += n)
        total += show_char(esc, p + i, len - i, &n);
    if (total < cap || cap < 8) {
        escape(out, cap, text, len);
        return;
    }
    /* The tail names the file; "..." stands for the head. */
    size_t room = cap - 4, shown = total, i = 0;
    while (i < len && shown > room) {
        size_t n;
        shown -= show_char(esc, p + i, len - i, &n);
        i += n;
    }
    memcpy(out, "...", 3);
    escape(out + 3, cap - 3, text + i, len - i);
}

void kvshard_cli__excerpt(char *out, size_t cap, const char *text, size_t max)
{
    size_t len = strlen(text), take = len;
    if (take > max) {
        take = max;
        while (take > 0 && ((unsigned char)text[take] & 0xC0) == 0x80)
            take--; /* the start of a character */
    }
    size_t o = escape(out, cap > 3 ? cap - 3 : cap, text, take);
    if (take < len && o + 4 <= cap)
        memcpy(out + o, "...", 4);
}

void kvshard_cli__say(const char *fmt, ...)
{
    char raw[2048];
    char shown[4 * sizeof raw + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof raw ? (size_t)n : sizeof raw - 1;
    size_t m = escape(shown, sizeof shown - 1, raw, len);
    shown[m] = '\n';
    fwrite(shown, 1, m + 1, stderr);
}

/* ---- inputs -------------------------------------------------------------------------------- */

/* Append a file: the first note of a file is the one a refusal names. */
static void note(kvshard_cli__inputs *in, const char *what, const char *path, kvshard_cli__file_id id)
{
    if (in->count == in->cap) {
        size_t cap = in->cap ? 2 * in->cap : 16;
        kvshard_cli__input *grown = realloc(in->items, cap * sizeof *grown);
        if (!grown) {
            in->out_of_memory = true;
            return;
        }
        in->items = grown;
        in->cap = cap;
    }
    char shown[KVSHARD_ERROR_SOURCE_MAX];
    kvshard_cli__shorten(shown, sizeof shown, path);
    char *copy = strdup(shown);
    if (!copy) {
        in->out_of_memory = true;
        return;
    }
    kvshard_cli__input *item = &in->items[in->count++];
    item->id = id;
    item->what = what;
    item->shown = copy;
}

static const char flag_file[] = "the flag file";

void kvshard_cli__input_add(kvshard_cli__inputs *in, const char *what, const char *path)
{
    struct stat st;
    if (!path || stat(path, &st) != 0)
        return;
    kvshard_cli__file_id id = {(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    note(in, what, path, id);
}

void kvshard_cli__input_read(void *user, kvshard_file_role role, const char *path)
{
    /* A plan reads the weights once, report's plan and comparison twice:
     * every read is noted, the first names the file. */
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    const char *what = role == KVSHARD_FILE_DEPLOYMENT ? "the CONFIG file"
                       : role == KVSHARD_FILE_MODEL    ? "the model file"
                       : role == KVSHARD_FILE_FLAGS    ? flag_file
                       : strcmp(name, "model.safetensors.index.json") == 0
                           ? "the safetensors index"
                           : "the safetensors file";
    kvshard_cli__input_add(user, what, path);
}

bool kvshard_cli__is_flagfile(const kvshard_cli__inputs *in, const char *source)
{
    /* An error's source is the path shortened for messages, so it is
     * matched against the flag files' names shortened the same way (note),
     * not looked up on disk: a shortened path names no file. */
    if (!source || !source[0])
        return false;
    for (size_t i = 0; in && i < in->count; i++) {
        if (in->items[i].what == flag_file && strcmp(in->items[i].shown, source) == 0)
            return true;
    }
    return false;
}

void kvshard_cli__inputs_free(kvshard_cli__inputs *in)
{
    for (size_t i = 0; i < in->count; i++)
        free(in->items[i].shown);
    free(in->items);
    memset(in, 0, sizeof *in);
}

static const kvshard_cli__input *input_at(const kvshard_cli__inputs *in, const struct stat *st)
{
    for (size_t i = 0; in && i < in->count; i++) {
        if (in->items[i].id.dev == (uint64_t)st->st_dev &&
            in->items[i].id.ino == (uint64_t)st->st_ino)
            return &in->items[i];
    }
    return NULL;
}

/* ---- removing the temporary file on a signal ---------------------------------------------- */

/* The one piece of process state: the temporary file to remove if the run
 * is stopped by a signal (interrupt, hang-up, termination, a file size
 * limit) before the file is renamed or removed. */
static char *volatile pending_temp;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGXFSZ};
static struct sigaction saved_actions[sizeof cleanup_signals / sizeof cleanup_signals[0]];
static bool installed[sizeof cleanup_signals / sizeof cleanup_signals[0]];

static void remove_pending(int sig)
{
    char *temp = pending_temp;
    if (temp)
        unlink(temp);
    /* SA_RESETHAND restored the default action: die of the same signal. */
    raise(sig);
}

/* Catch the signals that would stop the run; pending_temp is set once the
 * temporary file exists, so a name that was taken is never removed. */
static void arm_cleanup(void)
{
    for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++) {
        struct sigaction old;
        /* A signal the caller ignores stays ignored (a shell's background
         * job ignores SIGINT); SIGXFSZ ignored makes the write fail. */
        if (sigaction(cleanup_signals[i], NULL, &old) != 0 || old.sa_handler == SIG_IGN)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = remove_pending;
        sa.sa_flags = (int)SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        if (sigaction(cleanup_signals[i], &sa, &saved_actions[i]) == 0)
            installed[i] = true;
    }
}

static void disarm_cleanup(void)
{
    for (size_t i = 0; i < sizeof cleanup_signals / sizeof cleanup_signals[0]; i++) {
        if (installed[i])
            sigaction(cleanup_signals[i], &saved_actions[i], NULL);
        installed[i] = false;
    }
    pending_temp = NULL;
}

/* ---- the target ---------------------------------------------------------------------------- */

static int cannot_write(const kvshard_cli__output *o, const char *why)
{
    kvshard_cli__say("kvshard: cannot write %s: %s", o->shown, why);
    return KVSHARD_CLI__EXIT_INVALID;
}

/* The descriptor a path names when it is one of the process's own:
 * /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N. Opening those anew
 * would start a second file offset (and truncate a file the shell opened
 * for appending); writing the descriptor keeps what the caller set up. */
static int descriptor_of(const char *name)
{
    if (strcmp(name, "/dev/stdout") == 0)
        return STDOUT_FILENO;
    if (strcmp(name, "/dev/stderr") == 0)
        return STDERR_FILENO;
    const char *digits = NULL;
    if (strncmp(name, "/dev/fd/", 8) == 0)
        digits = name + 8;
    else if (strncmp(name, "/proc/self/fd/", 14) == 0)
        digits = name + 14;
    if (!digits || *digits < '0' || *digits > '9')
        return -1;
    long fd = 0;
    for (const char *p = digits; *p; p++) {
        if (*p < '0' || *p > '9' || fd > 1000000)
            return -1;
        fd = fd * 10 + (*p - '0');
    }
    return (int)fd;
}

/* As "cannot write %s" names standard output. */
#define STDOUT_SHOWN "to standard output"

static int refuse_input(const kvshard_cli__output *o, const kvshard_cli__input *input)
{
    if (o->is_stdout)
        kvshard_cli__say("kvshard: standard output is the same file as %s %s, which kvshard "
                         "reads; write the output elsewhere",
                         input->what, input->shown);
    else
        kvshard_cli__say("kvshard: refusing to write %s: it is the same file as %s %s, which "
                         "kvshard reads",
                         o->shown, input->what, input->shown);
    kvshard_cli__say("Try 'kvshard --help'.");
    return KVSHARD_CLI__EXIT_USAGE;
}

static const char *kind_of(mode_t mode)
{
    if (S_ISDIR(mode))
        return "it is a directory";
    if (S_ISBLK(mode))
        return "it is a block device; kvshard writes regular files, FIFOs and character devices";
    if (S_ISSOCK(mode))
        return "it is a socket; kvshard writes regular files, FIFOs and character devices";
    return "it is not a regular file, a FIFO or a character device";
}

int kvshard_cli__output_recheck(const kvshard_cli__output *o, const kvshard_cli__inputs *in)
{
    if (in->out_of_memory)
        return cannot_write(o, "out of memory noting the files kvshard read");
    struct stat st;
    bool known = o->how == KVSHARD_CLI__TO_FD ? fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode)
                                              : o->target && stat(o->target, &st) == 0;
    const kvshard_cli__input *input = known ? input_at(in, &st) : NULL;
    return input ? refuse_input(o, input) : 0;
}

static int prepare_fd(kvshard_cli__output *o, int fd, const kvshard_cli__inputs *in)
{
    struct stat st;
    o->how = KVSHARD_CLI__TO_FD;
    o->fd = fd;
    if (fstat(fd, &st) != 0) {
        if (o->is_stdout)
            return 0; /* a closed standard output fails at the first write */
        return cannot_write(o, strerror(errno));
    }
    const kvshard_cli__input *input = S_ISREG(st.st_mode) ? input_at(in, &st) : NULL;
    return input ? refuse_input(o, input) : 0;
}

int kvshard_cli__output_prepare(kvshard_cli__output *o, const char *name,
                                const kvshard_cli__inputs *in)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!name || strcmp(name, "-") == 0) {
        snprintf(o->shown, sizeof o->shown, STDOUT_SHOWN);
        o->is_stdout = true;
        return prepare_fd(o, STDOUT_FILENO, in);
    }
    kvshard_cli__shorten(o->shown, sizeof o->shown, name);
    int fd = descriptor_of(name);
    if (fd >= 0)
        return prepare_fd(o, fd, in);

    struct stat st;
    if (stat(name, &st) != 0) {
        int e = errno;
        if (e != ENOENT)
            return cannot_write(o, strerror(e));
        if (lstat(name, &st) == 0 && S_ISLNK(st.st_mode))
            return cannot_write(o, "it is a symbolic link to a file that does not exist");
        o->how = KVSHARD_CLI__TO_FILE; /* a new file */
        o->target = strdup(name);
        return o->target ? 0 : cannot_write(o, strerror(ENOMEM));
    }
    /* Any path to an input, through a hard link, a symbolic link or `..`,
     * ends at its device and inode. */
    const kvshard_cli__input *input = input_at(in, &st);
    if (input)
        return refuse_input(o, input);
    if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
        o->how = KVSHARD_CLI__TO_DEVICE;
        o->target = strdup(name);
        return o->target ? 0 : cannot_write(o, strerror(ENOMEM));
    }
    if (!S_ISREG(st.st_mode))
        return cannot_write(o, kind_of(st.st_mode));
    /* A symbolic link stays one: the file it leads to is replaced. */
    struct stat lst;
    bool link = lstat(name, &lst) == 0 && S_ISLNK(lst.st_mode);
    o->how = KVSHARD_CLI__TO_FILE;
    o->target = link ? realpath(name, NULL) : strdup(name);
    if (!o->target)
        return cannot_write(o, strerror(errno));
    o->keep_mode = true;
    o->mode = st.st_mode & 07777;
    return 0;
}

/* A name no other file in the directory has yet, ".TARGET.kvshard-XXXXXX",
 * tried with O_EXCL so that nothing there is ever opened but a new file. */
static int create_temp(kvshard_cli__output *o)
{
    const char *slash = strrchr(o->target, '/');
    size_t dir_len = slash ? (size_t)(slash - o->target) + 1 : 0;
    const char *base = slash ? slash + 1 : o->target;
    size_t base_len = strlen(base) > 64 ? 64 : strlen(base);
    size_t cap = dir_len + 1 + base_len + sizeof ".kvshard-XXXXXX";
    char *temp = malloc(cap);
    if (!temp)
        return cannot_write(o, strerror(ENOMEM));
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t x = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
                 (uint64_t)(uintptr_t)temp;
    arm_cleanup();
    for (int attempt = 0; attempt < 100; attempt++) {
        /* splitmix64: a new name on every attempt */
        x += UINT64_C(0x9E3779B97F4A7C15);
        uint64_t z = x;
        z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
        z ^= z >> 31;
        char suffix[7];
        for (int k = 0; k < 6; k++) {
            suffix[k] = alphabet[z % 36];
            z /= 36;
        }
        suffix[6] = '\0';
        snprintf(temp, cap, "%.*s.%.*s.kvshard-%s", (int)dir_len, o->target, (int)base_len, base,
                 suffix);
        /* 0666 less the umask: the mode of any new file. */
        int fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY | O_CLOEXEC, 0666);
        if (fd >= 0) {
            pending_temp = temp;
            o->temp = temp;
            o->fd = fd;
            o->own_fd = true;
            return 0;
        }
        int e = errno;
        if (e == EEXIST)
            continue;
        disarm_cleanup();
        free(temp);
        char why[300];
        char dir[KVSHARD_ERROR_SOURCE_MAX];
        char dir_text[4096];
        snprintf(dir_text, sizeof dir_text, "%.*s", dir_len ? (int)dir_len : 1,
                 dir_len ? o->target : ".");
        kvshard_cli__shorten(dir, sizeof dir, dir_text);
        snprintf(why, sizeof why, "cannot create a temporary file in %s: %s", dir, strerror(e));
        return cannot_write(o, why);
    }
    disarm_cleanup();
    free(temp);
    return cannot_write(o, "no unused temporary file name in its directory");
}

int kvshard_cli__output_open(kvshard_cli__output *o)
{
    if (o->how == KVSHARD_CLI__TO_FD)
        return 0;
    if (o->how == KVSHARD_CLI__TO_DEVICE) {
        /* A FIFO blocks here until a reader opens it, as with `>`. */
        o->fd = open(o->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (o->fd < 0)
            return cannot_write(o, strerror(errno));
        o->own_fd = true;
        return 0;
    }
    int status = create_temp(o);
    /* A file replaced keeps its permission bits (a 0600 plan stays 0600). */
    if (status == 0 && o->keep_mode && fchmod(o->fd, o->mode) != 0) {
        int e = errno;
        kvshard_cli__output_free(o);
        return cannot_write(o, strerror(e));
    }
    return status;
}

int kvshard_cli__output_write(void *user, const char *data, size_t len)
{
    kvshard_cli__output *o = user;
    while (len > 0) {
        ssize_t n = write(o->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            o->error = n < 0 ? errno : EIO;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void remove_temp(kvshard_cli__output *o)
{
    if (o->temp) {
        unlink(o->temp);
        disarm_cleanup();
        free(o->temp);
        o->temp = NULL;
    }
}

int kvshard_cli__output_finish(kvshard_cli__output *o, int rc)
{
    int e = 0;
    if (rc == KVSHARD_EWRITE)
        e = o->error ? o->error : EIO;
    else if (rc != KVSHARD_OK) {
        kvshard_cli__say("kvshard: %s", kvshard_strerror(rc));
        e = -1;
    }
    /* On disk before it takes the target's name: a crash then leaves the
     * old file or the whole new one. fsync is EINVAL where it means
     * nothing. */
    if (e == 0 && o->how == KVSHARD_CLI__TO_FILE && fsync(o->fd) != 0 && errno != EINVAL)
        e = errno;
    if (o->own_fd && o->fd >= 0) {
        if (close(o->fd) != 0 && e == 0 && errno != EINTR)
            e = errno;
        o->fd = -1;
        o->own_fd = false;
    }
    if (e == 0 && o->temp) {
        if (rename(o->temp, o->target) != 0)
            e = errno;
        else {
            disarm_cleanup();
            free(o->temp);
            o->temp = NULL;
        }
    }
    remove_temp(o);
    if (e > 0)
        return cannot_write(o, strerror(e));
    return e ? KVSHARD_CLI__EXIT_INVALID : 0;
}

void kvshard_cli__output_free(kvshard_cli__output *o)
{
    if (o->own_fd && o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    o->own_fd = false;
    remove_temp(o);
    free(o->target);
    o->target = NULL;
}
