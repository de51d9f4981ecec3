#!/usr/bin/env python3
"""The robustness benchmarks' logic without a GPU: torch.compile's modes under a budget
(bench/drivers/compat.py --scenarios compile-modes), DDP's overhead split by cause
(bench/drivers/ddp_overhead.py) and eight jobs killed and restarted (bench/drivers/churn.py),
each as plan and report functions on made-up figures and as a whole run against stand-ins for
uvmrun and the programs it runs."""

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
import unittest.mock
from contextlib import redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(os.path.dirname(HERE))
DRIVERS = os.path.join(REPO_ROOT, "bench", "drivers")
sys.path.insert(0, DRIVERS)
sys.path.insert(0, HERE)

import churn  # noqa: E402
import compat  # noqa: E402
import ddp_overhead  # noqa: E402
from test_compat import DDP_RANK_ARGUMENTS, FAKE_TORCHRUN, still_runs, write_script  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20

# Speaks uvmrun's part as the real one does: --budget, --stats-file and --framework-settings
# into the environment; under a budget, unless the job chose, PyTorch's cudaMallocAsync backend
# with the library's notice; otherwise expandable segments off. Then it becomes the command.
FAKE_UVMRUN = r'''
import os, sys
args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
def option(name):
    return options[options.index(name) + 1] if name in options else None
env = dict(os.environ, UVMP_STATS_FILE=option("--stats-file") or "")
budget = option("--budget")
if budget:
    env["UVMP_BUDGET"] = budget
if "PYTORCH_CUDA_ALLOC_CONF" not in env:
    if budget and option("--framework-settings") != "off":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
        print("uvmprefetch: uvmrun set PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync so that the library sees "
              "every free", file=sys.stderr, flush=True)
    else:
        env["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:False"
os.execvpe(command[0], command, env)
'''

# Writes the library's stats file where UVMP_STATS_FILE says (%r, %p expanded), as the library
# in the process does at exit; the counters as keyword arguments.
WRITE_STATS = r'''
def write_stats(**counters):
    path = os.environ.get("UVMP_STATS_FILE")
    if os.environ.get("UVMP_LIBRARY") and path:
        path = path.replace("%r", os.environ.get("RANK", "0")).replace("%p", str(os.getpid()))
        with open(path, "w") as handle:
            json.dump(dict({"active": 1}, **counters), handle)
'''

# torch_compile_modes.py: its RESULT and MEMORY lines; reduce-overhead refuses the
# cudaMallocAsync backend as PyTorch's CUDA graph trees do.
FAKE_COMPILE = r'''
import argparse, json, os, sys
''' + WRITE_STATS + r'''
parser = argparse.ArgumentParser()
parser.add_argument("--mode")
parser.add_argument("--steps", type=int)
args = parser.parse_args()
conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
if args.mode == "reduce-overhead" and "cudaMallocAsync" in conf:
    print("Traceback (most recent call last):")
    print("RuntimeError: cudaMallocAsync does not yet support checkPoolLiveAllocations", flush=True)
    sys.exit(1)
losses = [1.0 / (step + 1) for step in range(args.steps)]
print("RESULT " + json.dumps({"mode": args.mode, "losses": losses}))
print("MEMORY " + json.dumps({"max_memory_allocated": 200 * 2**20, "max_memory_reserved": 300 * 2**20}))
write_stats(launches_seen=100)
'''

