#!/usr/bin/env python3
"""Training steps of a reference workload, timed, for traces and benchmarks.

Models: resnet50 (torchvision), gpt2-small / gpt2-medium / gpt2-large and bert-large
(transformers: GPT2LMHeadModel, BertForMaskedLM; random weights, random token ids). bf16
autocast, AdamW. What a PyTorch user can do instead of the library under a memory cap:
--save-on-cpu (PyTorch's save_on_cpu) or --offload-activations (saved activations copied to
pinned host memory on a side stream and fetched back ahead of need in the backward, as
torchtune's and Megatron's activation offloading do). Prints one JSON line per step
and a final JSON summary line ("SUMMARY {...}": step times, losses, PyTorch's memory
figures and which allocator backend ran); under libuvmprefetch.so it also reports the
kernel launches and the bytes the library moved in each step (from uvmp_get_stats),
those bytes summed over the steps after warm-up, and marks iterations when asked.
"""
import argparse
import contextlib
import json
import os
import statistics
import sys
import time

from uvmp_library import LibraryCounters

# The library's counters of bytes it moved (and of host-homed bytes kernels named), by the names
# the step lines give them.
MOVED_COUNTERS = {"evicted": "bytes_evicted", "evicted_dead": "bytes_evicted_dead", "prefetched": "bytes_prefetched",
                  "populated": "bytes_populated", "demand": "bytes_demand_estimated", "frees": "frees_converted",
                  "remote_written": "remote_write_bytes_named", "remote_read": "remote_read_bytes_named"}


# Where the application's thread spent a step under the library: sums of sampled
# launch-call and hook times (with their sample counts), the mover's calls, fences, slabs.
TIMING_COUNTERS = ("launch_calls_timed", "launch_call_ns", "hooks_timed", "hook_ns", "move_calls", "move_call_ns",
                   "launches_fenced", "launches_with_demand", "pool_slabs_created", "pool_slabs_released",
                   "pool_slab_release_ns")


def timing_between(before, after):
    """The library's timing counters over a step (None without the library)."""
    if not before or not after:
        return None
    return {key: after[key] - before[key] for key in TIMING_COUNTERS if key in before and key in after}


def moved_between(before, after):
    """Counter deltas between two reads of the library's counters (None without the library)."""
    if not before or not after:
        return None
    return {name: after[key] - before[key] for name, key in MOVED_COUNTERS.items() if key in before and key in after}


def memory_figure(query):
    """One of PyTorch's memory figures, or None where the allocator backend does not keep it."""
    try:
        return query()
    except RuntimeError:
        return None


def memory_figures(torch):
    """PyTorch's memory figures and allocator backend: with backend:cudaMallocAsync they are the
    CUDA memory pool's (under the library, the library's answers for it)."""
    get_backend = getattr(torch.cuda, "get_allocator_backend", None)
    return {"peak_allocated_bytes": memory_figure(torch.cuda.max_memory_allocated),
            "peak_reserved_bytes": memory_figure(torch.cuda.max_memory_reserved),
            "memory_allocated_bytes": memory_figure(torch.cuda.memory_allocated),
            "memory_reserved_bytes": memory_figure(torch.cuda.memory_reserved),
            "allocator_backend": get_backend() if get_backend else None}


def deterministic_state(torch):
    return ("off" if not torch.are_deterministic_algorithms_enabled() else
            "warn-only" if torch.is_deterministic_algorithms_warn_only_enabled() else "strict")


