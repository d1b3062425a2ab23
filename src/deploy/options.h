/* Deployment options: one table of kvshard's own keys, one validator for
 * files, flags and the API alike; and where a key of either kind (an option
 * or an engine profile's setting) is found. */
#ifndef KVSHARD_DEPLOY_OPTIONS_H
#define KVSHARD_DEPLOY_OPTIONS_H

#include "base/format.h"
#include "deploy/settings.h"

typedef enum kvshard__option_id {
    KVSHARD__OPT_WORLD_SIZE,
    KVSHARD__OPT_DP_SIZE,
    KVSHARD__OPT_CP_SIZE,
    KVSHARD__OPT_ENABLE_SPLIT,
    KVSHARD__OPT_SPLIT_SIZE,
    KVSHARD__OPT_OWNERSHIP,
    KVSHARD__OPT_IS_DRAFT,
    KVSHARD__OPT_ENGINE,
    KVSHARD__OPT_KV_CACHE_DTYPE,
    KVSHARD__OPT_STATE_DTYPE,
    KVSHARD__OPT_BLOCK_SIZE,
    KVSHARD__OPT_MEMORY_PER_RANK,
    KVSHARD__OPT_MAX_SEQS,
    KVSHARD__OPT_DRAFT_TOKENS,
    KVSHARD__OPT_SCRATCH_LAYERS,
    KVSHARD__OPT_CONTEXT_LENGTH,
    KVSHARD__OPT_PP_SIZE,
    KVSHARD__OPT_PP_RULE,
    KVSHARD__OPT_PP_PARTITION, /* a list: the deployment keeps its entries */
    KVSHARD__OPT_RANK_LAYOUT,
    KVSHARD__OPT_SWEEP_PP,
    KVSHARD__OPT_DEVICE_MEMORY,
    KVSHARD__OPT_MEMORY_UTILIZATION,
    KVSHARD__OPT_ACTIVATION_RESERVE,
    KVSHARD__OPT_WEIGHTS_PER_RANK, /* a list: the deployment keeps its entries */
    KVSHARD__OPT_WEIGHTS_TOTAL,
    KVSHARD__OPT_WEIGHTS_EXPERTS,
    KVSHARD__OPT_EXPERT_PARALLEL,
    KVSHARD__OPT_GPUS_PER_NODE,
    /* The comm: section, read by the communication estimate only. */
    KVSHARD__OPT_COMM_DECODE,
    KVSHARD__OPT_COMM_PREFILL,
    KVSHARD__OPT_COMM_OWNER_OUTPUT,
    KVSHARD__OPT_COMM_LINK,
    KVSHARD__OPT_COMM_LINK_BANDWIDTH,
    KVSHARD__OPT_COMM_LINK_LATENCY,
    KVSHARD__OPT_COMM_ALPHA_RULE,
    KVSHARD__OPT_COMM_ACCELERATOR,
    KVSHARD__OPT_COMM_HBM_BANDWIDTH,
    KVSHARD__OPT_COMM_BATCH,
    KVSHARD__OPT_COMM_PROMPT_LENGTH,
    KVSHARD__OPT_COMM_CHUNK,
    KVSHARD__OPT_COMM_PREFIX_HIT,
    KVSHARD__OPT_COMM_ACTIVATION_DTYPE,
    KVSHARD__OPT_COUNT
} kvshard__option_id;

/* The link presets of the comm: section; 0: none given. */
typedef enum kvshard__comm_link {
    KVSHARD__LINK_NONE,
    KVSHARD__LINK_NVLINK4,
    KVSHARD__LINK_NVLINK5,
    KVSHARD__LINK_HCCS,
    KVSHARD__LINK_PCIE4X16,
    KVSHARD__LINK_PCIE5X16,
    KVSHARD__LINK_CUSTOM
} kvshard__comm_link;

