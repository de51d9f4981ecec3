#!/usr/bin/env python3
"""Eight jobs under budgets on one GPU, killed and restarted at random: nothing may hang, leak
or compute differently.

For about --duration-s seconds the benchmark keeps --jobs jobs running, each
`uvmrun --budget B -- churn_mlp.py` (bench/drivers/compat/churn_mlp.py: a deterministic MLP,
fixed seed, --steps steps, printing its losses), B the native run's max_memory_reserved over
--divisor, so that the library moves data. At random times (from --seed) it sends a random
running job SIGKILL, SIGTERM or SIGINT and starts a new one in its place. Then no new job
starts; those left get --drain-s seconds to finish and are sent SIGTERM after that.

Sizes: each job's weights, gradients and momentum at most the GPU's free memory / (jobs x 3)
(and --job-gib), from torch.cuda.mem_get_info of a fresh process; the runs under the library
start only when every job's native reserve plus 1 GiB (its context) stays under 60% of what
is free. Budgets are emulated capacities and the physical guard stays on.

Fails when a job is still alive --grace-s seconds after its signal (it is then SIGKILLed), a
job exits non-zero without a signal, a completed job's losses differ from the native run's,
a completed job's library was not active, no job completed, or the GPU's free memory (by
nvidia-smi, else a fresh process's cudaMemGetInfo) is not back within --leak-tolerance-mib
after the last job exited. Prints one table; --json-out gets the report, --rows REPORT
prints it as lines what<TAB>value<TAB>goal<TAB>verdict for bench/device_run.sh.
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import time

from bench_common import GIB, MIB, fmt, kill_group, markdown_table, print_report_rows, text_table, write_atomically
from compat import ASYNC, HERE, Runner, busiest_stats, ddp_budget, gpu_free_bytes, python, result_of

JOB_SCRIPT = os.path.join(HERE, "churn_mlp.py")
SIGNALS = {"KILL": signal.SIGKILL, "TERM": signal.SIGTERM, "INT": signal.SIGINT}
# A job's CUDA context and what else it holds outside PyTorch's reserve.
CONTEXT_ALLOWANCE = GIB
# The share of the GPU's free memory that all jobs together may hold at most.
FREE_SHARE = 0.6
# The counters kept of each job whose stats file was written.
STATS_KEYS = ("active", "budget_bytes", "guard_limit_bytes", "bytes_converted_peak", "bytes_prefetched",
              "bytes_evicted", "guard_refusals", "frees_converted", "launches_seen")
FREE_PROBE = ("import json, torch; free, total = torch.cuda.mem_get_info(); "
              "print(json.dumps({'free': free, 'total': total}))")


def job_layers(free_bytes, jobs, cap_bytes, width, batch):
    """The layers of the job's MLP that keep its weights, gradients, momentum and saved
    activations within free / (jobs x 3) and the cap; None when not even two fit."""
    footprint = min(free_bytes // (jobs * 3), cap_bytes)
    per_layer = 12 * width * width + 8 * batch * width
    layers = footprint // per_layer
    return layers if layers >= 2 else None


def kill_schedule(seed, duration_s, mean_gap_s):
    """When to signal a job, which (a fraction into the running jobs, by start order) and with
    what: gaps drawn from an exponential distribution of the given mean, all from the seed."""
    rng = random.Random(seed)
    events, at = [], 0.0
    while True:
        at += rng.expovariate(1.0 / mean_gap_s)
        if at >= duration_s:
            return events
        events.append({"at_s": round(at, 3), "pick": rng.random(), "signal": rng.choice(sorted(SIGNALS))})


def pick_victim(candidates, pick):
    """The candidate at the fraction `pick` of the list, or None when there is none."""
    if not candidates:
        return None
    return candidates[min(int(pick * len(candidates)), len(candidates) - 1)]


def memory_problem(reserved, jobs, free_bytes):
    """Why the jobs must not start under the library, or None."""
    if not reserved:
        return "the native run gave no max_memory_reserved"
    total = jobs * (reserved + CONTEXT_ALLOWANCE)
    if free_bytes is not None and total > FREE_SHARE * free_bytes:
        return (f"{jobs} jobs would hold {total / GIB:.1f} GiB, past {FREE_SHARE:.0%} of the "
                f"{free_bytes / GIB:.1f} GiB free")
    return None


def outcome_of(job):
    """hung (alive past the grace after its signal), completed (exit 0 with a RESULT, even if a
    signal came too late), killed (ended after a signal of the churn), stopped (ended after the
    SIGTERM at the end) or failed (ended otherwise)."""
    if job.get("hung"):
        return "hung"
    if job.get("exit") == 0 and job.get("losses") is not None:
        return "completed"
    if job.get("signal"):
        return "stopped" if job.get("stopped_at_end") else "killed"
    return "failed"


def exit_name(code):
    if code is None:
        return "none"
    if code >= 0:
        return f"exit {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


def summarize(jobs, native_losses, free_before, free_after, tolerance_bytes):
    """The report's figures and problems from the jobs' records."""
    counts = collections.Counter(job["outcome"] for job in jobs)
    signals = collections.Counter(job["signal"] for job in jobs if job.get("signal") and not job.get("stopped_at_end"))
    exits = collections.Counter(f"{job.get('signal') or 'none'} -> {exit_name(job.get('exit'))}" for job in jobs)
    completed = [job for job in jobs if job["outcome"] == "completed"]
    same = [job for job in completed if job["losses"] == native_losses]
    inactive = [job for job in completed if (job.get("stats") or {}).get("active") != 1]
    problems = []
    for job in jobs:
        if job["outcome"] == "hung":
            problems.append(f"job {job['id']} still alive {job.get('signal')} + grace: SIGKILLed")
        elif job["outcome"] == "failed":
            problems.append(f"job {job['id']} failed unsignalled: {exit_name(job.get('exit'))}")
    if len(same) < len(completed):
        problems.append(f"{len(completed) - len(same)} completed job(s) with losses unlike the native run's")
    if inactive:
        problems.append(f"{len(inactive)} completed job(s) without an active stats file")
    if not completed:
        problems.append("no job ran to completion: no losses compared")
    leak = None if free_before is None or free_after is None else free_before - free_after
    if leak is not None and leak > tolerance_bytes:
        problems.append(f"{leak / MIB:.0f} MiB less free after the last job than before")
    survivors = [job["stats"] for job in jobs if job.get("stats")]
    return {
        "started": len(jobs), "counts": dict(counts), "signals_sent": dict(signals), "exits": dict(exits),
        "completed_same": len(same), "free_before": free_before, "free_after": free_after, "leak_bytes": leak,
        "stats_files": len(survivors),
        "survivor_stats": {key: sum(stats.get(key) or 0 for stats in survivors)
                           for key in ("bytes_prefetched", "bytes_evicted", "guard_refusals", "frees_converted")},
        "problems": problems, "ok": not problems,
    }


def rows_of(report):
    """The report as rows of bench/device_run.sh's table."""
    summary = report.get("summary")
    if not summary:
        return [("churn", report.get("skipped", "no summary"), "ran", "SKIP" if report.get("skipped") else "FAIL")]
    counts = summary["counts"]
    hung = counts.get("hung", 0)
    failed = counts.get("failed", 0)
    completed = counts.get("completed", 0)
    leak = summary["leak_bytes"]
    return [
        ("churn: jobs started / signalled / completed / stopped at end",
         f"{summary['started']} / {sum(summary['signals_sent'].values())} / {completed} / {counts.get('stopped', 0)}",
         "-", "info"),
        ("churn: jobs hung past the grace", str(hung), "0", "PASS" if hung == 0 else "FAIL"),
        ("churn: jobs failed without a signal", str(failed), "0", "PASS" if failed == 0 else "FAIL"),
        ("churn: completed jobs with the native losses", f"{summary['completed_same']} of {completed}",
         "all, at least 1", "PASS" if completed and summary["completed_same"] == completed else "FAIL"),
        ("churn: free memory after less before (MiB)", "n/a" if leak is None else f"{leak / MIB:.0f}",
         f"<= {report.get('leak_tolerance_mib')}",
         "SKIP" if leak is None else "PASS" if leak <= report.get("leak_tolerance_mib", 0) * MIB else "FAIL"),
        ("churn: exit statuses (signal -> exit)", "; ".join(f"{k}: {v}" for k, v in sorted(summary["exits"].items())),
         "-", "info"),
    ]


