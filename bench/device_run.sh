#!/usr/bin/env bash
# The whole GPU run in one script: GPU tests, benchmarks and one result table.
#
# Usage (from the repository root): OUT=DIR bench/device_run.sh [BUILD_DIR]
#   BUILD_DIR  a build directory that already holds the library, uvmrun, uvmtrace, the
#              CUDA examples and the bench programs (default build-dev)
#   OUT        where results go (default ./device-out): device.log (everything printed),
#              overhead.json, probe.json, summary.json
#   PROBE=1    also run the probes first, with any ONLY as well: wait-or-fault (data needed
#              now: fault, prefetch and wait, or both), populate (fresh managed memory placed
#              three ways), slab free (giving a managed slab back against evicting it), host
#              home (a new host home's first write against its pages made ahead) and pinned home
#              (pinned host memory made ahead, and what launches beside its making wait): probe.json,
#              slab_free.json, host_home.json, pinned_home.json (host home also: its pages made
#              by host threads touching or populating them, and the launches beside them)
#   TRACES=1   also record the bundled example traces (resnet50 b256, GPT-2 small b16) with
#              kernel timing into $OUT, and run uvmtrace info on each
#   OVERSUB=1  also run the oversubscription benchmark (bench/drivers/oversubscription.py) last:
#              $OUT/oversub.json and $OUT/oversub.md; OVERSUB_WORKLOADS picks its workloads,
#              OVERSUB_DIVISORS its budgets (footprint / divisor, default 1.5,2)
#              (default layers,resnet50,gpt2-small)
#   OVERSUB_NO_CACHE=1  the oversubscription benchmark's Python workloads run without
#              PyTorch's caching allocator: every step allocates its tensors anew
#   POOL=1     also run the managed-pool benchmark (bench/drivers/pool_frees.py) last: PyTorch with
#              backend:cudaMallocAsync natively, under uvmrun's defaults and a budget above the
#              footprint, and GPT-2 small at POOL_BUDGET (default 16G) under uvmrun's defaults
#              (homes learned in the run), learned and demand-lru (migration only) and PyTorch's
#              save_on_cpu, against the link's floor and uvmtrace simulate's prediction: $OUT/pool.json,
#              $OUT/pool.md, the runs' logs, stats files and trace in $OUT/pool-runs;
#              POOL_ROUNDS rounds of the unpressured modes (default 3); POOL_ARGS, words added
#              last to its command line, override its defaults (the issue's pressure runs:
#              POOL_ARGS="--rounds 1 --workloads none --pressure-workload gpt2-small
#              --pressure-budget peak/1.5 --pressure-policies default,demand-lru,save-on-cpu
#              --record-steps 8 --pressure-warmup 10")
#   ONLY=oversub  run only the oversubscription benchmark: no GPU tests, no overhead
#              benchmark (the GPU and build checks still come first)
#              (more: --pressure-policies ...,offload adds the overlapped activation offload under
#              the same cap; --workloads/--pressure-workload bert-large the transformer encoder)
#   ONLY=pool  run only the managed-pool benchmark (the GPU and build checks still come first)
#   ONLY=infer run only the inference benchmark (bench/drivers/inference.py): greedy generation
#              with a 3 B decoder natively (twice), under uvmrun without and with a budget above the
#              footprint, and at weights/1.25 and weights/2 under uvmrun's defaults, demand-lru and
#              accelerate's offloading: $OUT/infer.json, $OUT/infer.md, the runs' logs in
#              $OUT/infer-runs; about 4 minutes; INFER_ARGS, words added last, override its defaults
#   ONLY=replay  run only `uvmtrace replay` of REPLAY_TRACES (default: the bundled pooled GPT-2
#              small and resnet50 traces; bench/drivers/replay.py): with no budget against the recorded
#              step time (within 10%), and at footprint / 1.5 under demand-lru and learned with a
#              copy of the last step: $OUT/replay.json; under 2 minutes, each replay within half
#              the GPU's free memory (--scale otherwise). REPLAY_REAL_JOB=FILE, a pool.json of
#              POOL=1 or ONLY=pool on the same GPU: each budget row beside the real job's step
#   ONLY=compat  run only bench/drivers/compat.py: torch.compile with CUDA graphs, DataLoader workers,
#              backend:cudaMallocAsync, two jobs with budgets at once, JAX (10 runs), CuPy and
#              the launch hook's cost, each against the program without the library:
#              $OUT/compat.json, $OUT/compat.md, the runs' logs in $OUT/compat-runs
#   ONLY=robust  run only the robustness benchmarks, in this order, each under its own timeout
#              (about 9 minutes at most): torch.compile's three modes natively, under plain uvmrun
#              and under uvmrun --budget peak/1.5 (compat.py --scenarios compile-modes); GPT-2 DDP,
#              two ranks on one GPU, natively, natively on cudaMallocAsync, under plain uvmrun and
#              under a budget above the footprint with and without --framework-settings off
#              (bench/drivers/ddp_overhead.py); eight jobs under budgets killed and restarted at random
#              for 60 s (bench/drivers/churn.py): $OUT/robust-{compile,ddp,churn}.{json,md}, the
#              runs' logs in $OUT/robust-runs; ROBUST_PARTS picks and orders them (default
#              compile,ddp,churn; signals adds bench/signals_gpu.sh: a job under a budget stopped
#              by SIGTERM, SIGINT and SIGKILL, about a minute; hostshort adds
#              bench/host_short_gpu.sh: GPT-2 small under a budget with 4G of host memory left to it,
#              about a minute and a half)
#   ONLY=tests  run the GPU tests and no overhead benchmark (with OVERSUB=1, then the
#              oversubscription benchmark)
#   OVERHEAD_ROUNDS  alternating rounds of the overhead benchmark (default 2)
#   OVERHEAD_CPUS  run the overhead benchmark's programs on these CPUs only (e.g. 0-7;
#              default: wherever the scheduler puts them)
#   PACK=1     at the end, pack the runs' folders ($OUT/*-runs: logs, stats files) into
#              $OUT/runs.tgz, their traces left out, and remove the folders
#   DEADLINE_S total seconds the steps may use (default 450, 500 with ONLY=robust, 540 with ONLY=oversub,
#              ONLY=pool or ONLY=infer); every
#              step has its own timeout as well, and a step that no longer fits is marked SKIP
# A failing step never stops the script: it is marked FAIL and the next step runs.
# Exit status 0 when no step failed.

