#!/usr/bin/env python3
"""Programs of several kinds under uvmrun against the same programs without it: one row per
scenario, with what ran, its result, and whether the result matched the native run.

Scenarios (programs in bench/compat/ and examples/):
  graphs      torch.compile(mode="reduce-overhead"): CUDA graphs captured once and replayed
              every step; the row says how many graph launches the library saw
  dataloader  a DataLoader with 4 forked workers and pinned batches
  async       PyTorch with backend:cudaMallocAsync (what uvmrun picks) against native with it
  two-jobs    two jobs on one GPU at once, each under uvmrun with its own budget, each
              against the job run natively alone
  jax         JAX (XLA_PYTHON_CLIENT_PREALLOCATE=false), --jax-runs runs in a row, each against
              one native run
  cupy        examples/cupy_demo.py: its checks against NumPy, and its printed lines against
              the native run's
  launch      bench/empty_launch: the library's own host time per launch (uvmrun less native)

Every program prints one `RESULT {json}` line (losses, a digest of the weights); a run
matches when its RESULT equals the native one exactly. Budgets are emulated capacities and
the physical guard stays on. Prints one table; --json-out is rewritten after every
scenario; --rows REPORT prints a report as lines what<TAB>value<TAB>goal<TAB>verdict for
bench/device_run.sh; --dry-run prints the commands. Exit status 0 when every scenario
that ran matched.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench_common import REPO_ROOT, Clock, fmt, markdown_table, text_table, write_atomically

HERE = os.path.join(REPO_ROOT, "bench", "compat")
SCENARIOS = ("graphs", "dataloader", "async", "two-jobs", "jax", "cupy", "launch")
ASYNC = "backend:cudaMallocAsync"


def result_of(output):
    """The last RESULT line's JSON, or None."""
    for line in reversed(output.splitlines()):
        if line.startswith("RESULT "):
            try:
                return json.loads(line[len("RESULT "):])
            except json.JSONDecodeError:
                return None
    return None


def cupy_checks(output):
    """The CuPy demo's check lines (name: ok/MISMATCH (largest difference ...)), as a result."""
    lines = [line for line in output.splitlines() if ": ok (" in line or ": MISMATCH (" in line]
    return {"checks": lines, "ok": bool(lines) and all(": ok (" in line for line in lines)} if lines else None


def busiest_stats(directory):
    """The stats file of the process that launched most (a forked worker writes its own)."""
    best = None
    for name in sorted(os.listdir(directory)):
        if not name.startswith("stats."):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                stats = json.load(handle)
        except (OSError, json.JSONDecodeError):
            continue
        if best is None or stats.get("launches", 0) > best.get("launches", 0):
            best = stats
    return best


