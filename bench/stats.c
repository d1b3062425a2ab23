/* Clocks, batches, alternating pairs and their summaries; a counting
 * allocator; the few helpers every file uses. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "bench.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- errors and memory ------------------------------------------------------------------ */

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kvshard_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void bench_die_kvshard(const char *what, int rc, const kvshard_error *err)
{
    if (err && err->message[0])
        bench_die("%s: %s (%s:%d:%d: %s)", what, kvshard_strerror(rc), err->source, err->line,
                  err->column, err->message);
    bench_die("%s: %s", what, kvshard_strerror(rc));
}

void *bench_xmalloc(size_t size)
{
    /* Zeroed: a buffer of timings is read only after it is filled, which
     * an optimising compiler cannot always see. */
    void *p = calloc(1, size ? size : 1);
    if (!p)
        bench_die("out of memory (%zu bytes)", size);
    return p;
}

char *bench_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = bench_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* Progress goes to standard error, so standard output holds only the table. */
void bench_progress(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kvshard_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* ---- clocks ------------------------------------------------------------------------------ */

static clockid_t in_process_clock = CLOCK_THREAD_CPUTIME_ID;

void bench_set_clock(bool wall)
{
    in_process_clock = wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
}

const char *bench_clock_name(void)
{
    return in_process_clock == CLOCK_MONOTONIC ? "wall clock" : "thread CPU time";
}

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t bench_now_ns(void)
{
    return read_clock(in_process_clock);
}

uint64_t bench_wall_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

/* ---- statistics ----------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *v, size_t n, unsigned pct)
{
    size_t rank = (n * pct + 99) / 100;
    return v[rank ? rank - 1 : 0];
}

bench_stats bench_summarize(double *v, size_t n)
{
    bench_stats s = {0, 0, 0, 0, 0, n};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, cmp_double);
    s.min = v[0];
    s.max = v[n - 1];
    s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    s.p10 = percentile(v, n, 10);
    s.p90 = percentile(v, n, 90);
    return s;
}

/* ---- batches ----------------------------------------------------------------------------------
 */

uint64_t bench_batch_size(const bench_settings *s, bench_op op, void *ctx)
{
    uint64_t t0 = bench_now_ns();
    op(ctx);
    uint64_t once = bench_now_ns() - t0;
    /* A second warm-up call: the first may have faulted in fresh pages. */
    t0 = bench_now_ns();
    op(ctx);
    uint64_t again = bench_now_ns() - t0;
    once = again < once ? again : once;
    uint64_t iters = once ? s->batch_ns / once : s->batch_ns;
    return iters < 1 ? 1 : iters > 10000000u ? 10000000u : iters;
}

double bench_batch(bench_op op, void *ctx, uint64_t iters)
{
    uint64_t t0 = bench_now_ns();
    for (uint64_t i = 0; i < iters; i++)
        op(ctx);
    return (double)(bench_now_ns() - t0) / (double)iters;
}

void bench_pairs(const bench_settings *s, size_t pairs, bench_op a, void *ctx_a, bench_op b,
                 void *ctx_b, double *ta, double *tb)
{
    uint64_t ia = bench_batch_size(s, a, ctx_a);
    uint64_t ib = bench_batch_size(s, b, ctx_b);
    for (size_t i = 0; i < pairs; i++) {
        ta[i] = bench_batch(a, ctx_a, ia);
        tb[i] = bench_batch(b, ctx_b, ib);
    }
}

bench_stats bench_pair_ratio(const double *ta, const double *tb, size_t n)
{
    double *v = bench_xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = tb[i] / ta[i];
    bench_stats st = bench_summarize(v, n);
    free(v);
    return st;
}

bench_stats bench_summary_of(const double *v, size_t n)
{
    double *tmp = bench_xmalloc(n * sizeof *tmp);
    memcpy(tmp, v, n * sizeof *tmp);
    bench_stats st = bench_summarize(tmp, n);
    free(tmp);
    return st;
}

bench_stats bench_paired(const bench_settings *s, size_t pairs, bench_op a, void *ctx_a, bench_op b,
                         void *ctx_b, bench_stats *time_a, bench_stats *time_b)
{
    double *ta = bench_xmalloc(pairs * sizeof *ta), *tb = bench_xmalloc(pairs * sizeof *tb);
    bench_pairs(s, pairs, a, ctx_a, b, ctx_b, ta, tb);
    bench_stats ratio = bench_pair_ratio(ta, tb, pairs);
    *time_a = bench_summary_of(ta, pairs);
    *time_b = bench_summary_of(tb, pairs);
    free(ta);
    free(tb);
    return ratio;
}

bench_stats bench_time(const bench_settings *s, size_t samples, bench_op op, void *ctx)
{
    uint64_t iters = bench_batch_size(s, op, ctx);
    double *v = bench_xmalloc(samples * sizeof *v);
    for (size_t i = 0; i < samples; i++)
        v[i] = bench_batch(op, ctx, iters);
    bench_stats st = bench_summarize(v, samples);
    free(v);
    return st;
}

/* ---- counting allocator --------------------------------------------------------------------- */

typedef union header {
    max_align_t align;
    size_t size;
} header;

static void *counting_malloc(void *user, size_t size)
{
    bench_counter *c = user;
    if (size > SIZE_MAX - sizeof(header))
        return NULL;
    header *h = malloc(sizeof *h + size);
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
    bench_counter *c = user;
    header *h = (header *)ptr - 1;
    c->current -= h->size;
    c->frees++;
    free(h);
}

kvshard_allocator bench_counting_allocator(bench_counter *c)
{
    memset(c, 0, sizeof *c);
    kvshard_allocator a = {counting_malloc, counting_free, c};
    return a;
}

void bench_counter_rebase(bench_counter *c)
{
    c->peak = c->current;
}
