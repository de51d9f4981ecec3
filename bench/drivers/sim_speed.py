#!/usr/bin/env python3
"""How fast `uvmtrace simulate` replays long traces, in launch records per second of CPU time.

Three traces of about a million launches each, every policy, each run REPEATS times on one
CPU; the table gives medians. "prepare" is reading the file and building the chunk schedule
(shared by all the simulations of a sweep), "replay" one policy's simulation, "whole" both:
one `uvmtrace simulate` call. CPU times come from the tool's own --timing lines.

  synthetic  `uvmtrace synth --steps 20000 --layers 8 --marks`: 980 008 launches
  gpt2       the bundled GPT-2 trace with --repeat-last 800: 957 417 launches
  resnet50   the bundled ResNet-50 trace with --repeat-last 300: 299 965 launches

With --repeat-last the copies are made in memory and counted in "prepare".

Usage: bench/drivers/sim_speed.py --uvmtrace PATH [--repeats 3] [--cpu N] [--json OUT]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
POLICIES = ["demand-lru", "learned", "belady"]
PREPARED = re.compile(r"^prepared\s+(\d+) launches in ([\d.]+) s CPU", re.M)
SIMULATED = re.compile(r"^simulated (\S+)\s+(\d+) launches in ([\d.]+) s CPU", re.M)


def run_once(uvmtrace, trace, repeat_last, policy, cpu):
    command = [uvmtrace, "simulate", trace, "--budget", "66%", "--policy", policy, "--timing"]
    if repeat_last:
        command += ["--repeat-last", str(repeat_last)]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu)] + command
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        sys.exit(f"sim_speed: {' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    prepared = PREPARED.search(done.stdout)
    simulated = SIMULATED.search(done.stdout)
    if not prepared or not simulated:
        sys.exit(f"sim_speed: no timing lines in the output of {' '.join(command)}:\n{done.stdout}")
    return int(prepared.group(1)), float(prepared.group(2)), float(simulated.group(3))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uvmtrace", required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu", type=int, help="run every simulation on this CPU (taskset)")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    if args.repeats < 1:
        sys.exit("sim_speed: --repeats must be at least 1")

    with tempfile.TemporaryDirectory() as scratch:
        synthetic = os.path.join(scratch, "synthetic-1m.uvmt")
        subprocess.run([args.uvmtrace, "synth", "-o", synthetic, "--steps", "20000", "--layers", "8", "--marks"],
                       check=True, capture_output=True)
        traces = [
            ("synthetic", synthetic, 0),
            ("gpt2", os.path.join(REPO, "examples/traces/gpt2-small-b16.uvmt"), 800),
            ("resnet50", os.path.join(REPO, "examples/traces/resnet50-b256.uvmt"), 300),
        ]
        rows = []
        for name, path, repeat_last in traces:
            for policy in POLICIES:
                runs = [run_once(args.uvmtrace, path, repeat_last, policy, args.cpu) for _ in range(args.repeats)]
                launches = runs[0][0]
                prepare = statistics.median(r[1] for r in runs)
                replay = statistics.median(r[2] for r in runs)
                whole = statistics.median(r[1] + r[2] for r in runs)
                rows.append({"trace": name, "launches": launches, "policy": policy, "repeats": args.repeats,
                             "prepare_s": prepare, "replay_s": replay, "whole_s": whole,
                             "prepare_mps": launches / prepare / 1e6, "replay_mps": launches / replay / 1e6,
                             "whole_mps": launches / whole / 1e6})

    print(f"simulation speed, M launch records per CPU second, median of {args.repeats}"
          + (f", on CPU {args.cpu}" if args.cpu is not None else ""))
    print("| trace | launches | policy | prepare | replay | whole call |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['trace']} | {r['launches']} | {r['policy']} | {r['prepare_mps']:.2f} | {r['replay_mps']:.2f} | "
              f"{r['whole_mps']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
