#!/usr/bin/env python3
"""`uvmtrace replay` on the GPU: recorded traces re-enacted under the library, with no budget
and at a budget, against the step times the traces recorded.

For each trace (default: the bundled GPT-2 small and resnet50 traces):
  1. no budget, the library's default policy: the replayed steady step against the recorded
     one; goal: within 10% (--tolerance);
  2. at the trace's footprint / --divisor (default 1.5), for each of --policies (default
     demand-lru and learned), with --steps copies of the last step (default 1) so that the
     learned policy has a step to learn from: the steady step, the bytes moved in and out a
     step, and the ratio to the replayed step without a budget.
Every run asks for at most --memory-share (default 0.5) of the GPU's free memory at the start:
a trace whose peak is larger is replayed at the scale that fits (--scale shrinks sizes and times
alike, so the recorded step it is compared with shrinks too). Runs that no longer fit the
deadline are skipped; each has its own timeout.

Prints one table; --json-out is rewritten after every run. --rows REPORT prints a report as
lines what<TAB>value<TAB>goal<TAB>verdict for bench/device_run.sh. --dry-run prints the plan.
Exit status 0 when every run that was started succeeded and every no-budget ratio is within
the tolerance.
"""

import argparse
import json
import math
import os
import subprocess
import sys

from bench_common import (REPO_ROOT, Clock, execute, fmt, last_json_line, text_table, write_atomically)

NO_BUDGET_TOLERANCE = 0.10
DEFAULT_TRACES = [os.path.join(REPO_ROOT, "examples", "traces", name)
                  for name in ("gpt2-small-b16.uvmt", "resnet50-b256.uvmt")]
# Below this many seconds left a run cannot even create its context and make its allocations.
MIN_RUN_SECONDS = 15


def free_gpu_bytes():
    """Free memory of GPU 0 now, from nvidia-smi; None when it cannot tell."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", "0"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return int(out.strip().splitlines()[0]) << 20
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def scale_to_fit(peak_bytes, free_bytes, share):
    """The largest scale (two decimals, at most 1) at which the trace's peak fits the share of free memory."""
    if not peak_bytes or free_bytes is None:
        return 1.0
    return min(1.0, math.floor(100.0 * share * free_bytes / peak_bytes) / 100.0)


def plan_runs(trace, args):
    """The runs of one trace: (mode, policy or None, budget text or None, extra steps)."""
    runs = [("no budget", None, None, 0)]
    budget = f"{100.0 / args.divisor:.1f}%"
    for policy in args.policies.split(","):
        runs.append((f"F/{args.divisor:g} {policy}", policy, budget, args.steps))
    return runs


def replay_command(args, trace, scale, policy, budget, steps, dry_run=False):
    command = [args.uvmtrace, "replay", trace, "--json", "--scale", f"{scale:g}"]
    if policy:
        command += ["--policy", policy]
    if budget:
        command += ["--budget", budget]
    if steps:
        command += ["--steps", str(steps)]
    if dry_run:
        command.append("--dry-run")
    return command


def run_replay(args, command, timeout):
    env = dict(os.environ, UVMP_LIBRARY=args.lib) if args.lib else None
    status, output = execute(command, timeout, env)
    print("\n".join(output.splitlines()[-8:]), flush=True)
    return status, last_json_line(output)


def row_of(trace, mode, status, result, baseline_ms, tolerance):
    row = {"trace": os.path.basename(trace), "mode": mode, "status": status}
    if result:
        row.update({key: result.get(key) for key in ("scale", "budget_bytes", "peak_live_bytes",
                                                     "steady_recorded_ms", "steady_replayed_ms", "steady_ratio")})
        steps = [s for s in result.get("steps", [])][1:] or result.get("steps", [])
        if steps:
            row["bytes_in_per_step"] = sum(s["bytes_in"] for s in steps) / len(steps)
            row["bytes_out_per_step"] = sum(s["bytes_out"] for s in steps) / len(steps)
        replayed = result.get("steady_replayed_ms")
        row["over_no_budget"] = replayed / baseline_ms if replayed and baseline_ms else None
    if mode == "no budget":
        ratio = row.get("steady_ratio")
        row["tolerance"] = tolerance
        row["within_goal"] = ratio is not None and abs(ratio - 1.0) <= tolerance
    return row


def table(rows):
    cells = [["trace", "mode", "scale", "recorded ms", "replayed ms", "ratio", "x no budget", "in/step GB",
              "out/step GB", "status"]]
    for r in rows:
        gb = lambda key: fmt(r[key] / 1e9, 2) if r.get(key) is not None else "n/a"
        cells.append([r["trace"], r["mode"], fmt(r.get("scale")), fmt(r.get("steady_recorded_ms"), 1),
                      fmt(r.get("steady_replayed_ms"), 1), fmt(r.get("steady_ratio"), 3),
                      fmt(r.get("over_no_budget")), gb("bytes_in_per_step"), gb("bytes_out_per_step"),
                      str(r["status"])])
    return text_table(cells)


