#include "check_list.h"

#include <cstdio>

namespace uvmp_integration {

void CheckList::expect(bool ok, const std::string& what) {
    ++checks_;
    if (!ok) ++failures_;
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    std::fflush(stdout);
}

void CheckList::expect_eq(const std::string& what, std::uint64_t got, std::uint64_t want) {
    const bool ok = got == want;
    expect(ok, what + ": got " + std::to_string(got) +
                   (ok ? "" : ", expected " + std::to_string(want)));
}

void CheckList::note(const std::string& text) {
    std::printf("     %s\n", text.c_str());
    std::fflush(stdout);
}

int CheckList::exit_status() const {
    if (failures_ == 0) {
        std::printf("all %d checks passed\n", checks_);
        return 0;
    }
    std::printf("%d of %d checks FAILED\n", failures_, checks_);
    return 1;
}

}  // namespace uvmp_integration
