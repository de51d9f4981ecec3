#!/usr/bin/env python3
"""`uvmtrace replay` on the GPU: recorded traces re-enacted under the library, with no budget
and at a budget, against the step times the traces recorded.

For each trace (default: the bundled pooled GPT-2 small and resnet50 traces, recorded with the
managed pool and its frees; name examples/traces/gpt2-small-b16.uvmt and resnet50-b256.uvmt to
replay the older 1.0 ones):
  1. no budget, the library's default policy: the replayed steady step against the recorded
     one; goal: within 10% (--tolerance);
  2. at the trace's footprint / --divisor (default 1.5), for each of --policies (default
     demand-lru and learned), with --steps copies of the last step (default 1) so that the
     learned policy has a step to learn from: the steady step, the bytes moved in and out a
     step, and the ratio to the replayed step without a budget. With --real-job REPORT (a
     bench/drivers/pool_frees.py --json-out report from the same device), beside each budget row the
     real job's step time under the same policy (its pressure runs: GPT-2 small at 16G) and the
     ratio replay / real (the real step times the replay's scale).
Every run asks for at most --memory-share (default 0.5) of the GPU's free memory at the start:
a trace whose peak is larger is replayed at the scale that fits (--scale shrinks sizes and times
alike, so the recorded step it is compared with shrinks too). Runs that no longer fit the
deadline are skipped; each has its own timeout.

Prints one table; --json-out is rewritten after every run. --rows REPORT prints a report as
lines what<TAB>value<TAB>goal<TAB>verdict for bench/device_run.sh. --dry-run plans every run
with `uvmtrace replay --dry-run` (no GPU needed) and replays nothing.
Exit status 0 when every run that was started succeeded (with --dry-run: every plan was made) and
every no-budget ratio is within the tolerance.
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
                  for name in ("gpt2-small-b16-pooled.uvmt", "resnet50-b256-pooled.uvmt")]
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


def run_replay(args, command, timeout, quiet=False):
    env = dict(os.environ, UVMP_LIBRARY=args.lib) if args.lib else None
    status, output = execute(command, timeout, env)
    if not quiet or status != 0:
        print("\n".join(output.splitlines()[-8:]), flush=True)
    return status, last_json_line(output)


def plan_text(plan):
    """What a dry run planned, in a few words."""
    budget = plan.get("budget_bytes")
    steps = plan.get("steps_planned")
    return (f"planned {plan.get('launches')} launches in {steps} step{'' if steps == 1 else 's'}, budget "
            f"{f'{budget / 2**30:.2f} GiB' if budget else 'none'}")


def load_real_job(path):
    """A bench/drivers/pool_frees.py report: {(workload, mode): (median step ms, budget label)} of its
    rows that ran."""
    report = json.load(open(path))
    return {(r["workload"], r["mode"]): (r["median_ms"], r.get("budget"))
            for r in report.get("rows", []) if r.get("status") == "ok" and r.get("median_ms")}


def workload_of(trace, real_job):
    """The real job's workload that the trace's file name starts with (the longest), or None."""
    name = os.path.basename(trace)
    matches = [w for w, _ in real_job if name.startswith(w)]
    return max(matches, key=len) if matches else None


def real_job_of(trace, policy, real_job):
    """(median step ms, budget label) of the real job's run of the trace's workload under policy, or None."""
    if not real_job or not policy:
        return None
    return real_job.get((workload_of(trace, real_job), policy))


def over_real_job(replayed_ms, real, scale):
    """The replayed step over the real job's, scaled as the replay was (--scale shrinks its step)."""
    return replayed_ms / (real[0] * (scale or 1.0)) if replayed_ms and real else None


def real_job_text(real, replayed_ms=None, scale=1.0):
    if not real:
        return "real job: n/a"
    ms, budget = real
    text = f"real job: {fmt(ms, 1)} ms a step at {budget}"
    if replayed_ms:
        text += f", replay/real {fmt(over_real_job(replayed_ms, real, scale), 3)}"
        if scale != 1.0:
            text += f" (the real step scaled by {scale:g})"
    return text


def row_of(trace, mode, status, result, baseline_ms, tolerance, real=None):
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
        if real:
            row["real_job_ms"], row["real_job_budget"] = real
            row["over_real_job"] = over_real_job(replayed, real, result.get("scale"))
    if mode == "no budget":
        ratio = row.get("steady_ratio")
        row["tolerance"] = tolerance
        row["within_goal"] = ratio is not None and abs(ratio - 1.0) <= tolerance
    return row