# One rank of ddp_gpt2.py: 100 ms a step natively, 10 more on cudaMallocAsync, 2 more under
# the library, whose stats file counts converted frees on cudaMallocAsync only.
FAKE_DDP_RANK = r'''
import argparse, json, os, sys
''' + WRITE_STATS + DDP_RANK_ARGUMENTS + r'''
rank = int(os.environ["RANK"])
async_backend = "cudaMallocAsync" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
library = bool(os.environ.get("UVMP_LIBRARY"))
ms = 100.0 + (10.0 if async_backend else 0.0) + (2.0 if library else 0.0)
losses = [5.0 - 0.25 * step + rank for step in range(args.steps)]
if os.environ.get("FAKE_DDP_FAULT") == "differ" and library and not async_backend:
    losses[-1] += 1e-6
print("RESULT " + json.dumps({"rank": rank, "losses": losses, "median_ms": ms, "max_memory_allocated": 3 << 30,
                              "max_memory_reserved": 4 << 30, "moved_after_warmup": 0}), flush=True)
write_stats(launches_seen=100 * args.steps, frees_converted=500 if async_backend else 0, hooks_timed=10,
            hook_ns=4000, bytes_prefetched=0, allocs_converted=40)
'''

# churn_mlp.py: 0.12 s a step, its LOSS lines and RESULT. FAKE_CHURN_FAULT: differ (losses
# part from native under the library), ignore (under the library, ignores SIGTERM and SIGINT
# and never ends; writes its pid to FAKE_CHURN_PIDS), crash (exits 3 under the library).
FAKE_CHURN_JOB = r'''
import argparse, json, os, signal, sys, time
''' + WRITE_STATS + r'''
parser = argparse.ArgumentParser()
for name in ("--width", "--layers", "--batch", "--steps", "--seed"):
    parser.add_argument(name, type=int)
args = parser.parse_args()
library = bool(os.environ.get("UVMP_LIBRARY"))
fault = os.environ.get("FAKE_CHURN_FAULT", "") if library else ""
if fault == "ignore":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with open(os.path.join(os.environ["FAKE_CHURN_PIDS"], str(os.getpid())), "w"):
        pass
    time.sleep(300)
if fault == "crash":
    sys.exit(3)
losses = []
for step in range(args.steps):
    time.sleep(0.12)
    losses.append(1.0 / (step + 1) + (1e-9 if fault == "differ" else 0.0))
    print(f"LOSS {step} {losses[-1]!r}", flush=True)
print("RESULT " + json.dumps({"losses": losses, "max_memory_reserved": 1 << 30, "max_memory_allocated": 1 << 29}))
write_stats(bytes_prefetched=1 << 28, bytes_evicted=1 << 27, guard_refusals=0, frees_converted=9)
'''


def run_driver_script(command, env, report_path):
    """A driver run as its own process: (exit status, its JSON report, its output)."""
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    with open(report_path, encoding="utf-8") as handle:
        report = json.load(handle)
    return completed.returncode, report, completed.stdout + completed.stderr


def fake_modules(directory):
    """A folder of empty torch and transformers modules (the drivers check the imports)."""
    modules = os.path.join(directory, "modules")
    os.makedirs(modules, exist_ok=True)
    for name in ("torch", "transformers"):
        with open(os.path.join(modules, f"{name}.py"), "w", encoding="utf-8") as handle:
            handle.write("")
    return modules


