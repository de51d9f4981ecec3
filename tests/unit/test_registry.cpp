#include "core/registry/access_inference.h"
#include "core/accounting/device_budget.h"
#include "core/registry/registry.h"

#include <catch2/catch.hpp>

#include <iterator>
#include <map>
#include <optional>
#include <thread>

#include <cstring>

TEST_CASE("registry finds the allocation containing an address") {
    uvmp::Registry r;
    const uint32_t a = r.add(0x1000, 0x100, 0, nullptr);
    const uint32_t b = r.add(0x2000, 0x1000, 0, nullptr);
    CHECK(a != b);
    CHECK(r.find(0x1000)->alloc_id == a);
    CHECK(r.find(0x10ff)->offset == 0xff);
    CHECK_FALSE(r.find(0x1100));
    CHECK_FALSE(r.find(0xfff));
    CHECK(r.find(0x2fff)->alloc_id == b);
    CHECK_FALSE(r.find(0x3000));
    CHECK(r.remove(0x1000)->id == a);
    CHECK_FALSE(r.find(0x1000));
    CHECK_FALSE(r.remove(0x1000));
    CHECK(r.size() == 1);
}

TEST_CASE("parameter words that point into allocations become access hits") {
    uvmp::Registry r;
    const uint32_t a = r.add(0x10000, 0x1000, 0, nullptr);
    const uint32_t b = r.add(0x20000, 0x1000, 0, nullptr);

    // (ptr, int, 48-byte struct with pointers at words 1 and 4)
    uint64_t p0 = 0x10010;
    int n = 7;
    unsigned char s[48] = {};
    uint64_t w1 = 0x20008, w4 = 0x10000, junk = 0x99999999;
    std::memcpy(s + 8, &w1, 8);
    std::memcpy(s + 32, &w4, 8);
    std::memcpy(s + 16, &junk, 8);
    void* params[] = {&p0, &n, s};
    uvmp::KernelInfo info;
    info.params = {{0, 8}, {8, 4}, {16, 48}};

    std::vector<uvmp::AccessHit> hits;
    uvmp::scan_kernel_params(info, params, r, hits);
    REQUIRE(hits.size() == 3);
    CHECK(hits[0].alloc_id == a);
    CHECK(hits[0].offset == 0x10);
    CHECK(hits[1].alloc_id == b);
    CHECK(hits[2].alloc_id == a);

    hits.clear();
    uvmp::scan_param_buffer(s, sizeof s, r, hits);
    CHECK(hits.size() == 2);
}

TEST_CASE("a parameter block with more candidate words than one look-up batch keeps every hit in order") {
    uvmp::Registry r;
    const uint32_t a = r.add(0x10000, 0x10000, 0, nullptr);
    const uint32_t b = r.add(0x40000, 0x1000, 0, nullptr);
    // 200 words inside the bounds of the two allocations: every third one misses
    // (between them), the others alternate between the two.
    std::vector<uint64_t> block(200);
    std::vector<std::pair<uint32_t, uint64_t>> expected;
    for (size_t i = 0; i < block.size(); ++i) {
        if (i % 3 == 2) {
            block[i] = 0x30000 + i;
        } else if (i % 2 == 0) {
            block[i] = 0x10000 + 8 * i;
            expected.emplace_back(a, 8 * i);
        } else {
            block[i] = 0x40000 + i;
            expected.emplace_back(b, i);
        }
    }
    std::vector<uvmp::AccessHit> hits;
    uvmp::scan_param_buffer(block.data(), block.size() * sizeof(uint64_t), r, hits);
    REQUIRE(hits.size() == expected.size());
    for (size_t i = 0; i < hits.size(); ++i) {
        CHECK(hits[i].alloc_id == expected[i].first);
        CHECK(hits[i].offset == expected[i].second);
    }
    // The same words one at a time.
    std::vector<uvmp::AccessHit> one_by_one;
    for (uint64_t word : block)
        if (auto hit = r.find(word)) one_by_one.push_back(*hit);
    CHECK(one_by_one.size() == hits.size());
}

