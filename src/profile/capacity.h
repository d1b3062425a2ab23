/* The helpers every profile's capacity computation shares: the ranks it
 * walks, block and sequence sizes, figures, versions, arguments and the
 * numbers in its wording. */
#ifndef KVSHARD_PROFILE_CAPACITY_H
#define KVSHARD_PROFILE_CAPACITY_H

#include "profile/profile.h"

/* ---- helpers every capacity computation shares ------------------------------ */

/* Ranks a computation looks at: all of them, or the one asked for. */
uint32_t kvshard_capacity__first_rank(const kvshard__capacity_inputs *in);
/* The budget of plan rank `rank`: its stage's, else `memory`. */
uint64_t kvshard_capacity__budget(const kvshard__capacity_inputs *in, uint32_t rank);
uint32_t kvshard_capacity__end_rank(const kvshard__capacity_inputs *in);

/* A rank's bytes per block with the engine's extra bytes into *out (0 when
 * the rank stores no KV); false past 2^64 - 1, when *out is not a block's
 * size and no count may be made from it (a saturated size would fit one
 * block in a budget of 2^64 - 1 bytes). */
bool kvshard_capacity__block_bytes(uint64_t *out, const kvshard_rank_memory *r, uint64_t extra);

/* KVSHARD_EOVERFLOW for a block of rank `rank` past 2^64 - 1 bytes, naming
 * its bytes per block and the extra bytes. */
int kvshard_capacity__block_overflow(const kvshard__capacity_inputs *in, uint32_t rank,
                                     const char *profile, kvshard_diag__ctx *diag);

/* Ranks with the same bytes per block and state per sequence fit the same
 * blocks; most ranks have the figures of the rank before. */
bool kvshard_capacity__same_figures(const kvshard_rank_memory *a, const kvshard_rank_memory *b);

/* What the mainstream engines' profiles do not model of a model's caches at
 * attention TP size `tp` (a V head dim other than K's, a sliding page other
 * than the full one, a sparse index, indexer keys on some layers only), in
 * words for a refusal; NULL when there is nothing. */
const char *kvshard_profile__uncovered_cache(const kvshard__model_info *m, uint32_t tp);

/* Whether some layer keeps a GQA sparse index key. */
bool kvshard_profile__has_sparse_index(const kvshard__model_info *m);

/* The bytes a rank reserves per sequence: its state and, while split, the
 * scratch window and state of the largest KV layer; false past 2^64 - 1. */
bool kvshard_capacity__seq_bytes(uint64_t *out, const kvshard_rank_memory *r);

/* "TP rank 3", or "stage 1 TP rank 3" when the ranks span stages: a rank
 * named in a message. */
void kvshard_capacity__rank_name(char *buf, size_t cap, const kvshard__capacity_inputs *in,
                                 uint32_t rank);

/* max_tokens = num_blocks x block_size, or EOVERFLOW. */
int kvshard_capacity__max_tokens(kvshard__capacity *c, const kvshard_options *o,
                                 kvshard_diag__ctx *diag);

/* ---- helpers the engine profiles share ------------------------------------- */

/* Figures into an engine figure list: each appends one entry when there is
 * room. The text of JSON figures goes to `text` (`text_cap` bytes, NULL
 * for none); `text_used` counts what they need past `text_cap` too, so a
 * first call with no room measures the second. */
typedef struct kvshard_profile__figures {
    kvshard_figure *out;
    size_t cap;
    size_t count;
    char *text;
    size_t text_cap;
    size_t text_used;
    size_t json_start; /* where the JSON figure being written starts */
    bool json_fresh;   /* nothing written yet in the innermost list or object */
} kvshard_profile__figures;
void kvshard_profile__fig_uint(kvshard_profile__figures *f, const char *name, bool has, uint64_t v);
void kvshard_profile__fig_double(kvshard_profile__figures *f, const char *name, bool has, double v);
void kvshard_profile__fig_bool(kvshard_profile__figures *f, const char *name, bool v);
void kvshard_profile__fig_text(kvshard_profile__figures *f, const char *name, const char *text);
/* `count` NUL-separated words, or JSON null for `count` 0. */
void kvshard_profile__fig_words(kvshard_profile__figures *f, const char *name, const char *words,
                                uint64_t count);
/* The layers of each pipeline stage of the view: "[31, 30]". */
void kvshard_profile__fig_partition(kvshard_profile__figures *f, const char *name,
                                    const kvshard_profile__view *v);