class CompileModesTests(unittest.TestCase):
    def test_the_budget_is_the_native_reserve_over_the_divisor(self):
        output = 'RESULT {"losses": [1.0]}\nMEMORY {"max_memory_allocated": 1, "max_memory_reserved": 3221225472}'
        self.assertEqual(compat.compile_budget(output, 1.5), "2048M")
        self.assertIsNone(compat.compile_budget('RESULT {"losses": [1.0]}', 1.5))

    def test_a_failure_is_told_by_its_error_line(self):
        output = "Traceback\n  File x\nRuntimeError: cudaMallocAsync does not yet support checkPoolLiveAllocations\n"
        self.assertEqual(compat.failure_line(output),
                         "RuntimeError: cudaMallocAsync does not yet support checkPoolLiveAllocations")
        self.assertEqual(compat.failure_line("one\nlast line\n"), "last line")
        self.assertEqual(compat.failure_line(""), "no output")
        reference = {"losses": [1.0]}
        self.assertEqual(compat.outcome_against(reference, {"status": "ok", "output": 'RESULT {"losses": [1.0]}'}),
                         "same")
        self.assertEqual(compat.outcome_against(reference, {"status": "ok", "output": 'RESULT {"losses": [2.0]}'}),
                         "DIFFERENT")
        self.assertEqual(compat.outcome_against(reference, {"status": "timeout", "output": "(killed)"}),
                         "timeout: (killed)")
        same = {"status": "ok", "output": 'RESULT {"losses": [1.0]}', "stats": None}
        self.assertIn("the library did not run", compat.library_outcome(reference, same))

    def test_the_rows_of_each_mode(self):
        entry = {"modes": {
            "default": {"native": "ok", "budget": "200M", "divisor": 1.5, "plain": "same", "tight": "same"},
            "reduce-overhead": {"native": "ok", "budget": "200M", "divisor": 1.5, "plain": "same",
                                "tight": "failed: RuntimeError: x", "tight_caching": "same"},
            "max-autotune": {"native": "failed: boom"}}}
        rows = {row[0]: row[1:] for row in compat.compile_rows(entry)}
        self.assertEqual(rows["compat compile default: plain uvmrun"], ("same", "same as native", "PASS"))
        self.assertEqual(rows["compat compile default: --budget 200M (peak/1.5)"], ("same", "same as native", "PASS"))
        self.assertEqual(rows["compat compile reduce-overhead: --budget 200M (peak/1.5)"][2], "FAIL")
        self.assertEqual(rows["compat compile reduce-overhead: --budget 200M --framework-settings off"][2], "info")
        self.assertEqual(rows["compat compile max-autotune: native"], ("failed: boom", "ok", "FAIL"))
        skipped = compat.compile_rows({"modes": {"default": {"native": "skipped (deadline)"}}})
        self.assertEqual(skipped, [("compat compile default: native", "skipped (deadline)", "ok", "SKIP")])

    def test_the_scenario_against_stand_ins(self):
        with tempfile.TemporaryDirectory() as directory:
            uvmrun = write_script(directory, "uvmrun", FAKE_UVMRUN)
            script = write_script(directory, "torch_compile_modes.py", FAKE_COMPILE)
            args = argparse.Namespace(deadline_s=0, workdir=os.path.join(directory, "runs"), uvmrun=uvmrun,
                                      lib="/fake/lib.so", budget="16G", dry_run=False, timeout_s=60,
                                      compile_modes="default,reduce-overhead", compile_steps=5, compile_divisor=1.5)
            with unittest.mock.patch.object(compat, "COMPILE_SCRIPT", script), redirect_stdout(io.StringIO()):
                entry = compat.scenario_compile_modes(compat.Runner(args))
        self.assertFalse(entry["matched"])
        default, graphs = entry["modes"]["default"], entry["modes"]["reduce-overhead"]
        self.assertEqual(default["budget"], "200M")
        self.assertEqual((default["plain"], default["tight"]), ("same", "same"))
        self.assertEqual(default["tight_backend"], "cudaMallocAsync")
        self.assertNotIn("tight_caching", default)
        self.assertEqual(graphs["plain"], "same")
        self.assertEqual(graphs["tight"],
                         "failed: RuntimeError: cudaMallocAsync does not yet support checkPoolLiveAllocations")
        self.assertEqual(graphs["tight_caching"], "same")
        commands = [run["command"] for run in entry["runs"]]
        self.assertEqual(len(commands), 7)
        self.assertNotIn("--budget", commands[1])
        self.assertIn("--budget 200M --stats-file", commands[2])
        self.assertIn("--framework-settings off", commands[6])
        self.assertIn("reduce-overhead: plain same, --budget 200M failed", entry["result"])


