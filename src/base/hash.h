/* The keyed hash of every table keyed by a name an input controls: a
 * config's keys and anchors, tensor and shard names of a checkpoint, flags
 * an engine's command line skips. The key is drawn per table (or per
 * document) from a seed no input can predict, so that names cannot be
 * written to collide: crafted names cost what ordinary ones cost. */
#ifndef KVSHARD_BASE_HASH_H
#define KVSHARD_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct kvshard__hash_key {
    uint64_t k[4];
} kvshard__hash_key;

/* The hash key `seed` stands for (a test or a benchmark gives a fixed seed
 * to know it). */
kvshard__hash_key kvshard_hash__key(uint64_t seed);
/* A seed no text can predict: where `where` and the stack are (the system
 * places them at random), `salt`, and the time in nanoseconds. */
uint64_t kvshard_hash__seed(const void *where, uint64_t salt);
/* The 32-bit keyed hash of `len` bytes: the low bits pick a slot. */
uint32_t kvshard_hash__of(const kvshard__hash_key *key, const char *s, size_t len);

/* Occupied slots passed by lookups in the open-addressing tables keyed by
 * input names (tensor names, shard names, skipped flags), on this thread:
 * the work a crafted name would inflate, read by the tests and the
 * benchmark. Only ever incremented. */
extern _Thread_local uint64_t kvshard_hash__probes;

#endif /* KVSHARD_BASE_HASH_H */
