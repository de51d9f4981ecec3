#include "driver/rates/link_probe.h"

#include "driver/table/event_timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

namespace uvmp::driver {
namespace {

// Grid-stride loops over 16-byte words: `words` of them from `buffer`. The
// read kernel folds what it loads and stores the fold only when it equals
// `never`, so that the loads are not dropped; a stray match writes into the
// probe's own buffer. PTX for sm_52 is compiled by the driver for whatever GPU
// it runs on.
// Each thread's first 16-byte word (%rd3) and the grid's stride (%rd5), after
// the kernel has loaded `buffer` (%rd1, made global) and `words` (%rd2).
constexpr const char* kGridStrideStart = R"(
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, %nctaid.x;
    mul.wide.u32 %rd3, %r1, %r2;
    cvt.u64.u32 %rd4, %r3;
    add.u64 %rd3, %rd3, %rd4;
    mul.wide.u32 %rd5, %r4, %r2;
)";

constexpr const char* kPtxHeader = R"(
.version 6.0
.target sm_52
.address_size 64
)";

constexpr const char* kWriteStart = R"(
.visible .entry uvmp_probe_write(.param .u64 buffer, .param .u64 words)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [buffer];
    ld.param.u64 %rd2, [words];
)";

constexpr const char* kWriteLoop = R"(
WRITE_LOOP:
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra WRITE_DONE;
    shl.b64 %rd6, %rd3, 4;
    add.u64 %rd7, %rd1, %rd6;
    st.global.v4.u32 [%rd7], {%r3, %r3, %r3, %r3};
    add.u64 %rd3, %rd3, %rd5;
    bra WRITE_LOOP;
WRITE_DONE:
    ret;
}
)";

constexpr const char* kReadStart = R"(
.visible .entry uvmp_probe_read(.param .u64 buffer, .param .u64 words, .param .u32 never)
{
    .reg .pred %p<3>;
    .reg .b32 %r<12>;
    .reg .b64 %rd<10>;
    ld.param.u64 %rd1, [buffer];
    ld.param.u64 %rd2, [words];
    ld.param.u32 %r10, [never];
)";

constexpr const char* kReadLoop = R"(
    mov.u32 %r9, 0;
READ_LOOP:
    setp.ge.u64 %p1, %rd3, %rd2;
    @%p1 bra READ_DONE;
    shl.b64 %rd6, %rd3, 4;
    add.u64 %rd7, %rd1, %rd6;
    ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd7];
    xor.b32 %r9, %r9, %r5;
    xor.b32 %r9, %r9, %r6;
    xor.b32 %r9, %r9, %r7;
    xor.b32 %r9, %r9, %r8;
    add.u64 %rd3, %rd3, %rd5;
    bra READ_LOOP;
READ_DONE:
    setp.eq.u32 %p2, %r9, %r10;
    @%p2 st.global.u32 [%rd1], %r9;
    ret;
}
)";

// The module's text: both kernels, each with the grid-stride start between
// its parameters and its loop.
const std::string& probe_ptx() {
    static const std::string text = std::string(kPtxHeader) + kWriteStart + kGridStrideStart + kWriteLoop +
                                    kReadStart + kGridStrideStart + kReadLoop;
    return text;
}

// Enough threads to keep any current GPU's memory busy; the loops cover the rest.
constexpr unsigned kGridBlocks = 1024;
constexpr unsigned kBlockThreads = 256;
constexpr uint32_t kNeverFold = 0x9e3779b9u;

