// Fault injection in the fake driver: chosen calls of named entry points fail
// with a chosen CUresult, so that a test can try every failure path of a
// program, and of the library preloaded into it, without a GPU.
//
// The environment variable FAKECUDA_FAIL holds rules separated by commas, each
// NAME:WHICH:RESULT, read when the fake is loaded:
//   NAME    an entry point as the fake exports it (cuMemAllocManaged, cuEventRecord_ptsz)
//   WHICH   N, the Nth call from then on (1 the first), or * for every call
//   RESULT  the CUresult, by number or by its name in cuda.h (CUDA_ERROR_OUT_OF_MEMORY)
// fakecuda_fail_calls (fakecuda.h) sets a rule from a program while it runs.
// The _ptsz variants the fake answers through its legacy entry point
// (cuEventRecord_ptsz, cuStreamSynchronize_ptsz) follow the legacy name's rule.
#pragma once

#include <cuda.h>

#define FAKECUDA_INJECTED_FAILURE_POINT(name)                                                      \
    do {                                                                                           \
        if (const CUresult fakecuda_injected = ::fakecuda::injected_failure(name);                \
            fakecuda_injected != CUDA_SUCCESS)                                                     \
            return fakecuda_injected;                                                              \
    } while (0)

namespace fakecuda {

// The result a rule makes this call of `name` fail with, or CUDA_SUCCESS when
// the call is to run. Cheap while no rule is set.
CUresult injected_failure(const char* name);

}  // namespace fakecuda
