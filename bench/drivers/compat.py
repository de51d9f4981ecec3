#!/usr/bin/env python3
"""Programs of several kinds under uvmrun against the same programs without it: one row per
scenario, with what ran, its result, and whether the result matched the native run.

Scenarios (programs in bench/drivers/compat/ and examples/):
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
  launch      bench/empty_launch: the library's own host time per launch (uvmrun less native, and
              the library's own timing of its hook), without a budget and under --budget
  ddp         bench/drivers/compat/ddp_gpt2.py: GPT-2 DDP under torchrun, --ddp-ranks ranks (default 2,
              gloo, so that both ranks can share one GPU), natively, then as `uvmrun --budget B --
              torchrun ...` with B per rank above the footprint (--budget) and at peak/1.5 (peak: the
              native run's torch.cuda.max_memory_allocated of its largest rank), and one rank alone
              under torchrun at the same peak/1.5 budget; each rank's losses against the native
              run's, step times against native and against the single rank, each rank's counters
              from its own stats file (%r), and the rank-marked summary lines
  compile-modes  (only when named) bench/drivers/compat/torch_compile_modes.py in each mode
              (default, reduce-overhead, max-autotune) natively, under plain uvmrun and under
              `uvmrun --budget peak/1.5` (peak: the native run's max_memory_reserved); where the
              budget's run fails or differs, once more with --framework-settings off (information)

Every program prints one `RESULT {json}` line (losses, a digest of the weights; one a rank
under torchrun); a run matches when its RESULT equals the native one exactly (under torchrun,
each rank's losses). Budgets are emulated capacities and the physical guard stays on
(UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION is never passed on); NVLink multicast stays off in every
run (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1). Prints one table; --json-out is
rewritten after every scenario; --rows REPORT prints a report as lines
what<TAB>value<TAB>goal<TAB>verdict for bench/device_run.sh; --dry-run prints the commands.
Exit status 0 when every scenario that ran matched.
"""

import argparse
import json
import os
import re
import subprocess
import statistics
import sys
import tempfile
import time

from bench_common import (GIB, MIB, REPO_ROOT, Clock, fmt, hook_ns_per_launch, kill_group, markdown_table,
                          print_report_rows, ratio, tagged_json_line, text_table, write_atomically)

HERE = os.path.join(REPO_ROOT, "bench", "drivers", "compat")
SCENARIOS = ("graphs", "dataloader", "async", "two-jobs", "jax", "cupy", "launch", "ddp")
# Run only when asked for (--scenarios): bench/device_run.sh runs them with ONLY=robust.
MORE_SCENARIOS = ("compile-modes",)
ASYNC = "backend:cudaMallocAsync"
# How a run's output shows that uvmrun picked that backend: the library's notice in a PyTorch
# process, and the wording of older builds.
ASYNC_NOTICES = ("uvmrun set PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync", "allocator backend: cudaMallocAsync")
# Kept in every run's environment, whatever the caller's says: NVLink multicast off for NCCL
# (NVLS) and for PyTorch's symmetric memory.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}
DDP_SCRIPT = os.path.join(HERE, "ddp_gpt2.py")
COMPILE_SCRIPT = os.path.join(HERE, "torch_compile_modes.py")
# Seconds a torch.compile mode needs at the least: its native run compiles (max-autotune tunes
# its kernels); the runs under the library find the compiled kernels in the shared cache.
COMPILE_NEEDS_S = 40
# Each rank's stats file under uvmrun: its rank and its process id (torchrun's own process,
# which has no rank, would write rank 0's name if it used CUDA).
DDP_STATS = "stats.%r.%p.json"
# Seconds the ddp scenario needs at the least (four runs of GPT-2 small, ten steps each).
DDP_NEEDS_S = 90
# Each rank's CUDA context and what the library's slabs may hold past PyTorch's reserved bytes.
DDP_RANK_ALLOWANCE = 2 * GIB
# The counters each rank's row keeps from its stats file.
DDP_STATS_KEYS = ("active", "budget_bytes", "guard_limit_bytes", "bytes_converted_peak", "bytes_prefetched",
                  "bytes_evicted", "allocs_passed_through", "bytes_passed_through", "passthrough_vmm",
                  "passthrough_host", "guard_refusals", "launches_seen")