set -u -o pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$(cd "${1:-build-dev}" 2>/dev/null && pwd) || BUILD=${1:-build-dev}
OUT=${OUT:-$PWD/device-out}
PYTHON=${PYTHON:-python3}
ONLY=${ONLY:-}
PACK=${PACK:-0}
PROBE=${PROBE:-0}
TRACES=${TRACES:-0}
OVERSUB=${OVERSUB:-0}
OVERSUB_WORKLOADS=${OVERSUB_WORKLOADS:-layers,resnet50,gpt2-small}
OVERSUB_DIVISORS=${OVERSUB_DIVISORS:-1.5,2}
OVERHEAD_ROUNDS=${OVERHEAD_ROUNDS:-2}
OVERHEAD_CPUS=${OVERHEAD_CPUS:-}
POOL=${POOL:-0}
POOL_ROUNDS=${POOL_ROUNDS:-3}
POOL_BUDGET=${POOL_BUDGET:-16G}
POOL_ARGS=${POOL_ARGS:-}
ROBUST_PARTS=${ROBUST_PARTS:-compile,ddp,churn}
INFER_ARGS=${INFER_ARGS:-}
REPLAY_TRACES=${REPLAY_TRACES:-$REPO_ROOT/examples/traces/gpt2-small-b16-pooled.uvmt $REPO_ROOT/examples/traces/resnet50-b256-pooled.uvmt}
REPLAY_REAL_JOB=${REPLAY_REAL_JOB:-}
if [[ -n $ONLY && $ONLY != oversub && $ONLY != tests && $ONLY != pool && $ONLY != replay && $ONLY != compat &&
    $ONLY != robust && $ONLY != infer ]]; then
    echo "device_run.sh: ONLY=$ONLY is not known; the choices are ONLY=oversub, ONLY=pool, ONLY=infer, ONLY=replay," \
        "ONLY=compat, ONLY=robust and ONLY=tests" >&2
    exit 2
fi
for rounds in "OVERHEAD_ROUNDS=$OVERHEAD_ROUNDS" "POOL_ROUNDS=$POOL_ROUNDS"; do
    if [[ ! ${rounds#*=} =~ ^[1-9][0-9]*$ ]]; then
        echo "device_run.sh: $rounds must be a whole number of at least 1" >&2
        exit 2
    fi
done
# Alone, either benchmark may use nearly all of a 600 s device call.
if [[ $ONLY == oversub || $ONLY == pool || $ONLY == infer ]]; then
    DEADLINE_S=${DEADLINE_S:-540}
elif [[ $ONLY == robust ]]; then
    DEADLINE_S=${DEADLINE_S:-500}
else
    DEADLINE_S=${DEADLINE_S:-450}
fi

# Goals of the overhead benchmark: a job that fits its budget should barely notice the
# library, and the launch hook should stay well below the ~3.4 us a launch costs anyway.
OVERHEAD_RATIO_GOAL=1.05
HOOK_NS_GOAL=1000
# Recording a trace must not slow the job by more than this either.
TRACE_RATIO_GOAL=1.05

# Budgets: well above every workload's footprint (nothing needs evicting), and one
# below the layers model (1024 MiB) so that the policy has to move data while the
# result must stay exact. All stay far below the card's free memory.
FIT_BUDGET=16G
OVERSUBSCRIBED_BUDGET=512M

UVMRUN=$BUILD/tools/uvmrun/uvmrun
UVMTRACE=$BUILD/tools/uvmtrace/uvmtrace
LIBRARY=$(find "$BUILD" -name libuvmprefetch.so -print -quit 2>/dev/null)
LIBRARY=${LIBRARY:-$BUILD/src/preload/libuvmprefetch.so}
LAYERS_STATIC=$BUILD/examples/layers_static
LAYERS_SHARED=$BUILD/examples/layers_shared
EMPTY_LAUNCH=$BUILD/bench/empty_launch
POPULATE_PROBE=$BUILD/bench/populate_probe
WAIT_OR_FAULT_PROBE=$BUILD/bench/wait_or_fault_probe
SLAB_FREE_PROBE=$BUILD/bench/slab_free_probe
HOST_HOME_PROBE=$BUILD/bench/host_home_probe
PINNED_HOME_PROBE=$BUILD/bench/pinned_home_probe
LINK_PROBE=$BUILD/bench/link_probe
CHECK_GPU=$REPO_ROOT/tests/gpu/check_gpu.py

mkdir -p "$OUT"
LOG=$OUT/device.log
START_SECONDS=$SECONDS
ROWS=()
FAILED_STEPS=0
STEP_STATUS=0
STEP_OUTPUT=$(mktemp)
trap 'rm -f "$STEP_OUTPUT"' EXIT

# run_step NAME TIMEOUT_S COMMAND...: runs one step under a timeout that also respects
# the overall deadline; leaves its exit status in STEP_STATUS (125: not run, no time left)
# and its output in the file STEP_OUTPUT.
run_step() {
    local name=$1 limit=$2
    shift 2
    local left=$((DEADLINE_S - (SECONDS - START_SECONDS)))
    echo
    if ((left < 20)); then
        echo "### $name: not run, only ${left}s of the ${DEADLINE_S}s deadline left"
        STEP_STATUS=125
        : >"$STEP_OUTPUT"
        return
    fi
    ((limit > left)) && limit=$left
    echo "### $name (timeout ${limit}s, $((SECONDS - START_SECONDS))s elapsed)"
    echo "\$ $*"
    local step_start=$SECONDS
    timeout --kill-after=15 "$limit" "$@" 2>&1 | tee "$STEP_OUTPUT"
    STEP_STATUS=${PIPESTATUS[0]}
    echo "### $name: exit status $STEP_STATUS after $((SECONDS - step_start))s"
}

# add_row WHAT VALUE GOAL VERDICT: one line of the final table.
add_row() {
    ROWS+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"$4")
    [[ $4 == FAIL || $4 == TIMEOUT ]] && FAILED_STEPS=$((FAILED_STEPS + 1))
    return 0
}

verdict_of_status() {
    case $1 in
    0) echo PASS ;;
    77) echo SKIP ;;
    124 | 137) echo TIMEOUT ;;
    125) echo SKIP ;;
    *) echo FAIL ;;
    esac
}

