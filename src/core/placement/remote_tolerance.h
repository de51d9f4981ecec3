// Whether a kernel tolerates one of its operands living on the host, learned
// from the kernel durations the library already times rather than guessed from
// kernel names. A kernel that streams an operand reads each byte about once: with
// the operand remote it takes about its local time plus one trip of the
// operand's bytes over the link (51 GB/s on the H200). A kernel that re-reads it
// (a GEMM: 108x slower with one operand remote) takes far longer. So an operand
// is tolerated remote when the kernel's median time with it remote stays within
// its median local time plus `trips` trips of the operand's bytes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

namespace uvmp::placement {

struct ToleranceConfig {
    double remote_read_gbps = 51.2;
    // Trips of the operand's bytes a tolerant kernel may add to its local time:
    // one read, with room for the noise of a shared link.
    double trips = 2.0;
    // Samples of each kind needed before a verdict.
    uint32_t min_samples = 3;
};

enum class Tolerance : uint8_t { Unknown, Tolerant, Intolerant };

// Whatever judges a kernel's operand: remote trials (RemoteTolerance) or a prior
// from local timings alone (core/placement/timing_prior.h).
class ToleranceSource {
public:
    virtual ~ToleranceSource() = default;
    virtual Tolerance verdict(uint32_t kernel_id, uint32_t slot) const = 0;
};

class RemoteTolerance final : public ToleranceSource {
public:
    explicit RemoteTolerance(ToleranceConfig config = {}) : config_(config) {}

    // One timed launch of `kernel_id` whose operand `slot` (its place among the
    // launch's accesses) of `operand_bytes` was remote or local.
    void record(uint32_t kernel_id, uint32_t slot, bool remote, uint64_t duration_ns, uint64_t operand_bytes);
    // Unknown until both kinds have min_samples; a caller treats Unknown as
    // intolerant (the home that never slows a reader is the GPU).
    Tolerance verdict(uint32_t kernel_id, uint32_t slot) const override;
    size_t operands_seen() const { return samples_.size(); }

private:
    // The last few durations of each kind: a kernel's time drifts with its
    // inputs, and old samples should not outvote new ones.
    static constexpr size_t kKept = 8;
    struct Durations {
        std::array<uint64_t, kKept> ns{};
        uint32_t count = 0; // all ever recorded; the ring holds the last kKept
        void add(uint64_t duration_ns) { ns[count++ % kKept] = duration_ns; }
        uint64_t median() const;
    };
    struct Samples {
        Durations local;
        Durations remote;
        uint64_t operand_bytes = 0; // of the latest sample
    };
    static uint64_t key(uint32_t kernel_id, uint32_t slot) { return uint64_t{kernel_id} << 32 | slot; }

    ToleranceConfig config_;
    std::unordered_map<uint64_t, Samples> samples_;
};

} // namespace uvmp::placement