/* The accelerator presets; 0: none given. */
typedef enum kvshard__comm_accelerator {
    KVSHARD__ACCEL_NONE,
    KVSHARD__ACCEL_H100,
    KVSHARD__ACCEL_H200,
    KVSHARD__ACCEL_B200,
    KVSHARD__ACCEL_MI300X,
    KVSHARD__ACCEL_ASCEND_910B,
    KVSHARD__ACCEL_ASCEND_910C,
    KVSHARD__ACCEL_BI_V100,
    KVSHARD__ACCEL_CUSTOM
} kvshard__comm_accelerator;

/* How a collective's latency grows with the group. */
typedef enum kvshard__alpha_rule {
    KVSHARD__ALPHA_LOG2,
    KVSHARD__ALPHA_LINEAR,
    KVSHARD__ALPHA_FLAT
} kvshard__alpha_rule;

/* The inputs of the communication estimate, as given; 0 is "not given"
 * in each (a mechanism of 0 is the profile's, KVSHARD__COMM_NONE). */
typedef struct kvshard__comm_inputs {
    kvshard__comm_mechanism decode;
    kvshard__comm_mechanism prefill;
    int owner_output; /* 0: broadcast of every head; 1: scatter of each rank's heads */
    kvshard__comm_link link;
    uint64_t link_bandwidth; /* bytes/s a direction */
    double link_latency_us;
    bool has_link_latency; /* given (0 is a latency: alpha = 0) */
    kvshard__alpha_rule alpha_rule;
    kvshard__comm_accelerator accelerator;
    uint64_t hbm_bandwidth; /* bytes/s */
    uint32_t batch;
    uint32_t prompt_length;
    uint32_t chunk;
    uint32_t prefix_hit;
    kvshard_dtype activation_dtype; /* KVSHARD_DTYPE_AUTO: the model's, bf16 for fp8 */
} kvshard__comm_inputs;

/* A link preset: its word, β in bytes/s a direction, α in µs, and where
 * the figures come from. */
typedef struct kvshard_options__link_preset {
    const char *name;
    uint64_t bandwidth;
    double latency_us;
    const char *basis;
} kvshard_options__link_preset;

/* An accelerator preset: its word, memory bandwidth in bytes/s, the link
 * it implies (KVSHARD__LINK_NONE: give one) and the figures' source. */
typedef struct kvshard_options__accelerator_preset {
    const char *name;
    uint64_t hbm_bandwidth;
    kvshard__comm_link link;
    const char *basis;
} kvshard_options__accelerator_preset;

extern const kvshard_options__link_preset kvshard_options__link_presets[KVSHARD__LINK_CUSTOM + 1];
extern const kvshard_options__accelerator_preset
    kvshard_options__accelerator_presets[KVSHARD__ACCEL_CUSTOM + 1];

/* The presets of `link` and `accelerator`; custom and none have name
 * "custom" and no figures. Inline: a priced plan and its estimate read
 * them each time. */
static inline const kvshard_options__link_preset *
kvshard_options__link_preset_of(kvshard__comm_link link)
{
    return &kvshard_options__link_presets[link <= KVSHARD__LINK_CUSTOM ? link
                                                                       : KVSHARD__LINK_CUSTOM];
}

static inline const kvshard_options__accelerator_preset *
kvshard_options__accelerator_preset_of(kvshard__comm_accelerator accelerator)
{
    return &kvshard_options__accelerator_presets[accelerator <= KVSHARD__ACCEL_CUSTOM
                                                     ? accelerator
                                                     : KVSHARD__ACCEL_CUSTOM];
}

/* Each mechanism's word and its length at the mechanism's index; none's is
 * empty. A priced plan and its estimate read them each time: they are not
 * searched for, nor their lengths counted. */
#define KVSHARD__COMM_MECHANISMS (KVSHARD__COMM_FULL_LAYER + 1)
extern const kvshard_format__part kvshard_options__comm_mechanism_parts[KVSHARD__COMM_MECHANISMS];

static inline kvshard_format__part kvshard_options__comm_mechanism_part(kvshard__comm_mechanism m)
{
    return kvshard_options__comm_mechanism_parts[(size_t)m < KVSHARD__COMM_MECHANISMS
                                                     ? m
                                                     : KVSHARD__COMM_NONE];
}

