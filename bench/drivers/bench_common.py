"""What the GPU benchmarks share: running a command under a timeout, reading a run's output
and the library's counters, the link probe, `uvmtrace simulate`, sizes and number formats,
and reports written so that an outer timeout never leaves half a file."""

import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
GIB = 1 << 30
# This file lies in bench/drivers/.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN_SCRIPT = os.path.join(REPO_ROOT, "examples", "train_workload.py")
# The PyTorch reference workloads of examples/train_workload.py.
TRAIN_WORKLOADS = {
    "resnet50": ["--model", "resnet50", "--batch", "256"],
    "gpt2-small": ["--model", "gpt2-small", "--batch", "16", "--seq", "1024"],
    # A transformer encoder (BertForMaskedLM, bert-large): about 25 GB at its peak.
    "bert-large": ["--model", "bert-large", "--batch", "32", "--seq", "512"],
}


# The command execute() is waiting for, so that a signal handler can end it (it runs in a
# session of its own, which a signal to this process's group does not reach).
_running = None


def execute(command, timeout, env=None):
    """(status, output, stderr included); status 124 on a timeout, 127 when the command
    cannot start. The command runs in a session of its own so that a timeout ends every
    process it started."""
    global _running
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env=env, start_new_session=True)
    except OSError as error:
        return 127, f"cannot start {command[0]}: {error}\n"
    _running = process
    try:
        output, _ = process.communicate(timeout=timeout)
        return process.returncode, output
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return 124, (output or "") + f"\n(killed after {timeout:.0f} s)\n"
    finally:
        _running = None


def timed_execute(command, timeout, env=None, tail_lines=12):
    """execute(), printing the tail of the output (a training run's step lines are many; the
    tail holds its summary, the library's counters and any error): (status, output, wall_s)."""
    began = time.monotonic()
    status, output = execute(command, timeout, env)
    wall_s = round(time.monotonic() - began, 1)
    print("\n".join(output.splitlines()[-tail_lines:]), flush=True)
    return status, output, wall_s


def run_verdict(status, output, parsed, stats, under_library):
    """A finished run's status (ok, failed or timeout) and, when it failed, the lines that say
    why: it must exit 0 with a median step, and under the library leave active counters."""
    if status == 124:
        return "timeout", None
    if status != 0 or not parsed or parsed.get("median_ms") is None:
        return "failed", output.splitlines()[-20:]
    if under_library and (stats is None or stats.get("active") != 1):
        return "failed", ["the library did not run (no stats file, or it was not active)"]
    return "ok", None


def kill_group(process):
    """SIGKILL to the process group of a process started in a session of its own (every
    process it started), if it is still there."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def stop_running():
    """Ends the command that execute() waits for, with every process it started, if any."""
    process = _running
    if process is not None and process.poll() is None:
        kill_group(process)


def tagged_json_line(output, tag):
    """The JSON after `tag` on the last line that starts with it, or None (also when that JSON
    is malformed: a run cut short mid-line)."""
    prefix = f"{tag} "
    for line in reversed(output.splitlines()):
        if line.startswith(prefix):
            try:
                return json.loads(line[len(prefix):])
            except json.JSONDecodeError:
                return None
    return None


def training_summary(output):
    """The final SUMMARY line of examples/train_workload.py as a dict, or None."""
    return tagged_json_line(output, "SUMMARY")


def last_json_line(output):
    """The last line of the output that is a JSON object, or None."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def read_stats(pattern):
    """The counters of the process that did the work: a job may start helper processes
    that write stats files of their own, so the one with the most launches wins."""
    best = None
    for path in glob.glob(pattern):
        try:
            with open(path, encoding="utf-8") as stats_file:
                stats = json.load(stats_file)
        except (OSError, json.JSONDecodeError) as error:
            print(f"cannot read the stats file {path}: {error}", flush=True)
            continue
        if best is None or stats.get("launches_seen", 0) > best.get("launches_seen", 0):
            best = stats
    return best


def largest_file(pattern):
    paths = glob.glob(pattern)
    return max(paths, key=os.path.getsize) if paths else None


