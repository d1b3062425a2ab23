/* The key index of a large mapping: an open-addressing table under the
 * doc's keyed hash, or a sorted index for keys that crowd it; and the
 * directory of a doc's indexes. */
#include "text/yaml_keys.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(kvshard__map_index) + 128 * sizeof(uint64_t) <= KVSHARD__FIRST_INDEX_BYTES,
               "the doc's own index holds a table of 128 slots");

kvshard__map_index *kvshard_yaml_keys__alloc(kvshard__doc *doc, size_t slots)
{
    size_t bytes = sizeof(kvshard__map_index) + slots * sizeof(uint64_t);
    if (!doc->first_index_used && bytes <= KVSHARD__FIRST_INDEX_BYTES) {
        doc->first_index_used = true;
        return (kvshard__map_index *)(void *)doc->first_index;
    }
    return kvshard_alloc__bytes(&doc->alloc, 1, bytes);
}

void kvshard_yaml_keys__free(kvshard__doc *doc, kvshard__map_index *x)
{
    if ((void *)x == (void *)doc->first_index)
        doc->first_index_used = false;
    else
        kvshard_alloc__free(&doc->alloc, x);
}

/* With more than DIRECTORY_MIN indexes, a directory at the head of the list
 * holds them sorted by mapping position, so that finding one is a binary
 * search rather than a walk of the list. */
#define DIRECTORY_MAP UINT32_MAX
#define DIRECTORY_MIN 8u

/* Order of a sorted index: hash, length, text, and for equal text the
 * position, so that the first of equal keys comes first. */
static int cmp_records(const kvshard__doc *doc, uint64_t x, uint64_t y)
{
    if (x >> 32 != y >> 32)
        return x >> 32 < y >> 32 ? -1 : 1;
    const entry *a = key_entry(doc, (uint32_t)x), *b = key_entry(doc, (uint32_t)y);
    if (a->count != b->count)
        return a->count < b->count ? -1 : 1;
    int c = memcmp(scalar_text(doc, a), scalar_text(doc, b), a->count);
    if (c)
        return c;
    return (uint32_t)x < (uint32_t)y ? -1 : (uint32_t)x > (uint32_t)y;
}

/* Bottom-up merge sort of `n` records through `tmp`: n log n compares
 * whatever the order, with the doc to compare by. */
static void sort_records(const kvshard__doc *doc, uint64_t *a, uint64_t *tmp, size_t n)
{
    uint64_t *src = a, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = n - lo > width ? lo + width : n;
            size_t hi = n - mid > width ? mid + width : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = cmp_records(doc, src[j], src[i]) < 0 ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

/* Records (hash << 32 | position, made in key order) ordered as
 * cmp_records() orders them: a stable radix sort by hash, 8 bits a pass,
 * keeps equal hashes in key order, and only a run of equal hashes (a
 * repeated key, or keys that collide) is sorted by comparing texts. */
void kvshard_yaml_keys__sort(const kvshard__doc *doc, uint64_t *a, uint64_t *tmp, size_t n)
{
    uint64_t *src = a, *dst = tmp;
    for (unsigned shift = 32; shift < 64; shift += 8) {
        size_t at_digit[257] = {0};
        for (size_t i = 0; i < n; i++)
            at_digit[(src[i] >> shift & 0xFFu) + 1]++;
        for (size_t d = 0; d < 256; d++)
            at_digit[d + 1] += at_digit[d];
        for (size_t i = 0; i < n; i++)
            dst[at_digit[src[i] >> shift & 0xFFu]++] = src[i];
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    /* Four passes: the records are back in `a`. */
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && a[j] >> 32 == a[i] >> 32)
            j++;
        if (j - i > 1)
            sort_records(doc, a + i, tmp, j - i);
        i = j;
    }
}

/* A record against a key looked up: <0, 0 or >0. */
static int cmp_lookup(const kvshard__doc *doc, uint64_t record, uint32_t hash, const char *key,
                      size_t klen)
{
    if ((uint32_t)(record >> 32) != hash)
        return (uint32_t)(record >> 32) < hash ? -1 : 1;
    const entry *e = key_entry(doc, (uint32_t)record);
    if (e->count != klen)
        return e->count < klen ? -1 : 1;
    return memcmp(scalar_text(doc, e), key, klen);
}

uint32_t kvshard_yaml_keys__find(const kvshard__doc *doc, const kvshard__map_index *x,
                                 const char *key, size_t klen)
{
    uint32_t h = kvshard_hash__of(&doc->hash_key, key, klen);
    if (x->by_sort) {
        size_t lo = 0, hi = x->mask;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cmp_lookup(doc, x->slots[mid], h, key, klen) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < x->mask && cmp_lookup(doc, x->slots[lo], h, key, klen) == 0
                   ? (uint32_t)x->slots[lo]
                   : UINT32_MAX;
    }
    for (uint32_t s = h & x->mask; x->slots[s] != 0; s = (s + 1) & x->mask) {
        if ((uint32_t)(x->slots[s] >> 32) != h)
            continue;
        uint32_t pos = (uint32_t)x->slots[s] - 1;
        const entry *k = key_entry(doc, pos);
        if (k->count == klen && memcmp(scalar_text(doc, k), key, klen) == 0)
            return pos;
    }
    return UINT32_MAX;
}

const kvshard__map_index *kvshard_yaml_keys__index_of(const kvshard__doc *doc, uint32_t map)
{
    const kvshard__map_index *x = doc->indexes;
    if (x && x->map == DIRECTORY_MAP) {
        size_t lo = 0, hi = x->mask;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (x->sorted[mid]->map < map)
                lo = mid + 1;
            else
                hi = mid;
        }
        return lo < x->mask && x->sorted[lo]->map == map ? x->sorted[lo] : NULL;
    }
    for (; x; x = x->next) {
        if (x->map == map)
            return x;
    }
    return NULL;
}

static int cmp_index(const void *a, const void *b)
{
    uint32_t x = (*(const kvshard__map_index *const *)a)->map;
    uint32_t y = (*(const kvshard__map_index *const *)b)->map;
    return (x > y) - (x < y);
}

void kvshard_yaml_keys__add_directory(kvshard__doc *doc)
{
    size_t n = 0;
    for (const kvshard__map_index *x = doc->indexes; x; x = x->next)
        n++;
    if (n <= DIRECTORY_MIN || n > UINT32_MAX)
        return;
    kvshard__map_index *dir =
        kvshard_alloc__bytes(&doc->alloc, 1, sizeof *dir + n * sizeof(kvshard__map_index *));
    if (!dir)
        return;
    dir->sorted = (kvshard__map_index **)(void *)((char *)dir + sizeof *dir);
    size_t k = 0;
    for (kvshard__map_index *x = doc->indexes; x; x = x->next)
        dir->sorted[k++] = x;
    qsort(dir->sorted, n, sizeof *dir->sorted, cmp_index);
    dir->map = DIRECTORY_MAP;
    dir->mask = (uint32_t)n;
    dir->by_sort = false;
    dir->next = doc->indexes;
    doc->indexes = dir;
}

void kvshard_yaml_keys__draw(kvshard__doc *doc, const uint64_t *seed)
{
    if (!doc->keyed) {
        uint64_t text = (uint64_t)(uintptr_t)doc->text;
        doc->hash_key = kvshard_hash__key(
            seed ? *seed : kvshard_hash__seed(doc, (text << 32 | text >> 32) ^ doc->len));
        doc->keyed = true;
    }
}
