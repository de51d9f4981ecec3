#include "driver/hostmem/host_page_maker.h"

#include "core/util/elapsed.h"
#include "core/util/log.h"

#include <algorithm>
#include <chrono>

namespace uvmp::driver {
namespace {

// The smallest host page: on hosts with larger ones, some reads fall on a page already made.
constexpr uint64_t kPageBytes = 4096;

// Reads one byte of every page: the host's fault handler makes the page, and
// the memory keeps what it holds. (madvise(MADV_POPULATE_WRITE) makes them too,
// but made 3.2 GB/s against the reads' 5.4 on an H100 host: host home run 3.)
void read_pages(uint64_t begin, uint64_t bytes) {
    const volatile char* pages = reinterpret_cast<const volatile char*>(begin);
    for (uint64_t offset = 0; offset < bytes; offset += kPageBytes) (void)pages[offset];
}

} // namespace

HostPageMaker::HostPageMaker(unsigned threads, Stats& stats)
    : stats_(stats), threads_wanted_(std::max(1u, threads)) {}

HostPageMaker::~HostPageMaker() {
    stop();
    for (std::thread& t : threads_) t.join();
}

void HostPageMaker::stop() {
    std::unique_lock lock(mutex_);
    stopping_ = true;
    pieces_.clear();
    queued_.notify_all();
    piece_done_.wait(lock, [&] { return under_way_.empty(); });
}

unsigned HostPageMaker::default_threads() {
    return std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u);
}

void HostPageMaker::make(uint64_t base, uint64_t bytes) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        for (uint64_t end = bytes; end > 0;) {
            const uint64_t piece = std::min(end, kPieceBytes);
            end -= piece;
            pieces_.push_back({base, base + end, piece});
        }
        try {
            while (threads_.size() < threads_wanted_) threads_.emplace_back([this] { work(); });
        } catch (const std::exception& e) {
            // The pages are then made by the GPU's first writes, as without this.
            if (threads_.empty()) {
                log::debug("host pages: no thread could be started ({}); the GPU's first writes make them", e.what());
                pieces_.clear();
                return;
            }
        }
    }
    queued_.notify_all();
}

void HostPageMaker::forget(uint64_t base) {
    std::unique_lock lock(mutex_);
    std::erase_if(pieces_, [base](const Piece& p) { return p.slab == base; });
    piece_done_.wait(lock, [&] { return under_way_.find(base) == under_way_.end(); });
}

void HostPageMaker::work() {
    std::unique_lock lock(mutex_);
    for (;;) {
        queued_.wait(lock, [&] { return stopping_ || !pieces_.empty(); });
        if (stopping_) return;
        const Piece piece = pieces_.front();
        pieces_.pop_front();
        ++under_way_[piece.slab];
        lock.unlock();
        const auto start = std::chrono::steady_clock::now();
        read_pages(piece.begin, piece.bytes);
        stats_.host_memory.host_page_bytes_made.fetch_add(piece.bytes, std::memory_order_relaxed);
        stats_.host_memory.host_page_make_ns.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);
        lock.lock();
        if (auto it = under_way_.find(piece.slab); it != under_way_.end() && --it->second == 0) under_way_.erase(it);
        piece_done_.notify_all();
    }
}

} // namespace uvmp::driver
