#!/usr/bin/env python3
"""PyTorch jobs whose every free the library sees (the managed pool, with PyTorch's
`backend:cudaMallocAsync`), against native with the same backend and against the link.

What runs, in this order (cheap and telling first, so that a deadline cuts the least):
  1. bench/link_probe: the fetch rate f (host to GPU) and the eviction rate e (GPU to host)
     of this machine, in this run.
  2. Round 1 of gpt2-small (batch 16, seq 1024), then of resnet50 (batch 256): native;
     uvmrun with its defaults (no budget, no policy, the allocator settings uvmrun picks);
     uvmrun with a budget above the footprint ("fit": --fit-factor times the larger of
     native's max_memory_reserved and the default run's peak converted bytes, whole GiB).
  3. A short run of the pressure workload (gpt2-small unless told) recording its trace with
     kernel durations (policy none at the fit budget, UVMP_TRACE_TIMING=1), then `uvmtrace
     simulate` of that trace at each pressure budget for each of the library's pressure modes,
     with the link rates of part 1.
  4. The pressure workload at each pressure budget (16G unless told), in this order unless told:
     default (`uvmrun --budget B` and nothing else, part 2's defaults with a budget: whatever
     the library does by default, which is learned with host homes learned in the run, used
     only where its simulation gives them a gain of 10% or more), learned (migration only:
     --policy learned --host-homes off), demand-lru (--host-homes off), and PyTorch's
     save_on_cpu under the same cap. One more mode may be asked for: host-homes (learned with
     the homes chosen on the recorded trace: --host-homes on --trace-in TRACE). 5 timed steps
     after 8 untimed ones unless told: the default mode learns its homes in those (it goes over
     its budget in the first step, records two whole steps and searches the homes while the
     next runs; on the H200 GPT-2 small took its homes in steps 3-6, and the first step with
     them pays for its new host slabs' pages once).
  5. Rounds 2.. of part 2, each round starting with the next mode.
The trace comes from a run of its own because CUPTI times a kernel from its start to its end,
faults included: a trace recorded under pressure would carry the stalls in its durations, and
the simulator, which models the moves itself, would count them twice. The job is
deterministic, so the unpressured run allocates, frees and launches as the pressured ones do.

Targets (each a PASS/FAIL line of the final table):
  - uvmrun defaults: step <= 1.05x native; max_memory_allocated() and memory_reserved()
    within 5% of native's (also checked at the fit budget);
  - fit budget: step <= 1.02x native;
  - at each pressure budget, per library mode: `uvmtrace simulate`'s step within 25% of the
    measured one (default: --homes auto, which predicts what the library chooses; learned and
    demand-lru: every home on the GPU; host-homes: --homes host); shown beside it: bytes moved
    per steady step against S = peak live (native max_memory_allocated) less the budget, and the
    step against the floor S/e + S/f;
  - at each pressure budget, the default mode: a step below the migrate floor S/e + S/f, at
    least 2x faster than demand-lru, faster than save_on_cpu (at peak/1.25 at least 1.5x), and
    the bytes it homed on the host (from its stats file) shown beside;
  - losses identical to native's in every run (the runs of fewer steps against native's
    first steps: step k's loss depends on steps 1..k alone);
  - every run used backend:cudaMallocAsync, every library run saw frees, uvmrun picked that
    backend by itself (when it does not, the benchmark sets it for uvmrun's runs and says so).
Step times are medians over every timed step (after warm-up) of every run of a mode; the
rounds' own ratios to native are given beside them.

Prints one table at the end; --json-out and --markdown-out are rewritten after every run, so
an outer timeout keeps what was measured. --dry-run prints the plan and runs nothing;
--rows REPORT prints a report's checks as lines what<TAB>value<TAB>goal<TAB>verdict.
Exit status 0 when every run that was started succeeded and every loss list equals native's.
"""

import argparse
import json
import math
import os
import re
import signal
import statistics
import sys
import tempfile

from bench_common import (GIB, MIB, Clock, TRAIN_SCRIPT, TRAIN_WORKLOADS, add_output_arguments, execute, fmt,
                          largest_file, markdown_table, parse_size, print_outcome, probe_link_rates, ratio, read_stats,
                          rotated, run_verdict, simulate, stop_running, text_table, timed_execute, training_summary,
                          write_atomically)

ASYNC_BACKEND = "backend:cudaMallocAsync"
ALLOC_CONF_NAMES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
UNPRESSURED_MODES = ("native", "default", "fit")
# Labels of the modes; "default" under pressure is labelled apart (mode_label).
MODE_LABELS = {"native": "native", "default": "uvmrun defaults", "fit": "uvmrun, fit budget",
               "record": "recording (none)", "learned": "learned, migration only", "demand-lru": "demand-lru",
               "save-on-cpu": "PyTorch save_on_cpu, capped", "host-homes": "learned, host homes from the trace",
               "best-fit": "default, pool placing by best fit", "no-trial": "default, no remote trial",
               "no-layout": "default, no step layout"}
DEFAULT_PRESSURE_LABEL = "default (learned, homes learned in the run)"
# Runs without the library: the job natively, and PyTorch's own offloading under a cap
# (torch.autograd.graph.save_on_cpu with set_per_process_memory_fraction: what a user
# can do instead, with a one-line change).
WITHOUT_LIBRARY = ("native", "save-on-cpu")
# Pressure modes the library runs, each checked against the simulator's prediction: default
# (uvmrun with a budget and nothing else), host-homes (homes from the recorded trace), learned and
# demand-lru (migration only).
LIBRARY_PRESSURE_MODES = ("default", "best-fit", "no-trial", "no-layout", "host-homes", "learned", "demand-lru")
PRESSURE_MODES = LIBRARY_PRESSURE_MODES + ("save-on-cpu",)
DEFAULT_PRESSURE_MODES = "default,learned,demand-lru,save-on-cpu"
# What uvmrun is told in each library pressure mode besides the budget.
PRESSURE_OPTIONS = {"default": [], "best-fit": [], "no-trial": [], "no-layout": [], "learned": ["--policy", "learned", "--host-homes", "off"],
                    "demand-lru": ["--policy", "demand-lru", "--host-homes", "off"]}
# uvmtrace simulate --homes for each library pressure mode (None: the simulator's default, every
# home on the GPU).
SIMULATED_HOMES = {"default": "auto", "best-fit": "auto", "no-trial": "auto", "no-layout": "auto", "host-homes": "host",
                   "learned": None, "demand-lru": None}
# uvmtrace simulate --placement for each library pressure mode that is not the simulator's default
# (over-dead): auto weighs a layout planned for the learned step as the library does
# (UVMP_STEP_LAYOUT=auto); best-fit places blocks by best fit alone (UVMP_POOL_PLACEMENT=best-fit).
SIMULATED_PLACEMENT = {"default": "auto", "no-trial": "auto", "best-fit": "best-fit"}
# The library's default with one setting changed, to show what that setting gains.
DEFAULT_WITH = {"best-fit": {"UVMP_POOL_PLACEMENT": "best-fit"}, "no-trial": {"UVMP_REMOTE_TRIAL": "0"},
                "no-layout": {"UVMP_STEP_LAYOUT": "off"}}
# Modes that read the recorded trace: none of them can run without it.
NEEDS_TRACE = ("host-homes",)
DEFAULT_RATIO_GOAL = 1.05
FIT_RATIO_GOAL = 1.02
MEMORY_TOLERANCE = 0.05
SIM_ERROR_GOAL = 0.25
# The default mode's targets under pressure: its step below the migrate floor S/e + S/f, at least
# this many times faster than demand-lru's, and faster than save_on_cpu's by the factor of its
# budget (at least 1.5x at peak/1.25, merely faster elsewhere).
DEFAULT_VS_DEMAND_LRU = 2.0
DEFAULT_VS_SAVE_ON_CPU = {"peak/1.25": 1.5}
# Below this many seconds left a run cannot even start its interpreter and CUDA context.
MIN_RUN_SECONDS = 20
# Expected seconds of a run until one of its kind has been measured, from pool runs 7 and 8
# (docs/benchmarks.md): start-up (interpreter, CUDA context, model) took 15-24 s for GPT-2 small
# (15-21 s under pressure) and 10-16 s for resnet50 b256; unpressured steps 0.13 and 0.12 s; under
# pressure 0.4-2.4 s for GPT-2 and 0.3-1.0 s for resnet50 (from peak/1.25 to peak/2, host homes to
# demand-lru: the figures below are about their mean); save_on_cpu's first step 13-18 s and 9-11 s
# (pinning host memory), then 1.3 and 1.1 s; homes from a trace or learned in the run cost a few
# seconds more once (reading, recording, the home search).
STARTUP_S = {"gpt2-small": 18.0, "resnet50": 12.0}
STEP_S = {"gpt2-small": 0.13, "resnet50": 0.12}
PRESSURE_STEP_S = {"gpt2-small": 1.3, "resnet50": 0.6}
SAVE_ON_CPU_FIRST_S = {"gpt2-small": 18.0, "resnet50": 11.0}
SAVE_ON_CPU_STEP_S = {"gpt2-small": 1.4, "resnet50": 1.2}
HOME_SEARCH_S = 3.0
# Link rates for the floor and the simulator when the probe fails (H200, 4 GiB moves).
FALLBACK_H2D_GBPS = 49.0
FALLBACK_D2H_GBPS = 15.0
FIT_FALLBACK_BYTES = 48 * GIB


# ---------------------------------------------------------------- the plan

