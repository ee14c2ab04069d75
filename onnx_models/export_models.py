#!/usr/bin/python3
"""Export the CNN benchmarks of ios, and the segmentation, ConvNeXt, ViT-style,
video, audio and multi-resolution models, to ONNX (opset 13 unless --opset),
deterministically.

Run with Debian's Python (it has torch 1.13, torchvision 0.14, onnx 1.12):

    /usr/bin/python3 onnx_models/export_models.py                 # all models
    /usr/bin/python3 onnx_models/export_models.py --models inception_v3,randwire
    /usr/bin/python3 onnx_models/export_models.py --models randwire --image-size 64x64
    /usr/bin/python3 onnx_models/export_models.py --models r3d_18 --image-size 4x32x32  # T x H x W
    /usr/bin/python3 onnx_models/export_models.py --self-test     # determinism check
    /usr/bin/python3 onnx_models/export_models.py --list

There is no network: every model has random weights (fixed seed).  Batch-norm
statistics are calibrated on random N(0,1) images (train mode, cumulative
average, no_grad), and the classifier is rescaled so that the logits have
standard deviation ~1 on the calibration data; activations therefore stay
finite and O(1) through the deepest nets.  Same seed + same arguments + same
machine/torch -> byte-identical file.

File names (in --out-dir, default: this script's folder):
    <name>[-b<N>|-bdyn][-<H>x<W>].onnx
    -b<N>    only when the batch is not 1 (--batch N)
    -bdyn    with --dynamic-batch (dim 0 of input and output is "batch")
    -<H>x<W> only when the image size is not the model's default: HxW for
             images (N,3,H,W), TxHxW for video clips (N,3,T,H,W), L for
             sequences (N,C,L)
e.g. inception_v3.onnx, inception_v3-b2-75x75.onnx, randwire-64x64.onnx,
     resnet50-bdyn.onnx, r3d_18-4x32x32.onnx.

Every exported model is checked: onnx.checker, only op types the ios importer
supports (others are listed and the script exits with status 1 without
writing the file), finite outputs in eval mode.  One line per model is
printed: name, path, size, node count, export time, op-type histogram.
"""

import argparse
import copy
import hashlib
import io
import os
import random
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Optional, Tuple

import numpy as np
import onnx
from onnx import helper, numpy_helper
import torch
import torch.nn as nn
import torchvision.models as tvm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nets  # noqa: E402  (sibling module)
import half_reference  # noqa: E402  (sibling module)

SCRIPT_DIR = os.path.dirname(os.path.abspath(__file__))
# The IOS paper's RandWire graphs, committed next to this script.
DEFAULT_GRAPH_DIR = os.path.join(SCRIPT_DIR, "randwire_graphs")
OPSET = 13
PRODUCER = "ios onnx_models/export_models.py"

# Op types the ios ONNX importer accepts.  Shape arithmetic (Shape, Gather,
# Unsqueeze, Constant) is accepted because the importer constant-folds it.
SUPPORTED_OPS = {
    "Conv", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Add", "Mul",
    "Concat", "Split", "Slice", "MaxPool", "AveragePool", "GlobalAveragePool",
    "ReduceMean", "Flatten", "Reshape", "Transpose", "Gemm", "MatMul", "Softmax",
    "Pad", "BatchNormalization", "Identity", "Dropout",
    "Shape", "Gather", "Unsqueeze", "Constant",
    # segmentation heads, ConvNeXt and ViT-style models
    "Resize", "Sub", "Div", "Pow", "Sqrt", "Reciprocal", "Erf", "Tanh", "Exp",
    "LayerNormalization", "Cast", "Expand", "ConstantOfShape", "Equal", "Where",
    # Swin's shifted windows and attention mask (shape and mask arithmetic on
    # constants, folded at import), MaxViT's relative-position attention,
    # FCOS's GroupNorm
    "Mod", "Range", "ScatterND", "Not", "Einsum", "InstanceNormalization",
    # the audio CNN's per-channel PReLU, the multi-resolution net's ELU
    "PRelu", "Elu",
}


