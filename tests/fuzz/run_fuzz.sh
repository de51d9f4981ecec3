#!/usr/bin/env bash
# Builds one fuzzer with clang and runs it for a bounded time on a seed corpus:
# trace_reader (the bundled synthetic traces) or config (the example job file and
# settings of the environment).
#   tests/fuzz/run_fuzz.sh [SECONDS] [BUILD_DIR] [trace_reader|config]
# Exit status 77 (a skipped test to ctest) when clang or its libFuzzer runtime
# is missing.
set -euo pipefail

seconds=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$root/build-fuzz}
target=${3:-trace_reader}
case $target in
  trace_reader|config) ;;
  *) echo "run_fuzz.sh: unknown fuzzer '$target' (trace_reader or config)" >&2; exit 2 ;;
esac
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
cmake --build "$build" -j2 --target "fuzz_$target" >/dev/null

corpus=$build/corpus-$target
crashes_dir=$build/crashes-$target
log=$build/fuzz-$target.log
mkdir -p "$corpus" "$crashes_dir"
if [[ $target == trace_reader ]]; then
  seed=$root/examples/traces/synthetic.uvmt
  # Seeds: the whole trace and a few prefixes of it, so that mutations start
  # from both the header and the record stream.
  cp "$seed" "$corpus/synthetic.uvmt"
  # A trace of format 1.1 too: blocks of the pool and slab records.
  cp "$root/examples/traces/synthetic-pooled.uvmt" "$corpus/synthetic-pooled.uvmt"
  size=$(stat -c %s "$seed")
  for cut in 12 64 256 1024 4096; do
    if (( cut < size )); then head -c "$cut" "$seed" > "$corpus/prefix-$cut.uvmt"; fi
  done
else
  # Seeds (fuzz_config.cpp has the layout): the example job file alone, settings of
  # the environment alone (a byte picking the option, in table order, then the
  # value), and both.
  { printf '\0'; cat "$root/examples/job.toml"; } > "$corpus/job-file"
  printf '\x0124G\n\x064M\n\x0764M\n\x09500ms\n\x04demand-lru\n\x0fjob-%%p.uvmt\n\x05off\n' > "$corpus/environment"
  { printf '\x0180%%\n\x062M\n\0'; cat "$root/examples/job.toml"; } > "$corpus/both"
fi

start=$(date +%s)
status=0
"$build/fuzz_$target" "$corpus" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -artifact_prefix="$crashes_dir/" -print_final_stats=1 2> "$log" || status=$?
end=$(date +%s)

grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$log" || true
echo "time: $((end - start)) s, exit status: $status"
crashes=$(find "$crashes_dir" -type f | wc -l)
echo "crashes: $crashes"
if (( status != 0 || crashes != 0 )); then
  tail -n 40 "$log"
  exit 1
fi
