# The link rates a job runs with (src/driver/rates): under a budget the first
# run probes the device and keeps the rates in the cache, the next reads them
# from it and probes nothing, UVMP_RATES=reference never probes, and a rates
# file that cannot be read is said in one line while the job runs on.
#
#   cmake -DPROGRAM=... -DPRELOAD=... -DCACHE_DIR=... -P rates_check.cmake
# The fake driver times every span at FAKECUDA_EVENT_MS, so that the probe runs.

file(REMOVE_RECURSE "${CACHE_DIR}")
file(MAKE_DIRECTORY "${CACHE_DIR}")
set(failures)

# Runs the job with the settings given; its stdout and stderr in `output_var`.
# The scenario checks that every managed allocation the driver made is one of
# the pool's slabs; the probe's buffer is one more, made and freed, so a run
# that probes fails exactly those two checks, and no other.
function(run_job label probes output_var)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${PRELOAD} UVMP_CACHE_DIR=${CACHE_DIR} FAKECUDA_EVENT_MS=1
            UVMP_POLICY=none UVMP_BUDGET=4M UVMP_LOG_LEVEL=info UVMP_SUMMARY=1 ${ARGN} ${PROGRAM} dlsym converted
    RESULT_VARIABLE status OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  message("--- ${label} ---\n${stdout}${stderr}")
  if(probes)
    if(NOT status EQUAL 1 OR NOT stdout MATCHES "\n2 of [0-9]+ checks FAILED"
       OR NOT stdout MATCHES "FAIL stats.pool_slabs_created: got 1, expected 2"
       OR NOT stdout MATCHES "FAIL stats.pool_slabs_released \\(trimmed\\): got 1, expected 2")
      set(failures "${failures};${label}: the job's checks failed other than by the probe's one buffer" PARENT_SCOPE)
    endif()
  elseif(NOT status EQUAL 0)
    set(failures "${failures};${label}: exit status ${status}" PARENT_SCOPE)
  endif()
  set(${output_var} "${stdout}${stderr}" PARENT_SCOPE)
endfunction()

function(expect label text pattern)
  if(NOT text MATCHES "${pattern}")
    set(failures "${failures};${label}: no line matches '${pattern}'" PARENT_SCOPE)
  endif()
endfunction()

function(expect_not label text pattern)
  if(text MATCHES "${pattern}")
    set(failures "${failures};${label}: a line matches '${pattern}'" PARENT_SCOPE)
  endif()
endfunction()

run_job("first run" TRUE first)
expect("first run" "${first}" "link probed in [0-9]+ ms, kept in")
expect("first run" "${first}" "device 0 link rates: fetch [0-9.]+, .*\\(probe")
file(GLOB cached "${CACHE_DIR}/*.json")
list(LENGTH cached cached_count)
if(NOT cached_count EQUAL 1)
  list(APPEND failures "first run: ${cached_count} files in the cache, expected 1")
endif()

run_job("second run" FALSE second)
expect("second run" "${second}" "device 0: link rates fetch [0-9.]+, .*\\(cache")
expect_not("second run" "${second}" "probing the link|link probed")

run_job("reference" FALSE reference UVMP_RATES=reference)
expect("reference" "${reference}" "device 0: link rates fetch 49, .*\\(reference")
expect_not("reference" "${reference}" "probing the link|link probed|cannot be probed")

run_job("bad file" FALSE bad UVMP_RATES=${CACHE_DIR}/no-such-rates.json)
expect("bad file" "${bad}" "UVMP_RATES: .*no-such-rates.json.*; the job runs on the reference rates")
expect_not("bad file" "${bad}" "probing the link|link probed")

if(failures)
  string(REPLACE ";" "\n  " failure_text "${failures}")
  message(FATAL_ERROR "check failed:${failure_text}")
endif()
