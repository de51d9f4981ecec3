#!/usr/bin/env python3
"""The managed-pool benchmark's logic without a GPU (bench/pool_frees.py): its plan, its
figures and verdicts, and whole runs against stand-ins for uvmrun, the training script, the
link probe and uvmtrace that print what the real ones print; and one run of
bench/oversubscription.py, which shares the run machinery, against the same stand-ins."""

import io
import json
import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))

import oversubscription  # noqa: E402
import pool_frees  # noqa: E402

GIB = 1 << 30

# Speaks uvmrun's part: --dry-run lists what it sets, otherwise it runs the command with the
# library's counters written where --stats-file says and a trace copied where --trace-out says.
FAKE_UVMRUN = r'''
import json, os, shutil, subprocess, sys
args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
def value(flag):
    return options[options.index(flag) + 1] if flag in options else None
env = dict(os.environ)
if os.environ.get("FAKE_UVMRUN_PICKS", "1") == "1" and "PYTORCH_CUDA_ALLOC_CONF" not in env:
    env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
if "--dry-run" in options:
    print("LD_PRELOAD=/fake/libuvmprefetch.so")
    if env.get("PYTORCH_CUDA_ALLOC_CONF") != os.environ.get("PYTORCH_CUDA_ALLOC_CONF"):
        print("PYTORCH_CUDA_ALLOC_CONF=" + env["PYTORCH_CUDA_ALLOC_CONF"])
    print(" ".join(command))
    sys.exit(0)
env["FAKE_LIBRARY"] = "1"
env["FAKE_POLICY"] = value("--policy") or "learned"
env["FAKE_BUDGET"] = value("--budget") or ""
env["FAKE_HOST_HOMES"] = value("--host-homes") or "off"
if env["FAKE_HOST_HOMES"] == "on" and not os.path.exists(value("--trace-in") or ""):
    sys.exit("uvmrun: --host-homes on needs the --trace-in trace")
status = subprocess.call(command, env=env)
stats = {"pid": os.getpid(), "active": 1, "launches_seen": 1000, "frees_converted": 500,
         "bytes_converted_peak": 25 * 2**30, "pool_reserved_peak": 26 * 2**30,
         "bytes_evicted": 8 * 10**9, "bytes_prefetched": 8 * 10**9, "bytes_populated": 10**9,
         "bytes_demand_estimated": 10**8}
with open(value("--stats-file").replace("%p", str(os.getpid())), "w") as out:
    json.dump(stats, out)
if value("--trace-out"):
    shutil.copy(os.environ["FAKE_TRACE"], value("--trace-out").replace("%p", str(os.getpid())))
sys.exit(status)
'''

# Prints what examples/train_workload.py prints: step lines and the SUMMARY line.
FAKE_TRAIN = r'''
import argparse, json, os
parser = argparse.ArgumentParser()
parser.add_argument("--model"); parser.add_argument("--batch"); parser.add_argument("--seq")
parser.add_argument("--steps", type=int); parser.add_argument("--warmup", type=int)
parser.add_argument("--mark-iterations", action="store_true"); parser.add_argument("--deterministic", action="store_true")
parser.add_argument("--save-on-cpu", action="store_true"); parser.add_argument("--memory-cap", type=int, default=0)
args = parser.parse_args()
library = os.environ.get("FAKE_LIBRARY") == "1"
pressured = library and os.environ.get("FAKE_BUDGET") == "16384M"
step = 100.0 * (1.01 if library else 1.0)
if pressured:
    step = 1000.0 if os.environ["FAKE_POLICY"] == "learned" else 1100.0
    if os.environ["FAKE_HOST_HOMES"] == "on":
        step = 800.0
if args.save_on_cpu:
    step = 900.0 if not library and args.memory_cap == 16 * 2**30 else -1.0
losses = [10.0 - 0.25 * k for k in range(args.steps)]
if (pressured and os.environ["FAKE_POLICY"] == "learned" and os.environ["FAKE_HOST_HOMES"] == "off"
        and os.environ.get("FAKE_BAD_LOSSES") == "1"):
    losses[1] += 1e-6
timed = args.steps - args.warmup
moved = ({"evicted": 8e9 * timed, "prefetched": 8e9 * timed, "populated": 0, "demand": 1e8 * timed, "frees": 90 * timed}
         if library else None)
conf = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
for k in range(args.steps):
    print(json.dumps({"step": k, "ms": step, "loss": losses[k]}))
print("SUMMARY " + json.dumps({
    "model": args.model, "steps": args.steps, "warmup": args.warmup, "median_ms": step,
    "step_ms": [step * 3] + [step] * (args.steps - 1), "losses": losses,
    "peak_allocated_bytes": 24 * 2**30, "peak_reserved_bytes": 26 * 2**30,
    "memory_allocated_bytes": 2 * 2**30, "memory_reserved_bytes": 26 * 2**30,
    "allocator_backend": "cudaMallocAsync" if "backend:cudaMallocAsync" in conf else "native",
    "deterministic": "strict", "moved_after_warmup": moved}))
'''