def result_of(output):
    """The last RESULT line's JSON, or None."""
    return tagged_json_line(output, "RESULT")


def async_picked(output):
    """Whether uvmrun set PyTorch's cudaMallocAsync backend in the run (the library says so)."""
    return any(notice in output for notice in ASYNC_NOTICES)


def cupy_checks(output):
    """The CuPy demo's check lines (name: ok/MISMATCH (largest difference ...)), as a result."""
    lines = [line for line in output.splitlines() if ": ok (" in line or ": MISMATCH (" in line]
    return {"checks": lines, "ok": bool(lines) and all(": ok (" in line for line in lines)} if lines else None


def launches_of(stats):
    """The kernel launches a stats file counts (launches_seen; launches in older stand-ins)."""
    return stats.get("launches_seen", stats.get("launches", 0))


def stats_files(directory):
    """(name, counters) of each readable stats file in the directory (stats.*), by name."""
    for name in sorted(os.listdir(directory)):
        if not name.startswith("stats."):
            continue
        try:
            with open(os.path.join(directory, name), encoding="utf-8") as handle:
                yield name, json.load(handle)
        except (OSError, json.JSONDecodeError):
            continue


def busiest_stats(directory):
    """The stats file of the process that launched most (a forked worker writes its own)."""
    best = None
    for _, stats in stats_files(directory):
        if best is None or launches_of(stats) > launches_of(best):
            best = stats
    return best


def stats_by_rank(directory):
    """Each rank's counters, from the files named by DDP_STATS (stats.RANK.PID.json): for a
    rank with several (a process of the launcher's that has no rank reads as rank 0), the
    one that launched most."""
    ranks = {}
    for name, stats in stats_files(directory):
        match = re.fullmatch(r"stats\.(\d+)\.(\d+)\.json", name)
        if not match:
            continue
        rank = int(match.group(1))
        if rank not in ranks or launches_of(stats) > launches_of(ranks[rank]):
            ranks[rank] = stats
    return ranks


def rank_results(output):
    """Each rank's RESULT object ({"rank": N, "losses": [...], ...}) by rank, from the mixed
    output of every rank: a line may hold another process's text before it, so each
    `RESULT {` is read as far as its JSON object goes. A rank's last one counts."""
    decoder = json.JSONDecoder()
    found = {}
    for line in output.splitlines():
        at = line.find("RESULT {")
        while at >= 0:
            try:
                result, end = decoder.raw_decode(line, at + len("RESULT "))
            except json.JSONDecodeError:
                end = at + 1
            else:
                if isinstance(result, dict) and isinstance(result.get("rank"), int):
                    found[result["rank"]] = result
            at = line.find("RESULT {", end)
    return found


