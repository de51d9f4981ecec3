#include "core/rates/evicted_ledger.h"

#include <catch2/catch.hpp>

using uvmp::rates::EvictedLedger;

TEST_CASE("a fetch crosses the link only where the mover evicted its bytes before", "[rates]") {
    EvictedLedger ledger;
    SECTION("a block never evicted: its pages are on the GPU or were never written") {
        CHECK_FALSE(ledger.fetched(7, 64 << 20));
    }
    SECTION("evicted whole, fetched back in two pieces") {
        ledger.evicted(7, 128 << 20);
        CHECK(ledger.fetched(7, 64 << 20));
        CHECK(ledger.fetched(7, 64 << 20));
        CHECK_FALSE(ledger.fetched(7, 64 << 20));
        CHECK(ledger.allocations() == 0);
    }
    SECTION("a fetch larger than what was evicted is partly a no-op, and clears the allocation") {
        ledger.evicted(7, 32 << 20);
        CHECK_FALSE(ledger.fetched(7, 64 << 20));
        CHECK_FALSE(ledger.fetched(7, 16 << 20));
    }
    SECTION("allocations are apart") {
        ledger.evicted(7, 64 << 20);
        CHECK_FALSE(ledger.fetched(8, 64 << 20));
        CHECK(ledger.fetched(7, 64 << 20));
    }
    SECTION("past its bound the ledger starts afresh") {
        for (uint32_t id = 1; id <= EvictedLedger::kMaxAllocations; ++id) ledger.evicted(id, 1);
        CHECK(ledger.allocations() == EvictedLedger::kMaxAllocations);
        ledger.evicted(EvictedLedger::kMaxAllocations + 1, 64 << 20);
        CHECK(ledger.allocations() == 1);
        CHECK_FALSE(ledger.fetched(1, 1));
        CHECK(ledger.fetched(EvictedLedger::kMaxAllocations + 1, 64 << 20));
    }
}
