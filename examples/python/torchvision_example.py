#!/usr/bin/python3
"""A torchvision model through ios from Python: export it to ONNX, find a
schedule with ios.optimize, run it with ios.Engine on torch tensors, and
compare the output with PyTorch's (examples/torchvision_export.py's
accuracy rule). Exit status 0 when the outputs agree.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/torchvision_example.py --out-dir /tmp/ex

(PYTHONPATH: the folder holding the ios module, the build tree's python/
or the installed prefix's lib/python3.X/dist-packages.)
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

import ios

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torchvision_export import accuracy_rule, export  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="squeezenet1_1", help="a torchvision model of export_models.py")
    ap.add_argument("--image-size", default="64x64", help="HxW")
    ap.add_argument("--out-dir", required=True, help="where the model and the schedule are written")
    args = ap.parse_args()
    h, w = (int(v) for v in args.image_size.split("x"))
    os.makedirs(args.out_dir, exist_ok=True)

    t0 = time.time()
    stem = export(args.model, (h, w), args.out_dir)  # model.onnx, input, truth, PyTorch's output
    print(f"exported {stem}.onnx in {time.time() - t0:.1f} s")

    x = torch.from_numpy(np.load(stem + ".input.npy"))
    t0 = time.time()
    # [docs/api.md: the ONNX route]
    schedule = ios.optimize(stem + ".onnx", batch=1, cost="simulated")  # ios-optimize as a call
    schedule.save(stem + ".ios.schedule.json")                           # the file ios-run reads
    engine = ios.Engine(stem + ".onnx", schedule, backend="cpu")
    y = engine(x)                                                        # torch tensor in, torch tensor out
    # [end]
    print(f"optimized, loaded and ran in {time.time() - t0:.1f} s: {schedule}, output {tuple(y.shape)} {y.dtype}")

    passed, line = accuracy_rule(y.numpy(), np.load(stem + ".torch.npy"), np.load(stem + ".truth.npy"))
    print(line)
    print("PASSED: ios matches PyTorch" if passed else "FAILED: ios differs from PyTorch beyond the rule")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
