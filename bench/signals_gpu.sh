#!/usr/bin/env bash
# A PyTorch job under `uvmrun --budget`, stopped mid-run by SIGTERM, SIGINT and SIGKILL on a
# real GPU, with the checks tests/integration/signal_test.sh makes on the stand-in driver:
#   SIGTERM, SIGINT: the job's own handler runs (bench/drivers/compat/churn_mlp.py --own-handler),
#                    the job dies of the signal, the library's summary is on stderr, the stats
#                    file is written and `uvmtrace info` reads the trace whole.
#   SIGKILL:         `uvmtrace info` reads the trace up to its cut and says where it was cut.
# Usage: bench/signals_gpu.sh BUILD OUT [SIGNALS (default "TERM INT KILL")]
# PYTHON picks the interpreter. The job's weights, gradients and momentum take 1.9 GiB; its
# budget is 1G, so that the library moves data when the signal comes (at step 20). Prints one
# line a signal, `signal SIGx: PASS (...)` or `signal SIGx: FAIL: why`; exit status 0 when all pass.
set -u
# The physical guard stays on: the job never asks for more managed memory than the GPU has free.
unset UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION
build=$1 out=$2 signals=${3:-TERM INT KILL}
python=${PYTHON:-python3}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
failed=0
for sig in $signals; do
    dir=$out/signal-$sig
    handler=yes
    [ "$sig" = KILL ] && handler=no
    bash "$here/../tests/integration/signal_test.sh" "$sig" "$handler" "^LOSS 20 " "$build/tools/uvmtrace/uvmtrace" \
        "$dir" -- "$build/tools/uvmrun/uvmrun" --budget 1G --stats-file "$dir/stats.json" --trace-out "$dir/trace.uvmt" \
        -- "$python" "$here/drivers/compat/churn_mlp.py" --width 2048 --layers 40 --steps 100000 --own-handler \
        >"$dir.check" 2>&1
    if [ $? = 0 ]; then
        steps=$(grep -c "^LOSS " "$dir/out")
        evicted=$(grep -o '"bytes_evicted": *[0-9]*' "$dir/stats.json" 2>/dev/null | grep -o '[0-9]*$' | head -1)
        echo "signal SIG$sig: PASS (steps done $steps, bytes evicted ${evicted:-none in a stats file})"
    else
        echo "signal SIG$sig: $(grep -m1 '^FAIL' "$dir.check" || echo 'FAIL: the check did not finish')"
        failed=1
    fi
done
exit $failed
