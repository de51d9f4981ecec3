# Runs a command and checks its exit status and output, for tests that need more
# than CTest's pass/fail regular expressions.
#
#   cmake [-DEXIT_CODE=N] [-DOUTPUT_MATCHES_1=RE] [-DOUTPUT_MATCHES_2=RE] ... (up to _6)
#         [-DSTDERR_LINES_MATCHING=RE -DSTDERR_LINE_COUNT=N]
#         -P check_command.cmake -- COMMAND [ARG...]
#
# EXIT_CODE defaults to 0. Each OUTPUT_MATCHES_n must match stdout or stderr.
# STDERR_LINE_COUNT is the exact number of stderr lines that STDERR_LINES_MATCHING
# must match. Environment for the command is best given with `env VAR=value`
# in COMMAND, so that it reaches only the command and not this script's cmake.

set(command)
set(after_separator FALSE)
math(EXPR last_index "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last_index})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator TRUE)
  endif()
endforeach()
if(NOT command)
  message(FATAL_ERROR "check_command.cmake: no command given after --")
endif()
if(NOT DEFINED EXIT_CODE)
  set(EXIT_CODE 0)
endif()

execute_process(COMMAND ${command}
  RESULT_VARIABLE exit_code
  OUTPUT_VARIABLE stdout
  ERROR_VARIABLE stderr)

string(REPLACE ";" " " command_text "${command}")
set(failures)
if(NOT exit_code STREQUAL EXIT_CODE)
  list(APPEND failures "exit status ${exit_code}, expected ${EXIT_CODE}")
endif()
foreach(n RANGE 1 6)
  if(DEFINED OUTPUT_MATCHES_${n})
    if(NOT stdout MATCHES "${OUTPUT_MATCHES_${n}}" AND NOT stderr MATCHES "${OUTPUT_MATCHES_${n}}")
      list(APPEND failures "no output matches '${OUTPUT_MATCHES_${n}}'")
    endif()
  endif()
endforeach()
if(DEFINED STDERR_LINES_MATCHING)
  string(REGEX REPLACE "\r?\n$" "" stderr_trimmed "${stderr}")
  # Brackets and semicolons would split or merge list items; neutralise them first.
  string(REPLACE ";" "," stderr_trimmed "${stderr_trimmed}")
  string(REPLACE "[" "(" stderr_trimmed "${stderr_trimmed}")
  string(REPLACE "]" ")" stderr_trimmed "${stderr_trimmed}")
  string(REPLACE "\n" ";" stderr_lines "${stderr_trimmed}")
  set(matching 0)
  foreach(line IN LISTS stderr_lines)
    if(line MATCHES "${STDERR_LINES_MATCHING}")
      math(EXPR matching "${matching} + 1")
    endif()
  endforeach()
  if(NOT matching EQUAL STDERR_LINE_COUNT)
    list(APPEND failures
      "${matching} stderr lines match '${STDERR_LINES_MATCHING}', expected ${STDERR_LINE_COUNT}")
  endif()
endif()

message("command: ${command_text}\n--- stdout ---\n${stdout}--- stderr ---\n${stderr}--- exit status ${exit_code}")
if(failures)
  string(REPLACE ";" "\n  " failure_text "${failures}")
  message(FATAL_ERROR "check failed:\n  ${failure_text}")
endif()
