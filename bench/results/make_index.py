#!/usr/bin/env python3
"""Writes bench/results/README.md: one line per series of kept results (what made them, with
which command, how many files and runs). Run it after adding results; --check exits 1 when the
README is out of date.

Only summaries are kept here (.json and .md). Raw captures (logs, text dumps, archives) go to
bench/results/raw/, which git ignores."""

import argparse
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
KEPT_KINDS = (".json", ".md")
SELF_FILES = ("README.md",)

# (series, file name pattern, what made it). The device script writes a fixed name into $OUT
# (named in brackets); a run's files are copied here under the series name and the run number.
SERIES = [
    ("compat-run", r"compat-run-\d+",
     "`ONLY=compat bench/device_run.sh` (bench/drivers/compat.py) [compat.json, compat.md]"),
    ("overhead-run", r"overhead-run-\d+",
     "`bench/device_run.sh` with no ONLY (bench/drivers/overhead.py) [overhead.json]"),
    ("oversub-run", r"oversub-run-\d+",
     "`ONLY=oversub bench/device_run.sh` or `OVERSUB=1` (bench/drivers/oversubscription.py) "
     "[oversub.json, oversub.md]"),
    ("pool-run", r"pool-run-\d+",
     "`ONLY=pool bench/device_run.sh` or `POOL=1`, POOL_ARGS for pressure runs "
     "(bench/drivers/pool_frees.py) [pool.json, pool.md]"),
    ("figures-run", r"figures-run-\d+",
     "`bench/drivers/compat/memory_figures.py` natively and under `uvmrun --budget`, by hand; the .md by hand"),
    ("decode-check-run", r"decode-check-run-\d+",
     "`examples/generate_workload.py --deterministic --new-tokens 24 --warmup 6 --layers 16` natively twice "
     "and under plain `uvmrun`, with `uvmrun --probe-rates` first, by hand on the GPU machine"),
    ("trial-check-run", r"trial-check-run-\d+",
     "`UVMP_LOG_LEVEL=info uvmrun --stats-file FILE --budget B -- python3 examples/train_workload.py ...` by "
     "hand on the GPU machine: the remote trial's log lines and the stats file"),
    ("infer-run", r"infer-run-\d+",
     "`ONLY=infer bench/device_run.sh` (bench/drivers/inference.py) [infer.json, infer.md]"),
    ("robust-run", r"robust-run-\d+",
     "`ONLY=robust bench/device_run.sh` (compat.py --scenarios compile-modes, ddp_overhead.py, churn.py) "
     "[robust-compile.*, robust-ddp.*, robust-churn.*]"),
    ("replay-run", r"replay-run-\d+",
     "`ONLY=replay bench/device_run.sh` (bench/drivers/replay.py) [replay.json]; the .md by hand"),
    ("host-home-run", r"host-home-run-\d+",
     "`bench/host_home_probe GIB` and `bench/pinned_home_probe GIB` (bench/probes/host_home_probe.cu, "
     "pinned_home_probe.cu), by hand on the GPU machine"),
    ("probe-run", r"probe-run-\d+",
     "`PROBE=1 bench/device_run.sh` (bench/probes/populate_probe.cu) [probe.json]"),
    ("slab-free-run", r"slab-free-run-\d+",
     "`bench/slab_free_probe GIB 4` (bench/probes/slab_free_probe.cu), by hand on the GPU machine"),
    ("wait-or-fault-run", r"wait-or-fault-run-\d+",
     "`PROBE=1 bench/device_run.sh` (bench/probes/wait_or_fault_probe.cu) [wait_or_fault.json]"),
    ("sim-speed-run", r"sim-speed-run-\d+",
     "`bench/drivers/sim_speed.py --uvmtrace build/tools/uvmtrace/uvmtrace --json OUT` on the GPU machine"),
    ("sim-speed-2core", r"sim-speed-2core-",
     "`bench/drivers/sim_speed.py --uvmtrace build/tools/uvmtrace/uvmtrace --json OUT` on a 2-core "
     "build machine, old and new builds alternated (a, b, ... the repeats)"),
    ("demo-run", r"demo-run-\d+",
     "`UVMP_PREBUILT=1 bash scripts/demo.sh` on the GPU machine; the .md by hand from its output"),
    ("rates-run", r"rates-run-\d+",
     "`bench/rates_check.sh BUILD_DIR` on the GPU machine; the .md by hand from its table"),
    ("side-runs", r"side-runs-",
     "written by hand: figures read from device runs whose logs are not kept"),
]


def series_of(name):
    for series, pattern, _ in SERIES:
        if re.match(pattern, name):
            return series
    return None


def run_numbers(names):
    numbers = sorted({int(m.group(1)) for n in names for m in [re.search(r"-run-(\d+)", n)] if m})
    if not numbers:
        return "-"
    return f"{numbers[0]}-{numbers[-1]} ({len(numbers)} runs)" if len(numbers) > 1 else str(numbers[0])


def render(files):
    groups = defaultdict(list)
    unknown = []
    for name in files:
        series = series_of(name)
        (groups[series].append(name) if series else unknown.append(name))
    lines = [
        "# Benchmark results",
        "",
        "Summaries of benchmark runs (JSON reports and Markdown tables), named",
        "`<series>-<run number>[-<what varied>].<json|md>`; docs/benchmarks.md tells what each run",
        "showed. Raw captures (device logs, text dumps, archives) are not kept in git: put them in",
        "`bench/results/raw/`, which is ignored. Those of earlier runs are in the history:",
        "`git log --diff-filter=D --name-only -- bench/results` lists them and",
        "`git show <commit>^:bench/results/<name>` prints one.",
        "",
        "Written by `bench/results/make_index.py`; run it again after adding results.",
        "",
        "| series | files | runs | made by |",
        "| --- | --- | --- | --- |",
    ]
    for series, _, producer in SERIES:
        names = groups.get(series)
        if not names:
            continue
        kinds = ", ".join(f"{sum(n.endswith(k) for n in names)} {k}" for k in KEPT_KINDS
                          if any(n.endswith(k) for n in names))
        lines.append(f"| {series} | {kinds} | {run_numbers(names)} | {producer} |")
    if unknown:
        lines += ["", "Not in a known series (add them to SERIES in make_index.py):", ""]
        lines += [f"- {name}" for name in unknown]
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when README.md is out of date")
    args = parser.parse_args()
    files = sorted(name for name in os.listdir(HERE)
                   if name.endswith(KEPT_KINDS) and name not in SELF_FILES and os.path.isfile(os.path.join(HERE, name)))
    text = render(files)
    readme = os.path.join(HERE, "README.md")
    if args.check:
        with open(readme, encoding="utf-8") as current:
            if current.read() != text:
                print("bench/results/README.md is out of date: run bench/results/make_index.py", file=sys.stderr)
                return 1
        return 0
    with open(readme, "w", encoding="utf-8") as out:
        out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
