/* The cases. Each measures one thing, adds a section of rows and its targets.
 * Texts are in memory before any timing, so no figure includes reading a
 * file, except where a whole `kvshard` process runs. */
#define _POSIX_C_SOURCE 200809L /* unlink */
#include "bench.h"

#include "deploy/flags.h"
#include "text/safetensors.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

/* Results go here so that no call can be optimised away. */
static volatile uint64_t sink;

static const char seed_name[] = "qwen3_5_35b_a3b_tp4.yaml";

/* ---- inputs ------------------------------------------------------------------------------------
 */

static kvshard_deployment *load_deployment(const bench_text *t, const char *base_dir)
{
    kvshard_deployment *d = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_load_string(&d, t->data, t->len, t->name, base_dir, NULL, &err);
    if (rc)
        bench_die_kvshard(t->name, rc, &err);
    return d;
}

void bench_inputs_read(bench_inputs *in, const char *examples)
{
    memset(in, 0, sizeof *in);
    char *models_dir = bench_join(examples, "models");
    in->model_count = bench_read_dir(&in->models, models_dir, ".json");
    in->deployment_count = bench_read_dir(&in->deployments, examples, ".yaml");
    free(models_dir);
    if (in->model_count == 0)
        bench_die("no model configs (*.json) in %s/models", examples);
    for (size_t i = 0; i < in->deployment_count; i++) {
        if (strcmp(in->deployments[i].name, seed_name) == 0)
            in->seed = &in->deployments[i];
    }
    if (!in->seed)
        bench_die("the seed example %s/%s is missing", examples, seed_name);
    kvshard_deployment *d = load_deployment(in->seed, examples);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, d);
    /* The options outlive the deployment: they take a copy of its settings. */
    if (kvshard_settings_copy(&in->seed_settings, o.settings, NULL, NULL) != KVSHARD_OK)
        bench_die("out of memory copying the seed example's settings");
    o.settings = in->seed_settings;
    in->seed_options = o;
    o.memory_per_rank = 0;
    in->big_options = o;
    kvshard_deployment_free(d);
}

void bench_inputs_free(bench_inputs *in)
{
    bench_free_texts(in->models, in->model_count);
    bench_free_texts(in->deployments, in->deployment_count);
    free(in->big);
    bench_model_dir_remove(&in->model_dir);
    kvshard_settings_free(in->seed_settings);
    memset(in, 0, sizeof *in);
}

/* The 10^6-entry layer_types config: Qwen3.5-35B-A3B's heads. */
static const char *big_text(bench_inputs *in, size_t *len)
{
    if (!in->big)
        in->big = bench_gen_layer_types(&in->big_len, BENCH_BIG_LAYERS, 16, 32);
    *len = in->big_len;
    return in->big;
}

kvshard_model *bench_load_model(const char *text, size_t len, const char *name,
                                const kvshard_load_options *lo)
{
    kvshard_model *m = NULL;
    kvshard_error err;
    int rc = kvshard_model_load_string(&m, text, len, name, lo, &err);
    if (rc)
        bench_die_kvshard(name, rc, &err);
    return m;
}

static kvshard_plan *make_plan(const kvshard_model *m, const kvshard_options *o,
                               const kvshard_allocator *a, const char *name)
{
    kvshard_plan *p = NULL;
    kvshard_error err;
    int rc = kvshard_plan_create(&p, m, o, a, &err);
    if (rc)
        bench_die_kvshard(name, rc, &err);
    return p;
}

/* ---- operations
 * ------------------------------------------------------------------------------------ */

typedef struct text_ctx {
    const char *text;
    size_t len;
    const char *name;
    const kvshard_options *options;
    const kvshard_model *model;
} text_ctx;

/* The yardstick: libyaml's event parser over the text, each event deleted,
 * as kvshard's loader drives it. */
static void op_parse(void *p)
{
    const text_ctx *c = p;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        bench_die("yaml_parser_initialize failed");
    yaml_parser_set_input_string(&parser, (const unsigned char *)c->text, c->len);
    uint64_t events = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev))
            bench_die("libyaml cannot parse %s", c->name);
        bool done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        events++;
        if (done)
            break;
    }
    yaml_parser_delete(&parser);
    sink += events;
}

static void op_load(void *p)
{
    const text_ctx *c = p;
    kvshard_model *m = bench_load_model(c->text, c->len, c->name, NULL);
    sink += kvshard_model_num_layers(m);
    kvshard_model_free(m);
}

static void op_plan(void *p)
{
    const text_ctx *c = p;
    kvshard_plan *plan = make_plan(c->model, c->options, NULL, c->name);
    sink += kvshard_plan_digest(plan);
    kvshard_plan_free(plan);
}

static void op_load_plan(void *p)
{
    const text_ctx *c = p;
    kvshard_model *m = bench_load_model(c->text, c->len, c->name, NULL);
    kvshard_plan *plan = make_plan(m, c->options, NULL, c->name);
    sink += kvshard_plan_digest(plan);
    kvshard_plan_free(plan);
    kvshard_model_free(m);
}

static int count_bytes(void *user, const char *data, size_t len)
{
    (void)data;
    *(uint64_t *)user += len;
    return 0;
}

typedef struct write_ctx {
    const kvshard_plan *plan;
    int (*write)(const kvshard_plan *, kvshard_write_fn, void *);
    uint64_t bytes; /* of the last document */
} write_ctx;

static void op_write(void *p)
{
    write_ctx *c = p;
    uint64_t bytes = 0;
    int rc = c->write(c->plan, count_bytes, &bytes);
    if (rc)
        bench_die("writing a plan failed: %s", kvshard_strerror(rc));
    c->bytes = bytes;
    sink += bytes;
}

/* Two whole processes run in turn, `warmup` pairs not counted and then n
 * pairs: the per-pair wall-time ratios b / a, and each one's wall time and
 * peak resident set. A failed run ends the benchmark. */
typedef struct process_pairs {
    bench_stats ratio, wall_a, wall_b, rss_a, rss_b;
} process_pairs;

static process_pairs run_process_pairs(const char *const *a_argv, const char *const *b_argv,
                                       size_t warmup, size_t n)
{
    for (size_t i = 0; i < warmup; i++) {
        (void)bench_spawn(a_argv);
        (void)bench_spawn(b_argv);
    }
    double *ta = bench_xmalloc(n * sizeof *ta), *tb = bench_xmalloc(n * sizeof *tb);
    double *ma = bench_xmalloc(n * sizeof *ma), *mb = bench_xmalloc(n * sizeof *mb);
    for (size_t i = 0; i < n; i++) {
        bench_run a = bench_spawn(a_argv);
        bench_run b = bench_spawn(b_argv);
        if (a.status != 0 || b.status != 0)
            bench_die("a run failed (status %d, %d)", a.status, b.status);
        ta[i] = (double)a.wall_ns;
        tb[i] = (double)b.wall_ns;
        ma[i] = (double)a.maxrss;
        mb[i] = (double)b.maxrss;
    }
    process_pairs pp = {bench_pair_ratio(ta, tb, n), bench_summary_of(ta, n),
                        bench_summary_of(tb, n), bench_summary_of(ma, n), bench_summary_of(mb, n)};
    free(ta);
    free(tb);
    free(ma);
    free(mb);
    return pp;
}

/* ---- CLI against /bin/true
 * ------------------------------------------------------------------------ */

void bench_case_cli(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const char *truth[] = {"/bin/true", NULL};
    const char *plan[] = {s->cli, "plan", in->seed->path, NULL};
    bench_run a = bench_spawn(truth), b = bench_spawn(plan);
    if (a.status != 0)
        bench_die("/bin/true exits with status %d", a.status);
    if (b.status != 0)
        bench_die("%s plan %s exits with status %d", s->cli, in->seed->path, b.status);
    bench_progress("CLI: %zu pairs of /bin/true and kvshard plan", s->cli_pairs);
    size_t n = s->cli_pairs;
    process_pairs pp = run_process_pairs(truth, plan, s->cli_warmup, n);
    bench_stats ratio = pp.ratio, wa = pp.wall_a, wb = pp.wall_b, ra = pp.rss_a, rb = pp.rss_b;

    bench_section *sec = bench_section_add(
        r, "CLI: `kvshard plan` on the seed example against /bin/true",
        "Whole processes, each started with fork and exec by a small launcher process, standard "
        "output to /dev/null, run in turn: /bin/true, kvshard, /bin/true, kvshard, ... (%zu pairs "
        "after %zu not counted). Wall time from fork to the end of wait4. The ratio is the "
        "median of the per-pair ratios.%s CLI: %s",
        n, s->cli_warmup,
        s->quick ? " --quick runs fewer pairs than the 60 or more of a full run." : "", s->cli);
    bench_row *row = bench_row_add(sec, "/bin/true");
    bench_fig_stats(row, "wall time", BENCH_UNIT_NS, &wa);
    bench_fig_stats(row, "peak RSS", BENCH_UNIT_BYTES, &ra);
    row = bench_row_add(sec, "kvshard plan %s", in->seed->name);
    bench_fig_stats(row, "wall time", BENCH_UNIT_NS, &wb);
    bench_fig_stats(row, "peak RSS", BENCH_UNIT_BYTES, &rb);
    row = bench_row_add(sec, "kvshard / true, per pair");
    bench_fig_stats(row, "wall time", BENCH_UNIT_RATIO, &ratio);

    bench_target_add(r, "CLI plan (seed example) / /bin/true", ratio.median, 1.15, false,
                     "median of %zu per-pair wall-time ratios%s (p10 %.3f, p90 %.3f)", n,
                     s->quick ? ", --quick: fewer than 60 pairs" : "", ratio.p10, ratio.p90);
}

/* ---- memory of the loader and of the whole CLI
 * --------------------------------------------------- */