def end_run(process, grace_s=45):
    """Ends a run that overran: SIGTERM first, which torchrun passes on to its ranks (it starts
    each in a session of its own, out of reach of a signal to its group), then SIGKILL to the
    run's whole process group."""
    process.terminate()
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    kill_group(process)
    process.wait()


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
        env.update(MULTICAST_OFF)
        env.pop("UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION", None)  # the physical guard stays on
        return env

    def command(self, program, library, budget, uvmrun_options=(), stats_name="stats.%p.json"):
        """The command of one run, and the directory its stats go to."""
        self.count += 1
        rundir = os.path.join(self.workdir, f"run{self.count:02d}")
        os.makedirs(rundir, exist_ok=True)
        if not library:
            return program, rundir
        # An empty budget: plain uvmrun, which leaves PyTorch's allocator as it is.
        budget_options = ["--budget", budget] if budget else []
        return ([self.args.uvmrun or "uvmrun", *budget_options, "--stats-file", os.path.join(rundir, stats_name),
                 *uvmrun_options, "--"] + program), rundir

    def start(self, program, library, budget=None, extra_env=None, uvmrun_options=(), stats_name="stats.%p.json"):
        """Starts one run; budget None is --budget's, "" none."""
        budget = self.args.budget if budget is None else budget
        command, rundir = self.command(program, library, budget, uvmrun_options, stats_name)
        env = self.environment(extra_env)
        if library:
            env["UVMP_LIBRARY"] = self.args.lib
        print(f"$ {' '.join(command)}", flush=True)
        if self.args.dry_run:
            return None, rundir, command
        log = open(os.path.join(rundir, "output.log"), "w+", encoding="utf-8")
        # A session of its own, so that a run that overruns can be ended with every process it started.
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, text=True,
                                   start_new_session=True)
        return (process, log, time.monotonic()), rundir, command

    def finish(self, started, rundir, command, timeout):
        record = {"command": " ".join(command), "status": "dry-run", "exit": None, "wall_s": None, "output": "",
                  "rundir": rundir}
        if started is None:
            return record
        process, log, begin = started
        try:
            process.wait(timeout=max(1, min(timeout, self.clock.left())))
            record["status"] = "ok" if process.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            end_run(process)
            record["status"] = "timeout"
        record["exit"] = process.returncode
        record["wall_s"] = round(time.monotonic() - begin, 1)
        log.seek(0)
        record["output"] = log.read()
        log.close()
        record["stats"] = busiest_stats(rundir)
        by_rank = stats_by_rank(rundir)
        if by_rank:
            record["rank_stats"] = {str(rank): {key: stats.get(key) for key in DDP_STATS_KEYS}
                                    for rank, stats in sorted(by_rank.items())}
        tail = record["output"].splitlines()[-15:]
        print("\n".join(tail), flush=True)
        print(f"--- {record['status']} (exit {record['exit']}, {record['wall_s']} s)", flush=True)
        return record

    def run(self, program, library, budget=None, extra_env=None, timeout=None, uvmrun_options=(),
            stats_name="stats.%p.json"):
        started, rundir, command = self.start(program, library, budget, extra_env, uvmrun_options, stats_name)
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
    # torch.compile's CUDA graphs do not run on PyTorch's cudaMallocAsync backend (docs/frameworks.md).
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
    picked = async_picked(lib["output"])
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


# The launch hook's goal without a budget: the library's own work a launch, in ns.
HOOK_GOAL_NS = 300


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def scenario_launch(runner):
    """Empty-kernel loops natively, under plain uvmrun (no budget: the hook's goal) and under
    --budget (the planner's hand-off as well), in alternating rounds."""
    if not runner.args.empty_launch:
        return {"ran": "empty-kernel launches", "result": "skipped: no --empty-launch", "matched": None, "runs": []}
    program = [runner.args.empty_launch, str(runner.args.launches)]
    modes = {"native": (False, ""), "plain": (True, ""), "budget": (True, None)}
    loop = {mode: [] for mode in modes}
    own = {mode: [] for mode in modes}
    runs = []
    for _ in range(runner.args.launch_rounds):
        for mode, (library, budget) in modes.items():
            run = runner.run(program, library, budget)
            runs.append(run)
            figures = next((json.loads(line) for line in reversed(run["output"].splitlines())
                            if line.startswith("{") and "ns_per_launch" in line), None)
            if figures:
                loop[mode].append(figures["ns_per_launch"])
            own[mode].append(hook_ns_per_launch([run.get("stats") or {}]))
    medians = {mode: median_or_none(values) for mode, values in loop.items()}
    def over_native(mode):
        return None if None in (medians[mode], medians["native"]) else medians[mode] - medians["native"]
    hook, budget_hook = over_native("plain"), over_native("budget")
    return {"ran": f"{runner.args.launches} empty-kernel launches, {runner.args.launch_rounds} rounds",
            "result": f"native {fmt(medians['native'], 0)} ns, uvmrun {fmt(medians['plain'], 0)} ns, "
                      f"uvmrun --budget {runner.args.budget} {fmt(medians['budget'], 0)} ns a launch",
            "matched": None if hook is None else True, "hook_ns": hook, "budget_hook_ns": budget_hook,
            "loop_ratio": ratio(medians["plain"], medians["native"]),
            "own_ns": median_or_none(own["plain"]), "budget_own_ns": median_or_none(own["budget"]), "runs": runs}


