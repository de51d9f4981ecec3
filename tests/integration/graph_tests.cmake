# CUDA graphs on the fake driver (graph_test.cpp): kernels captured into a graph
# must be recorded as captured, not as launches that ran, and every launch of
# the graph must be seen, planned and recorded as the launches of its nodes with
# their access sets (graph_trace_check.cpp reads the library's trace back). Without
# the library, or with the graph beyond its walking, the program's results are the
# same. Included from CMakeLists.txt.
add_executable(graph_test graph_test.cpp graph_entry_points.cpp graph_scenarios.cpp)
target_link_libraries(graph_test PRIVATE uvmp_intercept_scenario)
target_compile_options(graph_test PRIVATE ${UVMP_WARNINGS})
add_dependencies(graph_test uvmp_fake_cuda)
add_executable(graph_trace_check graph_trace_check.cpp)
target_link_libraries(graph_trace_check PRIVATE uvmp_core)
target_compile_options(graph_trace_check PRIVATE ${UVMP_WARNINGS})

set(UVMP_GRAPH_TEST $<TARGET_FILE:graph_test>)
set(UVMP_GRAPH_CHECK $<TARGET_FILE:graph_trace_check>)
set(UVMP_GRAPH_TRACES ${CMAKE_CURRENT_BINARY_DIR}/graph-traces)
set(UVMP_GRAPH_PASSED "OUTPUT_MATCHES_1=all [0-9]+ checks passed")

# graph_traced_test(NAME ROUTE SCENARIO EXPECTED [ENV ...]): runs the scenario preloaded,
# recording a trace, then checks the trace; EXPECTED is what the check prints.
function(uvmp_graph_traced_test name route scenario expected)
  cmake_parse_arguments(ARG "" "" "ENV" ${ARGN})
  set(trace ${UVMP_GRAPH_TRACES}/${name}.uvmt)
  string(REPLACE ";" " " env "${ARG_ENV}")
  uvmp_integration_checked_test(integration.graph.${name}
    CHECKS "${UVMP_GRAPH_PASSED}" "OUTPUT_MATCHES_2=graph trace as expected: ${expected}"
    COMMAND sh -c "mkdir -p ${UVMP_GRAPH_TRACES} && rm -f ${trace} && env ${UVMP_PRELOAD_ENV} UVMP_TRACE_OUT=${trace} \
            ${env} ${UVMP_GRAPH_TEST} ${route} ${scenario} planned && ${UVMP_GRAPH_CHECK} ${scenario} ${trace}")
endfunction()

foreach(route dlsym procaddress)
  uvmp_graph_traced_test(${route}.capture ${route} capture "3 graph launches, 6 replayed launches, 2 captured launches")
  uvmp_integration_test(integration.graph.${route}.capture_without_library
    COMMAND ${UVMP_GRAPH_TEST} ${route} capture passthrough)
endforeach()
uvmp_integration_test(integration.graph.capture_disabled
  COMMAND ${UVMP_GRAPH_TEST} dlsym capture passthrough
  ENVIRONMENT ${UVMP_PRELOAD_ENV} UVMP_ENABLE=0)
# Policy none plans nothing but still records what graphs run.
uvmp_graph_traced_test(capture_policy_none dlsym capture "3 graph launches, 6 replayed launches, 2 captured launches"
  ENV UVMP_POLICY=none)

# Set, copy and child-graph nodes as launches of their own; a host node and one of no
# known kind planned for nothing; a kernel node given another argument in the executable graph.
uvmp_graph_traced_test(nodes dlsym nodes "3 graph launches, 12 replayed launches, 2 captured launches")
uvmp_integration_test(integration.graph.nodes_without_library
  COMMAND ${UVMP_GRAPH_TEST} dlsym nodes passthrough)

