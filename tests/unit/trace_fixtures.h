// Synthetic traces of a training loop, for tests and for the bundled example
// trace (`uvmtrace synth`) until traces recorded on a GPU take their place.
// Header-only so that the tool and the unit tests share one generator.
#pragma once

#include "core/trace_model.h"
#include "core/trace_writer.h"

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace uvmp::trace::fixtures {

struct TrainingLoopShape {
    uint32_t layers = 8;           // each layer: a weight, a gradient, an optimizer state, an activation
    uint64_t steps = 20;           // training steps recorded
    bool autotune_first_step = true; // the first step runs extra kernels, as cuDNN autotuning does
    bool mark_iterations = false;  // record uvmp_mark_iteration calls
    bool library_moves = true;     // record prefetches and evictions from step 1 on
    uint32_t seed = 1;
};

namespace detail {

struct Clock {
    uint64_t now_ns = 1'000'000;
    void advance(uint64_t ns) { now_ns += ns; }
};

} // namespace detail

// Each step: allocate the activations, forward (2 kernels a layer), loss,
// backward (3 kernels a layer), optimizer (1 kernel a layer, on a second
// stream), free the activations. Weights, gradients and optimizer state live
// through the whole run. Sizes and durations are pseudo-random but fixed by
// the seed.
inline Trace make_training_loop(const TrainingLoopShape& shape) {
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

    detail::Clock clock;
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

// Writes a whole in-memory trace through TraceWriter, in the order a recorder
// would have produced it. Returns records dropped by the writer.
inline uint64_t write_trace(const Trace& trace, const std::string& path, uint64_t buffer_bytes = 64ull << 20) {
    std::string error;
    auto writer = TraceWriter::open({path, buffer_bytes}, trace.header, error);
    if (!writer) throw std::runtime_error(error);
    size_t next_alloc = 0, next_free = 0, next_move = 0, next_mark = 0;
    for (size_t i = 0; i <= trace.launches.size(); ++i) {
        // Everything placed before launch i, then launch i itself.
        while (next_mark < trace.iterations.size() && trace.iterations[next_mark].launches_before <= i) {
            writer->iteration(trace.iterations[next_mark++]);
        }
        while (next_alloc < trace.allocs.size() && trace.allocs[next_alloc].launches_before <= i) {
            writer->alloc(trace.allocs[next_alloc++]);
        }
        while (next_move < trace.moves.size() && trace.moves[next_move].launches_before <= i) {
            writer->move(trace.moves[next_move++]);
        }
        while (next_free < trace.frees.size() && trace.frees[next_free].launches_before <= i) {
            writer->free(trace.frees[next_free++]);
        }
        if (i == trace.launches.size()) break;
        const Launch& launch = trace.launches[i];
        if (launch.kernel_id < trace.kernel_names.size()) writer->kernel(launch.kernel_id, trace.kernel_names[launch.kernel_id]);
        writer->launch(launch, std::span(trace.accesses).subspan(launch.first_access, launch.access_count));
        if (launch.duration_ns != 0) writer->kernel_duration(launch.seq, launch.duration_ns);
    }
    writer->close();
    return writer->records_dropped();
}

} // namespace uvmp::trace::fixtures

// Helpers for the unit tests only, defined in trace_fixtures.cpp.
namespace uvmp::trace::fixtures {

// A path in the build tree for a test's scratch file; the name should be unique per test.
std::string scratch_path(const std::string& name);
std::vector<std::byte> read_file(const std::string& path);

} // namespace uvmp::trace::fixtures
