#include "core/trace/synthesis/synthetic.h"

#include "core/util/round_up.h"

#include <initializer_list>
#include <map>
#include <optional>
#include <random>
#include <vector>

namespace uvmp::trace {
namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kComputeStream = 0x7f00'0000'1000;
constexpr uint64_t kOptimizerStream = 0x7f00'0000'2000;

enum Kernel : uint32_t { Autotune, Gemm, Activation, Loss, GemmGradInput, GemmGradWeight, ActivationGrad, AdamStep };

// Records a training loop's events in order, with a clock and sizes and
// durations drawn from the seed.
class LoopRecorder {
public:
    explicit LoopRecorder(uint32_t seed) : random_(seed) {
        trace_.header.library_version = "synthetic";
        trace_.header.device_name = "Synthetic GPU";
        trace_.header.device_total_bytes = 80ull << 30;
        trace_.header.driver_version = 13000;
        trace_.header.budget_bytes = 1ull << 30;
        trace_.header.start_time_ns = 1'700'000'000'000'000'000ull;
        trace_.header.pid = 4242;
        trace_.header.rank = 0;
        trace_.header.options["policy"] = "learned";
        trace_.header.options["budget"] = "1G";
        trace_.kernel_names = {"cudnn_autotune_probe", "gemm_fwd", "gelu_fwd", "cross_entropy_loss",
                               "gemm_bwd_input", "gemm_bwd_weight", "gelu_bwd", "adam_step"};
    }

    uint64_t pick(uint64_t low, uint64_t high) { return low + random_() % (high - low + 1); }
    uint64_t now_ns() const { return now_ns_; }
    void advance(uint64_t ns) { now_ns_ += ns; }
    Trace& trace() { return trace_; }

    // Durations of the kernels, drawn once.
    void draw_kernel_durations() {
        base_duration_.resize(trace_.kernel_names.size());
        for (uint64_t& d : base_duration_) d = pick(20, 400) * 1000;
    }

