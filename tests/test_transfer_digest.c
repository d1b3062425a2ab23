/* The transfer's digest is worked out the first time it is asked and kept:
 * the writers of a fresh map print it, and threads that ask a fresh map at
 * once all get the same value. The map is docs/transfer.md's worked example
 * (Qwen3.5-35B-A3B, P TP 2 -> D TP 4 with a split of 2), whose digest is
 * ee1b03cab8841722. */
#include "test_util.h"

#include "kvshard/explore.h"
#include "kvshard/output.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WORKED_DIGEST UINT64_C(0xee1b03cab8841722)
#define READERS 8

typedef struct worked {
    kvshard_model *model;
    kvshard_plan *p, *d;
} worked;

static worked worked_open(void)
{
    worked w;
    w.model = tu_load_example_model("qwen3_5_35b_a3b.json");
    w.p = tu_plan_tp(w.model, 2, 1);
    w.d = tu_plan_tp(w.model, 4, 2);
    return w;
}

static void worked_close(worked *w)
{
    kvshard_plan_free(w->d);
    kvshard_plan_free(w->p);
    kvshard_model_free(w->model);
}

/* The JSON and the text of a map no one has asked its digest. */
static void test_writers_of_a_fresh_map(void **state)
{
    (void)state;
    worked w = worked_open();
    kvshard_transfer *t = tu_transfer(w.p, w.d, 32768);
    char *json = NULL;
    assert_int_equal(kvshard_transfer_write_json(t, tu_append, &json), KVSHARD_OK);
    assert_non_null(strstr(json, "\"digest\": \"ee1b03cab8841722\""));
    free(json);
    kvshard_transfer_free(t);

    t = tu_transfer(w.p, w.d, 32768);
    char *text = NULL;
    assert_int_equal(kvshard_transfer_write_text(t, tu_append, &text), KVSHARD_OK);
    assert_non_null(strstr(text, "digest     ee1b03cab8841722\n"));
    assert_int_equal(kvshard_transfer_digest(t), WORKED_DIGEST);
    free(text);
    kvshard_transfer_free(t);
    worked_close(&w);
}

typedef struct reader {
    const kvshard_transfer *transfer;
    uint64_t digest;
} reader;

static void *read_digest(void *arg)
{
    reader *r = arg;
    r->digest = kvshard_transfer_digest(r->transfer);
    return NULL;
}

static void test_threads_ask_a_fresh_map(void **state)
{
    (void)state;
    worked w = worked_open();
    kvshard_transfer *t = tu_transfer(w.p, w.d, 32768);
    pthread_t threads[READERS];
    reader readers[READERS];
    for (int i = 0; i < READERS; i++) {
        readers[i] = (reader){t, 0};
        assert_int_equal(pthread_create(&threads[i], NULL, read_digest, &readers[i]), 0);
    }
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (int i = 0; i < READERS; i++)
        assert_int_equal(readers[i].digest, WORKED_DIGEST);
    assert_int_equal(kvshard_transfer_digest(t), WORKED_DIGEST);
    kvshard_transfer_free(t);
    worked_close(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writers_of_a_fresh_map),
        cmocka_unit_test(test_threads_ask_a_fresh_map),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
