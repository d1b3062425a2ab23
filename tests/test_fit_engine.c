/* kvshard fit under an engine profile: rows sized and ranked by the
 * engine's own figures, and a launch line whose every number that profile
 * predicts. */
#include "test_util.h"
#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL KVSHARD_EXAMPLES "/models/qwen3_5_35b_a3b.json"
#define GIB (1ull << 30)

/* Qwen3.5-35B-A3B text weights in bf16 on 4 GPUs of 32 GiB, 32k tokens. */
#define DEVICE_FLAGS                                                                               \
    "--gpus=4 --device_memory=32GiB --weights_total=69321223296 --weights_experts=64424509440"

static kvshard_options qwen_options(void)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.device_memory = 32 * GIB;
    o.weights_total = 69321223296ull;
    o.weights_experts = 64424509440ull;
    o.context_length = 32768;
    o.engine = KVSHARD_ENGINE_VLLM;
    return o;
}

static kvshard_fit *fit_of(const kvshard_model *m, const kvshard_options *o)
{
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 4;
    kvshard_fit *f = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_fit_create(&f, m, o, &fo, NULL, &err), &err);
    return f;
}

typedef struct expected_row {
    uint32_t tp, pp, dp;
    uint64_t seqs_per_replica, seqs_total, num_blocks, tokens_per_replica;
} expected_row;

/* vLLM 0.28.0 (utilization 0.92, mamba cache mode align, prefix caching on):
 * the three layouts of 4 GPUs in one node, by the engine's sequences. */
static const expected_row vllm_rows[3] = {
    {2, 1, 2, 27, 54, 1048, 903706},
    {1, 1, 4, 10, 40, 411, 354411},
    {4, 1, 1, 33, 33, 2323, 1103189},
};

static void assert_vllm_rows(const kvshard_fit *f)
{
    assert_int_equal(kvshard_fit_row_count(f), 3);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 0);
    for (size_t i = 0; i < 3; i++) {
        const kvshard_fit_row *r = kvshard_fit_row_at(f, i);
        const expected_row *e = &vllm_rows[i];
        assert_true(r->fits);
        assert_int_equal(r->rank, i + 1);
        assert_int_equal(r->tp_size, e->tp);
        assert_int_equal(r->pp_size, e->pp);
        assert_int_equal(r->dp_size, e->dp);
        assert_int_equal(r->layerwise_split_size, 1);
        assert_true(r->has_seqs);
        assert_int_equal(r->seqs_per_replica, e->seqs_per_replica);
        assert_int_equal(r->max_seqs, e->seqs_per_replica);
        assert_int_equal(r->seqs_total, e->seqs_total);
        assert_int_equal(r->num_blocks, e->num_blocks);
        assert_int_equal(r->tokens_per_replica, e->tokens_per_replica);
        assert_int_equal(r->tokens_total, e->tokens_per_replica * e->dp);
    }
}

/* Row 1 by hand. The dense weights over T = 2, the experts over D x T = 4;
 * the reserve max(1 GiB, device / 20); vLLM requests ceil(device x 0.92)
 * and its budget is that less the weights and the reserve. One KV head a
 * rank: 1,024 bytes a token a layer; a GDN layer's state 1,073,152 bytes
 * makes the attention block 16 x ceil(1,073,152 / 16,384) = 1,056 tokens
 * and the page 1,056 x 1,024 = 1,081,344 bytes; 10 full and 30 GDN layers
 * are 4 groups of 10, so a block is 10 pages. A request of 32,768 tokens
 * takes ceil(32,768 / 1,056) + 3 x 2 blocks (mode align), and the engine
 * logs int(blocks / per-request x 32,768) tokens. */
