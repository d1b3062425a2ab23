/* Deployment options: the table of keys and the one validator behind files,
 * flags and kvshard_options built by callers. */
#include "deploy/options.h"

#include "base/call.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const kvshard_value__word ownership_words[] = {
    {"ordinal", KVSHARD_OWNERSHIP_ORDINAL},
    {"global", KVSHARD_OWNERSHIP_GLOBAL},
    {"contiguous", KVSHARD_OWNERSHIP_CONTIGUOUS},
    {NULL, 0},
};

/* Engines name one-byte caches int8, fp8_e4m3 and fp8_e5m2: fp8 with its scales. */
static const kvshard_value__word kv_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp16", KVSHARD_DTYPE_FP16},
    {"float16", KVSHARD_DTYPE_FP16},  {"fp8", KVSHARD_DTYPE_FP8},
    {"fp8_e4m3", KVSHARD_DTYPE_FP8},  {"fp8_e5m2", KVSHARD_DTYPE_FP8},
    {"int8", KVSHARD_DTYPE_INT8},     {NULL, 0},
};

static const kvshard_value__word state_dtype_words[] = {
    {"auto", KVSHARD_DTYPE_AUTO},     {"bf16", KVSHARD_DTYPE_BF16},
    {"bfloat16", KVSHARD_DTYPE_BF16}, {"fp16", KVSHARD_DTYPE_FP16},
    {"float16", KVSHARD_DTYPE_FP16},  {"fp32", KVSHARD_DTYPE_FP32},
    {"float32", KVSHARD_DTYPE_FP32},  {NULL, 0},
};

static const kvshard_value__word pp_rule_words[] = {
    {"vllm", KVSHARD_PP_RULE_VLLM},     {"sglang", KVSHARD_PP_RULE_SGLANG},
    {"trtllm", KVSHARD_PP_RULE_TRTLLM}, {"even", KVSHARD_PP_RULE_EVEN},
    {NULL, 0},
};

static const kvshard_value__word rank_layout_words[] = {
    {"vllm", KVSHARD_RANK_LAYOUT_VLLM},     {"sglang", KVSHARD_RANK_LAYOUT_SGLANG},
    {"trtllm", KVSHARD_RANK_LAYOUT_TRTLLM}, {"xllm", KVSHARD_RANK_LAYOUT_XLLM},
    {NULL, 0},
};

typedef struct option_def {
    kvshard_value__def value;
    kvshard__section section;
    size_t offset; /* of the field in kvshard_options */
} option_def;

#define FIELD(f) offsetof(kvshard_options, f)
#define PARALLEL KVSHARD__SECTION_PARALLEL
#define CACHE KVSHARD__SECTION_CACHE

#define U32 KVSHARD__VT_U32
#define BYTES KVSHARD__VT_BYTES
#define BOOL KVSHARD__VT_BOOL
#define WORD KVSHARD__VT_WORD

