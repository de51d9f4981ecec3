#!/usr/bin/env python3
"""What a budget above the footprint costs DDP on one host, and where it goes: GPT-2 under
DistributedDataParallel (bench/drivers/compat/ddp_gpt2.py, gloo, by default two ranks sharing
one GPU) run five ways:

  native          PyTorch's caching allocator
  native-async    natively with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, the backend
                  uvmrun picks under a budget
  plain           uvmrun without a budget (PyTorch keeps its caching allocator)
  budget          uvmrun --budget B, B above every rank's footprint (cudaMallocAsync)
  budget-caching  uvmrun --budget B --framework-settings off (the caching allocator)

so that the backend's cost (native-async over native) is told apart from the library's (budget
over native-async, budget-caching over native). Each run's step time is the slowest rank's
median step after warm-up; every rank's losses must equal the native run's exactly. Each rank
under uvmrun writes its own stats file (stats.RANK.PID.json): what it moved, launched, converted
and freed, and its launch hook's own time, all in the table beside the step times.

Budgets are emulated capacities and the physical guard stays on; NVLink multicast stays off
(compat.py's environment). --rounds N repeats the five runs (after the first round in rotated
order); the medians of the rounds count. --rows REPORT prints the report as lines
what<TAB>value<TAB>goal<TAB>verdict for bench/device_run.sh; --dry-run prints the commands.
Exit status 0 when every run succeeded with the native losses.
"""

import argparse
import json
import os
import statistics
import sys

from bench_common import (GIB, MIB, fmt, hook_ns_per_launch, markdown_table, parse_size, print_report_rows, ratio,
                          rotated, text_table, write_atomically)
from compat import (ASYNC, Runner, async_picked, compare_ranks, ddp_imports_work, ddp_local_environment,
                    ddp_memory_problem, ddp_program, ddp_step_ms, gpu_free_bytes, rank_results, stats_by_rank)

# Each way of running: under the library or not, the budget (None: none, "above": --budget),
# uvmrun's options and the environment added.
MODES = {
    "native": {"library": False, "budget": None, "options": (), "env": {}},
    "native-async": {"library": False, "budget": None, "options": (), "env": {"PYTORCH_CUDA_ALLOC_CONF": ASYNC}},
    "plain": {"library": True, "budget": None, "options": (), "env": {}},
    "budget": {"library": True, "budget": "above", "options": (), "env": {}},
    "budget-caching": {"library": True, "budget": "above", "options": ("--framework-settings", "off"), "env": {}},
}
LABELS = {
    "native": "native, caching allocator",
    "native-async": "native, backend:cudaMallocAsync",
    "plain": "uvmrun, no budget",
    "budget": "uvmrun --budget (cudaMallocAsync)",
    "budget-caching": "uvmrun --budget --framework-settings off",
}
# Each ratio that separates one cost: (name, numerator mode, denominator mode).
RATIOS = (
    ("backend: native-async / native", "native-async", "native"),
    ("library, no budget: plain / native", "plain", "native"),
    ("budget, all told: budget / native", "budget", "native"),
    ("library, same backend: budget / native-async", "budget", "native-async"),
    ("library, caching allocator: budget-caching / native", "budget-caching", "native"),
)
# Counters summed over the ranks of a run.
SUMMED = ("allocs_converted", "frees_converted", "allocs_passed_through", "launches_seen", "bytes_populated",
          "bytes_prefetched", "bytes_evicted", "move_calls", "guard_refusals", "pool_slabs_created",
          "launches_fenced", "graph_launches")
STATS_NAME = "stats.%r.%p.json"


def plan(rounds):
    """The runs in order, as mode keys: the native run first (its memory figures decide whether
    the runs under the library may start), later rounds rotated so that no mode always follows
    the same one."""
    keys = list(MODES)
    order = list(keys)
    for round_index in range(1, rounds):
        order += rotated(keys, round_index)
    return order


def rank_counters(run):
    """{rank: stats} of a run under the library, from its folder's stats files."""
    rundir = run.get("rundir")
    return stats_by_rank(rundir) if rundir and os.path.isdir(rundir) else {}


def counters_summary(by_rank, steps):
    """The counters that could explain a slowdown, over every rank: sums, each rank's launches
    a step, and the launch hook's own ns a launch (over the launches it timed)."""
    if not by_rank:
        return None
    summary = {key: sum(stats.get(key) or 0 for stats in by_rank.values()) for key in SUMMED}
    summary["active_ranks"] = sum(1 for stats in by_rank.values() if stats.get("active") == 1)
    summary["ranks"] = len(by_rank)
    summary["launches_a_step"] = {str(rank): round((stats.get("launches_seen") or 0) / steps, 1)
                                  for rank, stats in sorted(by_rank.items())}
    summary["hook_ns"] = hook_ns_per_launch(list(by_rank.values()))
    calls = sum(stats.get("launch_calls_timed") or 0 for stats in by_rank.values())
    summary["launch_call_us"] = (sum(stats.get("launch_call_ns") or 0 for stats in by_rank.values()) / calls / 1e3
                                 if calls else None)
    summary["moved_bytes"] = summary["bytes_populated"] + summary["bytes_prefetched"] + summary["bytes_evicted"]
    return summary


