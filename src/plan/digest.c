/* The plan's two digests: the layout (what every rank stores per token and
 * per sequence) and the whole plan (the layout, blocks and capacity), so
 * that ranks can compare plans with one collective. */
#include "plan/digest.h"

/* A word-at-a-time hash: each 64-bit word is mixed with a multiply and a
 * rotation, and the end folds the bits together. */
typedef struct hasher {
    uint64_t h;
} hasher;

static inline uint64_t mix_word(uint64_t h, uint64_t m)
{
    h ^= m;
    return ((h << 31) | (h >> 33)) * 0xC2B2AE3D27D4EB4Full;
}

static inline void hash_word(hasher *x, uint64_t v)
{
    x->h = mix_word(x->h, v * 0x9E3779B97F4A7C15ull);
}

/* The same word into two hashes: their chains of multiplies are independent,
 * so the processor runs them side by side. */
static inline void hash_word2(hasher *x, hasher *y, uint64_t v)
{
    uint64_t m = v * 0x9E3779B97F4A7C15ull;
    x->h = mix_word(x->h, m);
    y->h = mix_word(y->h, m);
}

/* Eight bytes as a little-endian word on any host (compilers make this one
 * load where the host is little-endian). */
static inline uint64_t load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

/* Bytes as little-endian words, whatever the host's byte order, so that
 * every host computes the same digest; then the tail (zero-padded) with the
 * length in its top byte. */
static void hash_bytes2(hasher *x, hasher *y, const uint8_t *p, size_t len)
{
    size_t i = 0;
    for (; i + 8 <= len; i += 8)
        hash_word2(x, y, load_le64(p + i));
    uint64_t tail = 0;
    for (size_t k = len; k > i; k--)
        tail = tail << 8 | p[k - 1];
    hash_word2(x, y, tail ^ ((uint64_t)len << 56));
}

/* The owners as hash_bytes2 would take their little-endian bytes: two a
 * word, the length in bytes last. */
static void hash_owners2(hasher *x, hasher *y, const int32_t *owner, size_t n)
{
    size_t i = 0;
    for (; i + 2 <= n; i += 2)
        hash_word2(x, y, (uint64_t)(uint32_t)owner[i] | (uint64_t)(uint32_t)owner[i + 1] << 32);
    uint64_t tail = i < n ? (uint32_t)owner[i] : 0;
    hash_word2(x, y, tail ^ ((uint64_t)(4 * n) << 56));
}

static uint64_t hash_end(hasher *x)
{
    uint64_t h = x->h;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h;
}

/* What every rank stores per token and per sequence: the layout. Both
 * digests begin with it, so it is hashed into both in one pass. */
static void hash_layout2(hasher *x, hasher *y, const kvshard_plan *p)
{
    hash_word2(x, y, p->model.num_layers);
    hash_word2(x, y, (uint64_t)p->tp << 32 | p->split);
    /* Ranks that share a layout also share the unit their blocks are counted
     * in and the element types of their caches: a block count agreed over
     * ranks with different block sizes would mean nothing. */
    const kvshard_options *o = &p->options;
    kvshard_dtype kv = kvshard_memory__kv_cache_dtype(&p->model, o);
    hash_word2(x, y, (uint64_t)o->block_size << 32 | (uint64_t)kv << 8 | (uint64_t)p->state_dtype);
    hash_bytes2(x, y, p->kinds, p->model.num_layers);
    hash_owners2(x, y, p->owner, p->model.num_layers);
    /* What layers keep beside their kind (compression ratios, index keys)
     * and which layers read another's cache. A model with neither hashes as
     * it did before these existed. */
    if (!p->model.classes_by_kind) {
        for (uint32_t c = 0; c < p->model.num_classes; c++) {
            const kvshard__class *k = &p->model.classes[c];
            hash_word2(x, y,
                       (uint64_t)k->kind | (uint64_t)k->ratio << 8 | (uint64_t)k->flags << 16);
        }
        hash_bytes2(x, y, p->class_of, p->model.num_layers);
    }
    if (p->kv_source)
        hash_owners2(x, y, p->kv_source, p->model.num_layers);
    /* The stages and how global ranks map onto them; a plan of one stage
     * hashes as it did before stages existed. */
    if (p->pp > 1) {
        hash_word2(x, y, (uint64_t)p->pp << 32 | (uint64_t)(uint32_t)o->rank_layout);
        kvshard__strides st = kvshard_partition__rank_strides(o, p->tp);
        hash_word2(x, y, st.dp ^ st.pp << 16 ^ st.cp << 32 ^ st.tp << 48);
        for (uint32_t s = 0; s < p->pp; s++)
            hash_word2(x, y, p->stages[s].count);
    }
    for (uint32_t r = 0; r < p->ranks_count; r++) {
        const kvshard_rank_memory *m = &p->ranks[r];
        hash_word2(x, y, m->kv_bytes_per_token);
        hash_word2(x, y, m->scratch_bytes_per_token);
        hash_word2(x, y, m->draft_bytes_per_token);
        hash_word2(x, y, m->state_bytes_per_seq);
        if (m->scratch_bytes_per_seq || m->draft_bytes_per_seq) {
            hash_word2(x, y, m->scratch_bytes_per_seq);
            hash_word2(x, y, m->draft_bytes_per_seq);
        }
    }
}

void kvshard_digest__compute_digests(kvshard_plan *p)
{
    hasher layout = {0x6B7673686172644Cull};
    hasher full = {0x6B76736861726450ull};
    hash_layout2(&layout, &full, p);
    p->layout_digest = hash_end(&layout);

    for (uint32_t r = 0; r < p->ranks_count; r++) {
        hash_word(&full, p->ranks[r].bytes_per_block);
        hash_word(&full, p->ranks[r].has_num_blocks ? p->ranks[r].num_blocks : UINT64_MAX);
    }
    const kvshard__capacity *c = &p->cap;
    const kvshard_options *o = &p->options;
    hash_word(&full, (uint64_t)o->engine << 32 | o->block_size);
    hash_word(&full, p->has_memory ? p->memory : 0);
    hash_word(&full, (uint64_t)o->max_seqs << 32 | o->context_length);
    hash_word(&full, c->has_num_blocks ? c->num_blocks : UINT64_MAX);
    hash_word(&full, c->has_concurrency ? c->concurrency : UINT64_MAX);
    hash_word(&full, c->has_balanced_max_seqs ? c->balanced_max_seqs : UINT64_MAX);
    hash_word(&full, c->has_state_slots ? c->state_slots : UINT64_MAX);
    if (p->pp > 1)
        hash_word(&full, c->has_binding ? c->binding_rank : UINT64_MAX);
    /* Budgets from the device: what each stage's come from. */
    if (p->device.used) {
        hash_word(&full, p->device.device_memory);
        hash_word(&full, (uint64_t)p->device.utilization_ppb << 8 | (uint64_t)p->device.source);
        hash_word(&full, p->device.reserve);
        for (uint32_t s = 0; s < p->pp; s++) {
            hash_word(&full, p->stage_weights[s]);
            hash_word(&full, p->stage_budgets[s]);
        }
    }
    hash_word(&full, p->uniform.kv_bytes_per_token);
    hash_word(&full, p->uniform.bytes_per_block);
    hash_word(&full, p->uniform.has_num_blocks ? p->uniform.num_blocks : UINT64_MAX);
    p->digest = hash_end(&full);
}

