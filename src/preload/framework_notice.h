// The one line saying which framework setting uvmrun chose for the job
// (UVMP_FRAMEWORK_SETTINGS), printed only in a process of that framework.
#pragma once

#include <string>

namespace uvmp::preload {

// At library start: the setting to announce (empty: nothing), and whether the
// line may be printed at all (the library is active and logs warnings).
void arm_framework_notice(std::string setting, bool may_print);

// Called by every stream-ordered allocation hook before it forwards. The first
// call looks once for the framework's library among those loaded and prints the
// line if it is there; every later call is one atomic load.
void note_stream_ordered_allocation();

} // namespace uvmp::preload
