/* Weights from model.safetensors.index.json when none of its shards is in
 * the directory: the total is the index's metadata.total_size, the experts
 * are given or estimated from the index's expert tensor names and the
 * config. The worked example, Qwen3.5-35B-A3B: 40 layers x 256 experts x 3
 * projections x (512 x 2,048 elements) x 2 B (bfloat16) = 64,424,509,440 B
 * of experts, total_size 69,321,223,296: fit of the directory gives the rows
 * of fit with --weights_total=69321223296 --weights_experts=64424509440. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOTAL_SIZE "69321223296"
#define QWEN_EXPERTS "64424509440"
#define FIT_FLAGS "--gpus=8 --device_memory=81559MiB --context_length=131072"

typedef struct index_dir {
    char dir[64];
    char config[128];
} index_dir;

/* A directory holding the Qwen3.5-35B-A3B config (with `config_extra`
 * spliced after its first brace, "" for none) and an index naming every
 * expert projection of its 40 layers (`experts.<j>.<p>.<expert_tail>`, or
 * with a NULL tail each layer's experts fused in `experts.gate_up_proj` and
 * `experts.down_proj`), a norm per layer, over two shards, with `metadata`
 * as the index's metadata object. */
static void index_dir_open(index_dir *d, const char *config_extra, const char *metadata,
                           const char *expert_tail)
{
    snprintf(d->dir, sizeof d->dir, "/tmp/kvshard_index_XXXXXX");
    assert_non_null(mkdtemp(d->dir));
    snprintf(d->config, sizeof d->config, "%s/config.json", d->dir);
    char *source = tu_example_path("models/qwen3_5_35b_a3b.json");
    FILE *in = fopen(source, "rb");
    assert_non_null(in);
    FILE *out = fopen(d->config, "wb");
    assert_non_null(out);
    int c, first = 1;
    while ((c = fgetc(in)) != EOF) {
        fputc(c, out);
        if (c == '{' && first) {
            fputs(config_extra, out);
            first = 0;
        }
    }
    fclose(in);
    fclose(out);
    free(source);
    char path[128];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", d->dir);
    out = fopen(path, "wb");
    assert_non_null(out);
    fprintf(out, "{\"metadata\": %s, \"weight_map\": {", metadata);
    static const char *const projections[] = {"gate_proj", "up_proj", "down_proj"};
    for (int layer = 0; layer < 40; layer++) {
        fprintf(out,
                "%s\"model.language_model.layers.%d.input_layernorm.weight\": "
                "\"model-00002-of-00002.safetensors\"",
                layer ? ", " : "", layer);
        if (!expert_tail) /* every expert fused in two tensors */
            fprintf(out,
                    ", \"model.language_model.layers.%d.mlp.experts.gate_up_proj\": "
                    "\"model-00001-of-00002.safetensors\", "
                    "\"model.language_model.layers.%d.mlp.experts.down_proj\": "
                    "\"model-00001-of-00002.safetensors\"",
                    layer, layer);
        for (int e = 0; expert_tail && e < 256; e++)
            for (int p = 0; p < 3; p++)
                fprintf(out,
                        ", \"model.language_model.layers.%d.mlp.experts.%d.%s.%s\": "
                        "\"model-00001-of-00002.safetensors\"",
                        layer, e, projections[p], expert_tail);
    }
    fputs("}}\n", out);
    fclose(out);
}

static void index_dir_close(index_dir *d)
{
    char command[128];
    snprintf(command, sizeof command, "rm -rf '%s'", d->dir);
    assert_int_equal(tu_run(command, NULL, NULL), 0);
}

/* The rank rows of a fit's text, each without its weights_estimated note:
 * the lines that start with a rank number. */
static char *rows_of(const char *text)
{
    size_t n = strlen(text);
    char *rows = calloc(n + 1, 1);
    assert_non_null(rows);
    size_t used = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        size_t lead = strspn(line, " ");
        if (lead < len && line[lead] >= '0' && line[lead] <= '9' && lead >= 1) {
            char buf[512];
            snprintf(buf, sizeof buf, "%.*s", (int)len, line);
            char *note = strstr(buf, " weights_estimated");
            if (note)
                memmove(note, note + strlen(" weights_estimated"),
                        strlen(note + strlen(" weights_estimated")) + 1);
            size_t k = strlen(buf);
            while (k && buf[k - 1] == ' ')
                buf[--k] = '\0';
            used += (size_t)sprintf(rows + used, "%s\n", buf);
        }
        line = end ? end + 1 : line + len;
    }
    return rows;
}

static char *cli(int expected_status, const char *fmt, const char *arg, char **err_out)
{
    char command[1024], args[900];
    snprintf(args, sizeof args, fmt, arg);
    snprintf(command, sizeof command, "'%s' %s", KVSHARD_CLI, args);
    char *out = NULL, *err = NULL;
    int status = tu_run(command, &out, &err);
    if (status != expected_status)
        print_error("%s: status %d\n%s\n%s\n", command, status, out ? out : "", err ? err : "");
    assert_int_equal(status, expected_status);
    if (err_out)
        *err_out = err;
    else
        free(err);
    return out;
}

