#include "driver/timing/kernel_timing.h"

#include "driver/timing/kernel_span.h"

#include <cupti_activity.h>
#include <cupti_callbacks.h>
#include <cupti_driver_cbid.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace uvmp::driver {
namespace {

struct CuptiApi {
    decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
    decltype(&cuptiActivityEnable) enable = nullptr;
    decltype(&cuptiActivityDisable) disable = nullptr;
    decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
    decltype(&cuptiActivityFlushAll) flush_all = nullptr;
    decltype(&cuptiSubscribe) subscribe = nullptr;
    decltype(&cuptiEnableCallback) enable_callback = nullptr;
};

constexpr CUpti_CallbackId kLaunchCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,           CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};

// The sequence number of the launch this thread is forwarding, for the driver
// callback that runs inside it.
thread_local uint64_t t_launch_seq = UINT64_MAX;

// Records come back a buffer at a time, once every kernel in it has ended
// (deliver_finished): a buffer holds about 300 kernel records (216 bytes each),
// so those of a step that has run come back within a few hundred launches of
// its end, while later ones fill the next buffer.
constexpr size_t kBufferBytes = 64u << 10;
constexpr size_t kBufferAlignment = 8;

CuptiApi g_api;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_running{false};
KernelTiming::Sink g_sink;

// Kernel records and correlation records arrive separately, possibly in
// different buffers: whichever comes first waits here for the other.
std::mutex g_match_mutex;
std::unordered_map<uint32_t, uint64_t> g_seq_by_correlation;
std::unordered_map<uint32_t, KernelSpan> g_times_by_correlation;

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

// Delivers the pair once both halves have come; the first to come waits in its map.
template <typename Mine, typename Theirs>
void match(uint32_t correlation, std::unordered_map<uint32_t, Mine>& mine, const Mine& value,
           std::unordered_map<uint32_t, Theirs>& theirs, auto&& deliver) {
    auto it = theirs.find(correlation);
    if (it == theirs.end()) {
        mine[correlation] = value;
        return;
    }
    const Theirs other = it->second;
    theirs.erase(it);
    if (g_sink) deliver(value, other);
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
    CUpti_Activity* record = nullptr;
    std::lock_guard lock(g_match_mutex);
    while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
            const std::optional<KernelSpan> span = finished_span(k->start, k->end);
            if (!span) {
                // Its launch stays untimed; the launch's half of the pair is not needed.
                g_seq_by_correlation.erase(k->correlationId);
                continue;
            }
            match(k->correlationId, g_times_by_correlation, *span, g_seq_by_correlation,
                  [](const KernelSpan& t, uint64_t seq) { g_sink(seq, t.start_ns, t.duration_ns); });
        }
    }
    std::free(buffer);
}

// Inside the driver's launch call: CUPTI names the call by a correlation id, the
// same one the kernel's activity record will carry.
void CUPTIAPI on_driver_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId, const void* data) {
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API || t_launch_seq == UINT64_MAX) return;
    const auto* info = static_cast<const CUpti_CallbackData*>(data);
    if (info->callbackSite != CUPTI_API_ENTER) return;
    std::lock_guard lock(g_match_mutex);
    match(info->correlationId, g_seq_by_correlation, t_launch_seq, g_times_by_correlation,
          [](uint64_t seq, const KernelSpan& t) { g_sink(seq, t.start_ns, t.duration_ns); });
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
            !resolve(library, "cuptiActivityDisable", g_api.disable) ||
            !resolve(library, "cuptiActivityGetNextRecord", g_api.next_record) ||
            !resolve(library, "cuptiActivityFlushAll", g_api.flush_all) ||
            !resolve(library, "cuptiSubscribe", g_api.subscribe) ||
            !resolve(library, "cuptiEnableCallback", g_api.enable_callback)) {
            error = "this CUPTI lacks the activity API; kernel durations are not recorded";
            return;
        }
        g_sink = std::move(sink);
        bool callbacks_ok = g_api.subscribe(&g_subscriber, &on_driver_call, nullptr) == CUPTI_SUCCESS;
        for (CUpti_CallbackId id : kLaunchCallbacks)
            callbacks_ok = callbacks_ok && g_api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                                                 id) == CUPTI_SUCCESS;
        if (!callbacks_ok || g_api.register_callbacks(&buffer_requested, &buffer_completed) != CUPTI_SUCCESS ||
            g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
            error = "CUPTI refused kernel activity records or launch callbacks; kernel durations are "
                    "not recorded";
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

void KernelTiming::before_launch(uint64_t seq) { t_launch_seq = seq; }

void KernelTiming::after_launch() { t_launch_seq = UINT64_MAX; }

void KernelTiming::deliver_finished() {
    if (running()) g_api.flush_all(0);
}

void KernelTiming::flush() {
    if (running()) g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void KernelTiming::stop() {
    if (!g_running.exchange(false, std::memory_order_acq_rel)) return;
    g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    for (CUpti_CallbackId id : kLaunchCallbacks)
        g_api.enable_callback(0, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id);
    // The records of kernels timed so far still reach the sink.
    g_api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void KernelTiming::forget_after_fork() { g_running.store(false, std::memory_order_release); }

} // namespace uvmp::driver
