#include "robustness_support.h"

#include "fakecuda.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace uvmp_integration {

CUfunction make_pointer_kernel(const char* name, unsigned pointers) {
    std::vector<size_t> offsets(pointers), sizes(pointers, sizeof(CUdeviceptr));
    for (unsigned i = 0; i < pointers; ++i) offsets[i] = i * sizeof(CUdeviceptr);
    return fakecuda_make_function(name, pointers, offsets.data(), sizes.data());
}

CUresult launch_over(CUfunction kernel, unsigned pointers, const std::vector<CUdeviceptr>& memory,
                     CUstream stream) {
    if (memory.empty()) return CUDA_ERROR_INVALID_VALUE;
    std::vector<CUdeviceptr> words(pointers);
    std::vector<void*> params(pointers);
    for (unsigned i = 0; i < pointers; ++i) {
        words[i] = memory[i % memory.size()];
        params[i] = &words[i];
    }
    return cuLaunchKernel(kernel, 1, 1, 1, 32, 1, 1, 0, stream, params.data(), nullptr);
}

uvmp_stats library_stats(const LibraryApi& api) {
    uvmp_stats none{};
    return api.stats().value_or(none);
}

uvmp_stats settled_stats(const LibraryApi& api) {
    uvmp_stats s = library_stats(api);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (s.launches_planned + s.launches_unplanned < s.launches_with_access &&
           std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        s = library_stats(api);
    }
    return s;
}

void expect_result(CheckList& checks, const std::string& what, CUresult got, CUresult want) {
    checks.expect_eq(what + " returns the driver's result", static_cast<std::uint64_t>(got),
                     static_cast<std::uint64_t>(want));
}

int thread_count() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
    return -1;
}

uint64_t number_argument(int argc, char** argv, int index, uint64_t fallback, uint64_t least) {
    if (argc <= index) return fallback;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(argv[index], &end, 10);
    const bool whole = end != argv[index] && *end == '\0' && argv[index][0] != '-';
    return whole && value >= least ? value : fallback;
}

uvmp_stats note_hook_figure(CheckList& checks, const LibraryApi& api, const uvmp_stats& before) {
    const uvmp_stats s = policy_under_budget() ? settled_stats(api) : library_stats(api);
    const uint64_t timed = s.hooks_timed - before.hooks_timed;
    char line[160];
    std::snprintf(line, sizeof line, "launch hook: %.0f ns of the library's own work a launch (%llu timed)",
                  timed ? static_cast<double>(s.hook_ns - before.hook_ns) / static_cast<double>(timed) : 0.0,
                  static_cast<unsigned long long>(timed));
    checks.note(line);
    return s;
}

}  // namespace uvmp_integration
