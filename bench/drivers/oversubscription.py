#!/usr/bin/env python3
"""Step time of jobs larger than their GPU budget, against native and against the link's bound.

For each workload:
  1. a run under uvmrun with policy `none` and a budget far above the footprint, recording an
     access trace and the counters: the footprint F (bytes_converted_peak) and the step time
     with the library but without memory pressure;
  2. a native run (no uvmrun): the reference step time and losses;
  3. `learned` at the far budget (should be within 2% of native);
  4. budgets F/1.5 and F/2 (rounded to MiB), each with `learned` and then `demand-lru`.
Runs go cheapest first over all workloads: the baselines, then `learned` under pressure, then
`demand-lru` (slowest) last, so that a deadline cuts the least informative runs.

The transfer bound of a budget comes from `uvmtrace simulate --policy belady` on the workload's
trace: the bytes that must cross the link per steady step (fetched and faulted in, evicted out)
at the link speeds. With --link-probe, those speeds are measured first, in the same run
(bench/link_probe: one large managed range moved each way); otherwise --h2d-gbps and
--d2h-gbps give them. Bound step time = max(native step, that transfer time).

Workloads: layers (the CUDA C++ example, examples/layers.cu), resnet50 (batch 256) and
gpt2-small (batch 16, seq 1024), both examples/train_workload.py. Aliases a, b, c.

With --no-allocator-cache the Python workloads run without PyTorch's caching allocator, in
every mode: each tensor is its own allocation, made and freed anew every step.

Prints one table at the end; --json-out and --markdown-out write it as JSON and Markdown
(both rewritten after every run, so an outer timeout keeps what was measured).
Exit status 0 when every run that was started succeeded and every loss list equals native's.
"""

import argparse
import json
import os
import re
import sys
import tempfile

from bench_common import (GIB, MIB, TRAIN_SCRIPT, TRAIN_WORKLOADS, Bench, add_output_arguments, fmt, largest_file,
                          markdown_table, parse_size, print_outcome, probe_link, ratio, simulate, text_table,
                          training_summary, write_atomically)

WORKLOAD_ALIASES = {"a": "layers", "b": "resnet50", "c": "gpt2-small"}
PYTHON_WORKLOADS = TRAIN_WORKLOADS
# Below this many seconds left a run cannot even start its interpreter and CUDA context.
MIN_RUN_SECONDS = 20
# Learned prefetching must cost a job that fits its budget almost nothing.
FAR_LEARNED_RATIO_GOAL = 1.02


class Workload:
    """One program to measure: how to start it and how to read its output."""

    def __init__(self, name, command, steps_run, is_python):
        self.name = name
        self.command = command
        self.steps_run = steps_run  # all steps, warm-up included: the counters cover them all
        self.is_python = is_python
        self.footprint = None       # bytes_converted_peak of the unpressured run
        self.trace = None
        self.budgets = []           # [{"label", "bytes", "bound"}]


def make_workloads(args):
    workloads = []
    for name in args.workloads:
        if name == "layers":
            layer_args = args.layers_args.split()
            workloads.append(Workload(name, [args.layers_binary] + layer_args, layers_steps(layer_args), False))
        else:
            command = [args.python, args.train_script] + PYTHON_WORKLOADS[name] + [
                "--steps", str(args.warmup + args.steps), "--warmup", str(args.warmup), "--mark-iterations",
                "--deterministic"]
            workloads.append(Workload(name, command, args.warmup + args.steps, True))
    return workloads


def layers_steps(layer_args):
    """The --steps of the layers arguments, or the program's default of 10."""
    for flag, value in zip(layer_args, layer_args[1:]):
        if flag == "--steps":
            return int(value)
    return 10


# ---------------------------------------------------------------- reading a run's output

LAYERS_MEDIAN = re.compile(r"^median step after \d+ warm-up steps: ([0-9.]+) ms", re.MULTILINE)
LAYERS_ERROR = re.compile(r"^relative error: (\S+)", re.MULTILINE)
LAYERS_RESULT = re.compile(r"^RESULT: (\w+)", re.MULTILINE)


