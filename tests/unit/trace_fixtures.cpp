#include "trace_fixtures.h"

#include <filesystem>
#include <cstring>
#include <stdexcept>
#include <fstream>
#include <iterator>

namespace uvmp::trace::fixtures {

std::string scratch_path(const std::string& name) {
    std::filesystem::path dir = std::filesystem::path(UVMP_BINARY_DIR) / "test-scratch";
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}

std::vector<std::byte> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

void add_alloc(Trace& t, uint32_t id, uint64_t size, uint64_t launches_before, AllocKind kind) {
    Alloc a;
    a.id = id;
    a.size = size;
    a.kind = kind;
    a.launches_before = launches_before;
    t.allocs.push_back(a);
}

void add_free(Trace& t, uint32_t id, uint64_t launches_before) {
    Free f;
    f.id = id;
    f.launches_before = launches_before;
    t.frees.push_back(f);
}

void add_launch(Trace& t, uint32_t kernel_id, std::span<const Access> accesses, uint64_t duration_ns) {
    Launch l;
    l.seq = t.launches.size();
    l.kernel_id = kernel_id;
    l.duration_ns = duration_ns;
    l.first_access = static_cast<uint32_t>(t.accesses.size());
    l.access_count = static_cast<uint32_t>(accesses.size());
    t.accesses.insert(t.accesses.end(), accesses.begin(), accesses.end());
    t.launches.push_back(l);
}

void add_launch_naming(Trace& t, uint32_t kernel_id, std::initializer_list<uint32_t> alloc_ids, uint64_t duration_ns) {
    std::vector<Access> accesses;
    for (uint32_t id : alloc_ids) accesses.push_back({id, 0, 0});
    add_launch(t, kernel_id, accesses, duration_ns);
}

Trace loop_trace(uint32_t allocations, uint64_t alloc_mib, uint32_t iterations, uint64_t kernel_us) {
    constexpr uint64_t kMiB = 1ull << 20;
    Trace t;
    for (uint32_t a = 0; a < allocations; ++a) t.allocs.push_back({a, 0x1000000ull * (a + 1), alloc_mib * kMiB});
    for (uint32_t it = 0; it < iterations; ++it) {
        t.iterations.push_back({it, t.launches.size(), 0});
        for (uint32_t a = 0; a < allocations; ++a) {
            const Access access{a, 0, 0};
            add_launch(t, a, {&access, 1}, kernel_us * 1000);
        }
    }
    return t;
}

Trace pooled_job(uint64_t steps, bool marks) {
    TrainingLoopShape shape;
    shape.layers = 4;
    shape.steps = steps;
    shape.pooled = true;
    shape.mark_iterations = marks;
    shape.carry_loss = true;
    shape.teardown = true;
    return make_training_loop(shape);
}

} // namespace uvmp::trace::fixtures
