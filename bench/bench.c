/* kvshard_bench: how long kvshard takes to load, plan and answer queries, and
 * how much memory a plan holds, measured against a bare libyaml parse of the
 * same text.
 *
 * Every figure is the median and spread (p10/p90, min/max) of repeated batches;
 * a batch runs an operation enough times to last a few milliseconds, and the
 * per-operation time of each batch is one sample. Time is the thread's CPU
 * time unless --wall is given. Texts are read into memory before timing, so
 * disk I/O is excluded (except where a deployment names its model file, which
 * kvshard then reads itself; see the "deployments" section).
 *
 * Targets are printed as PASS/FAIL. The exit status is 0 unless --check is
 * given and a target is missed (then 1); bad usage exits 2.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, opendir */
#include "kvshard/kvshard.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yaml.h>

#ifndef KVSHARD_BENCH_EXAMPLES
#define KVSHARD_BENCH_EXAMPLES "examples"
#endif

/* ---- targets ------------------------------------------------------------- */

#define TARGET_OWNS_NS 2.0           /* owns(): ns per call */
#define TARGET_LOAD_PLAN_RATIO 2.0   /* (load + plan) / bare libyaml parse */
#define TARGET_BIG_NS 1e9            /* 10^6 layers: load + plan */
#define TARGET_BIG_BYTES_PER_LAYER 64.0
#define TARGET_LINEAR_RATIO 1.5      /* ns/layer at 10^6 over ns/layer at 10^5 */

/* ---- settings ------------------------------------------------------------ */

typedef struct settings {
    size_t reps;            /* samples per measurement */
    size_t min_reps;        /* samples kept even when over budget */
    uint64_t batch_ns;      /* aim for batches at least this long */
    uint64_t budget_ns;     /* stop sampling a measurement after this long */
    uint64_t owns_calls;    /* owns() calls per sample */
    uint32_t max_layers;    /* largest sweep size */
    const char *examples;
    const char *json_path;
    bool json_stdout;
    bool check;
    unsigned only; /* SECTION_* bits to run; 0: all */
} settings;

enum {
    SECTION_MODELS = 1u,
    SECTION_DEPLOYMENTS = 2u,
    SECTION_OWNS = 4u,
    SECTION_SWEEP = 8u
};

static bool runs(const settings *cfg, unsigned section)
{
    return cfg->only == 0 || (cfg->only & section) != 0;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kvshard_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static void die_kvshard(const char *what, const char *name, int rc, const kvshard_error *err)
{
    die("%s %s failed: %s (%s)", what, name, kvshard_strerror(rc),
        err && err->message[0] ? err->message : "no message");
}

/* ---- time and statistics -------------------------------------------------- */

/* The thread's CPU time by default: on a shared machine, time spent
 * descheduled is not kvshard's. --wall switches to CLOCK_MONOTONIC. */
static clockid_t bench_clock = CLOCK_THREAD_CPUTIME_ID;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(bench_clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct stats {
    double median, p10, p90, min, max; /* ns per operation */
    size_t samples;
    uint64_t per_sample; /* operations per sample */
} stats;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, unsigned pct)
{
    size_t rank = (n * pct + 99) / 100;
    return v[rank ? rank - 1 : 0];
}

static stats summarize(double *v, size_t n, uint64_t per_sample)
{
    stats s;
    qsort(v, n, sizeof *v, cmp_double);
    s.samples = n;
    s.per_sample = per_sample;
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    s.p10 = percentile(v, n, 10);
    s.p90 = percentile(v, n, 90);
    return s;
}

static stats scaled(stats s, double divisor)
{
    s.median /= divisor;
    s.p10 /= divisor;
    s.p90 /= divisor;
    s.min /= divisor;
    s.max /= divisor;
    return s;
}

typedef void (*op_fn)(void *ctx);

static uint64_t batch_size(const settings *cfg, op_fn fn, void *ctx)
{
    uint64_t t0 = now_ns();
    fn(ctx);
    uint64_t once = now_ns() - t0;
    uint64_t iters = once ? cfg->batch_ns / once : cfg->batch_ns;
    return iters < 1 ? 1 : iters > 1000000 ? 1000000 : iters;
}

static double run_batch(op_fn fn, void *ctx, uint64_t iters)
{
    uint64_t t0 = now_ns();
    for (uint64_t i = 0; i < iters; i++)
        fn(ctx);
    return (double)(now_ns() - t0) / (double)iters;
}

/* Time `a` and `b` in alternating batches (a b, b a, a b, ...), so that both
 * see the same machine load, and the ratio b/a of each pair of batches. */
static void measure_pair(const settings *cfg, op_fn a, op_fn b, void *ctx, stats *out_a,
                         stats *out_b, stats *out_ratio)
{
    uint64_t ia = batch_size(cfg, a, ctx), ib = batch_size(cfg, b, ctx);
    double *va = malloc(cfg->reps * sizeof *va);
    double *vb = malloc(cfg->reps * sizeof *vb);
    double *vr = malloc(cfg->reps * sizeof *vr);
    if (!va || !vb || !vr)
        die("out of memory");
    size_t n = 0;
    uint64_t start = now_ns();
    while (n < cfg->reps) {
        if (n % 2) {
            vb[n] = run_batch(b, ctx, ib);
            va[n] = run_batch(a, ctx, ia);
        } else {
            va[n] = run_batch(a, ctx, ia);
            vb[n] = run_batch(b, ctx, ib);
        }
        vr[n] = vb[n] / va[n];
        n++;
        if (n >= cfg->min_reps && now_ns() - start > 2 * cfg->budget_ns)
            break;
    }
    *out_a = summarize(va, n, ia);
    *out_b = summarize(vb, n, ib);
    *out_ratio = summarize(vr, n, 1);
    free(va);
    free(vb);
    free(vr);
}

/* Time `fn`: one warm-up call that also sizes the batch, then batches. */
static stats measure(const settings *cfg, op_fn fn, void *ctx)
{
    uint64_t iters = batch_size(cfg, fn, ctx);
    double *v = malloc(cfg->reps * sizeof *v);
    if (!v)
        die("out of memory");
    size_t n = 0;
    uint64_t start = now_ns();
    while (n < cfg->reps) {
        v[n++] = run_batch(fn, ctx, iters);
        if (n >= cfg->min_reps && now_ns() - start > cfg->budget_ns)
            break;
    }
    stats s = summarize(v, n, iters);
    free(v);
    return s;
}

/* ---- counting allocator --------------------------------------------------- */

typedef struct counting {
    size_t current; /* bytes requested and not yet freed */
    size_t peak;
    uint64_t allocs;
    uint64_t frees;
} counting;

typedef union alloc_header {
    max_align_t align;
    size_t size;
} alloc_header;

static void *counting_malloc(void *user, size_t size)
{
    counting *c = user;
    if (size > SIZE_MAX - sizeof(alloc_header))
        return NULL;
    alloc_header *h = malloc(sizeof *h + size);
    if (!h)
        return NULL;
    h->size = size;
    c->current += size;
    if (c->current > c->peak)
        c->peak = c->current;
    c->allocs++;
    return h + 1;
}

static void counting_free(void *user, void *ptr)
{
    counting *c = user;
    alloc_header *h = (alloc_header *)ptr - 1;
    c->current -= h->size;
    c->frees++;
    free(h);
}

static kvshard_allocator counting_allocator(counting *c)
{
    memset(c, 0, sizeof *c);
    kvshard_allocator a = {counting_malloc, counting_free, c};
    return a;
}

/* ---- files ---------------------------------------------------------------- */

typedef struct text {
    char *name; /* file name without directory */
    char *path;
    char *data;
    size_t len;
} text;

static char *join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (!p)
        die("out of memory");
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p)
        die("out of memory");
    memcpy(p, s, n);
    return p;
}

