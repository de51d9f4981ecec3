// Set-up and tear-down of the preloaded library: configuration, logging, the
// interceptor, fork handling, exit signals and the exit summary.
#include "core/util/log.h"
#include "core/config/options.h"
#include "driver/intercept/interceptor.h"
#include "preload/exit_signals.h"
#include "preload/framework_notice.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdlib>

namespace {

using uvmp::driver::Interceptor;

void print_options(const uvmp::Config& config) {
    for (const auto& [key, value] : config.values) {
        const uvmp::OptionSpec* spec = uvmp::find_option(key);
        uvmp::log::raw_stderr_line(uvmp::log::prefix() + "option " + std::string(spec ? spec->env : key) + "=" +
                                   (value.empty() ? std::string("(unset)") : value));
    }
}

void before_fork() {
    if (auto* icpt = uvmp::driver::interceptor()) icpt->before_fork();
}

void after_fork_in_parent() {
    if (auto* icpt = uvmp::driver::interceptor()) icpt->after_fork_in_parent();
}

void after_fork_in_child() {
    if (auto* icpt = uvmp::driver::interceptor()) icpt->after_fork_in_child();
    uvmp::preload::exit_signals_after_fork_in_child();
}

// Until the driver is loaded the library holds nothing a child could inherit,
// and nothing that a signal would need finished.
void on_driver_loaded() {
    pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
    if (auto* icpt = uvmp::driver::interceptor(); icpt && icpt->active()) uvmp::preload::arm_exit_signals();
}

__attribute__((constructor)) void uvmp_library_start() {
    uvmp::Config config;
    bool active = true;
    if (auto error = uvmp::load_config(config, &uvmp::process_getenv)) {
        // One line, then a pure pass-through: a bad setting must never stop the job.
        uvmp::log::raw_stderr_line("uvmprefetch: " + error->message + "; running as a pass-through");
        config = uvmp::Config{};
        active = false;
    }
    active = active && config.enable;
    const std::string log_file =
        config.log_file.empty() ? std::string() : uvmp::expand_path_pattern(config.log_file, getpid(), &uvmp::process_getenv);
    uvmp::log::setup(config.log_level, log_file, uvmp::process_rank(&uvmp::process_getenv));
    if (config.verbose) print_options(config);
    uvmp::preload::arm_framework_notice(config.framework_settings,
                                        active && config.log_level <= uvmp::LogLevel::Warn);
    // Never freed: hooks may still run in other threads while the process exits.
    auto* icpt = new Interceptor(std::move(config), active);
    uvmp::driver::set_interceptor(icpt);
    uvmp::driver::call_when_loaded(&on_driver_loaded);
}

__attribute__((destructor)) void uvmp_library_stop() {
    if (auto* icpt = uvmp::driver::interceptor()) icpt->finish();
    uvmp::log::shutdown();
    uvmp::preload::die_of_pending_exit_signal();
}

} // namespace
