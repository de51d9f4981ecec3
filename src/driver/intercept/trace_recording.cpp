// Trace recording: the records of launches and iterations, the trace file
// opened with the first allocation, the routing of records to the file and to
// the recording host homes are learned from, and the kernel timing that feeds both.
#include "driver/intercept/interceptor.h"

#include "core/trace/recording/trace_tee.h"
#include "core/util/log.h"
#include "driver/timing/kernel_timing.h"

#include <unistd.h>

#include <ctime>
#include <utility>

namespace uvmp::driver {

void Interceptor::record_launch(trace::TraceWriter& trace, uint64_t seq, uint32_t kernel_id,
                                const unsigned (&grid)[3], const unsigned (&block)[3], CUstream stream,
                                std::span<const trace::Access> accesses) {
    trace::Launch record;
    record.seq = seq;
    record.kernel_id = kernel_id;
    for (int i = 0; i < 3; ++i) {
        record.grid[i] = grid[i];
        record.block[i] = block[i];
    }
    record.stream = reinterpret_cast<uint64_t>(stream);
    record.time_ns = now_ns();
    trace.launch(record, accesses);
}

void Interceptor::mark_iteration() {
    const uint64_t index = stats_.iterations.fetch_add(1, std::memory_order_relaxed);
    if (trace::TraceWriter* trace = this->trace()) {
        trace::Iteration record;
        record.index = index;
        record.launches_before = launch_seq_.load(std::memory_order_relaxed);
        record.time_ns = now_ns();
        trace->iteration(record);
    }
}

trace::Header Interceptor::trace_header(const DriverTable& table) const {
    trace::Header header;
    header.library_version = UVMP_VERSION_STRING;
    header.chunk_bytes = config_.chunk_size;
    header.pid = static_cast<int32_t>(getpid());
    header.start_time_ns = static_cast<uint64_t>(std::time(nullptr)) * 1000000000ull;
    for (const auto& [key, value] : config_.values) header.options[key] = value;
    CUdevice device = 0;
    if (table.cuCtxGetDevice(&device) == CUDA_SUCCESS) {
        char name[256] = {};
        if (table.cuDeviceGetName(name, sizeof name - 1, device) == CUDA_SUCCESS) header.device_name = name;
        size_t total = 0;
        if (table.cuDeviceTotalMem_v2(&total, device) == CUDA_SUCCESS) header.device_total_bytes = total;
        header.budget_bytes = budgets_[static_cast<size_t>(device) % budgets_.size()].budget();
        if (auto rates = rates_.settled(device); rates && rates->measured()) header.rates = std::move(rates);
    }
    int version = 0;
    if (table.cuDriverGetVersion(&version) == CUDA_SUCCESS) header.driver_version = version;
    header.rank = process_rank(&process_getenv).value_or(-1);
    return header;
}

void Interceptor::open_trace_if_needed(const DriverTable& table) {
    if (config_.trace_out.empty()) return;
    std::call_once(trace_once_, [&] {
        trace::TraceWriter::Options options;
        options.path = expand_path_pattern(config_.trace_out, getpid(), &uvmp::process_getenv);
        options.buffer_bytes = config_.trace_buffer;
        std::string error;
        trace_file_ = trace::TraceWriter::open(options, trace_header(table), error);
        if (!trace_file_) {
            log::warn("cannot record the trace: {}", error);
            return;
        }
        log::info("recording the access trace to {}", options.path);
        route_trace_records(nullptr);
        if (planner_) {
            trace::TraceWriter* writer = trace_file_.get();
            executor_.post([this, writer](Executor&) { planner_->set_trace(writer); });
        }
        if (config_.trace_timing && !start_kernel_timing(error)) log::warn("{}", error);
    });
}

void Interceptor::route_trace_records(trace::TraceWriter* recording) {
    std::lock_guard lock(trace_route_mutex_);
    trace::TraceWriter* file = trace_file_.get();
    if (file && recording) {
        if (!trace_tee_) trace_tee_ = std::make_unique<trace::TraceTee>(*file, *recording);
        trace_.store(trace_tee_.get(), std::memory_order_release);
    } else {
        trace_.store(file ? file : recording, std::memory_order_release);
    }
}

bool Interceptor::start_kernel_timing(std::string& error) {
    // Started once in the process, for the trace file, the learner or both.
    return KernelTiming::running() ||
           KernelTiming::start([this](uint64_t seq, uint64_t start, uint64_t duration) { kernel_timed(seq, start, duration); },
                               error);
}

void Interceptor::kernel_timed(uint64_t seq, uint64_t start_ns, uint64_t duration_ns) {
    if (config_.trace_timing && trace_file_) trace_file_->kernel_duration(seq, duration_ns);
    learner_.kernel_timed(seq, start_ns, duration_ns);
}

void Interceptor::learn_homes_if_over_budget(int device, const DeviceBudget& budget, const DriverTable& table) {
    if (!learner_.armed() || budget.converted_live() <= budget.budget()) return;
    std::call_once(learning_once_, [&] {
        std::vector<trace::Alloc> live;
        const uint64_t launches_before = launch_seq_.load(std::memory_order_relaxed);
        for (const Allocation& a : registry_.snapshot()) {
            trace::Alloc record;
            record.id = a.id;
            record.address = a.base;
            record.size = a.size;
            record.kind = a.host_homed ? trace::AllocKind::Host : trace::AllocKind::Pooled;
            record.device = a.device;
            record.launches_before = launches_before;
            live.push_back(record);
        }
        HomeLearner::Callbacks callbacks;
        callbacks.routing = [this] { stats_.host_homes.used_from(launch_seq_.load(std::memory_order_relaxed)); };
        callbacks.home_in_place = [this, device](std::span<const HomeLearner::EarlierHome> earlier,
                                                 placement::Home home) { home_in_place(device, earlier, home); };
        callbacks.given_back = [this](uint64_t entries, uint64_t bytes, bool reverted) {
            stats_.host_homes.given_back(entries, bytes, reverted);
        };
        callbacks.trial_judged = [this](const HostHomeTrial& trial) { stats_.host_homes.trial_judged(trial); };
        callbacks.done = [this] {
            route_trace_records(nullptr);
            if (!config_.trace_timing) KernelTiming::stop();
        };
        trace::MemoryRecorder* recording =
            learner_.begin(device, budget.budget(), trace_header(table), live, std::move(callbacks));
        if (!recording) return;
        std::string error;
        if (!start_kernel_timing(error)) return learner_.give_up(error);
        route_trace_records(recording);
    });
}

} // namespace uvmp::driver
