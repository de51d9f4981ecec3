// Logging through a private spdlog logger. Before setup (or after teardown) every
// call is a no-op that allocates nothing, so hooks may log on any path.
#pragma once

#include "core/util/log_level.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <optional>
#include <string>

namespace uvmp::log {

// Creates the logger: stderr, or file (already expanded) when not empty.
// Messages are prefixed "uvmprefetch: ", or "uvmprefetch [rank N]: " for a rank
// of a distributed job, whose ranks share one terminal. Returns false (and logs
// to stderr) when the file cannot be opened.
bool setup(LogLevel level, const std::string& file, std::optional<int> rank = std::nullopt);
void shutdown();
// The prefix setup gave the messages ("uvmprefetch: " before it), for lines
// written past the logger.
const std::string& prefix();

spdlog::logger* get();

template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    if (auto* l = get()) l->warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    if (auto* l = get()) l->info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    if (auto* l = get()) l->debug(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
    if (auto* l = get()) l->error(fmt, std::forward<Args>(args)...);
}

// Writes one line to stderr without the logger (for errors found before it exists).
void raw_stderr_line(const std::string& line);

// Around fork(): the one lock the logger's output takes, held while the process
// is copied so that a child never inherits it taken by a thread it does not have.
void lock_for_fork();
void unlock_after_fork();

} // namespace uvmp::log

// Logs a warning the first time this line is reached, never again.
#define UVMP_WARN_ONCE(...)                                                                        \
    do {                                                                                           \
        static std::atomic<bool> uvmp_warned_{false};                                              \
        if (!uvmp_warned_.exchange(true, std::memory_order_relaxed)) ::uvmp::log::warn(__VA_ARGS__); \
    } while (0)
