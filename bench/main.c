/* kvshard_bench: measures kvshard against yardsticks run in the same process
 * at the same time (a bare libyaml parse, /bin/true, an empty call, the old
 * digest) and prints each target as a ratio with its limit.
 *
 * Exit status: 0; 1 with --check when a measured target is missed; 2 on bad
 * usage or when a measurement cannot be made. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifndef KVSHARD_BENCH_EXAMPLES
#define KVSHARD_BENCH_EXAMPLES "examples"
#endif
#ifndef KVSHARD_BENCH_CLI
#define KVSHARD_BENCH_CLI "kvshard"
#endif

static const char usage_text[] =
    "usage: kvshard_bench [--check] [--quick] [--json FILE] [--wall] [--only CASES]\n"
    "                     [--cli PATH] [--examples DIR]\n"
    "\n"
    "Measures kvshard against yardsticks run alongside it and prints every target\n"
    "as a ratio with its limit. Build with CMAKE_BUILD_TYPE=Release.\n"
    "  --check        exit 1 when a target is missed\n"
    "  --quick        fewer pairs and shorter batches (a smoke run; the CLI case then\n"
    "                 runs fewer than 60 pairs)\n"
    "  --json FILE    also write every figure and target to FILE\n"
    "  --wall         time in-process cases on the wall clock (default: the thread's\n"
    "                 CPU time); processes are always timed on the wall clock\n"
    "  --only CASES   comma-separated: cli, memory, load, keys, json, digest, owns,\n"
    "                 queries, sweep, flags, spellings, engines, fit, fit_engine,\n"
    "                 fit_safetensors, safetensors, fit_work, names, comm,\n"
    "                 transfer;\n"
    "                 the targets of the others show as SKIP\n"
    "  --cli PATH     the kvshard executable (default: the one built alongside)\n"
    "  --examples DIR the examples directory (default: the source tree's)\n"
    "\n"
    "Exit status: 0; 1 with --check when a target is missed; 2 on bad usage or a\n"
    "failed measurement.\n";

static const struct {
    const char *name;
    unsigned bit;
} case_names[] = {
    {"cli", BENCH_CASE_CLI},
    {"memory", BENCH_CASE_MEMORY},
    {"load", BENCH_CASE_LOAD},
    {"keys", BENCH_CASE_KEYS},
    {"json", BENCH_CASE_JSON},
    {"digest", BENCH_CASE_DIGEST},
    {"owns", BENCH_CASE_OWNS},
    {"queries", BENCH_CASE_QUERIES},
    {"sweep", BENCH_CASE_SWEEP},
    {"flags", BENCH_CASE_FLAGS},
    {"spellings", BENCH_CASE_SPELLINGS},
    {"engines", BENCH_CASE_ENGINES},
    {"fit", BENCH_CASE_FIT},
    {"fit_engine", BENCH_CASE_FIT_ENGINE},
    {"fit_safetensors", BENCH_CASE_FIT_SAFETENSORS},
    {"safetensors", BENCH_CASE_SAFETENSORS},
    {"fit_work", BENCH_CASE_FIT_WORK},
    {"names", BENCH_CASE_NAMES},
    {"comm", BENCH_CASE_COMM},
    {"transfer", BENCH_CASE_TRANSFER},
};

static unsigned parse_cases(const char *list)
{
    unsigned bits = 0;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        size_t k = 0;
        while (k < sizeof case_names / sizeof case_names[0] &&
               !(strlen(case_names[k].name) == n && strncmp(case_names[k].name, p, n) == 0))
            k++;
        if (k == sizeof case_names / sizeof case_names[0]) {
            fprintf(stderr, "kvshard_bench: --only: unknown case \"%.*s\"\n%s", (int)n, p,
                    usage_text);
            exit(2);
        }
        bits |= case_names[k].bit;
        p += n + (p[n] == ',');
    }
    return bits;
}

static bool runs(const bench_settings *s, unsigned bit)
{
    return s->only == 0 || (s->only & bit) != 0;
}

typedef void (*case_fn)(bench_report *, bench_inputs *);

/* A case and the targets it adds, so that a case left out still lists them. */
static const struct {
    unsigned bit;
    case_fn run;
    const char *targets[5];
    double limits[5];
    bool at_least;
} cases[] = {
    {BENCH_CASE_CLI,
     bench_case_cli,
     {"CLI plan (seed example) / /bin/true", NULL},
     {1.15, 0},
     false},
    {BENCH_CASE_MEMORY,
     bench_case_memory,
     {"loader peak per entry, 10^6-entry layer_types",
      "CLI plan --format=json peak per entry over file + seed peak"},
     {16, 16},
     false},
    {BENCH_CASE_LOAD,
     bench_case_load,
     {"load + plan / bare parse, worst shipped model",
      "load + plan / bare parse, 10^6-entry layer_types"},
     {1.3, 1.3},
     false},
    {BENCH_CASE_KEYS,
     bench_case_keys,
     {"load / bare parse, 2 M-key mapping",
      "load, 1 M keys crafted to collide / 1 M ordinary keys"},
     {2.0, 2.0},
     false},
    {BENCH_CASE_JSON, bench_case_json, {"plan JSON rate / 300 MB/s", NULL}, {1.0, 0}, true},
    {BENCH_CASE_DIGEST,
     bench_case_digest,
     {"plan 10^6 layers: T_ref (byte-wise FNV) / T_new", NULL},
     {1.7, 0},
     true},
    {BENCH_CASE_OWNS,
     bench_case_owns,
     {"owns() / empty out-of-line call, no allocation", NULL},
     {1.3, 0},
     false},
    {BENCH_CASE_QUERIES, bench_case_queries, {NULL, NULL}, {0, 0}, false},
    {BENCH_CASE_SWEEP, bench_case_sweep, {NULL, NULL}, {0, 0}, false},
    {BENCH_CASE_FLAGS,
     bench_case_flags,
     {"CLI plan, flag files at every budget limit / plain plan",
      "flag-file peak RSS over plain / 16 MiB budget"},
     {BENCH_FLAGS_TIME_LIMIT, BENCH_FLAGS_MEMORY_LIMIT},
     false},
    {BENCH_CASE_SPELLINGS,
     bench_case_spellings,
     {BENCH_SPELLINGS_TARGET, NULL},
     {BENCH_SPELLINGS_LIMIT, 0},
     false},
    {BENCH_CASE_ENGINES,
     bench_case_engines,
     {BENCH_ENGINES_VLLM_TARGET, BENCH_ENGINES_SGLANG_TARGET, BENCH_ENGINES_VLLM_PP_TARGET,
      BENCH_ENGINES_SGLANG_PP_TARGET, BENCH_ENGINES_TRTLLM_TARGET},
     {BENCH_ENGINES_LIMIT, BENCH_ENGINES_LIMIT, BENCH_ENGINES_LIMIT, BENCH_ENGINES_LIMIT,
      BENCH_ENGINES_LIMIT},
     false},
    {BENCH_CASE_FIT, bench_case_fit, {BENCH_FIT_TARGET, NULL}, {1.0, 0}, false},
    {BENCH_CASE_FIT_ENGINE,
     bench_case_fit_engine,
     {BENCH_FIT_ENGINE_TARGET, NULL},
     {1.0, 0},
     false},
    {BENCH_CASE_FIT_SAFETENSORS,
     bench_case_fit_safetensors,
     {BENCH_FIT_ST_TARGET, NULL},
     {1.0, 0},
     false},
    {BENCH_CASE_SAFETENSORS,
     bench_case_safetensors,
     {BENCH_ST_TARGET, NULL},
     {BENCH_ST_LIMIT, 0},
     false},
    {BENCH_CASE_FIT_WORK,
     bench_case_fit_work,
     {BENCH_FIT_WIDE_TARGET, BENCH_FIT_GQA_TARGET, BENCH_FIT_LONG_TARGET},
     {1.0, 1.0, 10.0},
     false},
    {BENCH_CASE_NAMES,
     bench_case_names,
     {BENCH_NAMES_TENSOR_TARGET, BENCH_NAMES_SHARD_TARGET, BENCH_NAMES_FLAG_TARGET},
     {BENCH_NAMES_LIMIT, BENCH_NAMES_LIMIT, BENCH_NAMES_LIMIT},
     false},
    {BENCH_CASE_COMM,
     bench_case_comm,
     {BENCH_COMM_TARGET, BENCH_COMM_FIT_TARGET},
     {BENCH_COMM_LIMIT, 1.0},
     false},
    {BENCH_CASE_TRANSFER,
     bench_case_transfer,
     {BENCH_TRANSFER_TARGET, BENCH_TRANSFER_MAP_TARGET},
     {BENCH_TRANSFER_LIMIT, 1.0},
     false},
};

