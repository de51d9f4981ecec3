#!/usr/bin/env python3
"""GPU tests of libuvmprefetch: run real CUDA programs under uvmrun and check the result.

Each subcommand runs one workload and checks both its own output (is the result right?)
and the library's counters, read from the JSON file that UVMP_STATS_FILE makes the
library write at exit (did it convert the allocations and see the launches?).

    check_gpu.py layers --uvmrun U --lib L --binary B [--budget SIZE] [--mb N]
    check_gpu.py resnet --uvmrun U --lib L --script examples/train_resnet.py
    check_gpu.py cupy   --uvmrun U --lib L --script examples/cupy_demo.py

Exit status: 0 pass, 1 fail, 77 skipped (no GPU here, or the workload's Python
package is missing), 2 bad arguments.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_SKIP = 77

# Every counter that says a device allocation was left as device memory. Pinned host
# memory (passthrough_host) is not a device allocation and is reported, not checked.
DEVICE_PASSTHROUGH_COUNTERS = (
    "passthrough_vmm",
    "passthrough_capture",
    "passthrough_managed_failed",
    "passthrough_inactive",
    "guard_refusals",
)
MIN_LAUNCH_COVERAGE = 0.99


def gpu_present():
    """True when nvidia-smi lists at least one GPU."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        listing = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listing.returncode == 0 and "GPU" in listing.stdout


def python_module_present(name):
    probe = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True, text=True)
    return probe.returncode == 0


class Checks:
    """Collects named pass/fail checks and prints each as it is made."""

    def __init__(self, title):
        self.title = title
        self.failed = []

    def expect(self, condition, description):
        print(f"  [{'ok' if condition else 'FAIL'}] {description}", flush=True)
        if not condition:
            self.failed.append(description)
        return condition

    def finish(self):
        if self.failed:
            print(f"{self.title}: FAIL ({len(self.failed)} of the checks above failed)", flush=True)
            return EXIT_FAIL
        print(f"{self.title}: PASS", flush=True)
        return EXIT_PASS


def workload_environment(args):
    """The environment of every run, native or not, so the two differ only by the library.

    UVMP_LIBRARY makes uvmrun preload exactly the library under test. PyTorch's allocator
    setting is fixed because uvmrun turns expandable segments off for its runs.
    """
    env = dict(os.environ)
    env["UVMP_LIBRARY"] = os.path.abspath(args.lib)
    env.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:False")
    return env


def run_logged(command, timeout, env):
    """Runs a command, echoes its output, returns (exit status, stdout, pid)."""
    print("$ " + " ".join(command), flush=True)
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    except OSError as error:
        print(f"cannot start {command[0]}: {error}", flush=True)
        return 127, "", None
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        print(output, end="", flush=True)
        print(f"timed out after {timeout} s", flush=True)
        return 124, output, process.pid
    print(output, end="", flush=True)
    return process.returncode, output, process.pid


def run_under_uvmrun(args, command, workdir, timeout):
    """Runs command under uvmrun with a stats file; returns (status, output, stats or None).

    uvmrun execs the command, so the process id we started is the workload's own, and
    the library names the stats file after it (%p). Any other process that inherits the
    preload writes a file of its own instead of overwriting this one.
    """
    stats_pattern = os.path.join(workdir, "stats.%p.json")
    uvmrun_command = [args.uvmrun, "--budget", args.budget, "--stats-file", stats_pattern, "--"] + command
    status, output, pid = run_logged(uvmrun_command, timeout, workload_environment(args))
    stats = None
    if pid is not None:
        stats_path = os.path.join(workdir, f"stats.{pid}.json")
        written = sorted(name for name in os.listdir(workdir) if name.startswith("stats."))
        if not os.path.exists(stats_path) and len(written) == 1:
            # uvmrun ran the command as a child rather than exec'ing it: the only file is its.
            print(f"no stats file for pid {pid}; using the only one written, {written[0]}", flush=True)
            stats_path = os.path.join(workdir, written[0])
        if os.path.exists(stats_path):
            with open(stats_path, encoding="utf-8") as stats_file:
                try:
                    stats = json.load(stats_file)
                except json.JSONDecodeError as error:
                    print(f"stats file {stats_path} is not valid JSON: {error}", flush=True)
            print(f"library counters: {json.dumps(stats, sort_keys=True)}", flush=True)
        else:
            print(f"no stats file {stats_path} (stats files there: {written})", flush=True)
    return status, output, stats


def check_conversion(checks, stats, min_allocations):
    """The checks every workload shares: the library was active and converted everything."""
    if not checks.expect(stats is not None, "the library wrote its stats file (it was loaded)"):
        return
    checks.expect(stats.get("active") == 1, f"library active (active={stats.get('active')})")
    converted = stats.get("allocs_converted", 0)
    checks.expect(converted >= min_allocations,
                  f"allocs_converted={converted} >= {min_allocations} device allocations")
    for counter in DEVICE_PASSTHROUGH_COUNTERS:
        checks.expect(stats.get(counter, -1) == 0, f"{counter}={stats.get(counter)} is 0")
    print(f"  [info] passthrough_host={stats.get('passthrough_host')} "
          f"allocs_passed_through={stats.get('allocs_passed_through')}", flush=True)


