#!/usr/bin/env python3
"""PyTorch jobs whose every free the library sees (the managed pool, with PyTorch's
`backend:cudaMallocAsync`), against native with the same backend and against the link.

What runs, in this order (cheap and telling first, so that a deadline cuts the least):
  1. bench/link_probe: the fetch rate f (host to GPU) and the eviction rate e (GPU to host)
     of this machine, in this run.
  2. Round 1 of gpt2-small (batch 16, seq 1024), then of resnet50 (batch 256): native;
     uvmrun with its defaults (no budget, no policy) and PyTorch's stream-ordered backend,
     which uvmrun picks for a job with a budget and the benchmark sets for every run;
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
     save_on_cpu under the same cap. More modes may be asked for: offload (the saved activations
     copied to the host on a side stream and fetched back ahead of need, under the same cap:
     examples/activation_offload.py, the best a user can write instead, the alternative to beat);
     host-homes (learned with the homes chosen on the recorded trace: --host-homes on --trace-in
     TRACE). 5 timed steps
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
    least 2x faster than demand-lru, faster than save_on_cpu (at peak/1.25 at least 1.5x) and
    than the offload mode where it ran, and
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
import math
import os
import re
import sys

from bench_common import (GIB, MIB, TRAIN_SCRIPT, TRAIN_WORKLOADS, Bench, add_link_arguments, add_output_arguments,
                          check_program_paths, execute, json_of, largest_file, link_probe_plan_text, parse_size,
                          print_timed_plan, run_driver, simulate, training_summary)
from pool_figures import format_gib, median_of, resolve_pressure, simulation_key
from pool_modes import (ALLOC_CONF_NAMES, ASYNC_BACKEND, CAPPED_OPTIONS, DEFAULT_PRESSURE_MODES, DEFAULT_WITH,
                        FALLBACK_D2H_GBPS, FALLBACK_H2D_GBPS, FIT_FALLBACK_BYTES, LIBRARY_PRESSURE_MODES, MIN_RUN_SECONDS, NEEDS_TRACE,
                        PRESSURE_MODES, PRESSURE_OPTIONS, SIMULATED_HOMES, SIMULATED_PLACEMENT, WITHOUT_LIBRARY,
                        clean_environment, deadline_cut, expected_seconds, make_plan, measured_key)
from pool_report import homes_choice_text, mode_label, notes, print_rows, save, table_cells, uvmrun_sets_text


# ---------------------------------------------------------------- the runs

# Kernels of `uvmtrace compare` a report keeps: those that grew most.
KERNELS_KEPT = 8

class PoolBench(Bench):
    def __init__(self, args, workdir):
        super().__init__(args, workdir)
        self.measured_s = {}
        self.link = {"h2d_gbps": args.h2d_gbps, "d2h_gbps": args.d2h_gbps, "source": "given"}
        self.fit_budgets = {}  # workload -> {"bytes", "source"}
        self.simulations = {}  # policy -> {"step_ms", "in_bytes", "out_bytes", "problem", ...}
        self.trace = None
        base = clean_environment(args.lib, also_drop=("PYTORCH_NO_CUDA_MEMORY_CACHING",))
        self.native_env = dict(base, PYTORCH_CUDA_ALLOC_CONF=ASYNC_BACKEND)
        self.allocator = uvmrun_allocator_choice(args.uvmrun, base)
        # Every run sees PyTorch's frees: uvmrun picks the backend only for a job with a budget
        # (checked above), so the benchmark sets it for all, the runs without a budget too.
        self.allocator["set_by_benchmark"] = True
        self.uvmrun_env = dict(base, PYTORCH_CUDA_ALLOC_CONF=ASYNC_BACKEND)
        self.uvmrun_env.update(library_env(args.library_env))

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
        if mode in CAPPED_OPTIONS:
            label, budget = self.budget_of(entry, resolve)
            return command + [CAPPED_OPTIONS[mode], "--memory-cap", str(budget) if budget else label]
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
        if self.traced(entry):
            wrapper += ["--trace-out", self.run_trace_pattern(run_id or "RUN")]
        return wrapper + ["--"] + command

    def traced(self, entry):
        """Whether a run records its trace with kernel timings for `uvmtrace compare` (--trace-modes)."""
        return entry.get("pressure") is not None and entry["mode"] in self.args.trace_modes

    def run_trace_pattern(self, run_id):
        return os.path.join(self.workdir, f"{run_id}.trace.%p.uvmt")

    def env_for(self, mode, traced=False):
        if mode in WITHOUT_LIBRARY:
            return self.native_env
        if mode == "record" or traced:
            return dict(self.uvmrun_env, UVMP_TRACE_TIMING="1", **DEFAULT_WITH.get(mode, {}))
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
        left = self.fits_before_deadline(record, run_id, expected_seconds(entry, self.measured_s), MIN_RUN_SECONDS)
        if left is None:
            return record
        limit = self.args.pressure_timeout_s if pressured else self.args.timeout_s
        timeout = min(limit, left)
        command = self.command_for(entry, run_id)
        record["command"] = command
        print(f"--- {run_id}: {mode_label(mode, entry.get('pressure'))}, budget {label} (timeout {timeout:.0f} s, "
              f"{self.clock.elapsed():.0f} s elapsed)\n$ {' '.join(command)}", flush=True)
        output = self.execute_run(record, command, timeout, self.env_for(mode, self.traced(entry)))
        record["log"] = os.path.join(self.workdir, f"{run_id}.log")
        with open(record["log"], "w", encoding="utf-8") as log:
            log.write(output)

        summary = training_summary(output)
        if summary:
            for key in ("median_ms", "median_issued_ms", "step_ms", "losses", "peak_allocated_bytes", "peak_reserved_bytes",
                        "memory_allocated_bytes", "memory_reserved_bytes", "allocator_backend", "alloc_conf",
                        "deterministic", "moved_after_warmup", "library_time_after_warmup", "launches_per_step",
                        "moved_per_step"):
                record[key] = summary.get(key)
        self.judge_run(record, output, summary,
                       None if mode in WITHOUT_LIBRARY else os.path.join(self.workdir, f"{run_id}.stats.*.json"))
        record["status"] = deadline_cut(record["status"], timeout, limit)
        if record["status"] == "ok":
            self.measured_s[measured_key(entry)] = record["wall_s"]
        if mode == "record" and record["status"] == "ok":
            self.trace = largest_file(os.path.join(self.workdir, f"{workload}.trace.*.uvmt"))
        if self.traced(entry) and record["status"] == "ok":
            record["kernel_growth"] = self.compare_with_recording(run_id)
        if pressured and record["status"] == "ok" and SIMULATED_HOMES.get(mode) == "auto":
            record["sim_run_homes"] = self.simulate_run_homes(record, budget)
        self.print_run_end(record)
        return record

    def compare_with_recording(self, run_id):
        """`uvmtrace compare` of the run's trace against the recording run's: each one's last step
        with every launch timed (the run's steady state), and the kernels the run's grew in most."""
        run_trace = largest_file(self.run_trace_pattern(run_id).replace("%p", "*"))
        if not self.trace or not run_trace:
            return {"problem": "no trace " + ("of the recording run" if not self.trace else "of this run")}
        command = [self.args.uvmtrace, "compare", self.trace, run_trace, "--json"]
        result, problem = json_of(command, self.args.simulate_timeout_s, "uvmtrace compare")
        if result is None:
            return {"problem": f"uvmtrace compare: {problem}"}
        kernels = result["kernels"]
        return {"trace": run_trace, "base": result["base"], "run": result["run"], "kernels": kernels[:KERNELS_KEPT],
                "other_grown_ns": sum(k["grown_ns"] for k in kernels[KERNELS_KEPT:])}

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
                        + self.streaming_line(mode, homes) + list(extra))

    def streaming_line(self, mode, homes):
        """The timing prior's streaming line the mode runs with, where it or --library-env sets
        one: the simulator judges kernels by the same line."""
        line = DEFAULT_WITH.get(mode, {}).get("UVMP_STREAMING_GBPS", self.uvmrun_env.get("UVMP_STREAMING_GBPS"))
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
    """What uvmrun sets for PyTorch's allocator for a job with a budget when the user sets
    nothing, from its dry run."""
    status, output = execute([uvmrun, "--budget", "1G", "--dry-run", "--", "true"], 30, env)
    settings = {}
    for line in output.splitlines():
        name, _, value = line.partition("=")
        if name in ALLOC_CONF_NAMES:
            settings[name] = value
    return {"dry_run_exit": status, "uvmrun_sets": settings,
            "picks_async": status == 0 and any(ASYNC_BACKEND in value for value in settings.values())}


def library_env(assignments):
    """--library-env NAME=VALUE ... as a dict; a malformed one stops the benchmark before it runs."""
    env = {}
    for assignment in assignments:
        name, sep, value = assignment.partition("=")
        if not sep or not name:
            raise SystemExit(f"--library-env {assignment!r}: expected NAME=VALUE")
        env[name] = value
    return env


# ---------------------------------------------------------------- arguments and main

def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun", help="path of the uvmrun program (required but with --rows)")
    parser.add_argument("--uvmtrace", help="path of the uvmtrace program (required but with --rows)")
    parser.add_argument("--lib", help="libuvmprefetch.so for uvmrun to preload (default: the one it finds)")
    add_link_arguments(parser, FALLBACK_H2D_GBPS, FALLBACK_D2H_GBPS)
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
                             "offload (the saved activations offloaded to the host, copies overlapped with compute "
                             "and fetched back ahead of need, under the same cap, without the library), "
                             "host-homes (learned with the homes chosen on the recorded trace: --host-homes on "
                             "--trace-in TRACE), best-fit (the default with UVMP_POOL_PLACEMENT=best-fit: the "
                             "pool places blocks without regard to dead memory on the GPU), no-trial (the default "
                             "with UVMP_REMOTE_TRIAL=0: the homes the timing prior chose, untried), no-layout (the "
                             "default with UVMP_STEP_LAYOUT=off: blocks placed as they come, never by a layout "
                             "planned for the step) and any-streaming (the default with UVMP_STREAMING_GBPS=1: "
                             "every timed kernel's operands are candidates, the search and the remote trial alone "
                             "decide what reads remotely)")
    parser.add_argument("--trace-modes", default="",
                        help="library pressure modes whose runs also record their trace with kernel timings "
                             "(UVMP_TRACE_TIMING=1, which costs each launch a little), set against the recording "
                             "run's by `uvmtrace compare`: which kernels the steady step grew in (comma-separated; "
                             "default none)")
    parser.add_argument("--pressure-warmup", type=int, default=8,
                        help="untimed steps under pressure (default 8: the default mode learns its homes in them, "
                             "from the step that goes over the budget, two steps recorded and the search while "
                             "the next runs, and runs its first step with them, which pays for new host slabs)")
    parser.add_argument("--pressure-steps", type=int, default=5, help="timed steps under pressure (default 5)")
    parser.add_argument("--record-warmup", type=int, default=1, help="untimed steps of the recording run (default 1)")
    parser.add_argument("--record-steps", type=int, default=3, help="timed steps of the recording run (default 3)")
    parser.add_argument("--sim-repeat-last", type=int, default=0,
                        help="uvmtrace simulate --repeat-last: copies of the last recorded step (default 0: a trace whose last step allocates, as under the pool, cannot be repeated)")
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
    args.trace_modes = [m.strip() for m in args.trace_modes.split(",") if m.strip()]
    unknown = [m for m in args.trace_modes if m not in LIBRARY_PRESSURE_MODES or m == "host-homes"]
    if unknown:
        parser.error(f"--trace-modes: {', '.join(unknown)} cannot be traced; choose from "
                     f"{', '.join(m for m in LIBRARY_PRESSURE_MODES if m != 'host-homes')}")
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
    check_program_paths(parser, [("--uvmrun", args.uvmrun), ("--uvmtrace", args.uvmtrace),
                                 ("--train-script", args.train_script)], [("--link-probe", args.link_probe)])
    return args


def print_plan(bench, plan):
    args = bench.args
    print(f"uvmrun for PyTorch: {uvmrun_sets_text(bench.allocator)}; its runs "
          f"get PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND} from the benchmark")
    print(f"native runs: PYTORCH_CUDA_ALLOC_CONF={ASYNC_BACKEND}; "
          + (f"deadline {args.deadline_s:g} s" if args.deadline_s > 0 else "no deadline"))

    def describe(entry):
        if entry["kind"] == "probe":
            return link_probe_plan_text(args)
        if entry["kind"] == "simulate":
            simulated = [mode + (f" (learned --homes {SIMULATED_HOMES[mode]}" if SIMULATED_HOMES[mode] else "")
                         + (f" --placement {SIMULATED_PLACEMENT[mode]}" if mode in SIMULATED_PLACEMENT else "")
                         + (")" if SIMULATED_HOMES[mode] else "")
                         for mode in args.pressure_policies if mode in LIBRARY_PRESSURE_MODES]
            return (f"uvmtrace simulate the recorded trace at {entry['pressure']}: "
                    f"{', '.join(simulated) or 'nothing'} (--repeat-last {args.sim_repeat_last})")
        extra = {"record": " UVMP_TRACE_TIMING=1"}.get(entry["mode"], "")
        if entry["mode"] in DEFAULT_WITH:
            extra = "".join(f" {k}={v}" for k, v in DEFAULT_WITH[entry["mode"]].items())
        round_text = f" round {entry['round']}" if entry["round"] else ""
        budget = f" at {entry['pressure']}" if entry.get("pressure") else ""
        return (f"{entry['workload']} {mode_label(entry['mode'], entry.get('pressure'))}{budget}{round_text}, "
                f"{entry['steps'] - entry['warmup']} steps after {entry['warmup']}{extra}\n      $ "
                + " ".join(bench.command_for(entry, resolve=False)))

    print_timed_plan(plan, lambda entry: expected_seconds(entry, {}), describe, args.deadline_s)


def closing(report):
    return (f"managed pool, frees visible ({report['elapsed_s']} s)", table_cells(report), notes(report),
            report["loss_mismatches"])


def main(argv=None):
    args = parse_arguments(argv)
    if args.rows:
        return print_rows(args.rows)
    return run_driver(args, "uvmp-pool-", PoolBench, make_plan, print_plan, save, closing)


if __name__ == "__main__":
    sys.exit(main())
