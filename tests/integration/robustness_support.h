// What the process, stress and fault scenarios share: a kernel that takes
// pointers, launching it over a set of allocations, and the library's counters.
#pragma once

#include "check_list.h"
#include "library_api.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace uvmp_integration {

// A fake kernel of `pointers` pointer parameters.
CUfunction make_pointer_kernel(const char* name, unsigned pointers);

// Launches `kernel` (of `pointers` parameters) with the first of `memory`
// (repeated when there are fewer), through cuLaunchKernel.
CUresult launch_over(CUfunction kernel, unsigned pointers, const std::vector<CUdeviceptr>& memory,
                     CUstream stream = nullptr);

// The library's counters; zeroes (and active 0) without the library.
uvmp_stats library_stats(const LibraryApi& api);

// The library's counters once its worker, which plans behind the application,
// has handed the policy or counted as unplanned every launch that had an access
// (for a program that captures no launches and launches no graphs); the counters
// as they are after 30 seconds without.
uvmp_stats settled_stats(const LibraryApi& api);

// Where the application's own call failed, it sees the driver's code.
void expect_result(CheckList& checks, const std::string& what, CUresult got, CUresult want);

// Threads of this process, from /proc.
int thread_count();

// argv[index] as a whole number of at least `least`, `fallback` where it is missing or not one.
uint64_t number_argument(int argc, char** argv, int index, uint64_t fallback, uint64_t least = 1);

// Notes the launch hook's own time a launch since `before` (uvmp_stats hook_ns
// over hooks_timed, which leaves the driver's time out) and returns the counters,
// settled where launches are planned.
uvmp_stats note_hook_figure(CheckList& checks, const LibraryApi& api, const uvmp_stats& before);

}  // namespace uvmp_integration
