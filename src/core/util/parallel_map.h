// Runs independent calls of a pure function on a few threads and gives their
// results in call order, so that whatever folds them afterwards decides as a
// loop over them would. The home search simulates several prefixes of one
// order this way: each simulation reads only its own copy of the trace.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

namespace uvmp {

// At most this many threads, the calling one included: the library searches
// inside the application's process, beside the application's own threads.
inline constexpr size_t kParallelMapThreads = 8;

// f(i) for i in [0, n), results in order of i. The first exception thrown (by
// index) is thrown again here once every thread has stopped.
template <typename T, typename F>
std::vector<T> parallel_map(size_t n, F f, size_t max_threads = kParallelMapThreads) {
    const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
    const size_t width = std::min({n, cores, std::max<size_t>(1, max_threads)});
    std::vector<std::optional<T>> slots(n);
    std::vector<std::exception_ptr> errors(n);
    std::atomic<size_t> next{0};
    const auto work = [&] {
        for (size_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
             i = next.fetch_add(1, std::memory_order_relaxed)) {
            try {
                slots[i].emplace(f(i));
            } catch (...) {
                errors[i] = std::current_exception();
            }
        }
    };
    std::vector<std::thread> helpers;
    for (size_t t = 1; t < width; ++t) {
        try {
            helpers.emplace_back(work);
        } catch (const std::system_error&) {
            break; // no thread to be had: those running, the caller's included, do the rest
        }
    }
    work();
    for (std::thread& h : helpers) h.join();
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
    std::vector<T> out;
    out.reserve(n);
    for (std::optional<T>& s : slots) out.push_back(std::move(*s));
    return out;
}

} // namespace uvmp
