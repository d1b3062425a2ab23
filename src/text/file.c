/* Reading a whole configuration file into memory. */
#define _POSIX_C_SOURCE 200809L /* fileno, fstat */
#include "text/file.h"

#include "base/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int kvshard__read_file(char **out, size_t *out_len, const kvshard_allocator *a, const char *path,
                       kvshard_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kvshard__fail(err, KVSHARD_EIO, path, kvshard__no_mark, "cannot open: %s",
                             strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0) {
        int e = errno;
        fclose(f);
        return kvshard__fail(err, KVSHARD_EIO, path, kvshard__no_mark, "cannot read: %s",
                             strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        fclose(f);
        return kvshard__fail(err, KVSHARD_EIO, path, kvshard__no_mark, "cannot read: %s",
                             S_ISDIR(st.st_mode) ? strerror(EISDIR) : "not a regular file");
    }
    if ((uint64_t)st.st_size > KVSHARD_MAX_DOCUMENT_BYTES) {
        fclose(f);
        return kvshard__fail(
            err, KVSHARD_ELIMIT, path, kvshard__no_mark,
            "file is %llu bytes; the limit is %u bytes (KVSHARD_MAX_DOCUMENT_BYTES)",
            (unsigned long long)st.st_size, KVSHARD_MAX_DOCUMENT_BYTES);
    }
    size_t size = (size_t)st.st_size;
    char *buf = kvshard__alloc(a, size + 1, 1);
    if (!buf) {
        fclose(f);
        return kvshard__fail(err, KVSHARD_ENOMEM, path, kvshard__no_mark,
                             "out of memory reading the file");
    }
    size_t got = fread(buf, 1, size, f);
    int read_error = ferror(f);
    fclose(f);
    if (read_error || got != size) {
        kvshard__free(a, buf);
        return kvshard__fail(err, KVSHARD_EIO, path, kvshard__no_mark, "cannot read: %s",
                             read_error ? strerror(EIO) : "file changed while reading");
    }
    buf[size] = '\0';
    *out = buf;
    *out_len = size;
    return KVSHARD_OK;
}
