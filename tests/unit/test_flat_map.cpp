// The map from 64-bit keys (core/util/flat_map.h): erasing shifts the
// entries behind a hole back, so that every key stays found.
#include "core/util/flat_map.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <random>

using uvmp::FlatMap;

TEST_CASE("pool: the flat map agrees with std::map through inserts, erases and growth", "[pool]") {
    FlatMap<uint64_t> map;
    std::map<uint64_t, uint64_t> model;
    std::mt19937_64 rng(7);
    for (int i = 0; i < 20000; ++i) {
        // Few distinct keys, many collisions: keys a multiple of 2^20 apart.
        const uint64_t key = (rng() % 4096) << 20;
        if (rng() % 3 == 0) {
            uint64_t value = 0;
            const bool had = model.erase(key) != 0;
            CHECK(map.take(key, &value) == had);
            if (had) CHECK(value == key + 1);
        } else if (!map.find(key)) {
            map.insert(key, key + 1);
            model[key] = key + 1;
        }
    }
    CHECK(map.size() == model.size());
    for (const auto& [key, value] : model) {
        const uint64_t* found = map.find(key);
        REQUIRE(found);
        CHECK(*found == value);
    }
    size_t seen = 0;
    map.for_each([&](uint64_t key, uint64_t value) {
        ++seen;
        CHECK(model.at(key) == value);
    });
    CHECK(seen == model.size());
}
