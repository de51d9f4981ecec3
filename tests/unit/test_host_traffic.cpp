#include "core/placement/host_traffic.h"

#include <catch2/catch.hpp>

#include <vector>

using namespace uvmp;
using namespace uvmp::placement;

namespace {
constexpr uint64_t kMiB = 1ull << 20;
}

TEST_CASE("host traffic: the first launch naming a host block writes it, later ones read it", "[placement]") {
    HostTraffic traffic;
    traffic.add(7, 8 * kMiB);
    std::vector<HostTrip> trips;
    // Allocation 3 lives on the GPU: not counted.
    const trace::Access fill[] = {{7, 0, 0}, {3, 0, 0}};
    HostTrafficBytes named = traffic.launch(fill, trips);
    CHECK(named.written == 8 * kMiB);
    CHECK(named.read == 0);
    REQUIRE(trips.size() == 1);
    CHECK((trips[0].alloc_id == 7 && trips[0].writes));
    // Named twice by one launch: once, with the bytes of its first access (the rest from its offset).
    const trace::Access twice[] = {{7, 2 * kMiB, 0}, {7, 0, 0}};
    named = traffic.launch(twice, trips);
    CHECK(named.written == 0);
    CHECK(named.read == 6 * kMiB);
    CHECK(trips.size() == 1);
    // A known extent counts as given.
    const trace::Access part[] = {{7, kMiB, kMiB}};
    CHECK(traffic.launch(part, trips).read == kMiB);
}

TEST_CASE("host traffic: a new step, or an id made again, is written anew, a removed block is no longer counted",
          "[placement]") {
    HostTraffic traffic;
    traffic.add(1, kMiB);
    traffic.add(2, 2 * kMiB);
    std::vector<HostTrip> trips;
    const trace::Access both[] = {{1, 0, 0}, {2, 0, 0}};
    CHECK(traffic.launch(both, trips).written == 3 * kMiB);
    traffic.new_step();
    HostTrafficBytes named = traffic.launch(both, trips);
    CHECK((named.written == 3 * kMiB && named.read == 0));
    // Added again under its id: a block made anew holds nothing to read.
    traffic.add(2, 4 * kMiB);
    named = traffic.launch(both, trips);
    CHECK((named.written == 4 * kMiB && named.read == kMiB));
    traffic.remove(1);
    CHECK_FALSE(traffic.holds(1));
    named = traffic.launch(both, trips);
    CHECK((named.written == 0 && named.read == 4 * kMiB));
    traffic.remove(2);
    CHECK(traffic.size() == 0);
    CHECK(traffic.launch(both, trips).read == 0);
    CHECK(trips.empty());
}