def check_launch_coverage(checks, stats):
    """Launches are read once the job has gone past its budget; within it, none is."""
    if stats is None:
        return
    seen = stats.get("launches_seen", 0)
    with_access = stats.get("launches_with_access", 0)
    if stats.get("bytes_converted_peak", 0) <= stats.get("budget_bytes", 0):
        checks.expect(seen > 0 and with_access == 0,
                      f"within the budget no launch was read: launches_with_access={with_access} of {seen}")
        return
    coverage = with_access / seen if seen else 0.0
    checks.expect(seen > 0 and coverage >= MIN_LAUNCH_COVERAGE,
                  f"launches_with_access/launches_seen = {with_access}/{seen} = {coverage:.4f} "
                  f">= {MIN_LAUNCH_COVERAGE}")


def command_layers(args, workdir):
    checks = Checks(f"layers ({os.path.basename(args.binary)}, budget {args.budget})")
    command = [args.binary, "--mb", str(args.mb), "--steps", str(args.steps)]
    status, output, stats = run_under_uvmrun(args, command, workdir, args.timeout)
    checks.expect(status == 0, f"exit status {status} is 0 (result verified against the CPU reference)")
    checks.expect("RESULT: PASS" in output, "the program printed RESULT: PASS")
    malloc_match = re.search(r"^cudaMalloc calls: (\d+)$", output, re.MULTILINE)
    if checks.expect(malloc_match is not None, "the program printed its number of cudaMalloc calls"):
        check_conversion(checks, stats, int(malloc_match.group(1)))
    check_launch_coverage(checks, stats)
    return checks.finish()


def parse_losses(output):
    for line in reversed(output.splitlines()):
        if line.startswith("LOSSES "):
            try:
                return json.loads(line[len("LOSSES "):])
            except json.JSONDecodeError:
                return None
    return None


def command_resnet(args, workdir):
    if not python_module_present("torchvision"):
        print("skipped: torch/torchvision cannot be imported by " + sys.executable)
        return EXIT_SKIP
    checks = Checks("resnet")
    command = [sys.executable, args.script, "--steps", str(args.steps)]
    native_status, native_output, _ = run_logged(command, args.timeout, workload_environment(args))
    lib_status, lib_output, stats = run_under_uvmrun(args, command, workdir, args.timeout)
    native_losses = parse_losses(native_output)
    lib_losses = parse_losses(lib_output)
    checks.expect(native_status == 0 and native_losses is not None,
                  f"native run finished (exit {native_status}) and printed LOSSES")
    checks.expect(lib_status == 0 and lib_losses is not None,
                  f"run under uvmrun finished (exit {lib_status}) and printed LOSSES")
    checks.expect(native_losses is not None and len(native_losses) == args.steps,
                  f"{args.steps} losses recorded")
    checks.expect(native_losses is not None and native_losses == lib_losses,
                  f"losses identical: native {native_losses} vs under uvmrun {lib_losses}")
    check_conversion(checks, stats, 1)
    check_launch_coverage(checks, stats)
    return checks.finish()


def command_cupy(args, workdir):
    if not python_module_present("cupy"):
        print("skipped: cupy cannot be imported by " + sys.executable)
        return EXIT_SKIP
    checks = Checks("cupy")
    status, output, stats = run_under_uvmrun(args, [sys.executable, args.script], workdir, args.timeout)
    checks.expect(status == 0, f"exit status {status} is 0")
    checks.expect(re.search(r"^OK$", output, re.MULTILINE) is not None, "the script printed OK")
    check_conversion(checks, stats, 1)
    return checks.finish()


def parse_arguments():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--uvmrun", required=True, help="path of the uvmrun program")
    common.add_argument("--lib", required=True, help="path of libuvmprefetch.so (given to uvmrun as UVMP_LIBRARY)")
    common.add_argument("--budget", default="16G", help="uvmrun --budget (default 16G)")
    common.add_argument("--timeout", type=int, default=300, help="seconds per workload run (default 300)")
    common.add_argument("--keep", action="store_true", help="keep the working folder with the stats files")

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    subcommands = parser.add_subparsers(dest="subcommand", required=True)
    layers = subcommands.add_parser("layers", parents=[common], help="the CUDA C++ layers example")
    layers.add_argument("--binary", required=True, help="layers_static or layers_shared")
    layers.add_argument("--mb", type=int, default=1024, help="model size in MiB (default 1024)")
    layers.add_argument("--steps", type=int, default=10, help="forward passes (default 10)")
    layers.set_defaults(run=command_layers)
    resnet = subcommands.add_parser("resnet", parents=[common], help="resnet18 training, native vs uvmrun")
    resnet.add_argument("--script", required=True, help="examples/train_resnet.py")
    resnet.add_argument("--steps", type=int, default=5, help="training steps (default 5)")
    resnet.set_defaults(run=command_resnet)
    cupy = subcommands.add_parser("cupy", parents=[common], help="the CuPy demo under uvmrun")
    cupy.add_argument("--script", required=True, help="examples/cupy_demo.py")
    cupy.set_defaults(run=command_cupy)
    return parser.parse_args()


def main():
    args = parse_arguments()
    if not gpu_present():
        print("skipped: no GPU (nvidia-smi -L lists none)")
        return EXIT_SKIP
    for label, path in (("uvmrun", args.uvmrun), ("library", args.lib),
                        ("binary", getattr(args, "binary", None)), ("script", getattr(args, "script", None))):
        if path is not None and not os.path.isfile(path):
            print(f"check_gpu.py: {label} not found: {path}", file=sys.stderr)
            return 2
    workdir = tempfile.mkdtemp(prefix=f"uvmp-gpu-{args.subcommand}-")
    try:
        return args.run(args, workdir)
    finally:
        if args.keep:
            print(f"stats files kept in {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
