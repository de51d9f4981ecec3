// A trace's iterations as launch indices: from its iteration marks, else from
// the detected period (iteration_period.h). The simulator, the trace's edits and
// the loop seed all cut a trace at these bounds.
#pragma once

#include "core/trace/analysis/iteration_period.h"
#include "core/trace/format/model.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace uvmp {

// Iteration k spans launches [bounds[k], bounds[k + 1]). From the iteration
// marks, else from the detected period; a trailing partial iteration is left
// out. Empty when fewer than one full iteration is found.
std::vector<uint64_t> iteration_bounds(const trace::Trace& trace);
// The same where the caller holds detect_iteration_period(trace) already: the
// detection is not run again.
std::vector<uint64_t> iteration_bounds(const trace::Trace& trace,
                                       const std::optional<trace::IterationPeriod>& detected);
// The same for a trace recorded from the middle of a run (trace::MemoryRecorder),
// where only steps will do: empty unless the marks give two full iterations,
// or the detected period gives two and explains the whole recording but for
// less than a period at either end, in a recording of kMinRecordingLaunches
// launches or more. The layers of a step run the same kernels one after the
// other: in a recording of a step or two, or of a part of one, their period is
// what repeats best, and it leaves the rest of the recording unexplained.
inline constexpr uint64_t kMinRecordingLaunches = 4096;
std::vector<uint64_t> recording_iteration_bounds(const trace::Trace& trace);

// Launches [begin, end).
struct LaunchRange {
    uint64_t begin = 0;
    uint64_t end = 0;
};
// The last full iteration of iteration_bounds' result; nullopt when there is none.
std::optional<LaunchRange> last_full_iteration(std::span<const uint64_t> bounds);

// A step's length as the application sees it: from the launch call of its first
// launch to that of the next step's. `range.end` must be a launch of the trace;
// 0 where it is not, or where the clock did not advance.
uint64_t step_call_ns(const trace::Trace& trace, LaunchRange range);
// The median of such lengths over the full iterations `bounds` gives whose end is
// a launch of the trace (the last one ends the recording as a rule, and has no
// end to time), the mean of the middle two for an even count; nullopt where none
// has. Steps of one state vary (resnet50's ran 931-1413 ms over a budget on an
// H100): the median is what the state runs, the fastest only its best case.
std::optional<uint64_t> typical_step_call_ns(const trace::Trace& trace, std::span<const uint64_t> bounds);

} // namespace uvmp