# json_value FILE KEY1 KEY2 ...: one value from a JSON file, "n/a" when absent.
json_value() {
    "$PYTHON" - "$@" <<'EOF'
import json, sys
try:
    value = json.load(open(sys.argv[1]))
    for key in sys.argv[2:]:
        value = value[key]
except Exception:
    value = None
print("n/a" if value is None else (f"{value:.3f}" if isinstance(value, float) else value))
EOF
}

# pass_if_true VALUE: PASS when VALUE is True, FAIL otherwise.
pass_if_true() {
    [[ $1 == True ]] && echo PASS || echo FAIL
}

# at_most VALUE LIMIT: PASS when VALUE <= LIMIT, FAIL otherwise or when VALUE is n/a.
at_most() {
    "$PYTHON" -c 'import sys
try:
    print("PASS" if float(sys.argv[1]) <= float(sys.argv[2]) else "FAIL")
except ValueError:
    print("FAIL")' "$1" "$2"
}

show_gpu() {
    echo "### GPU"
    nvidia-smi -L || echo "nvidia-smi -L failed"
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,memory.free --format=csv ||
        echo "nvidia-smi memory query failed"
    show_host
}

# The host's NUMA nodes and the one the GPU hangs off: kernels reading host memory
# and evictions populating host pages run at the rate of the node the pages land on,
# which differs from host to host.
show_host() {
    echo "### host"
    local nodes bus sysfs gpu_node
    nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' 2>/dev/null | wc -l)
    bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null | head -1)
    # nvidia-smi gives an 8-digit PCI domain, sysfs a 4-digit one, in lower case.
    sysfs=$(echo "${bus#????}" | tr '[:upper:]' '[:lower:]')
    gpu_node=$(cat "/sys/bus/pci/devices/$sysfs/numa_node" 2>/dev/null || echo unknown)
    echo "CPUs: $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
    echo "NUMA nodes: $nodes; the GPU ($bus): node $gpu_node (-1: none reported)"
    nvidia-smi topo -m 2>/dev/null || echo "nvidia-smi topo -m failed"
    add_row "host NUMA nodes / the GPU's node" "$nodes / $gpu_node" "-" info
}

check_build() {
    echo
    echo "### build directory $BUILD"
    local missing=0 path
    for path in "$UVMRUN" "$UVMTRACE" "$LIBRARY" "$LAYERS_STATIC" "$LAYERS_SHARED" "$EMPTY_LAUNCH" "$POPULATE_PROBE" \
        "$WAIT_OR_FAULT_PROBE" "$SLAB_FREE_PROBE" "$HOST_HOME_PROBE" "$PINNED_HOME_PROBE" "$LINK_PROBE"; do
        if [[ -f $path ]]; then
            echo "found   $path"
        else
            echo "MISSING $path"
            missing=1
        fi
    done
    add_row "build directory complete" "$([[ $missing == 0 ]] && echo yes || echo no)" "all present" \
        "$([[ $missing == 0 ]] && echo PASS || echo FAIL)"
    echo "\$ uvmrun --dry-run -- true"
    UVMP_LIBRARY=$LIBRARY timeout 20 "$UVMRUN" --dry-run -- true || echo "uvmrun --dry-run failed (exit $?)"
}