def parse_python_output(output):
    """median_ms and losses from train_workload.py's final SUMMARY line."""
    summary = training_summary(output)
    if summary is None:
        return None
    return {"median_ms": summary.get("median_ms"), "losses": summary.get("losses"),
            "peak_reserved_bytes": summary.get("peak_reserved_bytes")}


def parse_layers_output(output):
    """The median step and the final output's error against the CPU reference. The error,
    printed to four digits, stands in for the losses: migrations that lose or corrupt data
    change it."""
    median = LAYERS_MEDIAN.search(output)
    error = LAYERS_ERROR.search(output)
    result = LAYERS_RESULT.search(output)
    if not median or not error or not result:
        return None
    return {"median_ms": float(median.group(1)), "losses": [error.group(1)], "correct": result.group(1) == "PASS"}


# ---------------------------------------------------------------- running

class OversubscriptionBench(Bench):
    def __init__(self, args, workdir):
        super().__init__(args, workdir)
        self.env = dict(os.environ)
        # Native runs must use the same allocator settings uvmrun sets for its own runs.
        self.env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False")
        if args.no_allocator_cache:
            # Every tensor its own cudaMalloc and cudaFree: a job that allocates anew every step.
            self.env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
        if args.lib:
            self.env["UVMP_LIBRARY"] = os.path.abspath(args.lib)

    def run(self, workload, mode, budget_label=None, budget_bytes=None, record_trace=False):
        """One run of `workload`; mode is native, none, learned or demand-lru. Returns the
        run's record, also kept in self.runs."""
        record = {"workload": workload.name, "mode": mode, "budget": budget_label, "budget_bytes": budget_bytes,
                  "status": "skipped", "exit": None, "median_ms": None, "losses": None, "stats": None}
        self.runs.append(record)
        left = self.seconds_left()
        if left < MIN_RUN_SECONDS:
            record["status"] = "skipped (deadline)"
            print(f"--- {workload.name} {mode} {budget_label or ''}: not run, {max(left, 0):.0f} s left", flush=True)
            return record

        run_id = f"run{len(self.runs)}"
        stats_pattern = os.path.join(self.workdir, f"{run_id}.stats.%p.json")
        command = list(workload.command)
        if mode != "native":
            wrapper = [self.args.uvmrun, "--budget", f"{budget_bytes // MIB}M", "--policy", mode,
                       "--stats-file", stats_pattern]
            if record_trace:
                wrapper += ["--trace-out", os.path.join(self.workdir, f"{workload.name}.trace.%p.uvmt")]
            command = wrapper + ["--"] + command
        timeout = min(self.args.timeout_s, left)
        print(f"--- {workload.name}, {mode}, budget {budget_label or '-'} (timeout {timeout:.0f} s)\n"
              f"$ {' '.join(command)}", flush=True)
        output = self.execute_run(record, command, timeout, self.env)
        parsed = parse_python_output(output) if workload.is_python else parse_layers_output(output)
        if parsed:
            record.update(parsed)
        self.judge_run(record, output, parsed, None if mode == "native" else stats_pattern.replace("%p", "*"))
        self.print_run_end(record)
        return record


def simulate_bound(args, workload, budget_bytes):
    """The link's bound for one budget, from Belady's replacement on the workload's trace."""
    result, problem = simulate(args.uvmtrace, workload.trace, budget_bytes, "belady", args.h2d_gbps, args.d2h_gbps,
                               args.simulate_timeout_s)
    if result is None:
        return {"error": problem}
    return steady_transfer(result, workload.steps_run, args)


def steady_transfer(sim, steps, args):
    """Bytes each steady step must move, from a Belady simulation of the whole recorded run.

    The first pass over the data fetches the footprint and, once the budget is full, evicts
    the excess: the real run does that part at allocation time. What is left, spread over
    the remaining steps, is what every steady step moves."""
    footprint = sim["footprint_bytes"]
    fetched = sim["prefetched_bytes"] + sim["demand_bytes"]
    evicted = sim["evicted_bytes"]
    first_pass_evicted = max(0, footprint - sim["budget_bytes"])
    later_steps = max(1, steps - 1)
    fetch_per_step = max(0, fetched - footprint) / later_steps
    evict_per_step = max(0, evicted - first_pass_evicted) / later_steps
    transfer_ms = (fetch_per_step / (args.h2d_gbps * 1e9) + evict_per_step / (args.d2h_gbps * 1e9)) * 1e3
    return {
        "fetch_bytes_per_step": round(fetch_per_step),
        "evict_bytes_per_step": round(evict_per_step),
        "transfer_ms_per_step": transfer_ms,
        "simulate_bound_ms": sim.get("transfer_bound_step_seconds", 0) * 1e3,
        "simulate": sim,
    }


