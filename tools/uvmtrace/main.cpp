// uvmtrace: reads recorded access traces. Exit status: 0 done, 1 the trace
// could not be read, 2 the command line was wrong.
#include "commands.h"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

namespace {

constexpr int kExitBadFile = 1;
constexpr int kExitBadUsage = 2;

} // namespace

int main(int argc, char** argv) {
    CLI::App app("uvmtrace: inspect, compare, simulate, replay, export and trim uvmprefetch access traces", "uvmtrace");
    app.require_subcommand(1);
    uvmp::tools::register_info(app);
    uvmp::tools::register_compare(app);
    uvmp::tools::register_dump(app);
    uvmp::tools::register_export(app);
    uvmp::tools::register_simulate(app);
    uvmp::tools::register_trim(app);
    uvmp::tools::register_replay(app);
    uvmp::tools::register_synth(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForAllHelp& help) {
        return app.exit(help);
    } catch (const CLI::CallForVersion& version) {
        return app.exit(version);
    } catch (const CLI::RuntimeError& stop) {
        // A command that has already explained itself and only sets the status.
        return stop.get_exit_code();
    } catch (const CLI::ParseError& usage) {
        std::cerr << "uvmtrace: " << usage.what() << "\n"
                  << "Run 'uvmtrace --help' for the commands and their options.\n";
        return kExitBadUsage;
    } catch (const std::exception& error) {
        std::cerr << "uvmtrace: " << error.what() << "\n";
        return kExitBadFile;
    }
    return 0;
}
