/* The per-sequence tensors of every layer (recurrent state, windows and a
 * compressed layer's caches) and the parts of one token's KV entry (its
 * elements and their scales). Each figure is worked by hand from the
 * model's config named beside it. */
#include "test_util.h"
#include "kvshard/output.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* examples/NAME planned, at `kv_cache_dtype` when given: "fp8" is the
 * word of an engine profile's own option ("fp8_e4m3") under one. */
static kvshard_plan *plan_example(const char *name, const char *kv_cache_dtype)
{
    char *path = tu_example_path(name);
    kvshard_deployment *dep = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_deployment_load_file(&dep, path, NULL, &err), &err);
    free(path);
    if (kv_cache_dtype &&
        kvshard_deployment_set(dep, "kv_cache_dtype", kv_cache_dtype, "test", &err) != KVSHARD_OK)
        tu_assert_ok(kvshard_deployment_set(dep, "kv_cache_dtype", "fp8_e4m3", "test", &err),
                     &err);
    kvshard_plan *p = NULL;
    tu_assert_ok(kvshard_deployment_plan(&p, dep, &err), &err);
    kvshard_deployment_free(dep);
    return p;
}

/* The tensors of `layer` on `rank` into t; how many there are. */
static size_t shapes_of(kvshard_state_tensor *t, const kvshard_plan *p, uint32_t rank,
                        uint32_t layer)
{
    kvshard_error err;
    size_t count = 99;
    for (size_t i = 0; i < KVSHARD_MAX_STATE_TENSORS; i++)
        t[i] = (kvshard_state_tensor)KVSHARD_STATE_TENSOR_INIT;
    tu_assert_ok(kvshard_plan_layer_state_shapes(t, KVSHARD_MAX_STATE_TENSORS, &count, p, rank,
                                                 layer, &err),
                 &err);
    assert_true(count <= KVSHARD_MAX_STATE_TENSORS);
    return count;
}

static void assert_tensor(const kvshard_state_tensor *t, const char *name, kvshard_dtype dtype,
                          uint32_t ndim, uint64_t a, uint64_t b, uint64_t c, uint64_t bytes)
{
    assert_string_equal(t->name, name);
    assert_int_equal(t->dtype, dtype);
    assert_int_equal(t->ndim, ndim);
    assert_true(t->dims[0] == a && t->dims[1] == b && t->dims[2] == c && t->dims[3] == 0);
    assert_true(t->bytes == bytes);
}

static kvshard_layer_kv_geometry geometry_of(const kvshard_plan *p, uint32_t rank, uint32_t layer)
{
    kvshard_error err;
    kvshard_layer_kv_geometry g = KVSHARD_LAYER_KV_GEOMETRY_INIT;
    tu_assert_ok(kvshard_plan_layer_kv_geometry(&g, p, rank, layer, &err), &err);
    return g;
}

/* Gemma 3 27B at T = 4, bf16, block size 16: a sliding layer keeps 16 KV
 * heads of 128 over 4 ranks (4 each) for a window of 1,024 tokens, that is
 * 16 x (1024 / 16 + 1) = 1,040 tokens. K: 1,040 x 4 x 128 x 2 = 1,064,960
 * B, V the same: 2,129,920 B a sequence. Layer 0 is sliding, layer 5 full. */