FAKE_LINK_PROBE = r'''
print("fetch (host to GPU) 2048 MiB: 43.0 ms, 50.0 GB/s")
print('{"bytes": 2147483648, "h2d_gbps": 50.0, "d2h_gbps": 16.0, "fetch_ms": 43.0, "evict_ms": 134.2, '
      '"remote_write_gbps": 52.0, "remote_read_gbps": 51.0}')
'''

# uvmtrace simulate --json: a step of 1100 ms for learned and 1150 for demand-lru.
FAKE_UVMTRACE = r'''
import json, sys
policy = sys.argv[sys.argv.index("--policy") + 1]
budget = int(sys.argv[sys.argv.index("--budget") + 1].rstrip("M")) * 2**20
homes = "--homes" in sys.argv
print(json.dumps({"policy": policy, "step_seconds": 0.85 if homes else 1.1 if policy == "learned" else 1.15,
                  "homes": {"host_bytes": 6 * 2**30, "step_remote_write_bytes": 6 * 2**30,
                            "step_remote_read_bytes": 12 * 2**30} if homes else None,
                  "step_in_bytes": 8e9, "step_out_bytes": 8e9, "steady_steps": 6, "footprint_bytes": 25 * 2**30,
                  "budget_bytes": budget, "prefetched_bytes": 40 * 2**30, "demand_bytes": 2**30,
                  "evicted_bytes": 30 * 2**30, "transfer_bound_step_seconds": 0.7, "prediction_hit_rate": 0.9}))
'''


