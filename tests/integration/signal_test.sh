#!/usr/bin/env bash
# Stops a job under the preloaded library with a signal mid-run and checks what
# survives it. Usage: signal_test.sh SIGNAL MODE TARGET UVMTRACE LIBRARY DIR
#   SIGNAL  INT, TERM or KILL; MODE  none, before or after (signal_target.cpp).
# INT and TERM: the job dies of the signal, its own handler (if any) having
# run, with the summary, the stats file and a whole trace. KILL: the trace
# reads up to where it was cut, and uvmtrace says so.
set -u
sig=$1 mode=$2 target=$3 uvmtrace=$4 library=$5 dir=$6
rm -rf "$dir" && mkdir -p "$dir"
fail() {
    echo "FAIL: $*"
    for f in out err info; do [ -f "$dir/$f" ] && { echo "--- $f"; cat "$dir/$f"; }; done
    exit 1
}
env LD_PRELOAD="$library" UVMP_SUMMARY=1 UVMP_STATS_FILE="$dir/stats.json" UVMP_TRACE_OUT="$dir/trace.uvmt" \
    "$target" "$mode" >"$dir/out" 2>"$dir/err" &
pid=$!
for _ in $(seq 400); do grep -q launching "$dir/out" && break; sleep 0.05; done
grep -q launching "$dir/out" || fail "the job never got under way"
# The writer puts whole records on disk at least once a second.
[ "$sig" = KILL ] && sleep 1.5
kill -s "$sig" "$pid"
wait "$pid"
status=$?
want=$((128 + $(kill -l "$sig")))
[ "$status" = "$want" ] || fail "exit status $status, not $want (killed by SIG$sig)"
if [ "$mode" != none ]; then
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
echo "signal test passed: SIG$sig, mode $mode"
