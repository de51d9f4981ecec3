#!/usr/bin/env python3
"""Greedy generation with a 3 B decoder (examples/generate_workload.py, bf16, random weights) whose
weights do not fit the budget: the library against native and against accelerate's offloading,
which is what a user does instead.

What runs, in this order (one run each; 8 untimed decode steps, then 24 timed, unless told):
  1. bench/link_probe: the fetch rate f, the eviction rate e and the remote read rate r (kernels
     reading host pages) of this machine, in this run.
  2. native; uvmrun with its defaults and no budget; uvmrun with a budget above the footprint
     (fit: --fit-factor times the larger of native's max_memory_reserved and the default run's
     peak converted bytes, whole GiB).
  3. At each budget (weights/1.25 and weights/2 unless told; weights: native's bf16 weight bytes):
     default (`uvmrun --budget B` and nothing else), demand-lru (--policy demand-lru --host-homes
     off) and accelerate (infer_auto_device_map with B bytes for the GPU, dispatch_model: the
     layers that do not fit stay on the CPU and its hooks bring them in at every token).
Every run uses PyTorch's backend:cudaMallocAsync (the library sees every free).

Figures a row: ms a token (median of the timed steps), its ratio to native, how many times faster
than accelerate and than demand-lru at the same budget, the library's bytes a token (prefetched,
evicted and read remotely, from its counters after warm-up), S = weights + KV cache - budget, and
the floors native + S/r (every byte over the budget read from host memory once a token) and
native + S/e + S/f (evicted and fetched back once a token).

Targets (PASS/FAIL lines of the final table):
  - uvmrun defaults without a budget and the fit budget: at most 1.02x native's ms a token;
  - at weights/1.25, default: at most 1.3x (native + S/r), and at least 2.5x faster than accelerate;
  - at weights/2, default: at least 2x faster than accelerate;
  - the generated tokens identical to native's in every run. A second native run, last of the
    runs without a budget, says whether native itself gives the same tokens twice: where it does
    not, a run's tokens that differ say nothing of the library, and the report says so.

Prints one table at the end; --json-out and --markdown-out are rewritten after every run, so an
outer timeout keeps what was measured. --dry-run prints the plan and runs nothing; --rows REPORT
prints a report's checks as lines what<TAB>value<TAB>goal<TAB>verdict. Exit status 0 when every run
that was started succeeded and every run generated native's tokens.
"""

import argparse
import json
import math
import os
import re
import shlex
import sys

from bench_common import (GIB, MIB, REPO_ROOT, Bench, add_link_arguments, add_output_arguments, check_cells,
                          check_program_paths, check_rows, fmt, link_probe_plan_text, markdown_table, parse_size,
                          print_report_rows, print_timed_plan, ratio, run_driver, tagged_json_line,
                          write_atomically)
from pool_figures import floor_ms, format_gib
from pool_modes import ASYNC_BACKEND, FALLBACK_D2H_GBPS, FALLBACK_H2D_GBPS, clean_environment, deadline_cut
from pool_report import check, gb, speedup_text

GENERATE_SCRIPT = os.path.join(REPO_ROOT, "examples", "generate_workload.py")
UNPRESSURED_MODES = ("native", "default", "fit", "native-again")
PRESSURE_MODES = ("default", "demand-lru", "accelerate")
WITHOUT_LIBRARY = ("native", "native-again", "accelerate")
MODE_LABELS = {"native": "native", "native-again": "native, again", "default": "uvmrun defaults", "fit": "uvmrun, fit budget",
               "demand-lru": "demand-lru", "accelerate": "accelerate offload"}
