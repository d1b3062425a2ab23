/* kvshard: the command line. It parses its arguments and calls the library;
 * the planning, the text and every figure come from libkvshard. The
 * document is made in full before the output is opened (tools/cli_output.c
 * writes it), and every message is escaped as the library escapes its own.
 *
 * Exit status: 0 success; 2 bad usage: a command-line value (or a flag
 * file's) that does not parse or is out of its range, an unknown flag; 1 a
 * refused plan, a file that does not read or holds an invalid value, a
 * failed write. */
#define _POSIX_C_SOURCE 200809L
#include "cli_output.h"
#include "cli_transfer.h"

#include <kvshard/explore.h>
#include <kvshard/kvshard.h>
#include <kvshard/output.h>

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { EXIT_INVALID = KVSHARD_CLI__EXIT_INVALID, EXIT_USAGE = KVSHARD_CLI__EXIT_USAGE };

typedef enum format { FORMAT_TEXT, FORMAT_JSON, FORMAT_SVG, FORMAT_HTML } format;

typedef struct cli {
    const char *command;
    const char *config;
    const char *output; /* -o FILE; NULL or "-": standard output */
    format fmt;
    const char **flags; /* the engine flags, passed on to the library */
    size_t flag_count;
    /* fit's own flags: 0 when not given. */
    uint32_t gpus, max_tp_size, max_pp_size, top;
    bool fit_flag_given;
    /* --rank, for compare and fit. */
    kvshard_rank_by rank_by;
    bool rank_given;
    /* The whole command line, which the report shows under its title. */
    int argc;
    const char *const *argv;
} cli;

/* The commands, for usage lines and help. */
typedef struct cli_command {
    const char *name;
    const char *usage;   /* after "kvshard NAME" */
    const char *summary; /* kvshard --help's line, wrapped at 71 columns */
    const char *about;   /* kvshard help NAME's paragraph */
    const char *formats; /* what --format takes; NULL: no --format */
} cli_command;

static const cli_command commands[] = {
    {"plan", "CONFIG [FLAG ...] [--format=text|json|svg|html] [-o FILE]",
     "which TP rank stores the KV cache of each layer, with per-rank\n"
     "           memory, KV block capacity and sequences at a context length",
     "Which TP rank stores the KV cache of each layer, with each rank's memory,\n"
     "the KV blocks that fit and, at a context length, the sequences that run\n"
     "at once.\n",
     "text (the default), json, svg (the layer map) or html (the page kvshard report "
     "writes)"},
    {"compare", "CONFIG [FLAG ...] [--format=text|json] [-o FILE]",
     "every layerwise split size that divides the attention TP size,\n"
     "           under each ownership rule, and the one to use",
     "Every layerwise split size that divides the attention TP size, under each\n"
     "ownership rule, ranked, and the flags of the one to use. The split flags\n"
     "(--enable_layerwise_split, --layerwise_split_size, --ownership) do not\n"
     "apply: every split is planned.\n",
     "text (the default) or json"},
    {"fit", "MODEL --gpus=N --device_memory=SIZE [--context_length=L] [FLAG ...]\n"
            "           [--max_tp_size=A] [--max_pp_size=B] [--top=K] [--format=text|json] [-o FILE]",
     "the layout of N GPUs (TP, stages, data parallelism, split) that\n"
     "           serves the most sequences, with the flags that run it",
     "Every layout of N GPUs that keeps a TP group inside a node and stages\n"
     "across nodes, each planned from the GPU's memory less the weights a rank\n"
     "holds (the model directory's safetensors headers, or --weights_total with\n"
     "--weights_experts) and the activation reserve, ranked by the sequences it\n"
     "serves at --context_length (else by tokens), with the flags that run\n"
     "the best under each engine that recommends flags. --pp_size and\n"
     "--dp_size pin those sizes; --enable_layerwise_split=false pins the\n"
     "split to 1.\n",
     "text (the default) or json"},
    {"report", "CONFIG [FLAG ...] [-o FILE]",
     "one self-contained HTML page of the plan and the comparison",
     "One self-contained HTML page of the plan and the comparison (the same as\n"
     "kvshard plan --format=html).\n",
     NULL},
    {"transfer", "P_PLAN D_PLAN [--p.KEY=VALUE ...] [--d.KEY=VALUE ...]\n"
                 "           [--context_length=N] [--nic=NAME|RATE] [--p_replica=N] [--d_replica=N]\n"
                 "           [--format=text|json|svg] [-o FILE]",
     "which prefill rank sends which part of a request's cache to which\n"
     "           decode rank, the bytes, and the time at a NIC speed",
     "Which rank of the prefill plan (P) sends which units of which layer's\n"
     "cache to which rank of the decode plan (D) for one request, the bytes\n"
     "one request moves (one copy, on the wire, on the busiest rank), the time\n"
     "at a NIC speed, and a digest both sides can compare. Each side is planned\n"
     "under the kvshard profile; both plan the same model.\n",
     "text (the default), json, or svg (the edges drawn to scale; needs a length)"},
    {"help", "[COMMAND] [--engine=NAME]", "the flags of a command, with their defaults and units",
     "The flags of a command, with their defaults and units, under the engine\n"
     "profile --engine names (kvshard when none).\n",
     NULL},
};

