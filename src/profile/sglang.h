/* The sglang profile: SGLang's capacity, predicted from its own rules. */
#ifndef KVSHARD_PROFILE_SGLANG_H
#define KVSHARD_PROFILE_SGLANG_H

#include "profile/profile.h"

extern const kvshard__profile kvshard_profile__sglang;

#endif /* KVSHARD_PROFILE_SGLANG_H */
