#!/usr/bin/env python3
"""What the library costs a job that fits in its budget.

1. resnet50 training step time (bench/drivers/overhead_resnet50.py), natively, under uvmrun with
   a budget above the footprint, and under uvmrun recording an access trace (--trace-out),
   in rounds that each run every mode once, each round starting with the next mode
   (native, lib, trace; lib, trace, native; ...), so that drift of a shared machine and
   what one run leaves to the next hit every mode alike; --cpus keeps every run on the
   same cores. Reports the median step time of each mode, the ratios lib/native and
   trace/native, and each round's own ratios with their median.
2. Host time per kernel launch (bench/empty_launch), natively, under uvmrun and under uvmrun
   recording a trace; the differences are what the launch hook costs per launch, without and
   with recording.

Usage: overhead.py --uvmrun PATH --empty-launch PATH [--lib PATH] [--budget 32G]
                   [--policy none] [--rounds 2] [--cpus 0-7] [--json-out FILE]
Exit status 0 when every run succeeded, 1 otherwise (the report is printed either way).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from bench_common import hook_ns_per_launch, last_json_line, rotated

MODE_NAMES = {"native": "native", "lib": "uvmrun", "trace": "uvmrun --trace-out"}
RESNET_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "overhead_resnet50.py")


def parse_cpus(text):
    """"0-7" or "0,2,4-6" as a set of CPU numbers."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus


class Runner:
    """Runs one workload natively or under uvmrun and collects its JSON result and counters."""

    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.run_count = 0
        self.failures = []
        # Native and library runs share one environment, so they differ only by the library;
        # uvmrun would turn PyTorch's expandable segments off for its runs alone otherwise.
        self.env = dict(os.environ)
        self.env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False")
        if args.lib:
            self.env["UVMP_LIBRARY"] = os.path.abspath(args.lib)

    def run(self, label, command, mode, timeout):
        """mode: native, lib (under uvmrun) or trace (under uvmrun, recording a trace)."""
        self.run_count += 1
        stats_path = os.path.join(self.workdir, f"stats.{self.run_count}.json")
        under_library = mode != "native"
        if under_library:
            wrapper = [self.args.uvmrun, "--budget", self.args.budget, "--policy", self.args.policy,
                       "--stats-file", stats_path]
            if mode == "trace":
                # One file per run: the recording cost includes writing it.
                wrapper += ["--trace-out", os.path.join(self.workdir, f"trace.{self.run_count}.uvmt")]
            command = wrapper + ["--"] + command
        print(f"--- {label} ({MODE_NAMES[mode]})\n$ {' '.join(command)}", flush=True)
        try:
            completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                       timeout=timeout, env=self.env)
            status, output = completed.returncode, completed.stdout
        except subprocess.TimeoutExpired as expired:
            output = expired.stdout.decode(errors="replace") if isinstance(expired.stdout, bytes) else (expired.stdout or "")
            status = 124
        except OSError as error:
            status, output = 127, f"cannot start {command[0]}: {error}\n"
        # Step lines are long and many; the tail holds the summary and any error.
        print("\n".join(output.splitlines()[-15:]), flush=True)
        result = last_json_line(output)
        if status != 0 or result is None:
            self.failures.append(f"{label} ({MODE_NAMES[mode]}): exit {status}")
            return None
        if under_library:
            result["library_counters"] = read_counters(stats_path)
        if mode == "trace":
            # Traces of finished runs are not needed any more and can be large.
            trace_path = os.path.join(self.workdir, f"trace.{self.run_count}.uvmt")
            result["trace_bytes"] = os.path.getsize(trace_path) if os.path.exists(trace_path) else 0
            if os.path.exists(trace_path):
                os.remove(trace_path)
        return result


def read_counters(path):
    try:
        with open(path, encoding="utf-8") as stats_file:
            return json.load(stats_file)
    except (OSError, json.JSONDecodeError) as error:
        print(f"no library counters from {path}: {error}", flush=True)
        return None


def library_was_active(results):
    counters = [r.get("library_counters") for r in results]
    return bool(counters) and all(c is not None and c.get("active") == 1 for c in counters)


MODES = ("native", "lib", "trace")


def run_rounds(runner, label, command, rounds, timeout):
    """Runs every mode once a round, in rotated order. Returns each mode's results and,
    per round, each mode's result of that round."""
    results = {mode: [] for mode in MODES}
    by_round = []
    for round_index in range(rounds):
        this_round = {}
        for mode in rotated(MODES, round_index):
            result = runner.run(f"{label} round {round_index + 1}", command, mode, timeout)
            if result is not None:
                results[mode].append(result)
                this_round[mode] = result
        by_round.append(this_round)
    return results, by_round


