// The command line of `uvmtrace simulate`, shared by its single run, its
// sweep and its tier model.
#pragma once

#include "usage_errors.h"

#include "core/rates/link_rates.h"
#include "core/util/size_parse.h"

#include <cstdint>
#include <string>

namespace uvmp::tools {

struct SimulateOptions {
    std::string file;
    std::string budget;
    std::string policy = "learned";
    std::string chunk = "2M";
    double prefetch_gbps = 0;
    double evict_gbps = 0;
    double fault_gbps = 0;
    double concurrent_gbps = 0;
    double kernel_us = 0;
    uint64_t lookahead = 4096;
    bool json = false;
    bool timing = false;
    bool sweep = false;
    std::string extents = "inferred";
    uint32_t repeat_last = 0;
    std::string fault_room = "copy-engine";
    std::string placement = "over-dead";
    std::string pool_slab_size; // the re-placed pool's slabs; empty: the recorded run's
    std::string sweep_from = "30%";
    std::string sweep_to = "110%";
    unsigned sweep_steps = 10;
    std::string plot = "simulate-sweep.svg";
    std::string homes = "gpu";
    std::string home_choice = "simulate";
    double remote_write_gbps = 0;
    double remote_read_gbps = 0;
    double streaming_gbps = 0;
    std::string host_bytes; // with --homes host or auto: take the prefix of the order nearest this many bytes
    std::string rates_file; // --rates: measured link rates (core/rates/link_rates.h)
    // What the trace is simulated with: --rates FILE, else the reference figures.
    rates::LinkRates rates;
};

namespace simulation {

[[noreturn]] inline void bad_usage(const std::string& message) { tools::bad_usage("simulate", message); }

inline SizeOrPercent size_option(const std::string& name, const std::string& text) {
    return tools::size_option("simulate", name, text);
}

} // namespace simulation
} // namespace uvmp::tools
