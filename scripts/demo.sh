#!/usr/bin/env bash
# Installs the dependencies, builds, and shows what the library does by default.
# With a GPU and PyTorch: a GPT-2 training job natively, then under `uvmrun --budget`
# below its footprint (deterministic kernels), both steps' times and losses side by side (the layered CUDA
# example under a budget where PyTorch is missing). Without a GPU: `uvmtrace info` and a
# sweep of step time against budget on the bundled pooled GPT-2 trace, the library's
# default (host homes and step layout chosen at each budget) one of its lines.
set -euo pipefail
cd "$(dirname "$0")/.."
# UVMP_PREBUILT=1 uses the build in UVMP_BUILD_DIR as it is (a machine without the
# build's dependencies, given binaries built elsewhere).
[ "${UVMP_PREBUILT:-0}" = 1 ] || bash scripts/build.sh
build=${UVMP_BUILD_DIR:-build}
uvmrun=$build/tools/uvmrun/uvmrun
uvmtrace=$build/tools/uvmtrace/uvmtrace

has_gpu() { nvidia-smi -L >/dev/null 2>&1; }
has_torch_gpu() { python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' >/dev/null 2>&1; }

# The SUMMARY line of examples/train_workload.py: a field, or the step times and losses.
summary_field() { python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).read().split("SUMMARY ", 1)[1])[sys.argv[2]])' "$@"; }
summary_line() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
summary = json.loads(open(sys.argv[2]).read().split("SUMMARY ", 1)[1])
print(f"{sys.argv[1]:<28} median step {summary['median_ms']:8.1f} ms   steps (ms) {summary['step_ms']}")
print(f"{'':<28} losses {[round(loss, 4) for loss in summary['losses']]}")
EOF
}

model_under_budget() {
  local out=$build/demo-model
  mkdir -p "$out"
  local job=(python3 examples/train_workload.py --model gpt2-small --batch 16 --steps 8 --warmup 2 --deterministic)
  echo "== native: ${job[*]}"
  "${job[@]}" >"$out/native.log"
  # Two thirds of what the native step held at its peak: the job no longer fits.
  local peak budget_mib
  peak=$(summary_field "$out/native.log" peak_allocated_bytes)
  budget_mib=$((peak * 2 / 3 / 1048576))
  echo "== under uvmrun --budget ${budget_mib}M (native peak $((peak / 1048576)) MiB)"
  "$uvmrun" --budget "${budget_mib}M" -- "${job[@]}" >"$out/budget.log"
  summary_line "native" "$out/native.log"
  summary_line "uvmrun --budget ${budget_mib}M" "$out/budget.log"
  # Deterministic kernels: the library must leave every loss as it was, to the bit.
  python3 - "$out/native.log" "$out/budget.log" <<'EOF'
import json, sys
losses = [json.loads(open(f).read().split("SUMMARY ", 1)[1])["losses"] for f in sys.argv[1:]]
print("losses identical to native" if losses[0] == losses[1] else "LOSSES DIFFER from native")
sys.exit(losses[0] != losses[1])
EOF
}

if has_gpu && has_torch_gpu; then
  model_under_budget
elif has_gpu && [ -x "$build/examples/layers_static" ]; then
  "$uvmrun" --budget 1G -- "$build/examples/layers_static" --mb 1536
else
  # Six recorded steps of GPT-2 with the pool: the learned policy learns in the first
  # ones, and the default's homes and layout are chosen on them as the library would.
  trace=examples/traces/gpt2-small-b16-pooled-6steps.uvmt.zst
  plot=$build/demo-sweep.svg
  "$uvmtrace" info "$trace"
  "$uvmtrace" simulate "$trace" --sweep --homes auto --placement auto --plot "$plot"
fi
