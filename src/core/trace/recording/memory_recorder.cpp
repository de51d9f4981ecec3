#include "core/trace/recording/memory_recorder.h"

#include <algorithm>
#include <numeric>
#include <utility>

namespace uvmp::trace {

MemoryRecorder::MemoryRecorder(Header header, uint64_t max_launches) : max_launches_(max_launches) {
    trace_.header = std::move(header);
}

void MemoryRecorder::kernel(uint32_t id, std::string_view name) {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    if (trace_.kernel_names.size() <= id) trace_.kernel_names.resize(id + 1);
    trace_.kernel_names[id] = std::string(name);
    ++written_;
}

void MemoryRecorder::alloc(const Alloc& record) {
    keep([&] {
        if (!known_.insert(record.id).second) return;
        trace_.allocs.push_back(record);
        if (is_managed(record.kind)) ++managed_allocs_;
    });
}

void MemoryRecorder::free(const Free& record) {
    keep([&] {
        if (known_.count(record.id)) trace_.frees.push_back(record);
    });
}

void MemoryRecorder::launch(const Launch& record, std::span<const Access> accesses) {
    keep([&] {
        Launch kept = record;
        kept.first_access = static_cast<uint32_t>(trace_.accesses.size());
        kept.access_count = static_cast<uint32_t>(accesses.size());
        trace_.accesses.insert(trace_.accesses.end(), accesses.begin(), accesses.end());
        trace_.launches.push_back(kept);
    });
}

void MemoryRecorder::kernel_duration(uint64_t launch_seq, uint64_t duration_ns) {
    std::lock_guard lock(mutex_);
    if (closed_ || durations_.size() >= max_launches_) return;
    durations_[launch_seq] = duration_ns;
}

void MemoryRecorder::launch_batch(uint64_t launch_seq, const LaunchBatch& batch) {
    std::lock_guard lock(mutex_);
    if (closed_ || batches_.size() >= max_launches_) return;
    batches_[launch_seq] = batch;
}

void MemoryRecorder::kernel_start(uint64_t launch_seq, uint64_t start_ns) {
    std::lock_guard lock(mutex_);
    if (closed_ || starts_.size() >= max_launches_) return;
    starts_[launch_seq] = start_ns;
}

void MemoryRecorder::iteration(const Iteration& record) {
    keep([&] { trace_.iterations.push_back(record); });
}

void MemoryRecorder::slab(const Slab& record) {
    keep([&] { trace_.slabs.push_back(record); });
}

void MemoryRecorder::close() {
    std::lock_guard lock(mutex_);
    if (closed_) return;
    closed_ = true;
    Trace none;
    none.header = std::move(trace_.header);
    trace_ = std::move(none);
    durations_ = {};
    batches_ = {};
    starts_ = {};
    known_ = {};
}

uint64_t MemoryRecorder::records_written() const {
    return locked([&]() -> uint64_t { return written_; });
}

uint64_t MemoryRecorder::records_dropped() const {
    return locked([&]() -> uint64_t { return dropped_; });
}

uint64_t MemoryRecorder::launches() const {
    return locked([&]() -> uint64_t { return trace_.launches.size(); });
}

uint64_t MemoryRecorder::managed_allocs() const {
    return locked([&]() -> uint64_t { return managed_allocs_; });
}

Trace MemoryRecorder::snapshot(MoverRecord* mover) const {
    std::lock_guard lock(mutex_);
    if (mover) *mover = {};
    Trace out;
    out.header = trace_.header;
    out.kernel_names = trace_.kernel_names;
    out.dropped_records = dropped_;
    // Launches in the order of their numbers: threads may record them out of it.
    std::vector<size_t> order(trace_.launches.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return trace_.launches[a].seq < trace_.launches[b].seq; });
    std::vector<uint64_t> seqs;
    seqs.reserve(order.size());
    out.launches.reserve(order.size());
    for (size_t i : order) {
        Launch launch = trace_.launches[i];
        const auto accesses = trace_.accesses_of(launch);
        launch.first_access = static_cast<uint32_t>(out.accesses.size());
        out.accesses.insert(out.accesses.end(), accesses.begin(), accesses.end());
        if (const auto d = durations_.find(launch.seq); d != durations_.end()) launch.duration_ns = d->second;
        if (const auto s = starts_.find(launch.seq); mover && s != starts_.end())
            mover->kernel_starts[out.launches.size()] = s->second;
        seqs.push_back(launch.seq);
        launch.seq = out.launches.size(); // as a trace read from a file numbers them
        out.launches.push_back(launch);
    }
    // A record made before launch number n comes before the first recorded
    // launch numbered n or more.
    const auto position = [&](uint64_t launches_before) {
        return static_cast<uint64_t>(std::lower_bound(seqs.begin(), seqs.end(), launches_before) - seqs.begin());
    };
    if (mover) {
        const auto recorded = [&](std::optional<uint64_t> launch) -> std::optional<uint64_t> {
            if (!launch) return std::nullopt;
            const auto it = std::lower_bound(seqs.begin(), seqs.end(), *launch);
            if (it == seqs.end() || *it != *launch) return std::nullopt;
            return static_cast<uint64_t>(it - seqs.begin());
        };
        for (size_t i = 0; i < seqs.size(); ++i) {
            const auto b = batches_.find(seqs[i]);
            if (b == batches_.end()) continue;
            LaunchBatch batch = b->second;
            batch.needs_prefetch_of = recorded(batch.needs_prefetch_of);
            batch.needs_populate_of = recorded(batch.needs_populate_of);
            mover->batches.emplace_back(i, batch);
        }
    }
    out.allocs = trace_.allocs;
    for (Alloc& a : out.allocs) a.launches_before = position(a.launches_before);
    out.frees = trace_.frees;
    for (Free& f : out.frees) f.launches_before = position(f.launches_before);
    out.iterations = trace_.iterations;
    for (Iteration& i : out.iterations) i.launches_before = position(i.launches_before);
    out.slabs = trace_.slabs;
    for (Slab& s : out.slabs) s.launches_before = position(s.launches_before);
    // Kernels first seen before recording began have no name here.
    uint32_t kernels = static_cast<uint32_t>(out.kernel_names.size());
    for (const Launch& launch : out.launches) kernels = std::max(kernels, launch.kernel_id + 1);
    out.kernel_names.resize(kernels);
    return out;
}

} // namespace uvmp::trace
