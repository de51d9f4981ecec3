#include "driver/intercept/interceptor.h"

#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/intercept/monotonic_clock.h"
#include "driver/timing/kernel_timing.h"

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <utility>

namespace uvmp::driver {
namespace {

std::atomic<Interceptor*> g_interceptor{nullptr};

} // namespace

Interceptor* interceptor() {
    // A driver the library cannot work with keeps every call as the program made it.
    if (const DriverTable* table = driver_table_if_ready(); table && !table->supported) return nullptr;
    return g_interceptor.load(std::memory_order_acquire);
}
void set_interceptor(Interceptor* instance) { g_interceptor.store(instance, std::memory_order_release); }

Interceptor::Interceptor(Config config, bool active)
    : config_(std::move(config)), active_(active),
      kernels_([this](const void* handle, KernelInfo& info) { describe_kernel(handle, info); }),
      pools_(config_, stats_, host_memory_), host_homes_(config_, stats_.host_homes), learner_(config_, host_homes_),
      start_ns_(monotonic_ns()) {
    host_homes_.take_rates_from([this](int device) { return rates_.of(device); },
                                [this](int device) { return rates_.fastest(device); });
    planner_ = make_planner();
    if (active_ && !config_.trace_in.empty() && config_.policy != ResidencyPolicy::Learned &&
        config_.host_homes != HostHomes::On)
        log::warn("UVMP_TRACE_IN is used only with UVMP_POLICY=learned or UVMP_HOST_HOMES=on; ignored");
}

std::unique_ptr<Planner> Interceptor::make_planner() {
    // Without a budget the physical guard is the only bound, and the library
    // never allocates past it: no plan could ever evict or fetch, so nothing is
    // planned and no launch pays for handing itself to the worker. Allocations
    // are populated as under policy none.
    if (!active_ || config_.policy == ResidencyPolicy::None || !config_.budget) return nullptr;
    auto planner = std::make_unique<Planner>(config_.policy, config_.chunk_size, config_.trace_in, stats_, registry_,
                                             fences_, mover_);
    planner->count_budget_bound_in(&budget_bound_);
    planner->guard_host_memory_with(&host_memory_);
    planner->report_move_times_to([this](int device, rates::Move move, uint64_t bytes, double seconds) {
        rates_.observe_move(device, move, bytes, seconds);
    });
    // The device's pool exists by then: its blocks are what bound the budget.
    if (config_.pool_placement == PoolPlacement::OverDead)
        planner->on_dead_memory_known([this](CUdevice device, std::shared_ptr<const pool::PlacementHint> hint) {
            if (pool::PoolBook* book = pools_.existing_book(device)) book->set_placement_hint(std::move(hint));
        });
    return planner;
}

uint64_t Interceptor::now_ns() const { return monotonic_ns() - start_ns_; }

void Interceptor::finish() {
    // A caller meanwhile (an exit signal's thread, or exit itself) returns only
    // once the work is done: the process may end as soon as it returns.
    static std::mutex finishing;
    std::lock_guard lock(finishing);
    if (finished_.exchange(true)) return;
    executor_.stop();
    mover_.stop();
    // What the job freed goes back to the driver, so that the counts below are final.
    pools_.trim_all([this](int device, std::span<const pool::SlabEvent> events) { record_slab_events(device, events); });
    learner_.stop();
    if (trace_file_) {
        KernelTiming::flush();
        trace_file_->close();
        stats_.trace_records_written.store(trace_file_->records_written(), std::memory_order_relaxed);
        stats_.trace_records_dropped.store(trace_file_->records_dropped(), std::memory_order_relaxed);
    }
    const bool did_anything = stats_.launches_seen.load() || stats_.allocs_converted.load() ||
                              stats_.allocs_passed_through.load();
    host_homes_.report();
    if (config_.summary && did_anything) {
        for (const std::string& line : stats_.summary_lines(read_accesses()))
            log::raw_stderr_line(log::prefix() + line);
        for (const std::string& line : rates_.summary_lines()) log::raw_stderr_line(log::prefix() + line);
        if (planner_)
            log::raw_stderr_line(log::prefix() + "policy " + std::string(to_string(config_.policy)) +
                                 (plans_launches_.load(std::memory_order_relaxed)
                                      ? ", prediction hit rate " + std::to_string(planner_->prediction_hit_rate())
                                      : std::string(", no launch planned: the job stayed within its budget")));
    }
    if (!config_.stats_file.empty() && did_anything) {
        const std::string path = expand_path_pattern(config_.stats_file, getpid(), &uvmp::process_getenv);
        std::ofstream out(path);
        if (out) out << rates_.with_rates(stats_.to_json(active_, getpid())) << "\n";
        else log::raw_stderr_line(log::prefix() + "cannot write the stats file '" + path + "'");
    }
}

} // namespace uvmp::driver
