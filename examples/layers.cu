// A small multi-layer perceptron run forward with plain cudaMalloc memory.
//
// It is the reference workload for the preloaded library: every buffer comes from
// cudaMalloc (so the library converts each one), every kernel takes those buffers as
// parameters (so the library sees what each launch touches), and the result is checked
// against a CPU reference in double precision, so a wrong placement or a lost page shows
// up as a failed run rather than as a silently different number.
//
// Usage: layers [--mb N] [--layers L] [--steps S] [--warmup W]
// Exit status: 0 correct, 1 wrong result, 2 bad arguments, 3 a CUDA call failed.

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "uvmprefetch/uvmprefetch.h"

namespace {

constexpr int kExitWrongResult = 1;
constexpr int kExitBadArguments = 2;
constexpr int kExitCudaError = 3;
constexpr double kMaxRelativeError = 1e-4;

void check_cuda(cudaError_t status, const char* call, int line) {
    if (status != cudaSuccess) {
        std::fprintf(stderr, "layers: %s failed at line %d: %s (%s)\n", call, line,
                     cudaGetErrorString(status), cudaGetErrorName(status));
        std::exit(kExitCudaError);
    }
}
#define CUDA_CHECK(call) check_cuda((call), #call, __LINE__)

struct Options {
    long megabytes = 1024;
    int layers = 8;
    int steps = 10;
    int warmup = 2;
};

[[noreturn]] void usage_error(const std::string& message) {
    std::fprintf(stderr,
                 "layers: %s\n"
                 "usage: layers [--mb N] [--layers L] [--steps S] [--warmup W]\n"
                 "  --mb N      total device memory of the model in MiB (default 1024, at least 1)\n"
                 "  --layers L  number of layers (default 8, 1..1024)\n"
                 "  --steps S   forward passes (default 10, more than W)\n"
                 "  --warmup W  first steps left out of the median (default 2)\n",
                 message.c_str());
    std::exit(kExitBadArguments);
}

long parse_positive(const char* flag, const char* text, long max_value) {
    char* end = nullptr;
    errno = 0;
    long value = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 0 || value > max_value) {
        usage_error(std::string("invalid value '") + text + "' for " + flag +
                    ": expected a whole number from 0 to " + std::to_string(max_value));
    }
    return value;
}

Options parse_options(int argc, char** argv) {
    Options options;
    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        if (flag == "-h" || flag == "--help") usage_error("help requested");
        if (i + 1 >= argc) usage_error("missing value after " + flag);
        const char* value = argv[++i];
        if (flag == "--mb") {
            options.megabytes = parse_positive("--mb", value, 1L << 20);
        } else if (flag == "--layers") {
            options.layers = static_cast<int>(parse_positive("--layers", value, 1024));
        } else if (flag == "--steps") {
            options.steps = static_cast<int>(parse_positive("--steps", value, 1000000));
        } else if (flag == "--warmup") {
            options.warmup = static_cast<int>(parse_positive("--warmup", value, 1000000));
        } else {
            usage_error("unknown option " + flag);
        }
    }
    if (options.megabytes < 1) usage_error("--mb must be at least 1");
    if (options.layers < 1) usage_error("--layers must be at least 1");
    if (options.steps <= options.warmup) usage_error("--steps must be larger than --warmup");
    return options;
}

// Counts allocations so that the test can compare them with the library's counters.
int g_cuda_malloc_calls = 0;

template <typename T>
T* device_alloc(size_t count) {
    void* pointer = nullptr;
    CUDA_CHECK(cudaMalloc(&pointer, count * sizeof(T)));
    ++g_cuda_malloc_calls;
    return static_cast<T*>(pointer);
}

// splitmix64: a tiny generator whose stream depends only on its seed, so that the
// weights can be regenerated for the CPU reference instead of being kept in host memory.
struct Random {
    uint64_t state;
    explicit Random(uint64_t seed) : state(seed) {}
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [-1, 1).
    float symmetric() { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-52 - 1.0); }
};

// Weights scaled so that each layer keeps the activations' spread roughly constant:
// tanh stays in its sensitive range through all layers, and a wrong input anywhere
// changes the final output measurably.
void fill_weights(std::vector<float>& weights, std::vector<float>& bias, int layer, int width) {
    Random random(0x5EED0000ull + static_cast<uint64_t>(layer));
    const float scale = std::sqrt(3.0f / static_cast<float>(width));
    for (float& w : weights) w = random.symmetric() * scale;
    for (float& b : bias) b = 0.1f * random.symmetric();
}