TEST_CASE("kernel table describes each function once") {
    int calls = 0;
    uvmp::KernelTable t([&](const void*, uvmp::KernelInfo& info) {
        ++calls;
        info.name = "k";
        info.params = {{0, 8}};
    });
    int f1 = 0, f2 = 0;
    bool first = false;
    const auto& i1 = t.lookup(&f1, &first);
    CHECK(first);
    t.lookup(&f1, &first);
    CHECK_FALSE(first);
    const auto& i2 = t.lookup(&f2);
    CHECK(calls == 2);
    CHECK(i1.id != i2.id);
}

TEST_CASE("kernel table describes every handle anew once code is unloaded") {
    // What the driver would say of each handle now: a handle comes back as
    // another kernel once its module is gone.
    std::map<const void*, uvmp::KernelInfo> driver;
    int calls = 0;
    uvmp::KernelTable t([&](const void* handle, uvmp::KernelInfo& info) {
        ++calls;
        info = driver[handle];
    });
    int f1 = 0, f2 = 0;
    driver[&f1] = {0, "three", {{0, 8}, {8, 8}, {16, 8}}, true};
    driver[&f2] = {0, "kept", {{0, 8}}, true};
    const auto& three = t.lookup(&f1);
    const auto& kept = t.lookup(&f2);
    CHECK(three.params.size() == 3);

    t.forget_handles();
    driver[&f1] = {0, "one", {{0, 8}}, true};
    bool first = false;
    const auto& one = t.lookup(&f1, &first);
    CHECK(first);
    CHECK(one.name == "one");
    CHECK(one.params.size() == 1);
    CHECK(one.id != three.id);
    CHECK(one.id != kept.id);
    // A kernel described again as it was keeps its id and is no first sight.
    const auto& kept_again = t.lookup(&f2, &first);
    CHECK_FALSE(first);
    CHECK(kept_again.id == kept.id);
    CHECK(calls == 4);
    // What was handed out before stays readable.
    CHECK(three.name == "three");
    CHECK(three.params.size() == 3);
}

TEST_CASE("kernel table's generation changes when descriptions may stop holding, and no two tables share one") {
    auto describe = [](const void*, uvmp::KernelInfo& info) { info.layout_known = true; };
    uvmp::KernelTable a(describe), b(describe);
    CHECK(a.generation() != 0);
    CHECK(a.generation() != b.generation());
    int f = 0;
    const uint64_t before = a.generation();
    a.lookup(&f);
    CHECK(a.generation() == before); // describing a handle changes nothing handed out
    a.forget_handles();
    const uint64_t forgotten = a.generation();
    CHECK(forgotten != before);
    a.clear();
    CHECK(a.generation() != forgotten);
    CHECK(a.generation() != b.generation());
}

TEST_CASE("the physical guard refuses past free-at-start less the reserve") {
    uvmp::Config c;
    c.reserve = 1ull << 30;
    uvmp::DeviceBudget b;
    b.configure(c, 10ull << 30, 16ull << 30);
    CHECK(b.guard_limit() == 9ull << 30);
    CHECK(b.budget() == 9ull << 30);
    CHECK(b.try_reserve(8ull << 30));
    CHECK_FALSE(b.try_reserve(2ull << 30));
    CHECK(b.reserved() == 8ull << 30);
    b.release(8ull << 30);
    CHECK(b.try_reserve(2ull << 30));
    CHECK(b.refusal_message(1, 2ull << 20).find("UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION") != std::string::npos);

    c.allow_physical_oversubscription = true;
    c.budget = uvmp::SizeOrPercent{true, 0, 50.0};
    uvmp::DeviceBudget open;
    open.configure(c, 10ull << 30, 16ull << 30);
    CHECK(open.budget() == 8ull << 30);
    CHECK(open.try_reserve(100ull << 30));
    open.add_live(100ull << 30);
    uint64_t f = 0, t = 0;
    open.report(0, f, t);
    CHECK(t == 8ull << 30);
    CHECK(f == 0);
}

