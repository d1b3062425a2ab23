/* Reading a whole configuration file into memory. */
#define _POSIX_C_SOURCE 200809L /* O_CLOEXEC, fstat */
#include "text/file.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *file_type(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

/* `size` bytes, or with `at_least`, more than that many. */
static int too_large(kvshard_error *err, const char *path, unsigned long long size, bool at_least)
{
    return kvshard_error__fail(err, KVSHARD_ELIMIT, path, kvshard_error__no_mark,
                         "file is %s%llu bytes; the limit is %u bytes (KVSHARD_MAX_DOCUMENT_BYTES)",
                         at_least ? "more than " : "", size, KVSHARD_MAX_DOCUMENT_BYTES);
}

/* Read until end of file into a buffer that grows, for files whose size the
 * system does not know in advance. At most one byte past the limit is read:
 * the buffer never grows past the limit plus two (that byte and the NUL). */
static int read_growing(char **out, size_t *out_len, const kvshard_allocator *a, int fd,
                        const char *path, kvshard_error *err)
{
    const size_t most = (size_t)KVSHARD_MAX_DOCUMENT_BYTES + 2;
    size_t cap = 4096, len = 0;
    char *buf = kvshard_alloc__bytes(a, cap, 1);
    if (!buf)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, path, kvshard_error__no_mark,
                                   "out of memory");
    for (;;) {
        if (len > KVSHARD_MAX_DOCUMENT_BYTES) {
            kvshard_alloc__free(a, buf);
            return too_large(err, path, KVSHARD_MAX_DOCUMENT_BYTES, true);
        }
        if (len + 1 == cap) {
            size_t grown_cap = cap > most / 2 ? most : cap * 2;
            char *grown = kvshard_alloc__bytes(a, grown_cap, 1);
            if (!grown) {
                kvshard_alloc__free(a, buf);
                return kvshard_error__fail(err, KVSHARD_ENOMEM, path, kvshard_error__no_mark,
                                           "out of memory");
            }
            memcpy(grown, buf, len);
            kvshard_alloc__free(a, buf);
            buf = grown;
            cap = grown_cap;
        }
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            kvshard_alloc__free(a, buf);
            return kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                                       "cannot read: %s", strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return KVSHARD_OK;
}

/* Whether a regular file holds more than the `size` bytes read from it:
 * one that grew while it was read would otherwise be cut at its old size. */
static bool grew(int fd)
{
    char probe;
    for (;;) {
        ssize_t n = read(fd, &probe, 1);
        if (n < 0 && errno == EINTR)
            continue;
        return n > 0;
    }
}

int kvshard_file__read_file(char **out, size_t *out_len, const kvshard_allocator *a,
                            const char *path, kvshard_error *err)
{
    kvshard__file_id id;
    return kvshard_file__read_file_id(out, out_len, &id, a, path, err);
}

int kvshard_file__read_file_id(char **out, size_t *out_len, kvshard__file_id *id,
                          const kvshard_allocator *a, const char *path, kvshard_error *err)
{
    /* Open without blocking, so that a FIFO with no writer cannot hang the
     * call, and without making a terminal ours; then look before reading. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                                   "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                                   "cannot read: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                             "cannot read: %s; kvshard reads regular files only",
                             file_type(st.st_mode));
    }
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    if ((unsigned long long)st.st_size > KVSHARD_MAX_DOCUMENT_BYTES) {
        close(fd);
        return too_large(err, path, (unsigned long long)st.st_size, false);
    }
    int rc = KVSHARD_OK;
    if (st.st_size == 0) {
        rc = read_growing(out, out_len, a, fd, path, err);
        close(fd);
        return rc;
    }
    size_t size = (size_t)st.st_size, got = 0;
    char *buf = kvshard_alloc__bytes(a, size + 1, 1);
    if (!buf) {
        close(fd);
        return kvshard_error__fail(err, KVSHARD_ENOMEM, path, kvshard_error__no_mark,
                             "out of memory reading the file");
    }
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                                     "cannot read: %s",
                                     n < 0 ? strerror(errno) : "the file shrank while it was read");
            break;
        }
        got += (size_t)n;
    }
    if (rc == KVSHARD_OK && grew(fd))
        rc = kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                           "cannot read: the file grew while it was read");
    close(fd);
    if (rc) {
        kvshard_alloc__free(a, buf);
        return rc;
    }
    buf[size] = '\0';
    *out = buf;
    *out_len = size;
    return KVSHARD_OK;
}

int kvshard_file__config_path(char **out, const kvshard_allocator *a, const char *path,
                         kvshard_error *err)
{
    struct stat st;
    bool dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    size_t len = strlen(path);
    char *p = kvshard_alloc__bytes(a, len + sizeof "/config.json", 1);
    if (!p)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, path, kvshard_error__no_mark,
                                   "out of memory");
    memcpy(p, path, len + 1);
    if (dir) {
        memcpy(p + len, len && path[len - 1] == '/' ? "config.json" : "/config.json",
               len && path[len - 1] == '/' ? sizeof "config.json" : sizeof "/config.json");
        /* Say what is missing, rather than that a path the user never typed
         * cannot be opened. */
        if (stat(p, &st) != 0 && errno == ENOENT) {
            kvshard_alloc__free(a, p);
            return kvshard_error__fail(err, KVSHARD_EIO, path, kvshard_error__no_mark,
                                 "a directory without config.json (a model directory holds "
                                 "the model's config.json)");
        }
    }
    *out = p;
    return KVSHARD_OK;
}
