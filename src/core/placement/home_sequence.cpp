#include "core/placement/home_sequence.h"

#include <algorithm>
#include <utility>

namespace uvmp::placement {

HomeSequence::HomeSequence(std::vector<HomeEntry> prologue, std::vector<HomeEntry> step)
    : prologue_(std::move(prologue)), step_(std::move(step)) {
    if (prologue_.empty()) enter_step();
}

Home HomeSequence::next(uint64_t bytes, std::optional<size_t>* step_entry) {
    if (step_entry) step_entry->reset();
    return in_prologue_ ? next_in_prologue(bytes, step_entry) : next_in_step(bytes, step_entry);
}

void HomeSequence::set_home(size_t index, Home home) {
    if (index < step_.size()) step_[index].home = home;
}

void HomeSequence::start_in_step(size_t position) {
    enter_step();
    position_ = step_.empty() ? 0 : position % step_.size();
}

void HomeSequence::enter_step() {
    in_prologue_ = false;
    position_ = 0;
}

Home HomeSequence::take(size_t index, std::optional<size_t>* step_entry) {
    const std::vector<HomeEntry>& entries = in_prologue_ ? prologue_ : step_;
    if (index != position_) ++counts_.resyncs;
    const Home home = entries[index].home;
    if (step_entry && !in_prologue_) *step_entry = index;
    ++counts_.matched;
    if (home == Home::Host) ++counts_.host;
    position_ = index + 1;
    if (in_prologue_) {
        prologue_misses_ = 0;
        if (position_ == prologue_.size()) enter_step();
    } else if (position_ == step_.size()) {
        position_ = 0;
    }
    return home;
}

Home HomeSequence::next_in_prologue(uint64_t bytes, std::optional<size_t>* step_entry) {
    const size_t end = std::min(prologue_.size(), position_ + 1 + kWindow);
    for (size_t i = position_; i < end; ++i)
        if (prologue_[i].bytes == bytes) return take(i, step_entry);
    // The run's set-up differs from the recording's more than a few
    // allocations' worth: what follows is matched against the step instead.
    if (++prologue_misses_ > kWindow) {
        enter_step();
        return next_in_step(bytes, step_entry);
    }
    ++counts_.unmatched;
    return Home::Gpu;
}

Home HomeSequence::next_in_step(uint64_t bytes, std::optional<size_t>* step_entry) {
    const size_t n = step_.size();
    for (size_t k = 0; k <= kWindow && k < n; ++k) {
        const size_t i = (position_ + k) % n;
        if (step_[i].bytes == bytes) return take(i, step_entry);
    }
    // A step that starts early (the last one cut short, say).
    if (n > 0 && step_[0].bytes == bytes) return take(0, step_entry);
    ++counts_.unmatched;
    return Home::Gpu;
}

} // namespace uvmp::placement
