#!/usr/bin/env bash
# One GPU call for the machine's own rates and the defaults that must not break a program:
#  1. the library's link-rate probe, twice (`uvmrun --probe-rates` always measures; a job
#     under a budget reads the cache it writes, as step 3's stats files show) beside the
#     stand-alone link probe of bench/probes/link_probe.cu, in the same call;
#  2. torch.compile in each mode (default, reduce-overhead, max-autotune) natively and under
#     plain `uvmrun`, losses compared;
#  3. GPT-2 small (batch 16, deterministic) natively, then at peak/1.5 under the default with
#     the rates measured here and with the reference rates (UVMP_RATES=reference): median of
#     the last 6 of 14 steps, losses against native.
# Prints one table last; logs and stats files go to $OUT.
# Usage (repository root): OUT=DIR bench/rates_check.sh BUILD_DIR
set -u -o pipefail
BUILD=$(cd "$1" && pwd)
OUT=${OUT:-$PWD/rates-out}
PYTHON=${PYTHON:-python3}
UVMRUN=$BUILD/tools/uvmrun/uvmrun
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$OUT"
ROWS=()
row() { ROWS+=("$(printf '%-58s %s' "$1" "$2")"); }

nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv | tee "$OUT/gpu.txt"

# 1. Rates.
timeout 120 "$BUILD/bench/link_probe" 2048 >"$OUT/link_probe.txt" 2>&1
row "link_probe 2048 MiB (fetch/evict/remote w/r GB/s)" \
    "$("$PYTHON" -c 'import json,sys; j=json.loads([l for l in open(sys.argv[1]) if l.startswith("{")][-1]); print(j["h2d_gbps"], j["d2h_gbps"], j["remote_write_gbps"], j["remote_read_gbps"])' "$OUT/link_probe.txt" 2>/dev/null || echo failed)"
export UVMP_CACHE_DIR=$OUT/cache
rm -rf "$UVMP_CACHE_DIR"
for attempt in first second; do
    start=$(date +%s%N)
    timeout 60 "$UVMRUN" --probe-rates >"$OUT/probe-$attempt.json" 2>"$OUT/probe-$attempt.err"
    status=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    row "library probe, $attempt run (exit, wall ms of uvmrun)" "$status, $ms"
    row "  rates" "$("$PYTHON" -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j.get("source"), j["fetch_gbps"], j["evict_gbps"], j["remote_write_gbps"], j["remote_read_gbps"], j["memory_gbps"])' "$OUT/probe-$attempt.json" 2>/dev/null || echo failed)"
done

# 2. torch.compile modes.
for mode in default reduce-overhead max-autotune; do
    for how in native uvmrun; do
        command=("$PYTHON" "$HERE/drivers/compat/torch_compile_modes.py" --mode "$mode")
        [[ $how == uvmrun ]] && command=("$UVMRUN" -- "${command[@]}")
        timeout 240 "${command[@]}" >"$OUT/compile-$mode-$how.log" 2>&1
        echo "exit $?" >>"$OUT/compile-$mode-$how.log"
    done
    verdict=$("$PYTHON" - "$OUT/compile-$mode-native.log" "$OUT/compile-$mode-uvmrun.log" <<'PYEOF'
import json, sys
def losses(path):
    lines = [l for l in open(path) if l.startswith("RESULT ")]
    return json.loads(lines[-1][7:])["losses"] if lines else None
a, b = (losses(p) for p in sys.argv[1:])
print("native failed" if a is None else "uvmrun failed" if b is None else
      "same losses" if a == b else "LOSSES DIFFER")
PYEOF
)
    row "torch.compile mode=$mode, plain uvmrun vs native" "$verdict"
done

# 3. GPT-2 small at peak/1.5.
job=("$PYTHON" "$(cd "$HERE/.." && pwd)/examples/train_workload.py" --model gpt2-small --batch 16 --steps 14 --warmup 8 --deterministic)
timeout 120 "${job[@]}" >"$OUT/gpt2-native.log" 2>&1
peak=$("$PYTHON" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().split("SUMMARY ",1)[1])["peak_allocated_bytes"])' "$OUT/gpt2-native.log" 2>/dev/null || echo 0)
budget_mib=$((peak * 2 / 3 / 1048576))
for rates in auto reference; do
    UVMP_RATES=$rates timeout 200 "$UVMRUN" --budget "${budget_mib}M" --stats-file "$OUT/gpt2-$rates-stats.json" \
        -- "${job[@]}" >"$OUT/gpt2-$rates.log" 2>&1
done
"$PYTHON" - "$OUT" "$budget_mib" >"$OUT/gpt2-table.txt" <<'PYEOF'
import json, statistics, sys
out, budget = sys.argv[1], sys.argv[2]
def summary(name):
    try:
        return json.loads(open(f"{out}/gpt2-{name}.log").read().split("SUMMARY ", 1)[1].splitlines()[0])
    except Exception:
        return None
native = summary("native")
for name in ("native", "auto", "reference"):
    s = summary(name)
    if not s:
        print(f"GPT-2 small, {name}: failed")
        continue
    last6 = statistics.median(s["step_ms"][-6:])
    same = "" if name == "native" else (", losses identical" if native and s["losses"] == native["losses"] else ", LOSSES DIFFER")
    print(f"GPT-2 small bs16 {'native' if name == 'native' else f'budget {budget}M, UVMP_RATES={name}'}: "
          f"median of last 6 {last6:.1f} ms (steps {s['step_ms']}){same}")
PYEOF
while IFS= read -r line; do ROWS+=("$line"); done <"$OUT/gpt2-table.txt"

echo
echo "=================== RESULTS ==================="
printf '%s\n' "${ROWS[@]}"
