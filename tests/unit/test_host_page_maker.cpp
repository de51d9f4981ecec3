// The host page maker (driver/hostmem/host_page_maker.h) on anonymous host
// memory: it makes every page, leaves what the memory holds as it was, and lets
// a slab go only once no thread is in it.
#include "driver/hostmem/host_page_maker.h"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

using namespace uvmp;
using namespace uvmp::driver;

namespace {

constexpr uint64_t kMiB = 1ull << 20;

// Anonymous memory with no page made yet; unmapped with the test.
struct Mapping {
    explicit Mapping(uint64_t bytes) : bytes(bytes) {
        base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        REQUIRE(base != MAP_FAILED);
    }
    ~Mapping() { munmap(base, bytes); }
    uint64_t address() const { return reinterpret_cast<uint64_t>(base); }
    char* bytes_at(uint64_t offset) const { return static_cast<char*>(base) + offset; }
    // How many of its pages are in memory.
    uint64_t resident_pages() const {
        const long page = sysconf(_SC_PAGESIZE);
        std::vector<unsigned char> in_core((bytes + page - 1) / page);
        REQUIRE(mincore(base, bytes, in_core.data()) == 0);
        uint64_t resident = 0;
        for (unsigned char c : in_core) resident += c & 1;
        return resident;
    }
    void* base;
    uint64_t bytes;
};

bool made_within(Stats& stats, uint64_t bytes, std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (stats.host_memory.host_page_bytes_made.load() < bytes)
        if (std::chrono::steady_clock::now() > until) return false;
        else std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return true;
}

} // namespace

TEST_CASE("host page maker: every page of a slab is made, and what it held stays") {
    Stats stats;
    // Not a whole number of pieces: the last piece (the slab's first) is short.
    const uint64_t bytes = 3 * HostPageMaker::kPieceBytes + 6 * kMiB;
    Mapping slab(bytes);
    // Written before, as a kernel may write a block while its slab's pages are made.
    const std::vector<uint64_t> written = {0, HostPageMaker::kPieceBytes - 1, bytes / 2, bytes - 1};
    for (uint64_t offset : written) *slab.bytes_at(offset) = 0x5a;
    HostPageMaker pages(3, stats);
    pages.make(slab.address(), bytes);
    REQUIRE(made_within(stats, bytes, std::chrono::seconds(30)));
    CHECK(stats.host_memory.host_page_bytes_made.load() == bytes);
    CHECK(slab.resident_pages() == bytes / static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
    for (uint64_t offset : written) CHECK(*slab.bytes_at(offset) == 0x5a);
    CHECK(*slab.bytes_at(bytes / 4) == 0);
}

TEST_CASE("host page maker: a slab forgotten is left alone from then on") {
    Stats stats;
    const uint64_t bytes = 64 * HostPageMaker::kPieceBytes;
    Mapping slab(bytes);
    HostPageMaker pages(1, stats);
    pages.make(slab.address(), bytes);
    pages.forget(slab.address());
    // Nothing under way any more, and nothing left to begin: the count stays.
    const uint64_t made = stats.host_memory.host_page_bytes_made.load();
    CHECK(made % HostPageMaker::kPieceBytes == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(stats.host_memory.host_page_bytes_made.load() == made);
    // Unmapping it now is safe; another slab is still made in full.
    Mapping other(2 * HostPageMaker::kPieceBytes);
    pages.make(other.address(), other.bytes);
    CHECK(made_within(stats, made + other.bytes, std::chrono::seconds(30)));
}

TEST_CASE("host page maker: once stopped it makes nothing more") {
    Stats stats;
    Mapping slab(8 * HostPageMaker::kPieceBytes);
    HostPageMaker pages(2, stats);
    pages.make(slab.address(), slab.bytes);
    pages.stop();
    const uint64_t made = stats.host_memory.host_page_bytes_made.load();
    pages.make(slab.address(), slab.bytes);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(stats.host_memory.host_page_bytes_made.load() == made);
}
