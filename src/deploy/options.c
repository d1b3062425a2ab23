/* Deployment options: the table of keys and the one validator behind files,
 * flags and kvshard_options built by callers. */
#include "deploy/options.h"

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef enum value_type { VT_U32, VT_BYTES, VT_BOOL, VT_ENUM, VT_FRACTION } value_type;

typedef struct word {
    const char *text;
    int value;
} word;

static const word ownership_words[] = {
    {"ordinal", KVSHARD_OWNERSHIP_ORDINAL},
    {"global", KVSHARD_OWNERSHIP_GLOBAL},
    {"contiguous", KVSHARD_OWNERSHIP_CONTIGUOUS},
    {NULL, 0},
};

static const word engine_words[] = {
    {"kvshard", KVSHARD_ENGINE_KVSHARD},
    {"xllm", KVSHARD_ENGINE_XLLM},
    {NULL, 0},
};

/* xLLM's names (int8, fp8_e4m3, fp8_e5m2) are one byte with scales too. */
static const word kv_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp16", KVSHARD_DTYPE_FP16},
    {"float16", KVSHARD_DTYPE_FP16},  {"fp8", KVSHARD_DTYPE_FP8},
    {"fp8_e4m3", KVSHARD_DTYPE_FP8},  {"fp8_e5m2", KVSHARD_DTYPE_FP8},
    {"int8", KVSHARD_DTYPE_INT8},     {NULL, 0},
};

static const word state_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp16", KVSHARD_DTYPE_FP16},
    {"float16", KVSHARD_DTYPE_FP16},  {"fp32", KVSHARD_DTYPE_FP32},
    {"float32", KVSHARD_DTYPE_FP32},  {NULL, 0},
};

typedef struct option_def {
    const char *name;
    kvshard__section section;
    value_type type;
    size_t offset; /* of the field in kvshard_options */
    uint64_t min;  /* as text; a struct may also hold 0 when `unset_ok` */
    uint64_t max;
    /* A value below `min` is EPARALLEL for the parallel sizes, whose floor of
     * 1 is a rule of its own, and ERANGE for every other option. */
    int below_min;
    bool unset_ok;     /* 0 in a caller's struct means "unset" or "none" */
    const word *words; /* VT_ENUM: the accepted words */
} option_def;

#define FIELD(f) offsetof(kvshard_options, f)
#define PARALLEL KVSHARD__SECTION_PARALLEL
#define CACHE KVSHARD__SECTION_CACHE