static void test_gemma3_sliding_window(void **state)
{
    (void)state;
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    kvshard_plan *p = plan_example("gemma_3_27b_tp4.yaml", NULL);
    for (uint32_t r = 0; r < 4; r++) {
        assert_int_equal(shapes_of(t, p, r, 0), 2);
        assert_tensor(&t[0], "window_k", KVSHARD_DTYPE_BF16, 3, 1040, 4, 128, 1064960);
        assert_tensor(&t[1], "window_v", KVSHARD_DTYPE_BF16, 3, 1040, 4, 128, 1064960);
        assert_true(t[0].bytes + t[1].bytes == 2129920);
        assert_int_equal(shapes_of(t, p, r, 5), 0); /* full attention: paged, nothing a sequence */
    }
    kvshard_plan_free(p);

    /* At fp8: 1 byte an element (532,480 B each of K and V) and an fp32
     * scale for K and for V per head and token: 1,040 x 4 x 4 = 16,640 B
     * each; 1,040 x (4 x 256 + 8 x 4) = 1,098,240 B in all. */
    p = plan_example("gemma_3_27b_tp4.yaml", "fp8");
    assert_int_equal(shapes_of(t, p, 2, 0), 4);
    assert_tensor(&t[0], "window_k", KVSHARD_DTYPE_FP8, 3, 1040, 4, 128, 532480);
    assert_tensor(&t[1], "window_v", KVSHARD_DTYPE_FP8, 3, 1040, 4, 128, 532480);
    assert_tensor(&t[2], "window_k_scale", KVSHARD_DTYPE_FP32, 2, 1040, 4, 0, 16640);
    assert_tensor(&t[3], "window_v_scale", KVSHARD_DTYPE_FP32, 2, 1040, 4, 0, 16640);
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    tu_assert_ok(kvshard_plan_layer_storage(&st, p, 2, 0), NULL);
    assert_true(st.state_bytes_per_seq == 1098240);
    kvshard_plan_free(p);
}

/* DeepSeek-V4-Flash at T = 8 split 8, bf16, block size 16: a ratio-4
 * layer with index keys keeps, on its owner, a window of 128 latents of
 * 512 in 16 x (128 / 16 + 1) = 144 tokens (144 x 512 x 2 = 147,456 B) and
 * the compressor's fp32 state: coff 2 (two overlapping windows), slots
 * 2 x 4 = 8, rows 2 x 2 = 4, dims 512 + 128 = 640: 8 x 4 x 640 x 4 =
 * 81,920 B. 229,376 B a sequence. A rank that does not own it keeps none. */
static void test_deepseek_v4_compressed(void **state)
{
    (void)state;
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    kvshard_plan *p = plan_example("deepseek_v4_flash_tp8.yaml", NULL);
    uint32_t L = kvshard_plan_num_layers(p), found = 0;
    for (uint32_t i = 0; i < L; i++) {
        for (uint32_t r = 0; r < 8; r++) {
            kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
            tu_assert_ok(kvshard_plan_layer_storage(&st, p, r, i), NULL);
            if (st.compress_ratio != 4 || !st.index_key)
                continue;
            size_t n = shapes_of(t, p, r, i);
            if (!st.stores_kv) {
                assert_int_equal(n, 0);
                continue;
            }
            found++;
            assert_int_equal(n, 2);
            assert_tensor(&t[0], "window_latent", KVSHARD_DTYPE_BF16, 2, 144, 512, 0, 147456);
            assert_tensor(&t[1], "compressor_state", KVSHARD_DTYPE_FP32, 3, 8, 4, 640, 81920);
            assert_true(t[0].bytes + t[1].bytes == 229376);
            assert_true(st.state_bytes_per_seq == 229376);
        }
    }
    assert_int_equal(found, 21); /* 21 ratio-4 layers, each on its one owner */
    kvshard_plan_free(p);
}

/* Every shipped example, at its own KV dtype and at fp8: on every rank,
 * every decoder and draft layer's tensors are whole dims times their
 * dtype's size and add up to the layer's state_bytes_per_seq. */