TEST_CASE("a budget counts itself over while its live converted memory exceeds it") {
    uvmp::Config c;
    c.reserve = 0;
    c.budget = uvmp::SizeOrPercent{false, 4ull << 30, 0};
    std::atomic<uint32_t> over{0};
    uvmp::DeviceBudget first, second;
    first.count_over_budget_in(&over);
    second.count_over_budget_in(&over);
    first.configure(c, 10ull << 30, 16ull << 30);
    second.configure(c, 10ull << 30, 16ull << 30);
    REQUIRE(first.budget() == 4ull << 30);
    first.add_live(4ull << 30); // at the budget, not over it
    CHECK(over == 0);
    first.add_live(1);
    CHECK(over == 1);
    second.add_live(5ull << 30);
    CHECK(over == 2);
    first.add_live(1ull << 30); // further over: counted once
    CHECK(over == 2);
    CHECK_FALSE(second.try_reserve(11ull << 30)); // refused by the guard: the budget's count unchanged
    CHECK(over == 2);
    first.remove_live((1ull << 30) + 1);
    CHECK(over == 1);
    CHECK_FALSE(first.over_budget());
    second.remove_live(5ull << 30);
    CHECK(over == 0);
}

TEST_CASE("the physical guard counts slab bytes and the budget counts live blocks") {
    uvmp::Config c;
    c.reserve = 1ull << 30;
    c.budget = uvmp::SizeOrPercent{false, 1ull << 30, 0};
    std::atomic<uint32_t> over{0};
    uvmp::DeviceBudget b;
    b.count_over_budget_in(&over);
    b.configure(c, 3ull << 30, 16ull << 30);
    REQUIRE(b.guard_limit() == 2ull << 30);

    // A slab reserved, nothing of it handed out yet: the guard sees it, the budget does not.
    CHECK(b.try_reserve(2ull << 30));
    CHECK(b.reserved() == 2ull << 30);
    CHECK(b.converted_live() == 0);
    CHECK_FALSE(b.over_budget());
    uint64_t f = 0, t = 0;
    b.report(0, f, t);
    CHECK(t == 1ull << 30);
    CHECK(f == 1ull << 30);

    // Blocks carved from it count against the budget alone.
    b.add_live(768ull << 20);
    b.report(128ull << 20, f, t);
    CHECK(f == 128ull << 20);
    CHECK(b.reserved() == 2ull << 30);
    b.add_live(512ull << 20);
    CHECK(b.over_budget());
    CHECK(over == 1);

    // The guard refuses by slab bytes, however few bytes are live.
    CHECK_FALSE(b.try_reserve(2ull << 20));
    b.remove_live(1280ull << 20);
    CHECK(over == 0);
    CHECK_FALSE(b.try_reserve(2ull << 20));
    b.release(2ull << 30);
    CHECK(b.try_reserve(2ull << 20));
    const std::string why = b.refusal_message(4096, 512ull << 20);
    CHECK(why.find("allocation of 4.0 KiB") != std::string::npos);
    CHECK(why.find("UVMP_RESERVE") != std::string::npos);
}

TEST_CASE("an allocation is homed on the host in place only while it is the same allocation") {
    uvmp::Registry r;
    const uint32_t id = r.add(0x1000, 0x100, 0, nullptr);
    const uint32_t host_slab_block = r.add(0x4000, 0x100, 0, nullptr, false, true);
    CHECK_FALSE(r.home_in_place(0x1000, id + 7, true)); // another allocation's id
    CHECK_FALSE(r.home_in_place(0x1000, id, false));    // on the GPU already
    CHECK_FALSE(r.home_in_place(0x4000, host_slab_block, true));
    CHECK_FALSE(r.home_in_place(0x4000, host_slab_block, false)); // a host slab's block stays there
    const auto moved = r.home_in_place(0x1000, id, true);
    REQUIRE(moved);
    CHECK(moved->host_homed);
    CHECK(moved->homed_in_place);
    CHECK(r.find_base(0x1000)->homed_in_place);
    CHECK_FALSE(r.home_in_place(0x1000, id, true));
    const auto back = r.home_in_place(0x1000, id, false);
    REQUIRE(back);
    CHECK_FALSE(back->host_homed);
    CHECK_FALSE(back->homed_in_place);
    r.remove(0x1000);
    CHECK_FALSE(r.home_in_place(0x1000, id, true));
}

