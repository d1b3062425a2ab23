/* What a failed call is about: its error record, and the option (or the
 * options) the failure concerns, which the check that fails names. A caller
 * that knows where each option was set (a deployment file, a flag) points
 * the error there. */
#ifndef KVSHARD_BASE_DIAG_H
#define KVSHARD_BASE_DIAG_H

#include "base/error.h"

typedef struct kvshard_diag__ctx {
    kvshard_error *err; /* NULL: the caller keeps no record */
    /* The option or setting the failure is about, or NULL. */
    const char *option;
    /* When the caller did not set `option` (or none is named): the options
     * the failure may be about, most specific first, NULL-ended; one the
     * caller overrode wins over one its file set. NULL: none. */
    const char *const *among;
} kvshard_diag__ctx;

/* A context recording into `err`, about no option yet. */
static inline kvshard_diag__ctx kvshard_diag__on(kvshard_error *err)
{
    kvshard_diag__ctx d = {err, NULL, NULL};
    return d;
}

/* Record an error with no source, as kvshard_error__fail does, about one of
 * `among`. Returns code. */
int kvshard_diag__fail(kvshard_diag__ctx *d, const char *const *among, int code, const char *fmt,
                       ...) KVSHARD__PRINTF(4, 5);

#endif /* KVSHARD_BASE_DIAG_H */
