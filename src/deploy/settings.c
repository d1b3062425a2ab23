/* Settings by key. */
#include "deploy/settings.h"

#include "text/scalar.h"

#include "base/call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A copy of `len` bytes of `text`, NUL-terminated, from `alloc`; NULL when
 * out of memory. */
static char *kept_text(const kvshard_allocator *alloc, const char *text, size_t len)
{
    char *kept = kvshard_alloc__bytes(alloc, 1, len + 1);
    if (kept) {
        memcpy(kept, text, len);
        kept[len] = '\0';
    }
    return kept;
}

int kvshard_settings__assign(kvshard_settings *s, const kvshard_profile__input *input,
                             const char *value, size_t len, kvshard__value_style style,
                             const char *source, kvshard__mark mark, bool override,
                             kvshard_error *err)
{
    kvshard_value v;
    int rc = kvshard_value__parse(&v, &input->def, value, len, style, source, mark, err);
    if (rc)
        return rc;
    /* The text whole, as the parser bounded it: never cut to a fixed room. */
    char *text = v.text ? kept_text(&s->alloc, v.text, v.text_len) : NULL;
    if (v.text && !text)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, source, mark, "out of memory");
    kvshard_settings__entry *e = (kvshard_settings__entry *)kvshard_settings__find(
        s, input->def.name);
    if (!e) {
        if (s->count == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 8;
            kvshard_settings__entry *grown = kvshard_alloc__bytes(&s->alloc, cap, sizeof *grown);
            if (!grown) {
                kvshard_alloc__free(&s->alloc, text);
                return kvshard_error__fail(err, KVSHARD_ENOMEM, source, mark, "out of memory");
            }
            if (s->count)
                memcpy(grown, s->entries, s->count * sizeof *grown);
            kvshard_alloc__free(&s->alloc, s->entries);
            s->entries = grown;
            s->cap = cap;
        }
        e = &s->entries[s->count++];
        e->input = input;
        e->text = NULL;
    }
    kvshard_alloc__free(&s->alloc, e->text);
    e->text = text;
    e->value = v;
    e->value.text = text;
    e->override = override;
    e->mark = mark;
    kvshard_error__shorten(e->source, sizeof e->source, source);
    return KVSHARD_OK;
}

const kvshard_settings__entry *kvshard_settings__find(const kvshard_settings *s, const char *name)
{
    for (size_t i = 0; s && i < s->count; i++) {
        const char *e = s->entries[i].input->def.name;
        if (e == name || (e[0] == name[0] && strcmp(e, name) == 0))
            return &s->entries[i];
    }
    return NULL;
}

kvshard_value kvshard_settings__value(const kvshard_settings__entry *e)
{
    return e->value;
}

uint64_t kvshard_settings__resolve(kvshard_value *out, const kvshard_settings *s,
                                   const kvshard__profile *p)
{
    /* Every fallback, then the few entries set over them. */
    size_t i = 0;
    for (const kvshard_profile__input *in = p->dialect.inputs; in && in->def.name; in++, i++)
        out[i] = in->fallback;
    uint64_t set = 0;
    for (size_t k = 0; s && k < s->count; k++) {
        int at = kvshard_profiles__input_index(p, s->entries[k].input->def.name);
        if (at >= 0) {
            out[at] = kvshard_settings__value(&s->entries[k]);
            set |= (uint64_t)1 << at;
        }
    }
    return set;
}

kvshard_settings *kvshard_settings__copy(const kvshard_settings *s, const kvshard_allocator *alloc)
{
    kvshard_settings *c = kvshard_alloc__calloc(alloc, 1, sizeof *c);
    if (!c)
        return NULL;
    c->alloc = *alloc;
    if (s && s->count) {
        c->entries = kvshard_alloc__bytes(alloc, s->count, sizeof *c->entries);
        if (!c->entries) {
            kvshard_alloc__free(alloc, c);
            return NULL;
        }
        memcpy(c->entries, s->entries, s->count * sizeof *c->entries);
        c->count = c->cap = s->count;
        for (size_t i = 0; i < c->count; i++) {
            kvshard_settings__entry *e = &c->entries[i];
            if (!e->text)
                continue;
            e->text = kept_text(alloc, e->text, e->value.text_len);
            e->value.text = e->text;
            if (!e->text) {
                c->count = i; /* the texts copied so far are the copy's to free */
                kvshard_settings_free(c);
                return NULL;
            }
        }
    }
    return c;
}

/* Where an input stands in the profiles' tables, all of them in turn. */
static size_t table_position(const kvshard_profile__input *input)
{
    size_t at = 0;
    for (const kvshard__profile *const *q = kvshard_profiles__all; *q; q++) {
        const kvshard_profile__input *in = (*q)->dialect.inputs;
        size_t n = 0;
        while (in && in[n].def.name)
            n++;
        if (n && input >= in && input < in + n)
            return at + (size_t)(input - in);
        at += n;
    }
    return at;
}