/* A list of objects, written between begin and end: each object between
 * json_object and json_object_end, its fields by json_uint and json_double
 * (`has` false: null), in the order the engine's section lists them. */
void kvshard_profile__json_begin(kvshard_profile__figures *f);
void kvshard_profile__json_object(kvshard_profile__figures *f);
void kvshard_profile__json_uint(kvshard_profile__figures *f, const char *key, bool has,
                                uint64_t v);
void kvshard_profile__json_double(kvshard_profile__figures *f, const char *key, bool has,
                                  double v);
void kvshard_profile__json_object_end(kvshard_profile__figures *f);
void kvshard_profile__json_end(kvshard_profile__figures *f, const char *name);

/* What a profile's failures are about when the option they name was not
 * set: a refusal or a missing input is about the engine, no block in the
 * budget about the budget and the sequences, a block past 2^64 - 1 bytes
 * about block_size. */
extern const char *const kvshard_profile__about_engine[];

/* An input of one size or one a stage that a deployment file may also
 * write as a YAML list (non_kv_memory: each stage holds its own weights). */
extern const kvshard_value__more kvshard_profile__stage_sizes;

/* Stage `stage`'s size of such an input: the device fill's own for the
 * stage where it wrote them (`filled`, else NULL), else the list's entry,
 * else the one size. */
uint64_t kvshard_profile__stage_size(kvshard_value v, const uint64_t *filled, uint32_t stage);

/* KVSHARD_ERANGE engine_flag_value, naming `input`, unless such an input
 * gives one size or one a stage of `stages`. */
int kvshard_profile__check_stage_count(const char *profile, const char *input, kvshard_value v,
                                       uint32_t stages, kvshard_diag__ctx *diag);
extern const char *const kvshard_profile__about_budget[];
extern const char *const kvshard_profile__about_block[];

/* The engine version of a planning call: the input's text, else the
 * profile's default, parsed into *out and checked against the covered
 * range (KVSHARD_EPROFILE "engine_version_unsupported", naming the range,
 * about "engine_version"). */
int kvshard_profile__version(kvshard_versions__v *out, const kvshard__profile *p,
                             const kvshard_value *input, kvshard_diag__ctx *diag);

/* The first layer kind the model has layers of outside `planned` (a mask
 * of 1 << kind), KVSHARD__KIND_COUNT when there is none: a profile names
 * the kinds it plans, so a kind added later is refused until it is named. */
uint8_t kvshard_profile__unplanned_kind(const kvshard__model_info *m, uint32_t planned);

/* The text a model_type test reads equals one of `types` (NULL-ended). */
bool kvshard_profile__type_is(const char *model_type, const char *const *types);

/* One layer's recurrent state on one rank, in its two parts, as the
 * engines lay it out, from the state-kind table's tensors: the conv state
 * (K - 1 + spec columns where the kind grows them) in `conv_bytes`
 * elements and the temporal state (one copy, not grown by spec) in
 * `ssm_bytes` ones; false for a model without state. The table's figures
 * are the engines' layout only for the kinds a profile covers, which it
 * checks first: a profile that covers another kind checks its layout. */
bool kvshard_profile__state_parts(kvshard__calc *c, uint64_t *conv, uint64_t *temporal,
                                  const kvshard__state_dims *s, uint32_t tp, uint32_t spec,
                                  uint32_t conv_bytes, uint32_t ssm_bytes);

/* 100 x num / den to two decimals, as printf's %.2f writes the double
 * 100.0 * num / den (an exact tie rounds to even), in integers: a warning
 * written for every plan costs no floating-point formatting. */
void kvshard_profile__percent(char *buf, size_t cap, uint64_t num, uint64_t den);

/* A GiB figure as the engines print it: bytes / 2^30 to two decimals. */
void kvshard_profile__gib(char *buf, size_t cap, uint64_t bytes);

/* ---- the engines' command lines ------------------------------------------- */

/* Appends to a space-separated list of arguments like snprintf: *used grows
 * by the whole length whatever fits. */
void kvshard_profile__arg(char *buf, size_t cap, size_t *used, const char *fmt, ...)
    KVSHARD__PRINTF(4, 5);
/* The layout's layer counts as the engines take them: "31,30". */
void kvshard_profile__partition_text(char *buf, size_t cap, const kvshard_profile__layout *l);

#endif /* KVSHARD_PROFILE_CAPACITY_H */