class DdpOverheadTests(unittest.TestCase):
    def test_the_plan_starts_native_and_rotates_later_rounds(self):
        self.assertEqual(ddp_overhead.plan(1), ["native", "native-async", "plain", "budget", "budget-caching"])
        two = ddp_overhead.plan(2)
        self.assertEqual(len(two), 10)
        self.assertEqual(two[5:], ["native-async", "plain", "budget", "budget-caching", "native"])

    def test_the_counters_over_the_ranks(self):
        by_rank = {0: {"active": 1, "launches_seen": 2000, "frees_converted": 10, "hooks_timed": 4, "hook_ns": 2000,
                       "bytes_prefetched": GIB, "launch_calls_timed": 2, "launch_call_ns": 10000},
                   1: {"active": 1, "launches_seen": 1800, "frees_converted": 5, "hooks_timed": 6, "hook_ns": 4000,
                       "bytes_evicted": GIB}}
        summary = ddp_overhead.counters_summary(by_rank, 20)
        self.assertEqual(summary["frees_converted"], 15)
        self.assertEqual(summary["launches_a_step"], {"0": 100.0, "1": 90.0})
        self.assertEqual(summary["hook_ns"], 600.0)
        self.assertEqual(summary["launch_call_us"], 5.0)
        self.assertEqual(summary["moved_bytes"], 2 * GIB)
        self.assertEqual(summary["active_ranks"], 2)
        self.assertIsNone(ddp_overhead.counters_summary({}, 20))

    def test_the_ratios_split_the_backend_from_the_library(self):
        runs = [{"mode": "native", "step_ms": 100.0}, {"mode": "native-async", "step_ms": 120.0},
                {"mode": "plain", "step_ms": 101.0}, {"mode": "budget", "step_ms": 123.0},
                {"mode": "budget-caching", "step_ms": None, "problem": "budget-caching: timeout"},
                {"mode": "native", "step_ms": 104.0}]
        report = ddp_overhead.finish_report({"runs": runs})
        self.assertEqual(report["step_ms"]["native"], 102.0)
        self.assertAlmostEqual(report["ratios"]["library, same backend: budget / native-async"], 1.025)
        self.assertAlmostEqual(report["ratios"]["backend: native-async / native"], 120 / 102)
        self.assertIsNone(report["ratios"]["library, caching allocator: budget-caching / native"])
        self.assertFalse(report["ok"])
        for run in runs:
            run["losses"] = "rank 0 same"
        rows = {row[0]: row[1:] for row in ddp_overhead.rows_of(report)}
        self.assertEqual(rows["ddp overhead: uvmrun --budget --framework-settings off"][2], "FAIL")
        self.assertEqual(rows["ddp overhead: native, backend:cudaMallocAsync"], ("120.0 ms; losses rank 0 same",
                                                                                 "same losses", "PASS"))
        self.assertEqual(rows["ddp overhead: library, same backend: budget / native-async"], ("1.025", "-", "info"))
        self.assertEqual(rows["ddp overhead: library, caching allocator: budget-caching / native"][2], "SKIP")

    def run_driver(self, directory, fault=""):
        uvmrun = write_script(directory, "uvmrun", FAKE_UVMRUN)
        torchrun = write_script(directory, "torchrun", FAKE_TORCHRUN)
        rank = write_script(directory, "ddp_rank.py", FAKE_DDP_RANK)
        env = dict(os.environ, FAKE_DDP_RANK=rank, FAKE_DDP_FAULT=fault,
                   PYTHONPATH=os.pathsep.join(filter(None, [fake_modules(directory), os.environ.get("PYTHONPATH")])))
        env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
        report_path = os.path.join(directory, "ddp.json")
        command = [sys.executable, os.path.join(DRIVERS, "ddp_overhead.py"), "--uvmrun", uvmrun, "--lib",
                   "/fake/lib.so", "--torchrun", torchrun, "--steps", "10", "--warmup", "2",
                   "--workdir", os.path.join(directory, "runs"), "--json-out", report_path]
        return run_driver_script(command, env, report_path)

    def test_the_driver_against_stand_ins(self):
        with tempfile.TemporaryDirectory() as directory:
            status, report, output = self.run_driver(directory)
        self.assertEqual(status, 0, output)
        self.assertEqual(report["step_ms"], {"native": 100.0, "native-async": 110.0, "plain": 102.0,
                                             "budget": 112.0, "budget-caching": 102.0})
        self.assertAlmostEqual(report["ratios"]["library, same backend: budget / native-async"], 112 / 110)
        runs = {run["mode"]: run for run in report["runs"]}
        self.assertEqual(runs["budget"]["backend"], "async")
        self.assertEqual(runs["budget-caching"]["backend"], "caching")
        self.assertEqual(runs["budget"]["counters"]["frees_converted"], 1000)
        self.assertEqual(runs["budget-caching"]["counters"]["frees_converted"], 0)
        self.assertEqual(runs["budget"]["counters"]["launches_a_step"], {"0": 100.0, "1": 100.0})
        self.assertEqual(runs["plain"]["losses"], "rank 0 same, rank 1 same")
        self.assertNotIn("--budget", runs["plain"]["command"])
        self.assertIn("--budget 16G --stats-file", runs["budget"]["command"])
        self.assertIn("--framework-settings off", runs["budget-caching"]["command"])
        self.assertIn("library, same backend: budget / native-async", output)

    def test_losses_that_part_from_native_fail(self):
        with tempfile.TemporaryDirectory() as directory:
            status, report, output = self.run_driver(directory, fault="differ")
        self.assertEqual(status, 1, output)
        self.assertEqual(sorted(problem.split(":")[0] for problem in report["problems"]), ["budget-caching", "plain"])