def table(report):
    summary = report["summary"]
    stats = summary["survivor_stats"]
    cells = [["what", "value"],
             ["job", f"MLP {report['layers']} x {report['width']}, batch {report['batch']}, {report['steps']} steps, "
                     f"--budget {report['budget']} (native reserve {fmt(report['reserved'] / GIB, 2)} GiB)"],
             ["jobs at once, churn seconds", f"{report['jobs']}, {report['duration_s']}"],
             ["started", str(summary["started"])],
             ["outcomes", ", ".join(f"{k} {v}" for k, v in sorted(summary["counts"].items()))],
             ["signals sent in the churn", ", ".join(f"{k} {v}" for k, v in sorted(summary["signals_sent"].items()))],
             ["exit statuses", "; ".join(f"{k}: {v}" for k, v in sorted(summary["exits"].items()))],
             ["completed with the native losses",
              f"{summary['completed_same']} of {summary['counts'].get('completed', 0)}"],
             ["free MiB before / after", f"{fmt_mib(summary['free_before'])} / {fmt_mib(summary['free_after'])}"],
             ["stats files (survivors)", str(summary["stats_files"])],
             ["survivors' GiB prefetched / evicted", f"{fmt(stats['bytes_prefetched'] / GIB, 2)} / "
                                                     f"{fmt(stats['bytes_evicted'] / GIB, 2)}"],
             ["survivors' guard refusals, frees converted", f"{stats['guard_refusals']}, {stats['frees_converted']}"],
             ["verdict", "PASS" if summary["ok"] else "FAIL: " + "; ".join(summary["problems"])]]
    return cells


