// uvmrun: runs one command with libuvmprefetch.so preloaded and the job's
// settings in its environment.
#include "core/options.h"
#include "tools/uvmrun/job_environment.h"

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <sstream>

namespace {

constexpr int kUsageError = 2;

std::string options_reference() {
    std::ostringstream os;
    os << "\nLibrary options (environment variable, config-file key, default):\n";
    for (const uvmp::OptionSpec& spec : uvmp::option_table()) {
        os << "  " << spec.env << " / " << spec.key << " (default: "
           << (spec.default_text.empty() ? std::string_view("unset") : spec.default_text) << ")\n"
           << "      " << spec.help << "\n";
        if (!spec.choices.empty()) os << "      choices: " << spec.choices << "\n";
    }
    os << "  UVMP_CONFIG: a TOML file with any of the keys above; the environment wins over it.\n";
    return os.str();
}

int fail(const std::string& message) {
    std::cerr << "uvmrun: " << message << "\n";
    return kUsageError;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"Run a CUDA program with uvmprefetch: device memory becomes managed memory, "
                 "kept within a GPU budget by learned prefetching.",
                 "uvmrun"};
    app.footer(options_reference());

    std::string budget, policy, config_file, log_level, trace_out, stats_file;
    std::vector<std::string> settings, command;
    bool no_summary = false, dry_run = false, verbose = false;
    app.add_option("--budget", budget, "GPU memory the job may keep resident: 24G, 512M, 80%");
    app.add_option("--policy", policy, "none, demand-lru or learned");
    app.add_option("--config", config_file, "TOML file of library options")->check(CLI::ExistingFile);
    app.add_option("--log-level", log_level, "trace, debug, info, warn, error or off");
    app.add_option("--trace-out", trace_out, "record an access trace (%p pid, %r rank)");
    app.add_option("--stats-file", stats_file, "write the counters as JSON at exit (%p pid)");
    app.add_option("--set", settings, "any library option as KEY=VALUE (repeatable)");
    app.add_flag("--no-summary", no_summary, "do not print the summary at exit");
    app.add_flag("--dry-run", dry_run, "print the environment and command, run nothing");
    app.add_flag("--verbose", verbose, "the library prints every option at start");
    app.add_option("command", command, "the command to run")->required();
    app.allow_extras(false);

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return kUsageError;
    }

    uvmp::tools::JobEnvironment env;
    auto set_option = [&](std::string_view key, const std::string& value) {
        const uvmp::OptionSpec* spec = uvmp::find_option(key);
        env.set(std::string(spec->env), value);
    };
    if (!budget.empty()) set_option("budget", budget);
    if (!policy.empty()) set_option("policy", policy);
    if (!log_level.empty()) set_option("log_level", log_level);
    if (!trace_out.empty()) set_option("trace_out", trace_out);
    if (!stats_file.empty()) set_option("stats_file", stats_file);
    if (verbose) set_option("verbose", "1");
    if (!config_file.empty()) env.set("UVMP_CONFIG", config_file);
    for (const std::string& setting : settings) {
        const size_t eq = setting.find('=');
        const uvmp::OptionSpec* spec =
            eq == std::string::npos ? nullptr : uvmp::find_option(setting.substr(0, eq));
        if (!spec)
            return fail("--set expects KEY=VALUE with a key of the option table (see --help), got '" +
                        setting + "'");
        env.set(std::string(spec->env), setting.substr(eq + 1));
    }
    if (!no_summary && !env.has("UVMP_SUMMARY")) set_option("summary", "1");
    if (no_summary) set_option("summary", "0");

    if (auto error = env.validate()) return fail(*error);

    const std::string library = uvmp::tools::find_library(argv[0][0] == '/' || std::strchr(argv[0], '/')
                                                              ? argv[0]
                                                              : "/proc/self/exe");
    if (library.empty())
        return fail("cannot find libuvmprefetch.so next to uvmrun, in ../lib, or in the build "
                    "tree; set UVMP_LIBRARY to its path");
    const std::string* preload = env.get("LD_PRELOAD");
    env.set("LD_PRELOAD", preload && !preload->empty() ? library + " " + *preload : library);

    // PyTorch's expandable segments map memory with cuMemCreate, which cannot
    // become managed memory.
    if (!env.has("PYTORCH_CUDA_ALLOC_CONF")) {
        env.set("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False");
        if (!dry_run)
            std::cerr << "uvmrun: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False "
                         "(expandable segments cannot be converted to managed memory)\n";
    } else if (env.get("PYTORCH_CUDA_ALLOC_CONF")->find("expandable_segments:True") != std::string::npos) {
        std::cerr << "uvmrun: PYTORCH_CUDA_ALLOC_CONF asks for expandable segments: PyTorch's "
                     "memory will pass through unconverted\n";
    }

    if (dry_run) {
        for (const std::string& change : env.changes()) std::cout << change << "\n";
        for (const std::string& word : command) std::cout << word << " ";
        std::cout << "\n";
        return 0;
    }

    std::vector<std::string> entries = env.entries();
    std::vector<char*> envp, args;
    for (std::string& e : entries) envp.push_back(e.data());
    envp.push_back(nullptr);
    for (std::string& word : command) args.push_back(word.data());
    args.push_back(nullptr);
    execvpe(args[0], args.data(), envp.data());
    std::cerr << "uvmrun: cannot run '" << command[0] << "': " << std::strerror(errno) << "\n";
    return errno == ENOENT ? 127 : 126;
}