def churn_job(number, outcome, signal_name=None, exit_code=0, losses=None, stats=None, **more):
    job = {"id": number, "signal": signal_name, "exit": exit_code, "losses": losses, "stats": stats,
           "outcome": outcome}
    job.update(more)
    return job


class ChurnPlanTests(unittest.TestCase):
    def test_a_job_takes_a_third_of_its_share_of_the_free_memory(self):
        # 2048 wide, batch 512: 48 MiB of weights and state and 8 MiB of activations a layer.
        self.assertEqual(churn.job_layers(80 * GIB, 8, 2 * GIB, 2048, 512), 36)
        self.assertEqual(churn.job_layers(24 * GIB, 8, 2 * GIB, 2048, 512), 18)
        self.assertIsNone(churn.job_layers(1 * GIB, 8, 2 * GIB, 2048, 512))

    def test_the_schedule_follows_the_seed(self):
        first = churn.kill_schedule(47, 60, 3)
        self.assertEqual(first, churn.kill_schedule(47, 60, 3))
        self.assertNotEqual(first, churn.kill_schedule(48, 60, 3))
        self.assertTrue(8 <= len(first) <= 40, len(first))
        self.assertTrue(all(0 < event["at_s"] < 60 for event in first))
        self.assertEqual([event["at_s"] for event in first], sorted(event["at_s"] for event in first))
        self.assertEqual({event["signal"] for event in first}, {"KILL", "TERM", "INT"})

    def test_the_victim_is_the_picked_fraction_of_the_running_jobs(self):
        self.assertEqual(churn.pick_victim(["a", "b", "c"], 0.0), "a")
        self.assertEqual(churn.pick_victim(["a", "b", "c"], 0.5), "b")
        self.assertEqual(churn.pick_victim(["a", "b", "c"], 0.9999), "c")
        self.assertIsNone(churn.pick_victim([], 0.5))

    def test_the_jobs_must_stay_well_under_the_free_memory(self):
        self.assertIsNone(churn.memory_problem(2 * GIB, 8, 80 * GIB))
        self.assertIn("past 60% of the 30.0 GiB free", churn.memory_problem(2 * GIB, 8, 30 * GIB))
        self.assertIn("no max_memory_reserved", churn.memory_problem(None, 8, 80 * GIB))

    def test_outcomes(self):
        self.assertEqual(churn.outcome_of({"exit": 0, "losses": [1.0]}), "completed")
        self.assertEqual(churn.outcome_of({"exit": 0, "losses": [1.0], "signal": "TERM"}), "completed")
        self.assertEqual(churn.outcome_of({"exit": -9, "losses": None, "signal": "KILL"}), "killed")
        self.assertEqual(churn.outcome_of({"exit": -15, "signal": "TERM", "stopped_at_end": True}), "stopped")
        self.assertEqual(churn.outcome_of({"exit": -9, "signal": "INT", "hung": True}), "hung")
        self.assertEqual(churn.outcome_of({"exit": 1, "losses": None}), "failed")
        self.assertEqual(churn.exit_name(-9), "signal SIGKILL")
        self.assertEqual(churn.exit_name(130), "exit 130")

    def test_the_summary_and_its_rows(self):
        active = {"active": 1, "bytes_prefetched": GIB, "bytes_evicted": GIB, "guard_refusals": 0,
                  "frees_converted": 3}
        jobs = [churn_job(0, "completed", losses=[1.0, 0.5], stats=active),
                churn_job(1, "killed", "KILL", -9),
                churn_job(2, "killed", "INT", 1),
                churn_job(3, "completed", losses=[1.0, 0.5], stats=active),
                churn_job(4, "stopped", "TERM", -15, stopped_at_end=True)]
        summary = churn.summarize(jobs, [1.0, 0.5], 70 * GIB, 70 * GIB - 100 * MIB, 512 * MIB)
        self.assertTrue(summary["ok"], summary["problems"])
        self.assertEqual(summary["counts"], {"completed": 2, "killed": 2, "stopped": 1})
        self.assertEqual(summary["signals_sent"], {"KILL": 1, "INT": 1})
        self.assertEqual(summary["exits"]["INT -> exit 1"], 1)
        self.assertEqual(summary["survivor_stats"]["bytes_prefetched"], 2 * GIB)
        report = {"summary": summary, "leak_tolerance_mib": 512}
        rows = {row[0]: row[1:] for row in churn.rows_of(report)}
        self.assertEqual(rows["churn: jobs started / signalled / completed / stopped at end"][0], "5 / 2 / 2 / 1")
        self.assertEqual(rows["churn: completed jobs with the native losses"], ("2 of 2", "all, at least 1", "PASS"))
        self.assertEqual(rows["churn: free memory after less before (MiB)"], ("100", "<= 512", "PASS"))
        self.assertEqual(rows["churn: jobs hung past the grace"][2], "PASS")

        jobs += [churn_job(5, "hung", "TERM", -9), churn_job(6, "failed", exit_code=3),
                 churn_job(7, "completed", losses=[1.0, 0.25], stats={"active": 0})]
        summary = churn.summarize(jobs, [1.0, 0.5], 70 * GIB, 69 * GIB, 512 * MIB)
        self.assertFalse(summary["ok"])
        problems = "\n".join(summary["problems"])
        for expected in ("job 5 still alive", "job 6 failed unsignalled: exit 3", "1 completed job(s) with losses",
                         "without an active stats file", "1024 MiB less free"):
            self.assertIn(expected, problems)
        rows = {row[0]: row[1:] for row in churn.rows_of({"summary": summary, "leak_tolerance_mib": 512})}
        for name in ("churn: jobs hung past the grace", "churn: jobs failed without a signal",
                     "churn: completed jobs with the native losses", "churn: free memory after less before (MiB)"):
            self.assertEqual(rows[name][2], "FAIL", name)

    def test_nothing_completed_is_a_failure_and_a_skipped_run_one_row(self):
        summary = churn.summarize([churn_job(0, "killed", "KILL", -9)], [1.0], None, None, 0)
        self.assertIn("no job ran to completion: no losses compared", summary["problems"])
        self.assertEqual(churn.rows_of({"skipped": "native run failed"}),
                         [("churn", "native run failed", "ran", "SKIP")])


