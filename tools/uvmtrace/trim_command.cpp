// `uvmtrace trim FILE -o OUT [--steps N] [--strip-paths]`: writes a smaller copy
// of a trace, its first steps (with what came before them and the program's
// teardown), and path options without their directories, to bundle or share it.
#include "commands.h"
#include "trace_file.h"
#include "usage_errors.h"

#include "core/sim/simulator.h"
#include "core/trace/edit/trim.h"
#include "core/trace/format/writer.h"

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace uvmp::tools {
namespace {

struct TrimArguments {
    std::string path;
    std::string output;
    std::optional<uint64_t> steps;
    bool strip_paths = false;
};

void run(const TrimArguments& a) {
    if (a.output == a.path) bad_usage("trim", "the output must be another file than the input");
    trace::Trace trace = load_trace(a.path);
    if (a.steps) {
        try {
            trace::keep_first_steps(trace, iteration_bounds(trace), *a.steps);
        } catch (const std::invalid_argument& e) {
            bad_usage("trim", fmt::format("--steps: {}: {}", a.path, e.what()));
        }
    }
    if (a.strip_paths) trace::strip_option_directories(trace.header);
    const uint64_t dropped = trace::write_trace_file(trace, a.output);
    const std::vector<uint64_t> bounds = iteration_bounds(trace);
    const size_t steps = bounds.size() < 2 ? 0 : bounds.size() - 1;
    fmt::print("wrote {}: {} launches ({} before the first step, {} step{}), {} allocations, {} frees{}\n", a.output,
               trace.launches.size(), bounds.empty() ? 0 : bounds[0], steps, steps == 1 ? "" : "s",
               trace.allocs.size(), trace.frees.size(), dropped ? fmt::format(", {} records dropped", dropped) : "");
}

} // namespace

void register_trim(CLI::App& app) {
    auto arguments = std::make_shared<TrimArguments>();
    CLI::App* command = app.add_subcommand(
        "trim", "write a smaller copy of a trace: its first steps and the program's teardown, to bundle or share it");
    command->add_option("FILE", arguments->path, "trace file")->required();
    command->add_option("-o,--output", arguments->output, "trace file to write")->required();
    command->add_option("--steps", arguments->steps,
                        "keep the launches before the first step and this many steps (as `info` counts them); the "
                        "frees and slab releases that came later stay as the teardown")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}));
    command->add_flag("--strip-paths", arguments->strip_paths,
                      "reduce the path options the trace recorded (trace_out, stats_file, ...) to their file names");
    command->callback([arguments] { run(*arguments); });
}

} // namespace uvmp::tools