def make_plan(args):
    """The runs in the order they are made: dicts with kind (probe, train, simulate), and for
    training runs workload, mode, round, warmup and steps."""
    def train(workload, mode, round_index=None, pressure=None):
        if pressure is not None:
            warmup, steps = args.pressure_warmup, args.pressure_steps
        elif mode == "record":
            warmup, steps = args.record_warmup, args.record_steps
        else:
            warmup, steps = args.warmup, args.steps
        return {"kind": "train", "workload": workload, "mode": mode, "round": round_index,
                "warmup": warmup, "steps": warmup + steps, "pressure": pressure}

    plan = [{"kind": "probe"}]
    plan += [train(w, mode, 1) for w in args.workloads for mode in UNPRESSURED_MODES]
    if args.pressure_workload:
        if args.pressure_workload not in args.workloads:
            plan.append(train(args.pressure_workload, "native", 1))  # its peak live gives S
        plan.append(train(args.pressure_workload, "record"))
        for pressure in args.pressure_budgets:
            plan.append({"kind": "simulate", "workload": args.pressure_workload, "pressure": pressure})
            plan += [train(args.pressure_workload, policy, pressure=pressure) for policy in args.pressure_policies]
    for round_index in range(1, args.rounds):
        plan += [train(w, mode, round_index + 1) for w in args.workloads
                 for mode in rotated(UNPRESSURED_MODES, round_index)]
    return plan


def measured_key(entry):
    """What a run's measured time stands for: its workload and mode, and whether under pressure
    (the default mode runs with and without a budget)."""
    return entry["workload"], entry["mode"], entry.get("pressure") is not None


def deadline_cut(status, timeout, limit):
    """A run that ran out of time because the call's deadline, not the run's own limit, set its
    timeout was not made for want of time, like one skipped: its targets are SKIP, not FAIL."""
    return "cut (deadline)" if status == "timeout" and timeout < limit else status


def expected_seconds(entry, measured):
    """How long a run should take: the last measured run of its workload and mode, else the
    figures of earlier benchmarks."""
    if entry["kind"] == "probe":
        return 15.0
    if entry["kind"] == "simulate":
        return 5.0
    known = measured.get(measured_key(entry))
    if known:
        return known * 1.1
    workload, mode = entry["workload"], entry["mode"]
    seconds = STARTUP_S[workload]
    if mode == "save-on-cpu":
        seconds += SAVE_ON_CPU_FIRST_S[workload] + (entry["steps"] - 1) * SAVE_ON_CPU_STEP_S[workload]
    elif entry.get("pressure") is not None:
        seconds += entry["steps"] * PRESSURE_STEP_S[workload]
        if mode in ("default", "host-homes") or mode in DEFAULT_WITH:
            seconds += HOME_SEARCH_S
    else:
        seconds += entry["steps"] * STEP_S[workload]
    if mode == "record":
        seconds += 5.0  # CUPTI and the trace file
    return seconds


# ---------------------------------------------------------------- the runs

class Bench:
    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.clock = Clock(args.deadline_s)
        self.runs = []
        self.measured_s = {}
        self.link = {"h2d_gbps": args.h2d_gbps, "d2h_gbps": args.d2h_gbps, "source": "given"}
        self.fit_budgets = {}  # workload -> {"bytes", "source"}
        self.simulations = {}  # policy -> {"step_ms", "in_bytes", "out_bytes", "problem", ...}
        self.trace = None
        base = {name: value for name, value in os.environ.items()
                if not name.startswith("UVMP_") and name not in ALLOC_CONF_NAMES
                and name != "PYTORCH_NO_CUDA_MEMORY_CACHING"}
        if args.lib:
            base["UVMP_LIBRARY"] = os.path.abspath(args.lib)
        self.native_env = dict(base, PYTORCH_CUDA_ALLOC_CONF=ASYNC_BACKEND)
        self.allocator = uvmrun_allocator_choice(args.uvmrun, base)
        # uvmrun's own choice unless it does not make PyTorch's frees visible, or unless told.
        explicit = args.explicit_allocator or not self.allocator["picks_async"]
        self.allocator["set_by_benchmark"] = explicit
        self.uvmrun_env = dict(base, PYTORCH_CUDA_ALLOC_CONF=ASYNC_BACKEND) if explicit else dict(base)
        self.uvmrun_env.update(library_env(args.library_env))

    def seconds_left(self):
        return self.clock.left()

    def budget_of(self, entry, resolve=True):
        """(label, bytes) of a training run's budget; bytes None for none, or when the fit
        budget is not known yet (resolve False: a placeholder label for the plan)."""
        mode, workload = entry["mode"], entry["workload"]
        if entry.get("pressure") is not None:
            budget = self.pressure_bytes(entry["pressure"], resolve)
            digits = 1 if entry["pressure"].startswith("peak/") else 0
            return (format_gib(budget, digits), budget) if budget else (entry["pressure"], None)
        if mode in ("native", "default"):
            return "-", None
        if not resolve and workload not in self.fit_budgets:
            return "FIT", None
        fit = self.fit_budget(workload)
        return format_gib(fit), fit

    def pressure_bytes(self, spec, resolve=True):
        """Bytes of a pressure budget: a size, or peak/X with peak the native runs' max_memory_allocated
        (None until a native run has measured it, or with resolve False)."""
        return resolve_pressure(spec, self.native_peak() if resolve else None)

    def native_peak(self):
        return median_of(self.ok_runs(self.args.pressure_workload, "native"), "peak_allocated_bytes")

    def fit_budget(self, workload):
        if workload in self.fit_budgets:
            return self.fit_budgets[workload]["bytes"]
        if self.args.fit_budget_bytes:
            chosen, source = self.args.fit_budget_bytes, "given"
        else:
            native = self.ok_runs(workload, "native")
            default = self.ok_runs(workload, "default")  # without a budget
            figures = [r.get("peak_reserved_bytes") or 0 for r in native]
            figures += [(r["stats"] or {}).get(key) or 0 for r in default
                        for key in ("bytes_converted_peak", "pool_reserved_peak")]
            footprint = max(figures, default=0)
            if footprint:
                chosen = math.ceil(self.args.fit_factor * footprint / GIB) * GIB
                source = f"{self.args.fit_factor:g} x {format_gib(footprint, 2)}"
            else:
                chosen, source = FIT_FALLBACK_BYTES, "no footprint measured: fallback"
        self.fit_budgets[workload] = {"bytes": chosen, "source": source}
        return chosen

    def command_for(self, entry, run_id=None, resolve=True):
        workload, mode = entry["workload"], entry["mode"]
        command = [self.args.python, self.args.train_script] + TRAIN_WORKLOADS[workload] + [
            "--steps", str(entry["steps"]), "--warmup", str(entry["warmup"]), "--mark-iterations", "--deterministic"]
        if mode == "native":
            return command
        if mode == "save-on-cpu":
            label, budget = self.budget_of(entry, resolve)
            return command + ["--save-on-cpu", "--memory-cap", str(budget) if budget else label]
        stats = os.path.join(self.workdir, f"{run_id or 'RUN'}.stats.%p.json")
        wrapper = [self.args.uvmrun, "--stats-file", stats]
        label, budget = self.budget_of(entry, resolve)
        if budget is not None or label != "-":
            wrapper += ["--budget", f"{budget // MIB}M" if budget else label]
        if mode == "record":
            wrapper += ["--policy", "none", "--trace-out", os.path.join(self.workdir, f"{workload}.trace.%p.uvmt")]
        elif mode == "host-homes":
            wrapper += ["--policy", "learned", "--host-homes", "on", "--trace-in", self.trace or "TRACE"]
        elif entry.get("pressure") is not None:
            # The default mode adds nothing: whatever the library does by default with a budget.
            wrapper += PRESSURE_OPTIONS[mode]
        return wrapper + ["--"] + command

    def env_for(self, mode):
        if mode in WITHOUT_LIBRARY:
            return self.native_env
        if mode == "record":
            return dict(self.uvmrun_env, UVMP_TRACE_TIMING="1")
        if mode in DEFAULT_WITH:
            return dict(self.uvmrun_env, **DEFAULT_WITH[mode])
        return self.uvmrun_env

    def ok_runs(self, workload, mode):
        """The finished runs of a workload and mode without a pressure budget."""
        return [r for r in self.runs if r["workload"] == workload and r["mode"] == mode and r["status"] == "ok"
                and r.get("pressure") is None]

    def run_training(self, entry):
        workload, mode = entry["workload"], entry["mode"]
        run_id = f"run{len(self.runs) + 1:02d}-{workload}-{mode}" + (f"-r{entry['round']}" if entry["round"] else "")
        label, budget = self.budget_of(entry)
        record = {"id": run_id, "workload": workload, "mode": mode, "round": entry["round"], "budget": label,
                  "pressure": entry.get("pressure"),
                  "budget_bytes": budget, "warmup": entry["warmup"], "steps": entry["steps"], "status": "skipped",
                  "exit": None, "wall_s": None, "median_ms": None, "losses": None, "stats": None}
        self.runs.append(record)
        pressured = entry.get("pressure") is not None
        if pressured and budget is None:
            record["status"] = "skipped (no native peak)"
            print(f"--- {run_id}: not run, {entry['pressure']} needs the native run's peak", flush=True)
            return record
        if mode in NEEDS_TRACE and not self.trace:
            record["status"] = "skipped (no trace)"
            print(f"--- {run_id}: not run, the recording run left no trace", flush=True)
            return record
        left = self.seconds_left()
        expected = expected_seconds(entry, self.measured_s)
        if left < max(MIN_RUN_SECONDS, expected):
            record["status"] = "skipped (deadline)"
            print(f"--- {run_id}: not run, {max(left, 0):.0f} s left, about {expected:.0f} s needed", flush=True)
            return record
        limit = self.args.pressure_timeout_s if pressured else self.args.timeout_s
        timeout = min(limit, left)
        command = self.command_for(entry, run_id)
        record["command"] = command
        print(f"--- {run_id}: {mode_label(mode, entry.get('pressure'))}, budget {label} (timeout {timeout:.0f} s, "
              f"{self.clock.elapsed():.0f} s elapsed)\n$ {' '.join(command)}", flush=True)
        status, output, record["wall_s"] = timed_execute(command, timeout, self.env_for(mode))
        record["exit"] = status
        record["log"] = os.path.join(self.workdir, f"{run_id}.log")
        with open(record["log"], "w", encoding="utf-8") as log:
            log.write(output)

        summary = training_summary(output)
        if summary:
            for key in ("median_ms", "step_ms", "losses", "peak_allocated_bytes", "peak_reserved_bytes",
                        "memory_allocated_bytes", "memory_reserved_bytes", "allocator_backend", "alloc_conf",
                        "deterministic", "moved_after_warmup", "launches_per_step"):
                record[key] = summary.get(key)
        if mode not in WITHOUT_LIBRARY:
            record["stats"] = read_stats(os.path.join(self.workdir, f"{run_id}.stats.*.json"))
        record["status"], tail = run_verdict(status, output, summary, record["stats"], mode not in WITHOUT_LIBRARY)
        record["status"] = deadline_cut(record["status"], timeout, limit)
        if tail:
            record["output_tail"] = tail
        if record["status"] == "ok":
            self.measured_s[measured_key(entry)] = record["wall_s"]
        if mode == "record" and record["status"] == "ok":
            self.trace = largest_file(os.path.join(self.workdir, f"{workload}.trace.*.uvmt"))
        if pressured and record["status"] == "ok" and SIMULATED_HOMES.get(mode) == "auto":
            record["sim_run_homes"] = self.simulate_run_homes(record, budget)
        print(f"--- {record['status']} (exit {status}, {record['wall_s']} s, median {fmt(record['median_ms'], 3)} ms)",
              flush=True)
        return record

    def simulate_mode(self, mode, budget, extra=(), link=None):
        """`uvmtrace simulate` of the recorded trace as a library pressure mode runs: its policy, or
        learned with its --homes, its pool placement, the link measured in the call (or `link`)."""
        homes = SIMULATED_HOMES[mode]
        link = link or self.link
        return simulate(self.args.uvmtrace, self.trace, budget, "learned" if homes else mode, link["h2d_gbps"],
                        link["d2h_gbps"], min(self.args.simulate_timeout_s, max(1, self.seconds_left())),
                        repeat_last=self.args.sim_repeat_last,
                        extra=(simulate_homes_arguments(link, homes) if homes else [])
                        + (["--placement", SIMULATED_PLACEMENT[mode]] if mode in SIMULATED_PLACEMENT else [])
                        + self.streaming_line(homes) + list(extra))

    def streaming_line(self, homes):
        """The timing prior's streaming line the library runs with, when --library-env sets one:
        the simulator judges kernels by the same line."""
        line = self.uvmrun_env.get("UVMP_STREAMING_GBPS")
        return ["--streaming-gbps", line] if homes and line else []

    def simulate_run_homes(self, record, budget):
        """The recorded trace simulated with the homes this run chose (its stats file's host_homes:
        the prefix of the home order nearest their bytes, `uvmtrace simulate --host-bytes`), beside
        the simulator's own choice: which of the two the simulator's error comes from. None where
        the run used no homes or nothing can be simulated."""
        choice = (record.get("stats") or {}).get("host_homes") or {}
        if not choice.get("used") or not self.trace or self.seconds_left() < 5:
            return None
        run_homes = ["--host-bytes", str(choice["chosen_bytes"])]
        result, problem = self.simulate_mode(record["mode"], budget, run_homes)
        if not result:
            return {"problem": problem}
        homes = result.get("homes") or {}
        out = {"step_ms": result["step_seconds"] * 1e3, "host_bytes": homes.get("host_bytes")}
        # The same at the trips a named byte cost in the run's remote trial: the simulator counts
        # one, and the remote rates over the trips are what each named byte then comes to.
        trips = ((record.get("stats") or {}).get("host_homes_trial") or {}).get("trips")
        if trips and trips > 0 and all(self.link.get(k) for k in REMOTE_RATES) and self.seconds_left() >= 5:
            slowed = dict(self.link, **{k: self.link[k] / trips for k in REMOTE_RATES})
            result, problem = self.simulate_mode(record["mode"], budget, run_homes, link=slowed)
            out["at_trial_trips"] = ({"trips": trips, "step_ms": result["step_seconds"] * 1e3} if result
                                     else {"trips": trips, "problem": problem})
        return out

    def run_probe(self):
        if not self.args.link_probe:
            self.link["source"] = "given (no --link-probe)"
            return
        figures, problem = probe_link_rates(self.args.link_probe, timeout=min(60, max(1, self.seconds_left())),
                                            mib=self.args.link_probe_mib)
        if problem is None:
            self.link = dict(figures, source="measured")
        else:
            self.link["source"] = f"given ({problem})"

    def run_simulations(self, workload, pressure):
        budget = self.pressure_bytes(pressure)
        for policy in self.args.pressure_policies:
            if policy not in LIBRARY_PRESSURE_MODES:
                continue
            entry = {"policy": policy, "pressure": pressure, "trace": self.trace, "step_ms": None, "problem": None}
            self.simulations[simulation_key(policy, pressure)] = entry
            if budget is None:
                entry["problem"] = f"{pressure}: no native peak measured"
                continue
            if not self.trace:
                entry["problem"] = "no trace: the recording run did not finish"
                continue
            if self.seconds_left() < 5:
                entry["problem"] = "skipped (deadline)"
                continue
            # The default mode and the trace-fed host homes run the learned policy with homes of
            # their own; learned and demand-lru home everything on the GPU.
            homes = SIMULATED_HOMES[policy]
            entry["homes_option"] = homes or "gpu"
            result, problem = self.simulate_mode(policy, budget)
            entry["problem"] = problem
            if result:
                entry.update({"step_ms": result["step_seconds"] * 1e3, "in_bytes": result.get("step_in_bytes"),
                              "out_bytes": result.get("step_out_bytes"), "steady_steps": result.get("steady_steps"),
                              "reused_bytes": result.get("reused_bytes"),
                              "footprint_bytes": result.get("footprint_bytes"),
                              "bound_ms": result.get("transfer_bound_step_seconds", 0) * 1e3,
                              "prediction_hit_rate": result.get("prediction_hit_rate"),
                              "homes": result.get("homes")})
                print(f"simulated {policy} at {format_gib(budget)}: {entry['step_ms']:.1f} ms a step"
                      + (f" ({homes_choice_text(entry['homes'])})" if homes == "auto" else ""), flush=True)

    def measure(self, plan):
        for entry in plan:
            if entry["kind"] == "probe":
                self.run_probe()
            elif entry["kind"] == "simulate":
                self.run_simulations(entry["workload"], entry["pressure"])
            else:
                self.run_training(entry)
            save(self)


