#!/usr/bin/env bash
# Installs the dependencies, builds, and runs the main job: on a GPU, the layered
# CUDA example under a budget smaller than its footprint; without one, the offline
# simulator on a bundled trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
build=${UVMP_BUILD_DIR:-build}
if nvidia-smi -L >/dev/null 2>&1 && [ -x "$build/examples/layers_static" ]; then
  "$build/tools/uvmrun/uvmrun" --budget 1G -- "$build/examples/layers_static" --mb 1536
else
  # The GPT-2 trace holds three steps; the learned policy learns in the first ones, so
  # its last step is repeated to show a longer job's steady state. The synthetic trace
  # frees and allocates every step, so it cannot be repeated, and has steps enough.
  trace=examples/traces/gpt2-small-b16.uvmt
  repeat=(--repeat-last 5)
  if [ ! -f "$trace" ]; then
    trace=examples/traces/synthetic.uvmt
    repeat=()
  fi
  "$build/tools/uvmtrace/uvmtrace" info "$trace"
  "$build/tools/uvmtrace/uvmtrace" simulate "$trace" "${repeat[@]}" --sweep --plot "$build/simulate-sweep.svg"
  echo "plot: $build/simulate-sweep.svg"
fi
