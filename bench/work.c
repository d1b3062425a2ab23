/* Work that inputs could make grow without bound: kvshard fit over many
 * layouts, ranks and layers, and tables keyed by names an input chooses. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "bench.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "text/safetensors.h"

#include "crafted_names.h"
#include "fixture_files.h"

static volatile uint64_t work_sink;

/* ---- fit's work ----------------------------------------------------------------------------- */

typedef struct plan_ctx {
    const kvshard_model *model;
    const kvshard_options *options;
    const char *name;
} plan_ctx;

static void op_plan_once(void *p)
{
    const plan_ctx *c = p;
    kvshard_plan *plan = NULL;
    kvshard_error err;
    int rc = kvshard_plan_create(&plan, c->model, c->options, NULL, &err);
    if (rc)
        bench_die_kvshard(c->name, rc, &err);
    work_sink += kvshard_plan_digest(plan);
    kvshard_plan_free(plan);
}

/* A Nemotron-H config of `layers` layers: an attention layer and a Mamba
 * layer in every 64, MLP layers otherwise. */
static char *long_config(size_t *len, uint32_t layers)
{
    char *text = fixture_long_config(layers, len);
    if (!text)
        bench_die("out of memory");
    return text;
}

void bench_case_fit_work(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    /* DeepSeek-V3.2 on 55,440 GPUs, every limit open (nodes of 55,440, T and
     * P up to 55,440): its 128 query heads admit T of 1, 2, 4, 8 and 16
     * only, 702 rows. */
    const bench_text *t = NULL;
    for (size_t i = 0; i < in->model_count; i++) {
        if (strcmp(in->models[i].name, "deepseek_v3_2.json") == 0)
            t = &in->models[i];
    }
    if (!t)
        bench_die("the example model deepseek_v3_2.json is missing");
    kvshard_model *m = bench_load_model(t->data, t->len, t->name, NULL);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = UINT64_C(80) << 30;
    o.context_length = 32768;
    o.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    o.weights_total = UINT64_C(674030337216);
    o.weights_experts = UINT64_C(654068416512);
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus_per_node = BENCH_FIT_WIDE_GPUS;
    fo.gpus = BENCH_FIT_WIDE_GPUS;
    fo.max_tp_size = BENCH_FIT_WIDE_GPUS;
    fo.max_pp_size = BENCH_FIT_WIDE_GPUS;
    bench_fit_ctx wide = {m, &o, &fo, t->name, 0, 0, 0};
    bench_progress("fit: DeepSeek-V3.2 on %u GPUs, every limit open", BENCH_FIT_WIDE_GPUS);
    bench_stats tw = bench_time(s, s->big_pairs, bench_op_fit, &wide);
    kvshard_model_free(m);

    /* The search the query-heads rule no longer narrows: as many query and
     * KV heads as GPUs, so every T dividing 55,440 is admitted (48,912
     * rows, T up to 55,440 ranks with one KV head each). */
    char gqa_text[512];
    int gqa_len = snprintf(gqa_text, sizeof gqa_text,
                           "{\"model_type\": \"llama\", \"num_hidden_layers\": 61, "
                           "\"num_attention_heads\": %u, \"num_key_value_heads\": %u, "
                           "\"head_dim\": 128, \"hidden_size\": %u, "
                           "\"torch_dtype\": \"bfloat16\"}",
                           BENCH_FIT_WIDE_GPUS, BENCH_FIT_WIDE_GPUS, BENCH_FIT_WIDE_GPUS * 128u);
    kvshard_model *gm = bench_load_model(gqa_text, (size_t)gqa_len, "<55,440 KV heads>", NULL);
    kvshard_options go = KVSHARD_OPTIONS_INIT;
    go.device_memory = UINT64_C(80) << 30;
    go.context_length = 32768;
    go.kv_cache_dtype = KVSHARD_DTYPE_FP8;
    go.weights_total = UINT64_C(674030337216);
    go.weights_experts = 0;
    bench_fit_ctx gqa = {gm, &go, &fo, "<55,440 KV heads>", 0, 0, 0};
    bench_progress("fit: %u KV heads on %u GPUs, every limit open", BENCH_FIT_WIDE_GPUS,
                   BENCH_FIT_WIDE_GPUS);
    bench_stats tg = bench_time(s, s->big_pairs, bench_op_fit, &gqa);
    kvshard_model_free(gm);

    /* A 4,194,304-layer model on 64 GPUs against one plan of it. */
    size_t len;
    char *text = long_config(&len, BENCH_FIT_LONG_LAYERS);
    bench_progress("fit: a %u-layer model on 64 GPUs against one plan of it",
                   BENCH_FIT_LONG_LAYERS);
    kvshard_model *lm = bench_load_model(text, len, "<4,194,304 layers>", NULL);
    free(text);
    kvshard_options lo = KVSHARD_OPTIONS_INIT;
    lo.device_memory = UINT64_C(80) << 30;
    lo.context_length = 4096;
    lo.weights_total = UINT64_C(16000000000);
    kvshard_options po = lo;
    po.world_size = 64;
    po.pp_size = 8;
    po.max_seqs = 1;
    kvshard_fit_options lfo = KVSHARD_FIT_OPTIONS_INIT;
    lfo.gpus = 64;
    bench_fit_ctx lc = {lm, &lo, &lfo, "<4,194,304 layers>", 0, 0, 0};
    plan_ctx pc = {lm, &po, "<4,194,304 layers>"};
    bench_stats plan_t, fit_t;
    bench_stats ratio =
        bench_paired(s, s->big_pairs, op_plan_once, &pc, bench_op_fit, &lc, &plan_t, &fit_t);
    kvshard_model_free(lm);

    bench_section *sec = bench_section_add(
        r, "kvshard fit: work bounded in layouts, ranks and layers",
        "kvshard_fit_create (and the free) of DeepSeek-V3.2 on %u GPUs of 80 GiB, context_length "
        "32768, fp8 KV, gpus_per_node, max_tp_size and max_pp_size all %u (every layout the "
        "query heads admit); the same of a 61-layer GQA config of %u query and KV heads (every "
        "T dividing %u admitted; weights_total the same, all dense); and of a Nemotron-H "
        "config of %u layers (attention and Mamba every 64) on 64 GPUs at context_length "
        "4096, paired with one kvshard_plan_create of it (TP 8, PP 8, max_seqs 1). Targets: "
        "the first two's medians / 1 s; the third's median of per-pair ratios.",
        BENCH_FIT_WIDE_GPUS, BENCH_FIT_WIDE_GPUS, BENCH_FIT_WIDE_GPUS, BENCH_FIT_WIDE_GPUS,
        BENCH_FIT_LONG_LAYERS);
    bench_row *row = bench_row_add(sec, "DeepSeek-V3.2, %u GPUs", BENCH_FIT_WIDE_GPUS);
    bench_fig_stats(row, "fit", BENCH_UNIT_NS, &tw);
    bench_fig(row, "layouts", BENCH_UNIT_COUNT, (double)wide.rows);
    bench_fig(row, "per layout", BENCH_UNIT_NS, tw.median / (double)wide.rows);
    row = bench_row_add(sec, "%u KV heads, %u GPUs", BENCH_FIT_WIDE_GPUS, BENCH_FIT_WIDE_GPUS);
    bench_fig_stats(row, "fit", BENCH_UNIT_NS, &tg);
    bench_fig(row, "layouts", BENCH_UNIT_COUNT, (double)gqa.rows);
    bench_fig(row, "per layout", BENCH_UNIT_NS, tg.median / (double)gqa.rows);
    row = bench_row_add(sec, "%u layers, 64 GPUs", BENCH_FIT_LONG_LAYERS);
    bench_fig_stats(row, "one plan", BENCH_UNIT_NS, &plan_t);
    bench_fig_stats(row, "fit", BENCH_UNIT_NS, &fit_t);
    bench_fig(row, "layouts", BENCH_UNIT_COUNT, (double)lc.rows);
    bench_fig_stats(row, "fit / plan", BENCH_UNIT_RATIO, &ratio);
    bench_target_add(r, BENCH_FIT_WIDE_TARGET, tw.median / 1e9, 1.0, false,
                     "median %.0f ms of %zu batches (p90 %.0f ms), %s / 1 s", tw.median / 1e6, tw.n,
                     tw.p90 / 1e6, bench_clock_name());
    bench_target_add(r, BENCH_FIT_GQA_TARGET, tg.median / 1e9, 1.0, false,
                     "median %.0f ms of %zu batches (p90 %.0f ms, %zu rows), %s / 1 s",
                     tg.median / 1e6, tg.n, tg.p90 / 1e6, gqa.rows, bench_clock_name());
    bench_target_add(r, BENCH_FIT_LONG_TARGET, ratio.median, 10.0, false,
                     "median of %zu per-pair ratios (p10 %.2f, p90 %.2f)", ratio.n, ratio.p10,
                     ratio.p90);
}

