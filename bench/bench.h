/* kvshard_bench: what the benchmark's files share.
 *
 *   stats.c      clocks, batches, alternating pairs, medians; a counting
 *                kvshard_allocator
 *   procs.c      a small launcher process that runs whole programs and
 *                reports their wall time and peak memory
 *   texts.c      the example files, the generated configs and the
 *                generated model directory of safetensors headers
 *   reference.c  what kvshard is measured against: an empty call and the
 *                old byte-wise digest (its own translation unit, so calls
 *                into it stay calls)
 *   cases.c      one function per case; each adds rows and targets
 *   report.c     the table, the JSON file, the machine's description
 *   main.c       arguments and the order of the cases
 *
 * Every target is a ratio of two figures measured in the same run, so that
 * it holds on a fast machine and a slow one alike. */
#ifndef KVSHARD_BENCH_BENCH_H
#define KVSHARD_BENCH_BENCH_H

#include "kvshard/explore.h"
#include "kvshard/kvshard.h"
#include "kvshard/output.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define BENCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define BENCH_NOINLINE __attribute__((noinline))
/* On a 64-byte boundary, as kvshard_plan_owns() is, so that the loops and
 * the functions they call compare like for like. */
#define BENCH_ALIGNED __attribute__((aligned(64)))
#else
#define BENCH_PRINTF(f, a)
#define BENCH_NOINLINE
#define BENCH_ALIGNED
#endif

/* ---- settings ---------------------------------------------------------------------- */

/* Cases, for --only. */
enum {
    BENCH_CASE_CLI = 1u << 0,
    BENCH_CASE_MEMORY = 1u << 1,
    BENCH_CASE_LOAD = 1u << 2,
    BENCH_CASE_KEYS = 1u << 3,
    BENCH_CASE_JSON = 1u << 4,
    BENCH_CASE_DIGEST = 1u << 5,
    BENCH_CASE_OWNS = 1u << 6,
    BENCH_CASE_QUERIES = 1u << 7,
    BENCH_CASE_SWEEP = 1u << 8,
    BENCH_CASE_FLAGS = 1u << 9,
    BENCH_CASE_ENGINES = 1u << 10,
    BENCH_CASE_FIT = 1u << 11,
    BENCH_CASE_FIT_SAFETENSORS = 1u << 12,
    BENCH_CASE_SAFETENSORS = 1u << 13,
    BENCH_CASE_FIT_WORK = 1u << 14,
    BENCH_CASE_NAMES = 1u << 15,
    BENCH_CASE_SPELLINGS = 1u << 16,
    BENCH_CASE_FIT_ENGINE = 1u << 17,
    BENCH_CASE_COMM = 1u << 18,
    BENCH_CASE_TRANSFER = 1u << 19
};

typedef struct bench_settings {
    bool quick;
    bool check;
    bool wall;         /* in-process timings on the wall clock, not thread CPU time */
    size_t pairs;      /* pairs of batches for operations of microseconds */
    size_t big_pairs;  /* pairs for operations of a tenth of a second or more */
    size_t cli_pairs;  /* pairs of whole-process runs */
    size_t cli_warmup; /* pairs run first and not counted */
    uint64_t batch_ns; /* a batch repeats its operation for at least this long */
    const char *examples;
    const char *cli; /* the kvshard executable */
    const char *json_path;
    unsigned only; /* BENCH_CASE_* bits to run; 0: all */
} bench_settings;

/* Print "kvshard_bench: ..." and exit with status 2. */
_Noreturn void bench_die(const char *fmt, ...) BENCH_PRINTF(1, 2);
void bench_die_kvshard(const char *what, int rc, const kvshard_error *err);
void *bench_xmalloc(size_t size);
char *bench_xstrdup(const char *s);
void bench_progress(const char *fmt, ...) BENCH_PRINTF(1, 2);

/* ---- time and statistics (stats.c) --------------------------------------------------- */

/* The clock of in-process timings: the thread's CPU time (user and system)
 * by default, so time spent descheduled on a shared machine is not counted;
 * the wall clock with `wall`. */
void bench_set_clock(bool wall);
const char *bench_clock_name(void);
uint64_t bench_now_ns(void);
/* CLOCK_MONOTONIC, for whole processes. */
uint64_t bench_wall_ns(void);