def resolve_pressure(spec, peak):
    """Bytes of a pressure budget spec (16G, or peak/1.5: the peak over 1.5, whole MiB), or None."""
    if spec.startswith("peak/"):
        return None if not peak else int(peak / float(spec[len("peak/"):])) // MIB * MIB
    return parse_size(spec)


def simulation_key(policy, pressure):
    return f"{policy} at {pressure}"


REMOTE_RATES = ("remote_write_gbps", "remote_read_gbps")


def simulate_homes_arguments(link, homes="host"):
    """uvmtrace simulate's tier model (--homes host: the homes searched on the trace; auto: those
    only where they gain 10% or more, what the library does by default), with the remote rates
    of this run's probe where it measured them."""
    extra = ["--homes", homes]
    for key, option in zip(REMOTE_RATES, ("--remote-write-gbps", "--remote-read-gbps")):
        if link.get(key):
            extra += [option, str(link[key])]
    return extra


def uvmrun_allocator_choice(uvmrun, env):
    """What uvmrun sets for PyTorch's allocator when the user sets nothing, from its dry run."""
    status, output = execute([uvmrun, "--dry-run", "--", "true"], 30, env)
    settings = {}
    for line in output.splitlines():
        name, _, value = line.partition("=")
        if name in ALLOC_CONF_NAMES:
            settings[name] = value
    return {"dry_run_exit": status, "uvmrun_sets": settings,
            "picks_async": status == 0 and any(ASYNC_BACKEND in value for value in settings.values())}


# ---------------------------------------------------------------- the report

def format_gib(value, digits=0):
    return "-" if value is None else f"{value / GIB:.{digits}f}G"


def timed_steps(run):
    return (run.get("step_ms") or [])[run["warmup"]:]


def pooled_median(runs):
    steps = [ms for run in runs for ms in timed_steps(run)]
    return statistics.median(steps) if steps else None


def losses_equal(run, reference):
    """Whether run's losses equal the reference's over the steps both made (None when either
    has none): the same job, deterministic, computes step k from steps 1..k alone."""
    if not reference or not run.get("losses") or not reference.get("losses"):
        return None
    common = min(len(run["losses"]), len(reference["losses"]))
    return run["losses"][:common] == reference["losses"][:common]


def steady_bytes_per_step(run):
    """The library's moved bytes per step after warm-up, from its counters read in the job."""
    moved, timed = run.get("moved_after_warmup"), run["steps"] - run["warmup"]
    if not moved or timed <= 0:
        return None
    return {key: value / timed for key, value in moved.items()}


def all_steps_bytes_per_step(run):
    """The stats file's totals over every step run, warm-up and first placement included."""
    stats = run.get("stats")
    if not stats or not run["steps"]:
        return None
    keys = {"evicted": "bytes_evicted", "evicted_dead": "bytes_evicted_dead", "prefetched": "bytes_prefetched",
            "populated": "bytes_populated", "demand": "bytes_demand_estimated", "frees": "frees_converted"}
    return {name: stats.get(key, 0) / run["steps"] for name, key in keys.items()}


