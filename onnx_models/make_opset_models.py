#!/usr/bin/python3
"""Write the same small models in the forms of several ONNX opsets (onnx helper API).

    /usr/bin/python3 onnx_models/make_opset_models.py OUT_DIR

Each case is written three times with identical weights and graph structure:
  CASE-opset13.onnx   IR 7,  opset 13 (what torch.onnx.export wrote for years)
  CASE-opset18.onnx   IR 10, opset 18 (torch.onnx.export(dynamo=True) in PyTorch 2.x)
  CASE-opset21.onnx   IR 10, opset 21
Only the operator forms differ, so an importer that understands every form
produces the same IR and the same outputs bit for bit.  The forms exercised:
  ReduceMean  axes attribute (13)            -> axes input (18)
  Split       split-sizes input (13)         -> num_outputs attribute (18)
  Pad         pads for every axis (13)       -> pads for the axes of an axes input (18)
  Shape       whole shape + Gather (13)      -> start/end attributes (15)
  Reshape     no allowzero (13)              -> allowzero = 0 (14)
  Resize      no antialias / policy (13)     -> antialias = 0, keep_aspect_ratio_policy = stretch (18)
The other operators ios reads keep their opset-13 form in 18 and 21.

Cases (graph input "input", output "output"):
  cnn      input 1x3x16x16: Conv 3x3 -> BatchNormalization -> Relu -> grouped
           dilated Conv -> Clip(0, 6) -> Split in two -> {Sigmoid, HardSigmoid}
           -> Concat -> Add (residual) -> Pad -> MaxPool 3x3/2 -> AveragePool 3x3
           pad 1 -> Resize bilinear x2 -> x * Sigmoid(x) -> GlobalAveragePool -> Flatten -> Gemm -> Softmax
  reduce   input 1x4x8x8: ReduceMean over H, W (keepdims) -> Mul with the input ->
           Reshape to [batch, -1] (batch from Shape) -> Slice -> MatMul -> Transpose

The IR 10 files cannot pass Debian's onnx 1.12 checker (it stops at IR 8):
that is the point.  Output is deterministic (fixed RandomState).
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSETS = {13: 7, 18: 10, 21: 10}  # opset -> IR version
PRODUCER = "ios onnx_models/make_opset_models.py"


class Builder:
    def __init__(self, seed, opset):
        self.rng = np.random.RandomState(seed)
        self.opset = opset
        self.nodes, self.inits, self.count = [], [], {}

    def name(self, prefix):
        self.count[prefix] = self.count.get(prefix, 0) + 1
        return f"{prefix}_{self.count[prefix]}"

    def weight(self, prefix, array, dtype=np.float32):
        name = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def op(self, op_type, inputs, outputs=1, **attrs):
        name = self.name(op_type.lower())
        outs = [f"{name}_out{i}" if outputs > 1 else f"{name}_out" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=name, **attrs))
        return outs if outputs > 1 else outs[0]

    def conv(self, x, cin, cout, k, pads, group=1, dilation=1):
        w = self.rng.randn(cout, cin // group, k, k) / np.sqrt(cin // group * k * k)
        b = 0.1 * self.rng.randn(cout)
        return self.op("Conv", [x, self.weight("w", w), self.weight("b", b)], kernel_shape=[k, k],
                       pads=[pads] * 4, group=group, dilations=[dilation, dilation])

    # --- the forms that changed between opsets --------------------------------

    def reduce_mean(self, x, axes):
        if self.opset >= 18:
            return self.op("ReduceMean", [x, self.weight("axes", axes, np.int64)], keepdims=1)
        return self.op("ReduceMean", [x], axes=axes, keepdims=1)

    def split_equal(self, x, parts, channels):
        if self.opset >= 18:
            return self.op("Split", [x], outputs=parts, axis=1, num_outputs=parts)
        sizes = self.weight("split", [channels // parts] * parts, np.int64)
        return self.op("Split", [x, sizes], outputs=parts, axis=1)

    def pad_hw(self, x, begin, end, rank=4):
        value = self.weight("pad_value", 0.25)
        if self.opset >= 18:
            pads = self.weight("pads", [begin, begin, end, end], np.int64)
            axes = self.weight("pad_axes", [2, 3], np.int64)
            return self.op("Pad", [x, pads, value, axes], mode="constant")
        pads = [0, 0, begin, begin, 0, 0, end, end]
        return self.op("Pad", [x, self.weight("pads", pads, np.int64), value], mode="constant")

    def resize_x2(self, x):
        scales = self.weight("scales", np.array([1, 1, 2, 2], np.float32))
        attrs = dict(mode="linear", coordinate_transformation_mode="half_pixel")
        if self.opset >= 18:
            attrs.update(antialias=0, keep_aspect_ratio_policy="stretch")
        return self.op("Resize", [x, "", scales], **attrs)

    def batch_dim(self, x):
        """A 1-element int64 tensor holding dimension 0 of x."""
        if self.opset >= 18:
            return self.op("Shape", [x], start=0, end=1)
        shape = self.op("Shape", [x])
        first = self.op("Gather", [shape, self.weight("index", 0, np.int64)], axis=0)
        return self.op("Unsqueeze", [first, self.weight("unsqueeze_axes", [0], np.int64)])

    def reshape(self, x, target):
        if self.opset >= 14:
            return self.op("Reshape", [x, target], allowzero=0)
        return self.op("Reshape", [x, target])

    def model(self, graph_name, inp_shape, out, out_shape):
        g = helper.make_graph(self.nodes, graph_name,
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, inp_shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)],
                              initializer=self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name=PRODUCER, producer_version="1")
        m.ir_version = OPSETS[self.opset]
        return m


def cnn(opset):
    b = Builder(7, opset)
    x = b.conv("input", 3, 8, 3, 1)
    c = 8
    x = b.op("BatchNormalization", [x, b.weight("scale", 1 + 0.1 * b.rng.randn(c)),
                                    b.weight("shift", 0.1 * b.rng.randn(c)),
                                    b.weight("mean", 0.1 * b.rng.randn(c)),
                                    b.weight("var", 1 + 0.1 * b.rng.rand(c))], epsilon=1e-5)
    x = b.op("Relu", [x])
    x = b.conv(x, 8, 8, 3, 2, group=2, dilation=2)
    clipped = b.op("Clip", [x, b.weight("min", 0.0), b.weight("max", 6.0)])
    left, right = b.split_equal(clipped, 2, 8)
    x = b.op("Concat", [b.op("Sigmoid", [left]), b.op("HardSigmoid", [right], alpha=0.25, beta=0.4)],
             axis=1)
    x = b.op("Add", [x, clipped])
    x = b.pad_hw(x, 1, 2)  # 16x16 -> 19x19
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2])  # 9x9
    x = b.op("AveragePool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
    x = b.resize_x2(x)  # 18x18
    x = b.op("Mul", [x, b.op("Sigmoid", [x])])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    x = b.op("Gemm", [x, b.weight("fc_w", b.rng.randn(5, 8) / 3), b.weight("fc_b", 0.1 * b.rng.randn(5))],
             transB=1)
    b.op("Softmax", [x], axis=1)
    b.nodes[-1].output[0] = "output"
    return b.model("cnn", [1, 3, 16, 16], "output", [1, 5])


def reduce(opset):
    b = Builder(8, opset)
    mean = b.reduce_mean("input", [2, 3])
    x = b.op("Mul", ["input", mean])
    target = b.op("Concat", [b.batch_dim(x), b.weight("minus_one", [-1], np.int64)], axis=0)
    x = b.reshape(x, target)  # 1x256
    x = b.op("Slice", [x, b.weight("starts", [16], np.int64), b.weight("ends", [240], np.int64),
                       b.weight("axes", [1], np.int64), b.weight("steps", [2], np.int64)])  # 1x112
    x = b.op("MatMul", [x, b.weight("mm", b.rng.randn(112, 6) / 10)])  # 1x6
    b.op("Transpose", [x], perm=[1, 0])  # 6x1
    b.nodes[-1].output[0] = "output"
    return b.model("reduce", [1, 4, 8, 8], "output", [6, 1])


CASES = {"cnn": cnn, "reduce": reduce}


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for case, build in CASES.items():
        for opset in OPSETS:
            data = build(opset).SerializeToString()
            path = os.path.join(out, f"{case}-opset{opset}.onnx")
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
            print(f"{path}  {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
