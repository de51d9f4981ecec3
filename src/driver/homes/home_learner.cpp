#include "driver/homes/home_learner.h"

#include "core/placement/remote_trial.h"
#include "core/placement/timing_prior.h"
#include "core/sim/simulator.h"
#include "core/trace/analysis/fastest_durations.h"
#include "core/trace/analysis/iteration_bounds.h"
#include "core/util/log.h"
#include "core/util/size_parse.h"
#include "driver/timing/kernel_timing.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

namespace uvmp::driver {
namespace {

// How often the thread looks, and how many launches must have come since its
// last look: a training step under pressure takes a fraction of a second or
// more, and each look copies the recording and searches it for steps.
constexpr std::chrono::milliseconds kLookEvery{250};
constexpr uint64_t kLaunchesBetweenLooks = 256;

// Kernels kept on the GPU by their rate, logged at learning and again at the trial.
constexpr size_t kKeptLogged = 6;

// A kernel's name as a log line shows it: mangled names run to hundreds of characters.
std::string_view logged_name(const trace::Trace& recording, uint32_t kernel) {
    constexpr size_t kNameLength = 80;
    if (kernel >= recording.kernel_names.size()) return {};
    return std::string_view(recording.kernel_names[kernel]).substr(0, kNameLength);
}

} // namespace

trace::MemoryRecorder* HomeLearner::begin(int device, uint64_t budget_bytes, trace::Header header,
                                          std::span<const trace::Alloc> live, Callbacks callbacks) {
    if (begun_.exchange(true, std::memory_order_acq_rel)) return nullptr;
    device_ = device;
    budget_bytes_ = budget_bytes;
    callbacks_ = std::move(callbacks);
    recorder_ = std::make_unique<trace::MemoryRecorder>(std::move(header), kMaxLaunches);
    for (const trace::Alloc& a : live) recorder_->alloc(a);
    recording_.store(true, std::memory_order_release);
    log::info("device {} went over its budget of {}: learning host homes from the next steps", device,
              format_size(budget_bytes));
    try {
        std::thread([this] { run(); }).detach();
    } catch (const std::exception& e) {
        give_up(std::string("no thread to learn on (") + e.what() + ")");
    }
    return recorder_.get();
}

void HomeLearner::kernel_timed(uint64_t launch_seq, uint64_t start_ns, uint64_t duration_ns) {
    if (!recording_.load(std::memory_order_acquire)) return;
    recorder_->kernel_duration(launch_seq, duration_ns);
    if (wants_waits()) recorder_->kernel_start(launch_seq, start_ns);
}

void HomeLearner::launch_planned(uint64_t launch_seq, const trace::LaunchBatch& batch) {
    if (wants_waits()) recorder_->launch_batch(launch_seq, batch);
}

void HomeLearner::host_homed(uint32_t id, std::optional<size_t> step_entry) {
    if (phase_.load(std::memory_order_acquire) != Phase::Trialling) return;
    std::lock_guard lock(host_mutex_);
    host_homed_.emplace(id, step_entry);
}

void HomeLearner::give_up(const std::string& why) {
    if (!recording_.load(std::memory_order_acquire)) return;
    if (phase_.load(std::memory_order_acquire) != Phase::Learning) return trial_failed(why);
    log::info("host homes not learned in the run: {}; every allocation is homed on the GPU", why);
    end();
}

void HomeLearner::trial_failed(const std::string& why) {
    log::info("remote trial of the host homes ended: {}; the homes stay as they are", why);
    end();
}

void HomeLearner::end() {
    std::call_once(end_once_, [this] {
        recording_.store(false, std::memory_order_release);
        if (callbacks_.done) callbacks_.done();
        recorder_->close();
    });
}

void HomeLearner::forget_after_fork() {
    begun_.store(true, std::memory_order_relaxed);
    recording_.store(false, std::memory_order_relaxed);
}

void HomeLearner::run() {
    while (!stopping_.load(std::memory_order_acquire) && recording_.load(std::memory_order_acquire)) {
        std::this_thread::sleep_for(kLookEvery);
        try {
            if (look()) return;
        } catch (const std::exception& e) {
            // The application must never pay for what went wrong here.
            const bool learning = phase_.load(std::memory_order_acquire) == Phase::Learning;
            give_up(std::string(learning ? "learning failed (" : "the trial failed (") + e.what() + ")");
            return;
        }
    }
}

bool HomeLearner::look() {
    const uint64_t launches = recorder_->launches();
    if (launches < looked_at_ + kLaunchesBetweenLooks) return false;
    looked_at_ = launches;
    // The kernels of the steps looked at have ended; their records may still
    // be in CUPTI's buffers. Later kernels may still run: a forced flush would
    // take their records back untimed, for good.
    KernelTiming::deliver_finished();
    trace::MoverRecord mover;
    trace::Trace recording = recorder_->snapshot(&mover);
    const std::vector<uint64_t> bounds = recording_iteration_bounds(recording);
    bool ended = false;
    switch (phase_.load(std::memory_order_acquire)) {
    case Phase::Learning: ended = learn(recording, bounds, mover); break;
    case Phase::Trialling: ended = judge_trial(recording, bounds); break;
    case Phase::Checking: ended = check_verdict(recording, bounds); break;
    }
    if (!ended && launches >= kMaxLaunches)
        give_up(fmt::format("no step repeated within the first {} launches after the budget was reached",
                            kMaxLaunches));
    return !recording_.load(std::memory_order_acquire);
}

bool HomeLearner::learn(trace::Trace& recording, const std::vector<uint64_t>& bounds,
                        const trace::MoverRecord& mover) {
    // One full step after the partial one it began in: a step whose end the
    // program marks is learned from as soon as it ends (the partial one stands
    // for the step before it, with_partial_step_before). A step found by its
    // period needs two in the recording (recording_iteration_bounds); the
    // learned one is then the second, as for a recorded trace.
    if (bounds.size() < 2) return false;
    // The full steps' last kernel records may come a look or two after them.
    if (learn_records_.worth_waiting(trace::launches_without_duration(recording, bounds.front(), bounds.back())))
        return false;
    // Each byte moved at the link's best rate for its direction: the least the
    // wait can have lasted (a kernel faulting in what it lacks is no faster
    // than the fetch beside it). Best means the probe's where the run's own
    // moves, timed beside the learning steps' faults, went slower (GPT-2 on an
    // H100: evictions refined to 3.9-4.6 GB/s over its learning steps, 14.7
    // probed): a slower rate makes every wait longer, more launches count as
    // having waited, and which kernels are judged streaming moves with it. A
    // kind whose every launch waited and that comes out too fast is judged
    // streaming, which remote trials correct.
    const placement::Rates link = router_.rates(device_);
    const placement::Rates fastest = router_.fastest_rates(device_);
    const trace::LaunchWaits waits =
        trace::mover_waits(mover, {.evict_gbps = fastest.evict_gbps,
                                   .fetch_gbps = fastest.fetch_gbps,
                                   .populate_gbps = fastest.populate_gbps});
    const trace::CleanedDurations cleaned = trace::use_fastest_durations(recording, waits, link.memory_gbps);
    log::info("kernel durations of the recording: {} launches waited for moves as they began (of {} that queued "
              "moves, {} kernels with a start); {} kinds timed only on such launches, taken less the wait; {} "
              "launches took their kind's least duration",
              cleaned.waited_launches, mover.batches.size(), mover.kernel_starts.size(), cleaned.kinds_from_waits,
              cleaned.shortened);
    constexpr size_t kNamesLogged = 4;
    for (size_t i = 0; i < std::min(kNamesLogged, cleaned.kernels_from_waits.size()); ++i) {
        const uint32_t kernel = cleaned.kernels_from_waits[i];
        log::info("  timed less its waits: kernel {} {}", kernel, logged_name(recording, kernel));
    }
    // A kernel never timed with its data in place is tried remote only where a
    // trial can give its operands their GPU home back.
    placement::TimingPriorConfig prior;
    prior.streaming_gbps = config_.streaming_gbps.line_gbps(link);
    if (config_.remote_trial) {
        prior.kernels_to_try = cleaned.kernels_untimed;
        kinds_untimed_ = cleaned.kinds_untimed;
    }
    for (size_t i = 0; i < std::min(kNamesLogged, prior.kernels_to_try.size()); ++i) {
        const uint32_t kernel = prior.kernels_to_try[i];
        log::info("  tried remote, never timed with its data in place: kernel {} {}", kernel,
                  logged_name(recording, kernel));
    }
    std::string why_not;
    // How long the search held the homes back: steps run over the budget
    // meanwhile, each at migration's pace.
    const auto search_began = std::chrono::steady_clock::now();
    const uint64_t launches_at_search = recorder_->launches();
    std::optional<placement::RecordedHomes> homes =
        placement::homes_in_run(recording, bounds, budget_bytes_, config_.chunk_size, &why_not, link, prior,
                                config_.step_layout, config_.earlier_homes);
    log::info("home search: the recording's {} launches and {} full steps searched in {:.0f} ms, from launch {} to "
              "launch {}",
              recording.launches.size(), bounds.size() - 1,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - search_began).count(),
              launches_at_search, recorder_->launches());
    if (!homes) {
        give_up(why_not);
        return true;
    }
    for (size_t i = 0; i < std::min(kKeptLogged, homes->kept_on_gpu.size()); ++i) {
        const placement::RecordedHomes::KeptOnGpu& kept = homes->kept_on_gpu[i];
        log::info("  kept on the GPU by kernel {} ({}): {} allocations of the step, {}; {}", kept.kernel,
                  kept.kernel_gbps ? fmt::format("{:.0f} GB/s named", *kept.kernel_gbps) : std::string("not judged"),
                  kept.allocations, format_size(kept.bytes), logged_name(recording, kept.kernel));
    }
    kept_on_gpu_ = homes->kept_on_gpu;
    streaming_gbps_ = homes->streaming_gbps;
    homes->waited_launches = cleaned.waited_launches;
    homes->kinds_from_waits = cleaned.kinds_from_waits;
    // The recorded steps ran over the budget with every home on the GPU: what
    // the trial's step with host homes must beat.
    before_homes_step_ns_ = typical_step_call_ns(recording, bounds);
    learned_host_bytes_ = homes->choice.host_bytes + homes->earlier_host_bytes;
    const std::vector<EarlierHome> earlier = earlier_homes(recording, homes->earlier_host_ids);
    const uint64_t earlier_bytes = homes->earlier_host_bytes;
    // Before routing begins, so that every allocation it homes on the host is noted.
    if (config_.remote_trial) phase_.store(Phase::Trialling, std::memory_order_release);
    router_.adopt_learned(device_, budget_bytes_, std::move(*homes), [this] { return recorder_->managed_allocs(); });
    trial_from_ = recorder_->launches();
    if (router_.routing() && !earlier.empty() && callbacks_.home_in_place) {
        log::info("host homes: {} allocations made before the learned step ({}) move to the host once and live "
                  "there",
                  earlier.size(), format_size(earlier_bytes));
        {
            std::lock_guard lock(host_mutex_);
            for (const EarlierHome& e : earlier) host_homed_.emplace(e.id, std::nullopt);
        }
        earlier_ = earlier;
        callbacks_.home_in_place(earlier_, placement::Home::Host);
    }
    if (router_.routing() && callbacks_.routing) callbacks_.routing();
    if (!router_.routing() || !config_.remote_trial) {
        end();
        return true;
    }
    return false;
}