# wait_or_fault_summary FILE: the probe's JSON as one cell: per size in MiB, fault (f),
# prefetch then wait (w) and prefetch beside the fault (b), in ms; n/a when absent.
wait_or_fault_summary() {
    "$PYTHON" - "$1" <<'EOF'
import json, sys
try:
    runs = json.load(open(sys.argv[1]))["runs"]
    print("; ".join(f"{r['bytes'] >> 20} f{r['fault_ms']:.2f} w{r['prefetch_wait_ms']:.2f} b{r['prefetch_beside_ms']:.2f}"
                    for r in runs))
except Exception:
    print("n/a")
EOF
}

# probe_rows NAME TIMEOUT_S JSON WHAT UNIT "KEYS" COMMAND...: runs a probe whose last
# line starting {"bytes" is its JSON, keeps that line in $OUT/JSON and adds one row
# "probe: WHAT, KEY UNIT" for each of KEYS (the JSON's KEY_UNIT; gbps is shown GB/s).
probe_rows() {
    local name=$1 limit=$2 json=$3 what=$4 unit=$5 keys=$6
    shift 6
    run_step "$name" "$limit" "$@"
    local status=$STEP_STATUS key
    grep '^{"bytes"' "$STEP_OUTPUT" | tail -n 1 >"$OUT/$json" || true
    local shown=$unit
    [[ $unit == gbps ]] && shown=GB/s
    for key in $keys; do
        add_row "probe: $what, $key $shown" "$(json_value "$OUT/$json" "${key}_$unit")" "(measure)" \
            "$(verdict_of_status "$status")"
    done
    STEP_STATUS=$status
}

probe_section() {
    # Data a kernel needs now: fault it in, prefetch and wait, or both at once.
    run_step "wait-or-fault probe" 120 "$WAIT_OR_FAULT_PROBE"
    local wait_status=$STEP_STATUS
    grep '^{"runs"' "$STEP_OUTPUT" | tail -n 1 >"$OUT/wait_or_fault.json" || true
    add_row "probe: wait-or-fault table (ms, 64M/256M/1G)" "$(wait_or_fault_summary "$OUT/wait_or_fault.json")" \
        "(measure)" "$(verdict_of_status "$wait_status")"

    probe_rows "populate probe" 90 probe.json "fresh 2 GiB" gbps "prefetch discard_prefetch first_touch" \
        "$POPULATE_PROBE" 2
    # What giving a wholly free slab back costs against evicting its bytes.
    probe_rows "slab free probe" 90 slab_free.json "1 GiB managed" ms \
        "evict free free_busy busy_kernel populate" "$SLAB_FREE_PROBE" 1 4
    # A new host home written first by a kernel, against its pages made on the host ahead,
    # by a prefetch or by host threads beside the launches.
    probe_rows "host home probe" 90 host_home.json "1 GiB host home" gbps \
        "first_write rewrite host_populate write_populated read_populated host_touch write_touched populate_write" \
        "$HOST_HOME_PROBE" 1
    local home_status=$STEP_STATUS
    add_row "probe: slowest launch call beside host threads touching / populating a host home, ms" \
        "$(json_value "$OUT/host_home.json" host_touch_launch_ms) / $(json_value "$OUT/host_home.json" populate_write_launch_ms)" \
        "(measure)" "$(verdict_of_status "$home_status")"
    # The same home made of pinned host memory, ahead, and whether launches wait for its making.
    probe_rows "pinned home probe" 90 pinned_home.json "1 GiB pinned home" gbps \
        "pinned_alloc pinned_first_write pinned_read touch register" "$PINNED_HOME_PROBE" 1
    local status=$STEP_STATUS
    add_row "probe: slowest launch call beside / without a pinned alloc, ms" \
        "$(json_value "$OUT/pinned_home.json" launch_beside_alloc_ms) / $(json_value "$OUT/pinned_home.json" launch_alone_ms)" \
        "(measure)" "$(verdict_of_status "$status")"
}

gpu_tests() {
    local common=(--uvmrun "$UVMRUN" --lib "$LIBRARY")
    run_step "test: layers_static under uvmrun" 120 \
        "$PYTHON" "$CHECK_GPU" layers "${common[@]}" --budget "$FIT_BUDGET" --binary "$LAYERS_STATIC"
    add_row "layers_static correct, converted" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"

    run_step "test: layers_shared under uvmrun" 120 \
        "$PYTHON" "$CHECK_GPU" layers "${common[@]}" --budget "$FIT_BUDGET" --binary "$LAYERS_SHARED"
    add_row "layers_shared correct, converted" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"

    run_step "test: layers_static, budget $OVERSUBSCRIBED_BUDGET < 1 GiB model" 150 \
        "$PYTHON" "$CHECK_GPU" layers "${common[@]}" --budget "$OVERSUBSCRIBED_BUDGET" --binary "$LAYERS_STATIC"
    add_row "layers_static over budget, correct" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"

    run_step "test: resnet18 losses native vs uvmrun" 240 \
        "$PYTHON" "$CHECK_GPU" resnet "${common[@]}" --budget "$FIT_BUDGET" \
        --script "$REPO_ROOT/examples/train_resnet.py"
    add_row "resnet18 same losses, converted" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"

    run_step "test: cupy under uvmrun" 120 \
        "$PYTHON" "$CHECK_GPU" cupy "${common[@]}" --budget "$FIT_BUDGET" --script "$REPO_ROOT/examples/cupy_demo.py"
    add_row "cupy OK, converted" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
}