def measure_resnet(runner, args):
    command = [sys.executable, RESNET_SCRIPT, "--batch", str(args.batch), "--warmup", str(args.warmup),
               "--steps", str(args.steps)]
    results, by_round = run_rounds(runner, "resnet50", command, args.rounds, args.timeout)
    round_medians = [{mode: result["median_ms"] for mode, result in r.items()} for r in by_round]
    report = {"rounds": args.rounds, "batch": args.batch, "runs": results, "round_medians_ms": round_medians}
    for mode in MODES:
        steps = [ms for result in results[mode] for ms in result["step_ms"]]
        report[f"{mode}_median_ms"] = statistics.median(steps) if steps else None
        report[f"{mode}_run_medians_ms"] = [result["median_ms"] for result in results[mode]]
        issue = [ms for result in results[mode] for ms in result.get("issue_ms", [])]
        report[f"{mode}_median_issue_ms"] = statistics.median(issue) if issue else None
    for mode in ("lib", "trace"):
        if report["native_median_ms"] and report[f"{mode}_median_ms"]:
            report[f"ratio_{mode}_over_native"] = report[f"{mode}_median_ms"] / report["native_median_ms"]
        else:
            report[f"ratio_{mode}_over_native"] = None
        # The runs of one round follow each other within minutes: their ratio leaves out
        # how fast the host was that round, which moves single runs by 10% or more.
        paired = [r[mode] / r["native"] for r in round_medians if r.get(mode) and r.get("native")]
        report[f"paired_ratios_{mode}"] = paired
        report[f"paired_ratio_{mode}_over_native"] = statistics.median(paired) if paired else None
    report["library_active"] = library_was_active(results["lib"])
    report["library_active_tracing"] = library_was_active(results["trace"])
    report["trace_recorded"] = trace_was_recorded(results["trace"])
    add_hook_costs(report, results)
    return report


def add_hook_costs(report, results):
    """What the library's own launch work costs inside the program, from the hooks it times
    (one launch in 64): per launch, per step, and what recording adds as a share of the
    native step. Unlike step times, host CPU time spent in the hook does not move with how
    busy the GPU is or how fast the host happened to be that run beyond its own work."""
    for mode in ("lib", "trace"):
        counters = [result.get("library_counters") or {} for result in results[mode]]
        report[f"{mode}_hook_ns"] = hook_ns_per_launch(counters)
        marks = sum(c.get("iterations", 0) for c in counters)
        seen = sum(c.get("launches_seen", 0) for c in counters)
        report[f"{mode}_launches_per_step"] = seen / marks if marks else None
    per_step = report["trace_launches_per_step"]
    if report["lib_hook_ns"] is not None and report["trace_hook_ns"] is not None and per_step:
        added_ms = (report["trace_hook_ns"] - report["lib_hook_ns"]) * per_step / 1e6
        report["recording_hook_ms_per_step"] = added_ms
        native = report["native_median_ms"]
        report["recording_hook_share_of_step"] = added_ms / native if native else None
    else:
        report["recording_hook_ms_per_step"] = None
        report["recording_hook_share_of_step"] = None


def trace_was_recorded(results):
    """Every tracing run wrote records and dropped none: otherwise the ratio does not
    measure the full cost of recording."""
    if not results:
        return False
    for result in results:
        counters = result.get("library_counters") or {}
        if not counters.get("trace_records_written") or counters.get("trace_records_dropped"):
            return False
    return True


def measure_launch(runner, args):
    command = [args.empty_launch, str(args.launches)]
    results, _ = run_rounds(runner, "empty_launch", command, args.rounds, args.launch_timeout)
    report = {"launches": args.launches, "runs": results}
    for mode in MODES:
        values = [result["ns_per_launch"] for result in results[mode]]
        report[f"{mode}_ns_per_launch"] = statistics.median(values) if values else None
    # What the hook adds to a launch, without and with recording.
    for key, mode in (("hook_ns_per_launch", "lib"), ("trace_hook_ns_per_launch", "trace")):
        if report["native_ns_per_launch"] is not None and report[f"{mode}_ns_per_launch"] is not None:
            report[key] = report[f"{mode}_ns_per_launch"] - report["native_ns_per_launch"]
        else:
            report[key] = None
    report["library_active"] = library_was_active(results["lib"])
    report["trace_recorded"] = trace_was_recorded(results["trace"])
    return report


def write_report(report, path):
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(report, out, indent=1)