static const option_def defs[KVSHARD__OPT_COUNT] = {
    [KVSHARD__OPT_WORLD_SIZE] = {{"world_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL,
                                  false, NULL, NULL},
                                 PARALLEL,
                                 FIELD(world_size)},
    [KVSHARD__OPT_DP_SIZE] = {{"dp_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, false,
                               NULL, NULL},
                              PARALLEL,
                              FIELD(dp_size)},
    [KVSHARD__OPT_CP_SIZE] = {{"cp_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, false,
                               NULL, NULL},
                              PARALLEL,
                              FIELD(cp_size)},
    [KVSHARD__OPT_ENABLE_SPLIT] = {{"enable_layerwise_split", BOOL, 0, 1, KVSHARD_ERANGE, false,
                                    NULL, NULL},
                                   PARALLEL,
                                   FIELD(enable_layerwise_split)},
    [KVSHARD__OPT_SPLIT_SIZE] = {{"layerwise_split_size", U32, 1, KVSHARD_MAX_RANKS,
                                  KVSHARD_EPARALLEL, false, NULL, NULL},
                                 PARALLEL,
                                 FIELD(layerwise_split_size)},
    [KVSHARD__OPT_OWNERSHIP] = {{"ownership", WORD, 0, 0, KVSHARD_ERANGE, true, ownership_words, NULL},
                                PARALLEL,
                                FIELD(ownership)},
    [KVSHARD__OPT_IS_DRAFT] = {{"is_draft", BOOL, 0, 1, KVSHARD_ERANGE, false, NULL, NULL},
                               PARALLEL,
                               FIELD(is_draft)},
    [KVSHARD__OPT_ENGINE] = {{"engine", WORD, 0, 0, KVSHARD_ERANGE, false,
                              kvshard_profiles__engine_words, NULL},
                             CACHE,
                             FIELD(engine)},
    [KVSHARD__OPT_KV_CACHE_DTYPE] = {{"kv_cache_dtype", WORD, 0, 0, KVSHARD_ERANGE, false,
                                      kv_dtype_words, NULL},
                                     CACHE,
                                     FIELD(kv_cache_dtype)},
    [KVSHARD__OPT_STATE_DTYPE] = {{"state_dtype", WORD, 0, 0, KVSHARD_ERANGE, false,
                                   state_dtype_words, NULL},
                                  CACHE,
                                  FIELD(state_dtype)},
    [KVSHARD__OPT_BLOCK_SIZE] = {{"block_size", U32, 1, KVSHARD_MAX_BLOCK_SIZE, KVSHARD_ERANGE,
                                  true, NULL, NULL},
                                 CACHE,
                                 FIELD(block_size)},
    [KVSHARD__OPT_MEMORY_PER_RANK] = {{"memory_per_rank", BYTES, 1, UINT64_MAX, KVSHARD_ERANGE,
                                       true, NULL, NULL},
                                      CACHE,
                                      FIELD(memory_per_rank)},
    [KVSHARD__OPT_MAX_SEQS] = {{"max_seqs", U32, 1, 1u << 24, KVSHARD_ERANGE, true, NULL, NULL},
                               CACHE,
                               FIELD(max_seqs)},
    [KVSHARD__OPT_DRAFT_TOKENS] = {{"num_speculative_tokens", U32, 0, 1024, KVSHARD_ERANGE, false,
                                    NULL, NULL},
                                   CACHE,
                                   FIELD(num_speculative_tokens)},
    [KVSHARD__OPT_SCRATCH_LAYERS] = {{"scratch_layers", U32, 0, 1024, KVSHARD_ERANGE, false,
                                      NULL, NULL},
                                     CACHE,
                                     FIELD(scratch_layers)},
    [KVSHARD__OPT_CONTEXT_LENGTH] = {{"context_length", U32, 1, KVSHARD_MAX_CONTEXT_LENGTH,
                                      KVSHARD_ERANGE, true, NULL, NULL},
                                     CACHE,
                                     FIELD(context_length)},
    [KVSHARD__OPT_PP_SIZE] = {{"pp_size", U32, 1, KVSHARD_MAX_RANKS, KVSHARD_EPARALLEL, true, NULL,
                               NULL},
                              PARALLEL,
                              FIELD(pp_size)},
    [KVSHARD__OPT_PP_RULE] = {{"pp_partition_rule", WORD, 0, 0, KVSHARD_EPARTITION, true,
                               pp_rule_words, NULL},
                              PARALLEL,
                              FIELD(pp_partition_rule)},
    /* Its text is read into a list the deployment keeps (deploy.c); the
     * field here is the list's length. */
    [KVSHARD__OPT_PP_PARTITION] = {{"pp_partition", KVSHARD__VT_TEXT, 0, 0, KVSHARD_EPARTITION,
                                    true, NULL, NULL},
                                   PARALLEL,
                                   FIELD(pp_partition_count)},
    [KVSHARD__OPT_RANK_LAYOUT] = {{"rank_layout", WORD, 0, 0, KVSHARD_ERANGE, true,
                                   rank_layout_words, NULL},
                                  PARALLEL,
                                  FIELD(rank_layout)},
    [KVSHARD__OPT_SWEEP_PP] = {{"sweep_pp", BOOL, 0, 1, KVSHARD_ERANGE, false, NULL, NULL},
                               PARALLEL,
                               FIELD(sweep_pp)},
};