class Runner:
    def __init__(self, args):
        self.args = args
        self.clock = Clock(args.deadline_s)
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="uvmp-compat-")
        os.makedirs(self.workdir, exist_ok=True)
        self.count = 0
        # Inductor's compiled kernels, shared by the native and the library's runs.
        self.inductor_cache = os.path.join(self.workdir, "inductor-cache")

    def environment(self, extra=None):
        env = dict(os.environ)
        env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        env["TORCHINDUCTOR_CACHE_DIR"] = self.inductor_cache
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        env.update(extra or {})
        return env

    def command(self, program, library, budget, uvmrun_options=()):
        """The command of one run, and the directory its stats go to."""
        self.count += 1
        rundir = os.path.join(self.workdir, f"run{self.count:02d}")
        os.makedirs(rundir, exist_ok=True)
        if not library:
            return program, rundir
        return ([self.args.uvmrun or "uvmrun", "--budget", budget, "--stats-file", os.path.join(rundir, "stats.%p.json"),
                 *uvmrun_options, "--"] + program), rundir

    def start(self, program, library, budget=None, extra_env=None, uvmrun_options=()):
        command, rundir = self.command(program, library, budget or self.args.budget, uvmrun_options)
        env = self.environment(extra_env)
        if library:
            env["UVMP_LIBRARY"] = self.args.lib
        print(f"$ {' '.join(command)}", flush=True)
        if self.args.dry_run:
            return None, rundir, command
        log = open(os.path.join(rundir, "output.log"), "w+", encoding="utf-8")
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, text=True)
        return (process, log, time.monotonic()), rundir, command

    def finish(self, started, rundir, command, timeout):
        record = {"command": " ".join(command), "status": "dry-run", "exit": None, "wall_s": None, "output": ""}
        if started is None:
            return record
        process, log, begin = started
        try:
            process.wait(timeout=max(1, min(timeout, self.clock.left())))
            record["status"] = "ok" if process.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            record["status"] = "timeout"
        record["exit"] = process.returncode
        record["wall_s"] = round(time.monotonic() - begin, 1)
        log.seek(0)
        record["output"] = log.read()
        log.close()
        record["stats"] = busiest_stats(rundir)
        tail = record["output"].splitlines()[-15:]
        print("\n".join(tail), flush=True)
        print(f"--- {record['status']} (exit {record['exit']}, {record['wall_s']} s)", flush=True)
        return record

    def run(self, program, library, budget=None, extra_env=None, timeout=None, uvmrun_options=()):
        started, rundir, command = self.start(program, library, budget, extra_env, uvmrun_options)
        return self.finish(started, rundir, command, timeout or self.args.timeout_s)


def python(script, *args):
    return [sys.executable, script, *args]


def compare(native, runs, parse=result_of):
    """(matched, detail): every run succeeded with the native run's result."""
    reference = parse(native["output"]) if native["status"] == "ok" else None
    if reference is None:
        return None, f"native run {native['status']}, no result"
    outcomes = []
    for run in runs:
        got = parse(run["output"]) if run["status"] == "ok" else None
        outcomes.append(run["status"] if got is None else ("same" if got == reference else "DIFFERENT"))
    matched = all(outcome == "same" for outcome in outcomes)
    return matched, ", ".join(outcomes)


def scenario_graphs(runner):
    program = python(os.path.join(HERE, "torch_graphs.py"))
    native = runner.run(program, False)
    # PyTorch's CUDA graph trees do not run on its cudaMallocAsync backend (docs/frameworks.md).
    lib = runner.run(program, True, uvmrun_options=("--framework-settings", "off"))
    matched, detail = compare(native, [lib])
    stats = lib.get("stats") or {}
    graphs = stats.get("graph_launches")
    seen = "not counted by this build" if graphs is None else f"{graphs} graph launches seen"
    return {"ran": "torch.compile reduce-overhead MLP, 30 steps, uvmrun --framework-settings off",
            "result": f"{detail}; {seen}",
            "matched": matched, "graph_launches": graphs, "runs": [native, lib]}


def scenario_dataloader(runner):
    program = python(os.path.join(HERE, "dataloader_workers.py"))
    native = runner.run(program, False)
    lib = runner.run(program, True)
    matched, detail = compare(native, [lib])
    return {"ran": "DataLoader, 4 forked workers, pinned batches, 2 epochs", "result": detail, "matched": matched,
            "runs": [native, lib]}


def scenario_async(runner):
    program = python(os.path.join(HERE, "torch_train.py"))
    native = runner.run(program, False, extra_env={"PYTORCH_CUDA_ALLOC_CONF": ASYNC})
    lib = runner.run(program, True)
    matched, detail = compare(native, [lib])
    picked = "allocator backend: cudaMallocAsync" in lib["output"]
    runner.async_native = native
    return {"ran": "transformer encoder, 40 steps, native with backend:cudaMallocAsync", "matched": matched,
            "result": f"{detail}; uvmrun {'picked' if picked else 'did NOT pick'} cudaMallocAsync",
            "runs": [native, lib]}


