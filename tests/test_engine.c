/* What an engine uses at init: per-layer storage, the layout digest, models
 * from a description, gflags-style arguments and flag files, block counts,
 * the log line. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "test_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static kvshard_deployment *load_example(const char *name)
{
    char *path = tu_example_path(name);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    return dep;
}

static kvshard_plan *plan_of(const kvshard_deployment *dep)
{
    kvshard_plan *p = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    return p;
}

static kvshard_layer_storage storage(const kvshard_plan *p, uint32_t r, uint32_t layer)
{
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&st, p, r, layer), KVSHARD_OK);
    return st;
}

/* ---- per-layer storage ----------------------------------------------------------------- */

/* The seed, TP 4 split 2 ordinal, 2 KV heads: head 0 on ranks 0 and 1,
 * head 1 on ranks 2 and 3. A split group is one head's two replicas, so an
 * owner holds one head: 2 x 1 x 256 x 2 = 1024 B/token per layer.
 * Layer 3 (KV ordinal 0) is split rank 0's: ranks 0 and 2 store it (slot
 * 0, heads 0 and 1); ranks 1 and 3 receive it from ranks 0 and 2.
 * Layer 39 is split rank 1's fifth (slot 4). Linear layer 0 is state slot 0
 * everywhere, layer 2 slot 2, with 16097280 / 30 = 536576 B/seq each. */
static void test_storage_seed(void **state)
{
    (void)state;
    kvshard_deployment *dep = load_example("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_plan *p = plan_of(dep);
    kvshard_layer_storage st = storage(p, 0, 3);
    assert_int_equal(st.kind, KVSHARD_LAYER_FULL_ATTENTION);
    assert_true(st.stores_kv);
    assert_int_equal(st.kv_slot, 0);
    assert_int_equal(st.state_slot, -1);
    assert_int_equal(st.kv_head_first, 0);
    assert_int_equal(st.kv_head_count, 1);
    assert_int_equal(st.kv_bytes_per_token, 1024);
    assert_int_equal(st.owner_plan_rank, 0);
    st = storage(p, 2, 3);
    assert_true(st.stores_kv);
    assert_int_equal(st.kv_head_first, 1);
    assert_int_equal(st.owner_plan_rank, 2);
    st = storage(p, 1, 3);
    assert_false(st.stores_kv);
    assert_int_equal(st.kv_slot, -1);
    assert_int_equal(st.kv_head_count, 0);
    assert_int_equal(st.kv_bytes_per_token, 0);
    assert_int_equal(st.owner_plan_rank, 0);
    assert_int_equal(storage(p, 3, 3).owner_plan_rank, 2);
    st = storage(p, 3, 39);
    assert_int_equal(st.kv_slot, 4);
    assert_int_equal(st.owner_plan_rank, 3);
    st = storage(p, 1, 2);
    assert_int_equal(st.kind, KVSHARD_LAYER_LINEAR_ATTENTION);
    assert_int_equal(st.state_slot, 2);
    assert_int_equal(st.state_bytes_per_seq, 536576);
    assert_int_equal(st.owner_plan_rank, -1);
    /* Out of range, and a struct of unknown size. */
    kvshard_layer_storage out = KVSHARD_LAYER_STORAGE_INIT;
    assert_int_equal(kvshard_plan_layer_storage(&out, p, 4, 0), KVSHARD_ERANK);
    /* Layer 40 is the model's one draft layer, which no speculation counts. */
    assert_int_equal(kvshard_plan_layer_storage(&out, p, 0, 40), KVSHARD_OK);
    assert_int_equal(out.holding, KVSHARD_HOLDS_NOTHING);
    assert_int_equal(kvshard_plan_layer_storage(&out, p, 0, 41), KVSHARD_ELAYER);
    out.size = 5;
    assert_int_equal(kvshard_plan_layer_storage(&out, p, 0, 0), KVSHARD_EINVAL);
    assert_int_equal(kvshard_plan_layer_storage(NULL, p, 0, 0), KVSHARD_EINVAL);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
}

/* For every shipped deployment and every rank, the per-layer answers add up
 * to the rank's own figures: the KV bytes of the layers it stores, slots
 * 0..n-1 in rank_layers order, and the per-sequence bytes of its state,
 * windows and compressed layers, with the draft layers' beside them. */
static void test_storage_matches_plan_everywhere(void **state)
{
    (void)state;
    DIR *d = opendir(KVSHARD_EXAMPLES);
    assert_non_null(d);
    struct dirent *e;
    size_t checked = 0;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        kvshard_deployment *dep = load_example(e->d_name);
        kvshard_plan *p = plan_of(dep);
        uint32_t T = kvshard_plan_attn_tp_size(p), L = kvshard_plan_num_layers(p);
        for (uint32_t r = 0; r < T; r++) {
            kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
            kvshard_plan_rank_memory(&m, p, r);
            const uint32_t *layers;
            size_t count;
            kvshard_plan_rank_layers(&layers, &count, p, r);
            uint64_t kv = 0, per_seq = m.draft_bytes_per_seq;
            size_t stored = 0;
            for (uint32_t i = 0; i < L; i++) {
                kvshard_layer_storage st = storage(p, r, i);
                assert_int_equal(st.stores_kv, kvshard_plan_stores_kv(p, r, i));
                if (st.stores_kv) {
                    assert_true((size_t)st.kv_slot < count);
                    assert_int_equal(layers[st.kv_slot], i);
                    kv += st.kv_bytes_per_token;
                    stored++;
                }
                per_seq += st.state_bytes_per_seq;
            }
            if (stored != count || kv != m.kv_bytes_per_token || per_seq != m.state_bytes_per_seq)
                print_error("%s rank %u: %zu/%zu layers, kv %llu/%llu, state %llu/%llu\n",
                            e->d_name, r, stored, count, (unsigned long long)kv,
                            (unsigned long long)m.kv_bytes_per_token, (unsigned long long)per_seq,
                            (unsigned long long)m.state_bytes_per_seq);
            assert_int_equal(stored, count);
            assert_int_equal(kv, m.kv_bytes_per_token);
            assert_int_equal(per_seq, m.state_bytes_per_seq);
        }
        kvshard_plan_free(p);
        kvshard_deployment_free(dep);
        checked++;
    }
    closedir(d);
    assert_true(checked >= 16);
}