static void test_fit_from_the_index_alone(void **state)
{
    (void)state;
    index_dir d;
    index_dir_open(&d, "", "{\"total_size\": " TOTAL_SIZE "}", "weight");
    char *from_index = cli(0, "fit '%s' " FIT_FLAGS, d.dir, NULL);
    char *model = tu_example_path("models/qwen3_5_35b_a3b.json");
    char *by_hand = cli(
        0, "fit '%s' " FIT_FLAGS " --weights_total=" TOTAL_SIZE " --weights_experts=" QWEN_EXPERTS,
        model, NULL);
    char *a = rows_of(from_index), *b = rows_of(by_hand);
    assert_true(strlen(a) > 100);
    assert_string_equal(a, b);
    tu_assert_contains(from_index, "weights from the safetensors index alone: 69,321,223,296 B, "
                                   "64,424,509,440 B of experts, estimated");
    tu_assert_contains(from_index, " weights_estimated\n");
    free(a);
    free(b);
    free(from_index);
    free(by_hand);
    free(model);
    index_dir_close(&d);
}

static void test_plan_json_and_warning(void **state)
{
    (void)state;
    index_dir d;
    index_dir_open(&d, "", "{\"total_size\": " TOTAL_SIZE "}", "weight");
    char *json =
        cli(0, "plan '%s' --world_size=8 --device_memory=81559MiB --format=json", d.config, NULL);
    tu_assert_contains(json, "\"weights\": {\"source\": \"index\", \"total_bytes\": " TOTAL_SIZE
                             ", \"expert_bytes\": " QWEN_EXPERTS
                             ", \"draft_bytes\": null, \"tensors\": null, \"unknown_tensors\": "
                             "null, \"unknown_bytes\": null, \"first_unknown\": null, "
                             "\"index_total_size\": " TOTAL_SIZE "}");
    free(json);
    char *text = cli(0, "plan '%s' --world_size=8 --device_memory=81559MiB", d.config, NULL);
    tu_assert_contains(text, "weights_estimated: the weights are estimated from "
                             "model.safetensors.index.json alone (none of its shards is at "
                             "hand): total_size 69321223296 bytes, 64424509440 bytes of experts "
                             "(estimated from its expert tensors' names and the config)");
    free(text);
    /* Given, the experts are taken as they are. */
    text = cli(0, "plan '%s' --world_size=8 --device_memory=81559MiB --weights_experts=60000000000",
               d.config, NULL);
    tu_assert_contains(text, "69,321,223,296 B, 60,000,000,000 B of experts)");
    tu_assert_contains(text, "60000000000 bytes of experts (weights_experts as given)");
    free(text);
    index_dir_close(&d);
}

/* Fused experts: per layer gate_up_proj 2 x I x H x E and down_proj
 * I x H x E elements, 3 x 512 x 2,048 x 256 x 2 B = 1,610,612,736 B a layer,
 * x 40 = 64,424,509,440 B, as the experts one by one. */
static void test_fused_experts(void **state)
{
    (void)state;
    index_dir d;
    index_dir_open(&d, "", "{\"total_size\": " TOTAL_SIZE "}", NULL);
    char *text = cli(0, "plan '%s' --world_size=8 --device_memory=81559MiB", d.config, NULL);
    tu_assert_contains(text, "69,321,223,296 B, 64,424,509,440 B of experts, estimated)");
    free(text);
    index_dir_close(&d);
}

static void test_refusals(void **state)
{
    (void)state;
    char *err = NULL;
    index_dir d;
    /* No total_size: nothing to count. */
    index_dir_open(&d, "", "{}", "weight");
    free(cli(1, "plan '%s' --world_size=8 --device_memory=81559MiB", d.config, &err));
    tu_assert_contains(err, "model.safetensors.index.json: none of its shards is in the "
                            "directory and its metadata.total_size is absent");
    free(err);
    index_dir_close(&d);
    /* A quantized config: shapes do not give the bytes. */
    index_dir_open(&d, "\"quantization_config\": {\"quant_method\": \"fp8\"}, ",
                   "{\"total_size\": " TOTAL_SIZE "}", "weight");
    free(cli(1, "plan '%s' --world_size=8 --device_memory=81559MiB", d.config, &err));
    tu_assert_contains(err, "weights: the config has a quantization_config");
    tu_assert_contains(err, "give --weights_experts");
    free(err);
    /* ... unless the experts are given. */
    free(cli(0, "plan '%s' --world_size=8 --device_memory=81559MiB --weights_experts=1000",
             d.config, NULL));
    index_dir_close(&d);
    /* An expert tensor that is not a projection weight (a scale). */
    index_dir_open(&d, "", "{\"total_size\": " TOTAL_SIZE "}", "weight_scale");
    free(cli(1, "plan '%s' --world_size=8 --device_memory=81559MiB", d.config, &err));
    tu_assert_contains(err, "tensor \"model.language_model.layers.0.mlp.experts.0.gate_proj."
                            "weight_scale\" is not a projection weight kvshard sizes");
    free(err);
    index_dir_close(&d);
    /* Some shards at hand but not all: the first absent in reading order
     * (the norms' shard comes first in the weight_map) is named. */
    index_dir_open(&d, "", "{\"total_size\": " TOTAL_SIZE "}", "weight");
    char command[256];
    snprintf(command, sizeof command, "touch '%s/model-00001-of-00002.safetensors'", d.dir);
    assert_int_equal(tu_run(command, NULL, NULL), 0);
    free(cli(1, "plan '%s' --world_size=8 --device_memory=81559MiB", d.config, &err));
    tu_assert_contains(err, "its weight_map names model-00002-of-00002.safetensors, which the "
                            "directory does not hold");
    free(err);
    index_dir_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fit_from_the_index_alone),
        cmocka_unit_test(test_plan_json_and_warning),
        cmocka_unit_test(test_fused_experts),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
