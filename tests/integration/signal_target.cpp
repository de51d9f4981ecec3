// A job for the exit-signal tests (signal_test.sh): it launches kernels over two
// allocations until a signal stops it (or 30 seconds pass), and prints
// "launching" once it is under way. Usage: signal_target none|before|after
//   none    SIGINT and SIGTERM keep their default action;
//   before  its own handler for both, set before the driver is loaded;
//   after   the same, set once the driver is loaded.
// Its handler only notes the signal; the loop then ends, says "own handler ran
// for signal N" and dies of that signal the way a careful program does: the
// default action put back, the signal raised.
#include "robustness_support.h"

#include <cuda.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>
#include <vector>

namespace {

volatile sig_atomic_t g_caught = 0;

void note_signal(int sig) { g_caught = sig; }

void set_action(void (*handler)(int)) {
    struct sigaction action{};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &action, nullptr);
}

} // namespace

int main(int argc, char** argv) {
    const std::string_view mode = argc > 1 ? argv[1] : "none";
    // A shell starts a background job with SIGINT ignored: the job chooses for itself.
    set_action(mode == "before" ? &note_signal : SIG_DFL);
    if (cuInit(0) != CUDA_SUCCESS) return 2;
    if (mode == "after") set_action(&note_signal);

    std::vector<CUdeviceptr> memory(2);
    for (CUdeviceptr& block : memory)
        if (cuMemAlloc(&block, 1 << 20) != CUDA_SUCCESS) return 2;
    CUfunction kernel = uvmp_integration::make_pointer_kernel("signal_kernel", 2);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (int launches = 0; !g_caught && std::chrono::steady_clock::now() < deadline; ++launches) {
        if (uvmp_integration::launch_over(kernel, 2, memory) != CUDA_SUCCESS) return 2;
        if (launches == 200) {
            std::puts("launching");
            std::fflush(stdout);
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!g_caught) return 3;
    std::printf("own handler ran for signal %d\n", static_cast<int>(g_caught));
    std::fflush(stdout);
    signal(g_caught, SIG_DFL);
    raise(g_caught);
    return 4;
}
