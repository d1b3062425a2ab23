/* Helpers shared by the cmocka tests. Every helper fails the running test
 * (through cmocka) instead of returning an error. */
#ifndef KVSHARD_TEST_UTIL_H
#define KVSHARD_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "kvshard/kvshard.h"
#include "kvshard/explore.h"

/* Path of a file under examples/ or tests/data/ (static buffer per call site
 * is not needed: the result is malloc'd; free it). */
char *tu_example_path(const char *relative);
char *tu_data_path(const char *relative);

/* Fail the test unless rc is KVSHARD_OK, printing the error first. */
void tu_assert_ok(int rc, const kvshard_error *err);

/* Load examples/models/NAME; the test fails if it does not load. */
kvshard_model *tu_load_example_model(const char *name);
/* Load a model from text; the test fails if it does not load. */
kvshard_model *tu_load_model_text(const char *text);

/* Granite-4.0-H-Tiny's geometry (MODELS.md of the project's fixtures: 40
 * layers, attention at 5, 15, 25, 35, 12 query and 4 KV heads, hidden 1536
 * so head_dim 128; Mamba2 48 heads x 64, state 128, one group, kernel 4;
 * bf16): at T = 12 some split groups straddle two KV heads' replicas. */
kvshard_model *tu_granite_tiny(void);
/* Build a plan; the test fails if it cannot be built. */
kvshard_plan *tu_plan(const kvshard_model *model, const kvshard_options *options);
/* A kvshard_write_fn that appends to a malloc'd NUL-terminated string;
 * `user` is a char ** that starts NULL. */
int tu_append(void *user, const char *data, size_t len);

/* The plan's JSON, and its text, as a NUL-terminated malloc'd string
 * (test_util_output.c: tests of a build with explore only). */
char *tu_plan_json(const kvshard_plan *plan);
char *tu_plan_text(const kvshard_plan *plan);

/* Run a shell command line; capture stdout and stderr (malloc'd, may be NULL
 * to ignore). Returns the exit status, or -1 when it did not exit. */
int tu_run(const char *command, char **out_stdout, char **out_stderr);

/* Run a shell command line that must exit 0; its standard output
 * (malloc'd), standard error printed when it does not. */
char *tu_run_ok(const char *command);
/* The rest of the line after `marker` in `text` into `out` (cut at `cap`);
 * the test fails without one. */
void tu_line_after(char *out, size_t cap, const char *text, const char *marker);

/* kvshard_plan_blocks_for() over every rank with `memory` bytes and nothing
 * else: the common block count into *out. */
int tu_num_blocks(uint64_t *out, const kvshard_plan *plan, uint64_t memory, kvshard_error *err);

/* A new settings object with the pairs KEY, VALUE, ... set, ended by NULL;
 * the caller frees it. */
kvshard_settings *tu_settings(const char *key, ...);
/* Set one setting; the test fails if it cannot be set. */
void tu_set(kvshard_settings *settings, const char *key, const char *value);

/* A capacity figure by name, which must have a value. */
uint64_t tu_figure(const kvshard_plan *plan, const char *name);
/* What the plan keeps of its model (kvshard_plan_model()), which must answer. */
kvshard_plan_model_info tu_plan_model(const kvshard_plan *plan);
/* Whether a capacity figure by name has a value. */
bool tu_has_figure(const kvshard_plan *plan, const char *name);

/* The full-attention layers a TP rank stores, compared with `expected`. */
void tu_assert_rank_layers(const kvshard_plan *plan, uint32_t plan_rank, const uint32_t *expected,
                           size_t count);

/* ---- engine profiles: a deployment planned with an engine's flags ---------- */

/* examples/MODEL ("models/...") or tests/data/MODEL loaded as a deployment
 * with `count` flags `args` applied: the status, the deployment into *out
 * (NULL on a failure). */
int tu_deployment_args(kvshard_deployment **out, kvshard_error *err, const char *model,
                       size_t count, const char *const *args);

/* examples/MODEL ("models/...") or tests/data/MODEL loaded as a deployment,
 * the flags given (NULL-ended, at most 40) applied, and planned: the
 * status, and the plan into *out when it is made. */
int tu_plan_flags(kvshard_plan **out, kvshard_error *err, const char *model, ...);

/* The plan of MODEL with its flags, which must be made. */
#define TU_PLAN(out, ...)                                                                          \
    do {                                                                                           \
        kvshard_error tu_plan_err_;                                                                \
        tu_assert_ok(tu_plan_flags((out), &tu_plan_err_, __VA_ARGS__, NULL), &tu_plan_err_);       \
    } while (0)

/* The planning fails with `code` and a message that contains `text`. */
#define TU_REFUSED(code, text, ...)                                                                \
    do {                                                                                           \
        kvshard_plan *refused_ = NULL;                                                             \
        kvshard_error refused_err_;                                                                \
        int refused_rc_ = tu_plan_flags(&refused_, &refused_err_, __VA_ARGS__, NULL);              \
        if (refused_rc_ != (code) || !strstr(refused_err_.message, (text)))                        \
            print_error("got %s: %s\nexpected %s containing \"%s\"\n",                             \
                        kvshard_strerror(refused_rc_), refused_err_.message,                       \
                        kvshard_strerror(code), (text));                                           \
        assert_int_equal(refused_rc_, (code));                                                     \
        assert_non_null(strstr(refused_err_.message, (text)));                                     \
        assert_null(refused_);                                                                     \
    } while (0)

/* An engine figure by name, which must exist; the typed readers check its
 * type too. */
kvshard_figure tu_engine_figure(const kvshard_plan *p, const char *name);
uint64_t tu_efig(const kvshard_plan *p, const char *name);
bool tu_efig_null(const kvshard_plan *p, const char *name);
bool tu_efig_bool(const kvshard_plan *p, const char *name);
const char *tu_efig_text(const kvshard_plan *p, const char *name);
double tu_efig_double(const kvshard_plan *p, const char *name);

/* `got` is within `tolerance` of `want`, else both are printed. */
void tu_assert_near(double got, double want, double tolerance);
/* `needle` is in `haystack`, else both are printed. */
void tu_assert_contains(const char *haystack, const char *needle);
/* The message of the plan's first warning `code`; NULL without one. */
const char *tu_warning_message(const kvshard_plan *p, kvshard_warning_code code);

/* ---- explore: the CLI, transfers and comm estimates (test_util_output.c) ---- */

/* Run `kvshard COMMAND ARGS` (the built CLI); the exit status, standard
 * output and error as tu_run gives them. */
int tu_cli(const char *command, const char *args, char **out_stdout, char **out_stderr);
/* The plan of `m` on `world` TP ranks, with a layerwise split of `split`
 * above 1; the test fails if it cannot be made. */
kvshard_plan *tu_plan_tp(const kvshard_model *m, uint32_t world, uint32_t split);
/* The transfer of `tokens` tokens from plan p to plan d, which must be made. */
kvshard_transfer *tu_transfer(const kvshard_plan *p, const kvshard_plan *d, uint64_t tokens);
/* The edge from global rank src to dst of `component` whose units start at
 * lo; the test fails when there is none. */
const kvshard_transfer_edge *tu_transfer_edge(const kvshard_transfer *t, uint32_t src, uint32_t dst,
                                              const char *component, uint32_t lo);
/* The plan's communication estimate, which must be made. */
kvshard_comm_estimate tu_comm_estimate(const kvshard_plan *p);

#endif /* KVSHARD_TEST_UTIL_H */
