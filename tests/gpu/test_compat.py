#!/usr/bin/env python3
"""The compatibility benchmark's logic without a GPU (bench/drivers/compat.py): how it reads results,
compares them with the native run and turns scenarios into rows, and two whole scenarios
against stand-ins: the launch hook's cost (uvmrun and bench/empty_launch) and DDP under
torchrun (uvmrun, torchrun and the ranks of bench/drivers/compat/ddp_gpt2.py)."""

import argparse
import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DRIVERS = os.path.join(REPO_ROOT, "bench", "drivers")
sys.path.insert(0, DRIVERS)

import compat  # noqa: E402

# Speaks uvmrun's part: runs the command after "--" with the budget and the stats file in its
# environment, as uvmrun sets them, and writes a stats file where --stats-file says, unless the
# name has %r: then each rank writes its own, as the library in each rank does.
FAKE_UVMRUN = r'''
import json, os, subprocess, sys
args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
path = options[options.index("--stats-file") + 1]
env = dict(os.environ, UVMP_STATS_FILE=path)
if "--budget" in options:
    env["UVMP_BUDGET"] = options[options.index("--budget") + 1]
status = subprocess.call(command, env=env)
if "%r" not in path:
    json.dump({"active": 1, "launches": 7, "graph_launches": 3}, open(path.replace("%p", str(os.getpid())), "w"))
sys.exit(status)
'''

# Speaks torchrun's part: `--standalone --nproc_per_node N SCRIPT ARGS...` starts N ranks of the
# stand-in rank program (FAKE_DDP_RANK) with RANK, LOCAL_RANK and WORLD_SIZE, and fails when one does.
FAKE_TORCHRUN = r'''
import os, subprocess, sys
args = sys.argv[1:]
assert args[0] == "--standalone" and args[1] == "--nproc_per_node", args
ranks, script_args = int(args[2]), args[4:]
assert args[3].endswith("ddp_gpt2.py"), args[3]
children = [subprocess.Popen([sys.executable, os.environ["FAKE_DDP_RANK"]] + script_args,
                             env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ranks)))
            for r in range(ranks)]
sys.exit(max(child.wait() for child in children))
'''

# The options of bench/drivers/compat/ddp_gpt2.py, as every stand-in for a rank reads them
# (argparse imported before).
DDP_RANK_ARGUMENTS = r'''
parser = argparse.ArgumentParser()
for name in ("--backend", "--model"):
    parser.add_argument(name)
for name in ("--batch", "--seq", "--steps", "--warmup"):
    parser.add_argument(name, type=int)
args = parser.parse_args()
'''

# One rank of bench/drivers/compat/ddp_gpt2.py: its RESULT line, and under the library (UVMP_LIBRARY) a
# rank-marked summary line and its stats file. Steps take 100 ms natively, 102 ms with a budget
# above the footprint, 180 ms (two ranks) and 150 ms (one) with one below it. FAKE_DDP_FAULT:
# differ (rank 1's losses under a tight budget part from native at step 3), missing (rank 1
# prints no result under the library), inactive (the library reports itself inactive in rank 1),
# hang (every rank writes its pid to FAKE_DDP_PIDS and sleeps).
FAKE_DDP_RANK = r'''
import argparse, json, os, sys, time
''' + DDP_RANK_ARGUMENTS + r'''
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if os.environ.get("NCCL_NVLS_ENABLE") != "0" or os.environ.get("TORCH_SYMM_MEM_DISABLE_MULTICAST") != "1":
    sys.exit("NVLink multicast is not off")
if os.environ.get("FAKE_DDP_FAULT") == "hang":
    with open(os.path.join(os.environ["FAKE_DDP_PIDS"], str(os.getpid())), "w"):
        pass
    time.sleep(120)
library = bool(os.environ.get("UVMP_LIBRARY"))
budget = os.environ.get("UVMP_BUDGET", "")
fault = os.environ.get("FAKE_DDP_FAULT", "") if library and rank == 1 else ""
tight = library and budget != "16G"
losses = [10.0 - 0.25 * step + 0.125 * rank + (0.5 if world == 1 else 0.0) for step in range(args.steps)]
if fault == "differ" and tight:
    losses[3] += 2 ** -20
ms = 100.0 if not library else 102.0 if not tight else 180.0 if world > 1 else 150.0
result = {"rank": rank, "world_size": world, "losses": losses, "step_ms": [ms] * (args.steps - args.warmup),
          "median_ms": ms, "max_memory_allocated": (3 << 30) + rank * (1 << 29),
          "max_memory_reserved": (4 << 30), "budget": budget}
if fault != "missing":
    print("RESULT " + json.dumps(result), flush=True)
if library:
    print(f"uvmprefetch [rank {rank}]: allocations converted: 12", file=sys.stderr, flush=True)
    path = os.environ["UVMP_STATS_FILE"].replace("%r", str(rank)).replace("%p", str(os.getpid()))
    json.dump({"active": 0 if fault == "inactive" else 1, "launches_seen": 900, "passthrough_host": 4,
               "bytes_evicted": (1 << 30) if tight else 0}, open(path, "w"))
'''