# What uvmrun is told besides the budget.
PRESSURE_OPTIONS = {"default": [], "demand-lru": ["--policy", "demand-lru", "--host-homes", "off"]}
UNPRESSURED_GOAL = 1.02
# The default mode's targets at a budget: its ms a token within this factor of native + S/r, and
# at least this many times faster than accelerate's.
REMOTE_FLOOR_GOAL = {"weights/1.25": 1.3}
VS_ACCELERATE_GOAL = {"weights/1.25": 2.5, "weights/2": 2.0}
# Expected seconds until a run has been measured (estimates for a 3 B model on an H100: start-up
# with the model made on the GPU; a token natively, under the library and through accelerate's
# hooks, which copy the CPU's layers over the link at every token; accelerate's move of the
# weights to the CPU and its placement).
STARTUP_S = 15.0
TOKEN_S = {"native": 0.03, "fit": 0.03, "default": 0.15, "demand-lru": 0.4, "accelerate": 0.4}
ACCELERATE_SETUP_S = 8.0
MIN_RUN_SECONDS = 20


# ---------------------------------------------------------------- budgets, floors and the plan

def resolve_budget(spec, weight_bytes):
    """Bytes of a budget: a size (8G) or weights/X (the weights' bytes over X, whole MiB); None
    when the weights are not known yet."""
    if spec.startswith("weights/"):
        return None if not weight_bytes else int(weight_bytes / float(spec[len("weights/"):])) // MIB * MIB
    return parse_size(spec)


def valid_budget(spec):
    if spec.startswith("weights/"):
        divisor = spec[len("weights/"):]
        return re.fullmatch(r"[0-9]+(\.[0-9]+)?", divisor) is not None and float(divisor) > 0
    return bool(parse_size(spec))


def fit_budget(footprint, factor):
    """A budget above the footprint: factor times it, whole GiB."""
    return math.ceil(factor * footprint / GIB) * GIB


def transfer_ms(size, gbps):
    return None if size is None or not gbps else max(size, 0) / (gbps * 1e9) * 1e3


def floors(native_ms, swapped, link):
    """The remote floor native + S/r and the migrate floor native + S/e + S/f, in ms a token."""
    remote = transfer_ms(swapped, link.get("remote_read_gbps"))
    migrate = floor_ms(swapped, link.get("d2h_gbps"), link.get("h2d_gbps"))
    return {"remote_floor_ms": None if native_ms is None or remote is None else native_ms + remote,
            "migrate_floor_ms": None if native_ms is None or migrate is None else native_ms + migrate}


def make_plan(args):
    def run(mode, pressure=None):
        return {"kind": "generate", "mode": mode, "pressure": pressure}

    plan = [{"kind": "probe"}] + [run(mode) for mode in UNPRESSURED_MODES]
    plan += [run(mode, spec) for spec in args.budgets for mode in args.modes]
    return plan


def expected_seconds(entry, args):
    if entry["kind"] == "probe":
        return 15.0
    mode = entry["mode"]
    seconds = STARTUP_S + (args.tokens + 1) * TOKEN_S[mode if entry["pressure"] else "native"]
    return seconds + (ACCELERATE_SETUP_S if mode == "accelerate" else 0.0)


# ---------------------------------------------------------------- the runs