def print_rows(path):
    try:
        report = json.load(open(path))
    except (OSError, json.JSONDecodeError):
        print("replay report\tmissing\tpresent\tFAIL")
        return
    for r in report["rows"]:
        name = f"replay {r['trace']} {r['mode']}"
        if r["status"] != "ok":
            print(f"{name}\t{r['status']}\t-\t{'TIMEOUT' if r['status'] == 'timeout' else 'FAIL'}")
        elif r["mode"] == "no budget":
            value = f"{fmt(r.get('steady_replayed_ms'), 1)}/{fmt(r.get('steady_recorded_ms'), 1)}ms " \
                    f"{fmt(r.get('steady_ratio'), 3)}x"
            print(f"{name}\t{value}\t1 +- {r['tolerance']:g}\t{'PASS' if r['within_goal'] else 'FAIL'}")
        else:
            value = f"{fmt(r.get('steady_replayed_ms'), 1)}ms, {fmt(r.get('over_no_budget'))}x no budget"
            print(f"{name}\t{value}\t-\tinfo")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("traces", nargs="*", default=DEFAULT_TRACES)
    parser.add_argument("--uvmtrace", default="uvmtrace")
    parser.add_argument("--lib", help="libuvmprefetch.so (UVMP_LIBRARY for the replays)")
    parser.add_argument("--divisor", type=float, default=1.5, help="budget = footprint / this")
    parser.add_argument("--policies", default="demand-lru,learned")
    parser.add_argument("--steps", type=int, default=1, help="copies of the last step in the budget runs")
    parser.add_argument("--memory-share", type=float, default=0.5,
                        help="the most of the GPU's free memory a replay may take at its peak")
    parser.add_argument("--tolerance", type=float, default=NO_BUDGET_TOLERANCE,
                        help="how far the no-budget step may be from the recorded one, as a share of it")
    parser.add_argument("--timeout-s", type=float, default=45)
    parser.add_argument("--deadline-s", type=float, default=110)
    parser.add_argument("--json-out")
    parser.add_argument("--dry-run", action="store_true", help="print the runs, replay nothing")
    parser.add_argument("--rows", metavar="REPORT", help="print REPORT's rows for device_run.sh and stop")
    args = parser.parse_args()
    if args.rows:
        print_rows(args.rows)
        return 0

    clock = Clock(args.deadline_s)
    free = free_gpu_bytes()
    print(f"GPU 0 free at start: {fmt(free / 2**30 if free else None)} GiB; each replay may take "
          f"{args.memory_share:g} of it", flush=True)
    rows, problems = [], []
    for trace in args.traces:
        status, plan = run_replay(args, replay_command(args, trace, 1.0, None, None, 0, dry_run=True), 60)
        if status != 0 or not plan:
            problems.append(f"{trace}: the plan could not be made (exit {status})")
            continue
        scale = scale_to_fit(plan["peak_live_bytes"], free, args.memory_share)
        print(f"{trace}: peak live {plan['peak_live_bytes'] / 2**30:.2f} GiB, footprint "
              f"{plan['footprint_bytes'] / 2**30:.2f} GiB: scale {scale:g}", flush=True)
        baseline_ms = None
        for mode, policy, budget, steps in plan_runs(trace, args):
            command = replay_command(args, trace, scale, policy, budget, steps)
            print("$ " + " ".join(command), flush=True)
            if args.dry_run:
                continue
            left = clock.left() - 5
            if left < MIN_RUN_SECONDS:
                rows.append({"trace": os.path.basename(trace), "mode": mode, "status": "skipped"})
                continue
            status, result = run_replay(args, command, min(args.timeout_s, left))
            outcome = "ok" if status == 0 and result else "timeout" if status == 124 else f"failed ({status})"
            row = row_of(trace, mode, outcome, result, baseline_ms, args.tolerance)
            if mode == "no budget":
                baseline_ms = row.get("steady_replayed_ms")
            if outcome != "ok":
                problems.append(f"{trace} {mode}: {outcome}")
            elif mode == "no budget" and not row["within_goal"]:
                problems.append(f"{trace}: no-budget step ratio {fmt(row.get('steady_ratio'), 3)} is outside "
                                f"1 +- {args.tolerance:g}")
            rows.append(row)
            write_atomically(args.json_out, json.dumps({"rows": rows, "free_bytes": free}, indent=1))
    if args.dry_run:
        return 0
    print(table(rows))
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
