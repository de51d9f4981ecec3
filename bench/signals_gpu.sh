#!/usr/bin/env bash
# A PyTorch job under `uvmrun --budget`, stopped mid-run by SIGTERM, SIGINT and SIGKILL on a
# real GPU: what tests/integration/signal_test.sh checks on the stand-in driver.
#   SIGTERM, SIGINT: the job's own handler runs (bench/drivers/compat/churn_mlp.py --own-handler),
#                    the job dies of the signal, the library's summary is on stderr, the stats
#                    file is written and `uvmtrace info` reads the trace whole.
#   SIGKILL:         `uvmtrace info` reads the trace up to its cut and says where it was cut.
# Usage: bench/signals_gpu.sh BUILD OUT [SIGNALS (default "TERM INT KILL")]
# PYTHON picks the interpreter. The job's weights, gradients and momentum take 1.9 GiB; its
# budget is 1G, so that the library moves data when the signal comes. Prints one line a signal,
# `signal SIGx: PASS` or `signal SIGx: FAIL: why`; exit status 0 when all pass.
set -u
build=$1 out=$2 signals=${3:-TERM INT KILL}
python=${PYTHON:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
uvmrun=$build/tools/uvmrun/uvmrun uvmtrace=$build/tools/uvmtrace/uvmtrace
failed=0
for sig in $signals; do
    dir=$out/signal-$sig
    rm -rf "$dir" && mkdir -p "$dir"
    verdict=PASS
    "$uvmrun" --budget 1G --stats-file "$dir/stats.json" --trace-out "$dir/trace.uvmt" -- \
        "$python" "$here/drivers/compat/churn_mlp.py" --width 2048 --layers 40 --steps 100000 --own-handler \
        >"$dir/out" 2>"$dir/err" &
    pid=$!
    # Well into the run: the budget binds from the first step, and the writer puts whole
    # records on disk at least once a second.
    for _ in $(seq 600); do grep -q "^LOSS 20 " "$dir/out" && break; sleep 0.1; done
    if ! grep -q "^LOSS 20 " "$dir/out"; then
        verdict="FAIL: the job did not reach step 20 in 60 s"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid"
    else
        [ "$sig" = KILL ] && sleep 1.5
        kill -s "$sig" "$pid"
        wait "$pid"
        status=$?
        want=$((128 + $(kill -l "$sig")))
        "$uvmtrace" info "$dir/trace.uvmt" >"$dir/info" 2>&1
        info_status=$?
        if [ "$status" != "$want" ]; then
            verdict="FAIL: exit status $status, not $want"
        elif [ "$info_status" != 0 ]; then
            verdict="FAIL: uvmtrace cannot read the trace"
        elif ! grep -Eq "launches +[1-9]" "$dir/info"; then
            verdict="FAIL: the trace holds no launch"
        elif [ "$sig" = KILL ]; then
            grep -Eq "trace cut at byte [0-9]+ after [0-9]+ records" "$dir/info" ||
                verdict="FAIL: uvmtrace does not say where the trace was cut"
        elif ! grep -q "own handler ran for signal $sig" "$dir/out"; then
            verdict="FAIL: the job's own handler did not run"
        elif grep -q "trace cut" "$dir/info"; then
            verdict="FAIL: the trace was not closed whole"
        elif ! grep -q "allocations converted:" "$dir/err"; then
            verdict="FAIL: no summary on stderr"
        elif ! grep -q '"launches' "$dir/stats.json" 2>/dev/null; then
            verdict="FAIL: no stats file"
        fi
    fi
    steps=$(grep -c "^LOSS " "$dir/out")
    evicted=$(grep -o '"bytes_evicted": *[0-9]*' "$dir/stats.json" 2>/dev/null | grep -o '[0-9]*$' | head -1)
    echo "signal SIG$sig: $verdict (steps done $steps, bytes evicted ${evicted:-none in a stats file})"
    [ "$verdict" = PASS ] || failed=1
done
exit $failed