def scenario_two_jobs(runner):
    program = python(os.path.join(HERE, "torch_train.py"))
    native = getattr(runner, "async_native", None) or runner.run(
        program, False, extra_env={"PYTORCH_CUDA_ALLOC_CONF": ASYNC})
    # Both at once, each with its own budget.
    first = runner.start(program, True, runner.args.two_jobs_budget)
    second = runner.start(program, True, runner.args.two_jobs_budget)
    jobs = [runner.finish(*first, runner.args.timeout_s), runner.finish(*second, runner.args.timeout_s)]
    matched, detail = compare(native, jobs)
    walls = "/".join(fmt(job["wall_s"], 1) for job in jobs)
    return {"ran": f"two transformer jobs at once, --budget {runner.args.two_jobs_budget} each",
            "result": f"{detail}; {walls} s (alone natively {fmt(native['wall_s'], 1)} s)", "matched": matched,
            "runs": [native] + jobs}


def scenario_jax(runner):
    probe = subprocess.run([sys.executable, "-c", "import jax"], capture_output=True, text=True)
    if probe.returncode != 0:
        return {"ran": "JAX", "result": "skipped: jax cannot be imported", "matched": None, "runs": []}
    program = python(os.path.join(HERE, "jax_mlp.py"))
    # XLA may pick reductions whose order varies from run to run: ask for deterministic ones,
    # and run natively twice so that the table says whether the native result repeats at all.
    deterministic = {"XLA_FLAGS": "--xla_gpu_deterministic_ops=true"}
    native = runner.run(program, False, extra_env=deterministic)
    native_again = runner.run(program, False, extra_env=deterministic)
    native_repeats, _ = compare(native, [native_again])
    runs = []
    for _ in range(runner.args.jax_runs):
        if runner.clock.left() < 20:
            break
        runs.append(runner.run(program, True, extra_env=deterministic))
    matched, detail = compare(native, runs)
    same = sum(1 for part in detail.split(", ") if part == "same")
    repeat_note = {True: "two native runs the same", False: "two native runs DIFFER", None: "native run failed"}
    return {"ran": f"JAX MLP under jit, deterministic ops, {len(runs)} runs under uvmrun",
            "matched": matched and len(runs) == runner.args.jax_runs,
            "result": f"{same} of {len(runs)} the same ({detail}); {repeat_note[native_repeats]}",
            "native_repeats": native_repeats, "runs": [native, native_again] + runs}


def scenario_cupy(runner):
    probe = subprocess.run([sys.executable, "-c", "import cupy"], capture_output=True, text=True)
    if probe.returncode != 0:
        return {"ran": "CuPy", "result": "skipped: cupy cannot be imported", "matched": None, "runs": []}
    program = python(os.path.join(REPO_ROOT, "examples", "cupy_demo.py"))
    native = runner.run(program, False)
    lib = runner.run(program, True)
    matched, detail = compare(native, [lib], parse=cupy_checks)
    checks = cupy_checks(lib["output"]) or {}
    return {"ran": "examples/cupy_demo.py", "matched": matched,
            "result": f"{detail}; checks against NumPy {'ok' if checks.get('ok') else 'FAILED'}", "runs": [native, lib]}


