/* Deployment options (SPEC §6): one table, shared by files and flags. */
#include "internal.h"

#include <string.h>

typedef enum value_type { VT_UINT, VT_BOOL, VT_SIZE, VT_OWNERSHIP, VT_KV_DTYPE } value_type;

static const struct option_def {
    const char *name;
    kvs_option_section section;
    value_type type;
    uint64_t min;
    uint64_t max;
} defs[KVS_OPT_COUNT] = {
    [KVS_OPT_WORLD_SIZE] = {"world_size", KVS_SECTION_PARALLEL, VT_UINT, 1, KVSHARD_MAX_RANKS},
    [KVS_OPT_DP_SIZE] = {"dp_size", KVS_SECTION_PARALLEL, VT_UINT, 1, KVSHARD_MAX_RANKS},
    [KVS_OPT_CP_SIZE] = {"cp_size", KVS_SECTION_PARALLEL, VT_UINT, 1, KVSHARD_MAX_RANKS},
    [KVS_OPT_ENABLE_SPLIT] = {"enable_layerwise_split", KVS_SECTION_PARALLEL, VT_BOOL, 0, 1},
    [KVS_OPT_SPLIT_SIZE] = {"layerwise_split_size", KVS_SECTION_PARALLEL, VT_UINT, 1,
                            KVSHARD_MAX_RANKS},
    [KVS_OPT_OWNERSHIP] = {"ownership", KVS_SECTION_PARALLEL, VT_OWNERSHIP, 0, 0},
    [KVS_OPT_IS_DRAFT] = {"is_draft", KVS_SECTION_PARALLEL, VT_BOOL, 0, 1},
    [KVS_OPT_KV_CACHE_DTYPE] = {"kv_cache_dtype", KVS_SECTION_CACHE, VT_KV_DTYPE, 0, 0},
    [KVS_OPT_BLOCK_SIZE] = {"block_size", KVS_SECTION_CACHE, VT_UINT, 1, KVSHARD_MAX_BLOCK_SIZE},
    [KVS_OPT_MEMORY_PER_RANK] = {"memory_per_rank", KVS_SECTION_CACHE, VT_SIZE, 1, UINT64_MAX},
    [KVS_OPT_MAX_SEQS] = {"max_seqs", KVS_SECTION_CACHE, VT_UINT, 1, 1u << 24},
    [KVS_OPT_SPECULATIVE_TOKENS] = {"num_speculative_tokens", KVS_SECTION_CACHE, VT_UINT, 0, 1024},
    [KVS_OPT_SCRATCH_LAYERS] = {"scratch_layers", KVS_SECTION_CACHE, VT_UINT, 0, 1024},
};

const char *kvs_option_name(kvs_option_id id)
{
    return id < KVS_OPT_COUNT ? defs[id].name : "";
}

kvs_option_section kvs_option_section_of(kvs_option_id id)
{
    return defs[id].section;
}

kvs_option_id kvs_option_find(const char *key, size_t len)
{
    for (int i = 0; i < KVS_OPT_COUNT; i++) {
        if (strlen(defs[i].name) == len && memcmp(defs[i].name, key, len) == 0)
            return (kvs_option_id)i;
    }
    return KVS_OPT_COUNT;
}

static bool text_is(const char *text, size_t len, const char *word)
{
    return strlen(word) == len && memcmp(text, word, len) == 0;
}

/* Bytes with an optional binary suffix: 20GiB, 512 MiB, 1073741824. */
static int parse_size(uint64_t *out, const char *text, size_t len, const char *what,
                      const char *source, kvs_mark mark, kvshard_error *err)
{
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}, {"B", 0}};
    size_t digits = 0;
    while (digits < len && text[digits] >= '0' && text[digits] <= '9')
        digits++;
    size_t rest = digits;
    while (rest < len && text[rest] == ' ')
        rest++;
    unsigned shift = 0;
    if (rest < len) {
        size_t u = 0;
        while (u < sizeof units / sizeof units[0] && !text_is(text + rest, len - rest, units[u].suffix))
            u++;
        if (u == sizeof units / sizeof units[0] || digits == 0) {
            if (len > 0 && text[0] == '-')
                return kvs_fail(err, KVSHARD_ERANGE, source, mark,
                                "%s: \"%.*s\" is negative; expected a size in bytes", what,
                                (int)(len > 40 ? 40 : len), text);
            return kvs_fail(err, KVSHARD_ETYPE, source, mark,
                            "%s: expected bytes or a size with KiB, MiB, GiB or TiB, found "
                            "\"%.*s\"",
                            what, (int)(len > 40 ? 40 : len), text);
        }
        shift = units[u].shift;
    }
    uint64_t n;
    int rc = kvs_parse_uint(&n, text, digits, 1, UINT64_MAX, what, source, mark, err);
    if (rc)
        return rc;
    if (shift && n > (UINT64_MAX >> shift))
        return kvs_fail(err, KVSHARD_ERANGE, source, mark,
                        "%s: %.*s does not fit in 64 bits of bytes", what,
                        (int)(len > 40 ? 40 : len), text);
    *out = n << shift;
    return KVSHARD_OK;
}

