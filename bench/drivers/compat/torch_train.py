#!/usr/bin/env python3
"""A small transformer encoder trained for a few steps with deterministic algorithms:
the job of the two-jobs and allocator rows. Prints the losses and a digest of the
final weights as one RESULT line, with PyTorch's allocator backend."""

import argparse
import hashlib
import json
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=40)
parser.add_argument("--batch", type=int, default=32)
args = parser.parse_args()

torch.manual_seed(20261202)
torch.use_deterministic_algorithms(True)
layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True, dropout=0.0)
model = torch.nn.TransformerEncoder(layer, num_layers=6).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
losses = []
for step in range(args.steps):
    x = torch.randn(args.batch, 256, 512, device="cuda")
    loss = model(x).pow(2).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
digest = hashlib.sha256(b"".join(p.detach().cpu().numpy().tobytes() for p in model.parameters())).hexdigest()
backend = torch.cuda.get_allocator_backend()
print("RESULT " + json.dumps({"losses": [repr(v) for v in losses], "weights": digest}), flush=True)
print(f"allocator backend: {backend}", flush=True)
