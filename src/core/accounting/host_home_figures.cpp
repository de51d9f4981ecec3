#include "core/accounting/host_home_figures.h"

#include "core/util/size_parse.h"

#include <cstdio>

namespace uvmp {

void HostHomeFigures::chosen(HostHomeChoice choice) {
    std::lock_guard lock(mutex_);
    choice_ = std::move(choice);
}

void HostHomeFigures::used_from(uint64_t launch) {
    std::lock_guard lock(mutex_);
    used_from_launch_ = launch;
}

void HostHomeFigures::given_back(uint64_t entries, uint64_t bytes, bool reverted) {
    std::lock_guard lock(mutex_);
    given_back_ = entries;
    given_back_bytes_ = bytes;
    given_back_reverted_ = reverted;
}

void HostHomeFigures::routed(const HostHomeRouting& routing) {
    std::lock_guard lock(mutex_);
    routing_ = routing;
}

void HostHomeFigures::homed_in_place(uint64_t allocations, uint64_t bytes, bool to_host) {
    std::lock_guard lock(mutex_);
    (to_host ? in_place_to_host_ : in_place_to_gpu_) += allocations;
    (to_host ? in_place_to_host_bytes_ : in_place_to_gpu_bytes_) += bytes;
}

void HostHomeFigures::trial_judged(const HostHomeTrial& trial) {
    std::lock_guard lock(mutex_);
    trial_ = trial;
}

void HostHomeFigures::add_json(nlohmann::ordered_json& j) const {
    std::lock_guard lock(mutex_);
    j["host_homes_learned"] = used_from_launch_.has_value();
    j["host_homes_learned_at_launch"] = used_from_launch_.value_or(0);
    j["host_homes_given_back"] = given_back_;
    j["host_homes_given_back_bytes"] = given_back_bytes_;
    j["host_homes_given_back_reverted"] = given_back_reverted_;
    j["host_homes_earlier"] = {{"to_host", in_place_to_host_},
                               {"to_host_bytes", in_place_to_host_bytes_},
                               {"to_gpu", in_place_to_gpu_},
                               {"to_gpu_bytes", in_place_to_gpu_bytes_}};
    if (trial_) {
        nlohmann::ordered_json kept = nlohmann::ordered_json::array();
        for (const HostHomeTrial::KeptKernel& k : trial_->kept_on_gpu)
            kept.push_back({{"kernel", k.kernel},
                            {"allocations", k.allocations},
                            {"bytes", k.bytes},
                            {"learned_gbps", k.learned_gbps},
                            {"trial_gbps", k.trial_gbps}});
        j["host_homes_trial"] = {{"launches", trial_->launches},
                                 {"launches_untimed", trial_->launches_untimed},
                                 {"launches_without_local", trial_->launches_without_local},
                                 {"kinds", trial_->kinds},
                                 {"kinds_slowed", trial_->kinds_slowed},
                                 {"named_bytes", trial_->named_bytes},
                                 {"past_local_ms", trial_->past_local_ms},
                                 {"trips", trial_->trips},
                                 {"streaming_gbps", trial_->streaming_gbps},
                                 {"kept_on_gpu", std::move(kept)}};
    }
    if (!choice_) return;
    const HostHomeChoice& c = *choice_;
    nlohmann::ordered_json h;
    h["source"] = c.source;
    h["used"] = c.used;
    h["step_allocations"] = c.step_allocations;
    h["candidates"] = c.candidates;
    h["chosen"] = c.chosen;
    h["chosen_bytes"] = c.chosen_bytes;
    h["swapped_bytes"] = c.swapped_bytes;
    h["all_gpu_swapped_bytes"] = c.all_gpu_swapped_bytes;
    h["kernels_judged"] = c.kernels_judged;
    h["kernels_streaming"] = c.kernels_streaming;
    h["kernels_tried"] = c.kernels_tried;
    h["streaming_gbps"] = c.streaming_gbps;
    h["waited_launches"] = c.waited_launches;
    h["kinds_from_waits"] = c.kinds_from_waits;
    h["simulated_ms"] = c.simulated_ms;
    h["all_gpu_ms"] = c.all_gpu_ms;
    h["routed_host"] = routing_.host;
    h["routed_matched"] = routing_.matched;
    h["routed_unmatched"] = routing_.unmatched;
    h["routed_resyncs"] = routing_.resyncs;
    h["layout_ms"] = c.layout_ms;
    h["placed_as_they_come_ms"] = c.placed_as_they_come_ms;
    h["layout_arena_bytes"] = c.layout_arena_bytes;
    h["layout_placed"] = routing_.laid_out;
    h["layout_displaced"] = routing_.displaced;
    j["host_homes"] = std::move(h);
}

std::optional<std::string> HostHomeFigures::summary_line() const {
    std::lock_guard lock(mutex_);
    if (!used_from_launch_) return std::nullopt;
    std::string line = "host homes learned in the run, used from launch " + std::to_string(*used_from_launch_) +
                       " on; " + std::to_string(given_back_) + " allocations of a step (" +
                       format_size(given_back_bytes_) + ") given back their GPU home by remote trials";
    if (given_back_reverted_) line += ", then sent back to the host (the steps after were slower)";
    if (in_place_to_host_)
        line += "; " + std::to_string(in_place_to_host_) + " allocations made before the learned step (" +
                format_size(in_place_to_host_bytes_) + ") moved to the host once";
    if (trial_) {
        char trips[32];
        std::snprintf(trips, sizeof trips, "%.1f", trial_->trips);
        line += std::string("; in the trial, kernels took ") + trips + " read trips' time past their local times " +
                "for each byte of the " + format_size(trial_->named_bytes) + " of host-homed data they named";
    }
    return line;
}

void HostHomeFigures::reset() {
    std::lock_guard lock(mutex_);
    choice_.reset();
    used_from_launch_.reset();
    given_back_ = given_back_bytes_ = 0;
    given_back_reverted_ = false;
    routing_ = {};
    trial_.reset();
    in_place_to_host_ = in_place_to_host_bytes_ = in_place_to_gpu_ = in_place_to_gpu_bytes_ = 0;
}

} // namespace uvmp
