#include "driver/hostmem/host_page_maker.h"

#include "core/util/elapsed.h"
#include "core/util/log.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14; older kernels answer EINVAL
#endif

namespace uvmp::driver {
namespace {

constexpr uint64_t kPageBytes = 4096;

// Reads one byte of every page: the host's fault handler makes the page, and
// the memory keeps what it holds.
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
        const bool made = make_piece(piece);
        if (made) {
            stats_.host_memory.host_page_bytes_made.fetch_add(piece.bytes, std::memory_order_relaxed);
            stats_.host_memory.host_page_make_ns.fetch_add(nanoseconds_since(start), std::memory_order_relaxed);
        }
        lock.lock();
        if (auto it = under_way_.find(piece.slab); it != under_way_.end() && --it->second == 0) under_way_.erase(it);
        piece_done_.notify_all();
    }
}

bool HostPageMaker::make_piece(const Piece& piece) {
    bool populate;
    {
        std::lock_guard lock(mutex_);
        populate = !populate_refused_;
    }
    if (populate) {
        if (madvise(reinterpret_cast<void*>(piece.begin), piece.bytes, MADV_POPULATE_WRITE) == 0) return true;
        const int error = errno;
        if (error != EINVAL) {
            // Out of memory or a page the driver would not make: the GPU's own
            // first writes then meet the same, and are left to.
            log::debug("host pages: madvise(MADV_POPULATE_WRITE) of {} bytes at {:#x} failed ({})", piece.bytes,
                       static_cast<unsigned long long>(piece.begin), std::strerror(error));
            return false;
        }
        std::lock_guard lock(mutex_);
        if (!populate_refused_)
            log::debug("host pages: this kernel has no MADV_POPULATE_WRITE for managed memory; pages are made by "
                       "reading them");
        populate_refused_ = true;
    }
    read_pages(piece.begin, piece.bytes);
    return true;
}

} // namespace uvmp::driver