@dataclass
class ModelSpec:
    # The sizes are the input's spatial dims, after N and C: (H, W) for
    # images, (T, H, W) for video clips, (L,) for sequences; the model's
    # rank is their count.
    build: Callable[["argparse.Namespace"], nn.Module]
    size: Tuple[int, ...]        # default input size
    min_size: Tuple[int, ...]    # smallest size whose shapes stay valid
    test_size: Tuple[int, ...]   # small size used by --self-test
    doc: str
    calib: Tuple[int, int] = (3, 4)  # (batches, inputs per batch) for BN calibration
    prepare: Optional[Callable[[nn.Module], None]] = None  # after random init, before calibration
    channels: int = 3            # input channels


def _tv(fn, **kw):
    return lambda args: fn(weights=None, **kw)


class SegmentationLogits(nn.Module):
    """torchvision's segmentation models return {"out": logits}; export the
    logits tensor ([N, classes, H, W], upsampled to the input size)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def _tv_seg(fn):
    return lambda args: SegmentationLogits(fn(weights=None, weights_backbone=None, aux_loss=False))


class DetectorHeads(nn.Module):
    """The part of a torchvision detector that runs on the GPU in deployment:
    backbone, FPN and heads up to their raw outputs, one graph output per
    head output ([N, anchors or locations, K], every pyramid level
    concatenated). Anchor generation, box decoding and NMS are
    post-processing and stay out of the graph."""

    def __init__(self, model, output_names):
        super().__init__()
        self.model = model
        self.output_names = list(output_names)

    def forward(self, x):
        features = list(self.model.backbone(x).values())
        heads = self.model.head(features)
        return tuple(heads[k] for k in self.output_names)


def _tv_det(fn, output_names):
    return lambda args: DetectorHeads(fn(weights=None, weights_backbone=None), output_names)


def _unit_layer_scale(model):
    """ConvNeXt initialises its layer scale to 1e-6, which with random weights
    makes every block's residual branch vanish (and with it any error in the
    normalisation or GELU arithmetic); a trained model has O(1) scales."""
    with torch.no_grad():
        for m in model.modules():
            if hasattr(m, "layer_scale"):
                m.layer_scale.fill_(1.0)


# The registry: adding a model is one line.
MODELS = {
    "inception_v3": ModelSpec(
        _tv(tvm.inception_v3, aux_logits=False, init_weights=True, transform_input=False),
        (299, 299), (75, 75), (75, 75), "torchvision Inception-V3 (no aux head)"),
    "squeezenet1_1": ModelSpec(_tv(tvm.squeezenet1_1), (224, 224), (32, 32), (64, 64),
                               "torchvision SqueezeNet 1.1"),
    "resnet50": ModelSpec(_tv(tvm.resnet50), (224, 224), (32, 32), (64, 64), "torchvision ResNet-50"),
    "mobilenet_v2": ModelSpec(_tv(tvm.mobilenet_v2), (224, 224), (32, 32), (64, 64),
                              "torchvision MobileNet-V2"),
    "densenet121": ModelSpec(_tv(tvm.densenet121), (224, 224), (32, 32), (64, 64),
                             "torchvision DenseNet-121"),
    "googlenet": ModelSpec(
        _tv(tvm.googlenet, aux_logits=False, init_weights=True, transform_input=False),
        (224, 224), (32, 32), (64, 64), "torchvision GoogLeNet (no aux heads)"),
    "randwire": ModelSpec(
        lambda a: nets.RandWire("regular", 154, a.randwire_graphs, a.seed),
        (224, 224), (32, 32), (64, 64),
        "RandWire-WS regular C=154, WS(16)+3xWS(32) (IOS randwire_large; nets.py)"),
    "randwire_small": ModelSpec(
        lambda a: nets.RandWire("small", 78, a.randwire_graphs, a.seed),
        (224, 224), (32, 32), (64, 64), "RandWire-WS small C=78, 3xWS(32) (nets.py)"),
    "nasnet_a_large": ModelSpec(lambda a: nets.NASNetALarge(), (331, 331), (32, 32), (99, 99),
                                "NASNet-A Large 6@4032 (nets.py)", calib=(2, 4)),
    "nasnet_a_mobile": ModelSpec(lambda a: nets.NASNetALarge(1000, 32, 1056, 4), (224, 224), (32, 32),
                                 (64, 64), "NASNet-A Mobile 4@1056, same cells (nets.py)"),
    # The families deployed today: segmentation heads (ASPP, upsampling),
    # ConvNeXt (LayerNorm, GELU) and a transformer encoder.
    "deeplabv3_resnet50": ModelSpec(_tv_seg(tvm.segmentation.deeplabv3_resnet50), (520, 520), (64, 64),
                                    (64, 64), "torchvision DeepLabV3-ResNet50, 21 classes, no aux head"),
    "fcn_resnet50": ModelSpec(_tv_seg(tvm.segmentation.fcn_resnet50), (520, 520), (64, 64), (64, 64),
                              "torchvision FCN-ResNet50, 21 classes, no aux head"),
    "convnext_tiny": ModelSpec(_tv(tvm.convnext_tiny), (224, 224), (32, 32), (64, 64),
                               "torchvision ConvNeXt-Tiny (layer scale 1)", prepare=_unit_layer_scale),
    # The next families: shifted-window and multi-axis attention, and
    # detectors' backbone + FPN + heads (several graph outputs).
    "swin_t": ModelSpec(_tv(tvm.swin_t), (224, 224), (32, 32), (112, 112),
                        "torchvision Swin-T (window 7; feature maps padded to whole windows)"),
    "maxvit_t": ModelSpec(_tv(tvm.maxvit_t), (224, 224), (224, 224), (224, 224),
                          "torchvision MaxViT-T (partition 7: the input a multiple of 224)", calib=(2, 2)),
    "retinanet_resnet50_fpn": ModelSpec(
        _tv_det(tvm.detection.retinanet_resnet50_fpn, ["cls_logits", "bbox_regression"]),
        (800, 800), (64, 64), (128, 128), "torchvision RetinaNet-ResNet50-FPN, raw head outputs", calib=(2, 2)),
    "fcos_resnet50_fpn": ModelSpec(
        _tv_det(tvm.detection.fcos_resnet50_fpn, ["cls_logits", "bbox_regression", "bbox_ctrness"]),
        (800, 800), (64, 64), (128, 128), "torchvision FCOS-ResNet50-FPN, raw head outputs", calib=(2, 2)),
    "ssdlite320_mobilenet_v3_large": ModelSpec(
        _tv_det(tvm.detection.ssdlite320_mobilenet_v3_large, ["cls_logits", "bbox_regression"]),
        (320, 320), (320, 320), (320, 320), "torchvision SSDlite320-MobileNetV3-Large, raw head outputs"),
    "vit_style": ModelSpec(lambda a: nets.ViTStyle(), (64, 64), (64, 64), (64, 64),
                           "ViT-style encoder: 8x8 patches, dim 192, 4 blocks, 3 heads, separate q/k/v "
                           "(nets.py)"),
    # Video classification: N,3,T,H,W clips through Conv3d, BatchNorm3d,
    # MaxPool3d and 3-D pooling.  The defaults are torchvision's 16x112x112
    # (S3D: 16x224x224, whose final AvgPool3d has a fixed 2x7x7 kernel).
    "r3d_18": ModelSpec(_tv(tvm.video.r3d_18), (16, 112, 112), (1, 16, 16), (4, 28, 28),
                        "torchvision R3D-18 (3x3x3 convolutions)", calib=(2, 4)),
    "mc3_18": ModelSpec(_tv(tvm.video.mc3_18), (16, 112, 112), (1, 16, 16), (4, 28, 28),
                        "torchvision MC3-18 (3x3x3 convolutions in the stem and layer1, 1x3x3 after)",
                        calib=(2, 4)),
    "r2plus1d_18": ModelSpec(_tv(tvm.video.r2plus1d_18), (16, 112, 112), (1, 16, 16), (4, 28, 28),
                             "torchvision R(2+1)D-18 (each 3x3x3 factored into 1x3x3 then 3x1x1)",
                             calib=(2, 4)),
    "s3d": ModelSpec(_tv(tvm.video.s3d), (16, 224, 224), (13, 209, 209), (13, 209, 209),
                     "torchvision S3D (separable 3-D Inception blocks; the final 2x7x7 AvgPool3d fixes "
                     "the smallest clip)", calib=(2, 2)),
    # 1-D and multi-resolution networks written here (nets.py).
    "audio_cnn": ModelSpec(lambda a: nets.AudioCNN(), (2048,), (256,), (1024,),
                           "1-D waveform CNN: Conv1d with stride, dilation and groups, PReLU, parallel "
                           "temporal branches (nets.py)", channels=1,
                           prepare=lambda m: m.randomize_slopes()),
    "hrnet_style": ModelSpec(lambda a: nets.HRNetStyle(), (64, 64), (16, 16), (64, 64),
                             "HRNet-style: branches at 1/2, 1/4 and 1/8 with exchange units, "
                             "16/32/64 channels, segmentation head (nets.py)"),
}


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


# Ops whose all-constant instances are evaluated here.  torch 1.13 builds the
# `pads` input of every F.pad as ConstantOfShape/Cast/Concat/Reshape/Slice
# (step -1)/Transpose on constants and its constant folder gives up on the
# negative-step Slice; we finish the job so that the file only holds a Pad
# with an initializer `pads`.
FOLDABLE_OPS = {"ConstantOfShape", "Cast", "Concat", "Reshape", "Slice", "Transpose", "Unsqueeze"}


def np_dtype_of(onnx_type):
    """The numpy type of an ONNX element type. onnx.mapping, which Debian's
    onnx 1.12 has, is gone from onnx 1.16 on; its replacement is newer than
    1.12: take whichever this onnx has."""
    if hasattr(helper, "tensor_dtype_to_np_dtype"):
        return helper.tensor_dtype_to_np_dtype(onnx_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[onnx_type]


def legacy_export_options(export_fn):
    """Keyword arguments that keep torch.onnx.export on the TorchScript
    exporter these graphs were written for: PyTorch 2.9 and later default to
    the dynamo exporter (IR 10, opset 18+ forms), PyTorch 1.13 has no such
    switch."""
    import inspect
    try:
        params = inspect.signature(export_fn).parameters
    except (TypeError, ValueError):
        return {}
    return {"dynamo": False} if "dynamo" in params else {}


def _eval_node(node, args):
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    op = node.op_type
    if op == "ConstantOfShape":
        value = numpy_helper.to_array(attrs["value"]) if "value" in attrs else np.zeros(1, np.float32)
        return np.full(tuple(int(d) for d in args[0]), value.reshape(-1)[0], dtype=value.dtype)
    if op == "Cast":
        return args[0].astype(np_dtype_of(attrs["to"]))
    if op == "Concat":
        return np.concatenate(args, axis=attrs["axis"])
    if op == "Reshape":
        shape = [int(d) if d != 0 else args[0].shape[i] for i, d in enumerate(args[1])]
        return args[0].reshape(shape)
    if op == "Transpose":
        return np.transpose(args[0], attrs.get("perm"))
    if op == "Unsqueeze":
        out = args[0]
        for ax in sorted(int(a) % (out.ndim + len(args[1])) for a in args[1]):
            out = np.expand_dims(out, ax)
        return out
    if op == "Slice":
        data, starts, ends = args[0], args[1], args[2]
        axes = args[3] if len(args) > 3 and args[3] is not None else range(len(starts))
        steps = args[4] if len(args) > 4 and args[4] is not None else [1] * len(starts)
        sl = [slice(None)] * data.ndim
        for st, en, ax, sp in zip(starts, ends, axes, steps):
            sl[int(ax)] = slice(int(st), int(en), int(sp))
        return data[tuple(sl)]
    raise KeyError(op)


def fold_constants(graph):
    """Evaluate FOLDABLE_OPS nodes with constant inputs into initializers,
    then drop Constant/foldable nodes nobody reads.  Returns #nodes removed."""
    consts = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value":
            consts[n.output[0]] = numpy_helper.to_array(n.attribute[0].t)
    new_inits = []
    for n in graph.node:
        if n.op_type in FOLDABLE_OPS and all(i == "" or i in consts for i in n.input):
            val = _eval_node(n, [consts[i] if i else None for i in n.input])
            consts[n.output[0]] = val
            new_inits.append(numpy_helper.from_array(np.ascontiguousarray(val), n.output[0]))
    if not new_inits:
        return 0
    before = len(graph.node)
    folded = {t.name for t in new_inits}
    keep = [n for n in graph.node if n.output[0] not in folded]
    graph.initializer.extend(new_inits)
    # dead code elimination of constant-only producers
    while True:
        used = {i for n in keep for i in n.input} | {o.name for o in graph.output}
        nxt = [n for n in keep if n.op_type != "Constant" or n.output[0] in used]
        if len(nxt) == len(keep):
            break
        keep = nxt
    used = {i for n in keep for i in n.input} | {o.name for o in graph.output}
    inits = [i for i in graph.initializer if i.name in used]
    del graph.node[:]
    graph.node.extend(keep)
    del graph.initializer[:]
    graph.initializer.extend(inits)
    return before - len(keep)