# Records 3 training steps of each reference workload with kernel durations. The script
# prints the launches of each step (from the library's counters): uvmtrace info must find
# the same number as the iteration period without being told.
traces_section() {
    local uvmtrace=$UVMTRACE spec name args
    for spec in "resnet50-b256:--model resnet50 --batch 256" \
        "gpt2-small-b16:--model gpt2-small --batch 16 --seq 1024"; do
        name=${spec%%:*}
        args=${spec#*:}
        # shellcheck disable=SC2086
        run_step "trace: $name" 240 env UVMP_TRACE_TIMING=1 UVMP_LIBRARY="$LIBRARY" "$UVMRUN" \
            --budget 100G --policy none --trace-out "$OUT/$name.uvmt" -- \
            "$PYTHON" "$REPO_ROOT/examples/train_workload.py" $args --steps 3 --warmup 1
        add_row "trace $name recorded" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
        run_step "trace: uvmtrace info $name" 60 "$uvmtrace" info "$OUT/$name.uvmt"
        add_row "uvmtrace info $name" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    done
}

# ratio_rows REPORT MODE WHAT GOAL CHECK_KEY CHECK_WHAT: the rows of resnet50's step time
# ratio of MODE (lib or trace) to native against GOAL, over all steps and as the median of
# the rounds' own ratios, and the row of the check that the runs measured what they should
# (CHECK_KEY must be True).
ratio_rows() {
    local ratio check
    ratio=$(json_value "$1" resnet50 "ratio_$2_over_native")
    add_row "$3" "$ratio" "<= $4" "$(at_most "$ratio" "$4")"
    ratio=$(json_value "$1" resnet50 "paired_ratio_$2_over_native")
    add_row "$3, per round" "$ratio" "<= $4" "$(at_most "$ratio" "$4")"
    check=$(json_value "$1" resnet50 "$5")
    add_row "$6" "$check" "True" "$(pass_if_true "$check")"
}

benchmarks() {
    local report=$OUT/overhead.json
    rm -f "$report"
    run_step "bench: overhead (resnet50 native, uvmrun, uvmrun recording; empty launches)" $((60 + 60 * OVERHEAD_ROUNDS)) \
        "$PYTHON" "$REPO_ROOT/bench/drivers/overhead.py" --uvmrun "$UVMRUN" --lib "$LIBRARY" --empty-launch "$EMPTY_LAUNCH" \
        --budget 32G --rounds "$OVERHEAD_ROUNDS" --timeout 120 --json-out "$report" \
        ${OVERHEAD_CPUS:+--cpus "$OVERHEAD_CPUS"}
    local status=$STEP_STATUS
    add_row "overhead runs all succeeded" "exit $status" "exit 0" "$(verdict_of_status "$status")"

    local native lib hook
    native=$(json_value "$report" resnet50 native_median_ms)
    lib=$(json_value "$report" resnet50 lib_median_ms)
    add_row "resnet50 b64 step ms native / uvmrun" "$native / $lib" "-" "info"
    ratio_rows "$report" lib "resnet50 step time ratio uvmrun/native" "$OVERHEAD_RATIO_GOAL" \
        library_active "library active in resnet50 runs"

    add_row "resnet50 b64 step ms recording a trace" "$(json_value "$report" resnet50 trace_median_ms)" "-" "info"
    ratio_rows "$report" trace "resnet50 ratio recording trace/native" "$TRACE_RATIO_GOAL" \
        trace_recorded "trace recorded whole in every run"

    # The same cost from inside the programs: the library times its own hook in one launch in
    # 64, so host speed from run to run, which moves the step times above, does not enter.
    add_row "resnet50 hook ns per launch uvmrun / recording" \
        "$(json_value "$report" resnet50 lib_hook_ns) / $(json_value "$report" resnet50 trace_hook_ns)" "-" "info"
    local share share_goal
    share=$(json_value "$report" resnet50 recording_hook_share_of_step)
    share_goal=$(awk "BEGIN { print $TRACE_RATIO_GOAL - 1 }")
    add_row "recording's hook time, share of native step" "$share" "<= $share_goal" "$(at_most "$share" "$share_goal")"

    native=$(json_value "$report" empty_launch native_ns_per_launch)
    lib=$(json_value "$report" empty_launch lib_ns_per_launch)
    hook=$(json_value "$report" empty_launch hook_ns_per_launch)
    add_row "empty launch ns native / uvmrun" "$native / $lib" "-" "info"
    add_row "launch hook cost ns per launch" "$hook" "<= $HOOK_NS_GOAL" "$(at_most "$hook" "$HOOK_NS_GOAL")"
    hook=$(json_value "$report" empty_launch trace_hook_ns_per_launch)
    add_row "launch hook ns per launch, recording" "$hook" "<= $HOOK_NS_GOAL" "$(at_most "$hook" "$HOOK_NS_GOAL")"
    hook=$(json_value "$report" empty_launch trace_recorded)
    add_row "empty launches recorded whole" "$hook" "True" "$(pass_if_true "$hook")"
}

# Budgets at F/1.5 and F/2 of each workload's footprint, policies demand-lru and learned,
# against native and against the link's transfer bound. The benchmark gets what is left of
# the deadline less a margin, so that it stops its last run and writes its report itself.
oversub_section() {
    local report=$OUT/oversub.json markdown=$OUT/oversub.md left own_deadline
    read -r left own_deadline < <(deadline_left)
    rm -f "$report" "$markdown"
    run_step "bench: oversubscription ($OVERSUB_WORKLOADS)" "$left" \
        "$PYTHON" "$REPO_ROOT/bench/drivers/oversubscription.py" --uvmrun "$UVMRUN" --uvmtrace "$UVMTRACE" \
        --lib "$LIBRARY" --layers-binary "$LAYERS_STATIC" --workloads "$OVERSUB_WORKLOADS" \
        --divisors "$OVERSUB_DIVISORS" --link-probe "$LINK_PROBE" \
        --timeout-s 150 --deadline-s "$own_deadline" --json-out "$report" --markdown-out "$markdown" \
        ${OVERSUB_NO_CACHE:+--no-allocator-cache}
    add_row "oversub runs succeeded, losses equal" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    local what value goal verdict
    while IFS=$'\t' read -r what value goal verdict; do
        add_row "$what" "$value" "$goal" "$verdict"
    done < <(oversub_rows "$report")
}

# deadline_left: the seconds left of the deadline, and the deadline a benchmark is given
# within them: 20 s less, so that it stops its last run and writes its report itself.
deadline_left() {
    local left=$((DEADLINE_S - (SECONDS - START_SECONDS)))
    local own_deadline=$((left - 20))
    ((own_deadline < 1)) && own_deadline=1
    echo "$left $own_deadline"
}

# PyTorch with every free visible to the library (backend:cudaMallocAsync, the managed pool):
# step time and PyTorch's memory figures against native, bytes moved and step time under
# POOL_BUDGET (uvmrun's defaults, learned, demand-lru, save_on_cpu) against the link's floor and
# the simulator's prediction, the defaults' targets against the others, losses against native.
pool_section() {
    local report=$OUT/pool.json markdown=$OUT/pool.md left own_deadline
    read -r left own_deadline < <(deadline_left)
    rm -f "$report" "$markdown"
    run_step "bench: managed pool, frees visible (gpt2-small, resnet50)" "$left" \
        "$PYTHON" "$REPO_ROOT/bench/drivers/pool_frees.py" --uvmrun "$UVMRUN" --uvmtrace "$UVMTRACE" --lib "$LIBRARY" \
        --link-probe "$LINK_PROBE" --rounds "$POOL_ROUNDS" --pressure-budget "$POOL_BUDGET" \
        --deadline-s "$own_deadline" --workdir "$OUT/pool-runs" --json-out "$report" --markdown-out "$markdown" \
        $POOL_ARGS
    add_row "pool runs succeeded, losses equal" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    local what value goal verdict
    while IFS=$'\t' read -r what value goal verdict; do
        add_row "$what" "$value" "$goal" "$verdict"
    done < <("$PYTHON" "$REPO_ROOT/bench/drivers/pool_frees.py" --rows "$report")
}

# Greedy generation whose weights do not fit the budget: ms a token under uvmrun against native,
# demand-lru and accelerate's offloading, against the link's floors; the tokens against native's.
infer_section() {
    local report=$OUT/infer.json markdown=$OUT/infer.md left own_deadline
    read -r left own_deadline < <(deadline_left)
    rm -f "$report" "$markdown"
    # shellcheck disable=SC2086
    run_step "bench: inference, weights over the budget (native, uvmrun, demand-lru, accelerate)" "$left" \
        "$PYTHON" "$REPO_ROOT/bench/drivers/inference.py" --uvmrun "$UVMRUN" --lib "$LIBRARY" \
        --link-probe "$LINK_PROBE" --deadline-s "$own_deadline" --workdir "$OUT/infer-runs" \
        --json-out "$report" --markdown-out "$markdown" $INFER_ARGS
    add_row "inference runs succeeded, tokens equal" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    local what value goal verdict
    while IFS=$'\t' read -r what value goal verdict; do
        add_row "$what" "$value" "$goal" "$verdict"
    done < <("$PYTHON" "$REPO_ROOT/bench/drivers/inference.py" --rows "$report")
}

# `uvmtrace replay` of REPLAY_TRACES: the replayed step against the recorded one with no budget,
# and the steady step at footprint / 1.5 under demand-lru and learned. Quick: 110 s at most.
replay_section() {
    local report=$OUT/replay.json left own_deadline
    read -r left own_deadline < <(deadline_left)
    ((own_deadline > 110)) && own_deadline=110
    rm -f "$report"
    # shellcheck disable=SC2086
    run_step "bench: uvmtrace replay (no budget, footprint / 1.5)" $((own_deadline + 15)) \
        "$PYTHON" "$REPO_ROOT/bench/drivers/replay.py" --uvmtrace "$UVMTRACE" --lib "$LIBRARY" \
        --deadline-s "$own_deadline" --json-out "$report" ${REPLAY_REAL_JOB:+--real-job "$REPLAY_REAL_JOB"} \
        $REPLAY_TRACES
    add_row "replay runs succeeded, no-budget steps within 10%" "exit $STEP_STATUS" "exit 0" \
        "$(verdict_of_status "$STEP_STATUS")"
    local what value goal verdict
    while IFS=$'\t' read -r what value goal verdict; do
        add_row "$what" "$value" "$goal" "$verdict"
    done < <("$PYTHON" "$REPO_ROOT/bench/drivers/replay.py" --rows "$report")
}

# Programs of several kinds under uvmrun against the same programs without it.
compat_section() {
    local report=$OUT/compat.json markdown=$OUT/compat.md left own_deadline
    read -r left own_deadline < <(deadline_left)
    rm -f "$report" "$markdown"
    run_step "bench: compatibility scenarios" "$left" \
        "$PYTHON" "$REPO_ROOT/bench/drivers/compat.py" --uvmrun "$UVMRUN" --lib "$LIBRARY" --empty-launch "$EMPTY_LAUNCH" \
        --deadline-s "$own_deadline" --workdir "$OUT/compat-runs" --json-out "$report" --markdown-out "$markdown"
    add_row "compat scenarios ran, results equal" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    local what value goal verdict
    while IFS=$'\t' read -r what value goal verdict; do
        add_row "$what" "$value" "$goal" "$verdict"
    done < <("$PYTHON" "$REPO_ROOT/bench/drivers/compat.py" --rows "$report")
}

# add_rows_of DRIVER REPORT: the rows that DRIVER --rows prints of its REPORT, into the final table.
add_rows_of() {
    local what value goal verdict
    while IFS=$'\t' read -r what value goal verdict; do
        add_row "$what" "$value" "$goal" "$verdict"
    done < <("$PYTHON" "$REPO_ROOT/bench/drivers/$1" --rows "$2")
}

# What must not break under the library: torch.compile's modes under a budget, DDP's overhead
# split by cause, and jobs killed and restarted at random. Each driver gets a deadline of its
# own 15 s inside its step's timeout, so that it ends its last run and writes its report itself.
robust_section() {
    local runs=$OUT/robust-runs
    local common=(--uvmrun "$UVMRUN" --lib "$LIBRARY")
    local part
    rm -f "$OUT"/robust-*.json "$OUT"/robust-*.md
    for part in ${ROBUST_PARTS//,/ }; do
        case $part in
        compile) robust_compile ;;
        ddp) robust_ddp ;;
        churn) robust_churn ;;
        signals) robust_signals ;;
        hostshort) robust_host_short ;;
        *) add_row "robust: part '$part'" "unknown" "compile, ddp, churn, signals or hostshort" "FAIL" ;;
        esac
    done
}