typedef struct bench_stats {
    double median, p10, p90, min, max;
    size_t n;
} bench_stats;

/* Sorts `v` in place. */
bench_stats bench_summarize(double *v, size_t n);

typedef void (*bench_op)(void *ctx);

/* Calls of `op` per batch: one call to warm up and time it, then enough to
 * last settings->batch_ns. */
uint64_t bench_batch_size(const bench_settings *s, bench_op op, void *ctx);
/* Nanoseconds per call over `iters` calls. */
double bench_batch(bench_op op, void *ctx, uint64_t iters);

/* Batches of `a` and `b` in turn, A B A B ..., `pairs` of each: ta[i] and
 * tb[i] are the nanoseconds per call of pair i. Both see the same state of
 * the machine, so their ratio per pair is steadier than either time. */
void bench_pairs(const bench_settings *s, size_t pairs, bench_op a, void *ctx_a, bench_op b,
                 void *ctx_b, double *ta, double *tb);
/* Per-pair ratio tb[i] / ta[i], summarized. */
bench_stats bench_pair_ratio(const double *ta, const double *tb, size_t n);
/* A model loaded from text; a failure ends the benchmark. */
kvshard_model *bench_load_model(const char *text, size_t len, const char *name,
                                const kvshard_load_options *lo);

/* One kvshard_fit_create() and free of `model`, as a bench_op. */
typedef struct bench_fit_ctx {
    const kvshard_model *model;
    const kvshard_options *options;
    const kvshard_fit_options *fit;
    const char *name;
    /* Of the last fit: layouts planned (rows), those that fit, refused. */
    size_t rows, fits, refused;
} bench_fit_ctx;
void bench_op_fit(void *ctx);

/* The summary of a copy of v[0..n): `v` keeps its order. */
bench_stats bench_summary_of(const double *v, size_t n);
/* bench_pairs() of `a` and `b`: the per-pair ratio b / a, and each one's
 * time per call in *time_a and *time_b. */
bench_stats bench_paired(const bench_settings *s, size_t pairs, bench_op a, void *ctx_a, bench_op b,
                         void *ctx_b, bench_stats *time_a, bench_stats *time_b);
/* `samples` batches of `op`. */
bench_stats bench_time(const bench_settings *s, size_t samples, bench_op op, void *ctx);

/* A kvshard_allocator that counts: bytes live, the peak, calls. */
typedef struct bench_counter {
    size_t current;
    size_t peak;
    uint64_t allocs;
    uint64_t frees;
} bench_counter;

kvshard_allocator bench_counting_allocator(bench_counter *c);
/* Start a new peak from what is live now. */
void bench_counter_rebase(bench_counter *c);

/* ---- processes (procs.c) -------------------------------------------------------------- */

/* Fork the launcher. Call first in main(), while the process is small: a
 * child's peak memory as the system reports it includes what it inherited,
 * so children are started from this small process. */
void bench_launcher_start(void);
void bench_launcher_stop(void);

typedef struct bench_run {
    uint64_t wall_ns; /* fork to the end of wait4 */
    uint64_t maxrss;  /* the child's peak resident set, bytes */
    int status;       /* exit status; 128 + signal when killed */
} bench_run;

/* Run argv[0] with `argv` (NULL-terminated), standard output to /dev/null. */
bench_run bench_spawn(const char *const *argv);

/* Wall nanoseconds per first touch of a fresh anonymous page (16 MiB
 * mapped, written, unmapped): what the system charges for memory a process
 * has not used before. */
double bench_page_fault_ns(void);

/* ---- texts (texts.c) ------------------------------------------------------------------ */

typedef struct bench_text {
    char *name; /* file name without directory */
    char *path;
    char *data;
    size_t len;
} bench_text;

void bench_read_text(bench_text *t, const char *dir, const char *name);
/* Files of `dir` ending in `suffix`, sorted by name. */
size_t bench_read_dir(bench_text **out, const char *dir, const char *suffix);
void bench_free_texts(bench_text *t, size_t n);
char *bench_join(const char *dir, const char *name);

/* A flat config.json of a Gated DeltaNet hybrid with `layers` entries in
 * layer_types, full attention every 4th layer, and Qwen3.5-35B-A3B's GQA
 * and GDN keys (the linear heads as given). */
char *bench_gen_layer_types(size_t *out_len, uint32_t layers, uint32_t key_heads,
                            uint32_t value_heads);