def output_names(model):
    """The graph's output names: the detectors' head outputs, else "output"."""
    return getattr(model, "output_names", ["output"])


def as_outputs(result):
    return result if isinstance(result, tuple) else (result,)


def final_layer(model):
    """The classifier: the last Linear or convolution registered in the model."""
    last = None
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            last = m
    return last


@torch.no_grad()
def calibrate(model, spec, hw, seed):
    """BN running stats from random data, then logits scaled to std ~1."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # cumulative moving average
    gen = torch.Generator().manual_seed(seed + 1)
    batches, bs = spec.calib
    data = [torch.randn(bs, spec.channels, *hw, generator=gen) for _ in range(batches)]
    model.train()
    for x in data:
        model(x)
    model.eval()
    for m in model.modules():  # restore the default so the module is ordinary again
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.momentum = 0.1
    if len(output_names(model)) > 1:
        return  # a detector: its heads keep torchvision's initialisation (class prior bias)
    std = model(data[0]).std().item()
    fc = final_layer(model)
    if np.isfinite(std) and std > 0:
        fc.weight.mul_(1.0 / std)
        if fc.bias is not None:
            fc.bias.mul_(1.0 / std)


def file_name(name, spec, args, hw):
    parts = [name]
    if args.dynamic_batch:
        parts.append("bdyn")
    elif args.batch != 1:
        parts.append(f"b{args.batch}")
    if tuple(hw) != spec.size:
        parts.append(size_text(hw))
    if args.opset != OPSET:
        parts.append(f"op{args.opset}")
    return "-".join(parts) + ".onnx"


def export_one(name, args, hw, out_path):
    """Build, calibrate, check and export one model.  Returns a result dict."""
    spec = MODELS[name]
    t0 = time.time()
    seed_everything(args.seed)
    model = spec.build(args)
    if spec.prepare:
        spec.prepare(model)
    calibrate(model, spec, hw, args.seed)
    model.eval()

    batch = 1 if args.dynamic_batch else args.batch
    gen = torch.Generator().manual_seed(args.seed + 2)
    dummy = torch.randn(batch, spec.channels, *hw, generator=gen)
    with torch.no_grad():
        refs = as_outputs(model(dummy))
    if not all(torch.isfinite(r).all() for r in refs):
        raise RuntimeError(f"{name}: non-finite outputs in eval mode")
    max_abs = max(r.abs().max().item() for r in refs)

    outputs = output_names(model)
    dyn = {"input": {0: "batch"}, **{o: {0: "batch"} for o in outputs}} if args.dynamic_batch else None
    buf = io.BytesIO()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch 1.13 exporter chatter (Slice folding, prim::Constant)
        torch.onnx.export(model, dummy, buf, export_params=True, opset_version=args.opset,
                          do_constant_folding=True, input_names=["input"],
                          output_names=outputs, dynamic_axes=dyn,
                          training=torch.onnx.TrainingMode.EVAL,
                          keep_initializers_as_inputs=False, **legacy_export_options(torch.onnx.export))
    proto = onnx.load_from_string(buf.getvalue())
    fold_constants(proto.graph)
    proto.producer_name = PRODUCER
    proto.producer_version = f"torch-{torch.__version__}"
    proto.doc_string = f"{name}: {spec.doc}; random weights, seed {args.seed}"
    meta = {"ios.model": name, "ios.seed": str(args.seed),
            # images keep the key their files have always had
            "ios.image_size" if len(hw) == 2 else "ios.input_size": size_text(hw),
            "ios.batch": "dynamic" if args.dynamic_batch else str(args.batch)}
    if args.opset != OPSET:  # files at the default opset stay byte-identical to earlier exports
        meta["ios.opset"] = str(args.opset)
    if hasattr(model, "graph_sources"):
        meta["ios.randwire_graphs"] = ",".join(model.graph_sources)
    del proto.metadata_props[:]
    for k in sorted(meta):
        p = proto.metadata_props.add()
        p.key, p.value = k, meta[k]
    onnx.checker.check_model(proto)

    hist = Counter(n.op_type for n in proto.graph.node)
    bad = sorted(set(hist) - SUPPORTED_OPS)
    data = proto.SerializeToString()
    if not bad:
        tmp = out_path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, out_path)
        if args.truth:
            errors = write_truth(model, spec, args, hw, out_path)

    inits = {i.name: i for i in proto.graph.initializer}
    errors = errors if args.truth and not bad else None
    dw = 0
    for n in proto.graph.node:
        if n.op_type == "Conv":
            g = next((a.i for a in n.attribute if a.name == "group"), 1)
            if g > 1 and len(n.input) > 1 and n.input[1] in inits and inits[n.input[1]].dims[1] == 1:
                dw += 1
    return {"name": name, "path": out_path, "bytes": len(data), "nodes": len(proto.graph.node),
            "hist": hist, "bad": bad, "secs": time.time() - t0, "max_abs": max_abs,
            "sha256": hashlib.sha256(data).hexdigest(), "depthwise": dw,
            "sources": getattr(model, "graph_sources", None), "errors": errors,
            "outputs": outputs}


def error_vs_truth(value, truth):
    """(rms, max-abs) of value - truth, computed in float64."""
    d = value.astype(np.float64) - truth
    return float(np.sqrt(np.mean(d * d))), float(np.abs(d).max())


@torch.no_grad()
def write_truth(model, spec, args, hw, out_path):
    """The numerical truth the tests compare against: a seeded N(0,1) input
    (batch 2 for a symbolic batch) and the model's output computed in float64
    from the same weights, next to the model as <stem>.input.npy and
    <stem>.truth.npy (float32 input, float64 output); a model of several
    outputs has <stem>.truth.<output name>.npy for each.

    With --half-truth, also the independent half-precision runs on the same
    input (half_reference.py), float32: <stem>.ref-bf16.npy (PyTorch's
    bfloat16 CPU kernels) and <stem>.ref-fp16.npy (float16 emulated in
    float32), <stem>.ref-bf16.<output name>.npy etc. for several outputs.
    Returns {kind: [(rms, max-abs) per output]} of each reference against the
    truth, and "bf16-how" (torch, or emulated and why), or None without
    --half-truth."""
    batch = 2 if args.dynamic_batch else args.batch
    gen = torch.Generator().manual_seed(args.seed + 3)
    x = torch.randn(batch, spec.channels, *hw, generator=gen)
    truths = [t.numpy() for t in as_outputs(copy.deepcopy(model).double()(x.double()))]
    names = output_names(model)
    stem = out_path[:-len(".onnx")]

    def per_output(kind, values):
        if len(names) == 1:
            return [(f".{kind}.npy", values[0])]
        return [(f".{kind}.{n}.npy", v) for n, v in zip(names, values)]

    files = [(".input.npy", x.numpy())] + per_output("truth", truths)
    errors = None
    if args.half_truth:
        t0 = time.time()
        bf16, how = half_reference.bf16_reference(model, x)
        fp16 = half_reference.fp16_emulated_reference(model, x)
        errors = {"bf16-how": how}
        for kind, refs in (("ref-fp16", fp16), ("ref-bf16", bf16)):
            refs = [r.numpy().astype(np.float32) for r in refs]
            files += per_output(kind, refs)
            errors[kind] = [error_vs_truth(r, t) for r, t in zip(refs, truths)]
        errors["secs"] = time.time() - t0
    for suffix, value in files:
        tmp = stem + suffix + ".tmp"
        with open(tmp, "wb") as f:
            np.save(f, value)
        os.replace(tmp, stem + suffix)
    return errors


def report(r):
    hist = " ".join(f"{k}:{v}" for k, v in sorted(r["hist"].items(), key=lambda kv: (-kv[1], kv[0])))
    extra = f" dwconv={r['depthwise']}" if r["depthwise"] else ""
    print(f"{r['name']:<15} {r['path']}  {r['bytes'] / 1e6:.1f} MB  nodes={r['nodes']}{extra}  "
          f"{r['secs']:.1f}s  max|out|={r['max_abs']:.3g}  [{hist}]", flush=True)
    if r["errors"]:
        for kind in ("ref-fp16", "ref-bf16"):
            errs = "  ".join(f"{o}: rms={rms:.3g} max={mx:.3g}"
                             for o, (rms, mx) in zip(r["outputs"], r["errors"][kind]))
            how = (f"  [{r['errors']['bf16-how']}; both references {r['errors']['secs']:.1f}s]"
                   if kind == "ref-bf16" else "")
            print(f"  {kind} vs float64 truth: {errs}{how}", flush=True)
    if r["sources"] and any(s.startswith("generated") for s in r["sources"]):
        print(f"  note: randwire graph files not found, generated: {', '.join(r['sources'])}")
    if r["bad"]:
        print(f"error: {r['name']}: unsupported op types {', '.join(r['bad'])}; file not written",
              file=sys.stderr)


def size_text(size):
    return "x".join(str(d) for d in size)


def parse_size(s):
    try:
        dims = tuple(int(v) for v in s.lower().split("x"))
        if not 1 <= len(dims) <= 3 or min(dims) <= 0:
            raise ValueError
        return dims
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"bad input size '{s}', expected HxW (e.g. 224x224), TxHxW for a video model (e.g. 8x112x112) "
            "or L for a 1-D one (e.g. 2048)")


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Output file name: <name>[-b<N>|-bdyn][-<H>x<W>].onnx (suffixes only for a batch "
               "other than 1, --dynamic-batch, an image size other than the model's default); "
               "e.g. inception_v3-b2-75x75.onnx.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="all", help="comma-separated names, or 'all' (default)")
    ap.add_argument("--out-dir", default=SCRIPT_DIR, help="output folder (default: %(default)s)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--batch", type=int, default=1, help="static batch size (default 1)")
    g.add_argument("--dynamic-batch", action="store_true", help="symbolic batch dim 'batch'")
    ap.add_argument("--image-size", "--input-size", dest="image_size", type=parse_size,
                    help="HxW, TxHxW for a video model, L for a 1-D one (default: per model, see --list)")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--opset", type=int, default=OPSET, choices=range(13, 18), metavar="{13..17}",
                    help="ONNX opset of the export (default %(default)s; opset 17 writes LayerNorm as "
                         "LayerNormalization)")
    ap.add_argument("--truth", action="store_true",
                    help="also write <stem>.input.npy (seeded N(0,1), batch 2 with --dynamic-batch) and "
                         "<stem>.truth.npy (the model's output in float64 on that input)")
    ap.add_argument("--half-truth", action="store_true",
                    help="implies --truth; also write <stem>.ref-bf16.npy (PyTorch's bfloat16 on the CPU) "
                         "and <stem>.ref-fp16.npy (float16 emulated in float32, half_reference.py): the "
                         "model's half-precision outputs on the seeded input, float32")
    ap.add_argument("--randwire-graphs", default=DEFAULT_GRAPH_DIR,
                    help="folder with ws-N-K-P-stage.txt graphs (default: %(default)s; "
                         "missing files are generated with a fixed seed)")
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="torch CPU threads")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    ap.add_argument("--self-test", action="store_true",
                    help="export each selected model twice (at its small test size unless "
                         "--image-size is given) and check the files are byte-identical")
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error("--batch must be >= 1")
    args.truth |= args.half_truth
    torch.set_num_threads(max(1, args.threads))

    if args.list:
        for n, s in MODELS.items():
            print(f"{n:<15} default {size_text(s.size)}  min {size_text(s.min_size)}  {s.doc}")
        return 0

    if args.models == "all":
        names = list(MODELS)
    else:
        names = [n.strip() for n in args.models.split(",") if n.strip()]
        unknown = [n for n in names if n not in MODELS]
        if unknown:
            ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")

    if args.self_test and args.models == "all":
        names = ["squeezenet1_1", "randwire", "nasnet_a_large"]
    for n in names:
        s = MODELS[n]
        hw = args.image_size or (s.test_size if args.self_test else s.size)
        if len(hw) != len(s.size):
            ap.error(f"{n} takes a {len(s.size)}-D input size like {size_text(s.size)}, got {size_text(hw)}")
        if any(d < m for d, m in zip(hw, s.min_size)):
            ap.error(f"{n} needs an input size of at least {size_text(s.min_size)}, got {size_text(hw)}")

    failed = False
    if args.self_test:
        with tempfile.TemporaryDirectory() as tmp:
            for n in names:
                hw = args.image_size or MODELS[n].test_size
                runs = [export_one(n, args, hw, os.path.join(tmp, f"{n}-{i}.onnx")) for i in range(2)]
                report(runs[0])
                same = runs[0]["sha256"] == runs[1]["sha256"]
                print(f"self-test {n}: {'identical' if same else 'DIFFERENT'} sha256 {runs[0]['sha256'][:16]}"
                      + ("" if same else f" vs {runs[1]['sha256'][:16]}"))
                failed |= not same or bool(runs[0]["bad"])
        print("self-test:", "FAILED" if failed else "ok")
        return 1 if failed else 0

    os.makedirs(args.out_dir, exist_ok=True)
    for n in names:
        hw = args.image_size or MODELS[n].size
        r = export_one(n, args, hw, os.path.join(args.out_dir, file_name(n, MODELS[n], args, hw)))
        report(r)
        failed |= bool(r["bad"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
