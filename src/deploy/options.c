/* Deployment options: the table of keys and the one validator behind files,
 * flags and kvshard_options built by callers. */
#include "deploy/options.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef enum value_type { VT_U32, VT_BYTES, VT_BOOL, VT_ENUM } value_type;

typedef struct word {
    const char *text;
    int value;
} word;

static const word ownership_words[] = {
    {"ordinal", KVSHARD_OWNERSHIP_ORDINAL},
    {"global", KVSHARD_OWNERSHIP_GLOBAL},
    {NULL, 0},
};

static const word kv_dtype_words[] = {
    {"auto", KVSHARD_KV_DTYPE_AUTO},
    {"bf16", KVSHARD_KV_DTYPE_BF16},
    {"bfloat16", KVSHARD_KV_DTYPE_BF16},
    {"fp16", KVSHARD_KV_DTYPE_FP16},
    {"float16", KVSHARD_KV_DTYPE_FP16},
    {"fp8", KVSHARD_KV_DTYPE_FP8},
    {NULL, 0},
};

typedef struct option_def {
    const char *name;
    kvshard__section section;
    value_type type;
    size_t offset; /* of the field in kvshard_options */
    uint64_t min;
    uint64_t max;
    /* A value below `min` is EPARALLEL for the parallel sizes, whose floor of
     * 1 is a rule of its own, and ERANGE for every other option. */
    int below_min;
    const word *words; /* VT_ENUM: the accepted words */
} option_def;

#define FIELD(f) offsetof(kvshard_options, f)

static const option_def defs[KVSHARD__OPT_COUNT] = {
    [KVSHARD__OPT_WORLD_SIZE] = {"world_size", KVSHARD__SECTION_PARALLEL, VT_U32, FIELD(world_size),
                                 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, NULL},
    [KVSHARD__OPT_DP_SIZE] = {"dp_size", KVSHARD__SECTION_PARALLEL, VT_U32, FIELD(dp_size), 1,
                              KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, NULL},
    [KVSHARD__OPT_CP_SIZE] = {"cp_size", KVSHARD__SECTION_PARALLEL, VT_U32, FIELD(cp_size), 1,
                              KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, NULL},
    [KVSHARD__OPT_ENABLE_SPLIT] = {"enable_layerwise_split", KVSHARD__SECTION_PARALLEL, VT_BOOL,
                                   FIELD(enable_layerwise_split), 0, 1, KVSHARD_ERANGE, NULL},
    [KVSHARD__OPT_SPLIT_SIZE] = {"layerwise_split_size", KVSHARD__SECTION_PARALLEL, VT_U32,
                                 FIELD(layerwise_split_size), 1, KVSHARD_MAX_RANKS,
                                 KVSHARD_EPARALLEL, NULL},
    [KVSHARD__OPT_OWNERSHIP] = {"ownership", KVSHARD__SECTION_PARALLEL, VT_ENUM, FIELD(ownership),
                                0, 0, KVSHARD_ERANGE, ownership_words},
    [KVSHARD__OPT_IS_DRAFT] = {"is_draft", KVSHARD__SECTION_PARALLEL, VT_BOOL, FIELD(is_draft), 0,
                               1, KVSHARD_ERANGE, NULL},
    [KVSHARD__OPT_KV_CACHE_DTYPE] = {"kv_cache_dtype", KVSHARD__SECTION_CACHE, VT_ENUM,
                                     FIELD(kv_cache_dtype), 0, 0, KVSHARD_ERANGE, kv_dtype_words},
    [KVSHARD__OPT_BLOCK_SIZE] = {"block_size", KVSHARD__SECTION_CACHE, VT_U32, FIELD(block_size), 1,
                                 KVSHARD_MAX_BLOCK_SIZE, KVSHARD_ERANGE, NULL},
    [KVSHARD__OPT_MEMORY_PER_RANK] = {"memory_per_rank", KVSHARD__SECTION_CACHE, VT_BYTES,
                                      FIELD(memory_per_rank), 0, UINT64_MAX, KVSHARD_ERANGE, NULL},
    [KVSHARD__OPT_MAX_SEQS] = {"max_seqs", KVSHARD__SECTION_CACHE, VT_U32, FIELD(max_seqs), 1,
                               1u << 24, KVSHARD_ERANGE, NULL},
    [KVSHARD__OPT_SPECULATIVE_TOKENS] = {"num_speculative_tokens", KVSHARD__SECTION_CACHE, VT_U32,
                                         FIELD(num_speculative_tokens), 0, 1024, KVSHARD_ERANGE,
                                         NULL},
    [KVSHARD__OPT_SCRATCH_LAYERS] = {"scratch_layers", KVSHARD__SECTION_CACHE, VT_U32,
                                     FIELD(scratch_layers), 0, 1024, KVSHARD_ERANGE, NULL},
};