/* ---- digests ---------------------------------------------------------------------------- */

/* The digests of the seed plan, pinned: they change only when the plan
 * does (or when the digest itself is redefined, which docs/planning.md
 * records). Ranks that measured different memory agree on the layout
 * digest, not on the full one. */
static void test_digests(void **state)
{
    (void)state;
    kvshard_deployment *dep = load_example("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_plan *p = plan_of(dep);
    assert_true(kvshard_plan_digest(p) == UINT64_C(0x58e05c474733c022));
    assert_true(kvshard_plan_layout_digest(p) == UINT64_C(0x1db0017effd06cc8));
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_set(dep, "memory_per_rank", "19GiB", NULL, &err), &err);
    kvshard_plan *q = plan_of(dep);
    assert_true(kvshard_plan_layout_digest(q) == kvshard_plan_layout_digest(p));
    assert_true(kvshard_plan_digest(q) != kvshard_plan_digest(p));
    kvshard_plan_free(q);
    /* Ranks started with another block size store the same bytes per token
     * but count blocks in another unit: their layouts differ. So do caches
     * in another dtype of the same width (fp16 for the model's bf16). */
    tu_assert_ok(kvshard_deployment_set(dep, "block_size", "32", NULL, &err), &err);
    q = plan_of(dep);
    kvshard_rank_memory a = KVSHARD_RANK_MEMORY_INIT, b = KVSHARD_RANK_MEMORY_INIT;
    kvshard_plan_rank_memory(&a, p, 0);
    kvshard_plan_rank_memory(&b, q, 0);
    assert_int_equal(a.kv_bytes_per_token, b.kv_bytes_per_token);
    assert_true(kvshard_plan_layout_digest(q) != kvshard_plan_layout_digest(p));
    kvshard_plan_free(q);
    tu_assert_ok(kvshard_deployment_set(dep, "block_size", "16", NULL, &err), &err);
    tu_assert_ok(kvshard_deployment_set(dep, "kv_cache_dtype", "fp16", NULL, &err), &err);
    q = plan_of(dep);
    kvshard_plan_rank_memory(&b, q, 0);
    assert_int_equal(a.kv_bytes_per_token, b.kv_bytes_per_token);
    assert_true(kvshard_plan_layout_digest(q) != kvshard_plan_layout_digest(p));
    kvshard_plan_free(q);
    tu_assert_ok(kvshard_deployment_set(dep, "kv_cache_dtype", "auto", NULL, &err), &err);
    q = plan_of(dep);
    assert_true(kvshard_plan_layout_digest(q) == kvshard_plan_layout_digest(p));
    kvshard_plan_free(q);
    tu_assert_ok(kvshard_deployment_set(dep, "ownership", "global", NULL, &err), &err);
    q = plan_of(dep);
    assert_true(kvshard_plan_layout_digest(q) != kvshard_plan_layout_digest(p));
    kvshard_plan_free(q);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
}