# ---------------------------------------------------------------- the plan

def measure_link(args):
    """Replaces --h2d-gbps and --d2h-gbps by the link probe's figures when it succeeds."""
    args.link_source = "given"
    if not args.link_probe:
        return
    h2d, d2h, problem = probe_link(args.link_probe)
    if problem is None:
        args.h2d_gbps, args.d2h_gbps = h2d, d2h
        args.link_source = "measured"
    else:
        args.link_source = f"given ({problem})"
        print(f"{problem}: the bound uses {args.h2d_gbps:g} and {args.d2h_gbps:g} GB/s", flush=True)


def measure(bench, workloads):
    args = bench.args
    measure_link(args)
    baselines = {}
    for workload in workloads:
        far = args.far_budget_bytes
        unpressured = bench.run(workload, "none", "far", far, record_trace=True)
        stats = unpressured["stats"] or {}
        if unpressured["status"] == "ok" and stats.get("bytes_converted_peak"):
            workload.footprint = stats["bytes_converted_peak"]
            workload.trace = largest_file(os.path.join(bench.workdir, f"{workload.name}.trace.*.uvmt"))
        else:
            print(f"{workload.name}: no footprint from the unpressured run; its budgets are left out", flush=True)
        baselines[workload.name] = bench.run(workload, "native")
        bench.run(workload, "learned", "far", far)
        if workload.footprint:
            for divisor in args.divisors:
                budget = max(MIB, round(workload.footprint / divisor / MIB) * MIB)
                entry = {"label": f"F/{divisor:g}", "bytes": budget, "bound": None}
                if workload.trace:
                    entry["bound"] = simulate_bound(args, workload, budget)
                else:
                    entry["bound"] = {"error": "the unpressured run left no trace"}
                workload.budgets.append(entry)
        save(bench, workloads)

    for mode in ("learned", "demand-lru"):
        for workload in workloads:
            for entry in workload.budgets:
                bench.run(workload, mode, entry["label"], entry["bytes"])
                save(bench, workloads)
    return baselines


# ---------------------------------------------------------------- the report

def find_run(runs, workload, mode, budget):
    for run in runs:
        if run["workload"] == workload and run["mode"] == mode and run["budget"] == budget:
            return run
    return None


def losses_verdict(run, native):
    if run["mode"] == "native" or run["losses"] is None:
        return None
    if native is None or native["losses"] is None:
        return None
    return run["losses"] == native["losses"]


def table_rows(runs, workloads):
    rows = []
    for workload in workloads:
        native = find_run(runs, workload.name, "native", None)
        native_ms = native["median_ms"] if native and native["status"] == "ok" else None
        budgets = [("far", None)] + [(entry["label"], entry) for entry in workload.budgets]
        order = [("native", None, None)] + [("none", "far", None)] + [
            (mode, label, entry) for label, entry in budgets for mode in ("demand-lru", "learned")
            if not (label == "far" and mode == "demand-lru")]
        for mode, label, entry in order:
            run = find_run(runs, workload.name, mode, label)
            if run is None:
                continue
            ok = run["status"] == "ok"
            median = run["median_ms"] if ok else None
            lru = find_run(runs, workload.name, "demand-lru", label) if entry else None
            lru_ms = lru["median_ms"] if lru and lru["status"] == "ok" else None
            bound = (entry or {}).get("bound") or {}
            transfer_ms = bound.get("transfer_ms_per_step")
            if entry is None:
                bound_ms = native_ms  # nothing has to move when the job fits
            else:
                bound_ms = max(native_ms, transfer_ms) if native_ms is not None and transfer_ms is not None else None
            # A run that failed may have left counters, but they describe an unfinished job.
            stats = (run["stats"] or {}) if ok else {}

            def per_step_gb(key):
                return stats[key] / workload.steps_run / 1e9 if key in stats else None

            def per_call_us(ns_key, count_key):
                return stats[ns_key] / 1e3 / stats[count_key] if stats.get(count_key) else None

            rows.append({
                "workload": workload.name,
                "budget": "-" if label is None else label,
                "budget_gib": None if run["budget_bytes"] is None else run["budget_bytes"] / GIB,
                "mode": mode,
                "status": run["status"],
                "median_ms": median,
                "ratio_native": ratio(median, native_ms),
                "ratio_demand_lru": ratio(median, lru_ms),
                "bound_ms": bound_ms,
                "simulate_bound_ms": bound.get("simulate_bound_ms"),
                "ratio_bound": ratio(median, bound_ms),
                "gb_prefetched_per_step": per_step_gb("bytes_prefetched"),
                "gb_evicted_per_step": per_step_gb("bytes_evicted"),
                "gb_populated": stats["bytes_populated"] / 1e9 if "bytes_populated" in stats else None,
                "unplanned": stats.get("launches_unplanned"),
                "gb_demand_per_step": per_step_gb("bytes_demand_estimated"),
                "us_per_launch": per_call_us("launch_call_ns", "launch_calls_timed"),
                "us_per_move_call": per_call_us("move_call_ns", "move_calls"),
                "losses_equal": losses_verdict(run, native),
            })
    return rows


