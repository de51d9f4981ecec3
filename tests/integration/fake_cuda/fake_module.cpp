// Modules loaded from PTX text. The fake compiles nothing: it reads each entry's
// name and parameter list from the PTX, so that its functions describe their
// parameters (cuFuncGetParamInfo) as the real driver's do, and launches of them
// are checked and counted like any other.
#include "fake_state.h"

#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>

using namespace fakecuda;

namespace {

struct Module {
    std::map<std::string, CUfunction> functions;
};

struct ModuleRegistry {
    std::mutex mutex;
    std::map<const void*, std::unique_ptr<Module>> modules;
};

ModuleRegistry& modules() {
    static ModuleRegistry* registry = new ModuleRegistry; // outlives every caller's static destructors
    return *registry;
}

std::size_t bytes_of_type(const std::string& type) {
    const std::string bits = type.substr(2); // ".u64" -> "64"
    return bits == "8" ? 1 : bits == "16" ? 2 : bits == "32" ? 4 : bits == "64" ? 8 : 0;
}

// One kernel per `.entry NAME( params )`; each parameter `.param [.align A] .TYPE NAME[[N]]`
// at the next offset its alignment allows. False when the text has no entry or a
// parameter it cannot read.
bool read_entries(const std::string& ptx, Module& module) {
    static const std::regex entry(R"(\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\))");
    static const std::regex param(R"(\.param\s+(?:\.align\s+(\d+)\s+)?(\.[usbf](?:8|16|32|64))\s+[\w$]+(?:\[(\d+)\])?)");
    for (auto e = std::sregex_iterator(ptx.begin(), ptx.end(), entry); e != std::sregex_iterator(); ++e) {
        const std::string name = (*e)[1];
        const std::string list = (*e)[2];
        std::vector<std::size_t> offsets, sizes;
        std::size_t at = 0;
        for (auto p = std::sregex_iterator(list.begin(), list.end(), param); p != std::sregex_iterator(); ++p) {
            const std::size_t element = bytes_of_type((*p)[2]);
            if (element == 0) return false;
            const std::size_t align = (*p)[1].matched ? std::stoul((*p)[1]) : element;
            const std::size_t count = (*p)[3].matched ? std::stoul((*p)[3]) : 1;
            at = (at + align - 1) / align * align;
            offsets.push_back(at);
            sizes.push_back(element * count);
            at += element * count;
        }
        Kernel* kernel = make_kernel(name.c_str(), static_cast<unsigned>(offsets.size()), offsets.data(),
                                     sizes.data(), false);
        if (kernel == nullptr) return false;
        module.functions[name] = reinterpret_cast<CUfunction>(kernel);
    }
    return !module.functions.empty();
}

}  // namespace

FAKECUDA_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    auto loaded = std::make_unique<Module>();
    if (!read_entries(static_cast<const char*>(image), *loaded)) return CUDA_ERROR_INVALID_PTX;
    std::lock_guard lock(modules().mutex);
    *module = reinterpret_cast<CUmodule>(loaded.get());
    modules().modules.emplace(loaded.get(), std::move(loaded));
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (function == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(modules().mutex);
    auto it = modules().modules.find(module);
    if (it == modules().modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    auto found = it->second->functions.find(name);
    if (found == it->second->functions.end()) return CUDA_ERROR_NOT_FOUND;
    *function = found->second;
    return CUDA_SUCCESS;
}

FAKECUDA_EXPORT CUresult cuModuleUnload(CUmodule module) {
    std::lock_guard lock(modules().mutex);
    auto it = modules().modules.find(module);
    if (it == modules().modules.end()) return CUDA_ERROR_INVALID_HANDLE;
    for (const auto& [name, function] : it->second->functions) retire_kernel(function);
    modules().modules.erase(it);
    return CUDA_SUCCESS;
}
