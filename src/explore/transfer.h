/* The transfer object: the map that moves one request's cache from a
 * prefill plan to a decode plan, read by its queries and its writers. */
#ifndef KVSHARD_EXPLORE_TRANSFER_H
#define KVSHARD_EXPLORE_TRANSFER_H

#include <stdatomic.h>

#include "kvshard/explore.h"
#include "profile/profile.h"

/* One side of the pair, as the documents describe it. */
typedef struct kvshard__transfer_side {
    uint32_t world_size, dp_size, pp_size, tp_size, split;
    kvshard_ownership ownership;
    kvshard_rank_layout rank_layout;
    uint32_t replica;
    uint32_t *global_ranks; /* the replica's, increasing */
    size_t rank_count;
} kvshard__transfer_side;

/* A warning of the transfer: its name and message. */
typedef struct kvshard__transfer_warning {
    const char *code;
    char message[256];
} kvshard__transfer_warning;

#define KVSHARD__TRANSFER_WARNINGS 3u

/* An engine's verdict as the transfer keeps it: the profile's rules, and
 * the pointer arrays the public verdict lends. */
typedef struct kvshard__transfer_verdict {
    kvshard_engine engine;
    char version[KVSHARD_VERSIONS__TEXT_MAX];
    const char *verdict;
    kvshard_profile__verdict rules;
    const char *codes[KVSHARD_PROFILE__VERDICT_REASONS];
    const char *messages[KVSHARD_PROFILE__VERDICT_REASONS];
} kvshard__transfer_verdict;

/* One verdict an engine that gives them. */
#define KVSHARD__TRANSFER_VERDICTS 3u

struct kvshard_transfer {
    kvshard_allocator alloc;
    kvshard_transfer_edge *edges;
    size_t edge_count;
    uint32_t *layers;       /* the layers of the edges of more than one class, one block */
    uint32_t *class_layers; /* each layer's class, then each class's layers: an edge of one
                             * class points into them */
    kvshard_transfer_totals totals;
    /* The digest of the edges, worked out the first time it is asked
     * (kvshard_transfer_digest), so that a map no one compares pays nothing
     * for it; digest_known is set once digest holds it. */
    _Atomic uint64_t digest;
    atomic_bool digest_known;
    kvshard__transfer_warning warnings[KVSHARD__TRANSFER_WARNINGS];
    size_t warning_count;
    kvshard__transfer_verdict *verdicts; /* KVSHARD__TRANSFER_VERDICTS, made by the first judge */
    size_t verdict_count;
    kvshard__transfer_side prefill, decode;
    /* The model both sides plan. */
    char *model_type;
    uint32_t num_layers;
    uint32_t num_draft_layers; /* moved: 0 unless both sides count them */
    kvshard_attention attention;
    kvshard_state_kind state_kind;
    kvshard_dtype kv_cache_dtype, state_dtype;
};

#endif /* KVSHARD_EXPLORE_TRANSFER_H */