def table(rows, real_job=False):
    cells = [["trace", "mode", "scale", "recorded ms", "replayed ms", "ratio", "x no budget", "in/step GB",
              "out/step GB"] + (["real job ms", "x real"] if real_job else []) + ["status"]]
    for r in rows:
        gb = lambda key: fmt(r[key] / 1e9, 2) if r.get(key) is not None else "n/a"
        real = []
        if real_job:
            real = ["-", "-"] if r["mode"] == "no budget" else [
                f"{fmt(r.get('real_job_ms'), 1)} at {r['real_job_budget']}" if r.get("real_job_ms") else "n/a",
                fmt(r.get("over_real_job"), 3)]
        cells.append([r["trace"], r["mode"], fmt(r.get("scale")), fmt(r.get("steady_recorded_ms"), 1),
                      fmt(r.get("steady_replayed_ms"), 1), fmt(r.get("steady_ratio"), 3),
                      fmt(r.get("over_no_budget")), gb("bytes_in_per_step"), gb("bytes_out_per_step")] + real +
                     [str(r["status"])])
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
            if r.get("real_job_ms"):
                value += f", {fmt(r.get('over_real_job'), 3)}x real {fmt(r['real_job_ms'], 1)}ms"
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
    parser.add_argument("--real-job", metavar="REPORT", action="append",
                        help="a bench/drivers/pool_frees.py --json-out report: each budget row shows the real job's step "
                             "under the same policy and the ratio replay / real (repeatable: one report a workload)")
    parser.add_argument("--dry-run", action="store_true",
                        help="plan every run (uvmtrace replay --dry-run, no GPU needed), replay nothing")
    parser.add_argument("--rows", metavar="REPORT", help="print REPORT's rows for device_run.sh and stop")
    args = parser.parse_args()
    if args.rows:
        print_rows(args.rows)
        return 0

    real_job = None
    for path in args.real_job or []:
        try:
            real_job = {**(real_job or {}), **load_real_job(path)}
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"--real-job {path}: not a bench/drivers/pool_frees.py report ({error})", file=sys.stderr)
            return 2
    clock = Clock(args.deadline_s)
    free = free_gpu_bytes()
    print(f"GPU 0 free at start: {fmt(free / 2**30 if free else None)} GiB; each replay may take "
          f"{args.memory_share:g} of it", flush=True)
    rows, problems = [], []
    for trace in args.traces:
        status, plan = run_replay(args, replay_command(args, trace, 1.0, None, None, 0, dry_run=True), 60, quiet=True)
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
            real = real_job_of(trace, policy, real_job)
            if args.dry_run:
                status, planned = run_replay(args, command + ["--dry-run"], 60, quiet=True)
                made = status == 0 and planned
                print(f"{os.path.basename(trace)} {mode}: "
                      f"{plan_text(planned) if made else f'the plan could not be made (exit {status})'}"
                      f"{'; ' + real_job_text(real) if real_job and policy else ''}", flush=True)
                if not made:
                    problems.append(f"{trace} {mode}: the plan could not be made (exit {status})")
                continue
            left = clock.left() - 5
            if left < MIN_RUN_SECONDS:
                rows.append({"trace": os.path.basename(trace), "mode": mode, "status": "skipped"})
                continue
            status, result = run_replay(args, command, min(args.timeout_s, left))
            outcome = "ok" if status == 0 and result else "timeout" if status == 124 else f"failed ({status})"
            row = row_of(trace, mode, outcome, result, baseline_ms, args.tolerance, real)
            if real_job and policy:
                print(f"{os.path.basename(trace)} {mode}: "
                      f"{real_job_text(real, row.get('steady_replayed_ms'), scale)}", flush=True)
            if mode == "no budget":
                baseline_ms = row.get("steady_replayed_ms")
            if outcome != "ok":
                problems.append(f"{trace} {mode}: {outcome}")
            elif mode == "no budget" and not row["within_goal"]:
                problems.append(f"{trace}: no-budget step ratio {fmt(row.get('steady_ratio'), 3)} is outside "
                                f"1 +- {args.tolerance:g}")
            rows.append(row)
            write_atomically(args.json_out, json.dumps({"rows": rows, "free_bytes": free, "real_job": args.real_job},
                                                       indent=1))
    if not args.dry_run:
        print(table(rows, real_job is not None))
    for problem in problems:
        print(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