/* Qwen3.5-35B-A3B's keys (40 layers) and `extra` more keys. */
char *bench_gen_many_keys(size_t *out_len, uint32_t extra);
/* The same with `extra` keys crafted to collide in kvshard 0.2's index (and
 * sharing length, first and last byte); the same number of bytes. */
char *bench_gen_colliding_keys(size_t *out_len, uint32_t extra);
/* Write text to a new file in the temporary directory; returns its path. */
char *bench_write_temp(const char *text, size_t len);

/* A model directory in the temporary directory: config.json, and weights
 * as model.safetensors.index.json and shard files that hold only their
 * headers (8-byte length and JSON), which is all the reader reads. */
typedef struct bench_model_dir {
    char *dir;
    char *config; /* dir/config.json */
    /* In memory as in the files: [0] the index, then each shard's header
     * JSON (its padding included, the length before it not). */
    bench_text *jsons;
    size_t json_count;
    size_t json_bytes; /* their lengths summed */
    size_t tensors;
    size_t expert_tensors;
    uint64_t total_bytes; /* every tensor's bytes, the index's total_size */
    uint64_t expert_bytes;
} bench_model_dir;

/* `tensors` BF16 tensors named as DeepSeek-V3.2's checkpoint names them,
 * over `layers` layers and `shards` shard files, `config` as config.json:
 * the attention, norms, dense and shared MLPs, router, embedding and head,
 * and routed experts' projections for the rest (so many experts a layer as
 * makes up the count). Removed at exit if bench_model_dir_remove() was not
 * called. */
void bench_model_dir_make(bench_model_dir *d, const bench_text *config, uint32_t layers,
                          size_t tensors, unsigned shards);
void bench_model_dir_remove(bench_model_dir *d);

/* ---- references (reference.c) --------------------------------------------------------- */

/* An empty out-of-line function with kvshard_plan_owns()'s signature. */
bool bench_empty_owns(const kvshard_plan *plan, uint32_t plan_rank, uint32_t layer);
/* FNV-1a 64 over each word, byte by byte, low byte first: the digest the
 * planner used before it hashed whole words. */
uint64_t bench_fnv1a_bytewise(const uint64_t *words, size_t count);

/* ---- report (report.c) ---------------------------------------------------------------- */

typedef enum bench_unit {
    BENCH_UNIT_NS,        /* nanoseconds, printed ns/us/ms/s */
    BENCH_UNIT_RATIO,     /* printed 1.23x */
    BENCH_UNIT_BYTES,     /* printed B/KiB/MiB */
    BENCH_UNIT_PER_ENTRY, /* bytes per list entry */
    BENCH_UNIT_MBPS,      /* 10^6 bytes per second */
    BENCH_UNIT_COUNT
} bench_unit;

#define BENCH_MAX_FIGURES 9
#define BENCH_MAX_ROWS 64
#define BENCH_MAX_SECTIONS 24
#define BENCH_MAX_TARGETS 32

typedef struct bench_figure {
    const char *name;
    bench_unit unit;
    double value;
    bool spread; /* lo and hi hold p10 and p90 */
    double lo, hi;
} bench_figure;

typedef struct bench_row {
    char label[96];
    bench_figure figures[BENCH_MAX_FIGURES];
    size_t count;
} bench_row;

typedef struct bench_section {
    char title[120];
    char note[480];
    bench_row rows[BENCH_MAX_ROWS];
    size_t count;
} bench_section;

typedef struct bench_target {
    char name[120];
    char how[240];
    double value;
    double limit;
    bool at_least; /* pass when value >= limit; else when value <= limit */
    bool measured; /* false: its case did not run */
    bool pass;
} bench_target;

typedef struct bench_machine {
    char cpu[128];
    long cores;
    char kernel[256];
    double load_start[3];
    double load_end[3];
    double fault_ns_start; /* bench_page_fault_ns() */
    double fault_ns_end;
} bench_machine;

typedef struct bench_report {
    const bench_settings *settings;
    bench_machine machine;
    bench_section sections[BENCH_MAX_SECTIONS];
    size_t section_count;
    bench_target targets[BENCH_MAX_TARGETS];
    size_t target_count;
    double seconds; /* the whole run, wall clock */
} bench_report;

