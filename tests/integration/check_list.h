// Prints one line per expectation and remembers whether any failed, so that a
// test run shows every broken expectation at once rather than only the first.
#pragma once

#include <cstdint>
#include <string>

namespace uvmp_integration {

class CheckList {
public:
    void expect(bool ok, const std::string& what);
    void expect_eq(const std::string& what, std::uint64_t got, std::uint64_t want);
    void note(const std::string& text);
    int failures() const { return failures_; }
    // 0 when every expectation held, 1 otherwise; also prints a closing line.
    int exit_status() const;

private:
    int checks_ = 0;
    int failures_ = 0;
};

}  // namespace uvmp_integration
