/* kvshard: the command line. It parses its arguments and calls the library;
 * the planning, the text and every figure come from libkvshard. The
 * document is made in full before the output is opened (tools/cli_output.c
 * writes it), and every message goes through the library's escape.
 *
 * Exit status: 0 success, 1 invalid input or a failed write, 2 bad usage. */
#define _POSIX_C_SOURCE 200809L
#include "cli_output.h"

#include "deploy/flags.h"
#include "kvshard/kvshard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_INVALID = KVSHARD_CLI__EXIT_INVALID, EXIT_USAGE = KVSHARD_CLI__EXIT_USAGE };

typedef enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_SVG } format;

typedef struct cli {
    const char *command;
    const char *config;
    const char *output; /* -o FILE; NULL or "-": standard output */
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
    "Flags take the deployment keys, gflags style, and override the file\n"
    "(under --engine=vllm and --engine=sglang the engine's own flags too, in\n"
    "both --flag value and --flag=value forms):\n"
    "  --world_size=N --dp_size=N --cp_size=N\n"
    "  --enable_layerwise_split[=true|false] --noenable_layerwise_split\n"
    "  --layerwise_split_size=N --ownership=ordinal|global|contiguous\n"
    "  --is_draft[=true|false] --engine=kvshard|xllm|vllm|sglang --engine_version=X.Y.Z\n"
    "  --kv_cache_dtype=auto|bf16|fp16|fp8|int8 --state_dtype=auto|bf16|fp16|fp32\n"
    "  --block_size=N --memory_per_rank=BYTES (or with KiB, MiB, GiB, TiB)\n"
    "  --max_seqs=N --num_speculative_tokens=N --scratch_layers=N\n"
    "  --context_length=TOKENS\n"
    "  xllm profile: --max_seqs_per_batch=N --enable_prefix_cache[=BOOL]\n"
    "  --max_linear_state_cache_slots=N --device_memory_total=BYTES\n"
    "  --device_memory_free=BYTES --max_memory_utilization=F --max_cache_size=BYTES\n"
    "  --flagfile=FILE (one flag per line, # comments)  --ignore_unknown_flags\n"
    "\n"
    "-o FILE replaces FILE only once the whole document is written (a temporary\n"
    "file beside it, renamed over it); -o - is standard output. A FIFO or a\n"
    "device is written directly. FILE must not be a file kvshard reads.\n"
    "\n"
    "Exit status: 0 success, 1 invalid input or a failed write, 2 bad usage.\n";

/* An argument in a message: escaped, at most 64 bytes of it. */
typedef struct shown_arg {
    char text[96];
} shown_arg;

static shown_arg show(const char *arg)
{
    shown_arg s;
    kvshard__excerpt(s.text, sizeof s.text, arg, strlen(arg), 64);
    return s;
}

static int usage_error(const char *message)
{
    kvshard_cli__say("kvshard: %s", message);
    kvshard_cli__say("Try 'kvshard --help'.");
    return EXIT_USAGE;
}

/* The error's fields are escaped by the library; kvshard_cli__say keeps
 * them as they are. */
static void print_error(const char *prefix, const kvshard_error *err)
{
    if (err->line > 0)
        kvshard_cli__say("%s%s:%d:%d: %s", prefix, err->source, err->line, err->column,
                         err->message);
    else if (err->source[0])
        kvshard_cli__say("%s%s: %s", prefix, err->source, err->message);
    else
        kvshard_cli__say("kvshard: %s", err->message);
}

/* --help and --version print to standard output like everything else: a
 * full disk or a closed pipe is an error here too. */
static int print_static(const char *text)
{
    kvshard_cli__output out;
    int status = kvshard_cli__output_prepare(&out, NULL, NULL);
    if (status == 0) {
        int rc =
            kvshard_cli__output_write(&out, text, strlen(text)) == 0 ? KVSHARD_OK : KVSHARD_EWRITE;
        status = kvshard_cli__output_finish(&out, rc);
    }
    kvshard_cli__output_free(&out);
    return status;
}

/* ---- arguments ---------------------------------------------------------------- */

static int parse_args(cli *c, int argc, char **argv, int *done)
{
    *done = 0;
    bool format_given = false;
    char message[256];
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
            else {
                snprintf(message, sizeof message, "--format takes text, json or svg, not '%s'",
                         show(arg + 9).text);
                return usage_error(message);
            }
        } else if (strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0) {
            if (i + 1 == argc || argv[i + 1][0] == '\0') {
                snprintf(message, sizeof message,
                         "%s needs a file name (or - for standard "
                         "output)",
                         arg);
                return usage_error(message);
            }
            c->output = argv[++i];
        } else if (strncmp(arg, "--output=", 9) == 0) {
            if (arg[9] == '\0')
                return usage_error("--output= needs a file name (or - for standard output)");
            c->output = arg + 9;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            c->flags[c->flag_count++] = arg;
        } else if (!c->command) {
            c->command = arg;
        } else if (!c->config) {
            c->config = arg;
        } else if (i > 1 && argv[i - 1][0] == '-' && argv[i - 1][1] != '\0' &&
                   c->flag_count > 0 && c->flags[c->flag_count - 1] == argv[i - 1]) {
            /* --tensor-parallel-size 4: the library reads the flags, and an
             * engine's flag may take the next argument as its value. */
            c->flags[c->flag_count++] = arg;
        } else {
            snprintf(message, sizeof message, "unexpected argument '%s'", show(arg).text);
            return usage_error(message);
        }
    }
    if (!c->command)
        return usage_error("missing command (plan, compare or report)");
    if (strcmp(c->command, "plan") != 0 && strcmp(c->command, "compare") != 0 &&
        strcmp(c->command, "report") != 0) {
        snprintf(message, sizeof message, "unknown command '%s' (expected plan, compare or report)",
                 show(c->command).text);
        return usage_error(message);
    }
    if (!c->config)
        return usage_error("missing CONFIG file");
    if (format_given && strcmp(c->command, "report") == 0)
        return usage_error("report always writes HTML; --format is for plan and compare");
    if (c->fmt == FORMAT_SVG && strcmp(c->command, "plan") != 0)
        return usage_error("--format=svg is for plan");
    return 0;
}