def floor_ms(swapped_bytes, evict_gbps, fetch_gbps):
    """S/e + S/f: the time to evict and fetch back S bytes at the measured rates."""
    if swapped_bytes is None or not evict_gbps or not fetch_gbps:
        return None
    if swapped_bytes <= 0:
        return 0.0
    return (swapped_bytes / (evict_gbps * 1e9) + swapped_bytes / (fetch_gbps * 1e9)) * 1e3


def worst_memory_ratio(runs, key, reference):
    """The ratio to native farthest from 1 among the runs, with its value."""
    worst = None
    for run in runs:
        value = run.get(key)
        r = ratio(value, reference)
        if r is not None and (worst is None or abs(r - 1) > abs(worst[1] - 1)):
            worst = (value, r)
    return worst or (None, None)


def median_of(runs, key):
    values = [run[key] for run in runs if run.get(key) is not None]
    return statistics.median(values) if values else None


def mean_of_dicts(dicts):
    dicts = [d for d in dicts if d]
    if not dicts:
        return None
    return {key: sum(d.get(key, 0) for d in dicts) / len(dicts) for key in dicts[0]}


def round_ratios(runs, native_runs):
    """Each round's own step ratio to the native run of the same round."""
    native = {r["round"]: r["median_ms"] for r in native_runs}
    return [r["median_ms"] / native[r["round"]] for r in runs if native.get(r["round"])]


def pressure_figures(runs, workload, pressure, link):
    """S, the floor, from the native runs of the workload, at one pressure budget."""
    native = [r for r in runs if r["workload"] == workload and r["mode"] == "native" and r["status"] == "ok"]
    peak = median_of(native, "peak_allocated_bytes")
    budget_bytes = resolve_pressure(pressure, peak)
    swapped = None if peak is None or budget_bytes is None else peak - budget_bytes
    return {"pressure": pressure, "peak_live_bytes": peak, "budget_bytes": budget_bytes, "swapped_bytes": swapped,
            "floor_ms": floor_ms(swapped, link["d2h_gbps"], link["h2d_gbps"]),
            # Written to host pages and read back by kernels: what host homes would pay at best.
            "remote_floor_ms": floor_ms(swapped, link.get("remote_write_gbps"), link.get("remote_read_gbps"))}


def halfway_ms(row):
    """Halfway from the migrate floor to the remote floor (the issue's goal beyond the floor), at the
    rates measured in the same call; None where a floor or the step is missing."""
    if row.get("median_ms") is None or row.get("floor_ms") is None or row.get("remote_floor_ms") is None:
        return None
    return (row["floor_ms"] + row["remote_floor_ms"]) / 2


def remote_floor_at_reads(named, swapped_bytes, link):
    """The remote floor with S read back as often as kernels read the simulated homes' bytes a step
    (read over written, one trip a launch): S/w + k S/r. The remote floor reads S once; a workload
    whose readers name each host-homed byte k times pays k trips. Empty where nothing is known."""
    write, read = link.get("remote_write_gbps"), link.get("remote_read_gbps")
    if not named.get("written") or named.get("read") is None or swapped_bytes is None or not write or not read:
        return {}
    reads = named["read"] / named["written"]
    seconds = max(swapped_bytes, 0) * (1 / (write * 1e9) + reads / (read * 1e9))
    return {"sim_reads_per_byte": reads, "remote_floor_at_reads_ms": seconds * 1e3}


def table_rows(report):
    """One row per workload and mode, in the order of the plan's modes."""
    runs, settings = report["runs"], report["settings"]
    rows = []
    pressure_workload = [settings["pressure_workload"]] if settings["pressure_workload"] else []
    for workload in dict.fromkeys(settings["workloads"] + pressure_workload):
        native_runs = [r for r in runs if r["workload"] == workload and r["mode"] == "native" and r["status"] == "ok"]
        native_ms = pooled_median(native_runs)
        reference = native_runs[0] if native_runs else None
        groups = [(mode, None) for mode in list(UNPRESSURED_MODES) + ["record"]]
        groups += [(mode, pressure) for pressure in settings["pressure_budgets"] for mode in settings["pressure_policies"]]
        for mode, pressure_spec in groups:
            mode_runs = [r for r in runs if r["workload"] == workload and r["mode"] == mode
                         and r.get("pressure") == pressure_spec]
            if not mode_runs:
                continue
            ok = [r for r in mode_runs if r["status"] == "ok"]
            median = pooled_median(ok)
            row = {"workload": workload, "mode": mode, "budget": mode_runs[0]["budget"], "pressure": pressure_spec,
                   "runs": len(mode_runs), "runs_ok": len(ok),
                   "runs_started": sum(1 for r in mode_runs if r["status"] in ("ok", "failed", "timeout")),
                   "status": "ok" if ok else mode_runs[-1]["status"],
                   "timed_steps": mode_runs[0]["steps"] - mode_runs[0]["warmup"], "warmup": mode_runs[0]["warmup"],
                   "median_ms": median, "ratio_native": ratio(median, native_ms),
                   "round_ratios": (round_ratios(ok, native_runs) if pressure_spec is None
                                    and mode in UNPRESSURED_MODES[1:] else [])}
            for key in ("peak_allocated_bytes", "memory_reserved_bytes"):
                if mode == "native":
                    row[key], row[f"{key}_ratio"] = median_of(ok, key), None
                else:
                    row[key], row[f"{key}_ratio"] = worst_memory_ratio(ok, key, median_of(native_runs, key))
            row["steady_per_step"] = mean_of_dicts([steady_bytes_per_step(r) for r in ok])
            row["all_steps_per_step"] = mean_of_dicts([all_steps_bytes_per_step(r) for r in ok])
            verdicts = [losses_equal(r, reference) for r in ok if r is not reference]
            verdicts = [v for v in verdicts if v is not None]
            row["losses_equal"] = all(verdicts) if verdicts else None
            row["losses_compared"] = len(verdicts)
            pressure = report["pressure"].get(pressure_spec) if pressure_spec else None
            if pressure and workload == settings["pressure_workload"]:
                row["swapped_bytes"] = pressure["swapped_bytes"]
                row["floor_ms"] = pressure["floor_ms"]
                row["remote_floor_ms"] = pressure.get("remote_floor_ms")
                row["ratio_floor"] = ratio(median, pressure["floor_ms"])
                simulated = report["simulations"].get(simulation_key(mode, pressure_spec)) or {}
                row["sim_ms"] = simulated.get("step_ms")
                sim_homes = simulated.get("homes") or {}
                if "step_remote_write_bytes" in sim_homes:
                    row["sim_remote"] = {"written": sim_homes["step_remote_write_bytes"],
                                         "read": sim_homes.get("step_remote_read_bytes")}
                    row.update(remote_floor_at_reads(row["sim_remote"], pressure["swapped_bytes"], report["link"]))
                predicted_over_measured = ratio(row["sim_ms"], median)
                row["sim_error"] = None if predicted_over_measured is None else predicted_over_measured - 1
                if mode in LIBRARY_PRESSURE_MODES:
                    row["host_homes"] = mean_host_homes([host_homes_of_run(r) for r in ok])
                run_homes = [r["sim_run_homes"]["step_ms"] for r in ok if (r.get("sim_run_homes") or {}).get("step_ms")]
                if run_homes:
                    row["sim_run_homes_ms"] = statistics.median(run_homes)
                    row["sim_run_homes_error"] = ratio(row["sim_run_homes_ms"], median) - 1
                at_trips = [(r["sim_run_homes"].get("at_trial_trips") or {}) for r in ok if r.get("sim_run_homes")]
                at_trips = [t for t in at_trips if t.get("step_ms")]
                if at_trips:
                    row["sim_trial_trips"] = statistics.median(t["trips"] for t in at_trips)
                    row["sim_trial_trips_ms"] = statistics.median(t["step_ms"] for t in at_trips)
                    row["sim_trial_trips_error"] = ratio(row["sim_trial_trips_ms"], median) - 1
            rows.append(row)
    # How many times faster each pressure row's step is than save_on_cpu's and demand-lru's at
    # the same budget.
    for row in rows:
        if row["pressure"] is None:
            continue
        for other in SPEEDUP_AGAINST:
            versus = same_budget_row(rows, row, other)
            row[f"speedup_vs_{other}"] = ratio(versus["median_ms"], row["median_ms"]) if versus else None
    return rows


# The modes each pressure row's step is compared with, in the table and in the default mode's targets.
SPEEDUP_AGAINST = ("save-on-cpu", "demand-lru")


def same_budget_row(rows, row, mode):
    """The row of another mode at the same workload and pressure budget, or None (also for the row
    itself)."""
    return next((r for r in rows if r["workload"] == row["workload"] and r["mode"] == mode
                 and r["pressure"] == row["pressure"] and r is not row), None)


def launch_step(run, launch):
    """The step (from 0) in which the run's launch number `launch` (counted as launches_seen counts)
    came, from the launches of each step and the stats file's total; None when not known."""
    per_step = run.get("launches_per_step") or []
    total = (run.get("stats") or {}).get("launches_seen")
    if not launch or not per_step or None in per_step or total is None:
        return None
    seen = total - sum(per_step)  # launches before the first step: building the model
    for step, launches in enumerate(per_step):
        seen += launches
        if launch <= seen:
            return step
    return None


def library_env(assignments):
    """--library-env NAME=VALUE ... as a dict; a malformed one stops the benchmark before it runs."""
    env = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            raise SystemExit(f"--library-env {assignment!r}: expected NAME=VALUE")
        env[name] = value
    return env


