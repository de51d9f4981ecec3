#include "core/trace/analysis/step_comparison.h"

#include "core/trace/analysis/managed_bytes.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace uvmp {
namespace {

std::string kernel_name(const trace::Trace& trace, uint32_t kernel) {
    if (kernel < trace.kernel_names.size() && !trace.kernel_names[kernel].empty()) return trace.kernel_names[kernel];
    return "(kernel " + std::to_string(kernel) + ", unnamed)";
}

// One trace's kernels as entries of the comparison, matched by name across the
// two traces; each kernel id's name is looked up once, not once a launch.
class KernelEntries {
public:
    KernelEntries(const trace::Trace& trace, std::vector<KernelStepTimes>& kernels,
                  std::unordered_map<std::string, size_t>& by_name)
        : trace_(trace), kernels_(kernels), by_name_(by_name) {}

    KernelStepTimes& of(uint32_t kernel) {
        auto id = by_id_.find(kernel);
        if (id == by_id_.end()) {
            const std::string name = kernel_name(trace_, kernel);
            const auto [named, added] = by_name_.emplace(name, kernels_.size());
            if (added) kernels_.push_back({.kernel = name});
            id = by_id_.emplace(kernel, named->second).first;
        }
        return kernels_[id->second];
    }

private:
    const trace::Trace& trace_;
    std::vector<KernelStepTimes>& kernels_;
    std::unordered_map<std::string, size_t>& by_name_;
    std::unordered_map<uint32_t, size_t> by_id_;
};

StepTime step_time(const trace::Trace& trace, LaunchRange step) {
    if (step.begin > step.end || step.end > trace.launches.size())
        throw std::invalid_argument("compare_steps: a step lies outside its trace's launches");
    return step_times(trace, std::vector<uint64_t>{step.begin, step.end}).front();
}

} // namespace

StepComparison compare_steps(const trace::Trace& base, LaunchRange base_step, const trace::Trace& run,
                             LaunchRange run_step) {
    StepComparison out;
    out.base = step_time(base, base_step);
    out.run = step_time(run, run_step);

    std::unordered_map<std::string, size_t> by_name;
    KernelEntries base_entry{base, out.kernels, by_name};
    for (uint64_t i = base_step.begin; i < base_step.end; ++i) {
        const trace::Launch& launch = base.launches[i];
        KernelStepTimes& k = base_entry.of(launch.kernel_id);
        ++k.base_launches;
        k.base_ns += launch.duration_ns;
    }
    KernelEntries run_entry{run, out.kernels, by_name};
    const trace::ManagedBytes managed(run);
    for (uint64_t i = run_step.begin; i < run_step.end; ++i) {
        const trace::Launch& launch = run.launches[i];
        KernelStepTimes& k = run_entry.of(launch.kernel_id);
        ++k.run_launches;
        k.run_ns += launch.duration_ns;
        k.run_named_bytes += managed.of(launch);
    }
    std::sort(out.kernels.begin(), out.kernels.end(), [](const KernelStepTimes& a, const KernelStepTimes& b) {
        return a.grown_ns() != b.grown_ns() ? a.grown_ns() > b.grown_ns() : a.kernel < b.kernel;
    });
    return out;
}

std::optional<size_t> last_timed_step(std::span<const StepTime> steps) {
    std::optional<size_t> untimed_call;
    for (size_t k = steps.size(); k-- > 0;) {
        const uint64_t launches = steps[k].launches.end - steps[k].launches.begin;
        if (launches == 0 || steps[k].timed_launches != launches) continue;
        if (steps[k].call_ns) return k;
        if (!untimed_call) untimed_call = k;
    }
    return untimed_call;
}

} // namespace uvmp
