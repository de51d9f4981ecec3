# uvmtrace replay on the fake driver: the library, preloaded by the replay itself,
# must see every launch of the replay with the access set recorded in the input
# trace. The replay runs with trace recording on; replay_trace_check compares the
# library's trace of the replay with the input (allocations by their place, each
# launch's accesses as allocation and offset, in order).
add_executable(replay_trace_check replay_trace_check.cpp)
target_link_libraries(replay_trace_check PRIVATE uvmp_core)
target_compile_options(replay_trace_check PRIVATE ${UVMP_WARNINGS})

set(UVMP_UVMTRACE $<TARGET_FILE:uvmtrace>)
set(UVMP_REPLAY_CHECK $<TARGET_FILE:replay_trace_check>)
set(UVMP_REPLAY_ENV env UVMP_LIBRARY=$<TARGET_FILE:uvmprefetch>)
set(UVMP_REPLAY_TRACES ${PROJECT_SOURCE_DIR}/examples/traces)
add_dependencies(replay_trace_check uvmtrace uvmprefetch uvmp_fake_cuda)

# uvmp_replay_access_test(NAME TRACE [SYNTH ...] [OPTIONS ...] [COPIES N] [CHECKS ...]): replays
# TRACE (a bundled trace, or a path) with OPTIONS, recording the library's trace, then checks
# that against TRACE. With SYNTH, `uvmtrace synth SYNTH...` writes TRACE first.
function(uvmp_replay_access_test name trace)
  cmake_parse_arguments(ARG "" "COPIES" "SYNTH;OPTIONS;CHECKS" ${ARGN})
  set(replayed ${CMAKE_CURRENT_BINARY_DIR}/replay-${name}.uvmt)
  if(NOT IS_ABSOLUTE "${trace}")
    set(trace ${UVMP_REPLAY_TRACES}/${trace})
  endif()
  set(make_input)
  if(ARG_SYNTH)
    string(REPLACE ";" " " synth "${ARG_SYNTH}")
    set(make_input "${UVMP_UVMTRACE} synth -o ${trace} ${synth} > /dev/null && ")
  endif()
  set(copies)
  if(ARG_COPIES)
    set(copies --copies ${ARG_COPIES})
  endif()
  string(REPLACE ";" " " options "${ARG_OPTIONS}")
  string(REPLACE ";" " " copies "${copies}")
  uvmp_integration_checked_test(integration.replay.${name}
    CHECKS "OUTPUT_MATCHES_1=access sets equal: [1-9][0-9]* launches" ${ARG_CHECKS}
    COMMAND sh -c "rm -f ${replayed} && ${make_input}env UVMP_LIBRARY=$<TARGET_FILE:uvmprefetch> \
            UVMP_TRACE_OUT=${replayed} ${UVMP_UVMTRACE} replay ${trace} ${options} && \
            ${UVMP_REPLAY_CHECK} ${trace} ${replayed} ${copies}")
endfunction()

# Blocks of the pool (stream-ordered calls) on two streams, frees in every step, marks.
uvmp_replay_access_test(pooled synthetic-pooled.uvmt
  CHECKS "OUTPUT_MATCHES_2=steady step \\(median of the steps after the first\\): recorded [0-9.]+ ms"
         "OUTPUT_MATCHES_3=uvmprefetch: ")
# Converted allocations of a 1.0 trace (plain calls), with memory the library did not
# convert (passed through, pinned host), which the replay leaves out.
uvmp_replay_access_test(converted synthetic.uvmt
  CHECKS "OUTPUT_MATCHES_2=left out: 3 allocations the library did not convert")
# Copies of the last step: its kernels and offsets again, with allocations of their own.
uvmp_replay_access_test(copies synthetic-pooled.uvmt OPTIONS --steps 3 COPIES 3
  CHECKS "OUTPUT_MATCHES_2=\\* a copy of the last recorded step")
# A pooled job as recorded: a loss each step frees the last step's, and the model freed after
# the closing mark (the teardown, which is not the last step's). The copy of the last step
# makes and frees as the step did.
uvmp_replay_access_test(pooled_job_copies ${CMAKE_CURRENT_BINARY_DIR}/replay-pooled-job-input.uvmt
  SYNTH --pooled --marks --carry-loss --teardown --steps 4 OPTIONS --steps 1 COPIES 1
  CHECKS "OUTPUT_MATCHES_2=5 steps of 49 launches, the last 1 copies of the last recorded one"
         "OUTPUT_MATCHES_3=\\* a copy of the last recorded step")
