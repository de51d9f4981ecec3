#!/usr/bin/env bash
# Stops a job under the preloaded library with a signal mid-run and checks what
# survives it. Run by the integration tests on the fake driver (signal_target.cpp)
# and by bench/signals_gpu.sh on a GPU.
# Usage: signal_test.sh SIGNAL HANDLER READY UVMTRACE DIR -- COMMAND...
#   SIGNAL   INT, TERM or KILL
#   HANDLER  yes when the job handles the signal itself, printing "own handler
#            ran for signal N" (N its number) before it dies of it; no otherwise
#   READY    an extended regular expression that a line of the job's output
#            matches once it is well under way (waited for up to 60 s)
#   DIR      made afresh; the job writes its stats file to DIR/stats.json and
#            its trace to DIR/trace.uvmt, its output to DIR/out and DIR/err
# INT and TERM: the job dies of the signal, its own handler (if any) having
# run, with the summary, the stats file and a whole trace. KILL: the trace
# reads up to where it was cut, and uvmtrace says so.
set -u
sig=$1 handler=$2 ready=$3 uvmtrace=$4 dir=$5
shift 5
[ "${1:-}" = -- ] && shift
rm -rf "$dir" && mkdir -p "$dir"
fail() {
    echo "FAIL: $*"
    for f in out err info; do [ -f "$dir/$f" ] && { echo "--- $f"; tail -40 "$dir/$f"; }; done
    exit 1
}
"$@" >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 1200); do grep -Eq "$ready" "$dir/out" && break; sleep 0.05; done
if ! grep -Eq "$ready" "$dir/out"; then
    kill -KILL "$pid" 2>/dev/null
    wait "$pid"
    fail "the job never got under way"
fi
# The writer puts whole records on disk at least once a second.
[ "$sig" = KILL ] && sleep 1.5
kill -s "$sig" "$pid"
wait "$pid"
status=$?
want=$((128 + $(kill -l "$sig")))
[ "$status" = "$want" ] || fail "exit status $status, not $want (killed by SIG$sig)"
if [ "$handler" = yes ]; then
    grep -q "own handler ran for signal $(kill -l "$sig")" "$dir/out" || fail "the program's own handler did not run"
fi
"$uvmtrace" info "$dir/trace.uvmt" >"$dir/info" 2>&1 || fail "uvmtrace cannot read the trace"
grep -Eq "launches +[1-9]" "$dir/info" || fail "the trace holds no launch"
if [ "$sig" = KILL ]; then
    grep -Eq "trace cut at byte [0-9]+ after [0-9]+ records" "$dir/info" || fail "uvmtrace does not say where the trace was cut"
else
    grep -q "trace cut" "$dir/info" && fail "the trace was not closed whole"
    grep -q "allocations converted:" "$dir/err" || fail "no summary on stderr"
    grep -q '"launches' "$dir/stats.json" 2>/dev/null || fail "no stats file"
fi
echo "signal test passed: SIG$sig"
