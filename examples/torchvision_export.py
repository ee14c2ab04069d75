#!/usr/bin/python3
"""Export step of the examples: a torchvision model to ONNX with the repo's
own exporter (onnx_models/export_models.py: random weights with a fixed
seed, batch-norm statistics calibrated), plus what the examples compare
with, next to the model:

    <stem>.onnx         the model
    <stem>.input.npy    a seeded N(0,1) input (float32)
    <stem>.truth.npy    PyTorch's output in float64 on it (the truth)
    <stem>.torch.npy    PyTorch's output in float32 on it (the peer)

    /usr/bin/python3 examples/torchvision_export.py squeezenet1_1 --image-size 64x64 --out-dir /tmp/ex

Prints the stem. The accuracy rule both examples apply (accuracy_rule) is
the one the model-family tests hold the CPU executor to
(test/cpu/model_families_test.cpp): against the float64 truth, ios's
float32 output may have at most twice the peer's float32 error, rms and
max absolute error both; the peer here is PyTorch itself.
"""

import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "onnx_models"))
import export_models as em  # noqa: E402  (the repo's exporter)


def export(name, image_size, out_dir, seed=0):
    """Exports `name` at `image_size` (H, W) into `out_dir`; returns the stem."""
    h, w = image_size
    spec = em.MODELS[name]
    if em.main(["--models", name, "--image-size", f"{h}x{w}", "--truth", "--seed", str(seed),
                "--out-dir", out_dir, "--threads", "2"]) != 0:
        raise RuntimeError(f"export of {name} failed")
    args = argparse.Namespace(seed=seed, batch=1, dynamic_batch=False, opset=em.OPSET, truth=True,
                              randwire_graphs=em.DEFAULT_GRAPH_DIR)
    stem = os.path.join(out_dir, em.file_name(name, spec, args, (h, w))[:-len(".onnx")])
    # The same model again, built as export_models.export_one builds it
    # (same seed, same calibration), run in float32 on the exported input.
    em.seed_everything(seed)
    model = spec.build(args)
    if spec.prepare:
        spec.prepare(model)
    em.calibrate(model, spec, (h, w), seed)
    model.eval()
    with torch.no_grad():
        peer = model(torch.from_numpy(np.load(stem + ".input.npy"))).numpy()
    np.save(stem + ".torch.npy", peer.astype(np.float32))
    return stem


def errors(actual, truth):
    """(rms, max absolute) error of `actual` against the float64 truth."""
    diff = np.asarray(actual, np.float64) - truth
    return float(np.sqrt(np.mean(diff * diff))), float(np.max(np.abs(diff)))


def accuracy_rule(ours, peer, truth):
    """True when `ours` has at most twice `peer`'s error against `truth`
    (rms and max absolute), with the numbers as a line of text."""
    (rms, worst), (peer_rms, peer_worst) = errors(ours, truth), errors(peer, truth)
    passed = rms <= 2 * peer_rms and worst <= 2 * peer_worst
    return passed, (f"error against the float64 truth: ios rms {rms:.3g} max {worst:.3g}, PyTorch float32 "
                    f"rms {peer_rms:.3g} max {peer_worst:.3g} (rule: ios <= 2x PyTorch)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a name of onnx_models/export_models.py --list, e.g. squeezenet1_1")
    ap.add_argument("--image-size", type=em.parse_size, default=(64, 64), help="HxW (default 64x64)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    print(export(args.model, args.image_size, args.out_dir, args.seed))


if __name__ == "__main__":
    main()
