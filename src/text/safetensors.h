/* The tensors of a model directory, read from its safetensors headers.
 *
 * A safetensors file starts with N (8 bytes, little-endian) and N bytes of
 * JSON naming each tensor's dtype, shape and byte range; the tensor data
 * follows. Only those 8 + N bytes are read, so a file cut after its header
 * (the first bytes of a ranged download) gives the same list as the whole
 * file. Which files: model.safetensors.index.json and the shards its
 * weight_map names, else model.safetensors, else every *.safetensors file in
 * byte order of the names, else none.
 *
 * Every failure is the reader's (`safetensors`) error: the message starts
 * "safetensors: FILE:" and names the tensor where there is one; the source is
 * the file's path, and a position inside a header counts its line and column
 * in the JSON and its offset in the file (8 + the JSON offset). Codes: EIO for
 * a file that cannot be opened or read (a shard the index names but the
 * directory lacks too); ESYNTAX or EUTF8 for a header that is not JSON, a
 * file shorter than 8 bytes or one that ends inside its header; ETYPE for a
 * value of the wrong type (a header that is not an object); EMISSING for an
 * entry without dtype, shape or data_offsets, or an index without
 * weight_map; ERANGE for begin > end, a byte count that does not match the
 * dtype and shape, or a weight_map value that is not a plain file name;
 * EOVERFLOW for a shape whose bytes pass 2^64 - 1; ERANGE too for two tensors
 * of one file whose data_offsets overlap; EDUPKEY for a tensor named twice
 * (in one header, or in two shards, or in one file reached by two names);
 * ELIMIT for a header above KVSHARD__ST_MAX_HEADER bytes or the loader's
 * document limit, and past the tensor, shard or total JSON bound; EWEIGHTS
 * for a checkpoint that names no tensor; ENOMEM. */
#ifndef KVSHARD_TEXT_SAFETENSORS_H
#define KVSHARD_TEXT_SAFETENSORS_H

#include "base/alloc.h"
#include "base/error.h"
#include "text/file.h"

/* The longest header the format admits (its N). kvshard's JSON loader reads
 * at most KVSHARD_MAX_DOCUMENT_BYTES of it (64 MiB); a longer header is
 * ELIMIT with both figures named. */
#define KVSHARD__ST_MAX_HEADER UINT64_C(100000000)
/* Tensors of one directory, over all its shards: ten times the largest
 * checkpoints published (some 100,000 tensors with their scales). */
#define KVSHARD__ST_MAX_TENSORS ((size_t)1 << 20)
/* Shard files of one directory. */
#define KVSHARD__ST_MAX_SHARDS 65536u
/* The JSON of one directory, its index and every header together: 256 MiB,
 * four times what the loader parses of one header. A checkpoint at the
 * tensor bound takes about that (some 250 bytes of index and header a
 * tensor); the largest published take a few tens of MiB. Without a bound
 * on the sum, many shard names linked to one large header would be parsed
 * again and again. */
#define KVSHARD__ST_MAX_JSON_TOTAL (UINT64_C(256) << 20)

/* Which files held the weights. A directory holding some of an index's
 * shards but not all is EIO naming the first absent. */
typedef enum kvshard__st_files {
    KVSHARD__ST_NONE,   /* the directory has no safetensors weights */
    KVSHARD__ST_INDEX,  /* model.safetensors.index.json and its shards */
    /* model.safetensors.index.json with none of its shards at hand: the
     * tensors are its weight_map's names alone (no dtype, shape or bytes),
     * and total_size is the only byte figure */
    KVSHARD__ST_INDEX_ONLY,
    KVSHARD__ST_SINGLE, /* model.safetensors */
    KVSHARD__ST_GLOB    /* every *.safetensors file, in byte order of names */
} kvshard__st_files;

/* One tensor as its header describes it. */
typedef struct kvshard__tensor {
    const char *name;      /* NUL-terminated, owned by the set */
    const char *dtype;     /* as written, NUL-terminated */
    const uint64_t *shape; /* `ndim` dimensions */
    uint64_t elements;     /* product of the shape, 1 for [] */
    uint64_t bytes;        /* as stored: end - begin of data_offsets */
    uint32_t name_len;
    uint32_t ndim;
    uint32_t shard; /* index into kvshard__safetensors.shards */
    uint32_t bits;  /* bits per element of a dtype kvshard knows, else 0 */
} kvshard__tensor;

typedef struct kvshard__st_arena kvshard__st_arena;

/* The tensors of a directory, in reading order: shard by shard, each in its
 * header's order. Immutable once read; concurrent reads are safe. */
typedef struct kvshard__safetensors {
    kvshard_allocator alloc;
    kvshard__st_files files;
    const char **shards; /* file names, in reading order */
    uint32_t shard_count;
    kvshard__tensor *tensors;
    size_t count;
    uint64_t total_bytes; /* sum of every tensor's bytes */
    /* The index's metadata.total_size, when it has one, and whether it
     * differs from total_bytes (the headers are what counts). */
    bool has_total_size;
    uint64_t total_size;
    bool total_size_mismatch;
    size_t tensor_cap;
    uint32_t shard_cap;
    size_t max_tensors;
    uint64_t json_bytes; /* of the index and the headers read so far */
    uint64_t max_json;
    kvshard__st_arena *arena; /* names, dtypes, shapes */
} kvshard__safetensors;

/* Read the weights of model directory `dir` into a new set (*out, free with
 * kvshard_safetensors__free), at most `max_tensors` tensors (0:
 * KVSHARD__ST_MAX_TENSORS). A directory without weights gives a set with
 * `files` KVSHARD__ST_NONE and no tensor; one whose index or headers name
 * no tensor is EWEIGHTS (no checkpoint holds 0 bytes of weights). `alloc`
 * may be NULL (the C library's). On failure *out is untouched and nothing
 * is left allocated. */
int kvshard_safetensors__read_dir(kvshard__safetensors **out, const char *dir,
                                  const kvshard_allocator *alloc, size_t max_tensors,
                                  kvshard_error *err);

/* What else a read of a directory takes: its bounds, and who is told of
 * each file opened. */
typedef struct kvshard__st_options {
    size_t max_tensors;       /* 0: KVSHARD__ST_MAX_TENSORS */
    uint64_t max_json;        /* 0: KVSHARD__ST_MAX_JSON_TOTAL */
    kvshard__file_fn on_file; /* the index and each shard as opened; NULL: none */
    void *user;
} kvshard__st_options;

/* kvshard_safetensors__read_dir() with `options` (NULL: the defaults). */
int kvshard_safetensors__read_dir_with(kvshard__safetensors **out, const char *dir,
                                       const kvshard_allocator *alloc,
                                       const kvshard__st_options *options, kvshard_error *err);

/* One shard's image in memory (its first 8 + N bytes at least), read as a
 * set of one file named `name` (in messages and `shards`); for tests and
 * fuzzing. The same checks and errors as a file, with `name` as source. */
int kvshard_safetensors__read_bytes(kvshard__safetensors **out, const void *bytes, size_t len,
                                    const char *name, const kvshard_allocator *alloc,
                                    size_t max_tensors, kvshard_error *err);

void kvshard_safetensors__free(kvshard__safetensors *set);

/* Bits per element of a dtype kvshard checks byte counts for (F4 4, F6_* 6,
 * 8-bit, 16-, 32- and 64-bit types), else 0. */
uint32_t kvshard_safetensors__dtype_bits(const char *dtype, size_t len);

#endif /* KVSHARD_TEXT_SAFETENSORS_H */
