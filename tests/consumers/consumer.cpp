// A downstream C++ program built against an installed kvshard through
// kvshard.hpp (CMake package or pkg-config, shared or static library). Like
// an engine, it has names of its own that kvshard must not clash with:
// - global C functions kvs_free, kvs_alloc and kvs_mul (names kvshard's
//   internals once had): with the static archive, any such definition in
//   libkvshard.a would be a duplicate symbol at link time;
// - its own YAML library found as "YAML" (here a fake pkg-config module
//   that only adds -DCONSUMER_OWN_YAML=1), which kvshard's package must
//   neither replace nor link in place of libyaml.
//
//   consumer_cxx DEPLOYMENT.yaml      (examples/qwen3_5_35b_a3b_tp4.yaml)
//
// It checks that TP rank 0 stores layers 3 11 19 27 35 and that a broken
// deployment string fails with a located kvshard::Error.
#include <kvshard/kvshard.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
// The engine's own allocator helpers, with C linkage as a C engine has them.
void *kvs_alloc(std::size_t size);
void kvs_free(void *p);
int kvs_mul(int a, int b);
}

void *kvs_alloc(std::size_t size)
{
    return std::malloc(size);
}

void kvs_free(void *p)
{
    std::free(p);
}

int kvs_mul(int a, int b)
{
    return a * b;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DEPLOYMENT.yaml\n", argv[0]);
        return 2;
    }
    if (std::strcmp(kvshard::version(), KVSHARD_VERSION_STRING) != 0) {
        std::fprintf(stderr, "FAIL: library %s, headers %s\n", kvshard::version(),
                     KVSHARD_VERSION_STRING);
        return 1;
    }
#ifdef CONSUMER_OWN_YAML
    const char *own_yaml = "its own YAML module";
#else
    const char *own_yaml = "no YAML module of its own";
#endif

    // The engine's own functions still work next to kvshard's.
    void *p = kvs_alloc(16);
    const bool own_ok = p != nullptr && kvs_mul(6, 7) == 42;
    kvs_free(p);
    if (!own_ok) {
        std::fprintf(stderr, "FAIL: the consumer's own kvs_* functions\n");
        return 1;
    }

    try {
        const kvshard::Plan plan = kvshard::Deployment::load_file(argv[1]).plan();
        const std::vector<std::uint32_t> layers = plan.rank_layers(0).to_vector();
        std::printf("kvshard %s from C++ (%s): split rank 0 stores", kvshard::version(), own_yaml);
        for (std::uint32_t layer : layers)
            std::printf(" %" PRIu32, layer);
        std::printf("; digest %016" PRIx64 "\n", plan.digest());
        if (layers != std::vector<std::uint32_t>{3, 11, 19, 27, 35}) {
            std::fprintf(stderr, "FAIL: expected split rank 0 to store layers 3 11 19 27 35\n");
            return 1;
        }
    } catch (const kvshard::Error &e) {
        std::fprintf(stderr, "FAIL: %s\n", e.what());
        return 1;
    }

    // A key indented by one space fits neither mapping: line 3, column 2.
    try {
        static_cast<void>(kvshard::Deployment::load_string(
            "parallel:\n  world_size: 4\n dp_size: 1\n", "broken.yaml"));
        std::fprintf(stderr, "FAIL: a broken deployment was accepted\n");
        return 1;
    } catch (const kvshard::Error &e) {
        if (e.code() != KVSHARD_ESYNTAX || e.line() != 3 || e.column() != 2 ||
            std::strcmp(e.source(), "broken.yaml") != 0) {
            std::fprintf(stderr, "FAIL: error without its location: %s\n", e.what());
            return 1;
        }
        std::printf("broken deployment: %s\n", e.what());
    }
    std::printf("OK\n");
    return 0;
}