#undef U32
#undef BYTES
#undef BOOL
#undef WORD

const char *kvshard__section_name(kvshard__section section)
{
    return section == KVSHARD__SECTION_PARALLEL ? "parallel" : "cache";
}

const char *kvshard__option_name(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT ? defs[id].value.name : "";
}

kvshard__section kvshard__option_section(kvshard__option_id id)
{
    return defs[id].section;
}

bool kvshard__option_is_bool(kvshard__option_id id)
{
    return id < KVSHARD__OPT_COUNT && defs[id].value.type == KVSHARD__VT_BOOL;
}

static kvshard__option_id option_named(const char *key, size_t len)
{
    for (int i = 0; i < KVSHARD__OPT_COUNT; i++) {
        if (kvshard__text_is(key, len, defs[i].value.name))
            return (kvshard__option_id)i;
    }
    return KVSHARD__OPT_COUNT;
}

kvshard__option_id kvshard__option_id_of(const char *name, size_t len)
{
    return option_named(name, len);
}

/* Longest flag name an argparse profile knows; longer ones are unknown. */
#define FLAG_NAME_MAX 64

kvshard__deploy_key kvshard__key_lookup(const char *key, size_t len,
                                        const kvshard__profile *flags_of)
{
    kvshard__deploy_key ref = {KVSHARD__OPT_COUNT, NULL, NULL};
    char normal[FLAG_NAME_MAX];
    bool argparse = flags_of && flags_of->flag_style == KVSHARD_PROFILE__ARGPARSE;
    if (argparse) {
        /* --max-model-len is --max_model_len. */
        if (len >= sizeof normal)
            return ref;
        for (size_t i = 0; i < len; i++)
            normal[i] = key[i] == '-' ? '_' : key[i];
        key = normal;
    }
    /* The engine's own spelling first: an alias may carry the engine's
     * words for an option of the same name (vLLM's --kv-cache-dtype). */
    const kvshard_profile__alias *alias = flags_of ? kvshard_profiles__alias(flags_of, key, len)
                                                   : NULL;
    ref.option = alias ? KVSHARD__OPT_COUNT : option_named(key, len);
    if (ref.option != KVSHARD__OPT_COUNT)
        return ref;
    if (alias) {
        ref.option = option_named(alias->key, strlen(alias->key));
        ref.words = alias->words;
        if (ref.option == KVSHARD__OPT_COUNT)
            ref.setting = argparse ? kvshard_profiles__own_input(flags_of, alias->key,
                                                                 strlen(alias->key))
                                   : kvshard_profiles__gflags_input(alias->key, strlen(alias->key));
        return ref;
    }
    ref.setting = !flags_of  ? kvshard_profiles__input(key, len)
                  : argparse ? kvshard_profiles__own_input(flags_of, key, len)
                             : kvshard_profiles__gflags_input(key, len);
    return ref;
}

/* ---- fields by offset ----------------------------------------------------- */

/* A field's value; every enum of kvshard is int-sized. */
static kvshard_value get_field(const kvshard_options *o, const option_def *d)
{
    const char *base = (const char *)o + d->offset;
    kvshard_value v = {0, 0.0, NULL, 0};
    switch (d->value.type) {
    case KVSHARD__VT_U32: {
        uint32_t x;
        memcpy(&x, base, sizeof x);
        v.u = x;
        break;
    }
    case KVSHARD__VT_BYTES: memcpy(&v.u, base, sizeof v.u); break;
    case KVSHARD__VT_BOOL: {
        bool x;
        memcpy(&x, base, sizeof x);
        v.u = x;
        break;
    }
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL: memcpy(&v.d, base, sizeof v.d); break;
    case KVSHARD__VT_WORD: {
        int x;
        memcpy(&x, base, sizeof x);
        v.u = (uint64_t)(int64_t)x;
        break;
    }
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT: break; /* no option holds text */
    }
    return v;
}

