#!/usr/bin/env python3
"""A small deterministic training job for bench/drivers/churn.py: an MLP of --layers square
layers of --width (tanh between them, SGD with momentum, so weights, gradients and momentum
take 3 x 4 x width^2 bytes a layer), trained --steps steps on data drawn on the GPU from a
fixed seed. Prints `LOSS step value` after each step (a job killed midway shows how far it
came) and last one line `RESULT {json}`: every step's loss, torch.cuda.max_memory_allocated
and max_memory_reserved, and what the GPU had free when the job began.

With --own-handler the job handles SIGINT and SIGTERM itself, as many training scripts do: it
prints `own handler ran for signal N` (its number), then dies of the signal (bench/signals_gpu.sh checks
that the library's summary, stats file and trace survive this).

  churn_mlp.py --width 2048 --layers 40 --steps 30"""

import argparse
import json
import os
import signal

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--width", type=int, default=2048)
parser.add_argument("--layers", type=int, default=40)
parser.add_argument("--batch", type=int, default=512)
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--seed", type=int, default=7)
parser.add_argument("--own-handler", action="store_true", help="handle SIGINT and SIGTERM, then die of them")
args = parser.parse_args()


def die_of_signal(number, _frame):
    print(f"own handler ran for signal {number}", flush=True)
    signal.signal(number, signal.SIG_DFL)
    os.kill(os.getpid(), number)


if args.own_handler:
    for handled in (signal.SIGINT, signal.SIGTERM):
        signal.signal(handled, die_of_signal)

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(args.seed)
free_at_start, _ = torch.cuda.mem_get_info()
layers = []
for _ in range(args.layers):
    layers += [torch.nn.Linear(args.width, args.width), torch.nn.Tanh()]
model = torch.nn.Sequential(*layers).cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
generator = torch.Generator(device="cuda").manual_seed(args.seed + 1)
inputs = torch.randn(args.batch, args.width, device="cuda", generator=generator)
targets = torch.randn(args.batch, args.width, device="cuda", generator=generator)

losses = []
for step in range(args.steps):
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss.item())
    print(f"LOSS {step} {losses[-1]!r}", flush=True)
print("RESULT " + json.dumps({"losses": losses, "max_memory_allocated": torch.cuda.max_memory_allocated(),
                              "max_memory_reserved": torch.cuda.max_memory_reserved(),
                              "free_at_start": free_at_start}), flush=True)