TABLE_COLUMNS = [
    ("workload", "workload", lambda r: r["workload"]),
    ("budget", "budget", lambda r: r["budget"] if r["budget_gib"] is None or r["budget"] == "-"
     else f"{r['budget']} {r['budget_gib']:.2f}G"),
    ("mode", "mode", lambda r: r["mode"]),
    ("median ms", "median_ms", lambda r: fmt(r["median_ms"]) if r["status"] == "ok" else r["status"]),
    ("x native", "ratio_native", lambda r: fmt(r["ratio_native"], 3)),
    ("x demand-lru", "ratio_demand_lru", lambda r: fmt(r["ratio_demand_lru"], 3)),
    ("bound ms", "bound_ms", lambda r: fmt(r["bound_ms"])),
    ("sim bound ms", "simulate_bound_ms", lambda r: fmt(r["simulate_bound_ms"])),
    ("x bound", "ratio_bound", lambda r: fmt(r["ratio_bound"], 3)),
    ("GB in/step", "gb_prefetched_per_step", lambda r: fmt(r["gb_prefetched_per_step"], 3)),
    ("GB out/step", "gb_evicted_per_step", lambda r: fmt(r["gb_evicted_per_step"], 3)),
    ("GB late/step", "gb_demand_per_step", lambda r: fmt(r["gb_demand_per_step"], 3)),
    ("unplanned", "unplanned", lambda r: "-" if r["unplanned"] is None else str(r["unplanned"])),
    ("us/launch", "us_per_launch", lambda r: fmt(r["us_per_launch"], 1)),
    ("us/move call", "us_per_move_call", lambda r: fmt(r["us_per_move_call"], 1)),
    ("losses = native", "losses_equal",
     lambda r: "-" if r["losses_equal"] is None else ("yes" if r["losses_equal"] else "NO")),
]


def table_cells(rows):
    return [[column[0] for column in TABLE_COLUMNS]] + [[show(r) for _, _, show in TABLE_COLUMNS] for r in rows]


def checks(runs, workloads):
    """Per workload: learned at the far budget against native, and whether all losses match."""
    result = {}
    for workload in workloads:
        native = find_run(runs, workload.name, "native", None)
        far = find_run(runs, workload.name, "learned", "far")
        native_ms = native["median_ms"] if native and native["status"] == "ok" else None
        far_ratio = ratio(far["median_ms"], native_ms) if far and far["status"] == "ok" else None
        verdicts = [losses_verdict(run, native) for run in runs if run["workload"] == workload.name]
        verdicts = [v for v in verdicts if v is not None]
        result[workload.name] = {
            "footprint_bytes": workload.footprint,
            "native_ms": native_ms,
            "learned_far_ratio": far_ratio,
            "learned_far_within_goal": None if far_ratio is None else far_ratio <= FAR_LEARNED_RATIO_GOAL,
            "losses_compared": len(verdicts),
            "losses_all_equal": all(verdicts) if verdicts else None,
        }
    return result