static void set_field(kvshard_options *o, const option_def *d, kvshard_value v)
{
    char *base = (char *)o + d->offset;
    switch (d->value.type) {
    case KVSHARD__VT_U32: {
        uint32_t x = (uint32_t)v.u;
        memcpy(base, &x, sizeof x);
        break;
    }
    case KVSHARD__VT_BYTES: memcpy(base, &v.u, sizeof v.u); break;
    case KVSHARD__VT_BOOL: {
        bool x = v.u != 0;
        memcpy(base, &x, sizeof x);
        break;
    }
    case KVSHARD__VT_FRACTION:
    case KVSHARD__VT_DECIMAL: memcpy(base, &v.d, sizeof v.d); break;
    case KVSHARD__VT_WORD: {
        int x = (int)(int64_t)v.u;
        memcpy(base, &x, sizeof x);
        break;
    }
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT: break;
    }
}

int kvshard__option_parse(kvshard_options *options, kvshard__option_id id, const char *text,
                          size_t len, kvshard__value_style style,
                          const kvshard_value__word *words, const char *source,
                          kvshard__mark mark, kvshard_error *err)
{
    kvshard_value v;
    kvshard_value__def def = defs[id].value;
    if (words && def.type == KVSHARD__VT_WORD)
        def.words = words;
    int rc = kvshard_value__parse(&v, &def, text, len, style, source, mark, err);
    if (rc == KVSHARD_OK)
        set_field(options, &defs[id], v);
    return rc;
}

kvshard_value kvshard__option_value(const kvshard_options *options, kvshard__option_id id)
{
    return get_field(options, &defs[id]);
}

const kvshard_value__def *kvshard__option_def(kvshard__option_id id)
{
    return &defs[id].value;
}

bool kvshard__option_changed(const kvshard_options *options, kvshard__option_id id)
{
    kvshard_options init = KVSHARD_OPTIONS_INIT;
    return !kvshard_value__equal(&defs[id].value, get_field(options, &defs[id]),
                                 get_field(&init, &defs[id]));
}

/* Whether an option's field holds a value in range, read straight from the
 * struct: every plan checks every option, and nearly always all pass. A
 * false answer sends the field through the general check, which words the
 * error (or accepts what this one does not decide). */
static bool field_in_range(const kvshard_options *o, const option_def *d)
{
    const char *base = (const char *)o + d->offset;
    const kvshard_value__def *v = &d->value;
    switch (v->type) {
    case KVSHARD__VT_U32: {
        uint32_t x;
        memcpy(&x, base, sizeof x);
        return (x == 0 && v->unset_ok) || (x >= v->min && x <= v->max);
    }
    case KVSHARD__VT_BYTES: {
        uint64_t x;
        memcpy(&x, base, sizeof x);
        return (x == 0 && v->unset_ok) || (x >= v->min && x <= v->max);
    }
    case KVSHARD__VT_WORD: {
        int x;
        memcpy(&x, base, sizeof x);
        return (x == -1 && v->unset_ok) || kvshard_value__word_of(v->words, x) != NULL;
    }
    case KVSHARD__VT_BOOL:
    case KVSHARD__VT_TEXT:
    case KVSHARD__VT_OBJECT: return true;
    default: return false;
    }
}

int kvshard__options_check(const kvshard_options *options, kvshard_error *err)
{
    int rc = kvshard_call__size(err, "kvshard_options", options->size, sizeof *options,
                                "KVSHARD_OPTIONS_INIT");
    for (int i = 0; rc == KVSHARD_OK && i < KVSHARD__OPT_COUNT; i++) {
        if (!field_in_range(options, &defs[i]))
            rc = kvshard_value__check(&defs[i].value, get_field(options, &defs[i]), err);
    }
    if (rc == KVSHARD_OK && options->pp_partition_count > KVSHARD_MAX_PP_PARTITION)
        return kvshard__fail(err, KVSHARD_EPARTITION, "", kvshard__no_mark,
                             "pp_partition has %u entries; at most %u are read "
                             "(KVSHARD_MAX_PP_PARTITION)",
                             options->pp_partition_count, KVSHARD_MAX_PP_PARTITION);
    if (rc == KVSHARD_OK && options->pp_partition_count > 0 && !options->pp_partition)
        return kvshard__fail(err, KVSHARD_EINVAL, "", kvshard__no_mark,
                             "pp_partition_count is %u but pp_partition is NULL",
                             options->pp_partition_count);
    return rc;
}

