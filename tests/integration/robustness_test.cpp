// Processes, threads and failures, on the fake driver, the program linked
// against it: usage() says what each scenario does.
#include "check_list.h"
#include "fault_scenarios.h"
#include "fork_scenario.h"
#include "stress_scenario.h"

#include <cstdio>
#include <string>

using namespace uvmp_integration;

namespace {

int usage(const char* program) {
    std::fprintf(stderr,
                 "usage: %s fork|stress\n"
                 "       %s fault %s\n"
                 "  fork    fork while other threads use CUDA (fork_scenario.h)\n"
                 "  stress  sixteen threads allocating, freeing and launching (stress_scenario.h)\n"
                 "  fault   driver calls that fail (fault_scenarios.h)\n",
                 program, program, kFaultModes);
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string scenario = argc > 1 ? argv[1] : "";
    CheckList checks;
    if (argc == 2 && scenario == "fork") {
        run_fork_scenario(checks);
    } else if (argc == 2 && scenario == "stress") {
        run_stress_scenario(checks);
    } else if (argc >= 3 && scenario == "fault" && is_fault_mode(argv[2])) {
        const std::string mode = argv[2];
        if ((mode == "library") != (argc == 4)) return usage(argv[0]);
        run_fault_scenario(mode, argc == 4 ? argv[3] : "", checks);
    } else {
        return usage(argv[0]);
    }
    return checks.exit_status();
}