def scenario_launch(runner):
    if not runner.args.empty_launch:
        return {"ran": "empty-kernel launches", "result": "skipped: no --empty-launch", "matched": None, "runs": []}
    program = [runner.args.empty_launch, str(runner.args.launches)]
    rounds = {"native": [], "lib": []}
    runs = []
    for _ in range(runner.args.launch_rounds):
        for mode in ("native", "lib"):
            run = runner.run(program, mode == "lib")
            runs.append(run)
            figures = next((json.loads(line) for line in reversed(run["output"].splitlines())
                            if line.startswith("{") and "ns_per_launch" in line), None)
            if figures:
                rounds[mode].append(figures["ns_per_launch"])
    medians = {mode: sorted(values)[len(values) // 2] if values else None for mode, values in rounds.items()}
    hook = medians["lib"] - medians["native"] if None not in medians.values() else None
    return {"ran": f"{runner.args.launches} empty-kernel launches, {runner.args.launch_rounds} rounds",
            "result": f"native {fmt(medians['native'], 0)} ns, uvmrun {fmt(medians['lib'], 0)} ns a launch",
            "matched": None if hook is None else True, "hook_ns": hook, "runs": runs}


RUNNERS = {"graphs": scenario_graphs, "dataloader": scenario_dataloader, "async": scenario_async,
           "two-jobs": scenario_two_jobs, "jax": scenario_jax, "cupy": scenario_cupy, "launch": scenario_launch}


def as_written(report):
    """The report with each run's output cut to its last lines (the logs keep it whole)."""
    written = {"scenarios": {}}
    for name, entry in report["scenarios"].items():
        runs = [{**{k: v for k, v in run.items() if k != "output"},
                 "output_tail": "\n".join(run.get("output", "").splitlines()[-30:])} for run in entry["runs"]]
        written["scenarios"][name] = {**entry, "runs": runs}
    return written


def rows_of(report):
    rows = []
    for name, entry in report["scenarios"].items():
        verdict = "SKIP" if entry["matched"] is None else "PASS" if entry["matched"] else "FAIL"
        rows.append((f"compat {name}: {entry['ran']}", entry["result"], "same as native", verdict))
        if name == "launch" and entry.get("hook_ns") is not None:
            rows.append(("compat launch: the library's own ns a launch", fmt(entry["hook_ns"], 0), "<= 500",
                         "PASS" if entry["hook_ns"] <= 500 else "FAIL"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun")
    parser.add_argument("--lib", help="libuvmprefetch.so (UVMP_LIBRARY for uvmrun)")
    parser.add_argument("--empty-launch", help="the bench empty_launch program")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--budget", default="16G", help="budget of the single-job runs (default 16G: above every footprint)")
    parser.add_argument("--two-jobs-budget", default="2G", help="each of the two jobs' budget (default 2G)")
    parser.add_argument("--jax-runs", type=int, default=10)
    parser.add_argument("--launches", type=int, default=200000)
    parser.add_argument("--launch-rounds", type=int, default=3)
    parser.add_argument("--timeout-s", type=int, default=150, help="per run")
    parser.add_argument("--deadline-s", type=float, default=420)
    parser.add_argument("--workdir")
    parser.add_argument("--json-out")
    parser.add_argument("--markdown-out")
    parser.add_argument("--rows", metavar="REPORT", help="print REPORT's rows for device_run.sh and exit")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()

    if args.rows:
        try:
            with open(args.rows, encoding="utf-8") as handle:
                report = json.load(handle)
        except (OSError, json.JSONDecodeError):
            print("compat report\tmissing\tpresent\tFAIL")
            return 0
        for row in rows_of(report):
            print("\t".join(str(cell) for cell in row))
        return 0
    if not args.dry_run and not (args.uvmrun and args.lib):
        parser.error("--uvmrun and --lib are needed to run")
    chosen = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in RUNNERS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; the choices are {', '.join(SCENARIOS)}")

    runner = Runner(args)
    report = {"scenarios": {}}
    for name in chosen:
        if runner.clock.left() < 20:
            report["scenarios"][name] = {"ran": name, "result": "skipped (deadline)", "matched": None, "runs": []}
            continue
        print(f"=== {name}", flush=True)
        entry = RUNNERS[name](runner)
        report["scenarios"][name] = entry
        write_atomically(args.json_out, json.dumps(as_written(report), indent=1))
    cells = [["scenario", "what ran", "result", "same as native"]]
    cells += [[name, e["ran"], e["result"], {None: "-", True: "yes", False: "NO"}[e["matched"]]]
              for name, e in report["scenarios"].items()]
    print(text_table(cells))
    write_atomically(args.markdown_out, markdown_table(cells) + "\n")
    return 0 if all(e["matched"] is not False for e in report["scenarios"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
