/* The state-kind table: the recurrent state a model's linear and hybrid
 * layers keep, one row per kvshard_state_kind. A row names the kind, says
 * which dimensions it needs (for a model description and for the TP
 * divisibility checks), how its dtype defaults, how it is read from a
 * config and how many bytes one layer keeps per sequence on one rank. */
#ifndef KVSHARD_MODEL_STATES_H
#define KVSHARD_MODEL_STATES_H

#include "base/checked.h"
#include "model/model.h"

#define KVSHARD__STATE_KIND_COUNT 7u

/* The dimensions of kvshard__state_dims, by number. */
typedef enum kvshard_states__dim {
    KVSHARD__DIM_HEADS,
    KVSHARD__DIM_KEY_HEADS,
    KVSHARD__DIM_HEAD_DIM,
    KVSHARD__DIM_VALUE_DIM,
    KVSHARD__DIM_STATE_SIZE,
    KVSHARD__DIM_GROUPS,
    KVSHARD__DIM_CONV_KERNEL,
    KVSHARD__DIM_CHANNELS,
    KVSHARD__DIM_COUNT
} kvshard_states__dim;

/* One dimension a kind needs: absent, it takes `fallback` (0: required);
 * `site` is the plan-time check it feeds (KVSHARD__SITE_*), or -1. */
typedef struct kvshard_states__need {
    kvshard_states__dim dim;
    uint32_t fallback;
    int site;
} kvshard_states__need;

/* The dtypes one layer's state is counted in, and the speculative tokens
 * whose extra conv columns and temporal copies it keeps. */
typedef struct kvshard_states__env {
    uint64_t tp;
    uint64_t spec;
    uint64_t conv_bytes;
    uint64_t ssm_bytes;
} kvshard_states__env;

/* Most tensors one layer's state has (a conv state and a temporal one). */
#define KVSHARD__STATE_TENSORS 2u

/* One tensor of a layer's state for one sequence on one rank: its dims, and
 * whether it is in the state dtype (temporal) or the model dtype (conv). */
typedef struct kvshard_states__tensor {
    const char *name; /* "conv" or "ssm", static */
    bool temporal;
    uint32_t ndim;
    uint64_t dims[4];
} kvshard_states__tensor;

/* Most parts one layer's state moves as (GDN's q, k and v convolutions and
 * its temporal state). */
#define KVSHARD__STATE_PARTS 4u

/* One part of a layer's state that moves on its own between TP layouts:
 * `units` of it (heads, groups or channels), each of the per_unit dims
 * multiplied (KVSHARD__DIM_COUNT counts 1). A conv part's unit is that many
 * channels of K - 1 columns in the model dtype; a temporal part's, that
 * many elements in the state dtype. */
typedef struct kvshard_states__part {
    const char *name; /* "conv_q", "conv_x", "ssm", ... */
    bool temporal;
    kvshard_states__dim units;
    kvshard_states__dim per_unit[2];
} kvshard_states__part;

struct kvshard__reader;

typedef struct kvshard_states__row {
    const char *name; /* kvshard_state_kind_name() */
    /* The dimensions it needs, ended by KVSHARD__DIM_COUNT. */
    kvshard_states__need needs[7];
    /* H x P must stay within KVSHARD__MAX_DIMENSION (Mamba2's d_inner). */
    bool bounded_inner;
    /* Without a dtype key: float32, or else the model dtype (bfloat16 for
     * an fp8 model). No temporal state (short convolution): AUTO always. */
    bool temporal;
    bool default_fp32;
    /* Its dimensions from a config. */
    int (*read)(struct kvshard__reader *r, kvshard__state_dims *s);
    /* The tensors of one layer's state for one sequence on one rank, into
     * `out` (KVSHARD__STATE_TENSORS entries); returns how many. */
    uint32_t (*shapes)(kvshard__calc *c, kvshard_states__tensor *out,
                       const kvshard__state_dims *s, const kvshard_states__env *env);
    /* Its parts, each spread over ranks by its own unit count (a flat slice
     * of one TP size's packed conv buffer is not another's); ended by a
     * NULL name. */
    kvshard_states__part parts[KVSHARD__STATE_PARTS + 1];
} kvshard_states__row;

/* The row of a kind; NULL for KVSHARD_STATE_NONE and unknown values. */
const kvshard_states__row *kvshard_states__of(kvshard_state_kind kind);

/* The field of `s` that holds dimension `dim`. */
uint32_t *kvshard_states__field(kvshard__state_dims *s, kvshard_states__dim dim);

/* The name a model description gives dimension `dim` ("state_heads"). */
const char *kvshard_states__desc_name(kvshard_states__dim dim);

/* The state dtype of `kind` when nothing names one. */
kvshard_dtype kvshard_states__default_dtype(kvshard_state_kind kind, kvshard_dtype model_dtype);

/* The tensors of one layer's state on one rank into `out`
 * (KVSHARD__STATE_TENSORS entries); how many (0 without state). */
uint32_t kvshard_states__shapes(kvshard_states__tensor *out, kvshard__calc *c,
                               const kvshard__state_dims *s, const kvshard_states__env *env);

/* The bytes of one tensor: its dims times its dtype's bytes. */
uint64_t kvshard_states__tensor_bytes(kvshard__calc *c, const kvshard_states__tensor *t,
                                      const kvshard_states__env *env);

/* The units of part `p` of state `s`: the whole model's, across TP. */
uint32_t kvshard_states__part_units(const kvshard_states__part *p, const kvshard__state_dims *s);

/* The bytes of one unit of part `p`, in env's conv and ssm dtype bytes. */
uint64_t kvshard_states__part_unit_bytes(kvshard__calc *c, const kvshard_states__part *p,
                                         const kvshard__state_dims *s,
                                         const kvshard_states__env *env);

/* One layer's state bytes for one sequence on one rank (0 without state):
 * the sum of its tensors. */
uint64_t kvshard_states__bytes(kvshard__calc *c, const kvshard__state_dims *s,
                               const kvshard_states__env *env);

/* The state kind of a config's linear and hybrid layers, its dimensions
 * and dtype (read for read.c). */
int kvshard_states__read_state(struct kvshard__reader *r);

#endif /* KVSHARD_MODEL_STATES_H */