TEST_CASE("look-ups a thread answers from what it found lately follow every change of the map") {
    uvmp::Registry r;
    const uint32_t first = r.add(0x1000, 0x100, 0, nullptr);
    std::vector<uvmp::AccessHit> hits;
    const uint64_t words[] = {0x1010, 0x10f0};
    for (int round = 0; round < 2; ++round) { // the second round is answered from the thread's recent hits
        hits.clear();
        r.find_all(words, hits);
        REQUIRE(hits.size() == 2);
        CHECK(hits[0].alloc_id == first);
        CHECK(hits[1].offset == 0xf0);
    }
    r.remove(0x1000);
    hits.clear();
    r.find_all(words, hits);
    CHECK(hits.empty());
    const uint32_t again = r.add(0x1000, 0x20, 0, nullptr); // the same base, smaller
    hits.clear();
    r.find_all(words, hits);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].alloc_id == again);
    // Another registry at the same addresses is never answered from this one's hits.
    uvmp::Registry other;
    other.add(0x2000, 0x100, 0, nullptr);
    other.add(0x3000, 0x100, 0, nullptr);
    const uint32_t its_own = other.add(0x1000, 0x100, 0, nullptr);
    REQUIRE(its_own != again);
    hits.clear();
    other.find_all(words, hits);
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].alloc_id == its_own);
    // Seen from another thread, the map is the same.
    std::vector<uvmp::AccessHit> elsewhere;
    std::thread([&] { r.find_all(words, elsewhere); }).join();
    REQUIRE(elsewhere.size() == 1);
    CHECK(elsewhere[0].alloc_id == again);
}

TEST_CASE("the registry's look-ups agree with a plain interval search through adds and removes") {
    // Allocations from a few bytes to several 2 MiB granules, at granule edges
    // and inside granules, added and removed at random: every probe answers as a
    // search of what is live would.
    uvmp::Registry r;
    std::map<uint64_t, std::pair<uint64_t, uint32_t>> live; // base -> (end, id)
    uint64_t seed = 12345;
    const auto next = [&seed] {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return seed >> 33;
    };
    constexpr uint64_t kGranule = 2u << 20;
    const uint64_t sizes[] = {1, 256, 4096, kGranule - 1, kGranule, kGranule + 1, 3 * kGranule + 512};
    uint64_t cursor = 0x7f0000000000;
    const auto expected = [&live](uint64_t address) -> std::optional<uvmp::AccessHit> {
        auto it = live.upper_bound(address);
        if (it == live.begin()) return std::nullopt;
        --it;
        if (address >= it->second.first) return std::nullopt;
        return uvmp::AccessHit{it->second.second, address - it->first};
    };
    for (int round = 0; round < 3000; ++round) {
        if (live.empty() || next() % 3 != 0) {
            // Placed after the last, sometimes on a granule's edge, sometimes just before one.
            const uint64_t size = sizes[next() % std::size(sizes)];
            const uint64_t gap = next() % 4 == 0 ? (kGranule - cursor % kGranule) % kGranule : next() % 512;
            const uint64_t base = cursor + gap;
            live[base] = {base + size, r.add(base, size, 0, nullptr)};
            cursor = base + size;
        } else {
            auto it = live.begin();
            std::advance(it, static_cast<long>(next() % live.size()));
            REQUIRE(r.remove(it->first)->id == it->second.second);
            live.erase(it);
        }
        for (int probe = 0; probe < 8; ++probe) {
            const uint64_t address = 0x7f0000000000 - 16 + next() % (cursor - 0x7f0000000000 + 32);
            const std::optional<uvmp::AccessHit> want = expected(address);
            const std::optional<uvmp::AccessHit> got = r.find(address);
            REQUIRE(got.has_value() == want.has_value());
            if (want) {
                CHECK(got->alloc_id == want->alloc_id);
                CHECK(got->offset == want->offset);
            }
        }
    }
    CHECK(r.size() == live.size());
    r.clear();
    CHECK_FALSE(r.find(cursor - 1));
}