static void read_text(text *t, const char *dir, const char *name)
{
    t->name = dup_string(name);
    t->path = join(dir, name);
    FILE *f = fopen(t->path, "rb");
    if (!f)
        die("cannot open %s: %s", t->path, strerror(errno));
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf)
            die("out of memory");
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        buf = realloc(buf, cap);
    }
    if (ferror(f))
        die("cannot read %s", t->path);
    fclose(f);
    t->data = buf;
    t->len = len;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Files in `dir` ending in `suffix`, sorted by name, read into memory. */
static size_t read_dir(text **out, const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d)
        die("cannot open directory %s: %s", dir, strerror(errno));
    char *names[256];
    size_t n = 0;
    size_t sl = strlen(suffix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 256) {
        size_t l = strlen(e->d_name);
        if (l > sl && strcmp(e->d_name + l - sl, suffix) == 0)
            names[n++] = dup_string(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    text *t = calloc(n ? n : 1, sizeof *t);
    if (!t)
        die("out of memory");
    for (size_t i = 0; i < n; i++) {
        read_text(&t[i], dir, names[i]);
        free(names[i]);
    }
    *out = t;
    return n;
}

/* ---- operations under test ------------------------------------------------ */

typedef struct op_ctx {
    const char *text;
    size_t len;
    const char *name;
    const char *base_dir;
    const kvshard_options *options;
    const kvshard_model *model;
    const kvshard_plan *plan;
    const kvshard_deployment *deployment;
    uint32_t tp;
    uint64_t memory;
    uint64_t inner; /* calls per operation for the cheap queries */
    uint64_t bytes; /* JSON bytes written by the last emit */
} op_ctx;

static volatile uint64_t sink;

/* The yardstick: libyaml's event parser over the text, every event deleted. */
static void op_bare_parse(void *p)
{
    op_ctx *c = p;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        die("yaml_parser_initialize failed");
    yaml_parser_set_input_string(&parser, (const unsigned char *)c->text, c->len);
    uint64_t events = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev))
            die("libyaml cannot parse %s", c->name);
        bool done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        events++;
        if (done)
            break;
    }
    yaml_parser_delete(&parser);
    sink += events;
}

static kvshard_model *load_model(const op_ctx *c, const kvshard_load_options *lo)
{
    kvshard_model *m = NULL;
    kvshard_error err;
    int rc = kvshard_model_load_string(&m, c->text, c->len, c->name, lo, &err);
    if (rc)
        die_kvshard("loading", c->name, rc, &err);
    return m;
}

static kvshard_plan *make_plan(const kvshard_model *m, const op_ctx *c,
                               const kvshard_allocator *a)
{
    kvshard_plan *p = NULL;
    kvshard_error err;
    int rc = kvshard_plan_create(&p, m, c->options, a, &err);
    if (rc)
        die_kvshard("planning", c->name, rc, &err);
    return p;
}

static void op_load(void *p)
{
    op_ctx *c = p;
    kvshard_model *m = load_model(c, NULL);
    sink += kvshard_model_num_layers(m);
    kvshard_model_free(m);
}

static void op_plan(void *p)
{
    op_ctx *c = p;
    kvshard_plan *plan = make_plan(c->model, c, NULL);
    sink += kvshard_plan_digest(plan);
    kvshard_plan_free(plan);
}

static void op_load_plan(void *p)
{
    op_ctx *c = p;
    kvshard_model *m = load_model(c, NULL);
    kvshard_plan *plan = make_plan(m, c, NULL);
    sink += kvshard_plan_digest(plan);
    kvshard_plan_free(plan);
    kvshard_model_free(m);
}

static void op_deployment_load(void *p)
{
    op_ctx *c = p;
    kvshard_deployment *d = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_load_string(&d, c->text, c->len, c->name, c->base_dir, NULL, &err);
    if (rc)
        die_kvshard("loading deployment", c->name, rc, &err);
    sink += kvshard_model_num_layers(kvshard_deployment_model(d));
    kvshard_deployment_free(d);
}

static void op_deployment_plan(void *p)
{
    op_ctx *c = p;
    kvshard_plan *plan = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_plan(&plan, c->deployment, &err);
    if (rc)
        die_kvshard("planning deployment", c->name, rc, &err);
    sink += kvshard_plan_digest(plan);
    kvshard_plan_free(plan);
}

static void op_rank_layers(void *p)
{
    op_ctx *c = p;
    uint64_t acc = 0;
    uint32_t r = 0;
    for (uint64_t i = 0; i < c->inner; i++) {
        const uint32_t *layers;
        size_t count;
        if (kvshard_plan_rank_layers(&layers, &count, c->plan, r) == KVSHARD_OK)
            acc += count + (count ? layers[0] : 0);
        if (++r == c->tp)
            r = 0;
    }
    sink += acc;
}

