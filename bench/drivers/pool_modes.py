"""The managed-pool benchmark's modes (what each runs, what it is simulated as, its targets and
expected times) and its plan: which runs are made, in which order, and how long each should take."""

import os

from bench_common import GIB, rotated

ASYNC_BACKEND = "backend:cudaMallocAsync"
ALLOC_CONF_NAMES = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
UNPRESSURED_MODES = ("native", "default", "fit")
# Labels of the modes; "default" under pressure is labelled apart (mode_label).
MODE_LABELS = {"native": "native", "default": "uvmrun defaults", "fit": "uvmrun, fit budget",
               "record": "recording (none)", "learned": "learned, migration only", "demand-lru": "demand-lru",
               "save-on-cpu": "PyTorch save_on_cpu, capped",
               "offload": "activations offloaded, overlapped, capped",
               "host-homes": "learned, host homes from the trace",
               "best-fit": "default, pool placing by best fit", "no-trial": "default, no remote trial",
               "no-layout": "default, no step layout",
               "any-streaming": "default, every timed kernel a streaming candidate"}
DEFAULT_PRESSURE_LABEL = "default (learned, homes learned in the run)"
# Runs without the library: the job natively, and offloading of the tensors saved for backward
# under a cap (set_per_process_memory_fraction): PyTorch's save_on_cpu (what a user can do instead
# with a one-line change), and the offload mode, copies overlapped with compute and fetched back
# ahead of need (examples/activation_offload.py: what a user can do with their best code change,
# the alternative to beat).
CAPPED_OPTIONS = {"save-on-cpu": "--save-on-cpu", "offload": "--offload-activations"}
WITHOUT_LIBRARY = ("native",) + tuple(CAPPED_OPTIONS)
# Pressure modes the library runs, each checked against the simulator's prediction: default
# (uvmrun with a budget and nothing else), host-homes (homes from the recorded trace), learned and
# demand-lru (migration only).
LIBRARY_PRESSURE_MODES = ("default", "best-fit", "no-trial", "no-layout", "any-streaming", "host-homes", "learned",
                          "demand-lru")
PRESSURE_MODES = LIBRARY_PRESSURE_MODES + tuple(CAPPED_OPTIONS)
DEFAULT_PRESSURE_MODES = "default,learned,demand-lru,save-on-cpu"
# The library's default with one setting changed, to show what that setting gains. any-streaming
# puts the streaming line at 1 GB/s: every timed kernel's operands become candidates, so that the
# home search and the remote trial alone, not the timing prior, decide what reads remotely.
DEFAULT_WITH = {"best-fit": {"UVMP_POOL_PLACEMENT": "best-fit"}, "no-trial": {"UVMP_REMOTE_TRIAL": "0"},
                "no-layout": {"UVMP_STEP_LAYOUT": "off"}, "any-streaming": {"UVMP_STREAMING_GBPS": "1"}}
# What uvmrun is told in each library pressure mode besides the budget (the default's variants:
# nothing, their setting goes in the environment).
PRESSURE_OPTIONS = {"default": [], **{mode: [] for mode in DEFAULT_WITH},
                    "learned": ["--policy", "learned", "--host-homes", "off"],
                    "demand-lru": ["--policy", "demand-lru", "--host-homes", "off"]}
# uvmtrace simulate --homes for each library pressure mode (None: the simulator's default, every
# home on the GPU).
SIMULATED_HOMES = {"default": "auto", **{mode: "auto" for mode in DEFAULT_WITH}, "host-homes": "host",
                   "learned": None, "demand-lru": None}
