# The launch hook's own work a launch on the fake driver (launch_hook_timing.cpp, the loop of
# bench/probes/empty_launch.cu): printed, not checked, under the default policy, as uvmrun runs.
# Each run also checks that the planner was handed, or counted as unplanned, every launch
# of a job past its budget, the threaded one with four threads launching at once; within
# a budget or without one, that none was.
# launch_hook_cold.cpp measures the same with many allocations, a wide parameter and the caches
# swept between launches, as a framework's launches meet it: printed, not checked, beside the
# same checks.
# Included from CMakeLists.txt, after robustness_tests.cmake.
add_executable(launch_hook_timing launch_hook_timing.cpp robustness_support.cpp)
target_link_libraries(launch_hook_timing PRIVATE uvmp_intercept_scenario uvmp_fake_cuda Threads::Threads)
target_compile_options(launch_hook_timing PRIVATE ${UVMP_WARNINGS})

set(UVMP_LAUNCH_HOOK_TIMING $<TARGET_FILE:launch_hook_timing>)
set(UVMP_HOOK_FIGURE "OUTPUT_MATCHES_2=launch hook: [0-9]+ ns of the library's own work a launch")
# Under a budget that 4 MiB of ballast (converted memory no launch names) goes past,
# so that every launch is planned; and under one the job fits, where no launch is
# until the job goes past it.
uvmp_integration_checked_test(integration.launch_hook.timing
  CHECKS "${UVMP_ALL_CHECKS_PASSED}" "${UVMP_HOOK_FIGURE}"
  COMMAND env ${UVMP_PRELOAD_ENV} UVMP_BUDGET=2M ${UVMP_LAUNCH_HOOK_TIMING} 200000 1 4)
uvmp_integration_checked_test(integration.launch_hook.threads
  CHECKS "${UVMP_ALL_CHECKS_PASSED}" "${UVMP_HOOK_FIGURE}"
  COMMAND env ${UVMP_PRELOAD_ENV} UVMP_BUDGET=2M ${UVMP_LAUNCH_HOOK_TIMING} 50000 4 4)
uvmp_integration_checked_test(integration.launch_hook.fits_budget
  CHECKS "${UVMP_ALL_CHECKS_PASSED}" "${UVMP_HOOK_FIGURE}"
  COMMAND env ${UVMP_PRELOAD_ENV} UVMP_BUDGET=64M ${UVMP_LAUNCH_HOOK_TIMING})
# Without a budget nothing is planned: no launch is handed to the worker.
uvmp_integration_checked_test(integration.launch_hook.no_budget
  CHECKS "${UVMP_ALL_CHECKS_PASSED}" "${UVMP_HOOK_FIGURE}"
  COMMAND env ${UVMP_PRELOAD_ENV} ${UVMP_LAUNCH_HOOK_TIMING})
uvmp_integration_checked_test(integration.launch_hook.without_library
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND ${UVMP_LAUNCH_HOOK_TIMING})

add_executable(launch_hook_cold launch_hook_cold.cpp robustness_support.cpp)
target_link_libraries(launch_hook_cold PRIVATE uvmp_intercept_scenario uvmp_fake_cuda Threads::Threads)
target_compile_options(launch_hook_cold PRIVATE ${UVMP_WARNINGS})
uvmp_integration_checked_test(integration.launch_hook.cold
  CHECKS "${UVMP_ALL_CHECKS_PASSED}" "${UVMP_HOOK_FIGURE}"
  COMMAND env ${UVMP_PRELOAD_ENV} UVMP_BUDGET=1536M $<TARGET_FILE:launch_hook_cold> 2000 8 4 1000)