class InferenceBench(Bench):
    def __init__(self, args, workdir):
        super().__init__(args, workdir)
        self.link = {"h2d_gbps": args.h2d_gbps, "d2h_gbps": args.d2h_gbps, "source": "given"}
        self.fit = None  # {"bytes", "source"}
        self.env = dict(clean_environment(args.lib), PYTORCH_CUDA_ALLOC_CONF=ASYNC_BACKEND)

    def weight_bytes(self):
        native = native_run(self.runs)
        return native.get("weight_bytes") if native else None

    def fit_budget(self):
        if self.fit is None:
            figures = [(native_run(self.runs) or {}).get("peak_reserved_bytes") or 0]
            default = next((r for r in self.runs if r["mode"] == "default" and r["pressure"] is None
                            and r["status"] == "ok"), None)
            figures += [((default or {}).get("stats") or {}).get(key) or 0
                        for key in ("bytes_converted_peak", "pool_reserved_peak")]
            footprint = max(figures)
            if not footprint:
                return None
            self.fit = {"bytes": fit_budget(footprint, self.args.fit_factor),
                        "source": f"{self.args.fit_factor:g} x {format_gib(footprint, 2)}"}
        return self.fit["bytes"]

    def budget_of(self, entry, resolve=True):
        """(label, bytes) of a run's budget; bytes None for none or not known yet."""
        if entry["pressure"] is not None:
            budget = resolve_budget(entry["pressure"], self.weight_bytes() if resolve else None)
            return (format_gib(budget, 2), budget) if budget else (entry["pressure"], None)
        if entry["mode"] == "fit":
            budget = self.fit_budget() if resolve else None
            return (format_gib(budget), budget) if budget else ("FIT", None)
        return "-", None

    def command_for(self, entry, run_id=None, resolve=True):
        args = self.args
        command = [args.python, args.generate_script, "--new-tokens", str(args.tokens), "--warmup",
                   str(args.warmup), "--deterministic", "--mark-iterations", "--attention", args.attention]
        command += shlex.split(args.workload_args)
        mode = entry["mode"]
        label, budget = self.budget_of(entry, resolve)
        if mode in ("native", "native-again"):
            return command
        if mode == "accelerate":
            return command + ["--accelerate-offload", str(budget) if budget else label]
        stats = os.path.join(self.workdir, f"{run_id or 'RUN'}.stats.%p.json")
        wrapper = [args.uvmrun, "--stats-file", stats]
        if label != "-":
            wrapper += ["--budget", f"{budget // MIB}M" if budget else label]
        return wrapper + PRESSURE_OPTIONS.get(mode, []) + ["--"] + command

    def run_generation(self, entry):
        mode, pressure = entry["mode"], entry["pressure"]
        run_id = f"run{len(self.runs) + 1:02d}-{mode}" + (f"-{pressure.replace('/', '_')}" if pressure else "")
        label, budget = self.budget_of(entry)
        record = {"id": run_id, "mode": mode, "pressure": pressure, "budget": label, "budget_bytes": budget,
                  "status": "skipped", "exit": None, "wall_s": None, "median_ms": None, "tokens": None,
                  "stats": None}
        self.runs.append(record)
        if budget is None and (pressure is not None or mode == "fit"):
            record["status"] = "skipped (no native run)"
            print(f"--- {run_id}: not run, its budget needs the native run's figures", flush=True)
            return record
        left = self.fits_before_deadline(record, run_id, expected_seconds(entry, self.args), MIN_RUN_SECONDS)
        if left is None:
            return record
        timeout = min(self.args.timeout_s, left)
        command = self.command_for(entry, run_id)
        record["command"] = command
        print(f"--- {run_id}: {MODE_LABELS[mode]}, budget {label} (timeout {timeout:.0f} s, "
              f"{self.clock.elapsed():.0f} s elapsed)\n$ {' '.join(command)}", flush=True)
        output = self.execute_run(record, command, timeout, self.env)
        record["log"] = os.path.join(self.workdir, f"{run_id}.log")
        with open(record["log"], "w", encoding="utf-8") as log:
            log.write(output)
        summary = take_summary(record, output)
        self.judge_run(record, output, summary,
                       None if mode in WITHOUT_LIBRARY else os.path.join(self.workdir, f"{run_id}.stats.*.json"))
        record["status"] = deadline_cut(record["status"], timeout, self.args.timeout_s)
        self.print_run_end(record)
        return record

    def measure(self, plan):
        for entry in plan:
            if entry["kind"] == "probe":
                self.run_probe()
            else:
                self.run_generation(entry)
            save(self)


SUMMARY_KEYS = ("median_ms", "token_ms", "tokens", "prefill_ms", "weight_bytes", "kv_bytes", "parameters",
                "peak_allocated_bytes", "peak_reserved_bytes", "memory_reserved_bytes", "allocator_backend",
                "deterministic", "moved_after_warmup", "accelerate_placement", "warmup", "new_tokens", "build_s")


