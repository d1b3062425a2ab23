/* A downstream program built against an installed kvshard (through its CMake
 * package or its pkg-config file). It plans the seed deployment and checks
 * one figure: split rank 0 (TP rank 0) stores layers 3 11 19 27 35.
 *
 *   consumer DEPLOYMENT.yaml      (examples/qwen3_5_35b_a3b_tp4.yaml)
 */
#include <kvshard/kvshard.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DEPLOYMENT.yaml\n", argv[0]);
        return 2;
    }
    if (strcmp(kvshard_version(), KVSHARD_VERSION_STRING) != 0) {
        fprintf(stderr, "FAIL: library %s, headers %s\n", kvshard_version(),
                KVSHARD_VERSION_STRING);
        return 1;
    }

    kvshard_error err;
    kvshard_deployment *deployment = NULL;
    kvshard_plan *plan = NULL;
    if (kvshard_deployment_load_file(&deployment, argv[1], NULL, &err) != KVSHARD_OK ||
        kvshard_deployment_plan(&plan, deployment, &err) != KVSHARD_OK) {
        fprintf(stderr, "FAIL: %s:%d:%d: %s\n", err.source, err.line, err.column, err.message);
        kvshard_deployment_free(deployment);
        return 1;
    }
    kvshard_deployment_free(deployment);

    static const uint32_t expected[] = {3, 11, 19, 27, 35};
    const size_t n_expected = sizeof expected / sizeof expected[0];
    const uint32_t *layers = NULL;
    size_t count = 0;
    uint32_t split_rank = 99;
    int ok = kvshard_plan_effective_split_size(plan) == 2 &&
             kvshard_plan_split_position(&split_rank, NULL, plan, 0) == KVSHARD_OK &&
             split_rank == 0 &&
             kvshard_plan_rank_layers(&layers, &count, plan, 0) == KVSHARD_OK &&
             count == n_expected;
    for (size_t i = 0; ok && i < count; i++)
        ok = layers[i] == expected[i];

    printf("kvshard %s: split rank 0 stores", kvshard_version());
    for (size_t i = 0; i < count; i++)
        printf(" %" PRIu32, layers[i]);
    printf("; digest %016" PRIx64 "\n", kvshard_plan_digest(plan));
    kvshard_plan_free(plan);
    if (!ok) {
        fprintf(stderr, "FAIL: expected split rank 0 to store layers 3 11 19 27 35\n");
        return 1;
    }
    printf("OK\n");
    return 0;
}