def ddp_program(args, ranks):
    """torchrun of bench/drivers/compat/ddp_gpt2.py with `ranks` processes on this host."""
    launcher = args.torchrun.split() if args.torchrun else [sys.executable, "-m", "torch.distributed.run"]
    # --nproc_per_node: the spelling every torchrun reads (newer ones also read --nproc-per-node).
    return launcher + ["--standalone", "--nproc_per_node", str(ranks), DDP_SCRIPT,
                       "--backend", args.ddp_backend, "--model", args.ddp_model, "--batch", str(args.ddp_batch),
                       "--seq", str(args.ddp_seq), "--steps", str(args.ddp_steps), "--warmup", str(args.ddp_warmup)]


def ddp_imports_work():
    """Whether this Python imports what the DDP program needs (torch and transformers)."""
    probe = subprocess.run([sys.executable, "-c", "import torch, transformers"], capture_output=True, text=True)
    return probe.returncode == 0


def ddp_local_environment():
    """The caller's OMP_NUM_THREADS and GLOO_SOCKET_IFNAME, else what ranks on one host need:
    torchrun sets OMP_NUM_THREADS=1 for more than one rank (a single rank gets the same), and
    gloo's ranks connect over the loopback interface."""
    return {"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"),
            "GLOO_SOCKET_IFNAME": os.environ.get("GLOO_SOCKET_IFNAME", "lo")}


def ddp_peak(results):
    """The largest rank's torch.cuda.max_memory_allocated, or None when a rank lacks it."""
    peaks = [result.get("max_memory_allocated") for result in results.values()]
    return max(peaks) if peaks and None not in peaks else None


def ddp_budget(peak, divisor):
    """The per-rank budget peak / divisor as uvmrun reads it (whole MiB, rounded down)."""
    return f"{max(1, int(peak / divisor) // MIB)}M"


def ddp_memory_problem(results, ranks, free_bytes, rank_cap):
    """Why the runs under the library must not start, or None. The library converts to
    managed memory, and every rank's physical guard is taken from what was free when that
    rank started, so the guards of ranks sharing a GPU do not bound their sum: each rank's
    PyTorch reserve (or peak) plus an allowance for its context and the library's slabs must
    stay under rank_cap, and all ranks' together under half of what the GPU has free."""
    if len(results) < ranks:
        return "no native figures of every rank"
    per_rank = []
    for rank, result in sorted(results.items()):
        held = result.get("max_memory_reserved") or result.get("max_memory_allocated")
        if held is None:
            return f"rank {rank} reported no memory figures"
        per_rank.append(held + DDP_RANK_ALLOWANCE)
    if max(per_rank) > rank_cap:
        return f"a rank would hold {max(per_rank) / GIB:.1f} GiB, past the cap of {rank_cap / GIB:.1f} GiB"
    if free_bytes is not None and sum(per_rank) > free_bytes / 2:
        return (f"the ranks would hold {sum(per_rank) / GIB:.1f} GiB, past half of the "
                f"{free_bytes / GIB:.1f} GiB the GPU has free")
    return None


def gpu_free_bytes():
    """What GPU 0 has free by nvidia-smi, or None where it cannot tell."""
    try:
        completed = subprocess.run(["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", "0"],
                                   capture_output=True, text=True, timeout=30)
        return int(completed.stdout.strip().splitlines()[0]) * MIB if completed.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def compare_ranks(native, run, ranks):
    """(matched, detail): every rank of the run has the native run's losses, exactly. matched is
    None when the native run did not give every rank's."""
    reference = rank_results(native["output"]) if native["status"] == "ok" else {}
    if any(rank not in reference for rank in range(ranks)):
        return None, f"native run {native['status']}, not every rank's result"
    if run["status"] != "ok":
        return False, run["status"]
    got = rank_results(run["output"])
    parts = []
    for rank in range(ranks):
        want, have = reference[rank]["losses"], (got.get(rank) or {}).get("losses")
        if have is None:
            parts.append(f"rank {rank} missing")
        elif have == want:
            parts.append(f"rank {rank} same")
        else:
            first = next((step for step, (a, b) in enumerate(zip(have, want)) if a != b), min(len(have), len(want)))
            parts.append(f"rank {rank} DIFFERENT from step {first}")
    return all(part.endswith(" same") for part in parts), ", ".join(parts)