void bench_case_memory(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    size_t len;
    const char *text = big_text(in, &len);
    const double entries = BENCH_BIG_LAYERS;
    bench_progress("memory: loading 10^6 layer_types entries, then the CLI on a %zu-byte file",
                   len);

    /* The loader, through a counting allocator. libyaml's own buffers do
     * not go through it; their size does not grow with the text, and the
     * whole-process figure below counts them. */
    bench_counter lc, pc;
    kvshard_allocator la = bench_counting_allocator(&lc);
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &la;
    kvshard_model *m = bench_load_model(text, len, "<10^6 layer_types>", &lo);
    size_t load_peak = lc.peak, model_bytes = lc.current;
    kvshard_allocator pa = bench_counting_allocator(&pc);
    kvshard_plan *plan = make_plan(m, &in->big_options, &pa, "<10^6 layer_types>");
    size_t plan_peak = pc.peak, plan_bytes = pc.current;
    kvshard_plan_free(plan);
    kvshard_model_free(m);

    /* The whole CLI on the same text in a file, against the seed example. */
    char *path = bench_write_temp(text, len);
    const char *big_argv[] = {s->cli, "plan", path, "--format=json", NULL};
    const char *seed_argv[] = {s->cli, "plan", in->seed->path, "--format=json", NULL};
    const char *true_argv[] = {"/bin/true", NULL};
    size_t runs = s->quick ? 2 : 3;
    uint64_t big_peak = 0, seed_peak = 0, true_peak = 0, big_wall = UINT64_MAX;
    for (size_t i = 0; i < runs; i++) {
        bench_run b = bench_spawn(big_argv), e = bench_spawn(seed_argv), t = bench_spawn(true_argv);
        if (b.status != 0 || e.status != 0)
            bench_die("kvshard plan --format=json failed (status %d on %s, %d on the seed)",
                      b.status, path, e.status);
        big_peak = b.maxrss > big_peak ? b.maxrss : big_peak;
        seed_peak = e.maxrss > seed_peak ? e.maxrss : seed_peak;
        true_peak = t.maxrss > true_peak ? t.maxrss : true_peak;
        big_wall = b.wall_ns < big_wall ? b.wall_ns : big_wall;
    }
    unlink(path);
    free(path);

    bench_section *sec = bench_section_add(
        r, "Memory at 10^6 layer_types entries",
        "Loader and plan: bytes through a counting kvshard_allocator (peak while the call runs, "
        "and what the result keeps). Processes: peak resident set (ru_maxrss from wait4), the "
        "largest of %zu runs, for `kvshard plan FILE --format=json` on the %zu-byte config "
        "written to a file, on the seed example, and for /bin/true.",
        runs, len);
    bench_row *row = bench_row_add(sec, "kvshard_model_load_string");
    bench_fig(row, "peak", BENCH_UNIT_BYTES, (double)load_peak);
    bench_fig(row, "peak/entry", BENCH_UNIT_PER_ENTRY, (double)load_peak / entries);
    bench_fig(row, "kept", BENCH_UNIT_BYTES, (double)model_bytes);
    row = bench_row_add(sec, "kvshard_plan_create (seed parallel options)");
    bench_fig(row, "peak", BENCH_UNIT_BYTES, (double)plan_peak);
    bench_fig(row, "peak/entry", BENCH_UNIT_PER_ENTRY, (double)plan_peak / entries);
    bench_fig(row, "kept", BENCH_UNIT_BYTES, (double)plan_bytes);
    row = bench_row_add(sec, "process: kvshard plan FILE --format=json");
    bench_fig(row, "peak", BENCH_UNIT_BYTES, (double)big_peak);
    bench_fig(row, "wall time", BENCH_UNIT_NS, (double)big_wall);
    row = bench_row_add(sec, "process: kvshard plan %s --format=json", in->seed->name);
    bench_fig(row, "peak", BENCH_UNIT_BYTES, (double)seed_peak);
    row = bench_row_add(sec, "process: /bin/true");
    bench_fig(row, "peak", BENCH_UNIT_BYTES, (double)true_peak);

    bench_target_add(r, "loader peak per entry, 10^6-entry layer_types",
                     (double)load_peak / entries, 16, false,
                     "%zu B peak through the allocator / 10^6 entries; the %zu B text "
                     "is the caller's",
                     load_peak, len);
    double over = ((double)big_peak - (double)len - (double)seed_peak) / entries;
    bench_target_add(
        r, "CLI plan --format=json peak per entry over file + seed peak", over, 16, false,
        "(%.1f MiB peak - %.1f MiB file - %.1f MiB seed-example peak) / 10^6 "
        "entries",
        (double)big_peak / 1048576, (double)len / 1048576, (double)seed_peak / 1048576);
}

/* ---- load + plan against a bare parse
 * ------------------------------------------------------------ */

/* The options of the shipped deployment that names the model, else the
 * defaults; its settings (an engine profile's inputs) copied into
 * *settings, which the caller frees, as the options borrow them. */
static const char *options_for(kvshard_options *out, kvshard_settings **settings,
                               const bench_inputs *in, const char *model, const char *examples)
{
    char needle[160];
    snprintf(needle, sizeof needle, "models/%s", model);
    kvshard_options defaults = KVSHARD_OPTIONS_INIT;
    *out = defaults;
    *settings = NULL;
    for (size_t i = 0; i < in->deployment_count; i++) {
        const bench_text *d = &in->deployments[i];
        if (!strstr(d->data, needle))
            continue;
        kvshard_deployment *dep = load_deployment(d, examples);
        kvshard_error err;
        kvshard_deployment_options(out, dep);
        int rc = kvshard_settings_copy(settings, out->settings, NULL, &err);
        if (rc)
            bench_die_kvshard(d->name, rc, &err);
        out->settings = *settings;
        kvshard_deployment_free(dep);
        return d->name;
    }
    return "defaults";
}

void bench_case_load(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    bench_section *sec = bench_section_add(
        r, "Load + plan against a bare libyaml parse of the same text",
        "Bare parse: yaml_parser_parse in a loop, each event deleted. Load + plan: "
        "kvshard_model_load_string then kvshard_plan_create (and both frees). In batches "
        "alternating parse, load + plan, ...; ratio = median of per-pair ratios. Each model is "
        "planned with the options of the shipped deployment that names it (defaults when none "
        "does); the 10^6-entry list with the seed example's parallel options and no memory figure. "
        "'plan' is "
        "kvshard_plan_create alone.");
    double worst = 0;
    const char *worst_name = "";
    for (size_t i = 0; i < in->model_count; i++) {
        const bench_text *t = &in->models[i];
        kvshard_options o;
        kvshard_settings *settings;
        const char *from = options_for(&o, &settings, in, t->name, s->examples);
        bench_progress("load + plan: %s (options: %s)", t->name, from);
        text_ctx c = {t->data, t->len, t->name, &o, NULL};
        kvshard_model *m = bench_load_model(t->data, t->len, t->name, NULL);
        c.model = m;
        bench_stats parse, lp;
        bench_stats ratio = bench_paired(s, s->pairs, op_parse, &c, op_load_plan, &c, &parse, &lp);
        bench_stats plan = bench_time(s, s->pairs, op_plan, &c);
        kvshard_model_free(m);
        kvshard_settings_free(settings);
        bench_row *row = bench_row_add(sec, "%s", t->name);
        bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)t->len);
        bench_fig_stats(row, "bare parse", BENCH_UNIT_NS, &parse);
        bench_fig_stats(row, "load + plan", BENCH_UNIT_NS, &lp);
        bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
        bench_fig_stats(row, "plan", BENCH_UNIT_NS, &plan);
        if (ratio.median > worst) {
            worst = ratio.median;
            worst_name = t->name;
        }
    }
    bench_target_add(r, "load + plan / bare parse, worst shipped model", worst, 1.3, false,
                     "worst median of per-pair ratios over %zu models: %s", in->model_count,
                     worst_name);

    size_t len;
    const char *text = big_text(in, &len);
    bench_progress("load + plan: 10^6 layer_types entries (%zu bytes)", len);
    text_ctx c = {text, len, "<10^6 layer_types>", &in->big_options, NULL};
    kvshard_model *m = bench_load_model(text, len, c.name, NULL);
    c.model = m;
    bench_stats parse, lp;
    bench_stats ratio = bench_paired(s, s->big_pairs, op_parse, &c, op_load_plan, &c, &parse, &lp);
    bench_stats plan = bench_time(s, s->big_pairs, op_plan, &c);
    bench_stats load = bench_time(s, s->big_pairs, op_load, &c);
    kvshard_model_free(m);
    bench_row *row = bench_row_add(sec, "10^6-entry layer_types");
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)len);
    bench_fig_stats(row, "bare parse", BENCH_UNIT_NS, &parse);
    bench_fig_stats(row, "load + plan", BENCH_UNIT_NS, &lp);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    bench_fig_stats(row, "plan", BENCH_UNIT_NS, &plan);
    bench_fig_stats(row, "load", BENCH_UNIT_NS, &load);
    bench_target_add(r, "load + plan / bare parse, 10^6-entry layer_types", ratio.median, 1.3,
                     false, "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n,
                     ratio.p10, ratio.p90);
}

/* ---- keys crafted to collide
 * -------------------------------------------------------------------------- */

/* A million keys that crowd one sixteenth of the index kvshard 0.2 built
 * (it took hours over them), against a million ordinary keys in a text of
 * the same size: the keyed hash leaves no way to choose keys that collide,
 * and a table they crowd all the same becomes a sorted index. */
static void bench_case_crafted_keys(bench_report *r)
{
    const bench_settings *s = r->settings;
    const uint32_t keys = 1000000;
    size_t plain_len, crafted_len;
    char *plain = bench_gen_many_keys(&plain_len, keys);
    char *crafted = bench_gen_colliding_keys(&crafted_len, keys);
    if (plain_len != crafted_len)
        bench_die("the crafted keys' text is %zu bytes, the ordinary keys' %zu", crafted_len,
                  plain_len);
    bench_progress("keys: %u keys crafted to collide against as many ordinary ones (%zu bytes)",
                   keys, crafted_len);
    text_ctx pc = {plain, plain_len, "<1M keys>", NULL, NULL};
    text_ctx cc = {crafted, crafted_len, "<1M crafted keys>", NULL, NULL};
    size_t pairs = s->big_pairs;
    double *ta = bench_xmalloc(pairs * sizeof *ta), *tb = bench_xmalloc(pairs * sizeof *tb);
    bench_pairs(s, pairs, op_load, &pc, op_load, &cc, ta, tb);
    bench_stats ratio = bench_pair_ratio(ta, tb, pairs);
    bench_stats plain_load = bench_summary_of(ta, pairs),
                crafted_load = bench_summary_of(tb, pairs);
    free(ta);
    free(tb);
    free(plain);
    free(crafted);

    bench_section *sec = bench_section_add(
        r, "Keys crafted to collide",
        "Qwen3.5-35B-A3B's config with 1,000,000 more keys: \"k0000000\" ... (ordinary), or "
        "\"kXXXXXXz\", one length, first and last byte, each chosen so that kvshard 0.2's fixed "
        "hash put it in the first sixteenth of its table (crafted). Same bytes. Load: "
        "kvshard_model_load_string and the free. Batches alternate ordinary, crafted, ...; "
        "ratio = median of per-pair ratios.");
    bench_row *row = bench_row_add(sec, "1 M ordinary keys");
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)plain_len);
    bench_fig_stats(row, "load", BENCH_UNIT_NS, &plain_load);
    row = bench_row_add(sec, "1 M crafted keys");
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)crafted_len);
    bench_fig_stats(row, "load", BENCH_UNIT_NS, &crafted_load);
    bench_fig_stats(row, "crafted / ordinary", BENCH_UNIT_RATIO, &ratio);
    bench_target_add(r, "load, 1 M keys crafted to collide / 1 M ordinary keys", ratio.median, 2.0,
                     false, "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n,
                     ratio.p10, ratio.p90);
}

