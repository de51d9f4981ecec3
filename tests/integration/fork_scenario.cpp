#include "fork_scenario.h"

#include "robustness_support.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace uvmp_integration {
namespace {

constexpr int kChildren = 40;
constexpr unsigned kPointers = 16;
// A child that has not ended by then is taken as hung (one that hangs inside
// fork() never gets to set an alarm of its own).
constexpr int kChildSeconds = 10;

// UVMP_TRACE_OUT as the library expands it for process `pid` (%p only: the
// test names no rank).
std::string trace_path_for(int pid) {
    const char* pattern = std::getenv("UVMP_TRACE_OUT");
    std::string path = pattern ? pattern : "";
    for (size_t at = path.find("%p"); at != std::string::npos; at = path.find("%p"))
        path.replace(at, 2, std::to_string(pid));
    return path;
}

bool trace_names_process() {
    const char* pattern = std::getenv("UVMP_TRACE_OUT");
    return pattern && std::strstr(pattern, "%p");
}

// File descriptors of this process open on `path`.
int descriptors_open_on(const std::string& path) {
    char wanted[PATH_MAX];
    if (path.empty() || !realpath(path.c_str(), wanted)) return 0;
    int count = 0;
    DIR* fds = opendir("/proc/self/fd");
    if (!fds) return -1;
    while (dirent* entry = readdir(fds)) {
        const std::string link = std::string("/proc/self/fd/") + entry->d_name;
        char target[PATH_MAX];
        const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = '\0';
        if (std::strcmp(target, wanted) == 0) ++count;
    }
    closedir(fds);
    return count;
}

bool starts_as_trace(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    char magic[7] = {};
    in.read(magic, sizeof magic);
    return in && std::memcmp(magic, "UVMPTRC", sizeof magic) == 0;
}

// Work the parent's other threads do while it forks: allocations of both
// kinds, launches naming many of them, frees, all the time.
void keep_busy(CUfunction kernel, const std::vector<CUdeviceptr>& held, const std::atomic<bool>& stop,
               std::atomic<int>& failures) {
    CUstream stream = nullptr;
    if (cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) ++failures;
    std::vector<CUdeviceptr> memory = held;
    for (unsigned round = 0; !stop.load(std::memory_order_relaxed); ++round) {
        CUdeviceptr fresh = 0;
        const bool ordered = round % 2 == 1;
        const CUresult made = ordered ? cuMemAllocAsync(&fresh, 64 << 10, stream) : cuMemAlloc(&fresh, 64 << 10);
        if (made != CUDA_SUCCESS) {
            ++failures;
            continue;
        }
        memory.push_back(fresh);
        for (int i = 0; i < 4; ++i)
            if (launch_over(kernel, kPointers, memory, stream) != CUDA_SUCCESS) ++failures;
        memory.pop_back();
        if ((ordered ? cuMemFreeAsync(fresh, stream) : cuMemFree(fresh)) != CUDA_SUCCESS) ++failures;
    }
    if (stream && cuStreamSynchronize(stream) != CUDA_SUCCESS) ++failures;
}

// The child's own checks; its exit status says whether they held.
int run_child(int index, bool uses_cuda, CUfunction kernel) {
    alarm(kChildSeconds);
    CheckList checks;
    const std::string who = "child " + std::to_string(index) + ": ";
    const LibraryApi api = find_library_api();
    checks.expect(thread_count() == 1, who + "has no thread but its own after the fork");
    uvmp_stats start = library_stats(api);
    checks.expect(start.allocs_converted == 0 && start.launches_seen == 0 && start.bytes_converted_live == 0,
                  who + "sees none of the parent's work in the library's counters");
    const std::string parent_trace = trace_path_for(getppid());
    const int inherited_on_trace = descriptors_open_on(parent_trace);
    if (!uses_cuda) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        checks.expect(thread_count() == 1, who + "without CUDA, still no thread but its own");
        return checks.failures() == 0 ? 0 : 1;
    }
    std::vector<CUdeviceptr> memory(4);
    bool ok = true;
    for (CUdeviceptr& p : memory) ok = ok && cuMemAlloc(&p, 1 << 20) == CUDA_SUCCESS;
    CUdeviceptr ordered = 0;
    ok = ok && cuMemAllocAsync(&ordered, 1 << 20, nullptr) == CUDA_SUCCESS;
    memory.push_back(ordered);
    for (int i = 0; i < 3; ++i) ok = ok && launch_over(kernel, kPointers, memory) == CUDA_SUCCESS;
    ok = ok && cuMemFreeAsync(ordered, nullptr) == CUDA_SUCCESS;
    memory.pop_back();
    for (CUdeviceptr p : memory) ok = ok && cuMemFree(p) == CUDA_SUCCESS;
    checks.expect(ok, who + "allocates, launches and frees");
    const uvmp_stats end = library_stats(api);
    if (api.present()) {
        checks.expect_eq(who + "converted allocations counted", end.allocs_converted, 5);
        checks.expect_eq(who + "frees counted", end.frees_converted, 5);
        checks.expect_eq(who + "converted bytes live", end.bytes_converted_live, 0);
        checks.expect_eq(who + "launches seen", end.launches_seen, 3);
    }
    if (!trace_names_process())
        checks.expect_eq(who + "opens no trace file of its parent's name", descriptors_open_on(parent_trace),
                         inherited_on_trace);
    return checks.failures() == 0 ? 0 : 1;
}

