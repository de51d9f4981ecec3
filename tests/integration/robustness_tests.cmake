# Processes, threads and failures (robustness_test.cpp), on the fake driver: forks
# while other threads use CUDA, sixteen threads at once, and driver calls that fail
# (FAKECUDA_FAIL, fake_cuda/fake_faults.h). Included from CMakeLists.txt. The stress
# and fault tests also carry the label `sanitize`: scripts/test.sh runs them in the
# ThreadSanitizer and AddressSanitizer builds.
add_executable(robustness_test
  robustness_test.cpp
  fault_scenarios.cpp
  fork_scenario.cpp
  robustness_support.cpp
  stress_scenario.cpp)
target_link_libraries(robustness_test PRIVATE uvmp_intercept_scenario uvmp_fake_cuda Threads::Threads)
target_compile_options(robustness_test PRIVATE ${UVMP_WARNINGS})

set(UVMP_ROBUSTNESS_TEST $<TARGET_FILE:robustness_test>)
if(UVMP_SANITIZER_RUNTIME)
  set(UVMP_ROBUSTNESS_PRELOAD_ENV "LD_PRELOAD=${UVMP_SANITIZER_RUNTIME}:$<TARGET_FILE:uvmprefetch>")
else()
  set(UVMP_ROBUSTNESS_PRELOAD_ENV ${UVMP_PRELOAD_ENV})
endif()
set(UVMP_ALL_CHECKS_PASSED "OUTPUT_MATCHES_1=all [0-9]+ checks passed")

# GCC's sanitizer runtimes up to GCC 13 take a dynamic TLS block that happens to
# start 16 bytes into a page for one with a pre-2.25 glibc header, and read the two
# words before it as a range to scan: LeakSanitizer's tracer then faults at exit now
# and then ("Tracer caught signal 11"), after every check has passed. The library's
# thread-local state is such a block in every thread these tests start.
function(uvmp_sanitized_test name)
  set_property(TEST ${name} APPEND PROPERTY LABELS sanitize)
  if(UVMP_SANITIZE MATCHES "address")
    set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=intercept_tls_get_addr=0")
  endif()
endfunction()

# Forks while two threads allocate, launch and free: every child ends, those using
# CUDA count only their own work and record their own trace (%p), the others start
# no thread. Without %p in the trace's name a child opens no trace file at all.
set(UVMP_FORK_TRACES ${CMAKE_CURRENT_BINARY_DIR}/fork-traces)
uvmp_integration_checked_test(integration.fork.children_own_traces
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND sh -c "rm -rf ${UVMP_FORK_TRACES} && mkdir -p ${UVMP_FORK_TRACES} && env ${UVMP_ROBUSTNESS_PRELOAD_ENV} \
          UVMP_BUDGET=8M UVMP_TRACE_OUT=${UVMP_FORK_TRACES}/fork-%p.uvmt ${UVMP_ROBUSTNESS_TEST} fork")
# A folder of its own: the test above empties its folder when it starts, and ctest may run both at once.
set(UVMP_FORK_PARENT_TRACES ${CMAKE_CURRENT_BINARY_DIR}/fork-traces-parent-name)
uvmp_integration_checked_test(integration.fork.children_no_trace_of_parent_name
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND sh -c "rm -rf ${UVMP_FORK_PARENT_TRACES} && mkdir -p ${UVMP_FORK_PARENT_TRACES} && env ${UVMP_ROBUSTNESS_PRELOAD_ENV} \
          UVMP_POLICY=none UVMP_TRACE_OUT=${UVMP_FORK_PARENT_TRACES}/fork-parent.uvmt ${UVMP_ROBUSTNESS_TEST} fork")
uvmp_integration_checked_test(integration.fork.without_library
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND ${UVMP_ROBUSTNESS_TEST} fork)

# Sixteen threads for a second and a half: under the default policy with a budget
# far below what they allocate, with policy none, and without the library. Slabs are
# small in both: the threads allocate on 33 streams, and with the default 1 GiB slabs
# the slabs holding each stream's pending frees can reach the fake device's 15 GiB
# guard before the frees complete, most often when a sanitizer slows every call (the
# guard then refuses an allocation, as it must; the test is about threads, not slabs).
uvmp_integration_checked_test(integration.stress.learned
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND env ${UVMP_ROBUSTNESS_PRELOAD_ENV} UVMP_BUDGET=64M UVMP_POOL_SLAB_SIZE=16M ${UVMP_ROBUSTNESS_TEST} stress)
uvmp_integration_checked_test(integration.stress.none
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND env ${UVMP_ROBUSTNESS_PRELOAD_ENV} UVMP_POLICY=none UVMP_POOL_SLAB_SIZE=64M ${UVMP_ROBUSTNESS_TEST} stress)
uvmp_integration_checked_test(integration.stress.without_library
  CHECKS "${UVMP_ALL_CHECKS_PASSED}"
  COMMAND ${UVMP_ROBUSTNESS_TEST} stress)
foreach(test learned none without_library)
  uvmp_sanitized_test(integration.stress.${test})
endforeach()

# The application's own calls and frees failing: the driver's results, with the
# library as without it.
set(UVMP_FAULT_ENV env ${UVMP_ROBUSTNESS_PRELOAD_ENV} UVMP_POOL_SLAB_SIZE=4M)
foreach(mode own frees)
  uvmp_integration_checked_test(integration.fault.${mode}
    CHECKS "${UVMP_ALL_CHECKS_PASSED}"
    COMMAND ${UVMP_FAULT_ENV} ${UVMP_ROBUSTNESS_TEST} fault ${mode})
  uvmp_integration_checked_test(integration.fault.${mode}_without_library
    CHECKS "${UVMP_ALL_CHECKS_PASSED}"
    COMMAND ${UVMP_ROBUSTNESS_TEST} fault ${mode})
  uvmp_sanitized_test(integration.fault.${mode})
endforeach()

# Every call of one entry point the library makes on its own behalf fails: the
# application sees nothing, the counters come back to zero, and the library
# leaves no allocation behind. (The library gives no memory advice.)
foreach(call cuMemAllocManaged cuMemPrefetchAsync_v2 cuStreamCreate cuStreamWaitEvent
             cuEventCreate cuEventRecord cuEventQuery cuEventSynchronize)
  uvmp_integration_checked_test(integration.fault.library.${call}
    CHECKS "${UVMP_ALL_CHECKS_PASSED}"
           "OUTPUT_MATCHES_2=fakecuda at exit: 0 live allocations \\(0 managed bytes\\)"
    COMMAND ${UVMP_FAULT_ENV} UVMP_BUDGET=4M FAKECUDA_EXIT_REPORT=1 FAKECUDA_FAIL=${call}:*:CUDA_ERROR_UNKNOWN
            ${UVMP_ROBUSTNESS_TEST} fault library ${call})
  uvmp_sanitized_test(integration.fault.library.${call})
endforeach()