# Prints what bench/empty_launch prints; under the library (told by UVMP_LIBRARY, which the
# benchmark sets for uvmrun's runs only) 200 ns slower without a budget, 400 ns with one.
FAKE_EMPTY_LAUNCH = r'''
import json, os, sys
ns = 3700.0
if os.environ.get("UVMP_LIBRARY"):
    ns += 400.0 if os.environ.get("UVMP_BUDGET") else 200.0
print(f"ns per launch: {ns}")
print(json.dumps({"launches": int(sys.argv[1]), "ns_per_launch": ns, "total_ms": 1.0}))
'''


def write_script(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"#!{sys.executable}\n{text}")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return path


def run_of(status, output):
    return {"status": status, "output": output}


class ResultTests(unittest.TestCase):
    def test_the_last_result_line_counts(self):
        output = 'noise\nRESULT {"losses": ["1.0"]}\nmore\nRESULT {"losses": ["2.0"]}\ntail'
        self.assertEqual(compat.result_of(output), {"losses": ["2.0"]})
        self.assertIsNone(compat.result_of("no result here"))
        self.assertIsNone(compat.result_of("RESULT {not json"))

    def test_cupy_checks_are_its_check_lines(self):
        output = "start\nmatmul: ok (largest difference 1.0e-12)\nsum: MISMATCH (largest difference 3.0)\nFAIL"
        checks = compat.cupy_checks(output)
        self.assertEqual(len(checks["checks"]), 2)
        self.assertFalse(checks["ok"])
        self.assertIsNone(compat.cupy_checks("nothing"))

    def test_compare_needs_every_run_the_same(self):
        native = run_of("ok", 'RESULT {"losses": ["1.5"]}')
        same = run_of("ok", 'RESULT {"losses": ["1.5"]}')
        other = run_of("ok", 'RESULT {"losses": ["1.25"]}')
        crashed = run_of("failed", "Segmentation fault")
        self.assertEqual(compat.compare(native, [same, same]), (True, "same, same"))
        self.assertEqual(compat.compare(native, [same, other]), (False, "same, DIFFERENT"))
        self.assertEqual(compat.compare(native, [crashed]), (False, "failed"))
        matched, detail = compat.compare(run_of("timeout", ""), [same])
        self.assertIsNone(matched)
        self.assertIn("native run timeout", detail)

    def test_rows_carry_verdicts_and_the_hook_goal(self):
        report = {"scenarios": {
            "jax": {"ran": "JAX", "result": "9 of 10 the same", "matched": False},
            "cupy": {"ran": "CuPy", "result": "skipped", "matched": None},
            "launch": {"ran": "launches", "result": "r", "matched": True, "hook_ns": 700.0, "own_ns": 250.0}}}
        rows = compat.rows_of(report)
        verdicts = {row[0]: row[3] for row in rows}
        self.assertEqual(verdicts["compat jax: JAX"], "FAIL")
        self.assertEqual(verdicts["compat cupy: CuPy"], "SKIP")
        self.assertEqual(verdicts["compat launch: ns a launch over native, no budget"], "FAIL")
        self.assertEqual(verdicts["compat launch: the library's own timing, no budget"], "PASS")

    def test_the_written_report_cuts_outputs_and_leaves_the_runs_whole(self):
        # A later scenario compares with an earlier one's run (two-jobs with async's native).
        run = {"status": "ok", "output": "\n".join(f"line {i}" for i in range(100))}
        report = {"scenarios": {"async": {"ran": "r", "result": "same", "matched": True, "runs": [run]}}}
        written = compat.as_written(report)
        self.assertNotIn("output", written["scenarios"]["async"]["runs"][0])
        self.assertEqual(written["scenarios"]["async"]["runs"][0]["output_tail"].splitlines()[0], "line 70")
        self.assertIn("line 0", run["output"])

    def test_busiest_stats_is_the_process_that_launched_most(self):
        with tempfile.TemporaryDirectory() as directory:
            for pid, launches in ((11, 5), (12, 900), (13, 0)):
                with open(os.path.join(directory, f"stats.{pid}.json"), "w", encoding="utf-8") as handle:
                    json.dump({"launches": launches, "pid": pid}, handle)
            with open(os.path.join(directory, "stats.14.json"), "w", encoding="utf-8") as handle:
                handle.write("{broken")
            self.assertEqual(compat.busiest_stats(directory)["pid"], 12)