static void test_vllm_worked_example(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    kvshard_fit *f = fit_of(m, &o);
    assert_vllm_rows(f);

    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    uint64_t device = 34359738368ull;
    uint64_t weights = (4896713856ull + 1) / 2 + 64424509440ull / 4;
    uint64_t reserve = device / 20;
    uint64_t requested = (device * 92 + 99) / 100;
    uint64_t budget = requested - weights - reserve;
    assert_int_equal(weights, 18554484288ull);
    assert_int_equal(reserve, 1717986918ull);
    assert_int_equal(requested, 31610959299ull);
    assert_int_equal(r->weights_per_rank, weights);
    assert_int_equal(r->budget, budget);
    assert_int_equal(budget, 11338488093ull);
    uint64_t block = 16 * ((1073152 + 16383) / 16384);
    uint64_t page = block * 1024;
    uint64_t blocks = budget / page / 10;
    uint64_t per_request = (32768 + block - 1) / block + 3 * 2;
    assert_int_equal(block, 1056);
    assert_int_equal(r->num_blocks, blocks);
    assert_int_equal(per_request, 38);
    assert_int_equal(r->seqs_per_replica, (blocks - 1) / per_request);
    assert_int_equal(r->tokens_per_replica, (uint64_t)((double)blocks / (double)per_request * 32768.0));

    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "vllm", false) > 0);
    assert_string_equal(buf, "--tensor-parallel-size=2 --data-parallel-size=2 "
                             "--gpu-memory-utilization=0.92 --max-model-len=32768 "
                             "--max-num-seqs=27");
    assert_int_equal(kvshard_fit_flags(buf, sizeof buf, f, "vllm", true), 0);
    assert_string_equal(buf, "");
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "kvshard", false) > 0);
    assert_string_equal(buf, "--engine=vllm --engine_version=0.28.0 --tensor-parallel-size=2 "
                             "--data-parallel-size=2 --gpu-memory-utilization=0.92 "
                             "--max-model-len=32768 --max-num-seqs=27");
    /* No other engine's line under a vLLM fit: its figures are not vLLM's. */
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "sglang", false) < 0);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* Without context_length the length is the engine's own --max-model-len;
 * a fraction given is the one the rows use and the line states. */
static void test_vllm_length_and_fraction(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    o.context_length = 0;
    kvshard_settings *set = tu_settings("max_model_len", "32768", NULL);
    o.settings = set;
    kvshard_fit *f = fit_of(m, &o);
    assert_vllm_rows(f);
    kvshard_fit_free(f);

    /* At 0.9 vLLM requests ceil(device x 0.9) = 30,923,764,532 bytes: row
     * 1's budget 30,923,764,532 - 20,272,471,206 = 10,651,293,326. */
    tu_set(set, "gpu_memory_utilization", "0.9");
    f = fit_of(m, &o);
    const kvshard_fit_row *r = kvshard_fit_row_at(f, 0);
    assert_int_equal(r->tp_size, 2);
    assert_int_equal(r->dp_size, 2);
    assert_int_equal(r->budget, 10651293326ull);
    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "vllm", false) > 0);
    assert_non_null(strstr(buf, " --gpu-memory-utilization=0.9 "));
    kvshard_fit_free(f);
    kvshard_settings_free(set);
    kvshard_model_free(m);
}

/* The document names the engine and its version, the fraction it uses, no
 * kvshard usable figure, and two flag lists: the engine's and kvshard's. */
static void test_vllm_json_and_text(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    kvshard_fit *f = fit_of(m, &o);
    char *json = NULL;
    assert_int_equal(kvshard_fit_write_json(f, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"engine\": {\"name\": \"vllm\", \"version\": \"0.28.0\"}"));
    assert_non_null(strstr(json, "\"memory_utilization\": 0.92, \"usable\": null, "
                                 "\"activation_reserve\": 1717986918"));
    assert_non_null(strstr(json, "\"flags\": {\"kvshard\": [\"--engine=vllm\", "
                                 "\"--engine_version=0.28.0\", \"--tensor-parallel-size=2\""));
    assert_non_null(strstr(json, "\"env\": {\"vllm\": []}}"));
    assert_null(strstr(json, "\"sglang\""));
    free(json);
    char *text = NULL;
    assert_int_equal(kvshard_fit_write_text(f, 0, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "fit under vllm 0.28.0: 4 GPUs of 34,359,738,368 B"));
    assert_non_null(strstr(text, "\nrecommended: vllm --tensor-parallel-size=2 "
                                 "--data-parallel-size=2 --gpu-memory-utilization=0.92 "
                                 "--max-model-len=32768 --max-num-seqs=27\n"));
    free(text);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* The printed launch line, given back to `kvshard plan` under the engine
 * with the same device flags, plans the recommended row's figures. */
static void test_vllm_launch_line_replans(void **state)
{
    (void)state;
    char command[4096], *out = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=vllm " DEVICE_FLAGS " --context_length=32768", KVSHARD_CLI,
             MODEL);
    assert_int_equal(tu_run(command, &out, &err), 0);
    const char *marker = "\nrecommended: vllm ";
    char *line = strstr(out, marker);
    assert_non_null(line);
    line += strlen(marker);
    char *end = strchr(line, '\n');
    assert_non_null(end);
    *end = '\0';
    char flags[1024];
    snprintf(flags, sizeof flags, "%s", line);
    free(out);
    free(err);
    snprintf(command, sizeof command,
             "'%s' plan '%s' --engine=vllm %s --device_memory=32GiB --weights_total=69321223296 "
             "--weights_experts=64424509440 --context_length=32768 --format=json",
             KVSHARD_CLI, MODEL, flags);
    assert_int_equal(tu_run(command, &out, &err), 0);
    assert_non_null(strstr(out, "\"num_gpu_blocks\": 1048"));
    assert_non_null(strstr(out, "\"gpu_kv_cache_tokens\": 903706"));
    assert_non_null(strstr(out, "\"max_num_seqs\": 27"));
    assert_non_null(strstr(out, "\"balanced_max_seqs\": 27"));
    assert_non_null(strstr(out, "\"budget\": 11338488093"));
    free(out);
    free(err);
}