#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static const cli_command *command_named(const char *name)
{
    for (size_t i = 0; name && i < COMMAND_COUNT; i++) {
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    }
    return NULL;
}

/* The CLI's own flags, offered when a flag is unknown and near one. */
static const char *const cli_flags[] = {"format", "output", "help", "version", "gpus",
                                        "max_tp_size", "max_pp_size", "top", "rank", NULL};

/* fit's own flags, each a positive whole number: --gpus=N or --gpus N. */
static const struct {
    const char *name;
    size_t offset;
} fit_flags[] = {
    {"gpus", offsetof(cli, gpus)},
    {"max_tp_size", offsetof(cli, max_tp_size)},
    {"max_pp_size", offsetof(cli, max_pp_size)},
    {"top", offsetof(cli, top)},
};

/* An argument in a message: escaped, at most 64 bytes of it. */
typedef struct shown_arg {
    char text[96];
} shown_arg;

static shown_arg show(const char *arg)
{
    shown_arg s;
    kvshard_cli__excerpt(s.text, sizeof s.text, arg, 64);
    return s;
}

static int usage_error(const char *message)
{
    kvshard_cli__say("kvshard: %s", message);
    kvshard_cli__say("Try 'kvshard --help'.");
    return EXIT_USAGE;
}

/* Bad usage of a flag that only `command` reads: its help says more. */
static int command_usage_error(const char *command, const char *message)
{
    if (!command || !command_named(command))
        return usage_error(message);
    kvshard_cli__say("kvshard: %s", message);
    kvshard_cli__say("Try 'kvshard help %s'.", command);
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

/* ---- help ----------------------------------------------------------------------- */

/* Help is made in a growing buffer, then printed as one document. */
typedef struct text_buf {
    char *data;
    size_t len;
    size_t cap;
    bool failed;
} text_buf;

static void put(text_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static void put_text(text_buf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void putf(text_buf *b, const char *fmt, ...) KVSHARD_CLI__PRINTF(2, 3);

static void putf(text_buf *b, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(b, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Help lines: a name in the first HELP_NAME columns, then text wrapped at
 * HELP_WIDTH (a longer name has the text on the next line). */
#define HELP_NAME 30
#define HELP_WIDTH 79

static void help_row(text_buf *b, const char *name, const char *text)
{
    size_t col = 2 + strlen(name);
    putf(b, "  %s", name);
    if (col + 2 > HELP_NAME) {
        put_text(b, "\n");
        col = 0;
    }
    for (const char *p = text; *p;) {
        while (*p == ' ')
            p++;
        size_t word = strcspn(p, " ");
        if (col > HELP_NAME && col + 1 + word > HELP_WIDTH) {
            put_text(b, "\n");
            col = 0;
        }
        if (col < HELP_NAME) {
            putf(b, "%*s", (int)(HELP_NAME - col), "");
            col = HELP_NAME;
        } else {
            put_text(b, " ");
            col++;
        }
        for (size_t k = 0; k < word; k++)
            put(b, p[k] == '\x01' ? " " : p + k, 1);
        col += word;
        p += word;
    }
    put_text(b, "\n");
}

/* The flags of one help group: those the engine reads, or those it
 * accepts for `reader` alone (-1: for none). */
typedef struct help_group {
    text_buf *b;
    kvshard_engine engine;
    bool read;
    int reader;
    size_t rows;
    /* fit's help: the flags fit reads; `unread` gathers the others' names. */
    bool fit;
    text_buf *unread;
} help_group;

/* An engine's other name for a flag: argparse engines write their short
 * names with one dash (-tp). */
static void flag_name(char *out, size_t cap, const char *name, bool argparse)
{
    snprintf(out, cap, "%s%s", argparse && strlen(name) <= 3 ? "-" : "--", name);
}

static void help_flag(help_group *g, const kvshard_flag_info *f)
{
    if (f->read != g->read || (!g->read && f->reader != g->reader))
        return;
    if (g->fit && !f->fit_reads) {
        if (g->unread)
            putf(g->unread, "%s--%s", g->unread->len ? ", " : "", f->name);
        return;
    }
    char names[256], one[80], text[448];
    snprintf(names, sizeof names, "--%s", f->name);
    for (size_t i = 0; i < f->also_count; i++) {
        flag_name(one, sizeof one, f->also[i], f->argparse);
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, ", %s", one);
    }
    /* "default" and its value stay on one line (help_row reads \x01 as a
     * space it never breaks at). */
    snprintf(text, sizeof text, "%s; default\x01%s", f->doc, f->default_value);
    help_row(g->b, names, text);
    g->rows++;
}

static void help_group_rows(help_group *g)
{
    kvshard_flag_info f = KVSHARD_FLAG_INFO_INIT;
    for (size_t i = 0; kvshard_flag_info_at(&f, g->engine, i) == KVSHARD_OK; i++)
        help_flag(g, &f);
}

/* The engines, the words of the option "engine". */
static const kvshard_word *engines(void)
{
    kvshard_option_info info = KVSHARD_OPTION_INFO_INIT;
    return kvshard_option_find(&info, "engine") == KVSHARD_OK ? info.words : NULL;
}

static const char *engine_word(kvshard_engine engine)
{
    for (const kvshard_word *w = engines(); w && w->text; w++) {
        if (w->value == (int)engine)
            return w->text;
    }
    return "";
}

static bool engine_argparse(kvshard_engine engine)
{
    kvshard_flag_info f = KVSHARD_FLAG_INFO_INIT;
    return kvshard_flag_info_at(&f, engine, 0) == KVSHARD_OK && f.argparse;
}

/* The flags of `engine`: those it reads, those it accepts for another
 * engine, and the switches of flag files and engine command lines. */
static void help_flags(text_buf *b, kvshard_engine engine, bool fit)
{
    bool argparse = engine_argparse(engine);
    const char *name = engine_word(engine);
    putf(b, "\nflags of the %s profile; they override %s. %s\n", name, fit ? "MODEL" : "CONFIG",
         argparse ? "As argparse reads them:\n--key=value or --key value, one dash or two, "
                    "'-' and '_' alike, a bare --key\nfor true and --no-key for false."
                  : "As gflags reads them:\n--key=value or --key value, a bare --key for true "
                    "and --nokey for false.");
    text_buf unread = {0};
    help_group g = {b, engine, true, -1, 0, fit, &unread};
    help_group_rows(&g);
    /* Flags the engine accepts and does not read: another engine's, or
     * none's (a kvshard option the engine has no use for). */
    for (const kvshard_word *w = engines();; w++) {
        help_group other = {b, engine, false, w && w->text ? w->value : -1, 0, fit, NULL};
        size_t at = b->len;
        if (other.reader >= 0)
            putf(b, "\naccepted, but read only by the %s profile (--engine=%s):\n", w->text,
                 w->text);
        else
            putf(b, "\naccepted, but not read by the %s profile:\n", name);
        help_group_rows(&other);
        if (other.rows == 0) { /* no such flag: no heading */
            b->len = at;
            if (b->data)
                b->data[at] = '\0';
        }
        if (other.reader < 0)
            break;
    }
    if (unread.len) {
        put_text(b, "\nnot read by fit, which searches the sizes and the split and works out "
                    "the\nbudgets and the weights:\n");
        help_row(b, "", unread.data);
    }
    free(unread.data);
    put_text(b, "\nengine command lines:\n");
    help_row(b, "--flagfile=FILE",
             "more flags, one a line (# starts a comment); also --flagfile FILE");
    help_row(b, argparse ? "--ignore-unknown-flags" : "--ignore_unknown_flags",
             "skip the flags and arguments the profile does not read; the plan's warning "
             "flags_ignored names them");
}

/* The engines' words, "a, b or c". */
static void put_engines(text_buf *b)
{
    const kvshard_word *all = engines();
    for (const kvshard_word *w = all; w && w->text; w++)
        putf(b, "%s%s", w == all ? "" : w[1].text ? ", " : " or ", w->text);
}

static void help_usage(text_buf *b)
{
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        putf(b, "%s kvshard %s %s\n", i ? "      " : "usage:", commands[i].name, commands[i].usage);
    put_text(b, "       kvshard --help | -V | --version\n");
}

static void help_general(text_buf *b)
{
    help_usage(b);
    put_text(b, "\nCONFIG is a deployment YAML file, a model's config.json, or a model "
                "directory.\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        putf(b, "  %-8s %s\n", commands[i].name, commands[i].summary);
    put_text(b, "\n"
                "FLAGs are the deployment's keys, and override CONFIG (--world_size=8\n"
                "--context_length=32768); under an engine's profile (--engine=NAME) the\n"
                "engine's own flags too. 'kvshard help plan' lists every flag with its\n"
                "default and unit, 'kvshard help plan --engine=NAME' those of that engine.\n"
                "\n"
                "-o FILE replaces FILE only once the whole document is written (a temporary\n"
                "file beside it, renamed over it); -o - is standard output. A FIFO or a\n"
                "device is written directly. FILE must not be a file kvshard reads (the\n"
                "CONFIG, the model, flag files, the safetensors files of device inputs).\n"
                "\n"
                "Exit status, the same for every command: 0 success; 2 bad usage: a value\n"
                "on the command line or in a flag file that does not parse or is out of\n"
                "range, an unknown flag; 1 a refused plan, a file that does not read, a\n"
                "value of the deployment file, a failed write.\n");
}

/* transfer's flags: a side's deployment keys, the request and the network;
 * `kvshard help plan` lists the keys a side takes. */
static void help_transfer(text_buf *b, const cli_command *cmd)
{
    put_text(b, "\nP_PLAN and D_PLAN are each a deployment YAML file, a model's config.json,\n"
                "or a model directory; the same file may be given twice.\n\noutput:\n");
    help_row(b, "--format=FORMAT", cmd->formats);
    help_row(b, "-o FILE, --output=FILE",
             "the document replaces FILE whole; - (the default) is standard output");
    put_text(b, "\nsides:\n");
    help_row(b, "--p.KEY=VALUE", "a deployment key or flag of P only (--p.world_size=2)");
    help_row(b, "--d.KEY=VALUE", "a deployment key or flag of D only; a key without a side is "
                                 "bad usage");
    help_row(b, "--p_replica=N", "the P replica that prefills the request; default 0");
    help_row(b, "--d_replica=N", "the D replica that decodes it; default 0");
    put_text(b, "\nrequest:\n");
    help_row(b, "--context_length=N", "its tokens; default P's context_length, else D's");
    help_row(b, "--nic=NAME|RATE", "each rank's network: ndr400 (50 GB/s, the default), xdr800, "
                                   "hdr200, eth100, or bytes per second as a size (48GB)");
    put_text(b, "\n'kvshard help plan' lists the deployment keys a side takes.\n");
}

static void help_command(text_buf *b, const cli_command *cmd, kvshard_engine engine)
{
    putf(b, "usage: kvshard %s %s\n\n%s", cmd->name, cmd->usage, cmd->about);
    if (strcmp(cmd->name, "help") == 0)
        return;
    if (strcmp(cmd->name, "transfer") == 0) {
        help_transfer(b, cmd);
        return;
    }
    bool fit = strcmp(cmd->name, "fit") == 0;
    putf(b, "%s is a deployment YAML file, a model's config.json, or a model directory.\n\n"
            "output:\n",
         fit ? "MODEL" : "CONFIG");
    if (cmd->formats)
        help_row(b, "--format=FORMAT", cmd->formats);
    help_row(b, "-o FILE, --output=FILE",
             "the document replaces FILE whole; - (the default) is standard output");
    if (fit) {
        put_text(b, "\nlayouts:\n");
        help_row(b, "--gpus=N", "the GPUs, all alike (required)");
        help_row(b, "--max_tp_size=A", "the largest TP group; default --gpus_per_node (8)");
        help_row(b, "--max_pp_size=B", "the most stages; default the nodes, ceil(N / gpus_per_node)");
        help_row(b, "--top=K", "the rows printed; default 10 (--format=json lists all)");
        help_row(b, "--rank=HOW", "auto (the default: throughput when an accelerator, a link and "
                                  "--context_length are given, else capacity), capacity or "
                                  "throughput");
    }
    if (strcmp(cmd->name, "compare") == 0) {
        put_text(b, "\nranking:\n");
        help_row(b, "--rank=HOW",
                 "auto (the default: throughput when an accelerator, a link, "
                 "--context_length and a decode batch, a budget or "
                 "--comm_batch, are given, else capacity), capacity or "
                 "throughput");
    }
    help_flags(b, engine, fit);
    putf(b, "\n'kvshard help %s --engine=NAME' lists the flags of another profile:\n", cmd->name);
    put_engines(b);
    put_text(b, ".\n");
}

/* Print help: general, or a command's under a profile. */
static int print_help(const cli_command *cmd, kvshard_engine engine)
{
    text_buf b = {NULL, 0, 0, false};
    if (cmd)
        help_command(&b, cmd, engine);
    else
        help_general(&b);
    int status = b.failed ? usage_error("out of memory") : print_static(b.data);
    free(b.data);
    return status;
}

/* ---- arguments ---------------------------------------------------------------- */

static bool is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* Whether argv[i] takes the next argument as its value, for a reading of
 * the arguments that only looks for the command. */
static bool takes_value(const char *arg)
{
    return strcmp(arg, "-o") == 0 || strcmp(arg, "--output") == 0 || strcmp(arg, "--format") == 0 ||
           strcmp(arg, "--engine") == 0 || strcmp(arg, "-engine") == 0;
}

/* Help wins wherever it stands: `kvshard help [COMMAND]`, or --help with or
 * without a command. --engine picks the profile whose flags it lists. */
static int help_args(int argc, char **argv, int *done)
{
    const char *positional[2] = {NULL, NULL}, *engine = NULL;
    size_t found = 0;
    bool asked = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        asked |= is_help(arg);
        if (strncmp(arg, "--engine=", 9) == 0 || strncmp(arg, "-engine=", 8) == 0)
            engine = strchr(arg, '=') + 1;
        else if (takes_value(arg) && i + 1 < argc) {
            if (strstr(arg, "engine"))
                engine = argv[i + 1];
            i++; /* a value, not a command */
        } else if ((arg[0] != '-' || arg[1] == '\0') && found < 2) {
            positional[found++] = arg;
        }
    }
    bool help_command = positional[0] && strcmp(positional[0], "help") == 0;
    if (!asked && !help_command)
        return 0;
    *done = 1;
    /* `kvshard help plan`, `kvshard plan --help`: the command named. */
    const char *name = help_command ? positional[1] : positional[0];
    char message[256];
    const cli_command *cmd = name ? command_named(name) : NULL;
    if (name && !cmd) {
        snprintf(message, sizeof message,
                 "unknown command '%s' (expected plan, compare, fit, report, transfer or help)", show(name).text);
        return usage_error(message);
    }
    const kvshard_options defaults = KVSHARD_OPTIONS_INIT;
    int engine_value = (int)defaults.engine;
    if (engine) {
        engine_value = -1;
        for (const kvshard_word *w = engines(); w && w->text; w++) {
            if (strcmp(w->text, engine) == 0)
                engine_value = w->value;
        }
        if (engine_value < 0) {
            text_buf words = {NULL, 0, 0, false};
            put_engines(&words);
            snprintf(message, sizeof message, "--engine takes %s, not '%s'",
                     words.data ? words.data : "", show(engine).text);
            free(words.data);
            return usage_error(message);
        }
    }
    return print_help(cmd, (kvshard_engine)engine_value);
}

static int parse_format(cli *c, const char *value)
{
    char message[256];
    static const struct {
        const char *name;
        format fmt;
    } formats[] = {
        {"text", FORMAT_TEXT}, {"json", FORMAT_JSON}, {"svg", FORMAT_SVG}, {"html", FORMAT_HTML}};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (strcmp(value, formats[i].name) == 0) {
            c->fmt = formats[i].fmt;
            return 0;
        }
    }
    snprintf(message, sizeof message, "--format takes text, json, svg or html, not '%s'",
             show(value).text);
    return usage_error(message);
}

/* One of fit's own flags at argv[*i] ("--gpus=4", or "--gpus" "4"): 1 when
 * it is one (and read), 0 when not, or a usage error's status. */
static int fit_flag(cli *c, int argc, char **argv, int *i, int *status)
{
    const char *arg = argv[*i];
    for (size_t k = 0; k < sizeof fit_flags / sizeof fit_flags[0]; k++) {
        size_t n = strlen(fit_flags[k].name);
        if (strncmp(arg, "--", 2) != 0 || strncmp(arg + 2, fit_flags[k].name, n) != 0 ||
            (arg[2 + n] != '=' && arg[2 + n] != '\0'))
            continue;
        const char *value = arg[2 + n] == '=' ? arg + 3 + n : *i + 1 < argc ? argv[++*i] : NULL;
        char *end = NULL;
        errno = 0;
        unsigned long v = value && value[0] >= '1' && value[0] <= '9' ? strtoul(value, &end, 10) : 0;
        if (!value || v == 0 || v > KVSHARD_MAX_RANKS || errno || (end && *end)) {
            char message[160];
            snprintf(message, sizeof message, "--%s takes a whole number from 1 to %u, not '%s'",
                     fit_flags[k].name, KVSHARD_MAX_RANKS, value ? show(value).text : "");
            *status = usage_error(message);
            return -1;
        }
        uint32_t x = (uint32_t)v;
        memcpy((char *)c + fit_flags[k].offset, &x, sizeof x);
        c->fit_flag_given = true;
        return 1;
    }
    return 0;
}

/* The first argument that is neither a flag nor a flag's value. */
static const char *first_word(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (takes_value(argv[i]))
            i++;
        else if (argv[i][0] != '-' || argv[i][1] == '\0')
            return argv[i];
    }
    return NULL;
}

static int parse_args(cli *c, int argc, char **argv, int *done)
{
    *done = 0;
    int status = help_args(argc, argv, done);
    if (*done)
        return status;
    if (first_word(argc, argv) && strcmp(first_word(argc, argv), "transfer") == 0) {
        c->command = "transfer";
        return 0;
    }
    bool format_given = false;
    char message[256];
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
            *done = 1;
            return print_static("kvshard " KVSHARD_VERSION_STRING "\n");
        }
        int is_fit_flag = fit_flag(c, argc, argv, &i, &status);
        if (is_fit_flag < 0)
            return status;
        if (is_fit_flag)
            continue;
        if (strcmp(arg, "--rank") == 0)
            return command_usage_error(first_word(argc, argv),
                                       "--rank needs a value: --rank=auto, --rank=capacity or "
                                       "--rank=throughput");
        if (strncmp(arg, "--rank=", 7) == 0) {
            static const char *const words[] = {"auto", "capacity", "throughput"};
            c->rank_given = true;
            size_t k = 0;
            while (k < 3 && strcmp(arg + 7, words[k]) != 0)
                k++;
            if (k == 3) {
                snprintf(message, sizeof message,
                         "comm_value: --rank takes auto, capacity or throughput, not '%s'",
                         show(arg + 7).text);
                return command_usage_error(first_word(argc, argv), message);
            }
            c->rank_by = (kvshard_rank_by)k;
        } else if (strncmp(arg, "--format=", 9) == 0 || strcmp(arg, "--format") == 0) {
            if (arg[8] == '\0' && i + 1 == argc)
                return usage_error("--format needs a value: text, json, svg or html");
            format_given = true;
            if ((status = parse_format(c, arg[8] ? arg + 9 : argv[++i])) != 0)
                return status;
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
        } else if ((strcmp(arg, "--flagfile") == 0 || strcmp(arg, "-flagfile") == 0) &&
                   i + 1 < argc) {
            /* --flagfile FILE: the file is the flag's, never CONFIG. */
            c->flags[c->flag_count++] = arg;
            c->flags[c->flag_count++] = argv[++i];
        } else if (!c->command && !(arg[0] == '-' && arg[1] != '\0')) {
            c->command = arg;
        } else if (!c->config && c->command && !(arg[0] == '-' && arg[1] != '\0')) {
            c->config = arg;
        } else {
            /* Flags, their values and any other argument: the library
             * reads them as the engine's command line. */
            c->flags[c->flag_count++] = arg;
        }
    }
    if (!c->command)
        return usage_error("missing command (plan, compare, fit, report, transfer or help)");
    const cli_command *cmd = command_named(c->command);
    if (!cmd) {
        snprintf(message, sizeof message,
                 "unknown command '%s' (expected plan, compare, fit, report, transfer or help)",
                 show(c->command).text);
        return usage_error(message);
    }
    if (!c->config)
        return usage_error(strcmp(c->command, "fit") == 0 ? "missing MODEL"
                                                          : "missing CONFIG file");
    bool fit = strcmp(c->command, "fit") == 0;
    if (c->fit_flag_given && !fit)
        return usage_error("--gpus, --max_tp_size, --max_pp_size and --top are flags of fit");
    if (fit && !c->gpus)
        return usage_error("fit needs --gpus=N, the GPUs to lay the model out on");
    if (c->rank_given && !fit && strcmp(c->command, "compare") != 0)
        return usage_error("--rank is a flag of compare and fit");
    if (fit && c->fmt != FORMAT_TEXT && c->fmt != FORMAT_JSON)
        return usage_error("fit writes text or json");
    if (strcmp(c->command, "report") == 0) {
        if (format_given && c->fmt != FORMAT_HTML)
            return usage_error("report always writes HTML; --format is for plan and compare");
        c->fmt = FORMAT_HTML;
    }
    if (c->fmt == FORMAT_SVG && strcmp(c->command, "plan") != 0)
        return usage_error("--format=svg is for plan");
    if (c->fmt == FORMAT_HTML && strcmp(c->command, "compare") == 0)
        return usage_error("--format=html is for plan: 'kvshard report CONFIG' writes the HTML "
                           "page, the comparison included");
    return 0;
}