void fill_input(std::vector<float>& input, int step) {
    Random random(0x1A9F7000ull + static_cast<uint64_t>(step));
    for (float& x : input) x = random.symmetric();
}

// One warp per output row: consecutive lanes read consecutive columns (coalesced),
// and the fixed shuffle-reduction order keeps the result identical run to run.
constexpr int kWarpsPerBlock = 8;

__global__ void dense_tanh_layer(const float* __restrict__ weights, const float* __restrict__ bias,
                                 const float* __restrict__ input, float* __restrict__ output,
                                 int width) {
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
    if (row >= width) return;
    const float* weight_row = weights + static_cast<size_t>(row) * width;
    float sum = 0.0f;
    for (int column = lane; column < width; column += 32) sum += weight_row[column] * input[column];
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xFFFFFFFFu, sum, offset);
    if (lane == 0) output[row] = tanhf(sum + bias[row]);
}

std::vector<double> cpu_reference(const std::vector<float>& input, int layers, int width) {
    std::vector<double> activation(input.begin(), input.end());
    std::vector<double> next(width);
    std::vector<float> weights(static_cast<size_t>(width) * width);
    std::vector<float> bias(width);
    for (int layer = 0; layer < layers; ++layer) {
        fill_weights(weights, bias, layer, width);
        for (int row = 0; row < width; ++row) {
            const float* weight_row = weights.data() + static_cast<size_t>(row) * width;
            double sum = 0.0;
            for (int column = 0; column < width; ++column) sum += static_cast<double>(weight_row[column]) * activation[column];
            next[row] = std::tanh(sum + bias[row]);
        }
        activation.swap(next);
    }
    return activation;
}

double relative_error(const std::vector<float>& result, const std::vector<double>& reference) {
    double difference = 0.0;
    double norm = 0.0;
    for (size_t i = 0; i < reference.size(); ++i) {
        const double d = static_cast<double>(result[i]) - reference[i];
        difference += d * d;
        norm += reference[i] * reference[i];
    }
    if (norm == 0.0) return difference == 0.0 ? 0.0 : INFINITY;
    return std::sqrt(difference / norm);
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t middle = values.size() / 2;
    return values.size() % 2 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

// The library's API is looked up at run time so that the same binary runs natively.
void print_library_counters() {
    using GetStats = int (*)(uvmp_stats*);
    auto get_stats = reinterpret_cast<GetStats>(dlsym(RTLD_DEFAULT, "uvmp_get_stats"));
    if (get_stats == nullptr) {
        std::printf("uvmprefetch: not loaded (uvmp_get_stats not found)\n");
        return;
    }
    uvmp_stats stats{};
    stats.struct_size = sizeof(stats);
    if (get_stats(&stats) != 0) {
        std::printf("uvmprefetch: uvmp_get_stats failed\n");
        return;
    }
    const struct {
        const char* name;
        uint64_t value;
    } counters[] = {
        {"active", stats.active},
        {"allocs_converted", stats.allocs_converted},
        {"bytes_converted", stats.bytes_converted},
        {"bytes_converted_live", stats.bytes_converted_live},
        {"bytes_converted_peak", stats.bytes_converted_peak},
        {"frees_converted", stats.frees_converted},
        {"allocs_passed_through", stats.allocs_passed_through},
        {"bytes_passed_through", stats.bytes_passed_through},
        {"passthrough_vmm", stats.passthrough_vmm},
        {"passthrough_host", stats.passthrough_host},
        {"passthrough_capture", stats.passthrough_capture},
        {"passthrough_managed_failed", stats.passthrough_managed_failed},
        {"passthrough_inactive", stats.passthrough_inactive},
        {"guard_refusals", stats.guard_refusals},
        {"launches_seen", stats.launches_seen},
        {"launches_with_access", stats.launches_with_access},
        {"access_entries", stats.access_entries},
        {"populate_calls", stats.populate_calls},
        {"bytes_populated", stats.bytes_populated},
        {"bytes_prefetched", stats.bytes_prefetched},
        {"bytes_evicted", stats.bytes_evicted},
        {"iterations", stats.iterations},
        {"budget_bytes", stats.budget_bytes},
        {"guard_limit_bytes", stats.guard_limit_bytes},
        {"trace_records_written", stats.trace_records_written},
        {"trace_records_dropped", stats.trace_records_dropped},
    };
    for (const auto& counter : counters)
        std::printf("uvmprefetch: %s = %llu\n", counter.name, static_cast<unsigned long long>(counter.value));
}

}  // namespace

