#!/usr/bin/python3
"""A torchvision model through ios in one line: ios.compile exports it to
ONNX (PyTorch's TorchScript exporter, opset 17), finds its schedule with
ios.optimize and returns a callable that runs it on torch tensors; the
output is compared with PyTorch's (examples/torchvision_export.py's accuracy
rule). Exit status 0 when the outputs agree.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/compile_example.py [--model resnet18]

(PYTHONPATH: the folder holding the ios package, the build tree's python/
or the installed prefix's lib/python3.X/dist-packages.)
"""

import argparse
import copy
import os
import sys
import time

import torch
import torchvision

import ios

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torchvision_export import accuracy_rule  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="squeezenet1_1", help="a torchvision classification model")
    ap.add_argument("--image-size", default="64x64", help="HxW")
    args = ap.parse_args()
    h, w = (int(v) for v in args.image_size.split("x"))
    torch.manual_seed(0)  # random weights, the same on every run

    # [docs/api.md: ios.compile]
    model = getattr(torchvision.models, args.model)(weights=None).eval()
    x = torch.randn(1, 3, h, w)
    run = ios.compile(model, x)  # export to ONNX, ios.optimize, ios.Engine (backend="cpu")
    y = run(x)                   # a torch tensor, as model(x) gives
    # [end]

    t0 = time.time()
    y = run(x)
    print(f"{run}: output {tuple(y.shape)} {y.dtype} in {time.time() - t0:.3f} s")
    with torch.no_grad():
        peer = model(x)
        truth = copy.deepcopy(model).double()(x.double())
    passed, line = accuracy_rule(y.numpy(), peer.numpy(), truth.numpy())
    print(line)
    print("PASSED: ios matches PyTorch" if passed else "FAILED: ios differs from PyTorch beyond the rule")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