/* SGLang 0.5.21 with the fraction fit assumes, 0.9, and no reserve: the
 * same three layouts, D the DP-attention workers, ranked by each worker's
 * concurrency with no request limit; its line tells the engine D x s
 * requests and the D x K state slots the first plan gave (179 a worker). */
static void test_sglang_worked_example(void **state)
{
    (void)state;
    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    kvshard_options o = qwen_options();
    o.engine = KVSHARD_ENGINE_SGLANG;
    kvshard_fit *f = fit_of(m, &o);
    static const uint32_t layouts[3][3] = {{2, 1, 2}, {1, 1, 4}, {4, 1, 1}};
    static const uint64_t seqs[3] = {19, 7, 21};
    assert_int_equal(kvshard_fit_row_count(f), 3);
    for (size_t i = 0; i < 3; i++) {
        const kvshard_fit_row *r = kvshard_fit_row_at(f, i);
        assert_true(r->fits);
        assert_int_equal(r->tp_size, layouts[i][0]);
        assert_int_equal(r->pp_size, layouts[i][1]);
        assert_int_equal(r->dp_size, layouts[i][2]);
        assert_int_equal(r->seqs_per_replica, seqs[i]);
        assert_int_equal(r->seqs_total, seqs[i] * layouts[i][2]);
    }
    /* No reserve: the weights alone fill non_kv_memory. */
    assert_int_equal(kvshard_fit_row_at(f, 0)->weights_per_rank, 18554484288ull);
    char buf[1024];
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "sglang", false) > 0);
    assert_string_equal(buf, "--tp-size=4 --dp-size=2 --enable-dp-attention "
                             "--mem-fraction-static=0.9 --context-length=32768 "
                             "--max-running-requests=38 --max-mamba-cache-size=358");
    assert_true(kvshard_fit_flags(buf, sizeof buf, f, "vllm", false) < 0);
    char *json = NULL;
    assert_int_equal(kvshard_fit_write_json(f, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"engine\": {\"name\": \"sglang\", \"version\": \"0.5.21\"}"));
    assert_non_null(strstr(json, "\"memory_utilization\": 0.9, \"usable\": null, "
                                 "\"activation_reserve\": 0"));
    free(json);
    kvshard_fit_free(f);
    kvshard_model_free(m);
}

/* SGLang's printed line, planned again under sglang, keeps the row's pools
 * and serves the same sequences at the length. */
static void test_sglang_launch_line_replans(void **state)
{
    (void)state;
    char command[4096], *out = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=sglang " DEVICE_FLAGS " --context_length=32768 "
             "--format=json",
             KVSHARD_CLI, MODEL);
    assert_int_equal(tu_run(command, &out, &err), 0);
    assert_non_null(strstr(out, "\"tokens_per_replica\": 631777"));
    free(out);
    free(err);
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=sglang " DEVICE_FLAGS " --context_length=32768", KVSHARD_CLI,
             MODEL);
    assert_int_equal(tu_run(command, &out, &err), 0);
    const char *marker = "\nrecommended: sglang ";
    char *line = strstr(out, marker);
    assert_non_null(line);
    line += strlen(marker);
    *strchr(line, '\n') = '\0';
    char flags[1024];
    snprintf(flags, sizeof flags, "%s", line);
    free(out);
    free(err);
    snprintf(command, sizeof command,
             "'%s' plan '%s' --engine=sglang %s --device_memory=32GiB "
             "--weights_total=69321223296 --weights_experts=64424509440 --context_length=32768 "
             "--format=json",
             KVSHARD_CLI, MODEL, flags);
    assert_int_equal(tu_run(command, &out, &err), 0);
    assert_non_null(strstr(out, "\"max_total_num_tokens\": 631777"));
    assert_non_null(strstr(out, "\"max_mamba_cache_size\": 179"));
    assert_non_null(strstr(out, "\"max_running_requests\": 19"));
    assert_non_null(strstr(out, "\"concurrency\": 19"));
    free(out);
    free(err);
}

/* A fit under an engine refuses what the engine cannot start before it
 * searches: a length from nowhere. Layouts the profile refuses are listed
 * by the refusal's own name, and a length no layout serves is no_block. */
