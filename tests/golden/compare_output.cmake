# Runs COMMAND (arguments joined by '|'), saves its standard output to ACTUAL and compares it
# with EXPECTED byte for byte.
string(REPLACE "|" ";" COMMAND "${COMMAND}")
execute_process(COMMAND ${COMMAND}
                OUTPUT_FILE ${ACTUAL}
                ERROR_VARIABLE errors
                RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "command failed (${status}): ${COMMAND}\n${errors}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${EXPECTED} ${ACTUAL} RESULT_VARIABLE differ)
if(NOT differ EQUAL 0)
  execute_process(COMMAND diff -u ${EXPECTED} ${ACTUAL})
  string(REPLACE ";" " " shown "${COMMAND}")
  message(FATAL_ERROR "output differs from ${EXPECTED}\n"
                      "if the change is intended: ${shown} > ${EXPECTED}\n"
                      "(tests/golden/regenerate.sh rewrites every expected file)")
endif()