robust_compile() {
    run_step "robust: torch.compile modes, native / plain uvmrun / --budget peak/1.5" 210 \
        "$PYTHON" "$REPO_ROOT/bench/drivers/compat.py" "${common[@]}" --scenarios compile-modes \
        --deadline-s 195 --timeout-s 120 --workdir "$runs/compile" \
        --json-out "$OUT/robust-compile.json" --markdown-out "$OUT/robust-compile.md"
    add_row "robust: compile modes ran, results equal" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    add_rows_of compat.py "$OUT/robust-compile.json"
}

robust_ddp() {
    # Five runs of about 30-35 s each on an H100 (robust run 3): 125 s left the last two out.
    run_step "robust: DDP overhead (native, async, plain uvmrun, budget, budget + caching)" 200 \
        "$PYTHON" "$REPO_ROOT/bench/drivers/ddp_overhead.py" "${common[@]}" --deadline-s 185 --timeout-s 100 \
        --workdir "$runs/ddp" --json-out "$OUT/robust-ddp.json" --markdown-out "$OUT/robust-ddp.md"
    add_row "robust: DDP runs succeeded, losses equal" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
    add_rows_of ddp_overhead.py "$OUT/robust-ddp.json"
}

robust_churn() {
    run_step "robust: churn (8 jobs under budgets, killed and restarted)" 140 \
        "$PYTHON" "$REPO_ROOT/bench/drivers/churn.py" "${common[@]}" --duration-s 60 --drain-s 20 --leak-wait-s 10 \
        --workdir "$runs/churn" --json-out "$OUT/robust-churn.json" --markdown-out "$OUT/robust-churn.md"
    add_row "robust: churn, no hang, losses equal, no leak" "exit $STEP_STATUS" "exit 0" \
        "$(verdict_of_status "$STEP_STATUS")"
    add_rows_of churn.py "$OUT/robust-churn.json"
}

