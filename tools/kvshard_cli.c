/* kvshard: the command line. It parses its arguments and calls the library;
 * the planning, the text and every figure come from libkvshard.
 *
 * Exit status: 0 success, 1 invalid input or a failed write, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L /* fileno, open */
#include "kvshard/kvshard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_INVALID = 1, EXIT_USAGE = 2 };

typedef enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_SVG } format;

typedef struct cli {
    const char *command;
    const char *config;
    const char *output; /* -o FILE; NULL: standard output */
    format fmt;
    const char **flags; /* the engine flags, passed on to the library */
    size_t flag_count;
} cli;

static const char usage_text[] =
    "usage: kvshard plan CONFIG [--key=value ...] [--format=text|json|svg] [-o FILE]\n"
    "       kvshard compare CONFIG [--key=value ...] [--format=text|json] [-o FILE]\n"
    "       kvshard report CONFIG [--key=value ...] [-o FILE]\n"
    "       kvshard --help | --version\n"
    "\n"
    "CONFIG is a deployment YAML file, a model's config.json, or a model directory.\n"
    "  plan     which TP rank stores the KV cache of each layer, with per-rank\n"
    "           memory, KV block capacity and sequences at a context length\n"
    "  compare  every layerwise split size that divides the attention TP size,\n"
    "           under each ownership rule, and the one to use\n"
    "  report   one self-contained HTML page of the plan and the comparison\n"
    "\n"
    "Flags take the deployment keys, gflags style, and override the file:\n"
    "  --world_size=N --dp_size=N --cp_size=N\n"
    "  --enable_layerwise_split[=true|false] --noenable_layerwise_split\n"
    "  --layerwise_split_size=N --ownership=ordinal|global|contiguous\n"
    "  --is_draft[=true|false] --engine=kvshard|xllm\n"
    "  --kv_cache_dtype=auto|bf16|fp16|fp8|int8 --state_dtype=auto|bf16|fp16|fp32\n"
    "  --block_size=N --memory_per_rank=BYTES (or with KiB, MiB, GiB, TiB)\n"
    "  --max_seqs=N --num_speculative_tokens=N --scratch_layers=N\n"
    "  --context_length=TOKENS\n"
    "  xllm profile: --max_seqs_per_batch=N --enable_prefix_cache[=BOOL]\n"
    "  --max_linear_state_cache_slots=N --device_memory_total=BYTES\n"
    "  --device_memory_free=BYTES --max_memory_utilization=F --max_cache_size=BYTES\n"
    "  --flagfile=FILE (one flag per line, # comments)  --ignore_unknown_flags\n"
    "\n"
    "Exit status: 0 success, 1 invalid input or a failed write, 2 bad usage.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "kvshard: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'kvshard --help'.\n");
    return EXIT_USAGE;
}

/* The error's fields are escaped by the library, so they are safe to print. */
static void print_error(const kvshard_error *err)
{
    if (err->line > 0)
        fprintf(stderr, "%s:%d:%d: %s\n", err->source, err->line, err->column, err->message);
    else if (err->source[0])
        fprintf(stderr, "%s: %s\n", err->source, err->message);
    else
        fprintf(stderr, "kvshard: %s\n", err->message);
}

/* ---- output ------------------------------------------------------------------ */

/* Writes straight to a file descriptor (the library buffers), keeping the
 * first error so that output stops there and the reason can be told. */
typedef struct sink {
    int fd;
    int error; /* errno of the first failed write, 0 when none */
} sink;

static int write_fd(void *user, const char *data, size_t len)
{
    sink *s = user;
    while (len > 0) {
        ssize_t n = write(s->fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->error = n < 0 ? errno : EIO;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static int write_failed(const char *what, int error)
{
    fprintf(stderr, "kvshard: cannot write %s: %s\n", what, strerror(error));
    return EXIT_INVALID;
}

/* --help and --version print to standard output like everything else: a
 * full disk or a closed pipe is an error here too. */
static int print_static(const char *text)
{
    sink s = {STDOUT_FILENO, 0};
    if (write_fd(&s, text, strlen(text)) != 0)
        return write_failed("to standard output", s.error);
    return 0;
}

/* ---- arguments ---------------------------------------------------------------- */

static int parse_args(cli *c, int argc, char **argv, int *done)
{
    *done = 0;
    bool format_given = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            *done = 1;
            return print_static(usage_text);
        }
        if (strcmp(arg, "--version") == 0) {
            *done = 1;
            return print_static("kvshard " KVSHARD_VERSION_STRING "\n");
        }
        if (strncmp(arg, "--format=", 9) == 0) {
            format_given = true;
            if (strcmp(arg + 9, "text") == 0)
                c->fmt = FORMAT_TEXT;
            else if (strcmp(arg + 9, "json") == 0)
                c->fmt = FORMAT_JSON;
            else if (strcmp(arg + 9, "svg") == 0)
                c->fmt = FORMAT_SVG;
            else
                return usage_error("--format takes text, json or svg, not '%s'", arg + 9);
        } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (i + 1 == argc)
                return usage_error("%s needs a file name", arg);
            c->output = argv[++i];
        } else if (strncmp(arg, "--output=", 9) == 0) {
            c->output = arg + 9;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            c->flags[c->flag_count++] = arg;
        } else if (!c->command) {
            c->command = arg;
        } else if (!c->config) {
            c->config = arg;
        } else {
            return usage_error("unexpected argument '%s'", arg);
        }
    }
    if (!c->command)
        return usage_error("%s", "missing command (plan, compare or report)");
    if (strcmp(c->command, "plan") != 0 && strcmp(c->command, "compare") != 0 &&
        strcmp(c->command, "report") != 0)
        return usage_error("unknown command '%s' (expected plan, compare or report)", c->command);
    if (!c->config)
        return usage_error("%s", "missing CONFIG file");
    if (format_given && strcmp(c->command, "report") == 0)
        return usage_error("%s", "report always writes HTML; --format is for plan and compare");
    if (c->fmt == FORMAT_SVG && strcmp(c->command, "plan") != 0)
        return usage_error("%s", "--format=svg is for plan");
    return 0;
}