static const option_def defs[KVSHARD__OPT_COUNT] = {
    [KVSHARD__OPT_WORLD_SIZE] = {"world_size", PARALLEL, VT_U32, FIELD(world_size), 1,
                                 KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, false, NULL},
    [KVSHARD__OPT_DP_SIZE] = {"dp_size", PARALLEL, VT_U32, FIELD(dp_size), 1, KVSHARD_MAX_RANKS,
                              KVSHARD_EPARALLEL, false, NULL},
    [KVSHARD__OPT_CP_SIZE] = {"cp_size", PARALLEL, VT_U32, FIELD(cp_size), 1, KVSHARD_MAX_RANKS,
                              KVSHARD_EPARALLEL, false, NULL},
    [KVSHARD__OPT_ENABLE_SPLIT] = {"enable_layerwise_split", PARALLEL, VT_BOOL,
                                   FIELD(enable_layerwise_split), 0, 1, KVSHARD_ERANGE, false,
                                   NULL},
    [KVSHARD__OPT_SPLIT_SIZE] = {"layerwise_split_size", PARALLEL, VT_U32,
                                 FIELD(layerwise_split_size), 1, KVSHARD_MAX_RANKS,
                                 KVSHARD_EPARALLEL, false, NULL},
    [KVSHARD__OPT_OWNERSHIP] = {"ownership", PARALLEL, VT_ENUM, FIELD(ownership), 0, 0,
                                KVSHARD_ERANGE, false, ownership_words},
    [KVSHARD__OPT_IS_DRAFT] = {"is_draft", PARALLEL, VT_BOOL, FIELD(is_draft), 0, 1, KVSHARD_ERANGE,
                               false, NULL},
    [KVSHARD__OPT_ENGINE] = {"engine", CACHE, VT_ENUM, FIELD(engine), 0, 0, KVSHARD_ERANGE, false,
                             engine_words},
    [KVSHARD__OPT_KV_CACHE_DTYPE] = {"kv_cache_dtype", CACHE, VT_ENUM, FIELD(kv_cache_dtype), 0, 0,
                                     KVSHARD_ERANGE, false, kv_dtype_words},
    [KVSHARD__OPT_STATE_DTYPE] = {"state_dtype", CACHE, VT_ENUM, FIELD(state_dtype), 0, 0,
                                  KVSHARD_ERANGE, false, state_dtype_words},
    [KVSHARD__OPT_BLOCK_SIZE] = {"block_size", CACHE, VT_U32, FIELD(block_size), 1,
                                 KVSHARD_MAX_BLOCK_SIZE, KVSHARD_ERANGE, true, NULL},
    [KVSHARD__OPT_MEMORY_PER_RANK] = {"memory_per_rank", CACHE, VT_BYTES, FIELD(memory_per_rank), 1,
                                      UINT64_MAX, KVSHARD_ERANGE, true, NULL},
    [KVSHARD__OPT_MAX_SEQS] = {"max_seqs", CACHE, VT_U32, FIELD(max_seqs), 1, 1u << 24,
                               KVSHARD_ERANGE, true, NULL},
    [KVSHARD__OPT_DRAFT_TOKENS] = {"num_speculative_tokens", CACHE, VT_U32,
                                   FIELD(num_speculative_tokens), 0, 1024, KVSHARD_ERANGE, false,
                                   NULL},
    [KVSHARD__OPT_SCRATCH_LAYERS] = {"scratch_layers", CACHE, VT_U32, FIELD(scratch_layers), 0,
                                     1024, KVSHARD_ERANGE, false, NULL},
    [KVSHARD__OPT_CONTEXT_LENGTH] = {"context_length", CACHE, VT_U32, FIELD(context_length), 1,
                                     KVSHARD_MAX_CONTEXT_LENGTH, KVSHARD_ERANGE, true, NULL},
    [KVSHARD__OPT_PREFIX_CACHE] = {"enable_prefix_cache", CACHE, VT_BOOL,
                                   FIELD(enable_prefix_cache), 0, 1, KVSHARD_ERANGE, false, NULL},
    [KVSHARD__OPT_STATE_SLOTS] = {"max_linear_state_cache_slots", CACHE, VT_U32,
                                  FIELD(max_linear_state_cache_slots), 0, 1u << 24, KVSHARD_ERANGE,
                                  false, NULL},
    [KVSHARD__OPT_DEVICE_TOTAL] = {"device_memory_total", CACHE, VT_BYTES,
                                   FIELD(device_memory_total), 1, UINT64_MAX, KVSHARD_ERANGE, true,
                                   NULL},
    [KVSHARD__OPT_DEVICE_FREE] = {"device_memory_free", CACHE, VT_BYTES, FIELD(device_memory_free),
                                  1, UINT64_MAX, KVSHARD_ERANGE, true, NULL},
    [KVSHARD__OPT_UTILIZATION] = {"max_memory_utilization", CACHE, VT_FRACTION,
                                  FIELD(max_memory_utilization), 0, 1, KVSHARD_ERANGE, false, NULL},
    [KVSHARD__OPT_MAX_CACHE_SIZE] = {"max_cache_size", CACHE, VT_BYTES, FIELD(max_cache_size), 0,
                                     UINT64_MAX, KVSHARD_ERANGE, true, NULL},
};

/* Flag names an engine profile accepts for kvshard's options. */
static const struct {
    const char *name;
    kvshard_engine engine;
    kvshard__option_id id;
} engine_flags[] = {
    {"max_seqs_per_batch", KVSHARD_ENGINE_XLLM, KVSHARD__OPT_MAX_SEQS},
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

bool kvshard__option_is_bool(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT && defs[id].type == VT_BOOL;
}

kvshard__option_id kvshard__option_find(const char *key, size_t len, bool flag,
                                        kvshard_engine engine)
{
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        if (kvshard__text_is(key, len, defs[i].name))
            return (kvshard__option_id)i;
    }
    for (size_t i = 0; flag && i < sizeof engine_flags / sizeof engine_flags[0]; i++) {
        if (engine_flags[i].engine == engine && kvshard__text_is(key, len, engine_flags[i].name))
            return engine_flags[i].id;
    }
    return KVSHARD__OPT_COUNT;
}