int main(int argc, char **argv)
{
    /* First, while this process is small (see procs.c). */
    bench_launcher_start();

    bench_settings s;
    memset(&s, 0, sizeof s);
    s.pairs = 31;
    s.big_pairs = 11;
    s.cli_pairs = 121;
    s.cli_warmup = 10;
    s.batch_ns = 5000000;
    s.examples = KVSHARD_BENCH_EXAMPLES;
    s.cli = KVSHARD_BENCH_CLI;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--check") == 0) {
            s.check = true;
        } else if (strcmp(a, "--quick") == 0) {
            s.quick = true;
        } else if (strcmp(a, "--wall") == 0) {
            s.wall = true;
        } else if (strcmp(a, "--json") == 0 && i + 1 < argc) {
            s.json_path = argv[++i];
        } else if (strncmp(a, "--json=", 7) == 0) {
            s.json_path = a + 7;
        } else if (strcmp(a, "--only") == 0 && i + 1 < argc) {
            s.only = parse_cases(argv[++i]);
        } else if (strncmp(a, "--only=", 7) == 0) {
            s.only = parse_cases(a + 7);
        } else if (strcmp(a, "--cli") == 0 && i + 1 < argc) {
            s.cli = argv[++i];
        } else if (strcmp(a, "--examples") == 0 && i + 1 < argc) {
            s.examples = argv[++i];
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            bench_launcher_stop();
            return 0;
        } else {
            fprintf(stderr, "kvshard_bench: unknown argument \"%s\"\n%s", a, usage_text);
            bench_launcher_stop();
            return 2;
        }
    }
    if (s.quick) {
        s.pairs = 15;
        s.big_pairs = 3;
        s.cli_pairs = 30;
        s.cli_warmup = 4;
        s.batch_ns = 2000000;
    }
    bench_set_clock(s.wall);
