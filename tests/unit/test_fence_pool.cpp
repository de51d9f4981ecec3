#include "driver/pool/fence_pool.h"

#include <catch2/catch.hpp>

// A driver table of two calls: the current context is whatever the test sets,
// and each event made is a new handle noted with the context it was made in.
using namespace uvmp::driver;

namespace {

int g_contexts[2];
CUcontext g_current = nullptr;
struct MadeEvent {
    CUcontext context;
};
MadeEvent g_events[8];
int g_made = 0;

CUresult get_current(CUcontext* context) {
    *context = g_current;
    return CUDA_SUCCESS;
}

CUresult create_event(CUevent* event, unsigned int) {
    if (g_made == 8) return CUDA_ERROR_OUT_OF_MEMORY;
    g_events[g_made].context = g_current;
    *event = reinterpret_cast<CUevent>(&g_events[g_made++]);
    return CUDA_SUCCESS;
}

CUcontext context(int i) { return reinterpret_cast<CUcontext>(&g_contexts[i]); }
CUcontext made_in(CUevent event) { return reinterpret_cast<const MadeEvent*>(event)->context; }

DriverTable two_call_table() {
    g_made = 0;
    DriverTable table;
    table.cuCtxGetCurrent = get_current;
    table.cuEventCreate = create_event;
    return table;
}

} // namespace

TEST_CASE("fence pool: an event goes back to its own context only", "[fences]") {
    const DriverTable table = two_call_table();
    FencePool fences;
    g_current = context(0);
    CUevent first = fences.acquire(table);
    REQUIRE(first);
    fences.release(first);
    // Device 1's launch must not get device 0's event: the driver would refuse to record it.
    g_current = context(1);
    CUevent second = fences.acquire(table);
    REQUIRE(second);
    CHECK(second != first);
    CHECK(made_in(second) == context(1));
    fences.release(second);
    g_current = context(0);
    CHECK(fences.acquire(table) == first);
    g_current = context(1);
    CHECK(fences.acquire(table) == second);
    CHECK(g_made == 2);
}

TEST_CASE("fence pool: no context, no fence", "[fences]") {
    const DriverTable table = two_call_table();
    FencePool fences;
    g_current = nullptr;
    CHECK(fences.acquire(table) == nullptr);
    CHECK(g_made == 0);
}