def judge(native, run, key, ranks):
    """(losses verdict text, problem or None) of one run against the native one (None: this
    is the native run)."""
    if native is None:
        fine = run["status"] in ("ok", "dry-run")
        return ("reference" if fine else run["status"]), None if fine else f"native run {run['status']}"
    matched, detail = compare_ranks(native, run, ranks)
    if MODES[key]["library"] and run["status"] == "ok":
        counters = run.get("counters") or {}
        if counters.get("active_ranks") != ranks:
            return detail + "; the library was not active in every rank", f"{key}: the library not active"
    if matched is None:
        return detail, None
    return detail, None if matched else f"{key}: {detail}"


def medians(report):
    """Each mode's median over its rounds of the step time, or None where no round gave one."""
    out = {}
    for key in LABELS:
        times = [run["step_ms"] for run in report["runs"] if run["mode"] == key and run.get("step_ms") is not None]
        out[key] = statistics.median(times) if times else None
    return out


def finish_report(report):
    """The step medians, the ratios and the verdict of a report whose runs are in."""
    step_ms = medians(report)
    report["step_ms"] = step_ms
    report["ratios"] = {name: ratio(step_ms[top], step_ms[bottom]) for name, top, bottom in RATIOS}
    report["problems"] = [run["problem"] for run in report["runs"] if run.get("problem")]
    report["ok"] = not report["problems"] and bool(report["runs"])
    return report


def table(report):
    cells = [["mode", "step ms", "x native", "losses", "launches/step", "frees conv.", "moved GiB", "hook ns",
              "backend"]]
    native = report["step_ms"].get("native")
    for run in report["runs"]:
        counters = run.get("counters") or {}
        launches = counters.get("launches_a_step")
        cells.append([run["mode"] + (f" #{run['round'] + 1}" if report.get("rounds", 1) > 1 else ""),
                      fmt(run.get("step_ms"), 1), fmt(ratio(run.get("step_ms"), native), 3), run["losses"],
                      "/".join(str(v) for v in launches.values()) if launches else "-",
                      str(counters.get("frees_converted", "-")),
                      fmt(counters["moved_bytes"] / GIB, 2) if counters else "-",
                      fmt(counters.get("hook_ns"), 0) if counters else "-", run.get("backend", "-")])
    ratio_cells = [["ratio of the medians", "value"]]
    ratio_cells += [[name, fmt(value, 3)] for name, value in report["ratios"].items()]
    return cells, ratio_cells


def rows_of(report):
    """The report as the final table's rows of bench/device_run.sh."""
    rows = []
    step_ms = report.get("step_ms") or {}
    for key, label in LABELS.items():
        runs = [run for run in report.get("runs", []) if run["mode"] == key]
        if not runs:
            rows.append((f"ddp overhead: {label}", "not run", "-", "SKIP"))
            continue
        bad = [run for run in runs if run.get("problem")]
        value = f"{fmt(step_ms.get(key), 1)} ms; losses {runs[-1]['losses']}"
        rows.append((f"ddp overhead: {label}", value, "same losses", "FAIL" if bad else "PASS"))
    for name, value in (report.get("ratios") or {}).items():
        rows.append((f"ddp overhead: {name}", fmt(value, 3), "-", "SKIP" if value is None else "info"))
    return rows


def run_mode(runner, native, key, round_index, budget):
    mode = MODES[key]
    a = runner.args
    run_budget = None if not mode["library"] else (budget if mode["budget"] == "above" else "")
    run = runner.run(ddp_program(a, a.ranks), mode["library"], budget=run_budget, extra_env=dict(mode["env"]),
                     uvmrun_options=mode["options"], stats_name=STATS_NAME)
    entry = {"mode": key, "round": round_index, "command": run["command"], "status": run["status"],
             "exit": run["exit"], "wall_s": run["wall_s"], "step_ms": ddp_step_ms(run, a.ranks),
             "output_tail": "\n".join(run["output"].splitlines()[-30:])}
    results = rank_results(run["output"])
    entry["rank_median_ms"] = {str(rank): result.get("median_ms") for rank, result in sorted(results.items())}
    entry["moved_after_warmup"] = {str(rank): result.get("moved_after_warmup")
                                   for rank, result in sorted(results.items())}
    if mode["library"]:
        by_rank = rank_counters(run)
        entry["counters"] = counters_summary(by_rank, a.ddp_steps)
        entry["rank_stats"] = {str(rank): stats for rank, stats in sorted(by_rank.items())}
    picked = async_picked(run["output"]) or mode["env"].get("PYTORCH_CUDA_ALLOC_CONF") == ASYNC
    entry["backend"] = "async" if picked else "caching"
    run["counters"] = entry.get("counters")
    entry["losses"], entry["problem"] = judge(native, run, key, a.ranks)
    return run, entry