size_t kvshard_settings__ignored(const char **names, size_t cap, const kvshard_settings *s,
                                 const kvshard__profile *p)
{
    /* In the order of the profiles' tables, whatever order they were set in:
     * the few entries set are sorted by where they stand. */
    size_t n = 0, at[KVSHARD__MAX_PROFILE_INPUTS];
    for (size_t i = 0; s && i < s->count && n < cap && n < KVSHARD__MAX_PROFILE_INPUTS; i++) {
        const kvshard_settings__entry *e = &s->entries[i];
        const kvshard_profile__input *in = e->input;
        if (kvshard_value__equal(&in->def, kvshard_settings__value(e), in->fallback) ||
            kvshard_profiles__input_index(p, in->def.name) >= 0)
            continue;
        size_t pos = table_position(in), k = n++;
        while (k > 0 && at[k - 1] > pos) {
            at[k] = at[k - 1];
            names[k] = names[k - 1];
            k--;
        }
        at[k] = pos;
        names[k] = in->def.name;
    }
    return n;
}

/* ---- the public calls ------------------------------------------------------------ */

int kvshard_settings_create(kvshard_settings **out, const kvshard_allocator *allocator,
                            kvshard_error *err)
{
    return kvshard_settings_copy(out, NULL, allocator, err);
}

int kvshard_settings_copy(kvshard_settings **out, const kvshard_settings *settings,
                          const kvshard_allocator *allocator, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, out != NULL, "out");
    if (rc == KVSHARD_OK)
        rc = kvshard_call__allocator(err, allocator);
    if (rc)
        return rc;
    kvshard_allocator a = kvshard_alloc__allocator_or_default(allocator);
    kvshard_settings *s = kvshard_settings__copy(settings, &a);
    if (!s)
        return kvshard_error__fail(err, KVSHARD_ENOMEM, "", kvshard_error__no_mark,
                                   "out of memory");
    *out = s;
    return KVSHARD_OK;
}

void kvshard_settings_free(kvshard_settings *settings)
{
    if (!settings)
        return;
    kvshard_allocator a = settings->alloc;
    for (size_t i = 0; i < settings->count; i++)
        kvshard_alloc__free(&a, settings->entries[i].text);
    kvshard_alloc__free(&a, settings->entries);
    kvshard_alloc__free(&a, settings);
}

int kvshard_settings_set(kvshard_settings *settings, const char *key, const char *value,
                         const char *origin, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, settings && key && value, "settings, key and value");
    if (rc)
        return rc;
    const char *from = origin ? origin : "setting";
    const kvshard_profile__input *in = kvshard_profiles__input(key, strlen(key));
    if (!in) {
        char shown[96];
        kvshard_error__excerpt(shown, sizeof shown, key, strlen(key), 64);
        return kvshard_error__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard_error__no_mark,
                             "unknown setting \"%s\"", shown);
    }
    return kvshard_settings__assign(settings, in, value, strlen(value), KVSHARD__VALUE_FLAG, from,
                                    kvshard_error__no_mark, true, err);
}

/* The shortest positional decimal that kvshard reads back as `d` (never an
 * exponent, always a '.', whatever the locale): what a setting's text must
 * be to be set again. */
static void fraction_text(char *buf, size_t cap, double d)
{
    char sci[40];
    for (int digits = 1; digits <= 17; digits++) {
        /* d.ddde[+-]XX: the exponent says where the point goes. */
        snprintf(sci, sizeof sci, "%.*e", digits - 1, d);
        const char *e = strchr(sci, 'e');
        int exponent = e ? atoi(e + 1) : 0;
        int decimals = digits - 1 - exponent;
        snprintf(buf, cap, "%.*f", decimals > 0 ? decimals : 0, d);
        for (char *c = buf; *c; c++) {
            if (*c != '-' && (*c < '0' || *c > '9'))
                *c = '.'; /* the locale's decimal point */
        }
        double back;
        if (kvshard_scalar__scan_decimal(&back, buf, strlen(buf)) && back == d)
            return;
    }
}

/* The value `v` of `def` as text, as a flag would give it. */
static void value_text(char *buf, size_t cap, const kvshard_value__def *def, kvshard_value v)
{
    switch (def->type) {
    case KVSHARD__VT_BOOL: snprintf(buf, cap, "%s", v.u ? "true" : "false"); break;
    case KVSHARD__VT_TEXT:
        snprintf(buf, cap, "%.*s", v.text ? (int)v.text_len : 0, v.text ? v.text : "");
        break;
    case KVSHARD__VT_SIZES: /* one a stage as given, else the one size */
        if (v.text)
            snprintf(buf, cap, "%.*s", (int)v.text_len, v.text);
        else
            snprintf(buf, cap, "%llu", (unsigned long long)v.u);
        break;
    case KVSHARD__VT_OBJECT: {
        const kvshard_value__fields *f = def->more ? def->more->fields : NULL;
        size_t used = 0;
        int n = snprintf(buf, cap, "{");
        used = n > 0 ? (size_t)n : 0;
        if (f && f->text && v.text && used < cap) {
            n = snprintf(buf + used, cap - used, "\"%s\": \"%.*s\"", f->text, (int)v.text_len,
                         v.text);
            used += n > 0 ? (size_t)n : 0;
        }
        if (f && f->integer && used < cap) {
            n = snprintf(buf + used, cap - used, "%s\"%s\": %llu", used > 1 ? ", " : "",
                         f->integer, (unsigned long long)v.u);
            used += n > 0 ? (size_t)n : 0;
        }
        if (used < cap)
            snprintf(buf + used, cap - used, "}");
        break;
    }
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL: fraction_text(buf, cap, v.d); break;
    case KVSHARD__VT_WORD: {
        const kvshard_value__word *w = kvshard_value__word_of(def->words, (int)(int64_t)v.u);
        snprintf(buf, cap, "%s", w ? w->text : "");
        break;
    }
    case KVSHARD__VT_U32:
        if (kvshard_value__is_word(def, v)) {
            const kvshard_value__word *w = kvshard_value__word_of(def->words, (int)(int64_t)v.u);
            snprintf(buf, cap, "%s", w->text);
            break;
        }
        snprintf(buf, cap, "%llu", (unsigned long long)v.u);
        break;
    case KVSHARD__VT_BYTES:
    default: snprintf(buf, cap, "%llu", (unsigned long long)v.u); break;
    }
}

