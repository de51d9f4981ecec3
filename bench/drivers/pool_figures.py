"""The managed-pool benchmark's figures from finished runs: budgets, step medians, bytes moved per
step, the link's floors, host homes, and the rows of the table that compare the modes."""

import statistics

from bench_common import GIB, MIB, parse_size, ratio
from pool_modes import LIBRARY_PRESSURE_MODES, STEADY_TOLERANCE, UNPRESSURED_MODES


def resolve_pressure(spec, peak):
    """Bytes of a pressure budget spec (16G, or peak/1.5: the peak over 1.5, whole MiB), or None."""
    if spec.startswith("peak/"):
        return None if not peak else int(peak / float(spec[len("peak/"):])) // MIB * MIB
    return parse_size(spec)


def simulation_key(policy, pressure):
    return f"{policy} at {pressure}"


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


def slab_frees_per_step(run):
    """Slabs the pool gave back a step after warm-up, and the milliseconds their frees took (each
    waits for the GPU's queued work, and the application's launches with it)."""
    timing, timed = run.get("library_time_after_warmup"), run["steps"] - run["warmup"]
    if not timing or timed <= 0 or "pool_slab_release_ns" not in timing:
        return None
    return {"slabs": timing.get("pool_slabs_released", 0) / timed, "ms": timing["pool_slab_release_ns"] / 1e6 / timed}


def first_step_over_budget(run):
    """The first step (from 0) in which the library evicted anything, live or dead: the job went
    over its budget there. 0 where the run has no per-step counters or never evicted (homes from the
    start keep a job under its budget without an eviction)."""
    for step, moved in enumerate(run.get("moved_per_step") or []):
        if moved and (moved.get("evicted") or 0) > 0:
            return step
    return 0


def learning_figures(run, tolerance=STEADY_TOLERANCE):
    """How the run settled: the step it first went over its budget, the first step from which every
    step ran within `tolerance` of the median of its last three (the state it ended in; the timed
    median can hold a late relapse), a single step above that between two within excepted (a spike of
    the host), the steps in between and the slowest of them. None where the run has too few steps."""
    steps = run.get("step_ms") or []
    if len(steps) < 3 or len(timed_steps(run)) < 2:
        return None
    limit = statistics.median(steps[-3:]) * (1 + tolerance)
    within = [ms <= limit for ms in steps]
    spike = [not within[k] and k > 0 and within[k - 1] and (k + 1 == len(steps) or within[k + 1])
             for k in range(len(steps))]
    last_unsettled = max((k for k in range(len(steps)) if not within[k] and not spike[k]), default=-1)
    over = first_step_over_budget(run)
    steady = next((k for k in range(max(over, last_unsettled + 1), len(steps)) if within[k]), None)
    before = steps[over:steady if steady is not None else len(steps)]
    return {"first_over": over, "steady_from": steady,
            "steps_before": None if steady is None else steady - over,
            "slowest_before_ms": max(before) if before else None}


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
            row["median_issued_ms"] = median_of(ok, "median_issued_ms")
            row["slab_frees"] = mean_of_dicts([slab_frees_per_step(r) for r in ok])
            row["steady_per_step"] = mean_of_dicts([steady_bytes_per_step(r) for r in ok])
            row["all_steps_per_step"] = mean_of_dicts([all_steps_bytes_per_step(r) for r in ok])
            # The slowest settling of the row's runs.
            settled = [f for f in (learning_figures(r) for r in ok) if f]
            row["learning"] = (max(settled, key=lambda f: (f["steps_before"] is None, f["steps_before"] or 0))
                               if settled and pressure_spec is not None else None)
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
    # How many times faster each pressure row's step is than save_on_cpu's, the offload's and demand-lru's at
    # the same budget.
    for row in rows:
        if row["pressure"] is None:
            continue
        for other in SPEEDUP_AGAINST:
            versus = same_budget_row(rows, row, other)
            row[f"speedup_vs_{other}"] = ratio(versus["median_ms"], row["median_ms"]) if versus else None
    return rows


# The modes each pressure row's step is compared with, in the table and in the default mode's targets.
SPEEDUP_AGAINST = ("save-on-cpu", "offload", "demand-lru")


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