static void op_num_blocks(void *p)
{
    op_ctx *c = p;
    uint64_t acc = 0;
    for (uint64_t i = 0; i < c->inner; i++) {
        uint64_t blocks = 0;
        /* Vary the memory so no call repeats the previous one. */
        if (kvshard_plan_num_blocks_for(&blocks, c->plan, c->memory - (i & 1023), NULL) ==
            KVSHARD_OK)
            acc += blocks;
    }
    sink += acc;
}

static int count_write(void *user, const char *data, size_t len)
{
    (void)data;
    *(uint64_t *)user += len;
    return 0;
}

static void op_json(void *p)
{
    op_ctx *c = p;
    uint64_t bytes = 0;
    int rc = kvshard_plan_write_json(c->plan, count_write, &bytes);
    if (rc)
        die("writing JSON for %s failed: %s", c->name, kvshard_strerror(rc));
    c->bytes = bytes;
    sink += bytes;
}

/* ---- owns() --------------------------------------------------------------- */

typedef struct owns_result {
    const char *label;
    char plan_name[96];
    uint32_t tp, layers;
    uint32_t stride;
    stats ns;
    uint64_t allocations; /* allocations through the plan's allocator during the loop */
    uint64_t owned;       /* true results, a check that work was done */
} owns_result;

/* ns per owns() call over `calls` calls. The layer advances by `stride`
 * (wrapping) on every call and the rank after each pass over the layers, so
 * consecutive calls ask different questions. The results are summed and the
 * sum is stored into a volatile sink; owns() lives in another translation
 * unit, so the calls can be neither hoisted nor elided. The loop keeps its
 * state in registers so that it adds as little as possible to the call. */
static double owns_sample(const kvshard_plan *plan, uint32_t T, uint32_t L, uint32_t stride,
                          uint64_t calls, uint64_t *owned)
{
    uint64_t acc = 0, done = 0;
    uint32_t r = 0;
    uint64_t t0 = now_ns();
    while (done < calls) {
        uint32_t n = calls - done < L ? (uint32_t)(calls - done) : L;
        if (stride == 1) {
            for (uint32_t l = 0; l < n; l++)
                acc += kvshard_plan_owns(plan, r, l);
        } else {
            uint32_t l = 0;
            for (uint32_t k = 0; k < n; k++) {
                acc += kvshard_plan_owns(plan, r, l);
                l += stride;
                if (l >= L)
                    l -= L;
            }
        }
        done += n;
        if (++r == T)
            r = 0;
    }
    uint64_t t1 = now_ns();
    sink += acc;
    *owned = acc;
    return (double)(t1 - t0) / (double)calls;
}

/* The same loop around the cheapest query, for the cost of the loop and an
 * out-of-line call alone. */
static double floor_sample(const kvshard_plan *plan, uint32_t T, uint32_t L, uint32_t stride,
                           uint64_t calls, uint64_t *owned)
{
    (void)stride;
    uint64_t acc = 0, done = 0;
    uint32_t r = 0;
    uint64_t t0 = now_ns();
    while (done < calls) {
        uint32_t n = calls - done < L ? (uint32_t)(calls - done) : L;
        for (uint32_t l = 0; l < n; l++)
            acc += kvshard_plan_attn_tp_size(plan) ^ l;
        done += n;
        if (++r == T)
            r = 0;
    }
    uint64_t t1 = now_ns();
    sink += acc + r;
    *owned = acc;
    return (double)(t1 - t0) / (double)calls;
}

static owns_result bench_owns(const settings *cfg, const kvshard_plan *plan, counting *cnt,
                              const char *label, const char *plan_name, uint32_t stride)
{
    bool floor = strcmp(label, "floor") == 0;
    double (*sample)(const kvshard_plan *, uint32_t, uint32_t, uint32_t, uint64_t, uint64_t *) =
        floor ? floor_sample : owns_sample;
    owns_result o;
    memset(&o, 0, sizeof o);
    o.label = label;
    snprintf(o.plan_name, sizeof o.plan_name, "%s", plan_name);
    o.tp = kvshard_plan_attn_tp_size(plan);
    o.layers = kvshard_plan_num_layers(plan);
    o.stride = stride % o.layers;
    double *v = malloc(cfg->reps * sizeof *v);
    if (!v)
        die("out of memory");
    uint64_t before = cnt->allocs;
    sample(plan, o.tp, o.layers, o.stride, cfg->owns_calls / 10, &o.owned); /* warm-up */
    for (size_t i = 0; i < cfg->reps; i++)
        v[i] = sample(plan, o.tp, o.layers, o.stride, cfg->owns_calls, &o.owned);
    o.allocations = cnt->allocs - before;
    o.ns = summarize(v, cfg->reps, cfg->owns_calls);
    free(v);
    return o;
}

/* ---- results -------------------------------------------------------------- */

typedef struct model_result {
    const char *name;
    size_t bytes;
    char options[64];
    stats parse, load, plan, load_plan;
    stats ratio; /* (load + plan) / bare parse, per pair of interleaved batches */
    size_t load_peak, model_bytes, plan_bytes;
} model_result;

typedef struct deployment_result {
    const char *name;
    uint32_t tp, layers;
    stats load, plan, rank_layers, num_blocks, json;
    uint64_t json_bytes;
} deployment_result;

typedef struct sweep_result {
    uint32_t layers, world_size, split;
    size_t text_bytes;
    stats load, plan, load_plan, num_blocks;
    bool has_json;
    stats json;
    uint64_t json_bytes;
    size_t load_peak, model_bytes, plan_peak, plan_bytes;
    uint64_t plan_allocs;
} sweep_result;

typedef struct target_result {
    const char *name;
    const char *measured_as;
    double value, limit;
    bool measured; /* false: its section was not run (SKIP) */
    bool pass;
} target_result;

/* ---- model configs -------------------------------------------------------- */