/* ---- a mapping of 2 M keys
 * -------------------------------------------------------------------------- */

void bench_case_keys(bench_report *r, bench_inputs *in)
{
    (void)in;
    const bench_settings *s = r->settings;
    const uint32_t extra = 2000000;
    size_t len;
    char *text = bench_gen_many_keys(&len, extra);
    bench_progress("keys: a config with %u extra keys (%zu bytes)", extra, len);
    text_ctx c = {text, len, "<2M keys>", NULL, NULL};
    bench_stats parse, load;
    bench_stats ratio = bench_paired(s, s->big_pairs, op_parse, &c, op_load, &c, &parse, &load);
    bench_counter lc;
    kvshard_allocator la = bench_counting_allocator(&lc);
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &la;
    kvshard_model_free(bench_load_model(text, len, c.name, &lo));
    free(text);

    bench_section *sec = bench_section_add(
        r, "A mapping of 2,000,000 keys",
        "Qwen3.5-35B-A3B's config with 2,000,000 more keys (\"k0000000\": 0, ...) at the top "
        "level. Load: kvshard_model_load_string (and the free), which checks every key for "
        "duplicates. Ratio = median of per-pair ratios against the bare parse.");
    bench_row *row = bench_row_add(sec, "2 M keys");
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)len);
    bench_fig_stats(row, "bare parse", BENCH_UNIT_NS, &parse);
    bench_fig_stats(row, "load", BENCH_UNIT_NS, &load);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    bench_fig(row, "load peak", BENCH_UNIT_BYTES, (double)lc.peak);
    bench_target_add(r, "load / bare parse, 2 M-key mapping", ratio.median, 2.0, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n, ratio.p10,
                     ratio.p90);
    bench_case_crafted_keys(r);
}

/* ---- JSON output
 * ---------------------------------------------------------------------------------- */

static bench_stats mbps(const bench_stats *ns, uint64_t bytes)
{
    /* Bytes per nanosecond x 1000 = 10^6 bytes per second; the slowest
     * time gives the lowest rate. */
    bench_stats m = *ns;
    m.median = (double)bytes / ns->median * 1e3;
    m.p10 = (double)bytes / ns->p90 * 1e3;
    m.p90 = (double)bytes / ns->p10 * 1e3;
    m.min = (double)bytes / ns->max * 1e3;
    m.max = (double)bytes / ns->min * 1e3;
    return m;
}

void bench_case_json(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    size_t len;
    const char *text = big_text(in, &len);
    kvshard_model *m = bench_load_model(text, len, "<10^6 layer_types>", NULL);
    kvshard_plan *plan = make_plan(m, &in->big_options, NULL, "<10^6 layer_types>");
    kvshard_model_free(m);
    bench_progress("JSON: writing the plan of 10^6 layers");
    write_ctx json = {plan, kvshard_plan_write_json, 0};
    bench_stats tj = bench_time(s, s->big_pairs, op_write, &json);
    bench_stats rate = mbps(&tj, json.bytes);
    write_ctx text_out = {plan, kvshard_plan_write_text, 0};
    bench_stats tt = bench_time(s, s->big_pairs, op_write, &text_out);
    bench_stats text_rate = mbps(&tt, text_out.bytes);
    kvshard_plan_free(plan);

    bench_section *sec = bench_section_add(
        r, "Writing the plan of 10^6 layers",
        "The plan of the 10^6-entry config with the seed example's parallel options, written "
        "into a "
        "writer that only counts bytes. MB/s = 10^6 bytes per second.");
    bench_row *row = bench_row_add(sec, "kvshard_plan_write_json");
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)json.bytes);
    bench_fig_stats(row, "time", BENCH_UNIT_NS, &tj);
    bench_fig_stats(row, "rate", BENCH_UNIT_MBPS, &rate);
    row = bench_row_add(sec, "kvshard_plan_write_text");
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)text_out.bytes);
    bench_fig_stats(row, "time", BENCH_UNIT_NS, &tt);
    bench_fig_stats(row, "rate", BENCH_UNIT_MBPS, &text_rate);
    bench_target_add(r, "plan JSON rate / 300 MB/s", rate.median / 300.0, 1.0, true,
                     "median %.0f MB/s over %zu samples of %.1f MB, / 300 MB/s", rate.median,
                     rate.n, (double)json.bytes / 1e6);
}

/* ---- the digest against the old byte-wise one
 * ------------------------------------------------------ */

typedef struct digest_ctx {
    const kvshard_model *model;
    const kvshard_options *options;
    const uint64_t *words;
    size_t count;
} digest_ctx;

static void op_fnv(void *p)
{
    const digest_ctx *c = p;
    sink += bench_fnv1a_bytewise(c->words, c->count);
}

/* kvshard_plan_create alone, per call: the free is outside the clock. */
static double time_create(const digest_ctx *c, uint64_t iters)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < iters; i++) {
        kvshard_plan *p = NULL;
        uint64_t t0 = bench_now_ns();
        int rc = kvshard_plan_create(&p, c->model, c->options, NULL, NULL);
        total += bench_now_ns() - t0;
        if (rc)
            bench_die("planning 10^6 layers failed: %s", kvshard_strerror(rc));
        sink += kvshard_plan_digest(p);
        kvshard_plan_free(p);
    }
    return (double)total / (double)iters;
}

/* The words the plan's digest covers, as the old digest took them: per layer
 * kind << 32 | owner, then per rank its six figures. */
static uint64_t *digest_words(size_t *count, const kvshard_plan *plan)
{
    uint32_t L = kvshard_plan_num_layers(plan), T = kvshard_plan_attn_tp_size(plan);
    size_t n = (size_t)L + 6u * (size_t)T;
    uint64_t *w = bench_xmalloc(n * sizeof *w);
    size_t k = 0;
    for (uint32_t i = 0; i < L; i++) {
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        int32_t owner = 0;
        kvshard_plan_layer_storage(&st, plan, 0, i);
        kvshard_plan_layer_owner(&owner, plan, i);
        w[k++] = (uint64_t)st.kind << 32 | (uint32_t)owner;
    }
    for (uint32_t t = 0; t < T; t++) {
        kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
        kvshard_plan_rank_memory(&m, plan, t);
        w[k++] = m.kv_bytes_per_token;
        w[k++] = m.scratch_bytes_per_token;
        w[k++] = m.draft_bytes_per_token;
        w[k++] = m.bytes_per_block;
        w[k++] = m.state_bytes_per_seq;
        w[k++] = m.has_num_blocks ? m.num_blocks : UINT64_MAX;
    }
    *count = n;
    return w;
}

void bench_case_digest(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    size_t len;
    const char *text = big_text(in, &len);
    kvshard_model *m = bench_load_model(text, len, "<10^6 layer_types>", NULL);
    kvshard_plan *plan = make_plan(m, &in->big_options, NULL, "<10^6 layer_types>");
    digest_ctx c = {m, &in->big_options, NULL, 0};
    uint64_t *words = digest_words(&c.count, plan);
    c.words = words;
    kvshard_plan_free(plan);
    bench_progress("digest: planning 10^6 layers against the byte-wise FNV-1a over %zu words",
                   c.count);

    /* Batch sizes from a warm-up, then A B A B. */
    double once = time_create(&c, 2);
    uint64_t ia = once > 0 ? (uint64_t)((double)s->batch_ns / once) : 1;
    ia = ia < 1 ? 1 : ia;
    uint64_t ib = bench_batch_size(s, op_fnv, &c);
    size_t n = s->pairs;
    double *ta = bench_xmalloc(n * sizeof *ta), *tb = bench_xmalloc(n * sizeof *tb);
    double *tr = bench_xmalloc(n * sizeof *tr);
    for (size_t i = 0; i < n; i++) {
        ta[i] = time_create(&c, ia);
        tb[i] = bench_batch(op_fnv, &c, ib);
        tr[i] = (ta[i] + tb[i]) / ta[i];
    }
    bench_stats ratio = bench_summarize(tr, n);
    bench_stats t_new = bench_summary_of(ta, n), t_fnv = bench_summary_of(tb, n);
    free(ta);
    free(tb);
    free(tr);
    free(words);
    kvshard_model_free(m);

    bench_section *sec = bench_section_add(
        r, "Planning 10^6 layers against the old byte-wise digest",
        "T_new: kvshard_plan_create of the 10^6-entry model with the seed example's parallel "
        "options "
        "(the free outside the clock). T_fnv: FNV-1a 64 byte by byte over the %zu words the "
        "plan's digest covers (per layer kind << 32 | owner, per rank its 6 figures), which the "
        "planner ran before it hashed whole words. T_ref = T_new + T_fnv; ratio = T_ref / T_new "
        "per pair, median.",
        c.count);
    bench_row *row = bench_row_add(sec, "10^6 layers");
    bench_fig_stats(row, "T_new", BENCH_UNIT_NS, &t_new);
    bench_fig_stats(row, "T_fnv", BENCH_UNIT_NS, &t_fnv);
    bench_fig_stats(row, "T_ref / T_new", BENCH_UNIT_RATIO, &ratio);
    bench_target_add(r, "plan 10^6 layers: T_ref (byte-wise FNV) / T_new", ratio.median, 1.7, true,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n, ratio.p10,
                     ratio.p90);
}

/* ---- owns() against an empty call
 * ------------------------------------------------------------------ */

typedef bool (*owns_fn)(const kvshard_plan *, uint32_t, uint32_t);

typedef struct owns_ctx {
    const kvshard_plan *plan;
    uint32_t tp, layers;
    uint32_t rounds; /* passes over every (rank, layer) per operation */
} owns_ctx;

/* The same loop for both functions; inlined with a constant function, each
 * copy makes direct calls. */
static inline uint64_t owns_loop(owns_fn fn, const owns_ctx *c)
{
    uint64_t acc = 0;
    for (uint32_t k = 0; k < c->rounds; k++) {
        for (uint32_t r = 0; r < c->tp; r++) {
            for (uint32_t l = 0; l < c->layers; l++)
                acc += fn(c->plan, r, l);
        }
    }
    return acc;
}

BENCH_ALIGNED static void op_owns(void *p)
{
    sink += owns_loop(kvshard_plan_owns, p);
}

BENCH_ALIGNED static void op_empty(void *p)
{
    sink += owns_loop(bench_empty_owns, p);
}

static uint32_t rounds_for(uint32_t tp, uint32_t layers)
{
    uint64_t calls = (uint64_t)tp * layers;
    uint64_t rounds = calls >= 16384 ? 1 : 16384 / calls;
    return (uint32_t)rounds;
}

/* An allocator that counts, like bench_counting_allocator(), and places
 * each block `offset` bytes further into a larger one: the same plan at
 * different addresses. */
typedef struct placed {
    bench_counter count;
    size_t offset; /* a multiple of 64 */
} placed;