robust_signals() {
    run_step "robust: a job under a budget stopped by SIGTERM, SIGINT and SIGKILL" 150 \
        env PYTHON="$PYTHON" bash "$REPO_ROOT/bench/signals_gpu.sh" "$BUILD" "$runs/signals"
    local line
    while read -r line; do
        add_row "robust: ${line%%: *}" "${line#*: }" "PASS" "$([[ ${line#*: } == PASS* ]] && echo PASS || echo FAIL)"
    done < <(grep '^signal SIG' "$STEP_OUTPUT")
    add_row "robust: signals, all checks" "exit $STEP_STATUS" "exit 0" "$(verdict_of_status "$STEP_STATUS")"
}

robust_host_short() {
    run_step "robust: GPT-2 small under a budget with 4G of host memory left to it" 200 \
        env PYTHON="$PYTHON" bash "$REPO_ROOT/bench/host_short_gpu.sh" "$BUILD" "$runs/host-short" 4G 16G
    local line
    line=$(grep -m1 '^host memory short: ' "$STEP_OUTPUT")
    add_row "robust: host memory short" "${line#*: }" "PASS" "$([[ ${line#*: } == PASS* ]] && echo PASS || echo FAIL)"
}

# oversub_rows REPORT: the oversubscription report as rows of the final table, one per
# line: what<TAB>value<TAB>goal<TAB>verdict.
oversub_rows() {
    "$PYTHON" - "$1" <<'EOF'
import json, sys


def show(value, digits=3):
    return "n/a" if value is None else f"{value:.{digits}f}"


try:
    report = json.load(open(sys.argv[1]))
except (OSError, json.JSONDecodeError):
    print("oversub report\tmissing\tpresent\tFAIL")
    sys.exit()
# Learned prefetching at a budget far above the footprint must stay close to native.
goal = report["far_learned_ratio_goal"]
for name, check in report["checks"].items():
    footprint = check["footprint_bytes"]
    print(f"oversub {name} footprint GiB\t{show(footprint / 2**30 if footprint else None, 2)}\t-\tinfo")
    print(f"oversub {name} learned far/native\t{show(check['learned_far_ratio'])}\t<= {goal}\t"
          f"{'PASS' if check['learned_far_within_goal'] else 'FAIL'}")
    equal = check["losses_all_equal"]
    print(f"oversub {name} losses = native\t{equal} ({check['losses_compared']} runs)\tTrue\t"
          f"{'SKIP' if equal is None else 'PASS' if equal else 'FAIL'}")
for row in report["rows"]:
    if row["budget"] in ("-", "far"):
        continue
    if row["status"] == "ok":
        value = f"{show(row['median_ms'], 1)}ms {show(row['ratio_native'], 2)}xN {show(row['ratio_bound'], 2)}xB"
    else:
        value = row["status"]
    verdict = {"ok": "info", "timeout": "TIMEOUT", "failed": "FAIL"}.get(row["status"], "SKIP")
    print(f"oversub {row['workload']} {row['budget']} {row['mode']}\t{value}\t-\t{verdict}")
EOF
}

