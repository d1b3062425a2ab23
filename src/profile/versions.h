/* Engine versions: the one parser of the release names engines report
 * (0.20.0, v0.5.11, 0.20.1rc1.dev91+ga749a33d8) and their order, which is
 * Python's package order, so that a nightly sorts before the release it
 * leads up to. Every profile's version rules compare through here. */
#ifndef KVSHARD_PROFILE_VERSIONS_H
#define KVSHARD_PROFILE_VERSIONS_H

#include "text/value.h"

/* X.Y.Z with an optional release candidate, post-release and development
 * number (-1: none); a local part after '+' is not kept. */
typedef struct kvshard_versions__v {
    uint32_t major;
    uint32_t minor;
    uint32_t patch;
    int32_t rc;
    int32_t post;
    int32_t dev;
} kvshard_versions__v;

/* A release, and a nightly (rcN.devM) as a literal. */
#define KVSHARD_V(x, y, z)                                                                         \
    {                                                                                              \
        (x), (y), (z), -1, -1, -1                                                                  \
    }
#define KVSHARD_V_RC_DEV(x, y, z, rc, dev)                                                         \
    {                                                                                              \
        (x), (y), (z), (rc), -1, (dev)                                                             \
    }

/* Longest version text kvshard writes back. */
#define KVSHARD_VERSIONS__TEXT_MAX 48

/* `len` bytes of `s` as [v]X.Y.Z[rcN][.postN][.devN][+local] into *out;
 * false for any other text (*out is then unset). */
bool kvshard_versions__parse(kvshard_versions__v *out, const char *s, size_t len);

/* <0, 0, >0 as `a` comes before, with or after `b` in Python's order: within
 * one X.Y.Z, X.Y.Z.devN first, then the release candidates (rcN.devM before
 * rcN), then the release, then its post-releases. */
int kvshard_versions__cmp(const kvshard_versions__v *a, const kvshard_versions__v *b);

/* `v` is `bound` or later: a rule marked "from `bound`" holds. */
static inline bool kvshard_versions__from(const kvshard_versions__v *v,
                                          const kvshard_versions__v *bound)
{
    return kvshard_versions__cmp(v, bound) >= 0;
}

/* The canonical text of `v` ("0.20.1rc1.dev31"). */
void kvshard_versions__format(char *buf, size_t cap, const kvshard_versions__v *v);

/* The same as a value, for a message: kvshard_versions__text_of(&v).s lives
 * to the end of the expression that holds it, so a refusal formats the
 * version only when it is made. */
typedef struct kvshard_versions__text {
    char s[KVSHARD_VERSIONS__TEXT_MAX];
} kvshard_versions__text;
kvshard_versions__text kvshard_versions__text_of(const kvshard_versions__v *v);

/* What the engine_version input accepts: a version of the form above;
 * ERANGE "engine_version_invalid" otherwise. */
extern const kvshard_value__more kvshard_versions__input_more;

/* The engine_version input every engine profile declares alike. */
#define KVSHARD_VERSIONS__INPUT                                                                    \
    {                                                                                              \
        {"engine_version",                                                                         \
         KVSHARD__VT_TEXT,                                                                         \
         0,                                                                                        \
         0,                                                                                        \
         KVSHARD_ERANGE,                                                                           \
         true,                                                                                     \
         NULL,                                                                                     \
         &kvshard_versions__input_more},                                                           \
            {0, 0.0, NULL, 0}, "the newest the profile covers"                                     \
    }

#endif /* KVSHARD_PROFILE_VERSIONS_H */