static void *placed_malloc(void *user, size_t size)
{
    placed *p = user;
    if (size > SIZE_MAX - p->offset - 64)
        return NULL;
    char *base = malloc(size + p->offset + 64);
    if (!base)
        return NULL;
    char *block = base + 64 + p->offset;
    memcpy(block - sizeof base, &base, sizeof base);
    p->count.allocs++;
    return block;
}

static void placed_free(void *user, void *ptr)
{
    placed *p = user;
    char *base;
    memcpy(&base, (char *)ptr - sizeof base, sizeof base);
    p->count.frees++;
    free(base);
}

#define OWNS_PLACEMENTS 8u

void bench_case_owns(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    bench_progress("owns: kvshard_plan_owns against an empty call");
    kvshard_deployment *d = load_deployment(in->seed, s->examples);
    /* A load is served by a few cache lines of the plan; how they fall
     * against the stack's (the return address each call pushes) changes the
     * cost of a call by up to a fifth. So the seed plan is made at 8
     * addresses, 512 bytes apart, and the pairs of all 8 count alike. */
    size_t per = s->quick ? 3 : (s->pairs + OWNS_PLACEMENTS - 1) / OWNS_PLACEMENTS;
    size_t n = per * OWNS_PLACEMENTS;
    double *ta = bench_xmalloc(n * sizeof *ta), *tb = bench_xmalloc(n * sizeof *tb);
    double lo = 0, hi = 0;
    uint64_t allocated = 0;
    owns_ctx c = {NULL, 0, 0, 0};
    double calls = 1;
    for (unsigned k = 0; k < OWNS_PLACEMENTS; k++) {
        placed pl;
        memset(&pl, 0, sizeof pl);
        pl.offset = (size_t)k * 512u;
        kvshard_allocator a = {placed_malloc, placed_free, &pl};
        kvshard_plan *plan =
            make_plan(kvshard_deployment_model(d), &in->seed_options, &a, in->seed->name);
        c.plan = plan;
        c.tp = kvshard_plan_attn_tp_size(plan);
        c.layers = kvshard_plan_num_layers(plan);
        c.rounds = rounds_for(c.tp, c.layers);
        calls = (double)c.rounds * c.tp * c.layers;
        uint64_t before = pl.count.allocs + pl.count.frees;
        bench_pairs(s, per, op_empty, &c, op_owns, &c, ta + k * per, tb + k * per);
        allocated += pl.count.allocs + pl.count.frees - before;
        bench_stats one = bench_pair_ratio(ta + k * per, tb + k * per, per);
        lo = k == 0 || one.median < lo ? one.median : lo;
        hi = k == 0 || one.median > hi ? one.median : hi;
        kvshard_plan_free(plan);
    }
    bench_stats ratio = bench_pair_ratio(ta, tb, n);
    bench_stats te = bench_summary_of(ta, n), to = bench_summary_of(tb, n);
    te.median /= calls, te.p10 /= calls, te.p90 /= calls;
    to.median /= calls, to.p10 /= calls, to.p90 /= calls;
    free(ta);
    free(tb);
    kvshard_deployment_free(d);

    /* The same on the plan of 10^6 layers, for information. */
    size_t len;
    const char *text = big_text(in, &len);
    kvshard_model *m = bench_load_model(text, len, "<10^6 layer_types>", NULL);
    kvshard_plan *big = make_plan(m, &in->big_options, NULL, "<10^6 layer_types>");
    kvshard_model_free(m);
    owns_ctx cb = {big, kvshard_plan_attn_tp_size(big), kvshard_plan_num_layers(big), 1};
    bench_stats tbig = bench_time(s, s->pairs, op_owns, &cb);
    double big_calls = (double)cb.tp * cb.layers;
    tbig.median /= big_calls, tbig.p10 /= big_calls, tbig.p90 /= big_calls;
    kvshard_plan_free(big);

    bench_section *sec = bench_section_add(
        r, "kvshard_plan_owns() against an empty out-of-line call",
        "The same loop over every (TP rank, layer), summing the results, calls "
        "kvshard_plan_owns() or bench_empty_owns(), a function with the same signature that "
        "returns false, in another translation unit. Batches alternate; ratio = median of "
        "per-pair ratios over the seed plan placed at %u addresses 512 bytes apart (the "
        "median of one placement ranged from %.3f to %.3f). The plans were made with a "
        "counting allocator: allocations and frees during all the calls: %llu.",
        OWNS_PLACEMENTS, lo, hi, (unsigned long long)allocated);
    bench_row *row = bench_row_add(sec, "empty call (seed plan, %u x %u)", c.tp, c.layers);
    bench_fig_stats(row, "per call", BENCH_UNIT_NS, &te);
    row = bench_row_add(sec, "kvshard_plan_owns (seed plan)");
    bench_fig_stats(row, "per call", BENCH_UNIT_NS, &to);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    row = bench_row_add(sec, "kvshard_plan_owns (10^6 layers, %u ranks)", cb.tp);
    bench_fig_stats(row, "per call", BENCH_UNIT_NS, &tbig);

    bench_target *t = bench_target_add(
        r, "owns() / empty out-of-line call, no allocation", ratio.median, 1.3, false,
        "median of %zu per-pair ratios at %u placements (p10 %.3f, p90 %.3f); %llu "
        "allocations",
        ratio.n, OWNS_PLACEMENTS, ratio.p10, ratio.p90, (unsigned long long)allocated);
    if (allocated != 0)
        t->pass = false;
}

/* ---- the other queries
 * --------------------------------------------------------------------------- */

typedef struct query_ctx {
    const kvshard_plan *plan;
    uint32_t tp, layers;
    uint32_t inner;  /* calls per operation */
    uint64_t budget; /* memory for blocks_for */
} query_ctx;

static void op_rank_layers(void *p)
{
    const query_ctx *c = p;
    uint64_t acc = 0;
    for (uint32_t i = 0; i < c->inner; i++) {
        const uint32_t *layers = NULL;
        size_t count = 0;
        if (kvshard_plan_rank_layers(&layers, &count, c->plan, i % c->tp) == KVSHARD_OK)
            acc += count + (count ? layers[0] : 0);
    }
    sink += acc;
}

static void op_layer_storage(void *p)
{
    const query_ctx *c = p;
    uint64_t acc = 0;
    for (uint32_t i = 0; i < c->inner; i++) {
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        if (kvshard_plan_layer_storage(&st, c->plan, i % c->tp, (i * 7919u) % c->layers) ==
            KVSHARD_OK)
            acc += st.kv_bytes_per_token + (uint64_t)st.kv_slot;
    }
    sink += acc;
}

static void op_blocks_for(void *p)
{
    const query_ctx *c = p;
    uint64_t acc = 0;
    for (uint32_t i = 0; i < c->inner; i++) {
        kvshard_budget b = KVSHARD_BUDGET_INIT;
        b.memory_per_rank = c->budget - (i & 1023u); /* no call repeats the last */
        b.context_length = 32768;
        kvshard_blocks out = KVSHARD_BLOCKS_INIT;
        if (kvshard_plan_blocks_for(&out, c->plan, KVSHARD_ALL_RANKS, &b, NULL) == KVSHARD_OK)
            acc += out.num_blocks;
    }
    sink += acc;
}

static void op_describe_rank(void *p)
{
    const query_ctx *c = p;
    uint64_t acc = 0;
    char buf[512];
    for (uint32_t i = 0; i < c->inner; i++) {
        int n = kvshard_plan_describe_rank(buf, sizeof buf, c->plan, i % c->tp);
        acc += (uint64_t)n + (unsigned char)buf[0];
    }
    sink += acc;
}

static void query_row(bench_section *sec, const bench_settings *s, const char *name, bench_op op,
                      query_ctx *seed, query_ctx *big)
{
    bench_row *row = bench_row_add(sec, "%s", name);
    query_ctx *ctx[2] = {seed, big};
    const char *col[2] = {"seed plan", "10^6 layers"};
    for (int k = 0; k < 2; k++) {
        bench_stats st = bench_time(s, s->pairs, op, ctx[k]);
        st.median /= ctx[k]->inner, st.p10 /= ctx[k]->inner, st.p90 /= ctx[k]->inner;
        bench_fig_stats(row, col[k], BENCH_UNIT_NS, &st);
    }
}

void bench_case_queries(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    bench_progress("queries: rank_layers, layer_storage, blocks_for, describe_rank");
    kvshard_deployment *d = load_deployment(in->seed, s->examples);
    kvshard_plan *plan =
        make_plan(kvshard_deployment_model(d), &in->seed_options, NULL, in->seed->name);
    size_t len;
    const char *text = big_text(in, &len);
    kvshard_model *m = bench_load_model(text, len, "<10^6 layer_types>", NULL);
    kvshard_plan *big = make_plan(m, &in->big_options, NULL, "<10^6 layer_types>");
    kvshard_model_free(m);
    query_ctx seed = {plan, kvshard_plan_attn_tp_size(plan), kvshard_plan_num_layers(plan), 100,
                      20ull << 30};
    query_ctx large = {big, kvshard_plan_attn_tp_size(big), kvshard_plan_num_layers(big), 100,
                       64ull << 40};

    bench_section *sec = bench_section_add(
        r, "Other queries, per call",
        "Seed plan: %u layers on %u TP ranks; the 10^6-layer plan with the same parallel "
        "options. layer_storage visits layers 7919 apart; blocks_for asks for every rank at a "
        "budget of 20 GiB (10^6 layers: 64 TiB, which their state needs) and 32768 tokens; "
        "describe_rank writes into 512 bytes.",
        seed.layers, seed.tp);
    query_row(sec, s, "kvshard_plan_rank_layers", op_rank_layers, &seed, &large);
    query_row(sec, s, "kvshard_plan_layer_storage", op_layer_storage, &seed, &large);
    query_row(sec, s, "kvshard_plan_blocks_for", op_blocks_for, &seed, &large);
    query_row(sec, s, "kvshard_plan_describe_rank", op_describe_rank, &seed, &large);
    kvshard_plan_free(big);
    kvshard_plan_free(plan);
    kvshard_deployment_free(d);
}

/* ---- the 10^6-layer sweep over TP sizes
 * ----------------------------------------------------------- */

