/* kvshard transfer: reads two deployments, each with the flags of its side,
 * plans each under the kvshard profile and writes the map that moves one
 * request's cache from the prefill plan (P) to the decode plan (D). Every
 * figure is the library's (kvshard_transfer_create). */
#define _POSIX_C_SOURCE 200809L
#include "cli_transfer.h"

#include <kvshard/explore.h>
#include <kvshard/kvshard.h>
#include <kvshard/output.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_INVALID = KVSHARD_CLI__EXIT_INVALID, EXIT_USAGE = KVSHARD_CLI__EXIT_USAGE };

/* One side: its file and the flags of its prefix, rewritten without it
 * ("--p.world_size=4" -> "--world_size=4"). */
typedef struct side {
    const char *name; /* "P" or "D" */
    const char *path;
    char **flags;
    size_t flag_count;
    kvshard_deployment *dep;
    kvshard_plan *plan;
} side;

typedef struct request {
    side sides[2];
    bool json;
    const char *output;
    uint64_t context_length; /* 0: the sides' */
    const char *nic;
    uint32_t replica[2];
} request;

/* An argument in a message: escaped, at most 64 bytes of it. */
static const char *shown(char *buf, size_t cap, const char *arg)
{
    kvshard_cli__excerpt(buf, cap, arg, 64);
    return buf;
}

static int usage(const char *name, const char *message, const char *arg)
{
    char a[96];
    kvshard_cli__say("kvshard: transfer: %s: %s%s%s", name, message, arg ? " " : "",
                     arg ? shown(a, sizeof a, arg) : "");
    kvshard_cli__say("Try 'kvshard help transfer'.");
    return EXIT_USAGE;
}

/* A count: digits only, at least `min`, within 32 (or 64) bits. */
static bool count(uint64_t *out, const char *text, uint64_t min, uint64_t max)
{
    if (!text || text[0] < '0' || text[0] > '9')
        return false;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* The value of "--NAME=VALUE" or "--NAME VALUE" at argv[*i] when the
 * argument is --NAME; NULL otherwise (*missing set when it has none). */
static const char *value_of(const char *name, int argc, char **argv, int *i, bool *missing)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return NULL;
    if (arg[n] == '=')
        return arg + n + 1;
    if (arg[n] != '\0')
        return NULL;
    if (*i + 1 < argc)
        return argv[++*i];
    *missing = true;
    return NULL;
}

/* Whether `key` (a flag without its dashes and value) is a deployment key,
 * which on this command belongs to one side. */
static bool deployment_key(const char *arg)
{
    char key[128];
    const char *k = arg + strspn(arg, "-");
    size_t n = strcspn(k, "=");
    if (n == 0 || n >= sizeof key)
        return false;
    memcpy(key, k, n);
    key[n] = '\0';
    kvshard_option_info oi = KVSHARD_OPTION_INFO_INIT;
    kvshard_setting_info si = KVSHARD_SETTING_INFO_INIT;
    return kvshard_option_find(&oi, key) == KVSHARD_OK ||
           kvshard_setting_find(&si, key) == KVSHARD_OK;
}

static int side_flag(side *s, const char *arg, size_t prefix)
{
    const char *rest = arg + prefix;
    if (!strchr(rest, '=') || rest[0] == '=')
        return usage("transfer_usage", "a side's flag is --p.KEY=VALUE or --d.KEY=VALUE, not", arg);
    size_t n = strlen(rest);
    char *flag = malloc(n + 3);
    if (!flag)
        return usage("transfer_usage", "out of memory", NULL);
    flag[0] = '-';
    flag[1] = '-';
    memcpy(flag + 2, rest, n + 1);
    s->flags[s->flag_count++] = flag;
    return 0;
}

static int replica(uint32_t *out, const char *flag, const char *v)
{
    uint64_t n = 0;
    if (!count(&n, v, 0, KVSHARD_MAX_RANKS)) {
        char message[96];
        snprintf(message, sizeof message, "%s takes a replica index from 0, not", flag);
        return usage("transfer_usage", message, v ? v : "''");
    }
    *out = (uint32_t)n;
    return 0;
}

