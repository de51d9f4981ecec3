// What the managed pool's bookkeeping (core/pool/pool_book.h) costs an
// allocation and its free, without a GPU: slabs come from a counter, a fence
// completes 64 frees of its thread after it is handed over (the GPU a little
// behind). A PyTorch-like mix: sizes from 512 B to 512 MiB, most of them small;
// each thread works on three streams of its own (most work on the first);
// frees on the allocating stream (70%), on another (10%), or without one
// (cuMemFree, 20%); about 200 blocks live per thread. Frees in LIFO order, then
// in random order; one thread, two, four (on one book: one mutex).
//
// Usage: pool_speed [PAIRS_PER_THREAD]   (prints ns per allocate+free pair)
#include "core/pool/pool_book.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

namespace {

using namespace uvmp::pool;

class CounterSlabs final : public SlabSource {
public:
    std::optional<uint64_t> create(uint64_t bytes) override {
        creates.fetch_add(1, std::memory_order_relaxed);
        return next_.fetch_add(bytes + (2ull << 20), std::memory_order_relaxed); // slabs are rare: one counter will do
    }
    void release(uint64_t, uint64_t) override { releases.fetch_add(1, std::memory_order_relaxed); }
    std::atomic<uint64_t> creates{0}, releases{0};

private:
    std::atomic<uint64_t> next_{1ull << 44};
};

// Each thread's fences count on their own (in the top bits, the thread), so
// that the bench shares no counter between threads but the pool's.
class LaggingFences final : public FenceOracle {
public:
    static constexpr int kMaxThreads = 64;
    FenceKey issue(int thread) {
        const uint64_t n = counters_[thread].issued.fetch_add(1, std::memory_order_relaxed) + 1;
        return (static_cast<uint64_t>(thread) << 48) | n;
    }
    bool completed(FenceKey fence) override {
        Counter& c = counters_[fence >> 48];
        c.queries.fetch_add(1, std::memory_order_relaxed);
        return (fence & ((1ull << 48) - 1)) + 64 <= c.issued.load(std::memory_order_relaxed);
    }
    void wait(FenceKey) override {}
    void destroy(FenceKey) override {}
    uint64_t queries() const {
        uint64_t n = 0;
        for (const Counter& c : counters_) n += c.queries.load();
        return n;
    }

private:
    struct alignas(64) Counter {
        std::atomic<uint64_t> issued{0}, queries{0};
    };
    Counter counters_[kMaxThreads];
};

struct Op {
    uint64_t bytes;
    StreamKey stream;     // of the allocation
    uint32_t free_pick;   // random free order: which live block goes
    uint8_t free_kind;    // 0: on the block's stream, 1: on another, 2: without a stream
};

uint64_t draw_size(std::mt19937_64& rng) {
    const uint64_t u = rng() % 1000;
    auto log_uniform = [&](double lo, double hi) {
        std::uniform_real_distribution<double> d(std::log2(lo), std::log2(hi));
        return static_cast<uint64_t>(std::exp2(d(rng)));
    };
    if (u < 600) return log_uniform(512, 64 << 10);               // activations' small pieces, scalars
    if (u < 900) return log_uniform(64 << 10, 8 << 20);           // most tensors
    if (u < 990) return log_uniform(8 << 20, 128 << 20);          // large activations, weights
    return log_uniform(128 << 20, 512ull << 20);                  // the odd huge buffer
}

std::vector<Op> make_ops(int thread, size_t count) {
    std::mt19937_64 rng(1234 + static_cast<uint64_t>(thread));
    std::vector<Op> ops(count);
    const StreamKey base = 0x10000 * (static_cast<uint64_t>(thread) + 1);
    for (Op& op : ops) {
        op.bytes = draw_size(rng);
        const uint64_t s = rng() % 10;
        op.stream = base + (s < 8 ? 0 : s - 7);
        op.free_pick = static_cast<uint32_t>(rng());
        const uint64_t k = rng() % 10;
        op.free_kind = k < 7 ? 0 : k < 8 ? 1 : 2;
    }
    return ops;
}

struct Live {
    uint64_t address;
    StreamKey stream;
};

// Returns the seconds the timed pairs took.
double run_thread(PoolBook& book, LaggingFences& fences, int thread, const std::vector<Op>& ops, size_t warm,
                  bool lifo, std::atomic<int>& ready, int threads) {
    // now_ns: the monotonic clock, read every 64 operations (the pool's cost,
    // not the clock's, is measured; the threads' clocks agree to some 20 us).
    uint64_t clock_reads = 0, last_clock = 0;
    auto clock = [&] {
        if (clock_reads++ % 64 == 0)
            last_clock = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                   std::chrono::steady_clock::now().time_since_epoch())
                                                   .count());
        return last_clock;
    };
    std::vector<Live> live;
    live.reserve(warm + 16);
    size_t i = 0;
    auto allocate = [&](const Op& op) {
        const uint64_t now = clock();
        if (auto b = book.allocate(op.bytes, op.stream, 0, now)) live.push_back({b->address, op.stream});
    };
    auto free_one = [&](const Op& op) {
        const size_t k = lifo ? live.size() - 1 : op.free_pick % live.size();
        const Live victim = live[k];
        live[k] = live.back();
        live.pop_back();
        const uint64_t now = clock();
        if (op.free_kind == 2) book.free(victim.address, kNoStream, 0, now);
        else book.free(victim.address, op.free_kind == 0 ? victim.stream : victim.stream ^ 1, fences.issue(thread), now);
    };
    for (; i < warm; ++i) allocate(ops[i]);
    ready.fetch_add(1);
    while (ready.load() < threads) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    for (; i < ops.size(); ++i) {
        allocate(ops[i]);
        free_one(ops[i]);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const Live& l : live) book.free(l.address, kNoStream, 0, clock());
    return seconds;
}

