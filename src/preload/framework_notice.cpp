#include "preload/framework_notice.h"

#include "core/util/log.h"

#include <link.h>

#include <array>
#include <atomic>
#include <cstring>
#include <span>
#include <string_view>

namespace uvmp::preload {
namespace {

// The framework's libraries are loaded long after the library starts (Python
// imports them), so they are looked for at the first stream-ordered allocation,
// which under PyTorch's cudaMallocAsync backend comes from libc10_cuda.so itself.
constexpr std::array<std::string_view, 2> kTorchLibraries = {"libc10_cuda.so", "libtorch_cuda.so"};
constexpr std::array<std::string_view, 2> kTorchVariables = {"PYTORCH_CUDA_ALLOC_CONF=", "PYTORCH_ALLOC_CONF="};

std::string g_setting;
std::atomic<bool> g_pending{false};

// The libraries whose presence says the setting's framework is in the process.
std::span<const std::string_view> framework_libraries(std::string_view setting) {
    for (std::string_view variable : kTorchVariables)
        if (setting.starts_with(variable)) return kTorchLibraries;
    return {};
}

// A loaded object named `wanted`, or a versioned file of it (libc10_cuda.so.2).
bool names_library(const char* path, std::string_view wanted) {
    const char* slash = std::strrchr(path, '/');
    const std::string_view file = slash ? slash + 1 : path;
    return file == wanted || (file.starts_with(wanted) && file[wanted.size()] == '.');
}

int find_loaded(dl_phdr_info* info, size_t, void* data) {
    const auto* wanted = static_cast<std::span<const std::string_view>*>(data);
    if (!info->dlpi_name || !*info->dlpi_name) return 0;
    for (std::string_view name : *wanted)
        if (names_library(info->dlpi_name, name)) return 1;
    return 0;
}

} // namespace

void arm_framework_notice(std::string setting, bool may_print) {
    if (setting.empty() || !may_print) return;
    g_setting = std::move(setting);
    g_pending.store(true, std::memory_order_release);
}

void note_stream_ordered_allocation() {
    if (!g_pending.load(std::memory_order_acquire)) return;
    if (!g_pending.exchange(false, std::memory_order_acq_rel)) return;
    std::span<const std::string_view> libraries = framework_libraries(g_setting);
    if (libraries.empty() || dl_iterate_phdr(&find_loaded, &libraries) == 0) return;
    // torch.compile's CUDA graphs do not run on PyTorch's cudaMallocAsync backend,
    // so uvmrun's sitecustomize takes them out of its modes.
    const bool pytorch = g_setting.starts_with("PYTORCH_");
    log::raw_stderr_line(log::prefix() + "uvmrun set " + g_setting + " so that the library sees every free" +
                         (pytorch ? std::string(", with torch.compile's modes on no CUDA graphs") : std::string()) +
                         " (uvmrun --framework-settings off keeps the framework's own allocator)");
}

} // namespace uvmp::preload