def host_homes_of_run(run):
    """What a library run homed on the host, from its stats file (the library's totals over the
    whole run): None when the file has no such counters. Bytes a step are counted over the steps
    from the one in which the library began to route allocations to host homes (the homes it learned
    in the run) when that is known, else over every step."""
    stats = run.get("stats") or {}
    if "host_bytes_allocated" not in stats and "host_homes_learned" not in stats:
        return None
    host_bytes = stats.get("host_bytes_allocated") or 0
    at_launch = stats.get("host_homes_learned_at_launch") or 0
    at_step = launch_step(run, at_launch)
    homed_steps = run["steps"] - at_step if at_step is not None else run["steps"]
    # The steps wholly after the one in which routing began: what the step is once homed, whether or
    # not the warm-up covered the learning.
    after = (run.get("step_ms") or [])[at_step + 1:] if at_step is not None else []
    return {"learned": stats.get("host_homes_learned"), "at_launch": at_launch or None, "at_step": at_step,
            "warmup": run["warmup"], "median_ms_after": statistics.median(after) if after else None,
            "steps_after": len(after),
            "host_allocs": stats.get("host_allocs") or 0, "host_bytes": host_bytes, "over_steps": homed_steps,
            "given_back": stats.get("host_homes_given_back"), "given_back_bytes": stats.get("host_homes_given_back_bytes"),
            "given_back_reverted": stats.get("host_homes_given_back_reverted"),
            "trial": stats.get("host_homes_trial"),
            "choice": stats.get("host_homes"),
            "bytes_per_step": host_bytes / homed_steps if homed_steps > 0 else None}


def mean_host_homes(figures):
    """One row's host homes: the first run's figures, with bytes a step averaged over its runs."""
    figures = [f for f in figures if f]
    if not figures:
        return None
    per_step = [f["bytes_per_step"] for f in figures if f["bytes_per_step"] is not None]
    return dict(figures[0], bytes_per_step=sum(per_step) / len(per_step) if per_step else None, runs=len(figures))


def check(what, value, goal, passed, skip=False):
    """One line of the final table: a goal of "-" makes it information; a target that could
    not be judged (passed None) fails unless skip says that its runs were not made."""
    verdict = "SKIP" if skip else ("info" if goal == "-" else ("PASS" if passed else "FAIL"))
    return {"what": what, "value": value, "goal": goal, "verdict": verdict}


def within(value, tolerance):
    return None if value is None else abs(value - 1) <= tolerance


def target_checks(report):
    """Every target as a line: what, value, goal, verdict (PASS, FAIL, info or SKIP)."""
    rows = report["rows"]
    lines = []
    allocator = report["allocator"]
    lines.append(check("pool: uvmrun picks backend:cudaMallocAsync", uvmrun_sets_text(allocator), ASYNC_BACKEND,
                       allocator["picks_async"]))
    link = report["link"]
    lines.append(check("pool: link f (fetch) / e (evict) GB/s",
                       f"{fmt(link['h2d_gbps'], 1)} / {fmt(link['d2h_gbps'], 1)} ({link['source']})", "-", None))
    lines.append(check("pool: remote write w / read r GB/s (kernels on host pages)",
                       f"{fmt(link.get('remote_write_gbps'), 1)} / {fmt(link.get('remote_read_gbps'), 1)}", "-", None))
    runs = report["runs"]
    started = [r for r in runs if r["status"] in ("ok", "failed", "timeout")]
    finished = [r for r in started if r["status"] == "ok"]
    lines.append(check("pool: runs finished", f"{len(finished)} of {len(started)} started, {len(runs)} planned",
                       "all started", len(finished) == len(started) if started else None))
    backends = sorted({str(r.get("allocator_backend")) for r in finished})
    lines.append(check("pool: allocator backend in every run", ", ".join(backends) or "n/a", "cudaMallocAsync",
                       backends == ["cudaMallocAsync"] if backends else None, skip=not backends))
    library = [r for r in finished if r["mode"] not in WITHOUT_LIBRARY]
    frees = [(r.get("stats") or {}).get("frees_converted", 0) for r in library]
    lines.append(check("pool: library saw frees in every run", f"{sum(1 for f in frees if f)} of {len(frees)} runs",
                       "all", all(frees) if frees else None, skip=not frees))

    for row in rows:
        row_lines = row_checks(row, rows, report)
        for line in row_lines:
            line["row"] = row_name(row)  # which row's targets it is (row_verdict)
        lines += row_lines
    return lines


def row_checks(row, rows, report):
    """The checks of one table row."""
    name = row_name(row)
    lines = []
    measured = row["status"] == "ok"
    # Skipped only when none of the mode's runs was started; a run that failed fails its targets.
    unmade = not row["runs_started"]
    if row["pressure"] is None and row["mode"] in ("default", "fit"):
        goal = DEFAULT_RATIO_GOAL if row["mode"] == "default" else FIT_RATIO_GOAL
        rounds = " ".join(f"{r:.3f}" for r in row["round_ratios"])
        lines.append(check(f"{name} step x native", f"{fmt(row['ratio_native'], 3)}" + (f" (rounds {rounds})" if
                           len(row["round_ratios"]) > 1 else ""), f"<= {goal}",
                           row["ratio_native"] is not None and row["ratio_native"] <= goal, skip=unmade))
        for key, label in (("peak_allocated_bytes", "max_memory_allocated"),
                           ("memory_reserved_bytes", "memory_reserved")):
            value = row[f"{key}_ratio"]
            lines.append(check(f"{name} {label} x native", fmt(value, 3), f"1 +- {MEMORY_TOLERANCE}",
                               within(value, MEMORY_TOLERANCE), skip=unmade))
    if row["pressure"] is not None and "floor_ms" in row:
        default = row["mode"] == "default"
        steady = row["steady_per_step"] or {}
        swapped = row["swapped_bytes"]
        lines.append(check(f"{name} GB/step out/in/late vs S",
                           f"{gb(steady.get('evicted'))} / {gb(steady.get('prefetched'))} / "
                           f"{gb(steady.get('demand'))} vs {gb(swapped)}", "-", None, skip=not measured))
        # The default mode's step must be below the migrate floor; the others' is information.
        below_floor = (None if row["median_ms"] is None or row["floor_ms"] is None
                       else row["median_ms"] < row["floor_ms"])
        lines.append(check(f"{name} step vs S/e+S/f", f"{fmt(row['median_ms'], 1)} ms vs "
                           f"{fmt(row['floor_ms'], 1)} ms ({fmt(row['ratio_floor'], 2)}x)",
                           "< S/e+S/f" if default else "-", below_floor,
                           skip=unmade if default else not measured))
        lines.append(check(f"{name} step vs S/w+S/r", f"{fmt(row['median_ms'], 1)} ms vs "
                           f"{fmt(row.get('remote_floor_ms'), 1)} ms (remote floor)", "-", None,
                           skip=not measured))
        halfway = halfway_ms(row)
        if default and halfway is not None:
            lines.append(check(f"{name} step vs halfway", f"{fmt(row['median_ms'], 1)} ms vs {fmt(halfway, 1)} ms "
                               f"(halfway from S/e+S/f to S/w+S/r, {'below' if row['median_ms'] < halfway else 'above'})",
                               "-", None, skip=not measured))
        if row.get("remote_floor_at_reads_ms") is not None:
            lines.append(check(f"{name} step vs S/w+kS/r", f"{fmt(row['median_ms'], 1)} ms vs "
                               f"{fmt(row['remote_floor_at_reads_ms'], 1)} ms (remote floor at the simulated homes' "
                               f"k = {row['sim_reads_per_byte']:.1f} reads a written byte)", "-", None,
                               skip=not measured))
        if row["mode"] in LIBRARY_PRESSURE_MODES:
            simulated = report["simulations"].get(simulation_key(row["mode"], row["pressure"])) or {}
            lines.append(simulation_check(name, row, simulated, not unmade))
            if row.get("sim_run_homes_ms") is not None:
                lines.append(check(f"{name} simulated with the run's homes",
                                   f"{fmt(row['sim_run_homes_ms'], 1)} ms, {100 * row['sim_run_homes_error']:+.1f}%",
                                   "-", None))
            if row.get("sim_trial_trips_ms") is not None:
                lines.append(check(f"{name} simulated with the run's homes at its trial's trips",
                                   f"{fmt(row['sim_trial_trips_ms'], 1)} ms, "
                                   f"{100 * row['sim_trial_trips_error']:+.1f}% ({row['sim_trial_trips']:.2f} trips)",
                                   "-", None))
            if default:
                lines.append(check(f"{name} host homes: run / simulator", host_homes_text(row.get("host_homes"))
                                   + "; simulator: " + homes_choice_text(simulated.get("homes"), simulated),
                                   "-", None, skip=unmade))
            others = SPEEDUP_AGAINST + (("learned",) if default else ())
            for other in others:
                versus = same_budget_row(rows, row, other)
                if versus is None:
                    continue
                goal = speedup_goal(row, other)
                if goal is None:  # information, where both steps were measured
                    if versus["median_ms"] and row["median_ms"]:
                        lines.append(check(f"{name} step vs {other}", speedup_text(row, versus), "-", None,
                                           skip=not measured))
                    continue
                speedup = ratio(versus["median_ms"], row["median_ms"])
                passed = None if speedup is None else (speedup >= goal if goal > 1 else speedup > goal)
                goal_text = f">= {goal:g}x faster" if goal > 1 else "faster"
                lines.append(check(f"{name} step vs {other}", speedup_text(row, versus), goal_text, passed,
                                   skip=unmade or (not versus["runs_started"] and speedup is None)))
    # Native runs against the first of them: the job itself must repeat its losses.
    equal = row["losses_equal"]
    if row["mode"] != "native" or equal is not None:
        what = "losses repeat" if row["mode"] == "native" else "losses = native"
        lines.append(check(f"{name} {what}", f"{equal} ({row['losses_compared']} runs)", "True",
                           equal, skip=unmade))
    return lines


