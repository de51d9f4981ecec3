#!/usr/bin/env python3
"""Training steps of a reference workload, timed, for traces and benchmarks.

Models: resnet50 (torchvision) and gpt2-small / gpt2-medium / gpt2-large (transformers,
random weights, random token ids). bf16 autocast, AdamW. Prints one JSON line per step
and a final JSON summary line; under libuvmprefetch.so it also reports the kernel
launches of each step (from uvmp_get_stats) and marks iterations when asked.
"""
import argparse
import json
import os
import statistics
import sys
import time

from uvmp_library import LibraryCounters


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
        # cuDNN attention's backward takes its deterministic algorithm only when determinism is
        # strict. resnet50 cannot be strict: adaptive average pooling has no deterministic
        # backward kernel (its results repeat run to run all the same).
        torch.use_deterministic_algorithms(True, warn_only=args.model == "resnet50")

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
