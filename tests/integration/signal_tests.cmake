# A job stopped by a signal mid-run (signal_test.sh, signal_target.cpp; bench/signals_gpu.sh
# runs the same checks on a GPU): SIGINT
# and SIGTERM still give the summary, the stats file and a whole trace, after
# the program's own handler where it has one, and the job dies of the signal;
# SIGKILL leaves a trace uvmtrace reads up to its cut. Included from CMakeLists.txt.
add_executable(signal_target signal_target.cpp robustness_support.cpp)
target_link_libraries(signal_target PRIVATE uvmp_intercept_scenario uvmp_fake_cuda)
target_compile_options(signal_target PRIVATE ${UVMP_WARNINGS})

foreach(signal_case "INT;before" "TERM;none" "TERM;after" "KILL;none")
  list(GET signal_case 0 signal)
  list(GET signal_case 1 mode)
  string(TOLOWER "${signal}" name)
  if(mode STREQUAL "none")
    set(handler no)
  else()
    set(handler yes)
  endif()
  set(dir ${CMAKE_CURRENT_BINARY_DIR}/signal-${name}-${mode})
  uvmp_integration_test(integration.signal.sig${name}_${mode}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/signal_test.sh ${signal} ${handler} launching $<TARGET_FILE:uvmtrace>
            ${dir} -- env LD_PRELOAD=$<TARGET_FILE:uvmprefetch> UVMP_SUMMARY=1 UVMP_STATS_FILE=${dir}/stats.json
            UVMP_TRACE_OUT=${dir}/trace.uvmt $<TARGET_FILE:signal_target> ${mode})
endforeach()
