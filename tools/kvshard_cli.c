/* kvshard: the command-line front end of libkvshard.
 *
 * Exit status: 0 success, 1 invalid input (a config or a plan that cannot be
 * built), 2 bad usage. */
#include "kvshard/kvshard.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EXIT_INVALID = 1, EXIT_USAGE = 2 };

typedef enum format { FORMAT_TEXT, FORMAT_JSON } format;

typedef struct cli {
    const char *command;
    const char *config;
    format fmt;
    const char *flags[64]; /* "--key=value" overrides, in order */
    size_t flag_count;
} cli;

static const char usage_text[] =
    "usage: kvshard plan CONFIG [--key=value ...] [--format=text|json]\n"
    "       kvshard compare CONFIG [--key=value ...] [--format=text|json]\n"
    "       kvshard --help | --version\n"
    "\n"
    "CONFIG is a deployment YAML file or a model's config.json.\n"
    "  plan     which TP rank stores the KV cache of each full-attention layer,\n"
    "           with per-rank memory and KV block capacity\n"
    "  compare  every layerwise split size that divides the attention TP size,\n"
    "           under both ownership rules, and the one that fits the most blocks\n"
    "\n"
    "Flags take the deployment keys and override the file:\n"
    "  --world_size=N --dp_size=N --cp_size=N\n"
    "  --enable_layerwise_split=true|false --layerwise_split_size=N\n"
    "  --ownership=ordinal|global --is_draft=true|false\n"
    "  --kv_cache_dtype=auto|bf16|fp16|fp8 --block_size=N\n"
    "  --memory_per_rank=BYTES (or with KiB, MiB, GiB, TiB) --max_seqs=N\n"
    "  --num_speculative_tokens=N --scratch_layers=N\n"
    "\n"
    "Exit status: 0 success, 1 invalid input, 2 bad usage.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "kvshard: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\nTry 'kvshard --help'.\n");
    return EXIT_USAGE;
}

static void print_error(const kvshard_error *err)
{
    if (err->line > 0)
        fprintf(stderr, "%s:%d:%d: %s\n", err->source, err->line, err->column, err->message);
    else if (err->source[0])
        fprintf(stderr, "%s: %s\n", err->source, err->message);
    else
        fprintf(stderr, "kvshard: %s\n", err->message);
}

/* ---- human units ---------------------------------------------------------- */

static const char *human_bytes(char *buf, size_t cap, uint64_t bytes)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

