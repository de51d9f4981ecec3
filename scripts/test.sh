#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs every test. Tests that
# need a GPU skip themselves where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${UVMP_BUILD_DIR:-build}
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"

# The stress and fault-injection tests (label sanitize) again under ThreadSanitizer
# and under AddressSanitizer with UndefinedBehaviorSanitizer. Only what they run is
# built: the library, the fake driver and the test program, without link-time
# optimization or the CUDA examples.
for sanitizer in thread address,undefined; do
  dir=$build-$([[ $sanitizer == thread ]] && echo tsan || echo asan)
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DUVMP_SANITIZE="$sanitizer" -DUVMP_LTO=OFF \
        -DUVMP_BUILD_CUDA_EXAMPLES=OFF > /dev/null
  cmake --build "$dir" -j"$(nproc)" --target uvmprefetch uvmp_fake_cuda robustness_test
  ctest --test-dir "$dir" -L sanitize --output-on-failure -j"$(nproc)"
done