/* ---- commands ------------------------------------------------------------------- */

/* Whether an error is about a value the command line gave (or a flag file,
 * which holds more of it): its source names the flag or the file. */
static bool from_command_line(const kvshard_error *err, const kvshard_cli__inputs *inputs)
{
    return strncmp(err->source, "command line", 12) == 0 ||
           kvshard_cli__is_flagfile(inputs, err->source);
}

/* The exit status of a failed run, one rule for every command: a value of
 * the command line that does not parse or is out of its range (a text past
 * what kvshard represents included) is bad usage, 2, wherever it is found
 * out; a refused plan, a file that does not read and any error located in
 * the deployment or model files are invalid input, 1. */
static int status_of(const kvshard_error *err, const kvshard_cli__inputs *inputs)
{
    bool value = err->code == KVSHARD_ETYPE || err->code == KVSHARD_ERANGE;
    return value && from_command_line(err, inputs) ? EXIT_USAGE : EXIT_INVALID;
}

/* A planning call's error: bad usage is said as such ("kvshard: ", and
 * where to look), invalid input as FILE:LINE:COLUMN or the flag. */
static int failed(const kvshard_error *err, const kvshard_cli__inputs *inputs, const char *command)
{
    int status = status_of(err, inputs);
    /* What --rank asks for and the plan lacks ("comm_input_missing:
     * --rank=throughput needs ...") is located at that flag, as the errors
     * of the deployment's flags are, not in the file. */
    const char *colon = strchr(err->message, ':');
    kvshard_error at_flag = *err;
    if (colon && strncmp(colon, ": --rank=", 9) == 0 &&
        !memchr(err->message, ' ', (size_t)(colon - err->message))) {
        snprintf(at_flag.source, sizeof at_flag.source, "command line --rank");
        at_flag.line = 0;
    }
    print_error(status == EXIT_USAGE ? "kvshard: " : "", &at_flag);
    if (status == EXIT_USAGE)
        kvshard_cli__say("Try 'kvshard help %s'.", command);
    return status;
}

