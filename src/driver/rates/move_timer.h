// Times the library's own large moves on the GPU, so that the link rates can be
// corrected from what the run sees (rates::RateRefiner; the planner times its
// evictions only). The mover queues each move asynchronously and learns only how
// long the call took, not when the transfer ended: an event pair around the move
// on its stream says that, and is read back on a later move, once the pair has
// completed, never waited for.
//
// Mover thread only: not synchronised.
#pragma once

#include "core/rates/rate_refiner.h"
#include "driver/table/driver_table.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace uvmp::driver {

class MoveTimer {
public:
    // What a read-back pair reports: the device, the direction, the bytes and
    // the seconds the GPU took.
    using Sink = std::function<void(int device, rates::Move, uint64_t bytes, double seconds)>;

    MoveTimer(uint64_t min_bytes, Sink sink) : min_bytes_(min_bytes), sink_(std::move(sink)) {}
    ~MoveTimer() = default;
    MoveTimer(const MoveTimer&) = delete;
    MoveTimer& operator=(const MoveTimer&) = delete;

    // Before a move is queued on `stream` (whose context is current): a pair
    // begun, or nullopt where the move is too small to say anything of the link,
    // too many pairs wait, or the driver cannot time.
    struct Started {
        CUevent start = nullptr;
        CUevent end = nullptr;
    };
    std::optional<Started> begin(const DriverTable& table, CUstream stream, uint64_t bytes);
    // After the move was queued: the pair's end recorded behind it. A move that
    // failed passes `queued` false, and its pair is dropped.
    void finish(const DriverTable& table, CUstream stream, const Started& started, bool queued, int device,
                rates::Move move, uint64_t bytes);
    // Reads back the pairs that have completed and reports them; the rest wait
    // for the next call.
    void poll(const DriverTable& table);

    size_t pending() const { return pending_.size(); }

private:
    // Enough for the moves of a step to overlap their read-back; past it a move
    // goes untimed rather than growing the list.
    static constexpr size_t kMaxPending = 32;

    struct Pending {
        Started events;
        int device;
        rates::Move move;
        uint64_t bytes;
    };
    static void destroy(const DriverTable& table, const Started& events);

    uint64_t min_bytes_;
    Sink sink_;
    std::vector<Pending> pending_;
    bool cannot_time_ = false; // the driver refused to time a pair once
};

} // namespace uvmp::driver