def probe_link_rates(link_probe, timeout=120, mib=None):
    """Runs bench/link_probe: (figures, problem). figures has h2d_gbps and d2h_gbps (the
    fetch and eviction rates), and remote_write_gbps and remote_read_gbps where the probe
    measured them (kernels over host-resident pages); empty, with problem saying why, when
    the probe failed."""
    command = [link_probe] + ([str(mib)] if mib else [])
    print(f"--- link speeds\n$ {' '.join(command)}", flush=True)
    status, output = execute(command, timeout)
    print(output, end="", flush=True)
    figures = last_json_line(output) or {}
    if status == 0 and figures.get("h2d_gbps", 0) > 0 and figures.get("d2h_gbps", 0) > 0:
        return {key: figures[key] for key in ("h2d_gbps", "d2h_gbps", "remote_write_gbps", "remote_read_gbps")
                if figures.get(key, 0) > 0}, None
    return {}, f"the link probe failed with status {status}"


def probe_link(link_probe, timeout=120, mib=None):
    """(h2d_gbps, d2h_gbps, problem) of probe_link_rates; the speeds are None when it failed."""
    figures, problem = probe_link_rates(link_probe, timeout, mib)
    return figures.get("h2d_gbps"), figures.get("d2h_gbps"), problem


def simulate(uvmtrace, trace, budget_bytes, policy, h2d_gbps, d2h_gbps, timeout, repeat_last=0, extra=()):
    """`uvmtrace simulate --json` of one policy at one budget: (result, problem). `extra`: more
    arguments (the tier model's, say)."""
    command = [uvmtrace, "simulate", trace, "--budget", f"{budget_bytes // MIB}M", "--policy", policy, "--json",
               "--link-prefetch-gbps", str(h2d_gbps), "--link-evict-gbps", str(d2h_gbps)] + list(extra)
    if repeat_last:
        command += ["--repeat-last", str(repeat_last)]
    return json_of(command, timeout, "uvmtrace simulate")


def json_of(command, timeout, what):
    """(result, problem) of a command that prints one JSON object: its standard output alone is
    read, so that a line on standard error (a trace cut short, say) does not spoil it."""
    print(f"$ {' '.join(command)}", flush=True)
    try:
        completed = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=timeout)
        result = json.loads(completed.stdout) if completed.returncode == 0 else None
        problem = None if result else f"exit {completed.returncode}: {completed.stderr.strip()}"
    except subprocess.TimeoutExpired:
        result, problem = None, f"timed out after {timeout} s"
    except (OSError, json.JSONDecodeError) as error:
        result, problem = None, str(error)
    if result is None:
        print(f"{what} failed: {problem}", flush=True)
    return result, problem


def hook_ns_per_launch(stats_list):
    """The library's own timing of its launch hook, ns a launch, over stats files or counters
    (hook_ns over hooks_timed, summed); None where none timed a hook."""
    timed = sum(stats.get("hooks_timed") or 0 for stats in stats_list)
    return sum(stats.get("hook_ns") or 0 for stats in stats_list) / timed if timed else None


def rotated(items, round_index):
    """Each round starts with the next item, so that no mode always follows the same one (a
    run can be slowed by what the one before it left behind, such as memory still being freed)."""
    shift = round_index % len(items)
    return list(items[shift:]) + list(items[:shift])


def fmt(value, digits=2):
    return "n/a" if value is None else f"{value:.{digits}f}"


def ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def parse_size(text):
    """Bytes of a size such as 16G, 512M or 1.5GiB (binary units), or None."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    if not match:
        return None
    scale = {"": 1, "K": 1 << 10, "M": MIB, "G": GIB, "T": 1 << 40}[match.group(2).upper()]
    return int(float(match.group(1)) * scale)


class Clock:
    """Time since a benchmark began, and what is left of its deadline (0 or less: none)."""

    def __init__(self, deadline_s):
        self.deadline_s = deadline_s
        self.began = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.began

    def left(self):
        return float("inf") if self.deadline_s <= 0 else self.deadline_s - self.elapsed()


class Bench:
    """A benchmark's runs: its options, working folder and clock, the runs made so far, and how
    one run's command is run and judged."""

    def __init__(self, args, workdir):
        self.args = args
        self.workdir = workdir
        self.clock = Clock(args.deadline_s)
        self.runs = []

    def seconds_left(self):
        return self.clock.left()

    def fits_before_deadline(self, record, run_id, expected, least):
        """Whether a run of about `expected` seconds (and never less than `least`) fits the
        time left; a run that does not is marked skipped and said so. Returns the seconds left
        when it fits, else None."""
        left = self.seconds_left()
        if left >= max(least, expected):
            return left
        record["status"] = "skipped (deadline)"
        print(f"--- {run_id}: not run, {max(left, 0):.0f} s left, about {expected:.0f} s needed", flush=True)
        return None

    def run_probe(self):
        """bench/link_probe's rates into self.link (kept as given, with why, when it fails)."""
        if not self.args.link_probe:
            self.link["source"] = "given (no --link-probe)"
            return
        figures, problem = probe_link_rates(self.args.link_probe, timeout=min(60, max(1, self.seconds_left())),
                                            mib=self.args.link_probe_mib)
        if problem is None:
            self.link = dict(figures, source="measured")
        else:
            self.link["source"] = f"given ({problem})"

    @staticmethod
    def execute_run(record, command, timeout, env):
        """Runs a run's command, printing its tail; its exit status and wall time go into the
        record. Returns the output."""
        record["exit"], output, record["wall_s"] = timed_execute(command, timeout, env)
        return output

    @staticmethod
    def judge_run(record, output, parsed, stats_pattern=None):
        """A finished run's counters (read from stats_pattern, None for a run without the
        library) and its verdict, with the output's last lines when it failed."""
        under_library = stats_pattern is not None
        if under_library:
            record["stats"] = read_stats(stats_pattern)
        record["status"], tail = run_verdict(record["exit"], output, parsed, record["stats"], under_library)
        if tail:
            record["output_tail"] = tail

    @staticmethod
    def print_run_end(record):
        issued = record.get("median_issued_ms")
        print(f"--- {record['status']} (exit {record['exit']}, {record['wall_s']} s, median "
              f"{fmt(record['median_ms'], 3)} ms" + (f", its work queued in {fmt(issued, 3)} ms" if issued else "") + ")",
              flush=True)


def add_output_arguments(parser):
    """The options every run-making benchmark takes for its deadline and its outputs."""
    parser.add_argument("--deadline-s", type=float, default=0,
                        help="seconds for the whole benchmark; runs that no longer fit are skipped (0: none)")
    parser.add_argument("--workdir", help="keep run logs, traces and stats files here (default: a temporary folder)")
    parser.add_argument("--json-out", help="write the report here as JSON")
    parser.add_argument("--markdown-out", help="write the table here as Markdown")


def text_table(cells):
    """Rows of cells (the first row the header) as aligned columns."""
    widths = [max(len(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in cells)


def markdown_table(cells):
    """Rows of cells (the first row the header) as a Markdown table."""
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "|".join(" --- " for _ in cells[0]) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells[1:]])


def print_outcome(problems, loss_mismatches, written):
    """The closing lines of a benchmark: runs that failed, losses that differ and the files
    written. Returns the exit status: 1 when any run failed or any losses differ."""
    for problem in problems:
        print(f"FAILED: {problem}")
    for mismatch in loss_mismatches:
        print(f"LOSSES DIFFER: {mismatch}")
    for path in written:
        if path:
            print(f"written: {path}")
    return 1 if problems or loss_mismatches else 0


def print_report_rows(path, rows_of, name):
    """A driver's --rows: its report's rows as lines what<TAB>value<TAB>goal<TAB>verdict for
    bench/device_run.sh, or one failing row when the report is missing. Returns 0."""
    try:
        with open(path, encoding="utf-8") as handle:
            report = json.load(handle)
    except (OSError, json.JSONDecodeError):
        print(f"{name} report\tmissing\tpresent\tFAIL")
        return 0
    for row in rows_of(report):
        print("\t".join(str(cell) for cell in row))
    return 0