static void check_sums(const char *name, const char *kv_cache_dtype)
{
    kvshard_plan *p = plan_example(name, kv_cache_dtype);
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    uint32_t ranks = kvshard_plan_num_ranks(p);
    for (uint32_t r = 0; r < ranks; r++) {
        for (uint32_t i = 0;; i++) {
            kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
            if (kvshard_plan_layer_storage(&st, p, r, i) == KVSHARD_ELAYER)
                break;
            size_t n = shapes_of(t, p, r, i);
            uint64_t sum = 0;
            for (size_t j = 0; j < n; j++) {
                uint64_t elements = 1;
                for (uint32_t d = 0; d < t[j].ndim; d++)
                    elements *= t[j].dims[d];
                assert_true(t[j].bytes == elements * kvshard_dtype_size(t[j].dtype));
                sum += t[j].bytes;
            }
            if (sum != st.state_bytes_per_seq)
                print_error("%s (%s) rank %u layer %u: tensors %llu B, storage %llu B\n", name,
                            kv_cache_dtype ? kv_cache_dtype : "as given", r, i,
                            (unsigned long long)sum,
                            (unsigned long long)st.state_bytes_per_seq);
            assert_true(sum == st.state_bytes_per_seq);
        }
    }
    kvshard_plan_free(p);
}

static void test_every_example_adds_up(void **state)
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
        check_sums(e->d_name, NULL);
        check_sums(e->d_name, "fp8");
        checked++;
    }
    closedir(d);
    assert_true(checked >= 30);
}

/* Qwen3.5-35B-A3B at T = 4: one KV head of 256 + 256 a rank (two ranks
 * share each of its 2 heads, so a split of 2 stores one head on the
 * owner). At fp8 the elements are 512 B and the fp32 scales 8 B (K and V),
 * 520 B a token, the owner's kv_bytes_per_token; at bf16 1,024 B and no
 * scales. */
static void test_gqa_scales(void **state)
{
    (void)state;
    kvshard_plan *p = plan_example("qwen3_5_35b_a3b_tp4.yaml", "fp8");
    uint32_t owners = 0;
    for (uint32_t r = 0; r < 4; r++) {
        kvshard_layer_kv_geometry g = geometry_of(p, r, 3);
        assert_int_equal(g.kv_heads, 1);
        assert_int_equal(g.scale_dtype, KVSHARD_DTYPE_FP32);
        assert_int_equal(g.scale_bytes_per_token, 8);
        uint64_t elements = (uint64_t)g.kv_heads * (g.k_head_dim + g.v_head_dim) * g.element_bytes;
        assert_true(elements == 512);
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        tu_assert_ok(kvshard_plan_layer_storage(&st, p, r, 3), NULL);
        assert_true(elements + g.scale_bytes_per_token == 520);
        if (st.stores_kv) {
            owners++;
            assert_true(st.kv_bytes_per_token == 520);
        }
    }
    assert_int_equal(owners, 2);
    kvshard_layer_kv_geometry lin = geometry_of(p, 0, 0); /* linear: no KV, no scales */
    assert_int_equal(lin.scale_dtype, KVSHARD_DTYPE_AUTO);
    assert_int_equal(lin.scale_bytes_per_token, 0);
    kvshard_plan_free(p);

    p = plan_example("qwen3_5_35b_a3b_tp4.yaml", NULL);
    kvshard_layer_kv_geometry g = geometry_of(p, 0, 3);
    assert_int_equal(g.scale_dtype, KVSHARD_DTYPE_AUTO);
    assert_int_equal(g.scale_bytes_per_token, 0);
    assert_int_equal(g.rope_element_bytes, 0);
    assert_int_equal(g.index_element_bytes, 0);
    kvshard_plan_free(p);
}

/* DeepSeek-V3.2 at fp8 (DSA): the NoPE latent of 512 in fp8 (512 B) with
 * an fp32 scale per 128 elements (16 B), the RoPE part of 64 in bf16
 * (128 B): 656 B; the index key of 128 in fp8 (128 B) with its fp32 scale
 * (4 B): 132 B. 788 B a token, scales 20 of them. At bf16 the latent is
 * (512 + 64) x 2 = 1,152 B and the index key stays 132 B: 1,284 B. */
