#include "core/util/log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <unistd.h>

namespace uvmp::log {
namespace {

std::atomic<spdlog::logger*> g_logger{nullptr};
std::string g_prefix = "uvmprefetch: ";
std::shared_ptr<spdlog::logger> g_owner;

// Both sinks take spdlog's console mutex, so that one lock covers all output
// and a fork can hold it.
struct SharedOutputLock {
    void lock() { spdlog::details::console_mutex::mutex().lock(); }
    void unlock() { spdlog::details::console_mutex::mutex().unlock(); }
};

spdlog::level::level_enum to_spdlog(LogLevel level) {
    switch (level) {
    case LogLevel::Trace: return spdlog::level::trace;
    case LogLevel::Debug: return spdlog::level::debug;
    case LogLevel::Info: return spdlog::level::info;
    case LogLevel::Warn: return spdlog::level::warn;
    case LogLevel::Error: return spdlog::level::err;
    case LogLevel::Off: return spdlog::level::off;
    }
    return spdlog::level::warn;
}

} // namespace

bool setup(LogLevel level, const std::string& file, std::optional<int> rank) {
    std::shared_ptr<spdlog::logger> logger;
    bool ok = true;
    if (!file.empty()) {
        try {
            logger = std::make_shared<spdlog::logger>(
                "uvmprefetch", std::make_shared<spdlog::sinks::basic_file_sink<SharedOutputLock>>(file));
        } catch (const spdlog::spdlog_ex& e) {
            raw_stderr_line("uvmprefetch: cannot open the log file '" + file + "' (UVMP_LOG_FILE): " +
                            e.what() + "; logging to stderr");
            ok = false;
        }
    }
    if (!logger)
        logger = std::make_shared<spdlog::logger>(
            "uvmprefetch", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    // The logger is private: never registered with spdlog's global registry, so
    // an application's own spdlog is left alone.
    const std::string marked = rank ? " [rank " + std::to_string(*rank) + "]" : std::string();
    g_prefix = "uvmprefetch" + marked + ": ";
    logger->set_pattern(file.empty() || !ok ? "uvmprefetch" + marked + ": %v"
                                            : "%Y-%m-%d %H:%M:%S.%e [%P]" + marked + " %l: %v");
    logger->set_level(to_spdlog(level));
    logger->flush_on(spdlog::level::warn);
    g_owner = logger;
    g_logger.store(logger.get(), std::memory_order_release);
    return ok;
}

void shutdown() {
    if (auto* l = g_logger.exchange(nullptr)) l->flush();
}

const std::string& prefix() { return g_prefix; }

spdlog::logger* get() { return g_logger.load(std::memory_order_acquire); }

void lock_for_fork() { SharedOutputLock{}.lock(); }
void unlock_after_fork() { SharedOutputLock{}.unlock(); }

void raw_stderr_line(const std::string& line) {
    std::string text = line + "\n";
    ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
    (void)ignored;
}

} // namespace uvmp::log
