/* The xllm profile: xLLM's capacity, predicted from its own rules. */
#ifndef KVSHARD_PROFILE_XLLM_H
#define KVSHARD_PROFILE_XLLM_H

#include "profile/versions.h"

#include <kvshard/kvshard.h>

/* What the profile works out once per planning call and reads again for
 * every capacity, figure and line; the plan keeps it in its
 * kvshard_profile__state. */
typedef struct kvshard_xllm__state {
    kvshard_versions__v version;
    bool request_pool; /* 0.10: state slots = max_concurrent_requests + 2 */
} kvshard_xllm__state;

extern const struct kvshard__profile kvshard_profile__xllm;

#endif /* KVSHARD_PROFILE_XLLM_H */
