// Built as libc10_cuda.so: stands for PyTorch's CUDA library, whose presence in a
// process is what makes the library announce a PyTorch setting. It holds nothing.
extern "C" __attribute__((visibility("default"))) int uvmp_framework_library_stub() { return 1; }