def write_script(folder, name, body):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as out:
        out.write(f"#!{sys.executable}\n" + textwrap.dedent(body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


class Fakes:
    def __init__(self, folder):
        self.uvmrun = write_script(folder, "uvmrun", FAKE_UVMRUN)
        self.train = write_script(folder, "train.py", FAKE_TRAIN)
        self.link_probe = write_script(folder, "link_probe", FAKE_LINK_PROBE)
        self.uvmtrace = write_script(folder, "uvmtrace", FAKE_UVMTRACE)
        self.trace = os.path.join(folder, "recorded.uvmt")
        with open(self.trace, "wb") as out:
            out.write(b"trace")

    def arguments(self, workdir, *extra):
        return ["--uvmrun", self.uvmrun, "--uvmtrace", self.uvmtrace, "--link-probe", self.link_probe,
                "--train-script", self.train, "--workdir", workdir, "--json-out", os.path.join(workdir, "pool.json"),
                "--markdown-out", os.path.join(workdir, "pool.md"), *extra]


class PureLogic(unittest.TestCase):
    def test_losses_compared_over_the_common_steps(self):
        native = {"losses": [3.0, 2.5, 2.25, 2.0]}
        self.assertTrue(pool_frees.losses_equal({"losses": [3.0, 2.5]}, native))
        self.assertFalse(pool_frees.losses_equal({"losses": [3.0, 2.5000001]}, native))
        self.assertIsNone(pool_frees.losses_equal({"losses": None}, native))
        self.assertIsNone(pool_frees.losses_equal({"losses": [1.0]}, None))

    def test_floor_is_eviction_and_fetch_of_the_swapped_bytes(self):
        self.assertAlmostEqual(pool_frees.floor_ms(15e9, 15.0, 50.0), 1000.0 + 300.0)
        self.assertEqual(pool_frees.floor_ms(-1, 15.0, 50.0), 0.0)
        self.assertIsNone(pool_frees.floor_ms(None, 15.0, 50.0))

    def test_pooled_median_leaves_out_warm_up(self):
        runs = [{"warmup": 2, "step_ms": [900, 800, 10, 12]}, {"warmup": 2, "step_ms": [700, 600, 11, 13]}]
        self.assertEqual(pool_frees.pooled_median(runs), 11.5)

    def test_worst_memory_ratio_is_farthest_from_one(self):
        runs = [{"m": 103}, {"m": 94}, {"m": None}]
        self.assertEqual(pool_frees.worst_memory_ratio(runs, "m", 100), (94, 0.94))
        self.assertEqual(pool_frees.worst_memory_ratio([], "m", 100), (None, None))

    def test_round_ratios_pair_runs_of_one_round(self):
        native = [{"round": 1, "median_ms": 100.0}, {"round": 2, "median_ms": 110.0}]
        runs = [{"round": 1, "median_ms": 102.0}, {"round": 2, "median_ms": 110.0}, {"round": 3, "median_ms": 1.0}]
        self.assertEqual(pool_frees.round_ratios(runs, native), [1.02, 1.0])

    def test_plan_order(self):
        args = pool_frees.parse_arguments(["--uvmrun", __file__, "--uvmtrace", __file__, "--rounds", "2"])
        plan = pool_frees.make_plan(args)
        kinds = [(e["kind"], e.get("workload"), e.get("mode"), e.get("round")) for e in plan]
        self.assertEqual(kinds[0][0], "probe")
        self.assertEqual(kinds[1:4], [("train", "gpt2-small", m, 1) for m in ("native", "default", "fit")])
        self.assertEqual(kinds[7:13], [("train", "gpt2-small", "record", None), ("simulate", "gpt2-small", None, None),
                                       ("train", "gpt2-small", "host-homes", None),
                                       ("train", "gpt2-small", "learned", None),
                                       ("train", "gpt2-small", "demand-lru", None),
                                       ("train", "gpt2-small", "save-on-cpu", None)])
        # The second round starts with the next mode.
        self.assertEqual(kinds[13:16], [("train", "gpt2-small", m, 2) for m in ("default", "fit", "native")])
        pressured = [e for e in plan if e.get("mode") == "learned"][0]
        self.assertEqual((pressured["warmup"], pressured["steps"]), (2, 8))

    def test_pressure_workload_gets_a_native_run(self):
        args = pool_frees.parse_arguments(["--uvmrun", __file__, "--uvmtrace", __file__, "--workloads", "resnet50"])
        plan = pool_frees.make_plan(args)
        self.assertIn(("gpt2-small", "native"), [(e.get("workload"), e.get("mode")) for e in plan])

    def test_expected_seconds_follow_measured_runs(self):
        entry = {"kind": "train", "workload": "gpt2-small", "mode": "learned", "steps": 8}
        self.assertAlmostEqual(pool_frees.expected_seconds(entry, {}), 16.0 + 8 * 3.5)
        self.assertAlmostEqual(pool_frees.expected_seconds(entry, {("gpt2-small", "learned"): 20.0}), 22.0)

    def test_simulation_check_verdicts(self):
        row = {"sim_error": 0.3, "sim_ms": 1300.0}
        self.assertEqual(pool_frees.simulation_check("x", row, {}, True)["verdict"], "FAIL")
        row = {"sim_error": -0.2, "sim_ms": 800.0}
        self.assertEqual(pool_frees.simulation_check("x", row, {}, True)["verdict"], "PASS")
        row = {"sim_error": None}
        self.assertEqual(pool_frees.simulation_check("x", row, {"problem": "exit 2: bad"}, True)["verdict"], "FAIL")
        self.assertEqual(pool_frees.simulation_check("x", row, {"problem": "skipped (deadline)"}, True)["verdict"],
                         "SKIP")
        self.assertEqual(pool_frees.simulation_check("x", row, {"problem": "exit 2"}, False)["verdict"], "SKIP")


class WholeRun(unittest.TestCase):
    def run_bench(self, *extra, env=None):
        folder = tempfile.mkdtemp(prefix="pool-frees-test-")
        fakes = Fakes(folder)
        workdir = os.path.join(folder, "out")
        saved = dict(os.environ)
        os.environ.update({"FAKE_TRACE": fakes.trace, **(env or {})})
        try:
            with redirect_stdout(io.StringIO()) as printed:
                status = pool_frees.main(fakes.arguments(workdir, *extra))
        finally:
            os.environ.clear()
            os.environ.update(saved)
        with open(os.path.join(workdir, "pool.json"), encoding="utf-8") as report_file:
            report = json.load(report_file)
        return status, report, printed.getvalue(), workdir

    def verdicts(self, report):
        return {c["what"]: c["verdict"] for c in report["checks"]}

    def test_every_target_met(self):
        status, report, printed, workdir = self.run_bench("--rounds", "2", "--steps", "4", "--warmup", "1")
        self.assertEqual(status, 0, printed)
        verdicts = self.verdicts(report)
        failed = {what: v for what, v in verdicts.items() if v == "FAIL"}
        self.assertEqual(failed, {}, printed)
        self.assertEqual(verdicts["pool gpt2-small default step x native"], "PASS")
        self.assertEqual(verdicts["pool resnet50 fit step x native"], "PASS")
        self.assertEqual(verdicts["pool gpt2-small learned at 16G simulate error"], "PASS")
        self.assertEqual(verdicts["pool: uvmrun picks backend:cudaMallocAsync"], "PASS")
        self.assertFalse(report["allocator"]["set_by_benchmark"])
        learned = [r for r in report["rows"] if r["mode"] == "learned"][0]
        # S = 24 GiB peak live less the 16 GiB budget; floor at e = 16 and f = 50 GB/s.
        self.assertEqual(learned["swapped_bytes"], 8 * GIB)
        self.assertAlmostEqual(learned["floor_ms"], (8 * GIB / 16e9 + 8 * GIB / 50e9) * 1e3)
        self.assertAlmostEqual(learned["sim_error"], 0.1)
        self.assertAlmostEqual(learned["steady_per_step"]["evicted"], 8e9)
        # The remote floor from the probe's w = 52 and r = 51 GB/s; save_on_cpu runs without the
        # library under a 16 GiB cap (the fake train script takes 900 ms only then).
        self.assertAlmostEqual(learned["remote_floor_ms"], (8 * GIB / 52e9 + 8 * GIB / 51e9) * 1e3)
        saving = [r for r in report["rows"] if r["mode"] == "save-on-cpu"][0]
        self.assertEqual(saving["median_ms"], 900.0)
        self.assertTrue(saving["losses_equal"])
        self.assertIn("pool gpt2-small learned at 16G step vs save-on-cpu", verdicts)
        # Host homes: learned with the recorded trace's homes, simulated with the tier model at the
        # probe's remote rates.
        homed = [r for r in report["rows"] if r["mode"] == "host-homes"][0]
        self.assertEqual(homed["median_ms"], 800.0)
        self.assertAlmostEqual(homed["sim_error"], 850.0 / 800.0 - 1)
        self.assertEqual(verdicts["pool gpt2-small host-homes at 16G simulate error"], "PASS")
        self.assertEqual(verdicts["pool gpt2-small host-homes at 16G losses = native"], "PASS")
        run = [r for r in report["runs"] if r["mode"] == "host-homes"][0]
        self.assertEqual(run["command"][run["command"].index("--trace-in") + 1], report["trace"])
        self.assertEqual(report["simulations"]["host-homes at 16G"]["homes"]["host_bytes"], 6 * GIB)
        # Fit budget: 1.5 x the larger of 26 GiB reserved and 26 GiB pool peak.
        self.assertEqual(report["fit_budgets"]["gpt2-small"]["bytes"], 39 * GIB)
        self.assertTrue(os.path.exists(os.path.join(workdir, "pool.md")))
        self.assertTrue(any(name.endswith(".log") for name in os.listdir(workdir)))
        self.assertIn("=== managed pool, frees visible", printed)

    def test_rows_for_the_device_script(self):
        _, _, _, workdir = self.run_bench("--rounds", "1", "--steps", "2", "--warmup", "1",
                                          "--workloads", "gpt2-small")
        printed = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "bench", "pool_frees.py"), "--rows",
                                  os.path.join(workdir, "pool.json")], capture_output=True, text=True, check=True)
        lines = [line.split("\t") for line in printed.stdout.splitlines()]
        self.assertTrue(lines and all(len(fields) == 4 for fields in lines))
        self.assertIn("pool gpt2-small learned at 16G losses = native", [fields[0] for fields in lines])

    def test_losses_that_differ_fail(self):
        status, report, _, _ = self.run_bench("--rounds", "1", "--steps", "2", "--warmup", "1",
                                              "--workloads", "gpt2-small", env={"FAKE_BAD_LOSSES": "1"})
        self.assertEqual(status, 1)
        self.assertEqual(self.verdicts(report)["pool gpt2-small learned at 16G losses = native"], "FAIL")
        self.assertEqual(len(report["loss_mismatches"]), 1)

    def test_allocator_set_when_uvmrun_does_not_pick_it(self):
        status, report, _, _ = self.run_bench("--rounds", "1", "--steps", "2", "--warmup", "1",
                                              "--workloads", "resnet50", "--pressure-workload", "none",
                                              env={"FAKE_UVMRUN_PICKS": "0"})
        self.assertEqual(status, 0)
        self.assertTrue(report["allocator"]["set_by_benchmark"])
        verdicts = self.verdicts(report)
        self.assertEqual(verdicts["pool: uvmrun picks backend:cudaMallocAsync"], "FAIL")
        self.assertEqual(verdicts["pool: allocator backend in every run"], "PASS")

    def test_host_homes_wait_for_the_recorded_trace(self):
        status, report, _, _ = self.run_bench("--rounds", "1", "--steps", "2", "--warmup", "1",
                                              "--workloads", "gpt2-small", "--pressure-policies", "host-homes",
                                              env={"FAKE_TRACE": "/nonexistent/trace.uvmt"})
        homed = [r for r in report["runs"] if r["mode"] == "host-homes"][0]
        self.assertEqual(homed["status"], "skipped (no trace)")
        self.assertIsNone(homed["exit"])

    def test_several_pressure_budgets_without_unpressured_runs(self):
        status, report, printed, _ = self.run_bench("--rounds", "1", "--workloads", "none",
                                                    "--pressure-budget", "peak/1.5,16G",
                                                    "--pressure-policies", "host-homes,demand-lru")
        self.assertEqual(status, 0, printed)
        modes = [(r["mode"], r["pressure"]) for r in report["runs"]]
        self.assertEqual(modes, [("native", None), ("record", None), ("host-homes", "peak/1.5"),
                                 ("demand-lru", "peak/1.5"), ("host-homes", "16G"), ("demand-lru", "16G")])
        # The native peak is 24 GiB: peak/1.5 is 16 GiB, whole MiB.
        self.assertEqual(report["pressure"]["peak/1.5"]["budget_bytes"], 16 * GIB)
        run = [r for r in report["runs"] if r["pressure"] == "peak/1.5"][0]
        self.assertEqual(run["command"][run["command"].index("--budget") + 1], "16384M")
        verdicts = self.verdicts(report)
        self.assertEqual(verdicts["pool gpt2-small host-homes at 16G simulate error"], "PASS")
        self.assertIn("pool gpt2-small host-homes at 16G step vs demand-lru", verdicts)
        rows = [(r["mode"], r["pressure"]) for r in report["rows"]]
        self.assertIn(("demand-lru", "peak/1.5"), rows)
        self.assertIn("host-homes at peak/1.5", report["simulations"])
        self.assertIn("pool gpt2-small demand-lru at peak/1.5 (16.0G) losses = native", verdicts)

    def test_pressure_budget_specs(self):
        self.assertEqual(pool_frees.resolve_pressure("peak/2", 10 * GIB + 5), 5 * GIB)
        self.assertIsNone(pool_frees.resolve_pressure("peak/2", None))
        self.assertEqual(pool_frees.resolve_pressure("12G", None), 12 * GIB)
        for bad in ("peak/0", "peak/x", "lots"):
            with self.assertRaises(SystemExit), redirect_stderr(io.StringIO()):
                pool_frees.parse_arguments(["--uvmrun", __file__, "--uvmtrace", __file__, "--pressure-budget", bad])

    def test_deadline_skips_what_does_not_fit(self):
        status, report, _, _ = self.run_bench("--deadline-s", "25")
        self.assertEqual(status, 0)
        skipped = [r for r in report["runs"] if r["status"] == "skipped (deadline)"]
        self.assertTrue(skipped)
        self.assertTrue(all(r["exit"] is None for r in skipped))


