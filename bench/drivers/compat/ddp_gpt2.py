#!/usr/bin/env python3
"""GPT-2 (transformers.GPT2Config, random weights) trained with DistributedDataParallel, for
torchrun: `torchrun --standalone --nproc-per-node 2 ddp_gpt2.py --backend gloo`. Each rank
uses CUDA device LOCAL_RANK % device count, so that two ranks share GPU 0 on a machine with
one (NCCL refuses two ranks on one GPU; gloo does not). Started without torchrun (no RANK),
it is one rank of a world of one.

Deterministic: the same seed for the weights on every rank, deterministic algorithms,
CUBLAS_WORKSPACE_CONFIG set, and each rank's token ids drawn from a generator seeded by its
rank. bf16 autocast and AdamW, as in examples/train_workload.py. Each rank prints one line
`RESULT {json}`: its rank, the world size, its loss at every step (full precision), its step
times after warm-up and their median, torch.cuda.max_memory_allocated and
max_memory_reserved, and, under the library, the bytes it moved after warm-up.
"""

import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
from train_workload import memory_figure, moved_between  # noqa: E402
from uvmp_library import LibraryCounters  # noqa: E402

# (layers, width, heads)
MODELS = {"small": (12, 768, 12), "tiny": (2, 128, 2)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="gloo", choices=["gloo", "nccl"])
    parser.add_argument("--model", default="small", choices=sorted(MODELS),
                        help="small: GPT-2 small (12 layers, width 768); tiny: 2 layers, width 128")
    parser.add_argument("--layers", type=int, help="layers instead of the model's")
    parser.add_argument("--embd", type=int, help="width instead of the model's (a multiple of the heads)")
    parser.add_argument("--batch", type=int, default=4, help="sequences a rank (default 4)")
    parser.add_argument("--seq", type=int, default=512, help="tokens a sequence (default 512)")
    parser.add_argument("--steps", type=int, default=10, help="steps, warm-up included (default 10)")
    parser.add_argument("--warmup", type=int, default=2, help="steps left out of the step times (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cpu", action="store_true", help="run on the CPU (gloo only): checks the script alone")
    args = parser.parse_args(argv)
    if args.steps <= args.warmup or args.warmup < 0:
        parser.error("--steps must be more than --warmup")
    if args.cpu and args.backend != "gloo":
        parser.error("--cpu needs --backend gloo")
    return args


def main():
    args = parse_args()
    import torch
    import torch.distributed as dist
    from transformers import GPT2Config, GPT2LMHeadModel

    # Set by torchrun; without it, a world of one.
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.cpu:
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", local_rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    if "RANK" in os.environ:
        dist.init_process_group(backend=args.backend)
    else:
        dist.init_process_group(backend=args.backend, store=dist.HashStore(), rank=0, world_size=1)

    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(args.seed)  # the same weights and dropout stream on every rank

    layers, width, heads = MODELS[args.model]
    layers = args.layers or layers
    width = args.embd or width
    config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_positions=args.seq)
    model = GPT2LMHeadModel(config).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=None if args.cpu else [device.index])
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-4)

    # This rank's token ids for every step, from its own generator.
    generator = torch.Generator().manual_seed(1000 * args.seed + rank + 1)
    batches = [torch.randint(0, config.vocab_size, (args.batch, args.seq), generator=generator)
               for _ in range(args.steps)]

    def synchronize():
        if not args.cpu:
            torch.cuda.synchronize(device)

    counters = LibraryCounters()
    losses, times = [], []
    warmed_up = counters.read()
    dist.barrier()
    for step in range(args.steps):
        synchronize()
        start = time.perf_counter()
        ids = batches[step].to(device, non_blocking=False)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = ddp(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        synchronize()
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(loss.item())
        if step + 1 == args.warmup:
            warmed_up = counters.read()
    steady = times[args.warmup:]
    result = {
        "rank": rank, "world_size": world, "local_rank": local_rank, "device": str(device),
        "backend": args.backend, "model": args.model, "layers": layers, "embd": width,
        "batch": args.batch, "seq": args.seq, "steps": args.steps, "warmup": args.warmup,
        "losses": losses,
        "step_ms": [round(ms, 3) for ms in steady],
        "median_ms": statistics.median(steady),
        "max_memory_allocated": None if args.cpu else memory_figure(lambda: torch.cuda.max_memory_allocated(device)),
        "max_memory_reserved": None if args.cpu else memory_figure(lambda: torch.cuda.max_memory_reserved(device)),
        "library": counters.present,
        "moved_after_warmup": moved_between(warmed_up, counters.read()),
    }
    # One write of the whole line: the ranks share the output, and a line written in parts
    # could be split by the other rank's.
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), ("RESULT " + json.dumps(result) + "\n").encode())
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