/* ---- commands ------------------------------------------------------------------- */

typedef struct run {
    const cli *c;
    kvshard_deployment *dep;
    sink out;
} run;

/* One writer call, with its result turned into an exit status. */
static int finish(run *r, int rc)
{
    if (rc == KVSHARD_EWRITE)
        return write_failed(r->c->output ? r->c->output : "to standard output", r->out.error);
    if (rc != KVSHARD_OK) {
        fprintf(stderr, "kvshard: %s\n", kvshard_strerror(rc));
        return EXIT_INVALID;
    }
    return 0;
}

static int do_plan(run *r)
{
    kvshard_error err;
    kvshard_plan *plan = NULL;
    if (kvshard_deployment_plan(&plan, r->dep, &err) != KVSHARD_OK) {
        print_error(&err);
        return EXIT_INVALID;
    }
    int rc = r->c->fmt == FORMAT_JSON  ? kvshard_plan_write_json(plan, write_fd, &r->out)
             : r->c->fmt == FORMAT_SVG ? kvshard_plan_write_svg(plan, write_fd, &r->out)
                                       : kvshard_plan_write_text(plan, write_fd, &r->out);
    kvshard_plan_free(plan);
    return finish(r, rc);
}

static int do_compare(run *r)
{
    kvshard_error err;
    kvshard_comparison *cmp = NULL;
    if (kvshard_deployment_compare(&cmp, r->dep, &err) != KVSHARD_OK) {
        print_error(&err);
        return EXIT_INVALID;
    }
    int rc = r->c->fmt == FORMAT_JSON ? kvshard_comparison_write_json(cmp, write_fd, &r->out)
                                      : kvshard_comparison_write_text(cmp, write_fd, &r->out);
    kvshard_comparison_free(cmp);
    return finish(r, rc);
}

static int do_report(run *r)
{
    kvshard_error err;
    kvshard_plan *plan = NULL;
    kvshard_comparison *cmp = NULL;
    if (kvshard_deployment_plan(&plan, r->dep, &err) != KVSHARD_OK) {
        print_error(&err);
        return EXIT_INVALID;
    }
    /* A comparison that cannot be made leaves its chart out, not the page. */
    (void)kvshard_deployment_compare(&cmp, r->dep, NULL);
    int rc = kvshard_report_write_html(plan, cmp, write_fd, &r->out);
    kvshard_comparison_free(cmp);
    kvshard_plan_free(plan);
    return finish(r, rc);
}

static int open_output(run *r)
{
    if (!r->c->output)
        return 0;
    r->out.fd = open(r->c->output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (r->out.fd < 0) {
        fprintf(stderr, "kvshard: cannot open %s: %s\n", r->c->output, strerror(errno));
        return EXIT_INVALID;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cli c;
    memset(&c, 0, sizeof c);
    c.flags = calloc((size_t)argc + 1, sizeof *c.flags);
    if (!c.flags) {
        fprintf(stderr, "kvshard: out of memory\n");
        return EXIT_INVALID;
    }
    int done;
    int status = parse_args(&c, argc, argv, &done);
    if (status || done) {
        free(c.flags);
        return status;
    }
    run r = {&c, NULL, {STDOUT_FILENO, 0}};
    kvshard_error err;
    if (kvshard_deployment_load_file(&r.dep, c.config, NULL, &err) != KVSHARD_OK) {
        print_error(&err);
        free(c.flags);
        return EXIT_INVALID;
    }
    if (kvshard_deployment_apply_args(r.dep, c.flag_count, c.flags, 0, &err) != KVSHARD_OK) {
        fprintf(stderr, "kvshard: "); /* bad usage, located at the flag */
        print_error(&err);
        fprintf(stderr, "Try 'kvshard --help'.\n");
        status = EXIT_USAGE;
    }
    if (status == 0)
        status = open_output(&r);
    if (status == 0) {
        if (strcmp(c.command, "plan") == 0)
            status = do_plan(&r);
        else if (strcmp(c.command, "compare") == 0)
            status = do_compare(&r);
        else
            status = do_report(&r);
    }
    if (c.output && r.out.fd >= 0 && r.out.fd != STDOUT_FILENO && close(r.out.fd) != 0 &&
        status == 0)
        status = write_failed(c.output, errno);
    kvshard_deployment_free(r.dep);
    free(c.flags);
    return status;
}