def ddp_step_ms(run, ranks):
    """The run's step time: the slowest rank's median step after warm-up (the ranks wait for
    each other in every step), or None when a rank gave none."""
    if not run or run.get("status") != "ok":
        return None
    results = rank_results(run["output"])
    medians = [results.get(rank, {}).get("median_ms") for rank in range(ranks)]
    return None if None in medians else max(medians)


def ddp_library_problems(run, ranks):
    """What shows that the library did not run in every rank: a rank's stats file missing or
    not active. Empty when none."""
    problems = []
    stats = run.get("rank_stats") or {}
    for rank in range(ranks):
        if (stats.get(str(rank)) or {}).get("active") != 1:
            problems.append(f"rank {rank}: no active stats file")
    return problems


def rank_marked(run, ranks):
    """Whether the output holds a summary line of every rank, marked with it."""
    return all(f"uvmprefetch [rank {rank}]: " in run.get("output", "") for rank in range(ranks))


def scenario_ddp(runner):
    a = runner.args
    ranks = a.ddp_ranks
    ran = (f"GPT-2 {a.ddp_model} DDP ({a.ddp_backend}), {ranks} ranks under torchrun, batch {a.ddp_batch} "
           f"seq {a.ddp_seq}, {a.ddp_steps - a.ddp_warmup} steps after {a.ddp_warmup}")
    if runner.clock.left() < DDP_NEEDS_S:
        return {"ran": ran, "result": "skipped (deadline)", "matched": None, "runs": []}
    if not a.dry_run and not ddp_imports_work():
        return {"ran": ran, "result": "skipped: torch or transformers cannot be imported", "matched": None,
                "runs": []}
    env = ddp_local_environment()
    native = runner.run(ddp_program(a, ranks), False, extra_env=env)
    reference = rank_results(native["output"]) if native["status"] == "ok" else {}
    peak = ddp_peak(reference) if len(reference) == ranks else None
    tight = ddp_budget(peak, a.ddp_divisor) if peak else f"peak/{a.ddp_divisor:g}"
    figures = {"ranks": ranks, "peak_bytes": peak, "budget_above": a.budget, "budget_tight": tight,
               "divisor": a.ddp_divisor}
    entry = {"ran": ran, "matched": None, "ddp": figures, "runs": [native]}
    if a.dry_run:
        problem = None
    elif peak is None:
        entry["result"] = f"native run {native['status']}, no peak of every rank"
        return entry
    else:
        problem = ddp_memory_problem(reference, ranks, gpu_free_bytes(), a.ddp_rank_cap_gib * GIB)
    if problem:
        entry["result"] = f"skipped under the library: {problem}"
        return entry

    runs = {}
    for key, budget, count in (("above", a.budget, ranks), ("tight", tight, ranks), ("single", tight, 1)):
        if runner.clock.left() < 20:
            break
        runs[key] = runner.run(ddp_program(a, count), True, budget=budget, extra_env=env, stats_name=DDP_STATS)
        entry["runs"].append(runs[key])
    if a.dry_run:
        entry["result"] = "dry run"
        return entry

    # A run in which the library did not run in every rank times nothing of the library's.
    problems = {key: ddp_library_problems(run, ranks if key != "single" else 1)
                for key, run in runs.items() if run["status"] == "ok"}
    step_ms = {"native": ddp_step_ms(native, ranks)}
    for key, count in (("above", ranks), ("tight", ranks), ("single", 1)):
        step_ms[key] = None if problems.get(key) else ddp_step_ms(runs.get(key), count)
    figures["step_ms"] = step_ms
    figures["ratio_above"] = ratio(step_ms["above"], step_ms["native"])
    figures["ratio_tight"] = ratio(step_ms["tight"], step_ms["native"])
    figures["ratio_tight_single"] = ratio(step_ms["tight"], step_ms["single"])
    parts, verdicts, marked = [], [], []
    for key, label in (("above", f"--budget {a.budget}"), ("tight", f"peak/{a.ddp_divisor:g} ({tight})")):
        run = runs.get(key)
        if run is None:
            parts.append(f"{label}: skipped (deadline)")
            verdicts.append(None)
            continue
        matched, detail = compare_ranks(native, run, ranks)
        if problems.get(key):
            matched = False
            detail += "; " + "; ".join(problems[key])
        verdicts.append(matched)
        marked.append(rank_marked(run, ranks))
        figures[f"losses_{key}"] = detail
        figures[f"max_memory_allocated_{key}"] = {str(rank): result.get("max_memory_allocated")
                                                  for rank, result in sorted(rank_results(run["output"]).items())}
        parts.append(f"{label}: {detail}, {fmt(figures['ratio_' + key], 3)}x native")
    single = runs.get("single")
    if single is not None:
        alone = f"{fmt(step_ms['single'], 1)} ms" if step_ms["single"] is not None else single["status"]
        if problems.get("single"):
            alone += " (" + "; ".join(problems["single"]) + ")"
        parts.append(f"one rank alone at {tight}: {alone} ({ranks} ranks: {fmt(figures['ratio_tight_single'], 3)}x)")
    figures["rank_marked"] = all(marked) if marked else None
    parts.append(f"summaries marked with the rank: {'yes' if figures['rank_marked'] else 'NO'}")
    entry["matched"] = None if None in verdicts else all(verdicts)
    entry["result"] = (f"native {fmt(step_ms['native'], 1)} ms, peak {fmt(peak / GIB, 2)} GiB a rank; "
                       + "; ".join(parts))
    return entry


