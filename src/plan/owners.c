/* The ownership rules. With S_eff split ranks and N_kv KV layers in a range
 * of layers, k a layer's position among those KV layers:
 *   ordinal     k % S_eff (round-robin over the KV layers);
 *   global      layer index % S_eff (on the index in the whole model, as
 *               engines that split by layer index do);
 *   contiguous  balanced consecutive ranges: with q = N_kv / S_eff and
 *               m = N_kv % S_eff, split ranks 0..m-1 own q+1 layers each and
 *               the rest q. */
#include "plan/owners.h"

#include <string.h>

/* The only KV class of a range, UINT32_MAX when it has several, `classes`
 * when none. */
static uint32_t single_kv_class(const uint8_t *kinds, const uint8_t *class_of, uint32_t classes,
                                const kvshard__range *layers)
{
    uint32_t found = classes;
    uint32_t end = layers->first + layers->count;
    for (uint32_t i = layers->first; i < end; i++) {
        if (!kvshard_kinds__paged(kinds[i]) || class_of[i] == found)
            continue;
        if (found != classes)
            return UINT32_MAX;
        found = class_of[i];
    }
    return found;
}

void kvshard_owners__owned_counts(uint32_t *counts, uint32_t *by_class, const uint8_t *kinds,
                           const uint8_t *class_of, uint32_t classes, const kvshard__range *layers,
                           uint32_t split, kvshard_ownership rule)
{
    uint32_t n_kv = layers->num_kv;
    if (split == 1) {
        /* One split rank owns every KV layer: the range's census. */
        counts[0] = n_kv;
        if (by_class)
            memcpy(by_class, layers->class_census, classes * sizeof *by_class);
        return;
    }
    uint32_t only = by_class ? single_kv_class(kinds, class_of, classes, layers) : classes;
    if (by_class)
        memset(by_class, 0, (size_t)split * classes * sizeof *by_class);
    if (rule == KVSHARD_OWNERSHIP_GLOBAL || only == UINT32_MAX) {
        uint32_t paged = kvshard_kinds__paged_mask();
        memset(counts, 0, split * sizeof *counts);
        kvshard__owner_walk walk;
        kvshard__owner_walk_begin(&walk, layers, split, rule);
        uint32_t end = layers->first + layers->count;
        for (uint32_t i = layers->first; i < end; i++) {
            if (!(paged >> kinds[i] & 1u)) {
                kvshard__owner_skip(&walk);
                continue;
            }
            uint32_t s = kvshard__owner_next(&walk);
            counts[s]++;
            if (by_class)
                by_class[(size_t)s * classes + class_of[i]]++;
        }
        return;
    }
    /* Ordinal and contiguous give the same counts: q+1 to the first m. */
    for (uint32_t s = 0; s < split; s++) {
        counts[s] = n_kv / split + (s < n_kv % split);
        if (by_class && only < classes)
            by_class[(size_t)s * classes + only] = counts[s];
    }
}

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* The owner of a layer without paged KV: every rank when it keeps anything
 * (a state or a window), none when it keeps nothing. */
static inline int32_t unsplit_owner(uint32_t keeps, uint8_t kind)
{
    return keeps >> kind & 1u ? KVSHARD_OWNER_ALL : KVSHARD_OWNER_NONE;
}

/* The pass over the layers of a split range (S_eff > 1), once each split
 * rank's list has its place: owners, slots and the lists. Inlined once
 * for each rule (docs/performance.md). The arrays are distinct (restrict). */
static ALWAYS_INLINE void split_pass(const kvshard__owners *out, const uint8_t *restrict kinds,
                                     const kvshard__range *range, uint32_t split,
                                     kvshard_ownership rule, uint32_t paged, uint32_t stateful,
                                     uint32_t keeps)
{
    int32_t *restrict owner = out->owner;
    uint32_t *restrict kv_slot = out->kv_slot, *restrict state_slot = out->state_slot;
    uint32_t *restrict counts = out->counts;
    const uint32_t *restrict offsets = out->offsets;
    uint32_t *restrict layers = out->layers;
    kvshard__owner_walk walk;
    kvshard__owner_walk_begin(&walk, range, split, rule);
    uint32_t state = 0, end = range->first + range->count;
    for (uint32_t i = range->first; i < end; i++) {
        uint8_t kind = kinds[i];
        state_slot[i] = stateful >> kind & 1u ? state++ : UINT32_MAX;
        if (!(paged >> kind & 1u)) {
            kv_slot[i] = UINT32_MAX;
            owner[i] = unsplit_owner(keeps, kind);
            kvshard__owner_skip(&walk);
            continue;
        }
        uint32_t s = kvshard__owner_next(&walk);
        owner[i] = (int32_t)s;
        kv_slot[i] = counts[s]++; /* its place in its owner's list */
        layers[offsets[s] + kv_slot[i]] = i;
    }
}

