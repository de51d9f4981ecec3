#!/usr/bin/env python3
"""Training fed by a DataLoader with four forked worker processes (they never touch
CUDA; the preloaded library is in each of them) and pinned batches. Prints the losses
as one RESULT line."""

import json
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

torch.manual_seed(20261202)
torch.use_deterministic_algorithms(True)
features = torch.randn(16384, 256)
labels = torch.randint(0, 10, (16384,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels), batch_size=512, shuffle=True,
                                     num_workers=4, multiprocessing_context="fork", pin_memory=True,
                                     generator=torch.Generator().manual_seed(7))
model = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
losses = []
for epoch in range(2):
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda(non_blocking=True)), y.cuda(non_blocking=True))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
print("RESULT " + json.dumps({"losses": [repr(v) for v in losses]}), flush=True)