std::vector<HomeLearner::EarlierHome> HomeLearner::earlier_homes(const trace::Trace& recording,
                                                                 std::span<const uint32_t> ids) {
    std::vector<EarlierHome> out;
    if (ids.empty()) return out;
    const std::unordered_set<uint32_t> wanted(ids.begin(), ids.end());
    for (const trace::Alloc& a : recording.allocs)
        if (wanted.contains(a.id)) out.push_back({a.id, a.address});
    return out;
}

bool HomeLearner::judge_trial(const trace::Trace& recording, const std::vector<uint64_t>& bounds) {
    // The second full step that began after routing did: all of its
    // allocations were routed by the homes, and their host slabs had their
    // pages. Judged as soon as every one of its launches is timed, once the
    // step after it has begun; or, should some stay untimed, once that step
    // has ended too, by when its own kernels have run (a job's launches run
    // up to a step ahead of its kernels), as far as their records came.
    // Waiting for the step after to end cost resnet50 a step more at the
    // trial's slower homes (pool run 83).
    const auto first = std::lower_bound(bounds.begin(), bounds.end(), trial_from_);
    if (bounds.end() - first < 3) return false;
    const bool next_step_ended = bounds.end() - first >= 4;
    const uint64_t step_begin = *std::next(first), step_end = *std::next(first, 2);
    std::unordered_map<uint32_t, std::optional<size_t>> host_homed;
    {
        std::lock_guard lock(host_mutex_);
        host_homed = host_homed_;
    }
    placement::TrialConfig trial;
    trial.kinds_untimed = kinds_untimed_;
    trial.homes_from = trial_from_;
    trial.rates = router_.rates(device_);
    trial.streaming_gbps = config_.streaming_gbps.line_gbps(trial.rates);
    const placement::TrialVerdict verdict = placement::judge_remote_trial(
        recording, step_begin, step_end, [&](uint32_t id) { return host_homed.contains(id); }, trial);
    // Its kernels may still run while the step after it does.
    if (!next_step_ended && verdict.launches_untimed > 0) return false;
    // The step's last kernel records may come a look or two after it.
    if (trial_records_.worth_waiting(verdict.launches_untimed)) return false;
    // The learned step's entries that homed the host-homed allocations `chosen` picks, each once.
    const auto entries_of = [&](const auto& chosen) {
        std::vector<size_t> out;
        for (const auto& [id, entry] : host_homed)
            if (entry && chosen(id)) out.push_back(*entry);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
        return out;
    };
    const std::unordered_set<uint32_t> gpu_again(verdict.gpu_again.begin(), verdict.gpu_again.end());
    std::vector<size_t> entries = entries_of([&](uint32_t id) { return gpu_again.contains(id); });
    std::vector<EarlierHome> earlier_back;
    for (const EarlierHome& e : earlier_)
        if (gpu_again.contains(e.id)) earlier_back.push_back(e);
    log::info("remote trial of launches [{}, {}) of the recording: {} launches of {} kinds read host-homed data "
              "({} more untimed, {} of kinds with no local time), "
              "{} kinds slower than their local time plus two trips ({:.1f} ms a step past it); {} allocations of "
              "the step ({}) homed on the GPU from now on, whose readers' {:.1f} ms outweighed their GPU home",
              step_begin, step_end, verdict.launches_judged, verdict.kinds_judged, verdict.launches_untimed,
              verdict.launches_without_local, verdict.kinds_slowed,
              verdict.excess_seconds * 1e3, entries.size(), format_size(verdict.gpu_again_bytes),
              verdict.gpu_again_excess_seconds * 1e3);
    const double trips = placement::trips_of(verdict.past_local_seconds, verdict.named_bytes,
                                             trial.rates.remote_read_gbps);
    log::info("remote trial: those launches named {} of host-homed data, each launch once, and took {:.1f} ms past "
              "their local times: {:.1f} read trips' time a named byte at {:.1f} GB/s",
              format_size(verdict.named_bytes), verdict.past_local_seconds * 1e3, trips,
              trial.rates.remote_read_gbps);
    for (const placement::TrialVerdict::KindTime& kind : verdict.slowest)
        log::info("  kernel {} ({}): {} launches, {} named, {:.1f} ms past local, {:.1f} read trips' time a byte", kind.kernel,
                  logged_name(recording, kind.kernel), kind.launches, format_size(kind.named_bytes),
                  kind.past_local_seconds * 1e3,
                  placement::trips_of(kind.past_local_seconds, kind.named_bytes, trial.rates.remote_read_gbps));
    const std::vector<HostHomeTrial::KeptKernel> kept =
        kept_rejudged(recording, step_begin, step_end, [&](uint32_t id) { return host_homed.contains(id); });
    if (callbacks_.trial_judged)
        callbacks_.trial_judged({.launches = verdict.launches_judged,
                                 .launches_untimed = verdict.launches_untimed,
                                 .launches_without_local = verdict.launches_without_local,
                                 .kinds = verdict.kinds_judged,
                                 .kinds_slowed = verdict.kinds_slowed,
                                 .named_bytes = verdict.named_bytes,
                                 .past_local_ms = verdict.past_local_seconds * 1e3,
                                 .trips = trips,
                                 .kept_on_gpu = kept,
                                 .streaming_gbps = streaming_gbps_});
    // The verdict above weighs each allocation's readers against its GPU home,
    // by the rates. The steps themselves can say more: where the step with the
    // host homes took longer than the median of those recorded with every home
    // on the GPU, the homes cost more than the search foresaw (kernels re-reading
    // their host-homed operands), and every one of them is given back its GPU home,
    // with the step layout planned around them: the steps recorded before ran
    // with neither (with the layout kept, resnet50's steps on an H100 ran
    // 1586-2164 ms against 864-969 before the homes). The check after it keeps
    // whichever of the two steps measured faster.
    const uint64_t judged_ns = step_call_ns(recording, {step_begin, step_end});
    uint64_t given_back_bytes = verdict.gpu_again_bytes;
    if (before_homes_step_ns_ && judged_ns > *before_homes_step_ns_) {
        log::info("remote trial: the step with host homes took {:.1f} ms, the median of those recorded before them {:.1f} ms; "
                  "every host home is given back its GPU home",
                  judged_ns * 1e-6, *before_homes_step_ns_ * 1e-6);
        entries = entries_of([](uint32_t) { return true; });
        earlier_back = earlier_;
        given_back_bytes = learned_host_bytes_;
        router_.use_layout(false);
    }
    if (entries.empty() && earlier_back.empty()) {
        end();
        return true;
    }
    router_.set_homes(entries, placement::Home::Gpu);
    if (!earlier_back.empty() && callbacks_.home_in_place) callbacks_.home_in_place(earlier_back, placement::Home::Gpu);
    if (callbacks_.given_back)
        callbacks_.given_back(entries.size() + earlier_back.size(), given_back_bytes, false);
    earlier_given_back_ = std::move(earlier_back);
    judged_step_ns_ = judged_ns;
    given_back_ = std::move(entries);
    given_back_bytes_ = given_back_bytes;
    verdict_from_ = recorder_->launches();
    phase_.store(Phase::Checking, std::memory_order_release);
    return false;
}

