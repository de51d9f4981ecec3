#include "tools/uvmrun/framework_settings.h"

#include <array>
#include <cctype>

namespace uvmp::tools {
namespace {

// PyTorch reads the first of these that is set: the older name, read by every
// version, wins over the newer one (read from 2.8 on). A user who set either has
// chosen, so uvmrun then sets neither.
constexpr std::array<std::string_view, 2> kTorchConfNames = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
constexpr std::string_view kTorchConfName = kTorchConfNames[0];

// Each tensor is allocated and freed through cuMemAllocAsync/cuMemFreeAsync,
// which the library serves from its pool: every free is seen.
constexpr std::string_view kTorchAsyncBackend = "backend:cudaMallocAsync";
// The caching allocator, kept convertible: expandable segments map memory with
// cuMemCreate, which cannot become managed memory.
constexpr std::string_view kTorchNoExpandableSegments = "expandable_segments:False";

// PyTorch's tokenizer skips spaces, so "expandable_segments: True" counts too.
bool asks_for_expandable_segments(const std::string& conf) {
    std::string compact;
    for (char c : conf)
        if (!std::isspace(static_cast<unsigned char>(c))) compact += c;
    return compact.find("expandable_segments:True") != std::string::npos;
}

} // namespace

std::optional<FrameworkSettingsMode> parse_framework_settings_mode(std::string_view text) {
    if (text == "auto") return FrameworkSettingsMode::Auto;
    if (text == "off") return FrameworkSettingsMode::Off;
    return std::nullopt;
}

FrameworkPlan plan_framework_settings(FrameworkSettingsMode mode, const EnvironmentLookup& lookup) {
    FrameworkPlan plan;
    for (std::string_view name : kTorchConfNames) {
        const std::string* conf = lookup(std::string(name));
        if (!conf) continue;
        if (asks_for_expandable_segments(*conf))
            plan.warning = std::string(name) + " asks for expandable segments: PyTorch's memory will pass "
                           "through unconverted";
        return plan;
    }
    const std::string_view value = mode == FrameworkSettingsMode::Auto ? kTorchAsyncBackend
                                                                       : kTorchNoExpandableSegments;
    plan.set.push_back({std::string(kTorchConfName), std::string(value)});
    // Only the stream-ordered backend changes what the library sees, so only it is announced.
    if (mode == FrameworkSettingsMode::Auto) {
        plan.announce = std::string(kTorchConfName) + "=" + std::string(value);
        plan.python_site = true;
    }
    return plan;
}

} // namespace uvmp::tools
