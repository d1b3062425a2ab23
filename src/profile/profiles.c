/* The profiles table. A new engine is one file filling a kvshard__profile,
 * its enum value, and one row here. */
#include "profile/profiles.h"

#include "profile/kvshard.h"
#include "profile/sglang.h"
#include "profile/trtllm.h"
#include "profile/vllm.h"
#include "profile/xllm.h"

#include <stdio.h>
#include <string.h>

/* The profiles that judge transfers, in the order verdicts are listed. */
const kvshard__profile *const kvshard_profiles__judges[] = {
    &kvshard_profile__vllm,
    &kvshard_profile__sglang,
    &kvshard_profile__xllm,
    NULL,
};

const kvshard__profile *const kvshard_profiles__all[] = {
    &kvshard_profile__kvshard,
    &kvshard_profile__xllm,
    &kvshard_profile__vllm,
    &kvshard_profile__sglang,
    &kvshard_profile__trtllm,
    NULL,
};

const kvshard_value__word kvshard_profiles__engine_words[] = {
    {"kvshard", KVSHARD_ENGINE_KVSHARD},
    {"xllm", KVSHARD_ENGINE_XLLM},
    {"vllm", KVSHARD_ENGINE_VLLM},
    {"sglang", KVSHARD_ENGINE_SGLANG},
    {"trtllm", KVSHARD_ENGINE_TRTLLM},
    {NULL, 0},
};

const kvshard__profile *kvshard_profiles__of(kvshard_engine engine)
{
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        if ((*p)->engine == engine)
            return *p;
    }
    return NULL;
}

const kvshard__profile *kvshard_profiles__own(void)
{
    return &kvshard_profile__kvshard;
}

static bool same(const char *name, const char *s, size_t len)
{
    return strlen(name) == len && memcmp(name, s, len) == 0;
}

const kvshard_profile__input *kvshard_profiles__input(const char *name, size_t len)
{
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        const kvshard_profile__input *in = kvshard_profiles__own_input(*p, name, len);
        if (in)
            return in;
    }
    return NULL;
}

const kvshard_profile__input *kvshard_profiles__gflags_input(const char *name, size_t len)
{
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        const kvshard_profile__input *in = (*p)->dialect.flag_style == KVSHARD_PROFILE__GFLAGS
                                               ? kvshard_profiles__own_input(*p, name, len)
                                               : NULL;
        if (in)
            return kvshard_profiles__input(name, len); /* the first declaration */
    }
    return NULL;
}

const kvshard_profile__input *kvshard_profiles__own_input(const kvshard__profile *p,
                                                          const char *name, size_t len)
{
    for (const kvshard_profile__input *in = p->dialect.inputs; in && in->def.name; in++) {
        if (same(in->def.name, name, len))
            return in;
    }
    return NULL;
}

int kvshard_profiles__input_index(const kvshard__profile *p, const char *name)
{
    int i = 0;
    for (const kvshard_profile__input *in = p->dialect.inputs; in && in->def.name; in++, i++) {
        const char *n = in->def.name;
        if (n == name || (n[0] == name[0] && strcmp(n, name) == 0))
            return i;
    }
    return -1;
}

const kvshard_profile__alias *kvshard_profiles__alias(const kvshard__profile *p, const char *flag,
                                                      size_t len)
{
    for (const kvshard_profile__alias *a = p->dialect.aliases; a && a->flag; a++) {
        if (same(a->flag, flag, len))
            return a;
    }
    return NULL;
}

void kvshard_profiles__readers(char *buf, size_t cap, const char *name)
{
    size_t n = 0, used = 0;
    const kvshard__profile *readers[8];
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p && n < 8; p++) {
        if (kvshard_profiles__input_index(*p, name) >= 0)
            readers[n++] = *p;
    }
    if (cap)
        buf[0] = '\0';
    for (size_t i = 0; i < n && used < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " and " : ", ";
        int k = snprintf(buf + used, cap - used, "%s%s", sep, readers[i]->name);
        used += k > 0 ? (size_t)k : 0;
    }
}

const char *kvshard_engine_name(kvshard_engine engine)
{
    const kvshard_value__word *w = kvshard_value__word_of(kvshard_profiles__engine_words, (int)engine);
    return w ? w->text : "unknown";
}