def speedup_goal(row, other):
    """How many times faster than the other mode the row's step must be (1: merely faster), or None
    where that is information only: the targets are the default mode's under pressure."""
    if row["mode"] != "default" or row["pressure"] is None:
        return None
    if other == "demand-lru":
        return DEFAULT_VS_DEMAND_LRU
    if other == "save-on-cpu":
        return DEFAULT_VS_SAVE_ON_CPU.get(row["pressure"], 1.0)
    return None


def speedup_text(row, versus):
    if versus["median_ms"] is None:
        return f"{fmt(row['median_ms'], 1)} ms vs {versus['mode']} {versus['status']}"
    return (f"{fmt(row['median_ms'], 1)} ms vs {fmt(versus['median_ms'], 1)} ms "
            f"({fmt(ratio(versus['median_ms'], row['median_ms']), 2)}x faster)")


def host_homes_text(homes):
    """What a run homed on the host, from host_homes_of_run."""
    if not homes:
        return "run: no host-home counters in its stats file"
    learned = homes.get("learned")
    when = ""
    if homes.get("at_launch"):
        when = f" at launch {homes['at_launch']}"
        if homes.get("at_step") is not None:
            when += f" (step {homes['at_step']}; timed steps from {homes.get('warmup')})"
    state = ("homes learned" + when if learned else
             "no homes learned" if learned is False else "learning not reported")
    if learned and homes.get("given_back") is not None:
        state += (f", remote trial gave {homes['given_back']} allocations of a step "
                  f"({gb(homes.get('given_back_bytes') or 0)} GB) back their GPU home"
                  + (", then sent them back to the host (slower steps after)" if homes.get("given_back_reverted")
                     else ""))
    trial = homes.get("trial")
    if trial and trial.get("named_bytes"):
        state += (f" (its {trial['launches']} launches of {trial['kinds']} kinds took {trial['past_local_ms']:.1f} ms "
                  f"past their local times on the {gb(trial['named_bytes'])} GB of host-homed data they named: "
                  f"{trial['trips']:.1f} read trips' time a byte)")
    choice = homes.get("choice")
    if choice:
        state += (f"; chose {choice['chosen']} of the step's {choice['step_allocations']} allocations "
                  f"({gb(choice['chosen_bytes'])} GB; {choice['candidates']} candidates, "
                  f"{choice['kernels_streaming']} of {choice['kernels_judged']} kernels judged streaming"
                  + (f", {choice['kernels_tried']} tried remote for want of a local time"
                     if choice.get("kernels_tried") else "")
                  + (f", {choice['kinds_from_waits']} launch kinds timed only on the "
                     f"{choice['waited_launches']} launches that waited for moves"
                     if choice.get("waited_launches") else "") + "), "
                  f"simulated {choice['simulated_ms']:.1f} ms against {choice['all_gpu_ms']:.1f} all on the GPU"
                  + ("" if choice.get("used") else ", not used")
                  + (f"; routed {choice['routed_host']} to the host, {choice['routed_unmatched']} allocations "
                     f"matched no entry" if choice.get("used") else "")
                  + step_layout_text(choice))
    if not homes["host_bytes"]:
        return f"run: {state}, nothing homed on the host"
    per_step = homes.get("bytes_per_step")
    over = (f"the {homes['over_steps']} steps from step {homes['at_step']}" if homes.get("at_step") is not None
            else f"all {homes['over_steps']} steps")
    after = homes.get("median_ms_after")
    return (f"run: {state}, {gb(homes['host_bytes'])} GB in {homes['host_allocs']} allocations on the host"
            + ("" if per_step is None else f", {gb(per_step)} GB a step over {over}")
            + ("" if after is None else f"; median step after step {homes['at_step']}: {after:.1f} ms "
               f"({homes['steps_after']} steps)"))


def step_layout_text(choice):
    """What the run's weighing of a layout planned for the learned step came to (its stats file)."""
    if not choice.get("placed_as_they_come_ms"):
        return ""
    text = (f"; step layout simulated {choice['layout_ms']:.1f} ms against {choice['placed_as_they_come_ms']:.1f} "
            f"placed as they come")
    if not choice.get("layout_arena_bytes"):
        return text + ", not used"
    return (text + f", used: arena {gb(choice['layout_arena_bytes'])} GB, {choice.get('layout_placed', 0)} blocks "
            f"laid out, {choice.get('layout_displaced', 0)} displaced")


def homes_choice_text(homes, simulated=None):
    """What `uvmtrace simulate --homes auto` (or host) chose."""
    if not homes:
        problem = (simulated or {}).get("problem")
        return f"n/a ({problem})" if problem else "no homes reported"
    gain = homes.get("simulated_gain")
    gain_text = "n/a" if gain is None else f"{100 * gain:.1f}%"
    on_host = f"{gb(homes.get('host_bytes'))} GB on the host"
    if "used" not in homes:  # --homes host: always used
        return on_host
    layout = homes.get("step_layout")
    layout_text = ("" if not layout else
                   f"; step layout {'used' if layout['used'] else 'not used'} "
                   f"({1e3 * layout['planned_step_seconds']:.1f} ms against "
                   f"{1e3 * layout['over_dead_step_seconds']:.1f} placed as they come)")
    if layout and layout["used"]:
        return f"homes with the layout, simulated gain {gain_text}, {on_host}{layout_text}"
    if homes["used"]:
        return f"homes used, simulated gain {gain_text}, {on_host}{layout_text}"
    return f"homes not used (simulated gain {gain_text}): every home on the GPU{layout_text}"


def row_name(row):
    """The prefix of a row's checks: workload and mode, and a pressure run's budget."""
    spec = row.get("pressure")
    at = "" if not spec else f" at {spec} ({row['budget']})" if spec.startswith("peak/") else f" at {spec}"
    return f"pool {row['workload']} {row['mode']}{at}"


def simulation_check(name, row, simulated, started):
    """The simulator's step against the measured one: SKIP when either was not made for want
    of time, FAIL when the run, the recording or the simulation failed."""
    error = row.get("sim_error")
    if error is not None:
        return check(f"{name} simulate error", f"{fmt(row['sim_ms'], 1)} ms, {100 * error:+.1f}%",
                     f"within {SIM_ERROR_GOAL:.0%}", abs(error) <= SIM_ERROR_GOAL)
    problem = simulated.get("problem") or ("the run failed" if simulated else "not simulated")
    skipped = not started or not simulated or "deadline" in problem
    return check(f"{name} simulate error", problem, f"within {SIM_ERROR_GOAL:.0%}", False, skip=skipped)


def gb(value):
    return fmt(None if value is None else value / 1e9, 2)


def build_report(bench):
    args = bench.args
    report = {
        "settings": {"workloads": args.workloads, "rounds": args.rounds, "warmup": args.warmup, "steps": args.steps,
                     "pressure_workload": args.pressure_workload, "pressure_budgets": args.pressure_budgets,
                     "pressure_policies": args.pressure_policies, "pressure_warmup": args.pressure_warmup,
                     "pressure_steps": args.pressure_steps, "record_warmup": args.record_warmup,
                     "record_steps": args.record_steps, "fit_factor": args.fit_factor,
                     "sim_repeat_last": args.sim_repeat_last, "explicit_allocator": args.explicit_allocator,
                     "timeout_s": args.timeout_s,
                     "pressure_timeout_s": args.pressure_timeout_s, "deadline_s": args.deadline_s},
        "goals": {"default_ratio": DEFAULT_RATIO_GOAL, "fit_ratio": FIT_RATIO_GOAL,
                  "memory_tolerance": MEMORY_TOLERANCE, "simulate_error": SIM_ERROR_GOAL},
        "elapsed_s": round(bench.clock.elapsed(), 1),
        "link": bench.link,
        "allocator": bench.allocator,
        "fit_budgets": bench.fit_budgets,
        "simulations": bench.simulations,
        "trace": bench.trace,
        "runs": bench.runs,
    }
    # Without a pressure workload there is nothing to report at any budget.
    report["pressure"] = {spec: pressure_figures(bench.runs, args.pressure_workload, spec, bench.link)
                          for spec in (args.pressure_budgets if args.pressure_workload else [])}
    report["rows"] = table_rows(report)
    report["checks"] = target_checks(report)
    report["loss_mismatches"] = loss_mismatches(bench.runs)
    return report


def loss_mismatches(runs):
    lines = []
    for run in runs:
        native = next((r for r in runs if r["workload"] == run["workload"] and r["mode"] == "native"
                       and r["status"] == "ok"), None)
        if run is not native and run["status"] == "ok" and losses_equal(run, native) is False:
            lines.append(f"{run['id']}: losses differ from native\n  native: {native['losses']}\n"
                         f"  {run['mode']}: {run['losses']}")
    return lines


def row_verdict(row, checks):
    name = row_name(row)
    mine = [c for c in checks if c.get("row") == name]
    failed = [c["what"][len(name) + 1:] for c in mine if c["verdict"] == "FAIL"]
    judged = [c for c in mine if c["verdict"] in ("PASS", "FAIL")]
    if failed:
        return "FAIL: " + ", ".join(failed)
    return "PASS" if judged else "-"


def mode_label(mode, pressure=None):
    """A mode's name in the table: uvmrun's defaults under a pressure budget learn host homes."""
    return DEFAULT_PRESSURE_LABEL if mode == "default" and pressure is not None else MODE_LABELS[mode]


def host_cell(row):
    """Bytes a step homed on the host (library pressure rows)."""
    if "host_homes" not in row:
        return "-"
    homes = row["host_homes"]
    return "n/a" if not homes or homes.get("bytes_per_step") is None else gb(homes["bytes_per_step"])


def remote_cell(row):
    """Bytes a step kernels named of host-homed blocks, written then read (the library's counters
    after warm-up, one trip a launch), with the simulator's for its own homes in brackets."""
    named = row.get("steady_per_step") or {}
    run = ("/".join(gb(named.get(k)) for k in ("remote_written", "remote_read"))
           if "remote_written" in named else "-")
    sim = row.get("sim_remote")
    return run + (f" ({gb(sim['written'])}/{gb(sim['read'])})" if sim else "")


