// What the trace writer costs a launch when the caches are cold, as they are in a
// program whose own work between two launches sweeps far more memory than the
// caches hold. Each launch record (nine accesses) follows a sweep over SWEEP_MB
// of other memory, which is not timed; 0 times records back to back.
//
// Usage: trace_writer_cold SWEEP_MB [OUT_FILE]   (prints ns per record)
#include "core/trace/format/writer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SWEEP_MB [OUT_FILE]\n", argv[0]);
        return 2;
    }
    char* end = nullptr;
    const long sweep_mb = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || sweep_mb < 0 || sweep_mb > 4096) {
        std::fprintf(stderr, "trace_writer_cold: SWEEP_MB must be a whole number from 0 to 4096, got '%s'\n", argv[1]);
        return 2;
    }
    const std::string path = argc > 2 ? argv[2] : "trace_writer_cold.uvmt";
    std::string error;
    auto writer = uvmp::trace::TraceWriter::open({path, 64u << 20}, uvmp::trace::Header{}, error);
    if (!writer) {
        std::fprintf(stderr, "trace_writer_cold: %s\n", error.c_str());
        return 1;
    }
    const size_t sweep_bytes = static_cast<size_t>(sweep_mb) << 20;
    std::vector<char> other(sweep_bytes ? sweep_bytes : 64);
    std::mt19937 rng(1);
    // Nine accesses a launch, as resnet50's launches have about 8.5.
    std::vector<uvmp::trace::Access> accesses(9 * 1000);
    for (auto& a : accesses)
        a = {static_cast<uint32_t>(rng() % 130), (rng() % 4) ? 0 : static_cast<uint64_t>(rng() % (1u << 26)) * 256, 0};
    const int records = sweep_bytes ? 20'000 : 2'000'000;
    // Every other record is written untimed after timing an empty region: what
    // reading the clock costs with the caches just as cold.
    double record_ns = 0, clock_ns = 0;
    for (int i = 0; i < records; ++i) {
        if (sweep_bytes)
            for (size_t k = 0; k < other.size(); k += 64) ++other[k];
        uvmp::trace::Launch launch;
        launch.seq = static_cast<uint64_t>(i);
        launch.kernel_id = static_cast<uint32_t>(i % 200);
        launch.grid[0] = 1024;
        launch.block[0] = 256;
        launch.stream = 0x1234;
        launch.time_ns = 1'000'000'000ull + 3000ull * static_cast<uint64_t>(i);
        const auto record = std::span(accesses).subspan(static_cast<size_t>(i % 1000) * 9, 9);
        const auto start = std::chrono::steady_clock::now();
        if (i % 2) writer->launch(launch, record);
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
        if (i % 2) {
            record_ns += ns;
        } else {
            clock_ns += ns;
            writer->launch(launch, record);
        }
    }
    writer->close();
    const double half = records / 2.0;
    std::printf("sweep %ld MiB between records: %.0f ns a launch record of 9 accesses, %.0f ns of it reading the clock; "
                "%llu dropped\n",
                sweep_mb, record_ns / half, clock_ns / half, static_cast<unsigned long long>(writer->records_dropped()));
    std::remove(path.c_str());
    return 0;
}
