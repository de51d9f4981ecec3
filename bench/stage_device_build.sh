#!/usr/bin/env bash
# Copies what a GPU run needs out of a build directory into a small folder with
# the same layout, so that it can travel to a GPU machine without object files.
# Usage: bench/stage_device_build.sh BUILD_DIR STAGE_DIR
set -euo pipefail
build=$1
stage=$2
rm -rf "$stage"
for path in tools/uvmrun/uvmrun tools/uvmrun/python/sitecustomize.py tools/uvmtrace/uvmtrace src/preload/libuvmprefetch.so \
    examples/layers_static examples/layers_shared bench/empty_launch bench/populate_probe \
    bench/wait_or_fault_probe bench/link_probe bench/page_release_probe bench/slab_free_probe \
    bench/host_home_probe bench/pinned_home_probe; do
  if [ -f "$build/$path" ]; then
    mkdir -p "$stage/$(dirname "$path")"
    cp "$build/$path" "$stage/$path"
  else
    echo "missing: $build/$path" >&2
  fi
done
du -sh "$stage"
