#include "driver/kernel_timing.h"

#include <cupti_activity.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace uvmp::driver {
namespace {

struct CuptiApi {
    decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
    decltype(&cuptiActivityEnable) enable = nullptr;
    decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
    decltype(&cuptiActivityFlushAll) flush_all = nullptr;
    decltype(&cuptiActivityPushExternalCorrelationId) push_id = nullptr;
    decltype(&cuptiActivityPopExternalCorrelationId) pop_id = nullptr;
};

constexpr size_t kBufferBytes = 4u << 20;
constexpr size_t kBufferAlignment = 8;

CuptiApi g_api;
std::atomic<bool> g_running{false};
KernelTiming::Sink g_sink;

// Kernel records and correlation records arrive separately, possibly in
// different buffers: whichever comes first waits here for the other.
std::mutex g_match_mutex;
std::unordered_map<uint32_t, uint64_t> g_seq_by_correlation;
std::unordered_map<uint32_t, uint64_t> g_duration_by_correlation;

void* open_cupti() {
    static const char* const kNames[] = {
        "libcupti.so.13", "libcupti.so.12", "libcupti.so",
        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so",
        "/usr/local/cuda/lib64/libcupti.so",
    };
    for (const char* name : kNames)
        if (void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
    return nullptr;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(kBufferAlignment, kBufferBytes));
    *size = *buffer ? kBufferBytes : 0;
    *max_records = 0;
}

void match(uint32_t correlation, std::unordered_map<uint32_t, uint64_t>& mine, uint64_t value,
           std::unordered_map<uint32_t, uint64_t>& theirs, bool value_is_seq) {
    auto it = theirs.find(correlation);
    if (it == theirs.end()) {
        mine[correlation] = value;
        return;
    }
    const uint64_t other = it->second;
    theirs.erase(it);
    if (g_sink) g_sink(value_is_seq ? value : other, value_is_seq ? other : value);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    std::lock_guard lock(g_match_mutex);
    while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            match(k->correlationId, g_duration_by_correlation, k->end - k->start,
                  g_seq_by_correlation, false);
        } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            auto* c = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
            if (c->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
                match(c->correlationId, g_seq_by_correlation, c->externalId,
                      g_duration_by_correlation, true);
        }
    }
    std::free(buffer);
}

template <typename T>
bool resolve(void* library, const char* name, T& out) {
    out = reinterpret_cast<T>(dlsym(library, name));
    return out != nullptr;
}

} // namespace

bool KernelTiming::start(Sink sink, std::string& error) {
    static std::once_flag once;
    bool ok = false;
    std::call_once(once, [&] {
        void* library = open_cupti();
        if (!library) {
            error = "CUPTI (libcupti.so) not found; kernel durations are not recorded";
            return;
        }
        if (!resolve(library, "cuptiActivityRegisterCallbacks", g_api.register_callbacks) ||
            !resolve(library, "cuptiActivityEnable", g_api.enable) ||
            !resolve(library, "cuptiActivityGetNextRecord", g_api.next_record) ||
            !resolve(library, "cuptiActivityFlushAll", g_api.flush_all) ||
            !resolve(library, "cuptiActivityPushExternalCorrelationId", g_api.push_id) ||
            !resolve(library, "cuptiActivityPopExternalCorrelationId", g_api.pop_id)) {
            error = "this CUPTI lacks the activity API; kernel durations are not recorded";
            return;
        }
        g_sink = std::move(sink);
        if (g_api.register_callbacks(&buffer_requested, &buffer_completed) != CUPTI_SUCCESS ||
            g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
            g_api.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) != CUPTI_SUCCESS) {
            error = "CUPTI refused kernel activity records; kernel durations are not recorded";
            return;
        }
        g_running.store(true, std::memory_order_release);
        // CUPTI holds records until a buffer fills or a flush. Flush from an exit
        // handler registered now, after the driver's own: it runs before the driver
        // tears down, which a library destructor would not.
        std::atexit(&KernelTiming::flush);
        ok = true;
    });
    return ok;
}

bool KernelTiming::running() { return g_running.load(std::memory_order_acquire); }

void KernelTiming::before_launch(uint64_t seq) {
    if (running()) g_api.push_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, seq);
}

void KernelTiming::after_launch() {
    uint64_t ignored = 0;
    if (running()) g_api.pop_id(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &ignored);
}

void KernelTiming::flush() {
    if (running()) g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

} // namespace uvmp::driver