def speedup_cell(row, other):
    key = f"speedup_vs_{other}"
    if key not in row or row["mode"] == other:
        return "-"
    return "n/a" if row[key] is None else f"{row[key]:.2f}x"


def memory_cell(row, key):
    value, r = row.get(key), row.get(f"{key}_ratio")
    return format_gib(value, 2) + ("" if r is None else f" ({r:.3f})")


TABLE_COLUMNS = [
    ("workload", lambda r, c: r["workload"]),
    ("mode", lambda r, c: mode_label(r["mode"], r["pressure"])),
    ("budget", lambda r, c: r["budget"]),
    ("steps", lambda r, c: f"{r['runs_ok']}x{r['timed_steps']} after {r['warmup']}"),
    ("median ms", lambda r, c: fmt(r["median_ms"], 1) if r["status"] == "ok" else r["status"]),
    ("x native", lambda r, c: fmt(r["ratio_native"], 3)),
    ("max alloc (x N)", lambda r, c: memory_cell(r, "peak_allocated_bytes")),
    ("reserved (x N)", lambda r, c: memory_cell(r, "memory_reserved_bytes")),
    ("GB/step out/in/pop/late", lambda r, c: "-" if not r["steady_per_step"] else "/".join(
        gb(r["steady_per_step"].get(k)) for k in ("evicted", "prefetched", "populated", "demand"))),
    ("host GB/step", lambda r, c: host_cell(r)),
    ("remote GB/step w/r (sim)", lambda r, c: remote_cell(r)),
    ("S GB", lambda r, c: gb(r["swapped_bytes"]) if "swapped_bytes" in r else "-"),
    ("S/e+S/f ms", lambda r, c: fmt(r["floor_ms"], 1) if "floor_ms" in r else "-"),
    ("x floor", lambda r, c: fmt(r["ratio_floor"], 2) if "ratio_floor" in r else "-"),
    ("sim ms", lambda r, c: fmt(r["sim_ms"], 1) if "sim_ms" in r else "-"),
    ("sim err", lambda r, c: (fmt(100 * r["sim_error"], 1) + "%" if r.get("sim_error") is not None else "n/a")
     if "sim_ms" in r else "-"),
    ("vs save_on_cpu", lambda r, c: speedup_cell(r, "save-on-cpu")),
    ("vs demand-lru", lambda r, c: speedup_cell(r, "demand-lru")),
    ("losses = N", lambda r, c: "ref" if r["mode"] == "native" else
     ("-" if r["losses_equal"] is None else ("yes" if r["losses_equal"] else "NO"))),
    ("targets", lambda r, c: row_verdict(r, c)),
]


def table_cells(report):
    return [[name for name, _ in TABLE_COLUMNS]] + [
        [show(row, report["checks"]) for _, show in TABLE_COLUMNS] for row in report["rows"]]


def uvmrun_sets_text(allocator):
    if allocator["dry_run_exit"] != 0:
        return f"its dry run failed (exit {allocator['dry_run_exit']})"
    return ", ".join(f"{k}={v}" for k, v in allocator["uvmrun_sets"].items()) or "nothing"


def allocator_text(report):
    allocator = report["allocator"]
    sets = uvmrun_sets_text(allocator)
    if not allocator["set_by_benchmark"]:
        return f"use what uvmrun sets ({sets})"
    why = "--explicit-allocator" if report["settings"]["explicit_allocator"] else "uvmrun did not pick it"
    return f"get it from the benchmark ({why}; uvmrun: {sets})"


def simulation_text(policy, simulated):
    if simulated.get("step_ms") is None:
        return f"{policy} n/a ({simulated.get('problem')})"
    homes = simulated.get("homes_option")
    chosen = f" (--homes {homes}: {homes_choice_text(simulated['homes'])})" if homes in ("auto", "host") else ""
    return (f"{policy} {simulated['step_ms']:.1f} ms a step, {gb(simulated.get('out_bytes'))} GB out and "
            f"{gb(simulated.get('in_bytes'))} GB in{chosen}")


def notes(report):
    settings, link = report["settings"], report["link"]
    pressure = report["pressure"]
    lines = [
        f"Step times: median over every timed step of every run of a mode; unpressured modes "
        f"{settings['rounds']} rounds of {settings['steps']} steps after {settings['warmup']} warm-up, pressure "
        f"runs {settings['pressure_steps']} after {settings['pressure_warmup']}. Native runs use "
        f"PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND}; uvmrun's runs {allocator_text(report)}.",
        f"Link: f = {fmt(link['h2d_gbps'], 1)} GB/s to the GPU, e = {fmt(link['d2h_gbps'], 1)} GB/s back "
        f"({link['source']}).",
        "Fit budgets: " + (", ".join(f"{w} {format_gib(b['bytes'])} ({b['source']})"
                                     for w, b in report["fit_budgets"].items()) or "none yet") + ".",
    ]
    for spec, pressure in report["pressure"].items():
        lines.append(
            f"Pressure: {settings['pressure_workload']} at {spec} ({format_gib(pressure['budget_bytes'], 2)}); peak "
            f"live (native max_memory_allocated) {format_gib(pressure['peak_live_bytes'], 2)}, "
            f"S = {gb(pressure['swapped_bytes'])} GB, S/e+S/f = {fmt(pressure['floor_ms'], 1)} ms, "
            f"S/w+S/r = {fmt(pressure.get('remote_floor_ms'), 1)} ms.")
    if report["pressure"]:
        lines.append("GB/step: the library's evicted, prefetched, populated and late (demand estimate) bytes per step "
                     "after warm-up, from its counters read in the job. host GB/step: bytes of the allocations the "
                     "library homed on the host, from its stats file, a step from the one in which it began to home "
                     "them (else over every step). remote GB/step w/r: bytes of host-homed allocations kernels named "
                     "per step after warm-up, by the first launch naming each (writing it) and by later ones "
                     "(reading it), one trip a launch, from the library's counters; in brackets the simulator's for "
                     "its own homes in the learned step. A kernel that re-reads what it names moves more over the "
                     "link. vs save_on_cpu, vs demand-lru: how many times faster the step is than theirs at the same "
                     "budget.")
        for row in report["rows"]:
            if row["mode"] == "default" and row["pressure"] is not None and row["runs_started"]:
                lines.append(f"Host homes of {mode_label('default', row['pressure'])} at {row['pressure']}: "
                             + host_homes_text(row.get("host_homes")) + ".")
        lines.append(
            f"Simulated with `uvmtrace simulate --repeat-last {settings['sim_repeat_last']}` on the trace of the "
            "recording run: " + ("; ".join(simulation_text(key, s) for key, s in report["simulations"].items())
                                 or "not yet") + ".")
    return lines


def markdown(report):
    cells = table_cells(report)
    checks = [["what", "value", "goal", "verdict"]] + [[c["what"], c["value"], c["goal"], c["verdict"]]
                                                       for c in report["checks"]]
    lines = ["## Managed pool, frees visible", "", markdown_table(cells), ""]
    lines += ["- " + line for line in notes(report)]
    lines += ["- " + m.replace("\n", "\n  ") for m in report["loss_mismatches"]]
    lines += ["", markdown_table(checks), ""]
    return "\n".join(lines)


def save(bench):
    report = build_report(bench)
    write_atomically(bench.args.json_out, json.dumps(report, indent=1))
    write_atomically(bench.args.markdown_out, markdown(report))
    return report


def print_rows(path):
    """The checks of a written report as lines for bench/device_run.sh's table."""
    try:
        with open(path, encoding="utf-8") as report_file:
            report = json.load(report_file)
    except (OSError, json.JSONDecodeError):
        print("pool report\tmissing\tpresent\tFAIL")
        return 0
    for c in report["checks"]:
        print("\t".join(str(c[key]).replace("\t", " ") for key in ("what", "value", "goal", "verdict")))
    return 0


# ---------------------------------------------------------------- arguments and main