/* ---- fields by offset ----------------------------------------------------- */

/* A field's value as a double (exact for every integer field kvshard has). */
static double get_field(const kvshard_options *o, const option_def *d)
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
        return (double)v;
    }
    case VT_BOOL: {
        bool v;
        memcpy(&v, base, sizeof v);
        return v;
    }
    case VT_FRACTION: {
        double v;
        memcpy(&v, base, sizeof v);
        return v;
    }
    case VT_ENUM:
    default: {
        int v; /* every kvshard enum is int-sized */
        memcpy(&v, base, sizeof v);
        return v;
    }
    }
}

/* The options only the xllm profile reads, in table order. */
static const kvshard__option_id xllm_inputs[KVSHARD__XLLM_INPUTS] = {
    KVSHARD__OPT_PREFIX_CACHE, KVSHARD__OPT_STATE_SLOTS, KVSHARD__OPT_DEVICE_TOTAL,
    KVSHARD__OPT_DEVICE_FREE,  KVSHARD__OPT_UTILIZATION, KVSHARD__OPT_MAX_CACHE_SIZE};

size_t kvshard__xllm_inputs_set(const char **names, const kvshard_options *options)
{
    const kvshard_options unset = KVSHARD_OPTIONS_INIT;
    size_t count = 0;
    for (size_t i = 0; i < KVSHARD__XLLM_INPUTS; i++) {
        const option_def *d = &defs[xllm_inputs[i]];
        double given = get_field(options, d), by_default = get_field(&unset, d);
        if (given < by_default || given > by_default)
            names[count++] = d->name;
    }
    return count;
}

static uint64_t get_bytes(const kvshard_options *o, const option_def *d)
{
    uint64_t v;
    memcpy(&v, (const char *)o + d->offset, sizeof v);
    return v;
}

static void set_field(kvshard_options *o, const option_def *d, uint64_t value, double fraction)
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
    case VT_FRACTION: memcpy(base, &fraction, sizeof fraction); break;
    case VT_ENUM: {
        int v = (int)(int64_t)value;
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

/* A value an enum option may hold: one of its words' values, or the
 * "default" ownership, a caller's unset value that no word names. */
static bool enum_value_ok(const option_def *d, int64_t value)
{
    return word_of_value(d->words, value) ||
           (d->words == ownership_words && value == KVSHARD_OWNERSHIP_DEFAULT);
}

/* A fraction option's range: above 0 and at most 1 (NaN is neither). */
static bool fraction_ok(double value)
{
    return value > 0.0 && value <= 1.0;
}

/* Whether `value` is allowed for `d`; the error names the option. `text` is
 * the value as written, or NULL for a value from a caller's struct. */
static int check_value(const option_def *d, uint64_t value, double fraction, const char *text,
                       size_t len, const char *source, kvshard__mark mark, kvshard_error *err)
{
    switch (d->type) {
    case VT_U32:
    case VT_BYTES:
        if (!text && value == 0 && d->unset_ok)
            return KVSHARD_OK;
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
    case VT_FRACTION:
        if (!fraction_ok(fraction)) {
            char shown[48];
            if (text)
                snprintf(shown, sizeof shown, "%.*s", (int)(len > 40 ? 40 : len), text);
            else
                snprintf(shown, sizeof shown, "%g", fraction);
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: %s is out of range; expected a fraction above 0 and at "
                                 "most 1",
                                 d->name, shown);
        }
        return KVSHARD_OK;
    case VT_BOOL: return KVSHARD_OK;
    case VT_ENUM:
    default:
        if (!enum_value_ok(d, (int64_t)value))
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

static bool equal_nocase(const char *text, size_t len, const char *expected)
{
    if (strlen(expected) != len)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (tolower((unsigned char)text[i]) != expected[i])
            return false;
    }
    return true;
}

int kvshard__bool_text(const char *text, size_t len, kvshard__value_style style)
{
    static const char *const yes[] = {"true", "1", "yes", "t", "y"};
    static const char *const no[] = {"false", "0", "no", "f", "n"};
    if (style == KVSHARD__VALUE_QUOTED)
        return -1;
    if (style == KVSHARD__VALUE_PLAIN)
        return kvshard__text_is(text, len, "true")    ? 1
               : kvshard__text_is(text, len, "false") ? 0
                                                      : -1;
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (equal_nocase(text, len, yes[i]))
            return 1;
        if (equal_nocase(text, len, no[i]))
            return 0;
    }
    return -1;
}