/* ---- models from a description ------------------------------------------------------------ */

/* Qwen3.5-35B-A3B described by an engine: the same plan as its config. */
static void test_model_from_description(void **state)
{
    (void)state;
    kvshard_layer_kind kinds[40];
    for (int i = 0; i < 40; i++)
        kinds[i] = (i + 1) % 4 == 0 ? KVSHARD_LAYER_FULL_ATTENTION : KVSHARD_LAYER_LINEAR_ATTENTION;
    kvshard_model_desc d = KVSHARD_MODEL_DESC_INIT;
    d.model_type = "qwen3_5_moe";
    d.num_layers = 40;
    d.layer_kinds = kinds;
    d.dtype = KVSHARD_DTYPE_BF16;
    d.num_attention_heads = 16;
    d.num_kv_heads = 2;
    d.head_dim = 256;
    d.num_draft_layers = 1;
    d.state_kind = KVSHARD_STATE_GDN;
    d.state_key_heads = 16;
    d.state_heads = 32;
    d.state_head_dim = 128;
    d.state_value_dim = 128;
    d.conv_kernel = 4;
    kvshard_model *m = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_model_create(&m, &d, NULL, &err), &err);
    assert_int_equal(kvshard_model_state_dtype(m), KVSHARD_DTYPE_FP32);
    kvshard_deployment *file = load_example("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, file);
    kvshard_deployment *dep = NULL;
    tu_assert_ok(kvshard_deployment_create(&dep, m, &o, &err), &err);
    kvshard_plan *a = plan_of(dep), *b = plan_of(file);
    assert_true(kvshard_plan_digest(a) == kvshard_plan_digest(b));
    kvshard_plan_free(a);
    kvshard_plan_free(b);
    kvshard_deployment_free(dep); /* frees the model too */
    kvshard_deployment_free(file);
    o.settings = NULL; /* they were the freed deployment's */

    /* The loader's checks, naming the description's fields. */
    d.state_value_dim = 0;
    m = NULL;
    assert_int_equal(kvshard_model_create(&m, &d, NULL, &err), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "missing state_value_dim"));
    assert_string_equal(err.source, "kvshard_model_desc");
    d.state_value_dim = 128;
    kinds[5] = (kvshard_layer_kind)9;
    assert_int_equal(kvshard_model_create(&m, &d, NULL, &err), KVSHARD_ELAYERTYPE);
    assert_non_null(strstr(err.message, "layer_kinds[5]"));
    kinds[5] = KVSHARD_LAYER_LINEAR_ATTENTION;
    d.num_layers = 0;
    assert_int_equal(kvshard_model_create(&m, &d, NULL, &err), KVSHARD_ERANGE);
    d.num_layers = 40;
    d.size = 8;
    assert_int_equal(kvshard_model_create(&m, &d, NULL, &err), KVSHARD_EINVAL);
    assert_null(m);
    /* A state dimension that T must divide is checked at plan time. The
     * options are new: those read from `file` borrowed its settings. */
    d.size = sizeof d;
    d.state_key_heads = 6;
    tu_assert_ok(kvshard_model_create(&m, &d, NULL, &err), &err);
    o = (kvshard_options)KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    kvshard_plan *p = NULL;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_ELINEARHEADS);
    assert_non_null(strstr(err.message, "state_key_heads 6 is not divisible"));
    kvshard_model_free(m);
    /* Head layouts no engine runs: more KV heads than query heads, or KV
     * heads that do not divide them; query heads that T does not divide. */
    d.state_key_heads = 16;
    uint32_t q = d.num_attention_heads, kv = d.num_kv_heads;
    d.num_kv_heads = q * 2;
    m = NULL;
    assert_int_equal(kvshard_model_create(&m, &d, NULL, &err), KVSHARD_ERANGE);
    assert_null(m);
    assert_non_null(strstr(err.message, "is more than num_attention_heads"));
    d.num_kv_heads = kv;
    d.num_attention_heads = kv * 3 + 1;
    assert_int_equal(kvshard_model_create(&m, &d, NULL, &err), KVSHARD_ERANGE);
    assert_non_null(strstr(err.message, "is not divisible by num_kv_heads"));
    d.num_attention_heads = 2;
    d.num_kv_heads = 2;
    tu_assert_ok(kvshard_model_create(&m, &d, NULL, &err), &err);
    o.world_size = 4;
    p = NULL;
    assert_int_equal(kvshard_plan_create(&p, m, &o, NULL, &err), KVSHARD_EQHEADS);
    assert_null(p);
    assert_string_equal(err.message, "num_attention_heads 2 is not divisible by the attention TP "
                                     "size 4: every rank holds the same number of query heads");
    kvshard_model_free(m);
    d.num_attention_heads = q;
    d.num_kv_heads = kv;
}

