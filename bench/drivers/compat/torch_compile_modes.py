#!/usr/bin/env python3
"""A small MLP trained with torch.compile in one mode (default, reduce-overhead with CUDA
graph trees, or max-autotune), deterministic kernels, random data made on the GPU. Prints
one RESULT line: the mode and every step's loss, to compare a run under the library with a
native one loss for loss.

  torch_compile_modes.py --mode reduce-overhead [--steps 20]"""

import argparse
import json
import os

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--mode", choices=["default", "reduce-overhead", "max-autotune"], required=True)
parser.add_argument("--steps", type=int, default=20)
args = parser.parse_args()

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

torch.use_deterministic_algorithms(True)
torch.manual_seed(20261206)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
inputs = torch.randn(args.steps, 256, 1024, device="cuda")
targets = torch.randn(args.steps, 256, 1024, device="cuda")


def step(x, y):
    return torch.nn.functional.mse_loss(model(x), y)


compiled = torch.compile(step, mode=args.mode)
losses = []
for i in range(args.steps):
    if args.mode == "reduce-overhead":
        torch.compiler.cudagraph_mark_step_begin()
    loss = compiled(inputs[i], targets[i])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
print("RESULT " + json.dumps({"mode": args.mode, "losses": losses}), flush=True)
# Apart from RESULT, which must match the native run's: a budget is sized from these.
print("MEMORY " + json.dumps({"max_memory_allocated": torch.cuda.max_memory_allocated(),
                              "max_memory_reserved": torch.cuda.max_memory_reserved()}), flush=True)