#define SHOWN(len) ((int)((len) > 40 ? 40 : (len)))

int kvshard__option_parse(kvshard_options *options, kvshard__option_id id, const char *text,
                          size_t len, kvshard__value_style style, const char *source,
                          kvshard__mark mark, kvshard_error *err)
{
    const option_def *d = &defs[id];
    uint64_t n = 0;
    double fraction = 0.0;
    switch (d->type) {
    case VT_U32:
        if (style == KVSHARD__VALUE_QUOTED)
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found the string \"%.*s\"", d->name,
                                 SHOWN(len), text);
        /* In YAML, 010 is octal to some readers and decimal to others. */
        if (style == KVSHARD__VALUE_PLAIN && len > 1 && text[0] == '0' &&
            kvshard__all_digits(text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" has a leading zero, which YAML readers take for "
                                 "octal; write the number without it",
                                 d->name, SHOWN(len), text);
        switch (kvshard__scan_uint(&n, text, len)) {
        case KVSHARD__INT_NOT_INTEGER:
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected an integer, found \"%.*s\"", d->name, SHOWN(len),
                                 text);
        case KVSHARD__INT_NEGATIVE:
            if (d->below_min == KVSHARD_EPARALLEL) /* "is -3; it must be at least 1" */
                return check_value(d, 0, 0.0, text, len, source, mark, err);
            return kvshard__range_error(err, d->name, text, len, 0, d->min, d->max, source, mark);
        case KVSHARD__INT_TOO_LARGE: n = UINT64_MAX; break;
        case KVSHARD__INT_OK: break;
        }
        break;
    case VT_BOOL: {
        int b = kvshard__bool_text(text, len, style);
        if (b < 0)
            return kvshard__fail(
                err, KVSHARD_ETYPE, source, mark, "%s: expected %s, found %s\"%.*s\"", d->name,
                style == KVSHARD__VALUE_FLAG ? "true or false (or 1, 0, yes, no)" : "true or false",
                style == KVSHARD__VALUE_QUOTED ? "the string " : "", SHOWN(len), text);
        n = (uint64_t)b;
        break;
    }
    case VT_BYTES: {
        if (style == KVSHARD__VALUE_QUOTED && kvshard__all_digits(text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected a number of bytes, found the string \"%.*s\"",
                                 d->name, SHOWN(len), text);
        if (style == KVSHARD__VALUE_PLAIN && len > 1 && text[0] == '0' && text[1] >= '0' &&
            text[1] <= '9')
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: \"%.*s\" has a leading zero, which YAML readers take for "
                                 "octal; write the number without it",
                                 d->name, SHOWN(len), text);
        int rc = kvshard__parse_size(&n, text, len, d->min, d->name, source, mark, err);
        if (rc)
            return rc;
        break;
    }
    case VT_FRACTION:
        if (style == KVSHARD__VALUE_QUOTED || !kvshard__scan_decimal(&fraction, text, len))
            return kvshard__fail(err, KVSHARD_ETYPE, source, mark,
                                 "%s: expected a fraction such as 0.9, found %s\"%.*s\"", d->name,
                                 style == KVSHARD__VALUE_QUOTED ? "the string " : "", SHOWN(len),
                                 text);
        break;
    case VT_ENUM:
    default: {
        const word *w = d->words;
        while (w->text && !kvshard__text_is(text, len, w->text))
            w++;
        if (!w->text) {
            char expected[160];
            list_words(expected, sizeof expected, d->words);
            return kvshard__fail(err, KVSHARD_ERANGE, source, mark,
                                 "%s: expected %s, found \"%.*s\"", d->name, expected, SHOWN(len),
                                 text);
        }
        n = (uint64_t)(int64_t)w->value;
        break;
    }
    }
    int rc = check_value(d, n, fraction, text, len, source, mark, err);
    if (rc == KVSHARD_OK)
        set_field(options, d, n, fraction);
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
        const option_def *d = &defs[i];
        /* Values in range pass without the general path, which reads every
         * field as a double (a plan checks every option). */
        const char *base = (const char *)options + d->offset;
        if (d->type == VT_BOOL)
            continue;
        if (d->type == VT_U32 || d->type == VT_BYTES) {
            uint64_t u;
            if (d->type == VT_U32) {
                uint32_t u32;
                memcpy(&u32, base, sizeof u32);
                u = u32;
            } else {
                memcpy(&u, base, sizeof u);
            }
            if ((u == 0 && d->unset_ok) || (u >= d->min && u <= d->max))
                continue;
        } else if (d->type == VT_ENUM) {
            int e; /* every kvshard enum is int-sized */
            memcpy(&e, base, sizeof e);
            if (enum_value_ok(d, e))
                continue;
        } else if (d->type == VT_FRACTION) {
            double f;
            memcpy(&f, base, sizeof f);
            if (fraction_ok(f))
                continue;
        }
        double v = get_field(options, d);
        uint64_t n = d->type == VT_BYTES ? get_bytes(options, d)
                     : v < 0.0           ? (uint64_t)(int64_t)v
                                         : (uint64_t)v;
        int rc = check_value(d, n, v, NULL, 0, "", kvshard__no_mark, err);
        if (rc)
            return rc;
    }
    return KVSHARD_OK;
}