def fmt_mib(value):
    return "n/a" if value is None else f"{value / MIB:.0f}"


def torch_free():
    """(free, total) bytes of GPU 0 by a fresh process's cudaMemGetInfo, or (None, None)."""
    try:
        completed = subprocess.run([sys.executable, "-c", FREE_PROBE], capture_output=True, text=True, timeout=120)
        figures = json.loads(completed.stdout.strip().splitlines()[-1])
        return figures["free"], figures["total"]
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError, KeyError):
        return None, None


def free_now(method):
    if method == "nvidia-smi":
        return gpu_free_bytes()
    if method == "cudaMemGetInfo":
        return torch_free()[0]
    return None


class Churn:
    """The jobs under the library: starting, signalling and reaping them."""

    def __init__(self, runner, program, budget):
        self.runner, self.program, self.budget = runner, program, budget
        self.args = runner.args
        self.jobs, self.alive = [], []
        self.began = time.monotonic()

    def now(self):
        return round(time.monotonic() - self.began, 2)

    def start_job(self):
        started, rundir, command = self.runner.start(self.program, True, budget=self.budget)
        process, log, _ = started
        job = {"id": len(self.jobs), "command": " ".join(command), "rundir": rundir, "started_s": self.now(),
               "signal": None, "process": process, "log": log}
        self.jobs.append(job)
        self.alive.append(job)

    def send(self, job, name, at_end=False):
        job["signal"], job["signalled_s"], job["stopped_at_end"] = name, self.now(), at_end
        try:
            os.kill(job["process"].pid, SIGNALS[name])
        except ProcessLookupError:
            pass

    def reap(self):
        for job in list(self.alive):
            if job["process"].poll() is not None:
                self.ended(job)
            elif job["signal"] and self.now() - job["signalled_s"] > self.args.grace_s:
                job["hung"] = True
                kill_group(job["process"])
                self.ended(job)

    def ended(self, job):
        job["process"].wait()
        job["exit"], job["ended_s"] = job["process"].returncode, self.now()
        self.alive.remove(job)
        job["log"].seek(0)
        output = job["log"].read()
        job["log"].close()
        result = result_of(output)
        job["losses"] = result.get("losses") if result else None
        stats = busiest_stats(job["rundir"])
        job["stats"] = {key: stats.get(key) for key in STATS_KEYS} if stats else None
        job["steps_done"] = sum(1 for line in output.splitlines() if line.startswith("LOSS "))
        job["output_tail"] = "\n".join(output.splitlines()[-8:])
        del job["process"], job["log"]

    def run(self, schedule):
        a = self.args
        events = list(schedule)
        while self.now() < a.duration_s:
            self.reap()
            while events and events[0]["at_s"] <= self.now():
                event = events.pop(0)
                victim = pick_victim([job for job in self.alive if not job["signal"]], event["pick"])
                event["job"] = None if victim is None else victim["id"]
                if victim is not None:
                    print(f"[{self.now():6.1f} s] SIG{event['signal']} to job {victim['id']}", flush=True)
                    self.send(victim, event["signal"])
            while len(self.alive) < a.jobs:
                self.start_job()
            time.sleep(a.poll_s)
        self.wait_for_all(a.drain_s)
        for job in self.alive:
            if not job["signal"]:
                self.send(job, "TERM", at_end=True)
        self.wait_for_all(a.grace_s + 2)
        for job in list(self.alive):
            job["hung"] = True
            kill_group(job["process"])
            self.ended(job)

    def wait_for_all(self, seconds):
        until = self.now() + seconds
        while self.alive and self.now() < until:
            self.reap()
            time.sleep(self.args.poll_s)


