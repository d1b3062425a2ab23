/* Engine versions: parsing, order and text. The form accepted is
 *
 *   version := ["v"] N "." N "." N ["rc" N] [".post" N] [".dev" N] ["+" local]
 *   N       := one to nine digits
 *   local   := one or more of A-Z a-z 0-9 . _ -
 *
 * and the order is Python's packaging order (PEP 440) on what is kept; the
 * local part names a build and is ignored. */
#include "profile/versions.h"

#include <stdio.h>
#include <string.h>

/* Digits at s[*i] into *out: one to nine, so the value fits an int32. */
static bool number(int32_t *out, const char *s, size_t len, size_t *i)
{
    size_t start = *i;
    int64_t v = 0;
    while (*i < len && s[*i] >= '0' && s[*i] <= '9' && *i - start < 9) {
        v = v * 10 + (s[*i] - '0');
        (*i)++;
    }
    if (*i == start || (*i < len && s[*i] >= '0' && s[*i] <= '9'))
        return false;
    *out = (int32_t)v;
    return true;
}

/* `word` stands at s[*i]; it is then stepped over. */
static bool literal(const char *s, size_t len, size_t *i, const char *word)
{
    size_t n = strlen(word);
    if (len - *i < n || memcmp(s + *i, word, n) != 0)
        return false;
    *i += n;
    return true;
}

static bool local_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
}

bool kvshard_versions__parse(kvshard_versions__v *out, const char *s, size_t len)
{
    kvshard_versions__v v = KVSHARD_V(0, 0, 0);
    size_t i = 0;
    int32_t x, y, z;
    if (i < len && s[i] == 'v')
        i++;
    if (!number(&x, s, len, &i) || !literal(s, len, &i, ".") || !number(&y, s, len, &i) ||
        !literal(s, len, &i, ".") || !number(&z, s, len, &i))
        return false;
    v.major = (uint32_t)x;
    v.minor = (uint32_t)y;
    v.patch = (uint32_t)z;
    if (literal(s, len, &i, "rc") && !number(&v.rc, s, len, &i))
        return false;
    if (literal(s, len, &i, ".post") && !number(&v.post, s, len, &i))
        return false;
    if (literal(s, len, &i, ".dev") && !number(&v.dev, s, len, &i))
        return false;
    if (i < len && s[i] == '+') {
        size_t start = ++i;
        while (i < len && local_char(s[i]))
            i++;
        if (i == start)
            return false;
    }
    if (i != len)
        return false;
    *out = v;
    return true;
}

/* PEP 440's sort key, on integers: the pre-release part sorts a bare
 * .devN first and a release without rc last; a missing post-release
 * sorts first, a missing dev number last. */
static int64_t pre_key(const kvshard_versions__v *v)
{
    if (v->rc >= 0)
        return v->rc;
    if (v->post < 0 && v->dev >= 0)
        return -1; /* X.Y.Z.devN comes before X.Y.ZrcN */
    return INT64_MAX;
}

static int64_t post_key(const kvshard_versions__v *v)
{
    return v->post >= 0 ? v->post : -1;
}

static int64_t dev_key(const kvshard_versions__v *v)
{
    return v->dev >= 0 ? v->dev : INT64_MAX;
}

static int order(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

int kvshard_versions__cmp(const kvshard_versions__v *a, const kvshard_versions__v *b)
{
    int c = order(a->major, b->major);
    if (c == 0)
        c = order(a->minor, b->minor);
    if (c == 0)
        c = order(a->patch, b->patch);
    if (c == 0)
        c = order(pre_key(a), pre_key(b));
    if (c == 0)
        c = order(post_key(a), post_key(b));
    if (c == 0)
        c = order(dev_key(a), dev_key(b));
    return c;
}

void kvshard_versions__format(char *buf, size_t cap, const kvshard_versions__v *v)
{
    int n = snprintf(buf, cap, "%u.%u.%u", v->major, v->minor, v->patch);
    size_t used = n > 0 ? (size_t)n : 0;
    if (v->rc >= 0 && used < cap)
        used += (size_t)snprintf(buf + used, cap - used, "rc%d", (int)v->rc);
    if (v->post >= 0 && used < cap)
        used += (size_t)snprintf(buf + used, cap - used, ".post%d", (int)v->post);
    if (v->dev >= 0 && used < cap)
        snprintf(buf + used, cap - used, ".dev%d", (int)v->dev);
}

kvshard_versions__text kvshard_versions__text_of(const kvshard_versions__v *v)
{
    kvshard_versions__text t;
    kvshard_versions__format(t.s, sizeof t.s, v);
    return t;
}

static int check_text(const kvshard_value__def *def, const char *text, size_t len,
                      const char *source, kvshard__mark mark, kvshard_error *err)
{
    kvshard_versions__v v;
    if (kvshard_versions__parse(&v, text, len))
        return KVSHARD_OK;
    char shown[96];
    kvshard_error__excerpt(shown, sizeof shown, text, len, 48);
    return kvshard_error__fail(err, KVSHARD_ERANGE, source, mark,
                         "engine_version_invalid: %s \"%s\" is not a version of the form "
                         "[v]X.Y.Z, optionally followed by rcN, .postN, .devN and +local (such "
                         "as 0.20.0 or 0.20.1rc1.dev91)",
                         def->name, shown);
}

const kvshard_value__more kvshard_versions__input_more = {check_text, NULL, false};