def native_run(runs):
    """The native run that succeeded (the reference of every other), or None."""
    return next((r for r in runs if r["mode"] == "native" and r["status"] == "ok"), None)


def take_summary(record, output):
    """The workload's SUMMARY line into the run's record; returns it (None when missing)."""
    summary = tagged_json_line(output, "SUMMARY")
    for key in SUMMARY_KEYS:
        record[key] = (summary or {}).get(key)
    return summary


# ---------------------------------------------------------------- figures and checks

def per_token(run):
    """The library's bytes a timed token, by path, from its counters read in the job."""
    moved = run.get("moved_after_warmup")
    timed = (run.get("new_tokens") or 0) - (run.get("warmup") or 0)
    if not moved or timed <= 0:
        return None
    return {key: moved.get(key, 0) / timed for key in ("prefetched", "evicted", "remote_read", "demand")}


def table_rows(runs, link):
    native = native_run(runs)
    native_ms = native["median_ms"] if native else None
    rows = []
    for run in runs:
        row = {key: run.get(key) for key in ("id", "mode", "pressure", "budget", "budget_bytes", "status",
                                             "median_ms", "accelerate_placement")}
        row["ratio_native"] = ratio(run["median_ms"], native_ms)
        row["per_token"] = per_token(run)
        row["tokens_equal"] = (None if run is native or not native or not run.get("tokens")
                               else run["tokens"] == native["tokens"])
        if run["pressure"] is not None and native and run.get("budget_bytes"):
            row["swapped_bytes"] = native["weight_bytes"] + (native.get("kv_bytes") or 0) - run["budget_bytes"]
            row.update(floors(native_ms, row["swapped_bytes"], link))
        rows.append(row)
    for row in rows:
        for other in ("accelerate", "demand-lru"):
            versus = same_budget(rows, row, other)
            row[f"speedup_vs_{other}"] = ratio(versus["median_ms"], row["median_ms"]) if versus else None
    return rows


def same_budget(rows, row, mode):
    if row["pressure"] is None or row["mode"] == mode:
        return None
    return next((r for r in rows if r["mode"] == mode and r["pressure"] == row["pressure"]), None)


def row_name(row):
    return f"infer {row['mode']}" + (f" at {row['pressure']} ({row['budget']})" if row["pressure"] else "")


def started(row):
    return row["status"] in ("ok", "failed", "timeout")


def row_checks(row, rows):
    name = row_name(row)
    lines = []
    unmade = not started(row)
    if row["pressure"] is None and row["mode"] in ("default", "fit"):
        value = row["ratio_native"]
        lines.append(check(f"{name} ms/token x native", fmt(value, 3), f"<= {UNPRESSURED_GOAL}",
                           value is not None and value <= UNPRESSURED_GOAL, skip=unmade))
    if row["pressure"] is not None and row["mode"] not in WITHOUT_LIBRARY:
        lines.append(check(f"{name} GB/token in/out/remote vs S",
                           f"{bytes_cell(row)} vs {gb(row.get('swapped_bytes'))}", "-", None, skip=row["status"] != "ok"))
    if row["pressure"] is not None and row["mode"] == "default":
        goal = REMOTE_FLOOR_GOAL.get(row["pressure"])
        floor = row.get("remote_floor_ms")
        over = ratio(row["median_ms"], floor)
        lines.append(check(f"{name} ms/token vs native + S/r", f"{fmt(row['median_ms'], 1)} ms vs {fmt(floor, 1)} ms "
                           f"({fmt(over, 2)}x)", f"<= {goal}x" if goal else "-",
                           None if over is None else over <= goal if goal else None, skip=unmade))
        lines.append(check(f"{name} ms/token vs native + S/e + S/f",
                           f"{fmt(row['median_ms'], 1)} ms vs {fmt(row.get('migrate_floor_ms'), 1)} ms", "-", None,
                           skip=unmade))
        goal = VS_ACCELERATE_GOAL.get(row["pressure"])
        versus = same_budget(rows, row, "accelerate")
        if versus is not None:
            speedup = row["speedup_vs_accelerate"]
            lines.append(check(f"{name} vs accelerate", speedup_text(row, versus),
                               f">= {goal:g}x faster" if goal else "-",
                               None if speedup is None or not goal else speedup >= goal,
                               skip=unmade or (not started(versus) and speedup is None)))
        versus = same_budget(rows, row, "demand-lru")
        if versus is not None and versus["median_ms"] and row["median_ms"]:
            lines.append(check(f"{name} vs demand-lru", speedup_text(row, versus), "-", None))
    if row["mode"] != "native":
        lines.append(check(f"{name} tokens = native", str(row["tokens_equal"]), "True", row["tokens_equal"],
                           skip=unmade))
    for line in lines:
        line["row"] = name
    return lines


