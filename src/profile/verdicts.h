/* The engines' transfer verdicts: what every profile's verdict hook
 * shares. */
#ifndef KVSHARD_PROFILE_VERDICTS_H
#define KVSHARD_PROFILE_VERDICTS_H

#include "profile/profile.h"

/* Adds a reason to a transfer verdict, its message formatted; reasons past
 * the verdict's room are dropped (no engine's table has more). */
void kvshard_verdicts__refuse(kvshard_profile__verdict *v, const char *code, const char *fmt, ...)
    KVSHARD__PRINTF(3, 4);

#endif /* KVSHARD_PROFILE_VERDICTS_H */