    uint32_t allocate(uint64_t size, AllocKind kind, std::optional<uint64_t> address = {}, uint32_t slab = 0) {
        Alloc& alloc = trace_.allocs.emplace_back();
        alloc.id = next_alloc_id_++;
        alloc.address = address ? *address : 0x7f10'0000'0000 + uint64_t{alloc.id} * (1ull << 32);
        alloc.size = size;
        alloc.kind = kind;
        alloc.slab = slab;
        alloc.time_ns = now_ns_;
        alloc.launches_before = trace_.launches.size();
        advance(20'000);
        return alloc.id;
    }

    void free(uint32_t id) {
        trace_.frees.push_back({id, now_ns_, trace_.launches.size()});
        advance(10'000);
    }

    void launch(uint32_t kernel, uint64_t stream, std::initializer_list<uint32_t> touched) {
        Launch& record = trace_.launches.emplace_back();
        record.seq = seq_++;
        record.kernel_id = kernel;
        record.grid[0] = static_cast<uint32_t>(pick(64, 4096));
        record.block[0] = 256;
        if (kernel == Gemm || kernel == GemmGradInput || kernel == GemmGradWeight) {
            record.grid[1] = 4; // a 2-D tiling, so both launch layouts are exercised
            record.block[1] = 2;
        }
        record.stream = stream;
        record.time_ns = now_ns_;
        record.duration_ns = base_duration_[kernel] + pick(0, 10'000);
        record.first_access = static_cast<uint32_t>(trace_.accesses.size());
        record.access_count = static_cast<uint32_t>(touched.size());
        for (uint32_t id : touched) trace_.accesses.push_back({id, 0, 0});
        advance(5'000 + record.duration_ns);
    }

    void move(MoveKind kind, uint32_t alloc_id, uint64_t bytes) {
        Move& record = trace_.moves.emplace_back();
        record.kind = kind;
        record.alloc_id = alloc_id;
        record.length = bytes;
        record.time_ns = now_ns_;
        record.duration_ns = bytes / 50; // about 50 GB/s
        record.launches_before = trace_.launches.size();
    }

    void mark(uint64_t step) { trace_.iterations.push_back({step, trace_.launches.size(), now_ns_}); }

private:
    Trace trace_;
    std::mt19937 random_;
    uint64_t now_ns_ = 1'000'000;
    uint32_t next_alloc_id_ = 1;
    uint64_t seq_ = 0;
    std::vector<uint64_t> base_duration_;
};

// Blocks carved from slabs as a caching pool does: first fit, blocks of a chunk
// or more on chunk boundaries, freed blocks joined with their free neighbours.
// The same sizes asked in the same order after the same frees get the same
// addresses, so a training step finds its buffers where the last one had them.
class FirstFitSlabs {
public:
    explicit FirstFitSlabs(LoopRecorder& recorder) : recorder_(recorder) {}

    uint32_t allocate(uint64_t size) {
        const uint64_t alignment = size >= kChunk ? kChunk : kSmallAlignment;
        const uint64_t bytes = round_up(size, alignment);
        for (uint32_t s = 0; s < slabs_.size(); ++s)
            if (const auto offset = take(slabs_[s], bytes, alignment)) return place(s, *offset, size);
        // A slab of its own for a block larger than the usual slab.
        Slab& slab = add_slab(std::max(kSlabBytes, round_up(size, kChunk)));
        return place(static_cast<uint32_t>(slabs_.size() - 1), *take(slab, bytes, alignment), size);
    }

    void free(uint32_t id) {
        const auto found = blocks_.find(id);
        if (found == blocks_.end()) return;
        const auto [slab, offset, bytes] = found->second;
        blocks_.erase(found);
        give_back(slabs_[slab], offset, bytes);
        recorder_.free(id);
    }

private:
    static constexpr uint64_t kChunk = 2 * kMiB;
    static constexpr uint64_t kSmallAlignment = 512;
    static constexpr uint64_t kSlabBytes = 512 * kMiB;
    static constexpr uint64_t kSlabsBase = 0x6000'0000'0000;
    static constexpr uint64_t kSlabStride = 1ull << 36;

    struct Slab {
        uint32_t id;
        uint64_t base;
        std::map<uint64_t, uint64_t> holes; // offset -> bytes
    };
    struct Block {
        uint32_t slab;
        uint64_t offset;
        uint64_t bytes;
    };

    Slab& add_slab(uint64_t bytes) {
        const uint32_t id = static_cast<uint32_t>(slabs_.size()) + 1;
        Slab& slab = slabs_.emplace_back(Slab{id, kSlabsBase + id * kSlabStride, {{0, bytes}}});
        recorder_.trace().slabs.push_back(
            {SlabAction::Created, id, slab.base, bytes, 0, recorder_.now_ns(), recorder_.trace().launches.size()});
        return slab;
    }

    // The offset of `bytes` taken from the first hole they fit, aligned.
    static std::optional<uint64_t> take(Slab& slab, uint64_t bytes, uint64_t alignment) {
        for (auto hole = slab.holes.begin(); hole != slab.holes.end(); ++hole) {
            const auto [start, length] = *hole;
            const uint64_t offset = round_up(start, alignment);
            if (offset + bytes > start + length) continue;
            slab.holes.erase(hole);
            if (offset > start) slab.holes.emplace(start, offset - start);
            if (offset + bytes < start + length) slab.holes.emplace(offset + bytes, start + length - offset - bytes);
            return offset;
        }
        return std::nullopt;
    }

    static void give_back(Slab& slab, uint64_t offset, uint64_t bytes) {
        auto next = slab.holes.lower_bound(offset);
        if (next != slab.holes.end() && next->first == offset + bytes) {
            bytes += next->second;
            next = slab.holes.erase(next);
        }
        if (next != slab.holes.begin()) {
            const auto before = std::prev(next);
            if (before->first + before->second == offset) {
                offset = before->first;
                bytes += before->second;
                slab.holes.erase(before);
            }
        }
        slab.holes.emplace(offset, bytes);
    }

    uint32_t place(uint32_t slab, uint64_t offset, uint64_t size) {
        const uint64_t bytes = round_up(size, size >= kChunk ? kChunk : kSmallAlignment);
        const uint32_t id = recorder_.allocate(size, AllocKind::Pooled, slabs_[slab].base + offset, slabs_[slab].id);
        blocks_[id] = {slab, offset, bytes};
        return id;
    }

    LoopRecorder& recorder_;
    std::vector<Slab> slabs_;
    std::map<uint32_t, Block> blocks_;
};

Trace make_plain_loop(const TrainingLoopShape& shape) {
    LoopRecorder out(shape.seed);
    std::vector<uint32_t> weights, grads, states;
    std::vector<uint64_t> weight_bytes;
    for (uint32_t l = 0; l < shape.layers; ++l) {
        uint64_t bytes = out.pick(4, 48) * kMiB;
        weight_bytes.push_back(bytes);
        weights.push_back(out.allocate(bytes, AllocKind::Converted));
        grads.push_back(out.allocate(bytes, AllocKind::Converted));
        states.push_back(out.allocate(2 * bytes, l % 4 == 3 ? AllocKind::PassedThrough : AllocKind::Converted));
    }
    out.allocate(8 * kMiB, AllocKind::Host); // the pinned input batch
    out.draw_kernel_durations();

    for (uint64_t step = 0; step < shape.steps; ++step) {
        if (shape.mark_iterations) out.mark(step);
        std::vector<uint32_t> activations;
        for (uint32_t l = 0; l <= shape.layers; ++l) activations.push_back(out.allocate(out.pick(2, 16) * kMiB, AllocKind::Converted));

        for (uint32_t l = 0; l < shape.layers; ++l) {
            if (shape.library_moves && step > 0) out.move(MoveKind::Prefetch, weights[l], weight_bytes[l]);
            if (shape.autotune_first_step && step == 0) out.launch(Autotune, kComputeStream, {weights[l], activations[l]});
            out.launch(Gemm, kComputeStream, {weights[l], activations[l], activations[l + 1]});
            out.launch(Activation, kComputeStream, {activations[l + 1]});
        }
        out.launch(Loss, kComputeStream, {activations[shape.layers]});
        for (uint32_t l = shape.layers; l-- > 0;) {
            out.launch(ActivationGrad, kComputeStream, {activations[l + 1]});
            out.launch(GemmGradInput, kComputeStream, {weights[l], activations[l + 1], activations[l]});
            out.launch(GemmGradWeight, kComputeStream, {grads[l], activations[l], activations[l + 1]});
        }
        for (uint32_t l = 0; l < shape.layers; ++l) {
            out.launch(AdamStep, kOptimizerStream, {weights[l], grads[l], states[l]});
            if (shape.library_moves && step > 0) out.move(MoveKind::Evict, states[l], 2 * weight_bytes[l]);
        }
        for (uint32_t id : activations) out.free(id);
    }
    return std::move(out.trace());
}

Trace make_pooled_loop(const TrainingLoopShape& shape) {
    LoopRecorder out(shape.seed);
    FirstFitSlabs pool(out);
    std::vector<uint32_t> weights, grads, states;
    // Activations outweigh the parameters, as in a model trained on large batches.
    for (uint32_t l = 0; l < shape.layers; ++l) {
        const uint64_t bytes = out.pick(2, 12) * kMiB;
        weights.push_back(pool.allocate(bytes));
        grads.push_back(pool.allocate(bytes));
        states.push_back(pool.allocate(2 * bytes));
    }
    out.allocate(8 * kMiB, AllocKind::Host); // the pinned input batch
    // A layer's activation has the same size every step, as a model's does.
    std::vector<uint64_t> activation_bytes;
    for (uint32_t l = 0; l <= shape.layers; ++l) activation_bytes.push_back(out.pick(16, 64) * kMiB);
    out.draw_kernel_durations();

    std::optional<uint32_t> loss; // the last step's, with carry_loss
    for (uint64_t step = 0; step < shape.steps; ++step) {
        if (shape.mark_iterations) out.mark(step);
        // Forward: each layer's output is allocated as the layer runs.
        std::vector<uint32_t> activations{pool.allocate(activation_bytes[0])};
        for (uint32_t l = 0; l < shape.layers; ++l) {
            if (shape.autotune_first_step && step == 0) out.launch(Autotune, kComputeStream, {weights[l], activations[l]});
            activations.push_back(pool.allocate(activation_bytes[l + 1]));
            out.launch(Gemm, kComputeStream, {weights[l], activations[l], activations[l + 1]});
            out.launch(Activation, kComputeStream, {activations[l + 1]});
        }
        // Backward: each activation's gradient is allocated when it is made, and
        // a buffer is freed right after its last use (as autograd releases what a
        // node saved once the node has run), so that the next gradient is placed
        // over it.
        std::vector<uint32_t> gradients(shape.layers + 1);
        gradients[shape.layers] = pool.allocate(activation_bytes[shape.layers]);
        if (shape.carry_loss) {
            const uint32_t new_loss = pool.allocate(4);
            out.launch(Loss, kComputeStream, {activations[shape.layers], gradients[shape.layers], new_loss});
            if (loss) pool.free(*loss);
            loss = new_loss;
        } else {
            out.launch(Loss, kComputeStream, {activations[shape.layers], gradients[shape.layers]});
        }
        for (uint32_t l = shape.layers; l-- > 0;) {
            out.launch(ActivationGrad, kComputeStream, {activations[l + 1], gradients[l + 1]});
            pool.free(activations[l + 1]);
            gradients[l] = pool.allocate(activation_bytes[l]);
            out.launch(GemmGradInput, kComputeStream, {weights[l], gradients[l + 1], gradients[l]});
            out.launch(GemmGradWeight, kComputeStream, {grads[l], activations[l], gradients[l + 1]});
            pool.free(gradients[l + 1]);
        }
        pool.free(activations[0]);
        pool.free(gradients[0]);
        for (uint32_t l = 0; l < shape.layers; ++l) out.launch(AdamStep, kOptimizerStream, {weights[l], grads[l], states[l]});
    }
    if (shape.teardown) {
        if (shape.mark_iterations) out.mark(shape.steps);
        out.advance(1'000'000);
        if (loss) pool.free(*loss);
        for (uint32_t l = 0; l < shape.layers; ++l) {
            pool.free(weights[l]);
            pool.free(grads[l]);
            pool.free(states[l]);
        }
    }
    return std::move(out.trace());
}

} // namespace

Trace make_training_loop(const TrainingLoopShape& shape) {
    return shape.pooled ? make_pooled_loop(shape) : make_plain_loop(shape);
}

} // namespace uvmp::trace