void check(CUresult result, const char* step) {
    if (result != CUDA_SUCCESS) throw ProbeFailure{fmt::format("{} failed ({})", step, error_name(result)), false};
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Everything the probe makes, freed in reverse whatever happens.
class ProbeRun {
public:
    ProbeRun(const DriverTable& table, CUdevice device, DeviceBudget& guard) : t_(table), device_(device), guard_(guard) {
        elapsed_ = event_elapsed_time(t_);
        // The probe runs on an application thread, which may be capturing a
        // stream or share the process with one that does: in the relaxed mode
        // its own calls cannot invalidate any capture.
        if (t_.cuThreadExchangeStreamCaptureMode) {
            CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
            if (t_.cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS) application_mode_ = mode;
        }
    }
    ~ProbeRun() {
        // Teardown failures are not worth a second line: the figures are in.
        // Work a failed step left queued ends before its buffer goes.
        if (stream_) t_.cuStreamSynchronize(stream_);
        if (buffer_) t_.cuMemFree_v2(buffer_);
        if (reserved_) guard_.release(reserved_);
        if (module_) t_.cuModuleUnload(module_);
        for (CUevent event : events_)
            if (event) t_.cuEventDestroy_v2(event);
        if (stream_) t_.cuStreamDestroy_v2(stream_);
        if (application_mode_) t_.cuThreadExchangeStreamCaptureMode(&*application_mode_);
    }
    ProbeRun(const ProbeRun&) = delete;
    ProbeRun& operator=(const ProbeRun&) = delete;

    rates::LinkRates measure() {
        if (!elapsed_ || !t_.cuStreamDestroy_v2 || !t_.cuModuleLoadData || !t_.cuModuleGetFunction ||
            !t_.cuMemAllocManaged || !t_.cuMemFree_v2 || !t_.cuMemPrefetchAsync_v2 || !t_.cuMemAdvise_v2 ||
            !t_.cuLaunchKernel || !t_.cuModuleUnload)
            throw ProbeFailure{"the driver lacks an entry point the probe needs", true};
        check(t_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        for (CUevent& event : events_) check(t_.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate");
        // Before anything is allocated: a device that cannot time events has no figures to give.
        try {
            time_ms([] {});
        } catch (ProbeFailure& failure) {
            failure.unsupported = true;
            throw;
        }
        check(t_.cuModuleLoadData(&module_, probe_ptx().c_str()), "loading the probe's kernels (cuModuleLoadData)");
        check(t_.cuModuleGetFunction(&write_, module_, "uvmp_probe_write"), "cuModuleGetFunction");
        check(t_.cuModuleGetFunction(&read_, module_, "uvmp_probe_read"), "cuModuleGetFunction");
        allocate();

        rates::LinkRates rates;
        // Pages first made on the GPU by a prefetch of memory nothing has
        // touched (what a block over fresh memory costs), then written there,
        // so that every move after is a migration of data.
        const double populate_ms = time_ms([&] { prefetch(CU_MEM_LOCATION_TYPE_DEVICE, device_); });
        launch(write_);
        std::vector<double> fetch, evict, memory, remote_write, remote_read;
        for (int i = 0; i < kProbeRepetitions; ++i) {
            evict.push_back(gbps(time_ms([&] { prefetch(CU_MEM_LOCATION_TYPE_HOST, 0); })));
            fetch.push_back(gbps(time_ms([&] { prefetch(CU_MEM_LOCATION_TYPE_DEVICE, device_); })));
        }
        for (int i = 0; i < kProbeRepetitions; ++i) memory.push_back(gbps(time_ms([&] { launch(read_); })));
        // Homed on the host and mapped for the GPU: the kernels reach it over the link.
        advise(CU_MEM_ADVISE_SET_PREFERRED_LOCATION, CU_MEM_LOCATION_TYPE_HOST, 0);
        advise(CU_MEM_ADVISE_SET_ACCESSED_BY, CU_MEM_LOCATION_TYPE_DEVICE, device_);
        prefetch(CU_MEM_LOCATION_TYPE_HOST, 0);
        for (int i = 0; i < kProbeRepetitions; ++i) {
            remote_write.push_back(gbps(time_ms([&] { launch(write_); })));
            remote_read.push_back(gbps(time_ms([&] { launch(read_); })));
        }
        rates.fetch_gbps = median(fetch);
        rates.evict_gbps = median(evict);
        rates.memory_gbps = median(memory);
        rates.remote_write_gbps = median(remote_write);
        rates.remote_read_gbps = median(remote_read);
        rates.populate_gbps = gbps(populate_ms);
        rates.source = rates::Source::Probe;
        rates.measured_unix_s = static_cast<int64_t>(std::time(nullptr));
        return rates;
    }

private:
    void allocate() {
        for (uint64_t bytes = kProbeBufferBytes; bytes >= kSmallestProbeBufferBytes; bytes /= 2) {
            if (!guard_.try_reserve(bytes)) continue;
            reserved_ = bytes;
            check(t_.cuMemAllocManaged(&buffer_, bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
            bytes_ = bytes;
            return;
        }
        throw ProbeFailure{fmt::format("the physical guard cannot take its {} MiB buffer", kSmallestProbeBufferBytes >> 20),
                           false};
    }

    // Times what `issue` queues on the probe's stream, in milliseconds.
    double time_ms(const std::function<void()>& issue) {
        check(t_.cuEventRecord(events_[0], stream_), "cuEventRecord");
        issue();
        check(t_.cuEventRecord(events_[1], stream_), "cuEventRecord");
        check(t_.cuEventSynchronize(events_[1]), "cuEventSynchronize");
        float ms = 0;
        check(elapsed_(&ms, events_[0], events_[1]), "timing with events (cuEventElapsedTime)");
        if (!(ms > 0)) throw ProbeFailure{"an event timing came out as no time at all", false};
        return ms;
    }

    double gbps(double ms) const { return static_cast<double>(bytes_) / (ms * 1e6); }

    void prefetch(CUmemLocationType type, int id) {
        CUmemLocation location{};
        location.type = type;
        location.id = id;
        check(t_.cuMemPrefetchAsync_v2(buffer_, bytes_, location, 0, stream_), "cuMemPrefetchAsync");
    }

    void advise(CUmem_advise advice, CUmemLocationType type, int id) {
        CUmemLocation location{};
        location.type = type;
        location.id = id;
        check(t_.cuMemAdvise_v2(buffer_, bytes_, advice, location), "cuMemAdvise");
    }

    void launch(CUfunction function) {
        CUdeviceptr buffer = buffer_;
        uint64_t words = bytes_ / 16;
        uint32_t never = kNeverFold;
        std::array<void*, 3> params{&buffer, &words, &never};
        check(t_.cuLaunchKernel(function, kGridBlocks, 1, 1, kBlockThreads, 1, 1, 0, stream_, params.data(), nullptr),
              "launching a probe kernel (cuLaunchKernel)");
    }

    const DriverTable& t_;
    CUdevice device_;
    DeviceBudget& guard_;
    EventElapsedTime elapsed_ = nullptr;
    std::optional<CUstreamCaptureMode> application_mode_;
    CUstream stream_ = nullptr;
    std::array<CUevent, 2> events_{};
    CUmodule module_ = nullptr;
    CUfunction write_ = nullptr, read_ = nullptr;
    CUdeviceptr buffer_ = 0;
    uint64_t reserved_ = 0, bytes_ = 0;
};

} // namespace

rates::DeviceIdentity device_identity(const DriverTable& table, CUdevice device) {
    rates::DeviceIdentity identity;
    char name[256] = {};
    if (table.cuDeviceGetName && table.cuDeviceGetName(name, sizeof name - 1, device) == CUDA_SUCCESS)
        identity.name = name;
    CUuuid uuid{};
    if (table.cuDeviceGetUuid_v2 && table.cuDeviceGetUuid_v2(&uuid, device) == CUDA_SUCCESS) {
        const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
        identity.uuid = fmt::format("GPU-{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-"
                                    "{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
                                    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                                    b[13], b[14], b[15]);
    }
    int version = 0;
    if (table.cuDriverGetVersion && table.cuDriverGetVersion(&version) == CUDA_SUCCESS && version > 0)
        identity.driver_version = fmt::format("{}.{}", version / 1000, version % 1000 / 10);
    return identity;
}

std::optional<rates::LinkRates> probe_link_rates(const DriverTable& table, CUdevice device, DeviceBudget& guard,
                                                 ProbeFailure* failure) {
    try {
        ProbeRun run(table, device, guard);
        rates::LinkRates rates = run.measure();
        rates.device = device_identity(table, device);
        return rates;
    } catch (const ProbeFailure& caught) {
        if (failure) *failure = caught;
        return std::nullopt;
    }
}

} // namespace uvmp::driver