/* ---- names crafted to collide -------------------------------------------------------------- */

/* A temporary directory holding the files of one read. */
static char *temp_dir(void)
{
    const char *base = getenv("TMPDIR");
    size_t n = strlen(base && *base ? base : "/tmp") + 32;
    char *dir = bench_xmalloc(n);
    snprintf(dir, n, "%s/kvshard_names_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir))
        bench_die("cannot make a temporary directory");
    return dir;
}

static void put_file(const char *dir, const char *name, const void *data, size_t len)
{
    char *path = bench_join(dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
        bench_die("cannot write %s", path);
    free(path);
}

static void remove_temp(char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *path = bench_join(dir, e->d_name);
        unlink(path);
        free(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    free(dir);
}

/* Two shards holding names[0, n/2) and [n/2, n), two bytes of F16 each:
 * the check that no tensor is in both looks every name up. */
static char *tensor_dir(const char *names, size_t n)
{
    char *dir = temp_dir();
    for (int half = 0; half < 2; half++) {
        size_t len;
        unsigned char *shard = fixture_names_shard(names, half ? n / 2 : 0, half ? n : n / 2, &len);
        if (!shard)
            bench_die("out of memory");
        put_file(dir, half ? "b.safetensors" : "a.safetensors", shard, len);
        free(shard);
    }
    return dir;
}

/* An index naming a shard per tensor, none of them present: the distinct
 * shards are found through a table of names before the first is opened. */
static char *shard_dir(const char *names, size_t n)
{
    char *dir = temp_dir();
    size_t cap = 128 + n * 64, used = 0;
    char *json = bench_xmalloc(cap);
    used +=
        (size_t)snprintf(json, cap, "{\"metadata\":{\"total_size\":%zu},\"weight_map\":{", 2 * n);
    for (size_t i = 0; i < n; i++)
        used += (size_t)snprintf(json + used, cap - used, "%s\"t%zu\":\"%s\"", i ? "," : "", i,
                                 names + 17 * i);
    used += (size_t)snprintf(json + used, cap - used, "}}");
    put_file(dir, "model.safetensors.index.json", json, used);
    free(json);
    return dir;
}

typedef struct read_ctx {
    const char *dir;
    bool absent; /* the shards the index names are absent: the read stops at the first */
} read_ctx;

static void op_read(void *p)
{
    const read_ctx *c = p;
    kvshard__safetensors *set = NULL;
    kvshard_error err;
    int rc = kvshard_safetensors__read_dir(&set, c->dir, NULL, 0, &err);
    if (rc == KVSHARD_EIO && c->absent)
        return;
    if (rc)
        bench_die_kvshard(c->dir, rc, &err);
    work_sink += set->count;
    kvshard_safetensors__free(set);
}

typedef struct skip_ctx {
    kvshard_deployment *dep;
    const char **argv;
    size_t count;
} skip_ctx;

/* Skipping the flags again: each is looked up among those kept. */
static void op_skip(void *p)
{
    const skip_ctx *c = p;
    kvshard_error err;
    int rc =
        kvshard_deployment_apply_args(c->dep, c->count, c->argv, KVSHARD_ARGS_IGNORE_UNKNOWN, &err);
    if (rc)
        bench_die_kvshard("flags", rc, &err);
}

static skip_ctx skip_ctx_of(const bench_inputs *in, const char *flags, size_t stride, size_t n)
{
    skip_ctx c = {NULL, bench_xmalloc(n * sizeof(const char *)), n};
    kvshard_error err;
    int rc = kvshard_deployment_load_file(&c.dep, in->seed->path, NULL, &err);
    if (rc)
        bench_die_kvshard(in->seed->path, rc, &err);
    for (size_t i = 0; i < n; i++)
        c.argv[i] = flags + i * stride;
    op_skip(&c); /* the first call keeps them */
    return c;
}

void bench_case_names(bench_report *r, bench_inputs *in)
{
    const bench_settings *s = r->settings;
    const size_t n = BENCH_NAMES;
    bench_progress("names: %zu tensor and shard names, 2^%u flags, crafted against the old hashes",
                   n, BENCH_FLAG_STEPS);
    char *plain = plain_tensor_names(n), *crafted = crafted_tensor_names(n);
    size_t ps, cs;
    char *plain_f = plain_flags(BENCH_FLAG_STEPS, &ps),
         *crafted_f = crafted_flags(BENCH_FLAG_STEPS, &cs);
    if (!plain || !crafted || !plain_f || !crafted_f)
        bench_die("out of memory crafting names");

    char *pd = tensor_dir(plain, n), *cd = tensor_dir(crafted, n);
    read_ctx pr = {pd, false}, cr = {cd, false};
    bench_stats tp_t, tc_t,
        t_ratio = bench_paired(s, s->pairs, op_read, &pr, op_read, &cr, &tp_t, &tc_t);
    remove_temp(pd);
    remove_temp(cd);

    pd = shard_dir(plain, n);
    cd = shard_dir(crafted, n);
    pr = (read_ctx){pd, true};
    cr = (read_ctx){cd, true};
    bench_stats sp_t, sc_t,
        s_ratio = bench_paired(s, s->pairs, op_read, &pr, op_read, &cr, &sp_t, &sc_t);
    remove_temp(pd);
    remove_temp(cd);

    size_t nf = (size_t)1 << BENCH_FLAG_STEPS;
    skip_ctx pf = skip_ctx_of(in, plain_f, ps, nf), cf = skip_ctx_of(in, crafted_f, cs, nf);
    bench_stats fp_t, fc_t,
        f_ratio = bench_paired(s, s->pairs, op_skip, &pf, op_skip, &cf, &fp_t, &fc_t);
    kvshard_deployment_free(pf.dep);
    kvshard_deployment_free(cf.dep);
    free(pf.argv);
    free(cf.argv);
    free(plain);
    free(crafted);
    free(plain_f);
    free(crafted_f);

    bench_section *sec = bench_section_add(
        r, "Names crafted to collide",
        "Tables keyed by names a checkpoint or a command line chooses, fed names crafted to "
        "share one slot of any table up to 2^20 slots under kvshard 0.3's unkeyed hashes "
        "(tests/crafted_names.h), against ordinary names of the same length: %zu tensor names "
        "over two shard headers (kvshard_safetensors__read_dir, the check that no tensor is in "
        "both), an index naming %zu shards (the table of distinct shards), 2^%u flags skipped "
        "again by kvshard_deployment_apply_args under --ignore_unknown_flags. Batches alternate "
        "ordinary, crafted; ratio = median of per-pair ratios.",
        n, n, BENCH_FLAG_STEPS);
    bench_row *row = bench_row_add(sec, "tensor names");
    bench_fig_stats(row, "ordinary", BENCH_UNIT_NS, &tp_t);
    bench_fig_stats(row, "crafted", BENCH_UNIT_NS, &tc_t);
    bench_fig_stats(row, "crafted / ordinary", BENCH_UNIT_RATIO, &t_ratio);
    row = bench_row_add(sec, "shard names");
    bench_fig_stats(row, "ordinary", BENCH_UNIT_NS, &sp_t);
    bench_fig_stats(row, "crafted", BENCH_UNIT_NS, &sc_t);
    bench_fig_stats(row, "crafted / ordinary", BENCH_UNIT_RATIO, &s_ratio);
    row = bench_row_add(sec, "skipped flags");
    bench_fig_stats(row, "ordinary", BENCH_UNIT_NS, &fp_t);
    bench_fig_stats(row, "crafted", BENCH_UNIT_NS, &fc_t);
    bench_fig_stats(row, "crafted / ordinary", BENCH_UNIT_RATIO, &f_ratio);
    bench_target_add(r, BENCH_NAMES_TENSOR_TARGET, t_ratio.median, BENCH_NAMES_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", t_ratio.n, t_ratio.p10,
                     t_ratio.p90);
    bench_target_add(r, BENCH_NAMES_SHARD_TARGET, s_ratio.median, BENCH_NAMES_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", s_ratio.n, s_ratio.p10,
                     s_ratio.p90);
    bench_target_add(r, BENCH_NAMES_FLAG_TARGET, f_ratio.median, BENCH_NAMES_LIMIT, false,
                     "median of %zu per-pair ratios (p10 %.3f, p90 %.3f)", f_ratio.n, f_ratio.p10,
                     f_ratio.p90);
}