def loss_mismatches(runs):
    lines = []
    for run in runs:
        native = find_run(runs, run["workload"], "native", None)
        if losses_verdict(run, native) is False:
            lines.append(f"{run['workload']} {run['mode']} budget {run['budget']}: losses differ from native\n"
                         f"  native: {native['losses']}\n  {run['mode']}: {run['losses']}")
    return lines


def report(bench, workloads):
    rows = table_rows(bench.runs, workloads)
    args = bench.args
    return {
        "settings": {"workloads": args.workloads, "warmup": args.warmup, "steps": args.steps,
                     "layers_args": args.layers_args, "far_budget": args.far_budget,
                     "divisors": args.divisors, "h2d_gbps": args.h2d_gbps, "d2h_gbps": args.d2h_gbps,
                     "link_speeds": getattr(args, "link_source", "given"),
                     "timeout_s": args.timeout_s, "deadline_s": args.deadline_s},
        "elapsed_s": round(bench.clock.elapsed(), 1),
        "far_learned_ratio_goal": FAR_LEARNED_RATIO_GOAL,
        "checks": checks(bench.runs, workloads),
        "budgets": {w.name: w.budgets for w in workloads},
        "rows": rows,
        "runs": bench.runs,
        "loss_mismatches": loss_mismatches(bench.runs),
    }


def markdown(full_report):
    settings = full_report["settings"]
    lines = [
        "## Oversubscription",
        "",
        f"Median step time after {settings['warmup']} warm-up steps ({settings['steps']} timed steps for the "
        f"Python workloads; layers: `{settings['layers_args']}`). F is the footprint (peak converted bytes) of "
        f"the run with policy `none` at {settings['far_budget']}; `far` is that budget. The bound is "
        f"max(native step, bytes per steady step that Belady's replacement must move at "
        f"{settings['h2d_gbps']:.1f} GB/s in and {settings['d2h_gbps']:.1f} GB/s out, {settings['link_speeds']}); "
        "`sim bound` is "
        "`uvmtrace simulate`'s own bound per iteration. GB in/out per step: the library's prefetched and "
        "evicted bytes over all steps run.",
        "",
        markdown_table(table_cells(full_report["rows"])),
        "",
    ]
    lines += ["- " + line for line in check_lines(full_report)]
    lines += ["- " + mismatch.replace("\n", "\n  ") for mismatch in full_report["loss_mismatches"]]
    return "\n".join(lines) + "\n"


def check_lines(full_report):
    lines = []
    for name, check in full_report["checks"].items():
        footprint = check["footprint_bytes"] / GIB if check["footprint_bytes"] else None
        if check["losses_all_equal"] is None:
            losses = "no losses compared"
        else:
            losses = (f"losses equal to native in {'all' if check['losses_all_equal'] else 'NOT all'} of "
                      f"{check['losses_compared']} runs")
        lines.append(f"{name}: footprint {fmt(footprint)} GiB; learned at the far budget "
                     f"{fmt(check['learned_far_ratio'], 3)} x native (goal <= "
                     f"{full_report['far_learned_ratio_goal']}); {losses}")
    return lines


def save(bench, workloads):
    full_report = report(bench, workloads)
    write_atomically(bench.args.json_out, json.dumps(full_report, indent=1))
    write_atomically(bench.args.markdown_out, markdown(full_report))
    return full_report


# ---------------------------------------------------------------- arguments

