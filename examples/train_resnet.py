#!/usr/bin/env python3
"""A few deterministic SGD steps of torchvision's resnet18 on random data.

Two runs of this script with the same arguments print bit-identical losses, on the same
GPU and software, whether or not libuvmprefetch.so is loaded: comparing the LOSSES line
of a native run with one under uvmrun shows that converting the allocations to managed
memory changed no result.

Usage: train_resnet.py [--steps N] [--batch B] [--seed S]
Prints "step i: loss <repr>" per step and a final line "LOSSES <json list>".
"""

import os

# cuBLAS needs a fixed workspace configuration to be deterministic; it is read when
# the CUDA context is created, so it has to be in the environment before torch loads.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

from uvmp_library import iteration_marker  # noqa: E402

NUM_CLASSES = 1000
IMAGE_SIZE = 224


class GlobalMeanPool(torch.nn.Module):
    """Same result as AdaptiveAvgPool2d(1), whose CUDA backward has no deterministic
    implementation (deterministic mode refuses it)."""

    def forward(self, x):
        return x.mean(dim=(2, 3), keepdim=True)


def soft_cross_entropy(logits, one_hot_targets):
    """Cross-entropy written with elementwise ops and sums: nll_loss on CUDA is refused
    in deterministic mode."""
    return -(F.log_softmax(logits, dim=1) * one_hot_targets).sum(dim=1).mean()


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=5, help="training steps (default 5)")
    parser.add_argument("--batch", type=int, default=32, help="images per step (default 32)")
    parser.add_argument("--seed", type=int, default=1234, help="seed of the weights and the data (default 1234)")
    args = parser.parse_args()
    if args.steps < 1 or args.batch < 1:
        parser.error("--steps and --batch must be at least 1")
    return args


def main():
    args = parse_arguments()
    if not torch.cuda.is_available():
        print("train_resnet.py: no CUDA device visible to torch", file=sys.stderr)
        return 1
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True

    # Weights and data come from CPU generators, so they do not depend on the GPU's state.
    torch.manual_seed(args.seed)
    model = torchvision.models.resnet18(weights=None, num_classes=NUM_CLASSES)
    model.avgpool = GlobalMeanPool()
    model = model.cuda().train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data_generator = torch.Generator().manual_seed(args.seed + 1)
    mark_iteration = iteration_marker()

    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}", flush=True)
    losses = []
    for step in range(args.steps):
        images = torch.randn(args.batch, 3, IMAGE_SIZE, IMAGE_SIZE, generator=data_generator)
        labels = torch.randint(0, NUM_CLASSES, (args.batch,), generator=data_generator)
        targets = torch.zeros(args.batch, NUM_CLASSES)
        targets[torch.arange(args.batch), labels] = 1.0

        optimizer.zero_grad(set_to_none=True)
        loss = soft_cross_entropy(model(images.cuda()), targets.cuda())
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        mark_iteration()
        print(f"step {step}: loss {losses[-1]!r}", flush=True)

    print("LOSSES " + json.dumps(losses), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
