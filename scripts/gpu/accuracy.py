#!/usr/bin/env python3
"""The GPU kit's accuracy data: inputs, float64 truths and independent peers.

The GPU model test (test/gpu/model_tests.cpp) judges every output of ios on
the GPU by one rule, at every precision (docs/testing.md, "The GPU's accuracy
rule"): its error against a float64 truth of the very file the GPU runs may
be at most twice (rms) and four times (largest) the error of an independent
run of the same file at the same precision on the same GPU, plus a floor of
half a unit in the last place at the truth's largest magnitude. This script
makes what that rule reads, with scripts/gpu/onnx_torch.py (an evaluator of
ONNX graphs written with torch.nn.functional) as both the truth and the peer:

  accuracy.py data MODEL.onnx DIR        here: DIR/input-<name>.npy (exact in every
                                         type) and DIR/truth-<output>.npy (float64
                                         evaluation, stored as float32)
  accuracy.py peers ROOT MODELS_DIR --precisions fp32,tf32,fp16,bf16 [--device cuda]
              [--batches 1,8] [--batched-precisions fp32,tf32]
                                         there: for every ROOT/<stem>/ with a model
                                         MODELS_DIR/<stem>.onnx, the peer's outputs
                                         ROOT/<stem>/peer-<precision>-<output>.npy;
                                         where the model's batch is symbolic, also at
                                         each further batch N of --batches, on the
                                         input repeated N times, at the precisions the
                                         model test runs at that batch:
                                         ROOT/<stem>/peer-<precision>-b<N>-<output>.npy
  accuracy.py judge DIR OUTPUTS_DIR --precision fp32
                                         the rule on ios-run --output-dir files
                                         (OUTPUTS_DIR/<output>.npy), the peer of that
                                         precision from DIR (the kit's dry run; any
                                         ios-run output)
  accuracy.py check-scales EXPORT.onnx REBUILT.onnx [--max-output 50] [--ratio 2]
                                         here: every Conv and Gemm output of the
                                         rebuilt model within RATIO of the export's
                                         rms on one input, and max |output| at most
                                         MAX_OUTPUT
  accuracy.py rebuild EXPORT.onnx RAW_SKELETON.onnx SKELETON.onnx REBUILT.onnx
              --weights-tool ios-model-weights [--data DIR]
                                         here (scripts/gpu/kit_model.sh): the raw
                                         skeleton's weights filled, calibrated on one
                                         input (onnx_torch.py calibrate), the scales
                                         written into SKELETON's marks, REBUILT filled
                                         from it and checked as check-scales does on
                                         another input; with --data, REBUILT's data

Inputs are N(0, 1) samples rounded to multiples of 1/64 within +-255/64 (the
distribution the exports' batch normalisation was calibrated on,
onnx_models/export_models.py): exact in float32, float16 and bfloat16 alike
(at most 8 significant bits), so no precision starts from a rounded input,
and they compress to a third of their bytes in the kit's archive.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import onnx_torch  # noqa: E402  (beside this file)


def file_name(name):
    """A tensor name as the file names here hold it (as onnx_torch.py's CLI)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def model_inputs(model, batch):
    """name -> shape of the graph's inputs that are not initializers, a symbolic
    first dimension taken as `batch`."""
    import onnx

    proto = onnx.load(model, load_external_data=False) if isinstance(model, str) else model
    initializers = {t.name for t in proto.graph.initializer}
    shapes = {}
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        dims = []
        for i, d in enumerate(value.type.tensor_type.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                dims.append(d.dim_value)
            elif i == 0:
                dims.append(batch)
            else:
                raise SystemExit(f"accuracy: {model}: input '{value.name}' has a symbolic dimension {i}")
        shapes[value.name] = dims
    return shapes


def exact_input(shape, seed):
    """N(0, 1) rounded to multiples of 1/64 within +-255/64, from numpy's
    frozen legacy generator."""
    rng = np.random.RandomState(seed)
    k = np.clip(np.rint(rng.standard_normal(size=shape) * 64.0), -255, 255)
    return (k / 64.0).astype(np.float32)


def cmd_data(args):
    os.makedirs(args.dir, exist_ok=True)
    shapes = model_inputs(args.model, args.batch)
    inputs = {}
    for i, (name, shape) in enumerate(sorted(shapes.items())):
        inputs[name] = exact_input(shape, args.seed + i)
        np.save(os.path.join(args.dir, f"input-{file_name(name)}.npy"), inputs[name])
    t0 = time.time()
    outputs = onnx_torch.run(args.model, inputs, precision="fp64", device="cpu")
    for name, value in outputs.items():
        value = np.asarray(value, dtype=np.float64)
        if not np.all(np.isfinite(value)):
            raise SystemExit(f"accuracy: {args.model}: the float64 truth of output '{name}' is not finite")
        np.save(os.path.join(args.dir, f"truth-{file_name(name)}.npy"), value.astype(np.float32))
    largest = max(float(np.max(np.abs(v))) for v in outputs.values())
    print(f"accuracy: {os.path.basename(args.model)}: truth of {len(outputs)} outputs, "
          f"max|out| {largest:.3g}, {time.time() - t0:.1f} s", file=sys.stderr)


def read_inputs(folder):
    inputs = {}
    for f in sorted(os.listdir(folder)):
        if f.startswith("input-") and f.endswith(".npy"):
            inputs[f[len("input-"):-len(".npy")]] = np.load(os.path.join(folder, f))
    return inputs


def cmd_peers(args):
    precisions = [p for p in args.precisions.split(",") if p]
    batches = [int(b) for b in args.batches.split(",") if b]
    if not batches or batches[0] != 1 or any(b < 1 for b in batches):
        raise SystemExit(f"accuracy: peers: --batches {args.batches!r}: expected 1 first, then larger batches")
    batched_precisions = [p for p in args.batched_precisions.split(",") if p in precisions]
    failed = 0
    for stem in sorted(os.listdir(args.root)):
        folder = os.path.join(args.root, stem)
        model = os.path.join(args.models_dir, stem + ".onnx")
        if not os.path.isdir(folder) or not os.path.isfile(model):
            continue
        if args.only and stem.split("-")[0] not in args.only.split(","):
            continue
        by_file = read_inputs(folder)
        shapes = model_inputs(model, 1)
        inputs = {name: by_file[file_name(name)] for name in shapes}
        runs = [(1, precision) for precision in precisions]
        # A batch beyond 1 where the file's batch is symbolic (model_inputs then
        # puts the batch asked for in every input's first dimension): cuDNN and
        # cuBLAS choose other kernels for another batch, with other rounding, so
        # the rule judges a batch-N output against a peer run at batch N.
        for batch in batches[1:]:
            if all(shape[0] == batch for shape in model_inputs(model, batch).values()):
                runs += [(batch, precision) for precision in batched_precisions]
        for batch, precision in runs:
            t0 = time.time()
            feed = inputs if batch == 1 else {name: np.repeat(x, batch, axis=0) for name, x in inputs.items()}
            try:
                outputs = onnx_torch.run(model, feed, precision=precision, device=args.device)
            except Exception as e:  # one model's failure must not stop the others
                print(f"accuracy: peers: {stem} at {precision}, batch {batch}: {type(e).__name__}: {e}",
                      file=sys.stderr)
                failed += 1
                continue
            tag = precision if batch == 1 else f"{precision}-b{batch}"
            for name, value in outputs.items():
                np.save(os.path.join(folder, f"peer-{tag}-{file_name(name)}.npy"), np.asarray(value, dtype=np.float32))
            print(f"accuracy: peers: {stem} {tag} on {args.device}: {time.time() - t0:.2f} s", file=sys.stderr)
    return 1 if failed else 0


HALF_ULP = {"fp32": 2.0 ** -24, "tf32": 2.0 ** -11, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}


def rule(actual, truth, peer, precision):
    """The GPU's accuracy rule (test/gpu/accuracy_rule.h, the same numbers):
    (passed, report)."""
    actual, truth, peer = (np.asarray(a, dtype=np.float64).ravel() for a in (actual, truth, peer))
    floor = HALF_ULP[precision] * float(np.max(np.abs(truth))) if truth.size else 0.0
    finite = bool(np.all(np.isfinite(actual)))
    err = np.abs(actual - truth) if finite else np.full(truth.shape, np.inf)
    peer_err = np.abs(peer - truth)
    rms, mx = float(np.sqrt(np.mean(err ** 2))), float(np.max(err))
    peer_rms, peer_mx = float(np.sqrt(np.mean(peer_err ** 2))), float(np.max(peer_err))
    passed = finite and rms <= 2 * peer_rms + floor and mx <= 4 * peer_mx + floor
    return passed, (f"rms error {rms:.3g} (limit 2 x peer {peer_rms:.3g} + floor {floor:.3g}), max error {mx:.3g} "
                    f"(limit 4 x peer {peer_mx:.3g} + floor){'' if finite else ', NOT FINITE'}")


def cmd_judge(args):
    failed = 0
    truths = [f for f in sorted(os.listdir(args.dir)) if f.startswith("truth-")]
    if not truths:
        raise SystemExit(f"accuracy: {args.dir} holds no truth-*.npy")
    for f in truths:
        name = f[len("truth-"):]
        actual_file = os.path.join(args.outputs, name)
        peer_file = os.path.join(args.dir, f"peer-{args.precision}-{name}")
        for need in (actual_file, peer_file):
            if not os.path.isfile(need):
                raise SystemExit(f"accuracy: {need} is missing")
        passed, report = rule(np.load(actual_file), np.load(os.path.join(args.dir, f)), np.load(peer_file),
                              args.precision)
        print(f"accuracy: {name[:-4]} at {args.precision}: {'passed' if passed else 'FAILED'}: {report}")
        failed += 0 if passed else 1
    return 1 if failed else 0


# The input the rebuilt weights are calibrated on, which is also the input
# the GPU model test runs (accuracy data), and another one on which the same
# figures are reported (calibration fits one input; how well it carries to
# another is worth seeing, not a gate: the per-channel means are fitted).
CALIBRATION_SEED = 7
OTHER_SEED = 1007


def seeded_inputs(model, seed):
    shapes = model_inputs(model, 1)
    return {name: exact_input(shape, seed + i) for i, (name, shape) in enumerate(sorted(shapes.items()))}


# Outputs of fewer values than this are left out of the rms comparison: the
# rms of a handful of numbers (FCOS's centerness head on its 1x1 pyramid
# level is one value) says nothing about a layer's scale.
MIN_COMPARED_VALUES = 16


def check_scales(export, rebuilt, max_output=50.0, ratio_limit=2.0, seed=CALIBRATION_SEED):
    """The rebuilt weights keep the export's scales: one float32 evaluation of
    each model on the same input, every Conv and Gemm output's rms compared
    (those of at least MIN_COMPARED_VALUES values). Returns (ok, one-line
    summary)."""
    inputs = seeded_inputs(export, seed)

    def recorder(table):
        def hook(node, outputs, env):
            if node.op_type in ("Conv", "Gemm", "ConvTranspose") and outputs[0].numel() >= MIN_COMPARED_VALUES:
                y = outputs[0].detach().double()
                table[node.output[0]] = float(y.pow(2).mean().sqrt())
            return None
        return hook

    export_rms, rebuilt_rms = {}, {}
    export_out = onnx_torch.run(export, inputs, precision="fp32", device="cpu", hook=recorder(export_rms))
    rebuilt_out = onnx_torch.run(rebuilt, inputs, precision="fp32", device="cpu", hook=recorder(rebuilt_rms))
    worst_name, worst = None, 1.0
    for name, want in export_rms.items():
        got = rebuilt_rms.get(name)
        if got is None or want <= 1e-12:
            continue
        ratio = max(got / want, want / got) if got > 0 else float("inf")
        if ratio > worst:
            worst_name, worst = name, ratio
    largest = max(float(np.max(np.abs(v))) for v in rebuilt_out.values())
    export_largest = max(float(np.max(np.abs(v))) for v in export_out.values())
    summary = (f"{len(export_rms)} Conv/Gemm outputs, worst rms ratio to the export's {worst:.3f}"
               f"{f' ({worst_name})' if worst_name else ''}; max|out| {largest:.3g} (export {export_largest:.3g})")
    problems = []
    if worst > ratio_limit:
        problems.append(f"the rms of '{worst_name}' is {worst:.2f}x off the export's (limit {ratio_limit}x)")
    if not np.isfinite(largest) or largest > max_output:
        problems.append(f"max |output| {largest:.3g} exceeds {max_output}")
    return not problems, summary + ("; " + "; ".join(problems) if problems else "")


def cmd_check_scales(args):
    ok, summary = check_scales(args.export, args.rebuilt, args.max_output, args.ratio)
    print(f"accuracy: {os.path.basename(args.rebuilt)}: {summary}", file=sys.stderr)
    return 0 if ok else 1


def fill(tool, skeleton, out):
    subprocess.run([tool, "fill", skeleton, out], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def cmd_rebuild(args):
    stem = os.path.basename(args.rebuilt)
    t0 = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        filled = os.path.join(tmp, "filled.onnx")
        fill(args.weights_tool, args.raw_skeleton, filled)
        biases = {}
        scales = onnx_torch.calibrate(filled, args.export, seeded_inputs(args.export, CALIBRATION_SEED),
                                      skeleton=args.raw_skeleton, biases=biases)
        onnx_torch.apply_scales(args.raw_skeleton, scales, args.skeleton, biases=biases)
    fill(args.weights_tool, args.skeleton, args.rebuilt)
    ok, summary = check_scales(args.export, args.rebuilt)
    _, other = check_scales(args.export, args.rebuilt, seed=OTHER_SEED)
    print(f"accuracy: {stem}: {len(scales)} weights calibrated ({len(biases)} with their biases); {summary}; "
          f"on another input: {other.split(';')[0]}; {time.time() - t0:.1f} s", file=sys.stderr)
    if not ok:
        return 1
    if args.data:
        cmd_data(argparse.Namespace(model=args.rebuilt, dir=args.data, batch=1, seed=CALIBRATION_SEED))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="verb", required=True)
    p = sub.add_parser("data")
    p.add_argument("model")
    p.add_argument("dir")
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--seed", type=int, default=CALIBRATION_SEED)
    p = sub.add_parser("peers")
    p.add_argument("root")
    p.add_argument("models_dir")
    p.add_argument("--precisions", default="fp32,tf32,fp16,bf16")
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", default="", help="model names (the stem before its first '-'), comma-separated")
    p.add_argument("--batches", default="1,8", help="batch 1, then the batches the model test runs symbolic-batch "
                   "files at (test/gpu/model_tests.cpp)")
    p.add_argument("--batched-precisions", default="fp32,tf32",
                   help="the precisions run at the batches beyond 1 (of those --precisions names)")
    p = sub.add_parser("check-scales")
    p.add_argument("export")
    p.add_argument("rebuilt")
    p.add_argument("--max-output", type=float, default=50.0)
    p.add_argument("--ratio", type=float, default=2.0)
    p = sub.add_parser("judge")
    p.add_argument("dir")
    p.add_argument("outputs")
    p.add_argument("--precision", choices=sorted(HALF_ULP), default="fp32")
    p = sub.add_parser("rebuild")
    p.add_argument("export")
    p.add_argument("raw_skeleton")
    p.add_argument("skeleton")
    p.add_argument("rebuilt")
    p.add_argument("--weights-tool", required=True)
    p.add_argument("--data", default="")
    args = parser.parse_args()
    verbs = {"data": cmd_data, "peers": cmd_peers, "check-scales": cmd_check_scales, "rebuild": cmd_rebuild,
             "judge": cmd_judge}
    return verbs[args.verb](args) or 0


if __name__ == "__main__":
    sys.exit(main())