# The bundled resnet50 trace recorded under the pool, at footprint / 1.5 under learned with
# a copy of its last step, as bench/drivers/replay.py's budget rows run it. (The GPT-2 one's peak
# is more than the fake device has.)
uvmp_replay_access_test(recorded_pooled_copy resnet50-b256-pooled.uvmt
  OPTIONS --steps 1 --budget 66.7% --policy learned COPIES 1
  CHECKS "OUTPUT_MATCHES_2=2 steps of 1635 launches, the last 1 copies of the last recorded one"
         "OUTPUT_MATCHES_3=uvmprefetch: .*evicted [1-9]")
# A budget and a policy reach the library; the budget is a share of the footprint.
uvmp_replay_access_test(budget synthetic-pooled.uvmt OPTIONS --budget 50% --policy demand-lru
  CHECKS "OUTPUT_MATCHES_2=budget 319.0 MiB, policy demand-lru" "OUTPUT_MATCHES_3=uvmprefetch: .*evicted [1-9]")

# Without a GPU or the library: the plan, and refusals of bad options with status 2.
uvmp_integration_checked_test(integration.replay.dry_run
  CHECKS "OUTPUT_MATCHES_1=988 launches \\(0 before the first step, 20 steps of 49 launches\\)"
         "OUTPUT_MATCHES_2=peak live 638.0 MiB"
  COMMAND ${UVMP_UVMTRACE} replay --dry-run ${UVMP_REPLAY_TRACES}/synthetic-pooled.uvmt)
# A recorded trace (resnet50 with PyTorch's caching off: a converted allocation and a free for
# every tensor) whose teardown follows the last iteration mark: --steps copies its last step.
uvmp_integration_checked_test(integration.replay.steps_on_recorded_trace
  CHECKS "OUTPUT_MATCHES_1=\\(2603 before the first step, 5 steps of 1635 launches, the last 1 copies"
  COMMAND ${UVMP_UVMTRACE} replay --dry-run --steps 1 ${PROJECT_SOURCE_DIR}/tests/data/resnet50-b256-nocache.uvmt)
uvmp_integration_checked_test(integration.replay.steps_on_bundled_pooled_trace
  CHECKS "OUTPUT_MATCHES_1=\\(2816 before the first step, 2 steps of 2074 launches, the last 1 copies"
         "OUTPUT_MATCHES_2=peak live 23.7 GiB"
  COMMAND ${UVMP_UVMTRACE} replay --dry-run --steps 1 ${UVMP_REPLAY_TRACES}/gpt2-small-b16-pooled.uvmt)
uvmp_integration_checked_test(integration.replay.bad_scale
  CHECKS "EXIT_CODE=2" "STDERR_LINES_MATCHING=^uvmtrace replay: --scale must be" "STDERR_LINE_COUNT=1"
  COMMAND ${UVMP_UVMTRACE} replay --scale 0 ${UVMP_REPLAY_TRACES}/synthetic-pooled.uvmt)
uvmp_integration_checked_test(integration.replay.steps_refused_when_not_periodic
  CHECKS "EXIT_CODE=2" "STDERR_LINES_MATCHING=^uvmtrace replay: .*no allocation of that size that outlives it"
         "STDERR_LINE_COUNT=1"
  COMMAND ${UVMP_UVMTRACE} replay --dry-run --steps 1 ${UVMP_REPLAY_TRACES}/synthetic.uvmt)
uvmp_integration_checked_test(integration.replay.bad_policy
  CHECKS "EXIT_CODE=2" "STDERR_LINES_MATCHING=^uvmtrace replay: .*UVMP_POLICY" "STDERR_LINE_COUNT=1"
  COMMAND ${UVMP_REPLAY_ENV} ${UVMP_UVMTRACE} replay --policy belady ${UVMP_REPLAY_TRACES}/synthetic-pooled.uvmt)

# Its default traces, the bundled pooled ones, plan every run without a GPU (--dry-run): the
# budget rows with a copy of the last step, and beside them the real job's step under the
# same policy from a bench/drivers/pool_frees.py report.
uvmp_integration_checked_test(integration.replay.bench_script_plans
  CHECKS "OUTPUT_MATCHES_1=gpt2-small-b16-pooled.uvmt F/1.5 learned: planned 6964 launches in 2 steps, budget 15.74 GiB. real job: 825.0 ms a step at 16G"
         "OUTPUT_MATCHES_2=resnet50-b256-pooled.uvmt F/1.5 demand-lru: planned 5873 launches in 2 steps, budget 7.34 GiB. real job: n/a"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/bench/drivers/replay.py --uvmtrace ${UVMP_UVMTRACE} --dry-run
          --real-job ${PROJECT_SOURCE_DIR}/bench/results/pool-run-3.json)
