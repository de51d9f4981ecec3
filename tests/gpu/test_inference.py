#!/usr/bin/env python3
"""The inference benchmark's logic without a GPU (bench/drivers/inference.py): its plan and
commands, budgets and floors, its checks and report on fabricated SUMMARY lines, and whole runs
against stand-ins for uvmrun, the generation workload and the link probe."""

import io
import json
import os
import sys
import tempfile
import unittest
import unittest.mock
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_pool_frees import DRIVERS, FAKE_LINK_PROBE, FAKE_UVMRUN, run_main, write_script  # noqa: E402

sys.path.insert(0, DRIVERS)
import inference  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
WEIGHTS = 6 * GIB
KV = GIB // 5

# Prints what examples/generate_workload.py prints. Natively 20 ms a token; under the library
# without pressure 20.2 ms; with the weights over the budget by 1.25x (weights/1.25) 55 ms by
# default, 150 ms under demand-lru, 200 ms through accelerate; by 2x 100, 300 and 400 ms.
FAKE_GENERATE = r'''
import argparse, json, os
parser = argparse.ArgumentParser()
parser.add_argument("--new-tokens", type=int); parser.add_argument("--warmup", type=int)
parser.add_argument("--deterministic", action="store_true"); parser.add_argument("--mark-iterations", action="store_true")
parser.add_argument("--accelerate-offload", type=int, default=0)
args, _ = parser.parse_known_args()
weights, kv = 6 * 2**30, 2**30 // 5
library = os.environ.get("FAKE_LIBRARY") == "1"
budget = int(os.environ.get("FAKE_BUDGET", "").rstrip("M") or 0) * 2**20 if library else args.accelerate_offload
over = weights / budget if budget and budget < weights else 1.0
policy = os.environ.get("FAKE_POLICY", "learned")
if over == 1.0:
    ms = 20.2 if library else 20.0
else:
    mode = "accelerate" if args.accelerate_offload else policy
    ms = {"learned": {1.25: 55.0, 2.0: 100.0}, "demand-lru": {1.25: 150.0, 2.0: 300.0},
          "accelerate": {1.25: float(os.environ.get("FAKE_ACCELERATE_MS", "200")), 2.0: 400.0}}[mode][round(over, 2)]
tokens = list(range(100, 101 + args.new_tokens))
if policy == "demand-lru" and library and os.environ.get("FAKE_BAD_TOKENS") == "1":
    tokens[-1] += 1
timed = args.new_tokens - args.warmup
moved = ({"prefetched": 1e9 * timed, "evicted": 1e9 * timed, "remote_read": 5e8 * timed, "demand": 0}
         if library else None)
for k in range(args.new_tokens):
    print(json.dumps({"step": k, "ms": ms, "token": tokens[k + 1]}))
print("SUMMARY " + json.dumps({
    "median_ms": ms, "token_ms": [ms] * args.new_tokens, "tokens": tokens, "prefill_ms": 300.0,
    "weight_bytes": weights, "kv_bytes": kv, "parameters": weights // 2, "new_tokens": args.new_tokens,
    "warmup": args.warmup, "peak_allocated_bytes": weights + kv, "peak_reserved_bytes": 7 * 2**30,
    "memory_reserved_bytes": 7 * 2**30, "allocator_backend": "cudaMallocAsync", "deterministic": "warn-only",
    "moved_after_warmup": moved,
    "accelerate_placement": ({"gpu_weight_bytes": budget, "cpu_weight_bytes": weights - budget}
                             if args.accelerate_offload else None)}))
'''

LINK = {"h2d_gbps": 50.0, "d2h_gbps": 16.0, "remote_read_gbps": 51.0, "source": "measured"}


