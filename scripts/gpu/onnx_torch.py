#!/usr/bin/env python3
"""A small evaluator of ONNX graphs in PyTorch: an independent peer of ios.

One function per ONNX operator that the test models use (and the usual
companions), evaluated eagerly node by node on torch tensors, so that the GPU
kit can

  (a) compute the float64 "truth" of an ONNX file (precision fp64),
  (b) run the same file on a GPU at fp32, tf32, fp16 or bf16 as an
      independent peer of ios's own kernels,
  (c) calibrate randomly rebuilt weights layer by layer (calibrate,
      scale-marks; see tools/model_weights.cpp).

Only onnx (load, numpy_helper, helper), torch and numpy: runs under Debian's
/usr/bin/python3 (torch 1.13, onnx 1.12) and on the GPU machine (torch 2.11,
onnx 1.23).  Shape arithmetic (Shape, Gather, Concat, Range, ...) is
evaluated on int64 torch tensors like everything else: a plain interpreter.

Precisions (run(..., precision=...)):

  fp64  every floating tensor (initializers of any float type, inputs,
        constants, Cast-to-float results) is torch.float64, and a Cast to any
        float type is the identity: the file's math without rounding.
  fp32  float32, TF32 off (cudnn.allow_tf32 and cuda.matmul.allow_tf32).
  tf32  float32, TF32 on for convolutions and matmuls.
  fp16, bf16
        16-bit storage: every floating initializer, input, constant and
        Cast-to-float target (a Cast to FLOAT in a typed file included) is
        that dtype.  On CUDA torch computes each op in that dtype (its
        kernels accumulate in float32; cuBLAS reduced-precision reductions
        are switched off for the run).  On the CPU torch 1.13 has no float16
        convolution, so fp16 is emulated: every op computes in float32 on
        float16-representable values and every node's floating outputs are
        rounded to float16 (as ONNX Runtime's CPU provider and a GPU's fp16
        kernels with float32 accumulation do).  bf16 on the CPU uses torch's
        bfloat16 kernels.  Wherever torch has no kernel for the 16-bit dtype
        (either device), that one node is computed in float32 and its
        outputs rounded to the 16-bit dtype.
  The TF32 / cuDNN / reduced-precision flags are restored after each run.
  cuDNN runs with deterministic=True, benchmark=False during a run.

Integer tensors keep their ONNX types (unsigned 16/32/64-bit ones, which
torch 1.13 lacks, become int64).

API:
  run(model, inputs, precision="fp64", device="cpu", hook=None)
      -> {output name: np.ndarray} (float32; float64 for fp64)
  hook(node, outputs, env) is called after every node (outputs: list of
  torch tensors, env: name -> tensor); it may return replacement outputs.
  Every operator not implemented raises NotImplementedError("<op> (node <name>)").

CLI:
  onnx_torch.py truth MODEL.onnx [--input X.npy | --input NAME=X.npy ...] --out-dir D [--batch N]
  onnx_torch.py run MODEL.onnx --precision fp16 --device cuda --input X.npy --out-dir D [--batch N]
  onnx_torch.py calibrate FILLED.onnx EXPORT.onnx --input X.npy --out SCALES.json [--skeleton SKEL.onnx]
  onnx_torch.py scale-marks SKEL.onnx SCALES.json OUT.onnx
  onnx_torch.py ops MODEL.onnx ...       # op types (and attributes) used, and any not implemented
Outputs are written as D/<output name, characters outside [A-Za-z0-9._-]
replaced by _>.npy.  Without --input, a seeded N(0,1) float32 input is made
(numpy default_rng(0)), symbolic dimensions taking --batch (default 1); with
--input, the files give the shapes (--batch, if given, must match them).
Exit status: 0 ok, 2 bad usage or input, 1 anything else.
"""

import argparse
import json
import math
import os
import re
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

__all__ = ["run", "Evaluator", "calibrate", "apply_scales", "rebuilt_weights", "load_model",
           "supported_ops", "tf32_state", "sanitize", "MARK", "PRECISIONS"]

PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16")
MARK = "ios-model-weights rms:"  # tools/model_weights.cpp
WEIGHT_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")

FLOAT_TYPES = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}
INT_TYPES = {
    TensorProto.INT8: torch.int8, TensorProto.UINT8: torch.uint8, TensorProto.INT16: torch.int16,
    TensorProto.INT32: torch.int32, TensorProto.INT64: torch.int64, TensorProto.BOOL: torch.bool,
    TensorProto.UINT16: torch.int64, TensorProto.UINT32: torch.int64, TensorProto.UINT64: torch.int64,
}


class BadInput(Exception):
    """A user error (exit status 2)."""


def sanitize(name):
    """The file name of an output: characters outside [A-Za-z0-9._-] become _."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) + ".npy"


def load_model(model):
    if isinstance(model, onnx.ModelProto):
        return model
    path = str(model)
    if not os.path.isfile(path):
        raise BadInput(f"{path}: no such file")
    try:
        return onnx.load(path)
    except Exception as e:  # protobuf's DecodeError, a broken external-data reference, ...
        raise BadInput(f"{path}: not a readable ONNX model ({type(e).__name__}: {e})")


def tensor_to_numpy(t):
    """An initializer or Constant tensor as numpy; BFLOAT16 widened to float32
    exactly (onnx 1.12 and 1.23 treat bfloat16 differently)."""
    if t.data_type == TensorProto.BFLOAT16:
        if t.raw_data:
            u16 = np.frombuffer(t.raw_data, dtype="<u2")
        else:
            u16 = np.asarray(t.int32_data, dtype=np.uint32).astype(np.uint16)
        return (u16.astype(np.uint32) << 16).view(np.float32).reshape(tuple(t.dims))
    if t.data_type == TensorProto.STRING:
        raise NotImplementedError(f"string tensor '{t.name}'")
    if t.doc_string.startswith(MARK) and not t.raw_data and not t.float_data and not t.int32_data:
        raise BadInput(f"initializer '{t.name}' is a weight mark without data (a skeleton): "
                       "run ios-model-weights fill first")
    a = numpy_helper.to_array(t)
    if a.dtype.kind not in "biuf":  # e.g. an ml_dtypes type in a newer onnx
        a = a.astype(np.float32)
    return a


def _attrs(node):
    out = {}
    for a in node.attribute:
        v = helper.get_attribute_value(a)
        if isinstance(v, bytes):
            v = v.decode("utf-8")
        elif isinstance(v, list) and v and isinstance(v[0], bytes):
            v = [s.decode("utf-8") for s in v]
        out[a.name] = v
    return out


# ----------------------------------------------------------------------------
# Precision

class _Precision:
    STORE = {"fp64": torch.float64, "fp32": torch.float32, "tf32": torch.float32,
             "fp16": torch.float16, "bf16": torch.bfloat16}

    def __init__(self, name, device, native=None):
        if name not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not '{name}'")
        self.name = name
        self.store = self.STORE[name]
        self.emulate = device.type == "cpu" and name == "fp16" if native is None else (
            name in ("fp16", "bf16") and not native)
        self.compute = torch.float32 if self.emulate else self.store
        self.half = name in ("fp16", "bf16")

    def fl(self, t):
        """A floating tensor as this precision holds it."""
        if self.emulate:
            return t.to(self.store).to(self.compute)
        return t.to(self.store)


def _get(obj, name):
    try:
        return getattr(obj, name)
    except (AttributeError, AssertionError, RuntimeError):
        return None


def _tf32_switches():
    """[(object, attribute, value for TF32 on, value for TF32 off)] for cuBLAS
    matmuls and cuDNN convolutions: PyTorch 2.9's fp32_precision API where it
    exists (it refuses a mix with the legacy flags), else the allow_tf32 flags."""
    m, c = torch.backends.cuda.matmul, torch.backends.cudnn
    conv = _get(c, "conv")
    if isinstance(_get(m, "fp32_precision"), str) and conv is not None \
            and isinstance(_get(conv, "fp32_precision"), str):
        return [(m, "fp32_precision", "tf32", "ieee"), (conv, "fp32_precision", "tf32", "ieee")]
    return [(m, "allow_tf32", True, False), (c, "allow_tf32", True, False)]


def tf32_state():
    """(matmul, convolution): whether torch may use TF32 for float32 now."""
    return tuple(_get(obj, name) == on for obj, name, on, _ in _tf32_switches())


class _Flags:
    """Sets torch's TF32 / cuDNN / reduced-precision flags for a run and restores them."""

    def __init__(self, precision):
        self.p = precision

    def __enter__(self):
        m, c = torch.backends.cuda.matmul, torch.backends.cudnn
        self.saved = []

        def put(obj, name, value):
            self.saved.append((obj, name, getattr(obj, name)))
            setattr(obj, name, value)

        tf32 = self.p.name == "tf32"
        for obj, name, on, off in _tf32_switches():
            put(obj, name, on if tf32 else off)
        put(c, "deterministic", True)
        put(c, "benchmark", False)
        for flag in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
            if isinstance(_get(m, flag), bool):  # float32 accumulation in 16-bit GEMMs
                put(m, flag, False)
        return self

    def __exit__(self, *exc):
        for obj, name, value in reversed(self.saved):
            setattr(obj, name, value)
        return False


