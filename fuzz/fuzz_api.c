/* libFuzzer target for the API an engine calls. The first CONTROL_BYTES of
 * the input choose what to do; the rest is a deployment or model config:
 * overrides through kvshard_deployment_set and kvshard_options_set, gflags
 * arguments, kvshard_plan_create with raw option structs, every query in
 * and out of range, block counts from odd budgets, writers that fail after
 * N bytes, and comparisons. A crash, a sanitizer report, a leak, or an
 * error record that disagrees with a call's status is a finding. */
#include "kvshard/explore.h"
#include "kvshard/kvshard.h"
#include "kvshard/output.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CONTROL_BYTES 32

typedef struct control {
    const uint8_t *bytes;
    size_t next;
} control;

static uint8_t byte(control *c)
{
    return c->bytes[c->next++ % CONTROL_BYTES];
}

static uint32_t word(control *c)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v = v << 8 | byte(c);
    return v;
}

static int check(int rc, const kvshard_error *err)
{
    if (rc != err->code || (rc != KVSHARD_OK && err->message[0] == '\0') ||
        memchr(err->message, '\0', sizeof err->message) == NULL)
        abort();
    return rc;
}

/* Output that fails after `budget` bytes, and must then never be called. */
typedef struct sink {
    size_t budget;
    size_t taken;
    bool failed;
} sink;

static int write_some(void *user, const char *text, size_t len)
{
    (void)text;
    sink *s = user;
    if (s->failed)
        abort(); /* a writer went on after a failed write */
    if (s->taken + len > s->budget) {
        s->failed = true;
        return -1;
    }
    s->taken += len;
    return 0;
}

static const char *const keys[] = {
    "world_size",         "dp_size",        "cp_size",          "enable_layerwise_split",
    "layerwise_split_size", "ownership",    "is_draft",         "engine",
    "kv_cache_dtype",     "state_dtype",    "block_size",       "memory_per_rank",
    "max_seqs",           "num_speculative_tokens", "scratch_layers", "context_length",
    "enable_prefix_cache", "max_linear_state_cache_slots", "device_memory_total",
    "device_memory_free", "max_memory_utilization", "max_cache_size", "max_seqs_per_batch",
    "unknown_key",        "pp_size",        "pp_partition",     "pp_partition_rule",
    "rank_layout",        "sweep_pp",
};

static const char *const values[] = {
    "0",     "1",     "2",          "3",       "4",      "8",       "16",      "65536",
    "-1",    "true",  "no",         "ordinal", "global", "contiguous", "xllm", "kvshard",
    "fp8",   "int8",  "fp32",       "auto",    "20GiB",  "1KiB",    "0.9",     "1.5",
    "32768", "",      "18446744073709551616", "007", "1e3", "\x1b[2J", "\xff", "128",
    "2,2",   "1,3",   "31,30",      "0,4",     "vllm",   "sglang",  "trtllm",  "even",
};

#define COUNT(a) (sizeof(a) / sizeof(a)[0])