kvshard_options kvshard__options_settle(const kvshard_options *options)
{
    kvshard_options o = *options;
    const kvshard__profile *p = kvshard_profiles__of(o.engine);
    if (o.block_size == 0)
        o.block_size = p->block_size;
    if (o.max_seqs == 0)
        o.max_seqs = p->max_seqs;
    if (o.ownership == KVSHARD_OWNERSHIP_DEFAULT)
        o.ownership = p->ownership;
    if (o.pp_size == 0)
        o.pp_size = 1;
    if (o.pp_partition_count > 0)
        o.pp_partition_rule = KVSHARD_PP_RULE_EXPLICIT;
    else if (o.pp_partition_rule == KVSHARD_PP_RULE_DEFAULT)
        o.pp_partition_rule = KVSHARD_PP_RULE_VLLM;
    if (o.rank_layout == KVSHARD_RANK_LAYOUT_DEFAULT)
        o.rank_layout = p->rank_layout;
    return o;
}

uint32_t kvshard__attn_tp_size(const kvshard_options *options)
{
    uint64_t pp = options->pp_size ? options->pp_size : 1;
    uint64_t pdc = pp * options->dp_size * options->cp_size;
    if (pdc == 0 || options->world_size % pdc != 0)
        return 0;
    return (uint32_t)(options->world_size / pdc);
}

int kvshard_options_set(kvshard_options *options, const char *key, const char *value,
                        const char *origin, kvshard_error *err)
{
    int rc = kvshard_call__begin(err, options && key && value, "options, key and value");
    if (rc == KVSHARD_OK)
        rc = kvshard__options_check(options, err);
    if (rc)
        return rc;
    const char *from = origin ? origin : "option";
    kvshard__deploy_key ref =
        kvshard__key_lookup(key, strlen(key), kvshard_profiles__of(options->engine));
    if (ref.option == KVSHARD__OPT_PP_PARTITION)
        return kvshard__fail(err, KVSHARD_EINVAL, from, kvshard__no_mark,
                             "pp_partition is a list: set options->pp_partition (an array of "
                             "layer counts) and options->pp_partition_count");
    if (ref.option == KVSHARD__OPT_COUNT) {
        char shown[96];
        kvshard__excerpt(shown, sizeof shown, key, strlen(key), 64);
        if (ref.setting)
            return kvshard__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard__no_mark,
                                 "\"%s\" is a setting, not an option: set it with "
                                 "kvshard_settings_set()",
                                 shown);
        return kvshard__fail(err, KVSHARD_EUNKNOWNKEY, from, kvshard__no_mark,
                             "unknown option \"%s\"", shown);
    }
    return kvshard__option_parse(options, ref.option, value, strlen(value), KVSHARD__VALUE_FLAG,
                                 ref.words, from, kvshard__no_mark, err);
}

const char *kvshard_pp_rule_name(kvshard_pp_rule rule)
{
    if (rule == KVSHARD_PP_RULE_DEFAULT)
        return "default";
    if (rule == KVSHARD_PP_RULE_EXPLICIT)
        return "explicit";
    const kvshard_value__word *w = kvshard_value__word_of(pp_rule_words, rule);
    return w ? w->text : "unknown";
}

const char *kvshard_rank_layout_name(kvshard_rank_layout layout)
{
    if (layout == KVSHARD_RANK_LAYOUT_DEFAULT)
        return "default";
    const kvshard_value__word *w = kvshard_value__word_of(rank_layout_words, layout);
    return w ? w->text : "unknown";
}

const char *kvshard_ownership_name(kvshard_ownership ownership)
{
    if (ownership == KVSHARD_OWNERSHIP_DEFAULT)
        return "default";
    const kvshard_value__word *w = kvshard_value__word_of(ownership_words, ownership);
    return w ? w->text : "unknown";
}