/* The document, made in full before the output is opened: a command that
 * fails never opens, truncates or creates its target. */
typedef struct document {
    const cli *c;
    kvshard_plan *plan;
    kvshard_comparison *cmp;
    kvshard_fit *fit;
} document;

static int make_document(document *d, const kvshard_deployment *dep,
                         const kvshard_cli__inputs *inputs)
{
    kvshard_error err;
    const char *command = d->c->command;
    bool html = d->c->fmt == FORMAT_HTML; /* report, or plan --format=html */
    if (strcmp(command, "fit") == 0) {
        kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
        fo.gpus = d->c->gpus;
        fo.max_tp_size = d->c->max_tp_size;
        fo.max_pp_size = d->c->max_pp_size;
        fo.rank_by = d->c->rank_by;
        if (kvshard_deployment_fit(&d->fit, dep, &fo, &err) != KVSHARD_OK)
            return failed(&err, inputs, command);
        return 0;
    }
    if (strcmp(command, "plan") == 0 || html) {
        if (kvshard_deployment_plan(&d->plan, dep, &err) != KVSHARD_OK)
            return failed(&err, inputs, command);
        /* A split the estimate cannot price is refused before any output. */
        kvshard_comm_estimate comm = KVSHARD_COMM_ESTIMATE_INIT;
        if (kvshard_plan_comm(&comm, d->plan, &err) != KVSHARD_OK)
            return failed(&err, inputs, command);
    }
    if (strcmp(command, "compare") == 0) {
        kvshard_compare_options co = KVSHARD_COMPARE_OPTIONS_INIT;
        co.rank_by = d->c->rank_by;
        if (kvshard_deployment_compare_with(&d->cmp, dep, &co, &err) != KVSHARD_OK)
            return failed(&err, inputs, command);
    } else if (html) {
        /* A comparison that cannot be made leaves its chart out, not the page. */
        (void)kvshard_deployment_compare(&d->cmp, dep, NULL);
    }
    return 0;
}