def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun", help="path of the uvmrun program (required but with --rows)")
    parser.add_argument("--uvmtrace", help="path of the uvmtrace program (required but with --rows)")
    parser.add_argument("--lib", help="libuvmprefetch.so for uvmrun to preload (default: the one it finds)")
    parser.add_argument("--link-probe", help="bench/link_probe program: measure f and e first (else --h2d-gbps "
                        "and --d2h-gbps)")
    parser.add_argument("--link-probe-mib", type=int, default=2048, help="MiB the link probe moves (default 2048)")
    parser.add_argument("--h2d-gbps", type=float, default=FALLBACK_H2D_GBPS,
                        help=f"fetch rate f when not measured (default {FALLBACK_H2D_GBPS:g})")
    parser.add_argument("--d2h-gbps", type=float, default=FALLBACK_D2H_GBPS,
                        help=f"eviction rate e when not measured (default {FALLBACK_D2H_GBPS:g})")
    parser.add_argument("--train-script", default=TRAIN_SCRIPT, help="the Python training workload")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the workloads")
    parser.add_argument("--workloads", default="gpt2-small,resnet50", help="comma-separated, in the order they run "
                        "(default gpt2-small,resnet50); none: only the pressure workload's runs")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of native, defaults and fit (default 3)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps of unpressured runs (default 5)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps of unpressured runs (default 20)")
    parser.add_argument("--fit-factor", type=float, default=1.5,
                        help="fit budget: this times the larger of native's max_memory_reserved and the default "
                             "run's peak converted bytes, rounded up to GiB (default 1.5)")
    parser.add_argument("--fit-budget", help="a fixed fit budget instead, such as 48G")
    parser.add_argument("--pressure-workload", default="gpt2-small",
                        help="the workload run under the pressure budget (default gpt2-small; 'none': no pressure runs)")
    parser.add_argument("--pressure-budget", default="16G",
                        help="the pressure budgets, comma-separated: sizes (16G) or shares of the native peak "
                             "max_memory_allocated (peak/1.5); every pressure mode runs at each (default 16G)")
    parser.add_argument("--pressure-policies", default=DEFAULT_PRESSURE_MODES,
                        help="modes under pressure, in order (default " + DEFAULT_PRESSURE_MODES + "): default "
                             "(uvmrun --budget B and nothing else: learned, with host homes learned in the run), "
                             "learned (--policy learned --host-homes off: migration only), demand-lru (--host-homes "
                             "off), save-on-cpu (PyTorch's save_on_cpu under the same cap, without the library), "
                             "host-homes (learned with the homes chosen on the recorded trace: --host-homes on "
                             "--trace-in TRACE), best-fit (the default with UVMP_POOL_PLACEMENT=best-fit: the "
                             "pool places blocks without regard to dead memory on the GPU), no-trial (the default "
                             "with UVMP_REMOTE_TRIAL=0: the homes the timing prior chose, untried) and no-layout (the "
                             "default with UVMP_STEP_LAYOUT=off: blocks placed as they come, never by a layout "
                             "planned for the step)")
    parser.add_argument("--pressure-warmup", type=int, default=8,
                        help="untimed steps under pressure (default 8: the default mode learns its homes in them, "
                             "from the step that goes over the budget, two steps recorded and the search while "
                             "the next runs, and runs its first step with them, which pays for new host slabs)")
    parser.add_argument("--pressure-steps", type=int, default=5, help="timed steps under pressure (default 5)")
    parser.add_argument("--record-warmup", type=int, default=1, help="untimed steps of the recording run (default 1)")
    parser.add_argument("--record-steps", type=int, default=3, help="timed steps of the recording run (default 3)")
    parser.add_argument("--sim-repeat-last", type=int, default=0,
                        help="uvmtrace simulate --repeat-last: copies of the last recorded step (default 0: a trace whose last step allocates, as under the pool, cannot be repeated)")
    parser.add_argument("--explicit-allocator", action="store_true",
                        help=f"set PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND} for uvmrun's runs too, instead of "
                             "leaving the choice to uvmrun")
    parser.add_argument("--library-env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for every run of the library (repeatable; e.g. "
                             "UVMP_LOG_LEVEL=info to keep its log lines in each run's log). The benchmark "
                             "otherwise drops every UVMP_ variable of its own environment")
    parser.add_argument("--timeout-s", type=float, default=150, help="seconds per unpressured run (default 150)")
    parser.add_argument("--pressure-timeout-s", type=float, default=200, help="seconds per pressure run (default 200)")
    parser.add_argument("--simulate-timeout-s", type=float, default=60, help="seconds per uvmtrace simulate")
    add_output_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the plan and run nothing")
    parser.add_argument("--rows", metavar="REPORT", help="print the checks of a JSON report as tab-separated lines")
    args = parser.parse_args(argv)
    if args.rows:
        return args

    no_workloads = args.workloads == "none"
    args.workloads = [] if no_workloads else list(
        dict.fromkeys(w.strip() for w in args.workloads.split(",") if w.strip()))
    unknown = [w for w in args.workloads if w not in TRAIN_WORKLOADS]
    if unknown or (not args.workloads and not no_workloads):
        parser.error(f"--workloads: unknown {', '.join(unknown) or '(none given)'}; "
                     f"choose from {', '.join(TRAIN_WORKLOADS)}")
    if args.pressure_workload == "none":
        args.pressure_workload = None
    elif args.pressure_workload not in TRAIN_WORKLOADS:
        parser.error(f"--pressure-workload {args.pressure_workload}: choose from {', '.join(TRAIN_WORKLOADS)} or none")
    args.pressure_policies = [p.strip() for p in args.pressure_policies.split(",") if p.strip()]
    unknown = [p for p in args.pressure_policies if p not in PRESSURE_MODES]
    if unknown:
        parser.error(f"--pressure-policies: {', '.join(unknown)} unknown; choose from {', '.join(PRESSURE_MODES)}")
    args.pressure_policies = list(dict.fromkeys(args.pressure_policies))
    if not args.pressure_workload:
        args.pressure_policies = []
    args.pressure_budgets = list(dict.fromkeys(b.strip() for b in args.pressure_budget.split(",") if b.strip()))
    for spec in args.pressure_budgets or [""]:
        divisor = spec[len("peak/"):] if spec.startswith("peak/") else None
        valid = (re.fullmatch(r"[0-9]+(\.[0-9]+)?", divisor) is not None and float(divisor) > 0 if divisor is not None
                 else bool(parse_size(spec)))
        if not valid:
            parser.error(f"--pressure-budget '{spec}' is not a size such as 16G or a share of the peak such as "
                         "peak/1.5")
    args.fit_budget_bytes = parse_size(args.fit_budget) if args.fit_budget else None
    if args.fit_budget and not args.fit_budget_bytes:
        parser.error(f"--fit-budget '{args.fit_budget}' is not a size such as 48G")
    if args.rounds < 1 or args.steps < 1 or args.pressure_steps < 1 or args.record_steps < 1:
        parser.error("--rounds, --steps, --pressure-steps and --record-steps must be at least 1")
    if min(args.warmup, args.pressure_warmup, args.record_warmup) < 0 or args.sim_repeat_last < 0:
        parser.error("warm-up steps and --sim-repeat-last must not be negative")
    if args.fit_factor <= 1:
        parser.error("--fit-factor must be larger than 1 (a budget above the footprint)")
    if min(args.h2d_gbps, args.d2h_gbps, args.timeout_s, args.pressure_timeout_s) <= 0:
        parser.error("link rates and timeouts must be positive")
    paths = [("--uvmrun", args.uvmrun), ("--uvmtrace", args.uvmtrace), ("--train-script", args.train_script)]
    if args.link_probe:
        paths.append(("--link-probe", args.link_probe))
    for label, path in paths:
        if not path:
            parser.error(f"{label} is required")
        if not os.path.isfile(path):
            parser.error(f"{label} {path}: no such file")
    return args


def print_plan(bench, plan):
    args = bench.args
    allocator = bench.allocator
    print(f"uvmrun for PyTorch: {uvmrun_sets_text(allocator)}; its runs "
          + (f"get PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND} from the benchmark" if allocator["set_by_benchmark"]
             else "use uvmrun's choice"))
    print(f"native runs: PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND}; "
          + (f"deadline {args.deadline_s:g} s" if args.deadline_s > 0 else "no deadline"))
    total = 0.0
    for number, entry in enumerate(plan, 1):
        expected = expected_seconds(entry, {})
        total += expected
        if entry["kind"] == "probe":
            what = f"link probe: {args.link_probe or '(none: given rates)'} {args.link_probe_mib}"
        elif entry["kind"] == "simulate":
            simulated = [mode + (f" (learned --homes {SIMULATED_HOMES[mode]}" if SIMULATED_HOMES[mode] else "")
                         + (f" --placement {SIMULATED_PLACEMENT[mode]}" if mode in SIMULATED_PLACEMENT else "")
                         + (")" if SIMULATED_HOMES[mode] else "")
                         for mode in args.pressure_policies if mode in LIBRARY_PRESSURE_MODES]
            what = (f"uvmtrace simulate the recorded trace at {entry['pressure']}: "
                    f"{', '.join(simulated) or 'nothing'} (--repeat-last {args.sim_repeat_last})")
        else:
            extra = {"record": " UVMP_TRACE_TIMING=1"}.get(entry["mode"], "")
            if entry["mode"] in DEFAULT_WITH:
                extra = "".join(f" {k}={v}" for k, v in DEFAULT_WITH[entry["mode"]].items())
            round_text = f" round {entry['round']}" if entry["round"] else ""
            budget = f" at {entry['pressure']}" if entry.get("pressure") else ""
            what = (f"{entry['workload']} {mode_label(entry['mode'], entry.get('pressure'))}{budget}{round_text}, "
                    f"{entry['steps'] - entry['warmup']} steps after {entry['warmup']}{extra}\n      $ "
                    + " ".join(bench.command_for(entry, resolve=False)))
        print(f"{number:2d}. ~{expected:3.0f} s (cumulative {total:4.0f} s)  {what}")
    print(f"expected in all: about {total:.0f} s"
          + (f" of the {args.deadline_s:g} s deadline" if args.deadline_s > 0 else ""))


def main(argv=None):
    args = parse_arguments(argv)
    if args.rows:
        return print_rows(args.rows)
    with tempfile.TemporaryDirectory(prefix="uvmp-pool-") as scratch:
        workdir = args.workdir or scratch
        os.makedirs(workdir, exist_ok=True)
        bench = Bench(args, workdir)
        plan = make_plan(args)
        if args.dry_run:
            print_plan(bench, plan)
            return 0

        def stop(signum, _frame):
            # An outer timeout: end the run in progress and keep what was measured.
            stop_running()
            save(bench)
            print(f"stopped by signal {signum}; the report holds the runs finished before", flush=True)
            sys.exit(124)

        signal.signal(signal.SIGTERM, stop)
        bench.measure(plan)
        report = save(bench)

    print(f"\n=== managed pool, frees visible ({report['elapsed_s']} s)")
    print(text_table(table_cells(report)))
    for line in notes(report):
        print(line)
    print()
    print(text_table([["what", "value", "goal", "verdict"]] +
                     [[c["what"], c["value"], c["goal"], c["verdict"]] for c in report["checks"]]))
    problems = [f"{r['id']}: {r['status']}" for r in bench.runs if r["status"] in ("failed", "timeout")]
    return print_outcome(problems, report["loss_mismatches"], (args.json_out, args.markdown_out))


if __name__ == "__main__":
    sys.exit(main())