void bench_case_sweep(bench_report *r, bench_inputs *in)
{
    (void)in;
    const bench_settings *s = r->settings;
    /* 256 key and 512 value heads: every TP size below divides them, so
     * that the largest is refused for its layer entries alone. */
    size_t len;
    char *text = bench_gen_layer_types(&len, BENCH_BIG_LAYERS, 256, 512);
    kvshard_model *m = bench_load_model(text, len, "<sweep>", NULL);
    free(text);
    uint32_t kv = kvshard_model_count(m, KVSHARD_LAYER_FULL_ATTENTION) +
                  kvshard_model_count(m, KVSHARD_LAYER_HYBRID);
    bench_section *sec = bench_section_add(
        r, "10^6 layers at several TP sizes",
        "The 10^6-entry config with 256 key and 512 value GDN heads, so that every TP size "
        "here divides them; %u KV layers; layerwise split 2 above TP 1; no memory figure. "
        "Entries = (T / S_eff) x KV layers, at most KVSHARD_MAX_LAYER_ENTRIES = %u. Plan "
        "memory is the peak through a counting allocator.",
        kv, KVSHARD_MAX_LAYER_ENTRIES);
    static const uint32_t tps[] = {1, 8, 32, 128, 256};
    for (size_t i = 0; i < sizeof tps / sizeof tps[0]; i++) {
        uint32_t T = tps[i];
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        o.world_size = T;
        o.enable_layerwise_split = T > 1;
        o.layerwise_split_size = T > 1 ? 2 : 1;
        uint64_t entries = (uint64_t)(T / o.layerwise_split_size) * kv;
        bench_progress("sweep: TP %u", T);
        bench_counter pc;
        kvshard_allocator pa = bench_counting_allocator(&pc);
        kvshard_plan *plan = NULL;
        kvshard_error err;
        int rc = kvshard_plan_create(&plan, m, &o, &pa, &err);
        if (rc == KVSHARD_ELIMIT) {
            bench_row *row = bench_row_add(sec, "TP %u, split %u: refused (%s)", T,
                                           o.layerwise_split_size, "KVSHARD_ELIMIT");
            bench_fig(row, "entries", BENCH_UNIT_COUNT, (double)entries);
            continue;
        }
        if (rc)
            bench_die_kvshard("sweep plan", rc, &err);
        size_t peak = pc.peak;
        text_ctx c = {NULL, 0, "<sweep>", &o, m};
        bench_stats tp = bench_time(s, s->big_pairs, op_plan, &c);
        write_ctx json = {plan, kvshard_plan_write_json, 0};
        bench_stats tj = bench_time(s, s->quick ? 1 : 3, op_write, &json);
        bench_stats rate = mbps(&tj, json.bytes);
        kvshard_plan_free(plan);
        bench_row *row = bench_row_add(sec, "TP %u, split %u", T, o.layerwise_split_size);
        bench_fig(row, "entries", BENCH_UNIT_COUNT, (double)entries);
        bench_fig_stats(row, "plan", BENCH_UNIT_NS, &tp);
        bench_fig(row, "plan memory", BENCH_UNIT_BYTES, (double)peak);
        bench_fig(row, "JSON", BENCH_UNIT_BYTES, (double)json.bytes);
        bench_fig_stats(row, "JSON rate", BENCH_UNIT_MBPS, &rate);
    }
    kvshard_model_free(m);
}

/* ---- flag files at every limit of the budget ----------------------------------------------- */

/* One flag file of exactly `bytes` bytes: `flags` flags, then `children`
 * lines naming `child`, then comment lines. */
static char *flag_file(size_t bytes, size_t flags, size_t children, const char *child)
{
    char *text = bench_xmalloc(bytes + 1);
    size_t n = 0;
    static const char flag[] = "--block_size=16\n"; /* the seed's own block size */
    for (size_t i = 0; i < flags; i++) {
        memcpy(text + n, flag, sizeof flag - 1);
        n += sizeof flag - 1;
    }
    for (size_t i = 0; i < children; i++)
        n += (size_t)snprintf(text + n, bytes + 1 - n, "--flagfile=%s\n", child);
    if (n > bytes)
        bench_die("a flag file of %zu bytes does not hold its %zu flags", bytes, flags);
    while (n < bytes) {
        size_t line = bytes - n < 64 ? bytes - n : 64;
        memset(text + n, '#', line);
        text[n + line - 1] = '\n';
        n += line;
    }
    return text;
}

void bench_case_flags(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    /* A fan-out tree that meets every limit at once and still succeeds:
     * f0 names f1 15 times and each f1 names f2 16 times, 1 + 15 + 240 =
     * 256 files; each is 64 KiB (16 MiB in all) with 256 flags (65,536).
     * One more file, byte or flag would be refused, so no set of flag files
     * makes a run expand more; a fan-out that goes past a limit stops there,
     * having done less. */
    _Static_assert(1 + 15 + 15 * 16 == KVSHARD_FLAGS__MAX_FILES, "the tree opens 256 files");
    const size_t bytes = KVSHARD_FLAGS__MAX_BYTES / KVSHARD_FLAGS__MAX_FILES;
    const size_t flags = KVSHARD_FLAGS__MAX_FLAGS / KVSHARD_FLAGS__MAX_FILES;
    char *text = flag_file(bytes, flags, 0, NULL);
    char *f2 = bench_write_temp(text, bytes);
    free(text);
    text = flag_file(bytes, flags, 16, f2);
    char *f1 = bench_write_temp(text, bytes);
    free(text);
    text = flag_file(bytes, flags, 15, f1);
    char *f0 = bench_write_temp(text, bytes);
    free(text);
    char arg[4200];
    snprintf(arg, sizeof arg, "--flagfile=%s", f0);

    const char *plain[] = {s->cli, "plan", in->seed->path, NULL};
    const char *worst[] = {s->cli, "plan", in->seed->path, arg, NULL};
    bench_run a = bench_spawn(plain), b = bench_spawn(worst);
    if (a.status != 0 || b.status != 0)
        bench_die("kvshard plan exits with status %d, and %d with %s", a.status, b.status, arg);
    size_t n = s->pairs;
    bench_progress("flag files: %zu pairs of kvshard plan, without and with 256 flag files", n);
    process_pairs pp = run_process_pairs(plain, worst, 2, n);
    unlink(f0);
    unlink(f1);
    unlink(f2);
    free(f0);
    free(f1);
    free(f2);
    bench_stats ratio = pp.ratio, wa = pp.wall_a, wb = pp.wall_b, ra = pp.rss_a, rb = pp.rss_b;

    bench_section *sec = bench_section_add(
        r, "Flag files at every limit of the budget against a plain plan",
        "Whole processes, standard output to /dev/null, in turn: kvshard plan on the seed "
        "example, then the same with --flagfile naming a tree of flag files that reaches every "
        "limit of one call at once (256 files, 16 MiB, 65,536 flags; %zu pairs after 2 not "
        "counted). The ratio is the median of the per-pair wall-time ratios; memory is the peak "
        "resident set.",
        n);
    bench_row *row = bench_row_add(sec, "kvshard plan %s", in->seed->name);
    bench_fig_stats(row, "wall time", BENCH_UNIT_NS, &wa);
    bench_fig_stats(row, "peak RSS", BENCH_UNIT_BYTES, &ra);
    row = bench_row_add(sec, "the same, 256 flag files (16 MiB)");
    bench_fig_stats(row, "wall time", BENCH_UNIT_NS, &wb);
    bench_fig_stats(row, "peak RSS", BENCH_UNIT_BYTES, &rb);
    row = bench_row_add(sec, "flag files / plain, per pair");
    bench_fig_stats(row, "wall time", BENCH_UNIT_RATIO, &ratio);

    bench_target_add(r, "CLI plan, flag files at every budget limit / plain plan", ratio.median,
                     BENCH_FLAGS_TIME_LIMIT, false,
                     "median of %zu per-pair wall-time ratios (p10 %.2f, p90 %.2f)", n, ratio.p10,
                     ratio.p90);
    double over = (rb.max - ra.max) / (double)KVSHARD_FLAGS__MAX_BYTES;
    bench_target_add(r, "flag-file peak RSS over plain / 16 MiB budget", over,
                     BENCH_FLAGS_MEMORY_LIMIT, false,
                     "(%.1f MiB - %.1f MiB) / 16 MiB, the largest peaks of %zu runs",
                     rb.max / 1048576, ra.max / 1048576, n);
}

/* ---- one argparse input repeated to the flag limit ----------------------------------------- */

/* The shipped example that plans under vLLM's profile, whose flags are
 * argparse's. */
static const char spellings_example[] = "nemotron_3_nano_30b_a3b_vllm.yaml";

void bench_case_spellings(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const bench_text *dep = NULL;
    for (size_t i = 0; i < in->deployment_count && !dep; i++) {
        if (strcmp(in->deployments[i].name, spellings_example) == 0)
            dep = &in->deployments[i];
    }
    if (!dep)
        bench_die("the example %s is missing", spellings_example);
    /* 65,536 flags, the limit of one call, of one input under two spellings
     * in turn, each giving the example's own value: every flag is checked
     * against the spellings before it, and the plan is the plain one. */
    static const char a[] = "--max-num-seqs=128\n", b[] = "--max_seqs=128\n";
    const size_t flags = KVSHARD_FLAGS__MAX_FLAGS;
    size_t len = 0, cap = flags * (sizeof a - 1);
    char *text = bench_xmalloc(cap);
    for (size_t i = 0; i < flags; i++) {
        const char *line = i % 2 ? b : a;
        size_t n = strlen(line);
        memcpy(text + len, line, n);
        len += n;
    }
    char *file = bench_write_temp(text, len);
    free(text);
    char arg[4200];
    snprintf(arg, sizeof arg, "--flagfile=%s", file);

    const char *plain[] = {s->cli, "plan", dep->path, NULL};
    const char *worst[] = {s->cli, "plan", dep->path, arg, NULL};
    bench_run ra = bench_spawn(plain), rb = bench_spawn(worst);
    if (ra.status != 0 || rb.status != 0)
        bench_die("kvshard plan %s exits with status %d, and %d with %s", dep->name, ra.status,
                  rb.status, arg);
    size_t n = s->pairs;
    bench_progress("spellings: %zu pairs of kvshard plan, without and with %zu argparse flags", n,
                   flags);
    process_pairs pp = run_process_pairs(plain, worst, 2, n);
    unlink(file);
    free(file);
    bench_stats ratio = pp.ratio, wa = pp.wall_a, wb = pp.wall_b;

    bench_section *sec = bench_section_add(
        r, "One argparse input repeated to the flag limit against a plain plan",
        "Whole processes, standard output to /dev/null, in turn: kvshard plan on %s (vllm "
        "profile), then the same with --flagfile naming a file of %zu flags, --max-num-seqs=128 "
        "and --max_seqs=128 in turn, the example's own value (%zu pairs after 2 not counted). "
        "Each flag is checked against the input's other spelling. The ratio is the median of "
        "the per-pair wall-time ratios.",
        dep->name, flags, n);
    bench_row *row = bench_row_add(sec, "kvshard plan %s", dep->name);
    bench_fig_stats(row, "wall time", BENCH_UNIT_NS, &wa);
    row = bench_row_add(sec, "the same, %zu flags of one input", flags);
    bench_fig_stats(row, "wall time", BENCH_UNIT_NS, &wb);
    row = bench_row_add(sec, "flags / plain, per pair");
    bench_fig_stats(row, "wall time", BENCH_UNIT_RATIO, &ratio);
    bench_target_add(r, BENCH_SPELLINGS_TARGET, ratio.median, BENCH_SPELLINGS_LIMIT, false,
                     "median of %zu per-pair wall-time ratios (p10 %.2f, p90 %.2f)", n, ratio.p10,
                     ratio.p90);
}