def build(args, torch):
    if args.model == "resnet50":
        import torchvision

        model = torchvision.models.resnet50(num_classes=1000)
        x = torch.randn(args.batch, 3, 224, 224, device="cuda")
        y = torch.randint(0, 1000, (args.batch,), device="cuda")

        def loss_fn():
            return torch.nn.functional.cross_entropy(model(x), y)

    elif args.model == "bert-large":
        from transformers import BertConfig, BertForMaskedLM

        config = BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                            max_position_embeddings=max(512, args.seq))
        model = BertForMaskedLM(config)
        ids = torch.randint(0, config.vocab_size, (args.batch, args.seq), device="cuda")

        def loss_fn():
            return model(input_ids=ids, labels=ids).loss

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
                        choices=["resnet50", "gpt2-small", "gpt2-medium", "gpt2-large", "bert-large"])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mark-iterations", action="store_true",
                        help="call uvmp_mark_iteration after each step")
    parser.add_argument("--deterministic", action="store_true",
                        help="deterministic kernels, so that runs can be compared loss for loss")
    parser.add_argument("--save-on-cpu", action="store_true",
                        help="keep the tensors saved for backward in pinned host memory "
                             "(torch.autograd.graph.save_on_cpu): what a PyTorch user can do instead of the library")
    parser.add_argument("--offload-activations", action="store_true",
                        help="copy the large tensors saved for backward to pinned host memory on a side stream, "
                             "overlapped with the forward, and fetch them back ahead of need in the backward")
    parser.add_argument("--offload-min-bytes", type=int, default=1 << 20,
                        help="saved tensors smaller than this stay on the GPU (default 1 MiB)")
    parser.add_argument("--offload-prefetch-bytes", type=int, default=1 << 30,
                        help="bytes in flight each way: copies to the host not yet done, and tensors fetched back "
                             "not yet used (default 1 GiB)")
    parser.add_argument("--memory-cap", type=int, default=0, metavar="BYTES",
                        help="cap PyTorch's allocator at BYTES (set_per_process_memory_fraction of the GPU's memory)")
    args = parser.parse_args()
    if args.memory_cap < 0:
        parser.error("--memory-cap must be a number of bytes, at least 0")
    if args.save_on_cpu and args.offload_activations:
        parser.error("--save-on-cpu and --offload-activations are two ways of doing the same: choose one")

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
    if args.memory_cap:
        total = torch.cuda.get_device_properties(0).total_memory
        if args.memory_cap > total:
            parser.error(f"--memory-cap {args.memory_cap} is more than the GPU's {total} bytes")
        torch.cuda.set_per_process_memory_fraction(args.memory_cap / total)
    counters = LibraryCounters()
    model, loss_fn = build(args, torch)
    saving = contextlib.nullcontext
    if args.save_on_cpu:
        saving = lambda: torch.autograd.graph.save_on_cpu(pin_memory=True)  # noqa: E731
    elif args.offload_activations:
        from activation_offload import ActivationOffload

        saving = ActivationOffload(torch, model.parameters(), args.offload_min_bytes, args.offload_prefetch_bytes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times, issued, losses, launches, moved_steps = [], [], [], [], []
    last = counters.read()
    warmed_up = last  # the counters once warm-up is over
    for step in range(args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with saving():
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = loss_fn()
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        # The step's work is queued: a step much longer than this waited for the GPU.
        issued_ms = (time.perf_counter() - start) * 1e3
        torch.cuda.synchronize()
        elapsed_ms = (time.perf_counter() - start) * 1e3
        if args.mark_iterations:
            counters.mark_iteration()
        now = counters.read()
        step_launches = now["launches_seen"] - last["launches_seen"] if now and last else None
        moved = moved_between(last, now)
        timing = timing_between(last, now)
        last = now
        if step + 1 == args.warmup and args.warmup < args.steps:
            warmed_up = now
        times.append(elapsed_ms)
        issued.append(issued_ms)
        losses.append(loss.item())
        launches.append(step_launches)
        moved_steps.append(moved)
        line = {"step": step, "ms": round(elapsed_ms, 3), "issued_ms": round(issued_ms, 3), "loss": losses[-1],
                "launches": step_launches}
        if moved is not None:
            line["moved"] = moved
        if timing is not None:
            line["library_time"] = timing
        print(json.dumps(line), flush=True)
    steady = times[args.warmup:] or times
    summary = {
        "model": args.model, "batch": args.batch, "steps": args.steps, "warmup": args.warmup,
        "saved_tensors": "save_on_cpu" if args.save_on_cpu else "offload" if args.offload_activations else "gpu",
        "median_ms": statistics.median(steady), "step_ms": [round(ms, 3) for ms in times],
        # Well below median_ms: the GPU set the pace. Near it: the application's thread did, or the GPU
        # fell so far behind that the launch queue filled (a trace's step times tell which).
        "median_issued_ms": statistics.median(issued[args.warmup:] or issued),
        "losses": losses, "launches_per_step": launches,
        "deterministic": deterministic_state(torch),
        **memory_figures(torch),
        "alloc_conf": {name: os.environ[name] for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
                       if name in os.environ},
        "library": counters.present,
        # Bytes the library moved in the steps after warm-up, summed (None without it).
        "moved_after_warmup": moved_between(warmed_up, last),
        # Its timing counters over the same steps (slabs given back, and the time their frees took).
        "library_time_after_warmup": timing_between(warmed_up, last),
        # Each step's, warm-up included: when the job went over its budget, and how it settled.
        "moved_per_step": moved_steps,
    }
    print("SUMMARY " + json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
