#!/usr/bin/env python3
"""Training steps of a reference workload, timed, for traces and benchmarks.

Models: resnet50 (torchvision) and gpt2-small / gpt2-medium / gpt2-large (transformers,
random weights, random token ids). bf16 autocast, AdamW. Prints one JSON line per step
and a final JSON summary line; under libuvmprefetch.so it also reports the kernel
launches of each step (from uvmp_get_stats) and marks iterations when asked.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time


class LibraryCounters:
    """The library's counters when it is preloaded, else nothing."""

    class Stats(ctypes.Structure):
        _fields_ = [("struct_size", ctypes.c_uint32), ("active", ctypes.c_uint32)] + [
            (name, ctypes.c_uint64)
            for name in (
                "allocs_converted bytes_converted bytes_converted_live bytes_converted_peak "
                "frees_converted allocs_passed_through bytes_passed_through passthrough_vmm "
                "passthrough_host passthrough_capture passthrough_managed_failed passthrough_inactive "
                "guard_refusals launches_seen launches_with_access access_entries populate_calls "
                "bytes_populated bytes_prefetched bytes_evicted iterations budget_bytes "
                "guard_limit_bytes trace_records_written trace_records_dropped launches_unplanned"
            ).split()
        ]

    def __init__(self):
        process = ctypes.CDLL(None)
        try:
            self._get = process.uvmp_get_stats
            self._mark = process.uvmp_mark_iteration
        except AttributeError:
            self._get = None
            self._mark = None

    @property
    def present(self):
        return self._get is not None

    def read(self):
        if not self._get:
            return None
        s = self.Stats()
        s.struct_size = ctypes.sizeof(s)
        if self._get(ctypes.byref(s)) != 0:
            return None
        return {name: getattr(s, name) for name, _ in s._fields_}

    def mark_iteration(self):
        if self._mark:
            self._mark()


def build(args, torch):
    if args.model == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(num_classes=1000)
        x = torch.randn(args.batch, 3, 224, 224, device="cuda")
        y = torch.randint(0, 1000, (args.batch,), device="cuda")

        def loss_fn():
            return torch.nn.functional.cross_entropy(model(x), y)

    else:
        from transformers import GPT2Config, GPT2LMHeadModel

        sizes = {"gpt2-small": (12, 768, 12), "gpt2-medium": (24, 1024, 16), "gpt2-large": (36, 1280, 20)}
        layers, width, heads = sizes[args.model]
        config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_positions=args.seq)
        model = GPT2LMHeadModel(config)
        ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")

        def loss_fn():
            return model(input_ids=ids, labels=ids).loss

    model = model.cuda()
    return model, loss_fn


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="resnet50",
                        choices=["resnet50", "gpt2-small", "gpt2-medium", "gpt2-large"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mark-iterations", action="store_true",
                        help="call uvmp_mark_iteration after each step")
    parser.add_argument("--deterministic", action="store_true",
                        help="deterministic kernels, so that runs can be compared loss for loss")
    args = parser.parse_args()

    if args.deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    import torch

    if args.deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)

    torch.manual_seed(args.seed)
    torch.backends.cudnn.benchmark = False
    counters = LibraryCounters()
    model, loss_fn = build(args, torch)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times, losses, launches = [], [], []
    last = counters.read()
    for step in range(args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        elapsed_ms = (time.perf_counter() - start) * 1e3
        if args.mark_iterations:
            counters.mark_iteration()
        now = counters.read()
        step_launches = now["launches_seen"] - last["launches_seen"] if now else None
        last = now
        times.append(elapsed_ms)
        losses.append(loss.item())
        launches.append(step_launches)
        print(json.dumps({"step": step, "ms": round(elapsed_ms, 3), "loss": losses[-1],
                          "launches": step_launches}), flush=True)
    steady = times[args.warmup:] or times
    summary = {
        "model": args.model, "batch": args.batch, "steps": args.steps,
        "median_ms": statistics.median(steady), "losses": losses, "launches_per_step": launches,
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "library": counters.present,
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