std::vector<HostHomeTrial::KeptKernel> HomeLearner::kept_rejudged(const trace::Trace& recording, uint64_t step_begin,
                                                                  uint64_t step_end,
                                                                  const std::function<bool(uint32_t)>& host_homed) const {
    std::vector<uint32_t> kernels;
    for (const placement::RecordedHomes::KeptOnGpu& k : kept_on_gpu_) kernels.push_back(k.kernel);
    // A kernel's rate does not depend on the line: the prior's other settings as the search had them.
    const std::vector<std::optional<double>> now =
        placement::trial_step_gbps(recording, step_begin, step_end, host_homed, kernels);
    std::vector<HostHomeTrial::KeptKernel> out;
    for (size_t i = 0; i < kept_on_gpu_.size(); ++i) {
        const placement::RecordedHomes::KeptOnGpu& k = kept_on_gpu_[i];
        out.push_back({.kernel = k.kernel,
                       .allocations = k.allocations,
                       .bytes = k.bytes,
                       .learned_gbps = k.kernel_gbps.value_or(0),
                       .trial_gbps = now[i].value_or(0)});
    }
    // One above the line now kept its operands on the GPU for a stall of the learning steps.
    for (size_t i = 0; i < std::min(kKeptLogged, out.size()); ++i) {
        const HostHomeTrial::KeptKernel& k = out[i];
        log::info("  kept on the GPU by kernel {}: {} allocations ({}), named at {:.0f} GB/s under pressure, {} in "
                  "the trial step (line {:.0f}); {}",
                  k.kernel, k.allocations, format_size(k.bytes), k.learned_gbps,
                  k.trial_gbps > 0 ? fmt::format("{:.0f} GB/s", k.trial_gbps) : std::string("untimed"),
                  streaming_gbps_, logged_name(recording, k.kernel));
    }
    return out;
}

