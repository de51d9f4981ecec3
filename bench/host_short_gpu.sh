#!/usr/bin/env bash
# Host memory running short on a real GPU. GPT-2 small (bs16, deterministic) trains natively,
# then under `uvmrun --budget BUDGET` with the host-memory reserve raised so that only ROOM of
# the host's available memory is left to the job (the same as a lowered cgroup limit, seen by the
# library through the same reading). Host homes and evictions want more than ROOM, so the library
# must say once that host memory is short, fall back to GPU homes and pages left on the GPU, and
# the job must finish with native's losses.
# Usage: bench/host_short_gpu.sh BUILD OUT [ROOM (default 4G)] [BUDGET (default 16G)]
# PYTHON picks the interpreter. Prints one line, `host memory short: PASS (...)` or
# `host memory short: FAIL: why`; exit status 0 on PASS.
set -u
# The physical guard stays on: the job never asks for more managed memory than the GPU has free.
unset UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION
build=$1 out=$2 room=${3:-4G} budget=${4:-16G}
python=${PYTHON:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$out"
job=("$python" "$here/../examples/train_workload.py" --model gpt2-small --batch 16 --seq 1024 --steps 12 --warmup 8
     --deterministic)

to_bytes() { numfmt --from=iec "$1"; }
available_kib=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)
reserve=$(( available_kib * 1024 - $(to_bytes "$room") ))
if [ "$reserve" -le 0 ]; then
    echo "host memory short: FAIL: the host has less than $room available"; exit 1
fi

PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "${job[@]}" >"$out/native.out" 2>"$out/native.err"
native_rc=$?
UVMP_HOST_RESERVE=$reserve "$build/tools/uvmrun/uvmrun" --budget "$budget" --stats-file "$out/stats.json" \
    -- "${job[@]}" >"$out/short.out" 2>"$out/short.err"
short_rc=$?

"$python" - "$out" "$native_rc" "$short_rc" "$reserve" <<'EOF'
import json, sys
out, native_rc, short_rc, reserve = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def summary(name):
    for line in open(f"{out}/{name}.out"):
        if line.startswith("SUMMARY "):
            return json.loads(line[len("SUMMARY "):])
    return None
native, short = summary("native"), summary("short")
err = open(f"{out}/short.err").read()
warned = err.count("host memory short (")
try:
    host = json.load(open(f"{out}/stats.json"))["host_memory"]
except (OSError, ValueError, KeyError):
    host = None
G = 1 << 30
why = []
if native_rc or not native: why.append(f"native run failed (exit {native_rc})")
if short_rc or not short: why.append(f"run under the budget failed (exit {short_rc})")
if warned != 1: why.append(f"{warned} 'host memory short' lines on stderr, not 1")
if not host or not host.get("short"): why.append("the stats file does not say host memory was short")
if native and short and native["losses"] != short["losses"]: why.append("losses differ from native")
if why:
    print("host memory short: FAIL: " + "; ".join(why))
    sys.exit(1)
print(f"host memory short: PASS (reserve {reserve / G:.1f} GiB; host slabs peak {host['host_slab_bytes_peak'] / G:.2f} GiB, "
      f"{host['host_slabs_refused']} refused ({host['host_slab_bytes_refused'] / G:.2f} GiB), "
      f"{host['evictions_not_made']} evictions not made ({host['eviction_bytes_not_made'] / G:.2f} GiB); "
      f"step median {short['median_ms']:.1f} ms against {native['median_ms']:.1f} natively; "
      f"{len(short['losses'])} losses identical)")
EOF
