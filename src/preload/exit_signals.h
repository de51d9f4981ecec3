// SIGINT and SIGTERM: a job stopped by either still gets the library's exit work
// (summary, stats file, trace closed whole), and still dies of the signal.
//
// Once the driver is loaded the library's handler stands in the kernel for each
// of the two signals the process does not ignore, and what the program asks
// for (sigaction, signal) is kept aside and honoured by it: the program's own
// handler is called as it would have been, and reading the action back gives
// the program's. Only where the program's action is the default one does the
// library act: its handler wakes a thread, which does the exit work outside
// signal context and then dies of the same signal with the default action, so
// that the exit status still says which signal it was. A second signal while
// that work runs kills at once.
#pragma once

namespace uvmp::preload {

// Takes SIGINT and SIGTERM over as described above. Called once, once the
// driver is loaded (before that the library holds nothing to finish).
void arm_exit_signals();

// In a forked child: the parent's watcher is not there and its pipe must not
// be written from here; the child's default actions take effect at once.
void exit_signals_after_fork_in_child();

// At exit: when a signal's exit work is under way (the program went on to
// exit meanwhile), dies of that signal, as the process would have.
void die_of_pending_exit_signal();

} // namespace uvmp::preload