/* A mechanism's word ("owner_attention"); NULL for none. */
const char *kvshard_options__comm_mechanism_name(kvshard__comm_mechanism m);

/* A prompt is prefilled 8,192 tokens a forward: the chunk the mainstream
 * engines' servers take on 80 GB devices (docs/comm.md). */
#define KVSHARD__COMM_DEFAULT_CHUNK 8192u

/* The deployment keys that only compare and fit read: no fields of
 * kvshard_options, so a deployment keeps them beside it, and
 * kvshard_compare_options and kvshard_fit_options carry them into a call. */
typedef struct kvshard__explore_keys {
    bool sweep_pp;
    uint32_t gpus_per_node; /* 0: unset */
    kvshard__comm_inputs comm; /* plan reads these too, beside the plan */
} kvshard__explore_keys;

/* Whether option `id` is one of the explore keys above. */
bool kvshard_options__option_is_explore_key(kvshard__option_id id);

typedef enum kvshard__section {
    KVSHARD__SECTION_PARALLEL,
    KVSHARD__SECTION_CACHE,
    KVSHARD__SECTION_COMM /* its keys are the flags without "comm_" */
} kvshard__section;

/* Name of a deployment section ("parallel", "cache", "comm"). */
const char *kvshard_options__section_name(kvshard__section section);

const char *kvshard_options__option_name(kvshard__option_id id);
kvshard__section kvshard_options__option_section(kvshard__option_id id);
bool kvshard_options__option_is_bool(kvshard__option_id id);
/* What an integer option counts ("ranks", "tokens"), for help; NULL when
 * its type says what it is (a size, a boolean, a word). */
const char *kvshard_options__option_unit(kvshard__option_id id);

/* What a key names: one of kvshard's options, or an engine profile's
 * setting (the inputs every profile declares; settings sit under cache:). */
typedef struct kvshard__deploy_key {
    kvshard__option_id option; /* KVSHARD__OPT_COUNT when it is a setting or unknown */
    const kvshard_profile__input *setting;
    /* The engine's words for the value when the key came through an alias
     * that has its own; NULL: the key's. */
    const kvshard_value__word *words;
} kvshard__deploy_key;

/* The key `key` names: options first, then settings. A flag may also use
 * the engine's own names: `flags_of` is that engine's profile, NULL for a
 * deployment file's key (any profile's setting). Under a gflags profile a
 * flag is an option, an alias of the profile, or a setting a gflags
 * profile declares (the plan warns of those its profile does not read);
 * under an argparse profile '-' and '_' are alike and a flag is an option,
 * an alias or one of that profile's own inputs: each engine's flags exist
 * only under its profile. Neither set: unknown. */
kvshard__deploy_key kvshard_options__key_lookup(const char *key, size_t len,
                                        const kvshard__profile *flags_of);
static inline bool kvshard__key_known(kvshard__deploy_key k)
{
    return k.option != KVSHARD__OPT_COUNT || k.setting != NULL;
}
static inline bool kvshard__key_is_bool(kvshard__deploy_key k)
{
    return k.option != KVSHARD__OPT_COUNT ? kvshard_options__option_is_bool(k.option)
                                          : k.setting && k.setting->def.type == KVSHARD__VT_BOOL;
}
static inline const char *kvshard__key_name_of(kvshard__deploy_key k)
{
    return k.option != KVSHARD__OPT_COUNT ? kvshard_options__option_name(k.option)
                                          : k.setting ? k.setting->def.name : "";
}

/* The nearest of names offered one by one to a name that is none of them:
 * the one fewest edits away (a letter added, dropped, changed, or two
 * swapped), when few enough for a typo (one in a name of 3 or 4
 * characters, len/4 up to 3 in a longer one, none in a shorter one); the
 * first offered wins a tie. `dashes_alike`: '-' and '_' are one character (argparse). */