def measure_and_save(bench, plan, save):
    """Makes the plan's runs (bench.measure) and returns the report save(bench) writes; an outer
    timeout's SIGTERM ends the run in progress and keeps what was measured."""
    def stop(signum, _frame):
        stop_running()
        save(bench)
        print(f"stopped by signal {signum}; the report holds the runs finished before", flush=True)
        sys.exit(124)

    signal.signal(signal.SIGTERM, stop)
    bench.measure(plan)
    return save(bench)


def add_link_arguments(parser, fetch_gbps, evict_gbps):
    """The link probe a driver runs first, and the fetch and eviction rates it takes where none ran."""
    parser.add_argument("--link-probe", help="bench/link_probe program: measure the link's rates first (else "
                        "--h2d-gbps and --d2h-gbps)")
    parser.add_argument("--link-probe-mib", type=int, default=2048, help="MiB the link probe moves (default 2048)")
    parser.add_argument("--h2d-gbps", type=float, default=fetch_gbps,
                        help=f"fetch rate f when not measured (default {fetch_gbps:g})")
    parser.add_argument("--d2h-gbps", type=float, default=evict_gbps,
                        help=f"eviction rate e when not measured (default {evict_gbps:g})")


def check_program_paths(parser, required, optional=()):
    """Stops with a usage error where a (label, path) of `required` is not given, or one given
    (of either list) is no file."""
    for label, path in list(required) + [(label, path) for label, path in optional if path]:
        if not path:
            parser.error(f"{label} is required")
        if not os.path.isfile(path):
            parser.error(f"{label} {path}: no such file")


def link_probe_plan_text(args):
    """The link probe's line of a dry run's plan (add_link_arguments' options)."""
    return f"link probe: {args.link_probe or '(none: given rates)'} {args.link_probe_mib}"


def run_driver(args, scratch_prefix, make_bench, make_plan, print_plan, save, closing):
    """A driver's body: its plan made in a work folder (--workdir, else a scratch one that goes
    after), then its closing table and outcome; or the plan printed with --dry-run (exit status 0).
    closing(report) gives the table's (title, cells, note lines, results that differ). Returns the
    exit status: 1 where a run failed or results differ."""
    with tempfile.TemporaryDirectory(prefix=scratch_prefix) as scratch:
        workdir = args.workdir or scratch
        os.makedirs(workdir, exist_ok=True)
        bench = make_bench(args, workdir)
        plan = make_plan(args)
        if args.dry_run:
            print_plan(bench, plan)
            return 0
        report = measure_and_save(bench, plan, save)
    title, cells, note_lines, mismatches = closing(report)
    print_report(title, cells, note_lines, report["checks"])
    problems = [f"{r['id']}: {r['status']}" for r in bench.runs if r["status"] in ("failed", "timeout")]
    return print_outcome(problems, mismatches, (args.json_out, args.markdown_out))


def print_timed_plan(plan, expected_seconds, describe, deadline_s):
    """A dry run's plan: each entry's expected seconds, the running total and what it runs
    (describe(entry)), then the whole against the deadline (0: none)."""
    total = 0.0
    for number, entry in enumerate(plan, 1):
        expected = expected_seconds(entry)
        total += expected
        print(f"{number:2d}. ~{expected:3.0f} s (cumulative {total:4.0f} s)  {describe(entry)}")
    print(f"expected in all: about {total:.0f} s" + (f" of the {deadline_s:g} s deadline" if deadline_s > 0 else ""))


def check_cells(checks):
    return [["what", "value", "goal", "verdict"]] + [[c["what"], c["value"], c["goal"], c["verdict"]] for c in checks]


def print_report(title, cells, note_lines, checks):
    """A benchmark's closing table, its notes and its checks."""
    print(f"\n=== {title}")
    print(text_table(cells))
    for line in note_lines:
        print(line)
    print()
    print(text_table(check_cells(checks)))


def check_rows(report):
    """A written report's checks as rows what, value, goal, verdict (for print_report_rows)."""
    return [[str(c[key]).replace("\t", " ") for key in ("what", "value", "goal", "verdict")] for c in report["checks"]]


def write_atomically(path, text):
    """Writes the whole text or leaves the file as it was: a run killed mid-write keeps the
    last complete report."""
    if not path:
        return
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(partial, path)