# ----------------------------------------------------------------------------
# Operators: OPS[op_type](ev, node, inputs, attrs) -> list of tensors.  inputs
# holds None for an absent optional input.

OPS = {}


def op(*names):
    def register(fn):
        for n in names:
            OPS[n] = fn
        return fn
    return register


def supported_ops():
    return sorted(OPS)


def _ints(t):
    """A 0-d or 1-d integer tensor as a list of Python ints."""
    return [int(v) for v in t.reshape(-1).tolist()]


def _is_float(t):
    return t.is_floating_point()


def _axis(a, rank):
    return a + rank if a < 0 else a


def _check(cond, node, what):
    if not cond:
        raise NotImplementedError(f"{node.op_type} (node {node.name}): {what}")


# --- element-wise ---------------------------------------------------------

def _unary(fn):
    return lambda ev, node, x, a: [fn(x[0])]


for _name, _fn in {
    "Relu": torch.relu, "Sigmoid": torch.sigmoid, "Tanh": torch.tanh, "Erf": torch.erf,
    "Exp": torch.exp, "Log": torch.log, "Sqrt": torch.sqrt, "Neg": torch.neg, "Abs": torch.abs,
    "Reciprocal": torch.reciprocal, "Floor": torch.floor, "Ceil": torch.ceil, "Round": torch.round,
    "Sign": torch.sign, "Sin": torch.sin, "Cos": torch.cos, "Tan": torch.tan, "Asin": torch.asin,
    "Acos": torch.acos, "Atan": torch.atan, "Sinh": torch.sinh, "Cosh": torch.cosh,
    "Asinh": torch.asinh, "Acosh": torch.acosh, "Atanh": torch.atanh, "Not": torch.logical_not,
    "IsNaN": torch.isnan, "Softsign": lambda x: x / (1 + x.abs()),
    "Softplus": F.softplus, "Mish": lambda x: x * torch.tanh(F.softplus(x)),
}.items():
    OPS[_name] = _unary(_fn)


@op("Identity", "Dropout")
def _identity(ev, node, x, a):
    outs = [x[0]]
    if len(node.output) > 1:
        outs.append(torch.ones_like(x[0], dtype=torch.bool))
    return outs


@op("IsInf")
def _isinf(ev, node, x, a):
    t = x[0]
    pos, neg = a.get("detect_positive", 1), a.get("detect_negative", 1)
    return [(torch.isposinf(t) & bool(pos)) | (torch.isneginf(t) & bool(neg))]


@op("LeakyRelu")
def _leaky(ev, node, x, a):
    return [F.leaky_relu(x[0], a.get("alpha", 0.01))]


@op("Elu")
def _elu(ev, node, x, a):
    return [F.elu(x[0], a.get("alpha", 1.0))]


@op("Celu")
def _celu(ev, node, x, a):
    return [F.celu(x[0], a.get("alpha", 1.0))]


@op("Selu")
def _selu(ev, node, x, a):
    alpha = a.get("alpha", 1.67326319217681884765625)
    gamma = a.get("gamma", 1.05070102214813232421875)
    t = x[0]
    return [gamma * torch.where(t > 0, t, alpha * (torch.exp(t) - 1))]


@op("ThresholdedRelu")
def _threlu(ev, node, x, a):
    t = x[0]
    return [torch.where(t > a.get("alpha", 1.0), t, torch.zeros_like(t))]


@op("PRelu")
def _prelu(ev, node, x, a):
    t, slope = x
    return [torch.where(t < 0, t * slope, t)]


@op("HardSigmoid")
def _hardsigmoid(ev, node, x, a):
    return [torch.clamp(a.get("alpha", 0.2) * x[0] + a.get("beta", 0.5), 0, 1)]


@op("HardSwish")
def _hardswish(ev, node, x, a):
    t = x[0]
    return [t * torch.clamp(t + 3, 0, 6) / 6]  # = x * max(0, min(1, x/6 + 1/2)), as torch computes it


@op("Gelu")
def _gelu(ev, node, x, a):
    approx = a.get("approximate", "none")
    if approx == "tanh":
        return [F.gelu(x[0], approximate="tanh")]
    return [F.gelu(x[0])]


@op("Clip")
def _clip(ev, node, x, a):
    t = x[0]
    lo = x[1] if len(x) > 1 else None
    hi = x[2] if len(x) > 2 else None
    if lo is None and "min" in a:
        lo = torch.tensor(a["min"])
    if hi is None and "max" in a:
        hi = torch.tensor(a["max"])
    if lo is not None:
        t = torch.maximum(t, lo.to(t.dtype).to(t.device))
    if hi is not None:
        t = torch.minimum(t, hi.to(t.dtype).to(t.device))
    return [t]


@op("Add")
def _add(ev, node, x, a):
    return [x[0] + x[1]]


@op("Sub")
def _sub(ev, node, x, a):
    return [x[0] - x[1]]


@op("Mul")
def _mul(ev, node, x, a):
    return [x[0] * x[1]]


@op("Div")
def _div(ev, node, x, a):
    if _is_float(x[0]):
        return [x[0] / x[1]]
    return [torch.div(x[0], x[1], rounding_mode="trunc")]


@op("Mod")
def _mod(ev, node, x, a):
    if a.get("fmod", 0):
        return [torch.fmod(x[0], x[1])]
    return [torch.remainder(x[0], x[1])]


@op("Pow")
def _pow(ev, node, x, a):
    r = torch.pow(x[0], x[1])
    return [r.to(x[0].dtype)]


def _variadic(fn):
    def f(ev, node, x, a):
        r = x[0]
        for t in x[1:]:
            r = fn(r, t)
        return [r]
    return f


OPS["Max"] = _variadic(torch.maximum)
OPS["Min"] = _variadic(torch.minimum)
OPS["Sum"] = _variadic(torch.add)


@op("Mean")
def _mean(ev, node, x, a):
    return [_variadic(torch.add)(ev, node, x, a)[0] / len(x)]


for _name, _fn in {"Equal": torch.eq, "Less": torch.lt, "Greater": torch.gt, "LessOrEqual": torch.le,
                   "GreaterOrEqual": torch.ge, "And": torch.logical_and, "Or": torch.logical_or,
                   "Xor": torch.logical_xor, "BitShift": None}.items():
    if _fn is not None:
        OPS[_name] = (lambda fn: lambda ev, node, x, a: [fn(x[0], x[1])])(_fn)


@op("Where")
def _where(ev, node, x, a):
    return [torch.where(x[0].to(torch.bool), x[1], x[2])]


# --- types and constants --------------------------------------------------

@op("Cast")
def _cast(ev, node, x, a):
    return [ev.cast(x[0], a["to"])]


@op("CastLike")
def _castlike(ev, node, x, a):
    t, like = x[0], x[1]
    if _is_float(like):
        return [ev.p.fl(t) if _is_float(t) else ev.p.fl(t.to(torch.float64))]
    return [t.to(like.dtype)]


@op("Constant")
def _constant(ev, node, x, a):
    if "value" in a:
        return [ev.from_numpy(tensor_to_numpy(a["value"]))]
    if "value_float" in a:
        return [ev.from_numpy(np.array(a["value_float"], np.float32))]
    if "value_floats" in a:
        return [ev.from_numpy(np.array(a["value_floats"], np.float32))]
    if "value_int" in a:
        return [ev.from_numpy(np.array(a["value_int"], np.int64))]
    if "value_ints" in a:
        return [ev.from_numpy(np.array(a["value_ints"], np.int64))]
    raise NotImplementedError(f"Constant (node {node.name}): attribute {sorted(a)}")


@op("ConstantOfShape")
def _constant_of_shape(ev, node, x, a):
    value = tensor_to_numpy(a["value"]).reshape(-1)[0:1] if "value" in a else np.zeros(1, np.float32)
    v = ev.from_numpy(value)
    return [v.reshape(()).expand(_ints(x[0])).clone()]


@op("Shape")
def _shape(ev, node, x, a):
    dims = list(x[0].shape)
    start, end = a.get("start", 0), a.get("end", None)
    dims = dims[start:end] if end is not None else dims[start:]
    return [torch.tensor(dims, dtype=torch.int64, device=ev.device)]


@op("Size")
def _size(ev, node, x, a):
    return [torch.tensor(x[0].numel(), dtype=torch.int64, device=ev.device)]