class OversubscriptionRun(unittest.TestCase):
    """bench/oversubscription.py shares the run machinery (bench/bench_common.py): one short
    run of it against the same stand-ins."""

    def test_runs_and_reports(self):
        folder = tempfile.mkdtemp(prefix="oversub-test-")
        fakes = Fakes(folder)
        report_path = os.path.join(folder, "oversub.json")
        saved = dict(os.environ)
        os.environ["FAKE_TRACE"] = fakes.trace
        try:
            with redirect_stdout(io.StringIO()) as printed:
                status = oversubscription.main([
                    "--uvmrun", fakes.uvmrun, "--uvmtrace", fakes.uvmtrace, "--link-probe", fakes.link_probe,
                    "--train-script", fakes.train, "--workloads", "gpt2-small", "--divisors", "1.5",
                    "--steps", "2", "--json-out", report_path,
                    "--markdown-out", os.path.join(folder, "oversub.md")])
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.assertEqual(status, 0, printed.getvalue())
        with open(report_path, encoding="utf-8") as report_file:
            report = json.load(report_file)
        self.assertEqual(report["settings"]["link_speeds"], "measured")
        self.assertEqual([r["status"] for r in report["runs"]], ["ok"] * 5)
        self.assertTrue(report["checks"]["gpt2-small"]["losses_all_equal"])
        self.assertIn("=== oversubscription", printed.getvalue())
        with open(os.path.join(folder, "oversub.md"), encoding="utf-8") as markdown:
            self.assertIn("| workload | budget | mode |", markdown.read())


if __name__ == "__main__":
    unittest.main()