const char *kvshard__section_name(kvshard__section section)
{
    return section == KVSHARD__SECTION_PARALLEL ? "parallel" : "cache";
}

const char *kvshard__option_name(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT ? defs[id].name : "";
}

kvshard__section kvshard__option_section(kvshard__option_id id)
{
    return defs[id].section;
}

kvshard__option_id kvshard__option_find(const char *key, size_t len)
{
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        if (kvshard__text_is(key, len, defs[i].name))
            return (kvshard__option_id)i;
    }
    return KVSHARD__OPT_COUNT;
}

/* ---- fields by offset ----------------------------------------------------- */

static uint64_t get_field(const kvshard_options *o, const option_def *d)
{
    const char *base = (const char *)o + d->offset;
    switch (d->type) {
    case VT_U32: {
        uint32_t v;
        memcpy(&v, base, sizeof v);
        return v;
    }
    case VT_BYTES: {
        uint64_t v;
        memcpy(&v, base, sizeof v);
        return v;
    }
    case VT_BOOL: {
        bool v;
        memcpy(&v, base, sizeof v);
        return v;
    }
    case VT_ENUM:
    default: {
        int v; /* every kvshard enum is int-sized */
        memcpy(&v, base, sizeof v);
        return (uint64_t)(int64_t)v;
    }
    }
}

static void set_field(kvshard_options *o, const option_def *d, uint64_t value)
{
    char *base = (char *)o + d->offset;
    switch (d->type) {
    case VT_U32: {
        uint32_t v = (uint32_t)value;
        memcpy(base, &v, sizeof v);
        break;
    }
    case VT_BYTES: memcpy(base, &value, sizeof value); break;
    case VT_BOOL: {
        bool v = value != 0;
        memcpy(base, &v, sizeof v);
        break;
    }
    case VT_ENUM: {
        int v = (int)value;
        memcpy(base, &v, sizeof v);
        break;
    }
    }
}

/* ---- the one range check -------------------------------------------------- */

static const word *word_of_value(const word *words, int64_t value)
{
    for (const word *w = words; w->text; w++) {
        if (w->value == value)
            return w;
    }
    return NULL;
}

/* Whether `value` is allowed for `d`; the error names the option. `text` is
 * the value as written, or NULL for a value from a caller's struct. */
static int check_value(const option_def *d, uint64_t value, const char *text, size_t len,
                       const char *source, kvshard__mark mark, kvshard_error *err)
{
    switch (d->type) {
    case VT_U32:
    case VT_BYTES:
        if (value < d->min && d->below_min == KVSHARD_EPARALLEL) {
            if (!text)
                return kvshard__fail(err, KVSHARD_EPARALLEL, source, mark,
                                     "%s is %llu; it must be at least %llu", d->name,
                                     (unsigned long long)value, (unsigned long long)d->min);
            return kvshard__fail(err, KVSHARD_EPARALLEL, source, mark,
                                 "%s is %.*s; it must be at least %llu", d->name,
                                 (int)(len > 40 ? 40 : len), text, (unsigned long long)d->min);
        }
        if (value < d->min || value > d->max)
            return kvshard__range_error(err, d->name, text, len, value, d->min, d->max, source,
                                        mark);
        return KVSHARD_OK;
    case VT_BOOL: return KVSHARD_OK;
    case VT_ENUM:
    default:
        if (!word_of_value(d->words, (int64_t)value))
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s %lld is not one of its values", d->name,
                                 (long long)(int64_t)value);
        return KVSHARD_OK;
    }
}

/* ---- text ------------------------------------------------------------------ */

