// Fault injection (fake_faults.h): the rules, read from FAKECUDA_FAIL at load
// and set by fakecuda_fail_calls, and the check each faultable entry point makes.
#include "fake_faults.h"

#include "fake_state.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace fakecuda {
namespace {

// Rules are never removed, only switched off: readers scan them without a lock.
struct Rule {
    char name[64] = {};
    std::atomic<std::uint64_t> which{0};  // 0: every call
    std::atomic<int> result{CUDA_SUCCESS};  // CUDA_SUCCESS: off
    std::atomic<std::uint64_t> calls{0};  // since the rule was set
    std::atomic<std::uint64_t> failed{0};  // since the fake was loaded
};

constexpr std::size_t kMaxRules = 32;
std::array<Rule, kMaxRules> g_rules;
std::atomic<std::size_t> g_rule_count{0};
std::mutex g_rules_mutex;  // writers only

Rule* find_rule(const char* name, std::size_t count) {
    for (std::size_t i = 0; i < count; ++i)
        if (std::strcmp(g_rules[i].name, name) == 0) return &g_rules[i];
    return nullptr;
}

bool set_rule(const char* name, std::uint64_t which, CUresult result) {
    if (name == nullptr || std::strlen(name) >= sizeof(Rule::name)) return false;
    std::lock_guard lock(g_rules_mutex);
    const std::size_t count = g_rule_count.load(std::memory_order_relaxed);
    Rule* rule = find_rule(name, count);
    if (rule == nullptr) {
        if (count == kMaxRules) return false;
        rule = &g_rules[count];
        std::strcpy(rule->name, name);
        g_rule_count.store(count + 1, std::memory_order_release);
    }
    rule->result.store(CUDA_SUCCESS, std::memory_order_relaxed);
    rule->which.store(which, std::memory_order_relaxed);
    rule->calls.store(0, std::memory_order_relaxed);
    rule->result.store(result, std::memory_order_release);
    return true;
}

// The results a rule may name, as cuda.h spells them.
struct NamedResult {
    const char* name;
    CUresult result;
};
#define FAKECUDA_NAMED_RESULT(code) {#code, code}
constexpr NamedResult kNamedResults[] = {
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_INVALID_VALUE),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_OUT_OF_MEMORY),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_NOT_INITIALIZED),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_INVALID_CONTEXT),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_INVALID_HANDLE),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_NOT_READY),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_NOT_SUPPORTED),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_ECC_UNCORRECTABLE),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_LAUNCH_FAILED),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES),
    FAKECUDA_NAMED_RESULT(CUDA_ERROR_UNKNOWN),
};
#undef FAKECUDA_NAMED_RESULT

std::optional<std::uint64_t> parse_number(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return value;
}

std::optional<CUresult> parse_result(std::string_view text) {
    for (const NamedResult& named : kNamedResults)
        if (text == named.name) return named.result;
    const auto number = parse_number(text);
    if (!number || *number == CUDA_SUCCESS) return std::nullopt;
    return static_cast<CUresult>(*number);
}

// NAME:WHICH:RESULT; false for anything else.
bool apply_rule_text(std::string_view rule) {
    const std::size_t first = rule.find(':');
    const std::size_t second = first == std::string_view::npos ? first : rule.find(':', first + 1);
    if (second == std::string_view::npos) return false;
    const std::string name(rule.substr(0, first));
    const std::string_view which_text = rule.substr(first + 1, second - first - 1);
    const auto result = parse_result(rule.substr(second + 1));
    const auto which = which_text == "*" ? std::optional<std::uint64_t>(0) : parse_number(which_text);
    if (name.empty() || !result || !which || (which_text != "*" && *which == 0)) return false;
    return set_rule(name.c_str(), *which, *result);
}

__attribute__((constructor)) void read_rules_from_environment() {
    const char* text = std::getenv("FAKECUDA_FAIL");
    if (text == nullptr) return;
    std::string_view rules(text);
    while (!rules.empty()) {
        const std::size_t comma = rules.find(',');
        const std::string_view rule = rules.substr(0, comma);
        if (!rule.empty() && !apply_rule_text(rule))
            std::fprintf(stderr, "fakecuda: FAKECUDA_FAIL: cannot use the rule '%.*s' (NAME:N|*:RESULT)\n",
                         static_cast<int>(rule.size()), rule.data());
        rules = comma == std::string_view::npos ? std::string_view() : rules.substr(comma + 1);
    }
}

}  // namespace

CUresult injected_failure(const char* name) {
    const std::size_t count = g_rule_count.load(std::memory_order_acquire);
    if (count == 0) return CUDA_SUCCESS;
    Rule* rule = find_rule(name, count);
    if (rule == nullptr) return CUDA_SUCCESS;
    const auto result = static_cast<CUresult>(rule->result.load(std::memory_order_acquire));
    if (result == CUDA_SUCCESS) return CUDA_SUCCESS;
    const std::uint64_t call = rule->calls.fetch_add(1, std::memory_order_relaxed) + 1;
    const std::uint64_t which = rule->which.load(std::memory_order_relaxed);
    if (which != 0 && call != which) return CUDA_SUCCESS;
    rule->failed.fetch_add(1, std::memory_order_relaxed);
    return result;
}

}  // namespace fakecuda

FAKECUDA_EXPORT int fakecuda_fail_calls(const char* name, uint64_t which, CUresult result) {
    return fakecuda::set_rule(name, which, result) ? 0 : -1;
}

FAKECUDA_EXPORT uint64_t fakecuda_calls_failed(const char* name) {
    if (name == nullptr) return 0;
    const fakecuda::Rule* rule =
        fakecuda::find_rule(name, fakecuda::g_rule_count.load(std::memory_order_acquire));
    return rule == nullptr ? 0 : rule->failed.load(std::memory_order_relaxed);
}