static int parse(request *r, int argc, char **argv)
{
    size_t plans = 0;
    bool seen_command = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        bool missing = false;
        const char *v;
        if (!seen_command && strcmp(arg, "transfer") == 0) {
            seen_command = true;
        } else if (arg[0] != '-' || arg[1] == '\0') {
            if (plans == 2)
                return usage("transfer_usage",
                             "transfer takes two plans, P_PLAN and D_PLAN; "
                             "one more:",
                             arg);
            r->sides[plans++].path = arg;
        } else if (strncmp(arg, "--p.", 4) == 0) {
            if (side_flag(&r->sides[0], arg, 4))
                return EXIT_USAGE;
        } else if (strncmp(arg, "--d.", 4) == 0) {
            if (side_flag(&r->sides[1], arg, 4))
                return EXIT_USAGE;
        } else if ((v = value_of("--format", argc, argv, &i, &missing)) || missing) {
            if (!v || (strcmp(v, "text") != 0 && strcmp(v, "json") != 0))
                return usage("transfer_usage", "--format takes text or json, not", v ? v : "''");
            r->json = strcmp(v, "json") == 0;
        } else if (strcmp(arg, "-o") == 0 || (v = value_of("--output", argc, argv, &i, &missing)) ||
                   missing) {
            if (strcmp(arg, "-o") == 0)
                v = i + 1 < argc ? argv[++i] : NULL;
            if (!v || !v[0])
                return usage("transfer_usage", "-o needs a file name (or - for standard output)",
                             NULL);
            r->output = v;
        } else if ((v = value_of("--context_length", argc, argv, &i, &missing)) || missing) {
            if (!count(&r->context_length, v, 1, UINT32_MAX))
                return usage("transfer_usage",
                             "--context_length takes a count of tokens from 1, "
                             "not",
                             v ? v : "''");
        } else if ((v = value_of("--nic", argc, argv, &i, &missing)) || missing) {
            if (!v)
                return usage("transfer_nic", "--nic needs a preset or a rate", NULL);
            r->nic = v;
        } else if ((v = value_of("--p_replica", argc, argv, &i, &missing)) || missing) {
            if (replica(&r->replica[0], "--p_replica", v))
                return EXIT_USAGE;
        } else if ((v = value_of("--d_replica", argc, argv, &i, &missing)) || missing) {
            if (replica(&r->replica[1], "--d_replica", v))
                return EXIT_USAGE;
        } else if (strncmp(arg, "--engine", 8) == 0) {
            char a[96], message[192];
            snprintf(message, sizeof message,
                     "%s: this version of kvshard transfer gives no engine verdicts yet",
                     shown(a, sizeof a, arg));
            return usage("transfer_usage", message, NULL);
        } else if (deployment_key(arg)) {
            return usage("transfer_flag_side",
                         "a deployment key belongs to one side: write it --p.KEY=VALUE or "
                         "--d.KEY=VALUE, not",
                         arg);
        } else {
            return usage("transfer_usage", "unknown flag", arg);
        }
    }
    if (plans != 2)
        return usage("transfer_usage", plans ? "missing D_PLAN" : "missing P_PLAN and D_PLAN",
                     NULL);
    return 0;
}

/* Print a library error about one side: "kvshard: transfer: D: ...". */
static void say_side(const side *s, const kvshard_error *err)
{
    /* A flag is named as it was given, with its side. */
    static const char flag_source[] = "command line --";
    size_t n = sizeof flag_source - 1;
    if (strncmp(err->source, flag_source, n) == 0)
        kvshard_cli__say("kvshard: transfer: %s: command line --%c.%s: %s", s->name,
                         s->name[0] == 'P' ? 'p' : 'd', err->source + n, err->message);
    else if (err->line > 0)
        kvshard_cli__say("kvshard: transfer: %s: %s:%d:%d: %s", s->name, err->source, err->line,
                         err->column, err->message);
    else if (err->source[0])
        kvshard_cli__say("kvshard: transfer: %s: %s: %s", s->name, err->source, err->message);
    else
        kvshard_cli__say("kvshard: transfer: %s: %s", s->name, err->message);
}

/* Read, override and plan one side under the kvshard profile: heads,
 * owners, stages and ranks are the same under every profile, and the map
 * reads nothing else. */
