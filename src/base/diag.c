/* Failures that name what they are about. */
#include "base/diag.h"

int kvshard_diag__fail(kvshard_diag__ctx *d, const char *const *among, int code, const char *fmt,
                       ...)
{
    d->among = among;
    va_list ap;
    va_start(ap, fmt);
    int rc = kvshard_error__vfail(d->err, code, "", kvshard_error__no_mark, fmt, ap);
    va_end(ap);
    return rc;
}
