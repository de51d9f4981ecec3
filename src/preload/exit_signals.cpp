#include "preload/exit_signals.h"

#include "core/util/log.h"
#include "driver/intercept/interceptor.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

// The C library's own entry points, which the exported sigaction and signal
// below stand in front of.
extern "C" int __sigaction(int sig, const struct sigaction* action, struct sigaction* old);
extern "C" sighandler_t bsd_signal(int sig, sighandler_t handler) noexcept;

#define UVMP_UNINSTRUMENTED __attribute__((no_sanitize("thread", "address", "undefined")))

namespace {
// Set once arm_exit_signals has taken SIGINT or SIGTERM over; plain, so that
// the entry points can read it before anything else exists.
bool g_exit_signals_armed = false;
} // namespace

namespace uvmp::preload {
namespace {

// What the program asked for one signal taken over. Written by its sigaction
// calls and read by the handler in any thread: two slots, so that the handler
// never reads one half written.
struct ProgramAction {
    explicit ProgramAction(int signal_number) : sig(signal_number) {}

    const int sig;
    std::atomic<bool> taken_over{false};
    std::atomic<int> current{0};
    struct sigaction slots[2]{};

    struct sigaction get() const { return slots[current.load(std::memory_order_acquire)]; }
    void set(const struct sigaction& action) {
        const int next = 1 - current.load(std::memory_order_relaxed);
        slots[next] = action;
        current.store(next, std::memory_order_release);
    }
};

ProgramAction g_sigint{SIGINT};
ProgramAction g_sigterm{SIGTERM};

ProgramAction* program_action(int sig) {
    if (sig == SIGINT) return &g_sigint;
    if (sig == SIGTERM) return &g_sigterm;
    return nullptr;
}

std::atomic<bool> g_finishing{false};
std::atomic<int> g_pending{0}; // the signal whose exit work is under way
std::atomic<int> g_wake_fd{-1};
std::atomic<int> g_watch_fd{-1};
std::atomic<pid_t> g_watched_pid{0};

bool is_default(const struct sigaction& action) { return action.sa_handler == SIG_DFL; }
bool is_ignored(const struct sigaction& action) { return action.sa_handler == SIG_IGN; }

// Async-signal-safe. Within a handler the signal stays blocked until it
// returns; the default action then ends the process.
void die_of(int sig) {
    struct sigaction fallback{};
    fallback.sa_handler = SIG_DFL;
    __sigaction(sig, &fallback, nullptr);
    sigset_t just_sig;
    sigemptyset(&just_sig);
    sigaddset(&just_sig, sig);
    pthread_sigmask(SIG_UNBLOCK, &just_sig, nullptr);
    raise(sig);
}

// Async-signal-safe: the exit work itself is done by the watcher. A forked
// child (no watcher), a second signal, or a pipe that cannot be written: the
// signal's default action at once.
void start_exit_work(int sig) {
    const int fd = g_wake_fd.load(std::memory_order_acquire);
    if (fd < 0 || getpid() != g_watched_pid.load(std::memory_order_acquire) || g_finishing.exchange(true)) {
        die_of(sig);
        return;
    }
    g_pending.store(sig, std::memory_order_release);
    const char byte = static_cast<char>(sig);
    if (::write(fd, &byte, 1) != 1) die_of(sig);
}

void on_exit_signal(int sig, siginfo_t* info, void* context) {
    ProgramAction* program = program_action(sig);
    if (!program) return;
    struct sigaction wanted = program->get();
    if (is_ignored(wanted)) return;
    if (is_default(wanted)) {
        const int saved_errno = errno;
        start_exit_work(sig);
        errno = saved_errno;
        return;
    }
    if (wanted.sa_flags & SA_RESETHAND) {
        struct sigaction reset = wanted;
        reset.sa_handler = SIG_DFL;
        reset.sa_flags &= ~SA_RESETHAND;
        program->set(reset);
    }
    if (wanted.sa_flags & SA_SIGINFO) wanted.sa_sigaction(sig, info, context);
    else wanted.sa_handler(sig);
}

// Puts the library's handler in the kernel for the program's action (or the
// program's own SIG_IGN, which the kernel honours best itself).
int install_for(int sig, const struct sigaction& program) {
    if (is_ignored(program)) return __sigaction(sig, &program, nullptr);
    struct sigaction ours{};
    ours.sa_sigaction = &on_exit_signal;
    ours.sa_mask = program.sa_mask;
    // The program's flags say whether its system calls restart and on which
    // stack its handler runs; for the default action nothing is interrupted.
    ours.sa_flags = SA_SIGINFO | (is_default(program) ? SA_RESTART
                                                      : program.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER));
    return __sigaction(sig, &ours, nullptr);
}

void finish_library() {
    if (auto* icpt = driver::interceptor()) icpt->finish();
    log::shutdown();
}

void watch(int fd) {
    char byte = 0;
    ssize_t got = 0;
    do got = ::read(fd, &byte, 1);
    while (got < 0 && errno == EINTR);
    if (got != 1) return;
    const int sig = g_pending.load(std::memory_order_acquire);
    finish_library();
    die_of(sig);
}

void start_watcher() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return; // without a watcher a signal kills at once
    // The program's signals go to its own threads, never to this one.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    bool started = true;
    try {
        std::thread([fd = fds[0]] { watch(fd); }).detach();
    } catch (...) {
        started = false;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (!started) {
        ::close(fds[0]);
        ::close(fds[1]);
        return;
    }
    g_watch_fd.store(fds[0], std::memory_order_release);
    g_watched_pid.store(getpid(), std::memory_order_release);
    g_wake_fd.store(fds[1], std::memory_order_release);
}

} // namespace

