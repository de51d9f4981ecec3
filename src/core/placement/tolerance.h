// Whether a kernel tolerates one of its operands living on the host. A kernel
// that streams an operand reads each byte about once: remote, it takes about its
// local time plus one trip of the operand's bytes over the link. One that re-reads
// it (a GEMM: 108x slower with one operand remote) takes far longer. The homes
// are chosen by a prior from local timings (timing_prior.h), and corrected once
// the run has timed the readers with their operands remote (remote_trial.h).
#pragma once

#include <cstdint>

namespace uvmp::placement {

enum class Tolerance : uint8_t { Unknown, Tolerant, Intolerant };

// Whatever judges a kernel's operand, by the kernel and the operand's place
// among the launch's accesses. A caller treats Unknown as intolerant: the home
// that never slows a reader is the GPU.
class ToleranceSource {
public:
    virtual ~ToleranceSource() = default;
    virtual Tolerance verdict(uint32_t kernel_id, uint32_t slot) const = 0;
};

} // namespace uvmp::placement