class Fakes:
    def __init__(self, folder):
        self.uvmrun = write_script(folder, "uvmrun", FAKE_UVMRUN)
        self.generate = write_script(folder, "generate.py", FAKE_GENERATE)
        self.link_probe = write_script(folder, "link_probe", FAKE_LINK_PROBE)

    def arguments(self, workdir, *extra):
        return ["--uvmrun", self.uvmrun, "--link-probe", self.link_probe, "--generate-script", self.generate,
                "--workdir", workdir, "--json-out", os.path.join(workdir, "infer.json"),
                "--markdown-out", os.path.join(workdir, "infer.md"), *extra]


def summary_line(median_ms, tokens, **extra):
    summary = {"median_ms": median_ms, "token_ms": [median_ms] * 4, "tokens": tokens, "weight_bytes": WEIGHTS,
               "kv_bytes": KV, "new_tokens": 4, "warmup": 2, "moved_after_warmup": None}
    summary.update(extra)
    return "{\"step\": 0}\nSUMMARY " + json.dumps(summary) + "\n"


def fabricated_run(mode, pressure, output, budget_bytes=None):
    record = {"id": f"{mode}-{pressure}", "mode": mode, "pressure": pressure, "budget": "b",
              "budget_bytes": budget_bytes, "status": "ok", "stats": None}
    inference.take_summary(record, output)
    return record


