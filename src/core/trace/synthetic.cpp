#include "core/trace/synthetic.h"

#include <initializer_list>
#include <random>
#include <vector>

namespace uvmp::trace {
namespace {

struct Clock {
    uint64_t now_ns = 1'000'000;
    void advance(uint64_t ns) { now_ns += ns; }
};

} // namespace

Trace make_training_loop(const TrainingLoopShape& shape) {
    constexpr uint64_t kMiB = 1ull << 20;
    constexpr uint64_t kComputeStream = 0x7f00'0000'1000;
    constexpr uint64_t kOptimizerStream = 0x7f00'0000'2000;
    std::mt19937 random(shape.seed);
    auto pick = [&](uint64_t low, uint64_t high) { return low + random() % (high - low + 1); };

    Trace trace;
    trace.header.library_version = "synthetic";
    trace.header.device_name = "Synthetic GPU";
    trace.header.device_total_bytes = 80ull << 30;
    trace.header.driver_version = 13000;
    trace.header.budget_bytes = 1ull << 30;
    trace.header.start_time_ns = 1'700'000'000'000'000'000ull;
    trace.header.pid = 4242;
    trace.header.rank = 0;
    trace.header.options["policy"] = "learned";
    trace.header.options["budget"] = "1G";

    enum Kernel : uint32_t { Autotune, Gemm, Activation, Loss, GemmGradInput, GemmGradWeight, ActivationGrad, AdamStep };
    trace.kernel_names = {"cudnn_autotune_probe", "gemm_fwd", "gelu_fwd", "cross_entropy_loss",
                          "gemm_bwd_input", "gemm_bwd_weight", "gelu_bwd", "adam_step"};

    Clock clock;
    uint32_t next_alloc_id = 1;
    auto allocate = [&](uint64_t size, AllocKind kind) {
        Alloc& alloc = trace.allocs.emplace_back();
        alloc.id = next_alloc_id++;
        alloc.address = 0x7f10'0000'0000 + uint64_t{alloc.id} * (1ull << 32);
        alloc.size = size;
        alloc.kind = kind;
        alloc.time_ns = clock.now_ns;
        alloc.launches_before = trace.launches.size();
        clock.advance(20'000);
        return alloc.id;
    };

    std::vector<uint32_t> weights, grads, states;
    std::vector<uint64_t> weight_bytes;
    for (uint32_t l = 0; l < shape.layers; ++l) {
        uint64_t bytes = pick(4, 48) * kMiB;
        weight_bytes.push_back(bytes);
        weights.push_back(allocate(bytes, AllocKind::Converted));
        grads.push_back(allocate(bytes, AllocKind::Converted));
        states.push_back(allocate(2 * bytes, l % 4 == 3 ? AllocKind::PassedThrough : AllocKind::Converted));
    }
    uint32_t pinned_batch = allocate(8 * kMiB, AllocKind::Host);
    (void)pinned_batch;

    std::vector<uint64_t> base_duration(trace.kernel_names.size());
    for (uint64_t& d : base_duration) d = pick(20, 400) * 1000;

    uint64_t seq = 0;
    auto launch = [&](uint32_t kernel, uint64_t stream, std::initializer_list<uint32_t> touched) {
        Launch& record = trace.launches.emplace_back();
        record.seq = seq++;
        record.kernel_id = kernel;
        record.grid[0] = static_cast<uint32_t>(pick(64, 4096));
        record.block[0] = 256;
        if (kernel == Gemm || kernel == GemmGradInput || kernel == GemmGradWeight) {
            record.grid[1] = 4; // a 2-D tiling, so both launch layouts are exercised
            record.block[1] = 2;
        }
        record.stream = stream;
        record.time_ns = clock.now_ns;
        record.duration_ns = base_duration[kernel] + pick(0, 10'000);
        record.first_access = static_cast<uint32_t>(trace.accesses.size());
        record.access_count = static_cast<uint32_t>(touched.size());
        for (uint32_t id : touched) trace.accesses.push_back({id, 0, 0});
        clock.advance(5'000 + record.duration_ns);
    };
    auto move = [&](MoveKind kind, uint32_t alloc_id, uint64_t bytes) {
        Move& record = trace.moves.emplace_back();
        record.kind = kind;
        record.alloc_id = alloc_id;
        record.length = bytes;
        record.time_ns = clock.now_ns;
        record.duration_ns = bytes / 50; // about 50 GB/s
        record.launches_before = trace.launches.size();
    };

    for (uint64_t step = 0; step < shape.steps; ++step) {
        if (shape.mark_iterations) {
            trace.iterations.push_back({step, trace.launches.size(), clock.now_ns});
        }
        std::vector<uint32_t> activations;
        for (uint32_t l = 0; l <= shape.layers; ++l) activations.push_back(allocate(pick(2, 16) * kMiB, AllocKind::Converted));

        for (uint32_t l = 0; l < shape.layers; ++l) {
            if (shape.library_moves && step > 0) move(MoveKind::Prefetch, weights[l], weight_bytes[l]);
            if (shape.autotune_first_step && step == 0) launch(Autotune, kComputeStream, {weights[l], activations[l]});
            launch(Gemm, kComputeStream, {weights[l], activations[l], activations[l + 1]});
            launch(Activation, kComputeStream, {activations[l + 1]});
        }
        launch(Loss, kComputeStream, {activations[shape.layers]});
        for (uint32_t l = shape.layers; l-- > 0;) {
            launch(ActivationGrad, kComputeStream, {activations[l + 1]});
            launch(GemmGradInput, kComputeStream, {weights[l], activations[l + 1], activations[l]});
            launch(GemmGradWeight, kComputeStream, {grads[l], activations[l], activations[l + 1]});
        }
        for (uint32_t l = 0; l < shape.layers; ++l) {
            launch(AdamStep, kOptimizerStream, {weights[l], grads[l], states[l]});
            if (shape.library_moves && step > 0) move(MoveKind::Evict, states[l], 2 * weight_bytes[l]);
        }
        for (uint32_t id : activations) {
            trace.frees.push_back({id, clock.now_ns, trace.launches.size()});
            clock.advance(10'000);
        }
    }
    return trace;
}

} // namespace uvmp::trace
