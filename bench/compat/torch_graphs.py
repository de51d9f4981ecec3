#!/usr/bin/env python3
"""A small MLP trained with torch.compile(mode="reduce-overhead"): Inductor's kernels run
as CUDA graphs, captured once and replayed every step (cuGraphLaunch). Prints every
step's loss and a digest of the final weights as one RESULT line."""

import hashlib
import json

import torch

STEPS = 30
torch.manual_seed(20261202)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
inputs = torch.randn(STEPS, 512, 1024, device="cuda")
targets = torch.randn(STEPS, 512, 1024, device="cuda")


@torch.compile(mode="reduce-overhead")
def loss_of(x, y):
    return torch.nn.functional.mse_loss(model(x), y)


losses = []
for step in range(STEPS):
    torch.compiler.cudagraph_mark_step_begin()
    loss = loss_of(inputs[step], targets[step])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)
    losses.append(loss.item())
digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
print("RESULT " + json.dumps({"losses": [repr(v) for v in losses], "weights": digest}), flush=True)