def wait_for_free(method, before, tolerance_bytes, wait_s):
    """The GPU's free bytes once back within the tolerance of before, or the last reading
    after wait_s seconds (the driver frees an ended process's memory a moment later)."""
    until = time.monotonic() + wait_s
    while True:
        after = free_now(method)
        if after is None or before is None or before - after <= tolerance_bytes or time.monotonic() >= until:
            return after
        time.sleep(1)


def measure(runner):
    a = runner.args
    report = {"jobs": a.jobs, "duration_s": a.duration_s, "seed": a.seed, "width": a.width, "batch": a.batch,
              "steps": a.steps, "divisor": a.divisor, "leak_tolerance_mib": a.leak_tolerance_mib}
    free, total = (a.free_bytes, None) if a.free_bytes else torch_free()
    report["free_at_start"], report["total"] = free, total
    if free is None:
        report["skipped"] = "cannot read the GPU's free memory (torch.cuda.mem_get_info)"
        return report
    layers = job_layers(free, a.jobs, int(a.job_gib * GIB), a.width, a.batch)
    if layers is None:
        report["skipped"] = f"{free / GIB:.1f} GiB free: not two layers a job"
        return report
    report["layers"] = layers
    program = python(a.job_script, "--width", str(a.width), "--layers", str(layers), "--batch", str(a.batch),
                     "--steps", str(a.steps), "--seed", str(a.seed))
    print("=== native run", flush=True)
    # The backend that uvmrun picks under a budget, so that only the library differs.
    native = runner.run(program, False, extra_env={"PYTORCH_CUDA_ALLOC_CONF": ASYNC})
    result = result_of(native["output"]) if native["status"] == "ok" else None
    if not result:
        report["skipped"] = f"native run {native['status']}"
        report["native_tail"] = native["output"].splitlines()[-20:]
        return report
    report["native_wall_s"] = native["wall_s"]
    reserved = result.get("max_memory_reserved")
    report["reserved"] = reserved
    problem = memory_problem(reserved, a.jobs, free)
    if problem:
        report["skipped"] = problem
        return report
    report["budget"] = ddp_budget(reserved, a.divisor)
    method = "nvidia-smi" if gpu_free_bytes() is not None else "cudaMemGetInfo"
    before = free_now(method)
    report["free_method"] = method
    schedule = kill_schedule(a.seed, a.duration_s, a.mean_gap_s)
    print(f"=== churn: {a.jobs} jobs, --budget {report['budget']}, {len(schedule)} signals in {a.duration_s} s",
          flush=True)
    churn = Churn(runner, program, report["budget"])
    try:
        churn.run(schedule)
    finally:
        for job in list(churn.alive):
            kill_group(job["process"])
    tolerance = a.leak_tolerance_mib * MIB
    after = wait_for_free(method, before, tolerance, a.leak_wait_s)
    for job in churn.jobs:
        job["outcome"] = outcome_of(job)
    report["schedule"] = schedule
    report["jobs_run"] = churn.jobs
    report["summary"] = summarize(churn.jobs, result["losses"], before, after, tolerance)
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uvmrun")
    parser.add_argument("--lib", help="libuvmprefetch.so (UVMP_LIBRARY for uvmrun)")
    parser.add_argument("--jobs", type=int, default=8, help="jobs running at once (default 8)")
    parser.add_argument("--duration-s", type=float, default=60, help="seconds of churn (default 60)")
    parser.add_argument("--mean-gap-s", type=float, default=3, help="mean seconds between signals (default 3)")
    parser.add_argument("--seed", type=int, default=47)
    parser.add_argument("--drain-s", type=float, default=30, help="seconds the last jobs get to finish (default 30)")
    parser.add_argument("--grace-s", type=float, default=15, help="seconds a signalled job has to end (default 15)")
    parser.add_argument("--job-gib", type=float, default=2, help="a job's weights and state at most (default 2)")
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--divisor", type=float, default=1.5, help="budget: the native reserve / this (default 1.5)")
    parser.add_argument("--leak-tolerance-mib", type=int, default=512)
    parser.add_argument("--leak-wait-s", type=float, default=20)
    parser.add_argument("--poll-s", type=float, default=0.1)
    parser.add_argument("--job-script", default=JOB_SCRIPT, help=argparse.SUPPRESS)
    parser.add_argument("--free-bytes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--timeout-s", type=int, default=120, help="the native run's")
    parser.add_argument("--workdir")
    parser.add_argument("--json-out")
    parser.add_argument("--markdown-out")
    parser.add_argument("--rows", metavar="REPORT", help="print REPORT's rows for device_run.sh and exit")
    args = parser.parse_args(argv)
    if args.rows:
        return print_report_rows(args.rows, rows_of, "churn")
    if not (args.uvmrun and args.lib):
        parser.error("--uvmrun and --lib are needed to run")
    if args.jobs < 1 or args.duration_s <= 0 or args.mean_gap_s <= 0 or args.divisor <= 1:
        parser.error("--jobs at least 1, --duration-s and --mean-gap-s above 0, --divisor above 1")
    # What Runner needs beside these: no deadline of its own, no dry run, no default budget.
    args.deadline_s, args.dry_run, args.budget = 0, False, None
    # An outer timeout's SIGTERM ends the jobs too (each runs in a session of its own).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    report = measure(Runner(args))
    write_atomically(args.json_out, json.dumps(report, indent=1))
    if "summary" not in report:
        print(f"churn skipped: {report.get('skipped')}")
        return 1
    cells = table(report)
    print(text_table(cells))
    write_atomically(args.markdown_out, markdown_table(cells) + "\n")
    return 0 if report["summary"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