def target_checks(report):
    link, runs, rows = report["link"], report["runs"], report["rows"]
    lines = [check("infer: link f / e / r GB/s", f"{fmt(link.get('h2d_gbps'), 1)} / {fmt(link.get('d2h_gbps'), 1)} / "
                   f"{fmt(link.get('remote_read_gbps'), 1)} ({link['source']})", "-", None)]
    made = [r for r in runs if started(r)]
    finished = [r for r in made if r["status"] == "ok"]
    lines.append(check("infer: runs finished", f"{len(finished)} of {len(made)} started, {len(runs)} planned",
                       "all started", len(finished) == len(made) if made else None, skip=not made))
    native = native_run(runs)
    if native:
        lines.append(check("infer: weights / KV cache GB, native ms/token",
                           f"{gb(native.get('weight_bytes'))} / {gb(native.get('kv_bytes'))}, "
                           f"{fmt(native['median_ms'], 2)}", "-", None))
    for row in rows:
        lines += row_checks(row, rows)
    return lines


def token_mismatches(runs):
    native = native_run(runs)
    differ = [r for r in runs if native and r is not native and r["status"] == "ok" and r.get("tokens") is not None
              and r["tokens"] != native["tokens"]]
    lines = [f"{r['id']}: tokens differ from native\n  native: {native['tokens']}\n  {r['mode']}: {r['tokens']}"
             for r in differ]
    if any(r["mode"] == "native-again" for r in differ):
        lines.insert(0, "native gave other tokens in its second run: it is not reproducible here, so a run's "
                        "tokens that differ from its first say nothing of the library")
    return lines


def build_report(settings, link, runs, fit=None, elapsed_s=None):
    report = {"settings": settings, "link": link, "fit_budget": fit, "elapsed_s": elapsed_s, "runs": runs,
              "goals": {"unpressured": UNPRESSURED_GOAL, "remote_floor": REMOTE_FLOOR_GOAL,
                        "vs_accelerate": VS_ACCELERATE_GOAL}}
    report["rows"] = table_rows(runs, link)
    report["checks"] = target_checks(report)
    report["token_mismatches"] = token_mismatches(runs)
    return report


def row_verdict(row, checks):
    mine = [c for c in checks if c.get("row") == row_name(row)]
    failed = [c["what"][len(row_name(row)) + 1:] for c in mine if c["verdict"] == "FAIL"]
    if failed:
        return "FAIL: " + ", ".join(failed)
    return "PASS" if any(c["verdict"] == "PASS" for c in mine) else "-"


def bytes_cell(row):
    moved = row["per_token"]
    if moved:
        return "/".join(gb(moved[k]) for k in ("prefetched", "evicted", "remote_read"))
    placed = row.get("accelerate_placement")
    return f"{gb(placed['cpu_weight_bytes'])} streamed" if placed else "-"