typedef struct kvshard_options__nearest {
    const char *typed;
    size_t len;
    bool dashes_alike;
    unsigned best; /* a candidate must be fewer edits away than this */
    bool found;
    char name[65]; /* the nearest so far, copied: candidates may be borrowed */
} kvshard_options__nearest;
void kvshard_options__nearest_begin(kvshard_options__nearest *n, const char *typed, size_t len,
                                    bool dashes_alike);
void kvshard_options__nearest_offer(kvshard_options__nearest *n, const char *candidate);
/* The nearest name offered, or NULL when none is close enough. */
const char *kvshard_options__nearest_found(const kvshard_options__nearest *n);

/* The key of a deployment file's `section` nearest to `key` into `out`;
 * false when none is near enough. */
bool kvshard_options__key_nearest(char *out, size_t cap, const char *key, size_t len,
                                  kvshard__section section);

/* One flag a profile's command line takes, as kvshard_options__key_lookup() finds
 * it: the help lists these, and an unknown flag is matched against them. */
#define KVSHARD_OPTIONS__FLAG_ALSO 4
typedef struct kvshard_options__flag {
    char name[64]; /* without dashes, as the profile writes it (argparse: '-' for '_') */
    char also[KVSHARD_OPTIONS__FLAG_ALSO][64]; /* the engine's other names for it */
    size_t also_count;
    kvshard__deploy_key key; /* with the engine's words when an alias has them */
    /* false: accepted, but the profile does not read it (the plan warns
     * profile_inputs_ignored); `reader` is then the first profile that does. */
    bool read;
    const kvshard__profile *reader;
} kvshard_options__flag;
typedef void (*kvshard_options__flag_fn)(void *user, const kvshard_options__flag *flag);

/* Every flag of profile `p`: kvshard's options in their table's order, then
 * the inputs (an argparse profile's own; under gflags every gflags
 * profile's), each with its aliases. `flag` is borrowed for the call. */
void kvshard_options__each_flag(const kvshard__profile *p, kvshard_options__flag_fn fn, void *user);

/* Offer every name of every flag of profile `p` to `n`. */
void kvshard_options__offer_flags(kvshard_options__nearest *n, const kvshard__profile *p);

/* What `flag` is when no file or flag sets it, under profile `p`, as text:
 * "1", "ordinal", "none" for an unset number, or the profile's own words
 * for a default it works out ("by model and version"). */
void kvshard_options__flag_default(char *buf, size_t cap, const kvshard_options__flag *flag,
                                   const kvshard__profile *p);

/* Parse `text` for option `id` (with the engine's `words` for a word
 * option, NULL: its own) and store it in `options`, or for an explore key
 * in `explore`. On failure neither changes and the error names
 * `source`/`mark`. */
int kvshard_options__option_parse(kvshard_options *options, kvshard__explore_keys *explore,
                          kvshard__option_id id, const char *text,
                          size_t len, kvshard__value_style style,
                          const kvshard_value__word *words, const char *source,
                          kvshard__mark mark, kvshard_error *err);

/* The value option `id` holds in `options` (an explore key: its default),
 * and its definition. */
kvshard_value kvshard_options__option_value(const kvshard_options *options, kvshard__option_id id);
const kvshard_value__def *kvshard_options__option_def(kvshard__option_id id);

/* Whether option `id` holds a value other than KVSHARD_OPTIONS_INIT's. */
bool kvshard_options__option_changed(const kvshard_options *options, kvshard__option_id id);

/* The id of option `name`, KVSHARD__OPT_COUNT for none. */
kvshard__option_id kvshard_options__option_id_of(const char *name, size_t len);

/* Check caller-built options: the struct size, then every field against the
 * ranges the parser applies (EPARALLEL, ERANGE or EINVAL naming the field). */
int kvshard_options__check(const kvshard_options *options, kvshard_error *err);

/* The options with the engine profile's defaults in the unset fields. */
kvshard_options kvshard_options__settle(const kvshard_options *options);

/* T = world_size / (dp_size * cp_size), or 0 when that does not divide. */
uint32_t kvshard_options__attn_tp_size(const kvshard_options *options);

#endif /* KVSHARD_DEPLOY_OPTIONS_H */