def failure_line(output):
    """The line that says why a run failed: the last naming an error, else the last line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    named = [line for line in lines if re.search(r"Error|Exception|error:|refuse", line)]
    picked = named[-1] if named else lines[-1] if lines else "no output"
    return picked[:200]


def outcome_against(reference, run):
    """A run against the native RESULT: same, DIFFERENT, or its status and why it failed."""
    if run["status"] == "dry-run":
        return "dry-run"
    got = result_of(run["output"]) if run["status"] == "ok" else None
    if got is None:
        return f"{run['status']}: {failure_line(run['output'])}"
    return "same" if got == reference else "DIFFERENT"


def library_outcome(reference, run):
    """outcome_against() of a run under uvmrun, which is only the same when the library ran."""
    outcome = outcome_against(reference, run)
    if outcome == "same" and (run.get("stats") or {}).get("active") != 1:
        return "same, but the library did not run (no active stats file)"
    return outcome


def compile_budget(output, divisor):
    """The budget peak / divisor, peak the run's torch.cuda.max_memory_reserved (its MEMORY
    line), or None when the run printed none."""
    memory = tagged_json_line(output, "MEMORY") or {}
    reserved = memory.get("max_memory_reserved")
    return ddp_budget(reserved, divisor) if reserved else None


def compile_mode(runner, mode):
    """One torch.compile mode natively, under plain uvmrun and under a budget at the native
    peak / divisor; where the budget's run is not the same, once more under that budget with
    --framework-settings off (PyTorch's caching allocator), which tells whether the stream-ordered
    backend that uvmrun picks under a budget is what failed."""
    a = runner.args
    program = python(COMPILE_SCRIPT, "--mode", mode, "--steps", str(a.compile_steps))
    native = runner.run(program, False)
    reference = result_of(native["output"]) if native["status"] == "ok" else None
    figures = {"native": "ok" if reference else f"{native['status']}: {failure_line(native['output'])}"}
    runs = [native]
    if reference is None and not a.dry_run:
        return figures, False, runs  # PyTorch itself fails here: nothing of the library's is known
    budget = compile_budget(native["output"], a.compile_divisor) or f"peak/{a.compile_divisor:g}"
    figures["budget"] = budget
    plain = runner.run(program, True, budget="")
    tight = runner.run(program, True, budget=budget)
    runs += [plain, tight]
    figures["divisor"] = a.compile_divisor
    figures["plain"] = library_outcome(reference, plain)
    figures["tight"] = library_outcome(reference, tight)
    figures["tight_backend"] = "cudaMallocAsync" if async_picked(tight["output"]) else "-"
    if figures["tight"] not in ("same", "dry-run"):
        caching = runner.run(program, True, budget=budget, uvmrun_options=("--framework-settings", "off"))
        runs.append(caching)
        figures["tight_caching"] = library_outcome(reference, caching)
    matched = None if a.dry_run else figures["plain"] == "same" and figures["tight"] == "same"
    return figures, matched, runs


def scenario_compile_modes(runner):
    a = runner.args
    modes = [mode.strip() for mode in a.compile_modes.split(",") if mode.strip()]
    entry = {"ran": f"torch.compile modes, native / plain uvmrun / --budget peak/{a.compile_divisor:g}",
             "matched": None, "modes": {}, "runs": []}
    verdicts = []
    for mode in modes:
        if runner.clock.left() < COMPILE_NEEDS_S:
            entry["modes"][mode] = {"native": "skipped (deadline)"}
            verdicts.append(None)
            continue
        print(f"--- mode {mode}", flush=True)
        figures, matched, runs = compile_mode(runner, mode)
        entry["modes"][mode] = figures
        entry["runs"] += runs
        verdicts.append(matched)
    parts = []
    for mode, figures in entry["modes"].items():
        if "plain" not in figures:
            parts.append(f"{mode}: native {figures['native']}")
            continue
        part = f"{mode}: plain {figures['plain']}, --budget {figures['budget']} {figures['tight']}"
        if "tight_caching" in figures:
            part += f" (with --framework-settings off: {figures['tight_caching']})"
        parts.append(part)
    entry["result"] = "; ".join(parts) or "nothing ran"
    entry["matched"] = False if False in verdicts else None if None in verdicts or not verdicts else True
    return entry


def compile_rows(entry):
    """One row for each mode and way it ran under the library: PASS when its losses are the
    native run's, FAIL when they differ or the run failed (the reason in the value)."""
    rows = []
    for mode, figures in entry.get("modes", {}).items():
        if "plain" not in figures:
            skipped = figures["native"].startswith(("skipped", "dry-run"))
            rows.append((f"compat compile {mode}: native", figures["native"], "ok", "SKIP" if skipped else "FAIL"))
            continue
        budget = f"--budget {figures['budget']}"
        for key, label in (("plain", "plain uvmrun"), ("tight", f"{budget} (peak/{figures.get('divisor', 1.5):g})"),
                           ("tight_caching", f"{budget} --framework-settings off")):
            if key not in figures:
                continue
            outcome = figures[key]
            verdict = "SKIP" if outcome == "dry-run" else "PASS" if outcome == "same" else "FAIL"
            if key == "tight_caching":
                verdict = "info"
            rows.append((f"compat compile {mode}: {label}", outcome, "same as native", verdict))
    return rows


RUNNERS = {"graphs": scenario_graphs, "dataloader": scenario_dataloader, "async": scenario_async,
           "two-jobs": scenario_two_jobs, "jax": scenario_jax, "cupy": scenario_cupy, "launch": scenario_launch,
           "ddp": scenario_ddp, "compile-modes": scenario_compile_modes}


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
            rows.append(("compat launch: ns a launch over native, no budget", fmt(entry["hook_ns"], 0),
                         f"<= {HOOK_GOAL_NS}", "PASS" if entry["hook_ns"] <= HOOK_GOAL_NS else "FAIL"))
            if entry.get("own_ns") is not None:
                rows.append(("compat launch: the library's own timing, no budget", fmt(entry["own_ns"], 0),
                             f"<= {HOOK_GOAL_NS}", "PASS" if entry["own_ns"] <= HOOK_GOAL_NS else "FAIL"))
            for what, key in (("ns a launch over native", "budget_hook_ns"), ("the library's own timing", "budget_own_ns")):
                if entry.get(key) is not None:
                    rows.append((f"compat launch: {what}, under --budget", fmt(entry[key], 0), "-", "info"))
        if name == "ddp" and entry.get("ddp"):
            rows += ddp_rows(entry["ddp"])
        if name == "compile-modes":
            rows += compile_rows(entry)
    return rows


def ddp_rows(figures):
    """The ddp scenario's rows beside its loss row: the step time with a budget above the
    footprint against native (goal 1.05x), the step time at peak/divisor against native and
    against one rank alone at the same budget (information), and the rank-marked summaries."""
    step_ms = figures.get("step_ms") or {}
    ranks, divisor = figures.get("ranks"), figures.get("divisor")

    def times(key, over):
        return f"{fmt(figures.get(key), 3)}x ({fmt(step_ms.get(over[0]), 1)} / {fmt(step_ms.get(over[1]), 1)} ms)"

    above = figures.get("ratio_above")
    rows = [(f"compat ddp: step time, --budget {figures.get('budget_above')} a rank, over native",
             times("ratio_above", ("above", "native")), "<= 1.05",
             "SKIP" if above is None else "PASS" if above <= 1.05 else "FAIL"),
            (f"compat ddp: step time at peak/{divisor:g} ({figures.get('budget_tight')}) a rank, over native",
             times("ratio_tight", ("tight", "native")), "-", "SKIP" if figures.get("ratio_tight") is None else "info"),
            (f"compat ddp: step time at peak/{divisor:g}, {ranks} ranks over one rank alone at the same budget",
             times("ratio_tight_single", ("tight", "single")), "-",
             "SKIP" if figures.get("ratio_tight_single") is None else "info")]
    marked = figures.get("rank_marked")
    rows.append(("compat ddp: summaries marked with the rank", {None: "n/a", True: "yes", False: "no"}[marked],
                 "every rank", "SKIP" if marked is None else "PASS" if marked else "FAIL"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun")
    parser.add_argument("--lib", help="libuvmprefetch.so (UVMP_LIBRARY for uvmrun)")
    parser.add_argument("--empty-launch", help="the bench empty_launch program")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS + MORE_SCENARIOS)} (default: all but "
                             f"{', '.join(MORE_SCENARIOS)})")
    parser.add_argument("--budget", default="16G", help="budget of the single-job runs (default 16G: above every footprint)")
    parser.add_argument("--two-jobs-budget", default="2G", help="each of the two jobs' budget (default 2G)")
    parser.add_argument("--jax-runs", type=int, default=10)
    parser.add_argument("--launches", type=int, default=200000)
    parser.add_argument("--launch-rounds", type=int, default=3)
    parser.add_argument("--ddp-ranks", type=int, default=2, help="ranks of the ddp runs (default 2)")
    parser.add_argument("--ddp-backend", default="gloo", choices=["gloo", "nccl"],
                        help="gloo (the default) lets ranks share one GPU; NCCL needs a GPU a rank")
    parser.add_argument("--ddp-model", default="small", choices=["small", "tiny"])
    parser.add_argument("--ddp-batch", type=int, default=4, help="sequences a rank (default 4)")
    parser.add_argument("--ddp-seq", type=int, default=512)
    parser.add_argument("--ddp-steps", type=int, default=10, help="steps, warm-up included (default 10)")
    parser.add_argument("--ddp-warmup", type=int, default=2)
    parser.add_argument("--ddp-divisor", type=float, default=1.5, help="the tight budget: peak / this (default 1.5)")
    parser.add_argument("--ddp-rank-cap-gib", type=float, default=12,
                        help="no run under the library when a rank's native reserve and 2 GiB exceed this (default 12)")
    parser.add_argument("--compile-modes", default="default,reduce-overhead,max-autotune",
                        help="the torch.compile modes of the compile-modes scenario")
    parser.add_argument("--compile-steps", type=int, default=20)
    parser.add_argument("--compile-divisor", type=float, default=1.5,
                        help="the compile-modes budget: the native max_memory_reserved / this (default 1.5)")
    parser.add_argument("--torchrun", help="the launcher (default: this Python's -m torch.distributed.run)")
    parser.add_argument("--timeout-s", type=int, default=150, help="per run")
    parser.add_argument("--deadline-s", type=float, default=420)
    parser.add_argument("--workdir")
    parser.add_argument("--json-out")
    parser.add_argument("--markdown-out")
    parser.add_argument("--rows", metavar="REPORT", help="print REPORT's rows for device_run.sh and exit")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args()

    if args.rows:
        return print_report_rows(args.rows, rows_of, "compat")
    if not args.dry_run and not (args.uvmrun and args.lib):
        parser.error("--uvmrun and --lib are needed to run")
    chosen = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = [name for name in chosen if name not in RUNNERS]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; the choices are "
                     f"{', '.join(SCENARIOS + MORE_SCENARIOS)}")
    if args.ddp_ranks < 1 or args.ddp_warmup < 0 or args.ddp_steps <= args.ddp_warmup or args.ddp_divisor <= 1:
        parser.error("--ddp-ranks must be at least 1, --ddp-steps more than --ddp-warmup, --ddp-divisor more than 1")

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