class PureLogic(unittest.TestCase):
    def parse(self, *extra):
        return inference.parse_arguments(["--uvmrun", __file__, "--generate-script", inference.__file__, *extra])

    def test_plan_and_commands(self):
        args = self.parse()
        bench = inference.InferenceBench(args, tempfile.mkdtemp(prefix="infer-test-"))
        plan = inference.make_plan(args)
        self.assertEqual([(e["kind"], e.get("mode"), e.get("pressure")) for e in plan],
                         [("probe", None, None), ("generate", "native", None), ("generate", "default", None),
                          ("generate", "fit", None), ("generate", "native-again", None)]
                         + [("generate", m, p) for p in ("weights/1.25", "weights/2")
                            for m in ("default", "demand-lru", "accelerate")])

        def command(mode, pressure):
            entry = next(e for e in plan if e.get("mode") == mode and e.get("pressure") == pressure)
            return bench.command_for(entry, resolve=False)
        native = command("native", None)
        self.assertNotIn(args.uvmrun, native)
        self.assertEqual(command("native-again", None), native)
        self.assertEqual(native[native.index("--new-tokens") + 1:native.index("--new-tokens") + 4],
                         ["32", "--warmup", "8"])
        self.assertIn("--deterministic", native)
        default = command("default", None)
        self.assertEqual(default[0], args.uvmrun)
        self.assertNotIn("--budget", default[:default.index("--")])
        self.assertEqual(command("fit", None)[3:5], ["--budget", "FIT"])
        lru = command("demand-lru", "weights/2")
        self.assertEqual(lru[3:lru.index("--")], ["--budget", "weights/2", "--policy", "demand-lru",
                                                  "--host-homes", "off"])
        accelerate = command("accelerate", "weights/1.25")
        self.assertNotIn(args.uvmrun, accelerate)
        self.assertEqual(accelerate[-2:], ["--accelerate-offload", "weights/1.25"])
        # The whole plan is about 4 minutes of GPU time.
        self.assertLess(sum(inference.expected_seconds(e, args) for e in plan), 330)

    def test_arguments_are_checked(self):
        for bad in (["--budgets", "weights/0"], ["--budgets", "lots"], ["--modes", "default,learned"],
                    ["--tokens", "4", "--warmup", "4"]):
            with self.assertRaises(SystemExit), redirect_stdout(io.StringIO()), \
                    unittest.mock.patch("sys.stderr", io.StringIO()):
                self.parse(*bad)
        args = self.parse("--budgets", "4G,weights/1.5", "--modes", "accelerate,default",
                          "--workload-args", "--layers 4 --hidden 512")
        self.assertEqual(args.budgets, ["4G", "weights/1.5"])
        self.assertEqual(args.modes, ["accelerate", "default"])
        bench = inference.InferenceBench(args, tempfile.mkdtemp(prefix="infer-test-"))
        command = bench.command_for({"kind": "generate", "mode": "native", "pressure": None})
        self.assertEqual(command[-4:], ["--layers", "4", "--hidden", "512"])
        self.assertEqual(command[command.index("--attention") + 1], "eager")

    def test_attention_reaches_every_run(self):
        args = self.parse("--attention", "sdpa")
        bench = inference.InferenceBench(args, tempfile.mkdtemp(prefix="infer-test-"))
        for mode in ("native", "default", "accelerate"):
            command = bench.command_for({"kind": "generate", "mode": mode, "pressure": None}, resolve=False)
            self.assertEqual(command[command.index("--attention") + 1], "sdpa")

    def test_budgets_and_floors(self):
        self.assertEqual(inference.resolve_budget("weights/2", WEIGHTS + 5), 3 * GIB)
        self.assertEqual(inference.resolve_budget("weights/1.25", WEIGHTS), int(WEIGHTS / 1.25) // MIB * MIB)
        self.assertIsNone(inference.resolve_budget("weights/2", None))
        self.assertEqual(inference.resolve_budget("4G", None), 4 * GIB)
        self.assertEqual(inference.fit_budget(7 * GIB + 1, 1.5), 11 * GIB)
        figures = inference.floors(20.0, 5.1e9, LINK)
        self.assertAlmostEqual(figures["remote_floor_ms"], 20.0 + 100.0)
        self.assertAlmostEqual(figures["migrate_floor_ms"], 20.0 + 5.1e9 / 16e9 * 1e3 + 5.1e9 / 50e9 * 1e3)
        self.assertIsNone(inference.floors(20.0, 5.1e9, {"h2d_gbps": 50.0, "d2h_gbps": 16.0})["remote_floor_ms"])
        self.assertIsNone(inference.floors(None, 5.1e9, LINK)["migrate_floor_ms"])

    def report_of(self, accelerate_ms=200.0, default_ms=55.0, tokens=None, unpressured_ms=20.2):
        native_tokens = [1, 2, 3, 4, 5]
        budget = int(WEIGHTS / 1.25) // MIB * MIB
        timed = {"prefetched": 2e9, "evicted": 2e9, "remote_read": 1e9, "demand": 0}
        runs = [fabricated_run("native", None, summary_line(20.0, native_tokens)),
                fabricated_run("default", None, summary_line(unpressured_ms, native_tokens)),
                fabricated_run("default", "weights/1.25", summary_line(default_ms, tokens or native_tokens,
                                                                       moved_after_warmup=timed), budget),
                fabricated_run("demand-lru", "weights/1.25", summary_line(150.0, native_tokens), budget),
                fabricated_run("accelerate", "weights/1.25", summary_line(
                    accelerate_ms, native_tokens, accelerate_placement={"gpu_weight_bytes": budget,
                                                                        "cpu_weight_bytes": WEIGHTS - budget}),
                    budget)]
        return inference.build_report({"tokens": 4, "warmup": 2}, LINK, runs)

    @staticmethod
    def verdicts(report):
        return {c["what"]: c["verdict"] for c in report["checks"]}

    def test_checks_on_fabricated_summaries(self):
        report = self.report_of()
        verdicts = self.verdicts(report)
        at = "infer default at weights/1.25 (b)"
        self.assertEqual(verdicts["infer default ms/token x native"], "PASS")
        self.assertEqual(verdicts[f"{at} ms/token vs native + S/r"], "PASS")
        self.assertEqual(verdicts[f"{at} vs accelerate"], "PASS")
        self.assertEqual(verdicts[f"{at} vs demand-lru"], "info")
        self.assertEqual(verdicts[f"{at} tokens = native"], "PASS")
        self.assertNotIn("FAIL", verdicts.values())
        row = next(r for r in report["rows"] if r["mode"] == "default" and r["pressure"])
        # S = weights + KV - budget; the remote floor adds S/r to native's 20 ms.
        swapped = WEIGHTS + KV - (int(WEIGHTS / 1.25) // MIB * MIB)
        self.assertEqual(row["swapped_bytes"], swapped)
        self.assertAlmostEqual(row["remote_floor_ms"], 20.0 + swapped / 51e9 * 1e3)
        self.assertAlmostEqual(row["speedup_vs_accelerate"], 200.0 / 55.0)
        self.assertAlmostEqual(row["speedup_vs_demand-lru"], 150.0 / 55.0)
        # Bytes a timed token: the counters' sums over the 2 timed tokens.
        self.assertEqual(row["per_token"], {"prefetched": 1e9, "evicted": 1e9, "remote_read": 5e8, "demand": 0})
        cells = inference.table_cells(report)
        self.assertIn("1.00/1.00/0.50", [c for line in cells for c in line])
        accelerate = next(line for line in cells if line[0] == "accelerate offload")
        self.assertEqual(accelerate[6], f"{(WEIGHTS - int(WEIGHTS / 1.25) // MIB * MIB) / 1e9:.2f} streamed")
        self.assertIn("## Inference", inference.markdown(report))

    def test_targets_that_are_missed_fail(self):
        at = "infer default at weights/1.25 (b)"
        verdicts = self.verdicts(self.report_of(accelerate_ms=100.0))
        self.assertEqual(verdicts[f"{at} vs accelerate"], "FAIL")
        verdicts = self.verdicts(self.report_of(default_ms=80.0))
        self.assertEqual(verdicts[f"{at} ms/token vs native + S/r"], "FAIL")
        verdicts = self.verdicts(self.report_of(unpressured_ms=20.6))
        self.assertEqual(verdicts["infer default ms/token x native"], "FAIL")
        report = self.report_of(tokens=[1, 2, 3, 4, 6])
        self.assertEqual(self.verdicts(report)[f"{at} tokens = native"], "FAIL")
        self.assertEqual(len(report["token_mismatches"]), 1)
        row = next(r for r in report["rows"] if r["mode"] == "default" and r["pressure"])
        self.assertEqual(inference.row_verdict(row, report["checks"]), "FAIL: tokens = native")

    def test_native_twice_tells_whether_its_tokens_are_reproducible(self):
        report = self.report_of()
        same = fabricated_run("native-again", None, summary_line(20.1, [1, 2, 3, 4, 5]))
        other = fabricated_run("native-again", None, summary_line(20.1, [1, 2, 3, 9, 9]))
        runs = report["runs"]
        report = inference.build_report({"tokens": 4, "warmup": 2}, LINK, runs + [same])
        self.assertEqual(self.verdicts(report)["infer native-again tokens = native"], "PASS")
        self.assertEqual(report["token_mismatches"], [])
        report = inference.build_report({"tokens": 4, "warmup": 2}, LINK, runs + [other])
        self.assertEqual(self.verdicts(report)["infer native-again tokens = native"], "FAIL")
        self.assertTrue(report["token_mismatches"][0].startswith("native gave other tokens in its second run"))
        row = next(r for r in report["rows"] if r["mode"] == "native-again")
        self.assertAlmostEqual(row["ratio_native"], 20.1 / 20.0)
        self.assertEqual(next(line for line in inference.table_cells(report) if line[0] == "native, again")[10], "NO")

    def test_a_run_without_its_summary_has_no_figures(self):
        record = fabricated_run("native", None, "Traceback: out of memory\n")
        self.assertIsNone(record["median_ms"])
        self.assertIsNone(record["tokens"])


class WholeRun(unittest.TestCase):
    def run_bench(self, *extra, env=None):
        folder = tempfile.mkdtemp(prefix="infer-test-")
        fakes = Fakes(folder)
        workdir = os.path.join(folder, "out")
        arguments = fakes.arguments(workdir, "--tokens", "6", "--warmup", "2", *extra)
        status, report, printed = run_main(inference.main, arguments, os.path.join(workdir, "infer.json"), env)
        return status, report, printed, workdir

    def test_every_target_met(self):
        status, report, printed, workdir = self.run_bench()
        self.assertEqual(status, 0, printed)
        verdicts = {c["what"]: c["verdict"] for c in report["checks"]}
        self.assertEqual({w: v for w, v in verdicts.items() if v == "FAIL"}, {}, printed)
        self.assertEqual(verdicts["infer: runs finished"], "PASS")
        self.assertEqual(verdicts["infer fit ms/token x native"], "PASS")
        self.assertEqual(verdicts["infer default at weights/2 (3.00G) vs accelerate"], "PASS")
        self.assertEqual(report["link"]["remote_read_gbps"], 51.0)
        self.assertEqual(len(report["runs"]), 10)
        self.assertEqual(verdicts["infer native-again tokens = native"], "PASS")
        # The fit budget: 1.5 x the default run's 26 GiB pool peak (above native's 7 GiB reserved).
        self.assertEqual(report["fit_budget"]["bytes"], 39 * GIB)
        run = next(r for r in report["runs"] if r["mode"] == "default" and r["pressure"] == "weights/2")
        self.assertEqual(run["command"][run["command"].index("--budget") + 1], "3072M")
        run = next(r for r in report["runs"] if r["mode"] == "accelerate" and r["pressure"] == "weights/2")
        self.assertEqual(run["command"][-1], str(3 * GIB))
        self.assertIn("=== inference, weights over the budget", printed)
        with open(os.path.join(workdir, "infer.md"), encoding="utf-8") as markdown:
            self.assertIn("| accelerate offload |", markdown.read())
        with redirect_stdout(io.StringIO()) as rows:
            inference.main(["--rows", os.path.join(workdir, "infer.json")])
        lines = rows.getvalue().splitlines()
        self.assertEqual(len(lines), len(report["checks"]))
        self.assertTrue(all(len(line.split("\t")) == 4 for line in lines))

    def test_tokens_that_differ_fail(self):
        status, report, printed, _ = self.run_bench("--budgets", "weights/2", env={"FAKE_BAD_TOKENS": "1"})
        self.assertEqual(status, 1)
        self.assertIn("tokens differ from native", printed)
        verdicts = {c["what"]: c["verdict"] for c in report["checks"]}
        self.assertEqual(verdicts["infer demand-lru at weights/2 (3.00G) tokens = native"], "FAIL")

    def test_deadline_skips_what_does_not_fit(self):
        status, report, printed, _ = self.run_bench("--deadline-s", "10")
        self.assertEqual(status, 0, printed)
        # Those whose budget needs native's figures are skipped for want of them.
        self.assertEqual({r["status"] for r in report["runs"]}, {"skipped (deadline)", "skipped (no native run)"})
        verdicts = {c["what"]: c["verdict"] for c in report["checks"]}
        self.assertEqual(verdicts["infer default at weights/1.25 (weights/1.25) vs accelerate"], "SKIP")
        self.assertNotIn("FAIL", verdicts.values())

    def test_missing_report_is_a_failed_row(self):
        with redirect_stdout(io.StringIO()) as rows:
            inference.main(["--rows", "/nonexistent/infer.json"])
        self.assertEqual(rows.getvalue(), "inference report\tmissing\tpresent\tFAIL\n")

    def test_dry_run_prints_the_plan(self):
        folder = tempfile.mkdtemp(prefix="infer-test-")
        fakes = Fakes(folder)
        with redirect_stdout(io.StringIO()) as printed:
            status = inference.main(fakes.arguments(os.path.join(folder, "out"), "--dry-run"))
        self.assertEqual(status, 0)
        self.assertIn("accelerate offload at weights/2", printed.getvalue())
        self.assertIn("expected in all", printed.getvalue())


if __name__ == "__main__":
    unittest.main()
