// Each uvmtrace subcommand registers itself on the top-level CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

namespace uvmp::tools {

void register_info(CLI::App& app);
void register_compare(CLI::App& app);
void register_dump(CLI::App& app);
void register_export(CLI::App& app);
void register_simulate(CLI::App& app);
void register_trim(CLI::App& app);
// Needs a GPU and libuvmprefetch.so, except with --dry-run.
void register_replay(CLI::App& app);
// Testing aid: writes a synthetic trace; listed under its own group in --help.
void register_synth(CLI::App& app);

} // namespace uvmp::tools
