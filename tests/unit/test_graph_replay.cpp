#include "core/graph/graph_replay.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace uvmp;

namespace {

constexpr uint64_t kBase = 0x7f00'0000'0000;
constexpr uint64_t kMiB = 1ull << 20;

GraphStep kernel_with_words(const void* node, std::vector<uint64_t> words) {
    GraphStep step;
    step.kind = GraphStep::Kind::Kernel;
    step.node = node;
    step.words = std::move(words);
    return step;
}

GraphStep copy_of(const void* node, std::vector<DeviceRange> ranges) {
    GraphStep step;
    step.kind = GraphStep::Kind::Memcpy;
    step.node = node;
    step.ranges = std::move(ranges);
    return step;
}

std::vector<trace::Access> accesses_of(const GraphStep& step, const Registry& registry) {
    std::vector<trace::Access> out;
    append_step_accesses(step, registry, out);
    return out;
}

bool same(const std::vector<trace::Access>& got, const std::vector<trace::Access>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i)
        if (got[i].alloc_id != want[i].alloc_id || got[i].offset != want[i].offset || got[i].length != want[i].length)
            return false;
    return true;
}

const char kNodeA = 'a', kNodeB = 'b', kNodeC = 'c';
const char kExec = 'x', kOtherExec = 'y';

} // namespace

TEST_CASE("graph steps: a kernel's words are looked up at each launch, as a direct launch's", "[graph]") {
    Registry registry;
    const uint32_t a = registry.add(kBase, 4 * kMiB, 0, nullptr);
    const uint32_t b = registry.add(kBase + 8 * kMiB, 4 * kMiB, 0, nullptr);
    // A pointer into A, a count, and a pointer into B.
    const GraphStep step = kernel_with_words(&kNodeA, {kBase + 64, 1024, kBase + 8 * kMiB});
    CHECK(same(accesses_of(step, registry), {{a, 64, 0}, {b, 0, 0}}));

    // B freed and another allocation made at its address: the same words name it.
    registry.remove(kBase + 8 * kMiB);
    const uint32_t c = registry.add(kBase + 8 * kMiB, 1 * kMiB, 0, nullptr);
    CHECK(same(accesses_of(step, registry), {{a, 64, 0}, {c, 0, 0}}));
    registry.remove(kBase);
    CHECK(same(accesses_of(step, registry), {{c, 0, 0}}));
}

TEST_CASE("graph steps: copies and sets touch their ranges, cut to the allocation", "[graph]") {
    Registry registry;
    const uint32_t a = registry.add(kBase, 4 * kMiB, 0, nullptr);
    const uint32_t b = registry.add(kBase + 8 * kMiB, 1 * kMiB, 0, nullptr);
    // Source inside A, destination past the end of B, and a side in memory of no allocation.
    const GraphStep copy = copy_of(&kNodeA, {{kBase + 4096, 8192}, {kBase + 8 * kMiB + 4096, 2 * kMiB}, {0x1000, 64}});
    CHECK(same(accesses_of(copy, registry), {{a, 4096, 8192}, {b, 4096, kMiB - 4096}}));
    GraphStep set = copy;
    set.kind = GraphStep::Kind::Memset;
    set.ranges = {set_range(kBase + 128, 0, 4, 256, 1), {kBase, 0}};
    CHECK(same(accesses_of(set, registry), {{a, 128, 1024}}));
}

TEST_CASE("graph steps: the extent of 3-D copies and 2-D sets", "[graph]") {
    // A 1-D copy (the runtime's cudaMemcpyAsync): its width, from its start.
    DeviceRange flat = copy_range(1000, 24, 0, 0, 0, 0, 4096, 1, 1);
    CHECK((flat.address == 1024 && flat.bytes == 4096));
    // Rows 512 bytes apart, 64 bytes of each of 4 rows, starting at row 2 of plane 1
    // (planes 8 rows deep): from the first byte of the first row to the last of the last.
    DeviceRange box = copy_range(0, 16, 2, 1, 512, 8, 64, 4, 1);
    CHECK(box.address == 16 + (2 + 8) * 512);
    CHECK(box.bytes == 3 * 512 + 64);
    DeviceRange planes = copy_range(0, 0, 0, 0, 512, 8, 64, 4, 3);
    CHECK(planes.bytes == 2 * 8 * 512 + 3 * 512 + 64);
    CHECK(copy_range(0, 0, 0, 0, 512, 8, 0, 4, 3).bytes == 0);
    CHECK(set_range(4096, 1024, 2, 100, 3).bytes == 2 * 1024 + 200);
    CHECK(set_range(4096, 1024, 2, 100, 0).bytes == 0);
}

TEST_CASE("graph table: an executable graph is learnt, found, changed and forgotten", "[graph]") {
    GraphTable table;
    CHECK(table.find(&kExec).id == 0);
    CHECK(table.find(&kExec).replay == nullptr);

    GraphReplay replay;
    replay.steps = {kernel_with_words(&kNodeA, {1}), copy_of(&kNodeB, {{2, 3}}), kernel_with_words(&kNodeC, {4})};
    replay.nodes_skipped = 2;
    table.learn(&kExec, replay);
    table.learn(&kOtherExec, std::nullopt); // one the walk could not read
    const GraphTable::Entry found = table.find(&kExec);
    REQUIRE(found.replay);
    CHECK(found.id == 1);
    CHECK(found.replay->steps.size() == 3);
    CHECK(found.replay->nodes_skipped == 2);
    CHECK(table.find(&kOtherExec).id == 2);
    CHECK(table.find(&kOtherExec).replay == nullptr);

    // A node's steps replaced in place; a launch still holding the old replay keeps it.
    REQUIRE(table.replace_node(&kExec, &kNodeB, {kernel_with_words(&kNodeB, {5}), kernel_with_words(&kNodeB, {6})}));
    const GraphTable::Entry changed = table.find(&kExec);
    REQUIRE(changed.replay->steps.size() == 4);
    CHECK(changed.replay->steps[0].words == std::vector<uint64_t>{1});
    CHECK(changed.replay->steps[1].words == std::vector<uint64_t>{5});
    CHECK(changed.replay->steps[2].words == std::vector<uint64_t>{6});
    CHECK(changed.replay->steps[3].words == std::vector<uint64_t>{4});
    CHECK(changed.replay->nodes_skipped == 2);
    CHECK(found.replay->steps[1].kind == GraphStep::Kind::Memcpy);
    CHECK(changed.id == 1);

    // A node none of the steps came from, or a graph not known: nothing changes.
    const char elsewhere = 'e';
    CHECK_FALSE(table.replace_node(&kExec, &elsewhere, {}));
    CHECK_FALSE(table.replace_node(&kOtherExec, &kNodeA, {}));
    CHECK(table.find(&kExec).replay->steps.size() == 4);

    // Learnt anew (an update) keeps the id; marked unknown keeps it too.
    table.learn(&kExec, GraphReplay{});
    CHECK(table.find(&kExec).id == 1);
    CHECK(table.find(&kExec).replay->steps.empty());
    table.mark_unknown(&kExec);
    CHECK(table.find(&kExec).id == 1);
    CHECK(table.find(&kExec).replay == nullptr);

    table.forget(&kExec);
    CHECK(table.find(&kExec).id == 0);
    CHECK(table.size() == 1);
    table.clear();
    CHECK(table.size() == 0);
    table.learn(&kExec, GraphReplay{});
    CHECK(table.find(&kExec).id == 1);
}