#if defined(__GLIBC__)
    /* Keep freed memory in the process: allocations of up to 32 MiB come
     * from the heap, which is never trimmed. Repeated calls then reuse
     * pages already mapped, and the figures are kvshard's own work rather
     * than the kernel's first-touch page faults, which on a virtual machine
     * cost from under a microsecond to tens of microseconds each, varying
     * from minute to minute (the table shows the cost in this run). */
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
#endif

    static bench_report report;
    report.settings = &s;
    bench_machine_read(&report.machine);
    uint64_t start = bench_wall_ns();

    bench_inputs in;
    bench_inputs_read(&in, s.examples);
    /* The generated model directory, before any case runs. */
    if (runs(&s, BENCH_CASE_FIT_SAFETENSORS) || runs(&s, BENCH_CASE_SAFETENSORS))
        bench_inputs_model_dir(&in);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (runs(&s, cases[i].bit)) {
            cases[i].run(&report, &in);
            continue;
        }
        for (int k = 0; k < 3; k++) {
            if (cases[i].targets[k])
                bench_target_skip(&report, cases[i].targets[k], cases[i].limits[k],
                                  cases[i].at_least);
        }
    }
    bench_inputs_free(&in);
    bench_launcher_stop();

    report.seconds = (double)(bench_wall_ns() - start) / 1e9;
    bench_loadavg(report.machine.load_end);
    report.machine.fault_ns_end = bench_page_fault_ns();
    bench_print_table(stdout, &report);
    if (s.json_path)
        bench_write_json(s.json_path, &report);
    if (fflush(stdout) != 0)
        bench_die("cannot write the table: %s", strerror(errno));
    return s.check && !bench_all_pass(&report) ? 1 : 0;
}