/* ---- commands ------------------------------------------------------------------- */

/* The document, made in full before the output is opened: a command that
 * fails never opens, truncates or creates its target. */
typedef struct document {
    const cli *c;
    kvshard_plan *plan;
    kvshard_comparison *cmp;
} document;

static int make_document(document *d, const kvshard_deployment *dep)
{
    kvshard_error err;
    const char *command = d->c->command;
    if (strcmp(command, "plan") == 0 || strcmp(command, "report") == 0) {
        if (kvshard_deployment_plan(&d->plan, dep, &err) != KVSHARD_OK) {
            print_error("", &err);
            return EXIT_INVALID;
        }
    }
    if (strcmp(command, "compare") == 0) {
        if (kvshard_deployment_compare(&d->cmp, dep, &err) != KVSHARD_OK) {
            print_error("", &err);
            return EXIT_INVALID;
        }
    } else if (strcmp(command, "report") == 0) {
        /* A comparison that cannot be made leaves its chart out, not the page. */
        (void)kvshard_deployment_compare(&d->cmp, dep, NULL);
    }
    return 0;
}

static int write_document(const document *d, kvshard_write_fn fn, void *user)
{
    const char *command = d->c->command;
    format fmt = d->c->fmt;
    if (strcmp(command, "report") == 0)
        return kvshard_report_write_html(d->plan, d->cmp, fn, user);
    if (strcmp(command, "compare") == 0)
        return fmt == FORMAT_JSON ? kvshard_comparison_write_json(d->cmp, fn, user)
                                  : kvshard_comparison_write_text(d->cmp, fn, user);
    return fmt == FORMAT_JSON  ? kvshard_plan_write_json(d->plan, fn, user)
           : fmt == FORMAT_SVG ? kvshard_plan_write_svg(d->plan, fn, user)
                               : kvshard_plan_write_text(d->plan, fn, user);
}

static int run(const cli *c, kvshard_cli__inputs *inputs)
{
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    if (kvshard_deployment_load_file(&dep, c->config, NULL, &err) != KVSHARD_OK) {
        print_error("", &err);
        return EXIT_INVALID;
    }
    kvshard_cli__inputs_of(inputs, dep);
    if (kvshard_flags__apply(dep, c->flag_count, c->flags, 0, kvshard_cli__input_flagfile, inputs,
                             &err) != KVSHARD_OK) {
        print_error("kvshard: ", &err); /* bad usage, located at the flag */
        kvshard_cli__say("Try 'kvshard --help'.");
        kvshard_deployment_free(dep);
        return EXIT_USAGE;
    }
    /* Every input is known now: the target is checked against them before
     * it is opened. */
    kvshard_cli__output out;
    int status = kvshard_cli__output_prepare(&out, c->output, inputs);
    document d = {c, NULL, NULL};
    if (status == 0)
        status = make_document(&d, dep);
    if (status == 0)
        status = kvshard_cli__output_open(&out);
    if (status == 0)
        status =
            kvshard_cli__output_finish(&out, write_document(&d, kvshard_cli__output_write, &out));
    kvshard_cli__output_free(&out);
    kvshard_comparison_free(d.cmp);
    kvshard_plan_free(d.plan);
    kvshard_deployment_free(dep);
    return status;
}

int main(int argc, char **argv)
{
    cli c;
    memset(&c, 0, sizeof c);
    c.flags = calloc((size_t)argc + 1, sizeof *c.flags);
    kvshard_cli__inputs *inputs = calloc(1, sizeof *inputs);
    if (!c.flags || !inputs) {
        kvshard_cli__say("kvshard: out of memory");
        free(c.flags);
        free(inputs);
        return EXIT_INVALID;
    }
    int done;
    int status = parse_args(&c, argc, argv, &done);
    if (status == 0 && !done)
        status = run(&c, inputs);
    free(inputs);
    free(c.flags);
    return status;
}