def speedup_cell(row, other):
    value = row.get(f"speedup_vs_{other}")
    return "-" if row["pressure"] is None or row["mode"] == other else fmt(value, 2) + ("x" if value else "")


TABLE_COLUMNS = [
    ("mode", lambda r, c: MODE_LABELS[r["mode"]]),
    ("budget", lambda r, c: r["budget"]),
    ("ms/token", lambda r, c: fmt(r["median_ms"], 2) if r["status"] == "ok" else r["status"]),
    ("x native", lambda r, c: fmt(r["ratio_native"], 3)),
    ("vs accelerate", lambda r, c: speedup_cell(r, "accelerate")),
    ("vs demand-lru", lambda r, c: speedup_cell(r, "demand-lru")),
    ("GB/token in/out/remote", lambda r, c: bytes_cell(r)),
    ("S GB", lambda r, c: gb(r["swapped_bytes"]) if "swapped_bytes" in r else "-"),
    ("N+S/r ms", lambda r, c: fmt(r["remote_floor_ms"], 1) if "remote_floor_ms" in r else "-"),
    ("N+S/e+S/f ms", lambda r, c: fmt(r["migrate_floor_ms"], 1) if "migrate_floor_ms" in r else "-"),
    ("tokens = N", lambda r, c: "ref" if r["mode"] == "native" and r["pressure"] is None else
     ("-" if r["tokens_equal"] is None else "yes" if r["tokens_equal"] else "NO")),
    ("targets", lambda r, c: row_verdict(r, c)),
]


def table_cells(report):
    return [[name for name, _ in TABLE_COLUMNS]] + [[show(row, report["checks"]) for _, show in TABLE_COLUMNS]
                                                    for row in report["rows"]]


def notes(report):
    settings, link = report["settings"], report["link"]
    fit = report.get("fit_budget")
    return [f"ms/token: median of {settings['tokens'] - settings['warmup']} decode steps after {settings['warmup']} "
            f"(one run a mode); every run with PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND} and "
            f"{settings.get('attention', 'sdpa')} attention.",
            f"Link ({link['source']}): f = {fmt(link.get('h2d_gbps'), 1)} GB/s to the GPU, e = "
            f"{fmt(link.get('d2h_gbps'), 1)} GB/s back, r = {fmt(link.get('remote_read_gbps'), 1)} GB/s read by "
            "kernels from host memory.",
            "Fit budget: " + (f"{format_gib(fit['bytes'])} ({fit['source']})" if fit else "not known yet") + ".",
            "S = weights + KV cache - budget; N+S/r: native's ms/token plus S read from the host once a token; "
            "N+S/e+S/f: plus S evicted and fetched back once a token. GB/token in/out/remote: the library's "
            "prefetched, evicted and remotely read bytes a timed token (its counters); for accelerate, the weights "
            "it keeps on the CPU and copies in at every token."]


def markdown(report):
    checks = check_cells(report["checks"])
    lines = ["## Inference: greedy generation, weights over the budget", "", markdown_table(table_cells(report)), ""]
    lines += ["- " + line for line in notes(report)]
    lines += ["- " + m.replace("\n", "\n  ") for m in report["token_mismatches"]]
    return "\n".join(lines + ["", markdown_table(checks), ""])


def settings_of(args):
    return {"tokens": args.tokens, "warmup": args.warmup, "attention": args.attention, "budgets": args.budgets,
            "modes": args.modes,
            "workload_args": args.workload_args, "fit_factor": args.fit_factor, "timeout_s": args.timeout_s,
            "deadline_s": args.deadline_s}


def save(bench):
    report = build_report(settings_of(bench.args), bench.link, bench.runs, bench.fit,
                          round(bench.clock.elapsed(), 1))
    write_atomically(bench.args.json_out, json.dumps(report, indent=1))
    write_atomically(bench.args.markdown_out, markdown(report))
    return report


# ---------------------------------------------------------------- arguments and main