def still_runs(pid):
    """Whether a process runs (a zombie, ended and not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def ddp_args(**changes):
    args = argparse.Namespace(torchrun=None, ddp_backend="gloo", ddp_model="small", ddp_batch=4, ddp_seq=512,
                              ddp_steps=10, ddp_warmup=2)
    for key, value in changes.items():
        setattr(args, key, value)
    return args


def ddp_line(rank, losses, median_ms=100.0, allocated=3 << 30, reserved=4 << 30):
    return "RESULT " + json.dumps({"rank": rank, "losses": losses, "median_ms": median_ms,
                                   "max_memory_allocated": allocated, "max_memory_reserved": reserved})


class DdpTests(unittest.TestCase):
    def test_the_program_is_torchrun_of_the_ddp_script(self):
        program = compat.ddp_program(ddp_args(), 2)
        self.assertEqual(program[:3], [sys.executable, "-m", "torch.distributed.run"])
        self.assertEqual(program[3:6], ["--standalone", "--nproc_per_node", "2"])
        self.assertEqual(program[6], os.path.join(DRIVERS, "compat", "ddp_gpt2.py"))
        self.assertEqual(program[7:], ["--backend", "gloo", "--model", "small", "--batch", "4", "--seq", "512",
                                       "--steps", "10", "--warmup", "2"])
        single = compat.ddp_program(ddp_args(torchrun="/opt/bin/torchrun", ddp_backend="nccl"), 1)
        self.assertEqual(single[:4], ["/opt/bin/torchrun", "--standalone", "--nproc_per_node", "1"])
        self.assertIn("nccl", single)

    def test_every_run_keeps_nvlink_multicast_off_and_the_guard_on(self):
        saved = {name: os.environ.get(name) for name in compat.MULTICAST_OFF}
        saved["UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION"] = os.environ.get("UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION")
        os.environ.update({"NCCL_NVLS_ENABLE": "1", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "0",
                           "UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION": "1"})
        try:
            with tempfile.TemporaryDirectory() as directory:
                runner = compat.Runner(argparse.Namespace(deadline_s=0, workdir=directory))
                env = runner.environment({"NCCL_NVLS_ENABLE": "1"})
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        self.assertEqual(env["NCCL_NVLS_ENABLE"], "0")
        self.assertEqual(env["TORCH_SYMM_MEM_DISABLE_MULTICAST"], "1")
        self.assertNotIn("UVMP_ALLOW_PHYSICAL_OVERSUBSCRIPTION", env)

    def test_the_tight_budget_is_the_peak_over_the_divisor_in_whole_mib(self):
        self.assertEqual(compat.ddp_budget(3 << 30, 1.5), "2048M")
        self.assertEqual(compat.ddp_budget((3 << 30) + 1000, 1.5), "2048M")
        self.assertEqual(compat.ddp_budget(7 << 30, 2), "3584M")
        self.assertEqual(compat.ddp_peak({0: {"max_memory_allocated": 5}, 1: {"max_memory_allocated": 9}}), 9)
        self.assertIsNone(compat.ddp_peak({0: {"max_memory_allocated": 5}, 1: {"max_memory_allocated": None}}))
        self.assertIsNone(compat.ddp_peak({}))

    def test_rank_results_are_read_from_mixed_output(self):
        output = "\n".join([
            "W1202 torchrun warning",
            ddp_line(1, [2.0, 1.5]),
            "uvmprefetch [rank 0]: allocations converted: 3" + ddp_line(0, [2.5, 1.25]),
            "RESULT {broken",
            ddp_line(1, [2.0, 1.0]) + ddp_line(2, [9.0]),
            'RESULT {"no rank": 1}',
        ])
        results = compat.rank_results(output)
        self.assertEqual(sorted(results), [0, 1, 2])
        self.assertEqual(results[0]["losses"], [2.5, 1.25])
        self.assertEqual(results[1]["losses"], [2.0, 1.0])  # a rank's last line counts
        self.assertEqual(compat.rank_results("nothing"), {})

    def test_each_rank_must_have_the_native_losses_exactly(self):
        native = run_of("ok", ddp_line(0, [2.5, 1.25, 1.0]) + "\n" + ddp_line(1, [2.0, 1.5, 1.0]))
        same = run_of("ok", ddp_line(1, [2.0, 1.5, 1.0]) + "\n" + ddp_line(0, [2.5, 1.25, 1.0]))
        other = run_of("ok", ddp_line(0, [2.5, 1.25, 1.0]) + "\n" + ddp_line(1, [2.0, 1.5, 1.0000001]))
        short = run_of("ok", ddp_line(0, [2.5, 1.25, 1.0]) + "\n" + ddp_line(1, [2.0, 1.5]))
        missing = run_of("ok", ddp_line(0, [2.5, 1.25, 1.0]))
        self.assertEqual(compat.compare_ranks(native, same, 2), (True, "rank 0 same, rank 1 same"))
        self.assertEqual(compat.compare_ranks(native, other, 2), (False, "rank 0 same, rank 1 DIFFERENT from step 2"))
        self.assertEqual(compat.compare_ranks(native, short, 2), (False, "rank 0 same, rank 1 DIFFERENT from step 2"))
        self.assertEqual(compat.compare_ranks(native, missing, 2), (False, "rank 0 same, rank 1 missing"))
        self.assertEqual(compat.compare_ranks(native, run_of("timeout", ""), 2), (False, "timeout"))
        matched, detail = compat.compare_ranks(run_of("ok", ddp_line(0, [2.5])), same, 2)
        self.assertIsNone(matched)
        self.assertIn("not every rank", detail)

    def test_the_step_time_is_the_slowest_rank_median(self):
        run = run_of("ok", ddp_line(0, [1.0], median_ms=101.5) + "\n" + ddp_line(1, [1.0], median_ms=99.0))
        self.assertEqual(compat.ddp_step_ms(run, 2), 101.5)
        self.assertIsNone(compat.ddp_step_ms(run, 3))
        self.assertIsNone(compat.ddp_step_ms(run_of("failed", ddp_line(0, [1.0])), 1))
        self.assertIsNone(compat.ddp_step_ms(None, 1))

    def test_the_library_must_be_active_in_every_rank(self):
        run = {"rank_stats": {"0": {"active": 1}, "1": {"active": 0}}, "output": ""}
        self.assertEqual(compat.ddp_library_problems(run, 2), ["rank 1: no active stats file"])
        self.assertEqual(compat.ddp_library_problems(run, 1), [])
        self.assertEqual(compat.ddp_library_problems({}, 1), ["rank 0: no active stats file"])
        marked = {"output": "uvmprefetch [rank 0]: a\nuvmprefetch [rank 1]: b"}
        self.assertTrue(compat.rank_marked(marked, 2))
        self.assertFalse(compat.rank_marked({"output": "uvmprefetch: a"}, 1))

    def test_stats_by_rank_keeps_each_ranks_busiest_file(self):
        with tempfile.TemporaryDirectory() as directory:
            for name, launches in (("stats.0.101.json", 900), ("stats.0.100.json", 0), ("stats.1.102.json", 800),
                                   ("stats.103.json", 5000)):
                with open(os.path.join(directory, name), "w", encoding="utf-8") as handle:
                    json.dump({"launches_seen": launches, "name": name}, handle)
            by_rank = compat.stats_by_rank(directory)
            self.assertEqual({rank: stats["name"] for rank, stats in by_rank.items()},
                             {0: "stats.0.101.json", 1: "stats.1.102.json"})
            self.assertEqual(compat.busiest_stats(directory)["name"], "stats.103.json")

    def test_the_runs_under_the_library_need_room(self):
        results = {0: {"max_memory_reserved": 4 << 30}, 1: {"max_memory_allocated": 3 << 30}}
        self.assertIsNone(compat.ddp_memory_problem(results, 2, 100 << 30, 12 << 30))
        self.assertIsNone(compat.ddp_memory_problem(results, 2, None, 12 << 30))
        self.assertIn("past the cap", compat.ddp_memory_problem(results, 2, None, 5 << 30))
        self.assertIn("past half of the 20.0 GiB", compat.ddp_memory_problem(results, 2, 20 << 30, 12 << 30))
        self.assertIn("every rank", compat.ddp_memory_problem(results, 3, None, 12 << 30))
        self.assertIn("rank 1", compat.ddp_memory_problem({0: {"max_memory_reserved": 1},
                                                           1: {"max_memory_allocated": None}}, 2, None, 12 << 30))

    def test_the_ddp_rows_and_their_verdicts(self):
        figures = {"ranks": 2, "divisor": 1.5, "budget_above": "16G", "budget_tight": "2389M", "rank_marked": True,
                   "step_ms": {"native": 100.0, "above": 103.0, "tight": 180.0, "single": 150.0},
                   "ratio_above": 1.03, "ratio_tight": 1.8, "ratio_tight_single": 1.2}
        report = {"scenarios": {"ddp": {"ran": "GPT-2 DDP", "result": "r", "matched": True, "ddp": figures}}}
        rows = {row[0]: row[1:] for row in compat.rows_of(report)}
        self.assertEqual(rows["compat ddp: GPT-2 DDP"], ("r", "same as native", "PASS"))
        self.assertEqual(rows["compat ddp: step time, --budget 16G a rank, over native"],
                         ("1.030x (103.0 / 100.0 ms)", "<= 1.05", "PASS"))
        self.assertEqual(rows["compat ddp: step time at peak/1.5 (2389M) a rank, over native"],
                         ("1.800x (180.0 / 100.0 ms)", "-", "info"))
        self.assertEqual(rows["compat ddp: step time at peak/1.5, 2 ranks over one rank alone at the same budget"],
                         ("1.200x (180.0 / 150.0 ms)", "-", "info"))
        self.assertEqual(rows["compat ddp: summaries marked with the rank"], ("yes", "every rank", "PASS"))
        figures.update(ratio_above=1.08, rank_marked=False, ratio_tight_single=None)
        rows = {row[0]: row[1:] for row in compat.rows_of(report)}
        self.assertEqual(rows["compat ddp: step time, --budget 16G a rank, over native"][2], "FAIL")
        self.assertEqual(rows["compat ddp: summaries marked with the rank"][2], "FAIL")
        self.assertEqual(
            rows["compat ddp: step time at peak/1.5, 2 ranks over one rank alone at the same budget"][2], "SKIP")
        figures.update(ratio_above=None, rank_marked=None)
        rows = {row[0]: row[1:] for row in compat.rows_of(report)}
        self.assertEqual(rows["compat ddp: step time, --budget 16G a rank, over native"][2], "SKIP")
        self.assertEqual(rows["compat ddp: summaries marked with the rank"][2], "SKIP")


class WholeRunTests(unittest.TestCase):
    def test_the_launch_scenario_against_stand_ins(self):
        with tempfile.TemporaryDirectory() as directory:
            uvmrun = write_script(directory, "uvmrun", FAKE_UVMRUN)
            empty = write_script(directory, "empty_launch", FAKE_EMPTY_LAUNCH)
            report_path = os.path.join(directory, "compat.json")
            command = [sys.executable, os.path.join(DRIVERS, "compat.py"), "--uvmrun", uvmrun,
                       "--lib", "/fake/lib.so", "--empty-launch", empty, "--scenarios", "launch",
                       "--launches", "1000", "--launch-rounds", "3", "--workdir", os.path.join(directory, "runs"),
                       "--json-out", report_path, "--markdown-out", os.path.join(directory, "compat.md")]
            completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
            self.assertEqual(completed.returncode, 0, completed.stdout + completed.stderr)
            with open(report_path, encoding="utf-8") as handle:
                report = json.load(handle)
            launch = report["scenarios"]["launch"]
            self.assertAlmostEqual(launch["hook_ns"], 200.0)
            self.assertAlmostEqual(launch["budget_hook_ns"], 400.0)
            self.assertEqual(len(launch["runs"]), 9)
            commands = [run["command"] for run in launch["runs"]]
            self.assertEqual(sum("--budget" in command for command in commands), 3)
            rows = subprocess.run([sys.executable, os.path.join(DRIVERS, "compat.py"), "--rows",
                                   report_path], capture_output=True, text=True, timeout=60).stdout
            self.assertIn("compat launch: ns a launch over native, no budget\t200\t<= 300\tPASS", rows)
            self.assertIn("compat launch: ns a launch over native, under --budget\t400\t-\tinfo", rows)

    def run_ddp(self, directory, fault="", options=()):
        """The ddp scenario against stand-ins: (exit status, report, rows, output)."""
        uvmrun = write_script(directory, "uvmrun", FAKE_UVMRUN)
        torchrun = write_script(directory, "torchrun", FAKE_TORCHRUN)
        rank = write_script(directory, "ddp_rank.py", FAKE_DDP_RANK)
        # The scenario checks that torch and transformers can be imported.
        modules = os.path.join(directory, "modules")
        os.makedirs(modules)
        for name in ("torch", "transformers"):
            with open(os.path.join(modules, f"{name}.py"), "w", encoding="utf-8") as handle:
                handle.write("")
        pids = os.path.join(directory, "pids")
        os.makedirs(pids)
        env = dict(os.environ, FAKE_DDP_RANK=rank, FAKE_DDP_FAULT=fault, FAKE_DDP_PIDS=pids,
                   PYTHONPATH=os.pathsep.join(filter(None, [modules, os.environ.get("PYTHONPATH")])))
        report_path = os.path.join(directory, "compat.json")
        command = [sys.executable, os.path.join(DRIVERS, "compat.py"), "--uvmrun", uvmrun,
                   "--lib", "/fake/lib.so", "--torchrun", torchrun, "--scenarios", "ddp",
                   "--workdir", os.path.join(directory, "runs"), "--json-out", report_path, *options]
        completed = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
        with open(report_path, encoding="utf-8") as handle:
            report = json.load(handle)
        rows = subprocess.run([sys.executable, os.path.join(DRIVERS, "compat.py"), "--rows", report_path],
                              capture_output=True, text=True, timeout=60).stdout
        rows = {line.split("\t")[0]: line.split("\t")[1:] for line in rows.splitlines()}
        return completed.returncode, report["scenarios"]["ddp"], rows, completed.stdout + completed.stderr

    def test_the_ddp_scenario_against_stand_ins(self):
        with tempfile.TemporaryDirectory() as directory:
            status, ddp, rows, output = self.run_ddp(directory)
            self.assertEqual(status, 0, output)
            self.assertTrue(ddp["matched"], ddp["result"])
            figures = ddp["ddp"]
            # The peak is the larger rank's (3.5 GiB); the tight budget a rank is 3.5 GiB / 1.5.
            self.assertEqual(figures["peak_bytes"], (3 << 30) + (1 << 29))
            self.assertEqual(figures["budget_tight"], "2389M")
            self.assertEqual(figures["step_ms"], {"native": 100.0, "above": 102.0, "tight": 180.0, "single": 150.0})
            self.assertAlmostEqual(figures["ratio_above"], 1.02)
            self.assertAlmostEqual(figures["ratio_tight_single"], 1.2)
            self.assertTrue(figures["rank_marked"])
            # Native, then uvmrun -- torchrun at each budget, then one rank alone at the tight one.
            commands = [run["command"] for run in ddp["runs"]]
            self.assertEqual(len(commands), 4)
            self.assertNotIn("--budget", commands[0])
            self.assertIn("--budget 16G --stats-file", commands[1])
            self.assertIn("stats.%r.%p.json", commands[1])
            self.assertIn("--budget 2389M", commands[2])
            self.assertIn("--budget 2389M", commands[3])
            self.assertEqual([c.split("--nproc_per_node ")[1].split()[0] for c in commands], ["2", "2", "2", "1"])
            # Each rank's counters from its own stats file.
            self.assertEqual(sorted(ddp["runs"][2]["rank_stats"]), ["0", "1"])
            self.assertEqual(ddp["runs"][2]["rank_stats"]["1"]["bytes_evicted"], 1 << 30)
            self.assertEqual(sorted(ddp["runs"][3]["rank_stats"]), ["0"])
            self.assertIn("rank 0 same, rank 1 same", ddp["result"])
            self.assertEqual(rows["compat ddp: step time, --budget 16G a rank, over native"],
                             ["1.020x (102.0 / 100.0 ms)", "<= 1.05", "PASS"])
            self.assertEqual(rows["compat ddp: summaries marked with the rank"], ["yes", "every rank", "PASS"])

    def test_a_ddp_rank_that_parts_from_native_fails_the_scenario(self):
        with tempfile.TemporaryDirectory() as directory:
            status, ddp, rows, output = self.run_ddp(directory, fault="differ")
            self.assertEqual(status, 1, output)
            self.assertFalse(ddp["matched"])
            self.assertEqual(ddp["ddp"]["losses_above"], "rank 0 same, rank 1 same")
            self.assertEqual(ddp["ddp"]["losses_tight"], "rank 0 same, rank 1 DIFFERENT from step 3")
            self.assertEqual(rows[f"compat ddp: {ddp['ran']}"][2], "FAIL")

    def test_a_ddp_rank_without_a_result_fails_the_scenario(self):
        with tempfile.TemporaryDirectory() as directory:
            status, ddp, _, output = self.run_ddp(directory, fault="missing")
            self.assertEqual(status, 1, output)
            self.assertFalse(ddp["matched"])
            self.assertEqual(ddp["ddp"]["losses_above"], "rank 0 same, rank 1 missing")
            self.assertIsNone(ddp["ddp"]["ratio_above"])

    def test_a_ddp_rank_without_the_library_fails_the_scenario(self):
        with tempfile.TemporaryDirectory() as directory:
            status, ddp, rows, output = self.run_ddp(directory, fault="inactive")
            self.assertEqual(status, 1, output)
            self.assertFalse(ddp["matched"])
            self.assertIn("rank 1: no active stats file", ddp["ddp"]["losses_above"])
            self.assertIsNone(ddp["ddp"]["ratio_above"])
            self.assertEqual(rows["compat ddp: step time, --budget 16G a rank, over native"][2], "SKIP")

    def test_a_ddp_run_that_overruns_is_ended_with_its_ranks(self):
        with tempfile.TemporaryDirectory() as directory:
            status, ddp, rows, output = self.run_ddp(directory, fault="hang", options=("--timeout-s", "3"))
            self.assertEqual(status, 0, output)  # no verdict without a native result
            self.assertIsNone(ddp["matched"])
            self.assertEqual(ddp["runs"][0]["status"], "timeout")
            self.assertIn("native run timeout", ddp["result"])
            pids = [int(name) for name in os.listdir(os.path.join(directory, "pids"))]
            self.assertEqual(len(pids), 2)
            for pid in pids:
                self.assertFalse(still_runs(pid), f"rank process {pid} still runs")

    def test_the_ddp_dry_run_prints_the_plan(self):
        completed = subprocess.run([sys.executable, os.path.join(DRIVERS, "compat.py"), "--dry-run",
                                    "--scenarios", "ddp", "--torchrun", "torchrun", "--uvmrun", "BUILD/uvmrun"],
                                   capture_output=True, text=True, timeout=60)
        self.assertEqual(completed.returncode, 0, completed.stderr)
        commands = [line[2:] for line in completed.stdout.splitlines() if line.startswith("$ ")]
        self.assertEqual(len(commands), 4)
        self.assertTrue(commands[0].startswith("torchrun --standalone --nproc_per_node 2 "))
        self.assertTrue(commands[1].startswith("BUILD/uvmrun --budget 16G --stats-file "))
        self.assertIn("--budget peak/1.5 ", commands[2])
        self.assertIn("-- torchrun --standalone --nproc_per_node 1 ", commands[3])

    def test_an_unknown_scenario_is_refused(self):
        completed = subprocess.run([sys.executable, os.path.join(DRIVERS, "compat.py"), "--dry-run",
                                    "--scenarios", "graphs,nonsense"], capture_output=True, text=True, timeout=60)
        self.assertEqual(completed.returncode, 2)
        self.assertIn("unknown scenario(s) nonsense", completed.stderr)

    def test_a_missing_report_is_one_failing_row(self):
        buffer = io.StringIO()
        sys.argv = ["compat.py", "--rows", "/nonexistent/compat.json"]
        with redirect_stdout(buffer):
            compat.main()
        self.assertEqual(buffer.getvalue(), "compat report\tmissing\tpresent\tFAIL\n")


if __name__ == "__main__":
    unittest.main()