static int write_document(const document *d, kvshard_write_fn fn, void *user)
{
    const char *command = d->c->command;
    format fmt = d->c->fmt;
    if (fmt == FORMAT_HTML) {
        kvshard_report_options about = KVSHARD_REPORT_OPTIONS_INIT;
        about.source = d->c->config;
        about.argc = d->c->argc;
        about.argv = d->c->argv;
        return kvshard_report_write_html(d->plan, d->cmp, &about, fn, user);
    }
    if (strcmp(command, "fit") == 0)
        return fmt == FORMAT_JSON ? kvshard_fit_write_json(d->fit, fn, user)
                                  : kvshard_fit_write_text(d->fit, d->c->top, fn, user);
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
    kvshard_args_options ao = KVSHARD_ARGS_OPTIONS_INIT;
    ao.caller_flags = cli_flags;
    ao.on_file = kvshard_cli__input_read;
    ao.on_file_user = inputs;
    if (kvshard_deployment_apply_args_with(dep, c->flag_count, c->flags, &ao, &err) != KVSHARD_OK) {
        /* Bad usage, located at the flag; a flag file that does not read
         * is a file that does not read, as CONFIG's would be, and an error
         * inside a file a flag names (an engine's options file) is one of
         * that file. */
        bool unread = err.code == KVSHARD_EIO || !from_command_line(&err, inputs);
        print_error(unread ? "" : "kvshard: ", &err);
        if (!unread)
            kvshard_cli__say("Try 'kvshard help %s'.", c->command);
        kvshard_deployment_free(dep);
        return unread ? EXIT_INVALID : EXIT_USAGE;
    }
    /* Every input is known now: the target is checked against them before
     * it is opened. */
    kvshard_cli__output out;
    int status = kvshard_cli__output_prepare(&out, c->output, inputs);
    document d = {c, NULL, NULL, NULL};
    if (status == 0)
        status = make_document(&d, dep, inputs);
    /* Making it read the weights files of device inputs: the target is
     * none of them either. */
    if (status == 0)
        status = kvshard_cli__output_recheck(&out, inputs);
    if (status == 0)
        status = kvshard_cli__output_open(&out);
    if (status == 0)
        status =
            kvshard_cli__output_finish(&out, write_document(&d, kvshard_cli__output_write, &out));
    kvshard_cli__output_free(&out);
    kvshard_comparison_free(d.cmp);
    kvshard_plan_free(d.plan);
    kvshard_fit_free(d.fit);
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
    c.argc = argc;
    c.argv = (const char *const *)argv;
    int done;
    int status = parse_args(&c, argc, argv, &done);
    if (status == 0 && !done)
        status = strcmp(c.command, "transfer") == 0 ? kvshard_cli__transfer(argc, argv, inputs)
                                                    : run(&c, inputs);
    kvshard_cli__inputs_free(inputs);
    free(inputs);
    free(c.flags);
    return status;
}
