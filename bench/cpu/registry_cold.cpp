// What the registry's look-up of a launch's pointer words costs when the caches
// are cold, as they are in a framework whose own work between two launches
// sweeps far more memory than the caches hold. ALLOCATIONS live allocations
// (64 KiB to 8 MiB, as a training step's tensors); each round makes and frees
// one more (the map changes between launches, as a framework's does), sweeps
// SWEEP_MB of other memory, untimed, and times Registry::find_all of WORDS
// pointers into allocations spread over the set.
//
// Usage: registry_cold ALLOCATIONS WORDS SWEEP_MB [ROUNDS]   (prints the median and 90th percentile)
#include "core/registry/registry.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

bool whole_number(const char* text, long low, long high, long& out) {
    char* end = nullptr;
    out = std::strtol(text, &end, 10);
    return end != text && *end == '\0' && out >= low && out <= high;
}

} // namespace

int main(int argc, char** argv) {
    constexpr long kMaxWords = 64;
    long allocations = 0, words = 0, sweep_mb = 0, rounds = 5000;
    if (argc < 4 || argc > 5 || !whole_number(argv[1], 1, 1000000, allocations) ||
        !whole_number(argv[2], 1, kMaxWords, words) || !whole_number(argv[3], 0, 4096, sweep_mb) ||
        (argc == 5 && !whole_number(argv[4], 1, 10000000, rounds))) {
        std::fprintf(stderr, "usage: %s ALLOCATIONS(1-1000000) WORDS(1-64) SWEEP_MB(0-4096) [ROUNDS]\n", argv[0]);
        return 2;
    }
    uvmp::Registry registry;
    std::vector<uint64_t> bases;
    uint64_t next = 0x7f0000000000;
    for (long i = 0; i < allocations; ++i) {
        const uint64_t size = i % 5 == 0 ? uint64_t{8} << 20 : (uint64_t{64} << 10) * static_cast<uint64_t>(1 + i % 7);
        registry.add(next, size, 0, nullptr);
        bases.push_back(next);
        next += size + 512;
    }
    std::vector<unsigned char> sweep(static_cast<size_t>(sweep_mb) << 20, 1);
    volatile unsigned sink = 0;
    std::vector<uvmp::AccessHit> hits;
    std::vector<double> ns;
    ns.reserve(static_cast<size_t>(rounds));
    uint64_t pointers[kMaxWords];
    for (long round = 0; round < rounds; ++round) {
        for (long w = 0; w < words; ++w)
            pointers[w] = bases[static_cast<size_t>(round * 7 + w * 131) % bases.size()] + 256;
        for (size_t at = 0; at < sweep.size(); at += 64) sink = sink + sweep[at]++;
        registry.add(next, 4096, 0, nullptr);
        registry.remove(next);
        hits.clear();
        const auto start = std::chrono::steady_clock::now();
        registry.find_all({pointers, static_cast<size_t>(words)}, hits);
        ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
        if (hits.size() != static_cast<size_t>(words)) {
            std::fprintf(stderr, "registry_cold: %zu hits for %ld words\n", hits.size(), words);
            return 1;
        }
    }
    std::sort(ns.begin(), ns.end());
    std::printf("%ld allocations, %ld words, %ld MB swept: find_all median %.0f ns, 90th percentile %.0f ns\n",
                allocations, words, sweep_mb, ns[ns.size() / 2], ns[ns.size() * 9 / 10]);
    return 0;
}
