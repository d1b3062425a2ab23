/* The key index of a large mapping and the doc's keyed hash. The builder
 * (yaml_build.c) fills an index while it checks a mapping's keys, and the
 * reading of the tape (yaml_tape.c) looks keys up in it. For the files of
 * the tape only, as yaml_entry.h. */
#ifndef KVSHARD_TEXT_YAML_KEYS_H
#define KVSHARD_TEXT_YAML_KEYS_H

#include "text/yaml_entry.h"

/* Mappings of more than 32 keys get an index of their keys, built while
 * checking for duplicates and kept for lookups: a lookup that misses then
 * costs one hash and a probe or two. Smaller ones are walked: the model
 * reader looks at each of a config's keys once, in one pass (model.c), and a
 * walk of a few dozen keys costs no more than a hash.
 *
 * The index is an open-addressing table under the doc's keyed hash: a slot
 * holds a key's 32-bit hash above its tape position plus one (0 is empty),
 * and a probe reads a key's text only when the whole hash matches. Building
 * it may pass at most PROBE_BUDGET occupied slots in all. Keys that crowd
 * the table past that (by chance, or written by someone who knows the hash
 * key) get a sorted index instead: their hashes and positions ordered by
 * hash, length and text, so that a duplicate sits beside its twin, and a
 * lookup is a binary search. The order is a radix sort by hash, then a
 * merge sort of the texts of keys whose hashes are equal. Either way a
 * mapping of n keys costs at most O(n log n) compares. */
#define INDEX_MIN_PAIRS 33u
#define PROBE_BUDGET(pairs) (4u * (uint64_t)(pairs) + 64u)

struct kvshard__map_index {
    kvshard__map_index *next;
    kvshard__map_index **sorted; /* the directory only */
    uint64_t present;            /* bit key_sig() of every key */
    uint32_t map;                /* tape position of the mapping */
    uint32_t mask;               /* slots - 1; sorted: keys; the directory: indexes */
    bool by_sort;                /* slots[] holds hash << 32 | position, in order */
    uint64_t slots[];
};

/* One of 64 bits from a key's length and its first and last bytes. A lookup
 * whose bit no key of the mapping sets misses without hashing: most lookups
 * of a model are for keys the config does not have. */
static inline unsigned key_sig(const char *s, size_t len)
{
    unsigned first = len ? (unsigned char)s[0] : 0, last = len ? (unsigned char)s[len - 1] : 0;
    return ((unsigned)len * 5u + first * 3u + last) & 63u;
}

/* The hash of the key at tape position `pos`, a scalar or an alias of one.
 * An alias used as a key had its target's hash stored when it was read,
 * once per anchor: a key of a few bytes never costs the hash of a long text. */
static inline uint32_t key_hash_at(const kvshard__doc *doc, uint32_t pos)
{
    const entry *e = at(doc, pos);
    if (kind_of(e) == KIND_ALIAS)
        return e->count;
    return kvshard_hash__of(&doc->hash_key, scalar_text(doc, e), e->count);
}

/* Two keys (scalar entries) of the same text. */
static inline bool same_key(const kvshard__doc *doc, const entry *a, const entry *b)
{
    return a->count == b->count && memcmp(scalar_text(doc, a), scalar_text(doc, b), a->count) == 0;
}

/* An index of `slots` words: the doc's own memory for the first that fits,
 * an allocation for the others. NULL without memory. */
kvshard__map_index *kvshard_yaml_keys__alloc(kvshard__doc *doc, size_t slots);
void kvshard_yaml_keys__free(kvshard__doc *doc, kvshard__map_index *x);
/* Order `n` records (hash << 32 | position, made in key order) by hash,
 * length, text and position, through `tmp` of as many. */
void kvshard_yaml_keys__sort(const kvshard__doc *doc, uint64_t *a, uint64_t *tmp, size_t n);
/* The tape position of `key` in an index, or UINT32_MAX. */
uint32_t kvshard_yaml_keys__find(const kvshard__doc *doc, const kvshard__map_index *x,
                                 const char *key, size_t klen);
/* The index of the mapping at tape position `map`, or NULL. */
const kvshard__map_index *kvshard_yaml_keys__index_of(const kvshard__doc *doc, uint32_t map);
/* Once the tree is built: with many indexes, a directory of them, so that
 * finding one is a binary search. Without memory for it nothing fails. */
void kvshard_yaml_keys__add_directory(kvshard__doc *doc);
/* The doc's hash key, drawn at the first index or anchor, from `seed` when
 * given: a config without either never reads the clock. */
void kvshard_yaml_keys__draw(kvshard__doc *doc, const uint64_t *seed);

#endif /* KVSHARD_TEXT_YAML_KEYS_H */