static void exercise_plan(const kvshard_plan *plan, control *c)
{
    uint32_t R = kvshard_plan_num_ranks(plan), L = kvshard_plan_num_layers(plan);
    uint32_t P = kvshard_plan_pp_size(plan);
    kvshard_options settled = KVSHARD_OPTIONS_INIT;
    (void)kvshard_plan_options(&settled, plan);
    for (int i = 0; i < 8; i++) {
        uint32_t r = word(c) % (R + 2), layer = word(c) % (L + 4);
        uint32_t s = word(c) % (P + 2), g = word(c) % (settled.world_size + 2);
        kvshard_stage_info info = KVSHARD_STAGE_INFO_INIT;
        (void)kvshard_plan_stage(&info, plan, s);
        uint32_t at;
        (void)kvshard_plan_layer_stage(&at, plan, layer);
        kvshard_rank_position pos = KVSHARD_RANK_POSITION_INIT;
        (void)kvshard_plan_locate(&pos, plan, g);
        (void)kvshard_plan_global_rank(&at, plan, byte(c) % 3, s, byte(c) % 3, word(c) % (R + 1));
        char partition[16];
        (void)kvshard_plan_pp_partition(partition, byte(c) % sizeof partition, plan);
        (void)kvshard_plan_owns(plan, r, layer);
        (void)kvshard_plan_stores_kv(plan, r, layer);
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        (void)kvshard_plan_layer_storage(&st, plan, r, layer);
        const uint32_t *layers;
        size_t count;
        (void)kvshard_plan_rank_layers(&layers, &count, plan, r);
        kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
        (void)kvshard_plan_rank_memory(&m, plan, r);
        int32_t owner;
        (void)kvshard_plan_layer_owner(&owner, plan, layer);
        char line[64];
        (void)kvshard_plan_describe_rank(line, byte(c) % sizeof line, plan, r);
        (void)kvshard_plan_split_position(NULL, NULL, plan, r);
    }
    kvshard_budget b = KVSHARD_BUDGET_INIT;
    kvshard_blocks out = KVSHARD_BLOCKS_INIT;
    kvshard_error err;
    b.memory_per_rank = (uint64_t)word(c) << (byte(c) % 32);
    b.reserved_bytes = word(c) % 4096;
    b.extra_bytes_per_block = byte(c);
    b.context_length = word(c) % (KVSHARD_MAX_CONTEXT_LENGTH + 2);
    uint32_t rank = byte(c) & 1 ? KVSHARD_ALL_RANKS : word(c) % (R + 1);
    check(kvshard_plan_blocks_for(&out, plan, rank, &b, &err), &err);
    size_t budget = word(c) % 65536;
    sink s = {budget, 0, false};
    (void)kvshard_plan_write_json(plan, write_some, &s);
    s = (sink){budget, 0, false};
    (void)kvshard_plan_write_text(plan, write_some, &s);
    s = (sink){budget, 0, false};
    (void)kvshard_plan_write_svg(plan, write_some, &s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < CONTROL_BYTES)
        return 0;
    control c = {data, 0};
    const char *text = (const char *)data + CONTROL_BYTES;
    size_t len = size - CONTROL_BYTES;
    kvshard_error err;
    kvshard_deployment *dep = NULL;
    if (check(kvshard_deployment_load_string(&dep, text, len, "fuzz", FUZZ_MODEL_DIR, NULL, &err),
              &err) != KVSHARD_OK)
        return 0;

    /* Overrides, one at a time and as gflags arguments. */
    kvshard_options opts = KVSHARD_OPTIONS_INIT;
    for (int i = 0; i < 4; i++) {
        const char *key = keys[byte(&c) % COUNT(keys)];
        const char *value = values[byte(&c) % COUNT(values)];
        check(kvshard_deployment_set(dep, key, value, byte(&c) & 1 ? "fuzz" : NULL, &err), &err);
        check(kvshard_options_set(&opts, key, value, NULL, &err), &err);
    }
    char flags[3][96];
    const char *args[3];
    for (int i = 0; i < 3; i++) {
        uint8_t form = byte(&c) % 3;
        const char *key = keys[byte(&c) % COUNT(keys)];
        const char *value = values[byte(&c) % COUNT(values)];
        if (form == 0)
            snprintf(flags[i], sizeof flags[i], "--%s=%s", key, value);
        else if (form == 1)
            snprintf(flags[i], sizeof flags[i], "--no%s", key);
        else
            snprintf(flags[i], sizeof flags[i], "-%s", key);
        args[i] = flags[i];
    }
    check(kvshard_deployment_apply_args(dep, 3, args, byte(&c) & 1, &err), &err);

    /* The deployment's plan (kept small enough to write). */
    kvshard_options dep_opts = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&dep_opts, dep);
    if (dep_opts.world_size <= 256) {
        kvshard_plan *plan = NULL;
        if (check(kvshard_deployment_plan(&plan, dep, &err), &err) == KVSHARD_OK &&
            kvshard_plan_num_layers(plan) <= 4096) {
            exercise_plan(plan, &c);
            kvshard_comparison *cmp = NULL;
            if (check(kvshard_deployment_compare(&cmp, dep, &err), &err) == KVSHARD_OK) {
                sink s = {word(&c) % 65536, 0, false};
                (void)kvshard_comparison_write_json(cmp, write_some, &s);
                s = (sink){word(&c) % 65536, 0, false};
                (void)kvshard_comparison_write_text(cmp, write_some, &s);
                s = (sink){word(&c) % 65536, 0, false};
                (void)kvshard_report_write_html(plan, cmp, NULL, write_some, &s);
                (void)kvshard_comparison_row_at(cmp, word(&c));
            }
            kvshard_comparison_free(cmp);
        }
        kvshard_plan_free(plan);
    }

    /* Raw option structs, with fields the parsers would never produce. */
    kvshard_options raw = KVSHARD_OPTIONS_INIT;
    raw.world_size = word(&c) % 300;
    raw.dp_size = byte(&c) % 5;
    raw.cp_size = byte(&c) % 3;
    raw.layerwise_split_size = byte(&c) % 9;
    raw.enable_layerwise_split = byte(&c) & 1;
    raw.ownership = (kvshard_ownership)((int)(byte(&c) % 6) - 2);
    raw.engine = (kvshard_engine)(byte(&c) % 5); /* four profiles and one value none has */
    raw.kv_cache_dtype = (kvshard_dtype)(byte(&c) % 7);
    raw.state_dtype = (kvshard_dtype)(byte(&c) % 7);
    raw.block_size = word(&c) % (KVSHARD_MAX_BLOCK_SIZE + 2);
    raw.memory_per_rank = (uint64_t)word(&c) << (byte(&c) % 40);
    raw.max_seqs = word(&c) % 100000;
    raw.context_length = word(&c);
    raw.pp_size = byte(&c) % 6;
    raw.pp_partition_rule = (kvshard_pp_rule)((int)(byte(&c) % 8) - 2);
    raw.rank_layout = (kvshard_rank_layout)((int)(byte(&c) % 7) - 2);
    (void)byte(&c); /* the byte of sweep_pp, now a compare option: the corpus keeps its reading */
    /* An explicit partition of any length, entries from the input. */
    uint32_t partition[6];
    raw.pp_partition_count = byte(&c) % 7;
    for (uint32_t i = 0; i < raw.pp_partition_count; i++)
        partition[i] = word(&c) % 64;
    raw.pp_partition = byte(&c) & 1 ? partition : NULL;
    /* Settings by key from the input: any key, any text. */
    kvshard_settings *settings = NULL;
    if (kvshard_settings_create(&settings, NULL, &err) == KVSHARD_OK) {
        size_t n = byte(&c) % 4;
        for (size_t i = 0; i < n; i++) {
            kvshard_setting_info info = KVSHARD_SETTING_INFO_INIT;
            size_t count = kvshard_setting_count();
            if (count && kvshard_setting_info_at(&info, byte(&c) % count) == KVSHARD_OK) {
                char value[32];
                snprintf(value, sizeof value, "%u", word(&c));
                (void)kvshard_settings_set(settings, info.key, value, NULL, &err);
            }
        }
        raw.settings = settings;
    }
    if (byte(&c) == 0)
        raw.size = byte(&c);
    kvshard_plan *plan = NULL;
    const kvshard_model *model = kvshard_deployment_model(dep);
    if (kvshard_model_num_layers(model) <= 4096 &&
        check(kvshard_plan_create(&plan, model, &raw, NULL, &err), &err) == KVSHARD_OK)
        exercise_plan(plan, &c);
    kvshard_plan_free(plan);
    kvshard_settings_free(settings);
    kvshard_deployment_free(dep);
    return 0;
}
