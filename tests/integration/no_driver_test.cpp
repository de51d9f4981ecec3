// A program on a machine without the NVIDIA driver reaching the preloaded
// library's hooks (found by name, as a program that resolves the driver lazily
// would): each call must fail, as with no driver, and the process go on. Says
// it is skipped, and exits 77, where libcuda.so.1 can be opened.
#include <cuda.h>
#include <dlfcn.h>

#include <cstdio>

int main() {
    if (void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
        dlclose(driver);
        std::printf("skipped: libcuda.so.1 is installed here\n");
        return 77;
    }
    auto mem_alloc = reinterpret_cast<decltype(&cuMemAlloc_v2)>(dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
    auto mem_get_info = reinterpret_cast<decltype(&cuMemGetInfo_v2)>(dlsym(RTLD_DEFAULT, "cuMemGetInfo_v2"));
    if (!mem_alloc || !mem_get_info) {
        std::fprintf(stderr, "no_driver_test: the preloaded library's hooks are not found\n");
        return 1;
    }
    int answered = 0;
    CUdeviceptr ptr = 0;
    size_t free_bytes = 0, total_bytes = 0;
    answered += mem_alloc(&ptr, 1 << 20) != CUDA_SUCCESS;
    answered += mem_alloc(&ptr, 1 << 20) != CUDA_SUCCESS;
    answered += mem_get_info(&free_bytes, &total_bytes) != CUDA_SUCCESS;
    std::printf("%d calls answered without a driver\n", answered);
    return answered == 3 ? 0 : 1;
}