bool HomeLearner::check_verdict(const trace::Trace& recording, const std::vector<uint64_t>& bounds) {
    // The second full step after the verdict: the first makes GPU blocks
    // where host ones were, with pages to populate and evictions to make room.
    // Its length runs to the launch call that begins the step after it.
    const auto first = std::lower_bound(bounds.begin(), bounds.end(), verdict_from_);
    if (bounds.end() - first < 4) return false;
    const uint64_t after_ns = step_call_ns(recording, {*std::next(first), *std::next(first, 2)});
    const bool reverted = after_ns > judged_step_ns_;
    // Only a whole give-back takes the layout away; the homes back on the host bring it back.
    const bool layout_back = reverted && router_.arena_bytes() != 0 && !router_.layout_used();
    if (reverted) {
        router_.set_homes(given_back_, placement::Home::Host);
        router_.use_layout(true);
        if (!earlier_given_back_.empty() && callbacks_.home_in_place)
            callbacks_.home_in_place(earlier_given_back_, placement::Home::Host);
        if (callbacks_.given_back)
            callbacks_.given_back(given_back_.size() + earlier_given_back_.size(), given_back_bytes_, true);
    }
    log::info("remote trial: the step with {} allocations ({}) homed on the GPU again took {:.1f} ms, against "
              "{:.1f} ms for the judged one; {}",
              given_back_.size() + earlier_given_back_.size(), format_size(given_back_bytes_), after_ns * 1e-6, judged_step_ns_ * 1e-6,
              !reverted ? "the verdict stays"
              : layout_back ? "they live on the host again, with the step layout"
                            : "they live on the host again");
    end();
    return true;
}

} // namespace uvmp::driver