/* 3159888 -> "3,159,888" */
static const char *grouped(char *buf, size_t cap, uint64_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%" PRIu64, n);
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < cap; i++) {
        if (i > 0 && (len - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* ---- plan text -------------------------------------------------------------- */

static int digits_of(uint32_t n)
{
    int d = 1;
    while (n >= 10) {
        n /= 10;
        d++;
    }
    return d;
}

static void print_layer_map(const kvshard_plan *plan)
{
    uint32_t L = kvshard_plan_num_layers(plan);
    uint32_t S = kvshard_plan_effective_split_size(plan);
    int width = 1 + digits_of(S - 1);
    printf("\nlayer map  (L linear attention, W sliding window, F<n> full attention stored by "
           "split rank n, F* full attention on every rank)\n");
    for (uint32_t i = 0; i < L; i++) {
        if (i % 10 == 0)
            printf("%s%6" PRIu32 " |", i ? "\n" : "", i);
        kvshard_layer_kind kind;
        int32_t owner;
        kvshard_plan_layer_kind(&kind, plan, i);
        kvshard_plan_layer_owner(&owner, plan, i);
        char cell[16];
        if (kind == KVSHARD_LAYER_LINEAR_ATTENTION)
            snprintf(cell, sizeof cell, "L");
        else if (kind == KVSHARD_LAYER_SLIDING_ATTENTION)
            snprintf(cell, sizeof cell, "W");
        else if (owner == KVSHARD_OWNER_ALL)
            snprintf(cell, sizeof cell, "F*");
        else
            snprintf(cell, sizeof cell, "F%" PRId32, owner);
        bool row_end = i % 10 == 9 || i + 1 == L;
        printf(" %-*s", row_end ? 0 : width, cell);
    }
    printf("\n");
}

/* A list of at most `shown` numbers, then the count. */
static void print_list(const uint32_t *items, size_t count, size_t shown)
{
    for (size_t i = 0; i < count && i < shown; i++)
        printf("%s%" PRIu32, i ? " " : "", items[i]);
    if (count > shown)
        printf(" ... (%zu in all)", count);
}

static void print_split_ranks(const kvshard_plan *plan)
{
    uint32_t T = kvshard_plan_attn_tp_size(plan);
    uint32_t S = kvshard_plan_effective_split_size(plan);
    printf("\nsplit rank  TP ranks            owned  full-attention layers stored\n");
    for (uint32_t s = 0; s < S; s++) {
        char ranks[64];
        uint32_t n = T / S;
        if (n == 1)
            snprintf(ranks, sizeof ranks, "%" PRIu32, s);
        else if (n == 2)
            snprintf(ranks, sizeof ranks, "%" PRIu32 ", %" PRIu32, s, s + S);
        else
            snprintf(ranks, sizeof ranks, "%" PRIu32 ", %" PRIu32 ", ... %" PRIu32 " (%" PRIu32 ")",
                     s, s + S, T - S + s, n);
        const uint32_t *layers;
        size_t count;
        kvshard_plan_rank_layers(&layers, &count, plan, s);
        printf("%-11" PRIu32 " %-19s %-6zu ", s, ranks, count);
        print_list(layers, count, 16);
        printf("\n");
    }
}

static void print_memory(const kvshard_plan *plan)
{
    uint32_t T = kvshard_plan_attn_tp_size(plan);
    kvshard_capacity cap = KVSHARD_CAPACITY_INIT;
    kvshard_uniform uni = KVSHARD_UNIFORM_INIT;
    kvshard_plan_capacity(&cap, plan);
    kvshard_plan_uniform(&uni, plan);
    char a[32], b[32], c[32], d[32], e[32], f[32];
    printf("\nmemory per TP rank (block_size %" PRIu32 " tokens)\n", cap.block_size);
    printf("TP rank  KV/token     scratch/token  draft/token  per block    state/seq    "
           "blocks\n");
    const uint32_t shown = 64;
    for (uint32_t r = 0; r < T && r < shown; r++) {
        kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
        kvshard_plan_rank_memory(&m, plan, r);
        printf("%-8" PRIu32 " %-12s %-14s %-12s %-12s %-12s %s\n", r,
               human_bytes(a, sizeof a, m.kv_bytes_per_token),
               human_bytes(b, sizeof b, m.scratch_bytes_per_token),
               human_bytes(c, sizeof c, m.draft_bytes_per_token),
               human_bytes(d, sizeof d, m.bytes_per_block),
               human_bytes(e, sizeof e, m.state_bytes_per_seq),
               m.has_num_blocks ? grouped(f, sizeof f, m.num_blocks) : "-");
    }
    if (T > shown)
        printf("... %" PRIu32 " more TP ranks (all figures: --format=json)\n", T - shown);

    kvshard_rank_memory r0 = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&r0, plan, 0);
    if (!cap.memory_per_rank) {
        printf("capacity   no memory_per_rank given: pass --memory_per_rank=20GiB for blocks\n");
    } else {
        uint64_t reserve = (uint64_t)cap.max_seqs * r0.state_bytes_per_seq;
        printf("capacity   %s per rank, %s reserved for the state of %" PRIu32 " sequences",
               human_bytes(a, sizeof a, cap.memory_per_rank), human_bytes(b, sizeof b, reserve),
               cap.max_seqs);
        if (cap.has_num_blocks)
            printf(": %s blocks = %s tokens\n", grouped(c, sizeof c, cap.num_blocks),
                   grouped(d, sizeof d, cap.max_tokens));
        else
            printf("; no KV bytes per block\n");
    }
    printf("uniform    without the split: %s KV per token, %s per block",
           human_bytes(a, sizeof a, uni.kv_bytes_per_token),
           human_bytes(b, sizeof b, uni.bytes_per_block));
    if (cap.has_num_blocks && uni.has_num_blocks) {
        printf(", %s blocks", grouped(c, sizeof c, uni.num_blocks));
        if (uni.num_blocks)
            printf(": the plan holds %.2fx the blocks",
                   (double)cap.num_blocks / (double)uni.num_blocks);
    }
    printf("\n");
}

static void print_warnings(const kvshard_plan *plan)
{
    size_t n = kvshard_plan_warning_count(plan);
    printf("\nwarnings%s\n", n ? "" : "   none");
    for (size_t i = 0; i < n; i++) {
        kvshard_warning_code code;
        const char *message;
        kvshard_plan_warning(&code, &message, plan, i);
        printf("  %s: %s\n", kvshard_warning_name(code), message);
    }
}

static void print_plan_text(const kvshard_plan *plan, const kvshard_model *model,
                            const kvshard_options *o)
{
    const char *type = kvshard_model_type(model);
    printf("model      %s: %" PRIu32 " layers (%" PRIu32 " full attention, %" PRIu32
           " linear attention, %" PRIu32 " sliding window), %s, %" PRIu32 " draft layers\n",
           type[0] ? type : "(no model_type)", kvshard_model_num_layers(model),
           kvshard_model_count(model, KVSHARD_LAYER_FULL_ATTENTION),
           kvshard_model_count(model, KVSHARD_LAYER_LINEAR_ATTENTION),
           kvshard_model_count(model, KVSHARD_LAYER_SLIDING_ATTENTION),
           kvshard_model_attention(model) == KVSHARD_ATTENTION_MLA ? "MLA" : "GQA",
           kvshard_model_num_draft_layers(model));
    printf("parallel   world_size %" PRIu32 " = dp %" PRIu32 " x cp %" PRIu32
           " x attention TP %" PRIu32 "; layerwise split %s, size %" PRIu32 " (effective %" PRIu32
           "), %s rule; KV replication %" PRIu32 "\n",
           o->world_size, o->dp_size, o->cp_size, kvshard_plan_attn_tp_size(plan),
           o->enable_layerwise_split ? "on" : "off", o->layerwise_split_size,
           kvshard_plan_effective_split_size(plan), kvshard_ownership_name(o->ownership),
           kvshard_plan_replication_factor(plan));
    print_layer_map(plan);
    print_split_ranks(plan);
    print_memory(plan);
    print_warnings(plan);
    printf("digest     %016" PRIx64 "\n", kvshard_plan_digest(plan));
}

/* ---- compare text ------------------------------------------------------------ */

static void print_compare_text(const kvshard_comparison *cmp, const kvshard_options *o)
{
    char a[32], b[32], c[32];
    printf("split sizes for world_size %" PRIu32 " (dp %" PRIu32 ", cp %" PRIu32 ")", o->world_size,
           o->dp_size, o->cp_size);
    if (o->memory_per_rank)
        printf(", memory_per_rank %s, max_seqs %" PRIu32 "\n",
               human_bytes(a, sizeof a, o->memory_per_rank), o->max_seqs);
    else
        printf(" -- no memory_per_rank: gain compares bytes per block\n");
    printf("\n    S  rule     owned  max KV/token  blocks        max tokens      gain\n");
    size_t best = kvshard_comparison_recommended(cmp);
    for (size_t i = 0; i < kvshard_comparison_row_count(cmp); i++) {
        const kvshard_comparison_row *r = kvshard_comparison_row_at(cmp, i);
        printf("%s %4" PRIu32 "  %-8s ", i == best ? ">" : " ", r->layerwise_split_size,
               kvshard_ownership_name(r->ownership));
        if (r->error) {
            printf("error: %s\n", r->error_message);
            continue;
        }
        char owned[32];
        snprintf(owned, sizeof owned, "%" PRIu32 "-%" PRIu32, r->min_owned_layers,
                 r->max_owned_layers);
        char gain[16];
        if (isinf(r->gain)) /* the unsplit plan fits no block */
            snprintf(gain, sizeof gain, "  new");
        else
            snprintf(gain, sizeof gain, "%5.2fx", r->gain);
        printf("%-6s %-13s %-13s %-15s %s ", owned,
               human_bytes(a, sizeof a, r->max_kv_bytes_per_token),
               r->has_num_blocks ? grouped(b, sizeof b, r->num_blocks) : "-",
               r->has_num_blocks ? grouped(c, sizeof c, r->max_tokens) : "-", gain);
        int bar = r->gain > 4.0 ? 40 : (int)(r->gain * 10.0 + 0.5);
        for (int k = 0; k < bar; k++)
            putchar('#');
        for (unsigned code = 0; code < 32; code++) {
            if (r->warnings & (1u << code))
                printf(" %s", kvshard_warning_name((kvshard_warning_code)code));
        }
        printf("\n");
    }
    const kvshard_comparison_row *rec = kvshard_comparison_row_at(cmp, best);
    printf("\nrecommended: --enable_layerwise_split=%s --layerwise_split_size=%" PRIu32
           " --ownership=%s\n",
           rec->layerwise_split_size > 1 ? "true" : "false", rec->layerwise_split_size,
           kvshard_ownership_name(rec->ownership));
}

/* ---- driver -------------------------------------------------------------------- */

static int write_stdout(void *user, const char *data, size_t len)
{
    (void)user;
    return fwrite(data, 1, len, stdout) == len ? 0 : -1;
}

static int parse_args(cli *c, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (strcmp(arg, "--version") == 0) {
            printf("kvshard %s\n", KVSHARD_VERSION_STRING);
            exit(0);
        }
        if (strncmp(arg, "--format=", 9) == 0) {
            if (strcmp(arg + 9, "text") == 0)
                c->fmt = FORMAT_TEXT;
            else if (strcmp(arg + 9, "json") == 0)
                c->fmt = FORMAT_JSON;
            else
                return usage_error("--format takes text or json, not '%s'", arg + 9);
        } else if (strncmp(arg, "--", 2) == 0) {
            if (c->flag_count == sizeof c->flags / sizeof c->flags[0])
                return usage_error("too many flags (from '%s' on)", arg);
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
        return usage_error("%s", "missing command (plan or compare)");
    if (strcmp(c->command, "plan") != 0 && strcmp(c->command, "compare") != 0)
        return usage_error("unknown command '%s' (expected plan or compare)", c->command);
    if (!c->config)
        return usage_error("%s", "missing CONFIG file");
    return 0;
}

/* Split "--key=value" into its key and value; a bare --key means "true". */
static int split_flag(char *key, size_t cap, const char **value, const char *flag)
{
    const char *name = flag + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    if (len == 0 || len >= cap)
        return usage_error("unknown flag '%s'", flag);
    memcpy(key, name, len);
    key[len] = '\0';
    *value = eq ? eq + 1 : "true";
    return 0;
}

/* A flag kvshard_options_set() rejects is a usage error. */
static int flag_error(const char *flag, const kvshard_error *err)
{
    if (err->code == KVSHARD_EUNKNOWNKEY)
        return usage_error("unknown flag '%s'", flag);
    fprintf(stderr, "kvshard: %s: %s\n", flag, err->message);
    return EXIT_USAGE;
}

/* Check every flag before any file is read, so that a bad flag is reported
 * as bad usage (exit 2) whatever the state of the config file. */
static int check_flags(const cli *c)
{
    kvshard_options scratch = KVSHARD_OPTIONS_INIT;
    for (size_t i = 0; i < c->flag_count; i++) {
        char key[40];
        const char *value;
        int rc = split_flag(key, sizeof key, &value, c->flags[i]);
        if (rc)
            return rc;
        kvshard_error err;
        if (kvshard_options_set(&scratch, key, value, &err) != KVSHARD_OK)
            return flag_error(c->flags[i], &err);
    }
    return 0;
}

/* Apply one --key=value flag to the deployment. */
static int apply_flag(kvshard_deployment *dep, const char *flag)
{
    char key[40];
    const char *value;
    int rc = split_flag(key, sizeof key, &value, flag);
    if (rc)
        return rc;
    char origin[64];
    snprintf(origin, sizeof origin, "command line --%s", key);
    kvshard_error err;
    if (kvshard_deployment_set(dep, key, value, origin, &err) != KVSHARD_OK)
        return flag_error(flag, &err);
    return 0;
}

int main(int argc, char **argv)
{
    cli c = {0};
    int rc = parse_args(&c, argc, argv);
    if (rc == 0)
        rc = check_flags(&c);
    if (rc)
        return rc;
    kvshard_error err;
    kvshard_deployment *dep = NULL;
    if (kvshard_deployment_load_file(&dep, c.config, NULL, &err) != KVSHARD_OK) {
        print_error(&err);
        return EXIT_INVALID;
    }
    for (size_t i = 0; i < c.flag_count && rc == 0; i++)
        rc = apply_flag(dep, c.flags[i]);
    if (rc) {
        kvshard_deployment_free(dep);
        return rc;
    }
    kvshard_options opts = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&opts, dep);
    int status = 0;
    if (strcmp(c.command, "plan") == 0) {
        kvshard_plan *plan = NULL;
        if (kvshard_deployment_plan(&plan, dep, &err) != KVSHARD_OK) {
            print_error(&err);
            status = EXIT_INVALID;
        } else if (c.fmt == FORMAT_JSON) {
            status = kvshard_plan_write_json(plan, write_stdout, NULL) ? EXIT_INVALID : 0;
        } else {
            print_plan_text(plan, kvshard_deployment_model(dep), &opts);
        }
        kvshard_plan_free(plan);
    } else {
        kvshard_comparison *cmp = NULL;
        if (kvshard_deployment_compare(&cmp, dep, &err) != KVSHARD_OK) {
            print_error(&err);
            status = EXIT_INVALID;
        } else if (c.fmt == FORMAT_JSON) {
            status = kvshard_comparison_write_json(cmp, write_stdout, NULL) ? EXIT_INVALID : 0;
        } else {
            print_compare_text(cmp, &opts);
        }
        kvshard_comparison_free(cmp);
    }
    kvshard_deployment_free(dep);
    if (fflush(stdout) != 0) {
        perror("kvshard: stdout");
        return EXIT_INVALID;
    }
    return status;
}
