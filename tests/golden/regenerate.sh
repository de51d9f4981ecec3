#!/usr/bin/env bash
# Rewrites every expected file listed in cases.txt from the current uvmtrace.
# Run it after a deliberate change of output, then review the diff.
#   tests/golden/regenerate.sh [UVMTRACE]     (default: build/tools/uvmtrace/uvmtrace)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
uvmtrace=${1:-$root/build/tools/uvmtrace/uvmtrace}
if [[ ! -x $uvmtrace ]]; then
  echo "regenerate.sh: no uvmtrace at $uvmtrace; build it or pass its path" >&2
  exit 2
fi

while read -r expected arguments; do
  [[ -z $expected || $expected == \#* ]] && continue
  read -r -a words <<< "${arguments//TRACES\//$root/examples/traces/}"
  "$uvmtrace" "${words[@]}" > "$here/$expected"
  echo "wrote tests/golden/$expected"
done < "$here/cases.txt"
