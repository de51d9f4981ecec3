// A program that forks while its other threads allocate, free and launch, as a
// data loader's workers are forked from a training process. Each child must run
// to its end in bounded time: half of them use CUDA (allocate, launch, free)
// and must see only their own work in the library's counters, and record their
// own trace where UVMP_TRACE_OUT names the process (%p); the others never touch
// CUDA and must have no thread but their own.
#pragma once

#include "check_list.h"

namespace uvmp_integration {

void run_fork_scenario(CheckList& checks);

}  // namespace uvmp_integration
