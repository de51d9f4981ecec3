// A program that makes stream-ordered allocations, as PyTorch's cudaMallocAsync
// backend does, with a stand-in for a framework's library loaded before the first
// one, after it, or not at all. Linked against libcuda.so.1, so the preloaded
// library's exported hooks take its calls.
// Usage: framework_notice_test [before|after LIBRARY]
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

namespace {

constexpr int kAllocations = 3;
constexpr size_t kBytes = 1 << 20;

bool load(const char* path) {
    if (dlopen(path, RTLD_NOW | RTLD_GLOBAL)) return true;
    std::fprintf(stderr, "framework_notice_test: cannot load %s: %s\n", path, dlerror());
    return false;
}

bool allocate_and_free(CUstream stream) {
    CUdeviceptr ptr = 0;
    if (cuMemAllocAsync(&ptr, kBytes, stream) != CUDA_SUCCESS) return false;
    return cuMemFreeAsync(ptr, stream) == CUDA_SUCCESS;
}

} // namespace

int main(int argc, char** argv) {
    const bool has_library = argc == 3;
    if (argc != 1 && !(has_library && (!std::strcmp(argv[1], "before") || !std::strcmp(argv[1], "after")))) {
        std::fprintf(stderr, "usage: framework_notice_test [before|after LIBRARY]\n");
        return 2;
    }
    const bool load_before = has_library && !std::strcmp(argv[1], "before");
    if (load_before && !load(argv[2])) return 1;

    CUstream stream = nullptr;
    if (cuInit(0) != CUDA_SUCCESS || cuStreamCreate(&stream, 0) != CUDA_SUCCESS) return 1;
    for (int i = 0; i < kAllocations; ++i) {
        if (!allocate_and_free(stream)) {
            std::fprintf(stderr, "framework_notice_test: stream-ordered allocation %d failed\n", i);
            return 1;
        }
        if (i == 0 && has_library && !load_before && !load(argv[2])) return 1;
    }
    if (cuStreamSynchronize(stream) != CUDA_SUCCESS || cuStreamDestroy(stream) != CUDA_SUCCESS) return 1;
    std::printf("%d stream-ordered allocations made and freed\n", kAllocations);
    return 0;
}
