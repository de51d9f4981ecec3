// The host memory guard's reader (core/hostmem/host_memory.h) on fake
// /proc and /sys/fs/cgroup trees, its decisions (core/hostmem/host_room.h),
// and the driver's guard that asks them (driver/hostmem/host_memory_guard.h).
#include "core/hostmem/host_memory.h"
#include "core/hostmem/host_room.h"
#include "driver/hostmem/host_memory_guard.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace uvmp;
using namespace uvmp::hostmem;

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

// A fake root folder, removed with the test.
class FakeRoot {
public:
    FakeRoot() {
        static int made = 0;
        path_ = std::filesystem::temp_directory_path() /
                ("uvmp-hostmem-" + std::to_string(getpid()) + "-" + std::to_string(made++));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~FakeRoot() { std::filesystem::remove_all(path_); }
    void write(const std::string& relative, const std::string& text) const {
        const auto file = path_ / relative;
        std::filesystem::create_directories(file.parent_path());
        std::ofstream(file) << text;
    }
    std::string path() const { return path_.string(); }
    Reading read() const { return read_host_memory(Sources::under(path())); }

private:
    std::filesystem::path path_;
};

const char* kMeminfo = "MemTotal:       16777216 kB\n"
                       "MemFree:         1048576 kB\n"
                       "MemAvailable:    8388608 kB\n"
                       "Buffers:            1234 kB\n";

} // namespace

TEST_CASE("host memory: meminfo alone gives the machine's figures", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", kMeminfo);
    const Reading r = root.read();
    CHECK(r.mem_total == 16 * kGiB);
    CHECK(r.mem_available == 8 * kGiB);
    CHECK_FALSE(r.cgroup_limit);
    CHECK(r.available() == 8 * kGiB);
    CHECK(r.total() == 16 * kGiB);
}

TEST_CASE("host memory: a cgroup v2 limit below the machine's bounds what is available", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", kMeminfo);
    root.write("proc/self/cgroup", "0::/job.slice/job-1.scope\n");
    root.write("sys/fs/cgroup/job.slice/job-1.scope/memory.max", "4294967296\n");
    root.write("sys/fs/cgroup/job.slice/job-1.scope/memory.current", "3221225472\n");
    // Inactive page cache is reclaimed before the job is killed: it counts as room.
    root.write("sys/fs/cgroup/job.slice/job-1.scope/memory.stat", "anon 1\ninactive_file 536870912\nactive_file 2\n");
    const Reading r = root.read();
    CHECK(r.cgroup_limit == 4 * kGiB);
    CHECK(r.cgroup_left == 1536 * kMiB);
    CHECK(r.available() == 1536 * kMiB);
    CHECK(r.total() == 4 * kGiB);
}

TEST_CASE("host memory: a parent cgroup's tighter limit holds for its children", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", kMeminfo);
    root.write("proc/self/cgroup", "0::/outer/inner\n");
    root.write("sys/fs/cgroup/outer/inner/memory.max", "max\n");
    root.write("sys/fs/cgroup/outer/inner/memory.current", "100\n");
    root.write("sys/fs/cgroup/outer/memory.max", "2147483648\n");
    root.write("sys/fs/cgroup/outer/memory.current", "1073741824\n");
    const Reading r = root.read();
    CHECK(r.cgroup_limit == 2 * kGiB);
    CHECK(r.available() == kGiB);
}

TEST_CASE("host memory: \"max\" everywhere is no limit", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", kMeminfo);
    root.write("proc/self/cgroup", "0::/a\n");
    root.write("sys/fs/cgroup/a/memory.max", "max\n");
    root.write("sys/fs/cgroup/a/memory.current", "4096\n");
    const Reading r = root.read();
    CHECK_FALSE(r.cgroup_limit);
    CHECK(r.available() == 8 * kGiB);
}

