// A module unloaded and another loaded after it may get its function's handle
// back for a kernel of other parameters (the fake hands a retired kernel's handle
// out again, as a real driver may reuse a freed function's address): the library
// must read the new kernel's parameters by its own description, never by the
// unloaded one's. Linked against libcuda.so.1 (the fake), so that the preloaded
// library's exported hooks take the calls. Run with UVMP_TRACE_OUT set: the trace
// must name the second launch's kernel `one` and give it one access.
#include "check_list.h"
#include "fakecuda.h"

#include <cstdint>

using namespace uvmp_integration;

namespace {

constexpr char kThree[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                          ".visible .entry three(.param .u64 a, .param .u64 b, .param .u64 c)\n{ ret; }\n";
constexpr char kOne[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
                        ".visible .entry one(.param .u64 a)\n{ ret; }\n";

CUfunction load(const char* ptx, const char* name, CUmodule& module, CheckList& checks) {
    CUfunction function = nullptr;
    checks.expect(cuModuleLoadData(&module, ptx) == CUDA_SUCCESS, std::string("cuModuleLoadData of ") + name);
    checks.expect(cuModuleGetFunction(&function, module, name) == CUDA_SUCCESS,
                  std::string("cuModuleGetFunction ") + name);
    return function;
}

}  // namespace

int main() {
    CheckList checks;
    if (cuInit(0) != CUDA_SUCCESS) {
        checks.expect(false, "cuInit");
        return checks.exit_status();
    }
    CUdeviceptr x = 0, y = 0;
    checks.expect(cuMemAlloc_v2(&x, 1 << 20) == CUDA_SUCCESS, "cuMemAlloc x");
    checks.expect(cuMemAlloc_v2(&y, 1 << 20) == CUDA_SUCCESS, "cuMemAlloc y");

    CUmodule first = nullptr, second = nullptr;
    const CUfunction three = load(kThree, "three", first, checks);
    void* three_args[] = {&x, &y, &y};
    checks.expect(cuLaunchKernel(three, 1, 1, 1, 1, 1, 1, 0, nullptr, three_args, nullptr) == CUDA_SUCCESS,
                  "launch three(x, y, y)");
    checks.expect(cuModuleUnload(first) == CUDA_SUCCESS, "cuModuleUnload");

    const CUfunction one = load(kOne, "one", second, checks);
    checks.expect(one == three, "the new kernel has the unloaded one's handle");
    // Words past the kernel's one parameter point at y: read by the unloaded
    // kernel's description, the launch would touch y as well.
    void* one_args[] = {&x, &y, &y};
    checks.expect(cuLaunchKernel(one, 1, 1, 1, 1, 1, 1, 0, nullptr, one_args, nullptr) == CUDA_SUCCESS,
                  "launch one(x)");
    checks.expect(cuCtxSynchronize() == CUDA_SUCCESS, "cuCtxSynchronize");
    checks.expect(cuModuleUnload(second) == CUDA_SUCCESS, "cuModuleUnload");
    checks.expect(cuMemFree_v2(x) == CUDA_SUCCESS && cuMemFree_v2(y) == CUDA_SUCCESS, "cuMemFree");
    return checks.exit_status();
}
