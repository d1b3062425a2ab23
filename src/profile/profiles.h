/* The engine profiles kvshard knows: the one table that maps engine names
 * and enum values to profiles, and lookups over every profile's inputs. */
#ifndef KVSHARD_PROFILE_PROFILES_H
#define KVSHARD_PROFILE_PROFILES_H

#include "profile/profile.h"

/* The profile of `engine`; NULL for a value no profile has. */
const kvshard__profile *kvshard_profiles__of(kvshard_engine engine);

/* The words cache.engine takes, with their kvshard_engine values. */
extern const kvshard_value__word kvshard_profiles__engine_words[];

/* The input `name` declares in any profile (the first that declares it),
 * or NULL. Profiles that share an input declare it alike. */
const kvshard_profile__input *kvshard_profiles__input(const char *name, size_t len);

/* The input `name` when a gflags profile (kvshard's own, xllm) declares
 * it, or NULL: what a gflags flag may name beside options and aliases. */
const kvshard_profile__input *kvshard_profiles__gflags_input(const char *name, size_t len);

/* The input `name` of profile `p` alone, or NULL. */
const kvshard_profile__input *kvshard_profiles__own_input(const kvshard__profile *p,
                                                          const char *name, size_t len);

/* The profiles that read input `name`, for a message: "xllm, vllm and
 * sglang". */
void kvshard_profiles__readers(char *buf, size_t cap, const char *name);

/* Position of input `name` in profile `p`'s table, or -1 when `p` does not
 * read it. */
int kvshard_profiles__input_index(const kvshard__profile *p, const char *name);

/* The alias an engine flag of `p` is (the kvshard key it stands for), or
 * NULL. */
const kvshard_profile__alias *kvshard_profiles__alias(const kvshard__profile *p, const char *flag,
                                                      size_t len);

/* kvshard's own profile: the default engine, whose flags `kvshard plan`
 * takes. */
const kvshard__profile *kvshard_profiles__own(void);

/* The profiles whose transfer_verdict judges a transfer, in the order
 * verdicts are listed (NULL-ended). */
extern const kvshard__profile *const kvshard_profiles__judges[];

/* Every profile, for lookups across them (NULL-ended). */
extern const kvshard__profile *const kvshard_profiles__all[];

#endif /* KVSHARD_PROFILE_PROFILES_H */