void arm_exit_signals() {
    start_watcher();
    for (ProgramAction* program : {&g_sigint, &g_sigterm}) {
        struct sigaction current{};
        if (__sigaction(program->sig, nullptr, &current) != 0) continue;
        program->set(current);
        if (install_for(program->sig, current) == 0) program->taken_over.store(true, std::memory_order_release);
    }
    __atomic_store_n(&g_exit_signals_armed, true, __ATOMIC_RELEASE);
}

void exit_signals_after_fork_in_child() {
    // A child that never uses CUDA runs no thread of the library's: it keeps
    // the program's actions, and the default one takes effect at once.
    const int wake = g_wake_fd.exchange(-1);
    if (wake < 0) return;
    ::close(wake);
    ::close(g_watch_fd.exchange(-1));
    g_pending.store(0);
}

void die_of_pending_exit_signal() {
    if (const int sig = g_pending.load(std::memory_order_acquire)) die_of(sig);
}

} // namespace uvmp::preload

namespace uvmp::preload {

// The program's view of SIGINT and SIGTERM once they are taken over: what it
// set is what it reads back, and what its handler is called with.
int program_sigaction(int sig, const struct sigaction* action, struct sigaction* old) {
    ProgramAction* program = program_action(sig);
    if (!program || !program->taken_over.load(std::memory_order_acquire)) return __sigaction(sig, action, old);
    const struct sigaction previous = program->get();
    if (action) {
        program->set(*action);
        if (install_for(sig, *action) != 0) {
            program->set(previous);
            return -1;
        }
    }
    if (old) *old = previous;
    return 0;
}

sighandler_t program_signal(int sig, sighandler_t handler) {
    ProgramAction* program = program_action(sig);
    if (!program || !program->taken_over.load(std::memory_order_acquire)) return bsd_signal(sig, handler);
    // What the C library's signal() asks for: BSD semantics.
    struct sigaction action{};
    struct sigaction old{};
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, sig);
    action.sa_flags = SA_RESTART;
    if (program_sigaction(sig, &action, &old) != 0) return SIG_ERR;
    return old.sa_handler;
}

} // namespace uvmp::preload

// The exported entry points are called by whatever loads first, a sanitizer's
// runtime included, before any constructor of this library has run. Until
// arm_exit_signals they touch nothing but one plain flag, and they carry no
// instrumentation that would need such a runtime initialized.
extern "C" UVMP_UNINSTRUMENTED int sigaction(int sig, const struct sigaction* action,
                                             struct sigaction* old) noexcept {
    if (!__atomic_load_n(&g_exit_signals_armed, __ATOMIC_ACQUIRE)) return __sigaction(sig, action, old);
    return uvmp::preload::program_sigaction(sig, action, old);
}

extern "C" UVMP_UNINSTRUMENTED sighandler_t signal(int sig, sighandler_t handler) noexcept {
    if (!__atomic_load_n(&g_exit_signals_armed, __ATOMIC_ACQUIRE)) return bsd_signal(sig, handler);
    return uvmp::preload::program_signal(sig, handler);
}