def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun", required=True, help="path of the uvmrun program")
    parser.add_argument("--uvmtrace", required=True, help="path of the uvmtrace program")
    parser.add_argument("--lib", help="libuvmprefetch.so for uvmrun to preload (default: the one it finds)")
    parser.add_argument("--layers-binary", help="the layers example program (needed for the layers workload)")
    parser.add_argument("--layers-args", default="--mb 4096 --steps 10 --warmup 2",
                        help="arguments of the layers program (default: a 4 GiB model, 10 steps, 2 warm-up)")
    parser.add_argument("--train-script", default=TRAIN_SCRIPT, help="the Python training workload")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the Python workloads")
    parser.add_argument("--workloads", default="layers,resnet50,gpt2-small",
                        help="comma-separated: layers (a), resnet50 (b), gpt2-small (c)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps of the Python workloads (default 2)")
    parser.add_argument("--steps", type=int, default=4, help="timed steps of the Python workloads (default 4)")
    parser.add_argument("--far-budget", default="100G", help="a budget far above every footprint (default 100G)")
    parser.add_argument("--divisors", default="1.5,2", help="budgets as footprint / divisor (default 1.5,2)")
    parser.add_argument("--h2d-gbps", type=float, default=48.0, help="link speed host to device (default 48)")
    parser.add_argument("--d2h-gbps", type=float, default=16.0, help="eviction speed device to host (default 16)")
    parser.add_argument("--link-probe", help="bench/link_probe program: measure both link speeds first and use "
                        "them instead of --h2d-gbps and --d2h-gbps")
    parser.add_argument("--timeout-s", type=float, default=240, help="seconds per run (default 240)")
    parser.add_argument("--simulate-timeout-s", type=float, default=120, help="seconds per uvmtrace simulate")
    add_output_arguments(parser)
    parser.add_argument("--no-allocator-cache", action="store_true",
                        help="run the Python workloads without PyTorch's caching allocator "
                             "(PYTORCH_NO_CUDA_MEMORY_CACHING=1), natively too: every step allocates anew")
    args = parser.parse_args(argv)

    names = [WORKLOAD_ALIASES.get(n.strip(), n.strip()) for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n != "layers" and n not in PYTHON_WORKLOADS]
    if unknown or not names:
        parser.error(f"--workloads: unknown {', '.join(unknown) or '(none given)'}; "
                     "choose from layers (a), resnet50 (b), gpt2-small (c)")
    args.workloads = list(dict.fromkeys(names))
    if "layers" in args.workloads and not args.layers_binary:
        parser.error("the layers workload needs --layers-binary")
    try:
        layers_steps(args.layers_args.split())
    except ValueError:
        parser.error(f"--layers-args '{args.layers_args}': --steps needs a whole number")
    try:
        args.divisors = [float(d) for d in args.divisors.split(",")]
    except ValueError:
        parser.error(f"--divisors '{args.divisors}' must be numbers separated by commas, such as 1.5,2")
    if any(d <= 1 for d in args.divisors):
        parser.error("--divisors must all be larger than 1 (a budget below the footprint)")
    args.far_budget_bytes = parse_size(args.far_budget)
    if not args.far_budget_bytes:
        parser.error(f"--far-budget '{args.far_budget}' is not a size such as 100G")
    if args.warmup < 0 or args.steps < 1:
        parser.error("--warmup must be at least 0 and --steps at least 1")
    if args.h2d_gbps <= 0 or args.d2h_gbps <= 0 or args.timeout_s <= 0:
        parser.error("--h2d-gbps, --d2h-gbps and --timeout-s must be positive")
    paths = [("--uvmrun", args.uvmrun), ("--uvmtrace", args.uvmtrace), ("--train-script", args.train_script)]
    if args.link_probe:
        paths.append(("--link-probe", args.link_probe))
    if "layers" in args.workloads:
        paths.append(("--layers-binary", args.layers_binary))
    for label, path in paths:
        if label == "--train-script" and not any(n in PYTHON_WORKLOADS for n in args.workloads):
            continue
        if not os.path.isfile(path):
            parser.error(f"{label} {path}: no such file")
    return args


def main(argv=None):
    args = parse_arguments(argv)
    with tempfile.TemporaryDirectory(prefix="uvmp-oversub-") as scratch:
        workdir = args.workdir or scratch
        os.makedirs(workdir, exist_ok=True)
        bench = OversubscriptionBench(args, workdir)
        workloads = make_workloads(args)
        measure(bench, workloads)
        full_report = save(bench, workloads)

    print(f"\n=== oversubscription ({full_report['elapsed_s']} s)")
    print(text_table(table_cells(full_report["rows"])))
    for line in check_lines(full_report):
        print(line)
    problems = [f"{r['workload']} {r['mode']} budget {r['budget'] or '-'}: {r['status']}"
                for r in bench.runs if r["status"] in ("failed", "timeout")]
    return print_outcome(problems, full_report["loss_mismatches"], (args.json_out, args.markdown_out))


if __name__ == "__main__":
    sys.exit(main())
