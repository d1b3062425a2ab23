/* The engines' transfer verdicts: what every profile's verdict hook
 * shares. */
#include "profile/verdicts.h"

#include <stdarg.h>
#include <stdio.h>

void kvshard_verdicts__refuse(kvshard_profile__verdict *v, const char *code, const char *fmt, ...)
{
    if (v->reason_count == KVSHARD_PROFILE__VERDICT_REASONS)
        return;
    va_list ap;
    va_start(ap, fmt);
    v->reasons[v->reason_count].code = code;
    vsnprintf(v->reasons[v->reason_count].message, sizeof v->reasons[0].message, fmt, ap);
    va_end(ap);
    v->reason_count++;
}