bench_section *bench_section_add(bench_report *r, const char *title, const char *note_fmt, ...)
    BENCH_PRINTF(3, 4);
bench_row *bench_row_add(bench_section *s, const char *label_fmt, ...) BENCH_PRINTF(2, 3);
void bench_fig(bench_row *row, const char *name, bench_unit unit, double value);
void bench_fig_stats(bench_row *row, const char *name, bench_unit unit, const bench_stats *st);
/* A target; `pass` is worked out from value, limit and direction. */
bench_target *bench_target_add(bench_report *r, const char *name, double value, double limit,
                               bool at_least, const char *how_fmt, ...) BENCH_PRINTF(6, 7);
/* A target whose case did not run. */
void bench_target_skip(bench_report *r, const char *name, double limit, bool at_least);
bool bench_all_pass(const bench_report *r);

void bench_machine_read(bench_machine *m);
void bench_loadavg(double out[3]);
void bench_print_table(FILE *f, const bench_report *r);
void bench_write_json(const char *path, const bench_report *r);

/* ---- cases (cases.c) ------------------------------------------------------------------ */

typedef struct bench_inputs {
    bench_text *models; /* examples/models/, every .json */
    size_t model_count;
    bench_text *deployments; /* examples/, every .yaml */
    size_t deployment_count;
    const bench_text *seed; /* examples/qwen3_5_35b_a3b_tp4.yaml */
    kvshard_options seed_options;
    kvshard_settings *seed_settings; /* the seed's settings, which its options point to */
    /* The seed options without memory_per_rank: at 10^6 layers the state of
     * 750,000 linear layers fits no memory, so those plans have no capacity. */
    kvshard_options big_options;
    /* The 10^6-entry layer_types config, made on first use. */
    char *big;
    size_t big_len;
    /* The DeepSeek-V3.2 directory of safetensors headers, made at the start
     * when a case reads it (bench_inputs_model_dir). */
    bench_model_dir model_dir;
} bench_inputs;

#define BENCH_BIG_LAYERS 1000000u

void bench_inputs_read(bench_inputs *in, const char *examples);
void bench_inputs_free(bench_inputs *in);
/* The tensors of the generated model directory, and its shard files. */
#define BENCH_ST_TENSORS 100000u
#define BENCH_ST_SHARDS 4u
void bench_inputs_model_dir(bench_inputs *in);

void bench_case_cli(bench_report *r, bench_inputs *in);
void bench_case_memory(bench_report *r, bench_inputs *in);
void bench_case_load(bench_report *r, bench_inputs *in);
void bench_case_keys(bench_report *r, bench_inputs *in);
void bench_case_json(bench_report *r, bench_inputs *in);
void bench_case_digest(bench_report *r, bench_inputs *in);
void bench_case_owns(bench_report *r, bench_inputs *in);
void bench_case_queries(bench_report *r, bench_inputs *in);
void bench_case_sweep(bench_report *r, bench_inputs *in);
/* The limits of its targets, which main.c also lists. */
#define BENCH_FLAGS_TIME_LIMIT 30.0
#define BENCH_FLAGS_MEMORY_LIMIT 0.5
void bench_case_flags(bench_report *r, bench_inputs *in);
/* The CLI with 65,536 argparse flags of one input against a plain plan. */
#define BENCH_SPELLINGS_TARGET "CLI plan, 65,536 argparse flags of one input / plain plan"
#define BENCH_SPELLINGS_LIMIT 30.0
void bench_case_spellings(bench_report *r, bench_inputs *in);
/* The limit of its targets, which main.c also lists. */
#define BENCH_ENGINES_LIMIT 1.1
#define BENCH_ENGINES_VLLM_TARGET "load + plan under vllm / under kvshard, Nemotron-3-Nano"
#define BENCH_ENGINES_SGLANG_TARGET "load + plan under sglang / under kvshard, Qwen3.5-9B TP 2"
#define BENCH_ENGINES_VLLM_PP_TARGET "load + plan under vllm / under kvshard, Llama 3.1 8B -pp 2"
#define BENCH_ENGINES_SGLANG_PP_TARGET                                                             \
    "load + plan under sglang / under kvshard, DeepSeek-V3.2 TP 8 PP 2"