static void test_dsa_parts(void **state)
{
    (void)state;
    kvshard_plan *p = plan_example("deepseek_v3_2_tp8.yaml", "fp8");
    kvshard_layer_kv_geometry g = geometry_of(p, 0, 0);
    assert_int_equal(g.element_bytes, 1);
    assert_int_equal(g.rope_element_bytes, 2);
    assert_int_equal(g.index_element_bytes, 1);
    assert_int_equal(g.scale_dtype, KVSHARD_DTYPE_FP32);
    assert_int_equal(g.scale_bytes_per_token, 16 + 4);
    uint64_t latent = (uint64_t)g.kv_lora_rank * g.element_bytes +
                      (uint64_t)g.qk_rope_head_dim * g.rope_element_bytes + 16;
    uint64_t index = (uint64_t)g.index_head_dim * g.index_element_bytes + 4;
    assert_true(latent == 656 && index == 132);
    kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
    tu_assert_ok(kvshard_plan_layer_storage(&st, p, 0, 0), NULL);
    assert_true(st.kv_bytes_per_token == 656 + 132);
    kvshard_plan_free(p);

    p = plan_example("deepseek_v3_2_tp8.yaml", "bf16");
    g = geometry_of(p, 0, 0);
    assert_int_equal(g.element_bytes, 2);
    assert_int_equal(g.rope_element_bytes, 2);
    assert_int_equal(g.index_element_bytes, 1);
    assert_int_equal(g.scale_bytes_per_token, 4);
    assert_true((uint64_t)(g.kv_lora_rank + g.qk_rope_head_dim) * 2 + g.index_head_dim + 4 == 1284);
    kvshard_plan_free(p);
}

/* DeepSeek-V4-Flash at fp8: a latent entry is 448 fp8 NoPE bytes, 64 x 2 of
 * bf16 RoPE and 448 / 64 = 7 scale bytes, 583 rounded up to 584: the scale
 * bytes with the padding are 584 - 448 - 128 = 8. With the index key (128
 * and its fp32 scale, 4 B) the parts add up to 584 + 132 = 716. */
static void test_compressed_parts(void **state)
{
    (void)state;
    kvshard_plan *p = plan_example("deepseek_v4_flash_tp8.yaml", "fp8");
    uint32_t L = kvshard_plan_num_layers(p);
    for (uint32_t i = 0; i < L; i++) {
        kvshard_layer_storage st = KVSHARD_LAYER_STORAGE_INIT;
        tu_assert_ok(kvshard_plan_layer_storage(&st, p, 0, i), NULL);
        if (st.compress_ratio != 4 || !st.index_key)
            continue;
        kvshard_layer_kv_geometry g = geometry_of(p, 0, i);
        assert_int_equal(g.latent_dim, 512);
        assert_int_equal(g.rope_element_bytes, 2);
        assert_int_equal(g.scale_dtype, KVSHARD_DTYPE_FP8);
        assert_int_equal(g.scale_bytes_per_token, 8 + 4);
        uint64_t parts = (uint64_t)(g.latent_dim - g.qk_rope_head_dim) * g.element_bytes +
                         (uint64_t)g.qk_rope_head_dim * g.rope_element_bytes +
                         (uint64_t)g.index_head_dim * g.index_element_bytes +
                         g.scale_bytes_per_token;
        assert_true(parts == 716);
        break;
    }
    kvshard_plan_free(p);
}

/* ---- the words: state is recurrent state, windows are windows ---------- */

static char *report_html(const kvshard_plan *p)
{
    char *html = NULL;
    assert_int_equal(kvshard_report_write_html(p, NULL, NULL, tu_append, &html), KVSHARD_OK);
    return html;
}

/* Gemma 3 keeps windows and no state: 64 sequences of 52 sliding layers of
 * 2,129,920 B reserve 7,088,373,760 B = 6.60 GiB. */
