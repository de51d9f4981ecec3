#include "core/placement/remote_tolerance.h"

#include <catch2/catch.hpp>

using namespace uvmp::placement;

namespace {
constexpr uint64_t kMiB = 1ull << 20;

void record_times(RemoteTolerance& t, uint32_t kernel, uint32_t slot, bool remote, uint64_t ns, uint64_t bytes,
                  int times) {
    for (int i = 0; i < times; ++i) t.record(kernel, slot, remote, ns + static_cast<uint64_t>(i), bytes);
}
} // namespace

TEST_CASE("remote tolerance: a streaming kernel tolerates its operand remote", "[placement]") {
    // An elementwise kernel over 1 GiB: 0.27 ms local, about one trip at 51 GB/s remote.
    RemoteTolerance t;
    record_times(t, 1, 0, false, 270'000, 1024 * kMiB, 3);
    record_times(t, 1, 0, true, 21'500'000, 1024 * kMiB, 3);
    CHECK(t.verdict(1, 0) == Tolerance::Tolerant);
}

TEST_CASE("remote tolerance: a GEMM does not", "[placement]") {
    // Measured on the H200: 8192^3 fp16, 1.27 ms with A local, 139 ms with A remote.
    RemoteTolerance t;
    record_times(t, 2, 1, false, 1'270'000, 128 * kMiB, 3);
    record_times(t, 2, 1, true, 139'000'000, 128 * kMiB, 3);
    CHECK(t.verdict(2, 1) == Tolerance::Intolerant);
    // Another operand of the same kernel has no verdict of its own yet.
    CHECK(t.verdict(2, 0) == Tolerance::Unknown);
}

TEST_CASE("remote tolerance: no verdict before enough samples of both kinds", "[placement]") {
    RemoteTolerance t(ToleranceConfig{51.2, 2.0, 3});
    record_times(t, 3, 0, false, 1000, kMiB, 5);
    record_times(t, 3, 0, true, 1000, kMiB, 2);
    CHECK(t.verdict(3, 0) == Tolerance::Unknown);
    t.record(3, 0, true, 1000, kMiB);
    CHECK(t.verdict(3, 0) == Tolerance::Tolerant);
    CHECK(t.operands_seen() == 1);
}

TEST_CASE("remote tolerance: recent samples outvote old ones", "[placement]") {
    // The kernel's remote time was fine, then its input grew reuse: the last eight samples decide.
    RemoteTolerance t;
    record_times(t, 4, 0, false, 100'000, 64 * kMiB, 8);
    record_times(t, 4, 0, true, 1'000'000, 64 * kMiB, 8);
    CHECK(t.verdict(4, 0) == Tolerance::Tolerant);
    record_times(t, 4, 0, true, 90'000'000, 64 * kMiB, 8);
    CHECK(t.verdict(4, 0) == Tolerance::Intolerant);
}
