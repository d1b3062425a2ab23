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
    const char *format; /* "text", "json" or "svg" */
    const char *output;
    uint64_t context_length; /* 0: the sides' */
    const char *nic;
    uint32_t replica[2];
    const char *engine;         /* NULL: every engine that judges transfers */
    const char *engine_version; /* NULL: the engine's default */
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

/* The engines that judge transfers, as the library lists them. */
static bool judging_engine(const char *name)
{
    kvshard_engine e;
    for (size_t i = 0; name && kvshard_transfer_judging_engine(&e, i) == KVSHARD_OK; i++)
        if (strcmp(kvshard_engine_name(e), name) == 0)
            return true;
    return false;
}

/* "a, b or c": the engines --engine takes. */
static const char *judging_names(void)
{
    static char names[96];
    size_t n = 0, count = 0;
    kvshard_engine e;
    while (kvshard_transfer_judging_engine(&e, count) == KVSHARD_OK)
        count++;
    names[0] = '\0';
    for (size_t i = 0; i < count && kvshard_transfer_judging_engine(&e, i) == KVSHARD_OK; i++)
        n += (size_t)snprintf(names + n, sizeof names - n, "%s%s",
                              i == 0           ? ""
                              : i + 1 == count ? " or "
                                               : ", ",
                              kvshard_engine_name(e));
    return names;
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

/* A valued flag given without its value (the last argument): "FLAG
 * needs WHAT", as --nic says; a value given empty is named ('') where it
 * is refused. */
static int needs_value(const char *flag, const char *what)
{
    char message[160];
    snprintf(message, sizeof message, "%s needs %s", flag, what);
    return usage("transfer_usage", message, NULL);
}

static int replica(uint32_t *out, const char *flag, const char *v)
{
    uint64_t n = 0;
    if (!v)
        return needs_value(flag, "a replica index from 0");
    if (!count(&n, v, 0, KVSHARD_MAX_RANKS)) {
        char message[96];
        snprintf(message, sizeof message, "%s takes a replica index from 0, not", flag);
        return usage("transfer_usage", message, v[0] ? v : "''");
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
            if (!v)
                return needs_value("--format", "text, json or svg");
            if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0 && strcmp(v, "svg") != 0)
                return usage("transfer_usage", "--format takes text, json or svg, not",
                             v[0] ? v : "''");
            r->format = v;
        } else if (strcmp(arg, "-o") == 0 || (v = value_of("--output", argc, argv, &i, &missing)) ||
                   missing) {
            bool short_flag = strcmp(arg, "-o") == 0;
            if (short_flag)
                v = i + 1 < argc ? argv[++i] : NULL;
            if (!v || !v[0])
                return needs_value(short_flag ? "-o" : "--output",
                                   "a file name (or - for standard output)");
            r->output = v;
        } else if ((v = value_of("--context_length", argc, argv, &i, &missing)) || missing) {
            /* The plan's range, so that every length a side plans is one
             * a request may have. */
            char what[64];
            snprintf(what, sizeof what, "a count of tokens from 1 to %u",
                     KVSHARD_MAX_CONTEXT_LENGTH);
            if (!v)
                return needs_value("--context_length", what);
            if (!count(&r->context_length, v, 1, KVSHARD_MAX_CONTEXT_LENGTH)) {
                char message[96];
                snprintf(message, sizeof message, "--context_length takes %s, not", what);
                return usage("transfer_usage", message, v[0] ? v : "''");
            }
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
        } else if ((v = value_of("--engine_version", argc, argv, &i, &missing)) || missing) {
            if (!v || !v[0])
                return usage("transfer_usage", "--engine_version needs a version", NULL);
            r->engine_version = v;
        } else if ((v = value_of("--engine", argc, argv, &i, &missing)) || missing) {
            if (!v)
                return needs_value("--engine", judging_names());
            if (!judging_engine(v)) {
                char message[160];
                snprintf(message, sizeof message, "--engine takes %s, not", judging_names());
                return usage("transfer_usage", message, v[0] ? v : "''");
            }
            r->engine = v;
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
    if (r->engine_version && !r->engine)
        return usage("transfer_usage", "--engine_version needs --engine", NULL);
    return 0;
}

/* `message` with each flag it names ("--KEY" after a space) written as
 * given on this side ("--d.KEY"). */
static const char *with_side_flags(char *buf, size_t cap, const char *message, char prefix)
{
    size_t n = 0;
    for (const char *m = message; *m && n + 3 < cap; m++) {
        bool flag = m[0] == '-' && m[1] == '-' && (m == message || m[-1] == ' ');
        buf[n++] = *m;
        if (flag) {
            buf[n++] = *++m;
            buf[n++] = prefix;
            buf[n++] = '.';
        }
    }
    buf[n < cap ? n : cap - 1] = '\0';
    return buf;
}

/* Print a library error about one side: "kvshard: transfer: D: ...". A key
 * the side's plan does not know is bad usage of transfer, named so. */
static void say_side(const side *s, const kvshard_error *err)
{
    /* A flag is named as it was given, with its side. */
    static const char flag_source[] = "command line --";
    size_t n = sizeof flag_source - 1;
    char prefix = s->name[0] == 'P' ? 'p' : 'd';
    char message[sizeof err->message + 64];
    if (strncmp(err->source, flag_source, n) == 0)
        kvshard_cli__say("kvshard: transfer: %s%s: command line --%c.%s: %s",
                         err->code == KVSHARD_EUNKNOWNKEY ? "transfer_usage: " : "", s->name,
                         prefix, err->source + n,
                         with_side_flags(message, sizeof message, err->message, prefix));
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

/* One side planned under `engine` for its verdict: the same deployment as
 * one stage of its TP size with the split off, which leave the engine's
 * block as it is. */
static int engine_plan(kvshard_plan **out, kvshard_error *err, side *s, const char *engine,
                       const char *version)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    (void)kvshard_plan_options(&o, s->plan);
    char world[16];
    snprintf(world, sizeof world, "%u", o.world_size / o.pp_size);
    const char *settings[][2] = {
        {"engine", engine}, {"engine_version", version},         {"world_size", world},
        {"pp_size", "1"},   {"enable_layerwise_split", "false"}, {"layerwise_split_size", "1"}};
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        if (!settings[i][1])
            continue;
        int rc = kvshard_deployment_set(s->dep, settings[i][0], settings[i][1], "transfer", err);
        if (rc != KVSHARD_OK)
            return rc;
    }
    return kvshard_deployment_plan(out, s->dep, err);
}