static void test_words_of_a_window_model(void **state)
{
    (void)state;
    kvshard_plan *p = plan_example("gemma_3_27b_tp4.yaml", NULL);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "6.60 GiB reserved for the windows of 64 sequences");
    tu_assert_contains(text, "per block    window/seq   blocks\n");
    assert_null(strstr(text, "state/seq"));
    free(text);
    char *html = report_html(p);
    tu_assert_contains(html, "windows and blocks run out together");
    tu_assert_contains(html, "windows reserved");
    tu_assert_contains(html, "<text x=\"32\" y=\"20\">windows</text>");
    tu_assert_contains(html, "windows of max_seqs sequences (sliding, chunked, compressed), "
                             "7,088,373,760 B (6.60 GiB)");
    assert_null(strstr(html, "class=\"seg st\""));
    free(html);
    kvshard_plan_free(p);
}

/* The seed keeps GDN state and no window: its words stay "state". */
static void test_words_of_a_state_model(void **state)
{
    (void)state;
    kvshard_plan *p = plan_example("qwen3_5_35b_a3b_tp4.yaml", NULL);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "1.92 GiB reserved for the state of 128 sequences");
    tu_assert_contains(text, "per block    state/seq    blocks\n");
    assert_null(strstr(text, "window/seq"));
    assert_null(strstr(text, "windows of"));
    free(text);
    char *html = report_html(p);
    assert_null(strstr(html, "class=\"seg wn\""));
    free(html);
    kvshard_plan_free(p);
}

/* Qwen3.5-35B-A3B with its layer 3 sliding over 1,024 tokens keeps both:
 * 30 GDN layers of 536,576 B = 16,097,280 B (15.35 MiB) of state and one
 * sliding layer of one KV head of 256 + 256 in bf16 over 16 x 65 = 1,040
 * tokens, 1,064,960 B (1.02 MiB) of windows, a sequence; 256 sequences
 * reserve 4,393,533,440 B = 4.09 GiB. */
static void test_words_of_a_model_with_both(void **state)
{
    (void)state;
    char *path = tu_example_path("models/qwen3_5_35b_a3b.json");
    FILE *f = fopen(path, "rb");
    free(path);
    assert_non_null(f);
    char config[8192];
    size_t n = fread(config, 1, sizeof config - 1, f);
    fclose(f);
    config[n] = '\0';
    char edited[8300];
    char *full = strstr(config, "\"full_attention\"");
    char *types = strstr(config, "\"layer_types\"");
    assert_true(full && types && types < full);
    snprintf(edited, sizeof edited, "%.*s\"sliding_window\": 1024, %.*s\"sliding_attention\"%s",
             (int)(types - config), config, (int)(full - types), types,
             full + strlen("\"full_attention\""));
    kvshard_model *model = tu_load_model_text(edited);
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = 4;
    o.memory_per_rank = 20ull << 30;
    kvshard_plan *p = tu_plan(model, &o);
    kvshard_model_free(model);
    char *text = tu_plan_text(p);
    tu_assert_contains(text, "per block    state/seq    window/seq   blocks\n");
    tu_assert_contains(text, "144.00 KiB   15.35 MiB    1.02 MiB     ");
    tu_assert_contains(text, "4.09 GiB reserved for the state and windows of 256 sequences");
    free(text);
    kvshard_state_tensor t[KVSHARD_MAX_STATE_TENSORS];
    assert_int_equal(shapes_of(t, p, 0, 3), 2);
    assert_true(t[0].bytes + t[1].bytes == 1064960);
    kvshard_rank_memory m = KVSHARD_RANK_MEMORY_INIT;
    tu_assert_ok(kvshard_plan_rank_memory(&m, p, 0), NULL);
    assert_true(m.state_bytes_per_seq == 16097280ull + 1064960);
    kvshard_plan_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gemma3_sliding_window),
        cmocka_unit_test(test_deepseek_v4_compressed),
        cmocka_unit_test(test_every_example_adds_up),
        cmocka_unit_test(test_gqa_scales),
        cmocka_unit_test(test_dsa_parts),
        cmocka_unit_test(test_compressed_parts),
        cmocka_unit_test(test_words_of_a_window_model),
        cmocka_unit_test(test_words_of_a_state_model),
        cmocka_unit_test(test_words_of_a_model_with_both),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
