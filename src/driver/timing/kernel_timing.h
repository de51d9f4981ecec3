// Kernel durations from CUPTI's activity records, for traces recorded with
// UVMP_TRACE_TIMING=1. CUPTI is opened with dlopen only when asked for; a
// driver callback inside each launch call ties CUPTI's correlation id to the
// launch's sequence number, and the kernel's activity record is matched by it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace uvmp::driver {

class KernelTiming {
public:
    // The kernel's start is on CUPTI's clock (ns), the same for every kernel.
    using Sink = std::function<void(uint64_t launch_seq, uint64_t start_ns, uint64_t duration_ns)>;

    // Opens CUPTI and starts collecting. Once per process; false with a reason
    // when CUPTI is missing or refuses.
    static bool start(Sink sink, std::string& error);
    static bool running();

    // Around the real launch call of launch number seq.
    static void before_launch(uint64_t seq);
    static void after_launch();

    // Delivers the records of every buffer whose kernels have all ended: during
    // the run. A record taken back before its kernel ends has no timestamps and
    // never comes again, so nothing but the end of timing forces them out.
    static void deliver_finished();
    // Delivers every record CUPTI still holds, those of kernels not yet ended
    // dropped. At exit, before the trace closes.
    static void flush();
    // Times no more launches (the driver callbacks and kernel records are turned
    // off) and delivers what was timed. Once started, timing is not started again.
    static void stop();

    // In a forked child: CUPTI's threads and the parent's trace stay with the
    // parent; nothing is timed in the child.
    static void forget_after_fork();
};

} // namespace uvmp::driver