class ChurnRunTests(unittest.TestCase):
    def run_churn(self, directory, fault="", duration="4"):
        uvmrun = write_script(directory, "uvmrun", FAKE_UVMRUN)
        job = write_script(directory, "churn_mlp.py", FAKE_CHURN_JOB)
        pids = os.path.join(directory, "pids")
        os.makedirs(pids)
        env = dict(os.environ, FAKE_CHURN_FAULT=fault, FAKE_CHURN_PIDS=pids)
        report_path = os.path.join(directory, "churn.json")
        command = [sys.executable, os.path.join(DRIVERS, "churn.py"), "--uvmrun", uvmrun, "--lib", "/fake/lib.so",
                   "--job-script", job, "--free-bytes", str(80 * GIB), "--jobs", "3", "--duration-s", duration,
                   "--mean-gap-s", "0.6", "--steps", "6", "--drain-s", "4", "--grace-s", "1.5",
                   "--leak-wait-s", "0", "--workdir", os.path.join(directory, "runs"), "--json-out", report_path]
        status, report, output = run_driver_script(command, env, report_path)
        rows = subprocess.run([sys.executable, os.path.join(DRIVERS, "churn.py"), "--rows", report_path],
                              capture_output=True, text=True, timeout=60).stdout
        rows = {line.split("\t")[0]: line.split("\t")[1:] for line in rows.splitlines()}
        return status, report, rows, output, pids

    def test_a_clean_churn(self):
        with tempfile.TemporaryDirectory() as directory:
            status, report, rows, output, _ = self.run_churn(directory)
        summary = report["summary"]
        self.assertEqual(summary["problems"], [], output)
        self.assertEqual(status, 0, output)
        self.assertEqual(report["budget"], "682M")
        self.assertGreaterEqual(summary["started"], 4)
        self.assertGreaterEqual(summary["counts"].get("completed", 0), 1)
        self.assertEqual(summary["completed_same"], summary["counts"]["completed"])
        self.assertNotIn("hung", summary["counts"])
        for job in report["jobs_run"]:
            self.assertIn("--budget 682M", job["command"])
            if job["outcome"] == "completed":
                self.assertEqual(job["stats"]["active"], 1)
        self.assertEqual(rows["churn: jobs hung past the grace"], ["0", "0", "PASS"])
        self.assertIn("verdict", output)

    def test_losses_that_differ_fail(self):
        with tempfile.TemporaryDirectory() as directory:
            status, report, rows, output, _ = self.run_churn(directory, fault="differ", duration="2")
        self.assertEqual(status, 1, output)
        self.assertEqual(report["summary"]["completed_same"], 0)
        self.assertEqual(rows["churn: completed jobs with the native losses"][2], "FAIL")

    def test_a_job_that_ignores_its_signal_is_a_failure_and_is_killed(self):
        with tempfile.TemporaryDirectory() as directory:
            status, report, rows, output, pids = self.run_churn(directory, fault="ignore", duration="2")
            self.assertEqual(status, 1, output)
            self.assertGreaterEqual(report["summary"]["counts"].get("hung", 0), 1)
            self.assertEqual(rows["churn: jobs hung past the grace"][2], "FAIL")
            for pid in os.listdir(pids):
                self.assertFalse(still_runs(int(pid)), f"job {pid} still runs")

    def test_a_crash_without_a_signal_fails(self):
        with tempfile.TemporaryDirectory() as directory:
            status, report, rows, output, _ = self.run_churn(directory, fault="crash", duration="1")
        self.assertEqual(status, 1, output)
        self.assertGreaterEqual(report["summary"]["counts"].get("failed", 0), 1)
        self.assertIn("exit 3", " ".join(report["summary"]["exits"]))


if __name__ == "__main__":
    unittest.main()