TEST_CASE("host memory: cgroup v1's memory controller, where v2 has none (a hybrid machine)", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", kMeminfo);
    root.write("proc/self/cgroup", "5:cpu,cpuacct:/\n4:memory:/docker/abc\n0::/\n");
    root.write("sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes", "3221225472\n");
    root.write("sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "2147483648\n");
    root.write("sys/fs/cgroup/memory/docker/abc/memory.stat", "cache 5\ntotal_inactive_file 1073741824\n");
    // The v1 root's "no limit" is a huge number.
    root.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    root.write("sys/fs/cgroup/memory/memory.usage_in_bytes", "1\n");
    const Reading r = root.read();
    CHECK(r.cgroup_limit == 3 * kGiB);
    CHECK(r.cgroup_left == 2 * kGiB);
    CHECK(r.available() == 2 * kGiB);
}

TEST_CASE("host memory: a container's own cgroup is its mount's root", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", kMeminfo);
    root.write("proc/self/cgroup", "0::/kubepods/pod1/container\n");
    root.write("sys/fs/cgroup/memory.max", "1073741824\n");
    root.write("sys/fs/cgroup/memory.current", "536870912\n");
    CHECK(root.read().available() == 512 * kMiB);
}

TEST_CASE("host memory: missing files leave the figures unknown", "[hostmem]") {
    FakeRoot root;
    Reading r = root.read();
    CHECK_FALSE(r.available());
    CHECK_FALSE(r.total());
    // A cgroup file without its meminfo still bounds.
    root.write("proc/self/cgroup", "0::/\n");
    root.write("sys/fs/cgroup/memory.max", "1073741824\n");
    root.write("sys/fs/cgroup/memory.current", "1073741824\n");
    r = root.read();
    CHECK(r.available() == 0);
    CHECK(r.total() == kGiB);
}

TEST_CASE("host memory: garbage is read as nothing known", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", "MemTotal: lots\nMemAvailable: -5 kB\nnot a line at all\n\xff\xfe");
    root.write("proc/self/cgroup", "garbage\n0::\n::\n4:memory\n");
    root.write("sys/fs/cgroup/memory.max", "12abc\n");
    const Reading r = root.read();
    CHECK_FALSE(r.mem_total);
    CHECK_FALSE(r.mem_available);
    CHECK_FALSE(r.cgroup_limit);
    CHECK_FALSE(r.available());
    CHECK(meminfo_field("MemAvailable: 99999999999999999999 kB\n", "MemAvailable") == std::nullopt);
    CHECK(meminfo_field("MemAvailableX: 1 kB\nMemAvailable: 2 kB", "MemAvailable") == 2048);
    CHECK(cgroup_v1_path("3:cpu,memory:/x\n", "memory") == "/x");
    CHECK(cgroup_v1_path("3:memoryx:/x\n", "memory") == std::nullopt);
    CHECK(cgroup_v2_path("1:name=systemd:/a\n0::/b/c\n") == "/b/c");
}

TEST_CASE("host memory: the reserve is a size as given, or a percentage of the job's total with a floor", "[hostmem]") {
    Reading r;
    r.mem_total = 100 * kGiB;
    CHECK(reserve_bytes(*parse_size_or_percent("512M"), r) == 512 * kMiB);
    CHECK(reserve_bytes(*parse_size_or_percent("0"), r) == 0);
    CHECK(reserve_bytes(*parse_size_or_percent("5%"), r) == 5 * kGiB);
    r.cgroup_limit = 8 * kGiB; // the job's share is the cgroup's: 5% of it is below the floor
    CHECK(reserve_bytes(*parse_size_or_percent("5%"), r) == kReserveFloor);
    CHECK(reserve_bytes(*parse_size_or_percent("50%"), Reading{}) == kReserveFloor);
}

TEST_CASE("host room: lets through what the reading leaves above the reserve, counting what it let", "[hostmem]") {
    Reading reading;
    reading.mem_total = 64 * kGiB;
    reading.mem_available = 3 * kGiB;
    int reads = 0;
    HostRoom room([&] { ++reads; return reading; }, *parse_size_or_percent("1G"), {1000, 1ull << 40});
    CHECK(room.take(kGiB, 0));
    CHECK(room.take(kGiB, 10));
    CHECK(room.room() == 0);
    CHECK_FALSE(room.take(2 * kMiB, 20)); // 2G of 3G taken, the reserve is 1G
    CHECK(reads == 1);                    // within the time, nothing is read again
    CHECK(room.available() == 3 * kGiB);
    CHECK(room.reserve() == kGiB);
    // Once the reading is old it is taken again: what was let through has landed.
    reading.mem_available = kGiB + 4 * kMiB;
    CHECK(room.take(2 * kMiB, 1000));
    CHECK(reads == 2);
    CHECK_FALSE(room.take(4 * kMiB, 1001));
}

TEST_CASE("host room: reads again after letting through its byte threshold", "[hostmem]") {
    Reading reading;
    reading.mem_available = 100 * kGiB;
    int reads = 0;
    HostRoom room([&] { ++reads; return reading; }, *parse_size_or_percent("0"), {1ull << 60, 256 * kMiB});
    for (int i = 0; i < 4; ++i) CHECK(room.take(64 * kMiB, 0));
    CHECK(reads == 1);
    reading.mem_available = 0; // something else took the host's memory
    CHECK_FALSE(room.take(64 * kMiB, 0));
    CHECK(reads == 2);
}

TEST_CASE("host room: figures that cannot be read let everything through", "[hostmem]") {
    HostRoom room([] { return Reading{}; }, *parse_size_or_percent("5%"));
    CHECK(room.take(1ull << 50, 0));
    CHECK_FALSE(room.available());
}

TEST_CASE("host memory guard: refusals counted, the stats file and the summary say what the host holds", "[hostmem]") {
    Config config;
    Stats stats;
    Reading reading;
    reading.mem_total = 16 * kGiB;
    reading.mem_available = 1536 * kMiB;
    driver::HostMemoryGuard guard(config, stats, [&] { return reading; });
    // The default reserve: 5% of 16G is below the 1G floor. Below the 256 MiB a
    // reading lets through, nothing is read again.
    CHECK(guard.admit_host_slab(64 * kMiB));
    stats.host_slab_created(64 * kMiB);
    CHECK_FALSE(guard.admit_host_slab(512 * kMiB));
    CHECK(guard.admit_eviction(128 * kMiB));
    stats.moved(0, MoveCount::Evict, 128 * kMiB);
    CHECK_FALSE(guard.admit_eviction(330 * kMiB));
    stats.moved(0, MoveCount::Prefetch, 32 * kMiB);

    const auto j = nlohmann::json::parse(stats.to_json(true, 1))["host_memory"];
    CHECK(j["host_slab_bytes"] == 64 * kMiB);
    CHECK(j["host_slab_bytes_peak"] == 64 * kMiB);
    CHECK(j["evicted_bytes_on_host"] == 96 * kMiB);
    CHECK(j["available_bytes"] == 1536 * kMiB);
    CHECK(j["reserve_bytes"] == kGiB);
    CHECK(j["short"] == true);
    CHECK(j["host_slabs_refused"] == 1);
    CHECK(j["host_slab_bytes_refused"] == 512 * kMiB);
    CHECK(j["evictions_not_made"] == 1);
    CHECK(j["eviction_bytes_not_made"] == 330 * kMiB);
    std::string summary;
    for (const std::string& line : stats.summary_lines()) summary += line + "\n";
    CHECK_THAT(summary, Catch::Contains("host memory (not the GPU's): host slabs hold 64.0 MiB at exit"));
    CHECK_THAT(summary, Catch::Contains("short: 1 host slabs (512.0 MiB) homed on the GPU instead, 1 evictions"));
    // Nothing on the host, nothing short: no line.
    stats.reset();
    for (const std::string& line : stats.summary_lines()) CHECK(line.rfind("host memory", 0) != 0);
}

TEST_CASE("host memory guard: reads the tree UVMP_HOST_MEMORY_ROOT names", "[hostmem]") {
    FakeRoot root;
    root.write("proc/meminfo", "MemTotal: 4194304 kB\nMemAvailable: 524288 kB\n");
    Config config;
    config.host_memory_root = root.path();
    config.host_reserve = parse_size_or_percent("256M");
    Stats stats;
    driver::HostMemoryGuard guard(config, stats);
    CHECK(guard.admit_eviction(128 * kMiB));
    CHECK_FALSE(guard.admit_eviction(256 * kMiB));
    CHECK(stats.host_memory.available_bytes.load() == 512 * kMiB);
}