// The child's exit status, or -1 when it did not end in time (it is killed then).
int wait_for_child(pid_t child) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChildSeconds);
    for (;;) {
        int status = 0;
        const pid_t done = waitpid(child, &status, WNOHANG);
        if (done == child) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (done < 0 || std::chrono::steady_clock::now() > deadline) {
            kill(child, SIGKILL);
            waitpid(child, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

}  // namespace

void run_fork_scenario(CheckList& checks) {
    const LibraryApi api = find_library_api();
    checks.expect(cuInit(0) == CUDA_SUCCESS, "cuInit");
    CUfunction kernel = make_pointer_kernel("fork_kernel", kPointers);
    std::vector<CUdeviceptr> held(8);
    bool ok = true;
    for (CUdeviceptr& p : held) ok = ok && cuMemAlloc(&p, 1 << 20) == CUDA_SUCCESS;
    ok = ok && launch_over(kernel, kPointers, held) == CUDA_SUCCESS;
    checks.expect(ok, "the parent allocates and launches before forking");

    std::atomic<bool> stop{false};
    std::atomic<int> busy_failures{0};
    std::vector<std::thread> busy;
    for (int i = 0; i < 2; ++i)
        busy.emplace_back(keep_busy, kernel, std::cref(held), std::cref(stop), std::ref(busy_failures));

    int hung = 0, failed = 0, traces_missing = 0, traces_unwanted = 0;
    for (int i = 0; i < kChildren; ++i) {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        const bool uses_cuda = i % 2 == 0;
        const pid_t child = fork();
        if (child == 0) std::exit(run_child(i, uses_cuda, kernel));
        if (child < 0) {
            ++failed;
            continue;
        }
        const int status = wait_for_child(child);
        if (status == -1) {
            ++hung;
            break;
        }
        if (status != 0) ++failed;
        if (trace_names_process()) {
            struct stat info{};
            const bool written = stat(trace_path_for(child).c_str(), &info) == 0;
            if (uses_cuda && !(written && starts_as_trace(trace_path_for(child)))) ++traces_missing;
            if (!uses_cuda && written) ++traces_unwanted;
        }
    }
    stop = true;
    for (std::thread& t : busy) t.join();

    checks.expect_eq("children that did not end within " + std::to_string(kChildSeconds) + " s", hung, 0);
    checks.expect_eq("children whose checks failed", failed, 0);
    if (trace_names_process()) {
        checks.expect_eq("children using CUDA without a trace of their own", traces_missing, 0);
        checks.expect_eq("children not using CUDA that wrote a trace", traces_unwanted, 0);
    }
    checks.expect_eq("failed calls on the parent's busy threads", busy_failures.load(), 0);
    ok = launch_over(kernel, kPointers, held) == CUDA_SUCCESS;
    for (CUdeviceptr p : held) ok = ok && cuMemFree(p) == CUDA_SUCCESS;
    checks.expect(ok, "the parent launches and frees after the forks");
    if (api.present()) {
        const uvmp_stats end = library_stats(api);
        checks.expect_eq("the parent's converted bytes live at the end", end.bytes_converted_live, 0);
        checks.expect_eq("the parent's frees match its allocations", end.frees_converted, end.allocs_converted);
    }
}

}  // namespace uvmp_integration
