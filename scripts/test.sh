#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs every test. Tests that
# need a GPU skip themselves where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
build=${UVMP_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j"$(nproc)"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
