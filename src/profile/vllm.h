/* The vllm profile: vLLM's capacity, predicted from its own rules. */
#ifndef KVSHARD_PROFILE_VLLM_H
#define KVSHARD_PROFILE_VLLM_H

#include "profile/profile.h"

extern const kvshard__profile kvshard_profile__vllm;

#endif /* KVSHARD_PROFILE_VLLM_H */