static void bench_model(const settings *cfg, model_result *res, const text *t)
{
    memset(res, 0, sizeof *res);
    res->name = t->name;
    res->bytes = t->len;

    /* A typical deployment: TP 8, split 2, 40 GiB per rank; the defaults
     * (TP 1) when the model does not fit that. */
    kvshard_options opts = KVSHARD_OPTIONS_INIT;
    opts.world_size = 8;
    opts.enable_layerwise_split = true;
    opts.layerwise_split_size = 2;
    opts.memory_per_rank = 40ull << 30;
    op_ctx c;
    memset(&c, 0, sizeof c);
    c.text = t->data;
    c.len = t->len;
    c.name = t->name;
    c.options = &opts;

    counting mc, pc;
    kvshard_allocator ma = counting_allocator(&mc);
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &ma;
    kvshard_model *m = load_model(&c, &lo);
    res->load_peak = mc.peak;
    res->model_bytes = mc.current;
    kvshard_allocator pa = counting_allocator(&pc);
    kvshard_plan *probe = NULL;
    if (kvshard_plan_create(&probe, m, &opts, &pa, NULL) != KVSHARD_OK) {
        kvshard_options defaults = KVSHARD_OPTIONS_INIT;
        opts = defaults;
    }
    kvshard_plan_free(probe);
    pa = counting_allocator(&pc);
    probe = make_plan(m, &c, &pa);
    res->plan_bytes = pc.current;
    kvshard_plan_free(probe);
    snprintf(res->options, sizeof res->options, "world_size %u, split %u%s", opts.world_size,
             opts.enable_layerwise_split ? opts.layerwise_split_size : 1,
             opts.memory_per_rank ? ", 40 GiB" : "");
    c.model = m;

    res->load = measure(cfg, op_load, &c);
    res->plan = measure(cfg, op_plan, &c);
    measure_pair(cfg, op_bare_parse, op_load_plan, &c, &res->parse, &res->load_plan, &res->ratio);
    kvshard_model_free(m);
}

/* ---- deployments ---------------------------------------------------------- */

static void bench_deployment(const settings *cfg, deployment_result *res, const text *t,
                             const char *dir)
{
    memset(res, 0, sizeof *res);
    res->name = t->name;
    op_ctx c;
    memset(&c, 0, sizeof c);
    c.text = t->data;
    c.len = t->len;
    c.name = t->name;
    c.base_dir = dir;

    kvshard_deployment *d = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_load_string(&d, t->data, t->len, t->name, dir, NULL, &err);
    if (rc)
        die_kvshard("loading deployment", t->name, rc, &err);
    kvshard_plan *plan = NULL;
    if ((rc = kvshard_deployment_plan(&plan, d, &err)) != 0)
        die_kvshard("planning deployment", t->name, rc, &err);
    kvshard_options opts = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&opts, d);
    c.deployment = d;
    c.plan = plan;
    c.tp = kvshard_plan_attn_tp_size(plan);
    c.memory = opts.memory_per_rank ? opts.memory_per_rank : 40ull << 30;
    res->tp = c.tp;
    res->layers = kvshard_plan_num_layers(plan);

    res->load = measure(cfg, op_deployment_load, &c);
    res->plan = measure(cfg, op_deployment_plan, &c);
    c.inner = 1000;
    res->rank_layers = scaled(measure(cfg, op_rank_layers, &c), (double)c.inner);
    c.inner = 100;
    res->num_blocks = scaled(measure(cfg, op_num_blocks, &c), (double)c.inner);
    res->json = measure(cfg, op_json, &c);
    res->json_bytes = c.bytes;
    kvshard_plan_free(plan);
    kvshard_deployment_free(d);
}

/* ---- scaling sweep --------------------------------------------------------- */

/* A Gated DeltaNet hybrid with the interval rule, so the text stays a few
 * hundred bytes at any layer count. Linear heads divide every TP size up to
 * 4096; 8 KV heads divide or are divided by every power-of-two TP size. */
static size_t sweep_text(char *buf, size_t cap, uint32_t layers)
{
    int n = snprintf(buf, cap,
                     "model_type: bench_hybrid\n"
                     "num_hidden_layers: %u\n"
                     "hidden_size: 4096\n"
                     "num_attention_heads: 32\n"
                     "num_key_value_heads: 8\n"
                     "head_dim: 128\n"
                     "full_attention_interval: 4\n"
                     "linear_num_key_heads: 4096\n"
                     "linear_num_value_heads: 4096\n"
                     "linear_key_head_dim: 16\n"
                     "linear_value_head_dim: 16\n"
                     "linear_conv_kernel_dim: 4\n",
                     layers);
    if (n < 0 || (size_t)n >= cap)
        die("sweep text does not fit");
    return (size_t)n;
}

static void bench_sweep_point(const settings *cfg, sweep_result *res, uint32_t layers,
                              uint32_t world)
{
    memset(res, 0, sizeof *res);
    char buf[1024];
    size_t len = sweep_text(buf, sizeof buf, layers);
    kvshard_options opts = KVSHARD_OPTIONS_INIT;
    opts.world_size = world;
    opts.enable_layerwise_split = world > 1;
    opts.layerwise_split_size = world > 1 ? 2 : 1;
    res->layers = layers;
    res->world_size = world;
    res->split = opts.layerwise_split_size;
    res->text_bytes = len;

    op_ctx c;
    memset(&c, 0, sizeof c);
    c.text = buf;
    c.len = len;
    c.name = "<sweep>";
    c.options = &opts;

    counting mc;
    kvshard_allocator ma = counting_allocator(&mc);
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &ma;
    kvshard_model *m = load_model(&c, &lo);
    res->load_peak = mc.peak;
    res->model_bytes = mc.current;

    counting cnt;
    counting *pc = &cnt;
    kvshard_allocator pa = counting_allocator(pc);
    kvshard_plan *plan = make_plan(m, &c, &pa);
    res->plan_peak = pc->peak;
    res->plan_bytes = pc->current;
    res->plan_allocs = pc->allocs;

    c.model = m;
    c.plan = plan;
    c.tp = kvshard_plan_attn_tp_size(plan);
    c.memory = UINT64_MAX; /* the sweep's states are large; any memory works */
    res->load = measure(cfg, op_load, &c);
    res->plan = measure(cfg, op_plan, &c);
    res->load_plan = measure(cfg, op_load_plan, &c);
    c.inner = 10;
    res->num_blocks = scaled(measure(cfg, op_num_blocks, &c), (double)c.inner);
    /* The JSON lists every layer and every rank's owned layers: output grows
     * with L * T / S, so only the smaller products are emitted. */
    if ((uint64_t)layers * c.tp / res->split <= 4000000u) {
        res->has_json = true;
        res->json = measure(cfg, op_json, &c);
        res->json_bytes = c.bytes;
    }
    kvshard_model_free(m);
    kvshard_plan_free(plan);
}

/* ---- output ---------------------------------------------------------------- */