int main(int argc, char** argv) {
    const Options options = parse_options(argc, argv);

    // Width chosen so that the layers' weight matrices fill the requested size;
    // a multiple of 32 keeps every warp's row reads aligned.
    const double bytes_per_layer = static_cast<double>(options.megabytes) * 1048576.0 / options.layers;
    const int width = static_cast<int>(std::sqrt(bytes_per_layer / sizeof(float))) / 32 * 32;
    if (width < 32) usage_error("--mb is too small for that many layers (each layer needs at least 32x32 floats)");
    const size_t matrix_elements = static_cast<size_t>(width) * width;

    cudaDeviceProp properties{};
    CUDA_CHECK(cudaGetDeviceProperties(&properties, 0));
    std::printf("device: %s\n", properties.name);
    std::printf("model: %d layers of %d x %d floats, %.1f MiB of weights\n", options.layers, width, width,
                static_cast<double>(matrix_elements) * sizeof(float) * options.layers / 1048576.0);

    std::vector<float*> weights(options.layers);
    std::vector<float*> biases(options.layers);
    std::vector<float*> activations(options.layers + 1);
    for (float*& activation : activations) activation = device_alloc<float>(width);
    {
        std::vector<float> host_weights(matrix_elements);
        std::vector<float> host_bias(width);
        for (int layer = 0; layer < options.layers; ++layer) {
            weights[layer] = device_alloc<float>(matrix_elements);
            biases[layer] = device_alloc<float>(width);
            fill_weights(host_weights, host_bias, layer, width);
            CUDA_CHECK(cudaMemcpy(weights[layer], host_weights.data(), matrix_elements * sizeof(float),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(biases[layer], host_bias.data(), width * sizeof(float), cudaMemcpyHostToDevice));
        }
    }
    std::printf("cudaMalloc calls: %d\n", g_cuda_malloc_calls);

    using MarkIteration = void (*)();
    auto mark_iteration = reinterpret_cast<MarkIteration>(dlsym(RTLD_DEFAULT, "uvmp_mark_iteration"));

    cudaEvent_t step_start, step_end;
    CUDA_CHECK(cudaEventCreate(&step_start));
    CUDA_CHECK(cudaEventCreate(&step_end));

    std::vector<float> input(width);
    std::vector<float> output(width);
    std::vector<double> step_ms;
    const int blocks = (width + kWarpsPerBlock - 1) / kWarpsPerBlock;
    for (int step = 0; step < options.steps; ++step) {
        fill_input(input, step);
        CUDA_CHECK(cudaEventRecord(step_start));
        CUDA_CHECK(cudaMemcpy(activations[0], input.data(), width * sizeof(float), cudaMemcpyHostToDevice));
        for (int layer = 0; layer < options.layers; ++layer) {
            dense_tanh_layer<<<blocks, kWarpsPerBlock * 32>>>(weights[layer], biases[layer], activations[layer],
                                                              activations[layer + 1], width);
            CUDA_CHECK(cudaGetLastError());
        }
        CUDA_CHECK(cudaMemcpy(output.data(), activations[options.layers], width * sizeof(float),
                              cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaEventRecord(step_end));
        CUDA_CHECK(cudaEventSynchronize(step_end));
        if (mark_iteration != nullptr) mark_iteration();
        float milliseconds = 0.0f;
        CUDA_CHECK(cudaEventElapsedTime(&milliseconds, step_start, step_end));
        step_ms.push_back(milliseconds);
        std::printf("step %d: %.3f ms\n", step, milliseconds);
    }
    std::printf("median step after %d warm-up steps: %.3f ms\n", options.warmup,
                median(std::vector<double>(step_ms.begin() + options.warmup, step_ms.end())));

    // The last step's output went through every layer after all earlier steps, so it is
    // the one most likely to show data lost or stale after migrations.
    fill_input(input, options.steps - 1);
    const double error = relative_error(output, cpu_reference(input, options.layers, width));
    std::printf("relative error: %.3e (limit %.0e)\n", error, kMaxRelativeError);

    print_library_counters();

    CUDA_CHECK(cudaEventDestroy(step_start));
    CUDA_CHECK(cudaEventDestroy(step_end));
    for (float* pointer : weights) CUDA_CHECK(cudaFree(pointer));
    for (float* pointer : biases) CUDA_CHECK(cudaFree(pointer));
    for (float* pointer : activations) CUDA_CHECK(cudaFree(pointer));

    const bool correct = error <= kMaxRelativeError;
    std::printf("RESULT: %s\n", correct ? "PASS" : "FAIL");
    return correct ? 0 : kExitWrongResult;
}