/* ---- arguments and flag files ---------------------------------------------------------------- */

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static kvshard_options options_of(const kvshard_deployment *dep)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_deployment_options(&o, dep);
    return o;
}

/* gflags' forms: booleans in any of its words, --noKEY, a bare --KEY. */
static void test_gflags_forms(void **state)
{
    (void)state;
    kvshard_deployment *dep = load_example("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_error err;
    const char *a[] = {"--noenable_layerwise_split", "-is_draft", "--world_size=8"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 3, a, 0, &err), &err);
    kvshard_options o = options_of(dep);
    assert_false(o.enable_layerwise_split);
    assert_true(o.is_draft);
    assert_int_equal(o.world_size, 8);
    static const char *const words[] = {"1", "0", "YES", "no", "T", "f", "y", "N", "True"};
    static const bool values[] = {true, false, true, false, true, false, true, false, true};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--enable_prefix_cache=%s", words[i]);
        const char *one[] = {flag};
        tu_assert_ok(kvshard_deployment_apply_args(dep, 1, one, 0, &err), &err);
        kvshard_options o2 = options_of(dep);
        char text[8];
        bool set = false;
        assert_int_equal(kvshard_settings_get(text, sizeof text, &set, o2.settings,
                                              "enable_prefix_cache"),
                         KVSHARD_OK);
        assert_true(set);
        assert_string_equal(text, values[i] ? "true" : "false");
    }
    /* A value-less flag that is not a boolean, and --no of a non-boolean. */
    const char *bad[] = {"--world_size"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, bad, 0, &err), KVSHARD_ETYPE);
    const char *bad2[] = {"--noworld_size"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, bad2, 0, &err), KVSHARD_EUNKNOWNKEY);
    const char *positional[] = {"world_size=4"};
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, positional, 0, &err),
                     KVSHARD_EUNKNOWNKEY);
    kvshard_deployment_free(dep);
}

/* An engine's flag file: comments, blank lines, flags kvshard does not use
 * (skipped only when asked), nested flag files; errors located in the file;
 * all or nothing. */
static void test_flagfile(void **state)
{
    (void)state;
    char dir[] = "/tmp/kvshard_flags_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char main_file[128], nested[128], bad[128], loop[128];
    snprintf(main_file, sizeof main_file, "%s/engine.flags", dir);
    snprintf(nested, sizeof nested, "%s/nested.flags", dir);
    snprintf(bad, sizeof bad, "%s/bad.flags", dir);
    snprintf(loop, sizeof loop, "%s/loop.flags", dir);
    char text[512];
    snprintf(text, sizeof text,
             "# xLLM flags\n"
             "--model=/models/qwen3.5\n"
             "\n"
             "  --max_seqs_per_batch=128   \n"
             "--flagfile=%s\n"
             "--engine=xllm\n",
             nested);
    write_file(main_file, text);
    write_file(nested, "--block_size=16\n--port=9000\n--enable_prefix_cache=false\n");
    write_file(bad, "--block_size=16\n\n   --world_size=zero\n");
    snprintf(text, sizeof text, "--flagfile=%s\n", loop);
    write_file(loop, text);

    kvshard_deployment *dep = load_example("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_error err;
    char flag[160];
    snprintf(flag, sizeof flag, "--flagfile=%s", main_file);
    const char *args[] = {flag};
    /* --model and --port are not kvshard's: refused without the switch. */
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, args, 0, &err), KVSHARD_EUNKNOWNKEY);
    assert_string_equal(err.source, main_file);
    assert_int_equal(err.line, 2);
    assert_int_equal(err.column, 1);
    assert_non_null(strstr(err.message, "unknown flag --model"));
    assert_int_equal(options_of(dep).engine, KVSHARD_ENGINE_KVSHARD); /* unchanged */
    const char *ignoring[] = {flag, "--ignore_unknown_flags"};
    tu_assert_ok(kvshard_deployment_apply_args(dep, 2, ignoring, 0, &err), &err);
    kvshard_options o = options_of(dep);
    assert_int_equal(o.engine, KVSHARD_ENGINE_XLLM);
    assert_int_equal(o.max_seqs, 128);
    assert_int_equal(o.block_size, 16);
    char prefix[8];
    assert_int_equal(kvshard_settings_get(prefix, sizeof prefix, NULL, o.settings,
                                          "enable_prefix_cache"),
                     KVSHARD_OK);
    assert_string_equal(prefix, "false");
    kvshard_plan *p = plan_of(dep);
    assert_int_equal(tu_figure(p, "state_slots"), 130);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);

    dep = load_example("qwen3_5_35b_a3b_tp4.yaml");
    snprintf(flag, sizeof flag, "--flagfile=%s", bad);
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, args, 0, &err), KVSHARD_ETYPE);
    assert_string_equal(err.source, bad);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.column, 17); /* "zero": 3 spaces, then 13 for --world_size= */
    assert_int_equal(options_of(dep).block_size, 16); /* the file's, not the flag file's */
    snprintf(flag, sizeof flag, "--flagfile=%s", loop);
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, args, 0, &err), KVSHARD_ELIMIT);
    snprintf(flag, sizeof flag, "--flagfile=%s/none.flags", dir);
    assert_int_equal(kvshard_deployment_apply_args(dep, 1, args, 0, &err), KVSHARD_EIO);
    assert_int_equal(kvshard_deployment_apply_args(dep, 0, NULL, 0, &err), KVSHARD_OK);
    /* The switch as a flag of the call. */
    const char *unknown[] = {"--port=1"};
    assert_int_equal(
        kvshard_deployment_apply_args(dep, 1, unknown, KVSHARD_ARGS_IGNORE_UNKNOWN, &err),
        KVSHARD_OK);
    kvshard_deployment_free(dep);
    unlink(main_file);
    unlink(nested);
    unlink(bad);
    unlink(loop);
    rmdir(dir);
}