/* world_size, dp_size, cp_size and layerwise_split_size below 1 have their
 * own status (SPEC §3), whether they come from a file, a flag or the API. */
static bool is_parallel_size(kvs_option_id id)
{
    return id == KVS_OPT_WORLD_SIZE || id == KVS_OPT_DP_SIZE || id == KVS_OPT_CP_SIZE ||
           id == KVS_OPT_SPLIT_SIZE;
}

/* An integer that is zero or negative: "0", "-3", "+0". */
static bool below_one(const char *text, size_t len)
{
    size_t i = len > 0 && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    if (!kvs_all_digits(text + i, len - i))
        return false;
    if (text[0] == '-')
        return true;
    for (; i < len; i++) {
        if (text[i] != '0')
            return false;
    }
    return true;
}

int kvs_option_parse(kvshard_options *options, kvs_option_id id, const char *text, size_t len,
                     kvs_value_style style, const char *source, kvs_mark mark,
                     kvshard_error *err)
{
    const struct option_def *d = &defs[id];
    uint64_t n = 0;
    int rc;
    switch (d->type) {
    case VT_UINT:
        if (style != KVS_VALUE_PLAIN)
            return kvs_fail(err, KVSHARD_ETYPE, source, mark,
                            "%s: expected an integer, found the string \"%.*s\"", d->name,
                            (int)(len > 40 ? 40 : len), text);
        if (is_parallel_size(id) && below_one(text, len))
            return kvs_fail(err, KVSHARD_EPARALLEL, source, mark, "%s is %.*s; it must be at least 1",
                            d->name, (int)(len > 40 ? 40 : len), text);
        if ((rc = kvs_parse_uint(&n, text, len, d->min, d->max, d->name, source, mark, err)) != 0)
            return rc;
        break;
    case VT_BOOL:
        if (style != KVS_VALUE_PLAIN || !(text_is(text, len, "true") || text_is(text, len, "false")))
            return kvs_fail(err, KVSHARD_ETYPE, source, mark,
                            "%s: expected true or false, found %s\"%.*s\"", d->name,
                            style == KVS_VALUE_PLAIN ? "" : "the string ",
                            (int)(len > 40 ? 40 : len), text);
        n = text_is(text, len, "true");
        break;
    case VT_SIZE:
        if (style != KVS_VALUE_PLAIN && kvs_all_digits(text, len))
            return kvs_fail(err, KVSHARD_ETYPE, source, mark,
                            "%s: expected a number of bytes, found the string \"%.*s\"", d->name,
                            (int)(len > 40 ? 40 : len), text);
        if ((rc = parse_size(&n, text, len, d->name, source, mark, err)) != 0)
            return rc;
        break;
    case VT_OWNERSHIP:
        if (text_is(text, len, "ordinal"))
            n = KVSHARD_OWNERSHIP_ORDINAL;
        else if (text_is(text, len, "global"))
            n = KVSHARD_OWNERSHIP_GLOBAL;
        else
            return kvs_fail(err, KVSHARD_ERANGE, source, mark,
                            "%s: expected ordinal or global, found \"%.*s\"", d->name,
                            (int)(len > 40 ? 40 : len), text);
        break;
    case VT_KV_DTYPE:
        if (text_is(text, len, "auto"))
            n = KVSHARD_KV_DTYPE_AUTO;
        else if (text_is(text, len, "bf16") || text_is(text, len, "bfloat16"))
            n = KVSHARD_KV_DTYPE_BF16;
        else if (text_is(text, len, "fp16") || text_is(text, len, "float16"))
            n = KVSHARD_KV_DTYPE_FP16;
        else if (text_is(text, len, "fp8"))
            n = KVSHARD_KV_DTYPE_FP8;
        else
            return kvs_fail(err, KVSHARD_ERANGE, source, mark,
                            "%s: expected auto, bf16, fp16 or fp8, found \"%.*s\"", d->name,
                            (int)(len > 40 ? 40 : len), text);
        break;
    }
    switch (id) {
    case KVS_OPT_WORLD_SIZE: options->world_size = (uint32_t)n; break;
    case KVS_OPT_DP_SIZE: options->dp_size = (uint32_t)n; break;
    case KVS_OPT_CP_SIZE: options->cp_size = (uint32_t)n; break;
    case KVS_OPT_ENABLE_SPLIT: options->enable_layerwise_split = n != 0; break;
    case KVS_OPT_SPLIT_SIZE: options->layerwise_split_size = (uint32_t)n; break;
    case KVS_OPT_OWNERSHIP: options->ownership = (kvshard_ownership)n; break;
    case KVS_OPT_IS_DRAFT: options->is_draft = n != 0; break;
    case KVS_OPT_KV_CACHE_DTYPE: options->kv_cache_dtype = (kvshard_kv_dtype)n; break;
    case KVS_OPT_BLOCK_SIZE: options->block_size = (uint32_t)n; break;
    case KVS_OPT_MEMORY_PER_RANK: options->memory_per_rank = n; break;
    case KVS_OPT_MAX_SEQS: options->max_seqs = (uint32_t)n; break;
    case KVS_OPT_SPECULATIVE_TOKENS: options->num_speculative_tokens = (uint32_t)n; break;
    case KVS_OPT_SCRATCH_LAYERS: options->scratch_layers = (uint32_t)n; break;
    case KVS_OPT_COUNT: break;
    }
    return KVSHARD_OK;
}