@op("Range")
def _range(ev, node, x, a):
    start, limit, delta = x
    if _is_float(start):
        s, l, d = float(start), float(limit), float(delta)
        n = max(int(math.ceil((l - s) / d)), 0)
        i = torch.arange(n, dtype=torch.float64, device=ev.device)
        return [(start.double() + i * delta.double()).to(start.dtype)]
    s, l, d = int(start), int(limit), int(delta)
    return [torch.arange(s, l, d, dtype=start.dtype, device=ev.device)]


# --- shapes and indexing ----------------------------------------------------

@op("Reshape")
def _reshape(ev, node, x, a):
    t, shape = x[0], _ints(x[1])
    if not a.get("allowzero", 0):
        shape = [t.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return [t.reshape(shape)]


@op("Flatten")
def _flatten(ev, node, x, a):
    t = x[0]
    axis = _axis(a.get("axis", 1), t.dim())
    outer = int(np.prod(t.shape[:axis], dtype=np.int64))
    return [t.reshape(outer, -1) if t.numel() else t.reshape(outer, int(np.prod(t.shape[axis:])))]


@op("Transpose")
def _transpose(ev, node, x, a):
    t = x[0]
    perm = a.get("perm", list(range(t.dim() - 1, -1, -1)))
    return [t.permute(*perm)]


@op("Squeeze")
def _squeeze(ev, node, x, a):
    t = x[0]
    axes = _ints(x[1]) if len(x) > 1 and x[1] is not None else a.get("axes")
    if axes is None:
        return [torch.squeeze(t)]
    axes = sorted((_axis(ax, t.dim()) for ax in axes), reverse=True)
    for ax in axes:
        t = t.squeeze(ax)
    return [t]


@op("Unsqueeze")
def _unsqueeze(ev, node, x, a):
    t = x[0]
    axes = _ints(x[1]) if len(x) > 1 and x[1] is not None else a["axes"]
    rank = t.dim() + len(axes)
    for ax in sorted(_axis(ax, rank) for ax in axes):
        t = t.unsqueeze(ax)
    return [t]


@op("Concat")
def _concat(ev, node, x, a):
    ts = [t for t in x if t is not None]
    return [torch.cat(ts, dim=_axis(a["axis"], ts[0].dim()))]


@op("Split")
def _split(ev, node, x, a):
    t = x[0]
    axis = _axis(a.get("axis", 0), t.dim())
    dim = t.shape[axis]
    if len(x) > 1 and x[1] is not None:
        sizes = _ints(x[1])
    elif "split" in a:
        sizes = list(a["split"])
    else:
        n = a.get("num_outputs", len(node.output))
        chunk = -(-dim // n)  # opset 18: the last chunk smaller
        sizes = [min(chunk, dim - i * chunk) for i in range(n)]
    return list(torch.split(t, sizes, dim=axis))


def _norm_index(idx, dim):
    return torch.where(idx < 0, idx + dim, idx)


@op("Gather")
def _gather(ev, node, x, a):
    data, idx = x
    axis = _axis(a.get("axis", 0), data.dim())
    idx = _norm_index(idx.to(torch.int64), data.shape[axis])
    out = torch.index_select(data, axis, idx.reshape(-1))
    shape = list(data.shape[:axis]) + list(idx.shape) + list(data.shape[axis + 1:])
    return [out.reshape(shape)]


@op("GatherElements")
def _gather_elements(ev, node, x, a):
    data, idx = x
    axis = _axis(a.get("axis", 0), data.dim())
    return [torch.gather(data, axis, _norm_index(idx.to(torch.int64), data.shape[axis]))]


@op("GatherND")
def _gather_nd(ev, node, x, a):
    data, idx = x
    _check(a.get("batch_dims", 0) == 0, node, "batch_dims != 0")
    idx = idx.to(torch.int64)
    k = idx.shape[-1]
    cols = [_norm_index(idx[..., i], data.shape[i]) for i in range(k)]
    return [data[tuple(cols)]]


@op("ScatterND")
def _scatter_nd(ev, node, x, a):
    data, idx, upd = x
    idx = idx.to(torch.int64)
    k = idx.shape[-1]
    cols = tuple(_norm_index(idx[..., i], data.shape[i]) for i in range(k))
    out = data.clone()
    red = a.get("reduction", "none")
    if red == "none":
        out[cols] = upd
    elif red == "add":
        out.index_put_(cols, upd, accumulate=True)
    elif red == "mul":
        out[cols] = out[cols] * upd
    elif red == "max":
        out[cols] = torch.maximum(out[cols], upd)
    elif red == "min":
        out[cols] = torch.minimum(out[cols], upd)
    else:
        raise NotImplementedError(f"ScatterND (node {node.name}): reduction {red}")
    return [out]


@op("ScatterElements", "Scatter")
def _scatter_elements(ev, node, x, a):
    data, idx, upd = x
    axis = _axis(a.get("axis", 0), data.dim())
    idx = _norm_index(idx.to(torch.int64), data.shape[axis])
    red = a.get("reduction", "none")
    if red == "none":
        return [torch.scatter(data, axis, idx, upd)]
    names = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}
    return [torch.scatter_reduce(data, axis, idx, upd, names[red], include_self=True)]


@op("Slice")
def _slice(ev, node, x, a):
    t = x[0]
    if len(x) > 1:
        starts, ends = _ints(x[1]), _ints(x[2])
        axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else list(range(len(starts)))
        steps = _ints(x[4]) if len(x) > 4 and x[4] is not None else [1] * len(starts)
    else:  # opset < 10
        starts, ends = a["starts"], a["ends"]
        axes = a.get("axes", list(range(len(starts))))
        steps = [1] * len(starts)
    index = [slice(None)] * t.dim()
    for st, en, ax, sp in zip(starts, ends, axes, steps):
        ax = _axis(ax, t.dim())
        dim = t.shape[ax]
        big = 2 ** 62  # INT64 extremes clamp as Python's slice does (ONNX's rule)
        st, en = max(min(st, big), -big), max(min(en, big), -big)
        start, stop, step = slice(st, en, sp).indices(dim)
        if step > 0:
            index[ax] = slice(start, stop, step)
        else:
            t = t[tuple(index)]
            index = [slice(None)] * t.dim()
            sel = torch.tensor(list(range(start, stop, step)), dtype=torch.int64, device=t.device)
            t = torch.index_select(t, ax, sel)
    return [t[tuple(index)]]


@op("Expand")
def _expand(ev, node, x, a):
    t = x[0]
    shape = torch.broadcast_shapes(tuple(t.shape), tuple(_ints(x[1])))
    return [t.expand(shape)]


@op("Tile")
def _tile(ev, node, x, a):
    return [x[0].repeat(*_ints(x[1]))]


@op("NonZero")
def _nonzero(ev, node, x, a):
    return [torch.nonzero(x[0]).t().contiguous()]


@op("OneHot")
def _onehot(ev, node, x, a):
    idx, depth, values = x
    d = int(depth.reshape(-1)[0])
    idx = idx.to(torch.int64)
    idx = torch.where(idx < 0, idx + d, idx)
    axis = a.get("axis", -1)
    oh = F.one_hot(idx.clamp(0, d - 1), d) * ((idx >= 0) & (idx < d)).unsqueeze(-1)
    out = torch.where(oh.bool(), values[1], values[0])
    rank = out.dim()
    return [torch.movedim(out, -1, _axis(axis, rank))]


@op("Trilu")
def _trilu(ev, node, x, a):
    k = int(x[1]) if len(x) > 1 and x[1] is not None else 0
    return [torch.triu(x[0], k) if a.get("upper", 1) else torch.tril(x[0], k)]


@op("CumSum")
def _cumsum(ev, node, x, a):
    t = x[0]
    axis = _axis(int(x[1]), t.dim())
    if a.get("reverse", 0):
        t = t.flip(axis)
    r = torch.cumsum(t, axis).to(t.dtype)
    if a.get("exclusive", 0):
        r = r - t
    if a.get("reverse", 0):
        r = r.flip(axis)
    return [r]


@op("DepthToSpace")
def _depth_to_space(ev, node, x, a):
    t, b = x[0], a["blocksize"]
    n, c, h, w = t.shape
    if a.get("mode", "DCR") == "DCR":
        t = t.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        t = t.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return [t.reshape(n, c // (b * b), h * b, w * b)]


@op("SpaceToDepth")
def _space_to_depth(ev, node, x, a):
    t, b = x[0], a["blocksize"]
    n, c, h, w = t.shape
    t = t.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return [t.reshape(n, c * b * b, h // b, w // b)]


@op("TopK")
def _topk(ev, node, x, a):
    t = x[0]
    k = int(x[1].reshape(-1)[0]) if len(x) > 1 else a["k"]
    axis = _axis(a.get("axis", -1), t.dim())
    v, i = torch.topk(t, k, dim=axis, largest=bool(a.get("largest", 1)), sorted=True)
    return [v, i]


def _argx(fn):
    def f(ev, node, x, a):
        t = x[0]
        axis = _axis(a.get("axis", 0), t.dim())
        keep = bool(a.get("keepdims", 1))
        if a.get("select_last_index", 0):
            r = t.shape[axis] - 1 - fn(t.flip(axis), dim=axis, keepdim=keep)
        else:
            r = fn(t, dim=axis, keepdim=keep)
        return [r]
    return f


OPS["ArgMax"] = _argx(torch.argmax)
OPS["ArgMin"] = _argx(torch.argmin)


# --- reductions -------------------------------------------------------------

def _reduce_axes(ev, node, x, a, t):
    axes = None
    if len(x) > 1 and x[1] is not None and x[1].numel() > 0:
        axes = _ints(x[1])
    elif "axes" in a:
        axes = list(a["axes"])
    if axes is None:
        if a.get("noop_with_empty_axes", 0):
            return None
        axes = list(range(t.dim()))
    return sorted(_axis(ax, t.dim()) for ax in axes)


def _reduction(fn):
    def f(ev, node, x, a):
        t = x[0]
        axes = _reduce_axes(ev, node, x, a, t)
        if axes is None:
            return [t]
        keep = bool(a.get("keepdims", 1))
        if not axes:
            return [t]
        return [fn(t, axes, keep)]
    return f


def _amax(t, axes, keep):
    return torch.amax(t, dim=axes, keepdim=keep)


def _amin(t, axes, keep):
    return torch.amin(t, dim=axes, keepdim=keep)


def _prod(t, axes, keep):
    for ax in sorted(axes, reverse=True):
        t = torch.prod(t, dim=ax, keepdim=keep)
    return t


OPS.update({
    "ReduceMean": _reduction(lambda t, ax, k: torch.mean(t, dim=ax, keepdim=k)),
    "ReduceSum": _reduction(lambda t, ax, k: torch.sum(t, dim=ax, keepdim=k).to(t.dtype)),
    "ReduceMax": _reduction(_amax),
    "ReduceMin": _reduction(_amin),
    "ReduceProd": _reduction(_prod),
    "ReduceSumSquare": _reduction(lambda t, ax, k: torch.sum(t * t, dim=ax, keepdim=k)),
    "ReduceL1": _reduction(lambda t, ax, k: torch.sum(t.abs(), dim=ax, keepdim=k)),
    "ReduceL2": _reduction(lambda t, ax, k: torch.sqrt(torch.sum(t * t, dim=ax, keepdim=k))),
    "ReduceLogSum": _reduction(lambda t, ax, k: torch.log(torch.sum(t, dim=ax, keepdim=k))),
    "ReduceLogSumExp": _reduction(lambda t, ax, k: torch.logsumexp(t, dim=ax, keepdim=k)),
})


def _softmax_like(fn):
    def f(ev, node, x, a):
        t = x[0]
        if ev.opset >= 13:
            return [fn(t, _axis(a.get("axis", -1), t.dim()))]
        axis = _axis(a.get("axis", 1), t.dim())  # opset < 13: on the 2-D flattening
        shape = t.shape
        return [fn(t.reshape(int(np.prod(shape[:axis], dtype=np.int64)), -1), 1).reshape(shape)]
    return f


OPS["Softmax"] = _softmax_like(lambda t, d: torch.softmax(t, d))
OPS["LogSoftmax"] = _softmax_like(lambda t, d: torch.log_softmax(t, d))
OPS["Hardmax"] = _softmax_like(
    lambda t, d: F.one_hot(torch.argmax(t, d), t.shape[d]).movedim(-1, d).to(t.dtype))


# --- linear algebra ------------------------------------------------------------

@op("MatMul")
def _matmul(ev, node, x, a):
    return [torch.matmul(x[0], x[1])]


@op("Gemm")
def _gemm(ev, node, x, a):
    A, B = x[0], x[1]
    C = x[2] if len(x) > 2 else None
    if a.get("transA", 0):
        A = A.t()
    if a.get("transB", 0):
        B = B.t()
    y = torch.matmul(A, B)
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if alpha != 1.0:
        y = y * alpha
    if C is not None:
        y = y + (C if beta == 1.0 else beta * C)
    return [y]


@op("Einsum")
def _einsum(ev, node, x, a):
    return [torch.einsum(re.sub(r"\s+", "", a["equation"]), *x)]


# --- convolution and pooling -------------------------------------------------

def _spatial(t):
    return t.dim() - 2


def _auto_pads(a, in_sizes, kernel, strides, dilations):
    """ONNX pads [b1.., e1..] with auto_pad applied."""
    n = len(in_sizes)
    mode = a.get("auto_pad", "NOTSET")
    if mode in ("NOTSET", ""):
        return list(a.get("pads", [0] * (2 * n)))
    if mode == "VALID":
        return [0] * (2 * n)
    begin, end = [], []
    for i in range(n):
        out = -(-in_sizes[i] // strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in_sizes[i], 0)
        small, big = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else big)
        end.append(big if mode == "SAME_UPPER" else small)
    return begin + end


def _torch_pad(pads):
    """ONNX [b1, b2, .., e1, e2, ..] (spatial) to F.pad's (last axis first)."""
    n = len(pads) // 2
    out = []
    for i in reversed(range(n)):
        out += [pads[i], pads[i + n]]
    return out


_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONVT = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}


def _conv_window(a, w, n):
    """Kernel, strides and dilations of a Conv or ConvTranspose node."""
    return (list(a.get("kernel_shape", w.shape[2:])), list(a.get("strides", [1] * n)),
            list(a.get("dilations", [1] * n)))


@op("Conv")
def _conv(ev, node, x, a):
    t, w = x[0], x[1]
    b = x[2] if len(x) > 2 else None
    n = _spatial(t)
    _check(n in _CONV, node, f"{n}-D convolution")
    kernel, strides, dil = _conv_window(a, w, n)
    pads = _auto_pads(a, list(t.shape[2:]), kernel, strides, dil)
    if pads[:n] == pads[n:]:
        padding = pads[:n]
    else:
        t = F.pad(t, _torch_pad(pads))
        padding = [0] * n
    return [_CONV[n](t, w, b, strides, padding, dil, a.get("group", 1))]


@op("ConvTranspose")
def _conv_transpose(ev, node, x, a):
    t, w = x[0], x[1]
    b = x[2] if len(x) > 2 else None
    n = _spatial(t)
    _check(n in _CONVT, node, f"{n}-D transposed convolution")
    kernel, strides, dil = _conv_window(a, w, n)
    outpad = list(a.get("output_padding", [0] * n))
    group = a.get("group", 1)
    in_sizes = list(t.shape[2:])
    full = [strides[i] * (in_sizes[i] - 1) + outpad[i] + (kernel[i] - 1) * dil[i] + 1 for i in range(n)]
    mode = a.get("auto_pad", "NOTSET")
    if "output_shape" in a:
        want = list(a["output_shape"])[-n:]
        total = [full[i] - want[i] for i in range(n)]
        if mode == "SAME_UPPER":
            pads = [tp // 2 for tp in total] + [tp - tp // 2 for tp in total]
        else:
            pads = [tp - tp // 2 for tp in total] + [tp // 2 for tp in total]
    elif mode in ("SAME_UPPER", "SAME_LOWER"):
        total = [full[i] - in_sizes[i] * strides[i] for i in range(n)]
        if mode == "SAME_UPPER":
            pads = [tp // 2 for tp in total] + [tp - tp // 2 for tp in total]
        else:
            pads = [tp - tp // 2 for tp in total] + [tp // 2 for tp in total]
    elif mode == "VALID":
        pads = [0] * (2 * n)
    else:
        pads = list(a.get("pads", [0] * (2 * n)))
    y = _CONVT[n](t, w, None, strides, 0, 0, group, dil)
    if any(outpad):
        y = F.pad(y, sum(([0, p] for p in reversed(outpad)), []))
    index = [slice(None), slice(None)] + [slice(pads[i], y.shape[2 + i] - pads[n + i]) for i in range(n)]
    y = y[tuple(index)]
    if b is not None:
        y = y + b.reshape([1, -1] + [1] * n)
    return [y]


_MAXPOOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVGPOOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}


def _pool_params(node, a, t):
    n = _spatial(t)
    kernel = list(a["kernel_shape"])
    strides = list(a.get("strides", [1] * n))
    dil = list(a.get("dilations", [1] * n))
    pads = _auto_pads(a, list(t.shape[2:]), kernel, strides, dil)
    return n, kernel, strides, dil, pads


@op("MaxPool")
def _maxpool(ev, node, x, a):
    t = x[0]
    n, kernel, strides, dil, pads = _pool_params(node, a, t)
    _check(n in _MAXPOOL, node, f"{n}-D pooling")
    ceil = bool(a.get("ceil_mode", 0))
    symmetric = pads[:n] == pads[n:] and all(pads[i] <= kernel[i] // 2 for i in range(n))
    if not symmetric:
        _check(len(node.output) == 1, node, "Indices with asymmetric pads")
        t = F.pad(t, _torch_pad(pads), value=float("-inf"))
        pads = [0] * (2 * n)
    want_idx = len(node.output) > 1 and node.output[1] != ""
    r = _MAXPOOL[n](t, kernel, strides, pads[:n], dil, ceil_mode=ceil, return_indices=want_idx)
    if not want_idx:
        return [r]
    y, idx = r
    _check(a.get("storage_order", 0) == 0, node, "storage_order=1")
    plane = int(np.prod(t.shape[2:]))
    base = torch.arange(t.shape[0] * t.shape[1], device=t.device).reshape(t.shape[0], t.shape[1], *[1] * n)
    return [y, idx + base * plane]


@op("AveragePool")
def _avgpool(ev, node, x, a):
    t = x[0]
    n, kernel, strides, dil, pads = _pool_params(node, a, t)
    _check(n in _AVGPOOL, node, f"{n}-D pooling")
    _check(all(d == 1 for d in dil), node, "dilations")
    ceil = bool(a.get("ceil_mode", 0))
    cip = bool(a.get("count_include_pad", 0))
    if pads[:n] == pads[n:] and all(pads[i] <= kernel[i] // 2 for i in range(n)):
        return [_AVGPOOL[n](t, kernel, strides, pads[:n], ceil, cip)]
    _check(not ceil, node, "ceil_mode with asymmetric pads")
    tp = F.pad(t, _torch_pad(pads))
    size = int(np.prod(kernel))
    s = _AVGPOOL[n](tp, kernel, strides, 0, False, True) * size
    if cip:
        return [s / size]
    ones = F.pad(torch.ones([1, 1] + list(t.shape[2:]), dtype=t.dtype, device=t.device), _torch_pad(pads))
    count = _AVGPOOL[n](ones, kernel, strides, 0, False, True) * size
    return [s / count]


@op("GlobalAveragePool")
def _gap(ev, node, x, a):
    t = x[0]
    return [torch.mean(t, dim=list(range(2, t.dim())), keepdim=True)]


@op("GlobalMaxPool")
def _gmp(ev, node, x, a):
    t = x[0]
    return [torch.amax(t, dim=list(range(2, t.dim())), keepdim=True)]


@op("LRN")
def _lrn(ev, node, x, a):
    t = x[0]
    size = a["size"]
    alpha, beta, bias = a.get("alpha", 1e-4), a.get("beta", 0.75), a.get("bias", 1.0)
    sq = (t * t).unsqueeze(1)  # N,1,C,...
    lo, hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    pad = [0, 0] * (t.dim() - 2) + [lo, hi]
    sq = F.pad(sq, pad)
    c = t.shape[1]
    s = sum(sq[:, 0, i:i + c] for i in range(size))
    return [t / (bias + alpha / size * s) ** beta]


# --- normalisation -----------------------------------------------------------------

@op("BatchNormalization")
def _batchnorm(ev, node, x, a):
    t, scale, bias, mean, var = x[:5]
    _check(not a.get("training_mode", 0), node, "training_mode=1")
    return [F.batch_norm(t, mean, var, scale, bias, False, 0.0, a.get("epsilon", 1e-5))]


@op("InstanceNormalization")
def _instancenorm(ev, node, x, a):
    t, scale, bias = x
    return [F.instance_norm(t, weight=scale, bias=bias, eps=a.get("epsilon", 1e-5))]


@op("LayerNormalization")
def _layernorm(ev, node, x, a):
    t, scale = x[0], x[1]
    bias = x[2] if len(x) > 2 else None
    axis = _axis(a.get("axis", -1), t.dim())
    eps = a.get("epsilon", 1e-5)
    shape = tuple(t.shape[axis:])
    outs = []
    if tuple(scale.shape) == shape and (bias is None or tuple(bias.shape) == shape):
        outs.append(F.layer_norm(t, shape, scale, bias, eps))
    else:
        y = F.layer_norm(t, shape, None, None, eps) * scale
        outs.append(y + bias if bias is not None else y)
    if len(node.output) > 1:
        dims = list(range(axis, t.dim()))
        mean = torch.mean(t, dim=dims, keepdim=True)
        var = torch.mean((t - mean) ** 2, dim=dims, keepdim=True)
        outs += [mean, torch.rsqrt(var + eps)]
    return outs


@op("GroupNormalization")
def _groupnorm(ev, node, x, a):
    t, scale, bias = x
    g = a["num_groups"]
    eps = a.get("epsilon", 1e-5)
    c = t.shape[1]
    y = F.group_norm(t, g, None, None, eps)
    shape = [1, c] + [1] * (t.dim() - 2)
    if scale.numel() == g and g != c:  # opset 18: one scale per group
        scale = scale.repeat_interleave(c // g)
        bias = bias.repeat_interleave(c // g)
    return [y * scale.reshape(shape) + bias.reshape(shape)]


@op("LpNormalization")
def _lpnorm(ev, node, x, a):
    t = x[0]
    return [F.normalize(t, p=a.get("p", 2), dim=_axis(a.get("axis", -1), t.dim()), eps=0.0)]


# --- padding and resizing -------------------------------------------------------

def _pad_indices(size, before, after, mode, device):
    i = torch.arange(-before, size + after, device=device)
    if mode == "edge":
        return i.clamp(0, size - 1)
    if mode == "wrap":
        return torch.remainder(i, size)
    # reflect (edge not repeated)
    period = 2 * (size - 1) if size > 1 else 1
    j = torch.remainder(i, period)
    return torch.where(j >= size, period - j, j)


@op("Pad")
def _pad(ev, node, x, a):
    t = x[0]
    r = t.dim()
    mode = a.get("mode", "constant")
    if len(x) > 1 and x[1] is not None:
        pads = _ints(x[1])
        value = x[2] if len(x) > 2 and x[2] is not None else None
        axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else None
    else:  # opset < 11
        pads, value, axes = list(a["pads"]), torch.tensor(a.get("value", 0.0)), None
    if axes is not None:
        full = [0] * (2 * r)
        k = len(axes)
        for j, ax in enumerate(axes):
            ax = _axis(ax, r)
            full[ax], full[ax + r] = pads[j], pads[j + k]
        pads = full
    if mode == "constant":
        v = float(value.reshape(-1)[0]) if value is not None and value.numel() else 0.0
        flat = []
        for i in reversed(range(r)):
            flat += [pads[i], pads[i + r]]
        return [F.pad(t, flat, value=v)]
    for ax in range(r):
        b, e = pads[ax], pads[ax + r]
        if b == 0 and e == 0:
            continue
        if b < 0 or e < 0:  # crop first
            t = t.narrow(ax, max(-b, 0), t.shape[ax] - max(-b, 0) - max(-e, 0))
            b, e = max(b, 0), max(e, 0)
        idx = _pad_indices(t.shape[ax], b, e, mode, t.device)
        t = torch.index_select(t, ax, idx)
    return [t]


def _resize_axis(ev, t, ax, out, scale, in_size, sizes_given, a):
    """Resample axis `ax` of t to `out` points (ONNX Resize, one axis)."""
    mode = a.get("mode", "nearest")
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    dev = t.device
    xo = np.arange(out, dtype=np.float64)
    # the ratio in/out: exact from the sizes, else 1/scale
    if ctm == "half_pixel":
        x = (xo + 0.5) * in_size / out - 0.5 if sizes_given else (xo + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        x = ((xo + 0.5) * in_size / out - 0.5 if sizes_given else (xo + 0.5) / scale - 0.5) if out > 1 \
            else np.zeros(out)
    elif ctm == "align_corners":
        x = xo * (in_size - 1) / (out - 1) if out > 1 else np.zeros(out)
    elif ctm == "asymmetric":
        x = xo * in_size / out if sizes_given else xo / scale
    elif ctm == "tf_half_pixel_for_nn":
        x = (xo + 0.5) * in_size / out if sizes_given else (xo + 0.5) / scale
    elif ctm == "half_pixel_symmetric":
        adj = out / (scale * in_size)
        center = in_size / 2
        x = center * (1 - adj) + (xo + 0.5) / scale - 0.5
    else:
        raise NotImplementedError(f"Resize: coordinate_transformation_mode {ctm}")
    if mode == "nearest":
        nm = a.get("nearest_mode", "round_prefer_floor")
        if ctm == "asymmetric" and sizes_given and nm == "floor":
            i = (np.arange(out, dtype=np.int64) * in_size) // out  # exact
        elif nm == "floor":
            i = np.floor(x)
        elif nm == "ceil":
            i = np.ceil(x)
        elif nm == "round_prefer_ceil":
            i = np.floor(x + 0.5)
        else:  # round_prefer_floor
            i = np.ceil(x - 0.5)
        i = np.clip(np.asarray(i, dtype=np.int64), 0, in_size - 1)
        return torch.index_select(t, ax, torch.from_numpy(i).to(dev))
    shape = [1] * t.dim()
    shape[ax] = out
    if mode == "linear":
        x = np.clip(x, 0, in_size - 1)
        i0 = np.clip(np.floor(x).astype(np.int64), 0, in_size - 1)
        i1 = np.minimum(i0 + 1, in_size - 1)
        w1 = torch.from_numpy(x - i0).to(dev).to(t.dtype).reshape(shape)
        w0 = torch.from_numpy(1 - (x - i0)).to(dev).to(t.dtype).reshape(shape)
        x0 = torch.index_select(t, ax, torch.from_numpy(i0).to(dev))
        x1 = torch.index_select(t, ax, torch.from_numpy(i1).to(dev))
        return w0 * x0 + w1 * x1
    if mode == "cubic":
        A = a.get("cubic_coeff_a", -0.75)
        base = np.floor(x).astype(np.int64)
        f = x - base
        ws, idxs = [], []
        for k, d in enumerate((-1, 0, 1, 2)):
            dist = np.abs(f - d)
            w = np.where(dist <= 1, ((A + 2) * dist - (A + 3)) * dist * dist + 1,
                         np.where(dist < 2, ((A * dist - 5 * A) * dist + 8 * A) * dist - 4 * A, 0.0))
            ws.append(w)
            idxs.append(base + d)
        ws = np.stack(ws)
        idxs = np.stack(idxs)
        if a.get("exclude_outside", 0):
            inside = (idxs >= 0) & (idxs < in_size)
            ws = np.where(inside, ws, 0.0)
            ws = ws / ws.sum(axis=0, keepdims=True)
        idxs = np.clip(idxs, 0, in_size - 1)
        y = 0
        for k in range(4):
            wk = torch.from_numpy(ws[k]).to(dev).to(t.dtype).reshape(shape)
            y = y + wk * torch.index_select(t, ax, torch.from_numpy(idxs[k]).to(dev))
        return y
    raise NotImplementedError(f"Resize: mode {mode}")


def _resize(ev, node, t, scales, sizes, roi, a):
    r = t.dim()
    axes = [_axis(ax, r) for ax in a.get("axes", list(range(r)))]
    _check(not a.get("antialias", 0), node, "antialias=1")
    _check(a.get("keep_aspect_ratio_policy", "stretch") == "stretch", node, "keep_aspect_ratio_policy")
    if sizes is not None:
        out_sizes = {ax: s for ax, s in zip(axes, sizes)}
        scale_of = {ax: out_sizes[ax] / t.shape[ax] for ax in axes}
        given = True
    else:
        scale_of = {ax: s for ax, s in zip(axes, scales)}
        out_sizes = {ax: int(math.floor(t.shape[ax] * scale_of[ax])) for ax in axes}
        given = False
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    _check(ctm != "tf_crop_and_resize", node, "coordinate_transformation_mode tf_crop_and_resize")
    for ax in reversed(axes):  # the last axis first (torch's bilinear order)
        if out_sizes[ax] == t.shape[ax] and scale_of[ax] == 1.0:
            continue
        t = _resize_axis(ev, t, ax, out_sizes[ax], scale_of[ax], t.shape[ax], given, a)
    return t


@op("Resize")
def _resize_op(ev, node, x, a):
    t = x[0]
    roi = scales = sizes = None
    if len(x) == 2:  # opset 10: (X, scales)
        scales = x[1]
    else:
        roi = x[1] if len(x) > 1 else None
        scales = x[2] if len(x) > 2 else None
        sizes = x[3] if len(x) > 3 else None
    if sizes is not None and sizes.numel() > 0:
        sizes, scales = _ints(sizes), None
    else:
        sizes = None
        _check(scales is not None and scales.numel() > 0, node, "neither scales nor sizes")
        scales = [float(v) for v in scales.float().reshape(-1).tolist()]
    roi = [float(v) for v in roi.double().reshape(-1).tolist()] if roi is not None and roi.numel() else None
    return [_resize(ev, node, t, scales, sizes, roi, a)]


@op("Upsample")
def _upsample(ev, node, x, a):
    t = x[0]
    scales = [float(v) for v in x[1].float().reshape(-1).tolist()] if len(x) > 1 else list(a["scales"])
    mode = a.get("mode", "nearest")
    attrs = {"mode": mode, "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}
    return [_resize(ev, node, t, scales, None, None, attrs)]


# ----------------------------------------------------------------------------
# The interpreter

class Evaluator:
    """Evaluates one ONNX model at one precision on one device."""

    def __init__(self, model, precision="fp64", device="cpu", native16=None):
        """native16 (fp16 / bf16 only): True computes in the 16-bit dtype on
        any device (torch's kernels, float32 for the nodes it has none for),
        False emulates (float32 compute, outputs rounded); None (default):
        emulate fp16 on the CPU, native otherwise."""
        self.model = load_model(model)
        self.graph = self.model.graph
        self.device = torch.device(device)
        self.p = _Precision(precision, self.device, native16)
        self.opset = 13
        for o in self.model.opset_import:
            if o.domain in ("", "ai.onnx"):
                self.opset = o.version
        self.initializers = {}
        for t in self.graph.initializer:
            self.initializers[t.name] = self.from_numpy(tensor_to_numpy(t))
        init_names = set(self.initializers)
        self.inputs = [i for i in self.graph.input if i.name not in init_names]
        self.outputs = [o.name for o in self.graph.output]

    # conversions
    def from_numpy(self, a):
        a = np.asarray(a)
        if a.dtype.kind == "f":
            return self.p.fl(torch.from_numpy(np.array(a, dtype=np.float64, order="C")).to(self.device))
        if a.dtype == np.uint16 or a.dtype == np.uint32 or a.dtype == np.uint64:
            a = a.astype(np.int64)
        return torch.from_numpy(np.array(a, order="C")).to(self.device)

    def cast(self, t, to):
        if to in FLOAT_TYPES:
            return self.p.fl(t) if _is_float(t) else self.p.fl(t.to(torch.float64))
        if to in INT_TYPES:
            return t.to(INT_TYPES[to])
        raise NotImplementedError(f"Cast to ONNX type {to}")

    def input_shapes(self, batch=1):
        """{name: shape} of the graph inputs, symbolic dimensions -> batch."""
        shapes = {}
        for i in self.inputs:
            dims = i.type.tensor_type.shape.dim
            shapes[i.name] = [d.dim_value if d.HasField("dim_value") else batch for d in dims]
        return shapes

    # evaluation
    def eval_node(self, node, env):
        """The outputs (list of tensors) of one node on env's values."""
        fn = OPS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
        if fn is None:
            raise NotImplementedError(f"{node.op_type} (node {node.name})")
        args = []
        for name in node.input:
            if name == "":
                args.append(None)
            elif name in env:
                args.append(env[name])
            else:
                raise ValueError(f"node {node.name}: input '{name}' is not computed yet")
        while args and args[-1] is None:
            args.pop()
        a = _attrs(node)
        try:
            outs = fn(self, node, args, a)
        except RuntimeError as e:
            # a 16-bit op torch has no kernel for: this node in float32, rounded back
            if not (self.p.half and not self.p.emulate and
                    any(t is not None and t.dtype == self.p.store for t in args)):
                raise
            up = [t.float() if t is not None and t.dtype == self.p.store else t for t in args]
            try:
                outs = fn(self, node, up, a)
            except RuntimeError:
                raise e
            outs = [o.to(self.p.store) if o.dtype == torch.float32 else o for o in outs]
        if self.p.emulate:
            outs = [self.p.fl(o) if _is_float(o) else o for o in outs]
        return outs

    def run(self, inputs, hook=None, keep=False):
        """Evaluates the graph on inputs ({name: array or tensor}); returns
        {output name: tensor}, or with keep every value (env).  hook(node,
        outputs, env) runs after each node, env holding the values computed
        before it; it may return replacement outputs.  Without keep, a value
        is dropped after its last reader (the hook sees it until then)."""
        env = dict(self.initializers)
        names = [i.name for i in self.inputs]
        if set(inputs) != set(names):
            raise BadInput(f"inputs {sorted(inputs)} given; the model takes {names}")
        for name, v in inputs.items():
            t = v if isinstance(v, torch.Tensor) else torch.from_numpy(np.array(v, order="C"))
            t = t.to(self.device)
            env[name] = self.p.fl(t) if _is_float(t) else t
        last = {}
        if not keep:
            for i, node in enumerate(self.graph.node):
                for name in node.input:
                    last[name] = i
            for name in list(self.outputs) + list(self.initializers) + names:
                last.pop(name, None)
        dead = {}
        for name, i in last.items():
            dead.setdefault(i, []).append(name)
        with torch.no_grad(), _Flags(self.p):
            for i, node in enumerate(self.graph.node):
                outs = self.eval_node(node, env)
                if hook is not None:
                    repl = hook(node, outs, env)
                    if repl is not None:
                        outs = list(repl)
                for name, t in zip(node.output, outs):
                    if name:
                        env[name] = t
                for name in dead.get(i, ()):
                    env.pop(name, None)
        missing = [o for o in self.outputs if o not in env]
        if missing:
            raise ValueError(f"graph outputs {missing} are computed by no node")
        return env if keep else {o: env[o] for o in self.outputs}

    def to_numpy(self, t):
        if _is_float(t):
            return t.detach().to(torch.float64 if self.p.name == "fp64" else torch.float32).cpu().numpy()
        return t.detach().cpu().numpy()


def run(model, inputs, precision="fp64", device="cpu", hook=None):
    """Evaluates model (a path or an onnx.ModelProto) on inputs ({name:
    np.ndarray}) at precision (fp64, fp32, tf32, fp16, bf16) on device;
    returns {output name: np.ndarray}, float32 (float64 for fp64)."""
    ev = Evaluator(model, precision, device)
    outs = ev.run(inputs, hook=hook)
    return {k: ev.to_numpy(v) for k, v in outs.items()}


# ----------------------------------------------------------------------------
# Calibration of rebuilt weights

def _rms(t):
    return float(torch.sqrt(torch.mean(t.double() ** 2))) if t.numel() else 0.0


def _weight_input(node, names):
    """(index, name) of the rebuilt weight a Conv/ConvTranspose/Gemm/MatMul node reads, or None."""
    if node.op_type not in WEIGHT_OPS:
        return None
    cands = [1, 0] if node.op_type == "MatMul" else [1]
    for i in cands:
        if i < len(node.input) and node.input[i] in names:
            return i, node.input[i]
    return None


def rebuilt_weights(filled, export=None, skeleton=None):
    """Names of the initializers rebuilt by ios-model-weights fill: those the
    skeleton marks, else those of filled and export that differ."""
    if skeleton is not None:
        return {t.name for t in load_model(skeleton).graph.initializer if t.doc_string.startswith(MARK)}
    ex = {t.name: t for t in load_model(export).graph.initializer}
    names = set()
    for t in load_model(filled).graph.initializer:
        if t.name in ex:
            a, b = tensor_to_numpy(t), tensor_to_numpy(ex[t.name])
            if a.shape != b.shape or not np.array_equal(a, b):
                names.add(t.name)
    return names


# A convolution output with at least this many values per channel has its
# per-channel means matched through its bias (calibrate, below); fewer (a
# classifier's logits at batch 1) would fit the one input, not the layer.
MIN_VALUES_PER_CHANNEL = 16


def _channel_stats(t):
    """Per-channel (axis 1) means and variances of a convolution output, as
    float64; None when a channel holds fewer than MIN_VALUES_PER_CHANNEL values."""
    if t.dim() < 3 or t.numel() // max(t.shape[1], 1) < MIN_VALUES_PER_CHANNEL:
        return None
    x = t.double().transpose(0, 1).reshape(t.shape[1], -1)
    return x.mean(dim=1), x.var(dim=1, unbiased=False)


def calibrate(filled, export, inputs, skeleton=None, device="cpu", log=sys.stderr, biases=None):
    """LSUV-style calibration in one forward pass.  Runs export (the trained
    model) at float32 on inputs recording every node output's RMS; then runs
    filled node by node and at every Conv/ConvTranspose/Gemm/MatMul whose
    weight was rebuilt picks s > 0 so that the node's output RMS equals the
    export's (same output tensor name), scales that weight by s, recomputes
    the node and goes on.  Returns {initializer name: s}.

    With `biases` (a dict), a convolution with a bias initializer and at least
    MIN_VALUES_PER_CHANNEL values per output channel is matched per channel
    instead: the trained weights' outputs cancel much of the folded batch
    normalisation's bias, random ones do not, so the layer's mean would stay
    off whatever s is. There s makes the mean per-channel variance the
    export's and the bias becomes b_c = mu_c - s m_c (mu_c the export's
    channel mean, m_c the rebuilt product's): every channel's mean and the
    layer's rms match. `biases` receives {bias initializer name: float32
    numpy array}."""
    filled, export = load_model(filled), load_model(export)
    names = rebuilt_weights(filled, export, skeleton)
    # A bias is corrected only where this node is its one reader: exporters
    # share equal initializers between nodes (directly or through Identity),
    # and a shared bias changed for one node would change the others too.
    readers = {}
    for n in filled.graph.node:
        for name in n.input:
            readers[name] = readers.get(name, 0) + 1
    bias_initializers = {t.name for t in filled.graph.initializer if readers.get(t.name, 0) == 1}
    target, channel_target = {}, {}

    def record(node, outs, env):
        for name, t in zip(node.output, outs):
            if name and _is_float(t):
                target[name] = _rms(t)
        if node.op_type in ("Conv", "ConvTranspose") and _is_float(outs[0]):
            stats = _channel_stats(outs[0])
            if stats is not None:
                channel_target[node.output[0]] = stats

    ex = Evaluator(export, "fp32", device)
    ex_out = ex.run(inputs, hook=record)
    fe = Evaluator(filled, "fp32", device)
    before_out = fe.run(inputs)
    scales, rows = {}, []

    def hook(node, outs, env):
        wi = _weight_input(node, names)
        if wi is None or node.output[0] not in target:
            return None
        idx, wname = wi
        t = target[node.output[0]]
        y = outs[0].double()
        rms_before = _rms(y)
        if wname in scales:  # shared weight: already calibrated at its first use
            rows.append((node.name or node.output[0], t, rms_before, rms_before, None))
            return None
        # y = s * a + b: a without the bias (Conv/ConvTranspose B, Gemm beta*C)
        has_bias = node.op_type in ("Conv", "ConvTranspose", "Gemm") and len(node.input) > 2 and node.input[2]
        if has_bias:
            stripped = onnx.NodeProto()
            stripped.CopyFrom(node)
            del stripped.input[2:]
            a = fe.eval_node(stripped, env)[0].double()
            b = y - a
        else:
            a, b = y, torch.zeros_like(y)
        bias_name = node.input[2] if has_bias else ""
        if (biases is not None and node.op_type in ("Conv", "ConvTranspose") and bias_name in bias_initializers
                and bias_name not in biases and node.output[0] in channel_target):
            stats = _channel_stats(a)
            mu, w = channel_target[node.output[0]]
            if stats is not None and float(stats[1].mean()) > 0:
                m, v = stats
                s = math.sqrt(float(w.mean()) / float(v.mean()))
                if math.isfinite(s) and s > 0:
                    new_bias = (mu - s * m).to(torch.float32)
                    biases[bias_name] = new_bias.numpy().copy()
                    scales[wname] = s
                    env[wname] = env[wname] * s
                    env[bias_name] = new_bias.to(env[bias_name].dtype).reshape(env[bias_name].shape)
                    new = fe.eval_node(node, env)
                    rows.append((node.name or node.output[0], t, rms_before, _rms(new[0]), s))
                    return new
        A2, AB, B2 = float(torch.mean(a * a)), float(torch.mean(a * b)), float(torch.mean(b * b))
        s = None
        if A2 > 0:
            disc = AB * AB - A2 * (B2 - t * t)
            if disc >= 0:
                root = (-AB + math.sqrt(disc)) / A2
                if root > 0:
                    s = root
            if s is None and biases is not None and bias_name in bias_initializers and bias_name not in biases \
                    and node.op_type in ("Conv", "ConvTranspose") and float(torch.mean(y * y)) > 0:
                # The bias alone is larger than the export's output: no s
                # reaches it, so the whole output (weight and bias) is scaled.
                s = t / math.sqrt(float(torch.mean(y * y)))
                new_bias = (env[bias_name].double() * s).to(torch.float32)
                biases[bias_name] = new_bias.cpu().numpy().copy()
                env[bias_name] = new_bias.to(env[bias_name].dtype)
            if s is None:
                s = t / math.sqrt(A2)
        if s is None or not math.isfinite(s) or s <= 0:
            rows.append((node.name or node.output[0], t, rms_before, rms_before, None))
            return None
        scales[wname] = s
        env[wname] = env[wname] * s
        new = fe.eval_node(node, env)
        rows.append((node.name or node.output[0], t, rms_before, _rms(new[0]), s))
        return new

    after_out = fe.run(inputs, hook=hook)
    if log is not None:
        w = max([len(r[0]) for r in rows] + [4])
        print(f"{'node':<{w}}  {'export rms':>12}  {'rms before':>12}  {'rms after':>12}  {'scale':>10}", file=log)
        for name, t, b, af, s in rows:
            st = f"{s:10.4g}" if s is not None else "         -"
            print(f"{name:<{w}}  {t:12.5g}  {b:12.5g}  {af:12.5g}  {st}", file=log)

        def mx(d):
            return max(float(v.abs().max()) for v in d.values() if _is_float(v) and v.numel())
        print(f"max|output|: export {mx(ex_out):.5g}, rebuilt before {mx(before_out):.5g}, "
              f"after {mx(after_out):.5g} ({len(scales)} weights scaled)", file=log)
    return scales


def _hex32(v):
    """A float32 value as C's printf("%a", (double)v) writes it (strtof reads it back exactly)."""
    h = float(np.float32(v)).hex()  # 0x1.8000000000000p+1
    m = re.match(r"^(-?0x[01])\.([0-9a-f]*)(p[+-]\d+)$", h)
    if not m:
        return h
    frac = m.group(2).rstrip("0")
    return m.group(1) + ("." + frac if frac else "") + m.group(3)


def _set_values(t, values):
    """Replaces an initializer's values, keeping its name, type and shape
    (float32, float16 or bfloat16, rounded to nearest even)."""
    values = np.asarray(values, dtype=np.float32).reshape(tuple(t.dims))
    if t.data_type == onnx.TensorProto.FLOAT:
        raw = values.astype("<f4").tobytes()
    elif t.data_type == onnx.TensorProto.FLOAT16:
        raw = values.astype("<f2").tobytes()
    elif t.data_type == onnx.TensorProto.BFLOAT16:
        bits = values.view(np.uint32).astype(np.uint64)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        raw = rounded.astype("<u2").tobytes()
    else:
        raise BadInput(f"initializer '{t.name}' is not a float tensor")
    del t.float_data[:]
    del t.int32_data[:]
    t.raw_data = raw


def apply_scales(skeleton_in, scales, skeleton_out, biases=None):
    """Multiplies the per-channel RMS of every marked initializer of the
    skeleton named in scales by its s (float32, written as C99 hex floats), so
    that ios-model-weights fill of skeleton_out rebuilds the calibrated
    weights, and replaces the values of the initializers named in `biases`
    (calibrate's bias corrections; they travel with the skeleton as data).
    Returns the number of marks changed."""
    model = onnx.ModelProto()
    model.CopyFrom(load_model(skeleton_in))
    changed = 0
    marked = set()
    for t in model.graph.initializer:
        if biases and t.name in biases:
            _set_values(t, biases[t.name])
        if not t.doc_string.startswith(MARK):
            continue
        marked.add(t.name)
        if t.name not in scales:
            continue
        words = t.doc_string[len(MARK):].split()
        axis, values = words[0], words[1:]
        s = float(scales[t.name])
        new = [_hex32(float(np.float32(float.fromhex(v))) * s) for v in values]
        t.doc_string = MARK + axis + "".join(" " + v for v in new)
        changed += 1
    missing = sorted(set(scales) - marked)
    if missing:
        raise BadInput(f"scales for initializers without a weight mark: {', '.join(missing[:5])}")
    tmp = f"{skeleton_out}.tmp{os.getpid()}"
    onnx.save(model, tmp)
    os.replace(tmp, skeleton_out)
    return changed


# ----------------------------------------------------------------------------
# CLI

def _load_inputs(ev, specs, batch=None, seed=0):
    """{name: array} from --input specs (X.npy for the only input, or
    NAME=X.npy), or seeded N(0,1) float32 inputs without any.  Symbolic
    dimensions take batch (default 1) for generated inputs; a given batch must
    match the files'."""
    shapes = ev.input_shapes(1 if batch is None else batch)
    symbolic = {i.name: [not d.HasField("dim_value") for d in i.type.tensor_type.shape.dim] for i in ev.inputs}
    names = list(shapes)
    if not specs:
        rng = np.random.default_rng(seed)
        return {n: rng.standard_normal(shapes[n]).astype(np.float32) for n in names}
    out = {}
    for spec in specs:
        for item in spec.split(","):
            if "=" in item:
                name, path = item.split("=", 1)
            elif len(names) == 1 and not out:
                name, path = names[0], item
            else:
                raise BadInput(f"--input {item}: the model has inputs {names}; give NAME=FILE.npy")
            if name not in shapes:
                raise BadInput(f"--input {item}: the model has no input '{name}' (it has {names})")
            try:
                arr = np.load(path)
            except (OSError, ValueError) as e:
                raise BadInput(f"--input {path}: {e}")
            want = shapes[name]
            ok = len(arr.shape) == len(want) and all(
                (sym and batch is None) or d == w for d, w, sym in zip(arr.shape, want, symbolic[name]))
            if not ok:
                shown = ["?" if sym and batch is None else w for w, sym in zip(want, symbolic[name])]
                raise BadInput(f"--input {path}: shape {list(arr.shape)}, the model's '{name}' takes {shown}")
            out[name] = arr.astype(np.float32) if arr.dtype.kind == "f" else arr
    missing = [n for n in names if n not in out]
    if missing:
        raise BadInput(f"no --input for {missing}")
    return out


def _write_outputs(outs, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, v in outs.items():
        path = os.path.join(out_dir, sanitize(name))
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            np.save(f, v)
        os.replace(tmp, path)
        print(f"onnx_torch: {name} {'x'.join(map(str, v.shape))} {v.dtype} -> {path}", file=sys.stderr)


def _ops_report(paths):
    from collections import defaultdict
    uses = defaultdict(lambda: defaultdict(set))
    for p in paths:
        m = load_model(p)
        for n in m.graph.node:
            for k, v in _attrs(n).items():
                if isinstance(v, onnx.TensorProto):
                    v = f"tensor(type {v.data_type}, dims {list(v.dims)})"
                uses[n.op_type][k].add(repr(v)[:60])
            uses[n.op_type]
    missing = []
    for opname in sorted(uses):
        flag = "" if opname in OPS else "   <-- NOT IMPLEMENTED"
        if flag:
            missing.append(opname)
        print(f"{opname}{flag}")
        for k in sorted(uses[opname]):
            vals = sorted(uses[opname][k])
            print(f"    {k}: {', '.join(vals[:8])}{' ...' if len(vals) > 8 else ''}")
    return 1 if missing else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="onnx_torch.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="verb", required=True)

    def common(p):
        p.add_argument("model")
        p.add_argument("--input", action="append", default=[],
                       help="X.npy for the only input, or NAME=X.npy (repeatable, or comma-separated)")
        p.add_argument("--out-dir", required=True)
        p.add_argument("--batch", type=int, default=None,
                       help="symbolic (batch) dimensions: of the generated input without --input (default 1); "
                            "with --input, checked against the files")
        p.add_argument("--device", default="cpu")
        p.add_argument("--threads", type=int, default=0)

    p = sub.add_parser("truth", help="float64 outputs")
    common(p)
    p = sub.add_parser("run", help="outputs at a precision")
    common(p)
    p.add_argument("--precision", default="fp32", choices=PRECISIONS)
    p = sub.add_parser("calibrate", help="LSUV-style scales of rebuilt weights")
    p.add_argument("filled")
    p.add_argument("export")
    p.add_argument("--input", action="append", default=[])
    p.add_argument("--out", required=True)
    p.add_argument("--skeleton", help="the skeleton the filled model came from (names the rebuilt weights)")
    p.add_argument("--batch", type=int, default=None)
    p.add_argument("--device", default="cpu")
    p.add_argument("--threads", type=int, default=0)
    p = sub.add_parser("scale-marks", help="multiply the skeleton's RMS marks by the scales")
    p.add_argument("skeleton")
    p.add_argument("scales")
    p.add_argument("out")
    p = sub.add_parser("ops", help="op types and attributes the models use")
    p.add_argument("models", nargs="+")
    args = ap.parse_args(argv)
    try:
        if getattr(args, "threads", 0):
            torch.set_num_threads(args.threads)
        if args.verb in ("truth", "run"):
            precision = "fp64" if args.verb == "truth" else args.precision
            ev = Evaluator(args.model, precision, args.device)
            inputs = _load_inputs(ev, args.input, args.batch)
            outs = ev.run(inputs)
            _write_outputs({k: ev.to_numpy(v) for k, v in outs.items()}, args.out_dir)
        elif args.verb == "calibrate":
            ev = Evaluator(args.export, "fp32", "cpu")
            inputs = _load_inputs(ev, args.input, args.batch)
            scales = calibrate(args.filled, args.export, inputs, args.skeleton, args.device)
            tmp = f"{args.out}.tmp{os.getpid()}"
            with open(tmp, "w") as f:
                json.dump(scales, f, indent=1, sort_keys=True)
                f.write("\n")
            os.replace(tmp, args.out)
        elif args.verb == "scale-marks":
            with open(args.scales) as f:
                scales = json.load(f)
            n = apply_scales(args.skeleton, scales, args.out)
            print(f"onnx_torch: {args.out}: {n} weight marks scaled", file=sys.stderr)
        elif args.verb == "ops":
            return _ops_report(args.models)
    except (BadInput, OSError) as e:
        print(f"onnx_torch: {e}", file=sys.stderr)
        return 2
    except NotImplementedError as e:
        print(f"onnx_torch: not implemented: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