int kvshard_settings_get(char *buf, size_t cap, bool *out_set, const kvshard_settings *settings,
                         const char *key)
{
    if (!buf || !cap || !key)
        return KVSHARD_EINVAL;
    const kvshard_profile__input *in = kvshard_profiles__input(key, strlen(key));
    if (!in)
        return KVSHARD_EUNKNOWNKEY;
    const kvshard_settings__entry *e = kvshard_settings__find(settings, in->def.name);
    if (!e && in->default_text) /* a default the profile works out (by version, by model) */
        snprintf(buf, cap, "%s", in->default_text);
    else
        value_text(buf, cap, &in->def, e ? kvshard_settings__value(e) : in->fallback);
    if (out_set)
        *out_set = e != NULL;
    return KVSHARD_OK;
}

kvshard_setting_type kvshard_settings__public_type(kvshard_value__type t)
{
    switch (t) {
    case KVSHARD__VT_BYTES: return KVSHARD_SETTING_BYTES;
    case KVSHARD__VT_SIZES: return KVSHARD_SETTING_SIZES;
    case KVSHARD__VT_BOOL: return KVSHARD_SETTING_BOOL;
    case KVSHARD__VT_WORD: return KVSHARD_SETTING_WORD;
    case KVSHARD__VT_FRACTION: return KVSHARD_SETTING_FRACTION;
    case KVSHARD__VT_DECIMAL: return KVSHARD_SETTING_DECIMAL;
    case KVSHARD__VT_TEXT: return KVSHARD_SETTING_TEXT;
    case KVSHARD__VT_OBJECT: return KVSHARD_SETTING_JSON;
    case KVSHARD__VT_U32:
    default: return KVSHARD_SETTING_INTEGER;
    }
}

/* The distinct settings, in the order of the profiles table. */
static const kvshard_profile__input *setting_at(size_t index, kvshard_engine *engine)
{
    size_t n = 0;
    for (const kvshard__profile *const *p = kvshard_profiles__all; *p; p++) {
        for (const kvshard_profile__input *in = (*p)->dialect.inputs; in && in->def.name; in++) {
            if (kvshard_profiles__input(in->def.name, strlen(in->def.name)) != in)
                continue; /* declared by an earlier profile too */
            if (n++ == index) {
                *engine = (*p)->engine;
                return in;
            }
        }
    }
    return NULL;
}

size_t kvshard_setting_count(void)
{
    kvshard_engine e;
    size_t n = 0;
    while (setting_at(n, &e))
        n++;
    return n;
}

int kvshard_setting_info_at(kvshard_setting_info *out, size_t index)
{
    kvshard_engine engine = kvshard_profiles__all[0]->engine;
    const kvshard_profile__input *in = setting_at(index, &engine);
    if (!out || out->size != sizeof *out || !in)
        return KVSHARD_EINVAL;
    kvshard_setting_info info;
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    info.key = in->def.name;
    info.type = kvshard_settings__public_type(in->def.type);
    info.min = in->def.min;
    info.max = in->def.max;
    if (in->default_text)
        snprintf(info.default_value, sizeof info.default_value, "%s", in->default_text);
    else
        value_text(info.default_value, sizeof info.default_value, &in->def, in->fallback);
    info.engine = engine;
    *out = info;
    return KVSHARD_OK;
}

int kvshard_setting_find(kvshard_setting_info *out, const char *key)
{
    if (!out || !key)
        return KVSHARD_EINVAL;
    for (size_t i = 0;; i++) {
        kvshard_engine engine;
        const kvshard_profile__input *in = setting_at(i, &engine);
        if (!in)
            return KVSHARD_EUNKNOWNKEY;
        if (strcmp(in->def.name, key) == 0)
            return kvshard_setting_info_at(out, i);
    }
}

_Static_assert(KVSHARD__MAX_PROFILE_INPUTS <= 64, "a set of inputs is one bit each of a uint64_t");
