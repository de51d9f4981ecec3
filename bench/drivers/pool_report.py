"""The managed-pool benchmark's report: the checks against its targets, the table, its notes,
and the JSON and Markdown files written after every run."""

import json

from bench_common import check_cells, check_rows, fmt, markdown_table, print_report_rows, ratio, write_atomically
from pool_figures import (SPEEDUP_AGAINST, format_gib, halfway_ms, losses_equal, pressure_figures, same_budget_row,
                          simulation_key, table_rows)
from pool_modes import (ASYNC_BACKEND, DEFAULT_PRESSURE_LABEL, DEFAULT_RATIO_GOAL, DEFAULT_VS_DEMAND_LRU,
                        DEFAULT_VS_OFFLOAD, DEFAULT_VS_SAVE_ON_CPU, FIT_RATIO_GOAL, LIBRARY_PRESSURE_MODES,
                        MEMORY_TOLERANCE, MIGRATION_S_GOAL, MODE_LABELS, SIM_ERROR_GOAL, STEADY_WITHIN_STEPS,
                        WITHOUT_LIBRARY)


# Of a kernel's (mangled) name, what a report's note shows.
KERNEL_NAME_SHOWN = 60
# Kernels kept on the GPU by their rate, as the library lists them (most bytes first), that a note shows.
KEPT_SHOWN = 4


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
        if default:
            lines += learning_checks(name, row, rows, unmade)
        if row.get("median_issued_ms") and row["median_ms"]:
            # Well below the step: the GPU set its pace. Near it: the application's thread, or a
            # GPU so far behind that the launch queue filled (`uvmtrace info` step times tell which).
            lines.append(check(f"{name} step's work queued", f"{fmt(row['median_issued_ms'], 1)} ms of "
                               f"{fmt(row['median_ms'], 1)} ({fmt(100 * row['median_issued_ms'] / row['median_ms'], 0)}%)",
                               "-", None))
        if row.get("slab_frees"):
            lines.append(check(f"{name} slabs given back a step", f"{row['slab_frees']['slabs']:.1f}, their frees "
                               f"{fmt(row['slab_frees']['ms'], 1)} ms (each waits for the GPU's queued work)",
                               "-", None))
        if row["mode"] == "learned":
            lines.append(migration_check(name, row, measured))
    # Native runs against the first of them: the job itself must repeat its losses.
    equal = row["losses_equal"]
    if row["mode"] != "native" or equal is not None:
        what = "losses repeat" if row["mode"] == "native" else "losses = native"
        lines.append(check(f"{name} {what}", f"{equal} ({row['losses_compared']} runs)", "True",
                           equal, skip=unmade))
    return lines


def learning_checks(name, row, rows, unmade):
    """The default's settling: the steps from its first over the budget to steady, and the slowest of
    them against demand-lru's median at the same budget."""
    learning = row.get("learning")
    if learning is None:
        return [check(f"{name} steps before steady", "not measured", f"<= {STEADY_WITHIN_STEPS}", None,
                      skip=unmade)]
    steps = learning["steps_before"]
    text = (f"{steps} (over the budget in step {learning['first_over']}, steady from step {learning['steady_from']})"
            if steps is not None else f"never steady (over the budget in step {learning['first_over']})")
    lines = [check(f"{name} steps before steady", text, f"<= {STEADY_WITHIN_STEPS}",
                   steps is not None and steps <= STEADY_WITHIN_STEPS)]
    slowest = learning["slowest_before_ms"]
    versus = same_budget_row(rows, row, "demand-lru")
    lru = versus["median_ms"] if versus else None
    if slowest is None:
        lines.append(check(f"{name} slowest step before steady", "none: steady from the first step over", "-", None))
    elif lru is None:
        lines.append(check(f"{name} slowest step before steady", f"{fmt(slowest, 1)} ms (no demand-lru run)", "-",
                           None))
    else:
        lines.append(check(f"{name} slowest step before steady vs demand-lru",
                           f"{fmt(slowest, 1)} ms vs {fmt(lru, 1)} ms ({fmt(ratio(slowest, lru), 2)}x)",
                           "<= demand-lru", slowest <= lru))
    return lines


def migration_check(name, row, measured):
    """Migration alone must move about S each way a steady step, not the dead bytes beside it."""
    steady, swapped = row["steady_per_step"] or {}, row.get("swapped_bytes")
    out, fetched = steady.get("evicted"), steady.get("prefetched")
    goal = f"<= {MIGRATION_S_GOAL:g} S each way"
    if not swapped or swapped <= 0 or out is None or fetched is None:
        return check(f"{name} migration out / in vs S", "not measured", goal, None, skip=not measured)
    dead = steady.get("evicted_dead")
    text = (f"{out / swapped:.2f} S / {fetched / swapped:.2f} S (S = {gb(swapped)} GB"
            + (f"; {dead / swapped:.2f} S of the out dead" if dead is not None else "") + ")")
    return check(f"{name} migration out / in vs S", text, goal, max(out, fetched) / swapped <= MIGRATION_S_GOAL)