# uvmtrace simulate --placement for each library pressure mode that is not the simulator's default
# (over-dead): auto weighs a layout planned for the learned step as the library does
# (UVMP_STEP_LAYOUT=auto); best-fit places blocks by best fit alone (UVMP_POOL_PLACEMENT=best-fit).
SIMULATED_PLACEMENT = {"default": "auto", "no-trial": "auto", "any-streaming": "auto", "best-fit": "best-fit"}
# Modes that read the recorded trace: none of them can run without it.
NEEDS_TRACE = ("host-homes",)
DEFAULT_RATIO_GOAL = 1.05
FIT_RATIO_GOAL = 1.02
MEMORY_TOLERANCE = 0.05
SIM_ERROR_GOAL = 0.25
# The default mode's targets under pressure: its step below the migrate floor S/e + S/f, at least
# this many times faster than demand-lru's, and faster than save_on_cpu's by the factor of its
# budget (at least 1.5x at peak/1.25, merely faster elsewhere).
DEFAULT_VS_DEMAND_LRU = 2.0
DEFAULT_VS_SAVE_ON_CPU = {"peak/1.25": 1.5}
# ... and faster than the overlapped offload's, where it ran.
DEFAULT_VS_OFFLOAD = 1.0
# Learning: the default is steady within this many steps of the step in which the job first went
# over its budget, and no step before is slower than demand-lru's median at the same budget. A
# run is steady from the first step from which every step runs within STEADY_TOLERANCE of the
# median of its last three (the spread of a step is a few percent; a single spike of the host
# between two steady steps does not undo a settled run).
STEADY_WITHIN_STEPS = 3
STEADY_TOLERANCE = 0.10
# Migration alone (learned, homes off) moves at most this many S each way a steady step.
MIGRATION_S_GOAL = 1.25
# Below this many seconds left a run cannot even start its interpreter and CUDA context.
MIN_RUN_SECONDS = 20
# Expected seconds of a run until one of its kind has been measured, from pool runs 7 and 8
# (docs/benchmarks.md): start-up (interpreter, CUDA context, model) took 15-24 s for GPT-2 small
# (15-21 s under pressure) and 10-16 s for resnet50 b256; unpressured steps 0.13 and 0.12 s; under
# pressure 0.4-2.4 s for GPT-2 and 0.3-1.0 s for resnet50 (from peak/1.25 to peak/2, host homes to
# demand-lru: the figures below are about their mean); save_on_cpu's first step 13-18 s and 9-11 s
# (pinning host memory), then 1.3 and 1.1 s; homes from a trace or learned in the run cost a few
# seconds more once (reading, recording, the home search).
# bert-large (batch 32, seq 512, about 25 GB at its peak) is not measured yet: its figures are
# estimates from its size (about 2.5x GPT-2 small's work a step). The offload mode is expected to
# take save_on_cpu's times at most.
STARTUP_S = {"gpt2-small": 18.0, "resnet50": 12.0, "bert-large": 22.0}
STEP_S = {"gpt2-small": 0.13, "resnet50": 0.12, "bert-large": 0.35}
PRESSURE_STEP_S = {"gpt2-small": 1.3, "resnet50": 0.6, "bert-large": 2.5}
SAVE_ON_CPU_FIRST_S = {"gpt2-small": 18.0, "resnet50": 11.0, "bert-large": 25.0}
SAVE_ON_CPU_STEP_S = {"gpt2-small": 1.4, "resnet50": 1.2, "bert-large": 2.5}
HOME_SEARCH_S = 3.0
# Link rates for the floor and the simulator when the probe fails (H200, 4 GiB moves).
FALLBACK_H2D_GBPS = 49.0
FALLBACK_D2H_GBPS = 15.0
FIT_FALLBACK_BYTES = 48 * GIB


def clean_environment(lib, also_drop=()):
    """The caller's environment without the library's settings and PyTorch's allocator's (each
    run sets its own), and with UVMP_LIBRARY where --lib names the library."""
    base = {name: value for name, value in os.environ.items()
            if not name.startswith("UVMP_") and name not in ALLOC_CONF_NAMES and name not in also_drop}
    if lib:
        base["UVMP_LIBRARY"] = os.path.abspath(lib)
    return base


# ---------------------------------------------------------------- the plan

def make_plan(args):
    """The runs in the order they are made: dicts with kind (probe, train, simulate), and for
    training runs workload, mode, round, warmup and steps."""
    def train(workload, mode, round_index=None, pressure=None):
        if pressure is not None:
            warmup, steps = args.pressure_warmup, args.pressure_steps
        elif mode == "record":
            warmup, steps = args.record_warmup, args.record_steps
        else:
            warmup, steps = args.warmup, args.steps
        return {"kind": "train", "workload": workload, "mode": mode, "round": round_index,
                "warmup": warmup, "steps": warmup + steps, "pressure": pressure}

    plan = [{"kind": "probe"}]
    plan += [train(w, mode, 1) for w in args.workloads for mode in UNPRESSURED_MODES]
    if args.pressure_workload:
        if args.pressure_workload not in args.workloads:
            plan.append(train(args.pressure_workload, "native", 1))  # its peak live gives S
        plan.append(train(args.pressure_workload, "record"))
        for pressure in args.pressure_budgets:
            plan.append({"kind": "simulate", "workload": args.pressure_workload, "pressure": pressure})
            plan += [train(args.pressure_workload, policy, pressure=pressure) for policy in args.pressure_policies]
    for round_index in range(1, args.rounds):
        plan += [train(w, mode, round_index + 1) for w in args.workloads
                 for mode in rotated(UNPRESSURED_MODES, round_index)]
    return plan


def measured_key(entry):
    """What a run's measured time stands for: its workload and mode, and whether under pressure
    (the default mode runs with and without a budget)."""
    return entry["workload"], entry["mode"], entry.get("pressure") is not None


def deadline_cut(status, timeout, limit):
    """A run that ran out of time because the call's deadline, not the run's own limit, set its
    timeout was not made for want of time, like one skipped: its targets are SKIP, not FAIL."""
    return "cut (deadline)" if status == "timeout" and timeout < limit else status


def expected_seconds(entry, measured):
    """How long a run should take: the last measured run of its workload and mode, else the
    figures of earlier benchmarks."""
    if entry["kind"] == "probe":
        return 15.0
    if entry["kind"] == "simulate":
        return 5.0
    known = measured.get(measured_key(entry))
    if known:
        return known * 1.1
    workload, mode = entry["workload"], entry["mode"]
    seconds = STARTUP_S[workload]
    if mode in CAPPED_OPTIONS:
        seconds += SAVE_ON_CPU_FIRST_S[workload] + (entry["steps"] - 1) * SAVE_ON_CPU_STEP_S[workload]
    elif entry.get("pressure") is not None:
        seconds += entry["steps"] * PRESSURE_STEP_S[workload]
        if mode in ("default", "host-homes") or mode in DEFAULT_WITH:
            seconds += HOME_SEARCH_S
    else:
        seconds += entry["steps"] * STEP_S[workload]
    if mode == "record":
        seconds += 5.0  # CUPTI and the trace file
    return seconds
