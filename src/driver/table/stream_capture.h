// Stream capture as the library meets it: whether work queued on a stream runs
// now or is captured into a graph, and a capture mode for the library's own
// threads that no application capture can object to.
#pragma once

#include "driver/table/driver_table.h"

#include <cstdint>

namespace uvmp::driver {

// Which entry point a call came through: it decides stream semantics (legacy
// vs per-thread default stream) and the pass-through call.
enum class StreamFlavor { Legacy, PerThread };

struct CaptureState {
    bool capturing = false; // work queued on the stream now is captured, not run
    uint64_t id = 0;        // the driver's id of the capture sequence, 0 when not known
};

// Whether a stream capture may have begun in this process: until one has, no
// launch can be captured, and none needs asking about. The hooks of every entry
// point that begins a capture say so before the capture begins; a query that
// finds a capture begun where no hook saw it says so too.
bool captures_possible();
void note_capture_beginning();

// Asked of the driver in the flavour the call came in by: the per-thread
// default stream (handle 0 in a _ptsz call) is another stream than the legacy
// one. A query the driver refuses (the legacy stream while another stream of
// the context captures) reads as not capturing: work queued there fails as it
// would without the library.
CaptureState capture_state(const DriverTable& table, StreamFlavor flavor, CUstream stream);

inline bool stream_is_capturing(const DriverTable& table, StreamFlavor flavor, CUstream stream) {
    return capture_state(table, flavor, stream).capturing;
}

// Puts the calling thread in the relaxed capture mode, for threads of the
// library's own: in the default (global) mode, a call the driver deems unsafe
// while another thread captures in global mode (an event query, say) would
// invalidate that capture, and with it the application's graph.
void relax_capture_mode_of_this_thread(const DriverTable& table);

} // namespace uvmp::driver