def show(value, unit, digits=1):
    return "n/a" if value is None else f"{value:.{digits}f}{unit}"


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun", required=True, help="path of the uvmrun program")
    parser.add_argument("--empty-launch", required=True, help="path of the bench empty_launch program")
    parser.add_argument("--lib", help="libuvmprefetch.so for uvmrun to preload (default: the one it finds)")
    parser.add_argument("--budget", default="32G", help="uvmrun --budget, above the footprint (default 32G)")
    parser.add_argument("--policy", default="none", choices=["none", "demand-lru", "learned"],
                        help="uvmrun --policy (default none: conversion and recording alone, as in the "
                        "earlier runs; learned at a budget above the footprint is measured by "
                        "oversubscription.py)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per mode (default 2)")
    parser.add_argument("--cpus", help="run every program on these CPUs only, e.g. 0-7 (default: any)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30, help="timed resnet50 steps per run (at least 20)")
    parser.add_argument("--launches", type=int, default=1_000_000, help="empty kernel launches per run")
    parser.add_argument("--timeout", type=int, default=180, help="seconds per resnet50 run (default 180)")
    parser.add_argument("--launch-timeout", type=int, default=60,
                        help="seconds per empty_launch run (default 60; a slow hook shows as a timeout)")
    parser.add_argument("--json-out", help="write the full report here as JSON")
    args = parser.parse_args()
    for label, path in (("--uvmrun", args.uvmrun), ("--empty-launch", args.empty_launch)):
        if not os.path.isfile(path):
            parser.error(f"{label} {path}: no such file")
    args.cpu_set = None
    if args.cpus:
        try:
            args.cpu_set = parse_cpus(args.cpus)
        except ValueError:
            args.cpu_set = set()
        if not args.cpu_set:
            parser.error(f"--cpus {args.cpus!r} is not a CPU list such as 0-7 or 0,2,4-6")
        missing = args.cpu_set - os.sched_getaffinity(0)
        if missing:
            parser.error(f"--cpus names CPUs this machine does not offer: {sorted(missing)}")
    if args.rounds < 1 or args.steps < 20 or args.launches < 1:
        parser.error("--rounds and --launches must be at least 1, --steps at least 20")
    return args


def main():
    args = parse_arguments()
    if args.cpu_set:
        # Every run on the same cores (the programs it starts inherit this): where the
        # scheduler puts a host-bound step moves its time by more than the library does.
        os.sched_setaffinity(0, args.cpu_set)
    with tempfile.TemporaryDirectory(prefix="uvmp-overhead-") as workdir:
        runner = Runner(args, workdir)
        report = {"budget": args.budget, "failures": runner.failures}
        # Written after each part, so a run stopped by an outer timeout keeps what it measured.
        report["resnet50"] = measure_resnet(runner, args)
        write_report(report, args.json_out)
        report["empty_launch"] = measure_launch(runner, args)
        write_report(report, args.json_out)

    resnet, launch = report["resnet50"], report["empty_launch"]
    print("\n=== overhead (median over all timed steps / runs of each mode)")
    print(f"resnet50 batch {args.batch} step: native {show(resnet['native_median_ms'], ' ms', 2)}, "
          f"uvmrun {show(resnet['lib_median_ms'], ' ms', 2)}, ratio {show(resnet['ratio_lib_over_native'], '', 3)}")
    print(f"resnet50 batch {args.batch} host time to issue a step: native {show(resnet['native_median_issue_ms'], ' ms', 2)}, "
          f"uvmrun {show(resnet['lib_median_issue_ms'], ' ms', 2)}, recording {show(resnet['trace_median_issue_ms'], ' ms', 2)}")
    print("run medians (ms): " + "; ".join(
        f"{mode} " + " ".join(f"{ms:.1f}" for ms in resnet[f"{mode}_run_medians_ms"]) for mode in ("native", "lib", "trace")))
    print(f"resnet50 batch {args.batch} step recording a trace: {show(resnet['trace_median_ms'], ' ms', 2)}, "
          f"ratio to native {show(resnet['ratio_trace_over_native'], '', 3)}")
    for mode, label in (("lib", "uvmrun"), ("trace", "recording")):
        print(f"resnet50 batch {args.batch} {label}/native per round: "
              + " ".join(f"{ratio:.3f}" for ratio in resnet[f"paired_ratios_{mode}"])
              + f", median {show(resnet[f'paired_ratio_{mode}_over_native'], '', 3)}")
    print(f"resnet50 library's own work per launch (one in 64 timed in the program): uvmrun "
          f"{show(resnet['lib_hook_ns'], ' ns')}, recording {show(resnet['trace_hook_ns'], ' ns')}; recording adds "
          f"{show(resnet['recording_hook_ms_per_step'], ' ms', 3)} per step of "
          f"{show(resnet['trace_launches_per_step'], ' launches', 0)}, "
          f"{show(None if resnet['recording_hook_share_of_step'] is None else 100 * resnet['recording_hook_share_of_step'], '%', 2)} "
          "of the native step")
    print(f"empty launch: native {show(launch['native_ns_per_launch'], ' ns')}, "
          f"uvmrun {show(launch['lib_ns_per_launch'], ' ns')}, hook {show(launch['hook_ns_per_launch'], ' ns')}; "
          f"recording {show(launch['trace_ns_per_launch'], ' ns')}, hook with recording "
          f"{show(launch['trace_hook_ns_per_launch'], ' ns')}")
    for name, part in (("resnet50", resnet), ("empty_launch", launch)):
        if not part["library_active"]:
            print(f"WARNING: the library was not active in every {name} run under uvmrun; "
                  "those numbers do not measure it")
    if not resnet["trace_recorded"]:
        print("WARNING: not every resnet50 run with --trace-out recorded its whole trace "
              "(no records written, or some dropped); the trace ratio does not measure recording")
    for failure in runner.failures:
        print(f"FAILED: {failure}")
    if args.json_out:
        print(f"report written to {args.json_out}")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
