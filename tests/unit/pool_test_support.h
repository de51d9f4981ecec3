// What the managed pool's unit tests share: a SlabSource and a FenceOracle
// that the tests drive, a small config, and the fixture most cases start from.
#pragma once

#include "core/pool/placement_hint.h"
#include "core/pool/pool_book.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

namespace uvmp::pool::testing {

constexpr uint64_t KiB = 1ull << 10;
constexpr uint64_t MiB = 1ull << 20;

// Slabs at addresses from a counter (chunk-aligned, with gaps between them), and
// a byte limit standing for the physical guard.
class FakeSlabs final : public SlabSource {
public:
    explicit FakeSlabs(uint64_t limit = ~0ull) : limit_(limit) {}

    std::optional<uint64_t> create(uint64_t bytes) override {
        std::lock_guard lock(mutex_);
        ++creates;
        if (bytes > limit_ - live_bytes) {
            ++refusals;
            return std::nullopt;
        }
        const uint64_t base = next_;
        next_ += bytes + 64 * MiB;
        live_bytes += bytes;
        live[base] = bytes;
        return base;
    }
    void release(uint64_t base, uint64_t bytes) override {
        std::lock_guard lock(mutex_);
        ++releases;
        auto it = live.find(base);
        if (it == live.end() || it->second != bytes) {
            ++bad_releases;
            return;
        }
        live.erase(it);
        live_bytes -= bytes;
    }
    void set_limit(uint64_t limit) {
        std::lock_guard lock(mutex_);
        limit_ = limit;
    }

    int creates = 0, refusals = 0, releases = 0, bad_releases = 0;
    uint64_t live_bytes = 0;
    std::map<uint64_t, uint64_t> live; // base -> bytes

private:
    std::mutex mutex_;
    uint64_t limit_;
    uint64_t next_ = 1ull << 40;
};

// Fences issued by the test, each recorded on a stream; a fence completes with
// every earlier fence of its stream (events on one stream complete in order).
class FakeFences final : public FenceOracle {
public:
    FenceKey issue(StreamKey stream) {
        std::lock_guard lock(mutex_);
        const FenceKey key = next_++;
        stream_of_[key] = stream;
        return key;
    }
    void complete(FenceKey fence) {
        std::lock_guard lock(mutex_);
        complete_locked(fence);
    }
    bool done(FenceKey fence) {
        std::lock_guard lock(mutex_);
        return done_locked(fence);
    }
    // Every fence issued so far completes.
    void complete_all() {
        std::lock_guard lock(mutex_);
        for (auto& [key, stream] : stream_of_) complete_locked(key);
    }

    bool completed(FenceKey fence) override {
        std::lock_guard lock(mutex_);
        ++queries;
        if (destroyed_[fence] != 0) ++used_after_destroy;
        if (++asked_in_call[fence] > 1) ++asked_twice;
        return done_locked(fence);
    }
    void wait(FenceKey fence) override {
        std::lock_guard lock(mutex_);
        ++waits;
        if (destroyed_[fence] != 0) ++used_after_destroy;
        complete_locked(fence);
    }
    void destroy(FenceKey fence) override {
        std::lock_guard lock(mutex_);
        ++destroys;
        ++destroyed_[fence];
    }

    int destroyed(FenceKey fence) {
        std::lock_guard lock(mutex_);
        return destroyed_[fence];
    }
    // Every fence issued has been destroyed exactly once.
    bool all_destroyed_once() {
        std::lock_guard lock(mutex_);
        for (auto& [key, stream] : stream_of_)
            if (destroyed_[key] != 1) return false;
        for (auto& [key, n] : destroyed_)
            if (n > 1 || !stream_of_.count(key)) return false;
        return true;
    }
    void new_call() {
        std::lock_guard lock(mutex_);
        asked_in_call.clear();
        asked_twice = 0;
    }

    int queries = 0, waits = 0, destroys = 0, asked_twice = 0, used_after_destroy = 0;
    std::map<FenceKey, int> asked_in_call;

private:
    bool done_locked(FenceKey fence) {
        auto it = stream_of_.find(fence);
        if (it == stream_of_.end()) return false;
        auto d = done_upto_.find(it->second);
        return d != done_upto_.end() && d->second >= fence;
    }
    void complete_locked(FenceKey fence) {
        auto it = stream_of_.find(fence);
        if (it == stream_of_.end()) return;
        uint64_t& upto = done_upto_[it->second];
        upto = std::max(upto, fence);
    }

    std::mutex mutex_;
    FenceKey next_ = 1;
    std::map<FenceKey, StreamKey> stream_of_;
    std::map<StreamKey, FenceKey> done_upto_;
    std::map<FenceKey, int> destroyed_;
};

inline PoolConfig small_config(uint64_t slab = 8 * MiB) {
    PoolConfig c;
    c.slab_bytes = slab;
    c.chunk_bytes = 2 * MiB;
    c.alignment = 512;
    c.retain_bytes = 0;
    c.release_after_ns = 1'000'000'000;
    return c;
}

// Dead extents and whether room is short, set by the test and answered as a
// hint does; counts its questions.
class FakeHint final : public PlacementHint {
public:
    size_t resident_dead(uint64_t begin, uint64_t end, std::span<Extent> out) const override {
        ++asked;
        size_t n = 0;
        for (const Extent& e : dead)
            if (e.end > begin && e.begin < end && n < out.size()) out[n++] = {std::max(e.begin, begin), std::min(e.end, end)};
        return n;
    }
    bool room_is_short() const override { return room_short; }
    std::vector<Extent> dead; // in address order
    mutable int asked = 0;
    bool room_short = false;
};

constexpr StreamKey kS1 = 0x100, kS2 = 0x200, kS3 = 0x300;

// The slab source and fences of one pool, for a case that makes its own book.
struct PoolTest {
    FakeSlabs slabs;
    FakeFences fences;
};

} // namespace uvmp::pool::testing