print_table() {
    echo
    echo "=================== RESULTS ($((SECONDS - START_SECONDS))s) ==================="
    printf '%-54s %-30s %-12s %s\n' "what" "value" "goal" "pass"
    local row what value goal verdict
    for row in "${ROWS[@]}"; do
        IFS=$'\t' read -r what value goal verdict <<<"$row"
        printf '%-54s %-30s %-12s %s\n' "$what" "$value" "$goal" "$verdict"
    done
    echo "failed: $FAILED_STEPS"
    printf '%s\n' "${ROWS[@]}" | "$PYTHON" -c '
import json, sys
rows = [dict(zip(("what", "value", "goal", "pass"), line.rstrip("\n").split("\t"))) for line in sys.stdin if line.strip()]
json.dump(rows, open(sys.argv[1], "w"), indent=1)' "$OUT/summary.json"
}

main() {
    echo "uvmprefetch device run, $(date -u +%Y-%m-%dT%H:%M:%SZ), repository $REPO_ROOT, build $BUILD"
    show_gpu
    check_build
    if [[ $PROBE == 1 ]]; then probe_section; fi
    if [[ $ONLY == oversub ]]; then
        oversub_section
    elif [[ $ONLY == pool ]]; then
        pool_section
    elif [[ $ONLY == infer ]]; then
        infer_section
    elif [[ $ONLY == replay ]]; then
        replay_section
    elif [[ $ONLY == compat ]]; then
        compat_section
    elif [[ $ONLY == robust ]]; then
        robust_section
    else
        gpu_tests
        if [[ $TRACES == 1 ]]; then traces_section; fi
        if [[ $ONLY != tests ]]; then benchmarks; fi
        if [[ $OVERSUB == 1 ]]; then oversub_section; fi
        if [[ $POOL == 1 ]]; then pool_section; fi
    fi
    echo
    echo "### GPU memory after the run"
    nvidia-smi --query-gpu=memory.used,memory.free --format=csv || true
    print_table
    ((FAILED_STEPS == 0))
}

# The runs' folders ($OUT/*-runs) as one archive, their traces left out: a few files to keep.
pack_runs() {
    local folders=()
    local folder
    for folder in "$OUT"/*-runs; do [[ -d $folder ]] && folders+=("$(basename "$folder")"); done
    ((${#folders[@]})) || return 0
    if tar -czf "$OUT/runs.tgz" -C "$OUT" --exclude='*.uvmt' "${folders[@]}"; then
        (cd "$OUT" && rm -rf -- "${folders[@]}")
        echo "packed ${folders[*]} into $OUT/runs.tgz (traces left out)"
    else
        echo "packing the runs' folders failed: they stay as they are"
    fi
}

# Everything, the table included, goes to the screen and to device.log.
: >"$LOG"
main 2>&1 | tee -a "$LOG"
status=${PIPESTATUS[0]}
if [[ $PACK == 1 ]]; then pack_runs 2>&1 | tee -a "$LOG"; fi
exit "$status"