/* ---- planning under an engine profile against the kvshard profile
 * ------------------------------------------------------------------------ */

/* A shipped model config by file name. */
static const bench_text *model_named(const bench_inputs *in, const char *name)
{
    for (size_t i = 0; i < in->model_count; i++) {
        if (strcmp(in->models[i].name, name) == 0)
            return &in->models[i];
    }
    bench_die("the example model %s is missing", name);
}

static kvshard_settings *engine_settings(const char *const *pairs)
{
    kvshard_settings *s = NULL;
    kvshard_error err;
    int rc = kvshard_settings_create(&s, NULL, &err);
    for (const char *const *p = pairs; rc == KVSHARD_OK && *p; p += 2)
        rc = kvshard_settings_set(s, p[0], p[1], NULL, &err);
    if (rc)
        bench_die_kvshard("engine settings", rc, &err);
    return s;
}

/* Options and settings as an engine's command line gives them: the args
 * applied to a deployment of the model, the settings copied into *settings
 * (the caller frees them) as the options borrow them. */
static kvshard_options engine_args_options(const bench_text *t, const char *const *args,
                                           kvshard_settings **settings)
{
    size_t count = 0;
    while (args[count])
        count++;
    kvshard_deployment *d = NULL;
    kvshard_error err;
    int rc =
        kvshard_deployment_create(&d, bench_load_model(t->data, t->len, t->name, NULL), NULL, &err);
    if (rc == KVSHARD_OK)
        rc = kvshard_deployment_apply_args(d, count, args, 0, &err);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    if (rc == KVSHARD_OK)
        rc = kvshard_deployment_options(&o, d);
    if (rc == KVSHARD_OK)
        rc = kvshard_settings_copy(settings, o.settings, NULL, &err);
    if (rc)
        bench_die_kvshard(t->name, rc, &err);
    o.settings = *settings;
    kvshard_deployment_free(d);
    return o;
}

/* One model loaded and planned under an engine's profile (`theirs`, its
 * inputs as settings) and under kvshard's with the same options and no
 * settings: the ratio of load + plan, the target, and of the plan alone,
 * shown. */
static bench_stats engine_pair(bench_report *r, bench_section *sec, const bench_text *t,
                               const char *label, const kvshard_options *theirs)
{
    const bench_settings *s = r->settings;
    kvshard_model *m = bench_load_model(t->data, t->len, t->name, NULL);
    /* An engine can settle the ranks from its own flags (vLLM's -pp alone
     * makes the world): kvshard's profile is given the ranks it planned. */
    kvshard_plan *engine_plan = make_plan(m, theirs, NULL, t->name);
    kvshard_options own = *theirs;
    own.engine = KVSHARD_ENGINE_KVSHARD;
    own.settings = NULL;
    own.pp_size = kvshard_plan_pp_size(engine_plan);
    own.world_size = kvshard_plan_num_ranks(engine_plan) * own.dp_size * own.cp_size;
    kvshard_plan_free(engine_plan);
    text_ctx a = {t->data, t->len, t->name, &own, m};
    text_ctx b = {t->data, t->len, t->name, theirs, m};
    op_plan(&a); /* kvshard's profile refusing an option dies here, not in the timing */
    const char *engine = kvshard_engine_name(theirs->engine);
    bench_progress("engines: %s under kvshard and %s", label, engine);
    size_t n = s->pairs;
    double *ta = bench_xmalloc(n * sizeof *ta), *tb = bench_xmalloc(n * sizeof *tb);
    bench_pairs(s, n, op_load_plan, &a, op_load_plan, &b, ta, tb);
    bench_stats ratio = bench_pair_ratio(ta, tb, n);
    bench_stats la = bench_summary_of(ta, n), lb = bench_summary_of(tb, n);
    bench_pairs(s, n, op_plan, &a, op_plan, &b, ta, tb);
    bench_stats plan_ratio = bench_pair_ratio(ta, tb, n);
    bench_stats pa = bench_summary_of(ta, n), pb = bench_summary_of(tb, n);
    free(ta);
    free(tb);
    bench_row *row = bench_row_add(sec, "%s, load + plan", label);
    bench_fig_stats(row, "kvshard", BENCH_UNIT_NS, &la);
    bench_fig_stats(row, engine, BENCH_UNIT_NS, &lb);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    row = bench_row_add(sec, "%s, plan alone", label);
    bench_fig_stats(row, "kvshard", BENCH_UNIT_NS, &pa);
    bench_fig_stats(row, engine, BENCH_UNIT_NS, &pb);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &plan_ratio);
    kvshard_model_free(m);
    return ratio;
}

