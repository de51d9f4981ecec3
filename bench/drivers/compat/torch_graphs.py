#!/usr/bin/env python3
"""A small MLP run with torch.compile(mode="reduce-overhead"): Inductor's kernels run as CUDA
graphs, captured once and replayed every step (cuGraphLaunch), here for inference (no_grad),
the pattern CUDA graphs serve best. Prints a digest of every step's output as one RESULT line."""

import hashlib
import json

import torch

STEPS = 30
torch.manual_seed(20261202)
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 1024)).cuda().eval()
inputs = torch.randn(STEPS, 512, 1024, device="cuda")
compiled = torch.compile(model, mode="reduce-overhead")

digests = []
with torch.no_grad():
    for step in range(STEPS):
        torch.compiler.cudagraph_mark_step_begin()
        # The graph's output lives in its own pool, overwritten by the next replay: copy it out.
        out = compiled(inputs[step]).clone()
        digests.append(hashlib.sha256(out.cpu().numpy().tobytes()).hexdigest()[:16])
print("RESULT " + json.dumps({"outputs": digests}), flush=True)
