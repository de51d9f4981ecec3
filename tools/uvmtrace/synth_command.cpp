// `uvmtrace synth -o FILE`: writes a synthetic training-loop trace, for tests
// and demonstrations where no GPU recording is at hand.
#include "commands.h"

#include "core/trace/synthesis/synthetic.h"
#include "core/trace/format/writer.h"

#include <fmt/format.h>

#include <memory>
#include <string>

namespace uvmp::tools {
namespace {

struct SynthArguments {
    std::string output;
    trace::TrainingLoopShape shape;
};

} // namespace

void register_synth(CLI::App& app) {
    auto arguments = std::make_shared<SynthArguments>();
    CLI::App* command = app.add_subcommand("synth", "writes a synthetic training-loop trace");
    command->group("Testing");
    command->add_option("-o,--output", arguments->output, "trace file to write")->required();
    command->add_option("--steps", arguments->shape.steps, "training steps")
        ->capture_default_str()
        ->check(CLI::Range(uint64_t{1}, uint64_t{1'000'000}));
    command->add_option("--layers", arguments->shape.layers, "layers of the model")
        ->capture_default_str()
        ->check(CLI::Range(1u, 10'000u));
    command->add_option("--seed", arguments->shape.seed, "seed of the sizes and durations")->capture_default_str();
    command->add_flag("--marks", arguments->shape.mark_iterations, "record an iteration mark at each step");
    command->add_flag("--pooled", arguments->shape.pooled,
                      "every device allocation a block of the managed pool: activations allocated in the forward "
                      "pass and freed in the backward pass, at the same addresses every step");
    command->add_flag("--carry-loss", arguments->shape.carry_loss,
                      "with --pooled: each step makes a small block that the next step frees");
    command->add_flag("--teardown", arguments->shape.teardown,
                      "with --pooled: after the last step a closing mark (with --marks) and the frees of every block "
                      "left");
    command->callback([arguments] {
        trace::Trace trace = trace::make_training_loop(arguments->shape);
        uint64_t dropped = trace::write_trace_file(trace, arguments->output);
        fmt::print("wrote {}: {} launches, {} allocations, {} dropped\n", arguments->output, trace.launches.size(),
                   trace.allocs.size(), dropped);
    });
}

} // namespace uvmp::tools