/* The owners of a split range: each split rank's count first, so that one
 * pass puts every KV layer straight into its owner's list. */
static void split_layers(const kvshard__owners *out, const uint8_t *kinds,
                         const kvshard__range *range, uint32_t split, kvshard_ownership rule,
                         uint32_t paged, uint32_t stateful, uint32_t keeps)
{
    uint32_t *restrict counts = out->counts, *restrict offsets = out->offsets;
    kvshard_owners__owned_counts(counts, NULL, kinds, NULL, 0, range, split, rule);
    offsets[0] = 0;
    for (uint32_t s = 0; s < split; s++) {
        offsets[s + 1] = offsets[s] + counts[s];
        counts[s] = 0; /* counted again by the pass, as each list fills */
    }
    switch (rule) {
    case KVSHARD_OWNERSHIP_GLOBAL:
        split_pass(out, kinds, range, split, KVSHARD_OWNERSHIP_GLOBAL, paged, stateful, keeps);
        break;
    case KVSHARD_OWNERSHIP_CONTIGUOUS:
        split_pass(out, kinds, range, split, KVSHARD_OWNERSHIP_CONTIGUOUS, paged, stateful, keeps);
        break;
    case KVSHARD_OWNERSHIP_ORDINAL:
    default:
        split_pass(out, kinds, range, split, KVSHARD_OWNERSHIP_ORDINAL, paged, stateful, keeps);
        break;
    }
}

/* A layer that reads another's cache keeps nothing and reports its source's
 * owner (none when the source lies outside the range). */
static void report_sources(const kvshard__owners *out, const uint8_t *kinds,
                           const int32_t *kv_source, const kvshard__range *range)
{
    uint32_t end = range->first + range->count;
    for (uint32_t i = range->first; i < end; i++) {
        int32_t src = kv_source[i];
        if (src < 0 || !kvshard_kinds__of(kinds[i])->reads_source)
            continue;
        bool inside = (uint32_t)src >= range->first && (uint32_t)src < end;
        out->owner[i] = inside ? out->owner[src] : KVSHARD_OWNER_NONE;
        out->held_by[i] = KVSHARD_OWNER_NONE;
    }
}

void kvshard_owners__assign_owners(const kvshard__owners *out, const uint8_t *kinds,
                            const int32_t *kv_source, const kvshard__range *range, uint32_t split,
                            kvshard_ownership rule)
{
    /* Bits of the kinds with paged KV, with a state, and that keep anything. */
    uint32_t paged = kvshard_kinds__paged_mask(), stateful = kvshard_kinds__state_mask();
    uint32_t keeps = paged | stateful;
    for (uint8_t k = 0; k < KVSHARD__KIND_COUNT; k++)
        keeps |= (uint32_t)kvshard_kinds__of(k)->window << k;
    uint32_t *restrict counts = out->counts, *restrict offsets = out->offsets;
    uint32_t end = range->first + range->count;
    if (split == 1) {
        /* No split (the common case): every rank stores every KV layer, and
         * the one list of KV layers is in layer order: one pass. */
        int32_t *restrict owner = out->owner;
        uint32_t *restrict kv_slot = out->kv_slot, *restrict state_slot = out->state_slot;
        uint32_t *restrict layers = out->layers;
        uint32_t kv = 0, state = 0;
        for (uint32_t i = range->first; i < end; i++) {
            uint8_t kind = kinds[i];
            state_slot[i] = stateful >> kind & 1u ? state++ : UINT32_MAX;
            owner[i] = unsplit_owner(keeps, kind);
            kv_slot[i] = UINT32_MAX;
            if (paged >> kind & 1u) {
                kv_slot[i] = kv;
                layers[kv++] = i;
            }
        }
        counts[0] = kv;
        offsets[0] = 0;
        offsets[1] = kv;
    } else {
        split_layers(out, kinds, range, split, rule, paged, stateful, keeps);
    }
    /* A layer with both paged KV and a state: its state is on every rank,
     * whoever owns its KV. */
    if (out->held_by != out->owner) {
        for (uint32_t i = range->first; i < end; i++)
            out->held_by[i] =
                (paged & stateful) >> kinds[i] & 1u ? KVSHARD_OWNER_ALL : out->owner[i];
    }
    if (kv_source)
        report_sources(out, kinds, kv_source, range);
}