static void test_engine_refusals(void **state)
{
    (void)state;
    kvshard_model *tiny = tu_load_model_text("{num_hidden_layers: 2, num_attention_heads: 2, "
                                             "num_key_value_heads: 2, head_dim: 64, "
                                             "hidden_size: 128}");
    kvshard_options o = qwen_options();
    o.context_length = 0;
    kvshard_fit_options fo = KVSHARD_FIT_OPTIONS_INIT;
    fo.gpus = 2;
    kvshard_fit *f = NULL;
    kvshard_error err;
    assert_int_equal(kvshard_fit_create(&f, tiny, &o, &fo, NULL, &err), KVSHARD_EMISSING);
    assert_non_null(strstr(err.message, "vllm profile: engine_input_missing: "));
    assert_null(f);
    kvshard_model_free(tiny);

    kvshard_model *m = tu_load_example_model("qwen3_5_35b_a3b.json");
    o = qwen_options();
    o.engine = KVSHARD_ENGINE_SGLANG; /* no stages for a model with state layers */
    fo.gpus = 4;
    fo.max_pp_size = 4;
    tu_assert_ok(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), &err);
    assert_int_equal(kvshard_fit_row_count(f), 3);
    assert_int_equal(kvshard_fit_not_admitted_count(f), 3);
    char *text = NULL;
    assert_int_equal(kvshard_fit_write_text(f, 0, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "refused    T = 1, P = 2, D = 2: "));
    assert_null(strstr(text, ": profile\n"));
    free(text);
    kvshard_fit_free(f);
    f = NULL;

    /* 8 GiB leave no layout a budget for one request of 32,768 tokens. */
    o = qwen_options();
    o.device_memory = 8 * GIB;
    fo.max_pp_size = 0;
    assert_int_equal(kvshard_fit_create(&f, m, &o, &fo, NULL, &err), KVSHARD_ENOBLOCK);
    assert_non_null(strstr(err.message, "no layout of 4 GPUs serves one sequence of 32768 "
                                        "tokens under the vllm profile"));
    assert_null(f);
    kvshard_model_free(m);
}

/* Engine flags given to fit that change what the engine allocates are
 * repeated on its line, in the engine's spelling, so the line starts the
 * engine the row was planned for. Without prefix caching vLLM keeps one
 * state block per group a request (mode none): ceil(32,768 / 1,056) + 3 =
 * 35 blocks, floor(1,047 / 35) = 29 a replica, int(1,048 / 35 x 32,768) =
 * 981,167 tokens. */
static void test_vllm_repeats_given_flags(void **state)
{
    (void)state;
    char command[4096], *out = NULL, *err = NULL;
    snprintf(command, sizeof command,
             "'%s' fit '%s' --engine=vllm " DEVICE_FLAGS " --context_length=32768 "
             "--mamba-cache-mode=all --enable-prefix-caching=false --max-num-batched-tokens=8192",
             KVSHARD_CLI, MODEL);
    assert_int_equal(tu_run(command, &out, &err), 0);
    const char *marker = "\nrecommended: vllm ";
    char *line = strstr(out, marker);
    assert_non_null(line);
    line += strlen(marker);
    *strchr(line, '\n') = '\0';
    assert_string_equal(line, "--tensor-parallel-size=2 --data-parallel-size=2 "
                              "--gpu-memory-utilization=0.92 --max-model-len=32768 "
                              "--max-num-seqs=29 --mamba-cache-mode=all "
                              "--no-enable-prefix-caching --max-num-batched-tokens=8192");
    char flags[1024];
    snprintf(flags, sizeof flags, "%s", line);
    free(out);
    free(err);
    snprintf(command, sizeof command,
             "'%s' plan '%s' --engine=vllm %s --device_memory=32GiB --weights_total=69321223296 "
             "--weights_experts=64424509440 --context_length=32768 --format=json",
             KVSHARD_CLI, MODEL, flags);
    assert_int_equal(tu_run(command, &out, &err), 0);
    assert_non_null(strstr(out, "\"num_gpu_blocks\": 1048"));
    assert_non_null(strstr(out, "\"gpu_kv_cache_tokens\": 981167"));
    assert_non_null(strstr(out, "\"balanced_max_seqs\": 29"));
    free(out);
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vllm_worked_example),
        cmocka_unit_test(test_vllm_length_and_fraction),
        cmocka_unit_test(test_vllm_json_and_text),
        cmocka_unit_test(test_vllm_launch_line_replans),
        cmocka_unit_test(test_sglang_worked_example),
        cmocka_unit_test(test_sglang_launch_line_replans),
        cmocka_unit_test(test_engine_refusals),
        cmocka_unit_test(test_vllm_repeats_given_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