static void *plain_malloc(void *user, size_t size)
{
    (void)user;
    return malloc(size);
}

/* kvshard_options_set names its origin in errors; a half-set allocator is
 * refused rather than silently replaced. */
static void test_origins_and_allocators(void **state)
{
    (void)state;
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    kvshard_error err;
    assert_int_equal(kvshard_options_set(&o, "world_size", "x", "engine args", &err),
                     KVSHARD_ETYPE);
    assert_string_equal(err.source, "engine args");
    assert_int_equal(kvshard_options_set(&o, "world_size", "x", NULL, &err), KVSHARD_ETYPE);
    assert_string_equal(err.source, "option");
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_plan *p = NULL;
    kvshard_allocator bad = {plain_malloc, NULL, NULL}; /* malloc_fn set, free_fn not */
    assert_int_equal(kvshard_plan_create(&p, m, NULL, &bad, &err), KVSHARD_EINVAL);
    assert_non_null(strstr(err.message, "malloc_fn and free_fn must both be set"));
    kvshard_load_options lo = KVSHARD_LOAD_OPTIONS_INIT;
    lo.allocator = &bad;
    kvshard_model *m2 = NULL;
    assert_int_equal(kvshard_model_load_string(&m2, "{}", 2, NULL, &lo, &err), KVSHARD_EINVAL);
    kvshard_model_free(m);
}

/* ---- the log line
 * ---------------------------------------------------------------------------------- */

static void test_describe_rank(void **state)
{
    (void)state;
    kvshard_deployment *dep = load_example("qwen3_5_35b_a3b_tp4.yaml");
    kvshard_plan *p = plan_of(dep);
    char line[512];
    int n = kvshard_plan_describe_rank(line, sizeof line, p, 1);
    const char *want = "kvshard " KVSHARD_VERSION_STRING ": tp_rank 1/4 split rank 1 group 0 "
                       "(S_eff 2, ordinal): KV of 5 layers [7 15 23 31 39], 5120 B/token + "
                       "1024 scratch + 0 draft, state 16097280 B/seq, 197493 blocks of 16, "
                       "layout 1db0017effd06cc8";
    assert_string_equal(line, want);
    assert_int_equal(n, (int)strlen(want));
    /* Like snprintf: a short buffer holds the start, the length is whole. */
    char small[16];
    assert_int_equal(kvshard_plan_describe_rank(small, sizeof small, p, 1), n);
    assert_int_equal(strlen(small), 15);
    assert_int_equal(kvshard_plan_describe_rank(NULL, 0, p, 1), n);
    assert_int_equal(kvshard_plan_describe_rank(line, sizeof line, p, 4), KVSHARD_ERANK);
    kvshard_plan_free(p);
    kvshard_deployment_free(dep);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_storage_seed),
        cmocka_unit_test(test_storage_matches_plan_everywhere),
        cmocka_unit_test(test_digests),
        cmocka_unit_test(test_model_from_description),
        cmocka_unit_test(test_gflags_forms),
        cmocka_unit_test(test_flagfile),
        cmocka_unit_test(test_origins_and_allocators),
        cmocka_unit_test(test_describe_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
