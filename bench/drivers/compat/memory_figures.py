#!/usr/bin/env python3
"""A few training steps of a small model, then PyTorch's memory figures as one JSON line:
memory_allocated, max_memory_allocated, memory_reserved, max_memory_reserved and
mem_get_info, to compare a native run with one under `uvmrun --budget`. Deterministic:
fixed seeds, deterministic algorithms, the same shapes every step.

    python memory_figures.py --model gpt2-small --steps 4
    uvmrun --budget 16G -- python memory_figures.py --model gpt2-small --steps 4

Under a budget the library sets backend:cudaMallocAsync, whose figures come from the
memory pool's attributes; run the native side with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
too, so that both read the same kind of pool. The peaks are reset after the first step
(torch.cuda.reset_peak_memory_stats), as a framework resetting them between phases does,
and read both before and after the reset."""

import argparse
import json
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402


def build(model_name, batch, seq):
    if model_name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True,
                                                 dropout=0.0)
        model = torch.nn.TransformerEncoder(layer, num_layers=6).cuda()
        x = torch.randn(batch, seq, 512, device="cuda")
        return model, lambda: model(x).pow(2).mean()
    # As examples/train_workload.py builds it.
    from transformers import GPT2Config, GPT2LMHeadModel

    sizes = {"gpt2-small": (12, 768, 12), "gpt2-tiny": (2, 256, 4)}
    layers, width, heads = sizes[model_name]
    config = GPT2Config(n_layer=layers, n_embd=width, n_head=heads, n_positions=seq,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = GPT2LMHeadModel(config).cuda()
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")
    return model, lambda: model(input_ids=ids, labels=ids).loss


def figures():
    free, total = torch.cuda.mem_get_info()
    return {
        "memory_allocated": torch.cuda.memory_allocated(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "mem_get_info": {"free": free, "total": total, "used": total - free},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="gpt2-small", choices=["gpt2-small", "gpt2-tiny", "encoder"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()

    torch.manual_seed(47)
    torch.use_deterministic_algorithms(True)
    model, loss_fn = build(args.model, args.batch, args.seq)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    losses, first_step = [], None
    for step in range(args.steps):
        loss = loss_fn()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        if step == 0:
            torch.cuda.synchronize()
            first_step = figures()
            torch.cuda.reset_peak_memory_stats()
    torch.cuda.synchronize()
    result = {
        "model": args.model,
        "batch": args.batch,
        "seq": args.seq,
        "steps": args.steps,
        "backend": torch.cuda.get_allocator_backend(),
        "budget": os.environ.get("UVMP_BUDGET"),
        "losses": [repr(v) for v in losses],
        "after_first_step": first_step,
        **figures(),
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
