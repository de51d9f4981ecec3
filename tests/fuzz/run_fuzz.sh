#!/usr/bin/env bash
# Builds the trace-reader fuzzer with clang and runs it for a bounded time on a
# seed corpus made from the bundled synthetic traces.
#   tests/fuzz/run_fuzz.sh [SECONDS] [BUILD_DIR]
# Exit status 77 (a skipped test to ctest) when clang or its libFuzzer runtime
# is missing.
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-fuzz}
clangxx=${CLANGXX:-$(command -v clang++ || true)}
if [[ -z $clangxx ]]; then
  echo "run_fuzz.sh: clang++ not found (apt-get install clang libclang-rt-14-dev)" >&2
  exit 77
fi
mkdir -p "$build"
probe='extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }'
if ! echo "$probe" | "$clangxx" -fsanitize=fuzzer -x c++ - -o "$build/libfuzzer-probe" 2>/dev/null; then
  echo "run_fuzz.sh: $clangxx cannot link libFuzzer (apt-get install libclang-rt-14-dev)" >&2
  exit 77
fi

cmake -S "$root/tests/fuzz" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$clangxx" >/dev/null
cmake --build "$build" -j2 >/dev/null

seed=$root/examples/traces/synthetic.uvmt
corpus=$build/corpus
mkdir -p "$corpus" "$build/crashes"
# Seeds: the whole trace and a few prefixes of it, so that mutations start
# from both the header and the record stream.
cp "$seed" "$corpus/synthetic.uvmt"
# A trace of format 1.1 too: blocks of the pool and slab records.
cp "$root/examples/traces/synthetic-pooled.uvmt" "$corpus/synthetic-pooled.uvmt"
size=$(stat -c %s "$seed")
for cut in 12 64 256 1024 4096; do
  if (( cut < size )); then head -c "$cut" "$seed" > "$corpus/prefix-$cut.uvmt"; fi
done

start=$(date +%s)
status=0
"$build/fuzz_trace_reader" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$build/crashes/" -print_final_stats=1 2> "$build/fuzz.log" || status=$?
end=$(date +%s)

grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$build/fuzz.log" || true
echo "time: $((end - start)) s, exit status: $status"
crashes=$(find "$build/crashes" -type f | wc -l)
echo "crashes: $crashes"
if (( status != 0 || crashes != 0 )); then
  tail -n 40 "$build/fuzz.log"
  exit 1
fi
