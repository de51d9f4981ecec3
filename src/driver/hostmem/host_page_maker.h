// Makes a host-homed slab's pages on the host ahead of the GPU's first writes.
// A new host slab has no pages: the first kernel to write each page makes it
// by a fault, at 2.8-5 GB/s (bench/results/host-home-run-1.md, -3.md), inside
// the first step that routes allocations to it, which then runs several times
// slower than the steps after. Eight host threads made the same pages at 5.4
// GB/s beside the application without holding its launches back (host home
// run 3). Each thread takes a piece of a slab at a time, from the slab's end,
// where the pool puts blocks last, so that the GPU's own first writes at its
// start and the threads meet late.
//
// A page is made by reading one byte of it, which leaves what the memory holds
// as it was, so a kernel may write a slab while its pages are being made. Any
// thread. A forked child never touches the parent's (its pools are the
// parent's, kept and unused).
#pragma once

#include "core/accounting/stats.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace uvmp::driver {

class HostPageMaker {
public:
    // Bytes a thread makes at a time: small enough that a slab given back
    // waits little for the piece under way (a few ms), large enough that the
    // queue's lock is taken once among thousands of page faults.
    static constexpr uint64_t kPieceBytes = 32ull << 20;

    // `threads`: how many make pages at once (at least 1).
    HostPageMaker(unsigned threads, Stats& stats);
    ~HostPageMaker();
    HostPageMaker(const HostPageMaker&) = delete;
    HostPageMaker& operator=(const HostPageMaker&) = delete;

    // Makes the pages of [base, base + bytes), a host-homed slab mapped at the
    // same address on the host; returns at once.
    void make(uint64_t base, uint64_t bytes);
    // Before the slab at `base` is freed: its pieces not begun are dropped, and
    // this returns once none is being made.
    void forget(uint64_t base);
    // At exit, before the driver tears the slabs down: nothing more is made,
    // and this returns once no piece is being made.
    void stop();
    // Half the host's cores, at least one and at most eight: the application
    // keeps the other half, and the pages are made once.
    static unsigned default_threads();

private:
    struct Piece {
        uint64_t slab;
        uint64_t begin;
        uint64_t bytes;
    };
    void work();

    Stats& stats_;
    unsigned threads_wanted_;
    std::mutex mutex_;
    std::condition_variable queued_;
    std::condition_variable piece_done_;
    std::deque<Piece> pieces_;
    std::unordered_map<uint64_t, unsigned> under_way_; // slab -> its pieces being made
    std::vector<std::thread> threads_;                 // started by the first make()
    bool stopping_ = false;
};

} // namespace uvmp::driver
