# Writes the replay kernel's PTX module (one entry for each number of accesses a
# launch may pass) into the build tree, and a source file that embeds it in
# uvmtrace together with the entries' names. Hand-written PTX: the build needs no
# CUDA compiler, and the driver compiles the module for whatever GPU it runs on.
set(UVMTRACE_REPLAY_SLOTS 16 255 2046)

set(module_template ${CMAKE_CURRENT_SOURCE_DIR}/replay_kernel.ptx.in)
set(entry_template ${CMAKE_CURRENT_SOURCE_DIR}/replay_kernel_entry.ptx.in)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${module_template} ${entry_template})
file(READ ${module_template} UVMTRACE_REPLAY_PTX)
file(READ ${entry_template} entry_text)

set(entries "")
set(entry_table "")
foreach(slots IN LISTS UVMTRACE_REPLAY_SLOTS)
  set(name uvmp_replay_touch_${slots})
  math(EXPR param_bytes "16 + 16 * ${slots}")
  string(REPLACE "@ENTRY@" "${name}" entry "${entry_text}")
  string(REPLACE "@PARAM_BYTES@" "${param_bytes}" entry "${entry}")
  string(APPEND entries "${entry}")
  string(APPEND entry_table "    {\"${name}\", ${slots}},\n")
endforeach()
string(REPLACE "@ENTRY_DEFINITIONS@" "${entries}" UVMTRACE_REPLAY_PTX "${UVMTRACE_REPLAY_PTX}")

set(UVMTRACE_REPLAY_PTX_FILE ${CMAKE_CURRENT_BINARY_DIR}/replay_kernel.ptx)
file(CONFIGURE OUTPUT ${UVMTRACE_REPLAY_PTX_FILE} CONTENT "@UVMTRACE_REPLAY_PTX@" @ONLY)
set(UVMTRACE_REPLAY_ENTRY_TABLE "${entry_table}")
set(UVMTRACE_REPLAY_EMBEDDED ${CMAKE_CURRENT_BINARY_DIR}/replay_kernel_embedded.cpp)
file(CONFIGURE OUTPUT ${UVMTRACE_REPLAY_EMBEDDED} CONTENT [=[
// Generated from replay_kernel.ptx.in and replay_kernel_entry.ptx.in by replay_kernel.cmake.
#include "replay_kernel.h"

#include <iterator>

namespace uvmp::tools {
namespace {

const ReplayKernelEntry kEntries[] = {
@UVMTRACE_REPLAY_ENTRY_TABLE@};

const char kModule[] = R"uvmp_ptx(@UVMTRACE_REPLAY_PTX@)uvmp_ptx";

} // namespace

std::span<const ReplayKernelEntry> replay_kernel_entries() { return {kEntries, std::size(kEntries)}; }

const char* replay_kernel_ptx() { return kModule; }

} // namespace uvmp::tools
]=] @ONLY)
