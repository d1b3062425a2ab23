/* The test helpers of the explore part (writing a plan, running the CLI,
 * transfers, comm estimates): linked only into the tests of a build with
 * it (KVSHARD_BUILD_EXPLORE), whose calls they make. */
#include "test_util.h"

#include "kvshard/output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *tu_plan_json(const kvshard_plan *plan)
{
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_json(plan, tu_append, &text), KVSHARD_OK);
    assert_non_null(text);
    return text;
}

char *tu_plan_text(const kvshard_plan *plan)
{
    char *text = NULL;
    assert_int_equal(kvshard_plan_write_text(plan, tu_append, &text), KVSHARD_OK);
    assert_non_null(text);
    return text;
}

int tu_cli(const char *command, const char *args, char **out_stdout, char **out_stderr)
{
    size_t len = strlen(KVSHARD_CLI) + strlen(command) + strlen(args) + 8;
    char *line = malloc(len);
    assert_non_null(line);
    snprintf(line, len, "\"%s\" %s %s", KVSHARD_CLI, command, args);
    int status = tu_run(line, out_stdout, out_stderr);
    free(line);
    return status;
}

kvshard_plan *tu_plan_tp(const kvshard_model *m, uint32_t world, uint32_t split)
{
    kvshard_options o = KVSHARD_OPTIONS_INIT;
    o.world_size = world;
    o.enable_layerwise_split = split > 1;
    o.layerwise_split_size = split > 1 ? split : 1;
    return tu_plan(m, &o);
}

kvshard_transfer *tu_transfer(const kvshard_plan *p, const kvshard_plan *d, uint64_t tokens)
{
    kvshard_transfer_options o = KVSHARD_TRANSFER_OPTIONS_INIT;
    o.tokens = tokens;
    kvshard_transfer *t = NULL;
    kvshard_error err;
    tu_assert_ok(kvshard_transfer_create(&t, p, d, &o, NULL, &err), &err);
    return t;
}

kvshard_comm_estimate tu_comm_estimate(const kvshard_plan *p)
{
    kvshard_comm_estimate e = KVSHARD_COMM_ESTIMATE_INIT;
    kvshard_error err;
    tu_assert_ok(kvshard_plan_comm(&e, p, &err), &err);
    return e;
}

const kvshard_transfer_edge *tu_transfer_edge(const kvshard_transfer *t, uint32_t src, uint32_t dst,
                                              const char *component, uint32_t lo)
{
    for (size_t i = 0; i < kvshard_transfer_edge_count(t); i++) {
        const kvshard_transfer_edge *e = kvshard_transfer_edge_at(t, i);
        if (e->src == src && e->dst == dst && strcmp(e->component, component) == 0 &&
            e->unit_lo == lo)
            return e;
    }
    fail_msg("no edge %u -> %u %s [%u, ...)", src, dst, component, lo);
    return NULL;
}
