#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs every test. Tests that
# need a GPU skip themselves where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir "${UVMP_BUILD_DIR:-build}" --output-on-failure -j"$(nproc)"
