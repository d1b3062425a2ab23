/* The xllm profile: xLLM's capacity, predicted from its own rules. */
#ifndef KVSHARD_PROFILE_XLLM_H
#define KVSHARD_PROFILE_XLLM_H

#include "profile/profile.h"

extern const kvshard__profile kvshard_profile__xllm;

#endif /* KVSHARD_PROFILE_XLLM_H */
