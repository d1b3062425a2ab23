/* kvshard's own profile: its capacity model with no engine's rules. */
#ifndef KVSHARD_PROFILE_KVSHARD_H
#define KVSHARD_PROFILE_KVSHARD_H

#include "profile/profile.h"

extern const kvshard__profile kvshard_profile__kvshard;

#endif /* KVSHARD_PROFILE_KVSHARD_H */
