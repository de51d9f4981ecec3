# docs/configuration.md must be exactly what the option table generates.
execute_process(COMMAND ${UVMRUN} --print-options-markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "uvmrun --print-options-markdown failed (${rc})")
endif()
file(READ ${DOC} written)
if(NOT generated STREQUAL written)
  message(FATAL_ERROR "docs/configuration.md is out of date with the option table; regenerate it: uvmrun --print-options-markdown > docs/configuration.md")
endif()