def measure(runner):
    a = runner.args
    report = {"ranks": a.ranks, "model": a.ddp_model, "batch": a.ddp_batch, "seq": a.ddp_seq,
              "steps": a.ddp_steps, "warmup": a.ddp_warmup, "budget": a.budget, "rounds": a.rounds, "runs": []}
    native = None
    for index, key in enumerate(plan(a.rounds)):
        round_index = index // len(MODES)
        if runner.clock.left() < 20:
            report["runs"].append({"mode": key, "round": round_index, "status": "skipped", "losses": "skipped",
                                   "problem": None})
            continue
        print(f"=== {key} (round {round_index + 1})", flush=True)
        run, entry = run_mode(runner, native, key, round_index, a.budget)
        report["runs"].append(entry)
        if key == "native" and native is None:
            native = run
            if a.dry_run:
                continue
            stop = memory_problem(run, a)
            if stop:
                entry["problem"] = stop
                break
        write_atomically(a.json_out, json.dumps(finish_report(report), indent=1))
    return finish_report(report)


def memory_problem(native, args):
    """Why the runs under the library must not start (see compat.ddp_memory_problem), also when
    --budget is not above a rank's native reserve; None when they may."""
    results = rank_results(native["output"]) if native["status"] == "ok" else {}
    if len(results) < args.ranks:
        return f"native run {native['status']}, not every rank's result"
    problem = ddp_memory_problem(results, args.ranks, gpu_free_bytes(), args.rank_cap_gib * GIB)
    if problem:
        return problem
    budget = parse_size(args.budget)
    reserved = max(result.get("max_memory_reserved") or 0 for result in results.values())
    if budget is None or budget <= reserved:
        return f"--budget {args.budget} is not above a rank's reserve of {reserved // MIB} MiB"
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun")
    parser.add_argument("--lib", help="libuvmprefetch.so (UVMP_LIBRARY for uvmrun)")
    parser.add_argument("--torchrun", help="the launcher (default: this Python's -m torch.distributed.run)")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--backend", dest="ddp_backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--model", dest="ddp_model", default="small", choices=["small", "tiny"])
    parser.add_argument("--batch", dest="ddp_batch", type=int, default=4)
    parser.add_argument("--seq", dest="ddp_seq", type=int, default=512)
    parser.add_argument("--steps", dest="ddp_steps", type=int, default=20, help="steps, warm-up included")
    parser.add_argument("--warmup", dest="ddp_warmup", type=int, default=5)
    parser.add_argument("--budget", default="16G", help="a rank's budget, above its footprint (default 16G)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--rank-cap-gib", type=float, default=12,
                        help="no run under the library when a rank's native reserve and 2 GiB exceed this")
    parser.add_argument("--timeout-s", type=int, default=150, help="per run")
    parser.add_argument("--deadline-s", type=float, default=0)
    parser.add_argument("--workdir")
    parser.add_argument("--json-out")
    parser.add_argument("--markdown-out")
    parser.add_argument("--rows", metavar="REPORT", help="print REPORT's rows for device_run.sh and exit")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.rows:
        return print_report_rows(args.rows, rows_of, "ddp overhead")
    if not args.dry_run and not (args.uvmrun and args.lib):
        parser.error("--uvmrun and --lib are needed to run")
    if args.ranks < 1 or args.rounds < 1 or args.ddp_warmup < 0 or args.ddp_steps <= args.ddp_warmup:
        parser.error("--ranks and --rounds must be at least 1, --steps more than --warmup")
    if not args.dry_run and not ddp_imports_work():
        print("ddp overhead: torch or transformers cannot be imported", flush=True)
        write_atomically(args.json_out, json.dumps(finish_report({"runs": [], "skipped": True}), indent=1))
        return 1
    os.environ.update(ddp_local_environment())
    runner = Runner(args)
    report = measure(runner)
    cells, ratio_cells = table(report)
    print(text_table(cells))
    print()
    print(text_table(ratio_cells))
    write_atomically(args.json_out, json.dumps(report, indent=1))
    write_atomically(args.markdown_out, markdown_table(cells) + "\n\n" + markdown_table(ratio_cells) + "\n")
    for problem in report["problems"]:
        print(f"FAILED: {problem}")
    return 0 if report["ok"] or args.dry_run else 1


if __name__ == "__main__":
    sys.exit(main())