def speedup_goal(row, other):
    """How many times faster than the other mode the row's step must be (1: merely faster), or None
    where that is information only: the targets are the default mode's under pressure."""
    if row["mode"] != "default" or row["pressure"] is None:
        return None
    if other == "demand-lru":
        return DEFAULT_VS_DEMAND_LRU
    if other == "save-on-cpu":
        return DEFAULT_VS_SAVE_ON_CPU.get(row["pressure"], 1.0)
    if other == "offload":
        return DEFAULT_VS_OFFLOAD
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
                  f"{trial['trips']:.1f} read trips' time a byte"
                  + "".join(f"; {trial[key]} more {what}" for key, what in
                            (("launches_untimed", "untimed"), ("launches_without_local", "with no local time"))
                            if trial.get(key))
                  + ")")
    if trial and trial.get("kept_on_gpu"):
        state += "; kept on the GPU by their kernels' rate (named GB/s under pressure, then in the trial step, " \
                 f"line {trial.get('streaming_gbps', 0):.0f}): " + ", ".join(
                     f"kernel {k['kernel']} {gb(k['bytes'])} GB {k['learned_gbps']:.0f}/"
                     + (f"{k['trial_gbps']:.0f}" if k.get("trial_gbps") else "untimed")
                     for k in trial["kept_on_gpu"][:KEPT_SHOWN])
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
                     "sim_repeat_last": args.sim_repeat_last, "trace_modes": args.trace_modes,
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
    ("vs offload", lambda r, c: speedup_cell(r, "offload")),
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
    return f"get it from the benchmark, those without a budget too (uvmrun under a budget: {sets})"


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
                     "link. vs save_on_cpu, vs offload (activations offloaded, overlapped: the alternative to beat), "
                     "vs demand-lru: how many times faster the step is than theirs at the same "
                     "budget.")
        for row in report["rows"]:
            if row["mode"] == "default" and row["pressure"] is not None and row["runs_started"]:
                lines.append(f"Host homes of {mode_label('default', row['pressure'])} at {row['pressure']}: "
                             + host_homes_text(row.get("host_homes")) + ".")
        for run in report["runs"]:
            if run.get("kernel_growth"):
                lines.append(kernel_growth_text(run))
        lines.append(
            f"Simulated with `uvmtrace simulate --repeat-last {settings['sim_repeat_last']}` on the trace of the "
            "recording run: " + ("; ".join(simulation_text(key, s) for key, s in report["simulations"].items())
                                 or "not yet") + ".")
    return lines


def kernel_growth_text(run):
    """A traced run's `uvmtrace compare` against the recording run (pool_frees.py --trace-modes)."""
    growth = run["kernel_growth"]
    head = (f"Kernel growth of {mode_label(run['mode'], run.get('pressure'))} at {run.get('pressure')} ({run['id']}, "
            "recorded with kernel timings; `uvmtrace compare` of its last step whose every launch was timed against "
            "the recording run's)")
    if growth.get("problem"):
        return f"{head}: not had ({growth['problem']})."
    ms = 1e-6
    base, measured = growth["base"], growth["run"]
    kernels = "; ".join(
        f"{k['kernel'][:KERNEL_NAME_SHOWN]} {k['grown_ns'] * ms:+.1f} ms ({k['run_launches']} launches, "
        f"{k['base_ns'] * ms:.1f} to {k['run_ns'] * ms:.1f} ms, {k['run_named_bytes'] / 1e9:.2f} GB named"
        + (f", {k['run_named_bytes'] / k['grown_ns']:.1f} GB/s over the growth" if k["grown_ns"] > 0 else "") + ")"
        for k in growth["kernels"])
    def call(step):  # 0: no launch came after the step to end it
        return fmt(step["call_ns"] * ms, 1) if step["call_ns"] else "untimed"
    return (f"{head}: step {measured['step']}, {call(measured)} ms from its first launch call to the next step's, "
            f"kernels {fmt(measured['kernel_ns'] * ms, 1)} ms, against the recording's step {base['step']}, "
            f"{call(base)} and {fmt(base['kernel_ns'] * ms, 1)} ms. Grew most: {kernels}; the other kernels "
            f"{growth['other_grown_ns'] * ms:+.1f} ms.")


def markdown(report):
    cells = table_cells(report)
    checks = check_cells(report["checks"])
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
    return print_report_rows(path, check_rows, "pool")