void measure(int threads, bool lifo, size_t pairs) {
    CounterSlabs slabs;
    LaggingFences fences;
    PoolConfig config; // 512 MiB slabs, 2 MiB chunks, 512 B alignment
    config.release_after_ns = 10'000'000; // 10 ms rather than 10 s: idle passes run during the bench
    PoolBook book(config, slabs, fences);
    const size_t warm = 200;
    std::vector<std::vector<Op>> ops;
    for (int t = 0; t < threads; ++t) ops.push_back(make_ops(t, warm + pairs));
    std::atomic<int> ready{0};
    std::vector<double> seconds(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            seconds[static_cast<size_t>(t)] =
                run_thread(book, fences, t, ops[static_cast<size_t>(t)], warm, lifo, ready, threads);
        });
    for (auto& w : workers) w.join();
    double slowest = 0, sum = 0;
    for (double s : seconds) {
        slowest = std::max(slowest, s);
        sum += s;
    }
    const double per_pair = sum / threads / static_cast<double>(pairs) * 1e9;
    const double throughput = slowest / (static_cast<double>(pairs) * threads) * 1e9;
    std::printf("%d thread%s, %-6s frees: %6.0f ns a pair on each thread; %6.0f ns a pair of wall time over all "
                "(%llu slabs made, %llu given back, %llu fence queries)\n",
                threads, threads == 1 ? " " : "s", lifo ? "LIFO" : "random", per_pair, throughput,
                static_cast<unsigned long long>(slabs.creates.load()),
                static_cast<unsigned long long>(slabs.releases.load()),
                static_cast<unsigned long long>(fences.queries()));
}

} // namespace

int main(int argc, char** argv) {
    size_t pairs = 1'000'000;
    if (argc > 1) {
        char* end = nullptr;
        const long long n = std::strtoll(argv[1], &end, 10);
        if (*end != '\0' || n < 1000 || n > 100'000'000) {
            std::fprintf(stderr, "pool_speed: PAIRS_PER_THREAD must be a whole number from 1000 to 100000000, got '%s'\n",
                         argv[1]);
            return 2;
        }
        pairs = static_cast<size_t>(n);
    }
    std::printf("pool_speed: %zu allocate+free pairs a thread, %u hardware threads\n", pairs,
                std::thread::hardware_concurrency());
    for (int threads : {1, 2, 4})
        for (bool lifo : {true, false}) measure(threads, lifo, pairs);
    return 0;
}