# Reports given one after another: a later one's runs stand for the same workload and policy.
uvmp_integration_checked_test(integration.replay.bench_script_plans_two_reports
  CHECKS "OUTPUT_MATCHES_1=gpt2-small-b16-pooled.uvmt F/1.5 learned: planned 6964 launches in 2 steps, budget 15.74 GiB. real job: 1057.2 ms a step at 16G"
  COMMAND python3 ${PROJECT_SOURCE_DIR}/bench/drivers/replay.py --uvmtrace ${UVMP_UVMTRACE} --dry-run
          --real-job ${PROJECT_SOURCE_DIR}/bench/results/pool-run-3.json
          --real-job ${PROJECT_SOURCE_DIR}/bench/results/pool-run-4.json)
# A replay's budget rows against the real job's step, in the table and in the rows for
# bench/device_run.sh.
set(UVMP_REAL_JOB ${CMAKE_CURRENT_BINARY_DIR}/replay-real-job.json)
file(WRITE ${UVMP_REAL_JOB} [=[{"rows": [{"workload": "synthetic", "mode": "learned", "budget": "16G", "status": "ok", "median_ms": 4.0}]}
]=])
uvmp_integration_checked_test(integration.replay.bench_script_real_job
  CHECKS "OUTPUT_MATCHES_1=synthetic-pooled.uvmt +F/1.5 learned .* 4.0 at 16G +[0-9.]+ +ok"
         "OUTPUT_MATCHES_2=replay synthetic-pooled.uvmt F/1.5 learned	[0-9.]+ms, [0-9.]+x no budget, [0-9.]+x real 4.0ms	-	info"
  COMMAND sh -c "python3 ${PROJECT_SOURCE_DIR}/bench/drivers/replay.py --uvmtrace ${UVMP_UVMTRACE} \
          --lib $<TARGET_FILE:uvmprefetch> --tolerance 10 --real-job ${UVMP_REAL_JOB} \
          --json-out ${CMAKE_CURRENT_BINARY_DIR}/replay-bench-real.json ${UVMP_REPLAY_TRACES}/synthetic-pooled.uvmt && \
          python3 ${PROJECT_SOURCE_DIR}/bench/drivers/replay.py --rows ${CMAKE_CURRENT_BINARY_DIR}/replay-bench-real.json")

# The kernel's PTX is written by hand: where the toolkit's assembler is at hand, it
# must accept the module for the GPUs the library serves (no GPU needed).
find_program(UVMP_PTXAS ptxas HINTS ${CUDAToolkit_BIN_DIR} /usr/local/cuda/bin)
if(UVMP_PTXAS)
  add_test(NAME replay.kernel_ptx_assembles
    COMMAND ${UVMP_PTXAS} -arch=sm_90 ${PROJECT_BINARY_DIR}/tools/uvmtrace/replay_kernel.ptx -o
            ${CMAKE_CURRENT_BINARY_DIR}/replay_kernel.cubin)
  set_tests_properties(replay.kernel_ptx_assembles PROPERTIES LABELS unit)
endif()

# bench/drivers/replay.py's logic on the fake driver: the runs, the table and the rows for
# bench/device_run.sh (how close the step comes is the GPU run's check, not this one's).
uvmp_integration_checked_test(integration.replay.bench_script
  CHECKS "OUTPUT_MATCHES_1=synthetic-pooled.uvmt +F/1.5 learned +1.00 +[0-9.]+ +[0-9.]+ .* ok"
         "OUTPUT_MATCHES_2=replay synthetic-pooled.uvmt no budget\t[0-9.]+/[0-9.]+ms [0-9.]+x\t1 \\+- 10\tPASS"
  COMMAND sh -c "python3 ${PROJECT_SOURCE_DIR}/bench/drivers/replay.py --uvmtrace ${UVMP_UVMTRACE} \
          --lib $<TARGET_FILE:uvmprefetch> --tolerance 10 --json-out ${CMAKE_CURRENT_BINARY_DIR}/replay-bench.json \
          ${UVMP_REPLAY_TRACES}/synthetic-pooled.uvmt && python3 ${PROJECT_SOURCE_DIR}/bench/drivers/replay.py \
          --rows ${CMAKE_CURRENT_BINARY_DIR}/replay-bench.json")
