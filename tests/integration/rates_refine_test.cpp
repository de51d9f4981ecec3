// The link rates refined from the library's own moves, on the fake driver: four
// buffers of 48 MiB, each filled by a kernel in turn, a few rounds over them,
// under a budget that holds two. Every round evicts and fetches whole buffers;
// the evictions are large enough to time. Run preloaded with FAKECUDA_EVENT_MS set (the fake
// then times every span of a stream at that many milliseconds, the probe's as
// well), the library's info log says the rates were refined, and the exit
// summary names them so.
// Linked against libcuda.so.1 (the fake), so that the preloaded library's hooks take the calls.
#include "check_list.h"
#include "fakecuda.h"

#include <chrono>
#include <cstdint>
#include <thread>

using namespace uvmp_integration;

int main() {
    constexpr size_t kBuffer = 48u << 20;
    constexpr int kBuffers = 4;
    constexpr int kRounds = 6;
    CheckList checks;
    if (cuInit(0) != CUDA_SUCCESS) {
        checks.expect(false, "cuInit");
        return checks.exit_status();
    }
    const size_t offsets[] = {0};
    const size_t sizes[] = {8};
    CUfunction fill = fakecuda_make_function("fill", 1, offsets, sizes);
    CUdeviceptr buffers[kBuffers] = {};
    for (CUdeviceptr& b : buffers) checks.expect(cuMemAlloc_v2(&b, kBuffer) == CUDA_SUCCESS, "cuMemAlloc");
    for (int round = 0; round < kRounds; ++round) {
        for (CUdeviceptr& b : buffers) {
            void* params[] = {&b};
            checks.expect(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr) == CUDA_SUCCESS,
                          "cuLaunchKernel");
            // Time for the worker to plan and the mover to issue, as a kernel's run would give.
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        checks.expect(cuCtxSynchronize() == CUDA_SUCCESS, "cuCtxSynchronize");
    }
    for (CUdeviceptr b : buffers) checks.expect(cuMemFree_v2(b) == CUDA_SUCCESS, "cuMemFree");
    return checks.exit_status();
}
