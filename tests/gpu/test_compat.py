#!/usr/bin/env python3
"""The compatibility benchmark's logic without a GPU (bench/compat.py): how it reads results,
compares them with the native run and turns scenarios into rows, and one whole scenario (the
launch hook's cost) against stand-ins for uvmrun and bench/empty_launch."""

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
sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))

import compat  # noqa: E402

# Speaks uvmrun's part: runs the command after "--", writing a stats file where --stats-file says.
FAKE_UVMRUN = r'''
import json, os, subprocess, sys
args = sys.argv[1:]
split = args.index("--")
options, command = args[:split], args[split + 1:]
status = subprocess.call(command)
path = options[options.index("--stats-file") + 1].replace("%p", str(os.getpid()))
json.dump({"active": 1, "launches": 7, "graph_launches": 3}, open(path, "w"))
sys.exit(status)
'''

# Prints what bench/empty_launch prints; 400 ns slower under the library (told by UVMP_LIBRARY,
# which the benchmark sets for uvmrun's runs only).
FAKE_EMPTY_LAUNCH = r'''
import json, os, sys
ns = 4100.0 if os.environ.get("UVMP_LIBRARY") else 3700.0
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
            "launch": {"ran": "launches", "result": "r", "matched": True, "hook_ns": 700.0}}}
        rows = compat.rows_of(report)
        verdicts = {row[0]: row[3] for row in rows}
        self.assertEqual(verdicts["compat jax: JAX"], "FAIL")
        self.assertEqual(verdicts["compat cupy: CuPy"], "SKIP")
        self.assertEqual(verdicts["compat launch: the library's own ns a launch"], "FAIL")

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


class WholeRunTests(unittest.TestCase):
    def test_the_launch_scenario_against_stand_ins(self):
        with tempfile.TemporaryDirectory() as directory:
            uvmrun = write_script(directory, "uvmrun", FAKE_UVMRUN)
            empty = write_script(directory, "empty_launch", FAKE_EMPTY_LAUNCH)
            report_path = os.path.join(directory, "compat.json")
            command = [sys.executable, os.path.join(REPO_ROOT, "bench", "compat.py"), "--uvmrun", uvmrun,
                       "--lib", "/fake/lib.so", "--empty-launch", empty, "--scenarios", "launch",
                       "--launches", "1000", "--launch-rounds", "3", "--workdir", os.path.join(directory, "runs"),
                       "--json-out", report_path, "--markdown-out", os.path.join(directory, "compat.md")]
            completed = subprocess.run(command, capture_output=True, text=True, timeout=120)
            self.assertEqual(completed.returncode, 0, completed.stdout + completed.stderr)
            with open(report_path, encoding="utf-8") as handle:
                report = json.load(handle)
            launch = report["scenarios"]["launch"]
            self.assertAlmostEqual(launch["hook_ns"], 400.0)
            self.assertEqual(len(launch["runs"]), 6)
            rows = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "bench", "compat.py"), "--rows",
                                   report_path], capture_output=True, text=True, timeout=60).stdout
            self.assertIn("compat launch: the library's own ns a launch\t400\t<= 500\tPASS", rows)

    def test_an_unknown_scenario_is_refused(self):
        completed = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "bench", "compat.py"), "--dry-run",
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
