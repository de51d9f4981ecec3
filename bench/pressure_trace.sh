#!/usr/bin/env bash
# One PyTorch job under a budget, recorded: the trace carries the library's moves
# and, with UVMP_TRACE_TIMING=1, every kernel's duration including the time it
# stalled on faults, so that `uvmtrace` can show where a step's time went.
# Also records the same job unpressured (policy none, no eviction), the input
# the simulator needs. Traces are compressed with zstd when it is there.
# Usage: OUT=dir bench/pressure_trace.sh BUILD [WORKLOAD] [BUDGET] [POLICIES]
#   WORKLOAD: gpt2-small (default) or resnet50; BUDGET: default 16G;
#   POLICIES: comma-separated, default learned; an empty one records the unpressured run only
set -u -o pipefail
REPO_ROOT=${REPO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=$(cd "${1:?usage: bench/pressure_trace.sh BUILD [WORKLOAD] [BUDGET] [POLICIES]}" && pwd) || exit 2
WORKLOAD=${2:-gpt2-small}
BUDGET=${3:-16G}
POLICIES=${4-learned}
OUT=${OUT:?set OUT to the folder for traces and logs}
PYTHON=${PYTHON:-python3}
STEPS=${STEPS:-5}
WARMUP=${WARMUP:-2}
case $WORKLOAD in
gpt2-small) model=(--model gpt2-small --batch 16 --seq 1024) ;;
resnet50) model=(--model resnet50 --batch 256) ;;
*) echo "pressure_trace.sh: unknown workload $WORKLOAD (gpt2-small or resnet50)" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
job=("$PYTHON" "$REPO_ROOT/examples/train_workload.py" "${model[@]}" --steps "$((STEPS + WARMUP))"
     --warmup "$WARMUP" --mark-iterations --deterministic)
status=0
run() { # name, uvmrun arguments...
    local name=$1; shift
    UVMP_TRACE_TIMING=1 UVMP_LIBRARY="$BUILD/src/preload/libuvmprefetch.so" timeout 240 \
        "$BUILD/tools/uvmrun/uvmrun" --stats-file "$OUT/$name.stats.json" --trace-out "$OUT/$name.uvmt" "$@" -- "${job[@]}" >"$OUT/$name.log" 2>&1
    local rc=$?
    grep -h '^SUMMARY' "$OUT/$name.log" | cut -c1-400
    echo "$name: exit $rc"
    [[ $rc == 0 ]] || status=1
    if command -v zstd >/dev/null; then zstd -q -f --rm -19 "$OUT/$name.uvmt" 2>/dev/null; fi
}
run "$WORKLOAD-record" --policy none --budget 64G
IFS=, read -r -a policies <<<"$POLICIES"
for policy in "${policies[@]}"; do run "$WORKLOAD-$policy-$BUDGET" --policy "$policy" --budget "$BUDGET"; done
ls -la "$OUT"
exit $status
