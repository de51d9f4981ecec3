# uvmtrace simulate --rates: measured link rates drive the simulation and are named in its
# output; a file that lacks a rate stops the command with what is missing.
set(UVMP_H100_RATES ${PROJECT_SOURCE_DIR}/tests/data/h100-link-rates.json)
add_test(NAME "uvmtrace: simulate --rates names the rates it ran with"
         COMMAND uvmtrace simulate ${PROJECT_SOURCE_DIR}/examples/traces/gpt2-small-b16-pooled.uvmt
                 --budget 16G --homes auto --rates ${UVMP_H100_RATES})
set_tests_properties("uvmtrace: simulate --rates names the rates it ran with" PROPERTIES
  LABELS golden
  PASS_REGULAR_EXPRESSION "rates +fetch 38.4, evict 13.5, remote write 38.4, remote read 22.2, memory 3350, populate 38.4 GB/s \\(file, NVIDIA H100")
add_test(NAME "uvmtrace: simulate --json holds the rates and their source"
         COMMAND sh -c "'$<TARGET_FILE:uvmtrace>' simulate '${PROJECT_SOURCE_DIR}/examples/traces/gpt2-small-b16.uvmt' --budget 66% --json --rates '${UVMP_H100_RATES}' && '$<TARGET_FILE:uvmtrace>' simulate '${PROJECT_SOURCE_DIR}/examples/traces/gpt2-small-b16.uvmt' --budget 66% --json")
set_tests_properties("uvmtrace: simulate --json holds the rates and their source" PROPERTIES
  LABELS golden
  PASS_REGULAR_EXPRESSION "\"remote_read_gbps\": 22.2,[^}]*\"source\": \"file\".*\"remote_read_gbps\": 51.2,[^}]*\"source\": \"reference\"")
add_test(NAME "uvmtrace: simulate --rates refuses a file missing a rate"
         COMMAND sh -c "'$<TARGET_FILE:uvmtrace>' simulate '${PROJECT_SOURCE_DIR}/examples/traces/gpt2-small-b16.uvmt' --budget 66% --rates '${PROJECT_SOURCE_DIR}/tests/data/link-rates-missing-evict.json' 2>&1; echo exit=$?")
set_tests_properties("uvmtrace: simulate --rates refuses a file missing a rate" PROPERTIES
  LABELS golden
  PASS_REGULAR_EXPRESSION "missing 'evict_gbps' \\(GB/s\\)[\r\n]+exit=2")