# Graph launches under a budget below the footprint: the planner moves data both ways
# for the kernels the launches run (nothing else runs a kernel in the scenario).
uvmp_integration_checked_test(integration.graph.planned_under_budget
  CHECKS "${UVMP_GRAPH_PASSED}" "OUTPUT_MATCHES_2=prefetched [1-9][^,]*, evicted [1-9]"
         "OUTPUT_MATCHES_3=graph launches: 3, running 6 kernel, copy and set nodes. 0 of graphs not known"
  COMMAND env ${UVMP_PRELOAD_ENV} UVMP_POLICY=learned UVMP_BUDGET=4M UVMP_SUMMARY=1 GRAPH_TEST_PAUSE_MS=300
          ${UVMP_GRAPH_TEST} dlsym capture planned)

# The library's walk of a graph fails (a driver call it makes refuses): one line says
# so, and the graph's launches pass through unplanned with the program's results unchanged.
# (Under a budget below the footprint: without one, or within one, nothing is planned,
# walked graph or not.)
foreach(failing cuGraphGetNodes:1 cuGraphKernelNodeGetParams_v2:2)
  string(REGEX REPLACE ":.*" "" call ${failing})
  uvmp_integration_checked_test(integration.graph.unwalked_${call}
    CHECKS "${UVMP_GRAPH_PASSED}"
           "STDERR_LINES_MATCHING=walking the nodes of a CUDA graph failed \\(${call} gave CUDA_ERROR_UNKNOWN\\)"
           "STDERR_LINE_COUNT=1"
    COMMAND env ${UVMP_PRELOAD_ENV} UVMP_BUDGET=4M FAKECUDA_FAIL=${failing}:CUDA_ERROR_UNKNOWN
            ${UVMP_GRAPH_TEST} dlsym capture unwalked)
endforeach()

# uvmtrace on a trace with graphs: info counts graph launches and captured launches,
# dump shows the replays as such and the captured launches as captures, and simulate
# runs the replays as the kernels that ran. uvmp_graph_tool_test(NAME CHECKS ... ARGS ...)
# records the capture scenario's trace, then runs `uvmtrace NAME TRACE ARGS`.
function(uvmp_graph_tool_test name)
  cmake_parse_arguments(ARG "" "" "CHECKS;ARGS" ${ARGN})
  set(trace ${UVMP_GRAPH_TRACES}/uvmtrace-${name}.uvmt)
  string(REPLACE ";" " " args "${ARG_ARGS}")
  uvmp_integration_checked_test(integration.graph.uvmtrace_${name}
    CHECKS ${ARG_CHECKS}
    COMMAND sh -c "mkdir -p ${UVMP_GRAPH_TRACES} && rm -f ${trace} && env ${UVMP_PRELOAD_ENV} UVMP_TRACE_OUT=${trace} \
            ${UVMP_GRAPH_TEST} dlsym capture planned > /dev/null && $<TARGET_FILE:uvmtrace> ${name} ${trace} ${args}")
endfunction()
uvmp_graph_tool_test(info
  CHECKS "OUTPUT_MATCHES_1=graph launches +3 of 1 graphs, replaying 6 of the launches. 0 not known, 0 captured"
         "OUTPUT_MATCHES_2=captured launches +2 \\(made into a graph being captured: not run\\)"
         "OUTPUT_MATCHES_3=launches +6, 2 distinct kernels")
uvmp_graph_tool_test(dump
  CHECKS "OUTPUT_MATCHES_1=\ncaptured capture=[1-9][0-9]* kernel=_Z5firstPfi [^\n]*accesses=\\[1\\]\n"
         "OUTPUT_MATCHES_2=\ngraph-launch graph=1 [^\n]* before=4 replayed=2 skipped=0\n"
         "OUTPUT_MATCHES_3=\nlaunch seq=5 kernel=_Z6second4View [^\n]*accesses=\\[2\\+256:0\\] replay-of-graph=1\n")
uvmp_graph_tool_test(simulate CHECKS "OUTPUT_MATCHES_1=launches +6\n" ARGS --budget 4M --policy learned)