/* The verdict of each engine asked, kept with the transfer. A profile that
 * does not cover the model gives "unsupported", and so, when no --engine
 * names it, does one that cannot plan a side for another reason (an input
 * only that engine needs): the map and the other engines' verdicts stand.
 * A version that is not one is the command's error. */
static int judge(kvshard_transfer *t, request *r)
{
    kvshard_engine e;
    for (size_t i = 0; kvshard_transfer_judging_engine(&e, i) == KVSHARD_OK; i++) {
        const char *name = kvshard_engine_name(e);
        if (r->engine && strcmp(r->engine, name) != 0)
            continue;
        kvshard_plan *plans[2] = {NULL, NULL};
        kvshard_error err;
        int rc = KVSHARD_OK, s = 0;
        for (; s < 2 && rc == KVSHARD_OK; s++)
            rc = engine_plan(&plans[s], &err, &r->sides[s], name, r->engine_version);
        const char *version_error = rc ? strstr(err.message, "engine_version_") : NULL;
        if (rc == KVSHARD_OK)
            rc = kvshard_transfer_judge(t, plans[0], plans[1], &err);
        else if (!version_error && (!r->engine || (rc == KVSHARD_EPROFILE &&
                                                   strstr(err.message, "engine_unsupported")))) {
            /* The call clears err before it reads the reason: a copy. */
            char reason[sizeof err.message];
            snprintf(reason, sizeof reason, "%s", err.message);
            rc = kvshard_transfer_judge_unsupported(t, e, r->engine_version, reason, &err);
        }
        kvshard_plan_free(plans[0]);
        kvshard_plan_free(plans[1]);
        if (version_error) {
            kvshard_cli__say("kvshard: transfer: %s", version_error);
            return strncmp(version_error, "engine_version_invalid", 22) == 0 ? EXIT_USAGE
                                                                             : EXIT_INVALID;
        }
        if (rc != KVSHARD_OK) {
            say_side(&r->sides[s - 1], &err);
            return EXIT_INVALID;
        }
    }
    return 0;
}

/* With --engine, that engine's refusal: its codes on standard error. */
static bool refused(const kvshard_transfer *t, const request *r)
{
    kvshard_transfer_verdict v = KVSHARD_TRANSFER_VERDICT_INIT;
    if (!r->engine || kvshard_transfer_verdict_at(&v, t, 0) != KVSHARD_OK ||
        strcmp(v.verdict, "refused") != 0)
        return false;
    char codes[256];
    size_t n = 0;
    codes[0] = '\0';
    for (size_t i = 0; i < v.reason_count && n < sizeof codes; i++)
        n +=
            (size_t)snprintf(codes + n, sizeof codes - n, "%s%s", i ? ", " : "", v.reason_codes[i]);
    kvshard_cli__say("kvshard: transfer: transfer_refused: %s %s refuses the pair (%s)", r->engine,
                     v.version, codes);
    return true;
}

static int write_document(const kvshard_transfer *t, const char *format, kvshard_cli__output *out)
{
    if (strcmp(format, "json") == 0)
        return kvshard_transfer_write_json(t, kvshard_cli__output_write, out);
    if (strcmp(format, "svg") == 0)
        return kvshard_transfer_write_svg(t, kvshard_cli__output_write, out);
    return kvshard_transfer_write_text(t, kvshard_cli__output_write, out);
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
    status = judge(t, r);
    if (status) {
        kvshard_transfer_free(t);
        return status;
    }
    if (strcmp(r->format, "svg") == 0 && !o.tokens) {
        kvshard_transfer_free(t);
        return usage("transfer_usage",
                     "--format=svg draws each edge's bytes for a request and needs its length: "
                     "--context_length, or a context_length on a side",
                     NULL);
    }
    kvshard_cli__output out;
    status = kvshard_cli__output_prepare(&out, r->output, inputs);
    if (status == 0)
        status = kvshard_cli__output_open(&out);
    if (status == 0)
        status = kvshard_cli__output_finish(&out, write_document(t, r->format, &out));
    kvshard_cli__output_free(&out);
    if (status == 0 && refused(t, r))
        status = EXIT_INVALID;
    kvshard_transfer_free(t);
    return status;
}

int kvshard_cli__transfer(int argc, char **argv, kvshard_cli__inputs *inputs)
{
    request r;
    memset(&r, 0, sizeof r);
    r.sides[0].name = "P";
    r.sides[1].name = "D";
    r.format = "text";
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
