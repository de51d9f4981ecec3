#!/usr/bin/env python3
"""Step time of torchvision resnet50 training (bf16 autocast, AdamW, random data).

One run of the workload that bench/drivers/overhead.py times natively and under uvmrun.
Each timed step is bracketed by CUDA events and followed by a synchronize, so a step's
time is the GPU time of that step alone.

Usage: overhead_resnet50.py [--batch 64] [--warmup 5] [--steps 30]
Prints one line per step and, last, one JSON line:
  {"batch": .., "warmup": .., "step_ms": [...], "median_ms": .., "issue_ms": [...] (host time to
   issue each step), "median_issue_ms": .., "peak_allocated_bytes": ..,
   "peak_reserved_bytes": ..}
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from uvmp_library import iteration_marker  # noqa: E402

NUM_CLASSES = 1000
IMAGE_SIZE = 224
MIN_TIMED_STEPS = 20


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=64, help="images per step (default 64)")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    parser.add_argument("--steps", type=int, default=30, help=f"timed steps (default 30, at least {MIN_TIMED_STEPS})")
    args = parser.parse_args()
    if args.batch < 1 or args.warmup < 0:
        parser.error("--batch must be at least 1 and --warmup at least 0")
    if args.steps < MIN_TIMED_STEPS:
        parser.error(f"--steps must be at least {MIN_TIMED_STEPS} for a stable median")
    return args


def main():
    args = parse_arguments()
    if not torch.cuda.is_available():
        print("overhead_resnet50.py: no CUDA device visible to torch", file=sys.stderr)
        return 1
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None, num_classes=NUM_CLASSES).cuda().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    images = torch.randn(args.batch, 3, IMAGE_SIZE, IMAGE_SIZE, device="cuda")
    labels = torch.randint(0, NUM_CLASSES, (args.batch,), device="cuda")
    mark_iteration = iteration_marker()

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        mark_iteration()

    for _ in range(args.warmup):
        train_step()
    torch.cuda.synchronize()

    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    step_ms = []
    # Host time to issue a step: when it comes near the GPU time, the step is bound by the
    # CPU, and a slower or busier host (or a costlier launch hook) shows in the step time.
    issue_ms = []
    for step in range(args.steps):
        issue_start = time.perf_counter()
        start.record()
        train_step()
        end.record()
        issue_ms.append((time.perf_counter() - issue_start) * 1e3)
        torch.cuda.synchronize()
        step_ms.append(start.elapsed_time(end))
        print(f"step {step}: {step_ms[-1]:.3f} ms (issued in {issue_ms[-1]:.3f} ms)", flush=True)

    result = {
        "batch": args.batch,
        "warmup": args.warmup,
        "step_ms": step_ms,
        "median_ms": statistics.median(step_ms),
        "issue_ms": issue_ms,
        "median_issue_ms": statistics.median(issue_ms),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
    }
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