kvshard_options kvshard__options_settle(const kvshard_options *options)
{
    kvshard_options o = *options;
    bool xllm = o.engine == KVSHARD_ENGINE_XLLM;
    if (o.block_size == 0)
        o.block_size = xllm ? 128u : 16u;
    if (o.max_seqs == 0)
        o.max_seqs = xllm ? 200u : 256u;
    if (o.ownership == KVSHARD_OWNERSHIP_DEFAULT)
        o.ownership = xllm ? KVSHARD_OWNERSHIP_GLOBAL : KVSHARD_OWNERSHIP_ORDINAL;
    return o;
}

uint32_t kvshard__attn_tp_size(const kvshard_options *options)
{
    uint64_t dc = (uint64_t)options->dp_size * options->cp_size;
    if (dc == 0 || options->world_size % dc != 0)
        return 0;
    return (uint32_t)(options->world_size / dc);
}

int kvshard_options_set(kvshard_options *options, const char *key, const char *value,
                        const char *origin, kvshard_error *err)
{
    kvshard__error_reset(err);
    if (!options || !key || !value)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "options, key and value must not be NULL");
    int rc = kvshard__options_check(options, err);
    if (rc)
        return rc;
    const char *from = origin ? origin : "option";
    kvshard__option_id id = kvshard__option_find(key, strlen(key), true, options->engine);
    if (id == KVSHARD__OPT_COUNT) {
        char shown[96];
        kvshard__excerpt(shown, sizeof shown, key, strlen(key), 64);
        return kvshard__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard__no_mark,
                             "unknown option \"%s\"", shown);
    }
    return kvshard__option_parse(options, id, value, strlen(value), KVSHARD__VALUE_FLAG, from,
                                 kvshard__no_mark, err);
}

const char *kvshard_ownership_name(kvshard_ownership ownership)
{
    if (ownership == KVSHARD_OWNERSHIP_DEFAULT)
        return "default";
    const word *w = word_of_value(ownership_words, ownership);
    return w ? w->text : "unknown";
}

const char *kvshard_engine_name(kvshard_engine engine)
{
    const word *w = word_of_value(engine_words, engine);
    return w ? w->text : "unknown";
}