static void fmt_ns(char *buf, size_t cap, double ns)
{
    if (ns < 10)
        snprintf(buf, cap, "%.2f ns", ns);
    else if (ns < 1e3)
        snprintf(buf, cap, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, cap, "%.1f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, cap, "%.1f ms", ns / 1e6);
    else
        snprintf(buf, cap, "%.2f s", ns / 1e9);
}

/* "median [p10, p90]" in a fixed-width cell. */
static void cell(const stats *s)
{
    char a[32], b[32], c[32], all[100];
    fmt_ns(a, sizeof a, s->median);
    fmt_ns(b, sizeof b, s->p10);
    fmt_ns(c, sizeof c, s->p90);
    snprintf(all, sizeof all, "%s [%s..%s]", a, b, c);
    printf(" %-30s", all);
}

static void json_stats(FILE *f, const char *key, const stats *s, bool comma)
{
    fprintf(f,
            "\"%s\": {\"median_ns\": %.3f, \"p10_ns\": %.3f, \"p90_ns\": %.3f, "
            "\"min_ns\": %.3f, \"max_ns\": %.3f, \"samples\": %zu, \"ops_per_sample\": %llu}%s",
            key, s->median, s->p10, s->p90, s->min, s->max, s->samples,
            (unsigned long long)s->per_sample, comma ? ", " : "");
}

typedef struct report {
    const settings *cfg;
    model_result *models;
    size_t model_count;
    deployment_result *deployments;
    size_t deployment_count;
    owns_result owns[8];
    size_t owns_count;
    sweep_result *sweep;
    size_t sweep_count;
    target_result targets[4];
    size_t target_count;
    bool all_pass;
} report;

static void print_table(const report *r)
{
    printf("kvshard %s benchmark: median [p10..p90] of up to %zu samples per figure (%s)\n\n",
           KVSHARD_VERSION_STRING, r->cfg->reps,
           bench_clock == CLOCK_MONOTONIC ? "wall clock" : "thread CPU time");

    if (r->model_count == 0)
        goto deployments;
    printf("Model configs (text in memory; plan options as listed)\n");
    printf("%-26s %6s %-30s %-30s %-30s %-30s %-18s %9s %9s\n", "model", "bytes",
           "bare libyaml parse", "kvshard load", "kvshard plan", "load + plan",
           "ratio (l+p)/parse", "load peak", "plan mem");
    for (size_t i = 0; i < r->model_count; i++) {
        const model_result *m = &r->models[i];
        printf("%-26s %6zu", m->name, m->bytes);
        cell(&m->parse);
        cell(&m->load);
        cell(&m->plan);
        cell(&m->load_plan);
        char ratio[48];
        snprintf(ratio, sizeof ratio, "%.2fx [%.2f..%.2f]", m->ratio.median, m->ratio.p10,
                 m->ratio.p90);
        printf(" %-18s %8zuB %8zuB\n", ratio, m->load_peak, m->plan_bytes);
    }
    printf("  plan options: ");
    for (size_t i = 0; i < r->model_count; i++)
        printf("%s%s (%s)", i ? "; " : "", r->models[i].name, r->models[i].options);
    printf("\n\n");

deployments:
    if (r->deployment_count == 0)
        goto owns;
    printf("Deployments (the model file is read by kvshard during load)\n");
    printf("%-28s %4s %-30s %-30s %-30s %-30s %-30s %9s\n", "deployment", "T", "load",
           "plan", "rank_layers / call", "num_blocks_for / call", "JSON emit", "JSON");
    for (size_t i = 0; i < r->deployment_count; i++) {
        const deployment_result *d = &r->deployments[i];
        printf("%-28s %4u", d->name, d->tp);
        cell(&d->load);
        cell(&d->plan);
        cell(&d->rank_layers);
        cell(&d->num_blocks);
        cell(&d->json);
        printf(" %8lluB\n", (unsigned long long)d->json_bytes);
    }
    printf("\n");

owns:
    if (r->owns_count == 0)
        goto sweep;
    printf("kvshard_plan_owns() per call (role: target = counts for the target; info = layers\n"
           "7919 apart; floor = the same loop calling kvshard_plan_attn_tp_size instead)\n");
    printf("%-40s %-7s %8s %6s %7s %-30s %8s %12s\n", "plan", "role", "layers", "T", "stride",
           "ns/call", "allocs", "calls/sample");
    for (size_t i = 0; i < r->owns_count; i++) {
        const owns_result *o = &r->owns[i];
        printf("%-40s %-7s %8u %6u %7u", o->plan_name, o->label, o->layers, o->tp, o->stride);
        cell(&o->ns);
        printf(" %8llu %12llu\n", (unsigned long long)o->allocations,
               (unsigned long long)o->ns.per_sample);
    }
    printf("\n");

sweep:
    if (r->sweep_count == 0)
        goto targets;
    printf("Scaling sweep (generated GDN hybrid, full_attention_interval 4, split 2)\n");
    printf("%8s %6s %-30s %-30s %-30s %8s %10s %8s %9s %-30s %-30s\n", "layers", "world",
           "load", "plan", "load + plan", "ns/layer", "plan peak", "B/layer", "load peak",
           "num_blocks_for / call", "JSON emit");
    for (size_t i = 0; i < r->sweep_count; i++) {
        const sweep_result *s = &r->sweep[i];
        printf("%8u %6u", s->layers, s->world_size);
        cell(&s->load);
        cell(&s->plan);
        cell(&s->load_plan);
        printf(" %8.2f %9zuB %8.2f %8zuB", s->load_plan.median / s->layers, s->plan_peak,
               (double)s->plan_peak / s->layers, s->load_peak);
        cell(&s->num_blocks);
        if (s->has_json)
            cell(&s->json);
        else
            printf(" %-30s", "(skipped: L*T/S > 4e6)");
        printf("\n");
    }
    printf("\n");

targets:
    printf("Targets\n");
    for (size_t i = 0; i < r->target_count; i++) {
        const target_result *t = &r->targets[i];
        printf("  %s  %-58s %s = %.3f (limit %.3f)\n",
               !t->measured ? "SKIP" : t->pass ? "PASS" : "FAIL", t->name, t->measured_as,
               t->value, t->limit);
    }
    printf("%s\n", r->all_pass ? "all targets met" : "some targets missed");
}

static void write_json(FILE *f, const report *r)
{
    fprintf(f, "{\n  \"kvshard_version\": \"%s\",\n", KVSHARD_VERSION_STRING);
    fprintf(f, "  \"settings\": {\"clock\": \"%s\", \"samples\": %zu, \"min_samples\": %zu, \"batch_ns\": %llu, "
               "\"budget_ns\": %llu, \"owns_calls_per_sample\": %llu, \"max_layers\": %u},\n",
            bench_clock == CLOCK_MONOTONIC ? "wall" : "thread_cputime", r->cfg->reps,
            r->cfg->min_reps, (unsigned long long)r->cfg->batch_ns,
            (unsigned long long)r->cfg->budget_ns, (unsigned long long)r->cfg->owns_calls,
            r->cfg->max_layers);
    fprintf(f, "  \"models\": [");
    for (size_t i = 0; i < r->model_count; i++) {
        const model_result *m = &r->models[i];
        fprintf(f, "%s\n    {\"name\": \"%s\", \"bytes\": %zu, \"plan_options\": \"%s\", ",
                i ? "," : "", m->name, m->bytes, m->options);
        json_stats(f, "bare_parse", &m->parse, true);
        json_stats(f, "load", &m->load, true);
        json_stats(f, "plan", &m->plan, true);
        json_stats(f, "load_plan", &m->load_plan, true);
        fprintf(f, "\"ratio_load_plan_to_parse\": {\"median\": %.4f, \"p10\": %.4f, "
                   "\"p90\": %.4f, \"min\": %.4f, \"max\": %.4f}, \"load_peak_bytes\": %zu, "
                   "\"model_bytes\": %zu, \"plan_bytes\": %zu}",
                m->ratio.median, m->ratio.p10, m->ratio.p90, m->ratio.min, m->ratio.max,
                m->load_peak, m->model_bytes, m->plan_bytes);
    }
    fprintf(f, "\n  ],\n  \"deployments\": [");
    for (size_t i = 0; i < r->deployment_count; i++) {
        const deployment_result *d = &r->deployments[i];
        fprintf(f, "%s\n    {\"name\": \"%s\", \"attn_tp_size\": %u, \"layers\": %u, ",
                i ? "," : "", d->name, d->tp, d->layers);
        json_stats(f, "load", &d->load, true);
        json_stats(f, "plan", &d->plan, true);
        json_stats(f, "rank_layers_per_call", &d->rank_layers, true);
        json_stats(f, "num_blocks_for_per_call", &d->num_blocks, true);
        json_stats(f, "write_json", &d->json, true);
        fprintf(f, "\"json_bytes\": %llu}", (unsigned long long)d->json_bytes);
    }
    fprintf(f, "\n  ],\n  \"owns\": [");
    for (size_t i = 0; i < r->owns_count; i++) {
        const owns_result *o = &r->owns[i];
        fprintf(f,
                "%s\n    {\"plan\": \"%s\", \"role\": \"%s\", \"layers\": %u, \"attn_tp_size\": "
                "%u, \"layer_stride\": %u, ",
                i ? "," : "", o->plan_name, o->label, o->layers, o->tp, o->stride);
        json_stats(f, "per_call", &o->ns, true);
        fprintf(f, "\"allocations\": %llu}", (unsigned long long)o->allocations);
    }
    fprintf(f, "\n  ],\n  \"scaling\": [");
    for (size_t i = 0; i < r->sweep_count; i++) {
        const sweep_result *s = &r->sweep[i];
        fprintf(f,
                "%s\n    {\"layers\": %u, \"world_size\": %u, \"layerwise_split_size\": %u, "
                "\"text_bytes\": %zu, ",
                i ? "," : "", s->layers, s->world_size, s->split, s->text_bytes);
        json_stats(f, "load", &s->load, true);
        json_stats(f, "plan", &s->plan, true);
        json_stats(f, "load_plan", &s->load_plan, true);
        json_stats(f, "num_blocks_for_per_call", &s->num_blocks, true);
        if (s->has_json) {
            json_stats(f, "write_json", &s->json, true);
            fprintf(f, "\"json_bytes\": %llu, ", (unsigned long long)s->json_bytes);
        }
        fprintf(f,
                "\"load_plan_ns_per_layer\": %.4f, \"plan_peak_bytes\": %zu, "
                "\"plan_bytes\": %zu, \"plan_allocations\": %llu, "
                "\"plan_bytes_per_layer\": %.4f, \"load_peak_bytes\": %zu, \"model_bytes\": %zu}",
                s->load_plan.median / s->layers, s->plan_peak, s->plan_bytes,
                (unsigned long long)s->plan_allocs, (double)s->plan_peak / s->layers,
                s->load_peak, s->model_bytes);
    }
    fprintf(f, "\n  ],\n  \"targets\": [");
    for (size_t i = 0; i < r->target_count; i++) {
        const target_result *t = &r->targets[i];
        fprintf(f,
                "%s\n    {\"name\": \"%s\", \"measured_as\": \"%s\", \"value\": %.4f, "
                "\"limit\": %.4f, \"measured\": %s, \"pass\": %s}",
                i ? "," : "", t->name, t->measured_as, t->value, t->limit,
                t->measured ? "true" : "false", t->pass ? "true" : "false");
    }
    fprintf(f, "\n  ],\n  \"all_pass\": %s\n}\n", r->all_pass ? "true" : "false");
}

/* ---- targets ----------------------------------------------------------------- */

static void add_target(report *r, const char *name, const char *how, double value, double limit,
                       bool measured, bool pass)
{
    target_result *t = &r->targets[r->target_count++];
    t->name = name;
    t->measured_as = measured ? how : "not measured";
    t->value = measured ? value : 0;
    t->limit = limit;
    t->measured = measured;
    t->pass = measured && pass;
    r->all_pass = r->all_pass && (pass || !measured);
}

static const sweep_result *sweep_at(const report *r, uint32_t layers, uint32_t world)
{
    for (size_t i = 0; i < r->sweep_count; i++)
        if (r->sweep[i].layers == layers && r->sweep[i].world_size == world)
            return &r->sweep[i];
    return NULL;
}

static void evaluate(report *r, const uint32_t *worlds, size_t world_count)
{
    r->all_pass = true;

    double worst = 0;
    uint64_t allocs = 0;
    for (size_t i = 0; i < r->owns_count; i++) {
        worst = r->owns[i].ns.median > worst ? r->owns[i].ns.median : worst;
        allocs += r->owns[i].allocations;
    }
    add_target(r, "owns() <= 2 ns per call, no allocation",
               "worst median ns/call (allocations must be 0)", worst, TARGET_OWNS_NS,
               r->owns_count > 0, worst <= TARGET_OWNS_NS && allocs == 0);

    double ratio = 0;
    for (size_t i = 0; i < r->model_count; i++)
        ratio = r->models[i].ratio.median > ratio ? r->models[i].ratio.median : ratio;
    add_target(r, "load + plan of every model <= 2x bare libyaml parse",
               "worst median of paired-batch ratios", ratio, TARGET_LOAD_PLAN_RATIO, r->model_count > 0,
               ratio <= TARGET_LOAD_PLAN_RATIO);

    const uint32_t big = 1000000;
    double big_ns = 0, big_bpl = 0;
    bool have_big = false;
    for (size_t w = 0; w < world_count; w++) {
        const sweep_result *s = sweep_at(r, big, worlds[w]);
        if (!s)
            continue;
        have_big = true;
        big_ns = s->load_plan.median > big_ns ? s->load_plan.median : big_ns;
        double bpl = (double)s->plan_peak / s->layers;
        big_bpl = bpl > big_bpl ? bpl : big_bpl;
    }
    /* Both limits in one target; the value shown is the time as a fraction
     * of 1 s or the bytes as a fraction of 64, whichever is closer to its limit. */
    double frac = big_ns / TARGET_BIG_NS > big_bpl / TARGET_BIG_BYTES_PER_LAYER
                      ? big_ns / TARGET_BIG_NS
                      : big_bpl / TARGET_BIG_BYTES_PER_LAYER;
    add_target(r, "10^6 layers: load + plan <= 1 s, plan memory <= 64 B/layer",
               "worst of (median s / 1 s, peak B/layer / 64)", frac, 1.0, have_big,
               frac <= 1.0);

    double growth = 0;
    bool have_growth = false;
    for (size_t w = 0; w < world_count; w++) {
        const sweep_result *a = sweep_at(r, big / 10, worlds[w]);
        const sweep_result *b = sweep_at(r, big, worlds[w]);
        if (!a || !b)
            continue;
        have_growth = true;
        double g = (b->load_plan.median / b->layers) / (a->load_plan.median / a->layers);
        growth = g > growth ? g : growth;
        double mg = ((double)b->plan_peak / b->layers) / ((double)a->plan_peak / a->layers);
        growth = mg > growth ? mg : growth;
    }
    add_target(r, "cost grows linearly with layers",
               "worst per-layer (time or plan bytes) at 10^6 over 10^5", growth,
               TARGET_LINEAR_RATIO, have_growth, growth <= TARGET_LINEAR_RATIO);
}

/* ---- main -------------------------------------------------------------------- */

static const char usage_text[] =
    "usage: kvshard_bench [--json FILE] [--format=table|json] [--check] [--quick] [--wall]\n"
    "                     [--samples N] [--max-layers N] [--examples DIR]\n"
    "                     [--only models,deployments,owns,sweep]\n"
    "\n"
    "Measures loading, planning and queries against a bare libyaml parse and\n"
    "prints PASS/FAIL per target. Exit status 0, or 1 with --check when a\n"
    "target is missed; 2 on bad usage or a failed load.\n"
    "  --json FILE       also write the results as JSON to FILE\n"
    "  --format=json     write JSON to stdout instead of the table\n"
    "  --check           exit 1 when a target is missed\n"
    "  --wall            time with the wall clock (default: the thread's CPU time)\n"
    "  --quick           fewer samples and shorter batches (a smoke run)\n"
    "  --samples N       samples per figure (default 31)\n"
    "  --max-layers N    largest layer count of the sweep (default 1000000)\n"
    "  --examples DIR    the examples directory (default the source tree's)\n"
    "  --only LIST       run only these sections (comma-separated); targets of the\n"
    "                    others are reported as SKIP\n";

static uint64_t parse_count(const char *s, const char *flag)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v == 0)
        die("%s needs a positive integer, not \"%s\"", flag, s);
    return v;
}

