/* Settings: the inputs only some engine profiles read, set by key and kept
 * apart from the stable kvshard_options, so that a new engine's inputs
 * never change a public struct. Each setting remembers where it was set,
 * for errors that point at it. */
#ifndef KVSHARD_DEPLOY_SETTINGS_H
#define KVSHARD_DEPLOY_SETTINGS_H

#include "profile/profiles.h"

typedef struct kvshard_settings__entry {
    const kvshard_profile__input *input;
    kvshard_value value; /* its text, if any, is `text` */
    bool override;       /* set by a flag or an API call, after the file */
    kvshard__mark mark;
    char source[KVSHARD_ERROR_SOURCE_MAX]; /* shortened as an error's source is */
    char *text; /* a text value's bytes, whole (a list of sizes may be long); NULL without */
} kvshard_settings__entry;

struct kvshard_settings {
    kvshard_allocator alloc;
    size_t count;
    size_t cap;
    kvshard_settings__entry *entries;
};

/* Parse `value` for the setting `input` and keep it (replacing an earlier
 * value) with its site. ENOMEM, or a parse error; unchanged on failure. */
int kvshard_settings__assign(kvshard_settings *s, const kvshard_profile__input *input,
                             const char *value, size_t len, kvshard__value_style style,
                             const char *source, kvshard__mark mark, bool override,
                             kvshard_error *err);

/* The entry of setting `name`, or NULL when it is not set. */
const kvshard_settings__entry *kvshard_settings__find(const kvshard_settings *s, const char *name);

/* An entry's value, its text the entry's own. */
kvshard_value kvshard_settings__value(const kvshard_settings__entry *e);

/* Profile `p`'s inputs, in its table's order, into `out`: the set value or
 * the input's fallback. `s` may be NULL. Returns a bit (1 << index) for
 * each input a setting sets, whatever its value: a setting equal to the
 * default is still given. */
uint64_t kvshard_settings__resolve(kvshard_value *out, const kvshard_settings *s,
                                   const kvshard__profile *p);

/* A copy of `s` (or an empty settings object when `s` is NULL), allocated
 * with `alloc`; NULL when out of memory. */
kvshard_settings *kvshard_settings__copy(const kvshard_settings *s, const kvshard_allocator *alloc);

/* The inputs whose set value differs from the fallback and that profile
 * `p` does not read, in the order of the profiles' tables, into `names` (at most
 * `cap`); returns how many. */
size_t kvshard_settings__ignored(const char **names, size_t cap, const kvshard_settings *s,
                                 const kvshard__profile *p);

/* Most inputs one profile reads. */
#define KVSHARD__MAX_PROFILE_INPUTS 40 /* at most 64: a bit each in a set of inputs */

/* The public type of a value type (kvshard_setting_info.type). */
kvshard_setting_type kvshard_settings__public_type(kvshard_value__type t);

#endif /* KVSHARD_DEPLOY_SETTINGS_H */