#define BENCH_ENGINES_TRTLLM_TARGET "load + plan under trtllm / under kvshard, gpt-oss-20b"
void bench_case_engines(bench_report *r, bench_inputs *in);
/* kvshard_fit_create of DeepSeek-V3.2 on 64 GPUs. Its targets are times
 * against a fixed budget, given as time / budget (the limit 1.0), as the
 * JSON rate is against 300 MB/s. */
#define BENCH_FIT_TARGET "fit 64 GPUs, weights_total / 50 ms"
#define BENCH_FIT_BUDGET_MS 50.0
void bench_case_fit(bench_report *r, bench_inputs *in);
/* The same budget for `fit --engine=vllm` of Qwen3.5-35B-A3B on 64 GPUs. */
#define BENCH_FIT_ENGINE_TARGET "fit --engine=vllm 64 GPUs, Qwen3.5-35B-A3B / 50 ms"
void bench_case_fit_engine(bench_report *r, bench_inputs *in);
/* A plan with its communication estimate against the plan without it. */
#define BENCH_COMM_TARGET "plan + comm estimate / plan, seed on BI-V100"
#define BENCH_COMM_LIMIT 1.1
/* And fit --rank=throughput of DeepSeek-V3.2 on 64 GPUs against fit's budget. */
#define BENCH_COMM_FIT_TARGET "fit --rank=throughput 64 GPUs / 50 ms"
void bench_case_comm(bench_report *r, bench_inputs *in);
/* The transfer map of DeepSeek-V3.2 from 64 P ranks to 64 D ranks with a
 * split: the two plans and the map against the two plans, and the map's own
 * time against a budget. */
#define BENCH_TRANSFER_TARGET "two plans + transfer map / two plans, DeepSeek-V3.2 64 -> 64"
#define BENCH_TRANSFER_LIMIT 1.5
#define BENCH_TRANSFER_MAP_TARGET "transfer map, DeepSeek-V3.2 64 -> 64 / 10 ms"
#define BENCH_TRANSFER_BUDGET_MS 10.0
void bench_case_transfer(bench_report *r, bench_inputs *in);
#define BENCH_FIT_ST_TARGET "fit 64 GPUs, weights of a 100,000-tensor index / 250 ms"
#define BENCH_FIT_ST_BUDGET_MS 250.0
void bench_case_fit_safetensors(bench_report *r, bench_inputs *in);
/* fit's work (work.c): DeepSeek-V3.2 and a GQA config of 55,440 query and
 * KV heads (every T dividing 55,440 admitted) on 55,440 GPUs with every
 * limit open, each against 1 s, and a 4,194,304-layer model on 64 GPUs
 * against one plan. */
#define BENCH_FIT_WIDE_GPUS 55440u
#define BENCH_FIT_LONG_LAYERS 4194304u
#define BENCH_FIT_WIDE_TARGET "fit DeepSeek-V3.2, 55,440 GPUs, every limit open / 1 s"
#define BENCH_FIT_GQA_TARGET "fit 55,440 KV heads, 55,440 GPUs, every limit open / 1 s"
#define BENCH_FIT_LONG_TARGET "fit 4,194,304 layers on 64 GPUs / one plan of it"
void bench_case_fit_work(bench_report *r, bench_inputs *in);
/* Names crafted to collide (work.c): crafted / ordinary, each at most
 * BENCH_NAMES_LIMIT. */
#define BENCH_NAMES 65536u
#define BENCH_FLAG_STEPS 15u
#define BENCH_NAMES_LIMIT 1.5
#define BENCH_NAMES_TENSOR_TARGET "read 65,536 crafted tensor names / ordinary"
#define BENCH_NAMES_SHARD_TARGET "read an index of 65,536 crafted shard names / ordinary"
#define BENCH_NAMES_FLAG_TARGET "skip 32,768 crafted flags / ordinary"
void bench_case_names(bench_report *r, bench_inputs *in);
/* kvshard_safetensors__read_dir of that directory against a bare libyaml
 * parse of its JSON texts. The reader reads them with its own JSON
 * front-end: the whole read must stay within half the bare parse, which a
 * reader that went back through libyaml (1.2 times it) could not. */
#define BENCH_ST_TARGET "read a 100,000-tensor directory's headers / bare libyaml parse"
#define BENCH_ST_LIMIT 0.5
void bench_case_safetensors(bench_report *r, bench_inputs *in);

#endif /* KVSHARD_BENCH_BENCH_H */