static unsigned parse_sections(const char *list)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"models", SECTION_MODELS},
                 {"deployments", SECTION_DEPLOYMENTS},
                 {"owns", SECTION_OWNS},
                 {"sweep", SECTION_SWEEP}};
    unsigned bits = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        size_t k = 0;
        while (k < sizeof names / sizeof names[0] &&
               !(strlen(names[k].name) == n && strncmp(names[k].name, p, n) == 0))
            k++;
        if (k == sizeof names / sizeof names[0])
            die("--only: unknown section \"%.*s\" (models, deployments, owns, sweep)", (int)n, p);
        bits |= names[k].bit;
        p += n + (p[n] == ',');
    }
    return bits;
}

/* owns() on `plan`: the target rows, the call floor and, for large plans, a
 * cache-hostile stride. */
static void owns_rows(report *r, const settings *cfg, const kvshard_plan *plan, counting *cnt,
                      const char *name, bool strided)
{
    r->owns[r->owns_count++] = bench_owns(cfg, plan, cnt, "target", name, 1);
    r->owns[r->owns_count++] = bench_owns(cfg, plan, cnt, "floor", name, 1);
    if (strided)
        r->owns[r->owns_count++] = bench_owns(cfg, plan, cnt, "info", name, 7919);
}

int main(int argc, char **argv)
{
    settings cfg = {31,    5,     2000000, 1500000000u, 20000000u, 1000000, KVSHARD_BENCH_EXAMPLES,
                    NULL,  false, false,   0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0 && i + 1 < argc) {
            cfg.json_path = argv[++i];
        } else if (strncmp(a, "--json=", 7) == 0) {
            cfg.json_path = a + 7;
        } else if (strcmp(a, "--format=json") == 0) {
            cfg.json_stdout = true;
        } else if (strcmp(a, "--format=table") == 0) {
            cfg.json_stdout = false;
        } else if (strcmp(a, "--wall") == 0) {
            bench_clock = CLOCK_MONOTONIC;
        } else if (strcmp(a, "--check") == 0) {
            cfg.check = true;
        } else if (strcmp(a, "--quick") == 0) {
            cfg.reps = 7;
            cfg.min_reps = 3;
            cfg.batch_ns = 500000;
            cfg.budget_ns = 300000000u;
            cfg.owns_calls = 5000000u;
        } else if (strcmp(a, "--samples") == 0 && i + 1 < argc) {
            cfg.reps = (size_t)parse_count(argv[++i], "--samples");
            cfg.min_reps = cfg.reps < cfg.min_reps ? cfg.reps : cfg.min_reps;
        } else if (strcmp(a, "--max-layers") == 0 && i + 1 < argc) {
            uint64_t v = parse_count(argv[++i], "--max-layers");
            cfg.max_layers = v > KVSHARD_MAX_LAYERS ? KVSHARD_MAX_LAYERS : (uint32_t)v;
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            cfg.only = parse_sections(argv[++i]);
        } else if (strcmp(a, "--examples") == 0 && i + 1 < argc) {
            cfg.examples = argv[++i];
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else {
            fprintf(stderr, "kvshard_bench: unknown argument \"%s\"\n%s", a, usage_text);
            return 2;
        }
    }

    report r;
    memset(&r, 0, sizeof r);
    r.cfg = &cfg;
    char *models_dir = join(cfg.examples, "models");
    text *models, *deployments;
    r.model_count = read_dir(&models, models_dir, ".json");
    r.deployment_count = read_dir(&deployments, cfg.examples, ".yaml");
    if (r.model_count == 0)
        die("no model configs (*.json) in %s", models_dir);
    r.models = calloc(r.model_count, sizeof *r.models);
    r.deployments = calloc(r.deployment_count ? r.deployment_count : 1, sizeof *r.deployments);
    if (!r.models || !r.deployments)
        die("out of memory");

    size_t model_total = r.model_count, deployment_total = r.deployment_count;
    if (!runs(&cfg, SECTION_MODELS))
        r.model_count = 0;
    for (size_t i = 0; i < r.model_count; i++)
        bench_model(&cfg, &r.models[i], &models[i]);
    if (!runs(&cfg, SECTION_DEPLOYMENTS))
        r.deployment_count = 0;
    for (size_t i = 0; i < r.deployment_count; i++)
        bench_deployment(&cfg, &r.deployments[i], &deployments[i], cfg.examples);

    /* owns() on the first shipped deployment's plan and on a generated plan of
     * 10^6 layers (or --max-layers) over 4096 ranks, both built with a counting
     * allocator so that any allocation during the loop would show. */
    if (runs(&cfg, SECTION_OWNS) && deployment_total > 0) {
        counting oc;
        kvshard_allocator oa = counting_allocator(&oc);
        const text *t = &deployments[0];
        kvshard_deployment *d = NULL;
        kvshard_error err;
        int rc = kvshard_deployment_load_string(&d, t->data, t->len, t->name, cfg.examples, NULL,
                                                &err);
        if (rc)
            die_kvshard("loading deployment", t->name, rc, &err);
        kvshard_options opts = KVSHARD_OPTIONS_INIT;
        kvshard_deployment_options(&opts, d);
        kvshard_plan *plan = NULL;
        if ((rc = kvshard_plan_create(&plan, kvshard_deployment_model(d), &opts, &oa, &err)) != 0)
            die_kvshard("planning deployment", t->name, rc, &err);
        owns_rows(&r, &cfg, plan, &oc, t->name, false);
        kvshard_plan_free(plan);
        kvshard_deployment_free(d);
    }
    if (runs(&cfg, SECTION_OWNS)) {
        uint32_t layers = cfg.max_layers < 1000000 ? cfg.max_layers : 1000000;
        char buf[1024], name[96];
        op_ctx c;
        memset(&c, 0, sizeof c);
        c.len = sweep_text(buf, sizeof buf, layers);
        c.text = buf;
        c.name = "<generated>";
        kvshard_options opts = KVSHARD_OPTIONS_INIT;
        opts.world_size = 4096;
        opts.enable_layerwise_split = true;
        opts.layerwise_split_size = 2;
        c.options = &opts;
        counting oc;
        kvshard_allocator oa = counting_allocator(&oc);
        kvshard_model *m = load_model(&c, NULL);
        kvshard_plan *plan = make_plan(m, &c, &oa);
        kvshard_model_free(m);
        snprintf(name, sizeof name, "generated L=%u world=4096 split=2", layers);
        owns_rows(&r, &cfg, plan, &oc, name, true);
        kvshard_plan_free(plan);
    }

    /* Scaling: 10^2 .. 10^6 layers at TP 1 (no split) and 8 .. 4096 (split 2). */
    static const uint32_t worlds[] = {1, 8, 64, 512, 4096};
    const size_t world_count = sizeof worlds / sizeof worlds[0];
    r.sweep = calloc(5 * world_count, sizeof *r.sweep);
    if (!r.sweep)
        die("out of memory");
    for (uint32_t layers = 100;
         runs(&cfg, SECTION_SWEEP) && layers <= cfg.max_layers && layers <= 1000000;
         layers *= 10) {
        for (size_t w = 0; w < world_count; w++)
            bench_sweep_point(&cfg, &r.sweep[r.sweep_count++], layers, worlds[w]);
        fprintf(stderr, "kvshard_bench: sweep at %u layers done\n", layers);
    }

    /* Only "target" rows count for the owns() target. */
    report eval = r;
    eval.owns_count = 0;
    for (size_t i = 0; i < r.owns_count; i++)
        if (strcmp(r.owns[i].label, "target") == 0)
            eval.owns[eval.owns_count++] = r.owns[i];
    evaluate(&eval, worlds, world_count);
    memcpy(r.targets, eval.targets, sizeof r.targets);
    r.target_count = eval.target_count;
    r.all_pass = eval.all_pass;

    if (cfg.json_stdout)
        write_json(stdout, &r);
    else
        print_table(&r);
    if (cfg.json_path) {
        FILE *f = fopen(cfg.json_path, "w");
        if (!f)
            die("cannot write %s: %s", cfg.json_path, strerror(errno));
        write_json(f, &r);
        if (fclose(f) != 0)
            die("cannot write %s: %s", cfg.json_path, strerror(errno));
    }

    for (size_t i = 0; i < model_total; i++) {
        free(models[i].name);
        free(models[i].path);
        free(models[i].data);
    }
    for (size_t i = 0; i < deployment_total; i++) {
        free(deployments[i].name);
        free(deployments[i].path);
        free(deployments[i].data);
    }
    free(models);
    free(deployments);
    free(models_dir);
    free(r.models);
    free(r.deployments);
    free(r.sweep);
    return cfg.check && !r.all_pass ? 1 : 0;
}
