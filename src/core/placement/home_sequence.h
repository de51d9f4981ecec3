// Routes the allocations of a live run to the homes chosen on a recorded one.
// Addresses differ from run to run; the order and sizes of a training job's
// allocations do not. So the sequence follows the recorded run's allocations
// in order: first those it made before its learned step (set-up, the first
// step), once, then the learned step's own, over and over. Each new allocation
// takes the home of the entry at the current position when the sizes agree.
// Where they do not, the run has strayed from the recording (an extra
// allocation, one left out, a step of other sizes): the next few entries are
// searched for the size, then the start of the step; an allocation that
// matches none of them gets the GPU, the home that never slows a reader, and
// the position stays for the next one. Each answer costs a bounded search.
//
// Not thread-safe: the caller serialises next() (allocation hooks run on any
// thread, and the order of allocations is what the sequence follows).
#pragma once

#include "core/placement/home_choice.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace uvmp::placement {

struct HomeEntry {
    uint64_t bytes = 0;
    Home home = Home::Gpu;
};

struct HomeSequenceCounts {
    uint64_t matched = 0;   // allocations that found their entry
    uint64_t unmatched = 0; // allocations that found none (given the GPU)
    uint64_t resyncs = 0;   // matches found past the current position
    uint64_t host = 0;      // answers of Home::Host
};

class HomeSequence {
public:
    // Entries looked at past the current position before an allocation counts as unmatched.
    static constexpr size_t kWindow = 8;

    HomeSequence() = default;
    // `prologue`: the recorded run's allocations before its learned step, in
    // order; `step`: the learned step's. Either may be empty.
    HomeSequence(std::vector<HomeEntry> prologue, std::vector<HomeEntry> step);

    // The home of the run's next allocation, of `bytes`. `step_entry`, if
    // given: the learned step's entry it matched, or nullopt (a prologue
    // entry, or none).
    Home next(uint64_t bytes, std::optional<size_t>* step_entry = nullptr);
    // The step's entry `index` is homed at `home` from now on (remote trials:
    // its readers proved slower with it remote than its GPU home costs, or the
    // steps after proved otherwise).
    void set_home(size_t index, Home home);
    // For a run that learned its step from itself, part of the way into one:
    // the next allocation is the step's `position`-th (modulo the step's length).
    void start_in_step(size_t position);

    bool in_prologue() const { return in_prologue_; }
    size_t position() const { return position_; }
    const HomeSequenceCounts& counts() const { return counts_; }

private:
    Home take(size_t index, std::optional<size_t>* step_entry);
    Home next_in_prologue(uint64_t bytes, std::optional<size_t>* step_entry);
    Home next_in_step(uint64_t bytes, std::optional<size_t>* step_entry);
    void enter_step();

    std::vector<HomeEntry> prologue_;
    std::vector<HomeEntry> step_;
    bool in_prologue_ = true;
    size_t position_ = 0;
    // Unmatched allocations in a row while in the prologue: past kWindow of
    // them the run is taken to have left its set-up behind, and the step begins.
    size_t prologue_misses_ = 0;
    HomeSequenceCounts counts_;
};

} // namespace uvmp::placement