static int plan_side(side *s, kvshard_cli__inputs *inputs)
{
    kvshard_error err;
    if (kvshard_deployment_load_file(&s->dep, s->path, NULL, &err) != KVSHARD_OK) {
        say_side(s, &err);
        return EXIT_INVALID;
    }
    kvshard_cli__input_add(inputs, "a plan's file", s->path);
    if (kvshard_deployment_set(s->dep, "engine", "kvshard", "transfer", &err) != KVSHARD_OK) {
        say_side(s, &err);
        return EXIT_INVALID;
    }
    kvshard_args_options ao = KVSHARD_ARGS_OPTIONS_INIT;
    ao.on_file = kvshard_cli__input_read;
    ao.on_file_user = inputs;
    if (kvshard_deployment_apply_args_with(s->dep, s->flag_count, (const char **)s->flags, &ao,
                                           &err) != KVSHARD_OK) {
        say_side(s, &err);
        if (err.code == KVSHARD_EIO)
            return EXIT_INVALID;
        kvshard_cli__say("Try 'kvshard help transfer'.");
        return EXIT_USAGE;
    }
    if (kvshard_deployment_plan(&s->plan, s->dep, &err) != KVSHARD_OK) {
        say_side(s, &err);
        bool value = err.code == KVSHARD_ETYPE || err.code == KVSHARD_ERANGE;
        return value && strncmp(err.source, "command line", 12) == 0 ? EXIT_USAGE : EXIT_INVALID;
    }
    return 0;
}

/* n: --context_length, else P's context_length, else D's; 0 for none. */
static uint64_t request_length(const request *r)
{
    if (r->context_length)
        return r->context_length;
    for (int i = 0; i < 2; i++) {
        kvshard_options o = KVSHARD_OPTIONS_INIT;
        if (kvshard_plan_options(&o, r->sides[i].plan) == KVSHARD_OK && o.context_length)
            return o.context_length;
    }
    return 0;
}

static int run(request *r, kvshard_cli__inputs *inputs)
{
    int status = 0;
    for (int i = 0; i < 2 && status == 0; i++)
        status = plan_side(&r->sides[i], inputs);
    if (status)
        return status;
    kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
    o.p_replica = r->replica[0];
    o.d_replica = r->replica[1];
    o.tokens = request_length(r);
    o.nic = r->nic;
    kvshard_transfer *t = NULL;
    kvshard_error err;
    if (kvshard_transfer_create(&t, r->sides[0].plan, r->sides[1].plan, &o, NULL, &err) !=
        KVSHARD_OK) {
        kvshard_cli__say("kvshard: transfer: %s", err.message);
        if (strncmp(err.message, "transfer_nic", 12) == 0) {
            kvshard_cli__say("Try 'kvshard help transfer'.");
            return EXIT_USAGE;
        }
        return EXIT_INVALID;
    }
    kvshard_cli__output out;
    status = kvshard_cli__output_prepare(&out, r->output, inputs);
    if (status == 0)
        status = kvshard_cli__output_open(&out);
    if (status == 0)
        status = kvshard_cli__output_finish(
            &out, r->json ? kvshard_transfer_write_json(t, kvshard_cli__output_write, &out)
                          : kvshard_transfer_write_text(t, kvshard_cli__output_write, &out));
    kvshard_cli__output_free(&out);
    kvshard_transfer_free(t);
    return status;
}

int kvshard_cli__transfer(int argc, char **argv, kvshard_cli__inputs *inputs)
{
    request r;
    memset(&r, 0, sizeof r);
    r.sides[0].name = "P";
    r.sides[1].name = "D";
    for (int i = 0; i < 2; i++) {
        r.sides[i].flags = calloc((size_t)argc + 1, sizeof *r.sides[i].flags);
        if (!r.sides[i].flags) {
            free(r.sides[0].flags);
            kvshard_cli__say("kvshard: out of memory");
            return EXIT_INVALID;
        }
    }
    int status = parse(&r, argc, argv);
    if (status == 0)
        status = run(&r, inputs);
    for (int i = 0; i < 2; i++) {
        for (size_t k = 0; k < r.sides[i].flag_count; k++)
            free(r.sides[i].flags[k]);
        free(r.sides[i].flags);
        kvshard_plan_free(r.sides[i].plan);
        kvshard_deployment_free(r.sides[i].dep);
    }
    return status;
}