/* engine_pair of an engine's command line; its target. */
static void engine_args_target(bench_report *r, bench_section *sec, const bench_inputs *in,
                               const char *model, const char *label, const char *target,
                               const char *const *args)
{
    const bench_text *t = model_named(in, model);
    kvshard_settings *set = NULL;
    kvshard_options o = engine_args_options(t, args, &set);
    bench_stats v = engine_pair(r, sec, t, label, &o);
    kvshard_settings_free(set);
    bench_target_add(r, target, v.median, BENCH_ENGINES_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", v.n, v.p10, v.p90);
}

void bench_case_engines(bench_report *r, bench_inputs *in)
{
    bench_section *sec = bench_section_add(
        r, "Planning under an engine profile against the kvshard profile",
        "A shipped model config loaded and planned with the same options under the kvshard "
        "profile and under vllm, sglang or trtllm, the engine's inputs as settings (stage "
        "cases: its command line; kvshard's profile gets the ranks the engine planned). "
        "Batches alternate kvshard, engine; ratio = median of per-pair ratios. 'plan alone': "
        "kvshard_plan_create of the loaded model, where the profile's settling, layout, "
        "figures and warnings add a constant few hundred nanoseconds.");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.memory_per_rank = 20ull << 30;
    o.max_seqs = 128;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.state_dtype = KVSHARD_DTYPE_FP32;
    kvshard_settings *set = engine_settings((const char *const[]){
        "engine_version", "0.20.1rc1.dev91", "max_model_len", "256000", NULL});
    o.engine = KVSHARD_ENGINE_VLLM;
    o.settings = set;
    bench_stats v = engine_pair(r, sec, model_named(in, "nemotron_3_nano_30b_a3b.json"),
                                "nemotron_3_nano_30b_a3b.json", &o);
    kvshard_settings_free(set);
    bench_target_add(r, BENCH_ENGINES_VLLM_TARGET, v.median, BENCH_ENGINES_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", v.n, v.p10, v.p90);
    kvshard_options q = KVSHARD_OPTIONS_INIT;
    q.world_size = 2;
    q.memory_per_rank = 10153205760ull;
    q.max_seqs = 128;
    q.context_length = 262144;
    set = engine_settings((const char *const[]){"engine_version", "0.5.11", NULL});
    q.engine = KVSHARD_ENGINE_SGLANG;
    q.settings = set;
    bench_stats g = engine_pair(r, sec, model_named(in, "qwen3_5_9b.json"), "qwen3_5_9b.json", &q);
    kvshard_settings_free(set);
    bench_target_add(r, BENCH_ENGINES_SGLANG_TARGET, g.median, BENCH_ENGINES_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", g.n, g.p10, g.p90);
    /* Pipeline stages under vllm and sglang; trtllm's case plans one stage. */
    engine_args_target(r, sec, in, "llama3_1_8b.json", "llama3_1_8b.json -pp 2",
                       BENCH_ENGINES_VLLM_PP_TARGET,
                       (const char *const[]){"--engine=vllm", "--engine_version=0.19.0", "-pp", "2",
                                             "--max-model-len", "131072", "--kv-cache-memory-bytes",
                                             "10GiB", NULL});
    engine_args_target(r, sec, in, "deepseek_v3_2.json", "deepseek_v3_2.json --tp 8 --pp-size 2",
                       BENCH_ENGINES_SGLANG_PP_TARGET,
                       (const char *const[]){"--engine=sglang", "--tp", "8", "--pp-size", "2",
                                             "--device_compute_capability", "9.0",
                                             "--memory_per_rank=40GiB", "--context-length", "8192",
                                             NULL});
    engine_args_target(
        r, sec, in, "gpt_oss_20b.json", "gpt_oss_20b.json", BENCH_ENGINES_TRTLLM_TARGET,
        (const char *const[]){"--engine=trtllm", "--engine_version=1.1.0", "--max_batch_size", "64",
                              "--max_seq_len", "131072", "--memory_per_rank=20GiB", NULL});
}

/* ---- kvshard fit on 64 GPUs ------------------------------------------------------------------ */

static const char fit_model[] = "deepseek_v3_2.json";
#define FIT_GPUS 64u
#define FIT_LAYERS 61u

void bench_inputs_model_dir(bench_inputs *in)
{
    if (in->model_dir.dir)
        return;
    bench_progress("making a model directory of %u tensors' safetensors headers over %u shards",
                   BENCH_ST_TENSORS, BENCH_ST_SHARDS);
    bench_model_dir_make(&in->model_dir, model_named(in, fit_model), FIT_LAYERS, BENCH_ST_TENSORS,
                         BENCH_ST_SHARDS);
}

/* DeepSeek-V3.2 on 64 GPUs of 80 GiB at 32,768 tokens with an FP8 cache;
 * the weights from the two figures of its checkpoint, or (with_total
 * false) from the model directory's headers. */
static kvshard_options fit_options(bool with_total)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = UINT64_C(80) << 30;
    o.context_length = 32768;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    if (with_total) {
        o.weights_total = UINT64_C(674030337216);
        o.weights_experts = UINT64_C(654068416512);
    }
    return o;
}

void bench_op_fit(void *p)
{
    bench_fit_ctx *c = p;
    kvshard_fit *f = NULL;
    kvshard_error err;
    int rc = kvshard_fit_create(&f, c->model, c->options, c->fit, NULL, &err);
    if (rc)
        bench_die_kvshard(c->name, rc, &err);
    c->rows = kvshard_fit_row_count(f);
    c->fits = 0;
    for (size_t i = 0; i < c->rows; i++)
        c->fits += kvshard_fit_row_at(f, i)->fits;
    c->refused = kvshard_fit_not_admitted_count(f);
    sink += c->rows + kvshard_fit_row_at(f, 0)->seqs_total;
    kvshard_fit_free(f);
}

/* A fit timed in `samples` batches; its row in `sec`. */
static bench_stats fit_row(bench_section *sec, const bench_settings *s, size_t samples,
                           bench_fit_ctx *c, const char *label)
{
    bench_stats t = bench_time(s, samples, bench_op_fit, c);
    bench_row *row = bench_row_add(sec, "%s", label);
    bench_fig_stats(row, "time", BENCH_UNIT_NS, &t);
    bench_fig(row, "layouts", BENCH_UNIT_COUNT, (double)c->rows);
    bench_fig(row, "fitting", BENCH_UNIT_COUNT, (double)c->fits);
    bench_fig(row, "refused", BENCH_UNIT_COUNT, (double)c->refused);
    bench_fig(row, "per layout", BENCH_UNIT_NS, t.median / (double)c->rows);
    return t;
}

void bench_case_fit(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const bench_text *t = model_named(in, fit_model);
    kvshard_model *m = bench_load_model(t->data, t->len, t->name, NULL);
    kvshard_options o = fit_options(true);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = FIT_GPUS;
    bench_fit_ctx c = {m, &o, &fo, t->name, 0, 0, 0};
    bench_progress("fit: %s on %u GPUs, weights_total", fit_model, FIT_GPUS);
    bench_section *sec = bench_section_add(
        r, "kvshard fit: DeepSeek-V3.2 on 64 GPUs, weights_total",
        "kvshard_fit_create (and the free) of the loaded %s: 64 GPUs of 80 GiB, context_length "
        "32768, kv_cache_dtype fp8, weights_total 674030337216 with weights_experts "
        "654068416512, the default node of 8 GPUs. Every layout within the node limits is "
        "planned. The target is the median time over %zu batches / %.0f ms, one core.",
        fit_model, s->pairs, BENCH_FIT_BUDGET_MS);
    bench_stats tf = fit_row(sec, s, s->pairs, &c, "fit, weights_total");
    kvshard_model_free(m);
    bench_target_add(r, BENCH_FIT_TARGET, tf.median / (BENCH_FIT_BUDGET_MS * 1e6), 1.0, false,
                     "median %.2f ms of %zu batches (p90 %.2f ms), %s / %.0f ms", tf.median / 1e6,
                     tf.n, tf.p90 / 1e6, bench_clock_name(), BENCH_FIT_BUDGET_MS);
}

/* fit --engine=vllm of Qwen3.5-35B-A3B: its text weights in bf16 on 64
 * GPUs of 80 GiB at 32,768 tokens, rows by vLLM's own sequences. */
static const char fit_engine_model[] = "qwen3_5_35b_a3b.json";

void bench_case_fit_engine(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const bench_text *t = model_named(in, fit_engine_model);
    kvshard_model *m = bench_load_model(t->data, t->len, t->name, NULL);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = UINT64_C(80) << 30;
    o.context_length = 32768;
    o.weights_total = UINT64_C(69321223296);
    o.weights_experts = UINT64_C(64424509440);
    o.engine = KVSHARD_ENGINE_VLLM;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = FIT_GPUS;
    bench_fit_ctx c = {m, &o, &fo, t->name, 0, 0, 0};
    bench_progress("fit: %s on %u GPUs under vllm", fit_engine_model, FIT_GPUS);
    bench_section *sec = bench_section_add(
        r, "kvshard fit --engine=vllm: Qwen3.5-35B-A3B on 64 GPUs",
        "kvshard_fit_create (and the free) of the loaded %s under the vllm profile (its "
        "default release): 64 GPUs of 80 GiB, context_length 32768, weights_total 69321223296 "
        "with weights_experts 64424509440, the default node of 8 GPUs. Every layout vLLM runs "
        "within the node limits is planned and ranked by vLLM's own sequences. The target is "
        "the median time over %zu batches / %.0f ms, one core.",
        fit_engine_model, s->pairs, BENCH_FIT_BUDGET_MS);
    bench_stats tf = fit_row(sec, s, s->pairs, &c, "fit --engine=vllm");
    kvshard_model_free(m);
    bench_target_add(r, BENCH_FIT_ENGINE_TARGET, tf.median / (BENCH_FIT_BUDGET_MS * 1e6), 1.0,
                     false,
                     "median %.2f ms of %zu batches (p90 %.2f ms), %s / %.0f ms, %.1f us a "
                     "layout (%zu)",
                     tf.median / 1e6, tf.n, tf.p90 / 1e6, bench_clock_name(), BENCH_FIT_BUDGET_MS,
                     tf.median / 1e3 / (double)c.rows, c.rows);
}

static kvshard_model *load_model_file(const char *path)
{
    kvshard_model *m = NULL;
    kvshard_error err;
    int rc = kvshard_model_load_file(&m, path, NULL, &err);
    if (rc)
        bench_die_kvshard(path, rc, &err);
    return m;
}

void bench_case_fit_safetensors(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    bench_inputs_model_dir(in);
    const bench_model_dir *d = &in->model_dir;
    kvshard_model *m = load_model_file(d->config);
    kvshard_options o = fit_options(false);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = FIT_GPUS;
    bench_fit_ctx c = {m, &o, &fo, d->config, 0, 0, 0};
    bench_progress("fit: %s on %u GPUs, weights of %zu tensors' headers", fit_model, FIT_GPUS,
                   d->tensors);
    bench_section *sec = bench_section_add(
        r, "kvshard fit: DeepSeek-V3.2 on 64 GPUs, weights from a 100,000-tensor index",
        "The same fit with no weights_total: each call reads the generated model directory's "
        "model.safetensors.index.json and %u shard headers (%zu tensors, %zu of them routed "
        "experts, %.1f MB of JSON, %.1f GB of BF16 weights; files in the page cache) and "
        "classifies every tensor once for all layouts. The model: its config.json, loaded "
        "with kvshard_model_load_file. Target: median time over %zu batches / %.0f ms.",
        BENCH_ST_SHARDS, d->tensors, d->expert_tensors, (double)d->json_bytes / 1e6,
        (double)d->total_bytes / 1e9, s->big_pairs, BENCH_FIT_ST_BUDGET_MS);
    bench_stats tf = fit_row(sec, s, s->big_pairs, &c, "fit, weights from the headers");
    kvshard_model_free(m);
    bench_target_add(r, BENCH_FIT_ST_TARGET, tf.median / (BENCH_FIT_ST_BUDGET_MS * 1e6), 1.0, false,
                     "median %.1f ms of %zu batches (p90 %.1f ms), %s / %.0f ms", tf.median / 1e6,
                     tf.n, tf.p90 / 1e6, bench_clock_name(), BENCH_FIT_ST_BUDGET_MS);
}

/* ---- reading safetensors headers against a bare parse ------------------------------------- */

typedef struct headers_ctx {
    const bench_model_dir *dir;
    text_ctx *texts; /* the index and each shard's header JSON */
} headers_ctx;

/* The yardstick: a bare libyaml parse of each JSON text in turn, as the
 * reader parses each file on its own (the texts end to end are no one
 * YAML document). */
static void op_parse_headers(void *p)
{
    const headers_ctx *c = p;
    for (size_t i = 0; i < c->dir->json_count; i++)
        op_parse(&c->texts[i]);
}

static void op_read_dir(void *p)
{
    const headers_ctx *c = p;
    kvshard__safetensors *set = NULL;
    kvshard_error err;
    int rc = kvshard_safetensors__read_dir(&set, c->dir->dir, NULL, 0, &err);
    if (rc)
        bench_die_kvshard(c->dir->dir, rc, &err);
    if (set->count != c->dir->tensors || set->total_bytes != c->dir->total_bytes)
        bench_die("%s: read %zu tensors of %llu bytes, not %zu of %llu", c->dir->dir, set->count,
                  (unsigned long long)set->total_bytes, c->dir->tensors,
                  (unsigned long long)c->dir->total_bytes);
    sink += set->count;
    kvshard_safetensors__free(set);
}

void bench_case_safetensors(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    bench_inputs_model_dir(in);
    const bench_model_dir *d = &in->model_dir;
    text_ctx *texts = bench_xmalloc(d->json_count * sizeof *texts);
    for (size_t i = 0; i < d->json_count; i++) {
        text_ctx t = {d->jsons[i].data, d->jsons[i].len, d->jsons[i].name, NULL, NULL};
        texts[i] = t;
    }
    headers_ctx c = {d, texts};
    bench_progress("safetensors: reading %zu tensors' headers against a bare parse", d->tensors);
    size_t n = s->big_pairs;
    double *ta = bench_xmalloc(n * sizeof *ta), *tb = bench_xmalloc(n * sizeof *tb);
    bench_pairs(s, n, op_parse_headers, &c, op_read_dir, &c, ta, tb);
    bench_stats ratio = bench_pair_ratio(ta, tb, n);
    bench_stats parse = bench_summary_of(ta, n), read = bench_summary_of(tb, n);
    free(ta);
    free(tb);
    free(texts);

    bench_section *sec = bench_section_add(
        r, "Reading a model directory's safetensors headers against a bare parse",
        "kvshard_safetensors__read_dir of the generated directory (the index, %u shard files "
        "holding only their headers; %zu tensors; files in the page cache): open and read each "
        "file, parse its JSON with kvshard's JSON front-end into the loader's tree, check every "
        "entry, copy names and shapes, check names unique across shards, and free. Bare parse: "
        "yaml_parser_parse over the same %zu JSON texts from memory, each on its own (what "
        "the reader cost when it read them with libyaml). Batches alternate; ratio = median "
        "of per-pair ratios.",
        BENCH_ST_SHARDS, d->tensors, d->json_count);
    bench_row *row = bench_row_add(sec, "index + %u shard headers", BENCH_ST_SHARDS);
    bench_fig(row, "bytes", BENCH_UNIT_COUNT, (double)d->json_bytes);
    bench_fig_stats(row, "bare parse", BENCH_UNIT_NS, &parse);
    bench_fig_stats(row, "read_dir", BENCH_UNIT_NS, &read);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    bench_fig(row, "per tensor", BENCH_UNIT_NS, read.median / (double)d->tensors);
    bench_target_add(r, BENCH_ST_TARGET, ratio.median, BENCH_ST_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n, ratio.p10,
                     ratio.p90);
}

/* ---- the communication estimate ------------------------------------------------ */

/* A deployment of `model` under the command line's arguments. */
static kvshard_deployment *deployment_of(const bench_inputs *in, const char *model,
                                         const char *const *args)
{
    const bench_text *t = model_named(in, model);
    size_t count = 0;
    while (args[count])
        count++;
    kvshard_deployment *d = NULL;
    kvshard_error err;
    int rc =
        kvshard_deployment_create(&d, bench_load_model(t->data, t->len, t->name, NULL), NULL, &err);
    if (rc == KVSHARD_OK)
        rc = kvshard_deployment_apply_args(d, count, args, 0, &err);
    if (rc)
        bench_die_kvshard(model, rc, &err);
    return d;
}

typedef struct comm_ctx {
    const kvshard_deployment *deployment;
    bool priced; /* kvshard_plan_comm() after the plan */
} comm_ctx;

static void op_deployment_plan(void *p)
{
    const comm_ctx *c = p;
    kvshard_plan *plan = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_plan(&plan, c->deployment, &err);
    if (rc)
        bench_die_kvshard("kvshard_deployment_plan", rc, &err);
    if (c->priced) {
        kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
        if ((rc = kvshard_plan_comm(&e, plan, &err)) != 0)
            bench_die_kvshard("kvshard_plan_comm", rc, &err);
        sink += (uint64_t)e.throughput;
    }
    sink += kvshard_plan_num_ranks(plan);
    kvshard_plan_free(plan);
}

typedef struct comm_fit_ctx {
    const kvshard_deployment *deployment;
    size_t rows;
} comm_fit_ctx;

static void op_comm_fit(void *p)
{
    comm_fit_ctx *c = p;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = FIT_GPUS;
    fo.rank_by = KVSHARD_RANK_THROUGHPUT;
    kvshard_fit *f = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_fit(&f, c->deployment, &fo, &err);
    if (rc)
        bench_die_kvshard("kvshard_deployment_fit --rank=throughput", rc, &err);
    c->rows = kvshard_fit_row_count(f);
    sink += c->rows + (uint64_t)kvshard_fit_row_at(f, 0)->comm.throughput_total;
    kvshard_fit_free(f);
}

/* fit --rank=throughput: every row of DeepSeek-V3.2 on 64 H100 priced and
 * ranked by its throughput, against fit's budget. */
static void comm_fit(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const char *const args[] = {"--device_memory=80GiB",
                                "--context_length=32768",
                                "--kv_cache_dtype=fp8",
                                "--weights_total=674030337216",
                                "--weights_experts=654068416512",
                                "--comm_accelerator=h100",
                                NULL};
    comm_fit_ctx c = {deployment_of(in, fit_model, args), 0};
    bench_progress("comm: fit --rank=throughput of %s on %u GPUs", fit_model, FIT_GPUS);
    bench_stats t = bench_time(s, s->pairs, op_comm_fit, &c);
    kvshard_deployment_free((kvshard_deployment *)c.deployment);
    bench_section *sec = bench_section_add(
        r, "kvshard fit --rank=throughput: DeepSeek-V3.2 on 64 H100",
        "kvshard_deployment_fit (and the free) of %s with bench_case_fit's inputs and "
        "--comm_accelerator=h100, rank_by throughput: every row that fits is priced (a whole "
        "plan each) and ranked by its throughput. The target is the median time over %zu "
        "batches / %.0f ms, one core.",
        fit_model, s->pairs, BENCH_FIT_BUDGET_MS);
    bench_row *row = bench_row_add(sec, "fit --rank=throughput");
    bench_fig_stats(row, "time", BENCH_UNIT_NS, &t);
    bench_fig(row, "layouts", BENCH_UNIT_COUNT, (double)c.rows);
    bench_target_add(r, BENCH_COMM_FIT_TARGET, t.median / (BENCH_FIT_BUDGET_MS * 1e6), 1.0, false,
                     "median %.2f ms of %zu batches (p90 %.2f ms), %s / %.0f ms", t.median / 1e6,
                     t.n, t.p90 / 1e6, bench_clock_name(), BENCH_FIT_BUDGET_MS);
}

void bench_case_comm(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const char *const plain_args[] = {"--world_size=4",
                                      "--enable_layerwise_split=true",
                                      "--layerwise_split_size=2",
                                      "--memory_per_rank=20GiB",
                                      "--max_seqs=128",
                                      "--context_length=32768",
                                      "--weights_total=69321223296",
                                      "--weights_experts=64424509440",
                                      NULL};
    const char *const comm_args[] = {"--world_size=4",
                                     "--enable_layerwise_split=true",
                                     "--layerwise_split_size=2",
                                     "--memory_per_rank=20GiB",
                                     "--max_seqs=128",
                                     "--context_length=32768",
                                     "--weights_total=69321223296",
                                     "--weights_experts=64424509440",
                                     "--comm_accelerator=bi_v100",
                                     NULL};
    kvshard_deployment *plain = deployment_of(in, "qwen3_5_35b_a3b.json", plain_args);
    kvshard_deployment *priced = deployment_of(in, "qwen3_5_35b_a3b.json", comm_args);
    comm_ctx a = {plain, false}, b = {priced, true};
    bench_progress("comm: the seed planned without and with its estimate");
    bench_stats ta, tb;
    bench_stats ratio =
        bench_paired(s, s->pairs, op_deployment_plan, &a, op_deployment_plan, &b, &ta, &tb);
    kvshard_deployment_free(plain);
    kvshard_deployment_free(priced);
    bench_section *sec = bench_section_add(
        r, "The communication estimate of one plan against the plan without it",
        "kvshard_deployment_plan of the seed (Qwen3.5-35B-A3B, TP 4, S = 2, 20 GiB, 32 K "
        "tokens, weights_total) without a comm input, against the same with "
        "--comm_accelerator=bi_v100 followed by kvshard_plan_comm (collectives, base step, "
        "throughput, and the unsplit reference: the decode step at the batch of the plan's own "
        "count at S = 1, which every split plan makes for its uniform figures, from the split "
        "estimate's stage weights). Batches alternate; ratio = median of per-pair ratios.");
    bench_row *row = bench_row_add(sec, "seed, plan / plan + comm estimate");
    bench_fig_stats(row, "plan", BENCH_UNIT_NS, &ta);
    bench_fig_stats(row, "plan + comm", BENCH_UNIT_NS, &tb);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    bench_target_add(r, BENCH_COMM_TARGET, ratio.median, BENCH_COMM_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n, ratio.p10,
                     ratio.p90);
    comm_fit(r, in);
}

/* ---- transfer ------------------------------------------------------------------------ */

typedef struct transfer_ctx {
    const kvshard_deployment *p, *d;
    bool mapped;   /* the map of a request after the two plans */
    bool digested; /* and its digest asked, which the map works out on that first request */
    size_t edges;
} transfer_ctx;

static void op_transfer(void *arg)
{
    transfer_ctx *c = arg;
    kvshard_plan *p = NULL, *d = NULL;
    kvshard_error err;
    int rc = kvshard_deployment_plan(&p, c->p, &err);
    if (rc == KVSHARD_OK)
        rc = kvshard_deployment_plan(&d, c->d, &err);
    if (rc)
        bench_die_kvshard("kvshard_deployment_plan (transfer)", rc, &err);
    if (c->mapped) {
        kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
        o.tokens = 32768;
        kvshard_transfer *t = NULL;
        if ((rc = kvshard_transfer_create(&t, p, d, &o, NULL, &err)) != 0)
            bench_die_kvshard("kvshard_transfer_create", rc, &err);
        c->edges = kvshard_transfer_edge_count(t);
        sink += c->edges;
        if (c->digested)
            sink += kvshard_transfer_digest(t);
        kvshard_transfer_free(t);
    }
    sink += kvshard_plan_num_ranks(p) + kvshard_plan_num_ranks(d);
    kvshard_plan_free(p);
    kvshard_plan_free(d);
}

/* The map of one request of DeepSeek-V3.2 from 64 prefill ranks to 64
 * decode ranks with a split of 8: the two plans and the map against the two
 * plans alone, and the map's own time against its 10 ms budget (the
 * difference of the two medians). The map with its digest asked is a row
 * of its own, without a target, so the digest's cost stays in view. */
void bench_case_transfer(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const char *const p_args[] = {"--world_size=64", "--kv_cache_dtype=fp8", NULL};
    const char *const d_args[] = {"--world_size=64", "--kv_cache_dtype=fp8",
                                  "--enable_layerwise_split=true", "--layerwise_split_size=8",
                                  NULL};
    kvshard_deployment *p = deployment_of(in, fit_model, p_args);
    kvshard_deployment *d = deployment_of(in, fit_model, d_args);
    transfer_ctx plans = {p, d, false, false, 0}, mapped = {p, d, true, false, 0};
    transfer_ctx digested = {p, d, true, true, 0};
    bench_progress("transfer: %s, 64 P ranks to 64 D ranks with a split of 8", fit_model);
    bench_stats ta, tb;
    bench_stats ratio =
        bench_paired(s, s->pairs, op_transfer, &plans, op_transfer, &mapped, &ta, &tb);
    bench_stats tc, td;
    bench_stats digest_ratio =
        bench_paired(s, s->pairs, op_transfer, &plans, op_transfer, &digested, &tc, &td);
    kvshard_deployment_free(p);
    kvshard_deployment_free(d);
    double map_ns = tb.median > ta.median ? tb.median - ta.median : 0.0;
    bench_section *sec = bench_section_add(
        r, "kvshard transfer: DeepSeek-V3.2, 64 P ranks to 64 D ranks with a split of 8",
        "kvshard_deployment_plan of both sides of %s (TP 64, fp8 KV; D with a split of 8), "
        "against the same followed by kvshard_transfer_create of a 32,768-token request and "
        "its free. The map works out its digest the first time it is asked: the second row "
        "asks it too (no target), so its cost shows. Batches alternate; ratio = median of "
        "per-pair ratios; the map's own time is the difference of the two medians, against a "
        "%.0f ms budget.",
        fit_model, BENCH_TRANSFER_BUDGET_MS);
    bench_row *row = bench_row_add(sec, "two plans / two plans + map");
    bench_fig_stats(row, "plans", BENCH_UNIT_NS, &ta);
    bench_fig_stats(row, "plans + map", BENCH_UNIT_NS, &tb);
    bench_fig_stats(row, "ratio", BENCH_UNIT_RATIO, &ratio);
    bench_fig(row, "edges", BENCH_UNIT_COUNT, (double)mapped.edges);
    bench_row *with_digest = bench_row_add(sec, "two plans / two plans + map + digest");
    bench_fig_stats(with_digest, "plans", BENCH_UNIT_NS, &tc);
    bench_fig_stats(with_digest, "plans + map + digest", BENCH_UNIT_NS, &td);
    bench_fig_stats(with_digest, "ratio", BENCH_UNIT_RATIO, &digest_ratio);
    double map_digest_ns = td.median > tc.median ? td.median - tc.median : 0.0;
    bench_fig(with_digest, "digest", BENCH_UNIT_NS,
              map_digest_ns > map_ns ? map_digest_ns - map_ns : 0.0);
    bench_target_add(r, BENCH_TRANSFER_TARGET, ratio.median, BENCH_TRANSFER_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", ratio.n, ratio.p10,
                     ratio.p90);
    bench_target_add(r, BENCH_TRANSFER_MAP_TARGET, map_ns / (BENCH_TRANSFER_BUDGET_MS * 1e6), 1.0,
                     false, "the map %.3f ms (median difference), %s / %.0f ms", map_ns / 1e6,
                     bench_clock_name(), BENCH_TRANSFER_BUDGET_MS);
}