int kvs_options_check(const kvshard_options *options, kvshard_error *err)
{
    kvs_mark none = {0, 0, 0};
    if (options->version != KVSHARD_OPTIONS_VERSION)
        return kvs_fail(err, KVSHARD_EINVAL, "", none,
                        "kvshard_options.version is %u; start from KVSHARD_OPTIONS_INIT",
                        options->version);
    const uint64_t values[KVS_OPT_COUNT] = {
        [KVS_OPT_WORLD_SIZE] = options->world_size,
        [KVS_OPT_DP_SIZE] = options->dp_size,
        [KVS_OPT_CP_SIZE] = options->cp_size,
        [KVS_OPT_SPLIT_SIZE] = options->layerwise_split_size,
        [KVS_OPT_BLOCK_SIZE] = options->block_size,
        [KVS_OPT_MAX_SEQS] = options->max_seqs,
        [KVS_OPT_SPECULATIVE_TOKENS] = options->num_speculative_tokens,
        [KVS_OPT_SCRATCH_LAYERS] = options->scratch_layers,
    };
    for (int i = 0; i < KVS_OPT_COUNT; i++) {
        if (defs[i].type == VT_UINT && (values[i] < defs[i].min || values[i] > defs[i].max))
            return kvs_fail(err, KVSHARD_ERANGE, "", none,
                            "%s is %llu; expected an integer from %llu to %llu", defs[i].name,
                            (unsigned long long)values[i], (unsigned long long)defs[i].min,
                            (unsigned long long)defs[i].max);
    }
    if ((unsigned)options->ownership > KVSHARD_OWNERSHIP_GLOBAL)
        return kvs_fail(err, KVSHARD_ERANGE, "", none, "ownership %d is not a kvshard_ownership",
                        (int)options->ownership);
    if ((unsigned)options->kv_cache_dtype > KVSHARD_KV_DTYPE_FP8)
        return kvs_fail(err, KVSHARD_ERANGE, "", none,
                        "kv_cache_dtype %d is not a kvshard_kv_dtype", (int)options->kv_cache_dtype);
    return KVSHARD_OK;
}

int kvshard_options_set(kvshard_options *options, const char *key, const char *value,
                        kvshard_error *err)
{
    kvs_error_reset(err);
    kvs_mark none = {0, 0, 0};
    if (!options || !key || !value)
        return kvs_fail(err, KVSHARD_EINVAL, "", none, "options, key and value must not be NULL");
    if (options->version != KVSHARD_OPTIONS_VERSION)
        return kvs_fail(err, KVSHARD_EINVAL, "", none,
                        "kvshard_options.version is %u; start from KVSHARD_OPTIONS_INIT",
                        options->version);
    kvs_option_id id = kvs_option_find(key, strlen(key));
    if (id == KVS_OPT_COUNT)
        return kvs_fail(err, KVSHARD_EUNKNOWNKEY, "", none, "unknown option \"%s\"", key);
    return kvs_option_parse(options, id, value, strlen(value), KVS_VALUE_PLAIN, "", none, err);
}

const char *kvshard_ownership_name(kvshard_ownership ownership)
{
    return ownership == KVSHARD_OWNERSHIP_GLOBAL ? "global" : "ordinal";
}