/* The accepted words of an enum option, for messages: "auto, bf16 or fp8". */
static void list_words(char *buf, size_t cap, const word *words)
{
    size_t used = 0, count = 0;
    for (const word *w = words; w->text; w++)
        count++;
    buf[0] = '\0';
    for (size_t i = 0; i < count && used < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == count ? " or " : ", ";
        int n = snprintf(buf + used, cap - used, "%s%s", sep, words[i].text);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

#define SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

int kvshard__option_parse(kvshard_options *options, kvshard__option_id id, const char *text,
                          size_t len, kvshard__value_style style, const char *source,
                          kvshard__mark mark, kvshard_error *err)
{
    const option_def *d = &defs[id];
    uint64_t n = 0;
    int rc;
    switch (d->type) {
    case VT_U32:
        if (style != KVSHARD__VALUE_PLAIN)
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found the string \"%.*s\"", d->name,
                                 SHOWN(len), text);
        switch (kvshard__scan_uint(&n, text, len)) {
        case KVSHARD__INT_NOT_INTEGER:
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found \"%.*s\"", d->name, SHOWN(len),
                                 text);
        case KVSHARD__INT_NEGATIVE:
            if (d->below_min == KVSHARD_EPARALLEL) /* "is -3; it must be at least 1" */
                return check_value(d, 0, text, len, source, mark, err);
            return kvshard__range_error(err, d->name, text, len, 0, d->min, d->max, source, mark);
        case KVSHARD__INT_TOO_LARGE: n = UINT64_MAX; break;
        case KVSHARD__INT_OK: break;
        }
        rc = KVSHARD_OK;
        break;
    case VT_BOOL:
        if (style != KVSHARD__VALUE_PLAIN ||
            !(kvshard__text_is(text, len, "true") || kvshard__text_is(text, len, "false")))
            return kvshard__fail(
                err, KVSHARD_ETYPE, source, mark, "%s: expected true or false, found %s\"%.*s\"",
                d->name, style == KVSHARD__VALUE_PLAIN ? "" : "the string ", SHOWN(len), text);
        n = kvshard__text_is(text, len, "true");
        rc = KVSHARD_OK;
        break;
    case VT_BYTES:
        if (style != KVSHARD__VALUE_PLAIN && kvshard__all_digits(text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected a number of bytes, found the string \"%.*s\"",
                                 d->name, SHOWN(len), text);
        rc = kvshard__parse_size(&n, text, len, d->name, source, mark, err);
        break;
    case VT_ENUM:
    default: {
        const word *w = d->words;
        while (w->text && !kvshard__text_is(text, len, w->text))
            w++;
        if (!w->text) {
            char expected[128];
            list_words(expected, sizeof expected, d->words);
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: expected %s, found \"%.*s\"", d->name, expected, SHOWN(len),
                                 text);
        }
        n = (uint64_t)(int64_t)w->value;
        rc = KVSHARD_OK;
        break;
    }
    }
    if (rc == KVSHARD_OK)
        rc = check_value(d, n, text, len, source, mark, err);
    if (rc == KVSHARD_OK)
        set_field(options, d, n);
    return rc;
}

int kvshard__options_check(const kvshard_options *options, kvshard_error *err)
{
    if (options->size != sizeof *options)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "kvshard_options.size is %zu; this library's is %zu: start from "
                             "KVSHARD_OPTIONS_INIT",
                             options->size, sizeof *options);
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        int rc =
            check_value(&defs[i], get_field(options, &defs[i]), NULL, 0, "", kvshard__no_mark, err);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

uint32_t kvshard__attn_tp_size(const kvshard_options *options)
{
    uint64_t dc = (uint64_t)options->dp_size * options->cp_size;
    if (dc == 0 || options->world_size % dc != 0)
        return 0;
    return (uint32_t)(options->world_size / dc);
}

int kvshard_options_set(kvshard_options *options, const char *key, const char *value,
                        kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!options || !key || !value)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "options, key and value must not be NULL");
    int rc = kvshard__options_check(options, err);
    if (rc)
        return rc;
    kvshard__option_id id = kvshard__option_find(key, strlen(key));
    if (id == KVSHARD__OPT_COUNT)
        return kvshard__fail(err, KVSHARD_EUNKNOWNKEY, "", kvshard__no_mark,
                             "unknown option \"%s\"", key);
    return kvshard__option_parse(options, id, value, strlen(value), KVSHARD__VALUE_PLAIN, "",
                                 kvshard__no_mark, err);
}

const char *kvshard_ownership_name(kvshard_ownership ownership)
{
    const word *w = word_of_value(ownership_words, ownership);
    return w ? w->text : "unknown";
}