def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun", help="path of the uvmrun program (required but with --rows)")
    parser.add_argument("--lib", help="libuvmprefetch.so for uvmrun to preload (default: the one it finds)")
    add_link_arguments(parser, FALLBACK_H2D_GBPS, FALLBACK_D2H_GBPS)
    parser.add_argument("--generate-script", default=GENERATE_SCRIPT, help="the Python generation workload")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the workload")
    parser.add_argument("--workload-args", default="",
                        help="more words for every run of the workload (its model sizes, prompt length, ...)")
    parser.add_argument("--attention", choices=("eager", "sdpa"), default="eager",
                        help="transformers' attention in every run (default eager: with sdpa two native runs on an "
                             "H100 gave different tokens, so no run could be compared with native token for token)")
    parser.add_argument("--tokens", type=int, default=32, help="decode steps a run (default 32)")
    parser.add_argument("--warmup", type=int, default=8, help="of them untimed (default 8)")
    parser.add_argument("--budgets", default="weights/1.25,weights/2",
                        help="budgets, comma-separated: sizes (4G) or shares of native's weight bytes (weights/2) "
                             "(default weights/1.25,weights/2)")
    parser.add_argument("--modes", default=",".join(PRESSURE_MODES),
                        help=f"modes at each budget, in order (default {','.join(PRESSURE_MODES)})")
    parser.add_argument("--fit-factor", type=float, default=1.5,
                        help="fit budget: this times the larger of native's max_memory_reserved and the default "
                             "run's peak converted bytes, whole GiB (default 1.5)")
    parser.add_argument("--timeout-s", type=float, default=120, help="seconds per run (default 120)")
    add_output_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    parser.add_argument("--rows", metavar="REPORT", help="print the checks of a JSON report as tab-separated lines")
    args = parser.parse_args(argv)
    if args.rows:
        return args
    args.budgets = list(dict.fromkeys(b.strip() for b in args.budgets.split(",") if b.strip()))
    for spec in args.budgets:
        if not valid_budget(spec):
            parser.error(f"--budgets '{spec}' is not a size such as 4G or a share of the weights such as weights/2")
    args.modes = list(dict.fromkeys(m.strip() for m in args.modes.split(",") if m.strip()))
    unknown = [m for m in args.modes if m not in PRESSURE_MODES]
    if unknown:
        parser.error(f"--modes: {', '.join(unknown)} unknown; choose from {', '.join(PRESSURE_MODES)}")
    if args.tokens < 1 or not 0 <= args.warmup < args.tokens:
        parser.error("--tokens must be at least 1 and --warmup below it")
    if args.fit_factor <= 1:
        parser.error("--fit-factor must be larger than 1 (a budget above the footprint)")
    if min(args.h2d_gbps, args.d2h_gbps, args.timeout_s) <= 0:
        parser.error("link rates and timeouts must be positive")
    check_program_paths(parser, [("--uvmrun", args.uvmrun), ("--generate-script", args.generate_script)],
                        [("--link-probe", args.link_probe)])
    return args


def print_plan(bench, plan):
    def describe(entry):
        if entry["kind"] == "probe":
            return link_probe_plan_text(bench.args)
        at = f" at {entry['pressure']}" if entry["pressure"] else ""
        return f"{MODE_LABELS[entry['mode']]}{at}\n      $ " + " ".join(bench.command_for(entry, resolve=False))

    print_timed_plan(plan, lambda entry: expected_seconds(entry, bench.args), describe, bench.args.deadline_s)


def closing(report):
    return (f"inference, weights over the budget ({report['elapsed_s']} s)", table_cells(report), notes(report),
            report["token_mismatches"])


def main(argv=None):
    args = parse_arguments(argv)
    if args.rows:
        return print_report_rows(args.rows, check_rows, "inference")
    return run_driver(args, "uvmp-infer-", InferenceBench, make_plan, print_plan, save, closing)


if __name__ == "__main__":
    sys.exit(main())
